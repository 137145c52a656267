/* The wheel's per-partition state of keys (wheel.c has the role): each key's pending task and its
 * floors, the holds and recalls that keep the checkpoint back, and, after a growth of the partition
 * count, moving the keys whose home changed to their new partition. */
#include "wheel_impl.h"

/* ---- per-partition state ---------------------------------------------------------- */

static void free_key(mc_keynode *n, void *arg)
{
    (void)arg;
    wheel_key *k = (wheel_key *)n;
    free(k->payload);
    free(k);
}

void wheel_part_free(wheel_part *p)
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

wheel_part *wheel_find_part(wheel *w, int32_t partition)
{
    return mc_part_table_get(&w->parts, partition);
}

bool wheel_replaying(const wheel_part *p)
{
    return p->next < p->replay_end;
}

void wheel_unlink_pending(wheel_part *p, wheel_key *k)
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
void wheel_maybe_forget(wheel_part *p, wheel_key *k)
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
    wheel_maybe_forget(p, k);
}

int wheel_floor_push(wheel *w, wheel_part *p, wheel_key *k, int64_t offset)
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
void wheel_release_floors(wheel_part *p)
{
    int64_t upto = p->store_pos < p->resolved_pos ? p->store_pos : p->resolved_pos;
    while (mc_ring_len(&p->floors) > 0) {
        floor_ref *f = mc_ring_at(&p->floors, 0);
        if (f->offset >= upto)
            break;
        unqueue_front(p, &p->floors, f->k);
    }
}

bool wheel_hold_less(const void *a, const void *b)
{
    const hold_ref *x = a, *y = b;
    return x->pos < y->pos || (x->pos == y->pos && x->offset < y->offset);
}

int wheel_hold_push(wheel_part *p, wheel_key *k, int64_t pos, int64_t offset)
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
int64_t wheel_oldest_hold(wheel_part *p)
{
    hold_ref *h;
    while ((h = mc_heap_top(&p->holds)) != NULL) {
        if (h->k->payload && h->k->offset == h->offset)
            return h->pos;
        wheel_key *k = h->k;
        mc_heap_pop(&p->holds);
        k->queued--;
        wheel_maybe_forget(p, k);
    }
    return INT64_MAX;
}

static bool recall_current(const recall_ref *r)
{
    return r->k->fired_due == r->due && r->k->fired_offset == r->offset;
}

int wheel_recall_push(wheel_part *p, wheel_key *k, int64_t due, int64_t offset)
{
    if (mc_ring_push(&p->recalls, &(recall_ref){due, offset, k}) != 0)
        return -1;
    k->queued++;
    k->fired_due = due;
    k->fired_offset = offset;
    return 0;
}

/* Tasks fired early whose due time has come: nothing can recall them now. */
void wheel_expire_recalls(wheel_part *p, int64_t now)
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
int64_t wheel_oldest_recall(const wheel_part *p)
{
    int64_t lo = INT64_MAX;
    for (size_t i = 0; i < mc_ring_len(&p->recalls); i++) {
        const recall_ref *r = mc_ring_at(&p->recalls, i);
        if (recall_current(r) && r->offset < lo)
            lo = r->offset;
    }
    return lo;
}

wheel_key *wheel_key_get(wheel_part *p, const void *key, size_t len)
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

void wheel_update_gauge(wheel *w)
{
    size_t n = 0;
    wheel_part *p;
    for (int32_t i = 0; (p = mc_part_table_next(&w->parts, &i)); i++)
        n += p->n_pending;
    mc_gauge_set(w->pending_gauge, (double)n);
}

/* ---- growing the partition count ------------------------------------------------ */

/* Whether key's home is elsewhere since the growth at the partition's marker. */
bool wheel_moved(const wheel_part *p, const void *key, size_t len)
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
    if (!k->payload || !wheel_moved(mv->p, k->key, k->node.key_len))
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
int wheel_forward_moved(wheel *w, wheel_part *p, const mc_record *m, const mc_wheel_class *c,
                        mc_wheel_entry *e, bool replay, mc_ctx *ctx)
{
    wheel_key *k = wheel_key_get(p, m->key, m->key_len);
    if (!k || wheel_floor_push(w, p, k, m->offset) != 0)
        return -1;
    mc_version v = wheel_record_version(c, e);
    int rc = 0;
    if (e->command.kind == MC_CMD_SUBMIT && mc_version_cmp(v, k->floor) < 0) {
        mc_counter_add(w->stale, 1);
    } else if (e->command.kind == MC_CMD_SUBMIT && c->fired_by_router) {
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
        if (!replay) /* refused: the runner hands it back through wheel_refused */
            rc = send_home(w, p, m->key, m->key_len, e, c->far, c->attempt, false, NULL, ctx);
    }
    wheel_maybe_forget(p, k);
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
    mc_record rec = wheel_pending_record(w, p, k);
    return mc_ctx_dead_letter(ctx, &rec, "wheel: Kafka refused the task's record for its new home",
                              NULL);
}

/* The layout marker: the pending version of every key whose home moves goes
 * there (in a replay it went when the marker was first processed). */
int wheel_take_layout(wheel *w, wheel_part *p, int32_t to, int64_t offset, bool replay, mc_ctx *ctx)
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
        if (wheel_floor_push(w, p, k, offset) != 0)
            mv.rc = -1;
        wheel_unlink_pending(p, k);
        wheel_maybe_forget(p, k);
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
