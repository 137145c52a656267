/* The wheel: fires each task to `ready` at its due millisecond, exactly once,
 * in due order - the old producer's TimeWheel and CheckPoint.
 *
 * Input is the `wheel` topic (see wheel_topic.h). Per partition the wheel
 * keeps a timing wheel of pending tasks and, per key, a version floor:
 * "versions below this are void". A Submit is taken if its version is not
 * below the floor and newer than what is pending; a Cancel, or a far
 * Submit routed to the store, raises the floor and drops what is pending;
 * firing version (v, a) raises the floor to (v, a + 1), so the next attempt
 * of a failed call, (v, a + 1), is taken and anything older is not.
 *
 * Why floors must outlive the task. Two kinds of record can arrive after a
 * newer version has been seen:
 *  - a hand-off: the store hands a task over a little before it enters the
 *    horizon, and a newer version or a cancel written by the router in that
 *    instant can reach `wheel` first. The store says how far it has applied
 *    `wheel` with its position markers; a hand-off written after marker P can
 *    only be stale relative to records at or after P.
 *  - a next attempt: a call fired at position Q fails, and the retry
 *    processor writes its next attempt with the command's version; a cancel
 *    or re-submit processed after Q must win over it. Every marker the wheel
 *    sends down `ready` ("everything I fired was fired at a position below
 *    O") comes back through the executor and the retry processor as a
 *    resolved-position marker once every such call has finished and its next
 *    attempt, if any, has been written before it.
 * So floors are kept for the records since the lower of the two positions
 * (a FIFO of offsets), and forgotten after that.
 *
 * A replay after a restart has to judge hand-offs again, and may start past
 * the records that made one stale (their floors were forgotten once a marker
 * passed them). So each hand-off carries the store's position P_h when it
 * was written: it can only be stale against records from P_h on. A pending
 * hand-off holds the committed offset back to its P_h, so a replay that
 * starts after P_h meets only hand-offs that were not pending at the
 * checkpoint, and skips them. A near next attempt is judged the same way,
 * by the position at which the wheel fired the call it follows; those do
 * not arrive in position order, so the pending ones are kept in a heap.
 *
 * Exactly-once firing across crashes. Firing is in (due, offset) order per
 * partition - the timing wheel pops in exact due order, overdue tasks too,
 * and a task that arrives already behind the fired frontier fires at once,
 * which keeps the order - so the set of fired records is described by two
 * numbers, the frontier (due F, offset G): every record below the processed
 * position O with (due, offset) <= (F, G) is done. That goes into the commit
 * metadata (checkpoint.h) in the same transaction as the fired records; the
 * committed offset is held back to the lowest offset whose record still
 * matters (pending, a floor still needed, or a task fired early that may
 * still be recalled). On assignment the wheel replays from there to O,
 * re-creating pending tasks, floors and what it fired early, skipping what
 * is done, without firing anything until the replay has reached O (a cancel
 * later in the replay must still win).
 *
 * Recalls. With a lead the wheel fires a task early and the executor holds
 * it until its due time; a newer version or a cancel that arrives before
 * then still wins: the wheel writes `ready` a Cancel with the new version,
 * and the executor drops what it holds. A key fired early is kept (its
 * recall entry) until its due time passes, whatever markers say.
 *
 * Growing the partition count (layout.h). At the layout marker the router
 * writes when a growth starts, the pending version of every key whose home
 * moves is sent to its new home's partition of `wheel`, with its version
 * shifted below any the new layout gives; every later record of such a key
 * here (a next attempt, a hand-off written just before the store moved its
 * keys) follows it the same way. The checkpoint keeps the layout and the
 * marker's offset, and says when every call fired before the marker has
 * finished: from then on nothing more of a moved key passes through. */
#include "wheel_impl.h"

#include "broadcast.h"
#include "chains.h"

static void wheel_destroy(void *self);

