/* Unit tests for egs: the Kaldi NnetExample layout (a hand-assembled fixture), round trips in
 * every storage and text mode, quantization error bounds, context cutting, minibatches, and
 * truncated or corrupt input. */
#include "egs/egs.h"
#include "bytes.h"
#include "test.h"

#include <stdlib.h>
#include <unistd.h>

/* ---- memory streams ---- */

struct membuf {
    char *data;
    size_t size;
};

static int write_example_mem(const struct example *eg, int binary, struct membuf *mb) {
    mb->data = NULL;
    mb->size = 0;
    FILE *f = open_memstream(&mb->data, &mb->size);
    struct kout out;
    memset(&out, 0, sizeof out);
    kout_wrap(&out, f, "mem");
    int rc = io_write_header(&out, binary) || example_write(&out, binary, eg);
    if (kout_close(&out)) rc = -1;
    fclose(f);
    return rc ? -1 : 0;
}

static int read_example_mem(const void *data, size_t size, struct example *eg) {
    FILE *f = fmemopen((void *)data, size, "rb");
    struct kin in;
    memset(&in, 0, sizeof in);
    kin_wrap(&in, f, "mem", (int64_t)size);
    int binary, rc = io_read_header(&in, &binary);
    if (!rc) rc = example_read(&in, binary, eg);
    kin_close(&in);
    fclose(f);
    return rc;
}

/* One NnetExample as Kaldi's nnet-get-egs writes it: 3 labelled frames (pdfs 5 7 9) with left
 * context 1, right context 1, so 5 input rows of 2 columns in a CM CompressedMatrix. */
static void kaldi_fixture(struct bytes *s) {
    s->n = 0;
    put(s, "\0B", 2);
    put_str(s, "<NnetExample> <Lab1> ");
    put(s, "\x04", 1); /* WriteIntegerVector: size byte, then the raw count */
    put_raw_i32(s, 3);
    put_raw_i32(s, 5);
    put_raw_i32(s, 7);
    put_raw_i32(s, 9);
    put_str(s, "<InputFrames> CM ");
    put_f(s, -1.0f); /* min */
    put_f(s, 2.0f);  /* range */
    put_raw_i32(s, 5);    /* rows */
    put_raw_i32(s, 2);    /* cols */
    /* per-column (p0, p25, p75, p100) */
    put_u16(s, 0), put_u16(s, 16384), put_u16(s, 49151), put_u16(s, 65535);
    put_u16(s, 32768), put_u16(s, 40000), put_u16(s, 50000), put_u16(s, 60000);
    static const unsigned char col0[5] = {0, 64, 128, 192, 255}, col1[5] = {255, 192, 128, 64, 0};
    put(s, col0, 5);
    put(s, col1, 5);
    put_str(s, "<LeftContext> ");
    put_i32(s, 1);
    put_str(s, "<SpkInfo> FV ");
    put_i32(s, 0);
    put_str(s, "</NnetExample> ");
}

static float u16f(uint16_t u) { return -1.0f + 2.0f * (float)u / 65535.0f; }

static void test_kaldi_fixture(void) {
    struct bytes s;
    kaldi_fixture(&s);
    struct example eg;
    example_init(&eg);
    CHECK(read_example_mem(s.b, s.n, &eg) == 0);
    CHECK(eg.num_frames == 3 && eg.left_context == 1 && example_right_context(&eg) == 1);
    CHECK(eg.rows == 5 && eg.cols == 2 && eg.spk_dim == 0);
    CHECK(eg.storage == EXAMPLE_STORE_CM && eg.cm.format == CM_FORMAT_CM);
    CHECK(!strcmp(example_storage_name(&eg), "cm"));
    CHECK(example_num_labels(&eg) == 3);
    for (int t = 0; t < 3; t++) {
        CHECK(eg.label_start[t + 1] - eg.label_start[t] == 1);
        CHECK(eg.label_index[t] == 5 + 2 * t && eg.label_weight[t] == 1.0f);
    }
    struct matrix m;
    matrix_init_on(&m, 5, 2, MATRIX_CPU);
    CHECK(example_input_decode(&eg, &m) == 0);
    /* column 0: bytes 0, 64, 128, 192, 255 are p0, p25, mid(p25, p75), p75, p100 */
    float p0 = u16f(0), p25 = u16f(16384), p75 = u16f(49151), p100 = u16f(65535);
    CHECK_NEAR(m.data[0 * m.stride], p0, 1e-6);
    CHECK_NEAR(m.data[1 * m.stride], p25, 1e-6);
    CHECK_NEAR(m.data[2 * m.stride], 0.5f * (p25 + p75), 1e-6);
    CHECK_NEAR(m.data[3 * m.stride], p75, 1e-6);
    CHECK_NEAR(m.data[4 * m.stride], p100, 1e-6);
    CHECK_NEAR(m.data[0 * m.stride + 1], u16f(60000), 1e-6);
    CHECK_NEAR(m.data[4 * m.stride + 1], u16f(32768), 1e-6);
    /* our decoder agrees with io's */
    struct matrix ref = {0};
    compressed_matrix_decode(&eg.cm, &ref);
    for (int r = 0; r < 5; r++)
        for (int c = 0; c < 2; c++)
            CHECK_NEAR(m.data[r * m.stride + c], ref.data[r * ref.stride + c], 1e-6);
    matrix_release(&ref);
    /* written back byte for byte: the CM input is kept as stored */
    struct membuf out;
    CHECK(write_example_mem(&eg, 1, &out) == 0);
    CHECK(out.size == s.n && !memcmp(out.data, s.b, s.n));
    free(out.data);
    matrix_release(&m);
    example_release(&eg);
}

