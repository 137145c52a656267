/* The view: every task's state by key, for GET /api/task. Kafka Streams'
 * interactive queries over a state store, in mooncake's terms.
 *
 * It reads the partitions it owns of the five topics a task passes through
 * (tasks, wheel, ready, results, dead), folds each record into the task of
 * its key (view_task.h), and logs each changed task to its changelog, the
 * compacted `views` topic, in the transaction that commits the input
 * offsets: after a crash or a rebalance the next owner restores the table
 * from the changelog and goes on from the committed offsets, as the store
 * does. It writes nothing else; no other role reads what it writes, so it
 * can lag or stop without the engine noticing.
 *
 * A question is answered on the view's own thread, which owns the table, so
 * there is no lock on it: the asker queues the question behind an eventfd
 * and waits. Before answering, the view reads where each of the five input
 * partitions ends now (their last stable offsets) and waits until its
 * consumer has passed them. So an answer reflects every record committed
 * before the question arrived: a write the gateway acknowledged before is
 * in it, and a task the answer calls pending had not been fired to `ready`
 * (and so not called) when the question was asked.
 *
 * Memory: one mc_view_task per key with its key, the task's bytes and up to
 * 16 Results' summaries; a task in a final state is forgotten (a tombstone
 * in the changelog) --view-history-ms after it ended. */
#include "view_impl.h"

view_part *view_part_of(view *v, int32_t partition)
{
    return mc_part_table_get(&v->parts, partition);
}

mc_view_task *view_find_task(view_part *p, const void *key, size_t len)
{
    return (mc_view_task *)mc_keymap_find(p->tasks, key, len, mc_keymap_hash(key, len));
}

static void free_node(mc_keynode *n, void *arg)
{
    (void)arg;
    mc_view_task_free((mc_view_task *)n);
}

static void free_app(mc_keynode *n, void *arg)
{
    (void)arg;
    free(n);
}

static void part_free(view_part *p)
{
    if (!p)
        return;
    if (p->tasks) {
        mc_keymap_drain(p->tasks, free_node, NULL);
        mc_keymap_free(p->tasks);
    }
    if (p->apps) {
        mc_keymap_drain(p->apps, free_app, NULL);
        mc_keymap_free(p->apps);
    }
    if (p->indexes) {
        mc_keymap_drain(p->indexes, free_app, NULL);
        mc_keymap_free(p->indexes);
    }
    mc_wheel_free(p->forgets);
    free(p);
}

static view_part *add_part(view *v, int32_t partition, int64_t now)
{
    view_part *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->partition = partition;
    p->wheel_position = -1;
    p->position_logged = -1;
    p->tasks = mc_keymap_new(MC_VIEW_TASK_KEY_OFFSET);
    p->forgets = mc_wheel_new(now);
    p->apps = mc_keymap_new(MC_VIEW_APP_STATS_KEY_OFFSET);
    p->indexes = mc_keymap_new(APP_INDEX_KEY_OFFSET);
    p->apps_swept_at = now;
    if (!p->tasks || !p->forgets || !p->apps || !p->indexes ||
        mc_part_table_put(&v->parts, partition, p) != 0) {
        part_free(p);
        return NULL;
    }
    return p;
}

static void update_gauges(view *v)
{
    size_t n = 0, bytes = 0;
    view_part *p;
    for (int32_t id = 0; (p = mc_part_table_next(&v->parts, &id)); id++) {
        n += mc_keymap_count(p->tasks);
        bytes += p->bytes + mc_keymap_bytes(p->tasks);
    }
    bytes += n * sizeof(mc_view_task);
    mc_gauge_set(v->tasks_gauge, (double)n);
    mc_gauge_set(v->bytes_gauge, (double)bytes);
}

/* The index of the app of t (its key up to '/'), made when missing and
 * create is true. */
app_index *view_index_of(view_part *p, const char *app, size_t app_len, bool create)
{
    uint32_t hash = mc_keymap_hash(app, app_len);
    app_index *a = (app_index *)mc_keymap_find(p->indexes, app, app_len, hash);
    if (a || !create)
        return a;
    if (!(a = calloc(1, sizeof *a + app_len)))
        return NULL;
    memcpy(a->app, app, app_len);
    a->node.key_len = (uint32_t)app_len;
    a->node.hash = hash;
    mc_keymap_insert(p->indexes, &a->node);
    return a;
}

static size_t app_len_of(const mc_view_task *t)
{
    const char *slash = memchr(t->key, '/', t->node.key_len);
    return slash ? (size_t)(slash - t->key) : t->node.key_len;
}