static void *wheel_create(mc_ctx *ctx, const void *arg, char *err, size_t errlen)
{
    (void)arg;
    const mc_config *cfg = mc_ctx_config(ctx);
    wheel *w = calloc(1, sizeof *w);
    if (!w || !(w->arena = mc_arena_new())) {
        free(w);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    mc_topic_name(cfg, "wheel", w->topic, sizeof w->topic);
    w->lead_ms = cfg->wheel_lead_ms;
    w->gate_ms = w->lead_ms - wheel_fire_slack_ms(w->lead_ms);
    w->ready = mc_ctx_output(ctx, "ready");
    w->wheel_out = mc_ctx_output(ctx, "wheel");
    w->results = mc_ctx_output(ctx, "results");
    w->record_version = cfg->record_version;
    if (!w->ready || !w->wheel_out || !w->results) {
        snprintf(err, errlen, "cannot create output topic handles");
        wheel_destroy(w);
        return NULL;
    }
    mc_metrics *m = mc_ctx_metrics(ctx);
    w->pending_gauge =
        mc_metrics_gauge(m, "mooncake_wheel_tasks", "Tasks waiting in the wheel to fire", NULL);
    w->fired = mc_metrics_counter(m, "mooncake_wheel_fired_total", "Tasks fired to ready", NULL);
    w->stale =
        mc_metrics_counter(m, "mooncake_wheel_stale_total",
                           "Submits ignored because a newer version or cancel was seen", NULL);
    w->voided = mc_metrics_counter(m, "mooncake_wheel_voided_total",
                                   "Pending tasks dropped for a newer version or a cancel", NULL);
    w->replayed = mc_metrics_counter(m, "mooncake_wheel_replayed_records_total",
                                     "Records replayed after an assignment to rebuild state", NULL);
    w->recalled = mc_metrics_counter(
        m, "mooncake_wheel_recalled_total",
        "Tasks fired early (lead) and voided before their due time by a newer version or cancel",
        NULL);
    w->floors_capped = mc_metrics_counter(
        m, "mooncake_wheel_floors_forgotten_total",
        "Versions forgotten before markers allowed it (no store or executor running?)", NULL);
    w->moved = mc_metrics_counter(
        m, "mooncake_wheel_moved_total",
        "Records sent to their key's new home after the partition count grew", NULL);
    static const double bounds[] = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 5};
    w->lateness =
        mc_metrics_histogram(m, "mooncake_wheel_lateness_seconds",
                             "Firing time minus due time (0 when fired early by the lead)", NULL,
                             bounds, sizeof bounds / sizeof bounds[0]);
    return w;
}

/* ---- checkpoint and markers ------------------------------------------------------ */

/* The lowest offset whose record still matters after a restart. */
static int64_t commit_offset(wheel_part *p)
{
    int64_t c = p->next;
    /* Mid-replay (a commit by size or age, or on a revoke): the records
     * from next on were judged before and are not rebuilt yet (a pending
     * hand-off among them holds the offset back to its position), so the
     * offset may not move past where the replay began. */
    if (wheel_replaying(p) && p->replay_from >= 0 && p->replay_from < c)
        c = p->replay_from;
    if (p->pend_head && p->pend_head->offset < c)
        c = p->pend_head->offset;
    if (mc_ring_len(&p->floors) > 0) {
        int64_t f = ((floor_ref *)mc_ring_at(&p->floors, 0))->offset;
        if (f < c)
            c = f;
    }
    int64_t h = wheel_oldest_hold(p);
    if (h < c)
        c = h;
    int64_t r = wheel_oldest_recall(p);
    return r < c ? r : c;
}

/* Sends `ready` a marker with the partition's position: every task fired
 * before it was fired at a position below it (see the top of the file). */
static int send_marker(wheel *w, wheel_part *p, mc_ctx *ctx)
{
    if (mc_forward_position_marker(ctx, w->ready, p->partition, MC_WHEEL_POSITION_HEADER,
                                   p->next) != 0)
        return -1;
    p->marked = p->next;
    p->marked_at = mc_ctx_now_ms(ctx);
    return 0;
}

/* When the partition's next marker is due: a second after the last, once
 * records other than markers came (INT64_MAX: none is owed). It goes out at
 * the next commit or, with nothing else to commit, from punctuate: a record
 * that wrote nothing (a cancel) must still be followed by one, or its floor
 * and the view's "cancelled" would wait for the next record. */
static int64_t marker_due(const wheel_part *p)
{
    if (wheel_replaying(p) || p->content <= p->marked)
        return INT64_MAX;
    return p->marked_at + MARKER_INTERVAL_MS;
}

