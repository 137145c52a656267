/* The alarms processor: an app's dead letters become calls of the app's
 * alarm webhook, batched, at most one per app per --alarm-interval-ms, each
 * dead letter counted in exactly one alarm.
 *
 * Two inputs, the jobs processor's shape (a repartition, as Kafka Streams
 * does it):
 *   - `dead`, keyed by task: each dead letter of a task whose app has a
 *     webhook is relayed as an event to `alarm-events`, keyed by the app, in
 *     the transaction that consumes it;
 *   - `alarm-events`, keyed by app, so one partition holds all of an app's
 *     events: they gather in the app's batch (mc_alarm_batch), logged to the
 *     compacted `alarms` topic in the transaction that consumes them. When
 *     the interval since the app's last alarm has passed - at once for the
 *     first dead letter after a quiet spell, else when it ends - the batch
 *     becomes a Submit to `tasks`: a task of the app itself, id
 *     mooncake-alarm-<ms>, POSTing the JSON body to the webhook, written in
 *     the transaction that empties the batch. So a kill -9 at any moment
 *     neither loses a dead letter from the count nor counts one twice, and
 *     the alarm call is an ordinary task: signed with the app's secrets,
 *     retried, and dead-lettered (without a new alarm) when it never succeeds.
 * On assignment (and after an abort) the partition's batches are restored
 * from `alarms` before anything else happens. */
#include "alarms.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alarm.h"
#include "kafka.h"
#include "keymap.h"
#include "part_table.h"
#include "timing_wheel.h"

/* The alarm call's whole-request timeout: a webhook is a chat or paging
 * service that answers at once or not at all. */
#define ALARM_CALL_TIMEOUT_MS 10000
/* How long the first dead letter after a quiet spell waits for others. */
#define GATHER_MS 1000
/* Apps attended per punctuate call, so thousands of apps due in the same
 * second leave room for input and commits. */
#define ATTEND_BATCH 1000

typedef struct alarm_app {
    mc_keynode node;
    mc_timer timer;
    mc_alarm_batch batch;
    struct alarm_app *next_dirty;
    bool dirty;
    char key[]; /* the app id, node.key_len bytes and a NUL */
} alarm_app;

#define APP_KEY_OFFSET (offsetof(alarm_app, key) - offsetof(alarm_app, node))

typedef struct alarm_part {
    int32_t partition;
    mc_keymap *apps;
    mc_timing_wheel *timers;
    alarm_app *dirty; /* batches changed in the open transaction */
} alarm_part;

typedef struct alarms {
    const mc_logger *logger;
    mc_alarm_webhooks *webhooks;
    mc_output *tasks, *events, *changelog;
    char dead_topic[256], events_topic[256];
    int32_t task_partitions, event_partitions;
    int64_t interval_ms;
    mc_part_table parts;
    mc_arena *arena;
    mc_buf buf, body;
    mc_counter *relayed, *no_webhook, *own_calls, *no_task, *bad_app, *bad_events, *sent, *alarmed,
        *dropped, *restored;
    mc_gauge *pending, *restore_seconds;
} alarms;

static const char *const alarms_inputs[] = {"dead", "alarm-events", NULL};

/* ---- apps ---------------------------------------------------------------------- */

static void app_free(alarm_app *a)
{
    if (a) {
        mc_alarm_batch_clear(&a->batch);
        free(a);
    }
}

static void free_node(mc_keynode *n, void *arg)
{
    (void)arg;
    app_free((alarm_app *)n);
}

static void part_free(alarm_part *p)
{
    if (!p)
        return;
    if (p->apps) {
        mc_keymap_drain(p->apps, free_node, NULL);
        mc_keymap_free(p->apps);
    }
    mc_wheel_free(p->timers);
    free(p);
}

static alarm_app *find_app(alarm_part *p, const void *key, size_t len)
{
    return (alarm_app *)mc_keymap_find(p->apps, key, len, mc_keymap_hash(key, len));
}

