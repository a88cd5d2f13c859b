/* Unit tests for io: byte-level fixtures built by hand from the layouts written out
 * in src/io/io.h, not only round trips. */
#include "io/io.h"
#include "bytes.h"
#include "test.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];
static const char *tmp_path(const char *name) {
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}
static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    fwrite(p, 1, n, f);
    fclose(f);
}
static size_t read_file(const char *path, unsigned char *dst, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(dst, 1, cap, f);
    fclose(f);
    return n;
}

/* An in-memory input. */
static FILE *mem_in(struct kin *in, const struct bytes *x) {
    FILE *f = fmemopen((void *)x->b, x->n ? x->n : 1, "rb");
    kin_wrap(in, f, "mem", (int64_t)x->n);
    if (!x->n) in->eof = 1;
    return f;
}

/* Output into a growing memory buffer. */
struct memout {
    char *buf;
    size_t size;
    FILE *f;
    struct kout out;
};
static void memout_open(struct memout *m) {
    m->buf = NULL;
    m->size = 0;
    m->f = open_memstream(&m->buf, &m->size);
    kout_wrap(&m->out, m->f, "memout");
}
static void memout_close(struct memout *m) {
    kout_close(&m->out);
    fclose(m->f);
}

/* ---- tests ---- */

static void test_fm_archive_by_hand(void) {
    struct bytes x = {.n = 0};
    put_str(&x, "key1 ");
    put(&x, "\0B", 2);
    put_str(&x, "FM ");
    put_i32(&x, 2);
    put_i32(&x, 3);
    for (int i = 0; i < 6; i++) put_f(&x, (float)i + 0.5f);
    put_str(&x, "key2 ");
    put(&x, "\0B", 2);
    put_str(&x, "DM ");
    put_i32(&x, 1);
    put_i32(&x, 2);
    double d[2] = {1.25, -3.5};
    put(&x, d, 16);
    write_file(tmp_path("a.ark"), x.b, x.n);

    struct table_reader r;
    char spec[600];
    snprintf(spec, sizeof spec, "ark:%s", tmp_path("a.ark"));
    CHECK(table_reader_open(&r, spec, &holder_matrix) == 0);
    struct matrix m = {0};
    CHECK(table_reader_next(&r, &m) == 1);
    CHECK(!strcmp(table_reader_key(&r), "key1"));
    CHECK(m.rows == 2 && m.cols == 3);
    CHECK(m.data[0] == 0.5f && m.data[5] == 5.5f);
    CHECK(r.entry_offset == 5);
    CHECK(table_reader_next(&r, &m) == 1);
    CHECK(!strcmp(table_reader_key(&r), "key2"));
    CHECK(m.rows == 1 && m.cols == 2 && m.data[0] == 1.25f && m.data[1] == -3.5f);
    CHECK(table_reader_next(&r, &m) == 0);
    CHECK(table_reader_next(&r, &m) == 0);
    CHECK(table_reader_close(&r) == 0);
    matrix_release(&m);

    /* Writing key1's matrix gives the same bytes as the hand-built entry. */
    struct memout mo;
    memout_open(&mo);
    struct matrix w;
    matrix_init_on(&w, 2, 3, MATRIX_CPU);
    for (int i = 0; i < 6; i++) w.data[i] = (float)i + 0.5f;
    CHECK(kout_write(&mo.out, "key1 ", 5) == 0);
    CHECK(holder_matrix.write(&mo.out, 1, &w) == 0);
    memout_close(&mo);
    CHECK(mo.size == 5 + 2 + 3 + 10 + 24);
    CHECK(!memcmp(mo.buf, x.b, mo.size));
    free(mo.buf);
    matrix_release(&w);
}

