/* The router's memory of recent Submits (see router_recent.h): a keymap of
 * the keys, each with a timer in a timing wheel at its due time plus the
 * grace, so a key leaves once it can no longer matter, whatever order the
 * due times came in (a FIFO would keep a short-lived key behind a long one).
 * The clock is the router's: every call first lets go of what expired by
 * now_ms; a clock stepped back keeps keys longer, never forgets them early. */
#include "router_recent.h"

#include <stdlib.h>
#include <string.h>

#include "keymap.h"
#include "timing_wheel.h"

typedef struct recent_key {
    mc_timer expiry;
    int64_t due;
    mc_keynode node;
    char key[];
} recent_key;

struct mc_router_recent {
    mc_keymap *keys;
    mc_timing_wheel *expiry;
    size_t max_keys;
};

/* How many expired keys one pass of forget_expired pops at a time. */
#define EXPIRE_BATCH 64

mc_router_recent *mc_router_recent_new(int64_t now_ms, size_t max_keys)
{
    mc_router_recent *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->max_keys = max_keys;
    m->keys = mc_keymap_new(offsetof(recent_key, key) - offsetof(recent_key, node));
    m->expiry = mc_wheel_new(now_ms);
    if (!m->keys || !m->expiry) {
        mc_router_recent_free(m);
        return NULL;
    }
    return m;
}

static void free_key(mc_keynode *n, void *arg)
{
    (void)arg;
    free((char *)n - offsetof(recent_key, node));
}

void mc_router_recent_free(mc_router_recent *m)
{
    if (!m)
        return;
    if (m->keys) {
        mc_keymap_drain(m->keys, free_key, NULL);
        mc_keymap_free(m->keys);
    }
    if (m->expiry)
        mc_wheel_free(m->expiry);
    free(m);
}

static void forget(mc_router_recent *m, recent_key *e)
{
    mc_wheel_cancel(m->expiry, &e->expiry);
    mc_keymap_remove(m->keys, &e->node);
    free(e);
}

/* Lets go of every key whose due time and grace have passed by now_ms. */
static void forget_expired(mc_router_recent *m, int64_t now_ms)
{
    mc_timer *out[EXPIRE_BATCH];
    size_t n;
    do {
        n = mc_wheel_advance(m->expiry, now_ms, out, EXPIRE_BATCH);
        for (size_t i = 0; i < n; i++) {
            recent_key *e = MC_TIMER_OWNER(out[i], recent_key, expiry);
            mc_keymap_remove(m->keys, &e->node);
            free(e);
        }
    } while (n == EXPIRE_BATCH);
}

static recent_key *find(const mc_router_recent *m, const char *key, size_t len, uint32_t hash)
{
    mc_keynode *n = mc_keymap_find(m->keys, key, len, hash);
    return n ? (recent_key *)(void *)((char *)n - offsetof(recent_key, node)) : NULL;
}

/* Whether e (or NULL) is due within ahead_ms of now_ms: the one test of nearness. */
static bool due_within(const recent_key *e, int64_t now_ms, int64_t ahead_ms)
{
    return e && e->due <= now_ms + ahead_ms;
}

bool mc_router_recent_near(mc_router_recent *m, const char *key, size_t len, int64_t now_ms,
                           int64_t ahead_ms)
{
    forget_expired(m, now_ms);
    return due_within(find(m, key, len, mc_keymap_hash(key, len)), now_ms, ahead_ms);
}

bool mc_router_recent_note(mc_router_recent *m, const char *key, size_t len, int64_t due_ms,
                           int64_t now_ms, int64_t ahead_ms)
{
    /* One expiry pass and one hash for the question and the note: this runs
     * for every Submit the router routes. */
    forget_expired(m, now_ms);
    uint32_t hash = mc_keymap_hash(key, len);
    recent_key *e = find(m, key, len, hash);
    bool near = due_within(e, now_ms, ahead_ms);
    if (due_ms > now_ms + MC_ROUTER_RECENT_MS) {
        if (e)
            forget(m, e);
        return near;
    }
    if (!e) {
        /* Not remembered: the wheel's recall still comes. */
        if (mc_keymap_count(m->keys) >= m->max_keys || len > UINT32_MAX ||
            !(e = calloc(1, sizeof *e + len)))
            return near;
        memcpy(e->key, key, len);
        e->node.hash = hash;
        e->node.key_len = (uint32_t)len;
        mc_keymap_insert(m->keys, &e->node);
    }
    e->due = due_ms;
    /* Popped once the clock is past due + grace (the wheel pops at its time). */
    int64_t until = (due_ms > now_ms ? due_ms : now_ms) + MC_ROUTER_RECENT_GRACE_MS;
    if (mc_wheel_add(m->expiry, &e->expiry, until + 1) != 0)
        forget(m, e); /* never left without a timer: it would stay for good */
    return near;
}

size_t mc_router_recent_count(const mc_router_recent *m)
{
    return mc_keymap_count(m->keys);
}
