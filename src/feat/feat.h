/* feat: speech front-end in Kaldi's definitions — WAVE reading, framing, mel filterbanks, fbank
 * and MFCC features, CMVN statistics, frame splicing, and the input transforms a network starts
 * with (mean/variance, LDA: nnet-get-feature-transform).
 *
 * Numbers follow Kaldi's src/feat/ (feature-window.cc, mel-computations.cc, feature-fbank.cc,
 * feature-mfcc.cc) so that with --dither=0 features match Kaldi's for the same audio to float
 * rounding. The FFT is FFTW3 in single precision (r2c; any padded length).
 *
 * ---- Audio ----
 * RIFF/WAVE, 16-bit signed PCM only (format tag 1, or 0xFFFE WAVE_FORMAT_EXTENSIBLE with the PCM
 * sub-format), any number of channels. Chunks before "fmt " / between "fmt " and "data" are
 * skipped. Samples are kept as floats in the int16 range (no scaling), as Kaldi does.
 * A data chunk size of 0, 0xFFFFFFFF or >= 0x7FFF0000 (a streamed WAVE: sox writing to a pipe
 * says 0x7FFFF000) means "to the end of the stream". A data chunk shorter than its header says
 * is read as far as it goes with a warning (Kaldi: "Truncated file?"). Errors (-1, error_set
 * naming the stream, byte offset and reason): not RIFF/WAVE, a truncated header, no "fmt " or
 * "data" chunk, a non-PCM format or a sample size other than 16 bits, zero channels or sample
 * rate, zero samples. Sizes from the file are checked against what is left in the stream before
 * allocating.
 *
 * ---- Tables of audio ----
 * feat_wave_reader iterates a wav rspecifier: "scp:wav.scp" (lines "utt rxfilename", where the
 * rxfilename may be "cmd |", "file:offset" or a path; see io.h) or "ark:..." (an archive of
 * "utt " + WAVE file, as Kaldi writes with wav-copy). Over an scp a bad entry (missing file,
 * failed command, bad audio) is reported for that utterance and the table goes on; in an archive
 * a bad entry ends the table (its framing is lost).
 *
 * ---- Frames (Kaldi FrameExtractionOptions) ----
 *   window_size  = (int)(samp_freq * 0.001 * frame_length_ms)   (400 at 16 kHz, 25 ms)
 *   window_shift = (int)(samp_freq * 0.001 * frame_shift_ms)    (160 at 10 ms)
 *   padded       = round_to_power_of_two ? next power of 2 >= window_size : window_size
 *   num_frames   snip_edges: n < size ? 0 : 1 + (n - size) / shift;
 *                else (n + shift / 2) / shift, frame f centred at shift * f + shift / 2, samples
 *                outside [0, n) reflected (-1 -> 0, n -> n - 1).
 * Per frame, in this order: dither (x += dither * N(0,1), from a struct rng seeded per utterance),
 * remove DC offset (subtract the frame mean), raw log-energy log(max(sum x^2, FLT_EPSILON)) when
 * asked, pre-emphasis (x[i] -= k x[i-1] for i = N-1..1, x[0] -= k x[0]), window, zero padding.
 * Windows, with a = 2 pi / (N - 1): hanning 0.5 - 0.5 cos(a i); hamming 0.54 - 0.46 cos(a i);
 * povey (0.5 - 0.5 cos(a i))^0.85; sine sin(a i / 2); rectangular 1; blackman
 * b - 0.5 cos(a i) + (0.5 - b) cos(2 a i), b = blackman_coeff (0.42).
 *
 * ---- Mel banks (Kaldi MelBanks, no VTLN) ----
 *   mel(f) = 1127 ln(1 + f / 700); high_freq <= 0 means nyquist + high_freq.
 *   Bin b in 0..B-1 is the triangle over mel points left = mel(low) + b d, centre = left + d,
 *   right = left + 2 d, d = (mel(high) - mel(low)) / (B + 1), evaluated at FFT bins
 *   i = 0..padded/2 - 1 (frequency i * samp_freq / padded; the Nyquist bin is never used):
 *   weight (m - left)/(centre - left) rising, (right - m)/(right - centre) falling, 0 outside the
 *   open interval (left, right).
 *
 * ---- Features ----
 *   fbank: power spectrum |X_i|^2 (i = 0..padded/2) — its square root if !use_power — through the
 *          mel banks; log(max(e, FLT_EPSILON)) if use_log_fbank. With use_energy the log-energy
 *          is column 0 (dim = num_bins + 1).
 *   mfcc:  log mel energies (floored at FLT_EPSILON) times the DCT-II matrix, orthonormal
 *          (row 0: sqrt(1/B); row k: sqrt(2/B) cos(pi k (j + 0.5) / B)), first num_ceps rows; then
 *          c_k *= 1 + (Q / 2) sin(pi k / Q) when Q = cepstral_lifter != 0; with use_energy c_0 is
 *          replaced by the log-energy.
 *   energy: raw_energy ? before pre-emphasis and window (see above) : after windowing,
 *          log(max(sum x^2, FLT_EPSILON)); floored at log(energy_floor) when energy_floor > 0.
 *
 * ---- CMVN statistics (Kaldi transform/cmvn.h) ----
 * A 2 x (D + 1) double matrix: row 0 = sum of frames, row 1 = sum of squares, [0][D] = count,
 * [1][D] = 0. Applying: mean = s0 / n; with variance norm var = s1 / n - mean^2 (floored at 1e-20
 * with a warning), x' = (x - mean) / sqrt(var); else x' = x - mean. count < 1 is an error.
 *
 * ---- Splicing (Kaldi splice-feats) ----
 * Row t of the output is rows t - left .. t + right of the input concatenated, indices clamped to
 * [0, T - 1] (the first / last frame repeated), dim = D (left + 1 + right).
 */
