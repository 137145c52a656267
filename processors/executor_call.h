/* What the executor's two sides share: an mc_call (one call to make, or a recall
 * of calls not started yet) and the caller that makes calls. The Kafka side
 * (executor.c, the runner's thread) reads `ready`, posts calls and reports
 * finished ones in its transactions; the caller (executor_http.c, its own
 * thread with libcurl) holds each call until due and calls it. A call belongs
 * to the Kafka side until posted, to the caller until it is given back
 * through take_done, then to the Kafka side again. Tests give the executor
 * another caller (tests/sim) to decide when and how calls end. */
#ifndef MOONCAKE_EXECUTOR_CALL_H
#define MOONCAKE_EXECUTOR_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "config.h"
#include "endpoints.h"
#include "executor_admission.h"
#include "metrics.h"
#include "wheel_topic.h"

#define MC_CALL_KEY_MAX 1024
#define MC_CALL_RETRY_AFTER_MAX 64
#define MC_CALL_ERROR_MAX 512
#define MC_CALL_RESPONSE_HEADERS_MAX 16  /* kept response headers per call */
#define MC_CALL_RESPONSE_HEADER_MAX 1024 /* bytes of one kept header's value */
#define MC_CALL_MEMBER_MAX 600           /* a group member's URL and address */

typedef enum mc_call_kind {
    MC_CALL_START,  /* call task's callback at its due time */
    MC_CALL_RECALL, /* drop the held or queued calls of key below version */
} mc_call_kind;

typedef struct mc_call {
    mc_call_kind kind;
    /* Set by the Kafka side. */
    int32_t partition;
    int64_t offset; /* its `ready` record */
    uint64_t seq;   /* its place in the partition's window */
    uint64_t gen;   /* the partition's generation when read: stale after an abandon */
    mc_version version;
    char key[MC_CALL_KEY_MAX];
    mc_task task; /* CALL: points into arena */
    mc_arena *arena;
    bool held_at_read; /* CALL: not due when read */
    int64_t fired_pos; /* CALL: the wheel's position when it fired it; -1: not said */
    /* Set by the caller before giving the call back. */
    bool recalled;         /* CALL: dropped by a recall before it started */
    mc_late_action late;   /* CALL: DROP or DEAD: not started, later than its policy allows */
    bool deliver;          /* CALL: a Kafka target's turn: the Kafka side produces it */
    bool transport_failed; /* no HTTP answer: a connection error, a timeout, a refusal */
    bool permanent;        /* with transport_failed: retrying cannot help */
    long status;           /* the HTTP status, 0 without an answer */
    char error[MC_CALL_ERROR_MAX];
    int64_t started_at, finished_at; /* wall clock */
    uint8_t *snippet;                /* the first bytes of the answer, malloc'd */
    size_t snippet_len;
    int64_t body_bytes; /* of the answer's body, kept or not */
    /* The answer's headers named by --executor-response-headers; each key is
     * one malloc'd "name\0value" block that the value points into. */
    mc_kv response_headers[MC_CALL_RESPONSE_HEADERS_MAX];
    size_t n_response_headers;
    char retry_after[MC_CALL_RETRY_AFTER_MAX];
    /* CALL to a group: the member that answered (or last failed): its URL, and its
     * address in brackets when it came from DNS; "" for a call to a URL. */
    char member[MC_CALL_MEMBER_MAX];
    /* CALL of a SHARDING_BROADCAST's turn, given back without a call: the members of its
     * group then (malloc'd strings, in shard order), which the Kafka side submits a shard
     * to each. */
    char **shard_members;
    size_t n_shard_members;
    /* Private to whoever owns the call: list links and the caller's state. */
    struct mc_call *next;
    void *caller_state;
} mc_call;

/* Frees a call and what it holds (its arena, snippet); the caller's state
 * must have been released. Either side. */
void mc_call_free(mc_call *j);
/* Frees the call's kept response headers (a new answer replaces them).
 * Whichever side owns the call. */
void mc_call_forget_response_headers(mc_call *j);

typedef struct mc_caller mc_caller;

typedef struct mc_caller_ops {
    /* Takes j and the calls linked after it (by next), as one batch: a CALL
     * is held until its due time, then called (or queued while too many are
     * running) - or, when the moment it would start comes, given back
     * without a call: late past its late policy (late set), or a Kafka
     * target, which the Kafka side delivers (deliver set); a RECALL drops the held or queued CALLs
     * of its partition and key with an older version - they come back recalled - and then comes
     * back itself. Calls are taken in the order posted, and no CALL of a
     * batch starts before its RECALLs are applied (a batch read after due
     * times have passed still honours its recalls). */
    void (*post)(mc_caller *c, mc_call *j);
    /* Drops (frees) every call of the partition it still has; returns once
     * it has, so the Kafka side can forget the partition, with how many of
     * them were running (their endpoints may have been called). */
    size_t (*abandon)(mc_caller *c, int32_t partition);
    /* The partition is being handed over: from now until its abandon, no
     * call of it starts. Its calls not started yet (held, queued, posted
     * later) are dropped at once, for the next owner, which reads them again;
     * the running ones go on and are given back as they end. */
    void (*drain_partition)(mc_caller *c, int32_t partition);
    /* How many calls of the partition the caller still has (after
     * drain_partition: those running); one it has given back is in
     * take_done's list by the time this answers. */
    size_t (*calls_of)(mc_caller *c, int32_t partition);
    /* The calls given back since the last call (linked by next), in the
     * order they ended. */
    mc_call *(*take_done)(mc_caller *c);
    /* A descriptor that is readable while calls wait to be taken. */
    int (*wake_fd)(mc_caller *c);
    /* From now on starts nothing new (a stop is draining). */
    void (*drain)(mc_caller *c);
    /* Whether no call is running and no call waits to be taken. */
    bool (*idle)(mc_caller *c);
    /* Stops the caller and frees it with every call it still has. */
    void (*destroy)(mc_caller *c);
} mc_caller_ops;

struct mc_caller {
    const mc_caller_ops *ops;
};

/* Asked by the caller on its own thread before it starts a call: false
 * while the Kafka side may no longer own what it posted (the group took the
 * partitions away and the runner, blocked in a commit, has not heard yet;
 * their next owner may be making these very calls). Due calls then wait in
 * the queue until the Kafka side abandons them or the gate opens again. */
typedef struct mc_call_gate {
    bool (*may_start)(void *arg);
    /* The endpoint groups and admission limits now, with a reference for the caller; NULL
     * while they are not known yet (no call starts then). NULL function: there are none. */
    mc_endpoints *(*endpoints)(void *arg);
    /* Copies into out which partitions the Kafka side owns, if that changed since
     * *version (which it then advances); false if it did not. NULL function: the shares of
     * admission limits are computed as if this executor owned one partition of one. */
    bool (*ownership)(void *arg, uint64_t *version, mc_ownership *out);
    void *arg;
} mc_call_gate;

/* Makes a caller for an executor with this configuration (its metrics
 * registered in m) that asks gate before each call. NULL with a reason in
 * err. */
typedef mc_caller *(*mc_caller_factory)(const mc_config *cfg, mc_metrics *m,
                                        const mc_call_gate *gate, const void *arg, char *err,
                                        size_t errlen);

/* The executor's own caller: libcurl's multi interface on a thread of its
 * own (executor_http.c). */
mc_caller *mc_http_caller_new(const mc_config *cfg, mc_metrics *m, const mc_call_gate *gate,
                              const void *arg, char *err, size_t errlen);

#endif
