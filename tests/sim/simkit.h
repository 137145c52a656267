/* Helpers for tests that drive processors through tests/sim: a
 * configuration from flags, records of every mooncake topic made from a
 * few fields, and what a topic holds, decoded. Header-only (static), so
 * each test program takes what it uses. */
#ifndef MOONCAKE_SIMKIT_H
#define MOONCAKE_SIMKIT_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "config.h"
#include "layout.h"
#include "sim.h"
#include "wheel_topic.h"

#define KIT_PREFIX "t."
/* Room for any task key (task_rules.h's MC_MAX_TASK_KEY_LEN), and a cut one's bytes:
 * mc_task_key returns the whole length. */
#define KIT_KEY_MAX 2048

/* A configuration as `mooncake <role> <flags...>` would read it (NULL
 * terminated flags), with the test prefix; aborts on a bad flag. */
static inline mc_config *kit_config(const char *role, const char *const *flags)
{
    static char *envp[] = {NULL};
    char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)role;
    argv[argc++] = (char *)"--topic-prefix=" KIT_PREFIX;
    argv[argc++] = (char *)"--log-level=error";
    for (; flags && *flags && argc < 63; flags++)
        argv[argc++] = (char *)*flags;
    argv[argc] = NULL;
    mc_config *cfg = calloc(1, sizeof *cfg);
    char err[512];
    if (!cfg || mc_config_load(cfg, argc, argv, envp, err, sizeof err) != 0) {
        fprintf(stderr, "kit_config: %s\n", err);
        abort();
    }
    return cfg;
}

static inline void kit_config_free(mc_config *cfg)
{
    mc_config_free(cfg);
    free(cfg);
}

static inline const char *kit_topic(const char *suffix)
{
    static char names[8][64];
    static int next;
    char *n = names[next++ % 8];
    snprintf(n, 64, KIT_PREFIX "%s", suffix);
    return n;
}

/* A task of app "a", id `id`, due at due, calling url. */
static inline mc_task kit_task(const char *id, int64_t due, const char *url)
{
    mc_task t = {.app_id = "a",
                 .task_id = id,
                 .due_at = due,
                 .callback = {.url = url, .method = "POST", .timeout_ms = 5000},
                 .attempt = 1,
                 .created_at = due - 1000};
    return t;
}

static inline size_t kit_key(const char *id, char *buf, size_t len)
{
    return mc_task_key("a", id, buf, len);
}

/* Appends to `wheel` what the router writes for a Submit with this version
 * (far: with the route header). Returns its offset. */
static inline int64_t kit_wheel_submit(sim_kafka *k, int32_t partition, int64_t version,
                                       const mc_task *t, bool far)
{
    mc_wheel_entry e = {.version = version, .command = {.kind = MC_CMD_SUBMIT, .submit = *t}};
    mc_buf b = {0};
    mc_encode_wheel_entry(&e, &b);
    char key[KIT_KEY_MAX];
    size_t kl = mc_task_key(t->app_id, t->task_id, key, sizeof key);
    mc_header h = {MC_ROUTE_HEADER, MC_ROUTE_STORE, sizeof MC_ROUTE_STORE - 1};
    int64_t off =
        sim_append(k, kit_topic("wheel"), partition, key, kl, b.data, b.len, far ? &h : NULL, far);
    mc_buf_free(&b);
    return off;
}

/* Appends to `wheel` the router's Cancel of a/id with this version. */
static inline int64_t kit_wheel_cancel(sim_kafka *k, int32_t partition, int64_t version,
                                       const char *id, int64_t now)
{
    mc_wheel_entry e = {.version = version,
                        .command = {.kind = MC_CMD_CANCEL,
                                    .cancel = {.app_id = "a", .task_id = id, .requested_at = now}}};
    mc_buf b = {0};
    mc_encode_wheel_entry(&e, &b);
    char key[KIT_KEY_MAX];
    size_t kl = kit_key(id, key, sizeof key);
    int64_t off = sim_append(k, kit_topic("wheel"), partition, key, kl, b.data, b.len, NULL, 0);
    mc_buf_free(&b);
    return off;
}

