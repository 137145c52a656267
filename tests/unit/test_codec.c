/* Unit tests of the Avro codec (codec/codec*.c): CRC-64-AVRO and the
 * canonical form against known values, round trips of every record type,
 * interop with avro-c's generic reader (and, for the recurring-job records,
 * with fastavro's encodings in the fuzz corpus), one crafted input per error
 * code, hostile framing and block layouts, and an informational timing
 * printout. */
#include "check.h"
#include "codec.h"

#include <avro.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "clock.h"

#define CHECK_ERR(expr, want)                                                                      \
    do {                                                                                           \
        mc_codec_err got_ = (expr);                                                                \
        if (got_ != (want)) {                                                                      \
            fprintf(stderr, "%s:%d: %s returned %s, want %s\n", __FILE__, __LINE__, #expr,         \
                    mc_codec_strerror(got_), mc_codec_strerror(want));                             \
            check_failures++;                                                                      \
        }                                                                                          \
    } while (0)

static bool str_eq(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

static bool bytes_eq(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
    return al == bl && (al == 0 || memcmp(a, b, al) == 0);
}

static bool kv_eq(const mc_kv *a, size_t an, const mc_kv *b, size_t bn)
{
    if (an != bn)
        return false;
    for (size_t i = 0; i < an; i++)
        if (!str_eq(a[i].key, b[i].key) || !str_eq(a[i].value, b[i].value))
            return false;
    return true;
}

static bool task_eq(const mc_task *a, const mc_task *b)
{
    const mc_callback *x = &a->callback, *y = &b->callback;
    return str_eq(a->app_id, b->app_id) && str_eq(a->task_id, b->task_id) &&
           a->due_at == b->due_at && str_eq(x->url, y->url) && str_eq(x->method, y->method) &&
           kv_eq(x->headers, x->n_headers, y->headers, y->n_headers) &&
           bytes_eq(x->body, x->body_len, y->body, y->body_len) && x->timeout_ms == y->timeout_ms &&
           a->has_retry == b->has_retry &&
           (!a->has_retry || (a->retry.max_attempts == b->retry.max_attempts &&
                              a->retry.initial_backoff_ms == b->retry.initial_backoff_ms &&
                              a->retry.multiplier == b->retry.multiplier &&
                              a->retry.max_backoff_ms == b->retry.max_backoff_ms)) &&
           a->attempt == b->attempt && a->created_at == b->created_at &&
           kv_eq(a->metadata, a->n_metadata, b->metadata, b->n_metadata);
}

static bool command_eq(const mc_command *a, const mc_command *b)
{
    if (a->kind != b->kind)
        return false;
    if (a->kind == MC_CMD_SUBMIT)
        return task_eq(&a->submit, &b->submit);
    return str_eq(a->cancel.app_id, b->cancel.app_id) &&
           str_eq(a->cancel.task_id, b->cancel.task_id) &&
           a->cancel.requested_at == b->cancel.requested_at;
}

/* ---- fixtures ------------------------------------------------------------------- */

static const mc_kv headers[] = {{"Content-Type", "application/json"},
                                {"X-\xe4\xb8\xad\xe6\x96\x87", "\xf0\x9f\x9a\x80 rocket"},
                                {"Empty", ""}};
static const mc_kv meta[] = {{"tenant", "t1"}};
static const char body[] = "{\"order\":42,\"items\":[1,2,3],\"note\":\"hello world\"}";

/* A typical task: about 300 bytes encoded. */
static mc_task typical_task(void)
{
    return (mc_task){
        .app_id = "shop",
        .task_id = "0193a5b2-7c1e-7def-8000-1234567890ab",
        .due_at = 1767225600000,
        .callback = {.url = "https://orders.example.com/api/v1/orders/42/expire?reason=unpaid",
                     .method = "POST",
                     .headers = headers,
                     .n_headers = 3,
                     .body = (const uint8_t *)body,
                     .body_len = sizeof body - 1,
                     .timeout_ms = 30000},
        .has_retry = true,
        .retry = {5, 1000, 2.0, 3600000},
        .attempt = 1,
        .created_at = 1767223800000,
        .metadata = meta,
        .n_metadata = 1,
    };
}

/* A task with every optional part empty. */
static mc_task bare_task(void)
{
    return (mc_task){
        .app_id = "", .task_id = "x", .callback = {.url = "", .method = ""}, .attempt = 1};
}

/* ---- CRC and canonical form ----------------------------------------------------- */

static void test_crc64(void)
{
    /* Values from the Avro spec's test vectors (Java's signed longs) and
     * from fastavro (kept in sync with tests/unit/fingerprint_test.py). */
    CHECK(mc_crc64_avro("", 0) == 0xc15d213aa4d7a795ULL);
    CHECK(mc_crc64_avro("\"int\"", 5) == 0x7275d51a3f395c8fULL);
    CHECK(mc_crc64_avro("\"null\"", 6) == (uint64_t)7195948357588979594LL);
    CHECK(mc_crc64_avro("\"boolean\"", 9) == (uint64_t)-6970731678124411036LL);
    const char *foo = "{\"name\":\"foo\",\"type\":\"record\",\"fields\":[]}";
    CHECK(mc_crc64_avro(foo, strlen(foo)) == (uint64_t)-4824392279771201922LL);
}

static void check_pcf(const char *in, const char *want)
{
    char err[256];
    char *got = mc_schema_canonical_form(in, err, sizeof err);
    if (!got || strcmp(got, want) != 0) {
        fprintf(stderr, "canonical form of %s:\n  got  %s\n  want %s\n", in, got ? got : err, want);
        check_failures++;
    }
    free(got);
}

static void check_pcf_error(const char *in, const char *needle)
{
    char err[256];
    char *got = mc_schema_canonical_form(in, err, sizeof err);
    if (got || !strstr(err, needle)) {
        fprintf(stderr, "canonical form of %s: want an error containing \"%s\", got %s\n", in,
                needle, got ? got : err);
        check_failures++;
    }
    free(got);
}

static void test_canonical_form(void)
{
    check_pcf("{\"type\":\"int\"}", "\"int\"");
    check_pcf("[ \"int\" , {\"type\":\"boolean\"} ]", "[\"int\",\"boolean\"]");
    check_pcf("{\"fields\":[], \"type\":\"record\", \"name\":\"a.b.foo\", \"namespace\":\"x.y\"}",
              "{\"name\":\"a.b.foo\",\"type\":\"record\",\"fields\":[]}");
    check_pcf("{\"namespace\":\"x.y.z\", \"type\":\"enum\", \"name\":\"foo\", \"doc\":\"d\", "
              "\"symbols\":[\"A1\", \"A2\"]}",
              "{\"name\":\"x.y.z.foo\",\"type\":\"enum\",\"symbols\":[\"A1\",\"A2\"]}");
    check_pcf("{\"size\":16,\"name\":\"f\",\"type\":\"fixed\",\"namespace\":\"n\"}",
              "{\"name\":\"n.f\",\"type\":\"fixed\",\"size\":16}");
    /* Nested definitions inherit the namespace; later uses become full names. */
    check_pcf("{\"type\":\"record\",\"name\":\"R\",\"namespace\":\"ns\",\"fields\":["
              "{\"name\":\"a\",\"type\":{\"type\":\"record\",\"name\":\"In\",\"fields\":[]}},"
              "{\"name\":\"b\",\"type\":\"In\",\"default\":{}},"
              "{\"name\":\"c\",\"type\":{\"type\":\"map\",\"values\":[\"null\",\"ns.In\"]}},"
              "{\"name\":\"d\",\"type\":{\"type\":\"long\",\"logicalType\":\"timestamp-millis\"}},"
              "{\"name\":\"e\",\"type\":{\"type\":\"array\",\"items\":\"R\"}}]}",
              "{\"name\":\"ns.R\",\"type\":\"record\",\"fields\":["
              "{\"name\":\"a\",\"type\":{\"name\":\"ns.In\",\"type\":\"record\",\"fields\":[]}},"
              "{\"name\":\"b\",\"type\":\"ns.In\"},"
              "{\"name\":\"c\",\"type\":{\"type\":\"map\",\"values\":[\"null\",\"ns.In\"]}},"
              "{\"name\":\"d\",\"type\":\"long\"},"
              "{\"name\":\"e\",\"type\":{\"type\":\"array\",\"items\":\"ns.R\"}}]}");
    check_pcf("{\"type\":\"enum\",\"name\":\"\\u0045\",\"symbols\":[\"\\u0041\"]}",
              "{\"name\":\"E\",\"type\":\"enum\",\"symbols\":[\"A\"]}");
    check_pcf_error("{", "invalid JSON");
    check_pcf_error("\"Nope\"", "unknown type Nope");
    check_pcf_error("[{\"type\":\"fixed\",\"name\":\"F\",\"size\":1},"
                    "{\"type\":\"fixed\",\"name\":\"F\",\"size\":2}]",
                    "defined twice");
    check_pcf_error("{\"type\":\"record\",\"name\":\"1x\",\"fields\":[]}", "invalid name");
    check_pcf_error("{\"type\":\"fixed\",\"name\":\"F\"}", "size");
    check_pcf_error("{\"type\":\"array\"}", "items");
}

static void test_schema_table(void)
{
    for (int i = 0; i < MC_SCHEMA_COUNT; i++) {
        const char *json = mc_schema_json((mc_schema_id)i);
        CHECK(json != NULL);
        CHECK(strncmp(mc_schema_name((mc_schema_id)i), "mooncake.", 9) == 0);
        char err[256];
        char *pcf = mc_schema_canonical_form(json, err, sizeof err);
        CHECK(pcf != NULL);
        if (!pcf) {
            fprintf(stderr, "%s: %s\n", mc_schema_name((mc_schema_id)i), err);
            continue;
        }
        CHECK(mc_schema_fingerprint((mc_schema_id)i) == mc_crc64_avro(pcf, strlen(pcf)));
        free(pcf);
        for (int j = 0; j < i; j++)
            CHECK(mc_schema_fingerprint((mc_schema_id)i) != mc_schema_fingerprint((mc_schema_id)j));
    }
    CHECK(mc_schema_json(MC_SCHEMA_COUNT) == NULL);
    CHECK(mc_schema_fingerprint(MC_SCHEMA_COUNT) == 0);
}

/* ---- avro-c interop --------------------------------------------------------------- */

/* Reads the body of a single-object record with avro-c's generic reader, so
 * a bug shared by our encoder and decoder cannot hide. Returns a value the
 * caller releases with avro_value_decref, or fails the test. */
/* Reads b's body with avro-c and version `version` of schema id (0: the
 * current one). */
static bool avro_c_read_version(mc_schema_id id, int version, const mc_buf *b, avro_value_t *out,
                                avro_schema_t *sch, avro_value_iface_t **iface)
{
    const char *json = version ? mc_schema_version_json(id, version) : mc_schema_json(id);
    if (!json || avro_schema_from_json_length(json, strlen(json), sch) != 0) {
        fprintf(stderr, "avro-c rejects %s: %s\n", mc_schema_name(id), avro_strerror());
        check_failures++;
        return false;
    }
    *iface = avro_generic_class_from_schema(*sch);
    avro_generic_value_new(*iface, out);
    avro_reader_t r = avro_reader_memory((const char *)b->data + 10, (int64_t)(b->len - 10));
    int rc = avro_value_read(r, out);
    bool ok = rc == 0;
    if (!ok) {
        fprintf(stderr, "avro-c cannot read our %s: %s\n", mc_schema_name(id), avro_strerror());
        check_failures++;
    } else {
        /* Everything consumed: reading one more byte must fail. */
        int8_t extra;
        ok = avro_read(r, &extra, 1) != 0;
        if (!ok) {
            fprintf(stderr, "avro-c left bytes after our %s\n", mc_schema_name(id));
            check_failures++;
        }
    }
    avro_reader_free(r);
    if (!ok) {
        avro_value_decref(out);
        avro_value_iface_decref(*iface);
        avro_schema_decref(*sch);
    }
    return ok;
}

static bool avro_c_read(mc_schema_id id, const mc_buf *b, avro_value_t *out, avro_schema_t *sch,
                        avro_value_iface_t **iface)
{
    return avro_c_read_version(id, 0, b, out, sch, iface);
}

static void avro_c_release(avro_value_t *v, avro_value_iface_t *iface, avro_schema_t sch)
{
    avro_value_decref(v);
    avro_value_iface_decref(iface);
    avro_schema_decref(sch);
}

static const char *avro_str(avro_value_t *rec, const char *path)
{
    /* path is "a.b.c": walk records by field name, entering union branches. */
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    avro_value_t cur = *rec, next;
    for (char *tok = strtok(buf, "."); tok; tok = strtok(NULL, ".")) {
        if (avro_value_get_type(&cur) == AVRO_UNION)
            avro_value_get_current_branch(&cur, &cur);
        if (avro_value_get_by_name(&cur, tok, &next, NULL) != 0)
            return NULL;
        cur = next;
    }
    const char *s = NULL;
    size_t n;
    if (avro_value_get_string(&cur, &s, &n) != 0)
        return NULL;
    return s;
}

static void test_avro_c_interop(void)
{
    mc_buf b = {0};
    avro_value_t v;
    avro_schema_t sch;
    avro_value_iface_t *iface;

    mc_command c = {.kind = MC_CMD_SUBMIT, .submit = typical_task()};
    CHECK(mc_encode_command(&c, &b) == 0);
    if (avro_c_read(MC_SCHEMA_COMMAND, &b, &v, &sch, &iface)) {
        const char *url = avro_str(&v, "payload.task.callback.url");
        CHECK(url && strcmp(url, c.submit.callback.url) == 0);
        avro_value_t payload, task, retry, field;
        avro_value_get_by_name(&v, "payload", &payload, NULL);
        avro_value_get_current_branch(&payload, &payload);
        avro_value_get_by_name(&payload, "task", &task, NULL);
        avro_value_get_by_name(&task, "retry", &retry, NULL);
        int branch = -1;
        avro_value_get_discriminant(&retry, &branch);
        CHECK(branch == 1);
        avro_value_get_current_branch(&retry, &retry);
        double mult = 0;
        avro_value_get_by_name(&retry, "multiplier", &field, NULL);
        avro_value_get_double(&field, &mult);
        CHECK(mult == 2.0);
        avro_value_get_by_name(&task, "metadata", &field, NULL);
        size_t n = 0;
        avro_value_get_size(&field, &n);
        CHECK(n == 1);
        avro_c_release(&v, iface, sch);
    }

    mc_buf_reset(&b);
    mc_wheel_entry w = {.version = 77,
                        .command = {.kind = MC_CMD_CANCEL, .cancel = {"app", "tid", 5}}};
    CHECK(mc_encode_wheel_entry(&w, &b) == 0);
    if (avro_c_read(MC_SCHEMA_WHEEL_ENTRY, &b, &v, &sch, &iface)) {
        const char *tid = avro_str(&v, "payload.task_id");
        CHECK(tid && strcmp(tid, "tid") == 0);
        avro_c_release(&v, iface, sch);
    }

    mc_buf_reset(&b);
    mc_stored_task st = {.version = 1, .task = bare_task()};
    CHECK(mc_encode_stored_task(&st, &b) == 0);
    if (avro_c_read(MC_SCHEMA_STORED_TASK, &b, &v, &sch, &iface))
        avro_c_release(&v, iface, sch);

    mc_buf_reset(&b);
    mc_attempt at = {.task = typical_task(),
                     .http_status = 503,
                     .error = "unavailable",
                     .response_snippet = (const uint8_t *)"oops",
                     .response_snippet_len = 4,
                     .retry_after_ms = -1,
                     .permanent = true};
    CHECK(mc_encode_attempt(&at, &b) == 0);
    if (avro_c_read(MC_SCHEMA_ATTEMPT, &b, &v, &sch, &iface)) {
        avro_value_t f;
        int perm = 0;
        avro_value_get_by_name(&v, "permanent", &f, NULL);
        avro_value_get_boolean(&f, &perm);
        CHECK(perm == 1);
        avro_c_release(&v, iface, sch);
    }

    mc_buf_reset(&b);
    mc_result r = {.app_id = "a",
                   .task_id = "t",
                   .attempt = 3,
                   .http_status = 200,
                   .outcome = MC_OUTCOME_EXHAUSTED,
                   .error = ""};
    CHECK(mc_encode_result(&r, &b) == 0);
    if (avro_c_read(MC_SCHEMA_RESULT, &b, &v, &sch, &iface)) {
        avro_value_t f;
        int sym = -1;
        avro_value_get_by_name(&v, "outcome", &f, NULL);
        avro_value_get_enum(&f, &sym);
        CHECK(sym == MC_OUTCOME_EXHAUSTED);
        avro_c_release(&v, iface, sch);
    }

    mc_buf_reset(&b);
    mc_dead_letter d = {.reason = "bad",
                        .source_topic = "mooncake.tasks",
                        .source_offset = 9,
                        .has_raw = true,
                        .raw = (const uint8_t *)"\xc3\x01",
                        .raw_len = 2,
                        .has_task = true,
                        .task = typical_task()};
    CHECK(mc_encode_dead_letter(&d, &b) == 0);
    if (avro_c_read(MC_SCHEMA_DEAD_LETTER, &b, &v, &sch, &iface)) {
        const char *app = avro_str(&v, "task.app_id");
        CHECK(app && strcmp(app, "shop") == 0);
        avro_c_release(&v, iface, sch);
    }
    mc_buf_free(&b);
}

/* ---- round trips ------------------------------------------------------------------ */

/* Encodes, decodes, compares, and checks that re-encoding gives the same bytes. */
static void roundtrip_command(const mc_command *c, mc_arena *arena)
{
    mc_buf b = {0}, b2 = {0};
    mc_command got;
    char detail[256];
    CHECK(mc_encode_command(c, &b) == 0);
    CHECK_ERR(mc_decode_command(NULL, b.data, b.len, arena, &got, detail, sizeof detail),
              MC_CODEC_OK);
    CHECK(command_eq(c, &got));
    CHECK(mc_encode_command(&got, &b2) == 0);
    CHECK(b.len == b2.len && memcmp(b.data, b2.data, b.len) == 0);
    /* The same record as a wheel entry. */
    mc_wheel_entry w = {.version = INT64_MAX, .command = *c}, wgot;
    mc_buf_reset(&b);
    CHECK(mc_encode_wheel_entry(&w, &b) == 0);
    CHECK_ERR(mc_decode_wheel_entry(b.data, b.len, arena, &wgot, detail, sizeof detail),
              MC_CODEC_OK);
    CHECK(wgot.version == INT64_MAX && command_eq(c, &wgot.command));
    mc_buf_free(&b);
    mc_buf_free(&b2);
    mc_arena_reset(arena);
}

static void roundtrip_task(const mc_task *t, mc_arena *arena)
{
    mc_command c = {.kind = MC_CMD_SUBMIT, .submit = *t};
    roundtrip_command(&c, arena);

    mc_buf b = {0};
    char detail[256];
    mc_stored_task st = {.version = -3, .task = *t}, stgot;
    CHECK(mc_encode_stored_task(&st, &b) == 0);
    CHECK_ERR(mc_decode_stored_task(b.data, b.len, arena, &stgot, detail, sizeof detail),
              MC_CODEC_OK);
    CHECK(stgot.version == -3 && task_eq(t, &stgot.task));

    for (int perm = 0; perm < 2; perm++) {
        mc_attempt a = {.task = *t,
                        .http_status = perm ? 404 : 0,
                        .error = perm ? "not found \xe2\x9c\x97" : "",
                        .response_snippet = perm ? (const uint8_t *)"x\0y" : NULL,
                        .response_snippet_len = perm ? 3 : 0,
                        .retry_after_ms = perm ? 0 : -1,
                        .started_at = 10,
                        .finished_at = 20,
                        .permanent = perm};
        mc_attempt agot;
        mc_buf_reset(&b);
        CHECK(mc_encode_attempt(&a, &b) == 0);
        CHECK_ERR(mc_decode_attempt(b.data, b.len, arena, &agot, detail, sizeof detail),
                  MC_CODEC_OK);
        CHECK(task_eq(t, &agot.task) && agot.http_status == a.http_status &&
              str_eq(agot.error, a.error) && agot.error != NULL &&
              bytes_eq(agot.response_snippet, agot.response_snippet_len, a.response_snippet,
                       a.response_snippet_len) &&
              agot.retry_after_ms == a.retry_after_ms && agot.started_at == 10 &&
              agot.finished_at == 20 && agot.permanent == a.permanent);
    }

    for (int has_raw = 0; has_raw < 2; has_raw++) {
        for (int has_task = 0; has_task < 2; has_task++) {
            for (int raw_len = 0; raw_len < 2; raw_len++) {
                mc_dead_letter d = {.reason = "callback.url: length 900 exceeds the 12 bytes left",
                                    .source_topic = "mooncake.tasks",
                                    .source_partition = 7,
                                    .source_offset = 123456789012,
                                    .has_raw = has_raw,
                                    .raw = raw_len ? (const uint8_t *)"\x00\xff" : NULL,
                                    .raw_len = raw_len ? 2 : 0,
                                    .has_task = has_task,
                                    .task = has_task ? *t : (mc_task){0},
                                    .failed_at = 99};
                mc_dead_letter dgot;
                mc_buf_reset(&b);
                CHECK(mc_encode_dead_letter(&d, &b) == 0);
                CHECK_ERR(mc_decode_dead_letter(b.data, b.len, arena, &dgot, detail, sizeof detail),
                          MC_CODEC_OK);
                CHECK(str_eq(dgot.reason, d.reason) && str_eq(dgot.source_topic, d.source_topic) &&
                      dgot.source_partition == 7 && dgot.source_offset == 123456789012 &&
                      dgot.has_raw == d.has_raw && dgot.has_task == d.has_task &&
                      dgot.failed_at == 99);
                if (has_raw)
                    CHECK(bytes_eq(dgot.raw, dgot.raw_len, d.raw, d.raw_len));
                if (has_task)
                    CHECK(task_eq(&dgot.task, t));
            }
        }
    }
    mc_buf_free(&b);
    mc_arena_reset(arena);
}

static void test_roundtrips(void)
{
    mc_arena *arena = mc_arena_new();
    mc_task t = typical_task();
    roundtrip_task(&t, arena);
    t.has_retry = false;
    roundtrip_task(&t, arena);
    mc_task bare = bare_task();
    roundtrip_task(&bare, arena);

    /* Extremes: a 1 MiB body, many headers, unicode everywhere, limits. */
    size_t big = 1 << 20;
    uint8_t *blob = malloc(big);
    for (size_t i = 0; i < big; i++)
        blob[i] = (uint8_t)(i * 131 + 7);
    enum { NH = 1000 };
    static mc_kv many[NH];
    static char keys[NH][16];
    for (int i = 0; i < NH; i++) {
        snprintf(keys[i], sizeof keys[i], "h%d", i);
        many[i] = (mc_kv){keys[i], i % 2 ? "\xe6\x97\xa5\xe6\x9c\xac" : ""};
    }
    mc_task x = typical_task();
    x.app_id = "\xe5\xba\x97";
    x.task_id = "\xf0\x9f\x8c\x99/\xc3\xa9";
    x.due_at = INT64_MIN;
    x.created_at = INT64_MAX;
    x.callback.body = blob;
    x.callback.body_len = big;
    x.callback.headers = many;
    x.callback.n_headers = NH;
    x.callback.timeout_ms = INT32_MIN;
    x.attempt = INT32_MAX;
    x.retry.multiplier = -0.0;
    x.retry.initial_backoff_ms = -1;
    roundtrip_task(&x, arena);
    free(blob);

    mc_command cancel = {.kind = MC_CMD_CANCEL, .cancel = {"shop", "t\xc3\xa9", 1767225000000}};
    roundtrip_command(&cancel, arena);
    mc_command empty_cancel = {.kind = MC_CMD_CANCEL, .cancel = {"", "", 0}};
    roundtrip_command(&empty_cancel, arena);

    for (int o = MC_OUTCOME_SUCCEEDED; o <= MC_OUTCOME_CANCELLED; o++) {
        mc_result r = {.app_id = "shop",
                       .task_id = "t",
                       .attempt = o + 1,
                       .due_at = 1,
                       .started_at = 2,
                       .finished_at = 3,
                       .http_status = 200 + o,
                       .outcome = (mc_outcome)o,
                       .error = o ? "boom" : ""},
                  got;
        mc_buf b = {0};
        char detail[256];
        CHECK(mc_encode_result(&r, &b) == 0);
        CHECK_ERR(mc_decode_result(b.data, b.len, arena, &got, detail, sizeof detail), MC_CODEC_OK);
        CHECK(str_eq(got.app_id, "shop") && str_eq(got.task_id, "t") && got.attempt == o + 1 &&
              got.due_at == 1 && got.started_at == 2 && got.finished_at == 3 &&
              got.http_status == 200 + o && got.outcome == (mc_outcome)o &&
              str_eq(got.error, r.error));
        mc_buf_free(&b);
    }

    /* Encoders append, and reject what the schema cannot represent. */
    mc_buf b = {0};
    mc_command c = {.kind = MC_CMD_CANCEL, .cancel = {"a", "b", 1}};
    CHECK(mc_encode_command(&c, &b) == 0);
    size_t one = b.len;
    CHECK(mc_encode_command(&c, &b) == 0);
    CHECK(b.len == 2 * one && memcmp(b.data, b.data + one, one) == 0);
    mc_result bad = {.outcome = (mc_outcome)9};
    CHECK(mc_encode_result(&bad, &b) == -1 && b.len == 2 * one);
    mc_command badc = {.kind = (mc_command_kind)5};
    CHECK(mc_encode_command(&badc, &b) == -1 && b.len == 2 * one);
    /* NULL strings encode as "". */
    mc_command nulls = {.kind = MC_CMD_SUBMIT};
    mc_buf_reset(&b);
    CHECK(mc_encode_command(&nulls, &b) == 0);
    mc_command got;
    CHECK_ERR(mc_decode_command(NULL, b.data, b.len, arena, &got, NULL, 0), MC_CODEC_OK);
    CHECK(got.submit.app_id && got.submit.app_id[0] == '\0' && got.submit.callback.body == NULL);
    mc_buf_free(&b);
    mc_arena_free(arena);
}

/* ---- hostile input ---------------------------------------------------------------- */

/* A tiny writer for crafting records by hand. */
static void w_long(mc_buf *b, int64_t v)
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    do {
        uint8_t byte = (uint8_t)(z & 0x7f);
        z >>= 7;
        if (z)
            byte |= 0x80;
        b->data[b->len++] = byte;
    } while (z);
}

