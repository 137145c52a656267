/* Unit tests of one task as the view keeps it: each state a task can be in
 * is reached from the records that lead there, in any order between topics;
 * "cancelled" is said only once the wheel has passed the cancel; the answer
 * hides the callback's secrets; the changelog bytes bring back the same
 * answer and refuse damaged input. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "layout.h"
#include "redact.h"
#include "view_task.h"

#define KEY "shop/order-42"
#define NOW 1000000

static mc_buf task_bytes(int64_t version, int32_t attempt, int64_t due)
{
    static const mc_kv headers[] = {
        {"Authorization", "Bearer s3cret"}, {"X-Shop-Token", "t0k"}, {"X-Order", "42"}};
    mc_task t = {.app_id = "shop",
                 .task_id = "order-42",
                 .due_at = due,
                 .callback = {.url = "https://user:pw@shop.example/hook?sig=abc&order=42",
                              .method = "POST",
                              .headers = headers,
                              .n_headers = 3,
                              .body = (const uint8_t *)"{}",
                              .body_len = 2,
                              .timeout_ms = 5000},
                 .attempt = attempt,
                 .created_at = NOW - 10};
    mc_buf b = {0};
    CHECK(mc_encode_stored_task(&(mc_stored_task){version, t}, &b) == 0);
    return b;
}

static mc_view_task *submitted(int64_t v, int64_t due)
{
    mc_view_task *t = mc_view_task_new(KEY, strlen(KEY));
    mc_buf b = task_bytes(v, 1, due);
    CHECK(mc_view_task_submitted(t, v, 1, due, NOW - 10, b.data, b.len));
    mc_buf_free(&b);
    return t;
}

static mc_result result(int64_t v, int32_t attempt, mc_outcome outcome)
{
    return (mc_result){.app_id = "shop",
                       .task_id = "order-42",
                       .attempt = attempt,
                       .due_at = NOW,
                       .started_at = NOW,
                       .finished_at = NOW + 12,
                       .http_status = outcome == MC_OUTCOME_SUCCEEDED ? 200 : 503,
                       .outcome = outcome,
                       .error = outcome == MC_OUTCOME_SUCCEEDED ? "" : "HTTP 503",
                       .version = v,
                       .response_body = (const uint8_t *)"busy",
                       .response_body_len = 4,
                       .response_size = 4};
}

#define STATE(t, pos, now) mc_view_task_state((t), (pos), (now))

static void test_a_near_task_from_accepted_to_succeeded(void)
{
    mc_view_task *t = submitted(7, NOW + 500);
    CHECK(STATE(t, -1, NOW) == MC_VIEW_ACCEPTED);
    CHECK(mc_view_task_routed(t, 7, 40));
    CHECK(mc_view_task_scheduled(t, 7, 1, NOW + 500, false));
    CHECK(STATE(t, -1, NOW) == MC_VIEW_PENDING_WHEEL);
    CHECK(mc_view_task_fired(t, 7, 1, NOW + 300));
    CHECK(STATE(t, -1, NOW + 300) == MC_VIEW_HELD, "fired early, before its due time");
    CHECK(STATE(t, -1, NOW + 500) == MC_VIEW_CALLING);
    CHECK(!mc_view_task_fired(t, 7, 1, NOW + 301), "the same fire again changes nothing");
    mc_result r = result(7, 1, MC_OUTCOME_SUCCEEDED);
    CHECK(mc_view_task_result(t, &r));
    CHECK(STATE(t, -1, NOW + 600) == MC_VIEW_SUCCEEDED);
    CHECK(mc_view_state_final(MC_VIEW_SUCCEEDED) && !mc_view_state_final(MC_VIEW_CALLING));
    mc_view_task_free(t);
}

static void test_a_far_task_waits_in_the_store_then_the_wheel(void)
{
    mc_view_task *t = submitted(3, NOW + 86400000);
    CHECK(mc_view_task_scheduled(t, 3, 1, NOW + 86400000, true));
    CHECK(STATE(t, -1, NOW) == MC_VIEW_PENDING_STORE);
    CHECK(mc_view_task_scheduled(t, 3, 1, NOW + 86400000, false), "the hand-off");
    CHECK(STATE(t, -1, NOW) == MC_VIEW_PENDING_WHEEL);
    CHECK(!mc_view_task_scheduled(t, 3, 1, NOW + 86400000, true),
          "a far record of the same attempt read late does not take it back to the store");
    CHECK(STATE(t, -1, NOW) == MC_VIEW_PENDING_WHEEL);
    mc_view_task_free(t);
}

static void test_retries_then_dead(void)
{
    mc_view_task *t = submitted(5, NOW);
    mc_view_task_scheduled(t, 5, 1, NOW, false);
    mc_view_task_fired(t, 5, 1, NOW);
    mc_result r = result(5, 1, MC_OUTCOME_FAILED_WILL_RETRY);
    mc_view_task_result(t, &r);
    CHECK(STATE(t, -1, NOW + 20) == MC_VIEW_RETRYING);
    mc_buf b = task_bytes(5, 2, NOW + 1000);
    CHECK(mc_view_task_submitted(t, 5, 2, NOW + 1000, 0, b.data, b.len));
    mc_buf_free(&b);
    CHECK(mc_view_task_scheduled(t, 5, 2, NOW + 1000, false));
    CHECK(STATE(t, -1, NOW + 20) == MC_VIEW_RETRYING);
    json_t *j = mc_view_task_json(t, -1, NOW + 20);
    CHECK(json_integer_value(json_object_get(j, "nextAttemptAt")) == NOW + 1000);
    CHECK(json_integer_value(json_object_get(j, "attempt")) == 2);
    json_decref(j);
    mc_view_task_fired(t, 5, 2, NOW + 1000);
    CHECK(STATE(t, -1, NOW + 999) == MC_VIEW_HELD);
    CHECK(STATE(t, -1, NOW + 1000) == MC_VIEW_CALLING);
    r = result(5, 2, MC_OUTCOME_EXHAUSTED);
    mc_view_task_result(t, &r);
    CHECK(STATE(t, -1, NOW + 1100) == MC_VIEW_DEAD);
    CHECK(t->n_calls == 2);
    r = result(5, 1, MC_OUTCOME_FAILED_PERMANENTLY);
    mc_view_task *u = submitted(6, NOW);
    r.version = 6;
    mc_view_task_fired(u, 6, 1, NOW);
    mc_view_task_result(u, &r);
    CHECK(STATE(u, -1, NOW) == MC_VIEW_FAILED);
    mc_view_task_free(u);
    mc_view_task_free(t);
}

static void test_cancelled_only_once_the_wheel_has_passed_the_cancel(void)
{
    mc_view_task *t = submitted(7, NOW + 60000);
    mc_view_task_scheduled(t, 7, 1, NOW + 60000, false);
    CHECK(mc_view_task_cancelled(t, 9, NOW));
    CHECK(!mc_view_task_cancelled(t, 8, NOW), "an older cancel is no news");
    CHECK(STATE(t, 500, NOW) == MC_VIEW_CANCEL_REQUESTED,
          "the cancel's wheel record is not seen yet: the wheel may still fire");
    CHECK(mc_view_task_routed(t, 9, 120));
    CHECK(STATE(t, -1, NOW) == MC_VIEW_CANCEL_REQUESTED);
    CHECK(STATE(t, 120, NOW) == MC_VIEW_CANCEL_REQUESTED, "the marker says below 120 is done");
    CHECK(STATE(t, 121, NOW) == MC_VIEW_CANCELLED);
    /* Fired before the cancel: the call may still happen. */
    mc_view_task *u = submitted(7, NOW);
    mc_view_task_fired(u, 7, 1, NOW);
    mc_view_task_cancelled(u, 9, NOW);
    mc_view_task_routed(u, 9, 120);
    CHECK(STATE(u, 500, NOW + 1) == MC_VIEW_CALLING, "a call under way is not cancelled");
    mc_result r = result(7, 1, MC_OUTCOME_SUCCEEDED);
    mc_view_task_result(u, &r);
    CHECK(STATE(u, 500, NOW + 20) == MC_VIEW_SUCCEEDED, "the cancel came too late");
    json_t *j = mc_view_task_json(u, 500, NOW + 20);
    CHECK(json_integer_value(json_object_get(j, "cancelVersion")) == 9);
    json_decref(j);
    /* The executor's recall answers CANCELLED. */
    mc_view_task *w = submitted(7, NOW + 100);
    mc_view_task_fired(w, 7, 1, NOW);
    mc_view_task_cancelled(w, 9, NOW);
    r = result(7, 1, MC_OUTCOME_CANCELLED);
    mc_view_task_result(w, &r);
    CHECK(STATE(w, -1, NOW + 200) == MC_VIEW_CANCELLED);
    /* A failed call, then a cancel: its next attempt never fires. */
    mc_view_task *x = submitted(7, NOW);
    mc_view_task_fired(x, 7, 1, NOW);
    r = result(7, 1, MC_OUTCOME_FAILED_WILL_RETRY);
    mc_view_task_result(x, &r);
    mc_view_task_scheduled(x, 7, 2, NOW + 5000, false);
    mc_view_task_cancelled(x, 9, NOW + 10);
    mc_view_task_routed(x, 9, 300);
    CHECK(STATE(x, 300, NOW + 20) == MC_VIEW_RETRYING,
          "called before the cancel: not cancelRequested, which promises no call");
    CHECK(STATE(x, 301, NOW + 20) == MC_VIEW_CANCELLED);
    mc_view_task_free(x);
    mc_view_task_free(w);
    mc_view_task_free(u);
    mc_view_task_free(t);
}

