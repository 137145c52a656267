/* A broker-free driver for mooncake's processors, in the manner of Kafka
 * Streams' TopologyTestDriver: an in-memory Kafka (partitioned logs with
 * transactions, read_committed visibility, commit and abort markers, and
 * consumer groups with committed offsets, metadata and generations) and
 * processor instances run against it through the same Processor API the
 * Kafka runtime implements (processor.h). A test drives them record by
 * record and step by step - assign, poll, process, punctuate, commit,
 * abort, crash, revoke, replay - on a clock it sets, and reads what they
 * committed.
 *
 * What it models, because exactly-once depends on it: records a
 * transaction writes take their offsets when produced and become visible
 * to read_committed readers only when it commits; an open transaction
 * holds back every reader of its partitions at its first record (the last
 * stable offset); commit and abort markers take an offset of their own; a
 * crashed instance's transaction stays open until its transactional id is
 * used again or it is expired; and a commit carrying offsets from a member
 * of an older group generation is fenced (aborted). What it does not: time
 * other than the test's clock, network errors, and librdkafka's batching.
 *
 * Single-threaded; every function is called from the test's thread (the
 * executor's caller thread, when a test uses the real one, talks to its
 * instance only through the descriptor the instance watches). */
#ifndef MOONCAKE_SIM_H
#define MOONCAKE_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "metrics.h"
#include "processor.h"

typedef struct sim_kafka sim_kafka;
typedef struct sim_inst sim_inst;

/* ---- the broker ----------------------------------------------------------------- */

/* An empty cluster whose topics (made on first use) have `partitions`
 * partitions, and whose clock reads now_ms. Free with sim_kafka_free. */
sim_kafka *sim_kafka_new(int32_t partitions, int64_t now_ms);
void sim_kafka_free(sim_kafka *k);

int64_t sim_now(const sim_kafka *k);
void sim_set_now(sim_kafka *k, int64_t now_ms);
void sim_advance(sim_kafka *k, int64_t ms);

/* Grows a topic (by full name) to n partitions. */
void sim_set_partitions(sim_kafka *k, const char *topic, int32_t n);
int32_t sim_partitions(sim_kafka *k, const char *topic);
/* Where a partition's log ends (its high watermark: records, open and
 * aborted ones, and commit markers all take an offset). */
int64_t sim_end_offset(sim_kafka *k, const char *topic, int32_t partition);

/* Makes the topic refuse records whose key and value take more than n
 * bytes, as a producer refuses one over message.max.bytes: at once, with
 * MC_FORWARD_REFUSED; refused inside process(), the record is handled as
 * Kafka's refusals are by the runner (an abort, then refused() or the dead
 * topic when it comes again). */
void sim_set_max_bytes(sim_kafka *k, const char *topic, size_t n);

/* Appends one committed record, as a client's idempotent producer would.
 * Returns its offset. */
int64_t sim_append(sim_kafka *k, const char *topic, int32_t partition, const void *key,
                   size_t key_len, const void *value, size_t value_len, const mc_header *headers,
                   size_t n_headers);
/* Appends a commit marker, as a transactional writer's commit leaves after
 * its records: it takes an offset and is never delivered. */
int64_t sim_append_commit_marker(sim_kafka *k, const char *topic, int32_t partition);

/* Aborts every open transaction, as the coordinator does when they time out. */
void sim_expire_transactions(sim_kafka *k);

/* A committed record as a read_committed reader sees it. */
typedef struct sim_rec {
    int64_t offset;
    const void *key;
    size_t key_len;
    const void *value;
    size_t value_len;
    const mc_header *headers;
    size_t n_headers;
} sim_rec;

/* The committed records of one partition in offset order (aborted records
 * and markers skipped; nothing past an open transaction). Returns how many
 * were put in *out (a malloc'd array the caller frees; its pointers stay
 * valid as long as the cluster). */
size_t sim_read(sim_kafka *k, const char *topic, int32_t partition, sim_rec **out);
/* The same without stopping at open transactions: what read_uncommitted sees. */
size_t sim_read_uncommitted(sim_kafka *k, const char *topic, int32_t partition, sim_rec **out);
/* The value of a header of a record read with sim_read, or NULL. */
const mc_header *sim_rec_header(const sim_rec *r, const char *name);

