/* The endpoint table's definitions and DNS answers, and the pure steps between them
 * (endpoint_defs.h). Plain arrays searched linearly: a cluster defines tens of groups
 * and limits, and they change rarely. Each definition keeps its decoded record in an
 * arena of its own, freed when the key is written again or deleted. */
#include "endpoint_defs.h"

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <ctype.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define URL_MAX 2048

typedef struct def {
    char *key;
    mc_arena *arena; /* holds ep's strings and arrays */
    mc_endpoint ep;
} def;

typedef struct host_entry {
    char *name;
    char **addrs; /* sorted, distinct */
    size_t n_addrs;
    bool resolved;
} host_entry;

struct mc_endpoint_defs {
    def *defs;
    size_t n_defs, cap_defs;
    host_entry *hosts;
    size_t n_hosts;
};

mc_endpoint_defs *mc_endpoint_defs_new(void)
{
    return calloc(1, sizeof(mc_endpoint_defs));
}

static void free_host(host_entry *h)
{
    for (size_t i = 0; i < h->n_addrs; i++)
        free(h->addrs[i]);
    free(h->addrs);
    free(h->name);
}

void mc_endpoint_defs_free(mc_endpoint_defs *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n_defs; i++) {
        free(d->defs[i].key);
        mc_arena_free(d->defs[i].arena);
    }
    for (size_t i = 0; i < d->n_hosts; i++)
        free_host(&d->hosts[i]);
    free(d->defs);
    free(d->hosts);
    free(d);
}

/* ---- URLs and keys ----------------------------------------------------------------- */

bool mc_endpoint_url_ok(const char *url, char *out, size_t outlen, char *host, size_t hostlen,
                        bool *is_ip, char *why, size_t whylen)
{
    size_t len = strlen(url);
    const char *auth;
    if (strncasecmp(url, "http://", 7) == 0)
        auth = url + 7;
    else if (strncasecmp(url, "https://", 8) == 0)
        auth = url + 8;
    else {
        snprintf(why, whylen, "'%.100s' is not http:// or https://", url);
        return false;
    }
    if (len > URL_MAX) {
        snprintf(why, whylen, "'%.100s...' is longer than %d bytes", url, URL_MAX);
        return false;
    }
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f) {
            snprintf(why, whylen, "'%.100s' contains a space or a control character", url);
            return false;
        }
    if (strpbrk(url, "?#")) {
        snprintf(why, whylen, "'%.100s' has a query or a fragment: a member is a base URL", url);
        return false;
    }
    size_t auth_len = strcspn(auth, "/");
    if (memchr(auth, '@', auth_len)) {
        snprintf(why, whylen, "'%.100s' has user info", url);
        return false;
    }
    char h[256];
    const char *after;
    bool ip = false;
    if (auth[0] == '[') {
        const char *close = memchr(auth, ']', auth_len);
        size_t n = close ? (size_t)(close - auth - 1) : 0;
        struct in6_addr a6;
        if (!close || n == 0 || n >= sizeof h) {
            snprintf(why, whylen, "'%.100s' has a bad IPv6 host", url);
            return false;
        }
        memcpy(h, auth + 1, n);
        h[n] = '\0';
        if (inet_pton(AF_INET6, h, &a6) != 1) {
            snprintf(why, whylen, "'%.100s' has a bad IPv6 host", url);
            return false;
        }
        ip = true;
        after = close + 1;
    } else {
        size_t n = strcspn(auth, ":/");
        if (n == 0 || n >= sizeof h) {
            snprintf(why, whylen, "'%.100s' has no host", url);
            return false;
        }
        for (size_t i = 0; i < n; i++) {
            unsigned char ch = (unsigned char)auth[i];
            if (!isalnum(ch) && ch != '.' && ch != '-' && ch != '_') {
                snprintf(why, whylen, "'%.100s' has a bad host", url);
                return false;
            }
            h[i] = (char)tolower(ch);
        }
        h[n] = '\0';
        struct in_addr a4;
        ip = inet_pton(AF_INET, h, &a4) == 1;
        after = auth + n;
    }
    if (*after == ':') {
        const char *p = after + 1;
        long port = 0;
        size_t digits = 0;
        while (isdigit((unsigned char)*p) && digits < 6)
            port = port * 10 + (*p++ - '0'), digits++;
        if (digits == 0 || port < 1 || port > 65535 || (*p && *p != '/')) {
            snprintf(why, whylen, "'%.100s' has a bad port", url);
            return false;
        }
        after = p;
    }
    if (*after && *after != '/') {
        snprintf(why, whylen, "'%.100s' has a bad host", url);
        return false;
    }
    if (out) {
        size_t keep = len;
        while (keep > (size_t)(auth - url) + auth_len && url[keep - 1] == '/')
            keep--;
        if (keep >= outlen) {
            snprintf(why, whylen, "'%.100s' is too long", url);
            return false;
        }
        memcpy(out, url, keep);
        out[keep] = '\0';
    }
    if (host) {
        if (strlen(h) >= hostlen) {
            snprintf(why, whylen, "'%.100s' has a host too long", url);
            return false;
        }
        strcpy(host, h);
    }
    if (is_ip)
        *is_ip = ip;
    return true;
}