static int wheel_prepare_commit(void *self, mc_ctx *ctx)
{
    wheel *w = self;
    int64_t now = mc_ctx_now_ms(ctx);
    wheel_part *p;
    for (int32_t i = 0; (p = mc_part_table_next(&w->parts, &i)); i++) {
        if (p->next < 0)
            continue; /* nothing seen yet: the committed offset stands */
        mc_wheel_checkpoint cp = {.position = p->next > p->replay_end ? p->next : p->replay_end,
                                  .has_frontier = p->has_frontier,
                                  .frontier_due = p->fdue,
                                  .frontier_offset = p->foff,
                                  .layout = p->layout,
                                  .layout_at = p->layout_at,
                                  .layout_done = p->layout_done};
        char md[128];
        mc_wheel_checkpoint_format(&cp, md, sizeof md);
        if (mc_ctx_set_commit_offset(ctx, w->topic, p->partition, commit_offset(p), md) != 0)
            return -1;
        /* Only records other than markers call for a marker: the markers
         * that come back (resolved positions, the store's) would otherwise
         * keep the wheel, the executor, retry and the store writing
         * transactions forever with nothing to do. */
        if (marker_due(p) <= now && send_marker(w, p, ctx) != 0)
            return -1;
    }
    wheel_update_gauge(w);
    return 0;
}

static wheel_part *part_new(wheel *w, int32_t partition, int64_t now)
{
    wheel_part *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->partition = partition;
    p->keys = mc_keymap_new(KEY_OFFSET);
    p->w = mc_wheel_new(now);
    if (!p->keys || !p->w) {
        wheel_part_free(p);
        return NULL;
    }
    mc_ring_init(&p->floors, sizeof(floor_ref));
    mc_heap_init(&p->holds, sizeof(hold_ref), wheel_hold_less);
    mc_ring_init(&p->recalls, sizeof(recall_ref));
    p->store_pos = p->resolved_pos = p->marked = -1;
    if (mc_part_table_put(&w->parts, partition, p) != 0) {
        wheel_part_free(p);
        return NULL;
    }
    return p;
}

static int wheel_on_assign(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx)
{
    wheel *w = self;
    bool ready = true;
    for (int i = 0; i < parts->cnt; i++) {
        const rd_kafka_topic_partition_t *tp = &parts->elems[i];
        if (strcmp(tp->topic, w->topic) != 0 || wheel_find_part(w, tp->partition))
            continue;
        wheel_part *p = part_new(w, tp->partition, mc_ctx_now_ms(ctx));
        if (!p)
            return -1;
        p->next = p->content = tp->offset >= 0 ? tp->offset : -1;
        p->replay_from = p->next;
        p->replay_end = -1;
        mc_wheel_checkpoint cp;
        if (tp->offset >= 0 && mc_wheel_checkpoint_parse(tp->metadata, tp->metadata_size, &cp)) {
            p->replay_end = cp.position;
            p->has_frontier = cp.has_frontier;
            p->fdue = cp.frontier_due;
            p->foff = cp.frontier_offset;
            p->layout = cp.layout;
            p->layout_at = cp.layout_at;
            p->layout_done = cp.layout_done;
            /* A replay from before the marker rebuilds the moved keys'
             * pending versions and floors, and moves them at the marker
             * again (sending nothing: that went out the first time). */
            p->layout_applied = cp.layout && p->next > cp.layout_at;
        }
        if (wheel_replaying(p))
            ready = false;
        char part[16], from[24], to[24];
        snprintf(part, sizeof part, "%" PRId32, p->partition);
        snprintf(from, sizeof from, "%" PRId64, p->next);
        snprintf(to, sizeof to, "%" PRId64, p->replay_end);
        mc_log(mc_ctx_logger(ctx), MC_LOG_INFO, "partition assigned", "partition", part,
               "replay_from", from, "replay_to", to, (const char *)NULL);
    }
    mc_ctx_set_ready(ctx, ready);
    mc_ctx_wakeup_at(ctx, mc_ctx_now_ms(ctx));
    return 0;
}

static void wheel_on_revoke(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx)
{
    (void)ctx;
    wheel *w = self;
    for (int i = 0; i < parts->cnt; i++) {
        if (strcmp(parts->elems[i].topic, w->topic) != 0)
            continue;
        wheel_part_free(mc_part_table_take(&w->parts, parts->elems[i].partition));
    }
    wheel_update_gauge(w);
}

/* ---- firing ---------------------------------------------------------------------- */

/* The pending record of k, as the input record it was (for a dead letter). */
mc_record wheel_pending_record(const wheel *w, const wheel_part *p, const wheel_key *k)
{
    return (mc_record){.topic = w->topic,
                       .partition = p->partition,
                       .offset = k->offset,
                       .key = k->key,
                       .key_len = k->node.key_len,
                       .value = k->payload,
                       .value_len = k->payload_len};
}