static void test_a_newer_version_supersedes_and_records_arrive_in_any_order(void)
{
    mc_view_task *t = submitted(1, NOW + 60000);
    mc_view_task_scheduled(t, 1, 1, NOW + 60000, false);
    mc_buf b = task_bytes(7, 1, NOW + 90000);
    CHECK(mc_view_task_submitted(t, 7, 1, NOW + 90000, NOW, b.data, b.len));
    mc_buf_free(&b);
    CHECK(t->version == 7 && t->n_older == 1 && t->older[0].version == 1);
    CHECK(STATE(t, -1, NOW) == MC_VIEW_ACCEPTED);
    json_t *j = mc_view_task_json(t, 1000, NOW);
    json_t *o = json_array_get(json_object_get(j, "olderVersions"), 0);
    CHECK(strcmp(json_string_value(json_object_get(o, "state")), "supersedeRequested") == 0);
    json_decref(j);
    mc_view_task_routed(t, 7, 50);
    j = mc_view_task_json(t, 51, NOW);
    o = json_array_get(json_object_get(j, "olderVersions"), 0);
    CHECK(strcmp(json_string_value(json_object_get(o, "state")), "superseded") == 0);
    json_decref(j);
    /* Records of the old version read later change nothing of the new one. */
    CHECK(!mc_view_task_scheduled(t, 1, 1, NOW + 60000, true));
    mc_result r = result(1, 1, MC_OUTCOME_SUCCEEDED);
    CHECK(mc_view_task_result(t, &r), "the old version's Result goes to its story");
    CHECK(t->n_calls == 0 && t->older[0].last_outcome == MC_OUTCOME_SUCCEEDED);
    /* A Result of a version never seen yet (its tasks record still unread). */
    mc_view_task *u = mc_view_task_new(KEY, strlen(KEY));
    r = result(12, 1, MC_OUTCOME_SUCCEEDED);
    CHECK(mc_view_task_result(u, &r));
    CHECK(u->version == 12 && STATE(u, -1, NOW) == MC_VIEW_SUCCEEDED);
    b = task_bytes(12, 1, NOW);
    mc_view_task_submitted(u, 12, 1, NOW, NOW - 10, b.data, b.len);
    mc_buf_free(&b);
    CHECK(u->task != NULL && STATE(u, -1, NOW) == MC_VIEW_SUCCEEDED);
    CHECK(mc_view_task_rejected(u, 12, "not a task") && STATE(u, -1, NOW) == MC_VIEW_REJECTED);
    mc_view_task *w = mc_view_task_new(KEY, strlen(KEY));
    mc_view_task_cancelled(w, 4, NOW);
    CHECK(STATE(w, -1, NOW) == MC_VIEW_UNKNOWN, "a cancel of nothing");
    mc_view_task_free(w);
    mc_view_task_free(u);
    mc_view_task_free(t);
}

