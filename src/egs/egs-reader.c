/* Reading examples straight into minibatches (egs.h "reading into minibatches").
 *
 * The fast path: a binary example whose FM input has the shape of the examples before it (and
 * needs no trimming) is parsed from the stream buffer straight into its rows of the minibatch;
 * its labels go into arrays reused from example to example. Anything else (text, CM*, ZM, DM, a
 * new shape, surplus context to trim) is read into one struct example kept by the reader and
 * decoded into the rows, as egs_minibatch_build does. */
#include "egs/egs.h"
#include "egs/egs-internal.h"

#include <limits.h>

#include <stdlib.h>
#include <string.h>

/* The shape of the last example placed, which the next is expected to share. */
struct eg_shape {
    int valid;
    int rows, cols, frames, left, spk_dim;
};

struct egs_reader {
    struct table_reader table;
    struct eg_shape shape;
    /* labels of the example being read (grow-only) */
    int *start;
    int32_t *index;
    float *weight;
    int start_cap, label_cap;
    struct vector spk; /* <SpkInfo> of the example being read */
};

/* What the table reader reads into. With r set (a plain read), a fast-path example lands in
 * dst and direct is set; otherwise (r NULL, as in ark,bg: read-ahead) the example is read
 * whole into eg. */
struct eg_sink {
    struct egs_reader *r;
    float *dst;     /* rows of the minibatch for this example, or NULL: no fast path */
    int dst_stride;
    int direct;     /* the example was read by the fast path (labels in r, input in dst) */
    int num_frames, left, spk_dim;
    struct example eg;
};

static void grow_labels(struct egs_reader *r, int frames, int labels) {
    if (frames + 1 > r->start_cap) {
        r->start_cap = frames + 1 > 2 * r->start_cap ? frames + 1 : 2 * r->start_cap;
        r->start = xrealloc(r->start, sizeof(int) * r->start_cap);
    }
    if (labels > r->label_cap) {
        r->label_cap = labels > 2 * r->label_cap ? labels : 2 * r->label_cap;
        r->index = xrealloc(r->index, sizeof(int32_t) * r->label_cap);
        r->weight = xrealloc(r->weight, sizeof(float) * r->label_cap);
    }
}

/* <Lab1>, <Lab2> or <Labels> (tok, already read) into r's label arrays; the frame count. */
static int read_labels(struct kin *in, const char *tok, struct egs_reader *r, int *frames) {
    int32_t n;
    if (!strcmp(tok, "<Lab1>")) {
        if (io_read_int32(in, 1, &n)) return -1;
        if (n < 0) return kin_error(in, "integer vector: negative size %d", (int)n);
        if (n < 1) return kin_error(in, "example has no labelled frames");
        if (egs_check_count(in, n, 4, "label")) return -1;
        grow_labels(r, n, n);
        /* an IntegerVector: the count as an int32, then the elements as 4 little-endian bytes */
        if (kin_read(in, r->index, (size_t)n * 4, "integer vector")) return -1;
        for (int t = 0; t < n; t++) {
            const unsigned char *b = (const unsigned char *)&r->index[t];
            r->index[t] = (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                                    (uint32_t)b[3] << 24);
            r->start[t] = t;
            r->weight[t] = 1.0f;
        }
        r->start[n] = n;
        *frames = n;
        return 0;
    }
    if (!strcmp(tok, "<Lab2>")) {
        if (io_read_int32(in, 1, &n)) return -1;
    } else if (!strcmp(tok, "<Labels>")) {
        n = 1;
    } else {
        return kin_error(in, "expected <Lab1>, <Lab2> or <Labels>, got '%s'", tok);
    }
    if (n < 1) return kin_error(in, "example has %d labelled frames", (int)n);
    if (egs_check_count(in, n, EGS_BIN_INT32, "frame")) return -1;
    grow_labels(r, n, 0);
    int nl = 0;
    r->start[0] = 0;
    for (int t = 0; t < n; t++) {
        int32_t m;
        if (io_read_int32(in, 1, &m) || egs_check_count(in, m, EGS_BIN_LABEL, "label"))
            return -1;
        if ((int64_t)nl + m > IO_MAX_ELEMENTS / 2) return kin_error(in, "too many labels");
        grow_labels(r, n, nl + m);
        for (int i = 0; i < m; i++, nl++)
            if (io_read_int32(in, 1, &r->index[nl]) || io_read_float(in, 1, &r->weight[nl]))
                return -1;
        r->start[t + 1] = nl;
    }
    *frames = n;
    return 0;
}

/* The fast path, after the "\0B" header: the example into s->dst and s->r's labels. Returns 1
 * when done so; 2 when its FM input had another shape (then the whole example is in s->eg); 0
 * when the input is not FM (nothing consumed past <InputFrames>, s->num_frames set: the caller
 * reads the rest into s->eg); -1 on error. */
