/* One task as the view keeps it (see view_task.h): the fold, the state, the
 * answer and the changelog bytes. */
#include "view_task.h"

#include <stdlib.h>
#include <string.h>

#include "redact.h"
#include "task_json.h"

mc_view_task *mc_view_task_new(const void *key, size_t key_len)
{
    mc_view_task *t = calloc(1, sizeof *t + key_len);
    if (!t)
        return NULL;
    memcpy(t->key, key, key_len);
    t->node.key_len = (uint32_t)key_len;
    t->node.hash = mc_keymap_hash(key, key_len);
    t->command = MC_VIEW_NONE;
    t->command_wheel_at = -1;
    t->version = MC_VIEW_NONE;
    return t;
}

static void call_clear(mc_view_call *c)
{
    free(c->error);
    free(c->body);
    memset(c, 0, sizeof *c);
}

static void clear_version(mc_view_task *t)
{
    for (uint32_t i = 0; i < t->n_calls; i++)
        call_clear(&t->calls[i]);
    free(t->calls);
    t->calls = NULL;
    t->n_calls = 0;
    free(t->task);
    t->task = NULL;
    t->task_len = 0;
    free(t->rejected);
    t->rejected = NULL;
    t->route = MC_VIEW_ROUTE_NONE;
    t->scheduled = 0;
    t->scheduled_due = 0;
    t->fired = 0;
    t->fired_at = 0;
    t->due_at = 0;
}

void mc_view_task_free(mc_view_task *t)
{
    if (!t)
        return;
    clear_version(t);
    free(t->older);
    free(t);
}

size_t mc_view_task_extra_bytes(const mc_view_task *t)
{
    size_t n = t->node.key_len + t->task_len + (t->rejected ? strlen(t->rejected) + 1 : 0) +
               t->n_calls * sizeof *t->calls + t->n_older * sizeof *t->older;
    for (uint32_t i = 0; i < t->n_calls; i++)
        n += strlen(t->calls[i].error) + 1 + t->calls[i].body_len;
    return n;
}

/* ---- folding ------------------------------------------------------------------ */

static mc_view_older *older_of(mc_view_task *t, int64_t v)
{
    for (uint32_t i = 0; i < t->n_older; i++)
        if (t->older[i].version == v)
            return &t->older[i];
    return NULL;
}

/* The newest version moves to the older ones: command `by` replaced it. */
static void retire(mc_view_task *t, int64_t by)
{
    if (t->version == MC_VIEW_NONE)
        return;
    if (t->n_older == MC_VIEW_MAX_OLDER) {
        memmove(&t->older[0], &t->older[1], (MC_VIEW_MAX_OLDER - 1) * sizeof t->older[0]);
        t->n_older--;
    } else {
        mc_view_older *more = realloc(t->older, (t->n_older + 1) * sizeof *more);
        if (!more) { /* out of memory: the story loses its oldest version */
            clear_version(t);
            return;
        }
        t->older = more;
    }
    mc_view_older *o = &t->older[t->n_older++];
    *o = (mc_view_older){
        .version = t->version, .replaced_by = by, .replaced_at = -1, .fired = t->fired};
    if (t->n_calls) {
        o->last_attempt = t->calls[t->n_calls - 1].attempt;
        o->last_outcome = t->calls[t->n_calls - 1].outcome;
    }
    /* A cancel between them replaced it first, and its position is known. */
    if (t->command > t->version && t->command < by) {
        o->replaced_by = t->command;
        o->replaced_at = t->command_wheel_at;
    }
    clear_version(t);
}

/* Makes v the newest version if it is newer. True when the record is about
 * the newest version (now), false when about an older one. */
static bool take_version(mc_view_task *t, int64_t v)
{
    if (v < t->version)
        return false;
    if (v > t->version) {
        retire(t, v);
        t->version = v;
    }
    if (v > t->command) {
        t->command = v;
        t->command_kind = MC_CMD_SUBMIT;
        t->command_wheel_at = -1;
    }
    return true;
}

static bool keep_task(mc_view_task *t, int32_t attempt, const void *task, size_t task_len)
{
    /* A task this large is kept without its bytes (the answer then has no
     * callback): its changelog record must stay far below Kafka's limit. */
    if (!task || task_len > MC_VIEW_MAX_TASK_BYTES ||
        (t->task && attempt < t->scheduled && attempt < t->fired))
        return false;
    uint8_t *copy = malloc(task_len ? task_len : 1);
    if (!copy)
        return false;
    memcpy(copy, task, task_len);
    free(t->task);
    t->task = copy;
    t->task_len = (uint32_t)task_len;
    return true;
}

