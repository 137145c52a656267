/* The whole pipeline - router, store, wheel, executor (with a fake caller)
 * and retry - driven through tests/sim on one clock: the client's last word
 * wins over an automatic retry, whatever the timing (a cancel or re-submit
 * while the call is in flight, after the store's markers have let the wheel
 * forget other floors, with the next attempt near or far, of a task the
 * router fired itself); a cancel or a re-submit reaches a task fired early
 * in the router's one hop; and a zombie
 * store that wakes up after its partitions moved commits nothing. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "executor.h"
#include "fake_caller.h"
#include "retry.h"
#include "router.h"
#include "sim_pipeline.h"
#include "simkit.h"
#include "store.h"
#include "wheel.h"

#define T0 INT64_C(1800000000000)
#define HORIZON 5000

typedef sim_pipeline pipeline;

static void pipeline_start(pipeline *pl, const char *const *flags)
{
    CHECK(sim_pipeline_start(pl, 1, T0, flags) == 0);
}

/* Every role takes its turns until nothing moves, at the current time. */
static void settle(pipeline *pl)
{
    CHECK(sim_pipeline_settle(pl, 6) == 0);
}

/* Advances the clock to `until` in steps, settling at each; calls that are
 * due are answered by respond (200 when NULL) only when answer is true. */
static void run_until(pipeline *pl, int64_t until, int64_t step, bool answer,
                      long (*respond)(mc_call *, void *))
{
    while (sim_now(pl->k) < until) {
        int64_t next = sim_now(pl->k) + step;
        sim_set_now(pl->k, next < until ? next : until);
        settle(pl);
        if (answer && pl->env.current)
            fake_caller_run(pl->env.current, sim_now(pl->k), respond, NULL);
        settle(pl);
    }
}

static long fail_500(mc_call *j, void *arg)
{
    (void)j;
    (void)arg;
    return 500;
}

/* Calls of task id made at or after `since`, and of those the ones to url. */
static size_t calls_of(const pipeline *pl, const char *id, int64_t since)
{
    size_t n = 0;
    char key[64];
    kit_key(id, key, sizeof key);
    for (size_t i = 0; i < pl->env.n_calls; i++)
        n += strcmp(pl->env.calls[i].key, key) == 0 && pl->env.calls[i].at >= since;
    return n;
}

static mc_task with_retries(const char *id, int64_t due, const char *url, int64_t backoff_ms)
{
    mc_task t = kit_task(id, due, url);
    t.has_retry = true;
    t.retry = (mc_retry_policy){.max_attempts = 5,
                                .initial_backoff_ms = backoff_ms,
                                .multiplier = 1.0,
                                .max_backoff_ms = backoff_ms};
    return t;
}

/* A call in flight fails after the client cancelled the task, and long
 * enough after for the store's markers (once a second) to have passed the
 * cancel: the next attempt must still lose to the cancel. far: the next
 * attempt is due beyond the horizon (it goes through the store). */
static void a_cancel_during_a_failing_call_wins(bool far)
{
    static const char *flags[] = {"--horizon-ms=5000", "--wheel-lead-ms=0", NULL};
    pipeline pl;
    pipeline_start(&pl, flags);
    mc_task t = with_retries("x", T0 + 100, "http://e/old", far ? 60000 : 200);
    kit_tasks_submit(pl.k, 0, &t);
    run_until(&pl, T0 + 100, 10, false, NULL);
    CHECK(fake_caller_pending(pl.env.current) == 1, "the call is in flight");
    kit_tasks_cancel(pl.k, 0, "x", sim_now(pl.k));
    /* Three seconds of markers while the call is still running. */
    run_until(&pl, T0 + 3100, 100, false, NULL);
    CHECK(sim_counter(pl.in[2], "mooncake_wheel_floors_forgotten_total", NULL) == 0);
    fake_caller_run(pl.env.current, sim_now(pl.k), fail_500, NULL);
    int64_t failed_at = sim_now(pl.k);
    run_until(&pl, T0 + 70000, 500, true, fail_500);
    CHECK(calls_of(&pl, "x", failed_at + 1) == 0,
          "%s: the next attempt was called %zu times after the client's cancel",
          far ? "far" : "near", calls_of(&pl, "x", failed_at + 1));
    sim_pipeline_stop(&pl);
}

