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
    static int said;
    if (!said++)
        LOG("--precision=bf16: layer products in bf16 with fp32 accumulation on oneDNN (%s); "
            "parameters, updates and natural-gradient statistics stay fp32", isa);
    return 0;
}

/* ---- bf16 products ---- */

/* The calling thread's bf16 copies: one scratch pair for operands not kept, and the kept ones of
 * the open pass (matrix_layer_pass), looked up by address, shape and stride. */
struct bf16_buf {
    uint16_t *p;
    size_t n;
};

static uint16_t *buf_get(struct bf16_buf *b, size_t n) {
    if (n > b->n) {
        free(b->p);
        b->n = n + n / 4;
        b->p = xmalloc(b->n * sizeof *b->p);
    }
    return b->p;
}

struct kept {
    const float *data;
    int rows, cols, stride, keep; /* keep 0: the slot is free */
    struct bf16_buf buf;
};
enum { MAX_KEPT = 64 };
static _Thread_local struct {
    int open;
    struct bf16_buf scratch_a, scratch_b;
    struct kept k[MAX_KEPT];
} lp;

static void forget(int which) { /* which: a keep class, or 0 for all */
    for (int i = 0; i < MAX_KEPT; i++)
        if (lp.k[i].keep && (!which || lp.k[i].keep == which)) lp.k[i].keep = 0;
}

void matrix_layer_pass(int pass) {
    ASSERT(pass == MATRIX_PASS_FORWARD || pass == MATRIX_PASS_BACKWARD || pass == MATRIX_PASS_END);
    if (pass == MATRIX_PASS_BACKWARD) {
        forget(MATRIX_KEEP_DERIV);
        return;
    }
    forget(0);
    lp.open = pass == MATRIX_PASS_FORWARD;
}

/* Forget kept copies whose memory c's rows overlap (c is about to be written). */
static void forget_overlapping(const struct matrix *c) {
    const float *lo = c->data, *hi = c->data + (long)(c->rows - 1) * c->stride + c->cols;
    for (int i = 0; i < MAX_KEPT; i++) {
        struct kept *k = &lp.k[i];
        if (!k->keep) continue;
        const float *klo = k->data, *khi = k->data + (long)(k->rows - 1) * k->stride + k->cols;
        if (klo < hi && lo < khi) k->keep = 0;
    }
}

/* The kept copy of m, or NULL with *slot set to where to keep it (NULL: nowhere free). */
static uint16_t *kept_find(const struct matrix *m, int keep, struct kept **slot) {
    *slot = NULL;
    for (int i = 0; i < MAX_KEPT; i++) {
        struct kept *k = &lp.k[i];
        if (k->keep == keep && k->data == m->data && k->rows == m->rows && k->cols == m->cols &&
            k->stride == m->stride)
            return k->buf.p;
        if (!k->keep && !*slot) *slot = k;
    }
    return NULL;
}

struct bf16_job {
    const struct matrix *a, *b; /* as stored (before op) */
    uint16_t *a16, *b16;        /* contiguous copies: ld = a->cols, b->cols */
    int conv_a, conv_b;         /* whether they still have to be made */
    struct matrix c;
    float alpha, beta;
    int trans_a, trans_b, k, by_rows;
};

/* Both conversions, each split by rows over the pool. */
static void convert_part(void *p, int t, int num) {
    const struct bf16_job *j = p;
    int r0, r1;
    parallel_part(j->a->rows, t, num, 1, &r0, &r1);
    if (j->conv_a && r1 > r0) {
        struct matrix v = matrix_rows(j->a, r0, r1 - r0);
        matrix_dnnl_to_bf16(j->a16 + (long)r0 * j->a->cols, j->a->cols, &v);
    }
    parallel_part(j->b->rows, t, num, 1, &r0, &r1);
    if (j->conv_b && r1 > r0) {
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

/* The bf16 copy of m for a product: kept (found, or made into a free slot) or in scratch;
 * *convert says whether it still has to be made. */
static uint16_t *operand(const struct matrix *m, int keep, struct bf16_buf *scratch, int *convert) {
    size_t n = (size_t)m->rows * m->cols;
    *convert = 1;
    if (lp.open && keep) {
        struct kept *slot;
        uint16_t *p = kept_find(m, keep, &slot);
        if (p) {
            *convert = 0;
            return p;
        }
        if (slot) {
            slot->data = m->data;
            slot->rows = m->rows;
            slot->cols = m->cols;
            slot->stride = m->stride;
            slot->keep = keep;
            return buf_get(&slot->buf, n);
        }
    }
    return buf_get(scratch, n);
}

static void bf16_gemm(struct matrix *c, float alpha, const struct matrix *a, int trans_a,
                      int keep_a, const struct matrix *b, int trans_b, int keep_b, float beta,
                      int k) {
    struct bf16_job j = {a, b, NULL, NULL, 0, 0, *c, alpha, beta, trans_a, trans_b, k,
                         c->rows >= c->cols};
    forget_overlapping(c);
    j.a16 = operand(a, keep_a, &lp.scratch_a, &j.conv_a);
    j.b16 = operand(b, keep_b, &lp.scratch_b, &j.conv_b);
    if (j.conv_a || j.conv_b) parallel_run(convert_part, &j);
    if ((j.by_rows ? c->rows : c->cols) >= 2 * BF16_SPLIT_ALIGN)
        parallel_run(gemm_part, &j);
    else
        gemm_part(&j, 0, 1);
}

void matrix_add_mat_mat_layer(struct matrix *c, float alpha, const struct matrix *a, int trans_a,
                              const struct matrix *b, int trans_b, float beta) {
    matrix_layer_product(c, alpha, a, trans_a, MATRIX_KEEP_NONE, b, trans_b, MATRIX_KEEP_NONE,
                         beta);
}

void matrix_layer_product(struct matrix *c, float alpha, const struct matrix *a, int trans_a,
                          int keep_a, const struct matrix *b, int trans_b, int keep_b, float beta) {
    int m = trans_a == MATRIX_TRANS ? a->cols : a->rows;
    int k = trans_a == MATRIX_TRANS ? a->rows : a->cols;
    int kb = trans_b == MATRIX_TRANS ? b->cols : b->rows;
    int n = trans_b == MATRIX_TRANS ? b->rows : b->cols;
    ASSERT(k == kb && c->rows == m && c->cols == n);
    ASSERT(trans_a == MATRIX_NO_TRANS || trans_a == MATRIX_TRANS);
    ASSERT(trans_b == MATRIX_NO_TRANS || trans_b == MATRIX_TRANS);
    ASSERT(keep_a >= MATRIX_KEEP_NONE && keep_a <= MATRIX_KEEP_DERIV);
    ASSERT(keep_b >= MATRIX_KEEP_NONE && keep_b <= MATRIX_KEEP_DERIV);
    if (precision == MATRIX_BF16 && c->device == MATRIX_CPU && m >= MATRIX_BF16_MIN_SIDE &&
        n >= MATRIX_BF16_MIN_SIDE && k >= MATRIX_BF16_MIN_SIDE) {
        ON_CPU(a);
        ON_CPU(b);
        ASSERT(c->data != a->data && c->data != b->data);
        bf16_gemm(c, alpha, a, trans_a, keep_a, b, trans_b, keep_b, beta, k);
        return;
    }
    if (precision == MATRIX_BF16 && lp.open && m > 0 && n > 0) forget_overlapping(c);
    matrix_add_mat_mat(c, alpha, a, trans_a, b, trans_b, beta);
}
