/* The executor's memory of recent recalls (processors/executor_recalls.h): a
 * recall voids the older versions of its key found after it in the partition
 * and produced at most keep_ms after it, not newer versions, other keys or
 * what came before it; the newest recall of a key counts; time is the
 * records' timestamps; what expired is forgotten, also behind a key that is
 * recalled again and again. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "executor_recalls.h"

static mc_version ver(int64_t v, int32_t attempt)
{
    return (mc_version){.v = v, .attempt = attempt};
}

static bool voids(mc_recall_memory *m, const char *key, mc_version v, int64_t offset, int64_t ts)
{
    return mc_recall_memory_voids(m, key, strlen(key), v, offset, ts);
}

static int note(mc_recall_memory *m, const char *key, mc_version v, int64_t offset, int64_t ts)
{
    return mc_recall_memory_note(m, key, strlen(key), v, offset, ts);
}

int main(void)
{
    mc_recall_memory *m = mc_recall_memory_new(1000);
    CHECK(m != NULL);
    CHECK(!voids(m, "a/x", ver(1, 0), 1, 0), "nothing noted voids nothing");
    CHECK(note(m, "a/x", ver(10, 0), 50, 100) == 0);
    CHECK(voids(m, "a/x", ver(9, 4), 51, 200), "an older version after it, any attempt");
    CHECK(!voids(m, "a/x", ver(9, 0), 49, 200), "not one before it in the partition");
    CHECK(!voids(m, "a/x", ver(10, 0), 51, 200), "not the recall's own version");
    CHECK(!voids(m, "a/x", ver(11, 0), 51, 200), "not a newer version");
    CHECK(!voids(m, "a/y", ver(1, 0), 51, 200), "not another key");
    CHECK(!voids(m, "a/xx", ver(1, 0), 51, 200) && !voids(m, "a/", ver(1, 0), 51, 200),
          "not a key that shares a prefix");
    CHECK(voids(m, "a/x", ver(9, 0), 60, 1100), "produced up to keep_ms after the recall");
    CHECK(!voids(m, "a/x", ver(9, 0), 61, 1101), "not later than that");
    CHECK(mc_recall_memory_count(m) == 0, "and then forgotten");

    /* The newest recall counts; an older one renews it but changes nothing else. */
    CHECK(note(m, "a/x", ver(20, 0), 100, 2000) == 0);
    CHECK(note(m, "a/x", ver(5, 0), 120, 2500) == 0);
    CHECK(voids(m, "a/x", ver(19, 0), 130, 3400) && !voids(m, "a/x", ver(19, 0), 110, 3400) == 0,
          "renewed to 3500, still version 20 from offset 100");
    CHECK(note(m, "a/x", ver(30, 1), 140, 3000) == 0);
    CHECK(voids(m, "a/x", ver(30, 0), 141, 3100) && !voids(m, "a/x", ver(30, 1), 141, 3100) &&
              !voids(m, "a/x", ver(25, 0), 135, 3100),
          "raised to (30, 1) from offset 140");

    /* A key recalled every 500 ms for 10 s (a heartbeat that cancels and
     * re-submits) stays, and the keys noted behind it are still forgotten. */
    mc_recall_memory_free(m);
    m = mc_recall_memory_new(1000);
    char key[32];
    for (int t = 0; t <= 10000; t += 500) {
        CHECK(note(m, "a/heartbeat", ver(t + 1, 0), t, t) == 0);
        int n = snprintf(key, sizeof key, "a/once-%d", t);
        CHECK(mc_recall_memory_note(m, key, (size_t)n, ver(1, 0), t, t) == 0);
    }
    CHECK(mc_recall_memory_count(m) <= 4, "%zu keys kept: the heartbeat and the last ones",
          mc_recall_memory_count(m));
    CHECK(voids(m, "a/heartbeat", ver(1, 0), 20000, 10500), "the heartbeat's recall stays");

    /* A partition read again from an earlier offset (a rewind): a fire is
     * paired with the recall before it by their own timestamps. */
    CHECK(note(m, "a/old", ver(7, 0), 3, 200) == 0);
    CHECK(voids(m, "a/old", ver(1, 0), 4, 300), "a fire 100 ms after its recall, read again");
    CHECK(!voids(m, "a/old", ver(1, 0), 5, 1300), "not one produced 1.1 s after it");

    /* Many keys: each found, all gone once expired. */
    mc_recall_memory_free(m);
    m = mc_recall_memory_new(1000);
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof key, "app/t%d", i);
        CHECK(mc_recall_memory_note(m, key, (size_t)n, ver(i + 1, 0), i, 10000 + i / 10) == 0);
    }
    CHECK(mc_recall_memory_count(m) == 5000);
    int missed = 0;
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof key, "app/t%d", i);
        missed += !mc_recall_memory_voids(m, key, (size_t)n, ver(i, 0), 6000, 10500);
    }
    CHECK(missed == 0, "%d of 5000 recalls not found", missed);
    CHECK(!voids(m, "app/t0", ver(0, 0), 9000, 20000) && mc_recall_memory_count(m) == 0);
    mc_recall_memory_free(m);
    return check_exit("test_executor_recalls");
}
