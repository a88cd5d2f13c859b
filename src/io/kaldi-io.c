/* Kaldi's basic I/O functions (base/io-funcs) and the Vector/Matrix readers and writers, in both
 * binary and text form. Byte layouts are in io.h. */
#include "io/io.h"
#include "io/io-internal.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Reads of unknown length above this go through a growing buffer, so a corrupt size field on a
 * pipe cannot make us allocate much more than the bytes that really arrive. */
#define IO_TRUST_BYTES (16u << 20)

static int is_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

static void skip_ws(struct kin *in) {
    int c;
    while ((c = kin_peek(in)) >= 0 && is_space(c)) kin_getc(in);
}

/* Text mode: skip whitespace, then read a word (up to whitespace or one of `stop`). */
static int read_word(struct kin *in, char *buf, size_t size, const char *stop, const char *what) {
    skip_ws(in);
    size_t n = 0;
    int c;
    while ((c = kin_peek(in)) >= 0 && !is_space(c) && !(stop && strchr(stop, c))) {
        if (n + 1 >= size) return kin_error(in, "%s too long", what);
        buf[n++] = (char)kin_getc(in);
    }
    buf[n] = '\0';
    if (n == 0) {
        if (c < 0) return kin_error(in, "truncated: expected %s, got end of file", what);
        return kin_error(in, "expected %s, got '%c'", what, c);
    }
    return 0;
}

/* ---- header and tokens ---- */

int io_read_header(struct kin *in, int *binary) {
    if (kin_peek(in) == 0) {
        kin_getc(in);
        int c = kin_getc(in);
        if (c < 0) return kin_error(in, "truncated binary header");
        if (c != 'B') return kin_error(in, "bad binary header: '\\0' not followed by 'B'");
        *binary = 1;
    } else {
        *binary = 0;
    }
    return 0;
}

int io_write_header(struct kout *out, int binary) {
    return binary ? kout_write(out, "\0B", 2) : 0;
}

static void printable(const char *s, char *dst, size_t size) {
    size_t j = 0;
    for (size_t i = 0; s[i] && j + 5 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (isprint(c)) dst[j++] = (char)c;
        else j += (size_t)snprintf(dst + j, size - j, "\\x%02x", c);
    }
    dst[j] = '\0';
}

int io_read_token(struct kin *in, int binary, char *buf, size_t size) {
    if (!binary) skip_ws(in);
    size_t n = 0;
    int c;
    while ((c = kin_peek(in)) >= 0 && !is_space(c)) {
        if (n + 1 >= size) {
            buf[n] = '\0';
            return kin_error(in, "token too long");
        }
        buf[n++] = (char)kin_getc(in);
    }
    buf[n] = '\0';
    if (c < 0) return kin_error(in, n ? "truncated token" : "truncated: expected a token");
    if (n == 0) return kin_error(in, "expected a token, got whitespace");
    kin_getc(in); /* the one space after a token */
    return 0;
}

int io_expect_token(struct kin *in, int binary, const char *token) {
    char buf[IO_MAX_TOKEN];
    int64_t at = in->offset;
    if (io_read_token(in, binary, buf, sizeof buf)) return -1;
    if (strcmp(buf, token)) {
        char shown[128];
        printable(buf, shown, sizeof shown);
        return error_set("'%s' at byte %lld: expected %s, got %s", in->name, (long long)at, token,
                         shown);
    }
    return 0;
}

int io_peek_token(struct kin *in, int binary, char *buf, size_t size) {
    if (!binary) skip_ws(in);
    size_t avail;
    const unsigned char *p = kin_peek_bytes(in, size, &avail);
    size_t n = 0;
    while (n < avail && !is_space(p[n])) n++;
    if (n == 0) return kin_error(in, avail ? "expected a token" : "truncated: expected a token");
    if (n >= size) return kin_error(in, "token too long");
    memcpy(buf, p, n);
    buf[n] = '\0';
    return 0;
}

int io_write_token(struct kout *out, int binary, const char *token) {
    ASSERT(*token && !strpbrk(token, " \t\n\r"));
    if (kout_write(out, token, strlen(token))) return -1;
    return kout_write(out, " ", 1);
}

/* ---- scalars ---- */

static int32_t get_i32(const unsigned char *p) {
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    int32_t v;
    memcpy(&v, &u, 4);
    return v;
}

static void put_i32(unsigned char *p, int32_t v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    p[0] = (unsigned char)u;
    p[1] = (unsigned char)(u >> 8);
    p[2] = (unsigned char)(u >> 16);
    p[3] = (unsigned char)(u >> 24);
}

