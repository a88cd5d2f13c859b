/* matrix: elementwise operations, nonlinearities, softmax, p-norm, normalize, splicing, sparse
 * access. The inner loops are written straight over a row (or over the whole block when it is
 * contiguous) so that the compiler vectorises them; exp is our own branch-free polynomial for the
 * same reason (libm's expf is a call that blocks vectorisation). With CUDA=1, GPU operands go to
 * src/cuda/ after the argument checks. */
#if defined(__GNUC__) && !defined(__clang__)
/* GCC 12 at -O2 vectorises only loops needing no epilogue; these loops need one. Without
 * no-trapping-math it will not turn the selects in exp_f into blends (we never read FP flags). */
#pragma GCC optimize("vect-cost-model=dynamic", "no-trapping-math")
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "matrix/matrix-internal.h"

/* ---- exp without libm ----
 * x = n ln2 + r with n an integer and |r| <= ln2/2; e^r - 1 by its Taylor series to r^8
 * (truncation < 2e-10, below float rounding); 2^n by writing the exponent bits. Accuracy is a
 * couple of float ulps. Below -87 the result is 0 (true values there are subnormal), above 88 it
 * is +inf, NaN stays NaN. */
#define LOG2E_F 1.44269504088896341f
#define LN2_HI_F 0.693145751953125f /* 15 significant bits: n * LN2_HI_F is exact */
#define LN2_LO_F 1.42860682030941723e-6f
#define ROUND_MAGIC_F 12582912.0f   /* 1.5 * 2^23: (v + M) - M rounds v to an integer */

static inline float expm1_taylor(float r) {
    return r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 +
                r * (1.0f / 720 + r * (1.0f / 5040 + r * (1.0f / 40320))))))));
}

static inline float exp_f(float x) {
    float xc = x > -87.0f ? x : -87.0f; /* NaN is clamped too, so the int conversion is defined */
    xc = xc < 88.0f ? xc : 88.0f;
    float n = (xc * LOG2E_F + ROUND_MAGIC_F) - ROUND_MAGIC_F;
    float r = (xc - n * LN2_HI_F) - n * LN2_LO_F;
    int32_t bits = ((int32_t)n + 127) * (1 << 23);
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    float y = scale + scale * expm1_taylor(r);
    y = x < -87.0f ? 0.0f : y;
    y = x > 88.0f ? INFINITY : y;
    return x == x ? y : x;
}

/* e^x - 1 for x <= 0 without cancellation near 0. */
static inline float expm1_neg_f(float x) {
    float small = expm1_taylor(x);
    float big = exp_f(x) - 1.0f;
    return x > -0.34657359f ? small : big;
}

static inline float sigmoid_f(float x) {
    return 1.0f / (1.0f + exp_f(-x)); /* exp overflow gives 1/inf = 0, the right limit */
}

/* tanh|x| = (1 - e^{-2|x|}) / (1 + e^{-2|x|}) = -m / (m + 2) with m = e^{-2|x|} - 1. */
static inline float tanh_f(float x) {
    float m = expm1_neg_f(-2.0f * fabsf(x));
    float t = -m / (m + 2.0f);
    return x < 0.0f ? -t : t;
}

/* sum_i e^{x_i} in double, the exps computed in vectorisable chunks. */
static double sum_exp(const float *x, int n) {
    float buf[256];
    double s = 0;
    for (int i0 = 0; i0 < n; i0 += 256) {
        int len = n - i0 < 256 ? n - i0 : 256;
        for (int i = 0; i < len; i++) buf[i] = exp_f(x[i0 + i]);
        s += sum_f64(buf, len);
    }
    return s;
}

/* Eight running maxima, so the compiler can keep them in vector registers. */
static float row_max(const float *x, int n) {
    float acc[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                    -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] = x[i + k] > acc[k] ? x[i + k] : acc[k];
    float m = -INFINITY;
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    for (int k = 0; k < 8; k++) m = acc[k] > m ? acc[k] : m;
    return m;
}

/* ---- elementwise and row/column scaling ---- */

