/* Growing the partition count (layout.h), the whole pipeline driven
 * through tests/sim as `mooncakectl partitions grow` drives a cluster:
 * topics grown, the layout set growing, routers stop and mark their
 * partitions, the wheel and the store move the keys whose home changes,
 * the layout set grown. Tasks pending near and far, calls in flight and
 * failing, and commands written before the growth but routed after it all
 * end where they should: every task not cancelled is called once at its
 * time, and a cancel or re-submit written after the growth wins over what
 * moved, whichever partition it moved from - also against the next attempt
 * of a call failing across the growth, and between a client that has
 * noticed the growth and one that has not (the last part of the file). */
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
#include "sim_pipeline.h"
#include "simkit.h"
#include "store.h"
#include "wheel.h"

#define T0 INT64_C(1800000000000)
#define N_OLD 2
#define N_NEW 5
#define TASKS 400

static const char *const roles_flags[] = {"--horizon-ms=5000", "--wheel-lead-ms=200", NULL};

typedef sim_pipeline cluster;

static void start(cluster *c)
{
    CHECK(sim_pipeline_start(c, N_OLD, T0, roles_flags) == 0);
}

static void stop(cluster *c)
{
    sim_pipeline_stop(c);
}

/* A rebalance of every group: all revoked, then all assigned. */
static void rebalance(cluster *c)
{
    CHECK(sim_pipeline_rebalance(c) == 0);
}

/* How the endpoint answers first attempts (later ones: 200), by the id's
 * first letter:
 *   f  500;
 *   g  500, but only at T0 + 6 s: in flight across the start of the growth
 *      (and Retry-After 60, so its next attempt waits the policy's 10 s);
 *   A  in flight until T0 + 12.5 s, then 500 (and a, its control);
 *   B  in flight until T0 + 6 s, across the marker, then 500 (and b);
 *   anything else 200. */
static long respond(mc_call *j, void *arg)
{
    const int64_t *now = arg;
    if (j->task.attempt > 1)
        return 200;
    switch (j->task.task_id[0]) {
    case 'f':
        return 500;
    case 'g':
        if (*now < T0 + 6000)
            return -1;
        snprintf(j->retry_after, sizeof j->retry_after, "60");
        return 500;
    case 'A':
    case 'a':
        return *now < T0 + 12500 ? -1 : 500;
    case 'B':
    case 'b':
        return *now < T0 + 6000 ? -1 : 500;
    default:
        return 200;
    }
}

/* Runs the clock to `until` in 50 ms steps, the endpoint answering. */
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
        CHECK(sim_pipeline_restart(&c, SIM_STORE, "i2") == 0);
        CHECK(sim_pipeline_restart(&c, SIM_WHEEL, "i2") == 0);
    }
    run_until(&c, T0 + 5500); /* routers stop and mark; wheel and store move keys */
    sim_set_partitions(c.k, kit_topic("tasks"), N_NEW);
    mc_layout grown = {.partitions = N_NEW, .previous = N_OLD, .n_split = N_OLD};
    grown.split = kit_split(c.k, N_OLD);
    rebalance(&c);
    run_until(&c, T0 + 7000);
    for (int32_t q = 0; q < N_OLD; q++) {
        CHECK(kit_committed_says(c.k, "store", q, "l=5"), "store %d has not moved its keys", q);
        CHECK(kit_committed_says(c.k, "wheel", q, "l=5"), "wheel %d has not moved its keys", q);
        CHECK(kit_committed_says(c.k, "wheel", q, "d=1"), "wheel %d: calls before the marker", q);
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
    client_submit(&c, "x-before", T0 + 1000, N_OLD, "http://e/x");
    run_until(&c, T0 + 1500);
    CHECK(c.env.n_calls == 1);
    static const char *all[] = {"tasks", "store", "wheel", "ready", "retry", "results", "dead"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sim_set_partitions(c.k, kit_topic(all[i]), N_NEW);
    rebalance(&c);
    client_submit(&c, "x-after", T0 + 3000, N_NEW, "http://e/x");
    run_until(&c, T0 + 5000);
    CHECK(c.env.n_calls == 1 && !sim_ready(c.in[0]), "routed with a layout that does not match");
    stop(&c);
}

/* ---- the client's last word across a growth --------------------------------------
 * Each case on a key whose home moves, and again on one whose home stays
 * (the control: if it fails, the test is wrong, not the code):
 *  A: a task that moved (its version shifted below zero) fails its call at
 *     its new home; the client cancels while the call is in flight. The
 *     next attempt is not called.
 *  B: a call fired at the old home before the marker is in flight; the
 *     client cancels before the routers stop; the call fails after the
 *     marker. The next attempt, forwarded from the old home, is not called.
 *  C: after the growth, a client that noticed it submits; two seconds later
 *     a client that has not noticed it cancels. The task is not called.
 *  D: the same with a re-submit: the re-submit wins.
 * (Each failed before its fix: retry reading a negative version as none,
 * forwarding without the old home's floor, and every command on an old
 * home shifted below the new layout's, whenever it was written.) */

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
        CHECK(kit_committed_says(c->k, "store", q, "l=5"), "store %d has not moved its keys", q);
        CHECK(kit_committed_says(c->k, "wheel", q, "l=5"), "wheel %d has not moved its keys", q);
        CHECK(kit_committed_says(c->k, "wheel", q, "d=1"), "wheel %d: calls before the marker", q);
    }
    kit_set_layout(c->k, &grown);
    mc_layout_free(&grown);
}

