/* Model files: the token helpers the components use, and nnet_read / nnet_write. */
#include "nnet/nnet-internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- token helpers over the io layer ---- */

int nio_write_token(struct nnet_stream *s, const char *token) {
    return io_write_token(s->out, s->binary, token);
}

int nio_expect_token(struct nnet_stream *s, const char *token) {
    return io_expect_token(s->in, s->binary, token);
}

int nio_read_token(struct nnet_stream *s, char *buf, size_t size) {
    return io_read_token(s->in, s->binary, buf, size);
}

int nio_try_token(struct nnet_stream *s, const char *token) {
    char buf[256];
    if (io_peek_token(s->in, s->binary, buf, sizeof buf)) return -1;
    if (strcmp(buf, token)) return 0;
    return io_read_token(s->in, s->binary, buf, sizeof buf) ? -1 : 1;
}

int nio_write_int(struct nnet_stream *s, int v) { return io_write_int32(s->out, s->binary, v); }

int nio_read_int(struct nnet_stream *s, int *v) {
    int32_t x;
    if (io_read_int32(s->in, s->binary, &x)) return -1;
    *v = x;
    return 0;
}

int nio_write_float(struct nnet_stream *s, float v) { return io_write_float(s->out, s->binary, v); }

int nio_read_float(struct nnet_stream *s, float *v) { return io_read_float(s->in, s->binary, v); }

int nio_write_bool(struct nnet_stream *s, int v) { return io_write_bool(s->out, s->binary, v); }

int nio_read_bool(struct nnet_stream *s, int *v) { return io_read_bool(s->in, s->binary, v); }

int nio_write_int_vector(struct nnet_stream *s, const int *v, int n) {
    struct int32_vec iv = {xmalloc((n ? n : 1) * sizeof(int32_t)), n};
    for (int i = 0; i < n; i++)
        iv.data[i] = v[i];
    int r = io_write_int32_vector(s->out, s->binary, &iv);
    int32_vec_release(&iv);
    return r;
}

int nio_read_int_vector(struct nnet_stream *s, int **v, int *n) {
    struct int32_vec iv = {0};
    if (io_read_int32_vector(s->in, s->binary, &iv)) return -1;
    *v = xmalloc((iv.dim ? iv.dim : 1) * sizeof **v);
    for (int i = 0; i < iv.dim; i++)
        (*v)[i] = iv.data[i];
    *n = iv.dim;
    int32_vec_release(&iv);
    return 0;
}

/* The io layer writes host objects; parameters may live on the GPU. */
int nio_write_matrix(struct nnet_stream *s, const struct matrix *m) {
    struct matrix h = {0};
    int r = io_write_matrix(s->out, s->binary, matrix_on_host(m, &h));
    matrix_release(&h);
    return r;
}

int nio_read_matrix(struct nnet_stream *s, struct matrix *m) {
    return io_read_matrix(s->in, s->binary, m);
}

int nio_write_vector(struct nnet_stream *s, const struct vector *v) {
    struct vector h = {0};
    int r = io_write_vector(s->out, s->binary, vector_on_host(v, &h));
    vector_release(&h);
    return r;
}

int nio_read_vector(struct nnet_stream *s, struct vector *v) {
    return io_read_vector(s->in, s->binary, v);
}

int nio_expect_int(struct nnet_stream *s, const char *token, int *v) {
    return nio_expect_token(s, token) || nio_read_int(s, v) ? -1 : 0;
}

int nio_expect_float(struct nnet_stream *s, const char *token, float *v) {
    return nio_expect_token(s, token) || nio_read_float(s, v) ? -1 : 0;
}

/* ---- the network ---- */

/* More components than this is certainly a corrupt file. */
#define NNET_MAX_COMPONENTS 100000

/* A graph network's keys before a component (version 2): <Name> NAME and <Input> DESCRIPTOR,
 * each at most once, in that order. Returns 0 with the component's token in `token`. */
static int read_wiring(struct nnet_stream *s, int version, char *token, size_t size, char **name,
                       char **input) {
    for (;;) {
        if (nio_read_token(s, token, size)) return -1;
        int is_name = !strcmp(token, "<Name>"), is_input = !strcmp(token, "<Input>");
        if (!is_name && !is_input) return 0;
        if (version < 2) return error_set("%s in a version %d model", token, version);
        char **dst = is_name ? name : input;
        if (*dst || (is_name && *input)) return error_set("%s out of place", token);
        if (nio_read_token(s, token, size)) return -1;
        *dst = xstrdup(token);
    }
}

