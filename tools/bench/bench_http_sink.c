/* The HTTP endpoint for tools/bench/bench-executor: a fast keep-alive HTTP/1.1
 * server on 127.0.0.1 that answers every request 200 with a tiny body and
 * records, per request, when it arrived and which benchmark task it was, so
 * the driver can compute calls/s, start lateness (arrival - due) and
 * duplicates/missing from the receiving end, where the call really happens.
 *
 * libmicrohttpd with its own polling threads on epoll (a pool of -t, default
 * 2, threads each running an epoll loop over its share of the connections):
 * the handler does no I/O and takes no lock, so the sink costs a few µs of CPU
 * per request and is not what limits the callers on a 2-core machine.
 *
 * Per request it records, at the first handler call (the request line and all
 * headers are in, the body may still be on its way):
 *   arrival: CLOCK_REALTIME in epoch milliseconds (double, sub-ms precision)
 *   id:      the x-id header (integer; -1 when absent or not a number)
 *   due:     the x-due header (epoch ms; -1 when absent or not a number)
 *   flags:   which of the headers the executor must add were present
 *            (1 Idempotency-Key, 2 webhook-id, 4 webhook-timestamp,
 *            8 User-Agent starting "mooncake/")
 * GET /_sink/stats is answered with "requests=N last_ms=T" and not recorded,
 * for the driver to follow progress.
 *
 * Usage: bench_http_sink [-p PORT] [-t THREADS] [-n N] [-c CAPACITY] [-o FILE]
 *   -p  port on 127.0.0.1 (default 0: any free port)
 *   -t  polling threads (default 2)
 *   -n  stop by itself after N recorded requests (default: only on a signal)
 *   -c  requests kept (default 16,000,000; later ones are counted, not kept)
 *   -o  where to write the records (default: none)
 * Prints "port=P" on stdout once listening. Stops on SIGTERM/SIGINT (or after
 * -n requests), then writes FILE: four arrays, each an 8-byte little-endian
 * count followed by the values: id (int64), due (int64), arrival (double),
 * flags (uint8), in arrival order per thread. Last, one line on stdout:
 *   requests=N kept=K first_ms=F last_ms=L calls_per_s=X cpu_seconds=C
 * where calls_per_s is (N - 1) / (L - F) and cpu_seconds the process's user +
 * system time. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

#define STATS_PATH "/_sink/stats"

typedef struct sink {
    int64_t *id, *due;
    double *arrival;
    uint8_t *flags;
    size_t cap;
    long stop_after;    /* 0: never */
    atomic_size_t next; /* requests seen (recorded or not) */
    _Atomic double last_ms;
    struct MHD_Response *ok;
} sink;

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench_http_sink: %s: %s\n", what, why);
    exit(1);
}

/* A header's value as an integer, -1 when absent or not a plain number. */
static int64_t header_int(struct MHD_Connection *c, const char *name)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
    if (!v || !*v)
        return -1;
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    return errno || *end ? -1 : (int64_t)n;
}

static uint8_t header_flags(struct MHD_Connection *c)
{
    uint8_t f = 0;
    if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, "idempotency-key"))
        f |= 1;
    if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, "webhook-id"))
        f |= 2;
    if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, "webhook-timestamp"))
        f |= 4;
    const char *ua = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "user-agent");
    if (ua && strncmp(ua, "mooncake/", 9) == 0)
        f |= 8;
    return f;
}

