/* Unit tests for base: errors, option parsing helpers, rng. */
#include "base/base.h"
#include "test.h"

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdlib.h>

static void test_error_wrap(void) {
    error_clear();
    CHECK(error_set("truncated matrix (expected %d cols, got %d)", 440, 12) == -1);
    CHECK(error_wrap("key '%s': ", "utt7") == -1);
    CHECK(error_wrap("cannot read '%s': ", "egs.3.ark") == -1);
    CHECK(!strcmp(error_get(),
                  "cannot read 'egs.3.ark': key 'utt7': truncated matrix (expected 440 cols, got 12)"));
}

static void test_parse_numbers(void) {
    int b, i;
    float f;
    double d;
    CHECK(parse_bool("true", &b) == 0 && b == 1);
    CHECK(parse_bool("f", &b) == 0 && b == 0);
    CHECK(parse_bool("yes", &b) == -1);
    CHECK(parse_int("-42", &i) == 0 && i == -42);
    CHECK(parse_int("42x", &i) == -1);
    CHECK(parse_int("", &i) == -1);
    CHECK(parse_int("99999999999", &i) == -1);
    CHECK(parse_float("0.002", &f) == 0 && fabsf(f - 0.002f) < 1e-9f);
    CHECK(parse_float("1e39", &f) == -1);
    CHECK(parse_double("nan", &d) == -1);
    CHECK(parse_double("inf", &d) == -1);
}

/* parse_float_list: the lists of nnet-copy --learning-rates and nnet-average --weights. */
static void test_parse_float_list(void) {
    float *v = NULL;
    int n = 0;
    CHECK(parse_float_list("0.5:2:1e-3", 0, &v, &n) == 0);
    CHECK(n == 3 && v[0] == 0.5f && v[1] == 2.0f && v[2] == 1e-3f);
    free(v);
    v = NULL;
    CHECK(parse_float_list("7", 0, &v, &n) == 0 && n == 1 && v[0] == 7.0f);
    free(v);
    v = NULL;
    const char *bad[] = {"", "1::2", "1:", ":1", "1:x", "1:-2", "1:nan"};
    for (int i = 0; i < (int)(sizeof bad / sizeof *bad); i++) {
        CHECK(parse_float_list(bad[i], 0, &v, &n) == -1);
        CHECK(v == NULL);
        CHECK(strstr(error_get(), "is not a number >= 0") != NULL);
    }
    CHECK(parse_float_list("-1:-2", -5, &v, &n) == 0 && n == 2 && v[1] == -2.0f);
    free(v);
}

static void test_rng_reproducible(void) {
    struct rng a, b;
    rng_seed(&a, 7);
    rng_seed(&b, 7);
    for (int i = 0; i < 1000; i++) CHECK(rng_u32(&a) == rng_u32(&b));
    rng_seed(&b, 8);
    int same = 0;
    for (int i = 0; i < 100; i++) same += rng_u32(&a) == rng_u32(&b);
    CHECK(same < 3);
}

static void test_rng_distributions(void) {
    struct rng r;
    rng_seed(&r, 1);
    int counts[10] = {0};
    double sum = 0, sq = 0;
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        counts[rng_below(&r, 10)]++;
        double g = rng_gauss(&r);
        sum += g;
        sq += g * g;
        double u = rng_uniform(&r);
        CHECK(u >= 0 && u < 1);
    }
    for (int k = 0; k < 10; k++) CHECK(abs(counts[k] - n / 10) < n / 100);
    CHECK(fabs(sum / n) < 0.01);
    CHECK(fabs(sq / n - 1.0) < 0.02);
}

static void test_rng_shuffle_is_permutation(void) {
    struct rng r;
    rng_seed(&r, 3);
    int v[100], seen[100] = {0};
    for (int i = 0; i < 100; i++) v[i] = i;
    rng_shuffle(&r, v, 100, sizeof v[0]);
    int moved = 0;
    for (int i = 0; i < 100; i++) {
        seen[v[i]]++;
        moved += v[i] != i;
    }
    for (int i = 0; i < 100; i++) CHECK(seen[i] == 1);
    CHECK(moved > 80);
}