static void test_versions_shifted_by_a_growth_are_versions(void)
{
    /* After a growth of the partition count a moved key's records carry
     * versions far below zero; they still order, and still count. */
    int64_t shifted = mc_layout_shift(40);
    mc_view_task *t = mc_view_task_new(KEY, strlen(KEY));
    mc_buf b = task_bytes(shifted, 1, NOW + 5000);
    CHECK(mc_view_task_submitted(t, shifted, 1, NOW + 5000, NOW, b.data, b.len));
    mc_buf_free(&b);
    CHECK(mc_view_task_scheduled(t, shifted, 1, NOW + 5000, false));
    CHECK(STATE(t, -1, NOW) == MC_VIEW_PENDING_WHEEL && t->version == shifted);
    CHECK(mc_view_task_cancelled(t, 3, NOW), "a command written after the growth is newer");
    mc_view_task_routed(t, 3, 10);
    CHECK(STATE(t, 11, NOW) == MC_VIEW_CANCELLED);
    mc_view_task_free(t);
}

static void test_results_without_a_version_claim_nothing_they_may_not_be_about(void)
{
    /* v1 fired early and held; the client re-submits (v2); the executor's
     * recall writes CANCELLED without a version (--record-version 1). It
     * is v1's, not v2's: v2 stays pending. */
    mc_view_task *t = submitted(1, NOW + 500);
    mc_view_task_fired(t, 1, 1, NOW);
    mc_buf b = task_bytes(2, 1, NOW + 90000);
    mc_view_task_submitted(t, 2, 1, NOW + 90000, NOW, b.data, b.len);
    mc_buf_free(&b);
    mc_view_task_scheduled(t, 2, 1, NOW + 90000, true);
    mc_result r = result(-1, 1, MC_OUTCOME_CANCELLED);
    CHECK(!mc_view_task_result(t, &r));
    CHECK(STATE(t, -1, NOW + 600) == MC_VIEW_PENDING_STORE);
    /* A key with one version and no cancel: the Result is that version's. */
    mc_view_task *u = submitted(4, NOW);
    mc_view_task_fired(u, 4, 1, NOW);
    r = result(-1, 1, MC_OUTCOME_SUCCEEDED);
    CHECK(mc_view_task_result(u, &r) && STATE(u, -1, NOW + 20) == MC_VIEW_SUCCEEDED);
    /* A command the router refused replaces nothing. */
    CHECK(!mc_view_task_rejected(t, 9, "callback.url 'ftp://x' is not http:// or https://"));
    CHECK(STATE(t, -1, NOW + 600) == MC_VIEW_PENDING_STORE && t->version == 2);
    mc_view_task_free(u);
    mc_view_task_free(t);
}

