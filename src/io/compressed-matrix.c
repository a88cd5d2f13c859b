/* Kaldi's CompressedMatrix: lossy 8- and 16-bit storage of float matrices (CM, CM2, CM3).
 *
 * The arithmetic below follows Kaldi's expression by expression (float products, then a double
 * rounding offset), so that compressing the same data gives the same bytes and decoding gives
 * the same floats. Byte layout in io.h. */
#include "io/io.h"
#include "io/io-internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint16_t get_u16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static void put_u16(unsigned char *p, uint16_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

int64_t compressed_matrix_payload_size(int format, int64_t rows, int64_t cols) {
    if (rows < 0 || cols < 0 || rows * cols > IO_MAX_ELEMENTS) return -1;
    switch (format) {
    case CM_FORMAT_CM: return cols * (8 + rows);
    case CM_FORMAT_CM2: return 2 * rows * cols;
    case CM_FORMAT_CM3: return rows * cols;
    default: return -1;
    }
}

void compressed_matrix_release(struct compressed_matrix *cm) {
    free(cm->data);
    memset(cm, 0, sizeof *cm);
}

/* (int)x as Kaldi's static_cast, but defined for NaN and huge values (degenerate headers from
 * corrupt input): NaN -> 0, and out-of-range values saturate. Same result in the normal case. */
static int to_int(double x) {
    if (!(x >= -1e9)) return x < 0 ? -1000000000 : 0;
    if (x > 1e9) return 1000000000;
    return (int)x;
}

static uint16_t float_to_u16(float min, float range, float value) {
    float f = (value - min) / range;
    if (f > 1.0f) f = 1.0f;
    if (f < 0.0f) f = 0.0f;
    return (uint16_t)to_int((double)(f * 65535.0f) + 0.499);
}

static uint8_t float_to_u8(float min, float range, float value) {
    float f = (value - min) / range;
    if (f > 1.0f) f = 1.0f;
    if (f < 0.0f) f = 0.0f;
    return (uint8_t)to_int((double)(f * 255.0f) + 0.499);
}

/* 1.52590218966964e-05 is 1/65535 (Kaldi's constant, as a float). */
static float u16_to_float(float min, float range, uint16_t u) {
    return min + range * 1.52590218966964e-05f * (float)u;
}

static uint8_t float_to_char(float p0, float p25, float p75, float p100, float value) {
    int ans;
    if (value < p25) {
        float f = (value - p0) / (p25 - p0);
        ans = to_int((double)(f * 64.0f) + 0.5);
        if (ans < 0) ans = 0;
        if (ans > 64) ans = 64;
    } else if (value < p75) {
        float f = (value - p25) / (p75 - p25);
        ans = 64 + to_int((double)(f * 128.0f) + 0.5);
        if (ans < 64) ans = 64;
        if (ans > 192) ans = 192;
    } else {
        float f = (value - p75) / (p100 - p75);
        ans = 192 + to_int((double)(f * 63.0f) + 0.5);
        if (ans < 192) ans = 192;
        if (ans > 255) ans = 255;
    }
    return (uint8_t)ans;
}

