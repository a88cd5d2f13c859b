/* Kaldi Posterior objects (hmm/posterior.h): per frame a list of (int32 id, float weight). */
#include "io/io.h"
#include "io/io-internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void posterior_release(struct posterior *p) {
    free(p->start);
    free(p->index);
    free(p->weight);
    memset(p, 0, sizeof *p);
}

static void post_reserve(struct posterior *p, int frames, int pairs, int *fcap, int *pcap) {
    if (frames + 1 > *fcap) {
        while (frames + 1 > *fcap) *fcap = *fcap ? 2 * *fcap : 64;
        p->start = xrealloc(p->start, sizeof(int) * (size_t)*fcap);
    }
    if (pairs > *pcap) {
        while (pairs > *pcap) *pcap = *pcap ? 2 * *pcap : 64;
        p->index = xrealloc(p->index, sizeof(int32_t) * (size_t)*pcap);
        p->weight = xrealloc(p->weight, sizeof(float) * (size_t)*pcap);
    }
}

static int is_blank(int c) { return c == ' ' || c == '\t' || c == '\r'; }

/* Text: "[ id w id w ] [ ] ...\n" to the end of the line. */
static int post_read_text(struct kin *in, struct posterior *p) {
    int fcap = 0, pcap = 0, frames = 0, pairs = 0;
    post_reserve(p, 0, 0, &fcap, &pcap);
    p->start[0] = 0;
    for (;;) {
        int c;
        while ((c = kin_peek(in)) >= 0 && is_blank(c)) kin_getc(in);
        if (c < 0 || c == '\n') {
            if (c == '\n') kin_getc(in);
            break;
        }
        if (c != '[') return kin_error(in, "posterior: expected '[' of frame %d", frames);
        kin_getc(in);
        for (;;) {
            while ((c = kin_peek(in)) >= 0 && is_blank(c)) kin_getc(in);
            if (c == ']') {
                kin_getc(in);
                break;
            }
            if (c < 0 || c == '\n')
                return kin_error(in, "posterior: frame %d has no closing ']'", frames);
            int32_t id;
            float w;
            if (io_read_int32(in, 0, &id) || io_read_float(in, 0, &w))
                return error_wrap("posterior frame %d: ", frames);
            post_reserve(p, frames, pairs + 1, &fcap, &pcap);
            p->index[pairs] = id;
            p->weight[pairs] = w;
            pairs++;
        }
        frames++;
        post_reserve(p, frames, pairs, &fcap, &pcap);
        p->start[frames] = pairs;
    }
    p->num_frames = frames;
    return 0;
}

static int post_read_binary(struct kin *in, struct posterior *p) {
    int32_t n;
    if (io_read_int32(in, 1, &n)) return -1;
    int64_t left = kin_remaining(in);
    if (n < 0) return kin_error(in, "posterior: invalid number of frames %d", (int)n);
    if (left >= 0 && (int64_t)n * 5 > left)
        return kin_error(in, "truncated posterior: %d frames, %lld bytes left", (int)n,
                         (long long)left);
    int fcap = 0, pcap = 0, pairs = 0;
    post_reserve(p, 0, 0, &fcap, &pcap);
    p->start[0] = 0;
    for (int t = 0; t < n; t++) {
        int32_t k;
        if (io_read_int32(in, 1, &k)) return error_wrap("posterior frame %d: ", t);
        left = kin_remaining(in);
        if (k < 0 || (int64_t)pairs + k > INT32_MAX / 2)
            return kin_error(in, "posterior frame %d: invalid number of pairs %d", t, (int)k);
        if (left >= 0 && (int64_t)k * 10 > left)
            return kin_error(in, "truncated posterior: frame %d has %d pairs, %lld bytes left", t,
                             (int)k, (long long)left);
        post_reserve(p, t + 1, pairs + k, &fcap, &pcap);
        for (int j = 0; j < k; j++, pairs++)
            if (io_read_int32(in, 1, &p->index[pairs]) || io_read_float(in, 1, &p->weight[pairs]))
                return error_wrap("posterior frame %d: ", t);
        p->start[t + 1] = pairs;
        p->num_frames = t + 1;
    }
    p->num_frames = n;
    return 0;
}

static int post_hread(struct kin *in, void *obj) {
    struct posterior *p = obj;
    posterior_release(p);
    int binary;
    if (io_read_header(in, &binary)) return -1;
    int rc = binary ? post_read_binary(in, p) : post_read_text(in, p);
    if (rc) posterior_release(p);
    return rc;
}

