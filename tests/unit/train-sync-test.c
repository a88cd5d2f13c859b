/* Unit tests for train_sync (the loop behind nnet-train-mpi) with an in-process communicator:
 * each "rank" is a thread and the all-reduce goes through shared memory with barriers. Checks that
 * averaged copies are bitwise equal, that the average is the mean of independent runs, that summed
 * steps equal one process on the concatenated minibatch, that uneven archives end together, and
 * that a failure on one rank (or different start models) fails every rank; and that Parle and
 * EASGD (with momentum and weight decay) compute exactly the update written out here with plain
 * network calls, replica by replica, without the loop or the communicator. */
#include "train/train-internal.h"
#include "train/train.h"
#include "test.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

enum { MAX_RANKS = 4, DIM = 6, CLASSES = 3 };

/* ---- a communicator of threads ---- */
struct thread_group {
    int size;
    pthread_barrier_t barrier;
    void *bufs[MAX_RANKS];
};

struct thread_comm {
    struct thread_group *g;
    int rank;
};

static double get_elem(const void *p, size_t i, enum comm_type t) {
    if (t == COMM_FLOAT) return ((const float *)p)[i];
    if (t == COMM_DOUBLE) return ((const double *)p)[i];
    return (double)((const int64_t *)p)[i];
}

/* Every rank reduces all buffers in rank order, so the results are bitwise identical. */
static int thread_allreduce(void *ctx, void *data, size_t count, enum comm_type type,
                            enum comm_op op, int device) {
    struct thread_comm *c = ctx;
    struct thread_group *g = c->g;
    ASSERT(device == MATRIX_CPU);
    size_t elem = type == COMM_FLOAT ? 4 : 8;
    void *tmp = xmalloc(count * elem + 1);
    g->bufs[c->rank] = data;
    pthread_barrier_wait(&g->barrier);
    for (size_t i = 0; i < count; i++) {
        if (type == COMM_INT64) {
            int64_t v = ((int64_t *)g->bufs[0])[i];
            for (int r = 1; r < g->size; r++) {
                int64_t x = ((int64_t *)g->bufs[r])[i];
                v = op == COMM_SUM ? v + x : op == COMM_MIN ? (x < v ? x : v) : (x > v ? x : v);
            }
            ((int64_t *)tmp)[i] = v;
        } else if (type == COMM_FLOAT) {
            float v = ((float *)g->bufs[0])[i];
            for (int r = 1; r < g->size; r++) {
                float x = ((float *)g->bufs[r])[i];
                v = op == COMM_SUM ? v + x : op == COMM_MIN ? (x < v ? x : v) : (x > v ? x : v);
            }
            ((float *)tmp)[i] = v;
        } else {
            double v = get_elem(g->bufs[0], i, type);
            for (int r = 1; r < g->size; r++) {
                double x = get_elem(g->bufs[r], i, type);
                v = op == COMM_SUM ? v + x : op == COMM_MIN ? (x < v ? x : v) : (x > v ? x : v);
            }
            ((double *)tmp)[i] = v;
        }
    }
    pthread_barrier_wait(&g->barrier); /* everyone has read every buffer */
    memcpy(data, tmp, count * elem);
    free(tmp);
    return 0;
}

/* ---- data: 3 Gaussian classes in DIM dimensions, one frame per example ---- */
static float means[CLASSES][DIM];
static char dir[64];

static void make_means(void) {
    struct rng r;
    rng_seed(&r, 5);
    for (int c = 0; c < CLASSES; c++)
        for (int d = 0; d < DIM; d++) means[c][d] = 1.5f * rng_gauss(&r);
}

/* Example i of stream seed: deterministic, so the same example can go to several archives. */
static void make_example(struct example *eg, uint64_t seed, int i) {
    struct rng r;
    rng_seed(&r, seed * 100003 + (uint64_t)i);
    int32_t label = i % CLASSES;
    struct matrix m;
    matrix_init_on(&m, 1, DIM, MATRIX_CPU);
    for (int d = 0; d < DIM; d++) m.data[d] = means[label][d] + rng_gauss(&r);
    example_init(eg);
    example_set_labels_simple(eg, 1, &label);
    ASSERT(example_set_input(eg, &m, 0, EGS_COMPRESS_NONE) == 0);
    matrix_release(&m);
}

/* Archive dir/name of the examples (seed[k], index[k]), k < n. Returns the rspecifier. */
static const char *write_archive(const char *name, int n, const uint64_t *seeds, const int *idx) {
    static char spec[8][256];
    static int next;
    char *s = spec[next++ % 8];
    snprintf(s, 256, "ark:%s/%s", dir, name);
    char ws[300];
    snprintf(ws, sizeof ws, "ark:%s/%s", dir, name);
    struct table_writer w;
    ASSERT(table_writer_open(&w, ws, &holder_example) == 0);
    for (int k = 0; k < n; k++) {
        struct example eg;
        make_example(&eg, seeds[k], idx[k]);
        char key[32];
        snprintf(key, sizeof key, "e%llu-%04d", (unsigned long long)seeds[k], idx[k]);
        ASSERT(table_writer_write(&w, key, &eg) == 0);
        example_release(&eg);
    }
    ASSERT(table_writer_close(&w) == 0);
    return s;
}

/* n examples 0..n-1 of one stream. */
static const char *stream_archive(const char *name, uint64_t seed, int n) {
    uint64_t *seeds = xmalloc(sizeof *seeds * n);
    int *idx = xmalloc(sizeof *idx * n);
    for (int k = 0; k < n; k++) {
        seeds[k] = seed;
        idx[k] = k;
    }
    const char *s = write_archive(name, n, seeds, idx);
    free(seeds);
    free(idx);
    return s;
}

/* kind 0: plain SGD; 1: natural gradient; 2: a graph (docs/COMPONENTS.md "Residual
 * connections"): plain SGD through a residual Sum and an Append of the input, whose parameters
 * are one block as a chain's are. */
