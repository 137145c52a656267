/* mooncakectl jobs: recurring jobs from the command line. put (the gateway's
 * POST /jobs JSON, checked with the jobs role's rules), pause, resume,
 * delete and trigger go to <prefix>job-commands as the gateway sends them;
 * list reads the jobs role's compacted table <prefix>jobs; preview computes
 * a cron expression's next fire times without Kafka. See mooncakectl.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_json.h"
#include "job_schedule.h"
#include "kafka.h"
#include "mooncakectl.h"

/* How messages name a job's fields given as flags (preview). */
static const mc_job_field_names flag_names = {
    .app_id = "--app",
    .job_id = "--job",
    .kind = "schedule",
    .cron = "--cron",
    .time_zone = "--tz",
    .interval_ms = "interval",
    .start_at = "start time",
    .end_at = "end time",
    .max_runs = "max runs",
    .catch_up_limit = "catch-up limit",
    .misfire_threshold_ms = "misfire threshold",
    .created_at = "the clock",
    .task = &mc_task_avro_names,
};

/* The zone cache over the configured zoneinfo directory; NULL after saying
 * why. */
static mc_zone_cache *zones_new(ctl *c)
{
    mc_zone_cache *z = mc_zone_cache_new(c->cfg.zoneinfo_dir);
    if (!z)
        ctl_fail(EXIT_KAFKA, "out of memory");
    return z;
}

/* An array of epoch ms. */
static json_t *instants_json(const int64_t *at, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(at[i]));
    return a;
}

/* Prints fire times, one per line: RFC 3339 UTC and epoch ms. */
static void print_instants(const int64_t *at, int n)
{
    for (int i = 0; i < n; i++) {
        char when[32];
        ctl_fmt_time(at[i], when);
        printf("%s  %" PRId64 "\n", when, at[i]);
    }
}

/* Encodes cmd, sends it keyed app/job and reports where it went. Returns 0
 * or an exit status; *d is filled. */
static int send_job_command(ctl *c, const mc_job_command *cmd, const char *key, delivery *d)
{
    mc_buf buf = {0};
    int rc = mc_encode_job_command(cmd, &buf) != 0 ? ctl_fail(EXIT_KAFKA, "out of memory")
                                                   : ctl_send(c, "job-commands", key, &buf, d);
    mc_buf_free(&buf);
    if (rc == 0) {
        char topic[300];
        mc_topic_name(&c->cfg, "job-commands", topic, sizeof topic);
        ctl_report(c, "%s %s: %s partition %d offset %" PRId64,
                   cmd->kind == MC_JOBCMD_PUT ? "put" : mc_job_action_name(cmd->action.action), key,
                   topic, (int)d->partition, d->offset);
    }
    return rc;
}

/* The common fields of -J output about a sent command. */
static json_t *sent_json(const char *command, const char *key, const char *app, const char *job,
                         const delivery *d)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:i, s:I}", "command", command, "key", key, "app_id",
                     app, "job_id", job, "partition", (int)d->partition, "offset",
                     (json_int_t)d->offset);
}

/* ---- put ------------------------------------------------------------------------------ */

/* --kafka-* and --late-* over the job read from -f: they replace its
 * callback (or Kafka target) and its late policy, as submit's flags make a
 * task's; the job is then checked again. False with a line in why. */
static bool job_flags(const ctl_opts *o, mc_arena *a, int64_t now, mc_zone_cache *zones, mc_job *j,
                      char *why, size_t whylen)
{
    bool kafka = o->kafka_topic || o->kafka_key || o->kafka_value || o->kafka_value_file ||
                 o->kafka_headers.n;
    if (!kafka && !o->late_ms && !o->late_action)
        return true;
    if (kafka && !o->kafka_topic) {
        snprintf(why, whylen, "--kafka-key, --kafka-value and --kafka-header need --kafka-topic");
        return false;
    }
    mc_task t = {0};
    if ((kafka && !ctl_kafka_target_from_flags(o, a, &t, why, whylen)) ||
        !ctl_late_policy_from_flags(o, &t, why, whylen))
        return false;
    if (kafka) {
        j->callback = t.callback;
        j->has_kafka_target = true;
        j->kafka_target = t.kafka_target;
    }
    if (t.has_late_policy) {
        j->has_late_policy = true;
        j->late_policy = t.late_policy;
    }
    mc_job_field_names names = mc_job_json_names;
    if (j->kind == MC_SCHEDULE_FIXED_DELAY)
        names.interval_ms = "schedule.fixedDelayMs";
    return mc_job_ok(j, now, zones, &names, why, whylen);
}