static void unindex(view_part *p, mc_view_task *t)
{
    if (!t->indexed)
        return;
    app_index *a = view_index_of(p, t->key, app_len_of(t), false);
    if (!a)
        return;
    mc_view_index_remove(&a->ix, t);
    if (a->ix.n == 0) {
        mc_keymap_remove(p->indexes, &a->node);
        free(a);
    }
}

/* Puts t in its app's order under its current due time. -1 on ENOMEM. */
static int reindex(view_part *p, mc_view_task *t)
{
    if (t->indexed && t->indexed_due == t->due_at)
        return 0;
    unindex(p, t);
    app_index *a = view_index_of(p, t->key, app_len_of(t), true);
    if (!a)
        return -1;
    mc_view_index_insert(&a->ix, t);
    return 0;
}

static void unlink_dirty(view_part *p, mc_view_task *t)
{
    if (!t->dirty)
        return;
    for (mc_view_task **pp = &p->dirty; *pp; pp = &(*pp)->next_dirty)
        if (*pp == t) {
            *pp = t->next_dirty;
            break;
        }
    t->dirty = false;
}

static void remove_task(view_part *p, mc_view_task *t)
{
    unlink_dirty(p, t);
    unindex(p, t);
    if (mc_wheel_scheduled(&t->forget))
        mc_wheel_cancel(p->forgets, &t->forget);
    mc_keymap_remove(p->tasks, &t->node);
    p->bytes -= mc_view_task_extra_bytes(t);
    mc_view_task_free(t);
}

/* A task that may have ended is looked at again after the history: a
 * final one is forgotten then, another waits longer. */
static void schedule_forget(view *v, view_part *p, mc_view_task *t, int64_t now)
{
    bool maybe_final = t->n_calls > 0 || t->command > t->version || t->rejected;
    if (!maybe_final)
        return;
    /* The history counts from the last change: a task retried for an hour
     * that then succeeds stays answerable for the history after that. */
    if (mc_wheel_scheduled(&t->forget))
        mc_wheel_cancel(p->forgets, &t->forget);
    mc_wheel_add(p->forgets, &t->forget, now + v->history_ms);
}

/* After a fold changed t: it goes out in the next commit. -1 on ENOMEM. */
static int touched(view *v, view_part *p, mc_view_task *t, size_t bytes_before, int64_t now)
{
    p->bytes += mc_view_task_extra_bytes(t) - bytes_before;
    if (!t->dirty) {
        t->dirty = true;
        t->next_dirty = p->dirty;
        p->dirty = t;
    }
    schedule_forget(v, p, t, now);
    return reindex(p, t);
}

/* ---- folding records --------------------------------------------------------------- */

static int input_of(const view *v, const char *topic)
{
    for (int i = 0; i < N_INPUTS; i++)
        if (strcmp(topic, v->topics[i]) == 0)
            return i;
    return -1;
}

/* The task of key in p, made when missing and create is true. */
static mc_view_task *task_for(view_part *p, const void *key, size_t len, bool create)
{
    mc_view_task *t = view_find_task(p, key, len);
    if (t || !create)
        return t;
    t = mc_view_task_new(key, len);
    if (t) {
        mc_keymap_insert(p->tasks, &t->node);
        p->bytes += len;
    }
    return t;
}

/* A command from `tasks`; *submitted says it was a Submit that passes the
 * router's checks (whether or not it is still the key's newest version:
 * the view may have seen a newer one in `wheel` first), for the counters. */
static bool fold_tasks(view *v, mc_view_task *t, const mc_record *r, mc_ctx *ctx, bool *submitted)
{
    mc_command c;
    mc_arena_reset(v->arena);
    if (mc_decode_command(&v->codec, r->value, r->value_len, v->arena, &c, NULL, 0) != MC_CODEC_OK)
        return false; /* the router dead-letters it; `dead` tells the view */
    /* The router's own checks: a command it refuses is no version of the
     * key, whoever wrote it, and must not stand in for the real one. */
    char why[256];
    if (c.kind == MC_CMD_CANCEL)
        return mc_task_ids_ok(c.cancel.app_id, c.cancel.task_id, &mc_task_avro_names, why,
                              sizeof why) &&
               mc_record_keyed_by(r, c.cancel.app_id, c.cancel.task_id, why, sizeof why) &&
               mc_view_task_cancelled(t, r->offset, c.cancel.requested_at);
    /* The due-time bounds against the record's time, close to when the
     * router (and the gateway) judged it, not the view's, which may read it
     * long after (a replay). */
    (void)ctx;
    if (!mc_record_keyed_by(r, c.submit.app_id, c.submit.task_id, why, sizeof why) ||
        !mc_task_ok(&c.submit, r->timestamp_ms, mc_ctx_config(ctx)->max_due_ms, &mc_task_avro_names,
                    why, sizeof why) ||
        !mc_task_target_ok(v->targets, &c.submit, &mc_task_avro_names, why, sizeof why))
        return false;
    *submitted = true;
    mc_buf_reset(&v->buf);
    if (mc_encode_stored_task(&(mc_stored_task){r->offset, c.submit}, &v->buf) != 0)
        return false;
    return mc_view_task_submitted(t, r->offset, c.submit.attempt, c.submit.due_at,
                                  c.submit.created_at, v->buf.data, v->buf.len);
}

