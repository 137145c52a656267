/* The jobs processor driven record by record through tests/sim: each
 * occurrence of a recurring job written to `tasks` exactly once across
 * crashes, aborts and restores; updates, pauses and deletes cancelling what
 * was written ahead; the misfire and overlap policies; fixed delay; and
 * bad jobs dead-lettered with the field named. What each test asserts is
 * what a user would see: the Submits and Cancels in `tasks`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "job_json.h"
#include "jobs.h"
#include "kafka.h"
#include "simkit.h"

#define T0 INT64_C(1800000000000) /* 2027-01-15T08:00:00Z */
#define P 3

static uint64_t rng_state = 7;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * UINT64_C(2685821657736338717);
}

static mc_job base_job(const char *id)
{
    return (mc_job){
        .app_id = "a",
        .job_id = id,
        .kind = MC_SCHEDULE_FIXED_RATE,
        .cron = "",
        .time_zone = "UTC",
        .interval_ms = 1000,
        .start_at = T0,
        .misfire = MC_MISFIRE_FIRE_ONCE_NOW,
        .catch_up_limit = 10,
        .misfire_threshold_ms = 5000,
        .overlap = MC_OVERLAP_PARALLEL,
        .callback = {.url = "http://e/job", .method = "POST", .timeout_ms = 1000},
        .created_at = T0,
    };
}

static int64_t append_command(sim_kafka *k, const mc_job_command *c, const char *job_id)
{
    mc_buf b = {0};
    CHECK(mc_encode_job_command(c, &b) == 0);
    char key[256];
    size_t kl = mc_task_key("a", job_id, key, sizeof key);
    int64_t off = sim_append(k, kit_topic("job-commands"), mc_key_partition(key, kl, P), key, kl,
                             b.data, b.len, NULL, 0);
    mc_buf_free(&b);
    return off;
}

static void put(sim_kafka *k, const mc_job *j)
{
    mc_job_command c = {.kind = MC_JOBCMD_PUT, .put = *j};
    append_command(k, &c, j->job_id);
}

static void act(sim_kafka *k, const char *id, mc_job_action_kind a, int64_t at)
{
    mc_job_command c = {.kind = MC_JOBCMD_ACTION,
                        .action = {.app_id = "a", .job_id = id, .action = a, .requested_at = at}};
    append_command(k, &c, id);
}

/* A final Result of an occurrence, as the executor writes it. */
static void result(sim_kafka *k, const char *task_id, mc_outcome o, int64_t at)
{
    mc_result r = {.app_id = "a",
                   .task_id = task_id,
                   .attempt = 1,
                   .due_at = at,
                   .started_at = at,
                   .finished_at = at,
                   .outcome = o,
                   .error = ""};
    mc_buf b = {0};
    CHECK(mc_encode_result(&r, &b) == 0);
    char key[256];
    size_t kl = mc_task_key("a", task_id, key, sizeof key);
    sim_append(k, kit_topic("results"), mc_key_partition(key, kl, P), key, kl, b.data, b.len, NULL,
               0);
    mc_buf_free(&b);
}

/* What `tasks` holds for one job, in order: Submits and Cancels by
 * scheduled instant, and each Submit's due time. */
typedef struct seen {
    int64_t at[4096];
    int64_t due[4096];
    bool cancel[4096];
    size_t n;
} seen;

static void read_tasks(sim_kafka *k, const char *job_id, seen *out)
{
    memset(out, 0, sizeof *out);
    mc_arena *a = mc_arena_new();
    size_t jl = strlen(job_id);
    for (int32_t q = 0; q < P; q++) {
        sim_rec *r;
        size_t n = sim_read(k, kit_topic("tasks"), q, &r);
        for (size_t i = 0; i < n; i++) {
            mc_command c;
            mc_arena_reset(a);
            if (mc_decode_command(NULL, r[i].value, r[i].value_len, a, &c, NULL, 0) != MC_CODEC_OK)
                continue;
            const char *id = c.kind == MC_CMD_SUBMIT ? c.submit.task_id : c.cancel.task_id;
            if (strncmp(id, job_id, jl) != 0 || id[jl] != '@' || out->n == 4096)
                continue;
            char expect_key[256];
            size_t kl = mc_task_key("a", id, expect_key, sizeof expect_key);
            CHECK(mc_key_partition(expect_key, kl, P) == q, "%s written to its home partition", id);
            out->at[out->n] = strtoll(id + jl + 1, NULL, 10);
            out->cancel[out->n] = c.kind == MC_CMD_CANCEL;
            out->due[out->n] = c.kind == MC_CMD_SUBMIT ? c.submit.due_at : 0;
            out->n++;
        }
        free(r);
    }
    mc_arena_free(a);
    /* By instant (a stable sort: a Submit stays before its Cancel). */
    for (size_t i = 1; i < out->n; i++)
        for (size_t j = i; j > 0 && out->at[j - 1] > out->at[j]; j--) {
            int64_t at = out->at[j], due = out->due[j];
            bool c = out->cancel[j];
            out->at[j] = out->at[j - 1], out->due[j] = out->due[j - 1];
            out->cancel[j] = out->cancel[j - 1];
            out->at[j - 1] = at, out->due[j - 1] = due, out->cancel[j - 1] = c;
        }
}

