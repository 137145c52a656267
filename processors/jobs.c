/* The jobs processor: recurring jobs (cron, fixed rate, fixed delay), each
 * occurrence a normal task, produced exactly once.
 *
 * Input is `job-commands`, keyed app_id/job_id: PutJob, JobAction (pause,
 * resume, delete, trigger) from clients, and OccurrenceDone, which this
 * processor writes itself (below). A job's state - its definition and where
 * its schedule stands - lives in memory, one hash map and one timing wheel
 * of next actions per partition, and is logged to the compacted `jobs`
 * topic, whose only writer is this processor: the store's state-store
 * pattern (store.c). On assignment (and after an abort) the partition's
 * changelog is replayed before anything else happens.
 *
 * An occurrence is the task <job_id>@<scheduled epoch ms> of the job's app,
 * a Submit written to `tasks` in the same transaction as the job state that
 * says it was written, so a kill -9 at any moment neither skips nor doubles
 * one: either both are committed or neither, and the replayed state says
 * which. Its id is deterministic, so even a second Submit of it would only
 * reschedule the same task (last write wins), never fire it twice.
 * Occurrences are written `ahead_ms` before they are due, so the router and
 * the wheel have time to fire them on the millisecond; the ones written
 * ahead and not due yet are cancelled (Cancel to `tasks`, the client's own
 * way) when the job is updated, paused or deleted, and the cancel wins the
 * way a client's does.
 *
 * The overlap policies and FIXED_DELAY need to know when an occurrence has
 * finished. That is in `results`, keyed by the occurrence's task key, which
 * lives in another partition than its job. So this processor also reads
 * `results` and relays every final Result of an occurrence as an
 * OccurrenceDone to `job-commands`, keyed by the job (a repartition, as
 * Kafka Streams does it), in the transaction that consumes the Result. A
 * job waits for an occurrence at most its stale bound (every attempt's
 * timeout and backoff, plus a minute), so an occurrence cancelled by hand
 * before it fired, which leaves no Result, cannot block a job forever. */
#include "jobs_impl.h"

#include "broadcast.h"
#include "chains.h"
#include "job_json.h"
#include "task_rules.h"

static void jobs_destroy(void *self);

static void *jobs_create(mc_ctx *ctx, const void *arg, char *err, size_t errlen)
{
    (void)arg;
    const mc_config *cfg = mc_ctx_config(ctx);
    jobs *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->logger = mc_ctx_logger(ctx);
    s->cfg = cfg;
    /* Ahead enough for three Kafka hops, and inside the horizon so an
     * occurrence goes straight to the wheel. */
    s->ahead_ms = cfg->jobs_ahead_ms;
    if (s->ahead_ms > cfg->horizon_ms / 2)
        s->ahead_ms = cfg->horizon_ms / 2;
    mc_topic_name(cfg, "job-commands", s->commands_topic, sizeof s->commands_topic);
    mc_topic_name(cfg, "results", s->results_topic, sizeof s->results_topic);
    mc_topic_name(cfg, "jobs", s->changelog_topic, sizeof s->changelog_topic);
    mc_topic_name(cfg, "chains", s->chains_topic, sizeof s->chains_topic);
    mc_topic_name(cfg, "broadcasts", s->broadcasts_topic, sizeof s->broadcasts_topic);
    s->tasks = mc_ctx_output(ctx, "tasks");
    s->commands = mc_ctx_output(ctx, "job-commands");
    s->changelog = mc_ctx_output(ctx, "jobs");
    s->chain_log = mc_ctx_output(ctx, "chains");
    s->broadcast_log = mc_ctx_output(ctx, "broadcasts");
    s->results = mc_ctx_output(ctx, "results");
    if (mc_writer_schemas_load(cfg->job_command_writer_schemas, MC_SCHEMA_JOB_COMMAND,
                               "--job-command-writer-schemas", &s->writers, &s->n_writers, err,
                               errlen) != 0) {
        free(s);
        return NULL;
    }
    s->codec.writers = s->writers;
    s->codec.n_writers = s->n_writers;
    if (!(s->targets =
              mc_kafka_targets_parse(cfg->kafka_targets, cfg->topic_prefix, err, errlen))) {
        jobs_destroy(s);
        return NULL;
    }
    s->zones = mc_zone_cache_new(cfg->zoneinfo_dir[0] ? cfg->zoneinfo_dir : NULL);
    s->arena = mc_arena_new();
    s->link_arena = mc_arena_new();
    if (!s->tasks || !s->commands || !s->changelog || !s->chain_log || !s->broadcast_log ||
        !s->results || !s->zones || !s->arena || !s->link_arena) {
        snprintf(err, errlen, "out of memory");
        jobs_destroy(s);
        return NULL;
    }
    mc_metrics *m = mc_ctx_metrics(ctx);
    s->jobs_gauge = mc_metrics_gauge(m, "mooncake_jobs", "Recurring jobs held", NULL);
    s->restore_seconds = mc_metrics_gauge(m, "mooncake_jobs_last_restore_seconds",
                                          "Duration of the last jobs changelog restore", NULL);
    s->submitted = mc_metrics_counter(m, "mooncake_jobs_occurrences_total",
                                      "Occurrences written to tasks (triggers included)", NULL);
    s->cancelled = mc_metrics_counter(
        m, "mooncake_jobs_cancelled_total",
        "Occurrences written ahead and cancelled (update, pause, delete, cover early)", NULL);
    s->skipped = mc_metrics_counter(
        m, "mooncake_jobs_skipped_total",
        "Occurrences skipped (discard later, serial coalescing, misfire policy)", NULL);
    s->misfired =
        mc_metrics_counter(m, "mooncake_jobs_misfires_total",
                           "Times a job found occurrences missed beyond its threshold", NULL);
    s->relayed = mc_metrics_counter(m, "mooncake_jobs_relayed_results_total",
                                    "Final Results of occurrences relayed to their job", NULL);
    s->restored = mc_metrics_counter(m, "mooncake_jobs_restored_records_total",
                                     "Changelog records replayed on assignment", NULL);
    s->refused = mc_metrics_counter(
        m, "mooncake_jobs_paused_refused_total",
        "Jobs paused because Kafka refused their occurrence (larger than a record may be)", NULL);
    s->expired = mc_metrics_counter(
        m, "mooncake_jobs_stale_occurrences_total",
        "Occurrences given up on after their stale bound without a final Result", NULL);
    jobs_chains_metrics(s, m);
    jobs_broadcasts_metrics(s, m);
    return s;
}