bool mc_view_task_submitted(mc_view_task *t, int64_t v, int32_t attempt, int64_t due_at,
                            int64_t created_at, const void *task, size_t task_len)
{
    if (!take_version(t, v))
        return false;
    bool changed = false;
    if (attempt <= 1 && created_at > 0 && t->command == v && t->command_at != created_at) {
        t->command_at = created_at;
        changed = true;
    }
    if (attempt <= 1 && t->due_at == 0) {
        t->due_at = due_at;
        changed = true;
    }
    if (!t->task || attempt > 1)
        changed |= keep_task(t, attempt, task, task_len);
    return changed;
}

bool mc_view_task_cancelled(mc_view_task *t, int64_t v, int64_t requested_at)
{
    if (v <= t->command)
        return false;
    t->command = v;
    t->command_kind = MC_CMD_CANCEL;
    t->command_at = requested_at;
    t->command_wheel_at = -1;
    return true;
}

bool mc_view_task_routed(mc_view_task *t, int64_t v, int64_t at)
{
    bool changed = false;
    if (v == t->command && t->command_wheel_at < 0) {
        t->command_wheel_at = at;
        changed = true;
    }
    for (uint32_t i = 0; i < t->n_older; i++)
        if (t->older[i].replaced_by == v && t->older[i].replaced_at < 0) {
            t->older[i].replaced_at = at;
            changed = true;
        }
    return changed;
}

bool mc_view_task_scheduled(mc_view_task *t, int64_t v, int32_t attempt, int64_t due_at, bool far)
{
    if (!take_version(t, v) || attempt < t->scheduled)
        return false;
    if (attempt == t->scheduled && t->route == (far ? MC_VIEW_ROUTE_STORE : MC_VIEW_ROUTE_WHEEL))
        return false;
    /* A hand-off from the store (wheel after store) is the same attempt
     * moving on; the store never takes a task back from the wheel. */
    if (attempt == t->scheduled && far && t->route == MC_VIEW_ROUTE_WHEEL)
        return false;
    t->scheduled = attempt;
    t->scheduled_due = due_at;
    t->route = far ? MC_VIEW_ROUTE_STORE : MC_VIEW_ROUTE_WHEEL;
    if (t->due_at == 0)
        t->due_at = due_at;
    return true;
}

bool mc_view_task_fired(mc_view_task *t, int64_t v, int32_t attempt, int64_t at)
{
    if (!take_version(t, v)) {
        mc_view_older *o = older_of(t, v);
        if (!o || attempt <= o->fired)
            return false;
        o->fired = attempt;
        return true;
    }
    if (attempt <= t->fired)
        return false;
    t->fired = attempt;
    t->fired_at = at;
    return true;
}

static char *bounded_copy(const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    /* Never cut a UTF-8 character in half. */
    if (n == max)
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    char *c = malloc(n + 1);
    if (c) {
        memcpy(c, s, n);
        c[n] = '\0';
    }
    return c;
}

static mc_view_call *call_slot(mc_view_task *t, int32_t attempt)
{
    for (uint32_t i = 0; i < t->n_calls; i++)
        if (t->calls[i].attempt == attempt)
            return &t->calls[i];
    if (t->n_calls == MC_VIEW_MAX_CALLS) {
        /* Keep the first attempts and make room at the end. */
        call_clear(&t->calls[MC_VIEW_MAX_CALLS - 2]);
        t->calls[MC_VIEW_MAX_CALLS - 2] = t->calls[MC_VIEW_MAX_CALLS - 1];
        memset(&t->calls[MC_VIEW_MAX_CALLS - 1], 0, sizeof t->calls[0]);
        t->n_calls--;
    } else {
        mc_view_call *more = realloc(t->calls, (t->n_calls + 1) * sizeof *more);
        if (!more)
            return NULL;
        t->calls = more;
    }
    /* Results of one version arrive in attempt order but keep them sorted
     * anyway: a Result written by an older release has no version. */
    uint32_t at = t->n_calls;
    while (at > 0 && t->calls[at - 1].attempt > attempt)
        at--;
    memmove(&t->calls[at + 1], &t->calls[at], (t->n_calls - at) * sizeof t->calls[0]);
    memset(&t->calls[at], 0, sizeof t->calls[0]);
    t->n_calls++;
    return &t->calls[at];
}

