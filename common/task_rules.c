/* Task validation shared by the router and the gateway; see task_rules.h. */
#include "task_rules.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

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
    return true;
}

/* A Kafka target's own fields (the allow-list is kafka_targets.h's):
 * header names, and a callback left empty so the task says one thing. */
static bool kafka_target_ok(const mc_task *t, const mc_task_field_names *n, char *why,
                            size_t whylen)
{
    const char *field = n->kafka_target ? n->kafka_target : "kafka_target";
    if (t->callback.url[0]) {
        snprintf(why, whylen, "%s is set and so is %s: a task either calls or delivers", field,
                 n->url);
        return false;
    }
    if (!t->kafka_target.topic[0]) {
        snprintf(why, whylen, "%s.topic is empty", field);
        return false;
    }
    for (size_t i = 0; i < t->kafka_target.n_headers; i++)
        if (!t->kafka_target.headers[i].key[0]) {
            snprintf(why, whylen, "%s.headers has an empty name", field);
            return false;
        }
    return true;
}

static bool late_policy_ok(const mc_task *t, const mc_task_field_names *n, char *why, size_t whylen)
{
    if (!t->has_late_policy)
        return true;
    if (t->late_policy.max_late_ms < 0 || t->late_policy.max_late_ms > MC_MAX_LATE_MS) {
        snprintf(why, whylen, "%s %lld is outside [0, %lld]",
                 n->max_late_ms ? n->max_late_ms : "late_policy.max_late_ms",
                 (long long)t->late_policy.max_late_ms, (long long)MC_MAX_LATE_MS);
        return false;
    }
    return true;
}

/* The HTTP callback's fields. */
static bool callback_ok(const mc_task *t, const mc_task_field_names *n, char *why, size_t whylen)
{
    const char *url = t->callback.url;
    size_t url_len = strlen(url);
    if (url_len == 0) {
        snprintf(why, whylen, "%s is empty", n->url);
        return false;
    }
    if (url_len > MC_MAX_URL_LEN) {
        snprintf(why, whylen, "%s is %zu bytes, more than %d", n->url, url_len, MC_MAX_URL_LEN);
        return false;
    }
    if (strncasecmp(url, "http://", 7) != 0 && strncasecmp(url, "https://", 8) != 0) {
        snprintf(why, whylen, "%s '%.100s' is not http:// or https://", n->url, url);
        return false;
    }
    const char *host = strstr(url, "://") + 3;
    if (!*host || *host == '/' || *host == ':' || *host == '?') {
        snprintf(why, whylen, "%s '%.100s' has no host", n->url, url);
        return false;
    }
    if (!method_ok(t->callback.method)) {
        snprintf(why, whylen, "%s '%.20s' is not one of GET, POST, PUT, PATCH, DELETE, HEAD",
                 n->method, t->callback.method);
        return false;
    }
    if (t->callback.timeout_ms < 0 || t->callback.timeout_ms > MC_MAX_TIMEOUT_MS) {
        snprintf(why, whylen, "%s %d is outside [0, %d] (0: default)", n->timeout_ms,
                 t->callback.timeout_ms, MC_MAX_TIMEOUT_MS);
        return false;
    }
    return true;
}

bool mc_task_ok(const mc_task *t, int64_t now, int64_t max_due_ms, const mc_task_field_names *n,
                char *why, size_t whylen)
{
    if (!mc_task_ids_ok(t->app_id, t->task_id, n, why, whylen))
        return false;
    if (!(t->has_kafka_target ? kafka_target_ok(t, n, why, whylen)
                              : callback_ok(t, n, why, whylen)) ||
        !late_policy_ok(t, n, why, whylen))
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
    if (t->has_retry) {
        const mc_retry_policy *p = &t->retry;
        if (p->max_attempts < 1 || p->max_attempts > MC_MAX_ATTEMPTS) {
            snprintf(why, whylen, "%s %d is outside [1, %d]", n->max_attempts, p->max_attempts,
                     MC_MAX_ATTEMPTS);
            return false;
        }
        /* The retry processor refuses a policy with no backoff at all (and
         * would silently use its defaults), so it is refused here, visibly. */
        if (p->initial_backoff_ms < 1 || p->max_backoff_ms < p->initial_backoff_ms) {
            snprintf(why, whylen, "retry backoff: need 1 <= %s (%lld) <= %s (%lld)",
                     n->initial_backoff_ms, (long long)p->initial_backoff_ms, n->max_backoff_ms,
                     (long long)p->max_backoff_ms);
            return false;
        }
        if (!isfinite(p->multiplier) || p->multiplier < 1.0 || p->multiplier > 100.0) {
            snprintf(why, whylen, "%s %g is outside [1, 100]", n->multiplier, p->multiplier);
            return false;
        }
    }
    return true;
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
    char key[1024];
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
