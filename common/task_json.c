/* JSON -> Task and Cancel (the gateway, mooncakectl -f), on jansson, and the
 * record each becomes (with an orderingKey, a serial chain's AddLink or
 * CancelLink). The document is parsed whole (bodies are capped by the
 * gateway), duplicate keys refused (which of two values is meant is a
 * guess), and unknown fields ignored, as the Java system's clients may send
 * fields mooncake has no use for. jansson refuses \u0000 (no
 * JSON_ALLOW_NUL), so every string is a C string. */
#include "task_json.h"

#include <ctype.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broadcast.h"
#include "chains.h"
#include "crypto.h"
#include "endpoint_defs.h"
#include "endpoints.h"
#include "kafka_targets.h"
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
    .kafka_target = "kafkaTarget",
    .max_late_ms = "latePolicy.maxLateMs",
    .on_success = "onSuccess",
    .follow_up_id = "uuid",
    .delay_ms = "delayMs",
    .route = "callback.strategy",
};

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(why, whylen, __VA_ARGS__);                                                        \
        return -1;                                                                                 \
    } while (0)

/* A field's name as the client wrote it: at ("" for the task or job itself,
 * "onSuccess[1]." for a follow-up) then name. */
#define NAME_MAX_LEN 96
static const char *at_name(char buf[NAME_MAX_LEN], const char *at, const char *name)
{
    snprintf(buf, NAME_MAX_LEN, "%s%s", at, name);
    return buf;
}

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

