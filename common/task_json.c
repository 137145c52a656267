/* JSON -> Task and Cancel (the gateway, mooncakectl -f), on jansson. The document is
 * parsed whole (bodies are capped by the gateway), duplicate keys refused
 * (which of two values is meant is a guess), and unknown fields ignored, as
 * the Java system's clients may send fields mooncake has no use for. jansson
 * refuses \u0000 (no JSON_ALLOW_NUL), so every string is a C string. */
#include "task_json.h"

#include <ctype.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "task_rules.h"

const mc_task_field_names mc_task_json_names = {
    .app_id = "appId",
    .task_id = "uuid",
    .due_at = "expireTime",
    .url = "callback.url",
    .method = "callback.method",
    .timeout_ms = "callback.timeoutMs",
    .attempt = "attempt",
    .max_attempts = "retry.maxAttempts",
    .initial_backoff_ms = "retry.initialBackoffMs",
    .multiplier = "retry.multiplier",
    .max_backoff_ms = "retry.maxBackoffMs",
};

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(why, whylen, __VA_ARGS__);                                                        \
        return -1;                                                                                 \
    } while (0)

const char *mc_json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "something else";
}

json_t *mc_json_parse_object(const char *body, size_t len, char *why, size_t whylen)
{
    json_error_t e;
    /* JSON_DECODE_ANY: "shop" is valid JSON, just not an object; say so. */
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &e);
    if (!root) {
        snprintf(why, whylen, "body is not valid JSON: %s (line %d, column %d)", e.text, e.line,
                 e.column);
        return NULL;
    }
    if (!json_is_object(root)) {
        snprintf(why, whylen, "body must be a JSON object, not %s", mc_json_type_name(root));
        json_decref(root);
        return NULL;
    }
    return root;
}

int mc_json_get_string(json_t *obj, const char *key, const char *name, bool required,
                       size_t max_len, mc_arena *a, const char **out, char *why, size_t whylen)
{
    *out = NULL;
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (required)
            FAIL("%s is required", name);
        return 0;
    }
    if (!json_is_string(v))
        FAIL("%s must be a string, not %s", name, mc_json_type_name(v));
    size_t n = json_string_length(v);
    if (n > max_len)
        FAIL("%s is %zu bytes, more than %zu", name, n, max_len);
    const char *s = json_string_value(v);
    if (max_len == MC_JSON_MAX_ID_LEN)
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
                FAIL("%s contains a control character", name);
    char *copy = mc_arena_alloc(a, n + 1);
    if (!copy)
        FAIL("out of memory");
    memcpy(copy, s, n + 1);
    *out = copy;
    return 0;
}

int mc_json_get_int(json_t *obj, const char *key, const char *name, int64_t min, int64_t max,
                    bool *present, int64_t *out, char *why, size_t whylen)
{
    *present = false;
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v))
        FAIL("%s must be an integer, not %s", name, mc_json_type_name(v));
    json_int_t i = json_integer_value(v);
    if (i < min || i > max)
        FAIL("%s %lld is outside [%lld, %lld]", name, (long long)i, (long long)min, (long long)max);
    *present = true;
    *out = i;
    return 0;
}

int mc_json_get_map(json_t *obj, const char *key, const char *name, bool headers, mc_arena *a,
                    const mc_kv **out, size_t *n_out, char *why, size_t whylen)
{
    *out = NULL;
    *n_out = 0;
    json_t *m = json_object_get(obj, key);
    if (!m || json_is_null(m))
        return 0;
    if (!json_is_object(m))
        FAIL("%s must be an object of strings, not %s", name, mc_json_type_name(m));
    size_t n = json_object_size(m);
    if (headers && n > MC_JSON_MAX_HEADERS)
        FAIL("%s has %zu entries, more than %d", name, n, MC_JSON_MAX_HEADERS);
    mc_kv *kv = n ? mc_arena_alloc(a, n * sizeof *kv) : NULL;
    if (n && !kv)
        FAIL("out of memory");
    size_t i = 0, bytes = 0;
    const char *k;
    json_t *v;
    json_object_foreach(m, k, v)
    {
        if (!json_is_string(v))
            FAIL("%s.%.100s must be a string, not %s", name, k, mc_json_type_name(v));
        if (headers) {
            if (!mc_header_name_ok(k))
                FAIL("%s: '%.100s' is not a valid header name", name, k);
            if (mc_header_reserved(k))
                FAIL("%s: '%.100s' is set by mooncake and cannot be given", name, k);
            if (!mc_header_value_ok(json_string_value(v)))
                FAIL("%s.%.100s contains CR, LF or another control character", name, k);
        }
        bytes += strlen(k) + json_string_length(v);
        if (bytes > MC_JSON_MAX_MAP_BYTES)
            FAIL("%s is more than %d bytes in all", name, MC_JSON_MAX_MAP_BYTES);
        const char *kc = mc_arena_strdup(a, k), *vc = mc_arena_strdup(a, json_string_value(v));
        if (!kc || !vc)
            FAIL("out of memory");
        kv[i++] = (mc_kv){kc, vc};
    }
    *out = kv;
    *n_out = i;
    return 0;
}

