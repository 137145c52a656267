/* The commit-metadata checkpoints (checkpoint.c) and the executor's window
 * (window.c): round trips at Kafka's size limit, the earlier x1 format,
 * malformed metadata refused, and a long random run of reads, finishes,
 * commits and restarts against a plain model, in which every checkpoint
 * fits, says exactly which records are unfinished, and a restart from it
 * takes again exactly those. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "checkpoint.h"
#include "window.h"

static uint64_t rng_state = 7;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * UINT64_C(2685821657736338717);
}

static void wheel_format(void)
{
    char buf[128];
    mc_wheel_checkpoint c = {.position = 42,
                             .has_frontier = true,
                             .frontier_due = 1800000000123,
                             .frontier_offset = 7},
                        d;
    mc_wheel_checkpoint_format(&c, buf, sizeof buf);
    CHECK(strcmp(buf, "v1 o=42 f=1800000000123 g=7") == 0, "%s", buf);
    CHECK(mc_wheel_checkpoint_parse(buf, strlen(buf), &d) && d.position == 42 && d.has_frontier &&
          d.frontier_due == 1800000000123 && d.frontier_offset == 7);
    c = (mc_wheel_checkpoint){.position = 9};
    mc_wheel_checkpoint_format(&c, buf, sizeof buf);
    CHECK(mc_wheel_checkpoint_parse(buf, strlen(buf), &d) && d.position == 9 && !d.has_frontier);
    c = (mc_wheel_checkpoint){.position = INT64_MAX,
                              .has_frontier = true,
                              .frontier_due = INT64_MIN,
                              .frontier_offset = INT64_MAX};
    mc_wheel_checkpoint_format(&c, buf, sizeof buf);
    CHECK(mc_wheel_checkpoint_parse(buf, strlen(buf), &d) && d.frontier_due == INT64_MIN, "%s",
          buf);
    static const char *bad[] = {
        "",        "v1",          "v1 o=",       "v1 o=x",
        "v1 o=-1", "v1 o=1 f=2",  "v1 o=1 f=2 ", "v1 o=1 f=2 g=",
        "v2 o=1",  "v1 o=1 junk", "x1 e=1",      "v1 o=99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(!mc_wheel_checkpoint_parse(bad[i], strlen(bad[i]), &d), "accepted '%s'", bad[i]);
    /* Parses exactly len bytes: a longer buffer's tail is not read. */
    CHECK(mc_wheel_checkpoint_parse("v1 o=12garbage", 7, &d) && d.position == 12);
    /* After a growth: the layout, its marker, and whether its calls finished. */
    c = (mc_wheel_checkpoint){.position = 500,
                              .has_frontier = true,
                              .frontier_due = 5,
                              .frontier_offset = 6,
                              .layout = 24,
                              .layout_at = 480,
                              .layout_done = true};
    mc_wheel_checkpoint_format(&c, buf, sizeof buf);
    CHECK(strcmp(buf, "v1 o=500 f=5 g=6 l=24 x=480 d=1") == 0, "%s", buf);
    CHECK(mc_wheel_checkpoint_parse(buf, strlen(buf), &d) && d.layout == 24 && d.layout_at == 480 &&
          d.layout_done && d.frontier_offset == 6);
    c.layout_done = c.has_frontier = false;
    mc_wheel_checkpoint_format(&c, buf, sizeof buf);
    CHECK(mc_wheel_checkpoint_parse(buf, strlen(buf), &d) && d.layout == 24 && !d.layout_done &&
              !d.has_frontier,
          "%s", buf);
    static const char *bad_layouts[] = {"v1 o=1 l=2",     "v1 o=1 x=2",         "v1 o=1 d=1",
                                        "v1 o=1 l=0 x=2", "v1 o=1 l=2 x=3 d=2", "v1 o=1 l=2 x=-3"};
    for (size_t i = 0; i < sizeof bad_layouts / sizeof bad_layouts[0]; i++)
        CHECK(!mc_wheel_checkpoint_parse(bad_layouts[i], strlen(bad_layouts[i]), &d),
              "accepted '%s'", bad_layouts[i]);
    mc_store_checkpoint sc = {24, 480}, sd;
    mc_store_checkpoint_format(&sc, buf, sizeof buf);
    CHECK(strcmp(buf, "s1 l=24 x=480") == 0 && mc_store_checkpoint_parse(buf, strlen(buf), &sd) &&
          sd.layout == 24 && sd.layout_at == 480);
    sc = (mc_store_checkpoint){0, 0};
    mc_store_checkpoint_format(&sc, buf, sizeof buf);
    CHECK(mc_store_checkpoint_parse(buf, strlen(buf), &sd) && sd.layout == 0);
    CHECK(!mc_store_checkpoint_parse("s1 l=3", 6, &sd) && !mc_store_checkpoint_parse("s2", 2, &sd));
}

