/* RIFF/WAVE 16-bit PCM reading and writing, and tables of audio (wav.scp, wav archives). */
#include "feat/feat.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint32_t le32(const unsigned char *b) {
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static uint16_t le16(const unsigned char *b) { return (uint16_t)(b[0] | b[1] << 8); }

void feat_wave_release(struct feat_wave *w) {
    free(w->data);
    memset(w, 0, sizeof *w);
}

/* Consume n bytes (a chunk we do not use). */
static int skip_bytes(struct kin *in, uint64_t n, const char *what) {
    unsigned char buf[4096];
    while (n > 0) {
        size_t take = n < sizeof buf ? (size_t)n : sizeof buf;
        if (kin_read(in, buf, take, what)) return -1;
        n -= take;
    }
    return 0;
}

/* Read up to n bytes (n == 0: to the end of the stream) into a new buffer; *got = bytes read. */
static unsigned char *read_upto(struct kin *in, uint64_t n, size_t *got) {
    size_t len = 0, cap = 0;
    unsigned char *buf = NULL;
    int64_t left = kin_remaining(in);
    /* Never allocate more than the stream can hold. */
    if (n && left >= 0 && (uint64_t)left < n) n = (uint64_t)left;
    for (;;) {
        size_t want = 1u << 20;
        if (n && n - len < want) want = (size_t)(n - len);
        if (want == 0) break;
        size_t avail;
        kin_peek_bytes(in, want, &avail);
        if (avail == 0) break;
        if (len + avail > cap) {
            cap = cap ? cap * 2 : (n && n < (1u << 20) ? (size_t)n : (1u << 20));
            while (cap < len + avail) cap *= 2;
            buf = xrealloc(buf, cap);
        }
        if (kin_read(in, buf + len, avail, "audio data")) {
            free(buf);
            return NULL;
        }
        len += avail;
    }
    *got = len;
    if (!buf) buf = xmalloc(1);
    return buf;
}

/* in_archive: the WAVE object is one entry of an archive, followed by the next key. Its sizes
 * must then be exact -- a streamed size (0 or 0xFFFFFFFF: "to the end") or one larger than the
 * RIFF object would swallow the following utterances, and an odd one would take the first byte
 * of the next key -- so each of these is an error; a standalone file keeps the tolerant reading. */
static int wave_read(struct kin *in, struct feat_wave *w, int in_archive) {
    feat_wave_release(w);
    unsigned char h[12];
    size_t avail;
    const unsigned char *p = kin_peek_bytes(in, 12, &avail);
    if (avail == 0) return kin_error(in, "empty file: no WAVE header");
    if (avail >= 4 && memcmp(p, "RIFF", 4))
        return kin_error(in, "not a RIFF/WAVE file (no 'RIFF' tag)");
    if (kin_read(in, h, 12, "WAVE header")) return kin_error(in, "truncated WAVE header");
    if (memcmp(h + 8, "WAVE", 4)) return kin_error(in, "not a RIFF/WAVE file (no 'WAVE' tag)");
    uint32_t riff_size = le32(h + 4);
    uint64_t consumed = 4; /* bytes of the RIFF object read so far ("WAVE") */
    int have_fmt = 0;
    unsigned channels = 0, bits = 0, block_align = 0;
    uint32_t rate = 0, data_size = 0;
    for (;;) {
        unsigned char ch[8];
        if (kin_read(in, ch, 8, "WAVE chunk header"))
            return kin_error(in, have_fmt ? "truncated WAVE header (no 'data' chunk)"
                                          : "truncated WAVE header (no 'fmt ' chunk)");
        uint32_t size = le32(ch + 4);
        consumed += 8;
        if (!memcmp(ch, "fmt ", 4)) {
            if (size < 16) return kin_error(in, "'fmt ' chunk too short (%u bytes)", size);
            if (size > 1024) return kin_error(in, "'fmt ' chunk too long (%u bytes)", size);
            unsigned char f[1024 + 1];
            if (kin_read(in, f, size + (size & 1u), "'fmt ' chunk"))
                return kin_error(in, "truncated WAVE header (in the 'fmt ' chunk)");
            unsigned tag = le16(f);
            channels = le16(f + 2);
            rate = le32(f + 4);
            block_align = le16(f + 12);
            bits = le16(f + 14);
            if (tag == 0xFFFE) {
                if (size < 40)
                    return kin_error(in, "WAVE_FORMAT_EXTENSIBLE 'fmt ' chunk too short");
                tag = le16(f + 24); /* the sub-format GUID begins with the format tag */
            }
            if (tag != 1)
                return kin_error(in, "unsupported WAVE format tag %u (only 16-bit PCM, tag 1)",
                                 tag);
            if (bits != 16)
                return kin_error(in, "unsupported sample format: %u-bit (only 16-bit PCM)", bits);
            if (channels == 0) return kin_error(in, "WAVE file with 0 channels");
            if (rate == 0) return kin_error(in, "WAVE file with sample rate 0");
            if (block_align != 2 * channels)
                return kin_error(in, "WAVE block align %u does not match %u channels of 16 bits",
                                 block_align, channels);
            have_fmt = 1;
            consumed += size + (size & 1u);
        } else if (!memcmp(ch, "data", 4)) {
            if (!have_fmt) return kin_error(in, "'data' chunk before the 'fmt ' chunk");
            data_size = size;
            break;
        } else if (skip_bytes(in, (uint64_t)size + (size & 1u), "WAVE chunk")) {
            return kin_error(in, "truncated WAVE header (in a '%c%c%c%c' chunk)",
                             isprint(ch[0]) ? ch[0] : '?', isprint(ch[1]) ? ch[1] : '?',
                             isprint(ch[2]) ? ch[2] : '?', isprint(ch[3]) ? ch[3] : '?');
        } else {
            consumed += (uint64_t)size + (size & 1u);
        }
    }
    if (in_archive) {
        if (data_size == 0 || data_size == 0xFFFFFFFFu)
            return kin_error(in, "'data' chunk size %u in an archive (a streamed size: the "
                             "object's end is unknown)", data_size);
        if (data_size % block_align)
            return kin_error(in, "'data' chunk size %u is not a multiple of the block size %u",
                             data_size, block_align);
        if (consumed + data_size > riff_size)
            return kin_error(in, "'data' chunk size %u is larger than the RIFF object (%llu bytes "
                             "left of %u)", data_size,
                             (unsigned long long)(consumed > riff_size ? 0 : riff_size - consumed),
                             riff_size);
    }
    /* A streamed WAVE whose writer did not know the length says 0, 0xFFFFFFFF, or (sox writing
     * to a pipe) just under 2^31: read to the end of the stream. */
    int to_end = !in_archive && (data_size == 0 || data_size >= 0x7FFF0000u);
    size_t got;
    unsigned char *raw = read_upto(in, to_end ? 0 : data_size, &got);
    if (!raw) return -1;
    size_t frames = got / block_align;
    if (in_archive && got < data_size) {
        free(raw);
        return kin_error(in, "truncated: the 'data' chunk says %u bytes, %zu read", data_size, got);
    }
    if (!to_end && got < data_size)
        WARN("'%s': expected %u bytes of audio, read only %zu: truncated file?", in->name,
             data_size, got);
    if (frames == 0) {
        free(raw);
        return kin_error(in, "WAVE file with no samples");
    }
    w->num_channels = (int)channels;
    w->num_samples = (int64_t)frames;
    w->samp_freq = (float)rate;
    w->data = xmalloc(sizeof(float) * frames * channels);
    for (size_t i = 0; i < frames; i++)
        for (unsigned c = 0; c < channels; c++) {
            const unsigned char *s = raw + (i * channels + c) * 2;
            w->data[(size_t)c * frames + i] = (float)(int16_t)le16(s);
        }
    free(raw);
    return 0;
}

