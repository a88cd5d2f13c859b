/* The library side of nnet-get-egs, nnet-shuffle-egs, nnet-copy-egs, nnet-subset-egs and
 * nnet-egs-info (egs.h). */
#include "egs/egs.h"
#include "egs/egs-internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A keyed example held in memory (shuffle, subset). */
struct item {
    char *key;
    struct example eg;
};

static void item_release(struct item *it) {
    free(it->key);
    example_release(&it->eg);
    it->key = NULL;
}

/* Takes the reader's current example into it (the reader's copy is left zeroed). */
static void item_take(struct item *it, const struct table_reader *r, struct example *eg) {
    it->key = xstrdup(table_reader_key(r));
    it->eg = *eg;
    memset(eg, 0, sizeof *eg);
}

static int write_eg(struct table_writer *w, const char *key, const struct example *eg) {
    if (table_writer_write(w, key, eg)) return error_wrap("writing '%s': ", w->wspecifier);
    return 0;
}

/* Close a reader and a writer; rc is the status so far. Returns 0 only if all went well. After
 * an error the first message is kept (a pipe we stopped reading then dies of SIGPIPE, say) and
 * the writer's temporaries are removed. */
static int finish(struct table_reader *r, struct table_writer *w, int rc) {
    char *saved = rc ? xstrdup(error_get()) : NULL;
    if (r && table_reader_close(r) && !rc) rc = -1;
    if (w) {
        if (rc)
            table_writer_abort(w);
        else if (table_writer_close(w))
            rc = -1;
    }
    if (saved) {
        error_set("%s", saved);
        free(saved);
    }
    return rc;
}

/* ---- nnet-get-egs ---- */

int egs_cut_utterance_post(const char *utt, const struct matrix *feats,
                           const struct posterior *post, const struct egs_get_opts *opts,
                           int (*emit)(void *ctx, const char *key, const struct example *eg),
                           void *ctx) {
    ASSERT(feats->device == MATRIX_CPU && feats->rows >= 1);
    ASSERT(post->num_frames == feats->rows);
    ASSERT(opts->num_frames >= 1 && opts->left_context >= 0 && opts->right_context >= 0);
    int T = feats->rows, D = feats->cols, F = opts->num_frames;
    int L = opts->left_context, R = opts->right_context, rows = L + F + R;
    struct matrix in;
    matrix_init_on(&in, rows, D, MATRIX_CPU);
    int *start = xmalloc(sizeof(int) * (F + 1));
    struct example eg;
    example_init(&eg);
    size_t keylen = strlen(utt) + 16;
    char *key = xmalloc(keylen);
    int rc = 0;
    for (int t0 = 0; t0 < T && !rc; t0 += F) {
        /* context outside the utterance repeats its first or last frame (Kaldi) */
        for (int j = 0; j < rows; j++) {
            int t = t0 - L + j;
            t = t < 0 ? 0 : t >= T ? T - 1 : t;
            memcpy(in.data + (size_t)j * in.stride, feats->data + (size_t)t * feats->stride,
                   sizeof(float) * D);
        }
        /* frames past the end keep no labels */
        int actual = T - t0 < F ? T - t0 : F;
        int base = post->start[t0];
        for (int i = 0; i <= F; i++) start[i] = post->start[t0 + (i < actual ? i : actual)] - base;
        example_set_labels(&eg, F, start, post->index + base, post->weight + base);
        rc = example_set_input(&eg, &in, L, opts->compress);
        if (rc) {
            error_wrap("utterance '%s' frame %d: ", utt, t0);
            break;
        }
        snprintf(key, keylen, "%s-%d", utt, t0);
        rc = emit(ctx, key, &eg);
    }
    example_release(&eg);
    matrix_release(&in);
    free(start);
    free(key);
    return rc;
}

int egs_cut_utterance(const char *utt, const struct matrix *feats, const int32_t *labels,
                      const struct egs_get_opts *opts,
                      int (*emit)(void *ctx, const char *key, const struct example *eg),
                      void *ctx) {
    int T = feats->rows;
    struct posterior p = {T, xmalloc(sizeof(int) * (size_t)(T + 1)),
                          xmalloc(sizeof(int32_t) * (size_t)(T ? T : 1)),
                          xmalloc(sizeof(float) * (size_t)(T ? T : 1))};
    for (int t = 0; t <= T; t++) p.start[t] = t;
    for (int t = 0; t < T; t++) {
        p.index[t] = labels[t];
        p.weight[t] = 1.0f;
    }
    int rc = egs_cut_utterance_post(utt, feats, &p, opts, emit, ctx);
    posterior_release(&p);
    return rc;
}

