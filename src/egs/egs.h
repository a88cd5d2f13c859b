/* egs: training examples ("egs"), their archive format, and the example-archive plumbing.
 *
 * An example is what Kaldi nnet2 calls an NnetExample (Kaldi's nnet2/nnet-example.h): a block of
 * input frames, rows = L + T + R, where L = left_context input rows precede the T labelled
 * frames and R = rows - L - T follow them; and for each of the T frames a sparse list of
 * (index, weight) labels (possibly empty: a padding frame at the end of an utterance). A network
 * with context (l, r), l <= L and r <= R, sees rows L-l .. L+T+r-1 and gives T output rows.
 * Optional per-speaker features spk_info are appended as extra columns to every input row.
 *
 * Storage. An example keeps its input in the form it was stored in, so that copy, shuffle and
 * subset never decode and re-encode (no quantization drift):
 *   EXAMPLE_STORE_FLOAT  a host float matrix                                 (4 bytes / value)
 *   EXAMPLE_STORE_CM     a Kaldi CompressedMatrix: CM (8-bit, per-column percentiles), CM2
 *                        (16-bit) or CM3 (8-bit, global range)             (~1 or 2 bytes / value)
 *   EXAMPLE_STORE_ZLIB   deflated float32 little-endian row-major bytes (lossless)
 *   EXAMPLE_STORE_PQ     parnet's per-dimension quantisation: 8- or 16-bit codes against a range
 *                        table (per input dimension a min and a step) shared by many examples
 *                        (see "PQ" below; ~1 or 2 bytes / value plus the table once)
 * example_set_input() stores a matrix under a compression choice (enum egs_compress):
 *   none  -> FLOAT;   16bit -> CM2 (range from the data; error <= range / 131070);
 *   8bit  -> CM when rows > 8 (Kaldi's choice for egs; per-column percentiles), else CM3
 *            (range from the data; error <= range / 510) — Kaldi would take CM2 for <= 8 rows, but
 *            8-bit was asked for, and CM on one row costs 9 bytes a value;
 *   zlib  -> ZLIB (bit-exact);
 *   kaldi -> CM when rows > 8, else CM2: exactly what Kaldi nnet2 writes, so Kaldi reads the
 *            archive whatever its layout (8-bit error for CM, 16-bit for CM2).
 * The egs writers (nnet-get-egs, nnet-copy-egs --compress) store examples of at most
 * EGS_PQ_MAX_ROWS rows (one-row examples above all), and every example of more than one labelled
 * frame (Kaldi get_egs2's layout: N frames sharing their context), as PQ instead, through an
 * egs_pq_encoder (egs_store_input): a range per dimension, as Kaldi's CM has per column, so that
 * features on scales 1e-3 .. 1e4 all keep their information, which one range per example (CM3,
 * CM2) cannot. 8-bit PQ examples of several labelled frames are written coded (version 2 below:
 * lossless, about 0.6 of the code bytes on filterbanks), which is what brings the multi-frame
 * layout to about 2.2x the bytes of Kaldi-compressed features per labelled frame (Kaldi's own
 * layout, CM per example: about 4x on 23-dim fbank).
 * example_input_decode*() write the decoded floats straight into caller rows (a host matrix view,
 * any stride), e.g. the trainer's minibatch matrix.
 *
 * Archive format (Kaldi's NnetExample; the same token sequence in binary and text):
 *   <NnetExample>
 *     <Lab1> IntegerVector          iff every frame has exactly one label of weight 1.0, else
 *     <Lab2> int32 T, per frame: int32 n, n x (int32 index, float weight)
 *     (<Labels> int32 n, n x (int32, float): legacy one-frame form, read only)
 *   <InputFrames> matrix
 *   <LeftContext> int32
 *   <SpkInfo> Vector (FV, possibly empty)
 *   </NnetExample>
 * The matrix after <InputFrames> is, in binary mode, one of FM / DM (read as FLOAT; written FM),
 * CM / CM2 / CM3 (kept as stored; Kaldi writes these), or our own zlib form (Kaldi cannot read it):
 *   "ZM " int32 version (= 1), int32 rows, int32 cols, int32 nbytes, then nbytes raw bytes of
 *   zlib-deflated float32 little-endian row-major data (rows * cols * 4 bytes when inflated).
 * or our per-dimension form PQ (parnet only; Kaldi cannot read it), version EGS_PQ_VERSION:
 *   "PQ " int32 version (= 1), int32 bits (8 or 16), int32 rows, int32 cols, int32 id_hi,
 *   int32 id_lo, int32 inline (0 or 1); if inline: cols raw float32 min[], cols raw float32
 *   step[] (the range table); then rows * cols codes, uint8 or uint16 little-endian, row-major.
 *   Value (r, j) = min[j] + step[j] * code(r, j). Version 2 (EGS_PQ_VERSION_CODED, 8 bits only)
 *   has the same fields and table, then int32 nbytes and nbytes of the codes coded losslessly
 *   (row-major; a median-edge prediction from the left, upper and upper-left codes and an
 *   adaptive Golomb-Rice code of the residual per column, as LOCO-I: src/egs/pq-code.c). The 64-bit id (id_hi << 32 | id_lo) is an
 *   FNV-1a hash of (int32 bits, int32 cols, min[], step[]); a reader checks it against the
 *   content of an inline table. A writer puts a table inline in the first example of a stream
 *   that uses it and refers to it by id (inline = 0) after that; a reader keeps every table its
 *   stream has held (so a shuffled archive, or "cat a.ark b.ark |", reads), and an example that
 *   refers to a table its stream has not held is an error naming it. So a PQ archive is read
 *   from its start: sequentially, or through an scp in archive order; random access to a key
 *   whose table is inline in an earlier entry fails with that message. The ranges come from the
 *   writer's own examples, so the same features written by two nnet-get-egs runs over different
 *   sets decode slightly differently (each within the bound); tests that compare training on
 *   differently made archives exactly store --compress=none.
 * Every int32 above has Kaldi's 0x04 size byte. In text mode the input is always written as a
 * plain text matrix (decoded, as Kaldi writes a CompressedMatrix in text) and read as FLOAT.
 *
 * Ownership and errors. struct example is caller-owned: it starts zeroed (or example_init) and
 * example_release frees what it holds. Readers return 0 or -1 with error_set (stream name, byte
 * offset, reason; table readers add the key) and never exit; sizes from files are checked
 * against the bytes left before anything is allocated. The egs_* tool functions below log their
 * warnings (skipped utterances) with WARN and return -1 with error_set on a failure.
 */
