/* The store: keeps every task due beyond the horizon and hands each one to
 * the wheel when it enters the horizon - the old watcher's MySQL table, now a
 * compacted topic.
 *
 * Input is the `wheel` topic (see wheel_topic.h), where the router writes
 * every command in tasks order. The store keeps the records addressed to it
 * (route: store) and, for every other record, drops the version it holds of
 * that key if the record's is newer (a re-submit due soon, a cancel) or the
 * same (a hand-off of it: ours, or one a frozen predecessor wrote when it
 * woke up after its partitions had moved). Its state lives in
 * memory, one hash map and one timing wheel of hand-off times per partition,
 * and is logged to its changelog, the compacted `store` topic, in the same
 * transaction as the input offsets: the Kafka Streams state-store pattern.
 * The store is the changelog's only writer, which is what makes the
 * hand-off safe: a hand-off tombstone can never land after a newer version
 * of the task, because nobody else writes versions there.
 *
 * On assignment the partition's changelog is replayed from the beginning
 * with a separate consumer before anything else happens (readiness is false
 * meanwhile); an abort does the same, since memory holds effects of the
 * aborted records. A hand-off writes the task to `wheel` and its tombstone to
 * the changelog in one transaction, so it happens exactly once.
 *
 * Once a second the store also writes a position marker to each of its
 * `wheel` partitions that got records other than markers since its last:
 * "every record below P is applied". The wheel needs it to know how long to
 * remember versions (see wheel.c). Markers alone call for none, or the
 * markers would answer one another forever on an idle system.
 *
 * Growing the partition count (layout.h): at the layout marker, every task
 * held for a key whose home moves goes to its new home's partition of
 * `wheel` (still addressed to a store: the one there keeps it), with its
 * version shifted below the new layout's, and its tombstone to the
 * changelog, in one transaction. Later records of moved keys are the
 * wheel's to send on; the store here ignores them. The commit metadata
 * keeps the layout and the marker's offset (checkpoint.h). */
#include "store.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "codec.h"
#include "kafka.h"
#include "keymap.h"
#include "layout.h"
#include "part_table.h"
#include "timing_wheel.h"
#include "wheel_topic.h"

/* Hand-offs per punctuate call, so a million tasks entering the horizon at
 * once (a store restored after a long outage) leave room for input. */
#define HANDOFF_BATCH 5000
#define MARKER_INTERVAL_MS 1000

/* One pending task: 56 bytes of struct, then the key and the encoded Task
 * (the bytes shared by StoredTask and WheelEntry, see mc_encode_versioned_raw). */
typedef struct store_entry {
    mc_keynode node;
    mc_timer handoff; /* due_ms = due_at - horizon */
    int64_t version;
    uint32_t task_len;
    int32_t attempt; /* with version: the pair versions are ordered by */
    char data[];     /* key (node.key_len bytes), then the task */
} store_entry;

static mc_version entry_version(const store_entry *e)
{
    return (mc_version){e->version, e->attempt};
}

#define ENTRY_KEY_OFFSET (offsetof(store_entry, data) - offsetof(store_entry, node))

typedef struct store_part {
    int32_t partition;
    mc_keymap *tasks;
    mc_timing_wheel *handoffs;
    int64_t position; /* next `wheel` offset to apply; -1 before the first record */
    int64_t content;  /* next after the last record that was not a position marker */
    int64_t marked;   /* position in the last marker written */
    size_t bytes;     /* key and task bytes held */
    struct store *owner;
    int32_t layout;    /* after a growth: its partition count; 0: none */
    int64_t layout_at; /* the offset of its marker */
} store_part;

typedef struct store {
    const mc_logger *logger;
    mc_output *wheel, *changelog;
    char wheel_topic[256], changelog_topic[256];
    int64_t horizon_ms;
    mc_part_table parts; /* store_part of each partition assigned */
    mc_buf buf;
    int64_t last_marker_ms;
    mc_gauge *tasks_gauge, *bytes_gauge, *restore_seconds;
    mc_counter *handed_off, *dropped, *kept, *restored, *ignored, *moved;
} store;

static void store_destroy(void *self);

