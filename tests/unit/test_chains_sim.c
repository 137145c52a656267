/* Serial chains driven record by record through tests/sim: the jobs
 * processor holds each chain's links and releases them to `tasks` one at a
 * time; the test plays the rest of the pipeline (it calls what is released,
 * for a while, then writes its final Result with the chain headers the
 * executor sets). What each test asserts is what a user would see: the
 * calls of one chain never overlap, come in due order (ties in the order
 * added), each once, across kill -9, aborts and replacements; a cancel
 * removes a waiting link; a lost outcome holds the chain only for its
 * bound. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chains.h"
#include "check.h"
#include "jobs.h"
#include "kafka.h"
#include "simkit.h"

#define T0 INT64_C(1800000000000) /* 2027-01-15T08:00:00Z */
#define P 3
#define MAX_CALLS 512

static uint64_t rng_state = 11;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * UINT64_C(2685821657736338717);
}

static mc_config *config(void)
{
    static const char *flags[] = {"--jobs-ahead-ms=3000", "--horizon-ms=60000",
                                  "--executor-timeout-ms=2000", NULL};
    return kit_config("jobs", flags);
}

static void append_command(sim_kafka *k, const mc_job_command *c, const char *ordering_key)
{
    mc_buf b = {0};
    CHECK(mc_encode_job_command(c, &b) == 0);
    char key[512];
    size_t kl = mc_task_key("a", ordering_key, key, sizeof key);
    sim_append(k, kit_topic("job-commands"), mc_key_partition(key, kl, P), key, kl, b.data, b.len,
               NULL, 0);
    mc_buf_free(&b);
}

static void add_link(sim_kafka *k, const char *chain, const char *task_id, int64_t due)
{
    mc_job_command c = {.kind = MC_JOBCMD_ADD_LINK};
    c.add_link.ordering_key = chain;
    c.add_link.task = (mc_task){
        .app_id = "a",
        .task_id = task_id,
        .due_at = due,
        .callback = {.url = "http://e/link", .method = "POST"},
        .has_retry = true,
        .retry = {.max_attempts = 1,
                  .initial_backoff_ms = 100,
                  .multiplier = 2,
                  .max_backoff_ms = 100},
        .attempt = 1,
        .created_at = T0,
    };
    append_command(k, &c, chain);
}

static void cancel_link(sim_kafka *k, const char *chain, const char *task_id)
{
    mc_job_command c = {.kind = MC_JOBCMD_CANCEL_LINK};
    c.cancel_link = (mc_cancel_link){"a", chain, task_id, sim_now(k)};
    append_command(k, &c, chain);
}

/* The pipeline after the jobs role, as the test plays it: each released
 * Submit is called from its due time (or when seen, if later) for a while,
 * then its final Result is written, with the headers the executor sets. */
typedef struct call {
    char task_id[64], chain[64], link[24];
    int64_t due, start, end;
    bool done, cancelled;
    bool lost; /* no Result will ever come (a cancel that won early) */
} call;

typedef struct pipeline {
    call calls[MAX_CALLS];
    size_t n;
    int64_t read_to[P]; /* next offset of tasks to look at, per partition */
    int64_t max_call_ms;
} pipeline;

static void write_result(sim_kafka *k, const call *c, const mc_task *t, mc_outcome o)
{
    mc_result r = {.app_id = "a",
                   .task_id = c->task_id,
                   .attempt = 1,
                   .due_at = c->due,
                   .started_at = c->start,
                   .finished_at = c->end,
                   .outcome = o,
                   .error = ""};
    mc_buf b = {0};
    CHECK(mc_encode_result(&r, &b) == 0);
    mc_header h[2];
    size_t nh = mc_chain_result_headers(t, h);
    CHECK(nh == 2, "a released link carries its chain");
    char key[256];
    size_t kl = mc_task_key("a", c->task_id, key, sizeof key);
    sim_append(k, kit_topic("results"), mc_key_partition(key, kl, P), key, kl, b.data, b.len, h,
               nh);
    mc_buf_free(&b);
}

/* Looks at what was committed to tasks since last time: a Submit starts a
 * call; a Cancel of a call not started yet wins, and its CANCELLED Result
 * goes out at once, with the chain's headers (as the wheel writes it when
 * the cancel voids the pending task). */
