/* Reading a topic's partitions once, from a start (the low watermark, a time,
 * or offsets the caller sets) to the high watermarks seen at the start, with
 * a consumer that is only ever assign()ed: what the operator CLI's readers,
 * requeue and the gateway's dead-letter routes read Kafka with. Nothing here
 * is shared between threads: one scan, one consumer, one thread. */
#ifndef MOONCAKE_TOPIC_SCAN_H
#define MOONCAKE_TOPIC_SCAN_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log.h"

/* Where reading one partition is. */
typedef struct mc_part_scan {
    int32_t partition;
    int64_t next; /* the next offset to read */
    int64_t end;  /* the high watermark at start: a one-shot read stops there */
    bool done;
} mc_part_scan;

/* Called for every record read; returns 0 to go on, anything else stops the
 * scan, which returns it. */
typedef int (*mc_record_fn)(void *arg, const rd_kafka_message_t *m);

/* What a scan asks its caller between polls. Either function may be NULL. */
typedef struct mc_scan_hooks {
    bool (*stop)(void *arg); /* true: stop between records (a signal, a shutdown) */
    void (*tick)(void *arg); /* after every poll, for progress */
    void *arg;
} mc_scan_hooks;

#define MC_SCAN_FAILED (-1)

/* Fills parts[0..n) for every partition of topic: from the low watermark (or
 * the first record at or after since_ms, when since_ms >= 0) to the high
 * watermark now, each call bounded by timeout_ms. Returns 0, or -1 with a
 * line in err. The caller's thread. */
int mc_scan_plan(rd_kafka_t *rk, const char *topic, int n, int64_t since_ms, int timeout_ms,
                 mc_part_scan *parts, char *err, size_t errlen);

/* Reads the partitions of topic in parts[0..n) from their next offsets with
 * rk (assigned, then unassigned), calling fn for each record, until each is
 * done - at the end seen at start, or at the last stable offset (a
 * transaction still open at the end is not waited for) - or forever when
 * follow. hooks (may be NULL) can stop it between records; consumer errors
 * that pass are logged on lg. Returns 0, fn's non-zero answer, or
 * MC_SCAN_FAILED with a line in err. The caller's thread. */
int mc_scan(rd_kafka_t *rk, const char *topic, mc_part_scan *parts, size_t n, bool follow,
            mc_record_fn fn, void *arg, const mc_scan_hooks *hooks, const mc_logger *lg, char *err,
            size_t errlen);

/* The partition count of topic (one metadata request on rk, within
 * timeout_ms): > 0; 0 when the topic does not exist; -1 with a line in err
 * when the broker did not answer. The caller's thread. */
int mc_scan_partitions(rd_kafka_t *rk, const char *topic, int timeout_ms, char *err, size_t errlen);

/* A read_committed consumer made from conf (taken over, also on failure)
 * that is only ever assign()ed: it joins no group and commits nothing by
 * itself. group is the group whose committed offsets it may read and a
 * transaction may commit to; a reader passes a group nothing commits to.
 * Caller destroys it; NULL with a line in err. */
rd_kafka_t *mc_scan_consumer_new(rd_kafka_conf_t *conf, const char *group, char *err,
                                 size_t errlen);

#endif
