/* The router's commits, record by record without a broker: a Submit due
 * within two commit intervals reaches the wheel (committed, so visible to
 * it) in the pass that routed it, not a commit interval later, and it
 * takes what else that pass routed with it; later tasks wait for the
 * interval's commit as before (the runner's, which the sim leaves to the
 * test), so a steady stream of them is still batched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kafka.h"
#include "router.h"
#include "simkit.h"

#define T0 INT64_C(1800000000000)
#define PARTITIONS 1

static const char *const flags[] = {"--commit-interval-ms=100", NULL};

static void submit(sim_kafka *k, const char *id, int64_t due)
{
    mc_task t = kit_task(id, due, "http://h.example/x");
    kit_tasks_submit(k, 0, &t);
}

static size_t in_wheel(sim_kafka *k)
{
    return kit_count_keyed(k, "wheel", 0);
}

int main(void)
{
    sim_kafka *k = sim_kafka_new(PARTITIONS, T0);
    mc_config *cfg = kit_config("router", flags);
    sim_inst *r = sim_inst_new(k, &mc_router_processor, cfg, "i1");
    CHECK(r && sim_assign_all(r) == 0);
    /* The partition layout is written and committed first. */
    CHECK(sim_settle(r, 10) == 0);
    CHECK(in_wheel(k) == 0);

    /* Due in 10 s: routed, but left for the commit interval. */
    submit(k, "later", T0 + 10000);
    CHECK(sim_turn(r, 100, false) == 0);
    CHECK(in_wheel(k) == 0, "a task due in 10 s was committed at once");
    /* Due now, in the next pass: committed at the end of that pass, with the
     * one before it (one transaction). */
    submit(k, "now", T0);
    submit(k, "soon", T0 + 150);
    CHECK(sim_turn(r, 100, false) == 0);
    CHECK(in_wheel(k) == 3, "%zu in wheel after the pass that routed a task due now", in_wheel(k));

    /* Due just past two intervals: waits for the interval's commit (which the
     * runner makes; here, the test). */
    submit(k, "after-two-intervals", T0 + 250);
    CHECK(sim_turn(r, 100, false) == 0);
    CHECK(in_wheel(k) == 3);
    CHECK(sim_commit(r) == 0);
    CHECK(in_wheel(k) == 4, "%zu in wheel after the interval's commit", in_wheel(k));

    CHECK(sim_stop(r) == 0);
    kit_config_free(cfg);
    sim_kafka_free(k);
    return check_exit("test_router_sim");
}
