/* Recurring-job schedules and the rules a job must meet (job_schedule.h). */
#include "job_schedule.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A client clock this far ahead of ours is a bug (seconds for ms, say), not skew. */
#define MAX_CLOCK_AHEAD_MS INT64_C(86400000)

const mc_job_field_names mc_job_avro_names = {
    .app_id = "app_id",
    .job_id = "job_id",
    .kind = "schedule.kind",
    .cron = "schedule.cron",
    .time_zone = "schedule.time_zone",
    .interval_ms = "schedule.interval_ms",
    .start_at = "start_at",
    .end_at = "end_at",
    .max_runs = "max_runs",
    .catch_up_limit = "catch_up_limit",
    .misfire_threshold_ms = "misfire_threshold_ms",
    .created_at = "created_at",
    .task = &mc_task_avro_names,
};

/* ---- zone cache ------------------------------------------------------------- */

typedef struct zone_slot {
    char *name;
    mc_tz *tz;
} zone_slot;

struct mc_zone_cache {
    char *dir;
    zone_slot *v;
    size_t n, cap;
};

mc_zone_cache *mc_zone_cache_new(const char *dir)
{
    mc_zone_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->dir = strdup(dir ? dir : "/usr/share/zoneinfo");
    if (!c->dir) {
        free(c);
        return NULL;
    }
    return c;
}

void mc_zone_cache_free(mc_zone_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].name);
        mc_tz_free(c->v[i].tz);
    }
    free(c->v);
    free(c->dir);
    free(c);
}

const mc_tz *mc_zone_cache_get(mc_zone_cache *c, const char *name, char *err, size_t errlen)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->v[i].name, name) == 0)
            return c->v[i].tz;
    mc_tz *tz = mc_tz_load(c->dir, name, err, errlen);
    if (!tz)
        return NULL;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8;
        zone_slot *v = realloc(c->v, cap * sizeof *v);
        if (!v) {
            mc_tz_free(tz);
            snprintf(err, errlen, "out of memory");
            return NULL;
        }
        c->v = v;
        c->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy) {
        mc_tz_free(tz);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->v[c->n++] = (zone_slot){copy, tz};
    return tz;
}

/* ---- schedules ----------------------------------------------------------------- */

int mc_job_schedule_init(mc_job_schedule *s, const mc_job *j, mc_zone_cache *zones,
                         const mc_job_field_names *names, char *why, size_t whylen)
{
    memset(s, 0, sizeof *s);
    s->kind = j->kind;
    s->start_at = j->start_at;
    s->end_at = j->end_at;
    s->anchor = j->start_at > 0 ? j->start_at : j->created_at;
    char err[256];
    switch (j->kind) {
    case MC_SCHEDULE_CRON:
        if (!j->cron || !j->cron[0]) {
            snprintf(why, whylen, "%s is empty (a CRON schedule needs an expression)", names->cron);
            return -1;
        }
        s->cron = mc_cron_parse(j->cron, err, sizeof err);
        if (!s->cron) {
            snprintf(why, whylen, "%s: %s", names->cron, err);
            return -1;
        }
        s->tz = mc_zone_cache_get(zones, j->time_zone && j->time_zone[0] ? j->time_zone : "UTC",
                                  err, sizeof err);
        if (!s->tz) {
            snprintf(why, whylen, "%s: %s", names->time_zone, err);
            mc_job_schedule_clear(s);
            return -1;
        }
        return 0;
    case MC_SCHEDULE_FIXED_RATE:
    case MC_SCHEDULE_FIXED_DELAY:
        if (j->interval_ms < MC_JOB_MIN_INTERVAL_MS) {
            snprintf(why, whylen, "%s is %" PRId64 ": it must be at least %d ms",
                     names->interval_ms, j->interval_ms, MC_JOB_MIN_INTERVAL_MS);
            return -1;
        }
        s->interval_ms = j->interval_ms;
        return 0;
    }
    snprintf(why, whylen, "%s is not CRON, FIXED_RATE or FIXED_DELAY", names->kind);
    return -1;
}

void mc_job_schedule_clear(mc_job_schedule *s)
{
    mc_cron_free(s->cron);
    s->cron = NULL;
}

int64_t mc_job_schedule_next(const mc_job_schedule *s, int64_t after)
{
    if (s->start_at > 0 && after < s->start_at - 1)
        after = s->start_at - 1;
    int64_t t;
    if (s->kind == MC_SCHEDULE_CRON) {
        t = mc_cron_next(s->cron, s->tz, after);
    } else if (after < s->anchor) {
        t = s->anchor;
    } else if (s->kind == MC_SCHEDULE_FIXED_RATE) {
        int64_t k = (after - s->anchor) / s->interval_ms + 1;
        t = s->anchor + k * s->interval_ms;
    } else {
        t = after + 1; /* FIXED_DELAY's first occurrence, when its anchor has passed */
    }
    if (t < 0 || (s->end_at > 0 && t > s->end_at))
        return -1;
    return t;
}

int64_t mc_job_first_after(const mc_job *j, int64_t now)
{
    int64_t from = j->created_at < now ? j->created_at : now;
    if (from < now - j->misfire_threshold_ms)
        from = now - j->misfire_threshold_ms;
    return from - 1;
}

/* ---- rules ------------------------------------------------------------------------- */