bool mc_view_task_result(mc_view_task *t, const mc_result *r)
{
    /* -1: written without a version (a release before Result version 2, or
     * --record-version 1; a shifted version is far below -1). It is about
     * the newest version only when the key has had no other and no cancel:
     * else it could be an older version's (a recall's CANCELLED), and
     * claiming it for the newest would be a lie. */
    int64_t v = r->version;
    if (v == -1) {
        if (t->version == MC_VIEW_NONE || t->n_older || t->command != t->version)
            return false;
        v = t->version;
    }
    if (!take_version(t, v)) {
        mc_view_older *o = older_of(t, v);
        if (!o || r->attempt < o->last_attempt)
            return false;
        o->last_attempt = r->attempt;
        o->last_outcome = r->outcome;
        if (r->attempt > o->fired)
            o->fired = r->attempt;
        return true;
    }
    char *error = bounded_copy(r->error ? r->error : "", MC_VIEW_ERROR_BYTES);
    size_t body_len =
        r->response_body_len < MC_VIEW_BODY_BYTES ? r->response_body_len : MC_VIEW_BODY_BYTES;
    uint8_t *body = body_len ? malloc(body_len) : NULL;
    if (!error || (body_len && !body)) {
        free(error);
        free(body);
        return false;
    }
    if (body_len)
        memcpy(body, r->response_body, body_len);
    mc_view_call *c = call_slot(t, r->attempt);
    if (!c) {
        free(error);
        free(body);
        return false;
    }
    call_clear(c);
    *c = (mc_view_call){.attempt = r->attempt,
                        .outcome = r->outcome,
                        .http_status = r->http_status,
                        .started_at = r->started_at,
                        .finished_at = r->finished_at,
                        .error = error,
                        .body = body,
                        .body_len = (uint32_t)body_len,
                        .response_size = r->response_size};
    /* A Result may come before its `ready` record is read. */
    if (r->attempt > t->fired && r->outcome != MC_OUTCOME_CANCELLED)
        t->fired = r->attempt;
    if (t->due_at == 0)
        t->due_at = r->due_at;
    return true;
}

bool mc_view_task_rejected(mc_view_task *t, int64_t v, const char *reason)
{
    /* A refused command never was a version of the task: it replaces
     * nothing. It is the answer only for a key with no version of its own. */
    if (t->rejected || (t->version != MC_VIEW_NONE && t->version != v) || v < t->command)
        return false;
    t->version = v;
    if (v > t->command) {
        t->command = v;
        t->command_kind = MC_CMD_SUBMIT;
        t->command_wheel_at = -1;
    }
    /* The router's reasons quote the callback's URL. */
    char *said = mc_text_redacted(reason);
    t->rejected = said ? bounded_copy(said, MC_VIEW_ERROR_BYTES) : NULL;
    free(said);
    return t->rejected != NULL;
}

/* ---- the state ------------------------------------------------------------------ */

static const mc_view_call *last_call(const mc_view_task *t)
{
    return t->n_calls ? &t->calls[t->n_calls - 1] : NULL;
}

/* Whether the wheel has read past `wheel_at`, so whatever it fired before
 * that is in `ready` below the marker the view has read, and nothing older
 * than the command there can fire again (its floor). */
static bool wheel_passed(int64_t wheel_at, int64_t wheel_position)
{
    return wheel_at >= 0 && wheel_position > wheel_at;
}

mc_view_state mc_view_task_state(const mc_view_task *t, int64_t wheel_position, int64_t now_ms)
{
    if (t->version == MC_VIEW_NONE)
        return MC_VIEW_UNKNOWN;
    if (t->rejected)
        return MC_VIEW_REJECTED;
    const mc_view_call *c = last_call(t);
    bool cancel = t->command > t->version;
    if (c && c->attempt >= t->fired) {
        switch (c->outcome) {
        case MC_OUTCOME_SUCCEEDED:
            return MC_VIEW_SUCCEEDED;
        case MC_OUTCOME_FAILED_PERMANENTLY:
            return MC_VIEW_FAILED;
        case MC_OUTCOME_EXHAUSTED:
            return MC_VIEW_DEAD;
        case MC_OUTCOME_CANCELLED:
            return MC_VIEW_CANCELLED;
        case MC_OUTCOME_DROPPED:
            return MC_VIEW_DROPPED;
        default:
            break; /* failed, will retry: what of the next attempt? */
        }
    }
    if (t->fired > 0 && (!c || c->attempt < t->fired)) {
        int64_t fired_due = t->scheduled == t->fired ? t->scheduled_due : t->due_at;
        return now_ms < fired_due ? MC_VIEW_HELD : MC_VIEW_CALLING;
    }
    if (cancel && wheel_passed(t->command_wheel_at, wheel_position))
        return MC_VIEW_CANCELLED;
    /* cancelRequested promises "not called": a task called before the
     * cancel (a failed attempt waiting for its next) is still retrying. */
    if (cancel && !t->fired)
        return MC_VIEW_CANCEL_REQUESTED;
    if (c) /* the last attempt failed and another follows */
        return MC_VIEW_RETRYING;
    switch (t->route) {
    case MC_VIEW_ROUTE_STORE:
        return MC_VIEW_PENDING_STORE;
    case MC_VIEW_ROUTE_WHEEL:
        return MC_VIEW_PENDING_WHEEL;
    default:
        return MC_VIEW_ACCEPTED;
    }
}

