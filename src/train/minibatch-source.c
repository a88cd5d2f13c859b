/* Examples -> minibatches on a reading thread, two slots deep, so that reading, decoding and
 * assembling the next minibatch overlaps the computation on the current one. The thread reads
 * each minibatch straight into its slot (egs_reader_read: no struct example in between). */
#include "train/minibatch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { NUM_SLOTS = 2 };

struct slot {
    struct egs_minibatch mb;
    int full;
};

struct minibatch_source {
    struct egs_reader *reader;
    int minibatch_size, left, right;
    struct slot slots[NUM_SLOTS];
    int produce_at, consume_at;     /* slot indices */
    int held;                       /* the consumer holds slots[consume_at - 1] */
    int finished;                   /* the thread is done: end_status says how */
    int end_status;                 /* 0 end of data, -1 error */
    int stop;                       /* the consumer asks the thread to stop */
    char error[2048];               /* the thread's error (error_get is per thread) */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    pthread_t thread;
};

static void *reader_main(void *arg) {
    struct minibatch_source *s = arg;
    int status = 0;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        while (!s->stop && s->slots[s->produce_at].full) pthread_cond_wait(&s->changed, &s->lock);
        int stop = s->stop;
        pthread_mutex_unlock(&s->lock);
        if (stop) break;

        struct slot *slot = &s->slots[s->produce_at];
        int n = egs_reader_read(s->reader, &slot->mb, s->minibatch_size, s->left, s->right);
        if (n < 0) {
            status = -1;
            break;
        }
        if (n == 0) break;
        pthread_mutex_lock(&s->lock);
        slot->full = 1;
        s->produce_at = (s->produce_at + 1) % NUM_SLOTS;
        pthread_cond_broadcast(&s->changed);
        pthread_mutex_unlock(&s->lock);
        if (n < s->minibatch_size) break; /* the end of the table */
    }
    pthread_mutex_lock(&s->lock);
    if (status) snprintf(s->error, sizeof s->error, "%s", error_get());
    s->end_status = status;
    s->finished = 1;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    return NULL;
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
    for (int i = 0; i < NUM_SLOTS; i++) egs_minibatch_init(&s->slots[i].mb);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->changed, NULL);
    if (pthread_create(&s->thread, NULL, reader_main, s)) {
        error_set("cannot start the example reading thread");
        egs_reader_close(s->reader);
        free(s);
        return NULL;
    }
    return s;
}

int minibatch_source_next(struct minibatch_source *s, const struct egs_minibatch **mb) {
    pthread_mutex_lock(&s->lock);
    if (s->held) { /* give back the slot handed out last time */
        int prev = (s->consume_at + NUM_SLOTS - 1) % NUM_SLOTS;
        s->slots[prev].full = 0;
        s->held = 0;
        pthread_cond_broadcast(&s->changed);
    }
    while (!s->slots[s->consume_at].full && !s->finished) pthread_cond_wait(&s->changed, &s->lock);
    int rc;
    if (s->slots[s->consume_at].full) {
        *mb = &s->slots[s->consume_at].mb;
        s->consume_at = (s->consume_at + 1) % NUM_SLOTS;
        s->held = 1;
        rc = 1;
    } else {
        rc = s->end_status;
        if (rc) error_set("%s", s->error);
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int minibatch_source_free(struct minibatch_source *s) {
    if (!s) return 0;
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    int rc = egs_reader_close(s->reader);
    for (int i = 0; i < NUM_SLOTS; i++) egs_minibatch_release(&s->slots[i].mb);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->changed);
    free(s);
    return rc;
}