size_t mc_endpoint_key(const mc_endpoint *e, char *buf, size_t buflen)
{
    int n;
    if (e->kind == MC_ENDPOINT_GROUP)
        n = snprintf(buf, buflen, "group/%s/%s", e->group.app_id, e->group.name);
    else
        n = snprintf(buf, buflen, "limit/%s/%s", e->limit.scope == MC_LIMIT_APP ? "app" : "host",
                     e->limit.name);
    return n < 0 ? 0 : (size_t)n;
}

static bool group_name_ok(const char *name)
{
    char buf[MC_GROUP_NAME_MAX + 1], url[MC_GROUP_NAME_MAX + 16];
    const char *path;
    snprintf(url, sizeof url, "group://%.*s", MC_GROUP_NAME_MAX + 1, name);
    return strlen(name) <= MC_GROUP_NAME_MAX && mc_group_url_parse(url, buf, sizeof buf, &path) &&
           !*path;
}

/* Whether a decoded record is one the table may keep: a key naming it, sane numbers,
 * members that are base URLs. */
static bool record_ok(const mc_endpoint *e, const char *key, size_t key_len, char *why,
                      size_t whylen)
{
    char want[1024];
    size_t n = mc_endpoint_key(e, want, sizeof want);
    if (n != key_len || n >= sizeof want || memcmp(want, key, key_len) != 0) {
        snprintf(why, whylen, "key '%.*s' does not name its value (%.200s)",
                 (int)(key_len > 200 ? 200 : key_len), key, want);
        return false;
    }
    if (e->kind == MC_ENDPOINT_LIMIT) {
        const mc_endpoint_limit *l = &e->limit;
        if (!l->name[0] || !isfinite(l->max_per_second) ||
            !mc_limit_bounds_ok(l->max_concurrent, l->max_per_second)) {
            snprintf(why, whylen,
                     "limit %s has an empty name, a negative bound or a rate between 0 and 1",
                     want);
            return false;
        }
        if (l->scope == MC_LIMIT_HOST && !mc_limit_host_ok(l->name)) {
            snprintf(why, whylen, "limit %s: a host is lower case, without a port", want);
            return false;
        }
        return true;
    }
    const mc_endpoint_group *g = &e->group;
    if (!g->app_id[0] || strchr(g->app_id, '/') || !group_name_ok(g->name)) {
        snprintf(why, whylen, "group %s has a bad app id or name", want);
        return false;
    }
    if (g->n_members + g->n_dns > MC_GROUP_MEMBERS_MAX || g->member_concurrency < 0 ||
        g->unhealthy_ms < 0) {
        snprintf(why, whylen, "group %s has more than %d members or a negative number", want,
                 MC_GROUP_MEMBERS_MAX);
        return false;
    }
    char reason[300];
    for (size_t i = 0; i < g->n_members + g->n_dns; i++) {
        const char *u = i < g->n_members ? g->members[i] : g->dns[i - g->n_members];
        if (!mc_endpoint_url_ok(u, NULL, 0, NULL, 0, NULL, reason, sizeof reason)) {
            snprintf(why, whylen, "group %s: %s", want, reason);
            return false;
        }
    }
    return true;
}

