/* Sharding broadcasts, kept by the jobs role: a task whose endpoint group's strategy is
 * SHARDING_BROADCAST calls every member of the group, and its client sees one Result,
 * written once every member's call ended.
 *
 * At the task's due time the executor submits one task per member, its shards
 * (<task_id>#shard-<i>, each pinned to its member), and, in the same transaction, a
 * StartBroadcast to `job-commands`, keyed by the task's key: the task as it was due,
 * its version and the members. From there each shard is a task like any other; the
 * executor and the retry role put the broadcast's task id and the shard's
 * "<index>/<total>@<version>" as headers on every Result of a shard, and this role,
 * which reads `results` for the jobs and chains already, relays a final one to the
 * broadcast as a ShardDone (a repartition from the shard's key to the task's), in the
 * transaction that consumes the Result.
 *
 * The broadcast is state keyed apart from its shards, so it lives here as jobs and
 * chains do: in memory, and logged to the compacted `broadcasts` changelog (keyed by
 * the task's key, only this role writes it) in the transaction that changes it. When
 * its last shard ended, the transaction that records it also writes the task's Result
 * (with the task's chain headers, so a chain or a job waiting for the task sees it
 * end), submits its follow-ups when every shard succeeded, and tombstones the state:
 * a kill -9 at any moment neither loses nor doubles the Result. The version makes a
 * relay of a shard of an older submission of the same task id harmless (a version may
 * be negative: one written before a growth of the partition count is shifted below zero,
 * and a newer one is still the larger). A newer submission's StartBroadcast replaces an
 * open broadcast: the older one's Result (CANCELLED, its shards so far) is written in the
 * transaction that starts the newer one. A Result Kafka refuses (larger than a record may
 * be) sends the task to the dead topic instead.
 *
 * Every shard ends with a final Result through the usual paths (the executor validates
 * the shards before it fans out; a cancel, a recall, running out of attempts and a
 * refusal all write one carrying the broadcast's headers), so the broadcast's bound
 * is only a net for tampering and bugs, and shards that are merely slow (an admission
 * limit, an outage) are waited for: from when it was fired (or from its latest shard's
 * end, when later), a day, or the task's own stale
 * bound (every attempt's timeout and backoff, plus a minute, as a job waits for an
 * occurrence) and a minute more for the two extra hops its shards take, if that is longer.
 * A timer armed on assignment fires no earlier than a minute later, so a role back after
 * the bound reads the shards' ends in its backlog first. Past the bound the broadcast ends
 * FAILED_PERMANENTLY, naming the shards that never reported. */
#include "jobs_impl.h"

#include <jansson.h>
#include <stdarg.h>

#include "broadcast.h"
#include "chains.h"
#include "endpoints.h"
#include "follow_ups.h"

/* Beyond the task's stale bound: the shards go through `tasks` and the router, and
 * their ends through `job-commands`, two hops more than a chain link's. */
#define SLACK_MS 60000
/* The least a broadcast waits: its shards may be merely slow (an admission limit of one
 * call open for 64 shards of 30 s calls takes 32 minutes; an outage), and they end with a
 * final Result anyway; the bound is a net for tampering and bugs. */
#define MIN_WAIT_MS DAY_MS
/* A timer armed on assignment fires no earlier than this: the role reads its backlog of
 * job-commands (ShardDones, and the shards' Results that make them) first. */
#define RESTORE_GRACE_MS 60000

/* ---- entries ------------------------------------------------------------------------ */

static void broadcast_free(broadcast_entry *e)
{
    free(e->value);
    free(e);
}

static void free_broadcast_node(mc_keynode *n, void *arg)
{
    (void)arg;
    broadcast_free((broadcast_entry *)n);
}

void jobs_broadcasts_free(job_part *p)
{
    if (p->broadcasts) {
        mc_keymap_drain(p->broadcasts, free_broadcast_node, NULL);
        mc_keymap_free(p->broadcasts);
    }
    mc_wheel_free(p->broadcast_timers);
}