static void test_the_answer_hides_secrets(void)
{
    mc_view_task *t = submitted(7, NOW);
    json_t *j = mc_view_task_json(t, -1, NOW);
    char *s = json_dumps(j, 0);
    CHECK(!strstr(s, "s3cret") && !strstr(s, "t0k") && !strstr(s, "pw@") && !strstr(s, "abc"), "%s",
          s);
    CHECK(strstr(s, "\"X-Order\": \"42\"") && strstr(s, "order=42"), "%s", s);
    free(s);
    json_decref(j);
    /* An endpoint that echoes the request shows no secret either. */
    mc_view_task_fired(t, 7, 1, NOW);
    mc_result r = result(7, 1, MC_OUTCOME_FAILED_PERMANENTLY);
    r.response_body = (const uint8_t *)"bad key s3cret; Bearer s3cret";
    r.response_body_len = strlen((const char *)r.response_body);
    r.error = "HTTP 401: s3cret";
    mc_view_task_result(t, &r);
    j = mc_view_task_json(t, -1, NOW);
    s = json_dumps(j, 0);
    /* (values shorter than 4 bytes, like this test's "abc", are left alone) */
    CHECK(!strstr(s, "s3cret") && strstr(s, "bad key [redacted]; [redacted]") &&
              strstr(s, "HTTP 401: [redacted]"),
          "%s", s);
    free(s);
    json_decref(j);
    mc_view_task_free(t);
    static const struct {
        const char *in, *out;
    } urls[] = {
        {"https://a.example/x", "https://a.example/x"},
        {"https://u:p@a.example/x?q=1", "https://[redacted]@a.example/x?q=1"},
        {"https://a.example/x?access_token=1&b=2#frag",
         "https://a.example/x?access_token=[redacted]&b=2#frag"},
        {"https://a.example/?API_KEY=1;Signature=2&x",
         "https://a.example/?API_KEY=[redacted];Signature=[redacted]&x"},
        {"https://a.example/?=&&", "https://a.example/?=&&"},
        {"http://a.example/p@x", "http://a.example/p@x"},
        {"https://a.example/cb#access_token=t0k&state=1",
         "https://a.example/cb#access_token=[redacted]&state=1"},
        {"https://a.example/?%74oken=1&Pass=2",
         "https://a.example/?%74oken=[redacted]&Pass=[redacted]"},
    };
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        char *r = mc_url_redacted(urls[i].in);
        CHECK(r && strcmp(r, urls[i].out) == 0, "%s -> %s", urls[i].in, r);
        free(r);
    }
    char *said = mc_text_redacted("callback.url 'htps://u:p@h.example/cb?token=s3' is not http");
    CHECK(said && strcmp(said, "callback.url 'htps://[redacted]@h.example/cb?token=[redacted]' "
                               "is not http") == 0,
          "%s", said);
    free(said);
    CHECK(mc_secret_name("Proxy-Authorization") && mc_secret_name("x-api-key") &&
          mc_secret_name("Cookie") && !mc_secret_name("Content-Type") &&
          !mc_secret_name("X-Order"));
}

