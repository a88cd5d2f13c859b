/* cpu: the natural gradient's thin products in one blocked pass (cpu.h cpu_project_out,
 * cpu_project_out_j).
 *
 * For each block of 4 rows of X0 (src, or x itself), kept in L1 between the products:
 *   pass 1: H_b = X0_b W^T, 4 rows x 4 rows of W per register block (W streams from L2);
 *   pass J (cpu_project_out_j only): J += H_b^T X0_b, 2 (AVX-512: 4) rows of J at a time, each
 *           element of J a chain of FMAs over the rows in order (J streams from L2);
 *   pass 2: X_b = X0_b - H_b W, 4 rows x 4 vectors of columns per register block, with the
 *           squared row norms of X0_b and of the result taken from the registers.
 * With H given (the composed path) at rank 20, pass 2 runs over blocks of 32 rows with W's 20
 * vectors of a column block in registers instead (residual_block): the same values.
 * X0's last column may be an implicit column of ones (src a column short of x): it is never
 * read, and x receives 1 - H_b w_{:,D-1} there. Every row is computed by the same sequence of
 * operations whatever rows share its block or its thread, so the result does not depend on the
 * thread split. J, a sum over rows, is summed in fixed parts of the rows (cpu_project_parts:
 * a function of N only) each from zero, and the parts' sums are added in part order, so it
 * does not depend on the thread split either. The vectors are GCC/Clang vector extensions of
 * the target's widest registers: AVX-512 16 floats, AVX 8, otherwise 4 (SSE), so that no
 * vector wider than the target's registers crosses a function boundary (-Wpsabi). */
#include <string.h>

#include "matrix/cpu-internal.h"

#if defined(__AVX__)
#include <immintrin.h>
#endif

#if defined(__AVX512F__)
#define VL 16
#define JC 4 /* vectors of columns per register block of pass J (of 4 rows of J) */
#elif defined(__AVX__)
#define VL 8
#define JC 2
#else
#define VL 4
#define JC 2
#endif
typedef float vf __attribute__((vector_size(VL * sizeof(float))));
#define UNROLL _Pragma("GCC unroll 16")

/* a + b c, or a - b c when `minus` (a constant wherever it is inlined), fused where the target has
 * FMA (ISO C mode does not contract a + b * c itself). */
static inline vf vfma_pm(vf a, vf b, vf c, int minus) {
#if defined(__AVX512F__)
    return minus ? (vf)_mm512_fnmadd_ps((__m512)b, (__m512)c, (__m512)a)
                 : (vf)_mm512_fmadd_ps((__m512)b, (__m512)c, (__m512)a);
#elif defined(__FMA__)
    return minus ? (vf)_mm256_fnmadd_ps((__m256)b, (__m256)c, (__m256)a)
                 : (vf)_mm256_fmadd_ps((__m256)b, (__m256)c, (__m256)a);
#else
    return minus ? a - b * c : a + b * c;
#endif
}
static inline vf vfma(vf a, vf b, vf c) { return vfma_pm(a, b, c, 0); }
static inline vf vfnma(vf a, vf b, vf c) { return vfma_pm(a, b, c, 1); }

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
    return (v[0] + v[2]) + (v[1] + v[3]);
#endif
}

