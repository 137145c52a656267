/* The exactly-once consume-transform-produce loop (see runner.h).
 *
 * The shape follows librdkafka's examples/transactions.c: a read_committed
 * consumer without auto-commit, a transactional producer, and input offsets
 * handed to the transaction with send_offsets_to_transaction(), so outputs and
 * progress become visible together or not at all. Every Kafka error passes
 * through txn_error(), the one place that decides between retrying, aborting
 * (and rewinding input and state to the last commit) and giving up. */
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

#include "codec.h"
#include "fdset.h"
#include "kafka.h"

#define MAX_OUTPUTS 16
#define MAX_INPUTS 8
#define MAX_METADATA 256
#define MAX_POISON 64
/* Records (and milliseconds) taken per loop turn once the first record has
 * arrived, before punctuate and commit get their turn. */
#define POLL_BATCH 2000
#define POLL_BATCH_MS 5
/* Raw values above this are not copied into a dead letter, so the dead
 * letter itself always fits in a Kafka message. */
#define MAX_DEAD_RAW (512 * 1024)

struct mc_output {
    rd_kafka_topic_t *rkt;
    char name[256];
    mc_counter *records_out; /* counted when the transaction commits */
    uint64_t pending;        /* forwarded in the open transaction */
};

typedef struct commit_metadata {
    char topic[256];
    int32_t partition;
    int64_t offset; /* < 0: commit the processed position */
    char *metadata;
} commit_metadata;

typedef struct input_topic {
    char name[256];
    mc_counter *records_in;
    mc_gauge *lag;
    uint64_t pending;
} input_topic;

/* An input record consumed in the open transaction; outputs carry its index
 * so a delivery failure can be traced back to the record that caused it. */
typedef struct txn_input {
    size_t topic; /* index into inputs */
    int32_t partition;
    int64_t offset;
} txn_input;

/* An input whose output Kafka refused for good (too large, invalid): after the
 * abort and rewind it goes to the dead topic instead of being processed again,
 * which would fail the same way forever and block its partition. */
typedef struct poisoned_input {
    txn_input at;
    char reason[256];
    /* Kafka refuses whole batches, so a refusal in a transaction of many
     * inputs only makes each of them a suspect; a suspect is replayed alone
     * in its own transaction, and only a refusal there confirms it. */
    bool confirmed;
} poisoned_input;

/* Where a partition's input has been processed up to: the offset committed
 * with the transaction. Tracked here rather than read from the consumer,
 * whose position is already past a record when poll returns it. */
typedef struct input_position {
    size_t topic;
    int32_t partition;
    int64_t next;
    bool dirty; /* advanced in the open transaction */
} input_position;

struct mc_ctx {
    mc_runner *r;
};

struct mc_runner {
    mc_logger logger; /* first: librdkafka's log callback reads its opaque as a logger */
    const mc_processor *proc;
    const mc_config *cfg;
    mc_metrics *metrics;
    void *self;
    mc_ctx ctx;
    rd_kafka_t *consumer;
    rd_kafka_t *producer;
    char group_id[300];
    char transactional_id[600];

    mc_output outputs[MAX_OUTPUTS];
    size_t n_outputs;
    input_topic inputs[MAX_INPUTS];
    size_t n_inputs;
    commit_metadata md[MAX_METADATA];
    size_t n_md;
    txn_input *txn_inputs;
    size_t n_txn_inputs, cap_txn_inputs;
    size_t current_input; /* 1-based index into txn_inputs inside process(), else 0 */
    poisoned_input poison[MAX_POISON];
    size_t n_poison;
    input_position *positions;
    size_t n_positions, cap_positions;
    bool poison_found; /* a forward in this process() call was refused for good */
    mc_output *dead;
    mc_buf dead_buf;
    mc_counter *poison_dead;

    bool txn_open;
    int64_t txn_started_ms;
    uint64_t txn_records; /* input records in the open transaction */
    bool txn_dirty;       /* something to commit: input consumed or output produced */
    bool commit_requested;
    bool in_revoke;    /* inside the revoke callback */
    int64_t wakeup_ms; /* INT64_MAX: none */
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
};

int64_t mc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- ctx ----------------------------------------------------------------- */

mc_output *mc_ctx_output(mc_ctx *ctx, const char *topic_suffix)
{
    mc_runner *r = ctx->r;
    char name[256];
    mc_topic_name(r->cfg, topic_suffix, name, sizeof name);
    for (size_t i = 0; i < r->n_outputs; i++)
        if (strcmp(r->outputs[i].name, name) == 0)
            return &r->outputs[i];
    if (r->n_outputs == MAX_OUTPUTS)
        return NULL;
    mc_output *o = &r->outputs[r->n_outputs];
    snprintf(o->name, sizeof o->name, "%s", name);
    o->rkt = rd_kafka_topic_new(r->producer, name, NULL);
    if (!o->rkt)
        return NULL;
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

/* Remembers that the input at 1-based index idx of this transaction must be
 * dead-lettered when it is consumed again. */
static poisoned_input *find_poison(mc_runner *r, const txn_input *in)
{
    for (size_t i = 0; i < r->n_poison; i++)
        if (r->poison[i].at.topic == in->topic && r->poison[i].at.partition == in->partition &&
            r->poison[i].at.offset == in->offset)
            return &r->poison[i];
    return NULL;
}

static void remove_poison(mc_runner *r, poisoned_input *p)
{
    *p = r->poison[--r->n_poison];
}

static void add_poison(mc_runner *r, size_t idx, const char *topic, rd_kafka_resp_err_t err,
                       bool certain)
{
    if (idx == 0 || idx > r->n_txn_inputs)
        return; /* not caused by one input (punctuate): abort and retry is all we can do */
    txn_input *in = &r->txn_inputs[idx - 1];
    bool confirmed = certain || r->n_txn_inputs == 1;
    poisoned_input *p = find_poison(r, in);
    if (p) {
        p->confirmed |= confirmed;
        return;
    }
    if (r->n_poison == MAX_POISON)
        return;
    p = &r->poison[r->n_poison++];
    p->at = *in;
    p->confirmed = confirmed;
    /* Cut to fit: a topic name may take most of the reason. */
    int n = snprintf(p->reason, sizeof p->reason,
                     "Kafka refused this record's output to %.200s: ", topic);
    if (n > 0 && (size_t)n < sizeof p->reason)
        snprintf(p->reason + n, sizeof p->reason - (size_t)n, "%s", rd_kafka_err2str(err));
    mc_log(&r->logger, MC_LOG_WARN,
           confirmed ? "output refused; the input will be dead-lettered"
                     : "output refused; the input will be retried alone",
           "topic", topic, "error", rd_kafka_err2str(err), (const char *)NULL);
}

/* Delivery reports arrive while commit_transaction() flushes, on our thread. */
static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    mc_runner *r = opaque;
    if (m->err && record_error(m->err))
        add_poison(r, (size_t)(uintptr_t)m->_private, rd_kafka_topic_name(m->rkt), m->err, false);
}

