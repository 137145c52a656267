/* The runner's insides, shared by its family of files (the way librdkafka
 * cuts rdkafka_*): runner.c (the loop, set-up, readiness), runner_txn.c (the
 * transactions and their error classes), runner_ctx.c (the context the
 * processor sees: outputs, refused records, questions) and runner_group.c
 * (input partitions, rebalances, leaving the group), runner_watch.c (the
 * watchdog of blocking Kafka calls). Every function here runs
 * on the runner's thread unless it says otherwise. */
#ifndef MOONCAKE_RUNNER_IMPL_H
#define MOONCAKE_RUNNER_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "ctx_impl.h"
#include "event_loop.h"
#include "kclient.h"
#include "runner.h"

#define MAX_INPUTS 8
/* Transactions take turns on this many producers (transactional ids <id>
 * and <id>~1). The broker writes a transaction's markers after it has
 * answered the commit, and until they are written it answers the same
 * producer's next AddPartitionsToTxn with CONCURRENT_TRANSACTIONS, which
 * librdkafka (2.0 and 2.8 alike) retries only after 20 ms (rdkafka_txnmgr.c): at 1,000 due
 * tasks/s the router committed back to back and nearly every transaction
 * waited out that retry. The other producer's last transaction finished
 * long ago. Turns never overlap: a transaction begins only after the one
 * before it committed or aborted, so offsets still commit in order. */
#define TXN_PRODUCERS 2

struct mc_output {
    void *handle; /* the client's */
    char name[256];
    mc_counter *records_out; /* counted when the transaction commits */
    uint64_t pending;        /* forwarded in the open transaction */
    bool foreign;            /* not one of mooncake's topics: a Kafka target */
};

/* One assigned input partition: where it has been processed up to, what
 * was last committed for it, and what the processor wants committed. */
typedef struct input_part {
    bool assigned;
    /* The offset after the last record processed (not the consumer's
     * position, which is already past a record when poll returns it); -1
     * when nothing was processed since the last seek. */
    int64_t next;
    bool dirty; /* advanced in the open transaction */
    /* A record the processor gave back (MC_PROCESS_LATER): delivered again
     * from here when the processor resumes the partition; -1 when none. */
    int64_t resume_at;
    /* The last committed offset and metadata (-1 / NULL when none): what a
     * transaction re-commits when it must carry an offset for fencing. */
    int64_t committed;
    char *committed_md;
    /* Set by the processor for the next commits (mc_ctx_set_commit_*). */
    char *md;
    int64_t md_offset; /* -1: commit the processed position */
} input_part;

typedef struct input_topic {
    char name[256];
    mc_counter *records_in;
    mc_gauge *lag;
    uint64_t pending;
    input_part *parts; /* indexed by partition number */
    int32_t n_parts;
} input_topic;

/* An input record that outputs in the open transaction answer: the record
 * being processed, or the cause an output named. Each output carries its
 * index (1-based) as its reference, so a delivery failure is traced back to
 * it. */
typedef struct txn_ref {
    size_t topic; /* index into inputs */
    int32_t partition;
    int64_t offset;
    /* Its outputs were flushed on their own, so a refusal is its own. */
    bool isolated;
} txn_ref;

/* An input whose output Kafka refused for good (too large, invalid): after the
 * abort and rewind it goes to the processor's refused() hook (or the dead
 * topic) instead of being processed again, which would fail the same way
 * forever and block its partition. Kafka refuses whole batches, so a refusal
 * of a batch of many inputs' outputs only makes each of them a suspect; a
 * suspect's outputs are then produced on their own (isolated), and only a
 * refusal of those confirms it. */
typedef struct poisoned_input {
    txn_ref at;
    char reason[256];
    bool confirmed;
    bool handled; /* given to refused() in the open transaction: gone when it commits */
} poisoned_input;

struct mc_runner {
    mc_logger logger;
    const mc_processor *proc;
    const mc_config *cfg;
    mc_metrics *metrics;
    void *self;
    mc_ctx ctx;
    mc_kclient *kc;
    int turn; /* the producer of the open transaction, or of the next one */
    char group_id[300];
    char transactional_id[600];

