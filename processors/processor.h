/* The Processor API: what a role (router, store, wheel, executor, retry)
 * is, and everything it may do, through its ctx. In the spirit of Kafka
 * Streams' Processor API: a processor is a small vtable that sees one input
 * record at a time and acts only through its context (forward records,
 * schedule a wake-up, describe what the next commit carries), so the same
 * processor runs in the exactly-once Kafka runtime (runner.c) and, record
 * by record, in the broker-free test driver (tests/sim), as Streams'
 * processors run under MockProcessorContext and TopologyTestDriver.
 *
 * Every call on a ctx happens on the thread that runs the processor. */
#ifndef MOONCAKE_PROCESSOR_H
#define MOONCAKE_PROCESSOR_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "log.h"
#include "metrics.h"
#include "record.h"

typedef struct mc_ctx mc_ctx;
typedef struct mc_output mc_output;
struct mc_task;

/* process() may return this instead of 0 after pausing the record's
 * partition (mc_ctx_pause): the record is not taken, and it is delivered
 * again, first, once the processor resumes the partition. For a processor
 * that cannot hold one more record (the executor, whose checkpoint would
 * not fit); nothing of the record may have been forwarded. */
#define MC_PROCESS_LATER 1

/* mc_ctx_produce()'s answer when Kafka refused this one record for good
 * (too large, invalid): nothing was written and the transaction is intact. */
#define MC_FORWARD_REFUSED (-2)
/* Its answer for a record to a topic outside mooncake's (a Kafka target)
 * that the producer still does not know after asking once: nothing was
 * written, the transaction is intact, and trying later may succeed. */
#define MC_FORWARD_UNKNOWN_TOPIC (-3)

typedef struct mc_processor {
    const char *name;                /* role name; the consumer group is <prefix><name> */
    const char *const *input_topics; /* topic suffixes ("tasks"), NULL-terminated */
    /* The consumer's client.id carries this process's advertised URL
     * (mc_advertised_client_id), so other instances find who holds a
     * partition from the group's description and forward questions there. */
    bool advertises;
    /* Commit at most this often (ms) even when --commit-interval-ms is
     * shorter: for a processor nobody downstream waits on (the view), whose
     * changelog then carries one record per key per interval instead of
     * one per change. 0: --commit-interval-ms. */
    int min_commit_interval_ms;
    /* Consumer properties this processor wants by default (key, value,
     * ..., NULL); -X still wins. Optional; mc_unhurried_consumer is one. */
    const char *const *consumer_defaults;
    /* The settings create() would refuse, checked without a broker: the
     * program calls it before anything starts, so a bad flag exits 2 at once
     * and --check-config finds it. 0, or -1 with one line in err. Optional. */
    int (*check_config)(const mc_config *cfg, char *err, size_t errlen);
    /* Makes the processor's state; may register outputs and metrics through
     * ctx. arg is create_arg below. Returns NULL with a reason in err to
     * refuse to start. */
    void *(*create)(mc_ctx *ctx, const void *arg, char *err, size_t errlen);
    /* What create gets as arg: how a test gives a processor another part
     * (the executor a fake HTTP caller), as a supplier would. Optional. */
    const void *create_arg;
    /* One input record, inside the open transaction. Returns 0, -1 for a
     * fatal error (bad input is never fatal: it goes to the dead topic), or
     * MC_PROCESS_LATER (see above). */
    int (*process)(void *self, const mc_record *r, mc_ctx *ctx);
    /* An input whose output Kafka refused for good (in an earlier
     * transaction, which was aborted) is delivered here instead of to
     * process(): the processor writes what stands in for the refused
     * output. Optional: without it the record goes to the dead topic with
     * the reason. Returns 0 or -1 (fatal). */
    int (*refused)(void *self, const mc_record *r, const char *reason, mc_ctx *ctx);
    /* Called when the wake-up set with mc_ctx_wakeup_at() is due. Optional. */
    int (*punctuate)(void *self, int64_t now_ms, mc_ctx *ctx);
    /* Partitions were assigned (also after an abort: state must be rebuilt
     * from Kafka). Each element carries the committed offset (or
     * RD_KAFKA_OFFSET_INVALID when none) and the committed metadata, which is
     * where consumption resumes; every partition starts unpaused. Optional. */
    int (*on_assign)(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx);
    /* An orderly revoke of these partitions has begun (not a lost
     * assignment): start no new work of theirs, and say whether the work
     * they have in flight has ended and been written into the open
     * transaction - 1 yes, 0 not yet, -1 fatal. Asked again every few ms,
     * with the processor's descriptors served in between, until 1 or
     * --drain-timeout-ms; the runner then commits and calls on_revoke, so
     * the next owner starts after what ended. Optional: without it the
     * revoke commits at once. */
    int (*revoke_drained)(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx);
    /* Partitions are gone (revoked, lost, or rewound after an abort): drop
     * their in-memory state. Optional. */
    void (*on_revoke)(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx);
    /* The open transaction is about to commit: the last moment to set commit
     * offsets and metadata (mc_ctx_set_commit_offset) that describe exactly
     * what it contains. It may still forward records. Optional. */
    int (*prepare_commit)(void *self, mc_ctx *ctx);
    /* Asked on every loop turn after a stop was requested, with input
     * paused: true once the processor has nothing in flight worth waiting
     * for (the executor: no call running), then the runner commits and
     * exits; it stops waiting after --drain-timeout-ms anyway. Optional:
     * without it the runner stops at once. */
    bool (*drained)(void *self, mc_ctx *ctx);
    void (*destroy)(void *self);
} mc_processor;

