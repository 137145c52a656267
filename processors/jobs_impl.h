/* The jobs role's insides, shared by jobs.c (the role: commands, timers, assignment and restore),
 * jobs_occurrences.c (writing a job's occurrences: the changelog state, Submits and Cancels,
 * misfires and the schedule's steps), jobs_chains.c (serial chains) and jobs_broadcasts.c
 * (sharding broadcasts). All on the role's thread. */
#ifndef MOONCAKE_JOBS_IMPL_H
#define MOONCAKE_JOBS_IMPL_H

#include "jobs.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "job_schedule.h"
#include "kafka.h"
#include "keymap.h"
#include "part_table.h"
#include "timing_wheel.h"
#include "writer_schemas.h"
#include "kafka_targets.h"

/* Occurrences written per punctuate call, so a hundred thousand jobs due in
 * the same second leave room for input and commits. */
#define FIRE_BATCH 5000
/* Tracked occurrences per job: the policies keep at most one running (a
 * cover or a queue replaces, never adds), so this only absorbs the odd
 * race. */
#define MAX_RUNNING 4
/* Scheduled instants looked at when counting missed ones (an every-second
 * cron down for a week is 604,800): beyond this the count restarts a day
 * before the threshold. */
#define MISS_SCAN_LIMIT 100000
#define DAY_MS INT64_C(86400000)
/* How far before now a command's request time can reach back to cancel. */
#define CANCEL_LOOKBACK_MS 60000
#define MAX_STALE_MS (7 * DAY_MS)

static const char HEADER_JOB_ID[] = "mooncake-job-id";
static const char HEADER_SCHEDULED_AT[] = "mooncake-scheduled-at";

typedef struct job_entry {
    mc_keynode node;
    mc_timer timer;
    int64_t version;
    mc_job_status status;
    int64_t next_at, runs, last_scheduled_at, queued_at, skipped;
    mc_running_occurrence running[MAX_RUNNING];
    uint8_t n_running;
    /* from the definition */
    mc_job_schedule sched;
    mc_overlap_policy overlap;
    mc_misfire_policy misfire;
    int32_t catch_up_limit;
    int64_t misfire_threshold_ms, max_runs, stale_ms;
    uint8_t *job_raw; /* the Job's Avro binary: after the key, in this allocation */
    uint32_t job_len;
    char key[]; /* node.key_len bytes, then job_len bytes */
} job_entry;

#define ENTRY_KEY_OFFSET (offsetof(job_entry, key) - offsetof(job_entry, node))

/* One link a serial chain holds (jobs_chains.c). */
typedef struct chain_link {
    int64_t link;         /* its AddLink's job-commands offset: identity and tie-break */
    int64_t due_at;       /* as added */
    int64_t released_at;  /* -1 while it waits its turn */
    int64_t cancelled_at; /* -1, or when a CancelLink reached it after its release */
    int64_t stale_at;     /* released: when the chain stops waiting for its final Result */
    uint8_t *value;       /* its ChainLink record, as the changelog has it */
    size_t value_len;
    char *task_id; /* its task's, NUL-terminated (an AddLink or CancelLink names it) */
} chain_link;

/* A serial chain: the links of one app and ordering key, keyed app_id/ordering_key. */
typedef struct chain_entry {
    mc_keynode node;
    mc_timer timer;
    chain_link *links; /* in the order added; at most one released at a time */
    uint32_t n, cap;
    char key[]; /* node.key_len bytes */
} chain_entry;

#define CHAIN_KEY_OFFSET (offsetof(chain_entry, key) - offsetof(chain_entry, node))

/* An open sharding broadcast (jobs_broadcasts.c), keyed app_id/task_id: the task's. */
typedef struct broadcast_entry {
    mc_keynode node;
    mc_timer timer;
    int64_t version;  /* the task's (its tasks offset) */
    int64_t stale_at; /* when it stops waiting for its shards' final Results */
    uint8_t *value;   /* its StartBroadcast JobCommand, the shards ended filled in */
    size_t value_len;
    char key[]; /* node.key_len bytes */
} broadcast_entry;

#define BROADCAST_KEY_OFFSET (offsetof(broadcast_entry, key) - offsetof(broadcast_entry, node))

typedef struct job_part {
    int32_t partition;
    mc_keymap *jobs;
    mc_timing_wheel *timers;
    mc_keymap *chains;
    mc_timing_wheel *chain_timers;
    mc_keymap *broadcasts;
    mc_timing_wheel *broadcast_timers;
} job_part;

