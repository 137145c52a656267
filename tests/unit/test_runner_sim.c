/* The real runner (processors/runner*.c) on the simulated Kafka client
 * (tests/sim/sim_kclient.h), through every fault its orderings answer: an
 * abort that takes seconds while another thread would act, a commit that
 * fails in each error class, a successor that fences us, the assignment lost
 * in the middle of a commit, a broker gone for twenty seconds, an abort that
 * fails, an output Kafka refuses, a graceful stop. The processor under it is
 * a small stand-in for the executor: it holds each record until its due time
 * and then "calls" it - an effect outside Kafka, counted by the test, that a
 * rewind cannot take back - and writes a result. What a user would notice is
 * what is checked: every record called once, every result visible once. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "runner.h"
#include "sim_kclient.h"
#include "simkit.h"

#define T0 INT64_C(1800000000000)
#define N_KEYS 6
#define MAX_HELD 64

/* The outside world: the endpoint's call counts, and what happened in order. */
typedef struct world {
    void *self; /* the processor's state (what create returned) */
    int calls[N_KEYS];
    char log[256][32];
    size_t n_log;
} world;

static void note(world *w, const char *what)
{
    if (w->n_log < 256)
        snprintf(w->log[w->n_log++], sizeof w->log[0], "%s", what);
}

/* Whether `first` was logged before `second` (both present), from entry from on. */
static bool logged_before_from(const world *w, size_t from, const char *first, const char *second)
{
    size_t a = SIZE_MAX, b = SIZE_MAX;
    for (size_t i = from; i < w->n_log; i++) {
        if (a == SIZE_MAX && strcmp(w->log[i], first) == 0)
            a = i;
        if (b == SIZE_MAX && strcmp(w->log[i], second) == 0)
            b = i;
    }
    return a != SIZE_MAX && b != SIZE_MAX && a < b;
}

static bool logged_before(const world *w, const char *first, const char *second)
{
    return logged_before_from(w, 0, first, second);
}

static size_t count_logged(const world *w, const char *what)
{
    size_t n = 0;
    for (size_t i = 0; i < w->n_log; i++)
        n += strcmp(w->log[i], what) == 0;
    return n;
}

typedef struct held {
    int key;
    int32_t partition;
    int64_t due;
} held;

typedef struct holder {
    mc_ctx *ctx;
    world *w;
    mc_output *out;
    held items[MAX_HELD];
    size_t n;
} holder;

static void *holder_create(mc_ctx *ctx, const void *arg, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    holder *h = calloc(1, sizeof *h);
    h->ctx = ctx;
    h->w = (world *)arg;
    h->out = mc_ctx_output(ctx, "out");
    h->w->self = h;
    return h;
}

static void holder_destroy(void *self)
{
    free(self);
}

/* A record is "k<N>" -> "<due ms>": held until due. A record over 100
 * bytes gets a result as large at once, which Kafka refuses (see the refused
 * test). */
static int holder_process(void *self, const mc_record *r, mc_ctx *ctx)
{
    holder *h = self;
    if (r->value_len > 100) {
        char big[512];
        memset(big, 'x', sizeof big);
        return mc_ctx_forward(ctx, h->out, r->partition, r->key, r->key_len, big, sizeof big);
    }
    char key[16] = "", value[32] = "";
    memcpy(key, r->key, r->key_len < sizeof key - 1 ? r->key_len : sizeof key - 1);
    memcpy(value, r->value, r->value_len < sizeof value - 1 ? r->value_len : sizeof value - 1);
    if (h->n == MAX_HELD)
        return -1;
    held *it = &h->items[h->n++];
    it->key = atoi(key + 1);
    it->partition = r->partition;
    it->due = strtoll(value, NULL, 10);
    mc_ctx_wakeup_at(ctx, it->due);
    return 0;
}

/* The calls due now, as the executor's HTTP thread makes them; the runner's
 * thread then writes their results. */
static void call_due(holder *h, int64_t now, bool write_results)
{
    for (size_t i = 0; i < h->n;) {
        held *it = &h->items[i];
        if (it->due > now) {
            i++;
            continue;
        }
        h->w->calls[it->key]++;
        note(h->w, "call");
        if (write_results) {
            char key[16], value[32];
            int kl = snprintf(key, sizeof key, "k%d", it->key);
            int vl = snprintf(value, sizeof value, "called k%d", it->key);
            mc_ctx_forward(h->ctx, h->out, it->partition, key, (size_t)kl, value, (size_t)vl);
            mc_ctx_request_commit_now(h->ctx);
        }
        h->items[i] = h->items[--h->n];
    }
}

