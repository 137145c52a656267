/* Sharding broadcasts driven record by record through tests/sim: the test plays the
 * executor (the StartBroadcast it writes when the task is due) and the shards' calls
 * (their Results, with the broadcast headers the executor sets); the jobs processor
 * relays each final one and writes the broadcast task's Result. What each test
 * asserts is what a client would see: exactly one Result of the task, whatever order
 * its shards end in and whatever is killed, SUCCEEDED only when every shard
 * succeeded, naming the shards that did not, with the chain headers of the task; its
 * follow-ups only after a success; a lost shard holds it only for its bound. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broadcast.h"
#include "chains.h"
#include "check.h"
#include "jobs.h"
#include "kafka.h"
#include "simkit.h"

#define T0 INT64_C(1800000000000) /* 2027-01-15T08:00:00Z */
#define P 3
#define MAX_SHARDS 5
#define DAY INT64_C(86400000)

static uint64_t rng_state = 7;
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

static const char *const MEMBERS[MAX_SHARDS] = {"http://a:8080", "http://b:8080", "http://c:8080",
                                                "http://d:8080", "http://e:8080"};

/* The StartBroadcast the executor writes for task id (version v, n shards, fired at
 * fired_at) with this retry policy; chained: the task carries a chain's metadata; with a
 * follow-up. */
static void start_broadcast_retry(sim_kafka *k, const char *id, int64_t v, size_t n,
                                  int64_t fired_at, bool chained, mc_retry_policy retry)
{
    mc_kv meta[2] = {{MC_CHAIN_METADATA, "k"}, {MC_LINK_METADATA, "7"}};
    mc_follow_up then = {
        .task_id = "", .delay_ms = 1000, .callback = {.url = "http://e/next", .method = "POST"}};
    mc_job_command c = {.kind = MC_JOBCMD_START_BROADCAST};
    c.start_broadcast =
        (mc_start_broadcast){.task = {.app_id = "a",
                                      .task_id = id,
                                      .due_at = fired_at - 5,
                                      .callback = {.url = "group://all", .method = "POST"},
                                      .has_retry = true,
                                      .retry = retry,
                                      .attempt = 1,
                                      .created_at = T0 - 60000,
                                      .metadata = chained ? meta : NULL,
                                      .n_metadata = chained ? 2 : 0,
                                      .on_success = &then,
                                      .n_on_success = 1},
                             .version = v,
                             .members = MEMBERS,
                             .n_members = n,
                             .fired_at = fired_at};
    mc_buf b = {0};
    CHECK(mc_encode_job_command(&c, &b) == 0);
    char key[256];
    size_t kl = mc_task_key("a", id, key, sizeof key);
    sim_append(k, kit_topic("job-commands"), mc_key_partition(key, kl, P), key, kl, b.data, b.len,
               NULL, 0);
    mc_buf_free(&b);
}

/* The same with one attempt (its stale bound: 2 s timeout + 1 s, and a minute). */
static void start_broadcast(sim_kafka *k, const char *id, int64_t v, size_t n, int64_t fired_at,
                            bool chained)
{
    mc_retry_policy once = {
        .max_attempts = 1, .initial_backoff_ms = 100, .multiplier = 2, .max_backoff_ms = 100};
    start_broadcast_retry(k, id, v, n, fired_at, chained, once);
}

/* A Result of shard i of n of broadcast id (version v), as the executor writes it. */
static void shard_result(sim_kafka *k, const char *id, int32_t i, int32_t n, int64_t v,
                         mc_outcome o, int64_t finished_at)
{
    char shard_id[128], ref[64];
    mc_shard_task_id(id, i, shard_id, sizeof shard_id);
    mc_shard_ref sr = {i, n, v};
    mc_shard_ref_format(&sr, ref, sizeof ref);
    mc_kv meta[3] = {
        {MC_BROADCAST_METADATA, id}, {MC_SHARD_METADATA, ref}, {MC_MEMBER_METADATA, MEMBERS[i]}};
    mc_task t = {.app_id = "a", .task_id = shard_id, .metadata = meta, .n_metadata = 3};
    mc_header h[2];
    CHECK(mc_broadcast_result_headers(&t, h) == 2);
    mc_result r = {.app_id = "a",
                   .task_id = shard_id,
                   .attempt = 1,
                   .due_at = finished_at - 10,
                   .started_at = finished_at - 5,
                   .finished_at = finished_at,
                   .http_status = o == MC_OUTCOME_SUCCEEDED ? 200 : 500,
                   .outcome = o,
                   .error = "",
                   .version = v + 1 + i,
                   .response_size = -1,
                   .member = MEMBERS[i]};
    mc_buf b = {0};
    CHECK(mc_encode_result(&r, &b) == 0);
    char key[256];
    size_t kl = mc_task_key("a", shard_id, key, sizeof key);
    sim_append(k, kit_topic("results"), mc_key_partition(key, kl, P), key, kl, b.data, b.len, h, 2);
    mc_buf_free(&b);
}