const char *mc_view_state_name(mc_view_state s)
{
    static const char *const names[] = {
        [MC_VIEW_ACCEPTED] = "accepted",
        [MC_VIEW_PENDING_STORE] = "pendingStore",
        [MC_VIEW_PENDING_WHEEL] = "pendingWheel",
        [MC_VIEW_HELD] = "held",
        [MC_VIEW_CALLING] = "calling",
        [MC_VIEW_RETRYING] = "retrying",
        [MC_VIEW_CANCEL_REQUESTED] = "cancelRequested",
        [MC_VIEW_SUCCEEDED] = "succeeded",
        [MC_VIEW_FAILED] = "failed",
        [MC_VIEW_DEAD] = "dead",
        [MC_VIEW_CANCELLED] = "cancelled",
        [MC_VIEW_DROPPED] = "dropped",
        [MC_VIEW_REJECTED] = "rejected",
        [MC_VIEW_UNKNOWN] = "unknown",
    };
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unknown";
}

bool mc_view_state_final(mc_view_state s)
{
    return s == MC_VIEW_SUCCEEDED || s == MC_VIEW_FAILED || s == MC_VIEW_DEAD ||
           s == MC_VIEW_CANCELLED || s == MC_VIEW_DROPPED || s == MC_VIEW_REJECTED ||
           s == MC_VIEW_UNKNOWN;
}

/* ---- the answer ------------------------------------------------------------------ */

json_t *mc_view_callback_json(const mc_callback *cb)
{
    json_t *headers = json_object();
    for (size_t i = 0; i < cb->n_headers; i++)
        json_object_set_new(
            headers, cb->headers[i].key,
            json_string(mc_secret_name(cb->headers[i].key) ? MC_REDACTED : cb->headers[i].value));
    char *url = mc_url_redacted(cb->url);
    json_t *j = json_pack("{s:s?, s:s, s:o, s:I}", "url", url, "method", cb->method, "headers",
                          headers, "timeoutMs", (json_int_t)cb->timeout_ms);
    free(url);
    mc_json_set_bytes(j, "body", cb->body ? (const void *)cb->body : "", cb->body_len);
    mc_json_callback_group(j, NULL, 0);
    return j;
}

json_t *mc_view_kafka_target_json(const mc_kafka_target *k)
{
    json_t *headers = json_object();
    for (size_t i = 0; i < k->n_headers; i++)
        json_object_set_new(
            headers, k->headers[i].key,
            json_string(mc_secret_name(k->headers[i].key) ? MC_REDACTED : k->headers[i].value));
    json_t *j = json_pack("{s:s, s:o}", "topic", k->topic, "headers", headers);
    if (!j)
        return NULL;
    if (k->has_key) {
        const char *key = k->key ? (const char *)k->key : "";
        json_t *text = json_stringn(key, k->key_len); /* NULL: not UTF-8 */
        json_object_set_new(j, text ? "key" : "keyBase64",
                            text ? text : mc_json_base64((const uint8_t *)key, k->key_len));
    }
    /* The value's size, not the value: it is the payload a consumer acts
     * on, and may carry what only that consumer should read. */
    if (k->has_value)
        json_object_set_new(j, "valueBytes", json_integer((json_int_t)k->value_len));
    else
        json_object_set_new(j, "tombstone", json_true());
    return j;
}

/* The callback's secret values, which an endpoint may echo in its answer
 * ("invalid key sk_live_..."): the values of secret headers (and the
 * credential after "Bearer "), secret query parameters and the URL's user
 * info. Pointers into the decoded task, or into url_copy. */
#define MAX_SECRETS 32
#define MIN_SECRET_LEN 4
typedef struct secrets {
    const char *v[MAX_SECRETS];
    size_t len[MAX_SECRETS];
    size_t n;
} secrets;

/* Kept longest first, so a secret that begins another does not cut it. */
static void add_secret(secrets *s, const char *v, size_t len)
{
    if (len < MIN_SECRET_LEN || s->n == MAX_SECRETS)
        return;
    size_t at = s->n++;
    while (at > 0 && s->len[at - 1] < len) {
        s->v[at] = s->v[at - 1];
        s->len[at] = s->len[at - 1];
        at--;
    }
    s->v[at] = v;
    s->len[at] = len;
}

