/* A cheap closed-loop HTTP/1.1 load generator for tools/bench/bench-gateway: one
 * thread, one epoll set, C keep-alive connections each with exactly one
 * request in flight (the next one leaves as soon as the answer is in), so
 * throughput = C / latency and the generator spends a few µs of CPU per
 * request on a machine it shares with the server and the broker.
 *
 * Every request is the same bytes (method, path, Host, the -H headers,
 * Content-Length and the body), built once. Answers are parsed in full:
 * status line, headers (Content-Length, Transfer-Encoding: chunked,
 * Connection: close), interim 1xx answers skipped, body read to its end, so
 * a request counts only when its whole answer has arrived. When the server
 * closes a connection (after an answer with Connection: close, or with a
 * request in flight) the generator reconnects and goes on; a request that was
 * in flight then counts as an error, never as an answer.
 *
 * Latency: CLOCK_MONOTONIC from the first byte written to the last byte of
 * the answer parsed, into a log-linear histogram (exact below 128 µs, then 64
 * buckets per power of two: < 1 % error, up to days). The run is -w seconds
 * of warm-up (connections opened, nothing recorded), -d seconds measured,
 * then a drain: no new requests, the ones in flight are waited for (up to
 * the timeout), so sent == completed + errors at the end.
 *
 * Usage: bench_http_load -p PORT [-a ADDRESS] [-c CONNECTIONS] [-d SECONDS]
 *                        [-w SECONDS] [-m METHOD] [-u PATH] [-H 'Name: value']...
 *                        [-b BODY | -f BODY_FILE] [-t TIMEOUT_MS]
 *   -a  server address (default 127.0.0.1), -p its port
 *   -c  connections, each with one request in flight (default 128)
 *   -d  measured seconds (default 10); -w warm-up seconds before (default 1)
 *   -m  method (default POST), -u path (default /), -H a header (repeatable)
 *   -b  body text, -f body read from a file (default: no body)
 *   -t  a request unanswered after this long is an error (default 30000)
 * On stdout: "measure-start" when the measured window opens, "measure-end"
 * when it closes (a driver may sample CPU then), and at the end one JSON line:
 *   {"sent", "completed", "status": {"200": n, ...}, "errors": {"connect",
 *    "closed", "parse", "timeout"}, "reconnects", "window_s",
 *    "window_completed", "window_status": {...}, "throughput" (answers/s in
 *    the window), "mean_ms", "p50_ms", "p90_ms", "p99_ms", "p999_ms",
 *    "max_ms" (answers completed in the window), "cpu_s" (whole run),
 *    "window_cpu_s"}.
 * sent/completed/status/errors cover the whole run, warm-up and drain
 * included, so they can be checked against what the server did.
 * Exits 0 when it ran (whatever the answers), 1 when it could not run, 2 on
 * bad usage. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_HEAD 65536          /* an answer's status line and headers, at most */
#define READ_CHUNK 16384        /* bytes asked of each read */
#define RECONNECT_NS 50000000LL /* wait before reconnecting after a failure */
#define TICK_MS 20              /* longest epoll wait: timers and phases are checked this often */

#include "bench_common.h"

/* ---- connections -------------------------------------------------------- */
typedef enum conn_state {
    C_WAITING,    /* closed, reconnects at retry_at */
    C_CONNECTING, /* non-blocking connect under way */
    C_ACTIVE,     /* a request being written or answered */
    C_IDLE,       /* connected, nothing in flight (only while draining) */
} conn_state;

typedef enum parse_state {
    P_HEAD,       /* status line and headers */
    P_BODY_LEN,   /* Content-Length bytes left in remaining */
    P_CHUNK_SIZE, /* a chunk-size line */
    P_CHUNK_DATA, /* remaining bytes of a chunk */
    P_CHUNK_CRLF, /* the CRLF after a chunk */
    P_TRAILER,    /* trailer lines up to an empty one */
    P_BODY_EOF,   /* body delimited by the server closing */
} parse_state;

typedef struct conn {
    int fd;
    conn_state state;
    bool want_out;    /* EPOLLOUT is in the set */
    size_t written;   /* bytes of the request sent */
    int64_t start_ns; /* first byte of the request written */
    int64_t retry_at; /* C_WAITING: when to reconnect */
    char *buf;        /* received bytes not consumed yet: buf[off, len) */
    size_t off, len, cap;
    parse_state ps;
    int status;
    int64_t remaining;
    bool close_after; /* the server will close after this answer */
    bool opened;      /* connected once before: the next open is a reconnect */
} conn;