static void w_raw(mc_buf *b, const void *p, size_t n)
{
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void w_str(mc_buf *b, const char *s)
{
    w_long(b, (int64_t)strlen(s));
    w_raw(b, s, strlen(s));
}

static void w_header(mc_buf *b, mc_schema_id id)
{
    uint64_t fp = mc_schema_fingerprint(id);
    b->data[b->len++] = 0xc3;
    b->data[b->len++] = 0x01;
    for (int i = 0; i < 8; i++)
        b->data[b->len++] = (uint8_t)(fp >> (8 * i));
}

/* Header, Submit branch, app_id, task_id, due_at, url, method: the caller
 * continues at callback.headers. */
static void w_submit_prefix(mc_buf *b)
{
    w_header(b, MC_SCHEMA_COMMAND);
    w_long(b, 0);
    w_str(b, "app");
    w_str(b, "task");
    w_long(b, 1000);
    w_str(b, "https://x");
    w_str(b, "POST");
}

/* callback.body .. metadata for a task without retry. */
static void w_submit_suffix(mc_buf *b)
{
    w_long(b, 0); /* body */
    w_long(b, 5000);
    w_long(b, 0); /* retry: null */
    w_long(b, 1);
    w_long(b, 2000);
    w_long(b, 0); /* metadata */
    w_long(b, 0); /* kafka_target: null */
    w_long(b, 0); /* late_policy: null */
    w_long(b, 0); /* on_success: [] */
}

static mc_codec_err decode(const mc_buf *b, mc_arena *a, mc_command *c, char *detail)
{
    return mc_decode_command(NULL, b->data, b->len, a, c, detail, 256);
}

static void expect_detail(const char *detail, const char *needle)
{
    if (!strstr(detail, needle)) {
        fprintf(stderr, "detail \"%s\" lacks \"%s\"\n", detail, needle);
        check_failures++;
    }
}

static void test_errors(void)
{
    mc_arena *a = mc_arena_new();
    uint8_t store[4096];
    mc_buf b = {store, 0, sizeof store};
    mc_command c;
    char detail[256];

    /* EMPTY */
    CHECK_ERR(mc_decode_command(NULL, "", 0, a, &c, detail, sizeof detail), MC_CODEC_EMPTY);
    /* BAD_MAGIC */
    CHECK_ERR(mc_decode_command(NULL, "\x42\x01", 2, a, &c, detail, sizeof detail),
              MC_CODEC_BAD_MAGIC);
    CHECK_ERR(mc_decode_command(NULL, "\xc3\x02xxxxxxxxx", 11, a, &c, detail, sizeof detail),
              MC_CODEC_BAD_MAGIC);
    /* Confluent framing is only for Command. */
    mc_stored_task st;
    CHECK_ERR(mc_decode_stored_task("\x00\x00\x00\x00\x07\x00", 6, a, &st, detail, sizeof detail),
              MC_CODEC_BAD_MAGIC);
    /* TRUNCATED header */
    CHECK_ERR(mc_decode_command(NULL, "\xc3", 1, a, &c, detail, sizeof detail), MC_CODEC_TRUNCATED);
    CHECK_ERR(mc_decode_command(NULL, "\xc3\x01\x01\x02", 4, a, &c, detail, sizeof detail),
              MC_CODEC_TRUNCATED);
    CHECK_ERR(mc_decode_command(NULL, "\x00\x00\x00", 3, a, &c, detail, sizeof detail),
              MC_CODEC_TRUNCATED);

    /* Every proper prefix of a valid record fails cleanly, never OK. */
    mc_buf full = {0};
    mc_command sample = {.kind = MC_CMD_SUBMIT, .submit = typical_task()};
    CHECK(mc_encode_command(&sample, &full) == 0);
    for (size_t n = 0; n < full.len; n++) {
        uint8_t *copy = malloc(n ? n : 1);
        memcpy(copy, full.data, n);
        mc_codec_err e = mc_decode_command(NULL, copy, n, a, &c, detail, sizeof detail);
        CHECK(e == (n == 0 ? MC_CODEC_EMPTY : MC_CODEC_TRUNCATED) || e == MC_CODEC_BAD_LENGTH);
        free(copy);
        mc_arena_reset(a);
    }
    /* TRAILING */
    memcpy(store, full.data, full.len);
    store[full.len] = 0;
    CHECK_ERR(mc_decode_command(NULL, store, full.len + 1, a, &c, detail, sizeof detail),
              MC_CODEC_TRAILING);
    expect_detail(detail, "1 byte left after the Command");

    /* UNKNOWN_SCHEMA: a StoredTask given to the Command decoder. */
    mc_buf other = {0};
    mc_stored_task s = {.version = 1, .task = typical_task()};
    CHECK(mc_encode_stored_task(&s, &other) == 0);
    CHECK_ERR(mc_decode_command(NULL, other.data, other.len, a, &c, detail, sizeof detail),
              MC_CODEC_UNKNOWN_SCHEMA);
    expect_detail(detail, "mooncake.Command");
    mc_buf_free(&other);

    /* Confluent framing: only configured ids. */
    b.len = 0;
    w_raw(&b, "\x00\x00\x00\x01\x2c", 5); /* id 300 */
    w_raw(&b, full.data + 10, full.len - 10);
    int32_t ids[] = {12, 300};
    mc_codec_options opts = {.confluent_command_ids = ids, .n_confluent_command_ids = 2},
                     wrong = {.confluent_command_ids = ids, .n_confluent_command_ids = 1};
    CHECK_ERR(mc_decode_command(&opts, b.data, b.len, a, &c, detail, sizeof detail), MC_CODEC_OK);
    CHECK(command_eq(&c, &sample));
    CHECK_ERR(mc_decode_command(&wrong, b.data, b.len, a, &c, detail, sizeof detail),
              MC_CODEC_UNKNOWN_SCHEMA);
    expect_detail(detail, "300");
    CHECK_ERR(mc_decode_command(NULL, b.data, b.len, a, &c, detail, sizeof detail),
              MC_CODEC_UNKNOWN_SCHEMA);
    mc_buf_free(&full);

    /* BAD_LENGTH: a string longer than what is left, with its path. */
    b.len = 0;
    w_header(&b, MC_SCHEMA_COMMAND);
    w_long(&b, 0);
    w_str(&b, "app");
    w_str(&b, "task");
    w_long(&b, 1000);
    w_long(&b, 900);
    w_raw(&b, "https://x.y/", 12);
    CHECK_ERR(decode(&b, a, &c, detail), MC_CODEC_BAD_LENGTH);
    expect_detail(detail, "payload.task.callback.url: length 900 exceeds the 12 bytes left");
    /* Negative length. */
    b.len = 0;
    w_header(&b, MC_SCHEMA_COMMAND);
    w_long(&b, 1);
    w_long(&b, -1);
    CHECK_ERR(decode(&b, a, &c, detail), MC_CODEC_BAD_LENGTH);
    expect_detail(detail, "payload.app_id: negative length -1");

    /* BAD_UNION */
    b.len = 0;
    w_header(&b, MC_SCHEMA_COMMAND);
    w_long(&b, 2);
    CHECK_ERR(decode(&b, a, &c, detail), MC_CODEC_BAD_UNION);
    b.len = 0;
    w_header(&b, MC_SCHEMA_COMMAND);
    w_long(&b, -1);
    CHECK_ERR(decode(&b, a, &c, detail), MC_CODEC_BAD_UNION);
    b.len = 0;
    w_submit_prefix(&b);
    w_long(&b, 0);
    w_long(&b, 0);
    w_long(&b, 5000);
    w_long(&b, 3); /* retry branch 3 */
    CHECK_ERR(decode(&b, a, &c, detail), MC_CODEC_BAD_UNION);
    expect_detail(detail, "payload.task.retry: union branch 3");

    /* BAD_ENUM: outcome 6, boolean 2. */
    b.len = 0;
    w_header(&b, MC_SCHEMA_RESULT);
    w_str(&b, "a");
    w_str(&b, "t");
    for (int i = 0; i < 5; i++)
        w_long(&b, 1);
    w_long(&b, 6);
    w_str(&b, "");
    mc_result r;
    CHECK_ERR(mc_decode_result(b.data, b.len, a, &r, detail, sizeof detail), MC_CODEC_BAD_ENUM);
    expect_detail(detail, "outcome: symbol 6");
    mc_attempt at = {.task = bare_task(), .error = ""};
    mc_buf ab = {0};
    CHECK(mc_encode_attempt(&at, &ab) == 0);
    ab.data[ab.len - 4] = 2; /* permanent; then no headers (0), response_size 0 (0), member
                              * null (0) */
    mc_attempt atgot;
    CHECK_ERR(mc_decode_attempt(ab.data, ab.len, a, &atgot, detail, sizeof detail),
              MC_CODEC_BAD_ENUM);
    expect_detail(detail, "permanent");
    mc_buf_free(&ab);

    /* BAD_VARINT: too long, overflowing, and an int out of range. */
    b.len = 0;
    w_header(&b, MC_SCHEMA_WHEEL_ENTRY);
    w_raw(&b, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);
    mc_wheel_entry we;
    CHECK_ERR(mc_decode_wheel_entry(b.data, b.len, a, &we, detail, sizeof detail),
              MC_CODEC_BAD_VARINT);
    expect_detail(detail, "version: varint longer than 10 bytes");
    b.len = 0;
    w_header(&b, MC_SCHEMA_WHEEL_ENTRY);
    w_raw(&b, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 10);
    CHECK_ERR(mc_decode_wheel_entry(b.data, b.len, a, &we, detail, sizeof detail),
              MC_CODEC_BAD_VARINT);
    expect_detail(detail, "overflows");
    b.len = 0;
    w_header(&b, MC_SCHEMA_WHEEL_ENTRY);
    w_raw(&b, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10); /* INT64_MIN */
    w_long(&b, 1);
    w_str(&b, "a");
    w_str(&b, "t");
    w_long(&b, 0);
    CHECK_ERR(mc_decode_wheel_entry(b.data, b.len, a, &we, detail, sizeof detail), MC_CODEC_OK);
    CHECK(we.version == INT64_MIN && we.command.kind == MC_CMD_CANCEL);
    b.len = 0;
    w_submit_prefix(&b);
    w_long(&b, 0);
    w_long(&b, 0);
    w_long(&b, (int64_t)INT32_MAX + 1); /* timeout_ms */
    CHECK_ERR(decode(&b, a, &c, detail), MC_CODEC_BAD_VARINT);
    expect_detail(detail, "payload.task.callback.timeout_ms: value 2147483648 does not fit");

    /* BAD_UTF8: invalid sequences, NUL, overlong, surrogate, above U+10FFFF. */
    const char *bad_utf8[] = {
        "\xff",     "a\x00b",       "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80",
        "\xe2\x82", "abcdefgh\x80", "\xc3"};
    const size_t bad_len[] = {1, 3, 2, 3, 4, 2, 9, 1};
    for (size_t i = 0; i < sizeof bad_len / sizeof bad_len[0]; i++) {
        b.len = 0;
        w_header(&b, MC_SCHEMA_COMMAND);
        w_long(&b, 1);
        w_long(&b, (int64_t)bad_len[i]);
        w_raw(&b, bad_utf8[i], bad_len[i]);
        w_str(&b, "t");
        w_long(&b, 0);
        CHECK_ERR(decode(&b, a, &c, detail), MC_CODEC_BAD_UTF8);
        expect_detail(detail, "payload.app_id:");
    }
    /* Valid edge cases: U+10FFFF, U+FFFF, U+0080, long ASCII. */
    b.len = 0;
    w_header(&b, MC_SCHEMA_COMMAND);
    w_long(&b, 1);
    w_str(&b, "\xf4\x8f\xbf\xbf\xef\xbf\xbf\xc2\x80");
    w_str(&b, "abcdefghijklmnopqrstuvwxyz0123456789");
    w_long(&b, 0);
    CHECK_ERR(decode(&b, a, &c, detail), MC_CODEC_OK);

    /* Maps in several blocks, including negative counts with byte sizes. */
    b.len = 0;
    w_submit_prefix(&b);
    w_long(&b, 1);
    w_str(&b, "k1");
    w_str(&b, "v1");
    w_long(&b, -2);
    size_t size_at = b.len;
    w_long(&b, 10); /* 2 entries of 5 bytes: len+2 chars, len+1 char */
    w_str(&b, "k2");
    w_str(&b, "v");
    w_str(&b, "k3");
    w_str(&b, "w");
    w_long(&b, 0);
    w_submit_suffix(&b);
    CHECK_ERR(decode(&b, a, &c, detail), MC_CODEC_OK);
    CHECK(c.submit.callback.n_headers == 3 && str_eq(c.submit.callback.headers[2].key, "k3") &&
          str_eq(c.submit.callback.headers[1].value, "v"));
    /* A byte size that disagrees with the entries. */
    b.data[size_at] = 12; /* the zigzag of 10 is 20; 12 means 6 */
    CHECK_ERR(decode(&b, a, &c, detail), MC_CODEC_BAD_LENGTH);
    expect_detail(detail, "payload.task.callback.headers: block byte size");
    /* A count the remaining bytes cannot hold: refused before allocating. */
    b.len = 0;
    w_submit_prefix(&b);
    w_long(&b, (int64_t)1 << 40);
    w_str(&b, "k");
    CHECK_ERR(decode(&b, a, &c, detail), MC_CODEC_BAD_LENGTH);
    expect_detail(detail, "entries cannot fit");
    b.len = 0;
    w_submit_prefix(&b);
    w_raw(&b, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10); /* count INT64_MIN */
    CHECK_ERR(decode(&b, a, &c, detail), MC_CODEC_BAD_LENGTH);
    /* An error inside an entry names it. */
    b.len = 0;
    w_submit_prefix(&b);
    w_long(&b, 2);
    w_str(&b, "k1");
    w_str(&b, "v1");
    w_str(&b, "k2");
    w_long(&b, 1);
    w_raw(&b, "\xfe", 1);
    w_long(&b, 0);
    w_submit_suffix(&b);
    CHECK_ERR(decode(&b, a, &c, detail), MC_CODEC_BAD_UTF8);
    expect_detail(detail, "payload.task.callback.headers[1].value: invalid UTF-8 at byte 0");

    /* Truncated double inside the retry policy. */
    b.len = 0;
    w_submit_prefix(&b);
    w_long(&b, 0);
    w_long(&b, 0);
    w_long(&b, 5000);
    w_long(&b, 1);
    w_long(&b, 3);
    w_long(&b, 100);
    w_raw(&b, "\x00\x00", 2);
    CHECK_ERR(decode(&b, a, &c, detail), MC_CODEC_TRUNCATED);
    expect_detail(detail, "payload.task.retry.multiplier: double needs 8 bytes, 2 left");

    /* A NULL detail buffer is fine. */
    CHECK_ERR(mc_decode_command(NULL, "\x01", 1, a, &c, NULL, 0), MC_CODEC_BAD_MAGIC);
    /* A tiny detail buffer is truncated, not overrun. */
    char tiny[8];
    CHECK_ERR(mc_decode_command(NULL, "\x01", 1, a, &c, tiny, sizeof tiny), MC_CODEC_BAD_MAGIC);
    CHECK(strlen(tiny) == 7);

    /* MC_CODEC_NOMEM needs a failing malloc and is not crafted here. */
    for (int e = MC_CODEC_OK; e <= MC_CODEC_NOMEM; e++)
        CHECK(strlen(mc_codec_strerror((mc_codec_err)e)) > 0);
    mc_arena_free(a);
}

/* ---- recurring jobs ------------------------------------------------------------- */

static bool retry_eq(bool ha, const mc_retry_policy *a, bool hb, const mc_retry_policy *b)
{
    return ha == hb &&
           (!ha ||
            (a->max_attempts == b->max_attempts && a->initial_backoff_ms == b->initial_backoff_ms &&
             a->multiplier == b->multiplier && a->max_backoff_ms == b->max_backoff_ms));
}

static bool job_eq(const mc_job *a, const mc_job *b)
{
    const mc_callback *x = &a->callback, *y = &b->callback;
    return str_eq(a->app_id, b->app_id) && str_eq(a->job_id, b->job_id) && a->kind == b->kind &&
           str_eq(a->cron, b->cron) && str_eq(a->time_zone, b->time_zone) &&
           a->interval_ms == b->interval_ms && a->start_at == b->start_at &&
           a->end_at == b->end_at && a->max_runs == b->max_runs && a->misfire == b->misfire &&
           a->catch_up_limit == b->catch_up_limit &&
           a->misfire_threshold_ms == b->misfire_threshold_ms && a->overlap == b->overlap &&
           a->paused == b->paused && str_eq(x->url, y->url) && str_eq(x->method, y->method) &&
           kv_eq(x->headers, x->n_headers, y->headers, y->n_headers) &&
           bytes_eq(x->body, x->body_len, y->body, y->body_len) && x->timeout_ms == y->timeout_ms &&
           retry_eq(a->has_retry, &a->retry, b->has_retry, &b->retry) &&
           kv_eq(a->metadata, a->n_metadata, b->metadata, b->n_metadata) &&
           a->created_at == b->created_at;
}

static bool job_command_eq(const mc_job_command *a, const mc_job_command *b)
{
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case MC_JOBCMD_PUT:
        return job_eq(&a->put, &b->put);
    case MC_JOBCMD_ACTION:
        return str_eq(a->action.app_id, b->action.app_id) &&
               str_eq(a->action.job_id, b->action.job_id) && a->action.action == b->action.action &&
               a->action.requested_at == b->action.requested_at;
    case MC_JOBCMD_DONE:
        return str_eq(a->done.app_id, b->done.app_id) && str_eq(a->done.job_id, b->done.job_id) &&
               a->done.scheduled_at == b->done.scheduled_at && a->done.outcome == b->done.outcome &&
               a->done.finished_at == b->done.finished_at;
    case MC_JOBCMD_ADD_LINK:
        return str_eq(a->add_link.ordering_key, b->add_link.ordering_key) &&
               task_eq(&a->add_link.task, &b->add_link.task);
    case MC_JOBCMD_CANCEL_LINK:
        return str_eq(a->cancel_link.app_id, b->cancel_link.app_id) &&
               str_eq(a->cancel_link.ordering_key, b->cancel_link.ordering_key) &&
               str_eq(a->cancel_link.task_id, b->cancel_link.task_id) &&
               a->cancel_link.requested_at == b->cancel_link.requested_at;
    case MC_JOBCMD_LINK_DONE:
        return str_eq(a->link_done.app_id, b->link_done.app_id) &&
               str_eq(a->link_done.ordering_key, b->link_done.ordering_key) &&
               str_eq(a->link_done.task_id, b->link_done.task_id) &&
               a->link_done.link == b->link_done.link &&
               a->link_done.outcome == b->link_done.outcome &&
               a->link_done.finished_at == b->link_done.finished_at;
    case MC_JOBCMD_START_BROADCAST: {
        const mc_start_broadcast *x = &a->start_broadcast, *y = &b->start_broadcast;
        if (!task_eq(&x->task, &y->task) || x->version != y->version ||
            x->n_members != y->n_members || x->fired_at != y->fired_at || x->n_ended != y->n_ended)
            return false;
        for (size_t i = 0; i < x->n_members; i++)
            if (!str_eq(x->members[i], y->members[i]))
                return false;
        for (size_t i = 0; i < x->n_ended; i++)
            if (memcmp(&x->ended[i], &y->ended[i], sizeof x->ended[i]) != 0)
                return false;
        return true;
    }
    case MC_JOBCMD_SHARD_DONE:
        return str_eq(a->shard_done.app_id, b->shard_done.app_id) &&
               str_eq(a->shard_done.task_id, b->shard_done.task_id) &&
               a->shard_done.version == b->shard_done.version &&
               memcmp(&a->shard_done.end, &b->shard_done.end, sizeof a->shard_done.end) == 0;
    }
    return false;
}

