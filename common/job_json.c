/* JSON <-> recurring jobs (job_json.h), on jansson and task_json.c's field
 * getters: the callback or Kafka target, retry and late policies, follow-ups
 * and metadata of a job are read exactly as a task's are. Unknown fields are ignored and duplicate
 * keys refused, as for tasks. */
#include "job_json.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "kafka_targets.h"
#include "task_json.h"
#include "task_rules.h"

#define MAX_CRON_LEN 1024

const mc_job_field_names mc_job_json_names = {
    .app_id = "appId",
    .job_id = "jobId",
    .kind = "schedule",
    .cron = "schedule.cron",
    .time_zone = "schedule.timeZone",
    .interval_ms = "schedule.fixedRateMs",
    .start_at = "startTime",
    .end_at = "endTime",
    .max_runs = "maxRuns",
    .catch_up_limit = "catchUpLimit",
    .misfire_threshold_ms = "misfireThresholdMs",
    .created_at = "createdAt",
    .task = &mc_task_json_names,
};

static const char *const status_names[] = {"ACTIVE", "PAUSED", "ENDED"};
static const char *const misfire_names[] = {"FIRE_ONCE_NOW", "DO_NOTHING", "CATCH_UP"};
static const char *const overlap_names[] = {"PARALLEL", "DISCARD_LATER", "COVER_EARLY", "SERIAL"};
static const char *const action_names[] = {"PAUSE", "RESUME", "DELETE", "TRIGGER"};
#define N_OF(a) (sizeof(a) / sizeof(a)[0])

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(why, whylen, __VA_ARGS__);                                                        \
        return -1;                                                                                 \
    } while (0)

/* ---- JSON -> Job ------------------------------------------------------------------ */

/* The names for j: interval_ms is named after the kind it was given as. */
static mc_job_field_names names_for(const mc_job *j)
{
    mc_job_field_names n = mc_job_json_names;
    if (j->kind == MC_SCHEDULE_FIXED_DELAY)
        n.interval_ms = "schedule.fixedDelayMs";
    return n;
}

/* An enum given as its symbol (any case); a missing or null field leaves
 * *out as it is. */
static int get_enum(json_t *obj, const char *key, const char *const *symbols, size_t n, int *out,
                    char *why, size_t whylen)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        FAIL("%s must be a string, not %s", key, mc_json_type_name(v));
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(json_string_value(v), symbols[i]) == 0) {
            *out = (int)i;
            return 0;
        }
    char list[200] = "";
    for (size_t i = 0; i < n; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                 symbols[i]);
    FAIL("%s '%.50s' is not one of %s", key, json_string_value(v), list);
}

/* root.schedule: exactly one of cron (with timeZone), fixedRateMs,
 * fixedDelayMs. */
static int get_schedule(json_t *root, mc_arena *a, mc_job *j, char *why, size_t whylen)
{
    json_t *s = json_object_get(root, "schedule");
    if (!s || json_is_null(s))
        FAIL("schedule is required (an object with cron, fixedRateMs or fixedDelayMs)");
    if (!json_is_object(s))
        FAIL("schedule must be an object, not %s", mc_json_type_name(s));
    const char *cron, *tz;
    bool rate, delay;
    int64_t rate_ms = 0, delay_ms = 0;
    if (mc_json_get_string(s, "cron", "schedule.cron", false, MAX_CRON_LEN, a, &cron, why,
                           whylen) ||
        mc_json_get_string(s, "timeZone", "schedule.timeZone", false, MC_TZ_NAME_MAX, a, &tz, why,
                           whylen) ||
        mc_json_get_int(s, "fixedRateMs", "schedule.fixedRateMs", INT64_MIN, INT64_MAX, &rate,
                        &rate_ms, why, whylen) ||
        mc_json_get_int(s, "fixedDelayMs", "schedule.fixedDelayMs", INT64_MIN, INT64_MAX, &delay,
                        &delay_ms, why, whylen))
        return -1;
    if ((cron != NULL) + rate + delay != 1)
        FAIL("schedule: give exactly one of cron, fixedRateMs, fixedDelayMs");
    if (tz && !cron)
        FAIL("schedule.timeZone is only for cron (fixedRateMs and fixedDelayMs count "
             "milliseconds)");
    j->cron = cron ? cron : "";
    j->time_zone = tz && tz[0] ? tz : "UTC";
    j->kind = cron ? MC_SCHEDULE_CRON : rate ? MC_SCHEDULE_FIXED_RATE : MC_SCHEDULE_FIXED_DELAY;
    j->interval_ms = rate ? rate_ms : delay ? delay_ms : 0;
    return 0;
}