/* Produces one record, with at most one header; rd_kafka_produce() when
 * there is none, since it is the cheaper call. */
static rd_kafka_resp_err_t produce_one(mc_runner *r, mc_output *out, int32_t partition,
                                       const void *key, size_t keylen, const void *value,
                                       size_t valuelen, const char *hname, const void *hvalue,
                                       size_t hlen)
{
    void *opaque = (void *)(uintptr_t)r->current_input;
    if (!hname)
        return rd_kafka_produce(out->rkt, partition, RD_KAFKA_MSG_F_COPY, (void *)value,
                                value ? valuelen : 0, key, keylen, opaque)
                   ? rd_kafka_last_error()
                   : RD_KAFKA_RESP_ERR_NO_ERROR;
    rd_kafka_headers_t *h = rd_kafka_headers_new(1);
    rd_kafka_header_add(h, hname, -1, hvalue, (ssize_t)hlen);
    rd_kafka_resp_err_t err = rd_kafka_producev(
        r->producer, RD_KAFKA_V_RKT(out->rkt), RD_KAFKA_V_PARTITION(partition),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_VALUE((void *)value, value ? valuelen : 0), RD_KAFKA_V_KEY(key, keylen),
        RD_KAFKA_V_OPAQUE(opaque), RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
    if (err)
        rd_kafka_headers_destroy(h); /* producev only takes them over on success */
    return err;
}

int mc_ctx_forward(mc_ctx *ctx, mc_output *out, int32_t partition, const void *key, size_t keylen,
                   const void *value, size_t valuelen)
{
    return mc_ctx_forward_header(ctx, out, partition, key, keylen, value, valuelen, NULL, NULL, 0);
}

int mc_ctx_forward_header(mc_ctx *ctx, mc_output *out, int32_t partition, const void *key,
                          size_t keylen, const void *value, size_t valuelen, const char *hname,
                          const void *hvalue, size_t hlen)
{
    mc_runner *r = ctx->r;
    for (;;) {
        rd_kafka_resp_err_t err =
            produce_one(r, out, partition, key, keylen, value, valuelen, hname, hvalue, hlen);
        if (!err) {
            out->pending++;
            r->txn_dirty = true;
            return 0;
        }
        if (record_error(err)) {
            add_poison(r, r->current_input, out->name, err, true);
            r->poison_found = true;
            return -1;
        }
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            mc_log(&r->logger, MC_LOG_ERROR, "produce refused", "topic", out->name, "error",
                   rd_kafka_err2str(err), (const char *)NULL);
            return -1;
        }
        /* The local queue is full: let librdkafka drain it, then try again. */
        rd_kafka_poll(r->producer, 10);
    }
}

int mc_ctx_dead_letter(mc_ctx *ctx, const rd_kafka_message_t *m, const char *reason,
                       const mc_task *task)
{
    mc_runner *r = ctx->r;
    if (!r->dead)
        r->dead = mc_ctx_output(ctx, "dead");
    if (!r->dead)
        return -1;
    bool keep_raw = m->payload != NULL && m->len <= MAX_DEAD_RAW;
    char longer[640];
    if (m->payload && !keep_raw) {
        /* Neither the raw value nor a task that large would fit. */
        snprintf(longer, sizeof longer, "%s (raw value of %zu bytes not kept)", reason, m->len);
        reason = longer;
        task = NULL;
    }
    mc_dead_letter d = {
        .reason = reason,
        .source_topic = rd_kafka_topic_name(m->rkt),
        .source_partition = m->partition,
        .source_offset = m->offset,
        .raw = m->payload,
        .raw_len = m->len,
        .has_raw = keep_raw,
        .has_task = task != NULL,
        .failed_at = mc_now_ms(),
    };
    if (task)
        d.task = *task;
    mc_buf_reset(&r->dead_buf);
    if (mc_encode_dead_letter(&d, &r->dead_buf) != 0)
        return -1;
    char key[64];
    snprintf(key, sizeof key, "%.*s", m->key ? (int)(m->key_len < 63 ? m->key_len : 63) : 0,
             m->key ? (const char *)m->key : "");
    mc_log(&r->logger, MC_LOG_WARN, "dead letter", "key", key, "reason", reason,
           (const char *)NULL);
    return mc_ctx_forward(ctx, r->dead, m->partition, m->key, m->key_len, r->dead_buf.data,
                          r->dead_buf.len);
}

