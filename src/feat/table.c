/* The feature programs' loop over a table of audio (feat_compute_table). */
#include "feat/feat.h"

#include <stdlib.h>
#include <string.h>

int feat_table_opts_specs(struct feat_table_opts *t, struct option_spec *specs) {
    specs[0] = (struct option_spec){"channel", OPT_INT, &t->channel,
                                    "Channel to extract (-1 -> expect mono, 0 -> left, 1 -> right)"};
    specs[1] = (struct option_spec){"subtract-mean", OPT_BOOL, &t->subtract_mean,
                                    "Subtract mean of each feature file [CMS; not recommended to "
                                    "do it this way.]"};
    specs[2] = (struct option_spec){"min-duration", OPT_FLOAT, &t->min_duration,
                                    "Minimum duration of segments to process (in seconds)."};
    specs[3] = (struct option_spec){"seed", OPT_INT, &t->seed,
                                    "Seed of the dither noise, mixed with each utterance-id (so "
                                    "output does not depend on the order of utterances)"};
    return FEAT_TABLE_SPECS;
}

int feat_compute_table(const struct feat_opts *o, const struct feat_table_opts *t,
                       const char *wav_rspecifier, const char *feats_wspecifier,
                       long long *num_done, long long *num_total) {
    *num_done = *num_total = 0;
    struct feat_computer *comp = feat_computer_new(o);
    if (!comp) return -1;
    struct feat_wave_reader reader;
    struct table_writer writer;
    if (feat_wave_reader_open(&reader, wav_rspecifier)) {
        feat_computer_free(comp);
        return -1;
    }
    if (table_writer_open(&writer, feats_wspecifier, &holder_matrix)) {
        feat_wave_reader_close(&reader);
        feat_computer_free(comp);
        return -1;
    }
    struct feat_wave w = {0};
    struct matrix feats = {0};
    struct rng rng;
    int rc, failed = 0;
    while ((rc = feat_wave_reader_next(&reader, &w)) > 0) {
        const char *utt = feat_wave_reader_key(&reader);
        ++*num_total;
        if (rc == 2) {
            WARN("utterance '%s': %s", utt, error_get());
            continue;
        }
        int chan = t->channel;
        if (chan < 0) {
            chan = 0;
            if (w.num_channels != 1)
                WARN("Channel not specified but you have data with %d channels; defaulting to "
                     "zero", w.num_channels);
        } else if (chan >= w.num_channels) {
            WARN("File with id %s has %d channels but you specified channel %d, producing no "
                 "output.", utt, w.num_channels, chan);
            continue;
        }
        double duration = (double)w.num_samples / w.samp_freq;
        if (duration < t->min_duration) {
            WARN("File: %s is too short (%g sec): producing no output.", utt, duration);
            continue;
        }
        if (o->dither != 0) rng_seed(&rng, feat_dither_seed(utt, t->seed));
        const float *x = w.data + (size_t)chan * (size_t)w.num_samples;
        if (feat_compute(comp, x, w.num_samples, w.samp_freq, &rng, &feats)) {
            WARN("Failed to compute features for utterance %s: %s", utt, error_get());
            continue;
        }
        if (feats.rows == 0) {
            WARN("utterance '%s': %lld samples are too few for one frame: producing no output",
                 utt, (long long)w.num_samples);
            continue;
        }
        if (t->subtract_mean) {
            for (int j = 0; j < feats.cols; j++) {
                double mean = 0;
                for (int r = 0; r < feats.rows; r++)
                    mean += feats.data[(size_t)r * feats.stride + j];
                mean /= feats.rows;
                for (int r = 0; r < feats.rows; r++)
                    feats.data[(size_t)r * feats.stride + j] -= (float)mean;
            }
        }
        if (table_writer_write(&writer, utt, &feats)) {
            error_wrap("cannot write '%s': ", feats_wspecifier);
            failed = 1;
            break;
        }
        if (++*num_done % 10 == 0) LOG("Processed %lld utterances", *num_done);
        VLOG(2, "Processed features for key %s", utt);
    }
    feat_wave_release(&w);
    matrix_release(&feats);
    feat_computer_free(comp);
    if (!failed && rc < 0) {
        error_wrap("cannot read '%s': ", wav_rspecifier);
        failed = 1;
    }
    if (!failed && feat_wave_reader_close(&reader)) {
        error_wrap("cannot read '%s': ", wav_rspecifier);
        failed = 1;
    } else if (failed) {
        feat_wave_reader_close(&reader);
    }
    if (failed) {
        table_writer_abort(&writer);
        return -1;
    }
    if (table_writer_close(&writer)) return error_wrap("cannot write '%s': ", feats_wspecifier);
    return 0;
}
