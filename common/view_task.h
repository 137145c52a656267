/* One task as the view keeps it (see view.c): what the topics have said
 * about its key so far, folded record by record, the bytes that carry it in
 * the view's changelog, and the answer a query gets.
 *
 * The view reads five topics of one partition number in no particular
 * order between them, so every fact is tied to the version it is about (a
 * Submit's tasks offset) and a record of an older version never undoes a
 * newer one. The state is not stored: it is worked out when asked, from the
 * facts and from how far the wheel has got (its position markers in
 * `ready`), which is what makes "cancelled" a promise rather than a hope.
 *
 * Every function here runs on the view's thread; the answer is built under
 * the view's read lock. */
#ifndef MOONCAKE_VIEW_TASK_H
#define MOONCAKE_VIEW_TASK_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "codec.h"
#include "keymap.h"
#include "timing_wheel.h"

/* Attempts kept per version (a task retried more often keeps its first
 * MAX - 1 and its last), and older versions kept per key. */
#define MC_VIEW_MAX_CALLS 16
/* No version seen yet. Versions are tasks offsets, or far below zero when
 * shifted by a growth of the partition count (layout.h). */
#define MC_VIEW_NONE INT64_MIN
#define MC_VIEW_MAX_OLDER 4
/* An error message and a response body are kept up to these sizes. */
#define MC_VIEW_ERROR_BYTES 256
#define MC_VIEW_BODY_BYTES 512
/* A task's bytes are kept up to this size (a larger one: its state only). */
#define MC_VIEW_MAX_TASK_BYTES 65536

/* One attempt's Result. */
typedef struct mc_view_call {
    int32_t attempt;
    int32_t outcome; /* mc_outcome */
    int32_t http_status;
    int64_t started_at, finished_at;
    char *error;   /* "" when none; owned */
    uint8_t *body; /* the first bytes of the answer; owned, may be NULL */
    uint32_t body_len;
    int64_t response_size; /* -1: no response */
} mc_view_call;

/* A version a newer command replaced. */
typedef struct mc_view_older {
    int64_t version;
    int64_t replaced_by;  /* the command version that replaced it */
    int64_t replaced_at;  /* that command's `wheel` offset; -1 not seen yet */
    int32_t fired;        /* the last attempt fired; 0: never */
    int32_t last_attempt; /* of the last Result; 0: none */
    int32_t last_outcome;
} mc_view_older;

typedef enum mc_view_route {
    MC_VIEW_ROUTE_NONE = 0, /* only in `tasks` so far */
    MC_VIEW_ROUTE_STORE = 1,
    MC_VIEW_ROUTE_WHEEL = 2,
} mc_view_route;

typedef struct mc_view_task {
    mc_keynode node;
    mc_timer forget; /* a task in a final state is forgotten after the history */
    /* Its place among its app's tasks by (due time, key): see view_list.h. */
    struct mc_view_task *lower, *higher;
    int64_t indexed_due; /* the due time it is ordered by */
    bool indexed;
    struct mc_view_task *next_dirty;
    bool dirty;
    /* The newest command of the key: a Submit (then == version) or a Cancel. */
    int64_t command;          /* MC_VIEW_NONE: none seen */
    int32_t command_kind;     /* mc_command_kind */
    int64_t command_at;       /* its created_at / requested_at */
    int64_t command_wheel_at; /* its `wheel` offset; -1 not seen yet */
    /* The newest Submit and what happened to it. */
    int64_t version; /* MC_VIEW_NONE: none seen */
    int64_t due_at;
    int32_t route;     /* mc_view_route of the newest attempt scheduled */
    int32_t scheduled; /* the newest attempt written to `wheel` (0: none) */
    int64_t scheduled_due;
    int32_t fired; /* the newest attempt fired to `ready` (0: none) */
    int64_t fired_at;
    uint8_t *task; /* StoredTask bytes of the newest attempt seen; owned */
    uint32_t task_len;
    char *rejected; /* the router's reason for a dead letter; owned */
    /* Allocated when there is something to keep: most pending tasks have
     * neither, and the view holds millions of them. */
    mc_view_call *calls;  /* n_calls, oldest first; owned */
    mc_view_older *older; /* n_older, oldest first; owned */
    uint32_t n_calls;
    uint32_t n_older;
    char key[]; /* node.key_len bytes */
} mc_view_task;

#define MC_VIEW_TASK_KEY_OFFSET (offsetof(mc_view_task, key) - offsetof(mc_view_task, node))

/* The changelog record, one per partition, that keeps how far the wheel had
 * got (its last position marker in `ready`) with the tasks: no task key
 * starts with '/' (an app id is never empty). Its value is the position in
 * decimal. */
#define MC_VIEW_POSITION_KEY "/wheel-position"

/* A new, empty task for key. NULL on ENOMEM. Caller owns it (mc_view_task_free). */
mc_view_task *mc_view_task_new(const void *key, size_t key_len);
void mc_view_task_free(mc_view_task *t);
/* Bytes the task holds beyond its struct (key, task, calls). */
size_t mc_view_task_extra_bytes(const mc_view_task *t);

