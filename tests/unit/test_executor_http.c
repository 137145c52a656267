/* The executor's own HTTP caller (executor_http.c), with libcurl, against a
 * small HTTP server in this process: while the Kafka side says the group took
 * its partitions away (the gate is shut) no call reaches the endpoint, a
 * partition abandoned meanwhile is never called, and the rest start once the
 * gate opens; a process stopped past its due times (SIGSTOP) waits before it
 * calls, so librdkafka can say whether the partitions moved meanwhile,
 * wherever the stop caught the HTTP thread. Times are asserted one way only
 * (nothing arrived before X), so a slow machine cannot fail them. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "broadcast.h"
#include "check.h"
#include "clock.h"
#include "executor_call.h"
#include "simkit.h"

/* ---- the endpoint ------------------------------------------------------------ */

#define MAX_CONNS 16
#define MAX_SEEN 64

typedef struct conn {
    int fd;
    char buf[8192];
    size_t len;
} conn;

/* Every request the server answered: its path and when it arrived. */
typedef struct endpoint {
    int listen_fd, stop_pipe[2];
    uint16_t port;
    pthread_t thread;
    pthread_mutex_t mu;
    char paths[MAX_SEEN][64];
    int64_t at[MAX_SEEN];
    int n;
    conn conns[MAX_CONNS];
} endpoint;