/* Lab2, <Labels> (legacy) and a text-mode Kaldi example. */
static void test_kaldi_other_forms(void) {
    struct bytes s;
    s.n = 0;
    put(&s, "\0B", 2);
    put_str(&s, "<NnetExample> <Labels> ");
    put_i32(&s, 2);
    put_i32(&s, 3), put(&s, "\x04", 1), put_f(&s, 0.25f);
    put_i32(&s, 4), put(&s, "\x04", 1), put_f(&s, 0.75f);
    put_str(&s, "<InputFrames> FM ");
    put_i32(&s, 1);
    put_i32(&s, 2);
    put_f(&s, 1.5f), put_f(&s, -2.0f);
    put_str(&s, "<LeftContext> ");
    put_i32(&s, 0);
    put_str(&s, "<SpkInfo> FV ");
    put_i32(&s, 1);
    put_f(&s, 3.0f);
    put_str(&s, "</NnetExample> ");
    struct example eg;
    example_init(&eg);
    CHECK(read_example_mem(s.b, s.n, &eg) == 0);
    CHECK(eg.num_frames == 1 && example_num_labels(&eg) == 2);
    CHECK(eg.label_index[0] == 3 && eg.label_weight[0] == 0.25f);
    CHECK(eg.label_index[1] == 4 && eg.label_weight[1] == 0.75f);
    CHECK(eg.storage == EXAMPLE_STORE_FLOAT && eg.spk_dim == 1 && example_input_dim(&eg) == 3);
    struct matrix m;
    matrix_init_on(&m, 1, 3, MATRIX_CPU);
    CHECK(example_input_decode(&eg, &m) == 0);
    CHECK(m.data[0] == 1.5f && m.data[1] == -2.0f && m.data[2] == 3.0f);
    /* written as <Lab2> (weights are not 1) */
    struct membuf out;
    CHECK(write_example_mem(&eg, 1, &out) == 0);
    CHECK(memmem(out.data, out.size, "<Lab2> ", 7) != NULL);
    free(out.data);
    matrix_release(&m);
    example_release(&eg);

    const char *text = "<NnetExample> <Lab1> [ 2 3 ]\n<InputFrames> [\n  1 2 \n  3 4 \n  5 6 ]\n"
                       "<LeftContext> 1 <SpkInfo>  [ ]\n</NnetExample> ";
    CHECK(read_example_mem(text, strlen(text), &eg) == 0);
    CHECK(eg.num_frames == 2 && eg.left_context == 1 && example_right_context(&eg) == 0);
    CHECK(eg.rows == 3 && eg.cols == 2 && eg.storage == EXAMPLE_STORE_FLOAT);
    CHECK(eg.label_index[0] == 2 && eg.label_index[1] == 3);
    CHECK(eg.input.data[2 * eg.input.stride + 1] == 6.0f);
    example_release(&eg);
}

/* ---- round trips ---- */

static void fill_random(struct matrix *m, struct rng *g) {
    for (int r = 0; r < m->rows; r++)
        for (int c = 0; c < m->cols; c++)
            m->data[r * m->stride + c] = (float)(c - 3) + 2.0f * rng_gauss(g);
}

