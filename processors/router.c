/* The router: first stage after clients. It reads commands from `tasks`,
 * validates them, stamps each with its version (its offset in `tasks`, which
 * grows per key because a key always maps to one partition) and sends it on:
 *   Submit due within the lead     -> ready (fired here, the wheel's work) and
 *                                     wheel, with the header mooncake-fired-by-router
 *   Submit due within the horizon -> wheel (WheelEntry{version, Submit})
 *   Submit due later               -> wheel, with the header mooncake-route: store
 *   Cancel                         -> wheel (WheelEntry{version, Cancel}) and
 *                                     ready (the same: a recall)
 *   Submit of a key due soon       -> also ready, a recall (see below)
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
 * It keeps no state but the layout, and a memory of recent Submits that is
 * safe to lose (below): the runner commits outputs and input offsets in one
 * transaction, so each command is routed exactly once.
 *
 * Firing what is due now. A Submit due within the wheel's lead would cross
 * two transactions (ours, the wheel's) before the executor sees it; we fire
 * it to `ready` ourselves instead, in our transaction, and the wheel, which
 * still reads it from `wheel`, takes it as fired: it raises the key's floor,
 * drops or recalls older versions and keeps a recall entry until it is due,
 * as if it had fired it (wheel.c). That is the wheel's own decision made
 * early, because a command fresh from `tasks` is always its key's newest
 * version: its version is its offset, later than every command of the key
 * before it, and every next attempt keeps an older command's version. A
 * command routed with a shifted version (written before a growth) goes the
 * usual way. The `ready` record carries, as the wheel's fires do, a
 * position below which no record can make a next attempt of its call
 * stale: the wheel record's offset is not known until it is written, so it
 * is where `wheel` ended a moment before (asked at most WHEEL_END_MAX_AGE_MS
 * ago), which can only be lower, and a lower one only holds the wheel's
 * committed offset back further.
 *
 * Recalling at once. A Cancel also goes to `ready`, as the recall the wheel
 * would write once it read the Cancel: the executor drops what it holds of
 * the key below the Cancel's version (a task the wheel fired early, waiting
 * for its due time), so a cancel reaches a fired task in our one hop rather
 * than ours and the wheel's. It only adds: the wheel still recalls as
 * before, and a recall that finds nothing held does nothing. The version is
 * the Cancel's offset, newer than every version of the key it may recall,
 * so it voids exactly what the wheel's recall would (a Cancel routed with a
 * shifted version goes the usual way only, as for firing). A re-submit
 * recalls too, with its own version, when this router routed an older
 * version of the key lately, due soon (router_recent.h): the executor may
 * hold that one. Every Submit cannot, at the cost of a `ready` record and
 * an executor pass per task; a key not remembered waits for the wheel's
 * recall, a hop later.
 *
 * The layout (layout.h), read at each assignment and every two seconds,
 * decides every key's home, not the partition count of `tasks`: a
 * partition count that grew without `mooncakectl partitions grow` would
 * split keys between old and new homes, so the router stops routing (and
 * says why) until the layout matches. While a growth is under way it
 * stops too, after writing a layout marker to each of its partitions of
 * `wheel`: the point in each partition after which the wheel and the store
 * move the keys whose home changes. After the growth, a command found on
 * its home under the previous layout, below where that partition of tasks
 * ended when tasks grew (the layout's split), was written before the
 * growth: it goes to its new home with its version shifted below every
 * newer one. A stale client's command after the split goes home through
 * tasks instead. */
#include "router.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "kafka_targets.h"
#include "kafka.h"
#include "layout.h"
#include "part_table.h"
#include "router_recent.h"
#include "task_rules.h"
#include "writer_schemas.h"
#include "wheel_topic.h"

/* How often the layout is read again. */
#define LAYOUT_POLL_MS 2000
/* How old a partition's end of `wheel` may be when a fire uses it (it is
 * asked again at each layout read), and how long one ask may wait: it
 * happens inside the open transaction. */
#define WHEEL_END_MAX_AGE_MS 5000
#define WHEEL_END_TIMEOUT_MS 500
/* A re-submit recalls at once what the executor may hold of its key: a
 * version due within the lead (fired early, or about to be) plus this
 * margin, for a wheel that reads the re-submit a little late. */
