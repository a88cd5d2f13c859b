/* cuda: device choice, the caching allocator, copies between host and device. */
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cuda/cuda-internal.h"

void cuda_fail(const char *what, const char *file, int line, const char *msg) {
    fprintf(stderr, "parnet: CUDA failure at %s:%d: %s: %s\n", file, line, what, msg);
    fflush(stderr);
    abort();
}

static void fmt(char *buf, size_t n, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *buf, size_t n, const char *f, ...) {
    if (!buf || n == 0) return;
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, n, f, ap);
    va_end(ap);
}

static int g_device = -1;
static int g_prefer = -1;

void cuda_device_prefer(int first) { g_prefer = first; }
static cublasHandle_t g_blas;

cublasHandle_t cuda_blas_handle(void) {
    if (g_device < 0) cuda_fail("cuBLAS", __FILE__, __LINE__, "no GPU opened (matrix_select_device)");
    return g_blas;
}

/* ---- device choice ---- */

static const char *mode_name(int mode) {
    switch (mode) {
    case cudaComputeModeDefault: return "default";
    case cudaComputeModeExclusiveProcess: return "exclusive-process";
    case cudaComputeModeProhibited: return "prohibited";
    default: return "unknown";
    }
}

/* Make d current and create its context; 0 or the error (cleared). In exclusive-process mode a
 * GPU that another process holds fails here, which is how we find a free one. */
static cudaError_t try_device(int d) {
    cudaError_t e = cudaSetDevice(d);
    if (e == cudaSuccess) e = cudaFree(0);
    if (e != cudaSuccess) cudaGetLastError();
    return e;
}

int cuda_device_open(char *why, size_t why_len, char *info, size_t info_len) {
    if (g_device < 0) {
        const char *visible = getenv("CUDA_VISIBLE_DEVICES");
        char vis[160] = "";
        if (visible) fmt(vis, sizeof vis, "; CUDA_VISIBLE_DEVICES='%s'", visible);
        int count = 0;
        cudaError_t e = cudaGetDeviceCount(&count);
        if (e != cudaSuccess || count <= 0) {
            cudaGetLastError();
            fmt(why, why_len, "no CUDA device visible (%s%s)",
                e != cudaSuccess ? cudaGetErrorString(e) : "the driver reports 0 devices", vis);
            return -1;
        }
        /* Candidates in the order to try them. */
        std::vector<int> order;
        std::vector<double> free_frac;
        int exclusive = 0;
        for (int d = 0; d < count; d++) {
            int mode = cudaComputeModeDefault;
            if (cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, d) != cudaSuccess) {
                cudaGetLastError();
                continue;
            }
            if (mode == cudaComputeModeProhibited) continue;
            if (mode == cudaComputeModeExclusiveProcess) exclusive = 1;
            order.push_back(d);
        }
        if (order.empty()) {
            fmt(why, why_len, "all %d visible GPU(s) are in compute mode 'prohibited'%s", count,
                vis);
            return -1;
        }
        if (g_prefer >= 0 && order.size() > 1) {
            /* One GPU per rank: rotate so that the preferred one (modulo the count) is first. */
            size_t k = 0;
            while (k < order.size() && order[k] < g_prefer % count) k++;
            if (k < order.size()) std::rotate(order.begin(), order.begin() + (long)k, order.end());
        } else if (order.size() > 1 && !exclusive) {
            /* Default mode, several GPUs: the largest fraction of free memory (Kaldi's rule).
             * Probing creates a context on each; reset it so that we leave no trace. */
            for (int d : order) {
                size_t f = 0, t = 1;
                double frac = -1.0;
                if (try_device(d) == cudaSuccess && cudaMemGetInfo(&f, &t) == cudaSuccess)
                    frac = (double)f / (double)t;
                cudaGetLastError();
                cudaDeviceReset();
                free_frac.push_back(frac);
            }
            for (size_t i = 1; i < order.size(); i++) /* insertion sort, descending */
                for (size_t j = i; j > 0 && free_frac[j] > free_frac[j - 1]; j--) {
                    std::swap(free_frac[j], free_frac[j - 1]);
                    std::swap(order[j], order[j - 1]);
                }
        }
        char last[200] = "";
        for (int d : order) {
            cudaError_t ed = try_device(d);
            if (ed == cudaSuccess) {
                g_device = d;
                break;
            }
            int mode = 0;
            cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, d);
            cudaGetLastError();
            fmt(last, sizeof last, "GPU %d (%s mode): %s", d, mode_name(mode),
                cudaGetErrorString(ed));
        }
        if (g_device < 0) {
            fmt(why, why_len, "all %d visible GPU(s) busy or unavailable (last: %s)%s", count,
                last, vis);
            return -2;
        }
        CUBLAS_CHECK(cublasCreate(&g_blas));
        /* Plain fp32 arithmetic (no TF32), so that results match the CPU to float rounding. */
        CUBLAS_CHECK(cublasSetMathMode(g_blas, CUBLAS_DEFAULT_MATH));
        atexit(cuda_device_release); /* after the runtime's own handler, so it runs before it */
    }
    cudaDeviceProp prop;
    CU_CHECK(cudaGetDeviceProperties(&prop, g_device));
    int mode = 0;
    CU_CHECK(cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, g_device));
    size_t f = 0, t = 0;
    CU_CHECK(cudaMemGetInfo(&f, &t));
    fmt(info, info_len, "GPU %d: %s (compute %d.%d, %s mode), %.1f of %.1f GiB free", g_device,
        prop.name, prop.major, prop.minor, mode_name(mode), f / 1073741824.0,
        t / 1073741824.0);
    return g_device;
}

