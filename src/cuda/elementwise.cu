/* cuda: elementwise operations, nonlinearities, p-norm, transpose. Each is one map2d over the
 * destination; the arithmetic mirrors the CPU code in src/matrix/matrix-ops.c (same order of
 * operations, same precision) so that both agree to float rounding. */
#include "cuda/cuda-internal.h"

#define AT(m, r, c) ((m).data[(long)(r) * (m).stride + (c)])

void cuda_set_const(struct cuda_mat m, float value) {
    map2d(m.rows, m.cols, [=] __device__(int r, int c) { AT(m, r, c) = value; });
}

void cuda_scale(struct cuda_mat m, float alpha) {
    if (alpha == 0.0f) { /* BLAS: 0 * NaN = 0 */
        cuda_set_zero(m);
        return;
    }
    map2d(m.rows, m.cols, [=] __device__(int r, int c) { AT(m, r, c) *= alpha; });
}

void cuda_add(struct cuda_mat m, float alpha, struct cuda_mat a) {
    map2d(m.rows, m.cols, [=] __device__(int r, int c) { AT(m, r, c) += alpha * AT(a, r, c); });
}

void cuda_add_const(struct cuda_mat m, float alpha) {
    map2d(m.rows, m.cols, [=] __device__(int r, int c) { AT(m, r, c) += alpha; });
}

void cuda_add_diag(struct cuda_mat m, float alpha) {
    int n = m.rows < m.cols ? m.rows : m.cols;
    map2d(1, n, [=] __device__(int, int i) { AT(m, i, i) += alpha; });
}

void cuda_mul_elements(struct cuda_mat m, struct cuda_mat a) {
    map2d(m.rows, m.cols, [=] __device__(int r, int c) { AT(m, r, c) *= AT(a, r, c); });
}

void cuda_mul_rows(struct cuda_mat m, const float *scale) {
    map2d(m.rows, m.cols, [=] __device__(int r, int c) { AT(m, r, c) *= scale[r]; });
}

void cuda_mul_cols(struct cuda_mat m, const float *scale) {
    map2d(m.rows, m.cols, [=] __device__(int r, int c) { AT(m, r, c) *= scale[c]; });
}

void cuda_add_vec_to_rows(struct cuda_mat m, float alpha, const float *v) {
    map2d(m.rows, m.cols, [=] __device__(int r, int c) { AT(m, r, c) += alpha * v[c]; });
}

/* 32 x 32 tiles through shared memory, so both the reads and the writes are coalesced; the +1
 * column avoids bank conflicts on the transposed read. */
__global__ void k_transpose(struct cuda_mat dst, struct cuda_mat src) {
    __shared__ float tile[32][33];
    for (int r0 = blockIdx.y * 32; r0 < src.rows; r0 += gridDim.y * 32)
        for (int c0 = blockIdx.x * 32; c0 < src.cols; c0 += gridDim.x * 32) {
            for (int i = threadIdx.y; i < 32; i += blockDim.y) {
                int r = r0 + i, c = c0 + threadIdx.x;
                if (r < src.rows && c < src.cols) tile[i][threadIdx.x] = AT(src, r, c);
            }
            __syncthreads();
            for (int i = threadIdx.y; i < 32; i += blockDim.y) {
                int r = c0 + i, c = r0 + threadIdx.x; /* dst row = src col */
                if (r < dst.rows && c < dst.cols) AT(dst, r, c) = tile[threadIdx.x][i];
            }
            __syncthreads();
        }
}

void cuda_copy_transposed(struct cuda_mat dst, struct cuda_mat src) {
    if (mat_empty(src)) return;
    unsigned gx = (unsigned)((src.cols + 31) / 32), gy = (unsigned)((src.rows + 31) / 32);
    dim3 grid(gx < 4096 ? gx : 4096, gy < 65535 ? gy : 65535);
    k_transpose<<<grid, dim3(32, 8)>>>(dst, src);
    LAUNCH_CHECK();
}

/* ---- nonlinearities ---- */