static float char_to_float(float p0, float p25, float p75, float p100, uint8_t v) {
    if (v <= 64) return (float)(p0 + (double)((p25 - p0) * (float)v) * (1 / 64.0));
    if (v <= 192) return (float)(p25 + (double)((p75 - p25) * (float)(v - 64)) * (1 / 128.0));
    return (float)(p75 + (double)((p100 - p75) * (float)(v - 192)) * (1 / 63.0));
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static uint16_t min_u16(int a, int b) { return (uint16_t)(a < b ? a : b); }
static uint16_t max_u16(int a, int b) { return (uint16_t)(a > b ? a : b); }

/* Percentile headers of one (sorted) column, as Kaldi's ComputeColHeader. */
static void column_header(float min, float range, const float *s, int rows, uint16_t p[4]) {
    p[0] = min_u16(float_to_u16(min, range, s[0]), 65532);
    if (rows >= 5) {
        int q = rows / 4;
        p[1] = min_u16(max_u16(float_to_u16(min, range, s[q]), p[0] + 1), 65533);
        p[2] = min_u16(max_u16(float_to_u16(min, range, s[3 * q]), p[1] + 1), 65534);
        p[3] = max_u16(float_to_u16(min, range, s[rows - 1]), p[2] + 1);
        return;
    }
    p[1] = rows > 1 ? min_u16(max_u16(float_to_u16(min, range, s[1]), p[0] + 1), 65533)
                    : (uint16_t)(p[0] + 1);
    p[2] = rows > 2 ? min_u16(max_u16(float_to_u16(min, range, s[2]), p[1] + 1), 65534)
                    : (uint16_t)(p[1] + 1);
    p[3] = rows > 3 ? max_u16(float_to_u16(min, range, s[3]), p[2] + 1) : (uint16_t)(p[2] + 1);
}

int compressed_matrix_compress(struct compressed_matrix *cm, const struct matrix *m, int method) {
    compressed_matrix_release(cm);
    ASSERT(m->device == MATRIX_CPU || m->rows == 0 || m->cols == 0);
    int rows = m->rows, cols = m->cols;
    if (method < CM_METHOD_AUTO || method > CM_METHOD_1BYTE_01)
        return error_set("invalid compression method %d (use 1..7)", method);
    if (method == CM_METHOD_AUTO) method = rows > 8 ? CM_METHOD_SPEECH : CM_METHOD_2BYTE_AUTO;
    cm->format = CM_FORMAT_CM;
    if (rows == 0 || cols == 0) return 0; /* the empty matrix: "CM " + zero header */
    float lo = m->data[0], hi = m->data[0];
    for (int r = 0; r < rows; r++) {
        const float *row = m->data + (size_t)r * m->stride;
        for (int c = 0; c < cols; c++) {
            if (!isfinite(row[c])) return error_set("cannot compress a matrix with NaN or Inf");
            if (row[c] < lo) lo = row[c];
            if (row[c] > hi) hi = row[c];
        }
    }
    switch (method) {
    case CM_METHOD_SPEECH: cm->format = CM_FORMAT_CM; break;
    case CM_METHOD_2BYTE_AUTO: case CM_METHOD_2BYTE_INT: cm->format = CM_FORMAT_CM2; break;
    default: cm->format = CM_FORMAT_CM3; break;
    }
    switch (method) {
    case CM_METHOD_2BYTE_INT: cm->min_value = -32768.0f; cm->range = 65535.0f; break;
    case CM_METHOD_1BYTE_UINT: cm->min_value = 0.0f; cm->range = 255.0f; break;
    case CM_METHOD_1BYTE_01: cm->min_value = 0.0f; cm->range = 1.0f; break;
    default:
        if (hi == lo) hi = (float)(lo + (1.0 + fabs(lo)));
        cm->min_value = lo;
        cm->range = hi - lo;
        if (!isfinite(cm->range)) {
            cm->format = CM_FORMAT_CM;
            cm->min_value = cm->range = 0;
            return error_set("cannot compress a matrix whose range overflows a float");
        }
        break;
    }
    cm->rows = rows;
    cm->cols = cols;
    int64_t size = compressed_matrix_payload_size(cm->format, rows, cols);
    ASSERT(size >= 0);
    cm->data_size = (size_t)size;
    cm->data = xmalloc(cm->data_size);
    float min = cm->min_value, range = cm->range;
    if (cm->format == CM_FORMAT_CM) {
        float *sorted = xmalloc(sizeof(float) * (size_t)rows);
        unsigned char *bytes = cm->data + (size_t)8 * cols;
        for (int c = 0; c < cols; c++) {
            for (int r = 0; r < rows; r++) sorted[r] = m->data[(size_t)r * m->stride + c];
            qsort(sorted, (size_t)rows, sizeof(float), cmp_float);
            uint16_t p[4];
            column_header(min, range, sorted, rows, p);
            for (int k = 0; k < 4; k++) put_u16(cm->data + (size_t)8 * c + 2 * k, p[k]);
            float p0 = u16_to_float(min, range, p[0]), p25 = u16_to_float(min, range, p[1]),
                  p75 = u16_to_float(min, range, p[2]), p100 = u16_to_float(min, range, p[3]);
            for (int r = 0; r < rows; r++)
                bytes[(size_t)c * rows + r] =
                    float_to_char(p0, p25, p75, p100, m->data[(size_t)r * m->stride + c]);
        }
        free(sorted);
    } else {
        for (int r = 0; r < rows; r++) {
            const float *row = m->data + (size_t)r * m->stride;
            for (int c = 0; c < cols; c++) {
                size_t i = (size_t)r * cols + c;
                if (cm->format == CM_FORMAT_CM2) put_u16(cm->data + 2 * i, float_to_u16(min, range, row[c]));
                else cm->data[i] = float_to_u8(min, range, row[c]);
            }
        }
    }
    return 0;
}

void compressed_matrix_decode(const struct compressed_matrix *cm, struct matrix *m) {
    matrix_release(m);
    int rows = cm->cols ? cm->rows : 0, cols = cm->rows ? cm->cols : 0;
    io_matrix_host(m, rows, cols);
    if (!rows || !cols) return;
    float min = cm->min_value, range = cm->range;
    if (cm->format == CM_FORMAT_CM) {
        const unsigned char *bytes = cm->data + (size_t)8 * cols;
        for (int c = 0; c < cols; c++) {
            const unsigned char *h = cm->data + (size_t)8 * c;
            float p0 = u16_to_float(min, range, get_u16(h)),
                  p25 = u16_to_float(min, range, get_u16(h + 2)),
                  p75 = u16_to_float(min, range, get_u16(h + 4)),
                  p100 = u16_to_float(min, range, get_u16(h + 6));
            for (int r = 0; r < rows; r++)
                m->data[(size_t)r * m->stride + c] =
                    char_to_float(p0, p25, p75, p100, bytes[(size_t)c * rows + r]);
        }
    } else if (cm->format == CM_FORMAT_CM2) {
        float inc = (float)(range * (1.0 / 65535.0));
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++)
                m->data[(size_t)r * m->stride + c] =
                    min + (float)get_u16(cm->data + 2 * ((size_t)r * cols + c)) * inc;
    } else {
        float inc = (float)(range * (1.0 / 255.0));
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++)
                m->data[(size_t)r * m->stride + c] =
                    min + (float)cm->data[(size_t)r * cols + c] * inc;
    }
}

