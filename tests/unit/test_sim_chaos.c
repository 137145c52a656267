/* Chaos without a broker: the processors driven through tests/sim with
 * random commands and kill -9 at random points, judged record by record,
 * plus the sequences such runs found, each as a test of its own.
 *
 * 1. wheel_store_chaos: store + wheel under random submits, re-submits and
 *    cancels (near and far), resolved-position markers, and kill -9 of
 *    either instance at random points (after process, after produce, after
 *    commit; transactions sometimes left open across turns). Judged from
 *    `ready`: no (key, version) fired twice, every key's last Submit fires,
 *    no older version fires after a newer one fired, a version superseded
 *    well before due - lead never fires, one superseded before due is
 *    recalled.
 * 2. pipeline_chaos: router, store, wheel, executor (the fake caller) and
 *    retry, with failing calls and far and near retries, the same kills:
 *    the client's last command is the one called, once, and nothing it
 *    superseded is called after it.
 * 3. The sequences: a hand-off skipped after a commit in the middle of a
 *    replay (lost); a next attempt judged again in a replay that starts
 *    after the cancel that made it stale (called); a recall the executor
 *    reads after the due time, behind its task, after a restart (called,
 *    with the real libcurl caller and a local endpoint). Each failed before
 *    its fix.
 * Usage: test_sim_chaos [SEEDS [CRASH_PERCENT]]; ONLY=det|recall|wheel|
 * pipeline runs one part; SEED=N runs one seed.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "executor.h"
#include "fake_caller.h"
#include "retry.h"
#include "router.h"
#include "simkit.h"
#include "store.h"
#include "wheel.h"

#define T0 INT64_C(1800000000000)

static uint64_t rng_state = 88172645463325252ULL;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * UINT64_C(2685821657736338717);
}
static int64_t rnd_in(int64_t lo, int64_t hi) /* [lo, hi] */
{
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}
static bool chance(int percent)
{
    return (int)(rnd() % 100) < percent;
}

/* ---- 1. wheel + store chaos ---------------------------------------------------- */

#define NKEYS 40
#define MAXCMD 4000

typedef struct cmd {
    int key;
    int64_t version;
    bool cancel, far;
    int64_t due, at;
} cmd;

typedef struct chaos {
    sim_kafka *k;
    mc_config *cfg;
    sim_inst *store, *wheel;
    int store_gen, wheel_gen;
    cmd cmds[MAXCMD];
    size_t n;
    int64_t next_version;
    int crashes;
    int64_t lead, horizon;
    int64_t offsets[MAXCMD], seen_at[MAXCMD];
} chaos;

static sim_inst *restart(chaos *c, sim_inst *old, const mc_processor *p, const char *id)
{
    if (old)
        sim_crash(old);
    c->crashes += old != NULL;
    sim_inst *in = sim_inst_new(c->k, p, c->cfg, id);
    CHECK(in && sim_assign_all(in) == 0);
    return in;
}

/* One turn of an instance with crash points between its steps. */
static sim_inst *turn(chaos *c, sim_inst *in, const mc_processor *p, const char *id, int crash_pct)
{
    CHECK(sim_run_fds(in) == 0);
    CHECK(sim_poll(in, (size_t)rnd_in(1, 60)) >= 0);
    if (chance(crash_pct))
        return restart(c, in, p, id); /* processed, nothing produced by punctuate */
    CHECK(sim_punctuate(in) >= 0);
    if (chance(crash_pct))
        return restart(c, in, p, id); /* produced, not committed */
    if (chance(80))
        CHECK(sim_commit(in) >= 0);
    if (chance(crash_pct / 2))
        return restart(c, in, p, id);
    return in;
}

static void add_cmd(chaos *c, int key, bool cancel, int64_t due)
{
    if (c->n == MAXCMD)
        return;
    int64_t now = sim_now(c->k);
    cmd *m = &c->cmds[c->n++];
    *m = (cmd){.key = key, .version = c->next_version++, .cancel = cancel, .due = due, .at = now};
    char id[16];
    snprintf(id, sizeof id, "k%d", key);
    if (cancel) {
        c->offsets[c->n - 1] = kit_wheel_cancel(c->k, 0, m->version, id, now);
    } else {
        m->far = due > now + c->horizon;
        mc_task t = kit_task(id, due, "http://e/x");
        c->offsets[c->n - 1] = kit_wheel_submit(c->k, 0, m->version, &t, m->far);
    }
}

/* A resolved-position marker at the wheel's committed position (valid
 * without an executor: nothing fired has a next attempt). */
static void add_resolved(chaos *c)
{
    const char *md;
    int64_t off = sim_committed(c->k, KIT_PREFIX "wheel", kit_topic("wheel"), 0, &md);
    long long o;
    if (off < 0 || sscanf(md, "v1 o=%lld", &o) != 1)
        return;
    char pos[24];
    int n = snprintf(pos, sizeof pos, "%lld", o);
    mc_header h = {MC_RESOLVED_POSITION_HEADER, pos, (size_t)n};
    sim_append(c->k, kit_topic("wheel"), 0, NULL, 0, NULL, 0, &h, 1);
}

/* When the wheel's committed offset first passed each command (an upper
 * bound on when it was processed). */
static void note_seen(chaos *c)
{
    const char *md;
    int64_t off = sim_committed(c->k, KIT_PREFIX "wheel", kit_topic("wheel"), 0, &md);
    long long o = -1;
    if (off >= 0)
        sscanf(md, "v1 o=%lld", &o);
    for (size_t i = 0; i < c->n; i++)
        if (!c->seen_at[i] && c->offsets[i] < o)
            c->seen_at[i] = sim_now(c->k);
}

/* The wheel's flags for a lead: 200 ms fires each task as it enters the
 * lead, 300 ms (the default) in batches up to 100 ms later (see wheel.c). */
static const char *const *lead_flags(int64_t lead)
{
    static const char *const lead200[] = {"--wheel-lead-ms=200", "--horizon-ms=3000", NULL};
    static const char *const lead300[] = {"--wheel-lead-ms=300", "--horizon-ms=3000", NULL};
    return lead == 300 ? lead300 : lead200;
}