static bool job_state_eq(const mc_job_state *a, const mc_job_state *b)
{
    if (a->n_running != b->n_running)
        return false;
    for (size_t i = 0; i < a->n_running; i++)
        if (a->running[i].scheduled_at != b->running[i].scheduled_at ||
            a->running[i].due_at != b->running[i].due_at)
            return false;
    return a->version == b->version && a->status == b->status && a->next_at == b->next_at &&
           a->runs == b->runs && a->last_scheduled_at == b->last_scheduled_at &&
           a->queued_at == b->queued_at && a->skipped == b->skipped &&
           a->updated_at == b->updated_at && job_eq(&a->job, &b->job);
}

/* The fixtures below are the JOB, JOB_MINIMAL and JOB_UNICODE of
 * tests/fuzz/make_corpus.py, whose fastavro encodings are in the corpus. */
static const mc_kv job_headers[] = {{"Content-Type", "application/json"},
                                    {"X-Trace", "caf\xc3\xa9"}};
static const mc_kv job_meta[] = {{"team", "finance"}};
static const mc_kv job_meta_unicode[] = {{"\xf0\x9f\x9a\x80", ""},
                                         {"k", "\xe6\x97\xa5\xe6\x9c\xac"}};
static const char job_body[] = "{\"report\":\"daily\"}";

/* A job with every field away from its default. */
static mc_job typical_job(void)
{
    return (mc_job){
        .app_id = "shop",
        .job_id = "nightly-report",
        .kind = MC_SCHEDULE_CRON,
        .cron = "0 30 2 * * MON-FRI",
        .time_zone = "Asia/Shanghai",
        .interval_ms = 0,
        .start_at = 1767225600000,
        .end_at = 1798761600000,
        .max_runs = 1000,
        .misfire = MC_MISFIRE_CATCH_UP,
        .catch_up_limit = 3,
        .misfire_threshold_ms = 60000,
        .overlap = MC_OVERLAP_SERIAL,
        .paused = true,
        .callback = {.url = "https://reports.example.com/run",
                     .method = "POST",
                     .headers = job_headers,
                     .n_headers = 2,
                     .body = (const uint8_t *)job_body,
                     .body_len = sizeof job_body - 1,
                     .timeout_ms = 120000},
        .has_retry = true,
        .retry = {3, 500, 1.5, 60000},
        .metadata = job_meta,
        .n_metadata = 1,
        .created_at = 1767223800000,
    };
}

