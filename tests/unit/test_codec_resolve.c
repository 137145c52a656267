/* Unit tests of schema resolution (codec/codec_resolve.c): records
 * written with another version of a schema read as ours - reader defaults
 * filled (the part avro-c 1.11's resolver leaves out), writer-only fields
 * skipped, promotions, enums and unions matched by name; incompatible
 * versions refused at load with the field named; hostile bytes bounded.
 * Then the whole path: Commands written with the previous and the next
 * version of our schema decoded by mc_decode_command. */
#include "check.h"
#include "codec.h"
#include "../fuzz/command_versions.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a tiny Avro writer for hand-made records --------------------------------- */

typedef struct out {
    uint8_t b[4096];
    size_t n;
} out;

static void raw(out *o, const void *p, size_t n)
{
    memcpy(o->b + o->n, p, n);
    o->n += n;
}

static void lng(out *o, int64_t v)
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    while (z >= 0x80) {
        o->b[o->n++] = (uint8_t)(z | 0x80);
        z >>= 7;
    }
    o->b[o->n++] = (uint8_t)z;
}

static void str(out *o, const char *s)
{
    lng(o, (int64_t)strlen(s));
    raw(o, s, strlen(s));
}

static void dbl(out *o, double d)
{
    raw(o, &d, 8); /* x86_64 is little-endian, as Avro is */
}

static void so_header(out *o, uint64_t fp)
{
    o->b[o->n++] = 0xC3;
    o->b[o->n++] = 0x01;
    for (int i = 0; i < 8; i++)
        o->b[o->n++] = (uint8_t)(fp >> (8 * i));
}

/* Transcodes `in` from writer schema wjson into reader schema rjson's
 * binary, which the caller compares with what it expects. */
static mc_codec_err run(const char *wjson, const char *rjson_for_err, const out *in, mc_buf *res,
                        char *detail, size_t dlen)
{
    (void)rjson_for_err;
    char err[512];
    mc_writer_schema *ws = mc_writer_schema_new(wjson, MC_SCHEMA_RESULT, err, sizeof err);
    if (!ws) {
        fprintf(stderr, "load failed: %s\n", err);
        return MC_CODEC_UNKNOWN_SCHEMA;
    }
    mc_codec_err e = mc_writer_schema_transcode(ws, in->b, in->n, res, detail, dlen);
    mc_writer_schema_free(ws);
    return e;
}

/* The generic cases use our Result schema as the reader: it has strings,
 * ints, longs and an enum, which is enough to exercise each rule. */
typedef struct schema_text {
    char s[4096];
} schema_text;

static schema_text result_with(const char *fields)
{
    schema_text t;
    snprintf(t.s, sizeof t.s,
             "{\"type\":\"record\",\"name\":\"Result\",\"namespace\":\"mooncake\",\"fields\":[%s]}",
             fields);
    return t;
}

/* Result's fields in order: app_id string, task_id string, attempt int,
 * due_at long, started_at long, finished_at long, http_status int,
 * outcome enum Outcome, error string. */
