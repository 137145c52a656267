/* The runner's side of the consumer group: the table of input partitions,
 * what an assignment and a revoke (orderly or lost) do to the open
 * transaction and the processor, and leaving the group on a graceful stop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner_impl.h"

/* ---- the input partitions ---- */

size_t runner_input_index(const mc_runner *r, const char *topic)
{
    for (size_t i = 0; i < r->n_inputs; i++)
        if (strcmp(r->inputs[i].name, topic) == 0)
            return i;
    return SIZE_MAX;
}

input_part *runner_part_of(mc_runner *r, size_t topic, int32_t partition)
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

input_part *runner_part_named(mc_runner *r, const char *topic, int32_t partition)
{
    return runner_part_of(r, runner_input_index(r, topic), partition);
}

void runner_set_str(char **dst, const char *src)
{
    free(*dst);
    *dst = src ? strdup(src) : NULL;
}

/* Forgets what the processor asked for and where processing was: after a
 * seek to the committed offsets (an assignment, a rewind), or a revoke. */
void runner_part_reset(input_part *p, bool assigned, int64_t committed, const char *committed_md)
{
    p->assigned = assigned;
    p->next = -1;
    p->dirty = false;
    p->resume_at = -1;
    p->committed = committed;
    runner_set_str(&p->committed_md, committed_md && *committed_md ? committed_md : NULL);
    runner_set_str(&p->md, NULL);
    p->md_offset = -1;
}

/* Every listed partition starts from its committed offset, unpaused (a
 * pause belongs to the processor's state, which starts afresh), or paused
 * when we are draining. */
void runner_take_assignment(mc_runner *r, const rd_kafka_topic_partition_list_t *parts)
{
    for (int i = 0; i < parts->cnt; i++) {
        const rd_kafka_topic_partition_t *tp = &parts->elems[i];
        input_part *p = runner_part_named(r, tp->topic, tp->partition);
        if (!p)
            continue;
        char *md = NULL;
        if (tp->metadata && tp->metadata_size) {
            md = strndup(tp->metadata, tp->metadata_size);
            if (!md)
                continue;
        }
        runner_part_reset(p, true, tp->offset >= 0 ? tp->offset : -1, md);
        free(md);
    }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_copy(parts);
    rd_kafka_resp_err_t err = r->kc->ops->pause(r->kc, l, r->draining);
    if (err)
        mc_log(&r->logger, MC_LOG_WARN, "cannot reset pauses after an assignment", "error",
               rd_kafka_err2str(err), (const char *)NULL);
    rd_kafka_topic_partition_list_destroy(l);
}

static void drop_assignment(mc_runner *r, const rd_kafka_topic_partition_list_t *parts)
{
    for (int i = 0; i < parts->cnt; i++) {
        input_part *p = runner_part_named(r, parts->elems[i].topic, parts->elems[i].partition);
        if (p)
            runner_part_reset(p, false, -1, NULL);
    }
    /* The suspects of other partitions stay. */
    size_t kept = 0;
    for (size_t i = 0; i < r->n_poison; i++) {
        const txn_ref *at = &r->poison[i].at;
        if (!rd_kafka_topic_partition_list_find(parts, r->inputs[at->topic].name, at->partition))
            r->poison[kept++] = r->poison[i];
    }
    r->n_poison = kept;
}

/* Ours, not the consumer's assignment: a consumer fenced as a static member
 * unassigns by itself, with no rebalance callback, and the processor would
 * keep what it holds until it is freed. */
rd_kafka_topic_partition_list_t *runner_held_partitions(mc_runner *r)
{
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(16);
    for (size_t t = 0; t < r->n_inputs; t++)
        for (int32_t i = 0; i < r->inputs[t].n_parts; i++)
            if (r->inputs[t].parts[i].assigned)
                rd_kafka_topic_partition_list_add(parts, r->inputs[t].name, i);
    return parts;
}

/* ---- rebalances ---- */

/* The gauge of assigned partitions: every input partition held. */
static void count_held(mc_runner *r)
{
    rd_kafka_topic_partition_list_t *held = runner_held_partitions(r);
    mc_gauge_set(r->assigned_partitions, held->cnt);
    rd_kafka_topic_partition_list_destroy(held);
}

