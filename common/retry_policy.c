/* Backoff, retryability and Retry-After (see retry_policy.h). The backoff
 * ceiling is computed in floating point and compared before conversion, so
 * no attempt number or multiplier can overflow it; HTTP dates are turned
 * into Unix time by civil-calendar arithmetic rather than mktime/timegm,
 * which keeps the result independent of TZ and the locale. */
#include "retry_policy.h"

#include <math.h>
#include <stdio.h>

int64_t mc_backoff_delay_ms(const mc_backoff *p, int failed_attempt, int64_t retry_after_ms,
                            uint64_t random)
{
    int64_t max = p->max_backoff_ms > 0 ? p->max_backoff_ms : 0;
    int n = failed_attempt < 1 ? 1 : failed_attempt;
    double grown = (double)p->initial_backoff_ms * pow(p->multiplier, (double)(n - 1));
    /* !(<) also catches infinity and NaN; (double)max is exact or rounds up
     * to 2^63, so a grown below it converts without overflow. */
    int64_t ceiling = !(grown < (double)max) ? max : grown > 0 ? (int64_t)grown : 0;
    int64_t delay = (int64_t)(random % ((uint64_t)ceiling + 1));
    if (retry_after_ms >= 0) {
        int64_t floor = retry_after_ms < max ? retry_after_ms : max;
        if (delay < floor)
            delay = floor;
    }
    return delay;
}

bool mc_backoff_exhausted(const mc_backoff *p, int failed_attempt)
{
    return failed_attempt >= p->max_attempts;
}

int mc_backoff_validate(const mc_backoff *p, char *err, size_t errlen)
{
    if (p->max_attempts < 1) {
        snprintf(err, errlen, "max_attempts is %d; it must be at least 1", p->max_attempts);
        return -1;
    }
    if (p->initial_backoff_ms <= 0) {
        snprintf(err, errlen, "initial_backoff_ms is %lld; it must be positive",
                 (long long)p->initial_backoff_ms);
        return -1;
    }
    if (!isfinite(p->multiplier) || p->multiplier < 1.0) {
        snprintf(err, errlen, "multiplier is %g; it must be a finite number >= 1", p->multiplier);
        return -1;
    }
    if (p->max_backoff_ms < p->initial_backoff_ms) {
        snprintf(err, errlen, "max_backoff_ms (%lld) is less than initial_backoff_ms (%lld)",
                 (long long)p->max_backoff_ms, (long long)p->initial_backoff_ms);
        return -1;
    }
    return 0;
}

bool mc_http_status_permanent(int status)
{
    return status >= 400 && status <= 499 && status != 408 && status != 429;
}

/* ---- Retry-After ---- */

#define MS_PER_DAY (86400LL * 1000)

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar. Counts
 * from March so that the leap day ends the year: a year of the shifted
 * calendar has 365 days plus 1 every 4, minus 1 every 100, plus 1 every 400
 * (146097 days per 400-year era), and month lengths from March repeat in a
 * pattern that (153 * month + 2) / 5 gives exactly. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t year_of_era = y - era * 400;
    int64_t day_of_year = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    return era * 146097 + day_of_era - 719468;
}

static bool is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int64_t y, int m)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* The calendar year that contains Unix time ms. */
static int64_t year_of(int64_t ms)
{
    int64_t days = ms / MS_PER_DAY - (ms % MS_PER_DAY < 0);
    int64_t y = 1970 + days / 366; /* at or below the answer */
    while (days_from_civil(y + 1, 1, 1) <= days)
        y++;
    while (days_from_civil(y, 1, 1) > days)
        y--;
    return y;
}

/* A cursor over the header value. */
typedef struct cursor {
    const char *p, *end;
} cursor;

static bool take_char(cursor *c, char ch)
{
    if (c->p == c->end || *c->p != ch)
        return false;
    c->p++;
    return true;
}

/* Exactly n digits into *out. */
static bool take_digits(cursor *c, int n, int *out)
{
    if (c->end - c->p < n)
        return false;
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (c->p[i] < '0' || c->p[i] > '9')
            return false;
        v = v * 10 + (c->p[i] - '0');
    }
    c->p += n;
    *out = v;
    return true;
}

/* One of the n words (exact case), its index in *out. */
static bool take_word(cursor *c, const char *const *words, int n, int *out)
{
    for (int i = 0; i < n; i++) {
        size_t len = 0;
        while (words[i][len])
            len++;
        if ((size_t)(c->end - c->p) >= len) {
            bool same = true;
            for (size_t k = 0; same && k < len; k++)
                same = c->p[k] == words[i][k];
            if (same) {
                c->p += len;
                *out = i;
                return true;
            }
        }
    }
    return false;
}