#ifndef PARNET_EGS_EGS_H
#define PARNET_EGS_EGS_H

#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/base.h"
#include "io/io.h"
#include "matrix/matrix.h"

enum example_storage {
    EXAMPLE_STORE_FLOAT = 0,
    EXAMPLE_STORE_CM = 1,
    EXAMPLE_STORE_ZLIB = 2,
    EXAMPLE_STORE_PQ = 3,
};

/* How example inputs are stored (--compress=none|8bit|16bit|zlib); KEEP leaves stored inputs as
 * they are (nnet-copy-egs default). */
enum egs_compress {
    EGS_COMPRESS_KEEP = -1,
    EGS_COMPRESS_NONE = 0,
    EGS_COMPRESS_8BIT = 1,
    EGS_COMPRESS_16BIT = 2,
    EGS_COMPRESS_ZLIB = 3,
    EGS_COMPRESS_KALDI = 4,
};

#define EXAMPLE_ZLIB_VERSION 1
#define EGS_PQ_VERSION 1
#define EGS_PQ_VERSION_CODED 2

/* A PQ range table: value = min[j] + step[j] * code, code in 0 .. 2^bits - 1. Shared
 * (reference-counted, thread-safe counts) by every example stored with it; read-only once made. */
struct egs_pq_table {
    atomic_int refs;
    int bits, cols;
    uint64_t id; /* FNV-1a of the content (archive format above) */
    float *min, *step; /* (cols) */
};

