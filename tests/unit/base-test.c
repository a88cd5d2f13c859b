/* Unit tests for base: errors, option parsing helpers, rng. */
#include "base/base.h"
#include "test.h"

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

int main(void) {
    TEST_RUN(test_error_wrap);
    TEST_RUN(test_parse_numbers);
    TEST_RUN(test_rng_reproducible);
    TEST_RUN(test_rng_distributions);
    TEST_RUN(test_rng_shuffle_is_permutation);
    TEST_MAIN_END();
}
