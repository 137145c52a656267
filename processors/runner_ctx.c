/* The context a processor sees under the runner (processor.h's mc_ctx): its
 * outputs, produced into the open transaction; an output Kafka refuses for
 * good traced back to the input that caused it and that input handled as
 * refused; pauses, commits asked for, wake-ups, descriptors; and the
 * questions a processor asks about topics. Plus one consumed record's way
 * into process(). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner_impl.h"

#include "kafka_targets.h"

/* How long a flush isolating a suspect's output may take (see produce). */
#define ISOLATE_FLUSH_MS 30000
/* A partition the producer does not know yet: the topic grew (a growth
 * under way writes to the new partitions before the client's next
 * metadata refresh). A metadata request updates the producer's view of the
 * topic; from the second time on it waits a second first, so a partition
 * that stays unknown stops the runner after UNKNOWN_PARTITION_TRIES. */
#define UNKNOWN_PARTITION_TRIES 30

/* ---- outputs and refused records ---- */

/* Outputs are few (a processor's topics, and the executor's Kafka targets),
 * so a list is enough; each is allocated on its own because processors keep
 * the pointer. */
static mc_output *ctx_output(mc_ctx *ctx, const char *name)
{
    mc_runner *r = RUNNER_OF(ctx);
    for (size_t i = 0; i < r->n_outputs; i++)
        if (strcmp(r->outputs[i]->name, name) == 0)
            return r->outputs[i];
    if (strlen(name) >= sizeof r->outputs[0]->name)
        return NULL;
    if (r->n_outputs == r->cap_outputs) {
        size_t cap = r->cap_outputs ? r->cap_outputs * 2 : 8;
        mc_output **v = realloc(r->outputs, cap * sizeof *v);
        if (!v)
            return NULL;
        r->outputs = v;
        r->cap_outputs = cap;
    }
    mc_output *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    snprintf(o->name, sizeof o->name, "%s", name);
    if (!(o->handle = r->kc->ops->output(r->kc, name))) {
        free(o);
        return NULL;
    }
    o->foreign = !mc_topic_is_own(r->cfg->topic_prefix, name);
    r->outputs[r->n_outputs] = o;
    char labels[400];
    snprintf(labels, sizeof labels, "processor=\"%s\",topic=\"%s\"", r->proc->name, name);
    o->records_out =
        mc_metrics_counter(r->metrics, "mooncake_records_out_total",
                           "Records written, counted when their transaction commits", labels);
    r->n_outputs++;
    return o;
}

/* Errors that belong to one record, not to Kafka or to us: retrying the same
 * record can only fail the same way. To a Kafka target (a topic of the
 * user's, named by the task) so do a topic this producer may not write or
 * that is not there: the task's fault, not the cluster's, so it must not
 * stop the partition (mooncake's own topics missing or forbidden are a
 * misconfiguration the runner stops for). */
static bool record_error(rd_kafka_resp_err_t err, bool foreign)
{
    if (err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ||
        err == RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE || err == RD_KAFKA_RESP_ERR_INVALID_RECORD)
        return true;
    return foreign &&
           (err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
            err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
            err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC || err == RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION);
}

/* Whether topic is the name of an output to a Kafka target. */
static bool foreign_output(const mc_runner *r, const char *topic)
{
    for (size_t i = 0; topic && i < r->n_outputs; i++)
        if (strcmp(r->outputs[i]->name, topic) == 0)
            return r->outputs[i]->foreign;
    return false;
}

static bool same_input(const txn_ref *a, const txn_ref *b)
{
    return a->topic == b->topic && a->partition == b->partition && a->offset == b->offset;
}

poisoned_input *runner_find_poison(mc_runner *r, const txn_ref *in)
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

void runner_settle_poison(mc_runner *r, bool committed)
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

/* Notes that the input at 1-based ref index idx had an output refused for
 * good; certain when the refusal can only be its own. */
