/* What an executor remembers of the recalls it read from `ready`, per
 * partition: each key's newest recall version, for a while. A task of the
 * key fired below that version and read after the recall is voided at once
 * instead of being called. The router writes a cancel's recall in the
 * transaction that routes the cancel, and the wheel may fire an older
 * version of the key while that transaction is open: the fire then lands
 * after the recall, and only the wheel's own recall (a hop later) would
 * otherwise stop it. Voiding any version below a recall's is always what the
 * newer command says, so the memory only bounds its size by forgetting. Not
 * thread-safe: the runner's thread. */
#ifndef MOONCAKE_EXECUTOR_RECALLS_H
#define MOONCAKE_EXECUTOR_RECALLS_H

#include <stdbool.h>
#include <stdint.h>

#include "wheel_topic.h"

typedef struct mc_recall_memory mc_recall_memory;

/* An empty memory that keeps a recall for keep_ms after it was noted.
 * Caller owns it (mc_recall_memory_free). NULL on ENOMEM. */
mc_recall_memory *mc_recall_memory_new(int64_t keep_ms);
void mc_recall_memory_free(mc_recall_memory *m);
/* Notes a recall of key (len bytes) below version, read at now (ms). 0, or
 * -1 on ENOMEM (nothing noted). */
int mc_recall_memory_note(mc_recall_memory *m, const char *key, size_t len, mc_version version,
                          int64_t now);
/* Whether a recall noted within keep_ms before now voids this version of key. */
bool mc_recall_memory_voids(mc_recall_memory *m, const char *key, size_t len, mc_version version,
                            int64_t now);
/* How many recalls it keeps now. */
size_t mc_recall_memory_count(const mc_recall_memory *m);

#endif
