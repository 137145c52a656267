/* Which member of an endpoint group a call goes to: the route strategies (endpoints.h)
 * over what this executor has seen of each member - its calls open, how often and how
 * recently it was called, and whether it failed lately (passive health). The state
 * outlives snapshots: a member is known by its group, URL and address, so a new snapshot
 * with the same member keeps its counts. The HTTP thread's only; no locks. */
#ifndef MOONCAKE_EXECUTOR_ROUTE_H
#define MOONCAKE_EXECUTOR_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "endpoints.h"

typedef struct mc_route_table mc_route_table;

/* A member is healthy again this long after its last failure unless the group says. */
#define MC_ROUTE_UNHEALTHY_MS_DEFAULT 10000

typedef enum mc_pick_result {
    MC_PICK_OK,
    MC_PICK_EMPTY, /* the group has no member (left to try) */
    MC_PICK_BUSY,  /* BUSYOVER: every member is at its concurrency limit */
} mc_pick_result;

/* The members a call tried in its attempt (FAILOVER moves on from them). */
typedef struct mc_route_tried {
    uint64_t bits; /* by the member's index in the group (MC_GROUP_MEMBERS_MAX <= 64) */
} mc_route_tried;

/* An empty table whose RANDOM picks start from seed. Caller owns it; NULL on ENOMEM. */
mc_route_table *mc_route_table_new(uint64_t seed);
void mc_route_table_free(mc_route_table *t);

/* Picks g's member for a call of the task key with strategy s, skipping the members in
 * tried and, while any is healthy, the unhealthy ones; member_limit is this executor's
 * share of g's member_concurrency (BUSYOVER; 0: none). Changes nothing: the pick counts
 * once mc_route_started says the call started. *index is the member's index in g. */
mc_pick_result mc_route_pick(mc_route_table *t, const mc_group *g, mc_route_strategy s,
                             const char *task_key, const mc_route_tried *tried,
                             int32_t member_limit, int64_t now_ms, size_t *index);
/* A call to g's member at index started. 0, or -1 on ENOMEM (the pick is then not counted;
 * the call goes on). */
int mc_route_started(mc_route_table *t, const mc_group *g, size_t index);
/* A call to this member (of the app's group) ended; failed says it did not connect,
 * timed out or answered 5xx, and makes it unhealthy for unhealthy_ms. */
void mc_route_ended(mc_route_table *t, const char *app_id, const char *group,
                    const mc_group_member *m, bool failed, int64_t unhealthy_ms, int64_t now_ms);
/* Whether the member is skipped for a failure at now_ms. */
bool mc_route_unhealthy(mc_route_table *t, const mc_group *g, size_t index, int64_t now_ms);
/* Calls open to the member. */
int32_t mc_route_open(mc_route_table *t, const mc_group *g, size_t index);

#endif
