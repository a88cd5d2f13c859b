/* The lossless coding of 8-bit PQ codes in archive version 2 (egs.h "PQ", egs-internal.h).
 *
 * Rows of a multi-frame example are consecutive frames and its columns neighbouring filterbank
 * channels, so a code is well predicted from its neighbours: the median edge detector of
 * LOCO-I / JPEG-LS (Weinberger, Seroussi & Sapiro, IEEE Trans. Image Processing 9(8), 2000)
 * with a = the code to the left (previous column), b = above (previous row), c = above-left:
 *   pred = min(a, b) if c >= max(a, b);  max(a, b) if c <= min(a, b);  a + b - c otherwise;
 * the first row predicts from the left, the first column from above, code (0, 0) from 128.
 * The residual (code - pred) mod 256, read as a signed byte d, is mapped to u = 2d (d >= 0) or
 * -2d - 1 and written as a Golomb-Rice code with parameter k: u >> k in unary (that many 0 bits,
 * then a 1), then the low k bits of u. k adapts per column as in LOCO-I: k is the least value
 * with N << k >= A, where A is the sum of |d| and N the count seen in that column so far (A = 8,
 * N = 1 at the start of each example; both halved when N reaches 64). A quotient of ESCAPE or
 * more is written as ESCAPE 0 bits followed by u in 8 bits. Bits are packed most significant
 * first; the last byte is padded with 0 bits.
 * On the 23-dimensional fbank of egs/espeak-digits this takes 61% of the raw bytes (253 of 414
 * bytes per example of 18 rows). */
#include "egs/egs-internal.h"

#include <stdlib.h>
#include <string.h>

#define ESCAPE 24
#define HALVE_AT 64

static inline int med_predict(const unsigned char *x, int r, int c, int cols) {
    if (r == 0) return c == 0 ? 128 : x[c - 1];
    const unsigned char *row = x + (size_t)r * cols, *up = row - cols;
    if (c == 0) return up[0];
    int a = row[c - 1], b = up[c], d = up[c - 1];
    int lo = a < b ? a : b, hi = a < b ? b : a;
    return d >= hi ? lo : d <= lo ? hi : a + b - d;
}

struct adapt {
    int a[256], n[256]; /* per column (at most 256 tracked; columns beyond share slot 255) */
};

static inline int adapt_k(const struct adapt *s, int c) {
    int k = 0;
    while ((s->n[c] << k) < s->a[c] && k < 7) k++;
    return k;
}

static inline void adapt_update(struct adapt *s, int c, int d) {
    s->a[c] += d < 0 ? -d : d;
    if (++s->n[c] == HALVE_AT) {
        s->a[c] >>= 1;
        s->n[c] >>= 1;
    }
}

static void adapt_init(struct adapt *s, int cols) {
    for (int c = 0; c < cols && c < 256; c++) {
        s->a[c] = 8;
        s->n[c] = 1;
    }
}

static inline int slot(int c) { return c < 255 ? c : 255; }

/* ---- writing ---- */

struct bit_writer {
    unsigned char *buf;
    size_t cap, len;
    uint64_t acc; /* pending bits, the oldest the most significant of the low `bits` */
    int bits;
};

static void bw_put(struct bit_writer *w, uint32_t v, int n) { /* n <= 32 */
    w->acc = (w->acc << n) | (v & (n == 32 ? 0xffffffffu : ((1u << n) - 1)));
    w->bits += n;
    while (w->bits >= 8) {
        if (w->len == w->cap) {
            w->cap = w->cap ? 2 * w->cap : 256;
            w->buf = xrealloc(w->buf, w->cap);
        }
        w->bits -= 8;
        w->buf[w->len++] = (unsigned char)(w->acc >> w->bits);
    }
}

size_t egs_pq_code(const unsigned char *x, int rows, int cols, unsigned char **out) {
    struct bit_writer w = {0};
    struct adapt s;
    adapt_init(&s, cols);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            int d = (signed char)(unsigned char)(x[(size_t)r * cols + c] -
                                                 med_predict(x, r, c, cols));
            uint32_t u = d >= 0 ? 2u * (uint32_t)d : 2u * (uint32_t)(-d) - 1;
            int j = slot(c), k = adapt_k(&s, j);
            uint32_t q = u >> k;
            if (q < ESCAPE) {
                bw_put(&w, 1, (int)q + 1); /* q zeros, then a one */
                if (k) bw_put(&w, u, k);
            } else {
                bw_put(&w, 0, ESCAPE);
                bw_put(&w, u, 8);
            }
            adapt_update(&s, j, d);
        }
    if (w.bits) bw_put(&w, 0, 8 - w.bits);
    if (!w.buf) w.buf = xmalloc(1);
    *out = w.buf;
    return w.len;
}

/* ---- reading ---- */

struct bit_reader {
    const unsigned char *p, *end;
    uint64_t acc; /* the next `bits` bits in its most significant end */
    int bits;
};

static inline void br_fill(struct bit_reader *b) {
    while (b->bits <= 56 && b->p < b->end) {
        b->acc |= (uint64_t)*b->p++ << (56 - b->bits);
        b->bits += 8;
    }
}

static inline int br_get(struct bit_reader *b, int n, uint32_t *v) { /* 1 <= n <= 32 */
    br_fill(b);
    if (b->bits < n) return -1;
    *v = (uint32_t)(b->acc >> (64 - n));
    b->acc <<= n;
    b->bits -= n;
    return 0;
}

/* The unary part: the count of 0 bits before the next 1, at most ESCAPE (then no 1 is read). */
static inline int br_unary(struct bit_reader *b, uint32_t *q) {
    br_fill(b);
    int zeros = b->acc ? __builtin_clzll(b->acc) : 64;
    if (zeros >= ESCAPE) {
        if (b->bits < ESCAPE) return -1;
        b->acc <<= ESCAPE;
        b->bits -= ESCAPE;
        *q = ESCAPE;
        return 0;
    }
    if (zeros + 1 > b->bits) return -1;
    b->acc <<= zeros + 1;
    b->bits -= zeros + 1;
    *q = (uint32_t)zeros;
    return 0;
}

int egs_pq_uncode(const unsigned char *in, size_t n, int rows, int cols, unsigned char *x) {
    struct bit_reader b = {in, in + n, 0, 0};
    struct adapt s;
    adapt_init(&s, cols);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            int j = slot(c), k = adapt_k(&s, j);
            uint32_t q, u, low = 0;
            if (br_unary(&b, &q)) goto truncated;
            if (q == ESCAPE) {
                if (br_get(&b, 8, &u)) goto truncated;
            } else {
                if (k && br_get(&b, k, &low)) goto truncated;
                u = (q << k) | low;
                if (u > 255)
                    return error_set("coded PQ data: residual %u out of range at row %d, "
                                     "column %d", (unsigned)u, r, c);
            }
            int d = u & 1 ? -(int)((u + 1) >> 1) : (int)(u >> 1);
            x[(size_t)r * cols + c] = (unsigned char)(med_predict(x, r, c, cols) + d);
            adapt_update(&s, j, d);
        }
    /* what is left must be the padding of the last byte */
    if (b.p != b.end || b.bits >= 8 || (b.bits && (b.acc >> (64 - b.bits))))
        return error_set("coded PQ data: %lld bytes left after %d x %d codes",
                         (long long)(b.end - b.p) + b.bits / 8, rows, cols);
    return 0;
truncated:
    return error_set("coded PQ data ends inside %d x %d codes", rows, cols);
}