int posterior_write(struct kout *out, int binary, const struct posterior *p) {
    if (binary) {
        if (io_write_int32(out, 1, p->num_frames)) return -1;
        for (int t = 0; t < p->num_frames; t++) {
            if (io_write_int32(out, 1, p->start[t + 1] - p->start[t])) return -1;
            for (int j = p->start[t]; j < p->start[t + 1]; j++)
                if (io_write_int32(out, 1, p->index[j]) || io_write_float(out, 1, p->weight[j]))
                    return -1;
        }
        return 0;
    }
    for (int t = 0; t < p->num_frames; t++) {
        if (kout_printf(out, "[ ")) return -1;
        for (int j = p->start[t]; j < p->start[t + 1]; j++)
            if (kout_printf(out, "%d %.7g ", (int)p->index[j], p->weight[j])) return -1;
        if (kout_printf(out, "] ")) return -1;
    }
    return kout_write(out, "\n", 1);
}

static int post_hwrite(struct kout *out, int binary, const void *obj) {
    if (io_write_header(out, binary)) return -1;
    return posterior_write(out, binary, obj);
}
static void post_hfree(void *obj) { posterior_release(obj); }
const struct holder_ops holder_posterior = {"posterior", sizeof(struct posterior), post_hread,
                                            post_hwrite, post_hfree, NULL};

/* ---- targets: a Posterior or an int32 vector, told apart from the bytes ---- */

static int32_t le32(const unsigned char *b) {
    return (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                     (uint32_t)b[3] << 24);
}

/* Binary: both forms are runs of (0x04, 4 bytes). Read as a Posterior, an int32 vector of pdf ids
 * puts small integers where the weights go, which are denormal floats (bits < 2^23) or zero; a
 * real Posterior's weights are normal floats or zero, with at least one non-zero. Looks at up to
 * 1 MiB (a longer object decides on what that part shows). 1 = Posterior, 0 = int32 vector. */
static int looks_like_binary_posterior(struct kin *in) {
    size_t avail;
    const unsigned char *b = kin_peek_bytes(in, 1u << 20, &avail);
    size_t pos = 0;
    int nonzero = 0;
#define NEXT(v) \
    do { \
        if (pos + 5 > avail) return nonzero; \
        if (b[pos] != 4) return 0; \
        (v) = le32(b + pos + 1); \
        pos += 5; \
    } while (0)
    int32_t n;
    NEXT(n);
    if (n < 0) return 0;
    for (int32_t t = 0; t < n; t++) {
        int32_t k;
        NEXT(k);
        if (k < 0) return 0;
        for (int32_t j = 0; j < k; j++) {
            int32_t id, wbits;
            NEXT(id);
            NEXT(wbits);
            float w;
            memcpy(&w, &wbits, 4);
            if (id < 0) return 0;
            if (w != 0.0f) {
                if (fpclassify(w) != FP_NORMAL) return 0;
                nonzero = 1;
            }
        }
    }
#undef NEXT
    return nonzero;
}

void posterior_from_ids(struct posterior *p, const struct int32_vec *ids) {
    int T = ids->dim;
    posterior_release(p);
    p->num_frames = T;
    p->start = xmalloc(sizeof(int) * (size_t)(T + 1));
    p->index = xmalloc(sizeof(int32_t) * (size_t)(T ? T : 1));
    p->weight = xmalloc(sizeof(float) * (size_t)(T ? T : 1));
    for (int t = 0; t <= T; t++) p->start[t] = t;
    for (int t = 0; t < T; t++) {
        p->index[t] = ids->data[t];
        p->weight[t] = 1.0f;
    }
}

static int targets_hread(struct kin *in, void *obj) {
    struct posterior *p = obj;
    posterior_release(p);
    int binary;
    if (io_read_header(in, &binary)) return -1;
    int is_post;
    if (binary) {
        is_post = looks_like_binary_posterior(in);
    } else {
        int c;
        while ((c = kin_peek(in)) >= 0 && is_blank(c)) kin_getc(in);
        is_post = c == '[';
    }
    int rc;
    if (is_post) {
        rc = binary ? post_read_binary(in, p) : post_read_text(in, p);
    } else {
        struct int32_vec v = {0};
        rc = io_read_basic_int32_vector(in, binary, &v);
        if (!rc) posterior_from_ids(p, &v);
        int32_vec_release(&v);
    }
    if (rc) posterior_release(p);
    return rc;
}
const struct holder_ops holder_targets = {"targets", sizeof(struct posterior), targets_hread,
                                          post_hwrite, post_hfree, NULL};
