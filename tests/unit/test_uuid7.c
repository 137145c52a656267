/* UUIDv7: layout (RFC 9562), ordering within and across milliseconds, and
 * ordering kept when the clock steps back or 4096 ids share a millisecond. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "uuid7.h"

static int64_t embedded_ms(const char *u)
{
    char hex[13];
    memcpy(hex, u, 8);
    memcpy(hex + 8, u + 9, 4);
    hex[12] = '\0';
    long long v = 0;
    sscanf(hex, "%llx", &v);
    return v;
}

static void test_layout(void)
{
    mc_uuid7 g;
    CHECK(mc_uuid7_init(&g) == 0);
    char u[MC_UUID_STR_LEN + 1];
    mc_uuid7_next(&g, 1767225600123, u);
    CHECK(strlen(u) == 36);
    CHECK(u[8] == '-' && u[13] == '-' && u[18] == '-' && u[23] == '-');
    CHECK(u[14] == '7');                  /* version */
    CHECK(strchr("89ab", u[19]) != NULL); /* variant 10xx */
    CHECK(embedded_ms(u) == 1767225600123);
    for (const char *p = u; *p; p++)
        CHECK((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || *p == '-');
    mc_uuid7_destroy(&g);
}

static void test_order(void)
{
    mc_uuid7 g;
    CHECK(mc_uuid7_init(&g) == 0);
    char prev[MC_UUID_STR_LEN + 1], u[MC_UUID_STR_LEN + 1];
    mc_uuid7_next(&g, 1000000, prev);
    /* 10,000 ids in one millisecond (more than the counter holds), then a
     * clock that steps back, then forward again. */
    int64_t clock[] = {1000000, 999000, 1000001, 2000000};
    for (size_t c = 0; c < sizeof clock / sizeof clock[0]; c++) {
        for (int i = 0; i < 10000; i++) {
            mc_uuid7_next(&g, clock[c], u);
            CHECK(strcmp(prev, u) < 0);
            memcpy(prev, u, sizeof u);
        }
    }
    /* After the burst the embedded time ran ahead, but not by much. */
    mc_uuid7_next(&g, 2000000, u);
    CHECK(embedded_ms(u) >= 2000000 && embedded_ms(u) <= 2000003);
    mc_uuid7_destroy(&g);
}

int main(void)
{
    test_layout();
    test_order();
    return check_exit("uuid7");
}
