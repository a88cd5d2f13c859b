/* cpu: the natural gradient's thin products in one blocked pass (cpu.h cpu_project_out).
 *
 * For each block of 4 rows of X0 (src, or x itself), kept in L1 between the two products:
 *   pass 1: H_b = X0_b W^T, 4 rows x 4 rows of W per register block (W streams from L2);
 *   pass 2: X_b = X0_b - H_b W, 4 rows x 4 vectors of columns per register block, with the
 *           squared row norms of X0_b and of the result taken from the registers.
 * X0's last column may be an implicit column of ones (src a column short of x): it is never
 * read, and x receives 1 - H_b w_{:,D-1} there. Every row is computed by the same sequence of
 * operations whatever rows share its block or its thread, so the result does not depend on the
 * thread split. The vectors are GCC/Clang vector extensions of the widest width the target
 * compiles for (AVX-512: 16 floats; otherwise 8, which is two SSE registers without AVX). */
#include <string.h>

#include "matrix/cpu-internal.h"

#if defined(__AVX__)
#include <immintrin.h>
#endif

#if defined(__AVX512F__)
#define VL 16
#else
#define VL 8
#endif
typedef float vf __attribute__((vector_size(VL * sizeof(float))));
#define UNROLL _Pragma("GCC unroll 16")

/* a + b c, fused where the target has FMA (ISO C mode does not contract a + b * c itself). */
static inline vf vfma(vf a, vf b, vf c) {
#if defined(__AVX512F__)
    return (vf)_mm512_fmadd_ps((__m512)b, (__m512)c, (__m512)a);
#elif defined(__FMA__)
    return (vf)_mm256_fmadd_ps((__m256)b, (__m256)c, (__m256)a);
#else
    return a + b * c;
#endif
}
/* a - b c */
static inline vf vfnma(vf a, vf b, vf c) {
#if defined(__AVX512F__)
    return (vf)_mm512_fnmadd_ps((__m512)b, (__m512)c, (__m512)a);
#elif defined(__FMA__)
    return (vf)_mm256_fnmadd_ps((__m256)b, (__m256)c, (__m256)a);
#else
    return a - b * c;
#endif
}

#define RB 4 /* rows of X per block */
#define RW 4 /* rows of W per register block of pass 1 */
#define CV 4 /* vectors of columns per register block of pass 2 */