/* A WheelEntry Submit's task as StoredTask bytes in v->buf. */
static int stored_task_of(view *v, const mc_record *r, const mc_wheel_peeked *w)
{
    mc_buf_reset(&v->buf);
    return mc_encode_versioned_raw(
        MC_SCHEMA_STORED_TASK, w->version.v, (const uint8_t *)r->value + w->task_offset,
        r->value_len - w->task_offset, mc_task_v1_suffix, w->task_suffix, &v->buf);
}

static bool fold_wheel(view *v, mc_view_task *t, const mc_record *r)
{
    mc_wheel_peeked w;
    if (mc_wheel_record_peek(r, &w) != MC_CODEC_OK)
        return false;
    mc_wheel_class c;
    mc_wheel_record_classify(r, &c);
    if (w.kind == MC_CMD_CANCEL) {
        if (c.has_attempt)
            return false; /* the wheel's void of a stale retry, not a client's cancel */
        bool changed = mc_view_task_cancelled(t, w.version.v, r->timestamp_ms);
        return mc_view_task_routed(t, w.version.v, r->offset) || changed;
    }
    bool changed = false;
    /* The version first: the routing of a newer version read before its
     * `tasks` record must find the older one already retired. */
    if (stored_task_of(v, r, &w) == 0)
        changed |= mc_view_task_submitted(t, w.version.v, w.version.attempt, w.due_at, 0,
                                          v->buf.data, v->buf.len);
    changed |= mc_view_task_scheduled(t, w.version.v, w.version.attempt, w.due_at, c.far);
    /* The router's record of a client's command carries no store position
     * (hand-offs and next attempts do). */
    if (!c.handoff && w.version.attempt <= 1)
        changed |= mc_view_task_routed(t, w.version.v, r->offset);
    return changed;
}

static bool fold_ready(view *v, mc_view_task *t, const mc_record *r)
{
    mc_wheel_peeked w;
    if (mc_wheel_record_peek(r, &w) != MC_CODEC_OK || w.kind != MC_CMD_SUBMIT)
        return false; /* a recall: its CANCELLED Result says what became of it */
    bool changed = false;
    if (stored_task_of(v, r, &w) == 0)
        changed |= mc_view_task_submitted(t, w.version.v, w.version.attempt, w.due_at, 0,
                                          v->buf.data, v->buf.len);
    return mc_view_task_fired(t, w.version.v, w.version.attempt, r->timestamp_ms) || changed;
}

/* Adds to the minute of r's time in the counters of r's app (the key up to
 * its '/'), which go to the changelog with the next commit. */
static int count(view_part *p, const mc_record *r, const mc_view_count *c)
{
    const char *slash = memchr(r->key, '/', r->key_len);
    if (!slash || slash == (const char *)r->key)
        return 0;
    char key[MC_VIEW_STATS_KEY_MAX];
    size_t key_len = mc_view_stats_key(r->key, (size_t)(slash - (const char *)r->key), key);
    if (!key_len)
        return 0; /* no app id the gateway takes is this long */
    uint32_t hash = mc_keymap_hash(key, key_len);
    mc_view_app_stats *a = (mc_view_app_stats *)mc_keymap_find(p->apps, key, key_len, hash);
    if (!a) {
        if (!(a = mc_view_app_stats_new(key, key_len)))
            return -1;
        mc_keymap_insert(p->apps, &a->node);
    }
    mc_view_app_stats_add(a, r->timestamp_ms, c);
    if (!a->dirty) {
        a->dirty = true;
        a->next_dirty = p->dirty_apps;
        p->dirty_apps = a;
    }
    return 0;
}

