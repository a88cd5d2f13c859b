/* Extended filenames: buffered input with a byte counter, and outputs that are written under a
 * temporary name and renamed on a successful close. */
#include "io/io.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define KIN_BUF 65536
/* A pipe's size, and the buffer we read and write it through: a megabyte (Linux's limit for an
 * unprivileged F_SETPIPE_SZ) wakes the other end once a megabyte, not once a 64 KB default pipe. */
#define PIPE_BYTES (1 << 20)

/* ---- input ---- */

static int rx_is_pipe(const char *s, size_t *cmd_len) {
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == ' ') n--;
    if (n == 0 || s[n - 1] != '|') return 0;
    n--;
    while (n > 0 && s[n - 1] == ' ') n--;
    *cmd_len = n;
    return 1;
}

/* "file:123" -> 1 with the name length and offset; a bare "file" -> 0. */
static int rx_offset(const char *s, size_t *name_len, int64_t *offset) {
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || !colon[1]) return 0;
    for (const char *p = colon + 1; *p; p++)
        if (!isdigit((unsigned char)*p)) return 0;
    errno = 0;
    long long v = strtoll(colon + 1, NULL, 10);
    if (errno) return 0;
    *name_len = (size_t)(colon - s);
    *offset = v;
    return 1;
}

static void kin_setup(struct kin *in, FILE *f, const char *name, int kind) {
    memset(in, 0, sizeof *in);
    in->f = f;
    in->name = xstrdup(name);
    in->kind = kind;
    in->size = -1;
    in->cap = KIN_BUF;
    struct stat st;
    if (kind != KIN_WRAPPED && fstat(fileno(f), &st) == 0 && S_ISFIFO(st.st_mode)) {
        /* Best effort: a pipe we cannot grow is only slower. */
        (void)fcntl(fileno(f), F_SETPIPE_SZ, PIPE_BYTES);
        in->cap = PIPE_BYTES;
    }
    in->buf = xmalloc(in->cap);
}

int kin_open(struct kin *in, const char *rx) {
    memset(in, 0, sizeof *in);
    if (!rx) rx = "-";
    if (!strcmp(rx, "-") || !*rx) {
        kin_setup(in, stdin, "standard input", KIN_STDIN);
        return 0;
    }
    size_t n = strlen(rx), cmd_len;
    if (rx[0] == '|') return error_set("invalid rxfilename '%s': a leading '|' is for output", rx);
    if (isspace((unsigned char)rx[0]) || isspace((unsigned char)rx[n - 1]))
        return error_set("invalid rxfilename '%s': leading or trailing space", rx);
    if (!strncmp(rx, "ark:", 4) || !strncmp(rx, "scp:", 4) || !strncmp(rx, "ark,", 4) ||
        !strncmp(rx, "scp,", 4))
        return error_set("invalid rxfilename '%s': looks like an rspecifier", rx);
    if (rx_is_pipe(rx, &cmd_len)) {
        char *cmd = xmalloc(cmd_len + 1);
        memcpy(cmd, rx, cmd_len);
        cmd[cmd_len] = '\0';
        fflush(NULL);
        FILE *f = popen(cmd, "r");
        free(cmd);
        if (!f) return error_set("cannot run command '%s': %s", rx, strerror(errno));
        kin_setup(in, f, rx, KIN_PIPE);
        return 0;
    }
    size_t name_len = n;
    int64_t offset = 0;
    int has_offset = rx_offset(rx, &name_len, &offset);
    char *path = xmalloc(name_len + 1);
    memcpy(path, rx, name_len);
    path[name_len] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f && has_offset && errno == ENOENT) {
        /* "a:b" might be a file name with a colon and digits. */
        f = fopen(rx, "rb");
        if (f) {
            has_offset = 0;
            offset = 0;
        }
    }
    if (!f) {
        int e = errno;
        free(path);
        return error_set("cannot open '%s': %s", rx, strerror(e));
    }
    free(path);
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        return error_set("cannot open '%s': is a directory, not a file", rx);
    }
    kin_setup(in, f, rx, KIN_FILE);
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode)) in->size = st.st_size;
    if (has_offset) {
        if (in->size >= 0 && offset > in->size) {
            kin_close(in);
            return error_set("cannot open '%s': offset %lld is past the end of the file", rx,
                             (long long)offset);
        }
        if (lseek(fileno(f), (off_t)offset, SEEK_SET) < 0) {
            int e = errno;
            kin_close(in);
            return error_set("cannot seek in '%s': %s", rx, strerror(e));
        }
        in->offset = offset;
    }
    return 0;
}

