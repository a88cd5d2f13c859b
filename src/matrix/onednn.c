/* onednn: oneDNN matmul primitives for the matrix layer (contract in onednn.h). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include "matrix/onednn.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "matrix/matrix.h"
#include "matrix/onednn-internal.h"

/* ---- bf16 conversion (no oneDNN needed) ---- */

/* Round to nearest even on the upper 16 bits; a NaN keeps a set mantissa bit (quiet). Written
 * with selects only so that the loops below vectorise. */
static inline uint16_t to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    uint32_t nan = (u >> 16) | 0x40u;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

static void row_to_bf16(uint16_t *d, const float *s, int n) {
    for (int c = 0; c < n; c++) d[c] = to_bf16(s[c]);
}

#if defined(__x86_64__) && defined(__GNUC__) && (__GNUC__ >= 10 || defined(__clang__))
#include <immintrin.h>
/* AVX512-BF16's vcvtne2ps2bf16: 32 floats a step, round to nearest even like to_bf16 (it also
 * flushes subnormal inputs to zero, which to_bf16 does not: |x| < 1.2e-38 only). */
__attribute__((target("avx512f,avx512bf16"))) static void row_to_bf16_avx512(uint16_t *d,
                                                                            const float *s,
                                                                            int n) {
    int c = 0;
    for (; c + 32 <= n; c += 32) {
        __m512bh h = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(s + c + 16), _mm512_loadu_ps(s + c));
        _mm512_storeu_si512((void *)(d + c), (__m512i)h);
    }
    row_to_bf16(d + c, s + c, n - c);
}
#define HAVE_AVX512BF16_PATH 1
#endif

/* The conversion of a kept copy also sums the squares of what it converts, which the layer's step
 * bound wants (onednn_kept_sum_sq): that pass over the operand is then free. */
static double row_to_bf16_sq(uint16_t *d, const float *s, int n) {
    double t = 0;
    for (int c = 0; c < n; c++) {
        t += (double)s[c] * s[c];
        d[c] = to_bf16(s[c]);
    }
    return t;
}

#if HAVE_AVX512BF16_PATH
/* Float sums over chunks of 2048, added up in double: a row of any length stays near double's
 * accuracy. A square past FLT_MAX makes the sum inf, as a bound may be. */
__attribute__((target("avx512f,avx512bf16"))) static double row_to_bf16_sq_avx512(uint16_t *d,
                                                                                 const float *s,
                                                                                 int n) {
    double t = 0;
    int c = 0;
    while (c + 32 <= n) {
        __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
        for (int end = c + 2048 < n ? c + 2048 : n; c + 32 <= end; c += 32) {
            __m512 lo = _mm512_loadu_ps(s + c), hi = _mm512_loadu_ps(s + c + 16);
            acc0 = _mm512_fmadd_ps(lo, lo, acc0);
            acc1 = _mm512_fmadd_ps(hi, hi, acc1);
            _mm512_storeu_si512((void *)(d + c), (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
        }
        t += _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
    }
    return t + row_to_bf16_sq(d + c, s + c, n - c);
}
#endif

/* dst = bf16(scale * src), one row (the scaled conversion of an operand not kept, below) */
static void row_to_bf16_scaled(uint16_t *d, const float *s, int n, float scale) {
    for (int c = 0; c < n; c++) d[c] = to_bf16(scale * s[c]);
}

#if HAVE_AVX512BF16_PATH
__attribute__((target("avx512f,avx512bf16"))) static void row_to_bf16_scaled_avx512(
    uint16_t *d, const float *s, int n, float scale) {
    __m512 k = _mm512_set1_ps(scale);
    int c = 0;
    for (; c + 32 <= n; c += 32) {
        __m512bh h = _mm512_cvtne2ps_pbh(_mm512_mul_ps(k, _mm512_loadu_ps(s + c + 16)),
                                         _mm512_mul_ps(k, _mm512_loadu_ps(s + c)));
        _mm512_storeu_si512((void *)(d + c), (__m512i)h);
    }
    row_to_bf16_scaled(d + c, s + c, n - c, scale);
}
#endif

static void to_bf16_scaled(uint16_t *dst, int ld, struct cpu_mat src, float scale) {
    if (scale == 1.0f) {
        onednn_to_bf16(dst, ld, src);
        return;
    }
    for (int r = 0; r < src.rows; r++) {
#if HAVE_AVX512BF16_PATH
        if (__builtin_cpu_supports("avx512bf16")) {
            row_to_bf16_scaled_avx512(dst + (long)r * ld, src.data + (long)r * src.stride,
                                      src.cols, scale);
            continue;
        }
#endif
        row_to_bf16_scaled(dst + (long)r * ld, src.data + (long)r * src.stride, src.cols, scale);
    }
}

/* dst = bf16(src), and with sum_sq the sum of src's squares (else 0). */
static double rows_to_bf16(uint16_t *dst, int ld, struct cpu_mat src, int sum_sq) {
    ASSERT(ld >= src.cols);
    int rows = src.rows, cols = src.cols;
    if (src.stride == cols && ld == cols && rows > 1) { /* contiguous: one long row */
        cols *= rows;
        rows = 1;
    }
    double t = 0;
    for (int r = 0; r < rows; r++) {
        uint16_t *d = dst + (long)r * ld;
        const float *s = src.data + (long)r * src.stride;
#if HAVE_AVX512BF16_PATH
        if (__builtin_cpu_supports("avx512bf16")) {
            if (sum_sq)
                t += row_to_bf16_sq_avx512(d, s, cols);
            else
                row_to_bf16_avx512(d, s, cols);
            continue;
        }
#endif
        if (sum_sq)
            t += row_to_bf16_sq(d, s, cols);
        else
            row_to_bf16(d, s, cols);
    }
    return t;
}

void onednn_to_bf16(uint16_t *dst, int ld, struct cpu_mat src) { rows_to_bf16(dst, ld, src, 0); }

void onednn_from_bf16(struct cpu_mat dst, const uint16_t *src, int ld) {
    ASSERT(ld >= dst.cols);
    for (int r = 0; r < dst.rows; r++) {
        const uint16_t *s = src + (long)r * ld;
        float *d = dst.data + (long)r * dst.stride;
        for (int c = 0; c < dst.cols; c++) {
            uint32_t u = (uint32_t)s[c] << 16;
            memcpy(&d[c], &u, sizeof u);
        }
    }
}

/* ---- every thread's state, freed at exit (onednn-internal.h) ---- */

#if HAVE_DNNL
static dnnl_engine_t engine;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;

static void engine_create(void) { DNNL_CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0)); }
#endif

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct registered {
    void *obj;
    void (*release)(void *);
    struct registered *next;
} *registry;

