/* The wall and monotonic clocks (see clock.h): the one place that reads them. */
#include "clock.h"

#include <time.h>

static int64_t read_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t mc_now_ms(void)
{
    return read_ns(CLOCK_REALTIME) / 1000000;
}

int64_t mc_mono_ms(void)
{
    return read_ns(CLOCK_MONOTONIC) / 1000000;
}

int64_t mc_now_us(void)
{
    return read_ns(CLOCK_REALTIME) / 1000;
}

int64_t mc_mono_ns(void)
{
    return read_ns(CLOCK_MONOTONIC);
}

double mc_mono_s(void)
{
    return (double)read_ns(CLOCK_MONOTONIC) / 1e9;
}
