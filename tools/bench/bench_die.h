/* How the benchmark tools built on the shared headers (bench_kafka.h,
 * bench_txn.h, bench_curl.h) end on an error: a benchmark has no one to
 * report an error to or retry for, so any failure ends it with one line
 * naming the program. Header-only; needs no library, so the standalone
 * tools (bench_raw_calls) take it too. */
#ifndef MOONCAKE_BENCH_DIE_H
#define MOONCAKE_BENCH_DIE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* Prints "<program>: what: why" and exits 1. */
static inline void die(const char *what, const char *why)
{
    fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, why);
    exit(1);
}

#endif
