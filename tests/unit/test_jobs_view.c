/* The gateway's view of the jobs table (gateway/jobs_view.c), record by
 * record without a broker: what GET /jobs answers after the jobs topic's
 * records - puts, updates, tombstones, other apps whose names share a
 * prefix, a corrupt record - with its pages, its status filter and each
 * job's next fire time; and that it answers nothing before it has read the
 * topic to its end. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "job_json.h"
#include "jobs_view.h"

static const int64_t NOW = 1795330000000; /* 2026-11-23T05:06:40Z */

typedef struct fixture {
    mc_zone_cache *zones;
    mc_arena *arena;
    mc_jobs_view *view;
} fixture;

/* Writes the jobs topic's record for app/job as the jobs role would: the
 * job (every minute, SERIAL), its status, next_at, and occurrences written
 * ahead (a SERIAL job's are in running). */
static void put(fixture *f, const char *app, const char *job, mc_job_status status, int64_t next_at,
                const int64_t *ahead, size_t n_ahead)
{
    char json[512], why[512] = "";
    snprintf(json, sizeof json,
             "{\"appId\":\"%s\",\"jobId\":\"%s\",\"schedule\":{\"fixedRateMs\":60000},"
             "\"overlap\":\"SERIAL\",\"callback\":{\"url\":\"https://shop.example.com/tick\"}}",
             app, job);
    mc_job_json_options o = {
        .now_ms = NOW, .retry_defaults = {5, 1000, 2.0, 3600000}, .zones = f->zones};
    mc_job_state st = {.version = 7,
                       .status = status,
                       .next_at = next_at,
                       .runs = 3,
                       .last_scheduled_at = NOW - 60000,
                       .queued_at = -1,
                       .updated_at = NOW};
    CHECK(mc_job_from_json(json, strlen(json), &o, f->arena, &st.job, why, sizeof why) == 0, "%s",
          why);
    mc_running_occurrence run[4];
    for (size_t i = 0; i < n_ahead; i++)
        run[i] = (mc_running_occurrence){ahead[i], ahead[i]};
    st.running = run;
    st.n_running = n_ahead;
    mc_buf b = {0};
    CHECK(mc_encode_job_state(&st, &b) == 0);
    char key[256];
    int klen = snprintf(key, sizeof key, "%s/%s", app, job);
    CHECK(mc_jobs_view_apply(f->view, key, (size_t)klen, b.data, b.len) == 0);
    mc_buf_free(&b);
    mc_arena_reset(f->arena);
}

static void drop(fixture *f, const char *app, const char *job)
{
    char key[256];
    int klen = snprintf(key, sizeof key, "%s/%s", app, job);
    CHECK(mc_jobs_view_apply(f->view, key, (size_t)klen, NULL, 0) == 0);
}

/* The answer to a query, parsed; NULL when the view refused it (*res). */
static json_t *query(fixture *f, const char *app, const char *job, const char *status,
                     const char *after, int limit, mc_jobs_view_result *res)
{
    mc_jobs_query q = {app, job, status, after, limit};
    char *data = NULL;
    *res = mc_jobs_view_list(f->view, &q, NOW, &data);
    json_t *j = data ? json_loads(data, 0, NULL) : NULL;
    CHECK((*res == MC_JOBS_VIEW_OK) == (j != NULL));
    free(data);
    return j;
}

/* The page's job ids, comma-separated, and its next cursor ("-": null). */
static void page_ids(json_t *page, char *ids, size_t n, char *next, size_t nn)
{
    ids[0] = '\0';
    json_t *jobs = json_object_get(page, "jobs"), *j;
    size_t i;
    json_array_foreach(jobs, i, j)
    {
        const char *id = json_string_value(json_object_get(j, "jobId"));
        snprintf(ids + strlen(ids), n - strlen(ids), "%s%s", i ? "," : "", id ? id : "?");
    }
    json_t *c = json_object_get(page, "next");
    snprintf(next, nn, "%s", json_is_string(c) ? json_string_value(c) : "-");
}

static fixture fixture_new(void)
{
    fixture f = {mc_zone_cache_new(NULL), mc_arena_new(), mc_jobs_view_new(NULL, NULL)};
    CHECK(f.zones && f.arena && f.view);
    return f;
}

static void fixture_free(fixture *f)
{
    mc_jobs_view_free(f->view);
    mc_arena_free(f->arena);
    mc_zone_cache_free(f->zones);
}

static void test_nothing_before_the_topic_is_read(void)
{
    fixture f = fixture_new();
    put(&f, "shop", "a", MC_JOB_ACTIVE, NOW + 60000, NULL, 0);
    mc_jobs_view_result res;
    CHECK(query(&f, "shop", NULL, NULL, NULL, 10, &res) == NULL && res == MC_JOBS_VIEW_LOADING);
    CHECK(query(&f, "shop", "a", NULL, NULL, 10, &res) == NULL && res == MC_JOBS_VIEW_LOADING);
    mc_jobs_view_set_loaded(f.view);
    json_t *p = query(&f, "shop", NULL, NULL, NULL, 10, &res);
    CHECK(p && json_array_size(json_object_get(p, "jobs")) == 1);
    json_decref(p);
    fixture_free(&f);
}

