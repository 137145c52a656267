/* mooncakectl task get, list and stats, from the view's changelog,
 * <prefix>views (read_committed, to the end seen at start, the latest value
 * of each key): what the view had committed, up to a second behind GET
 * /api/task, /api/tasks and /api/stats, and without a running mooncake.
 * get reads the key's partition; list and stats read every partition and
 * keep the app's keys. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "kafka.h"
#include "mooncakectl.h"
#include "view_list.h"
#include "view_task.h"

typedef struct found {
    const char *key;
    size_t key_len;
    uint8_t *value; /* the latest value of key; NULL: none, or a tombstone */
    size_t value_len;
    int64_t wheel_position;
} found;

/* Whether m is a partition's wheel position record; its position in *at. */
static bool position_record(const rd_kafka_message_t *m, int64_t *at)
{
    if (m->key_len != sizeof MC_VIEW_POSITION_KEY - 1 ||
        memcmp(m->key, MC_VIEW_POSITION_KEY, m->key_len) != 0)
        return false;
    char text[24] = "";
    if (m->payload && m->len < sizeof text)
        memcpy(text, m->payload, m->len);
    *at = strtoll(text, NULL, 10);
    return true;
}

static int take(void *arg, const rd_kafka_message_t *m)
{
    found *f = arg;
    if (!m->key || position_record(m, &f->wheel_position))
        return 0;
    if (m->key_len != f->key_len || memcmp(m->key, f->key, f->key_len) != 0)
        return 0;
    free(f->value);
    f->value = NULL;
    f->value_len = 0;
    if (m->payload) {
        f->value = malloc(m->len ? m->len : 1);
        if (!f->value)
            return EXIT_KAFKA;
        memcpy(f->value, m->payload, m->len);
        f->value_len = m->len;
    }
    return 0;
}

static void print_table(const json_t *j)
{
    const char *keys[] = {"key",     "state",         "version",       "dueAt",
                          "attempt", "nextAttemptAt", "cancelVersion", "reason"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(j, keys[i]);
        if (!v)
            continue;
        char t[32];
        if (json_is_integer(v) && strstr(keys[i], "At")) {
            ctl_fmt_time(json_integer_value(v), t);
            printf("%-14s %s\n", keys[i], t);
        } else if (json_is_integer(v)) {
            printf("%-14s %" JSON_INTEGER_FORMAT "\n", keys[i], json_integer_value(v));
        } else if (json_is_string(v)) {
            printf("%-14s %s\n", keys[i], json_string_value(v));
        }
    }
    json_t *cb = json_object_get(j, "callback");
    const char *group = json_string_value(json_object_get(cb, "group"));
    if (cb && group)
        printf("%-14s %s group %s path %s%s%s\n", "callback",
               json_string_value(json_object_get(cb, "method")), group,
               json_string_value(json_object_get(cb, "path")),
               json_object_get(cb, "strategy") ? " strategy " : "",
               json_object_get(cb, "strategy") ? json_string_value(json_object_get(cb, "strategy"))
                                               : "");
    else if (cb)
        printf("%-14s %s %s\n", "callback", json_string_value(json_object_get(cb, "method")),
               json_string_value(json_object_get(cb, "url")));
    json_t *kt = json_object_get(j, "kafkaTarget");
    if (kt) {
        json_t *vb = json_object_get(kt, "valueBytes");
        printf("%-14s %s", "kafkaTarget", json_string_value(json_object_get(kt, "topic")));
        if (json_object_get(kt, "key"))
            printf(" key %s", json_string_value(json_object_get(kt, "key")));
        else if (json_object_get(kt, "keyBase64"))
            printf(" keyBase64 %s", json_string_value(json_object_get(kt, "keyBase64")));
        if (vb)
            printf(" value %" JSON_INTEGER_FORMAT " bytes\n", json_integer_value(vb));
        else
            printf(" tombstone\n");
    }
    json_t *late = json_object_get(j, "latePolicy");
    if (late)
        printf("%-14s %s past %" JSON_INTEGER_FORMAT " ms late\n", "latePolicy",
               json_string_value(json_object_get(late, "action")),
               json_integer_value(json_object_get(late, "maxLateMs")));
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(j, "attempts"), i, a)
    {
        char started[32];
        ctl_fmt_time(json_integer_value(json_object_get(a, "startedAt")), started);
        printf("attempt %-6" JSON_INTEGER_FORMAT " %s %s HTTP %" JSON_INTEGER_FORMAT
               " %" JSON_INTEGER_FORMAT " ms %s\n",
               json_integer_value(json_object_get(a, "attempt")), started,
               json_string_value(json_object_get(a, "outcome")),
               json_integer_value(json_object_get(a, "httpStatus")),
               json_integer_value(json_object_get(a, "latencyMs")),
               json_string_value(json_object_get(a, "error")));
    }
    json_array_foreach(json_object_get(j, "olderVersions"), i, a)
        printf("older version %" JSON_INTEGER_FORMAT " %s (replaced by %" JSON_INTEGER_FORMAT ")\n",
               json_integer_value(json_object_get(a, "version")),
               json_string_value(json_object_get(a, "state")),
               json_integer_value(json_object_get(a, "replacedBy")));
}

