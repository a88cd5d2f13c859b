/* PQ: example inputs quantised with per-dimension ranges shared by many examples (egs.h "PQ").
 *
 * A range table (struct egs_pq_table) gives every input dimension j a min and a step: code c
 * decodes to min[j] + step[j] * c, c in 0 .. 2^bits - 1. Tables are reference-counted and shared
 * by every example stored with them; in an archive a table is written once per output stream,
 * inline in the first example that uses it, and referred to by its id (a hash of its content)
 * after that. The stream states (which tables a kout has written, which a kin has read) hang on
 * the streams (io.h holder_state) and die with them. */
#include "egs/egs.h"
#include "egs/egs-internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Values beyond this are left to the Kaldi formats (a range near FLT_MAX would overflow). */
#define PQ_MAX_ABS 1e30
/* A stream may hold at most this many distinct tables. */
#define PQ_MAX_TABLES (1 << 20)

static uint32_t max_code(int bits) { return bits == 8 ? 255u : 65535u; }

/* FNV-1a, 64 bit, over the table's content (bits, cols, min[], step[] as bytes). */
static uint64_t table_hash(int bits, int cols, const float *min, const float *step) {
    uint64_t h = 1469598103934665603ULL;
    int32_t head[2] = {bits, cols};
    const unsigned char *parts[3] = {(const unsigned char *)head, (const unsigned char *)min,
                                     (const unsigned char *)step};
    size_t sizes[3] = {sizeof head, sizeof(float) * (size_t)cols, sizeof(float) * (size_t)cols};
    for (int p = 0; p < 3; p++)
        for (size_t i = 0; i < sizes[p]; i++) {
            h ^= parts[p][i];
            h *= 1099511628211ULL;
        }
    return h;
}

static struct egs_pq_table *table_alloc(int bits, int cols) {
    struct egs_pq_table *t = xcalloc(1, sizeof *t);
    atomic_init(&t->refs, 1);
    t->bits = bits;
    t->cols = cols;
    t->min = xmalloc(sizeof(float) * (size_t)cols);
    t->step = xmalloc(sizeof(float) * (size_t)cols);
    return t;
}

struct egs_pq_table *egs_pq_table_new(int bits, int cols, const double *lo, const double *hi) {
    ASSERT((bits == 8 || bits == 16) && cols >= 1);
    struct egs_pq_table *t = table_alloc(bits, cols);
    double mc = max_code(bits);
    for (int j = 0; j < cols; j++) {
        ASSERT(lo[j] <= hi[j] && fabs(lo[j]) <= PQ_MAX_ABS && fabs(hi[j]) <= PQ_MAX_ABS);
        /* min at or below lo, step such that min + step * max_code reaches hi: every value in
         * [lo, hi] is then within step / 2 of a code (plus float rounding) */
        float m, s;
        if (lo[j] < 0 && hi[j] > 0) {
            /* 0 on the grid (min = -step * k): a dimension that is mostly 0 (a border pixel)
             * keeps its zeros exact. One step of slack keeps hi covered. */
            s = (float)((hi[j] - lo[j]) / (mc - 1));
            for (;;) {
                double k = ceil(-lo[j] / (double)s);
                m = -(s * (float)k); /* code k decodes to exactly 0 */
                if ((double)m <= lo[j] + 1e-6 * (hi[j] - lo[j]) &&
                    (double)m + (double)s * mc >= hi[j])
                    break;
                s = nextafterf(s, INFINITY);
            }
        } else {
            m = (float)lo[j];
            if ((double)m > lo[j]) m = nextafterf(m, -INFINITY);
            s = (float)((hi[j] - (double)m) / mc);
            while ((double)m + (double)s * mc < hi[j]) s = nextafterf(s, INFINITY);
        }
        t->min[j] = m;
        t->step[j] = s;
    }
    t->id = table_hash(bits, cols, t->min, t->step);
    return t;
}

struct egs_pq_table *egs_pq_table_ref(struct egs_pq_table *t) {
    if (t) atomic_fetch_add(&t->refs, 1);
    return t;
}

void egs_pq_table_unref(struct egs_pq_table *t) {
    if (!t || atomic_fetch_sub(&t->refs, 1) != 1) return;
    free(t->min);
    free(t->step);
    free(t);
}

/* ---- encoding ---- */

void egs_pq_encoder_init(struct egs_pq_encoder *e, int bits) {
    ASSERT(bits == 8 || bits == 16);
    memset(e, 0, sizeof *e);
    e->bits = bits;
}

