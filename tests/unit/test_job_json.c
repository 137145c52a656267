/* The jobs' JSON (job_json.c): what a client of POST /jobs, the job actions
 * and /jobs/preview gets for what it sends - every accepted body's fields
 * and defaults, every refused one's exact sentence - and that a job written
 * back as JSON reads as the same job. */
#include <string.h>

#include "check.h"
#include "job_json.h"

static const int64_t NOW = 1795330000000; /* 2026-11-23T05:06:40Z */

typedef struct fixture {
    mc_zone_cache *zones;
    mc_arena *arena;
    mc_job_json_options o;
} fixture;

static fixture fixture_new(void)
{
    fixture f = {.zones = mc_zone_cache_new(NULL), .arena = mc_arena_new()};
    f.o = (mc_job_json_options){
        .now_ms = NOW, .retry_defaults = {5, 1000, 2.0, 3600000}, .zones = f.zones};
    return f;
}

static void fixture_free(fixture *f)
{
    mc_arena_free(f->arena);
    mc_zone_cache_free(f->zones);
}

static int put(fixture *f, const char *json, mc_job *j, char *why)
{
    return mc_job_from_json(json, strlen(json), &f->o, f->arena, j, why, 512);
}

static void test_full_job(void)
{
    fixture f = fixture_new();
    mc_job j;
    char why[512] = "";
    CHECK(put(&f,
              "{\"appId\":\"shop\",\"jobId\":\"nightly-report\","
              "\"schedule\":{\"cron\":\"0 0 2 * * ?\",\"timeZone\":\"Asia/Shanghai\"},"
              "\"startTime\":1795000000000,\"endTime\":1900000000000,\"maxRuns\":30,"
              "\"misfire\":\"catch_up\",\"catchUpLimit\":3,\"misfireThresholdMs\":60000,"
              "\"overlap\":\"SERIAL\",\"paused\":true,"
              "\"callback\":{\"url\":\"https://shop.example.com/report\",\"method\":\"put\","
              "\"headers\":{\"X-A\":\"1\"},\"body\":\"{}\",\"timeoutMs\":9000},"
              "\"retry\":{\"maxAttempts\":3},\"metadata\":{\"team\":\"bi\"},\"extra\":[1]}",
              &j, why) == 0,
          "%s", why);
    CHECK(strcmp(j.app_id, "shop") == 0 && strcmp(j.job_id, "nightly-report") == 0);
    CHECK(j.kind == MC_SCHEDULE_CRON && strcmp(j.cron, "0 0 2 * * ?") == 0 &&
          strcmp(j.time_zone, "Asia/Shanghai") == 0 && j.interval_ms == 0);
    CHECK(j.start_at == 1795000000000 && j.end_at == 1900000000000 && j.max_runs == 30);
    CHECK(j.misfire == MC_MISFIRE_CATCH_UP && j.catch_up_limit == 3 &&
          j.misfire_threshold_ms == 60000);
    CHECK(j.overlap == MC_OVERLAP_SERIAL && j.paused && j.created_at == NOW);
    CHECK(strcmp(j.callback.method, "PUT") == 0 && j.callback.timeout_ms == 9000 &&
          j.callback.n_headers == 1 && j.callback.body_len == 2);
    CHECK(j.has_retry && j.retry.max_attempts == 3 && j.retry.initial_backoff_ms == 1000);
    CHECK(j.n_metadata == 1 && strcmp(j.metadata[0].key, "team") == 0);

    /* The answer to a put: the next fires, 02:00 Shanghai = 18:00 UTC. */
    int64_t at[MC_JOB_NEXT_FIRES];
    CHECK(mc_job_next_fires(&j, NOW, f.zones, at, MC_JOB_NEXT_FIRES, why, sizeof why) == 5, "%s",
          why);
    CHECK(at[0] == 1795370400000 && at[1] - at[0] == 86400000 && at[4] - at[3] == 86400000, "%lld",
          (long long)at[0]);
    fixture_free(&f);
}

