/* zlib helpers for compressed example archives: whole-buffer deflate, and an inflate that is
 * told the exact size to expect so that a corrupt stream cannot make it allocate. */
#include "io/io.h"

#include <limits.h>
#include <stdlib.h>
#include <zlib.h>

int io_deflate(const void *src, size_t src_size, int level, unsigned char **dst,
               size_t *dst_size) {
    *dst = NULL;
    *dst_size = 0;
    if (src_size > UINT_MAX / 2) return error_set("deflate: buffer too large (%zu bytes)", src_size);
    if (level < -1 || level > 9) return error_set("deflate: invalid level %d", level);
    uLongf bound = compressBound((uLong)src_size);
    unsigned char *out = xmalloc(bound);
    int rc = compress2(out, &bound, src, (uLong)src_size, level);
    if (rc != Z_OK) {
        free(out);
        return error_set("deflate failed (zlib error %d)", rc);
    }
    *dst = out;
    *dst_size = bound;
    return 0;
}

int io_inflate(const void *src, size_t src_size, void *dst, size_t expected_size) {
    if (src_size > UINT_MAX || expected_size > UINT_MAX)
        return error_set("inflate: buffer too large");
    z_stream zs = {0};
    if (inflateInit(&zs) != Z_OK) return error_set("inflate: cannot initialise zlib");
    zs.next_in = (Bytef *)(uintptr_t)src;
    zs.avail_in = (uInt)src_size;
    unsigned char dummy;
    zs.next_out = expected_size ? dst : &dummy;
    zs.avail_out = (uInt)expected_size;
    int rc = inflate(&zs, Z_FINISH);
    size_t got = zs.total_out, left = zs.avail_in;
    inflateEnd(&zs);
    if (rc == Z_STREAM_END && got == expected_size && left == 0) return 0;
    if (rc == Z_STREAM_END && left)
        return error_set("inflate: %zu bytes of trailing garbage after the compressed data", left);
    if (rc == Z_STREAM_END || rc == Z_BUF_ERROR) {
        if (got == expected_size && rc == Z_BUF_ERROR && zs.avail_in == 0)
            return error_set("inflate: compressed data truncated");
        if (got == expected_size)
            return error_set("inflate: data inflates to more than the expected %zu bytes",
                             expected_size);
        return error_set("inflate: compressed data truncated (got %zu of %zu bytes)", got,
                         expected_size);
    }
    return error_set("inflate: corrupt compressed data (zlib error %d)", rc);
}