static void test_primitives_by_hand(void) {
    struct bytes x = {.n = 0};
    put_str(&x, "<Nnet> ");
    put_i32(&x, -7);
    put_u8(&x, 4);
    put_f(&x, 0.25f);
    put_u8(&x, 8);
    double d = 1.0 / 3;
    put(&x, &d, 8);
    put_str(&x, "T");
    put_str(&x, "F");
    /* WriteIntegerVector: size byte, RAW count, raw data */
    put_u8(&x, 4);
    put_raw_i32(&x, 3);
    put_raw_i32(&x, -1);
    put_raw_i32(&x, 0);
    put_raw_i32(&x, 9);
    put_str(&x, "FV ");
    put_i32(&x, 2);
    put_f(&x, 1.5f);
    put_f(&x, 2.5f);
    struct kin in;
    FILE *f = mem_in(&in, &x);
    char tok[64];
    CHECK(io_peek_token(&in, 1, tok, sizeof tok) == 0 && !strcmp(tok, "<Nnet>"));
    CHECK(io_expect_token(&in, 1, "<Nnet>") == 0);
    int32_t i;
    CHECK(io_read_int32(&in, 1, &i) == 0 && i == -7);
    float fl;
    CHECK(io_read_float(&in, 1, &fl) == 0 && fl == 0.25f);
    CHECK(io_read_float(&in, 1, &fl) == 0 && fl == (float)(1.0 / 3));
    int b;
    CHECK(io_read_bool(&in, 1, &b) == 0 && b == 1);
    CHECK(io_read_bool(&in, 1, &b) == 0 && b == 0);
    struct int32_vec iv = {0};
    CHECK(io_read_int32_vector(&in, 1, &iv) == 0);
    CHECK(iv.dim == 3 && iv.data[0] == -1 && iv.data[2] == 9);
    struct vector v = {0};
    CHECK(io_read_vector(&in, 1, &v) == 0 && v.dim == 2 && v.data[1] == 2.5f);
    CHECK(kin_at_eof(&in));
    CHECK(in.offset == (int64_t)x.n);
    CHECK(io_read_int32(&in, 1, &i) == -1);
    CHECK(strstr(error_get(), "truncated") && strstr(error_get(), "'mem'"));
    kin_close(&in);
    fclose(f);

    /* The writers reproduce the same bytes. */
    struct memout mo;
    memout_open(&mo);
    CHECK(io_write_token(&mo.out, 1, "<Nnet>") == 0);
    CHECK(io_write_int32(&mo.out, 1, -7) == 0);
    CHECK(io_write_float(&mo.out, 1, 0.25f) == 0);
    CHECK(io_write_double(&mo.out, 1, 1.0 / 3) == 0);
    CHECK(io_write_bool(&mo.out, 1, 1) == 0 && io_write_bool(&mo.out, 1, 0) == 0);
    CHECK(io_write_int32_vector(&mo.out, 1, &iv) == 0);
    CHECK(io_write_vector(&mo.out, 1, &v) == 0);
    memout_close(&mo);
    CHECK(mo.size == x.n && !memcmp(mo.buf, x.b, x.n));
    free(mo.buf);
    int32_vec_release(&iv);
    vector_release(&v);

    /* A wrong token is reported with what was expected. */
    struct bytes y = {.n = 0};
    put_str(&y, "<Foo> ");
    f = mem_in(&in, &y);
    CHECK(io_expect_token(&in, 1, "<Nnet>") == -1);
    CHECK(strstr(error_get(), "expected <Nnet>, got <Foo>"));
    kin_close(&in);
    fclose(f);
}

static void test_text_mode(void) {
    const char *text = " [\n  1 2 3 \n  4 5 6 ]\n";
    struct bytes x = {.n = 0};
    put_str(&x, text);
    put_str(&x, " [ 7 8.5 ]\n [ ]\n<Tok> 12 0.125 T [ 1 2 3 ]\n");
    struct kin in;
    FILE *f = mem_in(&in, &x);
    int binary = 1;
    CHECK(io_read_header(&in, &binary) == 0 && binary == 0);
    struct matrix m = {0};
    CHECK(io_read_matrix(&in, 0, &m) == 0);
    CHECK(m.rows == 2 && m.cols == 3 && m.data[3] == 4 && m.data[5] == 6);
    struct vector v = {0};
    CHECK(io_read_vector(&in, 0, &v) == 0 && v.dim == 2 && v.data[1] == 8.5f);
    struct matrix e = {0};
    CHECK(io_read_matrix(&in, 0, &e) == 0 && e.rows == 0 && e.cols == 0);
    CHECK(io_expect_token(&in, 0, "<Tok>") == 0);
    int32_t i;
    float fl;
    int b;
    CHECK(io_read_int32(&in, 0, &i) == 0 && i == 12);
    CHECK(io_read_float(&in, 0, &fl) == 0 && fl == 0.125f);
    CHECK(io_read_bool(&in, 0, &b) == 0 && b == 1);
    struct int32_vec iv = {0};
    CHECK(io_read_int32_vector(&in, 0, &iv) == 0 && iv.dim == 3 && iv.data[2] == 3);
    kin_close(&in);
    fclose(f);

    struct memout mo;
    memout_open(&mo);
    CHECK(io_write_matrix(&mo.out, 0, &m) == 0);
    CHECK(io_write_vector(&mo.out, 0, &v) == 0);
    CHECK(io_write_matrix(&mo.out, 0, &e) == 0);
    CHECK(io_write_token(&mo.out, 0, "<Tok>") == 0);
    CHECK(io_write_int32(&mo.out, 0, 12) == 0);
    CHECK(io_write_float(&mo.out, 0, 0.125f) == 0);
    CHECK(io_write_bool(&mo.out, 0, 1) == 0);
    CHECK(io_write_int32_vector(&mo.out, 0, &iv) == 0);
    memout_close(&mo);
    const char *want = " [\n  1 2 3 \n  4 5 6 ]\n [ 7 8.5 ]\n [ ]\n<Tok> 12 0.125 T [ 1 2 3 ]\n";
    CHECK(mo.size == strlen(want) && !memcmp(mo.buf, want, mo.size));
    free(mo.buf);
    /* Seven significant digits, as Kaldi's precision(7). */
    memout_open(&mo);
    CHECK(io_write_float(&mo.out, 0, 1.0f / 3) == 0);
    memout_close(&mo);
    CHECK(mo.size == 10 && !memcmp(mo.buf, "0.3333333 ", 10));
    free(mo.buf);
    matrix_release(&m);
    vector_release(&v);
    int32_vec_release(&iv);

    /* Ragged rows are an error. */
    struct bytes y = {.n = 0};
    put_str(&y, " [\n 1 2\n 3 ]\n");
    f = mem_in(&in, &y);
    CHECK(io_read_matrix(&in, 0, &m) == -1);
    CHECK(strstr(error_get(), "columns"));
    kin_close(&in);
    fclose(f);
}