static int fire(wheel *w, wheel_part *p, wheel_key *k, int64_t now_ms, mc_ctx *ctx)
{
    mc_source cause = {w->topic, p->partition, k->offset};
    char fpos[24];
    int fn = snprintf(fpos, sizeof fpos, "%" PRId64, p->next);
    mc_header fh = {MC_FIRED_POSITION_HEADER, fpos, (size_t)fn};
    mc_produce out = {.out = w->ready,
                      .headers = &fh,
                      .n_headers = 1,
                      .partition = p->partition,
                      .key = k->key,
                      .key_len = k->node.key_len,
                      .value = k->payload,
                      .value_len = k->payload_len,
                      .cause = &cause};
    int rc = mc_ctx_produce(ctx, &out);
    if (k->due <= now_ms + LATE_FIRE_MS)
        mc_ctx_request_commit_now(ctx); /* late, or will be by the commit */
    if (rc == MC_FORWARD_REFUSED) {
        /* Kafka will never take this task into `ready`: it is done, as a
         * dead letter the operator can requeue. */
        mc_record rec = wheel_pending_record(w, p, k);
        if (mc_ctx_dead_letter(ctx, &rec, "wheel: Kafka refused the task's record for ready",
                               NULL) != 0)
            return -1;
    } else if (rc != 0) {
        return -1;
    } else {
        mc_counter_add(w->fired, 1);
    }
    if (!p->has_frontier || k->due > p->fdue || (k->due == p->fdue && k->offset > p->foff)) {
        p->has_frontier = true;
        p->fdue = k->due;
        p->foff = k->offset;
    }
    mc_version after = {k->version.v, k->version.attempt + 1};
    if (mc_version_cmp(after, k->floor) > 0)
        k->floor = after;
    int64_t late = now_ms - k->due;
    mc_histogram_observe(w->lateness, late > 0 ? (double)late / 1000.0 : 0.0);
    if (k->due > now_ms && wheel_recall_push(p, k, k->due, k->offset) != 0)
        return -1;
    const mc_logger *lg = mc_ctx_logger(ctx);
    if (lg->level <= MC_LOG_DEBUG) {
        char key[1024], version[48], late_ms[24];
        snprintf(key, sizeof key, "%.*s", (int)k->node.key_len, k->key);
        snprintf(version, sizeof version, "%" PRId64 "/%" PRId32, k->version.v, k->version.attempt);
        snprintf(late_ms, sizeof late_ms, "%" PRId64, late);
        mc_log(lg, MC_LOG_DEBUG, "fired", "key", key, "version", version, "late_ms", late_ms,
               (const char *)NULL);
    }
    wheel_unlink_pending(p, k);
    wheel_maybe_forget(p, k);
    return 0;
}

static bool is_done(const wheel_part *p, int64_t due, int64_t offset)
{
    return offset < p->replay_end && p->has_frontier &&
           (due < p->fdue || (due == p->fdue && offset <= p->foff));
}

/* Versions below v are void from here on. */
static void raise_floor(wheel *w, wheel_part *p, wheel_key *k, mc_version v)
{
    if (k->payload && mc_version_cmp(k->version, v) < 0) {
        wheel_unlink_pending(p, k);
        mc_counter_add(w->voided, 1);
    }
    if (mc_version_cmp(v, k->floor) > 0)
        k->floor = v;
}

/* A Cancel voids the pending version of key k. When a serial chain released
 * it, or it is a broadcast's shard, the chain or the broadcast waits for its
 * final Result, and no call will write one: the wheel writes it (CANCELLED,
 * with the chain's or the broadcast's headers). Other tasks' Results stay the
 * executor's alone. 0, or -1. */
static int report_voided_link(wheel *w, wheel_part *p, wheel_key *k, mc_ctx *ctx)
{
    /* Most voided tasks are neither: spare them a decode. */
    if (!memmem(k->payload, k->payload_len, MC_CHAIN_METADATA, sizeof MC_CHAIN_METADATA - 1) &&
        !memmem(k->payload, k->payload_len, MC_BROADCAST_METADATA,
                sizeof MC_BROADCAST_METADATA - 1))
        return 0;
    mc_wheel_entry e;
    if (mc_decode_wheel_entry(k->payload, k->payload_len, w->arena, &e, NULL, 0) != MC_CODEC_OK ||
        e.command.kind != MC_CMD_SUBMIT)
        return 0;
    mc_header marks[4];
    size_t n = mc_chain_result_headers(&e.command.submit, marks);
    n += mc_broadcast_result_headers(&e.command.submit, marks + n);
    if (n == 0)
        return 0;
    int64_t now = mc_ctx_now_ms(ctx);
    mc_result res = {.app_id = e.command.submit.app_id,
                     .task_id = e.command.submit.task_id,
                     .attempt = e.command.submit.attempt,
                     .due_at = e.command.submit.due_at,
                     .started_at = now,
                     .finished_at = now,
                     .outcome = MC_OUTCOME_CANCELLED,
                     .error = "cancelled before it was called",
                     .version = k->version.v,
                     .response_size = -1,
                     .write_version = w->record_version};
    mc_buf_reset(&w->buf);
    if (mc_encode_result(&res, &w->buf) != 0)
        return -1;
    mc_produce pr = {.out = w->results,
                     .partition = p->partition,
                     .key = k->key,
                     .key_len = k->node.key_len,
                     .value = w->buf.data,
                     .value_len = w->buf.len,
                     .headers = marks,
                     .n_headers = n};
    return mc_ctx_produce(ctx, &pr) == 0 ? 0 : -1;
}

