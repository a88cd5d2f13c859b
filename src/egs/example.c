/* struct example: labels, input storage and decoding (egs.h). */
#include "egs/egs.h"
#include "egs/egs-internal.h"

#include <stdlib.h>
#include <string.h>

void example_init(struct example *eg) { memset(eg, 0, sizeof *eg); }

void example_input_release(struct example *eg) {
    matrix_release(&eg->input);
    compressed_matrix_release(&eg->cm);
    free(eg->zdata);
    eg->zdata = NULL;
    eg->zsize = 0;
    egs_pq_table_unref(eg->pq);
    eg->pq = NULL;
    free(eg->pq_codes);
    eg->pq_codes = NULL;
    eg->pq_coded = 0;
    eg->rows = eg->cols = 0;
    eg->storage = EXAMPLE_STORE_FLOAT;
}

void example_release(struct example *eg) {
    example_input_release(eg);
    free(eg->label_start);
    free(eg->label_index);
    free(eg->label_weight);
    free(eg->spk_info);
    memset(eg, 0, sizeof *eg);
}

static void *dup_bytes(const void *src, size_t n) {
    if (!n) return NULL;
    void *p = xmalloc(n);
    memcpy(p, src, n);
    return p;
}

void example_copy(struct example *dst, const struct example *src) {
    ASSERT(dst != src);
    example_release(dst);
    dst->num_frames = src->num_frames;
    dst->left_context = src->left_context;
    dst->rows = src->rows;
    dst->cols = src->cols;
    dst->storage = src->storage;
    switch (src->storage) {
    case EXAMPLE_STORE_FLOAT:
        if (src->rows > 0) {
            matrix_init_on(&dst->input, src->rows, src->cols, MATRIX_CPU);
            for (int r = 0; r < src->rows; r++)
                memcpy(dst->input.data + (size_t)r * dst->input.stride,
                       src->input.data + (size_t)r * src->input.stride, sizeof(float) * src->cols);
        }
        break;
    case EXAMPLE_STORE_CM:
        dst->cm = src->cm;
        dst->cm.data = dup_bytes(src->cm.data, src->cm.data_size);
        break;
    case EXAMPLE_STORE_ZLIB:
        dst->zsize = src->zsize;
        dst->zdata = dup_bytes(src->zdata, src->zsize);
        break;
    case EXAMPLE_STORE_PQ:
        dst->pq = egs_pq_table_ref(src->pq);
        dst->pq_codes =
            dup_bytes(src->pq_codes, (size_t)src->rows * src->cols * (src->pq->bits / 8));
        dst->pq_coded = src->pq_coded;
        break;
    default: ASSERT(!"bad storage");
    }
    if (src->label_start) {
        int nl = example_num_labels(src);
        dst->label_start = dup_bytes(src->label_start, sizeof(int) * (src->num_frames + 1));
        dst->label_index = xmalloc(sizeof(int32_t) * (nl ? nl : 1));
        dst->label_weight = xmalloc(sizeof(float) * (nl ? nl : 1));
        memcpy(dst->label_index, src->label_index, sizeof(int32_t) * nl);
        memcpy(dst->label_weight, src->label_weight, sizeof(float) * nl);
    }
    dst->spk_dim = src->spk_dim;
    dst->spk_info = dup_bytes(src->spk_info, sizeof(float) * src->spk_dim);
}

void example_set_labels(struct example *eg, int num_frames, const int *start, const int32_t *index,
                        const float *weight) {
    ASSERT(num_frames >= 1 && start[0] == 0);
    for (int t = 0; t < num_frames; t++)
        ASSERT(start[t + 1] >= start[t]);
    int nl = start[num_frames];
    free(eg->label_start);
    free(eg->label_index);
    free(eg->label_weight);
    eg->num_frames = num_frames;
    eg->label_start = xmalloc(sizeof(int) * (num_frames + 1));
    memcpy(eg->label_start, start, sizeof(int) * (num_frames + 1));
    eg->label_index = xmalloc(sizeof(int32_t) * (nl ? nl : 1));
    eg->label_weight = xmalloc(sizeof(float) * (nl ? nl : 1));
    memcpy(eg->label_index, index, sizeof(int32_t) * nl);
    memcpy(eg->label_weight, weight, sizeof(float) * nl);
}