int io_read_int32(struct kin *in, int binary, int32_t *v) {
    if (binary) {
        int c = kin_getc(in);
        if (c < 0) return kin_error(in, "truncated: expected an int32");
        if (c != 4) return kin_error(in, "expected an int32 (size byte 4), got size byte %d", c);
        unsigned char b[4];
        if (kin_read(in, b, 4, "int32")) return -1;
        *v = get_i32(b);
        return 0;
    }
    char w[64];
    if (read_word(in, w, sizeof w, NULL, "an integer")) return -1;
    char *end;
    errno = 0;
    long long x = strtoll(w, &end, 10);
    if (*end || errno || x < INT32_MIN || x > INT32_MAX)
        return kin_error(in, "expected an int32, got '%s'", w);
    *v = (int32_t)x;
    return 0;
}

static int read_real(struct kin *in, int binary, double *v, const char *what) {
    if (binary) {
        int c = kin_getc(in);
        if (c < 0) return kin_error(in, "truncated: expected a %s", what);
        if (c == 4) {
            float f;
            if (kin_read(in, &f, 4, what)) return -1;
            *v = f;
        } else if (c == 8) {
            if (kin_read(in, v, 8, what)) return -1;
        } else {
            return kin_error(in, "expected a %s (size byte 4 or 8), got size byte %d", what, c);
        }
        return 0;
    }
    char w[128];
    if (read_word(in, w, sizeof w, NULL, "a number")) return -1;
    char *end;
    *v = strtod(w, &end);
    if (*end) return kin_error(in, "expected a %s, got '%s'", what, w);
    return 0;
}

int io_read_float(struct kin *in, int binary, float *v) {
    double d;
    if (read_real(in, binary, &d, "float")) return -1;
    *v = (float)d;
    return 0;
}

int io_read_double(struct kin *in, int binary, double *v) {
    return read_real(in, binary, v, "double");
}

int io_read_bool(struct kin *in, int binary, int *v) {
    if (!binary) skip_ws(in);
    int c = kin_getc(in);
    if (c == 'T') *v = 1;
    else if (c == 'F') *v = 0;
    else if (c < 0) return kin_error(in, "truncated: expected a bool");
    else return kin_error(in, "expected a bool (T or F), got byte 0x%02x", c);
    return 0;
}

int io_write_int32(struct kout *out, int binary, int32_t v) {
    if (!binary) return kout_printf(out, "%d ", (int)v);
    unsigned char b[5] = {4};
    put_i32(b + 1, v);
    return kout_write(out, b, 5);
}

/* Kaldi text precision is 7 significant digits (InitKaldiOutputStream). */
static int write_text_real(struct kout *out, double v) {
    if (isnan(v)) return kout_printf(out, "nan ");
    if (isinf(v)) return kout_printf(out, v > 0 ? "inf " : "-inf ");
    return kout_printf(out, "%.7g ", v);
}

int io_write_float(struct kout *out, int binary, float v) {
    if (!binary) return write_text_real(out, v);
    unsigned char b[5] = {4};
    memcpy(b + 1, &v, 4);
    return kout_write(out, b, 5);
}

int io_write_double(struct kout *out, int binary, double v) {
    if (!binary) return write_text_real(out, v);
    unsigned char b[9] = {8};
    memcpy(b + 1, &v, 8);
    return kout_write(out, b, 9);
}

int io_write_bool(struct kout *out, int binary, int v) {
    return kout_write(out, v ? (binary ? "T" : "T ") : (binary ? "F" : "F "), binary ? 1 : 2);
}

/* ---- bulk data ---- */

/* Can `bytes` more bytes exist? Checked against the known remaining size. */
int io_check_bytes(struct kin *in, uint64_t bytes, const char *what) {
    int64_t rem = kin_remaining(in);
    if (rem >= 0 && bytes > (uint64_t)rem)
        return kin_error(in, "truncated %s (expected %llu bytes, %lld left)", what,
                         (unsigned long long)bytes, (long long)rem);
    return 0;
}

/* Read `bytes` bytes into a new buffer. When the stream size is unknown and the request is
 * large, the buffer grows only as data arrives. Returns NULL on error. */
unsigned char *io_read_alloc(struct kin *in, size_t bytes, const char *what) {
    if (io_check_bytes(in, bytes, what)) return NULL;
    if (kin_remaining(in) >= 0 || bytes <= IO_TRUST_BYTES) {
        unsigned char *p = xmalloc(bytes);
        if (kin_read(in, p, bytes, what)) {
            free(p);
            return NULL;
        }
        return p;
    }
    size_t cap = IO_TRUST_BYTES, done = 0;
    unsigned char *p = xmalloc(cap);
    while (done < bytes) {
        if (done == cap) {
            cap = cap * 2 < bytes ? cap * 2 : bytes;
            p = xrealloc(p, cap);
        }
        size_t chunk = (cap < bytes ? cap : bytes) - done;
        if (kin_read(in, p + done, chunk, what)) {
            free(p);
            return NULL;
        }
        done += chunk;
    }
    return p;
}