/* An instant field: epoch ms after 2000 (a seconds-for-milliseconds mix-up
 * is caught), or 0 for none. */
static int get_instant(json_t *root, const char *key, int64_t *out, char *why, size_t whylen)
{
    bool present;
    if (mc_json_get_int(root, key, key, 0, INT64_MAX, &present, out, why, whylen))
        return -1;
    if (present && *out != 0 && *out < MC_MIN_DUE_AT_MS)
        FAIL("%s %" PRId64 " is before 2000-01-01 (epoch milliseconds expected, not seconds)", key,
             *out);
    return 0;
}

/* schedule, startTime and endTime: all a preview has. */
static int get_when(json_t *root, mc_arena *a, mc_job *j, char *why, size_t whylen)
{
    return get_schedule(root, a, j, why, whylen) ||
                   get_instant(root, "startTime", &j->start_at, why, whylen) ||
                   get_instant(root, "endTime", &j->end_at, why, whylen)
               ? -1
               : 0;
}

/* maxRuns, misfire, catchUpLimit, misfireThresholdMs, overlap, paused. */
static int get_policies(json_t *root, mc_job *j, char *why, size_t whylen)
{
    bool present;
    int64_t v;
    int misfire = MC_MISFIRE_FIRE_ONCE_NOW, overlap = MC_OVERLAP_PARALLEL;
    if (mc_json_get_int(root, "maxRuns", "maxRuns", 0, INT64_MAX, &present, &j->max_runs, why,
                        whylen) ||
        get_enum(root, "misfire", misfire_names, N_OF(misfire_names), &misfire, why, whylen) ||
        get_enum(root, "overlap", overlap_names, N_OF(overlap_names), &overlap, why, whylen) ||
        mc_json_get_int(root, "misfireThresholdMs", "misfireThresholdMs", 0, INT64_MAX, &present,
                        &j->misfire_threshold_ms, why, whylen))
        return -1;
    j->misfire = (mc_misfire_policy)misfire;
    j->overlap = (mc_overlap_policy)overlap;
    if (mc_json_get_int(root, "catchUpLimit", "catchUpLimit", 1, MC_JOB_MAX_CATCH_UP, &present, &v,
                        why, whylen))
        return -1;
    if (present)
        j->catch_up_limit = (int32_t)v;
    json_t *p = json_object_get(root, "paused");
    if (p && !json_is_null(p)) {
        if (!json_is_boolean(p))
            FAIL("paused must be true or false, not %s", mc_json_type_name(p));
        j->paused = json_is_true(p);
    }
    return 0;
}

/* The schema's defaults for what a body leaves out. */
static void job_defaults(mc_job *j, int64_t now)
{
    memset(j, 0, sizeof *j);
    j->cron = "";
    j->time_zone = "UTC";
    j->catch_up_limit = 10;
    j->misfire_threshold_ms = 5000;
    j->created_at = now;
}

int mc_job_from_json(const char *body, size_t len, const mc_job_json_options *o, mc_arena *arena,
                     mc_job *out, char *why, size_t whylen)
{
    job_defaults(out, o->now_ms);
    json_t *root = mc_json_parse_object(body, len, why, whylen);
    if (!root)
        return -1;
    int rc = -1;
    const char *strategy = NULL;
    if (mc_json_get_string(root, "appId", "appId", true, MC_JSON_MAX_ID_LEN, arena, &out->app_id,
                           why, whylen) ||
        mc_json_get_string(root, "jobId", "jobId", true, MC_JSON_MAX_ID_LEN, arena, &out->job_id,
                           why, whylen) ||
        get_when(root, arena, out, why, whylen) || get_policies(root, out, why, whylen) ||
        mc_json_get_action(root, "", &o->retry_defaults, arena,
                           &(mc_json_action){&out->callback, &out->has_kafka_target,
                                             &out->kafka_target, &out->has_retry, &out->retry,
                                             &out->has_late_policy, &out->late_policy, &strategy},
                           why, whylen) ||
        mc_json_get_follow_ups(root, o->max_due_ms > 0 ? o->max_due_ms : INT64_MAX,
                               &o->retry_defaults, arena, &out->on_success, &out->n_on_success, why,
                               whylen) ||
        mc_json_get_map(root, "metadata", "metadata", false, arena, &out->metadata,
                        &out->n_metadata, why, whylen) ||
        mc_json_route_metadata(arena, strategy, &out->metadata, &out->n_metadata, why, whylen))
        goto done;
    mc_job_field_names names = names_for(out);
    if (!mc_job_ok(out, o->now_ms, o->zones, &names, why, whylen))
        goto done;
    rc = 0;
done:
    json_decref(root);
    return rc;
}

