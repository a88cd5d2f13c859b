/* base: logging, errors, assertions, option parsing, random numbers, timers, memory.
 *
 * The lowest layer of parnet; everything else includes it.
 *
 * Logging (Kaldi's shape, always on stderr; stdout is for data):
 *     LOG (nnet-train[0.1]:main():nnet-train.c:88) message
 *     WARNING (...) / ERROR (...) / VLOG[2] (...)
 *   log_set_program(argv[0]) once in main; VLOG(n, ...) prints when n <= log_verbose.
 *
 * Errors, three tiers (docs/STYLE.md §9):
 *   - a programmer bug: ASSERT(cond) prints file:line and abort()s;
 *   - bad input inside the library: error_set() records one message for this thread and returns -1;
 *     callers add context with error_wrap() ("file 'x': key 'k': " + reason) and pass -1 up.
 *     Library readers never exit, so fuzzers and tests can reach every error path;
 *   - in main: die("cannot read '%s': %s", name, error_get()) prints the ERROR line once, exits 1.
 *
 * Memory: xmalloc/xcalloc/xrealloc abort on exhaustion (an OOM is not bad input). Readers must check
 * sizes from files against what is left before allocating (docs/STYLE.md §7).
 *
 * Options: a table of struct option_spec, parsed by options_parse(), which understands
 *   --name=value, bare --flag (booleans), --config=FILE (lines "--name=value", '#' comments),
 *   --help, --verbose=N, --print-args[=bool], and "--" ends options. A short option ("-x") or an
 *   unknown --name is a usage error: the usage text is printed and the program exits 2.
 *
 * Parallel loops: one process-wide pool of threads (parallel_set_threads; 1, the default, means
 * serial). parallel_run(fn, arg) calls fn(arg, t, num) for t = 0..num-1 at once, the caller doing
 * t = 0, and returns when every call has returned; each call works on its own part (parallel_part).
 * num is 1 (fn runs alone on the caller) when the pool has one thread, when called from inside a
 * task, or while another thread is using the pool, so callers never need to care. Workers poll for
 * a while after each job (the gaps between matrix operations are microseconds), then sleep.
 *
 * Temporaries (git tempfile.c / lockfile.h): one registry per process of the temporary files
 *   that outputs are written to. tempfile_create() makes "<dir>/.<name>.XXXXXX" next to the final
 *   name and puts it on the registry; the first call installs handlers for SIGINT, SIGTERM, SIGHUP,
 *   SIGQUIT and SIGPIPE (ones already ignored stay ignored) that remove every uncommitted temporary
 *   and then die of the signal, and an exit handler that removes them on any exit. tempfile_commit()
 *   renames the closed temporary onto the final name at once -- unless tempfile_commit_at_exit()
 *   was called (options_parse does, so in every program): then the rename waits for the program
 *   to exit with status 0, and die(), a non-zero exit or a signal leaves every existing output
 *   untouched. Only SIGKILL (or a crash) can leave a ".name.XXXXXX" behind, never a partial file
 *   under the final name.
 *
 * Reading ahead (prefetch): one producer thread fills a ring of slots ahead of one consumer, so
 * that reading and decoding the next item overlaps the work on the current one. The one
 * mechanism behind both read-ahead threads of parnet: io's `ark,bg:` tables (one object ahead)
 * and train's minibatch source (two minibatches ahead). The producer's error message (error_get
 * is per thread) is handed to the consumer with the status.
 *
 * Random numbers: struct rng holds its whole state (xoshiro128**, seeded by splitmix64), so every
 * random stream is reproducible from a seed and threads never share hidden state. Never libc rand().
 */
#ifndef PARNET_BASE_BASE_H
#define PARNET_BASE_BASE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PARNET_VERSION "0.1"

/* ---- logging ---- */
enum log_level { LOG_LEVEL_ERROR = -2, LOG_LEVEL_WARNING = -1, LOG_LEVEL_INFO = 0 };

extern int log_verbose; /* --verbose=N */