static void exec_round_trip(int64_t committed, const int64_t *u, size_t n, int64_t end)
{
    char buf[MC_CHECKPOINT_MAX + 1];
    mc_exec_checkpoint_writer wr;
    mc_exec_checkpoint_begin(&wr, buf, sizeof buf, committed, end);
    for (size_t i = 0; i < n; i++)
        mc_exec_checkpoint_add(&wr, u[i]);
    int len = mc_exec_checkpoint_end(&wr);
    CHECK(len > 0 && len <= MC_CHECKPOINT_MAX, "length %d", len);
    int64_t e, *got;
    size_t m;
    CHECK(mc_exec_checkpoint_parse(buf, (size_t)len, committed, &e, &got, &m), "%s", buf);
    CHECK(e == end && m == n, "e %" PRId64 " n %zu", e, m);
    for (size_t i = 0; i < n && i < m; i++)
        CHECK(got[i] == u[i], "entry %zu", i);
    free(got);
}

static void exec_format(void)
{
    int64_t u[8000];
    exec_round_trip(100, NULL, 0, 100);
    exec_round_trip(100, (int64_t[]){100}, 1, 101);
    exec_round_trip(0, (int64_t[]){5, 37, 1100, 4000000000}, 4, INT64_MAX);
    /* A burst held until due: one character per record. */
    size_t n = 0;
    for (int64_t o = 1000; n < MC_EXEC_CHECKPOINT_LIST_MAX; o++)
        u[n++] = o;
    exec_round_trip(1000, u, n, u[n - 1] + 1);
    /* Far-apart offsets: the list is full at fewer entries. */
    n = 0;
    size_t chars = 0;
    for (int64_t o = 5; chars + 3 <= MC_EXEC_CHECKPOINT_LIST_MAX; o += 20000, n++) {
        u[n] = o;
        chars += mc_checkpoint_delta_len(n ? 20000 : 0);
    }
    exec_round_trip(5, u, n, INT64_C(999999999999999999));
    /* More than fits is refused by the writer, never cut. */
    n = 0;
    for (int64_t o = 0; n < MC_CHECKPOINT_MAX; o++)
        u[n++] = o;
    char buf[MC_CHECKPOINT_MAX + 1];
    mc_exec_checkpoint_writer wr;
    mc_exec_checkpoint_begin(&wr, buf, sizeof buf, 0, INT64_C(1000000000000000000));
    for (size_t i = 0; i < n; i++)
        mc_exec_checkpoint_add(&wr, u[i]);
    CHECK(mc_exec_checkpoint_end(&wr) < 0, "an overlong list is refused");

    /* x1, as written before x2. */
    int64_t e, *got;
    size_t m;
    CHECK(mc_exec_checkpoint_parse("x1 e=20 u=0,3,1", 15, 10, &e, &got, &m) && e == 20 && m == 3 &&
          got[0] == 10 && got[1] == 13 && got[2] == 14);
    free(got);
    CHECK(mc_exec_checkpoint_parse("x1 e=20", 7, 20, &e, &got, &m) && e == 20 && m == 0);
    free(got);
    static const char *bad[] = {"x1 e=5",       "x1 e=20 u=",   "x1 e=20 u=0,", "x1 e=20 u=0,0",
                                "x1 e=20 u=11", "x2 e=20 u=A",  "x2 e=20 u=0!", "x2 e=20 u=00",
                                "x3 e=20",      "x2 e=20 u=0 ", "x2 e=20 u=Zv", "x1 e=20 u=-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(!mc_exec_checkpoint_parse(bad[i], strlen(bad[i]), 10, &e, &got, &m), "accepted '%s'",
              bad[i]);
    }
}

