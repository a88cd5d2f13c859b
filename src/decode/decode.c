/* decode: priors, pseudo-likelihoods, the word-loop Viterbi decoder and edit counts (decode.h). */
#include "decode/decode.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- priors ---- */
int decode_priors_from_counts(const struct vector *counts, double prior_floor,
                              struct vector *log_priors, int *num_floored) {
    int dim = counts->dim;
    if (dim <= 0) return error_set("empty class counts");
    float *c = xmalloc(sizeof(float) * (size_t)dim);
    vector_to_host(counts, c);
    double sum = 0;
    for (int i = 0; i < dim; i++) {
        if (!isfinite(c[i]) || c[i] < 0) {
            double bad = c[i];
            free(c);
            return error_set("class %d: bad count %g", i, bad);
        }
        sum += c[i];
    }
    if (sum <= 0) {
        free(c);
        return error_set("class counts sum to zero");
    }
    int floored = 0;
    for (int i = 0; i < dim; i++) {
        double p = c[i] / sum;
        /* Kaldi PdfPrior: a prior below the floor becomes 1e10 (a hopeless likelihood). */
        if (p < prior_floor) {
            p = 1e10;
            floored++;
        }
        c[i] = (float)log(p);
    }
    vector_release(log_priors);
    vector_init_on(log_priors, dim, MATRIX_CPU);
    vector_from_host(log_priors, c);
    free(c);
    if (num_floored) *num_floored = floored;
    return 0;
}

int decode_subtract_log_priors(struct matrix *logpost, const struct vector *log_priors,
                               float prior_scale) {
    if (logpost->cols != log_priors->dim)
        return error_set("the network has %d outputs but there are %d priors", logpost->cols,
                         log_priors->dim);
    ASSERT(logpost->device == MATRIX_CPU && log_priors->device == MATRIX_CPU);
    for (int r = 0; r < logpost->rows; r++) {
        float *row = logpost->data + (size_t)r * logpost->stride;
        for (int j = 0; j < logpost->cols; j++) row[j] -= prior_scale * log_priors->data[j];
    }
    return 0;
}

int decode_counts_add(struct vector *counts, const struct int32_vec *ali) {
    ASSERT(counts->device == MATRIX_CPU);
    for (int t = 0; t < ali->dim; t++) {
        if (ali->data[t] < 0 || ali->data[t] >= counts->dim)
            return error_set("frame %d: label %d out of range [0, %d)", t, (int)ali->data[t],
                             counts->dim);
        counts->data[ali->data[t]] += 1.0f;
    }
    return 0;
}

int decode_write_vector_file(const char *wx, int binary, const struct vector *v) {
    struct kout out;
    if (kout_open(&out, wx)) return -1;
    if (io_write_header(&out, binary) || io_write_vector(&out, binary, v)) {
        kout_abort(&out);
        return -1;
    }
    return kout_close(&out);
}

/* ---- graph ---- */
/* A chain of states: a pronunciation (word >= 0) or a silence (word -1). kind: see below. */
enum { KIND_START = 0, KIND_SIL_BEGIN = 1, KIND_WORD = 2, KIND_SIL_END = 3, NUM_KINDS = 4 };
struct chain {
    int first, last; /* states [first, last] */
    int word;        /* symbol id, or -1 */
    int kind;
    unsigned enter_from; /* bit k: may be entered after a chain of kind k (bit 0: at frame 0) */
};
struct decode_graph {
    int num_states, num_chains, num_prons, max_pdf;
    int *pdf;      /* (num_states) */
    int *chain_of; /* (num_states) */
    struct chain *chains;
    unsigned final_kinds; /* chains of these kinds may end the utterance */
    char **words;  /* symbol id -> word (NULL where unused) */
    int num_words; /* ids [0, num_words) */
};

struct phone { char *name; int *pdfs; int n; };

static void free_phones(struct phone *p, int n) {
    for (int i = 0; i < n; i++) {
        free(p[i].name);
        free(p[i].pdfs);
    }
    free(p);
}

static const struct phone *find_phone(const struct phone *p, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(p[i].name, name)) return &p[i];
    return NULL;
}

static char *next_tok(char **s) {
    char *t = strtok_r(NULL, " \t\r\n", s);
    return t;
}