static int read_direct(struct kin *in, struct eg_sink *s) {
    struct egs_reader *r = s->r;
    const struct eg_shape *sh = &r->shape;
    char tok[32];
    int frames = 0;
    if (io_expect_token(in, 1, "<NnetExample>") || io_read_token(in, 1, tok, sizeof tok) ||
        read_labels(in, tok, r, &frames) || io_expect_token(in, 1, "<InputFrames>") ||
        io_peek_token(in, 1, tok, sizeof tok))
        return -1;
    if (strcmp(tok, "FM")) {
        s->num_frames = frames;
        return 0;
    }
    int32_t rows, cols;
    if (io_expect_token(in, 1, "FM") || io_read_int32(in, 1, &rows) || io_read_int32(in, 1, &cols))
        return -1;
    if (rows != sh->rows || cols != sh->cols) {
        /* Another shape: read it as a float example (checked as io_read_matrix does). */
        if (rows < 1 || cols < 1 || (int64_t)rows * cols > IO_MAX_ELEMENTS)
            return kin_error(in, "invalid matrix dimensions %d x %d", (int)rows, (int)cols);
        int64_t bytes = (int64_t)rows * cols * 4, left = kin_remaining(in);
        if (left >= 0 && bytes > left)
            return kin_error(in, "truncated matrix data (expected %lld bytes, %lld left)",
                             (long long)bytes, (long long)left);
        s->dst = NULL;
        struct example *eg = &s->eg;
        matrix_init_on(&eg->input, rows, cols, MATRIX_CPU);
        if (kin_read(in, eg->input.data, (size_t)bytes, "matrix data")) return -1;
        eg->storage = EXAMPLE_STORE_FLOAT;
        if (io_check_finite(&eg->input)) return kin_error(in, "example input: %s", error_get());
    } else {
        if (s->dst_stride == cols) {
            if (kin_read(in, s->dst, (size_t)rows * cols * 4, "matrix data")) return -1;
        } else {
            for (int i = 0; i < rows; i++)
                if (kin_read(in, s->dst + (size_t)i * s->dst_stride, (size_t)cols * 4,
                             "matrix data"))
                    return -1;
        }
        /* the readers' NaN/Inf policy (io.h io_check_finite) holds on the fast path too */
        struct matrix got = matrix_wrap(s->dst, rows, cols, s->dst_stride, MATRIX_CPU);
        if (io_check_finite(&got)) return kin_error(in, "example input: %s", error_get());
    }
    int32_t left;
    if (io_expect_token(in, 1, "<LeftContext>") || io_read_int32(in, 1, &left)) return -1;
    if (left < 0 || (int64_t)left + frames > rows)
        return kin_error(in, "left context %d with %d labelled frames does not fit %d input rows",
                         (int)left, frames, (int)rows);
    int spk_dim = 0;
    if (io_read_token(in, 1, tok, sizeof tok)) return -1;
    if (!strcmp(tok, "<SpkInfo>")) {
        if (io_read_vector(in, 1, &r->spk)) return -1;
        if (!vector_is_finite(&r->spk)) return kin_error(in, "non-finite value in <SpkInfo>");
        spk_dim = r->spk.dim;
        if (io_read_token(in, 1, tok, sizeof tok)) return -1;
    }
    if (strcmp(tok, "</NnetExample>")) return kin_error(in, "expected </NnetExample>, got '%s'", tok);
    s->num_frames = frames;
    s->left = left;
    if (!s->dst) { /* finish the float example: labels and speaker features from r */
        struct example *eg = &s->eg;
        eg->rows = rows;
        eg->cols = cols;
        eg->left_context = left;
        example_set_labels(eg, frames, r->start, r->index, r->weight);
        if (spk_dim) {
            eg->spk_dim = spk_dim;
            eg->spk_info = xmalloc(sizeof(float) * spk_dim);
            memcpy(eg->spk_info, r->spk.data, sizeof(float) * spk_dim);
        }
        return 2;
    }
    s->spk_dim = spk_dim;
    s->direct = 1;
    if (spk_dim != sh->spk_dim) return 1; /* the caller sees the new shape */
    for (int i = 0; i < spk_dim; i++) /* spk_dim columns after the cols features, every row */
        for (int j = 0; j < rows; j++) s->dst[(size_t)j * s->dst_stride + cols + i] = r->spk.data[i];
    return 1;
}

