/* mooncakectl groups and limits: endpoint groups and admission limits in
 * <prefix>endpoints. put takes the gateway's JSON body (-f) or flags made into one, so
 * both are checked by the gateway's own rules (endpoint_json.h); delete writes a
 * tombstone; list reads the compacted topic to its end into the endpoint table's
 * definitions (endpoint_defs.h) and prints them. See mooncakectl.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint_defs.h"
#include "endpoint_json.h"
#include "kafka.h"
#include "mooncakectl.h"

/* A number flag into obj[key] (integer, or any number for max_per_second). */
static bool number_flag(json_t *obj, const char *key, const char *flag, const char *v, bool integer,
                        char *why, size_t whylen)
{
    if (!v)
        return true;
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    long long n = integer ? strtoll(v, &end, 10) : 0;
    if (errno || end == v || *end) {
        snprintf(why, whylen, "%s '%.40s' is not %s", flag, v, integer ? "an integer" : "a number");
        return false;
    }
    json_object_set_new(obj, key, integer ? json_integer(n) : json_real(d));
    return true;
}

static json_t *list_json(const str_list *l)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < l->n; i++)
        json_array_append_new(a, json_string(l->v[i]));
    return a;
}

/* The body put (or delete) describes: -f's file, or the flags made into one. NULL with
 * a line in why (*usage set for a usage error). Caller frees. */
static char *body_of(const ctl_opts *o, bool limits, bool put, char *why, size_t whylen)
{
    if (o->file) {
        if (!put) {
            snprintf(why, whylen, "delete takes flags, not -f");
            return NULL;
        }
        return mc_config_read_file(o->file, "-f", NULL, why, whylen);
    }
    json_t *b = json_object();
    if (!b) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    bool ok = true;
    if (limits) {
        if (o->scope)
            json_object_set_new(b, "scope", json_string(o->scope));
        if (put)
            ok = number_flag(b, "maxConcurrent", "--max-concurrent", o->max_concurrent, true, why,
                             whylen) &&
                 number_flag(b, "maxPerSecond", "--max-per-second", o->max_per_second, false, why,
                             whylen);
    } else {
        if (o->app)
            json_object_set_new(b, "appId", json_string(o->app));
        if (put) {
            json_object_set_new(b, "members", list_json(&o->members));
            json_object_set_new(b, "dns", list_json(&o->dns));
            if (o->strategy)
                json_object_set_new(b, "strategy", json_string(o->strategy));
            ok =
                number_flag(b, "memberConcurrency", "--member-concurrency", o->member_concurrency,
                            true, why, whylen) &&
                number_flag(b, "unhealthyMs", "--unhealthy-ms", o->unhealthy_ms, true, why, whylen);
        }
    }
    if (o->name)
        json_object_set_new(b, "name", json_string(o->name));
    char *text = ok ? json_dumps(b, JSON_COMPACT) : NULL;
    if (ok && !text)
        snprintf(why, whylen, "out of memory");
    json_decref(b);
    return text;
}

static int cmd_write(ctl *c, bool limits, bool put)
{
    const ctl_opts *o = &c->o;
    char why[1024], key[1024];
    char *body = body_of(o, limits, put, why, sizeof why);
    if (!body)
        return ctl_fail(EXIT_USAGE, "%s (nothing sent)", why);
    mc_arena *arena = mc_arena_new();
    mc_endpoint e;
    mc_buf buf = {0};
    int rc;
    int bad = !arena ? -1
              : put  ? (limits ? mc_endpoint_limit_from_json : mc_endpoint_group_from_json)(
                          body, strlen(body), mc_now_ms(), arena, &e, why, sizeof why)
                    : mc_endpoint_delete_from_json(body, strlen(body), limits, arena, &e, why,
                                                   sizeof why);
    free(body);
    if (bad) {
        rc = ctl_fail(EXIT_USAGE, "%s (nothing sent)", arena ? why : "out of memory");
        goto out;
    }
    size_t klen = mc_endpoint_key(&e, key, sizeof key);
    if (klen >= sizeof key || (put && mc_encode_endpoint(&e, &buf) != 0)) {
        rc = ctl_fail(EXIT_KAFKA, "out of memory");
        goto out;
    }
    delivery d = {0};
    rc = ctl_send(c, "endpoints", key, &buf, &d);
    if (rc == 0) {
        if (o->json)
            ctl_print_json(json_pack("{s:s, s:s, s:i, s:I}", "command", put ? "put" : "delete",
                                     "key", key, "partition", (int)d.partition, "offset",
                                     (json_int_t)d.offset));
        else
            printf("%s %s\n", put ? "put" : "deleted", key);
    }
out:
    mc_buf_free(&buf);
    mc_arena_free(arena);
    return rc;
}