static void test_an_apps_jobs_in_pages(void)
{
    fixture f = fixture_new();
    /* Arrival order is not listing order; "shopx" and "sho" share a prefix
     * with "shop" but are other apps. */
    const char *ids[] = {"c", "a", "e", "b", "d"};
    for (size_t i = 0; i < 5; i++)
        put(&f, "shop", ids[i], MC_JOB_ACTIVE, NOW + 60000, NULL, 0);
    put(&f, "shopx", "a", MC_JOB_ACTIVE, NOW + 60000, NULL, 0);
    put(&f, "sho", "p", MC_JOB_ACTIVE, NOW + 60000, NULL, 0);
    put(&f, "other", "z", MC_JOB_ACTIVE, NOW + 60000, NULL, 0);
    mc_jobs_view_set_loaded(f.view);
    CHECK(mc_jobs_view_count(f.view) == 8);
    mc_jobs_view_result res;
    char got[128], next[64];
    json_t *p = query(&f, "shop", NULL, NULL, NULL, 100, &res);
    page_ids(p, got, sizeof got, next, sizeof next);
    CHECK(strcmp(got, "a,b,c,d,e") == 0 && strcmp(next, "-") == 0, "%s next %s", got, next);
    json_decref(p);
    /* Pages of 2 follow each other through the cursor. */
    p = query(&f, "shop", NULL, NULL, NULL, 2, &res);
    page_ids(p, got, sizeof got, next, sizeof next);
    CHECK(strcmp(got, "a,b") == 0 && strcmp(next, "b") == 0, "%s next %s", got, next);
    json_decref(p);
    p = query(&f, "shop", NULL, NULL, "b", 2, &res);
    page_ids(p, got, sizeof got, next, sizeof next);
    CHECK(strcmp(got, "c,d") == 0 && strcmp(next, "d") == 0, "%s next %s", got, next);
    json_decref(p);
    p = query(&f, "shop", NULL, NULL, "d", 2, &res);
    page_ids(p, got, sizeof got, next, sizeof next);
    CHECK(strcmp(got, "e") == 0 && strcmp(next, "-") == 0, "%s next %s", got, next);
    json_decref(p);
    /* An app without jobs gets an empty page, not an error. */
    p = query(&f, "nobody", NULL, NULL, NULL, 10, &res);
    page_ids(p, got, sizeof got, next, sizeof next);
    CHECK(p && strcmp(got, "") == 0 && strcmp(next, "-") == 0);
    json_decref(p);
    fixture_free(&f);
}

static void test_updates_deletes_and_the_status_filter(void)
{
    fixture f = fixture_new();
    put(&f, "shop", "a", MC_JOB_ACTIVE, NOW + 60000, NULL, 0);
    put(&f, "shop", "b", MC_JOB_ACTIVE, NOW + 60000, NULL, 0);
    put(&f, "shop", "c", MC_JOB_ACTIVE, NOW + 60000, NULL, 0);
    mc_jobs_view_set_loaded(f.view);
    put(&f, "shop", "b", MC_JOB_PAUSED, NOW + 60000, NULL, 0); /* a pause, after loading */
    drop(&f, "shop", "a");                                     /* a delete */
    drop(&f, "shop", "never-was");                             /* harmless */
    CHECK(mc_jobs_view_count(f.view) == 2);
    mc_jobs_view_result res;
    char got[128], next[64];
    json_t *p = query(&f, "shop", NULL, NULL, NULL, 10, &res);
    page_ids(p, got, sizeof got, next, sizeof next);
    CHECK(strcmp(got, "b,c") == 0, "%s", got);
    json_decref(p);
    p = query(&f, "shop", NULL, "PAUSED", NULL, 10, &res);
    page_ids(p, got, sizeof got, next, sizeof next);
    CHECK(strcmp(got, "b") == 0, "%s", got);
    json_decref(p);
    /* One job by id; a deleted one, or one of another status, is not found. */
    p = query(&f, "shop", "b", NULL, NULL, 10, &res);
    CHECK(p && strcmp(json_string_value(json_object_get(p, "status")), "PAUSED") == 0);
    json_decref(p);
    CHECK(!query(&f, "shop", "a", NULL, NULL, 10, &res) && res == MC_JOBS_VIEW_NOT_FOUND);
    CHECK(!query(&f, "shop", "b", "ACTIVE", NULL, 10, &res) && res == MC_JOBS_VIEW_NOT_FOUND);
    CHECK(!query(&f, "sho", "p/b", NULL, NULL, 10, &res) && res == MC_JOBS_VIEW_NOT_FOUND);
    fixture_free(&f);
}

static int64_t next_fire(fixture *f, const char *job)
{
    mc_jobs_view_result res;
    json_t *p = query(f, "shop", job, NULL, NULL, 1, &res);
    json_t *n = json_object_get(p, "nextFireAt");
    int64_t v = json_is_integer(n) ? (int64_t)json_integer_value(n) : json_is_null(n) ? -1 : -2;
    json_decref(p);
    return v;
}

