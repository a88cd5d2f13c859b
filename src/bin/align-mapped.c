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
    options_parse(&argc, argv, usage, specs, ns);
    if (argc != 5) options_usage_exit(usage, specs, ns);
    if (!(o.self_loop_prob > 0 && o.self_loop_prob < 1))
        die("--self-loop-prob must be in (0, 1)");
    struct decode_graph *g = decode_graph_read(argv[1], &o);
    if (!g) die("%s", error_get());
    struct decode_text_reader tr;
    if (decode_text_open(&tr, argv[3], g)) die("%s", error_get());
    struct table_reader r;
    struct table_writer w;
    if (table_reader_open(&r, argv[2], &holder_matrix)) die("%s", error_get());
    if (table_writer_open(&w, argv[4], &holder_int32_vector)) die("%s", error_get());
    struct matrix ll = {0};
    struct int32_vec ali = {0};
    long long num_done = 0, num_err = 0, num_frames = 0;
    double tot = 0;
    int rc;
    while ((rc = table_reader_next(&r, &ll)) == 1) {
        const char *key = table_reader_key(&r);
        const int *words;
        int nw;
        double score;
        if (decode_text_lookup(&tr, key, &words, &nw) ||
            decode_align(g, &o, words, nw, &ll, &ali, &score)) {
            WARN("key '%s': %s; not aligned", key, error_get());
            num_err++;
            continue;
        }
        if (table_writer_write(&w, key, &ali)) die("%s", error_get());
        num_done++;
        num_frames += ali.dim;
        tot += score;
    }
    if (rc < 0 || table_reader_close(&r)) die("%s", error_get());
    if (table_writer_close(&w)) die("%s", error_get());
    LOG("Aligned %lld utterances (%lld failed), %lld frames; average log-score per frame %g",
        num_done, num_err, num_frames, num_frames ? tot / num_frames : 0.0);
    int32_vec_release(&ali);
    matrix_release(&ll);
    decode_text_close(&tr);
    decode_graph_free(g);
    return num_done ? 0 : 1;
}