static void *store_create(mc_ctx *ctx, const void *arg, char *err, size_t errlen)
{
    (void)arg;
    const mc_config *cfg = mc_ctx_config(ctx);
    store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->logger = mc_ctx_logger(ctx);
    s->horizon_ms = cfg->horizon_ms;
    mc_topic_name(cfg, "wheel", s->wheel_topic, sizeof s->wheel_topic);
    mc_topic_name(cfg, "store", s->changelog_topic, sizeof s->changelog_topic);
    s->wheel = mc_ctx_output(ctx, "wheel");
    s->changelog = mc_ctx_output(ctx, "store");
    if (!s->wheel || !s->changelog) {
        snprintf(err, errlen, "cannot create output topic handles");
        store_destroy(s);
        return NULL;
    }
    mc_metrics *m = mc_ctx_metrics(ctx);
    s->tasks_gauge = mc_metrics_gauge(m, "mooncake_store_tasks",
                                      "Tasks the store holds until they enter the horizon", NULL);
    s->bytes_gauge = mc_metrics_gauge(m, "mooncake_store_task_bytes",
                                      "Key and task bytes the store holds", NULL);
    s->restore_seconds = mc_metrics_gauge(m, "mooncake_store_last_restore_seconds",
                                          "Duration of the last changelog restore", NULL);
    s->handed_off =
        mc_metrics_counter(m, "mooncake_store_handed_off_total",
                           "Tasks handed to the wheel as they entered the horizon", NULL);
    s->kept = mc_metrics_counter(m, "mooncake_store_kept_total",
                                 "Far tasks (and re-submits) taken into the store", NULL);
    s->dropped = mc_metrics_counter(m, "mooncake_store_dropped_total",
                                    "Held tasks dropped for a newer version or a cancel", NULL);
    s->restored = mc_metrics_counter(m, "mooncake_store_restored_records_total",
                                     "Changelog records replayed on assignment", NULL);
    s->moved = mc_metrics_counter(
        m, "mooncake_store_moved_total",
        "Held tasks sent to their key's new home after the partition count grew", NULL);
    s->ignored = mc_metrics_counter(
        m, "mooncake_store_ignored_records_total",
        "wheel records the store could not read (the wheel dead-letters them)", NULL);
    return s;
}

/* ---- per-partition state -------------------------------------------------------- */

static void free_entry(mc_keynode *n, void *arg)
{
    (void)arg;
    free(n);
}

static void part_free(store_part *p)
{
    if (!p)
        return;
    if (p->tasks) {
        mc_keymap_drain(p->tasks, free_entry, NULL);
        mc_keymap_free(p->tasks);
    }
    mc_wheel_free(p->handoffs);
    free(p);
}

static store_part *find_part(store *s, int32_t partition)
{
    return mc_part_table_get(&s->parts, partition);
}

static store_part *add_part(store *s, int32_t partition, int64_t now_ms)
{
    store_part *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->partition = partition;
    p->owner = s;
    p->position = p->content = p->marked = -1;
    p->tasks = mc_keymap_new(ENTRY_KEY_OFFSET);
    p->handoffs = mc_wheel_new(now_ms);
    if (!p->tasks || !p->handoffs) {
        part_free(p);
        return NULL;
    }
    if (mc_part_table_put(&s->parts, partition, p) != 0) {
        part_free(p);
        return NULL;
    }
    return p;
}

static void update_gauges(store *s)
{
    size_t n = 0, bytes = 0;
    store_part *p;
    for (int32_t i = 0; (p = mc_part_table_next(&s->parts, &i)); i++) {
        n += mc_keymap_count(p->tasks);
        bytes += p->bytes;
    }
    mc_gauge_set(s->tasks_gauge, (double)n);
    mc_gauge_set(s->bytes_gauge, (double)bytes);
}

static store_entry *find_entry(store_part *p, const void *key, size_t keylen)
{
    mc_keynode *n = mc_keymap_find(p->tasks, key, keylen, mc_keymap_hash(key, keylen));
    return n ? (store_entry *)n : NULL;
}

static void remove_entry(store_part *p, store_entry *e)
{
    mc_wheel_cancel(p->handoffs, &e->handoff);
    mc_keymap_remove(p->tasks, &e->node);
    p->bytes -= e->node.key_len + e->task_len;
    free(e);
}

/* Holds (a newer version of) a task; replaces old, what the caller found
 * held for its key (NULL: nothing), so the key is looked up once. */
