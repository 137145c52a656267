/* The last hop of the raw scheduled pipe, the floor of tools/bench/bench-e2e's
 * "due ahead" runs (scenario floor): what mooncake's executor does, written
 * straight against librdkafka and libcurl with none of mooncake's runtime
 * (only its codec, to read the records). A read_committed consumer of IN
 * (group -g, assigned what the group gives) decodes each record as a
 * mooncake Command Submit (bench-e2e's producer writes them: a POST to the
 * sink with headers content-type, x-id, x-due), holds the task in a min-heap
 * by due_at and starts its HTTP call when it is due (epoll's timeout is the
 * earliest due time), with libcurl's multi interface driven by
 * curl_multi_socket_action on the same epoll set, as bench_raw_calls.c
 * (both through bench_curl.h): keep-alive, at most -C calls in flight and
 * -H connections per host, the task's headers plus the ones the executor
 * adds (Idempotency-Key, webhook-id, webhook-timestamp, User-Agent, an empty
 * Expect). The consumer's queue is in the epoll set too (librdkafka writes
 * to a pipe when it fills).
 *
 * When a call ends, a small result record (key: the task's record key, value:
 * the HTTP status as text, "0" when no answer came) goes to OUT, same
 * partition, in a Kafka transaction that also commits the consumer's input
 * offsets, every -c records or -t ms (bench_raw_copy's defaults: 5000 and
 * 100). Only records whose call ended are committed: per partition the
 * lowest offset whose call has not ended is what a transaction commits.
 * -P 2 (the default) makes the transactions take turns on two producers, a
 * thread committing one producer's transaction while the loop goes on
 * calling and writing into the next one's (bench_txn.h's committer, as
 * bench_raw_copy -O), so the calls never wait for a commit (mooncake's
 * executor makes its calls on a thread of its own for the same reason);
 * -P 1 commits in the loop, which then stops for each commit.
 *
 * The group is expected to stay as it is for the whole run: partitions taken
 * away after records were read end it with an error (their tasks would be
 * called twice).
 *
 * Usage: bench_raw_sched -b BROKERS -i IN -o OUT -g GROUP -n RECORDS
 *                        [-c COMMIT_RECORDS] [-t COMMIT_MS] [-P PRODUCERS]
 *                        [-C CONCURRENCY] [-H HOST_CONNECTIONS]
 * Says "assigned" on stderr once it owns partitions; exits after RECORDS
 * calls ended and prints one line on stdout:
 *   calls=N ok=K errors=E cpu_seconds=C
 * where ok counts HTTP 2xx answers and cpu_seconds is the process's user +
 * system time. Exits 1 when a call failed (or on any Kafka error). */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench_curl.h"
#include "bench_kafka.h"
#include "bench_txn.h"
#include "clock.h"
#include "codec.h"

#define MAX_PRODUCERS 4
#define DEFAULT_TIMEOUT_MS 30000

/* ---- tasks ------------------------------------------------------------------ */

/* A task read from IN, from its record until its call ends: one allocation,
 * the strings after the struct. */
typedef struct task {
    int64_t due_us; /* epoch µs */
    int32_t partition;
    uint64_t seq; /* its place in the partition's ring */
    int32_t attempt;
    long timeout_ms;
    char *key; /* the record key, NUL-terminated */
    size_t key_len;
    char *url, *method;
    char **header_lines; /* "name: value" */
    size_t n_headers;
    bool content_type;
    char *body;
    size_t body_len;
    CURL *easy;
    struct curl_slist *headers;
} task;

static char *blob_put(char **at, const void *src, size_t len)
{
    char *p = *at;
    if (len)
        memcpy(p, src, len);
    p[len] = '\0';
    *at += len + 1;
    return p;
}

/* Copies what the call needs out of the decoded Submit (which lives in the
 * arena until the next record). */
