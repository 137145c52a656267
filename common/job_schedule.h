/* A recurring job's schedule, compiled once: what instants its occurrences
 * are due at (cron in a time zone, fixed rate from an anchor, fixed delay
 * after the previous one finished), within its start and end, and the rules
 * a job must meet before mooncake takes it. The jobs processor and the
 * gateway share these, so a job the gateway accepts is never dead-lettered
 * by the processor. Time zones are read once per name into a zone cache. */
#ifndef MOONCAKE_JOB_SCHEDULE_H
#define MOONCAKE_JOB_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "cron.h"
#include "task_rules.h"
#include "tz.h"

/* The shortest FIXED_RATE / FIXED_DELAY interval: a job is not a busy loop,
 * and every occurrence costs two records. */
#define MC_JOB_MIN_INTERVAL_MS 1000
#define MC_JOB_MAX_CATCH_UP 1000
#define MC_JOB_MAX_ID_LEN 200
/* An occurrence's task key, app_id/job_id@<ms>, fits in this many bytes
 * (with its NUL): mc_job_ok() refuses longer ids. */
#define MC_JOB_MAX_KEY_LEN 512

/* Time zones by name, each loaded once from the zoneinfo directory and kept
 * until the cache is freed (there are a few hundred names at most). Owned by
 * one thread. */
typedef struct mc_zone_cache mc_zone_cache;

/* A cache reading zones from dir (NULL: /usr/share/zoneinfo). Caller frees
 * with mc_zone_cache_free. NULL on ENOMEM. */
mc_zone_cache *mc_zone_cache_new(const char *dir);
void mc_zone_cache_free(mc_zone_cache *c);
/* The zone called name, owned by the cache; NULL with a reason in err. */
const mc_tz *mc_zone_cache_get(mc_zone_cache *c, const char *name, char *err, size_t errlen);

typedef struct mc_job_schedule {
    mc_schedule_kind kind;
    mc_cron *cron;   /* CRON: owned */
    const mc_tz *tz; /* CRON: the zone cache's */
    int64_t interval_ms;
    int64_t anchor;   /* FIXED_RATE: the first instant; FIXED_DELAY: the first one */
    int64_t start_at; /* 0: none */
    int64_t end_at;   /* 0: none */
} mc_job_schedule;

/* How messages name a job's fields: Avro's (schedule.cron) or the JSON
 * API's (schedule.cron as well, but interval_ms is intervalMs ...). */
typedef struct mc_job_field_names {
    const char *app_id, *job_id, *kind, *cron, *time_zone, *interval_ms, *start_at, *end_at,
        *max_runs, *catch_up_limit, *misfire_threshold_ms, *created_at;
    const mc_task_field_names *task; /* the callback's and retry's fields */
} mc_job_field_names;
extern const mc_job_field_names mc_job_avro_names;

/* Compiles j's schedule into *s (which the caller clears with
 * mc_job_schedule_clear). 0, or -1 with a reason naming the field in why. */
int mc_job_schedule_init(mc_job_schedule *s, const mc_job *j, mc_zone_cache *zones,
                         const mc_job_field_names *names, char *why, size_t whylen);
void mc_job_schedule_clear(mc_job_schedule *s);
/* The first scheduled instant strictly after `after` (epoch ms) within the
 * job's start and end; -1 when there is none. For FIXED_DELAY only the first
 * occurrence is scheduled this way (the others follow finished ones). */
int64_t mc_job_schedule_next(const mc_job_schedule *s, int64_t after);

/* Where a new job's schedule starts, at time now: its first occurrence is
 * the first scheduled instant after this - from its creation (created_at,
 * the instant the gateway's nextFireTimes count from), but never more than
 * its misfire threshold in the past (a job re-put from an old export does
 * not start a year ago). */
int64_t mc_job_first_after(const mc_job *j, int64_t now);

/* Checks every field of a job at time now: ids, schedule (it must fire at
 * least once from now on), policies, and the callback and retry policy as a
 * task's (task_rules.h). true, or false with a reason naming the field. */
bool mc_job_ok(const mc_job *j, int64_t now, mc_zone_cache *zones, const mc_job_field_names *names,
               char *why, size_t whylen);

/* The earliest instant one of a job's calls is still to be due, after now:
 * an occurrence written ahead and not yet due, or the next scheduled instant
 * of an ACTIVE job; -1 when none is known (paused, ended, or a fixed delay
 * waiting for its previous occurrence). zones (NULL: a PARALLEL job's
 * occurrences written ahead are not seen) compiles the schedule; the caller
 * serialises its use. */
int64_t mc_job_state_next_fire(const mc_job_state *s, mc_zone_cache *zones, int64_t now);

/* The task id of the occurrence scheduled at `at`: "<job_id>@<at>", into
 * buf; returns the length it needs (like snprintf). */
size_t mc_occurrence_id(const char *job_id, int64_t at, char *buf, size_t buflen);
/* Splits an occurrence's task id back into its job id (length in *job_len,
 * pointing into task_id) and scheduled instant; false when task_id is not
 * one. */
bool mc_occurrence_parse(const char *task_id, size_t *job_len, int64_t *at);

#endif