int mc_json_get_retry(json_t *root, const mc_retry_policy *def, bool *has_retry,
                      mc_retry_policy *retry, char *why, size_t whylen)
{
    *has_retry = false;
    json_t *r = json_object_get(root, "retry");
    if (!r || json_is_null(r))
        return 0;
    if (!json_is_object(r))
        FAIL("retry must be an object, not %s", mc_json_type_name(r));
    *has_retry = true;
    *retry = *def;
    bool present;
    int64_t v;
    if (mc_json_get_int(r, "maxAttempts", "retry.maxAttempts", 1, MC_MAX_ATTEMPTS, &present, &v,
                        why, whylen))
        return -1;
    if (present)
        retry->max_attempts = (int32_t)v;
    if (mc_json_get_int(r, "initialBackoffMs", "retry.initialBackoffMs", 0, INT64_MAX, &present,
                        &retry->initial_backoff_ms, why, whylen) ||
        mc_json_get_int(r, "maxBackoffMs", "retry.maxBackoffMs", 0, INT64_MAX, &present,
                        &retry->max_backoff_ms, why, whylen))
        return -1;
    json_t *m = json_object_get(r, "multiplier");
    if (m && !json_is_null(m)) {
        if (!json_is_number(m))
            FAIL("retry.multiplier must be a number, not %s", mc_json_type_name(m));
        retry->multiplier = json_number_value(m);
    }
    return 0;
}

static int get_due(json_t *root, const mc_task_json_options *o, mc_task *t, char *why,
                   size_t whylen)
{
    bool at, delay;
    int64_t expire = 0, delay_ms = 0;
    if (mc_json_get_int(root, "expireTime", "expireTime", INT64_MIN, INT64_MAX, &at, &expire, why,
                        whylen) ||
        mc_json_get_int(root, "delayMs", "delayMs", 0, o->max_due_ms, &delay, &delay_ms, why,
                        whylen))
        return -1;
    if (at && delay)
        FAIL("give expireTime or delayMs, not both");
    if (!at && !delay)
        FAIL("expireTime (epoch ms) or delayMs is required");
    t->due_at = at ? expire : o->now_ms + delay_ms;
    return 0;
}

int mc_json_get_callback(json_t *root, mc_arena *a, mc_callback *c, char *why, size_t whylen)
{
    memset(c, 0, sizeof *c);
    json_t *cb = json_object_get(root, "callback");
    if (!cb || json_is_null(cb))
        FAIL("callback is required (an object with at least url)");
    if (!json_is_object(cb))
        FAIL("callback must be an object, not %s", mc_json_type_name(cb));
    const char *method, *body;
    if (mc_json_get_string(cb, "url", "callback.url", true, MC_MAX_URL_LEN, a, &c->url, why,
                           whylen) ||
        mc_json_get_string(cb, "method", "callback.method", false, 16, a, &method, why, whylen) ||
        mc_json_get_string(cb, "body", "callback.body", false, SIZE_MAX, a, &body, why, whylen) ||
        mc_json_get_map(cb, "headers", "callback.headers", true, a, &c->headers, &c->n_headers, why,
                        whylen))
        return -1;
    if (method) {
        for (char *p = (char *)method; *p; p++)
            *p = (char)toupper((unsigned char)*p);
        c->method = method;
    } else {
        c->method = "POST";
    }
    json_t *bv = json_object_get(cb, "body");
    c->body = (const uint8_t *)body;
    c->body_len = body ? json_string_length(bv) : 0;
    bool present;
    int64_t timeout = 0;
    if (mc_json_get_int(cb, "timeoutMs", "callback.timeoutMs", 0, MC_MAX_TIMEOUT_MS, &present,
                        &timeout, why, whylen))
        return -1;
    c->timeout_ms = (int32_t)timeout;
    return 0;
}

