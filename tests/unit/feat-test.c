/* Unit tests: the front-end's pieces (frames, WAVE round trip, CMVN, splicing), random access
 * into streamed archives (ark,s,cs), and Kaldi Posterior objects. */
#include "feat/feat.h"
#include "test.h"

#include <stdlib.h>

/* A text archive of int32 objects in memory, opened as a stream (not a plain file). */
static FILE *mem_file(const char *text) {
    return fmemopen((void *)text, strlen(text), "r");
}
static int open_mem(struct table_reader *r, const char *spec, FILE *f, const char *text) {
    struct kin in;
    kin_wrap(&in, f, "mem", -1);
    (void)text;
    return table_reader_open_stream(r, spec, &in, &holder_int32);
}

static void test_stream_sorted_called_sorted(void) {
    const char *text = "a 1\nb 2\nc 3\nd 4\nf 6\ng 7\n";
    FILE *f = mem_file(text);
    struct table_reader r;
    CHECK(open_mem(&r, "ark,s,cs:-", f, text) == 0);
    int32_t v = 0;
    CHECK(table_reader_lookup(&r, "b", &v) == 1 && v == 2);
    int64_t after_b = r.in.offset;
    CHECK(after_b < (int64_t)strlen(text)); /* read only as far as needed */
    CHECK(table_reader_lookup(&r, "bb", &v) == 0); /* stops at "c", the first key past it */
    CHECK(r.in.offset > after_b && r.in.offset <= (int64_t)strlen("a 1\nb 2\nc 3\n"));
    CHECK(table_reader_lookup(&r, "c", &v) == 1 && v == 3); /* from memory */
    CHECK(table_reader_lookup(&r, "e", &v) == 0);
    CHECK(table_reader_lookup(&r, "f", &v) == 1 && v == 6);
    CHECK(table_reader_lookup(&r, "f", &v) == 1 && v == 6); /* the same key twice is sorted */
    CHECK(table_reader_lookup(&r, "c", &v) == -1);
    CHECK(strstr(error_get(), "cs option") && strstr(error_get(), "'c' after 'f'"));
    table_reader_close(&r);
    fclose(f);
}

static void test_stream_unsorted(void) {
    const char *text = "c 3\na 1\nd 4\nb 2\n";
    FILE *f = mem_file(text);
    struct table_reader r;
    CHECK(open_mem(&r, "ark:-", f, text) == 0);
    int32_t v = 0;
    CHECK(table_reader_lookup(&r, "a", &v) == 1 && v == 1);
    CHECK(table_reader_lookup(&r, "zz", &v) == 0); /* without s: read to the end */
    CHECK(r.in.offset == (int64_t)strlen(text));
    CHECK(table_reader_lookup(&r, "c", &v) == 1 && v == 3);
    CHECK(table_reader_lookup(&r, "b", &v) == 1 && v == 2);
    CHECK(table_reader_lookup(&r, "d", &v) == 1 && v == 4);
    table_reader_close(&r);
    fclose(f);
    /* s on an unsorted archive is an error naming both keys. */
    f = mem_file(text);
    CHECK(open_mem(&r, "ark,s:-", f, text) == 0);
    CHECK(table_reader_lookup(&r, "d", &v) == -1);
    CHECK(strstr(error_get(), "not sorted") && strstr(error_get(), "'a' after 'c'"));
    table_reader_close(&r);
    fclose(f);
    /* o: each object handed over once. */
    f = mem_file(text);
    CHECK(open_mem(&r, "ark,o:-", f, text) == 0);
    CHECK(table_reader_lookup(&r, "d", &v) == 1 && v == 4);
    CHECK(table_reader_lookup(&r, "a", &v) == 1 && v == 1);
    CHECK(table_reader_lookup(&r, "b", &v) == 1 && v == 2);
    table_reader_close(&r);
    fclose(f);
}

