/* Unit tests for PQ example storage (egs.h "PQ"): range tables by hand, the encoder's growth and
 * tables, the per-dimension error bound on features of scales 1e-3 .. 1e4 (where one range per
 * example destroys the small ones), the archive form (a table written once per stream, read
 * back through the table reader and the minibatch reader, shuffled and concatenated archives,
 * odd shapes, 16-bit), the writers' choice, and truncated or corrupt input; the lossless coding
 * of multi-frame examples (version 2). */
#include "egs/egs.h"
#include "egs/egs-internal.h"
#include "test.h"

#include <stdlib.h>
#include <unistd.h>

static void one_label(struct example *eg, int32_t label) {
    example_set_labels_simple(eg, 1, &label);
}

static void decode(const struct example *eg, struct matrix *m) {
    matrix_release(m);
    matrix_init_on(m, eg->rows, example_input_dim(eg), MATRIX_CPU);
    if (example_input_decode(eg, m)) ASSERT(!"decode");
}

static int same_matrix(const struct matrix *a, const struct matrix *b) {
    if (a->rows != b->rows || a->cols != b->cols) return 0;
    for (int r = 0; r < a->rows; r++)
        if (memcmp(a->data + (size_t)r * a->stride, b->data + (size_t)r * b->stride,
                   sizeof(float) * a->cols))
            return 0;
    return 1;
}

static void test_table_by_hand(void) {
    /* dim 0: [0, 255] -> min 0, step 1; dim 1: [-127, 127] spans 0 -> 254 steps of 1 with 0 at
     * code 127, min -127; dim 2: constant 2 -> step 0 */
    double lo[3] = {0, -127, 2}, hi[3] = {255, 127, 2};
    struct egs_pq_table *t = egs_pq_table_new(8, 3, lo, hi);
    CHECK(t->bits == 8 && t->cols == 3);
    CHECK(t->min[0] == 0.0f && t->step[0] == 1.0f);
    CHECK(t->min[1] == -127.0f && t->step[1] == 1.0f);
    CHECK(t->min[2] == 2.0f && t->step[2] == 0.0f);
    struct egs_pq_table *same = egs_pq_table_new(8, 3, lo, hi);
    CHECK(same->id == t->id); /* the id is the content's */
    hi[0] = 256;
    struct egs_pq_table *other = egs_pq_table_new(8, 3, lo, hi);
    CHECK(other->id != t->id);
    CHECK(egs_pq_table_ref(t) == t && atomic_load(&t->refs) == 2);
    egs_pq_table_unref(t);
    egs_pq_table_unref(t);
    egs_pq_table_unref(same);
    egs_pq_table_unref(other);
    egs_pq_table_unref(NULL);
}

