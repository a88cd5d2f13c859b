/* libFuzzer target: arbitrary bytes as a WAVE file (feat_wave_read), then, when it reads, features
 * of its first channel at its own sample rate (framing, FFT, mel banks); the same bytes as a WAVE
 * object of an archive (holder_wave, exact sizes); and as a table entry of training targets
 * (Posterior or int32 vector, holder_targets). */
#include "fuzz.h"
#include "feat/feat.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int quiet;
    if (!quiet) {
        quiet = 1;
        log_verbose = -1;
    }
    struct kin in;
    FILE *f = fuzz_kin(&in, data, size, "mem.wav");
    if (!f) return 0;
    struct feat_wave w = {0};
    if (feat_wave_read(&in, &w) == 0) {
        if (w.num_channels < 1 || w.num_samples < 1 || !w.data) abort();
        /* Keep the work per input small: at most one second of audio, rates 1 kHz .. 96 kHz. */
        int64_t n = w.num_samples < 48000 ? w.num_samples : 48000;
        if (w.samp_freq >= 1000 && w.samp_freq <= 96000) {
            struct feat_opts o;
            feat_opts_default(&o, (data[0] & 1) ? FEAT_MFCC : FEAT_FBANK);
            o.samp_freq = w.samp_freq;
            o.dither = 0;
            o.num_bins = 10;
            if (o.kind == FEAT_MFCC) o.num_ceps = 5;
            struct feat_computer *c = feat_computer_new(&o);
            if (c) {
                struct matrix m = {0};
                if (feat_compute(c, w.data, n, w.samp_freq, NULL, &m)) abort();
                if (m.rows != feat_num_frames(n, &o)) abort();
                matrix_release(&m);
                feat_computer_free(c);
            }
        }
    }
    feat_wave_release(&w);
    kin_close(&in);
    fclose(f);

    /* The same bytes as a WAVE object inside an archive (holder_wave: exact sizes required, a
     * streamed, odd or too large 'data' size is an error). */
    f = fmemopen((void *)data, size ? size : 1, "rb");
    kin_wrap(&in, f, "mem.ark", (int64_t)size);
    if (!size) in.eof = 1;
    if (holder_wave.read(&in, &w) == 0) {
        if (w.num_channels < 1 || w.num_samples < 1 || !w.data) abort();
    }
    feat_wave_release(&w);
    kin_close(&in);
    fclose(f);

    /* The same bytes as a targets object. */
    f = fmemopen((void *)data, size ? size : 1, "rb");
    kin_wrap(&in, f, "mem.post", (int64_t)size);
    if (!size) in.eof = 1;
    struct posterior p = {0};
    if (holder_targets.read(&in, &p) == 0) {
        for (int t = 0; t < p.num_frames; t++)
            if (p.start[t] > p.start[t + 1]) abort();
    }
    posterior_release(&p);
    kin_close(&in);
    fclose(f);
    return 0;
}