/* What the router would refuse in every occurrence of j, though mc_job_ok
 * passes it: a target the app may not write, a follow-up due further ahead
 * than --max-due-ms. Refused at the put instead (dead-lettered, saying so). */
static bool occurrences_routable(const jobs *s, const mc_job *j, char *why, size_t whylen)
{
    if (!mc_job_target_ok(s->targets, j, why, whylen))
        return false;
    for (size_t i = 0; i < j->n_on_success; i++)
        if (j->on_success[i].delay_ms > s->cfg->max_due_ms) {
            snprintf(why, whylen, "on_success[%zu].delay_ms %lld is more than --max-due-ms %lld", i,
                     (long long)j->on_success[i].delay_ms, (long long)s->cfg->max_due_ms);
            return false;
        }
    return true;
}

/* ---- entries ------------------------------------------------------------------ */

static void entry_free(job_entry *e)
{
    if (!e)
        return;
    mc_job_schedule_clear(&e->sched);
    free(e);
}

static void free_node(mc_keynode *n, void *arg)
{
    (void)arg;
    entry_free((job_entry *)n);
}

static void part_free(job_part *p)
{
    if (!p)
        return;
    if (p->jobs) {
        mc_keymap_drain(p->jobs, free_node, NULL);
        mc_keymap_free(p->jobs);
    }
    mc_wheel_free(p->timers);
    jobs_chains_free(p);
    jobs_broadcasts_free(p);
    free(p);
}

static job_entry *find_entry(job_part *p, const void *key, size_t len)
{
    return (job_entry *)mc_keymap_find(p->jobs, key, len, mc_keymap_hash(key, len));
}

static void remove_entry(job_part *p, job_entry *e)
{
    mc_wheel_cancel(p->timers, &e->timer);
    mc_keymap_remove(p->jobs, &e->node);
    entry_free(e);
}

int64_t jobs_stale_bound(bool has_retry, const mc_retry_policy *retry, int64_t timeout_ms,
                         const mc_config *cfg)
{
    int64_t attempts = has_retry ? retry->max_attempts : cfg->retry_max_attempts;
    int64_t backoff = has_retry ? retry->max_backoff_ms : cfg->retry_max_backoff_ms;
    if (attempts < 1)
        attempts = 1;
    /* A task without a timeout gets the executor's (this role's flag: the
     * same configuration in a deployment). */
    int64_t timeout = timeout_ms > 0 ? timeout_ms : cfg->executor_timeout_ms;
    /* Saturated: a policy may name any backoff up to INT64_MAX. */
    if (timeout > MAX_STALE_MS || backoff > MAX_STALE_MS || attempts > MAX_STALE_MS / 1000)
        return MAX_STALE_MS;
    int64_t t = attempts * (timeout + 1000) + (attempts - 1) * backoff + 60000;
    return t > MAX_STALE_MS || t < 0 ? MAX_STALE_MS : t;
}

/* Makes the entry for a decoded job whose bytes are raw, or NULL with a
 * reason in why. The schedule compiles here, once per definition. */
static job_entry *entry_new(jobs *s, const void *key, size_t keylen, const mc_job *j,
                            const uint8_t *raw, size_t raw_len, char *why, size_t whylen)
{
    /* One allocation per job: a restore of a million jobs spends much of
     * its time growing the heap. */
    job_entry *e = calloc(1, sizeof *e + keylen + raw_len);
    if (!e) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    if (mc_job_schedule_init(&e->sched, j, s->zones, &mc_job_avro_names, why, whylen) != 0) {
        free(e);
        return NULL;
    }
    e->node.key_len = (uint32_t)keylen;
    e->node.hash = mc_keymap_hash(key, keylen);
    memcpy(e->key, key, keylen);
    e->job_raw = (uint8_t *)e->key + keylen;
    memcpy(e->job_raw, raw, raw_len);
    e->job_len = (uint32_t)raw_len;
    e->overlap = j->kind == MC_SCHEDULE_FIXED_DELAY ? MC_OVERLAP_SERIAL : j->overlap;
    e->misfire = j->misfire;
    e->catch_up_limit = j->catch_up_limit;
    e->misfire_threshold_ms = j->misfire_threshold_ms;
    e->max_runs = j->max_runs;
    e->stale_ms = jobs_stale_bound(j->has_retry, &j->retry, j->callback.timeout_ms, s->cfg);
    e->next_at = e->last_scheduled_at = e->queued_at = -1;
    return e;
}

bool jobs_tracked(const job_entry *e)
{
    return e->overlap != MC_OVERLAP_PARALLEL;
}