/* An example with sparse labels: frame 1 has two labels, the last frame none. */
static void make_example(struct example *eg, const struct matrix *m, int compress, int spk) {
    static const int start[4] = {0, 1, 3, 3};
    static const int32_t index[3] = {4, 0, 2};
    static const float weight[3] = {1.0f, 0.5f, 0.5f};
    example_init(eg);
    example_set_labels(eg, 3, start, index, weight);
    if (example_set_input(eg, m, 2, compress)) ASSERT(!"set_input");
    if (spk) {
        eg->spk_dim = 2;
        eg->spk_info = xmalloc(2 * sizeof(float));
        eg->spk_info[0] = 0.5f;
        eg->spk_info[1] = -0.25f;
    }
}

static double max_abs_diff(const struct matrix *a, const struct matrix *b) {
    double d = 0;
    for (int r = 0; r < a->rows; r++)
        for (int c = 0; c < a->cols; c++) {
            double e = fabs(a->data[r * a->stride + c] - b->data[r * b->stride + c]);
            if (e > d) d = e;
        }
    return d;
}

static void test_roundtrip_modes(void) {
    struct rng g;
    rng_seed(&g, 11);
    static const int shapes[2] = {12, 6}; /* rows: > 8 (8-bit is CM), <= 8 (CM3) */
    static const char *formats[4][2] = {
        {"float", "float"}, {"cm", "cm3"}, {"cm2", "cm2"}, {"zlib", "zlib"}};
    for (int si = 0; si < 2; si++) {
        struct matrix m;
        matrix_init_on(&m, shapes[si], 7, MATRIX_CPU);
        fill_random(&m, &g);
        for (int compress = EGS_COMPRESS_NONE; compress <= EGS_COMPRESS_ZLIB; compress++) {
            for (int binary = 1; binary >= 0; binary--) {
                struct example eg, back;
                make_example(&eg, &m, compress, 1);
                CHECK(!strcmp(example_storage_name(&eg), formats[compress][si]));
                example_init(&back);
                struct membuf buf;
                CHECK(write_example_mem(&eg, binary, &buf) == 0);
                CHECK(read_example_mem(buf.data, buf.size, &back) == 0);
                CHECK(back.num_frames == 3 && back.left_context == 2 && back.rows == m.rows);
                CHECK(example_right_context(&back) == m.rows - 5);
                CHECK(example_num_labels(&back) == 3 && back.label_start[3] == 3);
                CHECK(back.label_start[1] == 1 && back.label_start[2] == 3);
                CHECK(back.label_index[1] == 0 && back.label_weight[2] == 0.5f);
                CHECK(back.spk_dim == 2 && back.spk_info[1] == -0.25f);
                /* binary keeps the stored form; text always comes back as float */
                CHECK(
                    !strcmp(example_storage_name(&back), binary ? formats[compress][si] : "float"));
                struct matrix a, b;
                matrix_init_on(&a, m.rows, 9, MATRIX_CPU);
                matrix_init_on(&b, m.rows, 9, MATRIX_CPU);
                CHECK(example_input_decode(&eg, &a) == 0);
                CHECK(example_input_decode(&back, &b) == 0);
                /* binary: bit-exact, whatever the storage; text: %.7g */
                CHECK(max_abs_diff(&a, &b) <= (binary ? 0.0 : 1e-5));
                CHECK(a.data[8] == -0.25f && a.data[a.stride + 7] == 0.5f);
                if (binary) {
                    /* writing again gives the same bytes: no drift through copies */
                    struct membuf again;
                    CHECK(write_example_mem(&back, 1, &again) == 0);
                    CHECK(again.size == buf.size && !memcmp(again.data, buf.data, buf.size));
                    free(again.data);
                }
                free(buf.data);
                matrix_release(&a);
                matrix_release(&b);
                example_release(&eg);
                example_release(&back);
            }
        }
        matrix_release(&m);
    }
}

/* Lab1 is written exactly when every frame has one label of weight 1. */
static void test_lab1_choice(void) {
    struct matrix m;
    matrix_init_on(&m, 2, 3, MATRIX_CPU);
    struct example eg;
    example_init(&eg);
    int32_t idx[2] = {1, 2};
    example_set_labels_simple(&eg, 2, idx);
    CHECK(example_set_input(&eg, &m, 0, EGS_COMPRESS_NONE) == 0);
    struct membuf buf;
    CHECK(write_example_mem(&eg, 1, &buf) == 0);
    CHECK(memmem(buf.data, buf.size, "<Lab1> ", 7) && !memmem(buf.data, buf.size, "<Lab2>", 6));
    free(buf.data);
    eg.label_weight[1] = 0.999f;
    CHECK(write_example_mem(&eg, 1, &buf) == 0);
    CHECK(memmem(buf.data, buf.size, "<Lab2> ", 7) != NULL);
    free(buf.data);
    example_release(&eg);
    matrix_release(&m);
}

