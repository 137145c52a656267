/* The executor driven record by record through tests/sim, with a fake
 * caller in place of libcurl: what a restart calls again (exactly what was
 * unfinished: held, queued, in flight, recalled), bursts larger than one
 * checkpoint can list, recalls that land just before a commit, and Attempts
 * Kafka refuses. What it asserts is what a user would see: the calls made
 * and the Results, Attempts and dead letters committed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broadcast.h"
#include "check.h"
#include "endpoints.h"
#include "executor.h"
#include "fake_caller.h"
#include "simkit.h"

#define T0 INT64_C(1800000000000)

/* The executor processor with the fake caller. */
static mc_processor executor_with(fake_env *env, mc_executor_caller *c)
{
    *c = fake_caller_for(env);
    mc_processor p = mc_executor_processor;
    p.create_arg = c;
    return p;
}

/* Calls made per task id "t<i>", into counts[0..n). */
static void count_calls(const fake_env *env, size_t *counts, size_t n)
{
    memset(counts, 0, n * sizeof *counts);
    for (size_t i = 0; i < env->n_calls; i++) {
        size_t id = (size_t)atol(strchr(env->calls[i].key, '/') + 2);
        if (id < n)
            counts[id]++;
    }
}

/* SUCCEEDED Results per task id "t<i>", into counts[0..n). */
static void count_succeeded(sim_kafka *k, size_t *counts, size_t n)
{
    memset(counts, 0, n * sizeof *counts);
    kit_result *r;
    size_t m = kit_results(k, 0, &r);
    for (size_t i = 0; i < m; i++) {
        size_t id = (size_t)atol(r[i].id + 1);
        if (id < n && r[i].outcome == MC_OUTCOME_SUCCEEDED)
            counts[id]++;
    }
    free(r);
}

/* n tasks "t<i>" due at due, fired to `ready` partition 0 at versions 0..n-1. */
static void ready_tasks(sim_kafka *k, int n, int64_t due)
{
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "t%d", i);
        mc_task t = kit_task(id, due, "http://e/t");
        kit_ready_submit(k, 0, i, &t);
    }
}

/* Thousands of calls due in the same second, all held, read, committed,
 * then a crash before any was made: after the restart every one is called,
 * once, with one SUCCEEDED Result. With more than one checkpoint can list,
 * the rest wait (the partition paused) until calls end, and are read then. */
