/* Changelog replay for state stores (see restore.h). In three steps: find
 * where each partition ends now, read every partition from its beginning to
 * that end, and report what was read. A transaction marker can be a
 * partition's last offset, and it is never delivered, so a partition also
 * counts as done at end-of-partition once the consumer is past its end.
 *
 * The end is the high watermark, asked for by a second, read_uncommitted
 * handle: a read_committed asker is told the last stable offset, which
 * stops below every record after the first transaction still open. That
 * transaction can be a dead instance's (open until its timeout) with records
 * of the owner between it and us committed after it: stopping there would
 * drop them from the state while the committed input offset says they are
 * applied (a far task lost). The reader stays read_committed, so it reaches
 * the high watermark once every transaction below it has ended: a dead
 * instance's open one makes the restore wait for its transaction timeout. */
#include "restore.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "kafka.h"
#include "release_memory.h"

/* Waiting for a partition's leader (a topic created a moment ago): up to
 * WATERMARK_TRIES x (timeout + pause). */
#define WATERMARK_TRIES 300
#define WATERMARK_PAUSE_MS 200
#define LOG_EVERY_MS 5000
#define WAIT_SAY_MS 1000

struct mc_restorer {
    mc_logger logger;     /* first: the consumers' log callback reads it as its opaque */
    rd_kafka_t *consumer; /* reads, read_committed */
    rd_kafka_t *ends;     /* asks for high watermarks, read_uncommitted */
};

/* A partition to replay and the end it has when the restore starts. */
typedef struct restore_target {
    int32_t partition;
    int64_t end;
    bool done;
    bool said_waiting;
    int64_t stopped_ms; /* when the reader stopped below the end (0: it has not) */
} restore_target;

/* Sets what only the reader needs: it replays, where the asker of ends
 * only sends ListOffsets. 0, or -1 with a reason in err. */
static int set_reader_conf(const mc_config *cfg, rd_kafka_conf_t *conf, char *err, size_t errlen)
{
    if (mc_kafka_conf_set(conf, "enable.partition.eof", "true", err, errlen))
        return -1;
    /* The last fetch of each partition waits for data that will not come:
     * without this, a small restore takes a second. */
    if (mc_kafka_conf_default(cfg, conf, "fetch.wait.max.ms", "20", err, errlen))
        return -1;
    /* A consumer whose queue is full stops fetching for a second (librdkafka
     * before 2.1 has no fetch.queue.backoff.ms): a restore faster than one
     * queue per second would spend most of its time waiting. 64 MiB
     * (librdkafka's default) refills it rarely; 300k records is about as
     * much at a changelog's 200 B a record, and bounds a run of tombstones,
     * whose bytes the limit does not count. The memory is given back after
     * the restore (mc_release_free_memory). */
    if (mc_kafka_conf_set(conf, "queued.max.messages.kbytes", "65536", err, errlen) ||
        mc_kafka_conf_set(conf, "queued.min.messages", "300000", err, errlen))
        return -1;
    return 0;
}

/* A consumer outside any group: the reader (read_committed, with what a
 * replay needs; librdkafka gives assign()ed partitions a consumer queue only
 * with a group.id) or the asker of ends (read_uncommitted, no group, so no
 * coordinator connection). NULL with a reason in err. */
static rd_kafka_t *new_consumer(const mc_config *cfg, mc_restorer *rs, bool reader, char *err,
                                size_t errlen)
{
    rd_kafka_conf_t *conf = mc_kafka_conf_new(cfg, rs, err, errlen);
    if (!conf)
        return NULL;
    if (mc_kafka_conf_set(conf, "isolation.level", reader ? "read_committed" : "read_uncommitted",
                          err, errlen) ||
        mc_kafka_conf_set(conf, "enable.auto.commit", "false", err, errlen) ||
        (reader && (mc_kafka_conf_set(conf, "group.id", "mooncake-restore-unused", err, errlen) ||
                    set_reader_conf(cfg, conf, err, errlen) != 0))) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    return mc_kafka_new(RD_KAFKA_CONSUMER, conf,
                        reader ? "restore consumer" : "restore's end-offset consumer", err, errlen);
}

