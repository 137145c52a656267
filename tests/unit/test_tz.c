/* The TZif reader: offsets against values known by hand (and by Python's
 * zoneinfo), exact transition instants, the POSIX footer governing the far
 * future (2100) and on its own in synthetic files (southern hemisphere, DST
 * all year, half-hour and v3 extended rules), zone names that must be
 * refused, and truncated or garbled files that must be refused without a
 * crash. Reads the system's /usr/share/zoneinfo. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tz.h"

#define H 3600

static mc_tz *load(const char *name)
{
    char err[256] = "";
    mc_tz *tz = mc_tz_load(NULL, name, err, sizeof err);
    CHECK(tz != NULL, "%s: %s", name, err);
    return tz;
}

static void check_offsets(void)
{
    static const struct {
        const char *zone;
        int64_t t;
        int32_t off;
    } cases[] = {
        {"Europe/Berlin", 1717192800, 2 * H},     /* 2024-06-01 summer */
        {"Europe/Berlin", 631148400, 1 * H},      /* 1990-01-01 winter */
        {"Europe/Berlin", 1711846799, 1 * H},     /* 2024-03-31 00:59:59Z, last second of CET */
        {"Europe/Berlin", 1711846800, 2 * H},     /* 01:00Z: CEST */
        {"Europe/Berlin", 1729990799, 2 * H},     /* 2024-10-27 00:59:59Z */
        {"Europe/Berlin", 1729990800, 1 * H},     /* 01:00Z: back to CET */
        {"America/New_York", 1717214400, -4 * H}, /* 2024-06-01 EDT */
        {"America/New_York", 631170000, -5 * H},  /* 1990-01-01 EST */
        {"America/New_York", 1710054000, -4 * H}, /* 2024-03-10 07:00Z */
        {"America/New_York", 1710053999, -5 * H},
        {"Australia/Lord_Howe", 1728142200, 11 * H},        /* 2024-10-05 15:30Z: +11 */
        {"Australia/Lord_Howe", 1728142199, 10 * H + 1800}, /* +10:30 until then */
        {"Australia/Lord_Howe", 1712415600, 10 * H + 1800}, /* 2024-04-06 15:00Z */
        {"Asia/Shanghai", 1717171200, 8 * H},
        {"Asia/Kolkata", 1717180200, 5 * H + 1800},
        /* after tzdata's tables end (2037): the footer rule */
        {"Europe/Berlin", 4118119200, 2 * H},               /* 2100-07-01 */
        {"Europe/Berlin", 4103694000, 1 * H},               /* 2100-01-15 */
        {"Europe/Berlin", 4109878799, 1 * H},               /* 2100-03-28 00:59:59Z */
        {"Europe/Berlin", 4109878800, 2 * H},               /* 01:00Z: last Sunday of March */
        {"America/New_York", 4108690799, -5 * H},           /* 2100-03-14 06:59:59Z */
        {"America/New_York", 4108690800, -4 * H},           /* second Sunday of March */
        {"America/New_York", 4129250399, -4 * H},           /* 2100-11-07 05:59:59Z */
        {"America/New_York", 4129250400, -5 * H},           /* first Sunday of November */
        {"Australia/Lord_Howe", 4118088600, 10 * H + 1800}, /* 2100-07-01 */
        {"Australia/Lord_Howe", 4103658000, 11 * H},        /* 2100-01-15 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mc_tz *tz = load(cases[i].zone);
        if (!tz)
            continue;
        int32_t off = mc_tz_offset_at(tz, cases[i].t);
        CHECK(off == cases[i].off, "%s at %lld: %d, want %d", cases[i].zone, (long long)cases[i].t,
              off, cases[i].off);
        mc_tz_free(tz);
    }
}

static void check_periods(void)
{
    mc_tz *tz = load("Europe/Berlin");
    if (!tz)
        return;
    int64_t s, e;
    int32_t off = mc_tz_period(tz, 1717192800, &s, &e); /* summer 2024 */
    CHECK(off == 2 * H && s == 1711846800 && e == 1729990800, "%d [%lld, %lld)", off, (long long)s,
          (long long)e);
    off = mc_tz_period(tz, 4118119200, &s, &e);               /* summer 2100, from the footer */
    CHECK(off == 2 * H && s == 4109878800 && e == 4128627600, /* 2100-10-31 01:00Z */
          "2100: %d [%lld, %lld)", off, (long long)s, (long long)e);
    CHECK(mc_tz_offset_at(tz, e - 1) == 2 * H && mc_tz_offset_at(tz, e) == 1 * H);
    CHECK(strcmp(mc_tz_name(tz), "Europe/Berlin") == 0);
    mc_tz_free(tz);
}

