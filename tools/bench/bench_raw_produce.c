/* The baseline for tools/bench/bench-gateway: the gateway's work without HTTP, the
 * raw Kafka pipe. C virtual clients, closed loop like bench_http_load's
 * connections: each produces one task Command and waits for its delivery
 * report before producing the next. The producer is set up as the gateway's
 * (idempotent, so acks=all; linger.ms 5; socket.nagle.disable; client.id
 * mooncake; message.timeout.ms 5000), every record is what the gateway
 * would write for the benchmark's submit (a Submit of a fresh UUIDv7 task_id
 * for app "bench", due in an hour, a POST to https://example.com/hook with
 * body {"n":1}, encoded by mooncake's own codec), keyed app/task_id and
 * spread by the default partitioner, and produced from the client's buffer
 * without a copy. So "gateway submits/s / raw records/s" is what HTTP and the
 * gateway's bookkeeping cost on top of the Kafka round trip.
 *
 * One thread: rd_kafka_poll serves the delivery reports, and each report
 * produces that client's next record at once. Latency: CLOCK_MONOTONIC from
 * the produce call to its report, into a log-linear histogram (exact below
 * 128 µs, then 64 buckets per power of two). The run is -w seconds of
 * warm-up, -d seconds measured, then a flush of what is in flight.
 *
 * Usage: bench_raw_produce -b BROKERS -t TOPIC [-c CLIENTS] [-d SECONDS]
 *                          [-w SECONDS] [-X KEY=VALUE]...
 *   -c  virtual clients, each with one record in flight (default 128)
 *   -d  measured seconds (default 10); -w warm-up seconds before (default 1)
 *   -X  a librdkafka property, applied after the defaults (repeatable)
 * On stdout: "measure-start" and "measure-end" around the measured window,
 * then one JSON line with the keys of bench_http_load's: sent, completed,
 * status ({"ok": n} and failures by librdkafka error name), errors,
 * window_s, window_completed, throughput, mean/p50/p90/p99/p999/max_ms,
 * cpu_s, window_cpu_s, and record_bytes (the value size).
 * Exits 0 when it ran, 1 when it could not, 2 on bad usage. */
#include <errno.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "uuid7.h"

#define APP_ID "bench"
#define CALLBACK_URL "https://example.com/hook"
#define CALLBACK_BODY "{\"n\":1}"
#define DELAY_MS 3600000
#define TICK_MS 20
#define N_ERRS 16 /* distinct delivery errors counted by name */

#include "bench_common.h"
#include "clock.h"

/* ---- the run --------------------------------------------------------------- */
typedef enum phase { PH_WARMUP, PH_MEASURE, PH_DRAIN } phase;

typedef struct client {
    mc_buf value; /* the record in flight (produced without a copy) */
    char key[sizeof APP_ID + MC_UUID_STR_LEN + 1];
    size_t key_len;
    int64_t start_ns;
} client;

typedef struct run {
    rd_kafka_t *rk;
    rd_kafka_topic_t *topic;
    mc_uuid7 uuids;
    client *clients;
    long n_clients;
    phase phase;
    int64_t t_measure, t_end;
    double cpu_measure, cpu_end;
    uint64_t sent, completed, ok, produce_errors;
    rd_kafka_resp_err_t err_code[N_ERRS];
    uint64_t err_count[N_ERRS], err_other;
    uint64_t w_completed, w_ok;
    size_t record_bytes;
    histogram hist;
} run;

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench_raw_produce: %s: %s\n", what, why);
    exit(1);
}

static void count_error(run *r, rd_kafka_resp_err_t err)
{
    for (int i = 0; i < N_ERRS; i++) {
        if (r->err_count[i] && r->err_code[i] != err)
            continue;
        r->err_code[i] = err;
        r->err_count[i]++;
        return;
    }
    r->err_other++;
}