typedef struct read_state {
    mc_endpoint_defs *defs;
    uint64_t read, skipped;
} read_state;

static int take(void *arg, const rd_kafka_message_t *m)
{
    read_state *s = arg;
    char why[512];
    s->read++;
    if (!m->key)
        return 0;
    int rc = mc_endpoint_defs_apply(s->defs, m->key, m->key_len, m->payload,
                                    m->payload ? m->len : 0, why, sizeof why);
    if (rc == -2)
        return ctl_fail(EXIT_KAFKA, "out of memory");
    s->skipped += rc == -1;
    return 0;
}

static void print_strings(json_t *arr)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        char cell[600];
        const char *s = json_string_value(v);
        ctl_printable(s, strlen(s), cell, sizeof cell);
        printf("%s%s", i ? "," : "", cell);
    }
    if (!json_array_size(arr))
        printf("-");
}

static void print_row(ctl *c, bool limits, json_t *j)
{
    if (c->o.json) {
        if (!limits)
            json_object_del(j, "resolved"); /* no resolver here: the table's answers */
        ctl_print_json(json_incref(j));
        return;
    }
    if (limits) {
        printf("%-5s %-40s %14" JSON_INTEGER_FORMAT " %14g\n",
               json_string_value(json_object_get(j, "scope")),
               json_string_value(json_object_get(j, "name")),
               json_integer_value(json_object_get(j, "maxConcurrent")),
               json_number_value(json_object_get(j, "maxPerSecond")));
        return;
    }
    printf("%-12s %-24s %-22s ", json_string_value(json_object_get(j, "appId")),
           json_string_value(json_object_get(j, "name")),
           json_string_value(json_object_get(j, "strategy")));
    print_strings(json_object_get(j, "members"));
    printf("  ");
    print_strings(json_object_get(j, "dns"));
    printf("\n");
}

static int cmd_list(ctl *c, bool limits)
{
    char err[1024], topic[300];
    mc_topic_name(&c->cfg, "endpoints", topic, sizeof topic);
    rd_kafka_t *rk = ctl_new_consumer(c, NULL, err, sizeof err);
    if (!rk)
        return ctl_fail(EXIT_KAFKA, "%s", err);
    read_state s = {.defs = mc_endpoint_defs_new()};
    part_scan *parts = NULL;
    json_t *rows = NULL;
    int rc = 0;
    int n = ctl_topic_partitions(c, rk, topic, err, sizeof err);
    if (n <= 0 || !s.defs) {
        rc = ctl_fail(EXIT_KAFKA, "%s", s.defs ? err : "out of memory");
        goto out;
    }
    parts = calloc((size_t)n, sizeof *parts);
    if (!parts || ctl_plan_scan(rk, topic, n, -1, parts, err, sizeof err) != 0) {
        rc = ctl_fail(EXIT_KAFKA, "%s", parts ? err : "out of memory");
        goto out;
    }
    if ((rc = ctl_scan(c, rk, topic, parts, (size_t)n, false, take, &s, NULL)) != 0)
        goto out;
    if (c->stopping) {
        rc = ctl_fail(EXIT_INTERRUPTED, "interrupted before the end of %s: nothing listed", topic);
        goto out;
    }
    rows = limits ? mc_endpoint_defs_limits_json(s.defs)
                  : mc_endpoint_defs_groups_json(s.defs, c->o.app, NULL);
    if (!rows) {
        rc = ctl_fail(EXIT_KAFKA, "out of memory");
        goto out;
    }
    if (!c->o.json && limits)
        printf("%-5s %-40s %14s %14s\n", "SCOPE", "NAME", "MAX_CONCURRENT", "MAX_PER_SECOND");
    else if (!c->o.json)
        printf("%-12s %-24s %-22s %s\n", "APP", "NAME", "STRATEGY", "MEMBERS  DNS");
    size_t i;
    json_t *j;
    json_array_foreach(rows, i, j) print_row(c, limits, j);
    fflush(stdout);
    ctl_report(c, "%zu %s (%" PRIu64 " records read from %s%s)", json_array_size(rows),
               limits ? "limits" : "groups", s.read, topic,
               s.skipped ? ", some not valid and skipped" : "");
out:
    json_decref(rows);
    free(parts);
    mc_endpoint_defs_free(s.defs);
    rd_kafka_destroy(rk);
    return rc;
}

int ctl_cmd_endpoints(ctl *c, bool limits)
{
    const char *a = c->o.action;
    if (strcmp(a, "list") == 0)
        return cmd_list(c, limits);
    return cmd_write(c, limits, strcmp(a, "put") == 0);
}