static void decode_fixture(struct bytes *x, struct matrix *m) {
    struct kin in;
    FILE *f = mem_in(&in, x);
    *m = (struct matrix){0};
    int rc = io_read_matrix(&in, 1, m);
    if (rc) printf("# %s\n", error_get());
    ASSERT(rc == 0);
    ASSERT(kin_at_eof(&in));
    kin_close(&in);
    fclose(f);
}

static void test_compressed_by_hand(void) {
    /* CM2: min 0, range 65535 -> value == u16 exactly. */
    struct bytes x = {.n = 0};
    put_str(&x, "CM2 ");
    put_f(&x, 0);
    put_f(&x, 65535);
    put_raw_i32(&x, 2);
    put_raw_i32(&x, 2);
    put_u16(&x, 0);
    put_u16(&x, 1);
    put_u16(&x, 1000);
    put_u16(&x, 65535);
    struct matrix m;
    decode_fixture(&x, &m);
    CHECK(m.rows == 2 && m.cols == 2);
    CHECK(m.data[0] == 0 && m.data[1] == 1 && m.data[2] == 1000 && m.data[3] == 65535);
    matrix_release(&m);

    /* CM3: min -1, range 255 -> value == u8 - 1; row-major. */
    x.n = 0;
    put_str(&x, "CM3 ");
    put_f(&x, -1);
    put_f(&x, 255);
    put_raw_i32(&x, 1);
    put_raw_i32(&x, 3);
    put_u8(&x, 0);
    put_u8(&x, 1);
    put_u8(&x, 255);
    decode_fixture(&x, &m);
    CHECK(m.rows == 1 && m.cols == 3);
    CHECK(m.data[0] == -1 && m.data[1] == 0 && m.data[2] == 254);
    matrix_release(&m);

    /* CM: min 0, range 65535; column headers (0, 64, 192, 255) make byte b decode to ~b in all
     * three pieces; bytes are column-major. Column 1 has (0, 100, 200, 1000): byte 64 -> 100,
     * 128 -> 150, 192 -> 200, 255 -> 1000. */
    x.n = 0;
    put_str(&x, "CM ");
    put_f(&x, 0);
    put_f(&x, 65535);
    put_raw_i32(&x, 4);
    put_raw_i32(&x, 2);
    put_u16(&x, 0), put_u16(&x, 64), put_u16(&x, 192), put_u16(&x, 255);
    put_u16(&x, 0), put_u16(&x, 100), put_u16(&x, 200), put_u16(&x, 1000);
    uint8_t col0[4] = {0, 32, 128, 250}, col1[4] = {64, 128, 192, 255};
    put(&x, col0, 4);
    put(&x, col1, 4);
    decode_fixture(&x, &m);
    CHECK(m.rows == 4 && m.cols == 2);
    for (int r = 0; r < 4; r++) CHECK_NEAR(m.data[r * m.stride], col0[r], 1e-3);
    CHECK_NEAR(m.data[0 * m.stride + 1], 100, 1e-3);
    CHECK_NEAR(m.data[1 * m.stride + 1], 150, 1e-3);
    CHECK_NEAR(m.data[2 * m.stride + 1], 200, 1e-3);
    CHECK_NEAR(m.data[3 * m.stride + 1], 1000, 1e-3);
    matrix_release(&m);

    /* The empty compressed matrix: "CM " + 16 zero bytes. */
    x.n = 0;
    put_str(&x, "CM ");
    for (int i = 0; i < 16; i++) put_u8(&x, 0);
    decode_fixture(&x, &m);
    CHECK(m.rows == 0 && m.cols == 0);

    /* A size field larger than the stream is refused before allocating. */
    x.n = 0;
    put_str(&x, "CM2 ");
    put_f(&x, 0);
    put_f(&x, 1);
    put_raw_i32(&x, 1000);
    put_raw_i32(&x, 1000);
    struct kin in;
    FILE *f = mem_in(&in, &x);
    CHECK(io_read_matrix(&in, 1, &m) == -1);
    CHECK(strstr(error_get(), "truncated"));
    kin_close(&in);
    fclose(f);
}