static size_t count(const seen *s, int64_t at, bool cancel)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        n += s->at[i] == at && s->cancel[i] == cancel;
    return n;
}

static size_t submits(const seen *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        n += !s->cancel[i];
    return n;
}

static void run_until(sim_kafka *k, sim_inst *in, int64_t until, int64_t step)
{
    while (sim_now(k) < until) {
        int64_t next = sim_now(k) + step;
        sim_set_now(k, next < until ? next : until);
        CHECK(sim_settle(in, 50) == 0);
    }
}

static sim_inst *start(sim_kafka *k, const mc_config *cfg, const char *id)
{
    sim_inst *in = sim_inst_new(k, &mc_jobs_processor, cfg, id);
    CHECK(in != NULL);
    CHECK(sim_assign_all(in) == 0);
    CHECK(sim_settle(in, 50) == 0);
    return in;
}

static mc_config *config(void)
{
    static const char *flags[] = {"--jobs-ahead-ms=3000", "--horizon-ms=60000", NULL};
    mc_config *cfg = kit_config("jobs", flags);
    return cfg;
}

/* A fixed-rate job every second for two minutes, with the instance killed
 * (its open transaction left behind) at random moments, aborted, and
 * replaced: every scheduled instant is written exactly once, due on its
 * instant, and nothing is written before ahead_ms. */