int mc_task_from_json(const char *body, size_t len, const mc_task_json_options *o, mc_arena *arena,
                      mc_task *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    json_t *root = mc_json_parse_object(body, len, why, whylen);
    if (!root)
        return -1;
    int rc = -1;
    const char *uuid;
    if (mc_json_get_string(root, "appId", "appId", true, MC_JSON_MAX_ID_LEN, arena, &out->app_id,
                           why, whylen) ||
        mc_json_get_string(root, "uuid", "uuid", false, MC_JSON_MAX_ID_LEN, arena, &uuid, why,
                           whylen) ||
        get_due(root, o, out, why, whylen) ||
        mc_json_get_callback(root, arena, &out->callback, why, whylen) ||
        mc_json_get_retry(root, &o->retry_defaults, &out->has_retry, &out->retry, why, whylen) ||
        mc_json_get_map(root, "metadata", "metadata", false, arena, &out->metadata,
                        &out->n_metadata, why, whylen))
        goto done;
    if (!uuid) {
        char *id = mc_arena_alloc(arena, MC_JSON_MAX_ID_LEN + 1);
        if (!id) {
            snprintf(why, whylen, "out of memory");
            goto done;
        }
        o->make_id(o->make_id_arg, id);
        uuid = id;
    }
    out->task_id = uuid;
    out->attempt = 1;
    out->created_at = o->now_ms;
    if (!mc_task_ok(out, o->now_ms, o->max_due_ms, &mc_task_json_names, why, whylen))
        goto done;
    rc = 0;
done:
    json_decref(root);
    return rc;
}

int mc_cancel_from_json(const char *body, size_t len, int64_t now_ms, mc_arena *arena,
                        mc_cancel *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    json_t *root = mc_json_parse_object(body, len, why, whylen);
    if (!root)
        return -1;
    int rc = -1;
    if (mc_json_get_string(root, "appId", "appId", true, MC_JSON_MAX_ID_LEN, arena, &out->app_id,
                           why, whylen) ||
        mc_json_get_string(root, "uuid", "uuid", true, MC_JSON_MAX_ID_LEN, arena, &out->task_id,
                           why, whylen))
        goto done;
    out->requested_at = now_ms;
    if (!mc_task_ids_ok(out->app_id, out->task_id, &mc_task_json_names, why, whylen))
        goto done;
    rc = 0;
done:
    json_decref(root);
    return rc;
}

/* ---- Task -> JSON (what mooncakectl and mooncake-schema print) ---- */

json_t *mc_json_base64(const uint8_t *p, size_t n)
{
    size_t cap = MC_BASE64_LEN(n) + 1;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    mc_base64_encode(p, n, out, cap);
    json_t *j = json_string(out);
    free(out);
    return j;
}

/* Sets name to the bytes as a string when they are UTF-8, else sets
 * name_base64; a NULL pointer sets null. */
void mc_json_set_bytes(json_t *obj, const char *name, const void *p, size_t n)
{
    if (!p) {
        json_object_set_new(obj, name, json_null());
        return;
    }
    json_t *s = json_stringn(p, n);
    if (s) {
        json_object_set_new(obj, name, s);
        return;
    }
    char b64name[64];
    snprintf(b64name, sizeof b64name, "%s_base64", name);
    json_object_set_new(obj, b64name, mc_json_base64(p, n));
}

json_t *mc_json_kv_object(const mc_kv *kv, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(o, kv[i].key, json_string(kv[i].value));
    return o;
}

json_t *mc_callback_to_json(const mc_callback *cb, bool api_names)
{
    json_t *j = json_pack("{s:s, s:s, s:o, s:I}", "url", cb->url, "method", cb->method, "headers",
                          mc_json_kv_object(cb->headers, cb->n_headers),
                          api_names ? "timeoutMs" : "timeout_ms", (json_int_t)cb->timeout_ms);
    mc_json_set_bytes(j, "body", cb->body ? (const void *)cb->body : "", cb->body_len);
    return j;
}

json_t *mc_retry_to_json(bool has_retry, const mc_retry_policy *r, bool api_names)
{
    if (!has_retry)
        return json_null();
    return json_pack("{s:I, s:I, s:f, s:I}", api_names ? "maxAttempts" : "max_attempts",
                     (json_int_t)r->max_attempts,
                     api_names ? "initialBackoffMs" : "initial_backoff_ms",
                     (json_int_t)r->initial_backoff_ms, "multiplier", r->multiplier,
                     api_names ? "maxBackoffMs" : "max_backoff_ms", (json_int_t)r->max_backoff_ms);
}

json_t *mc_task_to_json(const mc_task *t)
{
    return json_pack("{s:s, s:s, s:I, s:o, s:o, s:I, s:I, s:o}", "app_id", t->app_id, "task_id",
                     t->task_id, "due_at", (json_int_t)t->due_at, "callback",
                     mc_callback_to_json(&t->callback, false), "retry",
                     mc_retry_to_json(t->has_retry, &t->retry, false), "attempt",
                     (json_int_t)t->attempt, "created_at", (json_int_t)t->created_at, "metadata",
                     mc_json_kv_object(t->metadata, t->n_metadata));
}
