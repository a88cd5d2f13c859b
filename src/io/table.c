/* Kaldi tables: archives and scp files behind rspecifiers and wspecifiers, generic over the
 * object type through struct holder_ops. */
#include "io/io.h"
#include "io/io-internal.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- holders ---- */

HOLDER_READ_WRITE(matrix, struct matrix, io_read_matrix, io_write_matrix)
static void matrix_free(void *obj) {
    matrix_release(obj);
    memset(obj, 0, sizeof(struct matrix));
}
static int matrix_range(void *obj, int r0, int r1, int c0, int c1) {
    struct matrix *m = obj;
    if (r0 < 0) { r0 = 0; r1 = m->rows - 1; }
    if (c0 < 0) { c0 = 0; c1 = m->cols - 1; }
    if (r1 < r0 || r1 >= m->rows || c1 < c0 || c1 >= m->cols)
        return error_set("range [%d:%d,%d:%d] out of bounds for a %d x %d matrix", r0, r1, c0,
                         c1, m->rows, m->cols);
    struct matrix sub;
    io_matrix_host(&sub, r1 - r0 + 1, c1 - c0 + 1);
    for (int r = 0; r < sub.rows; r++)
        memcpy(sub.data + (size_t)r * sub.stride, m->data + (size_t)(r0 + r) * m->stride + c0,
               sizeof(float) * (size_t)sub.cols);
    matrix_release(m);
    *m = sub;
    return 0;
}
const struct holder_ops holder_matrix = {"matrix", sizeof(struct matrix), matrix_read,
                                         matrix_write, matrix_free, matrix_range};

HOLDER_READ_WRITE(vector, struct vector, io_read_vector, io_write_vector)
static void vector_free(void *obj) {
    vector_release(obj);
    memset(obj, 0, sizeof(struct vector));
}
const struct holder_ops holder_vector = {"vector", sizeof(struct vector), vector_read,
                                         vector_write, vector_free, NULL};

HOLDER_READ_WRITE(cmat, struct compressed_matrix, io_read_compressed_matrix,
                  io_write_compressed_matrix)
static void cmat_free(void *obj) { compressed_matrix_release(obj); }
const struct holder_ops holder_compressed_matrix = {
    "compressed matrix", sizeof(struct compressed_matrix), cmat_read, cmat_write, cmat_free, NULL};

int io_read_basic_int32_vector(struct kin *in, int binary, struct int32_vec *v) {
    int32_vec_release(v);
    int cap = 0;
    if (binary) {
        int32_t n;
        if (io_read_int32(in, 1, &n)) return -1;
        if (n < 0) return kin_error(in, "integer vector: negative size %d", (int)n);
        if (io_check_bytes(in, (uint64_t)n * 5, "integer vector")) return -1;
        for (int32_t i = 0; i < n; i++) {
            int32_t x;
            if (io_read_int32(in, 1, &x)) {
                int32_vec_release(v);
                return -1;
            }
            io_int32_vec_push(v, &cap, x);
        }
        return 0;
    }
    for (;;) {
        int c = kin_peek(in);
        if (c < 0 || c == '\n') {
            if (c == '\n') kin_getc(in);
            return 0;
        }
        if (isspace(c)) {
            kin_getc(in);
            continue;
        }
        char w[32];
        size_t n = 0;
        while ((c = kin_peek(in)) >= 0 && !isspace(c)) {
            if (n + 1 >= sizeof w) {
                int32_vec_release(v);
                return kin_error(in, "integer too long in an integer vector");
            }
            w[n++] = (char)kin_getc(in);
        }
        w[n] = '\0';
        if (io_int32_vec_push_word(in, v, &cap, w)) return -1;
    }
}
/* Kaldi's BasicVectorHolder<int32>: every element carries its own size byte in binary, and the
 * text form is one line. */
static int ivec_read(struct kin *in, void *obj) {
    int binary;
    if (io_read_header(in, &binary)) return -1;
    return io_read_basic_int32_vector(in, binary, obj);
}
static int ivec_write(struct kout *out, int binary, const void *obj) {
    const struct int32_vec *v = obj;
    if (binary) {
        if (io_write_header(out, 1) || io_write_int32(out, 1, v->dim)) return -1;
        for (int i = 0; i < v->dim; i++)
            if (io_write_int32(out, 1, v->data[i])) return -1;
        return 0;
    }
    for (int i = 0; i < v->dim; i++)
        if (kout_printf(out, "%d ", (int)v->data[i])) return -1;
    return kout_write(out, "\n", 1);
}
static void ivec_free(void *obj) { int32_vec_release(obj); }
const struct holder_ops holder_int32_vector = {"integer vector", sizeof(struct int32_vec),
                                               ivec_read, ivec_write, ivec_free, NULL};

