/* align-equal: equally spaced alignments of transcripts, to start training without any
 * alignment (Kaldi's align-equal, a flat start). */
#include "decode/decode.h"

static const char *usage =
    "Writes an equally spaced alignment of each utterance's transcript (a flat start): the first\n"
    "pronunciation of each word in <lang-dir>/lexicon.txt, with one silence at each end when the\n"
    "frames allow, every HMM state an equal share of the frames; one pdf-id per frame (labels.scp\n"
    "form). The features give the frame counts only. Then train, realign (align-mapped,\n"
    "steps/align.sh) and train again.\n"
    "Usage: align-equal [options] <lang-dir> <feats-rspecifier> <transcriptions-rspecifier> "
    "<alignments-wspecifier>\n"
    "e.g.: align-equal data/lang scp:data/train/feats.scp ark:data/train/text ark,scp:ali.ark,ali.scp\n";

int main(int argc, char **argv) {
    struct decode_opts o;
    decode_opts_default(&o);
    struct option_spec specs[] = {
        {"silence-phone", OPT_STRING, &o.silence_phone,
         "silence phone put at both ends (\"\": none)"},
    };
    int ns = sizeof specs / sizeof specs[0];
    options_parse_args(&argc, argv, usage, specs, ns, 4, 4);
    struct decode_aligner a;
    if (decode_aligner_open(&a, argv[1], &o, argv[2], argv[3], argv[4])) die("%s", error_get());
    struct matrix feats = {0};
    struct int32_vec ali = {0};
    long long num_done = 0, num_err = 0;
    int rc;
    while ((rc = table_reader_next(&a.in, &feats)) == 1) {
        const char *key = table_reader_key(&a.in);
        const int *words;
        int nw;
        if (decode_text_lookup(&a.text, key, &words, &nw) ||
            decode_align_equal(a.g, words, nw, feats.rows, &ali)) {
            WARN("key '%s': %s; not aligned", key, error_get());
            num_err++;
            continue;
        }
        if (table_writer_write(&a.out, key, &ali)) die("%s", error_get());
        num_done++;
    }
    if (decode_aligner_close(&a, rc)) die("%s", error_get());
    LOG("Done %lld utterances, failed for %lld", num_done, num_err);
    int32_vec_release(&ali);
    matrix_release(&feats);
    return num_done ? 0 : 1;
}