static void test_stream_matrices_survive_the_cache(void) {
    /* Objects read past are kept serialised: a matrix comes back bit for bit. */
    char *buf = NULL;
    size_t size = 0;
    FILE *w = open_memstream(&buf, &size);
    struct kout out;
    kout_wrap(&out, w, "mem");
    struct matrix m;
    matrix_init(&m, 3, 2);
    for (int i = 0; i < 6; i++) m.data[(i / 2) * m.stride + i % 2] = 0.1f * (float)i - 0.25f;
    const char *keys[] = {"u1", "u2", "u3"};
    for (int k = 0; k < 3; k++) {
        kout_printf(&out, "%s ", keys[k]);
        m.data[0] = (float)k;
        holder_matrix.write(&out, 1, &m);
    }
    CHECK(kout_close(&out) == 0);
    fclose(w);
    FILE *f = fmemopen(buf, size, "r");
    struct kin in;
    kin_wrap(&in, f, "mem", -1);
    struct table_reader r;
    CHECK(table_reader_open_stream(&r, "ark,s,cs:-", &in, &holder_matrix) == 0);
    struct matrix got = {0};
    CHECK(table_reader_lookup(&r, "u3", &got) == 1 && got.data[0] == 2.0f);
    table_reader_close(&r);
    fclose(f);
    f = fmemopen(buf, size, "r");
    kin_wrap(&in, f, "mem", -1);
    CHECK(table_reader_open_stream(&r, "ark:-", &in, &holder_matrix) == 0);
    CHECK(table_reader_lookup(&r, "u3", &got) == 1 && got.data[0] == 2.0f);
    CHECK(table_reader_lookup(&r, "u1", &got) == 1 && got.rows == 3 && got.cols == 2);
    CHECK(got.data[0] == 0.0f && got.data[got.stride + 1] == 0.1f * 3 - 0.25f);
    table_reader_close(&r);
    fclose(f);
    matrix_release(&got);
    matrix_release(&m);
    free(buf);
}

static void test_num_frames(void) {
    struct feat_opts o;
    feat_opts_default(&o, FEAT_MFCC);
    CHECK(feat_window_size(&o) == 400 && feat_window_shift(&o) == 160);
    CHECK(feat_padded_window_size(&o) == 512);
    CHECK(feat_num_frames(16000, &o) == 98);  /* 1 + (16000 - 400) / 160 */
    CHECK(feat_num_frames(399, &o) == 0);
    CHECK(feat_num_frames(400, &o) == 1);
    o.snip_edges = 0;
    CHECK(feat_num_frames(16000, &o) == 100); /* (16000 + 80) / 160 */
    CHECK(feat_num_frames(79, &o) == 0 && feat_num_frames(80, &o) == 1);
    o.round_to_power_of_two = 0;
    CHECK(feat_padded_window_size(&o) == 400);
    o.samp_freq = 8000;
    CHECK(feat_window_size(&o) == 200 && feat_window_shift(&o) == 80);
}

static void test_wave_round_trip(void) {
    struct feat_wave w = {0};
    w.num_channels = 2;
    w.num_samples = 5;
    w.samp_freq = 8000;
    w.data = malloc(sizeof(float) * 10);
    for (int i = 0; i < 10; i++) w.data[i] = (float)(i * 1000 - 4000);
    w.data[9] = 40000; /* clipped to 32767 on write */
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    struct kout out;
    kout_wrap(&out, f, "mem");
    CHECK(feat_wave_write(&out, &w) == 0 && kout_close(&out) == 0);
    fclose(f);
    CHECK(size == 44 + 20);
    f = fmemopen(buf, size, "r");
    struct kin in;
    kin_wrap(&in, f, "mem", (int64_t)size);
    struct feat_wave r = {0};
    CHECK(feat_wave_read(&in, &r) == 0);
    CHECK(r.num_channels == 2 && r.num_samples == 5 && r.samp_freq == 8000);
    CHECK(r.data[0] == -4000 && r.data[5] == 1000 && r.data[8] == 4000 && r.data[9] == 32767);
    kin_close(&in);
    fclose(f);
    /* Cut anywhere inside the header: an error, never a crash. */
    for (size_t cut = 0; cut < 46; cut++) {
        f = fmemopen(buf, cut ? cut : 1, "r");
        kin_wrap(&in, f, "mem", (int64_t)(cut ? cut : 1));
        int rc = feat_wave_read(&in, &r);
        kin_close(&in);
        fclose(f);
        CHECK(rc == -1);
    }
    feat_wave_release(&r);
    feat_wave_release(&w);
    free(buf);
}

static void test_cmvn_maths(void) {
    struct matrix x;
    matrix_init(&x, 4, 2);
    float v[8] = {1, 10, 2, 20, 3, 30, 6, 60};
    for (int i = 0; i < 8; i++) x.data[(i / 2) * x.stride + i % 2] = v[i];
    struct feat_dmatrix s = {0};
    feat_cmvn_acc(&s, &x);
    CHECK(s.rows == 2 && s.cols == 3);
    CHECK(s.data[0] == 12 && s.data[1] == 120 && s.data[2] == 4);
    CHECK(s.data[3] == 50 && s.data[4] == 5000 && s.data[5] == 0);
    /* mean 3, var 50/4 - 9 = 3.5 */
    CHECK(feat_cmvn_apply(&s, 1, &x) == 0);
    CHECK_NEAR(x.data[0], (1 - 3) / sqrt(3.5), 1e-6);
    CHECK_NEAR(x.data[3 * x.stride + 1], (60 - 30) / sqrt(350.0), 1e-6);
    struct matrix y;
    matrix_init(&y, 1, 3);
    CHECK(feat_cmvn_apply(&s, 0, &y) == -1 && strstr(error_get(), "dimension mismatch"));
    s.data[2] = 0.5;
    CHECK(feat_cmvn_apply(&s, 0, &x) == -1 && strstr(error_get(), "count = 0.5"));
    feat_dmatrix_release(&s);
    matrix_release(&x);
    matrix_release(&y);
}

