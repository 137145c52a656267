/* The route strategies (executor_route.h). Each member's state - calls open, calls
 * made, last call, unhealthy until - sits in a map keyed by app, group, URL and address;
 * each group's round-robin position is the key of the member it picked last, so a member
 * joining or leaving moves the round on from where it was instead of restarting it.
 * CONSISTENT_HASH is rendezvous hashing: each member scores hash(member, task key) and
 * the highest eligible score wins, so a key stays on its member while the membership is
 * stable and only the keys of a member that leaves move. */
#include "executor_route.h"

#include <stdlib.h>
#include <string.h>

#include "keymap.h"

/* A member's or a group's state; its key bytes follow the struct. */
typedef struct route_node {
    mc_keynode node;
    int32_t open;
    uint64_t calls;
    uint64_t last_call;      /* the table's call count at its last call; 0: never */
    int64_t unhealthy_until; /* now_ms before this: skipped */
    char *last_pick;         /* a group's: the member key it picked last, malloc'd */
    size_t key_len;
    char key[];
} route_node;

struct mc_route_table {
    mc_keymap *map;
    uint64_t rng;
    uint64_t calls; /* started, every member: orders calls for LRU, clock ticks or not */
};

#define KEY_MAX 4096
#define SEP '\x1f'

mc_route_table *mc_route_table_new(uint64_t seed)
{
    mc_route_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->map = mc_keymap_new(offsetof(route_node, key) - offsetof(route_node, node));
    t->rng = seed ? seed : 0x9e3779b97f4a7c15u;
    if (!t->map) {
        free(t);
        return NULL;
    }
    return t;
}

static void free_node(mc_keynode *n, void *arg)
{
    (void)arg;
    route_node *r = (route_node *)n;
    free(r->last_pick);
    free(r);
}

void mc_route_table_free(mc_route_table *t)
{
    if (!t)
        return;
    mc_keymap_drain(t->map, free_node, NULL);
    mc_keymap_free(t->map);
    free(t);
}

/* app SEP group [SEP url SEP address] into buf; its length, or 0 if it does not fit. */
static size_t make_key(char *buf, const char *app, const char *group, const mc_group_member *m)
{
    size_t n = 0;
    const char *parts[4] = {app, group, m ? m->url : NULL, m && m->address ? m->address : ""};
    for (int i = 0; i < 4 && parts[i]; i++) {
        size_t len = strlen(parts[i]);
        if (n + len + 1 >= KEY_MAX)
            return 0;
        if (i)
            buf[n++] = SEP;
        memcpy(buf + n, parts[i], len);
        n += len;
    }
    return n;
}

static route_node *find(mc_route_table *t, const char *key, size_t len)
{
    return (route_node *)mc_keymap_find(t->map, key, len, mc_keymap_hash(key, len));
}

static route_node *find_or_add(mc_route_table *t, const char *key, size_t len)
{
    route_node *r = find(t, key, len);
    if (r)
        return r;
    r = calloc(1, sizeof *r + len + 1);
    if (!r)
        return NULL;
    memcpy(r->key, key, len);
    r->key_len = len;
    r->node.hash = mc_keymap_hash(key, len);
    r->node.key_len = (uint32_t)len;
    mc_keymap_insert(t->map, &r->node);
    return r;
}

static route_node *member_state(mc_route_table *t, const mc_group *g, size_t i)
{
    char key[KEY_MAX];
    size_t n = make_key(key, g->app_id, g->name, &g->members[i]);
    return n ? find(t, key, n) : NULL;
}

bool mc_route_unhealthy(mc_route_table *t, const mc_group *g, size_t index, int64_t now_ms)
{
    const route_node *r = member_state(t, g, index);
    return r && now_ms < r->unhealthy_until;
}

int32_t mc_route_open(mc_route_table *t, const mc_group *g, size_t index)
{
    const route_node *r = member_state(t, g, index);
    return r ? r->open : 0;
}

static uint64_t next_random(mc_route_table *t)
{
    /* xorshift64*: enough to spread calls; nothing depends on it being unguessable. */
    uint64_t x = t->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    t->rng = x;
    return x * 0x2545f4914f6cdd1du;
}

/* FNV-1a over the member's URL and address, then the task key, finished with a mixer:
 * the rendezvous score of (member, key). */