/* Appends a client Command to `tasks` (the router's input). */
static inline int64_t kit_tasks_submit(sim_kafka *k, int32_t partition, const mc_task *t)
{
    mc_command c = {.kind = MC_CMD_SUBMIT, .submit = *t};
    mc_buf b = {0};
    mc_encode_command(&c, &b);
    char key[KIT_KEY_MAX];
    size_t kl = mc_task_key(t->app_id, t->task_id, key, sizeof key);
    int64_t off = sim_append(k, kit_topic("tasks"), partition, key, kl, b.data, b.len, NULL, 0);
    mc_buf_free(&b);
    return off;
}

static inline int64_t kit_tasks_cancel(sim_kafka *k, int32_t partition, const char *id, int64_t now)
{
    mc_command c = {.kind = MC_CMD_CANCEL,
                    .cancel = {.app_id = "a", .task_id = id, .requested_at = now}};
    mc_buf b = {0};
    mc_encode_command(&c, &b);
    char key[KIT_KEY_MAX];
    size_t kl = kit_key(id, key, sizeof key);
    int64_t off = sim_append(k, kit_topic("tasks"), partition, key, kl, b.data, b.len, NULL, 0);
    mc_buf_free(&b);
    return off;
}

/* Appends to `ready` what the wheel fires: task t with this version. */
static inline int64_t kit_ready_submit(sim_kafka *k, int32_t partition, int64_t version,
                                       const mc_task *t)
{
    mc_wheel_entry e = {.version = version, .command = {.kind = MC_CMD_SUBMIT, .submit = *t}};
    mc_buf b = {0};
    mc_encode_wheel_entry(&e, &b);
    char key[KIT_KEY_MAX];
    size_t kl = mc_task_key(t->app_id, t->task_id, key, sizeof key);
    int64_t off = sim_append(k, kit_topic("ready"), partition, key, kl, b.data, b.len, NULL, 0);
    mc_buf_free(&b);
    return off;
}

/* Appends to `ready` the wheel's recall of a/id: versions below version. */
static inline int64_t kit_ready_recall(sim_kafka *k, int32_t partition, int64_t version,
                                       const char *id)
{
    mc_wheel_entry e = {.version = version,
                        .command = {.kind = MC_CMD_CANCEL,
                                    .cancel = {.app_id = "a", .task_id = id, .requested_at = 1}}};
    mc_buf b = {0};
    mc_encode_wheel_entry(&e, &b);
    char key[KIT_KEY_MAX];
    size_t kl = kit_key(id, key, sizeof key);
    int64_t off = sim_append(k, kit_topic("ready"), partition, key, kl, b.data, b.len, NULL, 0);
    mc_buf_free(&b);
    return off;
}

/* The Results of a topic partition, decoded: (task id, attempt, outcome). */
typedef struct kit_result {
    char id[128];
    int32_t attempt;
    mc_outcome outcome;
    char error[256];
} kit_result;

static inline size_t kit_results(sim_kafka *k, int32_t partition, kit_result **out)
{
    sim_rec *r;
    size_t n = sim_read(k, kit_topic("results"), partition, &r);
    kit_result *v = calloc(n ? n : 1, sizeof *v);
    mc_arena *a = mc_arena_new();
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        mc_result res;
        mc_arena_reset(a);
        if (mc_decode_result(r[i].value, r[i].value_len, a, &res, NULL, 0) != MC_CODEC_OK)
            continue;
        snprintf(v[m].id, sizeof v[m].id, "%s", res.task_id);
        v[m].attempt = res.attempt;
        v[m].outcome = res.outcome;
        snprintf(v[m].error, sizeof v[m].error, "%s", res.error);
        m++;
    }
    mc_arena_free(a);
    free(r);
    *out = v;
    return m;
}

/* How many records of a topic partition (read_committed) have a key. */
static inline size_t kit_count_keyed(sim_kafka *k, const char *suffix, int32_t partition)
{
    sim_rec *r;
    size_t n = sim_read(k, kit_topic(suffix), partition, &r), c = 0;
    for (size_t i = 0; i < n; i++)
        c += r[i].key != NULL;
    free(r);
    return c;
}