void mc_ctx_wakeup_at(mc_ctx *ctx, int64_t at_ms)
{
    if (at_ms < ctx->r->wakeup_ms)
        ctx->r->wakeup_ms = at_ms;
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

int mc_ctx_watch_fd(mc_ctx *ctx, int fd, short events, mc_fd_callback cb, void *arg)
{
    mc_runner *r = ctx->r;
    if (events && watch_consumer_queue(r) != 0)
        return -1;
    return mc_fdset_set(&r->watches, fd, events, (void (*)(void))cb, arg);
}

int mc_ctx_pause(mc_ctx *ctx, const char *topic, int32_t partition, bool pause)
{
    if (!pause && ctx->r->draining)
        return 0;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, topic, partition);
    rd_kafka_resp_err_t err = pause ? rd_kafka_pause_partitions(ctx->r->consumer, l)
                                    : rd_kafka_resume_partitions(ctx->r->consumer, l);
    if (!err)
        err = l->elems[0].err;
    /* Pausing dropped what was fetched for the partition, and librdkafka
     * (2.0) fetches it again only when its broker thread next wakes up - up
     * to a second later when every partition was paused. An asynchronous
     * seek to where we are wakes it now. */
    if (!err && !pause && rd_kafka_position(ctx->r->consumer, l) == RD_KAFKA_RESP_ERR_NO_ERROR &&
        l->elems[0].offset >= 0) {
        rd_kafka_error_t *error = rd_kafka_seek_partitions(ctx->r->consumer, l, 0);
        if (error)
            rd_kafka_error_destroy(error);
    }
    rd_kafka_topic_partition_list_destroy(l);
    return err ? -1 : 0;
}

/* Records what the next commits carry for one partition: metadata, and an
 * offset to commit instead of the processed position when set_offset. */
static int set_commit_entry(mc_runner *r, const char *topic, int32_t partition, bool set_offset,
                            int64_t offset, const char *metadata)
{
    if (strlen(metadata) > 4096)
        return -1;
    char *copy = strdup(metadata);
    if (!copy)
        return -1;
    commit_metadata *m = NULL;
    for (size_t i = 0; i < r->n_md && !m; i++)
        if (r->md[i].partition == partition && strcmp(r->md[i].topic, topic) == 0)
            m = &r->md[i];
    if (!m) {
        if (r->n_md == MAX_METADATA) {
            free(copy);
            return -1;
        }
        m = &r->md[r->n_md++];
        snprintf(m->topic, sizeof m->topic, "%s", topic);
        m->partition = partition;
        m->offset = -1;
        m->metadata = NULL;
    }
    free(m->metadata);
    m->metadata = copy;
    if (set_offset)
        m->offset = offset;
    r->txn_dirty = true;
    return 0;
}

int mc_ctx_set_commit_metadata(mc_ctx *ctx, const char *topic, int32_t partition,
                               const char *metadata)
{
    return set_commit_entry(ctx->r, topic, partition, false, -1, metadata);
}

int mc_ctx_set_commit_offset(mc_ctx *ctx, const char *topic, int32_t partition, int64_t offset,
                             const char *metadata)
{
    if (offset < 0)
        return -1;
    return set_commit_entry(ctx->r, topic, partition, true, offset, metadata);
}

void mc_ctx_set_ready(mc_ctx *ctx, bool ready)
{
    atomic_store(&ctx->r->processor_ready, ready);
}

void mc_ctx_request_commit(mc_ctx *ctx)
{
    ctx->r->commit_requested = true;
}

void mc_ctx_alive(mc_ctx *ctx)
{
    atomic_store(&ctx->r->loop_heartbeat_ms, mono_ms());
}

int64_t mc_ctx_now_ms(const mc_ctx *ctx)
{
    return ctx->r->now_wall_ms;
}

const mc_config *mc_ctx_config(const mc_ctx *ctx)
{
    return ctx->r->cfg;
}

const mc_logger *mc_ctx_logger(const mc_ctx *ctx)
{
    return &ctx->r->logger;
}

mc_metrics *mc_ctx_metrics(const mc_ctx *ctx)
{
    return ctx->r->metrics;
}

const char *mc_ctx_processor_name(const mc_ctx *ctx)
{
    return ctx->r->proc->name;
}

rd_kafka_t *mc_ctx_consumer(const mc_ctx *ctx)
{
    return ctx->r->consumer;
}

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
    rd_kafka_error_destroy(error);
    if (v == TXN_FATAL)
        atomic_store(&r->fatal, true);
    return v;
}

/* ---- transactions ------------------------------------------------------------ */

static void reset_txn_counters(mc_runner *r, bool committed)
{
    for (size_t i = 0; i < r->n_outputs; i++) {
        if (committed)
            mc_counter_add(r->outputs[i].records_out, r->outputs[i].pending);
        r->outputs[i].pending = 0;
    }
    for (size_t i = 0; i < r->n_inputs; i++) {
        if (committed)
            mc_counter_add(r->inputs[i].records_in, r->inputs[i].pending);
        r->inputs[i].pending = 0;
    }
    if (committed)
        for (size_t i = 0; i < r->n_positions; i++)
            r->positions[i].dirty = false;
    else
        r->n_positions = 0; /* the rewind starts again from what is committed */
    r->txn_open = false;
    r->txn_dirty = false;
    r->txn_records = 0;
    r->n_txn_inputs = 0;
    r->commit_requested = false;
}