int ctl_cmd_task(ctl *c)
{
    const ctl_opts *o = &c->o;
    char key[1024], why[256];
    if (o->key) {
        const char *slash = strchr(o->key, '/');
        if (!slash || slash == o->key || !slash[1] || strlen(o->key) >= sizeof key)
            return ctl_fail(EXIT_USAGE, "task get needs APP/ID (or --app APP --id ID), not '%s'",
                            o->key);
        snprintf(key, sizeof key, "%s", o->key);
    } else if (o->app && o->id) {
        if (!ctl_id_ok("--app", o->app, why, sizeof why) ||
            !ctl_id_ok("--id", o->id, why, sizeof why) || strchr(o->app, '/'))
            return ctl_fail(EXIT_USAGE, "%s",
                            strchr(o->app, '/') ? "--app must not contain '/'" : why);
        if (mc_task_key(o->app, o->id, key, sizeof key) >= sizeof key)
            return ctl_fail(EXIT_USAGE, "the task key is too long");
    } else {
        return ctl_fail(EXIT_USAGE, "task get needs APP/ID (or --app APP --id ID)");
    }
    char err[512], topic[300];
    mc_topic_name(&c->cfg, "views", topic, sizeof topic);
    rd_kafka_t *rk = ctl_new_consumer(c, NULL, err, sizeof err);
    if (!rk)
        return ctl_fail(EXIT_KAFKA, "%s", err);
    int rc;
    found f = {.key = key, .key_len = strlen(key), .wheel_position = -1};
    int n = ctl_topic_partitions(c, rk, topic, err, sizeof err);
    part_scan *all = n > 0 ? calloc((size_t)n, sizeof *all) : NULL;
    if (n <= 0 || !all || ctl_plan_scan(rk, topic, n, -1, all, err, sizeof err) != 0) {
        rc = ctl_fail(EXIT_KAFKA, "%s", n > 0 && !all ? "out of memory" : err);
        goto out;
    }
    part_scan *home = &all[mc_key_partition(key, strlen(key), n)];
    rc = ctl_scan(c, rk, topic, home, 1, false, take, &f, NULL);
    if (rc != 0)
        goto out;
    if (c->stopping) {
        rc = ctl_fail(EXIT_INTERRUPTED, "interrupted before the end of %s", topic);
        goto out;
    }
    if (!f.value) {
        rc = ctl_fail(EXIT_KAFKA,
                      "no task %s in %s [%d] (never submitted, not read by a view yet, or ended "
                      "longer ago than the view's history)",
                      key, topic, (int)home->partition);
        goto out;
    }
    const char *bad = NULL;
    mc_view_task *t = mc_view_task_decode(key, strlen(key), f.value, f.value_len, &bad);
    if (!t) {
        rc = ctl_fail(EXIT_KAFKA, "%s [%d]: the record of %s is unreadable: %s", topic,
                      (int)home->partition, key, bad);
        goto out;
    }
    json_t *j = mc_view_task_json(t, f.wheel_position, mc_now_ms());
    mc_view_task_free(t);
    if (o->json) {
        ctl_print_json(j);
    } else {
        print_table(j);
        json_decref(j);
    }
out:
    free(f.value);
    free(all);
    rd_kafka_destroy(rk);
    return rc;
}

