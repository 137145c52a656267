/* The exactly-once consume-transform-produce loop (see runner.h).
 *
 * The shape follows librdkafka's examples/transactions.c: a read_committed
 * consumer without auto-commit, a transactional producer, and input offsets
 * handed to the transaction with send_offsets_to_transaction(), so outputs and
 * progress become visible together or not at all. Every Kafka error passes
 * through txn_error(), the one place that decides between retrying, aborting
 * (and rewinding input and state to the last commit) and giving up.
 *
 * The loop, in the manner of Redis's aeMain:
 *
 *     while (running(r)) {
 *         begin_txn(r);              a transaction is always open
 *         wait_for_events(r);        input, the processor's descriptors, a wake-up
 *         take_input_batch(r);       up to POLL_BATCH records into process()
 *         punctuate_if_due(r);       timers (the wheel fires, the store hands off)
 *         commit_if_due(r);          on request, by size or by age
 *     }
 */
#include "runner.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "ctx_impl.h"
#include "fdset.h"
#include "kafka.h"
#include "restore.h"

/* A crashed instance's partitions wait this long for a new owner, unless it
 * comes back under its id (static membership); -X session.timeout.ms wins. */
#define MC_SESSION_TIMEOUT_MS "10000"
/* max.poll.interval.ms, set, since ctx_assignment_lost counts on it. */
#define MAX_POLL_INTERVAL_MS 300000
#define TEXT_OF_(n) #n
#define TEXT_OF(n) TEXT_OF_(n) /* a number macro as a string literal */
#define LOOP_STUCK_MARGIN_MS 10000

#define MAX_OUTPUTS 16
#define MAX_INPUTS 8
/* Records (and milliseconds) taken per loop turn once the first record has
 * arrived, before punctuate and commit get their turn. */
#define POLL_BATCH 2000
#define POLL_BATCH_MS 5
/* How long a flush isolating a suspect's output may take (see produce). */
#define ISOLATE_FLUSH_MS 30000
/* How long a commit waits in await_outputs before commit_transaction: an
 * acknowledgement takes milliseconds; past this, something is wrong and
 * commit_transaction's own flush and error handling take over. */
#define AWAIT_OUTPUTS_MS 200

/* Transactions take turns on this many producers (transactional ids <id>
 * and <id>~1). The broker writes a transaction's markers after it has
 * answered the commit, and until they are written it answers the same
 * producer's next AddPartitionsToTxn with CONCURRENT_TRANSACTIONS, which
 * librdkafka 2.0 retries only after 20 ms (rdkafka_txnmgr.c): at 1,000 due
 * tasks/s the router committed back to back and nearly every transaction
 * waited out that retry. The other producer's last transaction finished
 * long ago. Turns never overlap: a transaction begins only after the one
 * before it committed or aborted, so offsets still commit in order. */
#define TXN_PRODUCERS 2

struct mc_output {
    rd_kafka_topic_t *rkt[TXN_PRODUCERS]; /* one handle per producer */
    char name[256];
    mc_counter *records_out; /* counted when the transaction commits */
    uint64_t pending;        /* forwarded in the open transaction */
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
 * index (1-based) as its opaque, so a delivery failure is traced back to it. */
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

typedef struct mc_runner {
    mc_logger logger; /* first: librdkafka's log callback reads its opaque as a logger */
    const mc_processor *proc;
    const mc_config *cfg;
    mc_metrics *metrics;
    void *self;
    mc_ctx ctx;
    rd_kafka_t *consumer;
    rd_kafka_t *producers[TXN_PRODUCERS];
    rd_kafka_t *producer; /* producers[turn]: the open transaction's, or the next one's */
    int turn;
    mc_restorer *restorer; /* made on the first mc_ctx_restore */
    char group_id[300];
    char transactional_id[600];

    mc_output outputs[MAX_OUTPUTS];
    size_t n_outputs;
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
    bool assigned_while_leaving;
    bool in_revoke;    /* inside the revoke callback */
    int64_t wakeup_ms; /* wall clock; INT64_MAX: none */
    /* The clocks, read once per loop turn: a clock read costs as much as a
     * good part of routing a record, and one "now" per record is also what a
     * processor wants. */
    int64_t now_mono_ms, now_wall_ms;
    int64_t last_lag_ms;

    /* The processor's file descriptors. Once there is one, the loop waits in
     * poll(2) instead of in the consumer, and learns of new input through a
     * pipe librdkafka writes to when the consumer's queue becomes
     * non-empty. */
    mc_fdset watches;
    rd_kafka_queue_t *consumer_queue;
    int queue_pipe[2];
    /* The last batch stopped on its size or age with input still queued:
     * the pipe will not be written again until the queue has been emptied,
     * so the next wait must not block. */
    bool input_backlog;
    bool draining; /* stopping: input stays paused, whatever the processor asks */
    int64_t drain_deadline;

    atomic_bool stop;
    atomic_bool fatal;
    atomic_bool processor_ready;
    atomic_bool started;
    /* Set after the first assignment (even an empty one): until then an
     * instance has not restored anything and must not count as ready. */
    atomic_bool assigned_once;
    atomic_llong loop_heartbeat_ms;

    mc_counter *txn_committed;
    mc_counter *txn_aborted;
    mc_histogram *commit_latency;
    mc_gauge *assigned_partitions;
} mc_runner;

#define RUNNER_OF(c) ((mc_runner *)(void *)((char *)(c)-offsetof(mc_runner, ctx)))

/* Marks the runner for exit, with the reason in the log: no fatal path is
 * silent. */
static void set_fatal(mc_runner *r, const char *what, const char *detail)
{
    if (!atomic_exchange(&r->fatal, true))
        mc_log(&r->logger, MC_LOG_ERROR, "fatal", "what", what, "detail", detail ? detail : "",
               (const char *)NULL);
}

static int abort_txn(mc_runner *r, const char *why);

/* A processor callback failed: when a produce found the transaction failed,
 * that is why - abort and rewind (0, or -1 if even that fails); otherwise
 * the runner stops (-1). */
static int callback_failed(mc_runner *r, const char *what)
{
    if (r->txn_failed) {
        r->txn_failed = false;
        return abort_txn(r, "the transaction failed while producing");
    }
    set_fatal(r, what, r->proc->name);
    return -1;
}

/* ---- inputs --------------------------------------------------------------------- */

static size_t input_index(const mc_runner *r, const char *topic)
{
    for (size_t i = 0; i < r->n_inputs; i++)
        if (strcmp(r->inputs[i].name, topic) == 0)
            return i;
    return SIZE_MAX;
}

/* The table entry of an input partition, grown on demand; NULL on ENOMEM or
 * a topic that is not an input. */
static input_part *part_of(mc_runner *r, size_t topic, int32_t partition)
{
    if (topic >= r->n_inputs || partition < 0)
        return NULL;
    input_topic *t = &r->inputs[topic];
    if (partition >= t->n_parts) {
        int32_t n = t->n_parts ? t->n_parts : 16;
        while (n <= partition)
            n *= 2;
        input_part *v = realloc(t->parts, (size_t)n * sizeof *v);
        if (!v)
            return NULL;
        for (int32_t i = t->n_parts; i < n; i++)
            v[i] = (input_part){.next = -1, .resume_at = -1, .committed = -1, .md_offset = -1};
        t->parts = v;
        t->n_parts = n;
    }
    return &t->parts[partition];
}

static input_part *part_named(mc_runner *r, const char *topic, int32_t partition)
{
    return part_of(r, input_index(r, topic), partition);
}

static void set_str(char **dst, const char *src)
{
    free(*dst);
    *dst = src ? strdup(src) : NULL;
}

/* Forgets what the processor asked for and where processing was: after a
 * seek to the committed offsets (an assignment, a rewind), or a revoke. */
static void part_reset(input_part *p, bool assigned, int64_t committed, const char *committed_md)
{
    p->assigned = assigned;
    p->next = -1;
    p->dirty = false;
    p->resume_at = -1;
    p->committed = committed;
    set_str(&p->committed_md, committed_md && *committed_md ? committed_md : NULL);
    set_str(&p->md, NULL);
    p->md_offset = -1;
}

static void part_free(input_part *p)
{
    free(p->committed_md);
    free(p->md);
}

/* Applies an assignment (or the committed offsets re-read for a rewind):
 * every listed partition starts from its committed offset, unpaused (a
 * pause belongs to the processor's state, which starts afresh), or paused
 * when we are draining. */
static void take_assignment(mc_runner *r, const rd_kafka_topic_partition_list_t *parts)
{
    for (int i = 0; i < parts->cnt; i++) {
        const rd_kafka_topic_partition_t *tp = &parts->elems[i];
        input_part *p = part_named(r, tp->topic, tp->partition);
        if (!p)
            continue;
        char *md = NULL;
        if (tp->metadata && tp->metadata_size) {
            md = strndup(tp->metadata, tp->metadata_size);
            if (!md)
                continue;
        }
        part_reset(p, true, tp->offset >= 0 ? tp->offset : -1, md);
        free(md);
    }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_copy(parts);
    rd_kafka_resp_err_t err = r->draining ? rd_kafka_pause_partitions(r->consumer, l)
                                          : rd_kafka_resume_partitions(r->consumer, l);
    if (err)
        mc_log(&r->logger, MC_LOG_WARN, "cannot reset pauses after an assignment", "error",
               rd_kafka_err2str(err), (const char *)NULL);
    rd_kafka_topic_partition_list_destroy(l);
}

static void drop_assignment(mc_runner *r, const rd_kafka_topic_partition_list_t *parts)
{
    for (int i = 0; i < parts->cnt; i++) {
        input_part *p = part_named(r, parts->elems[i].topic, parts->elems[i].partition);
        if (p)
            part_reset(p, false, -1, NULL);
    }
}

/* ---- outputs and refused records ---------------------------------------------- */

static mc_output *ctx_output(mc_ctx *ctx, const char *topic_suffix)
{
    mc_runner *r = RUNNER_OF(ctx);
    char name[256];
    mc_topic_name(r->cfg, topic_suffix, name, sizeof name);
    for (size_t i = 0; i < r->n_outputs; i++)
        if (strcmp(r->outputs[i].name, name) == 0)
            return &r->outputs[i];
    if (r->n_outputs == MAX_OUTPUTS)
        return NULL;
    mc_output *o = &r->outputs[r->n_outputs];
    snprintf(o->name, sizeof o->name, "%s", name);
    for (int i = 0; i < TXN_PRODUCERS; i++)
        if (!(o->rkt[i] = rd_kafka_topic_new(r->producers[i], name, NULL))) {
            while (i-- > 0)
                rd_kafka_topic_destroy(o->rkt[i]);
            return NULL;
        }
    char labels[400];
    snprintf(labels, sizeof labels, "processor=\"%s\",topic=\"%s\"", r->proc->name, name);
    o->records_out =
        mc_metrics_counter(r->metrics, "mooncake_records_out_total",
                           "Records written, counted when their transaction commits", labels);
    r->n_outputs++;
    return o;
}

/* Errors that belong to one record, not to Kafka or to us: retrying the same
 * record can only fail the same way. */
static bool record_error(rd_kafka_resp_err_t err)
{
    return err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ||
           err == RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE ||
           err == RD_KAFKA_RESP_ERR_INVALID_RECORD;
}

static bool same_input(const txn_ref *a, const txn_ref *b)
{
    return a->topic == b->topic && a->partition == b->partition && a->offset == b->offset;
}

static poisoned_input *find_poison(mc_runner *r, const txn_ref *in)
{
    for (size_t i = 0; i < r->n_poison; i++)
        if (same_input(&r->poison[i].at, in))
            return &r->poison[i];
    return NULL;
}

static void remove_poison(mc_runner *r, poisoned_input *p)
{
    *p = r->poison[--r->n_poison];
}

/* Notes that the input at 1-based ref index idx had an output refused for
 * good; certain when the refusal can only be its own. */
static void add_poison(mc_runner *r, size_t idx, const char *topic, rd_kafka_resp_err_t err,
                       bool certain)
{
    if (idx == 0 || idx > r->n_refs)
        return; /* not caused by one input: abort and retry is all we can do */
    txn_ref *in = &r->refs[idx - 1];
    bool confirmed = certain || in->isolated || r->n_refs == 1;
    poisoned_input *p = find_poison(r, in);
    if (p) {
        p->confirmed |= confirmed;
        return;
    }
    if (r->n_poison == r->cap_poison) {
        size_t cap = r->cap_poison ? r->cap_poison * 2 : 16;
        poisoned_input *v = realloc(r->poison, cap * sizeof *v);
        if (!v)
            return;
        r->poison = v;
        r->cap_poison = cap;
    }
    p = &r->poison[r->n_poison++];
    p->at = *in;
    p->at.isolated = false;
    p->confirmed = confirmed;
    p->handled = false;
    /* Cut to fit: a topic name may take most of the reason. */
    int n = snprintf(p->reason, sizeof p->reason,
                     "Kafka refused this record's output to %.200s: ", topic);
    if (n > 0 && (size_t)n < sizeof p->reason)
        snprintf(p->reason + n, sizeof p->reason - (size_t)n, "%s", rd_kafka_err2str(err));
    mc_log(&r->logger, MC_LOG_WARN,
           confirmed ? "output refused; the input will be handled as refused"
                     : "output refused; the input's outputs will be retried on their own",
           "topic", topic, "error", rd_kafka_err2str(err), (const char *)NULL);
}

/* Delivery reports arrive while the producer is flushed (commit, or an
 * isolation flush), on our thread. */
static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    mc_runner *r = opaque;
    /* Commit and abort serve their own producer's reports before the turn
     * passes, so this only drops a straggler of an abort that timed out: a
     * transaction whose refs are gone, whose failure is not the open one's. */
    if (rk != r->producer)
        return;
    if (m->err)
        r->delivery_failed = true; /* await_outputs: the transaction will not commit */
    if (m->err && record_error(m->err))
        add_poison(r, (size_t)(uintptr_t)m->_private, rd_kafka_topic_name(m->rkt), m->err, false);
}

