/* The timing wheel: exact 1 ms due order with ties in insertion order,
 * cancel/re-add, overdue timers (exact order too) and a clock stepped back
 * (nothing early), far-future timers, every level boundary and
 * the overflow list, chunked draining of a 1M-timer burst, next_deadline as a
 * safe poll timeout, big jumps vs 1 ms steps, and a randomized differential
 * run against a sorted-array model of the documented semantics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "timing_wheel.h"
#include "clock.h"

/* For loops that would otherwise print a million lines. */
#define REQUIRE(cond, ...)                                                                         \
    do {                                                                                           \
        CHECK(cond, __VA_ARGS__);                                                                  \
        if (!(cond))                                                                               \
            return;                                                                                \
    } while (0)

#define SPAN ((int64_t)1 << 42) /* the wheel proper: 7 levels x 6 bits */
#define DAY_MS ((int64_t)86400000)

typedef struct item {
    uint64_t pad; /* so MC_TIMER_OWNER is exercised with a non-zero offset */
    mc_timer timer;
    uint32_t id;
} item;

static uint32_t id_of(const mc_timer *t)
{
    return MC_TIMER_OWNER(t, item, timer)->id;
}

static uint64_t rng_state;
static uint64_t rnd(void) /* xorshift64*: fixed seed, reproducible runs */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * UINT64_C(2685821657736338717);
}
static uint64_t rnd_below(uint64_t n)
{
    return n ? rnd() % n : 0;
}

static int64_t sat_add(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b)
        return INT64_MIN;
    return a + b;
}

static item *make_items(size_t n)
{
    item *it = calloc(n, sizeof *it);
    if (!it) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        it[i].id = (uint32_t)i;
    return it;
}

/* Pops everything due at now, in chunks of `chunk`, appending ids to seq. */
static size_t drain(mc_timing_wheel *w, int64_t now, size_t chunk, uint32_t *seq, size_t at)
{
    mc_timer *out[1024];
    if (chunk > 1024)
        chunk = 1024;
    size_t n;
    do {
        n = mc_wheel_advance(w, now, out, chunk);
        for (size_t i = 0; i < n; i++) {
            CHECK(!mc_wheel_scheduled(out[i]), "popped timer still scheduled");
            CHECK(out[i]->due_ms <= now, "popped early: due %lld now %lld",
                  (long long)out[i]->due_ms, (long long)now);
            seq[at++] = id_of(out[i]);
        }
    } while (n == chunk);
    return at;
}

/* ---- reference model: a sorted array of (due, insertion seq) ------------- */

typedef struct ref_ent {
    int64_t eff;
    uint64_t seq;
    uint32_t id;
} ref_ent;

typedef struct ref_model {
    ref_ent *a; /* sorted descending, so the next to pop is a[n-1] */
    size_t n;
    int64_t cur; /* the wheel's drain position, as documented */
    int64_t now; /* the latest now given to advance */
    uint64_t seq;
    ref_ent *of; /* per id: its entry while scheduled */
    bool *sched;
} ref_model;

static bool ent_before(int64_t eff1, uint64_t seq1, int64_t eff2, uint64_t seq2)
{
    return eff1 < eff2 || (eff1 == eff2 && seq1 < seq2);
}

static void ref_init(ref_model *r, size_t ids, int64_t now)
{
    r->a = calloc(ids, sizeof *r->a);
    r->of = calloc(ids, sizeof *r->of);
    r->sched = calloc(ids, sizeof *r->sched);
    if (!r->a || !r->of || !r->sched) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    r->n = 0;
    r->cur = r->now = now;
    r->seq = 0;
}

static void ref_free(ref_model *r)
{
    free(r->a);
    free(r->of);
    free(r->sched);
}

/* Index of the entry (eff, seq) or of where it would go. */
static size_t ref_pos(const ref_model *r, int64_t eff, uint64_t seq)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ent_before(eff, seq, r->a[mid].eff, r->a[mid].seq))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void ref_cancel(ref_model *r, uint32_t id)
{
    if (!r->sched[id])
        return;
    size_t p = ref_pos(r, r->of[id].eff, r->of[id].seq);
    memmove(&r->a[p], &r->a[p + 1], (r->n - p - 1) * sizeof *r->a);
    r->n--;
    r->sched[id] = false;
}