static alarm_app *add_app(alarm_part *p, const void *key, size_t len)
{
    alarm_app *a = calloc(1, sizeof *a + len + 1);
    if (!a)
        return NULL;
    memcpy(a->key, key, len);
    a->node.key_len = (uint32_t)len;
    a->node.hash = mc_keymap_hash(key, len);
    mc_keymap_insert(p->apps, &a->node);
    return a;
}

static void remove_app(alarm_part *p, alarm_app *a)
{
    mc_wheel_cancel(p->timers, &a->timer);
    mc_keymap_remove(p->apps, &a->node);
    app_free(a);
}

static void mark_dirty(alarm_part *p, alarm_app *a)
{
    if (!a->dirty) {
        a->dirty = true;
        a->next_dirty = p->dirty;
        p->dirty = a;
    }
}

static void add_count(mc_keynode *n, void *arg)
{
    *(int64_t *)arg += ((alarm_app *)n)->batch.count;
}

/* Dead letters waiting in the batches of every partition held. */
static void update_pending(alarms *s)
{
    int64_t n = 0;
    alarm_part *p;
    for (int32_t i = 0; (p = mc_part_table_next(&s->parts, &i)); i++)
        mc_keymap_each(p->apps, add_count, &n);
    mc_gauge_set(s->pending, (double)n);
}

/* ---- the alarm ------------------------------------------------------------------ */

/* The end of the app's quiet interval. */
static int64_t quiet_until(const alarms *s, const alarm_app *a)
{
    return a->batch.last_sent_at + s->interval_ms;
}

/* A last alarm or a batch's opening "in the future" (the wall clock was
 * stepped back since) is taken as now, and so written, whenever the app is
 * attended: its next dead letter or a restart then waits at most an
 * interval, not the step. A batch already waiting on its timer waits on:
 * wake-ups are wall-clock times. */
static void not_after_now(alarm_part *p, alarm_app *a, int64_t now)
{
    if (a->batch.last_sent_at > now || a->batch.opened_at > now) {
        if (a->batch.last_sent_at > now)
            a->batch.last_sent_at = now;
        if (a->batch.opened_at > now)
            a->batch.opened_at = now;
        mark_dirty(p, a);
    }
}

/* When the app's batch may go out: a whole interval after its last alarm,
 * and not before GATHER_MS after its first dead letter arrived here, so the
 * first alarm after a quiet spell (or after a backlog read at once) tells of
 * the whole burst, not of its first dead letter alone. */
static int64_t alarm_due_at(const alarms *s, const alarm_app *a)
{
    int64_t gathered =
        a->batch.opened_at + (s->interval_ms < GATHER_MS ? s->interval_ms : GATHER_MS);
    int64_t quiet = quiet_until(s, a);
    return quiet > gathered ? quiet : gathered;
}

/* Sets the app's timer: its next alarm, or (batch empty) the end of its
 * quiet interval, when it is forgotten. */
static int arm(alarms *s, alarm_part *p, alarm_app *a, int64_t now, mc_ctx *ctx)
{
    not_after_now(p, a, now);
    int64_t at = a->batch.count > 0 ? alarm_due_at(s, a) : quiet_until(s, a);
    if (at < now)
        at = now;
    mc_wheel_cancel(p->timers, &a->timer);
    if (mc_wheel_add(p->timers, &a->timer, at) != 0)
        return -1;
    mc_ctx_wakeup_at(ctx, at);
    return 0;
}

/* The app's batch to the changelog now. A batch the producer refuses
 * (larger than its message.max.bytes) goes without its lists: the counts
 * are what must survive. */
static int write_state(alarms *s, alarm_part *p, alarm_app *a, mc_ctx *ctx)
{
    mc_alarm_batch bare = a->batch;
    for (int pass = 0; pass < 2; pass++) {
        if (mc_alarm_batch_encode(pass ? &bare : &a->batch, &s->buf) != 0)
            return -1;
        int rc = mc_ctx_forward(ctx, s->changelog, p->partition, a->key, a->node.key_len,
                                s->buf.data, s->buf.len);
        if (rc != MC_FORWARD_REFUSED)
            return rc;
        bare.n_first = bare.n_jobs = 0;
    }
    mc_log(s->logger, MC_LOG_ERROR, "alarm batch refused by Kafka even without its lists", "app",
           a->key, (const char *)NULL);
    return -1;
}