static int int32_read(struct kin *in, void *obj) {
    int binary;
    if (io_read_header(in, &binary) || io_read_int32(in, binary, obj)) return -1;
    if (binary) return 0;
    int c;
    while ((c = kin_peek(in)) == ' ' || c == '\t' || c == '\r') kin_getc(in);
    if (c >= 0 && c != '\n') return kin_error(in, "expected end of line after an integer");
    if (c == '\n') kin_getc(in);
    return 0;
}
static int int32_write(struct kout *out, int binary, const void *obj) {
    if (io_write_header(out, binary) || io_write_int32(out, binary, *(const int32_t *)obj))
        return -1;
    return binary ? 0 : kout_write(out, "\n", 1);
}
static void int32_free(void *obj) { *(int32_t *)obj = 0; }
const struct holder_ops holder_int32 = {"int32", sizeof(int32_t), int32_read, int32_write,
                                        int32_free, NULL};

/* ---- specifiers ---- */

int io_is_table_specifier(const char *s) {
    const char *colon = strchr(s, ':');
    if (!colon) return 0;
    char opts[256];
    size_t n = (size_t)(colon - s);
    if (n >= sizeof opts) return 0;
    memcpy(opts, s, n);
    opts[n] = '\0';
    for (char *save = NULL, *o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save))
        if (!strcmp(o, "ark") || !strcmp(o, "scp")) return 1;
    return 0;
}

struct spec {
    int ark, scp, ark_first;
    int binary, flush, permissive, once, sorted, called_sorted, background;
    char *first, *second; /* the filenames (second: the scp of ark,scp) */
};

static void spec_free(struct spec *s) {
    free(s->first);
    free(s->second);
}

static int parse_spec(const char *text, int write, struct spec *s) {
    memset(s, 0, sizeof *s);
    s->binary = 1;
    s->flush = -1;
    const char *colon = strchr(text, ':');
    if (!colon) return error_set("invalid %s '%s' (expected ark:... or scp:...)",
                                 write ? "wspecifier" : "rspecifier", text);
    char opts[256];
    size_t n = (size_t)(colon - text);
    if (n >= sizeof opts) return error_set("invalid specifier '%s'", text);
    memcpy(opts, text, n);
    opts[n] = '\0';
    int order = 0;
    for (char *save = NULL, *o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
        while (*o == ' ') o++;
        if (!strcmp(o, "ark")) s->ark = ++order;
        else if (!strcmp(o, "scp")) s->scp = ++order;
        else if (!strcmp(o, "b")) s->binary = 1;
        else if (!strcmp(o, "t")) s->binary = 0;
        else if (!strcmp(o, "p")) s->permissive = 1;
        else if (!strcmp(o, "np")) s->permissive = 0;
        else if (write && !strcmp(o, "f")) s->flush = 1;
        else if (write && !strcmp(o, "nf")) s->flush = 0;
        else if (!write && !strcmp(o, "o")) s->once = 1;
        else if (!write && !strcmp(o, "no")) s->once = 0;
        else if (!write && !strcmp(o, "s")) s->sorted = 1;
        else if (!write && !strcmp(o, "ns")) s->sorted = 0;
        else if (!write && !strcmp(o, "cs")) s->called_sorted = 1;
        else if (!write && !strcmp(o, "ncs")) s->called_sorted = 0;
        else if (!write && !strcmp(o, "bg")) s->background = 1;
        else if (!write && !strcmp(o, "nbg")) s->background = 0;
        else return error_set("invalid option '%s' in specifier '%s'", o, text);
    }
    if (!s->ark && !s->scp) return error_set("invalid specifier '%s' (no ark or scp)", text);
    if (s->ark && s->scp) {
        if (!write) return error_set("invalid rspecifier '%s' (ark and scp)", text);
        if (s->scp < s->ark) return error_set("invalid wspecifier '%s' (use ark,scp)", text);
        const char *comma = strchr(colon + 1, ',');
        if (!comma) return error_set("invalid wspecifier '%s' (ark,scp needs two names)", text);
        s->first = strndup(colon + 1, (size_t)(comma - colon - 1));
        s->second = xstrdup(comma + 1);
        if (!s->first) abort();
    } else {
        s->first = xstrdup(colon + 1);
    }
    return 0;
}

