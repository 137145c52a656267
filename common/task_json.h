/* The gateway's JSON bodies (and mooncakectl submit -f) -> mooncake records: POST /submit's task
 * and POST /api/task/done's {appId, uuid}, each with an optional orderingKey (a serial chain).
 * Every way a body can be wrong gives one sentence naming the field as the client wrote it
 * ("callback.timeoutMs must be an integer"), and a task that passes here also passes the router's
 * checks (task_rules.h), so nothing the gateway accepts is dead-lettered. */
#ifndef MOONCAKE_TASK_JSON_H
#define MOONCAKE_TASK_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "task_rules.h"

#include <jansson.h>

#define MC_JSON_MAX_ID_LEN 255           /* appId, uuid */
#define MC_JSON_MAX_HEADERS 64           /* callback.headers, kafkaTarget.headers entries */
#define MC_JSON_MAX_MAP_BYTES (16 << 10) /* callback.headers, metadata: names + values */

/* Makes a task id when the body has none: writes a NUL-terminated id of at
 * most MC_JSON_MAX_ID_LEN bytes into out. */
typedef void (*mc_json_id_fn)(void *arg, char out[MC_JSON_MAX_ID_LEN + 1]);

typedef struct mc_task_json_options {
    int64_t now_ms;                 /* receive time: created_at, and delayMs counts from it */
    int64_t max_due_ms;             /* as the router's --max-due-ms */
    mc_retry_policy retry_defaults; /* fill the fields a partial "retry" leaves out */
    mc_json_id_fn make_id;          /* for a body without uuid */
    void *make_id_arg;
} mc_task_json_options;

/* Parses and checks a submit body into *out. Strings point into arena (valid
 * until mc_arena_reset). Returns 0, or -1 with a sentence naming the field in
 * why. A body gives callback or kafkaTarget (then callback.url is ""), and
 * may give latePolicy and onSuccess (follow-ups, mc_json_get_follow_ups). The Kafka target's topic
 * is checked for its form only: which topics an app may write is the gateway's allow-list
 * (kafka_targets.h). *ordering_key is the body's orderingKey, checked as the jobs role checks
 * a chain's (mc_ordering_key_ok), or NULL when it has none: with one, the task is a link of
 * that serial chain (mc_encode_task_command). Any thread. */
int mc_task_from_json(const char *body, size_t len, const mc_task_json_options *o, mc_arena *arena,
                      mc_task *out, const char **ordering_key, char *why, size_t whylen);

/* Parses and checks a cancel body {appId, uuid, orderingKey?} into *out
 * (requested_at = now_ms) and *ordering_key. Same conventions as
 * mc_task_from_json. */
int mc_cancel_from_json(const char *body, size_t len, int64_t now_ms, mc_arena *arena,
                        mc_cancel *out, const char **ordering_key, char *why, size_t whylen);

/* Encodes what a submit or a cancel sends (cmd: a Submit or a Cancel) into
 * out: without an ordering key the Command itself, for <prefix>tasks keyed
 * app_id/task_id; with one, the JobCommand that puts it to that serial chain
 * (an AddLink of the task, or a CancelLink), for <prefix>job-commands keyed
 * app_id/ordering_key. Returns 0, or -1 on ENOMEM. Any thread. */
int mc_encode_task_command(const mc_command *cmd, const char *ordering_key, mc_buf *out);

/* A JSON string of the base64 of n bytes (caller owns the reference). Any
 * thread. */
json_t *mc_json_base64(const uint8_t *p, size_t n);
/* Sets obj[name] to the bytes as a string when they are UTF-8, else
 * obj[name_base64]; a NULL pointer sets null. */
void mc_json_set_bytes(json_t *obj, const char *name, const void *p, size_t n);
/* A task as JSON, field names as in the schema, for people to read
 * (mooncakectl results/dead, mooncake-schema decode); kafka_target,
 * late_policy and on_success only when the task has them. Caller owns it. */
json_t *mc_task_to_json(const mc_task *t);
/* "RUN", "DROP", "DEAD" (as the API and the schema spell them). Static
 * storage; any thread. */
const char *mc_late_action_name(mc_late_action a);
/* {maxLateMs|max_late_ms, action}, or null when !has_policy. Caller owns
 * it; any thread. */
json_t *mc_late_policy_to_json(bool has_policy, const mc_late_policy *p, bool api_names);

/* ---- the pieces, shared with the jobs' JSON (job_json.c) ----------------------
 * Each getter reads one field of obj, names it `name` in its sentence, and
 * returns 0, or -1 with the sentence in why. Strings go into the arena. Any
 * thread. */

/* The task API's field names (appId, uuid, callback.timeoutMs, ...). */
extern const mc_task_field_names mc_task_json_names;
/* "an object", "a string", ...: what a value is, for messages. */
const char *mc_json_type_name(const json_t *v);
/* Parses a body that must be one JSON object (duplicate keys refused);
 * caller owns the result. NULL with a sentence in why. */
