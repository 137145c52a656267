/* The exactly-once processor runtime. A processor is a small vtable in the
 * spirit of Kafka Streams' Processor API; the runner owns everything else:
 * one consumer (read_committed) and one transactional producer per instance,
 * the begin -> poll -> process -> commit loop, offsets committed inside the
 * transaction, rebalances, and the classification of every Kafka error into
 * retriable (retry), abortable (abort, rewind, rebuild state) and fatal
 * (clean non-zero exit, so the orchestrator restarts us). */
#ifndef MOONCAKE_RUNNER_H
#define MOONCAKE_RUNNER_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "http_server.h"
#include "log.h"
#include "metrics.h"

typedef struct mc_ctx mc_ctx;
typedef struct mc_output mc_output;

typedef struct mc_processor {
    const char *name;                /* role name; the consumer group is <prefix><name> */
    const char *const *input_topics; /* topic suffixes ("tasks"), NULL-terminated */
    /* Consumer properties this processor wants by default (key, value,
     * ..., NULL); -X still wins. Optional. */
    const char *const *consumer_defaults;
    /* Makes the processor's state; may register outputs and metrics through
     * ctx. Returns NULL with a reason in err to refuse to start. */
    void *(*create)(mc_ctx *ctx, char *err, size_t errlen);
    /* One input record, inside the open transaction. Returns 0, or -1 for a
     * fatal error (bad input is never fatal: it goes to the dead topic). */
    int (*process)(void *self, const rd_kafka_message_t *m, mc_ctx *ctx);
    /* Called when the wake-up set with mc_ctx_wakeup_at() is due. Optional. */
    int (*punctuate)(void *self, int64_t now_ms, mc_ctx *ctx);
    /* Partitions were assigned (also after an abort: state must be rebuilt
     * from Kafka). Each element carries the committed offset (or
     * RD_KAFKA_OFFSET_INVALID when none) and the committed metadata, which is
     * where consumption resumes. Optional. */
    int (*on_assign)(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx);
    /* Partitions are gone (revoked, lost, or rewound after an abort): drop
     * their in-memory state. Optional. */
    void (*on_revoke)(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx);
    /* The open transaction is about to commit: the last moment to set commit
     * offsets and metadata (mc_ctx_set_commit_offset) that describe exactly
     * what it contains. Optional. */
    int (*prepare_commit)(void *self, mc_ctx *ctx);
    /* Asked on every loop turn after a stop was requested, with input
     * paused: true once the processor has nothing in flight worth waiting
     * for (the executor: no call running), then the runner commits and
     * exits; it stops waiting after --drain-timeout-ms anyway. Optional:
     * without it the runner stops at once. */
    bool (*drained)(void *self, mc_ctx *ctx);
    void (*destroy)(void *self);
} mc_processor;

typedef struct mc_runner mc_runner;

/* Builds a runner: Kafka handles, metrics, readiness check on http (may be
 * NULL). cfg, metrics and http must outlive the runner. NULL with a reason in
 * err when the configuration is unusable (a bad -X property, say). */
mc_runner *mc_runner_new(const mc_processor *p, const mc_config *cfg, mc_metrics *metrics,
                         mc_http_server *http, char *err, size_t errlen);
/* Runs the loop until mc_runner_stop() or a fatal error. Returns 0 after a
 * clean stop (the open transaction committed, the group left), 1 after a
 * fatal error. */
int mc_runner_run(mc_runner *r);
/* Asks the loop to finish; safe from any thread. */
void mc_runner_stop(mc_runner *r);
void mc_runner_free(mc_runner *r);

/* ---- what a processor may do, through its ctx --------------------------- */

/* Declares an output topic (by suffix, "wheel"). The runner owns the handle. */
mc_output *mc_ctx_output(mc_ctx *ctx, const char *topic_suffix);
/* Produces one record inside the open transaction (payload and key are
 * copied). value == NULL writes a tombstone. partition is the partition
 * number; mooncake keeps a task in the same partition number on every topic.
 * Returns 0, or -1 when the producer refused it (the transaction will abort). */
int mc_ctx_forward(mc_ctx *ctx, mc_output *out, int32_t partition, const void *key, size_t keylen,
                   const void *value, size_t valuelen);
