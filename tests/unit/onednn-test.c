/* The oneDNN backend (src/matrix/onednn.h) and the layer products under --precision.
 *
 * Tolerances. Element (i, j) of a product is checked against a reference computed in double with
 * the bound tol * sum_k |a_ik| |b_kj| (the scale of the element's rounding errors):
 *   - oneDNN fp32 vs the exact product: 1e-5 (fp32 accumulation over k <= 2000 terms gives a few
 *     1e-7 in practice; OpenBLAS's sgemm is held to the same bound);
 *   - oneDNN bf16 vs the exact product of the bf16-rounded operands: 1e-5 (fp32 accumulation: the
 *     engines multiply bf16 exactly);
 *   - oneDNN bf16 vs the exact product of the fp32 operands: 2^-8 = 3.9e-3 (each operand's
 *     rounding is at most 2^-9 relative, so each term's at most ~2^-8).
 * On a CPU without AMX-BF16 or AVX512-BF16 (or without oneDNN) the bf16 numeric checks print a
 * SKIP line and the refusal's message is checked instead. */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "matrix/cpu.h"
#include "matrix/onednn.h"
#include "matrix/matrix.h"

/* struct matrix -> the backends' view */
static struct cpu_mat cm(const struct matrix *m) {
    struct cpu_mat c = {m->data, m->rows, m->cols, m->stride};
    return c;
}
#include "test.h"

static struct rng rng;

static float bits_to_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t one_bf16(float f) {
    struct matrix m = matrix_wrap(&f, 1, 1, 1, MATRIX_CPU);
    uint16_t h;
    onednn_to_bf16(&h, 1, cm(&m));
    return h;
}

static void test_bf16_rounding(void) {
    CHECK(one_bf16(1.0f) == 0x3f80);
    CHECK(one_bf16(-2.0f) == 0xc000);
    CHECK(one_bf16(0.0f) == 0x0000);
    CHECK(one_bf16(-0.0f) == 0x8000);
    CHECK(one_bf16(bits_to_float(0x3f808000u)) == 0x3f80); /* tie: to even (down) */
    CHECK(one_bf16(bits_to_float(0x3f818000u)) == 0x3f82); /* tie: to even (up) */
    CHECK(one_bf16(bits_to_float(0x3f808001u)) == 0x3f81); /* above the tie: up */
    CHECK(one_bf16(bits_to_float(0x7f7fffffu)) == 0x7f80); /* FLT_MAX rounds to inf */
    CHECK(one_bf16(INFINITY) == 0x7f80);
    CHECK(one_bf16(-INFINITY) == 0xff80);
    uint16_t nan = one_bf16(bits_to_float(0x7f800001u)); /* a NaN whose payload is below bit 16 */
    CHECK((nan & 0x7f80) == 0x7f80 && (nan & 0x7f) != 0);
    /* round trip: bf16 -> float -> bf16 is exact, and from_bf16 widens exactly */
    enum { N = 1000 };
    float x[N], y[N];
    uint16_t h[N], h2[N];
    for (int i = 0; i < N; i++) x[i] = rng_gauss(&rng) * 100.0f;
    struct matrix mx = matrix_wrap(x, 10, 100, 100, MATRIX_CPU), my = matrix_wrap(y, 10, 100, 100,
                                                                                  MATRIX_CPU);
    onednn_to_bf16(h, 100, cm(&mx));
    onednn_from_bf16(cm(&my), h, 100);
    onednn_to_bf16(h2, 100, cm(&my));
    for (int i = 0; i < N; i++) {
        CHECK(h[i] == h2[i]);
        CHECK(fabsf(y[i] - x[i]) <= fabsf(x[i]) * (1.0f / 256));
    }
}

/* A strided random view: rows x cols inside rows x (cols + pad) storage. */
struct smat {
    float *p;
    struct matrix m;
};
static void smat_init(struct smat *s, int rows, int cols, int pad) {
    int stride = cols + pad;
    s->p = malloc(sizeof(float) * (size_t)rows * stride);
    for (long i = 0; i < (long)rows * stride; i++) s->p[i] = rng_gauss(&rng);
    s->m = matrix_wrap(s->p, rows, cols, stride, MATRIX_CPU);
}

static double el(const struct matrix *m, int r, int c, int trans) {
    return trans ? m->data[(long)c * m->stride + r] : m->data[(long)r * m->stride + c];
}

static double bf16_of(double x) { return bits_to_float((uint32_t)one_bf16((float)x) << 16); }

/* Worst |c - (alpha op(a) op(b) + beta c0)| / (|alpha| sum_k |a_ik||b_kj| + |beta c0_ij|) over
 * the elements of c, the reference in double; round_inputs 1 rounds a and b to bf16 first; 2 and
 * 3 round alpha a and b, or a and alpha b (the layer product folds alpha into an operand's
 * rounding). */
