/* The executor under the real runner (processors/runner*.c) on the simulated
 * Kafka client, through an orderly revoke - a rolling update or a scale step
 * moving its partitions: the calls in flight end and their Results commit
 * before the partitions go, the calls held for later are handed over
 * uncalled, and only a call that outlives --drain-timeout-ms is cut, counted
 * on /metrics and made again by the next owner. What is checked is what an
 * endpoint and a reader of `results` would see. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "executor.h"
#include "fake_caller.h"
#include "runner.h"
#include "sim_kclient.h"
#include "simkit.h"

#define T0 INT64_C(1800000000000)
#define N_TASKS 3

/* One executor instance: its runner on the simulated client, with the
 * caller the test ends calls through. */
typedef struct inst {
    mc_config *cfg;
    mc_metrics *metrics;
    mc_executor_caller caller;
    mc_processor proc;
    mc_runner *r;
    sim_kclient *kc;
} inst;

/* The endpoint: while `answering` is 0, every started call stays in flight;
 * from the clock's `answer_at` on, the calls end 200 (as the HTTP thread
 * would, while the runner waits in its revoke). */
typedef struct endpoint {
    sim_kafka *k;
    fake_env env;
    int64_t answer_at;
} endpoint;

static long in_flight(mc_call *j, void *arg)
{
    (void)j;
    (void)arg;
    return -1;
}

static void answer_if_due(void *arg)
{
    endpoint *e = arg;
    if (e->env.current && sim_now(e->k) >= e->answer_at)
        fake_caller_run(e->env.current, sim_now(e->k), NULL, NULL);
}

static void inst_start(inst *in, endpoint *e, const char *id, const char *drain_flag)
{
    memset(in, 0, sizeof *in);
    char flag[64];
    snprintf(flag, sizeof flag, "--instance-id=%s", id);
    const char *flags[] = {flag, "--commit-interval-ms=100", drain_flag, NULL};
    in->cfg = kit_config("executor", flags);
    in->metrics = mc_metrics_new();
    in->caller = fake_caller_for(&e->env);
    in->proc = mc_executor_processor;
    in->proc.create_arg = &in->caller;
    sim_kclient_slot slot = {.k = e->k};
    char err[256];
    in->r = mc_runner_new_with_client(&in->proc, in->cfg, in->metrics, NULL, sim_kclient_factory,
                                      &slot, err, sizeof err);
    CHECK(in->r != NULL, "%s", err);
    in->kc = slot.made;
    sim_kc_on_sleep(in->kc, answer_if_due, e);
    static const int32_t parts[] = {0, 1};
    sim_kc_assign(in->kc, parts, 2);
    CHECK(mc_runner_start(in->r) == 0);
}

static void inst_free(inst *in)
{
    mc_runner_free(in->r);
    mc_metrics_free(in->metrics);
    kit_config_free(in->cfg);
}

/* Loop turns, the clock moved by step before each, the endpoint answering
 * with respond, until `until`; false if the loop ended. */
static bool run_until(inst *in, endpoint *e, int64_t until, long (*respond)(mc_call *, void *))
{
    while (sim_now(e->k) < until) {
        if (!mc_runner_turn(in->r))
            return false;
        if (e->env.current)
            fake_caller_run(e->env.current, sim_now(e->k), respond, NULL);
        sim_advance(e->k, 10);
    }
    return mc_runner_turn(in->r);
}

static uint64_t cut(inst *in)
{
    return mc_counter_value(
        mc_metrics_counter(in->metrics, "mooncake_executor_calls_cut_total", "", NULL));
}

/* t0 and t1 due at T0 + 100, t2 at T0 + 10 s, all in `ready` partition 0. */
static void ready_tasks(sim_kafka *k)
{
    for (int i = 0; i < N_TASKS; i++) {
        char id[8];
        snprintf(id, sizeof id, "t%d", i);
        mc_task t = kit_task(id, i < 2 ? T0 + 100 : T0 + 10000, "http://e/t");
        kit_ready_submit(k, 0, i, &t);
    }
}

