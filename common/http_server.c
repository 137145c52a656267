/* The observability endpoint: /metrics, /healthz and /readyz on
 * libmicrohttpd's internal polling thread. Probes run the registered checks
 * on that thread, so a stuck processor loop shows up as a failing check
 * rather than as a probe that never answers. */
#include "http_server.h"

#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Per kind. A fixed array keeps a probe's snapshot on the stack. */
#define MAX_CHECKS 64
#define WHY_LEN 256

typedef struct check {
    char *name; /* owned copy */
    mc_check_fn fn;
    void *arg;
} check;

typedef struct check_list {
    check items[MAX_CHECKS];
    size_t n;
    /* A check that could not be stored (list full, or no memory for its
     * name) must not silently pass, so its kind fails from then on. */
    bool overflow;
} check_list;

struct mc_http_server {
    struct MHD_Daemon *daemon;
    mc_http_api_fn api;
    mc_http_api_done_fn api_done;
    void *api_cls;
    mc_metrics *metrics;
    uint16_t port;
    bool ready_needs_check;
    pthread_mutex_t lock; /* guards ready and health */
    check_list ready, health;
};

/* ---------------------------------------------------------------------------
 * Responses
 * ------------------------------------------------------------------------ */

/* Queues body (malloc'd, ownership passes to MHD) with a status and a
 * Content-Type. NULL body means the response could not be built: 500. */
static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status, char *body,
                             const char *content_type)
{
    static const char oom[] = "out of memory\n";
    struct MHD_Response *r;
    if (body) {
        r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    } else {
        status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        content_type = "text/plain; charset=utf-8";
        r = MHD_create_response_from_buffer(sizeof oom - 1, (void *)oom, MHD_RESPMEM_PERSISTENT);
    }
    if (!r) {
        free(body);
        return MHD_NO; /* MHD closes the connection */
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    /* Probes and scrapes must always see the present, never a cached past. */
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *conn, unsigned int status,
                                  const char *text)
{
    return reply(conn, status, strdup(text), "text/plain; charset=utf-8");
}

/* One run of a kind's checks. */
typedef struct check_run {
    check snap[MAX_CHECKS];
    size_t n;
    bool overflow, starting, all;
    bool pass[MAX_CHECKS];
    char why[MAX_CHECKS][WHY_LEN];
} check_run;

/* Runs every check of one kind. The list is copied under the lock and the
 * checks run outside it, so a slow check never blocks a processor adding
 * its own. Names stay valid after unlocking: they are freed only by
 * mc_http_stop(), after the HTTP thread has exited. */
static void run_checks(mc_http_server *s, const check_list *list, check_run *r)
{
    pthread_mutex_lock(&s->lock);
    r->n = list->n;
    r->overflow = list->overflow;
    memcpy(r->snap, list->items, r->n * sizeof r->snap[0]);
    pthread_mutex_unlock(&s->lock);
    r->starting = r->n == 0 && list == &s->ready && s->ready_needs_check;
    r->all = !r->overflow && !r->starting;
    for (size_t i = 0; i < r->n; i++) {
        r->why[i][0] = '\0';
        r->pass[i] = r->snap[i].fn(r->snap[i].arg, r->why[i], WHY_LEN);
        r->why[i][WHY_LEN - 1] = '\0'; /* in case a check filled it to the brim */
        /* One line per check, whatever the check wrote. */
        for (char *p = r->why[i]; *p; p++)
            if (*p == '\n' || *p == '\r')
                *p = ' ';
        if (!r->pass[i])
            r->all = false;
    }
}

/* The probe's body: "ok" and one "name: ok" line per check when all pass,
 * otherwise "failed" and one "name: reason" line per failing check. */
static enum MHD_Result reply_checks(mc_http_server *s, struct MHD_Connection *conn,
                                    const check_list *list)
{
    check_run *r = malloc(sizeof *r);
    if (!r)
        return reply(conn, 0, NULL, NULL);
    run_checks(s, list, r);
    if (r->starting) {
        free(r);
        return reply_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "starting\n");
    }
    char *body = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&body, &len);
    if (!f) {
        free(r);
        return reply(conn, 0, NULL, NULL);
    }
    fputs(r->all ? "ok\n" : "failed\n", f);
    if (r->overflow)
        fprintf(f, "checks: more than %d registered, or no memory\n", MAX_CHECKS);
    for (size_t i = 0; i < r->n; i++) {
        if (r->pass[i] && r->all)
            fprintf(f, "%s: ok\n", r->snap[i].name);
        else if (!r->pass[i])
            fprintf(f, "%s: %s\n", r->snap[i].name, r->why[i][0] ? r->why[i] : "failed");
    }
    bool failed = ferror(f) != 0;
    if (fclose(f) != 0 || failed) {
        free(body);
        body = NULL;
    }
    bool all = r->all;
    free(r);
    return reply(conn, all ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, body,
                 "text/plain; charset=utf-8");
}

