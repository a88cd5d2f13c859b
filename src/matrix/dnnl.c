/* dnnl: oneDNN matmul primitives for the matrix layer (contract in dnnl.h). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include "matrix/dnnl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matrix/matrix-internal.h"

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

void matrix_dnnl_to_bf16(uint16_t *dst, int ld, const struct matrix *src) {
    ASSERT(ld >= src->cols);
    int rows = src->rows, cols = src->cols;
    if (src->stride == cols && ld == cols && rows > 1) { /* contiguous: one long row */
        cols *= rows;
        rows = 1;
    }
#if HAVE_AVX512BF16_PATH
    static int fast = -1;
    if (fast < 0) fast = __builtin_cpu_supports("avx512bf16");
    if (fast) {
        for (int r = 0; r < rows; r++)
            row_to_bf16_avx512(dst + (long)r * ld, src->data + (long)r * src->stride, cols);
        return;
    }
#endif
    for (int r = 0; r < rows; r++)
        row_to_bf16(dst + (long)r * ld, src->data + (long)r * src->stride, cols);
}

void matrix_dnnl_from_bf16(struct matrix *dst, const uint16_t *src, int ld) {
    ASSERT(ld >= dst->cols);
    for (int r = 0; r < dst->rows; r++) {
        const uint16_t *s = src + (long)r * ld;
        float *d = dst->data + (long)r * dst->stride;
        for (int c = 0; c < dst->cols; c++) {
            uint32_t u = (uint32_t)s[c] << 16;
            memcpy(&d[c], &u, sizeof u);
        }
    }
}

#if HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>

/* libgomp's, which oneDNN (Debian's build uses OpenMP) reads for its thread count. */
void omp_set_num_threads(int n);

#define DNNL_CHECK(call)                                                                     \
    do {                                                                                     \
        dnnl_status_t st_ = (call);                                                          \
        if (st_ != dnnl_success) {                                                           \
            fprintf(stderr, "ERROR (%s:%d) oneDNN: %s failed with status %d\n", __FILE__,   \
                    __LINE__, #call, (int)st_);                                              \
            abort();                                                                         \
        }                                                                                    \
    } while (0)

static dnnl_engine_t engine;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;

static void engine_create(void) { DNNL_CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0)); }

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

int matrix_dnnl_bf16_check(char *isa, size_t isa_len) {
    dnnl_cpu_isa_t e = dnnl_get_effective_cpu_isa();
    if (isa && isa_len) snprintf(isa, isa_len, "%s", isa_name(e));
    if (e == dnnl_cpu_isa_avx512_core_amx || e == dnnl_cpu_isa_avx512_core_bf16) return 0;
    return error_set("this CPU has neither AMX-BF16 nor AVX512-BF16 (oneDNN's best instruction "
                     "set here: %s%s), so bf16 products would be emulated and slower than fp32",
                     isa_name(e), getenv("ONEDNN_MAX_CPU_ISA") ? ", limited by ONEDNN_MAX_CPU_ISA"
                                                              : "");
}

/* ---- per-thread primitive cache ---- */

struct gemm_key {
    int type, m, n, k, trans_a, trans_b, lda, ldb, ldc;
    float beta;
};

struct gemm_entry {
    struct gemm_key key;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c, scale, scratch;
    size_t scratch_bytes;
};

enum { CACHE_SIZE = 48 };

struct thread_cache {
    dnnl_stream_t stream;
    struct gemm_entry e[CACHE_SIZE];
    int used, next; /* entries in use; the next one to replace when full */
    void *scratch;
    size_t scratch_bytes;
    float alpha;    /* the runtime output scale's storage */
    struct thread_cache *chain;
};

static _Thread_local struct thread_cache *my_cache;
static struct thread_cache *all_caches; /* every thread's, freed at exit */
static pthread_mutex_t caches_lock = PTHREAD_MUTEX_INITIALIZER;

static void entry_release(struct gemm_entry *e) {
    dnnl_primitive_destroy(e->prim);
    dnnl_memory_destroy(e->a);
    dnnl_memory_destroy(e->b);
    dnnl_memory_destroy(e->c);
    dnnl_memory_destroy(e->scale);
    dnnl_memory_destroy(e->scratch);
    memset(e, 0, sizeof *e);
}

static void free_caches(void) {
    pthread_mutex_lock(&caches_lock);
    for (struct thread_cache *t = all_caches, *next; t; t = next) {
        next = t->chain;
        for (int i = 0; i < t->used; i++) entry_release(&t->e[i]);
        dnnl_stream_destroy(t->stream);
        free(t->scratch);
        free(t);
    }
    all_caches = NULL;
    pthread_mutex_unlock(&caches_lock);
    if (engine) dnnl_engine_destroy(engine);
    engine = NULL;
}

static struct thread_cache *cache_get(void) {
    if (my_cache) return my_cache;
    pthread_once(&engine_once, engine_create);
    omp_set_num_threads(1); /* this thread's OpenMP setting: parnet's pool does the splitting */
    struct thread_cache *t = xcalloc(1, sizeof *t);
    DNNL_CHECK(dnnl_stream_create(&t->stream, engine, dnnl_stream_default_flags));
    pthread_mutex_lock(&caches_lock);
    static int registered;
    if (!registered) {
        registered = 1;
        atexit(free_caches);
    }
    t->chain = all_caches;
    all_caches = t;
    pthread_mutex_unlock(&caches_lock);
    return my_cache = t;
}

