/* Framing, windows, mel banks, fbank and MFCC (definitions in feat.h, after Kaldi's src/feat/). */
#include "feat/feat.h"

#include <float.h>
#include <fftw3.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

void feat_opts_default(struct feat_opts *o, int kind) {
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->samp_freq = 16000.0f;
    o->frame_shift_ms = 10.0f;
    o->frame_length_ms = 25.0f;
    o->dither = 1.0f;
    o->preemph_coeff = 0.97f;
    o->remove_dc_offset = 1;
    o->window_type = "povey";
    o->round_to_power_of_two = 1;
    o->blackman_coeff = 0.42f;
    o->snip_edges = 1;
    o->num_bins = 23;
    o->low_freq = 20.0f;
    o->high_freq = 0.0f;
    o->use_energy = kind == FEAT_MFCC;
    o->energy_floor = 0.0f;
    o->raw_energy = 1;
    o->use_log_fbank = 1;
    o->use_power = 1;
    o->num_ceps = 13;
    o->cepstral_lifter = 22.0f;
}

int feat_opts_specs(struct feat_opts *o, struct option_spec *specs) {
    int n = 0;
    OPTION("sample-frequency", OPT_FLOAT, &o->samp_freq,
           "Waveform data sample frequency (must match the waveform file, if specified there)");
    OPTION("frame-length", OPT_FLOAT, &o->frame_length_ms, "Frame length in milliseconds");
    OPTION("frame-shift", OPT_FLOAT, &o->frame_shift_ms, "Frame shift in milliseconds");
    OPTION("dither", OPT_FLOAT, &o->dither, "Dithering constant (0.0 means no dither)");
    OPTION("preemphasis-coefficient", OPT_FLOAT, &o->preemph_coeff,
           "Coefficient for use in signal preemphasis");
    OPTION("remove-dc-offset", OPT_BOOL, &o->remove_dc_offset,
           "Subtract mean from waveform on each frame");
    OPTION("window-type", OPT_STRING, &o->window_type,
           "Type of window "
           "(\"hamming\"|\"hanning\"|\"povey\"|\"rectangular\"|\"sine\"|\"blackman\")");
    OPTION("round-to-power-of-two", OPT_BOOL, &o->round_to_power_of_two,
           "If true, round window size to power of two by zero-padding input to FFT.");
    OPTION("blackman-coeff", OPT_FLOAT, &o->blackman_coeff,
           "Constant coefficient for generalized Blackman window.");
    OPTION("snip-edges", OPT_BOOL, &o->snip_edges,
           "If true, end effects will be handled by outputting only frames that completely fit in "
           "the file, and the number of frames depends on the frame-length.  If false, the number "
           "of frames depends only on the frame-shift, and we reflect the data at the ends.");
    OPTION("num-mel-bins", OPT_INT, &o->num_bins, "Number of triangular mel-frequency bins");
    OPTION("low-freq", OPT_FLOAT, &o->low_freq, "Low cutoff frequency for mel bins");
    OPTION("high-freq", OPT_FLOAT, &o->high_freq,
           "High cutoff frequency for mel bins (if <= 0, offset from Nyquist)");
    OPTION("use-energy", OPT_BOOL, &o->use_energy,
           o->kind == FEAT_MFCC ? "Use energy (not C0) in MFCC computation"
                                : "Add an extra dimension with energy to the FBANK output.");
    OPTION("energy-floor", OPT_FLOAT, &o->energy_floor,
           "Floor on energy (absolute, not relative) in MFCC/FBANK computation. Only makes a "
           "difference if --use-energy=true; only necessary if --dither=0.0.  Suggested values: "
           "0.1 or 1.0");
    OPTION("raw-energy", OPT_BOOL, &o->raw_energy,
           "If true, compute energy before preemphasis and windowing");
    if (o->kind == FEAT_MFCC) {
        OPTION("num-ceps", OPT_INT, &o->num_ceps,
               "Number of cepstra in MFCC computation (including C0)");
        OPTION("cepstral-lifter", OPT_FLOAT, &o->cepstral_lifter,
               "Constant that controls scaling of MFCCs");
    } else {
        OPTION("use-log-fbank", OPT_BOOL, &o->use_log_fbank,
               "If true, produce log-filterbank, else produce linear.");
        OPTION("use-power", OPT_BOOL, &o->use_power, "If true, use power, else use magnitude.");
    }
    ASSERT(n <= FEAT_MAX_SPECS);
    return n;
}

static int window_code(const char *t) {
    static const char *names[] = {"hanning", "sine", "hamming", "povey", "rectangular",
                                  "blackman"};
    for (int i = 0; i < 6; i++)
        if (!strcmp(t, names[i])) return i;
    return -1;
}