static void add_chain(struct decode_graph *g, const struct phone **ph, int nph, int word,
                      int kind, unsigned enter_from) {
    int n = 0;
    for (int i = 0; i < nph; i++) n += ph[i]->n;
    g->pdf = xrealloc(g->pdf, sizeof(int) * (size_t)(g->num_states + n));
    g->chain_of = xrealloc(g->chain_of, sizeof(int) * (size_t)(g->num_states + n));
    g->chains = xrealloc(g->chains, sizeof(struct chain) * (size_t)(g->num_chains + 1));
    struct chain *c = &g->chains[g->num_chains];
    c->first = g->num_states;
    c->word = word;
    c->kind = kind;
    c->enter_from = enter_from;
    for (int i = 0; i < nph; i++)
        for (int j = 0; j < ph[i]->n; j++) {
            g->pdf[g->num_states] = ph[i]->pdfs[j];
            g->chain_of[g->num_states] = g->num_chains;
            if (ph[i]->pdfs[j] > g->max_pdf) g->max_pdf = ph[i]->pdfs[j];
            g->num_states++;
        }
    c->last = g->num_states - 1;
    g->num_chains++;
}

static int word_id(const struct decode_graph *g, const char *w) {
    for (int i = 0; i < g->num_words; i++)
        if (g->words[i] && !strcmp(g->words[i], w)) return i;
    return -1;
}

/* Open <lang>/<name> into path (for the errors): the stream, or NULL with error_set. */
static FILE *lang_open(char *path, size_t size, const char *lang, const char *name) {
    snprintf(path, size, "%s/%s", lang, name);
    FILE *f = fopen(path, "r");
    if (!f) error_set("cannot open '%s': %s", path, strerror(errno));
    return f;
}

/* words.txt: "<word> <id>" lines into g->words. 0, or -1 with error_set. */
static int read_words(struct decode_graph *g, FILE *f, const char *path) {
    char line[8192];
    for (int lineno = 1; fgets(line, sizeof line, f); lineno++) {
        char *s, *w = strtok_r(line, " \t\r\n", &s), *id = next_tok(&s);
        if (!w) continue;
        int v;
        if (!id || parse_int(id, &v) || v < 0 || v > 10000000 || next_tok(&s))
            return error_set("file '%s' line %d: expected '<word> <id>'", path, lineno);
        if (v >= g->num_words) {
            g->words = xrealloc(g->words, sizeof(char *) * (size_t)(v + 1));
            for (int i = g->num_words; i <= v; i++) g->words[i] = NULL;
            g->num_words = v + 1;
        }
        if (g->words[v]) return error_set("file '%s' line %d: id %d used twice", path, lineno, v);
        g->words[v] = xstrdup(w);
    }
    return 0;
}

/* phone_pdfs.txt: "<phone> <pdf> ..." lines into *phones (*nphones of them, owned by the caller
 * even on failure). 0, or -1 with error_set. */
static int read_phones(struct phone **phones, int *nphones, FILE *f, const char *path) {
    char line[8192];
    for (int lineno = 1; fgets(line, sizeof line, f); lineno++) {
        char *s, *name = strtok_r(line, " \t\r\n", &s);
        if (!name) continue;
        *phones = xrealloc(*phones, sizeof **phones * (size_t)(*nphones + 1));
        struct phone *p = &(*phones)[(*nphones)++];
        p->name = xstrdup(name);
        p->pdfs = NULL;
        p->n = 0;
        for (char *t; (t = next_tok(&s));) {
            int v;
            if (parse_int(t, &v) || v < 0)
                return error_set("file '%s' line %d: bad pdf '%s'", path, lineno, t);
            p->pdfs = xrealloc(p->pdfs, sizeof(int) * (size_t)(p->n + 1));
            p->pdfs[p->n++] = v;
        }
        if (!p->n)
            return error_set("file '%s' line %d: phone '%s' has no states", path, lineno, name);
    }
    return 0;
}