static void wheel_store_chaos(uint64_t seed, int crash_pct, int64_t lead)
{
    rng_state = seed;
    chaos *c = calloc(1, sizeof *c);
    c->cfg = kit_config("all", lead_flags(lead));
    c->k = sim_kafka_new(1, T0);
    c->lead = lead;
    c->horizon = 3000;
    c->next_version = 100;
    c->store = restart(c, NULL, &mc_store_processor, "s1");
    c->wheel = restart(c, NULL, &mc_wheel_processor, "w1");
    int64_t max_due = T0;
    for (int step = 0; step < 1500; step++) {
        sim_advance(c->k, rnd_in(5, 40));
        int ncmd = (int)rnd_in(0, 3);
        for (int i = 0; i < ncmd; i++) {
            int key = (int)rnd_in(0, NKEYS - 1);
            bool cancel = chance(25);
            int64_t due = sim_now(c->k) + rnd_in(-300, 8000);
            if (due > max_due)
                max_due = due;
            add_cmd(c, key, cancel, due);
        }
        if (chance(5))
            add_resolved(c);
        note_seen(c);
        if (chance(50)) {
            c->store = turn(c, c->store, &mc_store_processor, "s1", crash_pct);
            c->wheel = turn(c, c->wheel, &mc_wheel_processor, "w1", crash_pct);
        } else {
            c->wheel = turn(c, c->wheel, &mc_wheel_processor, "w1", crash_pct);
            c->store = turn(c, c->store, &mc_store_processor, "s1", crash_pct);
        }
    }
    /* Then quiet until everything is due and settled. */
    while (sim_now(c->k) < max_due + 10000) {
        sim_advance(c->k, 20);
        if (chance(3))
            add_resolved(c);
        CHECK(sim_settle(c->store, 50) == 0);
        CHECK(sim_settle(c->wheel, 50) == 0);
    }

    kit_entry *e;
    size_t n = kit_entries(c->k, "ready", 0, &e);
    /* fired[version] count, and order checks per key. */
    int64_t vmax = c->next_version;
    int *fired = calloc((size_t)vmax, sizeof *fired);
    int64_t *fired_pos = calloc((size_t)vmax, sizeof *fired_pos);
    bool *recalled_after = calloc((size_t)vmax, sizeof *recalled_after);
    int64_t newest_fired[NKEYS];
    for (int i = 0; i < NKEYS; i++)
        newest_fired[i] = -1;
    size_t dup = 0, older_after_newer = 0;
    for (size_t i = 0; i < n; i++) {
        if (e[i].marker)
            continue;
        int key = atoi(e[i].id + 1);
        if (e[i].cancel) {
            /* a recall: versions below e.version are void */
            for (size_t j = 0; j < c->n; j++)
                if (c->cmds[j].key == key && !c->cmds[j].cancel &&
                    c->cmds[j].version < e[i].version && fired[c->cmds[j].version])
                    recalled_after[c->cmds[j].version] = true;
            continue;
        }
        if (e[i].version < 0 || e[i].version >= vmax)
            continue;
        if (fired[e[i].version]++)
            dup++;
        fired_pos[e[i].version] = (int64_t)i;
        if (e[i].version < newest_fired[key]) {
            older_after_newer++;
            fprintf(stderr, "  k%d: version %lld fired after %lld\n", key, (long long)e[i].version,
                    (long long)newest_fired[key]);
        }
        if (e[i].version > newest_fired[key])
            newest_fired[key] = e[i].version;
    }
    size_t lost = 0, superseded_fired = 0, not_recalled = 0;
    for (int key = 0; key < NKEYS; key++) {
        const cmd *last = NULL;
        for (size_t j = 0; j < c->n; j++)
            if (c->cmds[j].key == key)
                last = &c->cmds[j];
        if (last && !last->cancel && !fired[last->version]) {
            lost++;
            fprintf(stderr, "  k%d: last submit v%lld (due +%lld, far %d) never fired\n", key,
                    (long long)last->version, (long long)(last->due - T0), last->far);
        }
    }
    /* Judged by when the wheel had committed past the newer command (an
     * upper bound on when it processed it). */
    for (size_t j = 0; j < c->n; j++) {
        const cmd *s = &c->cmds[j];
        if (s->cancel || !fired[s->version])
            continue;
        const cmd *newer = NULL;
        for (size_t q = j + 1; q < c->n && !newer; q++)
            if (c->cmds[q].key == s->key)
                newer = &c->cmds[q];
        if (!newer)
            continue;
        int64_t seen = c->seen_at[newer - c->cmds];
        if (!seen)
            continue;
        if (seen < s->due - c->lead && newer->at > s->at) {
            superseded_fired++;
            fprintf(stderr,
                    "  k%d: v%lld (due +%lld far %d) fired though v%lld (%s far %d) came at +%lld, "
                    "read by +%lld\n",
                    s->key, (long long)s->version, (long long)(s->due - T0), s->far,
                    (long long)newer->version, newer->cancel ? "cancel" : "submit", newer->far,
                    (long long)(newer->at - T0), (long long)(seen - T0));
        } else if (seen < s->due && !recalled_after[s->version]) {
            not_recalled++;
            fprintf(stderr,
                    "  k%d: v%lld (due +%lld far %d) fired, v%lld (%s far %d) came at +%lld, read "
                    "by +%lld, no recall\n",
                    s->key, (long long)s->version, (long long)(s->due - T0), s->far,
                    (long long)newer->version, newer->cancel ? "cancel" : "submit", newer->far,
                    (long long)(newer->at - T0), (long long)(seen - T0));
        }
    }
    printf("wheel_store_chaos seed %llu: %zu commands, %d crashes, %zu ready records\n",
           (unsigned long long)seed, c->n, c->crashes, n);
    CHECK(dup == 0 && lost == 0 && older_after_newer == 0 && superseded_fired == 0 &&
              not_recalled == 0,
          "seed %llu: %zu fired twice, %zu lost, %zu older after newer, %zu superseded fired, %zu "
          "not recalled",
          (unsigned long long)seed, dup, lost, older_after_newer, superseded_fired, not_recalled);
    free(fired);
    free(fired_pos);
    free(recalled_after);
    free(e);
    sim_crash(c->store);
    sim_crash(c->wheel);
    sim_kafka_free(c->k);
    kit_config_free(c->cfg);
    free(c);
}