/* Targets are class indices: >= 0, and < num_pdfs when it is known (> 0); weights finite. */
static int check_labels(const char *rspec, const char *key, const struct posterior *v,
                        int num_pdfs) {
    for (int t = 0; t < v->num_frames; t++)
        for (int k = v->start[t]; k < v->start[t + 1]; k++) {
            int32_t i = v->index[k];
            if (i < 0 || (num_pdfs > 0 && i >= num_pdfs)) {
                if (num_pdfs > 0)
                    return error_set("labels '%s': key '%s': label %d at frame %d is out of range "
                                     "[0, %d) (--num-pdfs)", rspec, key, (int)i, t, num_pdfs);
                return error_set("labels '%s': key '%s': label %d at frame %d is negative", rspec,
                                 key, (int)i, t);
            }
            if (!isfinite(v->weight[k]))
                return error_set("labels '%s': key '%s': weight %g at frame %d is not finite",
                                 rspec, key, v->weight[k], t);
        }
    return 0;
}

/* egs_get's writing side: examples arrive stored as float; the first EGS_COMPRESS_PROBE are
 * held until the storage format is chosen (egs.h), then every example is stored in it, measured
 * against its float original and written. */
struct get_sink {
    struct table_writer *w;
    int asked, compress; /* compress: chosen, or -1 while probing */
    struct item *probe;
    int num_probe;
    struct egs_compress_check check;
    struct example tmp;
    struct egs_pq_encoder enc; /* PQ for examples of <= EGS_PQ_MAX_ROWS rows (egs.h) */
};

static int bits_of(int compress) { return compress == EGS_COMPRESS_16BIT ? 16 : 8; }

/* An encoder for compress (8bit/16bit; else an 8-bit one that egs_store_input never uses) whose
 * ranges cover the PQ-sized inputs of n probe examples. */
static void probe_encoder(struct egs_pq_encoder *e, int compress, const struct item *probe,
                          int n, const struct matrix *inputs, const int *frames) {
    egs_pq_encoder_init(e, bits_of(compress));
    for (int i = 0; i < n; i++) {
        const struct matrix *m = inputs ? &inputs[i] : &probe[i].eg.input;
        if (egs_pq_applies(m->rows, inputs ? frames[i] : probe[i].eg.num_frames))
            egs_pq_encoder_observe(e, m);
    }
}

static int sink_store_write(struct get_sink *k, const char *key, const struct example *eg) {
    example_copy(&k->tmp, eg);
    if (example_recompress_with(&k->tmp, k->compress, &k->enc))
        return error_wrap("key '%s': ", key);
    if (egs_compress_check_add(&k->check, &eg->input, &k->tmp)) return error_wrap("key '%s': ", key);
    return write_eg(k->w, key, &k->tmp);
}

static const char *compress_name(int c) {
    return c == EGS_COMPRESS_8BIT ? "8bit" : c == EGS_COMPRESS_16BIT ? "16bit"
           : c == EGS_COMPRESS_ZLIB ? "zlib" : c == EGS_COMPRESS_KALDI ? "kaldi" : "none";
}

/* Choose the format on the probe (the asked one, or finer ones past the bound), then write it. */
static int sink_decide(struct get_sink *k) {
    int c = k->asked;
    while (c == EGS_COMPRESS_8BIT || c == EGS_COMPRESS_16BIT) {
        struct egs_compress_check chk;
        egs_compress_check_init(&chk);
        struct egs_pq_encoder trial;
        probe_encoder(&trial, c, k->probe, k->num_probe, NULL, NULL);
        int rc = 0;
        for (int i = 0; i < k->num_probe && !rc; i++) {
            example_copy(&k->tmp, &k->probe[i].eg);
            rc = example_recompress_with(&k->tmp, c, &trial) ||
                 egs_compress_check_add(&chk, &k->probe[i].eg.input, &k->tmp);
        }
        int dim;
        double worst = egs_compress_check_worst(&chk, &dim);
        egs_compress_check_release(&chk);
        egs_pq_encoder_release(&trial);
        if (rc) return -1;
        if (worst <= EGS_COMPRESS_MAX_REL_ERROR) break;
        int next = c == EGS_COMPRESS_8BIT ? EGS_COMPRESS_16BIT : EGS_COMPRESS_ZLIB;
        WARN("--compress=%s would destroy features: on the first %d examples its RMS error in "
             "input dimension %d is %.3g of that dimension's standard deviation (bound %g; a "
             "dimension's outliers far beyond its usual values widen its range, and examples of "
             "more than %d rows keep Kaldi's per-example ranges); using %s instead",
             compress_name(c), k->num_probe, dim, worst, EGS_COMPRESS_MAX_REL_ERROR,
             EGS_PQ_MAX_ROWS, compress_name(next));
        c = next;
    }
    k->compress = c;
    /* the same ranges as the trial that passed: the probe is stored as it was measured */
    egs_pq_encoder_release(&k->enc);
    probe_encoder(&k->enc, c, k->probe, k->num_probe, NULL, NULL);
    int rc = 0;
    for (int i = 0; i < k->num_probe; i++) {
        if (!rc) rc = sink_store_write(k, k->probe[i].key, &k->probe[i].eg);
        item_release(&k->probe[i]);
    }
    k->num_probe = 0;
    return rc;
}

