/* A job's schedule and rules (common/job_schedule.c): the instants each kind
 * of schedule gives within start and end, the message a bad job gets (the
 * field named, as a user reading a dead letter or a 400 needs it), and
 * occurrence ids both ways. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "job_schedule.h"

#define T0 INT64_C(1800000000000) /* 2027-01-15T08:00:00Z, a Friday */

static mc_job job(mc_schedule_kind kind)
{
    return (mc_job){
        .app_id = "a",
        .job_id = "j",
        .kind = kind,
        .cron = "",
        .time_zone = "UTC",
        .interval_ms = 1000,
        .misfire = MC_MISFIRE_FIRE_ONCE_NOW,
        .catch_up_limit = 10,
        .misfire_threshold_ms = 5000,
        .callback = {.url = "https://example.com/x", .method = "POST", .timeout_ms = 1000},
        .created_at = T0,
    };
}

static void fixed_rate_from_its_anchor_within_start_and_end(void)
{
    mc_zone_cache *z = mc_zone_cache_new(NULL);
    mc_job j = job(MC_SCHEDULE_FIXED_RATE);
    j.interval_ms = 60000;
    j.start_at = T0 + 500;
    j.end_at = T0 + 500 + 3 * 60000;
    mc_job_schedule s;
    char why[256];
    CHECK(mc_job_schedule_init(&s, &j, z, &mc_job_avro_names, why, sizeof why) == 0, "%s", why);
    CHECK(mc_job_schedule_next(&s, 0) == T0 + 500, "the anchor first");
    CHECK(mc_job_schedule_next(&s, T0 + 500) == T0 + 60500, "strictly after");
    CHECK(mc_job_schedule_next(&s, T0 + 60499) == T0 + 60500);
    CHECK(mc_job_schedule_next(&s, T0 + 180500) == -1, "nothing after end_at");
    mc_job_schedule_clear(&s);
    j.start_at = 0;
    CHECK(mc_job_schedule_init(&s, &j, z, &mc_job_avro_names, why, sizeof why) == 0);
    CHECK(mc_job_schedule_next(&s, T0 + 1) == T0 + 60000, "anchored at created_at");
    mc_job_schedule_clear(&s);
    mc_zone_cache_free(z);
}

static void cron_in_its_zone_and_after_start(void)
{
    mc_zone_cache *z = mc_zone_cache_new(NULL);
    mc_job j = job(MC_SCHEDULE_CRON);
    j.cron = "0 0 9 ? * MON-FRI";
    j.time_zone = "America/New_York";
    j.start_at = T0 + 86400000; /* Saturday */
    mc_job_schedule s;
    char why[256];
    CHECK(mc_job_schedule_init(&s, &j, z, &mc_job_avro_names, why, sizeof why) == 0, "%s", why);
    /* Monday 2027-01-18 09:00 EST = 14:00 UTC. */
    CHECK(mc_job_schedule_next(&s, T0) == INT64_C(1800000000000) + 3 * 86400000 + 6 * 3600000,
          "%lld", (long long)(mc_job_schedule_next(&s, T0) - T0));
    mc_job_schedule_clear(&s);
    const mc_tz *a = mc_zone_cache_get(z, "America/New_York", why, sizeof why);
    CHECK(a && a == mc_zone_cache_get(z, "America/New_York", why, sizeof why), "loaded once");
    mc_zone_cache_free(z);
}

static void bad_jobs_name_the_field(void)
{
    mc_zone_cache *z = mc_zone_cache_new(NULL);
    static const struct {
        const char *cron, *zone;
        int64_t interval, end_at, catch_up;
        mc_schedule_kind kind;
        const char *want;
    } cases[] = {
        {"0 0 25 * * ?", "UTC", 0, 0, 10, MC_SCHEDULE_CRON,
         "schedule.cron: field 3 (hour): 25 is out of range 0-23"},
        {"", "UTC", 0, 0, 10, MC_SCHEDULE_CRON, "schedule.cron is empty"},
        {"0 0 * * * ?", "Mars/Olympus", 0, 0, 10, MC_SCHEDULE_CRON, "schedule.time_zone: "},
        {"0 0 0 30 2 ?", "UTC", 0, 0, 10, MC_SCHEDULE_CRON, "schedule.cron never fires"},
        {"", "UTC", 0, 0, 10, MC_SCHEDULE_FIXED_RATE,
         "schedule.interval_ms is 0: it must be at least 1000 ms"},
        {"", "UTC", 999, 0, 10, MC_SCHEDULE_FIXED_DELAY,
         "schedule.interval_ms is 999: it must be at least 1000 ms"},
        {"", "UTC", 1000, T0 - 1, 10, MC_SCHEDULE_FIXED_RATE,
         "end_at is in the past: the job would never fire"},
        {"", "UTC", 1000, 0, 0, MC_SCHEDULE_FIXED_RATE,
         "catch_up_limit is 0: it must be 1 to 1000 with CATCH_UP"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mc_job j = job(cases[i].kind);
        j.cron = cases[i].cron;
        j.time_zone = cases[i].zone;
        j.interval_ms = cases[i].interval;
        j.end_at = cases[i].end_at;
        j.catch_up_limit = (int32_t)cases[i].catch_up;
        if (cases[i].catch_up == 0)
            j.misfire = MC_MISFIRE_CATCH_UP;
        char why[512] = "";
        CHECK(!mc_job_ok(&j, T0, z, &mc_job_avro_names, why, sizeof why), "case %zu accepted", i);
        CHECK(strncmp(why, cases[i].want, strlen(cases[i].want)) == 0, "case %zu: '%s'", i, why);
    }
    mc_job j = job(MC_SCHEDULE_FIXED_RATE);
    j.callback.url = "ftp://x";
    char why[512] = "";
    CHECK(!mc_job_ok(&j, T0, z, &mc_job_avro_names, why, sizeof why));
    CHECK(strstr(why, "callback.url") != NULL, "'%s'", why);
    j = job(MC_SCHEDULE_FIXED_RATE);
    j.app_id = "a/b";
    CHECK(!mc_job_ok(&j, T0, z, &mc_job_avro_names, why, sizeof why));
    CHECK(strstr(why, "app_id") != NULL, "'%s'", why);
    j = job(MC_SCHEDULE_FIXED_RATE);
    CHECK(mc_job_ok(&j, T0, z, &mc_job_avro_names, why, sizeof why), "a good job: %s", why);
    mc_zone_cache_free(z);
}

static void occurrence_ids_both_ways(void)
{
    char id[64];
    CHECK(mc_occurrence_id("report@v2", T0, id, sizeof id) == strlen("report@v2@1800000000000"));
    CHECK(strcmp(id, "report@v2@1800000000000") == 0);
    size_t len;
    int64_t at;
    CHECK(mc_occurrence_parse(id, &len, &at) && len == 9 && at == T0, "the last @ splits");
    CHECK(!mc_occurrence_parse("0193a-uuid", &len, &at), "a one-shot task id");
    CHECK(!mc_occurrence_parse("@123", &len, &at), "no job id");
    CHECK(!mc_occurrence_parse("j@12x", &len, &at), "not digits");
    CHECK(!mc_occurrence_parse("j@", &len, &at));
    CHECK(!mc_occurrence_parse("j@1234567890123456789", &len, &at), "19 digits overflow");
}

int main(void)
{
    fixed_rate_from_its_anchor_within_start_and_end();
    cron_in_its_zone_and_after_start();
    bad_jobs_name_the_field();
    occurrence_ids_both_ways();
    return check_exit("test_job_schedule");
}
