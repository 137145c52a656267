/* The gateway's JSON -> Task: what a client gets for what it sends. */
#include <string.h>

#include "chains.h"
#include "check.h"
#include "task_json.h"

static const int64_t NOW = 1795330000000;

static void fixed_id(void *arg, char out[MC_JSON_MAX_ID_LEN + 1])
{
    (*(int *)arg)++;
    strcpy(out, "generated-id");
}

/* A submit body, and its orderingKey into *key. */
static int parse_chained(const char *json, mc_arena *a, mc_task *t, const char **key, char *why,
                         int *made)
{
    mc_task_json_options o = {.now_ms = NOW,
                              .max_due_ms = 86400000,
                              .retry_defaults = {5, 1000, 2.0, 3600000},
                              .make_id = fixed_id,
                              .make_id_arg = made};
    return mc_task_from_json(json, strlen(json), &o, a, t, key, why, 512);
}

static int parse(const char *json, mc_arena *a, mc_task *t, char *why, int *made)
{
    const char *key;
    int rc = parse_chained(json, a, t, &key, why, made);
    CHECK(rc != 0 || key == NULL, "an orderingKey out of nowhere: %s", json);
    return rc;
}

static void test_full_task(void)
{
    mc_arena *a = mc_arena_new();
    mc_task t;
    char why[512] = "";
    int made = 0;
    CHECK(parse("{\"appId\":\"shop\",\"uuid\":\"o-1\",\"expireTime\":1795330060000,"
                "\"callback\":{\"url\":\"https://x.example/h\",\"method\":\"put\","
                "\"headers\":{\"X-A\":\"1\"},\"body\":\"caf\\u00e9\",\"timeoutMs\":500},"
                "\"retry\":{\"maxAttempts\":3},\"metadata\":{\"k\":\"v\"},\"extra\":true}",
                a, &t, why, &made) == 0,
          "%s", why);
    CHECK(made == 0);
    CHECK(strcmp(t.app_id, "shop") == 0 && strcmp(t.task_id, "o-1") == 0);
    CHECK(t.due_at == 1795330060000 && t.created_at == NOW && t.attempt == 1);
    CHECK(strcmp(t.callback.method, "PUT") == 0);
    CHECK(t.callback.body_len == 5 && memcmp(t.callback.body, "caf\xc3\xa9", 5) == 0);
    CHECK(t.callback.timeout_ms == 500);
    CHECK(t.callback.n_headers == 1 && strcmp(t.callback.headers[0].key, "X-A") == 0);
    /* A partial retry object takes the defaults for what it leaves out. */
    CHECK(t.has_retry && t.retry.max_attempts == 3 && t.retry.initial_backoff_ms == 1000 &&
          t.retry.multiplier == 2.0 && t.retry.max_backoff_ms == 3600000);
    CHECK(t.n_metadata == 1);
    mc_arena_free(a);
}

static void test_defaults(void)
{
    mc_arena *a = mc_arena_new();
    mc_task t;
    char why[512] = "";
    int made = 0;
    CHECK(parse("{\"appId\":\"a\",\"delayMs\":1500,\"callback\":{\"url\":\"http://x\"}}", a, &t,
                why, &made) == 0,
          "%s", why);
    CHECK(made == 1 && strcmp(t.task_id, "generated-id") == 0);
    CHECK(t.due_at == NOW + 1500);
    CHECK(strcmp(t.callback.method, "POST") == 0 && t.callback.body_len == 0);
    CHECK(!t.has_retry && t.callback.timeout_ms == 0);
    mc_arena_free(a);
}