static void ref_add(ref_model *r, uint32_t id, int64_t due)
{
    ref_cancel(r, id);
    ref_ent e = {due, ++r->seq, id};
    size_t p = ref_pos(r, e.eff, e.seq);
    memmove(&r->a[p + 1], &r->a[p], (r->n - p) * sizeof *r->a);
    r->a[p] = e;
    r->n++;
    r->of[id] = e;
    r->sched[id] = true;
}

/* Pops what is due by now (which may be earlier than before: nothing is
 * popped early); the drain position only moves forward. */
static size_t ref_advance(ref_model *r, int64_t now, uint32_t *ids, size_t max)
{
    r->now = now;
    size_t k = 0;
    int64_t last = now;
    while (k < max && r->n && r->a[r->n - 1].eff <= now) {
        ref_ent e = r->a[--r->n];
        r->sched[e.id] = false;
        ids[k++] = e.id;
        last = e.eff;
    }
    if (max == 0)
        return 0;
    int64_t to = k == max ? last : now;
    if (to > r->cur)
        r->cur = to;
    return k;
}

/* ---- tests -------------------------------------------------------------- */

static void basics(void)
{
    CHECK(sizeof(mc_timer) <= 32, "sizeof(mc_timer) = %zu", sizeof(mc_timer));
    mc_timing_wheel *w = mc_wheel_new(1000);
    mc_timer *out[8];
    item it[3] = {{0}};
    CHECK(mc_wheel_count(w) == 0, "empty count");
    CHECK(mc_wheel_next_deadline(w) == INT64_MAX, "empty deadline");
    CHECK(mc_wheel_advance(w, 5000, out, 8) == 0, "empty advance");
    CHECK(!mc_wheel_scheduled(&it[0].timer), "zeroed timer is unscheduled");

    mc_wheel_add(w, &it[0].timer, 5010);
    CHECK(mc_wheel_scheduled(&it[0].timer), "added timer is scheduled");
    CHECK(it[0].timer.due_ms == 5010, "due_ms recorded");
    CHECK(mc_wheel_count(w) == 1, "count 1");
    CHECK(mc_wheel_next_deadline(w) == 5010, "level-0 deadline exact: %lld",
          (long long)mc_wheel_next_deadline(w));
    CHECK(mc_wheel_advance(w, 5009, out, 8) == 0, "not due at 5009");
    CHECK(mc_wheel_advance(w, 5010, out, 8) == 1 && out[0] == &it[0].timer, "due at 5010");
    CHECK(mc_wheel_count(w) == 0 && !mc_wheel_scheduled(&it[0].timer), "popped");
    CHECK(mc_wheel_advance(w, 4000, out, 8) == 0, "a clock stepped back pops nothing");
    mc_wheel_add(w, &it[1].timer, 5011);
    CHECK(mc_wheel_advance(w, 4000, out, 8) == 0, "nothing before its due time");
    CHECK(mc_wheel_advance(w, 5011, out, 0) == 0, "max 0 pops nothing");
    CHECK(mc_wheel_advance(w, 5010, out, 8) == 0, "not due at 5010");
    CHECK(mc_wheel_advance(w, 5011, out, 8) == 1, "due at 5011");
    mc_wheel_free(w);
}

/* Timers due before the drain position (arrived late) still pop in exact
 * due order, before everything else: a stage that checkpoints "everything
 * up to the last fired (due, offset) is done" depends on it. */