static int holder_punctuate(void *self, int64_t now, mc_ctx *ctx)
{
    holder *h = self;
    call_due(h, now, true);
    for (size_t i = 0; i < h->n; i++)
        mc_ctx_wakeup_at(ctx, h->items[i].due);
    return 0;
}

static int holder_on_assign(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx)
{
    (void)parts;
    (void)ctx;
    note(((holder *)self)->w, "assign");
    return 0;
}

static void holder_on_revoke(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx)
{
    (void)ctx;
    holder *h = self;
    note(h->w, "revoke");
    for (size_t i = 0; i < h->n;) {
        bool gone = false;
        for (int p = 0; p < parts->cnt; p++)
            gone |= parts->elems[p].partition == h->items[i].partition;
        if (gone)
            h->items[i] = h->items[--h->n];
        else
            i++;
    }
}

static int holder_prepare_commit(void *self, mc_ctx *ctx)
{
    (void)ctx;
    note(((holder *)self)->w, "prepare");
    return 0;
}

static const char *const holder_inputs[] = {"in", NULL};

/* ---- a run ---- */

typedef struct run {
    sim_kafka *k;
    mc_config *cfg;
    mc_metrics *metrics;
    mc_processor proc;
    mc_runner *r;
    sim_kclient *kc;
    world w;
} run;

static void trace_op(void *arg, const char *op)
{
    note(arg, op);
}

/* A runner under instance id `instance` on cluster k, not started yet, with
 * partitions 0 and 1 assigned at its first poll; extra_flag may be NULL. */
static void run_new(run *u, sim_kafka *k, const char *instance, const char *extra_flag)
{
    memset(u, 0, sizeof *u);
    u->k = k;
    char id[64];
    snprintf(id, sizeof id, "--instance-id=%s", instance);
    /* The holder's committed offset does not wait for its calls as the
     * executor's window does: these runs commit its offsets alone as soon
     * as any transaction, which is what the abort orderings here are about. */
    const char *flags[] = {id, "--commit-interval-ms=100", "--offsets-commit-interval-ms=100",
                           extra_flag, NULL};
    u->cfg = kit_config("router", flags);
    u->metrics = mc_metrics_new();
    u->proc = (mc_processor){.name = "holder",
                             .input_topics = holder_inputs,
                             .create = holder_create,
                             .create_arg = &u->w,
                             .destroy = holder_destroy,
                             .process = holder_process,
                             .punctuate = holder_punctuate,
                             .on_assign = holder_on_assign,
                             .on_revoke = holder_on_revoke,
                             .prepare_commit = holder_prepare_commit};
    sim_kclient_slot slot = {.k = k};
    char err[256];
    u->r = mc_runner_new_with_client(&u->proc, u->cfg, u->metrics, NULL, sim_kclient_factory, &slot,
                                     err, sizeof err);
    CHECK(u->r != NULL, "%s", err);
    u->kc = slot.made;
    sim_kc_trace(u->kc, trace_op, &u->w);
    static const int32_t parts[] = {0, 1};
    sim_kc_assign(u->kc, parts, 2);
}

/* The same, started. */
static void run_start(run *u, sim_kafka *k, const char *instance)
{
    run_new(u, k, instance, NULL);
    CHECK(mc_runner_start(u->r) == 0);
}

static void run_free(run *u)
{
    mc_runner_free(u->r);
    mc_metrics_free(u->metrics);
    kit_config_free(u->cfg);
}

/* A runner "a" holding N_KEYS records due at due, 50 ms into the run:
 * assigned, the records consumed into its transaction, none due yet. */
static bool run_until(run *u, int64_t until, int64_t step);
static void submit(sim_kafka *k, int64_t due);
static void start_holding(run *u, sim_kafka *k, int64_t due)
{
    run_start(u, k, "a");
    submit(k, due);
    CHECK(run_until(u, T0 + 50, 10));
}

/* Turns of the loop with the clock moved by step before each, until `until`;
 * false if the loop ended. */