static void every_occurrence_once_across_kills_and_aborts(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0 - 10000);
    mc_job j = base_job("rate");
    put(k, &j);
    sim_inst *in = start(k, cfg, "j1");
    int gen = 1;
    while (sim_now(k) < T0 + 120000) {
        sim_advance(k, 1 + (int64_t)(rnd() % 400));
        switch (rnd() % 10) {
        case 0: { /* kill -9 with whatever the open transaction holds */
            CHECK(sim_turn(in, 100, false) == 0);
            sim_crash(in);
            /* Restarted under its own id (a StatefulSet pod: the open
             * transaction is aborted at once), or replaced by another
             * instance once the coordinator expired it. */
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
            CHECK(sim_turn(in, 100, false) == 0);
            CHECK(sim_abort(in) == 0);
            break;
        default:
            CHECK(sim_turn(in, 100, true) == 0);
        }
    }
    CHECK(sim_settle(in, 50) == 0);
    seen s;
    read_tasks(k, "rate", &s);
    for (int64_t at = T0; at <= T0 + 120000; at += 1000)
        CHECK(count(&s, at, false) == 1, "occurrence %lld written %zu times", (long long)(at - T0),
              count(&s, at, false));
    for (size_t i = 0; i < s.n; i++) {
        CHECK(!s.cancel[i]);
        CHECK(s.due[i] == s.at[i], "due on its instant");
        CHECK(s.at[i] <= sim_now(k) + 3000, "never more than ahead_ms early");
        CHECK((s.at[i] - T0) % 1000 == 0);
    }
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A cron job in a zone: "at second 0 of every 15th minute" in
 * Asia/Kolkata (UTC+05:30) fires at :00, :15, :30, :45 local time. */
static void cron_in_a_time_zone(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    mc_job j = base_job("cron");
    j.kind = MC_SCHEDULE_CRON;
    j.cron = "0 */15 * * * ?";
    j.time_zone = "Asia/Kolkata";
    j.interval_ms = 0;
    j.start_at = 0;
    put(k, &j);
    sim_inst *in = start(k, cfg, "j1");
    run_until(k, in, T0 + 3600000, 1000);
    seen s;
    read_tasks(k, "cron", &s);
    /* T0 is 08:00 UTC = 13:30 IST: 13:30, 13:45, 14:00, 14:15, 14:30 IST. */
    CHECK(s.n == 5, "%zu occurrences in an hour", s.n);
    for (size_t i = 0; i < s.n && i < 5; i++)
        CHECK(s.at[i] == T0 + 900000 * (int64_t)i, "occurrence %zu at %lld", i,
              (long long)(s.at[i] - T0));
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* An update cancels what was written ahead under the old schedule and goes
 * on with the new one; a delete cancels and stops; a trigger runs once. */
static void update_delete_and_trigger(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    mc_job j = base_job("u");
    put(k, &j);
    sim_inst *in = start(k, cfg, "j1");
    run_until(k, in, T0 + 10500, 100);
    seen s;
    read_tasks(k, "u", &s);
    CHECK(count(&s, T0 + 13000, false) == 1, "written 3 s ahead");
    CHECK(count(&s, T0 + 14000, false) == 0);
    j.interval_ms = 7000;
    j.start_at = T0 + 500;
    j.created_at = T0 + 10500;
    put(k, &j);
    run_until(k, in, T0 + 30000, 100);
    read_tasks(k, "u", &s);
    for (int64_t at = T0 + 11000; at <= T0 + 13000; at += 1000)
        CHECK(count(&s, at, true) == 1, "the update cancels %lld", (long long)(at - T0));
    CHECK(count(&s, T0 + 10000, true) == 0, "what is due already is not cancelled");
    CHECK(count(&s, T0 + 14500, false) == 1 && count(&s, T0 + 21500, false) == 1 &&
              count(&s, T0 + 28500, false) == 1,
          "the new schedule from its anchor");
    CHECK(count(&s, T0 + 7500, false) == 0, "nothing of the new schedule before the update");
    act(k, "u", MC_JOB_TRIGGER, T0 + 30000);
    run_until(k, in, T0 + 34500, 100); /* 35500 is written from 34000 (half of ahead) */
    act(k, "u", MC_JOB_DELETE, T0 + 34500);
    run_until(k, in, T0 + 60000, 100);
    read_tasks(k, "u", &s);
    CHECK(count(&s, T0 + 30000, false) == 1, "the trigger ran once");
    CHECK(count(&s, T0 + 35500, false) == 1 && count(&s, T0 + 35500, true) == 1,
          "the delete cancelled the one written ahead");
    CHECK(count(&s, T0 + 42500, false) == 0, "nothing after the delete");
    size_t dead = kit_count_keyed(k, "dead", 0) + kit_count_keyed(k, "dead", 1) +
                  kit_count_keyed(k, "dead", 2);
    CHECK(dead == 0, "no dead letters");
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A pause of 30 s, then a resume, under each misfire policy. */
static void misfire_after_a_pause(mc_misfire_policy policy, size_t expect_now)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    mc_job j = base_job("m");
    j.interval_ms = 10000;
    j.misfire = policy;
    j.catch_up_limit = 2;
    put(k, &j);
    sim_inst *in = start(k, cfg, "j1");
    run_until(k, in, T0 + 5000, 100);
    act(k, "m", MC_JOB_PAUSE, T0 + 5000);
    run_until(k, in, T0 + 48000, 100);
    seen s;
    read_tasks(k, "m", &s);
    CHECK(submits(&s) == 1, "only the first before the pause (%zu)", submits(&s));
    /* Missed by more than the 5 s threshold: 10, 20, 30 and 40 s. */
    act(k, "m", MC_JOB_RESUME, T0 + 48000);
    run_until(k, in, T0 + 48050, 10);
    read_tasks(k, "m", &s);
    size_t now_ones = 0;
    for (size_t i = 0; i < s.n; i++)
        if (!s.cancel[i] && s.at[i] > T0 && s.at[i] < T0 + 48000) {
            now_ones++;
            CHECK(s.due[i] >= T0 + 48000, "a missed one runs now, not in the past");
        }
    CHECK(now_ones == expect_now, "policy %d ran %zu missed occurrences", (int)policy, now_ones);
    if (policy == MC_MISFIRE_FIRE_ONCE_NOW)
        CHECK(count(&s, T0 + 40000, false) == 1, "the latest missed one");
    if (policy == MC_MISFIRE_CATCH_UP)
        CHECK(count(&s, T0 + 30000, false) == 1 && count(&s, T0 + 40000, false) == 1,
              "the latest two missed ones");
    run_until(k, in, T0 + 60000, 100);
    read_tasks(k, "m", &s);
    CHECK(count(&s, T0 + 50000, false) == 1 && count(&s, T0 + 60000, false) == 1,
          "then the schedule goes on");
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* The overlap policies: the first occurrence never finishes until a
 * Result comes; what happens to the ones due meanwhile. */
static void overlap(mc_overlap_policy policy)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    mc_job j = base_job("o");
    j.interval_ms = 2000;
    j.overlap = policy;
    put(k, &j);
    sim_inst *in = start(k, cfg, "j1");
    run_until(k, in, T0 + 7000, 50); /* T0 runs; T0+2000, +4000, +6000 are due meanwhile */
    seen s;
    read_tasks(k, "o", &s);
    switch (policy) {
    case MC_OVERLAP_DISCARD_LATER:
        CHECK(submits(&s) == 1 && count(&s, T0, false) == 1, "later ones discarded (%zu)",
              submits(&s));
        break;
    case MC_OVERLAP_SERIAL:
        CHECK(submits(&s) == 1, "one runs, one waits (%zu)", submits(&s));
        break;
    case MC_OVERLAP_COVER_EARLY:
        CHECK(count(&s, T0 + 6000, false) == 1, "the newest runs");
        CHECK(count(&s, T0, true) == 1 && count(&s, T0 + 2000, true) == 1 &&
                  count(&s, T0 + 4000, true) == 1,
              "each older one cancelled");
        break;
    default:
        break;
    }
    /* The running one finishes. */
    int64_t running = policy == MC_OVERLAP_COVER_EARLY ? T0 + 6000 : T0;
    char id[64];
    snprintf(id, sizeof id, "o@%lld", (long long)running);
    result(k, id, MC_OUTCOME_SUCCEEDED, T0 + 7000);
    run_until(k, in, T0 + 7500, 50);
    read_tasks(k, "o", &s);
    if (policy == MC_OVERLAP_SERIAL) {
        CHECK(count(&s, T0 + 2000, false) == 1, "the queued one runs after it");
        CHECK(count(&s, T0 + 4000, false) == 0 && count(&s, T0 + 6000, false) == 0,
              "the rest coalesced");
        for (size_t i = 0; i < s.n; i++)
            if (s.at[i] == T0 + 2000)
                CHECK(s.due[i] >= T0 + 7000, "queued: runs when the previous finished");
    }
    if (policy == MC_OVERLAP_DISCARD_LATER)
        CHECK(count(&s, T0 + 8000, false) == 1, "the next one written ahead again");
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* Fixed delay: the next occurrence is due interval_ms after the previous
 * finished, whenever that is. */
static void fixed_delay_follows_the_finish(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    mc_job j = base_job("d");
    j.kind = MC_SCHEDULE_FIXED_DELAY;
    j.interval_ms = 5000;
    put(k, &j);
    sim_inst *in = start(k, cfg, "j1");
    run_until(k, in, T0 + 20000, 100);
    seen s;
    read_tasks(k, "d", &s);
    CHECK(submits(&s) == 1 && count(&s, T0, false) == 1, "one, waiting for it to finish");
    result(k, "d@1800000000000", MC_OUTCOME_EXHAUSTED, T0 + 20000);
    run_until(k, in, T0 + 30000, 100);
    read_tasks(k, "d", &s);
    CHECK(count(&s, T0 + 25000, false) == 1, "5 s after it finished");
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* end_at and max_runs end a job. */
static void a_job_ends(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    mc_job j = base_job("e1");
    j.max_runs = 3;
    put(k, &j);
    mc_job j2 = base_job("e2");
    j2.end_at = T0 + 4500;
    put(k, &j2);
    sim_inst *in = start(k, cfg, "j1");
    run_until(k, in, T0 + 20000, 100);
    seen s;
    read_tasks(k, "e1", &s);
    CHECK(submits(&s) == 3, "max_runs 3: %zu", submits(&s));
    read_tasks(k, "e2", &s);
    CHECK(submits(&s) == 5, "end_at after the fifth: %zu", submits(&s));
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* Bad jobs go to the dead topic with the field named; good ones are not
 * held up. */
static void bad_jobs_are_dead_lettered(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    mc_job bad_cron = base_job("b1");
    bad_cron.kind = MC_SCHEDULE_CRON;
    bad_cron.cron = "0 0 25 * * ?";
    put(k, &bad_cron);
    mc_job bad_zone = base_job("b2");
    bad_zone.kind = MC_SCHEDULE_CRON;
    bad_zone.cron = "0 0 * * * ?";
    bad_zone.time_zone = "Mars/Olympus";
    put(k, &bad_zone);
    mc_job zero = base_job("b3");
    zero.interval_ms = 0;
    put(k, &zero);
    mc_job never = base_job("b4");
    never.kind = MC_SCHEDULE_CRON;
    never.cron = "0 0 0 30 2 ?";
    put(k, &never);
    act(k, "nope", MC_JOB_PAUSE, T0);
    sim_inst *in = start(k, cfg, "j1");
    run_until(k, in, T0 + 1000, 100);
    const char *want[] = {"schedule.cron", "schedule.time_zone", "schedule.interval_ms",
                          "schedule.cron", "no job a/nope"};
    bool found[5] = {false};
    mc_arena *a = mc_arena_new();
    size_t total = 0;
    for (int32_t q = 0; q < P; q++) {
        sim_rec *r;
        size_t n = sim_read(k, kit_topic("dead"), q, &r);
        for (size_t i = 0; i < n; i++) {
            mc_dead_letter d;
            mc_arena_reset(a);
            if (mc_decode_dead_letter(r[i].value, r[i].value_len, a, &d, NULL, 0) != MC_CODEC_OK)
                continue;
            total++;
            for (int w = 0; w < 5; w++)
                if (strstr(d.reason, want[w]) && !found[w]) {
                    found[w] = true;
                    break;
                }
        }
        free(r);
    }
    mc_arena_free(a);
    CHECK(total == 5, "%zu dead letters", total);
    for (int w = 0; w < 5; w++)
        CHECK(found[w], "a dead letter names %s", want[w]);
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* ---- Found by an adversarial review; each of these failed before its fix, and
 * each comment says what went wrong then. ---- */

/* A job the gateway's limits allow (appId up to 255, job_id up to 200):
 * app/job (456 bytes) fits key_matches()' 464-byte buffer, but the
 * occurrence's key app/job@<ms> (470) does not fit submit()'s, which
 * returns -1: fatal, and the PutJob comes back after every restart. */
static void long_ids_do_not_stall_the_partition(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    char app[256], jid[201];
    memset(app, 'x', 255);
    app[255] = 0;
    memset(jid, 'j', 200);
    jid[200] = 0;
    mc_job j = base_job(jid);
    j.app_id = app;
    mc_job_command c = {.kind = MC_JOBCMD_PUT, .put = j};
    mc_buf b = {0};
    CHECK(mc_encode_job_command(&c, &b) == 0);
    char key[600];
    size_t kl = mc_task_key(app, jid, key, sizeof key);
    sim_append(k, kit_topic("job-commands"), mc_key_partition(key, kl, P), key, kl, b.data, b.len,
               NULL, 0);
    mc_buf_free(&b);
    for (int attempt = 0; attempt < 3; attempt++) {
        char id[8];
        snprintf(id, sizeof id, "j%d", attempt);
        sim_inst *in = sim_inst_new(k, &mc_jobs_processor, cfg, id);
        CHECK(sim_assign_all(in) == 0);
        int rc = sim_settle(in, 50);
        CHECK(rc == 0, "restart %d: the partition goes on past a long-id job (settle %d)", attempt,
              rc);
        sim_crash(in);
    }
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A pause whose catch_up() writes the last occurrence (max_runs reached)
 * ends the job in memory, then job_action's PAUSE returns 0 because the
 * status is no longer ACTIVE: the Submit is committed, the state that says
 * so is not. After a restart the old state writes the occurrence again. */
static void a_pause_that_ends_the_job_is_logged(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    mc_job j = base_job("pe");
    j.interval_ms = 10000;
    j.max_runs = 2;
    put(k, &j);
    sim_inst *in = start(k, cfg, "j1");
    run_until(k, in, T0 + 1000, 100);
    sim_crash(in); /* down from T0+1s: T0+10s not written yet */
    act(k, "pe", MC_JOB_PAUSE, T0 + 11000);
    sim_set_now(k, T0 + 12000);
    in = start(k, cfg, "j2"); /* the pause is read before the timer */
    seen s;
    read_tasks(k, "pe", &s);
    CHECK(count(&s, T0 + 10000, false) == 1, "catch_up wrote T0+10s before the pause");
    sim_crash(in);
    sim_set_now(k, T0 + 13000);
    in = start(k, cfg, "j3");
    run_until(k, in, T0 + 20000, 100);
    read_tasks(k, "pe", &s);
    CHECK(count(&s, T0 + 10000, false) == 1,
          "T0+10s (fired at T0+12s) submitted %zu times after a restart",
          count(&s, T0 + 10000, false));
    CHECK(submits(&s) == 2, "max_runs 2, %zu submits", submits(&s));
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A pause whose requested_at is 10 s behind the processor's clock (a
 * client clock behind, or a lagging partition): cancel_after() "cancels"
 * occurrences that were due and fired 1..10 s ago, rewinds next_at to the
 * first of them and gives back their runs; the resume 100 ms later writes
 * them all again. Each of those calls is made twice. */
static void a_late_pause_does_not_fire_again_what_ran(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    mc_job j = base_job("pr");
    put(k, &j);
    sim_inst *in = start(k, cfg, "j1");
    run_until(k, in, T0 + 20000, 100);
    act(k, "pr", MC_JOB_PAUSE, T0 + 10000);
    run_until(k, in, T0 + 20100, 100);
    act(k, "pr", MC_JOB_RESUME, T0 + 20100);
    run_until(k, in, T0 + 20200, 100);
    seen s;
    read_tasks(k, "pr", &s);
    size_t twice = 0;
    for (int64_t at = T0 + 11000; at <= T0 + 20000; at += 1000)
        twice += count(&s, at, false) > 1; /* first Submit due at `at` <= T0+20s: fired */
    CHECK(twice == 0, "%zu occurrences that had already fired were submitted again", twice);
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* Staleness is measured from the scheduled instant, not from when the
 * occurrence was submitted. A misfired occurrence run now (FIRE_ONCE_NOW),
 * or a SERIAL queued one, can be stale the moment it is submitted: the next
 * one runs beside it though DISCARD_LATER says it must be discarded. */
static void a_misfired_occurrence_runs_from_when_it_started(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0 - 10000);
    mc_job j = base_job("st");
    j.interval_ms = 120000;
    j.overlap = MC_OVERLAP_DISCARD_LATER;
    j.has_retry = true;
    j.retry = (mc_retry_policy){.max_attempts = 1,
                                .initial_backoff_ms = 1000,
                                .multiplier = 2,
                                .max_backoff_ms = 1000}; /* stale bound 62 s */
    put(k, &j);
    sim_inst *in = start(k, cfg, "j1");
    act(k, "st", MC_JOB_PAUSE, T0 - 5000);
    run_until(k, in, T0 + 100000, 1000);
    act(k, "st", MC_JOB_RESUME, T0 + 100000);
    run_until(k, in, T0 + 121000, 100);
    seen s;
    read_tasks(k, "st", &s);
    CHECK(count(&s, T0, false) == 1, "the missed one runs at the resume");
    CHECK(count(&s, T0 + 120000, false) == 0,
          "T0+120s written while T0 (started 20 s before, no Result) still runs");
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* FIXED_DELAY ignores end_at when misfire (DO_NOTHING) or expiry sets
 * next_at = now + interval. */
static void fixed_delay_stops_at_end_at(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    mc_job j = base_job("fe");
    j.kind = MC_SCHEDULE_FIXED_DELAY;
    j.interval_ms = 5000;
    j.end_at = T0 + 30000;
    j.misfire = MC_MISFIRE_DO_NOTHING;
    put(k, &j);
    sim_inst *in = start(k, cfg, "j1");
    run_until(k, in, T0 + 1000, 100);
    result(k, "fe@1800000000000", MC_OUTCOME_SUCCEEDED, T0 + 1000);
    run_until(k, in, T0 + 2000, 100);
    act(k, "fe", MC_JOB_PAUSE, T0 + 2000);
    run_until(k, in, T0 + 40000, 1000);
    act(k, "fe", MC_JOB_RESUME, T0 + 40000);
    run_until(k, in, T0 + 60000, 100);
    seen s;
    read_tasks(k, "fe", &s);
    for (size_t i = 0; i < s.n; i++)
        CHECK(s.cancel[i] || s.at[i] <= T0 + 30000, "occurrence at %lld after end_at (+30000)",
              (long long)(s.at[i] - T0));
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* An update whose created_at is 30 s behind "cancels" (and gives back
 * the runs of) occurrences that already fired: max_runs is exceeded. */
static void a_late_update_keeps_max_runs(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    mc_job j = base_job("mr");
    j.max_runs = 10;
    put(k, &j);
    sim_inst *in = start(k, cfg, "j1");
    run_until(k, in, T0 + 5500, 100);
    j.callback.url = "http://e/job2";
    j.created_at = T0 - 30000;
    put(k, &j);
    run_until(k, in, T0 + 60000, 100);
    seen s;
    read_tasks(k, "mr", &s);
    /* what ran: each instant whose last command is a Submit, plus those whose
     * Cancel came after they were due (T0..T0+5s fired before the update) */
    size_t ran = 0;
    for (int64_t at = T0; at <= T0 + 60000; at += 1000) {
        size_t sub = count(&s, at, false), can = count(&s, at, true);
        if (sub > can || (sub > 0 && at <= T0 + 5500))
            ran++;
    }
    CHECK(ran <= 10, "max_runs 10, %zu occurrences ran", ran);
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A Submit that Kafka refuses for good in punctuate (the occurrence is
 * ~2x job_id + 70 bytes bigger than the job state that was accepted) is
 * fatal: the role exits and does so again after every restart. */
static void an_occurrence_kafka_refuses_pauses_its_job(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    char jid[201];
    memset(jid, 'q', 200);
    jid[200] = 0;
    mc_job j = base_job(jid);
    j.start_at = T0 + 60000; /* first one written in punctuate */
    mc_job_command c = {.kind = MC_JOBCMD_PUT, .put = j};
    mc_buf b = {0};
    CHECK(mc_encode_job_command(&c, &b) == 0);
    size_t limit = b.len + 202 + 120; /* the state fits; the Submit does not */
    mc_buf_free(&b);
    sim_set_max_bytes(k, kit_topic("tasks"), limit);
    sim_set_max_bytes(k, kit_topic("jobs"), limit);
    put(k, &j);
    mc_job other = base_job("other");
    put(k, &other);
    sim_inst *in = start(k, cfg, "j1");
    int rc = 0;
    while (sim_now(k) < T0 + 70000 && rc == 0) {
        sim_advance(k, 100);
        rc = sim_settle(in, 50);
    }
    CHECK(rc == 0, "the role survives a refused occurrence (settle %d at +%lld)", rc,
          (long long)(sim_now(k) - T0));
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* job-commands grown from 3 to 6 partitions: a job's state stays in
 * its old partition's changelog, its commands now go home to the new
 * partition. A DELETE is dead-lettered ("no job") and the job fires on. */
static void growing_the_jobs_topics_stops_the_role(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    const char *id = NULL;
    char ids[64][8];
    for (int i = 0; i < 64 && !id; i++) { /* a key whose home moves */
        snprintf(ids[i], sizeof ids[i], "g%d", i);
        char key[64];
        size_t kl = mc_task_key("a", ids[i], key, sizeof key);
        if (mc_key_partition(key, kl, 3) != mc_key_partition(key, kl, 6))
            id = ids[i];
    }
    mc_job j = base_job(id);
    put(k, &j);
    sim_inst *in = start(k, cfg, "j1");
    run_until(k, in, T0 + 5000, 100);
    sim_stop(in);
    sim_set_partitions(k, kit_topic("job-commands"), 6);
    sim_set_partitions(k, kit_topic("jobs"), 6);
    sim_set_partitions(k, kit_topic("dead"), 6);
    sim_set_partitions(k, kit_topic("results"), 6);
    mc_job_command c = {
        .kind = MC_JOBCMD_ACTION,
        .action = {
            .app_id = "a", .job_id = id, .action = MC_JOB_DELETE, .requested_at = T0 + 5000}};
    mc_buf b = {0};
    CHECK(mc_encode_job_command(&c, &b) == 0);
    char key[64];
    size_t kl = mc_task_key("a", id, key, sizeof key);
    sim_append(k, kit_topic("job-commands"), mc_key_partition(key, kl, 6), key, kl, b.data, b.len,
               NULL, 0);
    mc_buf_free(&b);
    in = sim_inst_new(k, &mc_jobs_processor, cfg, "j2");
    CHECK(sim_assign_all(in) != 0, "the role refuses the grown jobs topics");
    seen s;
    read_tasks(k, id, &s);
    CHECK(count(&s, T0 + 15000, false) == 0, "the job does not fire on where its delete missed it");
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A FIXED_RATE (or FIXED_DELAY) job without start_at is anchored at
 * created_at: an update (a new URL) carries the update's created_at, so it
 * runs at once and its phase moves to the minute of the edit. */
static void an_update_keeps_the_rate_phase(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    mc_job j = base_job("ra");
    j.interval_ms = 60000;
    j.start_at = 0;
    put(k, &j);
    sim_inst *in = start(k, cfg, "j1");
    run_until(k, in, T0 + 30500, 100);
    j.callback.url = "http://e/v2";
    j.created_at = T0 + 30500;
    put(k, &j);
    run_until(k, in, T0 + 125000, 100);
    seen s;
    read_tasks(k, "ra", &s);
    CHECK(count(&s, T0 + 60000, false) == 1 && count(&s, T0 + 120000, false) == 1 &&
              submits(&s) == 3,
          "an edit keeps the rate's phase (%zu submits, first after the edit at +%lld)",
          submits(&s), s.n > 1 ? (long long)(s.at[1] - T0) : -1LL);
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* ---- Found by a second adversarial review (failing before a fix). ---- */

/* A pause requested at +10 s reaches the role at +30 s (it was down):
 * catch_up() must write the occurrences due by +10 s first, late, so the
 * pause never cancels what was due before it was sent. But step()'s
 * misfire() is not bounded by catch_up's `until`: it lumps +5..+24 s
 * together, FIRE_ONCE_NOW picks +24 s (after the pause), and cancel_after()
 * cancels it in the same transaction. Nothing due before the pause runs. */
static void a_pause_after_an_outage_runs_what_was_due_before_it(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    mc_job j = base_job("cu");
    put(k, &j);
    sim_inst *in = start(k, cfg, "j1");
    run_until(k, in, T0 + 1000, 100); /* written up to +4 s */
    sim_crash(in);
    act(k, "cu", MC_JOB_PAUSE, T0 + 10000);
    sim_set_now(k, T0 + 30000);
    in = start(k, cfg, "j2");
    run_until(k, in, T0 + 31000, 100);
    seen s;
    read_tasks(k, "cu", &s);
    size_t ran_before = 0;
    for (int64_t at = T0 + 5000; at <= T0 + 10000; at += 1000)
        ran_before += count(&s, at, false) > count(&s, at, true);
    size_t submit_cancel_after = 0;
    for (int64_t at = T0 + 11000; at <= T0 + 30000; at += 1000)
        submit_cancel_after += count(&s, at, false) > 0 && count(&s, at, true) > 0;
    CHECK(ran_before == 1,
          "FIRE_ONCE_NOW: %zu of the occurrences due before the pause run (want the latest, +10 s)",
          ran_before);
    CHECK(submit_cancel_after == 0,
          "%zu occurrences after the pause's request were submitted and cancelled at once",
          submit_cancel_after);
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* SERIAL with max_runs 2: T0 runs and does not finish, T0+2s is queued
 * (runs 2, counted as run). At T0+4s step() sees ended() and sets ENDED;
 * when T0's Result comes, step() returns at once for a job not ACTIVE, so
 * the queued occurrence, counted in runs, is never written. */
static void a_queued_occurrence_runs_after_max_runs_is_reached(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    mc_job j = base_job("sq");
    j.interval_ms = 2000;
    j.overlap = MC_OVERLAP_SERIAL;
    j.max_runs = 2;
    put(k, &j);
    sim_inst *in = start(k, cfg, "j1");
    run_until(k, in, T0 + 5000, 50);
    result(k, "sq@1800000000000", MC_OUTCOME_SUCCEEDED, T0 + 5000);
    run_until(k, in, T0 + 20000, 50);
    seen s;
    read_tasks(k, "sq", &s);
    CHECK(count(&s, T0 + 2000, false) == 1,
          "the queued occurrence (counted as the 2nd run) was written %zu times",
          count(&s, T0 + 2000, false));
    CHECK(submits(&s) == 2, "max_runs 2: %zu submits", submits(&s));
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A FIXED_DELAY job whose occurrence Kafka refuses is paused, but offer()'s
 * caller has already moved next_at on with schedule_after(), which is -1 for
 * a fixed delay: nothing pending, nothing running. Once the operator raises
 * the topic's limit and resumes it, step() finds "nothing to write, wait for
 * or run" and ENDS the job: it never fires again. */
static void a_refused_fixed_delay_job_fires_after_its_resume(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    char jid[201];
    memset(jid, 'z', 200);
    jid[200] = 0;
    mc_job j = base_job(jid);
    j.kind = MC_SCHEDULE_FIXED_DELAY;
    j.interval_ms = 5000;
    j.start_at = T0 + 60000; /* first one written in punctuate */
    mc_job_command c = {.kind = MC_JOBCMD_PUT, .put = j};
    mc_buf b = {0};
    CHECK(mc_encode_job_command(&c, &b) == 0);
    size_t limit = b.len + 202 + 120; /* the state fits; the Submit does not */
    mc_buf_free(&b);
    sim_set_max_bytes(k, kit_topic("tasks"), limit);
    put(k, &j);
    sim_inst *in = start(k, cfg, "j1");
    run_until(k, in, T0 + 58000, 1000);          /* refused at +57 s: paused */
    sim_set_max_bytes(k, kit_topic("tasks"), 0); /* the operator raises the limit */
    act(k, jid, MC_JOB_RESUME, T0 + 58000);
    run_until(k, in, T0 + 70000, 100);
    seen s;
    read_tasks(k, jid, &s);
    CHECK(submits(&s) >= 1, "resumed fixed-delay job wrote %zu occurrences", submits(&s));
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A FIXED_RATE job without start_at is anchored at created_at, and the
 * gateway (mc_job_next_fires, with its now == created_at) answers
 * nextFireTimes [created_at, +N, ...]; mc_job_ok() at the gateway finds
 * created_at as the first fire. The processor reads the PutJob a few ms
 * later and starts after now - 1: the occurrence at created_at is never
 * written, and with end_at before created_at + N the job the gateway
 * accepted is dead-lettered ("never fires before end_at"), against
 * job_schedule.h's "a job the gateway accepts is never dead-lettered". */
static void a_new_fixed_rate_job_fires_at_its_anchor(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    mc_job j = base_job("fa");
    j.interval_ms = 60000;
    j.start_at = 0;
    j.created_at = T0;
    int64_t want[1];
    char why[256];
    mc_zone_cache *z = mc_zone_cache_new(NULL);
    CHECK(mc_job_next_fires(&j, T0, z, want, 1, why, sizeof why) == 1 && want[0] == T0,
          "the gateway promises created_at first");
    mc_job e = base_job("fe2");
    e.interval_ms = 60000;
    e.start_at = 0;
    e.end_at = T0 + 30000;
    CHECK(mc_job_ok(&e, T0, z, &mc_job_avro_names, why, sizeof why), "the gateway accepts fe2");
    mc_zone_cache_free(z);
    put(k, &j);
    put(k, &e);
    sim_set_now(k, T0 + 20); /* the role reads them 20 ms later */
    sim_inst *in = start(k, cfg, "j1");
    run_until(k, in, T0 + 70000, 100);
    seen s;
    read_tasks(k, "fa", &s);
    CHECK(count(&s, T0, false) == 1, "the promised first occurrence (created_at) written %zu times",
          count(&s, T0, false));
    read_tasks(k, "fe2", &s);
    size_t dead = kit_count_keyed(k, "dead", 0) + kit_count_keyed(k, "dead", 1) +
                  kit_count_keyed(k, "dead", 2);
    CHECK(dead == 0 && count(&s, T0, false) == 1,
          "a job the gateway accepted: %zu dead letters, %zu submits", dead, submits(&s));
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

int main(void)
{
    every_occurrence_once_across_kills_and_aborts();
    cron_in_a_time_zone();
    update_delete_and_trigger();
    misfire_after_a_pause(MC_MISFIRE_FIRE_ONCE_NOW, 1);
    misfire_after_a_pause(MC_MISFIRE_DO_NOTHING, 0);
    misfire_after_a_pause(MC_MISFIRE_CATCH_UP, 2);
    overlap(MC_OVERLAP_DISCARD_LATER);
    overlap(MC_OVERLAP_SERIAL);
    overlap(MC_OVERLAP_COVER_EARLY);
    fixed_delay_follows_the_finish();
    a_job_ends();
    bad_jobs_are_dead_lettered();
    long_ids_do_not_stall_the_partition();
    a_pause_that_ends_the_job_is_logged();
    a_late_pause_does_not_fire_again_what_ran();
    a_misfired_occurrence_runs_from_when_it_started();
    fixed_delay_stops_at_end_at();
    a_late_update_keeps_max_runs();
    an_occurrence_kafka_refuses_pauses_its_job();
    growing_the_jobs_topics_stops_the_role();
    an_update_keeps_the_rate_phase();
    a_pause_after_an_outage_runs_what_was_due_before_it();
    a_queued_occurrence_runs_after_max_runs_is_reached();
    a_refused_fixed_delay_job_fires_after_its_resume();
    a_new_fixed_rate_job_fires_at_its_anchor();
    return check_exit("test_jobs_sim");
}
