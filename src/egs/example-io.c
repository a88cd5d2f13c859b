/* Reading and writing Kaldi NnetExample objects (egs.h "Archive format"), and holder_example. */
#include "egs/egs.h"
#include "egs/egs-internal.h"

#include <stdlib.h>
#include <string.h>

int egs_check_count(struct kin *in, int64_t count, int64_t bytes_each, const char *what) {
    if (count < 0) return kin_error(in, "negative %s count %lld", what, (long long)count);
    int64_t left = kin_remaining(in);
    if (left >= 0 && count > left / bytes_each)
        return kin_error(in, "%s count %lld exceeds the %lld bytes left", what, (long long)count,
                         (long long)left);
    if (count > IO_MAX_ELEMENTS / 2)
        return kin_error(in, "%s count %lld too large", what, (long long)count);
    return 0;
}

/* Text items take at least two characters ("1 "). */
#define TEXT_ITEM 2

static int read_labels_lab1(struct kin *in, int binary, struct example *eg) {
    struct int32_vec v = {0};
    if (io_read_int32_vector(in, binary, &v)) return -1;
    if (v.dim < 1) {
        int32_vec_release(&v);
        return kin_error(in, "example has no labelled frames");
    }
    example_set_labels_simple(eg, v.dim, v.data);
    int32_vec_release(&v);
    return 0;
}

/* Lab2 (num_frames >= 0 frames) or the legacy <Labels> (one frame). */
static int read_labels_pairs(struct kin *in, int binary, struct example *eg, int legacy) {
    int32_t num_frames = 1;
    if (!legacy && io_read_int32(in, binary, &num_frames)) return -1;
    if (num_frames < 1) return kin_error(in, "example has %d labelled frames", (int)num_frames);
    if (egs_check_count(in, num_frames, binary ? EGS_BIN_INT32 : TEXT_ITEM, "frame")) return -1;
    int *start = xmalloc(sizeof(int) * ((size_t)num_frames + 1));
    int32_t *index = NULL;
    float *weight = NULL;
    int cap = 0, nl = 0, rc = -1;
    start[0] = 0;
    for (int t = 0; t < num_frames; t++) {
        int32_t n;
        if (io_read_int32(in, binary, &n)) goto out;
        if (egs_check_count(in, n, binary ? EGS_BIN_LABEL : TEXT_ITEM, "label")) goto out;
        if ((int64_t)nl + n > IO_MAX_ELEMENTS / 2) {
            kin_error(in, "too many labels");
            goto out;
        }
        if (nl + n > cap) {
            cap = nl + n > 2 * cap ? nl + n : 2 * cap;
            index = xrealloc(index, sizeof(int32_t) * cap);
            weight = xrealloc(weight, sizeof(float) * cap);
        }
        for (int i = 0; i < n; i++, nl++)
            if (io_read_int32(in, binary, &index[nl]) || io_read_float(in, binary, &weight[nl]))
                goto out;
        start[t + 1] = nl;
    }
    example_set_labels(eg, num_frames, start, index ? index : (int32_t[1]){0},
                       weight ? weight : (float[1]){0});
    rc = 0;
out:
    free(start);
    free(index);
    free(weight);
    return rc;
}

static int read_zm(struct kin *in, struct example *eg) {
    int32_t version, rows, cols, nbytes;
    if (io_read_int32(in, 1, &version)) return -1;
    if (version != EXAMPLE_ZLIB_VERSION)
        return kin_error(in, "unsupported ZM version %d (this build reads %d)", (int)version,
                         EXAMPLE_ZLIB_VERSION);
    if (io_read_int32(in, 1, &rows) || io_read_int32(in, 1, &cols) || io_read_int32(in, 1, &nbytes))
        return -1;
    if (rows < 1 || cols < 1 || (int64_t)rows * cols > IO_MAX_ELEMENTS)
        return kin_error(in, "bad ZM shape %d x %d", (int)rows, (int)cols);
    if (nbytes < 0) return kin_error(in, "bad ZM size %d", (int)nbytes);
    int64_t left = kin_remaining(in);
    if (left >= 0 && nbytes > left)
        return kin_error(in, "truncated ZM data (expected %d bytes, %lld left)", (int)nbytes,
                         (long long)left);
    /* deflate cannot expand more than ~1032:1; a larger claim is a lie that would make the
     * decoder allocate for nothing */
    if ((int64_t)rows * cols * 4 > (int64_t)nbytes * 1032 + 1024)
        return kin_error(in, "ZM shape %d x %d impossible from %d deflated bytes", (int)rows,
                         (int)cols, (int)nbytes);
    eg->zdata = xmalloc(nbytes ? (size_t)nbytes : 1);
    eg->zsize = (size_t)nbytes;
    eg->storage = EXAMPLE_STORE_ZLIB;
    if (kin_read(in, eg->zdata, (size_t)nbytes, "ZM data")) return -1;
    eg->rows = rows;
    eg->cols = cols;
    return 0;
}

