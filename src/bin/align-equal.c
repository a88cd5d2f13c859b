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
    options_parse(&argc, argv, usage, specs, ns);
    if (argc != 5) options_usage_exit(usage, specs, ns);
    struct decode_graph *g = decode_graph_read(argv[1], &o);
    if (!g) die("%s", error_get());
    struct decode_text_reader tr;
    if (decode_text_open(&tr, argv[3], g)) die("%s", error_get());
    struct table_reader r;
    struct table_writer w;
    if (table_reader_open(&r, argv[2], &holder_matrix)) die("%s", error_get());
    if (table_writer_open(&w, argv[4], &holder_int32_vector)) die("%s", error_get());
    struct matrix feats = {0};
    struct int32_vec ali = {0};
    long long num_done = 0, num_err = 0;
    int rc;
    while ((rc = table_reader_next(&r, &feats)) == 1) {
        const char *key = table_reader_key(&r);
        const int *words;
        int nw;
        if (decode_text_lookup(&tr, key, &words, &nw) ||
            decode_align_equal(g, words, nw, feats.rows, &ali)) {
            WARN("key '%s': %s; not aligned", key, error_get());
            num_err++;
            continue;
        }
        if (table_writer_write(&w, key, &ali)) die("%s", error_get());
        num_done++;
    }
    if (rc < 0 || table_reader_close(&r)) die("%s", error_get());
    if (table_writer_close(&w)) die("%s", error_get());
    LOG("Done %lld utterances, failed for %lld", num_done, num_err);
    int32_vec_release(&ali);
    matrix_release(&feats);
    decode_text_close(&tr);
    decode_graph_free(g);
    return num_done ? 0 : 1;
}
