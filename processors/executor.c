/* The executor: calls each task's HTTP callback when it is due - the old
 * consumer service, with Kafka in place of its Redis dedup.
 *
 * Input is `ready` (WheelEntry Submit records from the wheel). Two threads:
 *
 * - The runner's thread (the Kafka side) decodes each record into a job,
 *   keeps the partition's window of unfinished records, and, when a call
 *   ends, writes in the open transaction a Result (success) to `results` or
 *   an Attempt (failure) to `retry`, which decides whether to call again and
 *   writes the Result of the failed attempt.
 * - The HTTP thread owns libcurl's multi interface and runs its own small
 *   poll loop in the manner of curl's multi-event.c: curl names the sockets
 *   to watch and its timeout, we tell it what happened. A task that arrives
 *   before its due time (the wheel's lead) is held in a timing wheel and
 *   started on its due millisecond. Many calls are in flight at once;
 *   connections are kept alive and reused, HTTP/2 is used where a TLS server
 *   offers it.
 *
 * Why two threads: a transaction commit blocks the runner's thread for
 * 10-20 ms, sometimes 200 ms (librdkafka's transactional calls are blocking,
 * and are meant to be called with their full timeout), and a call due in
 * that window would start that late. The threads share three lists under
 * one mutex - new jobs, control requests (recall, abandon), finished jobs -
 * and wake each other with an eventfd each; the runner watches its eventfd
 * with mc_ctx_watch_fd. A job belongs to the runner until posted, to the
 * HTTP thread until it is finished, then to the runner again.
 *
 * What a restart calls again. Calls finish out of offset order, so the
 * committed offset is held back to the oldest unfinished record of the
 * partition, and the commit metadata lists what is unfinished above it:
 * "x1 e=E u=D,D,..." - of the records in [offset, E), only those at the
 * offsets given by the deltas D (cumulative, from the committed offset) are
 * unfinished; the rest finished, and their Results/Attempts are committed in
 * the same transaction. After a crash the next owner re-reads from the
 * committed offset, skips what finished, and calls only what was in flight
 * (or held, or queued). Calls themselves are therefore at-least-once, and
 * each carries an Idempotency-Key (task key and attempt) for the receiver.
 *
 * So the metadata stays under Kafka's 4096-byte limit, a partition is paused
 * while it has too many calls unfinished (--executor-max-unfinished); if it
 * still would not fit, the list is cut and the records after the cut count
 * as unread, which can only cause calls to be repeated. */
#include "executor.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "codec.h"
#include "fdset.h"
#include "retry_policy.h"
#include "ssrf.h"
#include "task_rules.h"
#include "timing_wheel.h"
#include "webhook.h"

#define MAX_PARTITIONS 4096
#define METADATA_BUDGET 3900 /* of Kafka's 4096 bytes */
#define KEY_MAX 1024
#define RETRY_AFTER_MAX 64

typedef struct part part;
typedef struct executor executor;

typedef enum job_state { JOB_NEW, JOB_HELD, JOB_QUEUED, JOB_RUNNING, JOB_DONE } job_state;

typedef struct job {
    mc_timer timer; /* while held */
    executor *ex;
    part *part;
    uint64_t gen;      /* the part's generation when read: stale after an abandon */
    int32_t partition; /* the HTTP thread reads this, never the part */
    bool held_at_read; /* counted in part.held */
    int64_t offset;
    int64_t version; /* the task's version (its tasks offset) */
    uint64_t seq;    /* position in its partition's window (see part.base_seq) */
    job_state state;
    struct job *next;                /* in the new, queued or done list */
    struct job *all_prev, *all_next; /* the HTTP thread's jobs */
    mc_arena *arena;
    mc_task task; /* points into arena */
    char key[KEY_MAX];
    /* Filled by the HTTP thread. */
    CURL *easy;
    struct curl_slist *headers;
    CURLcode rc;
    long status;
    bool recalled; /* dropped before its due time: not called */
    int64_t started_at, finished_at;
    uint8_t *snippet;
    size_t snippet_len;
    char retry_after[RETRY_AFTER_MAX];
    bool refused; /* the SSRF guard refused every address */
    char refused_why[256];
    char curl_error[CURL_ERROR_SIZE];
} job;

/* A record of the partition's window: the job while unfinished, NULL after. */
typedef struct slot {
    int64_t offset;
    job *job;
} slot;

struct part {
    int32_t partition;
    bool assigned, paused;
    uint64_t gen; /* bumped when its jobs are abandoned */
    slot *ring;   /* records from the oldest unfinished on, in offset order */
    size_t head, len, cap;
    uint64_t base_seq; /* sequence number of the window's first record */
    size_t unfinished;
    size_t held; /* of those, not due when read (bounded by the wheel's lead) */
    int64_t end; /* one past the last record read; -1 before the first */
    /* From the committed metadata: records below redo_end are finished
     * unless listed in redo (ascending); next_redo indexes the first listed
     * offset not yet read again. */
    int64_t redo_end;
    int64_t *redo;
    size_t n_redo, next_redo;
};

/* A request from the runner to the HTTP thread besides a new job. */
typedef enum ctl_kind { CTL_RECALL, CTL_ABANDON } ctl_kind;
typedef struct ctl {
    ctl_kind kind;
    struct ctl *next;
    int32_t partition;
    int64_t version;   /* recall: versions below this are void */
    char key[KEY_MAX]; /* recall */
    bool done;         /* abandon: set by the HTTP thread, under the mutex */
} ctl;

struct executor {
    mc_ctx *ctx;
    const mc_config *cfg;
    char ready_topic[256];
    mc_output *results, *retry;
    mc_ssrf *ssrf;
    mc_app_secrets *secrets;
    char user_agent[64];

    /* Shared, under mu. */
    pthread_mutex_t mu;
    pthread_cond_t acked;
    job *new_head, *new_tail;
    ctl *ctl_head, *ctl_tail;
    job *done_head, *done_tail;
    int http_wake, done_wake; /* eventfds */
    pthread_t http;
    bool http_started;
    atomic_bool stop, draining;
    atomic_size_t running;