static void on_partitions_assigned(mc_runner *r, rd_kafka_topic_partition_list_t *parts)
{
    mc_kclient *kc = r->kc;
    if (r->leaving || atomic_load(&r->stop)) {
        /* Taken only as the protocol needs, as the instance is going: the
         * runner and the processor do not hold them (no committed offsets
         * read, nothing restored), so the revoke that follows lets go of
         * nothing of theirs. */
        kc->ops->assign(kc, parts);
        return;
    }
    /* Read the committed offsets (and metadata) ourselves so the processor
     * sees exactly where consumption resumes (nothing to read for an
     * assignment of nothing: a member beyond the partition count). */
    rd_kafka_resp_err_t cerr = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (parts->cnt > 0) {
        runner_watch(r, "committed (assignment)", 30000);
        cerr = kc->ops->committed(kc, parts, 30000);
        runner_unwatch(r);
    }
    if (cerr) {
        runner_set_fatal(r, "cannot read committed offsets", rd_kafka_err2str(cerr));
        kc->ops->unassign(kc);
        return;
    }
    rd_kafka_resp_err_t aerr = kc->ops->assign(kc, parts);
    if (aerr) {
        runner_set_fatal(r, "cannot take the assignment", rd_kafka_err2str(aerr));
        return;
    }
    runner_take_assignment(r, parts);
    mc_logf(&r->logger, MC_LOG_INFO, "assigned %d partitions", parts->cnt);
    /* on_assign may write (the router its layout markers): in a transaction,
     * which the revoke before this one may have committed. Not after a fatal
     * error (that revoke's commit, say): its transaction may still be open
     * on the partitions given back, and a restore would wait for it until
     * the broker's transaction timeout - only to stop then. */
    if (r->proc->on_assign && !atomic_load(&r->fatal) &&
        (runner_begin_txn(r) != 0 || r->proc->on_assign(r->self, parts, &r->ctx) != 0))
        runner_set_fatal(r, "on_assign", r->proc->name);
    /* After on_assign: the gauge says "these partitions are served". */
    count_held(r);
    atomic_store(&r->assigned_once, true);
}

/* How often a revoke looks again at what the processor has in flight. */
#define REVOKE_DRAIN_STEP_MS 5
/* The longest a revoke waits for it: 30 s inside max.poll.interval.ms. */
#define MAX_REVOKE_DRAIN_MS (MC_KCLIENT_MAX_POLL_INTERVAL_MS - 30000)

/* An orderly revoke: the processor lets the work in flight on these
 * partitions end (the executor's calls), reporting it in the open
 * transaction, before the revoke's commit, so that the next owner repeats
 * none of it. Bounded by --drain-timeout-ms, or by the deadline of a stop
 * that is draining already (its revoke comes after that drain). Long
 * drains commit on the way, as the loop does: a transaction older than the
 * broker's transaction timeout would be aborted under us. An abortable
 * error here aborts without a rewind (in_revoke): the processor drops its
 * work first, and the next owner redoes it from the last commit. */
static void drain_before_revoke(mc_runner *r, const rd_kafka_topic_partition_list_t *parts)
{
    mc_kclient *kc = r->kc;
    if (!r->proc->revoke_drained || parts->cnt == 0)
        return;
    int64_t started = r->now_mono_ms;
    /* Inside the rebalance callback: a member that does not rejoin within
     * max.poll.interval.ms is dropped from the group, so the wait ends well
     * before, whatever --drain-timeout-ms says. */
    int64_t bound = r->cfg->drain_timeout_ms < MAX_REVOKE_DRAIN_MS ? r->cfg->drain_timeout_ms
                                                                   : MAX_REVOKE_DRAIN_MS;
    int64_t deadline = started + bound;
    if (r->draining && r->drain_deadline < deadline)
        deadline = r->drain_deadline;
    bool waited = false;
    while (!atomic_load(&r->fatal) && !kc->ops->assignment_lost(kc)) {
        /* A stop asked for meanwhile drains within this deadline, not a
         * new one after it: the grace period counts from the signal. */
        if (atomic_load(&r->stop) && !r->draining)
            runner_begin_stop_drain(r, deadline);
        if (runner_begin_txn(r) != 0)
            return;
        int rc = r->proc->revoke_drained(r->self, parts, &r->ctx);
        if (rc < 0 && runner_callback_failed(r, "revoke_drained") != 0)
            return;
        if (rc > 0) {
            if (waited)
                mc_logf(&r->logger, MC_LOG_INFO, "work in flight ended %lld ms into the revoke",
                        (long long)(r->now_mono_ms - started));
            return;
        }
        if (r->now_mono_ms >= deadline) {
            mc_log(&r->logger, MC_LOG_WARN,
                   "work still in flight at --drain-timeout-ms is given up with its partitions",
                   (const char *)NULL);
            return;
        }
        waited = true;
        /* What ended is reported through the processor's descriptors. */
        if (mc_evloop_run_once(&r->loop, 0, NULL) > 0 ||
            (runner_commit_due(r) && runner_commit_txn(r) < 0))
            return;
        kc->ops->sleep_ms(kc, REVOKE_DRAIN_STEP_MS);
        runner_read_clocks(r);
    }
}

/* Revoked: commit what we did so the next owner starts after it, then the
 * processor lets go. Lost (we were kicked out of the group): our transaction
 * may no longer commit its offsets, so the processor lets go first - the
 * abort can wait on the coordinator, and no call of a lost partition should
 * start meanwhile - and we abort; the new owner redoes it. */
