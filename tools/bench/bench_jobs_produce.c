/* The one-shot baseline of tools/bench/bench-jobs: a plain client writing, to
 * <prefix>tasks, the very records the jobs role writes for N FIXED_RATE 1 s
 * jobs. Every second k (k = 0 .. S-1) it writes, AHEAD ms before the whole
 * second D_k = FIRST + k * 1000, one Submit per "job" i: task id
 * "j<i>@<D_k>", due at D_k, with the job role's extra headers
 * (mooncake-job-id, mooncake-scheduled-at) and metadata (job_id,
 * scheduled_at), key "bench/j<i>@<D_k>", on its murmur2 home partition. Same
 * bytes, same burst shape (all N at once, ahead of the same due second), but
 * no jobs role: an idempotent producer, linger 5 ms, no transaction.
 *
 * Usage: bench_jobs_produce -b BROKERS -t TOPIC -n N -s SECONDS -a AHEAD_MS
 *                           -f FIRST_DUE_MS [-X KEY=VALUE]...
 * FIRST_DUE_MS must be a whole second at least AHEAD_MS in the future.
 * Prints one JSON line: produced, errors, seconds, burst_ms_max (time to hand
 * one second's N records to librdkafka), start_slip_ms_max (how late a burst
 * started after D_k - AHEAD), cpu_seconds, value_bytes. */
#include <librdkafka/rdkafka.h>
#include <inttypes.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_kafka.h"
#include "clock.h"
#include "codec.h"
#include "kafka.h"

#define APP_ID "bench"
#define CALLBACK_URL "https://hooks.example.com/orders/tick"
#define CALLBACK_BODY "tick"

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static long delivered_err;

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)opaque;
    if (m->err)
        delivered_err++;
}

static void sleep_until_ms(int64_t t, rd_kafka_t *rk)
{
    for (;;) {
        int64_t left = t - mc_now_ms();
        if (left <= 0)
            return;
        rd_kafka_poll(rk, left > 50 ? 50 : (int)left);
    }
}

int main(int argc, char **argv)
{
    const char *brokers = "127.0.0.1:9092", *topic = NULL;
    long n = 0, seconds = 0;
    int64_t ahead = 5000, first = 0;
    rd_kafka_conf_t *pc = rd_kafka_conf_new();
    int opt;
    while ((opt = getopt(argc, argv, "b:t:n:s:a:f:X:h")) != -1) {
        switch (opt) {
        case 'b':
            brokers = optarg;
            break;
        case 't':
            topic = optarg;
            break;
        case 'n':
            n = atol(optarg);
            break;
        case 's':
            seconds = atol(optarg);
            break;
        case 'a':
            ahead = atoll(optarg);
            break;
        case 'f':
            first = atoll(optarg);
            break;
        case 'X': {
            char *eq = strchr(optarg, '=');
            if (!eq)
                die("-X", "expected KEY=VALUE");
            *eq = '\0';
            set(pc, optarg, eq + 1);
            break;
        }
        default:
            fprintf(stderr,
                    "usage: %s -b BROKERS -t TOPIC -n N -s SECONDS -a AHEAD_MS -f FIRST_DUE_MS\n",
                    argv[0]);
            return opt == 'h' ? 0 : 2;
        }
    }
    if (!topic || n <= 0 || seconds <= 0 || first <= 0 || first % 1000 != 0) {
        fprintf(stderr, "%s: -t, -n, -s and a whole-second -f are required (see -h)\n", argv[0]);
        return 2;
    }
    char err[512];
    set(pc, "bootstrap.servers", brokers);
    set(pc, "enable.idempotence", "true");
    set(pc, "linger.ms", "5");
    set(pc, "queue.buffering.max.messages", "2000000");
    set(pc, "queue.buffering.max.kbytes", "2097151");
    rd_kafka_conf_set_dr_msg_cb(pc, dr_cb);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof err);
    if (!rk)
        die("producer", err);
    int32_t parts = topic_partitions(rk, topic);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    rd_kafka_resp_err_t e;

    mc_buf value = {0};
    long produced = 0, errors = 0;
    double burst_max = 0, slip_max = 0;
    size_t value_bytes = 0;
    double cpu0 = cpu_s();
    int64_t t0 = mc_now_ms();
    for (long k = 0; k < seconds; k++) {
        int64_t due = first + k * 1000;
        sleep_until_ms(due - ahead, rk);
        int64_t start_ns = mc_mono_ns();
        double slip = (double)(mc_now_ms() - (due - ahead));
        if (slip > slip_max)
            slip_max = slip;
        char at_text[24];
        snprintf(at_text, sizeof at_text, "%" PRId64, due);
        for (long i = 0; i < n; i++) {
            char job_id[32], task_id[64], key[96];
            snprintf(job_id, sizeof job_id, "j%ld", i);
            snprintf(task_id, sizeof task_id, "j%ld@%" PRId64, i, due);
            mc_kv headers[] = {{"content-type", "text/plain"},
                               {"mooncake-job-id", job_id},
                               {"mooncake-scheduled-at", at_text}};
            mc_kv meta[] = {{"job_id", job_id}, {"scheduled_at", at_text}};
            int64_t now = mc_now_ms();
            mc_command cmd = {
                .kind = MC_CMD_SUBMIT,
                .submit = {.app_id = APP_ID,
                           .task_id = task_id,
                           .due_at = due,
                           .callback = {.url = CALLBACK_URL,
                                        .method = "POST",
                                        .headers = headers,
                                        .n_headers = 3,
                                        .body = (const uint8_t *)CALLBACK_BODY,
                                        .body_len = sizeof CALLBACK_BODY - 1,
                                        .timeout_ms = 10000},
                           .attempt = 1,
                           .created_at = now,
                           .metadata = meta,
                           .n_metadata = 2},
            };
            mc_buf_reset(&value);
            if (mc_encode_command(&cmd, &value) != 0)
                die("mc_encode_command", "out of memory");
            value_bytes = value.len;
            size_t klen = mc_task_key(APP_ID, task_id, key, sizeof key);
            int32_t part = mc_key_partition(key, klen, parts);
            for (;;) {
                e = rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION(part),
                                      RD_KAFKA_V_KEY(key, klen),
                                      RD_KAFKA_V_VALUE(value.data, value.len),
                                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
                if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                    break;
                rd_kafka_poll(rk, 5);
            }
            if (e)
                errors++;
            else
                produced++;
            if ((i & 1023) == 0)
                rd_kafka_poll(rk, 0);
        }
        double burst = (double)(mc_mono_ns() - start_ns) / 1e6;
        if (burst > burst_max)
            burst_max = burst;
    }
    rd_kafka_flush(rk, 120000);
    int left = rd_kafka_outq_len(rk);
    double secs = (double)(mc_now_ms() - t0) / 1000.0;
    printf("{\"produced\": %ld, \"errors\": %ld, \"seconds\": %.3f, \"burst_ms_max\": %.1f, "
           "\"start_slip_ms_max\": %.1f, \"cpu_seconds\": %.3f, \"value_bytes\": %zu}\n",
           produced, errors + delivered_err + left, secs, burst_max, slip_max, cpu_s() - cpu0,
           value_bytes);
    mc_buf_free(&value);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return 0;
}
