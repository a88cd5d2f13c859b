/* io: Kaldi-compatible input/output — extended filenames, Kaldi objects, tables, zlib.
 *
 * Everything a file holds is read and written through this module, byte-compatible with Kaldi
 * (the layouts are written out below). Objects are host matrices (device MATRIX_CPU); callers
 * move them to a device themselves.
 *
 * ---- Streams ----
 * struct kin reads an rxfilename:
 *     "-" or ""      stdin
 *     "cmd |"        popen(cmd, "r"); kin_close reports a failed command
 *     "file:123"     a plain file, positioned at byte 123 (an archive offset from an scp)
 *     other          a plain file
 *   Rejected: a leading '|', leading/trailing whitespace, "ark:"/"scp:" prefixes.
 * struct kout writes a wxfilename: "-" stdout, "| cmd" popen(cmd, "w"), else a plain file. A plain
 *   file is written as "<dir>/.<name>.XXXXXX" in the same directory, a temporary on the registry
 *   of base.h (tempfile_*), and committed by kout_close after fflush + fsync + fclose all succeed
 *   (STYLE §8): renamed onto the final name at once in a library or test, or -- in a program,
 *   where options_parse() turned on tempfile_commit_at_exit() -- when the program exits with
 *   status 0. On die(), a non-zero exit, SIGINT, SIGTERM, SIGHUP, SIGQUIT or SIGPIPE every
 *   temporary is removed and an existing file under the final name is left untouched.
 *   kout_abort removes the temporary. kin/kout count bytes (offset) so messages and scp offsets
 *   are exact. A directory where a file is expected is an error saying so ("is a directory"),
 *   for input and output alike.
 * Pipes (a command's, or stdin/stdout when they are one) are grown to a megabyte and go through a
 *   megabyte of buffer both ways; input is read with read(2), taking what a pipe holds, so that a
 *   trainer reading "cmd |" wakes its writer once a megabyte, not once a 4 KB page.
 *
 * ---- Errors ----
 * Every function returning int returns 0 (or 1 = "got an item" for readers), 0 = end, and -1 on
 * error after error_set(). Messages from object readers name the stream and byte offset:
 *     "'feats.ark' at byte 1234: truncated matrix data (expected 1560 bytes, got 12)"
 * Table readers add the key. Readers never exit or abort on bad input, and check every size field
 * against the bytes left in the stream (when known) and against IO_MAX_ELEMENTS before allocating.
 *
 * ---- Binary primitives (Kaldi base/io-funcs) ----
 *   header        "\0B" starts a binary object; anything else means text.
 *   token         chars + ' ' in both modes (e.g. "FM ", "<Nnet> ").
 *   int32         binary: 0x04 then 4 bytes little-endian; text: "%d ".
 *   float         binary: 0x04 + 4 bytes; double: 0x08 + 8 bytes (readers accept either);
 *                 text: "%.7g " (Kaldi sets precision 7).
 *   bool          binary: 'T' or 'F' (no space); text "T " / "F ".
 *   int32 vector  (WriteIntegerVector) binary: 0x04, raw int32 count (NO size byte), raw data;
 *                 text "[ 1 2 3 ]\n".
 *   Vector        "FV " / "DV ", int32 dim, raw data; text " [ 1 2 3 ]\n".
 *   Matrix        "FM " / "DM ", int32 rows, int32 cols, raw row-major data;
 *                 text " [\n  1 2 3 \n  4 5 6 ]\n", empty " [ ]\n".
 *   CompressedMatrix "CM " / "CM2 " / "CM3 ", then float min, float range, int32 rows, int32 cols
 *                 (raw, no size bytes), then:
 *       CM  per column 4 x uint16 (p0, p25, p75, p100), then uint8 data column-major;
 *           byte b decodes piecewise-linearly: 0..64 -> p0..p25, 64..192 -> p25..p75,
 *           192..255 -> p75..p100, where pX = min + range * u / 65535.
 *       CM2 uint16 row-major, min + range * u / 65535.
 *       CM3 uint8 row-major,  min + range * u / 255.
 *     An empty matrix is "CM " with an all-zero 16-byte header.
 *
 * ---- Tables (Kaldi util/kaldi-table) ----
 * wspecifier: "ark:WX", "scp:RX" (each key goes to the file the scp names), "ark,scp:WX,SCPWX";
 *   options before ':' (comma-separated): t (text), b (binary, default), f / nf (flush after each
 *   entry / not), p (permissive: scp keys not in the scp are skipped).
 *   Archive entry: "key " + object written by its holder (binary objects start with "\0B").
 *   ark,scp writes "key ARK:OFFSET\n" where OFFSET points just after "key " (at the "\0B").
 * rspecifier: "ark:RX", "scp:RX"; options o, s, cs, p, bg (each negatable with n: no, ns, ...),
 *   b/t ignored. An scp line is "key rxfilename"; a matrix rxfilename may end in a range
 *   "[r0:r1]" or "[r0:r1,c0:c1]" (inclusive; an empty side or ":" means all).
 *   p: a bad scp entry is skipped and a truncated archive ends the table (with a warning) instead
 *      of failing; bg: a read-ahead thread reads the next entry while the caller works.
 *   s / cs / o matter to random access (table_reader_lookup), where Kaldi gives them their
 *      meaning: the archive is sorted / lookups come in sorted order / each key is asked once;
 *      with them a lookup into an archive from a pipe reads only as far as it must and keeps
 *      little in memory (see table_reader_lookup).
 *
 * Holders make tables generic: a const struct holder_ops names an object type and how to
 * read/write/release it. Objects are caller-owned structs of ops->size bytes that must start
 * zeroed; a read into an object first releases what it holds. Provided holders:
 *   holder_matrix       struct matrix (reads FM/DM/CM* with optional scp ranges, writes FM);
 *   holder_compressed_matrix  struct compressed_matrix (writes CM/CM2/CM3; reads any matrix);
 *   holder_vector       struct vector (FV/DV);
 *   holder_int32        int32_t (BasicHolder<int32>);
 *   holder_int32_vector struct int32_vec (Kaldi BasicVectorHolder<int32>: binary "\0B", int32
 *                       count WITH size byte, then each element as an int32 with size byte;
 *                       text: "1 2 3 \n" to the end of the line).
 *   holder_posterior    struct posterior (Kaldi Posterior); holder_targets reads a Posterior or an
 *                       int32 vector into one (below);
 *   holder_token, holder_token_vector  char *, struct token_vec (utt2spk, spk2utt).
 */
