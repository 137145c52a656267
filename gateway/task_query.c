/* The task questions' parameters (see task_query.h). */
#include "task_query.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "task_rules.h"

bool mc_task_query_check(const mc_kv *args, size_t n, mc_task_query *q, char *why, size_t whylen)
{
    *q = (mc_task_query){0};
    for (size_t i = 0; i < n; i++) {
        const char **slot = strcmp(args[i].key, "appId") == 0  ? &q->app_id
                            : strcmp(args[i].key, "uuid") == 0 ? &q->uuid
                                                               : NULL;
        if (!slot) {
            snprintf(why, whylen, "unknown parameter '%.100s': GET /api/task takes appId and uuid",
                     args[i].key);
            return false;
        }
        if (*slot) {
            snprintf(why, whylen, "%s is given twice", args[i].key);
            return false;
        }
        *slot = args[i].value ? args[i].value : "";
    }
    if (!q->app_id || !q->app_id[0]) {
        snprintf(why, whylen, "appId is required: GET /api/task?appId=...&uuid=...");
        return false;
    }
    if (!q->uuid || !q->uuid[0]) {
        snprintf(why, whylen, "uuid is required: GET /api/task?appId=...&uuid=...");
        return false;
    }
    return mc_task_ids_ok(q->app_id, q->uuid,
                          &(mc_task_field_names){.app_id = "appId", .task_id = "uuid"}, why,
                          whylen);
}

/* ---- GET /api/tasks and /api/stats -------------------------------------------------- */

/* A decimal integer, all of text; false otherwise. */
static bool whole_number(const char *text, long long lo, long long hi, long long *out)
{
    if (!text[0] || strlen(text) > 20)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (*end || errno || v < lo || v > hi ||
        !(text[0] == '-' || (text[0] >= '0' && text[0] <= '9')))
        return false;
    *out = v;
    return true;
}

static bool take_states(const char *text, uint32_t *states, char *why, size_t whylen)
{
    const char *p = text;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char name[32];
        int s = -1;
        if (len > 0 && len < sizeof name) {
            memcpy(name, p, len);
            name[len] = '\0';
            s = mc_view_state_parse(name);
        }
        if (s < 0) {
            snprintf(
                why, whylen,
                "state '%.*s' is not one of accepted, pendingStore, pendingWheel, held, "
                "calling, retrying, cancelRequested, succeeded, failed, dead, cancelled, dropped, "
                "rejected, unknown",
                (int)(len > 40 ? 40 : len), p);
            return false;
        }
        *states |= 1u << s;
        p += len;
        if (*p == ',' && !*++p) {
            snprintf(why, whylen, "state ends with ','");
            return false;
        }
    }
    if (!*states) {
        snprintf(why, whylen, "state is empty: name one or more states, comma-separated");
        return false;
    }
    return true;
}

static bool take_partitions(const char *text, mc_tasks_query *q, char *why, size_t whylen)
{
    const char *p = text;
    q->has_partitions = true;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char num[16];
        long long v;
        if (!len || len >= sizeof num || q->n_partitions == MC_TASKS_QUERY_MAX_PARTITIONS) {
            snprintf(why, whylen, "partitions must be up to %d partition numbers, comma-separated",
                     MC_TASKS_QUERY_MAX_PARTITIONS);
            return false;
        }
        memcpy(num, p, len);
        num[len] = '\0';
        if (!whole_number(num, 0, INT32_MAX, &v)) {
            snprintf(why, whylen, "partitions: '%.15s' is not a partition number", num);
            return false;
        }
        for (size_t i = 0; i < q->n_partitions; i++)
            if (q->partitions[i] == (int32_t)v) {
                snprintf(why, whylen, "partitions: %lld is given twice", v);
                return false;
            }
        q->partitions[q->n_partitions++] = (int32_t)v;
        p += len;
        if (*p == ',')
            p++;
    }
    if (!q->n_partitions) {
        snprintf(why, whylen, "partitions is empty");
        return false;
    }
    return true;
}