int mc_job_action_from_json(const char *body, size_t len, mc_job_action_kind action, int64_t now_ms,
                            mc_arena *arena, mc_job_action *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    json_t *root = mc_json_parse_object(body, len, why, whylen);
    if (!root)
        return -1;
    int rc = -1;
    const mc_task_field_names ids = {.app_id = "appId", .task_id = "jobId"};
    if (mc_json_get_string(root, "appId", "appId", true, MC_JSON_MAX_ID_LEN, arena, &out->app_id,
                           why, whylen) ||
        mc_json_get_string(root, "jobId", "jobId", true, MC_JSON_MAX_ID_LEN, arena, &out->job_id,
                           why, whylen) ||
        !mc_task_ids_ok(out->app_id, out->job_id, &ids, why, whylen))
        goto done;
    if (strlen(out->job_id) > MC_JOB_MAX_ID_LEN) {
        snprintf(why, whylen, "jobId is longer than %d bytes", MC_JOB_MAX_ID_LEN);
        goto done;
    }
    out->action = action;
    out->requested_at = now_ms;
    rc = 0;
done:
    json_decref(root);
    return rc;
}

int mc_job_preview_from_json(const char *body, size_t len, const mc_job_json_options *o,
                             mc_arena *arena, mc_job *out, int *count, char *why, size_t whylen)
{
    job_defaults(out, o->now_ms);
    json_t *root = mc_json_parse_object(body, len, why, whylen);
    if (!root)
        return -1;
    int rc = -1;
    bool present;
    int64_t n = MC_JOB_NEXT_FIRES;
    if (get_when(root, arena, out, why, whylen) ||
        mc_json_get_int(root, "count", "count", 1, MC_JOB_PREVIEW_MAX, &present, &n, why, whylen))
        goto done;
    mc_job_field_names names = names_for(out);
    if (!mc_job_schedule_ok(out, o->now_ms, o->zones, &names, why, whylen))
        goto done;
    *count = (int)n;
    rc = 0;
done:
    json_decref(root);
    return rc;
}

bool mc_job_target_ok(const mc_kafka_targets *t, const mc_job *j, char *why, size_t whylen)
{
    /* What mc_task_target_ok reads of an occurrence: its app and targets. */
    mc_task probe = {
        .app_id = j->app_id,
        .task_id = j->job_id,
        .has_kafka_target = j->has_kafka_target,
        .kafka_target = j->kafka_target,
        .on_success = j->on_success,
        .n_on_success = j->n_on_success,
    };
    return mc_task_target_ok(t, &probe, &mc_task_json_names, why, whylen);
}

/* ---- schedules ------------------------------------------------------------------ */

bool mc_job_schedule_ok(const mc_job *j, int64_t now, mc_zone_cache *zones,
                        const mc_job_field_names *names, char *why, size_t whylen)
{
    /* A job with this schedule and harmless everything else: its verdict is
     * the schedule's. */
    mc_job probe = {
        .app_id = "preview",
        .job_id = "preview",
        .kind = j->kind,
        .cron = j->cron,
        .time_zone = j->time_zone,
        .interval_ms = j->interval_ms,
        .start_at = j->start_at,
        .end_at = j->end_at,
        .catch_up_limit = 10,
        .callback = {.url = "http://preview.invalid/", .method = "POST"},
        .created_at = now,
    };
    return mc_job_ok(&probe, now, zones, names, why, whylen);
}

int mc_job_next_fires(const mc_job *j, int64_t now, mc_zone_cache *zones, int64_t *out, int n,
                      char *why, size_t whylen)
{
    mc_job_schedule s;
    if (mc_job_schedule_init(&s, j, zones, &mc_job_avro_names, why, whylen) != 0)
        return -1;
    if (j->max_runs > 0 && j->max_runs < n)
        n = (int)j->max_runs;
    /* From now, or from the anchor when it is later: as mc_job_ok and the
     * jobs processor count. */
    int64_t after = (now > s.anchor ? now : s.anchor) - 1;
    int k = 0;
    while (k < n) {
        int64_t t = mc_job_schedule_next(&s, after);
        if (t < 0)
            break;
        out[k++] = t;
        after = t;
        if (j->kind == MC_SCHEDULE_FIXED_DELAY)
            break;
    }
    mc_job_schedule_clear(&s);
    return k;
}