static void past_due(void)
{
    mc_timing_wheel *w = mc_wheel_new(1000);
    mc_timer *out[8];
    item it[6] = {{0}};
    for (int i = 0; i < 6; i++)
        it[i].id = (uint32_t)i;
    mc_wheel_add(w, &it[0].timer, 500);
    mc_wheel_add(w, &it[1].timer, INT64_MIN);
    mc_wheel_add(w, &it[2].timer, 1000);
    CHECK(mc_wheel_next_deadline(w) == INT64_MIN, "an overdue deadline is exact: %lld",
          (long long)mc_wheel_next_deadline(w));
    CHECK(it[0].timer.due_ms == 500, "caller's due kept");
    CHECK(mc_wheel_count(w) == 3, "overdue ones counted");
    size_t n = mc_wheel_advance(w, 1000, out, 8);
    CHECK(n == 3 && id_of(out[0]) == 1 && id_of(out[1]) == 0 && id_of(out[2]) == 2,
          "due order: n=%zu", n);

    /* After time has moved, a due before it fires at the next advance even
     * when that advance does not move time. */
    CHECK(mc_wheel_advance(w, 9000, out, 8) == 0, "idle");
    mc_wheel_add(w, &it[3].timer, 10);
    CHECK(mc_wheel_next_deadline(w) == 10, "deadline: its due");
    CHECK(mc_wheel_advance(w, 9000, out, 8) == 1 && out[0] == &it[3].timer, "fires at once");

    /* Drain cut short at 9100 with time at 9200: a timer due at 9150 keeps its
     * exact place (after 9100, before 9160), and so does one due at 9050,
     * before the drain position (before the rest of 9100). */
    mc_wheel_add(w, &it[0].timer, 9100);
    mc_wheel_add(w, &it[1].timer, 9100);
    mc_wheel_add(w, &it[2].timer, 9160);
    CHECK(mc_wheel_advance(w, 9200, out, 1) == 1 && out[0] == &it[0].timer, "first of 9100");
    mc_wheel_add(w, &it[3].timer, 9150);
    mc_wheel_add(w, &it[4].timer, 9050);
    mc_wheel_add(w, &it[5].timer, 9050);
    CHECK(mc_wheel_advance(w, 9200, out, 1) == 1 && out[0] == &it[4].timer, "9050 first");
    mc_wheel_cancel(w, &it[5].timer);
    CHECK(!mc_wheel_scheduled(&it[5].timer) && mc_wheel_count(w) == 3, "an overdue one cancels");
    n = mc_wheel_advance(w, 9200, out, 8);
    CHECK(n == 3 && id_of(out[0]) == 1 && id_of(out[1]) == 3 && id_of(out[2]) == 2,
          "exact order after a cut-short drain: n=%zu", n);
    mc_wheel_free(w);
}

/* A wall clock stepped back fires nothing early: what the step re-opened
 * waits until the clock reaches it again, and keeps its order. */
static void clock_steps_back(void)
{
    mc_timing_wheel *w = mc_wheel_new(10000);
    mc_timer *out[8];
    item it[4] = {{0}};
    for (int i = 0; i < 4; i++)
        it[i].id = (uint32_t)i;
    CHECK(mc_wheel_advance(w, 20000, out, 8) == 0, "the drain position is at 20000");
    mc_wheel_add(w, &it[0].timer, 15000); /* due before the drain position */
    mc_wheel_add(w, &it[1].timer, 12000);
    mc_wheel_add(w, &it[2].timer, 20001);
    CHECK(mc_wheel_advance(w, 11000, out, 8) == 0, "stepped back to 11000: nothing is due");
    CHECK(mc_wheel_advance(w, 12000, out, 8) == 1 && out[0] == &it[1].timer, "12000 at 12000");
    CHECK(mc_wheel_advance(w, 14999, out, 8) == 0, "15000 not yet");
    mc_wheel_add(w, &it[3].timer, 14000);
    CHECK(mc_wheel_advance(w, 20000, out, 8) == 2 && out[0] == &it[3].timer &&
              out[1] == &it[0].timer,
          "14000 then 15000");
    CHECK(mc_wheel_advance(w, 20001, out, 8) == 1 && out[0] == &it[2].timer, "then the wheel");
    mc_wheel_free(w);
}

