/* The wheel: fires each task to `ready` at its due millisecond, exactly once,
 * in due order - the old producer's TimeWheel and CheckPoint.
 *
 * Input is the `wheel` topic (see wheel_topic.h). Per partition the wheel
 * keeps a timing wheel of pending tasks and, per key, a version floor:
 * "versions below this are void". A Submit is taken if its version is not
 * below the floor and newer than what is pending; a Cancel, or a far
 * Submit routed to the store, raises the floor and drops what is pending;
 * firing version v raises the floor to v + 1.
 *
 * Why floors must outlive the task: the store hands a task over a little
 * before it enters the horizon, and a newer version or a cancel written by
 * the router in that instant can reach `wheel` before the stale hand-off. The
 * store says how far it has applied `wheel` with its position markers; a
 * hand-off written after marker P can only be stale relative to records at
 * or after P, so floors are kept exactly for the records since the last
 * marker (a FIFO of offsets), and forgotten after that.
 *
 * A replay after a restart has to judge those hand-offs again, and may
 * start past the records that made one stale (their floors were forgotten
 * once a marker passed them). So each hand-off carries the store's position
 * P_h when it was written: it can only be stale against records from P_h
 * on. A pending hand-off holds the committed offset back to its P_h, so a
 * replay that starts after P_h meets only hand-offs that were not pending at
 * the checkpoint, and skips them.
 *
 * Exactly-once firing across crashes. Firing is in (due, offset) order per
 * partition - a task that arrives already behind the fired frontier fires at
 * once, which keeps the order - so the set of fired records is described by
 * two numbers, the frontier (due F, offset G): every record below the
 * processed position O with (due, offset) <= (F, G) is done. That goes into
 * the commit metadata, "v1 o=O f=F g=G", in the same transaction as the
 * fired records; the committed offset is held back to the lowest offset
 * whose record still matters (pending, or a floor still needed). On
 * assignment the wheel replays from there to O, re-creating pending tasks
 * and floors and skipping what is done, without firing anything until the
 * replay has reached O (a cancel later in the replay must still win). */
#include "wheel.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "kafka.h"
#include "keymap.h"
#include "timing_wheel.h"
#include "wheel_topic.h"

/* Tasks fired per punctuate call: a million due in the same millisecond go
 * out in chunks, with input polled and transactions committed in between. */
#define FIRE_BATCH 20000
/* Floors kept without a store position marker (no store running, or one
 * far behind): past this many records the oldest are forgotten. */
#define FLOOR_CAP 262144

typedef struct wheel_key {
    mc_keynode node;
    mc_timer timer;                /* scheduled while a version is pending */
    struct wheel_key *prev, *next; /* pending list, in offset order */
    int64_t floor;                 /* versions below this are void */
    int64_t version, offset, due;  /* the pending version, when pending */
    int64_t fired_due;             /* due time of the version fired last; 0: none */
    uint8_t *payload;              /* its WheelEntry bytes (what `ready` gets), or NULL */
    uint32_t payload_len;
    uint32_t queued; /* floor-FIFO and hold entries naming this key */
    char key[];
} wheel_key;

#define KEY_OFFSET (offsetof(wheel_key, key) - offsetof(wheel_key, node))

typedef struct floor_ref {
    int64_t offset;
    wheel_key *k;
} floor_ref;

/* A pending hand-off and the store's position when it wrote it. */
typedef struct hold_ref {
    int64_t pos, offset;
    wheel_key *k;
} hold_ref;

typedef struct wheel_part {
    int32_t partition;
    mc_keymap *keys;
    mc_timing_wheel *w;
    wheel_key *pend_head, *pend_tail;
    size_t n_pending;
    int64_t next;       /* next offset to process; -1 before the first record */
    int64_t replay_end; /* O of the checkpoint read on assignment */
    bool has_frontier;
    int64_t fdue, foff; /* fired frontier */
    int64_t store_pos;  /* from the store's markers */
    floor_ref *fifo;
    size_t fifo_head, fifo_len, fifo_cap;
    /* Pending hand-offs in arrival order (their positions only grow): the
     * committed offset is held back to the oldest one's position. */
    hold_ref *holds;
    size_t hold_head, hold_len, hold_cap;
    int64_t replay_from; /* the committed offset read on assignment */
} wheel_part;

