/* The Kafka client the runner sees: one consumer and N transactional
 * producers behind a narrow table of operations, plus the clock they run on.
 * Production uses librdkafka (kclient_rdkafka.c); the tests use an in-memory
 * cluster (tests/sim/sim_kclient.c) that injects faults on cue - a slow
 * abort, a commit failing in each error class, fencing, an assignment lost
 * during a commit, a broker gone for a while - so the runner's orderings are
 * tested deterministically, the way librdkafka tests its transaction manager
 * against a mock cluster and Kafka Streams its tasks over mock clients.
 *
 * Partition lists are librdkafka's rd_kafka_topic_partition_list_t: a plain
 * data structure that needs no client, and what the Processor API hands to
 * on_assign and on_revoke already. Every operation is called on the runner's
 * thread, except those marked otherwise. */
#ifndef MOONCAKE_KCLIENT_H
#define MOONCAKE_KCLIENT_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "log.h"
#include "processor.h"
#include "record.h"

/* How a failed transactional operation may go on (librdkafka's error
 * classes, KIP-98/KIP-360): retry the same call, abort the transaction and
 * rewind, or give up (fenced by a successor, or an unexpected state). */
typedef enum mc_kerr_class {
    MC_KERR_RETRIABLE = 1,
    MC_KERR_ABORTABLE,
    MC_KERR_FATAL,
    MC_KERR_UNEXPECTED /* neither retriable nor abortable: treated as fatal */
} mc_kerr_class;

typedef struct mc_kerror {
    mc_kerr_class cls;
    rd_kafka_resp_err_t code;
    char text[256];
} mc_kerror;

/* One consumed record, or a consumer error (err != 0, rec unset). */
typedef struct mc_kmsg {
    rd_kafka_resp_err_t err;
    char errstr[256];
    mc_record rec; /* valid until kmsg_done */
    void *handle;  /* the implementation's */
} mc_kmsg;

typedef enum mc_rebalance {
    MC_REBALANCE_ASSIGN,
    MC_REBALANCE_REVOKE,
    MC_REBALANCE_ERROR
} mc_rebalance;

/* What the client calls back into the runner, on the runner's thread, from
 * inside consumer_poll (rebalances) and producer flush/poll (delivery). */
typedef struct mc_kclient_events {
    void *arg;
    /* An assignment or revoke, as librdkafka's rebalance callback: the
     * handler must call assign (parts) or unassign before
     * it returns. Rebalances are eager: an assignment is the whole new one,
     * and a revoke takes everything. */
    void (*rebalance)(void *arg, mc_rebalance what, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *parts);
    /* An output that was not delivered (only failures are reported): ref is
     * what produce was given. */
    void (*delivery_failed)(void *arg, int producer, size_t ref, const char *topic,
                            rd_kafka_resp_err_t err);
} mc_kclient_events;

typedef struct mc_kclient mc_kclient;

/* max.poll.interval.ms: the runner lets go of its partitions a little before
 * a loop stuck this long would be evicted. */
#define MC_KCLIENT_MAX_POLL_INTERVAL_MS 300000
#define MC_KCLIENT_MAX_POLL_INTERVAL_TEXT "300000"