static bool run_until(run *u, int64_t until, int64_t step)
{
    while (sim_now(u->k) < until) {
        if (!mc_runner_turn(u->r))
            return false;
        sim_advance(u->k, step);
    }
    return mc_runner_turn(u->r);
}

static uint64_t counter(run *u, const char *name)
{
    return mc_counter_value(mc_metrics_counter(u->metrics, name, "", "processor=\"holder\""));
}

/* Submits N_KEYS records, k0..k5 over partitions 0 and 1, due at due. */
static void submit(sim_kafka *k, int64_t due)
{
    for (int i = 0; i < N_KEYS; i++) {
        char key[16], value[32];
        int kl = snprintf(key, sizeof key, "k%d", i);
        int vl = snprintf(value, sizeof value, "%" PRId64, due);
        sim_append(k, kit_topic("in"), i % 2, key, (size_t)kl, value, (size_t)vl, NULL, 0);
    }
}

/* How many committed results say "called k<key>". */
static int results_for(sim_kafka *k, int key)
{
    char want[32];
    snprintf(want, sizeof want, "called k%d", key);
    int n = 0;
    for (int32_t p = 0; p < 2; p++) {
        sim_rec *recs;
        size_t m = sim_read(k, kit_topic("out"), p, &recs);
        for (size_t i = 0; i < m; i++)
            n += recs[i].value_len == strlen(want) &&
                 memcmp(recs[i].value, want, recs[i].value_len) == 0;
        free(recs);
    }
    return n;
}

static size_t out_records(sim_kafka *k)
{
    size_t n = 0;
    for (int32_t p = 0; p < 2; p++) {
        sim_rec *recs;
        n += sim_read(k, kit_topic("out"), p, &recs);
        free(recs);
    }
    return n;
}

/* Every key called exactly `calls` times (summed over worlds) and with one
 * visible result. */
static void check_exactly_once(sim_kafka *k, const world *a, const world *b, const char *what)
{
    for (int i = 0; i < N_KEYS; i++) {
        int calls = a->calls[i] + (b ? b->calls[i] : 0);
        CHECK(calls == 1, "%s: k%d called %d times", what, i, calls);
        CHECK(results_for(k, i) == 1, "%s: k%d has %d results", what, i, results_for(k, i));
    }
}

/* ---- the abort order ---- */

static holder *g_holder_of_abort; /* the instance whose HTTP thread acts during the abort */

/* During a slow abort the executor's HTTP thread goes on: it calls whatever
 * it still holds that has come due. */
static void http_thread_during_abort(void *arg)
{
    run *u = arg;
    note(&u->w, "abort in progress");
    if (g_holder_of_abort)
        call_due(g_holder_of_abort, sim_now(u->k), false);
}

static void *runner_self(run *u);

static void test_slow_abort_calls_nothing_twice(void)
{
    sim_kafka *k = sim_kafka_new(2, T0);
    run u;
    start_holding(&u, k, T0 + 500); /* assigned, records held, nothing due */
    CHECK(count_logged(&u.w, "call") == 0);
    g_holder_of_abort = runner_self(&u);
    /* The next commit fails abortable; its abort takes 3 s, while which the
     * held records come due. */
    sim_kc_fail(u.kc, SIM_KC_COMMIT, MC_KERR_ABORTABLE, RD_KAFKA_RESP_ERR__INVALID_ARG, 1);
    sim_kc_delay(u.kc, SIM_KC_ABORT, 3000, http_thread_during_abort, &u);
    CHECK(run_until(&u, T0 + 5000, 20));
    CHECK(counter(&u, "mooncake_transactions_aborted_total") == 1);
    CHECK(logged_before(&u.w, "revoke", "abort in progress"),
          "the processor must let go before the abort waits");
    check_exactly_once(k, &u.w, NULL, "slow abort");
    g_holder_of_abort = NULL;
    run_free(&u);
    sim_kafka_free(k);
}

/* ---- how often it commits ---- */

/* A transaction that wrote nothing (the holder only holds what it read)
 * waits for --offsets-commit-interval-ms; one that wrote commits at
 * --commit-interval-ms; with nothing read at all, nothing is committed. */
