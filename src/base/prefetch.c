/* Read-ahead (base.h, "read-ahead"): a ring of num_slots slots, a producer thread and a consumer.
 * full[i] says that slot i holds an item the consumer has not given back; the producer fills the
 * slots in ring order and waits while the next one is still full. */
#include "base/base.h"

#include <pthread.h>
#include <stdlib.h>

struct prefetch {
    prefetch_produce_fn produce;
    void *ctx;
    int num_slots;
    int *full;
    int produce_at, consume_at; /* slot indices */
    int held;                   /* the consumer holds slot (consume_at - 1) */
    int finished;               /* the producer is done: end_status says how */
    int end_status;             /* 0 end of data, -1 error */
    int stop;                   /* the consumer asks the producer to stop */
    char error[2048];           /* the producer's error (error_get is per thread) */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    pthread_t thread;
};

static void *producer_main(void *arg) {
    struct prefetch *p = arg;
    int status = 0;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        while (!p->stop && p->full[p->produce_at]) pthread_cond_wait(&p->changed, &p->lock);
        int stop = p->stop, slot = p->produce_at;
        pthread_mutex_unlock(&p->lock);
        if (stop) break;
        int rc = p->produce(p->ctx, slot);
        if (rc <= 0) {
            status = rc < 0 ? -1 : 0;
            break;
        }
        pthread_mutex_lock(&p->lock);
        p->full[slot] = 1;
        p->produce_at = (slot + 1) % p->num_slots;
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
    }
    pthread_mutex_lock(&p->lock);
    if (status) snprintf(p->error, sizeof p->error, "%s", error_get());
    p->end_status = status;
    p->finished = 1;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

struct prefetch *prefetch_new(int num_slots, prefetch_produce_fn produce, void *ctx) {
    ASSERT(num_slots >= 1 && produce);
    struct prefetch *p = xcalloc(1, sizeof *p);
    p->produce = produce;
    p->ctx = ctx;
    p->num_slots = num_slots;
    p->full = xcalloc((size_t)num_slots, sizeof *p->full);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->changed, NULL);
    if (pthread_create(&p->thread, NULL, producer_main, p)) {
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->changed);
        free(p->full);
        free(p);
        error_set("cannot start the read-ahead thread");
        return NULL;
    }
    return p;
}

/* With the lock held. */
static void give_back(struct prefetch *p) {
    if (!p->held) return;
    p->full[(p->consume_at + p->num_slots - 1) % p->num_slots] = 0;
    p->held = 0;
    pthread_cond_broadcast(&p->changed);
}

void prefetch_release(struct prefetch *p) {
    pthread_mutex_lock(&p->lock);
    give_back(p);
    pthread_mutex_unlock(&p->lock);
}

int prefetch_next(struct prefetch *p, int *slot) {
    pthread_mutex_lock(&p->lock);
    give_back(p);
    while (!p->full[p->consume_at] && !p->finished) pthread_cond_wait(&p->changed, &p->lock);
    int rc;
    if (p->full[p->consume_at]) {
        *slot = p->consume_at;
        p->consume_at = (p->consume_at + 1) % p->num_slots;
        p->held = 1;
        rc = 1;
    } else {
        rc = p->end_status;
        if (rc) error_set("%s", p->error);
    }
    pthread_mutex_unlock(&p->lock);
    return rc;
}

void prefetch_free(struct prefetch *p) {
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->changed);
    free(p->full);
    free(p);
}