/* obj.retry (optional): a partial object takes the rest from def. */
static int get_retry(json_t *obj, const char *at, const mc_retry_policy *def, bool *has_retry,
                     mc_retry_policy *retry, char *why, size_t whylen)
{
    *has_retry = false;
    char n[NAME_MAX_LEN];
    json_t *r = json_object_get(obj, "retry");
    if (!r || json_is_null(r))
        return 0;
    if (!json_is_object(r))
        FAIL("%sretry must be an object, not %s", at, mc_json_type_name(r));
    *has_retry = true;
    *retry = *def;
    bool present;
    int64_t v;
    if (mc_json_get_int(r, "maxAttempts", at_name(n, at, "retry.maxAttempts"), 1, MC_MAX_ATTEMPTS,
                        &present, &v, why, whylen))
        return -1;
    if (present)
        retry->max_attempts = (int32_t)v;
    if (mc_json_get_int(r, "initialBackoffMs", at_name(n, at, "retry.initialBackoffMs"), 0,
                        INT64_MAX, &present, &retry->initial_backoff_ms, why, whylen) ||
        mc_json_get_int(r, "maxBackoffMs", at_name(n, at, "retry.maxBackoffMs"), 0, INT64_MAX,
                        &present, &retry->max_backoff_ms, why, whylen))
        return -1;
    json_t *m = json_object_get(r, "multiplier");
    if (m && !json_is_null(m)) {
        if (!json_is_number(m))
            FAIL("%sretry.multiplier must be a number, not %s", at, mc_json_type_name(m));
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

/* cb.group, cb.path and cb.strategy: the url group://GROUP/PATH, and the strategy into
 * *strategy (NULL when none; a follow-up, strategy == NULL, takes none). */
static int get_group(json_t *cb, const char *at, mc_arena *a, const char **url,
                     const char **strategy, char *why, size_t whylen)
{
    char n[NAME_MAX_LEN];
    const char *group, *path, *strat;
    if (mc_json_get_string(cb, "group", at_name(n, at, "callback.group"), true, MC_GROUP_NAME_MAX,
                           a, &group, why, whylen) ||
        mc_json_get_string(cb, "path", at_name(n, at, "callback.path"), false, MC_MAX_URL_LEN, a,
                           &path, why, whylen) ||
        mc_json_get_string(cb, "strategy", at_name(n, at, "callback.strategy"), false, 64, a,
                           &strat, why, whylen))
        return -1;
    path = path ? path : "";
    if (path[0] && path[0] != '/' && path[0] != '?')
        FAIL("%scallback.path '%.100s' must start with '/'", at, path);
    size_t len = strlen("group://") + strlen(group) + strlen(path);
    char *u = mc_arena_alloc(a, len + 1);
    if (!u)
        FAIL("out of memory");
    snprintf(u, len + 1, "group://%s%s", group, path);
    char name[MC_GROUP_NAME_MAX + 1];
    const char *rest;
    if (!mc_group_url_parse(u, name, sizeof name, &rest) || strcmp(name, group) != 0)
        FAIL("%scallback.group '%.100s' is not a group name (1 to %d of A-Z a-z 0-9 . _ -)", at,
             group, MC_GROUP_NAME_MAX);
    if (len > MC_MAX_URL_LEN)
        FAIL("%scallback.path is too long: the call's URL would be more than %d bytes", at,
             MC_MAX_URL_LEN);
    mc_route_strategy parsed;
    if (strat && !strategy)
        FAIL("%scallback.strategy is not taken here: the call uses its group's strategy", at);
    if (strat && !mc_route_strategy_parse(strat, &parsed))
        FAIL("%scallback.strategy '%.40s' is not one of " MC_ROUTE_STRATEGY_LIST, at, strat);
    if (strategy)
        *strategy = strat;
    *url = u;
    return 0;
}

/* obj.callback (required): url or group (with path and strategy), method (default
 * POST, upper-cased), headers, body, timeoutMs. */
static int get_callback(json_t *obj, const char *at, mc_arena *a, mc_callback *c,
                        const char **strategy, char *why, size_t whylen)
{
    memset(c, 0, sizeof *c);
    char n[NAME_MAX_LEN];
    json_t *cb = json_object_get(obj, "callback");
    if (!cb || json_is_null(cb))
        FAIL("%scallback is required (an object with at least url), or kafkaTarget", at);
    if (!json_is_object(cb))
        FAIL("%scallback must be an object, not %s", at, mc_json_type_name(cb));
    json_t *url = json_object_get(cb, "url"), *group = json_object_get(cb, "group");
    bool has_url = url && !json_is_null(url), has_group = group && !json_is_null(group);
    if (has_url && has_group)
        FAIL("give %scallback.url or %scallback.group, not both", at, at);
    if (!has_group)
        for (const char *const *k = (const char *const[]){"path", "strategy", NULL}; *k; k++) {
            json_t *v = json_object_get(cb, *k);
            if (v && !json_is_null(v))
                FAIL("%scallback.%s is for a group: give %scallback.group", at, *k, at);
        }
    const char *method, *body;
    if ((has_group ? get_group(cb, at, a, &c->url, strategy, why, whylen)
                   : mc_json_get_string(cb, "url", at_name(n, at, "callback.url"), true,
                                        MC_MAX_URL_LEN, a, &c->url, why, whylen)) ||
        mc_json_get_string(cb, "method", at_name(n, at, "callback.method"), false, 16, a, &method,
                           why, whylen) ||
        mc_json_get_string(cb, "body", at_name(n, at, "callback.body"), false, SIZE_MAX, a, &body,
                           why, whylen) ||
        mc_json_get_map(cb, "headers", at_name(n, at, "callback.headers"), true, a, &c->headers,
                        &c->n_headers, why, whylen))
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
    if (mc_json_get_int(cb, "timeoutMs", at_name(n, at, "callback.timeoutMs"), 0, MC_MAX_TIMEOUT_MS,
                        &present, &timeout, why, whylen))
        return -1;
    c->timeout_ms = (int32_t)timeout;
    return 0;
}

/* One of a pair of fields giving the same bytes as text or as base64
 * (kafkaTarget.key / keyBase64): *has false when neither is there. */
static int get_bytes(json_t *obj, const char *key, const char *key_b64, const char *name,
                     const char *name_b64, mc_arena *a, const uint8_t **out, size_t *n_out,
                     bool *has, char *why, size_t whylen)
{
    *out = NULL;
    *n_out = 0;
    *has = false;
    json_t *text = json_object_get(obj, key), *b64 = json_object_get(obj, key_b64);
    bool has_text = text && !json_is_null(text), has_b64 = b64 && !json_is_null(b64);
    if (has_text && has_b64)
        FAIL("give %s or %s, not both", name, name_b64);
    if (has_text) {
        const char *s;
        if (mc_json_get_string(obj, key, name, false, SIZE_MAX, a, &s, why, whylen))
            return -1;
        *out = (const uint8_t *)s;
        *n_out = json_string_length(text);
        *has = true;
    } else if (has_b64) {
        if (!json_is_string(b64))
            FAIL("%s must be a string, not %s", name_b64, mc_json_type_name(b64));
        size_t len = json_string_length(b64), cap = MC_BASE64_DECODED_MAX(len) + 1;
        uint8_t *bytes = mc_arena_alloc(a, cap);
        if (!bytes)
            FAIL("out of memory");
        if (mc_base64_decode(json_string_value(b64), len, bytes, cap, n_out) != 0)
            FAIL("%s is not standard base64 (RFC 4648: A-Z a-z 0-9 + /, '=' padding)", name_b64);
        *out = bytes;
        *has = true;
    }
    return 0;
}

/* obj.kafkaTarget (present): the record to deliver instead of calling.
 * Header values are UTF-8 (jansson's strings are); the names are free text
 * as Kafka allows, but not empty, and not the two mooncake adds to every
 * delivered record (a consumer would see them twice). */
static int get_kafka_target(json_t *k, const char *at, mc_arena *a, mc_kafka_target *kt, char *why,
                            size_t whylen)
{
    char n[NAME_MAX_LEN], n64[NAME_MAX_LEN];
    if (!json_is_object(k))
        FAIL("%skafkaTarget must be an object, not %s", at, mc_json_type_name(k));
    if (mc_json_get_string(k, "topic", at_name(n, at, "kafkaTarget.topic"), true, MC_TOPIC_NAME_MAX,
                           a, &kt->topic, why, whylen) ||
        get_bytes(k, "key", "keyBase64", at_name(n, at, "kafkaTarget.key"),
                  at_name(n64, at, "kafkaTarget.keyBase64"), a, &kt->key, &kt->key_len,
                  &kt->has_key, why, whylen) ||
        get_bytes(k, "value", "valueBase64", at_name(n, at, "kafkaTarget.value"),
                  at_name(n64, at, "kafkaTarget.valueBase64"), a, &kt->value, &kt->value_len,
                  &kt->has_value, why, whylen) ||
        mc_json_get_map(k, "headers", at_name(n, at, "kafkaTarget.headers"), false, a, &kt->headers,
                        &kt->n_headers, why, whylen))
        return -1;
    if (!mc_topic_name_ok(kt->topic))
        FAIL("%skafkaTarget.topic '%.100s' is not a Kafka topic name (1 to %d of letters, "
             "digits, . _ -)",
             at, kt->topic, MC_TOPIC_NAME_MAX);
    if (kt->n_headers > MC_JSON_MAX_HEADERS)
        FAIL("%skafkaTarget.headers has %zu entries, more than %d", at, kt->n_headers,
             MC_JSON_MAX_HEADERS);
    for (size_t i = 0; i < kt->n_headers; i++) {
        const char *name = kt->headers[i].key;
        if (!name[0])
            FAIL("%skafkaTarget.headers has an empty name", at);
        if (strcmp(name, MC_TARGET_TASK_HEADER) == 0 || strcmp(name, MC_TARGET_DUE_HEADER) == 0)
            FAIL("%skafkaTarget.headers: '%s' is set by mooncake and cannot be given", at, name);
    }
    return 0;
}

/* obj.latePolicy (optional): both fields required, so a policy never
 * means something its sender did not write. */
static int get_late_policy(json_t *obj, const char *at, bool *has, mc_late_policy *lp, char *why,
                           size_t whylen)
{
    *has = false;
    char n[NAME_MAX_LEN];
    json_t *p = json_object_get(obj, "latePolicy");
    if (!p || json_is_null(p))
        return 0;
    if (!json_is_object(p))
        FAIL("%slatePolicy must be an object, not %s", at, mc_json_type_name(p));
    bool present;
    if (mc_json_get_int(p, "maxLateMs", at_name(n, at, "latePolicy.maxLateMs"), 0, MC_MAX_LATE_MS,
                        &present, &lp->max_late_ms, why, whylen))
        return -1;
    if (!present)
        FAIL("%slatePolicy.maxLateMs is required (milliseconds, 0 or more)", at);
    json_t *act = json_object_get(p, "action");
    if (!act || json_is_null(act))
        FAIL("%slatePolicy.action is required (RUN, DROP or DEAD)", at);
    if (!json_is_string(act))
        FAIL("%slatePolicy.action must be a string, not %s", at, mc_json_type_name(act));
    const char *a = json_string_value(act);
    if (strcmp(a, "RUN") == 0)
        lp->action = MC_LATE_RUN;
    else if (strcmp(a, "DROP") == 0)
        lp->action = MC_LATE_DROP;
    else if (strcmp(a, "DEAD") == 0)
        lp->action = MC_LATE_DEAD;
    else
        FAIL("%slatePolicy.action '%.40s' is not RUN, DROP or DEAD", at, a);
    *has = true;
    return 0;
}

int mc_json_get_action(json_t *obj, const char *at, const mc_retry_policy *def, mc_arena *a,
                       const mc_json_action *out, char *why, size_t whylen)
{
    *out->has_kafka_target = false;
    if (out->strategy)
        *out->strategy = NULL;
    json_t *k = json_object_get(obj, "kafkaTarget"), *cb = json_object_get(obj, "callback");
    if (!k || json_is_null(k)) {
        if (get_callback(obj, at, a, out->callback, out->strategy, why, whylen))
            return -1;
    } else {
        /* callback left out: its url "", which is how a task says it
         * delivers rather than calls. */
        if (cb && !json_is_null(cb))
            FAIL("give %scallback or %skafkaTarget, not both: a task either calls or delivers", at,
                 at);
        *out->callback = (mc_callback){.url = "", .method = "POST"};
        if (get_kafka_target(k, at, a, out->kafka_target, why, whylen))
            return -1;
        *out->has_kafka_target = true;
    }
    return get_late_policy(obj, at, out->has_late_policy, out->late_policy, why, whylen) ||
                   get_retry(obj, at, def, out->has_retry, out->retry, why, whylen)
               ? -1
               : 0;
}

/* One follow-up, obj = onSuccess[i], at = "onSuccess[i].". */
static int get_follow_up(json_t *obj, const char *at, int64_t max_delay_ms,
                         const mc_retry_policy *def, mc_arena *a, mc_follow_up *f, char *why,
                         size_t whylen)
{
    char n[NAME_MAX_LEN];
    if (!json_is_object(obj))
        FAIL("%.*s must be an object, not %s", (int)strlen(at) - 1, at, mc_json_type_name(obj));
    json_t *nested = json_object_get(obj, "onSuccess");
    if (nested && !json_is_null(nested))
        FAIL("%sonSuccess: a follow-up has no follow-ups of its own (chain them from the task "
             "that succeeds)",
             at);
    const char *id;
    bool present;
    if (mc_json_get_string(obj, "uuid", at_name(n, at, "uuid"), false, MC_JSON_MAX_ID_LEN, a, &id,
                           why, whylen) ||
        mc_json_get_int(obj, "delayMs", at_name(n, at, "delayMs"), 0, max_delay_ms, &present,
                        &f->delay_ms, why, whylen))
        return -1;
    if (id && !id[0])
        FAIL("%suuid is empty (leave it out for <uuid>.then<N>)", at);
    f->task_id = id ? id : "";
    mc_json_action act = {&f->callback, &f->has_kafka_target, &f->kafka_target, &f->has_retry,
                          &f->retry,    &f->has_late_policy,  &f->late_policy,  NULL};
    return mc_json_get_action(obj, at, def, a, &act, why, whylen);
}

int mc_json_route_metadata(mc_arena *a, const char *strategy, const mc_kv **metadata, size_t *n,
                           char *why, size_t whylen)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*metadata)[i].key, MC_ROUTE_METADATA) == 0)
            FAIL("metadata.%s is reserved (use callback.strategy)", MC_ROUTE_METADATA);
    if (!strategy)
        return 0;
    mc_kv *kv = mc_arena_alloc(a, (*n + 1) * sizeof *kv);
    if (!kv)
        FAIL("out of memory");
    if (*n)
        memcpy(kv, *metadata, *n * sizeof *kv);
    kv[*n] = (mc_kv){MC_ROUTE_METADATA, strategy};
    *metadata = kv;
    (*n)++;
    return 0;
}