/* Each bad body names the field in its message. */
static void test_errors_name_the_field(void)
{
    static const struct {
        const char *json, *needle;
    } cases[] = {
        {"", "not valid JSON"},
        {"[]", "JSON object"},
        {"{\"delayMs\":1,\"callback\":{\"url\":\"http://x\"}}", "appId is required"},
        {"{\"appId\":\"a/b\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\"}}", "appId"},
        {"{\"appId\":\"a\",\"callback\":{\"url\":\"http://x\"}}", "expireTime"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"expireTime\":1,\"callback\":{\"url\":\"http://x\"}}",
         "not both"},
        {"{\"appId\":\"a\",\"expireTime\":\"1\",\"callback\":{\"url\":\"http://x\"}}",
         "expireTime must be an integer"},
        {"{\"appId\":\"a\",\"expireTime\":1700000000,\"callback\":{\"url\":\"http://x\"}}",
         "expireTime 1700000000 is before 2000"},
        {"{\"appId\":\"a\",\"expireTime\":9795330060000,\"callback\":{\"url\":\"http://x\"}}",
         "expireTime"},
        {"{\"appId\":\"a\",\"delayMs\":-1,\"callback\":{\"url\":\"http://x\"}}", "delayMs"},
        {"{\"appId\":\"a\",\"delayMs\":1}", "callback is required"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\"},"
         "\"metadata\":{\"mooncake.chain\":\"k\"}}",
         "metadata.mooncake.chain is reserved"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\"},"
         "\"metadata\":{\"mooncake.link\":\"1\"}}",
         "metadata.mooncake.link is reserved"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{}}", "callback.url is required"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"file:///etc\"}}", "callback.url"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\",\"method\":\"BREW\"}}",
         "callback.method"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\",\"timeoutMs\":1.5}}",
         "callback.timeoutMs"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\",\"headers\":{\"A "
         "B\":\"1\"}}}",
         "callback.headers"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\",\"headers\":{"
         "\"Idempotency-Key\":\"1\"}}}",
         "callback.headers"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\",\"headers\":{\"X\":"
         "\"a\\nb\"}}}",
         "callback.headers"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\",\"body\":{}}}",
         "callback.body must be a string"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\"},\"retry\":{"
         "\"multiplier\":0.5}}",
         "retry.multiplier"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\"},\"metadata\":{\"k\":"
         "1}}",
         "metadata.k"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mc_arena *a = mc_arena_new();
        mc_task t;
        char why[512] = "";
        int made = 0;
        CHECK(parse(cases[i].json, a, &t, why, &made) != 0, "accepted %s", cases[i].json);
        CHECK(strstr(why, cases[i].needle) != NULL, "%s: '%s' lacks '%s'", cases[i].json, why,
              cases[i].needle);
        mc_arena_free(a);
    }
}

/* A Kafka target instead of a callback: text or base64 bytes, a tombstone,
 * headers; the callback left out (url ""). */
static void test_kafka_target(void)
{
    mc_arena *a = mc_arena_new();
    mc_task t;
    char why[512] = "";
    int made = 0;
    CHECK(parse("{\"appId\":\"shop\",\"uuid\":\"o-1\",\"delayMs\":1000,"
                "\"kafkaTarget\":{\"topic\":\"orders.expired\",\"key\":\"order-42\","
                "\"value\":\"{\\\"id\\\":42}\",\"headers\":{\"trace\":\"t-1\",\"lang\":"
                "\"caf\\u00e9\"}},"
                "\"latePolicy\":{\"maxLateMs\":5000,\"action\":\"DROP\"}}",
                a, &t, why, &made) == 0,
          "%s", why);
    const mc_kafka_target *k = &t.kafka_target;
    CHECK(t.has_kafka_target && strcmp(k->topic, "orders.expired") == 0);
    CHECK(strcmp(t.callback.url, "") == 0 && t.callback.method != NULL);
    CHECK(k->has_key && k->key_len == 8 && memcmp(k->key, "order-42", 8) == 0);
    CHECK(k->has_value && k->value_len == 9 && memcmp(k->value, "{\"id\":42}", 9) == 0);
    CHECK(k->n_headers == 2 && strcmp(k->headers[1].value, "caf\xc3\xa9") == 0);
    CHECK(t.has_late_policy && t.late_policy.max_late_ms == 5000 &&
          t.late_policy.action == MC_LATE_DROP);

    /* base64 bytes (not UTF-8, with a NUL), no headers */
    CHECK(parse("{\"appId\":\"shop\",\"delayMs\":1,\"kafkaTarget\":{\"topic\":\"t\","
                "\"keyBase64\":\"AAEC\",\"valueBase64\":\"/w==\"}}",
                a, &t, why, &made) == 0,
          "%s", why);
    CHECK(k->has_key && k->key_len == 3 && memcmp(k->key, "\0\1\2", 3) == 0);
    CHECK(k->has_value && k->value_len == 1 && k->value[0] == 0xff && k->n_headers == 0);
    CHECK(!t.has_late_policy);

    /* no value (absent or null): a tombstone; no key; an empty value is not one */
    CHECK(
        parse("{\"appId\":\"shop\",\"delayMs\":1,\"kafkaTarget\":{\"topic\":\"t\",\"key\":\"k\"}}",
              a, &t, why, &made) == 0,
        "%s", why);
    CHECK(k->has_key && !k->has_value && k->value == NULL);
    CHECK(parse("{\"appId\":\"shop\",\"delayMs\":1,\"kafkaTarget\":{\"topic\":\"t\","
                "\"value\":null,\"callback\":null}}",
                a, &t, why, &made) == 0,
          "%s", why);
    CHECK(!k->has_key && !k->has_value);
    CHECK(parse("{\"appId\":\"shop\",\"delayMs\":1,\"callback\":null,"
                "\"kafkaTarget\":{\"topic\":\"t\",\"value\":\"\"}}",
                a, &t, why, &made) == 0,
          "%s", why);
    CHECK(k->has_value && k->value_len == 0);

    /* every late action, and 0 ms */
    static const char *const actions[] = {"RUN", "DROP", "DEAD"};
    for (int i = 0; i < 3; i++) {
        char body[256];
        snprintf(body, sizeof body,
                 "{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\"},"
                 "\"latePolicy\":{\"maxLateMs\":0,\"action\":\"%s\"}}",
                 actions[i]);
        CHECK(parse(body, a, &t, why, &made) == 0, "%s", why);
        CHECK(t.has_late_policy && (int)t.late_policy.action == i &&
              t.late_policy.max_late_ms == 0);
    }
    mc_arena_free(a);
}

