/* The registry of temporary output files (base.h "Temporaries"), after git's tempfile.c: every
 * temporary is on one list from its creation; a signal handler and an exit handler remove what
 * has not been committed. The list is changed only with the handled signals blocked, and the
 * handler only reads it and calls unlink(), which is async-signal-safe. */
#include "base/base.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { TEMPFILE_OPEN = 1, TEMPFILE_PENDING = 2 };

struct tempfile {
    struct tempfile *next;
    char *path;       /* the temporary */
    char *final_path; /* where it goes on commit */
    volatile sig_atomic_t state;
};

static struct tempfile *volatile tempfile_list;
static pthread_mutex_t tempfile_lock = PTHREAD_MUTEX_INITIALIZER;
static int tempfile_deferred;
static pid_t tempfile_owner;
static const int tempfile_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};
#define NUM_SIGNALS ((int)(sizeof tempfile_signals / sizeof tempfile_signals[0]))

static void remove_all_uncommitted(void) {
    /* A child made by fork() (popen) shares the list but owns none of the files. */
    if (getpid() != tempfile_owner) return;
    for (struct tempfile *t = tempfile_list; t; t = t->next)
        if (t->state) {
            unlink(t->path);
            t->state = 0;
        }
}

void tempfile_remove_all(void) { remove_all_uncommitted(); }

static void on_signal(int sig) {
    remove_all_uncommitted();
    signal(sig, SIG_DFL);
    raise(sig); /* die of the signal, so the parent sees how we ended */
}

static void lock(sigset_t *old) {
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < NUM_SIGNALS; i++) sigaddset(&set, tempfile_signals[i]);
    pthread_sigmask(SIG_BLOCK, &set, old);
    pthread_mutex_lock(&tempfile_lock);
}

static void unlock(const sigset_t *old) {
    pthread_mutex_unlock(&tempfile_lock);
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

static void tempfile_free(struct tempfile *t) {
    free(t->path);
    free(t->final_path);
    free(t);
}

/* Take t off the list (the caller holds the lock). */
static void unlist(struct tempfile *t) {
    for (struct tempfile *volatile *p = &tempfile_list; *p; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            return;
        }
}

static void on_exit_handler(int status, void *arg) {
    (void)arg;
    if (getpid() != tempfile_owner) return;
    if (status == 0 && tempfile_commit_all()) {
        fprintf(stderr, "ERROR (%s[%s]) %s\n", log_program(), PARNET_VERSION, error_get());
        remove_all_uncommitted();
        fflush(NULL);
        _exit(1);
    }
    remove_all_uncommitted();
}

static void install_handlers(void) {
    static int done;
    if (done) return;
    done = 1;
    tempfile_owner = getpid();
    for (int i = 0; i < NUM_SIGNALS; i++) {
        struct sigaction sa, old;
        if (sigaction(tempfile_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue; /* nohup and friends: an ignored signal stays ignored */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(tempfile_signals[i], &sa, NULL);
    }
    on_exit(on_exit_handler, NULL);
}

void tempfile_commit_at_exit(void) { tempfile_deferred = 1; }

static mode_t file_mode(void) {
    static mode_t mode;
    static int done;
    if (!done) {
        mode_t m = umask(022);
        umask(m);
        mode = 0666 & ~m;
        done = 1;
    }
    return mode;
}

struct tempfile *tempfile_create(const char *final_path, int *fd) {
    size_t n = strlen(final_path);
    const char *slash = strrchr(final_path, '/');
    size_t dir_len = slash ? (size_t)(slash - final_path + 1) : 0;
    struct tempfile *t = xcalloc(1, sizeof *t);
    t->path = xmalloc(n + 16);
    memcpy(t->path, final_path, dir_len);
    snprintf(t->path + dir_len, n + 16 - dir_len, ".%s.XXXXXX", final_path + dir_len);
    t->final_path = xstrdup(final_path);
    sigset_t old;
    lock(&old);
    install_handlers();
    *fd = mkstemp(t->path);
    int e = errno;
    if (*fd >= 0) {
        t->state = TEMPFILE_OPEN;
        t->next = tempfile_list;
        tempfile_list = t;
    }
    unlock(&old);
    if (*fd < 0) {
        tempfile_free(t);
        error_set("cannot open '%s' for writing: %s", final_path, strerror(e));
        return NULL;
    }
    fchmod(*fd, file_mode());
    return t;
}

const char *tempfile_path(const struct tempfile *t) { return t->path; }

static int commit_now(struct tempfile *t) {
    if (rename(t->path, t->final_path)) {
        int e = errno;
        unlink(t->path);
        return error_set("cannot rename '%s' to '%s': %s", t->path, t->final_path, strerror(e));
    }
    return 0;
}

int tempfile_commit(struct tempfile *t) {
    if (!t) return 0;
    sigset_t old;
    lock(&old);
    if (tempfile_deferred) {
        t->state = TEMPFILE_PENDING;
        unlock(&old);
        return 0;
    }
    unlist(t);
    unlock(&old);
    int rc = commit_now(t);
    tempfile_free(t);
    return rc;
}

void tempfile_remove(struct tempfile *t) {
    if (!t) return;
    sigset_t old;
    lock(&old);
    unlist(t);
    unlock(&old);
    unlink(t->path);
    tempfile_free(t);
}

int tempfile_commit_all(void) {
    /* With the signals blocked throughout, a SIGTERM arriving now waits for the renames. */
    sigset_t old;
    lock(&old);
    /* The list is newest first; commit in creation order (an scp after its archive). */
    struct tempfile *rev = NULL, *keep = NULL, *head = tempfile_list;
    tempfile_list = NULL; /* a handler on another thread never sees a list being relinked */
    for (struct tempfile *t = head, *next; t; t = next) {
        next = t->next;
        struct tempfile **to = t->state == TEMPFILE_PENDING ? &rev : &keep;
        t->next = *to;
        *to = t;
    }
    int rc = 0;
    for (struct tempfile *t = rev, *next; t; t = next) {
        next = t->next;
        if (rc) unlink(t->path);
        else if (commit_now(t)) rc = -1;
        tempfile_free(t);
    }
    struct tempfile *list = NULL; /* keep back to newest first */
    for (struct tempfile *t = keep, *next; t; t = next) {
        next = t->next;
        t->next = list;
        list = t;
    }
    tempfile_list = list;
    unlock(&old);
    return rc;
}
