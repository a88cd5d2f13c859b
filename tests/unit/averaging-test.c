/* Unit tests of the update rules beyond plain averaging, on tiny cases checkable by hand: GAF's
 * distance, fusion and skip; applying a given gradient or step (learning rate, max-change,
 * non-finite skip); job-level agreement; the elastic centre; the proximal pull and the EMA; the
 * HWA window average; TWA's Gram-Schmidt basis and projection. */
#include "models/models.h"
#include "update/update.h"
#include "train/train.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct vector vec(int dim, const float *v) {
    struct vector x;
    vector_init(&x, dim);
    vector_from_host(&x, v);
    return x;
}

#define VEC(...) vec(sizeof((float[]){__VA_ARGS__}) / sizeof(float), (float[]){__VA_ARGS__})

/* A network with 2 parameters: Affine 1 -> 1 (w, b), set to (w, b). */
static struct nnet *tiny_net(float w, float b, float max_change) {
    char cfg[128];
    snprintf(cfg, sizeof cfg,
             "AffineComponent input-dim=1 output-dim=1 learning-rate=0.5 "
             "max-change=%g\n",
             max_change);
    struct nnet *n = nnet_init_from_config_text(cfg, 1);
    struct vector p = nnet_params(n);
    vector_set(&p, 0, w);
    vector_set(&p, 1, b);
    return n;
}

static char tmpdir[64];

static const char *tiny_file(const char *name, float w, float b) {
    static char path[8][128];
    static int next;
    char *f = path[next++ % 8];
    snprintf(f, 128, "%s/%s", tmpdir, name);
    struct nnet *n = tiny_net(w, b, 0);
    int rc = nnet_write_file(n, f, 1);
    nnet_free(n);
    return rc ? NULL : f;
}

/* ---- GAF ---- */

static void test_cosine_distance(void) {
    struct vector a = VEC(1, 0), b = VEC(0, 1), c = VEC(-2, 0), z = VEC(0, 0), d = VEC(3, 0);
    CHECK_NEAR(gaf_cosine_distance(&a, &b), 1, 1e-12);
    CHECK_NEAR(gaf_cosine_distance(&a, &d), 0, 1e-12);
    CHECK_NEAR(gaf_cosine_distance(&a, &c), 2, 1e-12);
    CHECK_NEAR(gaf_cosine_distance(&a, &z), 1, 1e-12); /* zero: treated as orthogonal */
    vector_set(&d, 1, NAN);
    CHECK(isnan(gaf_cosine_distance(&a, &d)));
    vector_release(&a), vector_release(&b), vector_release(&c), vector_release(&z);
    vector_release(&d);
}

static void test_gaf_halving(void) {
    struct gaf g;
    gaf_init(&g, 2, 0.97f, GAF_FUSION_HALVING);
    gaf_begin(&g);
    struct vector g1 = VEC(1, 0), g2 = VEC(1, 1), g3 = VEC(-1, 0), g4 = VEC(0, 1);
    double d;
    CHECK(gaf_offer(&g, &g1, &d) == 1);
    CHECK_NEAR(d, 0, 0);
    CHECK(gaf_offer(&g, &g2, &d) == 1); /* cos 0.7071: D = 0.2929 */
    CHECK_NEAR(d, 1 - 1 / sqrt(2), 1e-6);
    CHECK_NEAR(vector_get(&g.fused, 0), 1, 1e-7); /* (g1 + g2) / 2 */
    CHECK_NEAR(vector_get(&g.fused, 1), 0.5, 1e-7);
    CHECK(gaf_offer(&g, &g3, &d) == 0); /* opposite: D = 1.894 */
    CHECK_NEAR(d, 1 + 1 / sqrt(1.25), 1e-6);
    CHECK_NEAR(vector_get(&g.fused, 0), 1, 1e-7); /* unchanged */
    CHECK(gaf_offer(&g, &g4, &d) == 1);           /* cos([1,.5],[0,1]) = 0.4472 */
    CHECK_NEAR(d, 1 - 0.5 / sqrt(1.25), 1e-6);
    CHECK_NEAR(vector_get(&g.fused, 0), 0.5, 1e-7); /* ([1,.5] + [0,1]) / 2 */
    CHECK_NEAR(vector_get(&g.fused, 1), 0.75, 1e-7);
    CHECK(g.num_offered == 4 && g.num_accepted == 3);
    gaf_release(&g);
    vector_release(&g1), vector_release(&g2), vector_release(&g3), vector_release(&g4);
}

