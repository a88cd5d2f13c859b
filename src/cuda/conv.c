/* Convolution, max-pooling and batch norm on cuDNN (cuda.h: images in rows). Plain C: cuDNN's API
 * is C. Every call describes its tensors afresh (a few microseconds against kernels of
 * milliseconds) and asks cuDNN's heuristics for the first deterministic algorithm in fp32
 * arithmetic; workspaces come from the caching allocator. Empty without make CUDA=1. */
#if HAVE_CUDA
#include <cudnn.h>
#include <pthread.h>

#include "base/base.h"
#include "cuda/cuda.h"

#define CUDNN_CHECK(call)                                                                          \
    do {                                                                                           \
        cudnnStatus_t s_ = (call);                                                                 \
        if (s_ != CUDNN_STATUS_SUCCESS)                                                            \
            die("cuDNN: %s failed: %s (%s:%d)", #call, cudnnGetErrorString(s_), __FILE__,          \
                __LINE__);                                                                         \
    } while (0)

static cudnnHandle_t g_dnn; /* on the device cuda_device_open chose; the legacy default stream */
static pthread_mutex_t g_dnn_lock = PTHREAD_MUTEX_INITIALIZER;

static cudnnHandle_t dnn(void) {
    pthread_mutex_lock(&g_dnn_lock);
    if (!g_dnn) CUDNN_CHECK(cudnnCreate(&g_dnn));
    pthread_mutex_unlock(&g_dnn_lock);
    return g_dnn;
}

void cuda_dnn_release(void) {
    if (g_dnn) cudnnDestroy(g_dnn);
    g_dnn = NULL;
}

/* n images of h x w x c, channel fastest (NHWC), dense. */
static cudnnTensorDescriptor_t images(int n, int h, int w, int c) {
    cudnnTensorDescriptor_t d;
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&d));
    CUDNN_CHECK(
        cudnnSetTensor4dDescriptorEx(d, CUDNN_DATA_FLOAT, n, c, h, w, h * w * c, 1, w * c, c));
    return d;
}

static cudnnTensorDescriptor_t images_in(int n, const struct matrix_conv *g) {
    return images(n, g->in_h, g->in_w, g->in_c);
}

static cudnnTensorDescriptor_t images_out(int n, const struct matrix_conv *g) {
    return images(n, g->out_h, g->out_w, g->out_c);
}

/* The filter bank: out_c x (k_h x k_w x in_c), input channel fastest (OHWI: cuDNN's NHWC). */
static cudnnFilterDescriptor_t filters(const struct matrix_conv *g) {
    cudnnFilterDescriptor_t d;
    CUDNN_CHECK(cudnnCreateFilterDescriptor(&d));
    CUDNN_CHECK(cudnnSetFilter4dDescriptor(d, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, g->out_c,
                                           g->in_c, g->k_h, g->k_w));
    return d;
}