/* Read count reals of elsize bytes (4 or 8) into dst floats. */
static int read_reals(struct kin *in, float *dst, size_t count, int elsize, const char *what) {
    if (elsize == 4) return kin_read(in, dst, count * 4, what);
    double tmp[1024];
    for (size_t i = 0; i < count;) {
        size_t n = count - i < 1024 ? count - i : 1024;
        if (kin_read(in, tmp, n * 8, what)) return -1;
        for (size_t k = 0; k < n; k++) dst[i + k] = (float)tmp[k];
        i += n;
    }
    return 0;
}

/* ---- integer vectors ---- */

void int32_vec_release(struct int32_vec *v) {
    free(v->data);
    v->data = NULL;
    v->dim = 0;
}

void io_int32_vec_push(struct int32_vec *v, int *cap, int32_t x) {
    if (v->dim == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        v->data = xrealloc(v->data, sizeof(int32_t) * (size_t)*cap);
    }
    v->data[v->dim++] = x;
}

int io_int32_vec_push_word(struct kin *in, struct int32_vec *v, int *cap, const char *w) {
    char *end;
    errno = 0;
    long long x = strtoll(w, &end, 10);
    if (*end || errno || x < INT32_MIN || x > INT32_MAX || v->dim == INT_MAX) {
        int32_vec_release(v);
        return kin_error(in, "bad integer '%s' in an integer vector", w);
    }
    io_int32_vec_push(v, cap, (int32_t)x);
    return 0;
}

int io_read_int32_vector(struct kin *in, int binary, struct int32_vec *v) {
    int32_vec_release(v);
    if (binary) {
        int32_t n; /* the size byte 4 and the count: an int32 */
        if (io_read_int32(in, 1, &n)) return -1;
        if (n < 0) return kin_error(in, "integer vector: negative size %d", (int)n);
        unsigned char *p = io_read_alloc(in, (size_t)n * 4, "integer vector");
        if (!p) return -1;
        v->data = (int32_t *)(void *)p;
        v->dim = n;
        return 0;
    }
    skip_ws(in);
    int c = kin_getc(in);
    if (c != '[') {
        if (c < 0) return kin_error(in, "truncated: expected '[' of an integer vector");
        return kin_error(in, "expected '[' of an integer vector");
    }
    int cap = 0;
    for (;;) {
        skip_ws(in);
        c = kin_peek(in);
        if (c < 0) {
            int32_vec_release(v);
            return kin_error(in, "truncated integer vector");
        }
        if (c == ']') {
            kin_getc(in);
            return 0;
        }
        char w[64];
        if (read_word(in, w, sizeof w, "]", "an integer")) {
            int32_vec_release(v);
            return -1;
        }
        if (io_int32_vec_push_word(in, v, &cap, w)) return -1;
    }
}

int io_write_int32_vector(struct kout *out, int binary, const struct int32_vec *v) {
    if (binary) {
        unsigned char b[5] = {4};
        put_i32(b + 1, v->dim);
        if (kout_write(out, b, 5)) return -1;
        return kout_write(out, v->data, (size_t)v->dim * 4);
    }
    if (kout_write(out, "[ ", 2)) return -1;
    for (int i = 0; i < v->dim; i++)
        if (kout_printf(out, "%d ", (int)v->data[i])) return -1;
    return kout_write(out, "]\n", 2);
}

/* ---- text real arrays: "[ a b c ]" with newlines ending rows (matrices) ---- */

struct real_buf {
    float *data;
    size_t n, cap;
};

static void real_buf_push(struct real_buf *b, float x) {
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 64;
        b->data = xrealloc(b->data, sizeof(float) * b->cap);
    }
    b->data[b->n++] = x;
}