/* Every registered object, then the engine its primitives belong to. */
static void registry_free(void) {
    pthread_mutex_lock(&registry_lock);
    for (struct registered *r = registry, *next; r; r = next) {
        next = r->next;
        r->release(r->obj);
        free(r);
    }
    registry = NULL;
    pthread_mutex_unlock(&registry_lock);
#if HAVE_DNNL
    if (engine) dnnl_engine_destroy(engine);
    engine = NULL;
#endif
}

void onednn_thread_register(void *obj, void (*release)(void *obj)) {
#if HAVE_DNNL
    /* the engine first: its library's exit handlers then run after registry_free */
    pthread_once(&engine_once, engine_create);
#endif
    struct registered *r = xmalloc(sizeof *r);
    r->obj = obj;
    r->release = release;
    pthread_mutex_lock(&registry_lock);
    static int registered;
    if (!registered) {
        registered = 1;
        atexit(registry_free);
    }
    r->next = registry;
    registry = r;
    pthread_mutex_unlock(&registry_lock);
}

/* ---- the bf16 layer product: kept copies, conversion, the split ---- */

void *grow_buf_get(struct grow_buf *b, size_t bytes) {
    if (bytes > b->bytes) {
        free(b->p);
        b->bytes = bytes + bytes / 4;
        b->p = xmalloc(b->bytes);
    }
    return b->p;
}

/* The calling thread's bf16 copies: one scratch pair for operands not kept, and the kept ones,
 * looked up by address, shape and stride. A copy serves only the epoch it was made in: a layer's
 * forward that follows a backward product begins a new epoch (onednn_layer_forward), so the
 * backward products reuse what this step's forward and input derivatives converted and nothing
 * older; a product that writes over a kept copy's memory drops it (onednn_forget). */

struct kept {
    const float *data;
    int rows, cols, stride, used; /* used 0: the slot is free */
    unsigned epoch;
    double sum_sq; /* of the fp32 values converted, summed by the conversion */
    int has_row_sum; /* made with ONEDNN_STORE_SUMS: row_sum holds the sum of its rows */
    struct grow_buf buf, row_sum; /* the copy; cols doubles */
};
enum { MAX_KEPT = 64 };

/* The calling thread's buffers: on the heap and registered (onednn_thread_register), so that a
 * pool thread's copies are freed at exit however the thread ended (a _Thread_local buffer's
 * memory would be lost with its thread). */
struct thread_bufs {
    unsigned epoch;
    int backward; /* a backward product ran in this epoch */
    int next;     /* the slot to take when every one holds a copy of this epoch */
    struct grow_buf scratch_a, scratch_b;
    struct grow_buf share_copies; /* a transposed A's shares made dense (split_run) */
    struct grow_buf f32_scaled;   /* a thin fp32 operand scaled by alpha (onednn_gemm_f32) */
    struct grow_buf part_sums;    /* ONEDNN_STORE_SUMS: each part's sum of rows (doubles) */
    struct kept k[MAX_KEPT];
};

static _Thread_local struct thread_bufs *my_bufs;

static void bufs_release(void *p) {
    struct thread_bufs *t = p;
    free(t->scratch_a.p);
    free(t->scratch_b.p);
    free(t->share_copies.p);
    free(t->f32_scaled.p);
    free(t->part_sums.p);
    for (int i = 0; i < MAX_KEPT; i++) {
        free(t->k[i].buf.p);
        free(t->k[i].row_sum.p);
    }
    free(t);
}