static int hold(store *s, store_part *p, store_entry *old, const void *key, size_t keylen,
                mc_version version, int64_t due_at, const void *task, size_t written_len,
                size_t suffix_len)
{
    /* A task written before Task version 2 is kept as a current one. */
    size_t task_len = written_len + suffix_len;
    uint32_t hash = old ? old->node.hash : mc_keymap_hash(key, keylen);
    if (old)
        remove_entry(p, old);
    store_entry *e = malloc(sizeof *e + keylen + task_len);
    if (!e)
        return -1;
    memset(e, 0, sizeof *e);
    e->node.hash = hash;
    e->node.key_len = (uint32_t)keylen;
    e->version = version.v;
    e->attempt = version.attempt;
    e->task_len = (uint32_t)task_len;
    memcpy(e->data, key, keylen);
    memcpy(e->data + keylen, task, written_len);
    memcpy(e->data + keylen + written_len, mc_task_v1_suffix, suffix_len);
    mc_keymap_insert(p->tasks, &e->node);
    p->bytes += keylen + task_len;
    if (mc_wheel_add(p->handoffs, &e->handoff, due_at - s->horizon_ms) != 0) {
        remove_entry(p, e);
        return -1;
    }
    return 0;
}

/* ---- restore ------------------------------------------------------------------ */

/* Applies one changelog record. The changelog is ours alone, so its order is
 * the truth: a later record for a key replaces or (tombstone) deletes. */
static void restore_record(store *s, store_part *p, const mc_record *m)
{
    if (!m->key)
        return;
    if (!m->value) {
        store_entry *e = find_entry(p, m->key, m->key_len);
        if (e)
            remove_entry(p, e);
        return;
    }
    /* Only what the store needs (version, due time) is read: we wrote these
     * records ourselves, from tasks validated on the way in, and a full
     * decode would be most of the restore's CPU. */
    mc_version version = {0, 0};
    int64_t due_at = 0;
    size_t body = 0, suffix = 0;
    mc_codec_err err = mc_peek_versioned(MC_SCHEMA_STORED_TASK, m->value, m->value_len, &version.v,
                                         NULL, &body, &suffix);
    if (err == MC_CODEC_OK)
        err = mc_peek_task((const uint8_t *)m->value + body, m->value_len - body, &due_at,
                           &version.attempt);
    if (err != MC_CODEC_OK) {
        /* Only we write the changelog, so this is a bug or tampering: say so
         * loudly, but keep the rest of the partition. */
        char off[24];
        snprintf(off, sizeof off, "%" PRId64, m->offset);
        mc_log(s->logger, MC_LOG_ERROR, "unreadable changelog record skipped", "topic",
               s->changelog_topic, "offset", off, "error", mc_codec_strerror(err),
               (const char *)NULL);
        return;
    }
    const uint8_t *task = (const uint8_t *)m->value + body;
    if (hold(s, p, find_entry(p, m->key, m->key_len), m->key, m->key_len, version, due_at, task,
             m->value_len - body, suffix) != 0)
        mc_log(s->logger, MC_LOG_ERROR, "out of memory restoring", (const char *)NULL);
}

static void restore_one(void *arg, const mc_record *m)
{
    store_part **parts = arg;
    for (; *parts; parts++)
        if ((*parts)->partition == m->partition)
            restore_record((*parts)->owner, *parts, m);
}

/* Replays the changelog partitions of the NULL-terminated `parts` from the
 * beginning. Returns 0, or -1 when the broker could not say where they end. */
static int restore_partitions(store *s, store_part **parts, size_t n, mc_ctx *ctx)
{
    if (n == 0)
        return 0;
    int32_t *ids = malloc(n * sizeof *ids);
    if (!ids)
        return -1;
    for (size_t i = 0; i < n; i++)
        ids[i] = parts[i]->partition;
    mc_restore_stats st;
    int rc = mc_ctx_restore(ctx, "store", ids, n, restore_one, parts, &st);
    free(ids);
    if (rc != 0)
        return -1;
    size_t held = 0;
    for (size_t i = 0; i < n; i++)
        held += mc_keymap_count(parts[i]->tasks);
    char tasks[24];
    snprintf(tasks, sizeof tasks, "%zu", held);
    mc_log(s->logger, MC_LOG_INFO, "restored state", "tasks", tasks, (const char *)NULL);
    mc_counter_add(s->restored, st.records);
    mc_gauge_set(s->restore_seconds, st.seconds);
    return 0;
}

