/* The registry of temporary output files (base.h "Temporaries"), after git's tempfile.c: every
 * temporary is on one list from its creation; a signal handler and an exit handler remove what
 * has not been committed. The list is changed only with the handled signals blocked, and the
 * handler only reads it and calls unlink(), which is async-signal-safe. */
#include "base/base.h"

#include <errno.h>
#include <limits.h>
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
    char *final_path; /* where it goes on commit: symbolic links followed, the directory canonical */
    char *backup;     /* during tempfile_commit_all: a hard link to the old final file, or NULL */
    int existed;      /* during tempfile_commit_all: final_path existed before */
    int renamed;      /* during tempfile_commit_all: renamed onto final_path */
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
    free(t->backup);
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

/* Where writing `path` really goes: a symbolic link is followed to its target (the link stays, the
 * target gets the new content, as fopen(path, "w") would), and the directory is made canonical so
 * that two spellings of one file compare equal. NULL (error_set) on a loop or a missing directory. */
static char *resolve_output(const char *path) {
    char *p = xstrdup(path);
    for (int hops = 0;; hops++) {
        struct stat st;
        if (lstat(p, &st) || !S_ISLNK(st.st_mode)) break;
        if (hops == 40) {
            error_set("cannot write '%s': too many levels of symbolic links", path);
            free(p);
            return NULL;
        }
        char target[PATH_MAX];
        ssize_t n = readlink(p, target, sizeof target - 1);
        if (n < 0) break;
        target[n] = '\0';
        const char *slash = strrchr(p, '/');
        if (target[0] == '/' || !slash) {
            free(p);
            p = xstrdup(target);
        } else { /* relative to the link's directory */
            size_t d = (size_t)(slash - p + 1);
            char *q = xmalloc(d + (size_t)n + 1);
            memcpy(q, p, d);
            memcpy(q + d, target, (size_t)n + 1);
            free(p);
            p = q;
        }
    }
    const char *slash = strrchr(p, '/');
    const char *base = slash ? slash + 1 : p;
    char *dir = slash ? xstrdup(slash == p ? "/" : p) : xstrdup(".");
    if (slash && slash != p) dir[slash - p] = '\0';
    char canon[PATH_MAX];
    if (!realpath(dir, canon)) {
        error_set("cannot open '%s' for writing: %s", path, strerror(errno));
        free(dir);
        free(p);
        return NULL;
    }
    free(dir);
    size_t c = strlen(canon), b = strlen(base);
    char *out = xmalloc(c + b + 2);
    memcpy(out, canon, c);
    out[c] = '/';
    memcpy(out + c + 1 - (c == 1), base, b + 1); /* "/" + base: no double slash */
    free(p);
    return out;
}

/* "<dir>/.<name>.XXXXXX", the name shortened so that it and the backup "...~" fit NAME_MAX. */
static char *temp_name(const char *final_path) {
    const char *slash = strrchr(final_path, '/');
    size_t dir_len = slash ? (size_t)(slash - final_path + 1) : 0;
    size_t base_len = strlen(final_path + dir_len);
    size_t max_base = NAME_MAX - 9; /* '.' + name + ".XXXXXX" + '~' */
    if (base_len > max_base) base_len = max_base;
    char *path = xmalloc(dir_len + base_len + 16);
    memcpy(path, final_path, dir_len);
    path[dir_len] = '.';
    memcpy(path + dir_len + 1, final_path + dir_len, base_len);
    strcpy(path + dir_len + 1 + base_len, ".XXXXXX");
    return path;
}

struct tempfile *tempfile_create(const char *final_path, int *fd) {
    char *target = resolve_output(final_path);
    if (!target) return NULL;
    struct stat old;
    int exists = stat(target, &old) == 0 && S_ISREG(old.st_mode);
    /* Replacing by rename would break hard links: the other names would keep the old content.
     * Rewriting in place would lose "old content on failure"; so refuse, before any work. */
    if (exists && old.st_nlink > 1) {
        error_set("cannot write '%s': it has %lu hard links, and writing a new file and renaming it "
                  "into place would break them; remove the other links or write another name",
                  final_path, (unsigned long)old.st_nlink);
        free(target);
        return NULL;
    }
    struct tempfile *t = xcalloc(1, sizeof *t);
    t->path = temp_name(target);
    t->final_path = target;
    sigset_t oldmask;
    lock(&oldmask);
    install_handlers();
    for (struct tempfile *u = tempfile_list; u; u = u->next)
        if (u->state && !strcmp(u->final_path, target)) {
            unlock(&oldmask);
            tempfile_free(t);
            error_set("cannot write '%s': the same file is already an output of this program", final_path);
            return NULL;
        }
    *fd = mkstemp(t->path);
    int e = errno;
    if (*fd >= 0) {
        t->state = TEMPFILE_OPEN;
        t->next = tempfile_list;
        tempfile_list = t;
    }
    unlock(&oldmask);
    if (*fd < 0) {
        tempfile_free(t);
        error_set("cannot open '%s' for writing: %s", final_path, strerror(e));
        return NULL;
    }
    if (exists) { /* the new file keeps the old one's mode and, where allowed, its group */
        fchmod(*fd, old.st_mode & 07777);
        if (fchown(*fd, (uid_t)-1, old.st_gid)) fchmod(*fd, old.st_mode & 0777);
    } else {
        fchmod(*fd, file_mode());
    }
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

/* Rename each of the list (creation order) onto its final name, all or none: every temporary is
 * checked first; an existing final file is kept as a hard link "<temporary>~" until all renames
 * succeeded, so that when one fails, those already renamed get their old content back (or are
 * removed if they did not exist before). Where the filesystem refuses the link, that one output
 * cannot be rolled back. The caller holds the lock. */
static int commit_list(struct tempfile *list) {
    int rc = 0;
    for (struct tempfile *t = list; t && !rc; t = t->next) {
        struct stat st;
        if (lstat(t->path, &st))
            rc = error_set("cannot rename '%s' to '%s': %s", t->path, t->final_path, strerror(errno));
    }
    for (struct tempfile *t = list; t && !rc; t = t->next) {
        struct stat st;
        size_t n = strlen(t->path);
        t->backup = xmalloc(n + 2);
        memcpy(t->backup, t->path, n);
        memcpy(t->backup + n, "~", 2);
        t->existed = lstat(t->final_path, &st) == 0;
        if (!t->existed || link(t->final_path, t->backup)) {
            free(t->backup);
            t->backup = NULL;
        }
        if (rename(t->path, t->final_path))
            rc = error_set("cannot rename '%s' to '%s': %s", t->path, t->final_path, strerror(errno));
        else t->renamed = 1;
    }
    for (struct tempfile *t = list; t; t = t->next) {
        if (rc && t->renamed) {
            if (t->backup) rename(t->backup, t->final_path);
            else if (!t->existed) unlink(t->final_path);
        } else if (t->backup) {
            unlink(t->backup);
        }
        if (!t->renamed) unlink(t->path);
    }
    return rc;
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
    int rc = commit_list(rev);
    for (struct tempfile *t = rev, *next; t; t = next) {
        next = t->next;
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