static int emit_to_sink(void *ctx, const char *key, const struct example *eg) {
    struct get_sink *k = ctx;
    if (k->compress >= 0) return sink_store_write(k, key, eg);
    struct item *it = &k->probe[k->num_probe++];
    it->key = xstrdup(key);
    example_init(&it->eg);
    example_copy(&it->eg, eg);
    return k->num_probe == EGS_COMPRESS_PROBE ? sink_decide(k) : 0;
}

int egs_get(const char *feats_rspec, const char *labels_rspec, const char *egs_wspec,
            const struct egs_get_opts *opts, struct egs_stats *st) {
    memset(st, 0, sizeof *st);
    st->worst_dim = -1;
    struct table_reader feats, labels;
    struct table_writer w;
    memset(&feats, 0, sizeof feats);
    memset(&labels, 0, sizeof labels);
    memset(&w, 0, sizeof w);
    if (table_reader_open(&labels, labels_rspec, &holder_targets))
        return error_wrap("cannot open '%s': ", labels_rspec);
    if (table_reader_open(&feats, feats_rspec, &holder_matrix)) {
        error_wrap("cannot open '%s': ", feats_rspec);
        return finish(&labels, NULL, -1);
    }
    if (table_writer_open(&w, egs_wspec, &holder_example)) {
        error_wrap("cannot open '%s': ", egs_wspec);
        finish(&labels, NULL, -1);
        return finish(&feats, NULL, -1);
    }
    struct get_sink sink = {&w, opts->compress, -1, NULL, 0, {0}, {0}, {0}};
    egs_pq_encoder_init(&sink.enc, bits_of(opts->compress));
    sink.probe = xcalloc(EGS_COMPRESS_PROBE, sizeof *sink.probe);
    egs_compress_check_init(&sink.check);
    example_init(&sink.tmp);
    struct egs_get_opts float_opts = *opts;
    float_opts.compress = EGS_COMPRESS_NONE;
    struct matrix m = {0};
    struct posterior lab = {0};
    int rc = 0, got;
    while ((got = table_reader_next(&feats, &m)) == 1) {
        const char *utt = table_reader_key(&feats);
        if (io_check_finite(&m)) {
            rc = error_wrap("features '%s': key '%s': ", feats_rspec, utt);
            break;
        }
        /* Kaldi's random access: an scp or a seekable archive is indexed (keys only), a pipe
         * read as far as needed; nothing of the corpus is held beyond its index */
        posterior_release(&lab);
        int found = table_reader_lookup(&labels, utt, &lab);
        if (found < 0) {
            rc = error_wrap("reading labels '%s': ", labels_rspec);
            break;
        }
        if (!found) {
            WARN("no labels for utterance %s", utt);
            st->num_skipped++;
            continue;
        }
        if ((rc = check_labels(labels_rspec, utt, &lab, opts->num_pdfs))) break;
        if (lab.num_frames != m.rows) {
            WARN("utterance %s has %d labels for %d frames", utt, lab.num_frames, m.rows);
            st->num_skipped++;
            continue;
        }
        if (m.rows == 0) {
            WARN("utterance %s has no frames", utt);
            st->num_skipped++;
            continue;
        }
        if ((rc = egs_cut_utterance_post(utt, &m, &lab, &float_opts, emit_to_sink, &sink)))
            break;
        st->num_read++;
    }
    if (got < 0) rc = error_wrap("reading features '%s': ", feats_rspec);
    if (!rc && sink.compress < 0) rc = sink_decide(&sink);
    for (int i = 0; i < sink.num_probe; i++) item_release(&sink.probe[i]);
    free(sink.probe);
    st->num_written = w.num_written;
    st->compress_used = sink.compress < 0 ? opts->compress : sink.compress;
    st->worst_rel_error = egs_compress_check_worst(&sink.check, &st->worst_dim);
    if (!rc && (st->compress_used == EGS_COMPRESS_8BIT || st->compress_used == EGS_COMPRESS_16BIT ||
                st->compress_used == EGS_COMPRESS_KALDI)) {
        if (st->worst_rel_error > EGS_COMPRESS_MAX_REL_ERROR)
            WARN("--compress=%s: worst RMS error %.3g of a dimension's standard deviation (dimension "
                 "%d) over all examples, past the bound %g: use --compress=zlib or none",
                 compress_name(st->compress_used), st->worst_rel_error, st->worst_dim,
                 EGS_COMPRESS_MAX_REL_ERROR);
        else
            LOG("--compress=%s: worst RMS error %.3g of a dimension's standard deviation (dimension "
                "%d; bound %g)", compress_name(st->compress_used), st->worst_rel_error,
                st->worst_dim, EGS_COMPRESS_MAX_REL_ERROR);
    }
    if (!rc && sink.enc.num_tables)
        LOG("examples stored with per-dimension ranges (PQ): %lld range table%s",
            sink.enc.num_tables, sink.enc.num_tables == 1 ? "" : "s");
    egs_pq_encoder_release(&sink.enc);
    egs_compress_check_release(&sink.check);
    example_release(&sink.tmp);
    matrix_release(&m);
    posterior_release(&lab);
    rc = finish(&labels, NULL, rc);
    return finish(&feats, &w, rc);
}