/* Notes an input that outputs answer; returns its 1-based index, 0 on ENOMEM. */
static size_t add_ref(mc_runner *r, const txn_ref *in)
{
    if (r->n_refs == r->cap_refs) {
        size_t cap = r->cap_refs ? r->cap_refs * 2 : 1024;
        txn_ref *n = realloc(r->refs, cap * sizeof *n);
        if (!n)
            return 0;
        r->refs = n;
        r->cap_refs = cap;
    }
    r->refs[r->n_refs++] = *in;
    return r->n_refs;
}

/* The ref index an output answers: the named cause, else the record being
 * processed, else none (0). */
static size_t ref_for(mc_runner *r, const mc_source *cause)
{
    if (!cause)
        return r->in_process ? r->current_ref : 0;
    txn_ref in = {input_index(r, cause->topic), cause->partition, cause->offset, false};
    if (in.topic == SIZE_MAX)
        return 0;
    return add_ref(r, &in);
}

/* Produces one record, with its headers; rd_kafka_produce() when there are
 * none, since it is the cheaper call. */
static rd_kafka_resp_err_t produce_one(mc_runner *r, const mc_produce *p, size_t ref)
{
    void *opaque = (void *)(uintptr_t)ref;
    if (!p->n_headers)
        return rd_kafka_produce(p->out->rkt[r->turn], p->partition, RD_KAFKA_MSG_F_COPY,
                                (void *)p->value, p->value ? p->value_len : 0, p->key, p->key_len,
                                opaque)
                   ? rd_kafka_last_error()
                   : RD_KAFKA_RESP_ERR_NO_ERROR;
    rd_kafka_headers_t *h = rd_kafka_headers_new(p->n_headers);
    for (size_t i = 0; i < p->n_headers; i++)
        rd_kafka_header_add(h, p->headers[i].name, -1, p->headers[i].value,
                            (ssize_t)p->headers[i].len);
    rd_kafka_resp_err_t err = rd_kafka_producev(
        r->producer, RD_KAFKA_V_RKT(p->out->rkt[r->turn]), RD_KAFKA_V_PARTITION(p->partition),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_VALUE((void *)p->value, p->value ? p->value_len : 0),
        RD_KAFKA_V_KEY(p->key, p->key_len), RD_KAFKA_V_OPAQUE(opaque), RD_KAFKA_V_HEADERS(h),
        RD_KAFKA_V_END);
    if (err)
        rd_kafka_headers_destroy(h); /* producev only takes them over on success */
    return err;
}

/* Whether the input behind ref is a suspect whose outputs must go out on
 * their own, so that a refusal of them can only be theirs. */
static bool must_isolate(mc_runner *r, size_t ref)
{
    if (ref == 0 || r->n_poison == 0)
        return false;
    poisoned_input *p = find_poison(r, &r->refs[ref - 1]);
    return p && !p->confirmed;
}

static int flush_for_isolation(mc_runner *r)
{
    rd_kafka_resp_err_t err = rd_kafka_flush(r->producer, ISOLATE_FLUSH_MS);
    if (err) {
        mc_log(&r->logger, MC_LOG_ERROR, "flush before an isolated output failed", "error",
               rd_kafka_err2str(err), (const char *)NULL);
        return -1;
    }
    return 0;
}

/* A partition the producer does not know yet: the topic grew (a growth
 * under way writes to the new partitions before librdkafka's next
 * metadata refresh). A metadata request updates the producer's view of the
 * topic; from the second time on it waits a second first, so a partition
 * that stays unknown stops the runner after UNKNOWN_PARTITION_TRIES. */
#define UNKNOWN_PARTITION_TRIES 30
static void learn_partitions(mc_runner *r, mc_output *out, int attempt)
{
    if (attempt > 0) {
        struct timespec pause = {1, 0};
        nanosleep(&pause, NULL);
    }
    char err[256];
    mc_topic_partition_count(r->producer, out->name, 5000, err, sizeof err);
}

static int ctx_produce(mc_ctx *ctx, const mc_produce *p)
{
    mc_runner *r = RUNNER_OF(ctx);
    size_t ref = ref_for(r, p->cause);
    bool isolate = must_isolate(r, ref);
    if (isolate) {
        /* A suspect: everything before goes out in batches of its own, then
         * this record alone (see poisoned_input). */
        if (flush_for_isolation(r) != 0)
            return -1;
        r->refs[ref - 1].isolated = true;
    }
    int unknown = 0;
    for (;;) {
        rd_kafka_resp_err_t err = produce_one(r, p, ref);
        if (!err) {
            p->out->pending++;
            r->txn_dirty = true;
            r->txn_produced = true;
            return isolate ? flush_for_isolation(r) : 0;
        }
        if (record_error(err)) {
            /* Refused before it was sent. Inside process() the record is
             * poison (its other outputs may be in the transaction, so the
             * runner aborts and rewinds); outside, the caller deals with it. */
            if (r->in_process && !p->cause) {
                add_poison(r, ref, p->out->name, err, true);
                r->poison_found = true;
            }
            return MC_FORWARD_REFUSED;
        }
        if (err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION && unknown < UNKNOWN_PARTITION_TRIES) {
            learn_partitions(r, p->out, unknown++);
            continue;
        }
        if (err == RD_KAFKA_RESP_ERR__STATE && !rd_kafka_fatal_error(r->producer, NULL, 0)) {
            /* The transaction failed under us (an output of an earlier
             * record refused, a broker error): what the processor is doing
             * cannot be committed. Abort and rewind, as for a failed commit. */
            r->txn_failed = true;
            return -1;
        }
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            mc_log(&r->logger, MC_LOG_ERROR, "produce refused", "topic", p->out->name, "error",
                   rd_kafka_err2str(err), (const char *)NULL);
            return -1;
        }
        /* The local queue is full: let librdkafka drain it, then try again. */
        rd_kafka_poll(r->producer, 10);
    }
}

/* ---- the rest of the ctx ----------------------------------------------------------- */

static void ctx_wakeup_at(mc_ctx *ctx, int64_t at_ms)
{
    mc_runner *r = RUNNER_OF(ctx);
    if (at_ms < r->wakeup_ms)
        r->wakeup_ms = at_ms;
}

