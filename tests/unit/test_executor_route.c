/* Which member a call to an endpoint group goes to, strategy by strategy, checked over
 * hundreds of picks against each strategy's definition; passive health (a failed member
 * is skipped for its time, then called again; with every member failed, all are tried);
 * and the admission limits' arithmetic: the shares of all partitions add up to the limit
 * for every split of ownership, and no window of one second holds more starts than the
 * rate. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "endpoints.h"
#include "executor_admission.h"
#include "executor_route.h"

#define N_MEMBERS 4

static mc_group_member members[N_MEMBERS] = {{"http://a.test", NULL},
                                             {"http://b.test", NULL},
                                             {"http://c.test", NULL},
                                             {"http://d.test", NULL}};

/* A snapshot holding the group of n of the members above. */
static mc_endpoints *snapshot_of(size_t n, mc_route_strategy s)
{
    mc_endpoints *e = mc_endpoints_new();
    mc_group g = {.app_id = "shop",
                  .name = "billing",
                  .strategy = s,
                  .unhealthy_ms = 1000,
                  .members = members,
                  .n_members = n};
    CHECK(e && mc_endpoints_put_group(e, &g) == 0);
    return e;
}

/* Picks for key and counts the call as made and ended (healthy); the member's index. */
static size_t pick_and_call(mc_route_table *t, const mc_group *g, mc_route_strategy s,
                            const char *key, int64_t now)
{
    size_t i = SIZE_MAX;
    CHECK(mc_route_pick(t, g, s, key, NULL, 0, now, &i) == MC_PICK_OK);
    if (i == SIZE_MAX)
        return 0;
    mc_route_started(t, g, i);
    mc_route_ended(t, g->app_id, g->name, &g->members[i], false, g->unhealthy_ms, now);
    return i;
}

static void fail(mc_route_table *t, const mc_group *g, size_t i, int64_t now)
{
    mc_route_started(t, g, i);
    mc_route_ended(t, g->app_id, g->name, &g->members[i], true, g->unhealthy_ms, now);
}

static void first_last_and_health(void)
{
    mc_endpoints *e = snapshot_of(N_MEMBERS, MC_ROUTE_FIRST);
    const mc_group *g = mc_endpoints_group(e, "shop", "billing");
    mc_route_table *t = mc_route_table_new(1);
    for (int i = 0; i < 100; i++) {
        CHECK(pick_and_call(t, g, MC_ROUTE_FIRST, "k", 10) == 0);
        CHECK(pick_and_call(t, g, MC_ROUTE_LAST, "k", 10) == N_MEMBERS - 1);
    }
    fail(t, g, 0, 100); /* unhealthy until 1100 */
    CHECK(pick_and_call(t, g, MC_ROUTE_FIRST, "k", 100) == 1, "a failed member was picked");
    CHECK(pick_and_call(t, g, MC_ROUTE_FIRST, "k", 1099) == 1);
    CHECK(pick_and_call(t, g, MC_ROUTE_FIRST, "k", 1100) == 0, "not called again after its time");
    for (size_t i = 0; i < N_MEMBERS; i++)
        fail(t, g, i, 2000);
    CHECK(pick_and_call(t, g, MC_ROUTE_FIRST, "k", 2001) == 0,
          "with every member failed, the first is still called");
    mc_route_table_free(t);
    mc_endpoints_unref(e);
}

