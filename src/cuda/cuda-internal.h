/* cuda-internal: helpers shared by the .cu files of the backend (CUDA C++; never seen by C code).
 *
 * Launch shapes. Elementwise work runs as a 2-D grid of 32 x 8 blocks striding over (row, col),
 * so a view with any stride needs no index division and consecutive threads touch consecutive
 * columns (coalesced). Row-wise work (softmax, normalize, row sums) runs one block per row with
 * 32..256 threads reducing through warp shuffles. Grids are capped and every kernel loops, so
 * any shape fits the launch limits.
 */
#ifndef PARNET_CUDA_CUDA_INTERNAL_H
#define PARNET_CUDA_CUDA_INTERNAL_H

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "cuda/cuda.h"

/* Print what failed and abort (a CUDA failure is never bad input; see cuda.h). */
[[noreturn]] void cuda_fail(const char *what, const char *file, int line, const char *msg);

#define CU_CHECK(call) \
    do { \
        cudaError_t e_ = (call); \
        if (e_ != cudaSuccess) cuda_fail(#call, __FILE__, __LINE__, cudaGetErrorString(e_)); \
    } while (0)

#define CUBLAS_CHECK(call) \
    do { \
        cublasStatus_t s_ = (call); \
        if (s_ != CUBLAS_STATUS_SUCCESS) \
            cuda_fail(#call, __FILE__, __LINE__, cublasGetStatusString(s_)); \
    } while (0)

/* After every launch: catches bad configurations at once (execution errors surface at the next
 * synchronizing call). */
#define LAUNCH_CHECK() CU_CHECK(cudaGetLastError())

#define CUDA_ASSERT(c) \
    do { \
        if (!(c)) cuda_fail("assertion", __FILE__, __LINE__, #c); \
    } while (0)

/* The cuBLAS handle of the open device (aborts if no device was opened). */
cublasHandle_t cuda_blas_handle(void);

static inline bool mat_empty(const cuda_mat &m) {
    return m.rows <= 0 || m.cols <= 0;
}

/* ---- elementwise launch (1 x n: 256-thread rows of blocks instead) ---- */

template <class F>
__global__ void k_map2d(int rows, int cols, F f) {
    for (int r = blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += gridDim.y * blockDim.y)
        for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cols;
             c += gridDim.x * blockDim.x)
            f(r, c);
}

/* Run f(r, c) for every element of a rows x cols block (f is a __device__ lambda). */
template <class F>
static void map2d(int rows, int cols, F f) {
    if (rows <= 0 || cols <= 0) return;
    if (rows == 1) { /* vectors (the parameter block too): every thread along the row */
        unsigned gx = (unsigned)((cols + 255) / 256);
        k_map2d<<<gx < 8192 ? gx : 8192, dim3(256, 1)>>>(rows, cols, f);
        LAUNCH_CHECK();
        return;
    }
    dim3 block(32, 8);
    unsigned gx = (unsigned)((cols + 31) / 32), gy = (unsigned)((rows + 7) / 8);
    dim3 grid(gx < 4096 ? gx : 4096, gy < 65535 ? gy : 65535);
    k_map2d<<<grid, block>>>(rows, cols, f);
    LAUNCH_CHECK();
}

/* ---- block reductions (1-D or 2-D blocks of a multiple of 32 threads; a warp is 32
 * consecutive linear thread ids, x fastest) ---- */

struct op_add {
    template <class T>
    __device__ T operator()(T a, T b) const { return a + b; }
};
struct op_max {
    __device__ float operator()(float a, float b) const { return a > b ? a : b; }
};

/* Every thread gets the reduction of v over the block. Safe to call several times in a row. */
template <class T, class Op>
__device__ T block_reduce(T v, Op op, T identity) {
    __shared__ T partial[32];
    __shared__ T result;
    int tid = threadIdx.y * blockDim.x + threadIdx.x;
    int lane = tid & 31, warp = tid >> 5;
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int num_warps = (blockDim.x * blockDim.y) >> 5;
        v = lane < num_warps ? partial[lane] : identity;
        for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
        if (lane == 0) result = v;
    }
    __syncthreads();
    T r = result;
    __syncthreads(); /* nobody overwrites partial/result before all have read */
    return r;
}

/* Threads for a one-block-per-row kernel over rows of n elements. */
static inline int row_threads(int n) {
    int t = (n + 31) / 32 * 32;
    return t < 32 ? 32 : (t > 256 ? 256 : t);
}

/* Blocks for a one-block-per-row kernel (kernels loop over rows beyond the cap). */
static inline unsigned row_blocks(int rows) {
    return (unsigned)(rows < 65535 ? rows : 65535);
}

/* e^x as the CPU computes it: 0 below -87 (true values there are subnormal), NaN stays NaN. */
__device__ __forceinline__ float dev_exp(float x) {
    return x < -87.0f ? 0.0f : expf(x);
}

/* A temporary device copy of a host array, freed at the end of the scope (the allocator's
 * stream order makes freeing right after the launch that reads it safe). */
template <class T>
struct device_copy {
    T *p;
    device_copy(const T *host, size_t n) {
        p = (T *)cuda_malloc(n * sizeof(T) + 1);
        if (n) CU_CHECK(cudaMemcpy(p, host, n * sizeof(T), cudaMemcpyHostToDevice));
    }
    ~device_copy() { cuda_free(p); }
    device_copy(const device_copy &) = delete;
    device_copy &operator=(const device_copy &) = delete;
};

#endif