    /* The HTTP thread's own. */
    CURLM *multi;
    mc_timing_wheel *held;
    int64_t curl_due;             /* when curl wants its timeout handled; INT64_MAX: never */
    job *all;                     /* every job it holds, queues or runs */
    job *queue_head, *queue_tail; /* due, waiting for a free slot */
    size_t queued;
    CURL **spare; /* easy handles of finished calls, reset for reuse */
    size_t n_spare;
    mc_fdset watches; /* curl's sockets */

    /* The runner's own. */
    part *parts[MAX_PARTITIONS];
    mc_buf buf;

    mc_counter *succeeded, *failed, *refused, *skipped, *cut, *abandoned, *recalled;
    mc_gauge *in_flight, *held_gauge, *queued_gauge, *paused_gauge;
    mc_histogram *lateness, *duration;
};

static const char *const executor_inputs[] = {"ready", NULL};
/* Resuming a paused partition waits for the fetch in flight, which the
 * broker holds up to fetch.wait.max.ms when there is nothing new (500 ms by
 * default): long enough for the calls to run dry in between. */
static const char *const executor_consumer_defaults[] = {"fetch.wait.max.ms", "20", NULL};

static void wake(int fd)
{
    uint64_t one = 1;
    ssize_t n = write(fd, &one, sizeof one);
    (void)n; /* EAGAIN: the counter is already non-zero, the wake-up pending */
}

static void drain_wake(int fd)
{
    uint64_t v;
    ssize_t n = read(fd, &v, sizeof v);
    (void)n;
}

/* ---- partitions and the unfinished window ---------------------------------- */

static part *part_get(executor *ex, int32_t partition)
{
    if (partition < 0 || partition >= MAX_PARTITIONS)
        return NULL;
    if (!ex->parts[partition]) {
        part *p = calloc(1, sizeof *p);
        if (!p)
            return NULL;
        p->partition = partition;
        p->end = -1;
        ex->parts[partition] = p;
    }
    return ex->parts[partition];
}

static slot *ring_at(part *p, size_t i)
{
    return &p->ring[(p->head + i) % p->cap];
}

static int ring_push(part *p, int64_t offset, job *j)
{
    j->seq = p->base_seq + p->len;
    if (p->len == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 256;
        slot *r = malloc(cap * sizeof *r);
        if (!r)
            return -1;
        for (size_t i = 0; i < p->len; i++)
            r[i] = *ring_at(p, i);
        free(p->ring);
        p->ring = r;
        p->cap = cap;
        p->head = 0;
    }
    *ring_at(p, p->len) = (slot){offset, j};
    p->len++;
    return 0;
}

/* Drops finished records from the front: what is committed starts at the
 * oldest unfinished one. */
static void ring_trim(part *p)
{
    while (p->len && !ring_at(p, 0)->job) {
        p->head = (p->head + 1) % p->cap;
        p->len--;
        p->base_seq++;
    }
}

static void update_pause(executor *ex, part *p)
{
    /* Held tasks do not count: they are bounded by the wheel's lead times
     * the rate, and pausing for them would make the next ones late. */
    size_t max = (size_t)ex->cfg->executor_max_unfinished, busy = p->unfinished - p->held;
    bool want = busy >= max;
    if (p->paused && busy > max / 2)
        want = true; /* hysteresis: resume only after a real drain */
    if (want == p->paused || !p->assigned)
        return;
    if (mc_ctx_pause(ex->ctx, ex->ready_topic, p->partition, want) == 0) {
        p->paused = want;
        mc_gauge_add(ex->paused_gauge, want ? 1 : -1);
    }
}

/* ---- jobs ------------------------------------------------------------------- */

/* Frees j; its easy handle has gone back to the HTTP thread's spares. */
static void job_free(job *j)
{
    if (!j)
        return;
    if (j->easy)
        curl_easy_cleanup(j->easy);
    curl_slist_free_all(j->headers);
    mc_arena_free(j->arena);
    free(j->snippet);
    free(j);
}

/* Marks j's record finished and frees j (runner). */
static void job_finish(executor *ex, job *j)
{
    part *p = j->part;
    ring_at(p, (size_t)(j->seq - p->base_seq))->job = NULL;
    p->unfinished--;
    if (j->held_at_read)
        p->held--;
    ring_trim(p);
    update_pause(ex, p);
    job_free(j);
}

/* Keeps the first --executor-snippet-bytes of the response body, for the
 * retry topic; the rest is read and dropped. */
static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    job *j = arg;
    size_t len = size * n, max = (size_t)j->ex->cfg->executor_snippet_bytes;
    if (j->snippet_len < max) {
        if (!j->snippet && !(j->snippet = malloc(max)))
            return len; /* no snippet then; the call itself goes on */
        size_t take = len < max - j->snippet_len ? len : max - j->snippet_len;
        memcpy(j->snippet + j->snippet_len, data, take);
        j->snippet_len += take;
    }
    return len;
}

static size_t on_header(char *line, size_t size, size_t n, void *arg)
{
    job *j = arg;
    size_t len = size * n;
    static const char name[] = "retry-after:";
    if (len > sizeof name - 1 && strncasecmp(line, name, sizeof name - 1) == 0) {
        const char *v = line + sizeof name - 1;
        size_t vlen = len - (sizeof name - 1);
        while (vlen && (*v == ' ' || *v == '\t'))
            v++, vlen--;
        while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
            vlen--;
        if (vlen >= sizeof j->retry_after)
            vlen = sizeof j->retry_after - 1;
        memcpy(j->retry_after, v, vlen);
        j->retry_after[vlen] = '\0';
    } else if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
        j->retry_after[0] = '\0'; /* a new response (after a 1xx) */
    }
    return len;
}

/* The SSRF guard. curl asks us for every socket it opens, with the address
 * it resolved, so a name that resolves to a private address is refused
 * however the URL spelt it (and a DNS answer that changes between check and
 * use cannot slip through). A reused connection was checked when opened. */