/* lexicon.txt: a chain per pronunciation, entered from the kinds in `from`. 0, or -1. */
static int read_lexicon(struct decode_graph *g, const struct phone *phones, int nphones,
                        unsigned from, FILE *f, const char *path) {
    char line[8192];
    for (int lineno = 1; fgets(line, sizeof line, f); lineno++) {
        char *s, *w = strtok_r(line, " \t\r\n", &s);
        if (!w) continue;
        int id = word_id(g, w);
        if (id < 0)
            return error_set("file '%s' line %d: word '%s' is not in words.txt", path, lineno, w);
        const struct phone *ph[256];
        int n = 0;
        for (char *t; (t = next_tok(&s));) {
            if (n == 256)
                return error_set("file '%s' line %d: pronunciation too long", path, lineno);
            if (!(ph[n++] = find_phone(phones, nphones, t)))
                return error_set("file '%s' line %d: unknown phone '%s'", path, lineno, t);
        }
        if (!n) return error_set("file '%s' line %d: word '%s' has no phones", path, lineno, w);
        add_chain(g, ph, n, id, KIND_WORD, from);
        g->num_prons++;
    }
    if (!g->num_prons) return error_set("file '%s': no pronunciations", path);
    return 0;
}

struct decode_graph *decode_graph_read(const char *lang, const struct decode_opts *opts) {
    char path[4096];
    struct decode_graph *g = xcalloc(1, sizeof *g);
    g->max_pdf = -1;
    struct phone *phones = NULL;
    int nphones = 0, bad;
    FILE *f = lang_open(path, sizeof path, lang, "words.txt");
    bad = !f || read_words(g, f, path);
    if (f) fclose(f);
    if (!bad) {
        f = lang_open(path, sizeof path, lang, "phone_pdfs.txt");
        bad = !f || read_phones(&phones, &nphones, f, path);
        if (f) fclose(f);
    }
    /* The chains: silence first, then pronunciations, then the closing silence (isolated). */
    const struct phone *sil = NULL;
    if (!bad && opts->silence_phone && *opts->silence_phone &&
        !(sil = find_phone(phones, nphones, opts->silence_phone)))
        bad = error_set("'%s/phone_pdfs.txt': no silence phone '%s'", lang, opts->silence_phone);
    int iso = opts->grammar == DECODE_ISOLATED;
    unsigned b_start = 1u << KIND_START, b_silb = 1u << KIND_SIL_BEGIN,
             b_word = 1u << KIND_WORD, b_sile = 1u << KIND_SIL_END;
    if (!bad && sil)
        add_chain(g, &sil, 1, -1, KIND_SIL_BEGIN, iso ? b_start : b_start | b_silb | b_word);
    if (!bad) {
        f = lang_open(path, sizeof path, lang, "lexicon.txt");
        bad = !f || read_lexicon(g, phones, nphones,
                                 iso ? b_start | b_silb : b_start | b_silb | b_word, f, path);
        if (f) fclose(f);
    }
    if (!bad && sil && iso) add_chain(g, &sil, 1, -1, KIND_SIL_END, b_word);
    free_phones(phones, nphones);
    if (bad) {
        decode_graph_free(g);
        return NULL;
    }
    g->final_kinds = iso ? b_word | b_sile : b_silb | b_word;
    return g;
}

void decode_graph_free(struct decode_graph *g) {
    if (!g) return;
    for (int i = 0; i < g->num_words; i++) free(g->words[i]);
    free(g->words);
    free(g->pdf);
    free(g->chain_of);
    free(g->chains);
    free(g);
}
int decode_graph_num_states(const struct decode_graph *g) { return g->num_states; }
int decode_graph_num_prons(const struct decode_graph *g) { return g->num_prons; }
int decode_graph_max_pdf(const struct decode_graph *g) { return g->max_pdf; }
const char *decode_graph_word(const struct decode_graph *g, int id) {
    return id >= 0 && id < g->num_words ? g->words[id] : NULL;
}

void decode_opts_default(struct decode_opts *o) {
    o->acoustic_scale = 0.1f;
    o->beam = 16.0f;
    o->self_loop_prob = 0.5f;
    o->transition_scale = 1.0f;
    o->word_insertion_penalty = 0.0f;
    o->grammar = DECODE_LOOP;
    o->allow_partial = 1;
    o->silence_phone = "sil";
}

void decode_result_release(struct decode_result *r) {
    int32_vec_release(&r->words);
    memset(r, 0, sizeof *r);
}

/* ---- search ---- */
struct link { int word, prev; };
struct decoder {
    const struct decode_graph *g;
    struct decode_opts o;
    double *score, *next;   /* (num_states) */
    int *hist, *next_hist;  /* (num_states): index into links, -1 = no words */
    unsigned char *active;  /* (num_chains): some state of the chain survived the last frame */
    struct link *links;
    int num_links, cap_links;
};