static int valid_key(const char *key) {
    if (!*key) return 0;
    for (const char *p = key; *p; p++)
        if (isspace((unsigned char)*p)) return 0;
    return 1;
}

/* ---- scp files ---- */

/* Read one line (without '\n'). 1 = line, 0 = end, -1 = error. */
static int read_line(struct kin *in, char **line, size_t *cap) {
    size_t n = 0;
    int c = kin_getc(in);
    if (c < 0) return 0;
    for (; c >= 0 && c != '\n'; c = kin_getc(in)) {
        if (n + 2 > *cap) {
            if (*cap >= (1u << 20)) return kin_error(in, "line too long");
            *cap = *cap ? *cap * 2 : 256;
            *line = xrealloc(*line, *cap);
        }
        (*line)[n++] = (char)c;
    }
    if (!*line) *line = xmalloc(*cap = 256);
    (*line)[n] = '\0';
    if (memchr(*line, '\0', n)) return kin_error(in, "NUL byte in a text line");
    return 1;
}

/* Split "key value" in place; trailing whitespace (and \r) is dropped. 0 or -1. */
static int split_scp_line(struct kin *in, char *line, char **key, char **value) {
    size_t n = strlen(line);
    while (n > 0 && isspace((unsigned char)line[n - 1])) line[--n] = '\0';
    char *p = line;
    while (*p && isspace((unsigned char)*p)) p++;
    if (!*p) return error_set("'%s' line ending at byte %lld: empty line", in->name,
                              (long long)in->offset);
    *key = p;
    while (*p && !isspace((unsigned char)*p)) p++;
    if (!*p) return error_set("'%s': line for key '%s' has no filename", in->name, *key);
    *p++ = '\0';
    while (*p && isspace((unsigned char)*p)) p++;
    *value = p;
    return 0;
}

/* Load a whole scp (the rest of an open stream) into m. */
static int load_scp_stream(struct kin *inp, struct token_map *m) {
    struct kin in = *inp;
    struct token_pairs pairs = {0};
    int rc = 0;
    char *line = NULL;
    size_t lcap = 0;
    for (;;) {
        int got = read_line(&in, &line, &lcap);
        if (got <= 0) {
            rc = got;
            break;
        }
        char *k, *v;
        if (split_scp_line(&in, line, &k, &v)) {
            rc = -1;
            break;
        }
        token_pairs_add(&pairs, xstrdup(k), xstrdup(v));
    }
    free(line);
    *inp = in;
    if (token_pairs_sort(&pairs, m, rc ? NULL : in.name)) rc = -1;
    return rc;
}

static int load_scp(const char *rx, struct token_map *m) {
    struct kin in;
    if (kin_open(&in, rx)) return -1;
    int rc = load_scp_stream(&in, m);
    if (kin_close(&in) && !rc) rc = -1;
    return rc;
}

/* ---- ranges ---- */

static int parse_int_part(const char *s, size_t n, int *out) {
    if (n == 0 || n > 10) return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i])) return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v > INT_MAX) return -1;
    *out = (int)v;
    return 0;
}

/* "a:b" -> a, b; "" or ":" -> -1, -1. */
static int parse_pair(const char *s, size_t n, int *a, int *b) {
    if (n == 0 || (n == 1 && s[0] == ':')) {
        *a = *b = -1;
        return 0;
    }
    const char *colon = memchr(s, ':', n);
    if (!colon) return -1;
    if (parse_int_part(s, (size_t)(colon - s), a)) return -1;
    if (parse_int_part(colon + 1, n - (size_t)(colon + 1 - s), b)) return -1;
    return *b >= *a ? 0 : -1;
}

/* Splits "file[range]" -> filename length and range ints; 0 = no range, 1 = range, -1 bad. */
static int parse_range(const char *rx, size_t *name_len, int range[4]) {
    size_t n = strlen(rx);
    if (n < 2 || rx[n - 1] != ']') return 0;
    const char *open = strrchr(rx, '[');
    if (!open) return 0;
    const char *body = open + 1;
    size_t blen = (size_t)(rx + n - 1 - body);
    const char *comma = memchr(body, ',', blen);
    range[0] = range[1] = range[2] = range[3] = -1;
    if (comma) {
        if (parse_pair(body, (size_t)(comma - body), &range[0], &range[1]) ||
            parse_pair(comma + 1, blen - (size_t)(comma + 1 - body), &range[2], &range[3]))
            return -1;
    } else if (parse_pair(body, blen, &range[0], &range[1])) {
        return -1;
    }
    *name_len = (size_t)(open - rx);
    return 1;
}

