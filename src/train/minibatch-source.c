/* Examples -> minibatches on a reading thread (train-internal.h), two slots deep through base.h's
 * prefetch, so that reading, decoding and assembling the next minibatch overlaps the computation
 * on the current one. The thread reads each minibatch straight into its slot (egs_reader_read:
 * no struct example in between). */
#include "train/train-internal.h"

#include <stdlib.h>

enum { NUM_SLOTS = 2 };

struct minibatch_source {
    struct egs_reader *reader;
    int minibatch_size, left, right;
    int ended;                        /* a short minibatch was read: the end of the table */
    struct egs_minibatch slots[NUM_SLOTS];
    struct prefetch *ahead;
};

/* On the reading thread. */
static int read_minibatch(void *ctx, int slot) {
    struct minibatch_source *s = ctx;
    if (s->ended) return 0;
    int n = egs_reader_read(s->reader, &s->slots[slot], s->minibatch_size, s->left, s->right);
    if (n <= 0) return n < 0 ? -1 : 0;
    if (n < s->minibatch_size) s->ended = 1;
    return 1;
}

struct minibatch_source *minibatch_source_new(const char *egs_rspec, int minibatch_size,
                                              int left, int right) {
    ASSERT(minibatch_size > 0);
    struct minibatch_source *s = xcalloc(1, sizeof *s);
    if (!(s->reader = egs_reader_open(egs_rspec))) {
        free(s);
        return NULL;
    }
    s->minibatch_size = minibatch_size;
    s->left = left;
    s->right = right;
    for (int i = 0; i < NUM_SLOTS; i++) egs_minibatch_init(&s->slots[i]);
    if (!(s->ahead = prefetch_new(NUM_SLOTS, read_minibatch, s))) {
        error_set("cannot start the example reading thread");
        egs_reader_close(s->reader);
        free(s);
        return NULL;
    }
    return s;
}

int minibatch_source_next(struct minibatch_source *s, const struct egs_minibatch **mb) {
    int slot, rc = prefetch_next(s->ahead, &slot);
    if (rc == 1) *mb = &s->slots[slot];
    return rc;
}

int minibatch_source_free(struct minibatch_source *s) {
    if (!s) return 0;
    prefetch_free(s->ahead);
    int rc = egs_reader_close(s->reader);
    for (int i = 0; i < NUM_SLOTS; i++) egs_minibatch_release(&s->slots[i]);
    free(s);
    return rc;
}
