/* Alarm webhooks, batches and bodies (common/alarm.c): a bad
 * --alarm-webhooks names the entry to fix; "*" covers the apps not named;
 * a batch lists its first dead letters and failing jobs within bounds and
 * counts the rest; what is written to Kafka reads back the same; and the
 * body an alarm call carries is the README's contract. */
#include <jansson.h>
#include <string.h>

#include "alarm.h"
#include "check.h"

static void webhooks(void)
{
    char err[256];
    mc_alarm_webhooks *w = mc_alarm_webhooks_parse(
        " shop = https://hooks.example/shop , *=http://pager.local:8080/all", err, sizeof err);
    CHECK(w != NULL, "%s", err);
    CHECK(mc_alarm_webhooks_count(w) == 2);
    CHECK(strcmp(mc_alarm_webhook_for(w, "shop"), "https://hooks.example/shop") == 0);
    CHECK(strcmp(mc_alarm_webhook_for(w, "billing"), "http://pager.local:8080/all") == 0);
    mc_alarm_webhooks_free(w);
    w = mc_alarm_webhooks_parse("", err, sizeof err);
    CHECK(w && mc_alarm_webhooks_count(w) == 0 && !mc_alarm_webhook_for(w, "shop"));
    mc_alarm_webhooks_free(w);
    static const struct {
        const char *spec, *says;
    } bad[] = {
        {"shop", "has no '='"},
        {"=https://h/x", "empty app id"},
        {"shop=ftp://h/x", "http:// or https://"},
        {"shop=https://", "http:// or https://"},
        {"shop=https:///path", "http:// or https://"},
        {"shop=https://h/a b", "http:// or https://"},
        {"shop=https://h/a,shop=https://h/b", "twice"},
        {"@/nonexistent/webhooks", "MOONCAKE_ALARM_WEBHOOKS"},
        {NULL, "at most 8192 bytes"}, /* a URL longer than a task's may be */
    };
    char long_url[9000] = "shop=https://h/";
    memset(long_url + strlen(long_url), 'x', sizeof long_url - strlen(long_url) - 1);
    long_url[sizeof long_url - 1] = '\0';
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        const char *spec = bad[i].spec ? bad[i].spec : long_url;
        w = mc_alarm_webhooks_parse(spec, err, sizeof err);
        CHECK(w == NULL && strstr(err, bad[i].says), "'%.40s' refused saying '%s': %s", spec,
              bad[i].says, err);
        mc_alarm_webhooks_free(w);
    }
}

static void app_ids(void)
{
    char long_app[MC_ALARM_APP_MAX + 2];
    memset(long_app, 'a', sizeof long_app);
    CHECK(mc_alarm_app_ok("shop", 4) && mc_alarm_app_ok("caf\xc3\xa9", 5));
    CHECK(mc_alarm_app_ok(long_app, MC_ALARM_APP_MAX) &&
          !mc_alarm_app_ok(long_app, sizeof long_app));
    CHECK(!mc_alarm_app_ok("", 0) && !mc_alarm_app_ok("a/b", 3) && !mc_alarm_app_ok("a\x01", 2) &&
          !mc_alarm_app_ok("\xff", 1));
}

/* A changelog record of another version still reads: unknown members
 * ignored, lists cut to the bounds, a bad line left out. */
static void lenient_batches(void)
{
    mc_alarm_batch b = {0};
    char err[256], doc[4096];
    int n = snprintf(doc, sizeof doc,
                     "{\"v\":2,\"count\":30,\"lastSentAt\":5,\"new\":true,\"first\":[");
    for (int i = 0; i < 15; i++)
        n += snprintf(doc + n, sizeof doc - (size_t)n,
                      "%s{\"key\":\"a/%d\",\"reason\":\"r\",\"failedAt\":%d}", i ? "," : "", i,
                      i == 3 ? -1 : i);
    snprintf(doc + n, sizeof doc - (size_t)n, "],\"jobs\":[{\"jobId\":7}]}");
    CHECK(mc_alarm_batch_decode(doc, strlen(doc), &b, err, sizeof err) == 0, "%s", err);
    CHECK(b.count == 30 && b.last_sent_at == 5 && b.n_first == MC_ALARM_FIRST && b.n_jobs == 0);
    CHECK(strcmp(b.first[3].key, "a/4") == 0, "the bad line left out: %s", b.first[3].key);
    mc_alarm_batch_clear(&b);
    static const char no_count[] = "{\"lastSentAt\":5}";
    CHECK(mc_alarm_batch_decode(no_count, strlen(no_count), &b, err, sizeof err) != 0 &&
          strstr(err, "count"));
}