static double worst_rel(const struct matrix *c, const struct matrix *c0, float alpha,
                        const struct matrix *a, int ta, const struct matrix *b, int tb, float beta,
                        int round_inputs) {
    int k = ta ? a->rows : a->cols;
    double worst = 0;
    for (int i = 0; i < c->rows; i++)
        for (int j = 0; j < c->cols; j++) {
            double s = 0, scale = 0;
            for (int l = 0; l < k; l++) {
                double x = el(a, i, l, ta), y = el(b, l, j, tb);
                if (round_inputs == 1) {
                    x = bf16_of(x);
                    y = bf16_of(y);
                } else if (round_inputs == 2) {
                    x = bf16_of((float)(alpha * (float)x)) / alpha;
                    y = bf16_of(y);
                } else if (round_inputs == 3) {
                    x = bf16_of(x);
                    y = bf16_of((float)(alpha * (float)y)) / alpha;
                }
                s += x * y;
                scale += fabs(x * y);
            }
            double c_old = beta != 0 ? c0->data[(long)i * c0->stride + j] : 0;
            double ref = alpha * s + beta * c_old;
            double den = fabs(alpha) * scale + fabs(beta * c_old);
            double e = fabs(c->data[(long)i * c->stride + j] - ref) / (den > 0 ? den : 1);
            if (e > worst) worst = e;
        }
    return worst;
}

/* Shapes of the benchmark layers scaled down, thin ones, odd sizes; every transposition. */
static const int shapes[][3] = {{64, 96, 300}, {37, 53, 261}, {128, 10, 300}, {40, 700, 33}};
static const float alphas[] = {1.0f, 0.37f}, betas[] = {0.0f, 1.0f, 0.5f};

static void check_gemm(int type, int via_layer) {
    for (int s = 0; s < 4; s++)
        for (int t = 0; t < 4; t++)
            for (int ab = 0; ab < 2; ab++) {
                int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2], ta = t & 1, tb = t >> 1;
                float alpha = alphas[ab], beta = betas[(s + t + ab) % 3];
                struct smat a, b, c, c0;
                smat_init(&a, ta ? k : m, ta ? m : k, 3);
                smat_init(&b, tb ? n : k, tb ? k : n, 5);
                smat_init(&c, m, n, 7);
                smat_init(&c0, m, n, 7);
                memcpy(c0.p, c.p, sizeof(float) * (size_t)m * (n + 7));
                double tol = 1e-5;
                int rounded = type == ONEDNN_TYPE_BF16;
                if (via_layer) { /* the public layer product (split over the pool) */
                    matrix_add_mat_mat_layer(&c.m, alpha, &a.m, ta, &b.m, tb, beta);
                    /* thin shapes stay fp32 (OpenBLAS) under bf16 */
                    if (m < MATRIX_BF16_MIN_SIDE || n < MATRIX_BF16_MIN_SIDE ||
                        k < MATRIX_BF16_MIN_INNER)
                        rounded = 0;
                } else if (type == ONEDNN_TYPE_F32) {
                    onednn_gemm_raw(cm(&c.m), alpha, type, a.m.data, a.m.stride, ta, b.m.data,
                                     b.m.stride, tb, k, beta);
                } else {
                    uint16_t *a16 = malloc(2 * (size_t)a.m.rows * a.m.cols);
                    uint16_t *b16 = malloc(2 * (size_t)b.m.rows * b.m.cols);
                    onednn_to_bf16(a16, a.m.cols, cm(&a.m));
                    onednn_to_bf16(b16, b.m.cols, cm(&b.m));
                    onednn_gemm_raw(cm(&c.m), alpha, type, a16, a.m.cols, ta, b16, b.m.cols, tb, k,
                                     beta);
                    free(a16);
                    free(b16);
                }
                double e = worst_rel(&c.m, &c0.m, alpha, &a.m, ta, &b.m, tb, beta, rounded);
                if (via_layer && rounded && alpha != 1.0f && !(e <= tol)) { /* alpha folded */
                    double e2 = worst_rel(&c.m, &c0.m, alpha, &a.m, ta, &b.m, tb, beta, 2);
                    double e3 = worst_rel(&c.m, &c0.m, alpha, &a.m, ta, &b.m, tb, beta, 3);
                    e = e2 < e3 ? e2 : e3;
                }
                double e_fp32 = worst_rel(&c.m, &c0.m, alpha, &a.m, ta, &b.m, tb, beta, 0);
                /* the padding beside c is never written */
                int pad_ok = 1;
                for (int r = 0; r < m; r++)
                    for (int p = n; p < n + 7; p++)
                        pad_ok &= c.p[(long)r * (n + 7) + p] == c0.p[(long)r * (n + 7) + p];
                free(a.p);
                free(b.p);
                free(c.p);
                free(c0.p);
                if (!(e <= tol) || !(e_fp32 <= 1.0 / 256) || !pad_ok) {
                    printf("FAIL %s: %dx%dx%d ta %d tb %d alpha %g beta %g: rel. error %.3g "
                           "(tol %g), vs fp32 %.3g (tol %g), padding %s\n",
                           test_name_now, m, n, k, ta, tb, alpha, beta, e, tol, e_fp32, 1.0 / 256,
                           pad_ok ? "intact" : "written");
                    test_failed_now = 1;
                    return;
                }
            }
}