json_t *mc_http_ready_json(mc_http_server *s)
{
    check_run *r = malloc(sizeof *r);
    if (!r)
        return NULL;
    run_checks(s, &s->ready, r);
    json_t *checks = json_array();
    for (size_t i = 0; checks && i < r->n; i++)
        json_array_append_new(checks, json_pack("{s:s,s:b,s:s}", "name", r->snap[i].name, "ok",
                                                r->pass[i], "why", r->why[i]));
    json_t *out = checks ? json_pack("{s:b,s:b,s:o}", "ready", r->all, "starting", r->starting,
                                     "checks", checks)
                         : NULL;
    free(r);
    return out;
}

/* MHD's access handler. A refused method is answered on the first call,
 * before any body is read, and MHD closes that connection. Everything else
 * is answered on the second call, once MHD knows the request is complete:
 * answering a GET earlier also works but costs the keep-alive a scraper
 * would reuse. */
static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **req_cls)
{
    (void)version;
    mc_http_server *s = cls;
    bool probe =
        strcmp(url, "/metrics") == 0 || strcmp(url, "/healthz") == 0 || strcmp(url, "/readyz") == 0;
    if (s->api && !probe)
        return s->api(s->api_cls, conn, url, method, upload_data, upload_data_size, req_cls) ==
                       MHD_YES
                   ? MHD_YES
                   : MHD_NO;

    /* MHD drops the body of HEAD answers itself, keeping Content-Length. */
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return reply_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
    if (*req_cls == NULL) {
        *req_cls = s; /* any non-NULL marker: "headers seen" */
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        *upload_data_size = 0; /* a GET with a body: ignore it */
        return MHD_YES;
    }

    if (strcmp(url, "/metrics") == 0) {
        if (!s->metrics)
            return reply_text(conn, MHD_HTTP_OK, "");
        return reply(conn, MHD_HTTP_OK, mc_metrics_render(s->metrics),
                     "text/plain; version=0.0.4; charset=utf-8");
    }
    if (strcmp(url, "/healthz") == 0)
        return reply_checks(s, conn, &s->health);
    if (strcmp(url, "/readyz") == 0)
        return reply_checks(s, conn, &s->ready);
    return reply_text(conn, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* Tells the API that libmicrohttpd is done with one of its requests. Probe
 * requests carry the server itself as their marker and need nothing. */
static void request_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                              enum MHD_RequestTerminationCode toe)
{
    (void)conn;
    (void)toe;
    mc_http_server *s = cls;
    if (s->api_done && *req_cls && *req_cls != s)
        s->api_done(s->api_cls, req_cls);
}

/* ---------------------------------------------------------------------------
 * Start and stop
 * ------------------------------------------------------------------------ */

/* Formats addr:port the way a user would type it ([::1]:8080 for IPv6). */
static void format_endpoint(char *out, size_t outlen, const char *host, uint16_t port)
{
    if (strchr(host, ':'))
        snprintf(out, outlen, "[%s]:%u", host, (unsigned)port);
    else
        snprintf(out, outlen, "%s:%u", host, (unsigned)port);
}

/* MHD reports a failed bind only on stderr and leaves errno unspecified, so
 * after a failure we try the same bind ourselves to name the cause
 * ("Address already in use") in the caller's error. Diagnosis only: the
 * socket is closed at once. */
static const char *bind_failure_reason(const struct sockaddr *sa, socklen_t salen)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return strerror(errno);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one); /* as MHD does */
    const char *reason = NULL;
    if (bind(fd, sa, salen) != 0)
        reason = strerror(errno);
    close(fd);
    return reason ? reason : "libmicrohttpd could not start (see its message above)";
}

