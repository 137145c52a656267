/* The alarms processor driven record by record through tests/sim. What a
 * user sees is the alarm tasks in `tasks`: each app's dead letters counted
 * in exactly one alarm across kills, aborts and restores, at most one alarm
 * per app per interval, the first after a quiet spell within a second, the
 * webhook and body right, and no alarm for what must not raise one. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alarm.h"
#include "alarms.h"
#include "check.h"
#include "kafka.h"
#include "simkit.h"

#define T0 INT64_C(1800000000000)
#define P 3
#define INTERVAL 60000

static uint64_t rng_state = 11;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * UINT64_C(2685821657736338717);
}

/* A dead letter of app/id, as the retry processor writes it. */
static void dead(sim_kafka *k, const char *app, const char *id, const char *job_id, bool with_task)
{
    mc_task t = kit_task(id, sim_now(k), "http://e/x");
    t.app_id = app;
    mc_kv meta[] = {{"job_id", job_id}}, alarm[] = {{MC_ALARM_METADATA, "1"}};
    if (job_id) {
        t.metadata = meta;
        t.n_metadata = 1;
    } else if (strncmp(id, MC_ALARM_TASK_PREFIX, strlen(MC_ALARM_TASK_PREFIX)) == 0) {
        t.metadata = alarm; /* as the alarms role writes its calls */
        t.n_metadata = 1;
    }
    mc_dead_letter d = {.reason = "gave up after 5 attempts; the last failed: HTTP 500",
                        .source_topic = "t.retry",
                        .failed_at = sim_now(k),
                        .has_task = with_task,
                        .task = t};
    mc_buf b = {0};
    CHECK(mc_encode_dead_letter(&d, &b) == 0);
    char key[8192];
    size_t kl = mc_task_key(app, id, key, sizeof key);
    CHECK(kl < sizeof key);
    sim_append(k, kit_topic("dead"), mc_key_partition(key, kl, P), key, kl, b.data, b.len, NULL, 0);
    mc_buf_free(&b);
}

/* The alarms in `tasks`, as a user's webhook would receive them. */
typedef struct alarm_seen {
    char app[64], url[256], id[96];
    int64_t due, dead_letters, n_first, n_jobs, job_failed;
    char first_key[128];
} alarm_seen;

