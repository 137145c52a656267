/* JSON bodies of endpoint groups and limits into Endpoint records; see endpoint_json.h. */
#include "endpoint_json.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "endpoint_defs.h"
#include "endpoints.h"
#include "task_json.h"

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(why, whylen, __VA_ARGS__);                                                        \
        goto done;                                                                                 \
    } while (0)

/* appId (as a task's: no '/') and a group name (as group:// URLs take). */
static int group_identity(json_t *root, mc_arena *a, const char **app_id, const char **name,
                          char *why, size_t whylen)
{
    if (mc_json_get_string(root, "appId", "appId", true, MC_JSON_MAX_ID_LEN, a, app_id, why,
                           whylen) ||
        mc_json_get_string(root, "name", "name", true, MC_GROUP_NAME_MAX, a, name, why, whylen))
        return -1;
    if (strchr(*app_id, '/')) {
        snprintf(why, whylen, "appId '%.100s' contains '/'", *app_id);
        return -1;
    }
    for (const char *p = *name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_' && *p != '-') {
            snprintf(why, whylen, "name '%.100s' is not 1 to %d of A-Z a-z 0-9 . _ -", *name,
                     MC_GROUP_NAME_MAX);
            return -1;
        }
    return 0;
}

/* body[key]: an array of base URLs, each checked and stripped of trailing slashes,
 * into an arena array. */
static int get_urls(json_t *root, const char *key, mc_arena *a, const char *const **out, size_t *n,
                    char *why, size_t whylen)
{
    *out = NULL;
    *n = 0;
    json_t *arr = json_object_get(root, key);
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr)) {
        snprintf(why, whylen, "%s must be an array of URLs, not %s", key, mc_json_type_name(arr));
        return -1;
    }
    size_t count = json_array_size(arr);
    if (count > MC_GROUP_MEMBERS_MAX) {
        snprintf(why, whylen, "%s has %zu URLs, more than %d", key, count, MC_GROUP_MEMBERS_MAX);
        return -1;
    }
    const char **urls = count ? mc_arena_alloc(a, count * sizeof *urls) : NULL;
    if (count && !urls) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < count; i++) {
        json_t *v = json_array_get(arr, i);
        char reason[300];
        if (!json_is_string(v)) {
            snprintf(why, whylen, "%s[%zu] must be a string, not %s", key, i, mc_json_type_name(v));
            return -1;
        }
        const char *url = json_string_value(v);
        size_t len = strlen(url);
        char *clean = mc_arena_alloc(a, len + 1);
        if (!clean) {
            snprintf(why, whylen, "out of memory");
            return -1;
        }
        if (!mc_endpoint_url_ok(url, clean, len + 1, NULL, 0, NULL, reason, sizeof reason)) {
            snprintf(why, whylen, "%s[%zu] %s", key, i, reason);
            return -1;
        }
        urls[i] = clean;
    }
    *out = urls;
    *n = count;
    return 0;
}

int mc_endpoint_group_from_json(const char *body, size_t len, int64_t now, mc_arena *a,
                                mc_endpoint *out, char *why, size_t whylen)
{
    *out = (mc_endpoint){.kind = MC_ENDPOINT_GROUP};
    mc_endpoint_group *g = &out->group;
    json_t *root = mc_json_parse_object(body, len, why, whylen);
    if (!root)
        return -1;
    int rc = -1;
    const char *strategy;
    bool present;
    int64_t concurrency = 0, unhealthy = MC_UNHEALTHY_MS_DEFAULT;
    if (group_identity(root, a, &g->app_id, &g->name, why, whylen) ||
        get_urls(root, "members", a, &g->members, &g->n_members, why, whylen) ||
        get_urls(root, "dns", a, &g->dns, &g->n_dns, why, whylen) ||
        mc_json_get_string(root, "strategy", "strategy", false, 64, a, &strategy, why, whylen) ||
        mc_json_get_int(root, "memberConcurrency", "memberConcurrency", 0, 1000000, &present,
                        &concurrency, why, whylen) ||
        mc_json_get_int(root, "unhealthyMs", "unhealthyMs", 0, MC_UNHEALTHY_MS_MAX, &present,
                        &unhealthy, why, whylen))
        goto done;
    if (g->n_members + g->n_dns == 0)
        FAIL("members and dns are both empty: a group needs 1 to %d URLs", MC_GROUP_MEMBERS_MAX);
    if (g->n_members + g->n_dns > MC_GROUP_MEMBERS_MAX)
        FAIL("members and dns hold %zu URLs together, more than %d", g->n_members + g->n_dns,
             MC_GROUP_MEMBERS_MAX);
    mc_route_strategy s = MC_ROUTE_ROUND_ROBIN;
    if (strategy && !mc_route_strategy_parse(strategy, &s))
        FAIL("strategy '%.40s' is not one of " MC_ROUTE_STRATEGY_LIST, strategy);
    g->strategy = (int32_t)s;
    g->member_concurrency = (int32_t)concurrency;
    g->unhealthy_ms = unhealthy;
    g->updated_at = now;
    rc = 0;
done:
    json_decref(root);
    return rc;
}