static struct nnet *make_net(int kind) {
    const char *plain = "AffineComponent input-dim=6 output-dim=16 learning-rate=0.02\n"
                        "RectifiedLinearComponent dim=16\n"
                        "AffineComponent input-dim=16 output-dim=3 learning-rate=0.02\n"
                        "SoftmaxComponent dim=3\n";
    const char *ng = "NaturalGradientAffineComponent input-dim=6 output-dim=16 learning-rate=0.02\n"
                     "RectifiedLinearComponent dim=16\n"
                     "NaturalGradientAffineComponent input-dim=16 output-dim=3 "
                     "learning-rate=0.02\n"
                     "SoftmaxComponent dim=3\n";
    const char *graph = "AffineComponent input-dim=6 output-dim=16 learning-rate=0.02\n"
                        "RectifiedLinearComponent name=r1\n"
                        "AffineComponent output-dim=16 learning-rate=0.02 name=h2\n"
                        "RectifiedLinearComponent input=Sum(h2, r1) name=r2\n"
                        "AffineComponent output-dim=3 learning-rate=0.02 input=Append(r2, input)\n"
                        "SoftmaxComponent\n";
    struct nnet *n = nnet_init_from_config_text(kind == 2 ? graph : kind ? ng : plain, 11);
    ASSERT(n);
    return n;
}

static float *params_copy(struct nnet *n) {
    struct vector p = nnet_params(n);
    float *h = xmalloc(sizeof(float) * p.dim);
    vector_to_host(&p, h);
    return h;
}

/* ---- running N ranks ---- */
struct rank_job {
    struct thread_comm tc;
    struct train_comm comm;
    struct nnet *n;
    const char *egs;
    const struct train_sync_options *o;
    struct train_sync_stats st;
    int rc;
    char error[512];
};

static void *rank_main(void *arg) {
    struct rank_job *j = arg;
    j->rc = train_sync(j->n, j->egs, j->o, &j->comm, &j->st);
    snprintf(j->error, sizeof j->error, "%s", j->rc ? error_get() : "");
    return NULL;
}

/* Train nets[r] on egs[r] for r < size, one thread each; with group > 1, ranks r / group form
 * the groups of hierarchical averaging (comm.group). */
static void run_ranks_grouped(int size, int group, struct nnet **nets, const char **egs,
                              const struct train_sync_options *o, struct rank_job *jobs) {
    struct thread_group g = {.size = size}, sub[MAX_RANKS];
    struct thread_comm sub_tc[MAX_RANKS];
    struct train_comm sub_comm[MAX_RANKS];
    pthread_barrier_init(&g.barrier, NULL, (unsigned)size);
    for (int k = 0; group > 1 && k < size / group; k++) {
        sub[k] = (struct thread_group){.size = group};
        pthread_barrier_init(&sub[k].barrier, NULL, (unsigned)group);
    }
    pthread_t th[MAX_RANKS];
    for (int r = 0; r < size; r++) {
        jobs[r] = (struct rank_job){.n = nets[r], .egs = egs[r], .o = o};
        jobs[r].tc = (struct thread_comm){.g = &g, .rank = r};
        jobs[r].comm = (struct train_comm){
            .rank = r, .size = size, .ctx = &jobs[r].tc, .allreduce = thread_allreduce};
        if (group > 1 && size % group == 0) {
            sub_tc[r] = (struct thread_comm){.g = &sub[r / group], .rank = r % group};
            sub_comm[r] = (struct train_comm){.rank = r % group, .size = group, .ctx = &sub_tc[r],
                                              .allreduce = thread_allreduce};
            jobs[r].comm.group = &sub_comm[r];
        }
    }
    for (int r = 0; r < size; r++) ASSERT(pthread_create(&th[r], NULL, rank_main, &jobs[r]) == 0);
    for (int r = 0; r < size; r++) pthread_join(th[r], NULL);
    pthread_barrier_destroy(&g.barrier);
    for (int k = 0; group > 1 && k < size / group; k++) pthread_barrier_destroy(&sub[k].barrier);
}

static void run_ranks(int size, struct nnet **nets, const char **egs,
                      const struct train_sync_options *o, struct rank_job *jobs) {
    run_ranks_grouped(size, 1, nets, egs, o, jobs);
}

static void options(struct train_sync_options *o, enum train_sync_mode mode, int k, int mb) {
    train_sync_options_default(o);
    o->mode = mode;
    o->average_every = k;
    o->train.minibatch_size = mb;
    o->train.progress_every = 0;
    o->check_sync = 1;
}

/* ---- tests ---- */

/* Params mode: after training every copy is bitwise the same, the copies moved, and the totals
 * add up over ranks; 4 ranks and NG components too. */
static void test_params_identical(void) {
    for (int kind = 0; kind <= 2; kind++) {
        const char *egs[MAX_RANKS];
        struct nnet *nets[MAX_RANKS];
        char name[32];
        for (int r = 0; r < MAX_RANKS; r++) {
            snprintf(name, sizeof name, "id.%d.ark", r);
            egs[r] = stream_archive(name, 10 + (uint64_t)r, 96);
            nets[r] = make_net(kind);
        }
        float *init = params_copy(nets[0]);
        struct train_sync_options o;
        options(&o, TRAIN_SYNC_PARAMS, 2, 16); /* 6 minibatches: 3 averages */
        struct rank_job jobs[MAX_RANKS];
        run_ranks(MAX_RANKS, nets, egs, &o, jobs);
        int dim = nnet_num_params(nets[0]);
        float *p0 = params_copy(nets[0]);
        for (int r = 0; r < MAX_RANKS; r++) {
            CHECK(jobs[r].rc == 0);
            float *p = params_copy(nets[r]);
            int same = !memcmp(p, p0, sizeof(float) * dim);
            free(p);
            CHECK(same);
            CHECK(jobs[r].st.num_exchanges == 3);
            CHECK(jobs[r].st.total.num_egs == MAX_RANKS * 96);
            CHECK(jobs[r].st.total.num_minibatches == MAX_RANKS * 6);
            CHECK(jobs[r].st.exchange_bytes == 3.0 * sizeof(float) * dim);
        }
        double moved = 0;
        for (int i = 0; i < dim; i++) moved += fabs(p0[i] - init[i]);
        CHECK(moved > 0.1);
        CHECK(jobs[0].st.total.correct / jobs[0].st.total.weight > 0.6);
        free(p0);
        free(init);
        for (int r = 0; r < MAX_RANKS; r++) nnet_free(nets[r]);
    }
}

