/* align-mapped: forced alignment of transcripts with pseudo-log-likelihoods (Kaldi nnet1's
 * align-mapped), through the word-loop decoder's lexicon and HMMs. */
#include <string.h>

#include "decode/decode.h"

static const char *usage =
    "Forced alignment: the Viterbi path of each utterance's transcript (its words in order, any of\n"
    "their pronunciations in <lang-dir>/lexicon.txt, optional silence between them) through the\n"
    "pseudo-log-likelihoods (nnet-forward --apply-log --class-frame-counts); writes one pdf-id per\n"
    "frame, the labels.scp form get_egs.sh trains on (Kaldi writes transition-ids; here there is\n"
    "no transition model, so the pdf-ids directly). <lang-dir> as decode-word-loop's.\n"
    "Usage: align-mapped [options] <lang-dir> <loglikes-rspecifier> <transcriptions-rspecifier> "
    "<alignments-wspecifier>\n"
    "e.g.: nnet-forward --apply-log=true --class-frame-counts=counts.vec final.mdl scp:feats.scp ark:- |\n"
    "        align-mapped data/lang ark:- ark:data/train/text ark,scp:ali.ark,ali.scp\n";

int main(int argc, char **argv) {
    struct decode_opts o;
    decode_opts_default(&o);
    o.acoustic_scale = 1.0f;
    struct option_spec specs[] = {
        {"acoustic-scale", OPT_FLOAT, &o.acoustic_scale, "scale of the acoustic log-likelihoods"},
        {"self-loop-prob", OPT_FLOAT, &o.self_loop_prob, "HMM self-loop probability"},
        {"transition-scale", OPT_FLOAT, &o.transition_scale, "scale of the transition log-probs"},
        {"silence-phone", OPT_STRING, &o.silence_phone,
         "optional silence phone around words (\"\": none)"},
    };
    int ns = sizeof specs / sizeof specs[0];
    options_parse_args(&argc, argv, usage, specs, ns, 4, 4);
    if (!(o.self_loop_prob > 0 && o.self_loop_prob < 1))
        die("--self-loop-prob must be in (0, 1)");
    struct decode_aligner a;
    if (decode_aligner_open(&a, argv[1], &o, argv[2], argv[3], argv[4])) die("%s", error_get());
    struct matrix ll = {0};
    struct int32_vec ali = {0};
    long long num_done = 0, num_err = 0, num_frames = 0;
    double tot = 0;
    int rc;
    while ((rc = table_reader_next(&a.in, &ll)) == 1) {
        const char *key = table_reader_key(&a.in);
        const int *words;
        int nw;
        double score;
        if (decode_text_lookup(&a.text, key, &words, &nw) ||
            decode_align(a.g, &o, words, nw, &ll, &ali, &score)) {
            WARN("key '%s': %s; not aligned", key, error_get());
            num_err++;
            continue;
        }
        if (table_writer_write(&a.out, key, &ali)) die("%s", error_get());
        num_done++;
        num_frames += ali.dim;
        tot += score;
    }
    if (decode_aligner_close(&a, rc)) die("%s", error_get());
    LOG("Aligned %lld utterances (%lld failed), %lld frames; average log-score per frame %g",
        num_done, num_err, num_frames, num_frames ? tot / num_frames : 0.0);
    int32_vec_release(&ali);
    matrix_release(&ll);
    return num_done ? 0 : 1;
}