static bool fold_dead(view *v, mc_view_task *t, const mc_record *r)
{
    mc_dead_letter d;
    mc_arena_reset(v->arena);
    if (mc_decode_dead_letter(r->value, r->value_len, v->arena, &d, NULL, 0) != MC_CODEC_OK ||
        strcmp(d.source_topic, v->topics[IN_TASKS]) != 0)
        return false; /* a called task's dead letter: its Result says it */
    return mc_view_task_rejected(t, d.source_offset, d.reason);
}

static int view_process(void *self, const mc_record *r, mc_ctx *ctx)
{
    view *v = self;
    int in = input_of(v, r->topic);
    view_part *p = view_part_of(v, r->partition);
    if (in < 0 || !p)
        return 0;
    if (!r->key) {
        int64_t position;
        if (in == IN_READY && mc_record_header_int(r, MC_WHEEL_POSITION_HEADER, &position) &&
            position > p->wheel_position)
            p->wheel_position = position;
        return 0;
    }
    if (!r->value)
        return 0;
    /* Every Result and dead letter counts, wherever it is. */
    mc_result res;
    if (in == IN_RESULTS) {
        mc_arena_reset(v->arena);
        if (mc_decode_result(r->value, r->value_len, v->arena, &res, NULL, 0) != MC_CODEC_OK)
            return 0;
        /* A recall's CANCELLED Result is no call, nor is a DROPPED one. */
        mc_view_count c = {.calls = 1,
                           .failures = res.outcome != MC_OUTCOME_SUCCEEDED,
                           .late_ms =
                               res.started_at > 0 && res.due_at > 0
                                   ? (res.started_at > res.due_at ? res.started_at - res.due_at : 0)
                                   : -1};
        if (res.outcome != MC_OUTCOME_CANCELLED && res.outcome != MC_OUTCOME_DROPPED &&
            count(p, r, &c) != 0)
            return -1;
    }
    if (in == IN_DEAD && count(p, r, &(mc_view_count){.dead = 1, .late_ms = -1}) != 0)
        return -1;
    /* No task key starts with '/' (the changelog's own keys do). */
    if (r->key_len == 0 || ((const char *)r->key)[0] == '/' || v->partitions <= 0)
        return 0;
    /* Only a key's home partition tells its story: a command a client wrote
     * elsewhere is copied home by the router, and after a growth the old
     * home still gets a retry's next attempt of a call fired before it.
     * Folded there, the key would be held twice, one copy stuck. But the end
     * of a call fired at the old home before a growth reaches only the old
     * home: its final Result is folded there (a final task, forgotten after
     * the history). */
    bool final_result =
        in == IN_RESULTS &&
        (res.outcome == MC_OUTCOME_SUCCEEDED || res.outcome == MC_OUTCOME_FAILED_PERMANENTLY ||
         res.outcome == MC_OUTCOME_EXHAUSTED || res.outcome == MC_OUTCOME_DROPPED);
    if (mc_key_partition(r->key, r->key_len, v->partitions) != r->partition && !final_result)
        return 0;
    mc_view_task *t = task_for(p, r->key, r->key_len, true);
    if (!t)
        return -1;
    size_t before = mc_view_task_extra_bytes(t);
    bool changed = false;
    switch (in) {
    case IN_TASKS: {
        bool submitted = false;
        changed = fold_tasks(v, t, r, ctx, &submitted);
        /* Counted here, past the home check above: a client's record written
         * elsewhere is copied home by the router, and would count twice. */
        if (submitted && count(p, r, &(mc_view_count){.submitted = 1, .late_ms = -1}) != 0)
            return -1;
        break;
    }
    case IN_WHEEL:
        changed = fold_wheel(v, t, r);
        break;
    case IN_READY:
        changed = fold_ready(v, t, r);
        break;
    case IN_RESULTS:
        changed = mc_view_task_result(t, &res);
        break;
    default:
        changed = fold_dead(v, t, r);
    }
    if (changed) {
        if (touched(v, p, t, before, mc_ctx_now_ms(ctx)) != 0)
            return -1;
    } else if (t->version == MC_VIEW_NONE && t->command == MC_VIEW_NONE) {
        remove_task(p, t); /* made for a record that said nothing */
    } else {
        p->bytes += mc_view_task_extra_bytes(t) - before;
        /* A fold that kept nothing to log may still have retired a version
         * (its due time with it): the order must follow. */
        if (reindex(p, t) != 0)
            return -1;
    }
    return 0;
}

/* ---- commits, forgetting ------------------------------------------------------------ */