struct example {
    int num_frames;              /* T >= 1: labelled frames */
    int left_context;            /* L >= 0 */
    int rows, cols;              /* input frames: L + T + R rows, cols features each */
    int storage;                 /* enum example_storage */
    struct matrix input;         /* FLOAT: host (rows, cols), owned */
    struct compressed_matrix cm; /* CM: (rows, cols) */
    unsigned char *zdata;        /* ZLIB: (zsize) deflated bytes */
    size_t zsize;
    struct egs_pq_table *pq;     /* PQ: the range table (a reference held) */
    unsigned char *pq_codes;     /* PQ: rows * cols codes of pq->bits / 8 bytes, little-endian */
    int pq_coded;                /* PQ (8 bits): written coded (version 2); codes stay plain here */
    int *label_start;     /* (num_frames + 1): frame t owns labels [start[t], start[t+1]) */
    int32_t *label_index; /* (label_start[num_frames]) */
    float *label_weight;  /* (label_start[num_frames]) */
    float *spk_info;      /* (spk_dim), appended to every input row; NULL when spk_dim == 0 */
    int spk_dim;
};

void example_init(struct example *eg); /* zeroes */
void example_release(struct example *eg);
/* Deep copy in stored form (no decode). dst: zeroed or an example (released first). */
void example_copy(struct example *dst, const struct example *src);

static inline int example_right_context(const struct example *eg) {
    return eg->rows - eg->left_context - eg->num_frames;
}
static inline int example_input_dim(const struct example *eg) { return eg->cols + eg->spk_dim; }
static inline int example_num_labels(const struct example *eg) {
    return eg->label_start ? eg->label_start[eg->num_frames] : 0;
}

/* Labels. start has num_frames + 1 entries (start[0] == 0, non-decreasing); index/weight have
 * start[num_frames] entries. Copies. num_frames >= 1. */
void example_set_labels(struct example *eg, int num_frames, const int *start, const int32_t *index,
                        const float *weight);
/* One label of weight 1 per frame (as from ali-to-pdf). */
void example_set_labels_simple(struct example *eg, int num_frames, const int32_t *index);

/* Store m (host, rows x cols, any stride) as the input, with left_context L, under compress
 * (not KEEP). The labels must be set first or later; rows >= L + num_frames is checked by the
 * writer. Returns 0, or -1 (error_set) if quantization fails (NaN/Inf in m). */
int example_set_input(struct example *eg, const struct matrix *m, int left_context, int compress);
/* Re-store the input under another compression; KEEP, or a choice the input already satisfies
 * (FLOAT for none, CM3/CM/PQ8 for 8bit, CM2/PQ16 for 16bit, ZLIB for zlib, any CM for kaldi),
 * leaves it
 * untouched. Without an encoder (example_recompress_with below) a small example goes to CM3/CM2. */
int example_recompress(struct example *eg, int compress);
/* Keep labelled frame t only (0 <= t < num_frames): its labels, left_context + t, the input as it
 * is (no decoding). Returns the labels that frame has (0: a padding frame). */
int example_select_frame(struct example *eg, int t);
/* Short name of the stored form: "float", "cm", "cm2", "cm3", "zlib", "pq8", "pq16". */
const char *example_storage_name(const struct example *eg);

/* Decode input rows [row0, row0 + n) into dst (host, n x example_input_dim, any stride); spk_info
 * fills the last spk_dim columns. Returns 0, or -1 (error_set) on corrupt deflated data. */
int example_input_decode_rows(const struct example *eg, int row0, int n, struct matrix *dst);
/* All rows: dst is rows x example_input_dim. */
int example_input_decode(const struct example *eg, struct matrix *dst);