void matrix_mul_elements(struct matrix *m, const struct matrix *a) {
    SAME_SHAPE(m, a);
#if HAVE_CUDA
    if (GPU2(m, a)) {
        cuda_mul_elements(CM(m), CM(a));
        return;
    }
#endif
    ON_CPU(m);
    ON_CPU(a);
    struct segs s = segs_of(m, a, NULL);
    for (long i = 0; i < s.n; i++) {
        float *p = seg_ptr(m, i);
        const float *q = seg_ptr(a, i);
        for (long j = 0; j < s.len; j++) p[j] *= q[j];
    }
}

void matrix_mul_rows(struct matrix *m, const struct vector *scale) {
    ASSERT(scale->dim == m->rows);
#if HAVE_CUDA
    if (GPU2(m, scale)) {
        cuda_mul_rows(CM(m), scale->data);
        return;
    }
#endif
    ON_CPU(m);
    ON_CPU(scale);
    for (int r = 0; r < m->rows; r++) {
        float *p = m->data + (long)r * m->stride;
        float f = scale->data[r];
        for (int c = 0; c < m->cols; c++) p[c] *= f;
    }
}

void matrix_mul_cols(struct matrix *m, const struct vector *scale) {
    ASSERT(scale->dim == m->cols);
#if HAVE_CUDA
    if (GPU2(m, scale)) {
        cuda_mul_cols(CM(m), scale->data);
        return;
    }
#endif
    ON_CPU(m);
    ON_CPU(scale);
    const float *q = scale->data;
    for (int r = 0; r < m->rows; r++) {
        float *p = m->data + (long)r * m->stride;
        for (int c = 0; c < m->cols; c++) p[c] *= q[c];
    }
}

void matrix_add_diag(struct matrix *m, float alpha) {
    ASSERT(m->rows == m->cols);
#if HAVE_CUDA
    if (GPU1(m)) {
        cuda_add_diag(CM(m), alpha);
        return;
    }
#endif
    ON_CPU(m);
    for (int i = 0; i < m->rows; i++) m->data[(long)i * m->stride + i] += alpha;
}

void matrix_add_const(struct matrix *m, float alpha) {
#if HAVE_CUDA
    if (GPU1(m)) {
        cuda_add_const(CM(m), alpha);
        return;
    }
#endif
    ON_CPU(m);
    struct segs s = segs_of(m, NULL, NULL);
    for (long i = 0; i < s.n; i++) {
        float *p = seg_ptr(m, i);
        for (long j = 0; j < s.len; j++) p[j] += alpha;
    }
}

void vector_mul_elements(struct vector *v, const struct vector *a) {
    ASSERT(v->dim == a->dim);
#if HAVE_CUDA
    if (GPU2(v, a)) {
        cuda_mul_elements(CV(v), CV(a));
        return;
    }
#endif
    ON_CPU(v);
    ON_CPU(a);
    float *p = v->data;
    const float *q = a->data;
    for (int i = 0; i < v->dim; i++) p[i] *= q[i];
}

void vector_add_const(struct vector *v, float alpha) {
#if HAVE_CUDA
    if (GPU1(v)) {
        cuda_add_const(CV(v), alpha);
        return;
    }
#endif
    ON_CPU(v);
    for (int i = 0; i < v->dim; i++) v->data[i] += alpha;
}

static void row_sq_norms_part(struct matrix *a, const struct matrix *b, const struct matrix *c,
                              const void *x) {
    struct vector v = vector_from_matrix(a);
    vector_row_sq_norms(&v, b);
}

void vector_row_sq_norms(struct vector *v, const struct matrix *m) {
    ASSERT(v->dim == m->rows);
#if HAVE_CUDA
    if (GPU2(v, m)) {
        cuda_row_sq_norms(v->data, CM(m));
        return;
    }
#endif
    ON_CPU(v);
    ON_CPU(m);
    struct matrix vm = matrix_from_vector(v, v->dim, 1); /* so that v's rows split with m's */
    if (split_rows(row_sq_norms_part, &vm, m, NULL, NULL)) return;
    for (int r = 0; r < m->rows; r++) {
        const float *p = m->data + (long)r * m->stride;
        v->data[r] = (float)dot_f64(p, p, m->cols);
    }
}