/* Every field that has a default at it. */
static mc_job minimal_job(void)
{
    return (mc_job){.app_id = "a",
                    .job_id = "j",
                    .kind = MC_SCHEDULE_FIXED_RATE,
                    .cron = "",
                    .time_zone = "UTC",
                    .interval_ms = 1000,
                    .misfire = MC_MISFIRE_FIRE_ONCE_NOW,
                    .catch_up_limit = 10,
                    .misfire_threshold_ms = 5000,
                    .overlap = MC_OVERLAP_PARALLEL,
                    .callback = {.url = "", .method = ""}};
}

static mc_job unicode_job(void)
{
    mc_job j = typical_job();
    j.app_id = "\xe5\xba\x97";
    j.job_id = "\xf0\x9f\x8c\x99/\xc3\xa9";
    j.kind = MC_SCHEDULE_FIXED_DELAY;
    j.cron = "";
    j.time_zone = "Europe/Z\xc3\xbcrich";
    j.interval_ms = 86400000;
    j.misfire = MC_MISFIRE_DO_NOTHING;
    j.overlap = MC_OVERLAP_COVER_EARLY;
    j.paused = false;
    j.metadata = job_meta_unicode;
    j.n_metadata = 2;
    return j;
}

/* On time, misfired by a minute, and odd values a decoder must keep. */
static const mc_running_occurrence running3[] = {
    {1767139200000, 1767139200000}, {1767225600000, 1767225660000}, {-1, 0}};

/* make_corpus.py's STATE. */
static mc_job_state typical_state(void)
{
    return (mc_job_state){.version = 4242,
                          .status = MC_JOB_PAUSED,
                          .next_at = 1767312000000,
                          .runs = 17,
                          .last_scheduled_at = 1767225600000,
                          .running = running3,
                          .n_running = 3,
                          .queued_at = 1767312000000,
                          .skipped = 2,
                          .updated_at = 1767225601000,
                          .job = typical_job()};
}

/* Encodes, decodes, compares; re-encoding gives the same bytes; a PUT's
 * put_raw points into the input at exactly what mc_encode_job writes, and
 * decodes alone to the same job; and the job spliced into a JobState gives
 * the bytes of a full encode. */
static void roundtrip_job_command(const mc_job_command *c, mc_arena *arena)
{
    mc_buf b = {0}, b2 = {0};
    mc_job_command got;
    char detail[256];
    CHECK(mc_encode_job_command(c, &b) == 0);
    CHECK_ERR(mc_decode_job_command(NULL, b.data, b.len, arena, &got, detail, sizeof detail),
              MC_CODEC_OK);
    CHECK(job_command_eq(c, &got));
    CHECK(mc_encode_job_command(&got, &b2) == 0);
    CHECK(b.len == b2.len && memcmp(b.data, b2.data, b.len) == 0);
    if (c->kind != MC_JOBCMD_PUT) {
        CHECK(got.put_raw == NULL && got.put_raw_len == 0);
    } else {
        mc_buf job = {0};
        CHECK(mc_encode_job(&c->put, &job) == 0);
        /* Header, union branch 0, then the job up to the end. */
        CHECK(got.put_raw == b.data + 11 && got.put_raw_len == b.len - 11);
        CHECK(bytes_eq(got.put_raw, got.put_raw_len, job.data, job.len));
        mc_job alone;
        CHECK_ERR(mc_decode_job(got.put_raw, got.put_raw_len, arena, &alone, detail, sizeof detail),
                  MC_CODEC_OK);
        CHECK(job_eq(&alone, &c->put));
        /* The splice equals a full encode, and decodes back. */
        mc_job_state full = typical_state(), spliced, sgot;
        full.job = c->put;
        spliced = full;
        spliced.job = (mc_job){.kind = (mc_schedule_kind)99}; /* not looked at */
        spliced.job_raw = got.put_raw;
        spliced.job_raw_len = got.put_raw_len;
        mc_buf fb = {0}, sb = {0};
        CHECK(mc_encode_job_state(&full, &fb) == 0);
        CHECK(mc_encode_job_state(&spliced, &sb) == 0);
        CHECK(fb.len == sb.len && memcmp(fb.data, sb.data, fb.len) == 0);
        CHECK_ERR(mc_decode_job_state(sb.data, sb.len, arena, &sgot, detail, sizeof detail),
                  MC_CODEC_OK);
        CHECK(job_state_eq(&sgot, &full));
        mc_buf_free(&fb);
        mc_buf_free(&sb);
        mc_buf_free(&job);
    }
    mc_buf_free(&b);
    mc_buf_free(&b2);
    mc_arena_reset(arena);
}

static void roundtrip_job_state(const mc_job_state *s, mc_arena *arena)
{
    mc_buf b = {0}, b2 = {0}, job = {0};
    mc_job_state got;
    char detail[256];
    CHECK(mc_encode_job_state(s, &b) == 0);
    CHECK_ERR(mc_decode_job_state(b.data, b.len, arena, &got, detail, sizeof detail), MC_CODEC_OK);
    CHECK(job_state_eq(s, &got));
    /* job_raw is the tail of the input, exactly what mc_encode_job writes. */
    CHECK(mc_encode_job(&s->job, &job) == 0);
    CHECK(got.job_raw >= b.data && got.job_raw + got.job_raw_len == b.data + b.len);
    CHECK(bytes_eq(got.job_raw, got.job_raw_len, job.data, job.len));
    /* The head alone (a restore's fast path) reads the same state and points
     * at the same job bytes without decoding them. */
    mc_job_state head;
    CHECK_ERR(mc_decode_job_state_head(b.data, b.len, arena, &head, detail, sizeof detail),
              MC_CODEC_OK);
    CHECK(head.job_raw == got.job_raw && head.job_raw_len == got.job_raw_len);
    head.job = got.job;
    CHECK(job_state_eq(&got, &head));
    /* Re-encoding, spliced (job_raw set, as decoded) or not, gives the same bytes. */
    CHECK(mc_encode_job_state(&got, &b2) == 0);
    CHECK(b.len == b2.len && memcmp(b.data, b2.data, b.len) == 0);
    got.job_raw = NULL;
    mc_buf_reset(&b2);
    CHECK(mc_encode_job_state(&got, &b2) == 0);
    CHECK(b.len == b2.len && memcmp(b.data, b2.data, b.len) == 0);
    mc_buf_free(&b);
    mc_buf_free(&b2);
    mc_buf_free(&job);
    mc_arena_reset(arena);
}

static void test_job_roundtrips(void)
{
    mc_arena *arena = mc_arena_new();
    /* Every schedule kind x misfire policy x overlap policy x paused, with
     * and without a retry policy. */
    for (int k = MC_SCHEDULE_CRON; k <= MC_SCHEDULE_FIXED_DELAY; k++)
        for (int m = MC_MISFIRE_FIRE_ONCE_NOW; m <= MC_MISFIRE_CATCH_UP; m++)
            for (int o = MC_OVERLAP_PARALLEL; o <= MC_OVERLAP_SERIAL; o++)
                for (int p = 0; p < 4; p++) {
                    mc_job_command c = {.kind = MC_JOBCMD_PUT, .put = typical_job()};
                    c.put.kind = (mc_schedule_kind)k;
                    c.put.misfire = (mc_misfire_policy)m;
                    c.put.overlap = (mc_overlap_policy)o;
                    c.put.paused = p & 1;
                    c.put.has_retry = p & 2;
                    roundtrip_job_command(&c, arena);
                }
    mc_job_command c = {.kind = MC_JOBCMD_PUT, .put = minimal_job()};
    roundtrip_job_command(&c, arena);
    c.put = unicode_job();
    roundtrip_job_command(&c, arena);

    /* Extremes: limits everywhere, a 256 KiB body, many metadata entries. */
    size_t big = 256 << 10;
    uint8_t *blob = malloc(big);
    for (size_t i = 0; i < big; i++)
        blob[i] = (uint8_t)(i * 131 + 7);
    enum { NM = 500 };
    static mc_kv many[NM];
    static char keys[NM][16];
    for (int i = 0; i < NM; i++) {
        snprintf(keys[i], sizeof keys[i], "m%d", i);
        many[i] = (mc_kv){keys[i], i % 2 ? "\xe6\x97\xa5" : ""};
    }
    mc_job x = typical_job();
    x.interval_ms = INT64_MAX;
    x.start_at = INT64_MIN;
    x.end_at = -1;
    x.max_runs = INT64_MAX;
    x.catch_up_limit = INT32_MIN;
    x.misfire_threshold_ms = INT64_MIN;
    x.created_at = INT64_MAX;
    x.callback.body = blob;
    x.callback.body_len = big;
    x.callback.timeout_ms = INT32_MAX;
    x.retry = (mc_retry_policy){INT32_MAX, INT64_MIN, -0.0, INT64_MAX};
    x.metadata = many;
    x.n_metadata = NM;
    c.put = x;
    roundtrip_job_command(&c, arena);

    for (int a = MC_JOB_PAUSE; a <= MC_JOB_TRIGGER; a++) {
        mc_job_command ac = {.kind = MC_JOBCMD_ACTION,
                             .action = {"shop", "nightly-\xc3\xa9", (mc_job_action_kind)a,
                                        a == MC_JOB_TRIGGER ? INT64_MIN : 1767225000000 + a}};
        roundtrip_job_command(&ac, arena);
    }
    for (int o = MC_OUTCOME_SUCCEEDED; o <= MC_OUTCOME_CANCELLED; o++) {
        mc_job_command dc = {
            .kind = MC_JOBCMD_DONE,
            .done = {"shop", "j", 1767225600000 + o, (mc_outcome)o, o ? INT64_MAX : -1}};
        roundtrip_job_command(&dc, arena);
    }
    mc_job_command empty_action = {.kind = MC_JOBCMD_ACTION, .action = {"", "", MC_JOB_PAUSE, 0}};
    roundtrip_job_command(&empty_action, arena);

    /* Broadcasts: none, one and many members and shards ended; every outcome. */
    static const char *const members[3] = {"http://a:8080", "http://b.svc:80 (10.0.0.7)", ""};
    static mc_shard_end ended[64];
    for (int i = 0; i < 64; i++)
        ended[i] = (mc_shard_end){i, (mc_outcome)(i % (MC_OUTCOME_CANCELLED + 1)),
                                  i ? 1767225600000 + i : INT64_MIN};
    for (size_t n = 0; n <= 3; n++) {
        mc_job_command bc = {.kind = MC_JOBCMD_START_BROADCAST};
        bc.start_broadcast = (mc_start_broadcast){.task = typical_task(),
                                                  .version = n ? (int64_t)n * 1000 : INT64_MAX,
                                                  .members = n ? members : NULL,
                                                  .n_members = n,
                                                  .fired_at = 1767225600000,
                                                  .ended = n ? ended + n : NULL,
                                                  .n_ended = n == 3 ? 61 : n};
        roundtrip_job_command(&bc, arena);
    }
    for (int o = MC_OUTCOME_SUCCEEDED; o <= MC_OUTCOME_CANCELLED; o++) {
        mc_job_command sc = {
            .kind = MC_JOBCMD_SHARD_DONE,
            .shard_done = {
                "shop", "t#1", o ? o : INT64_MIN, {o ? o : INT32_MAX, (mc_outcome)o, -o}}};
        roundtrip_job_command(&sc, arena);
    }

    /* States: every status; no, one, many running occurrences; the jobs above. */
    static mc_running_occurrence many_running[2000];
    for (int i = 0; i < 2000; i++)
        many_running[i] = (mc_running_occurrence){i % 3 ? (int64_t)i * 1000 : -(int64_t)i,
                                                  i % 5 ? (int64_t)i * 1000 + i : INT64_MIN + i};
    many_running[7] = (mc_running_occurrence){INT64_MIN, INT64_MAX};
    many_running[8] = (mc_running_occurrence){INT64_MAX, INT64_MIN};
    for (int st = MC_JOB_ACTIVE; st <= MC_JOB_ENDED; st++) {
        mc_job_state s = typical_state();
        s.status = (mc_job_status)st;
        roundtrip_job_state(&s, arena);
        s.n_running = 0;
        s.running = NULL;
        s.next_at = s.last_scheduled_at = s.queued_at = -1;
        s.job = minimal_job();
        roundtrip_job_state(&s, arena);
        s.running = many_running + 8;
        s.n_running = 1;
        s.job = unicode_job();
        roundtrip_job_state(&s, arena);
        s.running = many_running;
        s.n_running = 2000;
        s.version = INT64_MIN;
        s.updated_at = INT64_MAX;
        s.job = x;
        roundtrip_job_state(&s, arena);
    }
    free(blob);

    /* Encoders append, and reject every enum value the schema cannot hold,
     * leaving the buffer as it was. */
    mc_buf b = {0};
    CHECK(mc_encode_job_command(&empty_action, &b) == 0);
    size_t one = b.len;
    mc_job_command bad = {.kind = MC_JOBCMD_PUT, .put = typical_job()};
    bad.put.kind = (mc_schedule_kind)3;
    CHECK(mc_encode_job_command(&bad, &b) == -1 && b.len == one);
    CHECK(mc_encode_job(&bad.put, &b) == -1 && b.len == one);
    bad.put.kind = (mc_schedule_kind)-1;
    CHECK(mc_encode_job_command(&bad, &b) == -1 && b.len == one);
    bad.put = typical_job();
    bad.put.misfire = (mc_misfire_policy)3;
    CHECK(mc_encode_job_command(&bad, &b) == -1 && b.len == one);
    bad.put = typical_job();
    bad.put.overlap = (mc_overlap_policy)4;
    CHECK(mc_encode_job_command(&bad, &b) == -1 && b.len == one);
    mc_job_state bs = typical_state();
    bs.job = bad.put;
    CHECK(mc_encode_job_state(&bs, &b) == -1 && b.len == one);
    bs = typical_state();
    bs.status = (mc_job_status)3;
    CHECK(mc_encode_job_state(&bs, &b) == -1 && b.len == one);
    bad =
        (mc_job_command){.kind = MC_JOBCMD_ACTION, .action = {"a", "j", (mc_job_action_kind)4, 0}};
    CHECK(mc_encode_job_command(&bad, &b) == -1 && b.len == one);
    bad = (mc_job_command){.kind = MC_JOBCMD_DONE, .done = {"a", "j", 0, (mc_outcome)5, 0}};
    CHECK(mc_encode_job_command(&bad, &b) == -1 && b.len == one);
    bad = (mc_job_command){.kind = (mc_job_command_kind)8};
    CHECK(mc_encode_job_command(&bad, &b) == -1 && b.len == one);
    CHECK(mc_encode_job_command(&empty_action, &b) == 0);
    CHECK(b.len == 2 * one && memcmp(b.data, b.data + one, one) == 0);
    /* mc_encode_job appends the bare job, no header. */
    mc_job tj = typical_job();
    CHECK(mc_encode_job(&tj, &b) == 0 && b.data[2 * one] == 8); /* "shop": length 4 */
    /* NULL strings encode as "" (the schema defaults are the caller's to set). */
    mc_job_command nulls = {.kind = MC_JOBCMD_PUT};
    mc_buf_reset(&b);
    CHECK(mc_encode_job_command(&nulls, &b) == 0);
    mc_job_command got;
    CHECK_ERR(mc_decode_job_command(NULL, b.data, b.len, arena, &got, NULL, 0), MC_CODEC_OK);
    CHECK(got.put.app_id && got.put.app_id[0] == '\0' && got.put.time_zone &&
          got.put.time_zone[0] == '\0' && got.put.callback.body == NULL &&
          got.put.metadata == NULL);
    mc_buf_free(&b);
    mc_arena_free(arena);
}

/* Reads a fixture file of the fuzz corpus (written by fastavro, see
 * tests/fuzz/make_corpus.py) into a malloc'd buffer; NULL if missing. */