static void test_gaf_mean(void) {
    struct gaf g;
    gaf_init(&g, 2, 0.97f, GAF_FUSION_MEAN);
    gaf_begin(&g);
    struct vector g1 = VEC(1, 0), g2 = VEC(1, 1), g3 = VEC(-1, 0), g4 = VEC(0, 1);
    gaf_offer(&g, &g1, NULL);
    gaf_offer(&g, &g2, NULL);
    CHECK(gaf_offer(&g, &g3, NULL) == 0);
    CHECK(gaf_offer(&g, &g4, NULL) == 1);
    CHECK_NEAR(vector_get(&g.fused, 0), 2.0 / 3, 1e-6); /* mean of g1, g2, g4 */
    CHECK_NEAR(vector_get(&g.fused, 1), 2.0 / 3, 1e-6);
    CHECK(g.num_accepted == 3);
    gaf_release(&g);
    vector_release(&g1), vector_release(&g2), vector_release(&g3), vector_release(&g4);
}

/* The first microgradient is the anchor: a rejected one does not move the comparison point; a
 * step where nothing agrees has num_accepted 1 (skipped by the trainer); tau >= 2 takes all. */
static void test_gaf_anchor_skip_and_tau2(void) {
    struct gaf g;
    gaf_init(&g, 2, 0.97f, GAF_FUSION_HALVING);
    struct vector e1 = VEC(1, 0), e2 = VEC(0, 1), d11 = VEC(1, 1), opp = VEC(-1, 0.1f);
    gaf_begin(&g);
    gaf_offer(&g, &e1, NULL);
    CHECK(gaf_offer(&g, &e2, NULL) == 0);  /* D = 1 > 0.97 */
    CHECK(gaf_offer(&g, &d11, NULL) == 1); /* compared with e1 */
    CHECK(g.num_accepted == 2);
    gaf_begin(&g);
    gaf_offer(&g, &e1, NULL);
    CHECK(gaf_offer(&g, &opp, NULL) == 0);
    CHECK(g.num_accepted == 1 && g.num_offered == 2);
    gaf_release(&g);
    gaf_init(&g, 2, 2.0f, GAF_FUSION_MEAN);
    gaf_begin(&g);
    gaf_offer(&g, &e1, NULL);
    CHECK(gaf_offer(&g, &opp, NULL) == 1);
    CHECK_NEAR(vector_get(&g.fused, 0), 0, 1e-7);
    CHECK_NEAR(vector_get(&g.fused, 1), 0.05, 1e-7);
    gaf_release(&g);
    vector_release(&e1), vector_release(&e2), vector_release(&d11), vector_release(&opp);
}

/* nnet_apply_gradient: step = scale * lr * grad, clipped to max-change, skipped if not finite. */
static void test_apply_gradient(void) {
    struct nnet *n = tiny_net(1, 0, 0);
    struct vector g = VEC(2, 4);
    CHECK(nnet_apply_gradient(n, &g, 2) == 0); /* 2 * 0.5 * [2, 4] = [2, 4] */
    struct vector p = nnet_params(n);
    CHECK_NEAR(vector_get(&p, 0), 3, 1e-7);
    CHECK_NEAR(vector_get(&p, 1), 4, 1e-7);
    CHECK_NEAR(vector_get(&g, 0), 2, 0); /* the given gradient is left alone */
    nnet_free(n);

    n = tiny_net(1, 0, 1); /* component max-change 1: the step [2, 4] becomes [2, 4] / sqrt(20) */
    CHECK(nnet_apply_gradient(n, &g, 2) == 0);
    p = nnet_params(n);
    CHECK_NEAR(vector_get(&p, 0), 1 + 2 / sqrt(20), 1e-6);
    CHECK_NEAR(vector_get(&p, 1), 4 / sqrt(20), 1e-6);
    struct vector s = VEC(0.3f, -0.4f); /* norm 0.5 <= 1: applied as is */
    CHECK(nnet_apply_step(n, &s) == 0);
    CHECK_NEAR(vector_get(&p, 0), 1.3 + 2 / sqrt(20), 1e-6);
    CHECK_NEAR(vector_get(&p, 1), 4 / sqrt(20) - 0.4, 1e-6);
    vector_set(&s, 0, INFINITY);
    CHECK(nnet_apply_step(n, &s) == 1); /* skipped, parameters untouched */
    CHECK_NEAR(vector_get(&p, 0), 1.3 + 2 / sqrt(20), 1e-6);
    nnet_free(n);
    vector_release(&g), vector_release(&s);
}

