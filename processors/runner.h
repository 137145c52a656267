/* The exactly-once Kafka runtime for processors (processor.h): one consumer
 * (read_committed) and one transactional producer per instance, the
 * begin -> poll -> process -> commit loop, input offsets committed inside
 * the transaction, rebalances, and the classification of every Kafka error
 * into retriable (retry), abortable (abort, rewind, rebuild state) and fatal
 * (clean non-zero exit, so the orchestrator restarts us). */
#ifndef MOONCAKE_RUNNER_H
#define MOONCAKE_RUNNER_H

#include "config.h"
#include "http_server.h"
#include "metrics.h"
#include "processor.h"

typedef struct mc_runner mc_runner;

/* Builds a runner: Kafka handles, metrics, readiness check on http (may be
 * NULL). cfg, metrics and http must outlive the runner. NULL with a reason in
 * err when the configuration is unusable (a bad -X property, say). Called
 * before the runner's thread starts. */
mc_runner *mc_runner_new(const mc_processor *p, const mc_config *cfg, mc_metrics *metrics,
                         mc_http_server *http, char *err, size_t errlen);
/* Runs the loop on the calling thread until mc_runner_stop() or a fatal
 * error. Returns 0 after a clean stop (the open transaction committed, the
 * group left), 1 after a fatal error. */
int mc_runner_run(mc_runner *r);
/* Asks the loop to finish; safe from any thread. */
void mc_runner_stop(mc_runner *r);
/* Frees the runner after mc_runner_run() returned (or was never called). */
void mc_runner_free(mc_runner *r);

#endif
