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

typedef struct walked {
    const mc_view_task *seen[64];
    size_t n, stop_at;
} walked;

static bool note(mc_view_task *t, void *arg)
{
    walked *w = arg;
    w->seen[w->n++] = t;
    return w->n < w->stop_at;
}

static int by_due_key(const void *a, const void *b)
{
    const mc_view_task *x = *(mc_view_task *const *)a, *y = *(mc_view_task *const *)b;
    if (x->due_at != y->due_at)
        return x->due_at < y->due_at ? -1 : 1;
    size_t n = x->node.key_len < y->node.key_len ? x->node.key_len : y->node.key_len;
    int c = memcmp(x->key, y->key, n);
    return c ? c : (int)x->node.key_len - (int)y->node.key_len;
}

/* The index keeps 40 tasks in order through inserts, removals and due
 * times that change; a walk starts where it is asked to; a page read from
 * the index is the page read by looking at every task. */
static void index_keeps_order(void)
{
    mc_view_task *t[40];
    mc_view_index ix = {0};
    unsigned seed = 12345;
    for (int i = 0; i < 40; i++) {
        char uuid[16];
        snprintf(uuid, sizeof uuid, "u%02d", i);
        seed = seed * 1103515245u + 12345u;
        t[i] = task("shop", uuid, NOW + (seed >> 16) % 10 * 1000, false);
        mc_view_index_insert(&ix, t[i]);
    }
    for (int round = 0; round < 200; round++) {
        seed = seed * 1103515245u + 12345u;
        mc_view_task *x = t[(seed >> 16) % 40];
        mc_view_index_remove(&ix, x);
        x->due_at = NOW + (seed >> 8) % 10 * 1000; /* a newer version due elsewhere */
        mc_view_index_insert(&ix, x);
    }
    CHECK(ix.n == 40);
    mc_view_task *sorted[40];
    memcpy(sorted, t, sizeof sorted);
    qsort(sorted, 40, sizeof *sorted, by_due_key);
    walked w = {.stop_at = 64};
    CHECK(mc_view_index_walk(&ix, INT64_MIN, NULL, note, &w) == 0);
    CHECK(w.n == 40);
    for (size_t i = 0; i < w.n && i < 40; i++)
        CHECK(w.seen[i] == sorted[i], "position %zu out of order", i);
    /* from the 17th on, strictly after it */
    const mc_view_task *k = sorted[16];
    walked from = {.stop_at = 64};
    char after[16];
    snprintf(after, sizeof after, "%.*s", (int)k->node.key_len - 5, k->key + 5); /* after "shop/" */
    CHECK(mc_view_index_walk(&ix, k->due_at, after, note, &from) == 0);
    CHECK(from.n == 23 && from.seen[0] == sorted[17], "%zu from the cursor", from.n);
    walked three = {.stop_at = 3};
    mc_view_index_walk(&ix, NOW + 5000, NULL, note, &three);
    CHECK(three.n == 3 && three.seen[0]->due_at >= NOW + 5000);
    /* a page through the index is the page of the scan, with a state filter */
    mc_view_filter f = mc_view_filter_all("shop");
    f.limit = 6;
    f.due_from = NOW + 2000;
    f.states = 1u << MC_VIEW_ACCEPTED;
    mc_view_selection a, b;
    mc_view_selection_init(&a, &f, NOW, false);
    mc_view_selection_init(&b, &f, NOW, false);
    CHECK(mc_view_selection_offer_index(&a, &ix, -1) == 0);
    for (int i = 0; i < 40; i++)
        mc_view_selection_offer(&b, t[i], -1);
    json_t *ja = mc_view_selection_list_json(&a), *jb = mc_view_selection_list_json(&b);
    CHECK(json_equal(ja, jb) && json_array_size(json_object_get(ja, "tasks")) == 6);
    json_decref(ja);
    json_decref(jb);
    mc_view_selection_free(&a);
    mc_view_selection_free(&b);
    for (int i = 0; i < 40; i++) {
        mc_view_index_remove(&ix, t[i]);
        mc_view_task_free(t[i]);
    }
    CHECK(ix.n == 0 && ix.root == NULL);
}