static struct thread_bufs *bufs(void) {
    if (!my_bufs) {
        my_bufs = xcalloc(1, sizeof *my_bufs);
        onednn_thread_register(my_bufs, bufs_release);
    }
    return my_bufs;
}

void onednn_layer_forward(void) {
    struct thread_bufs *t = bufs();
    if (!t->backward) return;
    t->epoch++;
    t->backward = 0;
}

void onednn_layer_backward(void) { bufs()->backward = 1; }

/* k holds a copy of t's current epoch */
static int kept_live(const struct thread_bufs *t, const struct kept *k) {
    return k->used && k->epoch == t->epoch;
}

/* Forget kept copies whose memory c's rows overlap (c is about to be written). */
void onednn_forget(struct cpu_mat c) {
    if (c.rows < 1 || c.cols < 1) return;
    const float *lo = c.data, *hi = c.data + (long)(c.rows - 1) * c.stride + c.cols;
    struct thread_bufs *t = bufs();
    for (int i = 0; i < MAX_KEPT; i++) {
        struct kept *k = &t->k[i];
        if (!kept_live(t, k)) continue;
        const float *klo = k->data, *khi = k->data + (long)(k->rows - 1) * k->stride + k->cols;
        if (klo < hi && lo < khi) k->used = 0;
    }
}

static int kept_is(const struct thread_bufs *t, const struct kept *k, struct cpu_mat m) {
    return kept_live(t, k) && k->data == m.data && k->rows == m.rows && k->cols == m.cols &&
           k->stride == m.stride;
}

/* This epoch's copy of m, or NULL. */
static struct kept *kept_find(struct cpu_mat m) {
    struct thread_bufs *t = bufs();
    for (int i = 0; i < MAX_KEPT; i++)
        if (kept_is(t, &t->k[i], m)) return &t->k[i];
    return NULL;
}

/* The slot for a new copy of m: its old one, a free (or older epoch's) one, else the next in
 * turn but not the one holding `avoid` (the other operand's copy): a copy dropped early costs a
 * conversion, never a wrong result. */
static struct kept *kept_slot(struct cpu_mat m, const void *avoid) {
    struct thread_bufs *t = bufs();
    struct kept *k = kept_find(m);
    for (int i = 0; !k && i < MAX_KEPT; i++)
        if (!kept_live(t, &t->k[i])) k = &t->k[i];
    while (!k || (k->buf.p && k->buf.p == avoid && !kept_is(t, k, m))) {
        k = &t->k[t->next];
        t->next = (t->next + 1) % MAX_KEPT;
    }
    k->data = m.data;
    k->rows = m.rows;
    k->cols = m.cols;
    k->stride = m.stride;
    k->used = 1;
    k->epoch = t->epoch;
    k->has_row_sum = 0;
    return k;
}

/* The conversion of one operand of a bf16 layer product. */
struct bf16_operand {
    struct cpu_mat m;  /* as stored (before op) */
    uint16_t *copy;    /* contiguous: ld = m.cols */
    int convert;       /* whether it still has to be made */
    float scale;       /* what the conversion multiplies by (alpha folded in, or 1) */
    struct kept *kept; /* the kept copy being made (NULL: scratch, or reused) */
    double sq[PARALLEL_MAX_THREADS]; /* a kept copy's parts' sums of squares */
    double *part_sums; /* ONEDNN_STORE_SUMS: part t's sum of rows at t * cols; else NULL */
    int parts;         /* the parts the conversion ran in */
};

static struct cpu_mat sub(struct cpu_mat m, int r0, int rows, int c0, int cols) {
    struct cpu_mat v = {m.data + (long)r0 * m.stride + c0, rows, cols, m.stride};
    return v;
}

/* A kept copy's conversion that also sums its rows into sums (cols doubles, zeroed here): each
 * row is added while the conversion has just brought it into the cache, so the bias gradient's
 * pass over dY (vector_add_row_sums) is not needed. Returns the sum of squares. */
static double rows_to_bf16_row_sums(uint16_t *dst, struct cpu_mat src, double *sums) {
    int cols = src.cols;
    memset(sums, 0, (size_t)cols * sizeof *sums);
    double t = 0;
    for (int r = 0; r < src.rows; r++) {
        const float *s = src.data + (long)r * src.stride;
        t += rows_to_bf16(dst + (long)r * cols, cols, sub(src, r, 1, 0, cols), 1);
        for (int c = 0; c < cols; c++) sums[c] += s[c];
    }
    return t;
}

/* Part t of num of an operand's conversion, by rows. */
static void convert_rows(struct bf16_operand *o, int t, int num) {
    int r0, r1;
    parallel_part(o->m.rows, t, num, 1, &r0, &r1);
    o->sq[t] = 0;
    if (!t) o->parts = num;
    if (!o->convert) return;
    double *sums = o->part_sums ? o->part_sums + (long)t * o->m.cols : NULL;
    if (r1 <= r0) {
        if (sums) memset(sums, 0, (size_t)o->m.cols * sizeof *sums);
        return;
    }
    struct cpu_mat part = sub(o->m, r0, r1 - r0, 0, o->m.cols);
    uint16_t *d = o->copy + (long)r0 * o->m.cols;
    if (sums)
        o->sq[t] = rows_to_bf16_row_sums(d, part, sums);
    else if (o->kept)
        o->sq[t] = rows_to_bf16(d, o->m.cols, part, 1);
    else
        to_bf16_scaled(d, o->m.cols, part, o->scale);
}