static void test_encoder_growth(void) {
    struct egs_pq_encoder e;
    egs_pq_encoder_init(&e, 8);
    struct matrix m;
    matrix_init_on(&m, 1, 3, MATRIX_CPU);
    struct example a, b, c;
    example_init(&a);
    example_init(&b);
    example_init(&c);
    one_label(&a, 0);
    one_label(&b, 1);
    one_label(&c, 2);
    /* no probe: the first example's ranges are its values (step 0, exact) */
    m.data[0] = 10, m.data[1] = -3, m.data[2] = 2;
    CHECK(egs_pq_encoder_store(&e, &a, &m, 0) == 0);
    CHECK(a.storage == EXAMPLE_STORE_PQ && !strcmp(example_storage_name(&a), "pq8"));
    CHECK(e.num_tables == 1 && a.pq->step[0] == 0 && a.pq->min[0] == 10.0f);
    /* 20 leaves dim 0's range [10, 10]: it grows to [10, 20 + 1.0 * 10] in a new table; the
     * other dimensions keep theirs */
    m.data[0] = 20;
    CHECK(egs_pq_encoder_store(&e, &b, &m, 0) == 0);
    CHECK(e.num_tables == 2 && b.pq != a.pq);
    CHECK(b.pq->min[0] == 10.0f && fabsf(b.pq->step[0] - 20.0f / 255) < 1e-6f);
    CHECK(b.pq->step[1] == 0 && b.pq->min[1] == -3.0f && b.pq->min[2] == 2.0f);
    /* inside the ranges: the same table */
    m.data[0] = 29;
    CHECK(egs_pq_encoder_store(&e, &c, &m, 0) == 0);
    CHECK(e.num_tables == 2 && c.pq == b.pq && atomic_load(&b.pq->refs) == 3);
    struct matrix d = {0};
    decode(&a, &d);
    CHECK(d.data[0] == 10.0f && d.data[1] == -3.0f && d.data[2] == 2.0f); /* a keeps its table */
    decode(&b, &d);
    CHECK(fabs(d.data[0] - 20.0) <= b.pq->step[0] / 2 * 1.0001);
    CHECK(d.data[1] == -3.0f && d.data[2] == 2.0f);
    decode(&c, &d);
    /* 29: code round(19 / (20/255)) = round(242.25) = 242 -> 10 + 242 * 20/255 = 28.980 */
    CHECK_NEAR(d.data[0], 10.0 + 242 * 20.0 / 255, 1e-5);
    /* a copy shares the table */
    struct example cp;
    example_init(&cp);
    example_copy(&cp, &c);
    CHECK(cp.pq == c.pq && cp.pq_codes != c.pq_codes);
    struct matrix d2 = {0};
    decode(&c, &d);
    decode(&cp, &d2);
    CHECK(same_matrix(&d, &d2));
    /* a range spanning 0 keeps 0 exact; observing a probe sets the ranges with margins */
    egs_pq_encoder_release(&e);
    egs_pq_encoder_init(&e, 8);
    m.data[0] = -1, m.data[1] = 0, m.data[2] = 5;
    egs_pq_encoder_observe(&e, &m);
    m.data[0] = 2, m.data[1] = 3, m.data[2] = 6;
    egs_pq_encoder_observe(&e, &m);
    m.data[0] = 0, m.data[1] = 0, m.data[2] = 5.5f;
    CHECK(egs_pq_encoder_store(&e, &a, &m, 0) == 0 && e.num_tables == 1);
    decode(&a, &d);
    CHECK(d.data[0] == 0.0f); /* [-1, 2] widened by 1/4 on each side, 0 on the grid */
    CHECK(d.data[1] == 0.0f); /* [0, 3]: the side at 0 stays */
    CHECK(a.pq->min[1] == 0.0f && a.pq->min[2] < 5.0f && a.pq->min[2] >= 4.75f - 1e-5f);
    CHECK(fabs(d.data[2] - 5.5) <= a.pq->step[2] / 2 * 1.0001);
    egs_pq_encoder_release(&e);
    example_release(&a);
    example_release(&b);
    example_release(&c);
    example_release(&cp);
    matrix_release(&m);
    matrix_release(&d);
    matrix_release(&d2);
}

/* 20 dims on scales 1e-3 .. 1e4 (log-spaced), offsets of a few standard deviations. */
static void fill_scaled(struct matrix *m, struct rng *g) {
    for (int r = 0; r < m->rows; r++)
        for (int j = 0; j < m->cols; j++) {
            double scale = pow(10.0, -3.0 + 7.0 * j / (m->cols - 1));
            m->data[(size_t)r * m->stride + j] = (float)(scale * (1.5 * (j % 3) + rng_gauss(g)));
        }
}

