// The patch matrix of a convolution and batch norm's fixed-statistics derivative (cuda.h: images
// in rows): gathers and a per-channel scale, which cuDNN has no call for (cudnnIm2Col lays its
// patches out channel-slowest; matrix.h's patch columns are channel-fastest, as the filters).
#include "cuda/cuda-internal.h"

void cuda_conv_patches(cuda_mat patches, cuda_mat in, const matrix_conv *g) {
    // patch row (n, oy, ox), column (ky, kx, ch): image n's (oy s_h - p_h + ky, ox s_w - p_w + kx,
    // ch), zero where that falls in the padding
    const matrix_conv s = *g;
    float *p = patches.data;
    const float *x = in.data;
    int ps = patches.stride, xs = in.stride, kc = s.k_w * s.in_c;
    map2d(patches.rows, patches.cols, [=] __device__(int r, int c) {
        int ox = r % s.out_w, oy = (r / s.out_w) % s.out_h, n = r / (s.out_w * s.out_h);
        int ky = c / kc, kx = (c % kc) / s.in_c, ch = c % s.in_c;
        int y = oy * s.stride_h - s.pad_h + ky, xx = ox * s.stride_w - s.pad_w + kx;
        bool inside = y >= 0 && y < s.in_h && xx >= 0 && xx < s.in_w;
        p[(long)r * ps + c] =
            inside ? x[(long)n * xs + ((long)y * s.in_w + xx) * s.in_c + ch] : 0.0f;
    });
}

void cuda_scale_by_inv_std(cuda_mat dst, cuda_mat src, int channels, const float *var,
                           float eps) {
    float *d = dst.data;
    const float *a = src.data;
    int ds = dst.stride, as = src.stride;
    map2d(dst.rows, dst.cols, [=] __device__(int r, int c) {
        d[(long)r * ds + c] = a[(long)r * as + c] * rsqrtf(var[c % channels] + eps);
    });
}