typedef enum phase { PH_WARMUP, PH_MEASURE, PH_DRAIN } phase;

#define N_STATUS 600

typedef struct load {
    struct sockaddr_storage addr;
    socklen_t addrlen;
    char *req;
    size_t req_len;
    bool head; /* HEAD requests get answers without bodies */
    long n_conns;
    double warmup_s, duration_s;
    int64_t timeout_ns;

    int epfd;
    conn *conns;
    phase phase;
    int64_t t_measure, t_end; /* monotonic ns: planned, then when it happened */
    int64_t next_scan;        /* next look for reconnects and timeouts */
    double cpu_measure, cpu_end;
    long active; /* connections with a request in flight */

    uint64_t sent, completed, status[N_STATUS], other_status;
    uint64_t err_connect, err_closed, err_parse, err_timeout, reconnects;
    uint64_t w_completed, w_status[N_STATUS], w_other_status;
    histogram hist;
} load;

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench_http_load: %s: %s\n", what, why);
    exit(1);
}

/* Raises the soft limit on open files to what n connections need (up to
 * the hard limit), so -c 2000 works under the usual soft limit of 1024. */
static void raise_fd_limit(long n)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)n + 64;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
        return;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
}

static void set_events(load *l, conn *c, bool out)
{
    struct epoll_event ev = {.events = EPOLLIN | (out ? EPOLLOUT : 0), .data.ptr = c};
    if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, c->fd, &ev) != 0)
        die("epoll_ctl MOD", strerror(errno));
    c->want_out = out;
}

/* Closes c; it reconnects after delay_ns (0: at the next loop turn). */
static void conn_close(load *l, conn *c, int64_t delay_ns)
{
    if (c->fd >= 0) {
        epoll_ctl(l->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
    }
    if (c->state == C_ACTIVE)
        l->active--;
    c->state = C_WAITING;
    c->retry_at = mono_ns() + delay_ns;
    c->off = c->len = 0;
}

/* A request in flight on c failed: count it, drop the connection. */
static void conn_fail(load *l, conn *c, uint64_t *counter, int64_t delay_ns)
{
    if (c->state == C_ACTIVE)
        (*counter)++;
    conn_close(l, c, delay_ns);
}

static void conn_open(load *l, conn *c)
{
    if (c->opened)
        l->reconnects++;
    c->opened = true;
    c->fd = socket(l->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        die("socket", strerror(errno));
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, c->fd, &ev) != 0)
        die("epoll_ctl ADD", strerror(errno));
    c->want_out = true;
    c->state = C_CONNECTING;
    if (connect(c->fd, (struct sockaddr *)&l->addr, l->addrlen) != 0 && errno != EINPROGRESS) {
        l->err_connect++;
        conn_close(l, c, RECONNECT_NS);
    }
}

/* Writes what is left of the request; false when the connection failed. */
static bool conn_write(load *l, conn *c)
{
    while (c->written < l->req_len) {
        ssize_t n = send(c->fd, l->req + c->written, l->req_len - c->written, MSG_NOSIGNAL);
        if (n > 0) {
            c->written += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!c->want_out)
                set_events(l, c, true);
            return true;
        }
        conn_fail(l, c, &l->err_closed, 0);
        return false;
    }
    if (c->want_out)
        set_events(l, c, false);
    return true;
}

/* Sends the next request on a connected c. */
static void conn_start(load *l, conn *c)
{
    c->state = C_ACTIVE;
    l->active++;
    c->written = 0;
    c->ps = P_HEAD;
    c->start_ns = mono_ns();
    l->sent++;
    conn_write(l, c);
}

static void count_status(uint64_t *table, uint64_t *other, int status)
{
    if (status >= 0 && status < N_STATUS)
        table[status]++;
    else
        (*other)++;
}

/* The answer on c is complete. */
static void conn_answered(load *l, conn *c)
{
    int64_t now = mono_ns();
    l->completed++;
    count_status(l->status, &l->other_status, c->status);
    if (l->phase == PH_MEASURE) {
        l->w_completed++;
        count_status(l->w_status, &l->w_other_status, c->status);
        hist_add(&l->hist, (uint64_t)((now - c->start_ns) / 1000));
    }
    c->state = C_IDLE;
    l->active--;
    if (c->close_after) {
        conn_close(l, c, 0);
        return;
    }
    if (l->phase != PH_DRAIN)
        conn_start(l, c);
}

