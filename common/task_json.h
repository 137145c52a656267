/* The gateway's JSON bodies (and mooncakectl submit -f) -> mooncake records: POST /submit's task
 * and POST /api/task/done's {appId, uuid}. Every way a body can be wrong gives one sentence naming
 * the field as the client wrote it ("callback.timeoutMs must be an integer"), and a task that
 * passes here also passes the router's checks (task_rules.h), so nothing the gateway accepts is
 * dead-lettered. */
#ifndef MOONCAKE_TASK_JSON_H
#define MOONCAKE_TASK_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "codec.h"

#include <jansson.h>

#define MC_JSON_MAX_ID_LEN 255           /* appId, uuid */
#define MC_JSON_MAX_HEADERS 64           /* callback.headers entries */
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
 * why. */
int mc_task_from_json(const char *body, size_t len, const mc_task_json_options *o, mc_arena *arena,
                      mc_task *out, char *why, size_t whylen);

/* Parses and checks a cancel body {appId, uuid} into *out (requested_at =
 * now_ms). Same conventions as mc_task_from_json. */
int mc_cancel_from_json(const char *body, size_t len, int64_t now_ms, mc_arena *arena,
                        mc_cancel *out, char *why, size_t whylen);

/* A JSON string of the base64 of n bytes (caller owns the reference). Any
 * thread. */
json_t *mc_json_base64(const uint8_t *p, size_t n);
/* Sets obj[name] to the bytes as a string when they are UTF-8, else
 * obj[name_base64]; a NULL pointer sets null. */
void mc_json_set_bytes(json_t *obj, const char *name, const void *p, size_t n);
/* A task as JSON, field names as in the schema, for people to read
 * (mooncakectl results/dead, mooncake-schema decode); caller owns it. */
json_t *mc_task_to_json(const mc_task *t);

#endif
