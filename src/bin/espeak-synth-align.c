/* espeak-synth-align: synthesises utterances with libespeak-ng and writes, for each, a 16-bit PCM
 * WAVE file and the synthesizer's own phoneme timing as a phone-level CTM.
 *
 * The timing is not estimated: libespeak-ng reports a PHONEME event per phoneme it renders, with
 * the sample index (at the synthesizer's rate) where that phoneme's audio starts, and a WORD event
 * at the start of each word. A phoneme runs from its event to the next one (the last to the end of
 * the audio); it belongs to the word whose WORD event came last, except pauses (names starting
 * with '_'), which are written as the word "<sil>". Audio before the first phoneme is "<sil>" too.
 *
 * Input lines (a file or '-'): <utt-id> <voice> <rate-wpm> <pitch 0-100> <range 0-100> <text...>
 * Output: <wav-dir>/<utt-id>.wav, and CTM lines on <ctm-wxfilename>:
 *   <utt-id> 1 <start-s> <dur-s> <phone> <word> <word-index>
 * (word-index counts the text's words from 1; 0 and "<sil>" for pauses), with times in seconds
 * (6 decimals) at the synthesizer's sample rate (printed in the log).
 * Built only where <espeak-ng/speak_lib.h> exists (Makefile). */
#include <espeak-ng/speak_lib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

static const char *usage =
    "Synthesises each line of <list> with eSpeak NG and writes <wav-dir>/<utt-id>.wav (16-bit\n"
    "PCM, the synthesizer's rate) and a phone CTM with the synthesizer's own phoneme timing.\n"
    "List lines: <utt-id> <voice> <rate-wpm> <pitch> <range> <text...>\n"
    "Usage: espeak-synth-align [options] <list> <wav-dir> <ctm-out>\n"
    "e.g.: espeak-synth-align data/local/synth.list data/local/raw data/local/raw.ctm";

struct seg { int start; char phone[9]; int word; };
static struct {
    int16_t *pcm; long n, cap;
    struct seg *seg; int nseg, segcap;
    int cur_word;
} S;

static int on_synth(short *wav, int n, espeak_EVENT *ev) {
    if (n > 0) {
        if (S.n + n > S.cap) {
            S.cap = (S.n + n) * 2;
            S.pcm = realloc(S.pcm, S.cap * sizeof *S.pcm);
            if (!S.pcm) die("out of memory");
        }
        memcpy(S.pcm + S.n, wav, n * sizeof *wav);
        S.n += n;
    }
    for (; ev && ev->type != espeakEVENT_LIST_TERMINATED; ev++) {
        if (ev->type == espeakEVENT_WORD) S.cur_word = ev->id.number;
        if (ev->type != espeakEVENT_PHONEME) continue;
        if (S.nseg == S.segcap) {
            S.segcap = S.segcap ? 2 * S.segcap : 64;
            S.seg = realloc(S.seg, S.segcap * sizeof *S.seg);
            if (!S.seg) die("out of memory");
        }
        struct seg *s = &S.seg[S.nseg++];
        s->start = ev->sample;
        memcpy(s->phone, ev->id.string, 8);
        s->phone[8] = 0;
        s->word = s->phone[0] == '_' ? 0 : S.cur_word;
    }
    return 0;
}

static void put32(FILE *f, uint32_t v) { for (int i = 0; i < 4; i++) fputc((v >> 8 * i) & 255, f); }
static void put16(FILE *f, uint16_t v) { fputc(v & 255, f); fputc(v >> 8, f); }

/* Writes a RIFF/WAVE file under a temporary name, then renames it (docs/STYLE.md §8). */
static int write_wav(const char *path, const int16_t *pcm, long n, int rate) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return -1;
    fwrite("RIFF", 1, 4, f); put32(f, 36 + 2 * n); fwrite("WAVEfmt ", 1, 8, f);
    put32(f, 16); put16(f, 1); put16(f, 1); put32(f, rate); put32(f, 2 * rate);
    put16(f, 2); put16(f, 16); fwrite("data", 1, 4, f); put32(f, 2 * n);
    for (long i = 0; i < n; i++) put16(f, (uint16_t)pcm[i]);
    if (ferror(f) | fclose(f)) { remove(tmp); return -1; }
    return rename(tmp, path);
}