static void test_error_bound(void) {
    enum { N = 1000, D = 20 };
    struct rng g;
    rng_seed(&g, 7);
    struct matrix rows[N];
    for (int i = 0; i < N; i++) {
        matrix_init_on(&rows[i], 1, D, MATRIX_CPU);
        fill_scaled(&rows[i], &g);
    }
    for (int bits = 8; bits <= 16; bits += 8) {
        struct egs_pq_encoder e;
        egs_pq_encoder_init(&e, bits);
        for (int i = 0; i < N / 2; i++) egs_pq_encoder_observe(&e, &rows[i]); /* a probe */
        struct egs_compress_check chk, old;
        egs_compress_check_init(&chk);
        egs_compress_check_init(&old);
        struct example eg;
        example_init(&eg);
        one_label(&eg, 0);
        struct matrix d = {0};
        int ok = 1;
        for (int i = 0; i < N && ok; i++) {
            CHECK(egs_pq_encoder_store(&e, &eg, &rows[i], 0) == 0);
            CHECK(egs_compress_check_add(&chk, &rows[i], &eg) == 0);
            decode(&eg, &d);
            for (int j = 0; j < D; j++) { /* every value within half a step of its own dim */
                double err = fabs((double)d.data[j] - rows[i].data[j]);
                /* plus float rounding of min + step * code */
                if (err > eg.pq->step[j] * 0.5001 +
                              1e-6 * (fabs(eg.pq->min[j]) + fabs(rows[i].data[j])))
                    ok = 0;
            }
            /* Kaldi's CM3: one range per example */
            CHECK(example_set_input(&eg, &rows[i], 0,
                                    bits == 8 ? EGS_COMPRESS_8BIT : EGS_COMPRESS_16BIT) == 0);
            CHECK(egs_compress_check_add(&old, &rows[i], &eg) == 0);
        }
        CHECK(ok);
        int dim, old_dim;
        double worst = egs_compress_check_worst(&chk, &dim);
        double old_worst = egs_compress_check_worst(&old, &old_dim);
        /* uniform quantisation: step / sqrt(12), step ~ 1.5 x 7 s.d. / 255 -> ~0.012 */
        CHECK(worst < (bits == 8 ? 0.03 : 1e-4));
        CHECK(old_worst > 1.0 && old_dim < 10); /* the small dims lost */
        /* the rest of the data (past the probe) rarely leaves the probe's ranges */
        CHECK(e.num_tables <= 4);
        egs_compress_check_release(&chk);
        egs_compress_check_release(&old);
        egs_pq_encoder_release(&e);
        example_release(&eg);
        matrix_release(&d);
    }
    for (int i = 0; i < N; i++) matrix_release(&rows[i]);
}

static void test_store_choice(void) {
    struct rng g;
    rng_seed(&g, 3);
    struct egs_pq_encoder e8, e16;
    egs_pq_encoder_init(&e8, 8);
    egs_pq_encoder_init(&e16, 16);
    struct example eg;
    example_init(&eg);
    static const int32_t lab[8] = {0};
    example_set_labels_simple(&eg, 1, lab);
    struct matrix m8, m9;
    matrix_init_on(&m8, 8, 5, MATRIX_CPU);
    matrix_init_on(&m9, 9, 5, MATRIX_CPU);
    fill_scaled(&m8, &g);
    fill_scaled(&m9, &g);
    CHECK(egs_store_input(&e8, &eg, &m8, 0, EGS_COMPRESS_8BIT) == 0);
    CHECK(!strcmp(example_storage_name(&eg), "pq8"));
    struct egs_pq_table *t = eg.pq;
    CHECK(example_recompress_with(&eg, EGS_COMPRESS_8BIT, &e8) == 0 && eg.pq == t); /* kept */
    CHECK(example_recompress_with(&eg, EGS_COMPRESS_16BIT, &e16) == 0);
    CHECK(!strcmp(example_storage_name(&eg), "pq16"));
    CHECK(egs_store_input(&e8, &eg, &m9, 0, EGS_COMPRESS_8BIT) == 0);
    CHECK(!strcmp(example_storage_name(&eg), "cm")); /* > 8 rows: Kaldi's CM */
    CHECK(egs_store_input(&e16, &eg, &m9, 0, EGS_COMPRESS_16BIT) == 0);
    CHECK(!strcmp(example_storage_name(&eg), "cm2"));
    CHECK(egs_store_input(&e8, &eg, &m8, 0, EGS_COMPRESS_NONE) == 0);
    CHECK(!strcmp(example_storage_name(&eg), "float"));
    CHECK(egs_store_input(NULL, &eg, &m8, 0, EGS_COMPRESS_8BIT) == 0);
    CHECK(!strcmp(example_storage_name(&eg), "cm3")); /* no encoder: one example alone */
    /* NaN is an error; a value beyond 1e30 goes to Kaldi's format */
    m8.data[3] = NAN;
    CHECK(egs_store_input(&e8, &eg, &m8, 0, EGS_COMPRESS_8BIT) == -1);
    m8.data[3] = 3e31f;
    CHECK(egs_store_input(&e8, &eg, &m8, 0, EGS_COMPRESS_8BIT) == 0);
    CHECK(!strcmp(example_storage_name(&eg), "cm3"));
    egs_pq_encoder_release(&e8);
    egs_pq_encoder_release(&e16);
    example_release(&eg);
    matrix_release(&m8);
    matrix_release(&m9);
}