/* A task that delivers to Kafka: the answer shows its target instead of a
 * callback, the value by its size only, secret headers redacted, the late
 * policy; a DROPPED Result makes it "dropped", a final state. */
static void test_a_kafka_target_is_shown_without_its_value(void)
{
    static const mc_kv headers[] = {{"trace", "t-1"}, {"Authorization", "Bearer s3cret"}};
    static const uint8_t bin_key[] = {0xff, 0x00, 0x01};
    mc_task task = {.app_id = "shop",
                    .task_id = "order-42",
                    .due_at = NOW,
                    .callback = {.url = "", .method = "POST"},
                    .attempt = 1,
                    .created_at = NOW - 10,
                    .has_kafka_target = true,
                    .kafka_target = {.topic = "orders.expired",
                                     .key = (const uint8_t *)"order-42",
                                     .key_len = 8,
                                     .has_key = true,
                                     .value = (const uint8_t *)"secret-payload",
                                     .value_len = 14,
                                     .has_value = true,
                                     .headers = headers,
                                     .n_headers = 2},
                    .has_late_policy = true,
                    .late_policy = {5000, MC_LATE_DROP}};
    for (int round = 0; round < 2; round++) {
        if (round == 1) { /* a binary key and a tombstone */
            task.kafka_target.key = bin_key;
            task.kafka_target.key_len = sizeof bin_key;
            task.kafka_target.value = NULL;
            task.kafka_target.value_len = 0;
            task.kafka_target.has_value = false;
            task.has_late_policy = false;
        }
        mc_buf b = {0};
        CHECK(mc_encode_stored_task(&(mc_stored_task){7, task}, &b) == 0);
        mc_view_task *t = mc_view_task_new(KEY, strlen(KEY));
        CHECK(mc_view_task_submitted(t, 7, 1, NOW, NOW - 10, b.data, b.len));
        mc_buf_free(&b);
        json_t *j = mc_view_task_json(t, -1, NOW);
        char *s = json_dumps(j, 0);
        json_t *k = json_object_get(j, "kafkaTarget");
        CHECK(k && !json_object_get(j, "callback"), "%s", s);
        CHECK(strcmp(json_string_value(json_object_get(k, "topic")), "orders.expired") == 0);
        CHECK(!strstr(s, "secret-payload") && !strstr(s, "s3cret"), "%s", s);
        json_t *h = json_object_get(k, "headers");
        CHECK(strcmp(json_string_value(json_object_get(h, "trace")), "t-1") == 0 &&
                  strcmp(json_string_value(json_object_get(h, "Authorization")), MC_REDACTED) == 0,
              "%s", s);
        json_t *late = json_object_get(j, "latePolicy");
        if (round == 0) {
            CHECK(strcmp(json_string_value(json_object_get(k, "key")), "order-42") == 0, "%s", s);
            CHECK(json_integer_value(json_object_get(k, "valueBytes")) == 14 &&
                      !json_object_get(k, "tombstone"),
                  "%s", s);
            CHECK(late && json_integer_value(json_object_get(late, "maxLateMs")) == 5000 &&
                      strcmp(json_string_value(json_object_get(late, "action")), "DROP") == 0,
                  "%s", s);
        } else {
            CHECK(!json_object_get(k, "key") &&
                      strcmp(json_string_value(json_object_get(k, "keyBase64")), "/wAB") == 0,
                  "%s", s);
            CHECK(json_is_true(json_object_get(k, "tombstone")) &&
                      !json_object_get(k, "valueBytes"),
                  "%s", s);
            CHECK(!late, "%s", s);
        }
        free(s);
        json_decref(j);
        /* a line of a list: the topic, not the key or headers */
        j = mc_view_task_summary_json(t, -1, NOW);
        k = json_object_get(j, "kafkaTarget");
        CHECK(k && json_object_get(k, "topic") && !json_object_get(k, "headers") &&
              !json_object_get(k, "key") && !json_object_get(k, "keyBase64"));
        json_decref(j);
        /* not called: later than its policy allows */
        mc_view_task_fired(t, 7, 1, NOW);
        mc_result r = result(7, 1, MC_OUTCOME_DROPPED);
        r.http_status = 0;
        r.response_size = -1;
        mc_view_task_result(t, &r);
        CHECK(STATE(t, NOW, NOW + 20) == MC_VIEW_DROPPED);
        CHECK(mc_view_state_final(MC_VIEW_DROPPED) &&
              strcmp(mc_view_state_name(MC_VIEW_DROPPED), "dropped") == 0);
        mc_view_task_free(t);
    }
}

