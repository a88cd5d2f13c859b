/* conv-geometry: the shape of a convolution or pooling over images in rows (matrix.h, "images
 * in rows"), in its own header because the CUDA backend (src/cuda/cuda.h, seen by C++) takes it
 * too. Plain C that C++ reads. */
#ifndef PARNET_MATRIX_CONV_GEOMETRY_H
#define PARNET_MATRIX_CONV_GEOMETRY_H

struct matrix_conv {
    int in_h, in_w, in_c;   /* the input image */
    int out_c;              /* filters (convolution); pooling: set to in_c by matrix_conv_setup */
    int k_h, k_w;           /* filter or pooling window */
    int stride_h, stride_w; /* >= 1 */
    int pad_h, pad_w;       /* >= 0, less than the window */
    int out_h, out_w;       /* set by matrix_conv_setup */
};

#endif
