/* TZif reader and offset lookup; see tz.h. A zone is its transition table
 * plus, for instants after the table ends, the POSIX TZ rule from the file's
 * footer (tzdata stops listing transitions around 2037 and relies on it). */
#include "tz.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* RFC 8536 3.2: offsets must be in -89999..93599 (under 25 and 26 hours);
 * the cron engine relies on |offset| < 26 h when it walks periods. */
#define OFF_MIN (-89999)
#define OFF_MAX 93599
#define FILE_MAX (1u << 20) /* tzdata's largest file is a few KiB */

/* One date of a POSIX rule: Jn (1-365, Feb 29 never counted), n (0-365,
 * counting Feb 29) or Mm.w.d (weekday d of week w of month m, w 5 = last). */
typedef struct rule_date {
    char kind; /* 'J', 'N' or 'M' */
    int n, m, w, d;
    int32_t secs; /* time of day of the change, local time then in effect */
} rule_date;

/* The footer: standard time all year, or DST between start and end. */
typedef struct posix_rule {
    int32_t std_off, dst_off; /* seconds east of UTC */
    bool has_dst;
    rule_date start, end;
} posix_rule;

struct mc_tz {
    char *name;
    size_t n;           /* transitions */
    int64_t *trans;     /* n instants, strictly increasing */
    int32_t *off_after; /* the offset from trans[i] on */
    int32_t off_first;  /* before trans[0]: time type 0 (RFC 8536 3.2) */
    bool has_rule;      /* the footer governs t >= trans[n-1] (all t if n == 0) */
    posix_rule rule;
};

int64_t mc_days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void mc_civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

int mc_weekday(int64_t z)
{
    int64_t w = (z + 4) % 7; /* 1970-01-01 was a Thursday */
    return (int)(w < 0 ? w + 7 : w);
}

static bool is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int mc_month_days(int64_t y, int m)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* ---- POSIX TZ strings (the footer) ---- */

/* An abbreviation: three or more letters, or <...> quoted (tzdata writes
 * numeric ones like <+0330> that way). */
static const char *parse_abbr(const char *s)
{
    const char *p = s;
    if (*p == '<') {
        p++;
        while (*p && *p != '>' &&
               ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
                *p == '+' || *p == '-'))
            p++;
        if (*p != '>' || p - s < 4)
            return NULL;
        return p + 1;
    }
    while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z'))
        p++;
    return p - s >= 3 ? p : NULL;
}

/* [+-]hh[:mm[:ss]] with hh <= max_h, into seconds. */
static const char *parse_hms(const char *s, int max_h, int32_t *out)
{
    int sign = 1;
    if (*s == '+' || *s == '-')
        sign = *s++ == '-' ? -1 : 1;
    int32_t parts[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        if (i > 0) {
            if (*s != ':')
                break;
            s++;
        }
        if (*s < '0' || *s > '9')
            return NULL;
        int v = 0, digits = 0;
        while (*s >= '0' && *s <= '9' && digits < 3) {
            v = v * 10 + (*s++ - '0');
            digits++;
        }
        if ((i == 0 && v > max_h) || (i > 0 && (digits != 2 || v > 59)))
            return NULL;
        parts[i] = v;
    }
    *out = sign * (parts[0] * 3600 + parts[1] * 60 + parts[2]);
    return s;
}

static const char *parse_num(const char *s, int lo, int hi, int *out)
{
    if (*s < '0' || *s > '9')
        return NULL;
    int v = 0;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (*s++ - '0');
        if (v > hi)
            return NULL;
    }
    if (v < lo)
        return NULL;
    *out = v;
    return s;
}

static const char *parse_rule_date(const char *s, rule_date *r)
{
    if (*s == 'J') {
        r->kind = 'J';
        s = parse_num(s + 1, 1, 365, &r->n);
    } else if (*s == 'M') {
        r->kind = 'M';
        s = parse_num(s + 1, 1, 12, &r->m);
        if (s && *s == '.')
            s = parse_num(s + 1, 1, 5, &r->w);
        else
            s = NULL;
        if (s && *s == '.')
            s = parse_num(s + 1, 0, 6, &r->d);
        else
            s = NULL;
    } else {
        r->kind = 'N';
        s = parse_num(s, 0, 365, &r->n);
    }
    if (!s)
        return NULL;
    r->secs = 7200; /* POSIX: 02:00 unless given */
    if (*s == '/')
        s = parse_hms(s + 1, 167, &r->secs); /* RFC 8536 3.3.1: -167..167 hours */
    return s;
}