static enum MHD_Result answer_stats(sink *s, struct MHD_Connection *c)
{
    char body[128];
    int n = snprintf(body, sizeof body, "requests=%zu last_ms=%.3f\n", atomic_load(&s->next),
                     atomic_load(&s->last_ms));
    struct MHD_Response *r =
        MHD_create_response_from_buffer((size_t)n, body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return rc;
}

/* Records the request at the first call (headers in) and answers it once
 * the whole body has been read. */
static enum MHD_Result on_request(void *arg, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    (void)method;
    (void)version;
    (void)upload_data;
    sink *s = arg;
    if (!*req_cls) {
        *req_cls = s; /* any non-NULL marker: "seen" */
        if (strcmp(url, STATS_PATH) == 0)
            return MHD_YES;
        double t = ((double)mc_now_us() / 1e3);
        size_t i = atomic_fetch_add(&s->next, 1);
        if (i < s->cap) {
            s->arrival[i] = t;
            s->id[i] = header_int(c, "x-id");
            s->due[i] = header_int(c, "x-due");
            s->flags[i] = header_flags(c);
        }
        /* Only a later arrival moves last_ms (threads race to store it). */
        double prev = atomic_load(&s->last_ms);
        while (t > prev && !atomic_compare_exchange_weak(&s->last_ms, &prev, t)) {
        }
        if (s->stop_after > 0 && i + 1 == (size_t)s->stop_after)
            kill(getpid(), SIGTERM);
        return MHD_YES;
    }
    if (*upload_data_size) {
        *upload_data_size = 0; /* the body is read and dropped */
        return MHD_YES;
    }
    if (strcmp(url, STATS_PATH) == 0)
        return answer_stats(s, c);
    return MHD_queue_response(c, MHD_HTTP_OK, s->ok);
}

static void write_array(FILE *f, const void *data, size_t n, size_t size)
{
    uint64_t count = n;
    if (fwrite(&count, sizeof count, 1, f) != 1 || (n && fwrite(data, size, n, f) != n))
        die("write", strerror(errno));
}

/* Records are written per array in index order; the order is arrival order
 * within each handler thread and nearly so across them. */
static void write_records(const sink *s, size_t n, const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        die(path, strerror(errno));
    write_array(f, s->id, n, sizeof *s->id);
    write_array(f, s->due, n, sizeof *s->due);
    write_array(f, s->arrival, n, sizeof *s->arrival);
    write_array(f, s->flags, n, sizeof *s->flags);
    if (fclose(f) != 0)
        die(path, strerror(errno));
}

static long parse_long(const char *flag, const char *v, long lo)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || *end || n < lo) {
        fprintf(stderr, "bench_http_sink: %s: bad value %s\n", flag, v);
        exit(2);
    }
    return n;
}

int main(int argc, char **argv)
{
    long port = 0, threads = 2, cap = 16000000;
    const char *out = NULL;
    sink s = {.stop_after = 0};
    int opt;
    while ((opt = getopt(argc, argv, "p:t:n:c:o:h")) != -1) {
        switch (opt) {
        case 'p':
            port = parse_long("-p", optarg, 0);
            break;
        case 't':
            threads = parse_long("-t", optarg, 1);
            break;
        case 'n':
            s.stop_after = parse_long("-n", optarg, 0);
            break;
        case 'c':
            cap = parse_long("-c", optarg, 1);
            break;
        case 'o':
            out = optarg;
            break;
        default:
            fprintf(stderr, "usage: %s [-p PORT] [-t THREADS] [-n N] [-c CAPACITY] [-o FILE]\n",
                    argv[0]);
            return opt == 'h' ? 0 : 2;
        }
    }
    if (port > 65535) {
        fprintf(stderr, "bench_http_sink: -p: bad port %ld\n", port);
        return 2;
    }
    /* calloc of this size maps fresh zero pages: only what is used costs. */
    s.cap = (size_t)cap;
    s.id = calloc(s.cap, sizeof *s.id);
    s.due = calloc(s.cap, sizeof *s.due);
    s.arrival = calloc(s.cap, sizeof *s.arrival);
    s.flags = calloc(s.cap, sizeof *s.flags);
    if (!s.id || !s.due || !s.arrival || !s.flags)
        die("calloc", "out of memory");
    atomic_init(&s.next, 0);
    atomic_init(&s.last_ms, 0.0);
    static const char body[] = "ok\n";
    s.ok = MHD_create_response_from_buffer(sizeof body - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
    if (!s.ok)
        die("response", "cannot create");

    /* Signals are taken by sigwait in this thread; MHD's threads inherit
     * the mask, so none of them is interrupted by one. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TURBO | MHD_USE_ERROR_LOG, 0,
        NULL, NULL, on_request, &s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)threads, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned int)10000, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)120,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024, MHD_OPTION_END);
    if (!d)
        die("MHD_start_daemon", "cannot listen (port in use?)");
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("port=%u\n", info ? (unsigned)info->port : (unsigned)port);
    fflush(stdout);

    int sig = 0;
    do {
        sigwait(&sigs, &sig);
    } while (sig == SIGPIPE);
    MHD_stop_daemon(d);
    MHD_destroy_response(s.ok);

    size_t n = atomic_load(&s.next);
    size_t kept = n < s.cap ? n : s.cap;
    if (out)
        write_records(&s, kept, out);
    double first = 0, last = 0;
    for (size_t i = 0; i < kept; i++) {
        if (i == 0 || s.arrival[i] < first)
            first = s.arrival[i];
        if (s.arrival[i] > last)
            last = s.arrival[i];
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    printf("requests=%zu kept=%zu first_ms=%.3f last_ms=%.3f calls_per_s=%.0f cpu_seconds=%.3f\n",
           n, kept, first, last, kept > 1 && last > first ? (kept - 1) / ((last - first) / 1e3) : 0,
           cpu);
    free(s.id);
    free(s.due);
    free(s.arrival);
    free(s.flags);
    return 0;
}
