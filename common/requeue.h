/* Requeue: dead letters back to <prefix>tasks, each at most once ever,
 * whoever asks (mooncakectl requeue, the gateway's POST
 * /api/dead-letters/requeue) and however often. One Kafka transaction holds,
 * for a batch of letters, their Submits to tasks, their entries in the
 * ledger <prefix>mooncakectl-requeued (key "partition/offset" of the
 * letter), and the offsets of the group <prefix>mooncakectl-requeue on dead,
 * committed only over letters dealt with for good; a run reads the committed
 * offsets and the ledger first and skips what they say is done. The fixed
 * transactional.id <prefix>mooncakectl-requeue fences any other run still
 * going (docs/mooncakectl.md, "requeue: how it is exactly-once").
 *
 * A run is one thread's: its clients are the caller's, borrowed. */
#ifndef MOONCAKE_REQUEUE_H
#define MOONCAKE_REQUEUE_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "dead_record.h"
#include "log.h"
#include "topic_scan.h"

#define MC_REQUEUED_HEADER "mooncake-requeued-from"
#define MC_REQUEUE_DEFAULT_BATCH 1000

/* The topics, group and transactional id of requeue, under cfg's prefix. */
typedef struct mc_requeue_names {
    char dead[300], tasks[300], ledger[300];
    char group[300]; /* also the transactional.id */
} mc_requeue_names;
void mc_requeue_names_init(const mc_config *cfg, mc_requeue_names *n);

/* Creates the ledger when missing: one partition, cleanup delete, the dead
 * topic's retention (a ledger entry is written after its letter, so it
 * outlives it). *created says whether it did. Returns 0, or -1 with a line
 * in err. The caller's thread, with any client rk. */
int mc_requeue_ensure_ledger(const mc_config *cfg, rd_kafka_t *rk, int timeout_ms, bool *created,
                             char *err, size_t errlen);

/* Offsets of the letters the ledger has, per partition of dead, sorted. */
typedef struct mc_requeue_ledger {
    struct mc_offset_set *by_part;
    int n_parts;
} mc_requeue_ledger;

/* Reads the whole ledger with consumer rk into l (dead_parts partitions of
 * dead; entries below floors[p] are not kept when floors is given). 0, a
 * hook's stop leaves it partial (check hooks), or -1 with a line in err.
 * Caller frees l (mc_requeue_ledger_free). */
int mc_requeue_ledger_read(rd_kafka_t *rk, const char *ledger, int dead_parts,
                           const int64_t *floors, const mc_scan_hooks *hooks, const mc_logger *lg,
                           mc_requeue_ledger *l, char *err, size_t errlen);
bool mc_requeue_ledger_has(const mc_requeue_ledger *l, int32_t partition, int64_t offset);
void mc_requeue_ledger_free(mc_requeue_ledger *l);

/* What became of one letter the filter matched (or named). */
typedef enum mc_requeue_action {
    MC_REQUEUE_REQUEUED, /* its Submit is committed (reported after the commit) */
    MC_REQUEUE_WOULD,    /* a dry run would requeue it */
    MC_REQUEUE_SKIPPED,  /* never requeueable: no task, or the router would refuse it */
    MC_REQUEUE_ALREADY,  /* the ledger has it: requeued before */
    MC_REQUEUE_FOREIGN,  /* named, but another app's: nothing of it written */
} mc_requeue_action;

typedef struct mc_requeue_letter {
    int32_t partition;
    int64_t offset;
    const char *key; /* its task's app/id, else its record key; NULL: none */
    mc_requeue_action action;
    const char *why; /* SKIPPED: why; else NULL */
} mc_requeue_letter;

/* A run's counts so far (a progress printer reads them). */
typedef struct mc_requeue_counts {
    uint64_t scanned, matched, already, skipped;
    uint64_t requeued; /* committed (or, on a dry run, would be) */
    uint64_t pending;  /* in the open transaction */
    int64_t total;     /* letters between the starts and ends of this pass */
} mc_requeue_counts;

/* How a run talks to its caller. Any function may be NULL. */
typedef struct mc_requeue_hooks {
    /* Each letter: SKIPPED, ALREADY, FOREIGN and WOULD when met, REQUEUED
     * once its transaction committed. l is valid during the call. */
    void (*letter)(void *arg, const mc_requeue_letter *l);
    /* A line worth telling (a transaction aborted and the pass restarts). */
    void (*note)(void *arg, const char *line);
    mc_scan_hooks scan; /* stop between letters (what is pending is committed); tick */
    void *arg;
} mc_requeue_hooks;

typedef struct mc_requeue_opts {
    rd_kafka_t *consumer; /* group names->group, read_committed, assign() only */
    rd_kafka_t *producer; /* transactional.id names->group; NULL: a dry run */
    const mc_requeue_names *names;
    int dead_parts, tasks_parts;
    bool have_ledger;   /* false only on a dry run before any requeue */
    int64_t max_due_ms; /* the router's rule a requeued task must pass */
    size_t batch;       /* letters per transaction (and one commit a second) */
    int timeout_ms;     /* for every blocking Kafka call */
    const mc_dead_filter *filter;
    const mc_logger *lg;
} mc_requeue_opts;

/* Runs one requeue: init_transactions (fencing any other run), then passes
 * over dead from the group's committed offsets to the ends seen at the
 * start (for named letters: only their stretch), restarting from what is
 * committed when a transaction aborts. counts are live. Returns 0 (also
 * when a stop hook ended it: what was pending is committed), or -1 with a
 * line in err: a fatal error, or a failure that left the open transaction
 * uncommitted (nothing of it happened). The caller's thread. */
int mc_requeue_run(const mc_requeue_opts *o, const mc_requeue_hooks *h, mc_requeue_counts *counts,
                   char *err, size_t errlen);

#endif
