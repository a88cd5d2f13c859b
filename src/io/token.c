/* Token tables (Kaldi TokenHolder, TokenVectorHolder): utt2spk, spk2utt; and a key -> token map. */
#include "io/io.h"
#include "io/io-internal.h"

#include <stdlib.h>
#include <string.h>

static int is_blank(int c) { return c == ' ' || c == '\t' || c == '\r'; }

/* Rest of the line as tokens (the newline consumed). At most IO_MAX_TOKEN - 1 chars each. */
static int read_line_tokens(struct kin *in, struct token_vec *v) {
    char buf[IO_MAX_TOKEN];
    int cap = 0;
    for (;;) {
        int c;
        while ((c = kin_peek(in)) >= 0 && is_blank(c)) kin_getc(in);
        if (c < 0 || c == '\n') {
            if (c == '\n') kin_getc(in);
            return 0;
        }
        size_t n = 0;
        while ((c = kin_peek(in)) >= 0 && c != '\n' && !is_blank(c)) {
            if (c == 0) return kin_error(in, "NUL byte in a token");
            if (n + 1 >= sizeof buf) return kin_error(in, "token too long");
            buf[n++] = (char)kin_getc(in);
        }
        buf[n] = '\0';
        if (v->n == cap) {
            cap = cap ? 2 * cap : 8;
            v->v = xrealloc(v->v, sizeof(char *) * (size_t)cap);
        }
        v->v[v->n++] = xstrdup(buf);
    }
}

void token_vec_release(struct token_vec *v) {
    for (int i = 0; i < v->n; i++) free(v->v[i]);
    free(v->v);
    memset(v, 0, sizeof *v);
}

static int tokvec_read(struct kin *in, void *obj) {
    token_vec_release(obj);
    if (read_line_tokens(in, obj)) {
        token_vec_release(obj);
        return -1;
    }
    return 0;
}
static int tokvec_write(struct kout *out, int binary, const void *obj) {
    const struct token_vec *v = obj;
    for (int i = 0; i < v->n; i++)
        if (kout_printf(out, "%s ", v->v[i])) return -1;
    return kout_write(out, "\n", 1);
}
static void tokvec_free(void *obj) { token_vec_release(obj); }
const struct holder_ops holder_token_vector = {"token vector", sizeof(struct token_vec),
                                               tokvec_read, tokvec_write, tokvec_free, NULL};

static int token_read(struct kin *in, void *obj) {
    char **s = obj;
    free(*s);
    *s = NULL;
    struct token_vec v = {0};
    if (read_line_tokens(in, &v)) return -1;
    if (v.n != 1) {
        int n = v.n; /* token_vec_release zeroes it */
        token_vec_release(&v);
        return kin_error(in, "expected one token on the line, got %d", n);
    }
    *s = v.v[0];
    free(v.v);
    return 0;
}
static int token_write(struct kout *out, int binary, const void *obj) {
    return kout_printf(out, "%s\n", *(char *const *)obj);
}
static void token_free(void *obj) {
    free(*(char **)obj);
    *(char **)obj = NULL;
}
const struct holder_ops holder_token = {"token", sizeof(char *), token_read, token_write,
                                        token_free, NULL};

void token_pairs_add(struct token_pairs *b, char *key, char *value) {
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 64;
        b->p = xrealloc(b->p, sizeof *b->p * (size_t)b->cap);
    }
    b->p[b->n].key = key;
    b->p[b->n++].value = value;
}

static int pair_cmp(const void *a, const void *b) {
    return strcmp(((const struct token_pair *)a)->key, ((const struct token_pair *)b)->key);
}

int token_pairs_sort(struct token_pairs *b, struct token_map *m, const char *name) {
    int n = b->n, rc = 0;
    if (n > 1) qsort(b->p, (size_t)n, sizeof *b->p, pair_cmp);
    for (int i = 1; i < n && name && !rc; i++)
        if (!strcmp(b->p[i - 1].key, b->p[i].key))
            rc = error_set("'%s': key '%s' appears twice", name, b->p[i].key);
    m->keys = xmalloc(sizeof(char *) * (size_t)(n ? n : 1));
    m->values = xmalloc(sizeof(char *) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        m->keys[i] = b->p[i].key;
        m->values[i] = b->p[i].value;
    }
    m->n = n;
    free(b->p);
    memset(b, 0, sizeof *b);
    return rc;
}

int token_map_read(struct token_map *m, const char *rspecifier) {
    memset(m, 0, sizeof *m);
    struct table_reader r;
    if (table_reader_open(&r, rspecifier, &holder_token)) return -1;
    struct token_pairs pairs = {0};
    int rc;
    char *tok = NULL;
    while ((rc = table_reader_next(&r, &tok)) > 0) {
        token_pairs_add(&pairs, xstrdup(table_reader_key(&r)), tok);
        tok = NULL;
    }
    if (table_reader_close(&r) && rc == 0) rc = -1;
    if (token_pairs_sort(&pairs, m, rc == 0 ? rspecifier : NULL)) rc = -1;
    if (rc < 0) {
        token_map_release(m);
        return error_wrap("cannot read '%s': ", rspecifier);
    }
    return 0;
}

const char *token_map_find(const struct token_map *m, const char *key) {
    int lo = 0, hi = m->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(m->keys[mid], key);
        if (!c) return m->values[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

void token_map_release(struct token_map *m) {
    for (int i = 0; i < m->n; i++) {
        free(m->keys[i]);
        free(m->values[i]);
    }
    free(m->keys);
    free(m->values);
    memset(m, 0, sizeof *m);
}

static int entry_cmp(const void *a, const void *b) {
    return strcmp(((const struct token_vec_entry *)a)->key,
                  ((const struct token_vec_entry *)b)->key);
}

int token_vec_map_read(struct token_vec_map *m, const char *rspecifier) {
    memset(m, 0, sizeof *m);
    struct table_reader r;
    if (table_reader_open(&r, rspecifier, &holder_token_vector)) return -1;
    int cap = 0, rc;
    struct token_vec t = {0};
    while ((rc = table_reader_next(&r, &t)) == 1) {
        if (m->n == cap) m->e = xrealloc(m->e, sizeof *m->e * (size_t)(cap = cap ? 2 * cap : 256));
        m->e[m->n].key = xstrdup(table_reader_key(&r));
        m->e[m->n++].v = t;
        memset(&t, 0, sizeof t);
    }
    if (rc < 0 ? table_reader_abandon(&r) : table_reader_close(&r)) {
        token_vec_map_release(m);
        return -1;
    }
    if (m->n > 1) qsort(m->e, (size_t)m->n, sizeof *m->e, entry_cmp);
    return 0;
}

const struct token_vec_entry *token_vec_map_find(const struct token_vec_map *m, const char *key) {
    struct token_vec_entry k = {(char *)key, {0}};
    return m->n ? bsearch(&k, m->e, (size_t)m->n, sizeof *m->e, entry_cmp) : NULL;
}

void token_vec_map_release(struct token_vec_map *m) {
    for (int i = 0; i < m->n; i++) {
        free(m->e[i].key);
        token_vec_release(&m->e[i].v);
    }
    free(m->e);
    memset(m, 0, sizeof *m);
}