static void see_tasks(sim_kafka *k, pipeline *pl)
{
    mc_arena *a = mc_arena_new();
    for (int32_t q = 0; q < P; q++) {
        sim_rec *r;
        size_t n = sim_read(k, kit_topic("tasks"), q, &r);
        for (size_t i = 0; i < n; i++) {
            if (r[i].offset < pl->read_to[q])
                continue;
            pl->read_to[q] = r[i].offset + 1;
            mc_command c;
            mc_arena_reset(a);
            CHECK(mc_decode_command(NULL, r[i].value, r[i].value_len, a, &c, NULL, 0) ==
                  MC_CODEC_OK);
            if (c.kind == MC_CMD_CANCEL) {
                for (size_t j = 0; j < pl->n; j++)
                    if (strcmp(pl->calls[j].task_id, c.cancel.task_id) == 0 && !pl->calls[j].done &&
                        pl->calls[j].start > sim_now(k)) {
                        call *v = &pl->calls[j];
                        v->cancelled = v->lost = v->done = true;
                        mc_kv meta[2] = {{MC_CHAIN_METADATA, v->chain},
                                         {MC_LINK_METADATA, v->link}};
                        mc_task t = {.app_id = "a",
                                     .task_id = v->task_id,
                                     .metadata = meta,
                                     .n_metadata = 2};
                        write_result(k, v, &t, MC_OUTCOME_CANCELLED);
                    }
                continue;
            }
            CHECK(pl->n < MAX_CALLS);
            if (pl->n == MAX_CALLS)
                continue;
            call *cl = &pl->calls[pl->n++];
            memset(cl, 0, sizeof *cl);
            snprintf(cl->task_id, sizeof cl->task_id, "%s", c.submit.task_id);
            for (size_t m = 0; m < c.submit.n_metadata; m++)
                if (strcmp(c.submit.metadata[m].key, MC_CHAIN_METADATA) == 0)
                    snprintf(cl->chain, sizeof cl->chain, "%s", c.submit.metadata[m].value);
                else if (strcmp(c.submit.metadata[m].key, MC_LINK_METADATA) == 0)
                    snprintf(cl->link, sizeof cl->link, "%s", c.submit.metadata[m].value);
            cl->due = c.submit.due_at;
            cl->start = c.submit.due_at > sim_now(k) ? c.submit.due_at : sim_now(k);
            cl->end = cl->start + 1 + (int64_t)(rnd() % (uint64_t)pl->max_call_ms);
        }
        free(r);
    }
    mc_arena_free(a);
}

/* Ends the calls whose time has come, each with its final Result. */
static void finish_calls(sim_kafka *k, pipeline *pl)
{
    static const mc_outcome outcomes[] = {MC_OUTCOME_SUCCEEDED, MC_OUTCOME_SUCCEEDED,
                                          MC_OUTCOME_FAILED_PERMANENTLY, MC_OUTCOME_EXHAUSTED,
                                          MC_OUTCOME_DROPPED};
    for (size_t j = 0; j < pl->n; j++) {
        call *c = &pl->calls[j];
        if (c->done || c->end > sim_now(k))
            continue;
        c->done = true;
        mc_kv meta[2] = {{MC_CHAIN_METADATA, c->chain}, {MC_LINK_METADATA, c->link}};
        mc_task t = {.app_id = "a", .task_id = c->task_id, .metadata = meta, .n_metadata = 2};
        write_result(k, c, &t, outcomes[rnd() % 5]);
    }
}

/* No two calls of one chain overlap in time. */
static void check_one_at_a_time(const pipeline *pl)
{
    for (size_t i = 0; i < pl->n; i++)
        for (size_t j = i + 1; j < pl->n; j++) {
            const call *a = &pl->calls[i], *b = &pl->calls[j];
            if (strcmp(a->chain, b->chain) != 0 || a->lost || b->lost)
                continue;
            CHECK(a->end <= b->start || b->end <= a->start,
                  "%s [%lld, %lld] and %s [%lld, %lld] of chain %s overlap", a->task_id,
                  (long long)(a->start - T0), (long long)(a->end - T0), b->task_id,
                  (long long)(b->start - T0), (long long)(b->end - T0), a->chain);
        }
}

static void step(sim_kafka *k, sim_inst *in, pipeline *pl, int64_t ms)
{
    sim_advance(k, ms);
    see_tasks(k, pl);
    finish_calls(k, pl);
    CHECK(sim_settle(in, 50) == 0);
    see_tasks(k, pl);
}