/* A group's committed offset (-1 when none) and metadata ("" when none) for
 * a partition. */
int64_t sim_committed(sim_kafka *k, const char *group, const char *topic, int32_t partition,
                      const char **metadata);

/* Starts a new generation of a group (a rebalance): members assigned before
 * it are zombies until they are assigned again. */
void sim_new_generation(sim_kafka *k, const char *group);

/* ---- processor instances ----------------------------------------------------------- */

/* An instance of processor p with configuration cfg (which must outlive
 * it), consumer group <prefix><name>, transactional id <...>-instance_id:
 * like a new process, it aborts a transaction left open under the same id.
 * NULL (with the reason on stderr) when create() refuses. */
sim_inst *sim_inst_new(sim_kafka *k, const mc_processor *p, const mc_config *cfg,
                       const char *instance_id);
/* A kill -9: the instance is gone, its open transaction stays open (until
 * its id is used again, or sim_expire_transactions). */
void sim_crash(sim_inst *in);
/* A graceful stop: commit, revoke, free. Returns what the commit returned. */
int sim_stop(sim_inst *in);

/* The processor's state (what create returned), for white-box checks. */
void *sim_self(sim_inst *in);
mc_metrics *sim_metrics(sim_inst *in);
/* A counter's value by name and labels (NULL for none); 0 when absent. */
uint64_t sim_counter(sim_inst *in, const char *name, const char *labels);
double sim_gauge(sim_inst *in, const char *name, const char *labels);
bool sim_ready(const sim_inst *in);
/* Partitions of the input topic the instance has paused. */
bool sim_paused(sim_inst *in, const char *topic_suffix, int32_t partition);

/* The group has taken the instance's partitions away (its session expired
 * while the broker was away) and it has not polled since: from now until
 * its next assign or revoke, mc_ctx_assignment_lost says so. Pair it with
 * sim_new_generation, which makes the instance a zombie. */
void sim_set_assignment_lost(sim_inst *in);

/* Assigns these partitions of every input topic (in the group's current
 * generation), reading their committed offsets and metadata, and calls
 * on_assign. Returns on_assign's result. */
int sim_assign(sim_inst *in, const int32_t *partitions, size_t n);
/* Assigns every partition. */
int sim_assign_all(sim_inst *in);
/* A revoke: commits the open transaction (aborts it when the assignment
 * was lost, as the runner does), then on_revoke. Returns the commit's
 * result. */
int sim_revoke_all(sim_inst *in);

/* Delivers up to max records (read_committed, in offset order per
 * partition, partitions in turn) to process(), inside the open
 * transaction. Returns how many were processed, or -1 when process()
 * failed (fatal). */
long sim_poll(sim_inst *in, size_t max);
/* Calls punctuate() if a wake-up is due on the cluster's clock; returns 1 if
 * it ran, 0 if not, -1 on failure. */
int sim_punctuate(sim_inst *in);
/* Runs the callbacks of watched descriptors that are readable now. */
int sim_run_fds(sim_inst *in);
/* prepare_commit, then commits the transaction with the offsets (fenced
 * when the instance is a zombie of its group). Returns 0 when committed, 1
 * when it had to abort (the instance then rewinds, as the runner does), -1
 * on failure. */
int sim_commit(sim_inst *in);
/* Aborts the open transaction and rewinds: on_revoke, seek to the
 * committed offsets, on_assign (as the runner does after an abortable
 * error). */
int sim_abort(sim_inst *in);
/* One loop turn as the runner takes it: descriptors, up to `batch` records,
 * punctuate if due, commit if asked for (or always, when commit_each_turn).
 * Returns 0, or -1 on failure. */
int sim_turn(sim_inst *in, size_t batch, bool commit_each_turn);
/* Turns (each committing) until nothing more is delivered, due or asked
 * for at the current time; at most max_turns. Returns 0 or -1. */
int sim_settle(sim_inst *in, int max_turns);

/* The wake-up the processor asked for (INT64_MAX: none). */
int64_t sim_wakeup(const sim_inst *in);
/* How many of its commits were asked for now (mc_ctx_request_commit_now):
 * the runner makes those wait until the broker has every output. */
uint64_t sim_commits_now(const sim_inst *in);

#endif