/* ---- 2. the whole pipeline under chaos ------------------------------------------ */

#define PKEYS 30
#define PMAXCMD 3000
#define PMAXCALL 20000

typedef struct pcmd {
    int key;
    int64_t version; /* its tasks offset */
    bool cancel;
    int64_t due, at;
    int64_t wheel_offset; /* the router's record of it in `wheel`; -1 until seen */
    int64_t seen_at;      /* when the wheel had committed past it; 0: not yet */
} pcmd;

typedef struct pcall {
    int key;
    mc_version version;
    int64_t due, at;
} pcall;

typedef struct pchaos {
    sim_kafka *k;
    mc_config *cfg;
    fake_env env;
    mc_executor_caller caller;
    mc_processor executor;
    const mc_processor *procs[5];
    sim_inst *in[5]; /* router, store, wheel, executor, retry */
    pcmd cmds[PMAXCMD];
    size_t n;
    pcall calls[PMAXCALL];
    size_t n_calls;
    int64_t exec_crash_at[4096];
    size_t n_exec_crash;
    int crashes;
    int64_t lead;
} pchaos;

static const char *const pnames[5] = {"router", "store", "wheel", "executor", "retry"};

static void prestart(pchaos *c, int i)
{
    if (c->in[i]) {
        sim_crash(c->in[i]);
        c->crashes++;
        if (i == 3 && c->n_exec_crash < 4096)
            c->exec_crash_at[c->n_exec_crash++] = sim_now(c->k);
    }
    char id[16];
    snprintf(id, sizeof id, "%s-1", pnames[i]);
    c->in[i] = sim_inst_new(c->k, c->procs[i], c->cfg, id);
    CHECK(c->in[i] && sim_assign_all(c->in[i]) == 0);
}

static void pturn(pchaos *c, int i, int crash_pct)
{
    sim_inst *in = c->in[i];
    CHECK(sim_run_fds(in) == 0);
    CHECK(sim_poll(in, (size_t)rnd_in(1, 80)) >= 0);
    if (chance(crash_pct)) {
        prestart(c, i);
        return;
    }
    CHECK(sim_punctuate(in) >= 0);
    CHECK(sim_run_fds(in) == 0);
    if (chance(crash_pct)) {
        prestart(c, i);
        return;
    }
    if (chance(85))
        CHECK(sim_commit(in) >= 0);
    if (chance(crash_pct / 2))
        prestart(c, i);
}

typedef struct presp {
    pchaos *c;
    int fail_pct, hang_pct;
} presp;

static long prespond(mc_call *j, void *arg)
{
    presp *r = arg;
    pchaos *c = r->c;
    if (chance(r->hang_pct))
        return -1; /* still in flight */
    if (c->n_calls < PMAXCALL)
        c->calls[c->n_calls++] =
            (pcall){atoi(strchr(j->key, '/') + 2), j->version, j->task.due_at, sim_now(c->k)};
    return chance(r->fail_pct) ? 500 : 200;
}

static void pnote_seen(pchaos *c)
{
    const char *md;
    int64_t off = sim_committed(c->k, KIT_PREFIX "wheel", kit_topic("wheel"), 0, &md);
    long long o = -1;
    if (off < 0 || sscanf(md, "v1 o=%lld", &o) != 1)
        return;
    bool need = false;
    for (size_t i = 0; i < c->n; i++)
        need |= c->cmds[i].wheel_offset < 0;
    if (need) {
        kit_entry *e;
        size_t n = kit_entries(c->k, "wheel", 0, &e);
        for (size_t i = 0; i < c->n; i++) {
            pcmd *m = &c->cmds[i];
            for (size_t q = 0; q < n && m->wheel_offset < 0; q++)
                if (!e[q].marker && e[q].version == m->version && atoi(e[q].id + 1) == m->key)
                    m->wheel_offset = e[q].offset;
        }
        free(e);
    }
    for (size_t i = 0; i < c->n; i++)
        if (!c->cmds[i].seen_at && c->cmds[i].wheel_offset >= 0 && c->cmds[i].wheel_offset < o)
            c->cmds[i].seen_at = sim_now(c->k);
}

/* Everything about one key, for a violation's report. */
static void pdump(pchaos *c, int key)
{
    fprintf(stderr, "  --- k%d ---\n", key);
    for (size_t j = 0; j < c->n; j++) {
        const pcmd *m = &c->cmds[j];
        if (m->key == key)
            fprintf(stderr, "  cmd v%lld %s due +%lld at +%lld wheel@%lld seen +%lld\n",
                    (long long)m->version, m->cancel ? "cancel" : "submit",
                    (long long)(m->due - T0), (long long)(m->at - T0), (long long)m->wheel_offset,
                    (long long)(m->seen_at ? m->seen_at - T0 : -1));
    }
    const char *tops[2] = {"wheel", "ready"};
    for (int t = 0; t < 2; t++) {
        sim_rec *r;
        size_t n = sim_read(c->k, kit_topic(tops[t]), 0, &r);
        kit_entry *e;
        kit_entries(c->k, tops[t], 0, &e);
        for (size_t i = 0; i < n; i++) {
            if (e[i].marker || atoi(e[i].id + 1) != key || e[i].id[0] != 'k')
                continue;
            const mc_header *far = sim_rec_header(&r[i], MC_ROUTE_HEADER);
            const mc_header *pos = sim_rec_header(&r[i], MC_STORE_POSITION_HEADER);
            const mc_header *att = sim_rec_header(&r[i], MC_ATTEMPT_HEADER);
            fprintf(stderr, "  %s@%lld %s v%lld/%d due +%lld%s%s%.*s%s%.*s\n", tops[t],
                    (long long)e[i].offset, e[i].cancel ? "CANCEL" : "submit",
                    (long long)e[i].version, e[i].attempt,
                    (long long)(e[i].cancel ? -1 : e[i].due - T0), far ? " far" : "",
                    pos ? " handoff-pos=" : "", pos ? (int)pos->len : 0,
                    pos ? (const char *)pos->value : "", att ? " attempt-hdr=" : "",
                    att ? (int)att->len : 0, att ? (const char *)att->value : "");
        }
        free(e);
        free(r);
    }
    for (size_t i = 0; i < c->n_calls; i++)
        if (c->calls[i].key == key)
            fprintf(stderr, "  call v%lld/%d due +%lld at +%lld\n",
                    (long long)c->calls[i].version.v, c->calls[i].version.attempt,
                    (long long)(c->calls[i].due - T0), (long long)(c->calls[i].at - T0));
}