/* Takes the app off its partition's list of batches to write. */
static void unmark_dirty(alarm_part *p, alarm_app *a)
{
    for (alarm_app **at = &p->dirty; a->dirty && *at; at = &(*at)->next_dirty)
        if (*at == a) {
            *at = a->next_dirty;
            a->dirty = false;
            a->next_dirty = NULL;
            break;
        }
}

/* Empties the batch without an alarm (its app has no webhook now, or Kafka
 * refuses any alarm of it), says so, and writes the empty batch at once: a
 * restart must not find and drop it again. */
static int drop_batch(alarms *s, alarm_part *p, alarm_app *a, const char *why, mc_ctx *ctx)
{
    char n[24];
    snprintf(n, sizeof n, "%" PRId64, a->batch.count);
    mc_log(s->logger, MC_LOG_WARN, why, "app", a->key, "dead_letters", n, (const char *)NULL);
    mc_counter_add(s->dropped, (uint64_t)a->batch.count);
    int64_t sent = a->batch.sent, alarmed = a->batch.alarmed, last = a->batch.last_sent_at;
    mc_alarm_batch_clear(&a->batch);
    a->batch.sent = sent, a->batch.alarmed = alarmed, a->batch.last_sent_at = last;
    unmark_dirty(p, a);
    return write_state(s, p, a, ctx);
}

/* Writes the app's alarm task for its batch and empties the batch. */
static int send_alarm(alarms *s, alarm_part *p, alarm_app *a, int64_t now, mc_ctx *ctx)
{
    const char *url = mc_alarm_webhook_for(s->webhooks, a->key);
    if (!url) /* relayed while it had a webhook; the configuration changed since */
        return drop_batch(s, p, a, "alarm dropped: the app has no webhook now", ctx);
    char id[64], seq[24], key[MC_ALARM_APP_MAX + 80];
    snprintf(id, sizeof id, MC_ALARM_TASK_PREFIX "%" PRId64, now);
    snprintf(seq, sizeof seq, "%" PRId64, a->batch.sent + 1);
    size_t klen = mc_task_key(a->key, id, key, sizeof key);
    if (klen >= sizeof key) /* gather() lets no such app in */
        return drop_batch(s, p, a, "alarm dropped: the app id is too long", ctx);
    mark_dirty(p, a);
    static const mc_kv headers[] = {{"content-type", "application/json"}};
    const mc_kv meta[] = {{MC_ALARM_METADATA, seq}};
    mc_alarm_batch bare = a->batch;
    for (int pass = 0; pass < 2; pass++) {
        if (mc_alarm_body(a->key, pass ? &bare : &a->batch, now, &s->body) != 0)
            return -1;
        mc_command c = {.kind = MC_CMD_SUBMIT};
        c.submit = (mc_task){
            .app_id = a->key,
            .task_id = id,
            .due_at = now,
            .callback = {.url = url,
                         .method = "POST",
                         .headers = headers,
                         .n_headers = 1,
                         .body = s->body.data,
                         .body_len = s->body.len,
                         .timeout_ms = ALARM_CALL_TIMEOUT_MS},
            .attempt = 1,
            .created_at = now,
            .metadata = meta,
            .n_metadata = 1,
        };
        mc_buf_reset(&s->buf);
        if (mc_encode_command(&c, &s->buf) != 0)
            return -1;
        int rc = mc_ctx_forward(ctx, s->tasks, mc_key_partition(key, klen, s->task_partitions), key,
                                klen, s->buf.data, s->buf.len);
        if (rc == MC_FORWARD_REFUSED && pass == 0) {
            /* Too large a record: the alarm goes without its lists. */
            bare.n_first = bare.n_jobs = 0;
            continue;
        }
        if (rc == MC_FORWARD_REFUSED)
            return drop_batch(s, p, a, "alarm dropped: Kafka refuses it (webhook URL too long?)",
                              ctx);
        if (rc != 0)
            return -1;
        break;
    }
    mc_counter_add(s->sent, 1);
    mc_counter_add(s->alarmed, (uint64_t)a->batch.count);
    mc_alarm_batch_sent(&a->batch, now);
    return 0;
}

