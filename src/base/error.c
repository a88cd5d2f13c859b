/* One error message per thread: set where the problem is found, wrapped with context on the way
 * up, printed once by main. */
#include "base/base.h"

#include <stdarg.h>
#include <string.h>

static _Thread_local char error_buf[2048];

int error_set(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error_buf, sizeof error_buf, fmt, ap);
    va_end(ap);
    return -1;
}

int error_wrap(const char *fmt, ...) {
    char prefix[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    size_t plen = strlen(prefix), olen = strnlen(error_buf, sizeof error_buf - 1);
    if (plen + olen > sizeof error_buf - 1) olen = sizeof error_buf - 1 - plen;
    memmove(error_buf + plen, error_buf, olen);
    memcpy(error_buf, prefix, plen);
    error_buf[plen + olen] = '\0';
    return -1;
}

const char *error_get(void) { return error_buf[0] ? error_buf : "unknown error"; }

void error_clear(void) { error_buf[0] = '\0'; }