/* OpenBLAS, through matrix_add_mat_mat, meets the same bound (the reference is right). */
static void test_openblas_reference(void) {
    struct smat a, b, c, c0;
    smat_init(&a, 37, 211, 3);
    smat_init(&b, 211, 53, 5);
    smat_init(&c, 37, 53, 7);
    smat_init(&c0, 37, 53, 7);
    memcpy(c0.p, c.p, sizeof(float) * 37 * 60);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 37, 53, 211, 0.37f, a.m.data, a.m.stride,
                b.m.data, b.m.stride, 0.5f, c.m.data, c.m.stride);
    double e = worst_rel(&c.m, &c0.m, 0.37f, &a.m, 0, &b.m, 0, 0.5f, 0);
    free(a.p);
    free(b.p);
    free(c.p);
    free(c0.p);
    CHECK(e <= 1e-5);
}

static int have_dnnl(void) {
#if HAVE_DNNL
    return 1;
#else
    return 0;
#endif
}

static void test_dnnl_fp32(void) {
    if (!have_dnnl()) return;
    check_gemm(ONEDNN_TYPE_F32, 0);
}

static int bf16_ok;

static void test_dnnl_bf16(void) {
    if (!bf16_ok) return;
    check_gemm(ONEDNN_TYPE_BF16, 0);
}

/* The public layer product under --precision=bf16, serial and split over 3 threads. */
static void test_layer_product_bf16(void) {
    if (!bf16_ok) return;
    CHECK(matrix_set_precision("bf16") == 0);
    CHECK(matrix_get_precision() == MATRIX_BF16);
    matrix_set_num_threads(1);
    check_gemm(ONEDNN_TYPE_BF16, 1);
    if (test_failed_now) return;
    matrix_set_num_threads(3);
    check_gemm(ONEDNN_TYPE_BF16, 1);
    matrix_set_num_threads(1);
    CHECK(matrix_set_precision("fp32") == 0);
}

/* Kept bf16 copies of a layer's operands (matrix_layer_affine, _backprop, _weight_grad): reused
 * by the backward products of the step, dropped when a product writes over the operand and when a
 * forward follows a backward (a new step); each result checked against the exact product of the
 * current contents. */
static void test_kept_operands(void) {
    if (!bf16_ok) return;
    CHECK(matrix_set_precision("bf16") == 0);
    enum { M = 128, K = 288, N = 160 }; /* every product's sides >= 32 and inner >= 128: bf16 */
    struct smat x, w, dy, out, dx, dw, dw0, dw_again, zero_out, zero_dx, scratch;
    smat_init(&x, M, K, 0);
    smat_init(&w, N, K, 0);
    smat_init(&dy, M, N, 0);
    smat_init(&out, M, N, 0);
    smat_init(&zero_out, M, N, 0);
    smat_init(&dx, M, K, 0);
    smat_init(&zero_dx, M, K, 0);
    smat_init(&dw, N, K, 0);
    smat_init(&dw0, N, K, 0);
    smat_init(&dw_again, N, K, 0);
    smat_init(&scratch, M, M, 0);
    struct vector b;
    vector_init(&b, N); /* zero: out is the product alone */
    double e[7];
    matrix_layer_affine(&out.m, &x.m, &w.m, &b);
    e[0] = worst_rel(&out.m, &zero_out.m, 1, &x.m, 0, &w.m, 1, 0, 1);
    matrix_layer_backprop(&dx.m, &dy.m, &w.m);
    e[1] = worst_rel(&dx.m, &zero_dx.m, 1, &dy.m, 0, &w.m, 0, 0, 1);
    memcpy(dw0.p, dw.p, sizeof(float) * N * K);
    matrix_layer_weight_grad(&dw.m, 0.5f, &dy.m, &x.m, 1);
    e[2] = worst_rel(&dw.m, &dw0.m, 0.5f, &dy.m, 1, &x.m, 0, 1, 1);
    /* the copies of dy and x are really reused: x changed behind the matrix layer's back (against
     * the contract) is not seen, bit for bit */
    memcpy(dw0.p, dw.p, sizeof(float) * N * K);
    for (int i = 0; i < M * K; i++) x.p[i] += 1.0f;
    matrix_layer_weight_grad(&dw.m, 0.5f, &dy.m, &x.m, 0);
    memcpy(dw_again.p, dw.p, sizeof(float) * N * K);
    for (int i = 0; i < M * K; i++) x.p[i] -= 1.0f;
    matrix_layer_weight_grad(&dw.m, 0.5f, &dy.m, &x.m, 0);
    e[3] = memcmp(dw_again.p, dw.p, sizeof(float) * N * K) ? 1 : 0;
    /* a product writes over x: its copy must go */
    struct matrix x_head = matrix_wrap(x.p, M, M, K, MATRIX_CPU); /* the first M columns of x */
    matrix_add_mat_mat_layer(&x_head, 1, &scratch.m, 0, &scratch.m, 1, 0);
    matrix_layer_weight_grad(&dw.m, 1, &dy.m, &x.m, 0);
    e[4] = worst_rel(&dw.m, &dw0.m, 1, &dy.m, 1, &x.m, 0, 0, 1);
    /* a forward after the backward begins a new step: dy and w changed in between are seen */
    for (int i = 0; i < M * N; i++) dy.p[i] *= -0.5f;
    for (int i = 0; i < N * K; i++) w.p[i] += 0.25f;
    matrix_layer_affine(&out.m, &x.m, &w.m, &b);
    matrix_layer_backprop(&dx.m, &dy.m, &w.m);
    e[5] = worst_rel(&dx.m, &zero_dx.m, 1, &dy.m, 0, &w.m, 0, 0, 1);
    matrix_layer_weight_grad(&dw.m, 1, &dy.m, &x.m, 0);
    e[6] = worst_rel(&dw.m, &dw0.m, 1, &dy.m, 1, &x.m, 0, 0, 1);
    struct smat *all[] = {&x, &w, &dy, &out, &dx, &dw, &dw0, &dw_again, &zero_out, &zero_dx, &scratch};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]->p);
    vector_release(&b);
    CHECK(matrix_set_precision("fp32") == 0);
    for (int i = 0; i < 7; i++) {
        if (!(e[i] <= 1e-5)) printf("    case %d: rel. error %g\n", i, e[i]);
        CHECK(e[i] <= 1e-5);
    }
}

