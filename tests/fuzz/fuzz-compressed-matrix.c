/* libFuzzer target: arbitrary bytes as a binary matrix object (FM, DM, CM, CM2, CM3); what
 * decodes is compressed again with every method, decoded, and written, which must not fail. */
#include "fuzz.h"
#include "io/io.h"

#include <math.h>
#include <stdlib.h>

/* 1 if compression must succeed: every element finite and max - min finite too. */
static int compressible(const struct matrix *m) {
    float lo = 0, hi = 0;
    for (int r = 0; r < m->rows; r++)
        for (int c = 0; c < m->cols; c++) {
            float v = m->data[(size_t)r * m->stride + c];
            if (!isfinite(v)) return 0;
            if ((r == 0 && c == 0) || v < lo) lo = v;
            if ((r == 0 && c == 0) || v > hi) hi = v;
        }
    if (hi == lo) hi = (float)(lo + (1.0 + fabs(lo))); /* Kaldi's range for a constant matrix */
    return isfinite(hi - lo);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct kin in;
    FILE *f = fuzz_kin(&in, data, size, "mem");
    if (!f) return 0;
    struct matrix m = {0};
    int binary = size && data[0] != 0 && data[0] != 'C' && data[0] != 'F' && data[0] != 'D' ? 0 : 1;
    if (io_read_matrix(&in, binary, &m) == 0) {
        FILE *null = fopen("/dev/null", "wb");
        struct kout out;
        kout_wrap(&out, null, "null");
        int finite = compressible(&m);
        for (int method = CM_METHOD_AUTO; method <= CM_METHOD_1BYTE_01; method++) {
            struct compressed_matrix cm = {0};
            int rc = compressed_matrix_compress(&cm, &m, method);
            if (rc && finite) abort(); /* only NaN/Inf may refuse compression */
            if (!rc) {
                struct matrix d = {0};
                compressed_matrix_decode(&cm, &d);
                if (d.rows != m.rows || d.cols != m.cols) abort();
                if (io_write_compressed_matrix(&out, 1, &cm)) abort();
                matrix_release(&d);
            }
            compressed_matrix_release(&cm);
        }
        if (io_write_matrix(&out, 1, &m) || io_write_matrix(&out, 0, &m)) abort();
        kout_close(&out);
        fclose(null);
    }
    matrix_release(&m);
    kin_close(&in);
    fclose(f);
    return 0;
}
