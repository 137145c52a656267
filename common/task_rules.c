/* Task validation shared by the router and the gateway; see task_rules.h. */
#include "task_rules.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "endpoint_defs.h"
#include "endpoints.h"

const mc_task_field_names mc_task_avro_names = {
    .app_id = "app_id",
    .task_id = "task_id",
    .due_at = "due_at",
    .url = "callback.url",
    .method = "callback.method",
    .timeout_ms = "callback.timeout_ms",
    .attempt = "attempt",
    .max_attempts = "retry.max_attempts",
    .initial_backoff_ms = "initial_backoff_ms",
    .multiplier = "retry.multiplier",
    .max_backoff_ms = "max_backoff_ms",
    .kafka_target = "kafka_target",
    .max_late_ms = "late_policy.max_late_ms",
    .on_success = "on_success",
    .follow_up_id = "task_id",
    .delay_ms = "delay_ms",
};

static bool method_ok(const char *m)
{
    static const char *const methods[] = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (strcmp(m, methods[i]) == 0)
            return true;
    return false;
}

bool mc_task_ids_ok(const char *app_id, const char *task_id, const mc_task_field_names *n,
                    char *why, size_t whylen)
{
    if (!app_id[0]) {
        snprintf(why, whylen, "%s is empty", n->app_id);
        return false;
    }
    if (strchr(app_id, '/')) {
        snprintf(why, whylen, "%s '%.100s' contains '/'", n->app_id, app_id);
        return false;
    }
    if (!task_id[0]) {
        snprintf(why, whylen, "%s is empty", n->task_id);
        return false;
    }
    if (strlen(app_id) + 1 + strlen(task_id) >= MC_MAX_TASK_KEY_LEN) {
        snprintf(why, whylen, "%s/%s is longer than %d bytes", n->app_id, n->task_id,
                 MC_MAX_TASK_KEY_LEN - 1);
        return false;
    }
    return true;
}

/* What a task or a follow-up calls or delivers, and how: the parts both
 * have, checked by the same rules. `at` prefixes every field name in the
 * messages ("" for the task, "on_success[2]." for a follow-up). */
typedef struct what_to_do {
    const mc_callback *callback;
    bool has_kafka_target;
    const mc_kafka_target *kafka_target;
    bool has_retry;
    const mc_retry_policy *retry;
    bool has_late_policy;
    const mc_late_policy *late_policy;
} what_to_do;

#define NAME(n, field, schema_name) ((n)->field ? (n)->field : (schema_name))

/* A Kafka target's own fields (the allow-list is kafka_targets.h's):
 * header names, and a callback left empty so the task says one thing. */
static bool kafka_target_ok(const what_to_do *d, const char *at, const mc_task_field_names *n,
                            char *why, size_t whylen)
{
    const char *field = NAME(n, kafka_target, "kafka_target");
    if (d->callback->url[0]) {
        snprintf(why, whylen, "%s%s is set and so is %s%s: a task either calls or delivers", at,
                 field, at, n->url);
        return false;
    }
    if (!d->kafka_target->topic[0]) {
        snprintf(why, whylen, "%s%s.topic is empty", at, field);
        return false;
    }
    for (size_t i = 0; i < d->kafka_target->n_headers; i++)
        if (!d->kafka_target->headers[i].key[0]) {
            snprintf(why, whylen, "%s%s.headers has an empty name", at, field);
            return false;
        }
    return true;
}

static bool late_policy_ok(const what_to_do *d, const char *at, const mc_task_field_names *n,
                           char *why, size_t whylen)
{
    if (!d->has_late_policy)
        return true;
    if (d->late_policy->max_late_ms < 0 || d->late_policy->max_late_ms > MC_MAX_LATE_MS) {
        snprintf(why, whylen, "%s%s %lld is outside [0, %lld]", at,
                 NAME(n, max_late_ms, "late_policy.max_late_ms"),
                 (long long)d->late_policy->max_late_ms, (long long)MC_MAX_LATE_MS);
        return false;
    }
    return true;
}