int io_read_compressed_matrix(struct kin *in, int binary, struct compressed_matrix *cm) {
    compressed_matrix_release(cm);
    char tok[16];
    if (binary) {
        if (io_peek_token(in, binary, tok, sizeof tok)) return -1;
    }
    if (!binary || tok[0] != 'C') {
        struct matrix m = {0};
        if (io_read_matrix(in, binary, &m)) return -1;
        int rc = compressed_matrix_compress(cm, &m, CM_METHOD_AUTO);
        matrix_release(&m);
        if (rc) return kin_error(in, "%s", error_get());
        return 0;
    }
    if (io_read_token(in, binary, tok, sizeof tok)) return -1;
    if (!strcmp(tok, "CM")) cm->format = CM_FORMAT_CM;
    else if (!strcmp(tok, "CM2")) cm->format = CM_FORMAT_CM2;
    else if (!strcmp(tok, "CM3")) cm->format = CM_FORMAT_CM3;
    else return kin_error(in, "expected CM, CM2 or CM3, got '%.8s'", tok);
    unsigned char h[16];
    if (kin_read(in, h, 16, "compressed matrix header")) return -1;
    memcpy(&cm->min_value, h, 4);
    memcpy(&cm->range, h + 4, 4);
    if (!isfinite(cm->min_value) || !isfinite(cm->range)) {
        cm->format = 0;
        return kin_error(in, "compressed matrix header holds a non-finite min or range");
    }
    int32_t rows, cols;
    memcpy(&rows, h + 8, 4);
    memcpy(&cols, h + 12, 4);
    if (cols == 0 && rows >= 0) { /* empty, as Kaldi decides it */
        cm->rows = cm->cols = 0;
        return 0;
    }
    int64_t size = compressed_matrix_payload_size(cm->format, rows, cols);
    if (size < 0 || rows == 0) {
        cm->format = 0;
        return kin_error(in, "invalid compressed matrix dimensions %d x %d", (int)rows,
                         (int)cols);
    }
    cm->rows = rows;
    cm->cols = cols;
    cm->data = io_read_alloc(in, (size_t)size, "compressed matrix data");
    if (!cm->data) {
        memset(cm, 0, sizeof *cm);
        return -1;
    }
    cm->data_size = (size_t)size;
    return 0;
}

int io_write_compressed_matrix(struct kout *out, int binary, const struct compressed_matrix *cm) {
    if (!binary) {
        struct matrix m = {0};
        compressed_matrix_decode(cm, &m);
        int rc = io_write_matrix(out, binary, &m);
        matrix_release(&m);
        return rc;
    }
    int empty = cm->rows == 0 || cm->cols == 0;
    const char *tok = empty || cm->format == CM_FORMAT_CM ? "CM"
                      : cm->format == CM_FORMAT_CM2       ? "CM2"
                                                          : "CM3";
    unsigned char h[16] = {0};
    if (!empty) {
        memcpy(h, &cm->min_value, 4);
        memcpy(h + 4, &cm->range, 4);
        memcpy(h + 8, &cm->rows, 4);
        memcpy(h + 12, &cm->cols, 4);
    }
    if (io_write_token(out, binary, tok) || kout_write(out, h, 16)) return -1;
    return empty ? 0 : kout_write(out, cm->data, cm->data_size);
}