/* Writes a Cancel of key k with version v (and its attempt, when not 0) to
 * out: a recall to `ready`, or a void to `wheel`. */
static int send_cancel(wheel *w, mc_output *out, wheel_part *p, wheel_key *k,
                       const mc_wheel_entry *e, mc_version v, mc_ctx *ctx)
{
    bool submit = e->command.kind == MC_CMD_SUBMIT;
    mc_wheel_entry c = {
        .version = v.v,
        .command = {
            .kind = MC_CMD_CANCEL,
            .cancel = {.app_id = submit ? e->command.submit.app_id : e->command.cancel.app_id,
                       .task_id = submit ? e->command.submit.task_id : e->command.cancel.task_id,
                       .requested_at = mc_ctx_now_ms(ctx)}}};
    mc_buf_reset(&w->buf);
    if (mc_encode_wheel_entry(&c, &w->buf) != 0)
        return -1;
    char attempt[16];
    int n = snprintf(attempt, sizeof attempt, "%" PRId32, v.attempt);
    mc_header h = {MC_ATTEMPT_HEADER, attempt, (size_t)n};
    mc_produce pr = {.out = out,
                     .partition = p->partition,
                     .key = k->key,
                     .key_len = k->node.key_len,
                     .value = w->buf.data,
                     .value_len = w->buf.len,
                     .headers = v.attempt ? &h : NULL,
                     .n_headers = v.attempt ? 1 : 0};
    return mc_ctx_produce(ctx, &pr) == 0 ? 0 : -1;
}

/* A record's version: a Submit's attempt is its task's; a Cancel's is 0, or
 * what its attempt header says (a void). */
mc_version wheel_record_version(const mc_wheel_class *c, const mc_wheel_entry *e)
{
    mc_version v = {e->version, 0};
    if (e->command.kind == MC_CMD_SUBMIT)
        v.attempt = e->command.submit.attempt;
    else
        v.attempt = mc_wheel_cancel_attempt(c);
    return v;
}

/* Makes e (the record m) the key's pending version. */
static int take_pending(wheel *w, wheel_part *p, wheel_key *k, const mc_record *m,
                        const mc_wheel_class *c, const mc_wheel_entry *e, mc_version v, bool replay,
                        mc_ctx *ctx)
{
    if (k->payload)
        wheel_unlink_pending(p, k); /* rescheduled */
    k->payload = malloc(m->value_len);
    if (!k->payload)
        return -1;
    memcpy(k->payload, m->value, m->value_len);
    k->payload_len = (uint32_t)m->value_len;
    k->version = v;
    k->offset = m->offset;
    k->due = e->command.submit.due_at;
    if (c->handoff && wheel_hold_push(p, k, c->handoff_position, m->offset) != 0)
        return -1;
    k->prev = p->pend_tail;
    k->next = NULL;
    if (p->pend_tail)
        p->pend_tail->next = k;
    else
        p->pend_head = k;
    p->pend_tail = k;
    p->n_pending++;
    if (!replay && p->has_frontier && k->due < p->fdue) {
        /* Behind what has fired already: fire now, which keeps "everything
         * up to the frontier is done" true. */
        mc_ctx_request_commit(ctx);
        return fire(w, p, k, mc_ctx_now_ms(ctx), ctx);
    }
    if (mc_wheel_add(p->w, &k->timer, k->due) != 0)
        return -1;
    mc_ctx_wakeup_at(ctx, replay ? mc_ctx_now_ms(ctx) : k->due - w->gate_ms);
    return 0;
}

/* A version fired already (before a restart, or by the router): versions
 * up to it are void, and a recall entry keeps it until it is due. */