typedef struct jobs {
    const mc_logger *logger;
    const mc_config *cfg;
    mc_output *tasks, *commands, *changelog, *chain_log, *broadcast_log, *results;
    char commands_topic[256], results_topic[256], changelog_topic[256], chains_topic[256],
        broadcasts_topic[256];
    int64_t ahead_ms;
    int32_t task_partitions, command_partitions, result_partitions;
    mc_part_table parts;
    mc_zone_cache *zones;
    mc_codec_writer *writers; /* other versions of JobCommand */
    size_t n_writers;
    mc_codec_options codec;
    mc_kafka_targets *targets; /* --target-topics: a job naming another is refused */
    mc_arena *arena;
    mc_arena *link_arena; /* a chain link's or a broadcast's state, decoded while a command's
                           * is in use */
    mc_buf buf;
    mc_gauge *jobs_gauge, *restore_seconds;
    mc_counter *submitted, *cancelled, *skipped, *misfired, *relayed, *restored, *expired, *refused;
    mc_gauge *links_gauge;
    mc_counter *links_added, *links_released, *links_cancelled, *links_done, *links_stale,
        *links_relayed;
    mc_gauge *broadcasts_gauge;
    mc_counter *broadcasts_started, *broadcasts_succeeded, *broadcasts_failed,
        *broadcasts_cancelled, *broadcasts_stale, *broadcasts_replaced, *shards_relayed;
} jobs;

/* Sets e's timer for its next action (none when it has nothing to do) and
 * asks for the wake-up. 0, or -1 on ENOMEM. */
int jobs_arm(jobs *s, job_part *p, job_entry *e, int64_t now, mc_ctx *ctx);

/* jobs_step(), then the state and the next timer. */
int jobs_attend(jobs *s, job_part *p, job_entry *e, int64_t now, size_t *budget, bool dirty,
                mc_ctx *ctx);

/* Cancels every occurrence written for after `from` (the moment an update,
 * pause or delete was requested, at most now): those written ahead, and
 * those an outage let fall due before the command could be applied, which
 * the cancel may still stop. Only the ones not due yet (after now) are given
 * back to the schedule (runs, *first: the earliest of them, or -1): a due
 * one has most likely run, and running it again after a resume would call
 * it twice. Returns 0, or -1. */
int jobs_cancel_after(jobs *s, job_entry *e, int64_t from, int64_t now, mc_ctx *ctx,
                      int64_t *first);

/* FIXED_DELAY: the next occurrence is due interval_ms after `from` (the
 * previous one finished, or was given up on, or skipped), unless that is
 * past end_at: then there is none, and jobs_step() ends the job. */
void jobs_delay_from(job_entry *e, int64_t from);

/* Whether the job has run its maxRuns. */
bool jobs_ended(const job_entry *e);

/* next_at is more than the threshold late: the misfire policy picks which
 * of the missed occurrences (none after `until`) run now, and the schedule
 * moves on to the first one that is not missed. */
int jobs_misfire(jobs *s, job_entry *e, int64_t now, int64_t until, mc_ctx *ctx);

/* The occurrence scheduled at `at`, whose task is due at `due`, runs. */
void jobs_running_add(job_entry *e, int64_t at, int64_t due);

/* The occurrence scheduled at `at` finished: false when it was not running. */
bool jobs_running_remove(job_entry *e, int64_t at);

/* Does whatever the job needs at `now`: write the occurrences that are due
 * or within ahead_ms (and not after `until`), decide overlaps, apply the
 * misfire policy, end it. *dirty tells whether its state changed (the
 * caller writes it). */
int jobs_step(jobs *s, job_entry *e, int64_t now, int64_t until, size_t *budget, bool *dirty,
              mc_ctx *ctx);

/* Writes the Submit of the occurrence scheduled at `at`, due at `due`.
 * Returns 0; -1 on failure; or 1 when Kafka refuses it for good (larger
 * than a record may be): then nothing was written, and the job is paused
 * with a line saying why - a job whose every occurrence would be refused
 * must not take its partition down with it. */
int jobs_submit(jobs *s, job_entry *e, int64_t at, int64_t due, int64_t now, mc_ctx *ctx);

/* Whether the overlap policy needs the running occurrences tracked (not
 * PARALLEL). */
bool jobs_tracked(const job_entry *e);

/* Writes a Submit or Cancel to its key's partition of `tasks` (in the open
 * transaction): what mc_ctx_forward returns (MC_FORWARD_REFUSED when Kafka
 * refuses it for good), or -1. s->buf holds its bytes after. */
int jobs_write_command(jobs *s, const mc_command *c, mc_ctx *ctx);

