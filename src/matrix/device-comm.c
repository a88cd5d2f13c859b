/* Sums of device buffers across processes (matrix.h: matrix_device_comm_*): the CUDA backend's
 * NCCL communicator where the ranks compute on GPUs, nothing otherwise. A file of its own so that
 * only the program that calls it links NCCL. */
#include <stdlib.h>

#include "matrix/matrix-internal.h"

struct matrix_device_comm {
    struct cuda_comm *cuda;
};

int matrix_device_comm_new(struct matrix_device_comm **out, int rank, int size,
                           void (*bcast)(void *ctx, void *buf, int bytes), void *ctx) {
    *out = NULL;
#if HAVE_CUDA
    if (matrix_default_device != MATRIX_GPU) return 0;
    struct cuda_comm *c;
    if (cuda_comm_new(&c, rank, size, bcast, ctx)) return -1;
    *out = xmalloc(sizeof **out);
    (*out)->cuda = c;
#endif
    return 0;
}

int matrix_device_comm_sum(struct matrix_device_comm *c, float *data, size_t count, int device) {
    if (device == MATRIX_CPU) return 1;
    ASSERT(c); /* a buffer on the device: the ranks compute on GPUs, so there is a communicator */
#if HAVE_CUDA
    return cuda_comm_sum(c->cuda, data, count);
#else
    return -1;
#endif
}

void matrix_device_comm_free(struct matrix_device_comm *c) {
    if (!c) return;
#if HAVE_CUDA
    cuda_comm_free(c->cuda);
#endif
    free(c);
}