/* The app's timer went off (or an event came): alarm when the interval
 * allows and there is something to say; forget an app quiet for a whole
 * interval. */
static int attend(alarms *s, alarm_part *p, alarm_app *a, int64_t now, mc_ctx *ctx)
{
    not_after_now(p, a, now);
    if (a->batch.count > 0 && now >= alarm_due_at(s, a) && send_alarm(s, p, a, now, ctx) != 0)
        return -1;
    if (a->batch.count == 0 && now >= quiet_until(s, a)) {
        /* The tombstone follows any state of it this transaction wrote. */
        unmark_dirty(p, a);
        if (mc_ctx_forward(ctx, s->changelog, p->partition, a->key, a->node.key_len, NULL, 0) != 0)
            return -1;
        remove_app(p, a);
        return 0;
    }
    return arm(s, p, a, now, ctx);
}

/* ---- input ------------------------------------------------------------------------ */

static const char *metadata(const mc_task *t, const char *name)
{
    for (size_t i = 0; i < t->n_metadata; i++)
        if (strcmp(t->metadata[i].key, name) == 0)
            return t->metadata[i].value;
    return NULL;
}

/* A dead letter: relayed to its app's partition of alarm-events when the
 * app has a webhook. */
static int relay(alarms *s, const mc_record *r, mc_ctx *ctx)
{
    mc_arena_reset(s->arena);
    mc_dead_letter d;
    if (!r->value ||
        mc_decode_dead_letter(r->value, r->value_len, s->arena, &d, NULL, 0) != MC_CODEC_OK ||
        !d.has_task) {
        /* Bad input nobody could tie to an app: /metrics counts it, the
         * dead-letter alert rule watches it. */
        mc_counter_add(s->no_task, 1);
        return 0;
    }
    const mc_task *t = &d.task;
    if (strncmp(t->task_id, MC_ALARM_TASK_PREFIX, sizeof MC_ALARM_TASK_PREFIX - 1) == 0 &&
        metadata(t, MC_ALARM_METADATA)) {
        mc_counter_add(s->own_calls, 1);
        return 0;
    }
    if (!mc_alarm_app_ok(t->app_id, strlen(t->app_id))) {
        /* A refused task's app id (empty, with '/', too long): no app to tell. */
        mc_counter_add(s->bad_app, 1);
        return 0;
    }
    if (!mc_alarm_webhook_for(s->webhooks, t->app_id)) {
        mc_counter_add(s->no_webhook, 1);
        return 0;
    }
    char key[4096];
    size_t klen = mc_task_key(t->app_id, t->task_id, key, sizeof key);
    if (klen >= sizeof key)
        key[sizeof key - 1] = '\0';
    mc_alarm_line l = {.key = key,
                       .reason = (char *)d.reason,
                       .job_id = (char *)metadata(t, "job_id"),
                       .failed_at = d.failed_at < 0                    ? 0
                                    : d.failed_at > MC_ALARM_MAX_VALUE ? MC_ALARM_MAX_VALUE
                                                                       : d.failed_at};
    if (mc_alarm_event_encode(&l, &s->buf) != 0)
        return -1;
    size_t alen = strlen(t->app_id);
    if (mc_ctx_forward(ctx, s->events, mc_key_partition(t->app_id, alen, s->event_partitions),
                       t->app_id, alen, s->buf.data, s->buf.len) != 0)
        return -1;
    mc_counter_add(s->relayed, 1);
    return 0;
}