struct decoder *decoder_new(const struct decode_graph *g, const struct decode_opts *opts) {
    struct decoder *d = xcalloc(1, sizeof *d);
    d->g = g;
    d->o = *opts;
    size_t n = (size_t)g->num_states;
    d->score = xmalloc(sizeof(double) * n);
    d->next = xmalloc(sizeof(double) * n);
    d->hist = xmalloc(sizeof(int) * n);
    d->next_hist = xmalloc(sizeof(int) * n);
    d->active = xmalloc((size_t)g->num_chains);
    return d;
}
void decoder_free(struct decoder *d) {
    if (!d) return;
    free(d->score);
    free(d->next);
    free(d->hist);
    free(d->next_hist);
    free(d->active);
    free(d->links);
    free(d);
}

static int new_link(struct decoder *d, int word, int prev) {
    if (d->num_links == d->cap_links) {
        d->cap_links = d->cap_links ? 2 * d->cap_links : 1024;
        d->links = xrealloc(d->links, sizeof(struct link) * (size_t)d->cap_links);
    }
    d->links[d->num_links] = (struct link){word, prev};
    return d->num_links++;
}

/* Best exit of each kind of chain at the end of frame t-1 (KIND_START: only at t = 0), with its
 * word history (the exiting chain's word linked in). */
static void chain_exits(struct decoder *d, int t, double lp_fwd, double *exit_score,
                        int *exit_hist) {
    const struct decode_graph *g = d->g;
    for (int k = 0; k < NUM_KINDS; k++) {
        exit_score[k] = -INFINITY;
        exit_hist[k] = -1;
    }
    if (t == 0) {
        exit_score[KIND_START] = 0;
        return;
    }
    int exit_chain[NUM_KINDS] = {-1, -1, -1, -1};
    for (int c = 0; c < g->num_chains; c++) {
        if (!d->active[c]) continue;
        const struct chain *ch = &g->chains[c];
        double v = d->score[ch->last] + lp_fwd;
        if (v > exit_score[ch->kind]) {
            exit_score[ch->kind] = v;
            exit_chain[ch->kind] = c;
        }
    }
    for (int k = 1; k < NUM_KINDS; k++) {
        int c = exit_chain[k];
        if (c < 0) continue;
        int h = d->hist[g->chains[c].last];
        exit_hist[k] = g->chains[c].word >= 0 ? new_link(d, g->chains[c].word, h) : h;
    }
}

/* One frame (log-likelihood row) of the Viterbi pass: d->score/hist advance by one frame, beam
 * pruned. */
static void decode_frame(struct decoder *d, const float *row, int t) {
    const struct decode_graph *g = d->g;
    const double NEG = -INFINITY;
    const double ts = d->o.transition_scale, am = d->o.acoustic_scale;
    /* log(1 - p), not log1p(-p): for p = 0.5 both transitions then score exactly the same. */
    const double lp_loop = ts * log(d->o.self_loop_prob);
    const double lp_fwd = ts * log(1.0 - d->o.self_loop_prob);
    double exit_score[NUM_KINDS];
    int exit_hist[NUM_KINDS];
    chain_exits(d, t, lp_fwd, exit_score, exit_hist);
    double best = NEG;
    for (int c = 0; c < g->num_chains; c++) {
        const struct chain *ch = &g->chains[c];
        /* Entering the chain at its first state. */
        double enter = NEG;
        int enter_h = -1;
        for (int k = 0; k < NUM_KINDS; k++)
            if ((ch->enter_from >> k & 1u) && exit_score[k] > enter) {
                enter = exit_score[k];
                enter_h = exit_hist[k];
            }
        if (ch->word >= 0) enter -= d->o.word_insertion_penalty;
        if (enter == NEG && !d->active[c]) { /* nothing reaches this chain */
            for (int s = ch->first; s <= ch->last; s++) d->next[s] = NEG;
            continue;
        }
        for (int s = ch->first; s <= ch->last; s++) {
            double v = d->score[s] + lp_loop;
            int h = d->hist[s];
            double alt = s == ch->first ? enter : d->score[s - 1] + lp_fwd;
            int alt_h = s == ch->first ? enter_h : d->hist[s - 1];
            if (alt > v) {
                v = alt;
                h = alt_h;
            }
            if (v > NEG) v += am * row[g->pdf[s]];
            d->next[s] = v;
            d->next_hist[s] = h;
            if (v > best) best = v;
        }
    }
    /* Beam pruning. */
    double thr = best - d->o.beam;
    for (int c = 0; c < g->num_chains; c++) {
        int any = 0;
        for (int s = g->chains[c].first; s <= g->chains[c].last; s++) {
            if (d->next[s] < thr) d->next[s] = NEG;
            else any = 1;
        }
        d->active[c] = (unsigned char)any;
    }
    double *tmp = d->score;
    d->score = d->next;
    d->next = tmp;
    int *th = d->hist;
    d->hist = d->next_hist;
    d->next_hist = th;
}

