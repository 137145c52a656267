/* The whole pipeline on tests/sim: router, store, wheel, executor (with the
 * fake caller) and retry, one instance each, on one simulated cluster -
 * what the pipeline tests start, crash parts of, rebalance and stop. */
#ifndef MOONCAKE_SIM_PIPELINE_H
#define MOONCAKE_SIM_PIPELINE_H

#include "config.h"
#include "executor.h"
#include "fake_caller.h"
#include "sim.h"

enum { SIM_ROUTER, SIM_STORE, SIM_WHEEL, SIM_EXECUTOR, SIM_RETRY, SIM_ROLES };

typedef struct sim_pipeline {
    sim_kafka *k;
    mc_config *cfg;
    fake_env env; /* every call any executor made */
    mc_executor_caller caller;
    mc_processor executor; /* mc_executor_processor with the fake caller */
    sim_inst *in[SIM_ROLES];
} sim_pipeline;

/* Starts a cluster of partitions partitions at t0 (the topic prefix and
 * flags as kit_config makes them) and every role on it, each assigned all
 * partitions. Returns 0, or -1 when an instance could not start. */
int sim_pipeline_start(sim_pipeline *pl, int32_t partitions, int64_t t0, const char *const *flags);
/* Crashes every instance and frees the cluster. */
void sim_pipeline_stop(sim_pipeline *pl);
/* The processor of a role, as the pipeline runs it. */
const mc_processor *sim_pipeline_processor(const sim_pipeline *pl, int role);
/* Role's instance dies (its open transaction is aborted, as its timeout
 * would) and a new one called instance takes all partitions. 0 or -1. */
int sim_pipeline_restart(sim_pipeline *pl, int role, const char *instance);
/* A rebalance of every group: all revoked, then all assigned. 0 or -1. */
int sim_pipeline_rebalance(sim_pipeline *pl);
/* Every role takes its turns, rounds times over, at the current time. */
int sim_pipeline_settle(sim_pipeline *pl, int rounds);

#endif