    mc_output **outputs; /* each allocated: processors keep the pointers */
    size_t n_outputs, cap_outputs;
    input_topic inputs[MAX_INPUTS];
    size_t n_inputs;

    txn_ref *refs;
    size_t n_refs, cap_refs;
    size_t current_ref; /* 1-based index of the record inside process(), else 0 */
    bool in_process;
    bool poison_found; /* a forward in this process() call was refused for good */
    bool txn_failed;   /* a produce found the transaction failed (abortable): abort it */
    poisoned_input *poison;
    size_t n_poison, cap_poison;
    mc_counter *poison_dead;

    bool txn_open;
    int64_t txn_started_ms;
    uint64_t txn_records; /* input records in the open transaction */
    bool txn_dirty;       /* something to commit: input consumed or output produced */
    bool txn_produced;    /* an output was produced in the open transaction */
    bool commit_requested;
    bool commit_awaits_outputs; /* mc_ctx_request_commit_now: see await_outputs */
    bool delivery_failed;       /* an output of the open transaction failed (see await_outputs) */
    /* Set by leave_group: an assignment that arrives while we leave is
     * taken only as librdkafka needs it taken, for the protocol to reach
     * the revoke and the LeaveGroup; the processor never sees it. */
    bool leaving;
    bool in_revoke;    /* inside the revoke callback */
    int64_t wakeup_ms; /* wall clock; INT64_MAX: none */
    /* The clocks, read once per loop turn: a clock read costs as much as a
     * good part of routing a record, and one "now" per record is also what a
     * processor wants. */
    int64_t now_mono_ms, now_wall_ms;
    int64_t last_lag_ms;

    /* The processor's file descriptors. Once there is one, the loop waits in
     * poll(2) instead of in the consumer, and learns of new input through the
     * client's input descriptor, the loop's wake-up (-1 when the client has
     * none: then it never blocks in poll(2)). */
    mc_evloop loop;
    int input_fd;
    bool input_fd_asked;
    /* The last batch stopped on its size or age with input still queued:
     * the descriptor will not be written again until the queue has been
     * emptied, so the next wait must not block. */
    bool input_backlog;
    bool draining; /* stopping: input stays paused, whatever the processor asks */
    int64_t drain_deadline;
    bool finished; /* mc_runner_finish ran: a second call does nothing */

    atomic_bool stop;
    atomic_bool fatal;
    atomic_bool processor_ready;
    atomic_bool started;
    /* Set after the first assignment (even an empty one): until then an
     * instance has not restored anything and must not count as ready. */
    atomic_bool assigned_once;
    atomic_llong loop_heartbeat_ms;
    /* The blocking Kafka call the loop thread is in (NULL: none) and the
     * monotonic time past which it counts as stuck (runner_watch.c). */
    _Atomic(const char *) watched_call;
    atomic_llong watched_deadline_ms;
    pthread_t watchdog;
    pthread_mutex_t watchdog_lock;
    pthread_cond_t watchdog_wake;
    bool watchdog_quit; /* under watchdog_lock */
    bool watchdog_running;

    mc_counter *txn_committed;
    mc_counter *txn_aborted;
    mc_histogram *commit_latency;
    mc_gauge *assigned_partitions;
};

#define RUNNER_OF(c) ((mc_runner *)(void *)((char *)(c)-offsetof(mc_runner, ctx)))

/* ---- runner.c ---- */

/* Marks the runner for exit, with the reason in the log: no fatal path is
 * silent. */
void runner_set_fatal(mc_runner *r, const char *what, const char *detail);
/* A processor callback failed: when a produce found the transaction failed,
 * that is why - abort and rewind (0, or -1 if even that fails); otherwise
 * the runner stops (-1). */
int runner_callback_failed(mc_runner *r, const char *what);
void runner_read_clocks(mc_runner *r);
/* A stop begins its drain: input paused, the processor asked whether it
 * has drained until deadline (mono ms). The loop's thread. */
void runner_begin_stop_drain(mc_runner *r, int64_t deadline);
/* Whether the open transaction is due for a commit: asked for, or by size
 * or age (the loop's thread). */
bool runner_commit_due(const mc_runner *r);

/* ---- runner_group.c: inputs and rebalances ---- */