mc_http_server *mc_http_start(const mc_http_options *opts, char *err, size_t errlen)
{
    const char *host = opts->bind_address && opts->bind_address[0] ? opts->bind_address : "0.0.0.0";
    char endpoint[300];
    format_endpoint(endpoint, sizeof endpoint, host, opts->port);

    char service[8];
    snprintf(service, sizeof service, "%u", (unsigned)opts->port);
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(host, service, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", endpoint, gai_strerror(rc));
        return NULL;
    }

    mc_http_server *s = calloc(1, sizeof *s);
    if (!s || pthread_mutex_init(&s->lock, NULL) != 0) {
        free(s);
        freeaddrinfo(ai);
        snprintf(err, errlen, "cannot listen on %s: out of memory", endpoint);
        return NULL;
    }
    s->metrics = opts->metrics;
    s->ready_needs_check = opts->ready_needs_check;
    s->api = opts->api;
    s->api_done = opts->api_done;
    s->api_cls = opts->api_cls;

    /* poll(2), not epoll: libmicrohttpd 0.9.75's epoll loop, when
     * epoll_wait fills its 128-event buffer, waits again (up to the
     * connection timeout) before handling those events; with ~128
     * connections all waiting for answers nothing else arrives and every
     * client stalls for up to a minute. poll also saves the two epoll_ctl
     * calls per suspended request. */
    unsigned int flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    /* The API answers some requests only after Kafka has acknowledged them:
     * the connection is suspended meanwhile, so a thread never waits. */
    if (opts->api)
        flags |= MHD_ALLOW_SUSPEND_RESUME;
    bool tls = opts->tls_cert_pem && opts->tls_key_pem;
    if (tls)
        flags |= MHD_USE_TLS;
    struct MHD_OptionItem items[10];
    size_t n = 0;
    items[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, ai->ai_addr};
    /* An idle prober must not hold a connection forever; an API client's
     * keep-alive connection may idle a little longer between requests. */
    items[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, opts->api ? 60 : 10, NULL};
    items[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED,
                                         (intptr_t)(void (*)(void))request_completed, s};
    if (opts->threads > 1)
        items[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, opts->threads, NULL};
    if (opts->connection_limit)
        items[n++] =
            (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, opts->connection_limit, NULL};
    if (opts->memory_limit)
        items[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                                             (intptr_t)opts->memory_limit, NULL};
    if (opts->per_ip_limit)
        items[n++] =
            (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT, opts->per_ip_limit, NULL};
    if (tls) {
        items[n++] =
            (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)opts->tls_cert_pem};
        items[n++] =
            (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)opts->tls_key_pem};
    }
    items[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    s->daemon = MHD_start_daemon(flags, opts->port, NULL, NULL, handle, s, MHD_OPTION_ARRAY, items,
                                 MHD_OPTION_END);
    if (!s->daemon) {
        snprintf(err, errlen, "cannot listen on %s: %s", endpoint,
                 bind_failure_reason(ai->ai_addr, ai->ai_addrlen));
        freeaddrinfo(ai);
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
    }
    freeaddrinfo(ai);

    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : opts->port;
    return s;
}

uint16_t mc_http_port(const mc_http_server *s)
{
    return s ? s->port : 0;
}

void mc_http_add_check(mc_http_server *s, const char *kind, const char *name, mc_check_fn fn,
                       void *arg)
{
    if (!s || !kind || !name || !fn)
        return;
    check_list *list;
    if (strcmp(kind, "ready") == 0) {
        list = &s->ready;
    } else if (strcmp(kind, "health") == 0) {
        list = &s->health;
    } else {
        /* A typo here would leave a check that never runs: fail loudly at
         * start-up, where every test and deployment hits it at once. */
        fprintf(stderr, "mc_http_add_check: unknown kind \"%s\" (want \"ready\" or \"health\")\n",
                kind);
        abort();
    }
    char *copy = strdup(name);
    pthread_mutex_lock(&s->lock);
    if (copy && list->n < MAX_CHECKS) {
        list->items[list->n++] = (check){.name = copy, .fn = fn, .arg = arg};
        copy = NULL;
    } else {
        list->overflow = true;
    }
    pthread_mutex_unlock(&s->lock);
    free(copy);
}

void mc_http_stop(mc_http_server *s)
{
    if (!s)
        return;
    /* Joins the polling thread, so no probe can touch the checks below. */
    MHD_stop_daemon(s->daemon);
    check_list *lists[] = {&s->ready, &s->health};
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < lists[k]->n; i++)
            free(lists[k]->items[i].name);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