static void check_names(void)
{
    char err[256];
    mc_tz *tz = mc_tz_load("/nonexistent", "UTC", err, sizeof err);
    CHECK(tz && mc_tz_offset_at(tz, 0) == 0 && mc_tz_offset_at(tz, 4118119200) == 0,
          "built-in UTC");
    mc_tz_free(tz);
    tz = mc_tz_load("/nonexistent", "Etc/UTC", err, sizeof err);
    CHECK(tz && strcmp(mc_tz_name(tz), "Etc/UTC") == 0);
    mc_tz_free(tz);

    tz = mc_tz_load(NULL, "Mars/Base", err, sizeof err);
    CHECK(!tz && strcmp(err, "unknown time zone 'Mars/Base'") == 0, "%s", err);
    tz = mc_tz_load(NULL, "America", err, sizeof err); /* a directory */
    CHECK(!tz && strcmp(err, "unknown time zone 'America'") == 0, "%s", err);
    static const char *const bad[] = {"../etc/passwd",
                                      "/etc/passwd",
                                      "Europe/../UTC",
                                      "Europe//Berlin",
                                      "Europe/Berlin/",
                                      "a b",
                                      "",
                                      "Europe/.hidden",
                                      "Zone;rm",
                                      "x\ny"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tz = mc_tz_load(NULL, bad[i], err, sizeof err);
        CHECK(!tz && strncmp(err, "invalid time zone name", 22) == 0, "'%s': %s", bad[i], err);
        mc_tz_free(tz);
    }
    /* The names real zones use pass. */
    static const char *const good[] = {"Etc/GMT+5", "America/Port-au-Prince",
                                       "America/Argentina/Buenos_Aires"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        tz = load(good[i]);
        mc_tz_free(tz);
    }
}

/* A version-2 TZif file with one time type of offset off0, the given
 * transitions (each to type idx[i], types having offsets offs[]) and a
 * footer. Returns its length. */
static size_t make_tzif(uint8_t *out, int32_t off0, const int64_t *trans, const uint8_t *idx,
                        size_t n, const int32_t *offs, size_t ntypes, const char *footer)
{
    uint8_t *p = out;
    int32_t types[8];
    types[0] = off0;
    for (size_t i = 0; i < ntypes; i++)
        types[i + 1] = offs[i];
    size_t typecnt = ntypes + 1;
    for (int v = 0; v < 2; v++) { /* the v1 block (empty) and the v2 block */
        memcpy(p, "TZif2", 5);
        memset(p + 5, 0, 15);
        uint32_t counts[6] = {0, 0, 0, v ? (uint32_t)n : 0, v ? (uint32_t)typecnt : 1, 4};
        for (int c = 0; c < 6; c++)
            for (int b = 0; b < 4; b++)
                p[20 + 4 * c + b] = (uint8_t)(counts[c] >> (24 - 8 * b));
        p += 44;
        if (v) {
            for (size_t i = 0; i < n; i++)
                for (int b = 0; b < 8; b++)
                    *p++ = (uint8_t)((uint64_t)trans[i] >> (56 - 8 * b));
            for (size_t i = 0; i < n; i++)
                *p++ = idx[i];
        }
        for (size_t t = 0; t < (v ? typecnt : 1); t++) {
            for (int b = 0; b < 4; b++)
                *p++ = (uint8_t)((uint32_t)types[t] >> (24 - 8 * b));
            *p++ = 0;
            *p++ = 0;
        }
        memcpy(p, "XYZ", 4);
        p += 4;
    }
    *p++ = '\n';
    memcpy(p, footer, strlen(footer));
    p += strlen(footer);
    *p++ = '\n';
    return (size_t)(p - out);
}

