/* The runner's transactions: begin, commit with the input offsets, abort and
 * rewind, and the one classification of every transactional error into
 * retry, abort or give up - the shape of librdkafka's examples/transactions.c.
 * Outputs and progress become visible together or not at all. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner_impl.h"

/* How long a commit waits in await_outputs before commit_transaction: an
 * acknowledgement takes milliseconds; past this, something is wrong and
 * commit_transaction's own flush and error handling take over. */
#define AWAIT_OUTPUTS_MS 200

/* ---- error classes ---- */

txn_verdict runner_txn_error(mc_runner *r, const char *what, const mc_kerror *e)
{
    txn_verdict v;
    const char *cls;
    switch (e->cls) {
    case MC_KERR_FATAL:
        v = TXN_FATAL;
        cls = "fatal";
        break;
    case MC_KERR_ABORTABLE:
        v = TXN_ABORT;
        cls = "abortable";
        break;
    case MC_KERR_RETRIABLE:
        v = TXN_RETRY;
        cls = "retriable";
        break;
    default:
        /* Neither retriable nor abortable (e.g. a state error): nothing safe
         * is left to do but exit and let a fresh process take over. */
        v = TXN_FATAL;
        cls = "unexpected";
        break;
    }
    mc_log(&r->logger, v == TXN_RETRY ? MC_LOG_WARN : MC_LOG_ERROR, "transaction error", "op", what,
           "class", cls, "error", e->text, (const char *)NULL);
    if (v == TXN_FATAL)
        runner_set_fatal(r, what, e->text);
    return v;
}

/* ---- bookkeeping ---- */

void runner_reset_txn(mc_runner *r, bool committed)
{
    runner_settle_poison(r, committed);
    r->txn_failed = false;
    for (size_t i = 0; i < r->n_outputs; i++) {
        mc_output *o = r->outputs[i];
        if (committed)
            mc_counter_add(o->records_out, o->pending);
        o->pending = 0;
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
    r->turn = (r->turn + 1) % r->kc->n_producers;
}

int runner_begin_txn(mc_runner *r)
{
    if (r->txn_open)
        return 0;
    mc_kerror e;
    if (r->kc->ops->begin(r->kc, r->turn, &e) != 0) {
        /* begin only fails on a programming or fatal state error */
        runner_txn_error(r, "begin_transaction", &e);
        runner_set_fatal(r, "begin_transaction", "cannot begin a transaction");
        return -1;
    }
    r->txn_open = true;
    /* The clock as it is now: the loop last read it before the previous
     * commit, and a commit slower than the commit interval would otherwise
     * make this transaction due at its first record (and so the next commit
     * as slow again: one record per commit). */
    r->txn_started_ms = r->kc->ops->mono_ms(r->kc);
    return 0;
}

int runner_init_transactions(mc_runner *r)
{
    for (int i = 0; i < r->kc->n_producers; i++) {
        for (;;) {
            if (atomic_load(&r->stop))
                return -1;
            mc_kerror e;
            runner_watch(r, "init_transactions", 30000);
            int rc = r->kc->ops->init_transactions(r->kc, i, 30000, &e);
            runner_unwatch(r);
            if (rc == 0)
                break;
            if (runner_txn_error(r, "init_transactions", &e) != TXN_RETRY)
                return -1;
        }
    }
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
        input_part *p = runner_part_named(r, l->elems[i].topic, l->elems[i].partition);
        if (!p)
            continue;
        p->committed = l->elems[i].offset;
        runner_set_str(&p->committed_md, l->elems[i].metadata_size ? l->elems[i].metadata : NULL);
    }
}

void runner_mark_processed(mc_runner *r, size_t topic, int32_t partition, int64_t offset)
{
    input_part *p = runner_part_of(r, topic, partition);
    if (p) {
        p->next = offset + 1;
        p->dirty = true;
    }
}

/* ---- abort and rewind ---- */

/* Everything since the last commit is about to be undone: the processor
 * forgets its work on every assigned partition (on_revoke), and the rewind
 * or the revoke that follows the abort starts it again. */
void runner_drop_processor_work(mc_runner *r)
{
    if (!r->proc->on_revoke)
        return;
    rd_kafka_topic_partition_list_t *parts = runner_held_partitions(r);
    if (parts->cnt > 0)
        r->proc->on_revoke(r->self, parts, &r->ctx);
    rd_kafka_topic_partition_list_destroy(parts);
}