/* Read one object from an (scp-value) rxfilename. `cache` (may be NULL) keeps the last plain
 * file open so that consecutive entries of one archive need no reopen. */
static int read_object_cached(const char *rx, const struct holder_ops *ops, void *obj,
                              struct kin *cache) {
    int range[4];
    size_t name_len = strlen(rx);
    int has_range = parse_range(rx, &name_len, range);
    if (has_range < 0) return error_set("invalid range in '%s'", rx);
    if (has_range && !ops->apply_range)
        return error_set("'%s': ranges are not allowed for a %s", rx, ops->name);
    char *name = strndup(rx, name_len);
    if (!name) abort();
    int rc = 0;
    struct kin local, *in = &local;
    /* Reuse the cached file for "same-file:offset". */
    const char *colon = strrchr(name, ':');
    int reused = 0;
    if (cache && cache->f && colon && cache->kind == KIN_FILE) {
        size_t flen = (size_t)(colon - name);
        const char *cached = cache->name;
        const char *ccolon = strrchr(cached, ':');
        size_t clen = ccolon ? (size_t)(ccolon - cached) : strlen(cached);
        int digits = colon[1] != '\0';
        for (const char *p = colon + 1; *p; p++) digits &= isdigit((unsigned char)*p) != 0;
        if (digits && flen == clen && !strncmp(name, cached, flen)) {
            long long off = strtoll(colon + 1, NULL, 10);
            if (kin_seek(cache, off)) {
                free(name);
                return -1;
            }
            in = cache;
            reused = 1;
        }
    }
    if (!reused) {
        if (kin_open(&local, name)) {
            free(name);
            return -1;
        }
    }
    if (ops->read(in, obj)) rc = -1;
    if (!rc && has_range && ops->apply_range(obj, range[0], range[1], range[2], range[3])) {
        error_wrap("'%s': ", rx);
        rc = -1;
    }
    if (rc) ops->release(obj);
    if (!reused) {
        if (cache && local.kind == KIN_FILE) {
            kin_close(cache);
            *cache = local;
        } else if (kin_close(&local) && !rc) {
            ops->release(obj);
            rc = -1;
        }
    }
    free(name);
    return rc;
}

int io_read_object(const char *rxfilename, const struct holder_ops *ops, void *obj) {
    return read_object_cached(rxfilename, ops, obj, NULL);
}

int io_read_matrix_file(const char *rxfilename, struct matrix *m) {
    return io_read_object(rxfilename, &holder_matrix, m);
}

int io_write_matrix_file(const char *wxfilename, int binary, const struct matrix *m) {
    struct kout out;
    if (kout_open(&out, wxfilename)) return -1;
    if (matrix_write(&out, binary, m)) {
        kout_abort(&out);
        return -1;
    }
    return kout_close(&out);
}

/* ---- writer ---- */

/* What a writer holds besides its outputs; leaves it zeroed. */
static void writer_free(struct table_writer *w) {
    token_map_release(&w->scp_files);
    free(w->wspecifier);
    free(w->ark_name);
    memset(w, 0, sizeof *w);
}

int table_writer_open(struct table_writer *w, const char *wspecifier,
                      const struct holder_ops *ops) {
    memset(w, 0, sizeof *w);
    struct spec s;
    if (parse_spec(wspecifier, 1, &s)) return -1;
    w->ops = ops;
    w->wspecifier = xstrdup(wspecifier);
    w->binary = s.binary;
    w->flush = s.flush > 0;
    w->permissive = s.permissive;
    int rc = 0;
    if (s.ark && s.scp) {
        w->kind = TABLE_ARK_SCP;
        if (kout_open(&w->ark, s.first)) rc = -1;
        else if (kout_open(&w->scp, s.second)) {
            kout_abort(&w->ark);
            rc = -1;
        }
        w->ark_name = xstrdup(s.first);
    } else if (s.ark) {
        w->kind = TABLE_ARK;
        if (kout_open(&w->ark, s.first)) rc = -1;
    } else {
        w->kind = TABLE_SCP;
        rc = load_scp(s.first, &w->scp_files);
    }
    spec_free(&s);
    if (rc) {
        error_wrap("cannot open '%s': ", wspecifier);
        writer_free(w);
    }
    return rc;
}

