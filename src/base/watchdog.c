/* The deadline of base.h's watchdog_arm: one thread waits on a condition variable until the
 * armed deadline, and ends the process if the same arming is still in force then. Arming and
 * disarming cost a mutex and a signal (microseconds against an all-reduce's tens). */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

static pthread_mutex_t wd_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cond;
static int wd_started, wd_armed, wd_status;
static unsigned long wd_generation; /* one per arming: a late wake-up must not fire a new one */
static struct timespec wd_deadline;
static double wd_seconds;
static char wd_name[256];

/* A child of fork() has no watchdog thread: it starts its own on its first arming. */
static void watchdog_prefork(void) { pthread_mutex_lock(&wd_lock); }
static void watchdog_postfork_parent(void) { pthread_mutex_unlock(&wd_lock); }
static void watchdog_postfork_child(void) {
    pthread_mutex_unlock(&wd_lock);
    wd_started = 0;
    wd_armed = 0;
}

static void *watchdog_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&wd_lock);
    for (;;) {
        while (!wd_armed) pthread_cond_wait(&wd_cond, &wd_lock);
        unsigned long gen = wd_generation;
        int rc = 0;
        while (wd_armed && wd_generation == gen && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&wd_cond, &wd_lock, &wd_deadline);
        if (wd_armed && wd_generation == gen && rc == ETIMEDOUT) {
            log_message(LOG_LEVEL_ERROR, "watchdog", __FILE__, __LINE__,
                        "%s has not completed in %.0f s: exiting", wd_name, wd_seconds);
            fflush(stderr);
            _exit(wd_status);
        }
    }
    return NULL;
}

int watchdog_arm(double seconds, int status, const char *fmt, ...) {
    if (seconds <= 0) return 0;
    pthread_mutex_lock(&wd_lock);
    static int atfork_done;
    if (!atfork_done) {
        pthread_atfork(watchdog_prefork, watchdog_postfork_parent, watchdog_postfork_child);
        atfork_done = 1;
    }
    if (!wd_started) {
        pthread_condattr_t a;
        pthread_condattr_init(&a);
        pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
        pthread_cond_init(&wd_cond, &a);
        pthread_condattr_destroy(&a);
        pthread_t t;
        if (pthread_create(&t, NULL, watchdog_main, NULL)) {
            pthread_mutex_unlock(&wd_lock);
            return error_set("cannot start the watchdog thread");
        }
        pthread_detach(t);
        wd_started = 1;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(wd_name, sizeof wd_name, fmt, ap);
    va_end(ap);
    clock_gettime(CLOCK_MONOTONIC, &wd_deadline);
    long long ns = wd_deadline.tv_nsec + (long long)((seconds - (long long)seconds) * 1e9);
    wd_deadline.tv_sec += (time_t)seconds + (time_t)(ns / 1000000000);
    wd_deadline.tv_nsec = (long)(ns % 1000000000);
    wd_seconds = seconds;
    wd_status = status;
    wd_armed = 1;
    wd_generation++;
    pthread_cond_signal(&wd_cond);
    pthread_mutex_unlock(&wd_lock);
    return 0;
}

void watchdog_disarm(void) {
    pthread_mutex_lock(&wd_lock);
    wd_armed = 0;
    pthread_mutex_unlock(&wd_lock);
}