static void test_compress_writer(void) {
    /* [[0, 1]] with the 2-byte auto method: min 0, range 1, u16 0 and 65535. */
    struct matrix m;
    matrix_init_on(&m, 1, 2, MATRIX_CPU);
    m.data[1] = 1;
    struct compressed_matrix cm = {0};
    CHECK(compressed_matrix_compress(&cm, &m, CM_METHOD_2BYTE_AUTO) == 0);
    struct memout mo;
    memout_open(&mo);
    CHECK(io_write_compressed_matrix(&mo.out, 1, &cm) == 0);
    memout_close(&mo);
    struct bytes x = {.n = 0};
    put_str(&x, "CM2 ");
    put_f(&x, 0);
    put_f(&x, 1);
    put_raw_i32(&x, 1);
    put_raw_i32(&x, 2);
    put_u16(&x, 0);
    put_u16(&x, 65535);
    CHECK(mo.size == x.n && !memcmp(mo.buf, x.b, x.n));
    free(mo.buf);
    /* A constant matrix gets range 1 + |min| (Kaldi), so it survives compression. */
    m.data[0] = m.data[1] = -2;
    CHECK(compressed_matrix_compress(&cm, &m, CM_METHOD_1BYTE_AUTO) == 0);
    CHECK(cm.format == CM_FORMAT_CM3 && cm.min_value == -2 && cm.range == 3);
    m.data[0] = NAN;
    CHECK(compressed_matrix_compress(&cm, &m, CM_METHOD_AUTO) == -1);
    CHECK(compressed_matrix_compress(&cm, &m, 9) == -1);
    matrix_release(&m);
    compressed_matrix_release(&cm);

    /* Round trips within each format's resolution. */
    struct rng r;
    rng_seed(&r, 5);
    int methods[] = {CM_METHOD_AUTO, CM_METHOD_SPEECH, CM_METHOD_2BYTE_AUTO, CM_METHOD_1BYTE_AUTO};
    int rows_for[] = {20, 3, 7, 30};
    for (int k = 0; k < 4; k++) {
        matrix_init_on(&m, rows_for[k], 5, MATRIX_CPU);
        for (int i = 0; i < m.rows * m.cols; i++) m.data[i] = rng_gauss(&r) * 3;
        CHECK(compressed_matrix_compress(&cm, &m, methods[k]) == 0);
        struct matrix d = {0};
        compressed_matrix_decode(&cm, &d);
        CHECK(d.rows == m.rows && d.cols == m.cols);
        float lo = m.data[0], hi = m.data[0];
        for (int i = 0; i < m.rows * m.cols; i++) {
            lo = fminf(lo, m.data[i]);
            hi = fmaxf(hi, m.data[i]);
        }
        double tol = cm.format == CM_FORMAT_CM2 ? (hi - lo) / 65535.0 : (hi - lo) / 255.0 * 2;
        if (cm.format == CM_FORMAT_CM) tol = (hi - lo) / 20.0; /* piecewise 8-bit */
        for (int i = 0; i < m.rows * m.cols; i++) CHECK(fabs(d.data[i] - m.data[i]) <= tol);
        /* Decoding the written bytes gives the same floats. */
        memout_open(&mo);
        CHECK(io_write_compressed_matrix(&mo.out, 1, &cm) == 0);
        memout_close(&mo);
        x.n = 0;
        put(&x, mo.buf, mo.size);
        free(mo.buf);
        struct matrix d2;
        decode_fixture(&x, &d2);
        CHECK(!memcmp(d.data, d2.data, sizeof(float) * (size_t)m.rows * m.cols));
        matrix_release(&d2);
        matrix_release(&d);
        matrix_release(&m);
        compressed_matrix_release(&cm);
    }
}