/* The HTTP callback's fields. */
static bool callback_ok(const what_to_do *d, const char *at, const mc_task_field_names *n,
                        char *why, size_t whylen)
{
    const char *url = d->callback->url;
    size_t url_len = strlen(url);
    if (url_len == 0) {
        snprintf(why, whylen, "%s%s is empty", at, n->url);
        return false;
    }
    if (url_len > MC_MAX_URL_LEN) {
        snprintf(why, whylen, "%s%s is %zu bytes, more than %d", at, n->url, url_len,
                 MC_MAX_URL_LEN);
        return false;
    }
    char group[MC_GROUP_NAME_MAX + 1];
    const char *path;
    bool is_group = strncmp(url, "group://", 8) == 0;
    if (is_group && !mc_group_url_parse(url, group, sizeof group, &path)) {
        snprintf(why, whylen,
                 "%s%s '%.100s' does not name a group: group://NAME/PATH, NAME 1 to %d of "
                 "A-Z a-z 0-9 . _ -",
                 at, n->url, url, MC_GROUP_NAME_MAX);
        return false;
    }
    if (!is_group && strncasecmp(url, "http://", 7) != 0 && strncasecmp(url, "https://", 8) != 0) {
        snprintf(why, whylen, "%s%s '%.100s' is not http://, https:// or group://", at, n->url,
                 url);
        return false;
    }
    const char *host = strstr(url, "://") + 3;
    if (!is_group && (!*host || *host == '/' || *host == ':' || *host == '?')) {
        snprintf(why, whylen, "%s%s '%.100s' has no host", at, n->url, url);
        return false;
    }
    if (!method_ok(d->callback->method)) {
        snprintf(why, whylen, "%s%s '%.20s' is not one of GET, POST, PUT, PATCH, DELETE, HEAD", at,
                 n->method, d->callback->method);
        return false;
    }
    if (d->callback->timeout_ms < 0 || d->callback->timeout_ms > MC_MAX_TIMEOUT_MS) {
        snprintf(why, whylen, "%s%s %d is outside [0, %d] (0: default)", at, n->timeout_ms,
                 d->callback->timeout_ms, MC_MAX_TIMEOUT_MS);
        return false;
    }
    return true;
}

static bool retry_ok(const what_to_do *d, const char *at, const mc_task_field_names *n, char *why,
                     size_t whylen)
{
    if (!d->has_retry)
        return true;
    const mc_retry_policy *p = d->retry;
    if (p->max_attempts < 1 || p->max_attempts > MC_MAX_ATTEMPTS) {
        snprintf(why, whylen, "%s%s %d is outside [1, %d]", at, n->max_attempts, p->max_attempts,
                 MC_MAX_ATTEMPTS);
        return false;
    }
    /* The retry processor refuses a policy with no backoff at all (and
     * would silently use its defaults), so it is refused here, visibly. */
    if (p->initial_backoff_ms < 1 || p->max_backoff_ms < p->initial_backoff_ms) {
        snprintf(why, whylen, "%sretry backoff: need 1 <= %s (%lld) <= %s (%lld)", at,
                 n->initial_backoff_ms, (long long)p->initial_backoff_ms, n->max_backoff_ms,
                 (long long)p->max_backoff_ms);
        return false;
    }
    if (!isfinite(p->multiplier) || p->multiplier < 1.0 || p->multiplier > 100.0) {
        snprintf(why, whylen, "%s%s %g is outside [1, 100]", at, n->multiplier, p->multiplier);
        return false;
    }
    return true;
}

static bool what_to_do_ok(const what_to_do *d, const char *at, const mc_task_field_names *n,
                          char *why, size_t whylen)
{
    return (d->has_kafka_target ? kafka_target_ok(d, at, n, why, whylen)
                                : callback_ok(d, at, n, why, whylen)) &&
           retry_ok(d, at, n, why, whylen) && late_policy_ok(d, at, n, why, whylen);
}

static what_to_do task_does(const mc_task *t)
{
    return (what_to_do){&t->callback, t->has_kafka_target, &t->kafka_target, t->has_retry,
                        &t->retry,    t->has_late_policy,  &t->late_policy};
}

static what_to_do follow_up_does(const mc_follow_up *f)
{
    return (what_to_do){&f->callback, f->has_kafka_target, &f->kafka_target, f->has_retry,
                        &f->retry,    f->has_late_policy,  &f->late_policy};
}

/* The follow-ups: how many, their ids (each makes a task key of the app),
 * delays, and what each does. */
static bool follow_ups_ok(const mc_task *t, int64_t max_due_ms, const mc_task_field_names *n,
                          char *why, size_t whylen)
{
    const char *field = NAME(n, on_success, "on_success");
    if (t->n_on_success > MC_MAX_FOLLOW_UPS) {
        snprintf(why, whylen, "%s has %zu tasks, more than %d", field, t->n_on_success,
                 MC_MAX_FOLLOW_UPS);
        return false;
    }
    for (size_t i = 0; i < t->n_on_success; i++) {
        const mc_follow_up *f = &t->on_success[i];
        char at[64];
        snprintf(at, sizeof at, "%s[%zu].", field, i);
        /* The id it takes, its own or derived from the task's: a longer one
         * could not be told from its siblings. */
        char id[8];
        if (mc_follow_up_id(t, i, id, sizeof id) > MC_MAX_FOLLOW_UP_ID_LEN) {
            snprintf(why, whylen, "%s%s%s is longer than %d bytes", at,
                     NAME(n, follow_up_id, "task_id"), f->task_id[0] ? "" : " it derives",
                     MC_MAX_FOLLOW_UP_ID_LEN);
            return false;
        }
        if (f->delay_ms < 0 || f->delay_ms > max_due_ms) {
            snprintf(why, whylen, "%s%s %lld is outside [0, %lld]", at,
                     NAME(n, delay_ms, "delay_ms"), (long long)f->delay_ms, (long long)max_due_ms);
            return false;
        }
        what_to_do d = follow_up_does(f);
        if (!what_to_do_ok(&d, at, n, why, whylen))
            return false;
    }
    return true;
}