static int64_t ctx_now_ms(const mc_ctx *ctx)
{
    return RUNNER_OF(ctx)->now_wall_ms;
}

static int ctx_set_commit(mc_ctx *ctx, const char *topic, int32_t partition, bool set_offset,
                          int64_t offset, const char *metadata)
{
    mc_runner *r = RUNNER_OF(ctx);
    if (strlen(metadata) > 4096)
        return -1;
    input_part *p = part_named(r, topic, partition);
    if (!p || !p->assigned)
        return -1;
    char *copy = strdup(metadata);
    if (!copy)
        return -1;
    free(p->md);
    p->md = copy;
    if (set_offset)
        p->md_offset = offset;
    r->txn_dirty = true;
    return 0;
}

static void ctx_request_commit(mc_ctx *ctx, bool now)
{
    mc_runner *r = RUNNER_OF(ctx);
    r->commit_requested = true;
    r->commit_awaits_outputs |= now;
}

static void ctx_set_ready(mc_ctx *ctx, bool ready)
{
    atomic_store(&RUNNER_OF(ctx)->processor_ready, ready);
}

static void ctx_alive(mc_ctx *ctx)
{
    atomic_store(&RUNNER_OF(ctx)->loop_heartbeat_ms, mc_mono_ms());
}

/* librdkafka marks the assignment lost on its own thread when it gives up
 * on the session, which it checks about once a second (an atomic flag,
 * cleared by our rd_kafka_assign in the rebalance callback, after
 * on_revoke). A fatal error counts too: a consumer fenced as a static member
 * unassigns by itself and clears the flag at once, and a fenced producer
 * will not commit. So does a loop stuck (in a commit on a broker in trouble)
 * until its poll interval nearly runs out: it may be evicted from a
 * rebalance under way without librdkafka setting the flag (it skips a revoke
 * while rebalancing), so the processor lets go a little before. The consumer
 * exists for as long as the processor does. */
static bool ctx_assignment_lost(const mc_ctx *ctx)
{
    mc_runner *r = RUNNER_OF(ctx);
    long long turned = atomic_load(&r->loop_heartbeat_ms);
    return atomic_load(&r->fatal) || rd_kafka_fatal_error(r->consumer, NULL, 0) ||
           rd_kafka_assignment_lost(r->consumer) != 0 ||
           (turned > 0 && mc_mono_ms() - turned > MAX_POLL_INTERVAL_MS - LOOP_STUCK_MARGIN_MS);
}

/* The consumer's queue as a file descriptor: librdkafka writes a byte to the
 * pipe whenever the queue goes from empty to non-empty (rebalances and
 * errors arrive on the same queue, since the main queue is forwarded to it). */
static int watch_consumer_queue(mc_runner *r)
{
    if (r->consumer_queue)
        return 0;
    if (pipe(r->queue_pipe) != 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        int fl = fcntl(r->queue_pipe[i], F_GETFL);
        if (fl < 0 || fcntl(r->queue_pipe[i], F_SETFL, fl | O_NONBLOCK) != 0 ||
            fcntl(r->queue_pipe[i], F_SETFD, FD_CLOEXEC) != 0)
            return -1;
    }
    r->consumer_queue = rd_kafka_queue_get_consumer(r->consumer);
    if (!r->consumer_queue)
        return -1;
    rd_kafka_queue_io_event_enable(r->consumer_queue, r->queue_pipe[1], "1", 1);
    /* Whatever is queued already will not be announced. */
    r->input_backlog = true;
    return 0;
}

static int ctx_watch_fd(mc_ctx *ctx, int fd, short events, mc_fd_callback cb, void *arg)
{
    mc_runner *r = RUNNER_OF(ctx);
    if (events && watch_consumer_queue(r) != 0)
        return -1;
    return mc_fdset_set(&r->watches, fd, events, (void (*)(void))cb, arg);
}

static int ctx_pause(mc_ctx *ctx, const char *topic, int32_t partition, bool pause)
{
    mc_runner *r = RUNNER_OF(ctx);
    if (!pause && r->draining)
        return 0;
    input_part *ip = part_named(r, topic, partition);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, topic, partition);
    rd_kafka_resp_err_t err = pause ? rd_kafka_pause_partitions(r->consumer, l)
                                    : rd_kafka_resume_partitions(r->consumer, l);
    if (!err)
        err = l->elems[0].err;
    if (!err && !pause) {
        /* Resume where the processor wants the next record: the one it gave
         * back, or where we are. Pausing dropped what was fetched, and
         * librdkafka (2.0) fetches again only when its broker thread next
         * wakes up - up to a second later when every partition was paused;
         * an asynchronous seek wakes it now. */
        int64_t at = -1;
        if (ip && ip->resume_at >= 0) {
            at = ip->resume_at;
            ip->resume_at = -1;
        } else if (rd_kafka_position(r->consumer, l) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            at = l->elems[0].offset;
        }
        if (at >= 0) {
            l->elems[0].offset = at;
            rd_kafka_error_t *error = rd_kafka_seek_partitions(r->consumer, l, 0);
            if (error)
                rd_kafka_error_destroy(error);
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    return err ? -1 : 0;
}

static void restore_tick(void *arg)
{
    ctx_alive(arg);
}

/* The restorer's read_uncommitted handle answers high watermarks: the
 * consumer's and the producer's are read_committed (librdkafka's default)
 * and are told last stable offsets. */
static mc_restorer *restorer_of(mc_runner *r, char *err, size_t errlen)
{
    if (!r->restorer)
        r->restorer = mc_restorer_new(r->cfg, &r->logger, err, errlen);
    return r->restorer;
}

static int ctx_high_watermarks(mc_ctx *ctx, const char *topic_suffix, const int32_t *partitions,
                               size_t n, int64_t *ends, int timeout_ms, char *err, size_t errlen)
{
    mc_runner *r = RUNNER_OF(ctx);
    char topic[256];
    mc_topic_name(r->cfg, topic_suffix, topic, sizeof topic);
    mc_restorer *rs = restorer_of(r, err, errlen);
    return rs ? mc_restorer_high_watermarks(rs, topic, partitions, n, ends, timeout_ms, err, errlen)
              : -1;
}

static int ctx_restore(mc_ctx *ctx, const char *topic_suffix, const int32_t *partitions, size_t n,
                       mc_restore_fn fn, void *arg, mc_restore_stats *stats)
{
    mc_runner *r = RUNNER_OF(ctx);
    if (!r->restorer) {
        char err[512];
        r->restorer = mc_restorer_new(r->cfg, &r->logger, err, sizeof err);
        if (!r->restorer) {
            mc_log(&r->logger, MC_LOG_ERROR, "cannot make the restore consumer", "error", err,
                   (const char *)NULL);
            return -1;
        }
    }
    char topic[256];
    mc_topic_name(r->cfg, topic_suffix, topic, sizeof topic);
    return mc_restorer_run(r->restorer, topic, partitions, n, fn, arg, restore_tick, ctx, stats);
}

static int ctx_partition_count(mc_ctx *ctx, const char *topic_suffix, char *err, size_t errlen)
{
    mc_runner *r = RUNNER_OF(ctx);
    char topic[256];
    mc_topic_name(r->cfg, topic_suffix, topic, sizeof topic);
    return mc_topic_partition_count(r->consumer, topic, 10000, err, errlen);
}

static int64_t ctx_end_offset(mc_ctx *ctx, const char *topic_suffix, int32_t partition, char *err,
                              size_t errlen)
{
    mc_runner *r = RUNNER_OF(ctx);
    char topic[256];
    mc_topic_name(r->cfg, topic_suffix, topic, sizeof topic);
    int64_t lo = 0, hi = 0;
    rd_kafka_resp_err_t e =
        rd_kafka_query_watermark_offsets(r->consumer, topic, partition, &lo, &hi, 10000);
    if (e) {
        snprintf(err, errlen, "%s [%d]: %s", topic, (int)partition, rd_kafka_err2str(e));
        return -1;
    }
    return hi;
}

/* librdkafka's application position: past the commit markers and aborted
 * records it skipped, not only past the last record delivered. It has none
 * until a fetch returned something after the seek (librdkafka 2.0: a
 * partition seeked to its end stays at INVALID), and then the next record
 * is the one it was seeked to: what the group had committed. */
static int64_t ctx_position(mc_ctx *ctx, const char *topic, int32_t partition)
{
    mc_runner *r = RUNNER_OF(ctx);
    input_part *ip = part_named(r, topic, partition);
    if (!ip || !ip->assigned)
        return -1;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, topic, partition);
    int64_t at = -1;
    if (rd_kafka_position(r->consumer, l) == RD_KAFKA_RESP_ERR_NO_ERROR && !l->elems[0].err &&
        l->elems[0].offset >= 0)
        at = l->elems[0].offset;
    else if (ip->next >= 0)
        at = ip->next;
    else if (ip->committed >= 0)
        at = ip->committed;
    rd_kafka_topic_partition_list_destroy(l);
    return at;
}

/* Through the consumer, whose read_committed isolation makes the broker
 * answer last stable offsets: past every committed record, and before the
 * first one of a transaction still open. */
static int ctx_stable_ends(mc_ctx *ctx, const char *const *topic_suffixes, size_t n,
                           const int32_t *partitions, size_t n_partitions, int64_t *ends,
                           int timeout_ms, char *err, size_t errlen)
{
    mc_runner *r = RUNNER_OF(ctx);
    char names[8][256];
    const char *topics[8];
    if (n > 8) {
        snprintf(err, errlen, "more than 8 topics");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        mc_topic_name(r->cfg, topic_suffixes[i], names[i], sizeof names[i]);
        topics[i] = names[i];
    }
    return mc_list_end_offsets(r->consumer, topics, n, partitions, n_partitions, ends, timeout_ms,
                               err, errlen);
}

/* Asked through the producer: the topics a processor writes are the ones it
 * asks about, and a producer refreshes their leaders when a request finds
 * one moved (a consumer that does not read the topic would not). */
static int ctx_end_offsets(mc_ctx *ctx, const char *topic_suffix, const int32_t *partitions,
                           size_t n, int64_t *ends, int timeout_ms, char *err, size_t errlen)
{
    mc_runner *r = RUNNER_OF(ctx);
    char topic[256];
    mc_topic_name(r->cfg, topic_suffix, topic, sizeof topic);
    const char *topics[] = {topic};
    return mc_list_end_offsets(r->producer, topics, 1, partitions, n, ends, timeout_ms, err,
                               errlen);
}

