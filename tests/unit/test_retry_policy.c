/* Unit tests of the retry policy: backoff ceilings per attempt, full-jitter
 * bounds over many random values, saturation for huge attempts, Retry-After
 * as a floor capped by max_backoff_ms, validation, which statuses are
 * permanent, and Retry-After parsing in all three HTTP-date forms (checked
 * against the C library's timegm over four centuries). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "retry_policy.h"

/* xorshift64: reproducible test randomness. */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The ceiling for an attempt, found as the largest possible delay: random ==
 * ceiling gives ceiling, and random == ceiling + 1 gives 0. */
static void check_ceiling(const mc_backoff *p, int attempt, int64_t want)
{
    int64_t top = mc_backoff_delay_ms(p, attempt, -1, (uint64_t)want);
    int64_t wrap = mc_backoff_delay_ms(p, attempt, -1, (uint64_t)want + 1);
    CHECK(top == want && wrap == 0, "attempt %d: ceiling %lld (wrap %lld), want %lld", attempt,
          (long long)top, (long long)wrap, (long long)want);
}

static void test_backoff(void)
{
    mc_backoff p = {5, 100, 2.0, 1000};
    check_ceiling(&p, 1, 100);
    check_ceiling(&p, 2, 200);
    check_ceiling(&p, 3, 400);
    check_ceiling(&p, 4, 800);
    check_ceiling(&p, 5, 1000);
    check_ceiling(&p, 6, 1000);
    check_ceiling(&p, 0, 100);  /* below 1 counts as 1 */
    check_ceiling(&p, -7, 100); /* likewise */

    mc_backoff frac = {10, 100, 1.5, 100000};
    check_ceiling(&frac, 2, 150);
    check_ceiling(&frac, 3, 225);
    check_ceiling(&frac, 4, 337); /* 337.5, rounded down */

    /* Full jitter: over many random values every delay is in [0, ceiling],
     * and the whole range is used (low and high tenths both hit). */
    uint64_t seed = 0x9e3779b97f4a7c15u;
    for (int attempt = 1; attempt <= 6; attempt++) {
        int64_t ceiling = attempt < 5 ? 100LL << (attempt - 1) : 1000;
        int64_t lo = INT64_MAX, hi = -1;
        int out_of_range = 0;
        for (int i = 0; i < 20000; i++) {
            int64_t d = mc_backoff_delay_ms(&p, attempt, -1, next_random(&seed));
            out_of_range += d < 0 || d > ceiling;
            lo = d < lo ? d : lo;
            hi = d > hi ? d : hi;
        }
        CHECK(out_of_range == 0, "attempt %d: %d delays outside [0, %lld]", attempt, out_of_range,
              (long long)ceiling);
        CHECK(lo <= ceiling / 10 && hi >= ceiling - ceiling / 10,
              "attempt %d: delays span only [%lld, %lld] of [0, %lld]", attempt, (long long)lo,
              (long long)hi, (long long)ceiling);
    }

    /* Saturation: huge attempts and multipliers never overflow the ceiling. */
    mc_backoff huge = {INT_MAX, 1000, 10.0, 3600000};
    check_ceiling(&huge, INT_MAX, 3600000);
    check_ceiling(&huge, 1000, 3600000);
    mc_backoff widest = {INT_MAX, INT64_MAX / 2, 1e308, INT64_MAX};
    check_ceiling(&widest, INT_MAX, INT64_MAX);
    CHECK(mc_backoff_delay_ms(&widest, INT_MAX, -1, UINT64_MAX) == INT64_MAX);
    CHECK(mc_backoff_delay_ms(&widest, 1, -1, UINT64_MAX) <= INT64_MAX / 2);
    mc_backoff flat = {INT_MAX, 250, 1.0, 1000};
    check_ceiling(&flat, INT_MAX, 250);

    /* Retry-After is a floor over the jitter, capped at max_backoff_ms. */
    seed = 42;
    int wrong = 0;
    for (int i = 0; i < 5000; i++) {
        uint64_t r = next_random(&seed);
        int64_t plain = mc_backoff_delay_ms(&p, 1, -1, r);
        wrong += mc_backoff_delay_ms(&p, 1, 500, r) != 500;       /* above the ceiling */
        wrong += mc_backoff_delay_ms(&p, 1, 1000, r) != 1000;     /* at the cap */
        wrong += mc_backoff_delay_ms(&p, 1, 86400000, r) != 1000; /* beyond: capped */
        wrong += mc_backoff_delay_ms(&p, 1, 50, r) != (plain > 50 ? plain : 50);
        wrong += mc_backoff_delay_ms(&p, 1, 0, r) != plain; /* 0 changes nothing */
        wrong += mc_backoff_delay_ms(&p, 3, 300, r) < 300;
        wrong += mc_backoff_delay_ms(&p, 3, 300, r) > 400;
    }
    CHECK(wrong == 0, "%d Retry-After delays wrong", wrong);

    CHECK(!mc_backoff_exhausted(&p, 1) && !mc_backoff_exhausted(&p, 4));
    CHECK(mc_backoff_exhausted(&p, 5) && mc_backoff_exhausted(&p, 6));
    mc_backoff once = {1, 100, 2.0, 100};
    CHECK(mc_backoff_exhausted(&once, 1), "max_attempts 1: the first failure is the last");
}