static int begin_txn(mc_runner *r)
{
    if (r->txn_open)
        return 0;
    rd_kafka_error_t *error = rd_kafka_begin_transaction(r->producer);
    if (error) {
        txn_error(r, "begin_transaction", error);
        /* begin only fails on a programming or fatal state error */
        atomic_store(&r->fatal, true);
        return -1;
    }
    r->txn_open = true;
    r->txn_started_ms = r->now_mono_ms;
    return 0;
}

/* Puts the processor's metadata (and offset, when it holds the commit back)
 * on one partition of the offsets to commit. */
static void attach_metadata(mc_runner *r, rd_kafka_topic_partition_t *o)
{
    for (size_t k = 0; k < r->n_md; k++) {
        if (r->md[k].partition == o->partition && strcmp(r->md[k].topic, o->topic) == 0) {
            free(o->metadata);
            o->metadata = strdup(r->md[k].metadata);
            o->metadata_size = o->metadata ? strlen(o->metadata) : 0;
            if (r->md[k].offset >= 0)
                o->offset = r->md[k].offset;
        }
    }
}

/* The offsets this transaction commits: every partition whose input advanced,
 * plus every partition the processor set metadata for. Caller destroys. */
static rd_kafka_topic_partition_list_t *current_offsets(mc_runner *r)
{
    rd_kafka_topic_partition_list_t *offsets =
        rd_kafka_topic_partition_list_new((int)(r->n_positions + r->n_md + 1));
    for (size_t i = 0; i < r->n_positions; i++) {
        input_position *p = &r->positions[i];
        if (!p->dirty)
            continue;
        rd_kafka_topic_partition_t *o =
            rd_kafka_topic_partition_list_add(offsets, r->inputs[p->topic].name, p->partition);
        o->offset = p->next;
        attach_metadata(r, o);
    }
    for (size_t k = 0; k < r->n_md; k++) {
        if (rd_kafka_topic_partition_list_find(offsets, r->md[k].topic, r->md[k].partition))
            continue;
        /* Metadata without new input: commit it at the current position. */
        int64_t next = RD_KAFKA_OFFSET_INVALID;
        for (size_t i = 0; i < r->n_positions; i++)
            if (r->positions[i].partition == r->md[k].partition &&
                strcmp(r->inputs[r->positions[i].topic].name, r->md[k].topic) == 0)
                next = r->positions[i].next;
        if (next < 0) {
            rd_kafka_topic_partition_list_t *one = rd_kafka_topic_partition_list_new(1);
            rd_kafka_topic_partition_list_add(one, r->md[k].topic, r->md[k].partition);
            if (!rd_kafka_position(r->consumer, one))
                next = one->elems[0].offset;
            rd_kafka_topic_partition_list_destroy(one);
        }
        if (next < 0)
            continue;
        rd_kafka_topic_partition_t *o =
            rd_kafka_topic_partition_list_add(offsets, r->md[k].topic, r->md[k].partition);
        o->offset = next;
        attach_metadata(r, o);
    }
    return offsets;
}

/* Records that an input is done with (processed or dead-lettered). */
static int mark_processed(mc_runner *r, size_t topic, int32_t partition, int64_t offset)
{
    for (size_t i = 0; i < r->n_positions; i++) {
        input_position *p = &r->positions[i];
        if (p->topic == topic && p->partition == partition) {
            p->next = offset + 1;
            p->dirty = true;
            return 0;
        }
    }
    if (r->n_positions == r->cap_positions) {
        size_t cap = r->cap_positions ? r->cap_positions * 2 : 64;
        input_position *n = realloc(r->positions, cap * sizeof *n);
        if (!n)
            return -1;
        r->positions = n;
        r->cap_positions = cap;
    }
    r->positions[r->n_positions++] = (input_position){topic, partition, offset + 1, true};
    return 0;
}

static void rewind_to_committed(mc_runner *r);

/* Aborts the open transaction and rewinds input and state to the last commit
 * (not while partitions are being revoked: they are about to go anyway).
 * Returns -1 when even the abort failed (fatal). */
static int abort_txn(mc_runner *r, const char *why)
{
    if (!r->txn_open)
        return 0;
    mc_log(&r->logger, MC_LOG_WARN, "aborting transaction", "reason", why, (const char *)NULL);
    for (;;) {
        rd_kafka_error_t *error = rd_kafka_abort_transaction(r->producer, 30000);
        if (!error)
            break;
        if (txn_error(r, "abort_transaction", error) != TXN_RETRY)
            return -1;
    }
    mc_counter_add(r->txn_aborted, 1);
    reset_txn_counters(r, false);
    if (!r->in_revoke)
        rewind_to_committed(r);
    return 0;
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
        if (error && txn_error(r, "abort_transaction (empty)", error) == TXN_FATAL)
            return -1;
        reset_txn_counters(r, false);
        return 0;
    }
    if (r->proc->prepare_commit && r->proc->prepare_commit(r->self, &r->ctx) != 0) {
        atomic_store(&r->fatal, true);
        return -1;
    }
    int64_t t0 = mono_ms();
    rd_kafka_topic_partition_list_t *offsets = current_offsets(r);
    if (offsets && offsets->cnt > 0) {
        for (;;) {
            rd_kafka_consumer_group_metadata_t *cgmd =
                rd_kafka_consumer_group_metadata(r->consumer);
            rd_kafka_error_t *error =
                rd_kafka_send_offsets_to_transaction(r->producer, offsets, cgmd, 30000);
            rd_kafka_consumer_group_metadata_destroy(cgmd);
            if (!error)
                break;
            txn_verdict v = txn_error(r, "send_offsets_to_transaction", error);
            if (v == TXN_RETRY)
                continue;
            rd_kafka_topic_partition_list_destroy(offsets);
            if (v == TXN_ABORT)
                return abort_txn(r, "send_offsets_to_transaction failed") == 0 ? 1 : -1;
            return -1;
        }
    }
    if (offsets)
        rd_kafka_topic_partition_list_destroy(offsets);
    for (;;) {
        rd_kafka_error_t *error = rd_kafka_commit_transaction(r->producer, 30000);
        if (!error)
            break;
        txn_verdict v = txn_error(r, "commit_transaction", error);
        if (v == TXN_RETRY)
            continue;
        if (v == TXN_ABORT)
            return abort_txn(r, "commit_transaction failed") == 0 ? 1 : -1;
        return -1;
    }
    mc_histogram_observe(r->commit_latency, (double)(mono_ms() - t0) / 1000.0);
    mc_counter_add(r->txn_committed, 1);
    reset_txn_counters(r, true);
    return 0;
}