/* Keys a client made to share one hash, submitted in due order (a plain
 * search tree's worst case): the treap's balance owes nothing to the keys,
 * so 100,000 of them go in, walk out in order and come out again without a
 * recursion as deep as the app. */
static bool count_in_order(mc_view_task *t, void *arg)
{
    int64_t *prev = arg;
    CHECK(t->due_at >= *prev);
    *prev = t->due_at;
    return true;
}

static void index_stays_shallow_for_hostile_keys(void)
{
    enum { N = 100000 };
    mc_view_task **t = malloc(N * sizeof *t);
    mc_view_index ix = {0};
    for (int i = 0; i < N; i++) {
        char uuid[16];
        snprintf(uuid, sizeof uuid, "h%06d", i);
        t[i] = task("shop", uuid, NOW + i, false);
        t[i]->node.hash = 42;
        mc_view_index_insert(&ix, t[i]);
    }
    int64_t prev = INT64_MIN;
    CHECK(mc_view_index_walk(&ix, INT64_MIN, NULL, count_in_order, &prev) == 0);
    CHECK(prev == NOW + N - 1);
    for (int i = 0; i < N; i++) {
        mc_view_index_remove(&ix, t[i]);
        mc_view_task_free(t[i]);
    }
    CHECK(ix.n == 0 && !ix.root);
    free(t);
}

