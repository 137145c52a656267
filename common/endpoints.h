/* Endpoint groups and admission limits as the executor sees them: an immutable,
 * reference-counted snapshot of every app's groups (with their members, the static
 * ones and those resolved from DNS) and of the limits per endpoint host and per app.
 * The endpoint table (endpoint_table.h) builds a new snapshot whenever the compacted
 * `endpoints` topic or a DNS answer changes and swaps it in; readers on any thread take
 * a reference and read it without locks. Tests build snapshots by hand. */
#ifndef MOONCAKE_ENDPOINTS_H
#define MOONCAKE_ENDPOINTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How a call to a group picks its member (XXL-JOB's route strategies). */
typedef enum mc_route_strategy {
    MC_ROUTE_FIRST,                 /* the first healthy member */
    MC_ROUTE_LAST,                  /* the last healthy member */
    MC_ROUTE_ROUND_ROBIN,           /* the next healthy member after the previous pick */
    MC_ROUTE_RANDOM,                /* a healthy member at random */
    MC_ROUTE_CONSISTENT_HASH,       /* the task key's member on a hash ring */
    MC_ROUTE_LEAST_FREQUENTLY_USED, /* the healthy member called the fewest times */
    MC_ROUTE_LEAST_RECENTLY_USED,   /* the healthy member called longest ago */
    MC_ROUTE_FAILOVER,   /* the first healthy member; the next one in the same attempt on failure */
    MC_ROUTE_BUSYOVER,   /* the first member below its concurrency limit */
    MC_ROUTE_BROADCAST,  /* every member, each a shard of the task */
    MC_ROUTE_STRATEGIES, /* how many there are */
} mc_route_strategy;

/* The strategy's name as the API spells it ("ROUND_ROBIN"); a static string. */
const char *mc_route_strategy_name(mc_route_strategy s);
/* Parses a strategy's name (exact, upper case); false if it names none. */
bool mc_route_strategy_parse(const char *name, mc_route_strategy *out);

#define MC_GROUP_NAME_MAX 128   /* bytes of a group's name */
#define MC_GROUP_MEMBERS_MAX 64 /* members of one group, static and resolved together */

/* One member: calls go to url followed by the task's path. */
typedef struct mc_group_member {
    char *url;     /* scheme://host[:port][/prefix], no trailing slash */
    char *address; /* NULL; or for a member resolved from DNS, the IP address to connect to
                    * in place of resolving url's host (TLS still checks url's host) */
} mc_group_member;

typedef struct mc_group {
    char *app_id, *name;
    mc_route_strategy strategy; /* used unless the task names its own */
    int32_t member_concurrency; /* BUSYOVER: a member with this many calls open is busy */
    int64_t unhealthy_ms;       /* a member that failed is skipped this long */
    mc_group_member *members;   /* sorted by url, then address: FIRST, LAST, ring order */
    size_t n_members;
} mc_group;

/* At most this many calls open and this many started per second; 0: no bound. */
typedef struct mc_admission_limit {
    int32_t max_concurrent;
    double max_per_second;
} mc_admission_limit;

typedef enum mc_limit_scope { MC_LIMIT_HOST, MC_LIMIT_APP } mc_limit_scope;

typedef struct mc_endpoints mc_endpoints;

/* An empty snapshot with one reference, the caller's; NULL on ENOMEM. Any thread. */
mc_endpoints *mc_endpoints_new(void);
/* Adds a copy of g (replacing the app's group of that name); its members are copied and
 * sorted. Only while the snapshot is being built, before it is shared. 0, or -1 on ENOMEM
 * or more than MC_GROUP_MEMBERS_MAX members. */
int mc_endpoints_put_group(mc_endpoints *e, const mc_group *g);
/* Sets the limit of a host (lower case, no port) or an app; only while building. 0, or -1
 * on ENOMEM. */
int mc_endpoints_put_limit(mc_endpoints *e, mc_limit_scope scope, const char *name,
                           mc_admission_limit limit);
/* Takes one more reference / drops one (freeing the snapshot with the last). Any thread. */
mc_endpoints *mc_endpoints_ref(mc_endpoints *e);
void mc_endpoints_unref(mc_endpoints *e);

/* The app's group of this name, or NULL; valid while the caller holds its reference. */
const mc_group *mc_endpoints_group(const mc_endpoints *e, const char *app_id, const char *name);
/* The limit set for this host or app; false if none is. */
bool mc_endpoints_limit(const mc_endpoints *e, mc_limit_scope scope, const char *name,
                        mc_admission_limit *out);
/* How many groups and limits it holds. */
size_t mc_endpoints_group_count(const mc_endpoints *e);
size_t mc_endpoints_limit_count(const mc_endpoints *e);

/* A task's callback URL that names a group: group://NAME/PATH?QUERY. Sets name (copied,
 * NUL-terminated into name_buf) and points path at the rest (from its '/', or "" when
 * none). False if url is not a group URL or the name is empty, too long or not
 * [A-Za-z0-9._-]. */
bool mc_group_url_parse(const char *url, char *name_buf, size_t name_len, const char **path);

/* Whether name is a host as a limit must spell it to match the URLs called: lower case,
 * no port (an IPv6 address in brackets, as in a URL). */
bool mc_limit_host_ok(const char *name);

/* Whether a limit's bounds can be kept: none negative, a rate of 0 (none) or at least one
 * call a second (rates are shared out in whole calls a second). */
bool mc_limit_bounds_ok(int32_t max_concurrent, double max_per_second);

/* The metadata key in which a task names a strategy for its group call, overriding the
 * group's. */
#define MC_ROUTE_METADATA "mooncake.route"

#endif