/* Cross-correlation (as matrix.h's convolution), fp32 arithmetic: no TF32 on tensor cores. */
static cudnnConvolutionDescriptor_t convolution(const struct matrix_conv *g) {
    cudnnConvolutionDescriptor_t d;
    CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d));
    CUDNN_CHECK(cudnnSetConvolution2dDescriptor(d, g->pad_h, g->pad_w, g->stride_h, g->stride_w, 1,
                                                1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN_CHECK(cudnnSetConvolutionMathType(d, CUDNN_FMA_MATH));
    return d;
}

/* The descriptors of one convolution call. */
struct conv_call {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
};

static struct conv_call conv_call_new(int n, const struct matrix_conv *g) {
    struct conv_call c = {images_in(n, g), images_out(n, g), filters(g), convolution(g)};
    return c;
}

static void conv_call_free(struct conv_call *c) {
    cudnnDestroyTensorDescriptor(c->x);
    cudnnDestroyTensorDescriptor(c->y);
    cudnnDestroyFilterDescriptor(c->w);
    cudnnDestroyConvolutionDescriptor(c->conv);
}

/* algo = the first deterministic, successful algorithm of cuDNN's heuristics list, or die. */
#define PICK_DETERMINISTIC(algo, perf, count, what)                                                \
    do {                                                                                           \
        int i_ = 0;                                                                                \
        while (i_ < (count) && ((perf)[i_].status != CUDNN_STATUS_SUCCESS ||                       \
                                (perf)[i_].determinism != CUDNN_DETERMINISTIC))                    \
            i_++;                                                                                  \
        if (i_ == (count)) die("cuDNN: no deterministic %s algorithm for this shape", what);       \
        (algo) = (perf)[i_].algo;                                                                  \
    } while (0)

enum { MAX_ALGOS = 16 };

void cuda_conv_forward(struct cuda_mat out, struct cuda_mat in, struct cuda_mat w, const float *b,
                       const struct matrix_conv *g) {
    if (in.rows <= 0) return;
    cudnnHandle_t h = dnn();
    struct conv_call c = conv_call_new(in.rows, g);
    cudnnConvolutionFwdAlgoPerf_t perf[MAX_ALGOS];
    int count = 0;
    CUDNN_CHECK(
        cudnnGetConvolutionForwardAlgorithm_v7(h, c.x, c.w, c.conv, c.y, MAX_ALGOS, &count, perf));
    cudnnConvolutionFwdAlgo_t algo;
    PICK_DETERMINISTIC(algo, perf, count, "forward");
    size_t bytes = 0;
    CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(h, c.x, c.w, c.conv, c.y, algo, &bytes));
    void *ws = bytes ? cuda_malloc(bytes) : NULL;
    const float one = 1, zero = 0;
    CUDNN_CHECK(cudnnConvolutionForward(h, &one, c.x, in.data, c.w, w.data, c.conv, algo, ws, bytes,
                                        &zero, c.y, out.data));
    cudnnTensorDescriptor_t bias = images(1, 1, 1, g->out_c);
    CUDNN_CHECK(cudnnAddTensor(h, &one, bias, b, &one, c.y, out.data));
    cudnnDestroyTensorDescriptor(bias);
    cuda_free(ws);
    conv_call_free(&c);
}

void cuda_conv_backward_data(struct cuda_mat in_deriv, struct cuda_mat out_deriv, struct cuda_mat w,
                             const struct matrix_conv *g) {
    if (in_deriv.rows <= 0) return;
    cudnnHandle_t h = dnn();
    struct conv_call c = conv_call_new(in_deriv.rows, g);
    cudnnConvolutionBwdDataAlgoPerf_t perf[MAX_ALGOS];
    int count = 0;
    CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, c.w, c.y, c.conv, c.x, MAX_ALGOS,
                                                            &count, perf));
    cudnnConvolutionBwdDataAlgo_t algo;
    PICK_DETERMINISTIC(algo, perf, count, "backward data");
    size_t bytes = 0;
    CUDNN_CHECK(
        cudnnGetConvolutionBackwardDataWorkspaceSize(h, c.w, c.y, c.conv, c.x, algo, &bytes));
    void *ws = bytes ? cuda_malloc(bytes) : NULL;
    const float one = 1, zero = 0;
    CUDNN_CHECK(cudnnConvolutionBackwardData(h, &one, c.w, w.data, c.y, out_deriv.data, c.conv,
                                             algo, ws, bytes, &zero, c.x, in_deriv.data));
    cuda_free(ws);
    conv_call_free(&c);
}