void egs_pq_encoder_release(struct egs_pq_encoder *e) {
    free(e->lo);
    free(e->hi);
    egs_pq_table_unref(e->table);
    memset(e, 0, sizeof *e);
}

/* Values PQ can hold: finite and at most PQ_MAX_ABS in magnitude. */
static int representable(const struct matrix *m) {
    for (int r = 0; r < m->rows; r++) {
        const float *x = m->data + (size_t)r * m->stride;
        for (int j = 0; j < m->cols; j++)
            if (!(fabsf(x[j]) <= (float)PQ_MAX_ABS)) return 0;
    }
    return 1;
}

/* Start over for cols dimensions (the first example, or another dimension). */
static void encoder_reset(struct egs_pq_encoder *e, int cols) {
    free(e->lo);
    free(e->hi);
    e->cols = cols;
    e->lo = xmalloc(sizeof(double) * (size_t)cols);
    e->hi = xmalloc(sizeof(double) * (size_t)cols);
    e->seen = 0;
    e->dirty = 1;
    e->observed = 0;
}

void egs_pq_encoder_observe(struct egs_pq_encoder *e, const struct matrix *m) {
    ASSERT(m->device == MATRIX_CPU);
    if (!representable(m)) return; /* stored by the Kaldi formats */
    if (m->cols != e->cols) encoder_reset(e, m->cols);
    for (int r = 0; r < m->rows; r++) {
        const float *x = m->data + (size_t)r * m->stride;
        for (int j = 0; j < m->cols; j++) {
            if (!e->seen || x[j] < e->lo[j]) e->lo[j] = x[j];
            if (!e->seen || x[j] > e->hi[j]) e->hi[j] = x[j];
        }
        e->seen = 1;
    }
    e->dirty = 1;
    e->observed = 1;
}

/* Widen every range by EGS_PQ_PROBE_MARGIN of its width on each side (after a probe was observed). */
static void widen_all(struct egs_pq_encoder *e) {
    for (int j = 0; j < e->cols; j++) {
        double w = e->hi[j] - e->lo[j];
        /* a range that ends at 0 stays there (non-negative features: pixels, counts) */
        if (e->lo[j] != 0) e->lo[j] = fmax(e->lo[j] - EGS_PQ_PROBE_MARGIN * w, -PQ_MAX_ABS);
        if (e->hi[j] != 0) e->hi[j] = fmin(e->hi[j] + EGS_PQ_PROBE_MARGIN * w, PQ_MAX_ABS);
    }
}

/* Make the ranges cover m; a range that grows gets the margin on the side it grew. */
static void cover(struct egs_pq_encoder *e, const struct matrix *m) {
    if (e->observed) { /* the probe's ranges, with their margins, once */
        widen_all(e);
        e->observed = 0;
    }
    for (int j = 0; j < m->cols; j++) {
        double a = INFINITY, b = -INFINITY;
        for (int r = 0; r < m->rows; r++) {
            double x = m->data[(size_t)r * m->stride + j];
            a = x < a ? x : a;
            b = x > b ? x : b;
        }
        if (!e->seen) {
            e->lo[j] = a;
            e->hi[j] = b;
            continue;
        }
        if (a >= e->lo[j] && b <= e->hi[j]) continue;
        double lo = fmin(a, e->lo[j]), hi = fmax(b, e->hi[j]), w = hi - lo;
        if (a < e->lo[j]) lo = fmax(lo - EGS_PQ_GROW_MARGIN * w, -PQ_MAX_ABS);
        if (b > e->hi[j]) hi = fmin(hi + EGS_PQ_GROW_MARGIN * w, PQ_MAX_ABS);
        e->lo[j] = lo;
        e->hi[j] = hi;
        e->dirty = 1;
    }
    e->seen = 1;
}

static void encode(const struct egs_pq_table *t, const struct matrix *m, unsigned char *codes) {
    uint32_t mc = max_code(t->bits);
    for (int r = 0; r < m->rows; r++) {
        const float *x = m->data + (size_t)r * m->stride;
        for (int j = 0; j < m->cols; j++) {
            uint32_t c = 0;
            if (t->step[j] > 0) {
                double q = floor(((double)x[j] - t->min[j]) / t->step[j] + 0.5);
                c = q <= 0 ? 0 : q >= mc ? mc : (uint32_t)q;
            }
            size_t at = (size_t)r * m->cols + j;
            if (t->bits == 8) {
                codes[at] = (unsigned char)c;
            } else {
                codes[2 * at] = (unsigned char)(c & 0xff);
                codes[2 * at + 1] = (unsigned char)(c >> 8);
            }
        }
    }
}