void cuda_sync(void) {
    if (g_device >= 0) CU_CHECK(cudaDeviceSynchronize());
}

/* ---- caching allocator ----
 * Training allocates the same shapes every minibatch; cudaMalloc/cudaFree cost tens of
 * microseconds and cudaFree synchronizes the device, so freed blocks wait on a free list per
 * rounded size for the next request of that size. All work is on one stream, so a block freed
 * right after a launch that uses it can be reused by later work without any event. */

static std::mutex g_mu;
static std::unordered_map<void *, size_t> g_live;                /* pointer -> rounded size */
static std::unordered_map<size_t, std::vector<void *>> g_free;  /* rounded size -> blocks */
static size_t g_in_use, g_cached;

static size_t round_size(size_t n) {
    return n == 0 ? 512 : (n + 511) & ~(size_t)511;
}

static void empty_cache_locked(void) {
    for (auto &kv : g_free)
        for (void *p : kv.second) cudaFree(p);
    g_free.clear();
    g_cached = 0;
}

void *cuda_malloc(size_t bytes) {
    if (g_device < 0)
        cuda_fail("cuda_malloc", __FILE__, __LINE__,
                  "a GPU matrix before a GPU was chosen (call matrix_select_device)");
    size_t n = round_size(bytes);
    std::lock_guard<std::mutex> lock(g_mu);
    void *p = NULL;
    auto it = g_free.find(n);
    if (it != g_free.end() && !it->second.empty()) {
        p = it->second.back();
        it->second.pop_back();
        g_cached -= n;
    } else {
        cudaError_t e = cudaMalloc(&p, n);
        if (e == cudaErrorMemoryAllocation) {
            cudaGetLastError();
            empty_cache_locked();
            e = cudaMalloc(&p, n);
        }
        if (e != cudaSuccess) {
            char msg[256];
            fmt(msg, sizeof msg, "cannot allocate %zu bytes with %zu in use: %s", n, g_in_use,
                cudaGetErrorString(e));
            cuda_fail("cudaMalloc", __FILE__, __LINE__, msg);
        }
    }
    g_live[p] = n;
    g_in_use += n;
    return p;
}

void cuda_free(void *p) {
    if (!p) return;
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_live.find(p);
    CUDA_ASSERT(it != g_live.end()); /* not from cuda_malloc, or freed twice */
    size_t n = it->second;
    g_live.erase(it);
    g_free[n].push_back(p);
    g_in_use -= n;
    g_cached += n;
}


void cuda_device_release(void) {
    if (g_device < 0) return;
    {
        std::lock_guard<std::mutex> lock(g_mu);
        empty_cache_locked();
    }
    cublasDestroy(g_blas);
    g_blas = NULL;
    cuda_dnn_release();
    /* Blocks still live belong to matrices never released; the context's end frees them. */
    g_device = -1;
}

/* ---- copies ---- */

void cuda_copy2d(float *dst, int dst_stride, int dst_gpu, const float *src, int src_stride,
                 int src_gpu, int rows, int cols) {
    if (rows <= 0 || cols <= 0) return;
    cudaMemcpyKind kind = dst_gpu ? (src_gpu ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                                  : (src_gpu ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
    size_t w = (size_t)cols * sizeof(float);
    if ((dst_stride == cols && src_stride == cols) || rows == 1)
        CU_CHECK(cudaMemcpy(dst, src, w * rows, kind));
    else
        CU_CHECK(cudaMemcpy2D(dst, (size_t)dst_stride * sizeof(float), src,
                              (size_t)src_stride * sizeof(float), w, rows, kind));
}

void cuda_set_zero(struct cuda_mat m) {
    if (mat_empty(m)) return;
    size_t w = (size_t)m.cols * sizeof(float);
    if (m.stride == m.cols || m.rows == 1)
        CU_CHECK(cudaMemset(m.data, 0, w * m.rows));
    else
        CU_CHECK(cudaMemset2D(m.data, (size_t)m.stride * sizeof(float), 0, w, m.rows));
}