/* ---- the window against a model ----------------------------------------------------- */

enum { MAXREC = 200000 };

/* Per offset: 0 not read yet (new), 'u' unfinished (read, or listed by the
 * checkpoint restarted from and not read again yet), 'f' finished. */
typedef struct model {
    char state[MAXREC];
    uint64_t seq[MAXREC]; /* the window's name for a read unfinished record */
    bool read[MAXREC];
    int64_t read_to; /* next offset to read */
    int64_t hi;      /* one past the highest offset ever set */
} model;

static model M;

/* The checkpoint list's exact length for the model's unfinished records. */
static size_t model_list_length(int64_t committed)
{
    int64_t prev = committed;
    size_t n = 0;
    for (int64_t o = committed; o < M.hi; o++) {
        if (M.state[o] == 'u') {
            n += mc_checkpoint_delta_len((uint64_t)(o - prev));
            prev = o;
        }
    }
    return n;
}

static void set_state(int64_t o, char st)
{
    M.state[o] = st;
    if (o + 1 > M.hi)
        M.hi = o + 1;
}

/* Reads the next record: a call (unfinished) most of the time. Returns
 * false when the window refused it. */
static bool read_one(mc_window *w, size_t *refused)
{
    int64_t o = M.read_to;
    mc_window_past past = mc_window_classify(w, o);
    if (past == MC_WINDOW_FINISHED) {
        CHECK(M.state[o] == 'f', "offset %" PRId64 " skipped but %c", o, M.state[o]);
        mc_window_add(w, o, past, false);
        M.read_to++;
        return true;
    }
    CHECK(M.state[o] == (past == MC_WINDOW_UNFINISHED ? 'u' : 0), "offset %" PRId64 ": %d vs %c", o,
          (int)past, M.state[o] ? M.state[o] : '0');
    bool call = rnd() % 10 != 0;
    if (call && !mc_window_fits(w, o, past)) {
        char was = M.state[o];
        set_state(o, 'u');
        size_t with = model_list_length(mc_window_commit_offset(w));
        M.state[o] = was;
        CHECK(with > MC_EXEC_CHECKPOINT_LIST_MAX, "refused at %zu chars", with);
        (*refused)++;
        return false; /* read again later: classify moved nothing for a new one */
    }
    M.seq[o] = mc_window_add(w, o, past, call);
    set_state(o, call ? 'u' : 'f');
    M.read[o] = true;
    M.read_to++;
    return true;
}

/* Finishes a random read, unfinished record (calls end out of order). */
static void finish_one(mc_window *w)
{
    int64_t lo = mc_window_commit_offset(w);
    for (int tries = 0; tries < 30 && lo >= 0 && lo < M.read_to; tries++) {
        int64_t x = lo + (int64_t)(rnd() % (uint64_t)(M.read_to - lo));
        if (M.state[x] == 'u' && M.read[x]) {
            mc_window_finish(w, M.seq[x]);
            M.state[x] = 'f';
            return;
        }
    }
}

/* Commits: the checkpoint fits and lists exactly the unfinished records
 * from the commit offset on, and none is below it. */
static bool commit(mc_window *w, char *md, size_t mdlen, int64_t *committed, size_t *max_len)
{
    int64_t c = mc_window_commit_offset(w);
    int len = mc_window_checkpoint(w, md, mdlen);
    CHECK(len > 0 && len <= MC_CHECKPOINT_MAX, "checkpoint of %d bytes", len);
    if (len <= 0)
        return false;
    if ((size_t)len > *max_len)
        *max_len = (size_t)len;
    int64_t e, *u;
    size_t n;
    CHECK(mc_exec_checkpoint_parse(md, (size_t)len, c, &e, &u, &n), "%s", md);
    size_t k = 0;
    for (int64_t o = c; o < M.hi; o++) {
        bool listed = k < n && u[k] == o;
        k += listed;
        CHECK(listed == (M.state[o] == 'u'), "offset %" PRId64 ": listed %d, state %c", o, listed,
              M.state[o] ? M.state[o] : '0');
        CHECK(M.state[o] == 0 || o < e, "offset %" PRId64 " seen but past e", o);
    }
    for (int64_t o = 0; o < c; o++)
        CHECK(M.state[o] != 'u', "unfinished %" PRId64 " below the commit offset %" PRId64, o, c);
    free(u);
    *committed = c;
    return true;
}