static void test_defaults_and_kinds(void)
{
    fixture f = fixture_new();
    mc_job j;
    char why[512] = "";
    CHECK(put(&f,
              "{\"appId\":\"a\",\"jobId\":\"j\",\"schedule\":{\"cron\":\"*/5 * * * *\"},"
              "\"callback\":{\"url\":\"http://x.example\"}}",
              &j, why) == 0,
          "%s", why);
    CHECK(strcmp(j.time_zone, "UTC") == 0 && j.start_at == 0 && j.end_at == 0 && j.max_runs == 0);
    CHECK(j.misfire == MC_MISFIRE_FIRE_ONCE_NOW && j.catch_up_limit == 10 &&
          j.misfire_threshold_ms == 5000 && j.overlap == MC_OVERLAP_PARALLEL && !j.paused);
    CHECK(!j.has_retry && j.n_metadata == 0 && strcmp(j.callback.method, "POST") == 0);
    int64_t at[5];
    CHECK(mc_job_next_fires(&j, NOW, f.zones, at, 5, why, sizeof why) == 5);
    CHECK(at[0] == 1795330200000 && at[1] == 1795330500000, "%lld", (long long)at[0]);

    CHECK(put(&f,
              "{\"appId\":\"a\",\"jobId\":\"r\",\"schedule\":{\"fixedRateMs\":60000},"
              "\"startTime\":1795330000500,\"maxRuns\":2,\"callback\":{\"url\":\"http://x\"}}",
              &j, why) == 0,
          "%s", why);
    CHECK(j.kind == MC_SCHEDULE_FIXED_RATE && j.interval_ms == 60000 && j.cron[0] == '\0');
    /* From the anchor, and no more than maxRuns. */
    CHECK(mc_job_next_fires(&j, NOW, f.zones, at, 5, why, sizeof why) == 2);
    CHECK(at[0] == 1795330000500 && at[1] == 1795330060500);

    CHECK(put(&f,
              "{\"appId\":\"a\",\"jobId\":\"d\",\"schedule\":{\"fixedDelayMs\":1000},"
              "\"callback\":{\"url\":\"http://x\"}}",
              &j, why) == 0,
          "%s", why);
    CHECK(j.kind == MC_SCHEDULE_FIXED_DELAY && j.interval_ms == 1000);
    /* Only the first: the others follow finished occurrences. */
    CHECK(mc_job_next_fires(&j, NOW, f.zones, at, 5, why, sizeof why) == 1);
    fixture_free(&f);
}