#define RECALL_MARGIN_MS 1000

/* A partition of tasks this instance owns, and whether it has written the
 * layout marker of the growth under way to its partition of wheel. */
typedef struct owned {
    int32_t partition;
    int32_t marked_for;
    bool held;            /* a record was given back while routing stopped */
    int64_t wheel_end;    /* where its partition of wheel ended when asked; -1: not asked */
    int64_t wheel_end_at; /* when */
} owned;

typedef struct router {
    mc_arena *arena;
    mc_buf out;
    mc_output *wheel, *tasks, *ready;
    mc_codec_options codec;
    int64_t horizon_ms, max_due_ms;
    int64_t lead_ms;           /* a Submit due within this is fired here */
    bool fires_due;            /* --router-fires-due */
    int64_t end_warned_at;     /* asking where wheel ends failed: said once a minute */
    int64_t urgent_ms;         /* a Submit due within this is committed at once */
    mc_codec_writer *writers;  /* other versions of Command we read */
    mc_kafka_targets *targets; /* --target-topics */
    size_t n_writers;
    int32_t tasks_partitions; /* from metadata, at each assignment and layout read */
    mc_layout layout;         /* in force; partitions 0 before the first read */
    bool stopped;             /* routing stopped: a growth, or a mismatch */
    char tasks_topic[256];
    mc_part_table owned; /* owned, by partition of tasks */
    int64_t layout_read_at, stop_warned_at, read_warned_at;
    int64_t layout_end;       /* where the layout topic ended when last read; -1: read it */
    int64_t own_write_at;     /* where it ended when this router wrote the first layout; -1 */
    int64_t rehome_warned_at; /* one warning a minute is enough */
    mc_output *layout_out;
    mc_router_recent *recent; /* Submits routed lately (router_recent.h) */
    mc_counter *to_wheel, *to_store, *to_ready, *cancels, *dead_letters, *rehomed, *recalls;
} router;

/* The writer schemas load (files readable, each one resolvable to ours),
 * and the Kafka targets' allow-list parses. */
static int router_check_config(const mc_config *cfg, char *err, size_t errlen)
{
    mc_codec_writer *w;
    size_t n;
    if (mc_writer_schemas_load(cfg->command_writer_schemas, MC_SCHEMA_COMMAND,
                               "--command-writer-schemas", &w, &n, err, errlen) != 0)
        return -1;
    mc_writer_schemas_free(w, n);
    mc_kafka_targets *t =
        mc_kafka_targets_parse(cfg->kafka_targets, cfg->topic_prefix, err, errlen);
    mc_kafka_targets_free(t);
    return t ? 0 : -1;
}

static void router_destroy(void *self);