/* Forgets what the runner knew of the partitions it thinks it has and the
 * consumer no longer does (runner_drop_processor_work dropped them from the
 * processor), so the rewind leaves no position of theirs to commit. */
static void forget_unassigned(mc_runner *r, const rd_kafka_topic_partition_list_t *parts)
{
    for (size_t t = 0; t < r->n_inputs; t++)
        for (int32_t i = 0; i < r->inputs[t].n_parts; i++)
            if (r->inputs[t].parts[i].assigned &&
                !rd_kafka_topic_partition_list_find(parts, r->inputs[t].name, i))
                runner_part_reset(&r->inputs[t].parts[i], false, -1, NULL);
}

/* After an abort the consumer has run ahead of what is committed and the
 * processor's memory holds the effects of the aborted records. Seek every
 * assigned partition back to its committed offset and make the processor
 * rebuild its state for them, exactly as if they had been newly assigned. */
static void rewind_to_committed(mc_runner *r)
{
    mc_kclient *kc = r->kc;
    rd_kafka_topic_partition_list_t *parts = NULL;
    if (kc->ops->assignment(kc, &parts) || !parts)
        return;
    forget_unassigned(r, parts);
    if (parts->cnt == 0) {
        rd_kafka_topic_partition_list_destroy(parts);
        return;
    }
    /* The abort dropped the processor's work on these partitions already. */
    runner_watch(r, "committed (rewind)", 30000);
    rd_kafka_resp_err_t err = kc->ops->committed(kc, parts, 30000);
    runner_unwatch(r);
    if (err) {
        runner_set_fatal(r, "cannot read committed offsets to rewind", rd_kafka_err2str(err));
        rd_kafka_topic_partition_list_destroy(parts);
        return;
    }
    runner_take_assignment(r, parts);
    for (int i = 0; i < parts->cnt; i++)
        if (parts->elems[i].offset < 0)
            parts->elems[i].offset = RD_KAFKA_OFFSET_BEGINNING;
    mc_kerror e;
    runner_watch(r, "seek (rewind)", 30000);
    int seek_rc = kc->ops->seek(kc, parts, 30000, &e);
    runner_unwatch(r);
    if (seek_rc != 0)
        runner_set_fatal(r, "cannot seek to committed offsets", e.text);
    /* on_assign may write (the router its layout markers): in a transaction. */
    if (!atomic_load(&r->fatal) && r->proc->on_assign &&
        (runner_begin_txn(r) != 0 || r->proc->on_assign(r->self, parts, &r->ctx) != 0))
        runner_set_fatal(r, "on_assign after a rewind", r->proc->name);
    rd_kafka_topic_partition_list_destroy(parts);
}

int runner_abort_txn(mc_runner *r, const char *why)
{
    if (!r->txn_open)
        return 0;
    mc_log(&r->logger, MC_LOG_WARN, "aborting transaction", "reason", why, (const char *)NULL);
    /* The processor drops its work first: the abort can wait seconds on the
     * coordinator (an epoch bump after a broker restart), and an executor's
     * HTTP thread would meanwhile make calls the rewind makes again. */
    runner_drop_processor_work(r);
    for (;;) {
        mc_kerror e;
        runner_watch(r, "abort_transaction", 30000);
        int rc = r->kc->ops->abort(r->kc, r->turn, 30000, &e);
        runner_unwatch(r);
        if (rc == 0)
            break;
        if (runner_txn_error(r, "abort_transaction", &e) != TXN_RETRY) {
            /* The processor's work is dropped: committing anything now could
             * mark records finished whose outputs were aborted. */
            runner_set_fatal(r, "abort_transaction", "the abort itself failed");
            return -1;
        }
    }
    mc_counter_add(r->txn_aborted, 1);
    runner_reset_txn(r, false);
    pass_turn(r);
    if (!r->in_revoke)
        rewind_to_committed(r);
    return 0;
}

bool runner_abort_quietly(mc_runner *r, const char *what, int timeout_ms)
{
    if (!r->txn_open)
        return false;
    mc_kerror e;
    runner_watch(r, "abort_transaction", timeout_ms);
    bool aborted = r->kc->ops->abort(r->kc, r->turn, timeout_ms, &e) == 0;
    runner_unwatch(r);
    if (what && aborted)
        mc_counter_add(r->txn_aborted, 1);
    else if (what)
        runner_txn_error(r, what, &e);
    runner_reset_txn(r, false);
    if (what && aborted)
        pass_turn(r);
    return aborted;
}

