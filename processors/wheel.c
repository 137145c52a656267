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
#include "wheel.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "codec.h"
#include "heap.h"
#include "kafka.h"
#include "keymap.h"
#include "layout.h"
#include "part_table.h"
#include "ring.h"
#include "timing_wheel.h"
#include "wheel_topic.h"

/* Tasks fired per punctuate call: a million due in the same millisecond go
 * out in chunks, with input polled and transactions committed in between. */
#define FIRE_BATCH 20000
/* Floors kept without markers allowing them to go (no store or no executor
 * running, or one far behind): past this many records the oldest are
 * forgotten. */
#define FLOOR_CAP 262144
/* How often a partition's position goes down `ready` as a marker. */
#define MARKER_INTERVAL_MS 1000
/* A fire this close to its due time (or past it) is late by the time its
 * commit is: it asks for the commit now (mc_ctx_request_commit_now), which
 * waits for the broker's acknowledgements rather than polling steps. Fires
 * a lead ahead do not: flushing every commit made them later at 5,000/s. */
#define LATE_FIRE_MS 50

typedef struct wheel_key {
    mc_keynode node;
    mc_timer timer;                /* scheduled while a version is pending */
    struct wheel_key *prev, *next; /* pending list, in offset order */
    mc_version floor;              /* versions below this are void */
    mc_version version;            /* the pending version, when pending */
    int64_t offset, due;           /* its record's offset and due time */
    int64_t fired_due;             /* a version fired early and not due yet; 0: none */
    int64_t fired_offset;          /* that version's record */
    uint8_t *payload;              /* the pending WheelEntry bytes (what `ready` gets), or NULL */
    uint32_t payload_len;
    uint32_t queued; /* floor, hold and recall entries naming this key */
    char key[];
} wheel_key;

#define KEY_OFFSET (offsetof(wheel_key, key) - offsetof(wheel_key, node))

/* A record since the markers' positions: its key's floor is still needed. */
typedef struct floor_ref {
    int64_t offset;
    wheel_key *k;
} floor_ref;

/* A pending hand-off or near next attempt, and the position it can be stale
 * against: the store's when it wrote the hand-off, the wheel's when it fired
 * the call the next attempt follows. */
typedef struct hold_ref {
    int64_t pos, offset;
    wheel_key *k;
} hold_ref;

/* A task fired early: its key is kept until due, for a recall. Current
 * while the key's fired_due and fired_offset still name it. */
typedef struct recall_ref {
    int64_t due, offset;
    wheel_key *k;
} recall_ref;

typedef struct wheel_part {
    int32_t partition;
    mc_keymap *keys;
    mc_timing_wheel *w;
    wheel_key *pend_head, *pend_tail;
    size_t n_pending;
    int64_t next;        /* next offset to process; -1 before the first record */
    int64_t replay_end;  /* O of the checkpoint read on assignment */
    int64_t replay_from; /* the committed offset read on assignment */
    bool has_frontier;
    int64_t fdue, foff;   /* fired frontier */
    int64_t store_pos;    /* from the store's markers */
    int64_t resolved_pos; /* from the resolved-position markers */
    int64_t marked;       /* position in the last marker sent down `ready` */
    int64_t marked_at;    /* when */
    int32_t layout;       /* after a growth: its partition count; 0: none */
    int64_t layout_at;    /* the offset of its marker */
    bool layout_done;     /* every call fired before the marker has finished */
    bool layout_applied;  /* keys moved (false while a replay has not reached the marker) */
    mc_ring floors;       /* floor_ref, in offset order */
    mc_heap holds;        /* hold_ref, least position on top (see oldest_hold) */
    mc_ring recalls;      /* recall_ref, in due order (the firing order) */
} wheel_part;