static task *task_new(const mc_task *t, const void *key, size_t key_len, int32_t partition)
{
    const mc_callback *cb = &t->callback;
    const char *url = cb->url ? cb->url : "";
    const char *method = cb->method && *cb->method ? cb->method : "POST";
    size_t size = sizeof(task) + cb->n_headers * sizeof(char *) + key_len + 1 + strlen(url) + 1 +
                  strlen(method) + 1 + cb->body_len + 1;
    for (size_t i = 0; i < cb->n_headers; i++)
        size += strlen(cb->headers[i].key) + 2 + strlen(cb->headers[i].value) + 1;
    task *k = malloc(size);
    if (!k)
        die("malloc", "out of memory");
    memset(k, 0, sizeof *k);
    k->due_us = t->due_at * 1000;
    k->partition = partition;
    k->attempt = t->attempt;
    k->timeout_ms = cb->timeout_ms > 0 ? cb->timeout_ms : DEFAULT_TIMEOUT_MS;
    k->header_lines = (char **)(k + 1);
    char *at = (char *)(k->header_lines + cb->n_headers);
    k->key = blob_put(&at, key, key_len);
    k->key_len = key_len;
    k->url = blob_put(&at, url, strlen(url));
    k->method = blob_put(&at, method, strlen(method));
    k->body = blob_put(&at, cb->body, cb->body_len);
    k->body_len = cb->body_len;
    for (size_t i = 0; i < cb->n_headers; i++) {
        int n = sprintf(at, "%s: %s", cb->headers[i].key, cb->headers[i].value);
        k->header_lines[k->n_headers++] = at;
        at += n + 1;
        k->content_type |= strcasecmp(cb->headers[i].key, "content-type") == 0;
    }
    return k;
}

/* The tasks waiting for their due time: a binary min-heap by due_us. */
typedef struct heap {
    task **v;
    size_t n, cap;
} heap;

static void heap_push(heap *h, task *t)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 4096;
        if (!(h->v = realloc(h->v, h->cap * sizeof *h->v)))
            die("realloc", "out of memory");
    }
    size_t i = h->n++;
    while (i > 0 && h->v[(i - 1) / 2]->due_us > t->due_us) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = t;
}

static task *heap_pop(heap *h)
{
    task *top = h->v[0], *last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->v[c + 1]->due_us < h->v[c]->due_us)
            c++;
        if (h->v[c]->due_us >= last->due_us)
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n)
        h->v[i] = last;
    return top;
}

/* ---- offsets: per partition, the records whose call has not ended ---------- */

/* The offsets read from one partition, in order, from the oldest whose call
 * has not ended (head) to the last read (tail - 1); a ring indexed by the
 * record's sequence number on the partition. */
typedef struct part {
    bool read;     /* a record was read since it was assigned */
    int64_t next;  /* the offset after the last record read */
    int64_t *offs; /* by seq & (cap - 1) */
    bool *ended;
    uint64_t head, tail;
    size_t cap; /* a power of two */
} part;

typedef struct parts {
    part *v;
    size_t n;
} parts;

static part *part_of(parts *ps, int32_t p)
{
    if ((size_t)p >= ps->n) {
        size_t n = (size_t)p + 1;
        if (!(ps->v = realloc(ps->v, n * sizeof *ps->v)))
            die("realloc", "out of memory");
        memset(ps->v + ps->n, 0, (n - ps->n) * sizeof *ps->v);
        ps->n = n;
    }
    return &ps->v[p];
}

/* Adds offset as read: its sequence number. */
static uint64_t part_read(part *pt, int64_t offset)
{
    if (pt->tail - pt->head == pt->cap) {
        size_t cap = pt->cap ? 2 * pt->cap : 1024;
        int64_t *offs = malloc(cap * sizeof *offs);
        bool *ended = malloc(cap * sizeof *ended);
        if (!offs || !ended)
            die("malloc", "out of memory");
        for (uint64_t s = pt->head; s < pt->tail; s++) {
            offs[s & (cap - 1)] = pt->offs[s & (pt->cap - 1)];
            ended[s & (cap - 1)] = pt->ended[s & (pt->cap - 1)];
        }
        free(pt->offs);
        free(pt->ended);
        pt->offs = offs;
        pt->ended = ended;
        pt->cap = cap;
    }
    uint64_t seq = pt->tail++;
    pt->offs[seq & (pt->cap - 1)] = offset;
    pt->ended[seq & (pt->cap - 1)] = false;
    pt->read = true;
    pt->next = offset + 1;
    return seq;
}