/* Case-insensitive: does the header line [p, end) have this name? Then
 * *value points past the colon and blanks. */
static bool header_is(const char *p, const char *end, const char *name, const char **value)
{
    size_t n = strlen(name);
    if ((size_t)(end - p) <= n || p[n] != ':' || strncasecmp(p, name, n) != 0)
        return false;
    p += n + 1;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    *value = p;
    return true;
}

static bool contains_token(const char *p, const char *end, const char *token)
{
    size_t n = strlen(token);
    for (; p + n <= end; p++)
        if (strncasecmp(p, token, n) == 0)
            return true;
    return false;
}

/* Parses a complete head [p, end) (end just past the blank line). Returns
 * false on a malformed one. */
static bool parse_head(load *l, conn *c, const char *p, const char *end)
{
    const char *eol = memchr(p, '\r', (size_t)(end - p));
    if (!eol || eol - p < 12 || strncmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ')
        return false;
    int status = 0;
    for (int i = 9; i < 12; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        status = status * 10 + (p[i] - '0');
    }
    c->status = status;
    c->close_after = p[7] == '0'; /* HTTP/1.0: closes unless keep-alive is said */
    bool chunked = false, has_len = false;
    int64_t len = 0;
    for (p = eol + 2; p < end - 2; p = eol + 2) {
        eol = memchr(p, '\r', (size_t)(end - p));
        if (!eol)
            return false;
        const char *v;
        if (header_is(p, eol, "content-length", &v)) {
            len = 0;
            if (v == eol)
                return false;
            for (; v < eol && *v >= '0' && *v <= '9'; v++)
                len = len * 10 + (*v - '0');
            if (len < 0)
                return false;
            has_len = true;
        } else if (header_is(p, eol, "transfer-encoding", &v)) {
            chunked = contains_token(v, eol, "chunked");
        } else if (header_is(p, eol, "connection", &v)) {
            if (contains_token(v, eol, "close"))
                c->close_after = true;
            else if (contains_token(v, eol, "keep-alive"))
                c->close_after = false;
        }
    }
    if (l->head || status == 204 || status == 304 || (status >= 100 && status < 200)) {
        c->ps = P_BODY_LEN;
        c->remaining = 0;
    } else if (chunked) {
        c->ps = P_CHUNK_SIZE;
    } else if (has_len) {
        c->ps = P_BODY_LEN;
        c->remaining = len;
    } else {
        c->ps = P_BODY_EOF;
        c->close_after = true;
    }
    return true;
}

/* Consumes what can be parsed of buf[off, len). Returns -1 on a malformed
 * answer, 1 when an answer completed, 0 when more bytes are needed. */
static int parse(load *l, conn *c)
{
    for (;;) {
        char *p = c->buf + c->off;
        size_t avail = c->len - c->off;
        switch (c->ps) {
        case P_HEAD: {
            char *end = avail >= 4 ? memmem(p, avail, "\r\n\r\n", 4) : NULL;
            if (!end)
                return avail > MAX_HEAD ? -1 : 0;
            end += 4;
            if (!parse_head(l, c, p, end))
                return -1;
            c->off += (size_t)(end - p);
            if (c->status >= 100 && c->status < 200 && c->status != 101) {
                c->ps = P_HEAD; /* interim answer: the real one follows */
                continue;
            }
            if (c->ps == P_BODY_LEN && c->remaining == 0)
                return 1;
            continue;
        }
        case P_BODY_LEN:
        case P_CHUNK_DATA: {
            size_t take = (size_t)c->remaining < avail ? (size_t)c->remaining : avail;
            c->off += take;
            c->remaining -= (int64_t)take;
            if (c->remaining > 0)
                return 0;
            if (c->ps == P_BODY_LEN)
                return 1;
            c->ps = P_CHUNK_CRLF;
            continue;
        }
        case P_CHUNK_CRLF:
            if (avail < 2)
                return 0;
            if (p[0] != '\r' || p[1] != '\n')
                return -1;
            c->off += 2;
            c->ps = P_CHUNK_SIZE;
            continue;
        case P_CHUNK_SIZE: {
            char *eol = memmem(p, avail, "\r\n", 2);
            if (!eol)
                return avail > 1024 ? -1 : 0;
            int64_t size = 0;
            char *q = p;
            for (; q < eol; q++) {
                int d = *q >= '0' && *q <= '9'   ? *q - '0'
                        : *q >= 'a' && *q <= 'f' ? *q - 'a' + 10
                        : *q >= 'A' && *q <= 'F' ? *q - 'A' + 10
                                                 : -1;
                if (d < 0)
                    break;
                if (size > (INT64_MAX >> 4))
                    return -1;
                size = size * 16 + d;
            }
            if (q == p || (q < eol && *q != ';' && *q != ' ' && *q != '\t'))
                return -1;
            c->off += (size_t)(eol + 2 - p);
            c->remaining = size;
            c->ps = size ? P_CHUNK_DATA : P_TRAILER;
            continue;
        }
        case P_TRAILER: {
            char *eol = memmem(p, avail, "\r\n", 2);
            if (!eol)
                return avail > MAX_HEAD ? -1 : 0;
            c->off += (size_t)(eol + 2 - p);
            if (eol == p)
                return 1;
            continue;
        }
        case P_BODY_EOF:
            c->off = c->len;
            return 0;
        }
    }
}

/* Reads what c's socket has and handles the answers in it. */
static void conn_read(load *l, conn *c)
{
    for (;;) {
        if (c->off == c->len) {
            c->off = c->len = 0;
        } else if (c->cap - c->len < READ_CHUNK && c->off > 0) {
            memmove(c->buf, c->buf + c->off, c->len - c->off);
            c->len -= c->off;
            c->off = 0;
        }
        if (c->cap - c->len < READ_CHUNK) {
            size_t cap = c->cap ? c->cap * 2 : 2 * READ_CHUNK;
            char *b = realloc(c->buf, cap);
            if (!b)
                die("realloc", "out of memory");
            c->buf = b;
            c->cap = cap;
        }
        ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            /* Closed: an answer delimited by the close is complete now;
             * anything else in flight failed. */
            if (c->state == C_ACTIVE && c->ps == P_BODY_EOF) {
                c->close_after = true;
                conn_answered(l, c);
                return;
            }
            conn_fail(l, c, &l->err_closed, n < 0 ? RECONNECT_NS : 0);
            return;
        }
        c->len += (size_t)n;
        if (c->state != C_ACTIVE) { /* bytes nobody asked for */
            l->err_parse++;
            conn_close(l, c, 0);
            return;
        }
        for (;;) {
            int r = parse(l, c);
            if (r < 0) {
                conn_fail(l, c, &l->err_parse, 0);
                return;
            }
            if (r == 0)
                break;
            conn_answered(l, c);
            if (c->state != C_ACTIVE)
                return;            /* closed, or idle while draining */
            if (c->off < c->len) { /* bytes before our request was sent */
                conn_fail(l, c, &l->err_parse, 0);
                return;
            }
        }
        if ((size_t)n < c->cap - (c->len - (size_t)n))
            return; /* short read: the socket is empty */
    }
}