/* An event: into its app's batch, and out as an alarm when the interval allows. */
static int gather(alarms *s, const mc_record *r, mc_ctx *ctx)
{
    alarm_part *p = mc_part_table_get(&s->parts, r->partition);
    mc_alarm_line l;
    char why[256];
    if (!p)
        return 0;
    bool app_ok = r->key && mc_alarm_app_ok(r->key, r->key_len);
    if (!app_ok || mc_alarm_event_decode(r->value, r->value_len, &l, why, sizeof why) != 0) {
        if (!app_ok)
            snprintf(why, sizeof why, "its key is no app id an alarm can name");
        char off[24];
        snprintf(off, sizeof off, "%" PRId64, r->offset);
        mc_log(s->logger, MC_LOG_ERROR, "alarm event skipped", "topic", s->events_topic, "offset",
               off, "error", why, (const char *)NULL);
        mc_counter_add(s->bad_events, 1);
        return 0;
    }
    alarm_app *a = find_app(p, r->key, r->key_len);
    if (!a)
        a = add_app(p, r->key, r->key_len);
    bool opens = a && a->batch.count == 0;
    int rc = a ? mc_alarm_batch_add(&a->batch, &l) : -1;
    mc_alarm_line_clear(&l);
    if (rc != 0)
        return -1;
    if (opens)
        a->batch.opened_at = mc_ctx_now_ms(ctx);
    mark_dirty(p, a);
    return attend(s, p, a, mc_ctx_now_ms(ctx), ctx);
}

static int alarms_process(void *self, const mc_record *r, mc_ctx *ctx)
{
    alarms *s = self;
    if (strcmp(r->topic, s->dead_topic) == 0)
        return relay(s, r, ctx);
    return gather(s, r, ctx);
}

/* The batches changed in this transaction, to the changelog with it. */
static int alarms_prepare_commit(void *self, mc_ctx *ctx)
{
    alarms *s = self;
    alarm_part *p;
    for (int32_t i = 0; (p = mc_part_table_next(&s->parts, &i)); i++)
        while (p->dirty) {
            alarm_app *a = p->dirty;
            p->dirty = a->next_dirty;
            a->dirty = false;
            a->next_dirty = NULL;
            if (write_state(s, p, a, ctx) != 0)
                return -1;
        }
    update_pending(s);
    return 0;
}

static int alarms_punctuate(void *self, int64_t now, mc_ctx *ctx)
{
    alarms *s = self;
    alarm_part *p;
    mc_timer *due[256];
    size_t budget = ATTEND_BATCH;
    for (int32_t i = 0; (p = mc_part_table_next(&s->parts, &i)); i++) {
        size_t got;
        do {
            size_t want = budget < 256 ? budget : 256;
            got = mc_wheel_advance(p->timers, now, due, want);
            budget -= got;
            for (size_t k = 0; k < got; k++)
                if (attend(s, p, MC_TIMER_OWNER(due[k], alarm_app, timer), now, ctx) != 0)
                    return -1;
        } while (got == 256 && budget > 0);
        int64_t d = mc_wheel_next_deadline(p->timers);
        if (d != INT64_MAX)
            mc_ctx_wakeup_at(ctx, d);
    }
    if (budget == 0) /* the rest after a commit and what input came meanwhile */
        mc_ctx_wakeup_at(ctx, now);
    return 0;
}

/* ---- assignment and restore --------------------------------------------------------- */

typedef struct restoring {
    alarms *s;
    alarm_part **parts;
    size_t n;
    bool failed;
} restoring;

static void restore_record(void *arg, const mc_record *m)
{
    restoring *rs = arg;
    alarm_part *p = NULL;
    for (size_t i = 0; i < rs->n; i++)
        if (rs->parts[i]->partition == m->partition)
            p = rs->parts[i];
    if (!p || !m->key || m->key_len == 0 || memchr(m->key, '\0', m->key_len))
        return;
    alarm_app *a = find_app(p, m->key, m->key_len);
    if (!m->value) {
        if (a)
            remove_app(p, a);
        return;
    }
    if (!a && !(a = add_app(p, m->key, m->key_len))) {
        rs->failed = true;
        return;
    }
    char why[256];
    if (mc_alarm_batch_decode(m->value, m->value_len, &a->batch, why, sizeof why) != 0) {
        /* Only we write it: a bug or tampering. Say so; the app starts afresh. */
        char off[24];
        snprintf(off, sizeof off, "%" PRId64, m->offset);
        mc_log(rs->s->logger, MC_LOG_ERROR, "alarms changelog record skipped", "app", a->key,
               "offset", off, "error", why, (const char *)NULL);
        remove_app(p, a);
        return;
    }
    mc_counter_add(rs->s->restored, 1);
}