typedef struct wheel {
    char topic[256];
    mc_output *ready, *wheel_out;
    int64_t lead_ms;
    mc_part_table parts; /* wheel_part of each partition assigned */
    mc_arena *arena;
    mc_gauge *pending_gauge;
    mc_counter *fired, *stale, *voided, *replayed, *floors_capped, *recalled, *moved;
    mc_histogram *lateness;
    mc_buf buf;
} wheel;

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
    w->ready = mc_ctx_output(ctx, "ready");
    w->wheel_out = mc_ctx_output(ctx, "wheel");
    if (!w->ready || !w->wheel_out) {
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

/* ---- per-partition state ---------------------------------------------------------- */

static void free_key(mc_keynode *n, void *arg)
{
    (void)arg;
    wheel_key *k = (wheel_key *)n;
    free(k->payload);
    free(k);
}

static void part_free(wheel_part *p)
{
    if (!p)
        return;
    if (p->keys) {
        mc_keymap_drain(p->keys, free_key, NULL);
        mc_keymap_free(p->keys);
    }
    mc_wheel_free(p->w);
    mc_ring_free(&p->floors);
    mc_heap_free(&p->holds);
    mc_ring_free(&p->recalls);
    free(p);
}

static wheel_part *find_part(wheel *w, int32_t partition)
{
    return mc_part_table_get(&w->parts, partition);
}

static bool replaying(const wheel_part *p)
{
    return p->next < p->replay_end;
}

static void unlink_pending(wheel_part *p, wheel_key *k)
{
    mc_wheel_cancel(p->w, &k->timer);
    if (k->prev)
        k->prev->next = k->next;
    else
        p->pend_head = k->next;
    if (k->next)
        k->next->prev = k->prev;
    else
        p->pend_tail = k->prev;
    k->prev = k->next = NULL;
    free(k->payload);
    k->payload = NULL;
    p->n_pending--;
}

/* Forgets a key once nothing needs it: no pending version, and no floor,
 * hold or recall entry naming it. */
static void maybe_forget(wheel_part *p, wheel_key *k)
{
    if (k->queued == 0 && !k->payload) {
        mc_keymap_remove(p->keys, &k->node);
        free(k);
    }
}

/* Drops the front entry of one of the key queues. */
static void unqueue_front(wheel_part *p, mc_ring *q, wheel_key *k)
{
    mc_ring_pop(q);
    k->queued--;
    maybe_forget(p, k);
}

static int floor_push(wheel *w, wheel_part *p, wheel_key *k, int64_t offset)
{
    if (mc_ring_len(&p->floors) == FLOOR_CAP) {
        mc_counter_add(w->floors_capped, 1);
        unqueue_front(p, &p->floors, ((floor_ref *)mc_ring_at(&p->floors, 0))->k);
    }
    if (mc_ring_push(&p->floors, &(floor_ref){offset, k}) != 0)
        return -1;
    k->queued++;
    return 0;
}

/* Floors of records below both markers' positions are needed no more. */
static void release_floors(wheel_part *p)
{
    int64_t upto = p->store_pos < p->resolved_pos ? p->store_pos : p->resolved_pos;
    while (mc_ring_len(&p->floors) > 0) {
        floor_ref *f = mc_ring_at(&p->floors, 0);
        if (f->offset >= upto)
            break;
        unqueue_front(p, &p->floors, f->k);
    }
}

static bool hold_less(const void *a, const void *b)
{
    const hold_ref *x = a, *y = b;
    return x->pos < y->pos || (x->pos == y->pos && x->offset < y->offset);
}

static int hold_push(wheel_part *p, wheel_key *k, int64_t pos, int64_t offset)
{
    if (mc_heap_push(&p->holds, &(hold_ref){pos, offset, k}) != 0)
        return -1;
    k->queued++;
    return 0;
}

/* The least position of a hand-off or next attempt still pending, or
 * INT64_MAX. Positions do not arrive in order - a call fired early can fail
 * late (a timeout), after one fired later has failed and been rescheduled,
 * or after a hand-off with a higher position - so a queue's front is not the
 * least, and the commit would pass a pending one's position (a replay from
 * there judged it stale and lost it: test_sim_chaos). Hence a heap. An entry
 * no longer pending never is again (a key's pending offset only grows), so
 * it is dropped when it reaches the top. */
static int64_t oldest_hold(wheel_part *p)
{
    hold_ref *h;
    while ((h = mc_heap_top(&p->holds)) != NULL) {
        if (h->k->payload && h->k->offset == h->offset)
            return h->pos;
        wheel_key *k = h->k;
        mc_heap_pop(&p->holds);
        k->queued--;
        maybe_forget(p, k);
    }
    return INT64_MAX;
}

static bool recall_current(const recall_ref *r)
{
    return r->k->fired_due == r->due && r->k->fired_offset == r->offset;
}

static int recall_push(wheel_part *p, wheel_key *k, int64_t due, int64_t offset)
{
    if (mc_ring_push(&p->recalls, &(recall_ref){due, offset, k}) != 0)
        return -1;
    k->queued++;
    k->fired_due = due;
    k->fired_offset = offset;
    return 0;
}

/* Tasks fired early whose due time has come: nothing can recall them now. */
static void expire_recalls(wheel_part *p, int64_t now)
{
    while (mc_ring_len(&p->recalls) > 0) {
        recall_ref *r = mc_ring_at(&p->recalls, 0);
        if (r->due > now && recall_current(r))
            break;
        if (recall_current(r))
            r->k->fired_due = 0;
        unqueue_front(p, &p->recalls, r->k);
    }
}

/* The lowest record offset a recall may still need, or INT64_MAX. They are
 * few (what fired within the lead), so a scan. */
static int64_t oldest_recall(const wheel_part *p)
{
    int64_t lo = INT64_MAX;
    for (size_t i = 0; i < mc_ring_len(&p->recalls); i++) {
        const recall_ref *r = mc_ring_at(&p->recalls, i);
        if (recall_current(r) && r->offset < lo)
            lo = r->offset;
    }
    return lo;
}

static wheel_key *key_get(wheel_part *p, const void *key, size_t len)
{
    uint32_t h = mc_keymap_hash(key, len);
    mc_keynode *n = mc_keymap_find(p->keys, key, len, h);
    if (n)
        return (wheel_key *)n;
    wheel_key *k = calloc(1, sizeof *k + len);
    if (!k)
        return NULL;
    k->node.hash = h;
    k->node.key_len = (uint32_t)len;
    k->floor = (mc_version){INT64_MIN, 0};
    memcpy(k->key, key, len);
    mc_keymap_insert(p->keys, &k->node);
    return k;
}

static void update_gauge(wheel *w)
{
    size_t n = 0;
    wheel_part *p;
    for (int32_t i = 0; (p = mc_part_table_next(&w->parts, &i)); i++)
        n += p->n_pending;
    mc_gauge_set(w->pending_gauge, (double)n);
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
    if (replaying(p) && p->replay_from >= 0 && p->replay_from < c)
        c = p->replay_from;
    if (p->pend_head && p->pend_head->offset < c)
        c = p->pend_head->offset;
    if (mc_ring_len(&p->floors) > 0) {
        int64_t f = ((floor_ref *)mc_ring_at(&p->floors, 0))->offset;
        if (f < c)
            c = f;
    }
    int64_t h = oldest_hold(p);
    if (h < c)
        c = h;
    int64_t r = oldest_recall(p);
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
        if (!replaying(p) && p->next > p->marked && now - p->marked_at >= MARKER_INTERVAL_MS &&
            send_marker(w, p, ctx) != 0)
            return -1;
    }
    update_gauge(w);
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
        part_free(p);
        return NULL;
    }
    mc_ring_init(&p->floors, sizeof(floor_ref));
    mc_heap_init(&p->holds, sizeof(hold_ref), hold_less);
    mc_ring_init(&p->recalls, sizeof(recall_ref));
    p->store_pos = p->resolved_pos = p->marked = -1;
    if (mc_part_table_put(&w->parts, partition, p) != 0) {
        part_free(p);
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
        if (strcmp(tp->topic, w->topic) != 0 || find_part(w, tp->partition))
            continue;
        wheel_part *p = part_new(w, tp->partition, mc_ctx_now_ms(ctx));
        if (!p)
            return -1;
        p->next = tp->offset >= 0 ? tp->offset : -1;
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
        if (replaying(p))
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
        part_free(mc_part_table_take(&w->parts, parts->elems[i].partition));
    }
    update_gauge(w);
}