void kin_wrap(struct kin *in, FILE *f, const char *name, int64_t size) {
    kin_setup(in, f, name, KIN_WRAPPED);
    in->size = size;
}

int kin_close(struct kin *in) {
    int rc = 0;
    if (in->f) {
        if (in->kind == KIN_PIPE) {
            int st = pclose(in->f);
            if (st == -1) rc = error_set("'%s': pclose failed: %s", in->name, strerror(errno));
            else if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
                rc = error_set("command '%s' exited with status %d", in->name, WEXITSTATUS(st));
            else if (WIFSIGNALED(st))
                rc = error_set("command '%s' was killed by signal %d", in->name, WTERMSIG(st));
        } else if (in->kind == KIN_FILE) {
            fclose(in->f);
        }
    }
    if (in->holder_state) in->holder_state_free(in->holder_state);
    free(in->name);
    free(in->buf);
    memset(in, 0, sizeof *in);
    return rc;
}

int kin_error(const struct kin *in, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return error_set("'%s' at byte %lld: %s", in->name ? in->name : "?", (long long)in->offset,
                     msg);
}

/* Up to n bytes from the stream, 0 at its end (or on an error, which callers report as a short
 * read). Our own files, standard input and pipes are read with read(2), which returns what a pipe
 * holds: fread insists on its whole request, and on a pipe that meant one 4 KB page a call in
 * lockstep with the writer (~10 000 context switches a second, 12% of a 2-thread trainer's rate
 * on 2 cores reading through `cat`). A wrapped FILE (fmemopen) may have no descriptor. */
static size_t kin_sysread(struct kin *in, void *dst, size_t n) {
    if (in->kind == KIN_WRAPPED) return fread(dst, 1, n, in->f);
    for (;;) {
        ssize_t got = read(fileno(in->f), dst, n);
        if (got >= 0) return (size_t)got;
        if (errno != EINTR) return 0;
    }
}

/* Make at least `need` bytes available in the buffer unless the stream ends first.
 * Returns the number available. */
static size_t kin_fill(struct kin *in, size_t need) {
    size_t have = in->len - in->pos;
    if (have >= need || in->eof || !in->f) return have;
    if (need > in->cap) {
        size_t cap = in->cap;
        while (cap < need) cap *= 2;
        in->buf = xrealloc(in->buf, cap);
        in->cap = cap;
    }
    if (in->pos > 0) {
        memmove(in->buf, in->buf + in->pos, have);
        in->pos = 0;
        in->len = have;
    }
    while (in->len < need && !in->eof) {
        size_t got = kin_sysread(in, in->buf + in->len, in->cap - in->len);
        in->len += got;
        if (got == 0) in->eof = 1;
    }
    return in->len - in->pos;
}

int kin_peek(struct kin *in) { /* the buffered case first: token parsing calls this per byte */
    if (in->pos < in->len) return in->buf[in->pos];
    if (kin_fill(in, 1) < 1) return -1;
    return in->buf[in->pos];
}

int kin_getc(struct kin *in) {
    if (in->pos < in->len) {
        in->offset++;
        return in->buf[in->pos++];
    }
    if (kin_fill(in, 1) < 1) return -1;
    in->offset++;
    return in->buf[in->pos++];
}

int kin_at_eof(struct kin *in) { return kin_fill(in, 1) == 0; }

int64_t kin_remaining(const struct kin *in) {
    if (in->size < 0) return -1;
    return in->size > in->offset ? in->size - in->offset : 0;
}

const unsigned char *kin_peek_bytes(struct kin *in, size_t n, size_t *avail) {
    *avail = kin_fill(in, n);
    if (*avail > n) *avail = n;
    return in->buf + in->pos;
}