mc_restorer *mc_restorer_new(const mc_config *cfg, const mc_logger *lg, char *err, size_t errlen)
{
    mc_restorer *rs = calloc(1, sizeof *rs);
    if (!rs) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    rs->logger = *lg;
    rs->consumer = new_consumer(cfg, rs, true, err, errlen);
    rs->ends = rs->consumer ? new_consumer(cfg, rs, false, err, errlen) : NULL;
    if (!rs->ends) {
        mc_restorer_free(rs);
        return NULL;
    }
    return rs;
}

void mc_restorer_free(mc_restorer *rs)
{
    if (!rs)
        return;
    if (rs->consumer) {
        rd_kafka_consumer_close(rs->consumer);
        rd_kafka_destroy(rs->consumer);
    }
    if (rs->ends)
        rd_kafka_destroy(rs->ends);
    free(rs);
}

/* A partition a handle has not heard of: the topic grew since its last
 * metadata refresh. Asking for the topic's metadata updates its view. */
static void learn_partitions(rd_kafka_t *rk, const char *topic)
{
    char err[256];
    mc_topic_partition_count(rk, topic, 5000, err, sizeof err);
}

/* Fills each target's end (high watermark now); a partition that is empty is
 * done already. Returns how many are left to read, or -1 on failure. While it
 * waits for a leader it ticks, as the replay does, so the liveness probe does
 * not call a restore that waits minutes for a new topic stuck. */
static long find_ends(mc_restorer *rs, const char *topic, restore_target *tg, size_t n,
                      mc_restore_tick tick, void *tick_arg)
{
    long left = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t lo = 0, hi = 0;
        rd_kafka_resp_err_t err;
        for (int attempt = 0;; attempt++) {
            err =
                rd_kafka_query_watermark_offsets(rs->ends, topic, tg[i].partition, &lo, &hi, 10000);
            if (!err || attempt == WATERMARK_TRIES)
                break;
            if (tick)
                tick(tick_arg);
            if (err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION)
                learn_partitions(rs->ends, topic);
            struct timespec pause = {0, WATERMARK_PAUSE_MS * 1000000L};
            nanosleep(&pause, NULL);
        }
        if (err) {
            mc_log(&rs->logger, MC_LOG_ERROR, "cannot read a changelog partition's end", "topic",
                   topic, "error", rd_kafka_err2str(err), (const char *)NULL);
            return -1;
        }
        tg[i].end = hi;
        tg[i].done = hi <= lo;
        left += !tg[i].done;
    }
    return left;
}

static restore_target *target_of(restore_target *tg, size_t n, int32_t partition)
{
    for (size_t i = 0; i < n; i++)
        if (tg[i].partition == partition)
            return &tg[i];
    return NULL;
}

/* The reader stops below a partition's end at the first transaction still
 * open: usually ours or a predecessor's whose markers are on their way
 * (milliseconds), but a dead instance's stays open until its transaction
 * timeout (and the broker's next check for timed-out ones), and a restore
 * waiting that long deserves a line. */
static void say_waiting(mc_restorer *rs, const char *topic, restore_target *tg, size_t n)
{
    int64_t now = mc_mono_ms();
    for (size_t i = 0; i < n; i++) {
        restore_target *t = &tg[i];
        if (t->done || t->said_waiting || !t->stopped_ms || now - t->stopped_ms < WAIT_SAY_MS)
            continue;
        t->said_waiting = true;
        char part[16], end[24];
        snprintf(part, sizeof part, "%" PRId32, t->partition);
        snprintf(end, sizeof end, "%" PRId64, t->end);
        mc_log(&rs->logger, MC_LOG_INFO,
               "restore waits for an open transaction in the changelog to end (at most its "
               "producer's transaction timeout, then the broker aborts it)",
               "topic", topic, "partition", part, "end", end, (const char *)NULL);
    }
}