static int view_prepare_commit(void *self, mc_ctx *ctx)
{
    view *v = self;
    view_part *p;
    for (int32_t id = 0; (p = mc_part_table_next(&v->parts, &id)); id++) {
        if (p->wheel_position != p->position_logged) {
            char text[24];
            int n = snprintf(text, sizeof text, "%" PRId64, p->wheel_position);
            if (mc_ctx_forward(ctx, v->changelog, p->partition, MC_VIEW_POSITION_KEY,
                               sizeof MC_VIEW_POSITION_KEY - 1, text, (size_t)n) != 0)
                return -1;
            p->position_logged = p->wheel_position;
        }
        while (p->dirty_apps) {
            mc_view_app_stats *a = p->dirty_apps;
            p->dirty_apps = a->next_dirty;
            a->dirty = false;
            mc_buf_reset(&v->buf);
            if (mc_view_app_stats_encode(a, &v->buf) != 0 ||
                mc_ctx_forward(ctx, v->changelog, p->partition, a->key, a->node.key_len,
                               v->buf.data, v->buf.len) != 0)
                return -1;
        }
        while (p->dirty) {
            mc_view_task *t = p->dirty;
            p->dirty = t->next_dirty;
            t->dirty = false;
            mc_buf_reset(&v->buf);
            if (mc_view_task_encode(t, &v->buf) != 0)
                return -1;
            int rc = mc_ctx_forward(ctx, v->changelog, p->partition, t->key, t->node.key_len,
                                    v->buf.data, v->buf.len);
            if (rc == MC_FORWARD_REFUSED) {
                /* Kafka will not take it (too large): the task is answered
                 * from memory until the next change, and a restore loses
                 * that change; stopping would stop every task here. */
                mc_counter_add(v->unreadable, 1);
                mc_log(v->logger, MC_LOG_WARN, "Kafka refused a view record", "key", t->key,
                       (const char *)NULL);
            } else if (rc != 0) {
                return -1;
            }
        }
    }
    update_gauges(v);
    return 0;
}

static int forget_due(view *v, view_part *p, int64_t now, mc_ctx *ctx)
{
    mc_timer *due[FORGET_BATCH];
    size_t n = mc_wheel_advance(p->forgets, now, due, FORGET_BATCH);
    for (size_t i = 0; i < n; i++) {
        mc_view_task *t = MC_TIMER_OWNER(due[i], mc_view_task, forget);
        if (!mc_view_state_final(mc_view_task_state(t, p->wheel_position, now))) {
            mc_wheel_add(p->forgets, &t->forget, now + v->history_ms);
            continue;
        }
        if (mc_ctx_forward(ctx, v->changelog, p->partition, t->key, t->node.key_len, NULL, 0) != 0)
            return -1;
        remove_task(p, t);
        mc_counter_add(v->forgotten, 1);
    }
    if (n == FORGET_BATCH)
        mc_ctx_wakeup_at(ctx, now);
    return 0;
}

typedef struct sweeping {
    int64_t now;
    mc_view_app_stats *idle; /* apps with nothing in the last hour */
} sweeping;

static void note_idle(mc_keynode *n, void *arg)
{
    sweeping *sw = arg;
    mc_view_app_stats *a = (mc_view_app_stats *)n;
    uint64_t sum[3];
    if (!a->dirty && !mc_view_app_stats_sum(a, sw->now, sum)) {
        a->next_dirty = sw->idle;
        sw->idle = a;
    }
}

/* Forgets, once a minute, the counters of apps with nothing in the last
 * hour (a tombstone each), so the changelog keeps only live apps. */
static int sweep_apps(view *v, view_part *p, int64_t now, mc_ctx *ctx)
{
    if (now - p->apps_swept_at < 60000)
        return 0;
    p->apps_swept_at = now;
    sweeping sw = {now, NULL};
    mc_keymap_each(p->apps, note_idle, &sw);
    while (sw.idle) {
        mc_view_app_stats *a = sw.idle;
        sw.idle = a->next_dirty;
        if (mc_ctx_forward(ctx, v->changelog, p->partition, a->key, a->node.key_len, NULL, 0) != 0)
            return -1;
        mc_keymap_remove(p->apps, &a->node);
        free(a);
    }
    return 0;
}

static int view_punctuate(void *self, int64_t now_ms, mc_ctx *ctx)
{
    view *v = self;
    view_part *p;
    int64_t next = now_ms + 1000;
    for (int32_t id = 0; (p = mc_part_table_next(&v->parts, &id)); id++) {
        if (forget_due(v, p, now_ms, ctx) != 0 || sweep_apps(v, p, now_ms, ctx) != 0)
            return -1;
        int64_t d = mc_wheel_next_deadline(p->forgets);
        if (d >= 0 && d < next)
            next = d;
    }
    mc_ctx_wakeup_at(ctx, next);
    if (v->waiting)
        view_look_at_waiting(v, ctx);
    return 0;
}

