/* cpu: BLAS on the host (OpenBLAS); every cblas_* call of parnet is in this file. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "matrix/cpu-internal.h"

/* Declared here so that no particular cblas.h flavour is needed. */
void openblas_set_num_threads(int num_threads);
char *openblas_get_corename(void);

/* parnet splits its CPU work itself (cpu_split_rows, cpu_gemm) over n threads and keeps OpenBLAS
 * single-threaded: then the elementwise passes and the thin natural-gradient products run on every
 * core too, not just the large products. */
void cpu_set_num_threads(int n) {
    if (n > 0) {
        parallel_set_threads(n);
        openblas_set_num_threads(1);
    }
    /* OpenBLAS 0.3.21 (Debian 12) does not know recent Xeons and falls back to its generic
     * "Prescott" kernels, about 4x slower than its AVX-512 ones on these machines. The kernel is
     * chosen when the library loads, from OPENBLAS_CORETYPE, so all we can do is say so. */
    static int warned;
    if (!warned && !getenv("OPENBLAS_CORETYPE") && !strcmp(openblas_get_corename(), "Prescott") &&
        (__builtin_cpu_supports("avx2") || __builtin_cpu_supports("avx512f"))) {
        warned = 1;
        WARN("OpenBLAS chose its generic Prescott kernels on a CPU with %s; set "
             "OPENBLAS_CORETYPE=%s (the recipes' path.sh does) for about 4x faster matrix products",
             __builtin_cpu_supports("avx512f") ? "AVX-512" : "AVX2",
             __builtin_cpu_supports("avx512f") ? "SKYLAKEX" : "HASWELL");
    }
}

static enum CBLAS_TRANSPOSE cblas_trans(int t) {
    return t ? CblasTrans : CblasNoTrans;
}

/* BLAS wants ld >= max(1, cols); a view's stride is >= cols but may be 0 for 0 columns. */
static int ld_of(struct cpu_mat m) {
    return m.stride > 1 ? m.stride : 1;
}

/* One single-threaded sgemm per share of C's rows (by_rows) or columns. This split is not
 * cpu_split_rows's: which rows of A or B go with a share of C depends on the transposes, and the
 * shares are aligned to 16 so that each stays a good product. */
struct gemm_job {
    enum CBLAS_TRANSPOSE ta, tb;
    int m, n, k;
    float alpha, beta;
    const float *a, *b;
    float *c;
    int lda, ldb, ldc, by_rows;
    int part; /* cpu_gemm_parts: rows (columns) per part; 0: one share per thread */
};
enum { GEMM_SPLIT_ALIGN = 16 };
#define GEMM_SPLIT_MIN_MNK (1 << 20)

/* One sgemm on rows (columns) [lo, hi) of C. */
static void gemm_range(const struct gemm_job *g, int lo, int hi) {
    if (g->by_rows) { /* rows lo..hi of C are those of op(A) */
        const float *a = g->ta == CblasNoTrans ? g->a + (long)lo * g->lda : g->a + lo;
        cblas_sgemm(CblasRowMajor, g->ta, g->tb, hi - lo, g->n, g->k, g->alpha, a, g->lda, g->b,
                    g->ldb, g->beta, g->c + (long)lo * g->ldc, g->ldc);
    } else { /* columns lo..hi of C are those of op(B) */
        const float *b = g->tb == CblasNoTrans ? g->b + lo : g->b + (long)lo * g->ldb;
        cblas_sgemm(CblasRowMajor, g->ta, g->tb, g->m, hi - lo, g->k, g->alpha, g->a, g->lda, b,
                    g->ldb, g->beta, g->c + lo, g->ldc);
    }
}

static void gemm_share(void *p, int t, int num) {
    const struct gemm_job *g = p;
    int lo, hi;
    parallel_part(g->by_rows ? g->m : g->n, t, num, GEMM_SPLIT_ALIGN, &lo, &hi);
    if (lo < hi) gemm_range(g, lo, hi);
}

/* Share t of num of cpu_gemm_parts: whole parts, one sgemm each. */
static void gemm_parts_share(void *p, int t, int num) {
    const struct gemm_job *g = p;
    int len = g->by_rows ? g->m : g->n, parts = (len + g->part - 1) / g->part, lo, hi;
    parallel_part(parts, t, num, 1, &lo, &hi);
    for (int q = lo; q < hi; q++) {
        int end = (q + 1) * g->part;
        gemm_range(g, q * g->part, end < len ? end : len);
    }
}