int feat_window_size(const struct feat_opts *o) {
    return (int)(o->samp_freq * 0.001f * o->frame_length_ms);
}
int feat_window_shift(const struct feat_opts *o) {
    return (int)(o->samp_freq * 0.001f * o->frame_shift_ms);
}
int feat_padded_window_size(const struct feat_opts *o) {
    int n = feat_window_size(o);
    if (!o->round_to_power_of_two) return n;
    int p = 1;
    while (p < n) p <<= 1;
    return p;
}

int64_t feat_num_frames(int64_t num_samples, const struct feat_opts *o) {
    int64_t shift = feat_window_shift(o), size = feat_window_size(o);
    if (o->snip_edges) return num_samples < size ? 0 : 1 + (num_samples - size) / shift;
    return (num_samples + shift / 2) / shift;
}

static double mel_scale(double f) { return 1127.0 * log(1.0 + f / 700.0); }

int feat_opts_check(const struct feat_opts *o) {
    if (!(o->samp_freq > 0)) return error_set("--sample-frequency must be positive");
    if (feat_window_size(o) < 2 || feat_window_shift(o) < 1)
        return error_set("invalid frame length %g ms / shift %g ms at %g Hz (window %d, shift "
                         "%d samples)", o->frame_length_ms, o->frame_shift_ms, o->samp_freq,
                         feat_window_size(o), feat_window_shift(o));
    if (feat_window_size(o) > (1 << 24)) return error_set("--frame-length too long");
    if (!(o->dither >= 0)) return error_set("--dither must be >= 0");
    if (!(o->preemph_coeff >= 0 && o->preemph_coeff <= 1))
        return error_set("--preemphasis-coefficient must be in [0, 1]");
    if (window_code(o->window_type) < 0)
        return error_set("invalid --window-type '%s' (hamming, hanning, povey, rectangular, "
                         "sine, blackman)", o->window_type);
    if (o->num_bins < 3 || o->num_bins > 1024)
        return error_set("--num-mel-bins=%d: must be from 3 to 1024", o->num_bins);
    double nyquist = 0.5 * o->samp_freq;
    double high = o->high_freq > 0 ? o->high_freq : nyquist + o->high_freq;
    if (o->low_freq < 0 || o->low_freq >= nyquist || high <= 0 || high > nyquist ||
        high <= o->low_freq)
        return error_set("bad values in options: low-freq %g and high-freq %g vs. nyquist %g",
                         o->low_freq, o->high_freq, nyquist);
    if (o->kind == FEAT_MFCC && (o->num_ceps < 1 || o->num_ceps > o->num_bins))
        return error_set("--num-ceps must be in 1..num-mel-bins (%d)", o->num_bins);
    if (!(o->energy_floor >= 0)) return error_set("--energy-floor must be >= 0");
    return 0;
}

struct feat_computer {
    struct feat_opts o;
    int size, shift, padded, dim;
    float *window;      /* (size) window function */
    float *frame;       /* (padded) fftwf_malloc'd FFT input */
    fftwf_complex *spec; /* (padded / 2 + 1) FFT output */
    fftwf_plan plan;
    float *power;       /* (padded / 2 + 1) */
    int *bin_offset, *bin_len; /* (num_bins) first FFT bin and width of each triangle */
    float *bin_weights; /* concatenated triangle weights */
    float *mel;         /* (num_bins) */
    float *dct;         /* (num_ceps, num_bins) */
    float *lifter;      /* (num_ceps) */
    double log_energy_floor;
};

void feat_computer_free(struct feat_computer *c) {
    if (!c) return;
    if (c->plan) fftwf_destroy_plan(c->plan);
    fftwf_free(c->frame);
    fftwf_free(c->spec);
    free(c->window);
    free(c->power);
    free(c->bin_offset);
    free(c->bin_len);
    free(c->bin_weights);
    free(c->mel);
    free(c->dct);
    free(c->lifter);
    free(c);
}

struct feat_computer *feat_computer_new(const struct feat_opts *o) {
    if (feat_opts_check(o)) return NULL;
    struct feat_computer *c = xcalloc(1, sizeof *c);
    c->o = *o;
    c->size = feat_window_size(o);
    c->shift = feat_window_shift(o);
    c->padded = feat_padded_window_size(o);
    int nb = o->num_bins;
    c->dim = o->kind == FEAT_MFCC ? o->num_ceps : nb + (o->use_energy ? 1 : 0);

