/* Alarm webhooks, events, batches and bodies (see alarm.h), on jansson. */
#include "alarm.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "task_rules.h"

#define ERR_PREFIX "MOONCAKE_ALARM_WEBHOOKS"
/* Keys and job ids longer than this are not ours (the gateway allows far
 * less); an event carrying one is refused. */
#define MAX_ID_BYTES 2048

/* ---- webhooks ------------------------------------------------------------- */

typedef struct app_webhook {
    char *app_id;
    char *url;
} app_webhook;

struct mc_alarm_webhooks {
    app_webhook *v;
    size_t n, cap;
};

void mc_alarm_webhooks_free(mc_alarm_webhooks *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n; i++) {
        free(w->v[i].app_id);
        free(w->v[i].url);
    }
    free(w->v);
    free(w);
}

static char *copy_n(const char *s, size_t n)
{
    char *c = malloc(n + 1);
    if (c) {
        memcpy(c, s, n);
        c[n] = '\0';
    }
    return c;
}

/* http:// or https://, then a host, no longer than a task's URL may be:
 * what the executor can call at all (its SSRF guard judges the address when
 * it calls). */
static bool plausible_url(const char *u, size_t len)
{
    size_t skip;
    if (len > MC_MAX_URL_LEN)
        return false;
    if (len > 7 && strncasecmp(u, "http://", 7) == 0)
        skip = 7;
    else if (len > 8 && strncasecmp(u, "https://", 8) == 0)
        skip = 8;
    else
        return false;
    if (u[skip] == '/' || u[skip] == ':' || u[skip] == '?' || u[skip] == '#')
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)u[i] <= ' ' || u[i] == 0x7f)
            return false;
    return true;
}

static int add_webhook(void *arg, const char *entry, size_t len, const char *where, char *err,
                       size_t errlen)
{
    mc_alarm_webhooks *w = arg;
    const char *eq = memchr(entry, '=', len);
    if (!eq) {
        snprintf(err, errlen, ERR_PREFIX ": %s has no '=' (expected appId=https://...)", where);
        return -1;
    }
    const char *app = entry, *url = eq + 1;
    size_t app_len = (size_t)(eq - entry), url_len = len - app_len - 1;
    mc_trim(&app, &app_len);
    mc_trim(&url, &url_len);
    int shown = app_len > 64 ? 64 : (int)app_len;
    if (app_len == 0) {
        snprintf(err, errlen, ERR_PREFIX ": %s has an empty app id (expected appId=https://...)",
                 where);
        return -1;
    }
    if (!plausible_url(url, url_len)) {
        snprintf(err, errlen,
                 ERR_PREFIX ": %s (app '%.*s'): the webhook must be an http:// or https:// URL "
                            "with a host, at most 8192 bytes",
                 where, shown, app);
        return -1;
    }
    for (size_t i = 0; i < w->n; i++)
        if (strlen(w->v[i].app_id) == app_len && memcmp(w->v[i].app_id, app, app_len) == 0) {
            snprintf(err, errlen, ERR_PREFIX ": %s: app '%.*s' is given a webhook twice", where,
                     shown, app);
            return -1;
        }
    if (w->n == w->cap) {
        size_t bigger = w->cap ? w->cap * 2 : 8;
        app_webhook *v = realloc(w->v, bigger * sizeof *v);
        if (!v) {
            snprintf(err, errlen, ERR_PREFIX ": out of memory");
            return -1;
        }
        w->v = v;
        w->cap = bigger;
    }
    app_webhook h = {copy_n(app, app_len), copy_n(url, url_len)};
    if (!h.app_id || !h.url) {
        free(h.app_id);
        free(h.url);
        snprintf(err, errlen, ERR_PREFIX ": out of memory");
        return -1;
    }
    w->v[w->n++] = h;
    return 0;
}

mc_alarm_webhooks *mc_alarm_webhooks_parse(const char *spec, char *err, size_t errlen)
{
    mc_alarm_webhooks *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, ERR_PREFIX ": out of memory");
        return NULL;
    }
    if (mc_config_each_entry(spec, ERR_PREFIX, add_webhook, w, err, errlen) != 0) {
        mc_alarm_webhooks_free(w);
        return NULL;
    }
    return w;
}

const char *mc_alarm_webhook_for(const mc_alarm_webhooks *w, const char *app_id)
{
    const char *any = NULL;
    for (size_t i = 0; w && i < w->n; i++) {
        if (strcmp(w->v[i].app_id, app_id) == 0)
            return w->v[i].url;
        if (strcmp(w->v[i].app_id, "*") == 0)
            any = w->v[i].url;
    }
    return any;
}