static void test_generic_rules(void)
{
    char detail[256];
    /* A writer with the fields in another order, a record, array, map and
     * fixed of its own to skip, ints where we read longs, a one-branch union
     * where we read a long, bytes where we read a string, and an enum whose
     * symbols are in another order. */
    const char *outcome_field =
        "{\"name\":\"outcome\",\"type\":{\"type\":\"enum\",\"name\":\"Outcome\",\"symbols\":"
        "[\"CANCELLED\",\"SUCCEEDED\"%s]}},";
    char fields[3000], outcome[300];
    snprintf(outcome, sizeof outcome, outcome_field, "");
    snprintf(fields, sizeof fields, "%s%s", outcome,
             "{\"name\":\"skip_rec\",\"type\":{\"type\":\"record\",\"name\":\"X\",\"fields\":["
             "{\"name\":\"a\",\"type\":\"double\"},{\"name\":\"b\",\"type\":{\"type\":\"array\","
             "\"items\":\"string\"}}]}},"
             "{\"name\":\"task_id\",\"type\":\"string\"},"
             "{\"name\":\"app_id\",\"type\":\"string\"},"
             "{\"name\":\"skip_map\",\"type\":{\"type\":\"map\",\"values\":[\"null\",\"long\"]}},"
             "{\"name\":\"attempt\",\"type\":\"int\"},"
             "{\"name\":\"due_at\",\"type\":\"int\"},"
             "{\"name\":\"started_at\",\"type\":[\"long\"]},"
             "{\"name\":\"finished_at\",\"type\":\"long\"},"
             "{\"name\":\"skip_fixed\",\"type\":{\"type\":\"fixed\",\"name\":\"F\",\"size\":3}},"
             "{\"name\":\"http_status\",\"type\":\"int\"},"
             "{\"name\":\"error\",\"type\":\"bytes\"}");
    schema_text w = result_with(fields);
    out in = {0};
    lng(&in, 1);   /* outcome SUCCEEDED */
    dbl(&in, 2.5); /* skip_rec.a */
    lng(&in, -2);  /* skip_rec.b: a block of 2 with a byte size */
    lng(&in, 4);   /* ... of 4 bytes */
    str(&in, "p");
    str(&in, "q");
    lng(&in, 0);
    str(&in, "t1");   /* task_id */
    str(&in, "shop"); /* app_id */
    lng(&in, 1);      /* skip_map: 1 entry */
    str(&in, "k");
    lng(&in, 1); /* branch long */
    lng(&in, 99);
    lng(&in, 0);
    lng(&in, 3);    /* attempt */
    lng(&in, 1000); /* due_at int -> long */
    lng(&in, 0);    /* started_at: the union's long */
    lng(&in, 1001);
    lng(&in, 1002);     /* finished_at */
    raw(&in, "abc", 3); /* skip_fixed */
    lng(&in, 200);      /* http_status */
    str(&in, "none");   /* error as bytes */

    out want = {0};
    str(&want, "shop");
    str(&want, "t1");
    lng(&want, 3);
    lng(&want, 1000);
    lng(&want, 1001);
    lng(&want, 1002);
    lng(&want, 200);
    lng(&want, 0); /* SUCCEEDED is index 0 in our Outcome */
    str(&want, "none");
    lng(&want, -1); /* the fields the writer lacks, from their defaults: version, */
    lng(&want, 0);  /* response_headers, */
    str(&want, ""); /* response_body */
    lng(&want, -1); /* response_size */
    lng(&want, 0);  /* and member: null */

    mc_buf res = {0};
    mc_codec_err e = run(w.s, NULL, &in, &res, detail, sizeof detail);
    CHECK(e == MC_CODEC_OK, "%s: %s", mc_codec_strerror(e), detail);
    CHECK(res.len == want.n && memcmp(res.data, want.b, want.n) == 0,
          "transcoded %zu bytes, want %zu", res.len, want.n);

    /* A symbol our Outcome lacks (and Outcome has no default): that writer
     * schema is refused at load, naming the field and the symbol. */
    snprintf(outcome, sizeof outcome, outcome_field, ",\"EXTRA\"");
    char err[512];
    char both[3500];
    snprintf(both, sizeof both, "%s%s", outcome, strstr(fields, "}},") + 3);
    schema_text extra = result_with(both);
    mc_writer_schema *ws = mc_writer_schema_new(extra.s, MC_SCHEMA_RESULT, err, sizeof err);
    CHECK(ws == NULL && strstr(err, "outcome") && strstr(err, "EXTRA"), "%s", err);
    mc_writer_schema_free(ws);
    mc_buf_free(&res);
}

static void check_refused(const char *wjson, mc_schema_id reader, const char *needle)
{
    char err[512] = "";
    mc_writer_schema *ws = mc_writer_schema_new(wjson, reader, err, sizeof err);
    CHECK(ws == NULL, "accepted a writer schema that should be refused (%s)", needle);
    CHECK(strstr(err, needle) != NULL, "error '%s' does not name '%s'", err, needle);
    mc_writer_schema_free(ws);
}