int table_writer_write(struct table_writer *w, const char *key, const void *obj) {
    if (!valid_key(key)) return error_set("'%s': invalid key '%s' (empty or with whitespace)",
                                          w->wspecifier, key);
    if (w->kind == TABLE_SCP) {
        const char *file = token_map_find(&w->scp_files, key);
        if (!file) {
            if (w->permissive) return 0;
            return error_set("'%s': key '%s' is not in the scp", w->wspecifier, key);
        }
        struct kout out;
        if (kout_open(&out, file)) return error_wrap("key '%s': ", key);
        if (w->ops->write(&out, w->binary, obj)) {
            kout_abort(&out);
            return error_wrap("key '%s': ", key);
        }
        if (kout_close(&out)) return error_wrap("key '%s': ", key);
        w->num_written++;
        return 0;
    }
    if (kout_write(&w->ark, key, strlen(key)) || kout_write(&w->ark, " ", 1))
        return error_wrap("key '%s': ", key);
    int64_t offset = w->ark.offset;
    if (w->ops->write(&w->ark, w->binary, obj)) return error_wrap("key '%s': ", key);
    if (w->kind == TABLE_ARK_SCP) {
        if (kout_printf(&w->scp, "%s %s:%lld\n", key, w->ark_name, (long long)offset))
            return error_wrap("key '%s': ", key);
        if (w->flush && kout_flush(&w->scp)) return -1;
    }
    if (w->flush && kout_flush(&w->ark)) return -1;
    w->num_written++;
    return 0;
}

int table_writer_close(struct table_writer *w) {
    int rc = 0;
    if (w->ark.f && kout_close(&w->ark)) rc = -1;
    if (w->scp.f) { /* an scp never goes out pointing into an archive that failed */
        if (rc) kout_abort(&w->scp);
        else if (kout_close(&w->scp)) rc = -1;
    }
    writer_free(w);
    return rc;
}

void table_writer_abort(struct table_writer *w) {
    if (w->ark.f) kout_abort(&w->ark);
    if (w->scp.f) kout_abort(&w->scp);
    writer_free(w);
}

/* ---- sequential reader ---- */

/* ark,bg: one object read ahead on a thread (base.h's prefetch, one slot). */
struct table_reader_bg {
    struct prefetch *ahead;
    char key[IO_MAX_TOKEN];   /* the slot's key */
    void *slot;               /* ops->size bytes */
};

struct table_reader_scp {
    char *line;
    size_t cap;
    struct kin cache;
};

static int next_plain(struct table_reader *r, void *obj, char *key) {
    if (r->kind == TABLE_SCP) {
        struct table_reader_scp *st = r->scp;
        for (;;) {
            int got = read_line(&r->in, &st->line, &st->cap);
            if (got <= 0) return got;
            char *k, *v;
            if (split_scp_line(&r->in, st->line, &k, &v)) return -1;
            if (strlen(k) >= IO_MAX_TOKEN) return error_set("'%s': key too long", r->in.name);
            strcpy(key, k);
            if (read_object_cached(v, r->ops, obj, &st->cache)) {
                if (r->permissive) {
                    VLOG(1, "skipping scp entry '%s': %s", key, error_get());
                    continue;
                }
                return error_wrap("'%s': key '%s': ", r->in.name, key);
            }
            return 1;
        }
    }
    struct kin *in = &r->in;
    int c;
    while ((c = kin_peek(in)) >= 0 && isspace(c)) kin_getc(in);
    if (c < 0) return 0;
    size_t n = 0;
    int64_t key_at = in->offset;
    while ((c = kin_peek(in)) >= 0 && !isspace(c)) {
        if (n + 1 >= IO_MAX_TOKEN) {
            key[n] = '\0';
            return kin_error(in, "key too long");
        }
        if (c == 0) return kin_error(in, "invalid key (NUL byte)");
        key[n++] = (char)kin_getc(in);
    }
    key[n] = '\0';
    if (c < 0) {
        if (r->permissive) return 0;
        return error_set("'%s' at byte %lld: truncated archive: key '%.100s' without an object",
                         in->name, (long long)key_at, key);
    }
    if (c != '\n') kin_getc(in); /* the space or tab after the key */
    r->entry_offset = in->offset;
    if (r->ops->read(in, obj)) {
        r->ops->release(obj);
        if (r->permissive) {
            WARN("'%s': stopping early at key '%s': %s", in->name, key, error_get());
            return 0;
        }
        return error_wrap("key '%s': ", key);
    }
    return 1;
}