/* NNET_STEP computes the step NNET_UPDATE would take without applying it; nnet_apply_step then
 * takes it (so fusing steps keeps NG-SGD's preconditioning). */
static void test_step_mode(void) {
    const char *cfg = "NaturalGradientAffineComponent input-dim=3 output-dim=2 learning-rate=0.1\n"
                      "SoftmaxComponent dim=2\n";
    struct nnet *a = nnet_init_from_config_text(cfg, 7), *b = nnet_copy(a);
    struct matrix x, d = {0};
    matrix_init(&x, 4, 3);
    struct rng r;
    rng_seed(&r, 3);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            matrix_set(&x, i, j, rng_gauss(&r));
    int rows[4] = {0, 1, 2, 3}, cols[4] = {0, 1, 1, 0};
    struct vector pa = nnet_params(a), pb = nnet_params(b), before;
    vector_init(&before, pa.dim);
    vector_copy(&before, &pa);
    nnet_forward(a, &x, 4, 1);
    nnet_objective_xent(a, 4, rows, cols, NULL, &d);
    CHECK(nnet_backward(a, &d, NNET_STEP) == 0);
    for (int i = 0; i < pa.dim; i++)
        CHECK(vector_get(&pa, i) == vector_get(&before, i));
    struct vector step = nnet_delta(a);
    CHECK(vector_norm2(&step) > 0);
    CHECK(nnet_apply_step(a, &step) == 0);
    nnet_forward(b, &x, 4, 1);
    nnet_objective_xent(b, 4, rows, cols, NULL, &d);
    CHECK(nnet_backward(b, &d, NNET_UPDATE) == 0);
    for (int i = 0; i < pa.dim; i++)
        CHECK_NEAR(vector_get(&pa, i), vector_get(&pb, i), 1e-6);
    matrix_release(&x), matrix_release(&d), vector_release(&before);
    nnet_free(a), nnet_free(b);
}

/* ---- job-level agreement ---- */

static void test_agreement_select(void) {
    struct vector ch[3] = {VEC(1, 0), VEC(1, 0.2f), VEC(-1, 0.3f)};
    int keep[3];
    double dist[3];
    /* consensus c = (1/3, 0.5/3); job 3 points away from it */
    CHECK(average_agreement_select(ch, 3, NULL, 1.0f, keep, dist) == 2);
    CHECK(keep[0] && keep[1] && !keep[2]);
    CHECK_NEAR(dist[0], 1 - 1 / sqrt(1.25), 1e-6);                /* 0.1056 */
    CHECK_NEAR(dist[1], 1 - 1.1 / sqrt(1.04 * 1.25), 1e-6);       /* 0.0352 */
    CHECK_NEAR(dist[2], 1 + 0.85 / sqrt(1.09 * 1.25), 1e-6);      /* 1.7282 */
    CHECK(average_agreement_select(ch, 3, NULL, 0.05f, keep, dist) == 1); /* only job 2 */
    CHECK(keep[1]);
    CHECK(average_agreement_select(ch, 3, NULL, 0.001f, keep, dist) == 0);
    float w[3] = {1, 1, 0}; /* weight 0: never kept, not in the consensus */
    CHECK(average_agreement_select(ch, 3, w, 2.0f, keep, dist) == 2);
    CHECK(!keep[2]);
    for (int j = 0; j < 3; j++)
        vector_release(&ch[j]);
}