size_t mc_alarm_webhooks_count(const mc_alarm_webhooks *w)
{
    return w ? w->n : 0;
}

/* ---- lines and batches --------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    size_t len = s[0] < 0x80                   ? 1
                 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2
                 : s[0] >= 0xe0 && s[0] < 0xf0 ? 3
                 : s[0] >= 0xf0 && s[0] < 0xf5 ? 4
                                               : 0;
    if (len == 0 || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if (len == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
        return 0;
    if (len == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
        return 0;
    return len;
}

bool mc_alarm_app_ok(const char *app, size_t len)
{
    if (len == 0 || len > MC_ALARM_APP_MAX)
        return false;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_seq((const unsigned char *)app + i, len - i);
        if (!n || (n == 1 && ((unsigned char)app[i] < 0x20 || app[i] == '/' || app[i] == 0x7f)))
            return false;
        i += n;
    }
    return true;
}

/* A copy of s of at most max bytes that JSON can carry: invalid UTF-8 and
 * control bytes become '?', and a cut never splits a character. */
static char *clean_copy(const char *s, size_t max)
{
    size_t n = strlen(s);
    char *c = malloc((n < max ? n : max) + 1);
    if (!c)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_seq((const unsigned char *)s + i, n - i);
        size_t take = len ? len : 1;
        if (o + take > max)
            break;
        if (!len || (len == 1 && (unsigned char)s[i] < 0x20))
            c[o++] = '?';
        else
            memcpy(c + o, s + i, len), o += len;
        i += take;
    }
    c[o] = '\0';
    return c;
}

void mc_alarm_line_clear(mc_alarm_line *l)
{
    free(l->key);
    free(l->reason);
    free(l->job_id);
    *l = (mc_alarm_line){0};
}

static int copy_line(mc_alarm_line *to, const mc_alarm_line *from)
{
    *to = (mc_alarm_line){.failed_at = from->failed_at};
    to->key = clean_copy(from->key ? from->key : "", MAX_ID_BYTES);
    to->reason = clean_copy(from->reason ? from->reason : "", MC_ALARM_REASON_MAX);
    to->job_id = from->job_id ? clean_copy(from->job_id, MAX_ID_BYTES) : NULL;
    if (to->key && to->reason && (to->job_id || !from->job_id))
        return 0;
    mc_alarm_line_clear(to);
    return -1;
}

/* Counts a failed occurrence of job_id; the batch lists MC_ALARM_FIRST jobs,
 * and an occurrence of a job beyond them counts only in the total. */
static int count_job(mc_alarm_batch *b, const char *job_id)
{
    for (size_t i = 0; i < b->n_jobs; i++)
        if (strcmp(b->jobs[i].job_id, job_id) == 0) {
            b->jobs[i].failed++;
            return 0;
        }
    if (b->n_jobs == MC_ALARM_FIRST)
        return 0;
    char *id = clean_copy(job_id, MAX_ID_BYTES);
    if (!id)
        return -1;
    b->jobs[b->n_jobs++] = (mc_alarm_job){id, 1};
    return 0;
}

int mc_alarm_batch_add(mc_alarm_batch *b, const mc_alarm_line *l)
{
    mc_alarm_line copy = {0};
    if (b->n_first < MC_ALARM_FIRST && copy_line(&copy, l) != 0)
        return -1;
    if (l->job_id && count_job(b, l->job_id) != 0) {
        mc_alarm_line_clear(&copy);
        return -1;
    }
    if (b->n_first < MC_ALARM_FIRST)
        b->first[b->n_first++] = copy;
    if (b->count == 0 || l->failed_at < b->first_at)
        b->first_at = l->failed_at;
    if (b->count == 0 || l->failed_at > b->last_at)
        b->last_at = l->failed_at;
    b->count++;
    return 0;
}

static void empty_batch(mc_alarm_batch *b)
{
    for (size_t i = 0; i < b->n_first; i++)
        mc_alarm_line_clear(&b->first[i]);
    for (size_t i = 0; i < b->n_jobs; i++)
        free(b->jobs[i].job_id);
    b->n_first = b->n_jobs = 0;
    b->count = b->first_at = b->last_at = b->opened_at = 0;
}

void mc_alarm_batch_sent(mc_alarm_batch *b, int64_t now_ms)
{
    b->alarmed += b->count;
    b->sent++;
    b->last_sent_at = now_ms;
    empty_batch(b);
}

