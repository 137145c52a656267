/* libFuzzer harness for mc_view_app_stats_decode: a view restores each app's
 * minute counters from the `views` changelog, which anyone with access to
 * the cluster can write. Any bytes are refused with a reason or decoded into
 * counters whose minutes can be summed and answered, and whose bytes,
 * encoded again, decode to the same bytes once more; never a crash, an
 * overread (the value is copied to an exact-size buffer) or a leak. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view_list.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "%s\n", what);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char key[] = MC_VIEW_STATS_PREFIX "shop";
    uint8_t *v = malloc(size ? size : 1);
    if (!v)
        return 0;
    if (size)
        memcpy(v, data, size);
    const char *why = NULL;
    mc_view_app_stats *s = mc_view_app_stats_decode(key, sizeof key - 1, v, size, &why);
    free(v);
    if (!s) {
        if (!why)
            fail("refused without a reason");
        return 0;
    }
    /* Summed and answered at the latest minute it holds. */
    int64_t now = 0;
    for (int i = 0; i < MC_VIEW_STATS_MINUTES; i++)
        if ((int64_t)s->minutes[i].minute * 60000 > now)
            now = (int64_t)s->minutes[i].minute * 60000;
    uint64_t sum[3];
    mc_view_app_stats_sum(s, now, sum);
    mc_view_minute minutes[MC_VIEW_STATS_MINUTES];
    memset(minutes, 0, sizeof minutes);
    mc_view_app_stats_add_to(s, now, minutes);
    for (int i = 0; i < MC_VIEW_STATS_MINUTES; i++)
        if (mc_view_late_quantile(minutes[i].late, 0.99) < -1)
            fail("a quantile below -1");
    json_t *j = mc_view_minutes_json(minutes, now);
    if (!j)
        fail("no answer for counters it decoded");
    json_decref(j);
    mc_buf once = {0}, twice = {0};
    if (mc_view_app_stats_encode(s, &once) != 0)
        fail("cannot encode counters it decoded");
    mc_view_app_stats *back =
        mc_view_app_stats_decode(key, sizeof key - 1, once.data, once.len, &why);
    if (!back || mc_view_app_stats_encode(back, &twice) != 0)
        fail("refused its own encoding");
    if (once.len != twice.len || memcmp(once.data, twice.data, once.len) != 0)
        fail("decode and encode are not inverse on their own bytes");
    mc_buf_free(&once);
    mc_buf_free(&twice);
    free(back);
    free(s);
    return 0;
}