void cuda_conv_backward_weights(struct cuda_mat dw, float *db, float alpha, struct cuda_mat in,
                                struct cuda_mat out_deriv, const struct matrix_conv *g,
                                float beta) {
    if (in.rows <= 0) { /* no images: the gradient is zero */
        cuda_scale(dw, beta);
        struct cuda_mat bv = {db, 1, g->out_c, g->out_c};
        cuda_scale(bv, beta);
        return;
    }
    cudnnHandle_t h = dnn();
    struct conv_call c = conv_call_new(in.rows, g);
    cudnnConvolutionBwdFilterAlgoPerf_t perf[MAX_ALGOS];
    int count = 0;
    CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, c.x, c.y, c.conv, c.w, MAX_ALGOS,
                                                              &count, perf));
    cudnnConvolutionBwdFilterAlgo_t algo;
    PICK_DETERMINISTIC(algo, perf, count, "backward filter");
    size_t bytes = 0;
    CUDNN_CHECK(
        cudnnGetConvolutionBackwardFilterWorkspaceSize(h, c.x, c.y, c.conv, c.w, algo, &bytes));
    void *ws = bytes ? cuda_malloc(bytes) : NULL;
    CUDNN_CHECK(cudnnConvolutionBackwardFilter(h, &alpha, c.x, in.data, c.y, out_deriv.data, c.conv,
                                               algo, ws, bytes, &beta, c.w, dw.data));
    cudnnTensorDescriptor_t bias = images(1, 1, 1, g->out_c);
    CUDNN_CHECK(cudnnConvolutionBackwardBias(h, &alpha, c.y, out_deriv.data, &beta, bias, db));
    cudnnDestroyTensorDescriptor(bias);
    cuda_free(ws);
    conv_call_free(&c);
}

/* Max-pooling; padded cells never win (cuDNN's max ignores padding). */
static cudnnPoolingDescriptor_t max_pooling(const struct matrix_conv *g) {
    cudnnPoolingDescriptor_t d;
    CUDNN_CHECK(cudnnCreatePoolingDescriptor(&d));
    CUDNN_CHECK(cudnnSetPooling2dDescriptor(d, CUDNN_POOLING_MAX_DETERMINISTIC, CUDNN_PROPAGATE_NAN,
                                            g->k_h, g->k_w, g->pad_h, g->pad_w, g->stride_h,
                                            g->stride_w));
    return d;
}

static void pool(cudnnHandle_t h, cudnnPoolingDescriptor_t p, cudnnTensorDescriptor_t x,
                 const float *in, cudnnTensorDescriptor_t y, float *out) {
    const float one = 1, zero = 0;
    CUDNN_CHECK(cudnnPoolingForward(h, p, &one, x, in, &zero, y, out));
}

void cuda_max_pool_forward(struct cuda_mat out, struct cuda_mat in, const struct matrix_conv *g) {
    if (in.rows <= 0) return;
    cudnnPoolingDescriptor_t p = max_pooling(g);
    cudnnTensorDescriptor_t x = images_in(in.rows, g), y = images_out(in.rows, g);
    pool(dnn(), p, x, in.data, y, out.data);
    cudnnDestroyTensorDescriptor(x);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyPoolingDescriptor(p);
}

void cuda_max_pool_backward(struct cuda_mat in_deriv, struct cuda_mat in, struct cuda_mat out_deriv,
                            const struct matrix_conv *g) {
    if (in.rows <= 0) return;
    cudnnHandle_t h = dnn();
    cudnnPoolingDescriptor_t p = max_pooling(g);
    cudnnTensorDescriptor_t x = images_in(in.rows, g), y = images_out(in.rows, g);
    /* cuDNN finds the winners from the forward output: made again here (the interface keeps
     * the input only, as oneDNN's workspace-free path does) */
    float *out = cuda_malloc((size_t)out_deriv.rows * out_deriv.cols * sizeof *out);
    pool(h, p, x, in.data, y, out);
    const float one = 1, zero = 0;
    CUDNN_CHECK(cudnnPoolingBackward(h, p, &one, y, out, y, out_deriv.data, x, in.data, &zero, x,
                                     in_deriv.data));
    cuda_free(out);
    cudnnDestroyTensorDescriptor(x);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyPoolingDescriptor(p);
}