static void test_agreement_files(void) {
    const char *prev = tiny_file("prev.mdl", 0, 0);
    const char *jobs[3] = {tiny_file("j1.mdl", 1, 0), tiny_file("j2.mdl", 1, 0.2f),
                           tiny_file("j3.mdl", -1, 0.3f)};
    CHECK(prev && jobs[0] && jobs[1] && jobs[2]);
    int kept = -1;
    struct nnet *avg = average_model_files_agreement(jobs, 3, NULL, prev, 1.0f, &kept);
    CHECK(avg && kept == 2);
    struct vector p = nnet_params(avg);
    CHECK_NEAR(vector_get(&p, 0), 1, 1e-6); /* mean of jobs 1 and 2 */
    CHECK_NEAR(vector_get(&p, 1), 0.1, 1e-6);
    nnet_free(avg);
    avg = average_model_files_agreement(jobs, 3, NULL, prev, 0.001f, &kept);
    CHECK(avg && kept == 0); /* nobody agrees: the previous model */
    p = nnet_params(avg);
    CHECK(vector_get(&p, 0) == 0 && vector_get(&p, 1) == 0);
    nnet_free(avg);
    avg = average_model_files_agreement(jobs, 3, NULL, prev, 2.0f, &kept);
    CHECK(avg && kept == 3); /* tau 2: the plain average */
    p = nnet_params(avg);
    CHECK_NEAR(vector_get(&p, 0), 1.0 / 3, 1e-6);
    CHECK_NEAR(vector_get(&p, 1), 0.5 / 3, 1e-6);
    nnet_free(avg);
}

/* ---- EASGD, Parle, Entropy-SGD ---- */

static void test_elastic_center(void) {
    const char *c = tiny_file("c.mdl", 0, 0);
    const char *m[2] = {tiny_file("m1.mdl", 1, 2), tiny_file("m2.mdl", 3, 4)};
    struct nnet *out = average_elastic_center_files(c, m, 2, 0.25f); /* 0 + 0.25 ([1,2] + [3,4]) */
    CHECK(out);
    struct vector p = nnet_params(out);
    CHECK_NEAR(vector_get(&p, 0), 1, 1e-6);
    CHECK_NEAR(vector_get(&p, 1), 1.5, 1e-6);
    nnet_free(out);
    const char *c2 = tiny_file("c2.mdl", 10, -10);
    out = average_elastic_center_files(c2, m, 2, 0.5f); /* alpha = 1/N: the plain mean */
    p = nnet_params(out);
    CHECK_NEAR(vector_get(&p, 0), 2, 1e-6);
    CHECK_NEAR(vector_get(&p, 1), 3, 1e-6);
    nnet_free(out);
    /* 10 + 0.1 (1-10 + 3-10), -10 + 0.1 (12 + 14) */
    out = average_elastic_center_files(c2, m, 2, 0.1f);
    p = nnet_params(out);
    CHECK_NEAR(vector_get(&p, 0), 8.4, 1e-5);
    CHECK_NEAR(vector_get(&p, 1), -7.4, 1e-5);
    nnet_free(out);
}

/* ---- block momentum (update.h) ---- */

/* Two blocks of the rule on 2 parameters from S0 = 0, m0 = 0; the jobs' average is A1 = [2, 4],
 * then A2 = S1 + [1, 1]. Hand-computed:
 *   classic eta .5 zeta 1:  m1 = [2,4], S1 = [2,4];  m2 = .5 m1 + [1,1] = [2,3], S2 = [4,7]
 *   Nesterov eta .5 zeta 1: m1 = [2,4], W1 = [2,4], S1 = W1 + .5 m1 = [3,6];
 *                           m2 = [2,3], W2 = [4,7], S2 = W2 + .5 m2 = [5,8.5]
 *   classic eta .5 zeta .5: m1 = [1,2], S1 = [1,2];  m2 = [.5,1] + [.5,.5], S2 = [2,3.5] */
static void bmuf_two_blocks(float eta, float zeta, int nesterov, float s0, float s1) {
    struct vector s = VEC(0, 0), m = VEC(0, 0), a = VEC(2, 4);
    bmuf_update(&s, &m, &a, eta, zeta, nesterov);
    vector_copy(&a, &s);
    struct vector one = VEC(1, 1);
    vector_add(&a, 1, &one);
    bmuf_update(&s, &m, &a, eta, zeta, nesterov);
    CHECK_NEAR(vector_get(&s, 0), s0, 1e-6);
    CHECK_NEAR(vector_get(&s, 1), s1, 1e-6);
    vector_release(&s), vector_release(&m), vector_release(&a), vector_release(&one);
}

