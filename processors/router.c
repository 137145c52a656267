/* The router: first stage after clients. It reads commands from `tasks`,
 * validates them, stamps each with its version (its offset in `tasks`, which
 * grows per key because a key always maps to one partition) and sends it on:
 *   Submit due within the horizon -> wheel (WheelEntry{version, Submit})
 *   Submit due later               -> wheel, with the header mooncake-route: store
 *   Cancel                         -> wheel (WheelEntry{version, Cancel})
 *   anything invalid               -> dead (DeadLetter with the raw bytes and a reason)
 * Every valid command goes to the one `wheel` partition of its key, so the
 * store and the wheel both read all of a key's versions in one order: the
 * store keeps the far ones (it is the only writer of its changelog, so no
 * write of ours can race with its hand-offs), the wheel fires the near ones,
 * and each drops what a newer version or a cancel made obsolete. Routing far
 * tasks through the store topic directly would let a hand-off tombstone
 * written by the store land after a newer version written by us, and
 * compaction would then delete the task. See README "Design".
 * A key's home is the `tasks` partition murmur2(key) picks (the Java
 * client's default, and every mooncake producer's). A command found on
 * another partition was written with another partitioner (librdkafka's
 * default CRC32, say): it is copied, unchanged, to its home partition of
 * `tasks` and routed from there, so a Cancel always meets its Submit and
 * all versions of a key are offsets in one partition.
 * It keeps no state: the runner commits outputs and input offsets in one
 * transaction, so each command is routed exactly once. */
#include "router.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "kafka.h"
#include "task_rules.h"
#include "wheel_topic.h"

typedef struct router {
    mc_arena *arena;
    mc_buf out;
    mc_output *wheel, *tasks;
    mc_codec_options codec;
    int64_t horizon_ms, max_due_ms;
    mc_codec_writer *writers; /* other versions of Command we read */
    size_t n_writers;
    int32_t tasks_partitions; /* from metadata at each assignment */
    int64_t rehome_warned_at; /* one warning a minute is enough */
    mc_counter *to_wheel, *to_store, *cancels, *dead_letters, *rehomed;
} router;

void mc_command_writers_free(mc_codec_writer *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mc_writer_schema_free((mc_writer_schema *)w[i].schema);
    free(w);
}

int mc_command_writers_load(const char *spec, mc_codec_writer **out, size_t *n, char *err,
                            size_t errlen)
{
    *out = NULL;
    *n = 0;
    if (!spec || !*spec)
        return 0;
    size_t cap = 1;
    for (const char *p = spec; *p; p++)
        cap += *p == ',';
    mc_codec_writer *w = calloc(cap, sizeof *w);
    char *copy = strdup(spec);
    if (!w || !copy) {
        free(w);
        free(copy);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t count = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        int32_t id = -1;
        char *eq = strchr(tok, '=');
        if (eq) {
            *eq = '\0';
            int64_t v;
            if (!mc_parse_int64(tok, 0, INT32_MAX, &v)) {
                snprintf(err, errlen,
                         "--command-writer-schemas: '%s' is not a Confluent schema id "
                         "(ID=FILE)",
                         tok);
                goto fail;
            }
            id = (int32_t)v;
            tok = eq + 1;
        }
        char why[600];
        char *text = mc_config_read_file(tok, "--command-writer-schemas", NULL, err, errlen);
        if (!text)
            goto fail;
        mc_writer_schema *ws = mc_writer_schema_new(text, MC_SCHEMA_COMMAND, why, sizeof why);
        free(text);
        if (!ws) {
            snprintf(err, errlen, "--command-writer-schemas: %s: %s", tok, why);
            goto fail;
        }
        w[count++] = (mc_codec_writer){ws, id};
    }
    free(copy);
    *out = w;
    *n = count;
    return 0;
fail:
    free(copy);
    mc_command_writers_free(w, count);
    return -1;
}