void matrix_set_bernoulli(struct matrix *m, struct rng *r, float keep, float scale) {
    ASSERT(keep >= 0.0f && keep <= 1.0f);
#if HAVE_CUDA
    if (GPU1(m)) { /* drawn on the host in the same order as below, then uploaded */
        long n = (long)m->rows * m->cols;
        float *h = xmalloc((size_t)(n + 1) * sizeof *h);
        for (long i = 0; i < n; i++) h[i] = rng_uniform(r) < keep ? scale : 0.0f;
        matrix_from_host(m, h);
        free(h);
        return;
    }
#endif
    ON_CPU(m);
    for (int i = 0; i < m->rows; i++) {
        float *p = m->data + (long)i * m->stride;
        for (int j = 0; j < m->cols; j++) p[j] = rng_uniform(r) < keep ? scale : 0.0f;
    }
}

/* ---- nonlinearities ---- */

static void sigmoid_part(struct matrix *a, const struct matrix *b, const struct matrix *c,
                         const void *x) {
    matrix_sigmoid(a, b);
}

void matrix_sigmoid(struct matrix *dst, const struct matrix *src) {
    SAME_SHAPE(dst, src);
#if HAVE_CUDA
    if (GPU2(dst, src)) {
        cuda_nonlin(CUDA_SIGMOID, CM(dst), CM(src));
        return;
    }
#endif
    ON_CPU(dst);
    ON_CPU(src);
    if (split_rows(sigmoid_part, dst, src, NULL, NULL)) return;
    struct segs s = segs_of(dst, src, NULL);
    for (long i = 0; i < s.n; i++) {
        float *y = seg_ptr(dst, i);
        const float *x = seg_ptr(src, i);
        for (long j = 0; j < s.len; j++) y[j] = sigmoid_f(x[j]);
    }
}

static void diff_sigmoid_part(struct matrix *a, const struct matrix *b, const struct matrix *c,
                              const void *x) {
    matrix_diff_sigmoid(a, b, c);
}

void matrix_diff_sigmoid(struct matrix *in_deriv, const struct matrix *out_value,
                         const struct matrix *out_deriv) {
    SAME_SHAPE(in_deriv, out_value);
    SAME_SHAPE(in_deriv, out_deriv);
#if HAVE_CUDA
    if (GPU3(in_deriv, out_value, out_deriv)) {
        cuda_diff_nonlin(CUDA_SIGMOID, CM(in_deriv), CM(out_value), CM(out_deriv));
        return;
    }
#endif
    ON_CPU(in_deriv);
    ON_CPU(out_value);
    ON_CPU(out_deriv);
    if (split_rows(diff_sigmoid_part, in_deriv, out_value, out_deriv, NULL)) return;
    struct segs s = segs_of(in_deriv, out_value, out_deriv);
    for (long i = 0; i < s.n; i++) {
        float *d = seg_ptr(in_deriv, i);
        const float *y = seg_ptr(out_value, i), *g = seg_ptr(out_deriv, i);
        for (long j = 0; j < s.len; j++) d[j] = y[j] * (1.0f - y[j]) * g[j];
    }
}

static void tanh_part(struct matrix *a, const struct matrix *b, const struct matrix *c,
                      const void *x) {
    matrix_tanh(a, b);
}

void matrix_tanh(struct matrix *dst, const struct matrix *src) {
    SAME_SHAPE(dst, src);
#if HAVE_CUDA
    if (GPU2(dst, src)) {
        cuda_nonlin(CUDA_TANH, CM(dst), CM(src));
        return;
    }
#endif
    ON_CPU(dst);
    ON_CPU(src);
    if (split_rows(tanh_part, dst, src, NULL, NULL)) return;
    struct segs s = segs_of(dst, src, NULL);
    for (long i = 0; i < s.n; i++) {
        float *y = seg_ptr(dst, i);
        const float *x = seg_ptr(src, i);
        for (long j = 0; j < s.len; j++) y[j] = tanh_f(x[j]);
    }
}