/* The occurrence scheduled at `at`, whose task is due at `due`, runs. */
void jobs_running_add(job_entry *e, int64_t at, int64_t due)
{
    if (e->n_running == MAX_RUNNING) {
        memmove(e->running, e->running + 1, (MAX_RUNNING - 1) * sizeof e->running[0]);
        e->n_running--;
    }
    e->running[e->n_running++] = (mc_running_occurrence){at, due};
}

bool jobs_running_remove(job_entry *e, int64_t at)
{
    for (uint8_t i = 0; i < e->n_running; i++)
        if (e->running[i].scheduled_at == at) {
            memmove(e->running + i, e->running + i + 1,
                    (size_t)(e->n_running - i - 1) * sizeof e->running[0]);
            e->n_running--;
            return true;
        }
    return false;
}

/* When the job next needs attention: an occurrence to write ahead, an
 * overlap to decide at its due time, a queued one, a stale one; -1: none. */
static int64_t action_at(const jobs *s, const job_entry *e, int64_t now)
{
    if (e->status != MC_JOB_ACTIVE)
        return -1;
    if (e->queued_at >= 0 && e->n_running == 0)
        return now;
    int64_t t = -1;
    for (uint8_t i = 0; i < e->n_running; i++)
        if (t < 0 || e->running[i].due_at + e->stale_ms < t)
            t = e->running[i].due_at + e->stale_ms;
    if (e->next_at >= 0) {
        /* Woken when the next one is half of ahead_ms away, jobs_step() writes
         * every one within ahead_ms: a job every second writes two or three
         * occurrences under one state record, each 2.5 to 5 s ahead (with
         * the default 5000), instead of a state per occurrence. */
        int64_t a = e->next_at - s->ahead_ms / 2;
        if (jobs_tracked(e) && e->n_running > 0)
            a = e->next_at; /* the overlap policy decides at its due time */
        if (t < 0 || a < t)
            t = a;
    }
    return t;
}

int jobs_arm(jobs *s, job_part *p, job_entry *e, int64_t now, mc_ctx *ctx)
{
    mc_wheel_cancel(p->timers, &e->timer);
    int64_t t = action_at(s, e, now);
    if (t < 0)
        return 0;
    if (mc_wheel_add(p->timers, &e->timer, t) != 0)
        return -1;
    mc_ctx_wakeup_at(ctx, t);
    return 0;
}

/* ---- commands ------------------------------------------------------------------------- */

/* Before an update, pause or delete requested at `at`: the occurrences due
 * by then that an outage kept from being written are written first (late),
 * so a command cancels only what it supersedes, never what was due before
 * it was sent. */
static int catch_up(jobs *s, job_entry *e, int64_t at, int64_t now, bool *dirty, mc_ctx *ctx)
{
    if (e->status != MC_JOB_ACTIVE || e->next_at < 0 || e->next_at > at || e->next_at > now)
        return 0;
    size_t budget = FIRE_BATCH;
    return jobs_step(s, e, now, at < now ? at : now, &budget, dirty, ctx);
}

/* Where an edited job's schedule goes on from. A fixed rate given no
 * start_at keeps its phase (the anchor is written into the job kept, so a
 * restore finds it); a fixed delay keeps its pending occurrence, or waits
 * for the running one; the others start after now and after the last one
 * written, so no occurrence id is used twice. */
static int64_t resume_point(const job_entry *e, const job_entry *old, const mc_job *j,
                            int64_t first, int64_t now)
{
    int64_t from = old ? now - 1 : mc_job_first_after(j, now);
    if (old && old->last_scheduled_at > from)
        from = old->last_scheduled_at;
    if (old && e->sched.kind == MC_SCHEDULE_FIXED_DELAY &&
        old->sched.kind == MC_SCHEDULE_FIXED_DELAY) {
        if (old->n_running > 0)
            return -1;
        if (old->next_at >= 0)
            return old->next_at;
        if (first >= 0)
            return first;
    }
    return mc_job_schedule_next(&e->sched, from);
}

static int put_job(jobs *s, job_part *p, const mc_record *r, const mc_job_command *c, mc_ctx *ctx)
{
    int64_t now = mc_ctx_now_ms(ctx);
    char why[512];
    if (!mc_job_ok(&c->put, now, s->zones, &mc_job_avro_names, why, sizeof why) ||
        !occurrences_routable(s, &c->put, why, sizeof why)) {
        char reason[600];
        snprintf(reason, sizeof reason, "jobs: invalid job: %s", why);
        return mc_ctx_dead_letter(ctx, r, reason, NULL);
    }
    job_entry *old = find_entry(p, r->key, r->key_len);
    int64_t first = -1;
    bool caught = false;
    if (old && (catch_up(s, old, c->put.created_at, now, &caught, ctx) != 0 ||
                jobs_cancel_after(s, old, c->put.created_at, now, ctx, &first) != 0))
        return -1;
    mc_job j = c->put;
    mc_buf anchored = {0};
    const uint8_t *raw = c->put_raw;
    size_t raw_len = c->put_raw_len;
    if (j.kind == MC_SCHEDULE_FIXED_RATE && j.start_at == 0) {
        j.start_at =
            old && old->sched.kind == MC_SCHEDULE_FIXED_RATE ? old->sched.anchor : j.created_at;
        if (mc_encode_job(&j, &anchored) != 0)
            return -1;
        raw = anchored.data;
        raw_len = anchored.len;
    }
    job_entry *e = entry_new(s, r->key, r->key_len, &j, raw, raw_len, why, sizeof why);
    mc_buf_free(&anchored);
    if (!e)
        return -1; /* mc_job_ok compiled the same schedule: only memory is left */
    /* A replace keeps a paused job paused (resume it), and its counters. */
    e->status =
        c->put.paused || (old && old->status == MC_JOB_PAUSED) ? MC_JOB_PAUSED : MC_JOB_ACTIVE;
    e->next_at = resume_point(e, old, &j, first, now);
    if (old) {
        e->runs = old->runs;
        e->skipped = old->skipped;
        e->last_scheduled_at = old->last_scheduled_at;
        e->queued_at = old->queued_at;
        /* What still runs keeps counting against the overlap policy. */
        if (jobs_tracked(e))
            for (uint8_t i = 0; i < old->n_running; i++)
                jobs_running_add(e, old->running[i].scheduled_at, old->running[i].due_at);
        remove_entry(p, old);
    } else {
        /* Held at once: the timers, which also count, may not run for hours. */
        mc_gauge_add(s->jobs_gauge, 1);
    }
    e->version = r->offset;
    mc_keymap_insert(p->jobs, &e->node);
    size_t budget = FIRE_BATCH;
    return jobs_attend(s, p, e, now, &budget, true, ctx);
}