static void *router_create(mc_ctx *ctx, const void *arg, char *err, size_t errlen)
{
    (void)arg;
    const mc_config *cfg = mc_ctx_config(ctx);
    router *r = calloc(1, sizeof *r);
    if (!r || !(r->arena = mc_arena_new()) ||
        !(r->recent = mc_router_recent_new(mc_ctx_now_ms(ctx), MC_ROUTER_RECENT_MAX_KEYS))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    r->wheel = mc_ctx_output(ctx, "wheel");
    r->tasks = mc_ctx_output(ctx, "tasks");
    r->ready = mc_ctx_output(ctx, "ready");
    r->layout_out = mc_ctx_output(ctx, "layout");
    mc_topic_name(cfg, "tasks", r->tasks_topic, sizeof r->tasks_topic);
    if (!r->wheel || !r->tasks || !r->ready || !r->layout_out) {
        snprintf(err, errlen, "cannot create output topic handles");
        goto fail;
    }
    r->codec.confluent_command_ids = cfg->confluent_ids;
    r->codec.n_confluent_command_ids = cfg->n_confluent_ids;
    if (mc_writer_schemas_load(cfg->command_writer_schemas, MC_SCHEMA_COMMAND,
                               "--command-writer-schemas", &r->writers, &r->n_writers, err,
                               errlen) != 0)
        goto fail;
    r->codec.writers = r->writers;
    r->codec.n_writers = r->n_writers;
    if (!(r->targets = mc_kafka_targets_parse(cfg->kafka_targets, cfg->topic_prefix, err, errlen)))
        goto fail;
    r->horizon_ms = cfg->horizon_ms;
    r->max_due_ms = cfg->max_due_ms;
    r->urgent_ms = 2 * (int64_t)cfg->commit_interval_ms;
    r->lead_ms = cfg->wheel_lead_ms;
    r->fires_due = cfg->router_fires_due;
    r->end_warned_at = INT64_MIN / 2;
    mc_metrics *m = mc_ctx_metrics(ctx);
    r->to_wheel = mc_metrics_counter(m, "mooncake_router_routed_total",
                                     "Commands routed, by destination", "destination=\"wheel\"");
    r->to_store = mc_metrics_counter(m, "mooncake_router_routed_total",
                                     "Commands routed, by destination", "destination=\"store\"");
    r->to_ready = mc_metrics_counter(m, "mooncake_router_routed_total",
                                     "Commands routed, by destination", "destination=\"ready\"");
    r->cancels = mc_metrics_counter(m, "mooncake_router_routed_total",
                                    "Commands routed, by destination", "destination=\"cancel\"");
    r->dead_letters = mc_metrics_counter(m, "mooncake_router_routed_total",
                                         "Commands routed, by destination", "destination=\"dead\"");
    r->rehomed = mc_metrics_counter(m, "mooncake_router_routed_total",
                                    "Commands routed, by destination", "destination=\"rehomed\"");
    r->recalls = mc_metrics_counter(
        m, "mooncake_router_resubmit_recalls_total",
        "Re-submits that recalled an older version due soon in ready at once", NULL);
    return r;
fail:
    if (r)
        router_destroy(r);
    return NULL;
}

/* ---- the layout ------------------------------------------------------------------ */

static void take_layout_record(void *arg, const mc_record *m)
{
    mc_layout *l = arg, next;
    if (m->key && m->key_len == sizeof MC_LAYOUT_KEY - 1 &&
        memcmp(m->key, MC_LAYOUT_KEY, m->key_len) == 0 &&
        mc_layout_parse(m->value, m->value_len, &next))
        mc_layout_move(l, &next); /* the last one wins */
}

/* Writes the layout's first record: the partition count of tasks now. */
static int write_first_layout(router *r, mc_ctx *ctx)
{
    mc_layout_free(&r->layout);
    r->layout.partitions = r->tasks_partitions;
    char value[96];
    size_t n = mc_layout_format(&r->layout, value, sizeof value);
    mc_log(mc_ctx_logger(ctx), MC_LOG_INFO, "recording the partition layout", "layout", value,
           (const char *)NULL);
    /* Committed before the next read: a restore waits for open
     * transactions, and it would wait forever for its own. */
    mc_ctx_request_commit(ctx);
    return mc_ctx_forward(ctx, r->layout_out, 0, MC_LAYOUT_KEY, sizeof MC_LAYOUT_KEY - 1, value, n);
}

/* Writes the growth's layout marker to each owned partition of wheel that
 * has not got it: the last record this router routes there before the
 * growth. */
static int mark_partitions(router *r, mc_ctx *ctx)
{
    char to[16];
    int n = snprintf(to, sizeof to, "%" PRId32, r->layout.growing_to);
    owned *o;
    for (int32_t i = 0; (o = mc_part_table_next(&r->owned, &i)); i++) {
        if (o->marked_for == r->layout.growing_to)
            continue;
        if (mc_ctx_forward_header(ctx, r->wheel, o->partition, NULL, 0, NULL, 0, MC_LAYOUT_HEADER,
                                  to, (size_t)n) != 0)
            return -1;
        o->marked_for = r->layout.growing_to;
    }
    mc_ctx_request_commit(ctx);
    return 0;
}

/* Lets the records given back while routing was stopped come again. */
static void resume_owned(router *r, mc_ctx *ctx)
{
    owned *o;
    for (int32_t i = 0; (o = mc_part_table_next(&r->owned, &i)); i++) {
        if (o->held) {
            mc_ctx_pause(ctx, r->tasks_topic, o->partition, false);
            o->held = false;
        }
    }
}

/* A read that failed (a broker restarting, a topic created a moment ago):
 * said once a minute; the next read is in LAYOUT_POLL_MS. */
static void read_failed(router *r, mc_ctx *ctx, const char *what, const char *err)
{
    if (r->read_warned_at && r->layout_read_at - r->read_warned_at < 60000)
        return;
    r->read_warned_at = r->layout_read_at;
    mc_log(mc_ctx_logger(ctx), MC_LOG_WARN, what, "error", err, "retry_in_ms", "2000",
           (const char *)NULL);
}

/* Reads the partition count of tasks and, when its topic moved, the
 * layout. Returns 0, 1 when the broker could not say (try again later), or
 * -1 when the first layout could not be written. */
static int read_layout(router *r, mc_ctx *ctx)
{
    char err[512];
    int n = mc_ctx_partition_count(ctx, "tasks", err, sizeof err);
    if (n <= 0) {
        read_failed(r, ctx, "cannot read the partition count of tasks", err);
        return 1;
    }
    r->tasks_partitions = n;
    /* The layout changes once per growth: ask where the topic ends, and
     * read it again only when that moved (a read is a restore). */
    int64_t end = mc_ctx_end_offset(ctx, "layout", 0, err, sizeof err);
    if (end < 0) {
        read_failed(r, ctx, "cannot read the layout", err);
        return 1;
    }
    if (end == r->layout_end)
        return 0;
    if (r->own_write_at >= 0 && end == r->own_write_at + 2) {
        /* Only what this router wrote since: its first layout and the
         * commit marker after it. Reading it back would hold routing for
         * as long as a restore takes (half a second on a fresh broker). */
        r->own_write_at = -1;
        r->layout_end = end;
        return 0;
    }
    r->own_write_at = -1;
    mc_layout l = {0};
    int32_t zero = 0;
    if (mc_ctx_restore(ctx, "layout", &zero, 1, take_layout_record, &l, NULL) != 0) {
        mc_layout_free(&l);
        read_failed(r, ctx, "cannot read the layout", "the restore failed");
        return 1;
    }
    r->layout_end = end;
    if (!l.partitions) {
        if (write_first_layout(r, ctx) != 0)
            return -1;
        r->own_write_at = end; /* what it wrote moves the end */
    } else {
        mc_layout_move(&r->layout, &l);
    }
    return 0;
}

/* Reads the layout and decides whether to route. Returns 0, or -1 on a
 * fatal error (the broker refusing a write). */
static int check_layout(router *r, mc_ctx *ctx)
{
    r->layout_read_at = mc_ctx_now_ms(ctx);
    int rc = read_layout(r, ctx);
    if (rc < 0)
        return -1;
    bool was_stopped = r->stopped;
    /* Without a layout nothing can be routed; a failed read keeps what the
     * last one said. */
    r->stopped = !r->layout.partitions || r->layout.growing_to ||
                 r->layout.partitions != r->tasks_partitions;
    if (r->stopped && r->layout.partitions &&
        (!was_stopped || r->layout_read_at - r->stop_warned_at >= 60000)) {
        r->stop_warned_at = r->layout_read_at;
        char value[96], count[16];
        mc_layout_format(&r->layout, value, sizeof value);
        snprintf(count, sizeof count, "%" PRId32, r->tasks_partitions);
        mc_log(mc_ctx_logger(ctx), r->layout.growing_to ? MC_LOG_INFO : MC_LOG_ERROR,
               r->layout.growing_to
                   ? "routing stopped while the partition count grows"
                   : "routing stopped: tasks does not have the layout's partition count; grow "
                     "partitions only with `mooncakectl partitions grow` (README, Growing the "
                     "partition count)",
               "layout", value, "tasks_partitions", count, (const char *)NULL);
    }
    mc_ctx_set_ready(ctx, !r->stopped);
    if (r->layout.growing_to && mark_partitions(r, ctx) != 0)
        return -1;
    /* Whatever it held back goes on (not only on the change: an assignment
     * may come between the stop and the read that ends it). */
    if (!r->stopped) {
        resume_owned(r, ctx);
        if (was_stopped)
            mc_log(mc_ctx_logger(ctx), MC_LOG_INFO, "routing again", (const char *)NULL);
    }
    return 0;
}

/* Asks where each owned partition of wheel ends, all in one request that
 * waits at most WHEEL_END_TIMEOUT_MS (this runs inside the open
 * transaction, so never for long); when the broker does not answer, the
 * older bounds stay until they are too old to use. */
static void read_wheel_ends(router *r, mc_ctx *ctx)
{
    size_t n = mc_part_table_count(&r->owned);
    if (!r->fires_due || n == 0)
        return;
    int32_t *parts = malloc(n * sizeof *parts);
    int64_t *ends = malloc(n * sizeof *ends);
    char err[512] = "";
    int64_t now = mc_ctx_now_ms(ctx);
    if (parts && ends) {
        owned *o;
        size_t k = 0;
        for (int32_t i = 0; k < n && (o = mc_part_table_next(&r->owned, &i)); i++)
            parts[k++] = o->partition;
        /* A partition it could not read is -1; the others are used. */
        (void)mc_ctx_end_offsets(ctx, "wheel", parts, k, ends, WHEEL_END_TIMEOUT_MS, err,
                                 sizeof err);
        size_t unknown = 0;
        for (size_t j = 0; j < k; j++) {
            o = mc_part_table_get(&r->owned, parts[j]);
            if (ends[j] >= 0) {
                o->wheel_end = ends[j];
                o->wheel_end_at = now;
            } else {
                unknown++;
            }
        }
        if (unknown && now - r->end_warned_at >= 60000) {
            r->end_warned_at = now;
            char n[24];
            snprintf(n, sizeof n, "%zu", unknown);
            mc_log(mc_ctx_logger(ctx), MC_LOG_WARN,
                   "cannot read where wheel ends: tasks due now on those partitions go through "
                   "the wheel until it answers (at most one such line a minute)",
                   "partitions", n, "error", err[0] ? err : "no answer", (const char *)NULL);
        }
    }
    free(parts);
    free(ends);
}

/* Forgets every partition (at the end). */
static void forget_owned(router *r)
{
    owned *o;
    for (int32_t i = 0; (o = mc_part_table_next(&r->owned, &i)); i++)
        free(mc_part_table_take(&r->owned, i));
}

/* Partitions added (all of them, after a revoke of all or a rewind): each
 * starts afresh. */
static int router_assign(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx)
{
    router *r = self;
    for (int i = 0; i < parts->cnt; i++) {
        owned *o = malloc(sizeof *o);
        if (!o)
            return -1;
        *o = (owned){parts->elems[i].partition, 0, false, -1, 0};
        free(mc_part_table_take(&r->owned, o->partition));
        if (mc_part_table_put(&r->owned, o->partition, o) != 0) {
            free(o);
            return -1;
        }
    }
    if (parts->cnt == 0)
        return 0;
    /* Not r->stopped: a partition it keeps may be held back (paused) until
     * the next layout read says routing may go on. */
    r->layout_end = r->own_write_at = -1;
    if (check_layout(r, ctx) != 0)
        return -1;
    read_wheel_ends(r, ctx);
    mc_ctx_wakeup_at(ctx, mc_ctx_now_ms(ctx) + LAYOUT_POLL_MS);
    return 0;
}

static void router_revoke(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx)
{
    (void)ctx;
    router *r = self;
    for (int i = 0; i < parts->cnt; i++)
        free(mc_part_table_take(&r->owned, parts->elems[i].partition));
}

static int router_punctuate(void *self, int64_t now_ms, mc_ctx *ctx)
{
    router *r = self;
    if (mc_part_table_count(&r->owned) && now_ms - r->layout_read_at >= LAYOUT_POLL_MS) {
        if (check_layout(r, ctx) != 0)
            return -1;
        read_wheel_ends(r, ctx);
    }
    /* From the last read: woken early (another timer), it must not wait
     * a whole period more. */
    mc_ctx_wakeup_at(ctx, r->layout_read_at + LAYOUT_POLL_MS);
    return 0;
}

/* Gives the record back while routing is stopped: it comes again, first,
 * once the layout allows. */
static int hold_back(router *r, const mc_record *m, mc_ctx *ctx)
{
    owned *o = mc_part_table_get(&r->owned, m->partition);
    if (o)
        o->held = true;
    if (mc_ctx_pause(ctx, r->tasks_topic, m->partition, true) != 0)
        return -1;
    return MC_PROCESS_LATER;
}

/* The key's home partition under the layout. */
static int32_t home_partition(const router *r, const mc_record *m)
{
    return mc_key_partition(m->key, m->key_len, r->layout.partitions);
}

/* Whether m was written before the last growth: on its key's home under the
 * layout before, below that partition's split (where tasks ended when it
 * grew). One at or after the split was written by a client that had not
 * noticed the growth yet: it goes home through tasks, like a command from
 * another partitioner, ordered by when it gets there. */
static bool written_before_growth(const router *r, const mc_record *m)
{
    return r->layout.previous &&
           mc_key_partition(m->key, m->key_len, r->layout.previous) == m->partition &&
           mc_layout_before_split(&r->layout, m->partition, m->offset);
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
    forget_owned(r);
    mc_part_table_free(&r->owned);
    mc_layout_free(&r->layout);
    mc_arena_free(r->arena);
    mc_writer_schemas_free(r->writers, r->n_writers);
    mc_kafka_targets_free(r->targets);
    mc_router_recent_free(r->recent);
    mc_buf_free(&r->out);
    free(r);
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

/* Where a valid command goes: its wheel partition and version. Returns
 * false when it must first go home through tasks (another partitioner). */
static bool destination(router *r, const mc_record *m, int32_t *partition, int64_t *version)
{
    int32_t home = home_partition(r, m);
    *partition = home;
    *version = m->offset;
    if (home == m->partition)
        return true;
    if (!written_before_growth(r, m))
        return false;
    *version = mc_layout_shift(m->offset);
    return true;
}

/* A lower bound of the offset the next record written to this partition of
 * wheel gets: where it ended when last asked, at most WHEEL_END_MAX_AGE_MS
 * ago; -1 when that is not known (the task then goes through the wheel). */
static int64_t wheel_end_bound(const router *r, int32_t partition, int64_t now)
{
    const owned *o = mc_part_table_get(&r->owned, partition);
    return o && o->wheel_end >= 0 && now - o->wheel_end_at < WHEEL_END_MAX_AGE_MS ? o->wheel_end
                                                                                  : -1;
}

/* Fires the Submit in r->out to `ready` and hands it to the wheel as fired
 * (see the top of the file); fired_pos is wheel_end_bound's. */
static int fire_now(router *r, const mc_record *m, int32_t partition, int64_t fired_pos,
                    mc_ctx *ctx)
{
    char pos[24];
    int n = snprintf(pos, sizeof pos, "%" PRId64, fired_pos);
    int rc = mc_ctx_forward_header(ctx, r->wheel, partition, m->key, m->key_len, r->out.data,
                                   r->out.len, MC_FIRED_BY_ROUTER_HEADER, "1", 1);
    if (rc != 0)
        return rc;
    return mc_ctx_forward_header(ctx, r->ready, partition, m->key, m->key_len, r->out.data,
                                 r->out.len, MC_FIRED_POSITION_HEADER, pos, (size_t)n);
}

/* What read_command found. */
typedef enum command_read {
    COMMAND_OK,
    COMMAND_UNDECODABLE, /* cmd says nothing */
    COMMAND_INVALID,     /* decoded, but its fields or its key are wrong */
} command_read;

/* Decodes m into cmd (in r->arena) and checks it as the router routes it:
 * the task's fields, and a key that names its app and task. The reason for
 * anything else goes in why. */
static command_read read_command(router *r, const mc_record *m, int64_t now, mc_command *cmd,
                                 char *why, size_t whylen)
{
    mc_arena_reset(r->arena);
    if (!m->value || m->value_len == 0) {
        snprintf(why, whylen, "empty value: a command is an Avro Submit or Cancel");
        return COMMAND_UNDECODABLE;
    }
    char detail[256] = "";
    mc_codec_err e =
        mc_decode_command(&r->codec, m->value, m->value_len, r->arena, cmd, detail, sizeof detail);
    if (e != MC_CODEC_OK) {
        snprintf(why, whylen, "undecodable command: %s%s%s", mc_codec_strerror(e),
                 detail[0] ? ": " : "", detail);
        return COMMAND_UNDECODABLE;
    }
    const char *app = cmd->kind == MC_CMD_CANCEL ? cmd->cancel.app_id : cmd->submit.app_id;
    const char *tid = cmd->kind == MC_CMD_CANCEL ? cmd->cancel.task_id : cmd->submit.task_id;
    bool ok =
        cmd->kind == MC_CMD_SUBMIT
            ? mc_task_ok(&cmd->submit, now, r->max_due_ms, &mc_task_avro_names, why, whylen) &&
                  mc_task_target_ok(r->targets, &cmd->submit, &mc_task_avro_names, why, whylen)
            : mc_task_ids_ok(app, tid, &mc_task_avro_names, why, whylen);
    return ok && mc_record_keyed_by(m, app, tid, why, whylen) ? COMMAND_OK : COMMAND_INVALID;
}

/* A Submit of a key this router routed lately, due soon (router_recent.h):
 * the wheel may have fired that older version early already, or fire it
 * before it reads this one, so this transaction recalls it in `ready`, as a
 * Cancel's does, with this Submit's version (its offset, newer than every
 * older one; the executor voids only what is below it). The wheel's recall
 * still follows when it reads the Submit, a hop later. */
static int recall_older(router *r, const mc_record *m, const mc_task *t, int32_t partition,
                        int64_t version, int64_t now, mc_ctx *ctx)
{
    if (!mc_router_recent_note(r->recent, (const char *)m->key, m->key_len, t->due_at, now,
                               r->lead_ms + RECALL_MARGIN_MS))
        return 0;
    mc_wheel_entry c = {
        .version = version,
        .command = {.kind = MC_CMD_CANCEL,
                    .cancel = {.app_id = t->app_id, .task_id = t->task_id, .requested_at = now}}};
    mc_buf_reset(&r->out);
    if (mc_encode_wheel_entry(&c, &r->out) != 0)
        return -1;
    mc_counter_add(r->recalls, 1);
    log_routed(ctx, m, "recall");
    mc_ctx_request_commit_now(ctx); /* the executor holds it until a due time that is near */
    return mc_ctx_forward(ctx, r->ready, partition, m->key, m->key_len, r->out.data, r->out.len);
}

static int router_process(void *self, const mc_record *m, mc_ctx *ctx)
{
    router *r = self;
    if (r->stopped)
        return hold_back(r, m, ctx);
    char why[512];
    mc_command cmd;
    int64_t now = mc_ctx_now_ms(ctx);
    command_read got = read_command(r, m, now, &cmd, why, sizeof why);
    const mc_task *t = got != COMMAND_UNDECODABLE && cmd.kind == MC_CMD_SUBMIT ? &cmd.submit : NULL;
    if (got != COMMAND_OK)
        return route_dead(r, m, why, t, ctx);
    int32_t partition;
    int64_t version;
    if (!destination(r, m, &partition, &version))
        return rehome(r, m, partition, ctx);
    if (t && version == m->offset && recall_older(r, m, t, partition, version, now, ctx) != 0)
        return -1;
    mc_wheel_entry w = {.version = version, .command = cmd};
    mc_buf_reset(&r->out);
    if (mc_encode_wheel_entry(&w, &r->out) != 0)
        return -1;
    if (!t) {
        mc_counter_add(r->cancels, 1);
        log_routed(ctx, m, "cancel");
        /* The store and the wheel both read it: each drops older versions. */
        int rc =
            mc_ctx_forward(ctx, r->wheel, partition, m->key, m->key_len, r->out.data, r->out.len);
        if (rc != 0 || version != m->offset)
            return rc;
        /* And the executor, in the same transaction: a task of the key the
         * wheel fired early is dropped one hop after the cancel instead of
         * two (see the top of the file). */
        mc_ctx_request_commit_now(ctx);
        return mc_ctx_forward(ctx, r->ready, partition, m->key, m->key_len, r->out.data,
                              r->out.len);
    }
    int64_t fired_pos;
    if (r->fires_due && t->due_at <= now + r->lead_ms && version == m->offset &&
        (fired_pos = wheel_end_bound(r, partition, now)) >= 0) {
        mc_counter_add(r->to_ready, 1);
        log_routed(ctx, m, "fired");
        mc_ctx_request_commit_now(ctx); /* the executor sees it when this commits */
        return fire_now(r, m, partition, fired_pos, ctx);
    }
    if (t->due_at <= now + r->horizon_ms) {
        mc_counter_add(r->to_wheel, 1);
        log_routed(ctx, m, "near");
        /* Waiting for the commit interval would make it late at the wheel:
         * commit as soon as this pass is done (what else the pass routed goes
         * with it, so a burst still shares one commit). */
        if (t->due_at <= now + r->lead_ms)
            mc_ctx_request_commit_now(ctx); /* the wheel fires it on arrival or within its slack */
        else if (t->due_at <= now + r->urgent_ms)
            mc_ctx_request_commit(ctx);
        return mc_ctx_forward(ctx, r->wheel, partition, m->key, m->key_len, r->out.data,
                              r->out.len);
    }
    mc_counter_add(r->to_store, 1);
    log_routed(ctx, m, "far");
    return mc_ctx_forward_header(ctx, r->wheel, partition, m->key, m->key_len, r->out.data,
                                 r->out.len, MC_ROUTE_HEADER, MC_ROUTE_STORE,
                                 sizeof MC_ROUTE_STORE - 1);
}

/* A command whose outputs Kafka refused for good (a task too large for ready
 * or wheel, say) goes to the dead topic, as it would without this hook; a
 * valid Submit first leaves a Cancel of its version in wheel, so that the
 * older versions of its key stop, as the client's newer command says. (When
 * the wheel fired everything, the wheel's fire was the refused output and
 * wheel_refused raised the key's floor; a task the router fires would
 * otherwise leave no trace in wheel at all.) */
/* Writes `wheel` a Cancel of m's key at version: what still stops older
 * versions of a refused record there. */
static int forward_wheel_cancel(router *r, const mc_record *m, int32_t partition, int64_t version,
                                const mc_command *cancel, mc_ctx *ctx)
{
    mc_wheel_entry c = {.version = version, .command = *cancel};
    mc_buf_reset(&r->out);
    if (mc_encode_wheel_entry(&c, &r->out) != 0)
        return -1;
    return mc_ctx_forward(ctx, r->wheel, partition, m->key, m->key_len, r->out.data, r->out.len);
}

static int router_refused(void *self, const mc_record *m, const char *reason, mc_ctx *ctx)
{
    router *r = self;
    mc_command cmd;
    char why[512];
    int32_t partition;
    int64_t version;
    /* Valid when it was routed: no bound on the due time now (a clock
     * stepped back could put it past --max-due). */
    command_read got = read_command(r, m, INT64_MAX - r->max_due_ms, &cmd, why, sizeof why);
    bool routed =
        got == COMMAND_OK && r->layout.partitions && destination(r, m, &partition, &version);
    if (routed && cmd.kind == MC_CMD_CANCEL) {
        /* Its recall in ready was refused (a ready that takes less than
         * wheel): the cancel still goes to wheel, as before the recall. */
        if (forward_wheel_cancel(r, m, partition, version, &cmd, ctx) != 0)
            return -1;
    } else if (routed && cmd.kind == MC_CMD_SUBMIT) {
        mc_command stop = {.kind = MC_CMD_CANCEL,
                           .cancel = {.app_id = cmd.submit.app_id,
                                      .task_id = cmd.submit.task_id,
                                      .requested_at = mc_ctx_now_ms(ctx)}};
        if (forward_wheel_cancel(r, m, partition, version, &stop, ctx) != 0)
            return -1;
    }
    mc_counter_add(r->dead_letters, 1);
    return mc_ctx_dead_letter(ctx, m, reason, NULL);
}

static const char *const router_inputs[] = {"tasks", NULL};

const mc_processor mc_router_processor = {
    .name = "router",
    .input_topics = router_inputs,
    .check_config = router_check_config,
    .create = router_create,
    .process = router_process,
    .refused = router_refused,
    .punctuate = router_punctuate,
    .on_assign = router_assign,
    .on_revoke = router_revoke,
    .destroy = router_destroy,
};