bool mc_job_ok(const mc_job *j, int64_t now, mc_zone_cache *zones, const mc_job_field_names *names,
               char *why, size_t whylen)
{
    if (!mc_task_ids_ok(j->app_id, j->job_id,
                        &(mc_task_field_names){.app_id = names->app_id, .task_id = names->job_id},
                        why, whylen))
        return false;
    if (strlen(j->job_id) > MC_JOB_MAX_ID_LEN) {
        snprintf(why, whylen, "%s is longer than %d bytes", names->job_id, MC_JOB_MAX_ID_LEN);
        return false;
    }
    /* app_id/job_id@<up to 20 digits>: the occurrence's task key. */
    if (strlen(j->app_id) + strlen(j->job_id) + 22 >= MC_JOB_MAX_KEY_LEN) {
        snprintf(why, whylen, "%s and %s together are longer than %d bytes", names->app_id,
                 names->job_id, MC_JOB_MAX_KEY_LEN - 23);
        return false;
    }
    if (j->created_at < MC_MIN_DUE_AT_MS || j->created_at > now + MAX_CLOCK_AHEAD_MS) {
        snprintf(why, whylen,
                 "%s is %" PRId64 ": not epoch milliseconds within a day of mooncake's clock",
                 names->created_at, j->created_at);
        return false;
    }
    if (j->start_at < 0 || j->end_at < 0) {
        snprintf(why, whylen, "%s is negative", j->start_at < 0 ? names->start_at : names->end_at);
        return false;
    }
    if (j->max_runs < 0) {
        snprintf(why, whylen, "%s is negative", names->max_runs);
        return false;
    }
    if (j->misfire == MC_MISFIRE_CATCH_UP &&
        (j->catch_up_limit < 1 || j->catch_up_limit > MC_JOB_MAX_CATCH_UP)) {
        snprintf(why, whylen, "%s is %" PRId32 ": it must be 1 to %d with CATCH_UP",
                 names->catch_up_limit, j->catch_up_limit, MC_JOB_MAX_CATCH_UP);
        return false;
    }
    if (j->misfire_threshold_ms < 0) {
        snprintf(why, whylen, "%s is negative", names->misfire_threshold_ms);
        return false;
    }
    mc_job_schedule s;
    if (mc_job_schedule_init(&s, j, zones, names, why, whylen) != 0)
        return false;
    int64_t first = mc_job_schedule_next(&s, mc_job_first_after(j, now));
    mc_job_schedule_clear(&s);
    if (first < 0) {
        if (j->end_at > 0 && j->end_at <= now)
            snprintf(why, whylen, "%s is in the past: the job would never fire", names->end_at);
        else
            snprintf(why, whylen, "%s never fires%s%s",
                     j->kind == MC_SCHEDULE_CRON ? names->cron : names->interval_ms,
                     j->end_at > 0 ? " before " : " (no matching instant in 8 years)",
                     j->end_at > 0 ? names->end_at : "");
        return false;
    }
    /* What an occurrence will carry: callback or Kafka target, retry and
     * late policies, follow-ups. */
    mc_task probe = {
        .app_id = j->app_id,
        .task_id = j->job_id,
        .due_at = now,
        .callback = j->callback,
        .has_retry = j->has_retry,
        .retry = j->retry,
        .attempt = 1,
        .created_at = now,
        .metadata = j->metadata,
        .n_metadata = j->n_metadata,
        .has_kafka_target = j->has_kafka_target,
        .kafka_target = j->kafka_target,
        .has_late_policy = j->has_late_policy,
        .late_policy = j->late_policy,
        .on_success = j->on_success,
        .n_on_success = j->n_on_success,
    };
    char task_why[512];
    if (!mc_task_ok(&probe, now, INT64_MAX / 4, names->task, task_why, sizeof task_why)) {
        snprintf(why, whylen, "%s", task_why);
        return false;
    }
    return true;
}

int64_t mc_job_state_next_fire(const mc_job_state *s, mc_zone_cache *zones, int64_t now)
{
    int64_t next = s->status == MC_JOB_ACTIVE && s->next_at >= 0 ? s->next_at : -1;
    for (size_t i = 0; i < s->n_running; i++)
        if (s->running[i].due_at > now && (next < 0 || s->running[i].due_at < next))
            next = s->running[i].due_at;
    /* A PARALLEL job's occurrences are not kept in running (nothing waits
     * for them): those written ahead are the schedule's instants after now
     * up to the last written (a pause or an update that cancels them moves
     * last_scheduled_at back). A fixed delay is never PARALLEL. */
    mc_job_schedule sched;
    char why[256];
    if (zones && s->job.overlap == MC_OVERLAP_PARALLEL && s->job.kind != MC_SCHEDULE_FIXED_DELAY &&
        s->last_scheduled_at > now &&
        mc_job_schedule_init(&sched, &s->job, zones, &mc_job_avro_names, why, sizeof why) == 0) {
        int64_t ahead = mc_job_schedule_next(&sched, now);
        if (ahead > now && ahead <= s->last_scheduled_at && (next < 0 || ahead < next))
            next = ahead;
        mc_job_schedule_clear(&sched);
    }
    return next;
}

/* ---- occurrence ids ----------------------------------------------------------------- */

size_t mc_occurrence_id(const char *job_id, int64_t at, char *buf, size_t buflen)
{
    int n = snprintf(buf, buflen, "%s@%" PRId64, job_id, at);
    return n < 0 ? 0 : (size_t)n;
}

bool mc_occurrence_parse(const char *task_id, size_t *job_len, int64_t *at)
{
    const char *sep = strrchr(task_id, '@');
    if (!sep || sep == task_id || !sep[1] || strlen(sep + 1) > 18)
        return false;
    int64_t v = 0;
    for (const char *p = sep + 1; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (*p - '0');
    }
    *job_len = (size_t)(sep - task_id);
    *at = v;
    return true;
}