void cpu_gemm_parts(struct cpu_mat c, float alpha, struct cpu_mat a, int trans_a, struct cpu_mat b,
                    int trans_b, float beta, int part) {
    int m = c.rows, n = c.cols, k = trans_a ? a.rows : a.cols;
    ASSERT(part >= 1);
    if (m == 0 || n == 0 || k == 0) {
        cpu_gemm(c, alpha, a, trans_a, b, trans_b, beta);
        return;
    }
    struct gemm_job g = {cblas_trans(trans_a), cblas_trans(trans_b), m, n, k, alpha, beta,
                         a.data, b.data, c.data, ld_of(a), ld_of(b), ld_of(c), m >= n, part};
    if ((g.by_rows ? m : n) > part)
        parallel_run(gemm_parts_share, &g);
    else
        gemm_range(&g, 0, g.by_rows ? m : n);
}

void cpu_gemm(struct cpu_mat c, float alpha, struct cpu_mat a, int trans_a, struct cpu_mat b,
              int trans_b, float beta) {
    int m = c.rows, n = c.cols, k = trans_a ? a.rows : a.cols;
    if (m == 0 || n == 0) return;
    if (k == 0) {
        if (beta != 1.0f) cpu_scale(c, beta);
        return;
    }
    struct gemm_job g = {cblas_trans(trans_a), cblas_trans(trans_b), m, n, k, alpha, beta,
                         a.data, b.data, c.data, ld_of(a), ld_of(b), ld_of(c), m >= n, 0};
    if (parallel_threads() > 1 && (double)m * n * k >= GEMM_SPLIT_MIN_MNK &&
        (g.by_rows ? m : n) >= 2 * GEMM_SPLIT_ALIGN)
        parallel_run(gemm_share, &g);
    else
        gemm_share(&g, 0, 1);
}

void cpu_syrk(struct cpu_mat c, float alpha, struct cpu_mat a, int trans, float beta) {
    int n = c.rows, k = trans ? a.rows : a.cols;
    if (n == 0) return;
    if (k == 0) {
        if (beta != 1.0f) cpu_scale(c, beta);
        return;
    }
    cblas_ssyrk(CblasRowMajor, CblasLower, cblas_trans(trans), n, k, alpha, a.data, ld_of(a),
                beta, c.data, ld_of(c));
    /* ssyrk wrote the lower triangle only; mirror it. */
    for (int i = 0; i < n; i++) {
        const float *row = cpu_row(c, i);
        for (int j = 0; j < i; j++) c.data[(long)j * c.stride + i] = row[j];
    }
}

/* A matrix-vector product in fixed parts of its output (GEMV_PART elements: rows of m, or with
 * trans its columns), shared out over the pool: the same calls whatever the threads. */
enum { GEMV_PART = 256 };
struct gemv_job {
    float *y, alpha, beta;
    struct cpu_mat m;
    int trans, parts;
    const float *x;
};

static void gemv_part(const struct gemv_job *g, int q) {
    int out = g->trans ? g->m.cols : g->m.rows, lo = q * GEMV_PART;
    int n = out - lo < GEMV_PART ? out - lo : GEMV_PART;
    if (g->trans)
        cblas_sgemv(CblasRowMajor, CblasTrans, g->m.rows, n, g->alpha, g->m.data + lo,
                    ld_of(g->m), g->x, 1, g->beta, g->y + lo, 1);
    else
        cblas_sgemv(CblasRowMajor, CblasNoTrans, n, g->m.cols, g->alpha,
                    g->m.data + (long)lo * g->m.stride, ld_of(g->m), g->x, 1, g->beta, g->y + lo, 1);
}

static void gemv_share(void *p, int t, int num) {
    const struct gemv_job *g = p;
    int lo, hi;
    parallel_part(g->parts, t, num, 1, &lo, &hi);
    for (int q = lo; q < hi; q++) gemv_part(g, q);
}

void cpu_gemv(float *y, float alpha, struct cpu_mat m, int trans, const float *x, float beta) {
    int out = trans ? m.cols : m.rows, in = trans ? m.rows : m.cols;
    if (out == 0) return;
    if (in == 0) {
        struct cpu_mat ym = {y, 1, out, out};
        if (beta != 1.0f) cpu_scale(ym, beta);
        return;
    }
    struct gemv_job g = {y, alpha, beta, m, trans, (out + GEMV_PART - 1) / GEMV_PART, x};
    /* natural gradient's bias step, Yhat^T xhat_1 (512 x 1024): 2 MB read on one thread while
     * the others waited */
    if (g.parts > 1 && (long)out * in >= CPU_SPLIT_MIN_ELEMS)
        parallel_run(gemv_share, &g);
    else
        cblas_sgemv(CblasRowMajor, cblas_trans(trans), m.rows, m.cols, alpha, m.data, ld_of(m), x,
                    1, beta, y, 1);
}

void cpu_ger(struct cpu_mat m, float alpha, const float *a, const float *b) {
    if (m.rows == 0 || m.cols == 0) return;
    cblas_sger(CblasRowMajor, m.rows, m.cols, alpha, a, 1, b, 1, m.data, ld_of(m));
}
