/* The gateway's view of the jobs table, for GET /jobs: the latest JobState
 * of every job, read from the compacted jobs topic (the jobs role's
 * changelog, read_committed) by a thread of its own. Kafka Streams' global
 * table behind an interactive query: rebuilt from the topic at every start,
 * then following it, so a change shows once the jobs role has committed it
 * (about its commit interval after the command). Memory is each job's key
 * and state bytes plus about 40 bytes.
 *
 * The table part (apply, list) takes records and answers queries without a
 * broker; the reader part (start) feeds it from Kafka. */
#ifndef MOONCAKE_JOBS_VIEW_H
#define MOONCAKE_JOBS_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "log.h"
#include "metrics.h"

typedef struct mc_jobs_view mc_jobs_view;

/* Makes an empty view; metrics (may be NULL) gets its gauges; zoneinfo_dir
 * (NULL: the system's) has the time zones of the schedules it shows. Caller
 * owns it (mc_jobs_view_free). NULL on ENOMEM. */
mc_jobs_view *mc_jobs_view_new(mc_metrics *metrics, const char *zoneinfo_dir);
/* Asks the reader to stop without waiting for it (a metadata request in flight
 * during an outage runs out beside the caller's shutdown); the view stays
 * readable. NULL is a no-op. Any thread. */
void mc_jobs_view_stop(mc_jobs_view *v);
/* Stops the reader (if started) and frees the view. */
void mc_jobs_view_free(mc_jobs_view *v);

/* Applies one record of the jobs topic: value NULL is a tombstone (the job
 * was deleted). The bytes are copied. Returns 0, or -1 on ENOMEM (the view
 * then keeps the job's previous state). Called by the reader thread (tests:
 * any one thread). */
int mc_jobs_view_apply(mc_jobs_view *v, const void *key, size_t key_len, const void *value,
                       size_t value_len);
/* Marks the view as having read the whole topic once: until then a list is
 * refused as loading, since it could miss jobs. Reader thread. */
void mc_jobs_view_set_loaded(mc_jobs_view *v);
/* Jobs held. Any thread. */
size_t mc_jobs_view_count(mc_jobs_view *v);

#define MC_JOBS_VIEW_DEFAULT_LIMIT 100
#define MC_JOBS_VIEW_MAX_LIMIT 1000

typedef struct mc_jobs_query {
    const char *app_id; /* required */
    const char *job_id; /* NULL: every job of the app */
    const char *status; /* NULL, or ACTIVE / PAUSED / ENDED */
    const char *after;  /* NULL, or a job id: list the app's jobs after it */
    int limit;          /* 1 .. MC_JOBS_VIEW_MAX_LIMIT */
} mc_jobs_query;

typedef enum mc_jobs_view_result {
    MC_JOBS_VIEW_OK,
    MC_JOBS_VIEW_LOADING,   /* the topic has not been read to its end yet */
    MC_JOBS_VIEW_NOT_FOUND, /* job_id given and no such job */
    MC_JOBS_VIEW_FAILED,    /* the reader stopped (out of memory; logged) */
    MC_JOBS_VIEW_NOMEM,
} mc_jobs_view_result;

/* Answers a query as the data of a GET /jobs answer, JSON text the caller
 * frees: {"jobs":[...], "next": job id to pass as after, or null} ordered by
 * job id (bytewise); with job_id, the one job's object. Each job is the
 * JobState (as mooncakectl jobs list --json prints it) plus "nextFireAt",
 * the earliest instant one of its calls is still to be due (an occurrence
 * written ahead, or next_at; null when none is known: paused, ended, or a
 * fixed delay waiting for a result). now is epoch ms. Any thread. */
mc_jobs_view_result mc_jobs_view_list(mc_jobs_view *v, const mc_jobs_query *q, int64_t now,
                                      char **data);

/* Starts the reader thread: a consumer of cfg's jobs topic from its start,
 * retrying while the topic or the broker is missing. cfg and lg must outlive
 * the view. Returns 0, or -1 with err set. Called once, by the gateway's
 * constructor. */
int mc_jobs_view_start(mc_jobs_view *v, const mc_config *cfg, const mc_logger *lg, char *err,
                       size_t errlen);

#endif