static void pipeline_chaos(uint64_t seed, int crash_pct, bool far_retries, int64_t lead)
{
    rng_state = seed;
    pchaos *c = calloc(1, sizeof *c);
    c->k = sim_kafka_new(1, T0);
    c->cfg = kit_config("all", lead_flags(lead));
    c->lead = lead;
    c->env.clock = c->k;
    c->caller = fake_caller_for(&c->env);
    c->executor = mc_executor_processor;
    c->executor.create_arg = &c->caller;
    const mc_processor *procs[5] = {&mc_router_processor, &mc_store_processor, &mc_wheel_processor,
                                    &c->executor, &mc_retry_processor};
    memcpy(c->procs, procs, sizeof procs);
    for (int i = 0; i < 5; i++)
        prestart(c, i);
    c->crashes = 0;
    presp resp = {c, getenv("FAIL") ? atoi(getenv("FAIL")) : 35, 10};
    int64_t max_due = T0;
    for (int step = 0; step < 1200; step++) {
        sim_advance(c->k, rnd_in(5, 30));
        if (chance(40) && c->n < PMAXCMD) {
            int key = (int)rnd_in(0, PKEYS - 1);
            char id[16];
            snprintf(id, sizeof id, "k%d", key);
            pcmd *m = &c->cmds[c->n];
            *m = (pcmd){.key = key, .at = sim_now(c->k), .wheel_offset = -1};
            if (chance(25)) {
                m->cancel = true;
                m->version = kit_tasks_cancel(c->k, 0, id, sim_now(c->k));
            } else {
                m->due = sim_now(c->k) + rnd_in(-200, 6000);
                mc_task t = kit_task(id, m->due, "http://e/x");
                t.has_retry = true;
                int64_t backoff = far_retries && chance(50) ? 4000 : 300;
                t.retry = (mc_retry_policy){.max_attempts = 4,
                                            .initial_backoff_ms = backoff,
                                            .multiplier = 1.0,
                                            .max_backoff_ms = backoff};
                m->version = kit_tasks_submit(c->k, 0, &t);
                if (m->due + 20000 > max_due)
                    max_due = m->due + 20000;
            }
            c->n++;
        }
        pnote_seen(c);
        int order[5] = {0, 1, 2, 3, 4};
        for (int i = 4; i > 0; i--) {
            int j = (int)rnd_in(0, i), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int i = 0; i < 5; i++)
            pturn(c, order[i], crash_pct);
        if (c->env.current)
            fake_caller_run(c->env.current, sim_now(c->k), prespond, &resp);
    }
    resp.hang_pct = 0;
    while (sim_now(c->k) < max_due) {
        sim_advance(c->k, 25);
        pnote_seen(c);
        for (int i = 0; i < 5; i++)
            CHECK(sim_settle(c->in[i], 50) == 0);
        if (c->env.current)
            fake_caller_run(c->env.current, sim_now(c->k), prespond, &resp);
    }
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < 5; i++)
            CHECK(sim_settle(c->in[i], 50) == 0);

    /* fired twice in ready */
    kit_entry *e;
    size_t n = kit_entries(c->k, "ready", 0, &e);
    size_t fired_twice = 0;
    for (size_t i = 0; i < n; i++) {
        if (e[i].marker || e[i].cancel)
            continue;
        for (size_t q = i + 1; q < n; q++)
            if (!e[q].marker && !e[q].cancel && e[q].version == e[i].version &&
                e[q].attempt == e[i].attempt && strcmp(e[q].id, e[i].id) == 0) {
                fired_twice++;
                fprintf(stderr, "  %s v%lld/%d in ready twice (offsets %lld, %lld)\n", e[i].id,
                        (long long)e[i].version, e[i].attempt, (long long)e[i].offset,
                        (long long)e[q].offset);
            }
    }
    free(e);
    /* called twice without an executor crash between */
    size_t called_twice = 0;
    for (size_t i = 0; i < c->n_calls; i++)
        for (size_t q = i + 1; q < c->n_calls; q++) {
            const pcall *a = &c->calls[i], *b = &c->calls[q];
            if (a->key != b->key || mc_version_cmp(a->version, b->version) != 0)
                continue;
            bool crash = false;
            for (size_t x = 0; x < c->n_exec_crash; x++)
                crash |= c->exec_crash_at[x] >= a->at && c->exec_crash_at[x] <= b->at;
            if (!crash) {
                called_twice++;
                fprintf(stderr, "  k%d v%lld/%d called at +%lld and +%lld, no executor crash\n",
                        a->key, (long long)a->version.v, a->version.attempt,
                        (long long)(a->at - T0), (long long)(b->at - T0));
            }
        }
    /* the last submit of a key never called */
    size_t lost = 0;
    for (int key = 0; key < PKEYS; key++) {
        const pcmd *last = NULL;
        for (size_t j = 0; j < c->n; j++)
            if (c->cmds[j].key == key)
                last = &c->cmds[j];
        if (!last || last->cancel)
            continue;
        bool called = false;
        for (size_t i = 0; i < c->n_calls; i++)
            called |= c->calls[i].key == key && c->calls[i].version.v == last->version;
        if (!called) {
            lost++;
            fprintf(stderr, "  k%d: last submit v%lld (due +%lld) never called\n", key,
                    (long long)last->version, (long long)(last->due - T0));
            pdump(c, key);
        }
    }
    /* a call although a newer command reached the wheel well before its due */
    const int64_t margin = 150;
    size_t superseded = 0;
    for (size_t i = 0; i < c->n_calls; i++) {
        const pcall *a = &c->calls[i];
        const pcmd *newer = NULL;
        for (size_t j = 0; j < c->n && !newer; j++)
            if (c->cmds[j].key == a->key && c->cmds[j].version > a->version.v)
                newer = &c->cmds[j];
        if (!newer || !newer->seen_at || newer->seen_at >= a->due - margin)
            continue;
        superseded++;
        fprintf(stderr,
                "  k%d: v%lld/%d (due +%lld) called at +%lld; v%lld (%s) read by the wheel by "
                "+%lld\n",
                a->key, (long long)a->version.v, a->version.attempt, (long long)(a->due - T0),
                (long long)(a->at - T0), (long long)newer->version,
                newer->cancel ? "cancel" : "submit", (long long)(newer->seen_at - T0));
        pdump(c, a->key);
    }
    printf("pipeline_chaos seed %llu: %zu commands, %zu calls, %d crashes\n",
           (unsigned long long)seed, c->n, c->n_calls, c->crashes);
    CHECK(fired_twice == 0 && called_twice == 0 && lost == 0 && superseded == 0,
          "seed %llu: %zu fired twice, %zu called twice, %zu lost, %zu superseded called",
          (unsigned long long)seed, fired_twice, called_twice, lost, superseded);
    for (int i = 0; i < 5; i++)
        sim_crash(c->in[i]);
    fake_env_free(&c->env);
    sim_kafka_free(c->k);
    kit_config_free(c->cfg);
    free(c);
}

