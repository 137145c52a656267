/* Cron parsing and next-fire calculation; see cron.h for the accepted forms
 * and the daylight-saving rules. An expression becomes bit sets, one per
 * field, plus the day-of-month and day-of-week specials (L, W, #) that only a
 * concrete month can resolve. The next fire is found in two steps: the next
 * matching wall-clock reading, by skipping whole years, months, days, hours
 * and minutes on those bit sets; then the instant the zone's clock first shows
 * that reading, by walking the zone's offset periods. */
#include "cron.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { F_SEC, F_MIN, F_HOUR, F_DOM, F_MON, F_DOW, F_YEAR, F_COUNT };

static const char *const field_name[F_COUNT] = {"second", "minute",      "hour", "day of month",
                                                "month",  "day of week", "year"};

#define YEAR_MIN 1970
#define YEAR_MAX 2099
#define T_MIN INT64_C(-62135596800) /* 0001-01-01T00:00:00Z */
#define T_MAX INT64_C(253402300799) /* 9999-12-31T23:59:59Z */
#define OFF_SPAN 93600              /* exceeds any UTC offset a zone may have (tz.c) */

struct mc_cron {
    uint64_t sec, min;  /* bit v: value v */
    uint32_t hour;      /* bits 0-23 */
    uint32_t dom;       /* bits 1-31: plain days of the month */
    uint32_t dom_last;  /* bit n: L-n, the n-th day before the last */
    uint32_t dom_near;  /* bit n: nW, the weekday nearest day n */
    bool dom_lw;        /* LW: the month's last weekday */
    uint16_t month;     /* bits 1-12 */
    uint8_t dow;        /* bits 0-6, 0 = Sunday whatever the form's numbering */
    uint8_t dow_last;   /* bit d: the last weekday d of the month (dL) */
    uint8_t dow_nth[7]; /* per weekday, bit k: its k-th in the month (d#k) */
    uint64_t year[3];   /* bit y - 1970 */
    bool any_year;
    bool dom_any, dow_any; /* an unrestricted day field (cron.h) */
    bool day_or;           /* both restricted: a day matches when either does */
};

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* ---- parsing ---- */

/* One field as parsed: its values and specials, before the day fields are
 * combined. Bit v of bits is value v (the year's bit is v - 1970; day of week
 * is already 0 = Sunday). */
typedef struct field {
    uint64_t bits[3];
    uint32_t dom_last, dom_near;
    bool dom_lw;
    uint8_t dow_last, dow_nth[7];
    bool question, star, special;
    const char *text;
    size_t len;
} field;

typedef struct parser {
    bool classic; /* the 5-field form (dow 0-7, Sunday 0 or 7) */
    int pos;      /* 1-based position of the field in the expression */
    int kind;     /* F_* */
    char *err;
    size_t errlen;
} parser;