static const mc_ctx_ops runner_ctx_ops = {
    .output = ctx_output,
    .produce = ctx_produce,
    .wakeup_at = ctx_wakeup_at,
    .now_ms = ctx_now_ms,
    .set_commit = ctx_set_commit,
    .request_commit = ctx_request_commit,
    .set_ready = ctx_set_ready,
    .alive = ctx_alive,
    .assignment_lost = ctx_assignment_lost,
    .pause = ctx_pause,
    .watch_fd = ctx_watch_fd,
    .restore = ctx_restore,
    .partition_count = ctx_partition_count,
    .end_offset = ctx_end_offset,
    .position = ctx_position,
    .high_watermarks = ctx_high_watermarks,
    .stable_ends = ctx_stable_ends,
    .end_offsets = ctx_end_offsets,
};

/* ---- error classes ---------------------------------------------------------- */

typedef enum txn_verdict { TXN_RETRY, TXN_ABORT, TXN_FATAL } txn_verdict;

/* The one place that classifies a transactional error. Consumes error. */
static txn_verdict txn_error(mc_runner *r, const char *what, rd_kafka_error_t *error)
{
    txn_verdict v;
    const char *cls;
    if (rd_kafka_error_is_fatal(error)) {
        v = TXN_FATAL;
        cls = "fatal";
    } else if (rd_kafka_error_txn_requires_abort(error)) {
        v = TXN_ABORT;
        cls = "abortable";
    } else if (rd_kafka_error_is_retriable(error)) {
        v = TXN_RETRY;
        cls = "retriable";
    } else {
        /* Neither retriable nor abortable (e.g. a state error): nothing safe
         * is left to do but exit and let a fresh process take over. */
        v = TXN_FATAL;
        cls = "unexpected";
    }
    mc_log(&r->logger, v == TXN_RETRY ? MC_LOG_WARN : MC_LOG_ERROR, "transaction error", "op", what,
           "class", cls, "error", rd_kafka_error_string(error), (const char *)NULL);
    if (v == TXN_FATAL)
        set_fatal(r, what, rd_kafka_error_string(error));
    rd_kafka_error_destroy(error);
    return v;
}

/* ---- transactions ------------------------------------------------------------ */

/* A suspect handled in the transaction that just ended is done with when it
 * committed; when it aborted it comes back, still confirmed, to be handled
 * again (not processed again: its outputs would be refused again). */
static void settle_poison(mc_runner *r, bool committed)
{
    for (size_t i = r->n_poison; i-- > 0;) {
        if (!r->poison[i].handled)
            continue;
        if (committed)
            remove_poison(r, &r->poison[i]);
        else
            r->poison[i].handled = false;
    }
}

static void reset_txn(mc_runner *r, bool committed)
{
    settle_poison(r, committed);
    r->txn_failed = false;
    for (size_t i = 0; i < r->n_outputs; i++) {
        if (committed)
            mc_counter_add(r->outputs[i].records_out, r->outputs[i].pending);
        r->outputs[i].pending = 0;
    }
    for (size_t t = 0; t < r->n_inputs; t++) {
        input_topic *in = &r->inputs[t];
        if (committed)
            mc_counter_add(in->records_in, in->pending);
        in->pending = 0;
        for (int32_t i = 0; i < in->n_parts; i++) {
            in->parts[i].dirty = false;
            if (!committed)
                in->parts[i].next = -1; /* the rewind starts again from what is committed */
        }
    }
    r->txn_open = false;
    r->txn_dirty = false;
    r->txn_produced = false;
    r->txn_records = 0;
    r->n_refs = 0;
    r->commit_requested = false;
    r->commit_awaits_outputs = false;
    r->delivery_failed = false;
}

/* The transaction committed or aborted: the next one is the next producer's
 * (see TXN_PRODUCERS). Not after an abort that failed: its producer still
 * has it open, and only that producer's next begin notices (and stops us). */
static void pass_turn(mc_runner *r)
{
    r->turn = (r->turn + 1) % TXN_PRODUCERS;
    r->producer = r->producers[r->turn];
}

static int begin_txn(mc_runner *r)
{
    if (r->txn_open)
        return 0;
    rd_kafka_error_t *error = rd_kafka_begin_transaction(r->producer);
    if (error) {
        /* begin only fails on a programming or fatal state error */
        txn_error(r, "begin_transaction", error);
        set_fatal(r, "begin_transaction", "cannot begin a transaction");
        return -1;
    }
    r->txn_open = true;
    r->txn_started_ms = r->now_mono_ms;
    return 0;
}

/* What a commit carries for one partition: the processor's offset and
 * metadata when it set them, else the processed position (or, untouched,
 * what was committed last). -1 when there is nothing to commit. */
static int64_t offset_to_commit(const input_part *p)
{
    if (p->md_offset >= 0)
        return p->md_offset;
    if (p->next >= 0)
        return p->next;
    return p->committed;
}

static void add_offset(rd_kafka_topic_partition_list_t *l, const char *topic, int32_t partition,
                       int64_t offset, const char *md)
{
    rd_kafka_topic_partition_t *o = rd_kafka_topic_partition_list_add(l, topic, partition);
    o->offset = offset;
    if (md) {
        o->metadata = strdup(md);
        o->metadata_size = o->metadata ? strlen(md) : 0;
    }
}

/* The offsets this transaction commits: every partition whose input advanced
 * or whose commit the processor set. A transaction that would carry none
 * (outputs of a timer alone: the store's hand-offs) re-commits one
 * partition as it stands, because the offsets are what makes the group
 * coordinator check that we still own our partitions: a process that was
 * frozen past its session timeout must not commit what its successor now
 * does. Caller destroys. */
static rd_kafka_topic_partition_list_t *current_offsets(mc_runner *r)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(16);
    const input_part *fence = NULL;
    const char *fence_topic = NULL;
    int32_t fence_partition = -1;
    for (size_t t = 0; t < r->n_inputs; t++) {
        input_topic *in = &r->inputs[t];
        for (int32_t i = 0; i < in->n_parts; i++) {
            const input_part *p = &in->parts[i];
            if (!p->assigned)
                continue;
            int64_t off = offset_to_commit(p);
            if (off < 0)
                continue;
            if (p->dirty || p->md)
                add_offset(l, in->name, i, off, p->md ? p->md : p->committed_md);
            else if (!fence) {
                fence = p;
                fence_topic = in->name;
                fence_partition = i;
            }
        }
    }
    if (l->cnt == 0 && fence && r->txn_produced)
        add_offset(l, fence_topic, fence_partition, fence->committed, fence->committed_md);
    return l;
}

/* After a commit: what was sent is the new baseline. */
static void note_committed(mc_runner *r, const rd_kafka_topic_partition_list_t *l)
{
    for (int i = 0; i < l->cnt; i++) {
        input_part *p = part_named(r, l->elems[i].topic, l->elems[i].partition);
        if (!p)
            continue;
        p->committed = l->elems[i].offset;
        set_str(&p->committed_md, l->elems[i].metadata_size ? l->elems[i].metadata : NULL);
    }
}

/* Records that an input is done with (processed, given to refused(), or
 * dead-lettered). */
static void mark_processed(mc_runner *r, size_t topic, int32_t partition, int64_t offset)
{
    input_part *p = part_of(r, topic, partition);
    if (p) {
        p->next = offset + 1;
        p->dirty = true;
    }
}

static void rewind_to_committed(mc_runner *r);

/* Everything since the last commit is about to be undone: the processor
 * forgets its work on every assigned partition (on_revoke), and the rewind
 * or the revoke that follows the abort starts it again. */
static void drop_processor_work(mc_runner *r)
{
    if (!r->proc->on_revoke)
        return;
    /* Ours, not rd_kafka_assignment(): a consumer fenced as a static
     * member unassigns by itself, with no rebalance callback, and the
     * processor would keep what it holds until it is freed. */
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(16);
    for (size_t t = 0; t < r->n_inputs; t++)
        for (int32_t i = 0; i < r->inputs[t].n_parts; i++)
            if (r->inputs[t].parts[i].assigned)
                rd_kafka_topic_partition_list_add(parts, r->inputs[t].name, i);
    if (parts->cnt > 0)
        r->proc->on_revoke(r->self, parts, &r->ctx);
    rd_kafka_topic_partition_list_destroy(parts);
}

/* Aborts the open transaction and rewinds input and state to the last commit
 * (not while partitions are being revoked: they are about to go anyway).
 * Returns -1 when even the abort failed (fatal). */
static int abort_txn(mc_runner *r, const char *why)
{
    if (!r->txn_open)
        return 0;
    mc_log(&r->logger, MC_LOG_WARN, "aborting transaction", "reason", why, (const char *)NULL);
    /* The processor drops its work first: the abort can wait seconds on the
     * coordinator (an epoch bump after a broker restart), and an executor's
     * HTTP thread would meanwhile make calls the rewind makes again. */
    drop_processor_work(r);
    for (;;) {
        rd_kafka_error_t *error = rd_kafka_abort_transaction(r->producer, 30000);
        if (!error)
            break;
        if (txn_error(r, "abort_transaction", error) != TXN_RETRY) {
            /* The processor's work is dropped: committing anything now could
             * mark records finished whose outputs were aborted. */
            set_fatal(r, "abort_transaction", "the abort itself failed");
            return -1;
        }
    }
    mc_counter_add(r->txn_aborted, 1);
    reset_txn(r, false);
    pass_turn(r);
    if (!r->in_revoke)
        rewind_to_committed(r);
    return 0;
}

static int send_offsets(mc_runner *r, rd_kafka_topic_partition_list_t *offsets)
{
    for (;;) {
        rd_kafka_consumer_group_metadata_t *cgmd = rd_kafka_consumer_group_metadata(r->consumer);
        rd_kafka_error_t *error =
            rd_kafka_send_offsets_to_transaction(r->producer, offsets, cgmd, 30000);
        rd_kafka_consumer_group_metadata_destroy(cgmd);
        if (!error)
            return 0;
        txn_verdict v = txn_error(r, "send_offsets_to_transaction", error);
        if (v == TXN_RETRY)
            continue;
        if (v == TXN_ABORT)
            return abort_txn(r, "send_offsets_to_transaction failed") == 0 ? 1 : -1;
        return -1;
    }
}