static void test_offsets_alone_commit_less_often(void)
{
    sim_kafka *k = sim_kafka_new(2, T0);
    run u;
    run_new(&u, k, "a", "--offsets-commit-interval-ms=1000");
    CHECK(mc_runner_start(u.r) == 0);
    submit(k, T0 + 600000); /* held, nothing written */
    CHECK(run_until(&u, T0 + 900, 20));
    CHECK(sim_committed(k, "t.holder", kit_topic("in"), 0, NULL) < 0,
          "offsets alone committed after %d ms", 900);
    CHECK(run_until(&u, T0 + 1100, 20));
    CHECK(sim_committed(k, "t.holder", kit_topic("in"), 0, NULL) == 3);
    uint64_t idle_from = counter(&u, "mooncake_transactions_committed_total");
    CHECK(run_until(&u, T0 + 6000, 20));
    CHECK(counter(&u, "mooncake_transactions_committed_total") == idle_from,
          "an idle runner committed %" PRIu64 " transactions",
          counter(&u, "mooncake_transactions_committed_total") - idle_from);
    /* A record the holder answers at once (a value over 100 bytes): written,
     * so committed within the commit interval. */
    char big[128];
    memset(big, '9', sizeof big);
    int64_t sent = sim_now(k);
    sim_append(k, kit_topic("in"), 0, "kb", 2, big, sizeof big, NULL, 0);
    while (out_records(k) == 0 && sim_now(k) < sent + 1000)
        CHECK(run_until(&u, sim_now(k) + 20, 20));
    CHECK(out_records(k) == 1 && sim_now(k) <= sent + 200,
          "a written record became visible %" PRId64 " ms after it was read", sim_now(k) - sent);
    run_free(&u);
    sim_kafka_free(k);
}

/* ---- commits failing in each class ---- */

static void test_commit_retriable(void)
{
    sim_kafka *k = sim_kafka_new(2, T0);
    run u;
    run_start(&u, k, "a");
    submit(k, T0 + 100);
    sim_kc_fail(u.kc, SIM_KC_COMMIT, MC_KERR_RETRIABLE, RD_KAFKA_RESP_ERR__TIMED_OUT, 3);
    CHECK(run_until(&u, T0 + 2000, 20));
    CHECK(counter(&u, "mooncake_transactions_aborted_total") == 0);
    check_exactly_once(k, &u.w, NULL, "retriable commit");
    CHECK(sim_committed(k, "t.holder", kit_topic("in"), 0, NULL) == 3);
    CHECK(sim_committed(k, "t.holder", kit_topic("in"), 1, NULL) == 3);
    run_free(&u);
    sim_kafka_free(k);
}

static void test_commit_abortable(void)
{
    sim_kafka *k = sim_kafka_new(2, T0);
    run u;
    start_holding(&u, k, T0 + 1000); /* the failing commit is the consumption's, before any call */
    sim_kc_fail(u.kc, SIM_KC_COMMIT, MC_KERR_ABORTABLE, RD_KAFKA_RESP_ERR__INVALID_ARG, 1);
    CHECK(run_until(&u, T0 + 2000, 20));
    CHECK(counter(&u, "mooncake_transactions_aborted_total") == 1);
    /* The rewind rebuilt the processor: it let go, then was assigned again. */
    CHECK(count_logged(&u.w, "assign") == 2);
    CHECK(logged_before(&u.w, "revoke", "abort"));
    check_exactly_once(k, &u.w, NULL, "abortable commit");
    run_free(&u);
    sim_kafka_free(k);
}

static void test_commit_fatal_then_successor(void)
{
    sim_kafka *k = sim_kafka_new(2, T0);
    run a;
    start_holding(&a, k, T0 + 100);
    sim_kc_fail(a.kc, SIM_KC_COMMIT, MC_KERR_FATAL, RD_KAFKA_RESP_ERR__FATAL, 1);
    bool ran = run_until(&a, T0 + 2000, 20);
    CHECK(!ran, "a fatal commit ends the loop");
    CHECK(mc_runner_failed(a.r));
    CHECK(mc_runner_finish(a.r) == 1);
    /* Nothing it did is visible: its results were not committed, so its
     * successor calls those tasks again (an HTTP call is at least once
     * across a failed commit) and each result appears once. */
    CHECK(out_records(k) == 0);
    CHECK(sim_committed(k, "t.holder", kit_topic("in"), 0, NULL) < 0);
    run_free(&a);
    run b;
    run_start(&b, k, "a"); /* the orchestrator restarts it under its id */
    CHECK(run_until(&b, T0 + 4000, 20));
    for (int i = 0; i < N_KEYS; i++)
        CHECK(results_for(k, i) == 1, "k%d: %d results", i, results_for(k, i));
    run_free(&b);
    sim_kafka_free(k);
}