/* ---- archives ---- */

enum { NA = 12 };

/* Examples 0..7: one row of 7 dims, 8-bit, tables change at 5 (growth); 8..11: 3 rows of 5 dims,
 * 16-bit (odd sizes, another table), left context 1. */
static void make_set(struct example *eg, char keys[][32], int *num_tables) {
    struct rng g;
    rng_seed(&g, 11);
    struct egs_pq_encoder e8, e16;
    egs_pq_encoder_init(&e8, 8);
    egs_pq_encoder_init(&e16, 16);
    struct matrix one, three;
    matrix_init_on(&one, 1, 7, MATRIX_CPU);
    matrix_init_on(&three, 3, 5, MATRIX_CPU);
    for (int i = 0; i < 5; i++) { /* a probe of the first five */
        fill_scaled(&one, &g);
        egs_pq_encoder_observe(&e8, &one);
    }
    rng_seed(&g, 11);
    for (int k = 0; k < NA; k++) {
        example_init(&eg[k]);
        snprintf(keys[k], 32, "utt%d-%d", k / 3, k);
        one_label(&eg[k], k % 4);
        if (k < 8) {
            fill_scaled(&one, &g);
            if (k == 5) one.data[6] *= 100; /* far outside: a new table */
            if (egs_pq_encoder_store(&e8, &eg[k], &one, 0)) ASSERT(!"store");
        } else {
            fill_scaled(&three, &g);
            if (egs_pq_encoder_store(&e16, &eg[k], &three, 1)) ASSERT(!"store");
        }
    }
    *num_tables = (int)(e8.num_tables + e16.num_tables);
    egs_pq_encoder_release(&e8);
    egs_pq_encoder_release(&e16);
    matrix_release(&one);
    matrix_release(&three);
}

static long file_size(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

/* Bytes of one example written alone (its table inline), header included. */
static size_t alone_size(const struct example *eg) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct kout out;
    kout_wrap(&out, f, "mem");
    if (io_write_header(&out, 1) || example_write(&out, 1, eg)) ASSERT(!"write");
    kout_close(&out);
    fclose(f);
    free(buf);
    return len;
}

static int write_archive(const char *spec, struct example *eg, char keys[][32], const int *order,
                         int n) {
    struct table_writer w;
    if (table_writer_open(&w, spec, &holder_example)) return -1;
    for (int i = 0; i < n; i++)
        if (table_writer_write(&w, keys[order[i]], &eg[order[i]])) return -1;
    return table_writer_close(&w);
}

/* Read spec and compare with eg[order[i]] (key and decoded input, bit for bit). */
static int read_back(const char *spec, struct example *eg, char keys[][32], const int *order,
                     int n) {
    struct table_reader r;
    if (table_reader_open(&r, spec, &holder_example)) return -1;
    struct example got;
    example_init(&got);
    struct matrix a = {0}, b = {0};
    int i = 0, rc;
    while ((rc = table_reader_next(&r, &got)) == 1) {
        const struct example *want = &eg[order[i % n]];
        decode(&got, &a);
        decode(want, &b);
        if (i >= 2 * n || strcmp(table_reader_key(&r), keys[order[i % n]]) ||
            !same_matrix(&a, &b) || got.left_context != want->left_context ||
            strcmp(example_storage_name(&got), example_storage_name(want)))
            rc = -2;
        if (rc < 0) break;
        i++;
    }
    example_release(&got);
    matrix_release(&a);
    matrix_release(&b);
    if (table_reader_close(&r) && rc == 0) rc = -1;
    return rc < 0 ? rc : i;
}