/* ---- quantization error ---- */

static void test_quantization_bounds(void) {
    struct rng g;
    rng_seed(&g, 5);
    for (int trial = 0; trial < 20; trial++) {
        int rows = trial % 2 ? 4 : 20, cols = 13;
        struct matrix m, d;
        matrix_init_on(&m, rows, cols, MATRIX_CPU);
        matrix_init_on(&d, rows, cols, MATRIX_CPU);
        fill_random(&m, &g);
        float lo = m.data[0], hi = m.data[0];
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++) {
                float v = m.data[r * m.stride + c];
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
            }
        double range = hi - lo;
        for (int compress = EGS_COMPRESS_8BIT; compress <= EGS_COMPRESS_16BIT; compress++) {
            struct example eg;
            example_init(&eg);
            int32_t lab = 0;
            example_set_labels_simple(&eg, 1, &lab);
            CHECK(example_set_input(&eg, &m, 0, compress) == 0);
            CHECK(example_input_decode(&eg, &d) == 0);
            double slack = 1e-6 * (fabs(lo) + fabs(hi)); /* float rounding */
            for (int c = 0; c < cols; c++) {
                /* CM: a column's values lie in 3 segments of 64, 128 and 63 steps between its
                 * quantized percentiles (a few uint16 steps of the global range off at most) */
                float clo = m.data[c], chi = m.data[c];
                for (int r = 0; r < rows; r++) {
                    float v = m.data[r * m.stride + c];
                    clo = v < clo ? v : clo;
                    chi = v > chi ? v : chi;
                }
                /* Kaldi rounds with +0.499, so up to 0.501 of a step */
                double u = range / 65535;
                double bound = compress == EGS_COMPRESS_16BIT ? 0.502 * u
                               : rows > 8 ? 0.502 * (chi - clo + 4 * u) / 63 + 2 * u
                                          : 0.502 * range / 255;
                for (int r = 0; r < rows; r++) {
                    double e = fabs(d.data[r * d.stride + c] - m.data[r * m.stride + c]);
                    if (!(e <= bound + slack))
                        printf("  trial %d compress %d (%d,%d): error %g > bound %g\n", trial,
                               compress, r, c, e, bound);
                    CHECK(e <= bound + slack);
                }
            }
            example_release(&eg);
        }
        matrix_release(&m);
        matrix_release(&d);
    }
    /* NaN cannot be quantized: an error, not a crash */
    struct matrix m;
    matrix_init_on(&m, 2, 2, MATRIX_CPU);
    m.data[1] = NAN;
    struct example eg;
    example_init(&eg);
    CHECK(example_set_input(&eg, &m, 0, EGS_COMPRESS_8BIT) == -1);
    CHECK(example_set_input(&eg, &m, 0, EGS_COMPRESS_ZLIB) == 0); /* lossless: stored as is */
    example_release(&eg);
    matrix_release(&m);
}

/* recompress keeps a satisfying storage untouched and converts otherwise */
static void test_recompress(void) {
    struct rng g;
    rng_seed(&g, 9);
    struct matrix m;
    matrix_init_on(&m, 3, 5, MATRIX_CPU);
    fill_random(&m, &g);
    struct example eg;
    make_example(&eg, &m, EGS_COMPRESS_8BIT, 0);
    unsigned char *before = eg.cm.data;
    CHECK(example_recompress(&eg, EGS_COMPRESS_8BIT) == 0 && eg.cm.data == before);
    CHECK(example_recompress(&eg, EGS_COMPRESS_KEEP) == 0 && eg.cm.data == before);
    struct matrix a, b;
    matrix_init_on(&a, 3, 5, MATRIX_CPU);
    matrix_init_on(&b, 3, 5, MATRIX_CPU);
    CHECK(example_input_decode(&eg, &a) == 0);
    CHECK(example_recompress(&eg, EGS_COMPRESS_ZLIB) == 0 && eg.storage == EXAMPLE_STORE_ZLIB);
    CHECK(example_input_decode(&eg, &b) == 0);
    CHECK(max_abs_diff(&a, &b) == 0.0); /* zlib of the decoded values is exact */
    CHECK(eg.left_context == 2 && eg.num_frames == 3);
    example_release(&eg);
    matrix_release(&a);
    matrix_release(&b);
    matrix_release(&m);
}

