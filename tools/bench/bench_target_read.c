/* The read_committed reader of tools/bench/bench-targets: times when each
 * record of a topic becomes visible to a plain consumer, as a user's
 * consumer of a Kafka target topic would see it. Written straight against
 * librdkafka so it keeps up at any rate the benchmark feeds without taking
 * the CPU the measured pipe needs.
 *
 * It assigns every partition of TOPIC from the beginning (a fresh topic;
 * with -e from the end: only what is committed after it starts), waits a
 * second for the fetchers to connect, says "ready" on stderr, then
 * prints one line per record on stdout:
 *   <arrival_ms> <due_ms> <task>
 * arrival_ms: the wall clock (epoch ms, to the µs) when the record was
 * handed over; due_ms and task: the record's mooncake-due-at and
 * mooncake-task headers when it has them (a record mooncake delivered),
 * else the leading decimal number of its value (the produce time the raw
 * baseline's producer writes there) and its key.
 *
 * It stops once it has EXPECTED records and none came for QUIET_MS (so a
 * duplicate arriving just after is still seen), after TIMEOUT_S from
 * "ready", or on SIGTERM / SIGINT; then prints "records=R unparsed=U" on
 * stderr.
 *
 * Usage: bench_target_read -b BROKERS -t TOPIC -n EXPECTED [-e] [-q QUIET_MS]
 *                          [-T TIMEOUT_S] [-X KEY=VALUE]... */
#include <ctype.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_kafka.h"
#include "clock.h"

#define TASK_HEADER "mooncake-task"
#define DUE_HEADER "mooncake-due-at"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

/* The decimal number at the start of p[0..len), or -1 if there is none. */
static int64_t leading_number(const char *p, size_t len)
{
    int64_t v = 0;
    size_t i = 0;
    while (i < len && isdigit((unsigned char)p[i]) && i < 18)
        v = v * 10 + (p[i++] - '0');
    return i ? v : -1;
}

/* Prints the record's line; false if it names no due time. */
static bool print_record(const rd_kafka_message_t *m, int64_t arrival_us)
{
    const void *task = m->key, *due = NULL;
    size_t task_len = m->key_len, due_len = 0;
    rd_kafka_headers_t *hdrs = NULL;
    if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const void *v;
        size_t len;
        if (rd_kafka_header_get_last(hdrs, TASK_HEADER, &v, &len) == RD_KAFKA_RESP_ERR_NO_ERROR)
            task = v, task_len = len;
        if (rd_kafka_header_get_last(hdrs, DUE_HEADER, &v, &len) == RD_KAFKA_RESP_ERR_NO_ERROR)
            due = v, due_len = len;
    }
    if (!due)
        due = m->payload, due_len = m->len;
    int64_t due_ms = due ? leading_number(due, due_len) : -1;
    if (due_ms < 0 || !task || task_len == 0)
        return false;
    printf("%lld.%03d %lld %.*s\n", (long long)(arrival_us / 1000), (int)(arrival_us % 1000),
           (long long)due_ms, (int)task_len, (const char *)task);
    return true;
}

int main(int argc, char **argv)
{
    const char *brokers = "127.0.0.1:9092", *topic = NULL;
    long expected = -1, quiet_ms = 1500;
    double timeout_s = 600;
    int64_t start = RD_KAFKA_OFFSET_BEGINNING;
    char group[64];
    snprintf(group, sizeof group, "bench-target-read-%ld", (long)getpid());
    rd_kafka_conf_t *cc = rd_kafka_conf_new();
    int opt;
    while ((opt = getopt(argc, argv, "b:t:n:eq:T:X:h")) != -1) {
        switch (opt) {
        case 'b':
            brokers = optarg;
            break;
        case 't':
            topic = optarg;
            break;
        case 'n':
            expected = atol(optarg);
            break;
        case 'e':
            start = RD_KAFKA_OFFSET_END;
            break;
        case 'q':
            quiet_ms = atol(optarg);
            break;
        case 'T':
            timeout_s = atof(optarg);
            break;
        case 'X':
            set_flag(cc, optarg);
            break;
        default:
            fprintf(stderr,
                    "usage: %s -b BROKERS -t TOPIC -n EXPECTED [-e] [-q QUIET_MS] [-T TIMEOUT_S] "
                    "[-X KEY=VALUE]...\n",
                    argv[0]);
            return opt == 'h' ? 0 : 2;
        }
    }
    if (!topic || expected < 0) {
        fprintf(stderr, "%s: -t and -n are required (see -h)\n", argv[0]);
        return 2;
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    rd_kafka_t *consumer = committed_reader(cc, brokers, group);
    int n_parts = topic_partitions(consumer, topic);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(n_parts);
    for (int p = 0; p < n_parts; p++)
        rd_kafka_topic_partition_list_add(parts, topic, p)->offset = start;
    rd_kafka_resp_err_t e = rd_kafka_assign(consumer, parts);
    if (e)
        die("assign", rd_kafka_err2str(e));
    rd_kafka_topic_partition_list_destroy(parts);

    /* Let the fetchers resolve their offsets and connect: the records that
     * come meanwhile (none, on a fresh topic) are timed like the others. */
    long records = 0, unparsed = 0;
    double t_ready = mc_mono_s() + 1.0;
    bool ready = false;
    double t_last = mc_mono_s();
    while (!stop) {
        double now = mc_mono_s();
        if (!ready && now >= t_ready) {
            fprintf(stderr, "ready\n");
            ready = true;
        }
        if (ready && (now - t_ready >= timeout_s ||
                      (records >= expected && (now - t_last) * 1000 >= quiet_ms)))
            break;
        rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, 50);
        if (!m)
            continue;
        int64_t arrival_us = mc_now_us();
        if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            t_last = mc_mono_s();
            if (print_record(m, arrival_us))
                records++;
            else
                unparsed++;
        } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            die("consume", rd_kafka_message_errstr(m));
        }
        rd_kafka_message_destroy(m);
    }
    fflush(stdout);
    fprintf(stderr, "records=%ld unparsed=%ld\n", records, unparsed);
    rd_kafka_consumer_close(consumer);
    rd_kafka_destroy(consumer);
    return 0;
}
