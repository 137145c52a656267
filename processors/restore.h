/* Replaying changelog partitions from the beginning to their end with a
 * read_committed consumer outside any group: how the runner restores a
 * processor's state store (mc_ctx_restore, processor.h). */
#ifndef MOONCAKE_RESTORE_H
#define MOONCAKE_RESTORE_H

#include <librdkafka/rdkafka.h>

#include "config.h"
#include "log.h"
#include "processor.h"

typedef struct mc_restorer mc_restorer;

/* A restorer with its own consumer (made from cfg; librdkafka's log goes to
 * lg, which must outlive it). Caller owns it. NULL with a reason in err. */
mc_restorer *mc_restorer_new(const mc_config *cfg, const mc_logger *lg, char *err, size_t errlen);
void mc_restorer_free(mc_restorer *rs);

/* Called between batches so a long restore keeps the caller's liveness up. */
typedef void (*mc_restore_tick)(void *arg);

/* Replays each partition of topic (full name) from its first record to the
 * high watermark read when the restore began, calling fn for each record.
 * Returns 0 with stats filled, or -1 when a partition's end could not be
 * read (the topic's leader missing for a minute). Runs on the caller's
 * thread. */
int mc_restorer_run(mc_restorer *rs, const char *topic, const int32_t *partitions, size_t n,
                    mc_restore_fn fn, void *arg, mc_restore_tick tick, void *tick_arg,
                    mc_restore_stats *stats);

/* The high watermarks of n partitions of topic (full name) into ends,
 * asked through the read_uncommitted handle: past records of transactions
 * still open too. One ListOffsets per broker of at most timeout_ms; 0, or
 * -1 with a reason in err. The processor's thread. */
int mc_restorer_high_watermarks(mc_restorer *rs, const char *topic, const int32_t *partitions,
                                size_t n, int64_t *ends, int timeout_ms, char *err, size_t errlen);

#endif