/* Kaldi object I/O (header excluded): binary as given by io_read_header. *eg is zeroed or an
 * example (released first). */
int example_read(struct kin *in, int binary, struct example *eg);
int example_write(struct kout *out, int binary, const struct example *eg);

/* The table holder: struct example objects in ark/scp tables, ark,bg: included. */
extern const struct holder_ops holder_example;

/* ---- PQ: per-dimension ranges shared by many examples (the archive format above) ----
 * An encoder keeps per-dimension ranges [lo, hi] and the table made from them. observe() widens
 * them to cover a matrix exactly (a probe: nnet-get-egs and nnet-copy-egs observe their first
 * EGS_COMPRESS_PROBE examples); the first store() after observing widens every range by
 * EGS_PQ_PROBE_MARGIN of its width on each side (a side at exactly 0 stays: non-negative
 * features); a stored matrix outside the ranges widens the ranges it leaves (to cover it, plus
 * EGS_PQ_GROW_MARGIN of the new width on that side) and starts a new table, so tables change
 * rarely and one archive holds few. A range that spans 0 has 0 on its grid (decodes exactly).
 * Error per value: at most step / 2 (plus float rounding), step = width / 255 (8 bit) or
 * / 65535 (16 bit) of its own dimension (/ 254, / 65534 for a range spanning 0).
 * A matrix with a value beyond 1e30 in magnitude (or NaN/Inf) goes to example_set_input. */
#define EGS_PQ_MAX_ROWS 8
#define EGS_PQ_PROBE_MARGIN 0.25
#define EGS_PQ_GROW_MARGIN 1.0
struct egs_pq_encoder {
    int bits, cols;
    double *lo, *hi; /* (cols) */
    int seen, dirty, observed;
    struct egs_pq_table *table; /* current (a reference held), NULL before the first store */
    long long num_tables;       /* tables made so far */
};
void egs_pq_encoder_init(struct egs_pq_encoder *e, int bits); /* bits 8 or 16 */
void egs_pq_encoder_release(struct egs_pq_encoder *e);
void egs_pq_encoder_observe(struct egs_pq_encoder *e, const struct matrix *m);
/* Store m (host, any stride; not a view of eg's input) as eg's input under the encoder's
 * table, with left_context. 0, or -1 (error_set: NaN/Inf). */
int egs_pq_encoder_store(struct egs_pq_encoder *e, struct example *eg, const struct matrix *m,
                         int left_context);
/* The writers' choice: PQ through enc for 8bit/16bit examples of <= EGS_PQ_MAX_ROWS rows or of
 * more than one labelled frame (enc of the matching bits; the labels must be set; 8-bit
 * multi-frame ones coded), else example_set_input. enc may be NULL (always example_set_input). */
int egs_store_input(struct egs_pq_encoder *enc, struct example *eg, const struct matrix *m,
                    int left_context, int compress);
/* Whether egs_store_input stores an input of this shape as PQ (under 8bit/16bit). */
int egs_pq_applies(int rows, int num_frames);
/* example_recompress through egs_store_input. */
int example_recompress_with(struct example *eg, int compress, struct egs_pq_encoder *enc);
/* A table from ranges (lo[j] <= hi[j], |.| <= 1e30), refcount 1; and the counts. */
struct egs_pq_table *egs_pq_table_new(int bits, int cols, const double *lo, const double *hi);
struct egs_pq_table *egs_pq_table_ref(struct egs_pq_table *t);
void egs_pq_table_unref(struct egs_pq_table *t); /* NULL is ok */

/* "none" "8bit" "16bit" "zlib" "kaldi", and "keep" or "" -> KEEP. 0, or -1 (error_set). */
int egs_compress_parse(const char *s, int *compress);