static void collect_secrets(const mc_callback *cb, char *url, secrets *s)
{
    for (size_t i = 0; i < cb->n_headers; i++) {
        if (!mc_secret_name(cb->headers[i].key))
            continue;
        const char *v = cb->headers[i].value;
        add_secret(s, v, strlen(v));
        const char *space = strrchr(v, ' ');
        if (space)
            add_secret(s, space + 1, strlen(space + 1));
    }
    char *sep = strstr(url, "://");
    char *authority = sep ? sep + 3 : url;
    char *at = memchr(authority, '@', strcspn(authority, "/?#"));
    if (at)
        add_secret(s, authority, (size_t)(at - authority));
    for (char *p = authority + strcspn(authority, "?#"); *p;) {
        p++;
        size_t field = strcspn(p, "&;#?");
        char *eq = memchr(p, '=', field);
        if (eq) {
            char saved = *eq;
            *eq = '\0';
            bool secret = mc_secret_name(p);
            *eq = saved;
            if (secret)
                add_secret(s, eq + 1, field - (size_t)(eq + 1 - p));
        }
        p += field;
    }
}

/* b[0..n) with every secret replaced by MC_REDACTED, in *out (the caller
 * frees it); false on ENOMEM. */
static bool scrub(const uint8_t *b, size_t n, const secrets *s, uint8_t **out, size_t *out_n)
{
    size_t cap = n + 1, len = 0;
    uint8_t *o = malloc(cap);
    if (!o)
        return false;
    for (size_t i = 0; i < n;) {
        size_t hit = 0;
        for (size_t k = 0; k < s->n && !hit; k++)
            if (s->len[k] <= n - i && memcmp(b + i, s->v[k], s->len[k]) == 0)
                hit = s->len[k];
        const void *piece = hit ? (const void *)MC_REDACTED : (const void *)(b + i);
        size_t piece_len = hit ? sizeof MC_REDACTED - 1 : 1;
        if (len + piece_len + 1 > cap) {
            cap = (len + piece_len + 1) * 2;
            uint8_t *grown = realloc(o, cap);
            if (!grown) {
                free(o);
                return false;
            }
            o = grown;
        }
        memcpy(o + len, piece, piece_len);
        len += piece_len;
        i += hit ? hit : 1;
    }
    o[len] = 0;
    *out = o;
    *out_n = len;
    return true;
}

/* with_body false: the task's secrets are not known (its bytes were not
 * kept), so what the endpoint echoed cannot be scrubbed: leave it out. */
static json_t *call_json(const mc_view_call *c, const secrets *s, bool with_body)
{
    uint8_t *error = NULL, *body = NULL;
    size_t error_len = 0, body_len = 0;
    if (!with_body) {
        char *said = mc_text_redacted(c->error);
        error = (uint8_t *)said;
        error_len = said ? strlen(said) : 0;
        if (!said)
            return NULL;
    } else if (!scrub((const uint8_t *)c->error, strlen(c->error), s, &error, &error_len) ||
               !scrub(c->body ? c->body : (const uint8_t *)"", c->body_len, s, &body, &body_len)) {
        free(error);
        return NULL;
    }
    json_t *j =
        json_pack("{s:i, s:s, s:i, s:I, s:I, s:I, s:s}", "attempt", (int)c->attempt, "outcome",
                  mc_outcome_name(c->outcome), "httpStatus", (int)c->http_status, "startedAt",
                  (json_int_t)c->started_at, "finishedAt", (json_int_t)c->finished_at, "latencyMs",
                  (json_int_t)(c->finished_at - c->started_at), "error", (const char *)error);
    if (j && c->response_size >= 0) {
        json_object_set_new(j, "responseSize", json_integer(c->response_size));
        if (with_body)
            mc_json_set_bytes(j, "responseBody", body, body_len);
    }
    free(error);
    free(body);
    return j;
}

static json_t *older_json(const mc_view_older *o, int64_t wheel_position)
{
    const char *state;
    if (o->last_attempt && o->last_attempt >= o->fired &&
        o->last_outcome != MC_OUTCOME_FAILED_WILL_RETRY)
        state = mc_outcome_name(o->last_outcome);
    else if (o->fired && o->last_attempt < o->fired)
        state = "calling";
    else
        state = wheel_passed(o->replaced_at, wheel_position) ? "superseded" : "supersedeRequested";
    json_t *j = json_pack("{s:I, s:I, s:s}", "version", (json_int_t)o->version, "replacedBy",
                          (json_int_t)o->replaced_by, "state", state);
    if (o->fired)
        json_object_set_new(j, "attemptsFired", json_integer(o->fired));
    return j;
}