int egs_pq_encoder_store(struct egs_pq_encoder *e, struct example *eg, const struct matrix *m,
                         int left_context) {
    ASSERT(m->device == MATRIX_CPU && m->rows >= 1 && m->cols >= 1 && left_context >= 0);
    if (!representable(m)) /* NaN/Inf (an error there) or huge values: a Kaldi format */
        return example_set_input(eg, m, left_context,
                                 e->bits == 8 ? EGS_COMPRESS_8BIT : EGS_COMPRESS_16BIT);
    if (m->cols != e->cols) encoder_reset(e, m->cols);
    cover(e, m);
    if (e->dirty || !e->table) {
        egs_pq_table_unref(e->table);
        e->table = egs_pq_table_new(e->bits, e->cols, e->lo, e->hi);
        e->dirty = 0;
        e->num_tables++;
    }
    /* the example's old input goes only now: m may be a view of it */
    size_t n = (size_t)m->rows * m->cols * (e->bits / 8);
    unsigned char *codes = xmalloc(n);
    encode(e->table, m, codes);
    int rows = m->rows, cols = m->cols;
    example_input_release(eg);
    eg->storage = EXAMPLE_STORE_PQ;
    eg->pq = egs_pq_table_ref(e->table);
    eg->pq_codes = codes;
    eg->rows = rows;
    eg->cols = cols;
    eg->left_context = left_context;
    return 0;
}

/* One row: d[j] = min[j] + step[j] * code[j]. -O2 does not vectorise loops of unknown length
 * (GCC's very-cheap cost model); these two are the trainer's reading thread's inner loops. */
#if defined(__GNUC__) && !defined(__clang__)
#define PQ_VECTORISE __attribute__((optimize("tree-vectorize")))
#else
#define PQ_VECTORISE
#endif
PQ_VECTORISE static void decode_row8(const float *restrict min, const float *restrict step,
                        const unsigned char *restrict c, float *restrict d, int cols) {
    for (int j = 0; j < cols; j++) d[j] = min[j] + step[j] * (float)c[j];
}

PQ_VECTORISE static void decode_row16(const float *restrict min, const float *restrict step,
                         const unsigned char *restrict c, float *restrict d, int cols) {
    for (int j = 0; j < cols; j++)
        d[j] = min[j] + step[j] * (float)(uint16_t)(c[2 * j] | (c[2 * j + 1] << 8));
}

void egs_pq_decode_rows(const struct example *eg, int row0, int n, float *dst, int stride) {
    const struct egs_pq_table *t = eg->pq;
    int cols = eg->cols, bytes = t->bits / 8;
    for (int r = 0; r < n; r++) {
        const unsigned char *c = eg->pq_codes + (size_t)(row0 + r) * cols * bytes;
        if (bytes == 1)
            decode_row8(t->min, t->step, c, dst + (size_t)r * stride, cols);
        else
            decode_row16(t->min, t->step, c, dst + (size_t)r * stride, cols);
    }
}

/* ---- per-stream table sets (open addressing on the id) ---- */

struct pq_stream {
    struct egs_pq_table **slot; /* (cap), NULL = empty */
    size_t cap, n;
};

static void pq_stream_free(void *p) {
    struct pq_stream *s = p;
    for (size_t i = 0; i < s->cap; i++) egs_pq_table_unref(s->slot[i]);
    free(s->slot);
    free(s);
}

static struct egs_pq_table **pq_stream_find(struct pq_stream *s, uint64_t id) {
    size_t i = (size_t)(id ^ (id >> 29)) & (s->cap - 1);
    while (s->slot[i] && s->slot[i]->id != id) i = (i + 1) & (s->cap - 1);
    return &s->slot[i];
}

/* Add t (a reference is taken); an entry of the same id is replaced. */
static void pq_stream_put(struct pq_stream *s, struct egs_pq_table *t) {
    if (2 * (s->n + 1) > s->cap) {
        struct pq_stream bigger = {xcalloc(s->cap ? 2 * s->cap : 64, sizeof *s->slot),
                                   s->cap ? 2 * s->cap : 64, 0};
        for (size_t i = 0; i < s->cap; i++)
            if (s->slot[i]) *pq_stream_find(&bigger, s->slot[i]->id) = s->slot[i];
        bigger.n = s->n;
        free(s->slot);
        *s = bigger;
    }
    struct egs_pq_table **at = pq_stream_find(s, t->id);
    if (*at) {
        egs_pq_table_unref(*at);
        s->n--;
    }
    *at = egs_pq_table_ref(t);
    s->n++;
}