/* ---- nnet-shuffle-egs ---- */

static int open_pair(struct table_reader *r, const char *in_rspec, struct table_writer *w,
                     const char *out_wspec) {
    memset(r, 0, sizeof *r);
    memset(w, 0, sizeof *w);
    if (table_reader_open(r, in_rspec, &holder_example))
        return error_wrap("cannot open '%s': ", in_rspec);
    if (out_wspec && table_writer_open(w, out_wspec, &holder_example)) {
        error_wrap("cannot open '%s': ", out_wspec);
        return finish(r, NULL, -1);
    }
    return 0;
}

/* The start of a pass of the tools below: the counts zeroed, the draws seeded, the archives
 * opened (open_pair). */
static int open_pass(struct egs_stats *st, struct rng *g, uint64_t srand, struct table_reader *r,
                     const char *in_rspec, struct table_writer *w, const char *out_wspec) {
    memset(st, 0, sizeof *st);
    rng_seed(g, srand);
    return open_pair(r, in_rspec, w, out_wspec);
}

/* Read every example of r into a new array *items (*n of them; the caller releases them): 0, or -1
 * (error_set) on a read error or, with need_label, at the first example without a first label. */
static int read_items(struct table_reader *r, const char *in_rspec, int need_label,
                      struct item **items, size_t *n) {
    struct example eg;
    example_init(&eg);
    size_t cap = 0;
    int rc = 0, got;
    *items = NULL;
    *n = 0;
    while ((got = table_reader_next(r, &eg)) == 1) {
        if (need_label && (example_num_labels(&eg) < 1 || eg.label_index[0] < 0)) {
            rc = error_set("reading '%s': key '%s': no label to balance on", in_rspec,
                           table_reader_key(r));
            break;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 1024;
            *items = xrealloc(*items, sizeof **items * cap);
        }
        item_take(&(*items)[(*n)++], r, &eg);
    }
    example_release(&eg);
    if (!rc && got < 0) rc = error_wrap("reading '%s': ", in_rspec);
    return rc;
}

int egs_shuffle(const char *in_rspec, const char *out_wspec, int buffer_size, uint64_t srand,
                struct egs_stats *st) {
    ASSERT(buffer_size >= 0);
    struct table_reader r;
    struct table_writer w;
    struct rng g;
    if (open_pass(st, &g, srand, &r, in_rspec, &w, out_wspec)) return -1;
    struct example eg;
    example_init(&eg);
    struct item *items = NULL;
    size_t n = 0;
    int rc = 0, got;
    if (buffer_size == 0) {
        rc = read_items(&r, in_rspec, 0, &items, &n);
        st->num_read = (long long)n;
        if (!rc) {
            struct item **order = xmalloc(sizeof *order * (n ? n : 1));
            for (size_t i = 0; i < n; i++)
                order[i] = &items[i];
            rng_shuffle(&g, order, n, sizeof *order);
            for (size_t i = 0; i < n && !rc; i++) {
                rc = write_eg(&w, order[i]->key, &order[i]->eg);
                if (!rc) st->num_written++;
            }
            free(order);
        }
        for (size_t i = 0; i < n; i++)
            item_release(&items[i]);
    } else {
        items = xcalloc((size_t)buffer_size, sizeof *items);
        struct item fresh;
        while ((got = table_reader_next(&r, &eg)) == 1) {
            st->num_read++;
            uint32_t j = rng_below(&g, (uint32_t)buffer_size);
            item_take(&fresh, &r, &eg);
            if (items[j].key) {
                rc = write_eg(&w, items[j].key, &items[j].eg);
                item_release(&items[j]);
                if (rc) {
                    item_release(&fresh);
                    break;
                }
                st->num_written++;
            }
            items[j] = fresh;
        }
        if (got < 0) rc = error_wrap("reading '%s': ", in_rspec);
        for (int j = 0; j < buffer_size; j++) {
            if (!items[j].key) continue;
            if (!rc) {
                rc = write_eg(&w, items[j].key, &items[j].eg);
                if (!rc) st->num_written++;
            }
            item_release(&items[j]);
        }
    }
    free(items);
    example_release(&eg);
    return finish(&r, &w, rc);
}

/* ---- nnet-shuffle-egs --class-balanced ---- */