/* ---- 3. deterministic wheel sequences ------------------------------------------------ */

/* A WheelEntry Submit of a/id (version, attempt, due) with up to two headers. */
static int64_t put_submit(sim_kafka *k, const char *id, int64_t version, int32_t attempt,
                          int64_t due, const char *h1, const char *v1, const char *h2,
                          const char *v2)
{
    mc_task t = kit_task(id, due, "http://e/x");
    t.attempt = attempt;
    mc_wheel_entry e = {.version = version, .command = {.kind = MC_CMD_SUBMIT, .submit = t}};
    mc_buf b = {0};
    mc_encode_wheel_entry(&e, &b);
    char key[64];
    size_t kl = kit_key(id, key, sizeof key);
    mc_header h[2];
    size_t nh = 0;
    if (h1)
        h[nh++] = (mc_header){h1, v1, strlen(v1)};
    if (h2)
        h[nh++] = (mc_header){h2, v2, strlen(v2)};
    int64_t off = sim_append(k, kit_topic("wheel"), 0, key, kl, b.data, b.len, h, nh);
    mc_buf_free(&b);
    return off;
}

static int64_t put_marker(sim_kafka *k, const char *header, int64_t position)
{
    char pos[24];
    snprintf(pos, sizeof pos, "%lld", (long long)position);
    mc_header h = {header, pos, strlen(pos)};
    return sim_append(k, kit_topic("wheel"), 0, NULL, 0, NULL, 0, &h, 1);
}

static size_t fired_attempt(sim_kafka *k, const char *id, int64_t version, int32_t attempt)
{
    kit_entry *e;
    size_t n = kit_entries(k, "ready", 0, &e), c = 0;
    for (size_t i = 0; i < n; i++)
        c += !e[i].marker && !e[i].cancel && !strcmp(e[i].id, id) && e[i].version == version &&
             e[i].attempt == attempt;
    free(e);
    return c;
}

/* The wheel of the cases below: no lead, a 3 s horizon. Caller frees. */
static mc_config *lead0_wheel_config(void)
{
    static const char *flags[] = {"--wheel-lead-ms=0", "--horizon-ms=3000", NULL};
    return kit_config("wheel", flags);
}

/* A wheel instance "w1" on k, assigned every partition (a start or a restart). */
static sim_inst *wheel_up(sim_kafka *k, mc_config *cfg)
{
    sim_inst *w = sim_inst_new(k, &mc_wheel_processor, cfg, "w1");
    CHECK(sim_assign_all(w) == 0);
    return w;
}

/* A far task's hand-off is pending at the checkpoint (commit held back to
 * its store position 5); the restarted wheel commits in the middle of its
 * replay (a transaction by size or age, or a revoke), before it has replayed
 * the hand-off: commit_offset() is then p->next = 7. A second restart
 * replays from 7 and skips the hand-off (position 5 < replay_from 7) as
 * stale: the task never fires. */
