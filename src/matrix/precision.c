/* matrix: the precision of the layer products (--precision=fp32|bf16) and their dispatch: bf16
 * products go to oneDNN (src/matrix/dnnl.h), split over parnet's pool; everything else to
 * matrix_add_mat_mat. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matrix/dnnl.h"
#include "matrix/matrix-internal.h"

static int precision = MATRIX_FP32;

int matrix_get_precision(void) { return precision; }

int matrix_bf16_supported(void) {
    char isa[64];
    return matrix_dnnl_bf16_check(isa, sizeof isa);
}

int matrix_set_precision(const char *name) {
    ASSERT(name);
    if (!strcmp(name, "fp32")) {
        precision = MATRIX_FP32;
        return 0;
    }
    if (strcmp(name, "bf16"))
        return error_set("--precision: expected fp32 or bf16, got '%s'", name);
    char isa[64], why[512];
    if (matrix_dnnl_bf16_check(isa, sizeof isa)) {
        snprintf(why, sizeof why, "%s", error_get()); /* error_set would overwrite it */
        return error_set("--precision=bf16 cannot run here: %s; use --precision=fp32", why);
    }
    if (matrix_default_device != MATRIX_CPU)
        return error_set("--precision=bf16 runs on the CPU (oneDNN); with --use-gpu use "
                         "--precision=fp32");
    precision = MATRIX_BF16;
    LOG("--precision=bf16: layer products in bf16 with fp32 accumulation on oneDNN (%s); "
        "parameters, updates and natural-gradient statistics stay fp32", isa);
    return 0;
}

/* ---- bf16 products ---- */

/* The caller's bf16 copies of A and B (grown, never shrunk; one pair per calling thread). */
struct bf16_buf {
    uint16_t *p;
    size_t n;
};
static _Thread_local struct bf16_buf buf_a, buf_b;

static uint16_t *buf_get(struct bf16_buf *b, size_t n) {
    if (n > b->n) {
        free(b->p);
        b->n = n + n / 4;
        b->p = xmalloc(b->n * sizeof *b->p);
    }
    return b->p;
}

struct bf16_job {
    const struct matrix *a, *b; /* as stored (before op) */
    uint16_t *a16, *b16;        /* contiguous copies: ld = a->cols, b->cols */
    struct matrix c;
    float alpha, beta;
    int trans_a, trans_b, k, by_rows;
};

/* Both conversions, each split by rows over the pool. */
static void convert_part(void *p, int t, int num) {
    const struct bf16_job *j = p;
    int r0, r1;
    parallel_part(j->a->rows, t, num, 1, &r0, &r1);
    if (r1 > r0) {
        struct matrix v = matrix_rows(j->a, r0, r1 - r0);
        matrix_dnnl_to_bf16(j->a16 + (long)r0 * j->a->cols, j->a->cols, &v);
    }
    parallel_part(j->b->rows, t, num, 1, &r0, &r1);
    if (r1 > r0) {
        struct matrix v = matrix_rows(j->b, r0, r1 - r0);
        matrix_dnnl_to_bf16(j->b16 + (long)r0 * j->b->cols, j->b->cols, &v);
    }
}

enum { BF16_SPLIT_ALIGN = 32 };

/* One oneDNN product per share of C's rows (they are op(A)'s) or columns (op(B)'s). */
static void gemm_part(void *p, int t, int num) {
    const struct bf16_job *j = p;
    int lda = j->a->cols, ldb = j->b->cols, lo, hi;
    parallel_part(j->by_rows ? j->c.rows : j->c.cols, t, num, BF16_SPLIT_ALIGN, &lo, &hi);
    if (lo >= hi) return;
    const uint16_t *a = j->a16, *b = j->b16;
    struct matrix c;
    if (j->by_rows) {
        a += j->trans_a ? lo : (long)lo * lda;
        c = matrix_view(&j->c, lo, hi - lo, 0, j->c.cols);
    } else {
        b += j->trans_b ? (long)lo * ldb : lo;
        c = matrix_view(&j->c, 0, j->c.rows, lo, hi - lo);
    }
    matrix_dnnl_gemm(&c, j->alpha, MATRIX_DNNL_BF16, a, lda, j->trans_a, b, ldb, j->trans_b,
                     j->k, j->beta);
}

static void bf16_gemm(struct matrix *c, float alpha, const struct matrix *a, int trans_a,
                      const struct matrix *b, int trans_b, float beta, int k) {
    struct bf16_job j = {a, b, NULL, NULL, *c, alpha, beta, trans_a, trans_b, k,
                         c->rows >= c->cols};
    j.a16 = buf_get(&buf_a, (size_t)a->rows * a->cols);
    j.b16 = buf_get(&buf_b, (size_t)b->rows * b->cols);
    parallel_run(convert_part, &j);
    if ((j.by_rows ? c->rows : c->cols) >= 2 * BF16_SPLIT_ALIGN)
        parallel_run(gemm_part, &j);
    else
        gemm_part(&j, 0, 1);
}

void matrix_add_mat_mat_layer(struct matrix *c, float alpha, const struct matrix *a, int trans_a,
                              const struct matrix *b, int trans_b, float beta) {
    int m = trans_a == MATRIX_TRANS ? a->cols : a->rows;
    int k = trans_a == MATRIX_TRANS ? a->rows : a->cols;
    int kb = trans_b == MATRIX_TRANS ? b->cols : b->rows;
    int n = trans_b == MATRIX_TRANS ? b->rows : b->cols;
    ASSERT(k == kb && c->rows == m && c->cols == n);
    ASSERT(trans_a == MATRIX_NO_TRANS || trans_a == MATRIX_TRANS);
    ASSERT(trans_b == MATRIX_NO_TRANS || trans_b == MATRIX_TRANS);
    if (precision == MATRIX_BF16 && c->device == MATRIX_CPU && m >= MATRIX_BF16_MIN_SIDE &&
        n >= MATRIX_BF16_MIN_SIDE && k >= MATRIX_BF16_MIN_SIDE) {
        ON_CPU(a);
        ON_CPU(b);
        ASSERT(c->data != a->data && c->data != b->data);
        bf16_gemm(c, alpha, a, trans_a, b, trans_b, beta, k);
        return;
    }
    matrix_add_mat_mat(c, alpha, a, trans_a, b, trans_b, beta);
}