static int store_on_assign(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx)
{
    store *s = self;
    mc_ctx_set_ready(ctx, false);
    store_part **fresh = calloc((size_t)parts->cnt + 1, sizeof *fresh);
    if (!fresh)
        return -1;
    size_t n = 0;
    int64_t now = mc_ctx_now_ms(ctx);
    for (int i = 0; i < parts->cnt; i++) {
        const rd_kafka_topic_partition_t *tp = &parts->elems[i];
        if (strcmp(tp->topic, s->wheel_topic) != 0 || find_part(s, tp->partition))
            continue;
        store_part *p = add_part(s, tp->partition, now);
        if (!p) {
            free(fresh);
            return -1;
        }
        /* What the restored state reflects: every record below the
         * committed offset (none, without one). */
        p->position = p->content = tp->offset >= 0 ? tp->offset : 0;
        mc_store_checkpoint cp;
        if (tp->offset >= 0 && mc_store_checkpoint_parse(tp->metadata, tp->metadata_size, &cp)) {
            p->layout = cp.layout;
            p->layout_at = cp.layout_at;
        }
        fresh[n++] = p;
    }
    int rc = restore_partitions(s, fresh, n, ctx);
    free(fresh);
    update_gauges(s);
    mc_ctx_wakeup_at(ctx, mc_ctx_now_ms(ctx));
    mc_ctx_set_ready(ctx, rc == 0);
    return rc;
}

static void store_on_revoke(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx)
{
    (void)ctx;
    store *s = self;
    for (int i = 0; i < parts->cnt; i++) {
        if (strcmp(parts->elems[i].topic, s->wheel_topic) != 0)
            continue;
        part_free(mc_part_table_take(&s->parts, parts->elems[i].partition));
    }
    update_gauges(s);
}

/* ---- processing ------------------------------------------------------------------ */

/* ---- growing the partition count ------------------------------------------------ */

static bool moved(const store_part *p, const void *key, size_t len)
{
    return p->layout && mc_key_partition(key, len, p->layout) != p->partition;
}

/* Sends the held entry e to its new home, still for a store to keep, with
 * its version shifted below the new layout's, and tombstones it here. */
static int send_home(store *s, store_part *p, store_entry *e, mc_ctx *ctx)
{
    static const uint8_t submit_branch = 0;
    mc_buf_reset(&s->buf);
    if (mc_encode_versioned_raw(MC_SCHEMA_WHEEL_ENTRY, mc_layout_shift(e->version), &submit_branch,
                                1, e->data + e->node.key_len, e->task_len, &s->buf) != 0)
        return -1;
    int32_t home = mc_key_partition(e->data, e->node.key_len, p->layout);
    if (mc_ctx_forward_header(ctx, s->wheel, home, e->data, e->node.key_len, s->buf.data,
                              s->buf.len, MC_ROUTE_HEADER, MC_ROUTE_STORE,
                              sizeof MC_ROUTE_STORE - 1) != 0 ||
        mc_ctx_forward(ctx, s->changelog, p->partition, e->data, e->node.key_len, NULL, 0) != 0)
        return -1;
    mc_counter_add(s->moved, 1);
    remove_entry(p, e);
    return 0;
}

typedef struct move_list {
    store_part *p;
    store_entry **v;
    size_t n, cap;
    bool nomem;
} move_list;

static void collect_moved(mc_keynode *n, void *arg)
{
    move_list *l = arg;
    store_entry *e = (store_entry *)n;
    if (!moved(l->p, e->data, e->node.key_len))
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        store_entry **v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            l->nomem = true;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = e;
}

/* The layout marker: every held task whose key's home moves goes there. */
static int take_layout(store *s, store_part *p, int32_t to, int64_t offset, mc_ctx *ctx)
{
    if (to <= p->layout || to <= 0)
        return 0; /* seen before (another router wrote it too) */
    p->layout = to;
    p->layout_at = offset;
    move_list l = {.p = p};
    mc_keymap_each(p->tasks, collect_moved, &l);
    int rc = l.nomem ? -1 : 0;
    for (size_t i = 0; i < l.n && rc == 0; i++)
        rc = send_home(s, p, l.v[i], ctx);
    free(l.v);
    char part[16], layout[16], n[24];
    snprintf(part, sizeof part, "%" PRId32, p->partition);
    snprintf(layout, sizeof layout, "%" PRId32, to);
    snprintf(n, sizeof n, "%zu", l.n);
    mc_log(s->logger, MC_LOG_INFO, "partition count growing: held tasks moved", "partition", part,
           "to_partitions", layout, "moved", n, (const char *)NULL);
    update_gauges(s);
    return rc;
}