/* On the read-ahead thread. */
static int bg_read(void *ctx, int slot) {
    struct table_reader *r = ctx;
    return next_plain(r, r->bg->slot, r->bg->key);
}

static int reader_setup(struct table_reader *r, const char *rspecifier, struct kin *given,
                        const struct holder_ops *ops) {
    memset(r, 0, sizeof *r);
    struct spec s;
    if (parse_spec(rspecifier, 0, &s)) {
        if (given) kin_close(given);
        return -1;
    }
    r->ops = ops;
    r->rspecifier = xstrdup(rspecifier);
    r->kind = s.ark ? TABLE_ARK : TABLE_SCP;
    r->once = s.once;
    r->sorted = s.sorted;
    r->called_sorted = s.called_sorted;
    r->permissive = s.permissive;
    r->background = s.background;
    int rc = 0;
    if (given) r->in = *given;
    else rc = kin_open(&r->in, s.first);
    spec_free(&s);
    if (rc) {
        error_wrap("cannot open '%s': ", rspecifier);
        free(r->rspecifier);
        memset(r, 0, sizeof *r);
        return -1;
    }
    if (r->kind == TABLE_SCP) r->scp = xcalloc(1, sizeof *r->scp);
    return 0;
}

int table_reader_open(struct table_reader *r, const char *rspecifier,
                      const struct holder_ops *ops) {
    return reader_setup(r, rspecifier, NULL, ops);
}

int table_reader_open_stream(struct table_reader *r, const char *rspecifier, struct kin *in,
                             const struct holder_ops *ops) {
    return reader_setup(r, rspecifier, in, ops);
}

int table_reader_next(struct table_reader *r, void *obj) {
    if (r->done) return r->done_rc;
    int rc;
    if (r->background) {
        struct table_reader_bg *bg = r->bg;
        if (!bg) {
            bg = r->bg = xcalloc(1, sizeof *bg);
            bg->slot = xcalloc(1, r->ops->size);
            if (!(bg->ahead = prefetch_new(1, bg_read, r))) {
                r->done = 1;
                return r->done_rc = -1;
            }
        }
        int slot;
        rc = prefetch_next(bg->ahead, &slot);
        if (rc > 0) {
            r->ops->release(obj);
            memcpy(obj, bg->slot, r->ops->size);
            memset(bg->slot, 0, r->ops->size);
            memcpy(r->key, bg->key, sizeof r->key);
            prefetch_release(bg->ahead); /* the next object is read while the caller works */
        }
    } else {
        char key[IO_MAX_TOKEN];
        rc = next_plain(r, obj, key);
        if (rc > 0) memcpy(r->key, key, sizeof key);
    }
    if (rc <= 0) {
        r->done = 1;
        r->done_rc = rc;
        r->key[0] = '\0';
    }
    return rc;
}

const char *table_reader_key(const struct table_reader *r) { return r->key; }

/* ---- random access ---- */

static int ra_load(struct table_reader *r) {
    if (r->ra_loaded) return 0;
    r->ra_loaded = 1;
    if (r->kind == TABLE_SCP) {
        /* The whole scp, from the stream the sequential reader would have used. */
        return load_scp_stream(&r->in, &r->ra);
    }
    if (r->in.kind != KIN_FILE)
        return error_set("'%s': random access to an archive needs a plain file", r->in.name);
    /* One pass over the archive, recording where each object starts. */
    struct token_pairs pairs = {0};
    int rc = 0;
    void *obj = xcalloc(1, r->ops->size);
    char key[IO_MAX_TOKEN];
    for (;;) {
        int got = next_plain(r, obj, key);
        if (got < 0) rc = -1;
        if (got <= 0) break;
        char val[64];
        snprintf(val, sizeof val, ":%lld", (long long)r->entry_offset);
        char *value = xmalloc(strlen(r->in.name) + strlen(val) + 1);
        strcpy(value, r->in.name);
        strcat(value, val);
        token_pairs_add(&pairs, xstrdup(key), value);
    }
    r->ops->release(obj);
    free(obj);
    token_pairs_sort(&pairs, &r->ra, NULL);
    return rc;
}