static void test_validate(void)
{
    char err[160];
    mc_backoff ok[] = {{1, 1, 1.0, 1}, {5, 100, 2.0, 1000}, {INT_MAX, 1, 1.5, INT64_MAX}};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        err[0] = '\0';
        CHECK(mc_backoff_validate(&ok[i], err, sizeof err) == 0, "case %zu: %s", i, err);
    }
    struct {
        mc_backoff p;
        const char *want;
    } bad[] = {
        {{0, 100, 2.0, 1000}, "max_attempts is 0; it must be at least 1"},
        {{-3, 100, 2.0, 1000}, "max_attempts is -3"},
        {{5, 0, 2.0, 1000}, "initial_backoff_ms is 0; it must be positive"},
        {{5, -1, 2.0, 1000}, "initial_backoff_ms is -1"},
        {{5, 100, 0.5, 1000}, "multiplier is 0.5; it must be a finite number >= 1"},
        {{5, 100, INFINITY, 1000}, "multiplier is inf"},
        {{5, 100, NAN, 1000}, "multiplier is"},
        {{5, 100, 2.0, 99}, "max_backoff_ms (99) is less than initial_backoff_ms (100)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = '\0';
        CHECK(mc_backoff_validate(&bad[i].p, err, sizeof err) == -1, "case %zu accepted", i);
        CHECK(strstr(err, bad[i].want) != NULL, "case %zu: \"%s\"", i, err);
    }
}

static void test_permanent(void)
{
    int permanent[] = {400, 401, 403, 404, 405, 409, 410, 413, 415, 422, 425, 451, 499};
    int transient[] = {0,   100, 200, 201, 204, 299, 301, 302, 304, 399,
                       408, 429, 500, 502, 503, 504, 599, -1,  600, 1000};
    for (size_t i = 0; i < sizeof permanent / sizeof *permanent; i++)
        CHECK(mc_http_status_permanent(permanent[i]), "%d", permanent[i]);
    for (size_t i = 0; i < sizeof transient / sizeof *transient; i++)
        CHECK(!mc_http_status_permanent(transient[i]), "%d", transient[i]);
}

static int64_t parse(const char *v, int64_t now_ms)
{
    return mc_parse_retry_after(v, strlen(v), now_ms);
}