static int read_input(struct kin *in, int binary, struct example *eg) {
    if (binary) {
        char tok[16];
        if (io_peek_token(in, binary, tok, sizeof tok)) return -1;
        if (!strcmp(tok, "ZM")) {
            if (io_expect_token(in, binary, "ZM")) return -1;
            return read_zm(in, eg);
        }
        if (!strcmp(tok, "PQ")) {
            if (io_expect_token(in, binary, "PQ")) return -1;
            return egs_pq_read(in, eg);
        }
        if (!strcmp(tok, "CM") || !strcmp(tok, "CM2") || !strcmp(tok, "CM3")) {
            eg->storage = EXAMPLE_STORE_CM;
            if (io_read_compressed_matrix(in, binary, &eg->cm)) return -1;
            eg->rows = eg->cm.rows;
            eg->cols = eg->cm.cols;
            return 0;
        }
    }
    eg->storage = EXAMPLE_STORE_FLOAT;
    if (io_read_matrix(in, binary, &eg->input)) return -1;
    if (io_check_finite(&eg->input)) return kin_error(in, "example input: %s", error_get());
    eg->rows = eg->input.rows;
    eg->cols = eg->input.cols;
    return 0;
}

/* After <InputFrames> (labels already in eg): the input, <LeftContext>, <SpkInfo> and the end
 * token. On error eg may hold part of the example (the caller releases it). */
int example_read_tail(struct kin *in, int binary, struct example *eg) {
    char tok[32];
    if (read_input(in, binary, eg)) return -1;
    if (eg->rows < 1 || eg->cols < 1)
        return kin_error(in, "example input is empty (%d x %d)", eg->rows, eg->cols);
    int32_t left;
    if (io_expect_token(in, binary, "<LeftContext>") || io_read_int32(in, binary, &left)) return -1;
    if (left < 0 || (int64_t)left + eg->num_frames > eg->rows)
        return kin_error(in, "left context %d with %d labelled frames does not fit %d input rows",
                         (int)left, eg->num_frames, eg->rows);
    eg->left_context = left;
    /* <SpkInfo> is optional in very old egs; Kaldi always writes it. */
    if (io_read_token(in, binary, tok, sizeof tok)) return -1;
    if (!strcmp(tok, "<SpkInfo>")) {
        struct vector v = {0};
        if (io_read_vector(in, binary, &v)) return -1;
        if (!vector_is_finite(&v)) {
            vector_release(&v);
            return kin_error(in, "non-finite value in <SpkInfo>");
        }
        if (v.dim > 0) {
            eg->spk_dim = v.dim;
            eg->spk_info = xmalloc(sizeof(float) * v.dim);
            memcpy(eg->spk_info, v.data, sizeof(float) * v.dim);
        }
        vector_release(&v);
        if (io_read_token(in, binary, tok, sizeof tok)) return -1;
    }
    if (strcmp(tok, "</NnetExample>"))
        return kin_error(in, "expected </NnetExample>, got '%s'", tok);
    return 0;
}

int example_read(struct kin *in, int binary, struct example *eg) {
    example_release(eg);
    char tok[32];
    if (io_expect_token(in, binary, "<NnetExample>")) goto fail;
    if (io_read_token(in, binary, tok, sizeof tok)) goto fail;
    if (!strcmp(tok, "<Lab1>")) {
        if (read_labels_lab1(in, binary, eg)) goto fail;
    } else if (!strcmp(tok, "<Lab2>") || !strcmp(tok, "<Labels>")) {
        if (read_labels_pairs(in, binary, eg, !strcmp(tok, "<Labels>"))) goto fail;
    } else {
        kin_error(in, "expected <Lab1>, <Lab2> or <Labels>, got '%s'", tok);
        goto fail;
    }
    if (io_expect_token(in, binary, "<InputFrames>") || example_read_tail(in, binary, eg))
        goto fail;
    return 0;
fail:
    example_release(eg);
    return -1;
}