/* A call made by the instance whose commit then failed fatally is made
 * again by its successor: that is the documented at-least-once edge of an
 * HTTP call. What the runner controls is that the fatal path drops the held
 * work before it gives up, so nothing is called by the dying instance after
 * the failure. */
static void test_fatal_path_drops_work_first(void)
{
    sim_kafka *k = sim_kafka_new(2, T0);
    run a;
    start_holding(&a, k, T0 + 3000);
    mc_runner_stop(a.r); /* not drained (no drained hook): the stop ends the loop */
    sim_kc_fail(a.kc, SIM_KC_COMMIT, MC_KERR_FATAL, RD_KAFKA_RESP_ERR__FATAL, 1);
    g_holder_of_abort = runner_self(&a);
    sim_kc_delay(a.kc, SIM_KC_ABORT, 5000, http_thread_during_abort, &a);
    CHECK(!mc_runner_turn(a.r));
    CHECK(mc_runner_finish(a.r) == 1);
    CHECK(count_logged(&a.w, "call") == 0, "the dying instance called %zu",
          count_logged(&a.w, "call"));
    CHECK(logged_before(&a.w, "revoke", "abort in progress"));
    g_holder_of_abort = NULL;
    run_free(&a);
    sim_kafka_free(k);
}

/* ---- fencing ---- */

static void test_fenced_by_successor(void)
{
    sim_kafka *k = sim_kafka_new(2, T0);
    run a;
    start_holding(&a, k, T0 + 100);
    /* A successor under the same id fences us: our transaction is aborted by
     * the coordinator, the consumer as a static member too. */
    sim_kc_fence(a.kc, true);
    CHECK(!run_until(&a, T0 + 2000, 20));
    CHECK(mc_runner_finish(a.r) == 1);
    CHECK(out_records(k) == 0, "a fenced instance's results are never visible");
    run b;
    run_start(&b, k, "a");
    CHECK(run_until(&b, T0 + 4000, 20));
    for (int i = 0; i < N_KEYS; i++)
        CHECK(results_for(k, i) == 1, "k%d: %d results", i, results_for(k, i));
    run_free(&a);
    run_free(&b);
    sim_kafka_free(k);
}

/* ---- an assignment lost during a commit ---- */

static void test_assignment_lost_during_commit(void)
{
    sim_kafka *k = sim_kafka_new(2, T0);
    run a;
    start_holding(&a, k, T0 + 100);
    /* The group moves on while the commit is under way: the coordinator
     * refuses our offsets (stale generation), the revoke says lost. */
    sim_kc_lose_during(a.kc, SIM_KC_SEND_OFFSETS);
    CHECK(run_until(&a, T0 + 1000, 20));
    CHECK(!sim_kc_assigned(a.kc, kit_topic("in"), 0), "the lost partitions are let go");
    CHECK(out_records(k) == 0, "nothing of the zombie is visible");
    CHECK(sim_committed(k, "t.holder", kit_topic("in"), 0, NULL) < 0);
    /* Its successor takes the partitions and does the work once. The zombie
     * called what came due before it lost them: those calls are made again
     * (an HTTP call is at least once across a lost assignment); none after. */
    size_t zombie_calls = count_logged(&a.w, "call");
    run b;
    run_start(&b, k, "b");
    CHECK(run_until(&b, T0 + 3000, 20));
    CHECK(run_until(&a, T0 + 4000, 20)); /* the zombie, still polling, does nothing more */
    CHECK(count_logged(&a.w, "call") == zombie_calls);
    for (int i = 0; i < N_KEYS; i++) {
        CHECK(results_for(k, i) == 1, "k%d: %d results", i, results_for(k, i));
        CHECK(b.w.calls[i] == 1);
    }
    run_free(&a);
    run_free(&b);
    sim_kafka_free(k);
}

/* A lost assignment's revoke: the processor lets go before the abort,
 * which may wait seconds on the coordinator while the HTTP thread goes on. */
