/* The runner's Kafka client (processors/kclient.h) on the in-memory cluster
 * (sim.h): the real runner, processors/runner*.c, runs over it in the tests,
 * with the cluster's clock as its clock. The test moves the group (assign,
 * revoke, lose) and injects faults on cue: an operation that fails in a
 * given error class, an operation that takes time while something else
 * happens, a successor that fences the transactional id, a broker gone for a
 * while. Single-threaded: the test's thread. */
#ifndef MOONCAKE_SIM_KCLIENT_H
#define MOONCAKE_SIM_KCLIENT_H

#include "kclient.h"
#include "runner.h"
#include "sim.h"

typedef struct sim_kclient sim_kclient;

/* A factory for mc_runner_new_with_client: arg is a sim_kclient_slot, whose
 * `made` receives the client (owned by the runner). */
typedef struct sim_kclient_slot {
    sim_kafka *k;
    sim_kclient *made;
} sim_kclient_slot;
mc_kclient *sim_kclient_factory(const mc_kclient_spec *spec, void *arg, char *err, size_t errlen);

/* The transactional operations faults are injected into. */
typedef enum sim_kc_op {
    SIM_KC_INIT,
    SIM_KC_BEGIN,
    SIM_KC_SEND_OFFSETS,
    SIM_KC_COMMIT,
    SIM_KC_ABORT,
    SIM_KC_N_OPS
} sim_kc_op;

/* The next `times` calls of op fail with an error of class cls and code. */
void sim_kc_fail(sim_kclient *c, sim_kc_op op, mc_kerr_class cls, rd_kafka_resp_err_t code,
                 int times);
/* The next call of op takes ms of the cluster's clock; during runs in the
 * middle of it (the clock moved, the op not yet done), as another thread of
 * the process would. */
void sim_kc_delay(sim_kclient *c, sim_kc_op op, int64_t ms, void (*during)(void *arg), void *arg);
/* The broker is unreachable for ms from now: transactional operations fail
 * as retriable timeouts, each taking a second of the clock, and polls
 * deliver nothing, until the clock passes it. */
void sim_kc_broker_gone(sim_kclient *c, int64_t ms);
/* A successor started under the same transactional id: the open transaction
 * is aborted and every later transactional call fails fatally (fenced);
 * with consumer_too, the consumer is fenced as a static member as well. */
void sim_kc_fence(sim_kclient *c, bool consumer_too);
/* At the start of the next call of op, the group moves on without this
 * member (a new generation, its assignment lost); the revoke comes at the
 * next poll. */
void sim_kc_lose_during(sim_kclient *c, sim_kc_op op);

/* The group moves on without this member now (its session expired): a new
 * generation, the assignment lost, the revoke at the next poll. */
void sim_kc_lose(sim_kclient *c);

/* Queues an assignment of these partitions of every subscribed topic (in a
 * new generation of the group), served at the next poll. */
void sim_kc_assign(sim_kclient *c, const int32_t *partitions, size_t n);
/* Queues an orderly revoke of the whole assignment. */
void sim_kc_revoke(sim_kclient *c);

/* Calls fn with the name of every client operation as it starts ("begin",
 * "produce", "send_offsets", "commit", "abort", "rebalance", ...). */
void sim_kc_trace(sim_kclient *c, void (*fn)(void *arg, const char *op), void *arg);
/* Calls fn after each of the runner's sleeps (the clock moved by it): what
 * another thread of the process does meanwhile, such as calls ending while
 * a revoke waits for them. */
void sim_kc_on_sleep(sim_kclient *c, void (*fn)(void *arg), void *arg);
/* How many calls of op were made. */
int sim_kc_calls(const sim_kclient *c, sim_kc_op op);
bool sim_kc_assigned(const sim_kclient *c, const char *topic, int32_t partition);

#endif