typedef struct arming {
    alarms *s;
    alarm_part *p;
    mc_ctx *ctx;
    int64_t now;
    bool failed;
} arming;

static void arm_one(mc_keynode *n, void *arg)
{
    arming *am = arg;
    if (arm(am->s, am->p, (alarm_app *)n, am->now, am->ctx) != 0)
        am->failed = true;
}

static int partition_counts(alarms *s, mc_ctx *ctx)
{
    char err[256];
    int t = mc_ctx_partition_count(ctx, "tasks", err, sizeof err);
    int e = t > 0 ? mc_ctx_partition_count(ctx, "alarm-events", err, sizeof err) : -1;
    if (t <= 0 || e <= 0) {
        mc_log(s->logger, MC_LOG_ERROR, "cannot read partition counts", "error", err,
               (const char *)NULL);
        return -1;
    }
    s->task_partitions = t;
    s->event_partitions = e;
    return 0;
}

static int alarms_on_assign(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx)
{
    alarms *s = self;
    mc_ctx_set_ready(ctx, false);
    if (partition_counts(s, ctx) != 0)
        return -1;
    alarm_part **fresh = calloc((size_t)parts->cnt + 1, sizeof *fresh);
    int32_t *ids = calloc((size_t)parts->cnt + 1, sizeof *ids);
    int rc = fresh && ids ? 0 : -1;
    size_t n = 0;
    int64_t now = mc_ctx_now_ms(ctx);
    for (int i = 0; i < parts->cnt && rc == 0; i++) {
        const rd_kafka_topic_partition_t *tp = &parts->elems[i];
        if (strcmp(tp->topic, s->events_topic) != 0 || mc_part_table_get(&s->parts, tp->partition))
            continue;
        alarm_part *p = calloc(1, sizeof *p);
        if (p) {
            p->partition = tp->partition;
            p->apps = mc_keymap_new(APP_KEY_OFFSET);
            p->timers = mc_wheel_new(now);
        }
        if (!p || !p->apps || !p->timers || mc_part_table_put(&s->parts, tp->partition, p) != 0) {
            part_free(p);
            rc = -1;
            break;
        }
        ids[n] = p->partition;
        fresh[n++] = p;
    }
    mc_restore_stats st = {0, 0};
    restoring rs = {s, fresh, n, false};
    if (rc == 0 && n > 0)
        rc = mc_ctx_restore(ctx, "alarms", ids, n, restore_record, &rs, &st);
    if (rs.failed)
        rc = -1;
    now = mc_ctx_now_ms(ctx);
    for (size_t i = 0; i < n && rc == 0; i++) {
        arming am = {s, fresh[i], ctx, now, false};
        mc_keymap_each(fresh[i]->apps, arm_one, &am);
        if (am.failed)
            rc = -1;
    }
    if (rc == 0 && n > 0)
        mc_gauge_set(s->restore_seconds, st.seconds);
    free(fresh);
    free(ids);
    update_pending(s);
    mc_ctx_set_ready(ctx, rc == 0);
    return rc;
}

static void alarms_on_revoke(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx)
{
    (void)ctx;
    alarms *s = self;
    for (int i = 0; i < parts->cnt; i++)
        if (strcmp(parts->elems[i].topic, s->events_topic) == 0)
            part_free(mc_part_table_take(&s->parts, parts->elems[i].partition));
    update_pending(s);
}

/* ---- life --------------------------------------------------------------------------- */

static int alarms_check_config(const mc_config *cfg, char *err, size_t errlen)
{
    mc_alarm_webhooks *w = mc_alarm_webhooks_parse(cfg->alarm_webhooks, err, errlen);
    mc_alarm_webhooks_free(w);
    return w ? 0 : -1;
}