static int sink_read(struct kin *in, void *obj) {
    struct eg_sink *s = obj;
    example_release(&s->eg);
    s->direct = 0;
    int binary;
    if (io_read_header(in, &binary)) return -1;
    if (!s->r || !s->dst || !binary) return example_read(in, binary, &s->eg);
    /* The fast path reads up to <InputFrames>; a CM or ZM input then continues the slow way. */
    int got = read_direct(in, s);
    if (got < 0) return -1;
    if (got > 0) return 0;
    /* CM*, ZM or DM: the labels read already, then the input and the rest the usual way. */
    struct egs_reader *r = s->r;
    s->dst = NULL;
    example_set_labels(&s->eg, s->num_frames, r->start, r->index, r->weight);
    return example_read_tail(in, 1, &s->eg);
}

static void sink_release(void *obj) {
    struct eg_sink *s = obj;
    example_release(&s->eg);
}

static const struct holder_ops holder_sink = {
    .name = "example",
    .size = sizeof(struct eg_sink),
    .read = sink_read,
    .write = NULL,
    .release = sink_release,
    .apply_range = NULL,
};

struct egs_reader *egs_reader_open(const char *rspec) {
    struct egs_reader *r = xcalloc(1, sizeof *r);
    if (table_reader_open(&r->table, rspec, &holder_sink)) {
        free(r);
        return NULL;
    }
    return r;
}

int egs_reader_close(struct egs_reader *r) {
    if (!r) return 0;
    int rc = table_reader_close(&r->table);
    free(r->start);
    free(r->index);
    free(r->weight);
    vector_release(&r->spk);
    free(r);
    return rc;
}

const char *egs_reader_key(const struct egs_reader *r) { return table_reader_key(&r->table); }

/* Make mb's storage hold rows x dim (grow-only in rows). */
/* Storage for at least `rows` rows of `dim`, keeping the first `keep` rows. It grows by doubling
 * as examples arrive, so that a minibatch size far above what the data holds (--minibatch-size
 * 10^6) costs only the examples actually read, not minibatch x dim up front. */
static void reserve(struct egs_minibatch *mb, long rows, int dim, int keep) {
    if (mb->storage.cols == dim && mb->storage.rows >= rows) return;
    long cap = mb->storage.cols == dim ? 2L * mb->storage.rows : 0;
    if (cap < rows) cap = rows;
    if (cap < 64) cap = 64;
    if (cap > INT_MAX) cap = rows;
    ASSERT(cap <= INT_MAX);
    struct matrix grown;
    matrix_init_on(&grown, (int)cap, dim, MATRIX_CPU);
    if (keep > 0) {
        struct matrix dst = matrix_rows(&grown, 0, keep), src = matrix_rows(&mb->storage, 0, keep);
        matrix_copy(&dst, &src);
    }
    matrix_release(&mb->storage);
    mb->storage = grown;
}

static void add_labels(struct egs_minibatch *mb, int k, int frames, const int *start,
                       const int32_t *index, const float *weight) {
    int n = start[frames];
    if (mb->num_labels + n > mb->label_cap) {
        int cap = mb->num_labels + n > 2 * mb->label_cap ? mb->num_labels + n : 2 * mb->label_cap;
        mb->label_cap = cap;
        mb->label_row = xrealloc(mb->label_row, sizeof(int) * cap);
        mb->label_index = xrealloc(mb->label_index, sizeof(int32_t) * cap);
        mb->label_weight = xrealloc(mb->label_weight, sizeof(float) * cap);
    }
    int nl = mb->num_labels;
    for (int t = 0; t < frames; t++)
        for (int i = start[t]; i < start[t + 1]; i++, nl++) {
            mb->label_row[nl] = k * frames + t;
            mb->label_index[nl] = index[i];
            mb->label_weight[nl] = weight[i];
        }
    mb->num_labels = nl;
}

/* Example k (a struct example) into mb: k == 0 sets the minibatch's shape. Checks as
 * egs_minibatch_build. */
static int place_example(struct egs_reader *r, struct egs_minibatch *mb, int k,
                         const struct example *eg, int left, int right) {
    int trim = left >= 0;
    if (k == 0) {
        mb->left_context = trim ? left : eg->left_context;
        mb->right_context = trim ? right : example_right_context(eg);
        mb->frames_per_eg = eg->num_frames;
        mb->input_dim = example_input_dim(eg);
        mb->rows_per_eg = mb->left_context + eg->num_frames + mb->right_context;
        r->shape = (struct eg_shape){1, eg->rows, eg->cols, eg->num_frames, eg->left_context,
                                     eg->spk_dim};
    }
    if (eg->num_frames != mb->frames_per_eg || example_input_dim(eg) != mb->input_dim)
        return error_set("example %d of the minibatch has %d frames of dim %d, example 0 has "
                         "%d of dim %d",
                         k, eg->num_frames, example_input_dim(eg), mb->frames_per_eg,
                         mb->input_dim);
    if (eg->left_context < mb->left_context || example_right_context(eg) < mb->right_context)
        return error_set("example %d of the minibatch has context (%d, %d), needs (%d, %d)", k,
                         eg->left_context, example_right_context(eg), mb->left_context,
                         mb->right_context);
    if (!trim && (eg->left_context != mb->left_context ||
                  example_right_context(eg) != mb->right_context))
        return error_set("example %d of the minibatch has context (%d, %d), example 0 has "
                         "(%d, %d)",
                         k, eg->left_context, example_right_context(eg), mb->left_context,
                         mb->right_context);
    reserve(mb, (long)(k + 1) * mb->rows_per_eg, mb->input_dim, k * mb->rows_per_eg);
    struct matrix dst = matrix_rows(&mb->storage, k * mb->rows_per_eg, mb->rows_per_eg);
    if (example_input_decode_rows(eg, eg->left_context - mb->left_context, mb->rows_per_eg, &dst))
        return error_wrap("example %d of the minibatch: ", k);
    add_labels(mb, k, eg->num_frames, eg->label_start, eg->label_index, eg->label_weight);
    return 0;
}