static size_t read_alarms(sim_kafka *k, alarm_seen *out, size_t max)
{
    size_t n = 0;
    mc_arena *a = mc_arena_new();
    for (int32_t q = 0; q < P; q++) {
        sim_rec *r;
        size_t got = sim_read(k, kit_topic("tasks"), q, &r);
        for (size_t i = 0; i < got && n < max; i++) {
            mc_command c;
            mc_arena_reset(a);
            if (mc_decode_command(NULL, r[i].value, r[i].value_len, a, &c, NULL, 0) !=
                    MC_CODEC_OK ||
                c.kind != MC_CMD_SUBMIT)
                continue;
            const mc_task *t = &c.submit;
            alarm_seen *s = &out[n++];
            memset(s, 0, sizeof *s);
            snprintf(s->app, sizeof s->app, "%s", t->app_id);
            snprintf(s->url, sizeof s->url, "%s", t->callback.url);
            snprintf(s->id, sizeof s->id, "%s", t->task_id);
            s->due = t->due_at;
            char key[256];
            size_t kl = mc_task_key(t->app_id, t->task_id, key, sizeof key);
            CHECK(mc_key_partition(key, kl, P) == q, "alarm %s at its home partition", key);
            CHECK(strcmp(t->callback.method, "POST") == 0);
            json_error_t je;
            json_t *body = json_loadb((const char *)t->callback.body, t->callback.body_len, 0, &je);
            CHECK(body != NULL, "body is JSON: %s", je.text);
            if (!body)
                continue;
            CHECK(strcmp(json_string_value(json_object_get(body, "type")), "mooncake.alarm") == 0);
            CHECK(strcmp(json_string_value(json_object_get(body, "appId")), t->app_id) == 0);
            s->dead_letters = json_integer_value(json_object_get(body, "deadLetters"));
            json_t *first = json_object_get(body, "first"), *jobs = json_object_get(body, "jobs");
            s->n_first = (int64_t)json_array_size(first);
            s->n_jobs = (int64_t)json_array_size(jobs);
            if (s->n_first)
                snprintf(s->first_key, sizeof s->first_key, "%s",
                         json_string_value(json_object_get(json_array_get(first, 0), "key")));
            if (s->n_jobs)
                s->job_failed = json_integer_value(
                    json_object_get(json_array_get(jobs, 0), "failedOccurrences"));
            json_decref(body);
        }
        free(r);
    }
    mc_arena_free(a);
    /* By due time: alarms of different apps sit in different partitions. */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && out[j - 1].due > out[j].due; j--) {
            alarm_seen t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

static mc_config *config(const char *webhooks)
{
    char flag[512];
    snprintf(flag, sizeof flag, "--alarm-webhooks=%s", webhooks);
    const char *flags[] = {flag, NULL};
    return kit_config("alarms", flags);
}

static sim_inst *start(sim_kafka *k, const mc_config *cfg, const char *id)
{
    sim_inst *in = sim_inst_new(k, &mc_alarms_processor, cfg, id);
    CHECK(in != NULL);
    CHECK(sim_assign_all(in) == 0);
    CHECK(sim_settle(in, 50) == 0);
    return in;
}

static void run_for(sim_kafka *k, sim_inst *in, int64_t ms)
{
    int64_t until = sim_now(k) + ms;
    while (sim_now(k) < until) {
        sim_advance(k, 100);
        CHECK(sim_settle(in, 50) == 0);
    }
}

/* A burst, then more within the interval, then more after it: the first
 * alarm tells of the burst a second after it began, the next one comes a
 * whole interval later with the rest, and the counts add up. */
static void batched_and_rate_limited(void)
{
    mc_config *cfg = config("a=https://hooks.example/a");
    sim_kafka *k = sim_kafka_new(P, T0);
    sim_inst *in = start(k, cfg, "x1");
    for (int i = 0; i < 25; i++) {
        char id[32];
        snprintf(id, sizeof id, "t%d", i);
        dead(k, "a", id, i < 4 ? "nightly" : NULL, true);
    }
    run_for(k, in, 2000);
    alarm_seen s[16];
    size_t n = read_alarms(k, s, 16);
    CHECK(n == 1, "one alarm for the burst, got %zu", n);
    if (n == 1) {
        CHECK(s[0].dead_letters == 25, "it counts the burst: %lld", (long long)s[0].dead_letters);
        CHECK(s[0].n_first == MC_ALARM_FIRST, "first keys listed: %lld", (long long)s[0].n_first);
        /* The first to reach the alarm: the burst's, in each dead partition's order. */
        CHECK(strncmp(s[0].first_key, "a/t", 3) == 0, "a key of the burst: %s", s[0].first_key);
        CHECK(s[0].n_jobs == 1 && s[0].job_failed == 4, "the failing job and its count");
        CHECK(strcmp(s[0].url, "https://hooks.example/a") == 0);
        CHECK(strcmp(s[0].app, "a") == 0);
        CHECK(strncmp(s[0].id, MC_ALARM_TASK_PREFIX, strlen(MC_ALARM_TASK_PREFIX)) == 0);
        CHECK(s[0].due <= sim_now(k) && s[0].due >= T0 + 1000, "due when written, after 1 s");
    }
    /* More dead letters 10 s later: nothing before the interval ends. */
    for (int i = 0; i < 7; i++) {
        char id[32];
        snprintf(id, sizeof id, "u%d", i);
        dead(k, "a", id, NULL, true);
        run_for(k, in, 1000);
    }
    run_for(k, in, INTERVAL - 20000);
    CHECK(read_alarms(k, s, 16) == 1, "still one alarm within the interval");
    run_for(k, in, 15000);
    n = read_alarms(k, s, 16);
    CHECK(n == 2, "the second alarm after the interval, got %zu", n);
    if (n == 2) {
        CHECK(s[1].dead_letters == 7);
        CHECK(s[1].due - s[0].due >= INTERVAL, "an interval apart: %lld",
              (long long)(s[1].due - s[0].due));
    }
    CHECK(sim_counter(in, "mooncake_alarms_total", NULL) == 2);
    CHECK(sim_counter(in, "mooncake_alarm_counted_dead_letters_total", NULL) == 32);
    sim_stop(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* Dead letters keep coming while the instance is killed, aborted and
 * replaced at random moments: every dead letter is counted in exactly one
 * alarm, and two alarms of an app are never closer than the interval. */
static void each_dead_letter_once_across_kills_and_aborts(void)
{
    mc_config *cfg = config("a=https://hooks.example/a,b=https://hooks.example/b");
    sim_kafka *k = sim_kafka_new(P, T0);
    sim_inst *in = start(k, cfg, "x1");
    int written = 0, gen = 1;
    while (sim_now(k) < T0 + 10 * INTERVAL) {
        sim_advance(k, 1 + (int64_t)(rnd() % 3000));
        int burst = (int)(rnd() % 5);
        for (int i = 0; i < burst; i++, written++) {
            char id[32];
            snprintf(id, sizeof id, "d%d", written);
            dead(k, written % 3 ? "a" : "b", id, NULL, true);
        }
        switch (rnd() % 8) {
        case 0:
            CHECK(sim_turn(in, 3, false) == 0);
            sim_crash(in);
            {
                /* Restarted under its own id (its open transaction aborted at
                 * once), or replaced under another once the broker has timed
                 * the transaction out. */
                char id[16];
                if (rnd() % 2) {
                    snprintf(id, sizeof id, "x%d", ++gen);
                    sim_expire_transactions(k);
                } else {
                    snprintf(id, sizeof id, "x%d", gen);
                }
                in = start(k, cfg, id);
            }
            break;
        case 1:
            CHECK(sim_turn(in, 3, false) == 0);
            CHECK(sim_abort(in) == 0);
            break;
        default:
            CHECK(sim_settle(in, 50) == 0);
        }
    }
    sim_expire_transactions(k);
    run_for(k, in, 2 * INTERVAL);
    static alarm_seen s[4096];
    size_t n = read_alarms(k, s, 4096);
    int64_t counted[2] = {0, 0}, last[2] = {-1, -1};
    int expect[2] = {0, 0};
    for (int i = 0; i < written; i++)
        expect[i % 3 ? 0 : 1]++;
    for (size_t i = 0; i < n; i++) {
        int app = s[i].app[0] == 'a' ? 0 : 1;
        counted[app] += s[i].dead_letters;
        CHECK(last[app] < 0 || s[i].due - last[app] >= INTERVAL, "alarms of %s %lld ms apart",
              s[i].app, (long long)(s[i].due - last[app]));
        last[app] = s[i].due;
    }
    CHECK(counted[0] == expect[0] && counted[1] == expect[1],
          "counted a %lld of %d, b %lld of %d, in %zu alarms", (long long)counted[0], expect[0],
          (long long)counted[1], expect[1], n);
    sim_stop(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* No alarm for an app without a webhook, for a dead letter that names no
 * task, or for an alarm's own call going dead; "*" covers other apps. */
static void what_raises_no_alarm(void)
{
    mc_config *cfg = config("a=https://hooks.example/a");
    sim_kafka *k = sim_kafka_new(P, T0);
    sim_inst *in = start(k, cfg, "x1");
    dead(k, "other", "t1", NULL, true);
    dead(k, "a", "t2", NULL, false);
    dead(k, "a", MC_ALARM_TASK_PREFIX "1799999999000", NULL, true);
    run_for(k, in, 3000);
    alarm_seen s[4];
    CHECK(read_alarms(k, s, 4) == 0);
    CHECK(sim_counter(in, "mooncake_alarm_dead_letters_total", "outcome=\"no_webhook\"") == 1);
    CHECK(sim_counter(in, "mooncake_alarm_dead_letters_total", "outcome=\"no_task\"") == 1);
    CHECK(sim_counter(in, "mooncake_alarm_dead_letters_total", "outcome=\"alarm_call\"") == 1);
    sim_stop(in);
    sim_kafka_free(k);
    kit_config_free(cfg);

    cfg = config("*=https://hooks.example/all");
    k = sim_kafka_new(P, T0);
    in = start(k, cfg, "x1");
    dead(k, "other", "t1", NULL, true);
    run_for(k, in, 3000);
    CHECK(read_alarms(k, s, 4) == 1 && strcmp(s[0].url, "https://hooks.example/all") == 0);
    sim_stop(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* Hostile or odd input never stops the role: an app id too long for an
 * alarm's key, or with a '/', raises none (counted), and an alarm-events
 * record with such a key is skipped; the other app is alarmed on time. */
static void odd_apps_stop_nothing(void)
{
    mc_config *cfg = config("*=https://hooks.example/all");
    sim_kafka *k = sim_kafka_new(P, T0);
    sim_inst *in = start(k, cfg, "x1");
    char long_app[5000];
    memset(long_app, 'L', sizeof long_app - 1);
    long_app[sizeof long_app - 1] = '\0';
    dead(k, long_app, "t1", NULL, true);
    dead(k, "sla/sh", "t1", NULL, true);
    dead(k, "", "t1", NULL, true);
    static const char ev[] = "{\"key\":\"x/t\",\"reason\":\"r\",\"failedAt\":1}";
    sim_append(k, kit_topic("alarm-events"), 0, long_app, strlen(long_app), ev, sizeof ev - 1, NULL,
               0);
    sim_append(k, kit_topic("alarm-events"), 0, "a/b", 3, ev, sizeof ev - 1, NULL, 0);
    dead(k, "good", "t1", NULL, true);
    run_for(k, in, 3000);
    alarm_seen s[4];
    size_t n = read_alarms(k, s, 4);
    CHECK(n == 1 && strcmp(s[0].app, "good") == 0, "only the good app alarmed (%zu)", n);
    CHECK(sim_counter(in, "mooncake_alarm_dead_letters_total", "outcome=\"bad_app\"") == 3);
    CHECK(sim_counter(in, "mooncake_alarm_bad_events_total", NULL) == 2);
    CHECK(sim_stop(in) == 0);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* 300 apps' batches wait when their webhook is removed and the role
 * restarted: each batch is dropped once (counted once, even across another
 * restart), punctuate returns, and no alarm is written. */
static void a_removed_webhook_drops_once_and_hangs_nothing(void)
{
    mc_config *cfg = config("*=https://hooks.example/all");
    sim_kafka *k = sim_kafka_new(P, T0);
    sim_inst *in = start(k, cfg, "x1");
    for (int i = 0; i < 300; i++) {
        char app[16];
        snprintf(app, sizeof app, "app%d", i);
        dead(k, app, "first", NULL, true);
    }
    run_for(k, in, 2000); /* the first alarms go out */
    for (int i = 0; i < 300; i++) {
        char app[16];
        snprintf(app, sizeof app, "app%d", i);
        dead(k, app, "second", NULL, true);
    }
    run_for(k, in, 1000); /* gathered, waiting for the interval */
    alarm_seen *s = calloc(1024, sizeof *s);
    CHECK(read_alarms(k, s, 1024) == 300);
    CHECK(sim_stop(in) == 0);
    mc_config *none = config("");
    in = start(k, none, "x1");
    run_for(k, in, INTERVAL + 5000);
    CHECK(sim_counter(in, "mooncake_alarm_dropped_dead_letters_total", NULL) == 300, "dropped %llu",
          (unsigned long long)sim_counter(in, "mooncake_alarm_dropped_dead_letters_total", NULL));
    CHECK(sim_stop(in) == 0);
    in = start(k, none, "x1");
    run_for(k, in, 2000);
    CHECK(sim_counter(in, "mooncake_alarm_dropped_dead_letters_total", NULL) == 0,
          "a restart drops nothing again");
    CHECK(read_alarms(k, s, 1024) == 300, "no alarm without a webhook");
    free(s);
    CHECK(sim_stop(in) == 0);
    sim_kafka_free(k);
    kit_config_free(none);
    kit_config_free(cfg);
}

/* The wall clock stepped a day ahead while an alarm went out, then back:
 * the next alarm waits an interval, not a day. And a backlog read at once
 * after a stop is told in one alarm, not one dead letter then the rest. */
static void clock_steps_and_backlogs(void)
{
    mc_config *cfg = config("a=https://hooks.example/a");
    sim_kafka *k = sim_kafka_new(P, T0);
    sim_inst *in = start(k, cfg, "x1");
    sim_set_now(k, T0 + 86400000);
    dead(k, "a", "t1", NULL, true);
    run_for(k, in, 2000);
    sim_set_now(k, T0 + 5000); /* corrected */
    dead(k, "a", "t2", NULL, true);
    run_for(k, in, INTERVAL + 3000);
    alarm_seen s[8];
    size_t n = read_alarms(k, s, 8);
    CHECK(n == 2, "the second alarm within an interval of the correction (%zu)", n);
    CHECK(sim_stop(in) == 0);
    /* Stopped for ten minutes while 50 dead letters came. */
    for (int i = 0; i < 50; i++) {
        char id[16];
        snprintf(id, sizeof id, "b%d", i);
        sim_advance(k, 12000);
        dead(k, "a", id, NULL, true);
    }
    in = start(k, cfg, "x1");
    run_for(k, in, 3000);
    n = read_alarms(k, s, 8);
    int64_t backlog = 0; /* by due time the day-ahead alarm sorts last */
    for (size_t i = 0; i < n; i++)
        if (s[i].due > T0 + 600000 && s[i].due < T0 + 86400000)
            backlog = s[i].dead_letters;
    CHECK(n == 3 && backlog == 50, "the backlog in one alarm (%zu alarms, %lld in it)", n,
          (long long)backlog);
    CHECK(sim_stop(in) == 0);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

int main(void)
{
    batched_and_rate_limited();
    each_dead_letter_once_across_kills_and_aborts();
    what_raises_no_alarm();
    odd_apps_stop_nothing();
    a_removed_webhook_drops_once_and_hangs_nothing();
    clock_steps_and_backlogs();
    return check_exit("test_alarms_sim");
}