static void round_robin_turns(void)
{
    mc_endpoints *e = snapshot_of(3, MC_ROUTE_ROUND_ROBIN);
    const mc_group *g = mc_endpoints_group(e, "shop", "billing");
    mc_route_table *t = mc_route_table_new(1);
    for (int i = 0; i < 300; i++)
        CHECK(pick_and_call(t, g, MC_ROUTE_ROUND_ROBIN, "k", 10) == (size_t)(i % 3), "pick %d", i);
    fail(t, g, 1, 20);
    size_t seen[3] = {0};
    for (int i = 0; i < 100; i++)
        seen[pick_and_call(t, g, MC_ROUTE_ROUND_ROBIN, "k", 30)]++;
    CHECK(seen[1] == 0 && seen[0] == 50 && seen[2] == 50, "%zu %zu %zu", seen[0], seen[1], seen[2]);
    /* A member joining: the round goes on from the last pick, through the newcomer. */
    size_t last = pick_and_call(t, g, MC_ROUTE_ROUND_ROBIN, "k", 5000);
    mc_endpoints *e4 = snapshot_of(4, MC_ROUTE_ROUND_ROBIN);
    const mc_group *g4 = mc_endpoints_group(e4, "shop", "billing");
    size_t next = pick_and_call(t, g4, MC_ROUTE_ROUND_ROBIN, "k", 5000);
    CHECK(next == (last + 1) % 4, "after %zu came %zu", last, next);
    mc_route_table_free(t);
    mc_endpoints_unref(e);
    mc_endpoints_unref(e4);
}

static void random_spreads(void)
{
    mc_endpoints *e = snapshot_of(N_MEMBERS, MC_ROUTE_RANDOM);
    const mc_group *g = mc_endpoints_group(e, "shop", "billing");
    mc_route_table *t = mc_route_table_new(7);
    size_t seen[N_MEMBERS] = {0};
    fail(t, g, 2, 0);
    for (int i = 0; i < 3000; i++)
        seen[pick_and_call(t, g, MC_ROUTE_RANDOM, "k", 10)]++;
    CHECK(seen[2] == 0, "an unhealthy member was picked %zu times", seen[2]);
    for (size_t i = 0; i < N_MEMBERS; i++)
        CHECK(i == 2 || (seen[i] > 800 && seen[i] < 1200), "member %zu: %zu of 3000", i, seen[i]);
    mc_route_table_free(t);
    mc_endpoints_unref(e);
}

static void consistent_hash_keeps_keys(void)
{
    mc_endpoints *e4 = snapshot_of(4, MC_ROUTE_CONSISTENT_HASH);
    mc_endpoints *e3 = snapshot_of(3, MC_ROUTE_CONSISTENT_HASH);
    const mc_group *g4 = mc_endpoints_group(e4, "shop", "billing");
    const mc_group *g3 = mc_endpoints_group(e3, "shop", "billing");
    mc_route_table *t = mc_route_table_new(1);
    size_t moved = 0, on_d = 0, per[4] = {0};
    for (int i = 0; i < 1000; i++) {
        char key[32];
        snprintf(key, sizeof key, "shop/task-%d", i);
        size_t a = pick_and_call(t, g4, MC_ROUTE_CONSISTENT_HASH, key, 10);
        per[a]++;
        CHECK(pick_and_call(t, g4, MC_ROUTE_CONSISTENT_HASH, key, 11) == a,
              "the same key moved with the membership stable");
        size_t b = pick_and_call(t, g3, MC_ROUTE_CONSISTENT_HASH, key, 12);
        on_d += a == 3;
        moved += a != b;
        CHECK(a == 3 || a == b, "key %s moved from %zu to %zu though its member stayed", key, a, b);
    }
    CHECK(moved == on_d, "%zu keys moved, %zu were on the member that left", moved, on_d);
    for (int i = 0; i < 4; i++)
        CHECK(per[i] > 150 && per[i] < 350, "member %d holds %zu of 1000 keys", i, per[i]);
    mc_route_table_free(t);
    mc_endpoints_unref(e4);
    mc_endpoints_unref(e3);
}

