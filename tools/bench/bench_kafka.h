/* What the librdkafka benchmark tools (bench_raw_copy, bench_raw_read,
 * bench_jobs_produce, bench_jobs_read) share: a benchmark has no one to
 * report an error to or retry for, so any failure ends it with one line
 * naming the program. Header-only (static inline, so a tool takes what it
 * uses); called from the tool's one thread. */
#ifndef MOONCAKE_BENCH_KAFKA_H
#define MOONCAKE_BENCH_KAFKA_H

#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>

/* Prints "<program>: what: why" and exits 1. */
static inline void die(const char *what, const char *why)
{
    fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, why);
    exit(1);
}

/* Sets a librdkafka property, or dies naming it. */
static inline void set(rd_kafka_conf_t *c, const char *k, const char *v)
{
    char err[512];
    if (rd_kafka_conf_set(c, k, v, err, sizeof err) != RD_KAFKA_CONF_OK)
        die(k, err);
}

#endif
