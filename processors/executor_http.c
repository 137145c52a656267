/* The executor's HTTP side: the caller (executor_call.h) that makes calls
 * with libcurl's multi interface, on a thread of its own that runs a small
 * poll loop in the manner of curl's docs/examples/multi-event.c: curl names
 * the sockets to watch and its timeout, we tell it what happened. A job that
 * arrives before its due time (the wheel's lead) is held in a timing wheel
 * and started on its due millisecond. Many calls are in flight at once;
 * connections are kept alive and reused, HTTP/2 is used where a TLS server
 * offers it.
 *
 * Why a thread of its own: a transaction commit blocks the runner's thread
 * for 10-20 ms, sometimes 200 ms, and a call due in that window would start
 * that late. The two threads share three lists under one mutex - posted
 * jobs, abandon requests, finished jobs - and wake each other with an
 * eventfd each. Everything below "the HTTP thread" runs on this thread
 * only; the caller ops run on the runner's. */
#include <ctype.h>
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
#include "executor_call.h"
#include "fdset.h"
#include "ssrf.h"
#include "task_rules.h"
#include "timing_wheel.h"
#include "webhook.h"

/* How often due calls waiting on a shut gate look again. */
#define GATE_RECHECK_MS 20
/* The HTTP thread losing this much time between two steps of its work (a
 * poll waking this much after its timeout, or two calls started this far
 * apart with no poll between) means the process was stopped (SIGSTOP, a
 * paused VM, a starved CPU): the group may have moved our partitions
 * meanwhile, and librdkafka, whose session check runs about once a second,
 * has not said so yet. Calls wait STALL_HOLD_MS for it. */
#define STALL_MS 1000
#define STALL_HOLD_MS 1500

typedef enum call_state { CALL_HELD, CALL_QUEUED, CALL_RUNNING } call_state;

/* A CALL job's state while the HTTP thread has it. */
typedef struct call {
    mc_timer timer; /* while held */
    mc_call *job;
    call_state state;
    struct call *next;                /* in the queue */
    struct call *all_prev, *all_next; /* every call the thread has */
    CURL *easy;
    struct curl_slist *headers;
    CURLcode rc;
    bool refused; /* the SSRF guard refused every address */
    char refused_why[256];
    char curl_error[CURL_ERROR_SIZE];
    struct http_caller *hc;
} call;

/* A request to drop a partition's jobs; the runner waits for done. */
typedef struct abandon_req {
    int32_t partition;
    bool done;
    struct abandon_req *next;
} abandon_req;

typedef struct http_caller {
    mc_caller base;
    const mc_config *cfg;
    mc_call_gate gate; /* asked on the HTTP thread */
    mc_ssrf *ssrf;
    mc_app_secrets *secrets;
    char user_agent[64];

    /* Shared, under mu. */
    pthread_mutex_t mu;
    pthread_cond_t acked;
    mc_call *new_head, *new_tail;
    abandon_req *abandon_head;
    mc_call *done_head, *done_tail;
    int http_wake, done_wake; /* eventfds */
    pthread_t thread;
    bool started;
    atomic_bool stop, draining;
    atomic_size_t running;

    /* The HTTP thread's own. */
    CURLM *multi;
    mc_timing_wheel *held;
    int64_t curl_due;              /* when curl wants its timeout handled; INT64_MAX: never */
    call *all;                     /* every call it holds, queues or runs */
    call *queue_head, *queue_tail; /* due, waiting for a free slot */
    size_t queued;
    int64_t stall_hold_until; /* monotonic ms: no call starts before (see STALL_MS) */
    int64_t progress_at;      /* monotonic ms: the last poll's return or may_start */
    CURL **spare;             /* easy handles of finished calls, reset for reuse */
    size_t n_spare;
    mc_fdset watches; /* curl's sockets */

    mc_counter *refused;
    mc_gauge *in_flight, *held_gauge, *queued_gauge;
    mc_histogram *lateness, *duration;
} http_caller;

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