/* consumer_defaults for a processor whose input no caller waits on (the
 * store, retry, alarms): the broker may hold its fetch 250 ms instead of
 * the 20 ms the others need, since an empty fetch answered every 20 ms by
 * each consumer was most of what an idle broker did. */
extern const char *const mc_unhurried_consumer[];

/* ---- outputs --------------------------------------------------------------- */

/* Declares an output topic (by suffix, "wheel"). The ctx owns the handle. */
mc_output *mc_ctx_output(mc_ctx *ctx, const char *topic_suffix);
/* Declares an output topic by its full name (a Kafka target, not one of
 * mooncake's). The ctx owns the handle; NULL on ENOMEM. */
mc_output *mc_ctx_output_topic(mc_ctx *ctx, const char *topic);

/* One record to produce inside the open transaction. */
typedef struct mc_produce {
    mc_output *out;
    int32_t partition; /* mooncake keeps a task in one partition number everywhere */
    const void *key;
    size_t key_len;
    const void *value; /* NULL: a tombstone / null value */
    size_t value_len;
    const mc_header *headers;
    size_t n_headers;
    /* The input record this output answers, for an output made outside
     * process() (NULL inside process(): the record being processed). If
     * Kafka refuses the output for good, that input is what the processor's
     * refused() hook (or the dead topic) receives after the rewind. */
    const mc_source *cause;
} mc_produce;

/* Produces p (key, value and headers are copied). Returns 0;
 * MC_FORWARD_REFUSED when Kafka refused this record for good (see above);
 * -1 on any other failure (the transaction will abort). */
int mc_ctx_produce(mc_ctx *ctx, const mc_produce *p);
/* mc_ctx_produce() of a record without headers. */
int mc_ctx_forward(mc_ctx *ctx, mc_output *out, int32_t partition, const void *key, size_t keylen,
                   const void *value, size_t valuelen);
/* mc_ctx_produce() of a record with one header (hvalue of hlen bytes). */
int mc_ctx_forward_header(mc_ctx *ctx, mc_output *out, int32_t partition, const void *key,
                          size_t keylen, const void *value, size_t valuelen, const char *hname,
                          const void *hvalue, size_t hlen);
/* Sends input record r to the dead topic (same key and partition) as a
 * DeadLetter with the reason, its source topic/partition/offset, the raw value
 * (when under 512 KiB) and, when given, the decoded task. Inside the open
 * transaction, like any output. Returns 0, or -1 if it could not be written. */
int mc_ctx_dead_letter(mc_ctx *ctx, const mc_record *r, const char *reason,
                       const struct mc_task *task);

/* ---- time and commits ------------------------------------------------------- */

/* Asks for punctuate() at (or soon after) at_ms, wall clock; the earliest
 * request wins. */
void mc_ctx_wakeup_at(mc_ctx *ctx, int64_t at_ms);
/* Wall-clock epoch ms, read once per loop turn (when the current record was
 * polled, or punctuate was called): one "now" per record. Processors read
 * the time only here, so a test drives their clock. */
int64_t mc_ctx_now_ms(const mc_ctx *ctx);
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
/* Asks for the open transaction to be committed soon (before the interval). */
void mc_ctx_request_commit(mc_ctx *ctx);
/* The same for an output somebody is waiting on now (a task due already):
 * the commit also waits, a millisecond at a time, until the broker has
 * acknowledged every output, where commit_transaction's own flush polls in
 * steps of up to 10 ms. Not for outputs ahead of their time: flushing every
 * commit makes more, smaller requests, and at 5,000 tasks/s on a busy
 * broker that made tasks due 2 s ahead later, not sooner. */
void mc_ctx_request_commit_now(mc_ctx *ctx);

/* ---- readiness and liveness ------------------------------------------------- */

/* Marks the processor (not) ready for /readyz, e.g. while restoring state. */
void mc_ctx_set_ready(mc_ctx *ctx, bool ready);
/* Tells /healthz the processor is making progress inside a long call (a
 * restore of minutes): without it the loop would look stuck after 60 s and
 * liveness would restart a pod that is only restoring. */
void mc_ctx_alive(mc_ctx *ctx);
/* Whether the group has taken this instance's partitions away and the
 * processor has not been told yet (a session missed while the broker was
 * away, the poll interval exceeded): what it does now will not commit, and
 * another instance may already be doing it. on_revoke follows at the next
 * poll, which a blocked commit can delay by seconds. Any thread: the
 * executor's HTTP thread asks it before each call. */
bool mc_ctx_assignment_lost(const mc_ctx *ctx);