static uint64_t rendezvous_score(const mc_group_member *m, const char *task_key)
{
    uint64_t h = 0xcbf29ce484222325u;
    const char *parts[3] = {m->url, m->address ? m->address : "", task_key};
    for (int i = 0; i < 3; i++) {
        for (const unsigned char *p = (const unsigned char *)parts[i]; *p; p++)
            h = (h ^ *p) * 0x100000001b3u;
        h = (h ^ 0xff) * 0x100000001b3u;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdu;
    h ^= h >> 33;
    return h;
}

/* Marks in *eligible the members a pick may choose: not tried, healthy while any
 * untried member is (when all are unhealthy, all are tried anyway: a group whose every
 * member failed lately is still called rather than not at all), and for BUSYOVER below
 * member_limit. Returns how many there are; *busy says BUSYOVER found only busy ones. */
static size_t eligible_members(mc_route_table *t, const mc_group *g, mc_route_strategy s,
                               const mc_route_tried *tried, int32_t member_limit, int64_t now_ms,
                               uint64_t *eligible, bool *busy)
{
    uint64_t untried = 0, healthy = 0;
    for (size_t i = 0; i < g->n_members; i++) {
        if (tried && (tried->bits >> i & 1))
            continue;
        untried |= UINT64_C(1) << i;
        if (!mc_route_unhealthy(t, g, i, now_ms))
            healthy |= UINT64_C(1) << i;
    }
    uint64_t set = healthy ? healthy : untried;
    *busy = false;
    if (s == MC_ROUTE_BUSYOVER && member_limit > 0) {
        uint64_t idle = 0;
        for (size_t i = 0; i < g->n_members; i++)
            if ((set >> i & 1) && mc_route_open(t, g, i) < member_limit)
                idle |= UINT64_C(1) << i;
        *busy = set && !idle;
        set = idle;
    }
    *eligible = set;
    return (size_t)__builtin_popcountll(set);
}

/* ROUND_ROBIN: the first eligible member whose key sorts after the last one picked
 * (members are sorted), wrapping round. */
static size_t round_robin(mc_route_table *t, const mc_group *g, uint64_t eligible)
{
    char key[KEY_MAX];
    size_t n = make_key(key, g->app_id, g->name, NULL);
    const route_node *gs = n ? find(t, key, n) : NULL;
    size_t first = SIZE_MAX;
    for (size_t i = 0; i < g->n_members; i++) {
        if (!(eligible >> i & 1))
            continue;
        if (first == SIZE_MAX)
            first = i;
        if (!gs || !gs->last_pick)
            return i;
        char mk[KEY_MAX];
        size_t ml = make_key(mk, g->app_id, g->name, &g->members[i]);
        mk[ml] = '\0';
        if (strcmp(mk, gs->last_pick) > 0)
            return i;
    }
    return first;
}

mc_pick_result mc_route_pick(mc_route_table *t, const mc_group *g, mc_route_strategy s,
                             const char *task_key, const mc_route_tried *tried,
                             int32_t member_limit, int64_t now_ms, size_t *index)
{
    uint64_t eligible;
    bool busy;
    size_t count = eligible_members(t, g, s, tried, member_limit, now_ms, &eligible, &busy);
    if (!count)
        return busy ? MC_PICK_BUSY : MC_PICK_EMPTY;
    size_t lo = (size_t)__builtin_ctzll(eligible), hi = 63 - (size_t)__builtin_clzll(eligible);
    switch (s) {
    case MC_ROUTE_LAST:
        *index = hi;
        return MC_PICK_OK;
    case MC_ROUTE_ROUND_ROBIN:
        *index = round_robin(t, g, eligible);
        return MC_PICK_OK;
    case MC_ROUTE_RANDOM: {
        size_t k = (size_t)(next_random(t) % count);
        for (size_t i = lo; i <= hi; i++)
            if ((eligible >> i & 1) && k-- == 0) {
                *index = i;
                break;
            }
        return MC_PICK_OK;
    }
    case MC_ROUTE_CONSISTENT_HASH: {
        uint64_t best = 0;
        *index = lo;
        for (size_t i = lo; i <= hi; i++) {
            uint64_t score = (eligible >> i & 1) ? rendezvous_score(&g->members[i], task_key) : 0;
            if (score > best) {
                best = score;
                *index = i;
            }
        }
        return MC_PICK_OK;
    }
    case MC_ROUTE_LEAST_FREQUENTLY_USED:
    case MC_ROUTE_LEAST_RECENTLY_USED: {
        bool lfu = s == MC_ROUTE_LEAST_FREQUENTLY_USED;
        uint64_t best = UINT64_MAX;
        *index = lo;
        for (size_t i = lo; i <= hi; i++) {
            if (!(eligible >> i & 1))
                continue;
            const route_node *r = member_state(t, g, i);
            uint64_t v = !r ? 0 : lfu ? r->calls : r->last_call;
            if (v < best) { /* ties: the first in order */
                best = v;
                *index = i;
            }
        }
        return MC_PICK_OK;
    }
    case MC_ROUTE_FIRST:
    case MC_ROUTE_FAILOVER:
    case MC_ROUTE_BUSYOVER:
    default:
        *index = lo;
        return MC_PICK_OK;
    }
}

int mc_route_started(mc_route_table *t, const mc_group *g, size_t index)
{
    char key[KEY_MAX];
    size_t n = make_key(key, g->app_id, g->name, &g->members[index]);
    route_node *r = n ? find_or_add(t, key, n) : NULL;
    if (!r)
        return -1;
    r->open++;
    r->calls++;
    r->last_call = ++t->calls; /* two calls in one millisecond still order */
    size_t gn = make_key(key, g->app_id, g->name, NULL);
    route_node *gs = gn ? find_or_add(t, key, gn) : NULL;
    char *pick = gs ? malloc(n + 1) : NULL;
    if (!pick)
        return -1;
    make_key(pick, g->app_id, g->name, &g->members[index]);
    pick[n] = '\0';
    free(gs->last_pick);
    gs->last_pick = pick;
    return 0;
}

void mc_route_ended(mc_route_table *t, const char *app_id, const char *group,
                    const mc_group_member *m, bool failed, int64_t unhealthy_ms, int64_t now_ms)
{
    char key[KEY_MAX];
    size_t n = make_key(key, app_id, group, m);
    route_node *r = n ? find(t, key, n) : NULL;
    if (!r)
        return;
    if (r->open > 0)
        r->open--;
    if (failed) /* a day at most: a record's value cannot overflow the clock */
        r->unhealthy_until = now_ms + (unhealthy_ms < 86400000 ? unhealthy_ms : 86400000);
}
