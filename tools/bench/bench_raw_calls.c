/* The baseline for tools/bench/bench-executor: the HTTP side alone, no Kafka.
 * A plain libcurl multi loop, written straight against libcurl with none of
 * mooncake's runtime, makes N POST calls to one URL as fast as it can with C
 * calls in flight, keep-alive connections (at most H per host, the rest wait
 * in curl's queue, as in the executor) and the same request as the
 * executor's: the task's headers (content-type, x-id, x-due), the ones the
 * executor adds (Idempotency-Key, webhook-id, webhook-timestamp, User-Agent,
 * an empty Expect) and the benchmark task's body. So "executor calls/s / raw
 * calls/s" is what Kafka, transactions and the executor's bookkeeping cost
 * on top of what making the calls costs anyway on this machine.
 *
 * It drives curl the efficient way (curl_multi_socket_action on an epoll
 * set, as in curl's multi-event.c and as the executor does through the
 * runner's poll loop: bench_curl.h, shared with bench_raw_sched), so the
 * figure is a ceiling, not a strawman. Easy
 * handles are reused (a call re-arms the handle of the one that finished);
 * -f creates a fresh one per call instead, as the executor does.
 *
 * Usage: bench_raw_calls -u URL -n N [-c CONCURRENCY] [-H HOST_CONNECTIONS] [-f]
 * Prints one line on stdout:
 *   calls=N ok=K errors=E seconds=S calls_per_s=X cpu_seconds=C
 * where seconds runs from the first call started to the last one finished,
 * ok counts HTTP 2xx answers, and cpu_seconds is the process's user + system
 * time. Exits 1 when any call failed. */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench_curl.h"
#include "clock.h"

#define BODY_FMT "{\"order\":\"%ld\",\"action\":\"cancel-unpaid\"}"

typedef struct call {
    CURL *easy;
    struct curl_slist *headers;
    char body[96];
} call;

typedef struct client {
    bench_curl curl; /* its ok and errors count the calls */
    long timeout_ms; /* curl's wish: -1 none, 0 now */
    const char *url;
    long n, started, finished;
    bool fresh;
    call *calls;
} client;

/* Arms c for call number i: the request the executor would make for the
 * benchmark task i (headers rebuilt per call, as the executor does). */
static void call_prepare(client *cl, call *c, long i)
{
    if (cl->fresh || !c->easy) {
        if (c->easy)
            curl_easy_cleanup(c->easy);
        c->easy = bench_curl_easy("mooncake/bench-raw");
        curl_easy_setopt(c->easy, CURLOPT_URL, cl->url);
        curl_easy_setopt(c->easy, CURLOPT_PRIVATE, c);
        curl_easy_setopt(c->easy, CURLOPT_TIMEOUT_MS, 30000L);
    }
    curl_slist_free_all(c->headers);
    c->headers = NULL;
    int64_t now = mc_now_ms();
    char h[160], webhook_id[64];
    bench_curl_header(&c->headers, "content-type: application/json");
    snprintf(h, sizeof h, "x-id: %ld", i);
    bench_curl_header(&c->headers, h);
    snprintf(h, sizeof h, "x-due: %" PRId64, now);
    bench_curl_header(&c->headers, h);
    snprintf(webhook_id, sizeof webhook_id, "bench/r%ld", i);
    bench_curl_executor_headers(&c->headers, webhook_id, "/1", now);
    int len = snprintf(c->body, sizeof c->body, BODY_FMT, i);
    curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(c->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, c->body);
}

static void call_start(client *cl, call *c)
{
    call_prepare(cl, c, cl->started++);
    if (curl_multi_add_handle(cl->curl.multi, c->easy) != CURLM_OK)
        die("curl_multi_add_handle", "failed");
}

static int on_timer(CURLM *m, long timeout_ms, void *arg)
{
    (void)m;
    ((client *)arg)->timeout_ms = timeout_ms;
    return 0;
}

/* Counts what finished and starts the next calls in the freed slots. */
static void reap(client *cl)
{
    bench_curl_ended done;
    while (bench_curl_next_ended(&cl->curl, &done)) {
        cl->finished++;
        if (cl->started < cl->n)
            call_start(cl, done.priv);
    }
}

static long parse_long(const char *flag, const char *v, long lo)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || *end || n < lo) {
        fprintf(stderr, "bench_raw_calls: %s: bad value %s\n", flag, v);
        exit(2);
    }
    return n;
}

int main(int argc, char **argv)
{
    client cl = {.timeout_ms = -1};
    long concurrency = 256, host_connections = 64;
    int opt;
    while ((opt = getopt(argc, argv, "u:n:c:H:fh")) != -1) {
        switch (opt) {
        case 'u':
            cl.url = optarg;
            break;
        case 'n':
            cl.n = parse_long("-n", optarg, 1);
            break;
        case 'c':
            concurrency = parse_long("-c", optarg, 1);
            break;
        case 'H':
            host_connections = parse_long("-H", optarg, 1);
            break;
        case 'f':
            cl.fresh = true;
            break;
        default:
            fprintf(stderr, "usage: %s -u URL -n N [-c CONCURRENCY] [-H HOST_CONNECTIONS] [-f]\n",
                    argv[0]);
            return opt == 'h' ? 0 : 2;
        }
    }
    if (!cl.url || cl.n <= 0) {
        fprintf(stderr, "%s: -u and -n are required (see -h)\n", argv[0]);
        return 2;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        die("curl_global_init", "failed");
    bench_curl_init(&cl.curl, on_timer, &cl, host_connections, concurrency);

    long slots = concurrency < cl.n ? concurrency : cl.n;
    cl.calls = calloc((size_t)slots, sizeof *cl.calls);
    if (!cl.calls)
        die("calloc", "out of memory");
    double t0 = mc_mono_s();
    for (long i = 0; i < slots; i++)
        call_start(&cl, &cl.calls[i]);

    struct epoll_event evs[256];
    while (cl.finished < cl.n) {
        int wait = cl.timeout_ms < 0 ? 1000 : (int)cl.timeout_ms;
        int n = epoll_wait(cl.curl.epfd, evs, 256, wait);
        if (n < 0 && errno != EINTR)
            die("epoll_wait", strerror(errno));
        if (n <= 0) {
            cl.timeout_ms = -1;
            bench_curl_timeout(&cl.curl);
        }
        for (int k = 0; k < n; k++)
            bench_curl_socket_event(&cl.curl, &evs[k]);
        /* A timeout of 0 means "call me now" (e.g. right after an add). */
        if (cl.timeout_ms == 0) {
            cl.timeout_ms = -1;
            bench_curl_timeout(&cl.curl);
        }
        reap(&cl);
    }
    double t1 = mc_mono_s();

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    printf("calls=%ld ok=%ld errors=%ld seconds=%.3f calls_per_s=%.0f cpu_seconds=%.3f\n",
           cl.finished, cl.curl.ok, cl.curl.errors, t1 - t0, cl.finished / (t1 - t0), cpu);
    for (long i = 0; i < slots; i++) {
        if (cl.calls[i].easy)
            curl_easy_cleanup(cl.calls[i].easy);
        curl_slist_free_all(cl.calls[i].headers);
    }
    free(cl.calls);
    bench_curl_cleanup(&cl.curl);
    curl_global_cleanup();
    return cl.curl.errors ? 1 : 0;
}