static void test_archive(void) {
    struct example eg[NA];
    char keys[NA][32];
    int tables;
    make_set(eg, keys, &tables);
    CHECK(tables >= 3 && eg[4].pq != eg[5].pq && eg[7].pq != eg[8].pq);
    char path[64], path2[64], scp[64], spec[256];
    snprintf(path, sizeof path, "/tmp/egs-pq-test-%d.ark", (int)getpid());
    snprintf(path2, sizeof path2, "/tmp/egs-pq-test-%d-b.ark", (int)getpid());
    snprintf(scp, sizeof scp, "/tmp/egs-pq-test-%d.scp", (int)getpid());
    int order[NA], reverse[NA];
    for (int k = 0; k < NA; k++) order[k] = k, reverse[k] = NA - 1 - k;
    snprintf(spec, sizeof spec, "ark,scp:%s,%s", path, scp);
    CHECK(write_archive(spec, eg, keys, order, NA) == 0);
    /* each table is inline once: the archive is the examples written alone, less the table of
     * every example but the first of each table, plus "key " per entry */
    long expect = 0;
    for (int k = 0; k < NA; k++) {
        expect += (long)strlen(keys[k]) + 1 + (long)alone_size(&eg[k]);
        int first = k == 0 || eg[k].pq != eg[k - 1].pq;
        if (!first) expect -= 8L * eg[k].cols;
    }
    CHECK(file_size(path) == expect);
    snprintf(spec, sizeof spec, "ark:%s", path);
    CHECK(read_back(spec, eg, keys, order, NA) == NA);
    snprintf(spec, sizeof spec, "scp:%s", scp); /* the scp in archive order */
    CHECK(read_back(spec, eg, keys, order, NA) == NA);
    snprintf(spec, sizeof spec, "ark,bg:%s", path);
    CHECK(read_back(spec, eg, keys, order, NA) == NA);
    /* shuffled (reversed): tables inline where first used in that order */
    snprintf(spec, sizeof spec, "ark:%s", path2);
    CHECK(write_archive(spec, eg, keys, reverse, NA) == 0);
    CHECK(read_back(spec, eg, keys, reverse, NA) == NA);
    /* two archives concatenated: tables of both in one stream */
    snprintf(spec, sizeof spec, "ark:cat %s %s |", path, path);
    CHECK(read_back(spec, eg, keys, order, NA) == 2 * NA);
    /* the minibatch reader: the 8 one-row examples, then the three-row ones */
    snprintf(spec, sizeof spec, "ark:%s", path);
    struct egs_reader *r = egs_reader_open(spec);
    CHECK(r != NULL);
    struct egs_minibatch mb;
    egs_minibatch_init(&mb);
    CHECK(egs_reader_read(r, &mb, 8, 0, 0) == 8);
    struct matrix d = {0};
    for (int k = 0; k < 8; k++) {
        decode(&eg[k], &d);
        struct matrix row = matrix_rows(&mb.input, k, 1);
        CHECK(same_matrix(&row, &d));
        CHECK(mb.label_index[k] == k % 4);
    }
    CHECK(egs_reader_read(r, &mb, 8, 1, 1) == 4 && mb.input.rows == 12 && mb.input.cols == 5);
    decode(&eg[10], &d);
    struct matrix rows10 = matrix_rows(&mb.input, 6, 3);
    CHECK(same_matrix(&rows10, &d));
    CHECK(egs_reader_read(r, &mb, 8, 0, 0) == 0);
    CHECK(egs_reader_close(r) == 0);
    egs_minibatch_release(&mb);
    /* an scp that leaves out the entry holding a table: one line naming file, key and reason */
    char cmd[256];
    snprintf(cmd, sizeof cmd, "sed 1d %s > %s.cut", scp, scp);
    CHECK(system(cmd) == 0);
    snprintf(spec, sizeof spec, "scp:%s.cut", scp);
    error_clear();
    CHECK(read_back(spec, eg, keys, order + 1, NA - 1) < 0);
    CHECK(strstr(error_get(), "key 'utt0-1'") != NULL);
    CHECK(strstr(error_get(), "refers to range table") != NULL);
    CHECK(strstr(error_get(), path) != NULL);
    CHECK(strchr(error_get(), '\n') == NULL);
    /* text mode: the decoded values */
    snprintf(spec, sizeof spec, "ark,t:%s", path2);
    CHECK(write_archive(spec, eg, keys, order, NA) == 0);
    snprintf(spec, sizeof spec, "ark:%s", path2);
    struct table_reader tr;
    CHECK(table_reader_open(&tr, spec, &holder_example) == 0);
    struct example got;
    example_init(&got);
    struct matrix a = {0};
    for (int k = 0; k < NA; k++) {
        CHECK(table_reader_next(&tr, &got) == 1 && got.storage == EXAMPLE_STORE_FLOAT);
        decode(&eg[k], &d);
        decode(&got, &a);
        for (int i = 0; i < d.rows * d.cols; i++)
            CHECK_NEAR(a.data[(i / d.cols) * a.stride + i % d.cols],
                       d.data[(i / d.cols) * d.stride + i % d.cols], 1e-6);
    }
    CHECK(table_reader_close(&tr) == 0);
    example_release(&got);
    matrix_release(&a);
    matrix_release(&d);
    remove(path);
    remove(path2);
    remove(scp);
    snprintf(cmd, sizeof cmd, "%s.cut", scp);
    remove(cmd);
    for (int k = 0; k < NA; k++) example_release(&eg[k]);
}