/* Flushes in steps of a millisecond, for at most AWAIT_OUTPUTS_MS, until the
 * broker has acknowledged every output; for a commit the processor asked for
 * now (an output that cannot wait: a task due already, fired by the router or
 * the wheel).
 * commit_transaction flushes too, but by polling in steps of up to 10 ms
 * that only a delivery report ends early, and the runner asks for error
 * reports only (every report cost more than it saved at 5,000 tasks/s,
 * README "Performance"): such a commit waited out most of a step, 7 ms of
 * each hop a task due now takes. A flush, unlike a poll, also sends what
 * linger.ms still holds back. Other commits (the executor's Results, the
 * wheel's fires a lead ahead of their time) keep librdkafka's pace: nothing
 * waits on them, and a flush that overrides linger.ms makes more, smaller
 * requests to a broker that may be short of CPU already (flushing every
 * commit asked for made tasks due 2 s ahead at 5,000/s later: README). What is unacknowledged after
 * the bound is left to commit_transaction's own flush and its error handling. */
static void await_outputs(mc_runner *r)
{
    int64_t until = mc_mono_ms() + AWAIT_OUTPUTS_MS;
    /* After a failed delivery the transaction is abortable and librdkafka
     * sends nothing more: the queue would never empty. */
    while (!r->delivery_failed && rd_kafka_outq_len(r->producer) > 0 && mc_mono_ms() < until)
        rd_kafka_flush(r->producer, 1);
}

/* Commits the open transaction with the input positions. Returns 0 when
 * committed; 1 when it had to abort (and rewound input and state: records
 * polled before this call will come again); -1 on a fatal error. */
static int commit_txn(mc_runner *r)
{
    if (!r->txn_open)
        return 0;
    if (!r->txn_dirty) {
        /* Nothing consumed or produced: an empty commit is just an abort. */
        rd_kafka_error_t *error = rd_kafka_abort_transaction(r->producer, 30000);
        bool aborted = !error;
        if (error && txn_error(r, "abort_transaction (empty)", error) == TXN_FATAL)
            return -1;
        reset_txn(r, false);
        if (aborted)
            pass_turn(r);
        return 0;
    }
    if (r->proc->prepare_commit && r->proc->prepare_commit(r->self, &r->ctx) != 0) {
        set_fatal(r, "prepare_commit", r->proc->name);
        return -1;
    }
    int64_t t0 = mc_mono_ms();
    rd_kafka_topic_partition_list_t *offsets = current_offsets(r);
    if (offsets->cnt > 0) {
        int rc = send_offsets(r, offsets);
        if (rc != 0) {
            rd_kafka_topic_partition_list_destroy(offsets);
            return rc;
        }
    }
    if (r->commit_awaits_outputs)
        await_outputs(r);
    for (;;) {
        rd_kafka_error_t *error = rd_kafka_commit_transaction(r->producer, 30000);
        if (!error)
            break;
        txn_verdict v = txn_error(r, "commit_transaction", error);
        if (v == TXN_RETRY)
            continue;
        rd_kafka_topic_partition_list_destroy(offsets);
        if (v == TXN_ABORT)
            return abort_txn(r, "commit_transaction failed") == 0 ? 1 : -1;
        return -1;
    }
    note_committed(r, offsets);
    rd_kafka_topic_partition_list_destroy(offsets);
    mc_histogram_observe(r->commit_latency, (double)(mc_mono_ms() - t0) / 1000.0);
    mc_counter_add(r->txn_committed, 1);
    reset_txn(r, true);
    pass_turn(r);
    return 0;
}

/* After an abort the consumer has run ahead of what is committed and the
 * processor's memory holds the effects of the aborted records. Seek every
 * assigned partition back to its committed offset and make the processor
 * rebuild its state for them, exactly as if they had been newly assigned. */
/* Forgets what the runner knew of the partitions it thinks it has and the
 * consumer no longer does (drop_processor_work dropped them from the
 * processor), so the rewind leaves no position of theirs to commit. */
static void forget_unassigned(mc_runner *r, const rd_kafka_topic_partition_list_t *parts)
{
    for (size_t t = 0; t < r->n_inputs; t++)
        for (int32_t i = 0; i < r->inputs[t].n_parts; i++)
            if (r->inputs[t].parts[i].assigned &&
                !rd_kafka_topic_partition_list_find(parts, r->inputs[t].name, i))
                part_reset(&r->inputs[t].parts[i], false, -1, NULL);
}

static void rewind_to_committed(mc_runner *r)
{
    rd_kafka_topic_partition_list_t *parts = NULL;
    if (rd_kafka_assignment(r->consumer, &parts) || !parts)
        return;
    forget_unassigned(r, parts);
    if (parts->cnt == 0) {
        rd_kafka_topic_partition_list_destroy(parts);
        return;
    }
    /* abort_txn dropped the processor's work on these partitions already. */
    rd_kafka_resp_err_t err = rd_kafka_committed(r->consumer, parts, 30000);
    if (err) {
        set_fatal(r, "cannot read committed offsets to rewind", rd_kafka_err2str(err));
        rd_kafka_topic_partition_list_destroy(parts);
        return;
    }
    take_assignment(r, parts);
    for (int i = 0; i < parts->cnt; i++)
        if (parts->elems[i].offset < 0)
            parts->elems[i].offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_error_t *error = rd_kafka_seek_partitions(r->consumer, parts, 30000);
    if (error) {
        set_fatal(r, "cannot seek to committed offsets", rd_kafka_error_string(error));
        rd_kafka_error_destroy(error);
    }
    /* on_assign may write (the router its layout markers): in a transaction. */
    if (!atomic_load(&r->fatal) && r->proc->on_assign &&
        (begin_txn(r) != 0 || r->proc->on_assign(r->self, parts, &r->ctx) != 0))
        set_fatal(r, "on_assign after a rewind", r->proc->name);
    rd_kafka_topic_partition_list_destroy(parts);
}

/* ---- rebalances ------------------------------------------------------------- */

static void read_clocks(mc_runner *r)
{
    r->now_mono_ms = mc_mono_ms();
    r->now_wall_ms = mc_now_ms();
    atomic_store(&r->loop_heartbeat_ms, r->now_mono_ms);
}

static void on_partitions_assigned(mc_runner *r, rd_kafka_t *rk,
                                   rd_kafka_topic_partition_list_t *parts)
{
    if (r->leaving) {
        rd_kafka_assign(rk, parts);
        r->assigned_while_leaving = true;
        return;
    }
    /* Read the committed offsets (and metadata) ourselves so the processor
     * sees exactly where consumption resumes. */
    rd_kafka_resp_err_t cerr = rd_kafka_committed(rk, parts, 30000);
    if (cerr) {
        set_fatal(r, "cannot read committed offsets", rd_kafka_err2str(cerr));
        rd_kafka_assign(rk, NULL);
        return;
    }
    rd_kafka_assign(rk, parts);
    take_assignment(r, parts);
    mc_logf(&r->logger, MC_LOG_INFO, "assigned %d partitions", parts->cnt);
    /* on_assign may write (the router its layout markers): in a transaction,
     * which the revoke before this one may have committed. Not after a fatal
     * error (that revoke's commit, say): its transaction may still be open
     * on the partitions given back, and a restore would wait for it until
     * the broker's transaction timeout - only to stop then. */
    if (r->proc->on_assign && !atomic_load(&r->fatal) &&
        (begin_txn(r) != 0 || r->proc->on_assign(r->self, parts, &r->ctx) != 0))
        set_fatal(r, "on_assign", r->proc->name);
    /* After on_assign: the gauge says "these partitions are served". */
    mc_gauge_set(r->assigned_partitions, parts->cnt);
    atomic_store(&r->assigned_once, true);
}

static void on_partitions_revoked(mc_runner *r, rd_kafka_t *rk,
                                  rd_kafka_topic_partition_list_t *parts)
{
    /* Revoked: commit what we did so the next owner starts after it, then
     * the processor lets go. Lost (we were kicked out of the group): our
     * transaction may no longer commit its offsets, so the processor lets go
     * first - the abort can wait on the coordinator, and no call of a lost
     * partition should start meanwhile - and we abort; the new owner redoes it. */
    if (r->assigned_while_leaving) {
        r->assigned_while_leaving = false;
        rd_kafka_assign(rk, NULL);
        return;
    }
    bool lost = rd_kafka_assignment_lost(rk);
    if (lost) {
        mc_log(&r->logger, MC_LOG_WARN, "partitions lost", (const char *)NULL);
        if (r->proc->on_revoke)
            r->proc->on_revoke(r->self, parts, &r->ctx);
        if (r->txn_open) {
            rd_kafka_error_t *error = rd_kafka_abort_transaction(r->producer, 30000);
            bool aborted = !error;
            if (error)
                txn_error(r, "abort_transaction (lost)", error);
            else
                mc_counter_add(r->txn_aborted, 1);
            reset_txn(r, false);
            if (aborted)
                pass_turn(r);
        }
    } else {
        if (r->txn_open) {
            r->in_revoke = true;
            commit_txn(r);
            r->in_revoke = false;
        }
        if (r->proc->on_revoke)
            r->proc->on_revoke(r->self, parts, &r->ctx);
    }
    /* Whatever we knew of these partitions is stale once another instance
     * may have moved them on: positions, suspects, metadata. */
    drop_assignment(r, parts);
    r->n_poison = 0;
    mc_logf(&r->logger, MC_LOG_INFO, "revoked %d partitions", parts->cnt);
    mc_gauge_set(r->assigned_partitions, 0);
    rd_kafka_assign(rk, NULL);
}

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    mc_runner *r = opaque;
    read_clocks(r); /* the processor's callbacks see the time of the rebalance */
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        on_partitions_assigned(r, rk, parts);
    } else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
        on_partitions_revoked(r, rk, parts);
    } else {
        mc_log(&r->logger, MC_LOG_ERROR, "rebalance failed", "error", rd_kafka_err2str(err),
               (const char *)NULL);
        rd_kafka_assign(rk, NULL);
    }
}