/* The new objects' refusals, each naming its field. */
static void test_kafka_target_and_late_policy_errors(void)
{
#define KT(inner) "{\"appId\":\"a\",\"delayMs\":1,\"kafkaTarget\":{" inner "}}"
#define LP(inner)                                                                                  \
    "{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\"},\"latePolicy\":" inner "}"
    static const struct {
        const char *json, *needle;
    } cases[] = {
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\"},"
         "\"kafkaTarget\":{\"topic\":\"t\"}}",
         "give callback or kafkaTarget, not both"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"\"},"
         "\"kafkaTarget\":{\"topic\":\"t\"}}",
         "callback or kafkaTarget"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"kafkaTarget\":\"t\"}", "kafkaTarget must be an object"},
        {KT(""), "kafkaTarget.topic is required"},
        {KT("\"topic\":7"), "kafkaTarget.topic must be a string"},
        {KT("\"topic\":\"\""), "kafkaTarget.topic '' is not a Kafka topic name"},
        {KT("\"topic\":\"a b\""), "kafkaTarget.topic 'a b' is not a Kafka topic name"},
        {KT("\"topic\":\"t\",\"key\":\"k\",\"keyBase64\":\"aw==\""),
         "give kafkaTarget.key or kafkaTarget.keyBase64, not both"},
        {KT("\"topic\":\"t\",\"value\":\"v\",\"valueBase64\":\"dg==\""),
         "give kafkaTarget.value or kafkaTarget.valueBase64, not both"},
        {KT("\"topic\":\"t\",\"keyBase64\":\"a b\""),
         "kafkaTarget.keyBase64 is not standard base64"},
        {KT("\"topic\":\"t\",\"valueBase64\":\"abcde\""),
         "kafkaTarget.valueBase64 is not standard base64"},
        {KT("\"topic\":\"t\",\"valueBase64\":\"-_==\""), "kafkaTarget.valueBase64"},
        {KT("\"topic\":\"t\",\"valueBase64\":5"), "kafkaTarget.valueBase64 must be a string"},
        {KT("\"topic\":\"t\",\"value\":{}"), "kafkaTarget.value must be a string"},
        {KT("\"topic\":\"t\",\"key\":1"), "kafkaTarget.key must be a string"},
        {KT("\"topic\":\"t\",\"headers\":[]"), "kafkaTarget.headers must be an object"},
        {KT("\"topic\":\"t\",\"headers\":{\"x\":1}"), "kafkaTarget.headers.x must be a string"},
        {KT("\"topic\":\"t\",\"headers\":{\"\":\"v\"}"), "kafkaTarget.headers has an empty name"},
        {KT("\"topic\":\"t\",\"headers\":{\"mooncake-task\":\"v\"}"),
         "kafkaTarget.headers: 'mooncake-task' is set by mooncake"},
        {LP("5"), "latePolicy must be an object"},
        {LP("{\"maxLateMs\":5000}"), "latePolicy.action is required"},
        {LP("{\"action\":\"DROP\"}"), "latePolicy.maxLateMs is required"},
        {LP("{\"maxLateMs\":-1,\"action\":\"DROP\"}"), "latePolicy.maxLateMs -1 is outside"},
        {LP("{\"maxLateMs\":1.5,\"action\":\"DROP\"}"), "latePolicy.maxLateMs must be an integer"},
        {LP("{\"maxLateMs\":31536000001,\"action\":\"DROP\"}"), "latePolicy.maxLateMs"},
        {LP("{\"maxLateMs\":5,\"action\":\"SKIP\"}"),
         "latePolicy.action 'SKIP' is not RUN, DROP or DEAD"},
        {LP("{\"maxLateMs\":5,\"action\":\"drop\"}"), "latePolicy.action 'drop'"},
        {LP("{\"maxLateMs\":5,\"action\":1}"), "latePolicy.action must be a string"},
    };
#undef KT
#undef LP
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mc_arena *a = mc_arena_new();
        mc_task t;
        char why[512] = "";
        int made = 0;
        CHECK(parse(cases[i].json, a, &t, why, &made) != 0, "accepted %s", cases[i].json);
        CHECK(strstr(why, cases[i].needle) != NULL, "%s: '%s' lacks '%s'", cases[i].json, why,
              cases[i].needle);
        mc_arena_free(a);
    }
}