static inline vf vload(const float *p) {
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void vstore(float *p, vf v) {
    memcpy(p, &v, sizeof v);
}
static inline vf vsplat(float s) {
    return (vf){0} + s;
}
static inline float vsum(vf v) { /* a fixed tree of adds */
#if defined(__AVX512F__)
    return _mm512_reduce_add_ps((__m512)v);
#elif defined(__AVX__)
    __m128 q = _mm_add_ps(_mm256_castps256_ps128((__m256)v), _mm256_extractf128_ps((__m256)v, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
#else
    float s = 0;
    UNROLL
    for (int l = 0; l < VL; l++) s += v[l];
    return s;
#endif
}

struct project {
    struct cpu_mat x, h, w, src; /* src.data == NULL: x itself */
    int have_h;
    float *in_sq, *out_sq;
};

/* Pass 1 for rows x0[0..nr) (row pointers), columns [0, dk) read, plus ones: h[i][r]. */
static inline __attribute__((always_inline)) void pass_h(const struct project *p,
                                                         const float *const *x0, float *const *h,
                                                         int nr, int dk, int ones) {
    int R = p->w.rows, kv = dk / VL * VL;
    for (int r0 = 0; r0 < R; r0 += RW) {
        int nw = R - r0 < RW ? R - r0 : RW;
        const float *w[RW];
        UNROLL
        for (int j = 0; j < RW; j++) w[j] = cpu_row(p->w, r0 + (j < nw ? j : 0));
        vf acc[RB][RW];
        UNROLL
        for (int i = 0; i < RB; i++)
            UNROLL
            for (int j = 0; j < RW; j++) acc[i][j] = (vf){0};
        for (int k = 0; k < kv; k += VL) {
            vf xv[RB];
            UNROLL
            for (int i = 0; i < nr; i++) xv[i] = vload(x0[i] + k);
            UNROLL
            for (int j = 0; j < RW; j++) {
                vf wv = vload(w[j] + k);
                UNROLL
                for (int i = 0; i < nr; i++) acc[i][j] = vfma(acc[i][j], xv[i], wv);
            }
        }
        UNROLL
        for (int i = 0; i < nr; i++)
            UNROLL
            for (int j = 0; j < nw; j++) {
                float s = vsum(acc[i][j]);
                for (int k = kv; k < dk; k++) s += x0[i][k] * w[j][k];
                if (ones) s += w[j][dk];
                h[i][r0 + j] = s;
            }
    }
}

/* Pass 2: x[i] = x0[i] - h[i] W over columns [0, dk), the ones column if any, the norms. */
static inline __attribute__((always_inline)) void pass_x(const struct project *p,
                                                         const float *const *x0, float *const *x,
                                                         const float *const *h, int nr, int dk,
                                                         int ones, float *in_sq, float *out_sq) {
    int R = p->w.rows;
    vf sq_in[RB], sq_out[RB];
    UNROLL
    for (int i = 0; i < RB; i++) sq_in[i] = sq_out[i] = (vf){0};
    int k = 0;
    for (; k + CV * VL <= dk; k += CV * VL) {
        vf acc[RB][CV];
        UNROLL
        for (int i = 0; i < nr; i++)
            UNROLL
            for (int c = 0; c < CV; c++) {
                acc[i][c] = vload(x0[i] + k + c * VL);
                sq_in[i] = vfma(sq_in[i], acc[i][c], acc[i][c]);
            }
        for (int r = 0; r < R; r++) {
            const float *wr = cpu_row(p->w, r) + k;
            vf wv[CV];
            UNROLL
            for (int c = 0; c < CV; c++) wv[c] = vload(wr + c * VL);
            UNROLL
            for (int i = 0; i < nr; i++) {
                vf hv = vsplat(h[i][r]);
                UNROLL
                for (int c = 0; c < CV; c++) acc[i][c] = vfnma(acc[i][c], hv, wv[c]);
            }
        }
        UNROLL
        for (int i = 0; i < nr; i++)
            UNROLL
            for (int c = 0; c < CV; c++) {
                vstore(x[i] + k + c * VL, acc[i][c]);
                sq_out[i] = vfma(sq_out[i], acc[i][c], acc[i][c]);
            }
    }
    for (; k + VL <= dk; k += VL) {
        vf acc[RB];
        UNROLL
        for (int i = 0; i < nr; i++) {
            acc[i] = vload(x0[i] + k);
            sq_in[i] = vfma(sq_in[i], acc[i], acc[i]);
        }
        for (int r = 0; r < R; r++) {
            vf wv = vload(cpu_row(p->w, r) + k);
            UNROLL
            for (int i = 0; i < nr; i++) acc[i] = vfnma(acc[i], vsplat(h[i][r]), wv);
        }
        UNROLL
        for (int i = 0; i < nr; i++) {
            vstore(x[i] + k, acc[i]);
            sq_out[i] = vfma(sq_out[i], acc[i], acc[i]);
        }
    }
    int end = dk + (ones ? 1 : 0);
    UNROLL
    for (int i = 0; i < nr; i++) {
        float si = vsum(sq_in[i]), so = vsum(sq_out[i]);
        for (int c = k; c < end; c++) {
            float v = c < dk ? x0[i][c] : 1.0f;
            si += v * v;
            for (int r = 0; r < R; r++) v -= h[i][r] * cpu_row(p->w, r)[c];
            x[i][c] = v;
            so += v * v;
        }
        if (in_sq) in_sq[i] = si;
        if (out_sq) out_sq[i] = so;
    }
}

static inline __attribute__((always_inline)) void block(const struct project *p, int r, int nr) {
    const float *x0[RB];
    float *x[RB], *h[RB];
    const struct cpu_mat s = p->src.data ? p->src : p->x;
    UNROLL
    for (int i = 0; i < RB; i++) {
        int ri = r + (i < nr ? i : 0);
        x0[i] = cpu_row(s, ri);
        x[i] = cpu_row(p->x, ri);
        h[i] = cpu_row(p->h, ri);
    }
    int dk = s.cols, ones = s.cols < p->x.cols;
    if (!p->have_h) pass_h(p, x0, h, nr, dk, ones);
    pass_x(p, x0, x, (const float *const *)h, nr, dk, ones, p->in_sq ? p->in_sq + r : NULL,
           p->out_sq ? p->out_sq + r : NULL);
}

static void project_rows(const struct project *p, int begin, int end) {
    int r = begin;
    for (; r + RB <= end; r += RB) block(p, r, RB);
    switch (end - r) { /* the same code with fewer rows, so every row sees the same sums */
    case 3: block(p, r, 3); break;
    case 2: block(p, r, 2); break;
    case 1: block(p, r, 1); break;
    default: break;
    }
}

static void project_task(void *arg, int t, int num) {
    const struct project *p = arg;
    int begin, end;
    parallel_part(p->x.rows, t, num, RB, &begin, &end);
    project_rows(p, begin, end);
}

void cpu_project_out(struct cpu_mat x, struct cpu_mat h, struct cpu_mat w, int have_h,
                     struct cpu_mat src, float *in_sq, float *out_sq) {
    struct project p = {x, h, w, src, have_h, in_sq, out_sq};
    if (x.rows == 0) return;
    if (parallel_threads() > 1 && x.rows > RB && (long)x.rows * x.cols >= CPU_SPLIT_MIN_ELEMS)
        parallel_run(project_task, &p);
    else
        project_rows(&p, 0, x.rows);
}