static sim_inst *start(sim_kafka *k, const mc_config *cfg, const char *id)
{
    sim_inst *in = sim_inst_new(k, &mc_jobs_processor, cfg, id);
    CHECK(in != NULL);
    CHECK(sim_assign_all(in) == 0);
    CHECK(sim_settle(in, 50) == 0);
    return in;
}

/* Four chains of 25 links each, due at random within a minute (some at the
 * same millisecond), added before any is due; the instance is killed,
 * aborted and replaced at random moments. Every link is called exactly
 * once, its chain's calls never overlap, and they come in due order, ties
 * in the order added. */
static void links_run_one_at_a_time_in_due_order_across_kills(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0 - 10000);
    static pipeline pl;
    memset(&pl, 0, sizeof pl);
    pl.max_call_ms = 3000;
    enum { CHAINS = 4, LINKS = 25 };
    int64_t due[CHAINS][LINKS];
    for (int c = 0; c < CHAINS; c++)
        for (int l = 0; l < LINKS; l++) {
            char chain[16], id[32];
            snprintf(chain, sizeof chain, "c%d", c);
            snprintf(id, sizeof id, "c%d-l%02d", c, l);
            due[c][l] = l % 5 == 4 ? due[c][l - 1] : T0 + (int64_t)(rnd() % 60000);
            add_link(k, chain, id, due[c][l]);
        }
    sim_inst *in = start(k, cfg, "j1");
    int gen = 1;
    while (sim_now(k) < T0 + 600000) {
        int64_t ms = 1 + (int64_t)(rnd() % 400);
        switch (rnd() % 12) {
        case 0: { /* kill -9 with whatever the open transaction holds */
            sim_advance(k, ms);
            see_tasks(k, &pl);
            CHECK(sim_turn(in, 100, false) == 0);
            sim_crash(in);
            char id[16];
            if (rnd() % 2) {
                snprintf(id, sizeof id, "j%d", ++gen);
                sim_expire_transactions(k);
            } else {
                snprintf(id, sizeof id, "j%d", gen);
            }
            in = start(k, cfg, id);
            break;
        }
        case 1:
            sim_advance(k, ms);
            CHECK(sim_turn(in, 100, false) == 0);
            CHECK(sim_abort(in) == 0);
            break;
        default:
            step(k, in, &pl, ms);
        }
    }
    step(k, in, &pl, 1);
    CHECK(pl.n == CHAINS * LINKS, "%zu calls for %d links", pl.n, CHAINS * LINKS);
    check_one_at_a_time(&pl);
    for (int c = 0; c < CHAINS; c++) {
        char chain[16];
        snprintf(chain, sizeof chain, "c%d", c);
        /* The chain's calls in the order they started... */
        const call *order[LINKS];
        size_t n = 0;
        for (size_t j = 0; j < pl.n; j++)
            if (strcmp(pl.calls[j].chain, chain) == 0 && n < LINKS)
                order[n++] = &pl.calls[j];
        CHECK(n == LINKS, "chain %s: %zu of %d links called", chain, n, LINKS);
        /* ... are its links by due time, then the order added. */
        for (size_t i = 1; i < n; i++) {
            int a = atoi(order[i - 1]->task_id + strlen(chain) + 2);
            int b = atoi(order[i]->task_id + strlen(chain) + 2);
            CHECK(due[c][a] < due[c][b] || (due[c][a] == due[c][b] && a < b),
                  "chain %s: %s (due %lld) called before %s (due %lld)", chain,
                  order[i - 1]->task_id, (long long)(due[c][a] - T0), order[i]->task_id,
                  (long long)(due[c][b] - T0));
            CHECK(order[i]->start >= due[c][b], "never before its due time");
        }
    }
    CHECK(sim_gauge(in, "mooncake_chain_links", NULL) == 0, "the chains hold nothing at the end");
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A CancelLink removes a waiting link (it is never released); adding a
 * waiting task again replaces it (its new due time decides its place); a
 * released link whose outcome never comes holds the chain until its bound
 * (one attempt: 2 s timeout + 1 s, plus a minute), then the chain goes on;
 * a CancelLink of a released link writes its Cancel, and the chain goes on
 * with the CANCELLED Result the cancel's win brings. */