typedef struct wheel {
    char topic[256];
    mc_output *ready;
    int64_t lead_ms;
    wheel_part **parts;
    size_t n_parts;
    mc_arena *arena;
    mc_gauge *pending_gauge;
    mc_counter *fired, *stale, *voided, *replayed, *floors_capped, *recalled;
    mc_histogram *lateness;
    mc_buf buf;
} wheel;

static void wheel_destroy(void *self);

static void *wheel_create(mc_ctx *ctx, char *err, size_t errlen)
{
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
    if (!w->ready) {
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
        "Versions forgotten before a store position marker allowed it (no store running?)", NULL);
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
    free(p->fifo);
    free(p->holds);
    free(p);
}

static wheel_part *find_part(wheel *w, int32_t partition)
{
    for (size_t i = 0; i < w->n_parts; i++)
        if (w->parts[i]->partition == partition)
            return w->parts[i];
    return NULL;
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

/* Forgets a key once nothing needs it: no pending version, and no record
 * since the store's last marker. */
static void maybe_forget(wheel_part *p, wheel_key *k)
{
    if (k->queued == 0 && !k->payload) {
        mc_keymap_remove(p->keys, &k->node);
        free(k);
    }
}

static void fifo_pop(wheel_part *p)
{
    floor_ref *r = &p->fifo[p->fifo_head];
    p->fifo_head = (p->fifo_head + 1) % p->fifo_cap;
    p->fifo_len--;
    r->k->queued--;
    maybe_forget(p, r->k);
}

static int fifo_push(wheel *w, wheel_part *p, wheel_key *k, int64_t offset)
{
    if (p->fifo_len == FLOOR_CAP) {
        mc_counter_add(w->floors_capped, 1);
        fifo_pop(p);
    }
    if (p->fifo_len == p->fifo_cap) {
        size_t cap = p->fifo_cap ? p->fifo_cap * 2 : 1024;
        floor_ref *f = malloc(cap * sizeof *f);
        if (!f)
            return -1;
        for (size_t i = 0; i < p->fifo_len; i++)
            f[i] = p->fifo[(p->fifo_head + i) % p->fifo_cap];
        free(p->fifo);
        p->fifo = f;
        p->fifo_cap = cap;
        p->fifo_head = 0;
    }
    p->fifo[(p->fifo_head + p->fifo_len) % p->fifo_cap] = (floor_ref){offset, k};
    p->fifo_len++;
    k->queued++;
    return 0;
}

static int hold_push(wheel_part *p, wheel_key *k, int64_t pos, int64_t offset)
{
    if (p->hold_len == p->hold_cap) {
        size_t cap = p->hold_cap ? p->hold_cap * 2 : 256;
        hold_ref *h = malloc(cap * sizeof *h);
        if (!h)
            return -1;
        for (size_t i = 0; i < p->hold_len; i++)
            h[i] = p->holds[(p->hold_head + i) % p->hold_cap];
        free(p->holds);
        p->holds = h;
        p->hold_cap = cap;
        p->hold_head = 0;
    }
    p->holds[(p->hold_head + p->hold_len) % p->hold_cap] = (hold_ref){pos, offset, k};
    p->hold_len++;
    k->queued++;
    return 0;
}

/* The position of the oldest hand-off still pending, or INT64_MAX. */
static int64_t oldest_hold(wheel_part *p)
{
    while (p->hold_len > 0) {
        hold_ref *h = &p->holds[p->hold_head];
        if (h->k->payload && h->k->offset == h->offset)
            return h->pos;
        wheel_key *k = h->k;
        p->hold_head = (p->hold_head + 1) % p->hold_cap;
        p->hold_len--;
        k->queued--;
        maybe_forget(p, k);
    }
    return INT64_MAX;
}

/* The store has applied everything below pos: floors of older records are
 * no longer needed. */
static void advance_store_pos(wheel_part *p, int64_t pos)
{
    if (pos > p->store_pos)
        p->store_pos = pos;
    while (p->fifo_len > 0 && p->fifo[p->fifo_head].offset < p->store_pos)
        fifo_pop(p);
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
    k->floor = INT64_MIN;
    memcpy(k->key, key, len);
    mc_keymap_insert(p->keys, &k->node);
    return k;
}

static void update_gauge(wheel *w)
{
    size_t n = 0;
    for (size_t i = 0; i < w->n_parts; i++)
        n += w->parts[i]->n_pending;
    mc_gauge_set(w->pending_gauge, (double)n);
}

/* ---- checkpoint ------------------------------------------------------------------ */

/* Parses "v1 o=O f=F g=G" (f and g absent when nothing has fired). */
static bool parse_checkpoint(const char *md, size_t len, int64_t *o, bool *has_f, int64_t *f,
                             int64_t *g)
{
    char buf[128];
    if (!md || len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, md, len);
    buf[len] = '\0';
    long long lo, lf, lg;
    if (sscanf(buf, "v1 o=%lld f=%lld g=%lld", &lo, &lf, &lg) == 3) {
        *o = lo, *f = lf, *g = lg, *has_f = true;
        return true;
    }
    if (sscanf(buf, "v1 o=%lld", &lo) == 1) {
        *o = lo, *has_f = false;
        return true;
    }
    return false;
}

static int wheel_prepare_commit(void *self, mc_ctx *ctx)
{
    wheel *w = self;
    for (size_t i = 0; i < w->n_parts; i++) {
        wheel_part *p = w->parts[i];
        if (p->next < 0)
            continue; /* nothing seen yet: the committed offset stands */
        int64_t o = p->next > p->replay_end ? p->next : p->replay_end;
        int64_t c = p->next;
        if (p->pend_head && p->pend_head->offset < c)
            c = p->pend_head->offset;
        if (p->fifo_len > 0 && p->fifo[p->fifo_head].offset < c)
            c = p->fifo[p->fifo_head].offset;
        int64_t hold = oldest_hold(p);
        if (hold < c)
            c = hold;
        char md[128];
        if (p->has_frontier)
            snprintf(md, sizeof md, "v1 o=%" PRId64 " f=%" PRId64 " g=%" PRId64, o, p->fdue,
                     p->foff);
        else
            snprintf(md, sizeof md, "v1 o=%" PRId64, o);
        if (mc_ctx_set_commit_offset(ctx, w->topic, p->partition, c, md) != 0)
            return -1;
    }
    update_gauge(w);
    return 0;
}

static int wheel_on_assign(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx)
{
    wheel *w = self;
    bool ready = true;
    for (int i = 0; i < parts->cnt; i++) {
        const rd_kafka_topic_partition_t *tp = &parts->elems[i];
        if (strcmp(tp->topic, w->topic) != 0 || find_part(w, tp->partition))
            continue;
        wheel_part **v = realloc(w->parts, (w->n_parts + 1) * sizeof *v);
        if (!v)
            return -1;
        w->parts = v;
        wheel_part *p = calloc(1, sizeof *p);
        if (!p)
            return -1;
        p->partition = tp->partition;
        p->keys = mc_keymap_new(KEY_OFFSET);
        p->w = mc_wheel_new(mc_ctx_now_ms(ctx));
        if (!p->keys || !p->w) {
            part_free(p);
            return -1;
        }
        w->parts[w->n_parts++] = p;
        p->next = tp->offset >= 0 ? tp->offset : -1;
        p->replay_from = p->next;
        p->replay_end = -1;
        p->store_pos = -1;
        int64_t o = -1, f = 0, g = 0;
        bool has_f = false;
        if (tp->offset >= 0 &&
            parse_checkpoint(tp->metadata, tp->metadata_size, &o, &has_f, &f, &g)) {
            p->replay_end = o;
            p->has_frontier = has_f;
            p->fdue = f;
            p->foff = g;
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
        for (size_t k = 0; k < w->n_parts; k++) {
            if (w->parts[k]->partition == parts->elems[i].partition) {
                part_free(w->parts[k]);
                w->parts[k] = w->parts[--w->n_parts];
                break;
            }
        }
    }
    update_gauge(w);
}

/* ---- firing ---------------------------------------------------------------------- */

static int fire(wheel *w, wheel_part *p, wheel_key *k, int64_t now_ms, mc_ctx *ctx)
{
    if (mc_ctx_forward(ctx, w->ready, p->partition, k->key, k->node.key_len, k->payload,
                       k->payload_len) != 0)
        return -1;
    if (!p->has_frontier || k->due > p->fdue || (k->due == p->fdue && k->offset > p->foff)) {
        p->has_frontier = true;
        p->fdue = k->due;
        p->foff = k->offset;
    }
    if (k->version + 1 > k->floor)
        k->floor = k->version + 1;
    k->fired_due = k->due;
    int64_t late = now_ms - k->due;
    mc_histogram_observe(w->lateness, late > 0 ? (double)late / 1000.0 : 0.0);
    const mc_logger *lg = mc_ctx_logger(ctx);
    if (lg->level <= MC_LOG_DEBUG) {
        char key[1024], version[24], late_ms[24];
        snprintf(key, sizeof key, "%.*s", (int)k->node.key_len, k->key);
        snprintf(version, sizeof version, "%" PRId64, k->version);
        snprintf(late_ms, sizeof late_ms, "%" PRId64, late);
        mc_log(lg, MC_LOG_DEBUG, "fired", "key", key, "version", version, "late_ms", late_ms,
               (const char *)NULL);
    }
    mc_counter_add(w->fired, 1);
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
static void raise_floor(wheel *w, wheel_part *p, wheel_key *k, int64_t v)
{
    if (k->payload && k->version < v) {
        unlink_pending(p, k);
        mc_counter_add(w->voided, 1);
    }
    if (v > k->floor)
        k->floor = v;
}

/* Sends `ready` a Cancel with e's version: the executor drops the versions
 * of k below it that it holds until their due time. */
static int recall(wheel *w, wheel_part *p, wheel_key *k, const mc_wheel_entry *e, mc_ctx *ctx)
{
    bool submit = e->command.kind == MC_CMD_SUBMIT;
    mc_wheel_entry c = {
        .version = e->version,
        .command = {
            .kind = MC_CMD_CANCEL,
            .cancel = {.app_id = submit ? e->command.submit.app_id : e->command.cancel.app_id,
                       .task_id = submit ? e->command.submit.task_id : e->command.cancel.task_id,
                       .requested_at = mc_ctx_now_ms(ctx)}}};
    mc_buf_reset(&w->buf);
    if (mc_encode_wheel_entry(&c, &w->buf) != 0 ||
        mc_ctx_forward(ctx, w->ready, p->partition, k->key, k->node.key_len, w->buf.data,
                       w->buf.len) != 0)
        return -1;
    k->fired_due = 0;
    mc_counter_add(w->recalled, 1);
    return 0;
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
    int64_t pos;
    if (mc_wheel_record_store_position(m, &pos)) {
        advance_store_pos(p, pos);
        if (replay && !replaying(p))
            mc_ctx_wakeup_at(ctx, mc_ctx_now_ms(ctx)); /* replay done (see below) */
        return 0;
    }
    int rc = 0;
    mc_wheel_entry e;
    char detail[200] = "";
    mc_arena_reset(w->arena);
    mc_codec_err err =
        m->key ? mc_decode_wheel_entry(m->value, m->value_len, w->arena, &e, detail, sizeof detail)
               : MC_CODEC_EMPTY;
    if (err != MC_CODEC_OK) {
        if (replay)
            return 0; /* dead-lettered when it was first processed */
        char why[300];
        snprintf(why, sizeof why, "wheel: unreadable entry: %s%s%s",
                 m->key ? mc_codec_strerror(err) : "no key", detail[0] ? ": " : "", detail);
        return mc_ctx_dead_letter(ctx, m, why, NULL);
    }
    wheel_key *k = key_get(p, m->key, m->key_len);
    if (!k || fifo_push(w, p, k, m->offset) != 0)
        return -1;
    int64_t handoff_pos = 0;
    bool handoff = mc_wheel_record_handoff_position(m, &handoff_pos);
    if (!replay && k->fired_due > mc_ctx_now_ms(ctx) && e.version >= k->floor) {
        /* Fired early by the lead and not due yet: a newer version or a
         * cancel must still win, so tell the executor, which holds it. */
        if (recall(w, p, k, &e, ctx) != 0)
            return -1;
    }
    if (e.command.kind == MC_CMD_CANCEL || mc_wheel_record_is_far(m)) {
        raise_floor(w, p, k, e.version);
    } else if (e.version < k->floor || (k->payload && e.version <= k->version)) {
        mc_counter_add(w->stale, 1);
    } else if (is_done(p, e.command.submit.due_at, m->offset)) {
        raise_floor(w, p, k, e.version + 1); /* fired before the restart */
    } else if (replay && handoff && handoff_pos < p->replay_from) {
        /* A hand-off the store wrote before it had applied records this
         * replay does not see (a newer version, a cancel): judged when it
         * was first processed, and not pending at the checkpoint, since a
         * pending hand-off holds the committed offset back to its
         * position. So it was stale (or superseded): not again. */
        raise_floor(w, p, k, e.version + 1);
        mc_counter_add(w->stale, 1);
    } else {
        if (k->payload)
            unlink_pending(p, k); /* rescheduled */
        k->payload = malloc(m->value_len);
        if (!k->payload)
            return -1;
        memcpy(k->payload, m->value, m->value_len);
        k->payload_len = (uint32_t)m->value_len;
        k->version = e.version;
        k->offset = m->offset;
        k->due = e.command.submit.due_at;
        if (handoff && hold_push(p, k, handoff_pos, m->offset) != 0)
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
            /* Behind what has fired already: fire now, which keeps
             * "everything up to the frontier is done" true. */
            rc = fire(w, p, k, mc_ctx_now_ms(ctx), ctx);
            mc_ctx_request_commit(ctx);
        } else {
            mc_wheel_add(p->w, &k->timer, k->due);
            mc_ctx_wakeup_at(ctx, replay ? mc_ctx_now_ms(ctx) : k->due - w->lead_ms);
        }
    }
    maybe_forget(p, k);
    if (replay && !replaying(p))
        mc_ctx_wakeup_at(ctx, mc_ctx_now_ms(ctx)); /* replay done: fire what is due */
    return rc;
}

static int wheel_punctuate(void *self, int64_t now_ms, mc_ctx *ctx)
{
    wheel *w = self;
    mc_timer *due[512];
    size_t budget = FIRE_BATCH, fired = 0;
    int64_t next = INT64_MAX;
    bool ready = true;
    for (size_t i = 0; i < w->n_parts; i++) {
        wheel_part *p = w->parts[i];
        if (replaying(p)) {
            ready = false;
            continue;
        }
        while (budget > 0) {
            size_t want = budget < 512 ? budget : 512;
            size_t got = mc_wheel_advance(p->w, now_ms + w->lead_ms, due, want);
            for (size_t k = 0; k < got; k++)
                if (fire(w, p, MC_TIMER_OWNER(due[k], wheel_key, timer), now_ms, ctx) != 0)
                    return -1;
            budget -= got;
            fired += got;
            if (got < want)
                break;
        }
        int64_t d = mc_wheel_next_deadline(p->w);
        if (d != INT64_MAX && d - w->lead_ms < next)
            next = d - w->lead_ms;
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
    for (size_t i = 0; i < w->n_parts; i++)
        part_free(w->parts[i]);
    free(w->parts);
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
    .punctuate = wheel_punctuate,
    .on_assign = wheel_on_assign,
    .on_revoke = wheel_on_revoke,
    .prepare_commit = wheel_prepare_commit,
    .destroy = wheel_destroy,
};
