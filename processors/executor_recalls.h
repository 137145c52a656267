/* What an executor remembers of the recalls it read from a partition of
 * `ready`: each key's newest recall (its version, offset and timestamp). A
 * task of the key fired below that version, found after the recall in the
 * partition, is voided at once instead of being called. The router writes a
 * cancel's recall in the transaction that routes the cancel, and the wheel
 * may fire an older version of the key while that transaction is open: the
 * fire then lands after the recall, and only the wheel's own recall (a hop
 * later) would otherwise stop it. Time here is the records' own timestamps
 * (when they were produced), not the reader's clock, so a partition paused
 * for a while still pairs a fire with the recall produced just before it.
 * Not thread-safe: the runner's thread. */
#ifndef MOONCAKE_EXECUTOR_RECALLS_H
#define MOONCAKE_EXECUTOR_RECALLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wheel_topic.h"

typedef struct mc_recall_memory mc_recall_memory;

/* An empty memory that pairs a fire with a recall produced at most keep_ms
 * before it. Caller owns it (mc_recall_memory_free). NULL on ENOMEM. */
mc_recall_memory *mc_recall_memory_new(int64_t keep_ms);
void mc_recall_memory_free(mc_recall_memory *m);
/* Notes a recall of key (len bytes) below version, at offset, produced at ts
 * (ms). 0, or -1 on ENOMEM (nothing noted). */
int mc_recall_memory_note(mc_recall_memory *m, const char *key, size_t len, mc_version version,
                          int64_t offset, int64_t ts);
/* Whether a recall noted before voids this version of key, read at offset
 * (after the recall's) and produced at ts (at most keep_ms after it). */
bool mc_recall_memory_voids(mc_recall_memory *m, const char *key, size_t len, mc_version version,
                            int64_t offset, int64_t ts);
/* How many keys it remembers now. */
size_t mc_recall_memory_count(const mc_recall_memory *m);

#endif