#ifndef PARNET_IO_IO_H
#define PARNET_IO_IO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/base.h"
#include "matrix/matrix.h"

/* No single object may hold more elements than this (2^31 - 1 floats = 8 GiB). */
#define IO_MAX_ELEMENTS 2147483647LL
/* Longest token or key accepted. */
#define IO_MAX_TOKEN 4096

/* ---- input streams ---- */
enum kin_kind { KIN_NONE, KIN_FILE, KIN_STDIN, KIN_PIPE, KIN_WRAPPED };

struct kin {
    FILE *f;
    char *name;        /* for messages: the rxfilename as given */
    int64_t offset;    /* bytes consumed from the start of the file */
    int64_t size;      /* total file size when known (regular file), else -1 */
    int kind;          /* enum kin_kind */
    int eof;           /* the underlying stream has hit end of file */
    unsigned char *buf; /* read buffer: buf[pos..len) not yet consumed */
    size_t pos, len, cap;
    /* State a holder keeps for the whole stream (egs.h: the PQ range tables read so far), or
     * NULL; kin_close calls holder_state_free(holder_state). */
    void *holder_state;
    void (*holder_state_free)(void *state);
};

/* Open an rxfilename (see above). Returns 0, or -1 with error_set. */
int kin_open(struct kin *in, const char *rxfilename);
/* Wrap an open FILE (e.g. fmemopen in tests and fuzzers); kin_close does not fclose it.
 * size: total bytes available, or -1 if unknown. */