static void test_bmuf_rule(void) {
    bmuf_two_blocks(0.5f, 1, 0, 4, 7);
    bmuf_two_blocks(0.5f, 1, 1, 5, 8.5f);
    bmuf_two_blocks(0.5f, 0.5f, 0, 2, 3.5f);
    bmuf_two_blocks(0, 1, 1, 3, 5); /* eta 0, zeta 1: plain averaging, S = A */
    struct bmuf_options o = {.on = 1, .momentum = -1, .learning_rate = 1, .nesterov = 1};
    CHECK_NEAR(bmuf_resolve_momentum(&o, 8), 0.875, 1e-7);
    o.momentum = 0.3f;
    CHECK_NEAR(bmuf_resolve_momentum(&o, 8), 0.3, 1e-7);
}

/* DiLoCo's outer Nesterov SGD (PyTorch form) on the pseudo-gradient, simulated directly, gives
 * the models of the rule with eta = mu, zeta = lr, Nesterov (update.h's derivation). */
static void test_bmuf_is_diloco(void) {
    const double lr = 0.7, mu = 0.9, inner[4][2] = {{1, -2}, {0.5, 3}, {-1, 0.25}, {2, 2}};
    double theta[2] = {0.5, -1}, v[2] = {0, 0};
    struct vector s = VEC(0.5, -1), m = VEC(0, 0), a = VEC(0, 0);
    for (int t = 0; t < 4; t++) {
        for (int i = 0; i < 2; i++) {
            double g = -inner[t][i]; /* theta - A, A = theta + inner */
            v[i] = mu * v[i] + g;
            theta[i] -= lr * (g + mu * v[i]);
        }
        vector_copy(&a, &s);
        for (int i = 0; i < 2; i++) vector_set(&a, i, vector_get(&a, i) + (float)inner[t][i]);
        bmuf_update(&s, &m, &a, (float)mu, (float)lr, 1);
        for (int i = 0; i < 2; i++) CHECK_NEAR(vector_get(&s, i), theta[i], 1e-5);
    }
    vector_release(&s), vector_release(&m), vector_release(&a);
}

/* The file form: two blocks through the state file (resumption = a new process reading it), and
 * the state's checks. */
static void test_bmuf_files(void) {
    char st1[160], st2[160];
    snprintf(st1, sizeof st1, "%s/1.bmuf", tmpdir);
    snprintf(st2, sizeof st2, "%s/2.bmuf", tmpdir);
    struct bmuf_options o = {.on = 1, .momentum = 0.5f, .learning_rate = 1, .nesterov = 1};
    const char *s0 = tiny_file("s0.mdl", 0, 0);
    const char *m[2] = {tiny_file("j1.mdl", 1, 4), tiny_file("j2.mdl", 3, 4)}; /* A1 = [2, 4] */
    struct nnet *s1 = average_bmuf_files(m, 2, NULL, s0, &o, NULL, st1);
    CHECK(s1);
    struct vector p = nnet_params(s1);
    CHECK_NEAR(vector_get(&p, 0), 3, 1e-6); /* S1 = [3, 6] as above */
    CHECK_NEAR(vector_get(&p, 1), 6, 1e-6);
    nnet_free(s1);
    const char *s1f = tiny_file("s1.mdl", 3, 6);
    const char *m2[2] = {tiny_file("k1.mdl", 3, 7), tiny_file("k2.mdl", 5, 7)}; /* A2 = [4, 7] */
    struct nnet *s2 = average_bmuf_files(m2, 2, NULL, s1f, &o, st1, st2);
    CHECK(s2);
    p = nnet_params(s2);
    CHECK_NEAR(vector_get(&p, 0), 5, 1e-6);
    CHECK_NEAR(vector_get(&p, 1), 8.5, 1e-6);
    nnet_free(s2);
    /* another N, another Nesterov flag, another model: one-line errors */
    struct vector v;
    vector_init(&v, 2);
    CHECK(bmuf_state_read(st2, &v, 2, 1) == 0);
    CHECK_NEAR(vector_get(&v, 1), 3, 1e-6); /* m2 */
    CHECK(bmuf_state_read(st2, &v, 3, 1) < 0 && strstr(error_get(), "<NumJobs> 2"));
    CHECK(bmuf_state_read(st2, &v, 2, 0) < 0 && strstr(error_get(), "<Nesterov>"));
    vector_release(&v);
    vector_init(&v, 5);
    CHECK(bmuf_state_read(st2, &v, 2, 1) < 0 && strstr(error_get(), "another model"));
    CHECK(!strchr(error_get(), '\n'));
    vector_release(&v);
    error_clear();
}

