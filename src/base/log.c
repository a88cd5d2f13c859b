/* Kaldi-shaped log lines on stderr, assertions, and the out-of-memory policy. */
#include "base/base.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int log_verbose = 0;
static const char *program_name = "parnet";

void log_set_program(const char *argv0) {
    const char *slash = strrchr(argv0, '/');
    program_name = slash ? slash + 1 : argv0;
}

const char *log_program(void) { return program_name; }

static const char *basename_of(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static void log_vprint(int level, const char *func, const char *file, int line, const char *fmt,
                       va_list ap) {
    char head[32];
    if (level == LOG_LEVEL_ERROR) snprintf(head, sizeof head, "ERROR");
    else if (level == LOG_LEVEL_WARNING) snprintf(head, sizeof head, "WARNING");
    else if (level == LOG_LEVEL_INFO) snprintf(head, sizeof head, "LOG");
    else snprintf(head, sizeof head, "VLOG[%d]", level);
    /* One fprintf per line keeps lines whole when threads or jobs share a log. */
    char msg[4096];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(stderr, "%s (%s[%s]:%s():%s:%d) %s\n", head, program_name, PARNET_VERSION, func,
            basename_of(file), line, msg);
}

void log_message(int level, const char *func, const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_vprint(level, func, file, line, fmt, ap);
    va_end(ap);
}

void log_die(const char *func, const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_vprint(LOG_LEVEL_ERROR, func, file, line, fmt, ap);
    va_end(ap);
    /* The process ends here: the temporaries go, stdio is flushed, and nothing else runs -- the
     * memory main still holds is the operating system's now, not a leak for LeakSanitizer. */
    tempfile_remove_all();
    fflush(NULL);
    _exit(1);
}

void assert_fail(const char *cond, const char *func, const char *file, int line) {
    fprintf(stderr, "ASSERTION_FAILED (%s[%s]:%s():%s:%d) %s\n", program_name, PARNET_VERSION,
            func, basename_of(file), line, cond);
    abort();
}

static void *check_alloc(void *p, size_t n) {
    if (!p && n) {
        fprintf(stderr, "ERROR (%s[%s]) out of memory allocating %zu bytes\n", program_name,
                PARNET_VERSION, n);
        abort();
    }
    return p;
}

void *xmalloc(size_t n) { return check_alloc(malloc(n ? n : 1), n); }

void *xcalloc(size_t count, size_t size) {
    return check_alloc(calloc(count ? count : 1, size ? size : 1), count * size);
}

void *xrealloc(void *p, size_t n) { return check_alloc(realloc(p, n ? n : 1), n); }

char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}