void example_set_labels_simple(struct example *eg, int num_frames, const int32_t *index) {
    ASSERT(num_frames >= 1);
    int *start = xmalloc(sizeof(int) * (num_frames + 1));
    float *w = xmalloc(sizeof(float) * num_frames);
    for (int t = 0; t <= num_frames; t++)
        start[t] = t;
    for (int t = 0; t < num_frames; t++)
        w[t] = 1.0f;
    example_set_labels(eg, num_frames, start, index, w);
    free(start);
    free(w);
}

int example_select_frame(struct example *eg, int t) {
    ASSERT(t >= 0 && t < eg->num_frames);
    int s = eg->label_start[t], n = eg->label_start[t + 1] - s;
    memmove(eg->label_index, eg->label_index + s, sizeof(int32_t) * n);
    memmove(eg->label_weight, eg->label_weight + s, sizeof(float) * n);
    eg->label_start[0] = 0;
    eg->label_start[1] = n;
    eg->left_context += t;
    eg->num_frames = 1;
    return n;
}

/* ---- storing ---- */

static int store_zlib(struct example *eg, const struct matrix *m) {
    size_t n = (size_t)m->rows * m->cols;
    float *tmp = NULL;
    const float *src = m->data;
    if (m->stride != m->cols) {
        tmp = xmalloc(sizeof(float) * (n ? n : 1));
        for (int r = 0; r < m->rows; r++)
            memcpy(tmp + (size_t)r * m->cols, m->data + (size_t)r * m->stride,
                   sizeof(float) * m->cols);
        src = tmp;
    }
    /* Level 6: the zlib default; higher levels barely help on float data and cost time. */
    int rc = io_deflate(src, n * sizeof(float), 6, &eg->zdata, &eg->zsize);
    free(tmp);
    return rc;
}

int example_set_input(struct example *eg, const struct matrix *m, int left_context, int compress) {
    ASSERT(m->device == MATRIX_CPU && m->rows >= 1 && m->cols >= 1 && left_context >= 0);
    ASSERT(compress >= EGS_COMPRESS_NONE && compress <= EGS_COMPRESS_KALDI);
    example_input_release(eg);
    eg->left_context = left_context;
    switch (compress) {
    case EGS_COMPRESS_NONE:
        eg->storage = EXAMPLE_STORE_FLOAT;
        matrix_init_on(&eg->input, m->rows, m->cols, MATRIX_CPU);
        for (int r = 0; r < m->rows; r++)
            memcpy(eg->input.data + (size_t)r * eg->input.stride, m->data + (size_t)r * m->stride,
                   sizeof(float) * m->cols);
        break;
    case EGS_COMPRESS_8BIT:
    case EGS_COMPRESS_16BIT:
    case EGS_COMPRESS_KALDI: {
        /* kaldi: nnet2's own choice (NnetExample's CompressedMatrix: CM above 8 rows, else CM2) */
        int method = compress == EGS_COMPRESS_16BIT ? CM_METHOD_2BYTE_AUTO
                     : m->rows > 8                  ? CM_METHOD_SPEECH
                     : compress == EGS_COMPRESS_KALDI ? CM_METHOD_2BYTE_AUTO
                                                      : CM_METHOD_1BYTE_AUTO;
        eg->storage = EXAMPLE_STORE_CM;
        if (compressed_matrix_compress(&eg->cm, m, method)) {
            example_input_release(eg);
            return error_wrap("compressing example input: ");
        }
        break;
    }
    case EGS_COMPRESS_ZLIB:
        eg->storage = EXAMPLE_STORE_ZLIB;
        if (store_zlib(eg, m)) {
            example_input_release(eg);
            return error_wrap("deflating example input: ");
        }
        break;
    }
    eg->rows = m->rows;
    eg->cols = m->cols;
    return 0;
}