/* ---- folding: each returns true when the task changed ---------------------- */

/* A Submit of version v (from `tasks`, `wheel` or `ready`): task is the
 * StoredTask bytes (copied), or NULL when the record had none to give. */
bool mc_view_task_submitted(mc_view_task *t, int64_t v, int32_t attempt, int64_t due_at,
                            int64_t created_at, const void *task, size_t task_len);
/* A client's Cancel of version v. */
bool mc_view_task_cancelled(mc_view_task *t, int64_t v, int64_t requested_at);
/* The router's `wheel` record of command v at offset `at`. */
bool mc_view_task_routed(mc_view_task *t, int64_t v, int64_t at);
/* Attempt `attempt` of version v is waiting in the store (far) or the wheel. */
bool mc_view_task_scheduled(mc_view_task *t, int64_t v, int32_t attempt, int64_t due_at, bool far);
/* Attempt `attempt` of version v was fired to `ready` at `at` (ms). */
bool mc_view_task_fired(mc_view_task *t, int64_t v, int32_t attempt, int64_t at);
/* A Result (its version -1 when written by an older release: taken as the
 * newest version's). */
bool mc_view_task_result(mc_view_task *t, const mc_result *r);
/* The router dead-lettered command v: the key's state when it has no
 * version of its own (a refused command replaces nothing). */
bool mc_view_task_rejected(mc_view_task *t, int64_t v, const char *reason);

/* ---- what it is now ---------------------------------------------------------- */

typedef enum mc_view_state {
    MC_VIEW_ACCEPTED,         /* in `tasks`, not routed yet */
    MC_VIEW_PENDING_STORE,    /* due beyond the horizon: kept by the store */
    MC_VIEW_PENDING_WHEEL,    /* in the wheel, not fired */
    MC_VIEW_HELD,             /* fired early; the executor calls it at its due time */
    MC_VIEW_CALLING,          /* fired and due: the call is on its way or running */
    MC_VIEW_RETRYING,         /* an attempt failed; the next one is waiting */
    MC_VIEW_CANCEL_REQUESTED, /* a cancel is on its way; not called since */
    MC_VIEW_SUCCEEDED,
    MC_VIEW_FAILED,    /* failed permanently: dead-lettered */
    MC_VIEW_DEAD,      /* out of attempts: dead-lettered */
    MC_VIEW_CANCELLED, /* never called, and never will be */
    MC_VIEW_DROPPED,   /* not called: later than its late policy allows */
    MC_VIEW_REJECTED,  /* the router refused it: dead-lettered */
    MC_VIEW_UNKNOWN,   /* a cancel of a key never seen */
} mc_view_state;

/* The state of the newest version, given where the wheel's last position
 * marker in `ready` said it was (-1: none since the view started) and now. */
mc_view_state mc_view_task_state(const mc_view_task *t, int64_t wheel_position, int64_t now_ms);
/* The name the API uses ("pendingStore", ...). */
const char *mc_view_state_name(mc_view_state s);
/* Whether nothing more will happen to the newest version. */
bool mc_view_state_final(mc_view_state s);

/* The answer to GET /api/task: state, version, due time, attempt, the
 * callback with secrets redacted (or the Kafka target, and the late policy
 * and follow-ups, onSuccess, when set), every attempt's Result, older
 * versions.
 * Caller owns the JSON. */
json_t *mc_view_task_json(const mc_view_task *t, int64_t wheel_position, int64_t now_ms);
/* A callback as every answer shows it: secret headers, secret query
 * parameters and the URL's user info redacted (redact.h). Caller owns it;
 * NULL on ENOMEM. Any thread. */
json_t *mc_view_callback_json(const mc_callback *cb);
/* A Kafka target as every answer shows it: topic, key (keyBase64 when not
 * UTF-8), headers with secret ones redacted, and the value's size only
 * (valueBytes, or tombstone true). Caller owns it; NULL on ENOMEM. Any
 * thread. */
json_t *mc_view_kafka_target_json(const mc_kafka_target *k);

/* One line of GET /api/tasks: the answer above without the attempts (the
 * last one as lastAttempt, without the endpoint's answer), older versions,
 * metadata, retry policy, and of the callback only its URL and method.
 * Caller owns the JSON. */
json_t *mc_view_task_summary_json(const mc_view_task *t, int64_t wheel_position, int64_t now_ms);

/* ---- the changelog ------------------------------------------------------------ */

/* Appends the task's changelog value to out. 0, or -1 on ENOMEM. */
int mc_view_task_encode(const mc_view_task *t, mc_buf *out);
/* A task for key from a changelog value. NULL when the bytes are not one
 * (*why says what is wrong) or on ENOMEM. Caller owns it. */
mc_view_task *mc_view_task_decode(const void *key, size_t key_len, const void *value, size_t len,
                                  const char **why);

#endif