/* What mooncakectl prints of a task: the new fields only when set, every
 * byte shown (a key that is not UTF-8 as key_base64). */
static void test_task_to_json(void)
{
    mc_arena *a = mc_arena_new();
    mc_task t;
    char why[512] = "";
    int made = 0;
    CHECK(parse("{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\"}}", a, &t, why,
                &made) == 0,
          "%s", why);
    json_t *j = mc_task_to_json(&t);
    CHECK(j && !json_object_get(j, "kafka_target") && !json_object_get(j, "late_policy"));
    json_decref(j);
    CHECK(parse("{\"appId\":\"a\",\"delayMs\":1,\"kafkaTarget\":{\"topic\":\"t\","
                "\"keyBase64\":\"/w==\",\"value\":\"v\"},"
                "\"latePolicy\":{\"maxLateMs\":7,\"action\":\"DEAD\"}}",
                a, &t, why, &made) == 0,
          "%s", why);
    j = mc_task_to_json(&t);
    json_t *k = json_object_get(j, "kafka_target"), *p = json_object_get(j, "late_policy");
    CHECK(k && strcmp(json_string_value(json_object_get(k, "topic")), "t") == 0);
    CHECK(strcmp(json_string_value(json_object_get(k, "key_base64")), "/w==") == 0);
    CHECK(strcmp(json_string_value(json_object_get(k, "value")), "v") == 0);
    CHECK(p && json_integer_value(json_object_get(p, "max_late_ms")) == 7 &&
          strcmp(json_string_value(json_object_get(p, "action")), "DEAD") == 0);
    json_decref(j);
    mc_arena_free(a);
}

/* onSuccess: follow-ups read with the task's own parsers. */
static void test_follow_ups(void)
{
    mc_arena *a = mc_arena_new();
    mc_task t;
    char why[512] = "";
    int made = 0;
    CHECK(parse("{\"appId\":\"shop\",\"uuid\":\"o-1\",\"delayMs\":1,"
                "\"callback\":{\"url\":\"http://x\"},\"onSuccess\":["
                "{\"callback\":{\"url\":\"https://y.example/paid\",\"method\":\"put\","
                "\"headers\":{\"Authorization\":\"Bearer s3cret\"}},"
                "\"retry\":{\"maxAttempts\":2},"
                "\"latePolicy\":{\"maxLateMs\":100,\"action\":\"DROP\"}},"
                "{\"uuid\":\"o-1-audit\",\"delayMs\":60000,"
                "\"kafkaTarget\":{\"topic\":\"audit\",\"key\":\"o-1\",\"value\":\"\"}}]}",
                a, &t, why, &made) == 0,
          "%s", why);
    CHECK(t.n_on_success == 2);
    const mc_follow_up *f = t.on_success;
    CHECK(f[0].task_id[0] == '\0' && f[0].delay_ms == 0 && !f[0].has_kafka_target);
    CHECK(strcmp(f[0].callback.url, "https://y.example/paid") == 0 &&
          strcmp(f[0].callback.method, "PUT") == 0 && f[0].callback.n_headers == 1);
    /* A partial retry takes the defaults, as the task's does. */
    CHECK(f[0].has_retry && f[0].retry.max_attempts == 2 && f[0].retry.initial_backoff_ms == 1000);
    CHECK(f[0].has_late_policy && f[0].late_policy.action == MC_LATE_DROP);
    CHECK(strcmp(f[1].task_id, "o-1-audit") == 0 && f[1].delay_ms == 60000);
    CHECK(f[1].has_kafka_target && strcmp(f[1].kafka_target.topic, "audit") == 0 &&
          f[1].kafka_target.has_value && f[1].kafka_target.value_len == 0 &&
          strcmp(f[1].callback.url, "") == 0);
    CHECK(!f[1].has_retry && !f[1].has_late_policy);
    char id[64];
    mc_follow_up_id(&t, 0, id, sizeof id);
    CHECK(strcmp(id, "o-1.then1") == 0, "%s", id);

    /* mooncakectl's print: the schema's names, every byte. */
    json_t *j = mc_task_to_json(&t);
    json_t *os = json_object_get(j, "on_success");
    CHECK(json_array_size(os) == 2);
    json_t *f0 = json_array_get(os, 0), *f1 = json_array_get(os, 1);
    CHECK(strcmp(json_string_value(json_object_get(f0, "task_id")), "") == 0 &&
          json_integer_value(json_object_get(f1, "delay_ms")) == 60000);
    CHECK(strcmp(json_string_value(json_object_get(
                     json_object_get(json_object_get(f0, "callback"), "headers"), "Authorization")),
                 "Bearer s3cret") == 0);
    CHECK(json_is_null(json_object_get(json_object_get(f1, "kafka_target"), "value")) == 0 &&
          strcmp(json_string_value(json_object_get(json_object_get(f1, "kafka_target"), "key")),
                 "o-1") == 0);
    CHECK(json_object_get(f0, "late_policy") && !json_object_get(f1, "late_policy"));
    json_decref(j);

    /* None, or an empty array: no follow-ups, and none printed. */
    CHECK(parse("{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\"},"
                "\"onSuccess\":[]}",
                a, &t, why, &made) == 0,
          "%s", why);
    CHECK(t.n_on_success == 0);
    j = mc_task_to_json(&t);
    CHECK(j && !json_object_get(j, "on_success"));
    json_decref(j);

    /* The most there may be. */
    char body[4096];
    int at = snprintf(body, sizeof body,
                      "{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\"},"
                      "\"onSuccess\":[");
    for (int i = 0; i < MC_MAX_FOLLOW_UPS; i++)
        at += snprintf(body + at, sizeof body - (size_t)at,
                       "%s{\"callback\":{\"url\":\"http://x/%d\"}}", i ? "," : "", i);
    snprintf(body + at, sizeof body - (size_t)at, "]}");
    CHECK(parse(body, a, &t, why, &made) == 0, "%s", why);
    CHECK(t.n_on_success == MC_MAX_FOLLOW_UPS);
    mc_arena_free(a);
}

