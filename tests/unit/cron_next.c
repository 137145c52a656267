/* A command-line window on the cron engine for tests in other languages
 * (cron_croniter_test.py compares it with croniter). Reads lines
 * "expr<TAB>zone<TAB>after_ms<TAB>n" on stdin and answers each with one line:
 * n successive fire instants (epoch ms, space-separated, each the next after
 * the one before; -1 ends the list early), or "ERR <reason>" when the
 * expression or zone is refused. Usage: cron_next [ZONEINFO_DIR]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cron.h"
#include "tz.h"

#define MAX_ZONES 64

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : NULL;
    mc_tz *zones[MAX_ZONES];
    int nzones = 0;
    char line[4096];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = '\0';
        char *expr = line, *zone = strchr(expr, '\t');
        char *after = zone ? strchr(zone + 1, '\t') : NULL;
        char *count = after ? strchr(after + 1, '\t') : NULL;
        if (!count) {
            printf("ERR malformed input line\n");
            continue;
        }
        *zone++ = *after++ = *count++ = '\0';
        char err[256] = "";
        mc_tz *tz = NULL;
        for (int i = 0; i < nzones && !tz; i++)
            if (strcmp(mc_tz_name(zones[i]), zone) == 0)
                tz = zones[i];
        if (!tz) {
            tz = mc_tz_load(dir, zone, err, sizeof err);
            if (!tz) {
                printf("ERR %s\n", err);
                continue;
            }
            if (nzones == MAX_ZONES)
                mc_tz_free(zones[--nzones]);
            zones[nzones++] = tz;
        }
        mc_cron *c = mc_cron_parse(expr, err, sizeof err);
        if (!c) {
            printf("ERR %s\n", err);
            continue;
        }
        int64_t t = strtoll(after, NULL, 10);
        int n = atoi(count);
        for (int i = 0; i < n; i++) {
            t = mc_cron_next(c, tz, t);
            printf(i ? " %lld" : "%lld", (long long)t);
            if (t < 0)
                break;
        }
        putchar('\n');
        fflush(stdout);
        mc_cron_free(c);
    }
    for (int i = 0; i < nzones; i++)
        mc_tz_free(zones[i]);
    return 0;
}