/* ---- commit ---- */

static int send_offsets(mc_runner *r, rd_kafka_topic_partition_list_t *offsets)
{
    for (;;) {
        mc_kerror e;
        runner_watch(r, "send_offsets_to_transaction", 30000);
        int rc = r->kc->ops->send_offsets(r->kc, r->turn, offsets, 30000, &e);
        runner_unwatch(r);
        if (rc == 0)
            return 0;
        txn_verdict v = runner_txn_error(r, "send_offsets_to_transaction", &e);
        if (v == TXN_RETRY)
            continue;
        if (v == TXN_ABORT)
            return runner_abort_txn(r, "send_offsets_to_transaction failed") == 0 ? 1 : -1;
        return -1;
    }
}

/* Flushes in steps of a millisecond, for at most AWAIT_OUTPUTS_MS, until the
 * broker has acknowledged every output; for a commit the processor asked for
 * now (an output that cannot wait: a task due already, fired by the router or
 * the wheel, or the wheel's recall of a task the executor holds).
 * commit_transaction flushes too, but by polling in steps of up to 10 ms
 * that only a delivery report ends early, and the runner asks for error
 * reports only (every report cost more than it saved at 5,000 tasks/s): such
 * a commit waited out most of a step, 7 ms of each hop a task due now takes.
 * A flush, unlike a poll, also sends what linger.ms still holds back. Other
 * commits (the executor's Results, the wheel's fires a lead ahead of their
 * time) keep librdkafka's pace: nothing waits on them, and a flush that
 * overrides linger.ms makes more, smaller requests to a broker that may be
 * short of CPU already (flushing every commit asked for made tasks due 2 s
 * ahead at 5,000/s later). What is unacknowledged after the bound is left to
 * commit_transaction's own flush and its error handling. */
static void await_outputs(mc_runner *r)
{
    mc_kclient *kc = r->kc;
    int64_t until = kc->ops->mono_ms(kc) + AWAIT_OUTPUTS_MS;
    /* After a failed delivery the transaction is abortable and the client
     * sends nothing more: the queue would never empty. */
    while (!r->delivery_failed && kc->ops->outq_len(kc, r->turn) > 0 &&
           kc->ops->mono_ms(kc) < until)
        kc->ops->flush(kc, r->turn, 1);
}

int runner_commit_txn(mc_runner *r)
{
    if (!r->txn_open)
        return 0;
    mc_kclient *kc = r->kc;
    if (!r->txn_dirty) {
        /* Nothing consumed or produced: an empty commit is just an abort. */
        mc_kerror e;
        runner_watch(r, "abort_transaction (empty)", 30000);
        bool aborted = kc->ops->abort(kc, r->turn, 30000, &e) == 0;
        runner_unwatch(r);
        if (!aborted && runner_txn_error(r, "abort_transaction (empty)", &e) == TXN_FATAL)
            return -1;
        runner_reset_txn(r, false);
        if (aborted)
            pass_turn(r);
        return 0;
    }
    if (r->proc->prepare_commit && r->proc->prepare_commit(r->self, &r->ctx) != 0) {
        runner_set_fatal(r, "prepare_commit", r->proc->name);
        return -1;
    }
    int64_t t0 = kc->ops->mono_ms(kc);
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
        mc_kerror e;
        runner_watch(r, "commit_transaction", 30000);
        int rc = kc->ops->commit(kc, r->turn, 30000, &e);
        runner_unwatch(r);
        if (rc == 0)
            break;
        txn_verdict v = runner_txn_error(r, "commit_transaction", &e);
        if (v == TXN_RETRY)
            continue;
        rd_kafka_topic_partition_list_destroy(offsets);
        if (v == TXN_ABORT)
            return runner_abort_txn(r, "commit_transaction failed") == 0 ? 1 : -1;
        return -1;
    }
    note_committed(r, offsets);
    rd_kafka_topic_partition_list_destroy(offsets);
    mc_histogram_observe(r->commit_latency, (double)(kc->ops->mono_ms(kc) - t0) / 1000.0);
    mc_counter_add(r->txn_committed, 1);
    runner_reset_txn(r, true);
    pass_turn(r);
    return 0;
}
