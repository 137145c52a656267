/* The executor's memory of recent recalls (processors/executor_recalls.h):
 * a recall voids the older versions of its key read after it, not newer ones
 * nor other keys, for as long as it is kept; a later recall of the key
 * renews it and can only raise its version; what expired is forgotten. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "executor_recalls.h"

static mc_version ver(int64_t v, int32_t attempt)
{
    return (mc_version){.v = v, .attempt = attempt};
}

static bool voids(mc_recall_memory *m, const char *key, mc_version v, int64_t now)
{
    return mc_recall_memory_voids(m, key, strlen(key), v, now);
}

int main(void)
{
    mc_recall_memory *m = mc_recall_memory_new(1000);
    CHECK(m != NULL);
    CHECK(!voids(m, "a/x", ver(1, 0), 0), "nothing noted voids nothing");
    CHECK(mc_recall_memory_note(m, "a/x", 3, ver(10, 0), 100) == 0);
    CHECK(voids(m, "a/x", ver(9, 4), 200), "an older version, any attempt");
    CHECK(!voids(m, "a/x", ver(10, 0), 200), "not the recall's own version");
    CHECK(!voids(m, "a/x", ver(11, 0), 200), "not a newer version");
    CHECK(!voids(m, "a/y", ver(1, 0), 200), "not another key");
    CHECK(!voids(m, "a/xx", ver(1, 0), 200) && !voids(m, "a/", ver(1, 0), 200),
          "not a key that shares a prefix");
    CHECK(voids(m, "a/x", ver(9, 0), 1100), "kept for keep_ms");
    /* A later recall with an older version renews it but keeps the newer. */
    CHECK(mc_recall_memory_note(m, "a/x", 3, ver(5, 0), 1000) == 0);
    CHECK(voids(m, "a/x", ver(9, 0), 1900), "renewed, still at version 10");
    CHECK(mc_recall_memory_note(m, "a/x", 3, ver(20, 1), 1500) == 0);
    CHECK(voids(m, "a/x", ver(20, 0), 1600) && !voids(m, "a/x", ver(20, 1), 1600),
          "raised to (20, 1)");
    CHECK(mc_recall_memory_note(m, "a/y", 3, ver(7, 0), 1600) == 0);
    CHECK(mc_recall_memory_count(m) == 2);
    CHECK(!voids(m, "a/x", ver(9, 0), 2601), "forgotten keep_ms after the last recall");
    CHECK(mc_recall_memory_count(m) == 0, "expired entries are freed: %zu left",
          mc_recall_memory_count(m));
    /* Many keys: each found, and all gone once expired. */
    char key[32];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof key, "app/t%d", i);
        CHECK(mc_recall_memory_note(m, key, (size_t)n, ver(i + 1, 0), 10000 + i / 10) == 0);
    }
    CHECK(mc_recall_memory_count(m) == 5000);
    int missed = 0;
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof key, "app/t%d", i);
        missed += !mc_recall_memory_voids(m, key, (size_t)n, ver(i, 0), 10500);
    }
    CHECK(missed == 0, "%d of 5000 recalls not found", missed);
    CHECK(!voids(m, "app/t0", ver(0, 0), 20000) && mc_recall_memory_count(m) == 0);
    mc_recall_memory_free(m);
    return check_exit("test_executor_recalls");
}