void kin_wrap(struct kin *in, FILE *f, const char *name, int64_t size);
/* Close; -1 (error_set) if a pipe command exited non-zero. Safe on a zeroed or closed kin. */
int kin_close(struct kin *in);

/* Raw access (used by holders). kin_read reads exactly n bytes: 0, or -1 "truncated". */
int kin_read(struct kin *in, void *dst, size_t n, const char *what);
/* Next byte without consuming, or -1 at end of file. */
int kin_peek(struct kin *in);
/* Consume one byte; -1 at end. */
int kin_getc(struct kin *in);
/* Look at up to n (<= 1 MiB) bytes without consuming them; *avail is how many exist. */
const unsigned char *kin_peek_bytes(struct kin *in, size_t n, size_t *avail);
/* 1 if at end of stream (after skipping nothing), else 0. */
int kin_at_eof(struct kin *in);
/* Bytes left if known, else -1. */
int64_t kin_remaining(const struct kin *in);
/* Sets error "'name' at byte N: " + message; returns -1. */
int kin_error(const struct kin *in, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- output streams ---- */
enum kout_kind { KOUT_NONE, KOUT_FILE, KOUT_STDOUT, KOUT_PIPE, KOUT_WRAPPED };

struct kout {
    FILE *f;
    char *name;        /* the wxfilename as given */
    struct tempfile *tmp; /* KOUT_FILE: the registered temporary being written (base.h) */
    int64_t offset;    /* bytes written so far */
    int kind;
    int failed;        /* a write failed (reported again by kout_close) */
    char *buf;         /* a pipe's stdio buffer (stream.c), freed after the stream's close */
    /* State a holder keeps for the whole stream (egs.h: the PQ range tables written so far), or
     * NULL; kout_close and kout_abort call holder_state_free(holder_state). */
    void *holder_state;
    void (*holder_state_free)(void *state);
};

int kout_open(struct kout *out, const char *wxfilename);
/* Wrap an open FILE (tests: open_memstream); kout_close flushes but does not fclose it. */
void kout_wrap(struct kout *out, FILE *f, const char *name);
/* Flush, check, fsync, fclose (pclose), rename into place. -1 with error_set on any failure,
 * including an earlier write failure or a pipe command's non-zero status. */
int kout_close(struct kout *out);
/* Close without committing: a temporary file is removed. For error paths. */
void kout_abort(struct kout *out);
int kout_write(struct kout *out, const void *src, size_t n);
int kout_printf(struct kout *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int kout_flush(struct kout *out);

/* ---- Kaldi primitives ---- */
/* Reads "\0B" if present: *binary = 1, else 0 (nothing consumed). -1 on "\0" without 'B'. */
int io_read_header(struct kin *in, int *binary);
int io_write_header(struct kout *out, int binary);

/* Token: in text mode leading whitespace is skipped; the token ends at whitespace, which is
 * consumed (one char). size includes the NUL; longer tokens are an error. */
int io_read_token(struct kin *in, int binary, char *buf, size_t size);
/* Read a token and require it to equal `token`; error "expected <X>, got <Y>". */
int io_expect_token(struct kin *in, int binary, const char *token);
/* Peek at the next token without consuming it (text mode skips whitespace first, which is
 * consumed). Returns 0 and fills buf, or -1. */
int io_peek_token(struct kin *in, int binary, char *buf, size_t size);
int io_write_token(struct kout *out, int binary, const char *token);

int io_read_int32(struct kin *in, int binary, int32_t *v);
int io_read_float(struct kin *in, int binary, float *v);   /* accepts a double, too */
int io_read_double(struct kin *in, int binary, double *v); /* accepts a float, too */
int io_read_bool(struct kin *in, int binary, int *v);
int io_write_int32(struct kout *out, int binary, int32_t v);
int io_write_float(struct kout *out, int binary, float v);
int io_write_double(struct kout *out, int binary, double v);
int io_write_bool(struct kout *out, int binary, int v);

/* A growable host array of int32 (WriteIntegerVector / BasicVectorHolder payloads). */
struct int32_vec {
    int32_t *data;
    int dim;
};
void int32_vec_release(struct int32_vec *v); /* frees data, zeroes; no-op on a zeroed struct */

/* Kaldi ReadIntegerVector / WriteIntegerVector (the in-object form, see above). */
int io_read_int32_vector(struct kin *in, int binary, struct int32_vec *v);
int io_write_int32_vector(struct kout *out, int binary, const struct int32_vec *v);

/* Vector FV/DV. *v must be zeroed or hold a host vector (it is released and re-initialised). */
int io_read_vector(struct kin *in, int binary, struct vector *v);
int io_write_vector(struct kout *out, int binary, const struct vector *v); /* FV, host vector */

/* Matrix FM/DM/CM/CM2/CM3 (decoded). *m must be zeroed or hold a host matrix. */
int io_read_matrix(struct kin *in, int binary, struct matrix *m);
/* FM in binary; the text form in text mode. m must be a host matrix (any stride). */
int io_write_matrix(struct kout *out, int binary, const struct matrix *m);

/* ---- non-finite data (docs/RELIABILITY.md "NaN and Inf") ----
 * The policy: data used for training or inference never contains NaN or Inf. Programs that use
 * features (nnet-forward, nnet-get-egs) reject a matrix for which io_check_finite fails, naming
 * the file and key; the example reader rejects non-finite inputs, so nnet-train,
 * nnet-compute-prob, nnet-combine and the egs tools never see them; a compressed matrix with a
 * non-finite header is corrupt. copy-feats, a format tool, copies them as Kaldi does, with a
 * WARNING naming the key and the count (compressing them is an error). */
/* 0 if every element of the host matrix is finite, else -1 with error_set("non-finite value
 * (NaN) at row 3, column 0"). */
int io_check_finite(const struct matrix *m);
/* How many elements are NaN or Inf. */
long long io_count_nonfinite(const struct matrix *m);

/* ---- compressed matrices ---- */
/* Kaldi's CompressionMethod numbering (copy-feats --compression-method). */
enum cm_method {
    CM_METHOD_AUTO = 1,          /* CM if rows > 8, else CM2 */
    CM_METHOD_SPEECH = 2,        /* CM: 8 bits with per-column percentiles */
    CM_METHOD_2BYTE_AUTO = 3,    /* CM2, range from the data */
    CM_METHOD_2BYTE_INT = 4,     /* CM2, min -32768, range 65535 (integers exact) */
    CM_METHOD_1BYTE_AUTO = 5,    /* CM3, range from the data */
    CM_METHOD_1BYTE_UINT = 6,    /* CM3, min 0, range 255 */
    CM_METHOD_1BYTE_01 = 7,      /* CM3, min 0, range 1 */
};
enum cm_format { CM_FORMAT_CM = 1, CM_FORMAT_CM2 = 2, CM_FORMAT_CM3 = 3 };

/* A compressed matrix as it appears after its token: the 16-byte header plus payload. */
struct compressed_matrix {
    int format;        /* enum cm_format */
    float min_value, range;
    int32_t rows, cols;
    unsigned char *data; /* the payload after the 16-byte header (column headers included) */
    size_t data_size;
};
/* Payload bytes for a format and shape; -1 if the shape is invalid or too large. */
int64_t compressed_matrix_payload_size(int format, int64_t rows, int64_t cols);
/* Compress a host matrix. Returns 0, or -1 (error_set) if it holds NaN/Inf or method is bad.
 * *cm must be zeroed or hold a previous compressed matrix (released first). */
int compressed_matrix_compress(struct compressed_matrix *cm, const struct matrix *m,
                               int method);
/* Decode into *m (zeroed or a host matrix; reinitialised to rows x cols). */
void compressed_matrix_decode(const struct compressed_matrix *cm, struct matrix *m);
void compressed_matrix_release(struct compressed_matrix *cm);
/* Binary only: "CM " etc. Reading in text mode reads a plain matrix and compresses it with
 * CM_METHOD_AUTO (as Kaldi does). read accepts FM/DM too (then compresses). */
int io_read_compressed_matrix(struct kin *in, int binary, struct compressed_matrix *cm);
/* In text mode writes the decoded matrix as a plain text matrix (as Kaldi). */
int io_write_compressed_matrix(struct kout *out, int binary, const struct compressed_matrix *cm);

/* ---- holders and tables ---- */
struct holder_ops {
    const char *name; /* "matrix", for messages */
    size_t size;      /* sizeof the object struct */
    /* Read one object, header included (binary decided from "\0B"). 0 or -1. */
    int (*read)(struct kin *in, void *obj);
    /* Write one object, header included. 0 or -1. */
    int (*write)(struct kout *out, int binary, const void *obj);
    void (*release)(void *obj);
    /* Optional: apply an scp range "[r0:r1,c0:c1]"; NULL if ranges are not allowed. */
    int (*apply_range)(void *obj, int r0, int r1, int c0, int c1);
};
/* A holder's read and write (prefix_read, prefix_write) for an object whose own reader and writer
 * take the binary flag: Kaldi's header ("\0B" or nothing) around them. */
#define HOLDER_READ_WRITE(prefix, type, read_body, write_body) \
    static int prefix##_read(struct kin *in, void *obj) { \
        int binary; \
        return io_read_header(in, &binary) ? -1 : read_body(in, binary, (type *)obj); \
    } \
    static int prefix##_write(struct kout *out, int binary, const void *obj) { \
        return io_write_header(out, binary) ? -1 : write_body(out, binary, (const type *)obj); \
    }
