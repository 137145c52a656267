/* Listing and counting an app's tasks from what the view holds (view_task.h):
 * GET /api/tasks pages them by due time, GET /api/stats counts them per
 * state and adds the last hour's calls, failures and dead letters.
 *
 * A view instance offers every task of the partitions it holds to one
 * selection; the gateway merges the instances' answers into one page. The
 * order is (dueAt, uuid), and a page's last item is the cursor of the next,
 * so a page never repeats or skips a task that did not change meanwhile.
 *
 * The per-app minute counters live here too: the view folds every Result and
 * dead letter into its app's counters, which its changelog keeps, so the
 * last hour's figures survive a restart and count each record once.
 *
 * Pure, no I/O; one thread at a time per structure. */
#ifndef MOONCAKE_VIEW_LIST_H
#define MOONCAKE_VIEW_LIST_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "codec.h"
#include "keymap.h"
#include "view_task.h"

#define MC_VIEW_LIST_DEFAULT 100
#define MC_VIEW_LIST_MAX 1000
#define MC_VIEW_N_STATES (MC_VIEW_UNKNOWN + 1)

/* What GET /api/tasks (and /api/stats, which reads app_id only) asks. The
 * strings are borrowed: the caller keeps them while the filter is used. */
typedef struct mc_view_filter {
    const char *app_id;
    uint32_t states;          /* bit (1u << mc_view_state) per state; 0: every state */
    int64_t due_from, due_to; /* dueAt in [from, to); INT64_MIN / INT64_MAX when open */
    bool has_after;           /* only tasks after (after_due, after_uuid) */
    int64_t after_due;
    const char *after_uuid;
    uint32_t limit; /* 1..MC_VIEW_LIST_MAX */
} mc_view_filter;

/* An open filter for app_id: every state and due time, the default limit. */
mc_view_filter mc_view_filter_all(const char *app_id);

/* The state named (as the API spells it), or -1. */
int mc_view_state_parse(const char *name);

/* The cursor of the page after a task due at due_at with this uuid:
 * "<dueAt>:<uuid>". Caller frees it; NULL on ENOMEM. */
char *mc_view_cursor_format(int64_t due_at, const char *uuid, size_t uuid_len);
/* Reads a cursor into f (after_uuid points into text). false when text is
 * not one. */
bool mc_view_cursor_parse(const char *text, mc_view_filter *f);

/* ---- an app's tasks in order ------------------------------------------------------ */

/* The tasks of one app (in one partition) ordered by (due time, key): a
 * treap threaded through the tasks themselves (mc_view_task's lower,
 * higher), its heap order from the keys' hashes, so a list reads from its
 * first task on instead of looking at every task held. */
typedef struct mc_view_index {
    mc_view_task *root;
    size_t n;
} mc_view_index;

/* Adds t (not in an index) under its current due time. */
void mc_view_index_insert(mc_view_index *ix, mc_view_task *t);
/* Takes t (in ix) out. */
void mc_view_index_remove(mc_view_index *ix, mc_view_task *t);
/* Calls fn on ix's tasks in order, from the first due at or after from_due
 * (with after_uuid, the first after (from_due, after_uuid)), until fn
 * returns false. 0, or -1 on ENOMEM (the walk's stack). */
int mc_view_index_walk(const mc_view_index *ix, int64_t from_due, const char *after_uuid,
                       bool (*fn)(mc_view_task *t, void *arg), void *arg);

/* ---- one instance's selection ---------------------------------------------------- */

typedef struct mc_view_pick {
    const mc_view_task *task; /* borrowed from the view's table */
    int64_t wheel_position;   /* of its partition */
} mc_view_pick;

typedef struct mc_view_selection {
    const mc_view_filter *filter;
    size_t app_len;
    int64_t now_ms;
    mc_view_pick *heap; /* the limit + 1 first by (dueAt, key): a max-heap */
    size_t n;
    bool failed;                       /* out of memory */
    bool counting;                     /* counts only, keeps nothing */
    uint64_t counts[MC_VIEW_N_STATES]; /* counting: every task of the app, per state */
} mc_view_selection;

/* Starts a selection under filter f (borrowed) at now_ms: one that keeps
 * the first tasks in order, or (counting) one that counts the app's tasks
 * per state. */
void mc_view_selection_init(mc_view_selection *s, const mc_view_filter *f, int64_t now_ms,
                            bool counting);
void mc_view_selection_free(mc_view_selection *s);
/* Offers task t (borrowed until the selection is turned into JSON) of a
 * partition whose wheel has got to wheel_position: when it is the filter's
 * app, counted (counting) or kept if it matches the rest of the filter and
 * is among the first. */
void mc_view_selection_offer(mc_view_selection *s, const mc_view_task *t, int64_t wheel_position);
/* Whether t, after what the selection has, can no longer get into it (a
 * walk in order stops there). */
bool mc_view_selection_full_before(const mc_view_selection *s, const mc_view_task *t);
/* Offers the tasks of an index (one app's, of a partition whose wheel has
 * got to wheel_position) from the filter's first due time or cursor on, and
 * stops when no more can get in. 0, or -1 on ENOMEM. */
int mc_view_selection_offer_index(mc_view_selection *s, const mc_view_index *ix,
                                  int64_t wheel_position);