static int store_prepare_commit(void *self, mc_ctx *ctx)
{
    store *s = self;
    store_part *p;
    for (int32_t i = 0; (p = mc_part_table_next(&s->parts, &i)); i++) {
        if (!p->layout)
            continue;
        char md[64];
        mc_store_checkpoint cp = {p->layout, p->layout_at};
        mc_store_checkpoint_format(&cp, md, sizeof md);
        if (mc_ctx_set_commit_metadata(ctx, s->wheel_topic, p->partition, md) != 0)
            return -1;
    }
    return 0;
}

static int store_process(void *self, const mc_record *m, mc_ctx *ctx)
{
    store *s = self;
    store_part *p = find_part(s, m->partition);
    if (!p)
        return 0; /* not ours (any more): the runner will not commit it for us */
    p->position = m->offset + 1;
    mc_wheel_class c;
    mc_wheel_record_classify(m, &c);
    if (!mc_wheel_is_position_marker(&c))
        p->content = p->position;
    if (c.kind == MC_WHEEL_LAYOUT)
        return take_layout(s, p, c.position <= INT32_MAX ? (int32_t)c.position : 0, m->offset, ctx);
    if (!m->value || !m->key)
        return 0; /* markers */
    if (moved(p, m->key, m->key_len) && m->offset > p->layout_at)
        return 0; /* the wheel sends it to the key's new home */
    bool far = c.far;
    mc_wheel_peeked pk;
    mc_codec_err err = mc_wheel_record_peek(m, &pk);
    if (err != MC_CODEC_OK || (far && pk.kind != MC_CMD_SUBMIT)) {
        if (!far) {
            mc_counter_add(s->ignored, 1);
            return 0; /* the wheel dead-letters it */
        }
        char why[300];
        snprintf(why, sizeof why, "store: unreadable far task: %s",
                 err ? mc_codec_strerror(err) : "not a Submit");
        return mc_ctx_dead_letter(ctx, m, why, NULL);
    }
    store_entry *e = find_entry(p, m->key, m->key_len);
    if (!far) {
        /* A task due soon, a cancel, or a hand-off: whatever we hold that is
         * older is obsolete, and so is the version a hand-off carries (ours,
         * or a frozen predecessor's that woke up: it has been handed over). */
        if (e && mc_version_cmp(entry_version(e), pk.version) <= 0) {
            remove_entry(p, e);
            mc_counter_add(s->dropped, 1);
            return mc_ctx_forward(ctx, s->changelog, m->partition, m->key, m->key_len, NULL, 0);
        }
        return 0;
    }
    if (e && mc_version_cmp(entry_version(e), pk.version) >= 0)
        return 0; /* older than what we hold: a next attempt a client re-submit superseded */
    /* The task's bytes follow the union branch. */
    const uint8_t *task = (const uint8_t *)m->value + pk.task_offset;
    size_t task_len = m->value_len - pk.task_offset;
    if (hold(s, p, e, m->key, m->key_len, pk.version, pk.due_at, task, task_len, pk.task_suffix) !=
        0)
        return -1;
    mc_counter_add(s->kept, 1);
    mc_ctx_wakeup_at(ctx, pk.due_at - s->horizon_ms);
    mc_buf_reset(&s->buf);
    if (mc_encode_versioned_raw(MC_SCHEMA_STORED_TASK, pk.version.v, task, task_len,
                                mc_task_v1_suffix, pk.task_suffix, &s->buf) != 0)
        return -1;
    return mc_ctx_forward(ctx, s->changelog, m->partition, m->key, m->key_len, s->buf.data,
                          s->buf.len);
}

/* A record whose changelog write Kafka refused for good (in an aborted
 * transaction): it goes to the dead topic, and counts as applied, so the
 * next marker passes it (the wheel keeps the key's floor until one does). */