static int storage_satisfies(const struct example *eg, int compress) {
    switch (compress) {
    case EGS_COMPRESS_KEEP: return 1;
    case EGS_COMPRESS_NONE: return eg->storage == EXAMPLE_STORE_FLOAT;
    case EGS_COMPRESS_8BIT:
        return (eg->storage == EXAMPLE_STORE_CM &&
                (eg->cm.format == CM_FORMAT_CM || eg->cm.format == CM_FORMAT_CM3)) ||
               (eg->storage == EXAMPLE_STORE_PQ && eg->pq->bits == 8);
    case EGS_COMPRESS_16BIT:
        return (eg->storage == EXAMPLE_STORE_CM && eg->cm.format == CM_FORMAT_CM2) ||
               (eg->storage == EXAMPLE_STORE_PQ && eg->pq->bits == 16);
    case EGS_COMPRESS_ZLIB: return eg->storage == EXAMPLE_STORE_ZLIB;
    case EGS_COMPRESS_KALDI: return eg->storage == EXAMPLE_STORE_CM;
    }
    return 0;
}

int example_recompress(struct example *eg, int compress) {
    return example_recompress_with(eg, compress, NULL);
}

int example_recompress_with(struct example *eg, int compress, struct egs_pq_encoder *enc) {
    if (storage_satisfies(eg, compress)) return 0;
    struct matrix m;
    matrix_init_on(&m, eg->rows, eg->cols, MATRIX_CPU);
    /* decode only the stored columns: spk_info stays separate */
    int spk = eg->spk_dim;
    eg->spk_dim = 0;
    int rc = example_input_decode(eg, &m);
    eg->spk_dim = spk;
    if (!rc) rc = egs_store_input(enc, eg, &m, eg->left_context, compress);
    matrix_release(&m);
    return rc;
}

const char *example_storage_name(const struct example *eg) {
    switch (eg->storage) {
    case EXAMPLE_STORE_FLOAT: return "float";
    case EXAMPLE_STORE_ZLIB: return "zlib";
    case EXAMPLE_STORE_PQ: return eg->pq->bits == 8 ? "pq8" : "pq16";
    case EXAMPLE_STORE_CM:
        return eg->cm.format == CM_FORMAT_CM    ? "cm"
               : eg->cm.format == CM_FORMAT_CM2 ? "cm2"
                                                : "cm3";
    }
    return "?";
}

int egs_compress_parse(const char *s, int *compress) {
    if (!s || !*s || !strcmp(s, "keep"))
        *compress = EGS_COMPRESS_KEEP;
    else if (!strcmp(s, "none"))
        *compress = EGS_COMPRESS_NONE;
    else if (!strcmp(s, "8bit"))
        *compress = EGS_COMPRESS_8BIT;
    else if (!strcmp(s, "16bit"))
        *compress = EGS_COMPRESS_16BIT;
    else if (!strcmp(s, "zlib"))
        *compress = EGS_COMPRESS_ZLIB;
    else if (!strcmp(s, "kaldi"))
        *compress = EGS_COMPRESS_KALDI;
    else
        return error_set("invalid compression '%s' (use none, 8bit, 16bit, zlib or kaldi)", s);
    return 0;
}

/* ---- decoding ---- */

/* Kaldi's uint16 -> float of the compressed-matrix headers: min + range * u / 65535. */
static inline float cm_u16(const struct compressed_matrix *cm, uint16_t u) {
    return cm->min_value + cm->range * (1.0f / 65535.0f) * (float)u;
}