static struct pq_stream *stream_state(void **state, void (**state_free)(void *)) {
    if (*state && *state_free != pq_stream_free) return NULL; /* another holder's */
    if (!*state) {
        *state = xcalloc(1, sizeof(struct pq_stream));
        *state_free = pq_stream_free;
    }
    return *state;
}

/* ---- archive form ---- */

int egs_pq_write(struct kout *out, const struct example *eg) {
    const struct egs_pq_table *t = eg->pq;
    struct pq_stream *s = stream_state(&out->holder_state, &out->holder_state_free);
    if (!s) return error_set("'%s': stream state held by another object type", out->name);
    int have = s->cap && *pq_stream_find(s, t->id) != NULL;
    int coded = eg->pq_coded && t->bits == 8;
    if (io_write_token(out, 1, "PQ") ||
        io_write_int32(out, 1, coded ? EGS_PQ_VERSION_CODED : EGS_PQ_VERSION) ||
        io_write_int32(out, 1, t->bits) || io_write_int32(out, 1, eg->rows) ||
        io_write_int32(out, 1, eg->cols) || io_write_int32(out, 1, (int32_t)(uint32_t)(t->id >> 32)) ||
        io_write_int32(out, 1, (int32_t)(uint32_t)t->id) || io_write_int32(out, 1, !have))
        return -1;
    if (!have) {
        if (kout_write(out, t->min, sizeof(float) * (size_t)t->cols) ||
            kout_write(out, t->step, sizeof(float) * (size_t)t->cols))
            return -1;
        pq_stream_put(s, (struct egs_pq_table *)t);
    }
    if (!coded) return kout_write(out, eg->pq_codes, (size_t)eg->rows * eg->cols * (t->bits / 8));
    unsigned char *buf;
    size_t n = egs_pq_code(eg->pq_codes, eg->rows, eg->cols, &buf);
    int rc = n > INT32_MAX ? error_set("coded PQ input too large")
                           : io_write_int32(out, 1, (int32_t)n) || kout_write(out, buf, n);
    free(buf);
    return rc ? -1 : 0;
}

size_t egs_pq_stored_bytes(const struct example *eg) {
    /* the header: "PQ " and 7 int32s with their size bytes (the table is not counted) */
    size_t head = 3 + 7 * 5;
    if (!(eg->pq_coded && eg->pq->bits == 8))
        return head + (size_t)eg->rows * eg->cols * (eg->pq->bits / 8);
    unsigned char *buf;
    size_t n = egs_pq_code(eg->pq_codes, eg->rows, eg->cols, &buf);
    free(buf);
    return head + 5 + n;
}

/* Version 2's int32 nbytes and coded bytes, decoded into eg->pq_codes (code_bytes of them). */
static int read_coded(struct kin *in, struct example *eg, int64_t code_bytes) {
    int32_t n;
    if (io_read_int32(in, 1, &n)) return -1;
    int64_t left = kin_remaining(in);
    if (n < 0 || n > code_bytes * 4 + 8)
        return kin_error(in, "bad coded PQ size %d for %d x %d codes", (int)n, eg->rows, eg->cols);
    if (left >= 0 && n > left)
        return kin_error(in, "truncated coded PQ data (expected %d bytes, %lld left)", (int)n,
                         (long long)left);
    unsigned char *buf = xmalloc(n ? (size_t)n : 1);
    int rc = kin_read(in, buf, (size_t)n, "coded PQ data");
    if (!rc && egs_pq_uncode(buf, (size_t)n, eg->rows, eg->cols, eg->pq_codes))
        rc = kin_error(in, "%s", error_get());
    free(buf);
    return rc;
}

