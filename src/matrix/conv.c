/* matrix: images in rows, convolution and max-pooling, and batch normalisation (contract in
 * matrix.h); the kernels are cpu-conv.c's and, on the GPU, the CUDA backend's (cuDNN). */
#include <stdlib.h>

#include "matrix/matrix-internal.h"

int matrix_conv_setup(struct matrix_conv *g, int pooling) {
    if (g->in_h < 1 || g->in_w < 1 || g->in_c < 1)
        return error_set("the input image %d x %d x %d is empty", g->in_h, g->in_w, g->in_c);
    if (pooling) g->out_c = g->in_c;
    if (g->out_c < 1) return error_set("%d filters: need at least 1", g->out_c);
    if (g->k_h < 1 || g->k_w < 1) return error_set("the window %d x %d is empty", g->k_h, g->k_w);
    if (g->stride_h < 1 || g->stride_w < 1)
        return error_set("the stride %d x %d must be at least 1", g->stride_h, g->stride_w);
    if (g->pad_h < 0 || g->pad_w < 0 || g->pad_h >= g->k_h || g->pad_w >= g->k_w)
        return error_set("the padding %d x %d must be >= 0 and less than the window %d x %d",
                         g->pad_h, g->pad_w, g->k_h, g->k_w);
    if (g->k_h > g->in_h + 2 * g->pad_h || g->k_w > g->in_w + 2 * g->pad_w)
        return error_set("the window %d x %d is larger than the padded input %d x %d", g->k_h,
                         g->k_w, g->in_h + 2 * g->pad_h, g->in_w + 2 * g->pad_w);
    g->out_h = (g->in_h + 2 * g->pad_h - g->k_h) / g->stride_h + 1;
    g->out_w = (g->in_w + 2 * g->pad_w - g->k_w) / g->stride_w + 1;
    /* Sizes a config could ask for by mistake (or a fuzzer): an image of more than 4M values,
     * more than 16M filter weights, or more than 2^33 multiply-adds per image. */
    double in_dim = (double)g->in_h * g->in_w * g->in_c;
    double out_dim = (double)g->out_h * g->out_w * g->out_c;
    double filt = (double)g->k_h * g->k_w * g->in_c * (pooling ? 1 : g->out_c);
    if (in_dim > (1 << 22) || out_dim > (1 << 22))
        return error_set("an image of %.0f values is too large (at most %d)",
                         in_dim > out_dim ? in_dim : out_dim, 1 << 22);
    if (filt > (1 << 24)) return error_set("%.0f filter weights are too many", filt);
    if ((double)g->out_h * g->out_w * filt > 8589934592.0)
        return error_set("%.3g multiply-adds per image are too many",
                         (double)g->out_h * g->out_w * filt);
    return 0;
}

static void check_images(const struct matrix *m, int h, int w, int c) {
    ASSERT(m->cols == h * w * c);
    ASSERT(m->stride == m->cols || m->rows <= 1); /* rows of images are contiguous */
}

void matrix_conv_forward(struct matrix *out, const struct matrix *in, const struct matrix *w,
                         const struct vector *b, const struct matrix_conv *g) {
    check_images(in, g->in_h, g->in_w, g->in_c);
    check_images(out, g->out_h, g->out_w, g->out_c);
    ASSERT(out->rows == in->rows && w->rows == g->out_c && w->cols == g->k_h * g->k_w * g->in_c);
    ASSERT(w->stride == w->cols && b->dim == g->out_c);
    DISPATCH(GPU4(out, in, w, b), cuda_conv_forward(CM(out), CM(in), CM(w), b->data, g),
             cpu_conv_forward(KM(out), KM(in), KM(w), b->data, g));
}

void matrix_conv_backward_data(struct matrix *in_deriv, const struct matrix *out_deriv,
                               const struct matrix *w, const struct matrix_conv *g) {
    check_images(in_deriv, g->in_h, g->in_w, g->in_c);
    check_images(out_deriv, g->out_h, g->out_w, g->out_c);
    ASSERT(out_deriv->rows == in_deriv->rows && w->rows == g->out_c);
    ASSERT(w->cols == g->k_h * g->k_w * g->in_c && w->stride == w->cols);
    DISPATCH(GPU3(in_deriv, out_deriv, w),
             cuda_conv_backward_data(CM(in_deriv), CM(out_deriv), CM(w), g),
             cpu_conv_backward_data(KM(in_deriv), KM(out_deriv), KM(w), g));
}