static int take_fired(wheel *w, wheel_part *p, wheel_key *k, const mc_record *m,
                      const mc_wheel_entry *e, mc_version v, int64_t now)
{
    raise_floor(w, p, k, (mc_version){v.v, v.attempt + 1});
    if (e->command.submit.due_at > now &&
        wheel_recall_push(p, k, e->command.submit.due_at, m->offset) != 0)
        return -1;
    return 0;
}

/* Applies a decoded entry to its key: the rules at the top of the file. */
static int apply_entry(wheel *w, wheel_part *p, wheel_key *k, const mc_record *m,
                       const mc_wheel_class *c, const mc_wheel_entry *e, bool replay, mc_ctx *ctx)
{
    mc_version v = wheel_record_version(c, e);
    int64_t now = mc_ctx_now_ms(ctx);
    if (k->fired_due && mc_version_cmp(v, k->floor) >= 0) {
        /* Fired early and not called yet: a newer version or a cancel must
         * still win, so the executor, which holds it, is told. (In a replay
         * the recall went out when the record was first processed.) */
        if (!replay && k->fired_due > now) {
            if (send_cancel(w, w->ready, p, k, e, v, ctx) != 0)
                return -1;
            mc_counter_add(w->recalled, 1);
            /* The executor holds the task until a due time less than the lead
             * away: the recall cannot wait for the next commit by age. A
             * re-submit's recall may be the only one (the router recalls
             * only keys it remembers); a Cancel's is a fallback (the router
             * recalled it in its own transaction), so it does not make the
             * commit wait for acknowledgements. */
            if (e->command.kind == MC_CMD_SUBMIT)
                mc_ctx_request_commit_now(ctx);
            else
                mc_ctx_request_commit(ctx);
        }
        k->fired_due = 0;
    }
    if (e->command.kind == MC_CMD_SUBMIT && c->fired_by_router) {
        /* The router fired it to `ready` in the transaction that wrote it
         * here, since a command fresh from tasks is always its key's newest
         * version (router.c): what firing it would have done here, but the
         * firing. Never judged stale or pending, in a replay either. */
        if (mc_version_cmp(v, k->floor) < 0 || (k->payload && mc_version_cmp(v, k->version) <= 0))
            mc_counter_add(w->stale, 1); /* cannot happen; fired all the same */
        return take_fired(w, p, k, m, e, v, now);
    }
    if (e->command.kind == MC_CMD_CANCEL) {
        /* (In a replay the Result went out when the Cancel was first processed.) */
        if (!replay && k->payload && mc_version_cmp(k->version, v) < 0 &&
            report_voided_link(w, p, k, ctx) != 0)
            return -1;
        raise_floor(w, p, k, v);
    } else if (c->far) {
        if (mc_version_cmp(v, k->floor) < 0 || (k->payload && mc_version_cmp(v, k->version) < 0)) {
            /* A next attempt a newer version superseded (fired, or still
             * pending here), on its way to the store, which cannot tell:
             * void it there. */
            mc_counter_add(w->stale, 1);
            mc_version void_below = {v.v, v.attempt + 1};
            if (!replay && send_cancel(w, w->wheel_out, p, k, e, void_below, ctx) != 0)
                return -1;
        } else {
            raise_floor(w, p, k, v); /* the store has the newest version */
        }
    } else if (mc_version_cmp(v, k->floor) < 0 ||
               (k->payload && mc_version_cmp(v, k->version) <= 0)) {
        mc_counter_add(w->stale, 1);
    } else if (is_done(p, e->command.submit.due_at, m->offset)) {
        /* Fired before the restart; early, if it is not due yet. */
        return take_fired(w, p, k, m, e, v, now);
    } else if (replay && c->handoff && c->handoff_position < p->replay_from) {
        /* A hand-off the store wrote before it had applied records this
         * replay does not see (a newer version, a cancel): judged when it
         * was first processed, and not pending at the checkpoint, since a
         * pending hand-off holds the committed offset back to its
         * position. So it was stale (or superseded): not again. */
        raise_floor(w, p, k, (mc_version){v.v, v.attempt + 1});
        mc_counter_add(w->stale, 1);
    } else {
        return take_pending(w, p, k, m, c, e, v, replay, ctx);
    }
    return 0;
}

/* Markers of the store's and of the resolved position. Returns true when m
 * was one. */
