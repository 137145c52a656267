/* The client's last word wins across a growth of the partition count
 * (layout.h), the pipeline driven through tests/sim as `mooncakectl
 * partitions grow` drives a cluster. Each case runs on a key whose home
 * moves, and again on one whose home stays (the control: if it fails, the
 * test is wrong, not the code):
 *  A: a task that moved (its version shifted below zero) fails its call at
 *     its new home; the client cancels while the call is in flight. The
 *     next attempt is not called.
 *  B: a call fired at the old home before the marker is in flight; the
 *     client cancels before the routers stop; the call fails after the
 *     marker. The next attempt, forwarded from the old home, is not called.
 *  C: after the growth, a client that noticed it submits; two seconds later
 *     a client that has not noticed it cancels. The task is not called.
 *  D: the same with a re-submit: the re-submit wins.
 * (A, B, C and D each failed before their fixes: retry reading a negative
 * version as none, forwarding without the old home's floor, and every
 * command on an old home shifted below the new layout's, whenever it was
 * written.) */
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

static void rebalance(cluster *c)
{
    for (int i = 0; i < 5; i++) {
        CHECK(sim_revoke_all(c->in[i]) == 0);
        CHECK(sim_assign_all(c->in[i]) == 0);
    }
}

/* 'A' ids: the first call stays in flight until T0 + 12.5 s, then 500.
 * 'B' ids: the first call stays in flight until T0 + 6 s (across the
 * marker), then 500. Everything else: 200. */