/* ---- a call's request ------------------------------------------------------------ */

/* Keeps the first --executor-snippet-bytes of the response body, for the
 * call's Result or Attempt; the rest is read, counted and dropped. */
static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    call *c = arg;
    mc_call *j = c->job;
    size_t len = size * n, max = (size_t)c->hc->cfg->executor_snippet_bytes;
    j->body_bytes += (int64_t)len;
    if (j->snippet_len < max) {
        if (!j->snippet && !(j->snippet = malloc(max)))
            return len; /* no snippet then; the call itself goes on */
        size_t take = len < max - j->snippet_len ? len : max - j->snippet_len;
        memcpy(j->snippet + j->snippet_len, data, take);
        j->snippet_len += take;
    }
    return len;
}

/* Whether name (len bytes, any case) is in the lower-case comma list. */
static bool listed(const char *list, const char *name, size_t len)
{
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && strncasecmp(p, name, len) == 0)
            return true;
        p += n + (end != NULL);
    }
    return false;
}

/* Keeps a response header named in --executor-response-headers, its name
 * lower-cased and its value trimmed and cut at MC_CALL_RESPONSE_HEADER_MAX;
 * a repeated one is joined with ", " (so the list refuses Set-Cookie, whose
 * values cannot be joined). */
static void keep_header(mc_call *j, const char *list, const char *line, size_t len)
{
    const char *colon = memchr(line, ':', len);
    if (!colon || colon == line || !listed(list, line, (size_t)(colon - line)))
        return;
    size_t nlen = (size_t)(colon - line);
    const char *v = colon + 1;
    size_t vlen = len - nlen - 1;
    while (vlen && (*v == ' ' || *v == '\t'))
        v++, vlen--;
    while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
        vlen--;
    size_t at = 0;
    while (at < j->n_response_headers && (strlen(j->response_headers[at].key) != nlen ||
                                          strncasecmp(j->response_headers[at].key, line, nlen)))
        at++;
    const char *old = at < j->n_response_headers ? j->response_headers[at].value : "";
    size_t olen = strlen(old), sep = olen ? 2 : 0;
    /* Full (a hostile server may repeat a header without end): the rest is dropped. */
    if (at == MC_CALL_RESPONSE_HEADERS_MAX || olen + sep >= MC_CALL_RESPONSE_HEADER_MAX)
        return;
    if (olen + sep + vlen > MC_CALL_RESPONSE_HEADER_MAX)
        vlen = MC_CALL_RESPONSE_HEADER_MAX - olen - sep;
    char *block = malloc(nlen + 1 + olen + sep + vlen + 1);
    if (!block)
        return; /* the header is left out; the call goes on */
    for (size_t i = 0; i < nlen; i++)
        block[i] = (char)tolower((unsigned char)line[i]);
    block[nlen] = '\0';
    char *value = block + nlen + 1;
    memcpy(value, old, olen);
    memcpy(value + olen, ", ", sep);
    memcpy(value + olen + sep, v, vlen);
    value[olen + sep + vlen] = '\0';
    if (at < j->n_response_headers)
        free((char *)j->response_headers[at].key);
    else
        j->n_response_headers++;
    j->response_headers[at] = (mc_kv){block, value};
}

