/* The wheel (with the store beside it, as in every `mooncake all`) driven
 * record by record through tests/sim: exactly-once firing across commits,
 * crashes and replays, recalls of tasks fired early inside the lead window,
 * the order of an overdue backlog, and tasks the router fired itself. Each test is the exact
 * sequence of a defect found in production-like runs; what it asserts is what a user would see in
 * `ready`. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chains.h"
#include "check.h"
#include "simkit.h"
#include "store.h"
#include "wheel.h"
#include "wheel_topic.h"

#define T0 INT64_C(1800000000000)

static uint64_t rng_state = 42;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * UINT64_C(2685821657736338717);
}

/* Advances the clock in steps of step ms to `until`, letting each instance
 * take its turn (and commit) at every step. */
static void run_until(sim_kafka *k, sim_inst **in, size_t n, int64_t until, int64_t step)
{
    while (sim_now(k) < until) {
        int64_t next = sim_now(k) + step;
        sim_set_now(k, next < until ? next : until);
        for (size_t i = 0; i < n; i++)
            CHECK(sim_settle(in[i], 50) == 0);
    }
}

/* A task fired early by the lead must still be recalled by a cancel that
 * reaches the wheel before its due time, even after the store's position
 * marker let the wheel forget the key's floor. */
static void cancel_inside_the_lead_window_with_a_store(void)
{
    static const char *flags[] = {"--wheel-lead-ms=200", "--horizon-ms=60000", NULL};
    mc_config *cfg = kit_config("wheel", flags);
    sim_kafka *k = sim_kafka_new(1, T0);
    sim_inst *store = sim_inst_new(k, &mc_store_processor, cfg, "s1");
    sim_inst *wheel = sim_inst_new(k, &mc_wheel_processor, cfg, "w1");
    sim_inst *both[] = {store, wheel};
    CHECK(sim_assign_all(store) == 0 && sim_assign_all(wheel) == 0);
    mc_task t = kit_task("x", T0 + 3000, "http://e/x");
    kit_wheel_submit(k, 0, 10, &t, false);
    /* Markers every second; the wheel fires at due - lead. */
    run_until(k, both, 2, T0 + 2850, 50);
    CHECK(kit_fired(k, 1, "x", 10) == 1, "fired early by the lead");
    kit_wheel_cancel(k, 0, 11, "x", sim_now(k));
    run_until(k, both, 2, T0 + 2900, 10);
    CHECK(kit_recalls(k, 1, "x") == 1, "the cancel reached the wheel 150 ms before due: recall");
    sim_crash(store);
    sim_crash(wheel);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A wheel (lead 500 ms in cfg) that has fired task x, version 10, due at
 * T0 + 2000, early by its lead: the clock stands at T0 + 1600. */
static sim_inst *wheel_with_x_fired_early(sim_kafka *k, mc_config *cfg)
{
    sim_inst *wheel = sim_inst_new(k, &mc_wheel_processor, cfg, "w1");
    CHECK(sim_assign_all(wheel) == 0);
    mc_task t = kit_task("x", T0 + 2000, "http://e/x");
    kit_wheel_submit(k, 0, 10, &t, false);
    run_until(k, &wheel, 1, T0 + 1600, 50);
    CHECK(kit_fired(k, 1, "x", 10) == 1, "fired early by the lead");
    return wheel;
}

/* A cancel inside the lead window after the wheel restarted between firing
 * early and the cancel:
 * what fired early must be known again after the replay. */
static void cancel_inside_the_lead_window_after_a_restart(void)
{
    static const char *flags[] = {"--wheel-lead-ms=500", NULL};
    mc_config *cfg = kit_config("wheel", flags);
    sim_kafka *k = sim_kafka_new(1, T0);
    sim_inst *wheel = wheel_with_x_fired_early(k, cfg);
    sim_crash(wheel);
    wheel = sim_inst_new(k, &mc_wheel_processor, cfg, "w1");
    CHECK(sim_assign_all(wheel) == 0);
    CHECK(sim_settle(wheel, 50) == 0);
    kit_wheel_cancel(k, 0, 11, "x", sim_now(k));
    run_until(k, &wheel, 1, T0 + 1700, 10);
    CHECK(kit_recalls(k, 1, "x") == 1, "a restarted wheel still recalls what it fired early");
    CHECK(kit_fired(k, 1, "x", 10) == 1, "and fires nothing twice");
    sim_crash(wheel);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A re-submit that reaches the wheel after it fired the older version early
 * gets its recall to the executor at once: the wheel commits it on the spot
 * instead of at its next commit by age (up to the commit interval later),
 * which made a re-submit need 170-190 ms before the due time to win. */
static void a_recall_is_committed_at_once(void)
{
    static const char *flags[] = {"--wheel-lead-ms=500", NULL};
    mc_config *cfg = kit_config("wheel", flags);
    sim_kafka *k = sim_kafka_new(1, T0);
    sim_inst *wheel = wheel_with_x_fired_early(k, cfg);
    /* The wheel just committed (the sim never commits by age, only when asked
     * to or by sim_settle); the re-submit comes right after, and the clock
     * stands still while the wheel takes its turns. */
    mc_task later = kit_task("x", T0 + 60000, "http://e/x");
    kit_wheel_submit(k, 0, 11, &later, false);
    uint64_t now_before = sim_commits_now(wheel);
    for (int i = 0; i < 5; i++)
        CHECK(sim_turn(wheel, 100, false) == 0); /* commits only when asked to */
    CHECK(kit_recalls(k, 1, "x") == 1,
          "the recall of the re-submitted task is committed with no time passing (%zu)",
          kit_recalls(k, 1, "x"));
    CHECK(sim_commits_now(wheel) > now_before, "and its commit waited for the recall's ack");
    CHECK(kit_fired(k, 1, "x", 11) == 0, "the new version is not fired 58 s early");
    sim_crash(wheel);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* 30,000 tasks already overdue, in an order unrelated to their due times,
 * fired in chunks with a commit after the first chunk and a crash: after
 * the restart every task must fire exactly once. */
static void an_overdue_backlog_fires_exactly_once_across_a_crash(void)
{
    enum { N = 30000 };
    mc_config *cfg = kit_config("wheel", NULL);
    sim_kafka *k = sim_kafka_new(1, T0);
    for (int i = 0; i < N; i++) {
        char id[32];
        snprintf(id, sizeof id, "t%d", i);
        mc_task t = kit_task(id, T0 - 1 - (int64_t)(rnd() % 5000), "http://e/t");
        kit_wheel_submit(k, 0, i, &t, false);
    }
    sim_inst *wheel = sim_inst_new(k, &mc_wheel_processor, cfg, "w1");
    CHECK(sim_assign_all(wheel) == 0);
    CHECK(sim_poll(wheel, N) == N);
    CHECK(sim_punctuate(wheel) == 1);
    CHECK(sim_commit(wheel) == 0);
    sim_crash(wheel);
    /* The next owner crashes halfway through its replay, with the backlog
     * overdue: the one after it replays again from the same checkpoint. */
    wheel = sim_inst_new(k, &mc_wheel_processor, cfg, "w2");
    CHECK(sim_assign_all(wheel) == 0);
    CHECK(sim_poll(wheel, N / 2) > 0);
    CHECK(sim_punctuate(wheel) >= 0);
    CHECK(sim_commit(wheel) == 0);
    sim_crash(wheel);
    wheel = sim_inst_new(k, &mc_wheel_processor, cfg, "w3");
    CHECK(sim_assign_all(wheel) == 0);
    CHECK(sim_settle(wheel, 100) == 0);
    kit_entry *e;
    size_t n = kit_entries(k, "ready", 0, &e);
    char *seen = calloc(N, 1);
    size_t fired = 0, twice = 0;
    for (size_t i = 0; i < n; i++) {
        if (e[i].marker || e[i].cancel)
            continue;
        int id = atoi(e[i].id + 1);
        twice += seen[id]++ > 0;
        fired++;
    }
    size_t missing = 0;
    for (int i = 0; i < N; i++)
        missing += !seen[i];
    CHECK(missing == 0 && twice == 0, "%zu of %d never fired, %zu fired twice", missing, N, twice);
    free(seen);
    free(e);
    sim_crash(wheel);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* Appends what the router writes to `wheel` for a task it fired itself. */
static void router_fired(sim_kafka *k, int64_t version, const mc_task *t)
{
    mc_wheel_entry e = {.version = version, .command = {.kind = MC_CMD_SUBMIT, .submit = *t}};
    mc_buf b = {0};
    mc_encode_wheel_entry(&e, &b);
    char key[256];
    size_t kl = mc_task_key(t->app_id, t->task_id, key, sizeof key);
    mc_header h = {MC_FIRED_BY_ROUTER_HEADER, "1", 1};
    sim_append(k, kit_topic("wheel"), 0, key, kl, b.data, b.len, &h, 1);
    mc_buf_free(&b);
}

/* A task the router fired to `ready` itself (due within the lead) reaches
 * the wheel as fired: the wheel fires it neither then nor after a restart's
 * replay, it voids the older version it had pending, and a cancel that
 * arrives before the due time still recalls it - from the restarted wheel
 * too. */
static void a_task_the_router_fired_is_fired_once_and_still_recalled(void)
{
    static const char *flags[] = {"--wheel-lead-ms=200", "--horizon-ms=60000", NULL};
    mc_config *cfg = kit_config("wheel", flags);
    sim_kafka *k = sim_kafka_new(1, T0);
    sim_inst *store = sim_inst_new(k, &mc_store_processor, cfg, "s1");
    sim_inst *wheel = sim_inst_new(k, &mc_wheel_processor, cfg, "w1");
    CHECK(sim_assign_all(store) == 0 && sim_assign_all(wheel) == 0);
    sim_inst *both[] = {store, wheel};
    mc_task old = kit_task("x", T0 + 5000, "http://e/old");
    kit_wheel_submit(k, 0, 10, &old, false);
    mc_task old_y = kit_task("y", T0 + 3000, "http://e/old");
    kit_wheel_submit(k, 0, 20, &old_y, false);
    run_until(k, both, 2, T0 + 10, 10);
    mc_task now = kit_task("x", T0 + 150, "http://e/new");
    router_fired(k, 11, &now);
    mc_task now_y = kit_task("y", T0 + 20, "http://e/new");
    router_fired(k, 21, &now_y);
    run_until(k, both, 2, T0 + 40, 10);
    CHECK(kit_fired(k, 1, "x", -1) == 0, "the wheel fired %zu versions of x",
          kit_fired(k, 1, "x", -1));
    sim_crash(wheel);
    wheel = sim_inst_new(k, &mc_wheel_processor, cfg, "w2");
    CHECK(sim_assign_all(wheel) == 0);
    both[1] = wheel;
    run_until(k, both, 2, T0 + 60, 10);
    CHECK(kit_fired(k, 1, "x", -1) == 0, "after the replay the wheel fired %zu versions of x",
          kit_fired(k, 1, "x", -1));
    kit_wheel_cancel(k, 0, 12, "x", sim_now(k));
    run_until(k, both, 2, T0 + 100, 10);
    CHECK(kit_recalls(k, 1, "x") == 1, "a cancel 90 ms before due recalled %zu times",
          kit_recalls(k, 1, "x"));
    run_until(k, both, 2, T0 + 7000, 100);
    CHECK(kit_fired(k, 1, "x", -1) == 0, "x fired %zu times by the wheel",
          kit_fired(k, 1, "x", -1));
    CHECK(kit_fired(k, 1, "y", -1) == 0,
          "y (no cancel: only the router's fire voids the older) fired %zu times by the wheel",
          kit_fired(k, 1, "y", -1));
    sim_crash(store);
    sim_crash(wheel);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A fire a lead ahead of its task's due time commits at librdkafka's pace;
 * a fire of a task due already (an overdue one arriving, or one punctuate
 * reaches late) asks for the commit now, which the runner makes wait for
 * the broker's acknowledgements instead of polling steps. */
static void only_a_late_fire_is_committed_now(void)
{
    mc_config *cfg = kit_config("wheel", NULL);
    sim_kafka *k = sim_kafka_new(1, T0);
    mc_task ahead = kit_task("ahead", T0 + 1000, "http://e/t");
    kit_wheel_submit(k, 0, 0, &ahead, false);
    sim_inst *wheel = sim_inst_new(k, &mc_wheel_processor, cfg, "w1");
    CHECK(sim_assign_all(wheel) == 0 && sim_settle(wheel, 20) == 0);
    run_until(k, &wheel, 1, T0 + 900, 10);
    CHECK(kit_count_keyed(k, "ready", 0) == 1, "fired a lead ahead");
    CHECK(sim_commits_now(wheel) == 0, "a fire ahead of time was committed now");
    mc_task late = kit_task("late", T0 + 850, "http://e/t");
    kit_wheel_submit(k, 0, 1, &late, false);
    CHECK(sim_settle(wheel, 20) == 0);
    CHECK(kit_count_keyed(k, "ready", 0) == 2, "the late task fired");
    CHECK(sim_commits_now(wheel) == 1, "the late fire's commit was not asked for now");
    /* A wheel that could not keep up (its loop held up past a due time):
     * what punctuate fires late is committed now too. */
    mc_task held_up = kit_task("held-up", T0 + 2000, "http://e/t");
    kit_wheel_submit(k, 0, 2, &held_up, false);
    CHECK(sim_settle(wheel, 20) == 0);
    CHECK(kit_count_keyed(k, "ready", 0) == 2, "fired a second early");
    sim_set_now(k, T0 + 2100);
    CHECK(sim_settle(wheel, 20) == 0);
    CHECK(kit_count_keyed(k, "ready", 0) == 3, "the held-up task fired");
    CHECK(sim_commits_now(wheel) == 2, "punctuate's late fire was not committed now");
    sim_crash(wheel);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A Cancel that voids the pending task a serial chain released ends the
 * chain's link: the wheel writes its CANCELLED Result, with the chain's
 * headers, once, even when a restart replays the Cancel; a voided task of
 * no chain gets none (its Results stay the executor's). */
static void a_cancel_ends_a_chains_pending_task_once(void)
{
    static const char *flags[] = {"--wheel-lead-ms=200", NULL};
    mc_config *cfg = kit_config("wheel", flags);
    sim_kafka *k = sim_kafka_new(1, T0);
    sim_inst *wheel = sim_inst_new(k, &mc_wheel_processor, cfg, "w1");
    CHECK(sim_assign_all(wheel) == 0);
    mc_kv meta[] = {{MC_CHAIN_METADATA, "contract-42"}, {MC_LINK_METADATA, "7"}};
    mc_task linked = kit_task("x", T0 + 3000, "http://e/x");
    linked.metadata = meta;
    linked.n_metadata = 2;
    mc_task plain = kit_task("y", T0 + 3000, "http://e/y");
    kit_wheel_submit(k, 0, 10, &linked, false);
    kit_wheel_submit(k, 0, 11, &plain, false);
    run_until(k, &wheel, 1, T0 + 1000, 50);
    kit_wheel_cancel(k, 0, 12, "x", sim_now(k));
    kit_wheel_cancel(k, 0, 13, "y", sim_now(k));
    run_until(k, &wheel, 1, T0 + 1200, 50);
    /* kill -9 and a restart, which replays the Cancels. */
    sim_crash(wheel);
    wheel = sim_inst_new(k, &mc_wheel_processor, cfg, "w1");
    CHECK(sim_assign_all(wheel) == 0);
    run_until(k, &wheel, 1, T0 + 4000, 50);
    CHECK(kit_fired(k, 1, "x", 10) == 0 && kit_fired(k, 1, "y", 11) == 0, "nothing fired");
    kit_result *res;
    size_t n = kit_results(k, 0, &res);
    CHECK(n == 1, "%zu Results: one, the chain's task's", n);
    CHECK(n >= 1 && strcmp(res[0].id, "x") == 0 && res[0].outcome == MC_OUTCOME_CANCELLED &&
              res[0].attempt == 1,
          "the chain's task ended CANCELLED");
    free(res);
    sim_rec *r;
    size_t m = sim_read(k, kit_topic("results"), 0, &r);
    const mc_header *chain = m ? sim_rec_header(&r[0], MC_CHAIN_HEADER) : NULL;
    const mc_header *link = m ? sim_rec_header(&r[0], MC_LINK_HEADER) : NULL;
    CHECK(chain && chain->len == 11 && memcmp(chain->value, "contract-42", 11) == 0 && link &&
              link->len == 1 && memcmp(link->value, "7", 1) == 0,
          "with the chain's headers, for the jobs role's relay");
    free(r);
    sim_crash(wheel);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* The highest position in the markers of topic suffix (the wheel's in
 * `ready`, header name; the store's in `wheel`); -1 when none. */
static int64_t last_marker(sim_kafka *k, const char *suffix, const char *header)
{
    sim_rec *r;
    size_t n = sim_read(k, kit_topic(suffix), 0, &r);
    int64_t best = -1;
    for (size_t i = 0; i < n; i++) {
        if (r[i].key || r[i].value)
            continue;
        for (size_t h = 0; h < r[i].n_headers; h++) {
            const mc_header *hd = &r[i].headers[h];
            char text[32] = "";
            if (strcmp(hd->name, header) != 0 || hd->len >= sizeof text)
                continue;
            memcpy(text, hd->value, hd->len);
            int64_t v = strtoll(text, NULL, 10);
            if (v > best)
                best = v;
        }
    }
    free(r);
    return best;
}

/* A cancel that writes nothing, read less than a second after the last
 * marker, then a fire whose commit comes before the marker is due, then
 * nothing: a marker past the cancel must still go down `ready` (the view
 * says "cancelled" only after one; the key's floor waits for it). */
static void a_cancel_alone_is_followed_by_a_marker(void)
{
    static const char *flags[] = {"--wheel-lead-ms=0", NULL};
    mc_config *cfg = kit_config("wheel", flags);
    sim_kafka *k = sim_kafka_new(1, T0);
    sim_inst *wheel = sim_inst_new(k, &mc_wheel_processor, cfg, "w1");
    CHECK(sim_assign_all(wheel) == 0);
    mc_task a = kit_task("a", T0 + 700, "http://e/a");
    kit_wheel_submit(k, 0, 10, &a, false);
    run_until(k, &wheel, 1, T0 + 300, 50);
    int64_t cancel = kit_wheel_cancel(k, 0, 11, "b", sim_now(k));
    run_until(k, &wheel, 1, T0 + 6000, 50);
    CHECK(kit_fired(k, 1, "a", 10) == 1);
    int64_t marked = last_marker(k, "ready", MC_WHEEL_POSITION_HEADER);
    CHECK(marked > cancel, "the last marker in ready says %" PRId64 ", the cancel is at %" PRId64,
          marked, cancel);
    sim_crash(wheel);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A far task whose changelog record Kafka refuses (too large) is dead-
 * lettered by the store, and the store's markers still pass it: the wheel
 * keeps the key's floor until one does. */
static void a_refused_far_task_is_passed_by_the_stores_marker(void)
{
    static const char *flags[] = {"--wheel-lead-ms=0", "--horizon-ms=5000", NULL};
    mc_config *cfg = kit_config("wheel", flags);
    sim_kafka *k = sim_kafka_new(1, T0);
    sim_set_max_bytes(k, kit_topic("store"), 300);
    sim_inst *store = sim_inst_new(k, &mc_store_processor, cfg, "s1");
    CHECK(sim_assign_all(store) == 0);
    mc_task small = kit_task("small", T0 + 60000, "http://e/s");
    kit_wheel_submit(k, 0, 10, &small, true);
    run_until(k, &store, 1, T0 + 2000, 50);
    char url[600];
    memset(url, 'u', sizeof url - 1);
    memcpy(url, "http://e/", 9);
    url[sizeof url - 1] = '\0';
    mc_task big = kit_task("big", T0 + 60000, url);
    int64_t refused = kit_wheel_submit(k, 0, 11, &big, true);
    run_until(k, &store, 1, T0 + 6000, 50);
    CHECK(kit_count_keyed(k, "dead", 0) == 1, "the refused task is dead-lettered");
    int64_t marked = last_marker(k, "wheel", MC_STORE_POSITION_HEADER);
    CHECK(marked > refused,
          "the store's last marker says %" PRId64 ", the refused record is at "
          "%" PRId64,
          marked, refused);
    sim_crash(store);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* Fires come in batches: with a task due every millisecond on each
 * partition (the partitions out of phase) and a 300 ms lead, the wheel
 * fires in passes about 100 ms apart for all partitions together (each
 * asks for a commit), not once a millisecond or once per partition, and
 * every task goes out between its due time less the lead and its due time
 * less 200 ms. */
static void fires_come_in_batches(int32_t partitions)
{
    static const char *flags[] = {"--wheel-lead-ms=300", NULL};
    mc_config *cfg = kit_config("wheel", flags);
    sim_kafka *k = sim_kafka_new(partitions, T0);
    enum { N = 1000, DUE0 = 1000, PHASE = 17 };
    char id[32];
    for (int32_t p = 0; p < partitions; p++)
        for (int i = 0; i < N; i++) {
            snprintf(id, sizeof id, "p%d-t%d", p, i);
            mc_task t = kit_task(id, T0 + DUE0 + p * PHASE + i, "http://e/t");
            kit_wheel_submit(k, p, i, &t, false);
        }
    sim_inst *wheel = sim_inst_new(k, &mc_wheel_processor, cfg, "w1");
    CHECK(sim_assign_all(wheel) == 0 && sim_settle(wheel, 50) == 0);
    size_t passes = 0, total = 0, early = 0, late = 0;
    for (int64_t now = T0 + DUE0 - 400; now <= T0 + DUE0 + N + partitions * PHASE; now++) {
        sim_set_now(k, now);
        CHECK(sim_settle(wheel, 50) == 0);
        size_t sum = 0;
        for (int32_t p = 0; p < partitions; p++) {
            /* Partition p's task i is due at T0 + DUE0 + p * PHASE + i: those
             * due within the lead less 100 ms must be out, none due beyond
             * the lead. */
            int64_t fired = (int64_t)kit_count_keyed(k, "ready", p);
            int64_t base = T0 + DUE0 + p * PHASE;
            int64_t must = now + 200 - base + 1, may = now + 300 - base + 1;
            late += must > 0 && fired < (must < N ? must : N);
            early += fired > (may > 0 ? may : 0);
            sum += (size_t)fired;
        }
        passes += sum > total;
        total = sum;
    }
    CHECK(total == (size_t)N * (size_t)partitions, "%zu of %d fired", total, N * partitions);
    CHECK(late == 0 && early == 0, "%d partitions: fired late at %zu instants, early at %zu",
          partitions, late, early);
    CHECK(passes >= 9 && passes <= 13,
          "%d partitions: %zu passes fired (a commit each): about one per 100 ms", partitions,
          passes);
    sim_crash(wheel);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A wheel holding tasks it fired early wakes about once per fire slack, not
 * once per task: 1,000 tasks due a millisecond apart asked for a wake-up on
 * each one's due millisecond (to drop its recall entry), most of the wheel's
 * wake-ups under load. An entry kept past its due time recalls nothing. */
static void tasks_fired_early_do_not_wake_the_wheel_each(void)
{
    static const char *flags[] = {"--wheel-lead-ms=300", NULL};
    mc_config *cfg = kit_config("wheel", flags);
    sim_kafka *k = sim_kafka_new(1, T0);
    enum { N = 1000, DUE0 = 1000 };
    char id[32];
    for (int i = 0; i < N; i++) {
        snprintf(id, sizeof id, "t%d", i);
        mc_task t = kit_task(id, T0 + DUE0 + i, "http://e/t");
        kit_wheel_submit(k, 0, i, &t, false);
    }
    sim_inst *wheel = sim_inst_new(k, &mc_wheel_processor, cfg, "w1");
    CHECK(sim_assign_all(wheel) == 0 && sim_settle(wheel, 50) == 0);
    size_t wakeups = 0;
    for (int64_t now = T0 + DUE0 - 400; now <= T0 + DUE0 + N + 100; now++) {
        sim_set_now(k, now);
        wakeups += sim_wakeup(wheel) <= now;
        CHECK(sim_settle(wheel, 50) == 0);
    }
    CHECK(kit_count_keyed(k, "ready", 0) == N, "all %d fired", N);
    CHECK(wakeups <= 30, "%zu wake-ups over 1.5 s: about one per 100 ms", wakeups);
    /* A re-submit after the due time is not recalled, whether or not the
     * entry is still there: that is decided by the clock. */
    mc_task again = kit_task("t0", T0 + 60000, "http://e/t");
    kit_wheel_submit(k, 0, N, &again, false);
    CHECK(sim_settle(wheel, 50) == 0);
    CHECK(kit_recalls(k, 1, "t0") == 0, "no recall of a task called already");
    sim_crash(wheel);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A backlog on one partition does not hold back another's due tasks: with
 * 45,000 tasks overdue on partition 0 and one on partition 1, the second
 * pass (a pass fires 20,000 at most) fires partition 1's task, and every
 * task fires once. When each pass started at partition 0, partition 1
 * waited until partition 0 had drained. */
static void a_backlog_on_one_partition_does_not_hold_back_another(void)
{
    enum { N = 45000 };
    mc_config *cfg = kit_config("wheel", NULL);
    sim_kafka *k = sim_kafka_new(2, T0);
    char id[32];
    for (int i = 0; i < N; i++) {
        snprintf(id, sizeof id, "p0-t%d", i);
        mc_task t = kit_task(id, T0 - 1000 + i % 1000, "http://e/t");
        kit_wheel_submit(k, 0, i, &t, false);
    }
    mc_task t = kit_task("p1-t0", T0 - 1, "http://e/t");
    kit_wheel_submit(k, 1, 0, &t, false);
    sim_inst *wheel = sim_inst_new(k, &mc_wheel_processor, cfg, "w1");
    CHECK(sim_assign_all(wheel) == 0);
    CHECK(sim_poll(wheel, N + 1) == N + 1);
    for (int pass = 1; pass <= 2; pass++) {
        CHECK(sim_punctuate(wheel) == 1, "pass %d ran", pass);
        CHECK(sim_commit(wheel) == 0);
    }
    size_t p0 = kit_count_keyed(k, "ready", 0), p1 = kit_count_keyed(k, "ready", 1);
    CHECK(p1 == 1,
          "after two passes (%zu of partition 0's fired), partition 1's task fired %zu "
          "times",
          p0, p1);
    CHECK(p0 < N, "the backlog takes more than two passes: %zu", p0);
    CHECK(sim_settle(wheel, 100) == 0);
    kit_entry *e;
    size_t n = kit_entries(k, "ready", 0, &e), fired = 0, twice = 0;
    char *seen = calloc(N, 1);
    for (size_t i = 0; i < n; i++) {
        if (e[i].marker || e[i].cancel)
            continue;
        int id = atoi(e[i].id + 4); /* "p0-t<i>" */
        twice += seen[id]++ > 0;
        fired += seen[id] == 1;
    }
    p1 = kit_count_keyed(k, "ready", 1);
    CHECK(fired == N && twice == 0 && p1 == 1,
          "in the end %zu of %d fired (%zu twice) and %zu of 1", fired, N, twice, p1);
    free(seen);
    free(e);
    sim_crash(wheel);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

int main(void)
{
    a_cancel_alone_is_followed_by_a_marker();
    a_refused_far_task_is_passed_by_the_stores_marker();
    a_cancel_ends_a_chains_pending_task_once();
    a_task_the_router_fired_is_fired_once_and_still_recalled();
    a_recall_is_committed_at_once();
    cancel_inside_the_lead_window_with_a_store();
    cancel_inside_the_lead_window_after_a_restart();
    an_overdue_backlog_fires_exactly_once_across_a_crash();
    only_a_late_fire_is_committed_now();
    fires_come_in_batches(1);
    fires_come_in_batches(6);
    a_backlog_on_one_partition_does_not_hold_back_another();
    tasks_fired_early_do_not_wake_the_wheel_each();
    return check_exit("test_wheel_sim");
}