int main(int argc, char **argv) {
    options_parse_args(&argc, argv, usage, NULL, 0, 3, 3);
    const char *list = argv[1], *wavdir = argv[2], *ctm_name = argv[3];
    FILE *in = strcmp(list, "-") ? fopen(list, "r") : stdin;
    if (!in) die("cannot open '%s'", list);
    FILE *ctm = strcmp(ctm_name, "-") ? fopen(ctm_name, "w") : stdout;
    if (!ctm) die("cannot open '%s' for writing", ctm_name);
    int rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 200, NULL,
                                 espeakINITIALIZE_PHONEME_EVENTS | espeakINITIALIZE_DONT_EXIT);
    if (rate <= 0) die("cannot initialise eSpeak NG (espeak-ng-data missing?)");
    espeak_SetSynthCallback(on_synth);
    LOG("eSpeak NG %s, sample rate %d", espeak_Info(NULL), rate);
    char line[8192], utt[256], voice[256];
    int lineno = 0, done = 0;
    while (fgets(line, sizeof line, in)) {
        lineno++;
        int r, p, rg, off = 0;
        if (sscanf(line, "%255s %255s %d %d %d %n", utt, voice, &r, &p, &rg, &off) != 5 ||
            !line[off])
            die("'%s' line %d: expected <utt-id> <voice> <rate> <pitch> <range> <text>", list,
                lineno);
        char *text = line + off;
        text[strcspn(text, "\n")] = 0;
        if (espeak_SetVoiceByName(voice) != EE_OK)
            die("'%s' line %d: utterance '%s': unknown voice '%s'", list, lineno, utt, voice);
        espeak_SetParameter(espeakRATE, r, 0);
        espeak_SetParameter(espeakPITCH, p, 0);
        espeak_SetParameter(espeakRANGE, rg, 0);
        S.n = 0; S.nseg = 0; S.cur_word = 0;
        if (espeak_Synth(text, strlen(text) + 1, 0, POS_CHARACTER, 0, espeakCHARS_UTF8, NULL,
                         NULL) != EE_OK || espeak_Synchronize() != EE_OK)
            die("utterance '%s': synthesis failed", utt);
        if (!S.n || !S.nseg) die("utterance '%s': no audio or no phonemes", utt);
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.wav", wavdir, utt);
        if (write_wav(path, S.pcm, S.n, rate)) die("utterance '%s': cannot write '%s'", utt, path);
        /* Word numbers count words of the text (1-based); split the text to name them. */
        char *words[512]; int nw = 0;
        for (char *t = strtok(text, " \t"); t && nw < 512; t = strtok(NULL, " \t")) words[nw++] = t;
        double sr = rate;
        if (S.seg[0].start > 0)
            fprintf(ctm, "%s 1 %.6f %.6f sil <sil> 0\n", utt, 0.0, S.seg[0].start / sr);
        for (int i = 0; i < S.nseg; i++) {
            long end = i + 1 < S.nseg ? S.seg[i + 1].start : S.n;
            if (end <= S.seg[i].start) continue; /* zero-length phoneme: nothing to label */
            int w = S.seg[i].word;
            const char *word = w >= 1 && w <= nw ? words[w - 1] : "<sil>";
            const char *ph = S.seg[i].phone[0] == '_' ? "sil" : S.seg[i].phone;
            fprintf(ctm, "%s 1 %.6f %.6f %s %s %d\n", utt, S.seg[i].start / sr,
                    (end - S.seg[i].start) / sr, ph, word, word[0] == '<' ? 0 : w);
        }
        done++;
    }
    if (ferror(in)) die("cannot read '%s'", list);
    if (in != stdin) fclose(in);
    if (fflush(ctm) || (ctm != stdout && fclose(ctm))) die("cannot write '%s'", ctm_name);
    espeak_Terminate();
    free(S.pcm); free(S.seg);
    LOG("synthesised %d utterances", done);
    return done ? 0 : 1;
}
