/* cuda: row-wise operations (softmax, log-softmax, normalize and their backward passes), one
 * block per row. Each element is read and written by the same thread, and every write follows
 * the row's reductions (block_reduce synchronizes), so dst may alias src and in_deriv may alias
 * out_deriv. The arithmetic follows src/matrix/matrix-ops.c. */
#include "cuda/cuda-internal.h"

#define AT(m, r, c) ((m).data[(long)(r) * (m).stride + (c)])

/* Kaldi's kNormFloor on the mean square (see matrix-ops.c). */
#define NORMALIZE_FLOOR 0x1p-66

__global__ void k_softmax(struct cuda_mat dst, struct cuda_mat src, int log_softmax) {
    int n = src.cols;
    for (int r = blockIdx.x; r < src.rows; r += gridDim.x) {
        float mx = -INFINITY;
        for (int c = threadIdx.x; c < n; c += blockDim.x) {
            float x = AT(src, r, c);
            mx = x > mx ? x : mx;
        }
        mx = block_reduce(mx, op_max(), -INFINITY);
        double s = 0;
        if (log_softmax) {
            for (int c = threadIdx.x; c < n; c += blockDim.x) {
                float t = AT(src, r, c) - mx;
                AT(dst, r, c) = t;
                s += dev_exp(t);
            }
            s = block_reduce(s, op_add(), 0.0);
            float lse = (float)log(s);
            for (int c = threadIdx.x; c < n; c += blockDim.x) AT(dst, r, c) -= lse;
        } else {
            for (int c = threadIdx.x; c < n; c += blockDim.x) {
                float e = dev_exp(AT(src, r, c) - mx);
                AT(dst, r, c) = e;
                s += e;
            }
            s = block_reduce(s, op_add(), 0.0);
            float inv = (float)(1.0 / s); /* >= 1 term equals 1 */
            for (int c = threadIdx.x; c < n; c += blockDim.x) AT(dst, r, c) *= inv;
        }
    }
}

void cuda_softmax_rows(struct cuda_mat dst, struct cuda_mat src, int log_softmax) {
    if (mat_empty(src)) return;
    k_softmax<<<row_blocks(src.rows), row_threads(src.cols)>>>(dst, src, log_softmax);
    LAUNCH_CHECK();
}

/* softmax: d = y (g - <g, y>);  log-softmax: d = g - exp(z) sum(g) */
__global__ void k_diff_softmax(struct cuda_mat d, struct cuda_mat y, struct cuda_mat g,
                               int log_softmax) {
    int n = y.cols;
    for (int r = blockIdx.x; r < y.rows; r += gridDim.x) {
        double acc = 0;
        for (int c = threadIdx.x; c < n; c += blockDim.x)
            acc += log_softmax ? (double)AT(g, r, c) : (double)AT(g, r, c) * AT(y, r, c);
        float s = (float)block_reduce(acc, op_add(), 0.0);
        for (int c = threadIdx.x; c < n; c += blockDim.x) {
            float gv = AT(g, r, c), yv = AT(y, r, c);
            AT(d, r, c) = log_softmax ? gv - dev_exp(yv) * s : yv * (gv - s);
        }
    }
}

void cuda_diff_softmax(struct cuda_mat in_deriv, struct cuda_mat out_value,
                       struct cuda_mat out_deriv, int log_softmax) {
    if (mat_empty(out_value)) return;
    k_diff_softmax<<<row_blocks(out_value.rows), row_threads(out_value.cols)>>>(
        in_deriv, out_value, out_deriv, log_softmax);
    LAUNCH_CHECK();
}

/* y = x / rms(x), rms floored */
__global__ void k_normalize(struct cuda_mat dst, struct cuda_mat src) {
    int n = src.cols;
    for (int r = blockIdx.x; r < src.rows; r += gridDim.x) {
        double acc = 0;
        for (int c = threadIdx.x; c < n; c += blockDim.x) {
            double x = AT(src, r, c);
            acc += x * x;
        }
        double ms = block_reduce(acc, op_add(), 0.0) / n;
        float f = (float)(1.0 / sqrt(ms > NORMALIZE_FLOOR ? ms : NORMALIZE_FLOOR));
        for (int c = threadIdx.x; c < n; c += blockDim.x) AT(dst, r, c) = AT(src, r, c) * f;
    }
}

void cuda_normalize_rows(struct cuda_mat dst, struct cuda_mat src) {
    if (mat_empty(src)) return;
    k_normalize<<<row_blocks(src.rows), row_threads(src.cols)>>>(dst, src);
    LAUNCH_CHECK();
}

/* With p = x.x / D and f = max(p, floor)^-1/2: dF/dx = f g - [p > floor] (f^3 / D) (g.x) x. */
__global__ void k_diff_normalize(struct cuda_mat d, struct cuda_mat x, struct cuda_mat g) {
    int n = x.cols;
    for (int r = blockIdx.x; r < x.rows; r += gridDim.x) {
        double xx = 0, gx = 0;
        for (int c = threadIdx.x; c < n; c += blockDim.x) {
            double xv = AT(x, r, c);
            xx += xv * xv;
            gx += (double)AT(g, r, c) * xv;
        }
        double ms = block_reduce(xx, op_add(), 0.0) / n;
        gx = block_reduce(gx, op_add(), 0.0);
        double f = 1.0 / sqrt(ms > NORMALIZE_FLOOR ? ms : NORMALIZE_FLOOR);
        double b = ms > NORMALIZE_FLOOR ? f * f * f / n * gx : 0.0;
        float ff = (float)f, bf = (float)b;
        for (int c = threadIdx.x; c < n; c += blockDim.x)
            AT(d, r, c) = ff * AT(g, r, c) - bf * AT(x, r, c);
    }
}

void cuda_diff_normalize_rows(struct cuda_mat in_deriv, struct cuda_mat in_value,
                              struct cuda_mat out_deriv) {
    if (mat_empty(in_value)) return;
    k_diff_normalize<<<row_blocks(in_value.rows), row_threads(in_value.cols)>>>(
        in_deriv, in_value, out_deriv);
    LAUNCH_CHECK();
}