/* The same with a re-submit (a new callback, due later): the new version is
 * called once; the old callback is not retried. far: the old callback's
 * next attempt is due beyond the horizon, and reaches the wheel (on its way
 * to the store) while the re-submit is still pending there, not yet fired
 * (chaos seed 464601 found it called 7 s after the re-submit). */
static void a_resubmit_during_a_failing_call_wins(bool far)
{
    static const char *flags[] = {"--horizon-ms=5000", "--wheel-lead-ms=0", NULL};
    pipeline pl;
    pipeline_start(&pl, flags);
    mc_task t = with_retries("x", T0 + 100, "http://e/old", far ? 30000 : 200);
    kit_tasks_submit(pl.k, 0, &t);
    run_until(&pl, T0 + 100, 10, false, NULL);
    mc_task t2 = with_retries("x", T0 + 4000, "http://e/new", 200);
    kit_tasks_submit(pl.k, 0, &t2);
    run_until(&pl, T0 + 3000, 100, false, NULL);
    fake_caller_run(pl.env.current, sim_now(pl.k), fail_500, NULL);
    run_until(&pl, T0 + 40000, 100, true, NULL);
    size_t old_after = 0, new_calls = 0;
    for (size_t i = 0; i < pl.env.n_calls; i++) {
        const fake_call *c = &pl.env.calls[i];
        if (c->at > T0 + 3000 && c->version.v == 0)
            old_after++;
        if (c->version.v == 1)
            new_calls++;
    }
    CHECK(old_after == 0 && new_calls == 1, "%s: old callback called %zu times after, new %zu",
          far ? "far" : "near", old_after, new_calls);
    sim_pipeline_stop(&pl);
}

/* A task due now, which the router fires to `ready` itself: the call
 * fails after the client cancelled it, and the next attempt must lose to
 * the cancel - also when the wheel restarts after markers have let it
 * forget the cancel, with a later task pending that holds its replay back
 * to before the next attempt (the replay then meets the next attempt
 * without the cancel, and only the fired position the router put on the
 * call says it is stale). */
static void a_cancel_wins_over_the_retry_of_a_task_fired_by_the_router(bool restart)
{
    static const char *flags[] = {"--horizon-ms=5000", "--wheel-lead-ms=200", NULL};
    pipeline pl;
    pipeline_start(&pl, flags);
    mc_task t = with_retries("x", T0, "http://e/x", 200);
    kit_tasks_submit(pl.k, 0, &t);
    run_until(&pl, T0 + 10, 10, false, NULL);
    CHECK(sim_counter(pl.in[SIM_ROUTER], "mooncake_router_routed_total", "destination=\"ready\"") ==
              1,
          "the router fired it");
    CHECK(fake_caller_pending(pl.env.current) == 1, "the call is in flight");
    kit_tasks_cancel(pl.k, 0, "x", sim_now(pl.k));
    run_until(&pl, T0 + 3000, 100, false, NULL);
    mc_task later = kit_task("later", T0 + 7000, "http://e/later");
    kit_tasks_submit(pl.k, 0, &later);
    run_until(&pl, T0 + 3100, 100, false, NULL);
    fake_caller_run(pl.env.current, sim_now(pl.k), fail_500, NULL);
    int64_t failed_at = sim_now(pl.k);
    /* The next attempt reaches the wheel, then the resolved marker. */
    run_until(&pl, T0 + 5000, 100, false, NULL);
    if (restart)
        CHECK(sim_pipeline_restart(&pl, SIM_WHEEL, "w2") == 0);
    run_until(&pl, T0 + 12000, 100, true, NULL);
    CHECK(calls_of(&pl, "x", failed_at + 1) == 0,
          "%s: the next attempt was called %zu times after the client's cancel",
          restart ? "restarted" : "running", calls_of(&pl, "x", failed_at + 1));
    CHECK(calls_of(&pl, "later", 0) == 1, "later called %zu times", calls_of(&pl, "later", 0));
    sim_pipeline_stop(&pl);
}