extern const struct holder_ops holder_matrix;
extern const struct holder_ops holder_vector;
extern const struct holder_ops holder_int32_vector;
extern const struct holder_ops holder_compressed_matrix; /* struct compressed_matrix */
/* int32_t; Kaldi BasicHolder<int32>: binary "\0B" + int32, text "13 \n" (feat-to-len). */
extern const struct holder_ops holder_int32;

/* 1 if s looks like an rspecifier / wspecifier ("ark:", "scp:", "ark,t:" ...), else 0 (an
 * rx/wxfilename). Used by programs that accept either, as Kaldi's ClassifyRspecifier. */
int io_is_table_specifier(const char *s);

/* Keys and string values sorted by key, for lookup: a key -> token table (token_map_read), and the
 * tables' own indexes (an scp's key -> rxfilename or wxfilename). */
struct token_map {
    char **keys, **values;
    int n;
};

enum table_kind { TABLE_ARK = 1, TABLE_SCP = 2, TABLE_ARK_SCP = 3 };

struct table_writer {
    const struct holder_ops *ops;
    char *wspecifier;
    int kind, binary, flush, permissive;
    struct kout ark, scp;
    char *ark_name;        /* ark filename as it goes into scp lines */
    struct token_map scp_files; /* scp: key -> wxfilename */
    long long num_written;
};