static double sum_sq_ref(const struct matrix *m) {
    double t = 0;
    for (int r = 0; r < m->rows; r++)
        for (int c = 0; c < m->cols; c++) {
            double v = m->data[(long)r * m->stride + c];
            t += v * v;
        }
    return t;
}

/* The conversion of a kept operand sums its squares (the step bound's norms come free): on 1 and
 * 3 threads, contiguous (one long row, past a chunk of 2048) and strided, ||x|| and ||dy|| after
 * the products equal the norms in double; an operand not kept, or written over, has none. */
static void test_kept_sum_sq(void) {
    CHECK(matrix_set_precision("bf16") == 0);
    enum { M = 96, K = 288, N = 160 };
    for (int threads = 1; threads <= 3; threads += 2) {
        matrix_set_num_threads(threads);
        for (int pad = 0; pad <= 5; pad += 5) {
            struct smat x, w, dy, out, dx;
            smat_init(&x, M, K, pad);
            smat_init(&w, N, K, 0);
            smat_init(&dy, M, N, pad);
            smat_init(&out, M, N, 0);
            smat_init(&dx, M, K, 0);
            struct vector b;
            vector_init(&b, N);
            double got;
            CHECK(!onednn_kept_sum_sq(cm(&x.m), &got));
            matrix_layer_affine(&out.m, &x.m, &w.m, &b);
            matrix_layer_backprop(&dx.m, &dy.m, &w.m);
            CHECK(onednn_kept_sum_sq(cm(&x.m), &got));
            CHECK(fabs(got - sum_sq_ref(&x.m)) <= 1e-6 * sum_sq_ref(&x.m));
            CHECK(onednn_kept_sum_sq(cm(&dy.m), &got));
            CHECK(fabs(got - sum_sq_ref(&dy.m)) <= 1e-6 * sum_sq_ref(&dy.m));
            CHECK(fabs(matrix_layer_frobenius_norm(&x.m) - matrix_frobenius_norm(&x.m)) <=
                  1e-6 * matrix_frobenius_norm(&x.m));
            CHECK(!onednn_kept_sum_sq(cm(&dx.m), &got)); /* an output, not kept */
            /* a product writing over dy drops its copy: the norm is then taken afresh */
            matrix_add_mat_mat_layer(&dy.m, 1, &dx.m, 0, &w.m, 1, 0);
            CHECK(!onednn_kept_sum_sq(cm(&dy.m), &got));
            CHECK(fabs(matrix_layer_frobenius_norm(&dy.m) - sqrt(sum_sq_ref(&dy.m))) <=
                  1e-6 * sqrt(sum_sq_ref(&dy.m)));
            /* a NaN in a kept operand makes its norm NaN (the step bound then refuses) */
            x.p[7] = NAN;
            matrix_layer_affine(&out.m, &x.m, &w.m, &b);
            CHECK(isnan(matrix_layer_frobenius_norm(&x.m)));
            struct smat *all[] = {&x, &w, &dy, &out, &dx};
            for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]->p);
            vector_release(&b);
        }
    }
    matrix_set_num_threads(1);
    CHECK(matrix_set_precision("fp32") == 0);
}