/* Each refused body, with the exact sentence its client reads. */
static void test_errors_name_the_field(void)
{
#define CB ",\"callback\":{\"url\":\"http://x\"}"
#define CRON(expr) "{\"appId\":\"a\",\"jobId\":\"j\",\"schedule\":{\"cron\":\"" expr "\"}" CB
    static const struct {
        const char *json, *msg;
    } cases[] = {
        {"[]", "body must be a JSON object, not an array"},
        {"{\"jobId\":\"j\"}", "appId is required"},
        {"{\"appId\":\"a\"}", "jobId is required"},
        {"{\"appId\":\"a/b\",\"jobId\":\"j\",\"schedule\":{\"cron\":\"@daily\"}" CB "}",
         "appId 'a/b' contains '/'"},
        {"{\"appId\":\"a\",\"jobId\":\"\",\"schedule\":{\"cron\":\"@daily\"}" CB "}",
         "jobId is empty"},
        {"{\"appId\":\"a\",\"jobId\":\"j\\u0001\"}", "jobId contains a control character"},
        {"{\"appId\":\"a\",\"jobId\":\"j\"" CB "}",
         "schedule is required (an object with cron, fixedRateMs or fixedDelayMs)"},
        {"{\"appId\":\"a\",\"jobId\":\"j\",\"schedule\":\"@daily\"}",
         "schedule must be an object, not a string"},
        {"{\"appId\":\"a\",\"jobId\":\"j\",\"schedule\":{}}",
         "schedule: give exactly one of cron, fixedRateMs, fixedDelayMs"},
        {"{\"appId\":\"a\",\"jobId\":\"j\",\"schedule\":{\"cron\":\"@daily\",\"fixedRateMs\":"
         "5000}}",
         "schedule: give exactly one of cron, fixedRateMs, fixedDelayMs"},
        {"{\"appId\":\"a\",\"jobId\":\"j\",\"schedule\":{\"fixedRateMs\":5000,\"timeZone\":"
         "\"UTC\"}}",
         "schedule.timeZone is only for cron (fixedRateMs and fixedDelayMs count milliseconds)"},
        {"{\"appId\":\"a\",\"jobId\":\"j\",\"schedule\":{\"cron\":5}}",
         "schedule.cron must be a string, not an integer"},
        {"{\"appId\":\"a\",\"jobId\":\"j\",\"schedule\":{\"fixedRateMs\":\"5s\"}}",
         "schedule.fixedRateMs must be an integer, not a string"},
        {"{\"appId\":\"a\",\"jobId\":\"j\",\"schedule\":{\"fixedRateMs\":0}" CB "}",
         "schedule.fixedRateMs is 0: it must be at least 1000 ms"},
        {"{\"appId\":\"a\",\"jobId\":\"j\",\"schedule\":{\"fixedDelayMs\":999}" CB "}",
         "schedule.fixedDelayMs is 999: it must be at least 1000 ms"},
        {"{\"appId\":\"a\",\"jobId\":\"j\",\"schedule\":{\"cron\":\"0 0 2 * * ?\",\"timeZone\":"
         "\"Mars/Base\"}" CB "}",
         "schedule.timeZone: unknown time zone 'Mars/Base'"},
        {"{\"appId\":\"a\",\"jobId\":\"j\",\"schedule\":{\"cron\":\"0 0 2 * * ?\",\"timeZone\":"
         "\"../etc/passwd\"}" CB "}",
         "schedule.timeZone: invalid time zone name '../etc/passwd'"},
        {CRON("") "}", "schedule.cron is empty (a CRON schedule needs an expression)"},
        {CRON("0 0 0 30 2 ?") "}", "schedule.cron never fires (no matching instant in 8 years)"},
        {"{\"appId\":\"a\",\"jobId\":\"j\",\"schedule\":{\"cron\":\"@daily\"},\"startTime\":"
         "1795330000}",
         "startTime 1795330000 is before 2000-01-01 (epoch milliseconds expected, not seconds)"},
        {"{\"appId\":\"a\",\"jobId\":\"j\",\"schedule\":{\"cron\":\"@daily\"},\"endTime\":-1}",
         "endTime -1 is outside [0, 9223372036854775807]"},
        {CRON("@daily") ",\"endTime\":1795329999999}",
         "endTime is in the past: the job would never fire"},
        {CRON("@daily") ",\"maxRuns\":-1}", "maxRuns -1 is outside [0, 9223372036854775807]"},
        {CRON("@daily") ",\"misfire\":\"LATER\"}",
         "misfire 'LATER' is not one of FIRE_ONCE_NOW, DO_NOTHING, CATCH_UP"},
        {CRON("@daily") ",\"overlap\":1}", "overlap must be a string, not an integer"},
        {CRON("@daily") ",\"overlap\":\"queue\"}",
         "overlap 'queue' is not one of PARALLEL, DISCARD_LATER, COVER_EARLY, SERIAL"},
        {CRON("@daily") ",\"catchUpLimit\":0}", "catchUpLimit 0 is outside [1, 1000]"},
        {CRON("@daily") ",\"misfireThresholdMs\":-5}",
         "misfireThresholdMs -5 is outside [0, 9223372036854775807]"},
        {CRON("@daily") ",\"paused\":\"yes\"}", "paused must be true or false, not a string"},
        {"{\"appId\":\"a\",\"jobId\":\"j\",\"schedule\":{\"cron\":\"@daily\"}}",
         "callback is required (an object with at least url), or kafkaTarget"},
        {"{\"appId\":\"a\",\"jobId\":\"j\",\"schedule\":{\"cron\":\"@daily\"},\"callback\":{"
         "\"url\":\"ftp://x\"}}",
         "callback.url 'ftp://x' is not http://, https:// or group://"},
        {"{\"appId\":\"a\",\"jobId\":\"j\",\"schedule\":{\"cron\":\"@daily\"},\"callback\":{"
         "\"url\":\"http://x\",\"method\":\"BREW\"}}",
         "callback.method 'BREW' is not one of GET, POST, PUT, PATCH, DELETE, HEAD"},
        {"{\"appId\":\"a\",\"jobId\":\"j\",\"schedule\":{\"cron\":\"@daily\"},\"callback\":{"
         "\"url\":\"http://x\",\"headers\":{\"webhook-id\":\"x\"}}}",
         "callback.headers: 'webhook-id' is set by mooncake and cannot be given"},
        {CRON("@daily") ",\"retry\":{\"maxAttempts\":0}}",
         "retry.maxAttempts 0 is outside [1, 1000]"},
        {CRON("@daily") ",\"retry\":{\"multiplier\":0.5}}",
         "retry.multiplier 0.5 is outside [1, 100]"},
        {CRON("@daily") ",\"metadata\":{\"k\":1}}", "metadata.k must be a string, not an integer"},
    };
#undef CRON
    fixture f = fixture_new();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mc_job j;
        char why[512] = "";
        CHECK(put(&f, cases[i].json, &j, why) != 0, "accepted: %s", cases[i].json);
        CHECK(strcmp(why, cases[i].msg) == 0, "%s\n  got  '%s'\n  want '%s'", cases[i].json, why,
              cases[i].msg);
        mc_arena_reset(f.arena);
    }
    /* A cron that does not parse says why, after the field's name. */
    mc_job j;
    char why[512] = "";
    CHECK(put(&f, "{\"appId\":\"a\",\"jobId\":\"j\",\"schedule\":{\"cron\":\"61 * * * *\"}" CB "}",
              &j, why) != 0);
    CHECK(strncmp(why, "schedule.cron: ", 15) == 0, "%s", why);
    fixture_free(&f);
}

