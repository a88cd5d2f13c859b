/* libFuzzer target for the model reader and the block-momentum state beside a model
 * (update/update.h): any bytes, binary or text, must give a network (a state) or an error, never a
 * crash, a leak or an unbounded allocation. Build with `make fuzz`. */
#include "nnet/nnet.h"
#include "update/update.h"

#include <stdio.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    if (size == 0) return 0;
    FILE *f = fmemopen((void *)data, size, "r");
    if (!f) return 0;
    struct kin in;
    kin_wrap(&in, f, "fuzz", (int64_t)size);
    int binary;
    if (!io_read_header(&in, &binary)) {
        struct nnet *n = nnet_read(&in, binary);
        if (n) {
            /* a model that reads must also run */
            struct matrix x;
            int ctx = nnet_left_context(n) + nnet_right_context(n), small = ctx < 50;
            for (int i = 0; i < nnet_num_components(n); i++)
                small &= nnet_component(n, i)->output_dim < 20000 &&
                         nnet_component(n, i)->input_dim < 20000; /* a graph's Append */
            if (small && nnet_input_dim(n) < 20000) {
                matrix_init(&x, ctx + 2, nnet_input_dim(n));
                nnet_forward(n, &x, 1, 0);
                matrix_release(&x);
            }
        }
        nnet_free(n);
    }
    kin_close(&in);
    rewind(f);
    kin_wrap(&in, f, "fuzz", (int64_t)size);
    struct vector v = {0};
    int num_jobs, nesterov;
    bmuf_state_read_stream(&in, &v, &num_jobs, &nesterov);
    vector_release(&v);
    kin_close(&in);
    fclose(f);
    error_clear();
    return 0;
}