/* The same with one Kafka record header (name, and value of hlen bytes; both
 * copied). */
int mc_ctx_forward_header(mc_ctx *ctx, mc_output *out, int32_t partition, const void *key,
                          size_t keylen, const void *value, size_t valuelen, const char *hname,
                          const void *hvalue, size_t hlen);
/* Sends input record m to the dead topic (same key and partition) as a
 * DeadLetter with the reason, its source topic/partition/offset, the raw value
 * (when under 512 KiB) and, when given, the decoded task. Inside the open
 * transaction, like any output. Returns 0, or -1 if it could not be written. */
struct mc_task;
int mc_ctx_dead_letter(mc_ctx *ctx, const rd_kafka_message_t *m, const char *reason,
                       const struct mc_task *task);
/* Asks for punctuate() at (or soon after) at_ms; the earliest request wins. */
void mc_ctx_wakeup_at(mc_ctx *ctx, int64_t at_ms);
/* Sets the offset-commit metadata (<= 4096 bytes of UTF-8) committed with this
 * partition's offset in the next transaction. */
int mc_ctx_set_commit_metadata(mc_ctx *ctx, const char *topic, int32_t partition,
                               const char *metadata);
/* Commits `offset` for this input partition, with the metadata, instead of
 * the position processed so far: for a processor whose state after a restart
 * must be rebuilt from records it has already processed (the wheel replays
 * from its lowest unfired offset). offset must not exceed the processed
 * position. Until partitions are revoked it holds for every later commit;
 * call it again (prepare_commit) as the state moves on. */
int mc_ctx_set_commit_offset(mc_ctx *ctx, const char *topic, int32_t partition, int64_t offset,
                             const char *metadata);
/* Marks the processor (not) ready for /readyz, e.g. while restoring state. */
void mc_ctx_set_ready(mc_ctx *ctx, bool ready);
/* Tells /healthz the processor is making progress inside a long call (the
 * store's restore runs in on_assign, for minutes on a big changelog): without
 * it the loop would look stuck after 60 s and liveness would restart a pod
 * that is only restoring. */
void mc_ctx_alive(mc_ctx *ctx);
/* Asks the runner to commit the open transaction soon (before the interval). */
void mc_ctx_request_commit(mc_ctx *ctx);

/* ---- the processor's own file descriptors (libcurl's sockets) ------------
 * The runner's loop waits in poll(2) on the consumer's queue and on these, so
 * a processor that talks to the network (the executor) is driven by the same
 * loop as its Kafka input, in the manner of curl's multi-event.c. The
 * callback runs on the runner's thread inside the open transaction, so it
 * may forward records; revents holds POLLIN/POLLOUT/POLLERR/POLLHUP. */
typedef int (*mc_fd_callback)(void *arg, int fd, int revents, mc_ctx *ctx);
/* Watches fd for events (POLLIN and/or POLLOUT), replacing an earlier watch
 * of the same fd; events == 0 stops watching it. The callback returns 0, or
 * -1 for a fatal error. Returns 0, or -1 on ENOMEM or when the consumer's
 * queue cannot be watched. */
int mc_ctx_watch_fd(mc_ctx *ctx, int fd, short events, mc_fd_callback cb, void *arg);
/* Stops or resumes consuming these input partitions (e.g. while too much
 * is unfinished), without losing the position. Returns 0 or -1. */
int mc_ctx_pause(mc_ctx *ctx, const char *topic, int32_t partition, bool pause);

/* Wall-clock epoch ms read when the current record was polled (or when
 * punctuate was called): one "now" per record. */
int64_t mc_ctx_now_ms(const mc_ctx *ctx);
const mc_config *mc_ctx_config(const mc_ctx *ctx);
const mc_logger *mc_ctx_logger(const mc_ctx *ctx);
mc_metrics *mc_ctx_metrics(const mc_ctx *ctx);
const char *mc_ctx_processor_name(const mc_ctx *ctx);
/* The consumer, for processors that must read committed offsets or
 * watermarks (the store's restore). */
rd_kafka_t *mc_ctx_consumer(const mc_ctx *ctx);

/* Wall-clock epoch milliseconds. */
int64_t mc_now_ms(void);

#endif
