/* Time-ordered UUIDs (RFC 9562 version 7): 48 bits of Unix milliseconds, then
 * a 12-bit counter that keeps ids from one generator strictly increasing
 * within a millisecond (RFC 9562 6.2 method 1), then 62 random bits. Sorted
 * as strings they sort by creation time, which is what the Java system's
 * clients relied on. */
#ifndef MOONCAKE_UUID7_H
#define MOONCAKE_UUID7_H

#include <pthread.h>
#include <stdint.h>

#define MC_UUID_STR_LEN 36 /* 8-4-4-4-12, without the NUL */

typedef struct mc_uuid7 {
    pthread_mutex_t lock;
    int64_t last_ms; /* the millisecond in the last id (may run ahead of the clock) */
    uint32_t counter;
} mc_uuid7;

/* Prepares a generator; destroy it with mc_uuid7_destroy(). 0, or -1. */
int mc_uuid7_init(mc_uuid7 *g);
void mc_uuid7_destroy(mc_uuid7 *g);
/* Writes the next id, lowercase and NUL-terminated, into out. now_ms is the
 * wall clock; an id is never smaller than the one before, even when the clock
 * steps back or 4096 ids are asked for in one millisecond (the embedded time
 * then runs ahead by a millisecond). Thread-safe. */
void mc_uuid7_next(mc_uuid7 *g, int64_t now_ms, char out[MC_UUID_STR_LEN + 1]);

#endif