    /* Window function, in double as Kaldi computes it. */
    c->window = xmalloc(sizeof(float) * (size_t)c->size);
    double a = 2.0 * M_PI / (c->size - 1);
    int wt = window_code(o->window_type);
    for (int i = 0; i < c->size; i++) {
        double x = a * i, v;
        switch (wt) {
        case 0: v = 0.5 - 0.5 * cos(x); break;
        case 1: v = sin(0.5 * x); break;
        case 2: v = 0.54 - 0.46 * cos(x); break;
        case 3: v = pow(0.5 - 0.5 * cos(x), 0.85); break;
        case 4: v = 1.0; break;
        default: v = o->blackman_coeff - 0.5 * cos(x) + (0.5 - o->blackman_coeff) * cos(2 * x);
        }
        c->window[i] = (float)v;
    }

    c->frame = fftwf_malloc(sizeof(float) * (size_t)c->padded);
    c->spec = fftwf_malloc(sizeof(fftwf_complex) * (size_t)(c->padded / 2 + 1));
    if (!c->frame || !c->spec) abort();
    c->plan = fftwf_plan_dft_r2c_1d(c->padded, c->frame, c->spec, FFTW_ESTIMATE);
    if (!c->plan) {
        error_set("FFTW cannot plan a real FFT of length %d", c->padded);
        feat_computer_free(c);
        return NULL;
    }
    c->power = xmalloc(sizeof(float) * (size_t)(c->padded / 2 + 1));

    /* Mel banks: each triangle as (first FFT bin, weights) over the bins where it is non-zero. */
    int num_fft_bins = c->padded / 2;
    double nyquist = 0.5 * o->samp_freq;
    double high = o->high_freq > 0 ? o->high_freq : nyquist + o->high_freq;
    double bin_width = o->samp_freq / c->padded;
    double mel_low = mel_scale(o->low_freq), mel_high = mel_scale(high);
    double delta = (mel_high - mel_low) / (nb + 1);
    c->bin_offset = xmalloc(sizeof(int) * (size_t)nb);
    c->bin_len = xmalloc(sizeof(int) * (size_t)nb);
    c->bin_weights = xmalloc(sizeof(float) * (size_t)nb * (size_t)num_fft_bins);
    size_t used = 0;
    for (int b = 0; b < nb; b++) {
        double left = mel_low + b * delta, centre = left + delta, right = centre + delta;
        int first = -1, last = -1;
        for (int i = 0; i < num_fft_bins; i++) {
            double m = mel_scale(bin_width * i);
            if (m > left && m < right) {
                if (first < 0) first = i;
                last = i;
            }
        }
        if (first < 0) {
            error_set("mel bin %d is empty: too many mel bins (%d) for the FFT size %d", b, nb,
                      c->padded);
            feat_computer_free(c);
            return NULL;
        }
        c->bin_offset[b] = first;
        c->bin_len[b] = last - first + 1;
        for (int i = first; i <= last; i++) {
            double m = mel_scale(bin_width * i);
            double w = m <= centre ? (m - left) / (centre - left) : (right - m) / (right - centre);
            c->bin_weights[used++] = (float)w;
        }
    }
    c->mel = xmalloc(sizeof(float) * (size_t)nb);
    if (o->kind == FEAT_MFCC) {
        int nc = o->num_ceps;
        c->dct = xmalloc(sizeof(float) * (size_t)nc * (size_t)nb);
        for (int k = 0; k < nc; k++) {
            double norm = k == 0 ? sqrt(1.0 / nb) : sqrt(2.0 / nb);
            for (int j = 0; j < nb; j++)
                c->dct[(size_t)k * nb + j] = (float)(norm * cos(M_PI / nb * (j + 0.5) * k));
        }
        c->lifter = xmalloc(sizeof(float) * (size_t)nc);
        double q = o->cepstral_lifter;
        for (int k = 0; k < nc; k++)
            c->lifter[k] = q != 0 ? (float)(1.0 + 0.5 * q * sin(M_PI * k / q)) : 1.0f;
    }
    c->log_energy_floor = o->energy_floor > 0 ? log(o->energy_floor) : 0;
    return c;
}

int feat_computer_dim(const struct feat_computer *c) { return c->dim; }

uint64_t feat_dither_seed(const char *key, int seed) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        h ^= *p;
        h *= 1099511628211ULL;
    }
    return h ^ ((uint64_t)(uint32_t)seed * 0x9e3779b97f4a7c15ULL);
}

