/* Recurring jobs as JSON, both ways: the gateway's bodies (POST /jobs, the
 * actions, /jobs/preview) and mooncakectl's `jobs put -f` -> mc_job /
 * mc_job_action, checked with the jobs processor's own rules (mc_job_ok), so
 * a job accepted here is never dead-lettered; and mc_job / mc_job_state ->
 * JSON in the same camelCase shape (mooncakectl jobs list -J), so a listed
 * job can be put back as it is. Every error is one sentence naming the field
 * as the client wrote it ("schedule.timeZone: unknown time zone ..."). */
#ifndef MOONCAKE_JOB_JSON_H
#define MOONCAKE_JOB_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "codec.h"
#include "job_schedule.h"
#include "kafka_targets.h"

#define MC_JOB_NEXT_FIRES 5    /* nextFireTimes in the answer to a put */
#define MC_JOB_PREVIEW_MAX 100 /* the most a preview lists */

typedef struct mc_job_json_options {
    int64_t now_ms;                 /* receive time: createdAt, and what "from now" means */
    mc_retry_policy retry_defaults; /* fill the fields a partial "retry" leaves out */
    mc_zone_cache *zones;           /* borrowed; used by one thread at a time */
    int64_t max_due_ms;             /* a follow-up's delayMs at most (router's --max-due-ms);
                                     * 0: no limit */
} mc_job_json_options;

/* The JSON API's names of a job's fields (appId, schedule.timeZone,
 * startTime, callback.timeoutMs, ...); interval_ms is
 * schedule.fixedRateMs. */
extern const mc_job_field_names mc_job_json_names;

/* Parses and checks a POST /jobs body into *out (created_at = now_ms): the
 * schedule and policies, and what each occurrence carries as a task's body
 * gives it (callback or kafkaTarget, retry, latePolicy, onSuccess,
 * metadata). Kafka targets are checked for their form only (see
 * mc_job_target_ok). Strings point into arena (valid until mc_arena_reset). Returns 0, or -1
 * with a sentence naming the field in why. Any thread (o->zones is the
 * caller's to serialise). */
int mc_job_from_json(const char *body, size_t len, const mc_job_json_options *o, mc_arena *arena,
                     mc_job *out, char *why, size_t whylen);

/* The job's Kafka targets (its own and its follow-ups') against the
 * gateway's allow-list; on refusal a sentence naming the field
 * ("kafkaTarget.topic", "onSuccess[0].kafkaTarget.topic") in why. Any
 * thread. */
bool mc_job_target_ok(const mc_kafka_targets *t, const mc_job *j, char *why, size_t whylen);

/* Parses and checks an action body {appId, jobId} into *out, with the
 * given action and requested_at = now_ms. Same conventions. */
int mc_job_action_from_json(const char *body, size_t len, mc_job_action_kind action, int64_t now_ms,
                            mc_arena *arena, mc_job_action *out, char *why, size_t whylen);

/* Parses a preview body {schedule, startTime?, endTime?, count?} into the
 * schedule fields of *out (the rest zero) and *count (default
 * MC_JOB_NEXT_FIRES, at most MC_JOB_PREVIEW_MAX), checked as a put's
 * schedule is. Same conventions. */
int mc_job_preview_from_json(const char *body, size_t len, const mc_job_json_options *o,
                             mc_arena *arena, mc_job *out, int *count, char *why, size_t whylen);

/* Checks only the schedule of j (kind, cron, time_zone, interval_ms,
 * start_at, end_at) at time now, exactly as mc_job_ok would, naming fields
 * with names: for previews, which have no ids or callback. */
bool mc_job_schedule_ok(const mc_job *j, int64_t now, mc_zone_cache *zones,
                        const mc_job_field_names *names, char *why, size_t whylen);

/* The next (at most n) scheduled instants of a valid job from now on, epoch
 * ms, into out; returns how many (fewer when the schedule ends, and only
 * the first for FIXED_DELAY, whose others follow finished occurrences), or
 * -1 with a reason in why. */
int mc_job_next_fires(const mc_job *j, int64_t now, mc_zone_cache *zones, int64_t *out, int n,
                      char *why, size_t whylen);

/* The job as the JSON API writes it (schedule, startTime, callback or
 * kafkaTarget with every byte, retry, latePolicy and onSuccess when set,
 * ..., and createdAt), as a body would give it; caller owns it. Any thread. */
json_t *mc_job_to_json(const mc_job *j);
/* A jobs-topic value: the job (as above) and where its schedule stands
 * (status, nextAt, runs, skipped, running, ...); caller owns it. */
json_t *mc_job_state_to_json(const mc_job_state *s);

/* Enum symbols as in the schemas ("ACTIVE", "CATCH_UP", "SERIAL", "PAUSE"). */
const char *mc_job_status_name(mc_job_status s);
const char *mc_misfire_name(mc_misfire_policy m);
const char *mc_overlap_name(mc_overlap_policy o);
const char *mc_job_action_name(mc_job_action_kind a);
/* The schedule in a few words, into buf: "cron '0 0 2 * * ?' Asia/Shanghai",
 * "every 60000 ms", "60000 ms after each". Returns the length it needs
 * (like snprintf). */
size_t mc_job_schedule_text(const mc_job *j, char *buf, size_t buflen);

#endif