#ifndef PARNET_FEAT_FEAT_H
#define PARNET_FEAT_FEAT_H

#include <stdint.h>

#include "base/base.h"
#include "io/io.h"
#include "matrix/matrix.h"

/* ---- audio ---- */
struct feat_wave {
    float *data;          /* (num_channels, num_samples), channel-major */
    int num_channels;
    int64_t num_samples;  /* per channel */
    float samp_freq;
};
/* Read one WAVE file from the stream's current position. *w must be zeroed or hold a previous
 * wave (released first). 0, or -1 (error_set). A standalone file may give a streamed 'data'
 * size (0, 0xFFFFFFFF, just under 2^31: read to the end); a WAVE object in an archive
 * (holder_wave) must give its exact size: a streamed, odd (not a whole sample) or too large
 * size, or one the RIFF size does not cover, is an error, since reading on would swallow the
 * next utterances. */
int feat_wave_read(struct kin *in, struct feat_wave *w);
void feat_wave_release(struct feat_wave *w);
/* Write 16-bit PCM WAVE (values rounded and clipped to int16). For tests and tools. */
int feat_wave_write(struct kout *out, const struct feat_wave *w);
/* struct feat_wave as a table object (write: a WAVE file, binary flag ignored). */
extern const struct holder_ops holder_wave;

struct feat_wave_reader {
    int is_scp;
    struct table_reader ark;   /* is_scp == 0 */
    struct kin scp;            /* is_scp: the scp stream */
    char *line;
    size_t cap;
    char *key;
    char *rspecifier;
    int done;
};
/* Open a wav rspecifier ("scp:wav.scp", "ark:wav.ark", options as in io.h). 0 or -1. */
int feat_wave_reader_open(struct feat_wave_reader *r, const char *rspecifier);
/* 1: next utterance in *w; 2: an utterance that could not be read — its key is in
 * feat_wave_reader_key() and the reason in error_get() — the next call goes on; 0: end;
 * -1: the table itself failed (error_get()). */
int feat_wave_reader_next(struct feat_wave_reader *r, struct feat_wave *w);
const char *feat_wave_reader_key(const struct feat_wave_reader *r);
int feat_wave_reader_close(struct feat_wave_reader *r);

/* ---- options ---- */
enum feat_kind { FEAT_FBANK = 1, FEAT_MFCC = 2 };

struct feat_opts {
    int kind;                 /* enum feat_kind */
    /* frame extraction */
    float samp_freq;          /* 16000 */
    float frame_shift_ms;     /* 10 */
    float frame_length_ms;    /* 25 */
    float dither;             /* 1.0 */
    float preemph_coeff;      /* 0.97 */
    int remove_dc_offset;     /* 1 */
    const char *window_type;  /* "povey" */
    int round_to_power_of_two; /* 1 */
    float blackman_coeff;     /* 0.42 */
    int snip_edges;           /* 1 */
    /* mel banks */
    int num_bins;             /* 23 */
    float low_freq;           /* 20 */
    float high_freq;          /* 0 (nyquist) */
    /* features */
    int use_energy;           /* fbank 0, mfcc 1 */
    float energy_floor;       /* 0 */
    int raw_energy;           /* 1 */
    int use_log_fbank;        /* fbank: 1 */
    int use_power;            /* fbank: 1 */
    int num_ceps;             /* mfcc: 13 */
    float cepstral_lifter;    /* mfcc: 22 */
};
/* Kaldi's defaults for the kind. */
void feat_opts_default(struct feat_opts *o, int kind);
/* Fill specs[] with the options of the kind (Kaldi's names and help); returns how many (at most
 * FEAT_MAX_SPECS). The strings and pointers stay valid while *o lives. */
#define FEAT_MAX_SPECS 32
int feat_opts_specs(struct feat_opts *o, struct option_spec *specs);
/* Validate (window type, frequencies, sizes). 0 or -1 (error_set). */
int feat_opts_check(const struct feat_opts *o);

int feat_window_size(const struct feat_opts *o);
int feat_window_shift(const struct feat_opts *o);
int feat_padded_window_size(const struct feat_opts *o);
int64_t feat_num_frames(int64_t num_samples, const struct feat_opts *o);