static mc_tz *footer_zone(const char *footer)
{
    uint8_t buf[512];
    size_t len = make_tzif(buf, 0, NULL, NULL, 0, NULL, 0, footer);
    char err[256] = "";
    mc_tz *tz = mc_tz_parse(footer, buf, len, err, sizeof err);
    CHECK(tz != NULL, "footer \"%s\": %s", footer, err);
    return tz;
}

static void check_footers(void)
{
    static const struct {
        const char *footer;
        int64_t t;
        int32_t off;
    } cases[] = {
        {"CET-1CEST,M3.5.0,M10.5.0/3", 4118119200, 2 * H},
        {"CET-1CEST,M3.5.0,M10.5.0/3", 4103694000, 1 * H},
        {"CET-1CEST,M3.5.0,M10.5.0/3", 4109878799, 1 * H},
        {"CET-1CEST,M3.5.0,M10.5.0/3", 4109878800, 2 * H},
        /* southern hemisphere: DST across the new year */
        {"AEST-10AEDT,M10.1.0,M4.1.0/3", 4103658000, 11 * H},
        {"AEST-10AEDT,M10.1.0,M4.1.0/3", 4118088600, 10 * H},
        /* half-hour DST (Lord Howe) */
        {"<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", 4103658000, 11 * H},
        {"<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", 4118088600, 10 * H + 1800},
        /* v3: DST all year, written as a change at 00:00 Jan 1 and 25:00 Dec 31 */
        {"EST5EDT4,0/0,J365/25", 4103694000, -4 * H},
        {"EST5EDT4,0/0,J365/25", 4118119200, -4 * H},
        {"EST5EDT4,0/0,J365/25", 4133894399, -4 * H}, /* 2100-12-31 23:59:59Z */
        /* v3: negative rule times (Greenland's -02 / -01 at -1:00 local) */
        {"<-02>2<-01>,M3.5.0/-1,M10.5.0/0", 4118119200, -1 * H},
        {"<-02>2<-01>,M3.5.0/-1,M10.5.0/0", 4103694000, -2 * H},
        /* no DST at all, and DST with the US default rule */
        {"<+0545>-5:45", 4118119200, 5 * H + 2700},
        {"EST5EDT", 4118119200, -4 * H},
        {"EST5EDT", 4103694000, -5 * H},
        /* Julian day without Feb 29: J60 is always March 1 */
        {"XST0XDT,J60/0,J300/0", 4107542400 - 1, 0}, /* 2100-03-01 00:00:00Z minus 1 */
        {"XST0XDT,J60/0,J300/0", 4107542400, 1 * H},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mc_tz *tz = footer_zone(cases[i].footer);
        if (!tz)
            continue;
        int32_t off = mc_tz_offset_at(tz, cases[i].t);
        CHECK(off == cases[i].off, "\"%s\" at %lld: %d, want %d", cases[i].footer,
              (long long)cases[i].t, off, cases[i].off);
        mc_tz_free(tz);
    }
    /* Footers that are not POSIX TZ strings. */
    static const char *const bad[] = {"CET",
                                      "CET-1CEST,M3.5.0",
                                      "CET-1CEST,M13.5.0,M10.5.0",
                                      "CET-1CEST,M3.6.0,M10.5.0",
                                      "CET-25",
                                      "C-1",
                                      "CET-1CEST,M3.5.0,M10.5.0/168",
                                      "<+01-1",
                                      "CET-1 "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t buf[512];
        size_t len = make_tzif(buf, 0, NULL, NULL, 0, NULL, 0, bad[i]);
        char err[256] = "";
        mc_tz *tz = mc_tz_parse("x", buf, len, err, sizeof err);
        CHECK(!tz && strstr(err, "footer"), "\"%s\" accepted (%s)", bad[i], err);
        mc_tz_free(tz);
    }
}

