/* The router's memory of recent Submits (processors/router_recent.h): a key
 * routed due soon is near while its due time is within the asked distance,
 * until its due time and the grace have passed; a key due further ahead
 * than a minute is not remembered, and a newer Submit replaces what was
 * noted (forgetting the key when it is due far ahead); many keys due in any
 * order leave as their own times pass; a full memory takes no new key until
 * some leave. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "router_recent.h"

#define T0 INT64_C(1800000000000)

static bool near(mc_router_recent *m, const char *key, int64_t now, int64_t ahead)
{
    return mc_router_recent_near(m, key, strlen(key), now, ahead);
}

static void note(mc_router_recent *m, const char *key, int64_t due, int64_t now)
{
    mc_router_recent_note(m, key, strlen(key), due, now, 0);
}

int main(void)
{
    mc_router_recent *m = mc_router_recent_new(T0, 2000);
    CHECK(m != NULL);
    CHECK(!near(m, "a/x", T0, 1000), "nothing noted is near");

    note(m, "a/x", T0 + 5000, T0);
    CHECK(!near(m, "a/x", T0, 1000), "due in 5 s is not within 1 s");
    CHECK(near(m, "a/x", T0 + 4000, 1000), "it is 1 s before its due time");
    CHECK(!near(m, "a/xx", T0 + 4000, 1000) && !near(m, "a/", T0 + 4000, 1000),
          "not a key that shares a prefix");
    CHECK(near(m, "a/x", T0 + 5000 + MC_ROUTER_RECENT_GRACE_MS, 0), "still at due + grace");
    CHECK(!near(m, "a/x", T0 + 5001 + MC_ROUTER_RECENT_GRACE_MS, 0), "not after it");
    CHECK(mc_router_recent_count(m) == 0, "and then forgotten");

    /* Due further ahead than a minute: not remembered at all. */
    int64_t now = T0 + 10000;
    note(m, "a/far", now + MC_ROUTER_RECENT_MS + 1, now);
    CHECK(mc_router_recent_count(m) == 0 && !near(m, "a/far", now, INT64_MAX / 4),
          "a Submit due after a minute is not remembered");
    note(m, "a/edge", now + MC_ROUTER_RECENT_MS, now);
    CHECK(near(m, "a/edge", now, MC_ROUTER_RECENT_MS), "one due in exactly a minute is");

    /* A newer Submit replaces the key's due time; one due far forgets it. */
    note(m, "a/y", now + 3000, now);
    note(m, "a/y", now + 200, now + 100);
    CHECK(near(m, "a/y", now + 100, 200), "moved closer");
    CHECK(mc_router_recent_note(m, "a/y", 3, now + 200, now + 100, 200) &&
              !mc_router_recent_note(m, "a/z", 3, now + 200, now + 100, 200000),
          "a note says whether the key was near before it");
    note(m, "a/y", now + 20000, now + 150);
    CHECK(!near(m, "a/y", now + 150, 1000) && near(m, "a/y", now + 19500, 1000),
          "moved further, and kept until the new due time");
    CHECK(near(m, "a/y", now + 20000 + MC_ROUTER_RECENT_GRACE_MS, 0),
          "the new due time's grace, not the old one's");
    note(m, "a/y", now + 120000, now + 160);
    CHECK(!near(m, "a/y", now + 200, INT64_MAX / 4), "a re-submit due far ahead forgets it");

    /* Due in the past when routed (a task due now): kept for the grace from
     * when it was routed. */
    note(m, "a/now", now - 5000, now);
    CHECK(near(m, "a/now", now + MC_ROUTER_RECENT_GRACE_MS, 0) &&
              !near(m, "a/now", now + MC_ROUTER_RECENT_GRACE_MS + 1, 0),
          "a task due already is near for the grace after routing");

    /* Many keys due in any order leave as their own times pass. */
    mc_router_recent_free(m);
    m = mc_router_recent_new(T0, 2000);
    char key[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof key, "a/%d", i);
        note(m, key, T0 + (int64_t)((i * 7919) % 1000) * 10, T0);
    }
    CHECK(mc_router_recent_count(m) == 1000);
    CHECK(!near(m, "a/none", T0 + 5000 + MC_ROUTER_RECENT_GRACE_MS, 0));
    CHECK(mc_router_recent_count(m) == 500, "%zu left after half the due times passed",
          mc_router_recent_count(m));
    size_t still = 0;
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof key, "a/%d", i);
        still += near(m, key, T0 + 5000 + MC_ROUTER_RECENT_GRACE_MS, INT64_MAX / 4);
    }
    CHECK(still == 500, "%zu of the later half still near", still);

    /* Full: a new key is not remembered until some leave; a known one
     * still moves. */
    for (int i = 0; i < 1600; i++) {
        snprintf(key, sizeof key, "b/%d", i);
        note(m, key, T0 + 8000, T0 + 6000);
    }
    CHECK(mc_router_recent_count(m) == 2000, "%zu remembered, the cap 2000",
          mc_router_recent_count(m));
    CHECK(!near(m, "b/1500", T0 + 6000, INT64_MAX / 4) && near(m, "b/1499", T0 + 6000, 2000),
          "the key past the cap is not remembered, the one before it is");
    note(m, "b/0", T0 + 9000, T0 + 6000);
    CHECK(!near(m, "b/0", T0 + 6000, 2000) && near(m, "b/0", T0 + 6000, 3000),
          "a remembered key moves when full");
    note(m, "b/1500", T0 + 12000, T0 + 10001 + MC_ROUTER_RECENT_GRACE_MS);
    CHECK(near(m, "b/1500", T0 + 11001, 1000), "remembered once the others left");
    mc_router_recent_free(m);
    return check_exit("test_router_recent");
}