/* The task's follow-ups as every answer shows them: each with the id it
 * will have, its callback redacted or its Kafka target without the value,
 * as the task's own. */
static json_t *follow_ups_json(const mc_task *task)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < task->n_on_success; i++) {
        const mc_follow_up *f = &task->on_success[i];
        size_t len = mc_follow_up_id(task, i, NULL, 0);
        char *id = malloc(len + 1);
        if (!id)
            break;
        mc_follow_up_id(task, i, id, len + 1);
        json_t *does = f->has_kafka_target ? mc_view_kafka_target_json(&f->kafka_target)
                                           : mc_view_callback_json(&f->callback);
        json_array_append_new(arr, mc_follow_up_to_json(f, id, does, true));
        free(id);
    }
    return arr;
}

json_t *mc_view_task_json(const mc_view_task *t, int64_t wheel_position, int64_t now_ms)
{
    mc_view_state s = mc_view_task_state(t, wheel_position, now_ms);
    json_t *j = json_object();
    json_object_set_new(j, "key", json_stringn(t->key, t->node.key_len));
    json_object_set_new(j, "state", json_string(mc_view_state_name(s)));
    json_object_set_new(j, "final", json_boolean(mc_view_state_final(s)));
    if (t->version != MC_VIEW_NONE)
        json_object_set_new(j, "version", json_integer(t->version));
    if (t->due_at)
        json_object_set_new(j, "dueAt", json_integer(t->due_at));
    int32_t attempt = t->fired > t->scheduled ? t->fired : t->scheduled;
    if (attempt)
        json_object_set_new(j, "attempt", json_integer(attempt));
    if (s == MC_VIEW_RETRYING && t->scheduled > t->fired)
        json_object_set_new(j, "nextAttemptAt", json_integer(t->scheduled_due));
    if (t->command > t->version && t->command_kind == MC_CMD_CANCEL) {
        json_object_set_new(j, "cancelVersion", json_integer(t->command));
        json_object_set_new(j, "cancelRequestedAt", json_integer(t->command_at));
    }
    if (t->rejected)
        json_object_set_new(j, "reason", json_string(t->rejected));
    secrets secret = {.n = 0};
    char *url_copy = NULL;
    mc_arena *arena = NULL;
    if (t->task) {
        arena = mc_arena_new();
        mc_stored_task st;
        if (arena &&
            mc_decode_stored_task(t->task, t->task_len, arena, &st, NULL, 0) == MC_CODEC_OK) {
            url_copy = strdup(st.task.callback.url);
            if (url_copy)
                collect_secrets(&st.task.callback, url_copy, &secret);
            json_object_set_new(j, "appId", json_string(st.task.app_id));
            json_object_set_new(j, "uuid", json_string(st.task.task_id));
            json_object_set_new(j, "createdAt", json_integer(st.task.created_at));
            /* A task either calls or delivers: show the one it does. */
            if (st.task.has_kafka_target)
                json_object_set_new(j, "kafkaTarget",
                                    mc_view_kafka_target_json(&st.task.kafka_target));
            else {
                json_t *cb = mc_view_callback_json(&st.task.callback);
                mc_json_callback_group(cb, st.task.metadata, st.task.n_metadata);
                json_object_set_new(j, "callback", cb);
            }
            if (st.task.has_late_policy)
                json_object_set_new(j, "latePolicy",
                                    mc_late_policy_to_json(true, &st.task.late_policy, true));
            if (st.task.n_on_success)
                json_object_set_new(j, "onSuccess", follow_ups_json(&st.task));
            json_object_set_new(j, "retry",
                                mc_retry_to_json(st.task.has_retry, &st.task.retry, true));
            json_object_set_new(j, "metadata",
                                mc_json_api_metadata(st.task.metadata, st.task.n_metadata));
        }
    }
    json_t *calls = json_array();
    for (uint32_t i = 0; i < t->n_calls; i++)
        json_array_append_new(calls, call_json(&t->calls[i], &secret, url_copy != NULL));
    json_object_set_new(j, "attempts", calls);
    /* The secrets point into the decoded task: free it only now. */
    free(url_copy);
    mc_arena_free(arena);
    json_t *older = json_array();
    for (uint32_t i = t->n_older; i-- > 0;)
        json_array_append_new(older, older_json(&t->older[i], wheel_position));
    json_object_set_new(j, "olderVersions", older);
    return j;
}