typedef struct mc_kclient_ops {
    /* ---- the clock (any thread) ---- */
    int64_t (*mono_ms)(mc_kclient *kc);
    int64_t (*wall_ms)(mc_kclient *kc);
    void (*sleep_ms)(mc_kclient *kc, int ms);

    /* ---- the consumer ---- */
    rd_kafka_resp_err_t (*subscribe)(mc_kclient *kc, const rd_kafka_topic_partition_list_t *topics);
    /* 1 with a record or an error in *m, 0 when nothing came within timeout. */
    int (*poll)(mc_kclient *kc, int timeout_ms, mc_kmsg *m);
    void (*kmsg_done)(mc_kclient *kc, mc_kmsg *m);
    /* A non-blocking descriptor that becomes readable when input is queued
     * (drain it by reading); -1 when the client has none (the runner then
     * never blocks outside poll); -2 when it could not be made. */
    int (*input_fd)(mc_kclient *kc);
    /* Takes parts as the assignment (the whole of a generation's). */
    rd_kafka_resp_err_t (*assign)(mc_kclient *kc, const rd_kafka_topic_partition_list_t *parts);
    /* Gives up the whole assignment (rebalances are eager). */
    rd_kafka_resp_err_t (*unassign)(mc_kclient *kc);
    /* The current assignment; caller destroys *parts. */
    rd_kafka_resp_err_t (*assignment)(mc_kclient *kc, rd_kafka_topic_partition_list_t **parts);
    /* Whether the group took the assignment away (session lost). Any thread. */
    bool (*assignment_lost)(mc_kclient *kc);
    /* Fills each element's offset (-1001 when none) and metadata. */
    rd_kafka_resp_err_t (*committed)(mc_kclient *kc, rd_kafka_topic_partition_list_t *parts,
                                     int timeout_ms);
    int (*seek)(mc_kclient *kc, rd_kafka_topic_partition_list_t *parts, int timeout_ms,
                mc_kerror *e);
    rd_kafka_resp_err_t (*pause)(mc_kclient *kc, rd_kafka_topic_partition_list_t *parts,
                                 bool pause);
    rd_kafka_resp_err_t (*position)(mc_kclient *kc, rd_kafka_topic_partition_list_t *parts);
    /* The cached low and high watermarks (no round trip); 0 when known. */
    int (*watermarks)(mc_kclient *kc, const char *topic, int32_t partition, int64_t *lo,
                      int64_t *hi);
    /* Whether the consumer failed for good (fenced as a static member), with
     * why. Any thread. */
    bool (*consumer_fatal)(mc_kclient *kc, char *why, size_t whylen);
    bool (*is_member)(mc_kclient *kc);
    int (*session_timeout_ms)(mc_kclient *kc);
    rd_kafka_resp_err_t (*unsubscribe)(mc_kclient *kc);
    void (*close)(mc_kclient *kc);

    /* ---- the producers (index 0 .. n_producers-1) ---- */
    int (*init_transactions)(mc_kclient *kc, int producer, int timeout_ms, mc_kerror *e);
    int (*begin)(mc_kclient *kc, int producer, mc_kerror *e);
    /* A topic the producers write; its handle is valid until the client is
     * freed. NULL on failure. */
    void *(*output)(mc_kclient *kc, const char *topic);
    /* Queues one record (copied) for the open transaction; ref comes back
     * in delivery_failed. RD_KAFKA_RESP_ERR_NO_ERROR, or why not. */
    rd_kafka_resp_err_t (*produce)(mc_kclient *kc, int producer, void *output, int32_t partition,
                                   const mc_produce *p, size_t ref);
    rd_kafka_resp_err_t (*flush)(mc_kclient *kc, int producer, int timeout_ms);
    int (*outq_len)(mc_kclient *kc, int producer);
    /* Serves the producer's events (delivery reports, errors, logs). */
    void (*serve)(mc_kclient *kc, int producer, int timeout_ms);
    int (*send_offsets)(mc_kclient *kc, int producer,
                        const rd_kafka_topic_partition_list_t *offsets, int timeout_ms,
                        mc_kerror *e);
    int (*commit)(mc_kclient *kc, int producer, int timeout_ms, mc_kerror *e);
    int (*abort)(mc_kclient *kc, int producer, int timeout_ms, mc_kerror *e);
    bool (*producer_fatal)(mc_kclient *kc, int producer);

    /* ---- questions about topics ---- */
    /* Partition count from a metadata request through a producer (which
     * also teaches it new partitions), or the consumer when producer is -1;
     * -1 with err. */
    int (*partition_count)(mc_kclient *kc, const char *topic, int producer, int timeout_ms,
                           char *err, size_t errlen);
    /* The high watermark of one partition, asked of the broker; -1 with err. */
    int64_t (*end_offset)(mc_kclient *kc, const char *topic, int32_t partition, int timeout_ms,
                          char *err, size_t errlen);
    /* Ends of partitions of topics in one request: last stable offsets
     * through the consumer (producer -1: read_committed), high watermarks
     * through a producer. ends[p * n_topics + t]. 0, or -1 with err. */
    int (*list_ends)(mc_kclient *kc, int producer, const char *const *topics, size_t n_topics,
                     const int32_t *partitions, size_t n_partitions, int64_t *ends, int timeout_ms,
                     char *err, size_t errlen);
    /* High watermarks read_uncommitted (the restorer's view). */
    int (*high_watermarks)(mc_kclient *kc, const char *topic, const int32_t *partitions, size_t n,
                           int64_t *ends, int timeout_ms, char *err, size_t errlen);
    /* Reads partitions of a changelog to their ends into fn (restore.h). */
    int (*restore)(mc_kclient *kc, const char *topic, const int32_t *partitions, size_t n,
                   mc_restore_fn fn, void *arg, void (*tick)(void *), void *tick_arg,
                   mc_restore_stats *stats);

    void (*free)(mc_kclient *kc);
} mc_kclient_ops;

struct mc_kclient {
    const mc_kclient_ops *ops;
    int n_producers;
    mc_kclient_events events; /* set by the runner before the first poll */
};

/* What a client for one runner needs to know. */
typedef struct mc_kclient_spec {
    const mc_config *cfg;
    mc_logger *logger; /* librdkafka's log lines go here; outlives the client */
    const char *group_id;
    const char *transactional_id; /* producer i > 0 adds "~i" */
    int n_producers;
    const char *const *consumer_defaults; /* the processor's, overridable by -X */
    bool advertise;                       /* client.id carries the advertised URL */
} mc_kclient_spec;

/* The librdkafka client. NULL with a reason in err when the configuration
 * is unusable. Owned by the caller (ops->free). */
mc_kclient *mc_kclient_rdkafka_new(const mc_kclient_spec *spec, char *err, size_t errlen);

#endif
