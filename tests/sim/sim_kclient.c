/* The runner's Kafka client on the in-memory cluster, with faults on cue
 * (see sim_kclient.h). What it models of librdkafka: rebalance callbacks
 * served from inside poll, assign/seek/pause/position on a fetch position
 * per partition, read_committed delivery that stops at an open transaction,
 * transactions on several producers with their own transactional ids,
 * offsets sent into a transaction and committed with it, a stale
 * generation refused at send_offsets (KIP-447), fencing by a successor,
 * and the error classes of every transactional call. */
#include "sim_kclient.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka.h"
#include "sim_broker.h"

#define SK_MAX_PRODUCERS 4
#define SK_MAX_EVENTS 8

typedef struct sk_part {
    char topic[256];
    int32_t partition;
    int64_t fetch; /* next offset to look at */
    bool paused;
} sk_part;

typedef struct sk_event {
    mc_rebalance what;
    int32_t *partitions; /* for an assignment */
    size_t n;
} sk_event;

typedef struct sk_fault {
    int fail_times;
    mc_kerr_class cls;
    rd_kafka_resp_err_t code;
    int64_t delay_ms;
    void (*during)(void *arg);
    void *during_arg;
    bool lose;
} sk_fault;

typedef struct sk_producer {
    char txid[700];
    uint64_t txn;                             /* the open transaction, 0: none */
    rd_kafka_topic_partition_list_t *offsets; /* sent into it */
} sk_producer;

struct sim_kclient {
    mc_kclient base;
    sim_kafka *k;
    char group[300];
    char **topics; /* subscribed */
    size_t n_topics;
    bool member, leaving;
    uint64_t generation; /* of our last assignment */
    bool lost;
    bool fenced, consumer_fenced;
    int64_t gone_until;
    sk_part *parts;
    size_t n_parts;
    size_t rr;
    sk_event events[SK_MAX_EVENTS];
    size_t n_events;
    sk_producer prod[SK_MAX_PRODUCERS];
    char **outputs;
    size_t n_outputs;
    sk_fault faults[SIM_KC_N_OPS];
    int calls[SIM_KC_N_OPS];
    void (*trace)(void *arg, const char *op);
    void *trace_arg;
    void (*on_sleep)(void *arg);
    void *on_sleep_arg;
};

#define SK_OF(kc) ((sim_kclient *)(void *)(kc))

static const char *const op_names[SIM_KC_N_OPS] = {"init_transactions", "begin", "send_offsets",
                                                   "commit", "abort"};

static void trace(sim_kclient *c, const char *op)
{
    if (c->trace)
        c->trace(c->trace_arg, op);
}

static void queue_event(sim_kclient *c, mc_rebalance what, const int32_t *partitions, size_t n)
{
    if (c->n_events == SK_MAX_EVENTS) {
        fprintf(stderr, "sim_kclient: too many rebalances queued\n");
        abort();
    }
    sk_event *e = &c->events[c->n_events++];
    e->what = what;
    e->n = n;
    e->partitions = n ? simb_dup_bytes(partitions, n * sizeof *partitions) : NULL;
}

static void set_error(mc_kerror *e, mc_kerr_class cls, rd_kafka_resp_err_t code, const char *what)
{
    e->cls = cls;
    e->code = code;
    snprintf(e->text, sizeof e->text, "%s: %s", what, rd_kafka_err2str(code));
}

/* The faults of one transactional call, in the order a real one meets them:
 * the group moving on, the time it takes, the broker, fencing, an injected
 * failure. 0 when the call may go ahead. */
static int enter(sim_kclient *c, sim_kc_op op, mc_kerror *e)
{
    sk_fault *f = &c->faults[op];
    c->calls[op]++;
    trace(c, op_names[op]);
    if (f->lose) {
        f->lose = false;
        sim_kc_lose(c);
    }
    if (f->delay_ms) {
        sim_advance(c->k, f->delay_ms);
        f->delay_ms = 0;
        if (f->during)
            f->during(f->during_arg);
    }
    if (sim_now(c->k) < c->gone_until) {
        sim_advance(c->k, 1000);
        set_error(e, MC_KERR_RETRIABLE, RD_KAFKA_RESP_ERR__TIMED_OUT, op_names[op]);
        return -1;
    }
    if (c->fenced && op != SIM_KC_INIT) {
        set_error(e, MC_KERR_FATAL, RD_KAFKA_RESP_ERR__FENCED, op_names[op]);
        return -1;
    }
    if (f->fail_times > 0) {
        f->fail_times--;
        set_error(e, f->cls, f->code, op_names[op]);
        return -1;
    }
    return 0;
}