static broadcast_entry *find_broadcast(job_part *p, const void *key, size_t len)
{
    return (broadcast_entry *)mc_keymap_find(p->broadcasts, key, len, mc_keymap_hash(key, len));
}

/* A new entry holding value (owned from now on), inserted. NULL on ENOMEM. */
static broadcast_entry *broadcast_new(jobs *s, job_part *p, const void *key, size_t len,
                                      uint8_t *value, size_t value_len)
{
    broadcast_entry *e = calloc(1, sizeof *e + len);
    if (!e)
        return NULL;
    e->node.key_len = (uint32_t)len;
    e->node.hash = mc_keymap_hash(key, len);
    memcpy(e->key, key, len);
    e->value = value;
    e->value_len = value_len;
    mc_keymap_insert(p->broadcasts, &e->node);
    mc_gauge_add(s->broadcasts_gauge, 1);
    return e;
}

static void broadcast_remove(jobs *s, job_part *p, broadcast_entry *e)
{
    mc_wheel_cancel(p->broadcast_timers, &e->timer);
    mc_keymap_remove(p->broadcasts, &e->node);
    broadcast_free(e);
    mc_gauge_add(s->broadcasts_gauge, -1);
}

/* When the broadcast stops waiting for its shards: max(the task's stale bound +
 * SLACK_MS, MIN_WAIT_MS) after it fired, or after its latest shard ended if later - a
 * broadcast whose shards go on ending (slowly, behind an admission limit) is not stale. */
static int64_t stale_at(const jobs *s, const mc_start_broadcast *b)
{
    const mc_task *t = &b->task;
    int64_t wait =
        jobs_stale_bound(t->has_retry, &t->retry, t->callback.timeout_ms, s->cfg) + SLACK_MS;
    int64_t from = b->fired_at;
    for (size_t i = 0; i < b->n_ended; i++)
        if (b->ended[i].finished_at > from)
            from = b->ended[i].finished_at;
    return from + (wait > MIN_WAIT_MS ? wait : MIN_WAIT_MS);
}

/* Sets e's timer at its stale_at, and no earlier than not_before. */
static int broadcast_arm(job_part *p, broadcast_entry *e, int64_t not_before, mc_ctx *ctx)
{
    mc_wheel_cancel(p->broadcast_timers, &e->timer);
    int64_t t = e->stale_at > not_before ? e->stale_at : not_before;
    if (mc_wheel_add(p->broadcast_timers, &e->timer, t) != 0)
        return -1;
    mc_ctx_wakeup_at(ctx, t);
    return 0;
}

/* ---- the changelog ------------------------------------------------------------------ */

/* Encodes b as a StartBroadcast JobCommand into a new allocation. NULL on failure. */
static uint8_t *encode_state(jobs *s, const mc_start_broadcast *b, size_t *len)
{
    mc_job_command c = {.kind = MC_JOBCMD_START_BROADCAST, .start_broadcast = *b};
    mc_buf_reset(&s->buf);
    if (mc_encode_job_command(&c, &s->buf) != 0)
        return NULL;
    uint8_t *v = malloc(s->buf.len);
    if (v) {
        memcpy(v, s->buf.data, s->buf.len);
        *len = s->buf.len;
    }
    return v;
}

/* Reads a held or logged state (in s->link_arena). 0, or -1 with a reason in detail. */
static int decode_state(jobs *s, const uint8_t *value, size_t len, mc_start_broadcast *b,
                        char *detail, size_t detail_len)
{
    mc_arena_reset(s->link_arena);
    mc_job_command c;
    if (mc_decode_job_command(&s->codec, value, len, s->link_arena, &c, detail, detail_len) !=
        MC_CODEC_OK)
        return -1;
    if (c.kind != MC_JOBCMD_START_BROADCAST || c.start_broadcast.n_members == 0 ||
        c.start_broadcast.n_members > MC_GROUP_MEMBERS_MAX) {
        snprintf(detail, detail_len, "not a StartBroadcast of 1 to %d members",
                 MC_GROUP_MEMBERS_MAX);
        return -1;
    }
    *b = c.start_broadcast;
    return 0;
}

