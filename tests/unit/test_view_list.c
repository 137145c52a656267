/* Unit tests of listing and counting an app's tasks (view_list.h): a page
 * holds the first tasks by due time of the app asked about, filtered by
 * state and due time; the cursor of one page starts the next with nothing
 * repeated or skipped, also when the pages of several instances are
 * merged; counts cover every task of the app and no other app's; the
 * minute counters keep one hour and survive their changelog bytes. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "view_list.h"

#define NOW 1800000000000LL

/* A task of app due at due, accepted (in `tasks` only) or, when routed, in
 * the wheel. */
static mc_view_task *task(const char *app, const char *uuid, int64_t due, bool in_wheel)
{
    char key[128];
    size_t len = mc_task_key(app, uuid, key, sizeof key);
    mc_view_task *t = mc_view_task_new(key, len);
    CHECK(mc_view_task_submitted(t, due, 1, due, NOW - 1000, NULL, 0));
    if (in_wheel)
        CHECK(mc_view_task_scheduled(t, due, 1, due, false));
    return t;
}

static json_t *page(mc_view_task **tasks, size_t n, const mc_view_filter *f)
{
    mc_view_selection s;
    mc_view_selection_init(&s, f, NOW, false);
    for (size_t i = 0; i < n; i++)
        mc_view_selection_offer(&s, tasks[i], -1);
    json_t *j = mc_view_selection_list_json(&s);
    mc_view_selection_free(&s);
    return j;
}

static const char *uuid_at(const json_t *page, size_t i)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(page, "tasks"), i), "uuid"));
}