int decoder_decode(struct decoder *d, const struct matrix *ll, struct decode_result *res) {
    const struct decode_graph *g = d->g;
    ASSERT(ll->device == MATRIX_CPU);
    decode_result_release(res);
    res->num_frames = ll->rows;
    if (g->max_pdf >= ll->cols)
        return error_set("the graph uses pdf %d but the likelihoods have %d columns", g->max_pdf,
                         ll->cols);
    const double NEG = -INFINITY;
    int S = g->num_states;
    d->num_links = 0;
    for (int s = 0; s < S; s++) {
        d->score[s] = NEG;
        d->hist[s] = -1;
    }
    memset(d->active, 0, (size_t)g->num_chains);
    for (int t = 0; t < ll->rows; t++) decode_frame(d, ll->data + (size_t)t * ll->stride, t);
    /* The best final state. */
    double best = NEG;
    int best_s = -1;
    for (int c = 0; c < g->num_chains; c++) {
        const struct chain *ch = &g->chains[c];
        if ((g->final_kinds >> ch->kind & 1u) && d->score[ch->last] > best) {
            best = d->score[ch->last];
            best_s = ch->last;
        }
    }
    int h;
    if (best_s >= 0) {
        res->reached_final = 1;
        const struct chain *ch = &g->chains[g->chain_of[best_s]];
        h = ch->word >= 0 ? new_link(d, ch->word, d->hist[best_s]) : d->hist[best_s];
    } else {
        if (!d->o.allow_partial) return error_set("no final state reached");
        for (int s = 0; s < S; s++)
            if (d->score[s] > best) {
                best = d->score[s];
                best_s = s;
            }
        h = best_s >= 0 ? d->hist[best_s] : -1;
    }
    res->score = best_s >= 0 ? best : NEG;
    int n = 0;
    for (int i = h; i >= 0; i = d->links[i].prev) n++;
    res->words.dim = n;
    res->words.data = n ? xmalloc(sizeof(int32_t) * (size_t)n) : NULL;
    for (int i = h; i >= 0; i = d->links[i].prev) res->words.data[--n] = d->links[i].word;
    return 0;
}

/* ---- alignment ---- */
static void ali_resize(struct int32_vec *v, int n) {
    v->data = xrealloc(v->data, sizeof(int32_t) * (size_t)(n ? n : 1));
    v->dim = n;
}

int decode_graph_word_id(const struct decode_graph *g, const char *word) {
    return word_id(g, word);
}

int decode_text_open(struct decode_text_reader *tr, const char *rspec,
                     const struct decode_graph *g) {
    memset(tr, 0, sizeof *tr);
    if (token_vec_map_read(&tr->text, rspec)) return error_wrap("'%s': ", rspec);
    int n = tr->text.n;
    tr->words = xcalloc((size_t)(n ? n : 1), sizeof *tr->words);
    for (int i = 0; i < n; i++) {
        const struct token_vec *t = &tr->text.e[i].v;
        tr->words[i] = xmalloc(sizeof(int) * (size_t)(t->n ? t->n : 1));
        for (int j = 0; j < t->n; j++)
            if ((tr->words[i][j] = word_id(g, t->v[j])) < 0) {
                error_set("'%s': key '%s': word '%s' is not in words.txt", rspec,
                          tr->text.e[i].key, t->v[j]);
                decode_text_close(tr);
                return -1;
            }
    }
    return 0;
}

int decode_text_lookup(const struct decode_text_reader *tr, const char *key, const int **words,
                       int *num_words) {
    const struct token_vec_entry *e = token_vec_map_find(&tr->text, key);
    if (!e) return error_set("no transcription");
    *words = tr->words[e - tr->text.e];
    *num_words = e->v.n;
    return 0;
}

