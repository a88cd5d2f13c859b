/* Sums across processes on the GPU with NCCL (cuda.h: cuda_comm_*). Only nnet-train-mpi calls it
 * (through matrix_device_comm_*), so only it links -lnccl: the archive member is not pulled into
 * the other programs. Empty without make CUDA=1. */
#if HAVE_CUDA
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cuda/cuda.h"

struct cuda_comm {
    ncclComm_t nccl;
};

int cuda_comm_new(struct cuda_comm **out, int rank, int size,
                  void (*bcast)(void *ctx, void *buf, int bytes), void *ctx) {
    ncclUniqueId id;
    if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) memset(&id, 0, sizeof id);
    bcast(ctx, &id, (int)sizeof id);
    struct cuda_comm *c = xmalloc(sizeof *c);
    ncclResult_t r = ncclCommInitRank(&c->nccl, size, id, rank);
    if (r != ncclSuccess) {
        free(c);
        return error_set("ncclCommInitRank: %s", ncclGetErrorString(r));
    }
    *out = c;
    return 0;
}

int cuda_comm_sum(struct cuda_comm *c, float *data, size_t count) {
    ncclResult_t r = ncclAllReduce(data, data, count, ncclFloat, ncclSum, c->nccl, 0);
    if (r != ncclSuccess) return error_set("ncclAllReduce: %s", ncclGetErrorString(r));
    cudaError_t e = cudaStreamSynchronize(0);
    if (e != cudaSuccess) return error_set("ncclAllReduce: %s", cudaGetErrorString(e));
    return 0;
}

void cuda_comm_free(struct cuda_comm *c) {
    if (!c) return;
    ncclCommDestroy(c->nccl);
    free(c);
}
#endif