static size_t on_header(char *line, size_t size, size_t n, void *arg)
{
    call *c = arg;
    mc_call *j = c->job;
    size_t len = size * n;
    if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
        /* A new response (after a 1xx): what came before was not the answer. */
        j->retry_after[0] = '\0';
        mc_call_forget_response_headers(j);
        return len;
    }
    keep_header(j, c->hc->cfg->executor_response_headers, line, len);
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
    call *c = arg;
    if (!mc_ssrf_check(c->hc->ssrf, &a->addr, a->addrlen, c->refused_why, sizeof c->refused_why)) {
        c->refused = true;
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

static int build_headers(http_caller *hc, call *c)
{
    const mc_call *j = c->job;
    const mc_task *t = &j->task;
    const mc_callback *cb = &t->callback;
    bool content_type = false;
    for (size_t i = 0; i < cb->n_headers; i++) {
        if (!mc_header_name_ok(cb->headers[i].key) || mc_header_reserved(cb->headers[i].key))
            continue;
        if (add_header(&c->headers, cb->headers[i].key, cb->headers[i].value) != 0)
            return -1;
        content_type |= strcasecmp(cb->headers[i].key, "content-type") == 0;
    }
    char v[MC_CALL_KEY_MAX + 32], ts[32];
    snprintf(v, sizeof v, "%s:%" PRId32, j->key, t->attempt);
    snprintf(ts, sizeof ts, "%" PRId64, j->started_at / 1000);
    if (add_header(&c->headers, "Idempotency-Key", v) ||
        add_header(&c->headers, "webhook-id", j->key) ||
        add_header(&c->headers, "webhook-timestamp", ts))
        return -1;
    /* No "Expect: 100-continue" round trip before large bodies, and no
     * Content-Type the task did not ask for (curl would send a form type
     * with every body, which a JSON endpoint may then misread). */
    struct curl_slist *x = curl_slist_append(c->headers, "Expect:");
    if (!x)
        return -1;
    c->headers = x;
    if (!content_type) {
        if (!(x = curl_slist_append(c->headers, "Content-Type:")))
            return -1;
        c->headers = x;
    }
    size_t nsec = mc_app_secrets_count(hc->secrets, t->app_id);
    if (nsec) {
        size_t cap = nsec * MC_WEBHOOK_SIGNATURE_LEN + 1;
        char *sig = malloc(cap);
        if (!sig)
            return -1;
        size_t n = mc_webhook_signature(hc->secrets, t->app_id, j->key, j->started_at / 1000,
                                        cb->body, cb->body_len, sig, cap);
        int rc = n ? add_header(&c->headers, "webhook-signature", sig) : 0;
        free(sig);
        if (rc)
            return -1;
    }
    return 0;
}

/* ---- the HTTP thread -------------------------------------------------------- */

/* Hands c to curl. -1 only on ENOMEM (the caller treats the call as failed). */
static int call_start(http_caller *hc, call *c)
{
    mc_call *j = c->job;
    const mc_callback *cb = &j->task.callback;
    j->started_at = mc_now_ms();
    CURL *e = c->easy = hc->n_spare ? hc->spare[--hc->n_spare] : curl_easy_init();
    if (!e || build_headers(hc, c) != 0)
        return -1;
    int64_t timeout = cb->timeout_ms > 0 ? cb->timeout_ms : hc->cfg->executor_timeout_ms;
    curl_easy_setopt(e, CURLOPT_URL, cb->url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, c);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    /* An environment proxy would connect us to the proxy's address, past
     * the guard. */
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout);
    curl_easy_setopt(e, CURLOPT_USERAGENT, hc->user_agent);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, c);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->curl_error);
    const char *m = cb->method;
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
    if (curl_multi_add_handle(hc->multi, e) != CURLM_OK)
        return -1;
    c->state = CALL_RUNNING;
    atomic_fetch_add(&hc->running, 1);
    mc_gauge_set(hc->in_flight, (double)atomic_load(&hc->running));
    mc_histogram_observe(hc->lateness, (double)(j->started_at - j->task.due_at) / 1000.0);
    return 0;
}

static void all_link(http_caller *hc, call *c)
{
    c->all_prev = NULL;
    c->all_next = hc->all;
    if (hc->all)
        hc->all->all_prev = c;
    hc->all = c;
}

static void all_unlink(http_caller *hc, call *c)
{
    if (c->all_prev)
        c->all_prev->all_next = c->all_next;
    else
        hc->all = c->all_next;
    if (c->all_next)
        c->all_next->all_prev = c->all_prev;
    c->all_prev = c->all_next = NULL;
}

