/* onednn-internal: what onednn.c (matmuls) and onednn-conv.c (convolution, pooling, batch norm)
 * share, and cpu-conv.c the registry; for those files only.
 *
 * grow_buf: a grow-only buffer, at least `bytes` of room, kept for the next call (contents are
 * not kept when it grows). With oneDNN: DNNL_CHECK, which reports a failed oneDNN call (a broken
 * library or a programmer bug on shapes already checked, onednn.h) with the call and its status
 * and aborts. In both builds, the registry of per-thread state: onednn_thread_register(obj,
 * release) hands obj (one thread's buffers or primitive cache, on the heap) to release(obj) at
 * exit, every registered object before the engine is destroyed, so a cache never outlives the
 * engine its primitives belong to and a pool thread's buffers are not lost with the thread. */
#ifndef PARNET_MATRIX_ONEDNN_INTERNAL_H
#define PARNET_MATRIX_ONEDNN_INTERNAL_H

#include <stddef.h>

struct grow_buf {
    void *p;
    size_t bytes;
};
void *grow_buf_get(struct grow_buf *b, size_t bytes);

void onednn_thread_register(void *obj, void (*release)(void *obj));

/* The replacement of a thread's primitive cache (size entries, used of them filled, next the
 * oldest once all are): the slot for a new entry, the next unused one or else the oldest, round
 * robin. *evict: the slot holds an entry, to be released first. */
static inline int onednn_cache_slot(int *used, int *next, int size, int *evict) {
    *evict = *used == size;
    if (!*evict) return (*used)++;
    int slot = *next;
    *next = (slot + 1) % size;
    return slot;
}

#if HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>

#define DNNL_CHECK(call)                                                                     \
    do {                                                                                     \
        dnnl_status_t st_ = (call);                                                          \
        if (st_ != dnnl_success) {                                                           \
            fprintf(stderr, "ERROR (%s:%d) oneDNN: %s failed with status %d\n", __FILE__,   \
                    __LINE__, #call, (int)st_);                                              \
            abort();                                                                         \
        }                                                                                    \
    } while (0)
#endif

#endif