/* The ShardDone the relay writes to job-commands for shard i of broadcast id (version
 * v), as it does once it has read the shard's final Result. */
static void shard_done(sim_kafka *k, const char *id, int32_t i, int64_t v, mc_outcome o,
                       int64_t finished_at)
{
    mc_job_command c = {.kind = MC_JOBCMD_SHARD_DONE};
    c.shard_done = (mc_shard_done){.app_id = "a",
                                   .task_id = id,
                                   .version = v,
                                   .end = {.shard = i, .outcome = o, .finished_at = finished_at}};
    mc_buf b = {0};
    CHECK(mc_encode_job_command(&c, &b) == 0);
    char key[256];
    size_t kl = mc_task_key("a", id, key, sizeof key);
    sim_append(k, kit_topic("job-commands"), mc_key_partition(key, kl, P), key, kl, b.data, b.len,
               NULL, 0);
    mc_buf_free(&b);
}

/* The Results of task id (all partitions); the last one's fields. */
typedef struct parent_result {
    size_t count;
    mc_outcome outcome;
    int64_t version, started_at, finished_at;
    char error[512], body[1024], chain[32], link[32];
} parent_result;

static parent_result parent(sim_kafka *k, const char *id)
{
    parent_result out = {0};
    mc_arena *a = mc_arena_new();
    for (int32_t q = 0; q < P; q++) {
        sim_rec *r;
        size_t n = sim_read(k, kit_topic("results"), q, &r);
        for (size_t i = 0; i < n; i++) {
            mc_result res;
            mc_arena_reset(a);
            CHECK(mc_decode_result(r[i].value, r[i].value_len, a, &res, NULL, 0) == MC_CODEC_OK);
            if (strcmp(res.task_id, id) != 0)
                continue;
            char key[256];
            size_t kl = mc_task_key("a", id, key, sizeof key);
            CHECK(mc_key_partition(key, kl, P) == q, "the Result is at its key's home");
            out.count++;
            out.outcome = res.outcome;
            out.version = res.version;
            out.started_at = res.started_at;
            out.finished_at = res.finished_at;
            snprintf(out.error, sizeof out.error, "%s", res.error);
            snprintf(out.body, sizeof out.body, "%.*s", (int)res.response_body_len,
                     (const char *)res.response_body);
            const mc_header *c = sim_rec_header(&r[i], MC_CHAIN_HEADER);
            const mc_header *l = sim_rec_header(&r[i], MC_LINK_HEADER);
            snprintf(out.chain, sizeof out.chain, "%.*s", c ? (int)c->len : 0,
                     c ? (const char *)c->value : "");
            snprintf(out.link, sizeof out.link, "%.*s", l ? (int)l->len : 0,
                     l ? (const char *)l->value : "");
        }
        free(r);
    }
    mc_arena_free(a);
    return out;
}

/* How many Submits of task id `<id>.then1` (the follow-up) tasks holds; *due: the
 * last one's due time. */
static size_t follow_ups(sim_kafka *k, const char *id, int64_t *due)
{
    char want[128];
    snprintf(want, sizeof want, "%s.then1", id);
    size_t count = 0;
    mc_arena *a = mc_arena_new();
    for (int32_t q = 0; q < P; q++) {
        sim_rec *r;
        size_t n = sim_read(k, kit_topic("tasks"), q, &r);
        for (size_t i = 0; i < n; i++) {
            mc_command c;
            mc_arena_reset(a);
            CHECK(mc_decode_command(NULL, r[i].value, r[i].value_len, a, &c, NULL, 0) ==
                  MC_CODEC_OK);
            if (c.kind != MC_CMD_SUBMIT || strcmp(c.submit.task_id, want) != 0)
                continue;
            count++;
            if (due)
                *due = c.submit.due_at;
            char parent_key[128];
            snprintf(parent_key, sizeof parent_key, "a/%s", id);
            CHECK(c.submit.n_metadata == 1 &&
                      strcmp(c.submit.metadata[0].key, "mooncake.parent") == 0 &&
                      strcmp(c.submit.metadata[0].value, parent_key) == 0,
                  "the follow-up names its parent");
        }
        free(r);
    }
    mc_arena_free(a);
    return count;
}

