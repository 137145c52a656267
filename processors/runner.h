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
#include "kclient.h"
#include "metrics.h"
#include "processor.h"

typedef struct mc_runner mc_runner;

/* Makes the Kafka client a runner runs on (kclient.h); NULL with err. */
typedef mc_kclient *(*mc_kclient_factory)(const mc_kclient_spec *spec, void *arg, char *err,
                                          size_t errlen);

/* Builds a runner: Kafka handles, metrics, readiness check on http (may be
 * NULL). cfg, metrics and http must outlive the runner. NULL with a reason in
 * err when the configuration is unusable (a bad -X property, say). Called
 * before the runner's thread starts. */
mc_runner *mc_runner_new(const mc_processor *p, const mc_config *cfg, mc_metrics *metrics,
                         mc_http_server *http, char *err, size_t errlen);
/* The same on a client made by factory (a simulated cluster, in the tests);
 * the runner owns the client. */
mc_runner *mc_runner_new_with_client(const mc_processor *p, const mc_config *cfg,
                                     mc_metrics *metrics, mc_http_server *http,
                                     mc_kclient_factory factory, void *factory_arg, char *err,
                                     size_t errlen);
/* Runs the loop on the calling thread until mc_runner_stop() or a fatal
 * error. Returns 0 after a clean stop (the open transaction committed, the
 * group left), 1 after a fatal error. It is mc_runner_start, mc_runner_turn
 * until false, mc_runner_finish: the steps a deterministic test takes one
 * at a time; around them, a watchdog thread exits the process with status 1
 * when a blocking Kafka call never returns (mc_runner_stuck). */
int mc_runner_run(mc_runner *r);
/* Initialises the transactions and subscribes: 0, 1 on a fatal error, -1
 * when a stop came first. */
int mc_runner_start(mc_runner *r);
/* One turn of the loop; false once it is over (a stop, or a fatal error). */
bool mc_runner_turn(mc_runner *r);
/* Commits or aborts what is open and leaves the group: 0, or 1 after a
 * fatal error. */
int mc_runner_finish(mc_runner *r);
/* Whether a fatal error stopped (or is stopping) the runner. Any thread. */
bool mc_runner_failed(const mc_runner *r);
/* Whether the loop thread has been inside one blocking Kafka call for well
 * past that call's timeout (the watchdog then exits the process); why names
 * the call. Any thread. */
bool mc_runner_stuck(mc_runner *r, char *why, size_t whylen);
/* Asks the loop to finish; safe from any thread. */
void mc_runner_stop(mc_runner *r);
/* Frees the runner after mc_runner_run() returned (or was never called). */
void mc_runner_free(mc_runner *r);

#endif