/* One frame: fills c->frame (padded) and returns the log-energy asked for. */
static float process_frame(struct feat_computer *c, const float *wave, int64_t n, int64_t start,
                           struct rng *rng) {
    const struct feat_opts *o = &c->o;
    float *x = c->frame;
    int size = c->size;
    if (start >= 0 && start + size <= n) {
        memcpy(x, wave + start, sizeof(float) * (size_t)size);
    } else {
        for (int s = 0; s < size; s++) {
            int64_t i = start + s;
            while (i < 0 || i >= n) i = i < 0 ? -i - 1 : 2 * n - 1 - i;
            x[s] = wave[i];
        }
    }
    if (o->dither != 0)
        for (int i = 0; i < size; i++) x[i] += o->dither * rng_gauss(rng);
    if (o->remove_dc_offset) {
        float sum = 0;
        for (int i = 0; i < size; i++) sum += x[i];
        float mean = sum / size;
        for (int i = 0; i < size; i++) x[i] -= mean;
    }
    float log_energy = 0;
    if (o->use_energy && o->raw_energy) {
        float e = 0;
        for (int i = 0; i < size; i++) e += x[i] * x[i];
        log_energy = logf(e > FLT_EPSILON ? e : FLT_EPSILON);
    }
    if (o->preemph_coeff != 0) {
        float k = o->preemph_coeff;
        for (int i = size - 1; i > 0; i--) x[i] -= k * x[i - 1];
        x[0] -= k * x[0];
    }
    for (int i = 0; i < size; i++) x[i] *= c->window[i];
    if (c->padded > size) memset(x + size, 0, sizeof(float) * (size_t)(c->padded - size));
    if (o->use_energy && !o->raw_energy) {
        float e = 0;
        for (int i = 0; i < size; i++) e += x[i] * x[i];
        log_energy = logf(e > FLT_EPSILON ? e : FLT_EPSILON);
    }
    if (o->use_energy && o->energy_floor > 0 && log_energy < c->log_energy_floor)
        log_energy = (float)c->log_energy_floor;
    return log_energy;
}

int feat_compute(struct feat_computer *c, const float *wave, int64_t n, float samp_freq,
                 struct rng *rng, struct matrix *out) {
    const struct feat_opts *o = &c->o;
    if (samp_freq != o->samp_freq)
        return error_set("waveform sample frequency %g Hz does not match --sample-frequency=%g "
                         "(resampling is not supported)", samp_freq, o->samp_freq);
    ASSERT(o->dither == 0 || rng);
    int64_t frames = feat_num_frames(n, o);
    if (frames > INT32_MAX) return error_set("too many frames (%lld)", (long long)frames);
    matrix_release(out);
    if (frames == 0 || n == 0) {
        matrix_init(out, 0, 0);
        return 0;
    }
    matrix_init(out, (int)frames, c->dim);
    int nb = o->num_bins, half = c->padded / 2;
    for (int64_t f = 0; f < frames; f++) {
        int64_t start = o->snip_edges ? f * c->shift : f * c->shift + c->shift / 2 - c->size / 2;
        float log_energy = process_frame(c, wave, n, start, rng);
        fftwf_execute(c->plan);
        for (int i = 0; i <= half; i++) {
            float re = c->spec[i][0], im = c->spec[i][1];
            c->power[i] = re * re + im * im;
        }
        if (o->kind == FEAT_FBANK && !o->use_power)
            for (int i = 0; i <= half; i++) c->power[i] = sqrtf(c->power[i]);
        const float *w = c->bin_weights;
        for (int b = 0; b < nb; b++) {
            const float *p = c->power + c->bin_offset[b];
            float e = 0;
            for (int i = 0; i < c->bin_len[b]; i++) e += w[i] * p[i];
            w += c->bin_len[b];
            c->mel[b] = e;
        }
        float *row = out->data + (size_t)f * out->stride;
        if (o->kind == FEAT_FBANK) {
            int off = o->use_energy ? 1 : 0;
            for (int b = 0; b < nb; b++) {
                float e = c->mel[b];
                if (o->use_log_fbank) e = logf(e > FLT_EPSILON ? e : FLT_EPSILON);
                row[off + b] = e;
            }
            if (o->use_energy) row[0] = log_energy;
        } else {
            for (int b = 0; b < nb; b++)
                c->mel[b] = logf(c->mel[b] > FLT_EPSILON ? c->mel[b] : FLT_EPSILON);
            for (int k = 0; k < o->num_ceps; k++) {
                const float *d = c->dct + (size_t)k * nb;
                float s = 0;
                for (int b = 0; b < nb; b++) s += d[b] * c->mel[b];
                row[k] = s * c->lifter[k];
            }
            if (o->use_energy) row[0] = log_energy;
        }
    }
    return 0;
}