static const char *const day_names[7] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
/* Longest first is not needed: no long name is a prefix of another. */
static const char *const long_day_names[7] = {"Monday", "Tuesday",  "Wednesday", "Thursday",
                                              "Friday", "Saturday", "Sunday"};
static const char *const month_names[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

typedef struct civil_time {
    int64_t year;
    int month, day, hour, minute, second;
} civil_time;

/* "HH:MM:SS" */
static bool take_time(cursor *c, civil_time *t)
{
    return take_digits(c, 2, &t->hour) && take_char(c, ':') && take_digits(c, 2, &t->minute) &&
           take_char(c, ':') && take_digits(c, 2, &t->second);
}

static bool take_month(cursor *c, civil_time *t)
{
    int m;
    if (!take_word(c, month_names, 12, &m))
        return false;
    t->month = m + 1;
    return true;
}

/* The three HTTP-date forms of RFC 9110 5.6.7; all of c must be consumed. */
static bool parse_http_date(cursor *c, int64_t now_ms, civil_time *t)
{
    int day_name, year;
    cursor start = *c;
    if (take_word(c, long_day_names, 7, &day_name) && take_char(c, ',')) {
        /* rfc850-date: Sunday, 06-Nov-94 08:49:37 GMT */
        int yy;
        if (!(take_char(c, ' ') && take_digits(c, 2, &t->day) && take_char(c, '-') &&
              take_month(c, t) && take_char(c, '-') && take_digits(c, 2, &yy) &&
              take_char(c, ' ') && take_time(c, t) && take_char(c, ' ') && take_char(c, 'G') &&
              take_char(c, 'M') && take_char(c, 'T')))
            return false;
        /* The latest year ending in yy that is at most 50 years ahead. */
        int64_t limit = year_of(now_ms) + 50;
        int64_t y = limit - ((limit % 100 + 100) % 100) + yy;
        t->year = y > limit ? y - 100 : y;
        return c->p == c->end;
    }
    *c = start;
    if (!take_word(c, day_names, 7, &day_name))
        return false;
    if (take_char(c, ',')) {
        /* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
        if (!(take_char(c, ' ') && take_digits(c, 2, &t->day) && take_char(c, ' ') &&
              take_month(c, t) && take_char(c, ' ') && take_digits(c, 4, &year) &&
              take_char(c, ' ') && take_time(c, t) && take_char(c, ' ') && take_char(c, 'G') &&
              take_char(c, 'M') && take_char(c, 'T')))
            return false;
        t->year = year;
        return c->p == c->end;
    }
    /* asctime-date: Sun Nov  6 08:49:37 1994 */
    if (!(take_char(c, ' ') && take_month(c, t) && take_char(c, ' ')))
        return false;
    if (!(take_char(c, ' ') ? take_digits(c, 1, &t->day) : take_digits(c, 2, &t->day)))
        return false;
    if (!(take_char(c, ' ') && take_time(c, t) && take_char(c, ' ') && take_digits(c, 4, &year)))
        return false;
    t->year = year;
    return c->p == c->end;
}

int64_t mc_parse_retry_after(const char *value, size_t len, int64_t now_ms)
{
    if (!value)
        return -1;
    cursor c = {value, value + len};
    while (c.p < c.end && (*c.p == ' ' || *c.p == '\t'))
        c.p++;
    while (c.end > c.p && (c.end[-1] == ' ' || c.end[-1] == '\t'))
        c.end--;
    if (c.p == c.end)
        return -1;
    if (*c.p >= '0' && *c.p <= '9') {
        /* delay-seconds: 1*DIGIT, saturating at the cap. */
        int64_t seconds = 0;
        for (const char *q = c.p; q < c.end; q++) {
            if (*q < '0' || *q > '9')
                return -1;
            if (seconds <= MC_RETRY_AFTER_MAX_MS / 1000)
                seconds = seconds * 10 + (*q - '0');
        }
        return seconds > MC_RETRY_AFTER_MAX_MS / 1000 ? MC_RETRY_AFTER_MAX_MS : seconds * 1000;
    }
    civil_time t = {0};
    if (!parse_http_date(&c, now_ms, &t))
        return -1;
    if (t.day < 1 || t.day > days_in_month(t.year, t.month) || t.hour > 23 || t.minute > 59 ||
        t.second > 60) /* 60: a leap second */
        return -1;
    int64_t at_ms = days_from_civil(t.year, t.month, t.day) * MS_PER_DAY +
                    ((int64_t)t.hour * 3600 + t.minute * 60 + t.second) * 1000;
    if (at_ms <= now_ms)
        return 0;
    /* at_ms is within a few thousand years of 1970, so at_ms - cap cannot
     * overflow, while at_ms - now_ms could for an absurd now_ms. */
    if (now_ms < at_ms - MC_RETRY_AFTER_MAX_MS)
        return MC_RETRY_AFTER_MAX_MS;
    return at_ms - now_ms;
}