static int cmd_put(ctl *c)
{
    const ctl_opts *o = &c->o;
    if (!o->file)
        return ctl_fail(EXIT_USAGE, "jobs put needs -f FILE (the gateway's POST /jobs JSON; - "
                                    "for stdin)");
    char why[1024];
    size_t len;
    char *body = mc_config_read_file(o->file, "-f", &len, why, sizeof why);
    if (!body)
        return ctl_fail(EXIT_USAGE, "%s", why);
    mc_arena *arena = mc_arena_new();
    mc_zone_cache *zones = zones_new(c);
    int rc = 0;
    if (!arena || !zones) {
        rc = EXIT_KAFKA;
        goto out;
    }
    int64_t now = mc_now_ms(), at[MC_JOB_NEXT_FIRES];
    mc_job_json_options jo = {
        .now_ms = now,
        .retry_defaults = {c->cfg.retry_max_attempts, c->cfg.retry_initial_backoff_ms,
                           c->cfg.retry_multiplier, c->cfg.retry_max_backoff_ms},
        .zones = zones,
        .max_due_ms = c->cfg.max_due_ms,
    };
    mc_job_command cmd = {.kind = MC_JOBCMD_PUT};
    int n = -1;
    if (mc_job_from_json(body, len, &jo, arena, &cmd.put, why, sizeof why) == 0 &&
        job_flags(o, arena, now, zones, &cmd.put, why, sizeof why))
        n = mc_job_next_fires(&cmd.put, now, zones, at, MC_JOB_NEXT_FIRES, why, sizeof why);
    if (n < 0) {
        rc = ctl_fail(EXIT_USAGE, "%s: %s (nothing sent)", strcmp(o->file, "-") ? o->file : "stdin",
                      why);
        goto out;
    }
    char key[1024];
    if (mc_task_key(cmd.put.app_id, cmd.put.job_id, key, sizeof key) >= sizeof key) {
        rc =
            ctl_fail(EXIT_USAGE, "app/job is longer than %zu bytes (nothing sent)", sizeof key - 1);
        goto out;
    }
    delivery d = {0};
    rc = send_job_command(c, &cmd, key, &d);
    if (rc == 0 && o->json) {
        json_t *j = sent_json("put", key, cmd.put.app_id, cmd.put.job_id, &d);
        json_object_set_new(j, "next_fire_times", instants_json(at, n));
        ctl_print_json(j);
    } else if (rc == 0) {
        puts(key);
        print_instants(at, n);
    }
out:
    mc_zone_cache_free(zones);
    mc_arena_free(arena);
    free(body);
    return rc;
}

/* ---- pause, resume, delete, trigger ------------------------------------------------------- */

static int cmd_action(ctl *c, mc_job_action_kind action)
{
    const ctl_opts *o = &c->o;
    char why[512];
    if (!o->app || !o->job)
        return ctl_fail(EXIT_USAGE, "jobs %s needs --app APP and --job JOB", o->action);
    const mc_task_field_names ids = {.app_id = "--app", .task_id = "--job"};
    if (!ctl_id_ok("--app", o->app, why, sizeof why) ||
        !ctl_id_ok("--job", o->job, why, sizeof why) ||
        !mc_task_ids_ok(o->app, o->job, &ids, why, sizeof why))
        return ctl_fail(EXIT_USAGE, "%s (nothing sent)", why);
    if (strlen(o->job) > MC_JOB_MAX_ID_LEN)
        return ctl_fail(EXIT_USAGE, "--job is longer than %d bytes (nothing sent)",
                        MC_JOB_MAX_ID_LEN);
    char key[1024], occurrence[1024];
    mc_task_key(o->app, o->job, key, sizeof key);
    mc_job_command cmd = {
        .kind = MC_JOBCMD_ACTION,
        .action = {
            .app_id = o->app, .job_id = o->job, .action = action, .requested_at = mc_now_ms()}};
    delivery d = {0};
    int rc = send_job_command(c, &cmd, key, &d);
    if (rc != 0)
        return rc;
    /* A trigger's occurrence is the task <job>@<requested_at>. */
    mc_occurrence_id(o->job, cmd.action.requested_at, occurrence, sizeof occurrence);
    if (o->json) {
        json_t *j = sent_json(o->action, key, o->app, o->job, &d);
        json_object_set_new(j, "requested_at", json_integer(cmd.action.requested_at));
        if (action == MC_JOB_TRIGGER)
            json_object_set_new(j, "task_id", json_string(occurrence));
        ctl_print_json(j);
    } else if (action == MC_JOB_TRIGGER) {
        printf("%s/%s\n", o->app, occurrence);
    } else {
        puts(key);
    }
    return 0;
}

/* ---- list ------------------------------------------------------------------------------- */