/* Writes e's state to the changelog (in the open transaction). 0, or -1. */
int jobs_write_state(jobs *s, job_part *p, job_entry *e, int64_t now, mc_ctx *ctx);

/* Writes e's tombstone to the changelog: the job is gone. 0, or -1. */
int jobs_write_tombstone(jobs *s, job_part *p, job_entry *e, mc_ctx *ctx);

/* How long the role waits for the final Result of a call made with this
 * retry policy and timeout (0: the executor's): every attempt's timeout, a
 * second each for connecting, every backoff at its ceiling, and a minute for
 * the Kafka hops. */
int64_t jobs_stale_bound(bool has_retry, const mc_retry_policy *retry, int64_t timeout_ms,
                         const mc_config *cfg);

/* ---- relays of final Results (jobs.c) ---- */

/* Decodes the Result in r into *res (in s->arena): true for a final one (not a failure
 * that will be retried); false for any other, or one this role cannot read (the results
 * topic is the executor's log, not ours to judge). */
bool jobs_final_result(jobs *s, const mc_record *r, mc_result *res);
/* The outcome a relay of a final Result carries: JobCommand's outcomes end at CANCELLED,
 * and a dropped call did not run either. */
mc_outcome jobs_relayed_outcome(mc_outcome o);
/* Writes c to job-commands at the home partition of the key app/name, in the open
 * transaction: 1 when sent, 0 when the key would be too long (nothing to relay to), -1 on
 * failure. */
int jobs_relay_command(jobs *s, const char *app, const char *name, const mc_job_command *c,
                       mc_ctx *ctx);

/* ---- serial chains (jobs_chains.c) ---- */

/* Metrics of the chains; called once by jobs_create. */
void jobs_chains_metrics(jobs *s, mc_metrics *m);
/* AddLink, CancelLink and LinkDone, read from job-commands: the chain's
 * links change, and what may run next is released. 0, or -1. */
int jobs_chain_command(jobs *s, job_part *p, const mc_record *r, const mc_job_command *c,
                       mc_ctx *ctx);
/* A Result of a task a chain released (it carries the chain's headers):
 * a final one goes to its chain as a LinkDone. 0, or -1. */
int jobs_chain_relay(jobs *s, const mc_record *r, mc_ctx *ctx);
/* Releases or expires what is due in the chains whose timers fired; budget
 * as jobs_attend's. 0, or -1. */
int jobs_chains_punctuate(jobs *s, job_part *p, int64_t now, size_t *budget, mc_ctx *ctx);
/* One record of the chains changelog, replayed on assignment. */
void jobs_chain_restore_record(jobs *s, job_part *p, const mc_record *m);
/* After a restore: every chain's timer set. 0, or -1 on ENOMEM. */
int jobs_chains_arm(jobs *s, job_part *p, int64_t now, mc_ctx *ctx);
/* Frees p's chains (on revoke). */
void jobs_chains_free(job_part *p);
/* Links held in p. */
size_t jobs_chains_links(const job_part *p);

/* ---- sharding broadcasts (jobs_broadcasts.c) ---- */

/* Metrics of the broadcasts; called once by jobs_create. */
void jobs_broadcasts_metrics(jobs *s, mc_metrics *m);
/* StartBroadcast and ShardDone, read from job-commands: a broadcast opens, records
 * its shards' ends, and writes its task's Result once every shard ended. 0, or -1. */
int jobs_broadcast_command(jobs *s, job_part *p, const mc_record *r, const mc_job_command *c,
                           mc_ctx *ctx);
/* A Result of a shard (it carries the broadcast's headers): a final one goes to its
 * broadcast as a ShardDone. 0, or -1. */
int jobs_broadcast_relay(jobs *s, const mc_record *r, mc_ctx *ctx);
/* Ends the broadcasts whose timers fired (their stale bound passed); budget as
 * jobs_attend's. 0, or -1. */
int jobs_broadcasts_punctuate(jobs *s, job_part *p, int64_t now, size_t *budget, mc_ctx *ctx);
/* One record of the broadcasts changelog, replayed on assignment: false when it could not
 * be kept (out of memory), and the restore must fail. */
bool jobs_broadcast_restore_record(jobs *s, job_part *p, const mc_record *m);
/* After a restore: every broadcast's timer set, at its bound and no earlier than a
 * minute after now (its shards' ends may be in the backlog). 0, or -1 on ENOMEM. */
int jobs_broadcasts_arm(jobs *s, job_part *p, int64_t now, mc_ctx *ctx);
/* Frees p's broadcasts (on revoke). */
void jobs_broadcasts_free(job_part *p);

#endif