/* Reads "[ ... ]". If rows is non-NULL, newlines separate rows, all of equal length. */
static int read_text_reals(struct kin *in, struct real_buf *b, int64_t *rows, int64_t *cols,
                           const char *what) {
    skip_ws(in);
    int c = kin_getc(in);
    if (c != '[') {
        if (c < 0) return kin_error(in, "truncated: expected '[' of a %s", what);
        return kin_error(in, "expected '[' of a %s", what);
    }
    int64_t nrows = 0, ncols = -1, in_row = 0;
    for (;;) {
        while ((c = kin_peek(in)) >= 0 && (c == ' ' || c == '\t' || (!rows && is_space(c))))
            kin_getc(in);
        if (c < 0) return kin_error(in, "truncated %s (no closing ']')", what);
        if (c == '\n' || c == '\r' || c == ']') {
            kin_getc(in);
            if (rows && in_row) {
                if (ncols >= 0 && in_row != ncols)
                    return kin_error(in, "%s row %lld has %lld columns, expected %lld", what,
                                     (long long)nrows, (long long)in_row, (long long)ncols);
                ncols = in_row;
                nrows++;
                in_row = 0;
            }
            if (c == ']') break;
            continue;
        }
        char w[128];
        if (read_word(in, w, sizeof w, "]", "a number")) return -1;
        char *end;
        double x = strtod(w, &end);
        if (*end) return kin_error(in, "bad number '%s' in a %s", w, what);
        if (b->n >= (size_t)IO_MAX_ELEMENTS) return kin_error(in, "%s too large", what);
        real_buf_push(b, (float)x);
        in_row++;
    }
    if (rows) {
        *rows = nrows;
        *cols = ncols < 0 ? 0 : ncols;
    }
    return 0;
}

/* ---- vectors ---- */

static void vector_host(struct vector *v, int dim) {
    if (dim == 0) {
        memset(v, 0, sizeof *v);
        v->device = MATRIX_CPU;
        return;
    }
    vector_init_on(v, dim, MATRIX_CPU);
}

int io_read_vector(struct kin *in, int binary, struct vector *v) {
    vector_release(v);
    memset(v, 0, sizeof *v);
    if (!binary) {
        struct real_buf b = {0};
        if (read_text_reals(in, &b, NULL, NULL, "vector")) {
            free(b.data);
            return -1;
        }
        vector_host(v, (int)b.n);
        if (b.n) memcpy(v->data, b.data, b.n * sizeof(float));
        free(b.data);
        return 0;
    }
    char tok[16];
    if (io_read_token(in, binary, tok, sizeof tok)) return -1;
    int elsize;
    if (!strcmp(tok, "FV")) elsize = 4;
    else if (!strcmp(tok, "DV")) elsize = 8;
    else return kin_error(in, "expected FV or DV, got '%.8s'", tok);
    int32_t dim;
    if (io_read_int32(in, binary, &dim)) return -1;
    if (dim < 0) return kin_error(in, "vector: negative dimension %d", (int)dim);
    if (io_check_bytes(in, (uint64_t)dim * (uint64_t)elsize, "vector data")) return -1;
    if (kin_remaining(in) < 0 && (uint64_t)dim * elsize > IO_TRUST_BYTES) {
        unsigned char *p = io_read_alloc(in, (size_t)dim * elsize, "vector data");
        if (!p) return -1;
        vector_host(v, dim);
        for (int32_t i = 0; i < dim; i++) {
            if (elsize == 4) memcpy(&v->data[i], p + 4 * (size_t)i, 4);
            else {
                double d;
                memcpy(&d, p + 8 * (size_t)i, 8);
                v->data[i] = (float)d;
            }
        }
        free(p);
        return 0;
    }
    vector_host(v, dim);
    if (read_reals(in, v->data, (size_t)dim, elsize, "vector data")) {
        vector_release(v);
        memset(v, 0, sizeof *v);
        return -1;
    }
    return 0;
}

int io_write_vector(struct kout *out, int binary, const struct vector *v) {
    ASSERT(v->device == MATRIX_CPU || v->dim == 0);
    if (binary) {
        if (io_write_token(out, binary, "FV") || io_write_int32(out, binary, v->dim)) return -1;
        return kout_write(out, v->data, (size_t)v->dim * 4);
    }
    if (kout_write(out, " [ ", 3)) return -1;
    for (int i = 0; i < v->dim; i++)
        if (write_text_real(out, v->data[i])) return -1;
    return kout_write(out, "]\n", 2);
}

/* ---- matrices ---- */

void io_matrix_host(struct matrix *m, int rows, int cols) {
    if (rows == 0 || cols == 0) {
        memset(m, 0, sizeof *m);
        m->device = MATRIX_CPU;
        return;
    }
    matrix_init_on(m, rows, cols, MATRIX_CPU);
}

