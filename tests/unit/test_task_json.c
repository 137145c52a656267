/* The gateway's JSON -> Task: what a client gets for what it sends. */
#include <string.h>

#include "check.h"
#include "task_json.h"

static const int64_t NOW = 1795330000000;

static void fixed_id(void *arg, char out[MC_JSON_MAX_ID_LEN + 1])
{
    (*(int *)arg)++;
    strcpy(out, "generated-id");
}

static int parse(const char *json, mc_arena *a, mc_task *t, char *why, int *made)
{
    mc_task_json_options o = {.now_ms = NOW,
                              .max_due_ms = 86400000,
                              .retry_defaults = {5, 1000, 2.0, 3600000},
                              .make_id = fixed_id,
                              .make_id_arg = made};
    return mc_task_from_json(json, strlen(json), &o, a, t, why, 512);
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

static void test_cancel(void)
{
    mc_arena *a = mc_arena_new();
    mc_cancel c;
    char why[512] = "";
    const char *ok = "{\"appId\":\"shop\",\"uuid\":\"o-1\"}";
    CHECK(mc_cancel_from_json(ok, strlen(ok), NOW, a, &c, why, sizeof why) == 0, "%s", why);
    CHECK(strcmp(c.app_id, "shop") == 0 && strcmp(c.task_id, "o-1") == 0 && c.requested_at == NOW);
    const char *bad = "{\"appId\":\"shop\"}";
    CHECK(mc_cancel_from_json(bad, strlen(bad), NOW, a, &c, why, sizeof why) != 0);
    CHECK(strstr(why, "uuid is required") != NULL, "%s", why);
    mc_arena_free(a);
}

int main(void)
{
    test_full_task();
    test_defaults();
    test_errors_name_the_field();
    test_cancel();
    return check_exit("task_json");
}