void mc_json_callback_group(json_t *cb, const mc_kv *metadata, size_t n_metadata)
{
    const char *url = json_string_value(json_object_get(cb, "url"));
    char name[MC_GROUP_NAME_MAX + 1];
    const char *path;
    if (url && mc_group_url_parse(url, name, sizeof name, &path)) {
        json_object_set_new(cb, "group", json_string(name));
        json_object_set_new(cb, "path", json_string(path));
        json_object_del(cb, "url");
    }
    for (size_t i = 0; json_object_get(cb, "group") && i < n_metadata; i++)
        if (strcmp(metadata[i].key, MC_ROUTE_METADATA) == 0)
            json_object_set_new(cb, "strategy", json_string(metadata[i].value));
}

json_t *mc_json_api_metadata(const mc_kv *kv, size_t n)
{
    json_t *o = mc_json_kv_object(kv, n);
    json_object_del(o, MC_ROUTE_METADATA);
    return o;
}

int mc_json_get_follow_ups(json_t *obj, int64_t max_delay_ms, const mc_retry_policy *def,
                           mc_arena *a, const mc_follow_up **out, size_t *n_out, char *why,
                           size_t whylen)
{
    *out = NULL;
    *n_out = 0;
    json_t *arr = json_object_get(obj, "onSuccess");
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr))
        FAIL("onSuccess must be an array of tasks, not %s", mc_json_type_name(arr));
    size_t n = json_array_size(arr);
    if (n > MC_MAX_FOLLOW_UPS)
        FAIL("onSuccess has %zu tasks, more than %d", n, MC_MAX_FOLLOW_UPS);
    if (n == 0)
        return 0;
    mc_follow_up *f = mc_arena_alloc(a, n * sizeof *f);
    if (!f)
        FAIL("out of memory");
    memset(f, 0, n * sizeof *f);
    for (size_t i = 0; i < n; i++) {
        char at[32];
        snprintf(at, sizeof at, "onSuccess[%zu].", i);
        if (get_follow_up(json_array_get(arr, i), at, max_delay_ms, def, a, &f[i], why, whylen))
            return -1;
    }
    *out = f;
    *n_out = n;
    return 0;
}