/* Reads the targets not done yet until each reaches its end. */
static uint64_t replay(mc_restorer *rs, const char *topic, restore_target *tg, size_t n, long left,
                       mc_restore_fn fn, void *arg, mc_restore_tick tick, void *tick_arg)
{
    /* The other handle found the ends: a reader that has not heard of a
     * partition (the topic grew) would not fetch it before its own metadata
     * refresh, seconds away. */
    learn_partitions(rs->consumer, topic);
    rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new((int)n);
    for (size_t i = 0; i < n; i++)
        if (!tg[i].done)
            rd_kafka_topic_partition_list_add(list, topic, tg[i].partition)->offset =
                RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(rs->consumer, list);
    rd_kafka_topic_partition_list_destroy(list);
    rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(rs->consumer);
    rd_kafka_message_t *batch[1024];
    uint64_t records = 0;
    int64_t last_log = mc_mono_ms();
    while (left > 0) {
        /* Batches: one queue lock per 1024 records instead of one per record.
         * A batch call waits for all 1024 or its timeout, so the timeout is
         * what the last, short batch costs: a small changelog (the layout)
         * is read in milliseconds, not half a second. */
        ssize_t got = rd_kafka_consume_batch_queue(q, 20, batch, 1024);
        if (tick)
            tick(tick_arg);
        for (ssize_t b = 0; b < got; b++) {
            rd_kafka_message_t *m = batch[b];
            restore_target *t = target_of(tg, n, m->partition);
            if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                mc_log(&rs->logger, MC_LOG_WARN, "restore consumer error", "error",
                       rd_kafka_message_errstr(m), (const char *)NULL);
            } else if (t && !t->done) {
                if (!m->err) {
                    mc_record rec = mc_kafka_record(m, topic);
                    fn(arg, &rec);
                    records++;
                    t->stopped_ms = 0; /* moving again */
                }
                int64_t next = m->err ? m->offset : m->offset + 1;
                if (next >= t->end) {
                    t->done = true;
                    left--;
                } else if (m->err && !t->stopped_ms) {
                    t->stopped_ms = mc_mono_ms();
                }
            }
            rd_kafka_message_destroy(m);
        }
        say_waiting(rs, topic, tg, n);
        if (mc_mono_ms() - last_log >= LOG_EVERY_MS && left > 0) {
            last_log = mc_mono_ms();
            char rec[24];
            snprintf(rec, sizeof rec, "%" PRIu64, records);
            mc_log(&rs->logger, MC_LOG_INFO, "restoring", "topic", topic, "records", rec,
                   (const char *)NULL);
        }
    }
    rd_kafka_queue_destroy(q);
    rd_kafka_assign(rs->consumer, NULL);
    return records;
}

static void report(mc_restorer *rs, size_t n, const mc_restore_stats *st)
{
    char rec[24], sec[24], rate[24], np[24];
    snprintf(rec, sizeof rec, "%" PRIu64, st->records);
    snprintf(sec, sizeof sec, "%.3f", st->seconds);
    snprintf(rate, sizeof rate, "%.0f", st->seconds > 0 ? (double)st->records / st->seconds : 0.0);
    snprintf(np, sizeof np, "%zu", n);
    mc_log(&rs->logger, MC_LOG_INFO, "restored", "partitions", np, "records", rec, "seconds", sec,
           "records_per_second", rate, (const char *)NULL);
}

int mc_restorer_run(mc_restorer *rs, const char *topic, const int32_t *partitions, size_t n,
                    mc_restore_fn fn, void *arg, mc_restore_tick tick, void *tick_arg,
                    mc_restore_stats *stats)
{
    mc_restore_stats st = {0, 0};
    if (n == 0) {
        if (stats)
            *stats = st;
        return 0;
    }
    int64_t t0 = mc_mono_ms();
    restore_target *tg = calloc(n, sizeof *tg);
    if (!tg)
        return -1;
    for (size_t i = 0; i < n; i++)
        tg[i].partition = partitions[i];
    long left = find_ends(rs, topic, tg, n, tick, tick_arg);
    if (left < 0) {
        free(tg);
        return -1;
    }
    st.records = left ? replay(rs, topic, tg, n, left, fn, arg, tick, tick_arg) : 0;
    free(tg);
    /* The consumer's read-ahead was freed by threads whose malloc arenas
     * glibc keeps; give the memory back, or RSS stays tens of MB above what
     * the restored state needs. */
    mc_release_free_memory();
    st.seconds = (double)(mc_mono_ms() - t0) / 1000.0;
    report(rs, n, &st);
    if (stats)
        *stats = st;
    return 0;
}

int mc_restorer_high_watermarks(mc_restorer *rs, const char *topic, const int32_t *partitions,
                                size_t n, int64_t *ends, int timeout_ms, char *err, size_t errlen)
{
    const char *topics[] = {topic};
    return mc_list_end_offsets(rs->ends, topics, 1, partitions, n, ends, timeout_ms, err, errlen);
}