/* ---- random access into a stream (pipe, stdin): Kaldi's ark,s,cs semantics ---- */

struct stream_entry {
    char *key;
    unsigned char *bytes; /* the object serialised in binary by its holder; NULL once dropped */
    size_t size;
};

struct table_reader_stream {
    struct stream_entry *e;
    int n, cap, start;            /* entries [start, n) are live (start > 0 only with s,cs) */
    int eof;                      /* the stream has been read to its end */
    char last_key[IO_MAX_TOKEN];  /* the last key read from the stream (have_last) */
    int have_last;
    char last_lookup[IO_MAX_TOKEN];
    int have_lookup;
};

static void stream_drop(struct stream_entry *e) {
    free(e->bytes);
    e->bytes = NULL;
    e->size = 0;
}

static void stream_free(struct table_reader_stream *st) {
    if (!st) return;
    for (int i = 0; i < st->n; i++) {
        free(st->e[i].key);
        free(st->e[i].bytes);
    }
    free(st->e);
    free(st);
}

/* Serialise obj with its holder (binary) into a new buffer. */
static int stream_save(const struct holder_ops *ops, const void *obj, struct stream_entry *e) {
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f) return error_set("open_memstream: %s", strerror(errno));
    struct kout out;
    kout_wrap(&out, f, "memory");
    int rc = ops->write(&out, 1, obj);
    if (kout_close(&out)) rc = -1;
    fclose(f);
    if (rc) {
        free(buf);
        return -1;
    }
    e->bytes = (unsigned char *)buf;
    e->size = size;
    return 0;
}

static int stream_load(const struct table_reader *r, const struct stream_entry *e, void *obj) {
    FILE *f = fmemopen(e->bytes, e->size, "r");
    if (!f) return error_set("fmemopen: %s", strerror(errno));
    struct kin in;
    kin_wrap(&in, f, r->in.name, (int64_t)e->size);
    int rc = r->ops->read(&in, obj);
    kin_close(&in);
    fclose(f);
    if (rc) r->ops->release(obj);
    return rc ? error_wrap("key '%s': ", e->key) : 1;
}

/* Index of key among the live entries, or -1. */
static int stream_find(const struct table_reader *r, const char *key) {
    const struct table_reader_stream *st = r->stream;
    if (r->sorted) {
        int lo = st->start, hi = st->n - 1;
        while (lo <= hi) {
            int mid = lo + (hi - lo) / 2, c = strcmp(st->e[mid].key, key);
            if (!c) return st->e[mid].bytes ? mid : -1;
            if (c < 0) lo = mid + 1;
            else hi = mid - 1;
        }
        return -1;
    }
    for (int i = st->n - 1; i >= st->start; i--)
        if (st->e[i].bytes && !strcmp(st->e[i].key, key)) return i;
    return -1;
}