static void *router_create(mc_ctx *ctx, const void *arg, char *err, size_t errlen)
{
    (void)arg;
    const mc_config *cfg = mc_ctx_config(ctx);
    router *r = calloc(1, sizeof *r);
    if (!r || !(r->arena = mc_arena_new())) {
        free(r);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->wheel = mc_ctx_output(ctx, "wheel");
    r->tasks = mc_ctx_output(ctx, "tasks");
    if (!r->wheel || !r->tasks) {
        snprintf(err, errlen, "cannot create output topic handles");
        mc_arena_free(r->arena);
        free(r);
        return NULL;
    }
    r->codec.confluent_command_ids = cfg->confluent_ids;
    r->codec.n_confluent_command_ids = cfg->n_confluent_ids;
    if (mc_command_writers_load(cfg->command_writer_schemas, &r->writers, &r->n_writers, err,
                                errlen) != 0) {
        mc_arena_free(r->arena);
        free(r);
        return NULL;
    }
    r->codec.command_writers = r->writers;
    r->codec.n_command_writers = r->n_writers;
    r->horizon_ms = cfg->horizon_ms;
    r->max_due_ms = cfg->max_due_ms;
    mc_metrics *m = mc_ctx_metrics(ctx);
    r->to_wheel = mc_metrics_counter(m, "mooncake_router_routed_total",
                                     "Commands routed, by destination", "destination=\"wheel\"");
    r->to_store = mc_metrics_counter(m, "mooncake_router_routed_total",
                                     "Commands routed, by destination", "destination=\"store\"");
    r->cancels = mc_metrics_counter(m, "mooncake_router_routed_total",
                                    "Commands routed, by destination", "destination=\"cancel\"");
    r->dead_letters = mc_metrics_counter(m, "mooncake_router_routed_total",
                                         "Commands routed, by destination", "destination=\"dead\"");
    r->rehomed = mc_metrics_counter(m, "mooncake_router_routed_total",
                                    "Commands routed, by destination", "destination=\"rehomed\"");
    return r;
}

/* The partition count decides every key's home; it can grow while we run
 * (a rebalance follows), so it is read again at each assignment. */
static int router_assign(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx)
{
    router *r = self;
    if (parts->cnt == 0)
        return 0;
    char err[512];
    int n = mc_ctx_partition_count(ctx, "tasks", err, sizeof err);
    if (n <= 0) {
        mc_log(mc_ctx_logger(ctx), MC_LOG_ERROR, "cannot read the partition count", "error", err,
               (const char *)NULL);
        return -1;
    }
    r->tasks_partitions = n;
    return 0;
}

/* The key's home partition; before any assignment told the partition count
 * (which cannot happen for a record that was consumed) the record's own. */
static int32_t home_partition(const router *r, const mc_record *m)
{
    if (r->tasks_partitions <= 0)
        return m->partition;
    return mc_key_partition(m->key, m->key_len, r->tasks_partitions);
}

/* A command on the wrong partition of `tasks` goes home: copied as it is,
 * in this transaction, to the partition its key belongs to. */
static int rehome(router *r, const mc_record *m, int32_t home, mc_ctx *ctx)
{
    int64_t now = mc_ctx_now_ms(ctx);
    if (now - r->rehome_warned_at >= 60000) {
        r->rehome_warned_at = now;
        char key[256], from[16], to[16];
        snprintf(key, sizeof key, "%.*s", (int)(m->key_len < 200 ? m->key_len : 200),
                 (const char *)m->key);
        snprintf(from, sizeof from, "%" PRId32, m->partition);
        snprintf(to, sizeof to, "%" PRId32, home);
        mc_log(mc_ctx_logger(ctx), MC_LOG_WARN,
               "command on the wrong partition of tasks, moved to its home (the producer "
               "should use partitioner=murmur2_random, the Java client's default; at most one "
               "such line a minute)",
               "key", key, "partition", from, "home", to, (const char *)NULL);
    }
    mc_counter_add(r->rehomed, 1);
    return mc_ctx_forward(ctx, r->tasks, home, m->key, m->key_len, m->value, m->value_len);
}

static void router_destroy(void *self)
{
    router *r = self;
    mc_arena_free(r->arena);
    mc_command_writers_free(r->writers, r->n_writers);
    mc_buf_free(&r->out);
    free(r);
}

/* The record key must be exactly app_id/task_id: the key picks the partition,
 * and a cancel must land where its submit did. */
static bool key_matches(const mc_record *m, const char *app_id, const char *task_id, char *why,
                        size_t whylen)
{
    char key[1024];
    size_t n = mc_task_key(app_id, task_id, key, sizeof key);
    if (n >= sizeof key) {
        snprintf(why, whylen, "app_id/task_id is longer than %zu bytes", sizeof key - 1);
        return false;
    }
    if (!m->key || m->key_len != n || memcmp(m->key, key, n) != 0) {
        snprintf(why, whylen, "record key '%.*s' is not app_id/task_id '%.200s'",
                 m->key ? (int)(m->key_len > 200 ? 200 : m->key_len) : 6,
                 m->key ? (const char *)m->key : "(none)", key);
        return false;
    }
    return true;
}

/* One debug line per routed command, with its key, version and where it
 * went; formatted only when debug logging is on. */
static void log_routed(mc_ctx *ctx, const mc_record *m, const char *what)
{
    const mc_logger *lg = mc_ctx_logger(ctx);
    if (lg->level > MC_LOG_DEBUG)
        return;
    char key[1024], version[24];
    snprintf(key, sizeof key, "%.*s", (int)(m->key_len < 1000 ? m->key_len : 1000),
             (const char *)m->key);
    snprintf(version, sizeof version, "%" PRId64, m->offset);
    mc_log(lg, MC_LOG_DEBUG, "routed", "key", key, "version", version, "as", what,
           (const char *)NULL);
}

/* Bad input goes to `dead` with the reason; the partition moves on. */
static int route_dead(router *r, const mc_record *m, const char *reason, const mc_task *task,
                      mc_ctx *ctx)
{
    mc_counter_add(r->dead_letters, 1);
    return mc_ctx_dead_letter(ctx, m, reason, task);
}

static int router_process(void *self, const mc_record *m, mc_ctx *ctx)
{
    router *r = self;
    char why[512];
    mc_command cmd;
    mc_arena_reset(r->arena);
    if (!m->value || m->value_len == 0)
        return route_dead(r, m, "empty value: a command is an Avro Submit or Cancel", NULL, ctx);
    char detail[256] = "";
    mc_codec_err e =
        mc_decode_command(&r->codec, m->value, m->value_len, r->arena, &cmd, detail, sizeof detail);
    if (e != MC_CODEC_OK) {
        snprintf(why, sizeof why, "undecodable command: %s%s%s", mc_codec_strerror(e),
                 detail[0] ? ": " : "", detail);
        return route_dead(r, m, why, NULL, ctx);
    }

    mc_wheel_entry w = {.version = m->offset, .command = cmd};
    if (cmd.kind == MC_CMD_CANCEL) {
        const mc_cancel *c = &cmd.cancel;
        if (!mc_task_ids_ok(c->app_id, c->task_id, &mc_task_avro_names, why, sizeof why) ||
            !key_matches(m, c->app_id, c->task_id, why, sizeof why))
            return route_dead(r, m, why, NULL, ctx);
        int32_t home = home_partition(r, m);
        if (home != m->partition)
            return rehome(r, m, home, ctx);
        mc_buf_reset(&r->out);
        if (mc_encode_wheel_entry(&w, &r->out) != 0)
            return -1;
        mc_counter_add(r->cancels, 1);
        log_routed(ctx, m, "cancel");
        /* The store and the wheel both read it: each drops older versions. */
        return mc_ctx_forward(ctx, r->wheel, m->partition, m->key, m->key_len, r->out.data,
                              r->out.len);
    }

    const mc_task *t = &cmd.submit;
    int64_t now = mc_ctx_now_ms(ctx);
    if (!mc_task_ok(t, now, r->max_due_ms, &mc_task_avro_names, why, sizeof why) ||
        !key_matches(m, t->app_id, t->task_id, why, sizeof why))
        return route_dead(r, m, why, t, ctx);
    int32_t home = home_partition(r, m);
    if (home != m->partition)
        return rehome(r, m, home, ctx);
    mc_buf_reset(&r->out);
    if (mc_encode_wheel_entry(&w, &r->out) != 0)
        return -1;
    if (t->due_at <= now + r->horizon_ms) {
        mc_counter_add(r->to_wheel, 1);
        log_routed(ctx, m, "near");
        return mc_ctx_forward(ctx, r->wheel, m->partition, m->key, m->key_len, r->out.data,
                              r->out.len);
    }
    mc_counter_add(r->to_store, 1);
    log_routed(ctx, m, "far");
    return mc_ctx_forward_header(ctx, r->wheel, m->partition, m->key, m->key_len, r->out.data,
                                 r->out.len, MC_ROUTE_HEADER, MC_ROUTE_STORE,
                                 sizeof MC_ROUTE_STORE - 1);
}

static const char *const router_inputs[] = {"tasks", NULL};

const mc_processor mc_router_processor = {
    .name = "router",
    .input_topics = router_inputs,
    .create = router_create,
    .process = router_process,
    .on_assign = router_assign,
    .destroy = router_destroy,
};
