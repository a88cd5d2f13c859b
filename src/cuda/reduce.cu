/* cuda: reductions. Accumulation is in double as on the CPU; whole-matrix sums go through
 * per-block partials added on the host in a fixed order, so results are deterministic. */
#include <climits>
#include <vector>

#include "cuda/cuda-internal.h"

#define AT(m, r, c) ((m).data[(long)(r) * (m).stride + (c)])

template <class F>
__global__ void k_reduce(int rows, int cols, F f, double *partial) {
    double acc = 0;
    for (int r = blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += gridDim.y * blockDim.y)
        for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cols;
             c += gridDim.x * blockDim.x)
            acc += f(r, c);
    acc = block_reduce(acc, op_add(), 0.0);
    if (threadIdx.x == 0 && threadIdx.y == 0) partial[blockIdx.y * gridDim.x + blockIdx.x] = acc;
}

/* sum over a rows x cols index space of f(r, c) (a double) */
template <class F>
static double reduce2d(int rows, int cols, F f) {
    if (rows <= 0 || cols <= 0) return 0.0;
    /* at most 1024 blocks of 256 threads: enough to fill a large GPU, few partials */
    dim3 grid, block;
    if (rows == 1) {
        unsigned gx = (unsigned)((cols + 255) / 256);
        grid = dim3(gx < 1024 ? gx : 1024, 1);
        block = dim3(256, 1);
    } else {
        unsigned gx = (unsigned)((cols + 31) / 32), gy = (unsigned)((rows + 7) / 8);
        grid = dim3(gx < 32 ? gx : 32, gy < 32 ? gy : 32);
        block = dim3(32, 8);
    }
    int n = grid.x * grid.y;
    double *partial = (double *)cuda_malloc(n * sizeof(double));
    k_reduce<<<grid, block>>>(rows, cols, f, partial);
    LAUNCH_CHECK();
    std::vector<double> host(n);
    CU_CHECK(cudaMemcpy(host.data(), partial, n * sizeof(double), cudaMemcpyDeviceToHost));
    cuda_free(partial);
    double s = 0;
    for (int i = 0; i < n; i++) s += host[i];
    return s;
}

double cuda_reduce(int op, struct cuda_mat a, struct cuda_mat b) {
    switch (op) {
    case CUDA_SUM:
        return reduce2d(a.rows, a.cols, [=] __device__(int r, int c) -> double {
            return AT(a, r, c);
        });
    case CUDA_SUM_SQ:
        return reduce2d(a.rows, a.cols, [=] __device__(int r, int c) -> double {
            double x = AT(a, r, c);
            return x * x;
        });
    case CUDA_DOT:
        return reduce2d(a.rows, a.cols, [=] __device__(int r, int c) -> double {
            return (double)AT(a, r, c) * AT(b, r, c);
        });
    case CUDA_DOT_TRANS:
        return reduce2d(a.rows, a.cols, [=] __device__(int r, int c) -> double {
            return (double)AT(a, r, c) * AT(b, c, r);
        });
    case CUDA_TRACE: {
        int n = a.rows < a.cols ? a.rows : a.cols;
        return reduce2d(1, n, [=] __device__(int, int i) -> double { return AT(a, i, i); });
    }
    case CUDA_NONFINITE:
        /* x - x is 0 for finite x and NaN for inf or NaN; one NaN makes the sum NaN */
        return reduce2d(a.rows, a.cols, [=] __device__(int r, int c) -> double {
            float x = AT(a, r, c);
            return (double)(x - x);
        });
    default: CUDA_ASSERT(!"unknown reduction");
    }
    return 0.0;
}

/* ---- per-row sums: one block per row ---- */

template <class F>
__global__ void k_row_reduce(int rows, int cols, F f, float *v, float alpha, float beta,
                             int squares) {
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        double acc = 0;
        for (int c = threadIdx.x; c < cols; c += blockDim.x) {
            double x = f(r, c);
            acc += squares ? x * x : x;
        }
        acc = block_reduce(acc, op_add(), 0.0);
        if (threadIdx.x == 0)
            v[r] = (float)(alpha * acc + (beta == 0.0f ? 0.0 : (double)beta * v[r]));
    }
}