static void test_lost_revoke_lets_go_before_the_abort(void)
{
    sim_kafka *k = sim_kafka_new(2, T0);
    run a;
    start_holding(&a, k, T0 + 500);
    g_holder_of_abort = runner_self(&a);
    sim_kc_lose(a.kc);
    sim_kc_delay(a.kc, SIM_KC_ABORT, 3000, http_thread_during_abort, &a);
    CHECK(run_until(&a, T0 + 4000, 20));
    CHECK(count_logged(&a.w, "call") == 0, "a lost partition's held calls are not made (%zu)",
          count_logged(&a.w, "call"));
    CHECK(logged_before(&a.w, "revoke", "abort in progress"));
    CHECK(out_records(k) == 0);
    g_holder_of_abort = NULL;
    run_free(&a);
    sim_kafka_free(k);
}

/* ---- a broker gone for twenty seconds ---- */

static void test_broker_gone(void)
{
    sim_kafka *k = sim_kafka_new(2, T0);
    run u;
    start_holding(&u, k, T0 + 100);
    sim_kc_broker_gone(u.kc, 20000);
    CHECK(run_until(&u, T0 + 30000, 100));
    CHECK(sim_now(k) >= T0 + 20000);
    CHECK(counter(&u, "mooncake_transactions_aborted_total") == 0,
          "a commit that times out is retried, not aborted");
    check_exactly_once(k, &u.w, NULL, "broker gone");
    run_free(&u);
    sim_kafka_free(k);
}

/* ---- the abort itself failing ---- */

static void test_abort_retried(void)
{
    sim_kafka *k = sim_kafka_new(2, T0);
    run u;
    start_holding(&u, k, T0 + 1000); /* the failing commit is the consumption's, before any call */
    sim_kc_fail(u.kc, SIM_KC_SEND_OFFSETS, MC_KERR_ABORTABLE, RD_KAFKA_RESP_ERR__INVALID_ARG, 1);
    sim_kc_fail(u.kc, SIM_KC_ABORT, MC_KERR_RETRIABLE, RD_KAFKA_RESP_ERR__TIMED_OUT, 2);
    CHECK(run_until(&u, T0 + 2000, 20));
    CHECK(sim_kc_calls(u.kc, SIM_KC_ABORT) >= 3);
    CHECK(counter(&u, "mooncake_transactions_aborted_total") == 1);
    check_exactly_once(k, &u.w, NULL, "abort retried");
    run_free(&u);
    sim_kafka_free(k);
}

static void test_unexpected_error_is_fatal(void)
{
    sim_kafka *k = sim_kafka_new(2, T0);
    run u;
    start_holding(&u, k, T0 + 100);
    sim_kc_fail(u.kc, SIM_KC_SEND_OFFSETS, MC_KERR_UNEXPECTED, RD_KAFKA_RESP_ERR__STATE, 1);
    CHECK(!run_until(&u, T0 + 2000, 20), "neither retriable nor abortable: stop");
    CHECK(mc_runner_finish(u.r) == 1);
    CHECK(out_records(k) == 0);
    run_free(&u);
    sim_kafka_free(k);
}

/* An abort that fails for good: nothing can be committed safely any more. */
static void test_abort_failing_for_good_is_fatal(void)
{
    sim_kafka *k = sim_kafka_new(2, T0);
    run u;
    start_holding(&u, k, T0 + 1000);
    sim_kc_fail(u.kc, SIM_KC_COMMIT, MC_KERR_ABORTABLE, RD_KAFKA_RESP_ERR__INVALID_ARG, 1);
    sim_kc_fail(u.kc, SIM_KC_ABORT, MC_KERR_UNEXPECTED, RD_KAFKA_RESP_ERR__STATE, 1);
    CHECK(!run_until(&u, T0 + 2000, 20), "a failed abort stops the runner");
    CHECK(mc_runner_failed(u.r));
    CHECK(count_logged(&u.w, "call") == 0, "nothing called after the failed abort");
    CHECK(mc_runner_finish(u.r) == 1);
    CHECK(mc_runner_finish(u.r) == 1, "finishing twice is harmless");
    CHECK(out_records(k) == 0);
    run_free(&u);
    sim_kafka_free(k);
}

/* An orderly revoke commits what was done (prepare_commit first), then the
 * processor lets go: the next owner starts after it. */