/* Params mode with averaging only at the end: the result is the mean of the models that two
 * independent single-process runs produce. */
static void test_average_is_mean(void) {
    const char *egs[2] = {stream_archive("mean.0.ark", 20, 64),
                          stream_archive("mean.1.ark", 21, 64)};
    struct nnet *nets[2] = {make_net(0), make_net(0)};
    struct train_sync_options o;
    options(&o, TRAIN_SYNC_PARAMS, 0, 16);
    struct rank_job jobs[2];
    run_ranks(2, nets, egs, &o, jobs);
    CHECK(jobs[0].rc == 0 && jobs[1].rc == 0);
    CHECK(jobs[0].st.num_exchanges == 1);
    int dim = nnet_num_params(nets[0]);
    float *avg = params_copy(nets[0]);
    float *single[2];
    for (int r = 0; r < 2; r++) {
        struct nnet *n = make_net(0);
        struct train_options to;
        train_options_default(&to);
        to.minibatch_size = 16;
        to.progress_every = 0;
        struct train_stats ts;
        CHECK(train_sgd(n, egs[r], &to, &ts) == 0);
        single[r] = params_copy(n);
        nnet_free(n);
    }
    double max_diff = 0, spread = 0;
    for (int i = 0; i < dim; i++) {
        double mean = 0.5 * ((double)single[0][i] + single[1][i]);
        max_diff = fmax(max_diff, fabs(avg[i] - mean));
        spread = fmax(spread, fabs(single[0][i] - single[1][i]));
    }
    free(avg);
    free(single[0]);
    free(single[1]);
    nnet_free(nets[0]);
    nnet_free(nets[1]);
    CHECK(spread > 1e-3); /* the two runs differ, so the check below means something */
    CHECK(max_diff < 1e-6);
}

/* Steps mode, 2 ranks with minibatches of 8 == one process with minibatches of 16 made of rank
 * 0's 8 examples then rank 1's (plain SGD: the step is lr x the summed gradient), for a chain
 * (kind 0) and a graph (kind 2). */
static void steps_equal_big_minibatch(int kind) {
    enum { B = 8, N = 64 };
    uint64_t seeds[2 * N];
    int idx[2 * N];
    for (int k = 0; k < 2 * N; k++) {
        int mbi = k / (2 * B), within = k % (2 * B);
        seeds[k] = within < B ? 30 : 31;
        idx[k] = mbi * B + within % B;
    }
    const char *big = write_archive("big.ark", 2 * N, seeds, idx);
    const char *egs[2] = {stream_archive("steps.0.ark", 30, N),
                          stream_archive("steps.1.ark", 31, N)};
    struct nnet *nets[2] = {make_net(kind), make_net(kind)};
    struct train_sync_options o;
    options(&o, TRAIN_SYNC_STEPS, 1, B);
    struct rank_job jobs[2];
    run_ranks(2, nets, egs, &o, jobs);
    CHECK(jobs[0].rc == 0 && jobs[1].rc == 0);
    CHECK(jobs[0].st.num_exchanges == N / B);
    struct nnet *single = make_net(kind);
    float *init = params_copy(single);
    struct train_options to;
    train_options_default(&to);
    to.minibatch_size = 2 * B;
    to.progress_every = 0;
    struct train_stats ts;
    CHECK(train_sgd(single, big, &to, &ts) == 0);
    CHECK(ts.num_minibatches == N / B);
    int dim = nnet_num_params(single);
    float *a = params_copy(nets[0]), *b = params_copy(nets[1]), *s = params_copy(single);
    double max_diff = 0, moved = 0;
    int same = !memcmp(a, b, sizeof(float) * dim);
    for (int i = 0; i < dim; i++) {
        max_diff = fmax(max_diff, fabs(a[i] - s[i]));
        moved = fmax(moved, fabs(s[i] - init[i]));
    }
    CHECK_NEAR(jobs[0].st.total.objf, ts.objf, 1e-5);
    free(a);
    free(b);
    free(s);
    free(init);
    nnet_free(nets[0]);
    nnet_free(nets[1]);
    nnet_free(single);
    CHECK(same);
    CHECK(moved > 0.05);
    CHECK(max_diff < 1e-5);
}

static void test_steps_equal_big_minibatch(void) {
    for (int kind = 0; kind <= 2; kind += 2)
        steps_equal_big_minibatch(kind);
}

/* Archives of 5, 3 and 4 minibatches: every rank stops after 3, without error. */
static void test_uneven_stop_together(void) {
    const char *egs[3] = {stream_archive("un.0.ark", 40, 80), stream_archive("un.1.ark", 41, 48),
                          stream_archive("un.2.ark", 42, 64)};
    for (int mode = 0; mode <= 1; mode++) {
        struct nnet *nets[3] = {make_net(1), make_net(1), make_net(1)};
        struct train_sync_options o;
        options(&o, mode, 2, 16);
        struct rank_job jobs[3];
        run_ranks(3, nets, egs, &o, jobs);
        for (int r = 0; r < 3; r++) {
            CHECK(jobs[r].rc == 0);
            CHECK(jobs[r].st.local.num_minibatches == 3);
            CHECK(jobs[r].st.total.num_minibatches == 9);
            CHECK(jobs[r].st.num_stopped_early == 2);
        }
        /* params: averages after 2 and at the end (3); steps: one sum per minibatch */
        CHECK(jobs[0].st.num_exchanges == (mode == TRAIN_SYNC_PARAMS ? 2 : 3));
        for (int r = 0; r < 3; r++) nnet_free(nets[r]);
    }
}

