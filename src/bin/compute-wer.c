/* compute-wer: word error rate of hypotheses against references (Kaldi's compute-wer). */
#include <stdlib.h>
#include <string.h>

#include "decode/decode.h"

static const char *usage =
    "Computes the word error rate (and sentence error rate) of text hypotheses against text\n"
    "references, both archives of '<utt> <word> <word> ...' lines.\n"
    "--mode=strict: every reference must have a hypothesis; present: score only the utterances\n"
    "with a hypothesis; all: score every reference, a missing hypothesis counting as empty.\n"
    "Usage: compute-wer [options] <ref-rspecifier> <hyp-rspecifier>\n"
    "e.g.: compute-wer --text --mode=present ark:data/test/text ark:exp/decode/hyp.txt";

int main(int argc, char **argv) {
    const char *mode = "strict";
    int text = 1;
    struct option_spec specs[] = {
        {"mode", OPT_STRING, &mode, "strict | present | all"},
        {"text", OPT_BOOL, &text, "inputs are text archives (always true here; Kaldi's option)"},
    };
    int ns = sizeof specs / sizeof specs[0];
    options_parse_args(&argc, argv, usage, specs, ns, 2, 2);
    if (strcmp(mode, "strict") && strcmp(mode, "present") && strcmp(mode, "all"))
        die("--mode: expected strict, present or all, got '%s'", mode);
    if (!text) die("--text=false (integer archives) is not supported: convert with int2sym.pl");
    /* The hypotheses are loaded whole, so they may come from any stream (a pipe too). */
    struct token_vec_map hyp;
    if (token_vec_map_read(&hyp, argv[2])) die("%s", error_get());
    struct table_reader r;
    if (table_reader_open(&r, argv[1], &holder_token_vector)) die("%s", error_get());
    struct decode_edit_counts c = {0};
    long long num_sent = 0, sent_errs = 0, num_absent = 0;
    struct token_vec t = {0};
    int rc;
    while ((rc = table_reader_next(&r, &t)) == 1) {
        const char *key = table_reader_key(&r);
        const struct token_vec_entry *h = token_vec_map_find(&hyp, key);
        struct token_vec empty = {0};
        if (!h) {
            num_absent++;
            if (!strcmp(mode, "strict"))
                die("'%s': no hypothesis for utterance '%s' (--mode=strict)", argv[2], key);
            if (!strcmp(mode, "present")) continue;
        }
        const struct token_vec *ht = h ? &h->v : &empty;
        long long before = c.ins + c.del + c.sub;
        decode_edit_counts_add(&c, t.v, t.n, ht->v, ht->n);
        sent_errs += c.ins + c.del + c.sub != before;
        num_sent++;
    }
    if (rc < 0 || table_reader_close(&r)) die("%s", error_get());
    if (c.ref_words == 0) die("no reference words were scored");
    long long errs = c.ins + c.del + c.sub;
    printf("%%WER %.2f [ %lld / %lld, %lld ins, %lld del, %lld sub ]%s\n",
           100.0 * errs / c.ref_words, errs, c.ref_words, c.ins, c.del, c.sub,
           num_absent ? " [PARTIAL]" : "");
    printf("%%SER %.2f [ %lld / %lld ]\n", num_sent ? 100.0 * sent_errs / num_sent : 0.0,
           sent_errs, num_sent);
    printf("Scored %lld sentences, %lld not present in hyp.\n", num_sent, num_absent);
    if (fflush(stdout)) die("cannot write to standard output");
    token_vec_release(&t);
    token_vec_map_release(&hyp);
    return 0;
}