static void test_actions(void)
{
    fixture f = fixture_new();
    mc_job_action a;
    char why[512] = "";
    const char *ok = "{\"appId\":\"shop\",\"jobId\":\"nightly\"}";
    CHECK(mc_job_action_from_json(ok, strlen(ok), MC_JOB_TRIGGER, NOW, f.arena, &a, why,
                                  sizeof why) == 0,
          "%s", why);
    CHECK(strcmp(a.app_id, "shop") == 0 && strcmp(a.job_id, "nightly") == 0 &&
          a.action == MC_JOB_TRIGGER && a.requested_at == NOW);
    static const struct {
        const char *json, *msg;
    } bad[] = {
        {"", "body is not valid JSON: unexpected token near end of file (line 1, column 0)"},
        {"{\"appId\":\"shop\"}", "jobId is required"},
        {"{\"appId\":\"\",\"jobId\":\"j\"}", "appId is empty"},
        {"{\"appId\":\"shop\",\"jobId\":7}", "jobId must be a string, not an integer"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(mc_job_action_from_json(bad[i].json, strlen(bad[i].json), MC_JOB_PAUSE, NOW, f.arena,
                                      &a, why, sizeof why) != 0);
        CHECK(strcmp(why, bad[i].msg) == 0, "got '%s' want '%s'", why, bad[i].msg);
    }
    fixture_free(&f);
}

static void test_preview(void)
{
    fixture f = fixture_new();
    mc_job j;
    int n = 0;
    char why[512] = "";
    const char *body = "{\"schedule\":{\"cron\":\"0 30 2 * * ?\",\"timeZone\":\"Europe/Berlin\"},"
                       "\"startTime\":1806192000000,\"count\":3}";
    CHECK(mc_job_preview_from_json(body, strlen(body), &f.o, f.arena, &j, &n, why, sizeof why) == 0,
          "%s", why);
    CHECK(n == 3);
    int64_t at[3];
    CHECK(mc_job_next_fires(&j, NOW, f.zones, at, n, why, sizeof why) == 3);
    /* 2027-03-28 is Berlin's spring-forward night: 02:30 does not exist and
     * fires at the gap's end, 03:00 CEST = 01:00 UTC. */
    CHECK(at[0] == 1806195600000, "%lld", (long long)at[0]);
    CHECK(at[1] == 1806280200000, "%lld", (long long)at[1]);
    const char *none = "{\"schedule\":{\"cron\":\"@daily\"}}";
    CHECK(mc_job_preview_from_json(none, strlen(none), &f.o, f.arena, &j, &n, why, sizeof why) ==
          0);
    CHECK(n == MC_JOB_NEXT_FIRES);
    static const struct {
        const char *json, *msg;
    } bad[] = {
        {"{\"schedule\":{\"cron\":\"@daily\"},\"count\":0}", "count 0 is outside [1, 100]"},
        {"{\"schedule\":{\"cron\":\"@daily\"},\"count\":101}", "count 101 is outside [1, 100]"},
        {"{\"schedule\":{\"cron\":\"0 0 0 30 2 ?\"}}",
         "schedule.cron never fires (no matching instant in 8 years)"},
        {"{\"schedule\":{\"fixedRateMs\":10}}",
         "schedule.fixedRateMs is 10: it must be at least 1000 ms"},
        {"{}", "schedule is required (an object with cron, fixedRateMs or fixedDelayMs)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(mc_job_preview_from_json(bad[i].json, strlen(bad[i].json), &f.o, f.arena, &j, &n, why,
                                       sizeof why) != 0);
        CHECK(strcmp(why, bad[i].msg) == 0, "got '%s' want '%s'", why, bad[i].msg);
    }
    fixture_free(&f);
}