/* A truncated archive on rank 1: every rank returns -1; rank 1 says what is wrong, the others
 * name rank 1. A missing archive on rank 0 likewise. No thread is left waiting. */
static void test_failure_on_one_rank(void) {
    const char *good = stream_archive("fail.0.ark", 50, 64);
    char path[200], bad[300];
    snprintf(path, sizeof path, "%s/fail.1.ark", dir);
    stream_archive("fail.1.ark", 51, 64);
    FILE *f = fopen(path, "r+");
    CHECK(f != NULL);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    CHECK(truncate(path, size * 2 / 3) == 0);
    snprintf(bad, sizeof bad, "ark:%s", path);
    const char *egs[2] = {good, bad};
    struct nnet *nets[2] = {make_net(0), make_net(0)};
    struct train_sync_options o;
    options(&o, TRAIN_SYNC_PARAMS, 1, 8);
    struct rank_job jobs[2];
    run_ranks(2, nets, egs, &o, jobs);
    CHECK(jobs[0].rc == -1 && jobs[1].rc == -1);
    CHECK(strstr(jobs[1].error, "rank 1: ") && strstr(jobs[1].error, "fail.1.ark"));
    CHECK(strstr(jobs[0].error, "rank 1 failed"));

    const char *egs2[2] = {"ark:/nonexistent/dir/egs.ark", good};
    run_ranks(2, nets, egs2, &o, jobs);
    CHECK(jobs[0].rc == -1 && jobs[1].rc == -1);
    CHECK(strstr(jobs[0].error, "/nonexistent/dir/egs.ark"));
    CHECK(strstr(jobs[1].error, "rank 0 failed"));
    nnet_free(nets[0]);
    nnet_free(nets[1]);
}

/* Ranks that start from different models are refused, on every rank. */
static void test_different_start_models(void) {
    const char *egs[2] = {stream_archive("start.0.ark", 60, 32),
                          stream_archive("start.1.ark", 61, 32)};
    struct nnet *nets[2] = {make_net(0), make_net(0)};
    struct vector p = nnet_params(nets[1]);
    vector_set(&p, 0, vector_get(&p, 0) + 1e-3f);
    struct train_sync_options o;
    options(&o, TRAIN_SYNC_PARAMS, 1, 8);
    o.check_sync = 0; /* the start check is always on */
    struct rank_job jobs[2];
    run_ranks(2, nets, egs, &o, jobs);
    CHECK(jobs[0].rc == -1 && jobs[1].rc == -1);
    CHECK(strstr(jobs[0].error, "differ at the start"));
    CHECK(jobs[0].st.local.num_minibatches == 0);
    nnet_free(nets[0]);
    nnet_free(nets[1]);
}

/* One rank: steps mode is nnet-train's loop (up to rounding: nnet-train adds a step it can
 * bound straight into the parameters, steps mode through the delta block). */
static void test_single_rank_is_sgd(void) {
    const char *egs[1] = {stream_archive("one.ark", 70, 64)};
    struct nnet *nets[1] = {make_net(0)};
    struct train_sync_options o;
    options(&o, TRAIN_SYNC_STEPS, 1, 16);
    struct rank_job jobs[1];
    run_ranks(1, nets, egs, &o, jobs);
    CHECK(jobs[0].rc == 0);
    struct nnet *single = make_net(0);
    struct train_options to;
    train_options_default(&to);
    to.minibatch_size = 16;
    to.progress_every = 0;
    struct train_stats ts;
    CHECK(train_sgd(single, egs[0], &to, &ts) == 0);
    int dim = nnet_num_params(single);
    float *a = params_copy(nets[0]), *s = params_copy(single);
    int same = 1;
    for (int i = 0; i < dim; i++)
        same &= fabsf(a[i] - s[i]) <= 1e-5f * (1 + fabsf(s[i]));
    free(a);
    free(s);
    nnet_free(nets[0]);
    nnet_free(single);
    CHECK(same);
}


/* ---- Parle and EASGD against the maths written out, replica by replica ---- */
enum { REPL = 2, NUM_MB = 7, MB = 16 };

/* make_unclipped() without any max-change (per component or global, whatever the defaults), so that
 * the written-out update needs no clipping. */
static struct nnet *make_unclipped(void) {
    struct nnet *n = make_net(0);
    for (int i = 0; i < nnet_num_components(n); i++) nnet_component(n, i)->max_change = 0;
    nnet_set_max_change(n, 0);
    return n;
}
struct replica_ref {
    struct nnet *net[REPL];
    struct minibatch_set set[REPL];
    int dim;
};

static void ref_open(struct replica_ref *f, const char **egs) {
    memset(f, 0, sizeof *f);
    for (int r = 0; r < REPL; r++) {
        f->net[r] = make_unclipped();
        ASSERT(minibatch_set_load(&f->set[r], egs[r], MB, 100000, f->net[r]) == 0);
        ASSERT(f->set[r].num == NUM_MB);
    }
    f->dim = nnet_num_params(f->net[0]);
}

static void ref_close(struct replica_ref *f) {
    for (int r = 0; r < REPL; r++) {
        minibatch_set_release(&f->set[r]);
        nnet_free(f->net[r]);
    }
}

/* The step of replica r on minibatch k at its current parameters (NNET_STEP: lr x gradient
 * here, every component's learning rate being 0.02), into s; returns the minibatch's weight. */
static double ref_step(struct replica_ref *f, int r, int k, double *s) {
    minibatch_set_forward(&f->set[r], k, f->net[r]);
    nnet_backward(f->net[r], &f->set[r].deriv, NNET_STEP);
    float *h = xmalloc(sizeof(float) * f->dim);
    struct vector d = nnet_delta(f->net[r]);
    vector_to_host(&d, h);
    for (int i = 0; i < f->dim; i++) s[i] = h[i];
    free(h);
    double w = 0;
    for (int i = 0; i < f->set[r].mbs[k].num_labels; i++) w += f->set[r].mbs[k].label_weight[i];
    return w;
}

