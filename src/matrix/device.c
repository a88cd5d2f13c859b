/* matrix: device selection (--use-gpu) and synchronization. */
#include <string.h>
#include <unistd.h>

#include "matrix/matrix-internal.h"

int matrix_select_device(const char *use_gpu) { return matrix_select_device_rank(use_gpu, -1); }

int matrix_select_device_rank(const char *use_gpu, int local_rank) {
    ASSERT(use_gpu);
    const char *v = use_gpu;
    int yes = !strcmp(v, "yes"), wait = !strcmp(v, "wait"), optional = !strcmp(v, "optional");
    if (!strcmp(v, "no")) {
        matrix_default_device = MATRIX_CPU;
        return 0;
    }
    if (!yes && !wait && !optional)
        return error_set("--use-gpu: expected yes, no, optional or wait, got '%s'", v);
#if HAVE_CUDA
    char why[512] = "", info[512] = "";
    if (local_rank >= 0) cuda_device_prefer(local_rank);
    for (int attempt = 0;; attempt++) {
        int d = cuda_device_open(why, sizeof why, info, sizeof info);
        if (d >= 0) {
            matrix_default_device = MATRIX_GPU;
            LOG("--use-gpu=%s: using %s", v, info);
            return 0;
        }
        if (d != -2 || !wait) break;
        if (attempt % 30 == 0) LOG("--use-gpu=wait: %s; trying again every 10 s", why);
        sleep(10);
    }
#else
    (void)local_rank;
    const char *why = "parnet was built without CUDA (make CUDA=1)";
#endif
    matrix_default_device = MATRIX_CPU;
    if (optional) {
        LOG("--use-gpu=optional: no GPU (%s); running on the CPU", why);
        return 0;
    }
    return error_set("--use-gpu=%s but no GPU: %s", v, why);
}

void matrix_sync(void) {
#if HAVE_CUDA
    cuda_sync();
#endif
}