static int job_action(jobs *s, job_part *p, const mc_record *r, const mc_job_action *a, mc_ctx *ctx)
{
    int64_t now = mc_ctx_now_ms(ctx);
    job_entry *e = find_entry(p, r->key, r->key_len);
    if (!e) {
        char reason[600];
        snprintf(reason, sizeof reason, "jobs: no job %.*s to %s", (int)r->key_len,
                 (const char *)r->key,
                 a->action == MC_JOB_PAUSE    ? "pause"
                 : a->action == MC_JOB_RESUME ? "resume"
                 : a->action == MC_JOB_DELETE ? "delete"
                                              : "trigger");
        return mc_ctx_dead_letter(ctx, r, reason, NULL);
    }
    int64_t first;
    size_t budget = FIRE_BATCH;
    bool caught = false;
    int rc;
    if ((a->action == MC_JOB_PAUSE || a->action == MC_JOB_DELETE) &&
        catch_up(s, e, a->requested_at, now, &caught, ctx) != 0)
        return -1;
    switch (a->action) {
    case MC_JOB_PAUSE:
        if (e->status != MC_JOB_ACTIVE) /* paused already, or the catch-up ended it */
            return caught ? jobs_write_state(s, p, e, now, ctx) : 0;
        if (jobs_cancel_after(s, e, a->requested_at, now, ctx, &first) != 0)
            return -1;
        /* The cancelled ones are due again when resumed: the misfire policy
         * then decides about them like about any missed one. */
        if (first >= 0 && (e->next_at < 0 || first < e->next_at))
            e->next_at = first;
        e->status = MC_JOB_PAUSED;
        return jobs_attend(s, p, e, now, &budget, true, ctx);
    case MC_JOB_RESUME:
        if (e->status != MC_JOB_PAUSED)
            return 0;
        e->status = MC_JOB_ACTIVE;
        return jobs_attend(s, p, e, now, &budget, true, ctx);
    case MC_JOB_DELETE:
        if (jobs_cancel_after(s, e, a->requested_at, now, ctx, &first) != 0 ||
            jobs_write_tombstone(s, p, e, ctx) != 0)
            return -1;
        remove_entry(p, e);
        mc_gauge_add(s->jobs_gauge, -1);
        return 0;
    case MC_JOB_TRIGGER:
        /* Runs whatever the schedule, the state and the overlap policy
         * say, as XXL-JOB's manual trigger does. */
        rc = jobs_submit(s, e, a->requested_at, now, now, ctx);
        return rc <= 0 ? rc : jobs_write_state(s, p, e, now, ctx); /* refused: paused */
    }
    return 0;
}

static int occurrence_done(jobs *s, job_part *p, const mc_record *r, const mc_occurrence_done *d,
                           mc_ctx *ctx)
{
    job_entry *e = find_entry(p, r->key, r->key_len);
    if (!e || !jobs_running_remove(e, d->scheduled_at))
        return 0; /* not waited for: parallel, expired, covered, or deleted */
    int64_t now = mc_ctx_now_ms(ctx);
    if (e->sched.kind == MC_SCHEDULE_FIXED_DELAY && e->n_running == 0 && e->next_at < 0)
        jobs_delay_from(e, d->finished_at);
    size_t budget = FIRE_BATCH;
    return jobs_attend(s, p, e, now, &budget, true, ctx);
}

/* A command whose partition is not its key's home (written with another
 * partitioner) goes home unchanged, as the router does with tasks: all of
 * a job's commands must meet in one partition. */
static int send_home(jobs *s, const mc_record *r, int32_t home, mc_ctx *ctx)
{
    return mc_ctx_forward(ctx, s->commands, home, r->key, r->key_len, r->value, r->value_len);
}

static bool key_matches(const mc_record *r, const char *app_id, const char *job_id)
{
    /* A job's key, a chain's (app_id/ordering_key, up to 256 bytes after it), or a
     * broadcast task's (app_id/task_id). */
    char key[MC_MAX_TASK_KEY_LEN + MC_MAX_ORDERING_KEY_LEN];
    size_t n = mc_task_key(app_id, job_id, key, sizeof key);
    return n < sizeof key && n == r->key_len && memcmp(key, r->key, n) == 0;
}

/* The app and the name (job id, or a chain's ordering key) a command's
 * record must be keyed by. */