static int labels_simple(const struct example *eg) {
    for (int t = 0; t < eg->num_frames; t++)
        if (eg->label_start[t + 1] - eg->label_start[t] != 1 ||
            eg->label_weight[eg->label_start[t]] != 1.0f)
            return 0;
    return 1;
}

static int write_input(struct kout *out, int binary, const struct example *eg) {
    if (binary && eg->storage == EXAMPLE_STORE_CM)
        return io_write_compressed_matrix(out, binary, &eg->cm);
    if (binary && eg->storage == EXAMPLE_STORE_ZLIB) {
        if (eg->zsize > INT32_MAX) return error_set("deflated example input too large");
        if (io_write_token(out, 1, "ZM") || io_write_int32(out, 1, EXAMPLE_ZLIB_VERSION) ||
            io_write_int32(out, 1, eg->rows) || io_write_int32(out, 1, eg->cols) ||
            io_write_int32(out, 1, (int32_t)eg->zsize) || kout_write(out, eg->zdata, eg->zsize))
            return -1;
        return 0;
    }
    if (binary && eg->storage == EXAMPLE_STORE_PQ) return egs_pq_write(out, eg);
    if (eg->storage == EXAMPLE_STORE_FLOAT) return io_write_matrix(out, binary, &eg->input);
    /* text mode, compressed: the decoded values, as Kaldi does */
    struct matrix m;
    matrix_init_on(&m, eg->rows, eg->cols, MATRIX_CPU);
    struct example tmp = *eg;
    tmp.spk_dim = 0;
    int rc = example_input_decode(&tmp, &m);
    if (!rc) rc = io_write_matrix(out, binary, &m);
    matrix_release(&m);
    return rc;
}

int example_write(struct kout *out, int binary, const struct example *eg) {
    ASSERT(eg->num_frames >= 1 && eg->label_start);
    ASSERT(eg->left_context >= 0 && eg->left_context + eg->num_frames <= eg->rows);
    if (io_write_token(out, binary, "<NnetExample>")) return -1;
    if (labels_simple(eg)) {
        struct int32_vec v = {eg->label_index, eg->num_frames};
        if (io_write_token(out, binary, "<Lab1>") || io_write_int32_vector(out, binary, &v))
            return -1;
    } else {
        if (io_write_token(out, binary, "<Lab2>") || io_write_int32(out, binary, eg->num_frames))
            return -1;
        for (int t = 0; t < eg->num_frames; t++) {
            int s = eg->label_start[t], e = eg->label_start[t + 1];
            if (io_write_int32(out, binary, e - s)) return -1;
            for (int i = s; i < e; i++)
                if (io_write_int32(out, binary, eg->label_index[i]) ||
                    io_write_float(out, binary, eg->label_weight[i]))
                    return -1;
        }
    }
    if (io_write_token(out, binary, "<InputFrames>") || write_input(out, binary, eg)) return -1;
    if (io_write_token(out, binary, "<LeftContext>") ||
        io_write_int32(out, binary, eg->left_context) || io_write_token(out, binary, "<SpkInfo>"))
        return -1;
    struct vector spk = vector_wrap(eg->spk_info, eg->spk_dim, MATRIX_CPU);
    if (io_write_vector(out, binary, &spk)) return -1;
    if (io_write_token(out, binary, "</NnetExample>")) return -1;
    /* text: end the line, so the next archive key starts one (Kaldi would run on) */
    return binary ? 0 : kout_write(out, "\n", 1);
}

/* ---- holder ---- */

HOLDER_READ_WRITE(holder, struct example, example_read, example_write)

static void holder_release(void *obj) { example_release(obj); }

const struct holder_ops holder_example = {
    .name = "example",
    .size = sizeof(struct example),
    .read = holder_read,
    .write = holder_write,
    .release = holder_release,
    .apply_range = NULL,
};