/* ---- the clock ---- */

static int64_t sk_now(mc_kclient *kc)
{
    return sim_now(SK_OF(kc)->k);
}

static void sk_sleep(mc_kclient *kc, int ms)
{
    sim_kclient *c = SK_OF(kc);
    sim_advance(c->k, ms);
    if (c->on_sleep)
        c->on_sleep(c->on_sleep_arg);
}

/* ---- the consumer ---- */

static sk_part *part_find(sim_kclient *c, const char *topic, int32_t partition)
{
    for (size_t i = 0; i < c->n_parts; i++)
        if (c->parts[i].partition == partition && strcmp(c->parts[i].topic, topic) == 0)
            return &c->parts[i];
    return NULL;
}

static rd_kafka_topic_partition_list_t *assignment_list(sim_kclient *c)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)c->n_parts + 1);
    for (size_t i = 0; i < c->n_parts; i++)
        rd_kafka_topic_partition_list_add(l, c->parts[i].topic, c->parts[i].partition);
    return l;
}

static rd_kafka_resp_err_t sk_subscribe(mc_kclient *kc,
                                        const rd_kafka_topic_partition_list_t *topics)
{
    sim_kclient *c = SK_OF(kc);
    for (int i = 0; i < topics->cnt; i++) {
        c->topics = simb_xrealloc(c->topics, (c->n_topics + 1) * sizeof *c->topics);
        c->topics[c->n_topics++] = simb_xstrdup(topics->elems[i].topic);
    }
    c->member = true; /* joined at once: the test says when partitions come */
    return RD_KAFKA_RESP_ERR_NO_ERROR;
}

/* Serves the first queued rebalance, as librdkafka calls the rebalance
 * callback from inside poll. */
static void serve_event(sim_kclient *c)
{
    sk_event e = c->events[0];
    memmove(c->events, c->events + 1, (c->n_events - 1) * sizeof *c->events);
    c->n_events--;
    trace(c, e.what == MC_REBALANCE_ASSIGN ? "rebalance assign" : "rebalance revoke");
    rd_kafka_topic_partition_list_t *l;
    if (e.what == MC_REBALANCE_ASSIGN) {
        c->generation = simb_group_get(c->k, c->group)->generation;
        l = rd_kafka_topic_partition_list_new((int)(e.n * c->n_topics) + 1);
        for (size_t t = 0; t < c->n_topics; t++)
            for (size_t i = 0; i < e.n; i++)
                rd_kafka_topic_partition_list_add(l, c->topics[t], e.partitions[i]);
    } else {
        l = assignment_list(c);
    }
    c->base.events.rebalance(c->base.events.arg, e.what,
                             e.what == MC_REBALANCE_ASSIGN ? RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS
                                                           : RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS,
                             l);
    rd_kafka_topic_partition_list_destroy(l);
    free(e.partitions);
}

/* The next record of one partition for a read_committed reader: markers and
 * aborted records skipped, nothing at or past an open transaction. */
static entry *next_committed(sim_kclient *c, sk_part *p, int64_t *offset)
{
    plog *l = simb_plog_of(c->k, p->topic, p->partition);
    while (l && p->fetch < (int64_t)l->n) {
        entry *e = &l->e[p->fetch];
        if (e->state == OPEN)
            return NULL;
        if (e->control || e->state == ABORTED) {
            p->fetch++;
            continue;
        }
        *offset = p->fetch++;
        return e;
    }
    return NULL;
}

static int sk_poll(mc_kclient *kc, int timeout_ms, mc_kmsg *m)
{
    sim_kclient *c = SK_OF(kc);
    if (c->n_events) {
        serve_event(c);
        return 0;
    }
    if (sim_now(c->k) < c->gone_until) {
        sim_advance(c->k, timeout_ms);
        return 0;
    }
    for (size_t i = 0; i < c->n_parts; i++) {
        sk_part *p = &c->parts[(c->rr + i) % c->n_parts];
        if (p->paused)
            continue;
        int64_t offset;
        entry *e = next_committed(c, p, &offset);
        if (!e)
            continue;
        c->rr = (c->rr + i + 1) % c->n_parts;
        *m = (mc_kmsg){.rec = simb_entry_record(e, p->topic, p->partition, offset, sim_now(c->k))};
        return 1;
    }
    return 0;
}