static void diff_tanh_part(struct matrix *a, const struct matrix *b, const struct matrix *c,
                           const void *x) {
    matrix_diff_tanh(a, b, c);
}

void matrix_diff_tanh(struct matrix *in_deriv, const struct matrix *out_value,
                      const struct matrix *out_deriv) {
    SAME_SHAPE(in_deriv, out_value);
    SAME_SHAPE(in_deriv, out_deriv);
#if HAVE_CUDA
    if (GPU3(in_deriv, out_value, out_deriv)) {
        cuda_diff_nonlin(CUDA_TANH, CM(in_deriv), CM(out_value), CM(out_deriv));
        return;
    }
#endif
    ON_CPU(in_deriv);
    ON_CPU(out_value);
    ON_CPU(out_deriv);
    if (split_rows(diff_tanh_part, in_deriv, out_value, out_deriv, NULL)) return;
    struct segs s = segs_of(in_deriv, out_value, out_deriv);
    for (long i = 0; i < s.n; i++) {
        float *d = seg_ptr(in_deriv, i);
        const float *y = seg_ptr(out_value, i), *g = seg_ptr(out_deriv, i);
        for (long j = 0; j < s.len; j++) d[j] = (1.0f - y[j] * y[j]) * g[j];
    }
}

static void relu_part(struct matrix *a, const struct matrix *b, const struct matrix *c,
                      const void *x) {
    matrix_relu(a, b);
}

void matrix_relu(struct matrix *dst, const struct matrix *src) {
    SAME_SHAPE(dst, src);
#if HAVE_CUDA
    if (GPU2(dst, src)) {
        cuda_nonlin(CUDA_RELU, CM(dst), CM(src));
        return;
    }
#endif
    ON_CPU(dst);
    ON_CPU(src);
    if (split_rows(relu_part, dst, src, NULL, NULL)) return;
    struct segs s = segs_of(dst, src, NULL);
    for (long i = 0; i < s.n; i++) {
        float *y = seg_ptr(dst, i);
        const float *x = seg_ptr(src, i);
        for (long j = 0; j < s.len; j++) y[j] = x[j] > 0.0f ? x[j] : 0.0f;
    }
}

static void diff_relu_part(struct matrix *a, const struct matrix *b, const struct matrix *c,
                           const void *x) {
    matrix_diff_relu(a, b, c);
}

void matrix_diff_relu(struct matrix *in_deriv, const struct matrix *out_value,
                      const struct matrix *out_deriv) {
    SAME_SHAPE(in_deriv, out_value);
    SAME_SHAPE(in_deriv, out_deriv);
#if HAVE_CUDA
    if (GPU3(in_deriv, out_value, out_deriv)) {
        cuda_diff_nonlin(CUDA_RELU, CM(in_deriv), CM(out_value), CM(out_deriv));
        return;
    }
#endif
    ON_CPU(in_deriv);
    ON_CPU(out_value);
    ON_CPU(out_deriv);
    if (split_rows(diff_relu_part, in_deriv, out_value, out_deriv, NULL)) return;
    struct segs s = segs_of(in_deriv, out_value, out_deriv);
    for (long i = 0; i < s.n; i++) {
        float *d = seg_ptr(in_deriv, i);
        const float *y = seg_ptr(out_value, i), *g = seg_ptr(out_deriv, i);
        for (long j = 0; j < s.len; j++) {
            float gj = g[j]; /* loaded unconditionally so that the select vectorises */
            d[j] = y[j] > 0.0f ? gj : 0.0f;
        }
    }
}

static void softmax_rows_part(struct matrix *a, const struct matrix *b, const struct matrix *c,
                              const void *x) {
    matrix_softmax_rows(a, b);
}