/* Two examples in one stream (the second refers to the first's table). */
static void two_in_stream(struct example *eg, char **buf, size_t *len) {
    FILE *f = open_memstream(buf, len);
    struct kout out;
    kout_wrap(&out, f, "mem");
    for (int k = 0; k < 2; k++)
        if (io_write_token(&out, 0, k ? "b" : "a") || io_write_header(&out, 1) ||
            example_write(&out, 1, &eg[k]))
            ASSERT(!"write");
    kout_close(&out);
    fclose(f);
}

/* Read the two entries from data[0..n) as the table reader would: 0 if both read. */
static int read_two(const void *data, size_t n) {
    if (n == 0) return 1; /* an empty archive: no entries */
    struct table_reader r;
    struct kin in;
    FILE *f = fmemopen((void *)data, n, "rb");
    kin_wrap(&in, f, "mem", (int64_t)n);
    if (table_reader_open_stream(&r, "ark:mem", &in, &holder_example)) ASSERT(!"open");
    struct example eg;
    example_init(&eg);
    int got = 0, rc;
    while ((rc = table_reader_next(&r, &eg)) == 1) got++;
    example_release(&eg);
    table_reader_close(&r);
    fclose(f);
    return rc < 0 ? -1 : got == 2 ? 0 : 1;
}

static void test_truncated_corrupt(void) {
    struct example eg[NA];
    char keys[NA][32];
    int tables;
    make_set(eg, keys, &tables);
    char *buf = NULL;
    size_t len = 0;
    two_in_stream(eg, &buf, &len);
    CHECK(read_two(buf, len) == 0);
    /* every truncation: an error with a message (or, cut at an entry boundary, one entry) */
    for (size_t n = 0; n < len; n++) {
        error_clear();
        int rc = read_two(buf, n);
        CHECK(rc != 0);
        if (rc < 0) CHECK(error_get()[0] != '\0' && strchr(error_get(), '\n') == NULL);
    }
    /* the layout: "a " "\0B" "<NnetExample> <Lab1> " ... "PQ " then 7 int32 with size bytes */
    unsigned char *pq = memmem(buf, len, "PQ ", 3);
    CHECK(pq != NULL);
    unsigned char *field = pq + 3; /* version, bits, rows, cols, id_hi, id_lo, inline */
    CHECK(field[0] == 4 && field[1] == 1 && field[6] == 8 && field[31] == 1);
    struct {
        int at, value;
        const char *msg;
    } cases[] = {
        {0, 3, "unsupported PQ version 3"},
        {1, 12, "bad PQ code width 12"},
        {2, 0, "bad PQ shape"},
        {6, 7, "bad PQ table flag 7"},
        {6, 0, "refers to range table"},
        {5, 12345, "does not match its id"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char *copy = xmalloc(len);
        memcpy(copy, buf, len);
        int32_t v = cases[c].value;
        memcpy(copy + (field - (unsigned char *)buf) + 5 * cases[c].at + 1, &v, 4);
        error_clear();
        CHECK(read_two(copy, len) == -1);
        CHECK(strstr(error_get(), cases[c].msg) != NULL);
        CHECK(strstr(error_get(), "key 'a'") != NULL);
        free(copy);
    }
    /* a negative step in the table (caught before the id) */
    char *copy = xmalloc(len);
    memcpy(copy, buf, len);
    float neg = -1.0f;
    memcpy(copy + (field - (unsigned char *)buf) + 35 + 4 * 7, &neg, 4); /* step[0] */
    CHECK(read_two(copy, len) == -1 && strstr(error_get(), "bad PQ range of dimension 0"));
    /* a table whose codes could decode past FLT_MAX / 2 (min[0] = 3e38) */
    memcpy(copy, buf, len);
    float huge = 3e38f;
    memcpy(copy + (field - (unsigned char *)buf) + 35, &huge, 4);
    CHECK(read_two(copy, len) == -1 && strstr(error_get(), "bad PQ range of dimension 0"));
    /* a damaged table byte: the id no longer matches */
    memcpy(copy, buf, len);
    copy[(field - (unsigned char *)buf) + 35 + 2] ^= 0x10;
    CHECK(read_two(copy, len) == -1 && strstr(error_get(), "does not match its id"));
    free(copy);
    free(buf);
    for (int k = 0; k < NA; k++) example_release(&eg[k]);
}

/* ---- version 2: coded codes of multi-frame examples ---- */

/* A smooth "spectrogram" of rows x cols codes (plus noise of +-noise), or uniform random codes. */
static void fill_codes(unsigned char *x, int rows, int cols, int noise, struct rng *g) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            int v = noise < 0 ? (int)rng_below(g, 256)
                              : 128 + (int)(40 * sin(0.1 * r + 0.07 * c)) +
                                    (noise ? (int)rng_below(g, 2 * noise + 1) - noise : 0);
            x[(size_t)r * cols + c] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
}