/* The optional orderingKey of a submit or cancel body: NULL when absent or
 * null, else a key the jobs role takes for a chain. */
static int get_ordering_key(json_t *root, mc_arena *a, const char **out, char *why, size_t whylen)
{
    if (mc_json_get_string(root, "orderingKey", "orderingKey", false, MC_MAX_ORDERING_KEY_LEN, a,
                           out, why, whylen))
        return -1;
    return *out && !mc_ordering_key_ok(*out, "orderingKey", why, whylen) ? -1 : 0;
}

int mc_task_from_json(const char *body, size_t len, const mc_task_json_options *o, mc_arena *arena,
                      mc_task *out, const char **ordering_key, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    *ordering_key = NULL;
    json_t *root = mc_json_parse_object(body, len, why, whylen);
    if (!root)
        return -1;
    int rc = -1;
    const char *uuid, *strategy = NULL;
    if (mc_json_get_string(root, "appId", "appId", true, MC_JSON_MAX_ID_LEN, arena, &out->app_id,
                           why, whylen) ||
        mc_json_get_string(root, "uuid", "uuid", false, MC_JSON_MAX_ID_LEN, arena, &uuid, why,
                           whylen) ||
        get_ordering_key(root, arena, ordering_key, why, whylen) ||
        get_due(root, o, out, why, whylen) ||
        mc_json_get_action(root, "", &o->retry_defaults, arena,
                           &(mc_json_action){&out->callback, &out->has_kafka_target,
                                             &out->kafka_target, &out->has_retry, &out->retry,
                                             &out->has_late_policy, &out->late_policy, &strategy},
                           why, whylen) ||
        mc_json_get_follow_ups(root, o->max_due_ms, &o->retry_defaults, arena, &out->on_success,
                               &out->n_on_success, why, whylen) ||
        mc_json_get_map(root, "metadata", "metadata", false, arena, &out->metadata,
                        &out->n_metadata, why, whylen))
        goto done;
    for (size_t i = 0; i < out->n_metadata; i++)
        if (mc_chain_metadata_reserved(out->metadata[i].key)) {
            /* Set by mooncake on a chain's tasks, which its relay trusts. */
            snprintf(why, whylen, "metadata.%s is reserved (use orderingKey)",
                     out->metadata[i].key);
            goto done;
        } else if (mc_broadcast_metadata_reserved(out->metadata[i].key)) {
            /* Set by the executor on a broadcast's shards. */
            snprintf(why, whylen, "metadata.%s is reserved (set on a broadcast's shards)",
                     out->metadata[i].key);
            goto done;
        }
    if (mc_json_route_metadata(arena, strategy, &out->metadata, &out->n_metadata, why, whylen))
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
                        mc_cancel *out, const char **ordering_key, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    *ordering_key = NULL;
    json_t *root = mc_json_parse_object(body, len, why, whylen);
    if (!root)
        return -1;
    int rc = -1;
    if (mc_json_get_string(root, "appId", "appId", true, MC_JSON_MAX_ID_LEN, arena, &out->app_id,
                           why, whylen) ||
        mc_json_get_string(root, "uuid", "uuid", true, MC_JSON_MAX_ID_LEN, arena, &out->task_id,
                           why, whylen) ||
        get_ordering_key(root, arena, ordering_key, why, whylen))
        goto done;
    out->requested_at = now_ms;
    if (!mc_task_ids_ok(out->app_id, out->task_id, &mc_task_json_names, why, whylen))
        goto done;
    rc = 0;
done:
    json_decref(root);
    return rc;
}