/* ---- definitions ------------------------------------------------------------------- */

static def *find_def(const mc_endpoint_defs *d, const void *key, size_t key_len)
{
    for (size_t i = 0; i < d->n_defs; i++)
        if (strlen(d->defs[i].key) == key_len && memcmp(d->defs[i].key, key, key_len) == 0)
            return &d->defs[i];
    return NULL;
}

static host_entry *find_host(host_entry *hosts, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(hosts[i].name, name) == 0)
            return &hosts[i];
    return NULL;
}

/* The DNS name of a dns URL into host; false for an IP literal (a static member). */
static bool dns_host(const char *url, char *host, size_t hostlen)
{
    bool ip = true;
    char why[8];
    return mc_endpoint_url_ok(url, NULL, 0, host, hostlen, &ip, why, sizeof why) && !ip;
}

/* Makes the host list the names the groups' dns URLs hold now, keeping what is known
 * of names still named. 0, or -1 on ENOMEM (the list unchanged). */
static int rebuild_hosts(mc_endpoint_defs *d)
{
    size_t cap = 0;
    for (size_t i = 0; i < d->n_defs; i++)
        if (d->defs[i].ep.kind == MC_ENDPOINT_GROUP)
            cap += d->defs[i].ep.group.n_dns;
    host_entry *hosts = cap ? calloc(cap, sizeof *hosts) : NULL;
    if (cap && !hosts)
        return -1;
    size_t n = 0;
    char name[256];
    /* First every allocation, so a failure leaves the old list as it was. */
    for (size_t i = 0; i < d->n_defs; i++) {
        const mc_endpoint *e = &d->defs[i].ep;
        for (size_t k = 0; e->kind == MC_ENDPOINT_GROUP && k < e->group.n_dns; k++) {
            if (!dns_host(e->group.dns[k], name, sizeof name) || find_host(hosts, n, name))
                continue;
            if (!(hosts[n].name = strdup(name))) {
                for (size_t j = 0; j < n; j++)
                    free(hosts[j].name);
                free(hosts);
                return -1;
            }
            n++;
        }
    }
    /* Then the answers of names still named move over. */
    for (size_t j = 0; j < n; j++) {
        host_entry *old = find_host(d->hosts, d->n_hosts, hosts[j].name);
        if (old) {
            hosts[j].addrs = old->addrs;
            hosts[j].n_addrs = old->n_addrs;
            hosts[j].resolved = old->resolved;
            old->addrs = NULL;
            old->n_addrs = 0;
        }
    }
    for (size_t i = 0; i < d->n_hosts; i++)
        free_host(&d->hosts[i]);
    free(d->hosts);
    d->hosts = hosts;
    d->n_hosts = n;
    return 0;
}

static void drop_def(mc_endpoint_defs *d, def *x)
{
    free(x->key);
    mc_arena_free(x->arena);
    *x = d->defs[--d->n_defs];
}