json_t *mc_view_task_summary_json(const mc_view_task *t, int64_t wheel_position, int64_t now_ms)
{
    json_t *j = mc_view_task_json(t, wheel_position, now_ms);
    if (!j)
        return NULL;
    /* A line of a page stays small (a page of 1000 goes through the gateway
     * in one piece): the callback's address, not its headers and body, and
     * the last Result without the endpoint's answer. */
    json_t *calls = json_object_get(j, "attempts");
    size_t n = json_array_size(calls);
    if (n) {
        json_t *last = json_array_get(calls, n - 1);
        json_object_del(last, "responseBody");
        json_object_del(last, "responseBody_base64");
        json_object_set(j, "lastAttempt", last);
    }
    json_t *cb = json_object_get(j, "callback");
    if (cb) {
        json_object_del(cb, "headers");
        json_object_del(cb, "body");
        json_object_del(cb, "body_base64");
        json_object_del(cb, "timeoutMs");
    }
    json_t *kt = json_object_get(j, "kafkaTarget");
    if (kt) {
        json_object_del(kt, "headers");
        json_object_del(kt, "key");
        json_object_del(kt, "keyBase64");
    }
    json_object_del(j, "attempts");
    json_object_del(j, "olderVersions");
    json_object_del(j, "metadata");
    json_object_del(j, "retry");
    json_object_del(j, "onSuccess"); /* GET /api/task has them */
    /* The page's order and cursor need both, even when the task's bytes
     * were never seen (a key known from its Results only). */
    const char *slash = memchr(t->key, '/', t->node.key_len);
    if (!json_object_get(j, "uuid") && slash) {
        json_object_set_new(j, "appId", json_stringn(t->key, (size_t)(slash - t->key)));
        json_object_set_new(
            j, "uuid", json_stringn(slash + 1, t->node.key_len - (size_t)(slash + 1 - t->key)));
    }
    if (!json_object_get(j, "dueAt"))
        json_object_set_new(j, "dueAt", json_integer(t->due_at));
    return j;
}

/* ---- the changelog ------------------------------------------------------------------ */

/* The value: "MV1", then the fields below in order, integers as zig-zag
 * varints, byte strings as a length and the bytes. Only the view writes
 * it; the decoder still checks every length (fuzz_view_task). */
#define MAGIC "MV1"

static int buf_put(mc_buf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *d = realloc(b->data, cap);
        if (!d)
            return -1;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

static int put_int(mc_buf *b, int64_t v)
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    uint8_t tmp[10];
    size_t n = 0;
    do {
        uint8_t byte = z & 0x7f;
        z >>= 7;
        tmp[n++] = (uint8_t)(byte | (z ? 0x80 : 0));
    } while (z);
    return buf_put(b, tmp, n);
}

static int put_bytes(mc_buf *b, const void *p, size_t n)
{
    return put_int(b, (int64_t)n) || (n && buf_put(b, p, n));
}

int mc_view_task_encode(const mc_view_task *t, mc_buf *out)
{
    int rc = buf_put(out, MAGIC, 3);
    const int64_t head[] = {t->command,       t->command_kind, t->command_at, t->command_wheel_at,
                            t->version,       t->due_at,       t->route,      t->scheduled,
                            t->scheduled_due, t->fired,        t->fired_at,   t->n_calls,
                            t->n_older};
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
        rc |= put_int(out, head[i]);
    rc |= put_bytes(out, t->task, t->task_len);
    rc |= put_bytes(out, t->rejected, t->rejected ? strlen(t->rejected) : 0);
    rc |= put_int(out, t->rejected != NULL);
    for (uint32_t i = 0; i < t->n_calls; i++) {
        const mc_view_call *c = &t->calls[i];
        rc |= put_int(out, c->attempt) | put_int(out, c->outcome) | put_int(out, c->http_status) |
              put_int(out, c->started_at) | put_int(out, c->finished_at) |
              put_int(out, c->response_size) | put_bytes(out, c->error, strlen(c->error)) |
              put_bytes(out, c->body, c->body_len);
    }
    for (uint32_t i = 0; i < t->n_older; i++) {
        const mc_view_older *o = &t->older[i];
        rc |= put_int(out, o->version) | put_int(out, o->replaced_by) |
              put_int(out, o->replaced_at) | put_int(out, o->fired) |
              put_int(out, o->last_attempt) | put_int(out, o->last_outcome);
    }
    return rc ? -1 : 0;
}

typedef struct reader {
    const uint8_t *p, *end;
    const char *why;
} reader;

static int64_t get_int(reader *r)
{
    uint64_t z = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (r->p == r->end) {
            r->why = "truncated";
            return 0;
        }
        uint8_t byte = *r->p++;
        z |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
    }
    r->why = "varint too long";
    return 0;
}

static int64_t get_ranged(reader *r, int64_t min, int64_t max)
{
    int64_t v = get_int(r);
    if (!r->why && (v < min || v > max))
        r->why = "field out of range";
    return v;
}