static curl_socket_t on_open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
    (void)purpose;
    job *j = arg;
    if (!mc_ssrf_check(j->ex->ssrf, &a->addr, a->addrlen, j->refused_why, sizeof j->refused_why)) {
        j->refused = true;
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static int add_header(struct curl_slist **l, const char *name, const char *value)
{
    if (strpbrk(value, "\r\n"))
        return 0; /* would split the request: dropped */
    char line[8192];
    int n = snprintf(line, sizeof line, "%s: %s", name, value);
    if (n < 0 || (size_t)n >= sizeof line)
        return 0;
    struct curl_slist *x = curl_slist_append(*l, line);
    if (!x)
        return -1;
    *l = x;
    return 0;
}

static int build_headers(executor *ex, job *j)
{
    const mc_task *t = &j->task;
    const mc_callback *cb = &t->callback;
    bool content_type = false;
    for (size_t i = 0; i < cb->n_headers; i++) {
        if (!mc_header_name_ok(cb->headers[i].key) || mc_header_reserved(cb->headers[i].key))
            continue;
        if (add_header(&j->headers, cb->headers[i].key, cb->headers[i].value) != 0)
            return -1;
        content_type |= strcasecmp(cb->headers[i].key, "content-type") == 0;
    }
    char v[KEY_MAX + 32], ts[32];
    snprintf(v, sizeof v, "%s:%" PRId32, j->key, t->attempt);
    snprintf(ts, sizeof ts, "%" PRId64, j->started_at / 1000);
    if (add_header(&j->headers, "Idempotency-Key", v) ||
        add_header(&j->headers, "webhook-id", j->key) ||
        add_header(&j->headers, "webhook-timestamp", ts))
        return -1;
    /* No "Expect: 100-continue" round trip before large bodies, and no
     * Content-Type the task did not ask for (curl would send a form type
     * with every body, which a JSON endpoint may then misread). */
    struct curl_slist *x = curl_slist_append(j->headers, "Expect:");
    if (!x)
        return -1;
    j->headers = x;
    if (!content_type) {
        if (!(x = curl_slist_append(j->headers, "Content-Type:")))
            return -1;
        j->headers = x;
    }
    size_t nsec = mc_app_secrets_count(ex->secrets, t->app_id);
    if (nsec) {
        size_t cap = nsec * MC_WEBHOOK_SIGNATURE_LEN + 1;
        char *sig = malloc(cap);
        if (!sig)
            return -1;
        size_t n = mc_webhook_signature(ex->secrets, t->app_id, j->key, j->started_at / 1000,
                                        cb->body, cb->body_len, sig, cap);
        int rc = n ? add_header(&j->headers, "webhook-signature", sig) : 0;
        free(sig);
        if (rc)
            return -1;
    }
    return 0;
}

/* ---- the HTTP thread -------------------------------------------------------- */

/* Hands j to curl. -1 only on ENOMEM (the caller treats the call as failed). */
static int job_start(executor *ex, job *j)
{
    const mc_callback *cb = &j->task.callback;
    j->started_at = mc_now_ms();
    CURL *e = j->easy = ex->n_spare ? ex->spare[--ex->n_spare] : curl_easy_init();
    if (!e || build_headers(ex, j) != 0)
        return -1;
    int64_t timeout = cb->timeout_ms > 0 ? cb->timeout_ms : ex->cfg->executor_timeout_ms;
    curl_easy_setopt(e, CURLOPT_URL, cb->url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, j);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    /* An environment proxy would connect us to the proxy's address, past
     * the guard. */
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout);
    curl_easy_setopt(e, CURLOPT_USERAGENT, ex->user_agent);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, j->headers);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, j);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, j);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, j);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, j->curl_error);
    const char *m = j->task.callback.method;
    const char *body = cb->body_len ? (const char *)cb->body : "";
    if (strcmp(m, "GET") == 0) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(m, "HEAD") == 0) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else {
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)cb->body_len);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
        if (strcmp(m, "POST") != 0)
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, m);
    }
    if (curl_multi_add_handle(ex->multi, e) != CURLM_OK)
        return -1;
    j->state = JOB_RUNNING;
    atomic_fetch_add(&ex->running, 1);
    mc_gauge_set(ex->in_flight, (double)atomic_load(&ex->running));
    mc_histogram_observe(ex->lateness, (double)(j->started_at - j->task.due_at) / 1000.0);
    return 0;
}

static void all_link(executor *ex, job *j)
{
    j->all_prev = NULL;
    j->all_next = ex->all;
    if (ex->all)
        ex->all->all_prev = j;
    ex->all = j;
}

static void all_unlink(executor *ex, job *j)
{
    if (j->all_prev)
        j->all_prev->all_next = j->all_next;
    else
        ex->all = j->all_next;
    if (j->all_next)
        j->all_next->all_prev = j->all_prev;
    j->all_prev = j->all_next = NULL;
}

static void queue_remove(executor *ex, job *j)
{
    job **link = &ex->queue_head;
    ex->queue_tail = NULL;
    while (*link) {
        if (*link == j) {
            *link = j->next;
            ex->queued--;
        } else {
            ex->queue_tail = *link;
            link = &(*link)->next;
        }
    }
}

/* Takes j off every HTTP-side structure; keeps nothing of curl's. Returns
 * whether it was running: the caller lowers `running` (after posting it, so
 * the runner never sees a call neither running nor finished). */
static bool http_release(executor *ex, job *j)
{
    bool was_running = j->state == JOB_RUNNING;
    if (j->state == JOB_HELD)
        mc_wheel_cancel(ex->held, &j->timer);
    else if (j->state == JOB_QUEUED)
        queue_remove(ex, j);
    if (j->easy) {
        if (was_running)
            curl_multi_remove_handle(ex->multi, j->easy);
        if (ex->n_spare < (size_t)ex->cfg->executor_concurrency) {
            /* Making a handle costs about as much as a keep-alive call. */
            curl_easy_reset(j->easy);
            ex->spare[ex->n_spare++] = j->easy;
        } else {
            curl_easy_cleanup(j->easy);
        }
        j->easy = NULL;
    }
    all_unlink(ex, j);
    j->state = JOB_DONE;
    return was_running;
}