static void part_ended(part *pt, uint64_t seq)
{
    pt->ended[seq & (pt->cap - 1)] = true;
    while (pt->head < pt->tail && pt->ended[pt->head & (pt->cap - 1)])
        pt->head++;
}

/* What a transaction that ends now commits: per partition read from, the
 * lowest offset whose call has not ended (the next to read when all have). */
static rd_kafka_topic_partition_list_t *committable(const parts *ps, const char *topic)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)ps->n);
    for (size_t p = 0; p < ps->n; p++) {
        const part *pt = &ps->v[p];
        if (!pt->read)
            continue;
        int64_t off = pt->head < pt->tail ? pt->offs[pt->head & (pt->cap - 1)] : pt->next;
        rd_kafka_topic_partition_list_add(l, topic, (int32_t)p)->offset = off;
    }
    return l;
}

/* ---- the loop ------------------------------------------------------------------- */

typedef struct sched {
    const char *in;
    rd_kafka_t *consumer;
    rd_kafka_t *producers[MAX_PRODUCERS];
    rd_kafka_topic_t *rkts[MAX_PRODUCERS];
    int n_producers, turn;
    long in_txn; /* results in the open transaction */
    parts parts;
    heap waiting;
    mc_arena *arena;
    bench_curl curl; /* its ok and errors count the calls */
    int queue_fd, done_fd;
    int64_t curl_deadline_us; /* curl's timer: -1 none */
    CURL **spare;             /* easy handles of ended calls, for the next ones */
    size_t n_spare, cap_spare;
    long n, n_read, in_flight, concurrency, ended;
    bool closing;
} sched;

static void rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *parts_, void *opaque)
{
    sched *s = opaque;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        for (int i = 0; i < parts_->cnt; i++) {
            part *pt = part_of(&s->parts, parts_->elems[i].partition);
            pt->read = false;
            pt->head = pt->tail = 0;
        }
        rd_kafka_assign(rk, parts_);
        fprintf(stderr, "assigned\n");
    } else {
        if (s->n_read && !s->closing)
            die("rebalance", "partitions taken away during the run (one process per group)");
        rd_kafka_assign(rk, NULL);
    }
}

static void epoll_add(int epfd, int fd)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
        die("epoll_ctl ADD", strerror(errno));
}

static void drain_fd(int fd)
{
    char buf[256];
    while (read(fd, buf, sizeof buf) > 0)
        ;
}

/* Every record the consumer's queue holds: decoded, into the heap. */
static void consume(sched *s)
{
    rd_kafka_message_t *m;
    while ((m = rd_kafka_consumer_poll(s->consumer, 0))) {
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                die("consume", rd_kafka_message_errstr(m));
            rd_kafka_message_destroy(m);
            continue;
        }
        mc_command cmd;
        char detail[256];
        mc_arena_reset(s->arena);
        mc_codec_err e =
            mc_decode_command(NULL, m->payload, m->len, s->arena, &cmd, detail, sizeof detail);
        if (e != MC_CODEC_OK)
            die("decode", detail);
        if (cmd.kind != MC_CMD_SUBMIT)
            die("decode", "a record is not a Submit");
        task *t = task_new(&cmd.submit, m->key, m->key_len, m->partition);
        t->seq = part_read(part_of(&s->parts, m->partition), m->offset);
        heap_push(&s->waiting, t);
        s->n_read++;
        rd_kafka_message_destroy(m);
    }
}

