/* What the transactional benchmark tools (bench_raw_copy, bench_raw_sched)
 * share: a transactional producer set up as mooncake's runner sets its own,
 * committing a transaction with the consumer's offsets in it, and the
 * committer, the thread that lets transactions take turns on two or more
 * producers: it commits one producer's transaction while the tool's loop
 * writes into the next one's. The loop hands it a transaction only when it is
 * free, so commits still end in order. A benchmark has no one to retry for,
 * so any Kafka error ends it (bench_die.h's die). Header-only (static inline,
 * so a tool takes what it uses); everything but committer_main is called
 * from the tool's loop. */
#ifndef MOONCAKE_BENCH_TXN_H
#define MOONCAKE_BENCH_TXN_H

#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "bench_kafka.h"

static inline void check(rd_kafka_error_t *e, const char *what)
{
    if (e)
        die(what, rd_kafka_error_string(e)); /* a benchmark has no one to retry for */
}

/* A transactional producer of brokers, its transactions initialised. */
static inline rd_kafka_t *txn_producer(const char *brokers, const char *transactional_id)
{
    char err[512];
    rd_kafka_conf_t *pc = rd_kafka_conf_new();
    set(pc, "bootstrap.servers", brokers);
    set(pc, "transactional.id", transactional_id);
    set(pc, "linger.ms", "5");
    /* as mooncake's runner: the default 100 ms would follow every
     * AddOffsetsToTxn the broker answers with CONCURRENT_TRANSACTIONS */
    set(pc, "retry.backoff.ms", "5");
    set(pc, "queue.buffering.max.messages", "1000000");
    rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof err);
    if (!p)
        die("producer", err);
    check(rd_kafka_init_transactions(p, 30000), "init_transactions");
    return p;
}

/* Commits producer's open transaction with the input offsets pos of the
 * consumer group md (takes both); with await_acks, first waits for the
 * records' acknowledgements in 1 ms flushes (commit_transaction's own flush
 * waits in 10 ms steps). */
static inline void commit_at(rd_kafka_t *producer, rd_kafka_topic_partition_list_t *pos,
                             rd_kafka_consumer_group_metadata_t *md, bool await_acks)
{
    check(rd_kafka_send_offsets_to_transaction(producer, pos, md, -1), "send_offsets");
    rd_kafka_consumer_group_metadata_destroy(md);
    rd_kafka_topic_partition_list_destroy(pos);
    while (await_acks && rd_kafka_outq_len(producer) > 0)
        rd_kafka_flush(producer, 1);
    check(rd_kafka_commit_transaction(producer, -1), "commit");
}

/* The thread that commits one transaction while the loop fills the next. */
typedef struct committer {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    rd_kafka_t *producer; /* set: a transaction to commit; NULL: free */
    rd_kafka_topic_partition_list_t *pos;
    rd_kafka_consumer_group_metadata_t *md;
    bool quit;
    bool await_acks; /* commit_at's */
    int done;        /* an eventfd it writes to when free (for the loop's epoll set), or -1 */
    pthread_t thread;
} committer;

static inline void *committer_main(void *arg)
{
    committer *c = arg;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        while (!c->producer && !c->quit)
            pthread_cond_wait(&c->changed, &c->lock);
        if (!c->producer)
            break;
        pthread_mutex_unlock(&c->lock);
        commit_at(c->producer, c->pos, c->md, c->await_acks);
        pthread_mutex_lock(&c->lock);
        c->producer = NULL;
        pthread_cond_broadcast(&c->changed);
        uint64_t one = 1;
        if (c->done >= 0 && write(c->done, &one, sizeof one) < 0 && errno != EAGAIN)
            die("write eventfd", strerror(errno));
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* Sets c up, free (await_acks and done as in struct committer), and starts
 * its thread. */
static inline void committer_run(committer *c, bool await_acks, int done)
{
    *c = (committer){.lock = PTHREAD_MUTEX_INITIALIZER,
                     .changed = PTHREAD_COND_INITIALIZER,
                     .await_acks = await_acks,
                     .done = done};
    if (pthread_create(&c->thread, NULL, committer_main, c) != 0)
        die("pthread_create", "failed");
}

static inline bool committer_busy(committer *c)
{
    pthread_mutex_lock(&c->lock);
    bool busy = c->producer != NULL;
    pthread_mutex_unlock(&c->lock);
    return busy;
}

/* Returns when c is free (the transaction handed to it committed). */
static inline void committer_wait(committer *c)
{
    pthread_mutex_lock(&c->lock);
    while (c->producer)
        pthread_cond_wait(&c->changed, &c->lock);
    pthread_mutex_unlock(&c->lock);
}

/* Hands c, free, producer's open transaction to commit with pos and md
 * (takes both). */
static inline void committer_start(committer *c, rd_kafka_t *producer,
                                   rd_kafka_topic_partition_list_t *pos,
                                   rd_kafka_consumer_group_metadata_t *md)
{
    pthread_mutex_lock(&c->lock);
    c->pos = pos;
    c->md = md;
    c->producer = producer;
    pthread_cond_broadcast(&c->changed);
    pthread_mutex_unlock(&c->lock);
}

/* Ends c's thread, after the commit handed to it if there is one. */
static inline void committer_end(committer *c)
{
    pthread_mutex_lock(&c->lock);
    c->quit = true;
    pthread_cond_broadcast(&c->changed);
    pthread_mutex_unlock(&c->lock);
    pthread_join(c->thread, NULL);
}

#endif