static int endpoint_listen(endpoint *e)
{
    e->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (e->listen_fd < 0 || bind(e->listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(e->listen_fd, 64) != 0 || getsockname(e->listen_fd, (struct sockaddr *)&a, &alen))
        return -1;
    e->port = ntohs(a.sin_port);
    pthread_mutex_init(&e->mu, NULL);
    for (int i = 0; i < MAX_CONNS; i++)
        e->conns[i].fd = -1;
    return pipe(e->stop_pipe);
}

#define ANSWER_BODY_BYTES 5000

/* The answer of /answer...: an interim 100 with a header of its own, then a
 * 503 with headers to keep, to join, to leave out and never to keep, and a
 * body longer than the caller keeps. */
static bool answer(int fd)
{
    static const char head[] = "HTTP/1.1 100 Continue\r\nX-Request-Id: interim\r\n\r\n"
                               "HTTP/1.1 503 Service Unavailable\r\n"
                               "Content-Type: text/plain\r\n"
                               "X-Request-Id: r-1\r\n"
                               "x-request-id:   r-2  \r\n"
                               "Set-Cookie: session=secret\r\n"
                               "X-Other: not kept\r\n"
                               "Content-Length: 5000\r\n\r\n";
    static char body[ANSWER_BODY_BYTES];
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = (char)('a' + i % 26);
    return write(fd, head, sizeof head - 1) == (ssize_t)(sizeof head - 1) &&
           write(fd, body, sizeof body) == (ssize_t)sizeof body;
}

#define ANSWER_REPEATS 3000

/* A 200 repeating one kept header ANSWER_REPEATS times (about 30 KB). */
static bool answer_repeats(int fd)
{
    static char head[ANSWER_REPEATS * 24 + 128];
    size_t n = (size_t)snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\n");
    for (int i = 0; i < ANSWER_REPEATS; i++)
        n += (size_t)snprintf(head + n, sizeof head - n, "X-Request-Id: r-%d\r\n", i);
    n += (size_t)snprintf(head + n, sizeof head - n, "Content-Length: 0\r\n\r\n");
    return write(fd, head, n) == (ssize_t)n;
}

/* Answers every complete request in c's buffer (keep-alive, in order). */
static void serve(endpoint *e, conn *c)
{
    for (;;) {
        c->buf[c->len] = '\0';
        char *end = strstr(c->buf, "\r\n\r\n");
        if (!end)
            return;
        size_t body = 0;
        const char *cl = strcasestr(c->buf, "\r\ncontent-length:");
        if (cl && cl < end)
            body = (size_t)strtoul(cl + 17, NULL, 10);
        size_t whole = (size_t)(end + 4 - c->buf) + body;
        if (c->len < whole)
            return;
        char method[16], path[64];
        if (sscanf(c->buf, "%15s %63s", method, path) == 2) {
            pthread_mutex_lock(&e->mu);
            if (e->n < MAX_SEEN) {
                snprintf(e->paths[e->n], sizeof e->paths[e->n], "%s", path);
                e->at[e->n++] = mc_mono_ms();
            }
            pthread_mutex_unlock(&e->mu);
        }
        if (strcmp(path, "/answer-repeats") == 0) {
            if (!answer_repeats(c->fd))
                return;
        } else if (strncmp(path, "/answer", 7) == 0) {
            if (!answer(c->fd))
                return;
        } else {
            static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
            if (write(c->fd, ok, sizeof ok - 1) < 0)
                return;
        }
        memmove(c->buf, c->buf + whole, c->len - whole);
        c->len -= whole;
    }
}

static void *endpoint_main(void *arg)
{
    endpoint *e = arg;
    for (;;) {
        struct pollfd p[MAX_CONNS + 2] = {{e->stop_pipe[0], POLLIN, 0}, {e->listen_fd, POLLIN, 0}};
        for (int i = 0; i < MAX_CONNS; i++)
            p[i + 2] = (struct pollfd){e->conns[i].fd, POLLIN, 0};
        if (poll(p, MAX_CONNS + 2, 1000) < 0 && errno != EINTR)
            return NULL;
        if (p[0].revents)
            return NULL;
        if (p[1].revents) {
            int fd = accept4(e->listen_fd, NULL, NULL, SOCK_CLOEXEC);
            for (int i = 0; fd >= 0 && i < MAX_CONNS; i++)
                if (e->conns[i].fd < 0) {
                    e->conns[i] = (conn){.fd = fd};
                    fd = -1;
                }
            if (fd >= 0)
                close(fd);
        }
        for (int i = 0; i < MAX_CONNS; i++) {
            conn *c = &e->conns[i];
            if (c->fd < 0 || !p[i + 2].revents)
                continue;
            ssize_t got = read(c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len);
            if (got <= 0) {
                close(c->fd);
                c->fd = -1;
                continue;
            }
            c->len += (size_t)got;
            serve(e, c);
        }
    }
}

static void endpoint_stop(endpoint *e)
{
    if (write(e->stop_pipe[1], "x", 1) < 0)
        perror("endpoint stop");
    pthread_join(e->thread, NULL);
    for (int i = 0; i < MAX_CONNS; i++)
        if (e->conns[i].fd >= 0)
            close(e->conns[i].fd);
    close(e->listen_fd);
    close(e->stop_pipe[0]);
    close(e->stop_pipe[1]);
    pthread_mutex_destroy(&e->mu);
}

/* When path first arrived (monotonic ms), or -1 if it has not. */
static int64_t arrived(endpoint *e, const char *path)
{
    int64_t at = -1;
    pthread_mutex_lock(&e->mu);
    for (int i = 0; i < e->n && at < 0; i++)
        if (strcmp(e->paths[i], path) == 0)
            at = e->at[i];
    pthread_mutex_unlock(&e->mu);
    return at;
}

/* Waits up to ms for path to arrive; when it did (monotonic ms) or -1. */
static int64_t wait_arrival(endpoint *e, const char *path, int ms)
{
    int64_t until = mc_mono_ms() + ms, at;
    while ((at = arrived(e, path)) < 0 && mc_mono_ms() < until)
        usleep(5000);
    return at;
}

/* How many times path arrived. */
static int arrivals(endpoint *e, const char *path)
{
    int n = 0;
    pthread_mutex_lock(&e->mu);
    for (int i = 0; i < e->n; i++)
        n += strcmp(e->paths[i], path) == 0;
    pthread_mutex_unlock(&e->mu);
    return n;
}

/* ---- the caller ---------------------------------------------------------------- */

typedef struct gate_state {
    atomic_bool open;
    mc_endpoints *endpoints; /* what the gate gives the caller; NULL: no groups */
} gate_state;

static bool gate_open(void *arg)
{
    return atomic_load(&((gate_state *)arg)->open);
}

static mc_endpoints *gate_endpoints(void *arg)
{
    return mc_endpoints_ref(((gate_state *)arg)->endpoints);
}

/* A call of task id on partition, due at due (wall clock), to path. */
static mc_call *call_of(const char *id, int32_t partition, int64_t due, uint16_t port,
                        const char *path)
{
    mc_call *j = calloc(1, sizeof *j);
    j->arena = mc_arena_new();
    j->kind = MC_CALL_START;
    j->partition = partition;
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", (unsigned)port, path);
    j->task = kit_task(mc_arena_strdup(j->arena, id), due, mc_arena_strdup(j->arena, url));
    snprintf(j->key, sizeof j->key, "app/%s", id);
    return j;
}

/* Takes the calls that ended; returns how many had status 200. */
static int take_ok(mc_caller *c)
{
    int ok = 0;
    for (mc_call *j = c->ops->take_done(c), *next; j; j = next) {
        next = j->next;
        ok += j->status == 200;
        mc_call_free(j);
    }
    return ok;
}

/* A caller allowed to call 127.0.0.1, with its gate. */
typedef struct caller_env {
    mc_config *cfg;
    mc_metrics *metrics;
    gate_state g;
    mc_call_gate gate;
    mc_caller *c;
} caller_env;

static bool caller_env_start_with(caller_env *ce, bool open, const char *const *more)
{
    ce->g.endpoints = NULL;
    const char *flags[8] = {"--executor-allow-cidrs=127.0.0.0/8"};
    for (int i = 0; more && more[i] && i < 6; i++)
        flags[i + 1] = more[i];
    char err[256];
    ce->cfg = kit_config("executor", flags);
    ce->metrics = mc_metrics_new();
    atomic_init(&ce->g.open, open);
    ce->gate = (mc_call_gate){.may_start = gate_open, .arg = &ce->g};
    if (ce->g.endpoints)
        ce->gate.endpoints = gate_endpoints;
    ce->c = mc_http_caller_new(ce->cfg, ce->metrics, &ce->gate, NULL, err, sizeof err);
    CHECK(ce->c != NULL, "%s", err);
    return ce->c != NULL;
}

/* A caller whose gate is open and gives it snap (the caller_env keeps a reference). */
static bool caller_env_start_endpoints(caller_env *ce, mc_endpoints *snap)
{
    const char *flags[2] = {"--executor-allow-cidrs=127.0.0.0/8", NULL};
    char err[256];
    ce->cfg = kit_config("executor", flags);
    ce->metrics = mc_metrics_new();
    atomic_init(&ce->g.open, true);
    ce->g.endpoints = snap;
    ce->gate = (mc_call_gate){.may_start = gate_open, .endpoints = gate_endpoints, .arg = &ce->g};
    ce->c = mc_http_caller_new(ce->cfg, ce->metrics, &ce->gate, NULL, err, sizeof err);
    CHECK(ce->c != NULL, "%s", err);
    return ce->c != NULL;
}

static bool caller_env_start(caller_env *ce, bool open)
{
    return caller_env_start_with(ce, open, NULL);
}

static void caller_env_end(caller_env *ce)
{
    if (ce->c)
        ce->c->ops->destroy(ce->c);
    mc_metrics_free(ce->metrics);
    kit_config_free(ce->cfg);
}

/* While the gate is shut nothing is called, whether due when posted or
 * falling due later; a partition abandoned meanwhile never is; the rest
 * start once the gate opens. */
static void a_shut_gate_holds_calls_until_it_opens(endpoint *e)
{
    caller_env ce;
    if (!caller_env_start(&ce, false)) {
        caller_env_end(&ce);
        return;
    }
    mc_caller *c = ce.c;
    int64_t now = mc_now_ms();
    mc_call *a = call_of("due-now", 0, now, e->port, "/gate/due-now");
    a->next = call_of("due-soon", 0, now + 100, e->port, "/gate/due-soon");
    a->next->next = call_of("abandoned", 1, now, e->port, "/gate/abandoned");
    c->ops->post(c, a);
    usleep(400 * 1000);
    CHECK(arrived(e, "/gate/due-now") < 0 && arrived(e, "/gate/due-soon") < 0 &&
              arrived(e, "/gate/abandoned") < 0,
          "a call reached the endpoint while the gate was shut");
    CHECK(take_ok(c) == 0);
    c->ops->abandon(c, 1); /* the revoke, once the runner polls */
    atomic_store(&ce.g.open, true);
    CHECK(wait_arrival(e, "/gate/due-now", 10000) >= 0, "not called once the gate opened");
    CHECK(wait_arrival(e, "/gate/due-soon", 10000) >= 0, "not called once the gate opened");
    int ok = 0;
    for (int i = 0; i < 200 && ok < 2; i++, usleep(10000))
        ok += take_ok(c);
    CHECK(ok == 2, "%d of 2 calls came back answered", ok);
    usleep(200 * 1000);
    CHECK(arrived(e, "/gate/abandoned") < 0, "an abandoned partition's call was made");
    caller_env_end(&ce);
}

/* A recall of id on partition below version v. */
static mc_call *recall_of(const char *id, int32_t partition, int64_t v, int32_t attempt)
{
    mc_call *j = calloc(1, sizeof *j);
    j->arena = mc_arena_new();
    j->kind = MC_CALL_RECALL;
    j->partition = partition;
    j->version = (mc_version){.v = v, .attempt = attempt};
    snprintf(j->key, sizeof j->key, "app/%s", id);
    return j;
}

/* Recalls posted together (a mass cancel): each voids exactly the calls of
 * its partition and key with an older version, held or due; the newest
 * recall of a key counts; a call of the same key on another partition, or
 * at the recall's own version or newer, is made. */
static void a_batch_of_recalls_voids_exactly_the_older_versions(endpoint *e)
{
    enum { N = 40 }; /* the endpoint keeps 16 connections: after the others */
    caller_env ce;
    if (!caller_env_start(&ce, false)) { /* shut: nothing starts before the recalls */
        caller_env_end(&ce);
        return;
    }
    mc_caller *c = ce.c;
    int64_t now = mc_now_ms();
    mc_call *calls = NULL, **tail = &calls;
    char id[32], path[64];
    for (int i = 0; i < N; i++) {
        snprintf(id, sizeof id, "r%d", i);
        snprintf(path, sizeof path, "/recall/%d", i);
        mc_call *j = call_of(id, i % 2, i % 3 ? now + 300 : now, e->port, path);
        j->version = (mc_version){.v = 10, .attempt = 2};
        *tail = j;
        tail = &j->next;
    }
    c->ops->post(c, calls);
    calls = NULL;
    tail = &calls;
    for (int i = 0; i < N; i++) {
        snprintf(id, sizeof id, "r%d", i);
        /* i % 4: 0 voids it; 1 its own version, not older; 2 the other
         * partition; 3 an older recall, then a newer one, of the same key. */
        int64_t v = i % 4 == 1 ? 10 : 11;
        int32_t part = i % 4 == 2 ? (i + 1) % 2 : i % 2;
        if (i % 4 == 3) {
            *tail = recall_of(id, part, 5, 0);
            tail = &(*tail)->next;
        }
        *tail = recall_of(id, part, v, i % 4 == 1 ? 2 : 0);
        tail = &(*tail)->next;
    }
    c->ops->post(c, calls);
    usleep(100 * 1000);
    atomic_store(&ce.g.open, true);
    int recalled = 0, recalls = 0, ok = 0, wrong = 0;
    for (int round = 0; round < 300 && recalled + ok < N; round++, usleep(10000)) {
        for (mc_call *j = c->ops->take_done(c), *next; j; j = next) {
            next = j->next;
            if (j->kind == MC_CALL_RECALL) {
                recalls++;
            } else {
                int i = atoi(j->key + strlen("app/r"));
                bool want_recalled = i % 4 == 0 || i % 4 == 3;
                wrong += j->recalled != want_recalled;
                recalled += j->recalled;
                ok += !j->recalled && j->status == 200;
            }
            mc_call_free(j);
        }
    }
    CHECK(recalled == N / 2 && ok == N / 2 && wrong == 0 && recalls == N + N / 4,
          "%d recalled, %d called, %d wrong, %d recalls back", recalled, ok, wrong, recalls);
    caller_env_end(&ce);
}

/* Calls path with the given flags; the call as it came back (the caller's
 * to free), or NULL when it did not within 10 s. */
static mc_call *call_answer(endpoint *e, const char *path, const char *const *flags)
{
    caller_env ce;
    mc_call *back = NULL;
    if (caller_env_start_with(&ce, true, flags)) {
        ce.c->ops->post(ce.c, call_of("answer", 0, mc_now_ms(), e->port, path));
        for (int i = 0; i < 1000 && !back; i++, usleep(10000))
            back = ce.c->ops->take_done(ce.c);
    }
    caller_env_end(&ce);
    CHECK(back != NULL, "the call of /answer never came back");
    return back;
}

static const char *kept(const mc_call *j, const char *name)
{
    for (size_t i = 0; i < j->n_response_headers; i++)
        if (strcmp(j->response_headers[i].key, name) == 0)
            return j->response_headers[i].value;
    return NULL;
}

/* What the endpoint answered is kept for the call's Result: the status, the
 * headers named (repeated ones joined, the interim response's dropped), the
 * first bytes of the body and how long it was; 0 bytes keeps no body. */
static void the_answer_is_kept(endpoint *e)
{
    static const char *const some[] = {"--executor-snippet-bytes=100",
                                       "--executor-response-headers=Content-Type, X-Request-Id",
                                       NULL};
    mc_call *j = call_answer(e, "/answer", some);
    if (j) {
        CHECK(j->status == 503 && !j->transport_failed, "status %ld", j->status);
        CHECK(j->snippet_len == 100 && memcmp(j->snippet, "abcdefghijklmnopqrstuvwxyzab", 28) == 0,
              "kept %zu bytes of the body", j->snippet_len);
        CHECK(j->body_bytes == ANSWER_BODY_BYTES, "counted %lld body bytes",
              (long long)j->body_bytes);
        CHECK(j->n_response_headers == 2, "%zu headers kept", j->n_response_headers);
        CHECK(kept(j, "content-type") && strcmp(kept(j, "content-type"), "text/plain") == 0);
        CHECK(kept(j, "x-request-id") && strcmp(kept(j, "x-request-id"), "r-1, r-2") == 0,
              "x-request-id: %s", kept(j, "x-request-id") ? kept(j, "x-request-id") : "(none)");
        mc_call_free(j);
    }
    static const char *const none[] = {"--executor-snippet-bytes=0",
                                       "--executor-response-headers=", NULL};
    j = call_answer(e, "/answer", none);
    if (j) {
        CHECK(j->status == 503 && j->snippet_len == 0 && j->n_response_headers == 0 &&
                  j->body_bytes == ANSWER_BODY_BYTES,
              "kept %zu bytes and %zu headers with both turned off", j->snippet_len,
              j->n_response_headers);
        mc_call_free(j);
    }
    /* A header repeated without end is kept up to its bound, not grown. */
    j = call_answer(e, "/answer-repeats", some);
    if (j) {
        const char *v = kept(j, "x-request-id");
        CHECK(j->status == 200 && v && strncmp(v, "r-0, r-1, r-2", 13) == 0 &&
                  strlen(v) <= MC_CALL_RESPONSE_HEADER_MAX && strlen(v) > 1000,
              "x-request-id kept %zu bytes", v ? strlen(v) : 0);
        mc_call_free(j);
    }
}

/* Waits up to 10 s for one call to come back; the caller's to free, or NULL. */
static mc_call *take_one(mc_caller *c)
{
    for (int i = 0; i < 1000; i++, usleep(10000)) {
        mc_call *j = c->ops->take_done(c);
        if (j) {
            CHECK(j->next == NULL, "more than one call came back");
            return j;
        }
    }
    CHECK(0, "no call came back within 10 s");
    return NULL;
}

/* A call to group://billing goes to a member, the task's path after the member's; a
 * member that refuses connections is passed over within the same attempt (FAILOVER) and
 * then skipped while unhealthy; a task's own strategy (mooncake.route) overrides the
 * group's; the call names the member that answered; a group that does not exist fails the
 * attempt without a call. */
static void a_group_call_fails_over_and_names_its_member(endpoint *e)
{
    char dead[64], m1[64], m2[64];
    snprintf(dead, sizeof dead, "http://127.0.0.1:1"); /* nothing listens on port 1 */
    snprintf(m1, sizeof m1, "http://127.0.0.1:%u/m1", (unsigned)e->port);
    snprintf(m2, sizeof m2, "http://127.0.0.1:%u/m2", (unsigned)e->port);
    mc_group_member members[3] = {{m2, NULL}, {dead, NULL}, {m1, NULL}};
    mc_group g = {.app_id = "a",
                  .name = "billing",
                  .strategy = MC_ROUTE_FAILOVER,
                  .unhealthy_ms = 60000,
                  .members = members,
                  .n_members = 3};
    /* "guarded": a first member the SSRF guard refuses (10.0.0.0/8 is not allowed). */
    mc_group_member guarded[2] = {{"http://10.0.0.1:9", NULL}, {m1, NULL}};
    mc_group gg = {.app_id = "a",
                   .name = "guarded",
                   .strategy = MC_ROUTE_FAILOVER,
                   .unhealthy_ms = 60000,
                   .members = guarded,
                   .n_members = 2};
    caller_env ce = {0};
    mc_endpoints *keep = mc_endpoints_new();
    CHECK(mc_endpoints_put_group(keep, &g) == 0 && mc_endpoints_put_group(keep, &gg) == 0);
    if (!caller_env_start_endpoints(&ce, keep)) {
        caller_env_end(&ce);
        mc_endpoints_unref(keep);
        return;
    }
    mc_call *j;
    for (int i = 0; i < 2; i++) {
        mc_call *c = call_of(i ? "fo-2" : "fo-1", 0, mc_now_ms(), 0, "");
        c->task.callback.url = "group://billing/hook?x=1";
        ce.c->ops->post(ce.c, c);
        j = take_one(ce.c);
        CHECK(j && j->status == 200 && strcmp(j->member, m1) == 0,
              "FAILOVER call %d: status %ld, member '%s', error '%s'", i, j ? j->status : 0,
              j ? j->member : "", j ? j->error : "");
        mc_call_free(j);
    }
    CHECK(arrivals(e, "/m1/hook?x=1") == 2, "the first healthy member got %d of 2 calls",
          arrivals(e, "/m1/hook?x=1"));
    /* The dead member was passed over once; the second call skipped it as unhealthy. */
    mc_counter *failovers =
        mc_metrics_counter(ce.metrics, "mooncake_executor_failovers_total", "", NULL);
    CHECK(failovers && mc_counter_value(failovers) == 1, "%llu failovers, want 1",
          failovers ? (unsigned long long)mc_counter_value(failovers) : 0ULL);
    CHECK(arrivals(e, "/m2/hook?x=1") == 0, "FAILOVER skipped past the first healthy member");
    /* ROUND_ROBIN named by the task: the dead member (unhealthy now) is skipped. */
    static const mc_kv route[1] = {{MC_ROUTE_METADATA, "ROUND_ROBIN"}};
    for (int i = 0; i < 6; i++) {
        char id[16];
        snprintf(id, sizeof id, "rr-%d", i);
        mc_call *c = call_of(id, 0, mc_now_ms(), 0, "");
        c->task.callback.url = "group://billing/rr";
        c->task.metadata = route;
        c->task.n_metadata = 1;
        ce.c->ops->post(ce.c, c);
        mc_call_free(take_one(ce.c));
    }
    CHECK(arrivals(e, "/m1/rr") == 3 && arrivals(e, "/m2/rr") == 3,
          "round robin gave m1 %d and m2 %d of 6", arrivals(e, "/m1/rr"), arrivals(e, "/m2/rr"));
    /* A first member the SSRF guard refuses: the next one answers, and the call is a
     * success, not the refusal of the try before. */
    mc_call *c = call_of("guarded", 0, mc_now_ms(), 0, "");
    c->task.callback.url = "group://guarded/g";
    ce.c->ops->post(ce.c, c);
    j = take_one(ce.c);
    CHECK(j && j->status == 200 && !j->transport_failed && strcmp(j->member, m1) == 0,
          "after a refused member: status %ld, transport_failed %d, member '%s', error '%s'",
          j ? j->status : 0, j ? j->transport_failed : -1, j ? j->member : "", j ? j->error : "");
    mc_call_free(j);
    c = call_of("nogroup", 0, mc_now_ms(), 0, "");
    c->task.callback.url = "group://nosuch/x";
    ce.c->ops->post(ce.c, c);
    j = take_one(ce.c);
    CHECK(j && j->transport_failed && !j->permanent && strstr(j->error, "no endpoint group"),
          "a missing group: %s", j ? j->error : "");
    mc_call_free(j);
    /* SHARDING_BROADCAST: no call; the task comes back with every member once (the dead
     * one too: each shard retries on its own), for the Kafka side. */
    static const mc_kv bcast[1] = {{MC_ROUTE_METADATA, "SHARDING_BROADCAST"}};
    int before = arrivals(e, "/m1/b") + arrivals(e, "/m2/b");
    c = call_of("bc", 0, mc_now_ms(), 0, "");
    c->task.callback.url = "group://billing/b";
    c->task.metadata = bcast;
    c->task.n_metadata = 1;
    ce.c->ops->post(ce.c, c);
    j = take_one(ce.c);
    int seen = 0; /* a bit per member of the group */
    for (size_t i = 0; j && i < j->n_shard_members; i++)
        seen |= (strcmp(j->shard_members[i], m2) == 0) << 0 |
                (strcmp(j->shard_members[i], dead) == 0) << 1 |
                (strcmp(j->shard_members[i], m1) == 0) << 2;
    CHECK(j && !j->transport_failed && j->n_shard_members == 3 && seen == 7,
          "broadcast: %zu members (seen %d), error '%s'", j ? j->n_shard_members : 0, seen,
          j ? j->error : "");
    mc_call_free(j);
    /* A shard calls its own member, the unhealthy dead one included, and never fails
     * over; one whose member left the group fails (to be retried). */
    const char *pins[3] = {m2, dead, "http://127.0.0.1:2"};
    for (int i = 0; i < 3; i++) {
        mc_kv pin[2] = {{MC_ROUTE_METADATA, "SHARDING_BROADCAST"}, {MC_MEMBER_METADATA, pins[i]}};
        c = call_of("bc#shard", 0, mc_now_ms(), 0, "");
        c->task.callback.url = "group://billing/b";
        c->task.metadata = pin;
        c->task.n_metadata = 2;
        ce.c->ops->post(ce.c, c);
        j = take_one(ce.c);
        if (i == 0)
            CHECK(j && j->status == 200 && strcmp(j->member, m2) == 0,
                  "shard pinned to m2: status %ld, member '%s'", j ? j->status : 0,
                  j ? j->member : "");
        else if (i == 1)
            CHECK(j && j->transport_failed && !j->permanent && strcmp(j->member, dead) == 0,
                  "shard pinned to the dead member: member '%s', error '%s'", j ? j->member : "",
                  j ? j->error : "");
        else
            CHECK(j && j->transport_failed && !j->permanent &&
                      strstr(j->error, "is no longer in endpoint group"),
                  "shard of a member gone: %s", j ? j->error : "");
        mc_call_free(j);
    }
    CHECK(arrivals(e, "/m2/b") == 1 && arrivals(e, "/m1/b") + arrivals(e, "/m2/b") == before + 1,
          "the broadcast itself called no one; its shards called m2 %d times, m1 %d",
          arrivals(e, "/m2/b"), arrivals(e, "/m1/b"));
    caller_env_end(&ce);
    mc_endpoints_unref(keep);
}

/* Calls bound by two buckets at once (a BUSYOVER group whose one member takes one call,
 * and a limit of one call open on its host) move from one bucket's wait list to the
 * other's as calls end: in each round, the first group call runs, the others wait for the
 * member, and a call straight to the host waits for the host; when the first ends, the
 * direct call takes the host and the group's waiters all move to the host's list. Every
 * call still comes back, none is left waiting, and the caller is idle after. */
static void calls_moving_between_buckets_all_end(endpoint *e)
{
    char m1[64];
    snprintf(m1, sizeof m1, "http://127.0.0.1:%u/b1", (unsigned)e->port);
    mc_group_member members[1] = {{m1, NULL}};
    mc_group g = {.app_id = "a",
                  .name = "busy",
                  .strategy = MC_ROUTE_BUSYOVER,
                  .member_concurrency = 1,
                  .members = members,
                  .n_members = 1};
    caller_env ce = {0};
    mc_endpoints *snap = mc_endpoints_new();
    mc_admission_limit one = {.max_concurrent = 1};
    CHECK(mc_endpoints_put_group(snap, &g) == 0 &&
          mc_endpoints_put_limit(snap, MC_LIMIT_HOST, "127.0.0.1", one) == 0);
    caller_env_start_endpoints(&ce, snap);
    enum { ROUNDS = 4, PER_ROUND = 12 };
    for (int round = 0; ce.c && round < ROUNDS; round++) {
        int64_t now = mc_now_ms();
        mc_call *first = NULL, **tail = &first;
        for (int i = 0; i < PER_ROUND; i++) {
            char id[32];
            snprintf(id, sizeof id, "mv-%d-%d", round, i);
            mc_call *c = call_of(id, 0, now, 0, "");
            /* The last one straight to the host, the rest to the group. */
            char url[96];
            if (i == PER_ROUND - 1)
                snprintf(url, sizeof url, "%s/direct-%d", m1, round);
            else
                snprintf(url, sizeof url, "group://busy/mv-%d-%02d", round, i);
            c->task.callback.url = mc_arena_strdup(c->arena, url);
            *tail = c;
            tail = &c->next;
        }
        ce.c->ops->post(ce.c, first);
        int back = 0;
        for (int i = 0; i < 1000 && back < PER_ROUND; i++, usleep(10000))
            for (mc_call *j = ce.c->ops->take_done(ce.c), *next; j; j = next) {
                next = j->next;
                CHECK(j->status == 200, "%s: status %ld (%s)", j->key, j->status, j->error);
                back++;
                mc_call_free(j);
            }
        CHECK(back == PER_ROUND, "round %d: %d of %d calls came back, the rest wait for good",
              round, back, PER_ROUND);
        /* One at a time (the host's limit), in the order they were due: moving from the
         * group's list to the host's keeps a herd's order. */
        char prefix[32];
        int n = snprintf(prefix, sizeof prefix, "/b1/mv-%d-", round), last = -1;
        pthread_mutex_lock(&e->mu);
        for (int k = 0; k < e->n; k++) {
            if (strncmp(e->paths[k], prefix, (size_t)n) != 0)
                continue;
            int i = atoi(e->paths[k] + n);
            CHECK(i > last, "round %d: call %d arrived after call %d", round, i, last);
            last = i;
        }
        pthread_mutex_unlock(&e->mu);
        CHECK(ce.c->ops->idle(ce.c), "the caller is not idle after every call came back");
    }
    caller_env_end(&ce);
    mc_endpoints_unref(snap);
}

/* The child: one call due in 300 ms, says so on `posted`, then (stopped
 * and continued by the parent meanwhile) waits for it to end. Exits 0 when
 * it was answered. */
static int child_calls_once(uint16_t port, int posted)
{
    caller_env ce;
    int ok = 0;
    if (caller_env_start(&ce, true)) {
        ce.c->ops->post(ce.c, call_of("stalled", 0, mc_now_ms() + 300, port, "/stall"));
        if (write(posted, "p", 1) != 1)
            return 3;
        for (int i = 0; i < 1000 && !ok; i++, usleep(10000))
            ok = take_ok(ce.c);
    }
    caller_env_end(&ce);
    return ok ? 0 : 1;
}

/* A batch of n calls of partition 1, due in an hour: keeps the HTTP thread
 * busy taking them. */
static mc_call *busy_batch(uint16_t port, int n, int64_t due)
{
    mc_call *head = NULL, **tail = &head;
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "busy%d", i);
        *tail = call_of(id, 1, due, port, "/busy");
        tail = &(*tail)->next;
    }
    return head;
}