static void test_next_fire_time(void)
{
    fixture f = fixture_new();
    /* Written ahead: the earliest occurrence not yet due comes first; one
     * being called now (due in the past) is not next. */
    const int64_t ahead[] = {NOW - 500, NOW + 2000, NOW + 1000};
    put(&f, "shop", "ahead", MC_JOB_ACTIVE, NOW + 3000, ahead, 3);
    put(&f, "shop", "plain", MC_JOB_ACTIVE, NOW + 60000, NULL, 0);
    put(&f, "shop", "paused", MC_JOB_PAUSED, NOW + 60000, NULL, 0);
    put(&f, "shop", "waiting", MC_JOB_ACTIVE, -1, NULL, 0); /* a fixed delay, running */
    mc_jobs_view_set_loaded(f.view);
    CHECK(next_fire(&f, "ahead") == NOW + 1000);
    CHECK(next_fire(&f, "plain") == NOW + 60000);
    CHECK(next_fire(&f, "paused") == -1);
    CHECK(next_fire(&f, "waiting") == -1);
    fixture_free(&f);
}

/* A PARALLEL job (the default) keeps no running list: the role writes an
 * every-second job's next occurrences ahead and moves next_at past them, so
 * the next call is the schedule's next instant, not next_at. */
static void test_next_fire_of_a_parallel_job_written_ahead(void)
{
    fixture f = fixture_new();
    char json[512], why[512] = "";
    snprintf(json, sizeof json,
             "{\"appId\":\"shop\",\"jobId\":\"tick\",\"schedule\":{\"fixedRateMs\":1000},"
             "\"startTime\":%lld,\"callback\":{\"url\":\"https://shop.example.com/tick\"}}",
             (long long)(NOW - 500));
    mc_job_json_options o = {
        .now_ms = NOW, .retry_defaults = {5, 1000, 2.0, 3600000}, .zones = f.zones};
    mc_job_state st = {.version = 7,
                       .status = MC_JOB_ACTIVE,
                       .next_at = NOW + 4500,
                       .runs = 4,
                       .last_scheduled_at = NOW + 3500,
                       .queued_at = -1,
                       .updated_at = NOW};
    CHECK(mc_job_from_json(json, strlen(json), &o, f.arena, &st.job, why, sizeof why) == 0, "%s",
          why);
    CHECK(st.job.overlap == MC_OVERLAP_PARALLEL);
    mc_buf b = {0};
    CHECK(mc_encode_job_state(&st, &b) == 0);
    CHECK(mc_jobs_view_apply(f.view, "shop/tick", 9, b.data, b.len) == 0);
    /* Its last occurrence written, the job ended (max runs): the call is
     * still to come. */
    st.status = MC_JOB_ENDED;
    st.next_at = -1;
    mc_buf_reset(&b);
    CHECK(mc_encode_job_state(&st, &b) == 0);
    CHECK(mc_jobs_view_apply(f.view, "shop/last", 9, b.data, b.len) == 0);
    /* Paused: what was written ahead was cancelled and last_scheduled_at
     * moved back. */
    st.status = MC_JOB_PAUSED;
    st.last_scheduled_at = NOW - 2000;
    mc_buf_reset(&b);
    CHECK(mc_encode_job_state(&st, &b) == 0);
    CHECK(mc_jobs_view_apply(f.view, "shop/held", 9, b.data, b.len) == 0);
    mc_buf_free(&b);
    mc_arena_reset(f.arena);
    mc_jobs_view_set_loaded(f.view);
    CHECK(next_fire(&f, "tick") == NOW + 500, "%lld", (long long)(next_fire(&f, "tick") - NOW));
    CHECK(next_fire(&f, "last") == NOW + 500);
    CHECK(next_fire(&f, "held") == -1);
    fixture_free(&f);
}

static void test_a_corrupt_record_is_shown_not_hidden(void)
{
    fixture f = fixture_new();
    put(&f, "shop", "a", MC_JOB_ACTIVE, NOW + 60000, NULL, 0);
    CHECK(mc_jobs_view_apply(f.view, "shop/b", 6, "\xc3\x01garbage", 9) == 0);
    mc_jobs_view_set_loaded(f.view);
    mc_jobs_view_result res;
    json_t *p = query(&f, "shop", NULL, NULL, NULL, 10, &res);
    json_t *jobs = json_object_get(p, "jobs");
    CHECK(json_array_size(jobs) == 2);
    json_t *bad = json_array_get(jobs, 1);
    CHECK(strcmp(json_string_value(json_object_get(bad, "key")), "shop/b") == 0);
    const char *why = json_string_value(json_object_get(bad, "undecodable"));
    CHECK(why && strlen(why) > 10, "%s", why ? why : "(none)");
    json_decref(p);
    fixture_free(&f);
}

int main(void)
{
    test_nothing_before_the_topic_is_read();
    test_an_apps_jobs_in_pages();
    test_updates_deletes_and_the_status_filter();
    test_next_fire_time();
    test_next_fire_of_a_parallel_job_written_ahead();
    test_a_corrupt_record_is_shown_not_hidden();
    return check_exit("test_jobs_view");
}
