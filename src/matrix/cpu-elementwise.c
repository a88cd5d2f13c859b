/* cpu: fills, copies, elementwise operations, nonlinearities, softmax, p-norm, normalize.
 * The inner loops are written straight over a row (or over the whole block when it is
 * contiguous) so that the compiler vectorises them; exp is our own branch-free polynomial for the
 * same reason (libm's expf is a call that blocks vectorisation). Each body below is a cpu_kernel
 * over the views in its struct cpu_args, run whole or per thread by cpu_split_rows. */
#if defined(__GNUC__) && !defined(__clang__)
/* GCC 12 at -O2 vectorises only loops needing no epilogue; these loops need one. Without
 * no-trapping-math it will not turn the selects in exp_f into blends (we never read FP flags). */
#pragma GCC optimize("vect-cost-model=dynamic", "no-trapping-math")
#endif

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "matrix/cpu-internal.h"

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

/* The elementwise bodies below run over "segments" (cpu-internal.h). ELEMENTWISE(name, y, x, z,
 * stmt) defines the cpu_kernel `name` running `stmt` for every element j, with y, x and z the
 * segment of m[0], m[1] and m[2] (an operand the kernel does not have is m[0] again, unused) and
 * alpha the scalar. The scalar is read into a local first so that stores through y cannot be
 * taken to change it, and the loop stays one the compiler vectorises. */
#define SEG(k) seg_ptr(a, k, i)
#define ELEMENTWISE(name, y, x, z, stmt)                                  \
    static double name(const struct cpu_args *a) {                        \
        struct segs s = segs_of(a);                                       \
        float alpha = a->alpha;                                           \
        (void)alpha;                                                      \
        for (long i = 0; i < s.n; i++) {                                  \
            float *y = SEG(0);                                            \
            const float *x = SEG(a->n > 1 ? 1 : 0), *z = SEG(a->n > 2 ? 2 : 0); \
            (void)x;                                                      \
            (void)z;                                                      \
            for (long j = 0; j < s.len; j++) {                            \
                stmt;                                                     \
            }                                                             \
        }                                                                 \
        return 0;                                                         \
    }

/* ---- fills and copies ---- */

static double copy_k(const struct cpu_args *a) {
    struct segs s = segs_of(a);
    for (long i = 0; i < s.n; i++)
        memmove(SEG(0), SEG(1), s.len * sizeof(float));
    return 0;
}

void cpu_copy(struct cpu_mat dst, struct cpu_mat src) {
    if (dst.data == src.data) return;
    struct cpu_args a = {.m = {dst, src}, .n = 2};
    cpu_split_flat(copy_k, &a);
}

void cpu_copy_transposed(struct cpu_mat dst, struct cpu_mat src) {
    /* Blocks of 32 x 32 keep both sides in cache. */
    const int bs = 32;
    for (int r0 = 0; r0 < src.rows; r0 += bs) {
        int r1 = r0 + bs < src.rows ? r0 + bs : src.rows;
        for (int c0 = 0; c0 < src.cols; c0 += bs) {
            int c1 = c0 + bs < src.cols ? c0 + bs : src.cols;
            for (int r = r0; r < r1; r++) {
                const float *s = cpu_row(src, r);
                for (int c = c0; c < c1; c++) dst.data[(long)c * dst.stride + r] = s[c];
            }
        }
    }
}

static double set_zero_k(const struct cpu_args *a) {
    struct segs s = segs_of(a);
    for (long i = 0; i < s.n; i++) memset(SEG(0), 0, s.len * sizeof(float));
    return 0;
}

void cpu_set_zero(struct cpu_mat m) {
    struct cpu_args a = {.m = {m}, .n = 1};
    cpu_split_flat(set_zero_k, &a);
}

ELEMENTWISE(set_const_k, y, x, z, y[j] = alpha)

void cpu_set_const(struct cpu_mat m, float value) {
    struct cpu_args a = {.m = {m}, .n = 1, .alpha = value};
    cpu_split_flat(set_const_k, &a);
}

static double set_rows_k(const struct cpu_args *a) {
    struct cpu_mat m = a->m[0];
    for (int r = 0; r < m.rows; r++) memcpy(cpu_row(m, r), a->v, (size_t)m.cols * sizeof(float));
    return 0;
}

void cpu_set_rows(struct cpu_mat m, const float *v) {
    struct cpu_args a = {.m = {m}, .n = 1, .v = v};
    cpu_split_rows(set_rows_k, &a);
}