/* The largest |a_i - b_i| relative to max |b_i|, over n floats. */
static double vec_rel_diff(const float *a, const float *b, int n) {
    double worst = 0, scale = 0;
    for (int i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (d > worst) worst = d;
        if (fabs(b[i]) > scale) scale = fabs(b[i]);
    }
    return scale > 0 ? worst / scale : worst;
}

/* dY's conversion by its input derivative sums its rows (ONEDNN_STORE_SUMS), and the bias
 * gradient takes them from there; the first layer's dY, which no input derivative converts, gets
 * its copy and sums from the step bound's norm (matrix_layer_frobenius_norm). Each agrees with
 * vector_add_row_sums; what no copy covers falls back to it. */
static void test_kept_row_sums(void) {
    CHECK(matrix_set_precision("bf16") == 0);
    enum { M = 160, K = 288, N = 144, THIN = 10 };
    for (int threads = 1; threads <= 3; threads += 2) {
        matrix_set_num_threads(threads);
        for (int pad = 0; pad <= 5; pad += 5) {
            struct smat x, w, dy, dy1, thin, dx;
            smat_init(&x, M, K, pad);
            smat_init(&w, N, K, 0);
            smat_init(&dy, M, N, pad);
            smat_init(&dy1, M, N, pad);
            smat_init(&thin, M, THIN, pad);
            smat_init(&dx, M, K, 0);
            struct vector out, ref, bias;
            vector_init(&out, N);
            vector_init(&ref, N);
            vector_init(&bias, N);
            struct smat y;
            smat_init(&y, M, N, 0);
            matrix_layer_affine(&y.m, &x.m, &w.m, &bias);
            CHECK(onednn_kept_row_sums(cm(&x.m)) == NULL); /* the forward keeps no sums */
            matrix_layer_backprop(&dx.m, &dy.m, &w.m);
            CHECK(onednn_kept_row_sums(cm(&dy.m)) != NULL);
            for (int beta = 0; beta <= 1; beta++) {
                vector_set_const(&out, 0.25f);
                vector_set_const(&ref, 0.25f);
                matrix_layer_bias_grad(&out, 0.5f, &dy.m, (float)beta);
                vector_add_row_sums(&ref, 0.5f, &dy.m, (float)beta);
                CHECK(vec_rel_diff(out.data, ref.data, N) <= 1e-6);
            }
            /* no input derivative: the bound makes the copy, its sums serve the bias */
            CHECK(onednn_kept_row_sums(cm(&dy1.m)) == NULL);
            CHECK(fabs(matrix_layer_frobenius_norm(&dy1.m) - sqrt(sum_sq_ref(&dy1.m))) <=
                  1e-6 * sqrt(sum_sq_ref(&dy1.m)));
            CHECK(onednn_kept_row_sums(cm(&dy1.m)) != NULL);
            matrix_layer_bias_grad(&out, 1.0f, &dy1.m, 0.0f);
            vector_add_row_sums(&ref, 1.0f, &dy1.m, 0.0f);
            CHECK(vec_rel_diff(out.data, ref.data, N) <= 1e-6);
            /* too thin for a bf16 product: no copy made, the norm and sums taken afresh */
            CHECK(fabs(matrix_layer_frobenius_norm(&thin.m) - sqrt(sum_sq_ref(&thin.m))) <=
                  1e-6 * sqrt(sum_sq_ref(&thin.m)));
            CHECK(onednn_kept_row_sums(cm(&thin.m)) == NULL);
            /* a product writing over dy drops its sums: the bias gradient reads dy afresh */
            matrix_add_mat_mat_layer(&dy.m, 1, &dx.m, 0, &w.m, 1, 0);
            CHECK(onednn_kept_row_sums(cm(&dy.m)) == NULL);
            matrix_layer_bias_grad(&out, 1.0f, &dy.m, 0.0f);
            vector_add_row_sums(&ref, 1.0f, &dy.m, 0.0f);
            CHECK(vec_rel_diff(out.data, ref.data, N) == 0);
            struct smat *all[] = {&x, &w, &dy, &dy1, &thin, &dx, &y};
            for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]->p);
            vector_release(&out);
            vector_release(&ref);
            vector_release(&bias);
        }
    }
    matrix_set_num_threads(1);
    CHECK(matrix_set_precision("fp32") == 0);
}

/* A scale that changes every call (natural gradient's step scale) folds into an operand's
 * rounding: one primitive for every alpha; the result is that of the scaled operand. A thin
 * product (oneDNN fp32) takes it at run time: one primitive too, fp32 accuracy. */