int mc_endpoint_defs_apply(mc_endpoint_defs *d, const void *key, size_t key_len, const void *value,
                           size_t len, char *why, size_t whylen)
{
    def *old = find_def(d, key, key_len);
    if (!value) {
        if (!old)
            return 0;
        bool had_dns = old->ep.kind == MC_ENDPOINT_GROUP && old->ep.group.n_dns;
        drop_def(d, old);
        /* Out of memory, the names it alone held stay listed (resolved for nothing)
         * until the next change rebuilds the list: the definitions are right. */
        if (had_dns)
            (void)rebuild_hosts(d);
        return 1;
    }
    mc_arena *arena = mc_arena_new();
    char *copy = malloc(key_len + 1);
    if (!arena || !copy) {
        mc_arena_free(arena);
        free(copy);
        return -2;
    }
    memcpy(copy, key, key_len);
    copy[key_len] = '\0';
    mc_endpoint ep;
    char detail[256];
    mc_codec_err e = mc_decode_endpoint(value, len, arena, &ep, detail, sizeof detail);
    if (e != MC_CODEC_OK || !record_ok(&ep, copy, key_len, why, whylen)) {
        if (e != MC_CODEC_OK)
            snprintf(why, whylen, "not an Endpoint record: %s: %s", mc_codec_strerror(e), detail);
        mc_arena_free(arena);
        free(copy);
        return e == MC_CODEC_NOMEM ? -2 : -1;
    }
    if (old) {
        free(old->key);
        mc_arena_free(old->arena);
        *old = (def){copy, arena, ep};
    } else {
        if (d->n_defs == d->cap_defs) {
            size_t cap = d->cap_defs ? 2 * d->cap_defs : 16;
            def *grown = realloc(d->defs, cap * sizeof *grown);
            if (!grown) {
                mc_arena_free(arena);
                free(copy);
                return -2;
            }
            d->defs = grown;
            d->cap_defs = cap;
        }
        d->defs[d->n_defs++] = (def){copy, arena, ep};
    }
    return rebuild_hosts(d) == 0 ? 1 : -2;
}

size_t mc_endpoint_defs_group_count(const mc_endpoint_defs *d)
{
    size_t n = 0;
    for (size_t i = 0; i < d->n_defs; i++)
        n += d->defs[i].ep.kind == MC_ENDPOINT_GROUP;
    return n;
}

size_t mc_endpoint_defs_limit_count(const mc_endpoint_defs *d)
{
    return d->n_defs - mc_endpoint_defs_group_count(d);
}

/* ---- DNS names ----------------------------------------------------------------------- */

size_t mc_endpoint_defs_host_count(const mc_endpoint_defs *d)
{
    return d->n_hosts;
}

const char *mc_endpoint_defs_host(const mc_endpoint_defs *d, size_t i)
{
    return i < d->n_hosts ? d->hosts[i].name : NULL;
}

