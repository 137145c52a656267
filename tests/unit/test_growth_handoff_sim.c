/* Growing the partition count (layout.h): the wheel's "d=1" (nothing more
 * of a moved key will pass through this partition) must also wait for the
 * store's hand-offs. A store that is behind hands a moved key's task off
 * after the router wrote the marker but before the store reached it; the
 * hand-off lands on the old wheel partition after the marker, and that
 * wheel forwards it whenever it gets to it. If mooncakectl resumed routing
 * before, a cancel written at the new home could be applied there and
 * forgotten before the late hand-off arrived, which then fired the
 * cancelled task (it did, before d=1 also needed the store's position past
 * the marker).
 *
 * The old wheel partition (0) runs in a wheel instance of its own, which
 * stops for a while right after the growth's conditions hold (a restart
 * would do the same), while the store, behind, hands the task off before
 * it reaches its marker. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "executor.h"
#include "fake_caller.h"
#include "kafka.h"
#include "layout.h"
#include "retry.h"
#include "router.h"
#include "simkit.h"
#include "store.h"
#include "wheel.h"

#define T0 INT64_C(1800000000000)
#define N_OLD 2
#define N_NEW 5

static const char *const roles_flags[] = {"--horizon-ms=5000", "--wheel-lead-ms=200", NULL};

enum { ROUTER, STORE, WHEEL_A, WHEEL_B, EXECUTOR, RETRY, N_INST };

typedef struct cluster {
    sim_kafka *k;
    mc_config *cfg;
    fake_env env;
    mc_executor_caller caller;
    mc_processor executor;
    sim_inst *in[N_INST];
    bool run[N_INST];
    bool store_slow; /* one record per step */
} cluster;

/* wheel A: every partition but 0; wheel B: partition 0. */
static void assign(cluster *c, int i)
{
    if (i == WHEEL_A) {
        int32_t n = sim_partitions(c->k, kit_topic("wheel")), v[16], m = 0;
        for (int32_t q = 1; q < n; q++)
            v[m++] = q;
        CHECK(sim_assign(c->in[i], v, (size_t)m) == 0);
    } else if (i == WHEEL_B) {
        int32_t zero = 0;
        CHECK(sim_assign(c->in[i], &zero, 1) == 0);
    } else {
        CHECK(sim_assign_all(c->in[i]) == 0);
    }
}

static void start(cluster *c)
{
    memset(c, 0, sizeof *c);
    c->k = sim_kafka_new(N_OLD, T0);
    c->cfg = kit_config("all", roles_flags);
    c->env.clock = c->k;
    c->caller = fake_caller_for(&c->env);
    c->executor = mc_executor_processor;
    c->executor.create_arg = &c->caller;
    const mc_processor *procs[N_INST] = {&mc_router_processor, &mc_store_processor,
                                         &mc_wheel_processor,  &mc_wheel_processor,
                                         &c->executor,         &mc_retry_processor};
    const char *ids[N_INST] = {"i1", "i1", "a", "b", "i1", "i1"};
    for (int i = 0; i < N_INST; i++) {
        c->in[i] = sim_inst_new(c->k, procs[i], c->cfg, ids[i]);
        CHECK(c->in[i] != NULL);
        assign(c, i);
        c->run[i] = true;
    }
}

static void stop(cluster *c)
{
    for (int i = 0; i < N_INST; i++)
        sim_crash(c->in[i]);
    fake_env_free(&c->env);
    sim_kafka_free(c->k);
    kit_config_free(c->cfg);
}

static void rebalance(cluster *c, int i)
{
    CHECK(sim_revoke_all(c->in[i]) == 0);
    assign(c, i);
}

static void step(cluster *c)
{
    sim_advance(c->k, 50);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N_INST; i++) {
            if (!c->run[i])
                continue;
            if (i == STORE && c->store_slow) {
                if (round == 0)
                    CHECK(sim_turn(c->in[i], 1, true) == 0);
                continue;
            }
            CHECK(sim_settle(c->in[i], 30) == 0);
        }
        if (c->env.current)
            fake_caller_run(c->env.current, sim_now(c->k), NULL, NULL);
    }
}

static void run_until(cluster *c, int64_t until)
{
    while (sim_now(c->k) < until)
        step(c);
}