/* After an abort the consumer has run ahead of what is committed and the
 * processor's memory holds the effects of the aborted records. Seek every
 * assigned partition back to its committed offset and make the processor
 * rebuild its state for them, exactly as if they had been newly assigned. */
static void rewind_to_committed(mc_runner *r)
{
    rd_kafka_topic_partition_list_t *parts = NULL;
    if (rd_kafka_assignment(r->consumer, &parts) || !parts)
        return;
    if (parts->cnt == 0) {
        rd_kafka_topic_partition_list_destroy(parts);
        return;
    }
    if (r->proc->on_revoke)
        r->proc->on_revoke(r->self, parts, &r->ctx);
    /* The processor rebuilds its state, and with it what it commits. */
    for (size_t i = 0; i < r->n_md; i++)
        free(r->md[i].metadata);
    r->n_md = 0;
    rd_kafka_resp_err_t err = rd_kafka_committed(r->consumer, parts, 30000);
    if (err) {
        mc_log(&r->logger, MC_LOG_ERROR, "cannot read committed offsets to rewind", "error",
               rd_kafka_err2str(err), (const char *)NULL);
        atomic_store(&r->fatal, true);
        rd_kafka_topic_partition_list_destroy(parts);
        return;
    }
    for (int i = 0; i < parts->cnt; i++)
        if (parts->elems[i].offset < 0)
            parts->elems[i].offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_error_t *error = rd_kafka_seek_partitions(r->consumer, parts, 30000);
    if (error) {
        mc_log(&r->logger, MC_LOG_ERROR, "cannot seek to committed offsets", "error",
               rd_kafka_error_string(error), (const char *)NULL);
        rd_kafka_error_destroy(error);
        atomic_store(&r->fatal, true);
    }
    if (!atomic_load(&r->fatal) && r->proc->on_assign &&
        r->proc->on_assign(r->self, parts, &r->ctx) != 0)
        atomic_store(&r->fatal, true);
    rd_kafka_topic_partition_list_destroy(parts);
}

