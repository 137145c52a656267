/* The router's commits, record by record without a broker: a Submit due
 * within two commit intervals reaches the wheel (committed, so visible to
 * it) in the pass that routed it, not a commit interval later, and it
 * takes what else that pass routed with it; later tasks wait for the
 * interval's commit as before (the runner's, which the sim leaves to the
 * test), so a steady stream of them is still batched. A Submit due within
 * the wheel's lead is fired to `ready` by the router itself, in the same
 * transaction as its `wheel` record (marked fired), with a fired position
 * no higher than that record's offset. A Cancel, and a re-submit of a key
 * routed lately that is due soon, also recall in `ready` at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kafka.h"
#include "router.h"
#include "simkit.h"

#define T0 INT64_C(1800000000000)
#define PARTITIONS 1

static const char *const flags[] = {"--commit-interval-ms=100", "--wheel-lead-ms=200", NULL};

/* Submits id due at due; returns its offset in tasks (its version). */
static int64_t submit_at(sim_kafka *k, const char *id, int64_t due)
{
    mc_task t = kit_task(id, due, "http://h.example/x");
    return kit_tasks_submit(k, 0, &t);
}

static void submit(sim_kafka *k, const char *id, int64_t due)
{
    submit_at(k, id, due);
}

/* How many recalls of id at version are in ready. */
static size_t recalls_in_ready(sim_kafka *k, const char *id, int64_t version)
{
    kit_entry *e;
    size_t n = kit_entries(k, "ready", 0, &e), count = 0;
    for (size_t i = 0; i < n; i++)
        count += !e[i].marker && e[i].cancel && strcmp(e[i].id, id) == 0 && e[i].version == version;
    free(e);
    return count;
}

static size_t in_wheel(sim_kafka *k)
{
    return kit_count_keyed(k, "wheel", 0);
}

/* The offset of task id's last record in topic (-1: none); *has says
 * whether it carries header, whose value goes to val. */
static int64_t last_of(sim_kafka *k, const char *suffix, const char *id, const char *header,
                       bool *has, char *val, size_t len)
{
    char key[64];
    size_t kl = kit_key(id, key, sizeof key);
    sim_rec *r;
    size_t n = sim_read(k, kit_topic(suffix), 0, &r);
    int64_t off = -1;
    for (size_t i = 0; i < n; i++) {
        if (!r[i].key || r[i].key_len != kl || memcmp(r[i].key, key, kl) != 0)
            continue;
        off = r[i].offset;
        const mc_header *h = sim_rec_header(&r[i], header);
        *has = h != NULL;
        snprintf(val, len, "%.*s", h ? (int)h->len : 0, h ? (const char *)h->value : "");
    }
    free(r);
    return off;
}

/* Due now or within the lead: in ready, fired at a position no later than
 * its wheel record; due later: only in wheel, not marked. */