static void test_proximal_and_ema(void) {
    struct vector x = VEC(2, 4), ref = VEC(0, 1), mu = VEC(0, 0), y = VEC(4, 8);
    elastic_pull(&x, &ref, 0.25f); /* x - 0.25 (x - ref) */
    CHECK_NEAR(vector_get(&x, 0), 1.5, 1e-7);
    CHECK_NEAR(vector_get(&x, 1), 3.25, 1e-7);
    elastic_pull(&x, &ref, 1); /* full coupling: the reference */
    CHECK(vector_get(&x, 0) == 0 && vector_get(&x, 1) == 1);
    elastic_ema(&mu, &y, 0.75f); /* 0.75 * 0 + 0.25 * y */
    CHECK_NEAR(vector_get(&mu, 0), 1, 1e-7);
    CHECK_NEAR(vector_get(&mu, 1), 2, 1e-7);
    elastic_ema(&mu, &y, 0.75f); /* 0.75 * [1,2] + 0.25 * [4,8] */
    CHECK_NEAR(vector_get(&mu, 0), 1.75, 1e-7);
    CHECK_NEAR(vector_get(&mu, 1), 3.5, 1e-7);
    vector_release(&x), vector_release(&ref), vector_release(&mu), vector_release(&y);
}

/* ---- HWA: the offline level is the mean of the last W synchronised models ---- */

static void test_hwa_window(void) {
    const char *m[4] = {tiny_file("h1.mdl", 1, 1), tiny_file("h2.mdl", 2, 2),
                        tiny_file("h3.mdl", 3, 3), tiny_file("h4.mdl", 5, 7)};
    int num = 4, window = 2;
    struct nnet *avg = average_model_files(m + num - window, window, NULL);
    CHECK(avg);
    struct vector p = nnet_params(avg);
    CHECK_NEAR(vector_get(&p, 0), 4, 1e-6); /* (3 + 5) / 2 */
    CHECK_NEAR(vector_get(&p, 1), 5, 1e-6); /* (3 + 7) / 2 */
    nnet_free(avg);
}

/* ---- TWA ---- */

