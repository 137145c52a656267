/* The baseline for tools/bench/bench-store and tools/bench/bench-wheel: the raw Kafka read.
 * A read_committed consumer, written straight against librdkafka with none of
 * mooncake's runtime, assigns every partition of one topic at the beginning
 * and reads it up to the high watermark it had at the start, so "store
 * restore / raw read" is what restoring state costs on top of what reading it
 * from Kafka costs anyway.
 *
 * Usage: bench_raw_read -b BROKERS -t TOPIC [-X KEY=VALUE]...
 * Prints one line on stdout:
 *   records=R bytes=B seconds=S records_per_s=X last_record_seconds=L
 *   total_seconds=T cpu_seconds=C
 * where seconds runs from the assignment to the end of the last partition,
 * last_record_seconds from the assignment to the last record received (the
 * end of a partition whose last offset is a transaction marker is only known
 * from the next, long-polled, fetch), and total_seconds from program start
 * (client creation and metadata included); cpu_seconds is the process's
 * user + system time, librdkafka's threads included (on a shared machine it
 * varies less than the wall-clock figures). */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench_kafka.h"
#include "clock.h"

int main(int argc, char **argv)
{
    double t_start = mc_mono_s();
    const char *brokers = "127.0.0.1:9092", *topic = NULL;
    char group[64];
    snprintf(group, sizeof group, "bench-raw-read-%ld", (long)getpid());
    rd_kafka_conf_t *cc = rd_kafka_conf_new();
    int opt;
    while ((opt = getopt(argc, argv, "b:t:X:h")) != -1) {
        switch (opt) {
        case 'b':
            brokers = optarg;
            break;
        case 't':
            topic = optarg;
            break;
        case 'X':
            set_flag(cc, optarg);
            break;
        default:
            fprintf(stderr, "usage: %s -b BROKERS -t TOPIC [-X KEY=VALUE]...\n", argv[0]);
            return opt == 'h' ? 0 : 2;
        }
    }
    if (!topic) {
        fprintf(stderr, "%s: -t is required (see -h)\n", argv[0]);
        return 2;
    }
    set(cc, "enable.partition.eof", "true");
    rd_kafka_t *consumer = committed_reader(cc, brokers, group);
    int n_parts = topic_partitions(consumer, topic);

    /* A partition is read when a record at end-1 arrives, or at its
     * end-of-partition event once past the end (under read_committed the last
     * offset can be a transaction marker, which is never delivered). An empty
     * partition has nothing to read. */
    char *done = calloc((size_t)n_parts, 1);
    int64_t *end = calloc((size_t)n_parts, sizeof *end);
    if (!done || !end)
        die("calloc", "out of memory");
    int n_done = 0;
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(n_parts);
    for (int p = 0; p < n_parts; p++) {
        int64_t lo = 0, hi = 0;
        rd_kafka_resp_err_t e =
            rd_kafka_query_watermark_offsets(consumer, topic, p, &lo, &hi, 30000);
        if (e)
            die("watermarks", rd_kafka_err2str(e));
        end[p] = hi;
        if (hi <= lo) {
            done[p] = 1;
            n_done++;
        }
        rd_kafka_topic_partition_list_add(parts, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    }

    double t_assign = mc_mono_s();
    rd_kafka_resp_err_t e = rd_kafka_assign(consumer, parts);
    if (e)
        die("assign", rd_kafka_err2str(e));
    rd_kafka_topic_partition_list_destroy(parts);
    long records = 0;
    long long bytes = 0;
    double t_last = t_assign;
    while (n_done < n_parts) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, 1000);
        if (!m)
            continue;
        if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            die("consume", rd_kafka_message_errstr(m));
        if (!m->err) {
            t_last = mc_mono_s();
            records++;
            bytes += (long long)(m->len + m->key_len);
        }
        int32_t p = m->partition;
        int64_t next = m->err ? m->offset : m->offset + 1;
        if (p >= 0 && p < n_parts && !done[p] && next >= end[p]) {
            done[p] = 1;
            n_done++;
        }
        rd_kafka_message_destroy(m);
    }
    double t_end = mc_mono_s();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    printf("records=%ld bytes=%lld seconds=%.3f records_per_s=%.0f last_record_seconds=%.3f "
           "total_seconds=%.3f cpu_seconds=%.3f\n",
           records, bytes, t_end - t_assign, records / (t_end - t_assign), t_last - t_assign,
           t_end - t_start, cpu);
    free(done);
    free(end);
    rd_kafka_consumer_close(consumer);
    rd_kafka_destroy(consumer);
    return 0;
}