static void batches(void)
{
    mc_alarm_batch b = {0};
    char key[32], reason[600];
    memset(reason, 'x', sizeof reason - 1);
    reason[sizeof reason - 1] = '\0';
    for (int i = 0; i < 25; i++) {
        snprintf(key, sizeof key, "shop/t%d", i);
        char job[16];
        snprintf(job, sizeof job, "job%d", i % 12);
        mc_alarm_line l = {key, i == 0 ? reason : "HTTP 500", job, 1000 + i};
        CHECK(mc_alarm_batch_add(&b, &l) == 0);
    }
    CHECK(b.count == 25 && b.n_first == MC_ALARM_FIRST && b.n_jobs == MC_ALARM_FIRST);
    CHECK(b.first_at == 1000 && b.last_at == 1024);
    CHECK(strlen(b.first[0].reason) == MC_ALARM_REASON_MAX, "a long reason is cut");
    CHECK(strcmp(b.first[9].key, "shop/t9") == 0);
    mc_buf enc = {0}, again = {0};
    mc_alarm_batch back = {0};
    char err[256];
    CHECK(mc_alarm_batch_encode(&b, &enc) == 0);
    CHECK(mc_alarm_batch_decode(enc.data, enc.len, &back, err, sizeof err) == 0, "%s", err);
    CHECK(mc_alarm_batch_encode(&back, &again) == 0 && again.len == enc.len &&
          memcmp(again.data, enc.data, enc.len) == 0);

    mc_buf body = {0};
    CHECK(mc_alarm_body("shop", &b, 5000, &body) == 0);
    json_t *doc = json_loadb((const char *)body.data, body.len, 0, NULL);
    CHECK(doc != NULL);
    CHECK(strcmp(json_string_value(json_object_get(doc, "type")), "mooncake.alarm") == 0);
    CHECK(strcmp(json_string_value(json_object_get(doc, "appId")), "shop") == 0);
    CHECK(json_integer_value(json_object_get(doc, "deadLetters")) == 25);
    CHECK(json_integer_value(json_object_get(doc, "alarm")) == 1);
    CHECK(json_integer_value(json_object_get(doc, "sentAt")) == 5000);
    CHECK(json_array_size(json_object_get(doc, "first")) == MC_ALARM_FIRST);
    json_t *job = json_array_get(json_object_get(doc, "jobs"), 0);
    CHECK(strcmp(json_string_value(json_object_get(job, "jobId")), "job0") == 0);
    CHECK(json_integer_value(json_object_get(job, "failedOccurrences")) == 3,
          "job0 failed at t0, t12 and t24");
    json_decref(doc);

    mc_alarm_batch_sent(&b, 5000);
    CHECK(b.count == 0 && b.n_first == 0 && b.n_jobs == 0);
    CHECK(b.sent == 1 && b.alarmed == 25 && b.last_sent_at == 5000);
    mc_alarm_batch_clear(&b);
    mc_alarm_batch_clear(&back);
    mc_buf_free(&enc);
    mc_buf_free(&again);
    mc_buf_free(&body);
}

static void events(void)
{
    /* Bytes that are not UTF-8 (a key from a client producing straight to
     * Kafka) still make JSON. */
    mc_alarm_line l = {"shop/\xff\xfe", "bad \x01 byte", NULL, 7};
    mc_buf b = {0};
    CHECK(mc_alarm_event_encode(&l, &b) == 0);
    mc_alarm_line back;
    char err[256];
    CHECK(mc_alarm_event_decode(b.data, b.len, &back, err, sizeof err) == 0, "%s", err);
    CHECK(strcmp(back.key, "shop/??") == 0 && strcmp(back.reason, "bad ? byte") == 0, "%s %s",
          back.key, back.reason);
    CHECK(back.failed_at == 7 && back.job_id == NULL);
    mc_alarm_line_clear(&back);
    mc_buf_free(&b);
    static const char *bad[] = {"", "[]", "{\"key\":\"a\"}",
                                "{\"key\":\"a\",\"reason\":\"r\",\"failedAt\":-1}",
                                "{\"key\":\"a\",\"reason\":\"r\",\"failedAt\":1,\"jobId\":2}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECK(mc_alarm_event_decode(bad[i], strlen(bad[i]), &back, err, sizeof err) != 0 && err[0],
              "'%s' refused with a reason", bad[i]);
    }
}

int main(void)
{
    webhooks();
    app_ids();
    lenient_batches();
    batches();
    events();
    return check_exit("test_alarm");
}