/* Both operands' conversions (a struct bf16_operand[2]), each split by rows over the pool. */
static void convert_part(void *p, int t, int num) {
    struct bf16_operand *ops = p;
    convert_rows(&ops[0], t, num);
    convert_rows(&ops[1], t, num);
}

/* A kept copy's sum of squares and sum of rows: its parts' sums, in order (the same totals
 * whatever the threads that made it, given the same parts). */
static void kept_sum(const struct bf16_operand *o) {
    if (!o->kept || !o->convert) return;
    o->kept->sum_sq = 0;
    for (int t = 0; t < o->parts; t++) o->kept->sum_sq += o->sq[t];
    if (!o->part_sums) return;
    int cols = o->m.cols;
    double *sums = grow_buf_get(&o->kept->row_sum, (size_t)cols * sizeof *sums);
    memcpy(sums, o->part_sums, (size_t)cols * sizeof *sums);
    for (int t = 1; t < o->parts; t++)
        for (int c = 0; c < cols; c++) sums[c] += o->part_sums[(long)t * cols + c];
    o->kept->has_row_sum = 1;
}

int onednn_kept_sum_sq(struct cpu_mat m, double *sum_sq) {
    const struct kept *k = kept_find(m);
    if (k) *sum_sq = k->sum_sq;
    return k != NULL;
}

const double *onednn_kept_row_sums(struct cpu_mat m) {
    const struct kept *k = kept_find(m);
    return k && k->has_row_sum ? k->row_sum.p : NULL;
}

enum { BF16_SPLIT_ALIGN = 32 };

/* onednn_gemm_raw with an epilogue (NULL: none); below. */
static void gemm_run(struct cpu_mat c, float alpha, int type, const void *a, int lda, int trans_a,
                     const void *b, int ldb, int trans_b, int k,
                     const struct onednn_epilogue *ep, float beta);

static size_t type_size(int type) {
    return type == ONEDNN_TYPE_BF16 ? sizeof(uint16_t) : sizeof(float);
}

/* A product on operands already in their engine type, to be split over the pool. */
struct split_job {
    struct cpu_mat c;
    float alpha, beta;
    int type; /* enum onednn_type of a and b */
    const void *a, *b;
    int lda, ldb, trans_a, trans_b, k;
    const struct onednn_epilogue *ep; /* NULL: none */
    char *a_dense; /* a transposed A split over the pool: room for its shares' dense copies */
};

/* Share t of num: rows of C. oneDNN 2.6 runs its AMX (and AVX-512 brgemm) kernels only on dense
 * operands, so shares are by rows (a share by columns would have a C whose rows are longer than
 * its own: gemm:jit, measured 2-6x slower at these shapes), and a transposed A (the weight
 * gradient's dY^T), whose share is then a column slice, is copied dense first: K x m elements,
 * against the share's 2 K m n operations. A C of fewer than 64 rows (the 10-class layer's weight
 * gradient) is not split: one dense product on one thread was faster than two strided ones. */
static void split_part(void *p, int t, int num) {
    const struct split_job *j = p;
    int lo, hi;
    parallel_part(j->c.rows, t, num, BF16_SPLIT_ALIGN, &lo, &hi);
    if (lo >= hi) return;
    size_t es = type_size(j->type);
    const char *a = j->a;
    int lda = j->lda;
    if (!j->trans_a) {
        a += (size_t)lo * lda * es;
    } else if (hi - lo < j->c.rows) { /* (the whole of A is as dense as it is stored) */
        int m = hi - lo;
        char *d = j->a_dense + (size_t)j->k * lo * es; /* this share's K x m, dense */
        for (int r = 0; r < j->k; r++)
            memcpy(d + (size_t)r * m * es, a + ((size_t)r * lda + lo) * es, (size_t)m * es);
        a = d;
        lda = m;
    }
    gemm_run(sub(j->c, lo, hi - lo, 0, j->c.cols), j->alpha, j->type, a, lda, j->trans_a, j->b,
             j->ldb, j->trans_b, j->k, j->ep, j->beta);
}

static void split_run(struct split_job *j) {
    if (j->c.rows < 2 * BF16_SPLIT_ALIGN) {
        split_part(j, 0, 1);
        return;
    }
    if (j->trans_a)
        j->a_dense = grow_buf_get(&bufs()->share_copies, (size_t)j->k * j->c.rows * type_size(j->type));
    parallel_run(split_part, j);
}

void onednn_gemm_split(struct cpu_mat c, float alpha, int type, const void *a, int lda,
                       int trans_a, const void *b, int ldb, int trans_b, int k, float beta) {
    ASSERT(c.rows >= 1 && c.cols >= 1 && k >= 1);
    struct split_job j = {c, alpha, beta, type, a, b, lda, ldb, trans_a, trans_b, k, NULL, NULL};
    split_run(&j);
}