/* ---- cutting utterances ---- */

struct collected {
    int n;
    char keys[8][32];
    struct example egs[8];
};

static int collect(void *ctx, const char *key, const struct example *eg) {
    struct collected *c = ctx;
    ASSERT(c->n < 8);
    snprintf(c->keys[c->n], 32, "%s", key);
    example_init(&c->egs[c->n]);
    example_copy(&c->egs[c->n], eg);
    c->n++;
    return 0;
}

static void test_cut_utterance_context(void) {
    struct matrix f;
    matrix_init_on(&f, 5, 2, MATRIX_CPU);
    for (int t = 0; t < 5; t++) {
        f.data[t * f.stride] = (float)t;
        f.data[t * f.stride + 1] = 10.0f + t;
    }
    int32_t labels[5] = {10, 11, 12, 13, 14};
    struct egs_get_opts opts = {2, 1, 2, EGS_COMPRESS_NONE, 0};
    struct collected c;
    c.n = 0;
    CHECK(egs_cut_utterance("utt", &f, labels, &opts, collect, &c) == 0);
    CHECK(c.n == 3);
    CHECK(!strcmp(c.keys[0], "utt-0") && !strcmp(c.keys[1], "utt-2") &&
          !strcmp(c.keys[2], "utt-4"));
    /* rows are frames t0-2 .. t0+2, clamped to [0, 4] */
    static const int want[3][5] = {{0, 0, 0, 1, 2}, {0, 1, 2, 3, 4}, {2, 3, 4, 4, 4}};
    for (int k = 0; k < 3; k++) {
        struct example *eg = &c.egs[k];
        CHECK(eg->rows == 5 && eg->left_context == 2 && example_right_context(eg) == 1);
        CHECK(eg->num_frames == 2);
        for (int j = 0; j < 5; j++) {
            CHECK(eg->input.data[j * eg->input.stride] == (float)want[k][j]);
            CHECK(eg->input.data[j * eg->input.stride + 1] == 10.0f + want[k][j]);
        }
    }
    CHECK(example_num_labels(&c.egs[0]) == 2 && c.egs[0].label_index[1] == 11);
    CHECK(c.egs[1].label_index[0] == 12 && c.egs[1].label_index[1] == 13);
    /* the last block has one real frame; the padding frame has no labels */
    CHECK(example_num_labels(&c.egs[2]) == 1 && c.egs[2].label_index[0] == 14);
    CHECK(c.egs[2].label_start[1] == 1 && c.egs[2].label_start[2] == 1);
    for (int k = 0; k < c.n; k++)
        example_release(&c.egs[k]);
    matrix_release(&f);
}

/* ---- minibatches ---- */

