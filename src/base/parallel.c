/* The pool behind parallel_run (base.h). One job at a time: the caller publishes fn/arg, bumps
 * the job counter, runs its own part, then waits for the workers' parts. Workers poll the counter
 * for about a millisecond after a job (the next matrix operation usually follows within
 * microseconds) and then sleep on a condition variable. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/base.h"

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() ((void)0)
#endif

enum { POLLS_BEFORE_SLEEP = 10000, POLLS_BEFORE_YIELD = 2000 };

static struct {
    int threads; /* the caller included */
    pthread_t *workers;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    atomic_uint job;       /* a new value is a new job */
    unsigned job_at_start; /* job when the workers were started (they may start late) */
    atomic_int remaining;  /* workers still running the current job */
    atomic_int quit;
    atomic_flag busy;      /* a parallel_run is in flight */
    void (*fn)(void *, int, int);
    void *arg;
} pool = {.threads = 1,
          .lock = PTHREAD_MUTEX_INITIALIZER,
          .wake = PTHREAD_COND_INITIALIZER,
          .busy = ATOMIC_FLAG_INIT};

static _Thread_local int inside_task;

static void *worker_main(void *p) {
    int index = (int)(intptr_t)p;
    unsigned seen = pool.job_at_start;
    for (;;) {
        unsigned job;
        int polls = 0;
        while ((job = atomic_load_explicit(&pool.job, memory_order_acquire)) == seen) {
            if (atomic_load_explicit(&pool.quit, memory_order_relaxed)) return NULL;
            if (++polls < POLLS_BEFORE_SLEEP) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&pool.lock);
            while (atomic_load(&pool.job) == seen && !atomic_load(&pool.quit))
                pthread_cond_wait(&pool.wake, &pool.lock);
            pthread_mutex_unlock(&pool.lock);
            polls = 0;
        }
        seen = job;
        inside_task = 1;
        pool.fn(pool.arg, index, pool.threads);
        inside_task = 0;
        atomic_fetch_sub_explicit(&pool.remaining, 1, memory_order_release);
    }
}

static void stop_workers(void) {
    if (pool.threads <= 1) return;
    pthread_mutex_lock(&pool.lock);
    atomic_store(&pool.quit, 1);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);
    for (int i = 1; i < pool.threads; i++) pthread_join(pool.workers[i - 1], NULL);
    free(pool.workers);
    pool.workers = NULL;
    pool.threads = 1;
    atomic_store(&pool.quit, 0);
}

void parallel_set_threads(int n) {
    ASSERT(n >= 1);
    if (n > PARALLEL_MAX_THREADS) {
        WARN("%d threads asked for: using %d", n, PARALLEL_MAX_THREADS);
        n = PARALLEL_MAX_THREADS;
    }
    if (n == pool.threads) return;
    stop_workers();
    if (n == 1) return;
    pool.workers = xcalloc((size_t)n - 1, sizeof *pool.workers);
    pool.threads = n;
    pool.job_at_start = atomic_load(&pool.job);
    for (int i = 1; i < n; i++)
        if (pthread_create(&pool.workers[i - 1], NULL, worker_main, (void *)(intptr_t)i)) {
            WARN("cannot start worker thread %d of %d: running with %d", i, n - 1, i);
            pool.threads = i;
            break;
        }
}

int parallel_threads(void) { return inside_task ? 1 : pool.threads; }

void parallel_run(void (*fn)(void *arg, int t, int num), void *arg) {
    if (pool.threads <= 1 || inside_task || atomic_flag_test_and_set(&pool.busy)) {
        int was = inside_task; /* fn sees parallel_threads() == 1, so it cannot recurse here */
        inside_task = 1;
        fn(arg, 0, 1);
        inside_task = was;
        return;
    }
    pool.fn = fn;
    pool.arg = arg;
    atomic_store_explicit(&pool.remaining, pool.threads - 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&pool.job, 1, memory_order_release);
    pthread_mutex_lock(&pool.lock); /* wakes sleepers; no lost wake-up: they check under it */
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);
    inside_task = 1;
    fn(arg, 0, pool.threads);
    inside_task = 0;
    for (int polls = 0; atomic_load_explicit(&pool.remaining, memory_order_acquire) > 0;) {
        if (++polls < POLLS_BEFORE_YIELD)
            cpu_relax();
        else
            sched_yield(); /* a worker lost its core (2 cores, a reading thread beside us) */
    }
    atomic_flag_clear(&pool.busy);
}