/* A job as JSON reads back as the same job: mooncakectl jobs list -J gives
 * what jobs put -f takes. */
static void test_round_trip(void)
{
    fixture f = fixture_new();
    static const char *const bodies[] = {
        "{\"appId\":\"shop\",\"jobId\":\"n\",\"schedule\":{\"cron\":\"0 0 2 * * ?\","
        "\"timeZone\":\"Asia/Shanghai\"},\"misfire\":\"DO_NOTHING\",\"overlap\":\"COVER_EARLY\","
        "\"callback\":{\"url\":\"https://x.example/h\",\"headers\":{\"X-A\":\"1\"},"
        "\"body\":\"caf\\u00e9\",\"timeoutMs\":100},\"retry\":{\"maxAttempts\":2,"
        "\"initialBackoffMs\":10,\"multiplier\":1.5,\"maxBackoffMs\":100},"
        "\"metadata\":{\"k\":\"v\"},\"paused\":true}",
        "{\"appId\":\"a\",\"jobId\":\"r\",\"schedule\":{\"fixedRateMs\":60000},\"maxRuns\":9,"
        "\"endTime\":1900000000000,\"callback\":{\"url\":\"http://x\",\"method\":\"GET\"}}",
        "{\"appId\":\"a\",\"jobId\":\"d\",\"schedule\":{\"fixedDelayMs\":5000},\"startTime\":"
        "1800000000000,\"callback\":{\"url\":\"http://x\"}}",
        /* A job that delivers, with a late policy and follow-ups. */
        "{\"appId\":\"a\",\"jobId\":\"k\",\"schedule\":{\"fixedRateMs\":60000},"
        "\"kafkaTarget\":{\"topic\":\"orders.tick\",\"key\":\"k\",\"valueBase64\":\"AP8=\","
        "\"headers\":{\"h\":\"v\"}},\"latePolicy\":{\"maxLateMs\":500,\"action\":\"DROP\"},"
        "\"onSuccess\":[{\"delayMs\":10,\"callback\":{\"url\":\"http://y/done\"}},"
        "{\"uuid\":\"own\",\"kafkaTarget\":{\"topic\":\"t2\"},\"retry\":{\"maxAttempts\":2},"
        "\"latePolicy\":{\"maxLateMs\":0,\"action\":\"DEAD\"}}]}",
        /* A tombstone with a key that has a NUL byte (base64 both ways). */
        "{\"appId\":\"a\",\"jobId\":\"t\",\"schedule\":{\"fixedRateMs\":60000},"
        "\"kafkaTarget\":{\"topic\":\"t\",\"keyBase64\":\"YQBi\"}}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        mc_job a, b;
        char why[512] = "";
        CHECK(put(&f, bodies[i], &a, why) == 0, "%s", why);
        json_t *j = mc_job_to_json(&a);
        char *text = json_dumps(j, JSON_COMPACT);
        CHECK(text && put(&f, text, &b, why) == 0, "%s: %s", text, why);
        mc_buf ea = {0}, eb = {0};
        CHECK(mc_encode_job(&a, &ea) == 0 && mc_encode_job(&b, &eb) == 0);
        CHECK(ea.len == eb.len && memcmp(ea.data, eb.data, ea.len) == 0, "%s", text);
        mc_buf_free(&ea);
        mc_buf_free(&eb);
        free(text);
        json_decref(j);
    }
    /* A state: its counters, and the job inside. */
    mc_job job;
    char why[512];
    CHECK(put(&f, bodies[1], &job, why) == 0);
    mc_running_occurrence run = {1795330060000, 1795330060000};
    mc_job_state s = {.version = 7,
                      .status = MC_JOB_PAUSED,
                      .next_at = -1,
                      .runs = 3,
                      .last_scheduled_at = 1795330060000,
                      .running = &run,
                      .n_running = 1,
                      .queued_at = -1,
                      .skipped = 2,
                      .updated_at = NOW,
                      .job = job};
    json_t *js = mc_job_state_to_json(&s);
    CHECK(js && strcmp(json_string_value(json_object_get(js, "status")), "PAUSED") == 0);
    CHECK(json_integer_value(json_object_get(js, "runs")) == 3 &&
          json_integer_value(json_object_get(js, "nextAt")) == -1 &&
          json_array_size(json_object_get(js, "running")) == 1);
    CHECK(json_integer_value(json_object_get(
              json_object_get(json_object_get(js, "job"), "schedule"), "fixedRateMs")) == 60000);
    json_decref(js);
    char text[100];
    mc_job_schedule_text(&job, text, sizeof text);
    CHECK(strcmp(text, "every 60000 ms") == 0, "%s", text);
    fixture_free(&f);
}