/* Each refused follow-up names its field, onSuccess[i]. included. */
static void test_follow_up_errors(void)
{
#define OS(inner)                                                                                  \
    "{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\"},\"onSuccess\":" inner "}"
#define CB "\"callback\":{\"url\":\"http://x\"}"
    static const struct {
        const char *json, *msg;
    } cases[] = {
        {OS("{}"), "onSuccess must be an array of tasks, not an object"},
        {OS("[5]"), "onSuccess[0] must be an object, not an integer"},
        {OS("[{}]"), "onSuccess[0].callback is required (an object with at least url), or "
                     "kafkaTarget"},
        {OS("[{" CB "},{\"callback\":{\"url\":\"ftp://x\"}}]"),
         "onSuccess[1].callback.url 'ftp://x' is not http://, https:// or group://"},
        {OS("[{\"callback\":{\"url\":\"http://x\",\"method\":\"BREW\"}}]"),
         "onSuccess[0].callback.method 'BREW' is not one of GET, POST, PUT, PATCH, DELETE, HEAD"},
        {OS("[{\"callback\":{\"url\":\"http://x\",\"timeoutMs\":\"1\"}}]"),
         "onSuccess[0].callback.timeoutMs must be an integer, not a string"},
        {OS("[{\"callback\":{\"url\":\"http://x\",\"headers\":{\"webhook-id\":\"1\"}}}]"),
         "onSuccess[0].callback.headers: 'webhook-id' is set by mooncake and cannot be given"},
        {OS("[{" CB ",\"kafkaTarget\":{\"topic\":\"t\"}}]"),
         "give onSuccess[0].callback or onSuccess[0].kafkaTarget, not both: a task either calls "
         "or delivers"},
        {OS("[{\"kafkaTarget\":{\"topic\":\"a b\"}}]"),
         "onSuccess[0].kafkaTarget.topic 'a b' is not a Kafka topic name (1 to 249 of letters, "
         "digits, . _ -)"},
        {OS("[{\"kafkaTarget\":{\"topic\":\"t\",\"keyBase64\":\"a b\"}}]"),
         "onSuccess[0].kafkaTarget.keyBase64 is not standard base64 (RFC 4648: A-Z a-z 0-9 + /, "
         "'=' padding)"},
        {OS("[{\"kafkaTarget\":{\"topic\":\"t\",\"headers\":{\"mooncake-due-at\":\"1\"}}}]"),
         "onSuccess[0].kafkaTarget.headers: 'mooncake-due-at' is set by mooncake and cannot be "
         "given"},
        {OS("[{" CB ",\"delayMs\":-1}]"), "onSuccess[0].delayMs -1 is outside [0, 86400000]"},
        {OS("[{" CB ",\"delayMs\":86400001}]"),
         "onSuccess[0].delayMs 86400001 is outside [0, 86400000]"},
        {OS("[{" CB ",\"uuid\":\"\"}]"),
         "onSuccess[0].uuid is empty (leave it out for <uuid>.then<N>)"},
        {OS("[{" CB ",\"uuid\":7}]"), "onSuccess[0].uuid must be a string, not an integer"},
        {OS("[{" CB ",\"uuid\":\"a\\nb\"}]"), "onSuccess[0].uuid contains a control character"},
        {OS("[{" CB ",\"retry\":{\"maxAttempts\":0}}]"),
         "onSuccess[0].retry.maxAttempts 0 is outside [1, 1000]"},
        {OS("[{" CB ",\"retry\":{\"multiplier\":0.5}}]"),
         "onSuccess[0].retry.multiplier 0.5 is outside [1, 100]"},
        {OS("[{" CB ",\"latePolicy\":{\"maxLateMs\":5}}]"),
         "onSuccess[0].latePolicy.action is required (RUN, DROP or DEAD)"},
        {OS("[{" CB ",\"onSuccess\":[]}]"),
         "onSuccess[0].onSuccess: a follow-up has no follow-ups of its own (chain them from the "
         "task that succeeds)"},
    };
#undef OS
#undef CB
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mc_arena *a = mc_arena_new();
        mc_task t;
        char why[512] = "";
        int made = 0;
        CHECK(parse(cases[i].json, a, &t, why, &made) != 0, "accepted %s", cases[i].json);
        CHECK(strcmp(why, cases[i].msg) == 0, "%s\n  got  '%s'\n  want '%s'", cases[i].json, why,
              cases[i].msg);
        mc_arena_free(a);
    }
    /* One more than the most. */
    char body[4096];
    int at = snprintf(body, sizeof body,
                      "{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\"},"
                      "\"onSuccess\":[");
    for (int i = 0; i <= MC_MAX_FOLLOW_UPS; i++)
        at += snprintf(body + at, sizeof body - (size_t)at, "%s{}", i ? "," : "");
    snprintf(body + at, sizeof body - (size_t)at, "]}");
    mc_arena *a = mc_arena_new();
    mc_task t;
    char why[512] = "";
    int made = 0;
    CHECK(parse(body, a, &t, why, &made) != 0 &&
              strcmp(why, "onSuccess has 17 tasks, more than 16") == 0,
          "%s", why);
    mc_arena_free(a);
}