static void add_poison(mc_runner *r, size_t idx, const char *topic, rd_kafka_resp_err_t err,
                       bool certain)
{
    if (idx == 0 || idx > r->n_refs)
        return; /* not caused by one input: abort and retry is all we can do */
    txn_ref *in = &r->refs[idx - 1];
    bool confirmed = certain || in->isolated || r->n_refs == 1;
    poisoned_input *p = runner_find_poison(r, in);
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
void runner_delivery_failed(void *arg, int producer, size_t ref, const char *topic,
                            rd_kafka_resp_err_t err)
{
    mc_runner *r = arg;
    /* Commit and abort serve their own producer's reports before the turn
     * passes, so this only drops a straggler of an abort that timed out: a
     * transaction whose refs are gone, whose failure is not the open one's. */
    if (producer != r->turn)
        return;
    r->delivery_failed = true; /* await_outputs: the transaction will not commit */
    if (record_error(err, foreign_output(r, topic)))
        add_poison(r, ref, topic, err, false);
}

size_t runner_add_ref(mc_runner *r, const txn_ref *in)
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
    txn_ref in = {runner_input_index(r, cause->topic), cause->partition, cause->offset, false};
    if (in.topic == SIZE_MAX)
        return 0;
    return runner_add_ref(r, &in);
}

/* Whether the input behind ref is a suspect whose outputs must go out on
 * their own, so that a refusal of them can only be theirs. */
static bool must_isolate(mc_runner *r, size_t ref)
{
    if (ref == 0 || r->n_poison == 0)
        return false;
    poisoned_input *p = runner_find_poison(r, &r->refs[ref - 1]);
    return p && !p->confirmed;
}

static int flush_for_isolation(mc_runner *r)
{
    rd_kafka_resp_err_t err = r->kc->ops->flush(r->kc, r->turn, ISOLATE_FLUSH_MS);
    if (err) {
        mc_log(&r->logger, MC_LOG_ERROR, "flush before an isolated output failed", "error",
               rd_kafka_err2str(err), (const char *)NULL);
        return -1;
    }
    return 0;
}

static void learn_partitions(mc_runner *r, mc_output *out, int attempt)
{
    if (attempt > 0)
        r->kc->ops->sleep_ms(r->kc, 1000);
    char err[256];
    r->kc->ops->partition_count(r->kc, out->name, r->turn, 5000, err, sizeof err);
}

static int ctx_produce(mc_ctx *ctx, const mc_produce *p)
{
    mc_runner *r = RUNNER_OF(ctx);
    mc_kclient *kc = r->kc;
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
        rd_kafka_resp_err_t err =
            kc->ops->produce(kc, r->turn, p->out->handle, p->partition, p, ref);
        if (!err) {
            p->out->pending++;
            r->txn_dirty = true;
            r->txn_produced = true;
            return isolate ? flush_for_isolation(r) : 0;
        }
        if (err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC && p->out->foreign) {
            /* A target created since this producer last looked: ask once,
             * without a pause (the transaction is open); still unknown, it
             * is the caller's to try later. */
            if (unknown++ == 0) {
                learn_partitions(r, p->out, 0);
                continue;
            }
            return MC_FORWARD_UNKNOWN_TOPIC;
        }
        if (record_error(err, p->out->foreign)) {
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
        if (err == RD_KAFKA_RESP_ERR__STATE && !kc->ops->producer_fatal(kc, r->turn)) {
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
        /* The local queue is full: let the client drain it, then try again. */
        kc->ops->serve(kc, r->turn, 10);
    }
}

/* ---- the rest of the ctx ---- */

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
    input_part *p = runner_part_named(r, topic, partition);
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
    mc_runner *r = RUNNER_OF(ctx);
    atomic_store(&r->loop_heartbeat_ms, r->kc->ops->mono_ms(r->kc));
}

