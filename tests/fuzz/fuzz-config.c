/* libFuzzer target for the network config parser (nnet_init_from_config_text, config_line_*):
 * any text gives a network or an error naming the line, never a crash. Numbers are capped at
 * three digits before parsing so that a valid config cannot ask for gigabytes (a size is not a
 * parser bug); a network that comes out must run forward and write itself. */
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
        int ctx = nnet_left_context(n) + nnet_right_context(n);
        if (ctx < 200) {
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
