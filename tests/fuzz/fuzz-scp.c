/* libFuzzer target: arbitrary bytes as an scp file over a fixed archive "a.ark" (in a private
 * temporary directory), read sequentially and by random access, with ranges. Pipes, absolute
 * paths and stdin are neutralised so that fuzz input can never run commands or block. */
#include "io/io.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/fuzz-scp.XXXXXX";

static void cleanup(void) {
    unlink("a.ark");
    rmdir(dir);
}

static void setup(void) {
    static int done;
    if (done) return;
    done = 1;
    if (!mkdtemp(dir) || chdir(dir)) abort();
    atexit(cleanup);
    struct table_writer w;
    if (table_writer_open(&w, "ark:a.ark", &holder_matrix)) abort();
    for (int k = 0; k < 3; k++) {
        struct matrix m;
        matrix_init_on(&m, 3 + k, 2 + k, MATRIX_CPU);
        for (int i = 0; i < m.rows * m.cols; i++) m.data[i] = (float)(i + 10 * k);
        char key[8];
        snprintf(key, sizeof key, "k%d", k);
        if (table_writer_write(&w, key, &m)) abort();
        matrix_release(&m);
    }
    if (table_writer_close(&w)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    for (size_t i = 0; i < size; i++)
        if (text[i] == '|' || text[i] == '/' || text[i] == '-') text[i] = 'x';
    FILE *f = fmemopen(text, size ? size : 1, "rb");
    struct kin in;
    kin_wrap(&in, f, "mem.scp", (int64_t)size);
    if (!size) in.eof = 1;
    struct table_reader r;
    if (table_reader_open_stream(&r, "scp:mem.scp", &in, &holder_matrix)) abort();
    struct matrix m = {0};
    while (table_reader_next(&r, &m) > 0) {
    }
    table_reader_close(&r);
    fclose(f);
    /* Random access over the same text. */
    f = fmemopen(text, size ? size : 1, "rb");
    kin_wrap(&in, f, "mem.scp", (int64_t)size);
    if (!size) in.eof = 1;
    if (table_reader_open_stream(&r, "scp:mem.scp", &in, &holder_matrix)) abort();
    table_reader_lookup(&r, "k1", &m);
    table_reader_lookup(&r, "x", &m);
    table_reader_close(&r);
    fclose(f);
    matrix_release(&m);
    free(text);
    return 0;
}
