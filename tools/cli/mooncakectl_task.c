/* mooncakectl task get: one task's state and story from the view's
 * changelog, <prefix>views (read_committed, the key's partition to the end
 * seen at start, the latest value of the key): what the view had committed,
 * up to a second behind GET /api/task, and without a running mooncake. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "kafka.h"
#include "mooncakectl.h"
#include "view_task.h"

typedef struct found {
    const char *key;
    size_t key_len;
    uint8_t *value; /* the latest value of key; NULL: none, or a tombstone */
    size_t value_len;
    int64_t wheel_position;
} found;

static int take(void *arg, const rd_kafka_message_t *m)
{
    found *f = arg;
    if (!m->key)
        return 0;
    if (m->key_len == sizeof MC_VIEW_POSITION_KEY - 1 &&
        memcmp(m->key, MC_VIEW_POSITION_KEY, m->key_len) == 0) {
        char text[24] = "";
        if (m->payload && m->len < sizeof text)
            memcpy(text, m->payload, m->len);
        f->wheel_position = strtoll(text, NULL, 10);
        return 0;
    }
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
    if (cb)
        printf("%-14s %s %s\n", "callback", json_string_value(json_object_get(cb, "method")),
               json_string_value(json_object_get(cb, "url")));
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
