/* libFuzzer target: arbitrary bytes as an scp file over a fixed archive "a.ark" (in a private
 * temporary directory), read sequentially and by random access, with ranges. Pipes, absolute
 * paths and stdin are neutralised so that fuzz input can never run commands or block. */
#include "fuzz.h"
#include "io/io.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/fuzz-scp.XXXXXX";

static void cleanup(void) {
    unlink("a.ark");
    rmdir(dir);
}

/* The archive lives in a private directory that the target works in (so that fuzzed scp lines
 * can only name files there). libFuzzer reads and writes the corpus and artifacts by the paths
 * it was given, so relative ones are made absolute here, before the chdir (libFuzzer parses its
 * arguments after LLVMFuzzerInitialize). */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) abort();
    int has_artifact_prefix = 0;
    char **args = malloc(sizeof(char *) * ((size_t)*argc + 2));
    for (int i = 0; i < *argc; i++) {
        const char *a = (*argv)[i];
        char *abs = NULL;
        if (i > 0 && a[0] != '-' && a[0] != '/') {
            abs = malloc(strlen(cwd) + strlen(a) + 2);
            sprintf(abs, "%s/%s", cwd, a);
        } else if (!strncmp(a, "-artifact_prefix=", 17) && a[17] != '/') {
            has_artifact_prefix = 1;
            abs = malloc(strlen(cwd) + strlen(a) + 2);
            sprintf(abs, "-artifact_prefix=%s/%s", cwd, a + 17);
        } else if (!strncmp(a, "-artifact_prefix=", 17)) {
            has_artifact_prefix = 1;
        }
        args[i] = abs ? abs : (*argv)[i];
    }
    int n = *argc;
    if (!has_artifact_prefix) {
        args[n] = malloc(strlen(cwd) + 20);
        sprintf(args[n++], "-artifact_prefix=%s/", cwd);
    }
    args[n] = NULL;
    *argc = n;
    *argv = args;
    return 0;
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
    struct kin in;
    FILE *f = fuzz_kin(&in, text, size, "mem.scp");
    if (!f) abort();
    struct table_reader r;
    if (table_reader_open_stream(&r, "scp:mem.scp", &in, &holder_matrix)) abort();
    struct matrix m = {0};
    while (table_reader_next(&r, &m) > 0) {
    }
    table_reader_close(&r);
    fclose(f);
    /* Random access over the same text. */
    if (!(f = fuzz_kin(&in, text, size, "mem.scp"))) abort();
    if (table_reader_open_stream(&r, "scp:mem.scp", &in, &holder_matrix)) abort();
    table_reader_lookup(&r, "k1", &m);
    table_reader_lookup(&r, "x", &m);
    table_reader_close(&r);
    fclose(f);
    matrix_release(&m);
    free(text);
    return 0;
}
