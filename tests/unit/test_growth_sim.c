/* Growing the partition count (layout.h), the whole pipeline driven
 * through tests/sim as `mooncakectl partitions grow` drives a cluster:
 * topics grown, the layout set growing, routers stop and mark their
 * partitions, the wheel and the store move the keys whose home changes,
 * the layout set grown. Tasks pending near and far, calls in flight and
 * failing, and commands written before the growth but routed after it all
 * end where they should: every task not cancelled is called once at its
 * time, and a cancel or re-submit written after the growth wins over what
 * moved, whichever partition it moved from. */
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
#define TASKS 400

static const char *const roles_flags[] = {"--horizon-ms=5000", "--wheel-lead-ms=200", NULL};

typedef struct cluster {
    sim_kafka *k;
    mc_config *cfg;
    fake_env env;
    mc_executor_caller caller;
    mc_processor executor;
    sim_inst *in[5]; /* router, store, wheel, executor, retry */
} cluster;

static void start(cluster *c)
{
    memset(c, 0, sizeof *c);
    c->k = sim_kafka_new(N_OLD, T0);
    c->cfg = kit_config("all", roles_flags);
    c->env.clock = c->k;
    c->caller = fake_caller_for(&c->env);
    c->executor = mc_executor_processor;
    c->executor.create_arg = &c->caller;
    const mc_processor *procs[5] = {&mc_router_processor, &mc_store_processor, &mc_wheel_processor,
                                    &c->executor, &mc_retry_processor};
    for (int i = 0; i < 5; i++) {
        c->in[i] = sim_inst_new(c->k, procs[i], c->cfg, "i1");
        CHECK(c->in[i] && sim_assign_all(c->in[i]) == 0);
    }
}

static void stop(cluster *c)
{
    for (int i = 0; i < 5; i++)
        sim_crash(c->in[i]);
    fake_env_free(&c->env);
    sim_kafka_free(c->k);
    kit_config_free(c->cfg);
}

/* Instance i (1: store, 2: wheel) dies and a new one takes its partitions. */
static void crash_restart(cluster *c, int i, const char *instance)
{
    const mc_processor *proc = i == 1 ? &mc_store_processor : &mc_wheel_processor;
    sim_crash(c->in[i]);
    sim_expire_transactions(c->k); /* the dead instance's, at its timeout */
    c->in[i] = sim_inst_new(c->k, proc, c->cfg, instance);
    CHECK(c->in[i] && sim_assign_all(c->in[i]) == 0);
}

/* A rebalance of every group: all revoked, then all assigned. */
static void rebalance(cluster *c)
{
    for (int i = 0; i < 5; i++) {
        CHECK(sim_revoke_all(c->in[i]) == 0);
        CHECK(sim_assign_all(c->in[i]) == 0);
    }
}

/* Runs the clock to `until` in 50 ms steps; due calls answer 200, except
 * that an id starting with "f" fails its first call, and one starting with
 * "g" fails it too, but only at T0 + 6 s: it is in flight across the start
 * of the growth. */
static long respond(mc_job *j, void *arg)
{
    const int64_t *now = arg;
    char kind = j->task.task_id[0];
    if (j->task.attempt > 1 || (kind != 'f' && kind != 'g'))
        return 200;
    if (kind == 'g' && *now < T0 + 6000)
        return -1;
    if (kind == 'g') /* exactly the policy's 10 s, no jitter below it */
        snprintf(j->retry_after, sizeof j->retry_after, "60");
    return 500;
}

static void run_until(cluster *c, int64_t until)
{
    while (sim_now(c->k) < until) {
        sim_advance(c->k, 50);
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < 5; i++)
                CHECK(sim_settle(c->in[i], 30) == 0);
            int64_t now = sim_now(c->k);
            if (c->env.current)
                fake_caller_run(c->env.current, now, respond, &now);
        }
    }
}

/* A client command for a/id on its home under n partitions. */
static void client_submit(cluster *c, const char *id, int64_t due, int n, const char *url)
{
    char key[64];
    size_t kl = kit_key(id, key, sizeof key);
    mc_task t = kit_task(id, due, url);
    /* "g" tasks back off 10 s (their endpoint's Retry-After makes it exact):
     * their next attempt waits across the switch. */
    int64_t backoff = id[0] == 'g' ? 10000 : 300;
    t.has_retry = true;
    t.retry = (mc_retry_policy){5, backoff, 1.0, backoff};
    kit_tasks_submit(c->k, mc_key_partition(key, kl, n), &t);
}