void matrix_conv_backward_weights(struct matrix *dw, struct vector *db, float alpha,
                                  const struct matrix *in, const struct matrix *out_deriv,
                                  const struct matrix_conv *g, float beta) {
    check_images(in, g->in_h, g->in_w, g->in_c);
    check_images(out_deriv, g->out_h, g->out_w, g->out_c);
    ASSERT(out_deriv->rows == in->rows && dw->rows == g->out_c);
    ASSERT(dw->cols == g->k_h * g->k_w * g->in_c && dw->stride == dw->cols);
    ASSERT(db->dim == g->out_c && (beta == 0 || beta == 1));
    DISPATCH(GPU4(dw, db, in, out_deriv),
             cuda_conv_backward_weights(CM(dw), db->data, alpha, CM(in), CM(out_deriv), g, beta),
             cpu_conv_backward_weights(KM(dw), db->data, alpha, KM(in), KM(out_deriv), g, beta));
}

void matrix_conv_patches(struct matrix *patches, const struct matrix *in,
                         const struct matrix_conv *g) {
    check_images(in, g->in_h, g->in_w, g->in_c);
    ASSERT(patches->rows == in->rows * g->out_h * g->out_w);
    ASSERT(patches->cols == g->k_h * g->k_w * g->in_c);
    DISPATCH(GPU2(patches, in), cuda_conv_patches(CM(patches), CM(in), g),
             cpu_conv_patches(KM(patches), KM(in), g));
}

void matrix_max_pool_forward(struct matrix *out, const struct matrix *in,
                             const struct matrix_conv *g, struct matrix *argmax) {
    ASSERT(g->out_c == g->in_c);
    check_images(in, g->in_h, g->in_w, g->in_c);
    check_images(out, g->out_h, g->out_w, g->out_c);
    ASSERT(out->rows == in->rows);
    void *ws = NULL;
    if (argmax && !GPU2(out, in)) {
        ASSERT(argmax->device == MATRIX_CPU);
        size_t bytes = cpu_max_pool_workspace_bytes(g, in->rows);
        matrix_resize(argmax, bytes ? 1 : 0, (int)((bytes + 3) / 4));
        ws = bytes ? argmax->data : NULL;
    }
    DISPATCH(GPU2(out, in), cuda_max_pool_forward(CM(out), CM(in), g),
             cpu_max_pool_forward(KM(out), KM(in), g, ws));
}

void matrix_max_pool_backward(struct matrix *in_deriv, const struct matrix *in,
                              const struct matrix *out_deriv, const struct matrix_conv *g,
                              const struct matrix *argmax) {
    ASSERT(g->out_c == g->in_c);
    check_images(in, g->in_h, g->in_w, g->in_c);
    check_images(in_deriv, g->in_h, g->in_w, g->in_c);
    check_images(out_deriv, g->out_h, g->out_w, g->out_c);
    ASSERT(out_deriv->rows == in->rows && in_deriv->rows == in->rows);
    const void *ws = NULL;
    if (argmax && argmax->rows == 1 && !GPU3(in_deriv, in, out_deriv)) {
        size_t bytes = cpu_max_pool_workspace_bytes(g, in->rows);
        if (bytes && (size_t)argmax->cols * 4 >= bytes) ws = argmax->data;
    }
    DISPATCH(GPU3(in_deriv, in, out_deriv),
             cuda_max_pool_backward(CM(in_deriv), CM(in), CM(out_deriv), g),
             cpu_max_pool_backward(KM(in_deriv), KM(in), KM(out_deriv), g, ws));
}

static void check_channels(const struct matrix *m, int channels) {
    ASSERT(channels >= 1 && m->cols % channels == 0);
    ASSERT(m->stride == m->cols || m->rows <= 1);
}

void matrix_batch_norm_forward(struct matrix *out, const struct matrix *in, int channels, float eps,
                               struct vector *mean, struct vector *var, int train) {
    check_channels(in, channels);
    check_channels(out, channels);
    ASSERT(out->rows == in->rows && out->cols == in->cols && eps > 0);
    ASSERT(mean->dim == channels && var->dim == channels && (!train || in->rows > 0));
    DISPATCH(GPU4(out, in, mean, var),
             cuda_batch_norm_forward(CM(out), CM(in), channels, eps, mean->data, var->data, train),
             cpu_batch_norm_forward(KM(out), KM(in), channels, eps, mean->data, var->data, train));
}

void matrix_batch_norm_backward(struct matrix *in_deriv, const struct matrix *in,
                                const struct matrix *out_deriv, int channels, float eps,
                                const struct vector *mean, const struct vector *var, int train) {
    check_channels(in, channels);
    check_channels(in_deriv, channels);
    check_channels(out_deriv, channels);
    ASSERT(in_deriv->rows == in->rows && in_deriv->cols == in->cols);
    ASSERT(out_deriv->rows == in->rows && out_deriv->cols == in->cols && eps > 0);
    ASSERT(mean->dim == channels && var->dim == channels);
    DISPATCH(GPU4(in_deriv, in, out_deriv, mean),
             cuda_batch_norm_backward(CM(in_deriv), CM(in), CM(out_deriv), channels, eps,
                                      mean->data, var->data, train),
             cpu_batch_norm_backward(KM(in_deriv), KM(in), KM(out_deriv), channels, eps, mean->data,
                                     var->data, train));
}