static void sk_kmsg_done(mc_kclient *kc, mc_kmsg *m)
{
    (void)kc;
    (void)m;
}

static int sk_input_fd(mc_kclient *kc)
{
    (void)kc;
    return -1;
}

/* As rd_kafka_assign under eager rebalancing: parts replace the assignment. */
static rd_kafka_resp_err_t sk_assign(mc_kclient *kc, const rd_kafka_topic_partition_list_t *parts)
{
    sim_kclient *c = SK_OF(kc);
    c->lost = false;
    c->n_parts = 0;
    c->rr = 0;
    c->parts = simb_xrealloc(c->parts, (size_t)(parts->cnt + 1) * sizeof *c->parts);
    for (int i = 0; i < parts->cnt; i++) {
        const rd_kafka_topic_partition_t *tp = &parts->elems[i];
        sk_part *p = &c->parts[c->n_parts++];
        snprintf(p->topic, sizeof p->topic, "%s", tp->topic);
        p->partition = tp->partition;
        p->paused = false;
        int64_t committed = sim_committed(c->k, c->group, tp->topic, tp->partition, NULL);
        p->fetch = tp->offset >= 0 ? tp->offset : committed >= 0 ? committed : 0;
    }
    return RD_KAFKA_RESP_ERR_NO_ERROR;
}

/* As rd_kafka_assign(NULL) under eager rebalancing: everything goes. */
static rd_kafka_resp_err_t sk_unassign(mc_kclient *kc)
{
    sim_kclient *c = SK_OF(kc);
    c->lost = false;
    c->n_parts = 0;
    c->rr = 0;
    if (c->leaving)
        c->member = false; /* the LeaveGroup after the revoke */
    return RD_KAFKA_RESP_ERR_NO_ERROR;
}

static rd_kafka_resp_err_t sk_assignment(mc_kclient *kc, rd_kafka_topic_partition_list_t **parts)
{
    *parts = assignment_list(SK_OF(kc));
    return RD_KAFKA_RESP_ERR_NO_ERROR;
}

static bool sk_assignment_lost(mc_kclient *kc)
{
    return SK_OF(kc)->lost;
}

static rd_kafka_resp_err_t sk_committed(mc_kclient *kc, rd_kafka_topic_partition_list_t *parts,
                                        int timeout_ms)
{
    (void)timeout_ms;
    sim_kclient *c = SK_OF(kc);
    for (int i = 0; i < parts->cnt; i++) {
        rd_kafka_topic_partition_t *tp = &parts->elems[i];
        const char *md = "";
        int64_t off = sim_committed(c->k, c->group, tp->topic, tp->partition, &md);
        tp->offset = off >= 0 ? off : RD_KAFKA_OFFSET_INVALID;
        free(tp->metadata);
        tp->metadata = NULL;
        tp->metadata_size = 0;
        if (*md) {
            tp->metadata = simb_xstrdup(md);
            tp->metadata_size = strlen(md);
        }
    }
    return RD_KAFKA_RESP_ERR_NO_ERROR;
}

static int sk_seek(mc_kclient *kc, rd_kafka_topic_partition_list_t *parts, int timeout_ms,
                   mc_kerror *e)
{
    (void)timeout_ms;
    (void)e;
    sim_kclient *c = SK_OF(kc);
    for (int i = 0; i < parts->cnt; i++) {
        sk_part *p = part_find(c, parts->elems[i].topic, parts->elems[i].partition);
        if (!p)
            continue;
        int64_t off = parts->elems[i].offset;
        p->fetch = off == RD_KAFKA_OFFSET_BEGINNING ? 0
                   : off == RD_KAFKA_OFFSET_END     ? sim_end_offset(c->k, p->topic, p->partition)
                                                    : off;
    }
    return 0;
}