/* Encodes a fresh task into c's buffer and produces it. */
static void client_send(run *r, client *c)
{
    char task_id[MC_UUID_STR_LEN + 1];
    int64_t now = mc_now_ms();
    mc_uuid7_next(&r->uuids, now, task_id);
    mc_command cmd = {
        .kind = MC_CMD_SUBMIT,
        .submit =
            {
                .app_id = APP_ID,
                .task_id = task_id,
                .due_at = now + DELAY_MS,
                .callback = {.url = CALLBACK_URL,
                             .method = "POST",
                             .body = (const uint8_t *)CALLBACK_BODY,
                             .body_len = sizeof CALLBACK_BODY - 1},
                .attempt = 1,
                .created_at = now,
            },
    };
    mc_buf_reset(&c->value);
    if (mc_encode_command(&cmd, &c->value) != 0)
        die("mc_encode_command", "out of memory");
    r->record_bytes = c->value.len;
    c->key_len = mc_task_key(APP_ID, task_id, c->key, sizeof c->key);
    c->start_ns = mono_ns();
    r->sent++;
    rd_kafka_resp_err_t err =
        rd_kafka_producev(r->rk, RD_KAFKA_V_RKT(r->topic), RD_KAFKA_V_KEY(c->key, c->key_len),
                          RD_KAFKA_V_VALUE(c->value.data, c->value.len), RD_KAFKA_V_MSGFLAGS(0),
                          RD_KAFKA_V_OPAQUE(c), RD_KAFKA_V_END);
    if (err) {
        /* Refused at once (queue full, fatal error): counted, and the client
         * stops, as a connection that got an error answer would retry later. */
        r->produce_errors++;
        r->completed++;
        count_error(r, err);
    }
}

/* Delivery report: count and time it, then the client's next record. */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    run *r = opaque;
    client *c = m->_private;
    int64_t now = mono_ns();
    r->completed++;
    if (m->err)
        count_error(r, m->err);
    else
        r->ok++;
    if (r->phase == PH_MEASURE) {
        r->w_completed++;
        r->w_ok += m->err == 0;
        hist_add(&r->hist, (uint64_t)((now - c->start_ns) / 1000));
    }
    if (r->phase != PH_DRAIN)
        client_send(r, c);
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)rk;
    (void)opaque;
    fprintf(stderr, "bench_raw_produce: kafka: %s: %s\n",
            rd_kafka_err2str((rd_kafka_resp_err_t)err), reason);
}

static void conf_set(rd_kafka_conf_t *conf, const char *key, const char *value)
{
    char errstr[512];
    if (rd_kafka_conf_set(conf, key, value, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
        fprintf(stderr, "bench_raw_produce: %s=%s: %s\n", key, value, errstr);
        exit(2);
    }
}

static double parse_num(const char *flag, const char *v, double lo)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || *end || end == v || x < lo) {
        fprintf(stderr, "bench_raw_produce: %s: bad value %s\n", flag, v);
        exit(2);
    }
    return x;
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s -b BROKERS -t TOPIC [-c CLIENTS] [-d SECONDS] [-w SECONDS] "
            "[-X KEY=VALUE]...\n",
            prog);
}