static void test_orderly_revoke_commits_first(void)
{
    sim_kafka *k = sim_kafka_new(2, T0);
    run u;
    run_start(&u, k, "a");
    CHECK(run_until(&u, T0 + 50, 10));
    submit(k, T0 + 5000);
    CHECK(mc_runner_turn(u.r)); /* consumed into the open transaction */
    size_t from = u.w.n_log;
    sim_kc_revoke(u.kc);
    CHECK(mc_runner_turn(u.r));
    CHECK(logged_before_from(&u.w, from, "prepare", "revoke"),
          "the revoke's commit comes before the processor lets go");
    CHECK(logged_before_from(&u.w, from, "commit", "revoke"));
    CHECK(sim_committed(k, "t.holder", kit_topic("in"), 0, NULL) == 3,
          "what was consumed is committed for the next owner");
    CHECK(counter(&u, "mooncake_transactions_aborted_total") == 0);
    run_free(&u);
    sim_kafka_free(k);
}

/* ---- an output Kafka refuses ---- */

static void test_refused_output_dead_lettered(void)
{
    sim_kafka *k = sim_kafka_new(2, T0);
    sim_set_max_bytes(k, kit_topic("out"), 200);
    run u;
    run_start(&u, k, "a");
    submit(k, T0 + 100);
    char big[300];
    memset(big, '9', sizeof big);
    sim_append(k, kit_topic("in"), 0, "k9", 2, big, sizeof big, NULL, 0);
    submit(k, T0 + 100);
    CHECK(run_until(&u, T0 + 2000, 20));
    sim_rec *dead;
    size_t n_dead = sim_read(k, kit_topic("dead"), 0, &dead);
    free(dead);
    CHECK(n_dead == 1, "the refused input is dead-lettered once (%zu)", n_dead);
    for (int i = 0; i < N_KEYS; i++)
        CHECK(results_for(k, i) == 2, "k%d: %d results", i, results_for(k, i));
    CHECK(counter(&u, "mooncake_refused_outputs_dead_lettered_total") == 1);
    run_free(&u);
    sim_kafka_free(k);
}

/* ---- a graceful stop ---- */

static void test_graceful_stop(void)
{
    sim_kafka *k = sim_kafka_new(2, T0);
    run u;
    run_start(&u, k, "a");
    submit(k, T0 + 100);
    CHECK(run_until(&u, T0 + 500, 20));
    submit(k, T0 + 10000); /* consumed, held, not due: the next owner's */
    CHECK(run_until(&u, T0 + 600, 20));
    mc_runner_stop(u.r);
    CHECK(!mc_runner_turn(u.r));
    CHECK(mc_runner_finish(u.r) == 0);
    CHECK(logged_before(&u.w, "unsubscribe", "revoke"), "a static member leaves the group");
    CHECK(sim_committed(k, "t.holder", kit_topic("in"), 0, NULL) == 6,
          "the last transaction committed what was consumed");
    check_exactly_once(k, &u.w, NULL, "graceful stop");
    run_free(&u);
    sim_kafka_free(k);
}

/* ---- slow commits ---- */

/* Every commit takes 300 ms, three commit intervals (a busy broker): re-arms
 * the delay for the next one. */
static void slow_commits(void *arg)
{
    run *u = arg;
    sim_kc_delay(u->kc, SIM_KC_COMMIT, 300, slow_commits, u);
}

/* Commits slower than the commit interval still take what has arrived in one
 * transaction: the interval counts from when the transaction began, not from
 * before the previous commit (which made every transaction after a slow commit
 * end after its first record, and so every commit slow again: a busy broker
 * brought a router down to one task per commit). */
static void test_slow_commits_still_take_whole_batches(void)
{
    sim_kafka *k = sim_kafka_new(2, T0);
    run u;
    run_start(&u, k, "a");
    submit(k, T0 + 60000);
    slow_commits(&u);
    CHECK(run_until(&u, T0 + 1000, 20)); /* the first six, through slow commits */
    CHECK(sim_committed(k, "t.holder", kit_topic("in"), 0, NULL) == 3);
    for (int i = 0; i < 9; i++)
        submit(k, T0 + 60000); /* 54 more, all there at once */
    int before = sim_kc_calls(u.kc, SIM_KC_COMMIT);
    CHECK(run_until(&u, T0 + 3000, 20));
    CHECK(sim_committed(k, "t.holder", kit_topic("in"), 0, NULL) == 30 &&
              sim_committed(k, "t.holder", kit_topic("in"), 1, NULL) == 30,
          "every record consumed and committed");
    int commits = sim_kc_calls(u.kc, SIM_KC_COMMIT) - before;
    CHECK(commits <= 2, "54 records waiting took %d commits of 300 ms", commits);
    run_free(&u);
    sim_kafka_free(k);
}