/* The client marks the assignment lost on its own thread when it gives up
 * on the session, which it checks about once a second (an atomic flag,
 * cleared by our assign in the rebalance callback, after on_revoke). A fatal
 * error counts too: a consumer fenced as a static member unassigns by
 * itself and clears the flag at once, and a fenced producer will not
 * commit. So does a loop stuck (in a commit on a broker in trouble) until
 * its poll interval nearly runs out: it may be evicted from a rebalance
 * under way without the flag being set (librdkafka skips a revoke while
 * rebalancing), so the processor lets go a little before. Any thread. */
#define LOOP_STUCK_MARGIN_MS 10000
static bool ctx_assignment_lost(const mc_ctx *ctx)
{
    mc_runner *r = RUNNER_OF(ctx);
    mc_kclient *kc = r->kc;
    long long turned = atomic_load(&r->loop_heartbeat_ms);
    return atomic_load(&r->fatal) || kc->ops->consumer_fatal(kc, NULL, 0) ||
           kc->ops->assignment_lost(kc) ||
           (turned > 0 &&
            kc->ops->mono_ms(kc) - turned > MC_KCLIENT_MAX_POLL_INTERVAL_MS - LOOP_STUCK_MARGIN_MS);
}

static int ctx_watch_fd(mc_ctx *ctx, int fd, short events, mc_fd_callback cb, void *arg)
{
    mc_runner *r = RUNNER_OF(ctx);
    if (events && !r->input_fd_asked) {
        int in = r->kc->ops->input_fd(r->kc);
        if (in == -2) {
            mc_log(&r->logger, MC_LOG_ERROR, "cannot watch the consumer's queue", "error",
                   strerror(errno), (const char *)NULL);
            return -1;
        }
        r->input_fd_asked = true;
        r->input_fd = in;
        mc_evloop_set_wake(&r->loop, r->input_fd);
        /* Whatever is queued already will not be announced. */
        r->input_backlog = true;
    }
    return mc_evloop_watch(&r->loop, fd, events, MC_EV_FN(cb), arg);
}

static int ctx_pause(mc_ctx *ctx, const char *topic, int32_t partition, bool pause)
{
    mc_runner *r = RUNNER_OF(ctx);
    mc_kclient *kc = r->kc;
    if (!pause && r->draining)
        return 0;
    input_part *ip = runner_part_named(r, topic, partition);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, topic, partition);
    rd_kafka_resp_err_t err = kc->ops->pause(kc, l, pause);
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
        } else if (kc->ops->position(kc, l) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            at = l->elems[0].offset;
        }
        if (at >= 0) {
            l->elems[0].offset = at;
            mc_kerror e;
            kc->ops->seek(kc, l, 0, &e);
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    return err ? -1 : 0;
}

static void restore_tick(void *arg)
{
    ctx_alive(arg);
}

static int ctx_high_watermarks(mc_ctx *ctx, const char *topic_suffix, const int32_t *partitions,
                               size_t n, int64_t *ends, int timeout_ms, char *err, size_t errlen)
{
    mc_runner *r = RUNNER_OF(ctx);
    char topic[256];
    mc_topic_name(r->cfg, topic_suffix, topic, sizeof topic);
    return r->kc->ops->high_watermarks(r->kc, topic, partitions, n, ends, timeout_ms, err, errlen);
}

static int ctx_restore(mc_ctx *ctx, const char *topic_suffix, const int32_t *partitions, size_t n,
                       mc_restore_fn fn, void *arg, mc_restore_stats *stats)
{
    mc_runner *r = RUNNER_OF(ctx);
    char topic[256];
    mc_topic_name(r->cfg, topic_suffix, topic, sizeof topic);
    return r->kc->ops->restore(r->kc, topic, partitions, n, fn, arg, restore_tick, ctx, stats);
}

static int ctx_partition_count(mc_ctx *ctx, const char *topic, char *err, size_t errlen)
{
    mc_runner *r = RUNNER_OF(ctx);
    return r->kc->ops->partition_count(r->kc, topic, -1, 10000, err, errlen);
}

