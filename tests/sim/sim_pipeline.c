/* The whole pipeline on tests/sim (see sim_pipeline.h). */
#include "sim_pipeline.h"

#include <string.h>

#include "retry.h"
#include "router.h"
#include "simkit.h"
#include "store.h"
#include "wheel.h"

const mc_processor *sim_pipeline_processor(const sim_pipeline *pl, int role)
{
    switch (role) {
    case SIM_ROUTER:
        return &mc_router_processor;
    case SIM_STORE:
        return &mc_store_processor;
    case SIM_WHEEL:
        return &mc_wheel_processor;
    case SIM_EXECUTOR:
        return &pl->executor;
    default:
        return &mc_retry_processor;
    }
}

int sim_pipeline_start(sim_pipeline *pl, int32_t partitions, int64_t t0, const char *const *flags)
{
    memset(pl, 0, sizeof *pl);
    pl->k = sim_kafka_new(partitions, t0);
    pl->cfg = kit_config("all", flags);
    pl->env.clock = pl->k;
    pl->caller = fake_caller_for(&pl->env);
    pl->executor = mc_executor_processor;
    pl->executor.create_arg = &pl->caller;
    int rc = 0;
    for (int i = 0; i < SIM_ROLES; i++) {
        pl->in[i] = sim_inst_new(pl->k, sim_pipeline_processor(pl, i), pl->cfg, "i1");
        if (!pl->in[i] || sim_assign_all(pl->in[i]) != 0)
            rc = -1;
    }
    return rc;
}

void sim_pipeline_stop(sim_pipeline *pl)
{
    for (int i = 0; i < SIM_ROLES; i++)
        if (pl->in[i])
            sim_crash(pl->in[i]);
    fake_env_free(&pl->env);
    sim_kafka_free(pl->k);
    kit_config_free(pl->cfg);
}

int sim_pipeline_restart(sim_pipeline *pl, int role, const char *instance)
{
    sim_crash(pl->in[role]);
    sim_expire_transactions(pl->k); /* the dead instance's, at its timeout */
    pl->in[role] = sim_inst_new(pl->k, sim_pipeline_processor(pl, role), pl->cfg, instance);
    return pl->in[role] && sim_assign_all(pl->in[role]) == 0 ? 0 : -1;
}

int sim_pipeline_rebalance(sim_pipeline *pl)
{
    int rc = 0;
    for (int i = 0; i < SIM_ROLES; i++)
        if (sim_revoke_all(pl->in[i]) != 0 || sim_assign_all(pl->in[i]) != 0)
            rc = -1;
    return rc;
}

int sim_pipeline_settle(sim_pipeline *pl, int rounds)
{
    for (int round = 0; round < rounds; round++)
        for (int i = 0; i < SIM_ROLES; i++)
            if (sim_settle(pl->in[i], 30) != 0)
                return -1;
    return 0;
}