int mc_encode_task_command(const mc_command *cmd, const char *ordering_key, mc_buf *out)
{
    if (!ordering_key)
        return mc_encode_command(cmd, out);
    /* The jobs role keeps the chain; the record is keyed by it, so that every
     * link of a chain meets in one partition of job-commands. */
    mc_job_command jc = {0};
    if (cmd->kind == MC_CMD_SUBMIT) {
        jc.kind = MC_JOBCMD_ADD_LINK;
        jc.add_link = (mc_add_link){.ordering_key = ordering_key, .task = cmd->submit};
    } else {
        jc.kind = MC_JOBCMD_CANCEL_LINK;
        jc.cancel_link = (mc_cancel_link){.app_id = cmd->cancel.app_id,
                                          .ordering_key = ordering_key,
                                          .task_id = cmd->cancel.task_id,
                                          .requested_at = cmd->cancel.requested_at};
    }
    return mc_encode_job_command(&jc, out);
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

const char *mc_late_action_name(mc_late_action a)
{
    switch (a) {
    case MC_LATE_RUN:
        return "RUN";
    case MC_LATE_DROP:
        return "DROP";
    case MC_LATE_DEAD:
        return "DEAD";
    }
    return "UNKNOWN";
}

json_t *mc_late_policy_to_json(bool has_policy, const mc_late_policy *p, bool api_names)
{
    if (!has_policy)
        return json_null();
    return json_pack("{s:I, s:s}", api_names ? "maxLateMs" : "max_late_ms",
                     (json_int_t)p->max_late_ms, "action", mc_late_action_name(p->action));
}

/* Sets the bytes of a key or value the API's way (name, or name + "Base64"
 * when not UTF-8). */
static void set_api_bytes(json_t *obj, const char *name, const uint8_t *p, size_t n)
{
    const char *bytes = p ? (const char *)p : "";
    /* NULL: not UTF-8; a NUL byte would not parse back (JSON_ALLOW_NUL is
     * off), so such bytes go as base64 too. */
    json_t *text = memchr(bytes, 0, n) ? NULL : json_stringn(bytes, n);
    if (text) {
        json_object_set_new(obj, name, text);
        return;
    }
    char b64name[32];
    snprintf(b64name, sizeof b64name, "%sBase64", name);
    json_object_set_new(obj, b64name, mc_json_base64((const uint8_t *)bytes, n));
}

json_t *mc_kafka_target_to_json(const mc_kafka_target *k, bool api_names)
{
    json_t *j = json_pack("{s:s, s:o}", "topic", k->topic, "headers",
                          mc_json_kv_object(k->headers, k->n_headers));
    if (!j)
        return NULL;
    if (api_names) {
        /* As a body gives it: a missing value is a tombstone. */
        if (k->has_key)
            set_api_bytes(j, "key", k->key, k->key_len);
        if (k->has_value)
            set_api_bytes(j, "value", k->value, k->value_len);
        return j;
    }
    mc_json_set_bytes(j, "key",
                      k->has_key ? (const void *)(k->key ? k->key : (const uint8_t *)"") : NULL,
                      k->key_len);
    mc_json_set_bytes(
        j, "value", k->has_value ? (const void *)(k->value ? k->value : (const uint8_t *)"") : NULL,
        k->value_len);
    return j;
}

json_t *mc_follow_up_to_json(const mc_follow_up *f, const char *id, json_t *does, bool api_names)
{
    json_t *j = json_object();
    if (!j) {
        json_decref(does);
        return NULL;
    }
    if (id)
        json_object_set_new(j, api_names ? "uuid" : "task_id", json_string(id));
    json_object_set_new(j, api_names ? "delayMs" : "delay_ms", json_integer(f->delay_ms));
    json_object_set_new(
        j, f->has_kafka_target ? (api_names ? "kafkaTarget" : "kafka_target") : "callback", does);
    json_object_set_new(j, "retry", mc_retry_to_json(f->has_retry, &f->retry, api_names));
    if (f->has_late_policy)
        json_object_set_new(j, api_names ? "latePolicy" : "late_policy",
                            mc_late_policy_to_json(true, &f->late_policy, api_names));
    return j;
}

json_t *mc_follow_ups_to_json(const mc_follow_up *f, size_t n, bool api_names)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++) {
        json_t *does = f[i].has_kafka_target
                           ? mc_kafka_target_to_json(&f[i].kafka_target, api_names)
                           : mc_callback_to_json(&f[i].callback, api_names);
        if (api_names && !f[i].has_kafka_target)
            mc_json_callback_group(does, NULL, 0);
        /* The API leaves out an id it derives; the schema shows the field. */
        const char *id = api_names && !f[i].task_id[0] ? NULL : f[i].task_id;
        json_array_append_new(arr, mc_follow_up_to_json(&f[i], id, does, api_names));
    }
    return arr;
}

json_t *mc_task_to_json(const mc_task *t)
{
    json_t *j = json_pack("{s:s, s:s, s:I, s:o, s:o, s:I, s:I, s:o}", "app_id", t->app_id,
                          "task_id", t->task_id, "due_at", (json_int_t)t->due_at, "callback",
                          mc_callback_to_json(&t->callback, false), "retry",
                          mc_retry_to_json(t->has_retry, &t->retry, false), "attempt",
                          (json_int_t)t->attempt, "created_at", (json_int_t)t->created_at,
                          "metadata", mc_json_kv_object(t->metadata, t->n_metadata));
    /* Only when set, so what tasks without them print is as before. */
    if (j && t->has_kafka_target)
        json_object_set_new(j, "kafka_target", mc_kafka_target_to_json(&t->kafka_target, false));
    if (j && t->has_late_policy)
        json_object_set_new(j, "late_policy", mc_late_policy_to_json(true, &t->late_policy, false));
    if (j && t->n_on_success)
        json_object_set_new(j, "on_success",
                            mc_follow_ups_to_json(t->on_success, t->n_on_success, false));
    return j;
}