static void desc_2d(dnnl_memory_desc_t *d, int rows, int cols, int trans, int ld,
                    dnnl_data_type_t dt) {
    /* logical rows x cols; stored row-major (ld per row) or, transposed, as cols x rows */
    dnnl_dims_t dims = {rows, cols};
    dnnl_dims_t strides = {trans ? 1 : ld, trans ? ld : 1};
    DNNL_CHECK(dnnl_memory_desc_init_by_strides(d, 2, dims, dt, strides));
}

static void entry_create(struct gemm_entry *e, const struct gemm_key *key) {
    dnnl_data_type_t dt = key->type == MATRIX_DNNL_BF16 ? dnnl_bf16 : dnnl_f32;
    dnnl_memory_desc_t ad, bd, cd, sd, scd;
    desc_2d(&ad, key->m, key->k, key->trans_a, key->lda, dt);
    desc_2d(&bd, key->k, key->n, key->trans_b, key->ldb, dt);
    desc_2d(&cd, key->m, key->n, 0, key->ldc, dnnl_f32);
    dnnl_dims_t one = {1};
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&sd, 1, one, dnnl_f32, dnnl_a));
    dnnl_matmul_desc_t md;
    DNNL_CHECK(dnnl_matmul_desc_init(&md, &ad, &bd, NULL, &cd));
    dnnl_primitive_attr_t attr;
    DNNL_CHECK(dnnl_primitive_attr_create(&attr));
    DNNL_CHECK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    const float runtime = DNNL_RUNTIME_F32_VAL;
    DNNL_CHECK(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &runtime));
    if (key->beta != 0.0f) {
        dnnl_post_ops_t po;
        DNNL_CHECK(dnnl_post_ops_create(&po));
        DNNL_CHECK(dnnl_post_ops_append_sum(po, key->beta));
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
    DNNL_CHECK(dnnl_memory_create(&e->scale, &sd, engine, DNNL_MEMORY_NONE));
    DNNL_CHECK(dnnl_memory_create(&e->scratch, &scd, engine, DNNL_MEMORY_NONE));
    dnnl_primitive_desc_destroy(pd);
    e->key = *key;
}

static struct gemm_entry *entry_get(struct thread_cache *t, const struct gemm_key *key) {
    for (int i = 0; i < t->used; i++)
        if (!memcmp(&t->e[i].key, key, sizeof *key)) return &t->e[i];
    struct gemm_entry *e;
    if (t->used < CACHE_SIZE) {
        e = &t->e[t->used++];
    } else {
        e = &t->e[t->next];
        t->next = (t->next + 1) % CACHE_SIZE;
        entry_release(e);
    }
    entry_create(e, key);
    if (e->scratch_bytes > t->scratch_bytes) {
        free(t->scratch);
        t->scratch_bytes = e->scratch_bytes;
        if (posix_memalign(&t->scratch, 64, t->scratch_bytes)) die("out of memory");
    }
    return e;
}

void matrix_dnnl_gemm(struct matrix *c, float alpha, int type, const void *a, int lda,
                      int trans_a, const void *b, int ldb, int trans_b, int k, float beta) {
    ASSERT(c->rows >= 1 && c->cols >= 1 && k >= 1);
    ASSERT(type == MATRIX_DNNL_F32 || type == MATRIX_DNNL_BF16);
    struct gemm_key key;
    memset(&key, 0, sizeof key); /* the key is compared with memcmp: no stray padding */
    key.type = type;
    key.m = c->rows;
    key.n = c->cols;
    key.k = k;
    key.trans_a = !!trans_a;
    key.trans_b = !!trans_b;
    key.lda = lda;
    key.ldb = ldb;
    key.ldc = c->stride;
    key.beta = beta;
    struct thread_cache *t = cache_get();
    struct gemm_entry *e = entry_get(t, &key);
    t->alpha = alpha;
    DNNL_CHECK(dnnl_memory_set_data_handle(e->a, (void *)a));
    DNNL_CHECK(dnnl_memory_set_data_handle(e->b, (void *)b));
    DNNL_CHECK(dnnl_memory_set_data_handle(e->c, c->data));
    DNNL_CHECK(dnnl_memory_set_data_handle(e->scale, &t->alpha));
    DNNL_CHECK(dnnl_memory_set_data_handle(e->scratch, t->scratch));
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, e->a},
                              {DNNL_ARG_WEIGHTS, e->b},
                              {DNNL_ARG_DST, e->c},
                              {DNNL_ARG_ATTR_OUTPUT_SCALES, e->scale},
                              {DNNL_ARG_SCRATCHPAD, e->scratch}};
    DNNL_CHECK(dnnl_primitive_execute(e->prim, t->stream, 5, args));
    DNNL_CHECK(dnnl_stream_wait(t->stream));
}

#else /* !HAVE_DNNL */

int matrix_dnnl_bf16_check(char *isa, size_t isa_len) {
    if (isa && isa_len) snprintf(isa, isa_len, "none");
    return error_set("parnet was built without oneDNN (install libdnnl-dev, e.g. with "
                     "tools/install-deps.sh, and rebuild)");
}

void matrix_dnnl_gemm(struct matrix *c, float alpha, int type, const void *a, int lda,
                      int trans_a, const void *b, int ldb, int trans_b, int k, float beta) {
    die("matrix_dnnl_gemm: parnet was built without oneDNN");
}

#endif
