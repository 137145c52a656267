/* The snapshot of endpoint groups and admission limits (endpoints.h): plain arrays,
 * searched linearly. A cluster holds tens of groups, and a caller looks one up once per
 * call; a hash map would cost more than it saves. */
#include "endpoints.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct limit_entry {
    mc_limit_scope scope;
    char *name;
    mc_admission_limit limit;
} limit_entry;

struct mc_endpoints {
    atomic_int refs;
    mc_group *groups;
    size_t n_groups, cap_groups;
    limit_entry *limits;
    size_t n_limits, cap_limits;
};

static const char *const strategy_names[MC_ROUTE_STRATEGIES] = {
    [MC_ROUTE_FIRST] = "FIRST",
    [MC_ROUTE_LAST] = "LAST",
    [MC_ROUTE_ROUND_ROBIN] = "ROUND_ROBIN",
    [MC_ROUTE_RANDOM] = "RANDOM",
    [MC_ROUTE_CONSISTENT_HASH] = "CONSISTENT_HASH",
    [MC_ROUTE_LEAST_FREQUENTLY_USED] = "LEAST_FREQUENTLY_USED",
    [MC_ROUTE_LEAST_RECENTLY_USED] = "LEAST_RECENTLY_USED",
    [MC_ROUTE_FAILOVER] = "FAILOVER",
    [MC_ROUTE_BUSYOVER] = "BUSYOVER",
    [MC_ROUTE_BROADCAST] = "SHARDING_BROADCAST",
};

const char *mc_route_strategy_name(mc_route_strategy s)
{
    return s >= 0 && s < MC_ROUTE_STRATEGIES ? strategy_names[s] : "?";
}

bool mc_route_strategy_parse(const char *name, mc_route_strategy *out)
{
    for (int s = 0; s < MC_ROUTE_STRATEGIES; s++) {
        if (strcmp(name, strategy_names[s]) == 0) {
            *out = (mc_route_strategy)s;
            return true;
        }
    }
    return false;
}

mc_endpoints *mc_endpoints_new(void)
{
    mc_endpoints *e = calloc(1, sizeof *e);
    if (e)
        atomic_init(&e->refs, 1);
    return e;
}

static void free_group(mc_group *g)
{
    for (size_t i = 0; i < g->n_members; i++) {
        free(g->members[i].url);
        free(g->members[i].address);
    }
    free(g->members);
    free(g->app_id);
    free(g->name);
    memset(g, 0, sizeof *g);
}

static int compare_members(const void *a, const void *b)
{
    const mc_group_member *x = a, *y = b;
    int c = strcmp(x->url, y->url);
    if (c)
        return c;
    return strcmp(x->address ? x->address : "", y->address ? y->address : "");
}

static char *dup_or_null(const char *s, bool *failed)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *failed = true;
    return d;
}

/* A deep copy of g into out, members sorted. 0, or -1 on ENOMEM (out freed). */
static int copy_group(mc_group *out, const mc_group *g)
{
    bool failed = false;
    *out = *g;
    out->app_id = dup_or_null(g->app_id, &failed);
    out->name = dup_or_null(g->name, &failed);
    out->members = g->n_members ? calloc(g->n_members, sizeof *out->members) : NULL;
    out->n_members = 0;
    if (g->n_members && !out->members)
        failed = true;
    for (size_t i = 0; !failed && i < g->n_members; i++) {
        out->members[i].url = dup_or_null(g->members[i].url, &failed);
        out->members[i].address = dup_or_null(g->members[i].address, &failed);
        out->n_members = i + 1;
    }
    if (failed) {
        free_group(out);
        return -1;
    }
    if (out->n_members) /* a group of DNS names that resolve to nothing has none */
        qsort(out->members, out->n_members, sizeof *out->members, compare_members);
    return 0;
}

static mc_group *find_group(const mc_endpoints *e, const char *app_id, const char *name)
{
    for (size_t i = 0; i < e->n_groups; i++) {
        if (strcmp(e->groups[i].app_id, app_id) == 0 && strcmp(e->groups[i].name, name) == 0)
            return &e->groups[i];
    }
    return NULL;
}

