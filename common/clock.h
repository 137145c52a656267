/* The two clocks every part of mooncake reads. Due times are wall-clock
 * instants (epoch milliseconds, what clients write), so deciding whether
 * something is due compares with the wall clock; measuring how long
 * something took, or how long to wait, uses the monotonic clock, which no
 * clock step moves. */
#ifndef MOONCAKE_CLOCK_H
#define MOONCAKE_CLOCK_H

#include <stdint.h>

/* Wall-clock epoch milliseconds (CLOCK_REALTIME). Any thread. */
int64_t mc_now_ms(void);
/* Milliseconds on the monotonic clock (CLOCK_MONOTONIC): for durations and
 * timeouts only; its zero is arbitrary. Any thread. */
int64_t mc_mono_ms(void);
/* The same clocks finer, for measuring (benchmarks, lateness below a
 * millisecond, timings): wall-clock epoch microseconds, monotonic
 * nanoseconds, and monotonic seconds as a double. Any thread. */
int64_t mc_now_us(void);
int64_t mc_mono_ns(void);
double mc_mono_s(void);

#endif