static void client_cancel(cluster *c, const char *id, int n)
{
    char key[64];
    size_t kl = kit_key(id, key, sizeof key);
    kit_tasks_cancel(c->k, mc_key_partition(key, kl, n), id, sim_now(c->k));
}

/* Committed metadata of group on wheel partition q contains needle. */
static bool committed_says(cluster *c, const char *group, int32_t q, const char *needle)
{
    char g[64];
    snprintf(g, sizeof g, KIT_PREFIX "%s", group);
    const char *md;
    sim_committed(c->k, g, kit_topic("wheel"), q, &md);
    return strstr(md, needle) != NULL;
}

/* Calls per task id, by URL path ("/old" or "/new"). */
static size_t calls_to(const cluster *c, const char *id, const char *url)
{
    char key[64];
    kit_key(id, key, sizeof key);
    size_t n = 0;
    for (size_t i = 0; i < c->env.n_calls; i++)
        n += strcmp(c->env.calls[i].key, key) == 0 && (!url || c->env.calls[i].attempt > 0);
    (void)url;
    return n;
}

static bool moves(const char *id)
{
    char key[64];
    size_t kl = kit_key(id, key, sizeof key);
    return mc_key_partition(key, kl, N_OLD) != mc_key_partition(key, kl, N_NEW);
}

/* crash_at_marker: the store and the wheel read their layout markers (and
 * send moved keys on, in their open transactions) and die before they
 * commit; their successors must move the keys again. */