/* A call posted just before its partition is abandoned (a lost assignment,
 * an abort) or handed over (an orderly revoke), while the HTTP thread is
 * busy with a large batch, is gone once the request returns: never held,
 * never started for a partition the Kafka side let go. And a call of the
 * partition's next generation, posted after the hand-over and its abandon,
 * is kept. */
static void a_call_posted_before_an_abandon_is_abandoned(endpoint *e)
{
    caller_env ce;
    if (!caller_env_start(&ce, false))
        return;
    mc_caller *c = ce.c;
    int64_t due = mc_now_ms() + 3600000;
    int survived = 0, kept_new = 0, trials = 40;
    for (int t = 0; t < trials; t++) {
        bool orderly = t % 2;
        c->ops->post(c, busy_batch(e->port, 20000, due));
        c->ops->post(c, call_of("last", 0, due, e->port, "/last"));
        if (orderly)
            c->ops->drain_partition(c, 0);
        else
            c->ops->abandon(c, 0);
        survived += c->ops->calls_of(c, 0) > 0;
        c->ops->abandon(c, 0);
        if (orderly) { /* the next generation's call */
            c->ops->post(c, call_of("next", 0, due, e->port, "/next"));
            kept_new += c->ops->calls_of(c, 0) == 1;
            c->ops->abandon(c, 0);
        }
        c->ops->abandon(c, 1);
    }
    CHECK(survived == 0, "a call posted before its partition was let go survived in %d of %d",
          survived, trials);
    CHECK(kept_new == trials / 2, "the next generation's call kept in %d of %d", kept_new,
          trials / 2);
    caller_env_end(&ce);
}