static rd_kafka_resp_err_t sk_pause(mc_kclient *kc, rd_kafka_topic_partition_list_t *parts,
                                    bool pause)
{
    sim_kclient *c = SK_OF(kc);
    for (int i = 0; i < parts->cnt; i++) {
        sk_part *p = part_find(c, parts->elems[i].topic, parts->elems[i].partition);
        if (p)
            p->paused = pause;
    }
    return RD_KAFKA_RESP_ERR_NO_ERROR;
}

static rd_kafka_resp_err_t sk_position(mc_kclient *kc, rd_kafka_topic_partition_list_t *parts)
{
    sim_kclient *c = SK_OF(kc);
    for (int i = 0; i < parts->cnt; i++) {
        sk_part *p = part_find(c, parts->elems[i].topic, parts->elems[i].partition);
        parts->elems[i].offset = p ? p->fetch : RD_KAFKA_OFFSET_INVALID;
        parts->elems[i].err = p ? RD_KAFKA_RESP_ERR_NO_ERROR : RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION;
    }
    return RD_KAFKA_RESP_ERR_NO_ERROR;
}

static int sk_watermarks(mc_kclient *kc, const char *topic, int32_t partition, int64_t *lo,
                         int64_t *hi)
{
    *lo = 0;
    *hi = sim_end_offset(SK_OF(kc)->k, topic, partition);
    return *hi < 0 ? -1 : 0;
}

static bool sk_consumer_fatal(mc_kclient *kc, char *why, size_t whylen)
{
    sim_kclient *c = SK_OF(kc);
    if (c->consumer_fenced && why)
        snprintf(why, whylen, "fenced: a static member with our group.instance.id joined");
    return c->consumer_fenced;
}

static bool sk_is_member(mc_kclient *kc)
{
    return SK_OF(kc)->member;
}

static int sk_session_timeout_ms(mc_kclient *kc)
{
    (void)kc;
    return 10000;
}

static rd_kafka_resp_err_t sk_unsubscribe(mc_kclient *kc)
{
    sim_kclient *c = SK_OF(kc);
    trace(c, "unsubscribe");
    c->leaving = true;
    if (c->n_parts)
        queue_event(c, MC_REBALANCE_REVOKE, NULL, 0);
    else
        c->member = false;
    return RD_KAFKA_RESP_ERR_NO_ERROR;
}

static void sk_close(mc_kclient *kc)
{
    sim_kclient *c = SK_OF(kc);
    trace(c, "close");
    c->member = false;
}

/* ---- the producers ---- */

static int sk_init_transactions(mc_kclient *kc, int producer, int timeout_ms, mc_kerror *e)
{
    (void)timeout_ms;
    sim_kclient *c = SK_OF(kc);
    if (enter(c, SIM_KC_INIT, e) != 0)
        return -1;
    simb_fence_transactional_id(c->k, c->prod[producer].txid);
    return 0;
}

static int sk_begin(mc_kclient *kc, int producer, mc_kerror *e)
{
    sim_kclient *c = SK_OF(kc);
    sk_producer *p = &c->prod[producer];
    if (enter(c, SIM_KC_BEGIN, e) != 0)
        return -1;
    if (p->txn) {
        set_error(e, MC_KERR_UNEXPECTED, RD_KAFKA_RESP_ERR__STATE, "begin: already open");
        return -1;
    }
    p->txn = simb_txn_begin(c->k, p->txid);
    return 0;
}

static void *sk_output(mc_kclient *kc, const char *topic)
{
    sim_kclient *c = SK_OF(kc);
    c->outputs = simb_xrealloc(c->outputs, (c->n_outputs + 1) * sizeof *c->outputs);
    c->outputs[c->n_outputs] = simb_xstrdup(topic);
    return c->outputs[c->n_outputs++];
}