/* ---- firing ---------------------------------------------------------------------- */

/* The pending record of k, as the input record it was (for a dead letter). */
static mc_record pending_record(const wheel *w, const wheel_part *p, const wheel_key *k)
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
        mc_record rec = pending_record(w, p, k);
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
    if (k->due > now_ms && recall_push(p, k, k->due, k->offset) != 0)
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
    unlink_pending(p, k);
    maybe_forget(p, k);
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
        unlink_pending(p, k);
        mc_counter_add(w->voided, 1);
    }
    if (mc_version_cmp(v, k->floor) > 0)
        k->floor = v;
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
static mc_version record_version(const mc_record *m, const mc_wheel_entry *e)
{
    mc_version v = {e->version, 0};
    int64_t a;
    if (e->command.kind == MC_CMD_SUBMIT)
        v.attempt = e->command.submit.attempt;
    else if (mc_record_header_int(m, MC_ATTEMPT_HEADER, &a) && a <= INT32_MAX)
        v.attempt = (int32_t)a;
    return v;
}

/* Makes e (the record m) the key's pending version. */
static int take_pending(wheel *w, wheel_part *p, wheel_key *k, const mc_record *m,
                        const mc_wheel_entry *e, mc_version v, bool replay, mc_ctx *ctx)
{
    if (k->payload)
        unlink_pending(p, k); /* rescheduled */
    k->payload = malloc(m->value_len);
    if (!k->payload)
        return -1;
    memcpy(k->payload, m->value, m->value_len);
    k->payload_len = (uint32_t)m->value_len;
    k->version = v;
    k->offset = m->offset;
    k->due = e->command.submit.due_at;
    int64_t handoff_pos;
    if (mc_wheel_record_handoff_position(m, &handoff_pos) &&
        hold_push(p, k, handoff_pos, m->offset) != 0)
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
    mc_ctx_wakeup_at(ctx, replay ? mc_ctx_now_ms(ctx) : k->due - w->lead_ms);
    return 0;
}