int main(void)
{
    /* 30 tasks of shop due in a shuffled order (ties broken by uuid), 5 of
     * another app. */
    mc_view_task *tasks[40];
    size_t n = 0;
    for (int i = 0; i < 30; i++) {
        char uuid[16];
        snprintf(uuid, sizeof uuid, "t%02d", (i * 7) % 30);
        tasks[n++] = task("shop", uuid, NOW + 1000 * ((i * 7) % 30 / 2), i % 3 == 0);
    }
    for (int i = 0; i < 5; i++) {
        char uuid[16];
        snprintf(uuid, sizeof uuid, "o%d", i);
        tasks[n++] = task("shopping", uuid, NOW, false);
    }

    /* Pages of 7, in order, each starting after the cursor of the one before. */
    mc_view_filter f = mc_view_filter_all("shop");
    f.limit = 7;
    char seen[30] = {0};
    int pages = 0, total = 0;
    char *cursor = NULL;
    int64_t last_due = INT64_MIN;
    for (;;) {
        if (cursor)
            CHECK(mc_view_cursor_parse(cursor, &f));
        /* Two "instances": the tasks split in halves, merged as the gateway does. */
        json_t *halves[2] = {page(tasks, n / 2, &f), page(tasks + n / 2, n - n / 2, &f)};
        json_t *merged = mc_view_list_merge(halves, 2, f.limit);
        json_decref(halves[0]);
        json_decref(halves[1]);
        json_t *items = json_object_get(merged, "tasks");
        pages++;
        for (size_t i = 0; i < json_array_size(items); i++) {
            const char *u = uuid_at(merged, i);
            CHECK(u && u[0] == 't', "another app's task %s in shop's page", u ? u : "?");
            int k = atoi(u + 1);
            CHECK(!seen[k], "task %s on two pages", u);
            seen[k] = 1;
            total++;
            int64_t due = json_integer_value(json_object_get(json_array_get(items, i), "dueAt"));
            CHECK(due >= last_due, "out of due order");
            last_due = due;
        }
        free(cursor);
        cursor = NULL;
        const char *next = json_string_value(json_object_get(merged, "next"));
        if (next)
            cursor = strdup(next);
        json_decref(merged);
        if (!cursor || pages > 10)
            break;
    }
    CHECK(total == 30 && pages == 5, "%d tasks on %d pages", total, pages);

    /* The state and due-time filters. */
    f = mc_view_filter_all("shop");
    f.states = 1u << MC_VIEW_PENDING_WHEEL;
    json_t *j = page(tasks, n, &f);
    CHECK(json_array_size(json_object_get(j, "tasks")) == 10, "10 in the wheel");
    CHECK(json_is_false(json_object_get(j, "more")));
    json_decref(j);
    f = mc_view_filter_all("shop");
    f.due_from = NOW + 2000;
    f.due_to = NOW + 4000;
    j = page(tasks, n, &f);
    CHECK(json_array_size(json_object_get(j, "tasks")) == 4, "due in [2 s, 4 s): 4 tasks");
    json_decref(j);

    /* Counts: every task of the app, none of another with a longer name. */
    f = mc_view_filter_all("shop");
    mc_view_selection s;
    mc_view_selection_init(&s, &f, NOW, true);
    for (size_t i = 0; i < n; i++)
        mc_view_selection_offer(&s, tasks[i], -1);
    json_t *counts = mc_view_selection_counts_json(&s);
    mc_view_selection_free(&s);
    CHECK(json_integer_value(json_object_get(counts, "total")) == 30);
    CHECK(json_integer_value(json_object_get(counts, "pendingWheel")) == 10);
    CHECK(json_integer_value(json_object_get(counts, "accepted")) == 20);
    json_t *a = json_pack("{s:o}", "tasks", counts);
    json_t *b =
        json_pack("{s:{s:i,s:i},s:{s:i}}", "tasks", "total", 2, "dead", 2, "lastHour", "calls", 5);
    json_t *both[] = {a, b};
    json_t *sum = mc_view_stats_merge(both, 2, "shop");
    CHECK(json_integer_value(json_object_get(json_object_get(sum, "tasks"), "total")) == 32);
    CHECK(json_integer_value(json_object_get(json_object_get(sum, "tasks"), "dead")) == 2);
    CHECK(json_integer_value(json_object_get(json_object_get(sum, "lastHour"), "calls")) == 5);
    json_decref(sum);
    json_decref(a);
    json_decref(b);

    /* Cursors that are not one. */
    mc_view_filter g = mc_view_filter_all("shop");
    CHECK(!mc_view_cursor_parse("12", &g));
    CHECK(!mc_view_cursor_parse(":x", &g));
    CHECK(!mc_view_cursor_parse("12:", &g));
    CHECK(!mc_view_cursor_parse("1x:y", &g));
    CHECK(mc_view_cursor_parse("-3:a:b", &g) && g.after_due == -3 && !strcmp(g.after_uuid, "a:b"));

    /* Minute counters: an hour kept, older minutes dropped, the bytes read back. */
    mc_view_app_stats *st = mc_view_app_stats_new(MC_VIEW_STATS_PREFIX "shop", 11);
    mc_view_app_stats_add(st, NOW - 2 * 3600000, 100, 100, 100); /* two hours ago */
    mc_view_app_stats_add(st, NOW - 30 * 60000, 3, 1, 0);
    mc_view_app_stats_add(st, NOW - 30 * 60000, 2, 0, 1);
    mc_view_app_stats_add(st, NOW, 1, 1, 1);
    mc_view_app_stats_add(st, NOW - 3 * 3600000, 50, 0, 0); /* older than its slot: dropped */
    uint64_t got[3];
    CHECK(mc_view_app_stats_sum(st, NOW, got));
    CHECK(got[0] == 6 && got[1] == 2 && got[2] == 2, "%llu %llu %llu", (unsigned long long)got[0],
          (unsigned long long)got[1], (unsigned long long)got[2]);
    mc_buf buf = {0};
    CHECK(mc_view_app_stats_encode(st, &buf) == 0);
    const char *why = NULL;
    mc_view_app_stats *back =
        mc_view_app_stats_decode(st->key, st->node.key_len, buf.data, buf.len, &why);
    CHECK(back != NULL, "%s", why ? why : "");
    uint64_t again[3] = {0};
    CHECK(back && mc_view_app_stats_sum(back, NOW, again) && again[0] == 6 && again[2] == 2);
    CHECK(back && !mc_view_app_stats_sum(back, NOW + 2 * 3600000, again), "an hour later: empty");
    CHECK(!mc_view_app_stats_decode(st->key, st->node.key_len, buf.data, buf.len - 1, &why));
    CHECK(!mc_view_app_stats_decode(st->key, st->node.key_len, "MV1", 3, &why));
    free(back);
    free(st);
    mc_buf_free(&buf);

    for (size_t i = 0; i < n; i++)
        mc_view_task_free(tasks[i]);
    return check_exit("test_view_list");
}