/* Reads the state e holds (in s->link_arena). 0, or -1 after logging why: only this role
 * wrote it, so that is out of memory or a bug; the transaction aborts and is tried again. */
static int held_state(jobs *s, const broadcast_entry *e, mc_start_broadcast *b)
{
    char detail[256];
    if (decode_state(s, e->value, e->value_len, b, detail, sizeof detail) == 0)
        return 0;
    mc_log(s->logger, MC_LOG_ERROR, "held broadcast unreadable", "error", detail,
           (const char *)NULL);
    return -1;
}

static int write_state(jobs *s, job_part *p, const broadcast_entry *e, mc_ctx *ctx)
{
    return mc_ctx_forward(ctx, s->broadcast_log, p->partition, e->key, e->node.key_len, e->value,
                          e->value_len);
}

/* ---- the end ------------------------------------------------------------------------- */

static const mc_shard_end *end_of(const mc_start_broadcast *b, int32_t shard)
{
    for (size_t i = 0; i < b->n_ended; i++)
        if (b->ended[i].shard == shard)
            return &b->ended[i];
    return NULL;
}

/* The Result's body: every shard, its member, and how and when it ended (null: never
 * reported). A malloc'ed string, or NULL. */
static char *summary(const mc_start_broadcast *b)
{
    json_t *shards = json_array();
    json_t *root = json_object();
    if (!shards || !root) {
        json_decref(shards);
        json_decref(root);
        return NULL;
    }
    json_object_set_new(root, "shards", shards);
    for (size_t i = 0; i < b->n_members; i++) {
        const mc_shard_end *end = end_of(b, (int32_t)i);
        json_t *o = json_object();
        if (!o || json_array_append_new(shards, o) != 0) {
            json_decref(root);
            return NULL;
        }
        json_object_set_new(o, "shard", json_integer((json_int_t)i));
        json_object_set_new(o, "member", json_string(b->members[i]));
        json_object_set_new(o, "outcome",
                            end ? json_string(mc_outcome_name(end->outcome)) : json_null());
        json_object_set_new(o, "finishedAt",
                            end ? json_integer((json_int_t)end->finished_at) : json_null());
    }
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return text;
}

/* Appends to out (cap bytes, NUL-terminated) what fmt makes, cut where it does not fit. */
static void append(char *out, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *out, size_t cap, size_t *len, const char *fmt, ...)
{
    if (*len >= cap - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + *len, cap - *len, fmt, ap);
    va_end(ap);
    *len = n < 0 || (size_t)n >= cap - *len ? cap - 1 : *len + (size_t)n;
}

/* Whether shard i counts against the broadcast: stale, it never reported; else it
 * did not succeed. */
static bool shard_bad(const mc_start_broadcast *b, size_t i, bool stale)
{
    const mc_shard_end *end = end_of(b, (int32_t)i);
    return stale ? !end : !end || end->outcome != MC_OUTCOME_SUCCEEDED;
}

/* Why the broadcast failed: the shards that did not succeed, or (stale) those that
 * never reported. Empty when every shard succeeded. */
static void failure_text(const mc_start_broadcast *b, bool stale, int64_t waited_ms, char *out,
                         size_t cap)
{
    size_t len = 0, bad = 0;
    out[0] = '\0';
    for (size_t i = 0; i < b->n_members; i++)
        bad += shard_bad(b, i, stale);
    if (bad == 0)
        return;
    if (stale)
        append(out, cap, &len, "%s ", bad == 1 ? "shard" : "shards");
    else
        append(out, cap, &len, "%zu of %zu shards did not succeed: ", bad, b->n_members);
    const char *sep = "";
    for (size_t i = 0; i < b->n_members; i++) {
        if (!shard_bad(b, i, stale))
            continue;
        const mc_shard_end *end = end_of(b, (int32_t)i);
        if (stale)
            append(out, cap, &len, "%s%zu", sep, i);
        else
            append(out, cap, &len, "%sshard %zu (%s) %s", sep, i, b->members[i],
                   end ? mc_outcome_name(end->outcome) : "NONE");
        sep = ", ";
    }
    if (stale)
        append(out, cap, &len, " of %zu gave no final Result within %lld s", b->n_members,
               (long long)(waited_ms / 1000));
}