static void test_int32_vector_holder_by_hand(void) {
    /* BasicVectorHolder<int32> in an archive: every element has a size byte. */
    struct bytes x = {.n = 0};
    put_str(&x, "utt1 ");
    put(&x, "\0B", 2);
    put_i32(&x, 3);
    put_i32(&x, 10);
    put_i32(&x, -2);
    put_i32(&x, 7);
    put_str(&x, "utt2 ");
    put(&x, "\0B", 2);
    put_i32(&x, 0);
    write_file(tmp_path("ali.ark"), x.b, x.n);
    char spec[600];
    snprintf(spec, sizeof spec, "ark:%s", tmp_path("ali.ark"));
    struct table_reader r;
    CHECK(table_reader_open(&r, spec, &holder_int32_vector) == 0);
    struct int32_vec v = {0};
    CHECK(table_reader_next(&r, &v) == 1 && v.dim == 3 && v.data[1] == -2);
    CHECK(table_reader_next(&r, &v) == 1 && v.dim == 0);
    CHECK(table_reader_next(&r, &v) == 0);
    table_reader_close(&r);

    /* Text form "key 1 2 3 \n", and binary write equal to the fixture. */
    snprintf(spec, sizeof spec, "ark,t:%s", tmp_path("ali.txt"));
    struct table_writer w;
    CHECK(table_writer_open(&w, spec, &holder_int32_vector) == 0);
    int32_t d[3] = {10, -2, 7};
    struct int32_vec a = {d, 3}, empty = {0};
    CHECK(table_writer_write(&w, "utt1", &a) == 0 && table_writer_write(&w, "utt2", &empty) == 0);
    CHECK(table_writer_close(&w) == 0);
    unsigned char buf[256];
    size_t n = read_file(tmp_path("ali.txt"), buf, sizeof buf);
    const char *want = "utt1 10 -2 7 \nutt2 \n";
    CHECK(n == strlen(want) && !memcmp(buf, want, n));
    snprintf(spec, sizeof spec, "ark:%s", tmp_path("ali2.ark"));
    CHECK(table_writer_open(&w, spec, &holder_int32_vector) == 0);
    CHECK(table_writer_write(&w, "utt1", &a) == 0 && table_writer_write(&w, "utt2", &empty) == 0);
    CHECK(table_writer_close(&w) == 0);
    n = read_file(tmp_path("ali2.ark"), buf, sizeof buf);
    CHECK(n == x.n && !memcmp(buf, x.b, n));
    /* And the text form reads back. */
    snprintf(spec, sizeof spec, "ark:%s", tmp_path("ali.txt"));
    CHECK(table_reader_open(&r, spec, &holder_int32_vector) == 0);
    CHECK(table_reader_next(&r, &v) == 1 && v.dim == 3 && v.data[2] == 7);
    CHECK(table_reader_next(&r, &v) == 1 && v.dim == 0);
    CHECK(table_reader_next(&r, &v) == 0);
    table_reader_close(&r);
    int32_vec_release(&v);
}

static void make_matrix(struct matrix *m, int rows, int cols, float base) {
    matrix_init_on(m, rows, cols, MATRIX_CPU);
    for (int i = 0; i < rows * cols; i++) m->data[i] = base + (float)i;
}

static void test_scp_offsets_and_ranges(void) {
    char spec[1200];
    snprintf(spec, sizeof spec, "ark,scp:%s,%s", tmp_path("f.ark"), tmp_path("f.scp"));
    struct table_writer w;
    CHECK(table_writer_open(&w, spec, &holder_matrix) == 0);
    struct matrix a, b;
    make_matrix(&a, 4, 3, 0);
    make_matrix(&b, 2, 2, 100);
    CHECK(table_writer_write(&w, "uttA", &a) == 0);
    CHECK(table_writer_write(&w, "uttB", &b) == 0);
    CHECK(table_writer_write(&w, "bad key", &b) == -1);
    CHECK(table_writer_close(&w) == 0);
    /* "key ARK:OFFSET" with the offset just after "key ". */
    unsigned char buf[1024];
    size_t n = read_file(tmp_path("f.scp"), buf, sizeof buf - 1);
    buf[n] = 0;
    char want[1200];
    int64_t off_b = 5 + 2 + 3 + 10 + 4 * 12 + 5;
    snprintf(want, sizeof want, "uttA %s:5\nuttB %s:%lld\n", tmp_path("f.ark"), tmp_path("f.ark"),
             (long long)off_b);
    CHECK(!strcmp((char *)buf, want));
    unsigned char ark[1024];
    size_t an = read_file(tmp_path("f.ark"), ark, sizeof ark);
    CHECK(an > (size_t)off_b && ark[5] == 0 && ark[6] == 'B' && ark[off_b] == 0);

    /* Read it back through the scp. */
    snprintf(spec, sizeof spec, "scp:%s", tmp_path("f.scp"));
    struct table_reader r;
    CHECK(table_reader_open(&r, spec, &holder_matrix) == 0);
    struct matrix m = {0};
    CHECK(table_reader_next(&r, &m) == 1 && !strcmp(table_reader_key(&r), "uttA"));
    CHECK(m.rows == 4 && m.cols == 3 && m.data[11] == 11);
    CHECK(table_reader_next(&r, &m) == 1 && m.rows == 2 && m.data[3] == 103);
    CHECK(table_reader_next(&r, &m) == 0);
    table_reader_close(&r);

    /* Ranges: rows 1..2, and rows 1..3 x cols 1..2 (inclusive). */
    char scp2[1500];
    snprintf(scp2, sizeof scp2, "r1 %s:5[1:2]\nr2 %s:5[1:3,1:2]\nr3 %s:5[:,2:2]\n",
             tmp_path("f.ark"), tmp_path("f.ark"), tmp_path("f.ark"));
    write_file(tmp_path("r.scp"), scp2, strlen(scp2));
    snprintf(spec, sizeof spec, "scp:%s", tmp_path("r.scp"));
    CHECK(table_reader_open(&r, spec, &holder_matrix) == 0);
    CHECK(table_reader_next(&r, &m) == 1 && m.rows == 2 && m.cols == 3 && m.data[0] == 3);
    CHECK(table_reader_next(&r, &m) == 1 && m.rows == 3 && m.cols == 2);
    CHECK(m.data[0] == 4 && m.data[1] == 5 && m.data[4] == 10);
    CHECK(table_reader_next(&r, &m) == 1 && m.rows == 4 && m.cols == 1 && m.data[3] == 11);
    CHECK(table_reader_next(&r, &m) == 0);
    table_reader_close(&r);
    /* Out-of-range is an error naming the range; with p it is skipped. */
    snprintf(scp2, sizeof scp2, "r1 %s:5[0:9]\nr2 %s\n", tmp_path("f.ark"), "/nonexistent/x");
    write_file(tmp_path("bad.scp"), scp2, strlen(scp2));
    snprintf(spec, sizeof spec, "scp:%s", tmp_path("bad.scp"));
    CHECK(table_reader_open(&r, spec, &holder_matrix) == 0);
    CHECK(table_reader_next(&r, &m) == -1);
    CHECK(strstr(error_get(), "out of bounds") && strstr(error_get(), "r1"));
    table_reader_close(&r);
    snprintf(spec, sizeof spec, "scp,p:%s", tmp_path("bad.scp"));
    CHECK(table_reader_open(&r, spec, &holder_matrix) == 0);
    CHECK(table_reader_next(&r, &m) == 0);
    table_reader_close(&r);

    /* Random access over the scp and over the archive. */
    snprintf(spec, sizeof spec, "scp:%s", tmp_path("f.scp"));
    CHECK(table_reader_open(&r, spec, &holder_matrix) == 0);
    CHECK(table_reader_lookup(&r, "uttB", &m) == 1 && m.rows == 2 && m.data[0] == 100);
    CHECK(table_reader_lookup(&r, "uttA", &m) == 1 && m.rows == 4);
    CHECK(table_reader_lookup(&r, "nope", &m) == 0);
    table_reader_close(&r);
    snprintf(spec, sizeof spec, "ark,s:%s", tmp_path("f.ark"));
    CHECK(table_reader_open(&r, spec, &holder_matrix) == 0);
    CHECK(table_reader_lookup(&r, "uttB", &m) == 1 && m.rows == 2 && m.data[3] == 103);
    CHECK(table_reader_lookup(&r, "uttA", &m) == 1 && m.rows == 4 && m.data[5] == 5);
    CHECK(table_reader_lookup(&r, "zzz", &m) == 0);
    table_reader_close(&r);
    matrix_release(&m);
    matrix_release(&a);
    matrix_release(&b);
}