static void queue_remove(http_caller *hc, call *c)
{
    call **link = &hc->queue_head;
    hc->queue_tail = NULL;
    while (*link) {
        if (*link == c) {
            *link = c->next;
            hc->queued--;
        } else {
            hc->queue_tail = *link;
            link = &(*link)->next;
        }
    }
}

/* Takes c off every HTTP-side structure and frees it (not its job); keeps
 * nothing of curl's. Returns whether it was running: the caller lowers
 * `running` (after posting the job, so the runner never sees a call neither
 * running nor finished). */
static bool call_release(http_caller *hc, call *c)
{
    bool was_running = c->state == CALL_RUNNING;
    if (c->state == CALL_HELD)
        mc_wheel_cancel(hc->held, &c->timer);
    else if (c->state == CALL_QUEUED)
        queue_remove(hc, c);
    if (c->easy) {
        if (was_running)
            curl_multi_remove_handle(hc->multi, c->easy);
        if (hc->n_spare < (size_t)hc->cfg->executor_concurrency) {
            /* Making a handle costs about as much as a keep-alive call. */
            curl_easy_reset(c->easy);
            hc->spare[hc->n_spare++] = c->easy;
        } else {
            curl_easy_cleanup(c->easy);
        }
    }
    curl_slist_free_all(c->headers);
    all_unlink(hc, c);
    c->job->caller_state = NULL;
    free(c);
    return was_running;
}

/* Gives j back to the runner, which reports and finishes it. */
static void give_back(http_caller *hc, mc_call *j)
{
    pthread_mutex_lock(&hc->mu);
    bool was_empty = !hc->done_head;
    j->next = NULL;
    if (hc->done_tail)
        hc->done_tail->next = j;
    else
        hc->done_head = j;
    hc->done_tail = j;
    pthread_mutex_unlock(&hc->mu);
    if (was_empty)
        wake(hc->done_wake);
}

/* Describes how a call ended, in the job. */
static void describe(mc_call *j, const call *c)
{
    if (c->refused) {
        j->transport_failed = j->permanent = true;
        snprintf(j->error, sizeof j->error, "refused by the SSRF guard: %s", c->refused_why);
    } else if (c->rc == CURLE_OPERATION_TIMEDOUT) {
        j->transport_failed = true;
        snprintf(j->error, sizeof j->error, "timed out after %" PRId64 " ms",
                 j->finished_at - j->started_at);
    } else if (c->rc != CURLE_OK) {
        j->transport_failed = true;
        j->permanent = c->rc == CURLE_UNSUPPORTED_PROTOCOL || c->rc == CURLE_URL_MALFORMAT;
        snprintf(j->error, sizeof j->error, "%s%s%s", curl_easy_strerror(c->rc),
                 c->curl_error[0] ? ": " : "", c->curl_error);
    }
}

static void call_ended(http_caller *hc, call *c, CURLcode rc)
{
    mc_call *j = c->job;
    if (c->easy)
        curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &j->status);
    c->rc = rc;
    j->finished_at = mc_now_ms();
    if (!j->started_at)
        j->started_at = j->finished_at;
    describe(j, c);
    if (c->refused)
        mc_counter_add(hc->refused, 1);
    mc_histogram_observe(hc->duration, (double)(j->finished_at - j->started_at) / 1000.0);
    bool was_running = call_release(hc, c);
    give_back(hc, j);
    if (was_running)
        atomic_fetch_sub(&hc->running, 1);
}

/* Notes a step of the HTTP thread's work; one more than STALL_MS after
 * `since` starts the hold (see STALL_MS). */
static void note_progress(http_caller *hc, int64_t since)
{
    int64_t now = mc_mono_ms();
    if (now - since > STALL_MS)
        hc->stall_hold_until = now + STALL_HOLD_MS;
    hc->progress_at = now;
}