/* Follow-ups: each with the id it will have, its callback redacted as the
 * task's or its Kafka target without the value, retry and late policy; not
 * in a line of a list. */
static void test_follow_ups_are_shown_redacted(void)
{
    static const mc_kv secret[] = {{"Authorization", "Bearer s3cret"}, {"X-Order", "42"}};
    const mc_follow_up then[] = {
        {.task_id = "",
         .delay_ms = 0,
         .callback = {.url = "https://u:pw@shop.example/paid?token=zz9x",
                      .method = "POST",
                      .headers = secret,
                      .n_headers = 2,
                      .body = (const uint8_t *)"{}",
                      .body_len = 2},
         .has_retry = true,
         .retry = {2, 100, 2.0, 1000}},
        {.task_id = "audit-42",
         .delay_ms = 60000,
         .callback = {.url = "", .method = "POST"},
         .has_kafka_target = true,
         .kafka_target = {.topic = "audit",
                          .key = (const uint8_t *)"order-42",
                          .key_len = 8,
                          .has_key = true,
                          .value = (const uint8_t *)"payload-secret",
                          .value_len = 14,
                          .has_value = true},
         .has_late_policy = true,
         .late_policy = {500, MC_LATE_DEAD}},
    };
    mc_task task = {.app_id = "shop",
                    .task_id = "order-42",
                    .due_at = NOW,
                    .callback = {.url = "https://shop.example/hook", .method = "POST"},
                    .attempt = 1,
                    .created_at = NOW - 10,
                    .on_success = then,
                    .n_on_success = 2};
    mc_buf b = {0};
    CHECK(mc_encode_stored_task(&(mc_stored_task){7, task}, &b) == 0);
    mc_view_task *t = mc_view_task_new(KEY, strlen(KEY));
    CHECK(mc_view_task_submitted(t, 7, 1, NOW, NOW - 10, b.data, b.len));
    mc_buf_free(&b);
    json_t *j = mc_view_task_json(t, -1, NOW);
    char *s = json_dumps(j, 0);
    CHECK(!strstr(s, "s3cret") && !strstr(s, "pw@") && !strstr(s, "zz9x") &&
              !strstr(s, "payload-secret"),
          "%s", s);
    json_t *os = json_object_get(j, "onSuccess");
    CHECK(json_array_size(os) == 2, "%s", s);
    json_t *f0 = json_array_get(os, 0), *f1 = json_array_get(os, 1);
    CHECK(strcmp(json_string_value(json_object_get(f0, "uuid")), "order-42.then1") == 0, "%s", s);
    CHECK(json_integer_value(json_object_get(f0, "delayMs")) == 0 &&
              !json_object_get(f0, "kafkaTarget") && !json_object_get(f0, "latePolicy"),
          "%s", s);
    json_t *cb = json_object_get(f0, "callback");
    CHECK(cb &&
              strcmp(json_string_value(
                         json_object_get(json_object_get(cb, "headers"), "Authorization")),
                     MC_REDACTED) == 0 &&
              strcmp(json_string_value(json_object_get(json_object_get(cb, "headers"), "X-Order")),
                     "42") == 0,
          "%s", s);
    CHECK(json_integer_value(json_object_get(json_object_get(f0, "retry"), "maxAttempts")) == 2,
          "%s", s);
    CHECK(strcmp(json_string_value(json_object_get(f1, "uuid")), "audit-42") == 0 &&
              json_integer_value(json_object_get(f1, "delayMs")) == 60000 &&
              !json_object_get(f1, "callback") && json_is_null(json_object_get(f1, "retry")),
          "%s", s);
    json_t *k = json_object_get(f1, "kafkaTarget");
    CHECK(k && strcmp(json_string_value(json_object_get(k, "topic")), "audit") == 0 &&
              json_integer_value(json_object_get(k, "valueBytes")) == 14,
          "%s", s);
    CHECK(strcmp(json_string_value(json_object_get(json_object_get(f1, "latePolicy"), "action")),
                 "DEAD") == 0,
          "%s", s);
    free(s);
    json_decref(j);
    j = mc_view_task_summary_json(t, -1, NOW);
    CHECK(j && !json_object_get(j, "onSuccess"));
    json_decref(j);
    /* A task without follow-ups has no onSuccess at all. */
    mc_view_task_free(t);
    t = submitted(7, NOW);
    j = mc_view_task_json(t, -1, NOW);
    CHECK(j && !json_object_get(j, "onSuccess"));
    json_decref(j);
    mc_view_task_free(t);
}