/* A crash, and a restart from the last commit: what it listed is taken
 * again, the rest below its e is skipped, everything after is new (finished
 * calls whose outputs were not committed are unfinished again). */
static void restart(mc_window *w, const char *md, int64_t committed)
{
    int64_t e, *u;
    size_t n;
    CHECK(mc_exec_checkpoint_parse(md, strlen(md), committed, &e, &u, &n));
    for (int64_t o = committed; o < M.hi; o++) {
        M.state[o] = 0;
        M.read[o] = false;
    }
    for (int64_t o = committed, k = 0; o < e; o++) {
        bool listed = (size_t)k < n && u[k] == o;
        k += listed;
        set_state(o, listed ? 'u' : 'f');
    }
    free(u);
    CHECK(mc_window_start(w, committed, md, strlen(md)));
    M.read_to = committed;
}

static void window_random(void)
{
    mc_window w = {0};
    CHECK(mc_window_start(&w, 0, NULL, 0));
    memset(&M, 0, sizeof M);
    int64_t committed = 0;
    char md[MC_CHECKPOINT_MAX + 1] = "";
    size_t refused = 0, restarts = 0, commits = 0, max_len = 0;
    for (int step = 0; step < 600000 && M.read_to < MAXREC - 10; step++) {
        /* Phases: calls finishing about as fast as they are read, and a slow
         * endpoint under which the unfinished pile up to the limit. */
        bool slow = (step / 20000) % 3 == 1;
        uint64_t r = rnd() % 1000;
        if (slow && r >= 550 && r < 950 && rnd() % 50 != 0)
            continue;
        if (r < 550) {
            if (!read_one(&w, &refused))
                for (int i = 0; i < 50; i++)
                    finish_one(&w);
        } else if (r < 950) {
            finish_one(&w);
        } else if (r < 998) {
            if (!commit(&w, md, sizeof md, &committed, &max_len))
                return;
            commits++;
        } else if (commits > 0 && (!slow || rnd() % 20 == 0)) {
            restart(&w, md, committed);
            restarts++;
        }
    }
    printf("window: %lld records read, %zu refused, %zu commits (longest %zu bytes), %zu "
           "restarts\n",
           (long long)M.read_to, refused, commits, max_len, restarts);
    CHECK(refused > 0 && restarts > 0 && max_len > MC_CHECKPOINT_MAX * 3 / 4,
          "the run must reach the limit and restart");
    mc_window_free(&w);
}

/* 3,000 calls held until due on one partition (the burst), all
 * read before any finishes: they fit; a restart takes all of them again. */
static void held_burst(void)
{
    mc_window w = {0};
    CHECK(mc_window_start(&w, 500, NULL, 0));
    for (int64_t o = 500; o < 3500; o++) {
        mc_window_past past = mc_window_classify(&w, o);
        CHECK(past == MC_WINDOW_NEW && mc_window_fits(&w, o, past), "offset %" PRId64, o);
        mc_window_add(&w, o, past, true);
    }
    char md[MC_CHECKPOINT_MAX + 1];
    int len = mc_window_checkpoint(&w, md, sizeof md);
    CHECK(len > 0 && len < 3100, "3000 held calls in %d bytes", len);
    mc_window w2 = {0};
    CHECK(mc_window_start(&w2, mc_window_commit_offset(&w), md, (size_t)len));
    size_t again = 0;
    for (int64_t o = 500; o < 3600; o++)
        again += mc_window_classify(&w2, o) == MC_WINDOW_UNFINISHED;
    CHECK(again == 3000, "%zu of 3000 taken again after a restart", again);
    mc_window_free(&w);
    mc_window_free(&w2);
}

int main(void)
{
    wheel_format();
    exec_format();
    held_burst();
    window_random();
    return check_exit("test_checkpoint");
}