/* A re-submit due now that Kafka refuses for `ready` (too large; here ready
 * takes less than wheel) goes to the dead topic - and still stops the older
 * version of its key, as it did when the wheel was the one firing it. */
static void a_resubmit_due_now_refused_by_ready_still_stops_the_older_version(void)
{
    static const char *flags[] = {"--horizon-ms=5000", "--wheel-lead-ms=200", NULL};
    pipeline pl;
    pipeline_start(&pl, flags);
    sim_set_max_bytes(pl.k, kit_topic("ready"), 400);
    mc_task v1 = kit_task("x", T0 + 2000, "http://e/old");
    kit_tasks_submit(pl.k, 0, &v1);
    run_until(&pl, T0 + 100, 10, true, NULL);
    char url[700];
    memset(url, 'a', sizeof url);
    memcpy(url, "http://e/", 9);
    url[sizeof url - 1] = 0;
    mc_task v2 = kit_task("x", T0 + 100, url);
    kit_tasks_submit(pl.k, 0, &v2);
    run_until(&pl, T0 + 6000, 50, true, NULL);
    CHECK(calls_of(&pl, "x", 0) == 0, "the older version was called %zu times after the re-submit",
          calls_of(&pl, "x", 0));
    CHECK(kit_count_keyed(pl.k, "dead", 0) == 1, "%zu dead letters",
          kit_count_keyed(pl.k, "dead", 0));
    sim_pipeline_stop(&pl);
}

/* Only the router and the executor take turns (the wheel is busy, or its
 * transaction slow), as the clock moves to `until`. */
static void run_router_and_executor(pipeline *pl, int64_t until, int64_t step)
{
    while (sim_now(pl->k) < until) {
        int64_t next = sim_now(pl->k) + step;
        sim_set_now(pl->k, next < until ? next : until);
        CHECK(sim_settle(pl->in[SIM_ROUTER], 30) == 0 && sim_settle(pl->in[SIM_EXECUTOR], 30) == 0);
        fake_caller_run(pl->env.current, sim_now(pl->k), NULL, NULL);
        CHECK(sim_settle(pl->in[SIM_EXECUTOR], 30) == 0);
    }
}

/* How many Results of task id say outcome. */
static size_t results_of(const pipeline *pl, const char *id, mc_outcome outcome)
{
    kit_result *res;
    size_t n = kit_results(pl->k, 0, &res), count = 0;
    for (size_t i = 0; i < n; i++)
        count += strcmp(res[i].id, id) == 0 && res[i].outcome == outcome;
    free(res);
    return count;
}

/* What follows a task the wheel fired early. */
typedef enum follow_up {
    CANCEL,
    RESUBMIT_LATER, /* due after the older version, through the wheel */
    RESUBMIT_NOW,   /* due now: fired by the router itself */
} follow_up;

/* The calls of task id at version. */
static size_t calls_at(const pipeline *pl, const char *id, int64_t version)
{
    size_t n = 0;
    char key[64];
    kit_key(id, key, sizeof key);
    for (size_t i = 0; i < pl->env.n_calls; i++)
        n += strcmp(pl->env.calls[i].key, key) == 0 && pl->env.calls[i].version.v == version;
    return n;
}

/* A cancel, or a re-submit, of a task the wheel fired early (held by the
 * executor until its due time) reaches the executor in the router's one
 * transaction: while the wheel takes no turn at all until after the due
 * time, the task is dropped (one CANCELLED Result) and never called, and a
 * re-submit is called once, at its own version. After a restart of the
 * router (which forgot the key) a re-submit is stopped by the wheel's
 * recall instead, a hop later. */
