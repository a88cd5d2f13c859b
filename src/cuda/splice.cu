/* cuda: splicing (context windows) and sparse access by host index arrays. The small host arrays
 * (offsets, label indices) are copied to the device per call; their cost is a few microseconds
 * against the minibatch GEMMs. */
#include "cuda/cuda-internal.h"

#define AT(m, r, c) ((m).data[(long)(r) * (m).stride + (c)])

/* dst row r, column block k = src row r + offsets[k] */
void cuda_splice(struct cuda_mat dst, struct cuda_mat src, const int *offsets, int num_offsets) {
    if (mat_empty(dst) || src.cols == 0) return;
    device_copy<int> off(offsets, num_offsets);
    const int *o = off.p;
    int w = src.cols;
    map2d(dst.rows, dst.cols, [=] __device__(int r, int c) {
        int k = c / w;
        AT(dst, r, c) = AT(src, r + o[k], c - k * w);
    });
}

/* The adjoint as a gather, so that no two threads write one element: src_deriv row s column cc
 * collects dst_deriv[s - offsets[k]][k * w + cc] over the k whose row exists. */
void cuda_add_splice_backward(struct cuda_mat src_deriv, struct cuda_mat dst_deriv,
                              const int *offsets, int num_offsets) {
    if (mat_empty(src_deriv) || dst_deriv.rows == 0 || num_offsets == 0) return;
    device_copy<int> off(offsets, num_offsets);
    const int *o = off.p;
    int n = num_offsets;
    map2d(src_deriv.rows, src_deriv.cols, [=] __device__(int s, int c) {
        float acc = AT(src_deriv, s, c);
        for (int k = 0; k < n; k++) {
            int r = s - o[k];
            if (r >= 0 && r < dst_deriv.rows) acc += AT(dst_deriv, r, k * src_deriv.cols + c);
        }
        AT(src_deriv, s, c) = acc;
    });
}

/* Indices may repeat (two labels on one frame): atomic adds. */
void cuda_add_at(struct cuda_mat m, float alpha, int n, const int *rows, const int *cols,
                 const float *values) {
    if (n <= 0) return;
    device_copy<int> dr(rows, n), dc(cols, n);
    device_copy<float> dv(values, n);
    const int *pr = dr.p, *pc = dc.p;
    const float *pv = dv.p;
    map2d(1, n, [=] __device__(int, int i) { atomicAdd(&AT(m, pr[i], pc[i]), alpha * pv[i]); });
}

void cuda_get_at(struct cuda_mat m, int n, const int *rows, const int *cols, float *out) {
    if (n <= 0) return;
    device_copy<int> dr(rows, n), dc(cols, n);
    float *d = (float *)cuda_malloc((size_t)n * sizeof(float));
    const int *pr = dr.p, *pc = dc.p;
    map2d(1, n, [=] __device__(int, int i) { d[i] = AT(m, pr[i], pc[i]); });
    CU_CHECK(cudaMemcpy(out, d, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));
    cuda_free(d);
}
