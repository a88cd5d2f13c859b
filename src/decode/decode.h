/* decode: class priors, pseudo-likelihoods, a Viterbi beam-search word decoder over a lexicon of
 * phone-state HMMs, and word error rates (the hybrid-system end of a speech recipe).
 *
 * ---- Priors and pseudo-likelihoods (Kaldi nnet1 PdfPrior, analyze-counts) ----
 * A hybrid model's softmax gives p(s|x); the decoder needs a scaled likelihood
 *     log p(x|s) - log p(x) = log p(s|x) - log p(s).
 * p(s) is estimated from label counts (analyze-counts over the training alignment: the relative
 * frame frequency of each pdf). decode_priors_from_counts normalises counts to sum 1 and takes
 * logs; a class whose prior is below prior_floor (unseen or nearly unseen in training) gets a
 * log-prior of log(1e10), as Kaldi's PdfPrior does, so its pseudo-likelihood is hopeless and it
 * never wins. decode_subtract_log_priors then computes loglike = logpost - prior_scale * logprior
 * per row of a log-posterior matrix (nnet-forward --apply-log), the matrix Kaldi's
 * latgen-faster-mapped / decode-faster-mapped read. The acoustic scale belongs to the decoder
 * (--acoustic-scale), as in Kaldi.
 *
 * ---- Decoding graph ----
 * A "lang" directory holds three text files:
 *   words.txt       "<word> <id>" (Kaldi's symbol table; id 0 is <eps> if present, never output)
 *   lexicon.txt     "<word> <phone> <phone> ..." (several lines per word = pronunciations)
 *   phone_pdfs.txt  "<phone> <pdf> <pdf> ..." the phone's HMM: one state per pdf, left to right
 * Each pronunciation is a chain of states (its phones' states in order); so is the optional
 * silence (the states of --silence-phone). Every state has a self-loop with probability
 * self_loop_prob and goes forward with 1 - self_loop_prob (both log-probabilities multiplied by
 * transition_scale); every state takes at least one frame. Grammars:
 *   DECODE_LOOP      any sequence of words, with optional silence before, between and after;
 *   DECODE_ISOLATED  exactly one word, with optional silence before and after.
 * Entering a word costs word_insertion_penalty (subtracted from the log-score).
 * Score of a path: sum over frames of acoustic_scale * loglike[t][pdf] plus the transitions.
 *
 * ---- Search ----
 * Frame-synchronous Viterbi over all states with a beam: after each frame, states scoring below
 * (best - beam) are dropped. Word histories are a linked list of (word, end frame) records made at
 * word ends. Ties are broken deterministically: at a state, the self-loop beats the previous
 * state, which beats entering the chain; among chains that can be entered from, the earlier one
 * wins (silence before words, words in lexicon order); at the end, the earlier final state wins.
 * An utterance in which no complete path exists (too short for any word and for silence, or every
 * final state pruned) has no final state: with allow_partial the words of the best surviving state
 * are returned and reached_final is 0; otherwise decode_utterance fails.
 *
 * ---- Word error rate (Kaldi compute-wer) ----
 * decode_edit_counts: Levenshtein alignment of a hypothesis to a reference (unit costs) and its
 * insertions, deletions and substitutions, split on ties exactly as Kaldi's compute-wer: the
 * dynamic programme runs over the hypothesis words, each cell keeping the counts of the path it
 * took, and takes a match/substitution only when strictly cheaper than a deletion and an
 * insertion, a deletion only when strictly cheaper than an insertion (so "a b" against "b a"
 * is 1 insertion and 1 deletion, not 2 substitutions).
 *
 * Errors: readers set error_get() ("file 'lexicon.txt' line 3: unknown phone 'xx'") and return
 * -1 / NULL; nothing here exits.
 */
#ifndef PARNET_DECODE_DECODE_H
#define PARNET_DECODE_DECODE_H

#include "io/io.h"
#include "matrix/matrix.h"

/* ---- priors ---- */
/* counts: (dim) frame counts per pdf (a Kaldi vector from analyze-counts). log_priors: out, (dim).
 * num_floored (may be NULL): classes below the floor. 0, or -1 if the counts are empty or
 * contain a negative or non-finite value. */
int decode_priors_from_counts(const struct vector *counts, double prior_floor,
                              struct vector *log_priors, int *num_floored);
/* loglike[t][j] = logpost[t][j] - prior_scale * log_priors[j], in place on a host matrix.
 * -1 if the dimensions differ. */
int decode_subtract_log_priors(struct matrix *logpost, const struct vector *log_priors,
                               float prior_scale);
/* counts[a[t]] += 1 for every frame; counts must have dim > every label. -1 naming the frame on
 * a label out of range. */
int decode_counts_add(struct vector *counts, const struct int32_vec *ali);

/* A Kaldi vector file (FV with the "\0B" header, or text " [ a b ]"), written atomically. */
int decode_write_vector_file(const char *wxfilename, int binary, const struct vector *v);

/* ---- graph and search ---- */
enum decode_grammar { DECODE_LOOP = 0, DECODE_ISOLATED = 1 };