static void command_key(const mc_job_command *c, const char **app, const char **name)
{
    switch (c->kind) {
    case MC_JOBCMD_PUT:
        *app = c->put.app_id, *name = c->put.job_id;
        break;
    case MC_JOBCMD_ACTION:
        *app = c->action.app_id, *name = c->action.job_id;
        break;
    case MC_JOBCMD_DONE:
        *app = c->done.app_id, *name = c->done.job_id;
        break;
    case MC_JOBCMD_ADD_LINK:
        *app = c->add_link.task.app_id, *name = c->add_link.ordering_key;
        break;
    case MC_JOBCMD_CANCEL_LINK:
        *app = c->cancel_link.app_id, *name = c->cancel_link.ordering_key;
        break;
    case MC_JOBCMD_LINK_DONE:
        *app = c->link_done.app_id, *name = c->link_done.ordering_key;
        break;
    case MC_JOBCMD_START_BROADCAST:
        *app = c->start_broadcast.task.app_id, *name = c->start_broadcast.task.task_id;
        break;
    case MC_JOBCMD_SHARD_DONE:
        *app = c->shard_done.app_id, *name = c->shard_done.task_id;
        break;
    }
}

static int process_command(jobs *s, const mc_record *r, mc_ctx *ctx)
{
    job_part *p = mc_part_table_get(&s->parts, r->partition);
    if (!p)
        return 0;
    if (!r->value || !r->key)
        return mc_ctx_dead_letter(ctx, r, "jobs: a job command needs a key and a value", NULL);
    int32_t home = mc_key_partition(r->key, r->key_len, s->command_partitions);
    if (home != r->partition)
        return send_home(s, r, home, ctx);
    mc_arena_reset(s->arena);
    mc_job_command c;
    char detail[256];
    mc_codec_err err = mc_decode_job_command(&s->codec, r->value, r->value_len, s->arena, &c,
                                             detail, sizeof detail);
    if (err != MC_CODEC_OK) {
        char reason[400];
        snprintf(reason, sizeof reason, "jobs: undecodable JobCommand: %s: %s",
                 mc_codec_strerror(err), detail);
        return mc_ctx_dead_letter(ctx, r, reason, NULL);
    }
    const char *app = NULL, *name = NULL;
    command_key(&c, &app, &name);
    if (!key_matches(r, app, name))
        return mc_ctx_dead_letter(
            ctx, r,
            c.kind >= MC_JOBCMD_START_BROADCAST ? "jobs: the record key is not app_id/task_id"
            : c.kind >= MC_JOBCMD_ADD_LINK      ? "jobs: the record key is not app_id/ordering_key"
                                                : "jobs: the record key is not app_id/job_id",
            NULL);
    switch (c.kind) {
    case MC_JOBCMD_PUT:
        return put_job(s, p, r, &c, ctx);
    case MC_JOBCMD_ACTION:
        return job_action(s, p, r, &c.action, ctx);
    case MC_JOBCMD_DONE:
        return occurrence_done(s, p, r, &c.done, ctx);
    case MC_JOBCMD_ADD_LINK:
    case MC_JOBCMD_CANCEL_LINK:
    case MC_JOBCMD_LINK_DONE:
        return jobs_chain_command(s, p, r, &c, ctx);
    case MC_JOBCMD_START_BROADCAST:
    case MC_JOBCMD_SHARD_DONE:
        return jobs_broadcast_command(s, p, r, &c, ctx);
    }
    return 0;
}

/* A final Result of an occurrence goes to its job as an OccurrenceDone. */
/* Whether a results key "app/<job_id>@<digits>" can be an occurrence's:
 * most Results are of one-shot tasks, and this spares them a decode. */
static bool occurrence_key(const mc_record *r)
{
    const char *k = r->key;
    size_t i = r->key_len;
    if (!k || i < 4)
        return false;
    size_t digits = 0;
    while (i > 0 && k[i - 1] >= '0' && k[i - 1] <= '9')
        i--, digits++;
    return digits > 0 && digits <= 18 && i > 1 && k[i - 1] == '@';
}

bool jobs_final_result(jobs *s, const mc_record *r, mc_result *res)
{
    mc_arena_reset(s->arena);
    return mc_decode_result(r->value, r->value_len, s->arena, res, NULL, 0) == MC_CODEC_OK &&
           res->outcome != MC_OUTCOME_FAILED_WILL_RETRY;
}

mc_outcome jobs_relayed_outcome(mc_outcome o)
{
    return o == MC_OUTCOME_DROPPED ? MC_OUTCOME_CANCELLED : o;
}

int jobs_relay_command(jobs *s, const char *app, const char *name, const mc_job_command *c,
                       mc_ctx *ctx)
{
    char key[MC_MAX_TASK_KEY_LEN + MC_MAX_ORDERING_KEY_LEN];
    size_t klen = mc_task_key(app, name, key, sizeof key);
    if (klen >= sizeof key)
        return 0;
    mc_buf_reset(&s->buf);
    if (mc_encode_job_command(c, &s->buf) != 0 ||
        mc_ctx_forward(ctx, s->commands, mc_key_partition(key, klen, s->command_partitions), key,
                       klen, s->buf.data, s->buf.len) != 0)
        return -1;
    return 1;
}