void decode_text_close(struct decode_text_reader *tr) {
    for (int i = 0; i < tr->text.n && tr->words; i++) free(tr->words[i]);
    free(tr->words);
    token_vec_map_release(&tr->text);
    memset(tr, 0, sizeof *tr);
}

/* The silence chain of the graph (the optional silence of the loop), or -1. */
static int silence_chain(const struct decode_graph *g) {
    for (int c = 0; c < g->num_chains; c++)
        if (g->chains[c].word < 0) return c;
    return -1;
}

/* One utterance's graph: segments in order (silence?, word 1, silence?, word 2, ...), a segment
 * being one or more alternative chains of the lexicon graph; states copied out with, for each,
 * its predecessors other than itself. */
struct align_graph {
    int num_states;
    int *pdf;            /* (num_states) */
    int *pred_start;     /* (num_states + 1): state s's predecessors are pred[pred_start[s]..) */
    int *pred;
    unsigned char *start, *final;   /* (num_states) */
};

static void align_graph_free(struct align_graph *a) {
    free(a->pdf);
    free(a->pred_start);
    free(a->pred);
    free(a->start);
    free(a->final);
}

static int build_align_graph(const struct decode_graph *g, const int *words, int nw,
                             struct align_graph *a) {
    memset(a, 0, sizeof *a);
    int sil = silence_chain(g);
    int nseg = sil >= 0 ? 2 * nw + 1 : nw;
    /* Per segment: its chains (indices into g->chains) and whether it may be skipped. */
    int *seg_first = xmalloc(sizeof(int) * (size_t)(nseg + 1)), *seg_chains = NULL, nsc = 0;
    unsigned char *optional = xcalloc((size_t)nseg, 1);
    for (int k = 0; k < nseg; k++) {
        seg_first[k] = nsc;
        if (sil >= 0 && k % 2 == 0) {
            seg_chains = xrealloc(seg_chains, sizeof(int) * (size_t)(nsc + 1));
            seg_chains[nsc++] = sil;
            optional[k] = 1;
            continue;
        }
        int w = words[sil >= 0 ? k / 2 : k], found = 0;
        for (int c = 0; c < g->num_chains; c++)
            if (g->chains[c].word == w && g->chains[c].kind == KIND_WORD) {
                seg_chains = xrealloc(seg_chains, sizeof(int) * (size_t)(nsc + 1));
                seg_chains[nsc++] = c;
                found = 1;
            }
        if (!found) {
            free(seg_first);
            free(seg_chains);
            free(optional);
            return error_set("word '%s' has no pronunciation in lexicon.txt",
                             decode_graph_word(g, w) ? decode_graph_word(g, w) : "?");
        }
    }
    seg_first[nseg] = nsc;
    /* States: the chains of the segments in order. first_state[i]: of the i-th listed chain. */
    int *first_state = xmalloc(sizeof(int) * (size_t)(nsc + 1)), n = 0;
    for (int i = 0; i < nsc; i++) {
        first_state[i] = n;
        n += g->chains[seg_chains[i]].last - g->chains[seg_chains[i]].first + 1;
    }
    first_state[nsc] = n;
    a->num_states = n;
    a->pdf = xmalloc(sizeof(int) * (size_t)(n ? n : 1));
    a->pred_start = xmalloc(sizeof(int) * (size_t)(n + 1));
    a->start = xcalloc((size_t)(n ? n : 1), 1);
    a->final = xcalloc((size_t)(n ? n : 1), 1);
    int npred = 0, cap = 0;
    for (int k = 0; k < nseg; k++)
        for (int i = seg_first[k]; i < seg_first[k + 1]; i++) {
            const struct chain *c = &g->chains[seg_chains[i]];
            for (int s = first_state[i]; s < first_state[i + 1]; s++) {
                a->pdf[s] = g->pdf[c->first + s - first_state[i]];
                a->pred_start[s] = npred;
                if (s > first_state[i]) {   /* within the chain */
                    if (npred == cap) a->pred = xrealloc(a->pred, sizeof(int) * (size_t)(cap = cap ? 2 * cap : 256));
                    a->pred[npred++] = s - 1;
                    continue;
                }
                /* A chain's first state: from the last states of the previous segment, and of
                 * the one before it when the previous one may be skipped; a start state when
                 * every segment before it may be skipped. */
                int j = k - 1, all_optional = 1;
                for (; j >= 0; j--) {
                    for (int m = seg_first[j]; m < seg_first[j + 1]; m++) {
                        if (npred == cap) a->pred = xrealloc(a->pred, sizeof(int) * (size_t)(cap = cap ? 2 * cap : 256));
                        a->pred[npred++] = first_state[m + 1] - 1;
                    }
                    if (!optional[j]) { all_optional = 0; break; }
                }
                if (all_optional) a->start[s] = 1;
            }
        }
    a->pred_start[n] = npred;
    /* Final: the last states of the last segment, and of the ones before while skippable. */
    for (int k = nseg - 1; k >= 0; k--) {
        for (int m = seg_first[k]; m < seg_first[k + 1]; m++) a->final[first_state[m + 1] - 1] = 1;
        if (!optional[k]) break;
    }
    free(first_state);
    free(seg_first);
    free(seg_chains);
    free(optional);
    return 0;
}

