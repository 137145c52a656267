/* libFuzzer harness for the cron engine and the TZif reader: any bytes give
 * either an expression or a sentence saying why not - never a crash. An
 * accepted expression's fires, in UTC and in a DST zone built in here (so the
 * harness needs no zoneinfo files), are whole seconds and strictly increase.
 * The same bytes also go to mc_tz_parse; a zone that parses answers offset
 * and period queries consistently, and drives a few fires that still
 * increase. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cron.h"
#include "tz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "%s: %s\n", what, detail);
    abort();
}

/* A version-2 TZif with no transitions and Europe/Berlin's footer rule. */
static mc_tz *berlin_rule(void)
{
    static const char footer[] = "\nCET-1CEST,M3.5.0,M10.5.0/3\n";
    uint8_t buf[256], *p = buf;
    for (int v = 0; v < 2; v++) {
        memset(p, 0, 44);
        memcpy(p, "TZif2", 5);
        p[39] = 1; /* typecnt */
        p[43] = 4; /* charcnt */
        p += 44;
        static const uint8_t type[6] = {0, 0, 0x0e, 0x10, 0, 0}; /* +3600 */
        memcpy(p, type, 6);
        memcpy(p + 6, "CET", 4);
        p += 10;
    }
    memcpy(p, footer, sizeof footer - 1);
    p += sizeof footer - 1;
    char err[128];
    mc_tz *tz = mc_tz_parse("rule", buf, (size_t)(p - buf), err, sizeof err);
    if (!tz)
        fail("built-in zone", err);
    return tz;
}

static void check_fires(const mc_cron *c, const mc_tz *tz, int64_t from)
{
    int64_t t = from;
    for (int i = 0; i < 6; i++) {
        int64_t next = mc_cron_next(c, tz, t);
        if (next < 0)
            return;
        if (next <= t || next % 1000 != 0) {
            char msg[96];
            snprintf(msg, sizeof msg, "after %lld came %lld", (long long)t, (long long)next);
            fail("fires do not increase", msg);
        }
        t = next;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static mc_tz *utc, *rule;
    if (!utc) {
        char err[64];
        utc = mc_tz_load(NULL, "UTC", err, sizeof err);
        rule = berlin_rule();
    }
    /* Exact size, not terminated, for the TZif parser: ASan sees overreads. */
    uint8_t *bytes = malloc(size ? size : 1);
    char *text = malloc(size + 1);
    if (!bytes || !text)
        return 0;
    memcpy(bytes, data, size);
    memcpy(text, data, size);
    text[size] = '\0';
    /* The start instant varies with the input, near DST changes included. */
    int64_t from = 1711846800000 - 3 * 3600000; /* 2024-03-31 01:00Z: Berlin springs forward */
    for (size_t i = 0; i < size && i < 8; i++)
        from += (int64_t)data[i] * 997 * 60000;
    char err[256] = "";
    mc_cron *c = mc_cron_parse(text, err, sizeof err);
    if (!c && err[0] == '\0')
        fail("error", "without a reason");
    if (c) {
        check_fires(c, utc, from);
        check_fires(c, rule, from);
        check_fires(c, rule, 1729990800000 - 2 * 3600000); /* Berlin falls back */
    }
    err[0] = '\0';
    mc_tz *tz = mc_tz_parse("fuzz", bytes, size, err, sizeof err);
    if (!tz && err[0] == '\0')
        fail("tz error", "without a reason");
    if (tz) {
        static const int64_t probes[] = {INT64_MIN,  -4000000000,      0,        1711846800,
                                         4118119200, INT64_C(1) << 53, INT64_MAX};
        for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
            int64_t s, e;
            int32_t off = mc_tz_period(tz, probes[i], &s, &e);
            if (!(s <= probes[i] && probes[i] < e) && !(e == INT64_MAX && probes[i] == INT64_MAX))
                fail("period", "does not contain the instant");
            if (off < -89999 || off > 93599)
                fail("period", "offset out of range");
        }
        mc_cron *every = mc_cron_parse("*/7 * * * * ?", err, sizeof err);
        if (every)
            check_fires(every, tz, from);
        mc_cron_free(every);
        if (c)
            check_fires(c, tz, from);
        mc_tz_free(tz);
    }
    mc_cron_free(c);
    free(bytes);
    free(text);
    return 0;
}