static void test_incompatible_versions_are_refused(void)
{
    /* A reader field without a default that the writer lacks. */
    check_refused(result_with("{\"name\":\"app_id\",\"type\":\"string\"}").s, MC_SCHEMA_RESULT,
                  "task_id");
    /* A type that cannot be promoted (long -> int). */
    char *prev = command_schema_previous();
    char *bad = malloc(strlen(prev) + 64);
    /* timeout_ms is an int in Command; a writer with a long there is refused. */
    const char *at = strstr(prev, "\"name\":\"timeout_ms\"");
    CHECK(at != NULL);
    if (at) {
        /* {"name":"timeout_ms","type":"int",...}: swap the type. */
        char *copy = strdup(prev);
        char *t = strstr(copy + (at - prev), "\"type\":\"int\"");
        if (t) {
            size_t off = (size_t)(t - copy);
            snprintf(bad, strlen(prev) + 64, "%.*s\"type\":\"long\"%s", (int)off, copy,
                     t + strlen("\"type\":\"int\""));
            check_refused(bad, MC_SCHEMA_COMMAND, "timeout_ms");
        }
        free(copy);
    }
    free(bad);
    free(prev);
    /* Not JSON, and not a schema. */
    check_refused("{nope", MC_SCHEMA_COMMAND, "not JSON");
    check_refused("{\"type\":\"record\",\"name\":\"Command\",\"fields\":[{\"name\":\"payload\","
                  "\"type\":\"NoSuchType\"}]}",
                  MC_SCHEMA_COMMAND, "NoSuchType");
}

static void test_hostile_bytes(void)
{
    char detail[256];
    schema_text wt = result_with(
        "{\"name\":\"app_id\",\"type\":\"string\"},{\"name\":\"task_id\",\"type\":\"string\"},"
        "{\"name\":\"nulls\",\"type\":{\"type\":\"array\",\"items\":\"null\"}},"
        "{\"name\":\"attempt\",\"type\":\"int\"},{\"name\":\"due_at\",\"type\":\"long\"},"
        "{\"name\":\"started_at\",\"type\":\"long\"},{\"name\":\"finished_at\",\"type\":\"long\"},"
        "{\"name\":\"http_status\",\"type\":[\"int\"]},"
        "{\"name\":\"outcome\",\"type\":{\"type\":\"enum\",\"name\":\"Outcome\",\"symbols\":"
        "[\"SUCCEEDED\"]}},{\"name\":\"error\",\"type\":\"string\"}");
    const char *w = wt.s;
    mc_buf res = {0};
    /* An array of 2^40 nulls in 12 bytes must not spin for hours. */
    out in = {0};
    str(&in, "a");
    str(&in, "b");
    lng(&in, (int64_t)1 << 40);
    lng(&in, 0);
    CHECK(run(w, NULL, &in, &res, detail, sizeof detail) == MC_CODEC_BAD_LENGTH, "%s", detail);
    /* A union branch past the end. */
    out u = {0};
    str(&u, "a");
    str(&u, "b");
    lng(&u, 0);
    lng(&u, 1);
    lng(&u, 2);
    lng(&u, 3);
    lng(&u, 4);
    lng(&u, 7);
    CHECK(run(w, NULL, &u, &res, detail, sizeof detail) == MC_CODEC_BAD_UNION, "%s", detail);
    /* Cut short anywhere: never OK, never a crash. */
    out full = {0};
    str(&full, "a");
    str(&full, "b");
    lng(&full, 0);
    for (int i = 1; i <= 4; i++)
        lng(&full, i);
    lng(&full, 0);
    lng(&full, 200);
    lng(&full, 0);
    str(&full, "");
    CHECK(run(w, NULL, &full, &res, detail, sizeof detail) == MC_CODEC_OK, "%s", detail);
    for (size_t cut = 0; cut < full.n; cut++) {
        out part = full;
        part.n = cut;
        size_t before = res.len;
        mc_codec_err e = run(w, NULL, &part, &res, detail, sizeof detail);
        CHECK(e != MC_CODEC_OK, "cut at %zu decoded", cut);
        CHECK(res.len == before, "a failed transcode left output behind");
    }
    out trailing = full;
    raw(&trailing, "x", 1);
    CHECK(run(w, NULL, &trailing, &res, detail, sizeof detail) == MC_CODEC_TRAILING, "%s", detail);
    mc_buf_free(&res);
}