int io_read_matrix(struct kin *in, int binary, struct matrix *m) {
    matrix_release(m);
    memset(m, 0, sizeof *m);
    if (!binary) {
        struct real_buf b = {0};
        int64_t rows, cols;
        if (read_text_reals(in, &b, &rows, &cols, "matrix")) {
            free(b.data);
            return -1;
        }
        if (rows > INT_MAX || cols > INT_MAX) {
            free(b.data);
            return kin_error(in, "matrix too large");
        }
        io_matrix_host(m, (int)rows, (int)cols);
        if (b.n) memcpy(m->data, b.data, b.n * sizeof(float));
        free(b.data);
        return 0;
    }
    char tok[16];
    if (io_peek_token(in, binary, tok, sizeof tok)) return -1;
    if (tok[0] == 'C') {
        struct compressed_matrix cm = {0};
        if (io_read_compressed_matrix(in, binary, &cm)) return -1;
        compressed_matrix_decode(&cm, m);
        compressed_matrix_release(&cm);
        return 0;
    }
    if (io_read_token(in, binary, tok, sizeof tok)) return -1;
    int elsize;
    if (!strcmp(tok, "FM")) elsize = 4;
    else if (!strcmp(tok, "DM")) elsize = 8;
    else return kin_error(in, "expected a matrix (FM, DM, CM, CM2, CM3), got '%.8s'", tok);
    int32_t rows, cols;
    if (io_read_int32(in, binary, &rows) || io_read_int32(in, binary, &cols)) return -1;
    if (rows < 0 || cols < 0 || (rows == 0) != (cols == 0))
        return kin_error(in, "invalid matrix dimensions %d x %d", (int)rows, (int)cols);
    uint64_t count = (uint64_t)rows * (uint64_t)cols;
    if (count > (uint64_t)IO_MAX_ELEMENTS)
        return kin_error(in, "matrix too large (%d x %d)", (int)rows, (int)cols);
    if (io_check_bytes(in, count * elsize, "matrix data")) return -1;
    if (kin_remaining(in) < 0 && count * elsize > IO_TRUST_BYTES) {
        unsigned char *p = io_read_alloc(in, (size_t)(count * elsize), "matrix data");
        if (!p) return -1;
        io_matrix_host(m, rows, cols);
        for (uint64_t i = 0; i < count; i++) {
            if (elsize == 4) memcpy(&m->data[i], p + 4 * i, 4);
            else {
                double d;
                memcpy(&d, p + 8 * i, 8);
                m->data[i] = (float)d;
            }
        }
        free(p);
        return 0;
    }
    io_matrix_host(m, rows, cols);
    if (count && read_reals(in, m->data, (size_t)count, elsize, "matrix data")) {
        matrix_release(m);
        memset(m, 0, sizeof *m);
        return -1;
    }
    return 0;
}

int io_write_matrix(struct kout *out, int binary, const struct matrix *m) {
    ASSERT(m->device == MATRIX_CPU || m->rows == 0 || m->cols == 0);
    int empty = m->rows == 0 || m->cols == 0;
    if (binary) {
        if (io_write_token(out, binary, "FM") || io_write_int32(out, binary, empty ? 0 : m->rows) ||
            io_write_int32(out, binary, empty ? 0 : m->cols))
            return -1;
        if (empty) return 0;
        if (m->stride == m->cols) return kout_write(out, m->data, (size_t)m->rows * m->cols * 4);
        for (int r = 0; r < m->rows; r++)
            if (kout_write(out, m->data + (size_t)r * m->stride, (size_t)m->cols * 4)) return -1;
        return 0;
    }
    if (empty) return kout_write(out, " [ ]\n", 5);
    if (kout_write(out, " [", 2)) return -1;
    for (int r = 0; r < m->rows; r++) {
        if (kout_write(out, "\n  ", 3)) return -1;
        for (int c = 0; c < m->cols; c++)
            if (write_text_real(out, m->data[(size_t)r * m->stride + c])) return -1;
    }
    return kout_write(out, "]\n", 2);
}

int io_check_finite(const struct matrix *m) {
    if (m->rows == 0 || m->cols == 0 || matrix_is_finite(m)) return 0;
    for (int r = 0; r < m->rows; r++)
        for (int c = 0; c < m->cols; c++) {
            float v = m->data[(size_t)r * m->stride + c];
            if (!isfinite(v))
                return error_set("non-finite value (%s) at row %d, column %d",
                                 isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf", r, c);
        }
    return 0;
}

long long io_count_nonfinite(const struct matrix *m) {
    if (m->rows == 0 || m->cols == 0 || matrix_is_finite(m)) return 0;
    long long k = 0;
    for (int r = 0; r < m->rows; r++)
        for (int c = 0; c < m->cols; c++) k += !isfinite(m->data[(size_t)r * m->stride + c]);
    return k;
}