/* Whether calls may start now: not while draining, nor while the gate is
 * shut (see mc_call_gate), nor just after the process was stopped. */
static bool may_start(http_caller *hc)
{
    note_progress(hc, hc->progress_at);
    return !atomic_load(&hc->draining) && hc->progress_at >= hc->stall_hold_until &&
           hc->gate.may_start(hc->gate.arg);
}

static void start_now(http_caller *hc, call *c)
{
    if (call_start(hc, c) != 0) {
        snprintf(c->curl_error, sizeof c->curl_error, "out of memory starting the call");
        call_ended(hc, c, CURLE_OUT_OF_MEMORY);
    }
}

/* Starts c now if calls may start and a slot is free, else queues it. */
static void run_or_queue(http_caller *hc, call *c)
{
    if (atomic_load(&hc->running) < (size_t)hc->cfg->executor_concurrency && may_start(hc)) {
        start_now(hc, c);
        return;
    }
    c->state = CALL_QUEUED;
    c->next = NULL;
    if (hc->queue_tail)
        hc->queue_tail->next = c;
    else
        hc->queue_head = c;
    hc->queue_tail = c;
    hc->queued++;
}

static void start_queued(http_caller *hc)
{
    if (!hc->queue_head || !may_start(hc))
        return;
    while (hc->queue_head && atomic_load(&hc->running) < (size_t)hc->cfg->executor_concurrency) {
        call *c = hc->queue_head;
        hc->queue_head = c->next;
        if (!hc->queue_head)
            hc->queue_tail = NULL;
        hc->queued--;
        start_now(hc, c);
    }
    mc_gauge_set(hc->queued_gauge, (double)hc->queued);
}

static void check_completions(http_caller *hc)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(hc->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        call *c = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
        if (c)
            call_ended(hc, c, msg->data.result);
    }
    start_queued(hc);
    mc_gauge_set(hc->in_flight, (double)atomic_load(&hc->running));
}

/* curl: watch this socket for these events (or no longer). */
static int on_curl_socket(CURL *e, curl_socket_t s, int what, void *arg, void *sockp)
{
    (void)e;
    (void)sockp;
    http_caller *hc = arg;
    short ev = 0;
    if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
        ev |= POLLIN;
    if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
        ev |= POLLOUT;
    return mc_fdset_set(&hc->watches, s, ev, NULL, NULL) == 0 ? 0 : -1;
}

/* curl: call socket_action(CURL_SOCKET_TIMEOUT) in timeout_ms (-1: never).
 * Called from inside curl, so it only records. */
static int on_curl_timer(CURLM *multi, long timeout_ms, void *arg)
{
    (void)multi;
    http_caller *hc = arg;
    hc->curl_due = timeout_ms < 0 ? INT64_MAX : mc_now_ms() + timeout_ms;
    return 0;
}

/* Drops every call of the partition (its new owner makes them). */
static void abandon_partition(http_caller *hc, int32_t partition)
{
    for (call *c = hc->all, *next; c; c = next) {
        next = c->all_next;
        if (c->job->partition != partition)
            continue;
        mc_call *j = c->job;
        if (call_release(hc, c))
            atomic_fetch_sub(&hc->running, 1);
        mc_call_free(j);
    }
}

/* A recall: the held or queued calls of its key with an older version are
 * not made (they come back recalled); one that has started runs (it was
 * due). Then the recall itself comes back. */
static void recall(http_caller *hc, mc_call *r)
{
    for (call *c = hc->all, *next; c; c = next) {
        next = c->all_next;
        mc_call *j = c->job;
        if ((c->state == CALL_HELD || c->state == CALL_QUEUED) && j->partition == r->partition &&
            mc_version_cmp(j->version, r->version) < 0 && strcmp(j->key, r->key) == 0) {
            j->recalled = true;
            j->finished_at = j->started_at = mc_now_ms();
            call_release(hc, c);
            give_back(hc, j);
        }
    }
    give_back(hc, r);
}

