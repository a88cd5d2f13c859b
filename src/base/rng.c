/* xoshiro128** (Blackman & Vigna), seeded through splitmix64: small, fast, explicit state. */
#include "base/base.h"

#include <math.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void rng_seed(struct rng *r, uint64_t seed) {
    uint64_t a = splitmix64(&seed), b = splitmix64(&seed);
    r->s[0] = (uint32_t)a;
    r->s[1] = (uint32_t)(a >> 32);
    r->s[2] = (uint32_t)b;
    r->s[3] = (uint32_t)(b >> 32);
    r->have_gauss = 0;
}

static uint32_t rotl(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }

uint32_t rng_u32(struct rng *r) {
    uint32_t *s = r->s;
    uint32_t result = rotl(s[1] * 5, 7) * 9;
    uint32_t t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return result;
}

uint32_t rng_below(struct rng *r, uint32_t n) {
    ASSERT(n > 0);
    /* Lemire's rejection: reject the low range that would bias the product. */
    uint64_t m = (uint64_t)rng_u32(r) * n;
    uint32_t low = (uint32_t)m;
    if (low < n) {
        uint32_t threshold = -n % n;
        while (low < threshold) {
            m = (uint64_t)rng_u32(r) * n;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

double rng_uniform(struct rng *r) {
    uint64_t hi = rng_u32(r) >> 5, lo = rng_u32(r) >> 6; /* 53 bits */
    return (double)(hi * 67108864.0 + lo) / 9007199254740992.0;
}

float rng_gauss(struct rng *r) {
    if (r->have_gauss) {
        r->have_gauss = 0;
        return r->gauss;
    }
    double u1, u2;
    do u1 = rng_uniform(r); while (u1 <= 0.0);
    u2 = rng_uniform(r);
    double radius = sqrt(-2.0 * log(u1)), angle = 2.0 * M_PI * u2;
    r->gauss = (float)(radius * sin(angle));
    r->have_gauss = 1;
    return (float)(radius * cos(angle));
}

void rng_shuffle(struct rng *r, void *base, size_t n, size_t size) {
    unsigned char *b = base, tmp[256];
    ASSERT(size <= sizeof tmp);
    ASSERT(n <= UINT32_MAX);
    for (size_t i = n; i > 1; i--) {
        size_t j = rng_below(r, (uint32_t)i);
        if (j == i - 1) continue;
        memcpy(tmp, b + (i - 1) * size, size);
        memcpy(b + (i - 1) * size, b + j * size, size);
        memcpy(b + j * size, tmp, size);
    }
}