/* Cut a small archive at every byte: never a crash; -1 with "truncated" and the file name, or
 * a clean end with fewer entries when the cut falls between entries. */
static void test_truncation_everywhere(void) {
    char spec[600];
    snprintf(spec, sizeof spec, "ark:%s", tmp_path("full.ark"));
    struct table_writer w;
    CHECK(table_writer_open(&w, spec, &holder_matrix) == 0);
    struct matrix a, b;
    make_matrix(&a, 2, 3, 0);
    make_matrix(&b, 1, 2, 5);
    CHECK(table_writer_write(&w, "u1", &a) == 0 && table_writer_write(&w, "u2", &b) == 0);
    CHECK(table_writer_close(&w) == 0);
    unsigned char full[512];
    size_t n = read_file(tmp_path("full.ark"), full, sizeof full);
    size_t boundary = 3 + 2 + 3 + 10 + 24;
    for (size_t cut = 0; cut < n; cut++) {
        write_file(tmp_path("cut.ark"), full, cut);
        snprintf(spec, sizeof spec, "ark:%s", tmp_path("cut.ark"));
        struct table_reader r;
        CHECK(table_reader_open(&r, spec, &holder_matrix) == 0);
        struct matrix m = {0};
        int got = 0, rc;
        while ((rc = table_reader_next(&r, &m)) > 0) got++;
        table_reader_close(&r);
        matrix_release(&m);
        if (cut == 0 || cut == boundary) {
            CHECK(rc == 0 && got == (cut ? 1 : 0));
        } else {
            if (rc != -1) printf("# cut %zu: rc %d got %d\n", cut, rc, got);
            CHECK(rc == -1);
            if (!strstr(error_get(), "truncated") || !strstr(error_get(), "cut.ark"))
                printf("# cut %zu: %s\n", cut, error_get());
            CHECK(strstr(error_get(), "truncated") && strstr(error_get(), "cut.ark"));
        }
    }
    /* With p a truncated archive just ends. */
    write_file(tmp_path("cut.ark"), full, n - 3);
    snprintf(spec, sizeof spec, "ark,p:%s", tmp_path("cut.ark"));
    struct table_reader r;
    CHECK(table_reader_open(&r, spec, &holder_matrix) == 0);
    struct matrix m = {0};
    CHECK(table_reader_next(&r, &m) == 1 && table_reader_next(&r, &m) == 0);
    table_reader_close(&r);
    matrix_release(&m);
    matrix_release(&a);
    matrix_release(&b);
}