void cuda_add_col_sums(float *v, float alpha, struct cuda_mat m, float beta) {
    if (m.rows <= 0) return;
    auto f = [=] __device__(int r, int c) -> double { return AT(m, r, c); };
    k_row_reduce<<<row_blocks(m.rows), row_threads(m.cols)>>>(m.rows, m.cols, f, v, alpha, beta,
                                                                0);
    LAUNCH_CHECK();
}

void cuda_row_sq_norms(float *v, struct cuda_mat m) {
    if (m.rows <= 0) return;
    auto f = [=] __device__(int r, int c) -> double { return AT(m, r, c); };
    k_row_reduce<<<row_blocks(m.rows), row_threads(m.cols)>>>(m.rows, m.cols, f, v, 1.0f, 0.0f,
                                                                1);
    LAUNCH_CHECK();
}

/* ---- per-column sums: blocks of 32 columns x 16 row-threads ---- */

__global__ void k_col_sums(struct cuda_mat m, float *v, float alpha, float beta) {
    __shared__ double part[16][33];
    for (int c0 = blockIdx.x * 32; c0 < m.cols; c0 += gridDim.x * 32) {
        int c = c0 + threadIdx.x;
        double acc = 0;
        if (c < m.cols)
            for (int r = threadIdx.y; r < m.rows; r += blockDim.y) acc += AT(m, r, c);
        part[threadIdx.y][threadIdx.x] = acc;
        __syncthreads();
        if (threadIdx.y == 0 && c < m.cols) {
            double s = 0;
            for (int i = 0; i < (int)blockDim.y; i++) s += part[i][threadIdx.x];
            v[c] = (float)(alpha * s + (beta == 0.0f ? 0.0 : (double)beta * v[c]));
        }
        __syncthreads();
    }
}

void cuda_add_row_sums(float *v, float alpha, struct cuda_mat m, float beta) {
    if (m.cols <= 0) return;
    unsigned gx = (unsigned)((m.cols + 31) / 32);
    k_col_sums<<<gx < 65535 ? gx : 65535, dim3(32, 16)>>>(m, v, alpha, beta);
    LAUNCH_CHECK();
}

/* ---- row argmax: first index of the maximum ---- */

__global__ void k_row_argmax(struct cuda_mat m, int *out) {
    __shared__ float sv[256];
    __shared__ int si[256];
    for (int r = blockIdx.x; r < m.rows; r += gridDim.x) {
        float best = -INFINITY;
        int bi = INT_MAX;
        for (int c = threadIdx.x; c < m.cols; c += blockDim.x) {
            float x = AT(m, r, c);
            if (bi == INT_MAX || x > best) { /* strict: the first of equal values stays */
                best = x;
                bi = c;
            }
        }
        sv[threadIdx.x] = best;
        si[threadIdx.x] = bi;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if ((int)threadIdx.x < s) {
                float ov = sv[threadIdx.x + s];
                int oi = si[threadIdx.x + s];
                if (oi != INT_MAX && (si[threadIdx.x] == INT_MAX || ov > sv[threadIdx.x] ||
                                      (ov == sv[threadIdx.x] && oi < si[threadIdx.x]))) {
                    sv[threadIdx.x] = ov;
                    si[threadIdx.x] = oi;
                }
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) out[r] = si[0];
        __syncthreads();
    }
}

void cuda_row_argmax(struct cuda_mat m, int *out) {
    if (m.rows <= 0) return;
    int *d = (int *)cuda_malloc((size_t)m.rows * sizeof(int));
    /* power-of-two threads for the tree reduction */
    int t = 32;
    while (t < m.cols && t < 256) t *= 2;
    k_row_argmax<<<row_blocks(m.rows), t>>>(m, d);
    LAUNCH_CHECK();
    CU_CHECK(cudaMemcpy(out, d, (size_t)m.rows * sizeof(int), cudaMemcpyDeviceToHost));
    cuda_free(d);
}