static long respond(mc_job *j, void *arg)
{
    const int64_t *now = arg;
    char kind = j->task.task_id[0];
    if (kind >= 'a' && kind <= 'z')
        kind = (char)(kind - 'a' + 'A'); /* the controls: same behaviour */
    if (j->task.attempt > 1)
        return 200;
    if (kind == 'A')
        return *now < T0 + 12500 ? -1 : 500;
    if (kind == 'B')
        return *now < T0 + 6000 ? -1 : 500;
    return 200;
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

static void client_submit(cluster *c, const char *id, int64_t due, int n, const char *url)
{
    char key[64];
    size_t kl = kit_key(id, key, sizeof key);
    mc_task t = kit_task(id, due, url);
    t.has_retry = true;
    t.retry = (mc_retry_policy){5, 300, 1.0, 300};
    kit_tasks_submit(c->k, mc_key_partition(key, kl, n), &t);
}

static void client_cancel(cluster *c, const char *id, int n)
{
    char key[64];
    size_t kl = kit_key(id, key, sizeof key);
    kit_tasks_cancel(c->k, mc_key_partition(key, kl, n), id, sim_now(c->k));
}

static bool committed_says(cluster *c, const char *group, int32_t q, const char *needle)
{
    char g[64];
    snprintf(g, sizeof g, KIT_PREFIX "%s", group);
    const char *md;
    sim_committed(c->k, g, kit_topic("wheel"), q, &md);
    return strstr(md, needle) != NULL;
}

static bool moves(const char *id)
{
    char key[64];
    size_t kl = kit_key(id, key, sizeof key);
    return mc_key_partition(key, kl, N_OLD) != mc_key_partition(key, kl, N_NEW);
}

/* An id with this prefix whose key's home moves (or, for the controls,
 * stays). */
static void moving_id(char prefix, char *id, size_t len)
{
    bool want = prefix >= 'A' && prefix <= 'Z';
    for (int i = 0;; i++) {
        snprintf(id, len, "%c%d", prefix, i);
        if (moves(id) == want)
            return;
    }
}

typedef struct call_count {
    size_t total, by_attempt[4];
    size_t url_new, url_old;
} call_count;

static call_count calls_of(const cluster *c, const char *id)
{
    char key[64];
    kit_key(id, key, sizeof key);
    call_count n = {0};
    for (size_t i = 0; i < c->env.n_calls; i++) {
        const fake_call *fc = &c->env.calls[i];
        if (strcmp(fc->key, key) != 0)
            continue;
        n.total++;
        if (fc->attempt >= 1 && fc->attempt <= 3)
            n.by_attempt[fc->attempt]++;
    }
    return n;
}

/* Records with a key in `tasks` partition q at or after offset from. */
static size_t tasks_records_of(cluster *c, const char *id)
{
    char key[64];
    size_t kl = kit_key(id, key, sizeof key);
    size_t n = 0;
    for (int32_t q = 0; q < N_NEW; q++) {
        sim_rec *r;
        size_t m = sim_read(c->k, kit_topic("tasks"), q, &r);
        for (size_t i = 0; i < m; i++)
            n += r[i].key && r[i].key_len == kl && memcmp(r[i].key, key, kl) == 0;
        free(r);
    }
    return n;
}

/* The growth as mooncakectl does it, from T0 + 3 s to about T0 + 7 s. */
static void grow(cluster *c)
{
    static const char *internal[] = {"store", "wheel", "ready", "retry", "results", "dead"};
    for (size_t i = 0; i < sizeof internal / sizeof internal[0]; i++)
        sim_set_partitions(c->k, kit_topic(internal[i]), N_NEW);
    rebalance(c);
    kit_set_layout(c->k, &(mc_layout){.partitions = N_OLD, .growing_to = N_NEW});
}

static void grow_finish(cluster *c)
{
    sim_set_partitions(c->k, kit_topic("tasks"), N_NEW);
    mc_layout grown = {.partitions = N_NEW, .previous = N_OLD, .n_split = N_OLD};
    grown.split = kit_split(c->k, N_OLD);
    rebalance(c);
    run_until(c, T0 + 7000);
    for (int32_t q = 0; q < N_OLD; q++) {
        CHECK(committed_says(c, "store", q, "l=5"), "store %d has not moved its keys", q);
        CHECK(committed_says(c, "wheel", q, "l=5"), "wheel %d has not moved its keys", q);
        CHECK(committed_says(c, "wheel", q, "d=1"), "wheel %d: calls before the marker", q);
    }
    kit_set_layout(c->k, &grown);
    mc_layout_free(&grown);
}

static int scenario(bool control)
{
    int failures_before = check_failures;
    cluster c;
    start(&c);
    char a[16], b[16], cc[16], d[16];
    moving_id(control ? 'a' : 'A', a, sizeof a);
    moving_id(control ? 'b' : 'B', b, sizeof b);
    moving_id(control ? 'c' : 'C', cc, sizeof cc);
    moving_id(control ? 'd' : 'D', d, sizeof d);

    /* A: due after the growth, moved with a shifted version. */
    client_submit(&c, a, T0 + 12000, N_OLD, "http://e/a");
    /* B: fired at T0 + 2.7 s at the old home, in flight until T0 + 6 s. */
    client_submit(&c, b, T0 + 2900, N_OLD, "http://e/b");
    run_until(&c, T0 + 3000);
    grow(&c);
    run_until(&c, T0 + 3500);
    /* B: cancelled before the routers stop (they read the layout at
     * T0 + 5 s), while its call is in flight. */
    client_cancel(&c, b, N_OLD);
    run_until(&c, T0 + 5500); /* routers stop and mark; wheel and store move keys */
    grow_finish(&c);
    run_until(&c, T0 + 8000);

    /* C and D: a client that noticed the growth submits... */
    client_submit(&c, cc, T0 + 20000, N_NEW, "http://e/c-new-client");
    client_submit(&c, d, T0 + 20000, N_NEW, "http://e/d-first");
    run_until(&c, T0 + 10000);
    /* ...two seconds later one that has not noticed it (metadata refreshed
     * every 5 minutes by default) cancels / re-submits. */
    client_cancel(&c, cc, N_OLD);
    client_submit(&c, d, T0 + 21000, N_OLD, "http://e/d-second");

    run_until(&c, T0 + 12200);
    /* A: fired at its new home at T0 + 11.8 s; in flight; the client
     * (noticed) cancels. */
    client_cancel(&c, a, N_NEW);
    run_until(&c, T0 + 30000);

    call_count ca = calls_of(&c, a), cb = calls_of(&c, b), ccc = calls_of(&c, cc),
               cd = calls_of(&c, d);
    size_t a_in_tasks = tasks_records_of(&c, a);
    /* D: which callback ran */
    size_t d_first = 0, d_second = 0;
    {
        for (int32_t q = 0; q < N_NEW; q++) {
            kit_entry *e;
            size_t n = kit_entries(c.k, "ready", q, &e);
            for (size_t i = 0; i < n; i++)
                if (!e[i].marker && !e[i].cancel && strcmp(e[i].id, d) == 0) {
                    d_first += strstr(e[i].url, "d-first") != NULL;
                    d_second += strstr(e[i].url, "d-second") != NULL;
                }
            free(e);
        }
    }

    CHECK(ca.by_attempt[2] == 0,
          "A: a moved task's next attempt was called although the client cancelled during the "
          "failing call (retry took the negative version for 'no version' and wrote the next "
          "attempt to tasks as a new command: %zu records of the key in tasks)",
          a_in_tasks);
    CHECK(cb.by_attempt[2] == 0,
          "B: a next attempt forwarded from the old home after the marker was called although "
          "the client had cancelled before the growth (the old home's floor was not consulted)");
    CHECK(ccc.total == 0,
          "C: a cancel written 2 s after a submit, by a client that had not noticed the growth, "
          "was ignored (shifted below the submit's version)");
    CHECK(d_second == 1 && d_first == 0 && cd.total == 1,
          "D: a re-submit written 2 s after a submit, by a client that had not noticed the "
          "growth, lost (fired d-first %zu, d-second %zu; %zu calls)",
          d_first, d_second, cd.total);
    stop(&c);
    return check_failures - failures_before;
}

int main(void)
{
    int control_failures = scenario(true);
    CHECK(control_failures == 0, "the controls failed: the test itself is wrong");
    scenario(false);
    return check_exit("test_growth_last_word_sim");
}
