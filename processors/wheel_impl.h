/* The wheel's insides, shared by wheel.c (the role: firing, the checkpoint and markers, assignment)
 * and wheel_keys.c (the per-partition key state - floors, holds, recalls - and moving keys home
 * after a growth of the partition count). All on the role's thread. */
#ifndef MOONCAKE_WHEEL_IMPL_H
#define MOONCAKE_WHEEL_IMPL_H

#include "wheel.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "codec.h"
#include "heap.h"
#include "kafka.h"
#include "keymap.h"
#include "layout.h"
#include "part_table.h"
#include "ring.h"
#include "timing_wheel.h"
#include "wheel_topic.h"

/* Tasks fired per punctuate call: a million due in the same millisecond go
 * out in chunks, with input polled and transactions committed in between.
 * The partitions share it in turns: a pass that spends it stops at a
 * partition, and the next pass starts at the one after, so each partition's
 * backlog holds back another's due tasks for one pass at most. */
#define FIRE_BATCH 20000
/* Floors kept without markers allowing them to go (no store or no executor
 * running, or one far behind): past this many records the oldest are
 * forgotten. */
#define FLOOR_CAP 262144
/* How often a partition's position goes down `ready` as a marker. */
#define MARKER_INTERVAL_MS 1000
/* A fire this close to its due time (or past it) is late by the time its
 * commit is: it asks for the commit now (mc_ctx_request_commit_now), which
 * waits for the broker's acknowledgements rather than polling steps. Fires
 * a lead ahead do not: flushing every commit made them later at 5,000/s. */
#define LATE_FIRE_MS 50
/* Fires come in batches. A punctuate pass fires once the earliest task of
 * any partition is due within the lead less a slack, and then fires every
 * task of every partition due within the lead: the partitions stay in step,
 * and the next pass that fires, with the commit it asks for, comes about a
 * slack later. Each task fires between the lead and the lead less the slack
 * before its due time, never earlier than the lead. Firing each task the
 * moment it entered the lead made a pass, and a transaction, per commit the
 * broker could turn round: more than half of all the transactions of
 * mooncake at 2,000 tasks/s. */
#define FIRE_SLACK_MAX_MS 100
/* The slack never brings a fire closer than this to its due time (a lead of
 * this or less has none): the executor needs the task before its due time,
 * and with fires 100 ms ahead tasks due 2 s ahead at 1,000/s were called
 * with p99 11-27 ms late against 4-11 ms with 200 ms. */
#define FIRE_SLACK_MIN_LEAD_MS 200
/* How late a recall entry may be dropped after its due time. Dropping it is
 * bookkeeping: whether a newer version is recalled is decided against the
 * clock (apply_entry), and an entry kept longer only holds the committed
 * offset and its key's memory back a little. Waking on each entry's due
 * millisecond was most of the wheel's wake-ups under load (one per task
 * fired early); with this slack the passes that fire drop them, and a quiet
 * wheel wakes once per slack. */
#define RECALL_EXPIRY_SLACK_MS 100

/* How much later than the lead the wheel may fire a task (see
 * FIRE_SLACK_MAX_MS): the lead beyond FIRE_SLACK_MIN_LEAD_MS, at most
 * FIRE_SLACK_MAX_MS. */
static inline int64_t wheel_fire_slack_ms(int64_t lead_ms)
{
    int64_t slack = lead_ms - FIRE_SLACK_MIN_LEAD_MS;
    return slack < 0 ? 0 : slack > FIRE_SLACK_MAX_MS ? FIRE_SLACK_MAX_MS : slack;
}

typedef struct wheel_key {
    mc_keynode node;
    mc_timer timer;                /* scheduled while a version is pending */
    struct wheel_key *prev, *next; /* pending list, in offset order */
    mc_version floor;              /* versions below this are void */
    mc_version version;            /* the pending version, when pending */
    int64_t offset, due;           /* its record's offset and due time */
    int64_t fired_due;             /* a version fired early and not due yet; 0: none */
    int64_t fired_offset;          /* that version's record */
    uint8_t *payload;              /* the pending WheelEntry bytes (what `ready` gets), or NULL */
    uint32_t payload_len;
    uint32_t queued; /* floor, hold and recall entries naming this key */
    char key[];
} wheel_key;

#define KEY_OFFSET (offsetof(wheel_key, key) - offsetof(wheel_key, node))

/* A record since the markers' positions: its key's floor is still needed. */
typedef struct floor_ref {
    int64_t offset;
    wheel_key *k;
} floor_ref;

/* A pending hand-off or near next attempt, and the position it can be stale
 * against: the store's when it wrote the hand-off, the wheel's when it fired
 * the call the next attempt follows. */
typedef struct hold_ref {
    int64_t pos, offset;
    wheel_key *k;
} hold_ref;

/* A task fired early: its key is kept until due, for a recall. Current
 * while the key's fired_due and fired_offset still name it. */
typedef struct recall_ref {
    int64_t due, offset;
    wheel_key *k;
} recall_ref;