/* mooncakectl's condition for resuming routing (wait_for_moves). */
static bool moves_done(cluster *c)
{
    for (int32_t q = 0; q < N_OLD; q++)
        if (!kit_committed_says(c->k, "store", q, "l=5") ||
            !kit_committed_says(c->k, "wheel", q, "l=5") ||
            !kit_committed_says(c->k, "wheel", q, "d=1"))
            return false;
    return true;
}

int main(void)
{
    cluster c;
    start(&c);
    /* A key whose home moves away from partition 0. */
    char id[16], key[64];
    size_t kl = 0;
    for (int i = 0;; i++) {
        snprintf(id, sizeof id, "e%d", i);
        kl = kit_key(id, key, sizeof key);
        if (mc_key_partition(key, kl, N_OLD) == 0 && mc_key_partition(key, kl, N_NEW) != 0)
            break;
    }
    int32_t home = mc_key_partition(key, kl, N_NEW);
    /* Far: the store holds it, and hands it off at T0 + 7 s. */
    mc_task t = kit_task(id, T0 + 12000, "http://e/x");
    kit_tasks_submit(c.k, 0, &t);
    run_until(&c, T0 + 3000);
    static const char *internal[] = {"store", "wheel", "ready", "retry", "results", "dead"};
    for (size_t i = 0; i < sizeof internal / sizeof internal[0]; i++)
        sim_set_partitions(c.k, kit_topic(internal[i]), N_NEW);
    for (int i = 0; i < N_INST; i++)
        rebalance(&c, i);
    kit_set_layout(c.k, &(mc_layout){.partitions = N_OLD, .growing_to = N_NEW});
    run_until(&c, T0 + 4800);
    /* A burst of other tasks on partition 0 just before the routers stop,
     * and the store falls behind (one record per 50 ms): it is still
     * working through them, writing its position markers, when the task
     * is due to be handed off at T0 + 7 s. */
    for (int i = 0; i < 160; i++) {
        char other[16], ok[64];
        snprintf(other, sizeof other, "o%d", i);
        size_t okl = kit_key(other, ok, sizeof ok);
        if (mc_key_partition(ok, okl, N_OLD) != 0)
            continue;
        mc_task ot = kit_task(other, T0 + 60000, "http://e/o");
        kit_tasks_submit(c.k, 0, &ot);
    }
    c.store_slow = true;
    run_until(&c, T0 + 6900);
    /* On the code under review wheel 0 has said d=1 by now (without the
     * store having passed its marker). */
    CHECK(!kit_committed_says(c.k, "store", 0, "l=5"), "setup: the store is not behind");
    c.run[WHEEL_B] = false; /* wheel 0 stops for a while (a restart, say) */
    bool switched = false;
    int64_t cancel_at = INT64_MAX, cancelled_at = INT64_MAX;
    while (sim_now(c.k) < T0 + 18000) {
        if (sim_now(c.k) >= T0 + 13500)
            c.run[WHEEL_B] = true; /* back */
        if (!switched && moves_done(&c)) {
            /* mooncakectl: tasks grows (it grew right after 'growing'; here
             * the router takes it now), then the grown layout. */
            c.store_slow = false;
            sim_set_partitions(c.k, kit_topic("tasks"), N_NEW);
            mc_layout grown = {.partitions = N_NEW, .previous = N_OLD, .n_split = N_OLD};
            grown.split = kit_split(c.k, N_OLD);
            rebalance(&c, ROUTER);
            kit_set_layout(c.k, &grown);
            mc_layout_free(&grown);
            switched = true;
            cancel_at = sim_now(c.k) + 600;
        }
        if (sim_now(c.k) >= cancel_at) {
            kit_tasks_cancel(c.k, home, id, sim_now(c.k)); /* a client that noticed */
            cancelled_at = cancel_at;
            cancel_at = INT64_MAX;
        }
        step(&c);
    }
    CHECK(switched, "routing never resumed");
    size_t calls = 0;
    for (size_t i = 0; i < c.env.n_calls; i++)
        calls += strcmp(c.env.calls[i].key, key) == 0 && c.env.calls[i].at >= cancelled_at;
    CHECK(calls == 0, "a task cancelled after the growth was called after the cancel: the store's "
                      "hand-off from before its "
                      "marker reached the new home after the cancel's floor was forgotten there");
    stop(&c);
    return check_exit("test_growth_handoff_sim");
}