/* Parses the command line, runs the clients, prints the summary. */
int main(int argc, char **argv)
{
    const char *brokers = NULL, *topic = NULL;
    double duration_s = 10, warmup_s = 1;
    run *r = calloc(1, sizeof *r); /* large (the histogram): not on the stack */
    if (!r)
        die("calloc", "out of memory");
    r->n_clients = 128;
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    conf_set(conf, "client.id", "mooncake");
    conf_set(conf, "enable.idempotence", "true");
    conf_set(conf, "message.timeout.ms", "5000");
    conf_set(conf, "linger.ms", "5");
    conf_set(conf, "socket.nagle.disable", "true");
    int opt;
    while ((opt = getopt(argc, argv, "b:t:c:d:w:X:h")) != -1) {
        switch (opt) {
        case 'b':
            brokers = optarg;
            break;
        case 't':
            topic = optarg;
            break;
        case 'c':
            r->n_clients = (long)parse_num("-c", optarg, 1);
            break;
        case 'd':
            duration_s = parse_num("-d", optarg, 0.001);
            break;
        case 'w':
            warmup_s = parse_num("-w", optarg, 0);
            break;
        case 'X': {
            char *eq = strchr(optarg, '=');
            if (!eq) {
                fprintf(stderr, "bench_raw_produce: -X %s: KEY=VALUE expected\n", optarg);
                return 2;
            }
            *eq = '\0';
            conf_set(conf, optarg, eq + 1);
            break;
        }
        default:
            usage(argv[0]);
            return opt == 'h' ? 0 : 2;
        }
    }
    if (!brokers || !topic || optind != argc) {
        usage(argv[0]);
        return 2;
    }
    conf_set(conf, "bootstrap.servers", brokers);
    rd_kafka_conf_set_opaque(conf, r);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_error_cb(conf, on_error);
    char errstr[512];
    if (!(r->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr)))
        die("rd_kafka_new", errstr);
    if (!(r->topic = rd_kafka_topic_new(r->rk, topic, NULL)))
        die("rd_kafka_topic_new", rd_kafka_err2str(rd_kafka_last_error()));
    if (mc_uuid7_init(&r->uuids) != 0)
        die("mc_uuid7_init", "failed");
    /* Connected, the topic known, before the clock starts. */
    const rd_kafka_metadata_t *md;
    rd_kafka_resp_err_t err = rd_kafka_metadata(r->rk, 0, r->topic, &md, 30000);
    if (err)
        die("metadata", rd_kafka_err2str(err));
    bool ok = md->topic_cnt == 1 && !md->topics[0].err && md->topics[0].partition_cnt > 0;
    rd_kafka_metadata_destroy(md);
    if (!ok)
        die(topic, "no such topic");

    if (!(r->clients = calloc((size_t)r->n_clients, sizeof *r->clients)))
        die("calloc", "out of memory");
    int64_t t0 = mono_ns();
    r->t_measure = t0 + (int64_t)(warmup_s * 1e9);
    r->t_end = r->t_measure + (int64_t)(duration_s * 1e9);
    for (long i = 0; i < r->n_clients; i++)
        client_send(r, &r->clients[i]);
    while (r->phase != PH_DRAIN) {
        int64_t now = mono_ns();
        if (r->phase == PH_WARMUP && now >= r->t_measure) {
            r->phase = PH_MEASURE;
            r->t_end += now - r->t_measure;
            r->t_measure = now;
            r->cpu_measure = cpu_s();
            printf("measure-start\n");
            fflush(stdout);
        } else if (r->phase == PH_MEASURE && now >= r->t_end) {
            r->phase = PH_DRAIN;
            r->t_end = now;
            r->cpu_end = cpu_s();
            printf("measure-end\n");
            fflush(stdout);
            break;
        }
        int64_t ms = ((r->phase == PH_WARMUP ? r->t_measure : r->t_end) - now) / 1000000 + 1;
        rd_kafka_poll(r->rk, ms < TICK_MS ? (int)ms : TICK_MS);
    }
    rd_kafka_flush(r->rk, 30000);
    uint64_t lost = r->sent - r->completed; /* never reported */

    double window = (double)(r->t_end - r->t_measure) / 1e9;
    printf("{\"connections\":%ld,\"sent\":%" PRIu64 ",\"completed\":%" PRIu64
           ",\"status\":{\"ok\":%" PRIu64,
           r->n_clients, r->sent, r->completed, r->ok);
    for (int i = 0; i < N_ERRS; i++)
        if (r->err_count[i])
            printf(",\"%s\":%" PRIu64, rd_kafka_err2name(r->err_code[i]), r->err_count[i]);
    if (r->err_other)
        printf(",\"other\":%" PRIu64, r->err_other);
    printf("},\"errors\":{\"produce\":%" PRIu64 ",\"unreported\":%" PRIu64 "},\"window_s\":%.3f,"
           "\"window_completed\":%" PRIu64 ",\"window_status\":{\"ok\":%" PRIu64 "},"
           "\"throughput\":%.1f,\"mean_ms\":%.3f,\"p50_ms\":%.3f,\"p90_ms\":%.3f,"
           "\"p99_ms\":%.3f,\"p999_ms\":%.3f,\"max_ms\":%.3f,\"cpu_s\":%.3f,"
           "\"window_cpu_s\":%.3f,\"record_bytes\":%zu}\n",
           r->produce_errors, lost, window, r->w_completed, r->w_ok,
           (double)r->w_completed / window,
           r->hist.n ? r->hist.sum_us / (double)r->hist.n / 1000 : 0,
           hist_quantile_ms(&r->hist, 0.5), hist_quantile_ms(&r->hist, 0.9),
           hist_quantile_ms(&r->hist, 0.99), hist_quantile_ms(&r->hist, 0.999),
           (double)r->hist.max_us / 1000, cpu_s(), r->cpu_end - r->cpu_measure, r->record_bytes);
    rd_kafka_topic_destroy(r->topic);
    rd_kafka_destroy(r->rk);
    for (long i = 0; i < r->n_clients; i++)
        mc_buf_free(&r->clients[i].value);
    free(r->clients);
    mc_uuid7_destroy(&r->uuids);
    free(r);
    return 0;
}