int decode_align(const struct decode_graph *g, const struct decode_opts *o, const int *words,
                 int nw, const struct matrix *ll, struct int32_vec *ali, double *score) {
    ASSERT(ll->device == MATRIX_CPU);
    struct align_graph a;
    if (build_align_graph(g, words, nw, &a)) return -1;
    int T = ll->rows, S = a.num_states;
    for (int s = 0; s < S; s++)
        if (a.pdf[s] >= ll->cols) {
            align_graph_free(&a);
            return error_set("pdf %d of the graph but the likelihoods have %d columns", a.pdf[s],
                             ll->cols);
        }
    if (T < 1 || S < 1) {
        align_graph_free(&a);
        return error_set("%d frames, %d states: nothing to align", T, S);
    }
    double loop = o->transition_scale * log(o->self_loop_prob);
    double fwd = o->transition_scale * log(1.0 - o->self_loop_prob);
    double *prev = xmalloc(sizeof(double) * (size_t)S), *cur = xmalloc(sizeof(double) * (size_t)S);
    int *back = xmalloc(sizeof(int) * (size_t)T * (size_t)S);
    const double NEG = -INFINITY;
    for (int s = 0; s < S; s++) {
        prev[s] = a.start[s] ? o->acoustic_scale * ll->data[a.pdf[s]] : NEG;
        back[s] = -1;
    }
    for (int t = 1; t < T; t++) {
        const float *row = ll->data + (size_t)t * ll->stride;
        for (int s = 0; s < S; s++) {
            double best = prev[s] + loop;
            int arg = s;
            for (int p = a.pred_start[s]; p < a.pred_start[s + 1]; p++) {
                double v = prev[a.pred[p]] + fwd;
                if (v > best) best = v, arg = a.pred[p];
            }
            cur[s] = best + o->acoustic_scale * row[a.pdf[s]];
            back[(size_t)t * S + s] = arg;
        }
        double *tmp = prev;
        prev = cur;
        cur = tmp;
    }
    int end = -1;
    for (int s = 0; s < S; s++)
        if (a.final[s] && prev[s] > NEG && (end < 0 || prev[s] > prev[end])) end = s;
    int rc = 0;
    if (end < 0) {
        rc = error_set("no path through the transcript's %d states in %d frames", S, T);
    } else {
        *score = prev[end];
        ali_resize(ali, T);
        for (int t = T - 1, s = end; t >= 0; t--) {
            ali->data[t] = a.pdf[s];
            s = back[(size_t)t * S + s];
        }
    }
    free(prev);
    free(cur);
    free(back);
    align_graph_free(&a);
    return rc;
}