/* onednn_gemm_parts_f32: C cut into fixed parts, one product each, shared out over the pool. */
struct parts_job {
    struct cpu_mat c, a, b;
    float alpha, beta;
    int trans_a, trans_b, k, by_rows, part;
};

static void parts_share(void *p, int t, int num) {
    const struct parts_job *j = p;
    int len = j->by_rows ? j->c.rows : j->c.cols, parts = (len + j->part - 1) / j->part, lo, hi;
    parallel_part(parts, t, num, 1, &lo, &hi);
    for (int q = lo; q < hi; q++) {
        int r0 = q * j->part, n = len - r0 < j->part ? len - r0 : j->part;
        const float *a = j->a.data, *b = j->b.data;
        struct cpu_mat c;
        if (j->by_rows) { /* rows r0.. of C are those of op(A) */
            c = sub(j->c, r0, n, 0, j->c.cols);
            a += j->trans_a ? r0 : (long)r0 * j->a.stride;
        } else { /* columns r0.. of C are those of op(B) */
            c = sub(j->c, 0, j->c.rows, r0, n);
            b += j->trans_b ? (long)r0 * j->b.stride : r0;
        }
        gemm_run(c, j->alpha, ONEDNN_TYPE_F32, a, j->a.stride, j->trans_a, b, j->b.stride,
                 j->trans_b, j->k, NULL, j->beta);
    }
}

void onednn_gemm_parts_f32(struct cpu_mat c, float alpha, struct cpu_mat a, int trans_a,
                           struct cpu_mat b, int trans_b, float beta, int part) {
    int k = trans_a ? a.rows : a.cols;
    ASSERT(c.rows >= 1 && c.cols >= 1 && k >= 1 && part >= 1);
    onednn_forget(c);
    /* A part of C's columns is a product whose C rows are longer than its own; oneDNN runs those
     * at natural gradient's shapes (J = H^T X) 14-45% faster in parts 4x as wide. */
    int by_rows = c.rows >= c.cols, len = by_rows ? c.rows : c.cols;
    struct parts_job j = {c, a, b, alpha, beta, trans_a, trans_b, k, by_rows,
                          by_rows ? part : 4 * part};
    if (len > j.part)
        parallel_run(parts_share, &j);
    else
        parts_share(&j, 0, 1);
}

struct scale_job {
    struct cpu_mat dst, src;
    float alpha;
};

static void scale_part(void *p, int t, int num) {
    const struct scale_job *j = p;
    int r0, r1;
    parallel_part(j->src.rows, t, num, 1, &r0, &r1);
    for (int r = r0; r < r1; r++) {
        const float *s = j->src.data + (long)r * j->src.stride;
        float *d = j->dst.data + (long)r * j->dst.stride;
        for (int i = 0; i < j->src.cols; i++)
            d[i] = j->alpha * s[i];
    }
}

/* m scaled by alpha into the calling thread's scratch, dense (ld = m.cols); split by rows over
 * the pool (a weight gradient's operand: 1-2 MB, a serial pass of 2% of a 2-thread step). */
static struct cpu_mat scaled_copy(struct cpu_mat m, float alpha) {
    float *p = grow_buf_get(&bufs()->f32_scaled, (size_t)m.rows * m.cols * sizeof(float));
    struct cpu_mat d = {p, m.rows, m.cols, m.cols};
    struct scale_job j = {d, m, alpha};
    if ((long)m.rows * m.cols >= CPU_SPLIT_MIN_ELEMS)
        parallel_run(scale_part, &j);
    else
        scale_part(&j, 0, 1);
    return d;
}

void onednn_gemm_f32(struct cpu_mat c, float alpha, struct cpu_mat a, int trans_a,
                     struct cpu_mat b, int trans_b, const struct onednn_epilogue *ep, float beta) {
    int k = trans_a ? a.rows : a.cols;
    ASSERT(c.rows >= 1 && c.cols >= 1 && k >= 1);
    onednn_forget(c);
    /* alpha (a learning rate, or natural gradient's scale, new every call) goes into a scaled
     * copy of the smaller operand, which is thin here (a side or the sum is under 32 long):
     * oneDNN 2.6 gives a run-time alpha a scalar pass over C, and a constant one a primitive per
     * value. */
    if (alpha != 1.0f) {
        if ((long)a.rows * a.cols <= (long)b.rows * b.cols)
            a = scaled_copy(a, alpha);
        else
            b = scaled_copy(b, alpha);
        alpha = 1.0f;
    }
    struct split_job j = {c, alpha, beta, ONEDNN_TYPE_F32, a.data, b.data, a.stride, b.stride,
                          trans_a, trans_b, k, ep, NULL};
    split_run(&j);
}

/* Room for every part's sum of the rows of m (ONEDNN_STORE_SUMS). */
static double *part_sums(struct thread_bufs *t, struct cpu_mat m) {
    return grow_buf_get(&t->part_sums, (size_t)parallel_threads() * m.cols * sizeof(double));
}