static void test_without_the_tasks_bytes_no_echo_is_shown(void)
{
    /* A task whose bytes were not kept (over 64 KiB): its secrets are not
     * known, so what the endpoint answered is left out. */
    mc_view_task *t = mc_view_task_new(KEY, strlen(KEY));
    mc_view_task_scheduled(t, 3, 1, NOW, false);
    mc_view_task_fired(t, 3, 1, NOW);
    mc_result r = result(3, 1, MC_OUTCOME_FAILED_PERMANENTLY);
    r.response_body = (const uint8_t *)"bad key sk_live_1234";
    r.response_body_len = strlen((const char *)r.response_body);
    r.error = "HTTP 401 at https://h.example/x?token=abcd1234";
    CHECK(mc_view_task_result(t, &r));
    json_t *j = mc_view_task_json(t, -1, NOW);
    char *s = json_dumps(j, 0);
    CHECK(!strstr(s, "sk_live") && !strstr(s, "abcd1234") && !strstr(s, "responseBody") &&
              strstr(s, "token=[redacted]"),
          "%s", s);
    free(s);
    json_decref(j);
    mc_view_task_free(t);
}

static void test_the_changelog_brings_back_the_same_answer(void)
{
    mc_view_task *t = submitted(5, NOW);
    mc_view_task_scheduled(t, 5, 1, NOW, false);
    mc_view_task_fired(t, 5, 1, NOW);
    mc_result r = result(5, 1, MC_OUTCOME_FAILED_WILL_RETRY);
    mc_view_task_result(t, &r);
    mc_buf b = task_bytes(9, 1, NOW + 5);
    mc_view_task_submitted(t, 9, 1, NOW + 5, NOW, b.data, b.len);
    mc_buf_free(&b);
    mc_view_task_cancelled(t, 11, NOW);
    mc_view_task_routed(t, 11, 77);
    mc_view_task_rejected(t, 9, "callback.url: not http(s)");
    mc_buf enc = {0};
    CHECK(mc_view_task_encode(t, &enc) == 0);
    const char *why = NULL;
    mc_view_task *back = mc_view_task_decode(KEY, strlen(KEY), enc.data, enc.len, &why);
    CHECK(back != NULL, "%s", why);
    if (back) {
        json_t *ja = mc_view_task_json(t, 80, NOW);
        char *a = json_dumps(ja, JSON_SORT_KEYS);
        json_decref(ja);
        json_t *jb = mc_view_task_json(back, 80, NOW);
        char *c = json_dumps(jb, JSON_SORT_KEYS);
        CHECK(strcmp(a, c) == 0, "\n%s\n%s", a, c);
        free(a);
        free(c);
        json_decref(jb);
        mc_view_task_free(back);
    }
    /* Damaged bytes are refused, never read past. */
    for (size_t n = 0; n < enc.len; n++) {
        mc_view_task *cut = mc_view_task_decode(KEY, strlen(KEY), enc.data, n, &why);
        CHECK(cut == NULL, "a record cut at %zu bytes was taken", n);
        mc_view_task_free(cut);
    }
    uint8_t *more = malloc(enc.len + 1);
    memcpy(more, enc.data, enc.len);
    more[enc.len] = 0;
    CHECK(mc_view_task_decode(KEY, strlen(KEY), more, enc.len + 1, &why) == NULL &&
          strcmp(why, "trailing bytes") == 0);
    free(more);
    mc_buf_free(&enc);
    mc_view_task_free(t);
}

int main(void)
{
    test_a_near_task_from_accepted_to_succeeded();
    test_a_far_task_waits_in_the_store_then_the_wheel();
    test_retries_then_dead();
    test_cancelled_only_once_the_wheel_has_passed_the_cancel();
    test_a_newer_version_supersedes_and_records_arrive_in_any_order();
    test_versions_shifted_by_a_growth_are_versions();
    test_results_without_a_version_claim_nothing_they_may_not_be_about();
    test_the_answer_hides_secrets();
    test_a_kafka_target_is_shown_without_its_value();
    test_follow_ups_are_shown_redacted();
    test_without_the_tasks_bytes_no_echo_is_shown();
    test_the_changelog_brings_back_the_same_answer();
    return check_exit("test_view_task");
}
