/* Double matrices as table objects, CMVN statistics and their application, frame splicing. */
#include "feat/feat.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void feat_dmatrix_init(struct feat_dmatrix *m, int rows, int cols) {
    m->rows = rows;
    m->cols = cols;
    m->data = xcalloc((size_t)rows * (size_t)cols + 1, sizeof(double));
}

void feat_dmatrix_release(struct feat_dmatrix *m) {
    free(m->data);
    memset(m, 0, sizeof *m);
}

static int dmat_read(struct kin *in, void *obj) {
    struct feat_dmatrix *m = obj;
    feat_dmatrix_release(m);
    int binary;
    if (io_read_header(in, &binary)) return -1;
    char tok[16];
    if (binary) {
        if (io_peek_token(in, binary, tok, sizeof tok)) return -1;
        if (!strcmp(tok, "DM")) {
            io_read_token(in, binary, tok, sizeof tok);
            int32_t rows, cols;
            if (io_read_int32(in, binary, &rows) || io_read_int32(in, binary, &cols)) return -1;
            if (rows < 0 || cols < 0 || (rows == 0) != (cols == 0))
                return kin_error(in, "invalid matrix dimensions %d x %d", (int)rows, (int)cols);
            uint64_t count = (uint64_t)rows * (uint64_t)cols;
            if (count > (uint64_t)IO_MAX_ELEMENTS / 2)
                return kin_error(in, "matrix too large (%d x %d)", (int)rows, (int)cols);
            int64_t left = kin_remaining(in);
            if (left >= 0 && (uint64_t)left < count * 8)
                return kin_error(in, "truncated matrix data (expected %llu bytes, %lld left)",
                                 (unsigned long long)(count * 8), (long long)left);
            /* Grow as data arrives when the stream's size is unknown. */
            struct feat_dmatrix t = {0};
            t.data = xmalloc(sizeof(double) * (count ? (count < 65536 ? count : 65536) : 1));
            uint64_t done = 0, cap = count < 65536 ? count : 65536;
            while (done < count) {
                uint64_t take = count - done < 65536 ? count - done : 65536;
                if (done + take > cap) {
                    cap = cap * 2 > count ? count : cap * 2;
                    t.data = xrealloc(t.data, sizeof(double) * cap);
                }
                if (kin_read(in, t.data + done, take * 8, "matrix data")) {
                    free(t.data);
                    return -1;
                }
                done += take;
            }
            m->data = t.data;
            m->rows = rows;
            m->cols = cols;
            return 0;
        }
    }
    struct matrix f = {0};
    if (io_read_matrix(in, binary, &f)) return -1;
    feat_dmatrix_init(m, f.rows, f.cols);
    for (int r = 0; r < f.rows; r++)
        for (int c = 0; c < f.cols; c++)
            m->data[(size_t)r * f.cols + c] = f.data[(size_t)r * f.stride + c];
    matrix_release(&f);
    return 0;
}

static int dmat_write(struct kout *out, int binary, const void *obj) {
    const struct feat_dmatrix *m = obj;
    if (io_write_header(out, binary)) return -1;
    if (binary) {
        if (io_write_token(out, 1, "DM") || io_write_int32(out, 1, m->rows) ||
            io_write_int32(out, 1, m->cols))
            return -1;
        return kout_write(out, m->data, sizeof(double) * (size_t)m->rows * (size_t)m->cols);
    }
    if (m->rows == 0) return kout_printf(out, " [ ]\n");
    if (kout_printf(out, " [\n")) return -1;
    for (int r = 0; r < m->rows; r++) {
        if (kout_printf(out, " ")) return -1;
        for (int c = 0; c < m->cols; c++)
            if (kout_printf(out, " %.10g", m->data[(size_t)r * m->cols + c])) return -1;
        if (kout_printf(out, r == m->rows - 1 ? " ]\n" : " \n")) return -1;
    }
    return 0;
}

static void dmat_free(void *obj) { feat_dmatrix_release(obj); }

const struct holder_ops holder_double_matrix = {"double matrix", sizeof(struct feat_dmatrix),
                                                dmat_read, dmat_write, dmat_free, NULL};

void feat_cmvn_acc(struct feat_dmatrix *stats, const struct matrix *feats) {
    int d = feats->cols;
    if (stats->rows == 0) feat_dmatrix_init(stats, 2, d + 1);
    ASSERT(stats->rows == 2 && stats->cols == d + 1);
    double *sum = stats->data, *sq = stats->data + d + 1;
    for (int t = 0; t < feats->rows; t++) {
        const float *x = feats->data + (size_t)t * feats->stride;
        for (int j = 0; j < d; j++) {
            sum[j] += x[j];
            sq[j] += (double)x[j] * x[j];
        }
    }
    sum[d] += feats->rows;
}

int feat_cmvn_apply(const struct feat_dmatrix *stats, int norm_vars, struct matrix *feats) {
    if (stats->rows != 2 || stats->cols < 2)
        return error_set("CMVN statistics must be 2 x (dim + 1), got %d x %d", stats->rows,
                         stats->cols);
    int d = stats->cols - 1;
    if (feats->cols != d)
        return error_set("dimension mismatch: cmvn stats have dimension %d and features have "
                         "dimension %d", d, feats->cols);
    const double *sum = stats->data, *sq = stats->data + d + 1;
    double count = sum[d];
    if (!(count >= 1.0))
        return error_set("insufficient stats for cepstral mean and variance normalization: "
                         "count = %g", count);
    float *scale = xmalloc(sizeof(float) * (size_t)d), *offset = xmalloc(sizeof(float) * (size_t)d);
    for (int j = 0; j < d; j++) {
        double mean = sum[j] / count;
        if (!norm_vars) {
            scale[j] = 1.0f;
            offset[j] = (float)-mean;
            continue;
        }
        double var = sq[j] / count - mean * mean, floor = 1.0e-20;
        if (var < floor) {
            WARN("flooring cepstral variance from %g to %g", var, floor);
            var = floor;
        }
        double s = 1.0 / sqrt(var);
        if (!isfinite(s) || !isfinite(mean)) {
            free(scale);
            free(offset);
            return error_set("NaN or infinity in cepstral mean/variance computation");
        }
        scale[j] = (float)s;
        offset[j] = (float)(-mean * s);
    }
    for (int t = 0; t < feats->rows; t++) {
        float *x = feats->data + (size_t)t * feats->stride;
        for (int j = 0; j < d; j++) x[j] = x[j] * scale[j] + offset[j];
    }
    free(scale);
    free(offset);
    return 0;
}

void feat_splice(const struct matrix *in, int left, int right, struct matrix *out) {
    ASSERT(left >= 0 && right >= 0);
    int T = in->rows, d = in->cols, n = left + 1 + right;
    matrix_release(out);
    if (T == 0) {
        matrix_init(out, 0, 0);
        return;
    }
    matrix_init(out, T, d * n);
    for (int t = 0; t < T; t++) {
        float *o = out->data + (size_t)t * out->stride;
        for (int k = -left; k <= right; k++) {
            int s = t + k < 0 ? 0 : t + k >= T ? T - 1 : t + k;
            memcpy(o + (size_t)(k + left) * d, in->data + (size_t)s * in->stride,
                   sizeof(float) * (size_t)d);
        }
    }
}