/* A version fired already (before a restart, or by the router): versions
 * up to it are void, and a recall entry keeps it until it is due. */
static int take_fired(wheel *w, wheel_part *p, wheel_key *k, const mc_record *m,
                      const mc_wheel_entry *e, mc_version v, int64_t now)
{
    raise_floor(w, p, k, (mc_version){v.v, v.attempt + 1});
    if (e->command.submit.due_at > now &&
        recall_push(p, k, e->command.submit.due_at, m->offset) != 0)
        return -1;
    return 0;
}

/* Applies a decoded entry to its key: the rules at the top of the file. */
static int apply_entry(wheel *w, wheel_part *p, wheel_key *k, const mc_record *m,
                       const mc_wheel_entry *e, bool replay, mc_ctx *ctx)
{
    mc_version v = record_version(m, e);
    int64_t now = mc_ctx_now_ms(ctx);
    if (k->fired_due && mc_version_cmp(v, k->floor) >= 0) {
        /* Fired early and not called yet: a newer version or a cancel must
         * still win, so the executor, which holds it, is told. (In a replay
         * the recall went out when the record was first processed.) */
        if (!replay && k->fired_due > now) {
            if (send_cancel(w, w->ready, p, k, e, v, ctx) != 0)
                return -1;
            mc_counter_add(w->recalled, 1);
        }
        k->fired_due = 0;
    }
    int64_t handoff_pos;
    bool handoff = mc_wheel_record_handoff_position(m, &handoff_pos);
    if (e->command.kind == MC_CMD_SUBMIT && mc_wheel_record_fired_by_router(m)) {
        /* The router fired it to `ready` in the transaction that wrote it
         * here, since a command fresh from tasks is always its key's newest
         * version (router.c): what firing it would have done here, but the
         * firing. Never judged stale or pending, in a replay either. */
        if (mc_version_cmp(v, k->floor) < 0 || (k->payload && mc_version_cmp(v, k->version) <= 0))
            mc_counter_add(w->stale, 1); /* cannot happen; fired all the same */
        return take_fired(w, p, k, m, e, v, now);
    }
    if (e->command.kind == MC_CMD_CANCEL) {
        raise_floor(w, p, k, v);
    } else if (mc_wheel_record_is_far(m)) {
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
    } else if (replay && handoff && handoff_pos < p->replay_from) {
        /* A hand-off the store wrote before it had applied records this
         * replay does not see (a newer version, a cancel): judged when it
         * was first processed, and not pending at the checkpoint, since a
         * pending hand-off holds the committed offset back to its
         * position. So it was stale (or superseded): not again. */
        raise_floor(w, p, k, (mc_version){v.v, v.attempt + 1});
        mc_counter_add(w->stale, 1);
    } else {
        return take_pending(w, p, k, m, e, v, replay, ctx);
    }
    return 0;
}

