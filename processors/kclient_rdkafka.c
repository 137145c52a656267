/* The runner's Kafka client on librdkafka (kclient.h): a read_committed
 * consumer without auto-commit in a group with static membership, and the
 * transactional producers that take turns, configured for exactly-once and
 * tuned for a scheduler's latency. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "kafka.h"
#include "kclient.h"
#include "restore.h"

/* A crashed instance's partitions wait this long for a new owner, unless it
 * comes back under its id (static membership); -X session.timeout.ms wins. */
#define MC_SESSION_TIMEOUT_MS "10000"
#define MAX_PRODUCERS 4

typedef struct rk_output {
    rd_kafka_topic_t *rkt[MAX_PRODUCERS]; /* one handle per producer */
    struct rk_output *next;
} rk_output;

typedef struct rk_client {
    mc_logger logger; /* first: librdkafka's log callback reads its opaque as a logger */
    mc_kclient base;
    const mc_config *cfg;
    rd_kafka_t *consumer;
    rd_kafka_t *producers[MAX_PRODUCERS];
    rk_output *outputs;
    rd_kafka_queue_t *consumer_queue;
    int queue_pipe[2];
    mc_restorer *restorer; /* made on the first restore */
} rk_client;

#define RK_OF(kc) ((rk_client *)(void *)((char *)(kc)-offsetof(rk_client, base)))

static void set_error(mc_kerror *e, rd_kafka_error_t *error)
{
    if (rd_kafka_error_is_fatal(error))
        e->cls = MC_KERR_FATAL;
    else if (rd_kafka_error_txn_requires_abort(error))
        e->cls = MC_KERR_ABORTABLE;
    else if (rd_kafka_error_is_retriable(error))
        e->cls = MC_KERR_RETRIABLE;
    else
        e->cls = MC_KERR_UNEXPECTED;
    e->code = rd_kafka_error_code(error);
    snprintf(e->text, sizeof e->text, "%s", rd_kafka_error_string(error));
    rd_kafka_error_destroy(error);
}

/* 0 when error is NULL, else -1 with it classified into *e (and freed). */
static int result(rd_kafka_error_t *error, mc_kerror *e)
{
    if (!error)
        return 0;
    set_error(e, error);
    return -1;
}

/* ---- callbacks from librdkafka, on the runner's thread ---- */

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    (void)rk;
    rk_client *c = opaque;
    mc_rebalance what = err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS   ? MC_REBALANCE_ASSIGN
                        : err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS ? MC_REBALANCE_REVOKE
                                                                      : MC_REBALANCE_ERROR;
    c->base.events.rebalance(c->base.events.arg, what, err, parts);
}

static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    rk_client *c = opaque;
    if (!m->err)
        return;
    for (int i = 0; i < c->base.n_producers; i++)
        if (c->producers[i] == rk)
            c->base.events.delivery_failed(c->base.events.arg, i, (size_t)(uintptr_t)m->_private,
                                           rd_kafka_topic_name(m->rkt), m->err);
}

/* ---- the clock ---- */

static int64_t rk_mono_ms(mc_kclient *kc)
{
    (void)kc;
    return mc_mono_ms();
}

static int64_t rk_wall_ms(mc_kclient *kc)
{
    (void)kc;
    return mc_now_ms();
}

static void rk_sleep_ms(mc_kclient *kc, int ms)
{
    (void)kc;
    struct timespec pause = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&pause, NULL);
}

/* ---- the consumer ---- */

static rd_kafka_resp_err_t rk_subscribe(mc_kclient *kc,
                                        const rd_kafka_topic_partition_list_t *topics)
{
    return rd_kafka_subscribe(RK_OF(kc)->consumer, topics);
}

static int rk_poll(mc_kclient *kc, int timeout_ms, mc_kmsg *out)
{
    rd_kafka_message_t *m = rd_kafka_consumer_poll(RK_OF(kc)->consumer, timeout_ms);
    if (!m)
        return 0;
    out->handle = m;
    out->err = m->err;
    if (m->err)
        snprintf(out->errstr, sizeof out->errstr, "%s", rd_kafka_message_errstr(m));
    else
        out->rec = mc_kafka_record(m, rd_kafka_topic_name(m->rkt));
    return 1;
}

static void rk_kmsg_done(mc_kclient *kc, mc_kmsg *m)
{
    (void)kc;
    rd_kafka_message_destroy(m->handle);
    m->handle = NULL;
}