/* Parse a wspecifier and open its outputs. Returns 0 or -1 (error_set). */
int table_writer_open(struct table_writer *w, const char *wspecifier,
                      const struct holder_ops *ops);
int table_writer_write(struct table_writer *w, const char *key, const void *obj);
/* Close every output; -1 if anything failed (also a write failure earlier). */
int table_writer_close(struct table_writer *w);
/* Error path: close and remove the temporaries, leaving no output under the final names. */
void table_writer_abort(struct table_writer *w);

struct table_reader_bg;  /* read-ahead thread state (table.c) */
struct table_reader_scp; /* scp reading state: line buffer, the archive kept open (table.c) */
struct table_reader_stream; /* objects read ahead from a stream for random access (table.c) */

struct table_reader {
    const struct holder_ops *ops;
    char *rspecifier;
    int kind;                      /* TABLE_ARK or TABLE_SCP */
    int once, sorted, called_sorted, permissive, background;
    struct kin in;                 /* the archive, or the scp file */
    char key[IO_MAX_TOKEN];        /* key of the last item */
    int done, done_rc;             /* after the end (0) or an error (-1): every call repeats it */
    int64_t entry_offset;          /* archive: offset of the object of the last item */
    struct table_reader_scp *scp;
    struct token_map ra; /* random access: key -> rxfilename ("file:offset" for an ark) */
    int ra_loaded;
    struct table_reader_bg *bg;
    struct table_reader_stream *stream; /* random access into a pipe/stdin archive (table.c) */
};