static rd_kafka_resp_err_t sk_produce(mc_kclient *kc, int producer, void *output, int32_t partition,
                                      const mc_produce *mp, size_t ref)
{
    (void)ref;
    sim_kclient *c = SK_OF(kc);
    sk_producer *p = &c->prod[producer];
    const char *name = output;
    trace(c, "produce");
    if (c->fenced)
        return RD_KAFKA_RESP_ERR__FATAL;
    if (!p->txn || !simb_txn_find(c->k, p->txn) || !simb_txn_find(c->k, p->txn)->open)
        return RD_KAFKA_RESP_ERR__STATE;
    topic *t = simb_topic_get(c->k, name);
    size_t bytes = (mp->key ? mp->key_len : 0) + (mp->value ? mp->value_len : 0);
    if (t->max_bytes && bytes > t->max_bytes)
        return RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE;
    if (partition == RD_KAFKA_PARTITION_UA)
        partition = mc_key_partition(mp->key, mp->key_len, t->n);
    if (partition < 0 || partition >= t->n)
        return RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION;
    entry e =
        simb_make_entry(mp->key, mp->key_len, mp->value, mp->value_len, mp->headers, mp->n_headers);
    return simb_txn_produce(c->k, p->txn, name, partition, e) < 0
               ? RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION
               : RD_KAFKA_RESP_ERR_NO_ERROR;
}

/* Records are appended when produced: nothing is ever in flight. */
static rd_kafka_resp_err_t sk_flush(mc_kclient *kc, int producer, int timeout_ms)
{
    (void)kc;
    (void)producer;
    (void)timeout_ms;
    return RD_KAFKA_RESP_ERR_NO_ERROR;
}

static int sk_outq_len(mc_kclient *kc, int producer)
{
    (void)kc;
    (void)producer;
    return 0;
}

static void sk_serve(mc_kclient *kc, int producer, int timeout_ms)
{
    (void)kc;
    (void)producer;
    (void)timeout_ms;
}

static int sk_send_offsets(mc_kclient *kc, int producer,
                           const rd_kafka_topic_partition_list_t *offsets, int timeout_ms,
                           mc_kerror *e)
{
    (void)timeout_ms;
    sim_kclient *c = SK_OF(kc);
    sk_producer *p = &c->prod[producer];
    if (enter(c, SIM_KC_SEND_OFFSETS, e) != 0)
        return -1;
    if (c->generation != simb_group_get(c->k, c->group)->generation) {
        /* The coordinator checks the member's generation (KIP-447): a
         * zombie's offsets are refused, and its transaction must abort. */
        set_error(e, MC_KERR_ABORTABLE, RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION, "send_offsets");
        return -1;
    }
    if (!p->offsets)
        p->offsets = rd_kafka_topic_partition_list_new(offsets->cnt + 1);
    for (int i = 0; i < offsets->cnt; i++) {
        const rd_kafka_topic_partition_t *o = &offsets->elems[i];
        rd_kafka_topic_partition_t *d =
            rd_kafka_topic_partition_list_find(p->offsets, o->topic, o->partition);
        if (!d)
            d = rd_kafka_topic_partition_list_add(p->offsets, o->topic, o->partition);
        d->offset = o->offset;
        free(d->metadata);
        d->metadata = o->metadata_size ? simb_dup_bytes(o->metadata, o->metadata_size) : NULL;
        d->metadata_size = o->metadata_size;
    }
    return 0;
}

static void end_txn(sim_kclient *c, sk_producer *p, bool commit)
{
    if (commit && p->offsets)
        for (int i = 0; i < p->offsets->cnt; i++) {
            const rd_kafka_topic_partition_t *o = &p->offsets->elems[i];
            char *md = o->metadata_size ? strndup(o->metadata, o->metadata_size) : NULL;
            simb_offset_store(c->k, c->group, o->topic, o->partition, o->offset, md);
            free(md);
        }
    if (p->offsets)
        rd_kafka_topic_partition_list_destroy(p->offsets);
    p->offsets = NULL;
    if (p->txn)
        simb_txn_end(c->k, p->txn, commit);
    p->txn = 0;
}

static int sk_commit(mc_kclient *kc, int producer, int timeout_ms, mc_kerror *e)
{
    (void)timeout_ms;
    sim_kclient *c = SK_OF(kc);
    if (enter(c, SIM_KC_COMMIT, e) != 0)
        return -1;
    end_txn(c, &c->prod[producer], true);
    return 0;
}

static int sk_abort(mc_kclient *kc, int producer, int timeout_ms, mc_kerror *e)
{
    (void)timeout_ms;
    sim_kclient *c = SK_OF(kc);
    if (enter(c, SIM_KC_ABORT, e) != 0)
        return -1;
    end_txn(c, &c->prod[producer], false);
    return 0;
}