/* ---- rebalances ------------------------------------------------------------- */

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    mc_runner *r = opaque;
    switch (err) {
    case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS: {
        /* Read the committed offsets (and metadata) ourselves so the
         * processor sees exactly where consumption resumes. */
        rd_kafka_resp_err_t cerr = rd_kafka_committed(rk, parts, 30000);
        if (cerr) {
            mc_log(&r->logger, MC_LOG_ERROR, "cannot read committed offsets", "error",
                   rd_kafka_err2str(cerr), (const char *)NULL);
            atomic_store(&r->fatal, true);
            rd_kafka_assign(rk, NULL);
            break;
        }
        rd_kafka_assign(rk, parts);
        mc_logf(&r->logger, MC_LOG_INFO, "assigned %d partitions", parts->cnt);
        if (r->proc->on_assign && r->proc->on_assign(r->self, parts, &r->ctx) != 0)
            atomic_store(&r->fatal, true);
        /* After on_assign: the gauge says "these partitions are served". */
        mc_gauge_set(r->assigned_partitions, parts->cnt);
        atomic_store(&r->assigned_once, true);
        break;
    }
    case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
        /* Revoked: commit what we did so the next owner starts after it.
         * Lost (we were kicked out of the group): our transaction may no
         * longer commit its offsets, so abort; the new owner redoes it. */
        if (rd_kafka_assignment_lost(rk)) {
            mc_log(&r->logger, MC_LOG_WARN, "partitions lost", (const char *)NULL);
            if (r->txn_open) {
                rd_kafka_error_t *error = rd_kafka_abort_transaction(r->producer, 30000);
                if (error)
                    txn_error(r, "abort_transaction (lost)", error);
                else
                    mc_counter_add(r->txn_aborted, 1);
                reset_txn_counters(r, false);
            }
        } else if (r->txn_open) {
            r->in_revoke = true;
            commit_txn(r);
            r->in_revoke = false;
        }
        if (r->proc->on_revoke)
            r->proc->on_revoke(r->self, parts, &r->ctx);
        /* Whatever we knew of these partitions is stale once another
         * instance may have moved them on: positions, suspects, metadata. */
        for (size_t i = 0; i < r->n_md; i++)
            free(r->md[i].metadata);
        r->n_md = 0;
        r->n_positions = 0;
        r->n_poison = 0;
        mc_logf(&r->logger, MC_LOG_INFO, "revoked %d partitions", parts->cnt);
        mc_gauge_set(r->assigned_partitions, 0);
        rd_kafka_assign(rk, NULL);
        break;
    default:
        mc_log(&r->logger, MC_LOG_ERROR, "rebalance failed", "error", rd_kafka_err2str(err),
               (const char *)NULL);
        rd_kafka_assign(rk, NULL);
        break;
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
    if (hb && mono_ms() - hb > 60000) {
        snprintf(why, whylen, "processing loop stuck for %lld ms", mono_ms() - hb);
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

/* Sets a tuning default unless the user passed the property with -X or
 * MOONCAKE_KAFKA_*: theirs wins. */
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
    r->ctx.r = r;
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

    char errstr[512], buf[32];
    /* Consumer: read only committed data, never commit on its own (offsets go
     * through the producer's transaction), range assignment so partition N of
     * every input topic lands on the same instance. */
    rd_kafka_conf_t *cc = mc_kafka_conf_new(cfg, r, err, errlen);
    if (!cc)
        goto fail;
    /* A crashed instance's partitions wait this long for a new owner; the
     * librdkafka default (45 s) is long for a scheduler. -X overrides it. */
    if (mc_kafka_conf_default(cfg, cc, "session.timeout.ms", "10000", err, errlen) ||
        mc_kafka_conf_default(cfg, cc, "heartbeat.interval.ms", "2000", err, errlen)) {
        rd_kafka_conf_destroy(cc);
        goto fail;
    }
    for (const char *const *kv = p->consumer_defaults; kv && kv[0] && kv[1]; kv += 2) {
        if (mc_kafka_conf_default(cfg, cc, kv[0], kv[1], err, errlen)) {
            rd_kafka_conf_destroy(cc);
            goto fail;
        }
    }
    if (mc_kafka_conf_set(cc, "group.id", r->group_id, err, errlen) ||
        mc_kafka_conf_set(cc, "isolation.level", "read_committed", err, errlen) ||
        mc_kafka_conf_set(cc, "enable.auto.commit", "false", err, errlen) ||
        mc_kafka_conf_set(cc, "auto.offset.reset", "earliest", err, errlen) ||
        mc_kafka_conf_set(cc, "partition.assignment.strategy", "range", err, errlen)) {
        rd_kafka_conf_destroy(cc);
        goto fail;
    }
    rd_kafka_conf_set_rebalance_cb(cc, rebalance_cb);
    r->consumer = rd_kafka_new(RD_KAFKA_CONSUMER, cc, errstr, sizeof errstr);
    if (!r->consumer) {
        snprintf(err, errlen, "creating the consumer: %s", errstr);
        goto fail;
    }
    rd_kafka_poll_set_consumer(r->consumer);

    rd_kafka_conf_t *pc = mc_kafka_conf_new(cfg, r, err, errlen);
    if (!pc)
        goto fail;
    snprintf(buf, sizeof buf, "%d", cfg->transaction_timeout_ms);
    /* Exactly-once needs these as they are; the tuning below yields to -X. */
    if (mc_kafka_conf_set(pc, "transactional.id", r->transactional_id, err, errlen) ||
        mc_kafka_conf_set(pc, "transaction.timeout.ms", buf, err, errlen) ||
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
        goto fail;
    }
    rd_kafka_conf_set_dr_msg_cb(pc, dr_msg_cb);
    r->producer = rd_kafka_new(RD_KAFKA_PRODUCER, pc, errstr, sizeof errstr);
    if (!r->producer) {
        snprintf(err, errlen, "creating the transactional producer: %s", errstr);
        goto fail;
    }

    char labels[400];
    snprintf(labels, sizeof labels, "processor=\"%s\"", p->name);
    r->txn_committed = mc_metrics_counter(metrics, "mooncake_transactions_committed_total",
                                          "Kafka transactions committed", labels);
    r->txn_aborted = mc_metrics_counter(metrics, "mooncake_transactions_aborted_total",
                                        "Kafka transactions aborted", labels);
    static const double bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                    0.1,   0.25,   0.5,   1,    2.5,   5};
    r->commit_latency =
        mc_metrics_histogram(metrics, "mooncake_commit_latency_seconds",
                             "Time to send offsets and commit one transaction", labels, bounds, 12);
    r->poison_dead = mc_metrics_counter(
        metrics, "mooncake_refused_outputs_dead_lettered_total",
        "Inputs dead-lettered because Kafka refused their output for good", labels);
    r->assigned_partitions = mc_metrics_gauge(metrics, "mooncake_assigned_partitions",
                                              "Input partitions assigned to this instance", labels);
    for (const char *const *t = p->input_topics; *t && r->n_inputs < MAX_INPUTS; t++) {
        input_topic *in = &r->inputs[r->n_inputs++];
        mc_topic_name(cfg, *t, in->name, sizeof in->name);
        snprintf(labels, sizeof labels, "processor=\"%s\",topic=\"%s\"", p->name, in->name);
        in->records_in = mc_metrics_counter(metrics, "mooncake_records_in_total",
                                            "Records consumed, counted when committed", labels);
        in->lag =
            mc_metrics_gauge(metrics, "mooncake_consumer_lag",
                             "Records behind the high watermark on assigned partitions", labels);
    }

    r->self = p->create(&r->ctx, err, errlen);
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

static size_t input_topic_index(const mc_runner *r, const rd_kafka_message_t *m)
{
    const char *t = rd_kafka_topic_name(m->rkt);
    for (size_t i = 0; i < r->n_inputs; i++)
        if (strcmp(r->inputs[i].name, t) == 0)
            return i;
    return 0;
}

/* Notes an input record in the open transaction (for the metrics and to
 * trace refused outputs back to it). Returns its 1-based index, 0 on ENOMEM. */
static size_t track_input(mc_runner *r, const txn_input *in)
{
    r->inputs[in->topic].pending++;
    r->txn_records++;
    r->txn_dirty = true;
    if (r->n_txn_inputs == r->cap_txn_inputs) {
        size_t cap = r->cap_txn_inputs ? r->cap_txn_inputs * 2 : 1024;
        txn_input *n = realloc(r->txn_inputs, cap * sizeof *n);
        if (!n)
            return 0;
        r->txn_inputs = n;
        r->cap_txn_inputs = cap;
    }
    r->txn_inputs[r->n_txn_inputs++] = *in;
    return r->n_txn_inputs;
}

/* One consumed record, inside the open transaction. Returns -1 to leave the
 * loop (fatal), 0 otherwise. */
static int handle_record(mc_runner *r, const rd_kafka_message_t *m)
{
    txn_input in = {input_topic_index(r, m), m->partition, m->offset};
    poisoned_input *p = r->n_poison ? find_poison(r, &in) : NULL;
    if (p && p->confirmed) {
        track_input(r, &in);
        char reason[sizeof p->reason];
        memcpy(reason, p->reason, sizeof reason);
        remove_poison(r, p);
        if (mc_ctx_dead_letter(&r->ctx, m, reason, NULL) != 0)
            atomic_store(&r->fatal, true); /* the dead topic refusing too: give up */
        mc_counter_add(r->poison_dead, 1);
        return mark_processed(r, in.topic, in.partition, in.offset);
    }
    bool alone = p != NULL;
    if (alone) {
        /* A suspect from a refused batch: commit what came before it, then
         * give it a transaction of its own, so a refusal now is its own. */
        int rc = commit_txn(r);
        if (rc != 0)
            return rc < 0 ? -1 : 0; /* aborted and rewound: m comes again, still a suspect */
        if ((p = find_poison(r, &in)) != NULL)
            remove_poison(r, p); /* a refusal in its own transaction re-adds it, confirmed */
        if (begin_txn(r) != 0)
            return -1;
    }
    r->current_input = track_input(r, &in);
    r->poison_found = false;
    int rc = r->proc->process(r->self, m, &r->ctx);
    r->current_input = 0;
    if (rc != 0 && r->poison_found) {
        /* Its other outputs may be in the transaction: abort, and the
         * rewind brings it back to be dead-lettered. */
        return abort_txn(r, "an output was refused");
    }
    if (rc != 0) {
        mc_log(&r->logger, MC_LOG_ERROR, "processor failed", (const char *)NULL);
        atomic_store(&r->fatal, true);
        return -1;
    }
    if (mark_processed(r, in.topic, in.partition, in.offset) != 0)
        return -1;
    return alone && commit_txn(r) < 0 ? -1 : 0;
}

static int poll_timeout(const mc_runner *r)
{
    int64_t now = r->now_mono_ms;
    int64_t timeout = 100;
    if (r->txn_open && r->txn_dirty) {
        int64_t left = r->txn_started_ms + r->cfg->commit_interval_ms - now;
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
    return r->txn_dirty && r->now_mono_ms - r->txn_started_ms >= r->cfg->commit_interval_ms;
}

static bool commit_due(const mc_runner *r)
{
    return (r->txn_open && r->commit_requested && r->txn_dirty) || commit_due_by_size_or_age(r);
}

static void read_clocks(mc_runner *r)
{
    r->now_mono_ms = mono_ms();
    r->now_wall_ms = mc_now_ms();
    atomic_store(&r->loop_heartbeat_ms, r->now_mono_ms);
}

/* Waits in poll(2) for input, the processor's descriptors or the timeout,
 * then runs the callbacks of the descriptors that are ready. A callback may
 * add or remove watches (curl does, inside socket_action), so each is looked
 * up again by descriptor before it runs. Returns 0, or -1 on a fatal error. */
static int wait_for_events(mc_runner *r, int timeout)
{
    size_t n = r->watches.n + 1;
    int rc = mc_fdset_poll(&r->watches, r->queue_pipe[0], timeout);
    struct pollfd *pfds = r->watches.pfds;
    read_clocks(r);
    if (rc < 0) {
        if (errno == EINTR)
            return 0;
        mc_log(&r->logger, MC_LOG_ERROR, "poll failed", "error", strerror(errno),
               (const char *)NULL);
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
        if (cb(arg, pfds[i].fd, pfds[i].revents, &r->ctx) != 0) {
            atomic_store(&r->fatal, true);
            return -1;
        }
    }
    return 0;
}

static int init_transactions(mc_runner *r)
{
    while (!atomic_load(&r->stop)) {
        rd_kafka_error_t *error = rd_kafka_init_transactions(r->producer, 30000);
        if (!error)
            return 0;
        if (txn_error(r, "init_transactions", error) != TXN_RETRY)
            return -1;
    }
    return -1;
}

int mc_runner_run(mc_runner *r)
{
    if (init_transactions(r) != 0)
        return atomic_load(&r->fatal) ? 1 : 0;

    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new((int)r->n_inputs);
    for (size_t i = 0; i < r->n_inputs; i++)
        rd_kafka_topic_partition_list_add(topics, r->inputs[i].name, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t err = rd_kafka_subscribe(r->consumer, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (err) {
        mc_log(&r->logger, MC_LOG_ERROR, "subscribe failed", "error", rd_kafka_err2str(err),
               (const char *)NULL);
        return 1;
    }
    atomic_store(&r->started, true);
    mc_log(&r->logger, MC_LOG_INFO, "running", "group", r->group_id, "transactional_id",
           r->transactional_id, (const char *)NULL);

    read_clocks(r);
    int64_t drain_deadline = 0;
    while (!atomic_load(&r->fatal)) {
        if (atomic_load(&r->stop)) {
            if (!r->proc->drained)
                break;
            if (!r->draining) {
                /* Take no new input; let what is in flight finish, so a
                 * rolling restart does not repeat it. */
                r->draining = true;
                drain_deadline = r->now_mono_ms + r->cfg->drain_timeout_ms;
                rd_kafka_topic_partition_list_t *parts = NULL;
                if (rd_kafka_assignment(r->consumer, &parts) == 0 && parts) {
                    rd_kafka_pause_partitions(r->consumer, parts);
                    rd_kafka_topic_partition_list_destroy(parts);
                }
                mc_log(&r->logger, MC_LOG_INFO, "draining before the stop", (const char *)NULL);
            }
            if (r->proc->drained(r->self, &r->ctx) || r->now_mono_ms >= drain_deadline)
                break;
        }
        if (begin_txn(r) != 0)
            break;
        /* Wait for the first record, then take what has already arrived
         * without waiting (up to a batch), so that a processor which asks
         * for a commit after every punctuate (the wheel) still consumes at
         * full speed in between. */
        /* Fresh clocks: the commit at the end of the last turn may have
         * taken milliseconds, which would otherwise make us sleep past a
         * wake-up (the wheel's due time). */
        read_clocks(r);
        int timeout = poll_timeout(r);
        if (r->watches.n > 0) {
            /* Then take the input without blocking: the wait covered it. */
            if (wait_for_events(r, r->input_backlog ? 0 : timeout) != 0)
                break;
            timeout = 0;
        }
        bool stop_loop = false;
        int64_t batch_start = -1;
        r->input_backlog = true; /* unless the queue is seen empty below */
        for (int n = 0; n < POLL_BATCH && !stop_loop; n++) {
            rd_kafka_message_t *m = rd_kafka_consumer_poll(r->consumer, n == 0 ? timeout : 0);
            if (n == 0 || (n & 63) == 0)
                read_clocks(r);
            if (!m) {
                r->input_backlog = false;
                break;
            }
            if (batch_start < 0)
                batch_start = r->now_mono_ms;
            if (m->err) {
                if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                    mc_log(&r->logger, MC_LOG_WARN, "consumer error", "error",
                           rd_kafka_message_errstr(m), (const char *)NULL);
                if (rd_kafka_fatal_error(r->consumer, NULL, 0))
                    atomic_store(&r->fatal, true);
            } else if (begin_txn(r) != 0 || handle_record(r, m) != 0) {
                /* begin again above: a rebalance callback inside this poll
                 * may have committed the transaction we had open. */
                stop_loop = true;
            }
            rd_kafka_message_destroy(m);
            /* Not on a commit request or a due wake-up: those are served
             * right after the batch, which is short, and breaking for them
             * would make a processor that fires continuously (the wheel)
             * consume one record per commit. */
            if (atomic_load(&r->fatal) || commit_due_by_size_or_age(r) ||
                r->now_mono_ms - batch_start >= POLL_BATCH_MS)
                break;
        }
        if (stop_loop)
            break;
        if (r->proc->punctuate && r->wakeup_ms != INT64_MAX && r->now_wall_ms >= r->wakeup_ms &&
            !atomic_load(&r->fatal)) {
            r->wakeup_ms = INT64_MAX;
            if (begin_txn(r) == 0 && r->proc->punctuate(r->self, r->now_wall_ms, &r->ctx) != 0)
                atomic_store(&r->fatal, true);
        }
        if (commit_due(r) && commit_txn(r) < 0)
            break;
        rd_kafka_poll(r->producer, 0); /* serve the producer's error/log events */
        update_lag(r);
    }

    /* Graceful stop: finish the open transaction, then leave the group (the
     * revoke callback runs inside close and commits nothing new). */
    if (!atomic_load(&r->fatal) && r->txn_open)
        commit_txn(r);
    if (atomic_load(&r->fatal) && r->txn_open) {
        /* Best effort: a fenced producer cannot abort, and the coordinator
         * aborts it after transaction.timeout.ms anyway. */
        rd_kafka_error_t *error = rd_kafka_abort_transaction(r->producer, 5000);
        if (error)
            rd_kafka_error_destroy(error);
        reset_txn_counters(r, false);
    }
    /* Leave the group even after a fatal error, so our partitions move to
     * another instance now rather than after the session timeout. */
    rd_kafka_consumer_close(r->consumer);
    bool fatal = atomic_load(&r->fatal);
    mc_log(&r->logger, fatal ? MC_LOG_ERROR : MC_LOG_INFO,
           fatal ? "stopped on a fatal error" : "stopped", (const char *)NULL);
    return fatal ? 1 : 0;
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
        if (r->outputs[i].rkt)
            rd_kafka_topic_destroy(r->outputs[i].rkt);
    for (size_t i = 0; i < r->n_md; i++)
        free(r->md[i].metadata);
    free(r->txn_inputs);
    free(r->positions);
    mc_fdset_free(&r->watches);
    if (r->consumer_queue) {
        rd_kafka_queue_io_event_enable(r->consumer_queue, -1, NULL, 0);
        rd_kafka_queue_destroy(r->consumer_queue);
    }
    for (int i = 0; i < 2; i++)
        if (r->queue_pipe[i] >= 0)
            close(r->queue_pipe[i]);
    mc_buf_free(&r->dead_buf);
    if (r->consumer)
        rd_kafka_destroy(r->consumer);
    if (r->producer)
        rd_kafka_destroy(r->producer);
    free(r);
}
