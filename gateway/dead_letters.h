/* The gateway's dead-letter routes: GET /api/dead-letters (an app's dead
 * letters, newest first, each with whether it was requeued) and POST
 * /api/dead-letters/requeue (named letters back to tasks, with requeue's
 * exactly-once engine, common/requeue.h). A request is checked on an HTTP
 * thread (mc_dead_job_*), then run on a thread of its own with the
 * connection suspended (mc_dead_api_run): reading dead and the ledger, and
 * a requeue's transaction, take seconds. The contract is
 * gateway/openapi.yaml. */
#ifndef MOONCAKE_GATEWAY_DEAD_LETTERS_H
#define MOONCAKE_GATEWAY_DEAD_LETTERS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "config.h"
#include "log.h"

typedef struct mc_dead_api mc_dead_api;
typedef struct mc_dead_job mc_dead_job;

/* The routes' state: bounds on runs at once, the requeue lock. cfg, lg and
 * stopping (true: the gateway is shutting down; a run stops early) are
 * borrowed and must outlive it. Caller owns it (mc_dead_api_free); NULL on
 * ENOMEM. */
mc_dead_api *mc_dead_api_new(const mc_config *cfg, const mc_logger *lg,
                             const atomic_bool *stopping);
void mc_dead_api_free(mc_dead_api *a);

/* GET /api/dead-letters's query (n parameters; strings copied) as a job.
 * 0 and *job (caller owns it), or 400 with why naming the parameter. An
 * HTTP thread. */
unsigned mc_dead_job_list(const mc_kv *args, size_t n, int64_t now_ms, mc_dead_job **job, char *why,
                          size_t whylen);
/* POST /api/dead-letters/requeue's body as a job. 0 and *job (caller owns
 * it), or 400 with why naming the field ("letters[3].offset: not an
 * integer"). An HTTP thread. */
unsigned mc_dead_job_requeue(const char *body, size_t len, mc_dead_job **job, char *why,
                             size_t whylen);
/* The appId the job acts on (the caller checks the token against it). */
const char *mc_dead_job_app(const mc_dead_job *j);
void mc_dead_job_free(mc_dead_job *j);

/* Runs the job: returns the HTTP status, and in *body (malloc'd, caller
 * frees) the answer's data as JSON on 200, else a sentence saying why (503:
 * too many at once, Kafka failed, a requeue that could not complete). Takes
 * seconds: a thread of its own, never an HTTP thread. */
int mc_dead_api_run(mc_dead_api *a, const mc_dead_job *job, char **body);

#endif
