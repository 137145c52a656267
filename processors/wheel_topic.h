/* The protocol of the `wheel` topic, shared by its writers (router, store,
 * retry, and the wheel itself) and its readers (store, wheel), and of the
 * markers that travel with `ready` and `retry`. Every record with a key is
 * keyed by the task key and lives in the task's partition number:
 *   WheelEntry Submit v                  a task due within the horizon (router),
 *                                        handed over by the store, or the next
 *                                        attempt of a failed call (retry)
 *   WheelEntry Submit v + route: store   a task due later: the store keeps it
 *   WheelEntry Submit v + fired-by-router
 *                                        a task due within the wheel's lead that
 *                                        the router fired to `ready` itself, in
 *                                        the same transaction: the wheel takes
 *                                        it as fired, the store as any near one
 *   WheelEntry Cancel v                  cancel every version below v
 *   WheelEntry Cancel v + attempt: a     void every version below (v, a) (the
 *                                        wheel, of a far retry it found stale)
 *   null key, null value + store-position: P
 *                                        the store has applied every record
 *                                        below offset P of this partition
 *   a hand-off also carries store-position: P
 *                                        written when the store had applied
 *                                        every record below P
 *   null key, null value + resolved-position: O
 *                                        every call the wheel fired at its
 *                                        position below O has finished, and
 *                                        its next attempt, if any, is before
 *                                        this marker (the retry processor
 *                                        forwards the wheel's markers, which
 *                                        went through ready and the executor)
 *
 * A version is the pair (v, attempt): v is the tasks-topic offset of the
 * client's command, attempt the task's attempt (0 for a Cancel). A next
 * attempt keeps its command's v, so whatever the client writes afterwards
 * (a larger v) wins over it, and it wins over the attempt before it. */
#ifndef MOONCAKE_WHEEL_TOPIC_H
#define MOONCAKE_WHEEL_TOPIC_H

#include <stdbool.h>
#include <stdint.h>

#include "codec.h"
#include "layout.h"
#include "processor.h"
#include "record.h"

#define MC_ROUTE_HEADER "mooncake-route"
#define MC_ROUTE_STORE "store"
#define MC_STORE_POSITION_HEADER "mooncake-store-position"
/* On a Cancel: the attempt of its version (absent: 0). */
#define MC_ATTEMPT_HEADER "mooncake-attempt"
/* The wheel's markers in ready (and, forwarded by the executor, in retry). */
#define MC_WHEEL_POSITION_HEADER "mooncake-wheel-position"
/* The same marker forwarded by the retry processor back to wheel. */
#define MC_RESOLVED_POSITION_HEADER "mooncake-resolved-position"
/* On a `ready` Submit, its Attempt and (as mooncake-store-position) the
 * next attempt: the wheel's position when it fired the call. The next
 * attempt can only be stale against records from there on, like a
 * hand-off against the records after its store position. */
#define MC_FIRED_POSITION_HEADER "mooncake-fired-position"
/* On a `wheel` Submit the router also fired to `ready` (value "1"). */
#define MC_FIRED_BY_ROUTER_HEADER "mooncake-fired-by-router"
/* On an Attempt (retry): the version v of the task that failed. */
#define MC_VERSION_HEADER "mooncake-version"

typedef struct mc_version {
    int64_t v;
    int32_t attempt;
} mc_version;

/* <0, 0, >0 as a is older than, the same as, or newer than b. */
static inline int mc_version_cmp(mc_version a, mc_version b)
{
    if (a.v != b.v)
        return a.v < b.v ? -1 : 1;
    return a.attempt < b.attempt ? -1 : a.attempt > b.attempt;
}

/* What the store and the wheel need of a WheelEntry record without decoding
 * it: its version, kind, and for a Submit its due time and where the task's
 * bytes start. */
typedef struct mc_wheel_peeked {
    mc_version version;
    mc_command_kind kind;
    int64_t due_at;     /* Submit */
    size_t task_offset; /* Submit: the task's bytes are value[task_offset..] */
    size_t task_suffix; /* Submit: bytes of mc_task_v1_suffix that make them current */
} mc_wheel_peeked;
mc_codec_err mc_wheel_record_peek(const mc_record *r, mc_wheel_peeked *out);

/* What one `wheel` record is, read from its headers once: the one reading of
 * them that the store, the wheel and the view share. */
typedef enum mc_wheel_kind {
    MC_WHEEL_ENTRY,             /* anything not below: a WheelEntry when key and value are set */
    MC_WHEEL_LAYOUT,            /* null key and value, mooncake-layout: the new partition count */
    MC_WHEEL_STORE_POSITION,    /* a null value with the store's position P */
    MC_WHEEL_RESOLVED_POSITION, /* a null value with the resolved position O */
} mc_wheel_kind;

typedef struct mc_wheel_class {
    mc_wheel_kind kind;
    int64_t position;         /* LAYOUT: the count; *_POSITION: P or O */
    bool far;                 /* the router addressed it to the store */
    bool fired_by_router;     /* the router fired its task to `ready` itself */
    bool handoff;             /* a hand-off from the store, which had applied every record */
    int64_t handoff_position; /* ... below this offset */
    bool has_attempt;         /* a mooncake-attempt header (a Cancel's: a void) */
    int64_t attempt;          /* its value; 0 when absent or not a number */
} mc_wheel_class;

/* Reads r's headers once into *out. Any thread. */
void mc_wheel_record_classify(const mc_record *r, mc_wheel_class *out);

/* Whether c is a store's or a resolved position marker: records that call
 * for no marker in answer (store.c, wheel.c). */
static inline bool mc_wheel_is_position_marker(const mc_wheel_class *c)
{
    return c->kind == MC_WHEEL_STORE_POSITION || c->kind == MC_WHEEL_RESOLVED_POSITION;
}

/* A Cancel's version attempt, as its attempt header says (0 when none). */
static inline int32_t mc_wheel_cancel_attempt(const mc_wheel_class *c)
{
    return c->attempt > 0 && c->attempt <= INT32_MAX ? (int32_t)c->attempt : 0;
}

/* Forwards a position marker - null key and value, `header` carrying
 * `position` in decimal - to `partition` of `out`, in the transaction under
 * way. Returns mc_ctx_forward_header's answer. The processor's thread. */
int mc_forward_position_marker(mc_ctx *ctx, mc_output *out, int32_t partition, const char *header,
                               int64_t position);

#endif