int egs_shuffle_balanced(const char *in_rspec, const char *out_wspec, int per_class, int group,
                         uint64_t srand, struct egs_stats *st) {
    ASSERT(per_class >= 1 && group >= 1);
    struct table_reader r;
    struct table_writer w;
    struct rng g;
    if (open_pass(st, &g, srand, &r, in_rspec, &w, out_wspec)) return -1;
    struct item *items;
    size_t n;
    int rc = read_items(&r, in_rspec, 1, &items, &n), max_class = -1;
    st->num_read = (long long)n;
    for (size_t i = 0; i < n; i++)
        if (items[i].eg.label_index[0] > max_class) max_class = items[i].eg.label_index[0];
    /* the examples of each class (by first label), in reading order */
    int num_classes = max_class + 1, present = 0;
    size_t *count = xcalloc((size_t)num_classes + 1, sizeof *count);
    size_t **members = xcalloc((size_t)num_classes + 1, sizeof *members);
    for (size_t i = 0; i < n; i++) count[items[i].eg.label_index[0]]++;
    for (int c = 0; c < num_classes; c++) {
        members[c] = xmalloc(sizeof(size_t) * (count[c] ? count[c] : 1));
        present += count[c] > 0;
        count[c] = 0;
    }
    for (size_t i = 0; i < n; i++) {
        int c = items[i].eg.label_index[0];
        members[c][count[c]++] = i;
    }
    /* groups of `group` blocks; each class gives per_class x group distinct examples to a group
     * (drawn anew for every group: iid across groups), per_class to each block */
    size_t block = (size_t)present * per_class;
    size_t groups = present ? n / (block * group) : 0;
    size_t need = (size_t)per_class * group;
    size_t *pick = xmalloc(sizeof(size_t) * (block * group > 0 ? block * group : 1));
    char key[64];
    for (size_t gi = 0; gi < groups && !rc; gi++) {
        size_t filled = 0;
        for (int c = 0; c < num_classes; c++) {
            if (!count[c]) continue;
            /* partial Fisher-Yates: the first min(need, count) of a random order; a class with
             * fewer members than needed repeats them (as the reference) */
            size_t take = need < count[c] ? need : count[c];
            for (size_t k = 0; k < take; k++) {
                size_t j = k + rng_below(&g, (uint32_t)(count[c] - k));
                size_t t = members[c][k];
                members[c][k] = members[c][j];
                members[c][j] = t;
            }
            for (size_t k = 0; k < need; k++) {
                size_t b = k / per_class; /* block of this draw */
                pick[b * block + filled + k % per_class] = members[c][k % take];
            }
            filled += per_class;
        }
        for (int b = 0; b < group && !rc; b++) {
            rng_shuffle(&g, pick + b * block, block, sizeof *pick);
            for (size_t k = 0; k < block && !rc; k++) {
                const struct item *it = &items[pick[b * block + k]];
                snprintf(key, sizeof key, "-d%lld", st->num_written);
                char *full = xmalloc(strlen(it->key) + strlen(key) + 1);
                strcpy(full, it->key);
                strcat(full, key);
                rc = write_eg(&w, full, &it->eg);
                free(full);
                if (!rc) st->num_written++;
            }
        }
    }
    if (!rc && groups == 0)
        rc = error_set("'%s': %zu examples of %d classes make no block of %d per class x %d",
                       in_rspec, n, present, per_class, group);
    for (int c = 0; c < num_classes; c++) free(members[c]);
    free(members);
    free(count);
    free(pick);
    for (size_t i = 0; i < n; i++) item_release(&items[i]);
    free(items);
    return finish(&r, &w, rc);
}

/* ---- nnet-copy-egs ---- */

/* An example read and the outputs it goes to (drawn when read, so that the random stream is the
 * same whether or not it waits in the probe). */
struct copy_item {
    char *key;
    struct example eg;
    int n, *outs;
};

struct copy_ctx {
    struct table_writer *w;
    int compress, lossy;
    struct egs_pq_encoder enc;
    struct egs_compress_check check;
    struct matrix orig;
    struct egs_stats *st;
};

/* Re-store (with compress) and write one example to its outputs. */
static int copy_write(struct copy_ctx *c, struct copy_item *it) {
    struct example *eg = &it->eg;
    if (it->n && c->compress != EGS_COMPRESS_KEEP) {
        /* the error this copy adds: against the input as read (decoded) */
        struct matrix view = {0};
        int rc = 0;
        if (c->lossy) {
            matrix_resize(&c->orig, eg->rows, example_input_dim(eg));
            view = matrix_view(&c->orig, 0, eg->rows, 0, eg->cols);
            int spk = eg->spk_dim;
            eg->spk_dim = 0;
            rc = example_input_decode(eg, &view);
            eg->spk_dim = spk;
        }
        if (rc || example_recompress_with(eg, c->compress, &c->enc) ||
            (c->lossy && egs_compress_check_add(&c->check, &view, eg)))
            return error_wrap("key '%s': ", it->key);
    }
    for (int k = 0; k < it->n; k++) {
        if (write_eg(&c->w[it->outs[k]], it->key, eg)) return -1;
        c->st->num_written++;
    }
    return 0;
}