/* ---- readiness and health ----------------------------------------------------- */

static bool ready_check(void *arg, char *why, size_t whylen)
{
    mc_runner *r = arg;
    if (!atomic_load(&r->started)) {
        snprintf(why, whylen, "starting (transactions not initialised yet)");
        return false;
    }
    if (!atomic_load(&r->processor_ready)) {
        snprintf(why, whylen, "restoring state");
        return false;
    }
    if (!atomic_load(&r->assigned_once)) {
        snprintf(why, whylen, "waiting for a partition assignment");
        return false;
    }
    return true;
}

static bool health_check(void *arg, char *why, size_t whylen)
{
    mc_runner *r = arg;
    if (atomic_load(&r->fatal)) {
        snprintf(why, whylen, "fatal Kafka error, exiting");
        return false;
    }
    long long hb = atomic_load(&r->loop_heartbeat_ms);
    if (hb && mc_mono_ms() - hb > 60000) {
        snprintf(why, whylen, "processing loop stuck for %lld ms", mc_mono_ms() - hb);
        return false;
    }
    return true;
}

/* Lag = high watermark - position, from librdkafka's cached watermarks (no
 * broker round trip), summed per input topic once a second. */
static void update_lag(mc_runner *r)
{
    int64_t now = r->now_mono_ms;
    if (now - r->last_lag_ms < 1000)
        return;
    r->last_lag_ms = now;
    rd_kafka_topic_partition_list_t *parts = NULL;
    if (rd_kafka_assignment(r->consumer, &parts) || !parts)
        return;
    rd_kafka_position(r->consumer, parts);
    for (size_t t = 0; t < r->n_inputs; t++) {
        int64_t lag = 0;
        for (int i = 0; i < parts->cnt; i++) {
            rd_kafka_topic_partition_t *p = &parts->elems[i];
            if (strcmp(p->topic, r->inputs[t].name) != 0)
                continue;
            int64_t lo, hi;
            if (rd_kafka_get_watermark_offsets(r->consumer, p->topic, p->partition, &lo, &hi))
                continue;
            int64_t pos = p->offset >= 0 ? p->offset : lo;
            if (hi > pos)
                lag += hi - pos;
        }
        mc_gauge_set(r->inputs[t].lag, (double)lag);
    }
    rd_kafka_topic_partition_list_destroy(parts);
}

/* ---- set-up ---------------------------------------------------------------- */

/* The consumer: read only committed data, never commit on its own (offsets
 * go through the producer's transaction), range assignment so partition N of
 * every input topic lands on the same instance. */
static rd_kafka_t *make_consumer(mc_runner *r, char *err, size_t errlen)
{
    const mc_config *cfg = r->cfg;
    rd_kafka_conf_t *cc = mc_kafka_conf_new(cfg, r, err, errlen);
    if (!cc)
        return NULL;
    /* librdkafka's default session (45 s) is long for a scheduler. */
    if (mc_kafka_conf_default(cfg, cc, "session.timeout.ms", MC_SESSION_TIMEOUT_MS, err, errlen) ||
        mc_kafka_conf_default(cfg, cc, "heartbeat.interval.ms", "2000", err, errlen) ||
        /* A record committed upstream reaches us within this when the broker
         * has nothing else to send; librdkafka's default (500 ms) would put
         * half a second into every hop - a cancel sent before the due time
         * would reach the wheel after it. */
        mc_kafka_conf_default(cfg, cc, "fetch.wait.max.ms", "20", err, errlen) ||
        /* A group takes new partitions at the metadata refresh after
         * they appear (mooncakectl partitions grow waits for it); five
         * minutes, the default, would hold a growth that long. */
        mc_kafka_conf_default(cfg, cc, "topic.metadata.refresh.interval.ms", "5000", err, errlen))
        goto fail;
    for (const char *const *kv = r->proc->consumer_defaults; kv && kv[0] && kv[1]; kv += 2)
        if (mc_kafka_conf_default(cfg, cc, kv[0], kv[1], err, errlen))
            goto fail;
    if (mc_kafka_conf_set(cc, "group.id", r->group_id, err, errlen) ||
        mc_kafka_conf_set(cc, "isolation.level", "read_committed", err, errlen) ||
        mc_kafka_conf_set(cc, "enable.auto.commit", "false", err, errlen) ||
        mc_kafka_conf_set(cc, "auto.offset.reset", "earliest", err, errlen) ||
        mc_kafka_conf_set(cc, "partition.assignment.strategy", "range", err, errlen) ||
        mc_kafka_conf_set(cc, "max.poll.interval.ms", TEXT_OF(MAX_POLL_INTERVAL_MS), err, errlen) ||
        /* Static membership (KIP-345): an instance killed and restarted under
         * the same id takes its member slot and its partitions back at once,
         * instead of waiting for the dead member's session to expire and a
         * rebalance. The id is the transactional one, stable per replica;
         * a graceful stop still leaves the group (leave_group). */
        mc_kafka_conf_set(cc, "group.instance.id", r->transactional_id, err, errlen))
        goto fail;
    if (r->proc->advertises) {
        char id[512], why[256];
        if (mc_advertised_client_id(cfg, id, sizeof id, why, sizeof why) != 0)
            mc_log(&r->logger, MC_LOG_WARN, "other instances cannot forward questions here", "why",
                   why, (const char *)NULL);
        else if (mc_kafka_conf_set(cc, "client.id", id, err, errlen))
            goto fail;
    }
    rd_kafka_conf_set_rebalance_cb(cc, rebalance_cb);
    rd_kafka_t *rk = mc_kafka_new(RD_KAFKA_CONSUMER, cc, "consumer", err, errlen);
    if (rk)
        rd_kafka_poll_set_consumer(rk);
    return rk;
fail:
    rd_kafka_conf_destroy(cc);
    return NULL;
}

/* Transactional producer number `turn` (see TXN_PRODUCERS): the first one's
 * transactional.id is the instance's, the others' add ~turn. Exactly-once
 * needs the first settings as they are; the tuning after them yields to -X. */
static rd_kafka_t *make_producer(mc_runner *r, int turn, char *err, size_t errlen)
{
    const mc_config *cfg = r->cfg;
    rd_kafka_conf_t *pc = mc_kafka_conf_new(cfg, r, err, errlen);
    if (!pc)
        return NULL;
    char buf[32], txid[sizeof r->transactional_id + 16];
    snprintf(buf, sizeof buf, "%d", cfg->transaction_timeout_ms);
    if (turn == 0)
        snprintf(txid, sizeof txid, "%s", r->transactional_id);
    else
        snprintf(txid, sizeof txid, "%s~%d", r->transactional_id, turn);
    if (mc_kafka_conf_set(pc, "transactional.id", txid, err, errlen) ||
        mc_kafka_conf_set(pc, "transaction.timeout.ms", buf, err, errlen) ||
        /* Error reports only, though every report would make each commit
         * 7 ms faster (commit_transaction's flush polls in steps of up to
         * 10 ms that only a report wakes early): at 5,000 tasks/s that did
         * more harm than good here. README "Performance" has the A/B. */
        mc_kafka_conf_set(pc, "delivery.report.only.error", "true", err, errlen) ||
        mc_kafka_conf_default(cfg, pc, "linger.ms", "5", err, errlen) ||
        /* The broker answers CONCURRENT_TRANSACTIONS to the next
         * transaction's first requests while it still writes the last one's
         * markers; librdkafka retries AddOffsetsToTxn after retry.backoff.ms,
         * and the default 100 ms would put a floor under every commit (the
         * Java client uses 20 ms for this case, KAFKA-5477). */
        mc_kafka_conf_default(cfg, pc, "retry.backoff.ms", "5", err, errlen) ||
        mc_kafka_conf_default(cfg, pc, "queue.buffering.max.messages", "1000000", err, errlen)) {
        rd_kafka_conf_destroy(pc);
        return NULL;
    }
    rd_kafka_conf_set_dr_msg_cb(pc, dr_msg_cb);
    return mc_kafka_new(RD_KAFKA_PRODUCER, pc, "transactional producer", err, errlen);
}

static void register_metrics(mc_runner *r)
{
    char labels[400];
    snprintf(labels, sizeof labels, "processor=\"%s\"", r->proc->name);
    r->txn_committed = mc_metrics_counter(r->metrics, "mooncake_transactions_committed_total",
                                          "Kafka transactions committed", labels);
    r->txn_aborted = mc_metrics_counter(r->metrics, "mooncake_transactions_aborted_total",
                                        "Kafka transactions aborted", labels);
    static const double bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                    0.1,   0.25,   0.5,   1,    2.5,   5};
    r->commit_latency =
        mc_metrics_histogram(r->metrics, "mooncake_commit_latency_seconds",
                             "Time to send offsets and commit one transaction", labels, bounds, 12);
    r->poison_dead = mc_metrics_counter(
        r->metrics, "mooncake_refused_outputs_dead_lettered_total",
        "Inputs handled as refused because Kafka refused their output for good", labels);
    r->assigned_partitions = mc_metrics_gauge(r->metrics, "mooncake_assigned_partitions",
                                              "Input partitions assigned to this instance", labels);
    for (const char *const *t = r->proc->input_topics; *t && r->n_inputs < MAX_INPUTS; t++) {
        input_topic *in = &r->inputs[r->n_inputs++];
        mc_topic_name(r->cfg, *t, in->name, sizeof in->name);
        snprintf(labels, sizeof labels, "processor=\"%s\",topic=\"%s\"", r->proc->name, in->name);
        in->records_in = mc_metrics_counter(r->metrics, "mooncake_records_in_total",
                                            "Records consumed, counted when committed", labels);
        in->lag =
            mc_metrics_gauge(r->metrics, "mooncake_consumer_lag",
                             "Records behind the high watermark on assigned partitions", labels);
    }
}