/* ---- input flow ---------------------------------------------------------------- */

/* Stops or resumes consuming an input partition (e.g. while too much is
 * unfinished), without losing the position. Returns 0 or -1. */
int mc_ctx_pause(mc_ctx *ctx, const char *topic, int32_t partition, bool pause);

/* The processor's own file descriptors (the executor's wake-ups from its
 * HTTP thread): the loop waits on them with its input, and runs the callback
 * on the processor's thread inside the open transaction, so it may forward
 * records; revents holds POLLIN/POLLOUT/POLLERR/POLLHUP. The callback
 * returns 0, or -1 for a fatal error. */
typedef int (*mc_fd_callback)(void *arg, int fd, int revents, mc_ctx *ctx);
/* Watches fd for events, replacing an earlier watch of it; events == 0
 * stops watching it. Returns 0, or -1. */
int mc_ctx_watch_fd(mc_ctx *ctx, int fd, short events, mc_fd_callback cb, void *arg);

/* ---- state from Kafka -------------------------------------------------------- */

/* Called for each record a restore reads, in offset order per partition. */
typedef void (*mc_restore_fn)(void *arg, const mc_record *r);
typedef struct mc_restore_stats {
    uint64_t records;
    double seconds;
} mc_restore_stats;
/* Replays partitions (of topic, by suffix) from the beginning to the high
 * watermark they had when the restore began, reading only what committed
 * transactions wrote, and calls fn for each record: how a processor rebuilds
 * a state store from its changelog. Blocks until done; keeps /healthz alive.
 * Returns 0 (stats in *stats when not NULL), or -1 when the broker could not
 * say where a partition ends. */
int mc_ctx_restore(mc_ctx *ctx, const char *topic_suffix, const int32_t *partitions, size_t n,
                   mc_restore_fn fn, void *arg, mc_restore_stats *stats);
/* The partition count of topic (by suffix), or -1 with a reason in err. */
int mc_ctx_partition_count(mc_ctx *ctx, const char *topic_suffix, char *err, size_t errlen);
/* The partition count of topic by its full name (a Kafka target): with a
 * reason in err, MC_TOPIC_MISSING (kafka.h) when the broker says it does not
 * exist, -1 when it could not be asked. One metadata round trip. */
int mc_ctx_topic_partition_count(mc_ctx *ctx, const char *topic, char *err, size_t errlen);
/* Where a partition of topic (by suffix) ends now for a read_committed
 * reader (its last stable offset; one broker round trip), or -1 with a
 * reason in err. Cheap enough to ask every
 * few seconds whether a small topic changed before restoring it again. */
int64_t mc_ctx_end_offset(mc_ctx *ctx, const char *topic_suffix, int32_t partition, char *err,
                          size_t errlen);
/* A lower bound of where each of n partitions of topic (by suffix) ends, in
 * one request per broker that waits at most timeout_ms: ends[i] for
 * partitions[i], -1 where the broker did not say. Returns 0, or -1 with a
 * reason in err when it could not say them all. The processor's thread. */
int mc_ctx_end_offsets(mc_ctx *ctx, const char *topic_suffix, const int32_t *partitions, size_t n,
                       int64_t *ends, int timeout_ms, char *err, size_t errlen);

/* Where the consumer of this input partition (full topic name) stands: the
 * offset of the next record it will deliver, past transaction markers and
 * aborted records, so a position equal to the last stable offset read
 * after some moment means every committed record written before that
 * moment has been delivered. -1 when not assigned or not known yet. */
int64_t mc_ctx_position(mc_ctx *ctx, const char *topic, int32_t partition);

/* Where each of n partitions of topic (by suffix) ends for a
 * read_uncommitted reader (its high watermark): past the records of
 * transactions still open, as a non-transactional writer's acknowledged
 * record may lie behind one. ends[i] for partitions[i], in one request per
 * broker of at most timeout_ms. 0, or -1 with a reason in err. The
 * processor's thread. */
int mc_ctx_high_watermarks(mc_ctx *ctx, const char *topic_suffix, const int32_t *partitions,
                           size_t n, int64_t *ends, int timeout_ms, char *err, size_t errlen);
/* Where each partition of each of n topics (by suffix) ends for a
 * read_committed reader (its last stable offset), asked in one request per
 * broker that waits at most timeout_ms: ends[p * n + i] for partitions[p]
 * of topic_suffixes[i]. Returns 0, or -1 with a reason in err. The
 * processor's thread. */
int mc_ctx_stable_ends(mc_ctx *ctx, const char *const *topic_suffixes, size_t n,
                       const int32_t *partitions, size_t n_partitions, int64_t *ends,
                       int timeout_ms, char *err, size_t errlen);

/* ---- what the processor runs with -------------------------------------------- */

const mc_config *mc_ctx_config(const mc_ctx *ctx);
const mc_logger *mc_ctx_logger(const mc_ctx *ctx);
mc_metrics *mc_ctx_metrics(const mc_ctx *ctx);
const char *mc_ctx_processor_name(const mc_ctx *ctx);

#endif