void matrix_softmax_rows(struct matrix *dst, const struct matrix *src) {
    SAME_SHAPE(dst, src);
#if HAVE_CUDA
    if (GPU2(dst, src)) {
        cuda_softmax_rows(CM(dst), CM(src), 0);
        return;
    }
#endif
    ON_CPU(dst);
    ON_CPU(src);
    if (split_rows(softmax_rows_part, dst, src, NULL, NULL)) return;
    int n = src->cols;
    for (int r = 0; r < src->rows; r++) {
        const float *x = src->data + (long)r * src->stride;
        float *y = dst->data + (long)r * dst->stride;
        float mx = row_max(x, n);
        for (int c = 0; c < n; c++) y[c] = exp_f(x[c] - mx);
        float inv = (float)(1.0 / sum_f64(y, n)); /* >= 1 term equals 1, so no division by 0 */
        for (int c = 0; c < n; c++) y[c] *= inv;
    }
}

static void log_softmax_rows_part(struct matrix *a, const struct matrix *b, const struct matrix *c,
                                  const void *x) {
    matrix_log_softmax_rows(a, b);
}

void matrix_log_softmax_rows(struct matrix *dst, const struct matrix *src) {
    SAME_SHAPE(dst, src);
#if HAVE_CUDA
    if (GPU2(dst, src)) {
        cuda_softmax_rows(CM(dst), CM(src), 1);
        return;
    }
#endif
    ON_CPU(dst);
    ON_CPU(src);
    if (split_rows(log_softmax_rows_part, dst, src, NULL, NULL)) return;
    int n = src->cols;
    for (int r = 0; r < src->rows; r++) {
        const float *x = src->data + (long)r * src->stride;
        float *y = dst->data + (long)r * dst->stride;
        float mx = row_max(x, n);
        for (int c = 0; c < n; c++) y[c] = x[c] - mx;
        float lse = (float)log(sum_exp(y, n));
        for (int c = 0; c < n; c++) y[c] -= lse;
    }
}

static void diff_softmax_part(struct matrix *a, const struct matrix *b, const struct matrix *c,
                              const void *x) {
    matrix_diff_softmax(a, b, c);
}

void matrix_diff_softmax(struct matrix *in_deriv, const struct matrix *out_value,
                         const struct matrix *out_deriv) {
    SAME_SHAPE(in_deriv, out_value);
    SAME_SHAPE(in_deriv, out_deriv);
#if HAVE_CUDA
    if (GPU3(in_deriv, out_value, out_deriv)) {
        cuda_diff_softmax(CM(in_deriv), CM(out_value), CM(out_deriv));
        return;
    }
#endif
    ON_CPU(in_deriv);
    ON_CPU(out_value);
    ON_CPU(out_deriv);
    if (split_rows(diff_softmax_part, in_deriv, out_value, out_deriv, NULL)) return;
    int n = out_value->cols;
    for (int r = 0; r < out_value->rows; r++) {
        const float *y = out_value->data + (long)r * out_value->stride;
        const float *g = out_deriv->data + (long)r * out_deriv->stride;
        float *d = in_deriv->data + (long)r * in_deriv->stride;
        float dot = (float)dot_f64(g, y, n);
        for (int c = 0; c < n; c++) d[c] = y[c] * (g[c] - dot);
    }
}

static void diff_log_softmax_part(struct matrix *a, const struct matrix *b, const struct matrix *c,
                                  const void *x) {
    matrix_diff_log_softmax(a, b, c);
}

void matrix_diff_log_softmax(struct matrix *in_deriv, const struct matrix *out_value,
                             const struct matrix *out_deriv) {
    SAME_SHAPE(in_deriv, out_value);
    SAME_SHAPE(in_deriv, out_deriv);
#if HAVE_CUDA
    if (GPU3(in_deriv, out_value, out_deriv)) {
        cuda_diff_log_softmax(CM(in_deriv), CM(out_value), CM(out_deriv));
        return;
    }
#endif
    ON_CPU(in_deriv);
    ON_CPU(out_value);
    ON_CPU(out_deriv);
    if (split_rows(diff_log_softmax_part, in_deriv, out_value, out_deriv, NULL)) return;
    int n = out_value->cols;
    for (int r = 0; r < out_value->rows; r++) {
        const float *z = out_value->data + (long)r * out_value->stride;
        const float *g = out_deriv->data + (long)r * out_deriv->stride;
        float *d = in_deriv->data + (long)r * in_deriv->stride;
        float sum = (float)sum_f64(g, n);
        for (int c = 0; c < n; c++) d[c] = g[c] - exp_f(z[c]) * sum;
    }
}