/* A fast-path example k == 0 that does not share the shape before it (same rows and columns,
 * other frames, context or speaker features): as a float example from its rows in mb. */
static void direct_to_example(struct egs_reader *r, struct eg_sink *s, struct example *eg) {
    example_release(eg);
    eg->rows = r->shape.rows;
    eg->cols = r->shape.cols;
    eg->storage = EXAMPLE_STORE_FLOAT;
    matrix_init_on(&eg->input, eg->rows, eg->cols, MATRIX_CPU);
    for (int i = 0; i < eg->rows; i++)
        memcpy(eg->input.data + (size_t)i * eg->input.stride, s->dst + (size_t)i * s->dst_stride,
               sizeof(float) * eg->cols);
    eg->left_context = s->left;
    example_set_labels(eg, s->num_frames, r->start, r->index, r->weight);
    if (r->spk.dim) {
        eg->spk_dim = r->spk.dim;
        eg->spk_info = xmalloc(sizeof(float) * r->spk.dim);
        memcpy(eg->spk_info, r->spk.data, sizeof(float) * r->spk.dim);
    }
}

int egs_reader_read(struct egs_reader *r, struct egs_minibatch *mb, int max_egs, int left,
                    int right) {
    ASSERT(max_egs >= 1);
    ASSERT((left < 0) == (right < 0));
    struct eg_sink sink;
    memset(&sink, 0, sizeof sink);
    mb->num_labels = 0;
    mb->num_egs = 0;
    int k = 0, rc = 0;
    while (k < max_egs) {
        const struct eg_shape *sh = &r->shape;
        /* The fast path needs the shape known, and rows that need no trimming. */
        int fast = sh->valid && mb->storage.data && mb->storage.cols == sh->cols + sh->spk_dim &&
                   mb->storage.rows >= (k + 1) * sh->rows &&
                   (left < 0 || (sh->left - left == 0 && sh->rows - sh->left - sh->frames == right));
        sink.r = r;
        sink.dst = fast ? mb->storage.data + (size_t)k * sh->rows * mb->storage.stride : NULL;
        sink.dst_stride = mb->storage.stride;
        rc = table_reader_next(&r->table, &sink);
        if (rc < 0) { /* the table reader names the archive and the key */
            sink_release(&sink);
            return -1;
        }
        if (rc == 0) break;
        int ok = sink.direct && sink.num_frames == sh->frames && sink.left == sh->left &&
                 sink.spk_dim == sh->spk_dim;
        if (sink.direct && !ok) {
            if (k > 0) {
                rc = error_set("example %d of the minibatch has %d frames, context (%d, %d), %d "
                               "speaker features; the examples before it %d, (%d, %d), %d",
                               k, sink.num_frames, sink.left,
                               sh->rows - sink.left - sink.num_frames, sink.spk_dim, sh->frames,
                               sh->left, sh->rows - sh->left - sh->frames, sh->spk_dim);
                break;
            }
            direct_to_example(r, &sink, &sink.eg);
        }
        if (ok) {
            if (k == 0) { /* the shape of the minibatch before, which this example shares */
                mb->left_context = sh->left;
                mb->right_context = sh->rows - sh->left - sh->frames;
                mb->frames_per_eg = sh->frames;
                mb->input_dim = sh->cols + sh->spk_dim;
                mb->rows_per_eg = sh->rows;
            }
            add_labels(mb, k, sink.num_frames, r->start, r->index, r->weight);
        } else if ((rc = place_example(r, mb, k, &sink.eg, left, right)) < 0) {
            break;
        }
        k++;
    }
    sink_release(&sink);
    if (rc < 0)
        return error_wrap("'%s': key '%s': ", r->table.rspecifier, table_reader_key(&r->table));
    mb->num_egs = k;
    if (k > 0) mb->input = matrix_rows(&mb->storage, 0, k * mb->rows_per_eg);
    return k;
}