static void on_event(load *l, conn *c, uint32_t events)
{
    if (c->state == C_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            err = errno;
        if (err) {
            l->err_connect++;
            conn_close(l, c, RECONNECT_NS);
            return;
        }
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        if (l->phase == PH_DRAIN) {
            conn_close(l, c, 0);
            return;
        }
        c->state = C_IDLE;
        set_events(l, c, false);
        conn_start(l, c);
        return;
    }
    if (c->fd < 0)
        return;
    if ((events & EPOLLOUT) && c->state == C_ACTIVE && !conn_write(l, c))
        return;
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
        conn_read(l, c);
}

/* Timers: reconnects due, requests past the timeout, phase changes. */
static void tick(load *l, int64_t now)
{
    if (l->phase == PH_WARMUP && now >= l->t_measure) {
        l->phase = PH_MEASURE;
        l->t_end += now - l->t_measure;
        l->t_measure = now;
        l->cpu_measure = cpu_s();
        printf("measure-start\n");
        fflush(stdout);
    }
    if (l->phase == PH_MEASURE && now >= l->t_end) {
        l->phase = PH_DRAIN;
        l->t_end = now;
        l->cpu_end = cpu_s();
        printf("measure-end\n");
        fflush(stdout);
    }
    if (now < l->next_scan)
        return;
    l->next_scan = now + TICK_MS * 1000000LL / 2;
    for (long i = 0; i < l->n_conns; i++) {
        conn *c = &l->conns[i];
        if (c->state == C_WAITING && l->phase != PH_DRAIN && now >= c->retry_at)
            conn_open(l, c);
        else if (c->state == C_ACTIVE && now - c->start_ns > l->timeout_ns)
            conn_fail(l, c, &l->err_timeout, 0);
    }
}