static void check_malformed(void)
{
    char err[256];
    /* Every truncation of a real file is refused (the footer must end it). */
    FILE *f = fopen("/usr/share/zoneinfo/Europe/Berlin", "rb");
    CHECK(f != NULL);
    if (f) {
        uint8_t buf[8192];
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        mc_tz *whole = mc_tz_parse("Europe/Berlin", buf, len, err, sizeof err);
        CHECK(whole != NULL, "%s", err);
        mc_tz_free(whole);
        for (size_t cut = 0; cut < len; cut++) {
            uint8_t *copy = malloc(cut ? cut : 1); /* exact size: ASan sees overreads */
            memcpy(copy, buf, cut);
            err[0] = '\0';
            mc_tz *tz = mc_tz_parse("x", copy, cut, err, sizeof err);
            CHECK(!tz && err[0], "a %zu-byte prefix was accepted", cut);
            mc_tz_free(tz);
            free(copy);
        }
    }
    uint8_t buf[512];
    size_t len;
    mc_tz *tz;
    /* Garbage, a wrong magic, a version we do not know. */
    tz = mc_tz_parse("x", (const uint8_t *)"hello world", 11, err, sizeof err);
    CHECK(!tz && strcmp(err, "truncated TZif header") == 0, "%s", err);
    len = make_tzif(buf, 0, NULL, NULL, 0, NULL, 0, "UTC0");
    buf[0] = 'X';
    tz = mc_tz_parse("x", buf, len, err, sizeof err);
    CHECK(!tz && strcmp(err, "not a TZif file") == 0, "%s", err);
    buf[0] = 'T';
    buf[4] = '9';
    tz = mc_tz_parse("x", buf, len, err, sizeof err);
    CHECK(!tz && strstr(err, "unsupported TZif version"), "%s", err);
    /* Transitions out of order; a transition to a type that does not exist. */
    int64_t trans[2] = {2000000000, 1000000000};
    uint8_t idx[2] = {1, 0};
    int32_t offs[1] = {3600};
    len = make_tzif(buf, 0, trans, idx, 2, offs, 1, "UTC0");
    tz = mc_tz_parse("x", buf, len, err, sizeof err);
    CHECK(!tz && strstr(err, "increasing"), "%s", err);
    trans[1] = 3000000000;
    idx[1] = 7;
    len = make_tzif(buf, 0, trans, idx, 2, offs, 1, "UTC0");
    tz = mc_tz_parse("x", buf, len, err, sizeof err);
    CHECK(!tz && strstr(err, "time type"), "%s", err);
    /* An offset beyond 26 hours. */
    offs[0] = 100000;
    idx[1] = 1;
    len = make_tzif(buf, 0, trans, idx, 2, offs, 1, "UTC0");
    tz = mc_tz_parse("x", buf, len, err, sizeof err);
    CHECK(!tz && strstr(err, "invalid"), "%s", err);
    /* A valid table: before, between and after its transitions (no rule
     * in the footer: the last type stays). */
    offs[0] = 3600;
    len = make_tzif(buf, -1800, trans, idx, 2, offs, 1, "");
    tz = mc_tz_parse("x", buf, len, err, sizeof err);
    CHECK(tz != NULL, "%s", err);
    if (tz) {
        CHECK(mc_tz_offset_at(tz, 0) == -1800 && mc_tz_offset_at(tz, 1999999999) == -1800 &&
              mc_tz_offset_at(tz, 2000000000) == 3600 && mc_tz_offset_at(tz, 3000000000) == 3600 &&
              mc_tz_offset_at(tz, INT64_MAX) == 3600 && mc_tz_offset_at(tz, INT64_MIN) == -1800);
        mc_tz_free(tz);
    }
    /* Bytes after the footer. */
    len = make_tzif(buf, 0, NULL, NULL, 0, NULL, 0, "UTC0");
    buf[len++] = 'x';
    tz = mc_tz_parse("x", buf, len, err, sizeof err);
    CHECK(!tz && strstr(err, "footer"), "%s", err);
}

int main(void)
{
    check_offsets();
    check_periods();
    check_names();
    check_footers();
    check_malformed();
    return check_exit("test_tz");
}