static void test_gram_schmidt(void) {
    /* e1, e1 + e2, a combination of the two (dropped), then e1 + e2 + e3 */
    double v[12] = {1, 0, 0, 1, 1, 0, 2, 1, 0, 1, 1, 1};
    CHECK(twa_gram_schmidt(v, 4, 3) == 3);
    double want[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    for (int i = 0; i < 9; i++)
        CHECK_NEAR(v[i], want[i], 1e-12);
    /* [3,4] and [4,3]: q1 = [.6,.8], q2 = [.8,-.6] */
    double w[4] = {3, 4, 4, 3};
    CHECK(twa_gram_schmidt(w, 2, 2) == 2);
    CHECK_NEAR(w[0], 0.6, 1e-12);
    CHECK_NEAR(w[1], 0.8, 1e-12);
    CHECK_NEAR(w[2], 0.8, 1e-12);
    CHECK_NEAR(w[3], -0.6, 1e-12);
    double zero[4] = {0, 0, 5, 0};
    CHECK(twa_gram_schmidt(zero, 2, 2) == 1); /* a zero row is dropped */
    CHECK_NEAR(zero[0], 1, 1e-12);
}

static void test_basis_projection(void) {
    /* P: one row q = [.6, .8] in 2-D; g = [1, 0]: alpha = P g = .6, P^T alpha = [.36, .48] */
    double p[2] = {0.6, 0.8}, g[2] = {1, 0}, a, x[2];
    twa_basis_project(p, 1, 2, g, &a);
    CHECK_NEAR(a, 0.6, 1e-12);
    twa_basis_expand(p, 1, 2, &a, x);
    CHECK_NEAR(x[0], 0.36, 1e-12);
    CHECK_NEAR(x[1], 0.48, 1e-12);
    /* the mean of models in the span is reproduced exactly by its coefficients */
    double models[6] = {1, 2, 0, 3, -1, 1};
    double mean[3] = {2, 0.5, 0.5}, coef[2], back[3];
    CHECK(twa_gram_schmidt(models, 2, 3) == 2);
    twa_basis_project(models, 2, 3, mean, coef);
    twa_basis_expand(models, 2, 3, coef, back);
    for (int i = 0; i < 3; i++)
        CHECK_NEAR(back[i], mean[i], 1e-12);
}

/* nnet-average on BatchNorm's stored statistics: two jobs that saw different data (momentum 1:
 * the stored moments are the last batch's) average to the moments of their data pooled, so the
 * averaged model in test mode normalises the union as a batch of it would be normalised. */
static void test_batch_norm_average(void) {
    const char *cfg = "BatchNormComponent dim=6 block-dim=2 momentum=1\n";
    float xa[4 * 6], xb[4 * 6];
    struct rng r;
    rng_seed(&r, 3);
    for (int i = 0; i < 24; i++) {
        xa[i] = 1 + 2 * rng_gauss(&r);
        xb[i] = -3 + 0.5f * rng_gauss(&r);
    }
    const char *files[2] = {NULL, NULL};
    static char path[2][128];
    for (int j = 0; j < 2; j++) {
        struct nnet *n = nnet_init_from_config_text(cfg, 1);
        struct matrix x;
        matrix_init(&x, 4, 6);
        matrix_from_host(&x, j ? xb : xa);
        nnet_forward(n, &x, 4, 1); /* a training step's forward: the stored moments move */
        snprintf(path[j], sizeof path[j], "%s/bn%d.mdl", tmpdir, j);
        CHECK(nnet_write_file(n, path[j], 1) == 0);
        files[j] = path[j];
        matrix_release(&x);
        nnet_free(n);
    }
    struct nnet *avg = average_model_files(files, 2, NULL);
    CHECK(avg != NULL);
    CHECK(nnet_stats_dim(avg) == 4);
    struct matrix u;
    matrix_init(&u, 8, 6);
    struct matrix upper = matrix_view(&u, 0, 4, 0, 6);
    matrix_from_host(&upper, xa);
    struct matrix lower = matrix_view(&u, 4, 4, 0, 6);
    matrix_from_host(&lower, xb);
    float test[48], batch[48];
    matrix_to_host(nnet_forward(avg, &u, 8, 0), test);
    struct nnet *fresh = nnet_init_from_config_text(cfg, 1);
    matrix_to_host(nnet_forward(fresh, &u, 8, 1), batch);
    for (int i = 0; i < 48; i++)
        CHECK_NEAR(test[i], batch[i], 1e-4);
    /* a model of another block-dim does not average with them */
    struct nnet *other = nnet_init_from_config_text("BatchNormComponent dim=6 block-dim=3\n", 1);
    CHECK(nnet_write_file(other, path[1], 1) == 0);
    struct nnet *bad = average_model_files(files, 2, NULL);
    CHECK(bad == NULL && strstr(error_get(), "stored-statistics dim") != NULL);
    nnet_free(other);
    nnet_free(fresh);
    nnet_free(avg);
    matrix_release(&u);
}

int main(void) {
    if (test_tmpdir(tmpdir, sizeof tmpdir, "averaging-test")) return 1;
    TEST_RUN(test_cosine_distance);
    TEST_RUN(test_gaf_halving);
    TEST_RUN(test_gaf_mean);
    TEST_RUN(test_gaf_anchor_skip_and_tau2);
    TEST_RUN(test_apply_gradient);
    TEST_RUN(test_step_mode);
    TEST_RUN(test_agreement_select);
    TEST_RUN(test_agreement_files);
    TEST_RUN(test_elastic_center);
    TEST_RUN(test_bmuf_rule);
    TEST_RUN(test_bmuf_is_diloco);
    TEST_RUN(test_bmuf_files);
    TEST_RUN(test_proximal_and_ema);
    TEST_RUN(test_hwa_window);
    TEST_RUN(test_gram_schmidt);
    TEST_RUN(test_basis_projection);
    TEST_RUN(test_batch_norm_average);
    if (test_tmpdir_remove(tmpdir)) return 1;
    TEST_MAIN_END();
}