/* The bf16 copy of m for a product (keep: enum onednn_keep): this epoch's kept copy, a new kept
 * one, or scratch; *convert says whether it still has to be made. */
static uint16_t *operand(struct cpu_mat m, int keep, struct grow_buf *scratch, const void *avoid,
                         int *convert, struct kept **made) {
    size_t n = (size_t)m.rows * m.cols;
    *convert = 1;
    *made = NULL;
    if (keep == ONEDNN_REUSE) {
        struct kept *k = kept_find(m);
        if (k) {
            *convert = 0;
            return k->buf.p;
        }
    } else if (keep == ONEDNN_STORE || keep == ONEDNN_STORE_SUMS) {
        *made = kept_slot(m, avoid);
        return grow_buf_get(&(*made)->buf, n * sizeof(uint16_t));
    }
    return grow_buf_get(scratch, n * sizeof(uint16_t));
}

void onednn_keep(struct cpu_mat m, int keep) {
    ASSERT(keep == ONEDNN_STORE || keep == ONEDNN_STORE_SUMS);
    if (m.rows < 1 || m.cols < 1) return;
    struct bf16_operand op[2] = {{.m = m, .scale = 1.0f}, {.m = m}}; /* the second: nothing */
    struct thread_bufs *t = bufs();
    op[0].copy = operand(m, keep, &t->scratch_a, NULL, &op[0].convert, &op[0].kept);
    if (keep == ONEDNN_STORE_SUMS) op[0].part_sums = part_sums(t, m);
    parallel_run(convert_part, op);
    kept_sum(&op[0]);
}

void onednn_gemm(struct cpu_mat c, float alpha, struct cpu_mat a, int trans_a, int keep_a,
                 struct cpu_mat b, int trans_b, int keep_b, const struct onednn_epilogue *ep,
                 float beta) {
    int k = trans_a ? a.rows : a.cols;
    ASSERT(c.rows >= 1 && c.cols >= 1 && k >= 1);
    struct bf16_operand op[2] = {{.m = a, .scale = 1.0f}, {.m = b, .scale = 1.0f}};
    onednn_forget(c);
    struct thread_bufs *t = bufs();
    op[0].copy = operand(a, keep_a, &t->scratch_a, NULL, &op[0].convert, &op[0].kept);
    op[1].copy = operand(b, keep_b, &t->scratch_b, op[0].copy, &op[1].convert, &op[1].kept);
    ASSERT(keep_b != ONEDNN_STORE_SUMS);
    if (keep_a == ONEDNN_STORE_SUMS) op[0].part_sums = part_sums(t, a);
    /* alpha is a constant of a oneDNN primitive (below): one that changes every call (natural
     * gradient's scale) goes into the conversion of an operand made for this call only, the
     * smaller one, so the primitive stays cached. A kept copy is never scaled. */
    if (alpha != 1.0f) {
        int fold_a = op[0].convert && !op[0].kept;
        int fold_b = op[1].convert && !op[1].kept;
        if (fold_a && fold_b) fold_b = (long)b.rows * b.cols < (long)a.rows * a.cols;
        if (fold_b) fold_a = 0;
        if (fold_a) op[0].scale = alpha;
        if (fold_b) op[1].scale = alpha;
        if (fold_a || fold_b) alpha = 1.0f;
    }
    if (op[0].convert || op[1].convert) parallel_run(convert_part, op);
    kept_sum(&op[0]);
    kept_sum(&op[1]);
    struct split_job sj = {c, alpha, beta, ONEDNN_TYPE_BF16, op[0].copy, op[1].copy, a.cols,
                           b.cols, trans_a, trans_b, k, ep, NULL};
    split_run(&sj);
}

#if HAVE_DNNL

/* libgomp's, which oneDNN (Debian's build uses OpenMP) reads for its thread count. */
void omp_set_num_threads(int n);


static const char *isa_name(dnnl_cpu_isa_t isa) {
    switch (isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "unknown";
    }
}

int onednn_bf16_check(char *isa, size_t isa_len) {
    dnnl_cpu_isa_t e = dnnl_get_effective_cpu_isa();
    if (isa && isa_len) snprintf(isa, isa_len, "%s", isa_name(e));
    if (e == dnnl_cpu_isa_avx512_core_amx || e == dnnl_cpu_isa_avx512_core_bf16) return 0;
    return error_set("this CPU has neither AMX-BF16 nor AVX512-BF16 (oneDNN's best instruction "
                     "set here: %s%s), so bf16 products would be emulated and slower than fp32",
                     isa_name(e), getenv("ONEDNN_MAX_CPU_ISA") ? ", limited by ONEDNN_MAX_CPU_ISA"
                                                              : "");
}

int onednn_has_avx512(void) {
    dnnl_cpu_isa_t e = dnnl_get_effective_cpu_isa();
    return e == dnnl_cpu_isa_avx512_core || e == dnnl_cpu_isa_avx512_core_vnni ||
           e == dnnl_cpu_isa_avx512_core_bf16 || e == dnnl_cpu_isa_avx512_core_amx;
}