/* ---- assignment, restore ------------------------------------------------------------ */

typedef struct restoring {
    view *v;
    view_part **parts;
    int64_t now;
    /* Keys held at a partition that is no longer their home: partition,
     * key length, key, one after another. */
    uint8_t *moved;
    size_t moved_len, moved_cap;
    bool failed; /* out of memory */
} restoring;

static void note_moved(restoring *rs, int32_t partition, const void *key, size_t key_len)
{
    size_t need = rs->moved_len + sizeof partition + sizeof(uint32_t) + key_len;
    if (need > rs->moved_cap) {
        size_t cap = rs->moved_cap ? rs->moved_cap * 2 : 4096;
        while (cap < need)
            cap *= 2;
        uint8_t *grown = realloc(rs->moved, cap);
        if (!grown)
            return; /* kept until the next restore */
        rs->moved = grown;
        rs->moved_cap = cap;
    }
    uint32_t len = (uint32_t)key_len;
    memcpy(rs->moved + rs->moved_len, &partition, sizeof partition);
    memcpy(rs->moved + rs->moved_len + sizeof partition, &len, sizeof len);
    memcpy(rs->moved + rs->moved_len + sizeof partition + sizeof len, key, key_len);
    rs->moved_len = need;
}

static void skipped(const restoring *rs, const mc_record *m, const char *why)
{
    char off[24];
    snprintf(off, sizeof off, "%" PRId64, m->offset);
    mc_log(rs->v->logger, MC_LOG_ERROR, "unreadable view record skipped", "offset", off, "error",
           why ? why : "?", (const char *)NULL);
    mc_counter_add(rs->v->unreadable, 1);
}

/* An app's minute counters: a restore may come after a growth, and they
 * stay in the partition they were counted in (a stats answer adds them all
 * up). */
static void restore_app(restoring *rs, view_part *p, const mc_record *m)
{
    mc_keynode *old =
        mc_keymap_find(p->apps, m->key, m->key_len, mc_keymap_hash(m->key, m->key_len));
    if (old) {
        mc_keymap_remove(p->apps, old);
        free(old);
    }
    if (!m->value)
        return;
    const char *why = NULL;
    mc_view_app_stats *a =
        mc_view_app_stats_decode(m->key, m->key_len, m->value, m->value_len, &why);
    if (!a) {
        skipped(rs, m, why);
        return;
    }
    mc_keymap_insert(p->apps, &a->node);
}

static void restore_one(void *arg, const mc_record *m)
{
    restoring *rs = arg;
    view_part *p = NULL;
    for (view_part **pp = rs->parts; *pp; pp++)
        if ((*pp)->partition == m->partition)
            p = *pp;
    if (!p || !m->key)
        return;
    if (m->key_len == sizeof MC_VIEW_POSITION_KEY - 1 &&
        memcmp(m->key, MC_VIEW_POSITION_KEY, m->key_len) == 0) {
        char text[24] = "";
        if (m->value && m->value_len < sizeof text)
            memcpy(text, m->value, m->value_len);
        char *end;
        long long at = strtoll(text, &end, 10);
        if (end != text && !*end && at > p->wheel_position)
            p->wheel_position = p->position_logged = at;
        return;
    }
    size_t prefix = sizeof MC_VIEW_STATS_PREFIX - 1;
    if (m->key_len > prefix && memcmp(m->key, MC_VIEW_STATS_PREFIX, prefix) == 0) {
        restore_app(rs, p, m);
        return;
    }
    mc_view_task *old = view_find_task(p, m->key, m->key_len);
    if (old)
        remove_task(p, old);
    if (!m->value)
        return;
    const char *why = NULL;
    if (mc_key_partition(m->key, m->key_len, rs->v->partitions) != p->partition) {
        /* Its partition count grew: the key lives elsewhere now, where the
         * moved records rebuild it. Forget it here (a tombstone after the
         * restore), or it would stay forever. */
        note_moved(rs, p->partition, m->key, m->key_len);
        return;
    }
    mc_view_task *t = mc_view_task_decode(m->key, m->key_len, m->value, m->value_len, &why);
    if (!t) {
        skipped(rs, m, why);
        return;
    }
    mc_keymap_insert(p->tasks, &t->node);
    p->bytes += mc_view_task_extra_bytes(t);
    schedule_forget(rs->v, p, t, rs->now);
    if (reindex(p, t) != 0)
        rs->failed = true;
}