static void test_cancel(void)
{
    mc_arena *a = mc_arena_new();
    mc_cancel c;
    char why[512] = "";
    const char *key = "x";
    const char *ok = "{\"appId\":\"shop\",\"uuid\":\"o-1\"}";
    CHECK(mc_cancel_from_json(ok, strlen(ok), NOW, a, &c, &key, why, sizeof why) == 0, "%s", why);
    CHECK(strcmp(c.app_id, "shop") == 0 && strcmp(c.task_id, "o-1") == 0 && c.requested_at == NOW);
    CHECK(key == NULL);
    const char *bad = "{\"appId\":\"shop\"}";
    CHECK(mc_cancel_from_json(bad, strlen(bad), NOW, a, &c, &key, why, sizeof why) != 0);
    CHECK(strstr(why, "uuid is required") != NULL, "%s", why);
    mc_arena_free(a);
}

/* A submit body (cancel: a cancel body) whose orderingKey is key_json, JSON
 * text, into body. */
static const char *keyed_body(char *body, size_t n, bool cancel, const char *key_json)
{
    snprintf(body, n,
             cancel ? "{\"appId\":\"a\",\"uuid\":\"u\",\"orderingKey\":%s}"
                    : "{\"appId\":\"a\",\"delayMs\":1,\"orderingKey\":%s,"
                      "\"callback\":{\"url\":\"http://x\"}}",
             key_json);
    return body;
}

static int parse_cancel(const char *json, mc_arena *a, mc_cancel *c, const char **key, char *why)
{
    return mc_cancel_from_json(json, strlen(json), NOW, a, c, key, why, 512);
}

/* An orderingKey puts the task (or the cancel) to a serial chain: it is
 * checked as the jobs role checks it, and the record becomes the chain's
 * AddLink or CancelLink. */