json_t *mc_json_parse_object(const char *body, size_t len, char *why, size_t whylen);
/* A string field; a missing or null optional one leaves *out NULL.
 * Identifiers (max_len == MC_JSON_MAX_ID_LEN) also refuse control
 * characters: they end up in a Kafka key and in HTTP headers. */
int mc_json_get_string(json_t *obj, const char *key, const char *name, bool required,
                       size_t max_len, mc_arena *a, const char **out, char *why, size_t whylen);
/* An integer field in [min, max]; a missing or null one leaves *out as it
 * is and *present false. */
int mc_json_get_int(json_t *obj, const char *key, const char *name, int64_t min, int64_t max,
                    bool *present, int64_t *out, char *why, size_t whylen);
/* An object of strings -> an mc_kv array; headers are checked as HTTP
 * header lines (and reserved names refused), other maps only for size. */
int mc_json_get_map(json_t *obj, const char *key, const char *name, bool headers, mc_arena *a,
                    const mc_kv **out, size_t *n_out, char *why, size_t whylen);
/* Where mc_json_get_action writes what a task, a follow-up or a job does:
 * pointers into the struct being filled. */
typedef struct mc_json_action {
    mc_callback *callback;
    bool *has_kafka_target;
    mc_kafka_target *kafka_target;
    bool *has_retry;
    mc_retry_policy *retry;
    bool *has_late_policy;
    mc_late_policy *late_policy;
    /* callback.strategy of a group call (NULL when none); NULL: not taken here (a
     * follow-up calls with its group's strategy). */
    const char **strategy;
} mc_json_action;
/* obj's callback (url, or group with path and strategy making the url
 * group://GROUP/PATH; method default POST and upper-cased, headers, body,
 * timeoutMs) or kafkaTarget (topic, key|keyBase64, value|valueBase64,
 * headers; then callback.url is ""), and the optional retry (a partial one
 * takes the rest from def) and latePolicy. `at` prefixes every field name
 * in the sentences: "" for a task or a job, "onSuccess[1]." for a
 * follow-up. */
int mc_json_get_action(json_t *obj, const char *at, const mc_retry_policy *def, mc_arena *a,
                       const mc_json_action *out, char *why, size_t whylen);
/* Refuses metadata that sets mooncake.route itself, then adds strategy (when not NULL)
 * to it as mooncake.route: the array is copied into the arena a. 0, or -1 with why. */
int mc_json_route_metadata(mc_arena *a, const char *strategy, const mc_kv **metadata, size_t *n,
                           char *why, size_t whylen);
/* In the API's JSON of a callback, a group://GROUP/PATH url becomes group and path,
 * and for a group the metadata's mooncake.route (when there) strategy: as a body
 * gives them. */
void mc_json_callback_group(json_t *cb, const mc_kv *metadata, size_t n_metadata);
/* The API's JSON of metadata: without mooncake.route (shown as callback.strategy).
 * Caller owns. */
json_t *mc_json_api_metadata(const mc_kv *kv, size_t n);
/* obj.onSuccess (optional): at most MC_MAX_FOLLOW_UPS objects {uuid?,
 * delayMs? in [0, max_delay_ms] (default 0), callback | kafkaTarget,
 * retry?, latePolicy?} into an arena array; fields named
 * "onSuccess[i].callback.url". A missing uuid is "" (the derived id). */
int mc_json_get_follow_ups(json_t *obj, int64_t max_delay_ms, const mc_retry_policy *def,
                           mc_arena *a, const mc_follow_up **out, size_t *n_out, char *why,
                           size_t whylen);
/* JSON of a map, a callback and a retry policy (null when !has_retry), with
 * the API's names (timeoutMs) or the schema's (timeout_ms). Caller owns. */
json_t *mc_json_kv_object(const mc_kv *kv, size_t n);
json_t *mc_callback_to_json(const mc_callback *cb, bool api_names);
json_t *mc_retry_to_json(bool has_retry, const mc_retry_policy *r, bool api_names);
/* A Kafka target, every byte shown: with the API's names as a body gives it
 * (key|keyBase64, value|valueBase64, no value for a tombstone), or the
 * schema's (key and value null when absent, key_base64 when not UTF-8).
 * Caller owns it; any thread. */
json_t *mc_kafka_target_to_json(const mc_kafka_target *k, bool api_names);
/* One follow-up: id (left out when NULL), delay, `does` (its callback or
 * Kafka target as the caller renders it; the reference is taken) under
 * callback or kafkaTarget, retry, and latePolicy when it has one. With the
 * API's names (uuid, delayMs, ...) or the schema's (task_id, delay_ms, ...).
 * Caller owns it; any thread. */
json_t *mc_follow_up_to_json(const mc_follow_up *f, const char *id, json_t *does, bool api_names);
/* An array of follow-ups, every byte shown (mc_callback_to_json,
 * mc_kafka_target_to_json); the API's names leave out a derived id ("").
 * Caller owns it; any thread. */
json_t *mc_follow_ups_to_json(const mc_follow_up *f, size_t n, bool api_names);

#endif