/* ---- task list, task stats ------------------------------------------------------ */

/* The latest changelog value of one key of the app. */
typedef struct latest {
    mc_keynode node;
    int32_t partition;
    uint8_t *value; /* owned */
    size_t len;
    char key[];
} latest;

#define LATEST_KEY_OFFSET (offsetof(latest, key) - offsetof(latest, node))

typedef struct gathering {
    const char *app;
    size_t app_len;
    char stats_key[MC_VIEW_STATS_KEY_MAX];
    size_t stats_key_len;
    mc_keymap *keys;    /* latest of every task key and counter key of the app */
    int64_t *positions; /* per partition: the wheel's last marker */
    int32_t n_partitions;
} gathering;

static void free_latest(mc_keynode *n, void *arg)
{
    (void)arg;
    free(((latest *)n)->value);
    free(n);
}

static int gather_one(void *arg, const rd_kafka_message_t *m)
{
    gathering *g = arg;
    int64_t at;
    if (!m->key)
        return 0;
    if (position_record(m, &at)) {
        if (m->partition >= 0 && m->partition < g->n_partitions)
            g->positions[m->partition] = at;
        return 0;
    }
    /* The app's tasks (APP/...) and its counters (/stats/APP, one per
     * partition: the map key adds the partition number after a NUL). */
    bool task = m->key_len > g->app_len && ((const char *)m->key)[g->app_len] == '/' &&
                memcmp(m->key, g->app, g->app_len) == 0;
    bool counters = m->key_len == g->stats_key_len && memcmp(m->key, g->stats_key, m->key_len) == 0;
    if (!task && !counters)
        return 0;
    /* A task is the view's at its home partition only (view.c): a copy left
     * elsewhere, or a tombstone of a key moved away by a growth, is not it. */
    if (task && mc_key_partition(m->key, m->key_len, g->n_partitions) != m->partition)
        return 0;
    char mapkey[1100];
    size_t len = m->key_len;
    if (len + 16 > sizeof mapkey)
        return 0;
    memcpy(mapkey, m->key, len);
    if (counters)
        len += (size_t)snprintf(mapkey + len, 16, "%c%d", '\0', (int)m->partition);
    uint32_t hash = mc_keymap_hash(mapkey, len);
    latest *l = (latest *)mc_keymap_find(g->keys, mapkey, len, hash);
    if (l) {
        mc_keymap_remove(g->keys, &l->node);
        free_latest(&l->node, NULL);
    }
    if (!m->payload)
        return 0;
    l = calloc(1, sizeof *l + len);
    if (!l || !(l->value = malloc(m->len ? m->len : 1))) {
        free(l);
        return EXIT_KAFKA;
    }
    memcpy(l->key, mapkey, len);
    memcpy(l->value, m->payload, m->len);
    l->len = m->len;
    l->partition = m->partition;
    l->node.key_len = (uint32_t)len;
    l->node.hash = hash;
    mc_keymap_insert(g->keys, &l->node);
    return 0;
}

typedef struct folding {
    gathering *g;
    mc_view_selection *sel;
    mc_view_task **tasks; /* decoded, kept until the answer is printed */
    size_t n, cap;
    uint64_t hour[3];
    size_t unreadable;
    int64_t now;
} folding;