/* Takes a posted CALL: held until due - even one due already, which
 * release_due() starts after the rest of its batch is taken, so a recall
 * later in the same batch still finds it held. */
static void take_call(http_caller *hc, mc_call *j, int64_t now)
{
    call *c = calloc(1, sizeof *c);
    if (!c) {
        j->transport_failed = true;
        snprintf(j->error, sizeof j->error, "out of memory taking the call");
        j->finished_at = j->started_at = now;
        give_back(hc, j);
        return;
    }
    c->job = j;
    c->hc = hc;
    j->caller_state = c;
    all_link(hc, c);
    c->state = CALL_HELD;
    if (mc_wheel_add(hc->held, &c->timer, j->task.due_at) == 0)
        return;
    run_or_queue(hc, c); /* no memory for the overdue heap: now */
}

/* Posted jobs first, then abandon requests: an abandon must find the jobs
 * the runner posted before it. */
static void take_requests(http_caller *hc)
{
    pthread_mutex_lock(&hc->mu);
    mc_call *jobs = hc->new_head;
    hc->new_head = hc->new_tail = NULL;
    pthread_mutex_unlock(&hc->mu);
    int64_t now = mc_now_ms();
    for (mc_call *j = jobs, *next; j; j = next) {
        next = j->next;
        if (j->kind == MC_CALL_RECALL)
            recall(hc, j);
        else
            take_call(hc, j, now);
    }
    pthread_mutex_lock(&hc->mu);
    for (abandon_req *a = hc->abandon_head; a; a = a->next) {
        if (a->done)
            continue;
        abandon_partition(hc, a->partition);
        a->done = true;
    }
    pthread_cond_broadcast(&hc->acked);
    pthread_mutex_unlock(&hc->mu);
    mc_gauge_set(hc->held_gauge, (double)mc_wheel_count(hc->held));
}

static void release_due(http_caller *hc, int64_t now)
{
    mc_timer *due[256];
    size_t n;
    do {
        n = mc_wheel_advance(hc->held, now, due, 256);
        for (size_t i = 0; i < n; i++)
            run_or_queue(hc, MC_TIMER_OWNER(due[i], call, timer));
    } while (n == 256);
}

/* The HTTP thread's loop: wait for curl's sockets, the runner's eventfd or
 * the next due instant (a held call's, or curl's timeout), then act. */