struct project {
    struct cpu_mat x, h, w, src; /* src.data == NULL: x itself */
    int have_h;
    float *in_sq, *out_sq;
    struct cpu_mat j;       /* J (R x D), or data NULL: none (cpu_project_out) */
    struct cpu_mat scratch; /* (parts - 1) R rows of D: parts 1.. sum here, then into j */
    int parts;
    int h_only; /* blocks do pass 1 only */
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

/* One row's columns [k, dk) past its whole vectors, and the ones column if any, one by one; then
 * its squared norms: the vector sums sq_in, sq_out and these columns' squares. */
static inline void row_tail(const struct project *p, const float *x0, float *x, const float *h,
                            int k, int dk, int ones, vf sq_in, vf sq_out, float *in_sq,
                            float *out_sq) {
    float si = vsum(sq_in), so = vsum(sq_out);
    for (int c = k; c < dk + ones; c++) {
        float v = c < dk ? x0[c] : 1.0f;
        si += v * v;
        for (int r = 0; r < p->w.rows; r++) v -= h[r] * cpu_row(p->w, r)[c];
        x[c] = v;
        so += v * v;
    }
    if (in_sq) *in_sq = si;
    if (out_sq) *out_sq = so;
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
    UNROLL
    for (int i = 0; i < nr; i++)
        row_tail(p, x0[i], x[i], h[i], k, dk, ones, sq_in[i], sq_out[i], in_sq ? in_sq + i : NULL,
                 out_sq ? out_sq + i : NULL);
}

/* ---- pass 2 alone at rank RG (h given: the composed path's residual at the input side's
 * rank, 20), W's vectors held in registers ----
 * Rows in blocks of RBLK; for each vector of columns the RG vectors of W are loaded once and
 * every row of the block subtracts its h_i W from its own vector, NR rows in flight. Each
 * element still sees x0 - h_0 w_0 - h_1 w_1 - ... in that order, and each lane of a norm sums
 * its columns in increasing order: the same bits as pass_x (but where an h is -0, which
 * pass_x's splat turns into +0: only the sign of a zero result can differ), which reloads the
 * R x 4 vectors of W for every 4 rows (in the training step on Zen 5, 512 x 1025: 300 us a call where this
 * takes 240). At rank 80 (in registers 20 at a time, each row's vector stored and reloaded
 * between the groups) it was slower than pass_x. */
#if VL == 16
#define RG 20
#elif VL == 8
#define RG 8
#else
#define RG 4
#endif
#define NR 4
#define RBLK 32

static inline vf vset1(float s) {
#if defined(__AVX512F__)
    return (vf)_mm512_set1_ps(s);
#elif defined(__AVX__)
    return (vf)_mm256_set1_ps(s);
#else
    return (vf){s, s, s, s};
#endif
}

/* nr (a constant wherever this is inlined) rows from row b0 + i, columns k .. k + VL - 1. */
static inline __attribute__((always_inline)) void residual_rows(const struct project *p,
                                                                struct cpu_mat s, int b0, int i,
                                                                int nr, int k, const vf *wr,
                                                                vf *sq_in, vf *sq_out) {
    vf acc[NR];
    const float *hr[NR];
    UNROLL
    for (int j = 0; j < nr; j++) {
        hr[j] = cpu_row(p->h, b0 + i + j);
        acc[j] = vload(cpu_row(s, b0 + i + j) + k);
        sq_in[i + j] = vfma(sq_in[i + j], acc[j], acc[j]);
    }
    UNROLL
    for (int r = 0; r < RG; r++)
        UNROLL
        for (int j = 0; j < nr; j++) acc[j] = vfnma(acc[j], vset1(hr[j][r]), wr[r]);
    UNROLL
    for (int j = 0; j < nr; j++) {
        vstore(cpu_row(p->x, b0 + i + j) + k, acc[j]);
        sq_out[i + j] = vfma(sq_out[i + j], acc[j], acc[j]);
    }
}

/* Rows [b0, b0 + nb) of x = x0 - h W with their squared norms, nb <= RBLK, W of RG rows. */
static void residual_block(const struct project *p, int b0, int nb) {
    const struct cpu_mat s = p->src.data ? p->src : p->x;
    int dk = s.cols, kv = dk / VL * VL, ones = s.cols < p->x.cols;
    vf sq_in[RBLK], sq_out[RBLK];
    for (int i = 0; i < nb; i++) sq_in[i] = sq_out[i] = (vf){0};
    for (int k = 0; k < kv; k += VL) {
        vf wr[RG];
        UNROLL
        for (int r = 0; r < RG; r++) wr[r] = vload(cpu_row(p->w, r) + k);
        int i = 0;
        for (; i + NR <= nb; i += NR) residual_rows(p, s, b0, i, NR, k, wr, sq_in, sq_out);
        for (; i < nb; i++) residual_rows(p, s, b0, i, 1, k, wr, sq_in, sq_out);
    }
    for (int i = 0; i < nb; i++) {
        int row = b0 + i;
        row_tail(p, cpu_row(s, row), cpu_row(p->x, row), cpu_row(p->h, row), kv, dk, ones,
                 sq_in[i], sq_out[i], p->in_sq ? p->in_sq + row : NULL,
                 p->out_sq ? p->out_sq + row : NULL);
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
    if (p->h_only) return;
    pass_x(p, x0, x, (const float *const *)h, nr, dk, ones, p->in_sq ? p->in_sq + r : NULL,
           p->out_sq ? p->out_sq + r : NULL);
}

static void project_rows(const struct project *p, int begin, int end) {
    if (p->have_h && !p->h_only && p->w.rows == RG) {
        for (int b = begin; b < end; b += RBLK) residual_block(p, b, end - b < RBLK ? end - b : RBLK);
        return;
    }
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
    struct project p = {x, h, w, src, have_h, in_sq, out_sq, {0}, {0}, 0, 0};
    if (x.rows == 0) return;
    if (parallel_threads() > 1 && x.rows > RB && (long)x.rows * x.cols >= CPU_SPLIT_MIN_ELEMS)
        parallel_run(project_task, &p);
    else
        project_rows(&p, 0, x.rows);
}

/* ---- with J = H^T X0 (cpu_project_out_j) ---- */

/* Measured (docs/BENCHMARKS.md, "Natural gradient's products"): against OpenBLAS's H and J this pass
 * wins on Intel's AVX-512 at rank 20 (5-6% on 1 thread, 22-28% on 2) and loses at rank 80 (up to 12%:
 * pass 1 streams the R x D W from L2 for every 4 rows, OpenBLAS packs it) and on AVX2 at
 * every rank (6-20%: pass 1's 16 accumulators spill there). So it is preferred below this rank
 * on AVX-512 only; a build may set it (-DCPU_PROJECT_J_MAX_RANK=1000: always). */
#ifndef CPU_PROJECT_J_MAX_RANK
#if VL == 16
#define CPU_PROJECT_J_MAX_RANK 40
#else
#define CPU_PROJECT_J_MAX_RANK 0
#endif
#endif

/* The fused passes are measured faster where 512-bit FMAs run at full width (Intel's AVX-512
 * cores); on AMD's Zen 4, which runs them as two 256-bit halves, the products one by one were
 * 1.25-1.45x faster at every rank (bench/project-rate.c), the fused pass 1's register blocks
 * gaining nothing over OpenBLAS's packed kernels. A fact about the CPU, never a timing. */
int cpu_project_fused_preferred(void) {
    static int preferred = -1;
    if (preferred < 0) preferred = VL == 16 && __builtin_cpu_is("intel");
    return preferred;
}

int cpu_project_j_preferred(int rank) {
    return rank < CPU_PROJECT_J_MAX_RANK && cpu_project_fused_preferred();
}

#define PART_ROWS 64 /* rows per part of J's sum, up to MAX_PARTS parts */
#define MAX_PARTS 8

int cpu_project_parts(int n) {
    int parts = (n + PART_ROWS - 1) / PART_ROWS;
    return parts < 1 ? 1 : parts > MAX_PARTS ? MAX_PARTS : parts;
}

#define RJ 4 /* rows of J per register block of pass J */

/* One register block of pass J: jt rows r0 .. r0 + nj - 1, columns k .. k + nc VL - 1, the sum
 * over the part's rows [begin, end) in order (a chain of FMAs from zero per element). */
static inline __attribute__((always_inline)) void j_tile(const struct project *p,
                                                         struct cpu_mat s, struct cpu_mat jt,
                                                         int begin, int end, int r0, int nj,
                                                         int k, int nc) {
    vf acc[RJ][JC];
    UNROLL
    for (int q = 0; q < nj; q++)
        UNROLL
        for (int c = 0; c < nc; c++) acc[q][c] = (vf){0};
    for (int i = begin; i < end; i++) {
        const float *xr = cpu_row(s, i) + k, *hr = cpu_row(p->h, i) + r0;
        vf xv[JC];
        UNROLL
        for (int c = 0; c < nc; c++) xv[c] = vload(xr + c * VL);
        UNROLL
        for (int q = 0; q < nj; q++) {
            vf hv = vsplat(hr[q]);
            UNROLL
            for (int c = 0; c < nc; c++) acc[q][c] = vfma(acc[q][c], hv, xv[c]);
        }
    }
    UNROLL
    for (int q = 0; q < nj; q++)
        UNROLL
        for (int c = 0; c < nc; c++) vstore(cpu_row(jt, r0 + q) + k + c * VL, acc[q][c]);
}

static inline __attribute__((always_inline)) void j_rows(const struct project *p,
                                                         struct cpu_mat s, struct cpu_mat jt,
                                                         int begin, int end, int r0, int nj) {
    int dk = s.cols, k = 0;
    for (; k + JC * VL <= dk; k += JC * VL) j_tile(p, s, jt, begin, end, r0, nj, k, JC);
    for (; k + VL <= dk; k += VL) j_tile(p, s, jt, begin, end, r0, nj, k, 1);
    for (int q = 0; q < nj; q++) {
        for (int c = k; c < dk; c++) {
            float a = 0;
            for (int i = begin; i < end; i++) a += cpu_row(p->h, i)[r0 + q] * cpu_row(s, i)[c];
            cpu_row(jt, r0 + q)[c] = a;
        }
        if (s.cols < p->x.cols) { /* the ones: column sums of h */
            float a = 0;
            for (int i = begin; i < end; i++) a += cpu_row(p->h, i)[r0 + q];
            cpu_row(jt, r0 + q)[dk] = a;
        }
    }
}

/* Pass J over a part's rows [begin, end) (h done, x0 not yet overwritten): jt = h^T x0 there,
 * register blocks of 4 rows of J x JC vectors of columns, the rows of x0 streaming from L2. */
static void j_part(const struct project *p, struct cpu_mat jt, int begin, int end) {
    const struct cpu_mat s = p->src.data ? p->src : p->x;
    int R = p->w.rows, r0 = 0;
    for (; r0 + RJ <= R; r0 += RJ) j_rows(p, s, jt, begin, end, r0, RJ);
    for (; r0 < R; r0++) j_rows(p, s, jt, begin, end, r0, 1);
}

/* Part k's sum: j itself for part 0, else the scratch slot k - 1 (R rows). */
static struct cpu_mat part_sum(const struct project *p, int k) {
    if (k == 0) return p->j;
    struct cpu_mat s = p->scratch;
    s.data = cpu_row(p->scratch, (long)(k - 1) * p->j.rows);
    s.rows = p->j.rows;
    return s;
}

/* dst += src, elementwise, rows [r0, r1) */
static void add_rows(struct cpu_mat dst, struct cpu_mat src, int r0, int r1) {
    for (int r = r0; r < r1; r++) {
        float *d = cpu_row(dst, r);
        const float *s = cpu_row(src, r);
        for (int c = 0; c < dst.cols; c++) d[c] += s[c];
    }
}

/* Thread t takes parts [k0, k1) (the first thread part 0), each summed from zero in row order;
 * the first thread adds its parts into j as it goes, in part order (the part's sum still in
 * L2); the other threads' parts stay in their slots for project_fold_task. */
static void project_j_task(void *arg, int t, int num) {
    const struct project *p = arg;
    int k0, k1;
    parallel_part(p->parts, t, num, 1, &k0, &k1);
    for (int k = k0; k < k1; k++) {
        int begin, end;
        parallel_part(p->x.rows, k, p->parts, RB, &begin, &end);
        struct cpu_mat jt = part_sum(p, k);
        struct project q = *p;
        q.h_only = 1; /* pass 1 for the part, then J from h and x0 (still in L2), then pass 2 */
        project_rows(&q, begin, end);
        j_part(p, jt, begin, end);
        q.h_only = 0;
        q.have_h = 1;
        project_rows(&q, begin, end);
        if (t == 0 && k > 0) add_rows(p->j, jt, 0, p->j.rows);
    }
}

struct fold {
    const struct project *p;
    int k0; /* the first part not yet in j */
};

/* j += the sums of parts k0, k0 + 1, ... in that order, rows of j split over the pool. */
static void project_fold_task(void *arg, int t, int num) {
    const struct fold *f = arg;
    int r0, r1;
    parallel_part(f->p->j.rows, t, num, 1, &r0, &r1);
    for (int k = f->k0; k < f->p->parts; k++) add_rows(f->p->j, part_sum(f->p, k), r0, r1);
}

void cpu_project_out_j(struct cpu_mat x, struct cpu_mat h, struct cpu_mat j, struct cpu_mat w,
                       struct cpu_mat src, float *in_sq, float *out_sq, struct cpu_mat scratch) {
    int parts = cpu_project_parts(x.rows);
    struct project p = {x, h, w, src, 0, in_sq, out_sq, j, scratch, parts, 0};
    if (x.rows == 0) {
        for (int r = 0; r < j.rows; r++) memset(cpu_row(j, r), 0, (size_t)j.cols * sizeof(float));
        return;
    }
    int num = parallel_threads();
    if (num > 1 && parts > 1 && (long)x.rows * x.cols >= CPU_SPLIT_MIN_ELEMS) {
        parallel_run(project_j_task, &p);
        int k0, k1; /* the first thread's parts (none if there are fewer parts than threads) */
        parallel_part(parts, 0, num, 1, &k0, &k1);
        struct fold f = {&p, k1 > 1 ? k1 : 1}; /* part 0 is j itself */
        if (f.k0 < parts) parallel_run(project_fold_task, &f);
    } else {
        project_j_task(&p, 0, 1);
    }
}