static void test_retry_after(void)
{
    const int64_t now = 1700000000000; /* 2023-11-14T22:13:20Z */
    CHECK(parse("120", now) == 120000);
    CHECK(parse("0", now) == 0);
    CHECK(parse(" \t 7 \t", now) == 7000);
    CHECK(parse("31536000", now) == MC_RETRY_AFTER_MAX_MS);
    CHECK(parse("31536001", now) == MC_RETRY_AFTER_MAX_MS);
    CHECK(parse("99999999999999999999999999", now) == MC_RETRY_AFTER_MAX_MS);
    CHECK(mc_parse_retry_after("120abc", 3, now) == 120000, "only len bytes are read");

    /* 2023-11-14T22:13:30Z is now + 10 s in each form (python3 -c 'import
     * calendar; print(calendar.timegm((2023,11,14,22,13,30))*1000 -
     * 1700000000000)' prints 10000). */
    CHECK(parse("Tue, 14 Nov 2023 22:13:30 GMT", now) == 10000);
    CHECK(parse("Tuesday, 14-Nov-23 22:13:30 GMT", now) == 10000);
    CHECK(parse("Tue Nov 14 22:13:30 2023", now) == 10000);
    CHECK(parse("  Tue, 14 Nov 2023 22:13:30 GMT ", now) == 10000);
    CHECK(parse("Tue, 14 Nov 2023 22:13:20 GMT", now) == 0, "now is not in the future");
    CHECK(parse("Tue, 14 Nov 2023 22:13:19 GMT", now) == 0, "the past gives 0");
    /* The RFC 9110 example, 784111777 s after the epoch, 1.5 s ahead. */
    const int64_t rfc_now = 784111777000 - 1500;
    CHECK(parse("Sun, 06 Nov 1994 08:49:37 GMT", rfc_now) == 1500);
    CHECK(parse("Sunday, 06-Nov-94 08:49:37 GMT", rfc_now) == 1500);
    CHECK(parse("Sun Nov  6 08:49:37 1994", rfc_now) == 1500);
    CHECK(parse("Sun, 06 Nov 1994 08:49:37 GMT", now) == 0);
    /* asctime's single-digit day: 2023-11-01T00:00:05Z, 5 s ahead. */
    CHECK(parse("Wed Nov  1 00:00:05 2023", 1698796800000) == 5000);
    /* RFC 850 years: 99 means 1999 (past) in 2023; 70 means 2070, not more
     * than 50 years ahead, hence capped. */
    CHECK(parse("Wednesday, 01-Dec-99 00:00:00 GMT", now) == 0);
    CHECK(parse("Tuesday, 01-Jan-70 00:00:00 GMT", now) == MC_RETRY_AFTER_MAX_MS);
    CHECK(parse("Fri, 31 Dec 9999 23:59:59 GMT", now) == MC_RETRY_AFTER_MAX_MS);
    CHECK(parse("Thu, 29 Feb 2024 00:00:00 GMT", 1709164800000 - 2000) == 2000, "a leap day");
    /* 23:59:60 is counted as the first second of the next day (1483228800). */
    CHECK(parse("Sat, 31 Dec 2016 23:59:60 GMT", 1483228800000 - 1000) == 1000, "a leap second");

    const char *garbage[] = {
        "",
        "   ",
        "-5",
        "+5",
        "1.5",
        "5 s",
        "0x10",
        "soon",
        "Tue, 14 Nov 2023 22:13:30 UTC",  /* not GMT */
        "Tue, 14 Nov 2023 22:13:30",      /* no zone */
        "Tue, 14 Nov 2023 22:13:30 GMTx", /* trailing junk */
        "Tue, 14 nov 2023 22:13:30 GMT",  /* case matters */
        "Tue, 14 Nov 23 22:13:30 GMT",    /* two-digit year in IMF-fixdate */
        "Tue, 4 Nov 2023 22:13:30 GMT",   /* one-digit day */
        "Tue,14 Nov 2023 22:13:30 GMT",   /* missing space */
        "Tue, 31 Nov 2023 22:13:30 GMT",  /* November has 30 days */
        "Wed, 29 Feb 2023 00:00:00 GMT",  /* 2023 is not a leap year */
        "Tue, 00 Nov 2023 22:13:30 GMT",
        "Tue, 14 Nov 2023 24:00:00 GMT",
        "Tue, 14 Nov 2023 22:60:00 GMT",
        "Tue, 14 Nov 2023 22:13:61 GMT",
        "Tue, 14 Nov 2023 2:13:30 GMT",
        "Tus, 14 Nov 2023 22:13:30 GMT",
        "Tuesday, 14 Nov 2023 22:13:30 GMT", /* long day name, IMF date */
        "Tue, 14-Nov-23 22:13:30 GMT",       /* short day name, RFC 850 date */
        "Tue Nov 14 22:13:30 2023 GMT",
        "Tue Nov 14 22:13:30 23",
        "Tue Nov 4 22:13:30 2023", /* asctime pads a one-digit day with a space */
        "Tue",
    };
    for (size_t i = 0; i < sizeof garbage / sizeof *garbage; i++)
        CHECK(parse(garbage[i], now) == -1, "'%s' parsed as %lld", garbage[i],
              (long long)parse(garbage[i], now));
    CHECK(mc_parse_retry_after(NULL, 0, now) == -1);
    CHECK(mc_parse_retry_after("12\0"
                               "3",
                               4, now) == -1,
          "a NUL inside");

    /* Every form against timegm, for dates 1900-2300 (a step of 3 days and
     * 7 h 13 min 17 s walks every weekday, month and hour), with now 777 ms
     * before. Done under an odd TZ to show that it does not matter. */
    setenv("TZ", "Asia/Kathmandu", 1);
    tzset();
    int wrong = 0;
    time_t end = 10413792000; /* 2300-01-01 */
    for (time_t t = -2208988800; t < end; t += 3 * 86400 + 7 * 3600 + 13 * 60 + 17) {
        struct tm tm;
        gmtime_r(&t, &tm);
        char imf[64], rfc850[64], asc[64];
        strftime(imf, sizeof imf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        strftime(rfc850, sizeof rfc850, "%A, %d-%b-%y %H:%M:%S GMT", &tm);
        strftime(asc, sizeof asc, "%a %b %e %H:%M:%S %Y", &tm);
        int64_t at = (int64_t)timegm(&tm) * 1000, before = at - 777;
        int bad = (parse(imf, before) != 777) + (parse(rfc850, before) != 777) +
                  (parse(asc, before) != 777) + (parse(imf, at + 1) != 0);
        if (bad && !wrong)
            fprintf(stderr, "first failing date: '%s' '%s' '%s'\n", imf, rfc850, asc);
        wrong += bad;
    }
    CHECK(wrong == 0, "%d date parses disagree with timegm", wrong);
    unsetenv("TZ");
    tzset();
}

int main(void)
{
    test_backoff();
    test_validate();
    test_permanent();
    test_retry_after();
    return check_exit("test_retry_policy");
}