/* Group size of a p-norm, or 0 when both sides are empty. */
static int pnorm_group(const struct matrix *in, const struct matrix *out) {
    ASSERT(in->rows == out->rows);
    if (out->cols == 0) {
        ASSERT(in->cols == 0);
        return 0;
    }
    int g = in->cols / out->cols;
    ASSERT(g * out->cols == in->cols);
    return g;
}

void matrix_pnorm(struct matrix *dst, const struct matrix *src, float p) {
    ASSERT(p > 0.0f);
    int g = pnorm_group(src, dst);
#if HAVE_CUDA
    if (GPU2(dst, src)) {
        if (g > 0) cuda_pnorm(CM(dst), CM(src), g, p);
        return;
    }
#endif
    ON_CPU(dst);
    ON_CPU(src);
    for (int r = 0; r < src->rows; r++) {
        const float *x = src->data + (long)r * src->stride;
        float *y = dst->data + (long)r * dst->stride;
        for (int j = 0; j < dst->cols; j++, x += g) {
            double s = 0;
            if (p == 2.0f) {
                for (int k = 0; k < g; k++) s += (double)x[k] * x[k];
                y[j] = (float)sqrt(s);
            } else if (p == 1.0f) {
                for (int k = 0; k < g; k++) s += fabsf(x[k]);
                y[j] = (float)s;
            } else {
                for (int k = 0; k < g; k++) s += pow(fabsf(x[k]), p);
                y[j] = (float)pow(s, 1.0 / p);
            }
        }
    }
}

/* d y / d x_k = sign(x_k) (|x_k| / y)^(p-1); 0 for a group whose output is 0 (all inputs 0). */
void matrix_diff_pnorm(struct matrix *in_deriv, const struct matrix *in_value,
                       const struct matrix *out_value, const struct matrix *out_deriv, float p) {
    SAME_SHAPE(in_deriv, in_value);
    SAME_SHAPE(out_value, out_deriv);
    ASSERT(p > 0.0f);
    int g = pnorm_group(in_value, out_value);
#if HAVE_CUDA
    if (GPU4(in_deriv, in_value, out_value, out_deriv)) {
        if (g > 0)
            cuda_diff_pnorm(CM(in_deriv), CM(in_value), CM(out_value), CM(out_deriv), g, p);
        return;
    }
#endif
    ON_CPU(in_deriv);
    ON_CPU(in_value);
    ON_CPU(out_value);
    ON_CPU(out_deriv);
    for (int r = 0; r < in_value->rows; r++) {
        const float *x = in_value->data + (long)r * in_value->stride;
        const float *y = out_value->data + (long)r * out_value->stride;
        const float *gy = out_deriv->data + (long)r * out_deriv->stride;
        float *d = in_deriv->data + (long)r * in_deriv->stride;
        for (int j = 0; j < out_value->cols; j++, x += g, d += g) {
            float yj = y[j], gj = gy[j];
            if (!(yj > 0.0f)) {
                for (int k = 0; k < g; k++) d[k] = 0.0f;
            } else if (p == 2.0f) {
                float f = gj / yj;
                for (int k = 0; k < g; k++) d[k] = f * x[k];
            } else if (p == 1.0f) {
                for (int k = 0; k < g; k++) d[k] = x[k] > 0 ? gj : (x[k] < 0 ? -gj : 0.0f);
            } else {
                for (int k = 0; k < g; k++) {
                    float t = gj * (float)pow(fabsf(x[k]) / yj, p - 1.0);
                    d[k] = x[k] > 0 ? t : (x[k] < 0 ? -t : 0.0f);
                }
            }
        }
    }
}

