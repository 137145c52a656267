/* What the gateway benchmark's tools (bench_http_load, bench_raw_produce)
 * share: the clocks they measure with and the latency histogram, log-linear
 * buckets in microseconds, exact below 128 µs and within 1% above, up to
 * 2^41 µs. Header-only, static functions, so the standalone load generator
 * needs no library. */
#ifndef MOONCAKE_BENCH_COMMON_H
#define MOONCAKE_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* CPU time (user + system) this process has used, in seconds. */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

#define SUB_BITS 6
#define SUB (1 << SUB_BITS)
#define MAX_EXP 40 /* values >= 2^41 µs are clamped */
#define N_BUCKETS (2 * SUB + (MAX_EXP - SUB_BITS) * SUB)

typedef struct histogram {
    uint64_t counts[N_BUCKETS];
    uint64_t n, max_us;
    double sum_us;
} histogram;

static size_t bucket_of(uint64_t us)
{
    if (us < 2 * SUB)
        return (size_t)us;
    int e = 63 - __builtin_clzll(us);
    if (e > MAX_EXP)
        return N_BUCKETS - 1;
    return 2 * SUB + (size_t)(e - SUB_BITS - 1) * SUB + (size_t)((us >> (e - SUB_BITS)) - SUB);
}

/* The middle of bucket i, in µs. */
static double bucket_mid(size_t i)
{
    if (i < 2 * SUB)
        return (double)i;
    size_t k = i - 2 * SUB;
    int shift = (int)(k / SUB) + 1;
    uint64_t low = (uint64_t)(k % SUB + SUB) << shift;
    return (double)low + ((double)(1ULL << shift) - 1) / 2;
}

static void hist_add(histogram *h, uint64_t us)
{
    h->counts[bucket_of(us)]++;
    h->n++;
    h->sum_us += (double)us;
    if (us > h->max_us)
        h->max_us = us;
}

/* The value (ms) at quantile q: the bucket holding the ceil(q * n)-th value. */
static double hist_quantile_ms(const histogram *h, double q)
{
    if (h->n == 0)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)h->n + 0.999999);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < N_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= rank) {
            double v = bucket_mid(i);
            return (v > (double)h->max_us ? (double)h->max_us : v) / 1000.0;
        }
    }
    return (double)h->max_us / 1000.0;
}

#endif