static void test_ordering_key(void)
{
    mc_arena *a = mc_arena_new();
    mc_task t;
    mc_cancel c;
    const char *key = NULL;
    char why[512] = "", body[1024], long_key[MC_MAX_ORDERING_KEY_LEN + 4];
    int made = 0;
    CHECK(parse_chained(keyed_body(body, sizeof body, false, "\"contract-42\""), a, &t, &key, why,
                        &made) == 0 &&
              key && strcmp(key, "contract-42") == 0,
          "%s", why);
    CHECK(parse_cancel(keyed_body(body, sizeof body, true, "\"contract-42\""), a, &c, &key, why) ==
                  0 &&
              key && strcmp(key, "contract-42") == 0 && strcmp(c.task_id, "u") == 0,
          "%s", why);
    CHECK(parse_chained(keyed_body(body, sizeof body, false, "null"), a, &t, &key, why, &made) ==
                  0 &&
              key == NULL,
          "%s", why);
    /* 256 bytes of any text but control characters is a key; 257 is not. */
    long_key[0] = '"';
    memset(long_key + 1, 'k', MC_MAX_ORDERING_KEY_LEN);
    strcpy(long_key + 1 + MC_MAX_ORDERING_KEY_LEN, "\"");
    CHECK(parse_chained(keyed_body(body, sizeof body, false, long_key), a, &t, &key, why, &made) ==
                  0 &&
              strlen(key) == MC_MAX_ORDERING_KEY_LEN,
          "%s", why);
    strcpy(long_key + 1 + MC_MAX_ORDERING_KEY_LEN, "k\"");
    static const struct {
        const char *key, *why;
    } bad[] = {
        {"\"\"", "orderingKey must be 1 to 256 bytes"},
        {NULL, "orderingKey is 257 bytes, more than 256"},
        {"\"a\\u0001b\"", "orderingKey contains a control character"},
        {"\"a\\tb\"", "orderingKey contains a control character"},
        {"42", "orderingKey must be a string, not an integer"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *k = bad[i].key ? bad[i].key : long_key;
        CHECK(parse_chained(keyed_body(body, sizeof body, false, k), a, &t, &key, why, &made) !=
                      0 &&
                  strcmp(why, bad[i].why) == 0,
              "%s: %s", k, why);
        CHECK(parse_cancel(keyed_body(body, sizeof body, true, k), a, &c, &key, why) != 0 &&
                  strcmp(why, bad[i].why) == 0,
              "cancel %s: %s", k, why);
    }
    mc_arena_free(a);
}

/* What a submit or cancel sends: the Command itself, or in a chain its
 * AddLink or CancelLink, read back by the codec the jobs role uses. */
static void test_encode_task_command(void)
{
    mc_arena *a = mc_arena_new();
    mc_task t;
    const char *key;
    char why[512] = "";
    int made = 0;
    CHECK(parse_chained("{\"appId\":\"shop\",\"uuid\":\"renew-7\",\"delayMs\":1000,"
                        "\"orderingKey\":\"contract-42\",\"kafkaTarget\":{\"topic\":\"t\"}}",
                        a, &t, &key, why, &made) == 0,
          "%s", why);
    mc_codec_options co = {0};
    char detail[256] = "";
    mc_buf buf = {0};
    mc_job_command jc;
    mc_command sub = {.kind = MC_CMD_SUBMIT, .submit = t};
    CHECK(mc_encode_task_command(&sub, key, &buf) == 0);
    CHECK(mc_decode_job_command(&co, buf.data, buf.len, a, &jc, detail, sizeof detail) ==
              MC_CODEC_OK,
          "%s", detail);
    CHECK(jc.kind == MC_JOBCMD_ADD_LINK && strcmp(jc.add_link.ordering_key, "contract-42") == 0 &&
          strcmp(jc.add_link.task.app_id, "shop") == 0 &&
          strcmp(jc.add_link.task.task_id, "renew-7") == 0 &&
          jc.add_link.task.due_at == NOW + 1000 && jc.add_link.task.has_kafka_target);
    mc_command can = {.kind = MC_CMD_CANCEL,
                      .cancel = {.app_id = "shop", .task_id = "renew-7", .requested_at = NOW}};
    mc_buf_reset(&buf);
    CHECK(mc_encode_task_command(&can, "contract-42", &buf) == 0);
    CHECK(mc_decode_job_command(&co, buf.data, buf.len, a, &jc, detail, sizeof detail) ==
              MC_CODEC_OK,
          "%s", detail);
    CHECK(jc.kind == MC_JOBCMD_CANCEL_LINK && strcmp(jc.cancel_link.app_id, "shop") == 0 &&
          strcmp(jc.cancel_link.ordering_key, "contract-42") == 0 &&
          strcmp(jc.cancel_link.task_id, "renew-7") == 0 && jc.cancel_link.requested_at == NOW);
    /* Without a key, the Command as it is. */
    mc_command back;
    mc_buf_reset(&buf);
    CHECK(mc_encode_task_command(&can, NULL, &buf) == 0);
    CHECK(mc_decode_command(&co, buf.data, buf.len, a, &back, detail, sizeof detail) == MC_CODEC_OK,
          "%s", detail);
    CHECK(back.kind == MC_CMD_CANCEL && strcmp(back.cancel.task_id, "renew-7") == 0);
    mc_buf_free(&buf);
    mc_arena_free(a);
}

/* callback.group: the url group://GROUP/PATH and callback.strategy as the metadata
 * mooncake.route, refused with the field named when wrong, and shown back as given. */
static void test_groups(void)
{
    mc_arena *a = mc_arena_new();
    mc_task t;
    char why[512] = "";
    int made = 0;
    CHECK(parse("{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"group\":\"billing\","
                "\"path\":\"/charge?x=1\",\"strategy\":\"ROUND_ROBIN\"},"
                "\"metadata\":{\"k\":\"v\"}}",
                a, &t, why, &made) == 0,
          "%s", why);
    CHECK(strcmp(t.callback.url, "group://billing/charge?x=1") == 0, "%s", t.callback.url);
    CHECK(t.n_metadata == 2 && strcmp(t.metadata[1].key, "mooncake.route") == 0 &&
          strcmp(t.metadata[1].value, "ROUND_ROBIN") == 0);
    /* What the task's GET shows: group, path and strategy, not the url. */
    json_t *cb = mc_callback_to_json(&t.callback, true);
    mc_json_callback_group(cb, t.metadata, t.n_metadata);
    CHECK(!json_object_get(cb, "url"));
    CHECK(strcmp(json_string_value(json_object_get(cb, "group")), "billing") == 0);
    CHECK(strcmp(json_string_value(json_object_get(cb, "path")), "/charge?x=1") == 0);
    CHECK(strcmp(json_string_value(json_object_get(cb, "strategy")), "ROUND_ROBIN") == 0);
    json_decref(cb);
    json_t *md = mc_json_api_metadata(t.metadata, t.n_metadata);
    CHECK(json_object_size(md) == 1 && !json_object_get(md, "mooncake.route"));
    json_decref(md);
    /* No path, no strategy: the group's own. */
    CHECK(parse("{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"group\":\"g.1_x-y\"}}", a, &t, why,
                &made) == 0,
          "%s", why);
    CHECK(strcmp(t.callback.url, "group://g.1_x-y") == 0 && t.n_metadata == 0);
    /* A follow-up may call a group, with the group's strategy. */
    CHECK(parse("{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\"},"
                "\"onSuccess\":[{\"callback\":{\"group\":\"g\",\"path\":\"/next\"}}]}",
                a, &t, why, &made) == 0,
          "%s", why);
    CHECK(t.n_on_success == 1 && strcmp(t.on_success[0].callback.url, "group://g/next") == 0);
    static const struct {
        const char *body, *needle;
    } bad[] = {
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"group\":\"g\",\"url\":\"http://x\"}}",
         "callback.url or callback.group, not both"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"group\":\"a/b\"}}",
         "callback.group 'a/b' is not a group name"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"group\":\"\"}}", "callback.group"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"group\":7}}", "callback.group"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"group\":\"g\",\"path\":\"x\"}}",
         "callback.path 'x' must start with '/'"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"group\":\"g\",\"strategy\":\"round\"}}",
         "callback.strategy 'round' is not one of"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://"
         "x\",\"strategy\":\"FIRST\"}}",
         "callback.strategy is for a group"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\"},"
         "\"metadata\":{\"mooncake.route\":\"FIRST\"}}",
         "metadata.mooncake.route is reserved"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"group://bad name/x\"}}",
         "callback.url 'group://bad name/x' does not name a group"},
        {"{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"url\":\"http://x\"},"
         "\"onSuccess\":[{\"callback\":{\"group\":\"g\",\"strategy\":\"FIRST\"}}]}",
         "onSuccess[0].callback.strategy is not taken here"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = '\0';
        CHECK(parse(bad[i].body, a, &t, why, &made) != 0, "accepted: %s", bad[i].body);
        CHECK(strstr(why, bad[i].needle), "%s: %s", bad[i].body, why);
    }
    /* The router's rules on the Avro task: a route only on a group call, and known. */
    CHECK(parse("{\"appId\":\"a\",\"delayMs\":1,\"callback\":{\"group\":\"g\"}}", a, &t, why,
                &made) == 0);
    mc_kv route[] = {{"mooncake.route", "FIRST"}};
    t.metadata = route;
    t.n_metadata = 1;
    CHECK(mc_task_ok(&t, NOW, 86400000, &mc_task_avro_names, why, sizeof why), "%s", why);
    route[0].value = "NOPE";
    CHECK(!mc_task_ok(&t, NOW, 86400000, &mc_task_avro_names, why, sizeof why));
    CHECK(strstr(why, "metadata.mooncake.route 'NOPE' is not one of"), "%s", why);
    route[0].value = "LAST";
    t.callback.url = "http://x";
    CHECK(!mc_task_ok(&t, NOW, 86400000, &mc_task_avro_names, why, sizeof why));
    CHECK(strstr(why, "metadata.mooncake.route is set but callback.url names no group"), "%s", why);
    mc_arena_free(a);
}

int main(void)
{
    test_full_task();
    test_defaults();
    test_errors_name_the_field();
    test_kafka_target();
    test_kafka_target_and_late_policy_errors();
    test_task_to_json();
    test_follow_ups();
    test_follow_up_errors();
    test_cancel();
    test_ordering_key();
    test_encode_task_command();
    test_groups();
    return check_exit("task_json");
}