static void ref_set(struct replica_ref *f, int r, const double *y) {
    float *h = xmalloc(sizeof(float) * f->dim);
    for (int i = 0; i < f->dim; i++) h[i] = (float)y[i];
    struct vector p = nnet_params(f->net[r]);
    vector_from_host(&p, h);
    free(h);
}

static double *dvec(int dim, const float *init) {
    double *v = xcalloc((size_t)dim, sizeof(double));
    if (init)
        for (int i = 0; i < dim; i++) v[i] = init[i];
    return v;
}

static void filter(double *v, double *s, int dim, double mu, int nesterov) {
    for (int i = 0; i < dim; i++) {
        v[i] = mu * v[i] + s[i];
        s[i] = (1 - mu) * (nesterov ? s[i] + mu * v[i] : v[i]);
    }
}

static void test_parle_matches_maths(void) {
    const double lr = 0.02, mu = 0.5, lambda = 0.01, alpha = 0.75, g0 = 0.05, g_max = 0.06,
                 rho0 = 0.01, nb = 2;
    const int L = 3;
    const char *egs[REPL];
    struct nnet *nets[REPL];
    for (int r = 0; r < REPL; r++) {
        char name[32];
        snprintf(name, sizeof name, "parle.%d.ark", r);
        egs[r] = stream_archive(name, 80 + (uint64_t)r, NUM_MB * MB);
        nets[r] = make_unclipped();
    }
    struct train_sync_options o;
    options(&o, TRAIN_SYNC_PARLE, 0, MB);
    o.train.momentum = (float)mu;
    o.train.nesterov = 1;
    o.train.weight_decay = (float)lambda;
    o.parle_inner_steps = L;
    o.parle_gamma = (float)g0;
    o.parle_gamma_max = (float)g_max;
    o.parle_rho = (float)rho0;
    o.parle_minibatches_per_epoch = (long long)nb;
    struct rank_job jobs[REPL];
    run_ranks(REPL, nets, egs, &o, jobs);
    for (int r = 0; r < REPL; r++) CHECK(jobs[r].rc == 0);
    /* 7 minibatches, L = 3: exchanges after 3, 6 and a last one after 7; two all-reduces each */
    CHECK(jobs[0].st.num_exchanges == 6 && jobs[0].st.total.outer_steps == 3);

    struct replica_ref f;
    ref_open(&f, egs);
    int dim = f.dim;
    float *init = params_copy(f.net[0]);
    double *y[REPL], *xa[REPL], *za[REPL], *vin[REPL], *vout[REPL], *xbar = dvec(dim, init);
    double *s = dvec(dim, NULL), wsum[REPL] = {0};
    for (int r = 0; r < REPL; r++) {
        y[r] = dvec(dim, init);
        xa[r] = dvec(dim, init);
        za[r] = dvec(dim, init);
        vin[r] = dvec(dim, NULL);
        vout[r] = dvec(dim, NULL);
    }
    long long t = 0;
    int count = 0;
    const long long tensors = 2 * nnet_num_updatable(f.net[0]); /* the reference's counter */
    for (int k = 0; k < NUM_MB; k++) {
        double scale = pow(1 + 0.5 / nb, (double)(t * tensors / L));
        double gamma = fmin(g_max, g0 * scale);
        for (int r = 0; r < REPL; r++) {
            double w = ref_step(&f, r, k, s);
            wsum[r] += w;
            for (int i = 0; i < dim; i++)
                s[i] += -lr * lambda * w * y[r][i] - gamma * lr * w * (y[r][i] - xa[r][i]);
            filter(vin[r], s, dim, mu, 1);
            for (int i = 0; i < dim; i++) {
                y[r][i] += s[i];
                za[r][i] = alpha * za[r][i] + (1 - alpha) * y[r][i];
            }
            ref_set(&f, r, y[r]);
        }
        t++;
        if (++count == L || k == NUM_MB - 1) {
            scale = pow(1 + 0.5 / nb, (double)(t * tensors / L));
            double rho = fmin(10, rho0 * L * REPL * scale);
            for (int i = 0; i < dim; i++) xbar[i] = (za[0][i] + za[1][i]) / 2;
            for (int r = 0; r < REPL; r++) {
                double w = wsum[r] / count;
                for (int i = 0; i < dim; i++)
                    s[i] = -lr * w * ((xa[r][i] - za[r][i]) + rho * (xa[r][i] - xbar[i]));
                filter(vout[r], s, dim, mu, 1);
                for (int i = 0; i < dim; i++) {
                    y[r][i] += s[i];
                    xa[r][i] = y[r][i];
                }
                ref_set(&f, r, y[r]);
                wsum[r] = 0;
            }
            for (int i = 0; i < dim; i++) xbar[i] = (xa[0][i] + xa[1][i]) / 2;
            count = 0;
        }
    }
    CHECK(jobs[0].st.parle_steps == t);
    CHECK_NEAR(jobs[0].st.parle_gamma, fmin(g_max, g0 * pow(1.25, (double)(t * tensors / L))), 1e-6);
    float *got = params_copy(nets[0]), *got1 = params_copy(nets[1]);
    double max_diff = 0, moved = 0;
    for (int i = 0; i < dim; i++) {
        max_diff = fmax(max_diff, fabs(got[i] - xbar[i]) / (1 + fabs(xbar[i])));
        moved += fabs(xbar[i] - init[i]);
    }
    int same = !memcmp(got, got1, sizeof(float) * dim);
    free(got);
    free(got1);
    free(init);
    free(xbar);
    free(s);
    for (int r = 0; r < REPL; r++) {
        free(y[r]);
        free(xa[r]);
        free(za[r]);
        free(vin[r]);
        free(vout[r]);
        nnet_free(nets[r]);
    }
    ref_close(&f);
    CHECK(same);
    CHECK(moved > 0.1);
    CHECK(max_diff < 2e-5);
}