static void on_partitions_revoked(mc_runner *r, rd_kafka_topic_partition_list_t *parts)
{
    mc_kclient *kc = r->kc;
    r->in_revoke = true;
    if (!kc->ops->assignment_lost(kc))
        drain_before_revoke(r, parts);
    if (kc->ops->assignment_lost(kc)) {
        mc_log(&r->logger, MC_LOG_WARN, "partitions lost", (const char *)NULL);
        if (r->proc->on_revoke)
            r->proc->on_revoke(r->self, parts, &r->ctx);
        runner_abort_quietly(r, "abort_transaction (lost)", 30000);
    } else {
        if (r->txn_open && !atomic_load(&r->fatal))
            runner_commit_txn(r);
        if (r->proc->on_revoke)
            r->proc->on_revoke(r->self, parts, &r->ctx);
    }
    r->in_revoke = false;
    /* Whatever we knew of these partitions is stale once another instance
     * may have moved them on: positions, suspects, metadata. */
    drop_assignment(r, parts);
    mc_logf(&r->logger, MC_LOG_INFO, "revoked %d partitions", parts->cnt);
    kc->ops->unassign(kc);
    count_held(r);
}

void runner_rebalance(void *arg, mc_rebalance what, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *parts)
{
    mc_runner *r = arg;
    runner_read_clocks(r); /* the processor's callbacks see the time of the rebalance */
    if (what == MC_REBALANCE_ASSIGN) {
        on_partitions_assigned(r, parts);
    } else if (what == MC_REBALANCE_REVOKE) {
        on_partitions_revoked(r, parts);
    } else {
        mc_log(&r->logger, MC_LOG_ERROR, "rebalance failed", "error", rd_kafka_err2str(err),
               (const char *)NULL);
        r->kc->ops->unassign(r->kc);
    }
}

/* ---- leaving ---- */

/* Polls the consumer for up to 10 ms, serving rebalance callbacks; false once
 * the client has found it fenced (FENCED_INSTANCE_ID: a successor took our
 * id), which stops its group state machine for good. Records fetched are
 * dropped unprocessed: the last transaction is committed and their offsets
 * with it are not, so the next owner reads them. */
static bool poll_while_leaving(mc_runner *r)
{
    mc_kmsg m;
    if (r->kc->ops->poll(r->kc, 10, &m))
        r->kc->ops->kmsg_done(r->kc, &m);
    char why[512];
    if (r->kc->ops->consumer_fatal(r->kc, why, sizeof why)) {
        runner_set_fatal(r, "consumer", why);
        return false;
    }
    return true;
}

/* How long a stop may wait to leave the group: the session timeout, what not
 * leaving would cost, but at most 15 s, so that it fits in what the chart's
 * grace period leaves after the executor's drain (20 s) with close after it. */
static int64_t leave_deadline_ms(mc_runner *r)
{
    int64_t session_ms = r->kc->ops->session_timeout_ms(r->kc);
    return r->kc->ops->mono_ms(r->kc) + (session_ms > 15000 ? 15000 : session_ms);
}

/* A member still joining has no id yet, but the broker added it with its
 * JoinGroup (static members are added at once): unsubscribing now would drop
 * the answer and leave a ghost holding partitions. Waits for the id; false
 * if it did not come (fenced, or the deadline). */
static bool wait_for_member_id(mc_runner *r, int64_t deadline)
{
    while (!r->kc->ops->is_member(r->kc)) {
        if (r->kc->ops->mono_ms(r->kc) >= deadline || !poll_while_leaving(r))
            return false;
    }
    return true;
}

/* After the unsubscribe: the client revokes (during a rebalance it first
 * completes it, so an assignment may come before), then sends LeaveGroup and
 * clears the member id. Waits for that; false if it did not happen. */
static bool wait_until_left(mc_runner *r, int64_t deadline)
{
    while (r->kc->ops->is_member(r->kc)) {
        if (r->kc->ops->mono_ms(r->kc) >= deadline || !poll_while_leaving(r))
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
void runner_leave_group(mc_runner *r)
{
    mc_kclient *kc = r->kc;
    if (kc->ops->consumer_fatal(kc, NULL, 0))
        return; /* fenced by a successor: no membership left to give up */
    int64_t deadline = leave_deadline_ms(r);
    r->leaving = true;
    bool had_id =
        kc->ops->is_member(kc) || (!atomic_load(&r->fatal) && wait_for_member_id(r, deadline));
    if (kc->ops->consumer_fatal(kc, NULL, 0))
        return;
    rd_kafka_resp_err_t err = kc->ops->unsubscribe(kc);
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
    if (!wait_until_left(r, deadline) && !kc->ops->consumer_fatal(kc, NULL, 0))
        mc_log(&r->logger, MC_LOG_WARN,
               "could not leave the group in time; a new instance under this id, or the "
               "session timeout, frees our partitions",
               (const char *)NULL);
}