void mc_alarm_batch_clear(mc_alarm_batch *b)
{
    empty_batch(b);
    *b = (mc_alarm_batch){0};
}

/* ---- JSON ------------------------------------------------------------------------------ */

static int put_json(json_t *doc, mc_buf *out)
{
    if (!doc)
        return -1;
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (!text)
        return -1;
    size_t len = strlen(text);
    if (out->cap < len) {
        uint8_t *d = realloc(out->data, len);
        if (!d) {
            free(text);
            return -1;
        }
        out->data = d;
        out->cap = len;
    }
    memcpy(out->data, text, len);
    out->len = len;
    free(text);
    return 0;
}

/* Sets obj[name] to a new value, failing on NULL (ENOMEM) or a refused set. */
static int set(json_t *obj, const char *name, json_t *v)
{
    return v && json_object_set_new(obj, name, v) == 0 ? 0 : -1;
}

static json_t *line_json(const mc_alarm_line *l)
{
    json_t *o = json_object();
    if (!o || set(o, "key", json_string(l->key)) || set(o, "reason", json_string(l->reason)) ||
        set(o, "failedAt", json_integer(l->failed_at)) ||
        (l->job_id && set(o, "jobId", json_string(l->job_id)))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* "first" and "jobs" of a batch into o. */
static int lists_json(json_t *o, const mc_alarm_batch *b)
{
    json_t *first = json_array();
    if (set(o, "first", first))
        return -1;
    json_t *jobs = json_array();
    if (set(o, "jobs", jobs))
        return -1;
    for (size_t i = 0; i < b->n_first; i++)
        if (json_array_append_new(first, line_json(&b->first[i])) != 0)
            return -1;
    for (size_t i = 0; i < b->n_jobs; i++) {
        json_t *j = json_object();
        if (json_array_append_new(jobs, j) != 0 ||
            set(j, "jobId", json_string(b->jobs[i].job_id)) ||
            set(j, "failedOccurrences", json_integer(b->jobs[i].failed)))
            return -1;
    }
    return 0;
}

int mc_alarm_event_encode(const mc_alarm_line *l, mc_buf *out)
{
    mc_alarm_line clean;
    if (copy_line(&clean, l) != 0)
        return -1;
    int rc = put_json(line_json(&clean), out);
    mc_alarm_line_clear(&clean);
    return rc;
}

/* A string member, copied (cleaned) and cut to max bytes: a longer one from
 * another version still reads. NULL when absent and optional; -1 with err
 * when it is not a string. */
static int get_string(const json_t *o, const char *name, bool optional, size_t max, char **out,
                      char *err, size_t errlen)
{
    const json_t *v = json_object_get(o, name);
    *out = NULL;
    if (!v && optional)
        return 0;
    if (!json_is_string(v)) {
        snprintf(err, errlen, "%s must be a string", name);
        return -1;
    }
    *out = clean_copy(json_string_value(v), max);
    if (!*out) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* An integer member in [0, MC_ALARM_MAX_VALUE]; when absent and optional, 0.
 * -1 with err otherwise. */
static int get_int(const json_t *o, const char *name, bool optional, int64_t *out, char *err,
                   size_t errlen)
{
    const json_t *v = json_object_get(o, name);
    *out = 0;
    if (!v && optional)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > MC_ALARM_MAX_VALUE) {
        snprintf(err, errlen, "%s must be an integer from 0 to 2^50", name);
        return -1;
    }
    *out = json_integer_value(v);
    return 0;
}

static int line_from(const json_t *o, mc_alarm_line *l, char *err, size_t errlen)
{
    *l = (mc_alarm_line){0};
    if (!json_is_object(o)) {
        snprintf(err, errlen, "a dead letter must be a JSON object");
        return -1;
    }
    if (get_string(o, "key", false, MAX_ID_BYTES, &l->key, err, errlen) ||
        get_string(o, "reason", false, MC_ALARM_REASON_MAX, &l->reason, err, errlen) ||
        get_string(o, "jobId", true, MAX_ID_BYTES, &l->job_id, err, errlen) ||
        get_int(o, "failedAt", false, &l->failed_at, err, errlen)) {
        mc_alarm_line_clear(l);
        return -1;
    }
    return 0;
}

static json_t *load(const void *data, size_t len, char *err, size_t errlen)
{
    json_error_t je;
    json_t *doc = data ? json_loadb(data, len, JSON_REJECT_DUPLICATES, &je) : NULL;
    if (!doc)
        snprintf(err, errlen, "not JSON: %s", data ? je.text : "no value");
    return doc;
}

int mc_alarm_event_decode(const void *data, size_t len, mc_alarm_line *l, char *err, size_t errlen)
{
    *l = (mc_alarm_line){0};
    json_t *doc = load(data, len, err, errlen);
    if (!doc)
        return -1;
    int rc = line_from(doc, l, err, errlen);
    json_decref(doc);
    return rc;
}

int mc_alarm_batch_encode(const mc_alarm_batch *b, mc_buf *out)
{
    json_t *o = json_object();
    if (!o || set(o, "v", json_integer(1)) || set(o, "count", json_integer(b->count)) ||
        set(o, "openedAt", json_integer(b->opened_at)) ||
        set(o, "firstAt", json_integer(b->first_at)) ||
        set(o, "lastAt", json_integer(b->last_at)) ||
        set(o, "lastSentAt", json_integer(b->last_sent_at)) ||
        set(o, "sent", json_integer(b->sent)) || set(o, "alarmed", json_integer(b->alarmed)) ||
        lists_json(o, b)) {
        json_decref(o);
        return -1;
    }
    return put_json(o, out);
}

int mc_alarm_batch_decode(const void *data, size_t len, mc_alarm_batch *b, char *err, size_t errlen)
{
    mc_alarm_batch_clear(b);
    json_t *doc = load(data, len, err, errlen);
    if (!doc)
        return -1;
    int rc = -1;
    if (!json_is_object(doc)) {
        snprintf(err, errlen, "a batch must be a JSON object");
        goto out;
    }
    if (get_int(doc, "count", false, &b->count, err, errlen) ||
        get_int(doc, "lastSentAt", false, &b->last_sent_at, err, errlen))
        goto out;
    /* The rest is best effort: what does not read is left out. */
    char ignored[64];
    get_int(doc, "firstAt", true, &b->first_at, ignored, sizeof ignored);
    get_int(doc, "lastAt", true, &b->last_at, ignored, sizeof ignored);
    get_int(doc, "openedAt", true, &b->opened_at, ignored, sizeof ignored);
    get_int(doc, "sent", true, &b->sent, ignored, sizeof ignored);
    get_int(doc, "alarmed", true, &b->alarmed, ignored, sizeof ignored);
    const json_t *first = json_object_get(doc, "first"), *jobs = json_object_get(doc, "jobs");
    for (size_t i = 0; i < json_array_size(first) && b->n_first < MC_ALARM_FIRST; i++)
        if (line_from(json_array_get(first, i), &b->first[b->n_first], ignored, sizeof ignored) ==
            0)
            b->n_first++;
    for (size_t i = 0; i < json_array_size(jobs) && b->n_jobs < MC_ALARM_FIRST; i++) {
        const json_t *j = json_array_get(jobs, i);
        mc_alarm_job *to = &b->jobs[b->n_jobs];
        if (json_is_object(j) &&
            get_string(j, "jobId", false, MAX_ID_BYTES, &to->job_id, ignored, sizeof ignored) ==
                0 &&
            get_int(j, "failedOccurrences", false, &to->failed, ignored, sizeof ignored) == 0)
            b->n_jobs++;
        else {
            free(to->job_id);
            to->job_id = NULL;
        }
    }
    if (b->count < (int64_t)b->n_first)
        b->count = (int64_t)b->n_first;
    rc = 0;
out:
    json_decref(doc);
    if (rc != 0)
        mc_alarm_batch_clear(b);
    return rc;
}

int mc_alarm_body(const char *app_id, const mc_alarm_batch *b, int64_t now_ms, mc_buf *out)
{
    char *app = clean_copy(app_id, MAX_ID_BYTES);
    json_t *o = json_object();
    int rc = -1;
    if (app && o && !set(o, "type", json_string("mooncake.alarm")) &&
        !set(o, "appId", json_string(app)) && !set(o, "deadLetters", json_integer(b->count)) &&
        !set(o, "firstAt", json_integer(b->first_at)) &&
        !set(o, "lastAt", json_integer(b->last_at)) && !set(o, "sentAt", json_integer(now_ms)) &&
        !set(o, "alarm", json_integer(b->sent + 1)) && !lists_json(o, b)) {
        rc = put_json(o, out);
        o = NULL;
    }
    json_decref(o);
    free(app);
    return rc;
}