/* Gives j back to the runner, which reports and finishes it. */
static void http_post_done(executor *ex, job *j)
{
    bool was_running = http_release(ex, j);
    pthread_mutex_lock(&ex->mu);
    bool was_empty = !ex->done_head;
    j->next = NULL;
    if (ex->done_tail)
        ex->done_tail->next = j;
    else
        ex->done_head = j;
    ex->done_tail = j;
    pthread_mutex_unlock(&ex->mu);
    if (was_running)
        atomic_fetch_sub(&ex->running, 1);
    if (was_empty)
        wake(ex->done_wake);
}

static void job_ended(executor *ex, job *j, CURLcode rc)
{
    if (j->easy)
        curl_easy_getinfo(j->easy, CURLINFO_RESPONSE_CODE, &j->status);
    j->rc = rc;
    j->finished_at = mc_now_ms();
    if (!j->started_at)
        j->started_at = j->finished_at;
    mc_histogram_observe(ex->duration, (double)(j->finished_at - j->started_at) / 1000.0);
    http_post_done(ex, j);
}

/* Starts j now if a slot is free, else queues it. */
static void job_run_or_queue(executor *ex, job *j)
{
    if (!atomic_load(&ex->draining) &&
        atomic_load(&ex->running) < (size_t)ex->cfg->executor_concurrency) {
        if (job_start(ex, j) != 0) {
            snprintf(j->curl_error, sizeof j->curl_error, "out of memory starting the call");
            job_ended(ex, j, CURLE_OUT_OF_MEMORY);
        }
        return;
    }
    j->state = JOB_QUEUED;
    j->next = NULL;
    if (ex->queue_tail)
        ex->queue_tail->next = j;
    else
        ex->queue_head = j;
    ex->queue_tail = j;
    ex->queued++;
}

static void start_queued(executor *ex)
{
    while (!atomic_load(&ex->draining) && ex->queue_head &&
           atomic_load(&ex->running) < (size_t)ex->cfg->executor_concurrency) {
        job *j = ex->queue_head;
        ex->queue_head = j->next;
        if (!ex->queue_head)
            ex->queue_tail = NULL;
        ex->queued--;
        job_run_or_queue(ex, j);
    }
    mc_gauge_set(ex->queued_gauge, (double)ex->queued);
}

static void check_completions(executor *ex)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(ex->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        job *j = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&j);
        if (j)
            job_ended(ex, j, msg->data.result);
    }
    start_queued(ex);
    mc_gauge_set(ex->in_flight, (double)atomic_load(&ex->running));
}

/* curl: watch this socket for these events (or no longer). */
static int on_curl_socket(CURL *e, curl_socket_t s, int what, void *arg, void *sockp)
{
    (void)e;
    (void)sockp;
    executor *ex = arg;
    short ev = 0;
    if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
        ev |= POLLIN;
    if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
        ev |= POLLOUT;
    return mc_fdset_set(&ex->watches, s, ev, NULL, NULL) == 0 ? 0 : -1;
}

/* curl: call socket_action(CURL_SOCKET_TIMEOUT) in timeout_ms (-1: never).
 * Called from inside curl, so it only records. */
static int on_curl_timer(CURLM *multi, long timeout_ms, void *arg)
{
    (void)multi;
    executor *ex = arg;
    ex->curl_due = timeout_ms < 0 ? INT64_MAX : mc_now_ms() + timeout_ms;
    return 0;
}

/* Drops every job of the partition (its new owner calls them); the runner
 * waits for this before it forgets the partition. */
static void http_abandon(executor *ex, int32_t partition)
{
    for (job *j = ex->all, *next; j; j = next) {
        next = j->all_next;
        if (j->partition == partition) {
            if (http_release(ex, j))
                atomic_fetch_sub(&ex->running, 1);
            job_free(j);
        }
    }
}

/* The wheel fired a task early (its lead) and then saw a newer version or a
 * cancel before the due time: versions of key below `version` that are
 * still held or queued are not called. One that has started runs (it was
 * due). */
static void http_recall(executor *ex, const ctl *c)
{
    for (job *j = ex->all; j; j = j->all_next) {
        if ((j->state == JOB_HELD || j->state == JOB_QUEUED) && j->partition == c->partition &&
            j->version < c->version && strcmp(j->key, c->key) == 0) {
            j->recalled = true;
            j->finished_at = j->started_at = mc_now_ms();
            http_post_done(ex, j);
            return; /* a key has one unfinished version at most, in practice */
        }
    }
}

/* New jobs first, then control requests: an abandon must find the jobs the
 * runner posted before it. */
static void http_take_requests(executor *ex)
{
    pthread_mutex_lock(&ex->mu);
    job *jobs = ex->new_head;
    ctl *ctls = ex->ctl_head;
    ex->new_head = ex->new_tail = NULL;
    ex->ctl_head = ex->ctl_tail = NULL;
    pthread_mutex_unlock(&ex->mu);
    int64_t now = mc_now_ms();
    for (job *j = jobs, *next; j; j = next) {
        next = j->next;
        all_link(ex, j);
        if (j->task.due_at > now) {
            j->state = JOB_HELD;
            mc_wheel_add(ex->held, &j->timer, j->task.due_at);
        } else {
            job_run_or_queue(ex, j);
        }
    }
    for (ctl *c = ctls, *next; c; c = next) {
        next = c->next;
        if (c->kind == CTL_RECALL) {
            http_recall(ex, c);
            free(c);
        } else {
            http_abandon(ex, c->partition);
            pthread_mutex_lock(&ex->mu);
            c->done = true; /* the runner frees it */
            pthread_cond_broadcast(&ex->acked);
            pthread_mutex_unlock(&ex->mu);
        }
    }
    mc_gauge_set(ex->held_gauge, (double)mc_wheel_count(ex->held));
}