static void check_fired_here(sim_kafka *k, const char *id, bool expect)
{
    bool marked = false, has_pos = false;
    char val[24];
    int64_t off = last_of(k, "wheel", id, MC_FIRED_BY_ROUTER_HEADER, &marked, val, sizeof val);
    int64_t in_ready = last_of(k, "ready", id, MC_FIRED_POSITION_HEADER, &has_pos, val, sizeof val);
    int64_t pos = in_ready < 0 ? -2 : has_pos ? strtoll(val, NULL, 10) : -1;
    CHECK(off >= 0, "%s is not in wheel", id);
    if (expect)
        CHECK(marked && pos >= 0 && pos <= off,
              "%s: marked fired %d, fired position %lld, wheel offset %lld", id, marked,
              (long long)pos, (long long)off);
    else
        CHECK(!marked && pos == -2, "%s was fired by the router (position %lld)", id,
              (long long)pos);
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
    uint64_t now_before = sim_commits_now(r);
    /* Due now, in the next pass: committed at the end of that pass, with the
     * one before it (one transaction). */
    submit(k, "now", T0);
    submit(k, "soon", T0 + 150);
    CHECK(sim_turn(r, 100, false) == 0);
    CHECK(in_wheel(k) == 3, "%zu in wheel after the pass that routed a task due now", in_wheel(k));
    /* A task fired here is waited on now: its commit waits for the broker's
     * acknowledgements rather than librdkafka's polling steps. */
    CHECK(sim_commits_now(r) == now_before + 1, "the fire's commit was not asked for now");

    /* Due just past two intervals: waits for the interval's commit (which the
     * runner makes; here, the test). */
    submit(k, "after-two-intervals", T0 + 250);
    CHECK(sim_turn(r, 100, false) == 0);
    CHECK(in_wheel(k) == 3);
    CHECK(sim_commit(r) == 0);
    CHECK(in_wheel(k) == 4, "%zu in wheel after the interval's commit", in_wheel(k));
    CHECK(sim_commits_now(r) == now_before + 1, "a commit with nothing due was asked for now");
    check_fired_here(k, "now", true);
    check_fired_here(k, "soon", true); /* the lead is 200 ms */
    check_fired_here(k, "later", false);
    check_fired_here(k, "after-two-intervals", false);
    CHECK(kit_count_keyed(k, "ready", 0) == 2, "%zu in ready", kit_count_keyed(k, "ready", 0));

    CHECK(sim_stop(r) == 0);
    kit_config_free(cfg);
    sim_kafka_free(k);

    /* --no-router-fires-due (an upgrade from a release whose wheel does not
     * know the header): everything goes through the wheel. */
    static const char *const off[] = {"--commit-interval-ms=100", "--no-router-fires-due", NULL};
    k = sim_kafka_new(PARTITIONS, T0);
    cfg = kit_config("router", off);
    r = sim_inst_new(k, &mc_router_processor, cfg, "i1");
    CHECK(r && sim_assign_all(r) == 0 && sim_settle(r, 10) == 0);
    submit(k, "now", T0);
    CHECK(sim_turn(r, 100, false) == 0);
    check_fired_here(k, "now", false);
    CHECK(sim_stop(r) == 0);
    kit_config_free(cfg);
    sim_kafka_free(k);

    /* A Cancel goes to wheel and, in the same transaction, to ready as a
     * recall of the versions below its own (its offset in tasks). */
    k = sim_kafka_new(PARTITIONS, T0);
    cfg = kit_config("router", flags);
    r = sim_inst_new(k, &mc_router_processor, cfg, "i1");
    CHECK(r && sim_assign_all(r) == 0 && sim_settle(r, 10) == 0);
    submit(k, "x", T0 + 10000);
    int64_t cancel_at = kit_tasks_cancel(k, 0, "x", T0);
    CHECK(sim_turn(r, 100, false) == 0);
    size_t recalls = recalls_in_ready(k, "x", cancel_at), n = kit_count_keyed(k, "ready", 0);
    CHECK(recalls == 1 && n == 1, "%zu recalls of x at version %lld among %zu ready records",
          recalls, (long long)cancel_at, n);
    CHECK(in_wheel(k) == 2, "the Submit and the Cancel in wheel: %zu", in_wheel(k));
    CHECK(sim_stop(r) == 0);
    kit_config_free(cfg);
    sim_kafka_free(k);

    /* A re-submit of a key routed lately and due soon recalls the older
     * version in ready at once, with its own version, committed now; not
     * a first Submit, not one whose older version is due later than the
     * lead and a second, or was due more than a second ago, or was routed
     * due more than a minute ahead (not remembered). */
    k = sim_kafka_new(PARTITIONS, T0);
    cfg = kit_config("router", flags);
    r = sim_inst_new(k, &mc_router_processor, cfg, "i1");
    CHECK(r && sim_assign_all(r) == 0 && sim_settle(r, 10) == 0);
    submit(k, "soon", T0 + 5000);
    submit(k, "later", T0 + 30000);
    submit(k, "past", T0 + 1000);
    submit(k, "far", T0 + 120000);
    CHECK(sim_settle(r, 20) == 0 && sim_commit(r) == 0);
    sim_set_now(k, T0 + 4500);
    uint64_t asked = sim_commits_now(r);
    int64_t resubmit_at = submit_at(k, "soon", T0 + 60000);
    submit(k, "later", T0 + 40000);
    submit(k, "past", T0 + 40000);
    submit(k, "first", T0 + 5600);
    CHECK(sim_settle(r, 20) == 0);
    CHECK(recalls_in_ready(k, "soon", resubmit_at) == 1 && kit_count_keyed(k, "ready", 0) == 1,
          "%zu recalls of soon at version %lld, %zu records in ready",
          recalls_in_ready(k, "soon", resubmit_at), (long long)resubmit_at,
          kit_count_keyed(k, "ready", 0));
    CHECK(sim_commits_now(r) > asked, "the recall's commit was not asked for now");
    sim_set_now(k, T0 + 119500);
    submit(k, "far", T0 + 180000);
    CHECK(sim_settle(r, 20) == 0 && sim_commit(r) == 0);
    CHECK(kit_recalls(k, 1, "far") == 0, "a key routed due two minutes ahead was recalled");
    CHECK(sim_stop(r) == 0);
    kit_config_free(cfg);
    sim_kafka_free(k);

    /* ready refuses the recall (it takes less than wheel): the Cancel still
     * reaches wheel, and the refusal is dead-lettered. */
    k = sim_kafka_new(PARTITIONS, T0);
    cfg = kit_config("router", flags);
    r = sim_inst_new(k, &mc_router_processor, cfg, "i1");
    CHECK(r && sim_assign_all(r) == 0 && sim_settle(r, 10) == 0);
    sim_set_max_bytes(k, kit_topic("ready"), 10);
    submit(k, "y", T0 + 10000);
    kit_tasks_cancel(k, 0, "y", T0);
    CHECK(sim_settle(r, 20) == 0);
    CHECK(in_wheel(k) == 2 && kit_count_keyed(k, "ready", 0) == 0 &&
              kit_count_keyed(k, "dead", 0) == 1,
          "%zu in wheel, %zu in ready, %zu dead letters", in_wheel(k),
          kit_count_keyed(k, "ready", 0), kit_count_keyed(k, "dead", 0));
    CHECK(sim_stop(r) == 0);
    kit_config_free(cfg);
    sim_kafka_free(k);
    return check_exit("test_router_sim");
}