static int relay_result(jobs *s, const mc_record *r, mc_ctx *ctx)
{
    const void *chain;
    size_t chain_len;
    if (r->value && mc_record_header(r, MC_BROADCAST_HEADER, &chain, &chain_len))
        return jobs_broadcast_relay(s, r, ctx);
    if (r->value && mc_record_header(r, MC_CHAIN_HEADER, &chain, &chain_len))
        return jobs_chain_relay(s, r, ctx);
    mc_result res;
    if (!r->value || !occurrence_key(r) || !jobs_final_result(s, r, &res))
        return 0;
    size_t job_len;
    int64_t at;
    if (!mc_occurrence_parse(res.task_id, &job_len, &at) || job_len > MC_JOB_MAX_ID_LEN)
        return 0;
    char job_id[MC_JOB_MAX_ID_LEN + 1];
    memcpy(job_id, res.task_id, job_len);
    job_id[job_len] = '\0';
    mc_job_command c = {.kind = MC_JOBCMD_DONE};
    c.done = (mc_occurrence_done){.app_id = res.app_id,
                                  .job_id = job_id,
                                  .scheduled_at = at,
                                  .outcome = jobs_relayed_outcome(res.outcome),
                                  .finished_at = res.finished_at};
    int rc = jobs_relay_command(s, res.app_id, job_id, &c, ctx);
    if (rc > 0)
        mc_counter_add(s->relayed, 1);
    return rc < 0 ? -1 : 0;
}

static int jobs_process(void *self, const mc_record *r, mc_ctx *ctx)
{
    jobs *s = self;
    if (strcmp(r->topic, s->results_topic) == 0)
        return relay_result(s, r, ctx);
    return process_command(s, r, ctx);
}

/* ---- timers --------------------------------------------------------------------------- */

static void update_gauges(jobs *s)
{
    size_t n = 0, links = 0, broadcasts = 0;
    job_part *p;
    for (int32_t i = 0; (p = mc_part_table_next(&s->parts, &i)); i++) {
        n += mc_keymap_count(p->jobs);
        links += jobs_chains_links(p);
        broadcasts += mc_keymap_count(p->broadcasts);
    }
    mc_gauge_set(s->jobs_gauge, (double)n);
    mc_gauge_set(s->links_gauge, (double)links);
    mc_gauge_set(s->broadcasts_gauge, (double)broadcasts);
}

static int jobs_punctuate(void *self, int64_t now, mc_ctx *ctx)
{
    jobs *s = self;
    size_t budget = FIRE_BATCH;
    int64_t next = INT64_MAX;
    job_part *p;
    mc_timer *due[256];
    for (int32_t i = 0; (p = mc_part_table_next(&s->parts, &i)); i++) {
        while (budget > 0) {
            size_t want = budget < 256 ? budget : 256;
            size_t got = mc_wheel_advance(p->timers, now, due, want);
            for (size_t k = 0; k < got; k++)
                if (jobs_attend(s, p, MC_TIMER_OWNER(due[k], job_entry, timer), now, &budget, false,
                                ctx) != 0)
                    return -1;
            if (got < want)
                break;
        }
        if (jobs_chains_punctuate(s, p, now, &budget, ctx) != 0 ||
            jobs_broadcasts_punctuate(s, p, now, &budget, ctx) != 0)
            return -1;
        int64_t d = mc_wheel_next_deadline(p->timers);
        if (d < next)
            next = d;
        d = mc_wheel_next_deadline(p->chain_timers);
        if (d < next)
            next = d;
        d = mc_wheel_next_deadline(p->broadcast_timers);
        if (d < next)
            next = d;
    }
    if (budget == 0)
        next = now;
    if (next != INT64_MAX)
        mc_ctx_wakeup_at(ctx, next);
    update_gauges(s);
    return 0;
}

/* ---- assignment and restore ------------------------------------------------------------ */

typedef struct restoring {
    jobs *s;
    job_part **parts;
    size_t n;
    bool nomem;
} restoring;

static void restore_record(void *arg, const mc_record *m)
{
    restoring *rs = arg;
    jobs *s = rs->s;
    job_part *p = NULL;
    for (size_t i = 0; i < rs->n; i++)
        if (rs->parts[i]->partition == m->partition)
            p = rs->parts[i];
    if (!p || !m->key)
        return;
    job_entry *old = find_entry(p, m->key, m->key_len);
    if (!m->value) {
        if (old)
            remove_entry(p, old);
        return;
    }
    mc_arena_reset(s->arena);
    mc_job_state st;
    char detail[256], why[512];
    job_entry *e = NULL;
    bool decoded = mc_decode_job_state_head(m->value, m->value_len, s->arena, &st, detail,
                                            sizeof detail) == MC_CODEC_OK;
    if (decoded && old && old->job_len == st.job_raw_len &&
        memcmp(old->job_raw, st.job_raw, st.job_raw_len) == 0) {
        /* The same job, further on (most of an uncompacted changelog): only
         * where its schedule stands changes, so neither the job's bytes
         * (checked when they were first read) nor its schedule are read
         * again. This keeps a restore at the store's pace. */
        e = old;
        e->n_running = 0;
        old = NULL;
    } else {
        if (old)
            remove_entry(p, old);
        old = NULL;
        decoded = decoded && mc_decode_job(st.job_raw, st.job_raw_len, s->arena, &st.job, detail,
                                           sizeof detail) == MC_CODEC_OK;
    }
    if (!decoded)
        snprintf(why, sizeof why, "undecodable: %s", detail);
    else if (!e)
        e = entry_new(s, m->key, m->key_len, &st.job, st.job_raw, st.job_raw_len, why, sizeof why);
    else
        mc_keymap_remove(p->jobs, &e->node); /* inserted again below */
    if (!e) {
        /* Only we write it: a bug, tampering, or a zone gone from the
         * system's tzdata. Say so loudly; the rest of the partition holds. */
        char off[24];
        snprintf(off, sizeof off, "%" PRId64, m->offset);
        mc_log(s->logger, MC_LOG_ERROR, "jobs changelog record skipped", "topic",
               s->changelog_topic, "offset", off, "error", why, (const char *)NULL);
        return;
    }
    e->version = st.version;
    e->status = st.status;
    e->next_at = st.next_at;
    e->runs = st.runs;
    e->last_scheduled_at = st.last_scheduled_at;
    for (size_t i = 0; i < st.n_running; i++)
        jobs_running_add(e, st.running[i].scheduled_at, st.running[i].due_at);
    e->queued_at = st.queued_at;
    e->skipped = st.skipped;
    mc_keymap_insert(p->jobs, &e->node);
    mc_counter_add(s->restored, 1);
}