static void copy_item_release(struct copy_item *it) {
    free(it->key);
    free(it->outs);
    example_release(&it->eg);
    memset(it, 0, sizeof *it);
}

/* The probe: its inputs set the PQ ranges (egs.h), then it is written in order. */
static int copy_flush_probe(struct copy_ctx *c, struct copy_item *probe, int n) {
    struct matrix *inputs = xcalloc((size_t)(n ? n : 1), sizeof *inputs);
    int *frames = xmalloc(sizeof(int) * (size_t)(n ? n : 1));
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        const struct example *eg = &probe[i].eg;
        frames[i] = eg->num_frames;
        matrix_init_on(&inputs[i], eg->rows, eg->cols, MATRIX_CPU);
        struct example tmp = *eg;
        tmp.spk_dim = 0;
        if (example_input_decode(&tmp, &inputs[i])) rc = error_wrap("key '%s': ", probe[i].key);
    }
    if (!rc) {
        egs_pq_encoder_release(&c->enc);
        probe_encoder(&c->enc, c->compress, NULL, n, inputs, frames);
    }
    for (int i = 0; i < n; i++) {
        matrix_release(&inputs[i]);
        if (!rc) rc = copy_write(c, &probe[i]);
        copy_item_release(&probe[i]);
    }
    free(inputs);
    free(frames);
    return rc;
}

/* --frame: keeps one labelled frame of it->eg; 0 when the example has none to give (skipped). */
static int copy_select_frame(struct copy_item *it, int frame, struct rng *g) {
    int t = frame == EGS_FRAME_RANDOM ? (int)rng_below(g, (uint32_t)it->eg.num_frames) : frame;
    return t < it->eg.num_frames && example_select_frame(&it->eg, t) > 0;
}

int egs_copy(const char *in_rspec, const char *const *out_wspecs, int num_out, int random,
             uint64_t srand, double keep_proportion, int compress, int frame,
             struct egs_stats *st) {
    ASSERT(num_out >= 1 && keep_proportion >= 0 && frame >= EGS_FRAME_RANDOM);
    struct table_reader r;
    struct table_writer dummy;
    struct rng g;
    if (open_pass(st, &g, srand, &r, in_rspec, &dummy, NULL)) return -1;
    struct table_writer *w = xcalloc((size_t)num_out, sizeof *w);
    int rc = 0, got = 0, opened = 0;
    for (; opened < num_out; opened++)
        if (table_writer_open(&w[opened], out_wspecs[opened], &holder_example)) {
            rc = error_wrap("cannot open '%s': ", out_wspecs[opened]);
            break;
        }
    struct copy_ctx c = {w, compress,
                         compress == EGS_COMPRESS_8BIT || compress == EGS_COMPRESS_16BIT ||
                             compress == EGS_COMPRESS_KALDI,
                         {0}, {0}, {0}, st};
    egs_pq_encoder_init(&c.enc, bits_of(compress));
    egs_compress_check_init(&c.check);
    /* 8bit/16bit: the first EGS_COMPRESS_PROBE examples wait until the PQ ranges are known */
    struct copy_item *probe = c.lossy ? xcalloc(EGS_COMPRESS_PROBE, sizeof *probe) : NULL;
    int num_probe = 0, probing = c.lossy;
    long long assigned = 0; /* copies given an output so far (round robin) */
    struct copy_item it;
    memset(&it, 0, sizeof it);
    st->worst_dim = -1;
    double whole = floor(keep_proportion), frac = keep_proportion - whole;
    while (!rc && (got = table_reader_next(&r, &it.eg)) == 1) {
        st->num_read++;
        if (frame != EGS_FRAME_ALL && !copy_select_frame(&it, frame, &g)) {
            st->num_skipped++;
            continue;
        }
        it.n = (int)whole + (frac > 0 && rng_uniform(&g) < frac);
        it.outs = xmalloc(sizeof(int) * (size_t)(it.n ? it.n : 1));
        for (int k = 0; k < it.n; k++)
            it.outs[k] = random ? (int)rng_below(&g, (uint32_t)num_out)
                                : (int)((assigned + k) % num_out);
        assigned += it.n;
        it.key = xstrdup(table_reader_key(&r));
        if (probing) {
            probe[num_probe++] = it;
            memset(&it, 0, sizeof it);
            if (num_probe == EGS_COMPRESS_PROBE) {
                rc = copy_flush_probe(&c, probe, num_probe);
                num_probe = 0;
                probing = 0;
            }
        } else {
            rc = copy_write(&c, &it);
            free(it.key);
            free(it.outs);
            it.key = NULL;
            it.outs = NULL;
        }
    }
    if (!rc && got < 0) rc = error_wrap("reading '%s': ", in_rspec);
    if (!rc && num_probe) rc = copy_flush_probe(&c, probe, num_probe);
    for (int i = 0; i < num_probe; i++) copy_item_release(&probe[i]);
    free(probe);
    copy_item_release(&it);
    st->worst_rel_error = egs_compress_check_worst(&c.check, &st->worst_dim);
    if (!rc && c.check.rows)
        log_message(st->worst_rel_error > EGS_COMPRESS_MAX_REL_ERROR ? LOG_LEVEL_WARNING
                                                                     : LOG_LEVEL_INFO,
                    __func__, __FILE__, __LINE__, "--compress: worst RMS error %.3g of a dimension's standard deviation (dimension %d; "
            "bound %g)%s", st->worst_rel_error, st->worst_dim, EGS_COMPRESS_MAX_REL_ERROR,
            st->worst_rel_error > EGS_COMPRESS_MAX_REL_ERROR ? ": use --compress=zlib or none" : "");
    egs_compress_check_release(&c.check);
    egs_pq_encoder_release(&c.enc);
    matrix_release(&c.orig);
    rc = finish(&r, NULL, rc);
    for (int o = 0; o < opened; o++)
        rc = finish(NULL, &w[o], rc);
    free(w);
    return rc;
}