/* Batch norm's view of m: rows x (cols / channels) "pixels" x channels, and its per-channel
 * descriptor; ones and zeros for the scale and offset cuDNN insists on. */
struct norm_call {
    cudnnTensorDescriptor_t x, channel;
    float *ones, *zeros;
};

static struct norm_call norm_call_new(cudnnHandle_t h, struct cuda_mat m, int channels) {
    struct norm_call c = {images(m.rows, m.cols / channels, 1, channels), NULL, NULL, NULL};
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&c.channel));
    CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(c.channel, c.x, CUDNN_BATCHNORM_SPATIAL));
    c.ones = cuda_malloc(2 * (size_t)channels * sizeof(float));
    c.zeros = c.ones + channels;
    struct cuda_mat o = {c.ones, 1, channels, channels}, z = {c.zeros, 1, channels, channels};
    cuda_set_const(o, 1);
    cuda_set_zero(z);
    return c;
}

static void norm_call_free(struct norm_call *c) {
    cuda_free(c->ones);
    cudnnDestroyTensorDescriptor(c->x);
    cudnnDestroyTensorDescriptor(c->channel);
}

void cuda_batch_norm_forward(struct cuda_mat out, struct cuda_mat in, int channels, float eps,
                             float *mean, float *var, int train) {
    if (in.rows <= 0) return;
    if (!train) {
        /* out = (in - mean) (var + eps)^-1/2: the inference call with scale 1, offset 0 */
        cudnnHandle_t h = dnn();
        struct norm_call c = norm_call_new(h, in, channels);
        const float one = 1, zero = 0;
        CUDNN_CHECK(cudnnBatchNormalizationForwardInference(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero,
                                                            c.x, in.data, c.x, out.data, c.channel,
                                                            c.ones, c.zeros, mean, var, eps));
        norm_call_free(&c);
        return;
    }
    cudnnHandle_t h = dnn();
    struct norm_call c = norm_call_new(h, in, channels);
    const float one = 1, zero = 0;
    struct cuda_mat m = {mean, 1, channels, channels}, v = {var, 1, channels, channels};
    cuda_set_zero(m); /* read with factor 0 below: never let 0 x NaN in */
    cuda_set_zero(v);
    /* An average factor of 1 makes the "running" statistics this batch's: the mean, and the
     * variance with cuDNN's n / (n - 1), undone below to the biased variance the CPU keeps. */
    CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, c.x,
                                                       in.data, c.x, out.data, c.channel, c.ones,
                                                       c.zeros, 1.0, mean, var, eps, NULL, NULL));
    long count = (long)in.rows * (in.cols / channels);
    cuda_scale(v, count > 1 ? (float)((double)(count - 1) / count) : 0.0f);
    norm_call_free(&c);
}

void cuda_batch_norm_backward(struct cuda_mat in_deriv, struct cuda_mat in,
                              struct cuda_mat out_deriv, int channels, float eps, const float *mean,
                              const float *var, int train) {
    if (in.rows <= 0) return;
    if (!train) { /* fixed statistics: the derivative is the scale alone */
        cuda_scale_by_inv_std(in_deriv, out_deriv, channels, var, eps);
        return;
    }
    cudnnHandle_t h = dnn();
    struct norm_call c = norm_call_new(h, in, channels);
    float *unused = cuda_malloc(2 * (size_t)channels * sizeof(float)); /* scale, offset grads */
    const float one = 1, zero = 0;
    /* no saved statistics: cuDNN recomputes this batch's from x, the ones forward used */
    CUDNN_CHECK(cudnnBatchNormalizationBackward(
        h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, c.x, in.data, c.x, out_deriv.data,
        c.x, in_deriv.data, c.channel, c.ones, unused, unused + channels, eps, NULL, NULL));
    cuda_free(unused);
    norm_call_free(&c);
}
#endif