/* Parses a footer such as "EST5EDT,M3.2.0,M11.1.0"; false if malformed. */
static bool parse_posix(const char *s, posix_rule *r)
{
    memset(r, 0, sizeof *r);
    int32_t off;
    if (!(s = parse_abbr(s)) || !(s = parse_hms(s, 24, &off)))
        return false;
    r->std_off = -off; /* POSIX counts west of Greenwich as positive */
    if (*s == '\0')
        return true;
    if (!(s = parse_abbr(s)))
        return false;
    r->has_dst = true;
    r->dst_off = r->std_off + 3600;
    if (*s != ',' && *s != '\0') {
        if (!(s = parse_hms(s, 24, &off)))
            return false;
        r->dst_off = -off;
    }
    if (*s == '\0') { /* no rule given: the US rules, as glibc and tzcode assume */
        r->start = (rule_date){'M', 0, 3, 2, 0, 7200};
        r->end = (rule_date){'M', 0, 11, 1, 0, 7200};
        return true;
    }
    if (*s != ',' || !(s = parse_rule_date(s + 1, &r->start)) || *s != ',' ||
        !(s = parse_rule_date(s + 1, &r->end)) || *s != '\0')
        return false;
    return true;
}

/* The instant a rule date of year y happens, given the offset in effect just
 * before it (the rule's times are local times). */
static int64_t rule_instant(const rule_date *r, int64_t y, int32_t off_before)
{
    int64_t day;
    if (r->kind == 'J') {
        day = mc_days_from_civil(y, 1, 1) + r->n - 1 + (is_leap(y) && r->n >= 60);
    } else if (r->kind == 'N') {
        day = mc_days_from_civil(y, 1, 1) + r->n;
    } else {
        int64_t first = mc_days_from_civil(y, r->m, 1);
        int dom = 1 + (r->d - mc_weekday(first) + 7) % 7 + (r->w - 1) * 7;
        while (dom > mc_month_days(y, r->m))
            dom -= 7;
        day = first + dom - 1;
    }
    return day * 86400 + r->secs - off_before;
}

/* The DST stretch that starts in year y: [start, end), where end is the first
 * rule end after the start (the same year in the north, the next one in the
 * south). */
static void dst_span(const posix_rule *r, int64_t y, int64_t *s, int64_t *e)
{
    *s = rule_instant(&r->start, y, r->std_off);
    *e = rule_instant(&r->end, y, r->dst_off);
    if (*e <= *s)
        *e = rule_instant(&r->end, y + 1, r->dst_off);
}

/* The period around t under the footer rule alone. DST stretches of the
 * years around t are merged where they touch (a zone on DST all year writes
 * "0/0,J365/25"), and standard time fills the space between them. */
static int32_t rule_period(const posix_rule *r, int64_t t, int64_t *start, int64_t *end)
{
    if (!r->has_dst) {
        *start = INT64_MIN;
        *end = INT64_MAX;
        return r->std_off;
    }
    /* Far beyond any calendar anyone schedules in, the year arithmetic below
     * would overflow: there the zone keeps standard time. */
    const int64_t far = INT64_C(1) << 53;
    if (t >= far || t < -far) {
        *start = t >= far ? far : INT64_MIN;
        *end = t >= far ? INT64_MAX : -far;
        return r->std_off;
    }
    int64_t y;
    int mo, d;
    mc_civil_from_days(floor_div(t, 86400), &y, &mo, &d);
    int64_t s[6], e[6];
    int k = 0;
    for (int64_t yy = y - 2; yy <= y + 3; yy++) {
        int64_t a, b;
        dst_span(r, yy, &a, &b);
        if (k > 0 && a <= e[k - 1]) {
            if (b > e[k - 1])
                e[k - 1] = b;
        } else {
            s[k] = a;
            e[k] = b;
            k++;
        }
    }
    for (int i = 0; i < k; i++) {
        if (t < s[i]) {
            *start = i > 0 ? e[i - 1] : INT64_MIN;
            *end = s[i];
            return r->std_off;
        }
        if (t < e[i]) {
            *start = s[i];
            *end = e[i];
            return r->dst_off;
        }
    }
    *start = e[k - 1];
    *end = INT64_MAX;
    return r->std_off;
}

/* ---- the public lookups ---- */