/* The metadata mooncake.route: a strategy's name, and only on a call to a group. */
static bool route_ok(const mc_task *t, const mc_task_field_names *n, char *why, size_t whylen)
{
    const char *field = NAME(n, route, "metadata." MC_ROUTE_METADATA);
    for (size_t i = 0; i < t->n_metadata; i++) {
        if (strcmp(t->metadata[i].key, MC_ROUTE_METADATA) != 0)
            continue;
        mc_route_strategy s;
        if (!mc_route_strategy_parse(t->metadata[i].value, &s)) {
            snprintf(why, whylen, "%s '%.40s' is not one of " MC_ROUTE_STRATEGY_LIST, field,
                     t->metadata[i].value);
            return false;
        }
        if (t->has_kafka_target || strncmp(t->callback.url, "group://", 8) != 0) {
            snprintf(why, whylen, "%s is set but %s names no group (group://NAME/PATH)", field,
                     n->url);
            return false;
        }
    }
    return true;
}

bool mc_task_ok(const mc_task *t, int64_t now, int64_t max_due_ms, const mc_task_field_names *n,
                char *why, size_t whylen)
{
    if (!mc_task_ids_ok(t->app_id, t->task_id, n, why, whylen))
        return false;
    what_to_do d = task_does(t);
    if (!what_to_do_ok(&d, "", n, why, whylen) || !follow_ups_ok(t, max_due_ms, n, why, whylen))
        return false;
    if (t->due_at < MC_MIN_DUE_AT_MS) {
        snprintf(why, whylen,
                 "%s %lld is before 2000-01-01 (epoch milliseconds expected, not seconds)",
                 n->due_at, (long long)t->due_at);
        return false;
    }
    if (t->due_at > now + max_due_ms) {
        snprintf(why, whylen, "%s %lld is more than %lld ms in the future", n->due_at,
                 (long long)t->due_at, (long long)max_due_ms);
        return false;
    }
    if (t->attempt < 1 || t->attempt > MC_MAX_ATTEMPTS) {
        snprintf(why, whylen, "%s %d is outside [1, %d]", n->attempt, t->attempt, MC_MAX_ATTEMPTS);
        return false;
    }
    return route_ok(t, n, why, whylen);
}

size_t mc_follow_up_id(const mc_task *t, size_t i, char *buf, size_t buflen)
{
    const char *id = t->on_success[i].task_id;
    int n = id[0] ? snprintf(buf, buflen, "%s", id)
                  : snprintf(buf, buflen, "%s.then%zu", t->task_id, i + 1);
    return n < 0 ? 0 : (size_t)n;
}

bool mc_header_name_ok(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s <= ' ' || *s >= 127 || strchr("\"(),/:;<=>?@[\\]{}", *s))
            return false;
    return true;
}

bool mc_header_value_ok(const char *v)
{
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if ((*p < ' ' && *p != '\t') || *p == 127)
            return false;
    return true;
}

bool mc_header_reserved(const char *name)
{
    static const char *const reserved[] = {"idempotency-key",
                                           "webhook-id",
                                           "webhook-timestamp",
                                           "webhook-signature",
                                           "host",
                                           "content-length",
                                           "transfer-encoding",
                                           "connection",
                                           "expect",
                                           "te",
                                           "upgrade"};
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (strcasecmp(name, reserved[i]) == 0)
            return true;
    return false;
}

/* The record key must be exactly app_id/task_id: the key picks the partition,
 * and a cancel must land where its submit did. */
bool mc_record_keyed_by(const mc_record *m, const char *app_id, const char *task_id, char *why,
                        size_t whylen)
{
    char key[MC_MAX_TASK_KEY_LEN];
    size_t n = mc_task_key(app_id, task_id, key, sizeof key);
    if (n >= sizeof key) {
        snprintf(why, whylen, "app_id/task_id is longer than %zu bytes", sizeof key - 1);
        return false;
    }
    if (!m->key || m->key_len != n || memcmp(m->key, key, n) != 0) {
        snprintf(why, whylen, "record key '%.*s' is not app_id/task_id '%.200s'",
                 m->key ? (int)(m->key_len > 200 ? 200 : m->key_len) : 6,
                 m->key ? (const char *)m->key : "(none)", key);
        return false;
    }
    return true;
}