static void test_background_reader(void) {
    char spec[600];
    snprintf(spec, sizeof spec, "ark:%s", tmp_path("bg.ark"));
    struct table_writer w;
    CHECK(table_writer_open(&w, spec, &holder_matrix) == 0);
    for (int i = 0; i < 200; i++) {
        struct matrix m;
        make_matrix(&m, 1 + i % 7, 3 + i % 4, (float)i);
        char key[32];
        snprintf(key, sizeof key, "k%03d", i);
        CHECK(table_writer_write(&w, key, &m) == 0);
        matrix_release(&m);
    }
    CHECK(table_writer_close(&w) == 0);
    struct table_reader plain, bg;
    CHECK(table_reader_open(&plain, spec, &holder_matrix) == 0);
    snprintf(spec, sizeof spec, "ark,bg:%s", tmp_path("bg.ark"));
    CHECK(table_reader_open(&bg, spec, &holder_matrix) == 0);
    struct matrix a = {0}, b = {0};
    int n = 0, ra, rb;
    while ((ra = table_reader_next(&plain, &a)) > 0) {
        rb = table_reader_next(&bg, &b);
        CHECK(rb == 1);
        CHECK(!strcmp(table_reader_key(&plain), table_reader_key(&bg)));
        CHECK(a.rows == b.rows && a.cols == b.cols);
        CHECK(!memcmp(a.data, b.data, sizeof(float) * (size_t)a.rows * a.cols));
        n++;
    }
    CHECK(ra == 0 && table_reader_next(&bg, &b) == 0 && n == 200);
    table_reader_close(&plain);
    table_reader_close(&bg);
    /* Closing a bg reader early stops its thread cleanly. */
    CHECK(table_reader_open(&bg, spec, &holder_matrix) == 0);
    CHECK(table_reader_next(&bg, &b) == 1);
    CHECK(table_reader_close(&bg) == 0);
    /* Errors cross the thread with their message. */
    write_file(tmp_path("bgbad.ark"), "k1 \0BFM \x04", 10);
    snprintf(spec, sizeof spec, "ark,bg:%s", tmp_path("bgbad.ark"));
    CHECK(table_reader_open(&bg, spec, &holder_matrix) == 0);
    CHECK(table_reader_next(&bg, &b) == -1 && strstr(error_get(), "truncated"));
    table_reader_close(&bg);
    matrix_release(&a);
    matrix_release(&b);
}

static void test_streams(void) {
    /* Write-then-rename: nothing under the final name until close; abort leaves nothing. */
    struct kout out;
    const char *p = tmp_path("out.bin");
    CHECK(kout_open(&out, p) == 0);
    CHECK(kout_write(&out, "hello", 5) == 0);
    CHECK(access(p, F_OK) != 0);
    CHECK(kout_close(&out) == 0);
    struct stat st;
    CHECK(stat(p, &st) == 0 && st.st_size == 5);
    const char *q = tmp_path("aborted.bin");
    CHECK(kout_open(&out, q) == 0);
    CHECK(kout_write(&out, "x", 1) == 0);
    kout_abort(&out);
    CHECK(access(q, F_OK) != 0);
    /* file:offset */
    char rx[600];
    snprintf(rx, sizeof rx, "%s:2", p);
    struct kin in;
    CHECK(kin_open(&in, rx) == 0);
    CHECK(kin_getc(&in) == 'l' && in.offset == 3);
    kin_close(&in);
    /* Pipes both ways, and a failing command is reported at close. */
    CHECK(kin_open(&in, "printf abc |") == 0);
    char buf[8] = {0};
    CHECK(kin_read(&in, buf, 3, "data") == 0 && !strcmp(buf, "abc"));
    CHECK(kin_at_eof(&in) && kin_close(&in) == 0);
    CHECK(kin_open(&in, "exit 3 |") == 0);
    CHECK(kin_at_eof(&in));
    CHECK(kin_close(&in) == -1 && strstr(error_get(), "status 3"));
    char wx[600];
    snprintf(wx, sizeof wx, "| cat > %s", tmp_path("piped"));
    CHECK(kout_open(&out, wx) == 0 && kout_write(&out, "xyz", 3) == 0 && kout_close(&out) == 0);
    unsigned char got[8];
    CHECK(read_file(tmp_path("piped"), got, sizeof got) == 3 && !memcmp(got, "xyz", 3));
    CHECK(kout_open(&out, "| exit 4") == 0);
    CHECK(kout_close(&out) == -1);
    /* Bad names. */
    CHECK(kin_open(&in, "/nonexistent/file") == -1 && strstr(error_get(), "cannot open"));
    CHECK(kin_open(&in, "| cmd") == -1);
    CHECK(kin_open(&in, "ark:foo") == -1);
    CHECK(kout_open(&out, "/nonexistent/dir/x") == -1);
    struct table_reader r;
    CHECK(table_reader_open(&r, "foo.ark", &holder_matrix) == -1);
    CHECK(table_reader_open(&r, "ark,scp:foo", &holder_matrix) == -1);
    struct table_writer w;
    CHECK(table_writer_open(&w, "scp,ark:a,b", &holder_matrix) == -1);
    CHECK(table_writer_open(&w, "ark,x:a", &holder_matrix) == -1);
    CHECK(io_is_table_specifier("ark,t:-") && io_is_table_specifier("scp:a.scp"));
    CHECK(!io_is_table_specifier("foo.mat") && !io_is_table_specifier("a.ark:12"));
}

