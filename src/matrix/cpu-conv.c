/* cpu: images in rows (matrix.h's convolution and max-pooling). The engine is chosen here: with
 * oneDNN, its convolution and pooling primitives (onednn-conv.c; the convolution in bf16 under
 * --precision=bf16 where both channel counts reach CONV_BF16_MIN_CHANNELS); without it (DNNL=0),
 * patch matrices and OpenBLAS products (cpu_gemm), a block of images at a time, and plain loops
 * for the pooling. The patch matrix itself (cpu_conv_patches) is always built here: natural
 * gradient needs it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "matrix/cpu-internal.h"
#include "matrix/matrix.h"
#include "matrix/onednn-internal.h"
#include "matrix/onednn.h"

#define CONV_BF16_MIN_CHANNELS 16

/* Patches of images [n0, n0 + nn) of in into p ((nn * out_h * out_w) x (k_h * k_w * in_c)). */
static void patches_of(struct cpu_mat p, struct cpu_mat in, int n0, int nn,
                       const struct matrix_conv *g) {
    int kc = g->k_w * g->in_c;
    for (int n = 0; n < nn; n++) {
        const float *img = in.data + (long)(n0 + n) * in.stride;
        for (int oy = 0; oy < g->out_h; oy++)
            for (int ox = 0; ox < g->out_w; ox++) {
                float *row = p.data + ((long)(n * g->out_h + oy) * g->out_w + ox) * p.stride;
                int x0 = ox * g->stride_w - g->pad_w;
                for (int ky = 0; ky < g->k_h; ky++) {
                    int y = oy * g->stride_h - g->pad_h + ky;
                    float *dst = row + ky * kc;
                    if (y < 0 || y >= g->in_h) {
                        memset(dst, 0, (size_t)kc * sizeof *dst);
                        continue;
                    }
                    for (int kx = 0; kx < g->k_w; kx++) {
                        int x = x0 + kx;
                        float *d = dst + kx * g->in_c;
                        if (x < 0 || x >= g->in_w)
                            memset(d, 0, (size_t)g->in_c * sizeof *d);
                        else
                            memcpy(d, img + ((long)y * g->in_w + x) * g->in_c,
                                   (size_t)g->in_c * sizeof *d);
                    }
                }
            }
    }
}

void cpu_conv_patches(struct cpu_mat patches, struct cpu_mat in, const struct matrix_conv *g) {
    patches_of(patches, in, 0, in.rows, g);
}

#if !HAVE_DNNL
/* Images per block: the patch matrix of a block stays near 4M floats. */
static int block_images(const struct matrix_conv *g) {
    long per = (long)g->out_h * g->out_w * g->k_h * g->k_w * g->in_c;
    long b = (4L << 20) / (per > 0 ? per : 1);
    return b < 1 ? 1 : b > 4096 ? 4096 : (int)b;
}

/* The calling thread's patch matrix: on the heap and registered, so that it is freed at exit
 * even when a pool thread ends first. */
static _Thread_local struct grow_buf *scratch;

static void scratch_release(void *p) {
    struct grow_buf *b = p;
    free(b->p);
    free(b);
}

static struct cpu_mat block_patches(int nn, const struct matrix_conv *g) {
    int rows = nn * g->out_h * g->out_w, cols = g->k_h * g->k_w * g->in_c;
    if (!scratch) {
        scratch = xcalloc(1, sizeof *scratch);
        onednn_thread_register(scratch, scratch_release);
    }
    struct cpu_mat p = {grow_buf_get(scratch, (size_t)rows * cols * sizeof(float)), rows, cols,
                        cols};
    return p;
}

/* The output (or its derivative) of images [n0, n0 + nn) as (nn * out_h * out_w) x out_c. */
static struct cpu_mat out_positions(struct cpu_mat out, int n0, int nn,
                                    const struct matrix_conv *g) {
    struct cpu_mat o = {out.data + (long)n0 * out.stride, nn * g->out_h * g->out_w, g->out_c,
                        g->out_c};
    return o;
}
#endif

void cpu_conv_forward(struct cpu_mat out, struct cpu_mat in, struct cpu_mat w, const float *b,
                      const struct matrix_conv *g) {
    if (!out.rows) return;
#if HAVE_DNNL
    onednn_conv_forward(out, in, w, b, g,
                        cpu_layer_bf16() && g->in_c >= CONV_BF16_MIN_CHANNELS &&
                            g->out_c >= CONV_BF16_MIN_CHANNELS);
#else
    int bs = block_images(g);
    for (int n0 = 0; n0 < in.rows; n0 += bs) {
        int nn = in.rows - n0 < bs ? in.rows - n0 : bs;
        struct cpu_mat p = block_patches(nn, g), o = out_positions(out, n0, nn, g);
        patches_of(p, in, n0, nn, g);
        cpu_set_rows(o, b);
        cpu_gemm(o, 1, p, MATRIX_NO_TRANS, w, MATRIX_TRANS, 1);
    }
#endif
}