static int read_component(struct nnet *n, struct nnet_stream *s, int version, int index) {
    char token[IO_MAX_TOKEN], *name = NULL, *input = NULL;
    if (read_wiring(s, version, token, sizeof token, &name, &input)) {
        free(name);
        free(input);
        return error_wrap("component %d: ", index);
    }
    size_t len = strlen(token);
    const struct component_ops *ops = NULL;
    if (len > 2 && token[0] == '<' && token[len - 1] == '>' && token[1] != '/')
        ops = component_ops_find(token);
    struct component *c = NULL;
    int bad = !ops;
    if (!ops) error_set("unknown component type '%.200s'", token);
    if (!bad) {
        c = xcalloc(1, sizeof *c);
        c->ops = ops;
        char end[IO_MAX_TOKEN + 4];
        snprintf(end, sizeof end, "</%.*s>", (int)(len - 2), token + 1);
        bad = ops->read(c, s) || nio_expect_token(s, end);
        if (!bad) c->num_params = ops->updatable ? c->params.dim : 0;
        bad = bad || nnet_append_node(n, c, name, input);
    }
    free(name);
    free(input);
    if (!bad) return 0;
    component_free(c);
    if (!ops) return error_wrap("component %d: ", index);
    return error_wrap("component %d (%.200s): ", index, token);
}

struct nnet *nnet_read(struct kin *in, int binary) {
    struct nnet_stream s = {in, NULL, binary};
    int version = 0, num;
    if (nio_expect_token(&s, "<Nnet>")) return NULL;
    int got = nio_try_token(&s, "<Version>");
    if (got < 0) return NULL;
    if (got) {
        if (nio_read_int(&s, &version)) return NULL;
        if (version < 1 || version > NNET_FORMAT_VERSION) {
            error_set("unsupported model version %d (this program reads up to %d)", version,
                      NNET_FORMAT_VERSION);
            return NULL;
        }
    }
    if (nio_expect_int(&s, "<NumComponents>", &num)) return NULL;
    if (num < 1 || num > NNET_MAX_COMPONENTS) {
        error_set("bad <NumComponents> %d", num);
        return NULL;
    }
    if (nio_expect_token(&s, "<Components>")) return NULL;
    struct nnet *n = nnet_new();
    for (int i = 0; i < num; i++) {
        if (read_component(n, &s, version, i)) {
            nnet_free(n);
            return NULL;
        }
    }
    if (nio_expect_token(&s, "</Components>") || nio_expect_token(&s, "</Nnet>") ||
        graph_check_used(n)) {
        nnet_free(n);
        return NULL;
    }
    nnet_finalize(n);
    nnet_set_seed(n, 0);
    return n;
}

int nnet_write(const struct nnet *n, struct kout *out, int binary) {
    struct nnet_stream s = {NULL, out, binary};
    int num = nnet_num_components(n);
    if (nio_write_token(&s, "<Nnet>") || nio_write_token(&s, "<Version>") ||
        nio_write_int(&s, n->graph ? NNET_FORMAT_VERSION : 1) ||
        nio_write_token(&s, "<NumComponents>") ||
        nio_write_int(&s, num) || nio_write_token(&s, "<Components>"))
        return -1;
    if (!binary && kout_write(out, "\n", 1)) return -1;
    for (int i = 0; i < num; i++) {
        const struct component *c = nnet_component(n, i);
        const struct wiring *w = &n->wires[i];
        if ((w->name && (nio_write_token(&s, "<Name>") || nio_write_token(&s, w->name))) ||
            (w->input && (nio_write_token(&s, "<Input>") || nio_write_token(&s, w->input))))
            return -1;
        char token[128];
        snprintf(token, sizeof token, "<%s>", c->ops->type);
        if (nio_write_token(&s, token) || c->ops->write(c, &s)) return -1;
        snprintf(token, sizeof token, "</%s>", c->ops->type);
        if (nio_write_token(&s, token)) return -1;
        if (!binary && kout_write(out, "\n", 1)) return -1;
    }
    if (nio_write_token(&s, "</Components>") || nio_write_token(&s, "</Nnet>")) return -1;
    if (!binary && kout_write(out, "\n", 1)) return -1;
    return 0;
}

struct nnet *nnet_read_file(const char *rxfilename) {
    struct kin in = {0};
    int binary;
    if (kin_open(&in, rxfilename)) return NULL;
    struct nnet *n = NULL;
    if (!io_read_header(&in, &binary)) n = nnet_read(&in, binary);
    if (!n) {
        kin_close(&in);
        return NULL;
    }
    if (kin_close(&in)) {
        nnet_free(n);
        return NULL;
    }
    return n;
}

int nnet_write_file(const struct nnet *n, const char *wxfilename, int binary) {
    struct kout out = {0};
    if (kout_open(&out, wxfilename)) return -1;
    if (io_write_header(&out, binary) || nnet_write(n, &out, binary)) {
        kout_abort(&out);
        return -1;
    }
    return kout_close(&out);
}