static double parse_num(const char *flag, const char *v, double lo)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || *end || end == v || x < lo) {
        fprintf(stderr, "bench_http_load: %s: bad value %s\n", flag, v);
        exit(2);
    }
    return x;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die(path, strerror(errno));
    char *data = NULL;
    size_t cap = 0;
    *len = 0;
    for (;;) {
        if (cap - *len < 4096) {
            cap = cap ? cap * 2 : 8192;
            if (!(data = realloc(data, cap)))
                die("realloc", "out of memory");
        }
        size_t n = fread(data + *len, 1, cap - *len, f);
        *len += n;
        if (n == 0)
            break;
    }
    if (ferror(f))
        die(path, "read error");
    fclose(f);
    return data;
}

static void print_status(const char *name, const uint64_t *table, uint64_t other)
{
    printf("\"%s\":{", name);
    const char *sep = "";
    for (int s = 0; s < N_STATUS; s++) {
        if (table[s]) {
            printf("%s\"%d\":%" PRIu64, sep, s, table[s]);
            sep = ",";
        }
    }
    if (other)
        printf("%s\"other\":%" PRIu64, sep, other);
    printf("}");
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s -p PORT [-a ADDRESS] [-c CONNECTIONS] [-d SECONDS] [-w SECONDS]\n"
            "       [-m METHOD] [-u PATH] [-H 'Name: value']... [-b BODY | -f FILE] "
            "[-t TIMEOUT_MS]\n",
            prog);
}