/* One record of the jobs topic, copied. */
typedef struct job_rec {
    char *key;
    uint8_t *value; /* NULL: a tombstone */
    size_t len;
    int32_t partition;
    int64_t offset;
} job_rec;

typedef struct job_table {
    const char *app; /* --app: keys starting "app/" only */
    job_rec *v;
    size_t n, cap;
    uint64_t read;
} job_table;

/* Keeps every record (of --app's keys); the latest per key is chosen after. */
static int collect(void *arg, const rd_kafka_message_t *m)
{
    job_table *t = arg;
    t->read++;
    if (!m->key)
        return 0;
    size_t alen = t->app ? strlen(t->app) : 0;
    if (t->app && (m->key_len <= alen || memcmp(m->key, t->app, alen) != 0 ||
                   ((const char *)m->key)[alen] != '/'))
        return 0;
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 256;
        job_rec *v = realloc(t->v, cap * sizeof *v);
        if (!v)
            return ctl_fail(EXIT_KAFKA, "out of memory");
        t->v = v;
        t->cap = cap;
    }
    job_rec r = {.key = strndup(m->key, m->key_len),
                 .len = m->len,
                 .partition = m->partition,
                 .offset = m->offset};
    if (m->payload) {
        r.value = malloc(m->len ? m->len : 1);
        if (r.value)
            memcpy(r.value, m->payload, m->len);
    }
    if (!r.key || (m->payload && !r.value)) {
        free(r.key);
        free(r.value);
        return ctl_fail(EXIT_KAFKA, "out of memory");
    }
    t->v[t->n++] = r;
    return 0;
}

/* By key, then by where it was written: a key's records are in one partition,
 * in offset order, so its last one is its latest. */
