/* libFuzzer target: arbitrary bytes as a Kaldi archive of matrices, int32 vectors, vectors or
 * compressed matrices (the first byte picks the holder and whether to read ahead). */
#include "fuzz.h"
#include "io/io.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static const struct holder_ops *holders[] = {&holder_matrix, &holder_int32_vector,
                                                 &holder_vector, &holder_compressed_matrix,
                                                 &holder_int32};
    const struct holder_ops *ops = holders[data[0] % 5];
    const char *spec = (data[0] / 5) % 2 ? "ark,bg:mem" : "ark:mem";
    data++;
    size--;
    struct kin in;
    FILE *f = fuzz_kin(&in, data, size, "mem");
    if (!f) return 0;
    struct table_reader r;
    if (table_reader_open_stream(&r, spec, &in, ops)) abort();
    void *obj = calloc(1, ops->size);
    int rc, n = 0;
    while ((rc = table_reader_next(&r, obj)) > 0) {
        if (!*table_reader_key(&r)) abort(); /* a returned item always has a key */
        n++;
    }
    if (rc < 0 && !*error_get()) abort(); /* an error always has a message */
    ops->release(obj);
    free(obj);
    table_reader_close(&r);
    fclose(f);
    return 0;
}