int decode_align_equal(const struct decode_graph *g, const int *words, int nw, int T,
                       struct int32_vec *ali) {
    int sil = silence_chain(g), n = 0, cap = 64;
    int *pdfs = xmalloc(sizeof(int) * (size_t)cap);
    for (int k = 0; k < nw; k++) {
        int c = 0;
        while (c < g->num_chains && !(g->chains[c].word == words[k] && g->chains[c].kind == KIND_WORD)) c++;
        if (c == g->num_chains) {
            free(pdfs);
            return error_set("word '%s' has no pronunciation in lexicon.txt",
                             decode_graph_word(g, words[k]) ? decode_graph_word(g, words[k]) : "?");
        }
        for (int s = g->chains[c].first; s <= g->chains[c].last; s++) {
            if (n == cap) pdfs = xrealloc(pdfs, sizeof(int) * (size_t)(cap *= 2));
            pdfs[n++] = g->pdf[s];
        }
    }
    int ns = sil >= 0 ? g->chains[sil].last - g->chains[sil].first + 1 : 0;
    int with_sil = sil >= 0 && T >= n + 2 * ns;
    int S = n + (with_sil ? 2 * ns : 0);
    if (T < S || S == 0) {
        free(pdfs);
        return error_set("%d frames for %d states", T, S);
    }
    ali_resize(ali, T);
    for (int t = 0; t < T; t++) {
        int i = (int)((long long)t * S / T), pdf;   /* state i of S gets frames [iT/S, (i+1)T/S) */
        if (with_sil && i < ns) pdf = g->pdf[g->chains[sil].first + i];
        else if (with_sil && i >= ns + n) pdf = g->pdf[g->chains[sil].first + i - ns - n];
        else pdf = pdfs[i - (with_sil ? ns : 0)];
        ali->data[t] = pdf;
    }
    free(pdfs);
    return 0;
}

/* ---- edit distance ---- */
void decode_edit_counts_add(struct decode_edit_counts *c, char *const *ref, int nr,
                            char *const *hyp, int nh) {
    /* Rows over the hypothesis, one cell per reference prefix, each cell carrying the counts of
     * the path it chose (as Kaldi's compute-wer, so that ties split the same way): a
     * match/substitution only when strictly cheaper than both others, else a deletion when
     * strictly cheaper than an insertion, else an insertion. */
    struct cell { int ins, del, sub, cost; };
    struct cell *prev = xmalloc(sizeof *prev * (size_t)(nr + 1));
    struct cell *cur = xmalloc(sizeof *cur * (size_t)(nr + 1));
    for (int r = 0; r <= nr; r++) prev[r] = (struct cell){0, r, 0, r};
    for (int h = 1; h <= nh; h++) {
        cur[0] = prev[0];
        cur[0].ins++;
        cur[0].cost++;
        for (int r = 1; r <= nr; r++) {
            int mis = strcmp(ref[r - 1], hyp[h - 1]) != 0;
            int ins = prev[r].cost + 1, del = cur[r - 1].cost + 1, sub = prev[r - 1].cost + mis;
            if (sub < ins && sub < del) {
                cur[r] = prev[r - 1];
                cur[r].sub += mis;
                cur[r].cost = sub;
            } else if (del < ins) {
                cur[r] = cur[r - 1];
                cur[r].del++;
                cur[r].cost = del;
            } else {
                cur[r] = prev[r];
                cur[r].ins++;
                cur[r].cost = ins;
            }
        }
        struct cell *t = prev;
        prev = cur;
        cur = t;
    }
    c->ins += prev[nr].ins;
    c->del += prev[nr].del;
    c->sub += prev[nr].sub;
    c->ref_words += nr;
    free(prev);
    free(cur);
}

int decode_aligner_open(struct decode_aligner *a, const char *lang, const struct decode_opts *o,
                        const char *matrix_rspec, const char *text_rspec, const char *ali_wspec) {
    memset(a, 0, sizeof *a);
    if (!(a->g = decode_graph_read(lang, o))) return -1;
    if (decode_text_open(&a->text, text_rspec, a->g)) goto fail_graph;
    if (table_reader_open(&a->in, matrix_rspec, &holder_matrix)) goto fail_text;
    if (table_writer_open(&a->out, ali_wspec, &holder_int32_vector) == 0) return 0;
    table_reader_close(&a->in);
fail_text:
    decode_text_close(&a->text);
fail_graph:
    decode_graph_free(a->g);
    return -1;
}

int decode_aligner_close(struct decode_aligner *a, int rc) {
    char *read_error = rc < 0 ? xstrdup(error_get()) : NULL; /* the first error is the one said */
    int bad = rc < 0 || table_reader_close(&a->in);
    if (read_error) table_reader_close(&a->in);
    if (bad) table_writer_abort(&a->out);
    else if (table_writer_close(&a->out)) bad = 1;
    decode_text_close(&a->text);
    decode_graph_free(a->g);
    if (read_error) error_set("%s", read_error);
    free(read_error);
    return bad ? -1 : 0;
}