static void test_elastic_matches_maths(void) {
    const double mu = 0.5, alpha = 0.3;
    const int tau = 2;
    const char *egs[REPL];
    struct nnet *nets[REPL];
    for (int r = 0; r < REPL; r++) {
        char name[32];
        snprintf(name, sizeof name, "elastic.%d.ark", r);
        egs[r] = stream_archive(name, 90 + (uint64_t)r, NUM_MB * MB);
        nets[r] = make_unclipped();
    }
    struct train_sync_options o;
    options(&o, TRAIN_SYNC_ELASTIC, tau, MB);
    o.train.momentum = (float)mu;
    o.elastic_alpha = (float)alpha;
    struct rank_job jobs[REPL];
    run_ranks(REPL, nets, egs, &o, jobs);
    for (int r = 0; r < REPL; r++) CHECK(jobs[r].rc == 0);
    CHECK(jobs[0].st.num_exchanges == 4); /* after 2, 4, 6 and the last after 7 */

    struct replica_ref f;
    ref_open(&f, egs);
    int dim = f.dim;
    float *init = params_copy(f.net[0]);
    double *y[REPL], *v[REPL], *c = dvec(dim, init), *s = dvec(dim, NULL);
    double *delta[REPL];
    for (int r = 0; r < REPL; r++) {
        y[r] = dvec(dim, init);
        v[r] = dvec(dim, NULL);
        delta[r] = dvec(dim, NULL);
    }
    int count = 0;
    for (int k = 0; k < NUM_MB; k++) {
        for (int r = 0; r < REPL; r++) {
            ref_step(&f, r, k, s);
            filter(v[r], s, dim, mu, 0);
            for (int i = 0; i < dim; i++) y[r][i] += s[i];
            ref_set(&f, r, y[r]);
        }
        if (++count == tau || k == NUM_MB - 1) {
            for (int r = 0; r < REPL; r++) {
                for (int i = 0; i < dim; i++) {
                    delta[r][i] = alpha * (y[r][i] - c[i]);
                    y[r][i] -= delta[r][i];
                }
                ref_set(&f, r, y[r]);
            }
            for (int i = 0; i < dim; i++) c[i] += delta[0][i] + delta[1][i];
            count = 0;
        }
    }
    float *got = params_copy(nets[0]);
    double max_diff = 0, moved = 0;
    for (int i = 0; i < dim; i++) {
        max_diff = fmax(max_diff, fabs(got[i] - c[i]) / (1 + fabs(c[i])));
        moved += fabs(c[i] - init[i]);
    }
    free(got);
    free(init);
    free(c);
    free(s);
    for (int r = 0; r < REPL; r++) {
        free(y[r]);
        free(v[r]);
        free(delta[r]);
        nnet_free(nets[r]);
    }
    ref_close(&f);
    CHECK(moved > 0.1);
    CHECK(max_diff < 2e-5);
}

/* Steps mode with momentum: the ranks' velocities stay identical (check_sync), and on one rank
 * it is train_sgd with the same momentum and decay. */
static void test_steps_momentum_single_rank(void) {
    const char *egs[1] = {stream_archive("mom1.ark", 71, 64)};
    struct nnet *nets[1] = {make_unclipped()};
    struct train_sync_options o;
    options(&o, TRAIN_SYNC_STEPS, 1, 16);
    o.train.momentum = 0.8f;
    o.train.weight_decay = 0.02f;
    struct rank_job jobs[1];
    run_ranks(1, nets, egs, &o, jobs);
    CHECK(jobs[0].rc == 0);
    struct nnet *single = make_unclipped();
    struct train_options to = o.train;
    struct train_stats ts;
    CHECK(train_sgd(single, egs[0], &to, &ts) == 0);
    int dim = nnet_num_params(single);
    float *a = params_copy(nets[0]), *b = params_copy(single);
    double max_diff = 0;
    for (int i = 0; i < dim; i++) max_diff = fmax(max_diff, fabs(a[i] - b[i]) / (1 + fabs(b[i])));
    free(a);
    free(b);
    nnet_free(nets[0]);
    nnet_free(single);
    CHECK(max_diff < 1e-5);
}

/* Parle and EASGD over two passes joined by the state files compute what one pass over the
 * same minibatches does (the split falls on an exchange). */
