/* The cron engine: what the parser accepts, the exact sentence for each kind
 * of bad expression, next fires worked out by hand (L, L-n, LW, nW, dL, d#k,
 * leap years and Feb 29 across 2100, Quartz vs classic day-of-week numbering,
 * the 5-field OR of the day fields, years, macros, seconds), the DST rules of
 * cron.h in Europe/Berlin, America/New_York and Australia/Lord_Howe (a
 * 30-minute change), a schedule that never fires, and speed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "cron.h"
#include "tz.h"

/* Epoch ms of a UTC date-time "YYYY-MM-DD HH:MM:SS". */
static int64_t utc(const char *s)
{
    int y, mo, d, h, mi, sec;
    if (sscanf(s, "%d-%d-%d %d:%d:%d", &y, &mo, &d, &h, &mi, &sec) != 6) {
        fprintf(stderr, "bad date %s\n", s);
        exit(2);
    }
    return (mc_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec) * 1000;
}

static void fmt(int64_t ms, char out[32])
{
    if (ms < 0) {
        strcpy(out, "never");
        return;
    }
    int64_t s = ms / 1000, y;
    int mo, d;
    mc_civil_from_days(s / 86400, &y, &mo, &d);
    snprintf(out, 32, "%04lld-%02d-%02d %02d:%02d:%02d", (long long)y, mo, d,
             (int)(s % 86400 / 3600), (int)(s % 3600 / 60), (int)(s % 60));
}

static void check_accepts(void)
{
    static const char *const ok[] = {
        "* * * * *",
        "0 0 * * *",
        "*/5 * * * *",
        "0 9-17 * * MON-FRI",
        "0 0 1,15 * *",
        "0 0 L * *",
        "0 0 L-3 * *",
        "0 0 LW * *",
        "0 0 15W * *",
        "0 0 * * 5L",
        "0 0 * * FRIL",
        "0 0 * * 5#3",
        "0 0 * * fri#3",
        "0 0 1 jan-mar *",
        "0 22-2 * * *",
        "0 0 * * 7",
        "0 0 * * 0-7",
        "0 0 * * SAT-MON",
        "5/15 * * * *",
        "@yearly",
        "@ANNUALLY",
        "@monthly",
        "@weekly",
        "@daily",
        "@midnight",
        "@hourly",
        "0 0 12 * * ?",
        "0 0 12 ? * *",
        "0 0 12 ? * 2-6",
        "0 0 12 ? * 6L",
        "0 0 12 ? * 2#1",
        "*/10 * * * * ?",
        "0 0 12 LW * ?",
        "0 0 0 1 1 ? 2030",
        "0 0 0 1 1 ? 2025-2030/2",
        "0 0 0 1 1 ? *",
        "  0\t0 1 * *  ",
        "0 0 1,L * *",
        "0 0 ? * 1",
        "0 0 12 ? * SUN,7",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char err[256] = "";
        mc_cron *c = mc_cron_parse(ok[i], err, sizeof err);
        CHECK(c != NULL, "'%s': %s", ok[i], err);
        mc_cron_free(c);
    }
}