/* Kaldi's kNormFloor: 2^-66 on the mean square, whose square root 2^-33 is exact in float. */
#define NORMALIZE_FLOOR 0x1p-66

static void normalize_rows_part(struct matrix *a, const struct matrix *b, const struct matrix *c,
                                const void *x) {
    matrix_normalize_rows(a, b);
}

void matrix_normalize_rows(struct matrix *dst, const struct matrix *src) {
    SAME_SHAPE(dst, src);
#if HAVE_CUDA
    if (GPU2(dst, src)) {
        cuda_normalize_rows(CM(dst), CM(src));
        return;
    }
#endif
    ON_CPU(dst);
    ON_CPU(src);
    if (split_rows(normalize_rows_part, dst, src, NULL, NULL)) return;
    int n = src->cols;
    if (n == 0) return;
    for (int r = 0; r < src->rows; r++) {
        const float *x = src->data + (long)r * src->stride;
        float *y = dst->data + (long)r * dst->stride;
        double ms = dot_f64(x, x, n) / n;
        float f = (float)(1.0 / sqrt(ms > NORMALIZE_FLOOR ? ms : NORMALIZE_FLOOR));
        for (int c = 0; c < n; c++) y[c] = x[c] * f;
    }
}

/* With p = x.x / D and f = max(p, floor)^-1/2, y = f x:
 *   dF/dx = f g - [p > floor] (f^3 / D) (g.x) x. */
static void diff_normalize_rows_part(struct matrix *a, const struct matrix *b,
                                     const struct matrix *c, const void *x) {
    matrix_diff_normalize_rows(a, b, c);
}

void matrix_diff_normalize_rows(struct matrix *in_deriv, const struct matrix *in_value,
                                const struct matrix *out_deriv) {
    SAME_SHAPE(in_deriv, in_value);
    SAME_SHAPE(in_deriv, out_deriv);
#if HAVE_CUDA
    if (GPU3(in_deriv, in_value, out_deriv)) {
        cuda_diff_normalize_rows(CM(in_deriv), CM(in_value), CM(out_deriv));
        return;
    }
#endif
    ON_CPU(in_deriv);
    ON_CPU(in_value);
    ON_CPU(out_deriv);
    if (split_rows(diff_normalize_rows_part, in_deriv, in_value, out_deriv, NULL)) return;
    int n = in_value->cols;
    if (n == 0) return;
    for (int r = 0; r < in_value->rows; r++) {
        const float *x = in_value->data + (long)r * in_value->stride;
        const float *g = out_deriv->data + (long)r * out_deriv->stride;
        float *d = in_deriv->data + (long)r * in_deriv->stride;
        double ms = dot_f64(x, x, n) / n;
        double f = 1.0 / sqrt(ms > NORMALIZE_FLOOR ? ms : NORMALIZE_FLOOR);
        double b = ms > NORMALIZE_FLOOR ? f * f * f / n * dot_f64(g, x, n) : 0.0;
        float ff = (float)f, bf = (float)b;
        for (int c = 0; c < n; c++) d[c] = ff * g[c] - bf * x[c];
    }
}

/* ---- splicing ---- */

static void check_splice(const struct matrix *small, const struct matrix *big, const int *offsets,
                         int num_offsets) {
    ASSERT(num_offsets >= 0 && (num_offsets == 0 || offsets));
    ASSERT((long)small->cols * num_offsets == big->cols);
    for (int k = 0; k < num_offsets; k++)
        ASSERT(offsets[k] >= 0 && (long)big->rows + offsets[k] <= small->rows);
}

void matrix_splice(struct matrix *dst, const struct matrix *src, const int *offsets,
                   int num_offsets) {
    check_splice(src, dst, offsets, num_offsets);
#if HAVE_CUDA
    if (GPU2(dst, src)) {
        cuda_splice(CM(dst), CM(src), offsets, num_offsets);
        return;
    }
#endif
    ON_CPU(dst);
    ON_CPU(src);
    size_t w = src->cols * sizeof(float);
    if (w == 0) return;
    for (int r = 0; r < dst->rows; r++) {
        float *y = dst->data + (long)r * dst->stride;
        for (int k = 0; k < num_offsets; k++)
            memcpy(y + (long)k * src->cols, src->data + (long)(r + offsets[k]) * src->stride, w);
    }
}