static void cancel(void)
{
    mc_timing_wheel *w = mc_wheel_new(0);
    mc_timer *out[16];
    item *it = make_items(8);

    /* Before due, in level 0 and in a coarse level. */
    mc_wheel_add(w, &it[0].timer, 40);
    mc_wheel_add(w, &it[1].timer, 40);
    mc_wheel_add(w, &it[2].timer, 30);
    mc_wheel_add(w, &it[3].timer, 5 * DAY_MS);
    mc_wheel_cancel(w, &it[0].timer);
    mc_wheel_cancel(w, &it[3].timer);
    CHECK(!mc_wheel_scheduled(&it[0].timer) && !mc_wheel_scheduled(&it[3].timer), "cancelled");
    CHECK(mc_wheel_count(w) == 2, "count %zu", mc_wheel_count(w));
    size_t n = mc_wheel_advance(w, 10 * DAY_MS, out, 16);
    CHECK(n == 2 && id_of(out[0]) == 2 && id_of(out[1]) == 1, "n=%zu", n);

    /* After re-add: the cancel removes the rescheduled timer. */
    mc_wheel_add(w, &it[4].timer, 10 * DAY_MS + 100);
    mc_wheel_add(w, &it[4].timer, 10 * DAY_MS + 300);
    mc_wheel_cancel(w, &it[4].timer);
    CHECK(mc_wheel_count(w) == 0, "count %zu", mc_wheel_count(w));
    CHECK(mc_wheel_next_deadline(w) == INT64_MAX, "empty again");
    CHECK(mc_wheel_advance(w, 11 * DAY_MS, out, 16) == 0, "nothing fires");

    /* Unscheduled: never added, twice, after pop. */
    mc_wheel_cancel(w, &it[5].timer);
    mc_wheel_add(w, &it[6].timer, 11 * DAY_MS + 5);
    mc_wheel_cancel(w, &it[6].timer);
    mc_wheel_cancel(w, &it[6].timer);
    mc_wheel_cancel(w, &it[1].timer); /* popped above */
    CHECK(mc_wheel_count(w) == 0, "count %zu", mc_wheel_count(w));

    /* Cancel the only timer of a coarse slot, and of the overflow list. */
    mc_wheel_add(w, &it[7].timer, 11 * DAY_MS + 1000000);
    mc_wheel_add(w, &it[5].timer, INT64_MAX);
    CHECK(mc_wheel_next_deadline(w) <= 11 * DAY_MS + 1000000, "deadline");
    mc_wheel_cancel(w, &it[7].timer);
    CHECK(mc_wheel_next_deadline(w) > 11 * DAY_MS + 1000000, "coarse slot cleared");
    mc_wheel_cancel(w, &it[5].timer);
    CHECK(mc_wheel_next_deadline(w) == INT64_MAX, "overflow cleared");
    CHECK(mc_wheel_advance(w, INT64_MAX, out, 16) == 0, "nothing left");
    free(it);
    mc_wheel_free(w);
}

/* Cancelling what is still queued in a burst that is being drained. */
static void cancel_during_burst(void)
{
    enum { N = 10000 };
    mc_timing_wheel *w = mc_wheel_new(0);
    item *it = make_items(N);
    mc_timer *out[100];
    for (int i = 0; i < N; i++)
        mc_wheel_add(w, &it[i].timer, 100000);
    size_t n = mc_wheel_advance(w, 100000, out, 100);
    CHECK(n == 100 && id_of(out[0]) == 0 && id_of(out[99]) == 99, "first chunk");
    for (int i = 100; i < N; i += 2)
        mc_wheel_cancel(w, &it[i].timer);
    mc_wheel_cancel(w, &it[N - 1].timer);
    mc_wheel_cancel(w, &it[5].timer); /* already popped: no-op */
    CHECK(mc_wheel_count(w) == (N - 100) / 2 - 1, "count %zu", mc_wheel_count(w));
    uint32_t expect = 101;
    size_t total = 0;
    do {
        n = mc_wheel_advance(w, 100000, out, 100);
        for (size_t i = 0; i < n; i++, expect += 2)
            REQUIRE(id_of(out[i]) == expect, "got %u want %u", id_of(out[i]), expect);
        total += n;
    } while (n == 100);
    CHECK(total == (N - 100) / 2 - 1 && mc_wheel_count(w) == 0, "total %zu", total);
    mc_wheel_free(w);
    free(it);
}