/* ---- the error of lossy storage (nnet-get-egs, nnet-copy-egs) ----
 * Per input dimension j: the root mean square of (stored - original) over all rows, relative to
 * the dimension's standard deviation over those rows (a noise-to-signal ratio; a constant
 * dimension, which carries nothing, is left out); the worst is the largest over dimensions. nnet-get-egs stores a probe of the first EGS_COMPRESS_PROBE examples first: if
 * the asked-for format's worst relative error there exceeds EGS_COMPRESS_MAX_REL_ERROR, it falls
 * back to the next finer one (8bit -> 16bit -> zlib, lossless) with a warning; at the end it
 * logs the worst relative error over all examples (and warns past the bound). nnet-copy-egs
 * --compress measures and warns the same way. Examples of <= EGS_PQ_MAX_ROWS rows are stored as
 * PQ (a range per dimension), so the fallback acts only on dimensions whose outliers lie far
 * beyond their usual values, and on longer examples under 16bit (Kaldi CM2: one range). */
#define EGS_COMPRESS_MAX_REL_ERROR 0.1
#define EGS_COMPRESS_PROBE 1000
/* The --help paragraph on what each --compress mode keeps, shared by the egs writers; each
 * program ends it with what it does past the bound. */
#define EGS_COMPRESS_HELP \
    "--compress: what each mode keeps. none: the floats as given. zlib: lossless (deflated\n" \
    "floats; parnet only). 8bit / 16bit: examples of at most 8 rows (one-row examples above all)\n" \
    "in parnet's PQ form (Kaldi cannot read it): a range per input dimension, shared by the\n" \
    "examples (its table is written once per archive), 255 / 65535 steps of each dimension's own\n" \
    "range, so features on very different scales all keep their information; examples of more\n" \
    "than 8 rows in Kaldi's CM (8bit: a range per column, from percentiles) or CM2 (16bit: one\n" \
    "range per example). The error is measured per input dimension (RMS error / the dimension's\n" \
    "standard deviation) and reported; past 0.1 "

struct egs_compress_check {
    int dim;
    long long rows;
    double *sum, *sumsq, *err_sq; /* (dim) */
    struct matrix scratch;
};
void egs_compress_check_init(struct egs_compress_check *c);
void egs_compress_check_release(struct egs_compress_check *c);
/* Add one example: orig (host, the input before storage: rows x cols) against stored's decoded
 * input. Returns 0, or -1 (error_set: dimension mismatch, corrupt stored data). */
int egs_compress_check_add(struct egs_compress_check *c, const struct matrix *orig,
                           const struct example *stored);
/* The worst relative error and (dim, may be NULL) where; 0 and -1 before anything varied. */
double egs_compress_check_worst(const struct egs_compress_check *c, int *dim);

/* ---- minibatches (for the trainer) ---- */
/* K examples of one shape -> one input matrix of K * rows_per_eg rows, example k at rows
 * [k * rows_per_eg, (k+1) * rows_per_eg), and the labels as (row, index, weight) triples where
 * row = k * frames_per_eg + t is the network output row of frame t of example k. */
struct egs_minibatch {
    struct matrix input; /* (num_egs * rows_per_eg, input_dim), host: owned, or a view of storage */
    struct matrix storage; /* egs_reader_read's rows, grown to its largest minibatch, reused */
    int num_egs, rows_per_eg, frames_per_eg, input_dim;
    int left_context, right_context; /* of the rows in input (after trimming) */
    int num_labels;
    int *label_row;       /* (num_labels) */
    int32_t *label_index; /* (num_labels) */
    float *label_weight;  /* (num_labels) */
    int label_cap;
};
void egs_minibatch_init(struct egs_minibatch *mb);
void egs_minibatch_release(struct egs_minibatch *mb);
/* Build from egs[0..n). left/right >= 0 trims each example's surplus context to (left, right)
 * (the network's context); left = right = -1 keeps the examples' own context, which must then
 * agree. Returns 0, or -1 (error_set naming the example) when shapes differ, context is too
 * short or an input is corrupt. Storage is reused between calls. */