static void check_rejects(void)
{
    static const struct {
        const char *expr, *err;
    } bad[] = {
        {"", "empty expression"},
        {"   ", "empty expression"},
        {"* * * *", "expected 5, 6 or 7 fields, got 4"},
        {"* * * * * * * *", "expected 5, 6 or 7 fields, got 8"},
        {"0 0 25 * * ?", "field 3 (hour): 25 is out of range 0-23"},
        {"61 * * * *", "field 1 (minute): 61 is out of range 0-59"},
        {"0 0 0 * * 8", "field 6 (day of week): 8 is out of range 1-7 (1 = SUN in the 6- and "
                        "7-field forms)"},
        {"0 0 12 ? * 0", "field 6 (day of week): 0 is out of range 1-7 (1 = SUN in the 6- and "
                         "7-field forms)"},
        {"0 0 * * 8", "field 5 (day of week): 8 is out of range 0-7"},
        {"0 0 1 13 *", "field 4 (month): 13 is out of range 1-12"},
        {"0 0 1 0 *", "field 4 (month): 0 is out of range 1-12"},
        {"0 0 32 * *", "field 3 (day of month): 32 is out of range 1-31"},
        {"* * * FOO *", "field 4 (month): unknown name 'FOO'"},
        {"* * * * MONDAY", "field 5 (day of week): unknown name 'MONDAY'"},
        {"*/0 * * * *", "field 1 (minute): step 0 is out of range 1-9999"},
        {"*/ * * * *", "field 1 (minute): a step must be a number after '/'"},
        {"? * * * *", "field 1 (minute): '?' is only allowed in day of month and day of week"},
        {"0 0 ?,1 * *", "field 3 (day of month): '?' must stand alone in its field"},
        {"0 0 12 * * *", "fields 4 and 6 (day of month, day of week): exactly one of them must "
                         "be '?' in the 6-field (Quartz) form"},
        {"0 0 12 ? * ?", "fields 4 and 6 (day of month, day of week): exactly one of them must "
                         "be '?' in the 6-field (Quartz) form"},
        {"0 0 * * 5#6", "field 5 (day of week): '5#6': the week after '#' must be 1-5"},
        {"0 0 * * L", "field 5 (day of week): 'L' needs a weekday before it, e.g. FRIL for the "
                      "last Friday"},
        {"0 0 L-31 * *", "field 3 (day of month): L-31: at most 30 days before the last"},
        {"0 0 LX * *", "field 3 (day of month): 'LX': L must stand as L, L-n or LW"},
        {"0 0 32W * *", "field 3 (day of month): 32 is out of range 1-31"},
        {"@reboot", "unknown macro '@reboot' (known: @yearly @annually @monthly @weekly @daily "
                    "@midnight @hourly)"},
        {"0 0 0 1 1 ? 2100", "field 7 (year): 2100 is out of range 1970-2099"},
        {"0 0 0 1 1 ? 2030-2025", "field 7 (year): range 2030-2025 runs backwards"},
        {"1,,2 * * * *", "field 1 (minute): empty list item"},
        {"1, * * * *", "field 1 (minute): empty list item"},
        {"5x * * * *", "field 1 (minute): unexpected 'x' in '5x'"},
        {"1-2-3 * * * *", "field 1 (minute): unexpected '-' in '1-2-3'"},
        {"- * * * *", "field 1 (minute): unexpected '-' in '-'"},
        {"1- * * * *", "field 1 (minute): a value is missing"},
        {"99999999999 * * * *", "field 1 (minute): 99999999999 is out of range 0-59"},
        {"*/00 * * * *", "field 1 (minute): step 00 is out of range 1-9999"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        mc_cron *c = mc_cron_parse(bad[i].expr, err, sizeof err);
        CHECK(c == NULL && strcmp(err, bad[i].err) == 0, "'%s': got \"%s\", want \"%s\"",
              bad[i].expr, err, bad[i].err);
        mc_cron_free(c);
    }
    /* A tiny err buffer is truncated, not overrun; NULL err is fine. */
    char small[8];
    CHECK(mc_cron_parse("61 * * * *", small, sizeof small) == NULL && strlen(small) == 7);
    CHECK(mc_cron_parse("61 * * * *", NULL, 0) == NULL);
}

/* Successive fires of expr in zone from `from` (UTC), against want[] (UTC,
 * "never" for -1). */
static void check_fires(const mc_tz *tz, const char *expr, const char *from,
                        const char *const *want, size_t n)
{
    char err[256] = "";
    mc_cron *c = mc_cron_parse(expr, err, sizeof err);
    CHECK(c != NULL, "'%s': %s", expr, err);
    if (!c)
        return;
    int64_t t = utc(from);
    for (size_t i = 0; i < n; i++) {
        int64_t next = mc_cron_next(c, tz, t);
        char got[32];
        fmt(next, got);
        CHECK(strcmp(got, want[i]) == 0, "'%s' in %s after %s (fire %zu): %s, want %s", expr,
              mc_tz_name(tz), from, i + 1, got, want[i]);
        if (next < 0)
            break;
        t = next;
    }
    mc_cron_free(c);
}

#define FIRES(tz, expr, from, ...)                                                                 \
    do {                                                                                           \
        static const char *const want_[] = {__VA_ARGS__};                                          \
        check_fires(tz, expr, from, want_, sizeof want_ / sizeof want_[0]);                        \
    } while (0)

static void check_calendar(const mc_tz *u)
{
    /* Plain fields, strictly after: a fire time itself is not "next". */
    FIRES(u, "30 9 * * *", "2024-01-01 09:30:00", "2024-01-02 09:30:00", "2024-01-03 09:30:00");
    FIRES(u, "30 9 * * *", "2024-01-01 09:29:59", "2024-01-01 09:30:00");
    FIRES(u, "*/15 * * * * ?", "2024-01-01 10:00:07", "2024-01-01 10:00:15", "2024-01-01 10:00:30",
          "2024-01-01 10:00:45", "2024-01-01 10:01:00");
    FIRES(u, "0 22-2 * * *", "2024-01-01 03:00:00", "2024-01-01 22:00:00", "2024-01-01 23:00:00",
          "2024-01-02 00:00:00", "2024-01-02 01:00:00", "2024-01-02 02:00:00",
          "2024-01-02 22:00:00");
    FIRES(u, "0 23-3/2 * * *", "2024-01-01 12:00:00", "2024-01-01 23:00:00", "2024-01-02 01:00:00",
          "2024-01-02 03:00:00", "2024-01-02 23:00:00");
    FIRES(u, "@hourly", "2024-01-01 10:30:00", "2024-01-01 11:00:00");
    FIRES(u, "@yearly", "2024-06-01 00:00:00", "2025-01-01 00:00:00");
    FIRES(u, "@weekly", "2024-09-02 00:00:00", "2024-09-08 00:00:00"); /* Sunday */
    FIRES(u, "0 0 1 JAN-MAR *", "2024-02-15 00:00:00", "2024-03-01 00:00:00",
          "2025-01-01 00:00:00");
    /* Day-of-week numbering: Sunday is 0 or 7 in 5 fields, 1 in 6 (Quartz). */
    FIRES(u, "0 0 * * 0", "2024-09-02 00:00:00", "2024-09-08 00:00:00");
    FIRES(u, "0 0 * * 7", "2024-09-02 00:00:00", "2024-09-08 00:00:00");
    FIRES(u, "0 0 * * 1", "2024-09-02 00:00:00", "2024-09-09 00:00:00"); /* Monday */
    FIRES(u, "0 0 0 ? * 1", "2024-09-02 00:00:00", "2024-09-08 00:00:00");
    FIRES(u, "0 0 0 ? * 2", "2024-09-02 00:00:00", "2024-09-09 00:00:00");
    FIRES(u, "0 0 * * 5-7", "2024-09-02 00:00:00", "2024-09-06 00:00:00", "2024-09-07 00:00:00",
          "2024-09-08 00:00:00", "2024-09-13 00:00:00");
    FIRES(u, "0 0 * * SAT-MON", "2024-09-03 00:00:00", "2024-09-07 00:00:00", "2024-09-08 00:00:00",
          "2024-09-09 00:00:00", "2024-09-14 00:00:00");
    /* 5 fields: restricted day of month OR day of week (Sep 13 2024 is a Friday). */
    FIRES(u, "0 0 13 * 5", "2024-09-01 00:00:00", "2024-09-06 00:00:00", "2024-09-13 00:00:00",
          "2024-09-20 00:00:00", "2024-09-27 00:00:00", "2024-10-04 00:00:00",
          "2024-10-11 00:00:00", "2024-10-13 00:00:00");
    /* ... unless one is '*': then the other alone. */
    FIRES(u, "0 0 * * 5", "2024-09-01 00:00:00", "2024-09-06 00:00:00", "2024-09-13 00:00:00");
    /* croniter's corner: a full day of month is unrestricted only when the
     * day of week has a '*'. */
    FIRES(u, "0 0 1-31 * */2", "2024-09-01 00:00:00", "2024-09-03 00:00:00"); /* Sun,Tue,.. */
    FIRES(u, "0 0 1-31 * 2", "2024-09-01 00:00:00", "2024-09-02 00:00:00");   /* OR: every day */
    /* L, L-n, LW, nW. */
    FIRES(u, "0 0 0 L * ?", "2024-02-10 00:00:00", "2024-02-29 00:00:00", "2024-03-31 00:00:00",
          "2024-04-30 00:00:00");
    FIRES(u, "0 0 L * *", "2023-02-10 00:00:00", "2023-02-28 00:00:00");
    FIRES(u, "0 0 0 L-2 * ?", "2024-02-01 00:00:00", "2024-02-27 00:00:00", "2024-03-29 00:00:00");
    FIRES(u, "0 0 0 LW * ?", "2024-08-01 00:00:00", "2024-08-30 00:00:00",      /* 31st: Sat */
          "2024-09-30 00:00:00", "2024-10-31 00:00:00", "2024-11-29 00:00:00"); /* 30th: Sat */
    FIRES(u, "0 0 0 15W * ?", "2024-06-01 00:00:00", "2024-06-14 00:00:00",     /* 15th: Sat */
          "2024-07-15 00:00:00", "2024-08-15 00:00:00", "2024-09-16 00:00:00"); /* Sun */
    FIRES(u, "0 0 0 1W * ?", "2024-05-15 00:00:00", "2024-06-03 00:00:00");     /* 1st: Sat */
    FIRES(u, "0 0 0 31W * ?", "2024-03-01 00:00:00", "2024-03-29 00:00:00",     /* 31st: Sun */
          "2024-05-31 00:00:00"); /* April has no 31st */
    /* dL and d#k. */
    FIRES(u, "0 0 12 ? * 6L", "2024-01-01 00:00:00", "2024-01-26 12:00:00", "2024-02-23 12:00:00",
          "2024-03-29 12:00:00");
    FIRES(u, "0 0 * * 5L", "2024-01-01 00:00:00", "2024-01-26 00:00:00");
    FIRES(u, "0 0 * * FRIL", "2024-01-01 00:00:00", "2024-01-26 00:00:00");
    FIRES(u, "0 0 10 ? * 2#1", "2024-09-01 00:00:00", "2024-09-02 10:00:00", "2024-10-07 10:00:00");
    FIRES(u, "0 0 * * 5#5", "2024-01-01 00:00:00", "2024-03-29 00:00:00", "2024-05-31 00:00:00");
    FIRES(u, "0 0 * * MON#2,FRI#1", "2024-09-01 00:00:00", "2024-09-06 00:00:00",
          "2024-09-09 00:00:00", "2024-10-04 00:00:00");
    /* Leap years; Feb 29 yearly, across 2100 (not a leap year). */
    FIRES(u, "0 0 29 2 *", "2024-03-01 00:00:00", "2028-02-29 00:00:00", "2032-02-29 00:00:00");
    FIRES(u, "0 0 29 2 *", "2096-03-01 00:00:00", "2104-02-29 00:00:00");
    FIRES(u, "0 0 0 28 2 ?", "2100-02-28 00:00:00", "2101-02-28 00:00:00");
    /* Years. */
    FIRES(u, "0 0 0 1 1 ? 2030", "2024-05-05 00:00:00", "2030-01-01 00:00:00", "never");
    FIRES(u, "0 0 0 1 1 ? 2025-2030/2", "2024-05-05 00:00:00", "2025-01-01 00:00:00",
          "2027-01-01 00:00:00", "2029-01-01 00:00:00", "never");
    /* Never: Feb 30; Apr 31; a 5th Monday in a February of a non-leap... year
     * field that has none within the horizon. */
    FIRES(u, "0 0 0 30 2 ?", "2024-01-01 00:00:00", "never");
    FIRES(u, "0 0 31 4 *", "2024-01-01 00:00:00", "never");
    FIRES(u, "0 0 0 ? 2 2#5 2029", "2024-01-01 00:00:00", "never");
    /* Beyond the horizon (8 years): 2040 is 16 years on. */
    FIRES(u, "0 0 0 1 1 ? 2040", "2024-01-01 00:00:00", "never");
    FIRES(u, "0 0 0 1 1 ? 2040", "2033-01-01 00:00:00", "2040-01-01 00:00:00");
    /* Instants before 1970 and milliseconds. */
    FIRES(u, "0 0 * * *", "1969-12-31 12:00:00", "1970-01-01 00:00:00");
    char err[64];
    mc_cron *c = mc_cron_parse("* * * * * ?", err, sizeof err);
    CHECK(c && mc_cron_next(c, u, 999) == 1000 && mc_cron_next(c, u, 1000) == 2000 &&
          mc_cron_next(c, u, -1) == 0 && mc_cron_next(c, u, -1001) == -1000);
    CHECK(c && mc_cron_next(c, u, INT64_MAX) == -1 && mc_cron_next(c, u, INT64_MIN) > INT64_MIN);
    mc_cron_free(c);
}

static void check_dst(void)
{
    char err[256];
    mc_tz *be = mc_tz_load(NULL, "Europe/Berlin", err, sizeof err);
    mc_tz *ny = mc_tz_load(NULL, "America/New_York", err, sizeof err);
    mc_tz *lh = mc_tz_load(NULL, "Australia/Lord_Howe", err, sizeof err);
    CHECK(be && ny && lh, "%s", err);
    if (!be || !ny || !lh)
        goto out;
    /* Berlin, 2024-03-31: 02:00 CET (01:00Z) jumps to 03:00 CEST. 02:30 does
     * not exist: it fires at the gap's end, 03:00 CEST = 01:00Z. */
    FIRES(be, "30 2 * * *", "2024-03-30 12:00:00", "2024-03-31 01:00:00", "2024-04-01 00:30:00");
    /* Every 15 minutes: 02:00-02:45 collapse into one fire at 03:00. */
    FIRES(be, "*/15 * * * *", "2024-03-31 00:40:00", "2024-03-31 00:45:00", "2024-03-31 01:00:00",
          "2024-03-31 01:15:00");
    /* Hourly: 02:00 and 03:00 collapse. */
    FIRES(be, "0 * * * *", "2024-03-30 23:30:00", "2024-03-31 00:00:00", "2024-03-31 01:00:00",
          "2024-03-31 02:00:00");
    /* Berlin, 2024-10-27: 03:00 CEST (01:00Z) goes back to 02:00 CET. 02:30
     * happens twice: it fires at the first, 02:30 CEST = 00:30Z. */
    FIRES(be, "30 2 * * *", "2024-10-26 12:00:00", "2024-10-27 00:30:00", "2024-10-28 01:30:00");
    /* Every 15 minutes through the repeated hour: each reading once. */
    FIRES(be, "*/15 * * * *", "2024-10-27 00:40:00", "2024-10-27 00:45:00", "2024-10-27 02:00:00",
          "2024-10-27 02:15:00");
    /* Starting inside the second pass: wait for readings not yet shown. */
    FIRES(be, "*/15 * * * *", "2024-10-27 01:10:00", "2024-10-27 02:00:00");
    FIRES(be, "30 2 * * *", "2024-10-27 01:10:00", "2024-10-28 01:30:00");
    /* New York, 2024-03-10: 02:00 EST (07:00Z) jumps to 03:00 EDT. */
    FIRES(ny, "0 30 2 * * ?", "2024-03-09 12:00:00", "2024-03-10 07:00:00", "2024-03-11 06:30:00");
    /* New York, 2024-11-03: 02:00 EDT (06:00Z) goes back to 01:00 EST. */
    FIRES(ny, "0 30 1 * * ?", "2024-11-02 12:00:00", "2024-11-03 05:30:00", "2024-11-04 06:30:00");
    FIRES(ny, "0 0 * * *", "2024-11-02 12:00:00", "2024-11-03 04:00:00", "2024-11-04 05:00:00");
    /* Lord Howe: 30-minute changes. 2024-10-06 02:00 +10:30 (15:30Z) jumps
     * to 02:30 +11; 2024-04-07 02:00 +11 (15:00Z) goes back to 01:30 +10:30. */
    FIRES(lh, "15 2 * * *", "2024-10-05 00:00:00", "2024-10-05 15:30:00", "2024-10-06 15:15:00");
    FIRES(lh, "45 1 * * *", "2024-04-06 00:00:00", "2024-04-06 14:45:00", "2024-04-07 15:15:00");
    FIRES(lh, "*/20 * * * *", "2024-04-06 14:30:00", "2024-04-06 14:40:00",
          "2024-04-06 15:30:00"); /* 01:40 +11, then 02:00 +10:30: 01:40-01:59 not twice */
    /* The footer rule (2100): Berlin's last Sunday of March. */
    FIRES(be, "30 2 * * *", "2100-03-27 12:00:00", "2100-03-28 01:00:00");
out:
    mc_tz_free(be);
    mc_tz_free(ny);
    mc_tz_free(lh);
}

static void check_speed(const mc_tz *u)
{
    char err[256];
    mc_tz *be = mc_tz_load(NULL, "Europe/Berlin", err, sizeof err);
    static const char *const exprs[] = {"* * * * * ?",    "0 0 0 29 2 ?",          "0 0 0 30 2 ?",
                                        "0 0 12 ? * 2#5", "59 59 23 31 12 ? 2031", "0 0 * * 5L"};
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int calls = 0;
    for (size_t i = 0; i < sizeof exprs / sizeof exprs[0]; i++) {
        mc_cron *c = mc_cron_parse(exprs[i], err, sizeof err);
        CHECK(c != NULL, "%s", err);
        for (int k = 0; c && k < 2000; k++, calls++)
            mc_cron_next(c, k & 1 ? u : be, utc("2024-01-01 00:00:00") + (int64_t)k * 7777777);
        mc_cron_free(c);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double us = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / 1e3;
    printf("%d next-fire calls, %.2f us each\n", calls, us / calls);
    CHECK(us / calls < 200, "%.1f us per call", us / calls); /* generous for ASan */
    mc_tz_free(be);
}

int main(void)
{
    char err[256];
    mc_tz *u = mc_tz_load(NULL, "UTC", err, sizeof err);
    check_accepts();
    check_rejects();
    check_calendar(u);
    check_dst();
    check_speed(u);
    mc_tz_free(u);
    return check_exit("test_cron");
}