static bool take_marker(wheel_part *p, const mc_wheel_class *c)
{
    if (c->kind == MC_WHEEL_STORE_POSITION) {
        if (c->position > p->store_pos)
            p->store_pos = c->position;
    } else if (c->kind == MC_WHEEL_RESOLVED_POSITION) {
        if (c->position > p->resolved_pos)
            p->resolved_pos = c->position;
    } else {
        return false;
    }
    /* Nothing more of a moved key will pass through here once every call
     * fired before the marker has finished (its next attempt is before the
     * resolved position) and the store has passed the marker (its
     * hand-offs from before are before its position). */
    if (p->layout && p->resolved_pos > p->layout_at && p->store_pos > p->layout_at)
        p->layout_done = true;
    wheel_release_floors(p);
    return true;
}

static int wheel_process(void *self, const mc_record *m, mc_ctx *ctx)
{
    wheel *w = self;
    wheel_part *p = wheel_find_part(w, m->partition);
    if (!p)
        return 0;
    bool replay = m->offset < p->replay_end;
    if (replay)
        mc_counter_add(w->replayed, 1);
    p->next = m->offset + 1;
    int rc = 0;
    mc_wheel_class c;
    mc_wheel_record_classify(m, &c);
    if (!mc_wheel_is_position_marker(&c)) {
        p->content = p->next;
        mc_ctx_wakeup_at(ctx, p->marked_at + MARKER_INTERVAL_MS);
    }
    if (c.kind == MC_WHEEL_LAYOUT) {
        rc = wheel_take_layout(w, p, c.position <= INT32_MAX ? (int32_t)c.position : 0, m->offset,
                               replay, ctx);
    } else if (!take_marker(p, &c)) {
        mc_wheel_entry e;
        char detail[200] = "";
        mc_arena_reset(w->arena);
        mc_codec_err err = m->key ? mc_decode_wheel_entry(m->value, m->value_len, w->arena, &e,
                                                          detail, sizeof detail)
                                  : MC_CODEC_EMPTY;
        if (err != MC_CODEC_OK) {
            if (replay)
                return 0; /* dead-lettered when it was first processed */
            char why[300];
            snprintf(why, sizeof why, "wheel: unreadable entry: %s%s%s",
                     m->key ? mc_codec_strerror(err) : "no key", detail[0] ? ": " : "", detail);
            return mc_ctx_dead_letter(ctx, m, why, NULL);
        }
        if (wheel_moved(p, m->key, m->key_len)) {
            rc = wheel_forward_moved(w, p, m, &c, &e, replay, ctx);
        } else {
            wheel_key *k = wheel_key_get(p, m->key, m->key_len);
            if (!k || wheel_floor_push(w, p, k, m->offset) != 0)
                return -1;
            rc = apply_entry(w, p, k, m, &c, &e, replay, ctx);
            wheel_maybe_forget(p, k);
        }
    }
    if (replay && !wheel_replaying(p))
        mc_ctx_wakeup_at(ctx, mc_ctx_now_ms(ctx)); /* replay done: fire what is due */
    return rc;
}

/* A record whose fire Kafka refused for good (in an aborted transaction):
 * it goes to the dead topic instead, and its version counts as fired. */
static int wheel_refused(void *self, const mc_record *m, const char *reason, mc_ctx *ctx)
{
    wheel *w = self;
    wheel_part *p = wheel_find_part(w, m->partition);
    if (!p)
        return 0;
    p->next = p->content = m->offset + 1;
    mc_ctx_wakeup_at(ctx, p->marked_at + MARKER_INTERVAL_MS);
    mc_wheel_entry e;
    mc_arena_reset(w->arena);
    bool decoded = m->key && mc_decode_wheel_entry(m->value, m->value_len, w->arena, &e, NULL, 0) ==
                                 MC_CODEC_OK;
    if (decoded) {
        wheel_key *k = wheel_key_get(p, m->key, m->key_len);
        if (!k || wheel_floor_push(w, p, k, m->offset) != 0)
            return -1;
        mc_wheel_class c;
        mc_wheel_record_classify(m, &c);
        mc_version v = wheel_record_version(&c, &e);
        raise_floor(w, p, k, (mc_version){v.v, v.attempt + 1});
        wheel_maybe_forget(p, k);
    }
    if (m->offset < p->replay_end && !wheel_replaying(p))
        mc_ctx_wakeup_at(ctx, mc_ctx_now_ms(ctx)); /* replay done */
    return mc_ctx_dead_letter(
        ctx, m, reason, decoded && e.command.kind == MC_CMD_SUBMIT ? &e.command.submit : NULL);
}

/* Fires what is due within the lead on one partition, within the budget;
 * returns how many, or -1. */
