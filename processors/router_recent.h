/* What a router remembers of the Submits it routed lately: for each key
 * whose newest Submit here fell due within MC_ROUTER_RECENT_MS of being
 * routed, that due time, until it has passed. A re-submit of such a key
 * near its due time may meet an older version the wheel has fired early
 * already (the executor holds it until it is due): the router then writes
 * the recall itself, in the transaction that routes the re-submit, one hop
 * before the wheel's. Forgetting is always safe - a key not remembered (due
 * later, routed by an instance before a restart or a rebalance, or memory
 * short) is recalled by the wheel alone, a hop later - so nothing here is
 * restored after a restart. A key leaves a second after its due time, by a
 * timing wheel, so the memory holds at most the Submits of the last 61
 * seconds, and never more keys than its cap (then new keys are not
 * remembered until some leave).
 * Not thread-safe: the runner's thread. */
#ifndef MOONCAKE_ROUTER_RECENT_H
#define MOONCAKE_ROUTER_RECENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Submits due further ahead than this when routed are not remembered. */
#define MC_ROUTER_RECENT_MS 60000
/* How long after its due time a key is still remembered: an executor
 * behind its partition starts a task that late. */
#define MC_ROUTER_RECENT_GRACE_MS 1000
/* The router's cap on keys remembered: about 30 MB with keys of 40 bytes,
 * and a minute of Submits at 4,000/s. */
#define MC_ROUTER_RECENT_MAX_KEYS 262144

typedef struct mc_router_recent mc_router_recent;

/* An empty memory of at most max_keys keys whose clock starts at now_ms.
 * Caller owns it (mc_router_recent_free). NULL on ENOMEM. */
mc_router_recent *mc_router_recent_new(int64_t now_ms, size_t max_keys);
void mc_router_recent_free(mc_router_recent *m);
/* Whether the key (len bytes) is remembered with a due time at most
 * ahead_ms after now_ms: an older version the executor may hold or get
 * before the wheel reads a newer one. */
bool mc_router_recent_near(mc_router_recent *m, const char *key, size_t len, int64_t now_ms,
                           int64_t ahead_ms);
/* Notes a Submit of key due at due_ms, routed at now_ms, in place of what
 * was noted of the key: remembered when due within MC_ROUTER_RECENT_MS,
 * forgotten otherwise (and not remembered when full or memory is short).
 * Returns what mc_router_recent_near would have said just before. */
bool mc_router_recent_note(mc_router_recent *m, const char *key, size_t len, int64_t due_ms,
                           int64_t now_ms, int64_t ahead_ms);
/* How many keys it remembers now. */
size_t mc_router_recent_count(const mc_router_recent *m);

#endif