/* Calls finishing a few ms apart wake the runner about once per
 * DONE_WAKE_MIN_MS, not once each (a wake-up of each thread per task under
 * load), and every one comes back through a wake-up: none is left waiting
 * in the done list unannounced. */
static void calls_ending_close_together_share_wake_ups(endpoint *e)
{
    enum { N = 100, APART_MS = 2 };
    caller_env ce;
    if (!caller_env_start(&ce, true))
        return;
    int64_t t0 = mc_now_ms() + 50;
    for (int i = 0; i < N; i++) {
        char id[16];
        snprintf(id, sizeof id, "w%d", i);
        ce.c->ops->post(ce.c, call_of(id, 0, t0 + i * APART_MS, e->port, "/wake"));
    }
    int wakeups = 0, ok = 0;
    struct pollfd pfd = {.fd = ce.c->ops->wake_fd(ce.c), .events = POLLIN};
    while (ok < N && poll(&pfd, 1, 10000) == 1) {
        wakeups++;
        ok += take_ok(ce.c);
    }
    CHECK(ok == N, "%d of %d calls came back through a wake-up", ok, N);
    CHECK(wakeups <= N / 2, "%d wake-ups for %d calls ending %d ms apart", wakeups, N, APART_MS);
    caller_env_end(&ce);
}