int main(void)
{
    index_keeps_order();
    index_stays_shallow_for_hostile_keys();
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

    /* A key that is not UTF-8 (only a direct Kafka client writes one) is
     * counted but not listed: its line could carry no uuid, and the page no
     * cursor after it. */
    mc_view_task *odd = task("shop", "bad\xff", NOW, false);
    mc_view_task *pair[] = {odd, tasks[0]};
    f = mc_view_filter_all("shop");
    j = page(pair, 2, &f);
    CHECK(json_array_size(json_object_get(j, "tasks")) == 1, "the odd key is left out");
    json_decref(j);
    mc_view_selection_init(&s, &f, NOW, true);
    mc_view_selection_offer(&s, odd, -1);
    counts = mc_view_selection_counts_json(&s);
    CHECK(json_integer_value(json_object_get(counts, "total")) == 1, "and counted");
    json_decref(counts);
    mc_view_selection_free(&s);
    mc_view_task_free(odd);

    /* Cursors that are not one. */
    mc_view_filter g = mc_view_filter_all("shop");
    CHECK(!mc_view_cursor_parse("12", &g));
    CHECK(!mc_view_cursor_parse(":x", &g));
    CHECK(!mc_view_cursor_parse("12:", &g));
    CHECK(!mc_view_cursor_parse("1x:y", &g));
    CHECK(mc_view_cursor_parse("-3:a:b", &g) && g.after_due == -3 && !strcmp(g.after_uuid, "a:b"));

    /* Minute counters: an hour kept, older minutes dropped, the bytes read back. */
    mc_view_app_stats *st = mc_view_app_stats_new(MC_VIEW_STATS_PREFIX "shop", 11);
    mc_view_app_stats_add(st, NOW - 2 * 3600000,
                          &(mc_view_count){0, 100, 100, 100, -1}); /* two hours ago */
    mc_view_app_stats_add(st, NOW - 30 * 60000, &(mc_view_count){4, 3, 1, 0, -1});
    mc_view_app_stats_add(st, NOW - 30 * 60000, &(mc_view_count){0, 2, 0, 1, -1});
    mc_view_app_stats_add(st, NOW, &(mc_view_count){0, 1, 1, 1, -1});
    /* older than its slot: dropped */
    mc_view_app_stats_add(st, NOW - 3 * 3600000, &(mc_view_count){0, 50, 0, 0, -1});
    /* 98 calls 3 ms late and 2 calls 4 s late this minute */
    for (int i = 0; i < 100; i++)
        mc_view_app_stats_add(st, NOW, &(mc_view_count){0, 0, 0, 0, i < 98 ? 3 : 4000});
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
    /* The minutes as an instance answers them, and as the gateway merges
     * two instances' answers: counts summed, lateness quantiles from the
     * summed buckets (p50 within 2-5 ms, p99 within 2-5 s). */
    mc_view_minute minutes[MC_VIEW_STATS_MINUTES];
    memset(minutes, 0, sizeof minutes);
    mc_view_app_stats_add_to(back, NOW, minutes);
    CHECK(minutes[MC_VIEW_STATS_MINUTES - 31].submitted == 4);
    CHECK(minutes[MC_VIEW_STATS_MINUTES - 31].calls == 5);
    json_t *one = json_pack("{s:o}", "minutes", mc_view_minutes_json(minutes, NOW));
    json_t *answers[] = {one, one};
    json_t *merged = mc_view_stats_merge(answers, 2, "shop");
    json_t *ms = json_object_get(merged, "minutes");
    CHECK(json_array_size(ms) == MC_VIEW_STATS_MINUTES);
    json_t *last = json_array_get(ms, MC_VIEW_STATS_MINUTES - 1), *old = json_array_get(ms, 29);
    CHECK(json_integer_value(json_object_get(last, "minute")) == NOW / 60000 * 60000);
    CHECK(json_integer_value(json_object_get(old, "submitted")) == 8);
    CHECK(json_integer_value(json_object_get(old, "calls")) == 10);
    CHECK(json_is_null(json_object_get(old, "lateP50Ms")), "no lateness counted then");
    json_int_t p50 = json_integer_value(json_object_get(last, "lateP50Ms")),
               p99 = json_integer_value(json_object_get(last, "lateP99Ms"));
    CHECK(p50 >= 2 && p50 < 5 && p99 >= 2000 && p99 < 5000, "p50 %lld p99 %lld", (long long)p50,
          (long long)p99);
    json_decref(merged);
    /* An instance that answered just after the minute turned: its minutes
     * are matched by their minute, not by their place. */
    json_t *later = json_pack("{s:o}", "minutes", mc_view_minutes_json(minutes, NOW + 60000));
    json_t *apart[] = {one, later};
    merged = mc_view_stats_merge(apart, 2, "shop");
    ms = json_object_get(merged, "minutes");
    CHECK(json_integer_value(json_object_get(json_array_get(ms, MC_VIEW_STATS_MINUTES - 1),
                                             "minute")) == (NOW / 60000 + 1) * 60000);
    CHECK(json_integer_value(json_object_get(json_array_get(ms, 28), "submitted")) == 4);
    CHECK(json_integer_value(json_object_get(json_array_get(ms, 29), "submitted")) == 4);
    json_decref(merged);
    json_decref(later);
    json_decref(one);
    /* A record of the earlier format (no submits, no lateness) still reads. */
    uint8_t v1[3 + 16] = {'M', 'S', '1'};
    int32_t minute = (int32_t)(NOW / 60000);
    for (int i = 0; i < 4; i++) {
        v1[3 + i] = (uint8_t)(minute >> (8 * i));
        v1[7 + i] = (uint8_t)(7 >> (8 * i)); /* calls */
    }
    mc_view_app_stats *old_format =
        mc_view_app_stats_decode(st->key, st->node.key_len, v1, 19, &why);
    CHECK(old_format && mc_view_app_stats_sum(old_format, NOW, again) && again[0] == 7, "%s",
          why ? why : "");
    free(old_format);
    free(back);
    free(st);
    mc_buf_free(&buf);

    for (size_t i = 0; i < n; i++)
        mc_view_task_free(tasks[i]);
    return check_exit("test_view_list");
}