static inline uint16_t load_u16(const unsigned char *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

/* CM: column headers (p0, p25, p75, p100) then bytes column-major; byte v maps piecewise
 * linearly 0..64 -> p0..p25, 64..192 -> p25..p75, 192..255 -> p75..p100. */
static void decode_cm(const struct compressed_matrix *cm, int row0, int n, float *dst, int stride) {
    const unsigned char *hdr = cm->data;
    const unsigned char *bytes = cm->data + (size_t)8 * cm->cols;
    for (int c = 0; c < cm->cols; c++) {
        const unsigned char *h = hdr + (size_t)8 * c;
        float p0 = cm_u16(cm, load_u16(h)), p25 = cm_u16(cm, load_u16(h + 2));
        float p75 = cm_u16(cm, load_u16(h + 4)), p100 = cm_u16(cm, load_u16(h + 6));
        float table[256];
        for (int v = 0; v <= 64; v++)
            table[v] = p0 + (p25 - p0) * (float)v * (1.0f / 64.0f);
        for (int v = 65; v <= 192; v++)
            table[v] = p25 + (p75 - p25) * (float)(v - 64) * (1.0f / 128.0f);
        for (int v = 193; v < 256; v++)
            table[v] = p75 + (p100 - p75) * (float)(v - 192) * (1.0f / 63.0f);
        const unsigned char *col = bytes + (size_t)c * cm->rows + row0;
        for (int r = 0; r < n; r++)
            dst[(size_t)r * stride + c] = table[col[r]];
    }
}

static void decode_cm2(const struct compressed_matrix *cm, int row0, int n, float *dst,
                       int stride) {
    float scale = cm->range * (1.0f / 65535.0f);
    for (int r = 0; r < n; r++) {
        const unsigned char *p = cm->data + ((size_t)(row0 + r) * cm->cols) * 2;
        float *d = dst + (size_t)r * stride;
        for (int c = 0; c < cm->cols; c++)
            d[c] = cm->min_value + scale * (float)load_u16(p + 2 * c);
    }
}

static void decode_cm3(const struct compressed_matrix *cm, int row0, int n, float *dst,
                       int stride) {
    float table[256];
    for (int v = 0; v < 256; v++)
        table[v] = cm->min_value + cm->range * (float)v * (1.0f / 255.0f);
    for (int r = 0; r < n; r++) {
        const unsigned char *p = cm->data + (size_t)(row0 + r) * cm->cols;
        float *d = dst + (size_t)r * stride;
        for (int c = 0; c < cm->cols; c++)
            d[c] = table[p[c]];
    }
}

int example_input_decode_rows(const struct example *eg, int row0, int n, struct matrix *dst) {
    ASSERT(dst->device == MATRIX_CPU);
    ASSERT(row0 >= 0 && n >= 0 && row0 + n <= eg->rows);
    ASSERT(dst->rows == n && dst->cols == example_input_dim(eg));
    float *d = dst->data;
    int stride = dst->stride;
    switch (eg->storage) {
    case EXAMPLE_STORE_FLOAT:
        for (int r = 0; r < n; r++)
            memcpy(d + (size_t)r * stride, eg->input.data + (size_t)(row0 + r) * eg->input.stride,
                   sizeof(float) * eg->cols);
        break;
    case EXAMPLE_STORE_CM:
        if (eg->cm.format == CM_FORMAT_CM)
            decode_cm(&eg->cm, row0, n, d, stride);
        else if (eg->cm.format == CM_FORMAT_CM2)
            decode_cm2(&eg->cm, row0, n, d, stride);
        else
            decode_cm3(&eg->cm, row0, n, d, stride);
        break;
    case EXAMPLE_STORE_ZLIB: {
        size_t want = (size_t)eg->rows * eg->cols * sizeof(float);
        int direct = row0 == 0 && n == eg->rows && (stride == eg->cols || n == 1);
        float *buf = direct ? d : xmalloc(want ? want : 1);
        int rc = io_inflate(eg->zdata, eg->zsize, buf, want);
        if (!rc && !direct)
            for (int r = 0; r < n; r++)
                memcpy(d + (size_t)r * stride, buf + (size_t)(row0 + r) * eg->cols,
                       sizeof(float) * eg->cols);
        if (!direct) free(buf);
        if (rc) return error_wrap("example input: ");
        struct matrix view = matrix_view(dst, 0, n, 0, eg->cols);
        if (io_check_finite(&view)) return error_wrap("example input (ZM): ");
        break;
    }
    case EXAMPLE_STORE_PQ: egs_pq_decode_rows(eg, row0, n, d, stride); break;
    default: ASSERT(!"bad storage");
    }
    if (eg->spk_dim)
        for (int r = 0; r < n; r++)
            memcpy(d + (size_t)r * stride + eg->cols, eg->spk_info, sizeof(float) * eg->spk_dim);
    return 0;
}

int example_input_decode(const struct example *eg, struct matrix *dst) {
    return example_input_decode_rows(eg, 0, eg->rows, dst);
}