/* Markers of the store's and of the resolved position. Returns true when m
 * was one. */
static bool take_marker(wheel_part *p, const mc_record *m)
{
    int64_t pos;
    if (mc_wheel_record_store_position(m, &pos)) {
        if (pos > p->store_pos)
            p->store_pos = pos;
    } else if (mc_wheel_record_resolved_position(m, &pos)) {
        if (pos > p->resolved_pos)
            p->resolved_pos = pos;
    } else {
        return false;
    }
    /* Nothing more of a moved key will pass through here once every call
     * fired before the marker has finished (its next attempt is before the
     * resolved position) and the store has passed the marker (its
     * hand-offs from before are before its position). */
    if (p->layout && p->resolved_pos > p->layout_at && p->store_pos > p->layout_at)
        p->layout_done = true;
    release_floors(p);
    return true;
}

/* ---- growing the partition count ------------------------------------------------ */

/* Whether key's home is elsewhere since the growth at the partition's marker. */
static bool moved(const wheel_part *p, const void *key, size_t len)
{
    return p->layout_applied && mc_key_partition(key, len, p->layout) != p->partition;
}

/* Sends entry e of key to its new home, its version shifted below the new
 * layout's, with the route, attempt and fired-by-router headers it had;
 * cause is the record it came from when that is not the one being
 * processed. Returns what mc_ctx_produce does (MC_FORWARD_REFUSED: Kafka
 * refused it for good). */
static int send_home(wheel *w, wheel_part *p, const void *key, size_t keylen, mc_wheel_entry *e,
                     bool far, int64_t attempt_header, bool fired, const mc_source *cause,
                     mc_ctx *ctx)
{
    e->version = mc_layout_shift(e->version);
    mc_buf_reset(&w->buf);
    if (mc_encode_wheel_entry(e, &w->buf) != 0)
        return -1;
    char attempt[24];
    mc_header h[3];
    size_t nh = 0;
    if (fired)
        h[nh++] = (mc_header){MC_FIRED_BY_ROUTER_HEADER, "1", 1};
    if (far)
        h[nh++] = (mc_header){MC_ROUTE_HEADER, MC_ROUTE_STORE, sizeof MC_ROUTE_STORE - 1};
    if (attempt_header > 0) {
        int n = snprintf(attempt, sizeof attempt, "%" PRId64, attempt_header);
        h[nh++] = (mc_header){MC_ATTEMPT_HEADER, attempt, (size_t)n};
    }
    mc_produce out = {.out = w->wheel_out,
                      .partition = mc_key_partition(key, keylen, p->layout),
                      .key = key,
                      .key_len = keylen,
                      .value = w->buf.data,
                      .value_len = w->buf.len,
                      .headers = h,
                      .n_headers = nh,
                      .cause = cause};
    int rc = mc_ctx_produce(ctx, &out);
    if (rc == 0)
        mc_counter_add(w->moved, 1);
    return rc;
}

typedef struct move_ctx {
    wheel *w;
    wheel_part *p;
    mc_ctx *ctx;
    bool replay;
    int rc;
    wheel_key **gone;
    size_t n_gone, cap_gone;
} move_ctx;

/* Collects the pending keys whose home moved (the map is not changed while
 * it is walked). */
static void collect_moved(mc_keynode *n, void *arg)
{
    move_ctx *mv = arg;
    wheel_key *k = (wheel_key *)n;
    if (!k->payload || !moved(mv->p, k->key, k->node.key_len))
        return;
    if (mv->n_gone == mv->cap_gone) {
        size_t cap = mv->cap_gone ? mv->cap_gone * 2 : 64;
        wheel_key **v = realloc(mv->gone, cap * sizeof *v);
        if (!v) {
            mv->rc = -1;
            return;
        }
        mv->gone = v;
        mv->cap_gone = cap;
    }
    mv->gone[mv->n_gone++] = k;
}