bool mc_endpoint_defs_host_resolved(const mc_endpoint_defs *d, size_t i)
{
    return i < d->n_hosts && d->hosts[i].resolved;
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int mc_endpoint_defs_set_addresses(mc_endpoint_defs *d, size_t i, const char *const *addrs,
                                   size_t n)
{
    if (i >= d->n_hosts)
        return 0;
    char **copy = n ? calloc(n, sizeof *copy) : NULL;
    if (n && !copy)
        return -1;
    size_t k = 0;
    for (size_t j = 0; j < n; j++)
        if (!(copy[k++] = strdup(addrs[j]))) {
            for (size_t x = 0; x + 1 < k; x++)
                free(copy[x]);
            free(copy);
            return -1;
        }
    if (k)
        qsort(copy, k, sizeof *copy, compare_strings);
    size_t m = 0;
    for (size_t j = 0; j < k; j++) {
        if (m && strcmp(copy[m - 1], copy[j]) == 0)
            free(copy[j]);
        else
            copy[m++] = copy[j];
    }
    while (m > MC_DNS_ADDRESSES_MAX) /* the first ones, as a group keeps */
        free(copy[--m]);
    host_entry *h = &d->hosts[i];
    bool same = h->resolved && h->n_addrs == m;
    for (size_t j = 0; same && j < m; j++)
        same = strcmp(h->addrs[j], copy[j]) == 0;
    h->resolved = true;
    if (same) {
        for (size_t j = 0; j < m; j++)
            free(copy[j]);
        free(copy);
        return 0;
    }
    for (size_t j = 0; j < h->n_addrs; j++)
        free(h->addrs[j]);
    free(h->addrs);
    h->addrs = copy;
    h->n_addrs = m;
    return 1;
}

int mc_dns_answer_addresses(const uint8_t *msg, size_t len, char (*addrs)[MC_ADDRESS_MAX],
                            size_t max)
{
    ns_msg h;
    if (len > 65535 || ns_initparse(msg, (int)len, &h) != 0)
        return -1;
    int n = 0;
    int count = ns_msg_count(h, ns_s_an);
    for (int i = 0; i < count && (size_t)n < max; i++) {
        ns_rr rr;
        if (ns_parserr(&h, ns_s_an, i, &rr) != 0)
            return -1;
        if (ns_rr_class(rr) != ns_c_in)
            continue;
        if (ns_rr_type(rr) == ns_t_a && ns_rr_rdlen(rr) == 4) {
            if (inet_ntop(AF_INET, ns_rr_rdata(rr), addrs[n], MC_ADDRESS_MAX))
                n++;
        } else if (ns_rr_type(rr) == ns_t_aaaa && ns_rr_rdlen(rr) == 16) {
            if (inet_ntop(AF_INET6, ns_rr_rdata(rr), addrs[n], MC_ADDRESS_MAX))
                n++;
        }
    }
    return n;
}

/* ---- snapshots and listings ---------------------------------------------------------- */

/* The members of group g: static ones, then each dns URL per address, into members
 * (room for n_members + n_dns * MC_DNS_ADDRESSES_MAX). Returns how many. Strings are
 * borrowed from d. */
static size_t group_members(const mc_endpoint_defs *d, const mc_endpoint_group *g,
                            mc_group_member *members)
{
    size_t n = 0;
    char name[256];
    for (size_t i = 0; i < g->n_members; i++)
        members[n++] = (mc_group_member){(char *)g->members[i], NULL};
    for (size_t i = 0; i < g->n_dns; i++) {
        if (!dns_host(g->dns[i], name, sizeof name)) {
            members[n++] = (mc_group_member){(char *)g->dns[i], NULL};
            continue;
        }
        const host_entry *h = find_host(d->hosts, d->n_hosts, name);
        for (size_t k = 0; h && k < h->n_addrs; k++)
            members[n++] = (mc_group_member){(char *)g->dns[i], h->addrs[k]};
    }
    return n;
}

static int compare_members(const void *a, const void *b)
{
    const mc_group_member *x = a, *y = b;
    int c = strcmp(x->url, y->url);
    return c ? c : strcmp(x->address ? x->address : "", y->address ? y->address : "");
}

/* Sorts members and drops repeats; returns how many are left. */
static size_t sort_members(mc_group_member *members, size_t n)
{
    if (n)
        qsort(members, n, sizeof *members, compare_members);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!m || compare_members(&members[m - 1], &members[i]) != 0)
            members[m++] = members[i];
    return m;
}

mc_endpoints *mc_endpoint_defs_snapshot(const mc_endpoint_defs *d, size_t *cut)
{
    mc_endpoints *e = mc_endpoints_new();
    mc_group_member *members =
        calloc(MC_GROUP_MEMBERS_MAX * (MC_DNS_ADDRESSES_MAX + 1), sizeof *members);
    if (cut)
        *cut = 0;
    if (!e || !members)
        goto fail;
    for (size_t i = 0; i < d->n_defs; i++) {
        const mc_endpoint *ep = &d->defs[i].ep;
        int rc;
        if (ep->kind == MC_ENDPOINT_LIMIT) {
            mc_admission_limit l = {ep->limit.max_concurrent, ep->limit.max_per_second};
            rc = mc_endpoints_put_limit(e, (mc_limit_scope)ep->limit.scope, ep->limit.name, l);
        } else {
            const mc_endpoint_group *g = &ep->group;
            size_t n = sort_members(members, group_members(d, g, members));
            if (n > MC_GROUP_MEMBERS_MAX) {
                if (cut)
                    *cut += n - MC_GROUP_MEMBERS_MAX;
                n = MC_GROUP_MEMBERS_MAX;
            }
            mc_group grp = {.app_id = (char *)g->app_id,
                            .name = (char *)g->name,
                            .strategy = (mc_route_strategy)g->strategy,
                            .member_concurrency = g->member_concurrency,
                            .unhealthy_ms = g->unhealthy_ms,
                            .members = members,
                            .n_members = n};
            rc = mc_endpoints_put_group(e, &grp);
        }
        if (rc != 0)
            goto fail;
    }
    free(members);
    return e;
fail:
    free(members);
    mc_endpoints_unref(e);
    return NULL;
}

