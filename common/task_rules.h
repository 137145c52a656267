/* The rules a task must meet, in one place: the router dead-letters a task
 * that breaks them and the gateway answers 400, so a task the gateway accepts
 * is never dead-lettered by the router. Field names differ by caller (Avro's
 * due_at, the JSON API's expireTime), so every message names the field the
 * way the caller's user wrote it. */
#ifndef MOONCAKE_TASK_RULES_H
#define MOONCAKE_TASK_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "record.h"

/* Earliest due time accepted: 2000-01-01, so a seconds-for-milliseconds mix-up
 * (1.7e9 instead of 1.7e12) is caught instead of firing at once. */
#define MC_MIN_DUE_AT_MS INT64_C(946684800000)
#define MC_MAX_URL_LEN 8192
#define MC_MAX_TIMEOUT_MS 3600000
#define MC_MAX_ATTEMPTS 1000

/* How the messages name each field. */
typedef struct mc_task_field_names {
    const char *app_id, *task_id, *due_at, *url, *method, *timeout_ms, *attempt;
    const char *max_attempts, *initial_backoff_ms, *multiplier, *max_backoff_ms;
    /* NULL: the schema's names (kafka_target, late_policy.max_late_ms,
     * on_success, a follow-up's task_id and delay_ms, metadata.mooncake.route). */
    const char *kafka_target, *max_late_ms, *on_success, *follow_up_id, *delay_ms, *route;
} mc_task_field_names;

/* Follow-ups a task may name, and the length of a follow-up's own id. */
#define MC_MAX_FOLLOW_UPS 16
#define MC_MAX_FOLLOW_UP_ID_LEN 512

/* The longest late policy: a year. */
#define MC_MAX_LATE_MS INT64_C(31536000000)

/* The schema's names (app_id, callback.timeout_ms, retry.max_attempts, ...). */
extern const mc_task_field_names mc_task_avro_names;

/* Bytes a task key app_id/task_id may take, its NUL included: a longer one
 * is refused everywhere (the router dead-letters it). */
#define MC_MAX_TASK_KEY_LEN 1024

/* app_id non-empty without '/', task_id non-empty: the key app_id/task_id
 * must split back into the two, and fit MC_MAX_TASK_KEY_LEN. On failure
 * writes a reason into why. */
bool mc_task_ids_ok(const char *app_id, const char *task_id, const mc_task_field_names *names,
                    char *why, size_t whylen);
/* Whether record m's key is exactly app_id/task_id: the key picks the
 * partition, and a cancel must land where its submit did. On failure
 * writes a reason into why. Any thread. */
bool mc_record_keyed_by(const mc_record *m, const char *app_id, const char *task_id, char *why,
                        size_t whylen);
/* Checks every field of a submitted task at time now (epoch ms); a task due
 * more than max_due_ms ahead is refused. On failure writes a reason naming
 * the field into why. */
bool mc_task_ok(const mc_task *t, int64_t now, int64_t max_due_ms, const mc_task_field_names *names,
                char *why, size_t whylen);

/* The task_id of t's follow-up i (on_success[i]): its own, or
 * "<task_id>.then<i + 1>", written into buf; returns the length it needs
 * (like snprintf). Any thread. */
size_t mc_follow_up_id(const mc_task *t, size_t i, char *buf, size_t buflen);

/* A header name is an RFC 9110 token. */
bool mc_header_name_ok(const char *name);
/* A value without CR, LF (they would split the request) or other controls
 * than tab. */
bool mc_header_value_ok(const char *value);
/* Headers mooncake sets itself (Idempotency-Key, webhook-*) and hop-by-hop
 * ones, which a task may not set. Case-insensitive. */
bool mc_header_reserved(const char *name);

#endif
