/* Unit tests for the trainers' option groups (train.h: train_cli_*, train.h: train_sync_cli_*):
 * every group registers its entries once, options_parse fills the options through them, the
 * checks turn the strings into enums, resolve nnet-train-mpi's momentum by mode and name the
 * option in every error. */
#include "train/train.h"
#include "test.h"

#include <stdlib.h>

static int parse(struct option_spec *specs, int n, const char *const *args, int num_args) {
    char *argv[32];
    int argc = 0;
    argv[argc++] = (char *)"prog";
    argv[argc++] = (char *)"--print-args=false";
    for (int i = 0; i < num_args; i++) argv[argc++] = (char *)args[i];
    argv[argc] = NULL;
    options_parse(&argc, argv, "usage", specs, n);
    return argc;
}

static int has(const struct option_spec *specs, int n, const char *name) {
    int count = 0;
    for (int i = 0; i < n; i++) count += !strcmp(specs[i].name, name);
    return count;
}

static void test_groups(void) {
    struct train_options o;
    struct train_cli c;
    struct option_spec specs[TRAIN_CLI_MAX_SPECS];
    int n = train_cli_register(&c, &o, TRAIN_CLI_ALL, 0, specs);
    CHECK(n == 27);
    const char *names[] = {"minibatch-size", "srand", "num-threads", "precision", "use-gpu",
                           "minibatches-per-phase", "max-change", "binary", "gaf-microbatches",
                           "gaf-threshold", "gaf-fusion", "gaf-on", "gaf-scale", "proximal-model",
                           "proximal-coupling", "entropy-inner-steps", "entropy-coupling",
                           "entropy-ema", "entropy-noise", "entropy-outer-rate", "momentum",
                           "nesterov", "weight-decay"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) CHECK(has(specs, n, names[i]) == 1);
    CHECK(o.minibatch_size == 512 && o.gaf_threshold == 0.97f && c.max_change > 0);
    CHECK(train_cli_register(&c, &o, TRAIN_CLI_GAF, 0, specs) == 5);

    n = train_cli_register(&c, &o, TRAIN_CLI_ALL, 0, specs);
    const char *args[] = {"--minibatch-size=7", "--srand=5", "--gaf-fusion=mean",
                          "--gaf-on=step", "--gaf-scale=one", "--momentum=0.5", "--nesterov",
                          "in", "out"};
    CHECK(parse(specs, n, args, 9) == 3);
    CHECK(train_cli_check(&c) == 0);
    CHECK(o.minibatch_size == 7 && o.srand == 5 && o.gaf_fusion == GAF_FUSION_MEAN);
    CHECK(o.gaf_on_steps == 1 && o.gaf_unit_scale == 1 && o.momentum == 0.5f && o.nesterov == 1);
}

