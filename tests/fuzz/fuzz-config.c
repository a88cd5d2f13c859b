/* libFuzzer target for the network config parser (nnet_init_from_config_text, config_line_*):
 * any text gives a network or an error naming the line, never a crash. Numbers are capped at
 * three digits before parsing so that a valid config cannot ask for gigabytes (a size is not a
 * parser bug); a network that comes out must write itself, and run forward where its
 * activations take less than 64 MB. */
#include "nnet/nnet.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    char *text = malloc(size + 1);
    /* NULs become spaces; a digit run longer than three is cut to its first three ("12345" ->
     * "123  ") */
    for (size_t i = 0, run = 0; i < size; i++) {
        char c = data[i] ? (char)data[i] : ' ';
        run = isdigit((unsigned char)c) ? run + 1 : 0;
        text[i] = run > 3 ? ' ' : c;
    }
    text[size] = '\0';
    struct nnet *n = nnet_init_from_config_text(text, 1);
    if (!n && !*error_get()) abort(); /* an error always has a message */
    if (n) {
        /* Splices multiply the width (each offset a copy): capped digits still chain to widths
         * whose activations would take gigabytes, so the forward runs only where they are small. */
        int ctx = nnet_left_context(n) + nnet_right_context(n);
        long long floats = 0;
        for (int i = 0; i < nnet_num_components(n); i++) {
            const struct component *c = nnet_component(n, i);
            floats += (long long)(ctx + 2) * ((long long)c->input_dim + c->output_dim);
        }
        if (ctx < 200 && floats < (1LL << 24)) {
            struct matrix x;
            matrix_init(&x, ctx + 2, nnet_input_dim(n));
            nnet_forward(n, &x, 1, 0);
            matrix_release(&x);
        }
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        struct kout out;
        kout_wrap(&out, f, "mem-out");
        if (nnet_write(n, &out, 1)) abort();
        kout_close(&out);
        fclose(f);
        free(buf);
        nnet_free(n);
    }
    free(text);
    error_clear();
    return 0;
}