/* One record of `ready` (or any WheelEntry topic), decoded. */
typedef struct kit_entry {
    int64_t offset;
    bool marker; /* a null-key record */
    bool cancel;
    int64_t version;
    char id[128];
    int64_t due;
    int32_t attempt;
    char url[256];
} kit_entry;

/* The committed WheelEntry records of a topic partition, decoded; returns
 * the count and a malloc'd array in *out. */
static inline size_t kit_entries(sim_kafka *k, const char *suffix, int32_t partition,
                                 kit_entry **out)
{
    sim_rec *r;
    size_t n = sim_read(k, kit_topic(suffix), partition, &r);
    kit_entry *v = calloc(n ? n : 1, sizeof *v);
    mc_arena *a = mc_arena_new();
    for (size_t i = 0; i < n; i++) {
        v[i].offset = r[i].offset;
        if (!r[i].key || !r[i].value) {
            v[i].marker = true;
            continue;
        }
        mc_wheel_entry e;
        mc_arena_reset(a);
        if (mc_decode_wheel_entry(r[i].value, r[i].value_len, a, &e, NULL, 0) != MC_CODEC_OK) {
            v[i].marker = true;
            continue;
        }
        v[i].version = e.version;
        v[i].cancel = e.command.kind == MC_CMD_CANCEL;
        const char *id = v[i].cancel ? e.command.cancel.task_id : e.command.submit.task_id;
        snprintf(v[i].id, sizeof v[i].id, "%s", id);
        if (!v[i].cancel) {
            v[i].due = e.command.submit.due_at;
            v[i].attempt = e.command.submit.attempt;
            snprintf(v[i].url, sizeof v[i].url, "%s", e.command.submit.callback.url);
        }
    }
    mc_arena_free(a);
    free(r);
    *out = v;
    return n;
}

/* How many Submits of `ready` (all partitions) name task id with this
 * version (any version when version < 0). */
static inline size_t kit_fired(sim_kafka *k, int32_t partitions, const char *id, int64_t version)
{
    size_t count = 0;
    for (int32_t p = 0; p < partitions; p++) {
        kit_entry *e;
        size_t n = kit_entries(k, "ready", p, &e);
        for (size_t i = 0; i < n; i++)
            if (!e[i].marker && !e[i].cancel && strcmp(e[i].id, id) == 0 &&
                (version < 0 || e[i].version == version))
                count++;
        free(e);
    }
    return count;
}

/* Whether `ready` holds a recall (Cancel) of task id. */
static inline size_t kit_recalls(sim_kafka *k, int32_t partitions, const char *id)
{
    size_t count = 0;
    for (int32_t p = 0; p < partitions; p++) {
        kit_entry *e;
        size_t n = kit_entries(k, "ready", p, &e);
        for (size_t i = 0; i < n; i++)
            if (!e[i].marker && e[i].cancel && strcmp(e[i].id, id) == 0)
                count++;
        free(e);
    }
    return count;
}

/* Whether group's committed metadata on wheel partition q contains needle. */
static inline bool kit_committed_says(sim_kafka *k, const char *group, int32_t q,
                                      const char *needle)
{
    char g[64];
    snprintf(g, sizeof g, KIT_PREFIX "%s", group);
    const char *md;
    sim_committed(k, g, kit_topic("wheel"), q, &md);
    return md && strstr(md, needle) != NULL;
}

/* Writes the layout record, as mooncakectl partitions grow does. */
static inline void kit_set_layout(sim_kafka *k, const mc_layout *l)
{
    size_t n = mc_layout_format(l, NULL, 0);
    char *v = malloc(n + 1);
    if (!v)
        abort();
    mc_layout_format(l, v, n + 1);
    sim_append(k, kit_topic("layout"), 0, MC_LAYOUT_KEY, sizeof MC_LAYOUT_KEY - 1, v, n, NULL, 0);
    free(v);
}

/* The split mooncakectl records right after tasks grew: where each of its
 * old partitions ends. Owned by the caller (free). */
static inline int64_t *kit_split(sim_kafka *k, int32_t old)
{
    int64_t *split = calloc((size_t)old, sizeof *split);
    if (!split)
        abort();
    for (int32_t q = 0; q < old; q++)
        split[q] = sim_end_offset(k, kit_topic("tasks"), q);
    return split;
}

#endif