/* Calls made, and SUCCEEDED Results committed, per task. */
static void tally(endpoint *e, size_t calls[N_TASKS], size_t results[N_TASKS])
{
    memset(calls, 0, N_TASKS * sizeof *calls);
    memset(results, 0, N_TASKS * sizeof *results);
    for (size_t i = 0; i < e->env.n_calls; i++) {
        const char *id = strrchr(e->env.calls[i].key, '/');
        int n = id ? atoi(id + 2) : -1;
        if (n >= 0 && n < N_TASKS)
            calls[n]++;
    }
    kit_result *r;
    size_t m = kit_results(e->k, 0, &r);
    for (size_t i = 0; i < m; i++) {
        int n = atoi(r[i].id + 1);
        if (n >= 0 && n < N_TASKS && r[i].outcome == MC_OUTCOME_SUCCEEDED)
            results[n]++;
    }
    free(r);
}

static void test_revoke_lets_calls_in_flight_end(void)
{
    sim_kafka *k = sim_kafka_new(2, T0);
    endpoint e = {.k = k, .answer_at = INT64_MAX};
    e.env.clock = k;
    ready_tasks(k);
    inst a;
    inst_start(&a, &e, "a", NULL);
    CHECK(run_until(&a, &e, T0 + 300, in_flight));
    e.answer_at = T0 + 600;
    sim_kc_revoke(a.kc);
    CHECK(mc_runner_turn(a.r));
    CHECK(sim_now(k) >= T0 + 600 && sim_now(k) < T0 + 700,
          "the revoke waited for the calls, and no longer (%lld ms)", (long long)(sim_now(k) - T0));
    size_t calls[N_TASKS], results[N_TASKS];
    tally(&e, calls, results);
    CHECK(results[0] == 1 && results[1] == 1,
          "the calls that ended in the revoke have their Results committed (%zu, %zu)", results[0],
          results[1]);
    CHECK(calls[2] == 0, "the held task was not called");
    CHECK(cut(&a) == 0, "nothing cut (%llu)", (unsigned long long)cut(&a));
    inst_free(&a);

    inst b;
    e.answer_at = INT64_MAX;
    inst_start(&b, &e, "b", NULL);
    CHECK(run_until(&b, &e, T0 + 10500, NULL));
    tally(&e, calls, results);
    for (int i = 0; i < N_TASKS; i++) {
        CHECK(calls[i] == 1, "t%d called %zu times across the hand-over", i, calls[i]);
        CHECK(results[i] == 1, "t%d: %zu SUCCEEDED Results", i, results[i]);
    }
    CHECK(cut(&b) == 0);
    inst_free(&b);
    fake_env_free(&e.env);
    sim_kafka_free(k);
}

/* Past the bound the calls are cut: counted, and called again by b. */
static void test_revoke_cuts_calls_past_the_drain_timeout(void)
{
    size_t cut_a = 0;
    sim_kafka *k = sim_kafka_new(2, T0);
    endpoint e = {.k = k, .answer_at = INT64_MAX};
    e.env.clock = k;
    ready_tasks(k);
    inst a;
    inst_start(&a, &e, "a", "--drain-timeout-ms=200");
    CHECK(run_until(&a, &e, T0 + 300, in_flight));
    e.answer_at = T0 + 600; /* after the bound */
    sim_kc_revoke(a.kc);
    CHECK(mc_runner_turn(a.r));
    CHECK(sim_now(k) >= T0 + 500 && sim_now(k) < T0 + 600, "the revoke waited 200 ms (%lld)",
          (long long)(sim_now(k) - T0));
    cut_a = cut(&a);
    CHECK(cut_a == 2, "both running calls cut and counted (%zu)", cut_a);
    inst_free(&a);

    inst b;
    e.answer_at = INT64_MAX;
    inst_start(&b, &e, "b", "--drain-timeout-ms=200");
    CHECK(run_until(&b, &e, T0 + 10500, NULL));
    size_t calls[N_TASKS], results[N_TASKS];
    tally(&e, calls, results);
    /* (a's cut calls never ended, so the fake logged only b's.) */
    CHECK(calls[0] == 1 && calls[1] == 1, "what was cut is called again by b (%zu, %zu)", calls[0],
          calls[1]);
    CHECK(calls[2] == 1 && results[2] == 1, "the held task once");
    CHECK(results[0] == 1 && results[1] == 1, "one Result each");
    inst_free(&b);
    fake_env_free(&e.env);
    sim_kafka_free(k);
}

int main(void)
{
    test_revoke_lets_calls_in_flight_end();
    test_revoke_cuts_calls_past_the_drain_timeout();
    return check_exit("test_handover_sim");
}