static void a_follow_up_reaches_a_task_fired_early_in_one_hop(follow_up f, bool router_restarted)
{
    static const char *flags[] = {"--horizon-ms=5000", "--wheel-lead-ms=200", NULL};
    const char *what = f == CANCEL         ? "cancel"
                       : f == RESUBMIT_NOW ? "re-submit due now"
                       : router_restarted  ? "re-submit after a router restart"
                                           : "re-submit";
    pipeline pl;
    pipeline_start(&pl, flags);
    mc_task t = kit_task("x", T0 + 1000, "http://e/x");
    int64_t first = kit_tasks_submit(pl.k, 0, &t);
    run_until(&pl, T0 + 850, 10, false, NULL);
    CHECK(kit_fired(pl.k, 1, "x", 0) == 1 && fake_caller_pending(pl.env.current) == 1,
          "the wheel fired it early; the executor holds it");
    if (router_restarted)
        CHECK(sim_pipeline_restart(&pl, SIM_ROUTER, "router-2") == 0);
    int64_t second = -1;
    if (f == CANCEL) {
        kit_tasks_cancel(pl.k, 0, "x", sim_now(pl.k));
    } else {
        mc_task t2 = kit_task("x", f == RESUBMIT_NOW ? sim_now(pl.k) : T0 + 2000, "http://e/x2");
        second = kit_tasks_submit(pl.k, 0, &t2);
    }
    if (router_restarted)
        run_until(&pl, T0 + 1100, 10, true, NULL);
    else
        run_router_and_executor(&pl, T0 + 1100, 10);
    CHECK(calls_at(&pl, "x", first) == 0, "%s: called %zu times", what, calls_at(&pl, "x", first));
    run_until(&pl, T0 + 3000, 50, true, NULL);
    CHECK(calls_at(&pl, "x", first) == 0 && results_of(&pl, "x", MC_OUTCOME_CANCELLED) == 1,
          "%s: %zu calls, %zu CANCELLED Results", what, calls_at(&pl, "x", first),
          results_of(&pl, "x", MC_OUTCOME_CANCELLED));
    CHECK(f == CANCEL || (calls_at(&pl, "x", second) == 1 && calls_of(&pl, "x", 0) == 1),
          "%s: the re-submit called %zu times, %zu calls in all", what, calls_at(&pl, "x", second),
          calls_of(&pl, "x", 0));
    /* Only one recall: the wheel read the command after the due time (it
     * recalled nothing), or the router did not know the key. */
    CHECK(kit_recalls(pl.k, 1, "x") == 1, "%s: %zu recalls in ready: one, the %s", what,
          kit_recalls(pl.k, 1, "x"), router_restarted ? "wheel's" : "router's");
    sim_pipeline_stop(&pl);
}

/* Answers 500 to the first two calls it sees, 200 after. */
static long fail_twice(mc_call *j, void *arg)
{
    (void)j;
    int *seen = arg;
    return (*seen)++ < 2 ? 500 : 200;
}

/* Without a client command, a failing call is retried (near and far) until
 * it succeeds: the versions carried do not make a retry look stale. */
static void retries_still_happen(bool far)
{
    static const char *flags[] = {"--horizon-ms=5000", "--wheel-lead-ms=0", NULL};
    pipeline pl;
    pipeline_start(&pl, flags);
    mc_task t = with_retries("x", T0 + 100, "http://e/x", far ? 8000 : 300);
    kit_tasks_submit(pl.k, 0, &t);
    int seen = 0;
    for (int64_t now = T0; now < T0 + 40000; now += 100) {
        sim_set_now(pl.k, now);
        settle(&pl);
        if (pl.env.current)
            fake_caller_run(pl.env.current, now, fail_twice, &seen);
        settle(&pl);
    }
    kit_result *r;
    size_t n = kit_results(pl.k, 0, &r);
    int will_retry = 0, ok = 0;
    for (size_t i = 0; i < n; i++) {
        will_retry += r[i].outcome == MC_OUTCOME_FAILED_WILL_RETRY;
        ok += r[i].outcome == MC_OUTCOME_SUCCEEDED && r[i].attempt == 3;
    }
    CHECK(pl.env.n_calls == 3 && will_retry == 2 && ok == 1,
          "%s: %zu calls, %d FAILED_WILL_RETRY, %d SUCCEEDED on attempt 3", far ? "far" : "near",
          pl.env.n_calls, will_retry, ok);
    free(r);
    sim_pipeline_stop(&pl);
}

/* A store frozen (SIGSTOP) past its session while holding a far task; its
 * partitions go to another store, which hands the task over; then the
 * frozen one wakes up and hands it over too: its commit is fenced, and the
 * task fires once. */
