/* The measuring reader of tools/bench/bench-jobs: reads one topic
 * read_committed from the beginning up to the high watermarks it had at the
 * start (after the run, so it takes no CPU from what is measured), decodes
 * every value, a Command (-k command: <prefix>tasks) or a WheelEntry
 * (-k wheel: <prefix>ready), and for every Submit of a task "j<i>@<at>"
 * writes four little-endian int64 to OUT: i, at, the record timestamp (when
 * its writer produced it) and due_at. Other records are only counted.
 *
 * Usage: bench_jobs_read -b BROKERS -t TOPIC -k command|wheel -o OUT [-X KEY=VALUE]...
 * Prints one line: records=R submits=S cancels=C other=O bad=B bytes=Y seconds=T */
#include <librdkafka/rdkafka.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_kafka.h"
#include "clock.h"
#include "codec.h"

/* "j<i>@<at>" -> i, at; false for any other id. */
static bool parse_id(const char *id, int64_t *i, int64_t *at)
{
    if (id[0] != 'j')
        return false;
    char *end;
    long long a = strtoll(id + 1, &end, 10);
    if (end == id + 1 || *end != '@')
        return false;
    char *end2;
    long long b = strtoll(end + 1, &end2, 10);
    if (end2 == end + 1 || *end2)
        return false;
    *i = a;
    *at = b;
    return true;
}

int main(int argc, char **argv)
{
    double t_start = mc_mono_s();
    const char *brokers = "127.0.0.1:9092", *topic = NULL, *kind = NULL, *out_path = NULL;
    char group[64];
    snprintf(group, sizeof group, "bench-jobs-read-%ld", (long)getpid());
    rd_kafka_conf_t *cc = rd_kafka_conf_new();
    int opt;
    while ((opt = getopt(argc, argv, "b:t:k:o:X:h")) != -1) {
        switch (opt) {
        case 'b':
            brokers = optarg;
            break;
        case 't':
            topic = optarg;
            break;
        case 'k':
            kind = optarg;
            break;
        case 'o':
            out_path = optarg;
            break;
        case 'X': {
            char *eq = strchr(optarg, '=');
            if (!eq)
                die("-X", "expected KEY=VALUE");
            *eq = '\0';
            set(cc, optarg, eq + 1);
            break;
        }
        default:
            fprintf(stderr, "usage: %s -b BROKERS -t TOPIC -k command|wheel -o OUT\n", argv[0]);
            return opt == 'h' ? 0 : 2;
        }
    }
    if (!topic || !kind || !out_path ||
        (strcmp(kind, "command") != 0 && strcmp(kind, "wheel") != 0)) {
        fprintf(stderr, "%s: -t, -k command|wheel and -o are required (see -h)\n", argv[0]);
        return 2;
    }
    bool wheel = strcmp(kind, "wheel") == 0;
    FILE *out = fopen(out_path, "wb");
    if (!out)
        die(out_path, "cannot open");
    char err[512];
    set(cc, "bootstrap.servers", brokers);
    set(cc, "group.id", group); /* never joined: partitions are assigned */
    set(cc, "isolation.level", "read_committed");
    set(cc, "enable.auto.commit", "false");
    set(cc, "enable.partition.eof", "true");
    rd_kafka_t *consumer = rd_kafka_new(RD_KAFKA_CONSUMER, cc, err, sizeof err);
    if (!consumer)
        die("consumer", err);
    rd_kafka_poll_set_consumer(consumer);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(consumer, topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(consumer, 0, rkt, &md, 30000);
    if (e)
        die("metadata", rd_kafka_err2str(e));
    if (md->topic_cnt != 1 || md->topics[0].err || md->topics[0].partition_cnt <= 0)
        die(topic, "no such topic");
    int n_parts = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);

    char *done = calloc((size_t)n_parts, 1);
    int64_t *end = calloc((size_t)n_parts, sizeof *end);
    if (!done || !end)
        die("calloc", "out of memory");
    int n_done = 0;
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(n_parts);
    for (int p = 0; p < n_parts; p++) {
        int64_t lo = 0, hi = 0;
        e = rd_kafka_query_watermark_offsets(consumer, topic, p, &lo, &hi, 30000);
        if (e)
            die("watermarks", rd_kafka_err2str(e));
        end[p] = hi;
        if (hi <= lo) {
            done[p] = 1;
            n_done++;
        }
        rd_kafka_topic_partition_list_add(parts, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    e = rd_kafka_assign(consumer, parts);
    if (e)
        die("assign", rd_kafka_err2str(e));
    rd_kafka_topic_partition_list_destroy(parts);

    mc_arena *arena = mc_arena_new();
    if (!arena)
        die("arena", "out of memory");
    long records = 0, submits = 0, cancels = 0, other = 0, bad = 0;
    long long bytes = 0;
    while (n_done < n_parts) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, 1000);
        if (!m)
            continue;
        if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            die("consume", rd_kafka_message_errstr(m));
        int32_t p = m->partition;
        int64_t next = m->err ? m->offset : m->offset + 1;
        if (!m->err && p >= 0 && p < n_parts && m->offset < end[p]) {
            records++;
            bytes += (long long)(m->len + m->key_len);
            mc_arena_reset(arena);
            mc_command c;
            mc_wheel_entry w;
            mc_codec_err ce;
            if (!m->payload || !m->key) {
                other++; /* a position marker (ready) or a tombstone */
            } else {
                if (wheel) {
                    ce = mc_decode_wheel_entry(m->payload, m->len, arena, &w, NULL, 0);
                    c = w.command;
                } else {
                    ce = mc_decode_command(NULL, m->payload, m->len, arena, &c, NULL, 0);
                }
                int64_t i, at;
                if (ce != MC_CODEC_OK)
                    bad++;
                else if (c.kind == MC_CMD_CANCEL)
                    cancels++;
                else if (!parse_id(c.submit.task_id, &i, &at))
                    other++;
                else {
                    int64_t rec[4] = {i, at, rd_kafka_message_timestamp(m, NULL), c.submit.due_at};
                    if (fwrite(rec, sizeof rec, 1, out) != 1)
                        die(out_path, "write failed");
                    submits++;
                }
            }
        }
        if (p >= 0 && p < n_parts && !done[p] && next >= end[p]) {
            done[p] = 1;
            n_done++;
        }
        rd_kafka_message_destroy(m);
    }
    if (fclose(out) != 0)
        die(out_path, "write failed");
    printf("records=%ld submits=%ld cancels=%ld other=%ld bad=%ld bytes=%lld seconds=%.3f\n",
           records, submits, cancels, other, bad, bytes, mc_mono_s() - t_start);
    mc_arena_free(arena);
    free(done);
    free(end);
    rd_kafka_consumer_close(consumer);
    rd_kafka_destroy(consumer);
    return 0;
}