struct cover {
    int n, hits[1000], calls, nested_num[PARALLEL_MAX_THREADS];
};

static void nested_task(void *p, int t, int num) {
    int *seen = p;
    *seen = num;
}

static void cover_task(void *p, int t, int num) {
    struct cover *c = p;
    int b, e;
    parallel_part(c->n, t, num, 8, &b, &e);
    for (int i = b; i < e; i++) c->hits[i]++;
    __atomic_fetch_add(&c->calls, 1, __ATOMIC_SEQ_CST);
    c->nested_num[t] = -1;
    parallel_run(nested_task, &c->nested_num[t]); /* inside a task: serial */
}

/* Every index is covered exactly once, by num calls, in parts aligned to 8; a task that calls
 * parallel_run gets one thread; the pool can grow, shrink and stop. */
static void test_parallel_run(void) {
    int sizes[] = {1, 3, 4};
    for (int k = 0; k < 3; k++) {
        parallel_set_threads(sizes[k]);
        CHECK(parallel_threads() == sizes[k]);
        for (int rep = 0; rep < 200; rep++) {
            static struct cover c;
            memset(&c, 0, sizeof c);
            c.n = 1 + rep * 37 % 1000;
            parallel_run(cover_task, &c);
            CHECK(c.calls == sizes[k]);
            for (int i = 0; i < c.n; i++) CHECK(c.hits[i] == 1);
            for (int t = 0; t < sizes[k]; t++) CHECK(c.nested_num[t] == 1);
        }
        int b, e, prev = 0;
        for (int t = 0; t < 3; t++) {
            parallel_part(100, t, 3, 8, &b, &e);
            CHECK(b == prev && b % 8 == 0);
            prev = e;
        }
        CHECK(prev == 100);
    }
    parallel_set_threads(1);
    CHECK(parallel_threads() == 1);
}

/* In a child: write "new" to path through the registry, commit, then end as `how` says. */
static void tempfile_child(const char *path, int deferred, int how) {
    if (deferred) tempfile_commit_at_exit();
    int fd;
    struct tempfile *t = tempfile_create(path, &fd);
    if (!t || write(fd, "new", 3) != 3) _exit(3);
    if (how == 2) raise(SIGTERM); /* killed while the temporary is open */
    close(fd);
    if (tempfile_commit(t)) _exit(3);
    exit(how); /* 0 success, 1 failure: the exit handler decides */
}

static int tempfile_run(const char *path, int deferred, int how) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) tempfile_child(path, deferred, how);
    int st;
    waitpid(pid, &st, 0);
    return st;
}

static int file_is(const char *path, const char *want) {
    char buf[16] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    return n == strlen(want) && !memcmp(buf, want, n);
}

static int no_temporaries(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int ok = 1;
    while ((e = readdir(d)))
        if (e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) ok = 0;
    closedir(d);
    return ok;
}

/* The registry: a deferred commit lands only on exit(0); exit(1) and SIGTERM leave the old file
 * and no temporary; without deferral a commit renames at once. */