static void test_changing_alpha(void) {
    if (!bf16_ok) return;
    CHECK(matrix_set_precision("bf16") == 0);
    matrix_set_num_threads(1);
    enum { M = 64, K = 288, N = 80 };
    struct smat a, b, c, c0;
    smat_init(&a, K, M, 0);
    smat_init(&b, K, N, 0);
    smat_init(&c, M, N, 0);
    smat_init(&c0, M, N, 0);
    memcpy(c0.p, c.p, sizeof(float) * M * N);
    matrix_add_mat_mat_layer(&c.m, 0.25f, &a.m, MATRIX_TRANS, &b.m, MATRIX_NO_TRANS, 1.0f);
    long made = onednn_primitives_created();
    double worst = 0;
    for (int i = 1; i <= 5; i++) {
        float alpha = 0.1f * i + 0.013f;
        memcpy(c.p, c0.p, sizeof(float) * M * N);
        matrix_add_mat_mat_layer(&c.m, alpha, &a.m, MATRIX_TRANS, &b.m, MATRIX_NO_TRANS, 1.0f);
        double e2 = worst_rel(&c.m, &c0.m, alpha, &a.m, 1, &b.m, 0, 1.0f, 2);
        double e3 = worst_rel(&c.m, &c0.m, alpha, &a.m, 1, &b.m, 0, 1.0f, 3);
        double e = e2 < e3 ? e2 : e3;
        if (e > worst) worst = e;
    }
    long more = onednn_primitives_created() - made;
    free(a.p);
    free(b.p);
    free(c.p);
    free(c0.p);
    /* a thin product (the 10-class layer's weight gradient: oneDNN fp32, alpha at run time) */
    enum { T = 10 };
    smat_init(&a, K, T, 0);
    smat_init(&b, K, N, 0);
    smat_init(&c, T, N, 0);
    smat_init(&c0, T, N, 0);
    memcpy(c0.p, c.p, sizeof(float) * T * N);
    matrix_add_mat_mat_layer(&c.m, 0.25f, &a.m, MATRIX_TRANS, &b.m, MATRIX_NO_TRANS, 1.0f);
    made = onednn_primitives_created();
    for (int i = 1; i <= 5; i++) {
        float alpha = 0.1f * i + 0.013f;
        memcpy(c.p, c0.p, sizeof(float) * T * N);
        matrix_add_mat_mat_layer(&c.m, alpha, &a.m, MATRIX_TRANS, &b.m, MATRIX_NO_TRANS, 1.0f);
        double e = worst_rel(&c.m, &c0.m, alpha, &a.m, 1, &b.m, 0, 1.0f, 0);
        if (e > worst) worst = e;
    }
    more += onednn_primitives_created() - made;
    free(a.p);
    free(b.p);
    free(c.p);
    free(c0.p);
    CHECK(matrix_set_precision("fp32") == 0);
    if (more || !(worst <= 1e-5)) printf("    new primitives %ld, rel. error %g\n", more, worst);
    CHECK(more == 0);
    CHECK(worst <= 1e-5);
}

/* The affine forward with its bias fused into the product (bf16), serial and split over 3
 * threads (by rows, 32 each), against the rounded product plus the bias. */
static void test_layer_affine(void) {
    if (!bf16_ok) return;
    CHECK(matrix_set_precision("bf16") == 0);
    enum { M = 96, K = 288, N = 200 };
    struct smat x, w, out, zero;
    smat_init(&x, M, K, 3);
    smat_init(&w, N, K, 5);
    smat_init(&out, M, N, 2);
    smat_init(&zero, M, N, 2);
    struct vector b;
    vector_init(&b, N);
    for (int j = 0; j < N; j++) b.data[j] = 0.1f * (j % 17) - 0.5f;
    double worst = 0;
    for (int threads = 1; threads <= 3; threads += 2) {
        matrix_set_num_threads(threads);
        matrix_layer_affine(&out.m, &x.m, &w.m, &b);
        /* out - b is the product alone: compare with the rounded reference (beta 0) */
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) out.p[(long)i * (N + 2) + j] -= b.data[j];
        double e = worst_rel(&out.m, &zero.m, 1, &x.m, 0, &w.m, 1, 0, 1);
        if (e > worst) worst = e;
    }
    matrix_set_num_threads(1);
    free(x.p);
    free(w.p);
    free(out.p);
    free(zero.p);
    vector_release(&b);
    CHECK(matrix_set_precision("fp32") == 0);
    if (!(worst <= 1e-5)) printf("    rel. error %g\n", worst);
    CHECK(worst <= 1e-5);
}

/* fp32 precision: whichever engine cpu-layer.c's rules give a shape (OpenBLAS, or oneDNN's fp32
 * kernels where they are faster: the thin 10-class products, the wide ones on AVX-512), the layer
 * product is matrix_add_mat_mat's to fp32 rounding (rel. error <= 1e-5 against a double
 * reference), and bit for bit the same whatever the threads (each element on one thread, its
 * sum in one order). Shapes: wide, thin in rows / sums / columns, a side under 8; alpha 1 and
 * a learning rate's, beta 0 and 1. */