int main(void)
{
    endpoint e = {0};
    if (endpoint_listen(&e) != 0) {
        perror("endpoint");
        return 1;
    }
    /* Forked before any thread exists. The child's call falls due while it
     * is stopped for 2 s; once continued, it must not call at once: the
     * group may have moved the partition, and librdkafka looks only about
     * once a second. */
    int posted[2];
    if (pipe(posted) != 0)
        return 1;
    pid_t child = fork();
    if (child == 0) {
        close(e.listen_fd);
        _exit(child_calls_once(e.port, posted[1]));
    }
    CHECK(pthread_create(&e.thread, NULL, endpoint_main, &e) == 0);
    char p;
    CHECK(read(posted[0], &p, 1) == 1, "the child did not post its call");
    close(posted[0]);
    close(posted[1]);
    usleep(50 * 1000);
    kill(child, SIGSTOP);
    usleep(2000 * 1000);
    int64_t continued = mc_mono_ms();
    kill(child, SIGCONT);
    int64_t at = wait_arrival(&e, "/stall", 20000);
    CHECK(at >= 0, "the stopped process never called");
    CHECK(at < 0 || at - continued >= 1000,
          "called %lld ms after it was continued, before librdkafka could look",
          (long long)(at - continued));
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's call: status %d", status);

    a_shut_gate_holds_calls_until_it_opens(&e);
    a_call_posted_before_an_abandon_is_abandoned(&e);
    the_answer_is_kept(&e);
    a_group_call_fails_over_and_names_its_member(&e);
    calls_moving_between_buckets_all_end(&e);
    a_batch_of_recalls_voids_exactly_the_older_versions(&e);
    calls_ending_close_together_share_wake_ups(&e);
    endpoint_stop(&e);
    return check_exit("test_executor_http");
}