static void fold_one(mc_keynode *n, void *arg)
{
    folding *f = arg;
    latest *l = (latest *)n;
    const char *why = NULL;
    if (l->key[0] == '/') {
        /* The counters' map key has the partition after a NUL. */
        size_t key_len = strlen(l->key);
        mc_view_app_stats *a = mc_view_app_stats_decode(l->key, key_len, l->value, l->len, &why);
        uint64_t one[3];
        if (a && mc_view_app_stats_sum(a, f->now, one))
            for (int k = 0; k < 3; k++)
                f->hour[k] += one[k];
        f->unreadable += !a;
        free(a);
        return;
    }
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 1024;
        mc_view_task **grown = realloc(f->tasks, cap * sizeof *grown);
        if (!grown) {
            f->unreadable++;
            return;
        }
        f->tasks = grown;
        f->cap = cap;
    }
    mc_view_task *t = mc_view_task_decode(l->key, l->node.key_len, l->value, l->len, &why);
    if (!t) {
        f->unreadable++;
        return;
    }
    f->tasks[f->n++] = t;
    int64_t position =
        l->partition >= 0 && l->partition < f->g->n_partitions ? f->g->positions[l->partition] : -1;
    mc_view_selection_offer(f->sel, t, position);
}

static void print_list(const json_t *j)
{
    size_t i;
    json_t *t;
    printf("%-24s %-16s %-8s %s\n", "DUE", "STATE", "ATTEMPT", "KEY");
    json_array_foreach(json_object_get(j, "tasks"), i, t)
    {
        char due[32];
        ctl_fmt_time(json_integer_value(json_object_get(t, "dueAt")), due);
        printf("%-24s %-16s %-8" JSON_INTEGER_FORMAT " %s\n", due,
               json_string_value(json_object_get(t, "state")),
               json_integer_value(json_object_get(t, "attempt")),
               json_string_value(json_object_get(t, "key")));
    }
    const char *next = json_string_value(json_object_get(j, "next"));
    if (next)
        printf("more: --after '%s'\n", next);
}

static void print_stats(const json_t *j)
{
    const char *name;
    json_t *v;
    json_object_foreach(json_object_get(j, "tasks"), name, v)
        printf("%-16s %" JSON_INTEGER_FORMAT "\n", name, json_integer_value(v));
    json_t *h = json_object_get(j, "lastHour");
    printf("last hour: %" JSON_INTEGER_FORMAT " calls, %" JSON_INTEGER_FORMAT
           " failures, %" JSON_INTEGER_FORMAT " dead letters\n",
           json_integer_value(json_object_get(h, "calls")),
           json_integer_value(json_object_get(h, "failures")),
           json_integer_value(json_object_get(h, "deadLetters")));
}

/* The filter of task list's flags. 0, or the exit status after a line. */
static int list_filter(const ctl_opts *o, mc_view_filter *f)
{
    *f = mc_view_filter_all(o->app);
    if (o->state) {
        char *copy = strdup(o->state);
        for (char *save = NULL, *s = copy ? strtok_r(copy, ",", &save) : NULL; s;
             s = strtok_r(NULL, ",", &save)) {
            int st = mc_view_state_parse(s);
            if (st < 0) {
                int rc = ctl_fail(EXIT_USAGE,
                                  "--state '%s' is not a state (accepted, pendingStore, "
                                  "pendingWheel, held, calling, retrying, cancelRequested, "
                                  "succeeded, failed, dead, cancelled, dropped, rejected, unknown)",
                                  s);
                free(copy);
                return rc;
            }
            f->states |= 1u << st;
        }
        free(copy);
    }
    if (o->due_from && !ctl_parse_due(o->due_from, &f->due_from))
        return ctl_fail(EXIT_USAGE,
                        "--due-from '%s' is not a time (1h from now, epoch ms or RFC 3339)",
                        o->due_from);
    if (o->due_to && !ctl_parse_due(o->due_to, &f->due_to))
        return ctl_fail(EXIT_USAGE,
                        "--due-to '%s' is not a time (1h from now, epoch ms or RFC 3339)",
                        o->due_to);
    if (o->count) {
        int64_t n;
        if (!mc_parse_int64(o->count, 1, MC_VIEW_LIST_MAX, &n))
            return ctl_fail(EXIT_USAGE, "-n must be 1 to %d, not '%s'", MC_VIEW_LIST_MAX, o->count);
        f->limit = (uint32_t)n;
    }
    if (o->after && !mc_view_cursor_parse(o->after, f))
        return ctl_fail(EXIT_USAGE, "--after must be the 'more:' of the page before (DUE:ID)");
    return 0;
}