size_t runner_input_index(const mc_runner *r, const char *topic);
/* The table entry of an input partition, grown on demand; NULL on ENOMEM or
 * a topic that is not an input. */
input_part *runner_part_of(mc_runner *r, size_t topic, int32_t partition);
input_part *runner_part_named(mc_runner *r, const char *topic, int32_t partition);
void runner_part_reset(input_part *p, bool assigned, int64_t committed, const char *committed_md);
void runner_set_str(char **dst, const char *src);
/* Applies an assignment (or the committed offsets re-read for a rewind). */
void runner_take_assignment(mc_runner *r, const rd_kafka_topic_partition_list_t *parts);
/* The client's rebalance event (kclient.h). */
void runner_rebalance(void *arg, mc_rebalance what, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *parts);
/* Leaves the group on a graceful stop (see the comment in runner_group.c). */
void runner_leave_group(mc_runner *r);
/* The partitions the runner holds, as a list the caller destroys. */
rd_kafka_topic_partition_list_t *runner_held_partitions(mc_runner *r);

/* ---- runner_txn.c: transactions ---- */

typedef enum txn_verdict { TXN_RETRY, TXN_ABORT, TXN_FATAL } txn_verdict;
/* The one place that classifies a transactional error. */
txn_verdict runner_txn_error(mc_runner *r, const char *what, const mc_kerror *e);
int runner_begin_txn(mc_runner *r);
/* Commits the open transaction with the input positions. Returns 0 when
 * committed; 1 when it had to abort (and rewound input and state: records
 * polled before this call will come again); -1 on a fatal error. */
int runner_commit_txn(mc_runner *r);
/* Aborts the open transaction and rewinds input and state to the last
 * commit. Returns -1 when even the abort failed (fatal). */
int runner_abort_txn(mc_runner *r, const char *why);
/* Aborts on a lost assignment (what names it in the log; the abort is
 * counted and the turn passes) or, what NULL, as the last act of a stop
 * after a fatal error (best effort: not reported, not counted). The
 * processor has let go already; no rewind. Whether it aborted. */
bool runner_abort_quietly(mc_runner *r, const char *what, int timeout_ms);
/* The processor forgets its work on every partition it holds (on_revoke). */
void runner_drop_processor_work(mc_runner *r);
/* Records that an input is done with. */
void runner_mark_processed(mc_runner *r, size_t topic, int32_t partition, int64_t offset);
/* Forgets the open transaction's bookkeeping. */
void runner_reset_txn(mc_runner *r, bool committed);
/* Every producer, before the consumer reads a committed offset. */
int runner_init_transactions(mc_runner *r);

/* ---- runner_watch.c: the watchdog of blocking calls ---- */

/* The loop thread is about to make a blocking call with this timeout; until
 * runner_unwatch, the watchdog exits the process when it runs far past it. */
void runner_watch(mc_runner *r, const char *call, int timeout_ms);
void runner_unwatch(mc_runner *r);
/* Starts the watchdog thread (mc_runner_run: production runs, not the
 * deterministic tests): 0, or -1 when no thread could start. */
int runner_watchdog_start(mc_runner *r);
/* Stops and joins it; nothing when it never started. */
void runner_watchdog_stop(mc_runner *r);

/* ---- runner_ctx.c: the processor's context ---- */

extern const mc_ctx_ops runner_ctx_ops;
/* The client's delivery failure event (kclient.h). */
void runner_delivery_failed(void *arg, int producer, size_t ref, const char *topic,
                            rd_kafka_resp_err_t err);
/* Notes an input that outputs answer; returns its 1-based index, 0 on ENOMEM. */
size_t runner_add_ref(mc_runner *r, const txn_ref *in);
poisoned_input *runner_find_poison(mc_runner *r, const txn_ref *in);
/* A suspect handled in the transaction that just ended is done with when it
 * committed; when it aborted it comes back to be handled again. */
void runner_settle_poison(mc_runner *r, bool committed);
/* One consumed record, inside the open transaction. Returns -1 to leave the
 * loop (fatal), 0 otherwise. */
int runner_handle_record(mc_runner *r, const mc_record *rec);

#endif