/* ---- Job -> JSON --------------------------------------------------------------------- */

static const char *symbol(const char *const *names, size_t n, int v)
{
    return v >= 0 && (size_t)v < n ? names[v] : "?";
}

const char *mc_job_status_name(mc_job_status s)
{
    return symbol(status_names, N_OF(status_names), (int)s);
}

const char *mc_misfire_name(mc_misfire_policy m)
{
    return symbol(misfire_names, N_OF(misfire_names), (int)m);
}

const char *mc_overlap_name(mc_overlap_policy o)
{
    return symbol(overlap_names, N_OF(overlap_names), (int)o);
}

const char *mc_job_action_name(mc_job_action_kind a)
{
    return symbol(action_names, N_OF(action_names), (int)a);
}

size_t mc_job_schedule_text(const mc_job *j, char *buf, size_t buflen)
{
    int n;
    if (j->kind == MC_SCHEDULE_CRON)
        n = snprintf(buf, buflen, "cron '%s' %s", j->cron, j->time_zone);
    else if (j->kind == MC_SCHEDULE_FIXED_RATE)
        n = snprintf(buf, buflen, "every %" PRId64 " ms", j->interval_ms);
    else
        n = snprintf(buf, buflen, "%" PRId64 " ms after each", j->interval_ms);
    return n < 0 ? 0 : (size_t)n;
}

json_t *mc_job_to_json(const mc_job *j)
{
    json_t *sched;
    if (j->kind == MC_SCHEDULE_CRON)
        sched = json_pack("{s:s, s:s}", "cron", j->cron, "timeZone", j->time_zone);
    else
        sched =
            json_pack("{s:I}", j->kind == MC_SCHEDULE_FIXED_RATE ? "fixedRateMs" : "fixedDelayMs",
                      (json_int_t)j->interval_ms);
    json_t *o =
        json_pack("{s:s, s:s, s:o, s:I, s:I, s:I, s:s, s:i, s:I, s:s, s:b}", "appId", j->app_id,
                  "jobId", j->job_id, "schedule", sched, "startTime", (json_int_t)j->start_at,
                  "endTime", (json_int_t)j->end_at, "maxRuns", (json_int_t)j->max_runs, "misfire",
                  mc_misfire_name(j->misfire), "catchUpLimit", (int)j->catch_up_limit,
                  "misfireThresholdMs", (json_int_t)j->misfire_threshold_ms, "overlap",
                  mc_overlap_name(j->overlap), "paused", (int)j->paused);
    if (!o)
        return NULL;
    /* A job either calls or delivers, as a task: the one it does, as a body
     * gives it, so a listed job can be put back. */
    if (j->has_kafka_target)
        json_object_set_new(o, "kafkaTarget", mc_kafka_target_to_json(&j->kafka_target, true));
    else {
        json_t *cb = mc_callback_to_json(&j->callback, true);
        mc_json_callback_group(cb, j->metadata, j->n_metadata);
        json_object_set_new(o, "callback", cb);
    }
    json_object_set_new(o, "retry", mc_retry_to_json(j->has_retry, &j->retry, true));
    if (j->has_late_policy)
        json_object_set_new(o, "latePolicy", mc_late_policy_to_json(true, &j->late_policy, true));
    if (j->n_on_success)
        json_object_set_new(o, "onSuccess",
                            mc_follow_ups_to_json(j->on_success, j->n_on_success, true));
    json_object_set_new(o, "metadata", mc_json_api_metadata(j->metadata, j->n_metadata));
    json_object_set_new(o, "createdAt", json_integer(j->created_at));
    return o;
}

json_t *mc_job_state_to_json(const mc_job_state *s)
{
    json_t *running = json_array();
    for (size_t i = 0; i < s->n_running; i++)
        json_array_append_new(running, json_pack("{s:I, s:I}", "scheduledAt",
                                                 (json_int_t)s->running[i].scheduled_at, "dueAt",
                                                 (json_int_t)s->running[i].due_at));
    return json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:o}", "appId",
                     s->job.app_id, "jobId", s->job.job_id, "status", mc_job_status_name(s->status),
                     "nextAt", (json_int_t)s->next_at, "runs", (json_int_t)s->runs,
                     "lastScheduledAt", (json_int_t)s->last_scheduled_at, "running", running,
                     "queuedAt", (json_int_t)s->queued_at, "skipped", (json_int_t)s->skipped,
                     "updatedAt", (json_int_t)s->updated_at, "version", (json_int_t)s->version,
                     "job", mc_job_to_json(&s->job));
}