/* Whether parts holds partition id of all five inputs. */
static bool whole(const view *v, const rd_kafka_topic_partition_list_t *parts, int32_t id)
{
    int seen = 0;
    for (int i = 0; i < parts->cnt; i++)
        if (parts->elems[i].partition == id && input_of(v, parts->elems[i].topic) >= 0)
            seen++;
    return seen == N_INPUTS;
}

/* Tombstones, in the changelog partition each was read from, the keys a
 * restore found away from their home. */
static int forget_moved(view *v, const restoring *rs, mc_ctx *ctx)
{
    for (size_t at = 0; at < rs->moved_len;) {
        int32_t partition;
        uint32_t len;
        memcpy(&partition, rs->moved + at, sizeof partition);
        memcpy(&len, rs->moved + at + sizeof partition, sizeof len);
        const uint8_t *key = rs->moved + at + sizeof partition + sizeof len;
        if (mc_ctx_forward(ctx, v->changelog, partition, key, len, NULL, 0) != 0)
            return -1;
        mc_counter_add(v->forgotten, 1);
        at += sizeof partition + sizeof len + len;
    }
    return 0;
}

static int view_on_assign(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx)
{
    view *v = self;
    mc_ctx_set_ready(ctx, false);
    char err[256];
    /* Read again at every assignment: a growth of the partition count moves
     * keys, and then comes with a rebalance. */
    int32_t count = mc_ctx_partition_count(ctx, "results", err, sizeof err);
    if (count > 0) {
        v->partitions = count;
    } else if (v->partitions <= 0) {
        mc_log(v->logger, MC_LOG_ERROR, "cannot read the partition count", "error", err,
               (const char *)NULL);
        return -1;
    }
    view_part **fresh = calloc((size_t)parts->cnt + 1, sizeof *fresh);
    int32_t *ids = calloc((size_t)parts->cnt + 1, sizeof *ids);
    if (!fresh || !ids) {
        free(fresh);
        free(ids);
        return -1;
    }
    size_t n = 0;
    int64_t now = mc_ctx_now_ms(ctx);
    for (int i = 0; i < parts->cnt; i++) {
        int32_t id = parts->elems[i].partition;
        if (view_part_of(v, id))
            continue;
        if (!whole(v, parts, id)) {
            /* During a growth `tasks` has fewer partitions, and the range
             * assignor may give its partition of a number to one instance
             * and the other four to another: neither folds that number (two
             * would write its changelog), and neither reads past it, so the
             * next owner of all five starts where this assignment did. */
            for (int k = 0; k < parts->cnt; k++)
                if (parts->elems[k].partition == id)
                    mc_ctx_pause(ctx, parts->elems[k].topic, id, true);
            continue;
        }
        view_part *p = add_part(v, id, now);
        if (!p) {
            free(fresh);
            free(ids);
            return -1;
        }
        ids[n] = id;
        fresh[n++] = p;
    }
    int rc = 0;
    if (n) {
        restoring rs = {v, fresh, now, NULL, 0, 0, false};
        mc_restore_stats st;
        rc = mc_ctx_restore(ctx, "views", ids, n, restore_one, &rs, &st);
        if (rs.failed)
            rc = -1;
        if (rc == 0)
            mc_gauge_set(v->restore_seconds, st.seconds);
        if (rc == 0)
            rc = forget_moved(v, &rs, ctx);
        free(rs.moved);
    }
    free(fresh);
    free(ids);
    update_gauges(v);
    mc_ctx_wakeup_at(ctx, now);
    mc_ctx_set_ready(ctx, rc == 0);
    return rc;
}

static void view_on_revoke(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx)
{
    (void)ctx;
    view *v = self;
    for (int i = 0; i < parts->cnt; i++)
        part_free(mc_part_table_take(&v->parts, parts->elems[i].partition));
    /* Questions about a partition gone are answered by its next owner. */
    question **pp = &v->waiting;
    while (*pp) {
        question *q = *pp;
        if (view_still_held(v, q)) {
            pp = &q->next;
            continue;
        }
        *pp = q->next;
        view_finish_question(
            v, q, 503,
            view_sentence("the view's partitions moved while it was asked%s; ask again", ""));
    }
    update_gauges(v);
}

/* ---- life ---------------------------------------------------------------------------- */

