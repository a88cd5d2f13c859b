/* A rank's state file of train_sync (--state-in / --state-out of nnet-train-mpi; train.h):
 * the momentum's velocity in every mode, and what the mode keeps (struct sync_state: EASGD's and
 * Parle's replica, Parle's anchor, EMA, outer velocity and t).
 * Kaldi token style, binary:
 *   <TrainState> <Version> 1 <Mode> int32 <Step> double (Parle's t)
 *   <Replica> FV <Anchor> FV <Ema> FV <Velocity> FV <OuterVelocity> FV </TrainState>
 * A vector a mode does not use is empty (dim 0). The centre is not stored: it is the model. */
#include "train/train-internal.h"
#include "io/io.h"

#define NUM_VECTORS 5
static const char *const state_names[NUM_VECTORS] = {"<Replica>", "<Anchor>", "<Ema>",
                                                     "<Velocity>", "<OuterVelocity>"};

/* The run's vectors in the file's order (an empty one where the mode keeps none; replica: the
 * network's parameters, a view) and its t (NULL: 0). */
static long long *state_vectors(struct sync_run *r, struct vector *v[NUM_VECTORS],
                                struct vector *replica, struct vector *empty) {
    struct sync_state s = {0};
    if (r->ops->state) r->ops->state(r, &s);
    *replica = s.replica ? nnet_params(r->n) : (struct vector){0};
    v[0] = replica;
    v[1] = s.anchor ? s.anchor : empty;
    v[2] = s.ema ? s.ema : empty;
    v[3] = &r->mom.velocity;
    v[4] = s.outer_velocity ? s.outer_velocity : empty;
    return s.t;
}

int train_sync_write_state(struct sync_run *r, const char *wxfilename) {
    struct vector *v[NUM_VECTORS], replica, empty = {0};
    long long *t = state_vectors(r, v, &replica, &empty);
    struct kout out = {0};
    if (kout_open(&out, wxfilename)) return -1;
    int bad = io_write_header(&out, 1) || io_write_token(&out, 1, "<TrainState>") ||
              io_write_token(&out, 1, "<Version>") || io_write_int32(&out, 1, 1) ||
              io_write_token(&out, 1, "<Mode>") || io_write_int32(&out, 1, (int32_t)r->o->mode) ||
              io_write_token(&out, 1, "<Step>") || io_write_double(&out, 1, t ? (double)*t : 0);
    for (int i = 0; i < NUM_VECTORS && !bad; i++) {
        struct vector h = {0};
        vector_init_on(&h, v[i]->dim, MATRIX_CPU);
        if (v[i]->dim) vector_to_host(v[i], h.data);
        bad = io_write_token(&out, 1, state_names[i]) || io_write_vector(&out, 1, &h);
        vector_release(&h);
    }
    if (bad || io_write_token(&out, 1, "</TrainState>")) {
        kout_abort(&out);
        return -1;
    }
    return kout_close(&out);
}

int train_sync_read_state(struct sync_run *r, const char *rxfilename) {
    struct vector *v[NUM_VECTORS], replica, empty = {0};
    long long *t = state_vectors(r, v, &replica, &empty);
    struct kin in = {0};
    int binary;
    int32_t version, mode;
    double step;
    if (kin_open(&in, rxfilename)) return -1;
    int bad = io_read_header(&in, &binary) || io_expect_token(&in, binary, "<TrainState>") ||
              io_expect_token(&in, binary, "<Version>") || io_read_int32(&in, binary, &version);
    if (!bad && version != 1) bad = kin_error(&in, "state version %d: expected 1", (int)version);
    if (!bad)
        bad = io_expect_token(&in, binary, "<Mode>") || io_read_int32(&in, binary, &mode) ||
              io_expect_token(&in, binary, "<Step>") || io_read_double(&in, binary, &step);
    if (!bad && mode != (int32_t)r->o->mode)
        bad = kin_error(&in, "<Mode> %d: this run's mode is %d", (int)mode, (int)r->o->mode);
    for (int i = 0; i < NUM_VECTORS && !bad; i++) {
        struct vector h = {0};
        bad = io_expect_token(&in, binary, state_names[i]) || io_read_vector(&in, binary, &h);
        if (!bad && h.dim != v[i]->dim)
            bad = kin_error(&in, "%s has %d values, expected %d (another model or mode?)",
                            state_names[i], h.dim, v[i]->dim);
        if (!bad && h.dim) vector_from_host(v[i], h.data);
        vector_release(&h);
    }
    if (!bad) bad = io_expect_token(&in, binary, "</TrainState>");
    if (kin_close(&in)) bad = 1;
    if (bad) return error_wrap("state '%s': ", rxfilename);
    if (!(step >= 0)) return error_set("state '%s': negative <Step>", rxfilename);
    if (t) *t = (long long)step;
    return 0;
}