static void test_tempfile_registry(void) {
    char dir[] = "/tmp/base-test.XXXXXX", path[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/out", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f && fputs("old", f) >= 0 && fclose(f) == 0);
    int st = tempfile_run(path, 1, 1);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
    CHECK(file_is(path, "old"));
    CHECK(no_temporaries(dir));
    st = tempfile_run(path, 1, 2);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    CHECK(file_is(path, "old"));
    CHECK(no_temporaries(dir));
    st = tempfile_run(path, 1, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(file_is(path, "new"));
    CHECK(no_temporaries(dir));
    unlink(path);
    st = tempfile_run(path, 0, 1); /* not deferred: committed before the failing exit */
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
    CHECK(file_is(path, "new"));
    /* in this process (not deferred): commit renames now, remove leaves nothing */
    int fd;
    struct tempfile *t = tempfile_create(path, &fd);
    CHECK(t != NULL);
    CHECK(write(fd, "abc", 3) == 3 && close(fd) == 0);
    CHECK(tempfile_commit(t) == 0);
    CHECK(file_is(path, "abc"));
    t = tempfile_create(path, &fd);
    CHECK(t != NULL);
    close(fd);
    tempfile_remove(t);
    CHECK(file_is(path, "abc"));
    CHECK(no_temporaries(dir));
    CHECK(tempfile_create("/nonexistent-dir/x", &fd) == NULL);
    CHECK(strstr(error_get(), "/nonexistent-dir/x") != NULL);
    unlink(path);
    rmdir(dir);
}

/* prefetch: every item arrives once, in order, through a ring of 3 slots; the producer never
 * overwrites a slot the consumer holds; its error reaches the consumer; free while items are
 * still coming stops it. */
struct prefetch_ctx {
    int next, limit, fail_at;
    int slots[3];
};
static int prefetch_produce(void *ctx, int slot) {
    struct prefetch_ctx *c = ctx;
    if (c->next == c->fail_at) return error_set("item %d is bad", c->next);
    if (c->next == c->limit) return 0;
    c->slots[slot] = c->next++;
    return 1;
}
static void test_prefetch(void) {
    struct prefetch_ctx c = {.limit = 100, .fail_at = -1};
    struct prefetch *p = prefetch_new(3, prefetch_produce, &c);
    CHECK(p != NULL);
    int slot, want = 0, rc;
    while ((rc = prefetch_next(p, &slot)) == 1) {
        CHECK(slot >= 0 && slot < 3);
        int got = c.slots[slot];
        usleep(want % 10 == 0 ? 1000 : 0); /* let the producer fill the others meanwhile */
        CHECK(c.slots[slot] == got);       /* not overwritten while held */
        CHECK(got == want);
        want++;
        if (want % 2) prefetch_release(p);
    }
    CHECK(rc == 0 && want == 100);
    CHECK(prefetch_next(p, &slot) == 0); /* the end stays the end */
    prefetch_free(p);

    struct prefetch_ctx bad = {.limit = 100, .fail_at = 5};
    p = prefetch_new(1, prefetch_produce, &bad);
    for (want = 0; (rc = prefetch_next(p, &slot)) == 1; want++) {
        CHECK(bad.slots[slot] == want);
        prefetch_release(p);
    }
    CHECK(rc == -1 && want == 5);
    CHECK(strstr(error_get(), "item 5 is bad") != NULL);
    prefetch_free(p);

    struct prefetch_ctx early = {.limit = 1000000, .fail_at = -1};
    p = prefetch_new(2, prefetch_produce, &early);
    CHECK(prefetch_next(p, &slot) == 1 && early.slots[slot] == 0);
    prefetch_free(p); /* stops the producer although items remain */
    CHECK(early.next < early.limit);
    prefetch_free(NULL);
}

/* watchdog: a call that returns in time is left alone (many armings, as per all-reduce); one
 * that does not ends the process with the armed status, well before the call would return. */
static void test_watchdog(void) {
    for (int i = 0; i < 1000; i++) {
        CHECK(watchdog_arm(5, 3, "call %d", i) == 0);
        watchdog_disarm();
    }
    CHECK(watchdog_arm(0, 3, "no deadline") == 0); /* 0: nothing armed */
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stderr);
        if (watchdog_arm(0.2, 3, "a stuck call")) _exit(1);
        sleep(10);
        _exit(0);
    }
    double t0 = time_now();
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3);
    CHECK(time_now() - t0 < 5);
}

int main(void) {
    TEST_RUN(test_error_wrap);
    TEST_RUN(test_parse_numbers);
    TEST_RUN(test_parse_float_list);
    TEST_RUN(test_rng_reproducible);
    TEST_RUN(test_rng_distributions);
    TEST_RUN(test_rng_shuffle_is_permutation);
    TEST_RUN(test_parallel_run);
    TEST_RUN(test_tempfile_registry);
    TEST_RUN(test_prefetch);
    TEST_RUN(test_watchdog);
    TEST_MAIN_END();
}