static void test_splice(void) {
    struct matrix x, o = {0};
    matrix_init(&x, 3, 1);
    x.data[0] = 1;
    x.data[x.stride] = 2;
    x.data[2 * x.stride] = 3;
    feat_splice(&x, 1, 2, &o);
    CHECK(o.rows == 3 && o.cols == 4);
    float want[12] = {1, 1, 2, 3, 1, 2, 3, 3, 2, 3, 3, 3};
    for (int i = 0; i < 12; i++) CHECK(o.data[(i / 4) * o.stride + i % 4] == want[i]);
    matrix_release(&x);
    matrix_release(&o);
}

/* Read one object of a holder from bytes. */
static int read_bytes(const struct holder_ops *ops, const void *bytes, size_t n, void *obj) {
    FILE *f = fmemopen((void *)bytes, n, "rb");
    struct kin in;
    kin_wrap(&in, f, "mem", (int64_t)n);
    int rc = ops->read(&in, obj);
    kin_close(&in);
    fclose(f);
    return rc;
}

static void test_posterior_bytes(void) {
    /* Kaldi's binary Posterior for [[(3, 1)], [(4, 0.5), (5, 0.5)], []], by hand. */
    const unsigned char b[] = {0, 'B', 4, 3, 0, 0, 0,
                               4, 1, 0, 0, 0, 4, 3, 0, 0, 0, 4, 0, 0, 0x80, 0x3f,
                               4, 2, 0, 0, 0, 4, 4, 0, 0, 0, 4, 0, 0, 0, 0x3f,
                               4, 5, 0, 0, 0, 4, 0, 0, 0, 0x3f,
                               4, 0, 0, 0, 0};
    struct posterior p = {0};
    CHECK(read_bytes(&holder_posterior, b, sizeof b, &p) == 0);
    CHECK(p.num_frames == 3 && p.start[1] == 1 && p.start[2] == 3 && p.start[3] == 3);
    CHECK(p.index[0] == 3 && p.weight[0] == 1.0f && p.index[2] == 5 && p.weight[2] == 0.5f);
    /* holder_targets tells it from an int32 vector. */
    struct posterior q = {0};
    CHECK(read_bytes(&holder_targets, b, sizeof b, &q) == 0);
    CHECK(q.num_frames == 3 && q.start[3] == 3 && q.weight[1] == 0.5f);
    const unsigned char iv[] = {0, 'B', 4, 3, 0, 0, 0, 4, 1, 0, 0, 0, 4, 3, 0, 0, 0,
                                4, 7, 0, 0, 0};
    CHECK(read_bytes(&holder_targets, iv, sizeof iv, &q) == 0);
    CHECK(q.num_frames == 3 && q.start[3] == 3 && q.index[0] == 1 && q.index[2] == 7);
    CHECK(q.weight[0] == 1.0f && q.weight[2] == 1.0f);
    /* Write back: the same bytes. */
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    struct kout out;
    kout_wrap(&out, f, "mem");
    CHECK(holder_posterior.write(&out, 1, &p) == 0 && kout_close(&out) == 0);
    fclose(f);
    CHECK(size == sizeof b && !memcmp(buf, b, size));
    free(buf);
    /* Text. */
    const char *t = "[ 3 1 ] [ 4 0.5 5 0.5 ] [ ] \n";
    CHECK(read_bytes(&holder_targets, t, strlen(t), &q) == 0);
    CHECK(q.num_frames == 3 && q.start[2] == 3 && q.index[1] == 4 && q.weight[2] == 0.5f);
    CHECK(read_bytes(&holder_targets, "1 2 3\n", 6, &q) == 0 && q.num_frames == 3);
    /* Every truncation is an error. */
    for (size_t cut = 3; cut < sizeof b; cut++)
        CHECK(read_bytes(&holder_posterior, b, cut, &q) == -1);
    posterior_release(&p);
    posterior_release(&q);
}

int main(void) {
    TEST_RUN(test_stream_sorted_called_sorted);
    TEST_RUN(test_stream_unsorted);
    TEST_RUN(test_stream_matrices_survive_the_cache);
    TEST_RUN(test_num_frames);
    TEST_RUN(test_wave_round_trip);
    TEST_RUN(test_cmvn_maths);
    TEST_RUN(test_splice);
    TEST_RUN(test_posterior_bytes);
    TEST_MAIN_END();
}