int kin_read(struct kin *in, void *dst, size_t n, const char *what) {
    unsigned char *d = dst;
    size_t done = 0;
    while (done < n) {
        size_t have = in->len - in->pos;
        if (have == 0) {
            if (n - done >= in->cap && !in->eof && in->f) {
                /* Large reads go straight to the destination. */
                size_t got = kin_sysread(in, d + done, n - done);
                done += got;
                in->offset += got;
                if (got == 0) in->eof = 1;
                continue;
            }
            have = kin_fill(in, n - done < in->cap ? n - done : in->cap);
            if (have == 0) break;
        }
        size_t take = have < n - done ? have : n - done;
        memcpy(d + done, in->buf + in->pos, take);
        in->pos += take;
        in->offset += take;
        done += take;
        if (in->eof && in->pos == in->len && done < n) break;
    }
    if (done < n)
        return kin_error(in, "truncated %s (expected %zu bytes, got %zu)", what ? what : "data",
                         n, done);
    return 0;
}

/* ---- output ---- */

/* Writing a pipe: stdio writes it 4 KB a call, each waking the reader; through a megabyte of
 * buffer into a pipe grown to a megabyte the reader is woken once a megabyte. A stream we open
 * owns its buffer (out->buf, freed after the close); standard output gets one for the program's
 * life, set after a flush of what it holds. */
static void kout_pipe_buffer(struct kout *out) {
    static char *stdout_buf;
    struct stat st;
    if (fstat(fileno(out->f), &st) || !S_ISFIFO(st.st_mode)) return;
    (void)fcntl(fileno(out->f), F_SETPIPE_SZ, PIPE_BYTES); /* best effort, as for reading */
    if (out->kind == KOUT_STDOUT) {
        if (stdout_buf) return;
        fflush(stdout);
        stdout_buf = xmalloc(PIPE_BYTES);
        setvbuf(stdout, stdout_buf, _IOFBF, PIPE_BYTES);
    } else {
        out->buf = xmalloc(PIPE_BYTES);
        setvbuf(out->f, out->buf, _IOFBF, PIPE_BYTES);
    }
}

/* The end of a successful kout_open (kout_wrap): 0. */
static int kout_opened(struct kout *out, FILE *f, const char *name, int kind) {
    out->f = f;
    out->name = xstrdup(name);
    out->kind = kind;
    if (kind != KOUT_WRAPPED) kout_pipe_buffer(out);
    return 0;
}

int kout_open(struct kout *out, const char *wx) {
    memset(out, 0, sizeof *out);
    if (!wx) wx = "-";
    if (!strcmp(wx, "-") || !*wx)
        return kout_opened(out, stdout, "standard output", KOUT_STDOUT);
    size_t n = strlen(wx);
    if (isspace((unsigned char)wx[n - 1]))
        return error_set("invalid wxfilename '%s': trailing space", wx);
    if (!strncmp(wx, "ark:", 4) || !strncmp(wx, "scp:", 4) || !strncmp(wx, "ark,", 4) ||
        !strncmp(wx, "scp,", 4))
        return error_set("invalid wxfilename '%s': looks like a wspecifier", wx);
    if (wx[0] == '|') {
        const char *cmd = wx + 1;
        while (*cmd == ' ') cmd++;
        fflush(NULL);
        FILE *f = popen(cmd, "w");
        if (!f) return error_set("cannot run command '%s': %s", wx, strerror(errno));
        return kout_opened(out, f, wx, KOUT_PIPE);
    }
    if (isspace((unsigned char)wx[0]))
        return error_set("invalid wxfilename '%s': leading space", wx);
    if (wx[n - 1] == '|') return error_set("invalid wxfilename '%s': a trailing '|' is for input", wx);
    /* Devices and FIFOs are written in place; only regular files go through a temporary. */
    struct stat st;
    if (stat(wx, &st) == 0 && S_ISDIR(st.st_mode))
        return error_set("cannot write '%s': is a directory, not a file", wx);
    if (stat(wx, &st) == 0 && !S_ISREG(st.st_mode)) {
        FILE *f = fopen(wx, "wb");
        if (!f) return error_set("cannot open '%s' for writing: %s", wx, strerror(errno));
        return kout_opened(out, f, wx, KOUT_FILE);
    }
    int fd;
    struct tempfile *tmp = tempfile_create(wx, &fd);
    if (!tmp) return -1;
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        int e = errno;
        close(fd);
        tempfile_remove(tmp);
        return error_set("cannot open '%s' for writing: %s", wx, strerror(e));
    }
    out->tmp = tmp;
    return kout_opened(out, f, wx, KOUT_FILE);
}