typedef struct wheel_part {
    int32_t partition;
    mc_keymap *keys;
    mc_timing_wheel *w;
    wheel_key *pend_head, *pend_tail;
    size_t n_pending;
    int64_t next;        /* next offset to process; -1 before the first record */
    int64_t content;     /* next after the last record that was not a position marker */
    int64_t replay_end;  /* O of the checkpoint read on assignment */
    int64_t replay_from; /* the committed offset read on assignment */
    bool has_frontier;
    int64_t fdue, foff;   /* fired frontier */
    int64_t store_pos;    /* from the store's markers */
    int64_t resolved_pos; /* from the resolved-position markers */
    int64_t marked;       /* position in the last marker sent down `ready` */
    int64_t marked_at;    /* when */
    int32_t layout;       /* after a growth: its partition count; 0: none */
    int64_t layout_at;    /* the offset of its marker */
    bool layout_done;     /* every call fired before the marker has finished */
    bool layout_applied;  /* keys moved (false while a replay has not reached the marker) */
    mc_ring floors;       /* floor_ref, in offset order */
    mc_heap holds;        /* hold_ref, least position on top (see oldest_hold) */
    mc_ring recalls;      /* recall_ref, in due order (the firing order) */
} wheel_part;

typedef struct wheel {
    char topic[256];
    mc_output *ready, *wheel_out, *results;
    int64_t lead_ms;
    int64_t gate_ms;     /* a pass fires once a task is due within this: the lead less
                          * wheel_fire_slack_ms (see FIRE_SLACK_MAX_MS) */
    int32_t fire_from;   /* the partition a pass starts firing at (see FIRE_BATCH) */
    int record_version;  /* of the Results written (--record-version) */
    mc_part_table parts; /* wheel_part of each partition assigned */
    mc_arena *arena;
    mc_gauge *pending_gauge;
    mc_counter *fired, *stale, *voided, *replayed, *floors_capped, *recalled, *moved;
    mc_histogram *lateness;
    mc_buf buf;
} wheel;

/* Tasks fired early whose due time has come: nothing can recall them now. */
void wheel_expire_recalls(wheel_part *p, int64_t now);

/* The state of a partition the wheel holds, or NULL. */
wheel_part *wheel_find_part(wheel *w, int32_t partition);

/* Queues a floor of key k (its newest version, at input offset) that keeps
 * the checkpoint back until a marker lets it go; the oldest are forgotten
 * past FLOOR_CAP. 0, or -1 on ENOMEM. */
int wheel_floor_push(wheel *w, wheel_part *p, wheel_key *k, int64_t offset);

/* A record of a key whose home moved, after the marker: it follows what
 * went there, unless this partition's floor says it is stale (a next
 * attempt of a call the client cancelled before the growth, a hand-off
 * the store wrote before it saw a newer version): the new home may have
 * forgotten what made it stale. In a replay it went out the first time. */
int wheel_forward_moved(wheel *w, wheel_part *p, const mc_record *m, const mc_wheel_class *c,
                        mc_wheel_entry *e, bool replay, mc_ctx *ctx);

/* The holds heap's order: by position, then by offset. */
bool wheel_hold_less(const void *a, const void *b);

/* Queues a hold of key k at pos (input offset offset). 0, or -1 on ENOMEM. */
int wheel_hold_push(wheel_part *p, wheel_key *k, int64_t pos, int64_t offset);

/* Key's state in p, made when missing; NULL on ENOMEM. */
wheel_key *wheel_key_get(wheel_part *p, const void *key, size_t len);

/* Forgets a key once nothing needs it: no pending version, and no floor,
 * hold or recall entry naming it. */
void wheel_maybe_forget(wheel_part *p, wheel_key *k);

/* Whether key's home is elsewhere since the growth at the partition's marker. */
bool wheel_moved(const wheel_part *p, const void *key, size_t len);

/* The least position of a hand-off or next attempt still pending, or
 * INT64_MAX. Positions do not arrive in order - a call fired early can fail
 * late (a timeout), after one fired later has failed and been rescheduled,
 * or after a hand-off with a higher position - so a queue's front is not the
 * least, and the commit would pass a pending one's position (a replay from
 * there judged it stale and lost it: test_sim_chaos). Hence a heap. An entry
 * no longer pending never is again (a key's pending offset only grows), so
 * it is dropped when it reaches the top. */
int64_t wheel_oldest_hold(wheel_part *p);

/* The lowest record offset a recall may still need, or INT64_MAX. They are
 * few (what fired within the lead), so a scan. */
int64_t wheel_oldest_recall(const wheel_part *p);

/* Frees a partition's state and every key in it (NULL is fine). */
void wheel_part_free(wheel_part *p);

/* The pending record of k, as the input record it was (for a dead letter). */
mc_record wheel_pending_record(const wheel *w, const wheel_part *p, const wheel_key *k);

/* Queues the recall of k's fire due at due (ready offset offset), kept until
 * it expires. 0, or -1 on ENOMEM. */
int wheel_recall_push(wheel_part *p, wheel_key *k, int64_t due, int64_t offset);

/* A record's version: a Submit's attempt is its task's; a Cancel's is 0, or
 * what its attempt header says (a void). */
mc_version wheel_record_version(const mc_wheel_class *c, const mc_wheel_entry *e);

/* Floors of records below both markers' positions are needed no more. */
void wheel_release_floors(wheel_part *p);

/* Whether the partition is still re-reading what it had before a restart. */
bool wheel_replaying(const wheel_part *p);

/* The layout marker: the pending version of every key whose home moves goes
 * there (in a replay it went when the marker was first processed). */
int wheel_take_layout(wheel *w, wheel_part *p, int32_t to, int64_t offset, bool replay,
                      mc_ctx *ctx);

/* Takes k's pending task off its timer and the pending list. */
void wheel_unlink_pending(wheel_part *p, wheel_key *k);

/* Sets the pending tasks gauge from every partition. */
void wheel_update_gauge(wheel *w);

#endif
