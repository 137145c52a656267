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
 * -O (with -P 2 or more) overlaps them: a thread (bench_txn.h's committer,
 * as bench_raw_sched's) commits one producer's transaction (offsets,
 * acknowledgements, EndTxn) while the loop goes on copying into the next
 * producer's; that one's commit starts when the thread is free, so commits
 * still end in order.
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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_kafka.h"
#include "bench_txn.h"
#include "clock.h"

#define MAX_PRODUCERS 4

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
    rd_kafka_conf_t *cc = rd_kafka_conf_new();
    set(cc, "auto.offset.reset", "earliest");
    rd_kafka_conf_set_rebalance_cb(cc, rebalance);
    rd_kafka_t *consumer = committed_reader(cc, brokers, group);
    rd_kafka_t *producers[MAX_PRODUCERS];
    rd_kafka_topic_t *rkts[MAX_PRODUCERS], *also_rkts[MAX_PRODUCERS] = {0};
    for (int i = 0; i < n_producers; i++) {
        char txid[300];
        snprintf(txid, sizeof txid, "%s-raw-copy-%d", group, i);
        producers[i] = txn_producer(brokers, txid);
        rkts[i] = rd_kafka_topic_new(producers[i], out, NULL);
        if (also)
            also_rkts[i] = rd_kafka_topic_new(producers[i], also, NULL);
    }
    int turn = 0;
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, in, RD_KAFKA_PARTITION_UA);
    rd_kafka_subscribe(consumer, sub);
    rd_kafka_topic_partition_list_destroy(sub);

    committer c = {0};
    if (overlap)
        committer_run(&c, true, -1); /* no eventfd: the loop polls committer_busy */

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
            committer_start(&c, producers[turn], positions(consumer),
                            rd_kafka_consumer_group_metadata(consumer));
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
        committer_end(&c);
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