/* The request the executor makes for t: its headers, then the executor's. */
static void call_start(sched *s, task *t)
{
    CURL *e = s->n_spare ? s->spare[--s->n_spare] : bench_curl_easy("mooncake/bench-raw-sched");
    t->easy = e;
    int64_t now_ms = mc_now_ms();
    char attempt[16];
    for (size_t i = 0; i < t->n_headers; i++)
        bench_curl_header(&t->headers, t->header_lines[i]);
    snprintf(attempt, sizeof attempt, ":%" PRId32, t->attempt);
    bench_curl_executor_headers(&t->headers, t->key, attempt, now_ms);
    if (!t->content_type)
        bench_curl_header(&t->headers, "Content-Type:");
    curl_easy_setopt(e, CURLOPT_URL, t->url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, t);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, t->timeout_ms);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, (char *)NULL);
    curl_easy_setopt(e, CURLOPT_NOBODY, 0L);
    if (strcmp(t->method, "GET") == 0) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(t->method, "HEAD") == 0) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else {
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)t->body_len);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->body);
        if (strcmp(t->method, "POST") != 0)
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, t->method);
    }
    if (curl_multi_add_handle(s->curl.multi, e) != CURLM_OK)
        die("curl_multi_add_handle", "failed");
    s->in_flight++;
}

static int on_timer(CURLM *m, long timeout_ms, void *arg)
{
    (void)m;
    sched *s = arg;
    s->curl_deadline_us = timeout_ms < 0 ? -1 : mc_now_us() + (int64_t)timeout_ms * 1000;
    return 0;
}

/* The result of an ended call, into the open transaction. */
static void produce_result(sched *s, const task *t, long status)
{
    char v[24];
    int len = snprintf(v, sizeof v, "%ld", status);
    rd_kafka_t *p = s->producers[s->turn];
    while (rd_kafka_produce(s->rkts[s->turn], t->partition, RD_KAFKA_MSG_F_COPY, v, (size_t)len,
                            t->key, t->key_len, NULL) != 0) {
        if (rd_kafka_last_error() != RD_KAFKA_RESP_ERR__QUEUE_FULL)
            die("produce", rd_kafka_err2str(rd_kafka_last_error()));
        rd_kafka_poll(p, 10);
    }
    s->in_txn++;
}

/* The calls that ended: counted, their results written, their records marked ended. */
static void reap(sched *s)
{
    bench_curl_ended done;
    while (bench_curl_next_ended(&s->curl, &done)) {
        task *t = done.priv;
        if (s->n_spare == s->cap_spare) {
            s->cap_spare = s->cap_spare ? 2 * s->cap_spare : 256;
            if (!(s->spare = realloc(s->spare, s->cap_spare * sizeof *s->spare)))
                die("realloc", "out of memory");
        }
        s->spare[s->n_spare++] = done.easy;
        produce_result(s, t, done.result == CURLE_OK ? done.status : 0);
        part_ended(part_of(&s->parts, t->partition), t->seq);
        curl_slist_free_all(t->headers);
        free(t);
        s->in_flight--;
        s->ended++;
    }
}

static void curl_timeout(sched *s)
{
    s->curl_deadline_us = -1;
    bench_curl_timeout(&s->curl);
}

/* The due tasks, as many as there is room for. */
static void start_due(sched *s)
{
    if (!s->waiting.n || s->in_flight >= s->concurrency)
        return;
    int64_t now = mc_now_us();
    while (s->waiting.n && s->in_flight < s->concurrency && s->waiting.v[0]->due_us <= now)
        call_start(s, heap_pop(&s->waiting));
}

/* The turn after this one: its producer begins the next transaction. */
static void begin_next(sched *s)
{
    s->turn = (s->turn + 1) % s->n_producers;
    check(rd_kafka_begin_transaction(s->producers[s->turn]), "begin");
    s->in_txn = 0;
}

static long parse_long(const char *flag, const char *v, long lo, long hi)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || *end || end == v || n < lo || n > hi) {
        fprintf(stderr, "bench_raw_sched: %s: bad value %s\n", flag, v);
        exit(2);
    }
    return n;
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s -b BROKERS -i IN -o OUT -g GROUP -n RECORDS [-c COMMIT_RECORDS] "
            "[-t COMMIT_MS] [-P PRODUCERS] [-C CONCURRENCY] [-H HOST_CONNECTIONS]\n",
            prog);
}