static void restore_chain_record(void *arg, const mc_record *m)
{
    restoring *rs = arg;
    for (size_t i = 0; i < rs->n; i++)
        if (rs->parts[i]->partition == m->partition) {
            jobs_chain_restore_record(rs->s, rs->parts[i], m);
            return;
        }
}

static void restore_broadcast_record(void *arg, const mc_record *m)
{
    restoring *rs = arg;
    for (size_t i = 0; i < rs->n; i++)
        if (rs->parts[i]->partition == m->partition) {
            if (!jobs_broadcast_restore_record(rs->s, rs->parts[i], m))
                rs->nomem = true;
            return;
        }
}

typedef struct homes {
    int32_t partition, partitions;
    const char *stray; /* the key of a job, chain or broadcast whose home is another partition */
    size_t stray_len;
} homes;

static void check_home_key(homes *h, const char *key, size_t len)
{
    if (!h->stray && mc_key_partition(key, len, h->partitions) != h->partition) {
        h->stray = key;
        h->stray_len = len;
    }
}

static void check_home(mc_keynode *n, void *arg)
{
    const job_entry *e = (const job_entry *)n;
    check_home_key(arg, e->key, e->node.key_len);
}

static void check_chain_home(mc_keynode *n, void *arg)
{
    const chain_entry *e = (const chain_entry *)n;
    check_home_key(arg, e->key, e->node.key_len);
}

static void check_broadcast_home(mc_keynode *n, void *arg)
{
    const broadcast_entry *e = (const broadcast_entry *)n;
    check_home_key(arg, e->key, e->node.key_len);
}

/* The jobs topics keep the partition count they were made with: a job's
 * state (and a chain's) is where its commands land. If they grew (behind
 * mooncake's back), its later commands would land elsewhere and find no
 * job (or start a second chain of the same key), while it fires on; so the
 * role stops and says what to do. Returns 0, or -1. */
static int check_homes(jobs *s, job_part *p)
{
    homes h = {p->partition, s->command_partitions, NULL, 0};
    mc_keymap_each(p->jobs, check_home, &h);
    mc_keymap_each(p->chains, check_chain_home, &h);
    mc_keymap_each(p->broadcasts, check_broadcast_home, &h);
    if (!h.stray)
        return 0;
    char key[MC_JOB_MAX_KEY_LEN + 300], part[16], parts[16];
    snprintf(key, sizeof key, "%.*s", (int)h.stray_len, h.stray);
    snprintf(part, sizeof part, "%" PRId32, p->partition);
    snprintf(parts, sizeof parts, "%" PRId32, s->command_partitions);
    mc_log(s->logger, MC_LOG_ERROR,
           "job-commands has more partitions than when its jobs were placed: the jobs topics must "
           "never grow (mooncakectl partitions grow leaves them alone); delete the extra "
           "partitions' topics and recreate them with the old count, or re-put every job",
           "job", key, "partition", part, "job_commands_partitions", parts, (const char *)NULL);
    return -1;
}

static void arm_one(mc_keynode *n, void *arg)
{
    void **a = arg;
    jobs *s = a[0];
    job_part *p = a[1];
    mc_ctx *ctx = a[2];
    int64_t *now = a[3];
    if (jobs_arm(s, p, (job_entry *)n, *now, ctx) != 0)
        *(bool *)a[4] = true;
}

static int partition_counts(jobs *s, mc_ctx *ctx)
{
    char err[256];
    int t = mc_ctx_partition_count(ctx, "tasks", err, sizeof err);
    int c = t >= 0 ? mc_ctx_partition_count(ctx, "job-commands", err, sizeof err) : -1;
    int r = c >= 0 ? mc_ctx_partition_count(ctx, "results", err, sizeof err) : -1;
    if (t <= 0 || c <= 0 || r <= 0) {
        mc_log(s->logger, MC_LOG_ERROR, "cannot read partition counts", "error", err,
               (const char *)NULL);
        return -1;
    }
    s->task_partitions = t;
    s->command_partitions = c;
    s->result_partitions = r;
    return 0;
}