struct decode_opts {
    float acoustic_scale;        /* 0.1 */
    float beam;                  /* 16 */
    float self_loop_prob;        /* 0.5 */
    float transition_scale;      /* 1.0 */
    float word_insertion_penalty; /* 0 */
    int grammar;                 /* enum decode_grammar */
    int allow_partial;           /* 1 */
    const char *silence_phone;   /* "sil"; NULL or "" for no optional silence */
};
void decode_opts_default(struct decode_opts *o);

struct decode_graph;
/* Reads <lang>/words.txt, lexicon.txt, phone_pdfs.txt. NULL with error_get() on bad files. */
struct decode_graph *decode_graph_read(const char *lang_dir, const struct decode_opts *opts);
void decode_graph_free(struct decode_graph *g);
int decode_graph_num_states(const struct decode_graph *g);
int decode_graph_num_prons(const struct decode_graph *g);
int decode_graph_max_pdf(const struct decode_graph *g);
/* The word of a symbol id, or NULL. */
const char *decode_graph_word(const struct decode_graph *g, int id);

struct decode_result {
    struct int32_vec words;  /* word ids, in order */
    double score;            /* log-score of the best path (final or partial) */
    int reached_final;
    int num_frames;
};
void decode_result_release(struct decode_result *r);

/* Decode one utterance of pseudo-log-likelihoods (num_frames x num_pdfs, host). The decoder
 * object holds the search buffers and is reused across utterances. -1 if a pdf of the graph is
 * out of the matrix's range, or (without allow_partial) when no final state was reached. */
struct decoder;
struct decoder *decoder_new(const struct decode_graph *g, const struct decode_opts *opts);
void decoder_free(struct decoder *d);
int decoder_decode(struct decoder *d, const struct matrix *loglikes, struct decode_result *res);

/* ---- alignment (forced, and flat start) ----
 * The graph of one transcript: its words in order, each by any of its pronunciations in
 * lexicon.txt, with the optional silence (opts->silence_phone) before, between and after them;
 * the HMM topology and transition log-probabilities of the decoder (self loop self_loop_prob,
 * forward 1 - self_loop_prob, both times transition_scale; every state at least one frame).
 * decode_align: the Viterbi path through it over all frames of loglikes (acoustic_scale times
 * the pseudo-log-likelihoods); ali gets one pdf per frame (the labels get_egs.sh trains on).
 * Exhaustive (no beam): the graph of one utterance is small.
 * decode_align_equal (Kaldi's align-equal, a flat start): without acoustics, the first
 * pronunciation of each word with one silence at each end (when there is a silence phone and
 * enough frames; else without), its states given equal shares of the frames in order.
 * Both return -1 with the error set for a word not in words.txt or the lexicon, a pdf out of the
 * matrix's range, or fewer frames than states. */
int decode_align(const struct decode_graph *g, const struct decode_opts *opts, const int *words,
                 int num_words, const struct matrix *loglikes, struct int32_vec *ali,
                 double *score);
int decode_align_equal(const struct decode_graph *g, const int *words, int num_words,
                       int num_frames, struct int32_vec *ali);
/* The id of a word in words.txt, or -1. */
int decode_graph_word_id(const struct decode_graph *g, const char *word);
/* Transcriptions ("<utt> <word> <word> ...", Kaldi's text, any rspecifier) loaded whole and
 * mapped to word ids through the graph's words.txt; looked up by key. open: -1 with the error set
 * naming the key and word for a word not in words.txt. lookup: -1 (error set) for a missing key. */
struct decode_text_reader {
    struct token_vec_map text; /* the transcripts, sorted by key */
    int **words;               /* words[i]: the ids of text.e[i]'s words */
};
int decode_text_open(struct decode_text_reader *tr, const char *rspecifier,
                     const struct decode_graph *g);
int decode_text_lookup(const struct decode_text_reader *tr, const char *key, const int **words,
                       int *num_words);
void decode_text_close(struct decode_text_reader *tr);
/* What the aligners (align-equal, align-mapped) open together: the lang directory's graph, the
 * transcripts, a reader of one matrix per utterance (features or log-likelihoods) and a writer of
 * alignments (int32 vectors). open: 0, or -1 with error_set (nothing left open). close(a, rc):
 * rc is the reading loop's last table_reader_next status; -1 (error set) if it was an error or a
 * close failed; everything is freed either way. */
struct decode_aligner {
    struct decode_graph *g;
    struct decode_text_reader text;
    struct table_reader in;
    struct table_writer out;
};
int decode_aligner_open(struct decode_aligner *a, const char *lang, const struct decode_opts *o,
                        const char *matrix_rspec, const char *text_rspec, const char *ali_wspec);
int decode_aligner_close(struct decode_aligner *a, int rc);

/* ---- word error rate ---- */
struct decode_edit_counts {
    long long ref_words, ins, del, sub;
};
/* Adds the errors of one hypothesis against its reference to *c. */
void decode_edit_counts_add(struct decode_edit_counts *c, char *const *ref, int num_ref,
                            char *const *hyp, int num_hyp);

#endif