static void test_minibatch(void) {
    struct rng g;
    rng_seed(&g, 3);
    struct matrix m[3];
    struct example eg[3];
    const struct example *ptr[3];
    static const int compress[3] = {EGS_COMPRESS_NONE, EGS_COMPRESS_8BIT, EGS_COMPRESS_ZLIB};
    for (int k = 0; k < 3; k++) {
        matrix_init_on(&m[k], 7, 4, MATRIX_CPU); /* L = 2, T = 3, R = 2 */
        fill_random(&m[k], &g);
        make_example(&eg[k], &m[k], compress[k], 0);
        ptr[k] = &eg[k];
    }
    struct egs_minibatch mb;
    egs_minibatch_init(&mb);
    /* trimmed to the network's context (1, 0): rows 1..5 of each example */
    CHECK(egs_minibatch_build(&mb, ptr, 3, 1, 0) == 0);
    CHECK(mb.num_egs == 3 && mb.rows_per_eg == 4 && mb.frames_per_eg == 3 && mb.input_dim == 4);
    CHECK(mb.input.rows == 12 && mb.left_context == 1 && mb.right_context == 0);
    for (int k = 0; k < 3; k++) {
        struct matrix full;
        matrix_init_on(&full, 7, 4, MATRIX_CPU);
        CHECK(example_input_decode(&eg[k], &full) == 0);
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 4; c++)
                CHECK(mb.input.data[(k * 4 + r) * mb.input.stride + c] ==
                      full.data[(r + 1) * full.stride + c]);
        matrix_release(&full);
    }
    /* labels: frame 0 -> 4, frame 1 -> {0: 0.5, 2: 0.5}, frame 2 none */
    CHECK(mb.num_labels == 9);
    for (int k = 0; k < 3; k++) {
        CHECK(mb.label_row[3 * k] == 3 * k && mb.label_index[3 * k] == 4);
        CHECK(mb.label_row[3 * k + 1] == 3 * k + 1 && mb.label_index[3 * k + 1] == 0);
        CHECK(mb.label_row[3 * k + 2] == 3 * k + 1 && mb.label_index[3 * k + 2] == 2);
        CHECK(mb.label_weight[3 * k + 2] == 0.5f);
    }
    /* untrimmed: all 7 rows */
    CHECK(egs_minibatch_build(&mb, ptr, 2, -1, -1) == 0);
    CHECK(mb.rows_per_eg == 7 && mb.input.rows == 14 && mb.left_context == 2);
    /* not enough context */
    CHECK(egs_minibatch_build(&mb, ptr, 3, 3, 0) == -1);
    CHECK(strstr(error_get(), "context") != NULL);
    /* different shapes */
    struct matrix small;
    matrix_init_on(&small, 7, 3, MATRIX_CPU);
    struct example odd;
    make_example(&odd, &small, EGS_COMPRESS_NONE, 0);
    const struct example *mixed[2] = {&eg[0], &odd};
    CHECK(egs_minibatch_build(&mb, mixed, 2, 0, 0) == -1);
    CHECK(strstr(error_get(), "example 1") != NULL);
    example_release(&odd);
    matrix_release(&small);
    egs_minibatch_release(&mb);
    for (int k = 0; k < 3; k++) {
        example_release(&eg[k]);
        matrix_release(&m[k]);
    }
}

/* ---- reading straight into minibatches ---- */

/* Write egs[0..n) to an archive (text if text), read it back with egs_reader_read in minibatches
 * of max and check each against egs_minibatch_build of the same examples. */
static void check_reader(const struct example *egs, int n, int text, int max, int left,
                         int right) {
    char path[64], wspec[80];
    snprintf(path, sizeof path, "/tmp/egs-test-%d.ark", (int)getpid());
    snprintf(wspec, sizeof wspec, "ark%s:%s", text ? ",t" : "", path);
    struct table_writer w;
    CHECK(table_writer_open(&w, wspec, &holder_example) == 0);
    char key[32];
    for (int k = 0; k < n; k++) {
        snprintf(key, sizeof key, "eg%d", k);
        CHECK(table_writer_write(&w, key, &egs[k]) == 0);
    }
    CHECK(table_writer_close(&w) == 0);
    snprintf(wspec, sizeof wspec, "ark:%s", path);
    /* the same archive read as struct examples (text is not bit-exact against egs) */
    struct example *back = xcalloc(n, sizeof *back);
    struct table_reader tr;
    CHECK(table_reader_open(&tr, wspec, &holder_example) == 0);
    for (int i = 0; i < n; i++) CHECK(table_reader_next(&tr, &back[i]) == 1);
    CHECK(table_reader_close(&tr) == 0);
    struct egs_reader *r = egs_reader_open(wspec);
    CHECK(r != NULL);
    struct egs_minibatch got, want;
    egs_minibatch_init(&got);
    egs_minibatch_init(&want);
    int at = 0, k;
    while ((k = egs_reader_read(r, &got, max, left, right)) > 0) {
        const struct example *ptr[16];
        for (int i = 0; i < k; i++) ptr[i] = &back[at + i];
        CHECK(k == (n - at < max ? n - at : max));
        CHECK(egs_minibatch_build(&want, ptr, k, left, right) == 0);
        CHECK(got.num_egs == k && got.rows_per_eg == want.rows_per_eg);
        CHECK(got.frames_per_eg == want.frames_per_eg && got.input_dim == want.input_dim);
        CHECK(got.left_context == want.left_context && got.right_context == want.right_context);
        CHECK(got.input.rows == want.input.rows && got.input.cols == want.input.cols);
        CHECK(max_abs_diff(&got.input, &want.input) == 0);
        CHECK(got.num_labels == want.num_labels);
        for (int i = 0; i < want.num_labels; i++)
            CHECK(got.label_row[i] == want.label_row[i] &&
                  got.label_index[i] == want.label_index[i] &&
                  got.label_weight[i] == want.label_weight[i]);
        at += k;
    }
    CHECK(k == 0 && at == n);
    CHECK(egs_reader_close(r) == 0);
    for (int i = 0; i < n; i++) example_release(&back[i]);
    free(back);
    egs_minibatch_release(&got);
    egs_minibatch_release(&want);
    remove(path);
}

