/* decode-word-loop: Viterbi beam search of pseudo-log-likelihoods over a word loop or isolated
 * words built from a lexicon of phone-state HMMs (the role of Kaldi's decode-faster-mapped). */
#include <string.h>
#include <time.h>

#include "decode/decode.h"

static const char *usage =
    "Decodes pseudo-log-likelihoods (nnet-forward --class-frame-counts) with a Viterbi beam\n"
    "search over a word loop (--grammar=loop) or one word per utterance (--grammar=isolated),\n"
    "each word a chain of phone-state HMMs from <lang-dir>/lexicon.txt and phone_pdfs.txt, with\n"
    "optional silence around words. Writes word ids (words.txt) per utterance.\n"
    "<lang-dir> holds three text files:\n"
    "  words.txt       <word> <id>, Kaldi's symbol table (id 0 <eps>, never output)\n"
    "  lexicon.txt     <word> <phone> <phone> ... (one line per pronunciation)\n"
    "  phone_pdfs.txt  <phone> <pdf> <pdf> ...: the phone's left-to-right HMM, one state per pdf\n"
    "                  (the network's output index, as the labels of the training data)\n"
    "e.g. lexicon.txt 'two t uw', phone_pdfs.txt 't 12 13 14' and 'uw 40 41 42'.\n"
    "Usage: decode-word-loop [options] <lang-dir> <loglikes-rspecifier> <words-wspecifier>\n"
    "e.g.: decode-word-loop --acoustic-scale=0.1 data/lang ark:loglikes.ark ark,t:hyp.int";

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv) {
    struct decode_opts o;
    decode_opts_default(&o);
    const char *grammar = "loop";
    struct option_spec specs[] = {
        {"acoustic-scale", OPT_FLOAT, &o.acoustic_scale, "scale of the acoustic log-likelihoods"},
        {"beam", OPT_FLOAT, &o.beam, "decoding beam (log-score below the best that survives)"},
        {"self-loop-prob", OPT_FLOAT, &o.self_loop_prob, "HMM self-loop probability"},
        {"transition-scale", OPT_FLOAT, &o.transition_scale, "scale of the transition log-probs"},
        {"word-insertion-penalty", OPT_FLOAT, &o.word_insertion_penalty,
         "log-score cost of each word"},
        {"grammar", OPT_STRING, &grammar, "loop | isolated"},
        {"silence-phone", OPT_STRING, &o.silence_phone,
         "optional silence phone around words (\"\": none)"},
        {"allow-partial", OPT_BOOL, &o.allow_partial,
         "output the best partial hypothesis when no final state is reached"},
    };
    int ns = sizeof specs / sizeof specs[0];
    options_parse_args(&argc, argv, usage, specs, ns, 3, 3);
    if (!strcmp(grammar, "loop")) o.grammar = DECODE_LOOP;
    else if (!strcmp(grammar, "isolated")) o.grammar = DECODE_ISOLATED;
    else die("--grammar: expected loop or isolated, got '%s'", grammar);
    if (!(o.self_loop_prob > 0 && o.self_loop_prob < 1) || !(o.beam > 0))
        die("--self-loop-prob must be in (0, 1) and --beam positive");
    struct decode_graph *g = decode_graph_read(argv[1], &o);
    if (!g) die("%s", error_get());
    LOG("Graph: %d pronunciations, %d states, grammar %s", decode_graph_num_prons(g),
        decode_graph_num_states(g), grammar);
    struct table_reader r;
    struct table_writer w;
    if (table_reader_open(&r, argv[2], &holder_matrix)) die("%s", error_get());
    if (table_writer_open(&w, argv[3], &holder_int32_vector)) die("%s", error_get());
    struct decoder *d = decoder_new(g, &o);
    struct matrix ll = {0};
    struct decode_result res = {0};
    long long num_done = 0, num_partial = 0, num_frames = 0;
    double tot_score = 0;
    double t0 = time_now(), c0 = cpu_seconds();
    int rc;
    while ((rc = table_reader_next(&r, &ll)) == 1) {
        const char *key = table_reader_key(&r);
        /* A NaN or Inf log-likelihood would silently drop or invent words: refuse (docs/RELIABILITY.md). */
        if (io_check_finite(&ll)) die("'%s': key '%s': %s", argv[2], key, error_get());
        if (decoder_decode(d, &ll, &res)) {
            WARN("'%s': key '%s': %s; no output", argv[2], key, error_get());
            continue;
        }
        if (!res.reached_final) {
            WARN("key '%s': no final state reached (%d frames); partial output of %d words", key,
                 res.num_frames, res.words.dim);
            num_partial++;
        }
        if (log_verbose >= 1) {
            char line[8192];
            int n = 0;
            for (int i = 0; i < res.words.dim && n < (int)sizeof line - 256; i++)
                n += snprintf(line + n, sizeof line - n, " %s",
                              decode_graph_word(g, res.words.data[i]));
            line[n] = 0;
            VLOG(1, "%s%s", key, line);
        }
        if (table_writer_write(&w, key, &res.words)) die("%s", error_get());
        num_done++;
        num_frames += res.num_frames;
        if (res.reached_final) tot_score += res.score;
    }
    double secs = time_now() - t0, cpu = cpu_seconds() - c0;
    if (rc < 0 || table_reader_close(&r)) die("%s", error_get());
    if (table_writer_close(&w)) die("%s", error_get());
    LOG("Decoded %lld utterances (%lld partial), %lld frames; average log-score per frame %g",
        num_done, num_partial, num_frames, num_frames ? tot_score / num_frames : 0.0);
    /* Audio seconds at Kaldi's 10 ms frame shift; reading the input is included. */
    double audio = num_frames / 100.0;
    LOG("Time taken %.3f s (CPU %.3f s): real-time factor %g (CPU %g), %.1fx faster than real "
        "time", secs, cpu, audio > 0 ? secs / audio : 0.0, audio > 0 ? cpu / audio : 0.0,
        secs > 0 ? audio / secs : 0.0);
    decode_result_release(&res);
    matrix_release(&ll);
    decoder_free(d);
    decode_graph_free(g);
    if (!num_done) die("decoded no utterances from '%s'", argv[2]);
    return 0;
}