void cpu_conv_backward_data(struct cpu_mat in_deriv, struct cpu_mat out_deriv, struct cpu_mat w,
                            const struct matrix_conv *g) {
    if (!in_deriv.rows) return;
#if HAVE_DNNL
    onednn_conv_backward_data(in_deriv, out_deriv, w, g,
                              cpu_layer_bf16() && g->in_c >= CONV_BF16_MIN_CHANNELS &&
                                  g->out_c >= CONV_BF16_MIN_CHANNELS);
#else
    int bs = block_images(g), kc = g->k_w * g->in_c;
    for (int n0 = 0; n0 < in_deriv.rows; n0 += bs) {
        int nn = in_deriv.rows - n0 < bs ? in_deriv.rows - n0 : bs;
        struct cpu_mat p = block_patches(nn, g), o = out_positions(out_deriv, n0, nn, g);
        cpu_gemm(p, 1, o, MATRIX_NO_TRANS, w, MATRIX_NO_TRANS, 0); /* patch derivatives */
        for (int n = 0; n < nn; n++) {                            /* added back into images */
            float *img = in_deriv.data + (long)(n0 + n) * in_deriv.stride;
            memset(img, 0, (size_t)in_deriv.cols * sizeof *img);
            for (int oy = 0; oy < g->out_h; oy++)
                for (int ox = 0; ox < g->out_w; ox++) {
                    const float *row =
                        p.data + ((long)(n * g->out_h + oy) * g->out_w + ox) * p.stride;
                    for (int ky = 0; ky < g->k_h; ky++) {
                        int y = oy * g->stride_h - g->pad_h + ky;
                        if (y < 0 || y >= g->in_h) continue;
                        for (int kx = 0; kx < g->k_w; kx++) {
                            int x = ox * g->stride_w - g->pad_w + kx;
                            if (x < 0 || x >= g->in_w) continue;
                            float *d = img + ((long)y * g->in_w + x) * g->in_c;
                            const float *s = row + ky * kc + kx * g->in_c;
                            for (int c = 0; c < g->in_c; c++) d[c] += s[c];
                        }
                    }
                }
        }
    }
#endif
}

void cpu_conv_backward_weights(struct cpu_mat dw, float *db, float alpha, struct cpu_mat in,
                               struct cpu_mat out_deriv, const struct matrix_conv *g, float beta) {
#if HAVE_DNNL
    int oc = g->out_c;
    long nw = (long)dw.rows * dw.cols;
    float *tmp = xmalloc(((size_t)nw + oc) * sizeof *tmp);
    struct cpu_mat t = {tmp, dw.rows, dw.cols, dw.cols};
    if (in.rows)
        onednn_conv_backward_weights(t, tmp + nw, in, out_deriv, g,
                                     cpu_layer_bf16() && g->in_c >= CONV_BF16_MIN_CHANNELS &&
                                         g->out_c >= CONV_BF16_MIN_CHANNELS);
    else
        memset(tmp, 0, ((size_t)nw + oc) * sizeof *tmp);
    for (long i = 0; i < nw; i++) dw.data[i] = alpha * tmp[i] + (beta != 0 ? dw.data[i] : 0);
    for (int o = 0; o < oc; o++) db[o] = alpha * tmp[nw + o] + (beta != 0 ? db[o] : 0);
    free(tmp);
#else
    int bs = block_images(g);
    if (beta == 0) {
        memset(dw.data, 0, (size_t)dw.rows * dw.cols * sizeof *dw.data);
        memset(db, 0, (size_t)g->out_c * sizeof *db);
    }
    for (int n0 = 0; n0 < in.rows; n0 += bs) {
        int nn = in.rows - n0 < bs ? in.rows - n0 : bs;
        struct cpu_mat p = block_patches(nn, g), o = out_positions(out_deriv, n0, nn, g);
        patches_of(p, in, n0, nn, g);
        cpu_gemm(dw, alpha, o, MATRIX_TRANS, p, MATRIX_NO_TRANS, 1);
        for (int r = 0; r < o.rows; r++)
            for (int c = 0; c < o.cols; c++) db[c] += alpha * o.data[(long)r * o.stride + c];
    }
#endif
}

#if !HAVE_DNNL
/* The window of output (oy, ox) clipped to the image: rows [*y0, *y1), columns [*x0, *x1). */
static void window(const struct matrix_conv *g, int oy, int ox, int *y0, int *y1, int *x0,
                   int *x1) {
    *y0 = oy * g->stride_h - g->pad_h;
    *x0 = ox * g->stride_w - g->pad_w;
    *y1 = *y0 + g->k_h < g->in_h ? *y0 + g->k_h : g->in_h;
    *x1 = *x0 + g->k_w < g->in_w ? *x0 + g->k_w : g->in_w;
    if (*y0 < 0) *y0 = 0;
    if (*x0 < 0) *x0 = 0;
}