int egs_minibatch_build(struct egs_minibatch *mb, const struct example *const *egs, int n, int left,
                        int right);

/* ---- reading straight into minibatches (the trainer's reading thread) ----
 * An egs_reader reads an example table into minibatches without an intermediate struct example
 * per example: a binary example whose FM input has the shape of the example before it and
 * needs no trimming is parsed straight from the stream buffer into its rows of mb->storage
 * (the one copy after the kernel's), its labels into arrays the reader reuses; nothing is
 * allocated per example. Any other example (text; CM, CM2, CM3, ZM or DM input; a new shape; or
 * surplus context to trim) is read into a struct example and decoded into its rows as
 * egs_minibatch_build does. mb->input is a view of the first num_egs * rows_per_eg rows of
 * mb->storage, which grows to the largest minibatch and is then reused; the checks and messages
 * are egs_minibatch_build's, with the archive and key. With ark,bg: read-ahead every example
 * takes the struct example way. */
struct egs_reader;
/* NULL (error_set) if rspec cannot be opened. */
struct egs_reader *egs_reader_open(const char *rspec);
/* Up to max_egs >= 1 examples into mb (egs_minibatch_init'ed, or filled by this reader before);
 * left/right as egs_minibatch_build. Returns the number read (0 at the end of the table), or -1
 * (error_set naming the archive, the key and the reason; mb is then unusable until refilled). */
int egs_reader_read(struct egs_reader *r, struct egs_minibatch *mb, int max_egs, int left,
                    int right);
/* The key of the example read last ("" before the first and at the end). */
const char *egs_reader_key(const struct egs_reader *r);
/* 0, or -1 (error_set) if the table's source failed (a pipe that exited non-zero). NULL is ok. */
int egs_reader_close(struct egs_reader *r);

/* ---- the programs' library calls ---- */
struct egs_get_opts {
    int left_context, right_context; /* >= 0: context rows spliced around each block */
    int num_frames;                  /* >= 1: labelled frames per example */
    int compress;                    /* enum egs_compress (not KEEP) */
    int num_pdfs;                    /* > 0: labels must be < num_pdfs; 0: unknown */
};
struct egs_stats {
    double worst_rel_error; /* egs_get, egs_copy with compress: egs_compress_check_worst */
    int worst_dim;          /* and its dimension (-1: none) */
    int compress_used;      /* egs_get: the format used (after a fallback) */
    long long num_read;    /* examples (or utterances for egs_get) read */
    long long num_written; /* examples written (egs_copy: over all outputs) */
    long long num_skipped; /* egs_get: utterances skipped with a warning */
};

/* Cut one utterance (feats: host T x D; labels: T int32) into examples: blocks of num_frames
 * frames starting at 0, num_frames, ...; context rows outside the utterance repeat its first or
 * last frame; frames past the end of the last block get no labels. Each example is passed to
 * emit with the key "<utt>-<start>"; emit returns 0 or -1 (stops). */
int egs_cut_utterance(const char *utt, const struct matrix *feats, const int32_t *labels,
                      const struct egs_get_opts *opts,
                      int (*emit)(void *ctx, const char *key, const struct example *eg), void *ctx);
/* The same with per-frame (index, weight) lists (a Kaldi Posterior, post->num_frames == T): frame
 * t of a block carries all of its pairs. */
int egs_cut_utterance_post(const char *utt, const struct matrix *feats,
                           const struct posterior *post, const struct egs_get_opts *opts,
                           int (*emit)(void *ctx, const char *key, const struct example *eg),
                           void *ctx);