static json_t *string_array(const char *const *items, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_string(items[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static int compare_defs(const void *a, const void *b)
{
    return strcmp((*(const def *const *)a)->key, (*(const def *const *)b)->key);
}

/* The definitions of kind (and, for groups, of app_id and name when not NULL), sorted
 * by key, into a new array (caller frees); NULL on ENOMEM or none (*n 0). */
static const def **select_defs(const mc_endpoint_defs *d, mc_endpoint_kind kind, const char *app_id,
                               const char *name, size_t *n)
{
    const def **out = d->n_defs ? calloc(d->n_defs, sizeof *out) : NULL;
    *n = 0;
    for (size_t i = 0; out && i < d->n_defs; i++) {
        const mc_endpoint *ep = &d->defs[i].ep;
        if (ep->kind != kind)
            continue;
        if (kind == MC_ENDPOINT_GROUP && ((app_id && strcmp(ep->group.app_id, app_id) != 0) ||
                                          (name && strcmp(ep->group.name, name) != 0)))
            continue;
        out[(*n)++] = &d->defs[i];
    }
    if (*n)
        qsort(out, *n, sizeof *out, compare_defs);
    return out;
}

static json_t *group_json(const mc_endpoint_defs *d, const mc_endpoint_group *g)
{
    json_t *resolved = json_array();
    char name[256];
    for (size_t i = 0; resolved && i < g->n_dns; i++) {
        if (!dns_host(g->dns[i], name, sizeof name))
            continue;
        const host_entry *h = find_host(d->hosts, d->n_hosts, name);
        for (size_t k = 0; h && k < h->n_addrs; k++)
            json_array_append_new(
                resolved, json_pack("{s:s, s:s}", "url", g->dns[i], "address", h->addrs[k]));
    }
    if (!resolved)
        return NULL;
    return json_pack("{s:s, s:s, s:o*, s:o*, s:s, s:i, s:I, s:I, s:o}", "appId", g->app_id, "name",
                     g->name, "members", string_array(g->members, g->n_members), "dns",
                     string_array(g->dns, g->n_dns), "strategy",
                     mc_route_strategy_name((mc_route_strategy)g->strategy), "memberConcurrency",
                     (int)g->member_concurrency, "unhealthyMs", (json_int_t)g->unhealthy_ms,
                     "updatedAt", (json_int_t)g->updated_at, "resolved", resolved);
}

json_t *mc_endpoint_defs_groups_json(const mc_endpoint_defs *d, const char *app_id,
                                     const char *name)
{
    size_t n;
    const def **sel = select_defs(d, MC_ENDPOINT_GROUP, app_id, name, &n);
    json_t *out = json_array();
    for (size_t i = 0; out && i < n; i++) {
        json_t *g = group_json(d, &sel[i]->ep.group);
        if (!g || json_array_append_new(out, g) != 0) {
            json_decref(out);
            out = NULL;
        }
    }
    free(sel);
    return out;
}

json_t *mc_endpoint_defs_limits_json(const mc_endpoint_defs *d)
{
    size_t n;
    const def **sel = select_defs(d, MC_ENDPOINT_LIMIT, NULL, NULL, &n);
    json_t *out = json_array();
    for (size_t i = 0; out && i < n; i++) {
        const mc_endpoint_limit *l = &sel[i]->ep.limit;
        json_t *j = json_pack("{s:s, s:s, s:i, s:f, s:I}", "scope",
                              l->scope == MC_LIMIT_APP ? "app" : "host", "name", l->name,
                              "maxConcurrent", (int)l->max_concurrent, "maxPerSecond",
                              l->max_per_second, "updatedAt", (json_int_t)l->updated_at);
        if (!j || json_array_append_new(out, j) != 0) {
            json_decref(out);
            out = NULL;
        }
    }
    free(sel);
    return out;
}