static void test_state_split_equals_one_pass(void) {
    for (int mode = TRAIN_SYNC_ELASTIC; mode <= TRAIN_SYNC_PARLE; mode++) {
        const char *full[REPL], *first[REPL], *second[REPL];
        int idx[9 * MB];
        uint64_t seeds[9 * MB];
        for (int r = 0; r < REPL; r++) {
            char name[48];
            for (int k = 0; k < 9 * MB; k++) {
                idx[k] = k;
                seeds[k] = 120 + (uint64_t)r;
            }
            snprintf(name, sizeof name, "split.%d.%d.full.ark", mode, r);
            full[r] = write_archive(name, 9 * MB, seeds, idx);
            snprintf(name, sizeof name, "split.%d.%d.a.ark", mode, r);
            first[r] = write_archive(name, 6 * MB, seeds, idx);
            snprintf(name, sizeof name, "split.%d.%d.b.ark", mode, r);
            second[r] = write_archive(name, 3 * MB, seeds + 6 * MB, idx + 6 * MB);
        }
        struct train_sync_options o;
        options(&o, (enum train_sync_mode)mode, 3, MB);
        o.train.momentum = 0.6f;
        o.train.nesterov = 1;
        o.parle_inner_steps = 3;
        o.parle_minibatches_per_epoch = 2;
        struct nnet *one[REPL], *two[REPL];
        struct rank_job jobs[REPL];
        for (int r = 0; r < REPL; r++) one[r] = make_unclipped();
        run_ranks(REPL, one, full, &o, jobs);
        for (int r = 0; r < REPL; r++) CHECK(jobs[r].rc == 0);
        /* pass 1 writes each rank's state; pass 2 starts from rank 0's model and the states.
         * Each rank gets its own options (its own file names), as nnet-train-mpi's JOB. */
        char state[REPL][300];
        for (int r = 0; r < REPL; r++) {
            two[r] = make_unclipped();
            snprintf(state[r], sizeof state[r], "%s/state.%d.%d", dir, mode, r);
        }
        struct train_sync_options per[REPL];
        struct thread_group g = {.size = REPL};
        pthread_barrier_init(&g.barrier, NULL, REPL);
        for (int pass = 0; pass < 2; pass++) {
            pthread_t th[REPL];
            for (int r = 0; r < REPL; r++) {
                per[r] = o;
                per[r].state_rxfilename = pass ? state[r] : NULL;
                per[r].state_wxfilename = pass ? NULL : state[r];
                jobs[r] = (struct rank_job){.n = two[r], .egs = pass ? second[r] : first[r],
                                            .o = &per[r]};
                jobs[r].tc = (struct thread_comm){.g = &g, .rank = r};
                jobs[r].comm = (struct train_comm){
                    .rank = r, .size = REPL, .ctx = &jobs[r].tc, .allreduce = thread_allreduce};
            }
            for (int r = 0; r < REPL; r++)
                ASSERT(pthread_create(&th[r], NULL, rank_main, &jobs[r]) == 0);
            for (int r = 0; r < REPL; r++) pthread_join(th[r], NULL);
            for (int r = 0; r < REPL; r++) CHECK(jobs[r].rc == 0);
        }
        pthread_barrier_destroy(&g.barrier);
        if (mode == TRAIN_SYNC_PARLE) CHECK(jobs[0].st.parle_steps == 9);
        int dim = nnet_num_params(one[0]);
        float *a = params_copy(one[0]), *b = params_copy(two[0]);
        double max_diff = 0;
        for (int i = 0; i < dim; i++)
            max_diff = fmax(max_diff, fabs(a[i] - b[i]) / (1 + fabs(a[i])));
        free(a);
        free(b);
        for (int r = 0; r < REPL; r++) {
            nnet_free(one[r]);
            nnet_free(two[r]);
        }
        CHECK(max_diff < 1e-6);
        /* a state of another mode is refused, on every rank */
        struct nnet *three[REPL];
        for (int r = 0; r < REPL; r++) {
            three[r] = make_unclipped();
            per[r] = o;
            per[r].mode = TRAIN_SYNC_PARAMS;
            per[r].state_rxfilename = state[r];
        }
        const char *egs2[REPL] = {second[0], second[1]};
        run_ranks(REPL, three, egs2, &per[0], jobs);
        for (int r = 0; r < REPL; r++) {
            CHECK(jobs[r].rc == -1);
            CHECK(strstr(jobs[r].error, "state") != NULL);
            nnet_free(three[r]);
        }
    }
}

/* ---- params mode after the paper: block momentum, post-local SGD, hierarchical ---- */

static double max_rel_diff(struct nnet *a, struct nnet *b) {
    int dim = nnet_num_params(a);
    float *x = params_copy(a), *y = params_copy(b);
    double d = 0;
    for (int i = 0; i < dim; i++) d = fmax(d, fabs(x[i] - y[i]) / (1 + fabs(x[i])));
    free(x);
    free(y);
    return d;
}

/* BMUF: (1) one pass of 2 blocks (--average-every 2) equals two passes of one block each with
 * the state file in between (resumption); (2) each block is the rule (bmuf_update, written out
 * here) applied to the plain average that params mode computes from the same start. */
static void test_bmuf_blocks(void) {
    const char *full[2], *half[2][2];
    for (int r = 0; r < 2; r++) {
        uint64_t seeds[4 * MB];
        int idx[4 * MB];
        for (int k = 0; k < 4 * MB; k++) seeds[k] = 140 + (uint64_t)r, idx[k] = k;
        char name[48];
        snprintf(name, sizeof name, "bmuf.%d.ark", r);
        full[r] = write_archive(name, 4 * MB, seeds, idx);
        for (int h = 0; h < 2; h++) {
            snprintf(name, sizeof name, "bmuf.%d.%d.ark", r, h);
            half[h][r] = write_archive(name, 2 * MB, seeds + 2 * h * MB, idx + 2 * h * MB);
        }
    }
    struct train_sync_options o;
    options(&o, TRAIN_SYNC_PARAMS, 2, MB);
    o.bmuf = (struct bmuf_options){.on = 1, .momentum = 0.5f, .learning_rate = 0.9f,
                                   .nesterov = 1};
    struct rank_job jobs[2];
    struct nnet *one[2] = {make_unclipped(), make_unclipped()};
    run_ranks(2, one, full, &o, jobs);
    CHECK(jobs[0].rc == 0 && jobs[1].rc == 0 && jobs[0].st.num_exchanges == 2);
    /* two passes, K = 0, the state between them; and the reference beside them */
    char state[2][300];
    struct nnet *two[2] = {make_unclipped(), make_unclipped()}, *ref = make_unclipped();
    struct vector s = nnet_params(ref), m;
    vector_init(&m, s.dim);
    for (int h = 0; h < 2; h++) {
        struct nnet *plain[2] = {nnet_copy(ref), nnet_copy(ref)};
        struct train_sync_options po;
        options(&po, TRAIN_SYNC_PARAMS, 0, MB);
        run_ranks(2, plain, half[h], &po, jobs);
        struct vector a = nnet_params(plain[0]);
        bmuf_update(&s, &m, &a, 0.5f, 0.9f, 1);
        nnet_free(plain[0]);
        nnet_free(plain[1]);

        struct train_sync_options bo = o;
        bo.average_every = 0;
        snprintf(state[h], sizeof state[h], "%s/bmuf.state.%d", dir, h);
        bo.bmuf_state_rxfilename = h ? state[0] : NULL;
        bo.bmuf_state_wxfilename = state[h];
        run_ranks(2, two, half[h], &bo, jobs);
        CHECK(jobs[0].rc == 0 && jobs[1].rc == 0);
        CHECK(max_rel_diff(two[0], ref) < 1e-6); /* the rule on the plain average */
    }
    CHECK(max_rel_diff(one[0], two[0]) < 1e-6); /* resumption = one pass */
    CHECK(max_rel_diff(one[0], two[1]) == 0);
    struct vector v;
    vector_init(&v, s.dim);
    CHECK(bmuf_state_read(state[1], &v, 2, 1) == 0);
    double vd = 0;
    for (int i = 0; i < s.dim; i++) vd = fmax(vd, fabs(vector_get(&v, i) - vector_get(&m, i)));
    CHECK(vd < 1e-6);
    /* a state of 2 ranks on 4 ranks: refused on every rank before training */
    struct nnet *four[4];
    const char *egs4[4] = {half[0][0], half[0][1], half[0][0], half[0][1]};
    for (int r = 0; r < 4; r++) four[r] = make_unclipped();
    struct train_sync_options fo = o;
    fo.bmuf_state_rxfilename = state[1];
    struct rank_job jobs4[4];
    run_ranks(4, four, egs4, &fo, jobs4);
    for (int r = 0; r < 4; r++) {
        CHECK(jobs4[r].rc == -1 && jobs4[r].st.local.num_minibatches == 0);
        nnet_free(four[r]);
    }
    CHECK(strstr(jobs4[0].error, "<NumJobs> 2, this run has 4") != NULL);
    vector_release(&v);
    vector_release(&m);
    for (int r = 0; r < 2; r++) nnet_free(one[r]), nnet_free(two[r]);
    nnet_free(ref);
}