static void test_layer_product_fp32(void) {
    CHECK(matrix_set_precision("fp32") == 0);
    static const int fp32_shapes[][3] = {{256, 96, 128}, {10, 300, 256}, {256, 300, 10},
                                         {256, 10, 300}, {256, 1, 300}, {1, 300, 256}};
    double worst = 0;
    int same = 1;
    for (int s = 0; s < 6; s++)
        for (int v = 0; v < 4; v++) {
            int m = fp32_shapes[s][0], n = fp32_shapes[s][1], k = fp32_shapes[s][2];
            float alpha = v & 1 ? -0.013f : 1.0f, beta = v & 2 ? 1.0f : 0.0f;
            struct smat a, b, c0, c1, c3;
            smat_init(&a, k, m, 1); /* the weight gradient's layout: op(a) = a^T */
            smat_init(&b, k, n, 2);
            smat_init(&c0, m, n, 3);
            smat_init(&c1, m, n, 3);
            smat_init(&c3, m, n, 3);
            memcpy(c1.p, c0.p, sizeof(float) * m * (n + 3));
            memcpy(c3.p, c0.p, sizeof(float) * m * (n + 3));
            matrix_set_num_threads(1);
            matrix_add_mat_mat_layer(&c1.m, alpha, &a.m, MATRIX_TRANS, &b.m, MATRIX_NO_TRANS, beta);
            matrix_set_num_threads(3);
            matrix_add_mat_mat_layer(&c3.m, alpha, &a.m, MATRIX_TRANS, &b.m, MATRIX_NO_TRANS, beta);
            matrix_set_num_threads(1);
            double e = worst_rel(&c1.m, &c0.m, alpha, &a.m, 1, &b.m, 0, beta, 0);
            if (e > worst) worst = e;
            if (memcmp(c1.p, c3.p, sizeof(float) * m * (n + 3))) {
                printf("    %d x %d x %d: 1 and 3 threads differ\n", m, n, k);
                same = 0;
            }
            struct smat *all[] = {&a, &b, &c0, &c1, &c3};
            for (int i = 0; i < 5; i++) free(all[i]->p);
        }
    if (!(worst <= 1e-5)) printf("    rel. error %g\n", worst);
    CHECK(worst <= 1e-5);
    CHECK(same);
}

/* Natural gradient's thin products (cpu_project_gemm: H = X W^T cut by rows, J = H^T X cut by
 * columns, with remainders; oneDNN where it runs AVX-512, else OpenBLAS): the product to fp32
 * rounding, and the same bits on 1 and 3 threads (the parts are fixed). */
static void test_project_gemm(void) {
    static const int project_shapes[][4] = {/* m, n, k, trans_a */
                                            {300, 20, 257, 0}, {200, 80, 100, 0},
                                            {20, 600, 300, 1}, {9, 70, 50, 1}};
    double worst = 0;
    int same = 1;
    for (int s = 0; s < 4; s++) {
        int m = project_shapes[s][0], n = project_shapes[s][1], k = project_shapes[s][2],
            ta = project_shapes[s][3];
        struct smat a, b, c1, c3;
        smat_init(&a, ta ? k : m, ta ? m : k, 1);
        smat_init(&b, ta ? k : n, ta ? n : k, 2); /* H: op(b) = W^T; J: b = X */
        smat_init(&c1, m, n, 3);
        smat_init(&c3, m, n, 3);
        memcpy(c3.p, c1.p, sizeof(float) * m * (n + 3));
        struct cpu_mat ka = {a.m.data, a.m.rows, a.m.cols, a.m.stride},
                       kb = {b.m.data, b.m.rows, b.m.cols, b.m.stride},
                       k1 = {c1.m.data, m, n, c1.m.stride}, k3 = {c3.m.data, m, n, c3.m.stride};
        matrix_set_num_threads(1);
        cpu_project_gemm(k1, ka, ta, kb, !ta, 64);
        matrix_set_num_threads(3);
        cpu_project_gemm(k3, ka, ta, kb, !ta, 64);
        matrix_set_num_threads(1);
        double e = worst_rel(&c1.m, &c1.m, 1.0f, &a.m, ta, &b.m, !ta, 0.0f, 0);
        if (e > worst) worst = e;
        if (memcmp(c1.p, c3.p, sizeof(float) * m * (n + 3))) {
            printf("    %d x %d x %d: 1 and 3 threads differ\n", m, n, k);
            same = 0;
        }
        struct smat *all[] = {&a, &b, &c1, &c3};
        for (int i = 0; i < 4; i++) free(all[i]->p);
    }
    if (!(worst <= 1e-5)) printf("    rel. error %g\n", worst);
    CHECK(worst <= 1e-5);
    CHECK(same);
}

static void test_precision_errors(void) {
    CHECK(matrix_set_precision("fp16") == -1);
    CHECK(strstr(error_get(), "expected fp32 or bf16, got 'fp16'"));
    if (!bf16_ok) {
        /* the refusal names what is missing */
        CHECK(matrix_set_precision("bf16") == -1);
        CHECK(strstr(error_get(), "--precision=bf16 cannot run here"));
        CHECK(strstr(error_get(), have_dnnl() ? "neither AMX-BF16 nor AVX512-BF16"
                                              : "built without oneDNN"));
        CHECK(matrix_get_precision() == MATRIX_FP32);
    }
}