/* ---- elementwise ---- */

static double scale_k(const struct cpu_args *a) {
    struct segs s = segs_of(a);
    float alpha = a->alpha;
    for (long i = 0; i < s.n; i++) {
        float *p = SEG(0);
        if (alpha == 0.0f) memset(p, 0, s.len * sizeof(float)); /* BLAS: 0 * NaN = 0 */
        else for (long j = 0; j < s.len; j++) p[j] *= alpha;
    }
    return 0;
}

void cpu_scale(struct cpu_mat m, float alpha) {
    struct cpu_args a = {.m = {m}, .n = 1, .alpha = alpha};
    cpu_split_flat(scale_k, &a);
}

ELEMENTWISE(add_k, y, x, z, y[j] += alpha * x[j])

void cpu_add(struct cpu_mat m, float alpha, struct cpu_mat x) {
    struct cpu_args a = {.m = {m, x}, .n = 2, .alpha = alpha};
    cpu_split_flat(add_k, &a);
}

ELEMENTWISE(add_const_k, y, x, z, y[j] += alpha)

void cpu_add_const(struct cpu_mat m, float alpha) {
    struct cpu_args a = {.m = {m}, .n = 1, .alpha = alpha};
    cpu_split_flat(add_const_k, &a);
}

void cpu_add_diag(struct cpu_mat m, float alpha) {
    for (int i = 0; i < m.rows; i++) m.data[(long)i * m.stride + i] += alpha;
}

ELEMENTWISE(mul_elements_k, y, x, z, y[j] *= x[j])

void cpu_mul_elements(struct cpu_mat m, struct cpu_mat x) {
    struct cpu_args a = {.m = {m, x}, .n = 2};
    cpu_split_flat(mul_elements_k, &a);
}

/* m[0] is rows x cols, m[1] the scale as a rows x 1 column (cut with the rows). */
static double mul_rows_k(const struct cpu_args *a) {
    struct cpu_mat m = a->m[0];
    for (int r = 0; r < m.rows; r++) {
        float *p = cpu_row(m, r), f = a->m[1].data[r];
        for (int c = 0; c < m.cols; c++) p[c] *= f;
    }
    return 0;
}

void cpu_mul_rows(struct cpu_mat m, const float *scale) {
    struct cpu_args a = {.m = {m, {(float *)scale, m.rows, 1, 1}}, .n = 2};
    cpu_split_rows(mul_rows_k, &a);
}

static double mul_cols_k(const struct cpu_args *a) {
    struct cpu_mat m = a->m[0];
    const float *q = a->v;
    for (int r = 0; r < m.rows; r++) {
        float *p = cpu_row(m, r);
        for (int c = 0; c < m.cols; c++) p[c] *= q[c];
    }
    return 0;
}

void cpu_mul_cols(struct cpu_mat m, const float *scale) {
    struct cpu_args a = {.m = {m}, .n = 1, .v = scale};
    cpu_split_rows(mul_cols_k, &a);
}

static double add_vec_to_rows_k(const struct cpu_args *a) {
    struct cpu_mat m = a->m[0];
    const float *q = a->v;
    float alpha = a->alpha;
    for (int r = 0; r < m.rows; r++) {
        float *p = cpu_row(m, r);
        for (int c = 0; c < m.cols; c++) p[c] += alpha * q[c];
    }
    return 0;
}

void cpu_add_vec_to_rows(struct cpu_mat m, float alpha, const float *v) {
    struct cpu_args a = {.m = {m}, .n = 1, .alpha = alpha, .v = v};
    cpu_split_rows(add_vec_to_rows_k, &a);
}

/* ---- nonlinearities: m[0] = dst or in_deriv, m[1] = src or out_value, m[2] = out_deriv ---- */

ELEMENTWISE(sigmoid_k, y, x, z, y[j] = sigmoid_f(x[j]))

ELEMENTWISE(tanh_k, y, x, z, y[j] = tanh_f(x[j]))

ELEMENTWISE(relu_k, y, x, z, y[j] = x[j] > 0.0f ? x[j] : 0.0f)

/* d = in_deriv, y = out_value, g = out_deriv */
ELEMENTWISE(diff_sigmoid_k, d, y, g, d[j] = y[j] * (1.0f - y[j]) * g[j])