/* The dead letters of broadcast id (those whose reason names its key); the last one's
 * fields. */
typedef struct dead_letters {
    size_t count;
    bool has_task;
    char task_id[64], topic[64], key[64], reason[512];
    int32_t partition, letter_partition;
    int64_t offset;
} dead_letters;

static dead_letters dead(sim_kafka *k, const char *id)
{
    dead_letters out = {0};
    char want[128];
    snprintf(want, sizeof want, "broadcast a/%s ", id);
    mc_arena *a = mc_arena_new();
    for (int32_t q = 0; q < P; q++) {
        sim_rec *r;
        size_t n = sim_read(k, kit_topic("dead"), q, &r);
        for (size_t i = 0; i < n; i++) {
            mc_dead_letter d;
            mc_arena_reset(a);
            CHECK(mc_decode_dead_letter(r[i].value, r[i].value_len, a, &d, NULL, 0) == MC_CODEC_OK);
            if (!strstr(d.reason, want))
                continue;
            out.count++;
            out.has_task = d.has_task;
            snprintf(out.task_id, sizeof out.task_id, "%s", d.has_task ? d.task.task_id : "");
            snprintf(out.topic, sizeof out.topic, "%s", d.source_topic);
            snprintf(out.key, sizeof out.key, "%.*s", (int)r[i].key_len, (const char *)r[i].key);
            snprintf(out.reason, sizeof out.reason, "%s", d.reason);
            out.partition = d.source_partition;
            out.letter_partition = q;
            out.offset = d.source_offset;
        }
        free(r);
    }
    mc_arena_free(a);
    return out;
}

static sim_inst *start(sim_kafka *k, const mc_config *cfg, const char *id)
{
    sim_inst *in = sim_inst_new(k, &mc_jobs_processor, cfg, id);
    CHECK(in != NULL);
    CHECK(sim_assign_all(in) == 0);
    CHECK(sim_settle(in, 50) == 0);
    return in;
}

static void settle(sim_kafka *k, sim_inst *in, int64_t ms)
{
    sim_advance(k, ms);
    CHECK(sim_settle(in, 50) == 0);
}

/* Three shards ending out of order, a not-final Result and a repeated one on the way:
 * one SUCCEEDED Result once the last ends (none before), its body the shards, its
 * chain headers the task's; its follow-up due after the latest shard's end. */