/* ---- Commands written with other versions of our schema ------------------------- */

static void callback_fields(out *o)
{
    str(o, "https://shop.example.com/expire");
    str(o, "PUT");
    lng(o, 1); /* headers: one entry */
    str(o, "X-Trace");
    str(o, "abc");
    lng(o, 0);
    str(o, "{\"order\":42}"); /* body (bytes) */
    lng(o, 1500);             /* timeout_ms */
}

static void test_previous_and_next_commands(void)
{
    char *prev = command_schema_previous(), *next = command_schema_next();
    char err[512], detail[256];
    mc_writer_schema *wp = mc_writer_schema_new(prev, MC_SCHEMA_COMMAND, err, sizeof err);
    CHECK(wp != NULL, "previous Command refused: %s", err);
    mc_writer_schema *wn = mc_writer_schema_new(next, MC_SCHEMA_COMMAND, err, sizeof err);
    CHECK(wn != NULL, "next Command refused: %s", err);
    if (!wp || !wn)
        goto out;
    CHECK(mc_writer_schema_fingerprint(wp) != mc_schema_fingerprint(MC_SCHEMA_COMMAND));
    char *pcf = mc_schema_canonical_form(prev, err, sizeof err);
    CHECK(pcf && mc_writer_schema_fingerprint(wp) == mc_crc64_avro(pcf, strlen(pcf)));
    free(pcf);

    mc_codec_writer writers[] = {{wp, 7}, {wn, -1}};
    mc_codec_options with = {.writers = writers, .n_writers = 2};
    mc_codec_options without = {0};
    mc_arena *arena = mc_arena_new();
    mc_command c;

    /* A Submit from the previous version: no retry, attempt or metadata. */
    out p = {0};
    so_header(&p, mc_writer_schema_fingerprint(wp));
    lng(&p, 0); /* Submit */
    str(&p, "shop");
    str(&p, "order-42");
    lng(&p, 1795000000000);
    callback_fields(&p);
    lng(&p, 1794999990000); /* created_at */
    mc_codec_err e = mc_decode_command(&with, p.b, p.n, arena, &c, detail, sizeof detail);
    CHECK(e == MC_CODEC_OK, "%s: %s", mc_codec_strerror(e), detail);
    if (e == MC_CODEC_OK) {
        const mc_task *t = &c.submit;
        CHECK(c.kind == MC_CMD_SUBMIT && strcmp(t->app_id, "shop") == 0 &&
              strcmp(t->task_id, "order-42") == 0 && t->due_at == 1795000000000 &&
              t->created_at == 1794999990000);
        CHECK(strcmp(t->callback.url, "https://shop.example.com/expire") == 0 &&
              strcmp(t->callback.method, "PUT") == 0 && t->callback.n_headers == 1 &&
              strcmp(t->callback.headers[0].value, "abc") == 0 && t->callback.body_len == 12 &&
              t->callback.timeout_ms == 1500);
        /* The defaults of the fields the previous version lacked. */
        CHECK(!t->has_retry, "retry should default to null");
        CHECK(t->attempt == 1, "attempt defaulted to %d, want 1", t->attempt);
        CHECK(t->n_metadata == 0, "metadata should default to {}");
    }
    /* Without the writer schema configured, the record is refused, saying so. */
    e = mc_decode_command(&without, p.b, p.n, arena, &c, detail, sizeof detail);
    CHECK(e == MC_CODEC_UNKNOWN_SCHEMA && strstr(detail, "writer schema"), "%s", detail);
    /* The same body framed for the Confluent id the previous version has. */
    out pc = {0};
    uint8_t hdr[5] = {0, 0, 0, 0, 7};
    raw(&pc, hdr, 5);
    raw(&pc, p.b + 10, p.n - 10);
    e = mc_decode_command(&with, pc.b, pc.n, arena, &c, detail, sizeof detail);
    CHECK(e == MC_CODEC_OK && c.submit.attempt == 1, "%s", detail);
    /* Cut short, it fails like any record. */
    e = mc_decode_command(&with, p.b, p.n - 3, arena, &c, detail, sizeof detail);
    CHECK(e == MC_CODEC_TRUNCATED && strstr(detail, "writer schema"), "%s: %s",
          mc_codec_strerror(e), detail);

    /* A Submit from the next version: priority, tags; union order reversed. */
    out n = {0};
    so_header(&n, mc_writer_schema_fingerprint(wn));
    lng(&n, 1); /* Submit is the second branch there */
    str(&n, "shop");
    str(&n, "order-43");
    lng(&n, 1795000000000);
    lng(&n, 5); /* priority */
    callback_fields(&n);
    lng(&n, 2); /* tags: two */
    str(&n, "a");
    str(&n, "b");
    lng(&n, 0);
    lng(&n, 1); /* retry: a policy */
    lng(&n, 4);
    lng(&n, 100);
    dbl(&n, 2.0);
    lng(&n, 10000);
    lng(&n, 2);             /* attempt */
    lng(&n, 1794999990000); /* created_at */
    lng(&n, 1);             /* metadata */
    str(&n, "k");
    str(&n, "v");
    lng(&n, 0);
    lng(&n, 0); /* kafka_target: null */
    lng(&n, 1); /* late_policy: 2 s, DROP */
    lng(&n, 2000);
    lng(&n, 1);
    lng(&n, 0); /* on_success: [] */
    e = mc_decode_command(&with, n.b, n.n, arena, &c, detail, sizeof detail);
    CHECK(e == MC_CODEC_OK, "%s: %s", mc_codec_strerror(e), detail);
    if (e == MC_CODEC_OK) {
        const mc_task *t = &c.submit;
        CHECK(c.kind == MC_CMD_SUBMIT && strcmp(t->task_id, "order-43") == 0 &&
              t->callback.timeout_ms == 1500 && t->has_retry && t->retry.max_attempts == 4 &&
              t->retry.multiplier == 2.0 && t->attempt == 2 && t->n_metadata == 1 &&
              strcmp(t->metadata[0].value, "v") == 0);
        CHECK(!t->has_kafka_target && t->has_late_policy && t->late_policy.max_late_ms == 2000 &&
              t->late_policy.action == MC_LATE_DROP);
    }
    /* A Cancel from the next version, with its new reason. */
    out nc = {0};
    so_header(&nc, mc_writer_schema_fingerprint(wn));
    lng(&nc, 0); /* Cancel is first there */
    str(&nc, "shop");
    str(&nc, "order-43");
    lng(&nc, 1795000000001);
    lng(&nc, 1);
    str(&nc, "customer paid");
    e = mc_decode_command(&with, nc.b, nc.n, arena, &c, detail, sizeof detail);
    CHECK(e == MC_CODEC_OK && c.kind == MC_CMD_CANCEL &&
              strcmp(c.cancel.task_id, "order-43") == 0 && c.cancel.requested_at == 1795000000001,
          "%s", detail);
    mc_arena_free(arena);
out:
    mc_writer_schema_free(wp);
    mc_writer_schema_free(wn);
    free(prev);
    free(next);
}

int main(void)
{
    test_generic_rules();
    test_incompatible_versions_are_refused();
    test_hostile_bytes();
    test_previous_and_next_commands();
    return check_exit("test_codec_resolve");
}