static int stream_lookup(struct table_reader *r, const char *key, void *obj) {
    if (!r->stream) r->stream = xcalloc(1, sizeof *r->stream);
    struct table_reader_stream *st = r->stream;
    if (r->called_sorted) {
        if (st->have_lookup && strcmp(key, st->last_lookup) < 0)
            return error_set("'%s': the cs option was given but keys are not asked for in "
                             "sorted order ('%s' after '%s')", r->rspecifier, key,
                             st->last_lookup);
        snprintf(st->last_lookup, sizeof st->last_lookup, "%s", key);
        st->have_lookup = 1;
        if (r->sorted) /* Nothing before this key will be asked for again. */
            while (st->start < st->n && strcmp(st->e[st->start].key, key) < 0) {
                free(st->e[st->start].key);
                stream_drop(&st->e[st->start]);
                st->e[st->start].key = NULL;
                st->start++;
            }
    }
    int i = stream_find(r, key);
    if (i < 0) {
        if (st->eof) return 0;
        if (r->sorted && st->have_last && strcmp(st->last_key, key) > 0) return 0;
        /* Read on until the key, a key past it (sorted), or the end. */
        void *tmp = xcalloc(1, r->ops->size);
        char k[IO_MAX_TOKEN];
        for (;;) {
            int got = next_plain(r, tmp, k);
            if (got <= 0) {
                r->ops->release(tmp);
                free(tmp);
                if (got < 0) return error_wrap("cannot read '%s': ", r->rspecifier);
                st->eof = 1;
                return 0;
            }
            if (r->sorted && st->have_last && strcmp(k, st->last_key) <= 0) {
                r->ops->release(tmp);
                free(tmp);
                return error_set("'%s': the s option was given but the archive is not sorted "
                                 "('%s' after '%s')", r->rspecifier, k, st->last_key);
            }
            snprintf(st->last_key, sizeof st->last_key, "%s", k);
            st->have_last = 1;
            if (st->n == st->cap) {
                st->cap = st->cap ? 2 * st->cap : 16;
                st->e = xrealloc(st->e, sizeof *st->e * (size_t)st->cap);
            }
            /* Entries dropped by s,cs sit before start: move the live ones down. */
            if (st->start > 0 && 2 * st->start >= st->n) {
                memmove(st->e, st->e + st->start, sizeof *st->e * (size_t)(st->n - st->start));
                st->n -= st->start;
                st->start = 0;
            }
            struct stream_entry *e = &st->e[st->n];
            memset(e, 0, sizeof *e);
            e->key = xstrdup(k);
            int c = strcmp(k, key);
            if (c == 0 && r->once) {
                /* Asked for once: hand it over without keeping a copy. */
                e->bytes = NULL;
                st->n++;
                r->ops->release(obj);
                memcpy(obj, tmp, r->ops->size);
                free(tmp);
                return 1;
            }
            if (stream_save(r->ops, tmp, e)) {
                free(e->key);
                r->ops->release(tmp);
                free(tmp);
                return error_wrap("key '%s': ", k);
            }
            st->n++;
            if (c == 0) {
                r->ops->release(obj);
                memcpy(obj, tmp, r->ops->size);
                free(tmp);
                return 1;
            }
            if (r->sorted && c > 0) {
                r->ops->release(tmp);
                free(tmp);
                return 0;
            }
        }
    }
    int rc = stream_load(r, &st->e[i], obj);
    if (rc > 0 && r->once) stream_drop(&st->e[i]);
    return rc;
}

int table_reader_lookup(struct table_reader *r, const char *key, void *obj) {
    if (r->background && r->bg) return error_set("lookup on a table already read sequentially");
    /* A stream, or any table with s,cs (Kaldi's sorted-archive reading, here for scp too): read
     * forward, one object in memory; only an unsorted file or scp is indexed. */
    if ((r->kind == TABLE_ARK && r->in.kind != KIN_FILE) || (r->sorted && r->called_sorted))
        return stream_lookup(r, key, obj);
    if (ra_load(r)) return error_wrap("cannot read '%s': ", r->rspecifier);
    const char *value = token_map_find(&r->ra, key);
    if (!value) return 0;
    if (r->kind == TABLE_SCP) {
        struct table_reader_scp *st = r->scp;
        if (read_object_cached(value, r->ops, obj, &st->cache))
            return error_wrap("'%s': key '%s': ", r->rspecifier, key);
        return 1;
    }
    /* An archive value is "name:offset" of a plain file: seek our own stream. */
    const char *colon = strrchr(value, ':');
    if (kin_seek(&r->in, strtoll(colon + 1, NULL, 10))) return -1;
    if (r->ops->read(&r->in, obj)) {
        r->ops->release(obj);
        return error_wrap("key '%s': ", key);
    }
    return 1;
}

int table_reader_abandon(struct table_reader *r) {
    char *msg = xstrdup(error_get());
    table_reader_close(r);
    error_set("%s", msg);
    free(msg);
    return -1;
}

int table_reader_close(struct table_reader *r) {
    int rc = 0;
    if (r->bg) {
        struct table_reader_bg *bg = r->bg;
        prefetch_free(bg->ahead);
        r->ops->release(bg->slot);
        free(bg->slot);
        free(bg);
    }
    int finished = r->done && r->done_rc == 0;
    if (r->in.f) {
        /* A pipe we stopped reading early may die of SIGPIPE: only a fully read one counts. */
        if (kin_close(&r->in) && finished) rc = -1;
    }
    if (r->scp) {
        struct table_reader_scp *st = r->scp;
        free(st->line);
        kin_close(&st->cache);
        free(st);
    }
    token_map_release(&r->ra);
    stream_free(r->stream);
    free(r->rspecifier);
    memset(r, 0, sizeof *r);
    return rc;
}