static void cancels_replacements_and_lost_outcomes(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0 - 10000);
    static pipeline pl;
    memset(&pl, 0, sizeof pl);
    pl.max_call_ms = 500;
    add_link(k, "k", "first", T0);
    add_link(k, "k", "gone", T0 + 1000);
    add_link(k, "k", "moved", T0 + 2000);
    add_link(k, "k", "last", T0 + 3000);
    cancel_link(k, "k", "gone");
    add_link(k, "k", "moved", T0 + 4000); /* now after "last" */
    sim_inst *in = start(k, cfg, "j1");
    while (sim_now(k) < T0 + 10000)
        step(k, in, &pl, 50);
    CHECK(pl.n == 3, "%zu calls", pl.n);
    CHECK(pl.n == 3 && strcmp(pl.calls[0].task_id, "first") == 0 &&
              strcmp(pl.calls[1].task_id, "last") == 0 && strcmp(pl.calls[2].task_id, "moved") == 0,
          "first, last, then moved; gone never");
    CHECK(pl.n == 3 && pl.calls[2].due == T0 + 4000, "moved is due when it was added again");
    CHECK(sim_counter(in, "mooncake_chain_links_cancelled_total", NULL) == 1);

    /* A link whose Result never comes: the next waits for its bound. */
    size_t silent = pl.n;
    add_link(k, "k", "silent", T0 + 20000);
    add_link(k, "k", "after", T0 + 21000);
    while (sim_now(k) < T0 + 17500) /* released 3 s ahead: lose it before it ends */
        step(k, in, &pl, 100);
    CHECK(pl.n == silent + 1 && strcmp(pl.calls[silent].task_id, "silent") == 0);
    pl.calls[silent].done = pl.calls[silent].lost = true;
    while (sim_now(k) < T0 + 20000 + 63000 - 200)
        step(k, in, &pl, 200);
    CHECK(pl.n == silent + 1, "after waits while silent's bound runs (%zu calls)", pl.n);
    while (sim_now(k) < T0 + 20000 + 63000 + 2000)
        step(k, in, &pl, 200);
    CHECK(pl.n == silent + 2 && strcmp(pl.calls[silent + 1].task_id, "after") == 0,
          "after runs once silent's bound passed");
    CHECK(sim_counter(in, "mooncake_chain_links_stale_total", NULL) == 1);

    /* A released link cancelled before its due time: its Cancel goes to
     * tasks, and the chain goes on with the CANCELLED Result its win brings. */
    int64_t t = sim_now(k);
    add_link(k, "k", "doomed", t + 2500);
    add_link(k, "k", "next", t + 2600);
    step(k, in, &pl, 100); /* released at once: due within ahead_ms */
    CHECK(pl.n == silent + 3 && strcmp(pl.calls[silent + 2].task_id, "doomed") == 0);
    cancel_link(k, "k", "doomed");
    step(k, in, &pl, 100);
    CHECK(pl.calls[silent + 2].cancelled, "the cancel reached the released link");
    while (sim_now(k) < t + 2600 + 100)
        step(k, in, &pl, 100);
    CHECK(pl.n == silent + 4 && strcmp(pl.calls[silent + 3].task_id, "next") == 0,
          "next runs at its due time, after the cancelled link's Result (%zu calls, relayed %llu, "
          "done %llu)",
          pl.n - silent,
          (unsigned long long)sim_counter(in, "mooncake_chain_results_relayed_total", NULL),
          (unsigned long long)sim_counter(in, "mooncake_chain_links_done_total", NULL));
    CHECK(pl.n == silent + 4 && pl.calls[silent + 3].start == t + 2600);
    check_one_at_a_time(&pl);
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A bad link is dead-lettered with the field named, and its chain holds
 * nothing. */
static void bad_links_are_dead_lettered(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    mc_job_command c = {.kind = MC_JOBCMD_ADD_LINK};
    c.add_link.ordering_key = "";
    c.add_link.task = (mc_task){.app_id = "a",
                                .task_id = "x",
                                .due_at = T0,
                                .callback = {.url = "http://e/x", .method = "POST"},
                                .attempt = 1};
    append_command(k, &c, "");
    c.add_link.ordering_key = "k";
    c.add_link.task.callback.url = "";
    append_command(k, &c, "k");
    sim_inst *in = start(k, cfg, "j1");
    size_t dead = 0;
    for (int32_t q = 0; q < P; q++)
        dead += kit_count_keyed(k, "dead", q);
    CHECK(dead == 2, "%zu dead letters", dead);
    CHECK(sim_gauge(in, "mooncake_chain_links", NULL) == 0);
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

int main(void)
{
    links_run_one_at_a_time_in_due_order_across_kills();
    cancels_replacements_and_lost_outcomes();
    bad_links_are_dead_lettered();
    return check_exit("test_chains_sim");
}