static int store_refused(void *self, const mc_record *m, const char *reason, mc_ctx *ctx)
{
    store *s = self;
    store_part *p = find_part(s, m->partition);
    if (p)
        p->position = p->content = m->offset + 1;
    return mc_ctx_dead_letter(ctx, m, reason, NULL);
}

/* Writes `wheel` the task and the changelog its tombstone: one transaction. */
static int hand_off(store *s, store_part *p, store_entry *e, mc_ctx *ctx)
{
    static const uint8_t submit_branch = 0;
    mc_buf_reset(&s->buf);
    if (mc_encode_versioned_raw(MC_SCHEMA_WHEEL_ENTRY, e->version, &submit_branch, 1,
                                e->data + e->node.key_len, e->task_len, &s->buf) != 0)
        return -1;
    /* The hand-off says how far we had applied `wheel` when we wrote it: it
     * can be stale only against records from there on (see wheel.c). */
    char pos[24];
    int n = snprintf(pos, sizeof pos, "%" PRId64, p->position > 0 ? p->position : 0);
    if (mc_ctx_forward_header(ctx, s->wheel, p->partition, e->data, e->node.key_len, s->buf.data,
                              s->buf.len, MC_STORE_POSITION_HEADER, pos, (size_t)n) != 0 ||
        mc_ctx_forward(ctx, s->changelog, p->partition, e->data, e->node.key_len, NULL, 0) != 0)
        return -1;
    mc_counter_add(s->handed_off, 1);
    mc_keymap_remove(p->tasks, &e->node);
    p->bytes -= e->node.key_len + e->task_len;
    free(e);
    return 0;
}

static int write_marker(store *s, store_part *p, mc_ctx *ctx)
{
    if (mc_forward_position_marker(ctx, s->wheel, p->partition, MC_STORE_POSITION_HEADER,
                                   p->position) != 0)
        return -1;
    p->marked = p->position;
    return 0;
}

static int store_punctuate(void *self, int64_t now_ms, mc_ctx *ctx)
{
    store *s = self;
    mc_timer *due[256];
    size_t budget = HANDOFF_BATCH;
    int64_t next = INT64_MAX;
    store_part *p;
    for (int32_t i = 0; (p = mc_part_table_next(&s->parts, &i)); i++) {
        while (budget > 0) {
            size_t want = budget < 256 ? budget : 256;
            size_t got = mc_wheel_advance(p->handoffs, now_ms, due, want);
            for (size_t k = 0; k < got; k++)
                if (hand_off(s, p, MC_TIMER_OWNER(due[k], store_entry, handoff), ctx) != 0)
                    return -1;
            budget -= got;
            if (got < want)
                break;
        }
        int64_t d = mc_wheel_next_deadline(p->handoffs);
        if (d < next)
            next = d;
    }
    if (budget == 0)
        next = now_ms; /* more are due: come back right after the next poll */
    if (now_ms - s->last_marker_ms >= MARKER_INTERVAL_MS) {
        s->last_marker_ms = now_ms;
        for (int32_t i = 0; (p = mc_part_table_next(&s->parts, &i)); i++)
            if (p->content > p->marked && write_marker(s, p, ctx) != 0)
                return -1;
    }
    if (mc_part_table_count(&s->parts) > 0 && s->last_marker_ms + MARKER_INTERVAL_MS < next)
        next = s->last_marker_ms + MARKER_INTERVAL_MS;
    if (next != INT64_MAX)
        mc_ctx_wakeup_at(ctx, next);
    update_gauges(s);
    return 0;
}

static void store_destroy(void *self)
{
    store *s = self;
    store_part *p;
    for (int32_t i = 0; (p = mc_part_table_next(&s->parts, &i)); i++)
        part_free(p);
    mc_part_table_free(&s->parts);
    mc_buf_free(&s->buf);
    free(s);
}

static const char *const store_inputs[] = {"wheel", NULL};

const mc_processor mc_store_processor = {
    .name = "store",
    .consumer_defaults = mc_unhurried_consumer,
    .input_topics = store_inputs,
    .create = store_create,
    .process = store_process,
    .refused = store_refused,
    .punctuate = store_punctuate,
    .on_assign = store_on_assign,
    .on_revoke = store_on_revoke,
    .prepare_commit = store_prepare_commit,
    .destroy = store_destroy,
};