/* ---- nnet-subset-egs ---- */

int egs_subset(const char *in_rspec, const char *out_wspec, int n, uint64_t srand,
               int randomize_order, struct egs_stats *st) {
    ASSERT(n >= 0);
    struct table_reader r;
    struct table_writer w;
    struct rng g;
    if (open_pass(st, &g, srand, &r, in_rspec, &w, out_wspec)) return -1;
    /* The reservoir grows as examples arrive: --n far above the archive's size costs nothing. */
    int cap = n < 1024 ? (n ? n : 1) : 1024;
    struct item *items = xcalloc((size_t)cap, sizeof *items);
    struct example eg;
    example_init(&eg);
    int rc = 0, got, kept = 0;
    /* reservoir sampling: after k examples each has been kept with probability n / k */
    while ((got = table_reader_next(&r, &eg)) == 1) {
        st->num_read++;
        if (kept < n) {
            if (kept == cap) {
                int grown = cap > n / 2 ? n : 2 * cap;
                items = xrealloc(items, (size_t)grown * sizeof *items);
                memset(items + cap, 0, (size_t)(grown - cap) * sizeof *items);
                cap = grown;
            }
            item_take(&items[kept++], &r, &eg);
        } else if (st->num_read <= UINT32_MAX) {
            uint32_t j = rng_below(&g, (uint32_t)st->num_read);
            if (j < (uint32_t)n) {
                item_release(&items[j]);
                item_take(&items[j], &r, &eg);
            }
        }
    }
    if (got < 0) rc = error_wrap("reading '%s': ", in_rspec);
    if (!rc && randomize_order) {
        int *order = xmalloc(sizeof(int) * (kept ? kept : 1));
        for (int i = 0; i < kept; i++)
            order[i] = i;
        rng_shuffle(&g, order, (size_t)kept, sizeof *order);
        for (int i = 0; i < kept && !rc; i++) {
            rc = write_eg(&w, items[order[i]].key, &items[order[i]].eg);
            if (!rc) st->num_written++;
        }
        free(order);
    } else {
        for (int i = 0; i < kept && !rc; i++) {
            rc = write_eg(&w, items[i].key, &items[i].eg);
            if (!rc) st->num_written++;
        }
    }
    for (int i = 0; i < kept; i++)
        item_release(&items[i]);
    free(items);
    example_release(&eg);
    return finish(&r, &w, rc);
}

/* ---- nnet-egs-info ---- */

/* A label index above this is taken for corrupt data rather than grown into. */
#define EGS_INFO_MAX_LABEL (1 << 24)

static double stored_bytes(const struct example *eg) {
    switch (eg->storage) {
    case EXAMPLE_STORE_CM: return 16.0 + (double)eg->cm.data_size;
    case EXAMPLE_STORE_ZLIB: return 20.0 + (double)eg->zsize;
    /* the table, written once per stream, is not counted */
    case EXAMPLE_STORE_PQ: return (double)egs_pq_stored_bytes(eg);
    default: return 4.0 * eg->rows * eg->cols;
    }
}

static int storage_slot(const struct example *eg) {
    if (eg->storage == EXAMPLE_STORE_FLOAT) return 0;
    if (eg->storage == EXAMPLE_STORE_ZLIB) return 4;
    if (eg->storage == EXAMPLE_STORE_PQ) return eg->pq->bits == 8 ? 5 : 6;
    return eg->cm.format; /* 1 cm, 2 cm2, 3 cm3 */
}