/* {"tasks": [up to limit summaries, in order], "more": bool}. Caller owns it. */
json_t *mc_view_selection_list_json(mc_view_selection *s);
/* {"accepted": n, ...} for every state with a task, and "total". Caller owns it. */
json_t *mc_view_selection_counts_json(const mc_view_selection *s);

/* ---- merging the instances' answers (the gateway) ---------------------------------- */

/* One page from the instances' list answers (each {"tasks": [...], "more"}):
 * {"tasks": [the first limit by (dueAt, uuid)], "next": cursor or null}.
 * Caller owns it; NULL on ENOMEM. */
json_t *mc_view_list_merge(json_t *const *answers, size_t n, uint32_t limit);
/* The sum of the instances' stats answers (objects of objects of counts,
 * and their "minutes", summed minute by minute), with appId; each minute's
 * lateness buckets become its lateP50Ms and lateP99Ms. Caller owns it; NULL
 * on ENOMEM. */
json_t *mc_view_stats_merge(json_t *const *answers, size_t n, const char *app_id);

/* ---- an app's submits, calls, failures, dead letters and lateness per minute ------ */

#define MC_VIEW_STATS_MINUTES 60
/* Lateness (a call's start after its due time) is counted in buckets with
 * the bounds 1, 2, 5, 10, 20, 50 ms ... 100 s, 300 s, and one beyond. */
#define MC_VIEW_LATE_BUCKETS 18
/* The changelog key of an app's counters is this prefix and the app id: no
 * task key starts with '/'. */
#define MC_VIEW_STATS_PREFIX "/stats/"

/* Room for the counters' key of any app the view counts. */
#define MC_VIEW_STATS_KEY_MAX (sizeof MC_VIEW_STATS_PREFIX + 1024)
/* Writes MC_VIEW_STATS_PREFIX and the app_len bytes of app to buf (room for
 * MC_VIEW_STATS_KEY_MAX): the counters' key. Its length, or 0 for an app id
 * longer than the view counts. Any thread. */
size_t mc_view_stats_key(const char *app, size_t app_len, char buf[MC_VIEW_STATS_KEY_MAX]);

typedef struct mc_view_minute {
    int32_t minute; /* since the epoch; 0: unused */
    uint32_t calls, failures, dead, submitted;
    uint32_t late[MC_VIEW_LATE_BUCKETS]; /* calls by lateness */
} mc_view_minute;

/* What one record adds to its minute. */
typedef struct mc_view_count {
    uint32_t submitted, calls, failures, dead;
    int64_t late_ms; /* a call's lateness; -1: none */
} mc_view_count;

typedef struct mc_view_app_stats {
    mc_keynode node;
    struct mc_view_app_stats *next_dirty;
    bool dirty;
    mc_view_minute minutes[MC_VIEW_STATS_MINUTES]; /* by minute % 60 */
    char key[];                                    /* MC_VIEW_STATS_PREFIX app; node.key_len */
} mc_view_app_stats;

#define MC_VIEW_APP_STATS_KEY_OFFSET                                                               \
    (offsetof(mc_view_app_stats, key) - offsetof(mc_view_app_stats, node))

/* New, empty counters under changelog key `key` (MC_VIEW_STATS_PREFIX app).
 * Caller owns them (free()); NULL on ENOMEM. */
mc_view_app_stats *mc_view_app_stats_new(const void *key, size_t key_len);
/* Adds c to the minute of at_ms (a minute older than the window is
 * dropped). */
void mc_view_app_stats_add(mc_view_app_stats *s, int64_t at_ms, const mc_view_count *c);
/* Sums the minutes of the last hour before now_ms into out[0..2] (calls,
 * failures, dead). Returns whether any minute of the hour is left. */
bool mc_view_app_stats_sum(const mc_view_app_stats *s, int64_t now_ms, uint64_t out[3]);
/* Adds the minutes of the last hour before now_ms of s into sum, by
 * minute: sum has MC_VIEW_STATS_MINUTES entries, sum[i] the minute
 * MC_VIEW_STATS_MINUTES - 1 - i before now's (the caller zeroes it first). */
void mc_view_app_stats_add_to(const mc_view_app_stats *s, int64_t now_ms, mc_view_minute *sum);
/* The last hour's minutes, oldest first, as an instance answers them:
 * [{"minute": epoch ms, "submitted", "calls", "failures", "dead", "late":
 * [the buckets]}]; sum as mc_view_app_stats_add_to fills it, for the hour
 * before now_ms. Caller owns it; NULL on ENOMEM. */
json_t *mc_view_minutes_json(const mc_view_minute *sum, int64_t now_ms);
/* The q-quantile (0 < q < 1) of the lateness counted in buckets, in ms,
 * interpolated within its bucket; -1 when nothing was counted. */
int64_t mc_view_late_quantile(const uint32_t *buckets, double q);
/* The changelog value: "MS2" and the minutes in use (a bitmap of the
 * lateness buckets used, and those). "MS1" (no submits, no lateness) is
 * still read. 0, or -1 on ENOMEM. */
int mc_view_app_stats_encode(const mc_view_app_stats *s, mc_buf *out);
/* Counters for key from a changelog value; NULL when the bytes are not one
 * (*why says what is wrong) or on ENOMEM. Caller owns them. */
mc_view_app_stats *mc_view_app_stats_decode(const void *key, size_t key_len, const void *value,
                                            size_t len, const char **why);

#endif