void log_set_program(const char *argv0);
const char *log_program(void);
void log_message(int level, const char *func, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
_Noreturn void log_die(const char *func, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define LOG(...) log_message(LOG_LEVEL_INFO, __func__, __FILE__, __LINE__, __VA_ARGS__)
#define WARN(...) log_message(LOG_LEVEL_WARNING, __func__, __FILE__, __LINE__, __VA_ARGS__)
#define VLOG(n, ...) \
    do { \
        if ((n) <= log_verbose) log_message((n), __func__, __FILE__, __LINE__, __VA_ARGS__); \
    } while (0)
/* Print an ERROR line, remove the temporaries, flush stdio and _exit(1) (no atexit handlers: the
 * memory still held is not a leak). For main() only: the library reports with error_set(). */
#define die(...) log_die(__func__, __FILE__, __LINE__, __VA_ARGS__)

_Noreturn void assert_fail(const char *cond, const char *func, const char *file, int line);
#define ASSERT(c) ((c) ? (void)0 : assert_fail(#c, __func__, __FILE__, __LINE__))

/* ---- errors (thread-local, one message) ---- */
/* Record a message and return -1, so that "return error_set(...);" reads naturally. */
int error_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prepend context to the current message ("key 'k': " + old); returns -1. */
int error_wrap(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *error_get(void);
void error_clear(void);

/* ---- memory ---- */
void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

/* ---- options ---- */
enum option_type { OPT_BOOL, OPT_INT, OPT_FLOAT, OPT_DOUBLE, OPT_STRING };

struct option_spec {
    const char *name;  /* without the dashes: "minibatch-size" */
    enum option_type type;
    void *value;       /* int* (OPT_BOOL, OPT_INT), float*, double*, const char ** (OPT_STRING) */
    const char *help;
};
/* For a function that fills a table `specs` counted by `n` (an option group shared by programs):
 * OPTION("name", OPT_INT, &x, "help") appends one entry. */
#define OPTION(...) (specs[n++] = (struct option_spec){__VA_ARGS__})

/* Parse options out of argv; on return argv[0..*argc) holds the program name and positional
 * arguments only. usage is printed for --help (exit 0) and on usage errors (exit 2). Also handles
 * the built-ins listed above and echoes the command line to stderr unless --print-args=false.
 * String values point into argv or into storage that lives until exit. */
void options_parse(int *argc, char **argv, const char *usage, const struct option_spec *specs,
                   int num_specs);
/* options_parse, then the usage (exit 2) unless min_args to max_args positional arguments remain
 * (max_args -1: no upper bound): the opening of every program's main. */
void options_parse_args(int *argc, char **argv, const char *usage,
                        const struct option_spec *specs, int num_specs, int min_args,
                        int max_args);
/* Print usage and the option table, then exit(2). For a wrong positional count. */
/* Bounds of numeric options, one row per option (a program's own table): a value outside
 * [min, max] is one ERROR "--name=value: must be from min to max" and exit 1 -- instead of an
 * allocation that aborts. Rows naming no option of specs are a programmer's error (ASSERT). */
struct option_limit {
    const char *name;
    double min, max;
};
void options_check_limits(const struct option_spec *specs, int num_specs,
                          const struct option_limit *limits, int num_limits);
_Noreturn void options_usage_exit(const char *usage, const struct option_spec *specs,
                                  int num_specs);
/* Parse helpers shared with config-line parsing elsewhere; return 0 or -1 (error_set). */
int parse_bool(const char *s, int *out);
int parse_int(const char *s, int *out);
int parse_float(const char *s, float *out);
int parse_double(const char *s, double *out);
/* "a:b:c" (a colon-separated list, as nnet-copy --learning-rates and nnet-average --weights take)
 * -> *num floats in *out (xmalloc'ed; the caller frees). An empty item, a bad number or min_value
 * above an item: -1 with error_set naming the item and the list, *out untouched. */
int parse_float_list(const char *s, float min_value, float **out, int *num);

/* ---- temporaries ---- */
struct tempfile;
/* Create and register a temporary for final_path; *fd is open for writing. NULL (error_set). */
struct tempfile *tempfile_create(const char *final_path, int *fd);
const char *tempfile_path(const struct tempfile *t);
/* The caller has closed the file. Rename it now, or mark it for the rename at a successful exit
 * (tempfile_commit_at_exit). Frees t (or hands it to the registry). -1 (error_set): removed. */
int tempfile_commit(struct tempfile *t);
/* Unlink the temporary and free t; NULL is a no-op. */
void tempfile_remove(struct tempfile *t);
/* From now on commits wait for exit(0); any other end removes the temporaries. */
void tempfile_commit_at_exit(void);
/* Remove every temporary not yet renamed (what a failing exit does; die() calls it). */
void tempfile_remove_all(void);
/* Rename every committed-but-waiting temporary now, in creation order. -1 (error_set) if one
 * failed; then it and the rest are removed. The exit handler calls it on status 0. */
int tempfile_commit_all(void);

/* ---- random numbers ---- */
struct rng {
    uint32_t s[4];
    int have_gauss;
    float gauss;
};

void rng_seed(struct rng *r, uint64_t seed);
uint32_t rng_u32(struct rng *r);
/* Uniform in [0, n), n > 0, without modulo bias. */
uint32_t rng_below(struct rng *r, uint32_t n);
/* Uniform in [0, 1). */
double rng_uniform(struct rng *r);
/* Standard normal (Box–Muller). */
float rng_gauss(struct rng *r);
/* Fisher–Yates shuffle of n elements of the given size. */
void rng_shuffle(struct rng *r, void *base, size_t n, size_t size);

/* ---- parallel loops ---- */
/* n >= 1 threads in all, the caller included (n - 1 workers are started; 1 stops them; at most
 * PARALLEL_MAX_THREADS). Call it while no parallel_run is in flight (at start-up). */
#define PARALLEL_MAX_THREADS 64
void parallel_set_threads(int n);
/* The threads a parallel_run from here would use: 1 inside a task, else the pool's size. */
int parallel_threads(void);
void parallel_run(void (*fn)(void *arg, int t, int num), void *arg);
/* Part t of num of [0, n), in chunks whose starts are multiples of align (>= 1). */
static inline void parallel_part(int n, int t, int num, int align, int *begin, int *end) {
    int chunks = (n + align - 1) / align;
    int c0 = (int)((long)chunks * t / num), c1 = (int)((long)chunks * (t + 1) / num);
    *begin = c0 * align < n ? c0 * align : n;
    *end = c1 * align < n ? c1 * align : n;
}

/* ---- read-ahead: a producer thread ahead of one consumer (prefetch.c) ---- */
struct prefetch;
/* Fills slot (0..num_slots-1, the caller's storage) on the producer thread: 1 filled, 0 the end,
 * -1 failure (error_set). After 0 or -1 it is not called again. */
typedef int (*prefetch_produce_fn)(void *ctx, int slot);
/* Start the producer. NULL (error_set) if the thread cannot start. */
struct prefetch *prefetch_new(int num_slots, prefetch_produce_fn produce, void *ctx);
/* Wait for the oldest filled slot: 1 with its index in *slot, 0 at the end, -1 with the
 * producer's error set on this thread. The slot is the consumer's until prefetch_release or the
 * next prefetch_next (which releases it first); only then is it filled again. */
int prefetch_next(struct prefetch *p, int *slot);
/* Give back the slot handed out last (early: before the next prefetch_next); no-op if none. */
void prefetch_release(struct prefetch *p);
/* Stop the producer (after the call it is in, if any), join it and free p; NULL is a no-op. */
void prefetch_free(struct prefetch *p);

/* ---- timers ---- */
double time_now(void); /* seconds, monotonic */

/* ---- a deadline for a call that may wait forever on another machine (watchdog.c) ---- */
/* Before a blocking call whose peers may vanish (an MPI all-reduce whose rank or network is
 * gone): watchdog_arm(seconds, fmt, ...) names the wait; watchdog_disarm() after it returns. If
 * it has not returned within seconds, a watchdog thread prints "ERROR (...) <name> has not
 * completed in S s" and ends the process with _exit(status): from another thread nothing else is
 * safe while the caller sits inside the library. seconds <= 0: no deadline. One per process; the
 * thread starts on the first arm with a deadline (-1 with error_set if it cannot). */
int watchdog_arm(double seconds, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void watchdog_disarm(void);

#endif