/* The input column of the maximum of output (n, oy, ox, c) (the first one in a tie). */
static long argmax_of(const float *img, const struct matrix_conv *g, int oy, int ox, int c) {
    int y0, y1, x0, x1;
    window(g, oy, ox, &y0, &y1, &x0, &x1);
    long best = ((long)y0 * g->in_w + x0) * g->in_c + c;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) {
            long k = ((long)y * g->in_w + x) * g->in_c + c;
            if (img[k] > img[best]) best = k;
        }
    return best;
}
#endif

size_t cpu_max_pool_workspace_bytes(const struct matrix_conv *g, int images) {
#if HAVE_DNNL
    return images > 0 ? onednn_max_pool_workspace_bytes(g, images) : 0;
#else
    (void)g, (void)images;
    return 0;
#endif
}

void cpu_max_pool_forward(struct cpu_mat out, struct cpu_mat in, const struct matrix_conv *g,
                          void *ws) {
    if (!out.rows) return;
#if HAVE_DNNL
    onednn_max_pool_forward(out, in, g, ws);
#else
    for (int n = 0; n < in.rows; n++) {
        const float *img = in.data + (long)n * in.stride;
        float *o = out.data + (long)n * out.stride;
        for (int oy = 0; oy < g->out_h; oy++)
            for (int ox = 0; ox < g->out_w; ox++)
                for (int c = 0; c < g->in_c; c++)
                    o[((long)oy * g->out_w + ox) * g->in_c + c] = img[argmax_of(img, g, oy, ox, c)];
    }
#endif
}

void cpu_max_pool_backward(struct cpu_mat in_deriv, struct cpu_mat in, struct cpu_mat out_deriv,
                           const struct matrix_conv *g, const void *ws) {
    if (!in_deriv.rows) return;
#if HAVE_DNNL
    onednn_max_pool_backward(in_deriv, in, out_deriv, g, ws);
#else
    for (int n = 0; n < in.rows; n++) {
        const float *img = in.data + (long)n * in.stride;
        const float *od = out_deriv.data + (long)n * out_deriv.stride;
        float *d = in_deriv.data + (long)n * in_deriv.stride;
        memset(d, 0, (size_t)in_deriv.cols * sizeof *d);
        for (int oy = 0; oy < g->out_h; oy++)
            for (int ox = 0; ox < g->out_w; ox++)
                for (int c = 0; c < g->in_c; c++)
                    d[argmax_of(img, g, oy, ox, c)] += od[((long)oy * g->out_w + ox) * g->in_c + c];
    }
#endif
}

void cpu_batch_norm_forward(struct cpu_mat out, struct cpu_mat in, int channels, float eps,
                            float *mean, float *var, int train) {
    if (!in.rows) return;
#if HAVE_DNNL
    onednn_batch_norm_forward(out, in, channels, eps, mean, var, train);
#else
    long total = (long)in.rows * in.cols, count = total / channels;
    if (train) {
        double *s = xcalloc(2 * (size_t)channels, sizeof *s);
        for (long i = 0; i < total; i++) s[i % channels] += in.data[i];
        for (int c = 0; c < channels; c++) s[c] /= count;
        for (long i = 0; i < total; i++) {
            double d = in.data[i] - s[i % channels];
            s[channels + i % channels] += d * d;
        }
        for (int c = 0; c < channels; c++) {
            mean[c] = (float)s[c];
            var[c] = (float)(s[channels + c] / count);
        }
        free(s);
    }
    for (long i = 0; i < total; i++) {
        int c = (int)(i % channels);
        out.data[i] = (in.data[i] - mean[c]) / sqrtf(var[c] + eps);
    }
#endif
}

void cpu_batch_norm_backward(struct cpu_mat in_deriv, struct cpu_mat in, struct cpu_mat out_deriv,
                             int channels, float eps, const float *mean, const float *var,
                             int train) {
    if (!in.rows) return;
#if HAVE_DNNL
    onednn_batch_norm_backward(in_deriv, in, out_deriv, channels, eps, mean, var, train);
#else
    /* dx = r (dy - mean(dy) - xhat mean(dy xhat)), xhat = (x - mean) r, r = (var + eps)^-1/2;
     * with constant statistics dx = r dy. */
    long total = (long)in.rows * in.cols, count = total / channels;
    double *s = xcalloc(2 * (size_t)channels, sizeof *s);
    if (train)
        for (long i = 0; i < total; i++) {
            int c = (int)(i % channels);
            double xhat = (in.data[i] - mean[c]) / sqrt((double)var[c] + eps);
            s[c] += out_deriv.data[i];
            s[channels + c] += out_deriv.data[i] * xhat;
        }
    for (long i = 0; i < total; i++) {
        int c = (int)(i % channels);
        double r = 1 / sqrt((double)var[c] + eps), xhat = (in.data[i] - mean[c]) * r;
        in_deriv.data[i] =
            (float)(r * (out_deriv.data[i] - (s[c] + xhat * s[channels + c]) / count));
    }
    free(s);
#endif
}