static void put32(unsigned char *b, uint32_t v) {
    b[0] = (unsigned char)v;
    b[1] = (unsigned char)(v >> 8);
    b[2] = (unsigned char)(v >> 16);
    b[3] = (unsigned char)(v >> 24);
}
static void put16(unsigned char *b, unsigned v) {
    b[0] = (unsigned char)v;
    b[1] = (unsigned char)(v >> 8);
}

int feat_wave_write(struct kout *out, const struct feat_wave *w) {
    uint64_t bytes = (uint64_t)w->num_samples * (uint64_t)w->num_channels * 2;
    if (bytes > 0xFFFFFFFFu - 36) return error_set("'%s': audio too long for WAVE", out->name);
    unsigned char h[44];
    memcpy(h, "RIFF", 4);
    put32(h + 4, (uint32_t)(36 + bytes));
    memcpy(h + 8, "WAVEfmt ", 8);
    put32(h + 16, 16);
    put16(h + 20, 1);
    put16(h + 22, (unsigned)w->num_channels);
    put32(h + 24, (uint32_t)w->samp_freq);
    put32(h + 28, (uint32_t)w->samp_freq * 2u * (uint32_t)w->num_channels);
    put16(h + 32, 2u * (unsigned)w->num_channels);
    put16(h + 34, 16);
    memcpy(h + 36, "data", 4);
    put32(h + 40, (uint32_t)bytes);
    if (kout_write(out, h, sizeof h)) return -1;
    unsigned char buf[4096];
    size_t n = 0;
    for (int64_t i = 0; i < w->num_samples; i++)
        for (int c = 0; c < w->num_channels; c++) {
            float x = rintf(w->data[(size_t)c * (size_t)w->num_samples + (size_t)i]);
            if (x > 32767.0f) x = 32767.0f;
            if (x < -32768.0f) x = -32768.0f;
            put16(buf + n, (unsigned)(int16_t)x & 0xFFFFu);
            n += 2;
            if (n == sizeof buf) {
                if (kout_write(out, buf, n)) return -1;
                n = 0;
            }
        }
    return n ? kout_write(out, buf, n) : 0;
}

int feat_wave_read(struct kin *in, struct feat_wave *w) { return wave_read(in, w, 0); }