static void release_due(executor *ex, int64_t now)
{
    mc_timer *due[256];
    size_t n;
    do {
        n = mc_wheel_advance(ex->held, now, due, 256);
        for (size_t i = 0; i < n; i++)
            job_run_or_queue(ex, MC_TIMER_OWNER(due[i], job, timer));
    } while (n == 256);
}

/* The HTTP thread's loop: wait for curl's sockets, the runner's eventfd or
 * the next due instant (a held task's, or curl's timeout), then act. */
static void *http_main(void *arg)
{
    executor *ex = arg;
    while (!atomic_load(&ex->stop)) {
        int64_t now = mc_now_ms(), next = mc_wheel_next_deadline(ex->held);
        if (ex->curl_due < next)
            next = ex->curl_due;
        int timeout = next == INT64_MAX ? 1000 : next <= now ? 0 : (int)(next - now);
        if (timeout > 1000)
            timeout = 1000;
        size_t n = ex->watches.n + 1;
        int rc = mc_fdset_poll(&ex->watches, ex->http_wake, timeout);
        if (rc < 0) {
            if (errno != EINTR)
                poll(NULL, 0, 10); /* ENOMEM: try again shortly */
            continue;
        }
        struct pollfd *pfds = ex->watches.pfds;
        if (pfds[0].revents) {
            drain_wake(ex->http_wake);
            http_take_requests(ex);
        }
        int running;
        for (size_t i = 1; rc > 0 && i < n; i++) {
            short re = pfds[i].revents;
            if (!re)
                continue;
            int flags = 0;
            if (re & POLLIN)
                flags |= CURL_CSELECT_IN;
            if (re & POLLOUT)
                flags |= CURL_CSELECT_OUT;
            if (re & (POLLERR | POLLHUP | POLLNVAL))
                flags |= CURL_CSELECT_ERR;
            curl_multi_socket_action(ex->multi, pfds[i].fd, flags, &running);
        }
        now = mc_now_ms();
        release_due(ex, now);
        if (ex->curl_due <= now) {
            ex->curl_due = INT64_MAX;
            curl_multi_socket_action(ex->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        check_completions(ex);
        mc_gauge_set(ex->held_gauge, (double)mc_wheel_count(ex->held));
    }
    return NULL;
}

/* ---- the runner's side ------------------------------------------------------- */

static int forward(executor *ex, mc_output *out, const job *j)
{
    return mc_ctx_forward(ex->ctx, out, j->part->partition, j->key, strlen(j->key), ex->buf.data,
                          ex->buf.len);
}

/* A job came back from the HTTP thread: its Result (success, or recalled)
 * or Attempt (failure) goes out in the open transaction, and its record
 * counts as finished. */
static void job_report(executor *ex, job *j)
{
    mc_buf_reset(&ex->buf);
    if (j->recalled) {
        mc_result res = {.app_id = j->task.app_id,
                         .task_id = j->task.task_id,
                         .attempt = j->task.attempt,
                         .due_at = j->task.due_at,
                         .started_at = j->started_at,
                         .finished_at = j->finished_at,
                         .outcome = MC_OUTCOME_CANCELLED,
                         .error = "cancelled or rescheduled before its due time"};
        if (mc_encode_result(&res, &ex->buf) == 0)
            forward(ex, ex->results, j);
        mc_counter_add(ex->recalled, 1);
        return;
    }
    bool ok = j->rc == CURLE_OK && j->status >= 200 && j->status < 300;
    const mc_logger *lg = mc_ctx_logger(ex->ctx);
    char attempt[16], status[16], ms[24];
    snprintf(attempt, sizeof attempt, "%" PRId32, j->task.attempt);
    snprintf(status, sizeof status, "%ld", j->status);
    snprintf(ms, sizeof ms, "%" PRId64, j->finished_at - j->started_at);
    if (ok) {
        if (lg->level <= MC_LOG_DEBUG)
            mc_log(lg, MC_LOG_DEBUG, "called", "key", j->key, "attempt", attempt, "status", status,
                   "ms", ms, (const char *)NULL);
        mc_result res = {.app_id = j->task.app_id,
                         .task_id = j->task.task_id,
                         .attempt = j->task.attempt,
                         .due_at = j->task.due_at,
                         .started_at = j->started_at,
                         .finished_at = j->finished_at,
                         .http_status = (int32_t)j->status,
                         .outcome = MC_OUTCOME_SUCCEEDED,
                         .error = ""};
        if (mc_encode_result(&res, &ex->buf) == 0)
            forward(ex, ex->results, j);
        mc_counter_add(ex->succeeded, 1);
        return;
    }
    char error[512];
    bool permanent = false;
    if (j->refused) {
        snprintf(error, sizeof error, "refused by the SSRF guard: %s", j->refused_why);
        permanent = true;
        mc_counter_add(ex->refused, 1);
    } else if (j->rc == CURLE_OPERATION_TIMEDOUT) {
        snprintf(error, sizeof error, "timed out after %" PRId64 " ms",
                 j->finished_at - j->started_at);
    } else if (j->rc != CURLE_OK) {
        snprintf(error, sizeof error, "%s%s%s", curl_easy_strerror(j->rc),
                 j->curl_error[0] ? ": " : "", j->curl_error);
        permanent = j->rc == CURLE_UNSUPPORTED_PROTOCOL || j->rc == CURLE_URL_MALFORMAT;
    } else {
        snprintf(error, sizeof error, "HTTP %ld", j->status);
        permanent = mc_http_status_permanent((int)j->status);
    }
    mc_attempt a = {
        .task = j->task,
        .http_status = (int32_t)j->status,
        .error = error,
        .response_snippet = j->snippet,
        .response_snippet_len = j->snippet_len,
        .retry_after_ms =
            j->retry_after[0]
                ? mc_parse_retry_after(j->retry_after, strlen(j->retry_after), j->finished_at)
                : -1,
        .started_at = j->started_at,
        .finished_at = j->finished_at,
        .permanent = permanent};
    mc_log(lg, MC_LOG_INFO, "call failed", "key", j->key, "attempt", attempt, "status", status,
           "ms", ms, "error", error, "permanent", permanent ? "true" : "false", (const char *)NULL);
    if (mc_encode_attempt(&a, &ex->buf) == 0)
        forward(ex, ex->retry, j);
    mc_counter_add(ex->failed, 1);
}

/* Takes the finished jobs; those of a partition abandoned meanwhile are
 * only freed (the new owner calls them again). */
static void take_done(executor *ex)
{
    pthread_mutex_lock(&ex->mu);
    job *done = ex->done_head;
    ex->done_head = ex->done_tail = NULL;
    pthread_mutex_unlock(&ex->mu);
    for (job *j = done, *next; j; j = next) {
        next = j->next;
        if (j->gen != j->part->gen) {
            job_free(j);
            continue;
        }
        job_report(ex, j);
        job_finish(ex, j);
    }
}

static int on_done(void *arg, int fd, int revents, mc_ctx *ctx)
{
    (void)fd;
    (void)revents;
    (void)ctx;
    executor *ex = arg;
    drain_wake(ex->done_wake);
    take_done(ex);
    return 0;
}

/* Hands the HTTP thread a new job (j) or a control request (c), in the
 * order posted, and wakes it if it had nothing waiting. */
static void post(executor *ex, job *j, ctl *c)
{
    pthread_mutex_lock(&ex->mu);
    bool was_empty = !ex->new_head && !ex->ctl_head;
    if (j) {
        j->next = NULL;
        *(ex->new_tail ? &ex->new_tail->next : &ex->new_head) = j;
        ex->new_tail = j;
    } else {
        c->next = NULL;
        *(ex->ctl_tail ? &ex->ctl_tail->next : &ex->ctl_head) = c;
        ex->ctl_tail = c;
    }
    pthread_mutex_unlock(&ex->mu);
    if (was_empty)
        wake(ex->http_wake);
}

static int executor_process(void *self, const mc_record *m, mc_ctx *ctx)
{
    executor *ex = self;
    part *p = part_get(ex, m->partition);
    if (!p)
        return -1;
    p->end = m->offset + 1;
    if (m->offset < p->redo_end) {
        while (p->next_redo < p->n_redo && p->redo[p->next_redo] < m->offset)
            p->next_redo++;
        if (p->next_redo >= p->n_redo || p->redo[p->next_redo] != m->offset) {
            mc_counter_add(ex->skipped, 1); /* finished before the restart */
            return 0;
        }
        p->next_redo++;
    }
    job *j = calloc(1, sizeof *j);
    if (!j || !(j->arena = mc_arena_new())) {
        free(j);
        return -1;
    }
    j->ex = ex;
    j->part = p;
    j->gen = p->gen;
    j->partition = p->partition;
    j->offset = m->offset;
    mc_wheel_entry we;
    char detail[256] = "";
    mc_codec_err err = m->value ? mc_decode_wheel_entry(m->value, m->value_len, j->arena, &we,
                                                        detail, sizeof detail)
                                : MC_CODEC_TRUNCATED;
    if (err) {
        char reason[400];
        snprintf(reason, sizeof reason, "ready record is not a WheelEntry: %s%s%s",
                 mc_codec_strerror(err), detail[0] ? ": " : "", detail);
        job_free(j);
        return mc_ctx_dead_letter(ctx, m, reason, NULL) == 0 ? 0 : -1;
    }
    if (we.command.kind == MC_CMD_CANCEL) {
        ctl *c = calloc(1, sizeof *c);
        if (c) {
            c->kind = CTL_RECALL;
            c->partition = m->partition;
            c->version = we.version;
            mc_task_key(we.command.cancel.app_id, we.command.cancel.task_id, c->key, sizeof c->key);
            post(ex, NULL, c);
        }
        job_free(j);
        return c ? 0 : -1;
    }
    j->task = we.command.submit;
    j->version = we.version;
    mc_task_key(j->task.app_id, j->task.task_id, j->key, sizeof j->key);
    if (ring_push(p, m->offset, j) != 0) {
        job_free(j);
        return -1;
    }
    p->unfinished++;
    if (j->task.due_at > mc_ctx_now_ms(ctx)) {
        j->held_at_read = true;
        p->held++;
    }
    update_pause(ex, p);
    post(ex, j, NULL);
    return 0;
}

/* Drops every job of p without a result: another owner (or this one after
 * a rewind) reads the records again and calls them. Waits until the HTTP
 * thread has let go of them. */
static void part_abandon(executor *ex, part *p)
{
    if (p->unfinished) {
        ctl *c = calloc(1, sizeof *c);
        if (c) {
            c->kind = CTL_ABANDON;
            c->partition = p->partition;
            post(ex, NULL, c);
            pthread_mutex_lock(&ex->mu);
            while (!c->done)
                pthread_cond_wait(&ex->acked, &ex->mu);
            pthread_mutex_unlock(&ex->mu);
            free(c);
        }
        mc_counter_add(ex->abandoned, p->unfinished);
    }
    if (p->paused)
        mc_gauge_add(ex->paused_gauge, -1);
    free(p->ring);
    free(p->redo);
    int32_t partition = p->partition;
    uint64_t gen = p->gen + 1; /* finished jobs still on their way are stale */
    memset(p, 0, sizeof *p);
    p->partition = partition;
    p->gen = gen;
    p->end = -1;
}

/* "x1 e=E u=D,D,..." (see the top of the file) into p's redo list. */
static bool parse_checkpoint(part *p, int64_t committed, const char *md)
{
    if (!md || strncmp(md, "x1 e=", 5) != 0)
        return false;
    char *end;
    long long e = strtoll(md + 5, &end, 10);
    if (e < committed)
        return false;
    size_t cap = 0;
    if (strncmp(end, " u=", 3) == 0) {
        cap = 1;
        for (const char *c = end + 3; *c; c++)
            cap += *c == ',';
        p->redo = malloc(cap * sizeof *p->redo);
        if (!p->redo)
            return false;
        int64_t at = committed;
        const char *c = end + 3;
        while (*c) {
            char *next;
            long long d = strtoll(c, &next, 10);
            if (next == c || d < 0 || p->n_redo == cap)
                return false;
            at += d;
            p->redo[p->n_redo++] = at;
            c = *next == ',' ? next + 1 : next;
            if (*next && *next != ',')
                return false;
        }
    } else if (*end) {
        return false;
    }
    p->redo_end = e;
    return true;
}

static int executor_on_assign(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx)
{
    executor *ex = self;
    for (int i = 0; i < parts->cnt; i++) {
        const rd_kafka_topic_partition_t *tp = &parts->elems[i];
        part *p = part_get(ex, tp->partition);
        if (!p)
            return -1;
        part_abandon(ex, p);
        p->assigned = true;
        const char *md = tp->metadata_size ? (const char *)tp->metadata : NULL;
        char copy[4097];
        if (md) {
            size_t n = tp->metadata_size < sizeof copy - 1 ? tp->metadata_size : sizeof copy - 1;
            memcpy(copy, md, n);
            copy[n] = '\0';
            md = copy;
        }
        if (tp->offset >= 0 && md && *md && !parse_checkpoint(p, tp->offset, md)) {
            free(p->redo);
            p->redo = NULL;
            p->n_redo = 0;
            p->redo_end = 0;
            mc_log(mc_ctx_logger(ctx), MC_LOG_WARN,
                   "unreadable checkpoint: every record from the committed offset is called again",
                   "metadata", md, (const char *)NULL);
        }
    }
    return 0;
}

static void executor_on_revoke(void *self, const rd_kafka_topic_partition_list_t *parts,
                               mc_ctx *ctx)
{
    (void)ctx;
    executor *ex = self;
    for (int i = 0; i < parts->cnt; i++) {
        int32_t partition = parts->elems[i].partition;
        if (partition >= 0 && partition < MAX_PARTITIONS && ex->parts[partition])
            part_abandon(ex, ex->parts[partition]);
    }
}

/* Appends to md (at *len, within METADATA_BUDGET) one delta; false when it
 * does not fit. */
static bool md_append(char *md, size_t *len, const char *fmt, int64_t v)
{
    int n = snprintf(md + *len, METADATA_BUDGET - *len, fmt, v);
    if (n < 0 || (size_t)n >= METADATA_BUDGET - *len)
        return false;
    *len += (size_t)n;
    return true;
}

static int executor_prepare_commit(void *self, mc_ctx *ctx)
{
    executor *ex = self;
    char md[METADATA_BUDGET], list[METADATA_BUDGET];
    for (int32_t i = 0; i < MAX_PARTITIONS; i++) {
        part *p = ex->parts[i];
        if (!p || !p->assigned || p->end < 0)
            continue;
        ring_trim(p);
        int64_t base = p->len ? ring_at(p, 0)->offset : p->end;
        int64_t e = p->end > p->redo_end ? p->end : p->redo_end;
        /* The unfinished: jobs in the window, then listed records not read
         * again yet. The list is cut where it stops fitting; what follows
         * counts as unread. */
        size_t len = 0;
        int64_t prev = base;
        bool first = true, cut = false;
        for (size_t k = 0; k < p->len + (p->n_redo - p->next_redo) && !cut; k++) {
            int64_t off;
            if (k < p->len) {
                if (!ring_at(p, k)->job)
                    continue;
                off = ring_at(p, k)->offset;
            } else {
                off = p->redo[p->next_redo + (k - p->len)];
                if (off < p->end)
                    continue;
            }
            if (!md_append(list, &len, first ? "%" PRId64 : ",%" PRId64, off - prev)) {
                e = off;
                cut = true;
                break;
            }
            prev = off;
            first = false;
        }
        if (cut)
            mc_counter_add(ex->cut, 1);
        list[len] = '\0';
        snprintf(md, sizeof md, len ? "x1 e=%" PRId64 " u=%s" : "x1 e=%" PRId64 "%s", e, list);
        if (mc_ctx_set_commit_offset(ctx, ex->ready_topic, p->partition, base, md) != 0)
            return -1;
    }
    return 0;
}

/* Drained once no call is running and every finished one is reported;
 * held and queued tasks are not due or not started, and the next owner
 * takes them from the committed checkpoint. */
static bool executor_drained(void *self, mc_ctx *ctx)
{
    (void)ctx;
    executor *ex = self;
    atomic_store(&ex->draining, true); /* start nothing new */
    /* Finished calls are reported by on_done, inside a transaction. */
    pthread_mutex_lock(&ex->mu);
    bool reported = !ex->done_head;
    pthread_mutex_unlock(&ex->mu);
    return reported && atomic_load(&ex->running) == 0;
}

static void executor_destroy(void *self)
{
    executor *ex = self;
    if (!ex)
        return;
    if (ex->http_started) {
        atomic_store(&ex->stop, true);
        wake(ex->http_wake);
        pthread_join(ex->http, NULL);
    }
    /* The HTTP thread is gone: everything is ours to free. */
    while (ex->all) {
        job *j = ex->all;
        if (http_release(ex, j))
            atomic_fetch_sub(&ex->running, 1);
        job_free(j);
    }
    for (job *j = ex->new_head, *next; j; j = next) {
        next = j->next;
        job_free(j);
    }
    for (job *j = ex->done_head, *next; j; j = next) {
        next = j->next;
        job_free(j);
    }
    for (ctl *c = ex->ctl_head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    for (int32_t i = 0; i < MAX_PARTITIONS; i++) {
        if (ex->parts[i]) {
            free(ex->parts[i]->ring);
            free(ex->parts[i]->redo);
            free(ex->parts[i]);
        }
    }
    for (size_t i = 0; i < ex->n_spare; i++)
        curl_easy_cleanup(ex->spare[i]);
    free(ex->spare);
    if (ex->multi)
        curl_multi_cleanup(ex->multi);
    if (ex->held)
        mc_wheel_free(ex->held);
    mc_fdset_free(&ex->watches);
    if (ex->http_wake >= 0)
        close(ex->http_wake);
    if (ex->done_wake >= 0)
        close(ex->done_wake);
    pthread_mutex_destroy(&ex->mu);
    pthread_cond_destroy(&ex->acked);
    mc_ssrf_free(ex->ssrf);
    mc_app_secrets_free(ex->secrets);
    mc_buf_free(&ex->buf);
    free(ex);
}

static void *executor_create(mc_ctx *ctx, char *err, size_t errlen)
{
    const mc_config *cfg = mc_ctx_config(ctx);
    executor *ex = calloc(1, sizeof *ex);
    if (!ex) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ex->ctx = ctx;
    ex->cfg = cfg;
    ex->curl_due = INT64_MAX;
    ex->http_wake = ex->done_wake = -1;
    pthread_mutex_init(&ex->mu, NULL);
    pthread_cond_init(&ex->acked, NULL);
    atomic_init(&ex->stop, false);
    atomic_init(&ex->draining, false);
    atomic_init(&ex->running, 0);
    mc_topic_name(cfg, "ready", ex->ready_topic, sizeof ex->ready_topic);
    snprintf(ex->user_agent, sizeof ex->user_agent, "mooncake/%s", MOONCAKE_VERSION);
    if (!(ex->ssrf = mc_ssrf_new(cfg->executor_allow_cidrs, err, errlen)) ||
        !(ex->secrets = mc_app_secrets_parse(cfg->app_secrets, err, errlen))) {
        executor_destroy(ex);
        return NULL;
    }
    ex->results = mc_ctx_output(ctx, "results");
    ex->retry = mc_ctx_output(ctx, "retry");
    ex->held = mc_wheel_new(mc_now_ms());
    ex->multi = curl_multi_init();
    ex->spare = calloc((size_t)cfg->executor_concurrency, sizeof *ex->spare);
    ex->http_wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ex->done_wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (!ex->results || !ex->retry || !ex->held || !ex->multi || !ex->spare || ex->http_wake < 0 ||
        ex->done_wake < 0) {
        snprintf(err, errlen, "out of memory (or output topic handles, or eventfds)");
        executor_destroy(ex);
        return NULL;
    }
    curl_multi_setopt(ex->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
    curl_multi_setopt(ex->multi, CURLMOPT_SOCKETDATA, ex);
    curl_multi_setopt(ex->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
    curl_multi_setopt(ex->multi, CURLMOPT_TIMERDATA, ex);
    curl_multi_setopt(ex->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                      (long)cfg->executor_host_connections);
    curl_multi_setopt(ex->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    /* Keep-alive connections for at least as many calls as run at once. */
    curl_multi_setopt(ex->multi, CURLMOPT_MAXCONNECTS, (long)cfg->executor_concurrency);

    mc_metrics *m = mc_ctx_metrics(ctx);
    ex->succeeded = mc_metrics_counter(m, "mooncake_executor_calls_total",
                                       "Callbacks called, by outcome", "outcome=\"succeeded\"");
    ex->failed = mc_metrics_counter(m, "mooncake_executor_calls_total",
                                    "Callbacks called, by outcome", "outcome=\"failed\"");
    ex->refused = mc_metrics_counter(m, "mooncake_executor_ssrf_refused_total",
                                     "Calls refused by the SSRF guard", NULL);
    ex->skipped = mc_metrics_counter(
        m, "mooncake_executor_skipped_total",
        "Records read again after a restart and skipped: their call had finished", NULL);
    ex->abandoned = mc_metrics_counter(
        m, "mooncake_executor_abandoned_total",
        "Unfinished calls dropped on a rebalance or abort (called again by the next owner)", NULL);
    ex->cut = mc_metrics_counter(
        m, "mooncake_executor_checkpoint_cut_total",
        "Commits whose unfinished list did not fit the metadata (later calls may repeat)", NULL);
    ex->recalled = mc_metrics_counter(
        m, "mooncake_executor_recalled_total",
        "Held tasks not called: the wheel recalled them before their due time", NULL);
    ex->in_flight = mc_metrics_gauge(m, "mooncake_executor_in_flight", "Calls in flight", NULL);
    ex->held_gauge = mc_metrics_gauge(m, "mooncake_executor_held",
                                      "Tasks received before their due time, held", NULL);
    ex->queued_gauge = mc_metrics_gauge(m, "mooncake_executor_queued",
                                        "Due tasks waiting for a free call slot", NULL);
    ex->paused_gauge = mc_metrics_gauge(m, "mooncake_executor_paused_partitions",
                                        "Partitions paused: too many unfinished tasks", NULL);
    static const double lateness[] = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
                                      0.1,   0.2,   0.5,   1,    5,    30};
    ex->lateness = mc_metrics_histogram(m, "mooncake_executor_start_lateness_seconds",
                                        "Call start minus due time", NULL, lateness, 12);
    static const double duration[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
                                      0.25,  0.5,   1,    2.5,   10,   30};
    ex->duration = mc_metrics_histogram(m, "mooncake_executor_call_seconds",
                                        "Callback call duration", NULL, duration, 12);
    if (mc_ctx_watch_fd(ctx, ex->done_wake, POLLIN, on_done, ex) != 0 ||
        pthread_create(&ex->http, NULL, http_main, ex) != 0) {
        snprintf(err, errlen, "cannot start the executor's HTTP thread");
        executor_destroy(ex);
        return NULL;
    }
    ex->http_started = true;
    return ex;
}

const mc_processor mc_executor_processor = {
    .name = "executor",
    .input_topics = executor_inputs,
    .consumer_defaults = executor_consumer_defaults,
    .create = executor_create,
    .process = executor_process,
    .on_assign = executor_on_assign,
    .on_revoke = executor_on_revoke,
    .prepare_commit = executor_prepare_commit,
    .drained = executor_drained,
    .destroy = executor_destroy,
};