static bool sk_producer_fatal(mc_kclient *kc, int producer)
{
    (void)producer;
    return SK_OF(kc)->fenced;
}

/* ---- questions about topics ---- */

static int sk_partition_count(mc_kclient *kc, const char *topic, int producer, int timeout_ms,
                              char *err, size_t errlen)
{
    (void)producer;
    (void)timeout_ms;
    (void)err;
    (void)errlen;
    return sim_partitions(SK_OF(kc)->k, topic);
}

static int64_t sk_end_offset(mc_kclient *kc, const char *topic, int32_t partition, int timeout_ms,
                             char *err, size_t errlen)
{
    (void)timeout_ms;
    int64_t end = sim_end_offset(SK_OF(kc)->k, topic, partition);
    if (end < 0)
        snprintf(err, errlen, "%s has no partition %d", topic, (int)partition);
    return end;
}

/* The last stable offset: the first record of a transaction still open. */
static int64_t stable_end(sim_kafka *k, const char *topic, int32_t partition)
{
    plog *l = simb_plog_of(k, topic, partition);
    if (!l)
        return -1;
    for (size_t i = 0; i < l->n; i++)
        if (l->e[i].state == OPEN)
            return (int64_t)i;
    return (int64_t)l->n;
}

static int sk_list_ends(mc_kclient *kc, int producer, const char *const *topics, size_t n_topics,
                        const int32_t *partitions, size_t n_partitions, int64_t *ends,
                        int timeout_ms, char *err, size_t errlen)
{
    (void)timeout_ms;
    sim_kafka *k = SK_OF(kc)->k;
    for (size_t p = 0; p < n_partitions; p++)
        for (size_t t = 0; t < n_topics; t++) {
            int64_t end = producer < 0 ? stable_end(k, topics[t], partitions[p])
                                       : sim_end_offset(k, topics[t], partitions[p]);
            if (end < 0) {
                snprintf(err, errlen, "%s has no partition %d", topics[t], (int)partitions[p]);
                return -1;
            }
            ends[p * n_topics + t] = end;
        }
    return 0;
}

static int sk_high_watermarks(mc_kclient *kc, const char *topic, const int32_t *partitions,
                              size_t n, int64_t *ends, int timeout_ms, char *err, size_t errlen)
{
    const char *topics[] = {topic};
    return sk_list_ends(kc, 0, topics, 1, partitions, n, ends, timeout_ms, err, errlen);
}

static int sk_restore(mc_kclient *kc, const char *topic, const int32_t *partitions, size_t n,
                      mc_restore_fn fn, void *arg, void (*tick)(void *), void *tick_arg,
                      mc_restore_stats *stats)
{
    if (tick)
        tick(tick_arg);
    return simb_restore(SK_OF(kc)->k, topic, partitions, n, fn, arg, stats);
}

static void sk_free(mc_kclient *kc)
{
    sim_kclient *c = SK_OF(kc);
    for (size_t i = 0; i < c->n_topics; i++)
        free(c->topics[i]);
    free(c->topics);
    for (size_t i = 0; i < c->n_outputs; i++)
        free(c->outputs[i]);
    free(c->outputs);
    for (size_t i = 0; i < c->n_events; i++)
        free(c->events[i].partitions);
    for (int i = 0; i < SK_MAX_PRODUCERS; i++)
        if (c->prod[i].offsets)
            rd_kafka_topic_partition_list_destroy(c->prod[i].offsets);
    free(c->parts);
    free(c);
}

static const mc_kclient_ops sim_ops = {
    .mono_ms = sk_now,
    .wall_ms = sk_now,
    .sleep_ms = sk_sleep,
    .subscribe = sk_subscribe,
    .poll = sk_poll,
    .kmsg_done = sk_kmsg_done,
    .input_fd = sk_input_fd,
    .assign = sk_assign,
    .unassign = sk_unassign,
    .assignment = sk_assignment,
    .assignment_lost = sk_assignment_lost,
    .committed = sk_committed,
    .seek = sk_seek,
    .pause = sk_pause,
    .position = sk_position,
    .watermarks = sk_watermarks,
    .consumer_fatal = sk_consumer_fatal,
    .is_member = sk_is_member,
    .session_timeout_ms = sk_session_timeout_ms,
    .unsubscribe = sk_unsubscribe,
    .close = sk_close,
    .init_transactions = sk_init_transactions,
    .begin = sk_begin,
    .output = sk_output,
    .produce = sk_produce,
    .flush = sk_flush,
    .outq_len = sk_outq_len,
    .serve = sk_serve,
    .send_offsets = sk_send_offsets,
    .commit = sk_commit,
    .abort = sk_abort,
    .producer_fatal = sk_producer_fatal,
    .partition_count = sk_partition_count,
    .end_offset = sk_end_offset,
    .list_ends = sk_list_ends,
    .high_watermarks = sk_high_watermarks,
    .restore = sk_restore,
    .free = sk_free,
};