void cuda_nonlin(int which, struct cuda_mat dst, struct cuda_mat src) {
    switch (which) {
    case CUDA_SIGMOID:
        /* exp overflow gives 1/inf = 0, the right limit */
        map2d(dst.rows, dst.cols, [=] __device__(int r, int c) {
            AT(dst, r, c) = 1.0f / (1.0f + dev_exp(-AT(src, r, c)));
        });
        break;
    case CUDA_TANH:
        map2d(dst.rows, dst.cols,
              [=] __device__(int r, int c) { AT(dst, r, c) = tanhf(AT(src, r, c)); });
        break;
    case CUDA_RELU:
        map2d(dst.rows, dst.cols, [=] __device__(int r, int c) {
            float x = AT(src, r, c);
            AT(dst, r, c) = x > 0.0f ? x : 0.0f;
        });
        break;
    default: CUDA_ASSERT(!"unknown nonlinearity");
    }
}

void cuda_diff_nonlin(int which, struct cuda_mat in_deriv, struct cuda_mat out_value,
                      struct cuda_mat out_deriv) {
    cuda_mat d = in_deriv, y = out_value, g = out_deriv;
    switch (which) {
    case CUDA_SIGMOID:
        map2d(d.rows, d.cols, [=] __device__(int r, int c) {
            float yv = AT(y, r, c);
            AT(d, r, c) = yv * (1.0f - yv) * AT(g, r, c);
        });
        break;
    case CUDA_TANH:
        map2d(d.rows, d.cols, [=] __device__(int r, int c) {
            float yv = AT(y, r, c);
            AT(d, r, c) = (1.0f - yv * yv) * AT(g, r, c);
        });
        break;
    case CUDA_RELU:
        map2d(d.rows, d.cols, [=] __device__(int r, int c) {
            float gv = AT(g, r, c);
            AT(d, r, c) = AT(y, r, c) > 0.0f ? gv : 0.0f;
        });
        break;
    default: CUDA_ASSERT(!"unknown nonlinearity");
    }
}

/* ---- p-norm: dst[r][j] = (sum_k |src[r][j*group+k]|^p)^(1/p), in double as on the CPU ---- */

void cuda_pnorm(struct cuda_mat dst, struct cuda_mat src, int group, float p) {
    map2d(dst.rows, dst.cols, [=] __device__(int r, int j) {
        const float *x = &AT(src, r, (long)j * group);
        double s = 0;
        if (p == 2.0f) {
            for (int k = 0; k < group; k++) s += (double)x[k] * x[k];
            AT(dst, r, j) = (float)sqrt(s);
        } else if (p == 1.0f) {
            for (int k = 0; k < group; k++) s += fabsf(x[k]);
            AT(dst, r, j) = (float)s;
        } else {
            for (int k = 0; k < group; k++) s += pow((double)fabsf(x[k]), (double)p);
            AT(dst, r, j) = (float)pow(s, 1.0 / p);
        }
    });
}

/* d y / d x_k = sign(x_k) (|x_k| / y)^(p-1); 0 for a group whose output is 0. One thread per
 * input element. */
void cuda_diff_pnorm(struct cuda_mat in_deriv, struct cuda_mat in_value,
                     struct cuda_mat out_value, struct cuda_mat out_deriv, int group, float p) {
    cuda_mat d = in_deriv, x = in_value, y = out_value, gy = out_deriv;
    map2d(d.rows, d.cols, [=] __device__(int r, int c) {
        int j = c / group;
        float yj = AT(y, r, j), gj = AT(gy, r, j), xv = AT(x, r, c), out;
        if (!(yj > 0.0f)) {
            out = 0.0f;
        } else if (p == 2.0f) {
            float f = gj / yj;
            out = f * xv;
        } else if (p == 1.0f) {
            out = xv > 0 ? gj : (xv < 0 ? -gj : 0.0f);
        } else {
            float t = gj * (float)pow((double)(fabsf(xv) / yj), (double)p - 1.0);
            out = xv > 0 ? t : (xv < 0 ? -t : 0.0f);
        }
        AT(d, r, c) = out;
    });
}