static void shards_in_any_order_make_one_result(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    start_broadcast(k, "b", 100, 3, T0, true);
    sim_inst *in = start(k, cfg, "j1");
    CHECK(sim_gauge(in, "mooncake_broadcasts_open", NULL) == 1);
    shard_result(k, "b", 2, 3, 100, MC_OUTCOME_SUCCEEDED, T0 + 300);
    shard_result(k, "b", 0, 3, 100, MC_OUTCOME_FAILED_WILL_RETRY, T0 + 100);
    settle(k, in, 10);
    shard_result(k, "b", 0, 3, 100, MC_OUTCOME_SUCCEEDED, T0 + 400);
    shard_result(k, "b", 2, 3, 100, MC_OUTCOME_SUCCEEDED, T0 + 300); /* the same again */
    settle(k, in, 10);
    CHECK(parent(k, "b").count == 0, "no Result while shard 1 runs");
    CHECK(follow_ups(k, "b", NULL) == 0);
    shard_result(k, "b", 1, 3, 100, MC_OUTCOME_SUCCEEDED, T0 + 250);
    settle(k, in, 10);
    parent_result r = parent(k, "b");
    CHECK(r.count == 1, "%zu Results", r.count);
    CHECK(r.outcome == MC_OUTCOME_SUCCEEDED, "outcome %d", (int)r.outcome);
    CHECK(strcmp(r.error, "") == 0, "error %s", r.error);
    CHECK(r.version == 100 && r.started_at == T0 && r.finished_at == T0 + 400);
    CHECK(strcmp(r.body, "{\"shards\":[{\"shard\":0,\"member\":\"http://a:8080\",\"outcome\":"
                         "\"SUCCEEDED\",\"finishedAt\":1800000000400},{\"shard\":1,\"member\":"
                         "\"http://b:8080\",\"outcome\":\"SUCCEEDED\",\"finishedAt\":"
                         "1800000000250},{\"shard\":2,\"member\":\"http://c:8080\",\"outcome\":"
                         "\"SUCCEEDED\",\"finishedAt\":1800000000300}]}") == 0,
          "body %s", r.body);
    CHECK(strcmp(r.chain, "k") == 0 && strcmp(r.link, "7") == 0, "chain headers %s %s", r.chain,
          r.link);
    int64_t due = 0;
    CHECK(follow_ups(k, "b", &due) == 1, "one follow-up");
    CHECK(due == T0 + 400 + 1000, "due a second after the latest shard's end");
    CHECK(sim_counter(in, "mooncake_broadcast_shards_relayed_total", NULL) == 4);
    CHECK(sim_counter(in, "mooncake_broadcasts_ended_total", "outcome=\"SUCCEEDED\"") == 1);
    CHECK(sim_gauge(in, "mooncake_broadcasts_open", NULL) == 0);
    /* A shard's Result that comes after the end changes nothing. */
    shard_result(k, "b", 1, 3, 100, MC_OUTCOME_SUCCEEDED, T0 + 250);
    settle(k, in, 10);
    CHECK(parent(k, "b").count == 1);
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A failed, a dropped and a succeeded shard: FAILED_PERMANENTLY naming the two, no
 * follow-up. A StartBroadcast again (same version, or older) and a shard of an older
 * version change nothing; a newer version replaces the open one, which ends CANCELLED
 * with its one Result. */
static void failures_duplicates_and_versions(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    start_broadcast(k, "f", 100, 3, T0, false);
    sim_inst *in = start(k, cfg, "j1");
    shard_result(k, "f", 0, 3, 100, MC_OUTCOME_SUCCEEDED, T0 + 100);
    settle(k, in, 10);
    start_broadcast(k, "f", 100, 3, T0, false); /* the same again: shard 0 stays ended */
    start_broadcast(k, "f", 50, 3, T0, false);  /* older */
    shard_result(k, "f", 1, 3, 99, MC_OUTCOME_SUCCEEDED, T0 + 150); /* an older version's */
    shard_result(k, "f", 2, 3, 100, MC_OUTCOME_EXHAUSTED, T0 + 200);
    settle(k, in, 10);
    CHECK(parent(k, "f").count == 0, "shard 1 of version 100 has not ended");
    shard_result(k, "f", 1, 3, 100, MC_OUTCOME_DROPPED, T0 + 180);
    settle(k, in, 10);
    parent_result r = parent(k, "f");
    CHECK(r.count == 1, "%zu Results", r.count);
    CHECK(r.outcome == MC_OUTCOME_FAILED_PERMANENTLY);
    CHECK(strcmp(r.error, "2 of 3 shards did not succeed: shard 1 (http://b:8080) CANCELLED, "
                          "shard 2 (http://c:8080) EXHAUSTED") == 0,
          "error %s", r.error);
    CHECK(r.finished_at == T0 + 200);
    CHECK(strcmp(r.chain, "") == 0, "no chain headers for a task of no chain");
    CHECK(follow_ups(k, "f", NULL) == 0, "no follow-up after a failure");
    CHECK(sim_counter(in, "mooncake_broadcasts_ended_total", "outcome=\"FAILED_PERMANENTLY\"") ==
          1);

    /* Replaced: version 150 is open when 200 starts. 150 ends then, in the transaction
     * that starts 200: CANCELLED, naming the newer version, its shards so far in its
     * body, with its chain headers and no follow-up; its later shards are unheard. */
    start_broadcast(k, "r", 150, 2, T0 + 1000, true);
    settle(k, in, 10);
    shard_result(k, "r", 0, 2, 150, MC_OUTCOME_SUCCEEDED, T0 + 1100);
    settle(k, in, 10);
    start_broadcast(k, "r", 200, 2, T0 + 1200, true);
    settle(k, in, 10);
    r = parent(k, "r");
    CHECK(r.count == 1, "the replaced broadcast's one Result: %zu", r.count);
    CHECK(r.version == 150 && r.outcome == MC_OUTCOME_CANCELLED, "version %lld outcome %d",
          (long long)r.version, (int)r.outcome);
    CHECK(strcmp(r.error, "replaced by a newer submission of the task (version 200) before "
                          "every shard reported") == 0,
          "error %s", r.error);
    CHECK(strcmp(r.body, "{\"shards\":[{\"shard\":0,\"member\":\"http://a:8080\",\"outcome\":"
                         "\"SUCCEEDED\",\"finishedAt\":1800000001100},{\"shard\":1,\"member\":"
                         "\"http://b:8080\",\"outcome\":null,\"finishedAt\":null}]}") == 0,
          "body %s", r.body);
    CHECK(r.started_at == T0 + 1000 && r.finished_at == sim_now(k), "finished when replaced");
    CHECK(strcmp(r.chain, "k") == 0 && strcmp(r.link, "7") == 0, "chain headers %s %s", r.chain,
          r.link);
    CHECK(follow_ups(k, "r", NULL) == 0, "no follow-up for a replaced broadcast");
    CHECK(sim_counter(in, "mooncake_broadcasts_replaced_total", NULL) == 1);
    CHECK(sim_counter(in, "mooncake_broadcasts_ended_total", "outcome=\"CANCELLED\"") == 1);
    CHECK(sim_gauge(in, "mooncake_broadcasts_open", NULL) == 1, "200 is open");
    shard_result(k, "r", 1, 2, 150, MC_OUTCOME_SUCCEEDED, T0 + 1300);
    settle(k, in, 10);
    CHECK(parent(k, "r").count == 1, "150's later shards are unheard");
    shard_result(k, "r", 0, 2, 200, MC_OUTCOME_SUCCEEDED, T0 + 1400);
    shard_result(k, "r", 1, 2, 200, MC_OUTCOME_SUCCEEDED, T0 + 1500);
    settle(k, in, 10);
    r = parent(k, "r");
    CHECK(r.count == 2 && r.version == 200 && r.outcome == MC_OUTCOME_SUCCEEDED);
    CHECK(follow_ups(k, "r", NULL) == 1);
    CHECK(sim_gauge(in, "mooncake_broadcasts_open", NULL) == 0);
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A task's version is shifted below zero by a growth of the partition count
 * (`mooncakectl partitions grow`), and still orders its submissions: a broadcast of
 * version -7 opens, ignores the ends of an older one (-9), and ends with its one Result.
 * (Its ends come as the ShardDones the relay writes.) */
static void a_negative_version_gets_its_result(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    start_broadcast(k, "n", -7, 2, T0, true);
    start_broadcast(k, "n", -9, 2, T0, true); /* an older submission's */
    sim_inst *in = start(k, cfg, "j1");
    CHECK(sim_gauge(in, "mooncake_broadcasts_open", NULL) == 1, "the broadcast is open");
    shard_done(k, "n", 0, -7, MC_OUTCOME_SUCCEEDED, T0 + 100);
    shard_done(k, "n", 1, -9, MC_OUTCOME_SUCCEEDED, T0 + 150); /* the older one's */
    settle(k, in, 10);
    CHECK(parent(k, "n").count == 0, "shard 1 of version -7 has not ended");
    shard_done(k, "n", 1, -7, MC_OUTCOME_SUCCEEDED, T0 + 200);
    settle(k, in, 10);
    parent_result r = parent(k, "n");
    CHECK(r.count == 1, "%zu Results", r.count);
    CHECK(r.outcome == MC_OUTCOME_SUCCEEDED && r.version == -7 && r.finished_at == T0 + 200,
          "outcome %d version %lld", (int)r.outcome, (long long)r.version);
    CHECK(strcmp(r.chain, "k") == 0, "the chain sees it end");
    CHECK(follow_ups(k, "n", NULL) == 1);
    CHECK(sim_gauge(in, "mooncake_broadcasts_open", NULL) == 0);
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* Kafka refuses the broadcast's Result (larger than `results` takes, with its shards'
 * list): the task ends FAILED_PERMANENTLY with a Result without the list (a chain waiting
 * on it sees it end), and goes to the dead topic, naming the ShardDone that ended it, or
 * (ended by its bound) the broadcast's key in job-commands at offset -1; no follow-up,
 * nothing left open. */
/* Bytes `results` takes in a_refused_result_is_dead_lettered: a Result without its
 * shards' list, not one with it. */
#define RESULT_CAP 190

static void a_refused_result_is_dead_lettered(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    sim_set_max_bytes(k, kit_topic("results"), RESULT_CAP);
    start_broadcast(k, "x", 100, 2, T0, true);
    start_broadcast(k, "y", 100, 2, T0, false);
    sim_inst *in = start(k, cfg, "j1");
    shard_result(k, "x", 0, 2, 100, MC_OUTCOME_SUCCEEDED, T0 + 100);
    shard_result(k, "x", 1, 2, 100, MC_OUTCOME_SUCCEEDED, T0 + 200);
    shard_result(k, "y", 0, 2, 100, MC_OUTCOME_SUCCEEDED, T0 + 100);
    settle(k, in, 10);
    parent_result r = parent(k, "x");
    CHECK(r.count == 1 && r.outcome == MC_OUTCOME_FAILED_PERMANENTLY &&
              strstr(r.error, "Kafka refused this Result") && strcmp(r.chain, "k") == 0,
          "%zu Results: %s", r.count, r.error);
    dead_letters d = dead(k, "x");
    char key[256];
    size_t kl = mc_task_key("a", "x", key, sizeof key);
    int32_t home = mc_key_partition(key, kl, P);
    CHECK(d.count == 1, "%zu dead letters of x", d.count);
    CHECK(strstr(d.reason, "refused the Result") != NULL, "reason %s", d.reason);
    CHECK(d.has_task && strcmp(d.task_id, "x") == 0, "the letter carries the task");
    CHECK(strcmp(d.topic, kit_topic("job-commands")) == 0 && d.partition == home && d.offset >= 0 &&
              strcmp(d.key, key) == 0,
          "it names the ShardDone that ended it: %s[%d]@%lld %s", d.topic, (int)d.partition,
          (long long)d.offset, d.key);
    CHECK(follow_ups(k, "x", NULL) == 0, "no follow-up: it did not succeed");
    CHECK(sim_gauge(in, "mooncake_broadcasts_open", NULL) == 1, "y is open");
    /* y's shard 1 never reports: its bound ends it, and its Result is refused too. */
    while (sim_gauge(in, "mooncake_broadcasts_open", NULL) > 0 && sim_now(k) < T0 + 3 * 86400000)
        settle(k, in, 600000);
    r = parent(k, "y");
    CHECK(r.count == 1 && r.outcome == MC_OUTCOME_FAILED_PERMANENTLY &&
              strstr(r.error, "Kafka refused this Result"),
          "%zu Results: %s", r.count, r.error);
    d = dead(k, "y");
    kl = mc_task_key("a", "y", key, sizeof key);
    home = mc_key_partition(key, kl, P);
    CHECK(d.count == 1, "%zu dead letters of y", d.count);
    CHECK(d.has_task && strcmp(d.task_id, "y") == 0, "the letter carries the task");
    CHECK(strcmp(d.topic, kit_topic("job-commands")) == 0 && d.partition == home &&
              d.offset == -1 && strcmp(d.key, key) == 0 && d.letter_partition == home,
          "it names the broadcast's key in job-commands: %s[%d]@%lld %s", d.topic, (int)d.partition,
          (long long)d.offset, d.key);
    CHECK(sim_gauge(in, "mooncake_broadcasts_open", NULL) == 0);
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* Twenty broadcasts of 1 to 5 shards whose Results come in random order at random
 * moments, while the role is killed (whatever its open transaction holds), aborted
 * and replaced, so it restores from its changelog midway: each broadcast ends in
 * exactly one Result, SUCCEEDED exactly when every shard did, and a follow-up exactly
 * when it succeeded. */
static void one_result_each_across_kills(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    enum { N = 20 };
    size_t shards[N];
    mc_outcome outcome[N][MAX_SHARDS];
    bool sent[N][MAX_SHARDS] = {{false}};
    bool all_ok[N];
    size_t pending = 0;
    for (int b = 0; b < N; b++) {
        char id[16];
        snprintf(id, sizeof id, "k%d", b);
        shards[b] = 1 + (size_t)(rnd() % MAX_SHARDS);
        all_ok[b] = true;
        for (size_t i = 0; i < shards[b]; i++) {
            outcome[b][i] = rnd() % 4 ? MC_OUTCOME_SUCCEEDED : MC_OUTCOME_EXHAUSTED;
            all_ok[b] = all_ok[b] && outcome[b][i] == MC_OUTCOME_SUCCEEDED;
        }
        pending += shards[b];
        start_broadcast(k, id, 1000 + b, shards[b], T0, b % 2 == 0);
    }
    sim_inst *in = start(k, cfg, "j1");
    int gen = 1, kills = 0;
    while (pending > 0) {
        /* A few shards end. */
        for (int m = (int)(rnd() % 4); m > 0 && pending > 0; m--) {
            int b = (int)(rnd() % N);
            size_t i = (size_t)(rnd() % shards[b]);
            if (sent[b][i])
                continue;
            char id[16];
            snprintf(id, sizeof id, "k%d", b);
            sent[b][i] = true;
            pending--;
            shard_result(k, id, (int32_t)i, (int32_t)shards[b], 1000 + b, outcome[b][i],
                         sim_now(k));
        }
        sim_advance(k, 1 + (int64_t)(rnd() % 50));
        switch (rnd() % 6) {
        case 0: { /* kill -9 with whatever the open transaction holds */
            CHECK(sim_turn(in, 1 + rnd() % 5, false) == 0);
            sim_crash(in);
            kills++;
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
            CHECK(sim_turn(in, 1 + rnd() % 5, false) == 0);
            CHECK(sim_abort(in) == 0);
            break;
        default:
            CHECK(sim_turn(in, 1 + rnd() % 5, true) == 0);
        }
    }
    CHECK(sim_settle(in, 200) == 0);
    CHECK(kills > 3, "%d kills", kills);
    for (int b = 0; b < N; b++) {
        char id[16];
        snprintf(id, sizeof id, "k%d", b);
        parent_result r = parent(k, id);
        CHECK(r.count == 1, "%s: %zu Results", id, r.count);
        CHECK(r.outcome == (all_ok[b] ? MC_OUTCOME_SUCCEEDED : MC_OUTCOME_FAILED_PERMANENTLY),
              "%s: outcome %d", id, (int)r.outcome);
        CHECK(follow_ups(k, id, NULL) == (all_ok[b] ? 1u : 0u), "%s: follow-ups", id);
        CHECK(strcmp(r.chain, b % 2 == 0 ? "k" : "") == 0, "%s: chain header", id);
    }
    CHECK(sim_gauge(in, "mooncake_broadcasts_open", NULL) == 0);
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* Two shards never report. The task's own bound is short (one attempt: 2 s timeout + 1
 * s, a minute, and a minute of slack: 123 s), so the broadcast waits a day from when it
 * fired, across a restart, then ends FAILED_PERMANENTLY naming them; a late shard
 * changes nothing. One whose own bound is longer than a day (ten attempts, three hours
 * of backoff: 27 h 2 min 30 s with the slack) waits that long. */
static void the_stale_bound_ends_it(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    const int64_t step = 600000, long_bound = 10 * 3000 + 9 * 3 * 3600000 + 60000 + 60000;
    start_broadcast(k, "s", 100, 3, T0, true);
    mc_retry_policy hours = {.max_attempts = 10,
                             .initial_backoff_ms = 1000,
                             .multiplier = 2,
                             .max_backoff_ms = 3 * 3600000};
    start_broadcast_retry(k, "l", 100, 2, T0, false, hours);
    sim_inst *in = start(k, cfg, "j1");
    shard_result(k, "s", 0, 3, 100, MC_OUTCOME_SUCCEEDED, T0 + 100);
    settle(k, in, 10);
    while (sim_now(k) < T0 + DAY / 2)
        settle(k, in, step);
    CHECK(parent(k, "s").count == 0, "no Result after the task's own bound: it is under a day");
    sim_crash(in);
    in = start(k, cfg, "j2");
    while (sim_now(k) + step < T0 + DAY)
        settle(k, in, step);
    CHECK(parent(k, "s").count == 0, "no Result before a day");
    settle(k, in, step); /* a day after its last shard ended (T0 + 100) */
    settle(k, in, step);
    parent_result r = parent(k, "s");
    CHECK(r.count == 1, "%zu Results", r.count);
    CHECK(r.outcome == MC_OUTCOME_FAILED_PERMANENTLY);
    CHECK(strcmp(r.error, "shards 1, 2 of 3 gave no final Result within 86400 s") == 0, "error %s",
          r.error);
    CHECK(strstr(r.body, "{\"shard\":1,\"member\":\"http://b:8080\",\"outcome\":null,"
                         "\"finishedAt\":null}") != NULL,
          "body %s", r.body);
    CHECK(strcmp(r.chain, "k") == 0, "the chain sees it end");
    CHECK(follow_ups(k, "s", NULL) == 0);
    CHECK(sim_counter(in, "mooncake_broadcasts_stale_total", NULL) == 1);
    shard_result(k, "s", 1, 3, 100, MC_OUTCOME_SUCCEEDED, sim_now(k));
    shard_result(k, "s", 2, 3, 100, MC_OUTCOME_SUCCEEDED, sim_now(k));
    settle(k, in, 10);
    CHECK(parent(k, "s").count == 1, "late shards change nothing");
    /* The task whose own bound is longer. */
    while (sim_now(k) + step < T0 + long_bound)
        settle(k, in, step);
    CHECK(parent(k, "l").count == 0, "no Result before the task's own bound");
    settle(k, in, step);
    r = parent(k, "l");
    CHECK(r.count == 1 && r.outcome == MC_OUTCOME_FAILED_PERMANENTLY, "%zu Results", r.count);
    CHECK(strcmp(r.error, "shards 0, 1 of 2 gave no final Result within 97350 s") == 0, "error %s",
          r.error);
    CHECK(sim_gauge(in, "mooncake_broadcasts_open", NULL) == 0);
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* Shards that go on ending, slowly (behind an admission limit, say): one every 20 hours,
 * each well inside a day of the one before, the last 60 hours after the fan-out. The
 * broadcast is not stale while they do, and ends SUCCEEDED. */
static void a_slow_broadcast_is_not_stale(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    start_broadcast(k, "z", 100, 3, T0, false);
    sim_inst *in = start(k, cfg, "j1");
    for (int s = 0; s < 3; s++) {
        while (sim_now(k) < T0 + (s + 1) * 72000000)
            settle(k, in, 600000);
        shard_result(k, "z", s, 3, 100, MC_OUTCOME_SUCCEEDED, sim_now(k));
        settle(k, in, 10);
        CHECK(parent(k, "z").count == (s == 2), "after shard %d: %zu Results", s,
              parent(k, "z").count);
    }
    parent_result r = parent(k, "z");
    CHECK(r.count == 1 && r.outcome == MC_OUTCOME_SUCCEEDED, "%zu Results: %s", r.count, r.error);
    CHECK(sim_counter(in, "mooncake_broadcasts_stale_total", NULL) == 0);
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* The role is away past the bound while the last shards end: on its restore the
 * broadcast's timer is due already, and the shards' Results in its backlog (relayed,
 * then read back as ShardDones) end it first: SUCCEEDED, not stale. */
static void a_restore_after_the_bound_reads_the_backlog_first(void)
{
    mc_config *cfg = config();
    sim_kafka *k = sim_kafka_new(P, T0);
    start_broadcast(k, "w", 100, 3, T0, true);
    sim_inst *in = start(k, cfg, "j1");
    shard_result(k, "w", 0, 3, 100, MC_OUTCOME_SUCCEEDED, T0 + 100);
    settle(k, in, 10);
    sim_crash(in);
    shard_result(k, "w", 1, 3, 100, MC_OUTCOME_SUCCEEDED, T0 + 1800000);
    shard_result(k, "w", 2, 3, 100, MC_OUTCOME_SUCCEEDED, T0 + 3600000);
    sim_set_now(k, T0 + 2 * DAY);
    in = start(k, cfg, "j2");
    parent_result r = parent(k, "w");
    CHECK(r.count == 1, "%zu Results", r.count);
    CHECK(r.outcome == MC_OUTCOME_SUCCEEDED, "outcome %d: %s", (int)r.outcome, r.error);
    CHECK(r.finished_at == T0 + 3600000);
    CHECK(follow_ups(k, "w", NULL) == 1);
    CHECK(sim_counter(in, "mooncake_broadcasts_stale_total", NULL) == 0);
    settle(k, in, 120000);
    CHECK(parent(k, "w").count == 1, "its timer went with it");
    CHECK(sim_gauge(in, "mooncake_broadcasts_open", NULL) == 0);
    sim_crash(in);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

int main(void)
{
    shards_in_any_order_make_one_result();
    failures_duplicates_and_versions();
    a_negative_version_gets_its_result();
    a_refused_result_is_dead_lettered();
    one_result_each_across_kills();
    the_stale_bound_ends_it();
    a_slow_broadcast_is_not_stale();
    a_restore_after_the_bound_reads_the_backlog_first();
    return check_exit("test_broadcasts_sim");
}