static void least_used(void)
{
    mc_endpoints *e = snapshot_of(3, MC_ROUTE_LEAST_FREQUENTLY_USED);
    const mc_group *g = mc_endpoints_group(e, "shop", "billing");
    mc_route_table *t = mc_route_table_new(1);
    /* Member 0 already has 5 calls: LFU gives the next 10 to 1 and 2 in turn. */
    for (int i = 0; i < 5; i++) {
        mc_route_started(t, g, 0);
        mc_route_ended(t, "shop", "billing", &g->members[0], false, 1000, 1);
    }
    size_t seen[3] = {0};
    for (int i = 0; i < 10; i++)
        seen[pick_and_call(t, g, MC_ROUTE_LEAST_FREQUENTLY_USED, "k", 2)]++;
    CHECK(seen[0] == 0 && seen[1] == 5 && seen[2] == 5, "%zu %zu %zu", seen[0], seen[1], seen[2]);
    /* LRU: never called first, then the one called longest ago. */
    mc_route_table *lru = mc_route_table_new(1);
    mc_route_started(lru, g, 1);
    mc_route_started(lru, g, 0);
    CHECK(pick_and_call(lru, g, MC_ROUTE_LEAST_RECENTLY_USED, "k", 300) == 2);
    CHECK(pick_and_call(lru, g, MC_ROUTE_LEAST_RECENTLY_USED, "k", 301) == 1);
    CHECK(pick_and_call(lru, g, MC_ROUTE_LEAST_RECENTLY_USED, "k", 302) == 0);
    CHECK(pick_and_call(lru, g, MC_ROUTE_LEAST_RECENTLY_USED, "k", 303) == 2);
    /* Calls started in bursts within one millisecond and across them: LRU takes every
     * member in turn, as long as the clock does not go back. */
    mc_route_table *turns = mc_route_table_new(1);
    size_t per[3] = {0};
    int64_t now = 1000;
    for (int i = 0; i < 150; i++) {
        size_t k = SIZE_MAX;
        CHECK(mc_route_pick(turns, g, MC_ROUTE_LEAST_RECENTLY_USED, "k", NULL, 0, now, &k) ==
              MC_PICK_OK);
        mc_route_started(turns, g, k);
        per[k]++;
        now += (i * 7) % 5 == 0; /* sometimes a millisecond passes */
    }
    CHECK(per[0] == 50 && per[1] == 50 && per[2] == 50, "LRU turns: %zu %zu %zu", per[0], per[1],
          per[2]);
    mc_route_table_free(turns);
    mc_route_table_free(t);
    mc_route_table_free(lru);
    mc_endpoints_unref(e);
}

static void failover_and_busyover(void)
{
    mc_endpoints *e = snapshot_of(3, MC_ROUTE_FAILOVER);
    const mc_group *g = mc_endpoints_group(e, "shop", "billing");
    mc_route_table *t = mc_route_table_new(1);
    mc_route_tried tried = {UINT64_C(1)};
    size_t i;
    CHECK(mc_route_pick(t, g, MC_ROUTE_FAILOVER, "k", &tried, 0, 1, &i) == MC_PICK_OK && i == 1);
    tried.bits = 7;
    CHECK(mc_route_pick(t, g, MC_ROUTE_FAILOVER, "k", &tried, 0, 1, &i) == MC_PICK_EMPTY,
          "every member tried, yet a pick");
    /* BUSYOVER with 2 calls a member: 0, 0, 1, 1, 2, 2, then busy until one ends. */
    size_t want[6] = {0, 0, 1, 1, 2, 2};
    for (int k = 0; k < 6; k++) {
        CHECK(mc_route_pick(t, g, MC_ROUTE_BUSYOVER, "k", NULL, 2, 1, &i) == MC_PICK_OK &&
                  i == want[k],
              "call %d went to %zu", k, i);
        mc_route_started(t, g, i);
    }
    CHECK(mc_route_pick(t, g, MC_ROUTE_BUSYOVER, "k", NULL, 2, 1, &i) == MC_PICK_BUSY);
    mc_route_ended(t, "shop", "billing", &g->members[1], false, 1000, 2);
    CHECK(mc_route_pick(t, g, MC_ROUTE_BUSYOVER, "k", NULL, 2, 2, &i) == MC_PICK_OK && i == 1);
    mc_route_table_free(t);
    mc_endpoints_unref(e);
}

/* For P partitions split over k owners every way round-robin gives, the shares add up
 * to the limit exactly. */