static void test_errors(void) {
    struct train_options o;
    struct train_cli c;
    struct option_spec specs[TRAIN_CLI_MAX_SPECS];
    struct {
        const char *arg, *message;
    } cases[] = {
        {"--minibatch-size=0", "--minibatch-size=0: must be from 1 to 1048576"},
        {"--gaf-threshold=-1", "--gaf-microbatches and --gaf-threshold must not be negative"},
        {"--gaf-fusion=sum", "--gaf-fusion='sum': expected halving or mean"},
        {"--gaf-on=both", "--gaf-on='both': expected gradient or step"},
        {"--gaf-scale=two", "--gaf-scale='two': expected accepted or one"},
        {"--entropy-ema=1", "--entropy-ema in [0, 1)"},
        {"--proximal-coupling=0.5", "--proximal-coupling needs --proximal-model"},
        {"--momentum=1", "--momentum=1: must lie in [0, 1)"},
        {"--weight-decay=-1", "--weight-decay=-1: must not be negative"},
        {"--nesterov=true", "--nesterov needs --momentum > 0"},
        {"--average-period=4", "--average-period (> 0) and --average-out go together"},
        {"--average-in=a.mdl", "--average-in and --average-count (> 0) go together"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int n = train_cli_register(&c, &o, TRAIN_CLI_ALL, 0, specs);
        parse(specs, n, &cases[i].arg, 1);
        CHECK(train_cli_check(&c) == -1);
        CHECK(strstr(error_get(), cases[i].message) != NULL);
    }
}

static void test_sync(void) {
    struct train_sync_options o;
    struct train_sync_cli c;
    struct option_spec specs[TRAIN_SYNC_CLI_MAX_SPECS];
    int n = train_sync_cli_register(&c, &o, specs);
    CHECK(has(specs, n, "mode") == 1 && has(specs, n, "state-out") == 1);
    CHECK(has(specs, n, "proximal-model") == 0 && has(specs, n, "gaf-scale") == 1);
    CHECK(o.average_every == 8 && o.parle_inner_steps == 25 && o.train.momentum == -1);
    CHECK(train_sync_cli_check(&c) == 0); /* no options: params, no momentum */
    CHECK(o.mode == TRAIN_SYNC_PARAMS && o.train.momentum == 0 && o.train.nesterov == 0);
    CHECK(!strcmp(c.mode, "params"));

    n = train_sync_cli_register(&c, &o, specs);
    const char *parle[] = {"--mode=parle", "--parle-minibatches-per-epoch=9"};
    parse(specs, n, parle, 2);
    CHECK(train_sync_cli_check(&c) == 0);
    CHECK(o.mode == TRAIN_SYNC_PARLE && o.train.momentum == 0.9f && o.train.nesterov == 1);
    CHECK(o.parle_minibatches_per_epoch == 9);

    n = train_sync_cli_register(&c, &o, specs);
    const char *gaf[] = {"--gaf-microbatches=2"};
    parse(specs, n, gaf, 1);
    CHECK(train_sync_cli_check(&c) == 0);
    CHECK(o.mode == TRAIN_SYNC_STEPS && !strcmp(c.mode, "gradients"));

    struct {
        const char *arg[2], *message;
    } cases[] = {
        {{"--mode=ring", NULL}, "--mode must be params, gradients, elastic or parle, not 'ring'"},
        {{"--nesterov=maybe", NULL}, "--nesterov='maybe': expected true, false or auto"},
        {{"--mode=elastic", "--average-every=0"}, "elastic: --average-every (tau) must be"},
        {{"--mode=parle", "--parle-inner-steps=0"}, "parle: --parle-inner-steps must be"},
        {{"--mode=params", "--gaf-microbatches=2"}, "--gaf-microbatches needs --mode=gradients"},
        {{"--average-every=-1", NULL}, "--average-every must be at least 0"},
        {{"--bmuf", "--block-momentum=1"}, "--block-momentum=1: must lie in [0, 1)"},
        {{"--bmuf", "--block-momentum=-0.1"}, "--block-momentum=-0.1: must lie in [0, 1)"},
        {{"--bmuf", "--block-learning-rate=0"}, "--block-learning-rate=0: must be positive"},
        {{"--block-momentum=0.5", NULL}, "need --bmuf"},
        {{"--mode=gradients", "--bmuf"}, "--bmuf, --warmup-steps and --group-size need --mode=params"},
        {{"--group-size=2", NULL}, "--group-size=2 needs --group-average-every of at least 1"},
        {{"--group-size=0", NULL}, "--group-size must be at least 1"},
        {{"--warmup-steps=-1", NULL}, "--warmup-steps and --minibatch-offset must not be negative"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        n = train_sync_cli_register(&c, &o, specs);
        parse(specs, n, cases[i].arg, cases[i].arg[1] ? 2 : 1);
        CHECK(train_sync_cli_check(&c) == -1);
        CHECK(strstr(error_get(), cases[i].message) != NULL);
    }
}

int main(void) {
    log_set_program("train-options-test");
    TEST_RUN(test_groups);
    TEST_RUN(test_errors);
    TEST_RUN(test_sync);
    TEST_MAIN_END();
}