static void a_zombie_store_hands_nothing_off(void)
{
    static const char *flags[] = {"--horizon-ms=5000", "--wheel-lead-ms=0", NULL};
    pipeline pl;
    pipeline_start(&pl, flags);
    mc_task t = kit_task("far", T0 + 8000, "http://e/far");
    kit_tasks_submit(pl.k, 0, &t);
    run_until(&pl, T0 + 1000, 100, true, NULL);
    CHECK(sim_gauge(pl.in[1], "mooncake_store_tasks", NULL) == 1, "held by the store");
    sim_inst *zombie = pl.in[1];
    sim_new_generation(pl.k, KIT_PREFIX "store");
    pl.in[1] = sim_inst_new(pl.k, &mc_store_processor, pl.cfg, "i2");
    CHECK(sim_assign_all(pl.in[1]) == 0);
    run_until(&pl, T0 + 3500, 100, true, NULL);
    /* The new store handed it over at due - horizon; the zombie wakes. */
    CHECK(sim_punctuate(zombie) >= 0);
    CHECK(sim_commit(zombie) == 1, "the zombie's commit is fenced");
    run_until(&pl, T0 + 12000, 100, true, NULL);
    CHECK(kit_fired(pl.k, 1, "far", -1) == 1, "fired %zu times", kit_fired(pl.k, 1, "far", -1));
    CHECK(calls_of(&pl, "far", 0) == 1, "called %zu times", calls_of(&pl, "far", 0));
    sim_crash(zombie);
    sim_pipeline_stop(&pl);
}

/* Once every task is done, nothing more is written: the position markers
 * answer records other than markers, not one another, so an idle system
 * costs the broker no transactions. */
static void an_idle_pipeline_writes_nothing(void)
{
    static const char *flags[] = {"--horizon-ms=5000", "--wheel-lead-ms=0", NULL};
    static const char *const topics[] = {"wheel", "ready", "retry", "results", "store"};
    enum { N_TOPICS = sizeof topics / sizeof topics[0] };
    pipeline pl;
    pipeline_start(&pl, flags);
    mc_task near = kit_task("near", T0 + 100, "http://e/near");
    mc_task far = kit_task("far", T0 + 8000, "http://e/far");
    kit_tasks_submit(pl.k, 0, &near);
    kit_tasks_submit(pl.k, 0, &far);
    run_until(&pl, T0 + 12000, 100, true, NULL);
    CHECK(calls_of(&pl, "near", 0) == 1 && calls_of(&pl, "far", 0) == 1);
    int64_t end[N_TOPICS];
    for (size_t i = 0; i < N_TOPICS; i++)
        end[i] = sim_end_offset(pl.k, kit_topic(topics[i]), 0);
    run_until(&pl, T0 + 22000, 100, true, NULL);
    for (size_t i = 0; i < N_TOPICS; i++) {
        int64_t grew = sim_end_offset(pl.k, kit_topic(topics[i]), 0) - end[i];
        CHECK(grew == 0, "%s grew by %" PRId64 " offsets in 10 idle seconds", topics[i], grew);
    }
    sim_pipeline_stop(&pl);
}

int main(void)
{
    a_cancel_during_a_failing_call_wins(false);
    a_cancel_during_a_failing_call_wins(true);
    a_resubmit_during_a_failing_call_wins(false);
    a_resubmit_during_a_failing_call_wins(true);
    retries_still_happen(false);
    retries_still_happen(true);
    a_zombie_store_hands_nothing_off();
    a_cancel_wins_over_the_retry_of_a_task_fired_by_the_router(false);
    a_cancel_wins_over_the_retry_of_a_task_fired_by_the_router(true);
    a_resubmit_due_now_refused_by_ready_still_stops_the_older_version();
    a_follow_up_reaches_a_task_fired_early_in_one_hop(CANCEL, false);
    a_follow_up_reaches_a_task_fired_early_in_one_hop(RESUBMIT_LATER, false);
    a_follow_up_reaches_a_task_fired_early_in_one_hop(RESUBMIT_NOW, false);
    a_follow_up_reaches_a_task_fired_early_in_one_hop(RESUBMIT_LATER, true);
    an_idle_pipeline_writes_nothing();
    return check_exit("test_pipeline_sim");
}