static int jobs_on_assign(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx)
{
    jobs *s = self;
    mc_ctx_set_ready(ctx, false);
    if (partition_counts(s, ctx) != 0)
        return -1;
    job_part **fresh = calloc((size_t)parts->cnt + 1, sizeof *fresh);
    int32_t *ids = calloc((size_t)parts->cnt + 1, sizeof *ids);
    if (!fresh || !ids) {
        free(fresh);
        free(ids);
        return -1;
    }
    size_t n = 0;
    int64_t now = mc_ctx_now_ms(ctx);
    int rc = 0;
    for (int i = 0; i < parts->cnt && rc == 0; i++) {
        const rd_kafka_topic_partition_t *tp = &parts->elems[i];
        if (strcmp(tp->topic, s->commands_topic) != 0 ||
            mc_part_table_get(&s->parts, tp->partition))
            continue;
        job_part *p = calloc(1, sizeof *p);
        if (p) {
            p->partition = tp->partition;
            p->jobs = mc_keymap_new(ENTRY_KEY_OFFSET);
            p->timers = mc_wheel_new(now);
            p->chains = mc_keymap_new(CHAIN_KEY_OFFSET);
            p->chain_timers = mc_wheel_new(now);
            p->broadcasts = mc_keymap_new(BROADCAST_KEY_OFFSET);
            p->broadcast_timers = mc_wheel_new(now);
        }
        if (!p || !p->jobs || !p->timers || !p->chains || !p->chain_timers || !p->broadcasts ||
            !p->broadcast_timers || mc_part_table_put(&s->parts, tp->partition, p) != 0) {
            part_free(p);
            rc = -1;
            break;
        }
        ids[n] = p->partition;
        fresh[n++] = p;
    }
    mc_restore_stats st = {0, 0};
    restoring rs = {s, fresh, n, false};
    mc_restore_stats chain_st = {0, 0}, broadcast_st = {0, 0};
    if (rc == 0 && n > 0)
        rc = mc_ctx_restore(ctx, "jobs", ids, n, restore_record, &rs, &st);
    if (rc == 0 && n > 0)
        rc = mc_ctx_restore(ctx, "chains", ids, n, restore_chain_record, &rs, &chain_st);
    if (rc == 0 && n > 0)
        rc =
            mc_ctx_restore(ctx, "broadcasts", ids, n, restore_broadcast_record, &rs, &broadcast_st);
    if (rc == 0 && rs.nomem) {
        mc_log(s->logger, MC_LOG_ERROR, "out of memory restoring the broadcasts",
               (const char *)NULL);
        rc = -1;
    }
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = check_homes(s, fresh[i]);
    now = mc_ctx_now_ms(ctx);
    bool failed = false;
    for (size_t i = 0; i < n && rc == 0; i++) {
        void *a[] = {s, fresh[i], ctx, &now, &failed};
        mc_keymap_each(fresh[i]->jobs, arm_one, a);
    }
    for (size_t i = 0; i < n && rc == 0; i++)
        if (jobs_chains_arm(s, fresh[i], now, ctx) != 0 ||
            jobs_broadcasts_arm(s, fresh[i], now, ctx) != 0)
            failed = true;
    if (failed)
        rc = -1;
    if (rc == 0 && n > 0) {
        char jobs_text[24], chains_text[24], broadcasts_text[24];
        snprintf(jobs_text, sizeof jobs_text, "%" PRIu64, st.records);
        snprintf(chains_text, sizeof chains_text, "%" PRIu64, chain_st.records);
        snprintf(broadcasts_text, sizeof broadcasts_text, "%" PRIu64, broadcast_st.records);
        mc_log(s->logger, MC_LOG_INFO, "restored jobs", "records", jobs_text, "chain_records",
               chains_text, "broadcast_records", broadcasts_text, (const char *)NULL);
        mc_gauge_set(s->restore_seconds, st.seconds + chain_st.seconds + broadcast_st.seconds);
    }
    free(fresh);
    free(ids);
    update_gauges(s);
    mc_ctx_wakeup_at(ctx, now);
    mc_ctx_set_ready(ctx, rc == 0);
    return rc;
}

static void jobs_on_revoke(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx)
{
    (void)ctx;
    jobs *s = self;
    for (int i = 0; i < parts->cnt; i++)
        if (strcmp(parts->elems[i].topic, s->commands_topic) == 0)
            part_free(mc_part_table_take(&s->parts, parts->elems[i].partition));
    update_gauges(s);
}

/* The writer schemas load (files readable, each resolvable to ours), and
 * the Kafka targets' allow-list parses. */
static int jobs_check_config(const mc_config *cfg, char *err, size_t errlen)
{
    mc_codec_writer *w;
    size_t n;
    if (mc_writer_schemas_load(cfg->job_command_writer_schemas, MC_SCHEMA_JOB_COMMAND,
                               "--job-command-writer-schemas", &w, &n, err, errlen) != 0)
        return -1;
    mc_writer_schemas_free(w, n);
    mc_kafka_targets *t =
        mc_kafka_targets_parse(cfg->kafka_targets, cfg->topic_prefix, err, errlen);
    mc_kafka_targets_free(t);
    return t ? 0 : -1;
}

static void jobs_destroy(void *self)
{
    jobs *s = self;
    if (!s)
        return;
    job_part *p;
    for (int32_t i = 0; (p = mc_part_table_next(&s->parts, &i)); i++)
        part_free(p);
    mc_part_table_free(&s->parts);
    mc_zone_cache_free(s->zones);
    mc_writer_schemas_free(s->writers, s->n_writers);
    mc_kafka_targets_free(s->targets);
    mc_arena_free(s->arena);
    mc_arena_free(s->link_arena);
    mc_buf_free(&s->buf);
    free(s);
}

static const char *const jobs_inputs[] = {"job-commands", "results", NULL};

const mc_processor mc_jobs_processor = {
    .name = "jobs",
    .input_topics = jobs_inputs,
    .check_config = jobs_check_config,
    .create = jobs_create,
    .process = jobs_process,
    .punctuate = jobs_punctuate,
    .on_assign = jobs_on_assign,
    .on_revoke = jobs_on_revoke,
    .destroy = jobs_destroy,
};