mc_kclient *sim_kclient_factory(const mc_kclient_spec *spec, void *arg, char *err, size_t errlen)
{
    sim_kclient_slot *slot = arg;
    if (spec->n_producers < 1 || spec->n_producers > SK_MAX_PRODUCERS) {
        snprintf(err, errlen, "between 1 and %d producers", SK_MAX_PRODUCERS);
        return NULL;
    }
    sim_kclient *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->base.ops = &sim_ops;
    c->base.n_producers = spec->n_producers;
    c->k = slot->k;
    snprintf(c->group, sizeof c->group, "%s", spec->group_id);
    for (int i = 0; i < spec->n_producers; i++) {
        if (i == 0)
            snprintf(c->prod[i].txid, sizeof c->prod[i].txid, "%s", spec->transactional_id);
        else
            snprintf(c->prod[i].txid, sizeof c->prod[i].txid, "%s~%d", spec->transactional_id, i);
    }
    slot->made = c;
    return &c->base;
}

/* ---- what the test does ---- */

void sim_kc_fail(sim_kclient *c, sim_kc_op op, mc_kerr_class cls, rd_kafka_resp_err_t code,
                 int times)
{
    c->faults[op].fail_times = times;
    c->faults[op].cls = cls;
    c->faults[op].code = code;
}

void sim_kc_delay(sim_kclient *c, sim_kc_op op, int64_t ms, void (*during)(void *arg), void *arg)
{
    c->faults[op].delay_ms = ms;
    c->faults[op].during = during;
    c->faults[op].during_arg = arg;
}

void sim_kc_broker_gone(sim_kclient *c, int64_t ms)
{
    c->gone_until = sim_now(c->k) + ms;
}

void sim_kc_fence(sim_kclient *c, bool consumer_too)
{
    for (int i = 0; i < c->base.n_producers; i++)
        simb_fence_transactional_id(c->k, c->prod[i].txid);
    c->fenced = true;
    if (consumer_too) {
        c->consumer_fenced = true;
        c->n_parts = 0; /* a fenced static member unassigns by itself, without a callback */
    }
}

void sim_kc_lose_during(sim_kclient *c, sim_kc_op op)
{
    c->faults[op].lose = true;
}

void sim_kc_lose(sim_kclient *c)
{
    simb_group_get(c->k, c->group)->generation++;
    c->lost = true;
    queue_event(c, MC_REBALANCE_REVOKE, NULL, 0);
}

void sim_kc_assign(sim_kclient *c, const int32_t *partitions, size_t n)
{
    simb_group_get(c->k, c->group)->generation++;
    queue_event(c, MC_REBALANCE_ASSIGN, partitions, n);
}

void sim_kc_revoke(sim_kclient *c)
{
    queue_event(c, MC_REBALANCE_REVOKE, NULL, 0);
}

void sim_kc_trace(sim_kclient *c, void (*fn)(void *arg, const char *op), void *arg)
{
    c->trace = fn;
    c->trace_arg = arg;
}

void sim_kc_on_sleep(sim_kclient *c, void (*fn)(void *arg), void *arg)
{
    c->on_sleep = fn;
    c->on_sleep_arg = arg;
}

int sim_kc_calls(const sim_kclient *c, sim_kc_op op)
{
    return c->calls[op];
}

bool sim_kc_assigned(const sim_kclient *c, const char *topic, int32_t partition)
{
    for (size_t i = 0; i < c->n_parts; i++)
        if (c->parts[i].partition == partition && strcmp(c->parts[i].topic, topic) == 0)
            return true;
    return false;
}
