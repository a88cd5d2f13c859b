/* cpu: splicing (context windows) and sparse access with host index arrays. */
#if defined(__GNUC__) && !defined(__clang__)
/* GCC 12 at -O2 vectorises only loops needing no epilogue; these loops need one. */
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include <string.h>

#include "matrix/cpu-internal.h"

/* dst row r, block k = src row r + offsets[k] */
void cpu_splice(struct cpu_mat dst, struct cpu_mat src, const int *offsets, int num_offsets) {
    size_t w = src.cols * sizeof(float);
    if (w == 0) return;
    for (int r = 0; r < dst.rows; r++) {
        float *y = cpu_row(dst, r);
        for (int k = 0; k < num_offsets; k++)
            memcpy(y + (long)k * src.cols, cpu_row(src, r + offsets[k]), w);
    }
}

/* The adjoint. Rows of src_deriv receive from several rows of dst_deriv, so this is not split
 * by rows. */
void cpu_add_splice_backward(struct cpu_mat src_deriv, struct cpu_mat dst_deriv,
                             const int *offsets, int num_offsets) {
    int w = src_deriv.cols;
    for (int r = 0; r < dst_deriv.rows; r++) {
        const float *g = cpu_row(dst_deriv, r);
        for (int k = 0; k < num_offsets; k++) {
            float *d = cpu_row(src_deriv, r + offsets[k]);
            const float *gk = g + (long)k * w;
            for (int c = 0; c < w; c++) d[c] += gk[c];
        }
    }
}

void cpu_add_at(struct cpu_mat m, float alpha, int n, const int *rows, const int *cols,
                const float *values) {
    for (int i = 0; i < n; i++) m.data[(long)rows[i] * m.stride + cols[i]] += alpha * values[i];
}

void cpu_get_at(struct cpu_mat m, int n, const int *rows, const int *cols, float *out) {
    for (int i = 0; i < n; i++) out[i] = m.data[(long)rows[i] * m.stride + cols[i]];
}