int egs_info_compute(const char *in_rspec, struct egs_info *info) {
    memset(info, 0, sizeof *info);
    struct table_reader r;
    struct table_writer unused;
    if (open_pair(&r, in_rspec, &unused, NULL)) return -1;
    struct example eg;
    example_init(&eg);
    struct matrix m = {0};
    int rc = 0, got;
    while ((got = table_reader_next(&r, &eg)) == 1) {
        int left = eg.left_context, right = example_right_context(&eg), frames = eg.num_frames;
        if (info->num_egs == 0) {
            info->input_dim = example_input_dim(&eg);
            info->cols = eg.cols;
            info->spk_dim = eg.spk_dim;
            info->min_left = info->max_left = left;
            info->min_right = info->max_right = right;
            info->min_frames = info->max_frames = frames;
        }
        info->num_egs++;
        info->num_frames += frames;
        info->num_labels += example_num_labels(&eg);
        if (left < info->min_left) info->min_left = left;
        if (left > info->max_left) info->max_left = left;
        if (right < info->min_right) info->min_right = right;
        if (right > info->max_right) info->max_right = right;
        if (frames < info->min_frames) info->min_frames = frames;
        if (frames > info->max_frames) info->max_frames = frames;
        info->storage_count[storage_slot(&eg)]++;
        info->stored_bytes += stored_bytes(&eg);
        for (int i = 0; i < example_num_labels(&eg); i++) {
            int32_t idx = eg.label_index[i];
            if (idx < 0 || idx >= EGS_INFO_MAX_LABEL) {
                rc = error_set("key '%s': label index %d out of range", table_reader_key(&r),
                               (int)idx);
                break;
            }
            if (idx >= info->label_dim) {
                int dim = idx + 1 > 2 * info->label_dim ? idx + 1 : 2 * info->label_dim;
                info->label_weight = xrealloc(info->label_weight, sizeof(double) * dim);
                info->label_count = xrealloc(info->label_count, sizeof(long long) * dim);
                for (int k = info->label_dim; k < dim; k++) {
                    info->label_weight[k] = 0;
                    info->label_count[k] = 0;
                }
                info->label_dim = dim;
            }
            info->label_weight[idx] += eg.label_weight[i];
            info->label_count[idx]++;
        }
        if (rc) break;
        if (m.rows != eg.rows || m.cols != example_input_dim(&eg)) {
            matrix_release(&m);
            matrix_init_on(&m, eg.rows, example_input_dim(&eg), MATRIX_CPU);
        }
        double t0 = time_now();
        if (example_input_decode(&eg, &m)) {
            rc = error_wrap("key '%s': ", table_reader_key(&r));
            break;
        }
        info->decode_seconds += time_now() - t0;
        info->decoded_bytes += 4.0 * eg.rows * eg.cols;
    }
    if (!rc && got < 0) rc = error_wrap("reading '%s': ", in_rspec);
    /* trim the histogram to the largest index seen */
    while (info->label_dim > 0 && info->label_count[info->label_dim - 1] == 0)
        info->label_dim--;
    matrix_release(&m);
    example_release(&eg);
    return finish(&r, NULL, rc);
}

static void print_range(FILE *f, const char *name, int lo, int hi) {
    if (lo == hi)
        fprintf(f, "%s %d\n", name, lo);
    else
        fprintf(f, "%s %d..%d\n", name, lo, hi);
}

void egs_info_print(FILE *f, const struct egs_info *info) {
    static const char *names[7] = {"float", "cm", "cm2", "cm3", "zlib", "pq8", "pq16"};
    fprintf(f, "num-examples %lld\n", info->num_egs);
    fprintf(f, "num-labelled-frames %lld\n", info->num_frames);
    fprintf(f, "num-labels %lld\n", info->num_labels);
    fprintf(f, "input-dim %d\n", info->input_dim);
    fprintf(f, "feature-dim %d\n", info->cols);
    fprintf(f, "spk-info-dim %d\n", info->spk_dim);
    print_range(f, "left-context", info->min_left, info->max_left);
    print_range(f, "right-context", info->min_right, info->max_right);
    print_range(f, "frames-per-example", info->min_frames, info->max_frames);
    fprintf(f, "storage");
    for (int s = 0; s < 7; s++)
        if (info->storage_count[s]) fprintf(f, " %s=%lld", names[s], info->storage_count[s]);
    fprintf(f, "\n");
    fprintf(f, "input-bytes-stored %.0f\n", info->stored_bytes);
    fprintf(f, "input-bytes-decoded %.0f\n", info->decoded_bytes);
    fprintf(f, "decode-seconds %.6f\n", info->decode_seconds);
    fprintf(f, "label-dim %d\n", info->label_dim);
    fprintf(f, "label-counts [");
    for (int i = 0; i < info->label_dim; i++)
        fprintf(f, " %lld", info->label_count[i]);
    fprintf(f, " ]\nlabel-weights [");
    for (int i = 0; i < info->label_dim; i++)
        fprintf(f, " %g", info->label_weight[i]);
    fprintf(f, " ]\n");
}

void egs_info_release(struct egs_info *info) {
    free(info->label_weight);
    free(info->label_count);
    memset(info, 0, sizeof *info);
}