static int wave_hread(struct kin *in, void *obj) { return wave_read(in, obj, 1); }
static int wave_hwrite(struct kout *out, int binary, const void *obj) {
    (void)binary;
    return feat_wave_write(out, obj);
}
static void wave_hfree(void *obj) { feat_wave_release(obj); }
const struct holder_ops holder_wave = {"wave", sizeof(struct feat_wave), wave_hread, wave_hwrite,
                                       wave_hfree, NULL};

/* ---- tables of audio ---- */

int feat_wave_reader_open(struct feat_wave_reader *r, const char *rspecifier) {
    memset(r, 0, sizeof *r);
    const char *colon = strchr(rspecifier, ':');
    int is_scp = 0, is_ark = 0;
    if (colon) {
        char opts[256];
        size_t n = (size_t)(colon - rspecifier);
        if (n < sizeof opts) {
            memcpy(opts, rspecifier, n);
            opts[n] = '\0';
            for (char *save = NULL, *o = strtok_r(opts, ",", &save); o;
                 o = strtok_r(NULL, ",", &save)) {
                if (!strcmp(o, "scp")) is_scp = 1;
                if (!strcmp(o, "ark")) is_ark = 1;
            }
        }
    }
    if (is_scp == is_ark)
        return error_set("invalid rspecifier '%s' (expected scp:wav.scp or ark:...)", rspecifier);
    r->rspecifier = xstrdup(rspecifier);
    r->is_scp = is_scp;
    if (is_ark) {
        if (table_reader_open(&r->ark, rspecifier, &holder_wave)) {
            free(r->rspecifier);
            memset(r, 0, sizeof *r);
            return -1;
        }
        return 0;
    }
    if (kin_open(&r->scp, colon + 1)) {
        error_wrap("cannot open '%s': ", rspecifier);
        free(r->rspecifier);
        memset(r, 0, sizeof *r);
        return -1;
    }
    return 0;
}

/* One scp line into r->line; 1, 0 at the end, -1. */
static int scp_line(struct feat_wave_reader *r) {
    size_t n = 0;
    int c = kin_getc(&r->scp);
    if (c < 0) return 0;
    for (; c >= 0 && c != '\n'; c = kin_getc(&r->scp)) {
        if (c == 0) return kin_error(&r->scp, "NUL byte in a text line");
        if (n + 2 > r->cap) {
            if (r->cap >= (1u << 20)) return kin_error(&r->scp, "line too long");
            r->cap = r->cap ? r->cap * 2 : 256;
            r->line = xrealloc(r->line, r->cap);
        }
        r->line[n++] = (char)c;
    }
    if (!r->line) r->line = xmalloc(r->cap = 256);
    r->line[n] = '\0';
    return 1;
}

int feat_wave_reader_next(struct feat_wave_reader *r, struct feat_wave *w) {
    if (r->done) return 0;
    if (!r->is_scp) {
        int rc = table_reader_next(&r->ark, w);
        if (rc <= 0) r->done = 1;
        return rc;
    }
    for (;;) {
        int got = scp_line(r);
        if (got <= 0) {
            r->done = 1;
            return got;
        }
        char *s = r->line;
        size_t len = strlen(s);
        while (len && isspace((unsigned char)s[len - 1])) s[--len] = '\0';
        while (*s && isspace((unsigned char)*s)) s++;
        if (!*s) continue; /* a blank line */
        char *key = s;
        while (*s && !isspace((unsigned char)*s)) s++;
        if (*s) *s++ = '\0';
        while (*s && isspace((unsigned char)*s)) s++;
        free(r->key);
        r->key = xstrdup(key);
        if (!*s) {
            error_set("'%s': no filename for utterance '%s'", r->scp.name, key);
            return 2;
        }
        struct kin in;
        if (kin_open(&in, s)) return 2;
        int rc = feat_wave_read(&in, w);
        if (in.kind == KIN_PIPE) {
            /* Drain the pipe so that its writer never dies of SIGPIPE after the data chunk, and
             * report a failed command rather than what its missing output looked like. */
            unsigned char tmp[1 << 14];
            size_t avail;
            do {
                kin_peek_bytes(&in, sizeof tmp, &avail);
                if (avail && kin_read(&in, tmp, avail, NULL)) break;
            } while (avail);
            char *why = rc ? xstrdup(error_get()) : NULL;
            if (kin_close(&in)) {
                free(why);
                feat_wave_release(w);
                return 2;
            }
            if (why) error_set("%s", why);
            free(why);
        } else {
            kin_close(&in);
        }
        return rc == 0 ? 1 : 2;
    }
}

const char *feat_wave_reader_key(const struct feat_wave_reader *r) {
    return r->is_scp ? (r->key ? r->key : "") : table_reader_key(&r->ark);
}

int feat_wave_reader_close(struct feat_wave_reader *r) {
    int rc = 0;
    if (r->is_scp) {
        if (r->scp.f && kin_close(&r->scp) && r->done) rc = -1;
    } else if (r->rspecifier) {
        rc = table_reader_close(&r->ark);
    }
    free(r->line);
    free(r->key);
    free(r->rspecifier);
    memset(r, 0, sizeof *r);
    return rc;
}