/* A copy of the next byte string (NUL-terminated, for text), or NULL when
 * empty. max bounds its length. */
static uint8_t *get_bytes(reader *r, size_t max, uint32_t *len)
{
    int64_t n = get_ranged(r, 0, (int64_t)max);
    *len = 0;
    if (r->why || n == 0)
        return NULL;
    if ((size_t)(r->end - r->p) < (size_t)n) {
        r->why = "truncated";
        return NULL;
    }
    uint8_t *c = malloc((size_t)n + 1);
    if (!c) {
        r->why = "out of memory";
        return NULL;
    }
    memcpy(c, r->p, (size_t)n);
    c[n] = '\0';
    r->p += n;
    *len = (uint32_t)n;
    return c;
}

mc_view_task *mc_view_task_decode(const void *key, size_t key_len, const void *value, size_t len,
                                  const char **why)
{
    reader r = {value, (const uint8_t *)value + len, NULL};
    if (len < 3 || memcmp(value, MAGIC, 3) != 0) {
        *why = "not a view record";
        return NULL;
    }
    r.p += 3;
    mc_view_task *t = mc_view_task_new(key, key_len);
    if (!t) {
        *why = "out of memory";
        return NULL;
    }
    t->command = get_int(&r);
    t->command_kind = (int32_t)get_ranged(&r, MC_CMD_SUBMIT, MC_CMD_CANCEL);
    t->command_at = get_int(&r);
    t->command_wheel_at = get_int(&r);
    t->version = get_int(&r);
    t->due_at = get_int(&r);
    t->route = (int32_t)get_ranged(&r, MC_VIEW_ROUTE_NONE, MC_VIEW_ROUTE_WHEEL);
    t->scheduled = (int32_t)get_ranged(&r, 0, INT32_MAX);
    t->scheduled_due = get_int(&r);
    t->fired = (int32_t)get_ranged(&r, 0, INT32_MAX);
    t->fired_at = get_int(&r);
    int64_t n_calls = get_ranged(&r, 0, MC_VIEW_MAX_CALLS);
    int64_t n_older = get_ranged(&r, 0, MC_VIEW_MAX_OLDER);
    if (!r.why && n_calls && !(t->calls = calloc((size_t)n_calls, sizeof *t->calls)))
        r.why = "out of memory";
    if (!r.why && n_older && !(t->older = calloc((size_t)n_older, sizeof *t->older)))
        r.why = "out of memory";
    t->task = get_bytes(&r, UINT32_MAX, &t->task_len);
    uint32_t reason_len;
    char *reason = (char *)get_bytes(&r, MC_VIEW_ERROR_BYTES, &reason_len);
    bool rejected = get_ranged(&r, 0, 1);
    t->rejected = rejected ? (reason ? reason : calloc(1, 1)) : NULL;
    if (!rejected)
        free(reason);
    for (int64_t i = 0; !r.why && i < n_calls; i++) {
        mc_view_call *c = &t->calls[t->n_calls++];
        c->attempt = (int32_t)get_ranged(&r, 0, INT32_MAX);
        c->outcome = (int32_t)get_ranged(&r, MC_OUTCOME_SUCCEEDED, MC_OUTCOME_DROPPED);
        c->http_status = (int32_t)get_ranged(&r, 0, 999);
        c->started_at = get_int(&r);
        c->finished_at = get_int(&r);
        c->response_size = get_int(&r);
        uint32_t error_len;
        c->error = (char *)get_bytes(&r, MC_VIEW_ERROR_BYTES, &error_len);
        if (!c->error && !r.why)
            c->error = calloc(1, 1);
        c->body = get_bytes(&r, MC_VIEW_BODY_BYTES, &c->body_len);
        if (!c->error && !r.why)
            r.why = "out of memory";
    }
    for (int64_t i = 0; !r.why && i < n_older; i++) {
        mc_view_older *o = &t->older[t->n_older++];
        o->version = get_int(&r);
        o->replaced_by = get_int(&r);
        o->replaced_at = get_int(&r);
        o->fired = (int32_t)get_ranged(&r, 0, INT32_MAX);
        o->last_attempt = (int32_t)get_ranged(&r, 0, INT32_MAX);
        o->last_outcome = (int32_t)get_ranged(&r, MC_OUTCOME_SUCCEEDED, MC_OUTCOME_DROPPED);
    }
    if (!r.why && r.p != r.end)
        r.why = "trailing bytes";
    if (!r.why && t->rejected == NULL && rejected)
        r.why = "out of memory";
    if (r.why) {
        *why = r.why;
        mc_view_task_free(t);
        return NULL;
    }
    return t;
}