static void test_code_round_trip(void) {
    struct rng g;
    rng_seed(&g, 5);
    static const int shapes[][2] = {{1, 1}, {1, 23}, {18, 23}, {7, 1}, {3, 300}, {40, 40}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int noise = -1; noise <= 8; noise += 3) {
            int rows = shapes[s][0], cols = shapes[s][1];
            size_t n = (size_t)rows * cols;
            unsigned char *x = xmalloc(n), *y = xmalloc(n), *coded;
            fill_codes(x, rows, cols, noise, &g);
            size_t nc = egs_pq_code(x, rows, cols, &coded);
            CHECK(egs_pq_uncode(coded, nc, rows, cols, y) == 0);
            CHECK(memcmp(x, y, n) == 0);
            /* never more than 4 bytes a code (the reader's bound); smooth data well below 1 */
            CHECK(nc <= 4 * n + 8);
            if (noise >= 0 && noise <= 2 && n >= 400) CHECK(nc < n / 2);
            /* every truncation and a trailing byte are errors, never a crash */
            for (size_t k = 0; k < nc; k++) CHECK(egs_pq_uncode(coded, k, rows, cols, y) == -1);
            unsigned char *more = xmalloc(nc + 1);
            memcpy(more, coded, nc);
            more[nc] = 0;
            CHECK(egs_pq_uncode(more, nc + 1, rows, cols, y) == -1);
            /* a flipped bit: an error or other codes, within bounds (ASan watches) */
            for (size_t k = 0; k < nc; k += 7) {
                memcpy(more, coded, nc);
                more[k] ^= (unsigned char)(1u << (k % 8));
                (void)egs_pq_uncode(more, nc, rows, cols, y);
            }
            free(more);
            free(coded);
            free(x);
            free(y);
        }
}

/* Multi-frame examples: PQ whatever their rows (8-bit coded, 16-bit plain), "kaldi" CM, one-frame
 * ones of > 8 rows CM as before; the archive round trip; --frame selection. */