static void test_reader(void) {
    struct rng g;
    rng_seed(&g, 5);
    enum { N = 11 };
    struct matrix m[N];
    struct example eg[N];
    for (int k = 0; k < N; k++) {
        /* 7 x 4 inputs (L = 2, T = 3, R = 2); example 5 is 8-bit, 6 zlib; 9 has 9 rows (L = 3) */
        matrix_init_on(&m[k], k == 9 ? 9 : 7, 4, MATRIX_CPU);
        fill_random(&m[k], &g);
        int compress = k == 5 ? EGS_COMPRESS_8BIT : k == 6 ? EGS_COMPRESS_ZLIB : EGS_COMPRESS_NONE;
        make_example(&eg[k], &m[k], compress, 0);
        if (k == 9) eg[k].left_context = 3;
        if (k >= 7) { /* one label of weight 1 per frame: written as <Lab1> */
            int32_t index[3] = {k, 1, 2};
            example_set_labels_simple(&eg[k], 3, index);
        }
    }
    for (int max = 1; max <= 4; max++) {
        check_reader(eg, N, 0, max, 2, 2); /* the fast path, but for 5, 6 and 9 */
        check_reader(eg, N, 0, max, 1, 0); /* everything trimmed */
        check_reader(eg, 9, 0, max, -1, -1); /* own context, all alike */
        check_reader(eg, N, 1, max, 2, 2); /* text */
    }
    /* speaker features on every example */
    for (int k = 0; k < N; k++) {
        eg[k].spk_dim = 2;
        eg[k].spk_info = xmalloc(2 * sizeof(float));
        eg[k].spk_info[0] = 0.5f + k;
        eg[k].spk_info[1] = -0.25f;
    }
    check_reader(eg, N, 0, 3, 2, 2);
    /* ... and then not: a new shape from example 7 on, which starts a minibatch when max is 7
     * (read the fast way up to its speaker features) */
    for (int k = 7; k < N; k++) {
        free(eg[k].spk_info);
        eg[k].spk_info = NULL;
        eg[k].spk_dim = 0;
    }
    check_reader(eg, N, 0, 7, 2, 2);
    /* another shape starts a minibatch of its own; inside one it is an error naming the example
     * and the key */
    example_set_labels_simple(&eg[2], 2, (int32_t[2]){1, 2});
    char path[64], spec[80];
    snprintf(path, sizeof path, "/tmp/egs-test-%d.ark", (int)getpid());
    snprintf(spec, sizeof spec, "ark:%s", path);
    static const char *const keys[4] = {"a", "b", "odd", "d"};
    struct table_writer w;
    CHECK(table_writer_open(&w, spec, &holder_example) == 0);
    for (int k = 0; k < 4; k++) CHECK(table_writer_write(&w, keys[k], &eg[k]) == 0);
    CHECK(table_writer_close(&w) == 0);
    struct egs_reader *r = egs_reader_open(spec);
    struct egs_minibatch mb;
    egs_minibatch_init(&mb);
    CHECK(egs_reader_read(r, &mb, 2, 2, 2) == 2);
    CHECK(egs_reader_read(r, &mb, 1, 2, 2) == 1);
    CHECK(mb.frames_per_eg == 2 && mb.right_context == 2 && mb.input.rows == 6);
    CHECK(egs_reader_read(r, &mb, 1, 2, 2) == 1 && mb.frames_per_eg == 3);
    CHECK(egs_reader_read(r, &mb, 1, 2, 2) == 0);
    egs_reader_close(r);
    r = egs_reader_open(spec);
    CHECK(egs_reader_read(r, &mb, 4, 2, 2) == -1);
    CHECK(strstr(error_get(), "example 2") != NULL && strstr(error_get(), "key 'odd'") != NULL);
    egs_reader_close(r);
    egs_minibatch_release(&mb);
    remove(path);
    for (int k = 0; k < N; k++) {
        example_release(&eg[k]);
        matrix_release(&m[k]);
    }
}