/* nnet-get-egs: features (matrices) + per-frame targets -> examples. The targets table holds, per
 * utterance, either an int32 vector of ids (ali-to-pdf) or a Kaldi Posterior (ali-to-post; soft or
 * weighted targets), told apart per object (io.h holder_targets). It is read by random access,
 * as Kaldi's RandomAccessTableReader (io.h table_reader_lookup): an scp or an archive file is
 * indexed by key, a pipe read as far as each key needs, so nothing of the corpus is held beyond
 * the index.
 * An utterance without labels, or whose label count differs from its frame count, is skipped
 * with a warning and counted (num_skipped); num_read counts utterances processed. A negative
 * label (or one >= num_pdfs) and a NaN/Inf feature are errors naming the file and key. */
int egs_get(const char *feats_rspec, const char *labels_rspec, const char *egs_wspec,
            const struct egs_get_opts *opts, struct egs_stats *st);
/* nnet-shuffle-egs: buffer_size 0 reads everything and shuffles (Fisher-Yates); B > 0 streams
 * through B slots (each example lands in a random slot, evicting its occupant; at the end the
 * slots are flushed in order). Both seeded by srand. */
int egs_shuffle(const char *in_rspec, const char *out_wspec, int buffer_size, uint64_t srand,
                struct egs_stats *st);
/* nnet-shuffle-egs --class-balanced=m: class-balanced ("iid") microbatches as the GAF reference
 * samples them (sample_iid_mbs_for_GAF). The class of an example is its first label. Reads
 * everything; writes floor(N / (C m n)) groups (C: the classes present, n = group) of n blocks of
 * C m examples, each block holding m examples of every class in random order; each class gives
 * m n distinct examples to a group (a class with fewer repeats its own), drawn afresh for every
 * group, so a block is a minibatch of size C m and a group one GAF step of n microbatches.
 * Examples recur across groups (sampling with replacement between steps): keys get "-d<k>",
 * k the output position. Error if no group can be formed. */
int egs_shuffle_balanced(const char *in_rspec, const char *out_wspec, int per_class, int group,
                         uint64_t srand, struct egs_stats *st);
/* nnet-copy-egs: each example is written floor(p) or ceil(p) times (p = keep_proportion, p in
 * expectation), each time to the next output in turn, or a random one (random != 0). compress
 * re-stores inputs (KEEP: as read). frame >= 0 (or EGS_FRAME_RANDOM: one drawn per example)
 * keeps only that labelled frame of each example (nnet2's --frame): its labels, the input as
 * stored, the left context moved to it (example_select_frame); an example without that frame,
 * or whose frame has no labels (padding at an utterance's end), is not written (num_skipped);
 * EGS_FRAME_ALL keeps every frame. */
#define EGS_FRAME_ALL (-1)
#define EGS_FRAME_RANDOM (-2)
int egs_copy(const char *in_rspec, const char *const *out_wspecs, int num_out, int random,
             uint64_t srand, double keep_proportion, int compress, int frame,
             struct egs_stats *st);
/* nnet-subset-egs: reservoir sampling of n examples, then (randomize_order) shuffled. */
int egs_subset(const char *in_rspec, const char *out_wspec, int n, uint64_t srand,
               int randomize_order, struct egs_stats *st);

/* nnet-egs-info: summary of an archive. Every input is decoded (so corrupt data is found) and the
 * decode time measured. label_weight[i] is the total weight of label index i (dim label_dim). */
struct egs_info {
    long long num_egs, num_frames, num_labels;
    int input_dim, cols, spk_dim; /* of the first example */
    int min_left, max_left, min_right, max_right, min_frames, max_frames;
    long long storage_count[7]; /* float, cm, cm2, cm3, zlib, pq8, pq16 */
    double *label_weight;       /* (label_dim) */
    long long *label_count;     /* (label_dim) */
    int label_dim;
    double stored_bytes;   /* input payload bytes as stored */
    double decoded_bytes;  /* float bytes after decoding */
    double decode_seconds; /* time inside example_input_decode */
};
int egs_info_compute(const char *in_rspec, struct egs_info *info);
void egs_info_print(FILE *f, const struct egs_info *info);
void egs_info_release(struct egs_info *info);

#endif