/* Parse an rspecifier and open it for sequential reading (random access loads lazily). */
int table_reader_open(struct table_reader *r, const char *rspecifier,
                      const struct holder_ops *ops);
/* The same over an already-open stream (fmemopen in tests and fuzzers), which the reader takes
 * over (and closes). The rspecifier gives kind and options; its filename part is ignored. */
int table_reader_open_stream(struct table_reader *r, const char *rspecifier, struct kin *in,
                             const struct holder_ops *ops);
/* Next item: 1 with the object in *obj (zeroed or a previous object of this holder, which is
 * released first) and the key in table_reader_key(); 0 at the end; -1 on error (file, key,
 * byte offset and reason in error_get()). After 0 or -1 every call returns the same. */
int table_reader_next(struct table_reader *r, void *obj);
const char *table_reader_key(const struct table_reader *r);
/* Random access: 1 found (object in *obj), 0 not in the table, -1 error. Works on scp, on a
 * seekable ark (indexed by one pass on first use), and on an archive read from a pipe or stdin,
 * which is read only as far as needed (Kaldi's semantics), the objects read past kept in memory
 * (serialised) until asked for:
 *   s   the archive's keys are sorted (strcmp): a lookup stops reading at the first key past the
 *       one asked for, so a missing key costs nothing; unsorted keys are an error.
 *   cs  lookups come in sorted order: with s, objects before the key asked for are dropped, so
 *       memory stays at one object; a lookup out of order is an error.
 *   o   each key is asked for once: an object is dropped when it has been returned.
 * Without s a missing key reads the stream to its end. With both s and cs a file archive or an
 * scp is read the same way, forward (each entry's object read as it is passed), so that no index
 * of the table is held: memory does not grow with the table; without them it is indexed once.
 * Do not mix with table_reader_next. */
int table_reader_lookup(struct table_reader *r, const char *key, void *obj);
int table_reader_close(struct table_reader *r);
/* Close r after an error (its own, or the caller's), keeping that error's message: closing a pipe
 * may report its command's exit, which would replace it. Returns -1. */
int table_reader_abandon(struct table_reader *r);

/* A program's loop over one table (Kaldi's copy-*, ali-to-post, splice-feats): every entry of
 * rspecifier is read into obj (holder in; the caller's, zeroed, released by the caller after),
 * handed to fn, and what fn leaves in *out (it starts as obj) is written under the same key to
 * wspecifier (holder out; wspecifier NULL: nothing is written). fn NULL writes each entry as read;
 * else it returns 0 (write *out), 1 (nothing for this key) or -1 (error_set: stop). Returns the
 * number of entries written (without wspecifier: that fn accepted), or -1 (error_get(): an open's
 * message, fn's, or "cannot read 'rspecifier': ..." / "cannot write 'wspecifier': ..."), the output
 * removed (table_writer_abort). */
typedef int table_copy_fn(void *arg, const char *key, void *obj, const void **out);
long long table_copy(const char *rspecifier, const struct holder_ops *in, void *obj,
                     const char *wspecifier, const struct holder_ops *out, table_copy_fn *fn,
                     void *arg);