static int the_last_word_wins(bool control)
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

/* A router holds a command back (its partition paused) while a growth
 * stops routing; the grown layout is written, and before the router reads
 * it, it is given one more partition while keeping the paused one: once it
 * reads the layout it routes again, and resumes the partition it paused
 * (on_assign does not decide that routing goes on; the layout does). */
static void a_partition_held_through_an_incremental_assignment_resumes(void)
{
    static const char *const flags[] = {"--commit-interval-ms=100", NULL};
    sim_kafka *k = sim_kafka_new(2, T0);
    mc_config *cfg = kit_config("router", flags);
    sim_inst *r = sim_inst_new(k, &mc_router_processor, cfg, "i1");
    int32_t p0 = 0, p1 = 1;
    CHECK(r && sim_assign(r, &p0, 1) == 0);
    CHECK(sim_settle(r, 10) == 0); /* the first layout: 2 partitions */
    kit_set_layout(k, &(mc_layout){.partitions = 2, .growing_to = 4});
    sim_advance(k, 2100);
    CHECK(sim_settle(r, 10) == 0);
    mc_task t = kit_task("held", T0 + 60000, "http://h.example/x");
    int64_t held_at = kit_tasks_submit(k, 0, &t);
    CHECK(sim_settle(r, 10) == 0);
    CHECK(sim_paused(r, "tasks", 0), "partition 0 paused while routing is stopped");
    sim_set_partitions(k, kit_topic("tasks"), 4);
    for (const char *const *s = (const char *const[]){"wheel", "ready", "dead", NULL}; *s; s++)
        sim_set_partitions(k, kit_topic(*s), 4);
    mc_layout grown = {.partitions = 4, .previous = 2, .n_split = 2};
    grown.split = kit_split(k, 2);
    kit_set_layout(k, &grown);
    free(grown.split);
    sim_advance(k, 500);
    CHECK(sim_assign(r, &p1, 1) == 0); /* partition 0 kept, still paused */
    for (int i = 0; i < 3; i++) {
        sim_advance(k, 2100);
        CHECK(sim_settle(r, 10) == 0);
    }
    CHECK(!sim_paused(r, "tasks", 0), "partition 0 resumed once routing resumed");
    CHECK(sim_committed(k, "t.router", kit_topic("tasks"), 0, NULL) > held_at,
          "the held command was routed (to its new home)");
    sim_stop(r);
    kit_config_free(cfg);
    sim_kafka_free(k);
}

int main(void)
{
    a_partition_held_through_an_incremental_assignment_resumes();
    grow_with_everything_in_flight(false);
    grow_with_everything_in_flight(true);
    a_growth_behind_mooncakes_back_stops_the_router();
    int control_failures = the_last_word_wins(true);
    CHECK(control_failures == 0, "the controls failed: the test itself is wrong");
    the_last_word_wins(false);
    return check_exit("test_growth_sim");
}