static uint8_t *read_corpus(const char *dir, const char *name, size_t *len)
{
    const char *src = getenv("MOONCAKE_SOURCE_DIR");
    char path[4096];
    if (src)
        snprintf(path, sizeof path, "%s/tests/fuzz/corpus/%s/%s", src, dir, name);
    else /* __FILE__ is .../tests/unit/test_codec.c */
        snprintf(path, sizeof path, "%.*s/../fuzz/corpus/%s/%s",
                 (int)(strrchr(__FILE__, '/') - __FILE__), __FILE__, dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        check_failures++;
        return NULL;
    }
    uint8_t *buf = malloc(1 << 20);
    *len = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

/* fastavro's encoding of a JobCommand decodes to the values written in C,
 * and ours of those values is the same bytes (so fastavro reads ours). */
static void check_fastavro_job_command(const char *name, const mc_job_command *want,
                                       mc_arena *arena)
{
    size_t len = 0;
    uint8_t *data = read_corpus("job_command_decode", name, &len);
    if (!data)
        return;
    mc_job_command got;
    char detail[256];
    mc_buf b = {0};
    CHECK_ERR(mc_decode_job_command(NULL, data, len, arena, &got, detail, sizeof detail),
              MC_CODEC_OK);
    CHECK(job_command_eq(&got, want), "%s", name);
    CHECK(mc_encode_job_command(want, &b) == 0);
    CHECK(bytes_eq(b.data, b.len, data, len), "%s: our encoding differs from fastavro's", name);
    mc_buf_free(&b);
    free(data);
    mc_arena_reset(arena);
}

static void check_fastavro_job_state(const char *name, const mc_job_state *want, mc_arena *arena)
{
    size_t len = 0;
    uint8_t *data = read_corpus("job_state_decode", name, &len);
    if (!data)
        return;
    mc_job_state got;
    char detail[256];
    mc_buf b = {0};
    CHECK_ERR(mc_decode_job_state(data, len, arena, &got, detail, sizeof detail), MC_CODEC_OK);
    CHECK(job_state_eq(&got, want), "%s", name);
    CHECK(mc_encode_job_state(want, &b) == 0);
    CHECK(bytes_eq(b.data, b.len, data, len), "%s: our encoding differs from fastavro's", name);
    mc_buf_free(&b);
    free(data);
    mc_arena_reset(arena);
}

static void test_job_fastavro_interop(void)
{
    mc_arena *arena = mc_arena_new();
    mc_job_command c = {.kind = MC_JOBCMD_PUT, .put = typical_job()};
    check_fastavro_job_command("valid-put", &c, arena);
    c.put = minimal_job();
    check_fastavro_job_command("valid-put-minimal", &c, arena);
    c.put = unicode_job();
    check_fastavro_job_command("valid-put-unicode", &c, arena);
    static const char *actions[] = {"valid-action-pause", "valid-action-resume",
                                    "valid-action-delete", "valid-action-trigger"};
    for (int a = MC_JOB_PAUSE; a <= MC_JOB_TRIGGER; a++) {
        c = (mc_job_command){
            .kind = MC_JOBCMD_ACTION,
            .action = {"shop", "nightly-report", (mc_job_action_kind)a, 1767225000000}};
        check_fastavro_job_command(actions[a], &c, arena);
    }
    static const char *outcomes[] = {"valid-done-succeeded", "valid-done-failed_will_retry",
                                     "valid-done-failed_permanently", "valid-done-exhausted",
                                     "valid-done-cancelled"};
    for (int o = MC_OUTCOME_SUCCEEDED; o <= MC_OUTCOME_CANCELLED; o++) {
        c = (mc_job_command){
            .kind = MC_JOBCMD_DONE,
            .done = {"shop", "nightly-report", 1767225600000, (mc_outcome)o, 1767225601234}};
        check_fastavro_job_command(outcomes[o], &c, arena);
    }

    mc_job_state s = typical_state();
    check_fastavro_job_state("valid-paused", &s, arena);
    s.status = MC_JOB_ENDED;
    s.job = unicode_job();
    check_fastavro_job_state("valid-ended-unicode", &s, arena);
    s = (mc_job_state){.status = MC_JOB_ACTIVE,
                       .next_at = -1,
                       .last_scheduled_at = -1,
                       .queued_at = -1,
                       .job = minimal_job()};
    check_fastavro_job_state("valid-active-minimal", &s, arena);
    mc_arena_free(arena);
}

static void test_job_avro_c_interop(void)
{
    mc_buf b = {0};
    avro_value_t v, f, g;
    avro_schema_t sch;
    avro_value_iface_t *iface;
    int sym = -1, flag = -1, branch = -1;

    mc_job_command c = {.kind = MC_JOBCMD_PUT, .put = typical_job()};
    CHECK(mc_encode_job_command(&c, &b) == 0);
    if (avro_c_read(MC_SCHEMA_JOB_COMMAND, &b, &v, &sch, &iface)) {
        const char *cron = avro_str(&v, "payload.job.schedule.cron");
        CHECK(cron && strcmp(cron, "0 30 2 * * MON-FRI") == 0);
        const char *tz = avro_str(&v, "payload.job.schedule.time_zone");
        CHECK(tz && strcmp(tz, "Asia/Shanghai") == 0);
        avro_value_get_by_name(&v, "payload", &f, NULL);
        avro_value_get_current_branch(&f, &f);
        avro_value_get_by_name(&f, "job", &f, NULL);
        avro_value_get_by_name(&f, "misfire", &g, NULL);
        avro_value_get_enum(&g, &sym);
        CHECK(sym == MC_MISFIRE_CATCH_UP);
        avro_value_get_by_name(&f, "overlap", &g, NULL);
        avro_value_get_enum(&g, &sym);
        CHECK(sym == MC_OVERLAP_SERIAL);
        avro_value_get_by_name(&f, "paused", &g, NULL);
        avro_value_get_boolean(&g, &flag);
        CHECK(flag == 1);
        avro_value_get_by_name(&f, "retry", &g, NULL);
        avro_value_get_discriminant(&g, &branch);
        CHECK(branch == 1);
        int64_t created = 0;
        avro_value_get_by_name(&f, "created_at", &g, NULL);
        avro_value_get_long(&g, &created);
        CHECK(created == 1767223800000);
        avro_c_release(&v, iface, sch);
    }
    mc_buf_reset(&b);
    c = (mc_job_command){.kind = MC_JOBCMD_ACTION,
                         .action = {"shop", "nightly", MC_JOB_TRIGGER, 5}};
    CHECK(mc_encode_job_command(&c, &b) == 0);
    if (avro_c_read(MC_SCHEMA_JOB_COMMAND, &b, &v, &sch, &iface)) {
        avro_value_get_by_name(&v, "payload", &f, NULL);
        avro_value_get_discriminant(&f, &branch);
        CHECK(branch == 1);
        avro_value_get_current_branch(&f, &f);
        avro_value_get_by_name(&f, "action", &g, NULL);
        avro_value_get_enum(&g, &sym);
        CHECK(sym == MC_JOB_TRIGGER);
        avro_c_release(&v, iface, sch);
    }
    mc_buf_reset(&b);
    c = (mc_job_command){.kind = MC_JOBCMD_DONE,
                         .done = {"shop", "nightly", 1, MC_OUTCOME_FAILED_PERMANENTLY, 2}};
    CHECK(mc_encode_job_command(&c, &b) == 0);
    if (avro_c_read(MC_SCHEMA_JOB_COMMAND, &b, &v, &sch, &iface)) {
        const char *jid = avro_str(&v, "payload.job_id");
        CHECK(jid && strcmp(jid, "nightly") == 0);
        avro_value_get_by_name(&v, "payload", &f, NULL);
        avro_value_get_discriminant(&f, &branch);
        CHECK(branch == 2);
        avro_value_get_current_branch(&f, &f);
        avro_value_get_by_name(&f, "outcome", &g, NULL);
        avro_value_get_enum(&g, &sym);
        CHECK(sym == MC_OUTCOME_FAILED_PERMANENTLY);
        avro_c_release(&v, iface, sch);
    }
    mc_buf_reset(&b);
    mc_job_state s = typical_state();
    s.job = unicode_job();
    CHECK(mc_encode_job_state(&s, &b) == 0);
    if (avro_c_read(MC_SCHEMA_JOB_STATE, &b, &v, &sch, &iface)) {
        avro_value_get_by_name(&v, "status", &f, NULL);
        avro_value_get_enum(&f, &sym);
        CHECK(sym == MC_JOB_PAUSED);
        avro_value_get_by_name(&v, "running", &f, NULL);
        size_t n = 0;
        avro_value_get_size(&f, &n);
        CHECK(n == 3);
        /* Each item is a record: both fields, in order, for every item. */
        for (size_t i = 0; i < n && i < 3; i++) {
            avro_value_t item;
            int64_t sched = 0, due = 0;
            avro_value_get_by_index(&f, i, &item, NULL);
            avro_value_get_by_name(&item, "scheduled_at", &g, NULL);
            avro_value_get_long(&g, &sched);
            avro_value_get_by_name(&item, "due_at", &g, NULL);
            avro_value_get_long(&g, &due);
            CHECK(sched == running3[i].scheduled_at && due == running3[i].due_at, "running[%zu]",
                  i);
        }
        const char *tz = avro_str(&v, "job.schedule.time_zone");
        CHECK(tz && strcmp(tz, "Europe/Z\xc3\xbcrich") == 0);
        avro_value_get_by_name(&v, "job", &f, NULL);
        avro_value_get_by_name(&f, "metadata", &g, NULL);
        avro_value_get_size(&g, &n);
        CHECK(n == 2);
        avro_c_release(&v, iface, sch);
    }
    mc_buf_free(&b);
}

/* A Job up to (not including) misfire, crafted by hand. */
static void w_job_head(mc_buf *b, int64_t kind)
{
    w_str(b, "app");
    w_str(b, "job");
    w_long(b, kind);
    w_str(b, "* * * * *");
    w_str(b, "UTC");
    for (int i = 0; i < 4; i++)
        w_long(b, 0); /* interval_ms, start_at, end_at, max_runs */
}

/* A Job from misfire to its end: no headers, no body, no metadata. */
static void w_job_tail(mc_buf *b, int64_t misfire, int64_t overlap, uint8_t paused,
                       int64_t retry_branch)
{
    w_long(b, misfire);
    w_long(b, 10);
    w_long(b, 5000);
    w_long(b, overlap);
    w_raw(b, &paused, 1);
    w_str(b, "https://x");
    w_str(b, "GET");
    w_long(b, 0); /* headers */
    w_long(b, 0); /* body */
    w_long(b, 1000);
    w_long(b, retry_branch);
    if (retry_branch == 1) {
        w_long(b, 3);
        w_long(b, 100);
        w_raw(b, "\x00\x00\x00\x00\x00\x00\xf8\x3f", 8); /* 1.5 */
        w_long(b, 1000);
    }
    w_long(b, 0); /* metadata */
    w_long(b, 7); /* created_at */
    w_long(b, 0); /* kafka_target: null */
    w_long(b, 0); /* late_policy: null */
    w_long(b, 0); /* on_success: [] */
}

/* A JobState up to its job, with `running` written by the caller's bytes. */
static void w_state_head(mc_buf *b, int64_t status, const void *running, size_t running_len)
{
    w_header(b, MC_SCHEMA_JOB_STATE);
    w_long(b, 1);
    w_long(b, status);
    w_long(b, -1);
    w_long(b, 0);
    w_long(b, -1);
    w_raw(b, running, running_len);
    w_long(b, -1);
    w_long(b, 0);
    w_long(b, 5);
}

static mc_codec_err decode_jc(const mc_buf *b, mc_arena *a, mc_job_command *c, char *detail)
{
    return mc_decode_job_command(NULL, b->data, b->len, a, c, detail, 256);
}

static mc_codec_err decode_js(const mc_buf *b, mc_arena *a, mc_job_state *s, char *detail)
{
    return mc_decode_job_state(b->data, b->len, a, s, detail, 256);
}

/* Every proper prefix of rec fails cleanly (exactly sized copies, so ASan
 * sees any read past the end; the arena is reset after each, so nothing
 * leaks), and rec plus one byte is TRAILING. which: 0 JobCommand, 1
 * JobState, 2 bare Job. */
static void check_job_prefixes(int which, const mc_buf *rec, mc_arena *a)
{
    static const char *names[] = {"JobCommand", "JobState", "Job"};
    char detail[256];
    mc_job_command c;
    mc_job_state s;
    mc_job j;
    for (size_t n = 0; n <= rec->len + 1; n++) {
        uint8_t *copy = malloc(n ? n : 1);
        memcpy(copy, rec->data, n <= rec->len ? n : rec->len);
        if (n > rec->len)
            copy[rec->len] = 0;
        mc_codec_err e = which == 0
                             ? mc_decode_job_command(NULL, copy, n, a, &c, detail, sizeof detail)
                         : which == 1 ? mc_decode_job_state(copy, n, a, &s, detail, sizeof detail)
                                      : mc_decode_job(copy, n, a, &j, detail, sizeof detail);
        if (n == rec->len) {
            CHECK(e == MC_CODEC_OK, "%s: %s", names[which], detail);
        } else if (n > rec->len) {
            CHECK(e == MC_CODEC_TRAILING);
            char want[64];
            snprintf(want, sizeof want, "1 byte left after the %s", names[which]);
            expect_detail(detail, want);
        } else {
            CHECK(e == (n == 0 ? MC_CODEC_EMPTY : MC_CODEC_TRUNCATED) || e == MC_CODEC_BAD_LENGTH,
                  "%s cut at %zu: %s", names[which], n, mc_codec_strerror(e));
            CHECK(detail[0] != '\0');
        }
        free(copy);
        mc_arena_reset(a);
    }
}

static void test_job_errors(void)
{
    mc_arena *a = mc_arena_new();
    uint8_t store[4096];
    mc_buf b = {store, 0, sizeof store};
    mc_job_command c;
    mc_job_state s;
    mc_job j;
    char detail[256];

    /* Truncation at every offset, and one byte too many, for every branch. */
    mc_buf rec = {0};
    mc_job_command samples[] = {
        {.kind = MC_JOBCMD_PUT, .put = typical_job()},
        {.kind = MC_JOBCMD_PUT, .put = minimal_job()},
        {.kind = MC_JOBCMD_ACTION, .action = {"shop", "j", MC_JOB_DELETE, 1767225000000}},
        {.kind = MC_JOBCMD_DONE, .done = {"shop", "j", 1, MC_OUTCOME_CANCELLED, 2}},
    };
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
        mc_buf_reset(&rec);
        CHECK(mc_encode_job_command(&samples[i], &rec) == 0);
        check_job_prefixes(0, &rec, a);
    }
    mc_job_state st = typical_state();
    mc_buf_reset(&rec);
    CHECK(mc_encode_job_state(&st, &rec) == 0);
    check_job_prefixes(1, &rec, a);
    mc_job tj = typical_job();
    mc_buf_reset(&rec);
    CHECK(mc_encode_job(&tj, &rec) == 0);
    check_job_prefixes(2, &rec, a);
    CHECK_ERR(mc_decode_job(NULL, 0, a, &j, detail, sizeof detail), MC_CODEC_EMPTY);

    /* Framing: single-object only, and the right fingerprint. */
    mc_buf_reset(&rec);
    CHECK(mc_encode_job_command(&samples[2], &rec) == 0);
    b.len = 0;
    w_raw(&b, "\x00\x00\x00\x00\x01", 5);
    w_raw(&b, rec.data + 10, rec.len - 10);
    CHECK_ERR(decode_jc(&b, a, &c, detail), MC_CODEC_BAD_MAGIC);
    expect_detail(detail, "not an Avro single-object marker");
    CHECK_ERR(decode_js(&b, a, &s, detail), MC_CODEC_BAD_MAGIC);
    CHECK_ERR(mc_decode_job_state(rec.data, rec.len, a, &s, detail, sizeof detail),
              MC_CODEC_UNKNOWN_SCHEMA);
    expect_detail(detail, "mooncake.JobState");
    b.len = 0;
    w_header(&b, MC_SCHEMA_COMMAND);
    w_raw(&b, rec.data + 10, rec.len - 10);
    CHECK_ERR(decode_jc(&b, a, &c, detail), MC_CODEC_UNKNOWN_SCHEMA);
    expect_detail(detail, "mooncake.JobCommand");
    /* A JobCommand is not a Command either. */
    mc_command cmd;
    CHECK_ERR(mc_decode_command(NULL, rec.data, rec.len, a, &cmd, detail, sizeof detail),
              MC_CODEC_UNKNOWN_SCHEMA);
    mc_buf_free(&rec);

    /* The crafted record is valid as it is; then one thing broken at a time. */
    b.len = 0;
    w_header(&b, MC_SCHEMA_JOB_COMMAND);
    w_long(&b, 0);
    w_job_head(&b, MC_SCHEDULE_CRON);
    w_job_tail(&b, MC_MISFIRE_CATCH_UP, MC_OVERLAP_SERIAL, 1, 1);
    CHECK_ERR(decode_jc(&b, a, &c, detail), MC_CODEC_OK);
    CHECK(c.put.paused && c.put.overlap == MC_OVERLAP_SERIAL && c.put.retry.multiplier == 1.5 &&
          c.put.created_at == 7 && str_eq(c.put.cron, "* * * * *"));

    /* BAD_UNION: payload 8 and -1, retry 2. */
    b.len = 0;
    w_header(&b, MC_SCHEMA_JOB_COMMAND);
    w_long(&b, 8);
    CHECK_ERR(decode_jc(&b, a, &c, detail), MC_CODEC_BAD_UNION);
    expect_detail(detail, "payload: union branch 8 out of range (0..7)");
    b.len = 0;
    w_header(&b, MC_SCHEMA_JOB_COMMAND);
    w_long(&b, -1);
    CHECK_ERR(decode_jc(&b, a, &c, detail), MC_CODEC_BAD_UNION);
    b.len = 0;
    w_header(&b, MC_SCHEMA_JOB_COMMAND);
    w_long(&b, 0);
    w_job_head(&b, 0);
    w_job_tail(&b, 0, 0, 0, 2);
    CHECK_ERR(decode_jc(&b, a, &c, detail), MC_CODEC_BAD_UNION);
    expect_detail(detail, "payload.job.retry: union branch 2 out of range (0..1)");

    /* BAD_ENUM: each enum one past its last symbol, and negative. */
    b.len = 0;
    w_header(&b, MC_SCHEMA_JOB_COMMAND);
    w_long(&b, 0);
    w_job_head(&b, 3);
    CHECK_ERR(decode_jc(&b, a, &c, detail), MC_CODEC_BAD_ENUM);
    expect_detail(detail, "payload.job.schedule.kind: symbol 3 out of range (0..2)");
    b.len = 0;
    w_header(&b, MC_SCHEMA_JOB_COMMAND);
    w_long(&b, 0);
    w_job_head(&b, -1);
    CHECK_ERR(decode_jc(&b, a, &c, detail), MC_CODEC_BAD_ENUM);
    expect_detail(detail, "payload.job.schedule.kind: symbol -1");
    b.len = 0;
    w_header(&b, MC_SCHEMA_JOB_COMMAND);
    w_long(&b, 0);
    w_job_head(&b, 0);
    w_job_tail(&b, 3, 0, 0, 0);
    CHECK_ERR(decode_jc(&b, a, &c, detail), MC_CODEC_BAD_ENUM);
    expect_detail(detail, "payload.job.misfire: symbol 3 out of range (0..2)");
    b.len = 0;
    w_header(&b, MC_SCHEMA_JOB_COMMAND);
    w_long(&b, 0);
    w_job_head(&b, 0);
    w_job_tail(&b, 0, 4, 0, 0);
    CHECK_ERR(decode_jc(&b, a, &c, detail), MC_CODEC_BAD_ENUM);
    expect_detail(detail, "payload.job.overlap: symbol 4 out of range (0..3)");
    b.len = 0;
    w_header(&b, MC_SCHEMA_JOB_COMMAND);
    w_long(&b, 0);
    w_job_head(&b, 0);
    w_job_tail(&b, 0, 0, 2, 0);
    CHECK_ERR(decode_jc(&b, a, &c, detail), MC_CODEC_BAD_ENUM);
    expect_detail(detail, "payload.job.paused: boolean byte 2");
    b.len = 0;
    w_header(&b, MC_SCHEMA_JOB_COMMAND);
    w_long(&b, 1);
    w_str(&b, "a");
    w_str(&b, "j");
    w_long(&b, 4);
    w_long(&b, 0);
    CHECK_ERR(decode_jc(&b, a, &c, detail), MC_CODEC_BAD_ENUM);
    expect_detail(detail, "payload.action: symbol 4 out of range (0..3)");
    b.len = 0;
    w_header(&b, MC_SCHEMA_JOB_COMMAND);
    w_long(&b, 2);
    w_str(&b, "a");
    w_str(&b, "j");
    w_long(&b, 0);
    w_long(&b, 5);
    w_long(&b, 0);
    CHECK_ERR(decode_jc(&b, a, &c, detail), MC_CODEC_BAD_ENUM);
    expect_detail(detail, "payload.outcome: symbol 5 out of range (0..4)");
    b.len = 0;
    w_state_head(&b, 3, "\x00", 1);
    w_job_head(&b, 0);
    w_job_tail(&b, 0, 0, 0, 0);
    CHECK_ERR(decode_js(&b, a, &s, detail), MC_CODEC_BAD_ENUM);
    expect_detail(detail, "status: symbol 3 out of range (0..2)");
    /* Inside a JobState, and a bare job, the path starts at "job". */
    b.len = 0;
    w_state_head(&b, 0, "\x00", 1);
    w_job_head(&b, 0);
    w_job_tail(&b, 0, 9, 0, 0);
    CHECK_ERR(decode_js(&b, a, &s, detail), MC_CODEC_BAD_ENUM);
    expect_detail(detail, "job.overlap: symbol 9");
    b.len = 0;
    w_job_head(&b, 5);
    CHECK_ERR(mc_decode_job(b.data, b.len, a, &j, detail, sizeof detail), MC_CODEC_BAD_ENUM);
    expect_detail(detail, "job.schedule.kind: symbol 5");

    /* BAD_UTF8 and BAD_VARINT name their field. */
    b.len = 0;
    w_state_head(&b, 0, "\x00", 1);
    w_str(&b, "a");
    w_str(&b, "j");
    w_long(&b, 0);
    w_str(&b, "\xc0\x80");
    CHECK_ERR(decode_js(&b, a, &s, detail), MC_CODEC_BAD_UTF8);
    expect_detail(detail, "job.schedule.cron: invalid UTF-8 at byte 0 of 2");
    b.len = 0;
    w_header(&b, MC_SCHEMA_JOB_COMMAND);
    w_long(&b, 0);
    w_job_head(&b, 0);
    w_long(&b, 0);
    w_long(&b, (int64_t)INT32_MAX + 1);
    CHECK_ERR(decode_jc(&b, a, &c, detail), MC_CODEC_BAD_VARINT);
    expect_detail(detail, "payload.job.catch_up_limit: value 2147483648 does not fit in an int");

    /* running: several blocks, with byte sizes, decode into one array. */
    uint8_t blocks[32];
    mc_buf rb = {blocks, 0, sizeof blocks};
    w_long(&rb, 1);
    w_long(&rb, 5);
    w_long(&rb, 8);
    w_long(&rb, -2);
    w_long(&rb, 4); /* two items of two one-byte longs */
    w_long(&rb, 6);
    w_long(&rb, 9);
    w_long(&rb, -7);
    w_long(&rb, -1);
    w_long(&rb, 0);
    b.len = 0;
    w_state_head(&b, 0, rb.data, rb.len);
    w_job_head(&b, 0);
    w_job_tail(&b, 0, 0, 0, 0);
    CHECK_ERR(decode_js(&b, a, &s, detail), MC_CODEC_OK);
    CHECK(s.n_running == 3 && s.running[0].scheduled_at == 5 && s.running[0].due_at == 8 &&
          s.running[1].scheduled_at == 6 && s.running[1].due_at == 9 &&
          s.running[2].scheduled_at == -7 && s.running[2].due_at == -1);
    /* Re-encoded canonically: one block of three. */
    mc_buf canon = {0};
    CHECK(mc_encode_job_state(&s, &canon) == 0);
    rb.len = 0;
    w_long(&rb, 3);
    w_long(&rb, 5);
    w_long(&rb, 8);
    w_long(&rb, 6);
    w_long(&rb, 9);
    w_long(&rb, -7);
    w_long(&rb, -1);
    w_long(&rb, 0);
    b.len = 0;
    w_state_head(&b, 0, rb.data, rb.len);
    w_job_head(&b, 0);
    w_job_tail(&b, 0, 0, 0, 0);
    CHECK(bytes_eq(canon.data, canon.len, b.data, b.len));
    mc_buf_free(&canon);
    /* A byte size that disagrees with the items. */
    rb.len = 0;
    w_long(&rb, -1);
    w_long(&rb, 3); /* the item takes 2 bytes */
    w_long(&rb, 5);
    w_long(&rb, 8);
    w_long(&rb, 0);
    b.len = 0;
    w_state_head(&b, 0, rb.data, rb.len);
    w_job_head(&b, 0);
    w_job_tail(&b, 0, 0, 0, 0);
    CHECK_ERR(decode_js(&b, a, &s, detail), MC_CODEC_BAD_LENGTH);
    expect_detail(detail, "running: block byte size disagrees with its items by -1 bytes");
    /* A count the remaining bytes cannot hold; INT64_MIN; a bad item. */
    rb.len = 0;
    w_long(&rb, (int64_t)1 << 40);
    w_long(&rb, 1);
    b.len = 0;
    w_state_head(&b, 0, rb.data, rb.len);
    CHECK_ERR(decode_js(&b, a, &s, detail), MC_CODEC_BAD_LENGTH);
    expect_detail(detail, "running: block of 1099511627776 entries cannot fit");
    /* Each item takes two bytes: after a count of 3 come 1 + 3 bytes (the
     * item's first byte, queued_at, skipped, updated_at), room for 2. */
    b.len = 0;
    w_state_head(&b, 0, "\x06\x02", 2);
    CHECK_ERR(decode_js(&b, a, &s, detail), MC_CODEC_BAD_LENGTH);
    expect_detail(detail, "running: block of 3 entries cannot fit in the 4 bytes left");
    b.len = 0;
    /* 2 items fit in 3 + 3 bytes; item 0's scheduled_at takes 4 of them. */
    w_state_head(&b, 0, "\x04\x80\x80\x80", 4);
    CHECK_ERR(decode_js(&b, a, &s, detail), MC_CODEC_TRUNCATED);
    expect_detail(detail, "running[1].due_at: varint runs past the end of the record");
    b.len = 0;
    w_state_head(&b, 0, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10);
    CHECK_ERR(decode_js(&b, a, &s, detail), MC_CODEC_BAD_LENGTH);
    expect_detail(detail, "running: block count -9223372036854775808 cannot be negated");
    /* The varint of item 3's due_at, after two blocks. */
    rb.len = 0;
    w_long(&rb, 2);
    for (int i = 0; i < 4; i++)
        w_long(&rb, i);
    w_long(&rb, 2);
    for (int i = 0; i < 3; i++)
        w_long(&rb, i);
    w_raw(&rb, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 10);
    b.len = 0;
    w_state_head(&b, 0, rb.data, rb.len);
    CHECK_ERR(decode_js(&b, a, &s, detail), MC_CODEC_BAD_VARINT);
    expect_detail(detail, "running[3].due_at: varint overflows 64 bits");
    b.len = 0;
    w_state_head(&b, 0, "\x02\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12);
    CHECK_ERR(decode_js(&b, a, &s, detail), MC_CODEC_BAD_VARINT);
    expect_detail(detail, "running[0].scheduled_at: varint longer than 10 bytes");
    mc_arena_free(a);
}

/* ---- helpers -------------------------------------------------------------------- */

static void test_misc(void)
{
    char buf[16];
    CHECK(mc_task_key("shop", "t1", buf, sizeof buf) == 7 && strcmp(buf, "shop/t1") == 0);
    CHECK(mc_task_key("shop", "0123456789abcdef", buf, sizeof buf) == 21);
    CHECK(strcmp(buf, "shop/0123456789") == 0);
    CHECK(mc_task_key("0123456789abcdefXYZ", "t", buf, 4) == 21 && strcmp(buf, "012") == 0);
    CHECK(mc_task_key("a", "b", NULL, 0) == 3);

    mc_arena *a = mc_arena_new();
    for (int round = 0; round < 3; round++) {
        for (int i = 1; i < 2000; i += 37) {
            char *p = mc_arena_alloc(a, (size_t)i);
            CHECK(p && ((uintptr_t)p & 7) == 0);
            memset(p, 0xab, (size_t)i);
        }
        char *big = mc_arena_alloc(a, 5 << 20);
        CHECK(big != NULL);
        memset(big, 1, 5 << 20);
        CHECK(strcmp(mc_arena_strdup(a, "hello"), "hello") == 0);
        mc_arena_reset(a);
    }
    mc_arena_free(a);
    mc_arena_free(NULL);
}

/* ---- timing (informational) ----------------------------------------------------- */

static void timing(void)
{
    mc_command c = {.kind = MC_CMD_SUBMIT, .submit = typical_task()};
    mc_buf b = {0};
    mc_encode_command(&c, &b);
    mc_arena *a = mc_arena_new();
    mc_command got;
    int n = 200000;
    mc_encode_command(&c, &b); /* warm up fingerprints and the buffer */
    double t0 = (double)mc_mono_ns();
    for (int i = 0; i < n; i++) {
        b.len = 0;
        mc_encode_command(&c, &b);
    }
    double t1 = (double)mc_mono_ns();
    unsigned ok = 0;
    for (int i = 0; i < n; i++) {
        ok += mc_decode_command(NULL, b.data, b.len, a, &got, NULL, 0) == MC_CODEC_OK;
        mc_arena_reset(a);
    }
    double t2 = (double)mc_mono_ns();
    CHECK(ok == (unsigned)n);
    printf("timing (informational): %zu-byte Command: encode %.0f ns, decode %.0f ns per record\n",
           b.len, (t1 - t0) / n, (t2 - t1) / n);
    mc_buf_free(&b);
    mc_arena_free(a);
}

/* Runs every test; non-zero exit when any check failed. */
static uint64_t header_fingerprint(const mc_buf *b)
{
    uint64_t fp = 0;
    for (int i = 9; i >= 2; i--)
        fp = (fp << 8) | b->data[i];
    return fp;
}

/* Results and Attempts carry what the endpoint answered since version 2;
 * version 1 records (in a topic, or from an instance not upgraded yet) are
 * still read, and written on request for readers older still. */
static void test_earlier_versions(void)
{
    mc_arena *arena = mc_arena_new();
    char detail[256];
    static const mc_kv hdrs[] = {{"content-type", "application/json"}, {"x-request-id", "r-1"}};
    mc_result r = {.app_id = "shop",
                   .task_id = "t",
                   .attempt = 2,
                   .due_at = 1,
                   .started_at = 2,
                   .finished_at = 3,
                   .http_status = 503,
                   .outcome = MC_OUTCOME_FAILED_WILL_RETRY,
                   .error = "HTTP 503",
                   .version = 42,
                   .response_headers = hdrs,
                   .n_response_headers = 2,
                   .response_body = (const uint8_t *)"{\"busy\":true}",
                   .response_body_len = 13,
                   .response_size = 9000},
              got;
    CHECK(mc_schema_current_version(MC_SCHEMA_RESULT) == 4);
    CHECK(mc_schema_current_version(MC_SCHEMA_COMMAND) == 2);
    CHECK(mc_schema_current_version(MC_SCHEMA_JOB_STATE) == 2);
    CHECK(mc_schema_version_fingerprint(MC_SCHEMA_RESULT, 4) ==
          mc_schema_fingerprint(MC_SCHEMA_RESULT));
    CHECK(mc_schema_version_fingerprint(MC_SCHEMA_RESULT, 3) != 0);
    CHECK(mc_schema_version_fingerprint(MC_SCHEMA_RESULT, 2) != 0);
    CHECK(mc_schema_version_fingerprint(MC_SCHEMA_RESULT, 5) == 0);

    mc_buf cur = {0}, old = {0};
    CHECK(mc_encode_result(&r, &cur) == 0);
    CHECK(header_fingerprint(&cur) == mc_schema_fingerprint(MC_SCHEMA_RESULT));
    CHECK_ERR(mc_decode_result(cur.data, cur.len, arena, &got, detail, sizeof detail), MC_CODEC_OK);
    CHECK(got.version == 42 && got.n_response_headers == 2 &&
          str_eq(got.response_headers[1].key, "x-request-id") &&
          str_eq(got.response_headers[1].value, "r-1") && got.response_body_len == 13 &&
          memcmp(got.response_body, "{\"busy\":true}", 13) == 0 && got.response_size == 9000 &&
          got.http_status == 503 && str_eq(got.error, "HTTP 503"));
    avro_value_t v;
    avro_schema_t sch;
    avro_value_iface_t *iface;
    if (avro_c_read(MC_SCHEMA_RESULT, &cur, &v, &sch, &iface)) {
        avro_value_t f;
        int64_t size = 0;
        avro_value_get_by_name(&v, "response_size", &f, NULL);
        avro_value_get_long(&f, &size);
        CHECK(size == 9000);
        avro_c_release(&v, iface, sch);
    }

    /* Version 1: the same bytes up to the fields added since, under the old
     * fingerprint; avro-c reads it with the old schema; we read the defaults. */
    r.write_version = 1;
    CHECK(mc_encode_result(&r, &old) == 0);
    CHECK(header_fingerprint(&old) == mc_schema_version_fingerprint(MC_SCHEMA_RESULT, 1));
    CHECK(old.len < cur.len && memcmp(old.data + 10, cur.data + 10, old.len - 10) == 0);
    if (avro_c_read_version(MC_SCHEMA_RESULT, 1, &old, &v, &sch, &iface))
        avro_c_release(&v, iface, sch);
    CHECK_ERR(mc_decode_result(old.data, old.len, arena, &got, detail, sizeof detail), MC_CODEC_OK);
    CHECK(got.version == -1 && got.n_response_headers == 0 && got.response_body_len == 0 &&
          got.response_size == -1 && got.attempt == 2 && got.http_status == 503 &&
          got.outcome == MC_OUTCOME_FAILED_WILL_RETRY && str_eq(got.error, "HTTP 503"));
    /* A cut version 1 record is still an error, not a shorter record. */
    CHECK(mc_decode_result(old.data, old.len - 1, arena, &got, detail, sizeof detail) !=
          MC_CODEC_OK);
    /* A version 1 header on version 2 bytes leaves bytes over. */
    memcpy(cur.data + 2, old.data + 2, 8);
    CHECK_ERR(mc_decode_result(cur.data, cur.len, arena, &got, detail, sizeof detail),
              MC_CODEC_TRAILING);
    r.write_version = 5;
    mc_buf_reset(&old);
    CHECK(mc_encode_result(&r, &old) == -1 && old.len == 0);
    /* DROPPED is version 3's: version 2 writes it as the task that did not
     * run, CANCELLED, for readers that know no other. */
    r.outcome = MC_OUTCOME_DROPPED;
    r.write_version = 2;
    mc_buf_reset(&old);
    CHECK(mc_encode_result(&r, &old) == 0);
    CHECK(header_fingerprint(&old) == mc_schema_version_fingerprint(MC_SCHEMA_RESULT, 2));
    CHECK_ERR(mc_decode_result(old.data, old.len, arena, &got, detail, sizeof detail), MC_CODEC_OK);
    CHECK(got.outcome == MC_OUTCOME_CANCELLED && got.version == 42);
    r.write_version = 0;
    mc_buf_reset(&old);
    CHECK(mc_encode_result(&r, &old) == 0);
    CHECK_ERR(mc_decode_result(old.data, old.len, arena, &got, detail, sizeof detail), MC_CODEC_OK);
    CHECK(got.outcome == MC_OUTCOME_DROPPED);
    /* A version 2 record naming outcome 5 is out of its enum. */
    memcpy(old.data + 2, cur.data + 2, 8); /* (same fingerprint: current) */
    {
        mc_buf v2 = {0};
        r.outcome = MC_OUTCOME_CANCELLED;
        r.write_version = 2;
        CHECK(mc_encode_result(&r, &v2) == 0);
        /* outcome sits after app_id, task_id and six numbers: find the byte. */
        for (size_t i = 10; i < v2.len; i++)
            if (v2.data[i] == 8 && i + 1 < v2.len && v2.data[i + 1] == 16 /* "HTTP 503" */) {
                v2.data[i] = 10; /* zig-zag 5 */
                CHECK_ERR(mc_decode_result(v2.data, v2.len, arena, &got, detail, sizeof detail),
                          MC_CODEC_BAD_ENUM);
                break;
            }
        mc_buf_free(&v2);
    }
    r.outcome = MC_OUTCOME_FAILED_WILL_RETRY;
    r.write_version = 0;

    /* Version 4: the group member, null or a string; version 3 is version 4
     * without it and reads it as NULL. */
    CHECK(got.member == NULL);
    r.member = "http://10.0.0.7:8080/api";
    mc_buf_reset(&cur);
    mc_buf_reset(&old);
    CHECK(mc_encode_result(&r, &cur) == 0);
    CHECK_ERR(mc_decode_result(cur.data, cur.len, arena, &got, detail, sizeof detail), MC_CODEC_OK);
    CHECK(str_eq(got.member, "http://10.0.0.7:8080/api") && got.version == 42);
    if (avro_c_read(MC_SCHEMA_RESULT, &cur, &v, &sch, &iface)) {
        avro_value_t f, branch;
        const char *m = NULL;
        size_t mlen = 0;
        avro_value_get_by_name(&v, "member", &f, NULL);
        avro_value_get_current_branch(&f, &branch);
        avro_value_get_string(&branch, &m, &mlen);
        CHECK(m && str_eq(m, "http://10.0.0.7:8080/api"));
        avro_c_release(&v, iface, sch);
    }
    r.write_version = 3;
    CHECK(mc_encode_result(&r, &old) == 0);
    CHECK(header_fingerprint(&old) == mc_schema_version_fingerprint(MC_SCHEMA_RESULT, 3));
    CHECK(old.len + 2 + strlen(r.member) == cur.len &&
          memcmp(old.data + 10, cur.data + 10, old.len - 10) == 0);
    CHECK_ERR(mc_decode_result(old.data, old.len, arena, &got, detail, sizeof detail), MC_CODEC_OK);
    CHECK(got.member == NULL && got.version == 42 && got.response_size == 9000);
    r.member = NULL;
    r.write_version = 0;
    mc_buf_reset(&cur);
    CHECK(mc_encode_result(&r, &cur) == 0);
    CHECK(old.len + 1 == cur.len); /* null is one byte */
    CHECK_ERR(mc_decode_result(cur.data, cur.len, arena, &got, detail, sizeof detail), MC_CODEC_OK);
    CHECK(got.member == NULL);
    cur.data[cur.len - 1] = 4; /* branch 2 of a two-branch union */
    CHECK_ERR(mc_decode_result(cur.data, cur.len, arena, &got, detail, sizeof detail),
              MC_CODEC_BAD_UNION);
    expect_detail(detail, "member");

    mc_attempt a = {.task = typical_task(),
                    .http_status = 429,
                    .error = "HTTP 429",
                    .response_snippet = (const uint8_t *)"slow down",
                    .response_snippet_len = 9,
                    .retry_after_ms = 5000,
                    .response_headers = hdrs,
                    .n_response_headers = 1,
                    .response_size = 9},
               ga;
    mc_buf_reset(&cur);
    mc_buf_reset(&old);
    CHECK(mc_encode_attempt(&a, &cur) == 0);
    CHECK_ERR(mc_decode_attempt(cur.data, cur.len, arena, &ga, detail, sizeof detail), MC_CODEC_OK);
    CHECK(ga.n_response_headers == 1 && str_eq(ga.response_headers[0].value, "application/json") &&
          ga.response_size == 9 && ga.retry_after_ms == 5000 && ga.member == NULL);
    {
        mc_buf m4 = {0}, m3 = {0};
        a.member = "https://billing.example.com";
        CHECK(mc_encode_attempt(&a, &m4) == 0);
        CHECK_ERR(mc_decode_attempt(m4.data, m4.len, arena, &ga, detail, sizeof detail),
                  MC_CODEC_OK);
        CHECK(str_eq(ga.member, "https://billing.example.com") && ga.response_size == 9);
        a.write_version = 3;
        CHECK(mc_encode_attempt(&a, &m3) == 0);
        CHECK(header_fingerprint(&m3) == mc_schema_version_fingerprint(MC_SCHEMA_ATTEMPT, 3));
        CHECK(m3.len + 1 == cur.len);
        CHECK_ERR(mc_decode_attempt(m3.data, m3.len, arena, &ga, detail, sizeof detail),
                  MC_CODEC_OK);
        CHECK(ga.member == NULL && ga.response_size == 9 && ga.task.attempt == a.task.attempt);
        a.member = NULL;
        a.write_version = 0;
        mc_buf_free(&m4);
        mc_buf_free(&m3);
    }
    /* Version 1 is version 2 cut before the answer's fields; both hold the
     * task as it was before Task version 2. */
    mc_buf v2 = {0};
    a.write_version = 2;
    CHECK(mc_encode_attempt(&a, &v2) == 0);
    CHECK(header_fingerprint(&v2) == mc_schema_version_fingerprint(MC_SCHEMA_ATTEMPT, 2));
    CHECK(v2.len + 4 == cur.len); /* kafka_target, late_policy: null; on_success: []; member */
    CHECK_ERR(mc_decode_attempt(v2.data, v2.len, arena, &ga, detail, sizeof detail), MC_CODEC_OK);
    CHECK(ga.n_response_headers == 1 && ga.response_size == 9 && !ga.task.has_kafka_target &&
          !ga.task.has_late_policy && str_eq(ga.task.callback.url, a.task.callback.url));
    a.write_version = 1;
    CHECK(mc_encode_attempt(&a, &old) == 0);
    CHECK(header_fingerprint(&old) == mc_schema_version_fingerprint(MC_SCHEMA_ATTEMPT, 1));
    CHECK(old.len < v2.len && memcmp(old.data + 10, v2.data + 10, old.len - 10) == 0);
    mc_buf_free(&v2);
    if (avro_c_read_version(MC_SCHEMA_ATTEMPT, 1, &old, &v, &sch, &iface))
        avro_c_release(&v, iface, sch);
    CHECK_ERR(mc_decode_attempt(old.data, old.len, arena, &ga, detail, sizeof detail), MC_CODEC_OK);
    CHECK(ga.n_response_headers == 0 && ga.response_size == -1 && ga.response_snippet_len == 9 &&
          ga.retry_after_ms == 5000 && ga.http_status == 429);
    mc_buf_free(&cur);
    mc_buf_free(&old);
    mc_arena_free(arena);
}

/* Job version 2 (JobCommand and JobState v2): what its occurrences carry.
 * A version 1 record still reads, and its job's bytes come out current, so
 * the jobs role can splice them into a JobState of today. */
static void test_job_v2(void)
{
    static const uint8_t value[] = "tick";
    const mc_follow_up next[] = {{.task_id = "",
                                  .delay_ms = 5,
                                  .callback = {.url = "https://x.example/after", .method = "GET"}}};
    mc_job j = {
        .app_id = "shop",
        .job_id = "nightly",
        .kind = MC_SCHEDULE_FIXED_RATE,
        .cron = "",
        .time_zone = "UTC",
        .interval_ms = 60000,
        .callback = {.url = "", .method = ""},
        .has_kafka_target = true,
        .kafka_target = {.topic = "ticks", .value = value, .value_len = 4, .has_value = true},
        .has_late_policy = true,
        .late_policy = {2000, MC_LATE_DEAD},
        .on_success = next,
        .n_on_success = 1};
    mc_arena *a = mc_arena_new();
    char detail[256];
    mc_buf cur = {0};
    mc_job_command c = {.kind = MC_JOBCMD_PUT, .put = j}, got;
    CHECK(mc_encode_job_command(&c, &cur) == 0);
    CHECK_ERR(mc_decode_job_command(NULL, cur.data, cur.len, a, &got, detail, sizeof detail),
              MC_CODEC_OK);
    CHECK(got.put.has_kafka_target && str_eq(got.put.kafka_target.topic, "ticks") &&
          got.put.has_late_policy && got.put.late_policy.action == MC_LATE_DEAD &&
          got.put.n_on_success == 1 && got.put.on_success[0].delay_ms == 5);
    /* Version 1: the same bytes without the three defaults, under its own
     * fingerprint (a job without them). */
    j.has_kafka_target = j.has_late_policy = false;
    j.n_on_success = 0;
    j.callback.url = "https://x.example/tick";
    mc_buf_reset(&cur);
    c.put = j;
    CHECK(mc_encode_job_command(&c, &cur) == 0);
    mc_buf v1 = {0};
    v1.data = malloc(cur.len);
    v1.len = cur.len - 3;
    memcpy(v1.data, cur.data, v1.len);
    uint64_t fp1 = mc_schema_version_fingerprint(MC_SCHEMA_JOB_COMMAND, 1);
    CHECK(fp1 != 0 && fp1 != mc_schema_fingerprint(MC_SCHEMA_JOB_COMMAND));
    for (int i = 0; i < 8; i++)
        v1.data[2 + i] = (uint8_t)(fp1 >> (8 * i));
    CHECK_ERR(mc_decode_job_command(NULL, v1.data, v1.len, a, &got, detail, sizeof detail),
              MC_CODEC_OK);
    CHECK(!got.put.has_kafka_target && str_eq(got.put.callback.url, "https://x.example/tick"));
    /* Its bytes are today's job: they decode bare, and equal the current encoding. */
    mc_job bare;
    CHECK_ERR(mc_decode_job(got.put_raw, got.put_raw_len, a, &bare, detail, sizeof detail),
              MC_CODEC_OK);
    CHECK(got.put_raw_len == cur.len - 11 && memcmp(got.put_raw, cur.data + 11, cur.len - 11) == 0);
    /* A JobState of version 1, read whole and by its head. */
    mc_job_state st = {
        .version = 3, .next_at = -1, .last_scheduled_at = -1, .queued_at = -1, .job = j};
    mc_buf scur = {0};
    CHECK(mc_encode_job_state(&st, &scur) == 0);
    mc_buf sv1 = {0};
    sv1.data = malloc(scur.len);
    sv1.len = scur.len - 3;
    memcpy(sv1.data, scur.data, sv1.len);
    fp1 = mc_schema_version_fingerprint(MC_SCHEMA_JOB_STATE, 1);
    for (int i = 0; i < 8; i++)
        sv1.data[2 + i] = (uint8_t)(fp1 >> (8 * i));
    mc_job_state gs;
    CHECK_ERR(mc_decode_job_state(sv1.data, sv1.len, a, &gs, detail, sizeof detail), MC_CODEC_OK);
    CHECK(gs.version == 3 && !gs.job.has_kafka_target);
    CHECK_ERR(mc_decode_job_state_head(sv1.data, sv1.len, a, &gs, detail, sizeof detail),
              MC_CODEC_OK);
    CHECK_ERR(mc_decode_job(gs.job_raw, gs.job_raw_len, a, &bare, detail, sizeof detail),
              MC_CODEC_OK);
    /* Spliced into a JobState of today, the bytes are that of the current one. */
    mc_buf re = {0};
    CHECK(mc_encode_job_state(&gs, &re) == 0);
    CHECK(bytes_eq(re.data, re.len, scur.data, scur.len));
    mc_buf_free(&re);
    mc_buf_free(&sv1);
    mc_buf_free(&scur);
    mc_buf_free(&v1);
    mc_buf_free(&cur);
    mc_arena_free(a);
}

/* JobCommand version 3 carries serial chains (AddLink, CancelLink,
 * LinkDone) and reads versions 1 and 2 as before; a chain's changelog
 * record (ChainLink) round-trips with its task. */
static void test_chains(void)
{
    mc_arena *a = mc_arena_new();
    mc_job_command c = {.kind = MC_JOBCMD_ADD_LINK};
    c.add_link = (mc_add_link){.ordering_key = "contract-42", .task = typical_task()};
    roundtrip_job_command(&c, a);
    c = (mc_job_command){.kind = MC_JOBCMD_CANCEL_LINK};
    c.cancel_link = (mc_cancel_link){"shop", "contract-42", "renewal", 1767225600000};
    roundtrip_job_command(&c, a);
    c = (mc_job_command){.kind = MC_JOBCMD_LINK_DONE};
    c.link_done =
        (mc_link_done){"shop", "contract-42", "renewal", 77, MC_OUTCOME_EXHAUSTED, 1767225600123};
    roundtrip_job_command(&c, a);
    /* The relay's outcomes end at CANCELLED, as OccurrenceDone's do. */
    c.link_done.outcome = MC_OUTCOME_DROPPED;
    mc_buf b = {0};
    CHECK(mc_encode_job_command(&c, &b) != 0);
    /* Under version 2's fingerprint, a chain branch does not exist. */
    c.link_done.outcome = MC_OUTCOME_SUCCEEDED;
    CHECK(mc_encode_job_command(&c, &b) == 0);
    uint64_t fp2 = mc_schema_version_fingerprint(MC_SCHEMA_JOB_COMMAND, 2);
    CHECK(fp2 != 0 && fp2 != mc_schema_fingerprint(MC_SCHEMA_JOB_COMMAND));
    for (int i = 0; i < 8; i++)
        b.data[2 + i] = (uint8_t)(fp2 >> (8 * i));
    mc_job_command got;
    char detail[256];
    CHECK(mc_decode_job_command(NULL, b.data, b.len, a, &got, detail, sizeof detail) !=
          MC_CODEC_OK);
    /* ... while its own branches read the same. */
    mc_buf_reset(&b);
    c = (mc_job_command){.kind = MC_JOBCMD_DONE};
    c.done = (mc_occurrence_done){"shop", "nightly", 5, MC_OUTCOME_SUCCEEDED, 9};
    CHECK(mc_encode_job_command(&c, &b) == 0);
    for (int i = 0; i < 8; i++)
        b.data[2 + i] = (uint8_t)(fp2 >> (8 * i));
    CHECK_ERR(mc_decode_job_command(NULL, b.data, b.len, a, &got, detail, sizeof detail),
              MC_CODEC_OK);
    CHECK(job_command_eq(&c, &got));
    /* ChainLink. */
    mc_chain_link l = {.ordering_key = "contract-42",
                       .link = 12,
                       .released_at = 1767225600000,
                       .cancelled_at = -1,
                       .task = typical_task()},
                  lg;
    mc_buf_reset(&b);
    CHECK(mc_encode_chain_link(&l, &b) == 0);
    CHECK_ERR(mc_decode_chain_link(b.data, b.len, a, &lg, detail, sizeof detail), MC_CODEC_OK);
    CHECK(str_eq(lg.ordering_key, "contract-42") && lg.link == 12 &&
          lg.released_at == 1767225600000 && lg.cancelled_at == -1 && task_eq(&lg.task, &l.task));
    for (size_t n = 0; n < b.len; n++)
        CHECK(mc_decode_chain_link(b.data, n, a, &lg, detail, sizeof detail) != MC_CODEC_OK);
    mc_buf_free(&b);
    mc_arena_free(a);
}

static bool endpoint_eq(const mc_endpoint *x, const mc_endpoint *y)
{
    if (x->kind != y->kind)
        return false;
    if (x->kind == MC_ENDPOINT_LIMIT)
        return x->limit.scope == y->limit.scope && str_eq(x->limit.name, y->limit.name) &&
               x->limit.max_concurrent == y->limit.max_concurrent &&
               x->limit.max_per_second == y->limit.max_per_second &&
               x->limit.updated_at == y->limit.updated_at;
    const mc_endpoint_group *g = &x->group, *h = &y->group;
    if (!str_eq(g->app_id, h->app_id) || !str_eq(g->name, h->name) ||
        g->n_members != h->n_members || g->n_dns != h->n_dns || g->strategy != h->strategy ||
        g->member_concurrency != h->member_concurrency || g->unhealthy_ms != h->unhealthy_ms ||
        g->updated_at != h->updated_at)
        return false;
    for (size_t i = 0; i < g->n_members; i++)
        if (!str_eq(g->members[i], h->members[i]))
            return false;
    for (size_t i = 0; i < g->n_dns; i++)
        if (!str_eq(g->dns[i], h->dns[i]))
            return false;
    return true;
}

/* Endpoint: groups and limits round-trip, avro-c reads what we write, every
 * cut is an error, and values out of the enums are refused both ways. */
static void test_endpoint(void)
{
    mc_arena *a = mc_arena_new();
    char detail[256];
    static const char *const members[] = {"http://10.0.0.1:8080", "https://b.example.com/api"};
    static const char *const dns[] = {"http://billing.default.svc.cluster.local:8080"};
    mc_endpoint e = {.kind = MC_ENDPOINT_GROUP,
                     .group = {.app_id = "shop",
                               .name = "billing",
                               .members = members,
                               .n_members = 2,
                               .dns = dns,
                               .n_dns = 1,
                               .strategy = 9,
                               .member_concurrency = 4,
                               .unhealthy_ms = 10000,
                               .updated_at = 1767225600000}},
                got;
    mc_endpoint limit = {.kind = MC_ENDPOINT_LIMIT,
                         .limit = {.scope = 1,
                                   .name = "shop",
                                   .max_concurrent = 50,
                                   .max_per_second = 2000.5,
                                   .updated_at = 7}};
    mc_endpoint empty = {.kind = MC_ENDPOINT_GROUP, .group = {.app_id = "a", .name = "g"}};
    const mc_endpoint *cases[] = {&e, &limit, &empty};
    for (size_t c = 0; c < 3; c++) {
        mc_buf b = {0}, b2 = {0};
        CHECK(mc_encode_endpoint(cases[c], &b) == 0);
        CHECK(header_fingerprint(&b) == mc_schema_fingerprint(MC_SCHEMA_ENDPOINT));
        CHECK_ERR(mc_decode_endpoint(b.data, b.len, a, &got, detail, sizeof detail), MC_CODEC_OK);
        CHECK(endpoint_eq(cases[c], &got));
        CHECK(mc_encode_endpoint(&got, &b2) == 0 && b2.len == b.len &&
              memcmp(b.data, b2.data, b.len) == 0);
        avro_value_t v;
        avro_schema_t sch;
        avro_value_iface_t *iface;
        if (avro_c_read(MC_SCHEMA_ENDPOINT, &b, &v, &sch, &iface))
            avro_c_release(&v, iface, sch);
        for (size_t n = 0; n < b.len; n++)
            CHECK(mc_decode_endpoint(b.data, n, a, &got, detail, sizeof detail) != MC_CODEC_OK);
        mc_buf_free(&b);
        mc_buf_free(&b2);
    }
    mc_buf b = {0};
    e.group.strategy = MC_ENDPOINT_STRATEGIES;
    CHECK(mc_encode_endpoint(&e, &b) == -1 && b.len == 0);
    e.group.strategy = 0;
    limit.limit.scope = 2;
    CHECK(mc_encode_endpoint(&limit, &b) == -1 && b.len == 0);
    limit.kind = (mc_endpoint_kind)2;
    CHECK(mc_encode_endpoint(&limit, &b) == -1 && b.len == 0);
    /* A strategy past the enum in the bytes: found by its field name. */
    uint8_t store[256];
    mc_buf hand = {store, 0, sizeof store};
    w_header(&hand, MC_SCHEMA_ENDPOINT);
    w_long(&hand, 0);
    w_str(&hand, "a");
    w_str(&hand, "g");
    w_long(&hand, 1);
    w_str(&hand, "http://x");
    w_long(&hand, 0);
    w_long(&hand, 0);
    w_long(&hand, MC_ENDPOINT_STRATEGIES);
    CHECK_ERR(mc_decode_endpoint(hand.data, hand.len, a, &got, detail, sizeof detail),
              MC_CODEC_BAD_ENUM);
    expect_detail(detail, "strategy");
    mc_buf_reset(&hand);
    w_header(&hand, MC_SCHEMA_ENDPOINT);
    w_long(&hand, 0);
    w_str(&hand, "a");
    w_str(&hand, "g");
    w_long(&hand, 1 << 20); /* more members than bytes */
    CHECK_ERR(mc_decode_endpoint(hand.data, hand.len, a, &got, detail, sizeof detail),
              MC_CODEC_BAD_LENGTH);
    expect_detail(detail, "members");
    mc_buf_reset(&hand);
    w_header(&hand, MC_SCHEMA_ENDPOINT);
    w_long(&hand, 2);
    CHECK_ERR(mc_decode_endpoint(hand.data, hand.len, a, &got, detail, sizeof detail),
              MC_CODEC_BAD_UNION);
    expect_detail(detail, "payload");
    /* Another schema's record is not an Endpoint. */
    mc_buf_reset(&hand);
    w_header(&hand, MC_SCHEMA_CHAIN_LINK);
    CHECK_ERR(mc_decode_endpoint(hand.data, hand.len, a, &got, detail, sizeof detail),
              MC_CODEC_UNKNOWN_SCHEMA);
    mc_buf_free(&b);
    mc_arena_free(a);
}

/* Task version 2: a Kafka target and a late policy go through every record
 * that holds a task, and version 1 records (kept in topics) still read, as
 * tasks without them; the splice helpers say how to make their bytes current. */
static void test_task_v2(void)
{
    static const mc_kv th[] = {{"trace", "t-1"}};
    static const uint8_t key[] = {0, 1, 2}, value[] = "order 42 expired";
    mc_task t = typical_task();
    t.callback.url = "";
    t.has_kafka_target = true;
    t.kafka_target = (mc_kafka_target){.topic = "orders.expired",
                                       .key = key,
                                       .key_len = sizeof key,
                                       .has_key = true,
                                       .value = value,
                                       .value_len = sizeof value - 1,
                                       .has_value = true,
                                       .headers = th,
                                       .n_headers = 1};
    t.has_late_policy = true;
    t.late_policy = (mc_late_policy){5000, MC_LATE_DEAD};
    const mc_follow_up next[] = {
        {.task_id = "",
         .delay_ms = 60000,
         .callback = {.url = "https://x.example/next", .method = "POST", .timeout_ms = 100},
         .has_retry = true,
         .retry = {3, 10, 2.0, 100}},
        {.task_id = "audit",
         .callback = {.url = "", .method = ""},
         .has_kafka_target = true,
         .kafka_target = {.topic = "audit", .value = value, .value_len = 3, .has_value = true},
         .has_late_policy = true,
         .late_policy = {100, MC_LATE_DROP}}};
    t.on_success = next;
    t.n_on_success = 2;
    mc_arena *arena = mc_arena_new();
    char detail[256];
    mc_buf b = {0};
    mc_command c = {.kind = MC_CMD_SUBMIT, .submit = t}, gc;
    CHECK(mc_encode_command(&c, &b) == 0);
    CHECK_ERR(mc_decode_command(NULL, b.data, b.len, arena, &gc, detail, sizeof detail),
              MC_CODEC_OK);
    const mc_kafka_target *k = &gc.submit.kafka_target;
    CHECK(gc.submit.has_kafka_target && str_eq(k->topic, "orders.expired") && k->has_key &&
          k->key_len == 3 && memcmp(k->key, key, 3) == 0 && k->has_value &&
          k->value_len == sizeof value - 1 && k->n_headers == 1 &&
          str_eq(k->headers[0].value, "t-1"));
    CHECK(gc.submit.has_late_policy && gc.submit.late_policy.max_late_ms == 5000 &&
          gc.submit.late_policy.action == MC_LATE_DEAD);
    CHECK(gc.submit.n_on_success == 2);
    if (gc.submit.n_on_success == 2) {
        const mc_follow_up *f = gc.submit.on_success;
        CHECK(str_eq(f[0].task_id, "") && f[0].delay_ms == 60000 &&
              str_eq(f[0].callback.url, "https://x.example/next") && f[0].has_retry &&
              f[0].retry.max_attempts == 3 && !f[0].has_kafka_target && !f[0].has_late_policy);
        CHECK(str_eq(f[1].task_id, "audit") && f[1].has_kafka_target &&
              str_eq(f[1].kafka_target.topic, "audit") && f[1].kafka_target.value_len == 3 &&
              f[1].has_late_policy && f[1].late_policy.action == MC_LATE_DROP && !f[1].has_retry);
        /* Every cut of the record fails, none reads past it. */
        for (size_t cut = 10; cut < b.len; cut++)
            CHECK(mc_decode_command(NULL, b.data, cut, arena, &gc, detail, sizeof detail) !=
                      MC_CODEC_OK,
                  "cut at %zu decoded", cut);
    }
    /* A tombstone without a key. */
    c.submit.kafka_target.has_key = c.submit.kafka_target.has_value = false;
    mc_buf_reset(&b);
    CHECK(mc_encode_command(&c, &b) == 0);
    CHECK_ERR(mc_decode_command(NULL, b.data, b.len, arena, &gc, detail, sizeof detail),
              MC_CODEC_OK);
    CHECK(gc.submit.has_kafka_target && !gc.submit.kafka_target.has_key &&
          !gc.submit.kafka_target.has_value && !gc.submit.kafka_target.value);
    /* An action LateAction has no symbol for is refused by the encoder. */
    c.submit.late_policy.action = (mc_late_action)7;
    mc_buf_reset(&b);
    CHECK(mc_encode_command(&c, &b) == -1 && b.len == 0);
    c.submit.late_policy.action = MC_LATE_DROP;

    /* StoredTask, WheelEntry, DeadLetter carry them too. */
    mc_stored_task st = {77, c.submit}, gst;
    mc_buf_reset(&b);
    CHECK(mc_encode_stored_task(&st, &b) == 0);
    CHECK_ERR(mc_decode_stored_task(b.data, b.len, arena, &gst, detail, sizeof detail),
              MC_CODEC_OK);
    CHECK(gst.version == 77 && gst.task.has_kafka_target && gst.task.has_late_policy);
    int64_t version;
    size_t body, suffix = 99;
    CHECK(mc_peek_versioned(MC_SCHEMA_STORED_TASK, b.data, b.len, &version, NULL, &body, &suffix) ==
              MC_CODEC_OK &&
          version == 77 && suffix == 0);
    mc_dead_letter d = {.reason = "r", .source_topic = "s", .has_task = true, .task = c.submit}, gd;
    mc_buf_reset(&b);
    CHECK(mc_encode_dead_letter(&d, &b) == 0);
    CHECK_ERR(mc_decode_dead_letter(b.data, b.len, arena, &gd, detail, sizeof detail), MC_CODEC_OK);
    CHECK(gd.has_task && gd.task.has_kafka_target && gd.task.late_policy.action == MC_LATE_DROP);

    /* A version 1 StoredTask (as the store's changelog may still hold):
     * read as a task without them, and its bytes plus the suffix are a
     * current task, which re-framed reads back the same. */
    mc_task plain = typical_task();
    mc_buf cur = {0}, v1 = {0};
    CHECK(mc_encode_stored_task(&(mc_stored_task){5, plain}, &cur) == 0);
    /* Version 1 = the current bytes without the three trailing defaults. */
    uint64_t fp1 = mc_schema_version_fingerprint(MC_SCHEMA_STORED_TASK, 1);
    CHECK(fp1 != 0 && fp1 != mc_schema_fingerprint(MC_SCHEMA_STORED_TASK));
    uint8_t h[10] = {0xC3, 0x01};
    for (int i = 0; i < 8; i++)
        h[2 + i] = (uint8_t)(fp1 >> (8 * i));
    CHECK(cur.len > 13 && memcmp(cur.data + cur.len - 3, mc_task_v1_suffix, 3) == 0);
    v1.data = malloc(cur.len);
    memcpy(v1.data, h, 10);
    memcpy(v1.data + 10, cur.data + 10, cur.len - 13);
    v1.len = cur.len - 3;
    CHECK_ERR(mc_decode_stored_task(v1.data, v1.len, arena, &gst, detail, sizeof detail),
              MC_CODEC_OK);
    CHECK(gst.version == 5 && !gst.task.has_kafka_target && !gst.task.has_late_policy &&
          str_eq(gst.task.callback.url, plain.callback.url));
    CHECK(mc_peek_versioned(MC_SCHEMA_STORED_TASK, v1.data, v1.len, &version, NULL, &body,
                            &suffix) == MC_CODEC_OK &&
          suffix == sizeof mc_task_v1_suffix);
    mc_buf re = {0};
    CHECK(mc_encode_versioned_raw(MC_SCHEMA_STORED_TASK, version, v1.data + body, v1.len - body,
                                  mc_task_v1_suffix, suffix, &re) == 0);
    CHECK(re.len == cur.len && memcmp(re.data, cur.data, cur.len) == 0);
    /* Version 1 bytes under the current fingerprint are cut short. */
    memcpy(v1.data + 2, cur.data + 2, 8);
    CHECK(mc_decode_stored_task(v1.data, v1.len, arena, &gst, detail, sizeof detail) ==
          MC_CODEC_TRUNCATED);
    mc_buf_free(&re);
    mc_buf_free(&v1);
    mc_buf_free(&cur);
    mc_buf_free(&b);
    mc_arena_free(arena);
}

int main(void)
{
    test_crc64();
    test_canonical_form();
    test_schema_table();
    test_roundtrips();
    test_avro_c_interop();
    test_earlier_versions();
    test_task_v2();
    test_job_v2();
    test_chains();
    test_endpoint();
    test_errors();
    test_job_roundtrips();
    test_job_fastavro_interop();
    test_job_avro_c_interop();
    test_job_errors();
    test_misc();
    timing();
    return check_exit("test_codec");
}