static void readd(void)
{
    mc_timing_wheel *w = mc_wheel_new(0);
    mc_timer *out[8];
    item *it = make_items(4);
    mc_wheel_add(w, &it[0].timer, 500);
    mc_wheel_add(w, &it[1].timer, 600);
    mc_wheel_add(w, &it[0].timer, 700); /* later */
    mc_wheel_add(w, &it[2].timer, 90000);
    mc_wheel_add(w, &it[2].timer, 550); /* earlier, from a coarse level */
    CHECK(mc_wheel_count(w) == 3, "re-add does not double count: %zu", mc_wheel_count(w));
    size_t n = mc_wheel_advance(w, 100000, out, 8);
    CHECK(n == 3 && id_of(out[0]) == 2 && id_of(out[1]) == 1 && id_of(out[2]) == 0, "n=%zu", n);

    /* A re-add to the same due counts as a new insertion for ties. */
    mc_wheel_add(w, &it[0].timer, 100100);
    mc_wheel_add(w, &it[1].timer, 100100);
    mc_wheel_add(w, &it[0].timer, 100100);
    n = mc_wheel_advance(w, 100100, out, 8);
    CHECK(n == 2 && id_of(out[0]) == 1 && id_of(out[1]) == 0, "n=%zu", n);

    /* A popped timer can go straight back in. */
    mc_wheel_add(w, out[0], 100101);
    CHECK(mc_wheel_advance(w, 100101, out, 8) == 1 && id_of(out[0]) == 1, "re-added after pop");
    mc_wheel_free(w);
    free(it);
}

/* Dues on every level boundary (relative and absolute), into the overflow
 * list and up to INT64_MAX: each fires at exactly its ms, not one earlier. */
static void boundaries_from(int64_t base)
{
    enum { MAXT = 512 };
    int64_t dues[MAXT];
    size_t nd = 0;
    for (int k = 0; k <= 9; k++) {
        int64_t p = (int64_t)1 << (6 * k);
        for (int64_t d = -1; d <= 1; d++) {
            dues[nd++] = sat_add(base, sat_add(p, d)); /* relative */
            uint64_t aligned = (((uint64_t)base >> (6 * k)) + 1) << (6 * k);
            if (base >= 0 && aligned <= (uint64_t)INT64_MAX)
                dues[nd++] = sat_add((int64_t)aligned, d); /* absolute: the next boundary */
        }
    }
    dues[nd++] = base;
    dues[nd++] = sat_add(base, SPAN - 1);
    dues[nd++] = sat_add(base, SPAN);
    dues[nd++] = sat_add(base, 3 * SPAN + 12345);
    dues[nd++] = sat_add(base, (int64_t)1 << 55);
    dues[nd++] = INT64_MAX - 1;
    dues[nd++] = INT64_MAX;
    dues[nd++] = INT64_MAX;

    mc_timing_wheel *w = mc_wheel_new(base);
    item *it = make_items(nd);
    for (size_t i = 0; i < nd; i++)
        if (dues[i] >= base)
            mc_wheel_add(w, &it[i].timer, dues[i]);
    /* Distinct dues in order; at each, nothing before and exactly its timers. */
    int64_t prev = base;
    bool first = true;
    mc_timer *out[MAXT];
    for (;;) {
        int64_t next = INT64_MAX;
        bool any = false;
        for (size_t i = 0; i < nd; i++)
            if (dues[i] >= base && (first || dues[i] > prev) && dues[i] <= next) {
                next = dues[i];
                any = true;
            }
        if (!any)
            break;
        int64_t dl = mc_wheel_next_deadline(w);
        CHECK(dl <= next, "base %lld: deadline %lld after due %lld", (long long)base, (long long)dl,
              (long long)next);
        if (next > base) {
            size_t early = mc_wheel_advance(w, next - 1, out, MAXT);
            CHECK(early == 0, "base %lld: %zu fired before %lld", (long long)base, early,
                  (long long)next);
        }
        size_t want = 0;
        for (size_t i = 0; i < nd; i++)
            want += dues[i] == next;
        size_t n = mc_wheel_advance(w, next, out, MAXT);
        CHECK(n == want, "base %lld due %lld: popped %zu want %zu", (long long)base,
              (long long)next, n, want);
        for (size_t i = 0; i < n; i++)
            CHECK(out[i]->due_ms == next, "wrong timer");
        prev = next;
        first = false;
        if (next == INT64_MAX)
            break;
    }
    CHECK(mc_wheel_count(w) == 0, "base %lld: %zu left", (long long)base, mc_wheel_count(w));
    mc_wheel_free(w);
    free(it);
}

static void boundaries(void)
{
    const int64_t bases[] = {0,
                             1,
                             63,
                             12345,
                             1700000000123LL,
                             SPAN - 3,
                             -1,
                             -70000,
                             INT64_MIN,
                             3 * SPAN + 64 * 64 - 1,
                             INT64_MAX - SPAN - 100};
    for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++)
        boundaries_from(bases[i]);
}