int mc_endpoints_put_group(mc_endpoints *e, const mc_group *g)
{
    if (!g->app_id || !g->name || g->n_members > MC_GROUP_MEMBERS_MAX)
        return -1;
    mc_group copy;
    if (copy_group(&copy, g) != 0)
        return -1;
    mc_group *old = find_group(e, g->app_id, g->name);
    if (old) {
        free_group(old);
        *old = copy;
        return 0;
    }
    if (e->n_groups == e->cap_groups) {
        size_t cap = e->cap_groups ? 2 * e->cap_groups : 8;
        mc_group *grown = realloc(e->groups, cap * sizeof *grown);
        if (!grown) {
            free_group(&copy);
            return -1;
        }
        e->groups = grown;
        e->cap_groups = cap;
    }
    e->groups[e->n_groups++] = copy;
    return 0;
}

static limit_entry *find_limit(const mc_endpoints *e, mc_limit_scope scope, const char *name)
{
    for (size_t i = 0; i < e->n_limits; i++) {
        if (e->limits[i].scope == scope && strcmp(e->limits[i].name, name) == 0)
            return &e->limits[i];
    }
    return NULL;
}

int mc_endpoints_put_limit(mc_endpoints *e, mc_limit_scope scope, const char *name,
                           mc_admission_limit limit)
{
    limit_entry *old = find_limit(e, scope, name);
    if (old) {
        old->limit = limit;
        return 0;
    }
    if (e->n_limits == e->cap_limits) {
        size_t cap = e->cap_limits ? 2 * e->cap_limits : 8;
        limit_entry *grown = realloc(e->limits, cap * sizeof *grown);
        if (!grown)
            return -1;
        e->limits = grown;
        e->cap_limits = cap;
    }
    char *copy = strdup(name);
    if (!copy)
        return -1;
    e->limits[e->n_limits++] = (limit_entry){.scope = scope, .name = copy, .limit = limit};
    return 0;
}

mc_endpoints *mc_endpoints_ref(mc_endpoints *e)
{
    if (e)
        atomic_fetch_add(&e->refs, 1);
    return e;
}

void mc_endpoints_unref(mc_endpoints *e)
{
    if (!e || atomic_fetch_sub(&e->refs, 1) != 1)
        return;
    for (size_t i = 0; i < e->n_groups; i++)
        free_group(&e->groups[i]);
    for (size_t i = 0; i < e->n_limits; i++)
        free(e->limits[i].name);
    free(e->groups);
    free(e->limits);
    free(e);
}

const mc_group *mc_endpoints_group(const mc_endpoints *e, const char *app_id, const char *name)
{
    return e ? find_group(e, app_id, name) : NULL;
}

bool mc_endpoints_limit(const mc_endpoints *e, mc_limit_scope scope, const char *name,
                        mc_admission_limit *out)
{
    const limit_entry *l = e ? find_limit(e, scope, name) : NULL;
    if (l)
        *out = l->limit;
    return l != NULL;
}

size_t mc_endpoints_group_count(const mc_endpoints *e)
{
    return e ? e->n_groups : 0;
}

size_t mc_endpoints_limit_count(const mc_endpoints *e)
{
    return e ? e->n_limits : 0;
}

bool mc_group_url_parse(const char *url, char *name_buf, size_t name_len, const char **path)
{
    static const char scheme[] = "group://";
    if (strncmp(url, scheme, sizeof scheme - 1) != 0)
        return false;
    const char *name = url + sizeof scheme - 1;
    size_t n = 0;
    while (name[n] && name[n] != '/' && name[n] != '?') {
        unsigned char ch = (unsigned char)name[n];
        if (!isalnum(ch) && ch != '.' && ch != '_' && ch != '-')
            return false;
        n++;
    }
    if (n == 0 || n > MC_GROUP_NAME_MAX || n >= name_len)
        return false;
    memcpy(name_buf, name, n);
    name_buf[n] = '\0';
    *path = name + n;
    return true;
}

bool mc_limit_host_ok(const char *name)
{
    if (!name[0])
        return false;
    bool bracketed = name[0] == '[';
    for (const char *p = name; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (isupper(ch) || isspace(ch) || ch == '/' || (ch == ':' && !bracketed))
            return false;
    }
    return !bracketed || name[strlen(name) - 1] == ']';
}

bool mc_limit_bounds_ok(int32_t max_concurrent, double max_per_second)
{
    return max_concurrent >= 0 && max_per_second >= 0 && max_per_second <= 1e9 &&
           (max_per_second == 0 || max_per_second >= 1);
}