int main(int argc, char **argv)
{
    const char *brokers = "127.0.0.1:9092", *out = NULL, *group = NULL;
    long commit_records = 5000, commit_ms = 100, host_connections = 64;
    sched s = {.n_producers = 2, .concurrency = 256, .curl_deadline_us = -1};
    int opt;
    while ((opt = getopt(argc, argv, "b:i:o:g:n:c:t:P:C:H:h")) != -1) {
        switch (opt) {
        case 'b':
            brokers = optarg;
            break;
        case 'i':
            s.in = optarg;
            break;
        case 'o':
            out = optarg;
            break;
        case 'g':
            group = optarg;
            break;
        case 'n':
            s.n = parse_long("-n", optarg, 1, LONG_MAX);
            break;
        case 'c':
            commit_records = parse_long("-c", optarg, 1, LONG_MAX);
            break;
        case 't':
            commit_ms = parse_long("-t", optarg, 0, LONG_MAX);
            break;
        case 'P':
            s.n_producers = (int)parse_long("-P", optarg, 1, MAX_PRODUCERS);
            break;
        case 'C':
            s.concurrency = parse_long("-C", optarg, 1, 1000000);
            break;
        case 'H':
            host_connections = parse_long("-H", optarg, 1, 1000000);
            break;
        default:
            usage(argv[0]);
            return opt == 'h' ? 0 : 2;
        }
    }
    if (!s.in || !out || !group || s.n <= 0 || optind != argc) {
        usage(argv[0]);
        return 2;
    }
    bool overlap = s.n_producers > 1;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        die("curl_global_init", "failed");
    if (!(s.arena = mc_arena_new()))
        die("mc_arena_new", "out of memory");

    rd_kafka_conf_t *cc = rd_kafka_conf_new();
    set(cc, "auto.offset.reset", "earliest");
    rd_kafka_conf_set_rebalance_cb(cc, rebalance);
    rd_kafka_conf_set_opaque(cc, &s);
    s.consumer = committed_reader(cc, brokers, group);
    for (int i = 0; i < s.n_producers; i++) {
        char txid[300];
        snprintf(txid, sizeof txid, "%s-raw-sched-%d", group, i);
        s.producers[i] = txn_producer(brokers, txid);
        s.rkts[i] = rd_kafka_topic_new(s.producers[i], out, NULL);
    }

    /* curl's sockets, the consumer's queue and the committer's eventfd */
    bench_curl_init(&s.curl, on_timer, &s, host_connections, s.concurrency);
    /* The consumer's queue as a descriptor: librdkafka writes a byte to the
     * pipe when the queue goes from empty to non-empty (rebalances too: the
     * main queue is forwarded to it), so each wake-up drains it whole. */
    int qpipe[2];
    if (pipe2(qpipe, O_NONBLOCK | O_CLOEXEC) != 0)
        die("pipe2", strerror(errno));
    s.queue_fd = qpipe[0];
    rd_kafka_queue_t *queue = rd_kafka_queue_get_consumer(s.consumer);
    rd_kafka_queue_io_event_enable(queue, qpipe[1], "1", 1);
    epoll_add(s.curl.epfd, s.queue_fd);
    s.done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s.done_fd < 0)
        die("eventfd", strerror(errno));
    epoll_add(s.curl.epfd, s.done_fd);

    committer c = {0};
    if (overlap)
        committer_run(&c, false, s.done_fd);

    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, s.in, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t se = rd_kafka_subscribe(s.consumer, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (se)
        die("subscribe", rd_kafka_err2str(se));
    check(rd_kafka_begin_transaction(s.producers[s.turn]), "begin");
    int64_t t_txn = mc_mono_ms();
    consume(&s); /* anything queued before the pipe was watched */

    struct epoll_event evs[256];
    while (s.ended < s.n) {
        /* Sleep until the earliest of: curl's timer, the next due task (when
         * there is room to start it), the open transaction's commit time. */
        int64_t now = mc_now_us(), wake = now + 1000000;
        if (s.curl_deadline_us >= 0 && s.curl_deadline_us < wake)
            wake = s.curl_deadline_us;
        if (s.waiting.n && s.in_flight < s.concurrency && s.waiting.v[0]->due_us < wake)
            wake = s.waiting.v[0]->due_us;
        /* (a commit waiting for the committer thread waits for its eventfd) */
        if (s.in_txn > 0 && !(overlap && committer_busy(&c))) {
            int64_t at = now + (t_txn + commit_ms - mc_mono_ms()) * 1000;
            if (at < wake)
                wake = at;
        }
        int timeout = wake <= now ? 0 : (int)((wake - now + 999) / 1000);
        int k = epoll_wait(s.curl.epfd, evs, 256, timeout);
        if (k < 0 && errno != EINTR)
            die("epoll_wait", strerror(errno));
        for (int i = 0; i < k; i++) {
            int fd = evs[i].data.fd;
            if (fd == s.queue_fd) {
                drain_fd(fd);
                consume(&s);
                continue;
            }
            if (fd == s.done_fd) {
                drain_fd(fd);
                continue;
            }
            bench_curl_socket_event(&s.curl, &evs[i]);
        }
        if (s.curl_deadline_us >= 0 && s.curl_deadline_us <= mc_now_us())
            curl_timeout(&s);
        start_due(&s);
        /* A timer of 0 after an add: curl starts the new calls now. */
        if (s.curl_deadline_us >= 0 && s.curl_deadline_us <= mc_now_us())
            curl_timeout(&s);
        reap(&s);
        bool commit_now = s.in_txn > 0 && s.ended < s.n &&
                          (s.in_txn >= commit_records || mc_mono_ms() - t_txn >= commit_ms);
        if (commit_now && overlap && !committer_busy(&c)) {
            committer_start(&c, s.producers[s.turn], committable(&s.parts, s.in),
                            rd_kafka_consumer_group_metadata(s.consumer));
            begin_next(&s);
            t_txn = mc_mono_ms();
        } else if (commit_now && !overlap) {
            commit_at(s.producers[s.turn], committable(&s.parts, s.in),
                      rd_kafka_consumer_group_metadata(s.consumer), false);
            begin_next(&s);
            t_txn = mc_mono_ms();
        }
    }
    /* Every call ended: the last transaction commits the last offsets. */
    if (overlap)
        committer_wait(&c);
    if (s.in_txn > 0)
        commit_at(s.producers[s.turn], committable(&s.parts, s.in),
                  rd_kafka_consumer_group_metadata(s.consumer), false);
    else
        check(rd_kafka_abort_transaction(s.producers[s.turn], -1), "abort (empty)");
    if (overlap)
        committer_end(&c);

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    printf("calls=%ld ok=%ld errors=%ld cpu_seconds=%.3f\n", s.ended, s.curl.ok, s.curl.errors,
           cpu);
    fflush(stdout);

    s.closing = true;
    rd_kafka_queue_io_event_enable(queue, -1, NULL, 0);
    rd_kafka_queue_destroy(queue);
    rd_kafka_consumer_close(s.consumer);
    rd_kafka_destroy(s.consumer);
    for (int i = 0; i < s.n_producers; i++) {
        rd_kafka_topic_destroy(s.rkts[i]);
        rd_kafka_destroy(s.producers[i]);
    }
    while (s.waiting.n) /* records read beyond RECORDS: never called */
        free(heap_pop(&s.waiting));
    free(s.waiting.v);
    for (size_t i = 0; i < s.n_spare; i++)
        curl_easy_cleanup(s.spare[i]);
    free(s.spare);
    bench_curl_cleanup(&s.curl);
    curl_global_cleanup();
    for (size_t i = 0; i < s.parts.n; i++) {
        free(s.parts.v[i].offs);
        free(s.parts.v[i].ended);
    }
    free(s.parts.v);
    mc_arena_free(s.arena);
    close(qpipe[0]);
    close(qpipe[1]);
    close(s.done_fd);
    return s.curl.errors ? 1 : 0;
}