int egs_pq_read(struct kin *in, struct example *eg) {
    int32_t version, bits, rows, cols, id_hi, id_lo, has;
    if (io_read_int32(in, 1, &version)) return -1;
    if (version != EGS_PQ_VERSION && version != EGS_PQ_VERSION_CODED)
        return kin_error(in, "unsupported PQ version %d (this build reads %d and %d)",
                         (int)version, EGS_PQ_VERSION, EGS_PQ_VERSION_CODED);
    if (io_read_int32(in, 1, &bits) || io_read_int32(in, 1, &rows) ||
        io_read_int32(in, 1, &cols) || io_read_int32(in, 1, &id_hi) ||
        io_read_int32(in, 1, &id_lo) || io_read_int32(in, 1, &has))
        return -1;
    if (bits != 8 && bits != 16) return kin_error(in, "bad PQ code width %d (8 or 16)", (int)bits);
    int coded = version == EGS_PQ_VERSION_CODED;
    if (coded && bits != 8) return kin_error(in, "coded PQ input of %d bits (only 8)", (int)bits);
    if (rows < 1 || cols < 1 || (int64_t)rows * cols > IO_MAX_ELEMENTS / 2)
        return kin_error(in, "bad PQ shape %d x %d", (int)rows, (int)cols);
    if (has != 0 && has != 1) return kin_error(in, "bad PQ table flag %d", (int)has);
    uint64_t id = (uint64_t)(uint32_t)id_hi << 32 | (uint32_t)id_lo;
    int64_t left = kin_remaining(in);
    int64_t code_bytes = (int64_t)rows * cols * (bits / 8);
    /* coded: at least the nbytes field; a code never takes more than 4 bytes */
    int64_t need = (coded ? EGS_BIN_INT32 : code_bytes) + (has ? (int64_t)cols * 8 : 0);
    if (left >= 0 && need > left)
        return kin_error(in, "truncated PQ data (expected %lld bytes, %lld left)", (long long)need,
                         (long long)left);
    struct pq_stream *s = stream_state(&in->holder_state, &in->holder_state_free);
    if (!s) return kin_error(in, "stream state held by another object type");
    struct egs_pq_table *t = NULL;
    if (has) {
        if (s->n >= PQ_MAX_TABLES)
            return kin_error(in, "more than %d PQ range tables in one stream", PQ_MAX_TABLES);
        t = table_alloc(bits, cols);
        if (kin_read(in, t->min, sizeof(float) * (size_t)cols, "PQ table") ||
            kin_read(in, t->step, sizeof(float) * (size_t)cols, "PQ table")) {
            egs_pq_table_unref(t);
            return -1;
        }
        double mc = max_code(bits);
        for (int j = 0; j < cols; j++) {
            double m = t->min[j], st = t->step[j];
            /* every code then decodes to a finite float (min + step * code in float) */
            if (!isfinite(m) || !isfinite(st) || st < 0 || fabs(m) + st * mc > FLT_MAX / 2) {
                egs_pq_table_unref(t);
                return kin_error(in, "bad PQ range of dimension %d (min %g, step %g)", j, m, st);
            }
        }
        t->id = table_hash(bits, cols, t->min, t->step);
        if (t->id != id) {
            egs_pq_table_unref(t);
            return kin_error(in, "corrupt PQ range table (content does not match its id %016llx)",
                             (unsigned long long)id);
        }
        pq_stream_put(s, t);
    } else {
        struct egs_pq_table **at = s->cap ? pq_stream_find(s, id) : NULL;
        if (!at || !*at)
            return kin_error(in, "PQ input refers to range table %016llx, which this stream has not "
                                 "held before (read such an archive from its start, in order)",
                             (unsigned long long)id);
        t = egs_pq_table_ref(*at);
        if (t->bits != bits || t->cols != cols) {
            int tb = t->bits, tc = t->cols;
            egs_pq_table_unref(t);
            return kin_error(in, "PQ input of %d bits x %d dims refers to a table of %d x %d",
                             (int)bits, (int)cols, tb, tc);
        }
    }
    eg->storage = EXAMPLE_STORE_PQ;
    eg->pq = t;
    eg->pq_codes = xmalloc((size_t)code_bytes);
    eg->rows = rows;
    eg->cols = cols;
    eg->pq_coded = coded;
    if (!coded) return kin_read(in, eg->pq_codes, (size_t)code_bytes, "PQ codes");
    return read_coded(in, eg, code_bytes);
}

/* ---- the writers' choice ---- */

int egs_pq_applies(int rows, int num_frames) {
    return rows <= EGS_PQ_MAX_ROWS || num_frames > 1;
}

int egs_store_input(struct egs_pq_encoder *enc, struct example *eg, const struct matrix *m,
                    int left_context, int compress) {
    if (enc && egs_pq_applies(m->rows, eg->num_frames) &&
        (compress == EGS_COMPRESS_8BIT || compress == EGS_COMPRESS_16BIT)) {
        ASSERT(enc->bits == (compress == EGS_COMPRESS_8BIT ? 8 : 16));
        if (egs_pq_encoder_store(enc, eg, m, left_context)) return -1;
        /* the multi-frame layout is the one for large corpora: its 8-bit codes go coded */
        eg->pq_coded = eg->storage == EXAMPLE_STORE_PQ && eg->pq->bits == 8 && eg->num_frames > 1;
        return 0;
    }
    return example_set_input(eg, m, left_context, compress);
}