/* ---- per-thread primitive cache ---- */

/* alpha and beta are constants of the primitive: oneDNN 2.6 runs a runtime output scale on its
 * AVX512 gemm:jit kernels with a scalar post-pass (measured: 36% of a bf16 training step), a
 * constant one (or none, alpha 1) on the AMX brgemm kernels. A product's alpha is 1 or a
 * component's learning rate, so a handful of entries per shape. */
struct gemm_key {
    int type, m, n, k, trans_a, trans_b, lda, ldb, ldc;
    int bias;          /* 1: a bias row (1 x n fp32) is added */
    int relu;          /* 1: then max(0, .) (an eltwise post-op) */
    float alpha, beta;
};

struct gemm_entry {
    struct gemm_key key;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c, bias, scratch;
    size_t scratch_bytes;
};

enum { CACHE_SIZE = 48 };

struct thread_cache {
    dnnl_stream_t stream;
    struct gemm_entry e[CACHE_SIZE];
    int used, next; /* entries in use; the next one to replace when full (onednn_cache_slot) */
    void *scratch;
    size_t scratch_bytes;
};

static _Thread_local struct thread_cache *my_cache;
static pthread_mutex_t caches_lock = PTHREAD_MUTEX_INITIALIZER; /* primitives_created */

static void entry_release(struct gemm_entry *e) {
    dnnl_primitive_destroy(e->prim);
    dnnl_memory_destroy(e->a);
    dnnl_memory_destroy(e->b);
    dnnl_memory_destroy(e->c);
    if (e->bias) dnnl_memory_destroy(e->bias);
    dnnl_memory_destroy(e->scratch);
    memset(e, 0, sizeof *e);
}

static void cache_release(void *p) {
    struct thread_cache *t = p;
    for (int i = 0; i < t->used; i++) entry_release(&t->e[i]);
    dnnl_stream_destroy(t->stream);
    free(t->scratch);
    free(t);
}

static struct thread_cache *cache_get(void) {
    if (my_cache) return my_cache;
    pthread_once(&engine_once, engine_create);
    omp_set_num_threads(1); /* this thread's OpenMP setting: parnet's pool does the splitting */
    struct thread_cache *t = xcalloc(1, sizeof *t);
    DNNL_CHECK(dnnl_stream_create(&t->stream, engine, dnnl_stream_default_flags));
    onednn_thread_register(t, cache_release);
    return my_cache = t;
}

static void desc_2d(dnnl_memory_desc_t *d, int rows, int cols, int trans, int ld,
                    dnnl_data_type_t dt) {
    /* logical rows x cols; stored row-major (ld per row) or, transposed, as cols x rows */
    dnnl_dims_t dims = {rows, cols};
    dnnl_dims_t strides = {trans ? 1 : ld, trans ? ld : 1};
    DNNL_CHECK(dnnl_memory_desc_init_by_strides(d, 2, dims, dt, strides));
}

static long primitives_created; /* under caches_lock */

long onednn_primitives_created(void) {
    pthread_mutex_lock(&caches_lock);
    long n = primitives_created;
    pthread_mutex_unlock(&caches_lock);
    return n;
}

static void entry_create(struct gemm_entry *e, const struct gemm_key *key) {
    pthread_mutex_lock(&caches_lock);
    primitives_created++;
    pthread_mutex_unlock(&caches_lock);
    dnnl_data_type_t dt = key->type == ONEDNN_TYPE_BF16 ? dnnl_bf16 : dnnl_f32;
    dnnl_memory_desc_t ad, bd, cd, scd;
    desc_2d(&ad, key->m, key->k, key->trans_a, key->lda, dt);
    desc_2d(&bd, key->k, key->n, key->trans_b, key->ldb, dt);
    desc_2d(&cd, key->m, key->n, 0, key->ldc, dnnl_f32);
    dnnl_memory_desc_t biasd;
    dnnl_dims_t bias_dims = {1, key->n};
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&biasd, 2, bias_dims, dnnl_f32, dnnl_ab));
    dnnl_matmul_desc_t md;
    DNNL_CHECK(dnnl_matmul_desc_init(&md, &ad, &bd, key->bias ? &biasd : NULL, &cd));
    dnnl_primitive_attr_t attr;
    DNNL_CHECK(dnnl_primitive_attr_create(&attr));
    DNNL_CHECK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    if (key->alpha != 1.0f)
        DNNL_CHECK(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &key->alpha));
    if (key->beta != 0.0f || key->relu) {
        dnnl_post_ops_t po;
        DNNL_CHECK(dnnl_post_ops_create(&po));
        if (key->beta != 0.0f) DNNL_CHECK(dnnl_post_ops_append_sum(po, key->beta));
        if (key->relu) DNNL_CHECK(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0, 0));
        DNNL_CHECK(dnnl_primitive_attr_set_post_ops(attr, po));
        dnnl_post_ops_destroy(po);
    }
    dnnl_primitive_desc_t pd;
    DNNL_CHECK(dnnl_primitive_desc_create(&pd, &md, attr, engine, NULL));
    dnnl_primitive_attr_destroy(attr);
    DNNL_CHECK(dnnl_primitive_create(&e->prim, pd));
    scd = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    e->scratch_bytes = dnnl_memory_desc_get_size(&scd);
    DNNL_CHECK(dnnl_memory_create(&e->a, &ad, engine, DNNL_MEMORY_NONE));
    DNNL_CHECK(dnnl_memory_create(&e->b, &bd, engine, DNNL_MEMORY_NONE));
    DNNL_CHECK(dnnl_memory_create(&e->c, &cd, engine, DNNL_MEMORY_NONE));
    if (key->bias) DNNL_CHECK(dnnl_memory_create(&e->bias, &biasd, engine, DNNL_MEMORY_NONE));
    DNNL_CHECK(dnnl_memory_create(&e->scratch, &scd, engine, DNNL_MEMORY_NONE));
    dnnl_primitive_desc_destroy(pd);
    e->key = *key;
}