static void held_burst_across_a_crash(size_t n)
{
    mc_config *cfg = kit_config("executor", NULL);
    sim_kafka *k = sim_kafka_new(1, T0);
    ready_tasks(k, (int)n, T0 + 5000);
    fake_env env = {0};
    mc_executor_caller c;
    env.clock = k;
    mc_processor p = executor_with(&env, &c);
    sim_inst *ex = sim_inst_new(k, &p, cfg, "e1");
    CHECK(sim_assign_all(ex) == 0);
    CHECK(sim_settle(ex, 20) == 0);
    size_t held = fake_caller_pending(env.current);
    CHECK(n < 3900 ? held == n : held > 3500 && held < n, "%zu of %zu held before the crash", held,
          n);
    CHECK(n < 3900 || sim_paused(ex, "ready", 0), "the partition waits for calls to end");
    sim_crash(ex);
    ex = sim_inst_new(k, &p, cfg, "e1");
    CHECK(sim_assign_all(ex) == 0);
    CHECK(sim_settle(ex, 20) == 0);
    sim_set_now(k, T0 + 5000);
    for (int round = 0; round < 50; round++) {
        fake_caller_run(env.current, sim_now(k), NULL, NULL);
        CHECK(sim_settle(ex, 20) == 0);
    }
    size_t *calls = calloc(n, sizeof *calls), *ok = calloc(n, sizeof *ok);
    count_calls(&env, calls, n);
    count_succeeded(k, ok, n);
    size_t never = 0, twice = 0, no_result = 0, two_results = 0;
    for (size_t i = 0; i < n; i++) {
        never += calls[i] == 0;
        twice += calls[i] > 1;
        no_result += ok[i] == 0;
        two_results += ok[i] > 1;
    }
    CHECK(never == 0 && no_result == 0 && twice == 0 && two_results == 0,
          "%zu held: %zu never called, %zu called twice, %zu without a Result, %zu with two", n,
          never, twice, no_result, two_results);
    CHECK(n < 3900 || sim_counter(ex, "mooncake_executor_checkpoint_full_total", NULL) > 0);
    free(calls);
    free(ok);
    sim_crash(ex);
    fake_env_free(&env);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* Calls end out of order; half of them committed, then a crash: the
 * restart calls exactly the other half again, and no finished call gets a
 * second Result. */
static void a_restart_calls_again_exactly_what_was_unfinished(void)
{
    enum { N = 2000 };
    mc_config *cfg = kit_config("executor", NULL);
    sim_kafka *k = sim_kafka_new(1, T0);
    for (int i = 0; i < N; i++) {
        char id[32];
        snprintf(id, sizeof id, "t%d", i);
        /* Odd ones due later: they are held when the even ones are called. */
        mc_task t = kit_task(id, T0 + (i % 2 ? 60000 : 1000), "http://e/t");
        kit_ready_submit(k, 0, i, &t);
    }
    fake_env env = {0};
    mc_executor_caller c;
    env.clock = k;
    mc_processor p = executor_with(&env, &c);
    sim_inst *ex = sim_inst_new(k, &p, cfg, "e1");
    CHECK(sim_assign_all(ex) == 0 && sim_settle(ex, 20) == 0);
    sim_set_now(k, T0 + 1000);
    CHECK(fake_caller_run(env.current, sim_now(k), NULL, NULL) == N / 2);
    CHECK(sim_settle(ex, 20) == 0);
    sim_crash(ex);
    size_t before = env.n_calls;
    ex = sim_inst_new(k, &p, cfg, "e1");
    CHECK(sim_assign_all(ex) == 0 && sim_settle(ex, 20) == 0);
    /* Offset 0 finished first and is below the committed offset; the other
     * finished ones are read again and skipped. */
    CHECK(sim_counter(ex, "mooncake_executor_skipped_total", NULL) == N / 2 - 1,
          "the finished half is skipped: %llu",
          (unsigned long long)sim_counter(ex, "mooncake_executor_skipped_total", NULL));
    sim_set_now(k, T0 + 60000);
    fake_caller_run(env.current, sim_now(k), NULL, NULL);
    CHECK(sim_settle(ex, 20) == 0);
    CHECK(env.n_calls - before == N / 2, "%zu calls after the restart", env.n_calls - before);
    size_t calls[N], ok[N];
    count_calls(&env, calls, N);
    count_succeeded(k, ok, N);
    for (int i = 0; i < N; i++) {
        CHECK(calls[i] == 1 && ok[i] == 1, "t%d: %zu calls, %zu Results", i, calls[i], ok[i]);
        if (calls[i] != 1 || ok[i] != 1)
            break;
    }
    sim_crash(ex);
    fake_env_free(&env);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A recall read and committed before the caller acted on it, then a crash:
 * the restarted executor must still not call the recalled task. */
static void a_recall_committed_before_it_acted_survives_a_crash(void)
{
    mc_config *cfg = kit_config("executor", NULL);
    sim_kafka *k = sim_kafka_new(1, T0);
    mc_task t = kit_task("t0", T0 + 200, "http://e/t");
    kit_ready_submit(k, 0, 10, &t);
    kit_ready_recall(k, 0, 11, "t0");
    fake_env env = {0};
    mc_executor_caller c;
    env.clock = k;
    mc_processor p = executor_with(&env, &c);
    sim_inst *ex = sim_inst_new(k, &p, cfg, "e1");
    CHECK(sim_assign_all(ex) == 0);
    CHECK(sim_poll(ex, 10) == 2); /* the caller has recalled it; not reported yet */
    CHECK(sim_commit(ex) == 0);
    sim_crash(ex);
    ex = sim_inst_new(k, &p, cfg, "e1");
    CHECK(sim_assign_all(ex) == 0 && sim_settle(ex, 20) == 0);
    sim_set_now(k, T0 + 1000);
    fake_caller_run(env.current, sim_now(k), NULL, NULL);
    CHECK(sim_settle(ex, 20) == 0);
    CHECK(env.n_calls == 0, "a recalled task was called after a restart");
    kit_result *r;
    size_t n = kit_results(k, 0, &r);
    CHECK(n == 1 && r[0].outcome == MC_OUTCOME_CANCELLED, "%zu Results", n);
    free(r);
    sim_crash(ex);
    fake_env_free(&env);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* The router's recall of a cancel can land in `ready` before the wheel's
 * fire of the version it cancels (the wheel fired while the router's
 * transaction was open): the fire read after the recall is not called and
 * has one CANCELLED Result; a newer version after both is called. */
static void a_fire_read_after_a_newer_recall_is_not_called(void)
{
    mc_config *cfg = kit_config("executor", NULL);
    sim_kafka *k = sim_kafka_new(1, T0);
    kit_ready_recall(k, 0, 11, "t0");
    mc_task t = kit_task("t0", T0 + 200, "http://e/old");
    kit_ready_submit(k, 0, 10, &t);
    mc_task other = kit_task("t1", T0 + 200, "http://e/other");
    kit_ready_submit(k, 0, 9, &other);
    fake_env env = {0};
    mc_executor_caller c;
    env.clock = k;
    mc_processor p = executor_with(&env, &c);
    sim_inst *ex = sim_inst_new(k, &p, cfg, "e1");
    CHECK(sim_assign_all(ex) == 0 && sim_settle(ex, 20) == 0);
    sim_set_now(k, T0 + 1000);
    fake_caller_run(env.current, sim_now(k), NULL, NULL);
    CHECK(sim_settle(ex, 20) == 0);
    CHECK(env.n_calls == 1 && strstr(env.calls[0].key, "t1"),
          "%zu calls: only the other key's, not the cancelled version", env.n_calls);
    mc_task newer = kit_task("t0", T0 + 1200, "http://e/new");
    kit_ready_submit(k, 0, 12, &newer);
    CHECK(sim_settle(ex, 20) == 0);
    sim_set_now(k, T0 + 1500);
    fake_caller_run(env.current, sim_now(k), NULL, NULL);
    CHECK(sim_settle(ex, 20) == 0);
    CHECK(env.n_calls == 2 && env.calls[1].version.v == 12, "the newer version is called");
    kit_result *r;
    size_t n = kit_results(k, 0, &r), cancelled = 0, succeeded = 0;
    for (size_t i = 0; i < n; i++) {
        cancelled += r[i].outcome == MC_OUTCOME_CANCELLED && strcmp(r[i].id, "t0") == 0;
        succeeded += r[i].outcome == MC_OUTCOME_SUCCEEDED;
    }
    CHECK(cancelled == 1 && succeeded == 2, "%zu CANCELLED, %zu SUCCEEDED of %zu Results",
          cancelled, succeeded, n);
    free(r);
    sim_crash(ex);
    fake_env_free(&env);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

static long fail_500(mc_call *j, void *arg)
{
    (void)j;
    (void)arg;
    return 500;
}

/* An Attempt Kafka refuses (a task near the size limit, and the response
 * snippet on top): the attempt fails for good with a Result saying why, the
 * task goes to the dead topic, and nothing is called again. */
static void a_refused_attempt_is_dead_lettered_not_lost(void)
{
    static const char *flags[] = {"--executor-snippet-bytes=4096", NULL};
    mc_config *cfg = kit_config("executor", flags);
    sim_kafka *k = sim_kafka_new(1, T0);
    sim_set_max_bytes(k, kit_topic("retry"), 3000);
    mc_task t = kit_task("t0", T0, "http://e/t");
    static uint8_t body[2990];
    memset(body, 'x', sizeof body);
    t.callback.body = body;
    t.callback.body_len = sizeof body;
    kit_ready_submit(k, 0, 10, &t);
    fake_env env = {0};
    mc_executor_caller c;
    env.clock = k;
    mc_processor p = executor_with(&env, &c);
    sim_inst *ex = sim_inst_new(k, &p, cfg, "e1");
    CHECK(sim_assign_all(ex) == 0 && sim_settle(ex, 20) == 0);
    fake_caller_run(env.current, sim_now(k), fail_500, NULL);
    CHECK(sim_settle(ex, 20) == 0);
    CHECK(kit_count_keyed(k, "retry", 0) == 0, "no Attempt");
    kit_result *r;
    size_t n = kit_results(k, 0, &r);
    CHECK(n == 1 && r[0].outcome == MC_OUTCOME_FAILED_PERMANENTLY && strstr(r[0].error, "refused"),
          "%zu Results: %s", n, n ? r[0].error : "");
    free(r);
    CHECK(kit_count_keyed(k, "dead", 0) == 1, "the task is in the dead topic");
    sim_crash(ex);
    ex = sim_inst_new(k, &p, cfg, "e1");
    CHECK(sim_assign_all(ex) == 0 && sim_settle(ex, 20) == 0);
    CHECK(fake_caller_pending(env.current) == 0 && env.n_calls == 1, "called once, not again");
    sim_crash(ex);
    fake_env_free(&env);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A partition paused for too many unfinished calls, then an abort (the
 * runner rewinds and the executor starts the partition afresh): it must not
 * stay paused, and every task is called. */
static void a_paused_partition_resumes_after_an_abort(void)
{
    static const char *flags[] = {"--executor-max-unfinished=4", NULL};
    mc_config *cfg = kit_config("executor", flags);
    sim_kafka *k = sim_kafka_new(1, T0);
    ready_tasks(k, 10, T0);
    fake_env env = {0};
    mc_executor_caller c;
    env.clock = k;
    mc_processor p = executor_with(&env, &c);
    sim_inst *ex = sim_inst_new(k, &p, cfg, "e1");
    CHECK(sim_assign_all(ex) == 0 && sim_settle(ex, 20) == 0);
    CHECK(sim_paused(ex, "ready", 0), "paused at 4 unfinished");
    CHECK(sim_abort(ex) == 0);
    CHECK(!sim_paused(ex, "ready", 0), "unpaused after the rewind");
    for (int round = 0; round < 10; round++) {
        CHECK(sim_settle(ex, 20) == 0);
        fake_caller_run(env.current, sim_now(k), NULL, NULL);
    }
    CHECK(sim_settle(ex, 20) == 0);
    size_t ok[10];
    count_succeeded(k, ok, 10);
    for (int i = 0; i < 10; i++)
        CHECK(ok[i] == 1, "t%d: %zu Results", i, ok[i]);
    CHECK(sim_gauge(ex, "mooncake_executor_paused_partitions", NULL) == 0);
    sim_crash(ex);
    fake_env_free(&env);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* The broker goes away; the executor's runner is stuck in a commit while
 * its session expires, and its held calls fall due. The group has given
 * the partition to another executor, which calls them; the stuck one must
 * start none of them (librdkafka already says the assignment is lost), or
 * the endpoint sees each twice with no turn of ours between. Once it polls
 * and lets go, it calls again what it is given. */
static void an_executor_whose_partitions_were_taken_starts_no_call(void)
{
    enum { N = 200 };
    mc_config *cfg = kit_config("executor", NULL);
    sim_kafka *k = sim_kafka_new(1, T0);
    ready_tasks(k, N, T0 + 1000);
    fake_env env1 = {0}, env2 = {0};
    mc_executor_caller c1, c2;
    env1.clock = env2.clock = k;
    mc_processor p1 = executor_with(&env1, &c1), p2 = executor_with(&env2, &c2);
    sim_inst *e1 = sim_inst_new(k, &p1, cfg, "e1");
    CHECK(sim_assign_all(e1) == 0 && sim_settle(e1, 20) == 0);
    CHECK(fake_caller_pending(env1.current) == N, "all held by e1");

    /* e1's session expires; the group moves on without it. */
    sim_new_generation(k, KIT_PREFIX "executor");
    sim_set_assignment_lost(e1);
    sim_set_now(k, T0 + 1000);
    CHECK(fake_caller_run(env1.current, sim_now(k), NULL, NULL) == 0,
          "e1 started %zu calls of partitions it lost", env1.n_calls);

    sim_inst *e2 = sim_inst_new(k, &p2, cfg, "e2");
    CHECK(sim_assign_all(e2) == 0 && sim_settle(e2, 20) == 0);
    fake_caller_run(env2.current, sim_now(k), NULL, NULL);
    CHECK(sim_settle(e2, 20) == 0);
    CHECK(env2.n_calls == N, "the new owner made %zu of %d calls", env2.n_calls, N);

    /* e1 gets back to its loop: the revoke drops what it held. */
    fake_caller_run(env1.current, sim_now(k), NULL, NULL);
    sim_revoke_all(e1);
    CHECK(fake_caller_pending(env1.current) == 0, "e1 let go of what it held");
    size_t ok[N], calls1[N], calls2[N];
    count_calls(&env1, calls1, N);
    count_calls(&env2, calls2, N);
    count_succeeded(k, ok, N);
    for (int i = 0; i < N; i++) {
        CHECK(calls1[i] + calls2[i] == 1 && ok[i] == 1, "t%d: %zu + %zu calls, %zu Results", i,
              calls1[i], calls2[i], ok[i]);
        if (calls1[i] + calls2[i] != 1 || ok[i] != 1)
            break;
    }

    /* The partition comes back to e1: its calls start again. */
    CHECK(sim_revoke_all(e2) == 0);
    sim_new_generation(k, KIT_PREFIX "executor");
    mc_task t = kit_task("t0", T0 + 2000, "http://e/t");
    kit_ready_submit(k, 0, N + 1, &t);
    CHECK(sim_assign_all(e1) == 0 && sim_settle(e1, 20) == 0);
    sim_set_now(k, T0 + 2000);
    CHECK(fake_caller_run(env1.current, sim_now(k), NULL, NULL) == 1, "e1 calls again");
    sim_crash(e1);
    sim_crash(e2);
    fake_env_free(&env1);
    fake_env_free(&env2);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* Kafka-target tasks "t<i>" due at due, to topic, fired to `ready` partition 0. */
static void ready_deliveries(sim_kafka *k, int n, int64_t due, const char *topic)
{
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "t%d", i);
        mc_task t = kit_task(id, due, "");
        t.has_kafka_target = true;
        t.kafka_target = (mc_kafka_target){.topic = topic,
                                           .key = (const uint8_t *)id,
                                           .key_len = strlen(id),
                                           .has_key = true,
                                           .value = (const uint8_t *)"v",
                                           .value_len = 1,
                                           .has_value = true};
        kit_ready_submit(k, 0, i, &t);
    }
}

/* Committed records of topic (every partition) per task id "t<i>", by their
 * mooncake-task header, into counts[0..n). */
static size_t count_delivered(sim_kafka *k, const char *topic, size_t *counts, size_t n)
{
    memset(counts, 0, n * sizeof *counts);
    size_t total = 0;
    for (int32_t p = 0; p < sim_partitions(k, topic); p++) {
        sim_rec *r;
        size_t m = sim_read(k, topic, p, &r);
        for (size_t i = 0; i < m; i++) {
            const mc_header *h = sim_rec_header(&r[i], "mooncake-task");
            char key[64] = ""; /* "a/t<i>"; header values are not NUL-terminated */
            if (h && h->len < sizeof key)
                memcpy(key, h->value, h->len);
            const char *slash = strchr(key, '/');
            size_t id = slash && slash[1] == 't' ? (size_t)atol(slash + 2) : n;
            if (id < n)
                counts[id]++;
            total++;
        }
        free(r);
    }
    return total;
}

/* Deliveries of Kafka targets: produced in the transaction that writes
 * their Results, so an abort and a kill -9 before the commit each take them
 * back and the next turn (or owner) delivers them again, and the target
 * topic holds each exactly once, with one SUCCEEDED Result. */
static void deliveries_survive_an_abort_and_a_crash(void)
{
    enum { N = 200 };
    const char *target = "orders.expired";
    mc_config *cfg = kit_config("executor", NULL);
    free(cfg->kafka_targets);
    cfg->kafka_targets = strdup("a=orders.*");
    sim_kafka *k = sim_kafka_new(1, T0);
    sim_set_partitions(k, target, 3);
    ready_deliveries(k, N, T0 + 1000, target);
    fake_env env = {0};
    mc_executor_caller c;
    env.clock = k;
    mc_processor p = executor_with(&env, &c);
    sim_inst *ex = sim_inst_new(k, &p, cfg, "e1");
    CHECK(ex && sim_assign_all(ex) == 0 && sim_settle(ex, 20) == 0);
    sim_set_now(k, T0 + 1000);
    /* Delivered into the open transaction, then an abort: nothing visible. */
    CHECK(fake_caller_run(env.current, sim_now(k), NULL, NULL) == N);
    CHECK(sim_run_fds(ex) == 0);
    size_t got[N];
    CHECK(count_delivered(k, target, got, N) == 0, "records visible before the commit");
    CHECK(sim_abort(ex) == 0);
    /* Read again: delivered again, then a kill -9 before the commit. */
    CHECK(sim_settle(ex, 20) == 0);
    CHECK(fake_caller_run(env.current, sim_now(k), NULL, NULL) == N, "the abort gives them back");
    CHECK(sim_run_fds(ex) == 0);
    sim_crash(ex);
    CHECK(count_delivered(k, target, got, N) == 0);
    /* The next owner delivers each once, and commits. */
    ex = sim_inst_new(k, &p, cfg, "e1");
    CHECK(ex && sim_assign_all(ex) == 0 && sim_settle(ex, 20) == 0);
    CHECK(fake_caller_run(env.current, sim_now(k), NULL, NULL) == N);
    CHECK(sim_settle(ex, 20) == 0);
    CHECK(sim_commits_now(ex) > 0, "a delivery is committed at once");
    size_t total = count_delivered(k, target, got, N), ok[N];
    count_succeeded(k, ok, N);
    CHECK(total == N, "%zu records for %d tasks", total, N);
    for (int i = 0; i < N; i++) {
        CHECK(got[i] == 1 && ok[i] == 1, "t%d: %zu records, %zu Results", i, got[i], ok[i]);
        if (got[i] != 1 || ok[i] != 1)
            break;
    }
    CHECK(sim_counter(ex, "mooncake_executor_delivered_total", NULL) == N);
    sim_stop(ex);
    fake_env_free(&env);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* ---- sharding broadcasts ------------------------------------------------------------ */

static const char *const MEMBERS[3] = {"http://a:8080", "http://b:8080",
                                       "http://c.svc:80 (10.0.0.7)"};

/* SHARDING_BROADCAST tasks "<prefix><i>" due at due, fired to `ready` partition 0. */
static void ready_broadcasts(sim_kafka *k, int n, int64_t due, const char *prefix)
{
    static const mc_kv route[1] = {{MC_ROUTE_METADATA, "SHARDING_BROADCAST"}};
    for (int i = 0; i < n; i++) {
        char id[1100];
        snprintf(id, sizeof id, "%s%d", prefix, i);
        mc_task t = kit_task(id, due, "group://g/x");
        t.metadata = route;
        t.n_metadata = 1;
        t.has_late_policy = true; /* the broadcast's: judged once, not on its shards */
        t.late_policy = (mc_late_policy){.action = MC_LATE_DROP, .max_late_ms = 1000};
        kit_ready_submit(k, 0, i, &t);
    }
}

/* The committed shards in `tasks`, counted per broadcast "b<i>" and shard into
 * shards[i][s]; each must be pinned to member s and told its index and the total. */
static size_t count_shards(sim_kafka *k, int n, size_t (*shards)[3])
{
    memset(shards, 0, (size_t)n * sizeof *shards);
    sim_rec *r;
    size_t m = sim_read(k, kit_topic("tasks"), 0, &r), total = 0;
    mc_arena *a = mc_arena_new();
    for (size_t i = 0; i < m; i++) {
        mc_command c;
        mc_arena_reset(a);
        int b, s;
        if (mc_decode_command(NULL, r[i].value, r[i].value_len, a, &c, NULL, 0) != MC_CODEC_OK ||
            c.kind != MC_CMD_SUBMIT || sscanf(c.submit.task_id, "b%d#shard-%d", &b, &s) != 2 ||
            b < 0 || b >= n || s < 0 || s > 2)
            continue;
        const mc_task *t = &c.submit;
        const char *index = NULL, *total_h = NULL;
        for (size_t h = 0; h < t->callback.n_headers; h++) {
            if (strcmp(t->callback.headers[h].key, MC_SHARD_INDEX_HEADER) == 0)
                index = t->callback.headers[h].value;
            if (strcmp(t->callback.headers[h].key, MC_SHARD_TOTAL_HEADER) == 0)
                total_h = t->callback.headers[h].value;
        }
        const char *member = mc_task_shard_member(t);
        CHECK(member && strcmp(member, MEMBERS[s]) == 0 && index && atoi(index) == s && total_h &&
                  strcmp(total_h, "3") == 0 && !t->has_late_policy && t->attempt == 1,
              "%s: member %s, index %s, total %s", t->task_id, member ? member : "-",
              index ? index : "-", total_h ? total_h : "-");
        shards[b][s]++;
        total++;
    }
    mc_arena_free(a);
    free(r);
    return total;
}

/* The committed StartBroadcasts in `job-commands`, per broadcast "b<i>". */
static size_t count_starts(sim_kafka *k, int n, size_t *starts)
{
    memset(starts, 0, (size_t)n * sizeof *starts);
    sim_rec *r;
    size_t m = sim_read(k, kit_topic("job-commands"), 0, &r), total = 0;
    mc_arena *a = mc_arena_new();
    for (size_t i = 0; i < m; i++) {
        mc_job_command c;
        mc_arena_reset(a);
        int b;
        if (mc_decode_job_command(NULL, r[i].value, r[i].value_len, a, &c, NULL, 0) !=
                MC_CODEC_OK ||
            c.kind != MC_JOBCMD_START_BROADCAST ||
            sscanf(c.start_broadcast.task.task_id, "b%d", &b) != 1 || b < 0 || b >= n)
            continue;
        CHECK(c.start_broadcast.n_members == 3 &&
                  strcmp(c.start_broadcast.members[2], MEMBERS[2]) == 0,
              "b%d: %zu members", b, c.start_broadcast.n_members);
        starts[b]++;
        total++;
    }
    mc_arena_free(a);
    free(r);
    return total;
}

/* A broadcast's shards and its StartBroadcast go out in the transaction that ends its
 * `ready` record: an abort and a kill -9 before the commit each take all of them back,
 * and the next owner submits each shard and each StartBroadcast exactly once; the
 * broadcast itself gets no Result from the executor (the jobs role writes it). */
static void broadcasts_fan_out_all_or_none(void)
{
    enum { N = 100 };
    mc_config *cfg = kit_config("executor", NULL);
    sim_kafka *k = sim_kafka_new(1, T0);
    ready_broadcasts(k, N, T0 + 1000, "b");
    fake_env env = {.clock = k, .members = MEMBERS, .n_members = 3};
    mc_executor_caller c;
    mc_processor p = executor_with(&env, &c);
    sim_inst *ex = sim_inst_new(k, &p, cfg, "e1");
    CHECK(ex && sim_assign_all(ex) == 0 && sim_settle(ex, 20) == 0);
    sim_set_now(k, T0 + 5000); /* late past the broadcast's policy: it is not a shard's */
    size_t shards[N][3], starts[N];
    CHECK(fake_caller_run(env.current, sim_now(k), NULL, NULL) == N);
    CHECK(sim_run_fds(ex) == 0);
    CHECK(count_shards(k, N, shards) == 0 && count_starts(k, N, starts) == 0,
          "visible before the commit");
    CHECK(sim_abort(ex) == 0);
    CHECK(sim_settle(ex, 20) == 0);
    CHECK(fake_caller_run(env.current, sim_now(k), NULL, NULL) == N, "the abort gives them back");
    CHECK(sim_run_fds(ex) == 0);
    sim_crash(ex);
    CHECK(count_shards(k, N, shards) == 0 && count_starts(k, N, starts) == 0);
    ex = sim_inst_new(k, &p, cfg, "e1");
    CHECK(ex && sim_assign_all(ex) == 0 && sim_settle(ex, 20) == 0);
    CHECK(fake_caller_run(env.current, sim_now(k), NULL, NULL) == N);
    CHECK(sim_settle(ex, 20) == 0);
    CHECK(sim_commits_now(ex) > 0, "a fan-out is committed at once");
    CHECK(count_shards(k, N, shards) == 3 * N && count_starts(k, N, starts) == N,
          "%zu shards, %zu StartBroadcasts", count_shards(k, N, shards),
          count_starts(k, N, starts));
    for (int i = 0; i < N; i++)
        CHECK(shards[i][0] == 1 && shards[i][1] == 1 && shards[i][2] == 1 && starts[i] == 1,
              "b%d: shards %zu %zu %zu, %zu StartBroadcasts", i, shards[i][0], shards[i][1],
              shards[i][2], starts[i]);
    kit_result *r;
    CHECK(kit_results(k, 0, &r) == 0, "the executor wrote a Result for a broadcast");
    free(r);
    CHECK(sim_counter(ex, "mooncake_executor_shards_total", NULL) == 3 * N);
    sim_stop(ex);
    fake_env_free(&env);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* Bytes (key and value) of the largest shard and of the StartBroadcast in a cluster. */
static void fan_out_sizes(sim_kafka *k, size_t *shard, size_t *start)
{
    *shard = *start = 0;
    sim_rec *r;
    size_t m = sim_read(k, kit_topic("tasks"), 0, &r);
    for (size_t i = 0; i < m; i++)
        if (r[i].key_len + r[i].value_len > *shard)
            *shard = r[i].key_len + r[i].value_len;
    free(r);
    m = sim_read(k, kit_topic("job-commands"), 0, &r);
    for (size_t i = 0; i < m; i++)
        *start = r[i].key_len + r[i].value_len;
    free(r);
}

/* One broadcast "<prefix>0" to these members, in a cluster whose producer refuses records
 * larger than limit (0: none), as librdkafka refuses them (one bound for every topic).
 * Returns whether it went out (its shards and StartBroadcast committed) and checks that
 * otherwise nothing of it did: it failed for good, with a Result saying why and a dead
 * letter. *shard and *start: the sizes of what went out. */
static bool one_broadcast(const char *prefix, const char *const *members, size_t n, size_t limit,
                          const char *why, size_t *shard, size_t *start)
{
    mc_config *cfg = kit_config("executor", NULL);
    sim_kafka *k = sim_kafka_new(1, T0);
    if (limit) {
        sim_set_max_bytes(k, kit_topic("tasks"), limit);
        sim_set_max_bytes(k, kit_topic("job-commands"), limit);
    }
    ready_broadcasts(k, 1, T0, prefix);
    fake_env env = {.clock = k, .members = members, .n_members = n};
    mc_executor_caller cl;
    mc_processor p = executor_with(&env, &cl);
    sim_inst *ex = sim_inst_new(k, &p, cfg, "e1");
    CHECK(ex && sim_assign_all(ex) == 0 && sim_settle(ex, 20) == 0);
    CHECK(fake_caller_run(env.current, sim_now(k), NULL, NULL) == 1);
    CHECK(sim_settle(ex, 20) == 0);
    fan_out_sizes(k, shard, start);
    kit_result *r;
    size_t results = kit_results(k, 0, &r);
    bool out = *shard && *start;
    if (why) {
        CHECK(!*shard && !*start, "%s: a shard (%zu bytes) or the StartBroadcast (%zu) went out",
              why, *shard, *start);
        CHECK(results == 1 && r[0].outcome == MC_OUTCOME_FAILED_PERMANENTLY &&
                  strstr(r[0].error, why),
              "%zu Results: %s", results, results ? r[0].error : "");
        CHECK(kit_count_keyed(k, "dead", 0) == 1, "%s: the task is not in the dead topic", why);
    }
    free(r);
    sim_stop(ex);
    fake_env_free(&env);
    sim_kafka_free(k);
    kit_config_free(cfg);
    return out;
}

/* A broadcast that cannot go out whole goes out not at all: a shard whose key would be
 * too long; a StartBroadcast larger than Kafka takes, when the shards are not; a shard
 * larger than Kafka takes, when the StartBroadcast is not (the largest record goes first,
 * so it is refused before anything else is in the transaction). */
static void a_broadcast_that_cannot_go_out_whole_goes_out_not_at_all(void)
{
    size_t shard, start;
    char prefix[1100] = "b"; /* "a/" + "b" + 1015 x + "0": 1019 bytes; its shards' 1027 */
    memset(prefix + 1, 'x', 1015);
    prefix[1016] = '\0';
    one_broadcast(prefix, MEMBERS, 3, 0, "the key of shard", &shard, &start);
    /* Three long members: the StartBroadcast names them all, a shard one. */
    static char urls[3][400];
    const char *long_members[3];
    for (int i = 0; i < 3; i++) {
        snprintf(urls[i], sizeof urls[i], "http://m%d.example/%0300d", i, 0);
        long_members[i] = urls[i];
    }
    CHECK(one_broadcast("b", long_members, 3, 0, NULL, &shard, &start) && start > shard,
          "sizes: shard %zu, StartBroadcast %zu", shard, start);
    one_broadcast("b", long_members, 3, (shard + start) / 2, "refused", &shard, &start);
    /* One short member: its shard, with the marks, is larger than the StartBroadcast. */
    static const char *const one[1] = {"http://a:8080"};
    CHECK(one_broadcast("b", one, 1, 0, NULL, &shard, &start) && shard > start,
          "sizes: shard %zu, StartBroadcast %zu", shard, start);
    one_broadcast("b", one, 1, (shard + start) / 2, "refused", &shard, &start);
}

int main(void)
{
    held_burst_across_a_crash(3000);
    held_burst_across_a_crash(6000);
    a_restart_calls_again_exactly_what_was_unfinished();
    a_recall_committed_before_it_acted_survives_a_crash();
    a_fire_read_after_a_newer_recall_is_not_called();
    a_refused_attempt_is_dead_lettered_not_lost();
    a_paused_partition_resumes_after_an_abort();
    an_executor_whose_partitions_were_taken_starts_no_call();
    deliveries_survive_an_abort_and_a_crash();
    broadcasts_fan_out_all_or_none();
    a_broadcast_that_cannot_go_out_whole_goes_out_not_at_all();
    return check_exit("test_executor_sim");
}
