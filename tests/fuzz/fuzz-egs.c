/* libFuzzer target for the example reader: the input is an archive of examples ("key " + object,
 * binary or text), read through holder_example as a table reader would, and every example that
 * reads is decoded, trimmed into a minibatch and written back. Any crash, leak or sanitizer report
 * is a bug; errors are expected. */
#include "egs/egs.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FILE *f = fmemopen((void *)data, size ? size : 1, "rb");
    if (!f) return 0;
    if (!size) {
        fclose(f);
        return 0;
    }
    struct kin in;
    memset(&in, 0, sizeof in);
    kin_wrap(&in, f, "fuzz", (int64_t)size);
    struct example eg;
    example_init(&eg);
    for (int item = 0; item < 8; item++) {
        char key[64];
        if (io_read_token(&in, 0, key, sizeof key)) break;
        if (holder_example.read(&in, &eg)) break;
        /* bound the work a tiny input can ask for */
        if ((int64_t)eg.rows * example_input_dim(&eg) > (1 << 22)) continue;
        struct matrix m;
        matrix_init_on(&m, eg.rows, example_input_dim(&eg), MATRIX_CPU);
        if (example_input_decode(&eg, &m) == 0) {
            const struct example *one = &eg;
            struct egs_minibatch mb;
            egs_minibatch_init(&mb);
            egs_minibatch_build(&mb, &one, 1, 0, 0);
            egs_minibatch_release(&mb);
        }
        matrix_release(&m);
        char *buf = NULL;
        size_t len = 0;
        FILE *o = open_memstream(&buf, &len);
        struct kout out;
        memset(&out, 0, sizeof out);
        kout_wrap(&out, o, "out");
        holder_example.write(&out, 1, &eg);
        kout_close(&out);
        fclose(o);
        free(buf);
    }
    example_release(&eg);
    kin_close(&in);
    fclose(f);
    return 0;
}