static int64_t ctx_end_offset(mc_ctx *ctx, const char *topic_suffix, int32_t partition, char *err,
                              size_t errlen)
{
    mc_runner *r = RUNNER_OF(ctx);
    char topic[256];
    mc_topic_name(r->cfg, topic_suffix, topic, sizeof topic);
    return r->kc->ops->end_offset(r->kc, topic, partition, 10000, err, errlen);
}

/* The consumer's application position: past the commit markers and aborted
 * records it skipped, not only past the last record delivered. It has none
 * until a fetch returned something after the seek (librdkafka 2.0: a
 * partition seeked to its end stays at INVALID), and then the next record
 * is the one it was seeked to: what the group had committed. */
static int64_t ctx_position(mc_ctx *ctx, const char *topic, int32_t partition)
{
    mc_runner *r = RUNNER_OF(ctx);
    input_part *ip = runner_part_named(r, topic, partition);
    if (!ip || !ip->assigned)
        return -1;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, topic, partition);
    int64_t at = -1;
    if (r->kc->ops->position(r->kc, l) == RD_KAFKA_RESP_ERR_NO_ERROR && !l->elems[0].err &&
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
    return r->kc->ops->list_ends(r->kc, -1, topics, n, partitions, n_partitions, ends, timeout_ms,
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
    return r->kc->ops->list_ends(r->kc, r->turn, topics, 1, partitions, n, ends, timeout_ms, err,
                                 errlen);
}

const mc_ctx_ops runner_ctx_ops = {
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

/* ---- one record ---- */

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
 * through process() and its refused output again, for ever. */
static int handle_refused(mc_runner *r, const mc_record *rec, const txn_ref *in, poisoned_input *p)
{
    char reason[sizeof p->reason];
    memcpy(reason, p->reason, sizeof reason);
    r->current_ref = runner_add_ref(r, in);
    r->in_process = true;
    int rc = r->proc->refused ? r->proc->refused(r->self, rec, reason, &r->ctx)
                              : mc_ctx_dead_letter(&r->ctx, rec, reason, NULL);
    r->in_process = false;
    r->current_ref = 0;
    if (rc != 0 && r->txn_failed)
        return runner_callback_failed(r, "handling a refused record");
    if (rc != 0) {
        runner_set_fatal(r, "handling a refused record", reason);
        return -1;
    }
    if ((p = runner_find_poison(r, in)) != NULL) /* add_poison may have moved the table */
        p->handled = true;
    mc_counter_add(r->poison_dead, 1);
    runner_mark_processed(r, in->topic, in->partition, in->offset);
    return 0;
}

int runner_handle_record(mc_runner *r, const mc_record *rec)
{
    txn_ref in = {runner_input_index(r, rec->topic), rec->partition, rec->offset, false};
    input_part *ip = runner_part_of(r, in.topic, in.partition);
    if (in.topic == SIZE_MAX || given_back(ip, rec->offset))
        return 0;
    r->inputs[in.topic].pending++;
    r->txn_records++;
    r->txn_dirty = true;
    poisoned_input *p = r->n_poison ? runner_find_poison(r, &in) : NULL;
    if (p && p->confirmed)
        return handle_refused(r, rec, &in, p);
    r->current_ref = runner_add_ref(r, &in);
    r->poison_found = false;
    r->in_process = true;
    int rc = r->proc->process(r->self, rec, &r->ctx);
    r->in_process = false;
    r->current_ref = 0;
    ip = runner_part_of(r, in.topic, in.partition); /* the table may have grown meanwhile */
    if (rc == MC_PROCESS_LATER && ip) {
        /* Given back: not taken, not counted. */
        ip->resume_at = rec->offset;
        r->inputs[in.topic].pending--;
        r->txn_records--;
        return 0;
    }
    if (rc != 0 && r->poison_found) {
        /* Its other outputs may be in the transaction: abort, and the
         * rewind brings it back to be handled as refused. */
        r->txn_failed = false;
        return runner_abort_txn(r, "an output was refused");
    }
    if (rc != 0)
        return runner_callback_failed(r, "process");
    runner_mark_processed(r, in.topic, in.partition, in.offset);
    return 0;
}