static int64_t random_due(int64_t now)
{
    switch (rnd_below(10)) {
    case 0:
        return sat_add(now, -(int64_t)rnd_below(2000)); /* past */
    case 1:
    case 2:
        return sat_add(now, (int64_t)rnd_below(64));
    case 3:
        return sat_add(now, (int64_t)rnd_below(5000));
    case 4:
        return sat_add(now, (int64_t)rnd_below(4000000)); /* ~1 h */
    case 5:
        return sat_add(now, (int64_t)rnd_below((uint64_t)400 * DAY_MS));
    case 6:
        return sat_add(now, (int64_t)rnd_below((uint64_t)1 << 44)); /* some overflow */
    default:
        return sat_add(now, 1000 * (int64_t)rnd_below(8)); /* many equal dues */
    }
}

static int cmp_ref(const void *a, const void *b)
{
    const ref_ent *x = a, *y = b;
    if (x->eff != y->eff)
        return x->eff < y->eff ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Thousands of random dues (many equal) vs a sorted copy. */
static void ordering(void)
{
    enum { N = 30000 };
    rng_state = 0x9E3779B97F4A7C15u;
    const int64_t start = 1700000000000LL;
    mc_timing_wheel *w = mc_wheel_new(start);
    item *it = make_items(N);
    ref_ent *want = calloc(N, sizeof *want);
    uint32_t *got = calloc(N, sizeof *got);
    for (uint32_t i = 0; i < N; i++) {
        int64_t due = random_due(start);
        mc_wheel_add(w, &it[i].timer, due);
        want[i] = (ref_ent){due, i, i};
    }
    qsort(want, N, sizeof *want, cmp_ref);
    size_t n = 0;
    int64_t now = start;
    while (n < N && now < INT64_MAX) {
        switch (rnd_below(4)) {
        case 0:
            now += (int64_t)rnd_below(50);
            break;
        case 1:
            now += (int64_t)rnd_below(DAY_MS);
            break;
        case 2:
            now = sat_add(now, (int64_t)rnd_below((uint64_t)1 << 42));
            break;
        default:
            now += 1;
        }
        n = drain(w, now, 1 + rnd_below(1024), got, n);
    }
    CHECK(n == N, "popped %zu of %d", n, N);
    for (size_t i = 0; i < n && i < N; i++)
        REQUIRE(got[i] == want[i].id, "position %zu: got id %u (due %lld) want %u (due %lld)", i,
                got[i], (long long)it[got[i]].timer.due_ms, want[i].id, (long long)want[i].eff);
    mc_wheel_free(w);
    free(it);
    free(want);
    free(got);
}

/* 1M timers due in the same ms, filed at a coarse level (a day ahead), must
 * drain in chunks of 1000 with every call returning a full chunk. */
static void burst(void)
{
    enum { N = 1000000, CHUNK = 1000 };
    const int64_t start = 1700000000000LL, due = start + DAY_MS;
    mc_timing_wheel *w = mc_wheel_new(start);
    item *it = make_items(N);
    for (int i = 0; i < N; i++)
        mc_wheel_add(w, &it[i].timer, due);
    CHECK(mc_wheel_count(w) == N, "count %zu", mc_wheel_count(w));
    CHECK(mc_wheel_next_deadline(w) == due, "deadline %lld", (long long)mc_wheel_next_deadline(w));
    mc_timer *out[CHUNK];
    CHECK(mc_wheel_advance(w, due - 1, out, CHUNK) == 0, "early");
    double total = 0, worst = 0;
    size_t popped = 0, calls = 0;
    uint32_t expect = 0;
    for (;;) {
        double t0 = (double)mc_mono_ns();
        size_t n = mc_wheel_advance(w, due, out, CHUNK);
        double dt = (double)mc_mono_ns() - t0;
        total += dt;
        if (dt > worst)
            worst = dt;
        calls++;
        for (size_t i = 0; i < n; i++, expect++)
            REQUIRE(id_of(out[i]) == expect, "got %u want %u", id_of(out[i]), expect);
        popped += n;
        if (n < CHUNK)
            break;
        REQUIRE(mc_wheel_count(w) == N - popped, "count %zu", mc_wheel_count(w));
    }
    CHECK(popped == N && calls == N / CHUNK + 1, "popped %zu in %zu calls", popped, calls);
    printf("burst: 1M same-ms timers drained in %zu calls of %d: total %.1f ms, "
           "%.0f ns/call avg, worst call %.0f ns\n",
           calls, CHUNK, total / 1e6, total / (double)calls, worst);
    mc_wheel_free(w);
    free(it);
}

/* The same timers fire in the same order however time is advanced. */
static void jumps_vs_steps(void)
{
    enum { N = 5000 };
    rng_state = 12345;
    const int64_t start = 1700000000000LL, steps_end = start + ((int64_t)1 << 22);
    mc_timing_wheel *ws[3];
    item *its[3];
    uint32_t *seqs[3];
    for (int k = 0; k < 3; k++) {
        ws[k] = mc_wheel_new(start);
        its[k] = make_items(N);
        seqs[k] = calloc(N, sizeof *seqs[k]);
    }
    for (uint32_t i = 0; i < N; i++) {
        int64_t due;
        if (i % 10 == 0)
            due = start + (int64_t)rnd_below(DAY_MS);
        else if (i % 3 == 0)
            due = start + 64 * 64 * (int64_t)rnd_below(1024); /* level boundaries */
        else
            due = start + (int64_t)rnd_below((uint64_t)(steps_end - start));
        for (int k = 0; k < 3; k++)
            mc_wheel_add(ws[k], &its[k][i].timer, due);
    }
    size_t n0 = 0, n1, n2 = 0;
    for (int64_t t = start; t <= steps_end; t++)
        n0 = drain(ws[0], t, 1024, seqs[0], n0);
    n0 = drain(ws[0], start + DAY_MS, 1024, seqs[0], n0);
    n1 = drain(ws[1], start + DAY_MS, 7, seqs[1], 0);
    for (int64_t t = start; t < start + DAY_MS;)
        n2 = drain(ws[2], t += (int64_t)rnd_below(3 * 3600 * 1000), 1024, seqs[2], n2);
    n2 = drain(ws[2], start + DAY_MS, 1024, seqs[2], n2);
    CHECK(n0 == N && n1 == N && n2 == N, "%zu %zu %zu", n0, n1, n2);
    CHECK(memcmp(seqs[0], seqs[1], sizeof(uint32_t) * N) == 0, "1 ms steps vs one jump differ");
    CHECK(memcmp(seqs[0], seqs[2], sizeof(uint32_t) * N) == 0, "1 ms steps vs random jumps");
    for (size_t i = 1; i < N; i++) {
        const mc_timer *a = &its[0][seqs[0][i - 1]].timer, *b = &its[0][seqs[0][i]].timer;
        REQUIRE(a->due_ms < b->due_ms || (a->due_ms == b->due_ms && seqs[0][i - 1] < seqs[0][i]),
                "order at %zu", i);
    }
    for (int k = 0; k < 3; k++) {
        mc_wheel_free(ws[k]);
        free(its[k]);
        free(seqs[k]);
    }
}

/* ~100k random operations against the model: pops, count and deadline. */
/* spread_ms > 0: most adds are due within that much of now, so thousands of
 * timers accumulate in the coarse levels and cascades mix many dues. */
static void differential_from(int64_t start, uint64_t seed, int ops, int64_t spread_ms)
{
    enum { IDS = 4096, MAXPOP = 4096 };
    rng_state = seed;
    mc_timing_wheel *w = mc_wheel_new(start);
    item *it = make_items(IDS);
    ref_model r;
    ref_init(&r, IDS, start);
    mc_timer *out[MAXPOP];
    uint32_t want[MAXPOP];
    int64_t last_due = start;
    for (int op = 0; op < ops; op++) {
        uint32_t id = (uint32_t)rnd_below(IDS);
        uint64_t kind = rnd_below(100);
        if (kind < 50) {
            int64_t due;
            switch (spread_ms > 0 && rnd_below(10) < 7 ? 8 : rnd_below(8)) {
            case 8:
                due = sat_add(r.now, (int64_t)rnd_below((uint64_t)spread_ms));
                break;
            case 0:
                due = last_due; /* ties */
                break;
            case 1:
                due = sat_add(r.cur, (int64_t)rnd_below(3) - 1);
                break;
            case 2:
                due = sat_add(r.now, (int64_t)((uint64_t)1 << 42) + (int64_t)rnd_below(100000));
                break;
            case 3:
                due = rnd_below(50) ? sat_add(r.now, (int64_t)rnd_below(1000)) : INT64_MAX;
                break;
            default:
                due = random_due(r.now);
                if (due < r.cur && rnd_below(2))
                    due = r.cur;
            }
            last_due = due;
            mc_wheel_add(w, &it[id].timer, due);
            ref_add(&r, id, due);
        } else if (kind < 62) {
            mc_wheel_cancel(w, &it[id].timer);
            ref_cancel(&r, id);
        } else {
            /* Mostly small steps, so thousands of timers build up across
             * all levels; now and then a jump that cascades many at once. */
            int64_t now;
            uint64_t step = rnd_below(1000);
            if (step < 100)
                now = r.now;
            else if (step < 150)
                now = sat_add(r.now, -5); /* backwards: nothing popped early */
            else if (step < 800)
                now = sat_add(r.now, (int64_t)rnd_below(100));
            else if (step < 990)
                now = sat_add(r.now, (int64_t)rnd_below(10000));
            else if (spread_ms > 0) /* no jump that would empty the wheel */
                now = sat_add(r.now, (int64_t)rnd_below((uint64_t)spread_ms / 8));
            else if (step < 997)
                now = sat_add(r.now, (int64_t)rnd_below(DAY_MS));
            else if (step < 999)
                now = sat_add(r.now, (int64_t)rnd_below((uint64_t)1 << 43));
            else
                now = sat_add(r.now, (int64_t)1 << 44);
            static const size_t maxes[] = {0, 1, 2, 3, 64, 1000, MAXPOP};
            size_t max = maxes[rnd_below(sizeof maxes / sizeof maxes[0])];
            bool full = rnd_below(3) != 0;
            size_t n, k;
            do {
                n = mc_wheel_advance(w, now, out, max);
                k = ref_advance(&r, now, want, max);
                REQUIRE(n == k, "op %d: advance(%lld, %zu) popped %zu, model %zu", op,
                        (long long)now, max, n, k);
                for (size_t i = 0; i < n; i++) {
                    REQUIRE(id_of(out[i]) == want[i],
                            "op %d: pop %zu got id %u (due %lld) want %u (due %lld)", op, i,
                            id_of(out[i]), (long long)out[i]->due_ms, want[i],
                            (long long)it[want[i]].timer.due_ms);
                    REQUIRE(!mc_wheel_scheduled(out[i]), "popped but scheduled");
                }
            } while (full && max > 0 && n == max);
        }
        REQUIRE(mc_wheel_count(w) == r.n, "op %d: count %zu model %zu", op, mc_wheel_count(w), r.n);
        int64_t dl = mc_wheel_next_deadline(w);
        if (r.n == 0) {
            REQUIRE(dl == INT64_MAX, "op %d: empty but deadline %lld", op, (long long)dl);
        } else {
            int64_t first = r.a[r.n - 1].eff;
            REQUIRE(dl <= first && (dl >= r.cur || dl == first),
                    "op %d: deadline %lld, first due %lld, cur %lld", op, (long long)dl,
                    (long long)first, (long long)r.cur);
            uint64_t x = ((uint64_t)first ^ (uint64_t)r.cur);
            if (first < r.cur || x < 64) /* overdue, or level 0: exact */
                REQUIRE(dl == first, "op %d: level-0 deadline %lld, first %lld", op, (long long)dl,
                        (long long)first);
        }
    }
    ref_free(&r);
    mc_wheel_free(w);
    free(it);
}

static void differential(void)
{
    differential_from(1700000000000LL, 1, 100000, 0);
    differential_from(1700000000000LL, 5, 100000, 3600 * 1000);
    differential_from(SPAN - 20000, 2, 30000, 0);         /* crossing a 2^42 boundary */
    differential_from(-30000, 3, 30000, 0);               /* negative times */
    differential_from(INT64_MAX - SPAN / 2, 4, 30000, 0); /* the top of the range */
}

int main(void)
{
    basics();
    past_due();
    clock_steps_back();
    cancel();
    cancel_during_burst();
    readd();
    boundaries();
    ordering();
    jumps_vs_steps();
    differential();
    burst();
    printf("sizeof(mc_timer) = %zu\n", sizeof(mc_timer));
    return check_exit("test_timing_wheel");
}
