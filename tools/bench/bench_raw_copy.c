/* The raw Kafka exactly-once pipe, the baseline of tools/bench/bench-router
 * (throughput) and tools/bench/bench-e2e (latency of one transactional hop).
 * A read_committed consumer and a transactional producer copy every record of
 * one topic to another unchanged, committing offsets in the transaction every
 * N records or T ms, written straight against librdkafka with none of
 * mooncake's runtime, so "router / raw" is what mooncake costs on top of what
 * Kafka transactions cost anyway.
 *
 * -t 0 commits as soon as nothing more is queued, after waiting for the
 * acknowledgements in 1 ms flushes (commit_transaction's own flush waits in
 * 10 ms steps): the loop a latency-minded librdkafka user writes. -P 2 makes
 * the transactions take turns on two producers, as mooncake's runner does.
 * -O (with -P 2 or more) overlaps them: a thread commits one producer's
 * transaction (offsets, acknowledgements, EndTxn) while the loop goes on
 * copying into the next producer's; that one's commit starts when the
 * thread is free, so commits still end in order.
 * -A TOPIC also writes every record to TOPIC (same partition), so each
 * transaction spans two topics' partitions, as the router's does when it
 * fires a task (the call to `ready`, the hand-off to `wheel`).
 *
 * Usage: bench_raw_copy -b BROKERS -i IN -o OUT -g GROUP -n RECORDS
 *                       [-c COMMIT_RECORDS] [-t COMMIT_MS] [-P PRODUCERS] [-O]
 *                       [-A ALSO_TOPIC]
 * Says "assigned" on stderr once it owns partitions; exits after copying
 * RECORDS records; prints records/s on stdout. */
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_kafka.h"
#include "clock.h"

#define MAX_PRODUCERS 4

static void check(rd_kafka_error_t *e, const char *what)
{
    if (e)
        die(what, rd_kafka_error_string(e)); /* a benchmark has no one to retry for */
}

static void rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    (void)opaque;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        rd_kafka_assign(rk, parts);
        fprintf(stderr, "assigned\n");
    } else {
        rd_kafka_assign(rk, NULL);
    }
}

static void copy_to(rd_kafka_topic_t *rkt, rd_kafka_t *producer, const rd_kafka_message_t *m)
{
    while (rd_kafka_produce(rkt, m->partition, RD_KAFKA_MSG_F_COPY, m->payload, m->len, m->key,
                            m->key_len, NULL) != 0) {
        if (rd_kafka_last_error() != RD_KAFKA_RESP_ERR__QUEUE_FULL)
            die("produce", rd_kafka_err2str(rd_kafka_last_error()));
        rd_kafka_poll(producer, 10);
    }
}

/* The consumer's positions: what a transaction that ends now commits. */
static rd_kafka_topic_partition_list_t *positions(rd_kafka_t *consumer)
{
    rd_kafka_topic_partition_list_t *pos;
    if (rd_kafka_assignment(consumer, &pos))
        die("assignment", "failed");
    rd_kafka_position(consumer, pos);
    return pos;
}

/* Takes pos and md. */
static void commit_at(rd_kafka_t *producer, rd_kafka_topic_partition_list_t *pos,
                      rd_kafka_consumer_group_metadata_t *md, bool await_acks)
{
    check(rd_kafka_send_offsets_to_transaction(producer, pos, md, -1), "send_offsets");
    rd_kafka_consumer_group_metadata_destroy(md);
    rd_kafka_topic_partition_list_destroy(pos);
    while (await_acks && rd_kafka_outq_len(producer) > 0)
        rd_kafka_flush(producer, 1);
    check(rd_kafka_commit_transaction(producer, -1), "commit");
}

static void commit(rd_kafka_t *consumer, rd_kafka_t *producer, bool await_acks)
{
    commit_at(producer, positions(consumer), rd_kafka_consumer_group_metadata(consumer),
              await_acks);
}

/* The turn after `turn`: its producer begins the next transaction. */
static int begin_next(rd_kafka_t **producers, int n_producers, int turn)
{
    turn = (turn + 1) % n_producers;
    check(rd_kafka_begin_transaction(producers[turn]), "begin");
    return turn;
}