static void test_multi_frame(void) {
    struct rng g;
    rng_seed(&g, 9);
    struct egs_pq_encoder e8, e16;
    egs_pq_encoder_init(&e8, 8);
    egs_pq_encoder_init(&e16, 16);
    enum { N = 6, F = 8, ROWS = 18, COLS = 23 };
    struct example eg[N];
    char keys[N][32];
    int order[N];
    int32_t lab[F] = {1, 2, 3, 4, 5, 6, 7, 8};
    struct matrix m, ms[N];
    matrix_init_on(&m, ROWS, COLS, MATRIX_CPU);
    for (int k = 0; k < N; k++) { /* a probe first, as the writers do: one table */
        matrix_init_on(&ms[k], ROWS, COLS, MATRIX_CPU);
        for (int r = 0; r < ROWS; r++)
            for (int c = 0; c < COLS; c++)
                ms[k].data[(size_t)r * ms[k].stride + c] =
                    (float)(sin(0.1 * (r + k) + 0.07 * c) + 0.01 * rng_uniform(&g));
        egs_pq_encoder_observe(&e8, &ms[k]);
    }
    for (int k = 0; k < N; k++) {
        matrix_copy(&m, &ms[k]);
        matrix_release(&ms[k]);
        example_init(&eg[k]);
        example_set_labels_simple(&eg[k], F, lab);
        CHECK(egs_store_input(&e8, &eg[k], &m, 5, EGS_COMPRESS_8BIT) == 0);
        CHECK(!strcmp(example_storage_name(&eg[k]), "pq8") && eg[k].pq_coded == 1);
        snprintf(keys[k], sizeof keys[k], "u%d-%d", k, 8 * k);
        order[k] = k;
    }
    struct example other;
    example_init(&other);
    example_set_labels_simple(&other, F, lab);
    CHECK(egs_store_input(&e16, &other, &m, 5, EGS_COMPRESS_16BIT) == 0);
    CHECK(!strcmp(example_storage_name(&other), "pq16") && other.pq_coded == 0);
    CHECK(egs_store_input(&e8, &other, &m, 5, EGS_COMPRESS_KALDI) == 0);
    CHECK(!strcmp(example_storage_name(&other), "cm"));
    example_set_labels_simple(&other, 1, lab);
    CHECK(egs_store_input(&e8, &other, &m, 5, EGS_COMPRESS_8BIT) == 0);
    CHECK(!strcmp(example_storage_name(&other), "cm")); /* one frame, 18 rows: Kaldi's CM */
    struct matrix small = matrix_view(&m, 0, 4, 0, COLS);
    CHECK(egs_store_input(&e8, &other, &small, 1, EGS_COMPRESS_KALDI) == 0);
    CHECK(!strcmp(example_storage_name(&other), "cm2")); /* Kaldi: CM2 up to 8 rows */
    char path[64], spec[128];
    snprintf(path, sizeof path, "/tmp/egs-pq-test-%d-mf.ark", (int)getpid());
    snprintf(spec, sizeof spec, "ark:%s", path);
    CHECK(write_archive(spec, eg, keys, order, N) == 0);
    CHECK(read_back(spec, eg, keys, order, N) == N);
    /* coded: well under the plain codes (18 x 23 bytes each; about 160 bytes of key, tokens and
     * labels per entry) */
    CHECK(file_size(path) < (long)N * (ROWS * COLS * 3 / 4 + 160) + 8L * COLS);
    /* read back, the flag holds, so a copy writes the same bytes */
    struct table_reader r;
    CHECK(table_reader_open(&r, spec, &holder_example) == 0);
    struct example got;
    example_init(&got);
    CHECK(table_reader_next(&r, &got) == 1 && got.pq_coded == 1 && got.num_frames == F);
    /* frame 3 alone: its label, the context moved, the input untouched */
    unsigned char *codes = xmalloc((size_t)ROWS * COLS);
    memcpy(codes, got.pq_codes, (size_t)ROWS * COLS);
    CHECK(example_select_frame(&got, 3) == 1);
    CHECK(got.num_frames == 1 && got.left_context == 8 && example_right_context(&got) == 9);
    CHECK(got.label_index[0] == 4 && got.rows == ROWS);
    CHECK(memcmp(codes, got.pq_codes, (size_t)ROWS * COLS) == 0);
    free(codes);
    CHECK(table_reader_close(&r) == 0);
    example_release(&got);
    unlink(path);
    for (int k = 0; k < N; k++) example_release(&eg[k]);
    example_release(&other);
    egs_pq_encoder_release(&e8);
    egs_pq_encoder_release(&e16);
    matrix_release(&m);
}

int main(void) {
    TEST_RUN(test_table_by_hand);
    TEST_RUN(test_encoder_growth);
    TEST_RUN(test_error_bound);
    TEST_RUN(test_store_choice);
    TEST_RUN(test_archive);
    TEST_RUN(test_truncated_corrupt);
    TEST_RUN(test_code_round_trip);
    TEST_RUN(test_multi_frame);
    TEST_MAIN_END();
}