int32_t mc_tz_period(const mc_tz *tz, int64_t t, int64_t *start, int64_t *end)
{
    size_t n = tz->n;
    if (n > 0 && t < tz->trans[0]) {
        *start = INT64_MIN;
        *end = tz->trans[0];
        return tz->off_first;
    }
    if (n > 0 && t < tz->trans[n - 1]) {
        size_t lo = 0, hi = n - 1; /* trans[lo] <= t < trans[hi] */
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (tz->trans[mid] <= t)
                lo = mid;
            else
                hi = mid;
        }
        *start = tz->trans[lo];
        *end = tz->trans[hi];
        return tz->off_after[lo];
    }
    if (!tz->has_rule) {
        *start = n > 0 ? tz->trans[n - 1] : INT64_MIN;
        *end = INT64_MAX;
        return n > 0 ? tz->off_after[n - 1] : tz->off_first;
    }
    int32_t off = rule_period(&tz->rule, t, start, end);
    if (n > 0 && *start < tz->trans[n - 1])
        *start = tz->trans[n - 1];
    return off;
}

int32_t mc_tz_offset_at(const mc_tz *tz, int64_t t)
{
    int64_t s, e;
    return mc_tz_period(tz, t, &s, &e);
}

const char *mc_tz_name(const mc_tz *tz)
{
    return tz->name;
}

void mc_tz_free(mc_tz *tz)
{
    if (!tz)
        return;
    free(tz->name);
    free(tz->trans);
    free(tz->off_after);
    free(tz);
}

/* ---- TZif ---- */

typedef struct header {
    uint32_t isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt;
} header;

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const uint8_t *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

/* Reads a 44-byte header; its data block's size for time size ts (4 or 8). */
static bool read_header(const uint8_t *p, size_t avail, header *h, int *version, size_t ts,
                        uint64_t *block, char *err, size_t errlen)
{
    if (avail < 44 || memcmp(p, "TZif", 4) != 0) {
        snprintf(err, errlen, avail < 44 ? "truncated TZif header" : "not a TZif file");
        return false;
    }
    *version = p[4] == 0 ? 1 : p[4] - '0';
    if (*version < 1 || *version > 4) {
        snprintf(err, errlen, "unsupported TZif version byte 0x%02x", p[4]);
        return false;
    }
    h->isutcnt = be32(p + 20);
    h->isstdcnt = be32(p + 24);
    h->leapcnt = be32(p + 28);
    h->timecnt = be32(p + 32);
    h->typecnt = be32(p + 36);
    h->charcnt = be32(p + 40);
    if (h->typecnt == 0 || (h->isutcnt != 0 && h->isutcnt != h->typecnt) ||
        (h->isstdcnt != 0 && h->isstdcnt != h->typecnt)) {
        snprintf(err, errlen, "inconsistent TZif counts");
        return false;
    }
    *block = (uint64_t)h->timecnt * ts + h->timecnt + (uint64_t)h->typecnt * 6 + h->charcnt +
             (uint64_t)h->leapcnt * (ts + 4) + h->isstdcnt + h->isutcnt;
    if (*block > avail - 44) {
        snprintf(err, errlen, "truncated TZif data");
        return false;
    }
    return true;
}