/* The consumer's queue as a file descriptor: librdkafka writes a byte to the
 * pipe whenever the queue goes from empty to non-empty (rebalances and
 * errors arrive on the same queue, since the main queue is forwarded to it). */
static int rk_input_fd(mc_kclient *kc)
{
    rk_client *c = RK_OF(kc);
    if (c->consumer_queue)
        return c->queue_pipe[0];
    if (c->queue_pipe[0] < 0 && pipe2(c->queue_pipe, O_NONBLOCK | O_CLOEXEC) != 0)
        return -2;
    c->consumer_queue = rd_kafka_queue_get_consumer(c->consumer);
    if (!c->consumer_queue)
        return -2;
    rd_kafka_queue_io_event_enable(c->consumer_queue, c->queue_pipe[1], "1", 1);
    return c->queue_pipe[0];
}

static rd_kafka_resp_err_t rk_assign(mc_kclient *kc, const rd_kafka_topic_partition_list_t *parts)
{
    return rd_kafka_assign(RK_OF(kc)->consumer, parts);
}

static rd_kafka_resp_err_t rk_unassign(mc_kclient *kc)
{
    return rd_kafka_assign(RK_OF(kc)->consumer, NULL);
}

static rd_kafka_resp_err_t rk_assignment(mc_kclient *kc, rd_kafka_topic_partition_list_t **parts)
{
    return rd_kafka_assignment(RK_OF(kc)->consumer, parts);
}

static bool rk_assignment_lost(mc_kclient *kc)
{
    return rd_kafka_assignment_lost(RK_OF(kc)->consumer) != 0;
}

static rd_kafka_resp_err_t rk_committed(mc_kclient *kc, rd_kafka_topic_partition_list_t *parts,
                                        int timeout_ms)
{
    return rd_kafka_committed(RK_OF(kc)->consumer, parts, timeout_ms);
}

static int rk_seek(mc_kclient *kc, rd_kafka_topic_partition_list_t *parts, int timeout_ms,
                   mc_kerror *e)
{
    return result(rd_kafka_seek_partitions(RK_OF(kc)->consumer, parts, timeout_ms), e);
}

static rd_kafka_resp_err_t rk_pause(mc_kclient *kc, rd_kafka_topic_partition_list_t *parts,
                                    bool pause)
{
    rd_kafka_t *c = RK_OF(kc)->consumer;
    return pause ? rd_kafka_pause_partitions(c, parts) : rd_kafka_resume_partitions(c, parts);
}

static rd_kafka_resp_err_t rk_position(mc_kclient *kc, rd_kafka_topic_partition_list_t *parts)
{
    return rd_kafka_position(RK_OF(kc)->consumer, parts);
}

static int rk_watermarks(mc_kclient *kc, const char *topic, int32_t partition, int64_t *lo,
                         int64_t *hi)
{
    return rd_kafka_get_watermark_offsets(RK_OF(kc)->consumer, topic, partition, lo, hi) ? -1 : 0;
}

static bool rk_consumer_fatal(mc_kclient *kc, char *why, size_t whylen)
{
    return rd_kafka_fatal_error(RK_OF(kc)->consumer, why, why ? whylen : 0) != 0;
}

/* A member id is held from the JoinGroup's answer until it leaves or is fenced. */
static bool rk_is_member(mc_kclient *kc)
{
    rd_kafka_t *c = RK_OF(kc)->consumer;
    char *member = rd_kafka_memberid(c);
    bool is = member && *member;
    if (member)
        rd_kafka_mem_free(c, member);
    return is;
}

static int rk_session_timeout_ms(mc_kclient *kc)
{
    char session[32] = MC_SESSION_TIMEOUT_MS;
    size_t session_len = sizeof session;
    rd_kafka_conf_get(rd_kafka_conf(RK_OF(kc)->consumer), "session.timeout.ms", session,
                      &session_len);
    return atoi(session);
}

static rd_kafka_resp_err_t rk_unsubscribe(mc_kclient *kc)
{
    return rd_kafka_unsubscribe(RK_OF(kc)->consumer);
}

static void rk_close(mc_kclient *kc)
{
    rd_kafka_consumer_close(RK_OF(kc)->consumer);
}

/* ---- the producers ---- */

static int rk_init_transactions(mc_kclient *kc, int producer, int timeout_ms, mc_kerror *e)
{
    return result(rd_kafka_init_transactions(RK_OF(kc)->producers[producer], timeout_ms), e);
}