static void shares_add_up(void)
{
    for (int32_t p = 1; p <= 24; p++) {
        for (int32_t owners = 1; owners <= p; owners++) {
            for (int64_t n = p; n <= 3 * p + 5; n += 3) {
                int64_t sum = 0;
                for (int32_t o = 0; o < owners; o++) {
                    mc_ownership own = {.total = p};
                    for (int32_t q = o; q < p; q += owners)
                        own.owned[own.n_owned++] = q;
                    sum += mc_ownership_share(&own, n);
                }
                CHECK(sum == n, "P=%d owners=%d N=%lld: shares add to %lld", p, owners,
                      (long long)n, (long long)sum);
            }
        }
    }
    mc_ownership one = {.total = 12, .n_owned = 1, .owned = {11}};
    CHECK(mc_ownership_share(&one, 5) == 1, "a share below one call is one");
    CHECK(mc_ownership_share(&one, 0) == 0, "no limit stays no limit");
}

/* Starts as fast as the bucket allows for 5 s of simulated time; counts the starts in
 * every window of one second. */
static void rate_never_exceeded(int64_t per_second, int32_t max_open)
{
    mc_admission *a = mc_admission_new();
    mc_bucket *b = mc_admission_bucket(a, MC_BUCKET_HOST, "api.test");
    mc_ownership whole = {.total = 1, .n_owned = 1};
    mc_admission_limit l = {.max_concurrent = max_open, .max_per_second = (double)per_second};
    mc_bucket_set_limit(b, &l, &whole);
    size_t cap = (size_t)per_second * 6 + 16, n = 0;
    int64_t *starts = malloc(cap * sizeof *starts);
    int64_t now = 1000000;
    while (now < 6000000 && n < cap) {
        int64_t retry;
        if (mc_bucket_allows(b, now, &retry)) {
            mc_bucket_take(b, now);
            starts[n++] = now;
            mc_bucket_release(b); /* calls end at once */
            continue;
        }
        CHECK(retry > now && retry != INT64_MAX, "no retry time");
        now = retry > now + 1000 ? retry : now + 1000; /* the loop wakes each millisecond */
    }
    size_t worst = 0;
    for (size_t i = 0, j = 0; i < n; i++) {
        while (starts[j] <= starts[i] - 1000000)
            j++;
        if (i - j + 1 > worst)
            worst = i - j + 1;
    }
    CHECK(worst <= (size_t)per_second, "%zu starts in one second at %lld/s", worst,
          (long long)per_second);
    CHECK(n >= (size_t)(per_second * 5 * 95 / 100), "only %zu starts in 5 s at %lld/s", n,
          (long long)per_second);
    free(starts);
    mc_admission_free(a);
}

static void concurrency_bound(void)
{
    mc_admission *a = mc_admission_new();
    mc_bucket *b = mc_admission_bucket(a, MC_BUCKET_APP, "shop");
    mc_ownership half = {.total = 4, .n_owned = 2, .owned = {0, 2}};
    mc_admission_limit l = {.max_concurrent = 50};
    mc_bucket_set_limit(b, &l, &half);
    int started = 0;
    int64_t retry;
    while (mc_bucket_allows(b, 0, &retry))
        mc_bucket_take(b, 0), started++;
    CHECK(started == 25, "partitions 0 and 2 of 4 carry 13 + 12 of 50, started %d", started);
    CHECK(retry == INT64_MAX, "a full bucket waits for a call to end");
    mc_bucket_release(b);
    CHECK(mc_bucket_allows(b, 0, &retry), "a call ended, yet no room");
    mc_admission_free(a);
}

int main(void)
{
    first_last_and_health();
    round_robin_turns();
    random_spreads();
    consistent_hash_keeps_keys();
    least_used();
    failover_and_busyover();
    shares_add_up();
    rate_never_exceeded(2000, 0);
    rate_never_exceeded(50, 0);
    rate_never_exceeded(3, 0);
    rate_never_exceeded(2000, 50);
    concurrency_bound();
    return check_exit("test_executor_route");
}