static void *http_main(void *arg)
{
    http_caller *hc = arg;
    hc->progress_at = mc_mono_ms();
    while (!atomic_load(&hc->stop)) {
        int64_t now = mc_now_ms(), next = mc_wheel_next_deadline(hc->held);
        if (hc->curl_due < next)
            next = hc->curl_due;
        int timeout = next == INT64_MAX ? 1000 : next <= now ? 0 : (int)(next - now);
        if (timeout > 1000)
            timeout = 1000;
        if (hc->queue_head && timeout > GATE_RECHECK_MS && !atomic_load(&hc->draining) &&
            !may_start(hc))
            timeout = GATE_RECHECK_MS; /* a shut gate opens with no wake-up of ours */
        size_t n = hc->watches.n + 1;
        int64_t wake_by = mc_mono_ms() + timeout;
        int rc = mc_fdset_poll(&hc->watches, hc->http_wake, timeout);
        note_progress(hc, wake_by);
        if (rc < 0) {
            if (errno != EINTR)
                poll(NULL, 0, 10); /* ENOMEM: try again shortly */
            continue;
        }
        struct pollfd *pfds = hc->watches.pfds;
        if (pfds[0].revents) {
            drain_wake(hc->http_wake);
            take_requests(hc);
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
            curl_multi_socket_action(hc->multi, pfds[i].fd, flags, &running);
        }
        now = mc_now_ms();
        start_queued(hc); /* before what falls due now: a gate that opened, say */
        release_due(hc, now);
        if (hc->curl_due <= now) {
            hc->curl_due = INT64_MAX;
            curl_multi_socket_action(hc->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        check_completions(hc);
        mc_gauge_set(hc->held_gauge, (double)mc_wheel_count(hc->held));
    }
    return NULL;
}

/* ---- the caller ops (the runner's thread) ------------------------------------------ */

#define HC(c) ((http_caller *)(void *)(c))

static void hc_post(mc_caller *base, mc_call *j)
{
    http_caller *hc = HC(base);
    mc_call *last = j;
    while (last->next)
        last = last->next;
    pthread_mutex_lock(&hc->mu);
    bool was_empty = !hc->new_head;
    *(hc->new_tail ? &hc->new_tail->next : &hc->new_head) = j;
    hc->new_tail = last;
    pthread_mutex_unlock(&hc->mu);
    if (was_empty)
        wake(hc->http_wake);
}

static void hc_abandon(mc_caller *base, int32_t partition)
{
    http_caller *hc = HC(base);
    abandon_req a = {.partition = partition};
    pthread_mutex_lock(&hc->mu);
    a.next = hc->abandon_head;
    hc->abandon_head = &a;
    pthread_mutex_unlock(&hc->mu);
    wake(hc->http_wake);
    pthread_mutex_lock(&hc->mu);
    while (!a.done)
        pthread_cond_wait(&hc->acked, &hc->mu);
    for (abandon_req **l = &hc->abandon_head; *l; l = &(*l)->next)
        if (*l == &a) {
            *l = a.next;
            break;
        }
    pthread_mutex_unlock(&hc->mu);
}

static mc_call *hc_take_done(mc_caller *base)
{
    http_caller *hc = HC(base);
    drain_wake(hc->done_wake);
    pthread_mutex_lock(&hc->mu);
    mc_call *done = hc->done_head;
    hc->done_head = hc->done_tail = NULL;
    pthread_mutex_unlock(&hc->mu);
    return done;
}

static int hc_wake_fd(mc_caller *base)
{
    return HC(base)->done_wake;
}

static void hc_drain(mc_caller *base)
{
    atomic_store(&HC(base)->draining, true);
}

static bool hc_idle(mc_caller *base)
{
    http_caller *hc = HC(base);
    pthread_mutex_lock(&hc->mu);
    bool nothing_done = !hc->done_head;
    pthread_mutex_unlock(&hc->mu);
    return nothing_done && atomic_load(&hc->running) == 0;
}

static void free_job_list(mc_call *j)
{
    for (mc_call *next; j; j = next) {
        next = j->next;
        mc_call_free(j);
    }
}

static void hc_destroy(mc_caller *base)
{
    http_caller *hc = HC(base);
    if (!hc)
        return;
    if (hc->started) {
        atomic_store(&hc->stop, true);
        wake(hc->http_wake);
        pthread_join(hc->thread, NULL);
    }
    /* The HTTP thread is gone: everything is ours to free. */
    while (hc->all) {
        mc_call *j = hc->all->job;
        call_release(hc, hc->all);
        mc_call_free(j);
    }
    free_job_list(hc->new_head);
    free_job_list(hc->done_head);
    for (size_t i = 0; i < hc->n_spare; i++)
        curl_easy_cleanup(hc->spare[i]);
    free(hc->spare);
    if (hc->multi)
        curl_multi_cleanup(hc->multi);
    mc_wheel_free(hc->held);
    mc_fdset_free(&hc->watches);
    if (hc->http_wake >= 0)
        close(hc->http_wake);
    if (hc->done_wake >= 0)
        close(hc->done_wake);
    pthread_mutex_destroy(&hc->mu);
    pthread_cond_destroy(&hc->acked);
    mc_ssrf_free(hc->ssrf);
    mc_app_secrets_free(hc->secrets);
    free(hc);
}

static const mc_caller_ops http_caller_ops = {
    .post = hc_post,
    .abandon = hc_abandon,
    .take_done = hc_take_done,
    .wake_fd = hc_wake_fd,
    .drain = hc_drain,
    .idle = hc_idle,
    .destroy = hc_destroy,
};

static void register_metrics(http_caller *hc, mc_metrics *m)
{
    hc->refused = mc_metrics_counter(m, "mooncake_executor_ssrf_refused_total",
                                     "Calls refused by the SSRF guard", NULL);
    hc->in_flight = mc_metrics_gauge(m, "mooncake_executor_in_flight", "Calls in flight", NULL);
    hc->held_gauge = mc_metrics_gauge(m, "mooncake_executor_held",
                                      "Tasks received before their due time, held", NULL);
    hc->queued_gauge = mc_metrics_gauge(m, "mooncake_executor_queued",
                                        "Due tasks waiting for a free call slot", NULL);
    static const double lateness[] = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
                                      0.1,   0.2,   0.5,   1,    5,    30};
    hc->lateness = mc_metrics_histogram(m, "mooncake_executor_start_lateness_seconds",
                                        "Call start minus due time", NULL, lateness, 12);
    static const double duration[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
                                      0.25,  0.5,   1,    2.5,   10,   30};
    hc->duration = mc_metrics_histogram(m, "mooncake_executor_call_seconds",
                                        "Callback call duration", NULL, duration, 12);
}

mc_caller *mc_http_caller_new(const mc_config *cfg, mc_metrics *m, const mc_call_gate *gate,
                              const void *arg, char *err, size_t errlen)
{
    (void)arg;
    http_caller *hc = calloc(1, sizeof *hc);
    if (!hc) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    hc->base.ops = &http_caller_ops;
    hc->cfg = cfg;
    hc->gate = *gate;
    hc->curl_due = INT64_MAX;
    hc->http_wake = hc->done_wake = -1;
    pthread_mutex_init(&hc->mu, NULL);
    pthread_cond_init(&hc->acked, NULL);
    atomic_init(&hc->stop, false);
    atomic_init(&hc->draining, false);
    atomic_init(&hc->running, 0);
    snprintf(hc->user_agent, sizeof hc->user_agent, "mooncake/%s", MOONCAKE_VERSION);
    if (!(hc->ssrf = mc_ssrf_new(cfg->executor_allow_cidrs, err, errlen)) ||
        !(hc->secrets = mc_app_secrets_parse(cfg->app_secrets, err, errlen))) {
        hc_destroy(&hc->base);
        return NULL;
    }
    hc->held = mc_wheel_new(mc_now_ms());
    hc->multi = curl_multi_init();
    hc->spare = calloc((size_t)cfg->executor_concurrency, sizeof *hc->spare);
    hc->http_wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    hc->done_wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (!hc->held || !hc->multi || !hc->spare || hc->http_wake < 0 || hc->done_wake < 0) {
        snprintf(err, errlen, "out of memory (or eventfds) for the HTTP caller");
        hc_destroy(&hc->base);
        return NULL;
    }
    curl_multi_setopt(hc->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
    curl_multi_setopt(hc->multi, CURLMOPT_SOCKETDATA, hc);
    curl_multi_setopt(hc->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
    curl_multi_setopt(hc->multi, CURLMOPT_TIMERDATA, hc);
    curl_multi_setopt(hc->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                      (long)cfg->executor_host_connections);
    curl_multi_setopt(hc->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    /* Keep-alive connections for at least as many calls as run at once. */
    curl_multi_setopt(hc->multi, CURLMOPT_MAXCONNECTS, (long)cfg->executor_concurrency);
    register_metrics(hc, m);
    if (pthread_create(&hc->thread, NULL, http_main, hc) != 0) {
        snprintf(err, errlen, "cannot start the executor's HTTP thread");
        hc_destroy(&hc->base);
        return NULL;
    }
    hc->started = true;
    return &hc->base;
}