/* -O: the thread that commits one transaction while the loop fills the next. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    rd_kafka_t *producer; /* set: a transaction to commit; NULL: free */
    rd_kafka_topic_partition_list_t *pos;
    rd_kafka_consumer_group_metadata_t *md;
    bool quit;
} committer;

static void *committer_main(void *arg)
{
    committer *c = arg;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        while (!c->producer && !c->quit)
            pthread_cond_wait(&c->changed, &c->lock);
        if (!c->producer)
            break;
        pthread_mutex_unlock(&c->lock);
        commit_at(c->producer, c->pos, c->md, true);
        pthread_mutex_lock(&c->lock);
        c->producer = NULL;
        pthread_cond_broadcast(&c->changed);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

static bool committer_busy(committer *c)
{
    pthread_mutex_lock(&c->lock);
    bool busy = c->producer != NULL;
    pthread_mutex_unlock(&c->lock);
    return busy;
}

static void committer_wait(committer *c)
{
    pthread_mutex_lock(&c->lock);
    while (c->producer)
        pthread_cond_wait(&c->changed, &c->lock);
    pthread_mutex_unlock(&c->lock);
}

static void committer_start(committer *c, rd_kafka_t *consumer, rd_kafka_t *producer)
{
    pthread_mutex_lock(&c->lock);
    c->pos = positions(consumer);
    c->md = rd_kafka_consumer_group_metadata(consumer);
    c->producer = producer;
    pthread_cond_broadcast(&c->changed);
    pthread_mutex_unlock(&c->lock);
}

int main(int argc, char **argv)
{
    const char *brokers = "127.0.0.1:9092", *in = NULL, *out = NULL, *group = NULL, *also = NULL;
    long n = 0, commit_records = 5000, commit_ms = 100, n_producers = 1;
    bool overlap = false;
    int opt;
    while ((opt = getopt(argc, argv, "b:i:o:g:n:c:t:P:OA:h")) != -1) {
        switch (opt) {
        case 'b':
            brokers = optarg;
            break;
        case 'i':
            in = optarg;
            break;
        case 'o':
            out = optarg;
            break;
        case 'g':
            group = optarg;
            break;
        case 'n':
            n = atol(optarg);
            break;
        case 'c':
            commit_records = atol(optarg);
            break;
        case 't':
            commit_ms = atol(optarg);
            break;
        case 'P':
            n_producers = atol(optarg);
            break;
        case 'O':
            overlap = true;
            break;
        case 'A':
            also = optarg;
            break;
        default:
            fprintf(stderr,
                    "usage: %s -b BROKERS -i IN -o OUT -g GROUP -n RECORDS "
                    "[-c COMMIT_RECORDS] [-t COMMIT_MS] [-P PRODUCERS] [-O] [-A ALSO_TOPIC]\n",
                    argv[0]);
            return opt == 'h' ? 0 : 2;
        }
    }
    if (!in || !out || !group || n <= 0) {
        fprintf(stderr, "%s: -i, -o, -g and -n are required (see -h)\n", argv[0]);
        return 2;
    }
    if (n_producers < 1 || n_producers > MAX_PRODUCERS) {
        fprintf(stderr, "%s: -P takes 1 to %d producers\n", argv[0], MAX_PRODUCERS);
        return 2;
    }
    if (overlap && (n_producers < 2 || commit_ms != 0)) {
        fprintf(stderr, "%s: -O needs -P 2 or more and -t 0\n", argv[0]);
        return 2;
    }
    char err[512], txid[300];
    rd_kafka_conf_t *cc = rd_kafka_conf_new();
    set(cc, "bootstrap.servers", brokers);
    set(cc, "group.id", group);
    set(cc, "isolation.level", "read_committed");
    set(cc, "enable.auto.commit", "false");
    set(cc, "auto.offset.reset", "earliest");
    rd_kafka_conf_set_rebalance_cb(cc, rebalance);
    rd_kafka_t *consumer = rd_kafka_new(RD_KAFKA_CONSUMER, cc, err, sizeof err);
    if (!consumer)
        die("consumer", err);
    rd_kafka_poll_set_consumer(consumer);
    rd_kafka_t *producers[MAX_PRODUCERS];
    rd_kafka_topic_t *rkts[MAX_PRODUCERS], *also_rkts[MAX_PRODUCERS] = {0};
    for (int i = 0; i < n_producers; i++) {
        rd_kafka_conf_t *pc = rd_kafka_conf_new();
        snprintf(txid, sizeof txid, "%s-raw-copy-%d", group, i);
        set(pc, "bootstrap.servers", brokers);
        set(pc, "transactional.id", txid);
        set(pc, "linger.ms", "5");
        /* as mooncake's runner: the default 100 ms would follow every
         * AddOffsetsToTxn the broker answers with CONCURRENT_TRANSACTIONS */
        set(pc, "retry.backoff.ms", "5");
        set(pc, "queue.buffering.max.messages", "1000000");
        if (!(producers[i] = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof err)))
            die("producer", err);
        check(rd_kafka_init_transactions(producers[i], 30000), "init_transactions");
        rkts[i] = rd_kafka_topic_new(producers[i], out, NULL);
        if (also)
            also_rkts[i] = rd_kafka_topic_new(producers[i], also, NULL);
    }
    int turn = 0;
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, in, RD_KAFKA_PARTITION_UA);
    rd_kafka_subscribe(consumer, sub);
    rd_kafka_topic_partition_list_destroy(sub);

    committer c = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};
    pthread_t committer_thread;
    if (overlap && pthread_create(&committer_thread, NULL, committer_main, &c) != 0)
        die("pthread_create", "failed");

    long copied = 0, in_txn = 0;
    double t_first = 0, t_txn = mc_mono_s();
    check(rd_kafka_begin_transaction(producers[turn]), "begin");
    while (copied < n) {
        bool dry_commits = commit_ms == 0;
        bool waiting = overlap && in_txn && committer_busy(&c);
        rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, waiting                 ? 1
                                                                 : dry_commits && in_txn ? 0
                                                                                         : 100);
        if (m && !m->err) {
            if (!t_first)
                t_first = mc_mono_s();
            copy_to(rkts[turn], producers[turn], m);
            if (also_rkts[turn])
                copy_to(also_rkts[turn], producers[turn], m);
            copied++;
            in_txn++;
        }
        if (m)
            rd_kafka_message_destroy(m);
        bool aged = !dry_commits && in_txn > 0 && (mc_mono_s() - t_txn) * 1000 >= commit_ms;
        if (overlap && in_txn > 0 && copied < n && (!m || in_txn >= commit_records) &&
            !committer_busy(&c)) {
            committer_start(&c, consumer, producers[turn]);
            in_txn = 0;
            turn = begin_next(producers, (int)n_producers, turn);
        } else if (!overlap && (in_txn >= commit_records || aged ||
                                (dry_commits && in_txn > 0 && !m) || copied == n)) {
            commit(consumer, producers[turn], dry_commits);
            in_txn = 0;
            t_txn = mc_mono_s();
            turn = begin_next(producers, (int)n_producers, turn);
        }
    }
    if (overlap) {
        /* Its last transaction is still open: copying ends when it commits. */
        committer_wait(&c);
        commit(consumer, producers[turn], true);
        pthread_mutex_lock(&c.lock);
        c.quit = true;
        pthread_cond_broadcast(&c.changed);
        pthread_mutex_unlock(&c.lock);
        pthread_join(committer_thread, NULL);
    }
    double secs = mc_mono_s() - t_first;
    if (!overlap)
        check(rd_kafka_abort_transaction(producers[turn], -1), "abort (empty)");
    printf("%.0f\n", copied / secs);
    rd_kafka_consumer_close(consumer);
    rd_kafka_destroy(consumer);
    for (int i = 0; i < n_producers; i++) {
        rd_kafka_topic_destroy(rkts[i]);
        if (also_rkts[i])
            rd_kafka_topic_destroy(also_rkts[i]);
        rd_kafka_destroy(producers[i]);
    }
    return 0;
}