/* scope ("host" or "app") and name: a host lower-cased, without a port. */
static int limit_identity(json_t *root, mc_arena *a, mc_endpoint_limit *l, char *why, size_t whylen)
{
    const char *scope, *name;
    if (mc_json_get_string(root, "scope", "scope", true, 16, a, &scope, why, whylen) ||
        mc_json_get_string(root, "name", "name", true, MC_JSON_MAX_ID_LEN, a, &name, why, whylen))
        return -1;
    if (strcmp(scope, "host") == 0) {
        l->scope = MC_LIMIT_HOST;
        size_t n = strlen(name);
        char *lower = mc_arena_alloc(a, n + 3);
        if (!lower) {
            snprintf(why, whylen, "out of memory");
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            unsigned char ch = (unsigned char)name[i];
            if (!isalnum(ch) && ch != '.' && ch != '-' && ch != '_' && ch != ':' && ch != '[' &&
                ch != ']') {
                snprintf(why, whylen, "name '%.100s' is not a host name", name);
                return -1;
            }
            lower[i] = (char)tolower(ch);
        }
        lower[n] = '\0';
        /* A host, not host:port. An IPv6 literal holds colons: it is kept in brackets, as
         * the URLs called spell it. */
        const char *colon = strchr(lower, ':');
        if (colon && lower[0] != '[' && strchr(colon + 1, ':') == NULL) {
            snprintf(why, whylen, "name '%.100s' has a port: a host limit covers every port", name);
            return -1;
        }
        if (colon && lower[0] != '[') {
            memmove(lower + 1, lower, n + 1);
            lower[0] = '[';
            lower[n + 1] = ']';
            lower[n + 2] = '\0';
        }
        if (!mc_limit_host_ok(lower)) {
            snprintf(why, whylen, "name '%.100s' is not a host name", name);
            return -1;
        }
        name = lower;
    } else if (strcmp(scope, "app") == 0) {
        l->scope = MC_LIMIT_APP;
        if (strchr(name, '/')) {
            snprintf(why, whylen, "name '%.100s' contains '/'", name);
            return -1;
        }
    } else {
        snprintf(why, whylen, "scope '%.20s' is not host or app", scope);
        return -1;
    }
    l->name = name;
    return 0;
}

int mc_endpoint_limit_from_json(const char *body, size_t len, int64_t now, mc_arena *a,
                                mc_endpoint *out, char *why, size_t whylen)
{
    *out = (mc_endpoint){.kind = MC_ENDPOINT_LIMIT};
    mc_endpoint_limit *l = &out->limit;
    json_t *root = mc_json_parse_object(body, len, why, whylen);
    if (!root)
        return -1;
    int rc = -1;
    bool present;
    int64_t concurrent = 0;
    if (limit_identity(root, a, l, why, whylen) ||
        mc_json_get_int(root, "maxConcurrent", "maxConcurrent", 0, 1000000, &present, &concurrent,
                        why, whylen))
        goto done;
    json_t *rate = json_object_get(root, "maxPerSecond");
    double per_second = 0;
    if (rate && !json_is_null(rate)) {
        if (!json_is_number(rate))
            FAIL("maxPerSecond must be a number, not %s", mc_json_type_name(rate));
        per_second = json_number_value(rate);
        if (!isfinite(per_second) || per_second < 0 || per_second > 1e9)
            FAIL("maxPerSecond %g is outside [0, 1e9]", per_second);
        if (per_second > 0 && per_second < 1)
            FAIL("maxPerSecond %g is below 1: a rate is shared out in whole calls a second",
                 per_second);
    }
    if (concurrent == 0 && per_second == 0)
        FAIL("maxConcurrent and maxPerSecond are both 0: a limit needs one of them above 0");
    l->max_concurrent = (int32_t)concurrent;
    l->max_per_second = per_second;
    l->updated_at = now;
    rc = 0;
done:
    json_decref(root);
    return rc;
}

int mc_endpoint_delete_from_json(const char *body, size_t len, bool limit, mc_arena *a,
                                 mc_endpoint *out, char *why, size_t whylen)
{
    *out = (mc_endpoint){.kind = limit ? MC_ENDPOINT_LIMIT : MC_ENDPOINT_GROUP};
    json_t *root = mc_json_parse_object(body, len, why, whylen);
    if (!root)
        return -1;
    int rc = limit ? limit_identity(root, a, &out->limit, why, whylen)
                   : group_identity(root, a, &out->group.app_id, &out->group.name, why, whylen);
    json_decref(root);
    return rc;
}
