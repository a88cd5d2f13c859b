/* What the fuzz targets share. */
#ifndef PARNET_TESTS_FUZZ_H
#define PARNET_TESTS_FUZZ_H

#include "io/io.h"

#include <stdio.h>

/* Wrap the size bytes at data as the input stream in, named name (at its end at once when size is
 * 0). Returns the FILE behind it, for the caller to fclose after kin_close; NULL if it could not
 * be opened. */
static inline FILE *fuzz_kin(struct kin *in, const void *data, size_t size, const char *name) {
    FILE *f = fmemopen((void *)data, size ? size : 1, "rb");
    if (!f) return NULL;
    kin_wrap(in, f, name, (int64_t)size);
    if (!size) in->eof = 1;
    return f;
}

#endif
