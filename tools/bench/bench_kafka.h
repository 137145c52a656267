/* What the librdkafka benchmark tools (bench_raw_copy, bench_raw_sched,
 * bench_raw_read, bench_jobs_produce, bench_jobs_read, bench_target_read)
 * share: setting properties, the read_committed reader, a topic's partition
 * count. A benchmark has no one to report an error to or retry for, so any
 * failure ends it with one line naming the program (bench_die.h's die).
 * Header-only (static inline, so a tool takes what it uses); called from the
 * tool's one thread. */
#ifndef MOONCAKE_BENCH_KAFKA_H
#define MOONCAKE_BENCH_KAFKA_H

#include <librdkafka/rdkafka.h>
#include <string.h>

#include "bench_die.h"

/* Sets a librdkafka property, or dies naming it. */
static inline void set(rd_kafka_conf_t *c, const char *k, const char *v)
{
    char err[512];
    if (rd_kafka_conf_set(c, k, v, err, sizeof err) != RD_KAFKA_CONF_OK)
        die(k, err);
}

/* The `-X KEY=VALUE` flag of a tool: sets the property in c, or dies. */
static inline void set_flag(rd_kafka_conf_t *c, char *kv)
{
    char *eq = strchr(kv, '=');
    if (!eq)
        die("-X", "expected KEY=VALUE");
    *eq = '\0';
    set(c, kv, eq + 1);
}

/* A read_committed consumer of brokers in group, committing no offsets on
 * its own and polled through its consumer queue; takes cc. The tool assigns
 * it partitions (the group is never joined) or subscribes it. */
static inline rd_kafka_t *committed_reader(rd_kafka_conf_t *cc, const char *brokers,
                                           const char *group)
{
    char err[512];
    set(cc, "bootstrap.servers", brokers);
    set(cc, "group.id", group);
    set(cc, "isolation.level", "read_committed");
    set(cc, "enable.auto.commit", "false");
    rd_kafka_t *consumer = rd_kafka_new(RD_KAFKA_CONSUMER, cc, err, sizeof err);
    if (!consumer)
        die("consumer", err);
    rd_kafka_poll_set_consumer(consumer);
    return consumer;
}

/* The partition count of topic (30 s for the broker to answer), or dies. */
static inline int topic_partitions(rd_kafka_t *rk, const char *topic)
{
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, 30000);
    if (e)
        die("metadata", rd_kafka_err2str(e));
    if (md->topic_cnt != 1 || md->topics[0].err || md->topics[0].partition_cnt <= 0)
        die(topic, md->topic_cnt == 1 && md->topics[0].err ? rd_kafka_err2str(md->topics[0].err)
                                                           : "no such topic");
    int n = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    return n;
}

#endif