static void handoff_lost_after_a_commit_inside_the_replay(void)
{
    mc_config *cfg = lead0_wheel_config();
    sim_kafka *k = sim_kafka_new(1, T0);
    sim_inst *w = wheel_up(k, cfg);
    put_submit(k, "x", 10, 1, T0 + 10000, MC_ROUTE_HEADER, MC_ROUTE_STORE, NULL, NULL); /* 0: far */
    put_marker(k, MC_STORE_POSITION_HEADER, 1);                                         /* 1 */
    put_marker(k, MC_RESOLVED_POSITION_HEADER, 1);                                      /* 2 */
    kit_wheel_cancel(k, 0, 11, "other", T0);                                            /* 3 */
    put_marker(k, MC_STORE_POSITION_HEADER, 5);                                         /* 4 */
    put_marker(k, MC_RESOLVED_POSITION_HEADER, 5);                                      /* 5 */
    put_marker(k, MC_STORE_POSITION_HEADER, 6);                                         /* 6 */
    /* 7: the store's hand-off of x, written when it had applied < 5. */
    put_submit(k, "x", 10, 1, T0 + 10000, MC_STORE_POSITION_HEADER, "5", NULL, NULL);
    CHECK(sim_settle(w, 10) == 0);
    const char *md;
    int64_t c1 = sim_committed(k, KIT_PREFIX "wheel", kit_topic("wheel"), 0, &md);
    CHECK(c1 <= 5, "committed %lld, held back to the hand-off's position", (long long)c1);
    sim_crash(w);
    /* Restart: the replay goes in two transactions (5000 records or 100 ms
     * each, in the runner); the first ends before the hand-off. */
    w = wheel_up(k, cfg);
    CHECK(sim_poll(w, 2) == 2);
    CHECK(sim_commit(w) == 0);
    int64_t c2 = sim_committed(k, KIT_PREFIX "wheel", kit_topic("wheel"), 0, &md);
    CHECK(c2 <= 5,
          "mid-replay commit moved the committed offset to %lld (%s), past the "
          "pending hand-off's position 5",
          (long long)c2, md);
    sim_crash(w);
    w = wheel_up(k, cfg);
    for (int64_t t = T0; t <= T0 + 11000; t += 500) {
        sim_set_now(k, t);
        CHECK(sim_settle(w, 10) == 0);
    }
    CHECK(fired_attempt(k, "x", 10, 1) == 1, "the handed-off task fired %zu times (lost)",
          fired_attempt(k, "x", 10, 1));
    sim_crash(w);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* A next attempt made stale by a cancel is replayed without the cancel:
 * A (v10 attempt 1) fires at position 1 and its call fails; the client's
 * cancel (v20) at offset 1 raises the floor; retry writes the next attempt
 * N (v10 attempt 2) at offset 2, then the resolved marker O=2 (the wheel's
 * marker sent after the cancel), and the store's marker P=2: the floor
 * refs below 2 go, N's own ref at 2 holds the committed offset at 2. After
 * a restart the replay starts at N, without the cancel: N is pending and
 * fires. */
static void stale_next_attempt_fires_after_a_restart(void)
{
    mc_config *cfg = lead0_wheel_config();
    sim_kafka *k = sim_kafka_new(1, T0);
    sim_inst *w = wheel_up(k, cfg);
    put_submit(k, "x", 10, 1, T0 + 1000, NULL, NULL, NULL, NULL); /* 0: A */
    CHECK(sim_settle(w, 10) == 0);
    sim_set_now(k, T0 + 1000);
    CHECK(sim_settle(w, 10) == 0);
    CHECK(fired_attempt(k, "x", 10, 1) == 1, "A fired");
    sim_set_now(k, T0 + 1100);
    kit_wheel_cancel(k, 0, 20, "x", sim_now(k)); /* 1: cancel */
    CHECK(sim_settle(w, 10) == 0);
    sim_set_now(k, T0 + 2500);
#ifdef MC_FIRED_POSITION_HEADER
    /* 2: N, stale; with the fix, retry says where A was fired (1) */
    put_submit(k, "x", 10, 2, T0 + 5000, MC_STORE_POSITION_HEADER, "1", NULL, NULL);
#else
    put_submit(k, "x", 10, 2, T0 + 5000, NULL, NULL, NULL, NULL); /* 2: N, stale */
#endif
    put_marker(k, MC_STORE_POSITION_HEADER, 2);    /* 3 */
    put_marker(k, MC_RESOLVED_POSITION_HEADER, 2); /* 4 */
    CHECK(sim_settle(w, 10) == 0);
    const char *md;
    int64_t c = sim_committed(k, KIT_PREFIX "wheel", kit_topic("wheel"), 0, &md);
    char mdc[256];
    snprintf(mdc, sizeof mdc, "%s", md);
    md = mdc;
    sim_crash(w);
    w = wheel_up(k, cfg);
    for (int64_t t = T0 + 2500; t <= T0 + 6000; t += 250) {
        sim_set_now(k, t);
        CHECK(sim_settle(w, 10) == 0);
    }
    CHECK(fired_attempt(k, "x", 10, 2) == 0,
          "the next attempt after the cancel fired after a restart (replay from %lld, %s)",
          (long long)c, md);
    sim_crash(w);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* Two near next attempts pending at once, the one fired later arriving
 * first: b (v11) fires at position 1 and its call is slow (a timeout); a
 * (v14) fires at position 4 and fails at once, so retry writes a's next
 * attempt (offset 4, fired position 4) before b's (offset 5, fired
 * position 1). The store's and the resolved marker (6) release the floors.
 * b's next attempt is pending and holds the committed offset back to 1 -
 * but the holds queue (before the heap) assumed positions only grow in
 * arrival order and looked at its front only (a's 4): the wheel committed
 * 4. After a restart the replay starts at 4 and judges b's next attempt
 * (position 1 < 4) stale: it never fires, no Result - lost. */
static void next_attempts_out_of_position_order_lost_after_a_restart(void)
{
    mc_config *cfg = lead0_wheel_config();
    sim_kafka *k = sim_kafka_new(1, T0);
    sim_inst *w = wheel_up(k, cfg);
    put_submit(k, "b", 11, 1, T0 + 1000, NULL, NULL, NULL, NULL); /* 0 */
    CHECK(sim_settle(w, 10) == 0);
    sim_set_now(k, T0 + 1000);
    CHECK(sim_settle(w, 10) == 0);
    CHECK(fired_attempt(k, "b", 11, 1) == 1, "b fired");
    kit_wheel_cancel(k, 0, 12, "other1", sim_now(k));             /* 1 */
    kit_wheel_cancel(k, 0, 13, "other2", sim_now(k));             /* 2 */
    put_submit(k, "a", 14, 1, T0 + 1500, NULL, NULL, NULL, NULL); /* 3 */
    CHECK(sim_settle(w, 10) == 0);
    sim_set_now(k, T0 + 1500);
    CHECK(sim_settle(w, 10) == 0);
    CHECK(fired_attempt(k, "a", 14, 1) == 1, "a fired");
    int64_t pos_a = -1, pos_b = -1;
    char ka[64], kb[64];
    size_t la = kit_key("a", ka, sizeof ka), lb = kit_key("b", kb, sizeof kb);
    sim_rec *r;
    size_t nr = sim_read(k, kit_topic("ready"), 0, &r);
    for (size_t i = 0; i < nr; i++) {
        const mc_header *h = sim_rec_header(&r[i], MC_FIRED_POSITION_HEADER);
        if (!h || !r[i].key)
            continue;
        char v[24];
        snprintf(v, sizeof v, "%.*s", (int)h->len, (const char *)h->value);
        if (r[i].key_len == la && !memcmp(r[i].key, ka, la))
            pos_a = atoll(v);
        else if (r[i].key_len == lb && !memcmp(r[i].key, kb, lb))
            pos_b = atoll(v);
    }
    free(r);
    CHECK(pos_b == 1 && pos_a == 4, "fired positions b=%lld a=%lld", (long long)pos_b,
          (long long)pos_a);
    sim_set_now(k, T0 + 2500);
    put_submit(k, "a", 14, 2, T0 + 5000, MC_STORE_POSITION_HEADER, "4", NULL, NULL); /* 4 */
    put_submit(k, "b", 11, 2, T0 + 5000, MC_STORE_POSITION_HEADER, "1", NULL, NULL); /* 5 */
    put_marker(k, MC_STORE_POSITION_HEADER, 6);                                      /* 6 */
    put_marker(k, MC_RESOLVED_POSITION_HEADER, 6);                                   /* 7 */
    CHECK(sim_settle(w, 10) == 0);
    const char *md;
    int64_t c = sim_committed(k, KIT_PREFIX "wheel", kit_topic("wheel"), 0, &md);
    CHECK(c <= 1, "committed %lld (%s): past b's pending next attempt's fired position 1",
          (long long)c, md);
    sim_crash(w);
    w = wheel_up(k, cfg);
    for (int64_t t = T0 + 2500; t <= T0 + 6000; t += 250) {
        sim_set_now(k, t);
        CHECK(sim_settle(w, 10) == 0);
    }
    CHECK(fired_attempt(k, "a", 14, 2) == 1, "a's next attempt fired %zu times",
          fired_attempt(k, "a", 14, 2));
    CHECK(fired_attempt(k, "b", 11, 2) == 1, "b's next attempt fired %zu times (lost)",
          fired_attempt(k, "b", 11, 2));
    sim_crash(w);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* ---- 4. the real caller: a recall read after the due time ------------------------ */

static atomic_int http_requests;
static int http_listen_fd;

static void *http_server(void *arg)
{
    (void)arg;
    for (;;) {
        int c = accept(http_listen_fd, NULL, NULL);
        if (c < 0)
            return NULL;
        char buf[8192];
        size_t got = 0;
        while (got < sizeof buf - 1) {
            ssize_t n = read(c, buf + got, sizeof buf - 1 - got);
            if (n <= 0)
                break;
            got += (size_t)n;
            buf[got] = 0;
            if (strstr(buf, "\r\n\r\n"))
                break;
        }
        atomic_fetch_add(&http_requests, 1);
        static const char ok[] =
            "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        ssize_t w = write(c, ok, sizeof ok - 1);
        (void)w;
        close(c);
    }
}

static int start_http_server(void)
{
    http_listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(http_listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(http_listen_fd, 64) != 0 ||
        getsockname(http_listen_fd, (struct sockaddr *)&a, &len) != 0)
        return -1;
    pthread_t t;
    pthread_create(&t, NULL, http_server, NULL);
    pthread_detach(t);
    return ntohs(a.sin_port);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Drives the executor until its caller has nothing more to report. */
static void exec_settle(sim_inst *ex, int ms)
{
    for (int i = 0; i < ms / 10; i++) {
        CHECK(sim_settle(ex, 10) == 0);
        sleep_ms(10);
    }
}

/* The wheel fired x early (lead); the executor read it and holds it, and
 * committed that (x unfinished). The executor dies. The client cancels
 * 150 ms before due, the wheel writes the recall to `ready` in time. The
 * executor is back after the due time (a restart takes seconds): it reads
 * x (unfinished, due: started at once) and then the recall, which finds
 * nothing held. The cancelled task is called. The same happens without a
 * crash whenever the executor reads both records after the due time (a
 * lagging or paused partition). */
static void recall_lost_across_executor_restart(void)
{
    int port = start_http_server();
    CHECK(port > 0);
    static const char *flags[] = {"--executor-allow-cidrs=127.0.0.0/8", NULL};
    mc_config *cfg = kit_config("executor", flags);
    int64_t now = mc_now_ms();
    sim_kafka *k = sim_kafka_new(1, now);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/x", port);
    mc_task t = kit_task("x", now + 300, url);
    kit_ready_submit(k, 0, 10, &t);                     /* fired 300 ms early */
    sim_append_commit_marker(k, kit_topic("ready"), 0); /* the wheel writes in transactions */
    sim_inst *ex = sim_inst_new(k, &mc_executor_processor, cfg, "e1");
    CHECK(ex && sim_assign_all(ex) == 0);
    CHECK(sim_poll(ex, 10) == 1);
    CHECK(sim_commit(ex) == 0); /* x held, unfinished in the checkpoint */
    sim_crash(ex);
    kit_ready_recall(k, 0, 11, "x"); /* the wheel's recall, 150 ms before due */
    sim_append_commit_marker(k, kit_topic("ready"), 0);
    sleep_ms(1000); /* the restart takes longer than the lead */
    sim_set_now(k, mc_now_ms());
    ex = sim_inst_new(k, &mc_executor_processor, cfg, "e1");
    CHECK(ex && sim_assign_all(ex) == 0);
    exec_settle(ex, 1000);
    kit_result *r;
    size_t n = kit_results(k, 0, &r);
    CHECK(atomic_load(&http_requests) == 0,
          "a task recalled 150 ms before its due time was called %d time(s) after an executor "
          "restart (Results: %zu, first outcome %d)",
          atomic_load(&http_requests), n, n ? (int)r[0].outcome : -1);
    free(r);
    sim_crash(ex);
    sim_kafka_free(k);
    kit_config_free(cfg);
}

/* ---- 5. the same through every role (router, store, wheel, executor, retry) ------ */

typedef struct pl5 {
    sim_kafka *k;
    mc_config *cfg;
    fake_env env;
    mc_executor_caller caller;
    mc_processor executor;
    const mc_processor *procs[5];
    sim_inst *in[5];
} pl5;

static void pl5_settle(pl5 *pl)
{
    for (int round = 0; round < 6; round++)
        for (int i = 0; i < 5; i++)
            CHECK(sim_settle(pl->in[i], 30) == 0);
}

static long pl5_fail(mc_call *j, void *arg)
{
    (void)j;
    (void)arg;
    return 500;
}

static void pl5_run(pl5 *pl, int64_t until, int64_t step, bool answer)
{
    while (sim_now(pl->k) < until) {
        int64_t next = sim_now(pl->k) + step;
        sim_set_now(pl->k, next < until ? next : until);
        pl5_settle(pl);
        if (answer && pl->env.current)
            fake_caller_run(pl->env.current, sim_now(pl->k), NULL, NULL);
        pl5_settle(pl);
    }
}

/* A cancel while the call is failing, then a wheel restart in the second
 * after the next attempt arrived: the wheel's marker sent after the cancel
 * came back (resolved position past the cancel, before the next attempt),
 * so the cancel's floor ref is gone and the next attempt's own ref holds
 * the committed offset at the next attempt. The restarted wheel replays
 * from there, without the cancel, and calls the cancelled task again. */
static void pipeline_cancel_then_wheel_restart(void)
{
    static const char *flags[] = {"--horizon-ms=5000", "--wheel-lead-ms=0", NULL};
    pl5 pl = {0};
    pl.k = sim_kafka_new(1, T0);
    pl.cfg = kit_config("all", flags);
    pl.env.clock = pl.k;
    pl.caller = fake_caller_for(&pl.env);
    pl.executor = mc_executor_processor;
    pl.executor.create_arg = &pl.caller;
    const mc_processor *procs[5] = {&mc_router_processor, &mc_store_processor, &mc_wheel_processor,
                                    &pl.executor, &mc_retry_processor};
    for (int i = 0; i < 5; i++) {
        pl.procs[i] = procs[i];
        pl.in[i] = sim_inst_new(pl.k, procs[i], pl.cfg, "i1");
        CHECK(pl.in[i] && sim_assign_all(pl.in[i]) == 0);
    }
    mc_task t = kit_task("x", T0 + 100, "http://e/x");
    t.has_retry = true;
    t.retry = (mc_retry_policy){
        .max_attempts = 5, .initial_backoff_ms = 3000, .multiplier = 1.0, .max_backoff_ms = 3000};
    kit_tasks_submit(pl.k, 0, &t);
    pl5_run(&pl, T0 + 100, 10, false);
    CHECK(fake_caller_pending(pl.env.current) == 1, "the call is in flight");
    pl5_run(&pl, T0 + 150, 10, false);
    kit_tasks_cancel(pl.k, 0, "x", sim_now(pl.k));
    pl5_run(&pl, T0 + 1500, 100, false); /* markers of the wheel and the store pass the cancel */
    fake_caller_run(pl.env.current, sim_now(pl.k), pl5_fail, NULL);
    int64_t failed_at = sim_now(pl.k);
    pl5_settle(&pl); /* Attempt, next attempt, resolved marker; floors released */
    const char *md;
    int64_t c = sim_committed(pl.k, KIT_PREFIX "wheel", kit_topic("wheel"), 0, &md);
    char mdc[256];
    snprintf(mdc, sizeof mdc, "%s", md);
    md = mdc;
    if (getenv("DUMP")) {
        const char *tops[2] = {"wheel", "ready"};
        for (int ti = 0; ti < 2; ti++) {
            sim_rec *r;
            size_t n = sim_read(pl.k, kit_topic(tops[ti]), 0, &r);
            kit_entry *e;
            kit_entries(pl.k, tops[ti], 0, &e);
            for (size_t i = 0; i < n; i++) {
                fprintf(stderr, "%s@%lld %s", tops[ti], (long long)e[i].offset,
                        e[i].marker   ? "marker"
                        : e[i].cancel ? "CANCEL"
                                      : "submit");
                if (!e[i].marker)
                    fprintf(stderr, " v%lld/%d due +%lld", (long long)e[i].version, e[i].attempt,
                            (long long)(e[i].due ? e[i].due - T0 : -1));
                for (size_t h = 0; h < r[i].n_headers; h++)
                    fprintf(stderr, " %s=%.*s", r[i].headers[h].name, (int)r[i].headers[h].len,
                            (const char *)r[i].headers[h].value);
                fprintf(stderr, "\n");
            }
            free(e);
            free(r);
        }
        fprintf(stderr, "committed %lld %s now +%lld\n", (long long)c, md,
                (long long)(sim_now(pl.k) - T0));
    }
    sim_crash(pl.in[2]);
    pl.in[2] = sim_inst_new(pl.k, &mc_wheel_processor, pl.cfg, "i1");
    CHECK(sim_assign_all(pl.in[2]) == 0);
    pl5_run(&pl, T0 + 8000, 100, true);
    size_t after = 0;
    char key[64];
    kit_key("x", key, sizeof key);
    for (size_t i = 0; i < pl.env.n_calls; i++)
        after += !strcmp(pl.env.calls[i].key, key) && pl.env.calls[i].at > failed_at;
    CHECK(after == 0,
          "cancelled task called %zu time(s) after a wheel restart (wheel committed %lld, %s)",
          after, (long long)c, md);
    for (int i = 0; i < 5; i++)
        sim_crash(pl.in[i]);
    fake_env_free(&pl.env);
    sim_kafka_free(pl.k);
    kit_config_free(pl.cfg);
}

int main(int argc, char **argv)
{
    int seeds = argc > 1 ? atoi(argv[1]) : 40;
    const char *only = getenv("ONLY");
    if (!only || !strcmp(only, "det")) {
        handoff_lost_after_a_commit_inside_the_replay();
        stale_next_attempt_fires_after_a_restart();
        pipeline_cancel_then_wheel_restart();
    }
    if (!only || !strcmp(only, "det") || !strcmp(only, "review"))
        next_attempts_out_of_position_order_lost_after_a_restart();
    if (!only || !strcmp(only, "recall"))
        recall_lost_across_executor_restart();
    if (getenv("SEED")) {
        uint64_t seed = strtoull(getenv("SEED"), NULL, 10);
        int pct = argc > 2 ? atoi(argv[2]) : 3;
        int64_t lead = getenv("LEAD") ? atoi(getenv("LEAD")) : 300;
        if (!only || !strcmp(only, "wheel"))
            wheel_store_chaos(seed, pct, lead);
        if (!only || !strcmp(only, "pipeline"))
            pipeline_chaos(seed, pct, (seed / 104729) % 2 == 0, lead);
        return check_exit("test_sim_chaos");
    }
    for (int s = 1; s <= seeds; s++) {
        int pct = argc > 2 ? atoi(argv[2]) : 8;
        int64_t lead = (s / 2) % 2 ? 300 : 200; /* batched fires, and fires one by one */
        if (!only || !strcmp(only, "wheel"))
            wheel_store_chaos((uint64_t)s * 7919, pct, lead);
        if (!only || !strcmp(only, "pipeline"))
            pipeline_chaos((uint64_t)s * 104729, pct, s % 2 == 0, lead);
    }
    return check_exit("test_sim_chaos");
}