/* Pipes are read with read(2) (what the pipe holds, not a whole buffer) and grown to a megabyte
 * both ways; a writer that trickles, and transfers larger than every buffer, arrive whole. */
static void test_pipe_buffers(void) {
    struct kin in;
    CHECK(kin_open(&in, "for i in 1 2 3; do printf abc; sleep 0.02; done |") == 0);
    char small[10] = {0};
    CHECK(kin_read(&in, small, 9, "data") == 0 && !strcmp(small, "abcabcabc"));
    CHECK(kin_at_eof(&in) && kin_close(&in) == 0);
    enum { big = 3 << 20 };
    CHECK(kin_open(&in, "head -c 3145728 /dev/zero | tr '\\0' x |") == 0);
    long max_pipe = 0;
    FILE *f = fopen("/proc/sys/fs/pipe-max-size", "r");
    if (f) {
        CHECK(fscanf(f, "%ld", &max_pipe) == 1);
        fclose(f);
    }
    if (max_pipe >= 1 << 20) CHECK(fcntl(fileno(in.f), F_GETPIPE_SZ) == 1 << 20);
    char *data = malloc(big + 1);
    CHECK(kin_read(&in, data, 5, "data") == 0);        /* through the buffer */
    CHECK(kin_read(&in, data + 5, big - 5, "data") == 0); /* past it, straight to data */
    int all_x = 1;
    for (int i = 0; i < big; i++) all_x &= data[i] == 'x';
    CHECK(all_x && kin_at_eof(&in) && kin_close(&in) == 0);
    char wx[600];
    snprintf(wx, sizeof wx, "| cat > %s", tmp_path("piped-big"));
    struct kout out;
    CHECK(kout_open(&out, wx) == 0);
    if (max_pipe >= 1 << 20) CHECK(fcntl(fileno(out.f), F_GETPIPE_SZ) == 1 << 20);
    for (int i = 0; i < big; i++) data[i] = (char)(i % 251);
    CHECK(kout_write(&out, data, 7) == 0 && kout_write(&out, data + 7, big - 7) == 0);
    CHECK(kout_close(&out) == 0);
    char *back = malloc(big + 1);
    CHECK(read_file(tmp_path("piped-big"), (unsigned char *)back, big + 1) == big);
    CHECK(!memcmp(back, data, big));
    free(back);
    free(data);
}

static void test_zlib(void) {
    unsigned char src[5000];
    for (size_t i = 0; i < sizeof src; i++) src[i] = (unsigned char)(i % 17);
    unsigned char *z;
    size_t zn;
    CHECK(io_deflate(src, sizeof src, 6, &z, &zn) == 0 && zn < sizeof src / 4);
    unsigned char back[5000];
    CHECK(io_inflate(z, zn, back, sizeof back) == 0 && !memcmp(back, src, sizeof src));
    CHECK(io_inflate(z, zn, back, sizeof back - 1) == -1);
    CHECK(io_inflate(z, zn - 3, back, sizeof back) == -1 && strstr(error_get(), "truncated"));
    unsigned char bad[64];
    memcpy(bad, z, 64);
    bad[10] ^= 0x55;
    bad[20] ^= 0x55;
    CHECK(io_inflate(bad, 64, back, sizeof back) == -1);
    free(z);
    CHECK(io_deflate(src, 0, -1, &z, &zn) == 0);
    CHECK(io_inflate(z, zn, back, 0) == 0);
    free(z);
}

int main(void) {
    if (test_tmpdir(tmpdir, sizeof tmpdir, "io-test")) return 1;
    TEST_RUN(test_fm_archive_by_hand);
    TEST_RUN(test_pipe_buffers);
    TEST_RUN(test_primitives_by_hand);
    TEST_RUN(test_text_mode);
    TEST_RUN(test_compressed_by_hand);
    TEST_RUN(test_compress_writer);
    TEST_RUN(test_int32_vector_holder_by_hand);
    TEST_RUN(test_scp_offsets_and_ranges);
    TEST_RUN(test_truncation_everywhere);
    TEST_RUN(test_background_reader);
    TEST_RUN(test_streams);
    TEST_RUN(test_zlib);
    if (test_tmpdir_remove(tmpdir)) return 1;
    TEST_MAIN_END();
}
