/* bmuf: block momentum's update and its state file (update.h). */
#include "update/update.h"

#include <math.h>
#include <string.h>

int bmuf_cli_register(struct bmuf_cli *c, struct bmuf_options *o, struct option_spec *specs) {
    memset(c, 0, sizeof *c);
    *o = (struct bmuf_options){.on = 0, .momentum = -1, .learning_rate = 1, .nesterov = 1};
    c->o = o;
    c->momentum = "auto";
    c->state_in = c->state_out = "";
    int n = 0;
    OPTION("bmuf", OPT_BOOL, &o->on,
           "Block momentum (BMUF, Chen & Huo 2016; DiLoCo's outer Nesterov) on the averaged update "
           "of every block");
    OPTION("block-momentum", OPT_STRING, &c->momentum,
           "BMUF: eta in [0, 1) (auto: 1 - 1/N for N jobs, the paper's recommendation)");
    OPTION("block-learning-rate", OPT_FLOAT, &o->learning_rate, "BMUF: zeta > 0");
    OPTION("block-nesterov", OPT_BOOL, &o->nesterov,
           "BMUF: Nesterov block momentum (the jobs start from the look-ahead); false: classic");
    OPTION("block-state-in", OPT_STRING, &c->state_in,
           "BMUF: the block momentum of the previous block (not given: start from zero)");
    OPTION("block-state-out", OPT_STRING, &c->state_out, "BMUF: write the block momentum here");
    ASSERT(n == BMUF_CLI_NUM_SPECS);
    return n;
}

int bmuf_cli_check(struct bmuf_cli *c) {
    struct bmuf_options *o = c->o;
    if (!o->on) {
        if (strcmp(c->momentum, "auto") || *c->state_in || *c->state_out)
            return error_set("--block-momentum/--block-state-in/--block-state-out need --bmuf");
        return 0;
    }
    if (strcmp(c->momentum, "auto")) {
        if (parse_float(c->momentum, &o->momentum))
            return error_wrap("--block-momentum='%s': ", c->momentum);
        if (!(o->momentum >= 0 && o->momentum < 1))
            return error_set("--block-momentum=%s: must lie in [0, 1) (auto: 1 - 1/N)",
                             c->momentum);
    }
    if (!(o->learning_rate > 0) || !isfinite(o->learning_rate))
        return error_set("--block-learning-rate=%g: must be positive", o->learning_rate);
    return 0;
}

float bmuf_resolve_momentum(const struct bmuf_options *o, int num_jobs) {
    ASSERT(num_jobs >= 1);
    return o->momentum >= 0 ? o->momentum : 1.0f - 1.0f / (float)num_jobs;
}

void bmuf_update(struct vector *start, struct vector *velocity, const struct vector *avg,
                 float eta, float zeta, int nesterov) {
    ASSERT(start->dim == velocity->dim && start->dim == avg->dim);
    const float look = nesterov ? eta : 0;
    /* start <- W(t-1) = S(t-1) - look m(t-1); then G = A - W - look m(t-1), so
     * m(t) = (eta - zeta look) m(t-1) + zeta (A - W); S(t) = W + (1 + look) m(t). */
    vector_add(start, -look, velocity);
    vector_scale(velocity, eta - zeta * look);
    vector_add(velocity, zeta, avg);
    vector_add(velocity, -zeta, start);
    vector_add(start, 1 + look, velocity);
}

int bmuf_state_write(const char *wxfilename, const struct vector *velocity, int num_jobs,
                     float eta, float zeta, int nesterov) {
    struct kout out = {0};
    if (kout_open(&out, wxfilename)) return -1;
    struct vector h = {0};
    vector_init_on(&h, velocity->dim, MATRIX_CPU);
    if (velocity->dim) vector_to_host(velocity, h.data);
    int bad = io_write_header(&out, 1) || io_write_token(&out, 1, "<BlockMomentum>") ||
              io_write_token(&out, 1, "<Version>") || io_write_int32(&out, 1, 1) ||
              io_write_token(&out, 1, "<NumJobs>") || io_write_int32(&out, 1, num_jobs) ||
              io_write_token(&out, 1, "<Nesterov>") || io_write_bool(&out, 1, nesterov) ||
              io_write_token(&out, 1, "<Momentum>") || io_write_float(&out, 1, eta) ||
              io_write_token(&out, 1, "<LearningRate>") || io_write_float(&out, 1, zeta) ||
              io_write_token(&out, 1, "<Velocity>") || io_write_vector(&out, 1, &h) ||
              io_write_token(&out, 1, "</BlockMomentum>");
    vector_release(&h);
    if (bad) {
        kout_abort(&out);
        return error_wrap("block momentum '%s': ", wxfilename);
    }
    return kout_close(&out) ? error_wrap("block momentum '%s': ", wxfilename) : 0;
}

int bmuf_state_read_stream(struct kin *in, struct vector *velocity, int *num_jobs,
                           int *nesterov) {
    int binary;
    int32_t version = 0, n = 0;
    float eta, zeta;
    int bad = io_read_header(in, &binary) || io_expect_token(in, binary, "<BlockMomentum>") ||
              io_expect_token(in, binary, "<Version>") || io_read_int32(in, binary, &version);
    if (!bad && version != 1) bad = kin_error(in, "version %d: expected 1", (int)version);
    if (!bad)
        bad = io_expect_token(in, binary, "<NumJobs>") || io_read_int32(in, binary, &n) ||
              io_expect_token(in, binary, "<Nesterov>") || io_read_bool(in, binary, nesterov) ||
              io_expect_token(in, binary, "<Momentum>") || io_read_float(in, binary, &eta) ||
              io_expect_token(in, binary, "<LearningRate>") || io_read_float(in, binary, &zeta) ||
              io_expect_token(in, binary, "<Velocity>") || io_read_vector(in, binary, velocity) ||
              io_expect_token(in, binary, "</BlockMomentum>");
    if (!bad && n < 1) bad = kin_error(in, "<NumJobs> %d: must be at least 1", (int)n);
    if (!bad && !vector_is_finite(velocity)) bad = kin_error(in, "<Velocity> is not finite");
    *num_jobs = n;
    return bad ? -1 : 0;
}

int bmuf_state_read(const char *rxfilename, struct vector *velocity, int num_jobs, int nesterov) {
    struct kin in = {0};
    if (kin_open(&in, rxfilename)) return error_wrap("block momentum '%s': ", rxfilename);
    struct vector h = {0};
    int n = 0, nest = 0;
    int bad = bmuf_state_read_stream(&in, &h, &n, &nest);
    if (kin_close(&in)) bad = 1;
    if (!bad && h.dim != velocity->dim)
        bad = error_set("<Velocity> has %d values, the model %d: the state of another model",
                        h.dim, velocity->dim);
    if (!bad && n != num_jobs)
        bad = error_set("<NumJobs> %d, this run has %d jobs: the state of another run", n,
                        num_jobs);
    if (!bad && nest != (nesterov != 0))
        bad = error_set("<Nesterov> %s, this run's --block-nesterov %s", nest ? "true" : "false",
                        nesterov ? "true" : "false");
    if (!bad) vector_from_host(velocity, h.data);
    vector_release(&h);
    return bad ? error_wrap("block momentum '%s': ", rxfilename) : 0;
}