/* Parses the command line, runs the load, prints the summary. */
int main(int argc, char **argv)
{
    const char *address = "127.0.0.1", *port = NULL, *method = "POST", *path = "/";
    const char *body = NULL;
    size_t body_len = 0;
    char *body_file = NULL;
    const char **headers = calloc((size_t)argc, sizeof *headers);
    load *l = calloc(1, sizeof *l); /* large (the histogram): not on the stack */
    if (!headers || !l)
        die("calloc", "out of memory");
    size_t n_headers = 0;
    l->n_conns = 128;
    l->duration_s = 10;
    l->warmup_s = 1;
    l->timeout_ns = 30000LL * 1000000;
    int opt;
    while ((opt = getopt(argc, argv, "a:p:c:d:w:m:u:H:b:f:t:h")) != -1) {
        switch (opt) {
        case 'a':
            address = optarg;
            break;
        case 'p':
            port = optarg;
            break;
        case 'c':
            l->n_conns = (long)parse_num("-c", optarg, 1);
            break;
        case 'd':
            l->duration_s = parse_num("-d", optarg, 0.001);
            break;
        case 'w':
            l->warmup_s = parse_num("-w", optarg, 0);
            break;
        case 'm':
            method = optarg;
            break;
        case 'u':
            path = optarg;
            break;
        case 'H':
            headers[n_headers++] = optarg;
            break;
        case 'b':
            body = optarg;
            body_len = strlen(optarg);
            break;
        case 'f':
            body = body_file = read_file(optarg, &body_len);
            break;
        case 't':
            l->timeout_ns = (int64_t)(parse_num("-t", optarg, 1) * 1e6);
            break;
        default:
            usage(argv[0]);
            return opt == 'h' ? 0 : 2;
        }
    }
    if (!port || optind != argc) {
        usage(argv[0]);
        return 2;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
    int gai = getaddrinfo(address, port, &hints, &ai);
    if (gai != 0)
        die(address, gai_strerror(gai));
    memcpy(&l->addr, ai->ai_addr, ai->ai_addrlen);
    l->addrlen = ai->ai_addrlen;
    freeaddrinfo(ai);
    l->head = strcasecmp(method, "HEAD") == 0;

    /* The request, built once. */
    size_t cap = strlen(method) + strlen(path) + strlen(address) + strlen(port) + body_len + 128;
    for (size_t i = 0; i < n_headers; i++)
        cap += strlen(headers[i]) + 2;
    if (!(l->req = malloc(cap)))
        die("malloc", "out of memory");
    int n = snprintf(l->req, cap, "%s %s HTTP/1.1\r\nHost: %s:%s\r\n", method, path, address, port);
    for (size_t i = 0; i < n_headers; i++)
        n += snprintf(l->req + n, cap - (size_t)n, "%s\r\n", headers[i]);
    if (body || !strcmp(method, "POST") || !strcmp(method, "PUT") || !strcmp(method, "PATCH"))
        n += snprintf(l->req + n, cap - (size_t)n, "Content-Length: %zu\r\n", body_len);
    n += snprintf(l->req + n, cap - (size_t)n, "\r\n");
    if (body_len)
        memcpy(l->req + n, body, body_len);
    l->req_len = (size_t)n + body_len;
    free(body_file);
    free(headers);

    raise_fd_limit(l->n_conns);
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (l->epfd < 0)
        die("epoll_create1", strerror(errno));
    if (!(l->conns = calloc((size_t)l->n_conns, sizeof *l->conns)))
        die("calloc", "out of memory");
    int64_t t0 = mono_ns();
    l->t_measure = t0 + (int64_t)(l->warmup_s * 1e9);
    l->t_end = l->t_measure + (int64_t)(l->duration_s * 1e9);
    l->phase = PH_WARMUP;
    for (long i = 0; i < l->n_conns; i++) {
        l->conns[i].fd = -1;
        conn_open(l, &l->conns[i]);
    }

    struct epoll_event evs[256];
    int64_t drain_deadline = 0;
    for (;;) {
        int64_t now = mono_ns();
        tick(l, now);
        if (l->phase == PH_DRAIN) {
            if (!drain_deadline)
                drain_deadline = now + l->timeout_ns;
            if (l->active == 0 || now > drain_deadline)
                break;
        }
        int wait = TICK_MS;
        if (l->phase != PH_DRAIN) {
            int64_t next = l->phase == PH_WARMUP ? l->t_measure : l->t_end;
            int64_t ms = (next - now) / 1000000 + 1;
            if (ms < wait)
                wait = (int)ms;
        }
        int k = epoll_wait(l->epfd, evs, 256, wait);
        if (k < 0 && errno != EINTR)
            die("epoll_wait", strerror(errno));
        for (int i = 0; i < k; i++)
            on_event(l, evs[i].data.ptr, evs[i].events);
    }
    for (long i = 0; i < l->n_conns; i++) {
        conn *c = &l->conns[i];
        if (c->state == C_ACTIVE)
            l->err_timeout++; /* still unanswered when the drain gave up */
        if (c->fd >= 0)
            close(c->fd);
        free(c->buf);
    }

    double window = (double)(l->t_end - l->t_measure) / 1e9;
    printf("{\"connections\":%ld,\"sent\":%" PRIu64 ",\"completed\":%" PRIu64 ",", l->n_conns,
           l->sent, l->completed);
    print_status("status", l->status, l->other_status);
    printf(",\"errors\":{\"connect\":%" PRIu64 ",\"closed\":%" PRIu64 ",\"parse\":%" PRIu64
           ",\"timeout\":%" PRIu64 "},\"reconnects\":%" PRIu64 ",\"window_s\":%.3f,"
           "\"window_completed\":%" PRIu64 ",",
           l->err_connect, l->err_closed, l->err_parse, l->err_timeout, l->reconnects, window,
           l->w_completed);
    print_status("window_status", l->w_status, l->w_other_status);
    printf(",\"throughput\":%.1f,\"mean_ms\":%.3f,\"p50_ms\":%.3f,\"p90_ms\":%.3f,"
           "\"p99_ms\":%.3f,\"p999_ms\":%.3f,\"max_ms\":%.3f,\"cpu_s\":%.3f,"
           "\"window_cpu_s\":%.3f}\n",
           (double)l->w_completed / window,
           l->hist.n ? l->hist.sum_us / (double)l->hist.n / 1000 : 0,
           hist_quantile_ms(&l->hist, 0.5), hist_quantile_ms(&l->hist, 0.9),
           hist_quantile_ms(&l->hist, 0.99), hist_quantile_ms(&l->hist, 0.999),
           (double)l->hist.max_us / 1000, cpu_s(), l->cpu_end - l->cpu_measure);
    free(l->conns);
    free(l->req);
    close(l->epfd);
    free(l);
    return 0;
}