static int rec_cmp(const void *a, const void *b)
{
    const job_rec *x = a, *y = b;
    int k = strcmp(x->key, y->key);
    if (k)
        return k;
    if (x->partition != y->partition)
        return x->partition < y->partition ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static void print_job(ctl *c, const job_rec *r, mc_zone_cache *zones, mc_arena *arena)
{
    mc_job_state s;
    char detail[256] = "";
    mc_codec_err e = mc_decode_job_state(r->value, r->len, arena, &s, detail, sizeof detail);
    char why[400] = "";
    if (e)
        snprintf(why, sizeof why, "not a JobState: %s%s%s", mc_codec_strerror(e),
                 detail[0] ? ": " : "", detail);
    if (c->o.json) {
        json_t *j = e ? json_object() : mc_job_state_to_json(&s);
        if (!e) {
            int64_t next = mc_job_state_next_fire(&s, zones, mc_now_ms());
            json_object_set_new(j, "nextFireAt", next >= 0 ? json_integer(next) : json_null());
        }
        json_object_set_new(j, "key", json_string(r->key));
        json_object_set_new(j, "partition", json_integer(r->partition));
        json_object_set_new(j, "offset", json_integer(r->offset));
        if (e)
            json_object_set_new(j, "undecodable", json_string(why));
        ctl_print_json(j);
        return;
    }
    char key[600];
    ctl_printable(r->key, strlen(r->key), key, sizeof key);
    if (e) {
        printf("%-12s %-24s %s\n", key, "?", why);
        return;
    }
    char app[200], job[300], sched[200], next[32], sc[400];
    ctl_printable(s.job.app_id, strlen(s.job.app_id), app, sizeof app);
    ctl_printable(s.job.job_id, strlen(s.job.job_id), job, sizeof job);
    mc_job_schedule_text(&s.job, sc, sizeof sc);
    ctl_printable(sc, strlen(sc), sched, sizeof sched);
    ctl_fmt_time(mc_job_state_next_fire(&s, zones, mc_now_ms()), next);
    printf("%-12s %-24s %-7s %-36s %-24s %6" PRId64 " %7" PRId64 " %7zu %-13s %s\n", app, job,
           mc_job_status_name(s.status), sched, next, s.runs, s.skipped, s.n_running,
           mc_overlap_name(s.job.overlap), mc_misfire_name(s.job.misfire));
}

static int cmd_list(ctl *c)
{
    const ctl_opts *o = &c->o;
    char err[1024], topic[300];
    mc_topic_name(&c->cfg, "jobs", topic, sizeof topic);
    rd_kafka_t *rk = ctl_new_consumer(c, NULL, err, sizeof err);
    if (!rk)
        return ctl_fail(EXIT_KAFKA, "%s", err);
    job_table t = {.app = o->app};
    mc_arena *arena = mc_arena_new();
    /* For the next fire of a PARALLEL job with occurrences written ahead. */
    mc_zone_cache *zones = mc_zone_cache_new(c->cfg.zoneinfo_dir);
    part_scan *parts = NULL;
    int rc = 0;
    int n = ctl_topic_partitions(c, rk, topic, err, sizeof err);
    if (n <= 0 || !arena) {
        rc = ctl_fail(EXIT_KAFKA, "%s", arena ? err : "out of memory");
        goto out;
    }
    parts = calloc((size_t)n, sizeof *parts);
    if (!parts || ctl_plan_scan(rk, topic, n, -1, parts, err, sizeof err) != 0) {
        rc = ctl_fail(EXIT_KAFKA, "%s", parts ? err : "out of memory");
        goto out;
    }
    rc = ctl_scan(c, rk, topic, parts, (size_t)n, false, collect, &t, NULL);
    if (rc != 0)
        goto out;
    if (c->stopping) {
        rc = ctl_fail(EXIT_INTERRUPTED, "interrupted before the end of %s: nothing listed", topic);
        goto out;
    }
    if (t.n)
        qsort(t.v, t.n, sizeof *t.v, rec_cmp);
    if (!o->json)
        printf("%-12s %-24s %-7s %-36s %-24s %6s %7s %7s %-13s %s\n", "APP", "JOB", "STATUS",
               "SCHEDULE", "NEXT (UTC)", "RUNS", "SKIPPED", "RUNNING", "OVERLAP", "MISFIRE");
    size_t shown = 0;
    for (size_t i = 0; i < t.n; i++) {
        bool latest = i + 1 == t.n || strcmp(t.v[i].key, t.v[i + 1].key) != 0;
        if (!latest || !t.v[i].value) /* superseded, or deleted (a tombstone) */
            continue;
        mc_arena_reset(arena);
        print_job(c, &t.v[i], zones, arena);
        shown++;
    }
    fflush(stdout);
    ctl_report(c, "%zu jobs (%" PRIu64 " records read from %s)", shown, t.read, topic);
out:
    for (size_t i = 0; i < t.n; i++) {
        free(t.v[i].key);
        free(t.v[i].value);
    }
    free(t.v);
    free(parts);
    mc_arena_free(arena);
    mc_zone_cache_free(zones);
    rd_kafka_destroy(rk);
    return rc;
}

/* ---- preview ------------------------------------------------------------------------------ */

static int cmd_preview(ctl *c)
{
    const ctl_opts *o = &c->o;
    if (!o->cron)
        return ctl_fail(EXIT_USAGE, "jobs preview needs --cron EXPR (e.g. --cron '0 0 2 * * ?')");
    int64_t count = MC_JOB_NEXT_FIRES;
    if (o->count && !mc_parse_int64(o->count, 1, MC_JOB_PREVIEW_MAX, &count))
        return ctl_fail(EXIT_USAGE, "-n '%s' is not an integer in [1, %d]", o->count,
                        MC_JOB_PREVIEW_MAX);
    mc_zone_cache *zones = zones_new(c);
    if (!zones)
        return EXIT_KAFKA;
    int64_t now = mc_now_ms(), at[MC_JOB_PREVIEW_MAX];
    mc_job j = {.kind = MC_SCHEDULE_CRON,
                .cron = o->cron,
                .time_zone = o->tz ? o->tz : "UTC",
                .created_at = now};
    char why[512];
    int n = -1;
    if (mc_job_schedule_ok(&j, now, zones, &flag_names, why, sizeof why))
        n = mc_job_next_fires(&j, now, zones, at, (int)count, why, sizeof why);
    mc_zone_cache_free(zones);
    if (n < 0)
        return ctl_fail(EXIT_USAGE, "%s", why);
    if (o->json)
        ctl_print_json(json_pack("{s:s, s:s, s:o}", "cron", j.cron, "time_zone", j.time_zone,
                                 "next_fire_times", instants_json(at, n)));
    else
        print_instants(at, n);
    return 0;
}

int ctl_cmd_jobs(ctl *c)
{
    const char *a = c->o.action;
    if (strcmp(a, "put") == 0)
        return cmd_put(c);
    if (strcmp(a, "list") == 0)
        return cmd_list(c);
    if (strcmp(a, "preview") == 0)
        return cmd_preview(c);
    static const struct {
        const char *name;
        mc_job_action_kind kind;
    } actions[] = {{"pause", MC_JOB_PAUSE},
                   {"resume", MC_JOB_RESUME},
                   {"delete", MC_JOB_DELETE},
                   {"trigger", MC_JOB_TRIGGER}};
    for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++)
        if (strcmp(a, actions[i].name) == 0)
            return cmd_action(c, actions[i].kind);
    return ctl_fail(EXIT_USAGE, "jobs: unknown action '%s' (see jobs -h)", a);
}