void matrix_add_splice_backward(struct matrix *src_deriv, const struct matrix *dst_deriv,
                                const int *offsets, int num_offsets) {
    check_splice(src_deriv, dst_deriv, offsets, num_offsets);
#if HAVE_CUDA
    if (GPU2(src_deriv, dst_deriv)) {
        cuda_add_splice_backward(CM(src_deriv), CM(dst_deriv), offsets, num_offsets);
        return;
    }
#endif
    ON_CPU(src_deriv);
    ON_CPU(dst_deriv);
    int w = src_deriv->cols;
    for (int r = 0; r < dst_deriv->rows; r++) {
        const float *g = dst_deriv->data + (long)r * dst_deriv->stride;
        for (int k = 0; k < num_offsets; k++) {
            float *d = src_deriv->data + (long)(r + offsets[k]) * src_deriv->stride;
            const float *gk = g + (long)k * w;
            for (int c = 0; c < w; c++) d[c] += gk[c];
        }
    }
}

/* ---- sparse access ---- */

#if HAVE_CUDA
static void check_indices(const struct matrix *m, int n, const int *rows, const int *cols) {
    for (int i = 0; i < n; i++)
        ASSERT(rows[i] >= 0 && rows[i] < m->rows && cols[i] >= 0 && cols[i] < m->cols);
}
#endif

void matrix_add_at(struct matrix *m, float alpha, int n, const int *rows, const int *cols,
                   const float *values) {
#if HAVE_CUDA
    if (GPU1(m)) {
        check_indices(m, n, rows, cols);
        cuda_add_at(CM(m), alpha, n, rows, cols, values);
        return;
    }
#endif
    ON_CPU(m);
    for (int i = 0; i < n; i++) {
        ASSERT(rows[i] >= 0 && rows[i] < m->rows && cols[i] >= 0 && cols[i] < m->cols);
        m->data[(long)rows[i] * m->stride + cols[i]] += alpha * values[i];
    }
}

void matrix_get_at(const struct matrix *m, int n, const int *rows, const int *cols, float *out) {
#if HAVE_CUDA
    if (GPU1(m)) {
        check_indices(m, n, rows, cols);
        cuda_get_at(CM(m), n, rows, cols, out);
        return;
    }
#endif
    ON_CPU(m);
    for (int i = 0; i < n; i++) {
        ASSERT(rows[i] >= 0 && rows[i] < m->rows && cols[i] >= 0 && cols[i] < m->cols);
        out[i] = m->data[(long)rows[i] * m->stride + cols[i]];
    }
}

void matrix_row_argmax(const struct matrix *m, int *out) {
    ASSERT(m->cols > 0 || m->rows == 0);
#if HAVE_CUDA
    if (GPU1(m)) {
        cuda_row_argmax(CM(m), out);
        return;
    }
#endif
    ON_CPU(m);
    /* The first c with x[c] > every earlier value: the largest value (NaN never wins, and a
     * NaN in x[0] wins outright), found 16 lanes at a time, then its first occurrence. */
    enum { L = 16 };
    for (int r = 0; r < m->rows; r++) {
        const float *x = m->data + (long)r * m->stride;
        int n = m->cols, best = 0;
        if (x[0] == x[0]) {
            float lane[L], mx = x[0];
            for (int k = 0; k < L; k++) lane[k] = x[0];
            int c = 0;
            for (; c + L <= n; c += L)
                for (int k = 0; k < L; k++) lane[k] = x[c + k] > lane[k] ? x[c + k] : lane[k];
            for (; c < n; c++) mx = x[c] > mx ? x[c] : mx;
            for (int k = 0; k < L; k++) mx = lane[k] > mx ? lane[k] : mx;
            while (!(x[best] == mx)) best++;
        }
        out[r] = best;
    }
}