/* ---- a Kafka call that never returns ---- */

typedef struct stuck_probe {
    run *u;
    bool stuck;
    char why[256];
} stuck_probe;

static void probe_stuck(void *arg)
{
    stuck_probe *p = arg;
    p->stuck = mc_runner_stuck(p->u->r, p->why, sizeof p->why);
}

/* send_offsets_to_transaction has a 30 s timeout: the watchdog lets it run
 * 30 s more (a request in flight), and calls it stuck after that. */
static void test_stuck_call_is_noticed(void)
{
    sim_kafka *k = sim_kafka_new(2, T0);
    run u;
    run_start(&u, k, "a");
    stuck_probe p = {.u = &u};
    submit(k, T0 + 500000);
    sim_kc_delay(u.kc, SIM_KC_SEND_OFFSETS, 59000, probe_stuck, &p);
    CHECK(run_until(&u, T0 + 200, 20));
    CHECK(sim_kc_calls(u.kc, SIM_KC_SEND_OFFSETS) >= 1);
    CHECK(!p.stuck, "59 s into a call with a 30 s timeout is not stuck yet: %s", p.why);
    submit(k, T0 + 500000);
    sim_kc_delay(u.kc, SIM_KC_SEND_OFFSETS, 61000, probe_stuck, &p);
    CHECK(run_until(&u, sim_now(k) + 200, 20));
    CHECK(p.stuck && strstr(p.why, "send_offsets_to_transaction") &&
              strstr(p.why, "31000 ms after its timeout"),
          "61 s into it is: %s", p.why);
    CHECK(!mc_runner_stuck(u.r, p.why, sizeof p.why), "a call that returned is not stuck");
    run_free(&u);
    sim_kafka_free(k);
}

/* The loop thread sleeps (for real) inside a call 61 s past its start. */
static void never_return(void *arg)
{
    (void)arg;
    sleep(60);
}

/* mc_runner_run's watchdog thread ends the whole process with status 1 (a
 * fatal error: the supervisor restarts it) when the loop thread is stuck in a
 * call, and says which; in a child process, which it kills. */
static void test_stuck_call_exits_the_process(void)
{
    int out[2];
    CHECK(pipe(out) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(out[1], 2);
        close(out[0]);
        alarm(20); /* without a watchdog, SIGALRM ends the child: the test fails */
        sim_kafka *k = sim_kafka_new(2, T0);
        run u;
        run_new(&u, k, "a", "--commit-max-records=1");
        submit(k, T0 + 500000);
        sim_kc_delay(u.kc, SIM_KC_SEND_OFFSETS, 61000, never_return, NULL);
        int rc = mc_runner_run(u.r);
        fprintf(stderr, "mc_runner_run returned %d\n", rc);
        _exit(7);
    }
    close(out[1]);
    char buf[8192];
    size_t n = 0;
    ssize_t got;
    while (n < sizeof buf - 1 && (got = read(out[0], buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)got;
    buf[n] = '\0';
    close(out[0]);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1,
          "the process exits 1 (status %d), within the 60 s the call sleeps: %s", status, buf);
    CHECK(strstr(buf, "a Kafka call is stuck") && strstr(buf, "send_offsets_to_transaction"),
          "the log names the call: %s", buf);
}

static void *runner_self(run *u)
{
    return u->w.self;
}

int main(void)
{
    test_slow_abort_calls_nothing_twice();
    test_commit_retriable();
    test_offsets_alone_commit_less_often();
    test_commit_abortable();
    test_commit_fatal_then_successor();
    test_fatal_path_drops_work_first();
    test_fenced_by_successor();
    test_assignment_lost_during_commit();
    test_lost_revoke_lets_go_before_the_abort();
    test_broker_gone();
    test_abort_retried();
    test_unexpected_error_is_fatal();
    test_abort_failing_for_good_is_fatal();
    test_orderly_revoke_commits_first();
    test_refused_output_dead_lettered();
    test_graceful_stop();
    test_slow_commits_still_take_whole_batches();
    test_stuck_call_is_noticed();
    test_stuck_call_exits_the_process();
    return check_exit("test_runner_sim");
}