ELEMENTWISE(diff_tanh_k, d, y, g, d[j] = (1.0f - y[j] * y[j]) * g[j])

/* g is loaded unconditionally so that the select vectorises */
ELEMENTWISE(diff_relu_k, d, y, g, float gj = g[j]; d[j] = y[j] > 0.0f ? gj : 0.0f)

void cpu_nonlin(int which, struct cpu_mat dst, struct cpu_mat src) {
    static const cpu_kernel k[] = {[CPU_SIGMOID] = sigmoid_k, [CPU_TANH] = tanh_k,
                                   [CPU_RELU] = relu_k};
    ASSERT(which >= 0 && which <= CPU_RELU);
    struct cpu_args a = {.m = {dst, src}, .n = 2};
    cpu_split_rows(k[which], &a);
}

void cpu_diff_nonlin(int which, struct cpu_mat in_deriv, struct cpu_mat out_value,
                     struct cpu_mat out_deriv) {
    static const cpu_kernel k[] = {[CPU_SIGMOID] = diff_sigmoid_k, [CPU_TANH] = diff_tanh_k,
                                   [CPU_RELU] = diff_relu_k};
    ASSERT(which >= 0 && which <= CPU_RELU);
    struct cpu_args a = {.m = {in_deriv, out_value, out_deriv}, .n = 3};
    cpu_split_rows(k[which], &a);
}

/* ---- p-norm over groups of a->which inputs ---- */

