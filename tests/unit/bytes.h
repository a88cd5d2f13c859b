/* A tiny byte builder for the unit tests' fixtures: objects and archives written by hand from the
 * byte layouts in src/io/io.h and src/egs/egs.h (not only round trips). Little-endian host. */
#ifndef PARNET_TESTS_BYTES_H
#define PARNET_TESTS_BYTES_H

#include <stdint.h>
#include <string.h>

struct bytes {
    unsigned char b[8192];
    size_t n;
};
static inline void put(struct bytes *x, const void *p, size_t n) {
    memcpy(x->b + x->n, p, n);
    x->n += n;
}
static inline void put_str(struct bytes *x, const char *s) { put(x, s, strlen(s)); }
/* Kaldi's binary int32: its size byte (4), then the 4 bytes. */
static inline void put_i32(struct bytes *x, int32_t v) {
    put(x, "\x04", 1);
    put(x, &v, 4);
}
static inline void put_raw_i32(struct bytes *x, int32_t v) { put(x, &v, 4); }
static inline void put_f(struct bytes *x, float v) { put(x, &v, 4); }
static inline void put_u16(struct bytes *x, uint16_t v) { put(x, &v, 2); }
static inline void put_u8(struct bytes *x, uint8_t v) { put(x, &v, 1); }

#endif