static struct gemm_entry *entry_get(struct thread_cache *t, const struct gemm_key *key) {
    for (int i = 0; i < t->used; i++)
        if (!memcmp(&t->e[i].key, key, sizeof *key)) return &t->e[i];
    int evict;
    struct gemm_entry *e = &t->e[onednn_cache_slot(&t->used, &t->next, CACHE_SIZE, &evict)];
    if (evict) entry_release(e);
    entry_create(e, key);
    if (e->scratch_bytes > t->scratch_bytes) {
        free(t->scratch);
        t->scratch_bytes = e->scratch_bytes;
        if (posix_memalign(&t->scratch, 64, t->scratch_bytes)) die("out of memory");
    }
    return e;
}

static void gemm_run(struct cpu_mat c, float alpha, int type, const void *a, int lda, int trans_a,
                     const void *b, int ldb, int trans_b, int k,
                     const struct onednn_epilogue *ep, float beta) {
    ASSERT(c.rows >= 1 && c.cols >= 1 && k >= 1);
    const float *bias = ep ? ep->bias : NULL;
    ASSERT(type == ONEDNN_TYPE_F32 || type == ONEDNN_TYPE_BF16);
    struct gemm_key key;
    memset(&key, 0, sizeof key); /* the key is compared with memcmp: no stray padding */
    key.type = type;
    key.m = c.rows;
    key.n = c.cols;
    key.k = k;
    key.trans_a = !!trans_a;
    key.trans_b = !!trans_b;
    key.lda = lda;
    key.ldb = ldb;
    key.ldc = c.stride;
    key.bias = bias != NULL;
    key.relu = ep && ep->relu;
    key.alpha = alpha;
    key.beta = beta;
    struct thread_cache *t = cache_get();
    struct gemm_entry *e = entry_get(t, &key);
    DNNL_CHECK(dnnl_memory_set_data_handle(e->a, (void *)a));
    DNNL_CHECK(dnnl_memory_set_data_handle(e->b, (void *)b));
    DNNL_CHECK(dnnl_memory_set_data_handle(e->c, c.data));
    DNNL_CHECK(dnnl_memory_set_data_handle(e->scratch, t->scratch));
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, e->a},
                              {DNNL_ARG_WEIGHTS, e->b},
                              {DNNL_ARG_DST, e->c},
                              {DNNL_ARG_SCRATCHPAD, e->scratch},
                              {0, NULL},
                              {0, NULL}};
    int nargs = 4;
    if (bias) {
        DNNL_CHECK(dnnl_memory_set_data_handle(e->bias, (void *)bias));
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, e->bias};
    }
    DNNL_CHECK(dnnl_primitive_execute(e->prim, t->stream, nargs, args));
    DNNL_CHECK(dnnl_stream_wait(t->stream));
}

void *onednn_engine_handle(void) {
    cache_get();
    return engine;
}

void *onednn_stream_handle(void) { return cache_get()->stream; }

void onednn_gemm_raw(struct cpu_mat c, float alpha, int type, const void *a, int lda, int trans_a,
                     const void *b, int ldb, int trans_b, int k, float beta) {
    gemm_run(c, alpha, type, a, lda, trans_a, b, ldb, trans_b, k, NULL, beta);
}

#else /* !HAVE_DNNL */

long onednn_primitives_created(void) { return 0; }

int onednn_has_avx512(void) { return 0; }

int onednn_bf16_check(char *isa, size_t isa_len) {
    if (isa && isa_len) snprintf(isa, isa_len, "none");
    return error_set("parnet was built without oneDNN (install libdnnl-dev, e.g. with "
                     "tools/install-deps.sh, and rebuild)");
}

void onednn_gemm_raw(struct cpu_mat c, float alpha, int type, const void *a, int lda, int trans_a,
                   const void *b, int ldb, int trans_b, int k, float beta) {
    die("onednn_gemm_raw: parnet was built without oneDNN");
}

static void gemm_run(struct cpu_mat c, float alpha, int type, const void *a, int lda, int trans_a,
                     const void *b, int ldb, int trans_b, int k,
                     const struct onednn_epilogue *ep, float beta) {
    die("onednn: parnet was built without oneDNN");
}

#endif