/* Post-local SGD: a warm-up over the whole pass is synchronous SGD on the mean step, which for
 * plain SGD without clipping is params mode averaging after every minibatch; the counter runs
 * across passes (--minibatch-offset). */
static void test_post_local(void) {
    const char *egs[2] = {stream_archive("post.0.ark", 150, 4 * MB),
                          stream_archive("post.1.ark", 151, 4 * MB)};
    struct train_sync_options o;
    options(&o, TRAIN_SYNC_PARAMS, 0, MB);
    o.warmup_steps = 100;
    struct nnet *a[2] = {make_unclipped(), make_unclipped()};
    struct nnet *b[2] = {make_unclipped(), make_unclipped()};
    struct rank_job jobs[2];
    run_ranks(2, a, egs, &o, jobs);
    CHECK(jobs[0].rc == 0 && jobs[0].st.num_warmup_steps == 4 && jobs[0].st.num_exchanges == 4);
    struct train_sync_options k1;
    options(&k1, TRAIN_SYNC_PARAMS, 1, MB);
    run_ranks(2, b, egs, &k1, jobs);
    CHECK(max_rel_diff(a[0], b[0]) < 1e-6);
    /* 3 of the 4 minibatches already warmed up in earlier passes: 1 synchronous, 3 local */
    struct nnet *c[2] = {make_unclipped(), make_unclipped()};
    o.warmup_steps = 4;
    o.minibatch_offset = 3;
    run_ranks(2, c, egs, &o, jobs);
    CHECK(jobs[0].st.num_warmup_steps == 1 && jobs[0].st.num_exchanges == 2);
    for (int r = 0; r < 2; r++) nnet_free(a[r]), nnet_free(b[r]), nnet_free(c[r]);
}

/* Hierarchical: 4 ranks in groups of 2 averaging every minibatch, everyone only at the end, is
 * the mean of two independent 2-rank runs that average every minibatch. A group size that does
 * not divide the ranks fails on every rank. */
static void test_hierarchical(void) {
    const char *egs[4];
    struct nnet *h[4], *ref[4];
    for (int r = 0; r < 4; r++) {
        char name[32];
        snprintf(name, sizeof name, "hier.%d.ark", r);
        egs[r] = stream_archive(name, 160 + (uint64_t)r, 3 * MB);
        h[r] = make_unclipped();
        ref[r] = make_unclipped();
    }
    struct train_sync_options o;
    options(&o, TRAIN_SYNC_PARAMS, 0, MB);
    o.group_size = 2;
    o.group_average_every = 1;
    struct rank_job jobs[4];
    run_ranks_grouped(4, 2, h, egs, &o, jobs);
    for (int r = 0; r < 4; r++) CHECK(jobs[r].rc == 0 && jobs[r].st.num_group_averages == 3);
    struct train_sync_options k1;
    options(&k1, TRAIN_SYNC_PARAMS, 1, MB);
    run_ranks(2, ref, egs, &k1, jobs);
    run_ranks(2, ref + 2, egs + 2, &k1, jobs);
    struct vector p0 = nnet_params(ref[0]), p2 = nnet_params(ref[2]);
    vector_scale(&p0, 0.5f);
    vector_add(&p0, 0.5f, &p2);
    CHECK(max_rel_diff(h[0], ref[0]) < 1e-6);
    CHECK(max_rel_diff(h[0], ref[2]) > 1e-4); /* the groups differed before the last average */
    struct rank_job jobs3[3];
    run_ranks_grouped(3, 2, h, egs, &o, jobs3);
    for (int r = 0; r < 3; r++)
        CHECK(jobs3[r].rc == -1 && strstr(jobs3[r].error, "must divide the 3 ranks"));
    for (int r = 0; r < 4; r++) nnet_free(h[r]), nnet_free(ref[r]);
}

int main(void) {
    log_set_program("train-sync-test");
    matrix_set_num_threads(1);
    if (test_tmpdir(dir, sizeof dir, "train-sync-test")) return 1;
    make_means();
    TEST_RUN(test_params_identical);
    TEST_RUN(test_average_is_mean);
    TEST_RUN(test_steps_equal_big_minibatch);
    TEST_RUN(test_uneven_stop_together);
    TEST_RUN(test_failure_on_one_rank);
    TEST_RUN(test_different_start_models);
    TEST_RUN(test_single_rank_is_sgd);
    TEST_RUN(test_parle_matches_maths);
    TEST_RUN(test_elastic_matches_maths);
    TEST_RUN(test_steps_momentum_single_rank);
    TEST_RUN(test_state_split_equals_one_pass);
    TEST_RUN(test_bmuf_blocks);
    TEST_RUN(test_post_local);
    TEST_RUN(test_hierarchical);
    test_tmpdir_remove(dir);
    TEST_MAIN_END();
}