static void alarms_destroy(void *self)
{
    alarms *s = self;
    if (!s)
        return;
    alarm_part *p;
    for (int32_t i = 0; (p = mc_part_table_next(&s->parts, &i)); i++)
        part_free(p);
    mc_part_table_free(&s->parts);
    mc_alarm_webhooks_free(s->webhooks);
    mc_arena_free(s->arena);
    mc_buf_free(&s->buf);
    mc_buf_free(&s->body);
    free(s);
}

static void *alarms_create(mc_ctx *ctx, const void *arg, char *err, size_t errlen)
{
    (void)arg;
    const mc_config *cfg = mc_ctx_config(ctx);
    alarms *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->logger = mc_ctx_logger(ctx);
    s->interval_ms = cfg->alarm_interval_ms;
    if (!(s->webhooks = mc_alarm_webhooks_parse(cfg->alarm_webhooks, err, errlen))) {
        free(s);
        return NULL;
    }
    mc_topic_name(cfg, "dead", s->dead_topic, sizeof s->dead_topic);
    mc_topic_name(cfg, "alarm-events", s->events_topic, sizeof s->events_topic);
    s->tasks = mc_ctx_output(ctx, "tasks");
    s->events = mc_ctx_output(ctx, "alarm-events");
    s->changelog = mc_ctx_output(ctx, "alarms");
    s->arena = mc_arena_new();
    if (!s->tasks || !s->events || !s->changelog || !s->arena) {
        snprintf(err, errlen, "out of memory");
        alarms_destroy(s);
        return NULL;
    }
    mc_metrics *m = mc_ctx_metrics(ctx);
    static const char help[] = "Dead letters read by the alarms processor, by what became of them";
    s->relayed =
        mc_metrics_counter(m, "mooncake_alarm_dead_letters_total", help, "outcome=\"relayed\"");
    s->no_webhook =
        mc_metrics_counter(m, "mooncake_alarm_dead_letters_total", help, "outcome=\"no_webhook\"");
    s->own_calls =
        mc_metrics_counter(m, "mooncake_alarm_dead_letters_total", help, "outcome=\"alarm_call\"");
    s->no_task =
        mc_metrics_counter(m, "mooncake_alarm_dead_letters_total", help, "outcome=\"no_task\"");
    s->bad_app =
        mc_metrics_counter(m, "mooncake_alarm_dead_letters_total", help, "outcome=\"bad_app\"");
    s->bad_events = mc_metrics_counter(m, "mooncake_alarm_bad_events_total",
                                       "alarm-events records skipped as unreadable", NULL);
    s->sent = mc_metrics_counter(m, "mooncake_alarms_total", "Alarm calls written to tasks", NULL);
    s->alarmed = mc_metrics_counter(m, "mooncake_alarm_counted_dead_letters_total",
                                    "Dead letters counted in the alarms written", NULL);
    s->dropped = mc_metrics_counter(
        m, "mooncake_alarm_dropped_dead_letters_total",
        "Dead letters of apps whose webhook was removed before their alarm", NULL);
    s->restored = mc_metrics_counter(m, "mooncake_alarm_restored_records_total",
                                     "Changelog records replayed on assignment", NULL);
    s->pending = mc_metrics_gauge(m, "mooncake_alarm_pending_dead_letters",
                                  "Dead letters waiting for their app's next alarm", NULL);
    s->restore_seconds = mc_metrics_gauge(m, "mooncake_alarms_last_restore_seconds",
                                          "Duration of the last alarms changelog restore", NULL);
    return s;
}

const mc_processor mc_alarms_processor = {
    .name = "alarms",
    .consumer_defaults = mc_unhurried_consumer,
    .input_topics = alarms_inputs,
    .check_config = alarms_check_config,
    .create = alarms_create,
    .process = alarms_process,
    .punctuate = alarms_punctuate,
    .on_assign = alarms_on_assign,
    .on_revoke = alarms_on_revoke,
    .prepare_commit = alarms_prepare_commit,
    .destroy = alarms_destroy,
};