/* A record of a key whose home moved, after the marker: it follows what
 * went there, unless this partition's floor says it is stale (a next
 * attempt of a call the client cancelled before the growth, a hand-off
 * the store wrote before it saw a newer version): the new home may have
 * forgotten what made it stale. In a replay it went out the first time. */
static int forward_moved(wheel *w, wheel_part *p, const mc_record *m, mc_wheel_entry *e,
                         bool replay, mc_ctx *ctx)
{
    wheel_key *k = key_get(p, m->key, m->key_len);
    if (!k || floor_push(w, p, k, m->offset) != 0)
        return -1;
    mc_version v = record_version(m, e);
    int rc = 0;
    if (e->command.kind == MC_CMD_SUBMIT && mc_version_cmp(v, k->floor) < 0) {
        mc_counter_add(w->stale, 1);
    } else if (e->command.kind == MC_CMD_SUBMIT && mc_wheel_record_fired_by_router(m)) {
        /* Fired already (by a router that routed by an older layout, its
         * read of the new one having failed): it goes home still marked
         * fired, so the new home voids the older versions it has and keeps
         * its recall entry, and fires nothing. */
        if (mc_version_cmp(v, k->floor) > 0)
            k->floor = v;
        if (!replay)
            rc = send_home(w, p, m->key, m->key_len, e, false, 0, true, NULL, ctx);
    } else {
        if (mc_version_cmp(v, k->floor) > 0)
            k->floor = v;
        int64_t attempt = 0;
        mc_record_header_int(m, MC_ATTEMPT_HEADER, &attempt);
        if (!replay) /* refused: the runner hands it back through wheel_refused */
            rc = send_home(w, p, m->key, m->key_len, e, mc_wheel_record_is_far(m), attempt, false,
                           NULL, ctx);
    }
    maybe_forget(p, k);
    return rc;
}

/* Sends key k's pending version to its new home; one Kafka refuses for good
 * (too large with its shifted version, say) goes to the dead topic, as a
 * fire to `ready` would. */
static int move_pending(wheel *w, wheel_part *p, wheel_key *k, mc_ctx *ctx)
{
    mc_wheel_entry e;
    mc_arena_reset(w->arena);
    if (mc_decode_wheel_entry(k->payload, k->payload_len, w->arena, &e, NULL, 0) != 0)
        return -1; /* it decoded when it was taken */
    mc_source cause = {w->topic, p->partition, k->offset};
    int rc = send_home(w, p, k->key, k->node.key_len, &e, false, 0, false, &cause, ctx);
    if (rc != MC_FORWARD_REFUSED)
        return rc;
    mc_record rec = pending_record(w, p, k);
    return mc_ctx_dead_letter(ctx, &rec, "wheel: Kafka refused the task's record for its new home",
                              NULL);
}

/* The layout marker: the pending version of every key whose home moves goes
 * there (in a replay it went when the marker was first processed). */
static int take_layout(wheel *w, wheel_part *p, int32_t to, int64_t offset, bool replay,
                       mc_ctx *ctx)
{
    if (to <= 0 || to < p->layout || (to == p->layout && p->layout_applied))
        return 0; /* a marker seen again (another router wrote it too) */
    if (to > p->layout) {
        p->layout = to;
        p->layout_at = offset;
        p->layout_done = false;
    } /* else the checkpoint's marker, met again in a replay */
    p->layout_applied = true;
    move_ctx mv = {.w = w, .p = p, .ctx = ctx, .replay = replay};
    mc_keymap_each(p->keys, collect_moved, &mv);
    for (size_t i = 0; i < mv.n_gone && mv.rc == 0; i++) {
        wheel_key *k = mv.gone[i];
        if (!replay && move_pending(w, p, k, ctx) != 0)
            mv.rc = -1;
        /* What moved is newer than anything of the key still to come here
         * (a stale hand-off, a superseded next attempt): keep saying so. */
        if (mc_version_cmp(k->version, k->floor) > 0)
            k->floor = k->version;
        if (floor_push(w, p, k, offset) != 0)
            mv.rc = -1;
        unlink_pending(p, k);
        maybe_forget(p, k);
    }
    free(mv.gone);
    char part[16], layout[16], n[24];
    snprintf(part, sizeof part, "%" PRId32, p->partition);
    snprintf(layout, sizeof layout, "%" PRId32, to);
    snprintf(n, sizeof n, "%zu", mv.n_gone);
    if (!replay)
        mc_log(mc_ctx_logger(ctx), MC_LOG_INFO, "partition count growing: pending tasks moved",
               "partition", part, "to_partitions", layout, "moved", n, (const char *)NULL);
    return mv.rc;
}