/* Max-pooling's backward from the maxima the forward kept (argmax) is the backward that finds
 * them again, bit for bit, and routes each derivative to its window's maximum; with windows that
 * overlap, do not, and leave a border, at 1 and 2 threads (the images split between them). */
static void test_pool_argmax(void) {
    struct matrix_conv pools[] = {{6, 6, 3, 0, 2, 2, 2, 2, 0, 0, 0, 0},
                                   {7, 5, 4, 0, 3, 3, 2, 2, 1, 1, 0, 0},
                                   {5, 7, 2, 0, 3, 2, 1, 1, 0, 0, 0, 0}};
    for (int threads = 1; threads <= 2; threads++) {
        matrix_set_num_threads(threads);
        for (size_t s = 0; s < sizeof pools / sizeof *pools; s++) {
            struct matrix_conv g = pools[s];
            CHECK(matrix_conv_setup(&g, 1) == 0);
            int n = 9, in_dim = g.in_h * g.in_w * g.in_c, out_dim = g.out_h * g.out_w * g.out_c;
            struct matrix x, y, dy, kept, again, argmax;
            matrix_init_on(&x, n, in_dim, MATRIX_CPU);
            matrix_init_on(&y, n, out_dim, MATRIX_CPU);
            matrix_init_on(&dy, n, out_dim, MATRIX_CPU);
            matrix_init_on(&kept, n, in_dim, MATRIX_CPU);
            matrix_init_on(&again, n, in_dim, MATRIX_CPU);
            matrix_init_on(&argmax, 0, 0, MATRIX_CPU);
            matrix_set_randn(&x, &rng, 1); /* no ties */
            matrix_set_randn(&dy, &rng, 1);
            matrix_max_pool_forward(&y, &x, &g, &argmax);
            CHECK(argmax.rows == (have_dnnl() ? 1 : 0));
            matrix_max_pool_backward(&kept, &x, &dy, &g, &argmax);
            matrix_max_pool_backward(&again, &x, &dy, &g, NULL);
            CHECK(memcmp(kept.data, again.data, sizeof(float) * n * in_dim) == 0);
            /* each input's derivative: the sum over the windows whose maximum it is */
            double worst = 0;
            for (int i = 0; i < n; i++)
                for (int k = 0; k < in_dim; k++) {
                    int c = k % g.in_c, px = k / g.in_c % g.in_w, py = k / g.in_c / g.in_w;
                    double want = 0;
                    for (int oy = 0; oy < g.out_h; oy++)
                        for (int ox = 0; ox < g.out_w; ox++) {
                            int y0 = oy * g.stride_h - g.pad_h, x0 = ox * g.stride_w - g.pad_w;
                            if (py < y0 || py >= y0 + g.k_h || px < x0 || px >= x0 + g.k_w) continue;
                            float best = -1e30f;
                            for (int yy = y0; yy < y0 + g.k_h; yy++)
                                for (int xx = x0; xx < x0 + g.k_w; xx++)
                                    if (yy >= 0 && yy < g.in_h && xx >= 0 && xx < g.in_w) {
                                        float v = x.data[(long)i * x.stride +
                                                         ((long)yy * g.in_w + xx) * g.in_c + c];
                                        if (v > best) best = v;
                                    }
                            if (x.data[(long)i * x.stride + k] == best)
                                want += dy.data[(long)i * dy.stride +
                                                ((long)oy * g.out_w + ox) * g.out_c + c];
                        }
                    double d = fabs(kept.data[(long)i * kept.stride + k] - want);
                    if (d > worst) worst = d;
                }
            CHECK(worst < 1e-5);
            matrix_release(&x);
            matrix_release(&y);
            matrix_release(&dy);
            matrix_release(&kept);
            matrix_release(&again);
            matrix_release(&argmax);
        }
    }
    matrix_set_num_threads(1);
}

int main(void) {
    rng_seed(&rng, 20261201);
    matrix_set_num_threads(1);
    bf16_ok = matrix_bf16_supported() == 0;
    if (!bf16_ok) printf("SKIP bf16 numeric checks: %s\n", error_get());
    if (!have_dnnl()) printf("SKIP oneDNN fp32 checks: built without oneDNN\n");
    TEST_RUN(test_bf16_rounding);
    TEST_RUN(test_openblas_reference);
    if (have_dnnl()) TEST_RUN(test_dnnl_fp32);
    if (bf16_ok) {
        TEST_RUN(test_dnnl_bf16);
        TEST_RUN(test_layer_product_bf16);
        TEST_RUN(test_kept_operands);
        TEST_RUN(test_kept_sum_sq);
        TEST_RUN(test_kept_row_sums);
        TEST_RUN(test_changing_alpha);
        TEST_RUN(test_layer_affine);
    }
    TEST_RUN(test_layer_product_fp32);
    TEST_RUN(test_project_gemm);
    TEST_RUN(test_precision_errors);
    TEST_RUN(test_pool_argmax);
    TEST_MAIN_END();
}
