/* The error that lossy example storage introduces, per input dimension (egs.h). */
#include "egs/egs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void egs_compress_check_init(struct egs_compress_check *c) { memset(c, 0, sizeof *c); }

void egs_compress_check_release(struct egs_compress_check *c) {
    free(c->sum);
    free(c->sumsq);
    free(c->err_sq);
    matrix_release(&c->scratch);
    memset(c, 0, sizeof *c);
}

int egs_compress_check_add(struct egs_compress_check *c, const struct matrix *orig,
                           const struct example *stored) {
    ASSERT(orig->rows == stored->rows && orig->cols == stored->cols);
    if (!c->dim) {
        c->dim = orig->cols;
        c->sum = xcalloc(c->dim, sizeof *c->sum);
        c->sumsq = xcalloc(c->dim, sizeof *c->sumsq);
        c->err_sq = xcalloc(c->dim, sizeof *c->err_sq);
    }
    if (orig->cols != c->dim) return error_set("input dimension %d, the first had %d", orig->cols,
                                               c->dim);
    int lossy = stored->storage == EXAMPLE_STORE_CM || stored->storage == EXAMPLE_STORE_PQ;
    if (lossy) {
        matrix_resize(&c->scratch, stored->rows, example_input_dim(stored));
        int spk = stored->spk_dim;
        struct example *s = (struct example *)stored; /* decode the stored columns only */
        s->spk_dim = 0;
        struct matrix view = matrix_view(&c->scratch, 0, stored->rows, 0, stored->cols);
        int rc = example_input_decode(s, &view);
        s->spk_dim = spk;
        if (rc) return -1;
    }
    for (int r = 0; r < orig->rows; r++) {
        const float *x = orig->data + (size_t)r * orig->stride;
        const float *y = lossy ? c->scratch.data + (size_t)r * c->scratch.stride : x;
        for (int j = 0; j < c->dim; j++) {
            c->sum[j] += x[j];
            c->sumsq[j] += (double)x[j] * x[j];
            double e = (double)y[j] - x[j];
            c->err_sq[j] += e * e;
        }
        c->rows++;
    }
    return 0;
}

double egs_compress_check_worst(const struct egs_compress_check *c, int *dim) {
    double worst = 0;
    int at = -1;
    for (int j = 0; j < c->dim && c->rows > 1; j++) {
        double m = c->sum[j] / c->rows, v = c->sumsq[j] / c->rows - m * m;
        /* rounding of the sums leaves a constant dimension a tiny variance: treat it as 0 */
        if (!(v > 1e-12 * (m * m + 1e-30))) continue;
        double rel = sqrt(c->err_sq[j] / c->rows / v);
        if (rel > worst) worst = rel, at = j;
    }
    if (dim) *dim = at;
    return worst;
}
