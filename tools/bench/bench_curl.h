/* What the libcurl benchmark tools (bench_raw_calls, bench_raw_sched) share:
 * libcurl's multi interface driven the efficient way, by
 * curl_multi_socket_action on an epoll set (as in curl's multi-event.c, and
 * as mooncake's executor does through the runner's poll loop), and the
 * request headers mooncake's executor adds to a task's own. The tool owns
 * the loop and curl's timer (its CURLMOPT_TIMERFUNCTION, kept as it likes);
 * this file keeps curl's sockets in the epoll set, hands curl their events
 * and takes out the transfers that ended, counting 2xx answers and the rest.
 * Any failure ends the tool (bench_die.h's die). Header-only (static inline,
 * so a tool takes what it uses); called from the tool's one thread. */
#ifndef MOONCAKE_BENCH_CURL_H
#define MOONCAKE_BENCH_CURL_H

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "bench_die.h"

/* A multi handle and the epoll set its sockets are in (each with data.fd the
 * socket; the tool may add descriptors of its own). */
typedef struct bench_curl {
    CURLM *multi;
    int epfd;
    long ok, errors; /* transfers ended with an HTTP 2xx answer, and the others */
} bench_curl;

/* curl: watch this socket for these events (or no longer). */
static inline int bench_curl_on_socket(CURL *e, curl_socket_t fd, int what, void *arg, void *sockp)
{
    (void)e;
    bench_curl *bc = arg;
    struct epoll_event ev = {.data.fd = fd};
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(bc->epfd, EPOLL_CTL_DEL, fd, NULL);
        curl_multi_assign(bc->multi, fd, NULL);
        return 0;
    }
    if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
        ev.events |= EPOLLIN;
    if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
        ev.events |= EPOLLOUT;
    /* sockp is non-NULL once the socket is in the set (curl_multi_assign). */
    if (sockp) {
        if (epoll_ctl(bc->epfd, EPOLL_CTL_MOD, fd, &ev) != 0)
            die("epoll_ctl MOD", strerror(errno));
    } else {
        if (epoll_ctl(bc->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
            die("epoll_ctl ADD", strerror(errno));
        curl_multi_assign(bc->multi, fd, bc);
    }
    return 0;
}

/* An epoll set and a multi handle whose sockets go in it, at most
 * host_connections per host and max_connects kept open; curl's timer goes to
 * on_timer (with timer_data). */
static inline void bench_curl_init(bench_curl *bc, curl_multi_timer_callback on_timer,
                                   void *timer_data, long host_connections, long max_connects)
{
    bc->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (bc->epfd < 0)
        die("epoll_create1", strerror(errno));
    bc->multi = curl_multi_init();
    if (!bc->multi)
        die("curl_multi_init", "failed");
    curl_multi_setopt(bc->multi, CURLMOPT_SOCKETFUNCTION, bench_curl_on_socket);
    curl_multi_setopt(bc->multi, CURLMOPT_SOCKETDATA, bc);
    curl_multi_setopt(bc->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(bc->multi, CURLMOPT_TIMERDATA, timer_data);
    curl_multi_setopt(bc->multi, CURLMOPT_MAX_HOST_CONNECTIONS, host_connections);
    curl_multi_setopt(bc->multi, CURLMOPT_MAXCONNECTS, max_connects);
}

static inline void bench_curl_cleanup(bench_curl *bc)
{
    curl_multi_cleanup(bc->multi);
    close(bc->epfd);
}

static inline size_t bench_curl_discard(char *data, size_t size, size_t n, void *arg)
{
    (void)data;
    (void)arg;
    return size * n;
}

/* A new easy handle as the executor's: no signals, no proxy, user_agent,
 * the answer's body read and dropped. */
static inline CURL *bench_curl_easy(const char *user_agent)
{
    CURL *e = curl_easy_init();
    if (!e)
        die("curl_easy_init", "failed");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    curl_easy_setopt(e, CURLOPT_USERAGENT, user_agent);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, bench_curl_discard);
    return e;
}

/* Appends the header line h ("name: value") to *l. */
static inline void bench_curl_header(struct curl_slist **l, const char *h)
{
    struct curl_slist *x = curl_slist_append(*l, h);
    if (!x)
        die("curl_slist_append", "out of memory");
    *l = x;
}

/* Appends the headers the executor adds to a task's own, in its order:
 * Idempotency-Key (webhook_id then attempt, e.g. ":1"), webhook-id,
 * webhook-timestamp (now_ms in seconds) and an empty Expect (no
 * 100-continue wait). */
static inline void bench_curl_executor_headers(struct curl_slist **l, const char *webhook_id,
                                               const char *attempt, int64_t now_ms)
{
    char h[512];
    snprintf(h, sizeof h, "Idempotency-Key: %s%s", webhook_id, attempt);
    bench_curl_header(l, h);
    snprintf(h, sizeof h, "webhook-id: %s", webhook_id);
    bench_curl_header(l, h);
    snprintf(h, sizeof h, "webhook-timestamp: %" PRId64, now_ms / 1000);
    bench_curl_header(l, h);
    bench_curl_header(l, "Expect:");
}

/* Hands curl the events epoll reported on one of its sockets. */
static inline void bench_curl_socket_event(bench_curl *bc, const struct epoll_event *ev)
{
    int flags = 0, running;
    if (ev->events & EPOLLIN)
        flags |= CURL_CSELECT_IN;
    if (ev->events & EPOLLOUT)
        flags |= CURL_CSELECT_OUT;
    if (ev->events & (EPOLLERR | EPOLLHUP))
        flags |= CURL_CSELECT_ERR;
    curl_multi_socket_action(bc->multi, ev->data.fd, flags, &running);
}

/* Tells curl its timer went off. */
static inline void bench_curl_timeout(bench_curl *bc)
{
    int running;
    curl_multi_socket_action(bc->multi, CURL_SOCKET_TIMEOUT, 0, &running);
}

/* A transfer that ended. */
typedef struct bench_curl_ended {
    CURL *easy; /* out of the multi handle: the tool may re-arm or reuse it */
    void *priv; /* its CURLOPT_PRIVATE */
    CURLcode result;
    long status; /* the last HTTP status received, 0 when none */
} bench_curl_ended;

/* Takes the next transfer that ended out of the multi handle into *out,
 * counted in ok or errors (the first 5 errors said on stderr); false when no
 * more have ended. */
static inline bool bench_curl_next_ended(bench_curl *bc, bench_curl_ended *out)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(bc->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        out->easy = msg->easy_handle;
        out->result = msg->data.result;
        out->priv = NULL;
        out->status = 0;
        curl_easy_getinfo(out->easy, CURLINFO_PRIVATE, (char **)&out->priv);
        curl_easy_getinfo(out->easy, CURLINFO_RESPONSE_CODE, &out->status);
        if (out->result == CURLE_OK && out->status >= 200 && out->status < 300) {
            bc->ok++;
        } else if (bc->errors++ < 5) {
            fprintf(stderr, "%s: call failed: %s, HTTP %ld\n", program_invocation_short_name,
                    curl_easy_strerror(out->result), out->status);
        }
        curl_multi_remove_handle(bc->multi, out->easy);
        return true;
    }
    return false;
}

#endif