static void view_destroy(void *self)
{
    view *v = self;
    if (!v)
        return;
    if (v->door) {
        pthread_mutex_lock(&v->door->lock);
        v->door->open = false;
        pthread_mutex_unlock(&v->door->lock);
        while (v->waiting) {
            question *q = v->waiting;
            v->waiting = q->next;
            view_finish_question(v, q, 503, view_sentence("the view stopped%s", ""));
        }
        /* Questions asked after the door closed get 503 from the asker. */
        pthread_mutex_lock(&v->door->lock);
        question *left = v->door->queue;
        v->door->queue = NULL;
        pthread_mutex_unlock(&v->door->lock);
        while (left) {
            question *q = left;
            left = q->next;
            view_finish_question(v, q, 503, view_sentence("the view stopped%s", ""));
        }
    }
    view_part *p;
    for (int32_t id = 0; (p = mc_part_table_next(&v->parts, &id)); id++)
        part_free(mc_part_table_take(&v->parts, id));
    mc_part_table_free(&v->parts);
    mc_writer_schemas_free(v->writers, v->n_writers);
    mc_kafka_targets_free(v->targets);
    mc_arena_free(v->arena);
    mc_buf_free(&v->buf);
    free(v);
}

static void *view_create(mc_ctx *ctx, const void *arg, char *err, size_t errlen)
{
    const mc_config *cfg = mc_ctx_config(ctx);
    view *v = calloc(1, sizeof *v);
    if (!v || !(v->arena = mc_arena_new())) {
        free(v);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    v->logger = mc_ctx_logger(ctx);
    v->history_ms = cfg->view_history_ms;
    for (int i = 0; i < N_INPUTS; i++)
        mc_topic_name(cfg, view_inputs[i], v->topics[i], sizeof v->topics[i]);
    mc_topic_name(cfg, "views", v->changelog_topic, sizeof v->changelog_topic);
    v->changelog = mc_ctx_output(ctx, "views");
    v->codec.confluent_command_ids = cfg->confluent_ids;
    v->codec.n_confluent_command_ids = cfg->n_confluent_ids;
    if (!v->changelog || mc_writer_schemas_load(cfg->command_writer_schemas, MC_SCHEMA_COMMAND,
                                                "--command-writer-schemas", &v->writers,
                                                &v->n_writers, err, errlen) != 0) {
        if (!v->changelog)
            snprintf(err, errlen, "cannot create output topic handles");
        view_destroy(v);
        return NULL;
    }
    v->codec.writers = v->writers;
    v->codec.n_writers = v->n_writers;
    if (!(v->targets =
              mc_kafka_targets_parse(cfg->kafka_targets, cfg->topic_prefix, err, errlen))) {
        view_destroy(v);
        return NULL;
    }
    mc_metrics *m = mc_ctx_metrics(ctx);
    v->tasks_gauge = mc_metrics_gauge(m, "mooncake_view_tasks", "Tasks the view holds", NULL);
    v->bytes_gauge = mc_metrics_gauge(m, "mooncake_view_bytes",
                                      "Bytes the view's tables hold: structs, keys, tasks, Results "
                                      "(not the allocator's overhead)",
                                      NULL);
    v->restore_seconds = mc_metrics_gauge(m, "mooncake_view_last_restore_seconds",
                                          "Duration of the view's last restore", NULL);
    v->answered =
        mc_metrics_counter(m, "mooncake_view_questions_total",
                           "Questions the view answered, by result", "result=\"answered\"");
    v->behind = mc_metrics_counter(m, "mooncake_view_questions_total",
                                   "Questions the view answered, by result", "result=\"behind\"");
    v->forgotten = mc_metrics_counter(m, "mooncake_view_forgotten_total",
                                      "Finished tasks the view forgot after the history", NULL);
    v->unreadable = mc_metrics_counter(m, "mooncake_view_unreadable_total",
                                       "Changelog records the view could not read", NULL);
    v->door = (mc_view_door *)arg;
    if (v->door) {
        if (mc_ctx_watch_fd(ctx, v->door->efd, POLLIN, view_on_questions, v) != 0) {
            snprintf(err, errlen, "cannot watch the view's questions");
            v->door = NULL;
            view_destroy(v);
            return NULL;
        }
        pthread_mutex_lock(&v->door->lock);
        v->door->open = true;
        pthread_mutex_unlock(&v->door->lock);
    }
    return v;
}

const mc_processor mc_view_processor = {
    .name = "view",
    .advertises = true,
    /* Nothing waits for the view's commits: a restart reads at most this much
     * input again, and the changelog gets a key's record once per second at
     * most, however often the task changed. */
    .min_commit_interval_ms = 1000,
    .input_topics = view_inputs,
    .create = view_create,
    .process = view_process,
    .punctuate = view_punctuate,
    .on_assign = view_on_assign,
    .on_revoke = view_on_revoke,
    .prepare_commit = view_prepare_commit,
    .destroy = view_destroy,
};