bool mc_tasks_query_check(const mc_kv *args, size_t n, bool stats, mc_tasks_query *q, char *why,
                          size_t whylen)
{
    memset(q, 0, sizeof *q);
    q->filter = mc_view_filter_all(NULL);
    const char *route = stats
                            ? "GET /api/stats takes appId"
                            : "GET /api/tasks takes appId, state, dueFrom, dueTo, limit and after";
    static const char *const list_names[] = {"appId", "state", "dueFrom",   "dueTo",
                                             "limit", "after", "partitions"};
    const char *given[7] = {0};
    for (size_t i = 0; i < n; i++) {
        int k = -1;
        for (int j = 0; j < 7; j++)
            if (strcmp(args[i].key, list_names[j]) == 0 && (!stats || j == 0 || j == 6))
                k = j;
        if (k < 0) {
            snprintf(why, whylen, "unknown parameter '%.100s': %s", args[i].key, route);
            return false;
        }
        if (given[k]) {
            snprintf(why, whylen, "%s is given twice", list_names[k]);
            return false;
        }
        given[k] = args[i].value ? args[i].value : "";
    }
    if (!given[0] || !given[0][0]) {
        snprintf(why, whylen, "appId is required: %s?appId=...",
                 stats ? "GET /api/stats" : "GET /api/tasks");
        return false;
    }
    if (strchr(given[0], '/')) {
        snprintf(why, whylen, "appId '%.100s' contains '/'", given[0]);
        return false;
    }
    q->filter.app_id = given[0];
    if (given[1] && !take_states(given[1], &q->filter.states, why, whylen))
        return false;
    long long v;
    if (given[2]) {
        if (!whole_number(given[2], INT64_MIN / 2, INT64_MAX / 2, &v)) {
            snprintf(why, whylen, "dueFrom must be a time in milliseconds since the epoch");
            return false;
        }
        q->filter.due_from = v;
    }
    if (given[3]) {
        if (!whole_number(given[3], INT64_MIN / 2, INT64_MAX / 2, &v)) {
            snprintf(why, whylen, "dueTo must be a time in milliseconds since the epoch");
            return false;
        }
        q->filter.due_to = v;
    }
    if (given[4]) {
        if (!whole_number(given[4], 1, MC_VIEW_LIST_MAX, &v)) {
            snprintf(why, whylen, "limit must be a whole number from 1 to %d", MC_VIEW_LIST_MAX);
            return false;
        }
        q->filter.limit = (uint32_t)v;
    }
    if (given[5] && !mc_view_cursor_parse(given[5], &q->filter)) {
        snprintf(why, whylen, "after must be the 'next' of the page before (dueAt:uuid)");
        return false;
    }
    if (given[6] && !take_partitions(given[6], q, why, whylen))
        return false;
    return true;
}

/* Appends s percent-encoded (all but RFC 3986's unreserved characters). */
static void put_escaped(char **at, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            *(*at)++ = (char)c;
        } else {
            *(*at)++ = '%';
            *(*at)++ = hex[c >> 4];
            *(*at)++ = hex[c & 15];
        }
    }
}

char *mc_tasks_query_string(const mc_tasks_query *q, bool stats)
{
    const mc_view_filter *f = &q->filter;
    size_t need = 3 * (strlen(f->app_id) + (f->has_after ? strlen(f->after_uuid) : 0)) + 512;
    char *out = malloc(need), *at = out;
    if (!out)
        return NULL;
    at += sprintf(at, "appId=");
    put_escaped(&at, f->app_id);
    if (!stats) {
        if (f->states) {
            at += sprintf(at, "&state=");
            bool first = true;
            for (int s = 0; s < MC_VIEW_N_STATES; s++)
                if (f->states & (1u << s)) {
                    at += sprintf(at, "%s%s", first ? "" : "%2C",
                                  mc_view_state_name((mc_view_state)s));
                    first = false;
                }
        }
        if (f->due_from != INT64_MIN)
            at += sprintf(at, "&dueFrom=%" PRId64, f->due_from);
        if (f->due_to != INT64_MAX)
            at += sprintf(at, "&dueTo=%" PRId64, f->due_to);
        at += sprintf(at, "&limit=%" PRIu32, f->limit);
        if (f->has_after) {
            at += sprintf(at, "&after=%" PRId64 "%%3A", f->after_due);
            put_escaped(&at, f->after_uuid);
        }
    }
    *at = '\0';
    return out;
}
