/* libFuzzer target for the text-mode readers: the first byte picks one of them (a text matrix,
 * a vector, an int32 vector, a run of tokens/int32/float/bool primitives, or a text archive read
 * through holder_matrix / holder_int32_vector / holder_int32 with "ark,t"), the rest is the text.
 * What reads as a matrix is written back in text mode and must read again to the same shape. */
#include "fuzz.h"
#include "io/io.h"

#include <stdlib.h>
#include <string.h>

static void roundtrip(const struct matrix *m) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct kout out;
    kout_wrap(&out, f, "mem-out");
    if (io_write_matrix(&out, 0, m)) abort();
    if (kout_close(&out)) abort();
    fclose(f);
    struct kin in;
    FILE *g = fuzz_kin(&in, buf, len, "mem-back");
    if (!g) abort();
    struct matrix back = {0};
    if (io_read_matrix(&in, 0, &back)) abort(); /* what we write, we read */
    if (back.rows != m->rows || back.cols != m->cols) abort();
    matrix_release(&back);
    kin_close(&in);
    fclose(g);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int which = data[0] % 8;
    data++;
    size--;
    struct kin in;
    FILE *f = fuzz_kin(&in, data, size, "mem");
    if (!f) return 0;
    switch (which) {
    case 0: {
        struct matrix m = {0};
        if (io_read_matrix(&in, 0, &m) == 0) roundtrip(&m);
        else if (!*error_get()) abort();
        matrix_release(&m);
        break;
    }
    case 1: {
        struct vector v = {0};
        io_read_vector(&in, 0, &v);
        vector_release(&v);
        break;
    }
    case 2: {
        struct int32_vec v = {0};
        io_read_int32_vector(&in, 0, &v);
        int32_vec_release(&v);
        break;
    }
    case 3: { /* primitives until the first error */
        char tok[64];
        int32_t i;
        float x;
        double d;
        int b;
        for (int k = 0; k < 64; k++) {
            int rc;
            switch (k % 5) {
            case 0: rc = io_read_token(&in, 0, tok, sizeof tok); break;
            case 1: rc = io_read_int32(&in, 0, &i); break;
            case 2: rc = io_read_float(&in, 0, &x); break;
            case 3: rc = io_read_double(&in, 0, &d); break;
            default: rc = io_read_bool(&in, 0, &b); break;
            }
            if (rc) break;
        }
        break;
    }
    default: { /* a text archive */
        static const struct holder_ops *holders[] = {&holder_matrix, &holder_int32_vector,
                                                     &holder_int32, &holder_vector};
        const struct holder_ops *ops = holders[which - 4];
        struct table_reader r;
        if (table_reader_open_stream(&r, "ark,t:mem", &in, ops)) abort();
        void *obj = calloc(1, ops->size);
        int rc;
        while ((rc = table_reader_next(&r, obj)) > 0)
            if (!*table_reader_key(&r)) abort();
        if (rc < 0 && !*error_get()) abort();
        ops->release(obj);
        free(obj);
        table_reader_close(&r);
        fclose(f);
        error_clear();
        return 0;
    }
    }
    kin_close(&in);
    fclose(f);
    error_clear();
    return 0;
}