static long fire_due(wheel *w, wheel_part *p, int64_t now_ms, size_t budget, mc_ctx *ctx)
{
    mc_timer *due[512];
    size_t fired = 0;
    while (fired < budget) {
        size_t want = budget - fired < 512 ? budget - fired : 512;
        size_t got = mc_wheel_advance(p->w, now_ms + w->lead_ms, due, want);
        for (size_t k = 0; k < got; k++)
            if (fire(w, p, MC_TIMER_OWNER(due[k], wheel_key, timer), now_ms, ctx) != 0)
                return -1;
        fired += got;
        if (got < want)
            break;
    }
    return (long)fired;
}

/* Fires what is due within the lead on every partition that is not
 * replaying, FIRE_BATCH at most, starting at w->fire_from and going round;
 * when the budget runs out, the next pass starts after the partition where
 * it did. Sets *fired; *spent says the budget ran out. 0, or -1. */
static int fire_all_due(wheel *w, int64_t now_ms, size_t *fired, bool *spent, mc_ctx *ctx)
{
    size_t budget = FIRE_BATCH;
    *fired = 0;
    *spent = false;
    for (int round = 0; round < 2; round++) {
        wheel_part *p;
        for (int32_t i = round ? 0 : w->fire_from;
             (p = mc_part_table_next(&w->parts, &i)) && (!round || i < w->fire_from); i++) {
            if (wheel_replaying(p))
                continue;
            long got = fire_due(w, p, now_ms, budget, ctx);
            if (got < 0)
                return -1;
            budget -= (size_t)got;
            *fired += (size_t)got;
            if (budget == 0) {
                w->fire_from = i + 1;
                *spent = true;
                return 0;
            }
        }
    }
    return 0;
}

static int wheel_punctuate(void *self, int64_t now_ms, mc_ctx *ctx)
{
    wheel *w = self;
    size_t fired = 0;
    int64_t next = INT64_MAX;
    bool ready = true, spent = false, batch = false;
    wheel_part *p;
    /* The markers owed first, then the fires: in `ready` a partition's marker
     * precedes what the same pass fires. The pass fires once a task of some
     * partition is due within the gate (see FIRE_SLACK_MAX_MS); the
     * deadlines are lower bounds, so it may fire sooner, never later. */
    for (int32_t i = 0; (p = mc_part_table_next(&w->parts, &i)); i++) {
        if (wheel_replaying(p)) {
            ready = false;
            continue;
        }
        batch |= mc_wheel_next_deadline(p->w) <= now_ms + w->gate_ms;
        wheel_expire_recalls(p, now_ms);
        int64_t marker = marker_due(p);
        if (marker <= now_ms && send_marker(w, p, ctx) != 0)
            return -1;
        if (marker > now_ms && marker < next)
            next = marker;
    }
    if (batch && fire_all_due(w, now_ms, &fired, &spent, ctx) != 0)
        return -1;
    for (int32_t i = 0; (p = mc_part_table_next(&w->parts, &i)); i++) {
        if (wheel_replaying(p))
            continue;
        int64_t d = mc_wheel_next_deadline(p->w);
        if (d != INT64_MAX && d - w->gate_ms < next)
            next = d - w->gate_ms;
        if (mc_ring_len(&p->recalls) > 0) {
            int64_t r = ((recall_ref *)mc_ring_at(&p->recalls, 0))->due + RECALL_EXPIRY_SLACK_MS;
            if (r < next)
                next = r;
        }
    }
    mc_ctx_set_ready(ctx, ready);
    if (spent)
        next = now_ms;
    if (next != INT64_MAX)
        mc_ctx_wakeup_at(ctx, next);
    if (fired > 0)
        mc_ctx_request_commit(ctx); /* what fired becomes visible at commit */
    return 0;
}

static void wheel_destroy(void *self)
{
    wheel *w = self;
    wheel_part *p;
    for (int32_t i = 0; (p = mc_part_table_next(&w->parts, &i)); i++)
        wheel_part_free(p);
    mc_part_table_free(&w->parts);
    mc_arena_free(w->arena);
    mc_buf_free(&w->buf);
    free(w);
}

static const char *const wheel_inputs[] = {"wheel", NULL};

const mc_processor mc_wheel_processor = {
    .name = "wheel",
    .input_topics = wheel_inputs,
    .create = wheel_create,
    .process = wheel_process,
    .refused = wheel_refused,
    .punctuate = wheel_punctuate,
    .on_assign = wheel_on_assign,
    .on_revoke = wheel_on_revoke,
    .prepare_commit = wheel_prepare_commit,
    .destroy = wheel_destroy,
};