mc_runner *mc_runner_new(const mc_processor *p, const mc_config *cfg, mc_metrics *metrics,
                         mc_http_server *http, char *err, size_t errlen)
{
    mc_runner *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->logger = (mc_logger){.level = cfg->log_level, .json = cfg->log_json, .role = p->name};
    r->proc = p;
    r->cfg = cfg;
    r->metrics = metrics;
    r->ctx = (mc_ctx){.ops = &runner_ctx_ops,
                      .cfg = cfg,
                      .logger = &r->logger,
                      .metrics = metrics,
                      .processor_name = p->name};
    r->wakeup_ms = INT64_MAX;
    r->queue_pipe[0] = r->queue_pipe[1] = -1;
    atomic_init(&r->stop, false);
    atomic_init(&r->fatal, false);
    atomic_init(&r->processor_ready, true);
    atomic_init(&r->started, false);
    atomic_init(&r->assigned_once, false);
    atomic_init(&r->loop_heartbeat_ms, 0);
    snprintf(r->group_id, sizeof r->group_id, "%s%s", cfg->topic_prefix, p->name);
    snprintf(r->transactional_id, sizeof r->transactional_id, "%s%s-%s", cfg->topic_prefix, p->name,
             cfg->instance_id);
    read_clocks(r);
    if (!(r->consumer = make_consumer(r, err, errlen)))
        goto fail;
    for (int i = 0; i < TXN_PRODUCERS; i++)
        if (!(r->producers[i] = make_producer(r, i, err, errlen)))
            goto fail;
    r->producer = r->producers[0];
    register_metrics(r);
    r->self = p->create(&r->ctx, p->create_arg, err, errlen);
    if (!r->self)
        goto fail;
    if (http) {
        mc_http_add_check(http, "ready", p->name, ready_check, r);
        mc_http_add_check(http, "health", p->name, health_check, r);
    }
    return r;
fail:
    mc_runner_free(r);
    return NULL;
}

/* ---- one record ------------------------------------------------------------------ */

/* A record of a partition whose processor gave a record back: it comes again
 * from there once resumed, so anything at or after it is not taken now. */
static bool given_back(const input_part *p, int64_t offset)
{
    return p && p->resume_at >= 0 && offset >= p->resume_at;
}

/* Hands a confirmed poisoned input to the processor's refused() hook, or to
 * the dead topic. The input stays a suspect until the transaction that did
 * so commits: after the abort that found the poison, librdkafka bumps the
 * epoch, and the next transaction may fail with "skipped sequence numbers"
 * - at a produce of the hook, or at the commit (the router's hook writes to
 * the very partition that refused the output) - and the rewind then brings
 * the input back here, instead of the process stopping or the input going
 * through process() and its refused output again, for ever
 * (test_router's refused-output test). */
static int handle_refused(mc_runner *r, const mc_record *rec, const txn_ref *in, poisoned_input *p)
{
    char reason[sizeof p->reason];
    memcpy(reason, p->reason, sizeof reason);
    r->current_ref = add_ref(r, in);
    r->in_process = true;
    int rc = r->proc->refused ? r->proc->refused(r->self, rec, reason, &r->ctx)
                              : mc_ctx_dead_letter(&r->ctx, rec, reason, NULL);
    r->in_process = false;
    r->current_ref = 0;
    if (rc != 0 && r->txn_failed)
        return callback_failed(r, "handling a refused record");
    if (rc != 0) {
        set_fatal(r, "handling a refused record", reason);
        return -1;
    }
    if ((p = find_poison(r, in)) != NULL) /* add_poison may have moved the table */
        p->handled = true;
    mc_counter_add(r->poison_dead, 1);
    mark_processed(r, in->topic, in->partition, in->offset);
    return 0;
}

/* One consumed record, inside the open transaction. Returns -1 to leave the
 * loop (fatal), 0 otherwise. */
static int handle_record(mc_runner *r, const rd_kafka_message_t *m)
{
    txn_ref in = {input_index(r, rd_kafka_topic_name(m->rkt)), m->partition, m->offset, false};
    input_part *ip = part_of(r, in.topic, in.partition);
    if (given_back(ip, m->offset))
        return 0;
    mc_record rec = mc_kafka_record(m, rd_kafka_topic_name(m->rkt));
    r->inputs[in.topic].pending++;
    r->txn_records++;
    r->txn_dirty = true;
    poisoned_input *p = r->n_poison ? find_poison(r, &in) : NULL;
    if (p && p->confirmed)
        return handle_refused(r, &rec, &in, p);
    r->current_ref = add_ref(r, &in);
    r->poison_found = false;
    r->in_process = true;
    int rc = r->proc->process(r->self, &rec, &r->ctx);
    r->in_process = false;
    r->current_ref = 0;
    ip = part_of(r, in.topic, in.partition); /* the table may have grown meanwhile */
    if (rc == MC_PROCESS_LATER && ip) {
        /* Given back: not taken, not counted. */
        ip->resume_at = m->offset;
        r->inputs[in.topic].pending--;
        r->txn_records--;
        return 0;
    }
    if (rc != 0 && r->poison_found) {
        /* Its other outputs may be in the transaction: abort, and the
         * rewind brings it back to be handled as refused. */
        r->txn_failed = false;
        return abort_txn(r, "an output was refused");
    }
    if (rc != 0)
        return callback_failed(r, "process");
    mark_processed(r, in.topic, in.partition, in.offset);
    return 0;
}

/* ---- the loop ------------------------------------------------------------------- */

/* --commit-interval-ms, or the processor's floor when that is longer. */
static int64_t commit_interval(const mc_runner *r)
{
    int64_t floor = r->proc->min_commit_interval_ms;
    return floor > r->cfg->commit_interval_ms ? floor : r->cfg->commit_interval_ms;
}

static int poll_timeout(const mc_runner *r)
{
    int64_t timeout = 100;
    if (r->txn_open && r->txn_dirty) {
        int64_t left = r->txn_started_ms + commit_interval(r) - r->now_mono_ms;
        if (left < timeout)
            timeout = left;
    }
    if (r->wakeup_ms != INT64_MAX) {
        int64_t left = r->wakeup_ms - r->now_wall_ms;
        if (left < timeout)
            timeout = left;
    }
    return timeout < 0 ? 0 : (int)timeout;
}

static bool commit_due_by_size_or_age(const mc_runner *r)
{
    if (!r->txn_open)
        return false;
    if (r->txn_records >= (uint64_t)r->cfg->commit_max_records)
        return true;
    return r->txn_dirty && r->now_mono_ms - r->txn_started_ms >= commit_interval(r);
}

static bool commit_due(const mc_runner *r)
{
    return (r->txn_open && r->commit_requested && r->txn_dirty) || commit_due_by_size_or_age(r);
}

/* Waits in poll(2) for input, the processor's descriptors or the timeout,
 * then runs the callbacks of the descriptors that are ready. A callback may
 * add or remove watches, so each is looked up again by descriptor before it
 * runs. Without descriptors the wait happens in the consumer's poll instead.
 * Returns the timeout left for that poll, or -1 on a fatal error. */
static int wait_for_events(mc_runner *r)
{
    read_clocks(r);
    int timeout = poll_timeout(r);
    if (r->watches.n == 0)
        return timeout;
    size_t n = r->watches.n + 1;
    int rc = mc_fdset_poll(&r->watches, r->queue_pipe[0], r->input_backlog ? 0 : timeout);
    struct pollfd *pfds = r->watches.pfds;
    read_clocks(r);
    if (rc < 0) {
        if (errno == EINTR)
            return 0;
        set_fatal(r, "poll", strerror(errno));
        return -1;
    }
    if (pfds[0].revents) {
        char drain[256];
        while (read(r->queue_pipe[0], drain, sizeof drain) > 0)
            ;
    }
    for (size_t i = 1; i < n && rc > 0; i++) {
        if (!pfds[i].revents)
            continue;
        const mc_fd_entry *e = mc_fdset_find(&r->watches, pfds[i].fd);
        if (!e)
            continue;
        mc_fd_callback cb = (mc_fd_callback)e->cb;
        void *arg = e->arg;
        if (begin_txn(r) != 0)
            return -1;
        if (cb(arg, pfds[i].fd, pfds[i].revents, &r->ctx) != 0 &&
            callback_failed(r, "descriptor callback") != 0)
            return -1;
    }
    return 0; /* the wait covered it: take the input without blocking */
}

/* Takes what has arrived, up to a batch: the first poll waits up to timeout,
 * the rest take only what is already there, so that a processor which asks
 * for a commit after every punctuate (the wheel) still consumes at full
 * speed. Returns -1 to leave the loop. */
static int take_input_batch(mc_runner *r, int timeout)
{
    int64_t batch_start = -1;
    r->input_backlog = true; /* unless the queue is seen empty below */
    for (int n = 0; n < POLL_BATCH; n++) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(r->consumer, n == 0 ? timeout : 0);
        if (n == 0 || (n & 63) == 0)
            read_clocks(r);
        if (!m) {
            r->input_backlog = false;
            return 0;
        }
        if (batch_start < 0)
            batch_start = r->now_mono_ms;
        int rc = 0;
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                mc_log(&r->logger, MC_LOG_WARN, "consumer error", "error",
                       rd_kafka_message_errstr(m), (const char *)NULL);
            char why[512];
            if (rd_kafka_fatal_error(r->consumer, why, sizeof why))
                set_fatal(r, "consumer", why);
        } else if (begin_txn(r) != 0 || handle_record(r, m) != 0) {
            /* begin again above: a rebalance callback inside this poll may
             * have committed the transaction we had open. */
            rc = -1;
        }
        rd_kafka_message_destroy(m);
        if (rc != 0)
            return -1;
        /* Not on a commit request or a due wake-up: those are served right
         * after the batch, which is short, and breaking for them would make
         * a processor that fires continuously (the wheel) consume one record
         * per commit. */
        if (atomic_load(&r->fatal) || commit_due_by_size_or_age(r) ||
            r->now_mono_ms - batch_start >= POLL_BATCH_MS)
            return 0;
    }
    return 0;
}