/* Submits the task's follow-ups, as the executor does for a success; one Kafka refuses
 * is dead-lettered (naming cause) and the others go on. 0, or -1. */
static int submit_follow_ups(jobs *s, const mc_task *t, const char *parent_key,
                             int64_t succeeded_at, const mc_record *cause, mc_ctx *ctx)
{
    for (size_t i = 0; i < t->n_on_success; i++) {
        mc_follow_up_submit f;
        mc_follow_up_build(t, i, parent_key, succeeded_at, &f);
        mc_buf_reset(&s->buf);
        if (mc_encode_command(&f.command, &s->buf) != 0)
            return -1;
        int rc = f.key_len ? mc_ctx_forward(ctx, s->tasks,
                                            mc_key_partition(f.key, f.key_len, s->task_partitions),
                                            f.key, f.key_len, s->buf.data, s->buf.len)
                           : MC_FORWARD_REFUSED;
        if (rc == MC_FORWARD_REFUSED && cause) {
            char reason[400];
            snprintf(reason, sizeof reason,
                     "jobs: follow-up %zu of broadcast %.200s not submitted: Kafka refused it "
                     "(too large) or its key is too long",
                     i + 1, parent_key);
            if (mc_ctx_dead_letter(ctx, cause, reason, &f.command.submit) != 0 &&
                mc_ctx_dead_letter(ctx, cause, reason, NULL) != 0)
                return -1;
            continue;
        }
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* Kafka refused the broadcast's Result for good: the task is dead-lettered, naming cause,
 * or when there is none (the bound ended it) the broadcast's key in job-commands. 0, or
 * -1. */
static int refused(jobs *s, const job_part *p, const broadcast_entry *e,
                   const mc_start_broadcast *b, const mc_record *cause, mc_ctx *ctx)
{
    mc_record none = {.topic = s->commands_topic,
                      .partition = p->partition,
                      .offset = -1,
                      .key = e->key,
                      .key_len = e->node.key_len};
    if (!cause)
        cause = &none;
    char reason[400];
    snprintf(reason, sizeof reason,
             "jobs: Kafka refused the Result of broadcast %.*s (larger than a record may be); "
             "the task is dead-lettered instead",
             (int)(e->node.key_len < 200 ? e->node.key_len : 200), e->key);
    if (mc_ctx_dead_letter(ctx, cause, reason, &b->task) != 0 &&
        mc_ctx_dead_letter(ctx, cause, reason, NULL) != 0)
        return -1;
    return 0;
}

/* How a broadcast ended. */
typedef enum broadcast_end {
    END_SHARDS,   /* every shard gave its final Result */
    END_STALE,    /* its bound passed with shards unreported */
    END_REPLACED, /* a newer submission of its task started a broadcast of its own */
} broadcast_end;

/* Writes the task's Result (and, when every shard succeeded, its follow-ups), tombstones
 * the state and forgets it. how: END_SHARDS, its last shard ended (cause: the ShardDone
 * that said so); END_STALE, the bound ended it at now (cause: NULL); END_REPLACED, the
 * StartBroadcast of version newer (cause) replaced it at now: its Result is CANCELLED.
 * 0, or -1. */
static int finish(jobs *s, job_part *p, broadcast_entry *e, const mc_start_broadcast *b,
                  broadcast_end how, int64_t newer, int64_t now, const mc_record *cause,
                  mc_ctx *ctx)
{
    char error[2048];
    mc_outcome outcome;
    int64_t finished_at = now;
    if (how == END_REPLACED) {
        snprintf(error, sizeof error,
                 "replaced by a newer submission of the task (version %" PRId64
                 ") before every shard reported",
                 newer);
        outcome = MC_OUTCOME_CANCELLED;
    } else {
        failure_text(b, how == END_STALE, e->stale_at - b->fired_at, error, sizeof error);
        outcome = error[0] == '\0' ? MC_OUTCOME_SUCCEEDED : MC_OUTCOME_FAILED_PERMANENTLY;
    }
    if (how == END_SHARDS) {
        finished_at = b->fired_at;
        for (size_t i = 0; i < b->n_ended; i++)
            if (b->ended[i].finished_at > finished_at)
                finished_at = b->ended[i].finished_at;
    }
    bool succeeded = outcome == MC_OUTCOME_SUCCEEDED;
    char *body = summary(b);
    if (!body)
        return -1;
    size_t body_len = strlen(body);
    mc_result res = {.app_id = b->task.app_id,
                     .task_id = b->task.task_id,
                     .attempt = b->task.attempt,
                     .due_at = b->task.due_at,
                     .started_at = b->fired_at,
                     .finished_at = finished_at,
                     .http_status = 0,
                     .outcome = outcome,
                     .error = error,
                     .version = b->version,
                     .response_body = (const uint8_t *)body,
                     .response_body_len = body_len,
                     .response_size = (int64_t)body_len,
                     .write_version = s->cfg->record_version,
                     .member = NULL};
    mc_buf_reset(&s->buf);
    int rc = mc_encode_result(&res, &s->buf);
    free(body);
    if (rc != 0)
        return -1;
    char key[MC_MAX_TASK_KEY_LEN + 1];
    size_t klen = mc_task_key(b->task.app_id, b->task.task_id, key, sizeof key);
    if (klen >= sizeof key)
        return -1; /* it is e's key, which fit */
    mc_header h[2];
    mc_produce out = {.out = s->results,
                      .partition = mc_key_partition(key, klen, s->result_partitions),
                      .key = key,
                      .key_len = klen,
                      .value = s->buf.data,
                      .value_len = s->buf.len,
                      .headers = h,
                      .n_headers = mc_chain_result_headers(&b->task, h)};
    rc = mc_ctx_produce(ctx, &out);
    if (rc == MC_FORWARD_REFUSED) {
        /* Larger than a record may be: as the executor does with a Result Kafka refuses,
         * the task ends failed for good with a Result without the shards' list (a chain
         * or a job waiting on it sees it end), and goes to the dead topic (without itself
         * if even that is too large). No follow-ups: it did not succeed. */
        succeeded = false;
        outcome = MC_OUTCOME_FAILED_PERMANENTLY;
        res.outcome = outcome;
        res.error = "Kafka refused this Result (larger than a record may be); the task is in "
                    "the dead topic";
        res.response_body = NULL; /* freed: the list is what made it too large */
        res.response_body_len = 0;
        res.response_size = -1;
        mc_buf_reset(&s->buf);
        if (mc_encode_result(&res, &s->buf) != 0)
            return -1;
        out.value = s->buf.data;
        out.value_len = s->buf.len;
        rc = mc_ctx_produce(ctx, &out);
        if ((rc != 0 && rc != MC_FORWARD_REFUSED) || refused(s, p, e, b, cause, ctx) != 0)
            return -1;
    } else if (rc != 0) {
        return -1;
    }
    if (succeeded && rc == 0 && submit_follow_ups(s, &b->task, key, finished_at, cause, ctx) != 0)
        return -1;
    if (mc_ctx_forward(ctx, s->broadcast_log, p->partition, e->key, e->node.key_len, NULL, 0) != 0)
        return -1;
    mc_counter_add(succeeded                         ? s->broadcasts_succeeded
                   : outcome == MC_OUTCOME_CANCELLED ? s->broadcasts_cancelled
                                                     : s->broadcasts_failed,
                   1);
    broadcast_remove(s, p, e);
    mc_ctx_request_commit_now(ctx); /* a chain's next link or a job may wait on it */
    return 0;
}

/* The bound passed with shards unreported: the broadcast ends failed. 0, or -1. */
static int end_stale(jobs *s, job_part *p, broadcast_entry *e, int64_t now, mc_ctx *ctx)
{
    mc_start_broadcast b;
    if (held_state(s, e, &b) != 0)
        return -1;
    char key[MC_MAX_TASK_KEY_LEN + 1], ended[24], total[24];
    snprintf(key, sizeof key, "%.*s", (int)e->node.key_len, e->key);
    snprintf(ended, sizeof ended, "%zu", b.n_ended);
    snprintf(total, sizeof total, "%zu", b.n_members);
    mc_log(s->logger, MC_LOG_WARN,
           "broadcast given up on after its stale bound: some shards gave no final Result", "key",
           key, "ended", ended, "shards", total, (const char *)NULL);
    mc_counter_add(s->broadcasts_stale, 1);
    return finish(s, p, e, &b, END_STALE, 0, now, NULL, ctx);
}

int jobs_broadcasts_punctuate(jobs *s, job_part *p, int64_t now, size_t *budget, mc_ctx *ctx)
{
    mc_timer *due[256];
    while (*budget > 0) {
        size_t want = *budget < 256 ? *budget : 256;
        size_t got = mc_wheel_advance(p->broadcast_timers, now, due, want);
        for (size_t k = 0; k < got; k++)
            if (end_stale(s, p, MC_TIMER_OWNER(due[k], broadcast_entry, timer), now, ctx) != 0)
                return -1;
        *budget -= got;
        if (got < want)
            break;
    }
    return 0;
}

/* ---- commands ------------------------------------------------------------------------ */

static int start_broadcast(jobs *s, job_part *p, const mc_record *r, const mc_start_broadcast *c,
                           mc_ctx *ctx)
{
    /* Any version: one written before a growth of the partition count is shifted below
     * zero (layout.h), and a newer command's is still the larger. */
    if (c->n_members == 0 || c->n_members > MC_GROUP_MEMBERS_MAX) {
        char reason[200];
        snprintf(reason, sizeof reason, "jobs: invalid StartBroadcast: %zu members (1 to %d)",
                 c->n_members, MC_GROUP_MEMBERS_MAX);
        return mc_ctx_dead_letter(ctx, r, reason, NULL);
    }
    broadcast_entry *old = find_broadcast(p, r->key, r->key_len);
    if (old && c->version <= old->version)
        return 0; /* the same one again, or an older submission's */
    if (old) {
        /* The client submitted the task again while its shards ran: the older
         * broadcast ends CANCELLED, and the newer submission's starts. */
        mc_start_broadcast was;
        if (held_state(s, old, &was) != 0)
            return -1;
        char key[MC_MAX_TASK_KEY_LEN + 1], was_v[24], now_v[24];
        snprintf(key, sizeof key, "%.*s", (int)r->key_len, (const char *)r->key);
        snprintf(was_v, sizeof was_v, "%" PRId64, old->version);
        snprintf(now_v, sizeof now_v, "%" PRId64, c->version);
        mc_log(s->logger, MC_LOG_WARN,
               "broadcast replaced by a newer submission of its task before every shard "
               "reported; the older one ends CANCELLED",
               "key", key, "version", was_v, "new_version", now_v, (const char *)NULL);
        mc_counter_add(s->broadcasts_replaced, 1);
        if (finish(s, p, old, &was, END_REPLACED, c->version, mc_ctx_now_ms(ctx), r, ctx) != 0)
            return -1;
    }
    mc_start_broadcast b = *c;
    b.ended = NULL;
    b.n_ended = 0;
    /* The state keeps what the Result and the follow-ups need, not the call's body: the
     * shards' ends it gains (at most 8 bytes each) fit where the body was, so a state
     * grows past what Kafka took from the executor only for a task near the record limit
     * whose bulk is not its body. */
    b.task.callback.body = NULL;
    b.task.callback.body_len = 0;
    size_t len;
    uint8_t *v = encode_state(s, &b, &len);
    broadcast_entry *e = v ? broadcast_new(s, p, r->key, r->key_len, v, len) : NULL;
    if (!e) {
        free(v);
        return -1;
    }
    e->version = b.version;
    e->stale_at = stale_at(s, &b);
    mc_counter_add(s->broadcasts_started, 1);
    if (write_state(s, p, e, ctx) != 0)
        return -1;
    /* Read late (from a backlog), its bound may have passed: its shards' ends may
     * follow in the same backlog. */
    return broadcast_arm(p, e, mc_ctx_now_ms(ctx) + RESTORE_GRACE_MS, ctx);
}

static int shard_done(jobs *s, job_part *p, const mc_record *r, const mc_shard_done *d, mc_ctx *ctx)
{
    broadcast_entry *e = find_broadcast(p, r->key, r->key_len);
    if (!e || d->version != e->version || d->end.outcome == MC_OUTCOME_FAILED_WILL_RETRY)
        return 0; /* ended already (stale), replaced, or not a final end */
    mc_start_broadcast b;
    if (held_state(s, e, &b) != 0)
        return -1;
    if (d->end.shard < 0 || (size_t)d->end.shard >= b.n_members || end_of(&b, d->end.shard))
        return 0; /* not one of its shards, or its end relayed twice */
    mc_shard_end *ended = mc_arena_alloc(s->link_arena, (b.n_ended + 1) * sizeof *ended);
    if (!ended)
        return -1;
    if (b.n_ended)
        memcpy(ended, b.ended, b.n_ended * sizeof *ended);
    ended[b.n_ended++] = d->end;
    b.ended = ended;
    if (b.n_ended == b.n_members)
        return finish(s, p, e, &b, END_SHARDS, 0, mc_ctx_now_ms(ctx), r, ctx);
    size_t len;
    uint8_t *v = encode_state(s, &b, &len);
    if (!v)
        return -1;
    free(e->value);
    e->value = v;
    e->value_len = len;
    e->stale_at = stale_at(s, &b);
    if (broadcast_arm(p, e, mc_ctx_now_ms(ctx), ctx) != 0)
        return -1;
    return write_state(s, p, e, ctx);
}

int jobs_broadcast_command(jobs *s, job_part *p, const mc_record *r, const mc_job_command *c,
                           mc_ctx *ctx)
{
    switch (c->kind) {
    case MC_JOBCMD_START_BROADCAST:
        return start_broadcast(s, p, r, &c->start_broadcast, ctx);
    case MC_JOBCMD_SHARD_DONE:
        return shard_done(s, p, r, &c->shard_done, ctx);
    default:
        return 0;
    }
}

/* ---- the relay ------------------------------------------------------------------------ */

int jobs_broadcast_relay(jobs *s, const mc_record *r, mc_ctx *ctx)
{
    const char *parent;
    size_t parent_len;
    mc_shard_ref shard;
    mc_result res;
    if (!r->value || !mc_broadcast_result_shard(r, &parent, &parent_len, &shard) ||
        !jobs_final_result(s, r, &res))
        return 0;
    char task_id[MC_MAX_TASK_KEY_LEN];
    memcpy(task_id, parent, parent_len); /* shorter than MC_MAX_TASK_KEY_LEN */
    task_id[parent_len] = '\0';
    mc_job_command c = {.kind = MC_JOBCMD_SHARD_DONE};
    c.shard_done = (mc_shard_done){.app_id = res.app_id,
                                   .task_id = task_id,
                                   .version = shard.version,
                                   .end = {.shard = shard.index,
                                           .outcome = jobs_relayed_outcome(res.outcome),
                                           .finished_at = res.finished_at}};
    int rc = jobs_relay_command(s, res.app_id, task_id, &c, ctx);
    if (rc <= 0)
        return rc;
    mc_counter_add(s->shards_relayed, 1);
    mc_ctx_request_commit_now(ctx); /* the broadcast's Result may wait on it */
    return 0;
}

/* ---- restore --------------------------------------------------------------------------- */

bool jobs_broadcast_restore_record(jobs *s, job_part *p, const mc_record *m)
{
    if (!m->key)
        return true;
    broadcast_entry *old = find_broadcast(p, m->key, m->key_len);
    if (old)
        broadcast_remove(s, p, old);
    if (!m->value)
        return true;
    mc_start_broadcast b;
    char detail[256];
    if (decode_state(s, m->value, m->value_len, &b, detail, sizeof detail) != 0) {
        /* Only we write it: a bug or tampering. Say so loudly; the rest of the
         * partition holds. */
        char off[24];
        snprintf(off, sizeof off, "%" PRId64, m->offset);
        mc_log(s->logger, MC_LOG_ERROR, "broadcasts changelog record skipped", "topic",
               s->broadcasts_topic, "offset", off, "error", detail, (const char *)NULL);
        return true;
    }
    /* Out of memory, the restore fails (and is done again): a broadcast skipped would
     * never get its Result. */
    uint8_t *v = malloc(m->value_len);
    broadcast_entry *e = v ? broadcast_new(s, p, m->key, m->key_len, v, m->value_len) : NULL;
    if (!e) {
        free(v);
        return false;
    }
    memcpy(v, m->value, m->value_len);
    e->version = b.version;
    e->stale_at = stale_at(s, &b);
    mc_counter_add(s->restored, 1);
    return true;
}

typedef struct arming {
    jobs *s;
    job_part *p;
    mc_ctx *ctx;
    int64_t not_before;
    bool failed;
} arming;

static void arm_broadcast(mc_keynode *n, void *arg)
{
    arming *a = arg;
    if (broadcast_arm(a->p, (broadcast_entry *)n, a->not_before, a->ctx) != 0)
        a->failed = true;
}

int jobs_broadcasts_arm(jobs *s, job_part *p, int64_t now, mc_ctx *ctx)
{
    /* Due already (the role was away past the bound), it waits for the backlog: the
     * shards' ends may be in it. */
    arming a = {s, p, ctx, now + RESTORE_GRACE_MS, false};
    mc_keymap_each(p->broadcasts, arm_broadcast, &a);
    return a.failed ? -1 : 0;
}

void jobs_broadcasts_metrics(jobs *s, mc_metrics *m)
{
    s->broadcasts_gauge = mc_metrics_gauge(m, "mooncake_broadcasts_open",
                                           "Sharding broadcasts waiting for their shards", NULL);
    s->broadcasts_started = mc_metrics_counter(m, "mooncake_broadcasts_started_total",
                                               "Sharding broadcasts opened (StartBroadcast)", NULL);
    s->broadcasts_succeeded = mc_metrics_counter(
        m, "mooncake_broadcasts_ended_total", "Sharding broadcasts ended, by their task's outcome",
        "outcome=\"SUCCEEDED\"");
    s->broadcasts_failed = mc_metrics_counter(m, "mooncake_broadcasts_ended_total",
                                              "Sharding broadcasts ended, by their task's outcome",
                                              "outcome=\"FAILED_PERMANENTLY\"");
    s->broadcasts_cancelled = mc_metrics_counter(
        m, "mooncake_broadcasts_ended_total", "Sharding broadcasts ended, by their task's outcome",
        "outcome=\"CANCELLED\"");
    s->broadcasts_stale = mc_metrics_counter(
        m, "mooncake_broadcasts_stale_total",
        "Sharding broadcasts ended by their stale bound with shards unreported", NULL);
    s->broadcasts_replaced = mc_metrics_counter(
        m, "mooncake_broadcasts_replaced_total",
        "Open sharding broadcasts replaced by a newer submission of their task", NULL);
    s->shards_relayed =
        mc_metrics_counter(m, "mooncake_broadcast_shards_relayed_total",
                           "Final Results of shards relayed to their broadcast", NULL);
}