/* ---- bad input ---- */

static void test_truncated(void) {
    struct rng g;
    rng_seed(&g, 4);
    struct matrix m;
    matrix_init_on(&m, 10, 3, MATRIX_CPU);
    fill_random(&m, &g);
    for (int compress = EGS_COMPRESS_NONE; compress <= EGS_COMPRESS_ZLIB; compress++) {
        struct example eg, back;
        make_example(&eg, &m, compress, 1);
        example_init(&back);
        struct membuf buf;
        CHECK(write_example_mem(&eg, 1, &buf) == 0);
        for (size_t n = 0; n < buf.size; n++) {
            error_clear();
            CHECK(read_example_mem(buf.data, n, &back) == -1);
            CHECK(error_get()[0] != '\0');
            CHECK(back.rows == 0 && back.label_start == NULL); /* released on failure */
        }
        CHECK(read_example_mem(buf.data, buf.size, &back) == 0);
        free(buf.data);
        example_release(&eg);
        example_release(&back);
    }
    matrix_release(&m);
}

static void test_corrupt(void) {
    struct bytes s;
    struct example eg;
    example_init(&eg);
    /* left context + frames beyond the input rows */
    kaldi_fixture(&s);
    unsigned char *lc = memmem(s.b, s.n, "<LeftContext> ", 14);
    CHECK(lc != NULL);
    memcpy(lc + 15, &(int32_t){3}, 4);
    CHECK(read_example_mem(s.b, s.n, &eg) == -1);
    CHECK(strstr(error_get(), "does not fit") != NULL);
    /* an unknown label token */
    kaldi_fixture(&s);
    memcpy(memmem(s.b, s.n, "<Lab1>", 6), "<Lab9>", 6);
    CHECK(read_example_mem(s.b, s.n, &eg) == -1);
    CHECK(strstr(error_get(), "<Lab9>") != NULL);
    /* a huge Lab2 frame count is refused before allocating */
    s.n = 0;
    put(&s, "\0B", 2);
    put_str(&s, "<NnetExample> <Lab2> ");
    put_i32(&s, 0x7fffffff);
    put_i32(&s, 1);
    CHECK(read_example_mem(s.b, s.n, &eg) == -1);
    CHECK(strstr(error_get(), "count") != NULL);
    /* a ZM claiming an impossible shape, then one with a damaged stream */
    struct matrix m;
    matrix_init_on(&m, 5, 100, MATRIX_CPU);
    for (int i = 0; i < 500; i++)
        m.data[i] = (float)(i % 7);
    struct example z;
    make_example(&z, &m, EGS_COMPRESS_ZLIB, 0);
    struct membuf buf;
    CHECK(write_example_mem(&z, 1, &buf) == 0);
    unsigned char *zm = memmem(buf.data, buf.size, "ZM ", 3);
    CHECK(zm != NULL);
    int32_t rows;
    memcpy(&rows, zm + 3 + 5 + 1, 4);
    CHECK(rows == 5); /* layout: "ZM " 0x04 version 0x04 rows */
    memcpy(zm + 9, &(int32_t){1 << 24}, 4);
    CHECK(read_example_mem(buf.data, buf.size, &eg) == -1);
    CHECK(strstr(error_get(), "impossible") != NULL);
    memcpy(zm + 9, &rows, 4);
    zm[3 + 20 + 10] ^= 0x5a;                               /* inside the deflated bytes */
    CHECK(read_example_mem(buf.data, buf.size, &eg) == 0); /* read keeps the bytes... */
    struct matrix d;
    matrix_init_on(&d, 5, 100, MATRIX_CPU);
    int rc = example_input_decode(&eg, &d); /* ...and decoding finds the damage */
    CHECK(rc == -1);
    matrix_release(&d);
    free(buf.data);
    example_release(&z);
    example_release(&eg);
    matrix_release(&m);
}

int main(void) {
    TEST_RUN(test_kaldi_fixture);
    TEST_RUN(test_kaldi_other_forms);
    TEST_RUN(test_roundtrip_modes);
    TEST_RUN(test_lab1_choice);
    TEST_RUN(test_quantization_bounds);
    TEST_RUN(test_recompress);
    TEST_RUN(test_cut_utterance_context);
    TEST_RUN(test_minibatch);
    TEST_RUN(test_reader);
    TEST_RUN(test_truncated);
    TEST_RUN(test_corrupt);
    TEST_MAIN_END();
}