static int punctuate_if_due(mc_runner *r)
{
    if (!r->proc->punctuate || r->wakeup_ms == INT64_MAX || r->now_wall_ms < r->wakeup_ms ||
        atomic_load(&r->fatal))
        return 0;
    r->wakeup_ms = INT64_MAX;
    if (begin_txn(r) != 0)
        return -1;
    if (r->proc->punctuate(r->self, r->now_wall_ms, &r->ctx) != 0)
        return callback_failed(r, "punctuate");
    return 0;
}

static int commit_if_due(mc_runner *r)
{
    return commit_due(r) && commit_txn(r) < 0 ? -1 : 0;
}

/* After a stop was asked for: whether the loop is done. A processor with
 * calls in flight (the executor) first drains: input paused, nothing new
 * started, what is running finishes, so a rolling restart repeats nothing. */
static bool stop_now(mc_runner *r)
{
    if (!atomic_load(&r->stop))
        return false;
    if (!r->proc->drained)
        return true;
    if (!r->draining) {
        r->draining = true;
        r->drain_deadline = r->now_mono_ms + r->cfg->drain_timeout_ms;
        rd_kafka_topic_partition_list_t *parts = NULL;
        if (rd_kafka_assignment(r->consumer, &parts) == 0 && parts) {
            rd_kafka_pause_partitions(r->consumer, parts);
            rd_kafka_topic_partition_list_destroy(parts);
        }
        mc_log(&r->logger, MC_LOG_INFO, "draining before the stop", (const char *)NULL);
    }
    return r->proc->drained(r->self, &r->ctx) || r->now_mono_ms >= r->drain_deadline;
}

static bool running(mc_runner *r)
{
    return !atomic_load(&r->fatal) && !stop_now(r);
}

/* Every producer, before the consumer reads a committed offset: each
 * init fences a predecessor under that id and ends its open transaction. */
static int init_transactions(mc_runner *r)
{
    for (int i = 0; i < TXN_PRODUCERS; i++) {
        for (;;) {
            if (atomic_load(&r->stop))
                return -1;
            rd_kafka_error_t *error = rd_kafka_init_transactions(r->producers[i], 30000);
            if (!error)
                break;
            if (txn_error(r, "init_transactions", error) != TXN_RETRY)
                return -1;
        }
    }
    return 0;
}

static int subscribe(mc_runner *r)
{
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new((int)r->n_inputs);
    for (size_t i = 0; i < r->n_inputs; i++)
        rd_kafka_topic_partition_list_add(topics, r->inputs[i].name, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t err = rd_kafka_subscribe(r->consumer, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (err) {
        set_fatal(r, "subscribe", rd_kafka_err2str(err));
        return -1;
    }
    return 0;
}

/* Whether the consumer holds a member id: it has one from its JoinGroup's
 * answer until it leaves or is fenced. */
static bool is_member(rd_kafka_t *consumer)
{
    char *member = rd_kafka_memberid(consumer);
    bool is = member && *member;
    if (member)
        rd_kafka_mem_free(consumer, member);
    return is;
}

/* Polls the consumer for up to 10 ms, serving rebalance callbacks; false once
 * librdkafka has found it fenced (FENCED_INSTANCE_ID: a successor took our
 * id), which stops its group state machine for good. Records fetched are
 * dropped unprocessed: the last transaction is committed and their offsets
 * with it are not, so the next owner reads them. */
static bool poll_while_leaving(mc_runner *r)
{
    rd_kafka_message_t *m = rd_kafka_consumer_poll(r->consumer, 10);
    if (m)
        rd_kafka_message_destroy(m);
    char why[512];
    if (rd_kafka_fatal_error(r->consumer, why, sizeof why)) {
        set_fatal(r, "consumer", why);
        return false;
    }
    return true;
}

/* How long a stop may wait to leave the group: the session timeout, what not
 * leaving would cost, but at most 15 s, so that it fits in what the chart's
 * grace period leaves after the executor's drain (20 s) with close after it. */
static int64_t leave_deadline_ms(mc_runner *r)
{
    char session[32] = MC_SESSION_TIMEOUT_MS;
    size_t session_len = sizeof session;
    rd_kafka_conf_get(rd_kafka_conf(r->consumer), "session.timeout.ms", session, &session_len);
    int64_t session_ms = atoll(session);
    return mc_mono_ms() + (session_ms > 15000 ? 15000 : session_ms);
}

/* A member still joining has no id yet, but the broker added it with its
 * JoinGroup (static members are added at once): unsubscribing now would drop
 * the answer and leave a ghost holding partitions. Waits for the id; false
 * if it did not come (fenced, or the deadline). */
static bool wait_for_member_id(mc_runner *r, int64_t deadline)
{
    while (!is_member(r->consumer)) {
        if (mc_mono_ms() >= deadline || !poll_while_leaving(r))
            return false;
    }
    return true;
}

/* After the unsubscribe: librdkafka revokes (during a rebalance it first
 * completes it, so an assignment may come before), then sends LeaveGroup and
 * clears the member id. Waits for that; false if it did not happen. */
static bool wait_until_left(mc_runner *r, int64_t deadline)
{
    while (is_member(r->consumer)) {
        if (mc_mono_ms() >= deadline || !poll_while_leaving(r))
            return false;
    }
    return true;
}

/* A static member does not leave the group when it closes (KIP-345; librdkafka
 * skips the LeaveGroup once close has begun), so its partitions would sit idle
 * for the session timeout after every graceful stop. Unsubscribing first
 * makes it leave. An assignment that arrives meanwhile is taken only as the
 * protocol needs (r->leaving). After a fatal error a member without an id is
 * left as it is: joining only to leave would cost a group-wide rebalance. */
static void leave_group(mc_runner *r)
{
    if (rd_kafka_fatal_error(r->consumer, NULL, 0))
        return; /* fenced by a successor: no membership left to give up */
    int64_t deadline = leave_deadline_ms(r);
    r->leaving = true;
    bool had_id =
        is_member(r->consumer) || (!atomic_load(&r->fatal) && wait_for_member_id(r, deadline));
    if (rd_kafka_fatal_error(r->consumer, NULL, 0))
        return;
    rd_kafka_resp_err_t err = rd_kafka_unsubscribe(r->consumer);
    if (err) {
        mc_log(&r->logger, MC_LOG_WARN, "cannot leave the group", "error", rd_kafka_err2str(err),
               (const char *)NULL);
        return;
    }
    if (!had_id) {
        if (!atomic_load(&r->fatal))
            mc_log(&r->logger, MC_LOG_WARN,
                   "never got a member id to leave the group with; if the broker added us, "
                   "the session timeout frees our partitions",
                   (const char *)NULL);
        return;
    }
    if (!wait_until_left(r, deadline) && !rd_kafka_fatal_error(r->consumer, NULL, 0))
        mc_log(&r->logger, MC_LOG_WARN,
               "could not leave the group in time; a new instance under this id, or the "
               "session timeout, frees our partitions",
               (const char *)NULL);
}

/* Graceful stop: finish the open transaction, then leave the group (the
 * revoke callback commits nothing new). Even after a fatal error we leave the
 * group, so our partitions move to another instance now rather than after
 * the session timeout. */
static int finish(mc_runner *r)
{
    if (!atomic_load(&r->fatal) && r->txn_open)
        commit_txn(r);
    if (atomic_load(&r->fatal) && r->txn_open) {
        /* Best effort: a fenced producer cannot abort, and the coordinator
         * aborts it after transaction.timeout.ms anyway. The processor lets
         * go first, so no call starts that the next owner makes again. */
        drop_processor_work(r);
        rd_kafka_error_t *error = rd_kafka_abort_transaction(r->producer, 5000);
        if (error)
            rd_kafka_error_destroy(error);
        reset_txn(r, false);
    }
    leave_group(r);
    rd_kafka_consumer_close(r->consumer);
    bool fatal = atomic_load(&r->fatal);
    mc_log(&r->logger, fatal ? MC_LOG_ERROR : MC_LOG_INFO,
           fatal ? "stopped on a fatal error" : "stopped", (const char *)NULL);
    return fatal ? 1 : 0;
}

int mc_runner_run(mc_runner *r)
{
    if (init_transactions(r) != 0)
        return atomic_load(&r->fatal) ? 1 : 0;
    if (subscribe(r) != 0)
        return 1;
    atomic_store(&r->started, true);
    mc_log(&r->logger, MC_LOG_INFO, "running", "group", r->group_id, "transactional_id",
           r->transactional_id, (const char *)NULL);
    read_clocks(r);
    while (running(r)) {
        int timeout;
        if (begin_txn(r) != 0 || (timeout = wait_for_events(r)) < 0 ||
            take_input_batch(r, timeout) != 0 || punctuate_if_due(r) != 0 || commit_if_due(r) != 0)
            break;
        for (int i = 0; i < TXN_PRODUCERS; i++)
            rd_kafka_poll(r->producers[i], 0); /* serve error/log events */
        update_lag(r);
    }
    return finish(r);
}

void mc_runner_stop(mc_runner *r)
{
    atomic_store(&r->stop, true);
}

void mc_runner_free(mc_runner *r)
{
    if (!r)
        return;
    if (r->self && r->proc->destroy)
        r->proc->destroy(r->self);
    for (size_t i = 0; i < r->n_outputs; i++)
        for (int p = 0; p < TXN_PRODUCERS; p++)
            rd_kafka_topic_destroy(r->outputs[i].rkt[p]);
    for (size_t t = 0; t < r->n_inputs; t++) {
        for (int32_t i = 0; i < r->inputs[t].n_parts; i++)
            part_free(&r->inputs[t].parts[i]);
        free(r->inputs[t].parts);
    }
    free(r->refs);
    free(r->poison);
    mc_fdset_free(&r->watches);
    if (r->consumer_queue) {
        rd_kafka_queue_io_event_enable(r->consumer_queue, -1, NULL, 0);
        rd_kafka_queue_destroy(r->consumer_queue);
    }
    for (int i = 0; i < 2; i++)
        if (r->queue_pipe[i] >= 0)
            close(r->queue_pipe[i]);
    mc_restorer_free(r->restorer);
    mc_ctx_release(&r->ctx);
    if (r->consumer)
        rd_kafka_destroy(r->consumer);
    for (int i = 0; i < TXN_PRODUCERS; i++)
        if (r->producers[i])
            rd_kafka_destroy(r->producers[i]);
    free(r);
}
