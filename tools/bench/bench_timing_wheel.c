/* Micro-benchmark of common/timing_wheel.c: what the wheel stage pays per
 * task. 1M timers with random dues spread over one hour: ns per add, per
 * cancel, and per pop (draining in 1 ms ticks, as a poll loop would, and in
 * one jump); then the drain of 1M timers due in the same ms, in chunks of
 * 1000, with the worst single call (the "no stall" promise).
 *
 * Usage: bench_timing_wheel [N]   (default 1000000) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "timing_wheel.h"
#include "clock.h"

#define HOUR_MS ((int64_t)3600 * 1000)
#define CHUNK 1000

typedef struct task {
    mc_timer timer;
    uint32_t id;
} task;

static uint64_t rng = 0x9E3779B97F4A7C15u;
static uint64_t rnd(void) /* xorshift64*: fixed seed, comparable runs */
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * UINT64_C(2685821657736338717);
}

static void die(const char *what)
{
    fprintf(stderr, "bench_timing_wheel: %s\n", what);
    exit(1);
}

/* Advances in 1 ms ticks to end, draining each tick; returns timers popped
 * and the slowest single advance call in *worst_ns (when worst_ns != NULL). */
static size_t tick_through(mc_timing_wheel *w, int64_t from, int64_t end, double *worst_ns)
{
    mc_timer *out[CHUNK];
    size_t popped = 0, n;
    for (int64_t t = from; t <= end; t++) {
        do {
            double t0 = worst_ns ? (double)mc_mono_ns() : 0;
            n = mc_wheel_advance(w, t, out, CHUNK);
            if (worst_ns) {
                double dt = (double)mc_mono_ns() - t0;
                if (dt > *worst_ns)
                    *worst_ns = dt;
            }
            popped += n;
        } while (n == CHUNK);
    }
    return popped;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
    if (n == 0)
        die("N must be positive");
    const int64_t start = 1700000000000LL;
    task *tasks = calloc(n, sizeof *tasks);
    int64_t *due = calloc(n, sizeof *due);
    if (!tasks || !due)
        die("out of memory");
    for (size_t i = 0; i < n; i++) {
        tasks[i].id = (uint32_t)i;
        due[i] = start + 1 + (int64_t)(rnd() % (uint64_t)HOUR_MS);
    }
    printf("sizeof(mc_timer) = %zu bytes, %zu timers\n", sizeof(mc_timer), n);

    mc_timing_wheel *w = mc_wheel_new(start);
    if (!w)
        die("out of memory");
    double t0 = (double)mc_mono_ns();
    for (size_t i = 0; i < n; i++)
        mc_wheel_add(w, &tasks[i].timer, due[i]);
    double add_ns = ((double)mc_mono_ns() - t0) / (double)n;

    t0 = (double)mc_mono_ns();
    for (size_t i = 0; i < n; i++)
        mc_wheel_cancel(w, &tasks[i].timer);
    double cancel_ns = ((double)mc_mono_ns() - t0) / (double)n;
    if (mc_wheel_count(w) != 0)
        die("cancel left timers behind");

    /* Pop, as a poll loop does: 1 ms ticks over the hour (3.6M advance calls,
     * most of them finding nothing). */
    for (size_t i = 0; i < n; i++)
        mc_wheel_add(w, &tasks[i].timer, due[i]);
    t0 = (double)mc_mono_ns();
    size_t popped = tick_through(w, start + 1, start + HOUR_MS, NULL);
    double tick_total = (double)mc_mono_ns() - t0;
    if (popped != n)
        die("1 ms ticks did not pop everything");

    /* Same again, timing each call, for the worst single call: the cost of
     * cascading one coarse slot full of timers with different dues. */
    mc_wheel_free(w);
    w = mc_wheel_new(start);
    for (size_t i = 0; i < n; i++)
        mc_wheel_add(w, &tasks[i].timer, due[i]);
    double tick_worst = 0;
    tick_through(w, start + 1, start + HOUR_MS, &tick_worst);

    /* Pop after one jump over the whole hour, in chunks. */
    mc_wheel_free(w);
    w = mc_wheel_new(start);
    for (size_t i = 0; i < n; i++)
        mc_wheel_add(w, &tasks[i].timer, due[i]);
    mc_timer *out[CHUNK];
    size_t got;
    popped = 0;
    t0 = (double)mc_mono_ns();
    do {
        got = mc_wheel_advance(w, start + HOUR_MS, out, CHUNK);
        popped += got;
    } while (got == CHUNK);
    double jump_ns = ((double)mc_mono_ns() - t0) / (double)n;
    if (popped != n)
        die("the jump did not pop everything");

    printf("add:    %6.1f ns/timer (random dues over 1 h)\n", add_ns);
    printf("cancel: %6.1f ns/timer\n", cancel_ns);
    printf("pop:    %6.1f ns/timer in 1 ms ticks (%.1f ms for 3.6M advance calls, "
           "worst call %.2f ms)\n",
           tick_total / (double)n, tick_total / 1e6, tick_worst / 1e6);
    printf("pop:    %6.1f ns/timer after one 1 h jump, chunks of %d\n", jump_ns, CHUNK);

    /* A burst: every timer due in the same ms an hour ahead (filed at a
     * coarse level, so it also goes through the cascades). */
    mc_wheel_free(w);
    w = mc_wheel_new(start);
    for (size_t i = 0; i < n; i++)
        mc_wheel_add(w, &tasks[i].timer, start + HOUR_MS);
    double worst = 0, total = 0;
    size_t calls = 0;
    popped = 0;
    do {
        t0 = (double)mc_mono_ns();
        got = mc_wheel_advance(w, start + HOUR_MS, out, CHUNK);
        double dt = (double)mc_mono_ns() - t0;
        total += dt;
        worst = dt > worst ? dt : worst;
        popped += got;
        calls++;
    } while (got == CHUNK);
    if (popped != n)
        die("the burst did not drain");
    printf("burst:  %zu same-ms timers drained in %.2f ms (%zu calls of %d, %.1f ns/timer, "
           "worst call %.1f us)\n",
           n, total / 1e6, calls, CHUNK, total / (double)n, worst / 1e3);

    mc_wheel_free(w);
    free(tasks);
    free(due);
    return 0;
}
