/* component-cases: one row per test case of a component type, shared by the unit tests that must
 * cover every registered type (component_ops_all): nnet-test.c checks each `config` against
 * finite differences, precision-test.c runs each `bf16_config` in fp32 and bf16. A new component
 * type is one row here (its tests then fail until it has both configs). */
#ifndef PARNET_TESTS_COMPONENT_CASES_H
#define PARNET_TESTS_COMPONENT_CASES_H

struct component_case {
    const char *config;      /* small dims for the gradient check, or NULL */
    int chunks;              /* the gradient check's rows: 4 * chunks (+ context per chunk) */
    const char *bf16_config; /* widths and rows >= MATRIX_BF16_MIN_INNER (all three products take
                              * the bf16 path), or NULL */
    int bf16_product;        /* 1: has layer products (bf16 changes it), 0: bit-identical */
};

static const struct component_case component_cases[] = {
    {"SpliceComponent input-dim=3 context=-2:0:1", 2, "SpliceComponent input-dim=48 context=-1:0:1",
     0},
    {"SpliceComponent input-dim=3 left-context=1 right-context=2", 3, NULL, 0},
    {"AffineComponent input-dim=4 output-dim=3", 1, "AffineComponent input-dim=256 output-dim=288",
     1},
    {"NaturalGradientAffineComponent input-dim=4 output-dim=3", 1,
     "NaturalGradientAffineComponent input-dim=256 output-dim=288 rank-in=8 rank-out=8", 1},
    {NULL, 0, "AffineComponentPreconditionedOnline input-dim=256 output-dim=288", 1},
    {"FixedAffineComponent input-dim=4 output-dim=3 bias-stddev=1", 1,
     "FixedAffineComponent input-dim=256 output-dim=288 bias-stddev=1", 1},
    {"FixedScaleComponent dim=4 value=-1.5", 1, "FixedScaleComponent dim=64 value=-1.5", 0},
    {"FixedBiasComponent dim=4 value=0.3", 1, "FixedBiasComponent dim=64 value=0.3", 0},
    {"SigmoidComponent dim=5", 1, "SigmoidComponent dim=64", 0},
    {"TanhComponent dim=5", 1, "TanhComponent dim=64", 0},
    {"RectifiedLinearComponent dim=5", 1, "RectifiedLinearComponent dim=64", 0},
    {"SoftmaxComponent dim=5", 1, "SoftmaxComponent dim=64", 0},
    {"LogSoftmaxComponent dim=5", 1, "LogSoftmaxComponent dim=64", 0},
    {"NormalizeComponent dim=5", 1, "NormalizeComponent dim=64", 0},
    {"PnormComponent input-dim=6 output-dim=2 p=2", 1,
     "PnormComponent input-dim=96 output-dim=32 p=2", 0},
    {"PnormComponent input-dim=6 output-dim=3 p=3", 1, NULL, 0},
    {"DropoutComponent dim=5 dropout-proportion=0.3", 1,
     "DropoutComponent dim=64 dropout-proportion=0.3", 0},
    {"ConvolutionComponent input-height=5 input-width=4 input-channels=2 num-filters=3 "
     "filter-height=3 filter-width=2 stride-height=2 pad-height=1 use-natural-gradient=false",
     1,
     "ConvolutionComponent input-height=6 input-width=6 input-channels=16 num-filters=32 "
     "filter-height=3 filter-width=3 pad-height=1 pad-width=1",
     1},
    {"ConvolutionComponent input-height=4 input-width=3 input-channels=3 num-filters=2 "
     "filter-height=2 filter-width=3 stride-width=2 pad-width=2 rank-in=4 rank-out=1",
     2, NULL, 0},
    {"MaxPoolingComponent input-height=4 input-width=4 input-channels=2 pool-height=2 "
     "pool-width=2",
     1, "MaxPoolingComponent input-height=4 input-width=4 input-channels=8 pool-height=2 "
        "pool-width=2", 0},
    {"BatchNormComponent dim=6 block-dim=2", 1, "BatchNormComponent dim=64 block-dim=16", 0},
    {"BatchNormComponent dim=5 epsilon=0.1", 2, NULL, 0},
    {"MaxPoolingComponent input-height=5 input-width=3 input-channels=2 pool-height=3 "
     "pool-width=2 stride-height=2 stride-width=1 pad-height=1 pad-width=1",
     1, NULL, 0},
};

/* 1 if some row's config (bf16 = 0) or bf16_config (bf16 = 1) is of type ops. */
static inline int component_case_covers(const struct component_ops *ops, int bf16) {
    for (size_t k = 0; k < sizeof component_cases / sizeof component_cases[0]; k++) {
        const char *config = bf16 ? component_cases[k].bf16_config : component_cases[k].config;
        char type[128];
        if (config && sscanf(config, "%127s", type) == 1 && component_ops_find(type) == ops)
            return 1;
    }
    return 0;
}

#endif