void kout_wrap(struct kout *out, FILE *f, const char *name) {
    memset(out, 0, sizeof *out);
    kout_opened(out, f, name, KOUT_WRAPPED);
}

int kout_write(struct kout *out, const void *src, size_t n) {
    if (n == 0) return 0;
    if (!out->f) return error_set("write to a closed output");
    if (fwrite(src, 1, n, out->f) != n) {
        out->failed = 1;
        return error_set("write error on '%s': %s", out->name, strerror(errno));
    }
    out->offset += n;
    return 0;
}

int kout_printf(struct kout *out, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return error_set("format error");
    if ((size_t)n < sizeof small) return kout_write(out, small, (size_t)n);
    char *big = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int rc = kout_write(out, big, (size_t)n);
    free(big);
    return rc;
}

int kout_flush(struct kout *out) {
    if (out->f && fflush(out->f)) {
        out->failed = 1;
        return error_set("write error on '%s': %s", out->name, strerror(errno));
    }
    return 0;
}

static void kout_free(struct kout *out) {
    if (out->holder_state) out->holder_state_free(out->holder_state);
    free(out->name);
    free(out->buf);
    memset(out, 0, sizeof *out);
}

int kout_close(struct kout *out) {
    int rc = 0;
    if (!out->f) {
        kout_free(out);
        return 0;
    }
    const char *name = out->name;
    if (out->failed) rc = error_set("write error on '%s'", name);
    if (fflush(out->f) || ferror(out->f)) {
        if (!rc) rc = error_set("write error on '%s': %s", name, strerror(errno));
    }
    switch (out->kind) {
    case KOUT_FILE:
        if (out->tmp && !rc && fsync(fileno(out->f)))
            rc = error_set("cannot sync '%s': %s", name, strerror(errno));
        if (fclose(out->f) && !rc) rc = error_set("cannot close '%s': %s", name, strerror(errno));
        if (out->tmp) {
            if (rc) tempfile_remove(out->tmp);
            else rc = tempfile_commit(out->tmp); /* now, or when the program succeeds */
            out->tmp = NULL;
        }
        break;
    case KOUT_PIPE: {
        int st = pclose(out->f);
        if (st == -1) {
            if (!rc) rc = error_set("'%s': pclose failed: %s", name, strerror(errno));
        } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
            if (!rc) rc = error_set("command '%s' exited with status %d", name, WEXITSTATUS(st));
        } else if (WIFSIGNALED(st)) {
            if (!rc) rc = error_set("command '%s' was killed by signal %d", name, WTERMSIG(st));
        }
        break;
    }
    default: break; /* stdout and wrapped streams stay open */
    }
    kout_free(out);
    return rc;
}

void kout_abort(struct kout *out) {
    if (out->f) {
        if (out->kind == KOUT_FILE) {
            fclose(out->f);
            tempfile_remove(out->tmp);
            out->tmp = NULL;
        } else if (out->kind == KOUT_PIPE) {
            pclose(out->f);
        } else {
            fflush(out->f);
        }
    }
    kout_free(out);
}

int kin_seek(struct kin *in, int64_t offset) {
    if (in->kind != KIN_FILE) return error_set("'%s': cannot seek (not a plain file)", in->name);
    if (in->size >= 0 && offset > in->size)
        return error_set("'%s': offset %lld is past the end of the file", in->name,
                         (long long)offset);
    /* lseek, not fseeko: we read the descriptor (kin_sysread), so stdio's idea of the position
     * is stale and fseeko may skip the seek. */
    if (lseek(fileno(in->f), (off_t)offset, SEEK_SET) < 0)
        return error_set("cannot seek in '%s': %s", in->name, strerror(errno));
    in->pos = in->len = 0;
    in->eof = 0;
    in->offset = offset;
    return 0;
}