/* Read one object from an rxfilename with a possible "[range]" (scp value form). */
int io_read_object(const char *rxfilename, const struct holder_ops *ops, void *obj);

/* Convenience: read / write a whole single object file (e.g. a matrix file) by rx/wxfilename. */
int io_read_matrix_file(const char *rxfilename, struct matrix *m);
int io_write_matrix_file(const char *wxfilename, int binary, const struct matrix *m);

/* ---- Posterior (Kaldi hmm/posterior.h: per frame a list of (int32 pdf, float weight)) ----
 * binary: int32 num_frames, then per frame int32 num_pairs and each pair as int32 id, float
 *         weight (all with size bytes); text: "[ 3 1 ] [ 3 0.7 5 0.3 ] [ ] \n" on one line.
 * Stored flat (CSR): frame t owns pairs [start[t], start[t+1]). */
struct posterior {
    int num_frames;
    int *start;       /* (num_frames + 1) */
    int32_t *index;   /* (start[num_frames]) */
    float *weight;    /* (start[num_frames]) */
};
void posterior_release(struct posterior *p);
/* Per-frame ids (an alignment) as a Posterior: one pair (id, 1.0) per frame (ali-to-post). */
void posterior_from_ids(struct posterior *p, const struct int32_vec *ids);
int posterior_write(struct kout *out, int binary, const struct posterior *p); /* no header */
extern const struct holder_ops holder_posterior;
/* Training targets, read as a struct posterior from either a Posterior (ali-to-post) or an int32
 * vector of per-frame ids (ali-to-pdf; each id becomes one pair of weight 1), told apart per
 * object: text by its '['; binary by the weights' bit patterns (an int32 vector of ids read as a
 * Posterior puts small integers, i.e. denormal floats or zeros, where the weights go; a Posterior
 * has normal or zero weights and at least one non-zero). Writes a Posterior. */
extern const struct holder_ops holder_targets;

/* ---- tokens (Kaldi TokenHolder / TokenVectorHolder; always text: "key tok\n", "key a b\n") ---- */
struct token_vec {
    char **v;
    int n;
};
void token_vec_release(struct token_vec *v);
extern const struct holder_ops holder_token;        /* char * (one token per line) */
extern const struct holder_ops holder_token_vector; /* struct token_vec (spk2utt) */
/* A whole key -> token table in memory (utt2spk), sorted for lookup (struct token_map, above). */
/* Read every entry of a token rspecifier; a key twice is an error. 0 or -1 (error_set). */
int token_map_read(struct token_map *m, const char *rspecifier);
const char *token_map_find(const struct token_map *m, const char *key); /* NULL: not there */
void token_map_release(struct token_map *m);
/* A whole table of token vectors in memory (Kaldi's text: transcripts, hypotheses), sorted by key
 * for lookup; read from any stream (a pipe too). With a key twice, find returns either. */
struct token_vec_map {
    struct token_vec_entry {
        char *key;
        struct token_vec v;
    } *e;
    int n;
};
/* 0, or -1 (error_set; the reader's own message), m then empty. */
int token_vec_map_read(struct token_vec_map *m, const char *rspecifier);
const struct token_vec_entry *token_vec_map_find(const struct token_vec_map *m, const char *key);
void token_vec_map_release(struct token_vec_map *m);

/* ---- zlib ---- */
/* Deflate src into a new buffer (*dst, *dst_size; free with free()). level: 0..9 or -1. */
int io_deflate(const void *src, size_t src_size, int level, unsigned char **dst,
               size_t *dst_size);
/* Inflate into dst, which must come out exactly expected_size bytes (the caller knows the size
 * from its own header and has bounded it before allocating dst). -1 on corrupt data, a different
 * size, or trailing garbage. */
int io_inflate(const void *src, size_t src_size, void *dst, size_t expected_size);

#endif