/* kafkaTarget, latePolicy and onSuccess on a job: read as a task's. */
static void test_targets_and_follow_ups(void)
{
    fixture f = fixture_new();
    f.o.max_due_ms = 86400000;
    mc_job j;
    char why[512] = "";
    CHECK(put(&f,
              "{\"appId\":\"shop\",\"jobId\":\"tick\",\"schedule\":{\"fixedRateMs\":60000},"
              "\"kafkaTarget\":{\"topic\":\"orders.tick\",\"value\":\"v\"},"
              "\"latePolicy\":{\"maxLateMs\":1000,\"action\":\"DEAD\"},"
              "\"onSuccess\":[{\"callback\":{\"url\":\"http://x/then\"}},"
              "{\"uuid\":\"f2\",\"delayMs\":5,\"kafkaTarget\":{\"topic\":\"audit\"}}]}",
              &j, why) == 0,
          "%s", why);
    CHECK(j.has_kafka_target && strcmp(j.kafka_target.topic, "orders.tick") == 0 &&
          j.kafka_target.has_value && !j.kafka_target.has_key && j.callback.url[0] == '\0');
    CHECK(j.has_late_policy && j.late_policy.max_late_ms == 1000 &&
          j.late_policy.action == MC_LATE_DEAD);
    CHECK(j.n_on_success == 2 && j.on_success[0].task_id[0] == '\0' &&
          strcmp(j.on_success[0].callback.url, "http://x/then") == 0 &&
          strcmp(j.on_success[1].task_id, "f2") == 0 && j.on_success[1].delay_ms == 5 &&
          j.on_success[1].has_kafka_target && !j.on_success[1].kafka_target.has_value);
    /* Rendered as a body gives it: kafkaTarget instead of callback. */
    json_t *js = mc_job_to_json(&j);
    CHECK(js && !json_object_get(js, "callback") &&
          strcmp(json_string_value(json_object_get(json_object_get(js, "kafkaTarget"), "value")),
                 "v") == 0);
    CHECK(strcmp(json_string_value(json_object_get(json_object_get(js, "latePolicy"), "action")),
                 "DEAD") == 0);
    json_t *then = json_object_get(js, "onSuccess");
    CHECK(json_array_size(then) == 2 && !json_object_get(json_array_get(then, 0), "uuid") &&
          strcmp(json_string_value(json_object_get(json_array_get(then, 1), "uuid")), "f2") == 0);
    json_decref(js);

    /* The allow-list, as the gateway checks it. */
    char err[256];
    mc_kafka_targets *allowed =
        mc_kafka_targets_parse("shop=orders.*,shop=audit", "mooncake.", err, sizeof err);
    CHECK(allowed, "%s", err);
    CHECK(mc_job_target_ok(allowed, &j, why, sizeof why), "%s", why);
    mc_kafka_targets *narrow =
        mc_kafka_targets_parse("shop=orders.*", "mooncake.", err, sizeof err);
    CHECK(!mc_job_target_ok(narrow, &j, why, sizeof why) &&
              strstr(why, "onSuccess[1].kafkaTarget.topic"),
          "%s", why);
    j.app_id = "other";
    CHECK(!mc_job_target_ok(narrow, &j, why, sizeof why) && strstr(why, "kafkaTarget.topic") == why,
          "%s", why);
    mc_kafka_targets_free(allowed);
    mc_kafka_targets_free(narrow);
    mc_arena_reset(f.arena);

#define JOB "{\"appId\":\"a\",\"jobId\":\"j\",\"schedule\":{\"fixedRateMs\":60000}"
    static const struct {
        const char *json, *msg;
    } cases[] = {
        {JOB ",\"callback\":{\"url\":\"http://x\"},\"kafkaTarget\":{\"topic\":\"t\"}}",
         "give callback or kafkaTarget, not both: a task either calls or delivers"},
        {JOB ",\"kafkaTarget\":{\"key\":\"k\"}}", "kafkaTarget.topic is required"},
        {JOB ",\"kafkaTarget\":{\"topic\":\"a b\"}}",
         "kafkaTarget.topic 'a b' is not a Kafka topic name (1 to 249 of letters, digits, . _ -)"},
        {JOB ",\"kafkaTarget\":{\"topic\":\"t\"},\"latePolicy\":{\"maxLateMs\":1}}",
         "latePolicy.action is required (RUN, DROP or DEAD)"},
        {JOB ",\"callback\":{\"url\":\"http://x\"},\"onSuccess\":{}}",
         "onSuccess must be an array of tasks, not an object"},
        {JOB ",\"callback\":{\"url\":\"http://x\"},\"onSuccess\":[{\"callback\":{\"url\":"
             "\"ftp://x\"}}]}",
         "onSuccess[0].callback.url 'ftp://x' is not http://, https:// or group://"},
        {JOB ",\"callback\":{\"url\":\"http://x\"},\"onSuccess\":[{\"delayMs\":86400001,"
             "\"callback\":{\"url\":\"http://x\"}}]}",
         "onSuccess[0].delayMs 86400001 is outside [0, 86400000]"},
    };
#undef JOB
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char w[512] = "";
        CHECK(put(&f, cases[i].json, &j, w) != 0, "accepted: %s", cases[i].json);
        CHECK(strcmp(w, cases[i].msg) == 0, "%s\n  got  '%s'\n  want '%s'", cases[i].json, w,
              cases[i].msg);
        mc_arena_reset(f.arena);
    }
    fixture_free(&f);
}

int main(void)
{
    test_targets_and_follow_ups();
    test_full_job();
    test_defaults_and_kinds();
    test_errors_name_the_field();
    test_actions();
    test_preview();
    test_round_trip();
    return check_exit("job_json");
}