static double pnorm_k(const struct cpu_args *a) {
    struct cpu_mat dst = a->m[0], src = a->m[1];
    int g = a->which;
    float p = a->p;
    for (int r = 0; r < src.rows; r++) {
        const float *x = cpu_row(src, r);
        float *y = cpu_row(dst, r);
        for (int j = 0; j < dst.cols; j++, x += g) {
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
    return 0;
}

void cpu_pnorm(struct cpu_mat dst, struct cpu_mat src, int group, float p) {
    struct cpu_args a = {.m = {dst, src}, .n = 2, .p = p, .which = group};
    cpu_split_rows(pnorm_k, &a);
}

/* d y / d x_k = sign(x_k) (|x_k| / y)^(p-1); 0 for a group whose output is 0 (all inputs 0).
 * m[0] = in_deriv, m[1] = in_value, m[2] = out_value, m[3] = out_deriv. */
static double diff_pnorm_k(const struct cpu_args *a) {
    struct cpu_mat in_value = a->m[1], out_value = a->m[2];
    int g = a->which;
    float p = a->p;
    for (int r = 0; r < in_value.rows; r++) {
        const float *x = cpu_row(in_value, r);
        const float *y = cpu_row(out_value, r);
        const float *gy = cpu_row(a->m[3], r);
        float *d = cpu_row(a->m[0], r);
        for (int j = 0; j < out_value.cols; j++, x += g, d += g) {
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
    return 0;
}

void cpu_diff_pnorm(struct cpu_mat in_deriv, struct cpu_mat in_value, struct cpu_mat out_value,
                    struct cpu_mat out_deriv, int group, float p) {
    struct cpu_args a = {.m = {in_deriv, in_value, out_value, out_deriv}, .n = 4, .p = p,
                         .which = group};
    cpu_split_rows(diff_pnorm_k, &a);
}

/* ---- row-wise: softmax, log-softmax, normalize ---- */

/* Each row less its maximum, y = x - max(x); then softmax: exp(y) / sum(exp(y)), or log-softmax
 * (a->which): y - log(sum(exp(y))). */
static double softmax_k(const struct cpu_args *a) {
    struct cpu_mat dst = a->m[0], src = a->m[1];
    int n = src.cols;
    for (int r = 0; r < src.rows; r++) {
        const float *x = cpu_row(src, r);
        float *y = cpu_row(dst, r);
        float mx = row_max(x, n);
        if (a->which) {
            for (int c = 0; c < n; c++) y[c] = x[c] - mx;
            float lse = (float)log(sum_exp(y, n));
            for (int c = 0; c < n; c++) y[c] -= lse;
        } else {
            for (int c = 0; c < n; c++) y[c] = exp_f(x[c] - mx);
            float inv = (float)(1.0 / sum_f64(y, n)); /* >= 1 term equals 1: no division by 0 */
            for (int c = 0; c < n; c++) y[c] *= inv;
        }
    }
    return 0;
}

void cpu_softmax_rows(struct cpu_mat dst, struct cpu_mat src, int log_softmax) {
    struct cpu_args a = {.m = {dst, src}, .n = 2, .which = log_softmax};
    cpu_split_rows(softmax_k, &a);
}

/* softmax: in_deriv[r] = y[r] .* (g[r] - <g[r], y[r]>);
 * log-softmax (a->which; y = z, the log-probabilities): in_deriv[r] = g[r] - exp(z[r]) sum(g[r]) */
static double diff_softmax_k(const struct cpu_args *a) {
    struct cpu_mat out_value = a->m[1];
    int n = out_value.cols;
    for (int r = 0; r < out_value.rows; r++) {
        const float *y = cpu_row(out_value, r), *g = cpu_row(a->m[2], r);
        float *d = cpu_row(a->m[0], r);
        if (a->which) {
            float sum = (float)sum_f64(g, n);
            for (int c = 0; c < n; c++) d[c] = g[c] - exp_f(y[c]) * sum;
        } else {
            float dot = (float)dot_f64(g, y, n);
            for (int c = 0; c < n; c++) d[c] = y[c] * (g[c] - dot);
        }
    }
    return 0;
}

void cpu_diff_softmax(struct cpu_mat in_deriv, struct cpu_mat out_value, struct cpu_mat out_deriv,
                      int log_softmax) {
    struct cpu_args a = {.m = {in_deriv, out_value, out_deriv}, .n = 3, .which = log_softmax};
    cpu_split_rows(diff_softmax_k, &a);
}

/* Kaldi's kNormFloor: 2^-66 on the mean square, whose square root 2^-33 is exact in float. */
#define NORMALIZE_FLOOR 0x1p-66

static double normalize_k(const struct cpu_args *a) {
    struct cpu_mat dst = a->m[0], src = a->m[1];
    int n = src.cols;
    if (n == 0) return 0;
    for (int r = 0; r < src.rows; r++) {
        const float *x = cpu_row(src, r);
        float *y = cpu_row(dst, r);
        double ms = dot_f64(x, x, n) / n;
        float f = (float)(1.0 / sqrt(ms > NORMALIZE_FLOOR ? ms : NORMALIZE_FLOOR));
        for (int c = 0; c < n; c++) y[c] = x[c] * f;
    }
    return 0;
}

void cpu_normalize_rows(struct cpu_mat dst, struct cpu_mat src) {
    struct cpu_args a = {.m = {dst, src}, .n = 2};
    cpu_split_rows(normalize_k, &a);
}

/* With p = x.x / D and f = max(p, floor)^-1/2, y = f x:
 *   dF/dx = f g - [p > floor] (f^3 / D) (g.x) x. */
static double diff_normalize_k(const struct cpu_args *a) {
    struct cpu_mat in_value = a->m[1];
    int n = in_value.cols;
    if (n == 0) return 0;
    for (int r = 0; r < in_value.rows; r++) {
        const float *x = cpu_row(in_value, r), *g = cpu_row(a->m[2], r);
        float *d = cpu_row(a->m[0], r);
        double ms = dot_f64(x, x, n) / n;
        double f = 1.0 / sqrt(ms > NORMALIZE_FLOOR ? ms : NORMALIZE_FLOOR);
        double b = ms > NORMALIZE_FLOOR ? f * f * f / n * dot_f64(g, x, n) : 0.0;
        float ff = (float)f, bf = (float)b;
        for (int c = 0; c < n; c++) d[c] = ff * g[c] - bf * x[c];
    }
    return 0;
}

void cpu_diff_normalize_rows(struct cpu_mat in_deriv, struct cpu_mat in_value,
                             struct cpu_mat out_deriv) {
    struct cpu_args a = {.m = {in_deriv, in_value, out_deriv}, .n = 3};
    cpu_split_rows(diff_normalize_k, &a);
}

/* Drawn in row order, one element at a time (no split: the stream is sequential). */
void cpu_set_random(struct cpu_mat m, struct rng *r, int kind, float a, float b) {
    for (int i = 0; i < m.rows; i++) {
        float *p = m.data + (long)i * m.stride;
        if (kind == CPU_RANDN)
            for (int j = 0; j < m.cols; j++) p[j] = a * rng_gauss(r);
        else
            for (int j = 0; j < m.cols; j++) p[j] = rng_uniform(r) < a ? b : 0.0f;
    }
}
