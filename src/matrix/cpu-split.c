/* cpu: the thread split of the CPU kernels (cpu.h "Threads"). */
#include <stdlib.h>

#include "matrix/cpu-internal.h"

struct split_job {
    cpu_kernel k;
    const struct cpu_args *a;
    int by_cols;
    double partial[PARALLEL_MAX_THREADS];
};

static long largest_operand(const struct cpu_args *a) {
    long elems = 0;
    for (int j = 0; j < a->n; j++) {
        long e = (long)a->m[j].rows * a->m[j].cols;
        if (e > elems) elems = e;
    }
    return elems;
}

/* Operand j cut to rows (or columns) lo..hi when it is aligned with m[0] that way. */
static struct cpu_mat cut(struct cpu_mat m, struct cpu_mat first, int by_cols, int lo, int hi) {
    if (by_cols && m.cols == first.cols) {
        m.data += lo;
        m.cols = hi - lo;
    } else if (!by_cols && m.rows == first.rows) {
        m.data += (long)lo * m.stride;
        m.rows = hi - lo;
    }
    return m;
}

static void split_task(void *p, int t, int num) {
    struct split_job *j = p;
    const struct cpu_args *a = j->a;
    int lo, hi;
    if (j->by_cols) parallel_part(a->m[0].cols, t, num, 16, &lo, &hi);
    else parallel_part(a->m[0].rows, t, num, 1, &lo, &hi);
    j->partial[t] = 0.0;
    if (lo >= hi) return;
    struct cpu_args share = *a;
    for (int i = 0; i < a->n; i++) share.m[i] = cut(a->m[i], a->m[0], j->by_cols, lo, hi);
    j->partial[t] = j->k(&share);
}

static double split(cpu_kernel k, const struct cpu_args *a, int by_cols) {
    int num = parallel_threads();
    struct split_job j = {.k = k, .a = a, .by_cols = by_cols};
    parallel_run(split_task, &j);
    double s = 0;
    for (int t = 0; t < num; t++) s += j.partial[t];
    return s;
}

double cpu_split_rows(cpu_kernel k, const struct cpu_args *a) {
    ASSERT(a->n >= 1 && a->n <= 4);
    if (parallel_threads() > 1 && a->m[0].rows > 1 && largest_operand(a) >= CPU_SPLIT_MIN_ELEMS)
        return split(k, a, 0);
    return k(a);
}

double cpu_split_cols(cpu_kernel k, const struct cpu_args *a) {
    ASSERT(a->n >= 1 && a->n <= 4);
    if (parallel_threads() > 1 && a->m[0].cols >= 64 && largest_operand(a) >= CPU_SPLIT_MIN_ELEMS)
        return split(k, a, 1);
    return k(a);
}

/* ---- cpu_split_flat: a vector (one long row) in fixed parts ---- */

enum { FLAT_PART = 1 << 16, FLAT_MAX_PARTS = 1024 };

struct flat_job {
    cpu_kernel k;
    const struct cpu_args *a;
    int part, parts;
    double partial[FLAT_MAX_PARTS]; /* each part's return, added in part order */
};

static void flat_task(void *p, int t, int num) {
    struct flat_job *j = p;
    const struct cpu_args *a = j->a;
    int lo, hi, cols = a->m[0].cols;
    parallel_part(j->parts, t, num, 1, &lo, &hi);
    for (int q = lo; q < hi; q++) {
        int c0 = q * j->part, c1 = c0 + j->part < cols ? c0 + j->part : cols;
        struct cpu_args share = *a;
        for (int i = 0; i < a->n; i++) share.m[i] = cut(a->m[i], a->m[0], 1, c0, c1);
        j->partial[q] = j->k(&share);
    }
}

double cpu_split_flat(cpu_kernel k, const struct cpu_args *a) {
    ASSERT(a->n >= 1 && a->n <= 4);
    long cols = a->m[0].cols;
    if (a->m[0].rows != 1 || cols <= FLAT_PART) return cpu_split_rows(k, a);
    for (int i = 1; i < a->n; i++) ASSERT(a->m[i].rows == 1 && a->m[i].cols == cols);
    /* Parts of a size set by the length alone (16-float aligned), so the sum does not depend on
     * the threads. */
    struct flat_job *j = xmalloc(sizeof *j);
    j->k = k;
    j->a = a;
    j->part = FLAT_PART;
    if (cols > (long)FLAT_PART * FLAT_MAX_PARTS)
        j->part = (int)((cols + FLAT_MAX_PARTS - 1) / FLAT_MAX_PARTS + 15) / 16 * 16;
    j->parts = (int)((cols + j->part - 1) / j->part);
    parallel_run(flat_task, j);
    double s = 0;
    for (int q = 0; q < j->parts; q++) s += j->partial[q];
    free(j);
    return s;
}