static int wheel_process(void *self, const mc_record *m, mc_ctx *ctx)
{
    wheel *w = self;
    wheel_part *p = find_part(w, m->partition);
    if (!p)
        return 0;
    bool replay = m->offset < p->replay_end;
    if (replay)
        mc_counter_add(w->replayed, 1);
    p->next = m->offset + 1;
    int rc = 0;
    int64_t to;
    if (!m->key && !m->value && mc_record_header_int(m, MC_LAYOUT_HEADER, &to)) {
        rc = take_layout(w, p, to <= INT32_MAX ? (int32_t)to : 0, m->offset, replay, ctx);
    } else if (!take_marker(p, m)) {
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
        if (moved(p, m->key, m->key_len)) {
            rc = forward_moved(w, p, m, &e, replay, ctx);
        } else {
            wheel_key *k = key_get(p, m->key, m->key_len);
            if (!k || floor_push(w, p, k, m->offset) != 0)
                return -1;
            rc = apply_entry(w, p, k, m, &e, replay, ctx);
            maybe_forget(p, k);
        }
    }
    if (replay && !replaying(p))
        mc_ctx_wakeup_at(ctx, mc_ctx_now_ms(ctx)); /* replay done: fire what is due */
    return rc;
}

/* A record whose fire Kafka refused for good (in an aborted transaction):
 * it goes to the dead topic instead, and its version counts as fired. */
static int wheel_refused(void *self, const mc_record *m, const char *reason, mc_ctx *ctx)
{
    wheel *w = self;
    wheel_part *p = find_part(w, m->partition);
    if (!p)
        return 0;
    p->next = m->offset + 1;
    mc_wheel_entry e;
    mc_arena_reset(w->arena);
    bool decoded = m->key && mc_decode_wheel_entry(m->value, m->value_len, w->arena, &e, NULL, 0) ==
                                 MC_CODEC_OK;
    if (decoded) {
        wheel_key *k = key_get(p, m->key, m->key_len);
        if (!k || floor_push(w, p, k, m->offset) != 0)
            return -1;
        mc_version v = record_version(m, &e);
        raise_floor(w, p, k, (mc_version){v.v, v.attempt + 1});
        maybe_forget(p, k);
    }
    if (m->offset < p->replay_end && !replaying(p))
        mc_ctx_wakeup_at(ctx, mc_ctx_now_ms(ctx)); /* replay done */
    return mc_ctx_dead_letter(
        ctx, m, reason, decoded && e.command.kind == MC_CMD_SUBMIT ? &e.command.submit : NULL);
}

/* Fires what is due (with the lead) on one partition, within the budget;
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

static int wheel_punctuate(void *self, int64_t now_ms, mc_ctx *ctx)
{
    wheel *w = self;
    size_t budget = FIRE_BATCH, fired = 0;
    int64_t next = INT64_MAX;
    bool ready = true;
    wheel_part *p;
    for (int32_t i = 0; (p = mc_part_table_next(&w->parts, &i)); i++) {
        if (replaying(p)) {
            ready = false;
            continue;
        }
        expire_recalls(p, now_ms);
        long got = fire_due(w, p, now_ms, budget, ctx);
        if (got < 0)
            return -1;
        budget -= (size_t)got;
        fired += (size_t)got;
        int64_t d = mc_wheel_next_deadline(p->w);
        if (d != INT64_MAX && d - w->lead_ms < next)
            next = d - w->lead_ms;
        if (mc_ring_len(&p->recalls) > 0) {
            int64_t r = ((recall_ref *)mc_ring_at(&p->recalls, 0))->due;
            if (r < next)
                next = r;
        }
    }
    mc_ctx_set_ready(ctx, ready);
    if (budget == 0)
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
        part_free(p);
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