static int rk_begin(mc_kclient *kc, int producer, mc_kerror *e)
{
    return result(rd_kafka_begin_transaction(RK_OF(kc)->producers[producer]), e);
}

static void *rk_output_of(mc_kclient *kc, const char *topic)
{
    rk_client *c = RK_OF(kc);
    rk_output *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    for (int i = 0; i < kc->n_producers; i++)
        if (!(o->rkt[i] = rd_kafka_topic_new(c->producers[i], topic, NULL))) {
            while (i-- > 0)
                rd_kafka_topic_destroy(o->rkt[i]);
            free(o);
            return NULL;
        }
    o->next = c->outputs;
    c->outputs = o;
    return o;
}

/* rd_kafka_produce() when there are no headers, since it is the cheaper call. */
static rd_kafka_resp_err_t rk_produce(mc_kclient *kc, int producer, void *output, int32_t partition,
                                      const mc_produce *p, size_t ref)
{
    rd_kafka_topic_t *rkt = ((rk_output *)output)->rkt[producer];
    void *opaque = (void *)(uintptr_t)ref;
    if (!p->n_headers)
        return rd_kafka_produce(rkt, partition, RD_KAFKA_MSG_F_COPY, (void *)p->value,
                                p->value ? p->value_len : 0, p->key, p->key_len, opaque)
                   ? rd_kafka_last_error()
                   : RD_KAFKA_RESP_ERR_NO_ERROR;
    rd_kafka_headers_t *h = rd_kafka_headers_new(p->n_headers);
    for (size_t i = 0; i < p->n_headers; i++)
        rd_kafka_header_add(h, p->headers[i].name, -1, p->headers[i].value,
                            (ssize_t)p->headers[i].len);
    rd_kafka_resp_err_t err =
        rd_kafka_producev(RK_OF(kc)->producers[producer], RD_KAFKA_V_RKT(rkt),
                          RD_KAFKA_V_PARTITION(partition), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                          RD_KAFKA_V_VALUE((void *)p->value, p->value ? p->value_len : 0),
                          RD_KAFKA_V_KEY(p->key, p->key_len), RD_KAFKA_V_OPAQUE(opaque),
                          RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
    if (err)
        rd_kafka_headers_destroy(h); /* producev only takes them over on success */
    return err;
}

static rd_kafka_resp_err_t rk_flush(mc_kclient *kc, int producer, int timeout_ms)
{
    return rd_kafka_flush(RK_OF(kc)->producers[producer], timeout_ms);
}

static int rk_outq_len(mc_kclient *kc, int producer)
{
    return rd_kafka_outq_len(RK_OF(kc)->producers[producer]);
}

static void rk_serve(mc_kclient *kc, int producer, int timeout_ms)
{
    rd_kafka_poll(RK_OF(kc)->producers[producer], timeout_ms);
}

static int rk_send_offsets(mc_kclient *kc, int producer,
                           const rd_kafka_topic_partition_list_t *offsets, int timeout_ms,
                           mc_kerror *e)
{
    rk_client *c = RK_OF(kc);
    rd_kafka_consumer_group_metadata_t *cgmd = rd_kafka_consumer_group_metadata(c->consumer);
    rd_kafka_error_t *error =
        rd_kafka_send_offsets_to_transaction(c->producers[producer], offsets, cgmd, timeout_ms);
    rd_kafka_consumer_group_metadata_destroy(cgmd);
    return result(error, e);
}

static int rk_commit(mc_kclient *kc, int producer, int timeout_ms, mc_kerror *e)
{
    return result(rd_kafka_commit_transaction(RK_OF(kc)->producers[producer], timeout_ms), e);
}

static int rk_abort(mc_kclient *kc, int producer, int timeout_ms, mc_kerror *e)
{
    return result(rd_kafka_abort_transaction(RK_OF(kc)->producers[producer], timeout_ms), e);
}

static bool rk_producer_fatal(mc_kclient *kc, int producer)
{
    return rd_kafka_fatal_error(RK_OF(kc)->producers[producer], NULL, 0) != 0;
}

/* ---- questions about topics ---- */

static rd_kafka_t *handle_of(rk_client *c, int producer)
{
    return producer < 0 ? c->consumer : c->producers[producer];
}

static int rk_partition_count(mc_kclient *kc, const char *topic, int producer, int timeout_ms,
                              char *err, size_t errlen)
{
    return mc_topic_partition_count(handle_of(RK_OF(kc), producer), topic, timeout_ms, err, errlen);
}

static int64_t rk_end_offset(mc_kclient *kc, const char *topic, int32_t partition, int timeout_ms,
                             char *err, size_t errlen)
{
    int64_t lo = 0, hi = 0;
    rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(RK_OF(kc)->consumer, topic, partition,
                                                             &lo, &hi, timeout_ms);
    if (e) {
        snprintf(err, errlen, "%s [%d]: %s", topic, (int)partition, rd_kafka_err2str(e));
        return -1;
    }
    return hi;
}

/* Through the consumer, the broker answers last stable offsets; through a
 * producer, high watermarks - and a producer refreshes the leaders of the
 * topics it writes when a request finds one moved. */
static int rk_list_ends(mc_kclient *kc, int producer, const char *const *topics, size_t n_topics,
                        const int32_t *partitions, size_t n_partitions, int64_t *ends,
                        int timeout_ms, char *err, size_t errlen)
{
    return mc_list_end_offsets(handle_of(RK_OF(kc), producer), topics, n_topics, partitions,
                               n_partitions, ends, timeout_ms, err, errlen);
}

/* The restorer's read_uncommitted handle answers high watermarks: the
 * consumer's and the producers' are read_committed. */
static mc_restorer *restorer_of(rk_client *c, char *err, size_t errlen)
{
    if (!c->restorer)
        c->restorer = mc_restorer_new(c->cfg, &c->logger, err, errlen);
    return c->restorer;
}

static int rk_high_watermarks(mc_kclient *kc, const char *topic, const int32_t *partitions,
                              size_t n, int64_t *ends, int timeout_ms, char *err, size_t errlen)
{
    mc_restorer *rs = restorer_of(RK_OF(kc), err, errlen);
    return rs ? mc_restorer_high_watermarks(rs, topic, partitions, n, ends, timeout_ms, err, errlen)
              : -1;
}

static int rk_restore(mc_kclient *kc, const char *topic, const int32_t *partitions, size_t n,
                      mc_restore_fn fn, void *arg, void (*tick)(void *), void *tick_arg,
                      mc_restore_stats *stats)
{
    rk_client *c = RK_OF(kc);
    char err[512];
    mc_restorer *rs = restorer_of(c, err, sizeof err);
    if (!rs) {
        mc_log(&c->logger, MC_LOG_ERROR, "cannot make the restore consumer", "error", err,
               (const char *)NULL);
        return -1;
    }
    return mc_restorer_run(rs, topic, partitions, n, fn, arg, tick, tick_arg, stats);
}

static void rk_free(mc_kclient *kc)
{
    rk_client *c = RK_OF(kc);
    while (c->outputs) {
        rk_output *o = c->outputs;
        c->outputs = o->next;
        for (int i = 0; i < kc->n_producers; i++)
            rd_kafka_topic_destroy(o->rkt[i]);
        free(o);
    }
    if (c->consumer_queue) {
        rd_kafka_queue_io_event_enable(c->consumer_queue, -1, NULL, 0);
        rd_kafka_queue_destroy(c->consumer_queue);
    }
    for (int i = 0; i < 2; i++)
        if (c->queue_pipe[i] >= 0)
            close(c->queue_pipe[i]);
    mc_restorer_free(c->restorer);
    if (c->consumer)
        rd_kafka_destroy(c->consumer);
    for (int i = 0; i < MAX_PRODUCERS; i++)
        if (c->producers[i])
            rd_kafka_destroy(c->producers[i]);
    free(c);
}

static const mc_kclient_ops rdkafka_ops = {
    .mono_ms = rk_mono_ms,
    .wall_ms = rk_wall_ms,
    .sleep_ms = rk_sleep_ms,
    .subscribe = rk_subscribe,
    .poll = rk_poll,
    .kmsg_done = rk_kmsg_done,
    .input_fd = rk_input_fd,
    .assign = rk_assign,
    .unassign = rk_unassign,
    .assignment = rk_assignment,
    .assignment_lost = rk_assignment_lost,
    .committed = rk_committed,
    .seek = rk_seek,
    .pause = rk_pause,
    .position = rk_position,
    .watermarks = rk_watermarks,
    .consumer_fatal = rk_consumer_fatal,
    .is_member = rk_is_member,
    .session_timeout_ms = rk_session_timeout_ms,
    .unsubscribe = rk_unsubscribe,
    .close = rk_close,
    .init_transactions = rk_init_transactions,
    .begin = rk_begin,
    .output = rk_output_of,
    .produce = rk_produce,
    .flush = rk_flush,
    .outq_len = rk_outq_len,
    .serve = rk_serve,
    .send_offsets = rk_send_offsets,
    .commit = rk_commit,
    .abort = rk_abort,
    .producer_fatal = rk_producer_fatal,
    .partition_count = rk_partition_count,
    .end_offset = rk_end_offset,
    .list_ends = rk_list_ends,
    .high_watermarks = rk_high_watermarks,
    .restore = rk_restore,
    .free = rk_free,
};

/* ---- set-up ---- */

/* The transactional producers' linger.ms at most (see make_producer). */
#define MAX_LINGER_MS 100

/* The consumer: read only committed data, never commit on its own (offsets
 * go through the producer's transaction), range assignment so partition N of
 * every input topic lands on the same instance. Rebalances are eager, not
 * cooperative: each member commits in its revoke callback, before the group
 * moves to its next generation. Under cooperative-sticky a member keeping
 * its partitions goes on through the rebalance, and the broker refuses its
 * open transaction's offsets (ILLEGAL_GENERATION) once the generation moves:
 * the abort repeated calls on every roll (docs/design/runtime.md). */
static rd_kafka_t *make_consumer(rk_client *c, const mc_kclient_spec *s, char *err, size_t errlen)
{
    const mc_config *cfg = s->cfg;
    rd_kafka_conf_t *cc = mc_kafka_conf_new(cfg, c, err, errlen);
    if (!cc)
        return NULL;
    /* librdkafka's default session (45 s) is long for a scheduler. */
    if (mc_kafka_conf_default(cfg, cc, "session.timeout.ms", MC_SESSION_TIMEOUT_MS, err, errlen) ||
        /* An eager rebalance waits until every member has rejoined, which
         * each does when a heartbeat tells it of the rebalance: every
         * partition of the group stands still that long. */
        mc_kafka_conf_default(cfg, cc, "heartbeat.interval.ms", "500", err, errlen) ||
        /* A record committed upstream reaches us within this when the broker
         * has nothing else to send; librdkafka's default (500 ms) would put
         * half a second into every hop - a cancel sent before the due time
         * would reach the wheel after it. */
        mc_kafka_conf_default(cfg, cc, "fetch.wait.max.ms", "20", err, errlen) ||
        /* A group takes new partitions at the metadata refresh after
         * they appear (mooncakectl partitions grow waits for it); five
         * minutes, the default, would hold a growth that long. */
        mc_kafka_conf_default(cfg, cc, "topic.metadata.refresh.interval.ms", "5000", err, errlen))
        goto fail;
    for (const char *const *kv = s->consumer_defaults; kv && kv[0] && kv[1]; kv += 2)
        if (mc_kafka_conf_default(cfg, cc, kv[0], kv[1], err, errlen))
            goto fail;
    if (mc_kafka_conf_set(cc, "group.id", s->group_id, err, errlen) ||
        mc_kafka_conf_set(cc, "isolation.level", "read_committed", err, errlen) ||
        mc_kafka_conf_set(cc, "enable.auto.commit", "false", err, errlen) ||
        mc_kafka_conf_set(cc, "auto.offset.reset", "earliest", err, errlen) ||
        mc_kafka_conf_set(cc, "partition.assignment.strategy", "range", err, errlen) ||
        mc_kafka_conf_set(cc, "max.poll.interval.ms", MC_KCLIENT_MAX_POLL_INTERVAL_TEXT, err,
                          errlen) ||
        /* Static membership (KIP-345): an instance killed and restarted under
         * the same id takes its member slot and its partitions back at once,
         * instead of waiting for the dead member's session to expire and a
         * rebalance. The id is the transactional one, stable per replica;
         * a graceful stop still leaves the group (the runner's leave). */
        mc_kafka_conf_set(cc, "group.instance.id", s->transactional_id, err, errlen))
        goto fail;
    if (s->advertise) {
        char id[512], why[256];
        if (mc_advertised_client_id(cfg, id, sizeof id, why, sizeof why) != 0)
            mc_log(&c->logger, MC_LOG_WARN, "other instances cannot forward questions here", "why",
                   why, (const char *)NULL);
        else if (mc_kafka_conf_set(cc, "client.id", id, err, errlen))
            goto fail;
    }
    rd_kafka_conf_set_rebalance_cb(cc, rebalance_cb);
    rd_kafka_t *rk = mc_kafka_new(RD_KAFKA_CONSUMER, cc, "consumer", err, errlen);
    if (rk)
        rd_kafka_poll_set_consumer(rk);
    return rk;
fail:
    rd_kafka_conf_destroy(cc);
    return NULL;
}

/* Transactional producer number `turn`: the first one's transactional.id is
 * the instance's, the others' add ~turn. Exactly-once needs the first
 * settings as they are; the tuning after them yields to -X. */
static rd_kafka_t *make_producer(rk_client *c, const mc_kclient_spec *s, int turn, char *err,
                                 size_t errlen)
{
    const mc_config *cfg = s->cfg;
    rd_kafka_conf_t *pc = mc_kafka_conf_new(cfg, c, err, errlen);
    if (!pc)
        return NULL;
    char buf[32], linger[32], txid[700];
    snprintf(buf, sizeof buf, "%d", cfg->transaction_timeout_ms);
    snprintf(linger, sizeof linger, "%d",
             cfg->commit_interval_ms < MAX_LINGER_MS ? cfg->commit_interval_ms : MAX_LINGER_MS);
    if (turn == 0)
        snprintf(txid, sizeof txid, "%s", s->transactional_id);
    else
        snprintf(txid, sizeof txid, "%s~%d", s->transactional_id, turn);
    if (mc_kafka_conf_set(pc, "transactional.id", txid, err, errlen) ||
        mc_kafka_conf_set(pc, "transaction.timeout.ms", buf, err, errlen) ||
        /* Error reports only, though every report would make each commit
         * 7 ms faster (commit_transaction's flush polls in steps of up to
         * 10 ms that only a report wakes early): at 5,000 tasks/s that did
         * more harm than good here (docs/performance.md). */
        mc_kafka_conf_set(pc, "delivery.report.only.error", "true", err, errlen) ||
        /* What this producer writes becomes visible at the commit, and the
         * commit flushes it at once (so does the runner's flush before a
         * commit asked for now): lingering up to the commit interval costs
         * at most the produce's round trip inside the commit, and sends a
         * partition's records of a transaction in one request instead of
         * one every few milliseconds. With 5 ms the broker threads spun on
         * their in-flight limit (5 requests per partition), and mooncake's
         * CPU per task was 40% higher. The cap keeps linger.ms below
         * message.timeout.ms (librdkafka's transaction timeout, >= 1 s),
         * which librdkafka requires, whatever --commit-interval-ms is. */
        mc_kafka_conf_default(cfg, pc, "linger.ms", linger, err, errlen) ||
        /* The broker answers CONCURRENT_TRANSACTIONS to the next
         * transaction's first requests while it still writes the last one's
         * markers; librdkafka retries AddOffsetsToTxn after retry.backoff.ms,
         * and the default 100 ms would put a floor under every commit (the
         * Java client uses 20 ms for this case, KAFKA-5477). */
        mc_kafka_conf_default(cfg, pc, "retry.backoff.ms", "5", err, errlen) ||
        mc_kafka_conf_default(cfg, pc, "queue.buffering.max.messages", "1000000", err, errlen)) {
        rd_kafka_conf_destroy(pc);
        return NULL;
    }
    rd_kafka_conf_set_dr_msg_cb(pc, dr_msg_cb);
    return mc_kafka_new(RD_KAFKA_PRODUCER, pc, "transactional producer", err, errlen);
}

mc_kclient *mc_kclient_rdkafka_new(const mc_kclient_spec *spec, char *err, size_t errlen)
{
    if (spec->n_producers < 1 || spec->n_producers > MAX_PRODUCERS) {
        snprintf(err, errlen, "between 1 and %d producers", MAX_PRODUCERS);
        return NULL;
    }
    rk_client *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->logger = *spec->logger;
    c->cfg = spec->cfg;
    c->base.ops = &rdkafka_ops;
    c->base.n_producers = spec->n_producers;
    c->queue_pipe[0] = c->queue_pipe[1] = -1;
    if (!(c->consumer = make_consumer(c, spec, err, errlen)))
        goto fail;
    for (int i = 0; i < spec->n_producers; i++)
        if (!(c->producers[i] = make_producer(c, spec, i, err, errlen)))
            goto fail;
    return &c->base;
fail:
    rk_free(&c->base);
    return NULL;
}