static void field_err(const parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void field_err(const parser *p, const char *fmt, ...)
{
    if (!p->err || p->errlen == 0)
        return;
    int n = snprintf(p->err, p->errlen, "field %d (%s): ", p->pos, field_name[p->kind]);
    if (n < 0 || (size_t)n >= p->errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

/* The values a field's numbers may take, in the form's own numbering. */
static void field_range(const parser *p, int *lo, int *hi)
{
    static const int los[F_COUNT] = {0, 0, 0, 1, 1, 1, YEAR_MIN};
    static const int his[F_COUNT] = {59, 59, 23, 31, 12, 7, YEAR_MAX};
    *lo = p->kind == F_DOW && p->classic ? 0 : los[p->kind];
    *hi = his[p->kind];
}

static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

/* A name's value in the form's numbering, or -1. */
static int name_value(const parser *p, const char *s)
{
    static const char months[] = "janfebmaraprmayjunjulaugsepoctnovdec";
    static const char days[] = "sunmontuewedthufrisat";
    const char *table = p->kind == F_MON ? months : p->kind == F_DOW ? days : NULL;
    if (!table)
        return -1;
    size_t count = strlen(table) / 3;
    for (size_t i = 0; i < count; i++)
        if (lower(s[0]) == table[3 * i] && lower(s[1]) == table[3 * i + 1] &&
            lower(s[2]) == table[3 * i + 2])
            return p->kind == F_MON ? (int)i + 1 : p->classic ? (int)i : (int)i + 1;
    return -1;
}

/* A number or a name at *s (before end), range-checked; advances *s. */
static bool parse_value(const parser *p, const char **s, const char *end, int *out)
{
    const char *q = *s;
    int lo, hi;
    field_range(p, &lo, &hi);
    if (q < end && is_digit(*q)) {
        long v = 0;
        while (q < end && is_digit(*q)) {
            if (v < 100000000)
                v = v * 10 + (*q - '0');
            q++;
        }
        if (v < lo || v > hi) { /* quoted as written: no overflow, no surprise */
            int w = (int)(q - *s > 20 ? 20 : q - *s);
            if (p->kind == F_DOW && !p->classic)
                field_err(p, "%.*s is out of range %d-%d (1 = SUN in the 6- and 7-field forms)", w,
                          *s, lo, hi);
            else
                field_err(p, "%.*s is out of range %d-%d", w, *s, lo, hi);
            return false;
        }
        *out = (int)v;
    } else if (q < end && is_alpha(*q)) {
        const char *a = q;
        while (q < end && is_alpha(*q))
            q++;
        int v = q - a == 3 ? name_value(p, a) : -1;
        if (v < 0) {
            field_err(p, "unknown name '%.*s'", (int)(q - a > 16 ? 16 : q - a), a);
            return false;
        }
        *out = v;
    } else {
        if (q < end)
            field_err(p, "unexpected '%c' in '%.*s'", *q, (int)(end - *s > 32 ? 32 : end - *s), *s);
        else
            field_err(p, "a value is missing");
        return false;
    }
    *s = q;
    return true;
}

static void set_bit(const parser *p, field *f, int v)
{
    if (p->kind == F_DOW)
        v = p->classic ? v % 7 : v - 1; /* to 0 = Sunday */
    else if (p->kind == F_YEAR)
        v -= YEAR_MIN;
    f->bits[v / 64] |= UINT64_C(1) << (v % 64);
}

/* Values a, a+step, ... up to b; when a > b, on through the top of the cycle
 * and round from its bottom (the classic day of week cycles over 0-6, its 7
 * being Sunday again). */
static bool add_range(const parser *p, field *f, int a, int b, int step)
{
    int lo, hi;
    field_range(p, &lo, &hi);
    if (p->kind == F_DOW && p->classic) {
        hi = 6;
        if (a == 7) { /* "7-1" starts on Sunday; "5-7" simply ends on it */
            a = 0;
            if (b == 7)
                b = 0;
        }
    }
    if (a <= b) {
        for (int v = a; v <= b; v += step)
            set_bit(p, f, v);
        return true;
    }
    if (p->kind == F_YEAR) {
        field_err(p, "range %d-%d runs backwards", a, b);
        return false;
    }
    int n = (hi - a + 1) + (b - lo + 1);
    for (int i = 0; i < n; i += step)
        set_bit(p, f, a + i > hi ? a + i - (hi - lo + 1) : a + i);
    return true;
}

/* "/n" at *s if present (a step of at least 1); 0 if absent. */
static bool parse_step(const parser *p, const char **s, const char *end, int *step)
{
    *step = 0;
    if (*s >= end || **s != '/')
        return true;
    const char *q = *s + 1;
    long v = 0;
    if (q >= end || !is_digit(*q)) {
        field_err(p, "a step must be a number after '/'");
        return false;
    }
    while (q < end && is_digit(*q)) {
        if (v < 100000000)
            v = v * 10 + (*q - '0');
        q++;
    }
    if (v < 1 || v > 9999) {
        field_err(p, "step %.*s is out of range 1-9999", (int)(q - *s - 1 > 20 ? 20 : q - *s - 1),
                  *s + 1);
        return false;
    }
    *step = (int)v;
    *s = q;
    return true;
}

static bool trailing(const parser *p, const char *s, const char *end, const char *item)
{
    if (s == end)
        return true;
    field_err(p, "unexpected '%c' in '%.*s'", *s, (int)(end - item > 32 ? 32 : end - item), item);
    return false;
}

/* Day-of-month specials: L, L-n, LW, nW. Returns 1 if the item was one, 0 if
 * not, -1 on error. */
static int parse_dom_special(const parser *p, field *f, const char *s, const char *end)
{
    size_t len = (size_t)(end - s);
    if (lower(s[0]) == 'l') {
        if (len == 1) {
            f->dom_last |= 1;
        } else if (len == 2 && lower(s[1]) == 'w') {
            f->dom_lw = true;
        } else if (s[1] == '-' && len > 2 && is_digit(s[2])) {
            long n = 0;
            const char *q = s + 2;
            while (q < end && is_digit(*q)) {
                if (n < 1000)
                    n = n * 10 + (*q - '0');
                q++;
            }
            if (!trailing(p, q, end, s))
                return -1;
            if (n > 30) {
                field_err(p, "L-%ld: at most 30 days before the last", n);
                return -1;
            }
            f->dom_last |= UINT32_C(1) << n;
        } else {
            field_err(p, "'%.*s': L must stand as L, L-n or LW", (int)(len > 32 ? 32 : len), s);
            return -1;
        }
        f->special = true;
        return 1;
    }
    if (len >= 2 && lower(end[-1]) == 'w' && is_digit(s[0])) {
        const char *q = s;
        int d;
        if (!parse_value(p, &q, end - 1, &d) || !trailing(p, q, end - 1, s))
            return -1;
        f->dom_near |= UINT32_C(1) << d;
        f->special = true;
        return 1;
    }
    return 0;
}

/* Day-of-week specials: dL and d#k. Same returns as parse_dom_special. */
static int parse_dow_special(const parser *p, field *f, const char *s, const char *end)
{
    size_t len = (size_t)(end - s);
    const char *hash = memchr(s, '#', len);
    if (len == 1 && lower(s[0]) == 'l') {
        field_err(p, "'L' needs a weekday before it, e.g. FRIL for the last Friday");
        return -1;
    }
    if (!hash && !(len >= 2 && lower(end[-1]) == 'l'))
        return 0;
    const char *vend = hash ? hash : end - 1, *q = s;
    int d;
    if (!parse_value(p, &q, vend, &d) || !trailing(p, q, vend, s))
        return -1;
    int wd = p->classic ? d % 7 : d - 1;
    if (hash) {
        const char *k = hash + 1;
        if (end - k != 1 || !is_digit(*k) || *k < '1' || *k > '5') {
            field_err(p, "'%.*s': the week after '#' must be 1-5", (int)(len > 32 ? 32 : len), s);
            return -1;
        }
        f->dow_nth[wd] |= (uint8_t)(1u << (*k - '0'));
    } else {
        f->dow_last |= (uint8_t)(1u << wd);
    }
    f->special = true;
    return 1;
}

static bool parse_item(const parser *p, field *f, const char *s, const char *end)
{
    int lo, hi;
    field_range(p, &lo, &hi);
    if (s == end) {
        field_err(p, "empty list item");
        return false;
    }
    if (*s == '?') {
        if (p->kind != F_DOM && p->kind != F_DOW) {
            field_err(p, "'?' is only allowed in day of month and day of week");
            return false;
        }
        if (f->len != 1) {
            field_err(p, "'?' must stand alone in its field");
            return false;
        }
        f->question = true;
        return true;
    }
    if (p->kind == F_DOM || p->kind == F_DOW) {
        int r =
            p->kind == F_DOM ? parse_dom_special(p, f, s, end) : parse_dow_special(p, f, s, end);
        if (r != 0)
            return r > 0;
    }
    const char *q = s;
    int a, b, step;
    if (*q == '*') {
        q++;
        a = lo;
        b = p->kind == F_DOW && p->classic ? 6 : hi;
        if (!parse_step(p, &q, end, &step) || !trailing(p, q, end, s))
            return false;
        return add_range(p, f, a, b, step ? step : 1);
    }
    if (!parse_value(p, &q, end, &a))
        return false;
    b = a;
    bool ranged = false;
    if (q < end && *q == '-') {
        q++;
        if (!parse_value(p, &q, end, &b))
            return false;
        ranged = true;
    }
    if (!parse_step(p, &q, end, &step) || !trailing(p, q, end, s))
        return false;
    if (step && !ranged)
        b = p->kind == F_DOW && p->classic ? 6 : hi; /* a/n: from a to the top */
    if (step && !ranged && a > b)
        b = a; /* classic "7/2": Sunday only */
    return add_range(p, f, a, b, step ? step : 1);
}

static bool parse_field(const parser *p, field *f)
{
    const char *s = f->text, *end = f->text + f->len;
    f->star = f->len == 1 && s[0] == '*';
    for (;;) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        const char *iend = comma ? comma : end;
        if (!parse_item(p, f, s, iend))
            return false;
        if (!comma)
            return true;
        s = comma + 1;
    }
}

/* Whether a day field lists its whole range (and nothing special). */
static bool field_full(const field *f, int kind)
{
    uint64_t want = kind == F_DOM ? UINT64_C(0xfffffffe) : UINT64_C(0x7f);
    return !f->special && (f->bits[0] & want) == want;
}

static const struct {
    const char *name, *expansion;
} macros[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

mc_cron *mc_cron_parse(const char *expr, char *err, size_t errlen)
{
    if (!expr)
        expr = "";
    const char *s = expr, *end = expr + strlen(expr);
    while (s < end && (is_space(*s) || *s == '\n' || *s == '\r'))
        s++;
    while (end > s && (is_space(end[-1]) || end[-1] == '\n' || end[-1] == '\r'))
        end--;
    if (s == end) {
        snprintf(err, errlen, "empty expression");
        return NULL;
    }
    if (*s == '@') {
        size_t len = (size_t)(end - s);
        for (size_t i = 0; i < sizeof macros / sizeof macros[0]; i++) {
            const char *m = macros[i].name;
            size_t j = 0;
            while (j < len && m[j] && lower(s[j]) == m[j])
                j++;
            if (j == len && m[j] == '\0')
                return mc_cron_parse(macros[i].expansion, err, errlen);
        }
        snprintf(err, errlen,
                 "unknown macro '%.*s' (known: @yearly @annually @monthly @weekly "
                 "@daily @midnight @hourly)",
                 (int)(len > 32 ? 32 : len), s);
        return NULL;
    }
    field f[F_COUNT];
    memset(f, 0, sizeof f);
    int n = 0;
    while (s < end) {
        const char *b = s;
        while (s < end && !is_space(*s))
            s++;
        if (n < F_COUNT) {
            f[n].text = b;
            f[n].len = (size_t)(s - b);
        }
        n++;
        while (s < end && is_space(*s))
            s++;
    }
    if (n < 5 || n > 7) {
        snprintf(err, errlen, "expected 5, 6 or 7 fields, got %d", n);
        return NULL;
    }
    static const int kinds5[] = {F_MIN, F_HOUR, F_DOM, F_MON, F_DOW};
    static const int kinds7[] = {F_SEC, F_MIN, F_HOUR, F_DOM, F_MON, F_DOW, F_YEAR};
    field by_kind[F_COUNT];
    memset(by_kind, 0, sizeof by_kind);
    for (int i = 0; i < n; i++) {
        parser p = {.classic = n == 5,
                    .pos = i + 1,
                    .kind = n == 5 ? kinds5[i] : kinds7[i],
                    .err = err,
                    .errlen = errlen};
        if (!parse_field(&p, &f[i]))
            return NULL;
        by_kind[p.kind] = f[i];
    }
    field *dom = &by_kind[F_DOM], *dow = &by_kind[F_DOW];
    mc_cron *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (n == 5) {
        c->sec = 1; /* second 0 */
        /* croniter's rule (cron.h): a day field is unrestricted when written
         * "*" or "?", or when it covers its range and the other has a '*'. */
        c->dom_any = dom->star || dom->question ||
                     (field_full(dom, F_DOM) && memchr(dow->text, '*', dow->len));
        c->dow_any = dow->star || dow->question ||
                     (field_full(dow, F_DOW) && memchr(dom->text, '*', dom->len));
        c->day_or = !c->dom_any && !c->dow_any;
    } else {
        if (dom->question == dow->question) {
            snprintf(err, errlen,
                     "fields 4 and 6 (day of month, day of week): exactly one of them must be '?' "
                     "in the %d-field (Quartz) form",
                     n);
            free(c);
            return NULL;
        }
        c->sec = by_kind[F_SEC].bits[0];
        c->dom_any = dom->question || dom->star;
        c->dow_any = dow->question || dow->star;
    }
    c->min = by_kind[F_MIN].bits[0];
    c->hour = (uint32_t)by_kind[F_HOUR].bits[0];
    c->dom = (uint32_t)dom->bits[0];
    c->dom_last = dom->dom_last;
    c->dom_near = dom->dom_near;
    c->dom_lw = dom->dom_lw;
    c->month = (uint16_t)by_kind[F_MON].bits[0];
    c->dow = (uint8_t)dow->bits[0];
    c->dow_last = dow->dow_last;
    memcpy(c->dow_nth, dow->dow_nth, sizeof c->dow_nth);
    c->any_year = n < 7 || by_kind[F_YEAR].star;
    memcpy(c->year, by_kind[F_YEAR].bits, sizeof c->year);
    return c;
}

void mc_cron_free(mc_cron *c)
{
    free(c);
}

/* ---- the next fire ---- */

/* The lowest set bit at or above from, or -1. */
static int next_bit(uint64_t mask, int from)
{
    if (from >= 64)
        return -1;
    uint64_t m = mask & (~UINT64_C(0) << from);
    return m ? __builtin_ctzll(m) : -1;
}

static int next_year(const mc_cron *c, int64_t y)
{
    for (int64_t v = y < YEAR_MIN ? YEAR_MIN : y; v <= YEAR_MAX; v++) {
        int i = (int)(v - YEAR_MIN);
        if (c->year[i / 64] >> (i % 64) & 1)
            return (int)v;
    }
    return -1;
}

/* The days of month m of year y the day fields select: bit d for day d. */
static uint32_t day_mask(const mc_cron *c, int64_t y, int m)
{
    int nd = mc_month_days(y, m);
    uint32_t all = ((UINT32_C(1) << nd) - 1) << 1;
    if (c->dom_any && c->dow_any)
        return all;
    int wd1 = mc_weekday(mc_days_from_civil(y, m, 1)); /* weekday of the 1st */
    uint32_t dom = 0, dow = 0;
    if (!c->dom_any) {
        dom = c->dom & all;
        for (int n = 0; n <= 30; n++)
            if ((c->dom_last >> n & 1) && nd - n >= 1)
                dom |= UINT32_C(1) << (nd - n);
        for (int n = 1; n <= nd; n++) {
            if (!(c->dom_near >> n & 1))
                continue;
            int wd = (wd1 + n - 1) % 7, d = n;
            if (wd == 6) /* Saturday: the Friday before, or Monday if that leaves the month */
                d = n == 1 ? 3 : n - 1;
            else if (wd == 0) /* Sunday: the Monday after, or the Friday before */
                d = n == nd ? n - 2 : n + 1;
            dom |= UINT32_C(1) << d;
        }
        if (c->dom_lw) {
            int wd = (wd1 + nd - 1) % 7;
            dom |= UINT32_C(1) << (wd == 6 ? nd - 1 : wd == 0 ? nd - 2 : nd);
        }
    }
    if (!c->dow_any) {
        for (int d = 1; d <= nd; d++) {
            int wd = (wd1 + d - 1) % 7;
            if (c->dow >> wd & 1)
                dow |= UINT32_C(1) << d;
        }
        int wdn = (wd1 + nd - 1) % 7; /* weekday of the last day */
        for (int wd = 0; wd < 7; wd++) {
            if (c->dow_last >> wd & 1)
                dow |= UINT32_C(1) << (nd - (wdn - wd + 7) % 7);
            for (int k = 1; k <= 5; k++) {
                int d = 1 + (wd - wd1 + 7) % 7 + (k - 1) * 7;
                if ((c->dow_nth[wd] >> k & 1) && d <= nd)
                    dow |= UINT32_C(1) << d;
            }
        }
    }
    if (c->dom_any)
        return dow;
    if (c->dow_any)
        return dom;
    return c->day_or ? dom | dow : dom & dow;
}

static int64_t wall_of(int64_t y, int mo, int d, int h, int mi, int s)
{
    return mc_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
}

/* The first wall-clock reading (local seconds, as if the zone were UTC) at or
 * after w that the expression matches, if not after limit. */
static bool next_wall(const mc_cron *c, int64_t w, int64_t limit, int64_t *out)
{
    int64_t days = floor_div(w, 86400), y;
    int64_t secs = w - days * 86400;
    int mo, d, h = (int)(secs / 3600), mi = (int)(secs / 60 % 60), s = (int)(secs % 60);
    mc_civil_from_days(days, &y, &mo, &d);
    int64_t mask_y = -1;
    int mask_m = 0;
    uint32_t dmask = 0;
    for (;;) {
        if (y > 9999)
            return false;
        if (!c->any_year) {
            int ny = next_year(c, y);
            if (ny < 0)
                return false;
            if (ny != y) {
                y = ny;
                mo = d = 1;
                h = mi = s = 0;
            }
        }
        int nm = next_bit(c->month, mo);
        if (nm < 0) {
            y++;
            mo = d = 1;
            h = mi = s = 0;
            continue;
        }
        if (nm != mo) {
            mo = nm;
            d = 1;
            h = mi = s = 0;
        }
        if (wall_of(y, mo, 1, 0, 0, 0) > limit)
            return false;
        if (mask_y != y || mask_m != mo) {
            dmask = day_mask(c, y, mo);
            mask_y = y;
            mask_m = mo;
        }
        int nd = next_bit(dmask, d);
        if (nd < 0) {
            if (++mo > 12) {
                y++;
                mo = 1;
            }
            d = 1;
            h = mi = s = 0;
            continue;
        }
        if (nd != d) {
            d = nd;
            h = mi = s = 0;
        }
        int nh = next_bit(c->hour, h);
        if (nh < 0) {
            d++;
            h = mi = s = 0;
            continue;
        }
        if (nh != h) {
            h = nh;
            mi = s = 0;
        }
        int nmi = next_bit(c->min, mi);
        if (nmi < 0) {
            h++;
            mi = s = 0;
            continue;
        }
        if (nmi != mi) {
            mi = nmi;
            s = 0;
        }
        int ns = next_bit(c->sec, s);
        if (ns < 0) {
            mi++;
            s = 0;
            continue;
        }
        *out = wall_of(y, mo, d, h, mi, ns);
        return *out <= limit;
    }
}

/* The first instant at which the zone's clock reads w or later: where w
 * exists, its first occurrence; inside a gap, the gap's end. Offsets never
 * reach OFF_SPAN, so before w - OFF_SPAN the clock is surely behind w. */
static int64_t first_reaching(const mc_tz *tz, int64_t w)
{
    int64_t cur = w - OFF_SPAN;
    for (;;) { /* ends: each period ends later, and the clock passes w by w + OFF_SPAN */
        int64_t s, e;
        int32_t off = mc_tz_period(tz, cur, &s, &e);
        if (e > w - off) /* the clock reaches w before e */
            return w - off > cur ? w - off : cur;
        cur = e;
    }
}

/* The highest reading the zone's clock has shown up to instant t: its reading
 * at t, or - just after a fall-back - the one just before the clock went
 * back. Looks back 3 days, more than any offset change can span. */
static int64_t max_reading(const mc_tz *tz, int64_t t)
{
    int64_t s, e;
    int64_t m = t + mc_tz_period(tz, t, &s, &e);
    while (s != INT64_MIN && s > t - 3 * 86400) {
        int64_t before = s - 1;
        int32_t off = mc_tz_period(tz, before, &s, &e);
        if (before + off > m)
            m = before + off;
    }
    return m;
}

int64_t mc_cron_next(const mc_cron *c, const mc_tz *tz, int64_t after_ms)
{
    int64_t after = floor_div(after_ms, 1000);
    if (after >= T_MAX)
        return -1;
    if (after < T_MIN)
        after = T_MIN;
    /* A reading fires at the first instant the clock shows it (or a later
     * one); those instants only grow with the reading, so the next fire is
     * the first matching reading the clock has not yet shown by `after`. */
    int64_t m = max_reading(tz, after);
    int64_t days = floor_div(m, 86400), y;
    int mo, d;
    mc_civil_from_days(days, &y, &mo, &d);
    int64_t limit =
        y + MC_CRON_HORIZON_YEARS > 9999
            ? wall_of(9999, 12, 31, 23, 59, 59)
            : mc_days_from_civil(y + MC_CRON_HORIZON_YEARS, mo, d) * 86400 + (m - days * 86400);
    int64_t w, t;
    do { /* once, unless a malformed zone goes back in time more than a day */
        if (!next_wall(c, m + 1, limit, &w))
            return -1;
        t = first_reaching(tz, w);
        m = w;
    } while (t <= after);
    return t > T_MAX ? -1 : t * 1000;
}
