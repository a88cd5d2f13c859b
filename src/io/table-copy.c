/* table_copy: the read-transform-write loop of the programs over one table, with their error
 * handling written once (io.h). */
#include "io/io.h"

static long long fail(struct table_reader *r, struct table_writer *w) {
    if (w) table_writer_abort(w);
    return table_reader_abandon(r);
}

long long table_copy(const char *rspecifier, const struct holder_ops *in, void *obj,
                     const char *wspecifier, const struct holder_ops *out, table_copy_fn *fn,
                     void *arg) {
    struct table_reader r;
    struct table_writer w;
    struct table_writer *wp = wspecifier ? &w : NULL;
    if (table_reader_open(&r, rspecifier, in)) return -1;
    if (wp && table_writer_open(wp, wspecifier, out)) return fail(&r, NULL);
    long long num_done = 0;
    int rc;
    while ((rc = table_reader_next(&r, obj)) > 0) {
        const char *key = table_reader_key(&r);
        const void *result = obj;
        int frc = fn ? fn(arg, key, obj, &result) : 0;
        if (frc < 0) return fail(&r, wp);
        if (frc > 0) continue;
        if (wp && table_writer_write(wp, key, result)) {
            error_wrap("cannot write '%s': ", wspecifier);
            return fail(&r, wp);
        }
        num_done++;
    }
    if (rc < 0 || table_reader_close(&r)) {
        error_wrap("cannot read '%s': ", rspecifier);
        if (wp) table_writer_abort(wp);
        return -1;
    }
    if (wp && table_writer_close(wp)) return error_wrap("cannot write '%s': ", wspecifier);
    return num_done;
}