/* ---- computing features ---- */
struct feat_computer;
/* NULL with error_set if the options are invalid. */
struct feat_computer *feat_computer_new(const struct feat_opts *o);
void feat_computer_free(struct feat_computer *c);
int feat_computer_dim(const struct feat_computer *c);
/* Features of one channel of n samples sampled at samp_freq (must equal the options' rate).
 * rng: the dither source (used only when dither != 0; may be NULL then). *out must be zeroed or
 * a host matrix; it becomes num_frames x dim (0 x 0 when the signal is shorter than a frame).
 * 0, or -1 (error_set) on a sample-rate mismatch. */
int feat_compute(struct feat_computer *c, const float *wave, int64_t n, float samp_freq,
                 struct rng *rng, struct matrix *out);
/* Seed for an utterance's dither: a hash of its key mixed with a user seed, so that results do
 * not depend on the order or the subset of utterances processed. */
uint64_t feat_dither_seed(const char *key, int seed);

/* The loop of compute-fbank-feats / compute-mfcc-feats: every utterance of a wav rspecifier to a
 * feature wspecifier. channel: -1 expects mono (takes channel 0 of a multi-channel file with a
 * warning), else that channel (an utterance without it is skipped with a warning). Utterances
 * shorter than min_duration seconds, or too short for one frame, and bad audio are skipped with a
 * warning naming the utterance. subtract_mean: remove each utterance's feature mean. seed: mixed
 * into every utterance's dither seed. Returns 0 with the counts, or -1 (error_set) when a table
 * failed (the output is then aborted). */
struct feat_table_opts {
    int channel;        /* -1 */
    int subtract_mean;  /* 0 */
    float min_duration; /* 0 */
    int seed;           /* 0 */
};
/* The option entries of *t (--channel, --subtract-mean, --min-duration, --seed) into specs (room
 * for FEAT_TABLE_SPECS); returns their number. The pointers stay valid while *t lives. */
#define FEAT_TABLE_SPECS 4
int feat_table_opts_specs(struct feat_table_opts *t, struct option_spec *specs);
int feat_compute_table(const struct feat_opts *o, const struct feat_table_opts *t,
                       const char *wav_rspecifier, const char *feats_wspecifier,
                       long long *num_done, long long *num_total);

/* ---- CMVN ---- */
/* A host double matrix (Kaldi Matrix<double>); also a table object. */
struct feat_dmatrix {
    double *data; /* (rows, cols) row-major, stride = cols */
    int rows, cols;
};
void feat_dmatrix_init(struct feat_dmatrix *m, int rows, int cols); /* zeroed */
void feat_dmatrix_release(struct feat_dmatrix *m);
/* Reads DM exactly and FM (converted); text as Kaldi writes it. Writes DM. */
extern const struct holder_ops holder_double_matrix;

/* stats must be 2 x (feats->cols + 1) (or 0 x 0: initialised then). Adds every row. */
void feat_cmvn_acc(struct feat_dmatrix *stats, const struct matrix *feats);
/* Normalise feats in place. -1 (error_set) on a dimension mismatch, count < 1, or a non-finite
 * scale. norm_vars needs norm_means (checked by the caller). */
int feat_cmvn_apply(const struct feat_dmatrix *stats, int norm_vars, struct matrix *feats);

/* ---- splicing ---- */
/* *out: zeroed or a host matrix; becomes in->rows x in->cols * (left + 1 + right). */
void feat_splice(const struct matrix *in, int left, int right, struct matrix *out);

/* ---- input transforms (feature-transform.c) ----
 * Input normalisation (nnet-get-feature-transform; Kaldi nnet2's get_lda.sh /
 * nnet-get-feature-transform): per-dimension mean/variance, or LDA on spliced frames, as the
 * (out x in+1) matrix a FixedAffineComponent reads (matrix=F: linear part | bias column). It
 * reads feature tables, not example archives, and knows nothing of the network. */

enum feature_transform_type {
    FEATURE_TRANSFORM_MEANVAR, /* x -> (x - mean) / stddev per dimension (constant: centred) */
    FEATURE_TRANSFORM_LDA,     /* LDA on frames spliced with left/right context: the rows, largest
                                * between-class variance first, decorrelate the within-class
                                * covariance; each output dimension has unit total variance */
};
struct feature_transform_options {
    enum feature_transform_type type;
    int left_context, right_context; /* LDA: frames spliced around each frame (edges repeated) */
    int dim;                          /* LDA: output dimension (0: all) */
};
void feature_transform_options_default(struct feature_transform_options *o);
/* Statistics of every frame of feats_rspec (labels_rspec: per-frame int32 labels, LDA only; an
 * utterance without matching labels is left out with a warning) -> *out (host, matrix_init'ed):
 * the (out x in + 1) matrix [A | b] of a FixedAffineComponent's matrix=F, y = A x + b. *num_frames
 * (may be NULL) receives the frames used. Returns 0, or -1 (error_set: file, key, reason). */
int feature_transform_estimate(const char *feats_rspec, const char *labels_rspec,
                               const struct feature_transform_options *o, struct matrix *out,
                               long long *num_frames);

#endif
