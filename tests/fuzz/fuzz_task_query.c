/* libFuzzer harness for the task questions' parameters: mc_task_query_check
 * (GET /api/task) and mc_tasks_query_check (GET /api/tasks, /api/stats).
 * The input is a query string split at '&' and the first '=' as
 * libmicrohttpd hands it over. Any parameters are refused with a reason or
 * accepted as ids that name a task (an appId without '/', a uuid, both
 * given once), never a crash or an overread; and an accepted list or stats
 * query, written out again as the gateway forwards it, reads back as the
 * same question. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "task_query.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Splits a query string in place, percent-decoding each part. */
static size_t split(char *text, mc_kv *args, size_t max)
{
    size_t n = 0;
    for (char *save = NULL, *part = strtok_r(text, "&", &save); part && n < max;
         part = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(part, '=');
        if (eq)
            *eq = '\0';
        char *s = eq ? eq + 1 : part, *d = s;
        for (; *s; s++) {
            if (s[0] == '%' && hexval(s[1]) >= 0 && hexval(s[2]) >= 0) {
                *d++ = (char)(hexval(s[1]) * 16 + hexval(s[2]));
                s += 2;
            } else {
                *d++ = *s;
            }
        }
        *d = '\0';
        args[n++] = (mc_kv){part, eq ? eq + 1 : NULL};
    }
    return n;
}

static bool same(const mc_view_filter *a, const mc_view_filter *b)
{
    return strcmp(a->app_id, b->app_id) == 0 && a->states == b->states &&
           a->due_from == b->due_from && a->due_to == b->due_to && a->limit == b->limit &&
           a->has_after == b->has_after &&
           (!a->has_after ||
            (a->after_due == b->after_due && strcmp(a->after_uuid, b->after_uuid) == 0));
}

static void check_tasks_query(const mc_kv *args, size_t n, bool stats)
{
    mc_tasks_query *q = malloc(sizeof *q), *again = malloc(sizeof *again);
    char why[256] = "";
    if (!q || !again) {
        free(q);
        free(again);
        return;
    }
    if (mc_tasks_query_check(args, n, stats, q, why, sizeof why)) {
        if (!q->filter.app_id[0] || strchr(q->filter.app_id, '/') || q->filter.limit < 1 ||
            q->filter.limit > MC_VIEW_LIST_MAX) {
            fprintf(stderr, "accepted a query no app or page has\n");
            abort();
        }
        char *text = mc_tasks_query_string(q, stats);
        if (text) {
            mc_kv back[16];
            size_t m = split(text, back, 16);
            if (!mc_tasks_query_check(back, m, stats, again, why, sizeof why) ||
                (!stats && !same(&q->filter, &again->filter)) ||
                strcmp(q->filter.app_id, again->filter.app_id) != 0) {
                fprintf(stderr, "the forwarded query does not read back the same: %s\n", why);
                abort();
            }
            free(text);
        }
    } else if (!why[0]) {
        fprintf(stderr, "refused without a reason\n");
        abort();
    }
    free(q);
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    mc_kv args[16];
    size_t n = 0;
    for (char *save = NULL, *part = strtok_r(text, "&", &save); part && n < 16;
         part = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(part, '=');
        if (eq)
            *eq = '\0';
        args[n++] = (mc_kv){part, eq ? eq + 1 : NULL};
    }
    mc_task_query q;
    char why[256] = "";
    if (mc_task_query_check(args, n, &q, why, sizeof why)) {
        if (!q.app_id || !q.uuid || !q.app_id[0] || !q.uuid[0] || strchr(q.app_id, '/')) {
            fprintf(stderr, "accepted ids that name no task\n");
            abort();
        }
    } else if (!why[0]) {
        fprintf(stderr, "refused without a reason\n");
        abort();
    }
    check_tasks_query(args, n, false);
    check_tasks_query(args, n, true);
    free(text);
    return 0;
}