int ctl_cmd_task_list(ctl *c, bool stats)
{
    const ctl_opts *o = &c->o;
    char why[256];
    if (!o->app || !ctl_id_ok("--app", o->app, why, sizeof why) || strchr(o->app, '/'))
        return ctl_fail(EXIT_USAGE, "task %s needs --app APP (without '/')",
                        stats ? "stats" : "list");
    mc_view_filter filter;
    int rc = list_filter(o, &filter);
    if (rc)
        return rc;
    char err[512], topic[300];
    mc_topic_name(&c->cfg, "views", topic, sizeof topic);
    rd_kafka_t *rk = ctl_new_consumer(c, NULL, err, sizeof err);
    if (!rk)
        return ctl_fail(EXIT_KAFKA, "%s", err);
    gathering g = {.app = o->app, .app_len = strlen(o->app)};
    g.stats_key_len = mc_view_stats_key(o->app, strlen(o->app), g.stats_key);
    g.keys = mc_keymap_new(LATEST_KEY_OFFSET);
    int n = ctl_topic_partitions(c, rk, topic, err, sizeof err);
    part_scan *all = n > 0 ? calloc((size_t)n, sizeof *all) : NULL;
    g.positions = n > 0 ? malloc((size_t)n * sizeof *g.positions) : NULL;
    g.n_partitions = n;
    mc_view_selection sel = {0};
    folding fo = {.g = &g, .sel = &sel, .now = mc_now_ms()};
    if (n <= 0 || !all || !g.keys || !g.positions ||
        ctl_plan_scan(rk, topic, n, -1, all, err, sizeof err) != 0) {
        rc = ctl_fail(EXIT_KAFKA, "%s", n > 0 ? (all && g.keys ? err : "out of memory") : err);
        goto out;
    }
    for (int i = 0; i < n; i++)
        g.positions[i] = -1;
    rc = ctl_scan(c, rk, topic, all, (size_t)n, false, gather_one, &g, NULL);
    if (rc != 0)
        goto out;
    if (c->stopping) {
        rc = ctl_fail(EXIT_INTERRUPTED, "interrupted before the end of %s", topic);
        goto out;
    }
    mc_view_selection_init(&sel, &filter, fo.now, stats);
    mc_keymap_each(g.keys, fold_one, &fo);
    if (fo.unreadable)
        fprintf(stderr, "mooncakectl: %zu unreadable records in %s skipped\n", fo.unreadable,
                topic);
    json_t *j;
    if (stats) {
        j = json_pack("{s:s,s:o,s:{s:I,s:I,s:I}}", "appId", o->app, "tasks",
                      mc_view_selection_counts_json(&sel), "lastHour", "calls",
                      (json_int_t)fo.hour[0], "failures", (json_int_t)fo.hour[1], "deadLetters",
                      (json_int_t)fo.hour[2]);
    } else {
        json_t *one = mc_view_selection_list_json(&sel);
        json_t *answers[] = {one};
        j = mc_view_list_merge(answers, 1, filter.limit);
        json_decref(one);
    }
    if (!j) {
        rc = ctl_fail(EXIT_KAFKA, "out of memory");
    } else if (o->json) {
        ctl_print_json(j);
    } else {
        if (stats)
            print_stats(j);
        else
            print_list(j);
        json_decref(j);
    }
out:
    mc_view_selection_free(&sel);
    for (size_t i = 0; i < fo.n; i++)
        mc_view_task_free(fo.tasks[i]);
    free(fo.tasks);
    if (g.keys) {
        mc_keymap_drain(g.keys, free_latest, NULL);
        mc_keymap_free(g.keys);
    }
    free(g.positions);
    free(all);
    rd_kafka_destroy(rk);
    return rc;
}