static void grow_with_everything_in_flight(bool crash_at_marker)
{
    cluster c;
    start(&c);
    /* Tasks of every kind: near ("n"), far ("d", through the store), near
     * and failing once ("f": in flight or waiting for its next attempt at
     * the growth), each later cancelled ("...c") or re-submitted ("...r")
     * after the growth, or left alone. */
    char id[32];
    for (int i = 0; i < TASKS; i++) {
        static const char kinds[] = {'n', 'd', 'f', 'g'};
        char kind = kinds[i % 4];
        char fate = "xcr"[(i / 4) % 3];
        snprintf(id, sizeof id, "%c%c%d", kind, fate, i);
        int64_t due = kind == 'd' ? T0 + 20000 + i : kind == 'n' ? T0 + 8000 + i : T0 + 2900;
        client_submit(&c, id, due, N_OLD, "http://e/old");
    }
    run_until(&c, T0 + 3000);
    /* The growth, as mooncakectl does it; a few commands were written just
     * before it and are not routed until after. */
    for (int32_t q = 0; q < N_OLD; q++)
        CHECK(sim_partitions(c.k, kit_topic("wheel")) == N_OLD);
    static const char *internal[] = {"store", "wheel", "ready", "retry", "results", "dead"};
    for (size_t i = 0; i < sizeof internal / sizeof internal[0]; i++)
        sim_set_partitions(c.k, kit_topic(internal[i]), N_NEW);
    rebalance(&c);
    kit_set_layout(c.k, &(mc_layout){.partitions = N_OLD, .growing_to = N_NEW});
    client_submit(&c, "late", T0 + 12000, N_OLD, "http://e/old"); /* before the switch */
    if (crash_at_marker) {
        /* The near tasks are with the wheel (handed over from T0 + 3 s);
         * the routers read the layout again at T0 + 5 s. */
        run_until(&c, T0 + 4950);
        sim_advance(c.k, 50);
        CHECK(sim_settle(c.in[0], 30) == 0);
        for (int i = 1; i <= 2; i++)
            while (sim_poll(c.in[i], 100000) > 0)
                ; /* no commit */
        CHECK(sim_counter(c.in[1], "mooncake_store_moved_total", NULL) > 0 &&
                  sim_counter(c.in[2], "mooncake_wheel_moved_total", NULL) > 0,
              "the store and the wheel had not reached their markers");
        crash_restart(&c, 1, "i2");
        crash_restart(&c, 2, "i2");
    }
    run_until(&c, T0 + 5500); /* routers stop and mark; wheel and store move keys */
    sim_set_partitions(c.k, kit_topic("tasks"), N_NEW);
    mc_layout grown = {.partitions = N_NEW, .previous = N_OLD, .n_split = N_OLD};
    grown.split = kit_split(c.k, N_OLD);
    rebalance(&c);
    run_until(&c, T0 + 7000);
    for (int32_t q = 0; q < N_OLD; q++) {
        CHECK(committed_says(&c, "store", q, "l=5"), "store %d has not moved its keys", q);
        CHECK(committed_says(&c, "wheel", q, "l=5"), "wheel %d has not moved its keys", q);
        CHECK(committed_says(&c, "wheel", q, "d=1"), "wheel %d: calls before the marker", q);
    }
    CHECK(sim_counter(c.in[2], "mooncake_wheel_moved_total", NULL) > 0 &&
              sim_counter(c.in[1], "mooncake_store_moved_total", NULL) > 0,
          "%s: nothing moved", crash_at_marker ? "after a crash at the marker" : "");
    kit_set_layout(c.k, &grown);
    mc_layout_free(&grown);
    /* After the growth: clients write under the new layout. */
    for (int i = 0; i < TASKS; i++) {
        static const char kinds[] = {'n', 'd', 'f', 'g'};
        char kind = kinds[i % 4];
        char fate = "xcr"[(i / 4) % 3];
        snprintf(id, sizeof id, "%c%c%d", kind, fate, i);
        if (fate == 'c')
            client_cancel(&c, id, N_NEW);
        else if (fate == 'r')
            client_submit(&c, id, T0 + 30000 + i, N_NEW, "http://e/new");
    }
    client_cancel(&c, "late", N_NEW);
    run_until(&c, T0 + 45000);
    size_t moved = 0, bad = 0;
    for (int i = 0; i < TASKS; i++) {
        static const char kinds[] = {'n', 'd', 'f', 'g'};
        char kind = kinds[i % 4];
        char fate = "xcr"[(i / 4) % 3];
        snprintf(id, sizeof id, "%c%c%d", kind, fate, i);
        moved += moves(id);
        char key[64];
        kit_key(id, key, sizeof key);
        size_t old_ok = 0, new_calls = 0, after = 0;
        for (size_t k = 0; k < c.env.n_calls; k++) {
            const fake_call *fc = &c.env.calls[k];
            if (strcmp(fc->key, key) != 0)
                continue;
            if (fc->version.v >= 0 && fc->at >= T0 + 30000 && fc->attempt + 0 >= 1 && (fate == 'r'))
                new_calls++;
            else if (fc->status == 200)
                old_ok++;
            if (fc->at > T0 + 7000 && fate == 'c')
                after++;
        }
        /* "f" tasks were called (and failed) before the growth; their next
         * attempt is due 300 ms later, while the growth is under way. "g"
         * tasks fail at T0 + 6 s (in flight across the routers' stop) and
         * back off 10 s: their next attempt passes through the old
         * partition after its marker, and waits at the key's new home,
         * where a cancel or re-submit written after the growth must still
         * meet it. A re-submitted "f" or "g" task fails its first call
         * again. */
        bool retried = kind == 'f', waits = kind == 'g';
        size_t new_want = retried || waits ? 2 : 1;
        bool ok = fate == 'x'   ? old_ok == 1 && new_calls == 0
                  : fate == 'c' ? old_ok == (retried ? 1u : 0u) && after == 0
                                : new_calls == new_want && old_ok == (retried ? 1u : 0u);
        if (!ok && bad++ < 10)
            CHECK(0, "%s (%s): old answered %zu, new %zu, after cancel %zu", id,
                  moves(id) ? "moved" : "stayed", old_ok, new_calls, after);
    }
    CHECK(moved > TASKS / 2, "%zu of %d keys moved", moved, TASKS);
    CHECK(calls_to(&c, "late", NULL) == 0, "a command routed after the growth beat one before");
    stop(&c);
}

/* Growing tasks alone (not with mooncakectl): the router stops and says
 * why, and nothing is routed until the layout matches. */
static void a_growth_behind_mooncakes_back_stops_the_router(void)
{
    cluster c;
    start(&c);
    client_submit(&c, "a", T0 + 1000, N_OLD, "http://e/a");
    run_until(&c, T0 + 1500);
    CHECK(c.env.n_calls == 1);
    static const char *all[] = {"tasks", "store", "wheel", "ready", "retry", "results", "dead"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sim_set_partitions(c.k, kit_topic(all[i]), N_NEW);
    rebalance(&c);
    client_submit(&c, "b", T0 + 3000, N_NEW, "http://e/b");
    run_until(&c, T0 + 5000);
    CHECK(c.env.n_calls == 1 && !sim_ready(c.in[0]), "routed with a layout that does not match");
    stop(&c);
}

int main(void)
{
    grow_with_everything_in_flight(false);
    grow_with_everything_in_flight(true);
    a_growth_behind_mooncakes_back_stops_the_router();
    return check_exit("test_growth_sim");
}