mc_tz *mc_tz_parse(const char *name, const uint8_t *data, size_t len, char *err, size_t errlen)
{
    header h;
    int version;
    uint64_t block;
    if (!read_header(data, len, &h, &version, 4, &block, err, errlen))
        return NULL;
    const uint8_t *p = data + 44;
    size_t ts = 4;
    const uint8_t *end = data + len;
    if (version >= 2) { /* skip the 32-bit block: the 64-bit one has it all */
        p += block;
        int v2;
        if (!read_header(p, (size_t)(end - p), &h, &v2, 8, &block, err, errlen))
            return NULL;
        p += 44;
        ts = 8;
    }
    if (h.leapcnt) {
        snprintf(err, errlen, "leap-second TZif files are not supported");
        return NULL;
    }
    const uint8_t *times = p, *idx = p + (size_t)h.timecnt * ts, *types = idx + h.timecnt;
    const uint8_t *after = p + block;

    mc_tz *tz = calloc(1, sizeof *tz);
    if (!tz)
        goto oom;
    tz->name = strdup(name ? name : "");
    tz->n = h.timecnt;
    tz->trans = malloc((h.timecnt ? h.timecnt : 1) * sizeof *tz->trans);
    tz->off_after = malloc((h.timecnt ? h.timecnt : 1) * sizeof *tz->off_after);
    if (!tz->name || !tz->trans || !tz->off_after)
        goto oom;
    for (uint32_t i = 0; i < h.typecnt; i++) {
        int32_t off = (int32_t)be32(types + 6 * i);
        if (off < OFF_MIN || off > OFF_MAX || types[6 * i + 4] > 1) {
            snprintf(err, errlen, "TZif time type %u is invalid", i);
            goto fail;
        }
    }
    tz->off_first = (int32_t)be32(types);
    for (uint32_t i = 0; i < h.timecnt; i++) {
        tz->trans[i] = ts == 8 ? be64(times + 8 * i) : (int32_t)be32(times + 4 * i);
        if (i > 0 && tz->trans[i] <= tz->trans[i - 1]) {
            snprintf(err, errlen, "TZif transitions are not in increasing order");
            goto fail;
        }
        if (idx[i] >= h.typecnt) {
            snprintf(err, errlen, "TZif transition %u names time type %u of %u", i, idx[i],
                     h.typecnt);
            goto fail;
        }
        tz->off_after[i] = (int32_t)be32(types + 6 * idx[i]);
    }
    if (version >= 2) {
        /* The footer: "\n" TZ-string "\n", the end of the file. */
        const uint8_t *q = after;
        if (q >= end || *q != '\n') {
            snprintf(err, errlen, "TZif footer is missing");
            goto fail;
        }
        const uint8_t *nl = memchr(q + 1, '\n', (size_t)(end - q - 1));
        if (!nl || nl + 1 != end) {
            snprintf(err, errlen, "TZif footer is not one line at the end of the file");
            goto fail;
        }
        size_t flen = (size_t)(nl - q - 1);
        if (flen > 0) {
            char footer[256];
            if (flen >= sizeof footer || memchr(q + 1, '\0', flen)) {
                snprintf(err, errlen, "TZif footer is malformed");
                goto fail;
            }
            memcpy(footer, q + 1, flen);
            footer[flen] = '\0';
            if (!parse_posix(footer, &tz->rule) || tz->rule.std_off < OFF_MIN ||
                tz->rule.std_off > OFF_MAX || tz->rule.dst_off < OFF_MIN ||
                tz->rule.dst_off > OFF_MAX) {
                snprintf(err, errlen, "TZif footer \"%s\" is not a valid POSIX TZ string", footer);
                goto fail;
            }
            tz->has_rule = true;
        }
    } else if (after != end) {
        snprintf(err, errlen, "trailing bytes after TZif data");
        goto fail;
    }
    return tz;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    mc_tz_free(tz);
    return NULL;
}

/* The built-in UTC, so a machine without tzdata still runs UTC schedules. */
static mc_tz *make_utc(const char *name, char *err, size_t errlen)
{
    mc_tz *tz = calloc(1, sizeof *tz);
    if (tz)
        tz->name = strdup(name);
    if (!tz || !tz->name) {
        free(tz);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    return tz;
}

/* Whether name is safe to append to a directory: no way out of it, nothing a
 * shell or log would misread. */
static bool name_ok(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > MC_TZ_NAME_MAX || name[0] == '/' || name[len - 1] == '/')
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '/' || c == '_' || c == '+' || c == '-' || c == '.';
        if (!ok)
            return false;
        /* each component starts with something other than '.' or '/' */
        if ((i == 0 || name[i - 1] == '/') && (c == '.' || c == '/'))
            return false;
    }
    return strstr(name, "..") == NULL;
}

mc_tz *mc_tz_load(const char *dir, const char *name, char *err, size_t errlen)
{
    if (!name || !name_ok(name)) {
        snprintf(err, errlen, "invalid time zone name '%.64s'", name ? name : "(null)");
        return NULL;
    }
    if (strcmp(name, "UTC") == 0 || strcmp(name, "Etc/UTC") == 0)
        return make_utc(name, err, errlen);
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/%s", dir ? dir : MC_TZ_DEFAULT_DIR, name);
    if (n < 0 || (size_t)n >= sizeof path) {
        snprintf(err, errlen, "time zone path for '%s' is too long", name);
        return NULL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        if (fd < 0 && e != ENOENT && e != ENOTDIR)
            snprintf(err, errlen, "cannot open time zone file %s (errno %d)", path, e);
        else
            snprintf(err, errlen, "unknown time zone '%s'", name);
        return NULL;
    }
    if (st.st_size > FILE_MAX) {
        close(fd);
        snprintf(err, errlen, "time zone file %s is too large", path);
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    uint8_t *buf = malloc(size ? size : 1);
    size_t got = 0;
    while (buf && got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!buf || got != size) {
        if (buf)
            snprintf(err, errlen, "cannot read time zone file %s", path);
        else
            snprintf(err, errlen, "out of memory");
        free(buf);
        return NULL;
    }
    char why[200] = "";
    mc_tz *tz = mc_tz_parse(name, buf, size, why, sizeof why);
    free(buf);
    if (!tz)
        snprintf(err, errlen, "time zone '%s': %s", name, why);
    return tz;
}
