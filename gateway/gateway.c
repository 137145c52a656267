/* The gateway: HTTP requests in, Commands to the tasks topic and
 * JobCommands (jobs, and the links of serial chains) to the job-commands
 * topic out (and, for /jobs/preview, fire times computed here).
 *
 * Threads. libmicrohttpd's threads parse requests, check them and hand the
 * encoded Command to librdkafka; the connection is then suspended, so no
 * thread waits on Kafka. A delivery thread polls the producer: each
 * acknowledgement (or failure) records the outcome in its request and
 * resumes the connection, and libmicrohttpd calls the handler once more to
 * send the answer. The main thread probes the broker for /readyz.
 *
 * A request's life: first call (headers: route, method, Content-Type,
 * Content-Length, token, Idempotency-Key), body calls, last call (parse,
 * app check, idempotency, produce, suspend), the call after resume (answer),
 * and the completion callback (free). Errors known from the headers alone
 * are answered at once; libmicrohttpd then closes the connection rather than
 * read a body nobody wants.
 *
 * The record is produced from the request's own buffer without a copy: the
 * request outlives its delivery report, since the connection stays
 * suspended until then. */
#include "gateway.h"

#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "chains.h"
#include "cluster.h"
#include "codec.h"
#include "console.h"
#include "dead_letters.h"
#include "endpoint_defs.h"
#include "endpoint_json.h"
#include "broadcast.h"
#include "endpoint_table.h"
#include "idempotency.h"
#include "job_json.h"
#include "jobs_view.h"
#include "kafka.h"
#include "kafka_targets.h"
#include "task_json.h"
#include "task_query.h"
#include "view_forward.h"
#include "uuid7.h"
#include "crypto.h"
#include "clock.h"

#define MAX_IDEMPOTENCY_KEY 255
#define READY_PROBE_MS 1000
/* How long GET /api/task waits for the view to catch up with what was
 * committed before the question. */
#define TASK_QUESTION_TIMEOUT_MS 3000
/* Task questions waiting at once (each on a thread); more get 503. */
#define MAX_QUESTIONS_IN_FLIGHT 256

typedef enum route_id {
    R_SUBMIT,
    R_INNER_SUBMIT,
    R_DONE,
    R_UUID,
    R_JOBS,
    R_JOBS_PAUSE,
    R_JOBS_RESUME,
    R_JOBS_DELETE,
    R_JOBS_TRIGGER,
    R_JOBS_PREVIEW,
    R_JOBS_LIST,
    R_TASK,
    R_TASKS,
    R_STATS,
    R_RESCHEDULE,
    R_WHOAMI,
    R_CLUSTER,
    R_CONSOLE,
    R_DEAD_LETTERS,
    R_DEAD_REQUEUE,
    R_GROUPS,
    R_GROUPS_DELETE,
    R_LIMITS,
    R_LIMITS_DELETE,
    R_GROUPS_LIST,
    R_LIMITS_LIST,
    R_OTHER,
    N_ROUTES
} route_id;

typedef struct route {
    const char *path;
    const char *method; /* the one it answers */
    const char *allow;  /* the Allow header of its 405 */
    const char *label;  /* its metrics' route label; NULL: the path */
} route;

static const route routes[N_ROUTES] = {
    [R_SUBMIT] = {"/submit", "POST", "POST"},
    [R_INNER_SUBMIT] = {"/inner/submit", "POST", "POST"},
    [R_DONE] = {"/api/task/done", "POST", "POST"},
    [R_UUID] = {"/uuid", "GET", "GET, HEAD"},
    [R_JOBS] = {"/jobs", "POST", "GET, POST"},
    [R_JOBS_PAUSE] = {"/jobs/pause", "POST", "POST"},
    [R_JOBS_RESUME] = {"/jobs/resume", "POST", "POST"},
    [R_JOBS_DELETE] = {"/jobs/delete", "POST", "POST"},
    [R_JOBS_TRIGGER] = {"/jobs/trigger", "POST", "POST"},
    [R_JOBS_PREVIEW] = {"/jobs/preview", "POST", "POST"},
    [R_JOBS_LIST] = {"/jobs", "GET", "GET, POST", "GET /jobs"},
    [R_TASK] = {"/api/task", "GET", "GET"},
    [R_TASKS] = {"/api/tasks", "GET", "GET"},
    [R_STATS] = {"/api/stats", "GET", "GET"},
    [R_RESCHEDULE] = {"/api/task/reschedule", "POST", "POST"},
    [R_WHOAMI] = {"/api/whoami", "GET", "GET"},
    [R_CLUSTER] = {"/api/cluster", "GET", "GET"},
    /* every /console path: the console's files (console.h) */
    [R_CONSOLE] = {"/console/", "GET", "GET, HEAD"},
    [R_DEAD_LETTERS] = {"/api/dead-letters", "GET", "GET"},
    [R_DEAD_REQUEUE] = {"/api/dead-letters/requeue", "POST", "POST"},
    [R_GROUPS] = {"/groups", "POST", "GET, POST"},
    [R_GROUPS_DELETE] = {"/groups/delete", "POST", "POST"},
    [R_LIMITS] = {"/limits", "POST", "GET, POST"},
    [R_LIMITS_DELETE] = {"/limits/delete", "POST", "POST"},
    [R_GROUPS_LIST] = {"/groups", "GET", "GET, POST", "GET /groups"},
    [R_LIMITS_LIST] = {"/limits", "GET", "GET, POST", "GET /limits"},
    [R_OTHER] = {"other", NULL, NULL},
};

static const char *route_label(route_id r)
{
    return routes[r].label ? routes[r].label : routes[r].path;
}

/* Statuses whose counters are made up front; others are registered when
 * first answered. */
static const unsigned common_statuses[] = {200, 400, 401, 403, 404, 405,
                                           409, 413, 415, 422, 500, 503};
#define N_COMMON (sizeof common_statuses / sizeof common_statuses[0])

typedef struct route_metrics {
    mc_counter *by_status[N_COMMON];
    mc_histogram *duration;
} route_metrics;

struct mc_gateway {
    mc_logger log; /* first: kafka.c's log callback reads the handle's opaque as a logger */
    const mc_config *cfg;
    mc_metrics *metrics;
    mc_tokens *tokens;
    mc_kafka_targets *targets; /* --target-topics: what the router would refuse is a 400 here */
    mc_idem *idem;
    mc_uuid7 uuids;
    char *tls_cert, *tls_key; /* PEM text, or NULL */
    rd_kafka_t *producer;
    rd_kafka_topic_t *tasks, *job_commands, *endpoints_topic;
    char tasks_name[256], job_commands_name[256], endpoints_name[256];
    mc_endpoint_table *endpoints; /* GET /groups and /limits */
    /* Time zones of the jobs' schedules, shared by the HTTP threads: the
     * cache is one thread's at a time (the zones it hands out are
     * immutable). */
    mc_zone_cache *zones;
    pthread_mutex_t zones_lock;
    mc_jobs_view *jobs_view;  /* NULL: --gateway-jobs-view false */
    mc_view_asker view;       /* its functions NULL: no view in this process */
    mc_view_forward *forward; /* to the view instance holding a key's partition */
    mc_dead_api *dead;        /* GET /api/dead-letters, POST /api/dead-letters/requeue */
    mc_cluster *cluster;      /* GET /api/cluster */

    pthread_t delivery_thread;
    bool delivery_started;
    atomic_bool stop;      /* mc_gateway_stop() was called */
    atomic_bool stopping;  /* new API requests get 503 */
    atomic_bool fatal;     /* the producer hit a fatal error */
    atomic_bool broker_ok; /* the last probe found the broker and the topic */
    /* Handlers between their last look at stopping and their suspend; the
     * shutdown waits for none to be left before it flushes, so no request
     * is handed to Kafka after the flush (it would stay suspended). */
    atomic_int producing;
    atomic_int asking; /* task questions on their threads (ask_thread) */
    pthread_mutex_t wait_lock;
    pthread_cond_t wait_cond; /* mc_gateway_stop() wakes the probe loop */
    char broker_why[256];     /* under wait_lock */

    unsigned max_connections; /* --gateway-max-connections, within the open-files limit */
    route_metrics rm[N_ROUTES];
    mc_counter *produce_errors;
    mc_gauge *in_flight;
};

typedef enum req_phase {
    PH_HEADERS,
    PH_BODY,
    PH_PRODUCING,
    PH_ACKED,
    PH_ASKING,
    PH_ASKED
} req_phase;

typedef struct request {
    mc_gateway *g;
    struct MHD_Connection *conn;
    route_id route;
    req_phase phase;
    int64_t start_ns;
    bool answered;
    mc_grant grant;
    const char *url; /* libmicrohttpd's, during the first call only */
    char *body;
    size_t len, cap;
    bool too_large;
    char idem_key[MAX_IDEMPOTENCY_KEY + 1];
    char *idem_scope; /* route, app and key; set while a reservation is held */
    size_t idem_scope_len;
    /* What to answer after the acknowledgement: the envelope's data (JSON
     * text, malloc'd; NULL: null). */
    char *data;
    mc_buf out;
    pthread_mutex_t lock; /* orders suspend (handler) before resume (delivery) */
    rd_kafka_resp_err_t delivery_err;
    /* GET /api/task, /api/tasks, /api/stats: the question (copied for
     * ask_thread) and its answer. */
    char *q_app, *q_uuid, *q_auth;
    int64_t q_due;           /* POST /api/task/reschedule: the new due time */
    mc_tasks_query *q_tasks; /* its strings point into q_args */
    char *q_query;           /* what q_tasks asks, as a query string */
    char *q_args;
    bool q_forwarded, q_relayed;
    mc_dead_job *q_dead; /* a dead-letter route's checked request */
    int q_status;
    char *q_body;
} request;

/* ---------------------------------------------------------------------------
 * Answers
 * ------------------------------------------------------------------------ */

/* Appends s to f as the inside of a JSON string. */
static void json_escape(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
}

static void count_answer(mc_gateway *g, route_id r, unsigned status, int64_t start_ns)
{
    mc_counter *c = NULL;
    for (size_t i = 0; i < N_COMMON; i++)
        if (common_statuses[i] == status)
            c = g->rm[r].by_status[i];
    if (!c) {
        char labels[128];
        snprintf(labels, sizeof labels, "route=\"%s\",status=\"%u\"", route_label(r), status);
        c = mc_metrics_counter(g->metrics, "mooncake_gateway_requests_total",
                               "Gateway requests answered, by route and HTTP status", labels);
    }
    mc_counter_add(c, 1);
    mc_histogram_observe(g->rm[r].duration, (double)(mc_mono_ns() - start_ns) / 1e9);
}

/* Queues a JSON answer (body is copied). The request is counted once. */
static enum MHD_Result answer_json(request *rq, unsigned status, const char *body, bool replayed)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    mc_console_add_security_headers(r);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, routes[rq->route].allow);
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"mooncake\"");
    if (replayed)
        MHD_add_response_header(r, "Idempotent-Replayed", "true");
    enum MHD_Result ret = MHD_queue_response(rq->conn, status, r);
    MHD_destroy_response(r);
    if (!rq->answered) {
        rq->answered = true;
        count_answer(rq->g, rq->route, status, rq->start_ns);
    }
    return ret;
}

/* The error envelope: code is the HTTP status, msg the reason. */
__attribute__((format(printf, 3, 4))) static enum MHD_Result
answer_error(request *rq, unsigned status, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char *body = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&body, &len);
    if (!f)
        return MHD_NO;
    fprintf(f, "{\"code\":%u,\"msg\":\"", status);
    json_escape(f, msg);
    fputs("\",\"data\":null}", f);
    if (fclose(f) != 0) {
        free(body);
        return MHD_NO;
    }
    enum MHD_Result ret = answer_json(rq, status, body, false);
    free(body);
    return ret;
}

/* The success envelope around data (JSON text; NULL: null). malloc'd. */
static char *ok_body(const char *data)
{
    char *body = NULL;
    if (asprintf(&body, "{\"code\":0,\"msg\":\"ok\",\"data\":%s}", data ? data : "null") < 0)
        return NULL;
    return body;
}

/* obj (released here) as compact JSON text, malloc'd; NULL on ENOMEM. */
static char *json_text(json_t *obj)
{
    char *s = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    return s;
}

/* Answers 200 with data (JSON text; NULL: null), remembering it for the
 * request's Idempotency-Key if it holds one. */
static enum MHD_Result answer_ok(request *rq, const char *data)
{
    char *body = ok_body(data);
    if (!body)
        return answer_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    if (rq->idem_scope) {
        mc_idem_finish(rq->g->idem, rq->idem_scope, rq->idem_scope_len, MHD_HTTP_OK, body);
        free(rq->idem_scope);
        rq->idem_scope = NULL;
    }
    enum MHD_Result ret = answer_json(rq, MHD_HTTP_OK, body, false);
    free(body);
    return ret;
}

/* ---------------------------------------------------------------------------
 * Requests
 * ------------------------------------------------------------------------ */

static bool is_job_route(route_id r)
{
    return r >= R_JOBS && r <= R_JOBS_PREVIEW;
}

static bool is_endpoint_route(route_id r)
{
    return r >= R_GROUPS && r <= R_LIMITS_DELETE;
}

/* What the record is, in messages. */
static const char *record_noun(route_id r)
{
    return is_job_route(r) ? "job command" : is_endpoint_route(r) ? "endpoint record" : "task";
}

/* The route of this path and method; a path's first route when no method
 * matches (it answers 405). */
static route_id find_route(const char *url, const char *method)
{
    if (strncmp(url, "/console", strlen("/console")) == 0)
        return R_CONSOLE;
    route_id by_path = R_OTHER;
    for (int r = 0; r < R_OTHER; r++)
        if (strcmp(url, routes[r].path) == 0) {
            if (strcmp(method, routes[r].method) == 0)
                return (route_id)r;
            if (by_path == R_OTHER)
                by_path = (route_id)r;
        }
    return by_path;
}

static void request_free(request *rq)
{
    if (rq->idem_scope) /* never answered: a retry must run again */
        mc_idem_finish(rq->g->idem, rq->idem_scope, rq->idem_scope_len, 0, NULL);
    free(rq->idem_scope);
    free(rq->body);
    free(rq->data);
    free(rq->q_app);
    free(rq->q_uuid);
    free(rq->q_auth);
    /* A reschedule's is the task's own bytes, secrets and all. */
    if (rq->q_body && rq->route == R_RESCHEDULE)
        explicit_bzero(rq->q_body, strlen(rq->q_body));
    free(rq->q_body);
    free(rq->q_tasks);
    free(rq->q_query);
    free(rq->q_args);
    mc_dead_job_free(rq->q_dead);
    mc_buf_free(&rq->out);
    pthread_mutex_destroy(&rq->lock);
    free(rq);
}

/* "application/json", optionally with parameters; an absent Content-Type is
 * taken as JSON, as the Java system did. */
static bool content_type_ok(const char *ct)
{
    if (!ct)
        return true;
    size_t n = strlen("application/json");
    return strncasecmp(ct, "application/json", n) == 0 &&
           (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

/* A state-changing request a browser sent from a page of another origin
 * (CSRF). The API's token is never a cookie, so such a page cannot make a
 * browser send it; this refuses the request anyway, on the Origin header
 * every browser sends with a cross-origin POST (and Sec-Fetch-Site, which
 * those that send it set to cross-site). Clients that are not browsers
 * send neither. */
static bool cross_site(request *rq)
{
    struct MHD_Connection *c = rq->conn;
    const char *site = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-Fetch-Site");
    if (site && strcasecmp(site, "cross-site") == 0)
        return true;
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    if (!origin)
        return false;
    /* Host against the Origin's host and port, not its scheme: behind a
     * proxy that ends TLS the page is https and the gateway is not. */
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    const char *authority = strstr(origin, "://");
    return !host || !authority || strcasecmp(authority + 3, host) != 0;
}

/* Serves a console file (GET or HEAD; 404 for a name that is not one). */
static enum MHD_Result answer_console(request *rq)
{
    const mc_console_asset *a = mc_console_find(rq->url);
    if (!a)
        return answer_error(rq, MHD_HTTP_NOT_FOUND, "no such console file");
    const char *etag =
        MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
    unsigned status = 0;
    struct MHD_Response *r = mc_console_response(a, etag, &status);
    if (!r)
        return MHD_NO;
    enum MHD_Result ret = MHD_queue_response(rq->conn, status, r);
    MHD_destroy_response(r);
    rq->answered = true;
    count_answer(rq->g, rq->route, status, rq->start_ns);
    return ret;
}

/* What the headers alone decide; returns true when it queued an answer
 * (*ret set). */
static bool check_headers(request *rq, const char *method, enum MHD_Result *ret)
{
    mc_gateway *g = rq->g;
    struct MHD_Connection *c = rq->conn;
    const route *rt = &routes[rq->route];
    if (rq->route == R_OTHER) {
        *ret = answer_error(rq, MHD_HTTP_NOT_FOUND, "no such route (see gateway/openapi.yaml)");
        return true;
    }
    bool head_ok = (rq->route == R_UUID || rq->route == R_CONSOLE) && strcmp(method, "HEAD") == 0;
    if (strcmp(method, rt->method) != 0 && !head_ok) {
        *ret = answer_error(rq, MHD_HTTP_METHOD_NOT_ALLOWED, "%s takes %s, not %.20s", rt->path,
                            rt->allow, method);
        return true;
    }
    if (rq->route == R_UUID)
        return false;
    if (rq->route == R_CONSOLE) {
        /* The page itself holds no data: it asks the API with the token
         * the user types, so it is served to anyone. */
        *ret = answer_console(rq);
        return true;
    }
    if (atomic_load(&g->stopping)) {
        *ret = answer_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE, "the gateway is shutting down");
        return true;
    }
    bool has_body = strcmp(rt->method, "POST") == 0;
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (has_body && !content_type_ok(ct)) {
        *ret = answer_error(rq, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
                            "Content-Type must be application/json, not '%.100s'", ct);
        return true;
    }
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (has_body && cl &&
        strtoull(cl, NULL, 10) > (unsigned long long)g->cfg->gateway_max_body_bytes) {
        *ret =
            answer_error(rq, MHD_HTTP_CONTENT_TOO_LARGE, "body is %.20s bytes, more than %" PRId64,
                         cl, g->cfg->gateway_max_body_bytes);
        return true;
    }
    if (has_body && cross_site(rq)) {
        *ret = answer_error(rq, MHD_HTTP_FORBIDDEN,
                            "a request from another site's page is refused (its Origin is not "
                            "this gateway's)");
        return true;
    }
    if (!g->cfg->gateway_no_auth) {
        const char *auth =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
        if (!auth || strncasecmp(auth, "Bearer ", 7) != 0) {
            *ret = answer_error(rq, MHD_HTTP_UNAUTHORIZED,
                                "Authorization: Bearer <token> is required");
            return true;
        }
        const char *tok = auth + 7;
        while (*tok == ' ')
            tok++;
        size_t len = strlen(tok);
        while (len && tok[len - 1] == ' ')
            len--;
        rq->grant = mc_tokens_lookup(g->tokens, tok, len);
        if (!rq->grant.known) {
            *ret = answer_error(rq, MHD_HTTP_UNAUTHORIZED, "the bearer token is not valid");
            return true;
        }
        if (rq->route == R_INNER_SUBMIT && !rq->grant.inner) {
            *ret = answer_error(rq, MHD_HTTP_FORBIDDEN,
                                "/inner/submit needs an inner token (MOONCAKE_INNER_TOKENS)");
            return true;
        }
        if (rq->route != R_INNER_SUBMIT && rq->route != R_TASK && rq->route != R_TASKS &&
            rq->route != R_STATS && rq->route != R_WHOAMI && rq->grant.inner) {
            *ret = answer_error(rq, MHD_HTTP_FORBIDDEN,
                                "inner tokens are for /inner/submit; use the app's token here");
            return true;
        }
    }
    const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Idempotency-Key");
    if (key && has_body) { /* a GET changes nothing: the key means nothing there */
        size_t n = strlen(key);
        bool visible = n >= 1 && n <= MAX_IDEMPOTENCY_KEY;
        for (size_t i = 0; visible && i < n; i++)
            visible = key[i] > ' ' && key[i] < 0x7f;
        if (!visible) {
            *ret = answer_error(rq, MHD_HTTP_BAD_REQUEST,
                                "Idempotency-Key must be 1 to %d visible ASCII characters",
                                MAX_IDEMPOTENCY_KEY);
            return true;
        }
        memcpy(rq->idem_key, key, n + 1);
    }
    return false;
}

/* Keeps the body, counting past the limit without keeping it (a chunked
 * body has no Content-Length to refuse it by). */
static int take_body(request *rq, const char *data, size_t n)
{
    size_t max = (size_t)rq->g->cfg->gateway_max_body_bytes;
    if (rq->too_large || rq->len + n > max) {
        rq->too_large = true;
        rq->len += n;
        /* Not worth reading on for a 413: drop the connection instead. */
        return rq->len > 16 * max ? -1 : 0;
    }
    if (rq->len + n + 1 > rq->cap) {
        size_t cap = rq->cap ? rq->cap : 1024;
        while (cap < rq->len + n + 1)
            cap *= 2;
        char *b = realloc(rq->body, cap);
        if (!b)
            return -1;
        rq->body = b;
        rq->cap = cap;
    }
    memcpy(rq->body + rq->len, data, n);
    rq->len += n;
    rq->body[rq->len] = '\0';
    return 0;
}

static void make_uuid(void *arg, char out[MC_JSON_MAX_ID_LEN + 1])
{
    mc_uuid7_next(&((mc_gateway *)arg)->uuids, mc_now_ms(), out);
}

/* Decides what an Idempotency-Key lookup means; returns true when it queued
 * an answer. On MC_IDEM_NEW the request holds the reservation. */
static bool check_idempotency(request *rq, const char *app_id, enum MHD_Result *ret)
{
    if (!rq->idem_key[0])
        return false;
    mc_gateway *g = rq->g;
    uint8_t sha[MC_SHA256_LEN];
    mc_sha256(rq->body ? rq->body : "", rq->len, sha);
    char *scope = NULL;
    int n = asprintf(&scope, "%s\n%s\n%s", routes[rq->route].path, app_id, rq->idem_key);
    if (n < 0) {
        *ret = answer_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return true;
    }
    int status = 0;
    char *stored = NULL;
    switch (mc_idem_begin(g->idem, scope, (size_t)n, sha, mc_now_ms(), &status, &stored)) {
    case MC_IDEM_NEW:
        rq->idem_scope = scope;
        rq->idem_scope_len = (size_t)n;
        return false;
    case MC_IDEM_REPLAY:
        *ret = answer_json(rq, (unsigned)status, stored, true);
        free(stored);
        break;
    case MC_IDEM_IN_FLIGHT:
        *ret = answer_error(rq, MHD_HTTP_CONFLICT,
                            "a request with this Idempotency-Key is still being answered");
        break;
    case MC_IDEM_MISMATCH:
        *ret = answer_error(rq, MHD_HTTP_UNPROCESSABLE_CONTENT,
                            "this Idempotency-Key was used with another body");
        break;
    case MC_IDEM_NOMEM:
        *ret = answer_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        break;
    }
    free(scope);
    return true;
}

/* Hands the encoded record (rq->out) to librdkafka for topic, keyed
 * app_id/id (id: a task's, a job's or a chain's ordering key), and suspends
 * the connection until its delivery report. */
static enum MHD_Result produce_key(request *rq, rd_kafka_topic_t *topic, const char *key,
                                   size_t klen);

static enum MHD_Result produce(request *rq, rd_kafka_topic_t *topic, const char *app_id,
                               const char *id)
{
    char key[MC_JSON_MAX_ID_LEN + 1 + MC_MAX_ORDERING_KEY_LEN + 1];
    size_t klen = mc_task_key(app_id, id, key, sizeof key);
    return produce_key(rq, topic, key, klen);
}

/* produce's work, for any key (the endpoints topic's are not app_id/id); rq->out empty
 * (data NULL) sends a tombstone. */
static enum MHD_Result produce_key(request *rq, rd_kafka_topic_t *topic, const char *key,
                                   size_t klen)
{
    mc_gateway *g = rq->g;
    atomic_fetch_add(&g->producing, 1);
    if (atomic_load(&g->stopping)) {
        atomic_fetch_sub(&g->producing, 1);
        return answer_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE, "the gateway is shutting down");
    }
    pthread_mutex_lock(&rq->lock);
    rq->phase = PH_PRODUCING;
    /* No copy of the value (flags 0): the request lives until its report. */
    rd_kafka_resp_err_t err =
        rd_kafka_producev(g->producer, RD_KAFKA_V_RKT(topic), RD_KAFKA_V_KEY(key, klen),
                          RD_KAFKA_V_VALUE(rq->out.data, rq->out.len), RD_KAFKA_V_MSGFLAGS(0),
                          RD_KAFKA_V_OPAQUE(rq), RD_KAFKA_V_END);
    if (err) {
        rq->phase = PH_BODY;
        pthread_mutex_unlock(&rq->lock);
        atomic_fetch_sub(&g->producing, 1);
        mc_counter_add(g->produce_errors, 1);
        return answer_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE, "cannot hand the %s to Kafka: %s",
                            record_noun(rq->route), rd_kafka_err2str(err));
    }
    MHD_suspend_connection(rq->conn);
    pthread_mutex_unlock(&rq->lock);
    if (g->log.level <= MC_LOG_DEBUG)
        mc_log(&g->log, MC_LOG_DEBUG, "accepted", "route", routes[rq->route].path, "key", key,
               (const char *)NULL);
    atomic_fetch_sub(&g->producing, 1);
    return MHD_YES;
}

/* What a POST becomes: the record in rq->out, for topic, keyed app_id/id
 * (id: the task's, the job's, or the ordering key of a task's chain), and
 * the answer's data in rq->data. */
typedef struct prepared {
    rd_kafka_topic_t *topic;
    const char *app_id, *id;
} prepared;

/* /submit, /inner/submit, /api/task/done: a Command for tasks, or with an
 * orderingKey its serial chain's AddLink or CancelLink for job-commands,
 * keyed by the chain. Returns 0, or the HTTP status to answer with why. */
static unsigned prepare_task(request *rq, mc_arena *arena, int64_t now, prepared *p, char *why,
                             size_t whylen)
{
    mc_gateway *g = rq->g;
    mc_command cmd = {0};
    const char *ordering_key;
    if (rq->route == R_DONE) {
        cmd.kind = MC_CMD_CANCEL;
        if (mc_cancel_from_json(rq->body, rq->len, now, arena, &cmd.cancel, &ordering_key, why,
                                whylen))
            return MHD_HTTP_BAD_REQUEST;
        p->app_id = cmd.cancel.app_id;
        p->id = cmd.cancel.task_id;
    } else {
        const mc_config *cfg = g->cfg;
        mc_task_json_options o = {
            .now_ms = now,
            .max_due_ms = cfg->max_due_ms,
            .retry_defaults = {cfg->retry_max_attempts, cfg->retry_initial_backoff_ms,
                               cfg->retry_multiplier, cfg->retry_max_backoff_ms},
            .make_id = make_uuid,
            .make_id_arg = g,
        };
        cmd.kind = MC_CMD_SUBMIT;
        if (mc_task_from_json(rq->body, rq->len, &o, arena, &cmd.submit, &ordering_key, why,
                              whylen) ||
            !mc_task_target_ok(g->targets, &cmd.submit, &mc_task_json_names, why, whylen))
            return MHD_HTTP_BAD_REQUEST;
        p->app_id = cmd.submit.app_id;
        p->id = cmd.submit.task_id;
        if (!(rq->data =
                  json_text(json_pack("{s:s, s:s*}", "uuid", p->id, "orderingKey", ordering_key))))
            goto nomem;
    }
    p->topic = ordering_key ? g->job_commands : g->tasks;
    if (ordering_key)
        p->id = ordering_key;
    if (mc_encode_task_command(&cmd, ordering_key, &rq->out) != 0)
        goto nomem;
    return 0;
nomem:
    snprintf(why, whylen, "out of memory");
    return MHD_HTTP_INTERNAL_SERVER_ERROR;
}

static mc_job_json_options job_options(mc_gateway *g, int64_t now)
{
    const mc_config *cfg = g->cfg;
    return (mc_job_json_options){
        .now_ms = now,
        .retry_defaults = {cfg->retry_max_attempts, cfg->retry_initial_backoff_ms,
                           cfg->retry_multiplier, cfg->retry_max_backoff_ms},
        .zones = g->zones,
        .max_due_ms = cfg->max_due_ms,
    };
}

/* An array of epoch ms. */
static json_t *instants_json(const int64_t *at, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(at[i]));
    return a;
}

/* /jobs and the job actions: a JobCommand for job-commands. Returns 0, or
 * the HTTP status to answer with why. */
static unsigned prepare_job(request *rq, mc_arena *arena, int64_t now, prepared *p, char *why,
                            size_t whylen)
{
    mc_gateway *g = rq->g;
    mc_job_command cmd = {0};
    json_t *data = NULL;
    if (rq->route == R_JOBS) {
        cmd.kind = MC_JOBCMD_PUT;
        mc_job_json_options o = job_options(g, now);
        int64_t at[MC_JOB_NEXT_FIRES];
        int n = 0;
        pthread_mutex_lock(&g->zones_lock);
        int bad = mc_job_from_json(rq->body, rq->len, &o, arena, &cmd.put, why, whylen);
        if (!bad)
            n = mc_job_next_fires(&cmd.put, now, g->zones, at, MC_JOB_NEXT_FIRES, why, whylen);
        pthread_mutex_unlock(&g->zones_lock);
        /* The occurrences' targets: what the router would refuse is a 400. */
        if (bad || n < 0 || !mc_job_target_ok(g->targets, &cmd.put, why, whylen))
            return MHD_HTTP_BAD_REQUEST;
        p->app_id = cmd.put.app_id;
        p->id = cmd.put.job_id;
        data = json_pack("{s:s, s:s, s:o}", "appId", p->app_id, "jobId", p->id, "nextFireTimes",
                         instants_json(at, n));
    } else {
        static const mc_job_action_kind actions[N_ROUTES] = {
            [R_JOBS_PAUSE] = MC_JOB_PAUSE,
            [R_JOBS_RESUME] = MC_JOB_RESUME,
            [R_JOBS_DELETE] = MC_JOB_DELETE,
            [R_JOBS_TRIGGER] = MC_JOB_TRIGGER,
        };
        cmd.kind = MC_JOBCMD_ACTION;
        if (mc_job_action_from_json(rq->body, rq->len, actions[rq->route], now, arena, &cmd.action,
                                    why, whylen))
            return MHD_HTTP_BAD_REQUEST;
        p->app_id = cmd.action.app_id;
        p->id = cmd.action.job_id;
        if (rq->route == R_JOBS_TRIGGER) {
            /* The occurrence a trigger runs is <job_id>@<requested_at>. */
            char occ[MC_JSON_MAX_ID_LEN + 32];
            mc_occurrence_id(p->id, now, occ, sizeof occ);
            data = json_pack("{s:s}", "taskId", occ);
        }
    }
    if ((data && !(rq->data = json_text(data))) || mc_encode_job_command(&cmd, &rq->out) != 0) {
        snprintf(why, whylen, "out of memory");
        return MHD_HTTP_INTERNAL_SERVER_ERROR;
    }
    p->topic = g->job_commands;
    return 0;
}

/* /jobs/preview: the next fire times of a schedule, from here, no Kafka. */
static enum MHD_Result answer_preview(request *rq)
{
    mc_gateway *g = rq->g;
    mc_arena *arena = mc_arena_new();
    if (!arena)
        return answer_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    int64_t now = mc_now_ms(), at[MC_JOB_PREVIEW_MAX];
    mc_job_json_options o = job_options(g, now);
    mc_job job;
    int count = 0, n = -1;
    char why[512];
    pthread_mutex_lock(&g->zones_lock);
    if (mc_job_preview_from_json(rq->body, rq->len, &o, arena, &job, &count, why, sizeof why) == 0)
        n = mc_job_next_fires(&job, now, g->zones, at, count, why, sizeof why);
    pthread_mutex_unlock(&g->zones_lock);
    mc_arena_free(arena);
    if (n < 0)
        return answer_error(rq, MHD_HTTP_BAD_REQUEST, "%s", why);
    char *data = json_text(json_pack("{s:o}", "nextFireTimes", instants_json(at, n)));
    enum MHD_Result ret = data ? answer_ok(rq, data)
                               : answer_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    free(data);
    return ret;
}

/* GET /jobs's query string, as given. */
typedef struct list_args {
    mc_jobs_query q;
    const char *limit;
    const char *unknown; /* the first parameter GET /jobs does not take */
    bool empty;          /* a parameter without a value */
} list_args;

static enum MHD_Result take_list_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    (void)kind;
    list_args *a = cls;
    const char **slot = strcmp(key, "appId") == 0    ? &a->q.app_id
                        : strcmp(key, "jobId") == 0  ? &a->q.job_id
                        : strcmp(key, "status") == 0 ? &a->q.status
                        : strcmp(key, "after") == 0  ? &a->q.after
                        : strcmp(key, "limit") == 0  ? &a->limit
                                                     : NULL;
    if (!slot) {
        if (!a->unknown)
            a->unknown = key;
        return MHD_YES;
    }
    *slot = value ? value : "";
    a->empty = a->empty || !value || !value[0];
    return MHD_YES;
}

/* Checks GET /jobs's parameters into a->q; returns true when it queued an
 * answer. */
static bool check_list_args(request *rq, list_args *a, enum MHD_Result *ret)
{
    MHD_get_connection_values(rq->conn, MHD_GET_ARGUMENT_KIND, take_list_arg, a);
    char *end = NULL;
    long limit = MC_JOBS_VIEW_DEFAULT_LIMIT;
    if (a->limit) {
        errno = 0;
        limit = strtol(a->limit, &end, 10);
    }
    const char *st = a->q.status;
    if (a->unknown)
        *ret = answer_error(rq, MHD_HTTP_BAD_REQUEST,
                            "unknown parameter '%.100s': GET /jobs takes appId, jobId, status, "
                            "after, limit",
                            a->unknown);
    else if (!a->q.app_id || !a->q.app_id[0])
        *ret = answer_error(rq, MHD_HTTP_BAD_REQUEST, "appId is required: GET /jobs?appId=...");
    else if (strchr(a->q.app_id, '/'))
        *ret = answer_error(rq, MHD_HTTP_BAD_REQUEST, "appId must not contain '/'");
    else if (a->empty)
        *ret = answer_error(rq, MHD_HTTP_BAD_REQUEST, "a parameter of GET /jobs has no value");
    else if (a->limit && (*end || errno || limit < 1 || limit > MC_JOBS_VIEW_MAX_LIMIT))
        *ret = answer_error(rq, MHD_HTTP_BAD_REQUEST, "limit must be 1 to %d, not '%.40s'",
                            MC_JOBS_VIEW_MAX_LIMIT, a->limit);
    else if (st && strcmp(st, "ACTIVE") != 0 && strcmp(st, "PAUSED") != 0 &&
             strcmp(st, "ENDED") != 0)
        *ret = answer_error(rq, MHD_HTTP_BAD_REQUEST,
                            "status must be ACTIVE, PAUSED or ENDED, not '%.40s'", st);
    else {
        a->q.limit = (int)limit;
        return false;
    }
    return true;
}

/* GET /jobs: an app's jobs, or one, from the gateway's view of the jobs
 * table (jobs_view.h): what the jobs role has committed, not what was just
 * sent. */
static enum MHD_Result answer_list(request *rq)
{
    mc_gateway *g = rq->g;
    list_args a = {0};
    enum MHD_Result ret;
    if (check_list_args(rq, &a, &ret))
        return ret;
    if (!g->cfg->gateway_no_auth && !mc_grant_allows(g->tokens, &rq->grant, a.q.app_id))
        return answer_error(rq, MHD_HTTP_FORBIDDEN, "the token is not one of appId '%.255s'",
                            a.q.app_id);
    if (!g->jobs_view)
        return answer_error(rq, MHD_HTTP_NOT_IMPLEMENTED,
                            "this gateway keeps no view of the jobs (--gateway-jobs-view=false)");
    char *data = NULL;
    switch (mc_jobs_view_list(g->jobs_view, &a.q, mc_now_ms(), &data)) {
    case MC_JOBS_VIEW_OK:
        ret = answer_ok(rq, data);
        break;
    case MC_JOBS_VIEW_LOADING:
        ret = answer_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE,
                           "the gateway is still reading the jobs table (%zu jobs so far)",
                           mc_jobs_view_count(g->jobs_view));
        break;
    case MC_JOBS_VIEW_NOT_FOUND:
        ret = answer_error(rq, MHD_HTTP_NOT_FOUND, "no job '%.255s' in appId '%.255s'%s%.20s",
                           a.q.job_id, a.q.app_id, a.q.status ? " with status " : "",
                           a.q.status ? a.q.status : "");
        break;
    case MC_JOBS_VIEW_FAILED:
        ret = answer_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE,
                           "the gateway's view of the jobs failed (see its log)");
        break;
    default:
        ret = answer_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    }
    free(data);
    return ret;
}

/* A request's query parameters, in the order given. */
#define MAX_QUERY_ARGS 16
typedef struct query_args {
    mc_kv kv[MAX_QUERY_ARGS];
    size_t n;
    bool too_many;
} query_args;

static enum MHD_Result take_query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    (void)kind;
    query_args *a = cls;
    if (a->n == MAX_QUERY_ARGS) {
        a->too_many = true;
        return MHD_NO;
    }
    a->kv[a->n++] = (mc_kv){key, value};
    return MHD_YES;
}

static enum MHD_Result start_asking(request *rq);

/* The partitions a view answer says it answered for, marked in covered
 * (n of them); false when it names one outside or twice. */
static bool mark_covered(const json_t *answer, bool *covered, int32_t n)
{
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(answer, "partitions"), i, p)
    {
        json_int_t id = json_integer_value(p);
        if (!json_is_integer(p) || id < 0 || id >= n || covered[id])
            return false;
        covered[id] = true;
    }
    return true;
}

/* GET /api/tasks or /api/stats: the view of this process answers for the
 * partitions it holds, the instances holding the others for theirs (all at
 * once), and the answers are merged into one. A question forwarded here
 * names its partitions and gets this view's answer for exactly those. The
 * status, and in *body the data (JSON) or a sentence. */
static int gather(request *rq, char **body)
{
    mc_gateway *g = rq->g;
    const mc_tasks_query *q = rq->q_tasks;
    bool stats = rq->route == R_STATS;
    char why[300];
    *body = NULL;
    int32_t n = q->has_partitions ? (int32_t)q->n_partitions
                                  : mc_view_forward_count(g->forward, why, sizeof why);
    if (n <= 0) {
        *body = strdup(why);
        return 503;
    }
    json_t **answers = calloc((size_t)n + 1, sizeof *answers);
    bool *covered = calloc((size_t)n, sizeof *covered);
    int32_t *missing = calloc((size_t)n, sizeof *missing);
    size_t n_answers = 0, n_missing = 0;
    int status = 200;
    if (!answers || !covered || !missing) {
        status = 500;
        *body = strdup("out of memory");
        goto out;
    }
    char *local = NULL;
    int local_status = 503;
    if (g->view.tasks)
        local_status = g->view.tasks(g->view.cls, &q->filter, stats, q->partitions, q->n_partitions,
                                     TASK_QUESTION_TIMEOUT_MS, &local);
    json_t *mine = local_status == 200 ? json_loads(local, 0, NULL) : NULL;
    if (q->has_partitions) {
        /* Forwarded: all of them here, or the asker looks again. */
        size_t held = json_array_size(json_object_get(mine, "partitions"));
        json_decref(mine);
        if (mine && held == q->n_partitions) {
            *body = local;
        } else {
            free(local);
            status = 503;
            *body = strdup("the view's partitions are moving; ask again");
        }
        goto out;
    }
    free(local);
    if (mine) {
        if (!mark_covered(mine, covered, n)) {
            /* The view counts partitions differently (a growth under way). */
            mc_view_forward_forget_count(g->forward);
            json_decref(mine);
            status = 503;
            *body = strdup("the view's partition count is changing; ask again");
            goto out;
        }
        answers[n_answers++] = mine;
    }
    for (int32_t p = 0; p < n; p++)
        if (!covered[p])
            missing[n_missing++] = p;
    status = mc_view_forward_gather(g->forward, routes[rq->route].path, rq->q_query, missing,
                                    n_missing, rq->q_auth, answers, &n_answers, body);
    if (status != 200)
        goto out;
    for (size_t i = 0; i < n_answers; i++)
        if (json_integer_value(json_object_get(answers[i], "partitionCount")) > n) {
            /* A growth: the partitions past the count known here were not
             * asked about. */
            mc_view_forward_forget_count(g->forward);
            status = 503;
            *body = strdup("the partition count grew; ask again");
            goto out;
        }
    json_t *merged = stats ? mc_view_stats_merge(answers, n_answers, q->filter.app_id)
                           : mc_view_list_merge(answers, n_answers, q->filter.limit);
    *body = merged ? json_dumps(merged, JSON_COMPACT) : NULL;
    json_decref(merged);
    if (!*body) {
        status = 500;
        *body = strdup("out of memory");
    }
out:
    for (size_t i = 0; answers && i < n_answers; i++)
        json_decref(answers[i]);
    free(answers);
    free(covered);
    free(missing);
    return status;
}

/* The view of this process does not hold rq's key: asks the instance that
 * does (once: a forwarded request goes no further), GET /api/task or, for a
 * reschedule, the same POST. Frees *body first; the status and *body as
 * the forward gives them. */
static int ask_elsewhere(request *rq, char **body, bool *relayed);

/* GET /api/task of the app's task uuid, from the view of this process or the instance
 * holding its partition: the status, and in *data the task's JSON (a forward's answer
 * unwrapped), the caller's to free; NULL with the reason as text in *data otherwise. */
static int ask_task(request *rq, const char *uuid, json_t **data, char **why)
{
    mc_gateway *g = rq->g;
    char *body = NULL, *own_uuid = rq->q_uuid;
    bool relayed = false;
    int status = 421;
    *data = NULL;
    *why = NULL;
    if (g->view.task)
        status = g->view.task(g->view.cls, rq->q_app, uuid, TASK_QUESTION_TIMEOUT_MS, &body);
    if (status == 421) {
        rq->q_uuid = (char *)uuid; /* ask_elsewhere asks about rq's key */
        status = ask_elsewhere(rq, &body, &relayed);
        rq->q_uuid = own_uuid;
    }
    json_t *root = status == 200 && body ? json_loads(body, 0, NULL) : NULL;
    json_t *inner = relayed ? json_object_get(root, "data") : root;
    if (inner) {
        *data = json_incref(inner);
        free(body);
    } else {
        *why = body;
    }
    json_decref(root);
    return status;
}

/* Whether the task (its answer's JSON) is a SHARDING_BROADCAST: its own strategy says so,
 * or it names none and its group's does, as this gateway's endpoint table holds it. A
 * shard (pinned to its member) is not one. */
static bool is_broadcast(mc_gateway *g, const char *app, json_t *data)
{
    json_t *cb = json_object_get(data, "callback");
    const char *group = json_string_value(json_object_get(cb, "group"));
    const char *strategy = json_string_value(json_object_get(cb, "strategy"));
    if (!group || json_object_get(json_object_get(data, "metadata"), MC_MEMBER_METADATA))
        return false;
    mc_route_strategy s;
    if (strategy)
        return mc_route_strategy_parse(strategy, &s) && s == MC_ROUTE_BROADCAST;
    mc_endpoints *e = mc_endpoint_table_snapshot(g->endpoints);
    const mc_group *grp = e ? mc_endpoints_group(e, app, group) : NULL;
    bool yes = grp && grp->strategy == MC_ROUTE_BROADCAST;
    mc_endpoints_unref(e);
    return yes;
}

/* One shard as a broadcast's answer lists it: its id, state, attempt and member, and its
 * last attempt without the endpoint's answer (GET /api/task of the shard has it all). */
static json_t *shard_summary(const char *uuid, json_t *data)
{
    json_t *s = json_pack("{s:s}", "uuid", uuid);
    json_t *member = json_object_get(json_object_get(data, "metadata"), MC_MEMBER_METADATA);
    json_object_set(s, "state", json_object_get(data, "state"));
    json_object_set(s, "attempt", json_object_get(data, "attempt"));
    if (member)
        json_object_set(s, "member", member);
    json_t *calls = json_object_get(data, "attempts");
    size_t n = json_array_size(calls);
    if (n) {
        json_t *last = json_deep_copy(json_array_get(calls, n - 1));
        json_object_del(last, "responseBody");
        json_object_del(last, "responseBody_base64");
        json_object_set_new(s, "lastAttempt", last);
    }
    return s;
}

/* How long a broadcast's answer spends asking about its shards, at most: one question
 * waits up to TASK_QUESTION_TIMEOUT_MS, and a group has up to 64 members. */
#define SHARDS_QUESTION_MS 5000

/* A broadcast's answer (*body, rq's task) gains `shards`: each shard's summary, asked
 * like the task, in shard order until the first that does not exist (none before the
 * broadcast's due time). A shard the view cannot answer about, or the first one past
 * SHARDS_QUESTION_MS, ends the list with its reason. On the question's own thread. */
static void add_shards(request *rq, char **body, bool relayed)
{
    json_t *root = json_loads(*body, 0, NULL);
    json_t *data = relayed ? json_object_get(root, "data") : root;
    if (!data || !is_broadcast(rq->g, rq->q_app, data)) {
        json_decref(root);
        return;
    }
    json_t *shards = json_array();
    int64_t until = mc_mono_ms() + SHARDS_QUESTION_MS;
    for (int32_t i = 0; shards && i < MC_GROUP_MEMBERS_MAX; i++) {
        char uuid[MC_MAX_TASK_KEY_LEN];
        if (mc_shard_task_id(rq->q_uuid, i, uuid, sizeof uuid) >= sizeof uuid)
            break;
        if (mc_mono_ms() > until) {
            json_array_append_new(shards,
                                  json_pack("{s:s, s:i, s:s}", "uuid", uuid, "status", 503, "error",
                                            "not asked: asking about the shards before it "
                                            "took too long; ask about it by its uuid"));
            break;
        }
        json_t *shard;
        char *why;
        int status = ask_task(rq, uuid, &shard, &why);
        if (status == 404) {
            free(why);
            break;
        }
        if (!shard) {
            json_array_append_new(shards, json_pack("{s:s, s:i, s:s}", "uuid", uuid, "status",
                                                    status, "error", why ? why : ""));
            free(why);
            break;
        }
        json_array_append_new(shards, shard_summary(uuid, shard));
        json_decref(shard);
    }
    json_object_set_new(data, "shards", shards);
    char *text = json_dumps(root, JSON_COMPACT);
    if (text) {
        free(*body);
        *body = text;
    }
    json_decref(root);
}

static int ask_elsewhere(request *rq, char **body, bool *relayed)
{
    mc_gateway *g = rq->g;
    free(*body);
    *body = NULL;
    char why[300];
    int32_t p;
    if (rq->q_forwarded) {
        *body = strdup("the view's partitions are moving; ask again");
        return 503;
    }
    if ((p = mc_view_forward_partition(g->forward, rq->q_app, rq->q_uuid, why, sizeof why)) < 0) {
        *body = strdup(why);
        return 503;
    }
    if (rq->route == R_RESCHEDULE)
        return mc_view_forward_post(g->forward, p, routes[R_RESCHEDULE].path, rq->body, rq->q_auth,
                                    body, relayed);
    return mc_view_forward_ask(g->forward, p, rq->q_app, rq->q_uuid, rq->q_auth, body, relayed);
}

/* Does what rq waits for (describes the cluster, gathers a list, runs a
 * dead-letter job, asks the view of this process or the instance holding
 * the key's partition) and resumes the connection with the answer in rq.
 * Its own thread, detached. */
static void *ask_thread(void *arg)
{
    request *rq = arg;
    mc_gateway *g = rq->g;
    char *body = NULL;
    int status = 421;
    bool relayed = false;
    if (rq->route == R_CLUSTER) {
        char why[512] = "";
        body = mc_cluster_describe(g->cluster, why, sizeof why);
        status = body ? 200 : 503;
        if (!body)
            body = strdup(why);
        goto answered;
    }
    if (rq->q_tasks) {
        status = gather(rq, &body);
        goto answered;
    }
    if (rq->route == R_RESCHEDULE) {
        status = g->view.stored_task ? g->view.stored_task(g->view.cls, rq->q_app, rq->q_uuid,
                                                           TASK_QUESTION_TIMEOUT_MS, &body)
                                     : 421;
        if (status == 421)
            status = ask_elsewhere(rq, &body, &relayed);
        goto answered;
    }
    if (rq->q_dead) {
        status = mc_dead_api_run(g->dead, rq->q_dead, &body);
        goto answered;
    }
    if (g->view.task)
        status = g->view.task(g->view.cls, rq->q_app, rq->q_uuid, TASK_QUESTION_TIMEOUT_MS, &body);
    if (status == 421)
        status = ask_elsewhere(rq, &body, &relayed);
    /* Only the instance the client asked lists a broadcast's shards (a forward is one
     * key's question). */
    if (status == 200 && body && !rq->q_forwarded)
        add_shards(rq, &body, relayed);
answered:
    pthread_mutex_lock(&rq->lock);
    rq->q_status = status;
    rq->q_body = body;
    rq->q_relayed = relayed;
    rq->phase = PH_ASKED;
    struct MHD_Connection *conn = rq->conn;
    pthread_mutex_unlock(&rq->lock);
    /* rq may be freed from here on. */
    MHD_resume_connection(conn);
    atomic_fetch_sub(&g->asking, 1);
    return NULL;
}

/* GET /api/task: one task's state and story, from the view (view.h) of
 * this process, which has read every record committed before the question. */
static enum MHD_Result answer_task(request *rq)
{
    mc_gateway *g = rq->g;
    query_args args = {0};
    MHD_get_connection_values(rq->conn, MHD_GET_ARGUMENT_KIND, take_query_arg, &args);
    if (args.too_many)
        return answer_error(rq, MHD_HTTP_BAD_REQUEST, "more than %d query parameters",
                            MAX_QUERY_ARGS);
    mc_task_query a;
    char why[256];
    if (!mc_task_query_check(args.kv, args.n, &a, why, sizeof why))
        return answer_error(rq, MHD_HTTP_BAD_REQUEST, "%s", why);
    if (!g->cfg->gateway_no_auth && !rq->grant.inner &&
        !mc_grant_allows(g->tokens, &rq->grant, a.app_id))
        return answer_error(rq, MHD_HTTP_FORBIDDEN, "the token is not one of appId '%.255s'",
                            a.app_id);
    rq->q_app = strdup(a.app_id);
    rq->q_uuid = strdup(a.uuid);
    if (!rq->q_app || !rq->q_uuid)
        return answer_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    return start_asking(rq);
}

/* GET /api/tasks and /api/stats: an app's tasks by due time, or counted,
 * from every view instance (gather). */
static enum MHD_Result answer_tasks(request *rq)
{
    mc_gateway *g = rq->g;
    bool stats = rq->route == R_STATS;
    query_args args = {0};
    MHD_get_connection_values(rq->conn, MHD_GET_ARGUMENT_KIND, take_query_arg, &args);
    if (args.too_many)
        return answer_error(rq, MHD_HTTP_BAD_REQUEST, "more than %d query parameters",
                            MAX_QUERY_ARGS);
    /* The checked query points into the arguments, which live as long as
     * the connection's request: ask_thread gets copies of both. */
    size_t total = 0;
    for (size_t i = 0; i < args.n; i++)
        total += strlen(args.kv[i].key) + (args.kv[i].value ? strlen(args.kv[i].value) : 0) + 2;
    rq->q_args = malloc(total + 1);
    rq->q_tasks = malloc(sizeof *rq->q_tasks);
    if (!rq->q_args || !rq->q_tasks)
        return answer_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    char *at = rq->q_args;
    for (size_t i = 0; i < args.n; i++) {
        size_t kl = strlen(args.kv[i].key);
        memcpy(at, args.kv[i].key, kl + 1);
        args.kv[i].key = at;
        at += kl + 1;
        if (args.kv[i].value) {
            size_t vl = strlen(args.kv[i].value);
            memcpy(at, args.kv[i].value, vl + 1);
            args.kv[i].value = at;
            at += vl + 1;
        }
    }
    char why[256];
    mc_tasks_query *q = rq->q_tasks;
    if (!mc_tasks_query_check(args.kv, args.n, stats, q, why, sizeof why))
        return answer_error(rq, MHD_HTTP_BAD_REQUEST, "%s", why);
    if (q->has_partitions &&
        !MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MC_FORWARDED_HEADER))
        return answer_error(rq, MHD_HTTP_BAD_REQUEST,
                            "partitions is only for mooncake's own instances asking each other");
    if (!g->cfg->gateway_no_auth && !rq->grant.inner &&
        !mc_grant_allows(g->tokens, &rq->grant, q->filter.app_id))
        return answer_error(rq, MHD_HTTP_FORBIDDEN, "the token is not one of appId '%.255s'",
                            q->filter.app_id);
    if (!(rq->q_query = mc_tasks_query_string(q, stats)))
        return answer_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    return start_asking(rq);
}

/* GET /api/dead-letters and POST /api/dead-letters/requeue
 * (dead_letters.h): checked here, run on ask_thread. */
static enum MHD_Result answer_dead_letters(request *rq)
{
    mc_gateway *g = rq->g;
    char why[512];
    unsigned status;
    if (rq->route == R_DEAD_REQUEUE) {
        status = mc_dead_job_requeue(rq->body, rq->len, &rq->q_dead, why, sizeof why);
    } else {
        query_args args = {0};
        MHD_get_connection_values(rq->conn, MHD_GET_ARGUMENT_KIND, take_query_arg, &args);
        if (args.too_many)
            return answer_error(rq, MHD_HTTP_BAD_REQUEST, "more than %d query parameters",
                                MAX_QUERY_ARGS);
        status = mc_dead_job_list(args.kv, args.n, mc_now_ms(), &rq->q_dead, why, sizeof why);
    }
    if (status)
        return answer_error(rq, status, "%s", why);
    const char *app = mc_dead_job_app(rq->q_dead);
    if (!g->cfg->gateway_no_auth && !mc_grant_allows(g->tokens, &rq->grant, app))
        return answer_error(rq, MHD_HTTP_FORBIDDEN, "the token is not one of appId '%.255s'", app);
    return start_asking(rq);
}

/* Hands the question in rq to ask_thread: it may wait seconds (a view
 * catching up, a forward, the broker describing the cluster), so on a thread of its own, with the
 * connection suspended, and the HTTP threads go on serving submits meanwhile. */
static enum MHD_Result start_asking(request *rq)
{
    mc_gateway *g = rq->g;
    const char *auth =
        MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (atomic_fetch_add(&g->asking, 1) >= MAX_QUESTIONS_IN_FLIGHT || atomic_load(&g->stopping)) {
        atomic_fetch_sub(&g->asking, 1);
        return answer_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE,
                            atomic_load(&g->stopping) ? "the gateway is shutting down"
                                                      : "too many task questions in flight");
    }
    rq->q_auth = auth ? strdup(auth) : NULL;
    rq->q_forwarded =
        MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MC_FORWARDED_HEADER) != NULL;
    pthread_attr_t attr;
    pthread_t tid;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_mutex_lock(&rq->lock);
    rq->phase = PH_ASKING;
    int rc = !auth || rq->q_auth ? pthread_create(&tid, &attr, ask_thread, rq) : ENOMEM;
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        rq->phase = PH_HEADERS;
        pthread_mutex_unlock(&rq->lock);
        atomic_fetch_sub(&g->asking, 1);
        return answer_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE, "cannot ask the view now");
    }
    MHD_suspend_connection(rq->conn);
    pthread_mutex_unlock(&rq->lock);
    return MHD_YES;
}

/* POST /api/task/reschedule: {appId, uuid, dueAt?}. The task is submitted
 * again, as it is (callback, retry policy, metadata), due at dueAt (now
 * when left out), from the view that holds its partition: this process's,
 * or the instance's that holds it, which does the whole of it there. */
static enum MHD_Result answer_reschedule(request *rq)
{
    mc_gateway *g = rq->g;
    json_error_t jerr;
    json_t *j = json_loadb(rq->body, rq->len, 0, &jerr);
    const char *app = json_string_value(json_object_get(j, "appId"));
    const char *uuid = json_string_value(json_object_get(j, "uuid"));
    json_t *due = json_object_get(j, "dueAt");
    char why[300];
    enum MHD_Result ret;
    if (!json_is_object(j))
        ret = answer_error(rq, MHD_HTTP_BAD_REQUEST, "body is not a JSON object: %s", jerr.text);
    else if (!app || !uuid)
        ret = answer_error(rq, MHD_HTTP_BAD_REQUEST, "%s: a string is required",
                           app ? "uuid" : "appId");
    else if (due && !json_is_integer(due))
        ret = answer_error(rq, MHD_HTTP_BAD_REQUEST, "dueAt: epoch milliseconds are required");
    else if (!mc_task_ids_ok(app, uuid, &mc_task_json_names, why, sizeof why))
        ret = answer_error(rq, MHD_HTTP_BAD_REQUEST, "%s", why);
    else if (!g->cfg->gateway_no_auth && !mc_grant_allows(g->tokens, &rq->grant, app))
        ret = answer_error(rq, MHD_HTTP_FORBIDDEN, "the token is not one of appId '%.255s'", app);
    else if (!(rq->q_app = strdup(app)) || !(rq->q_uuid = strdup(uuid)))
        ret = answer_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    else if (!check_idempotency(rq, app, &ret)) {
        rq->q_due = due ? (int64_t)json_integer_value(due) : mc_now_ms();
        ret = start_asking(rq);
    }
    json_decref(j);
    return ret;
}

/* The view gave the task's bytes (rq->q_body, base64): the same task as a
 * new Submit, due at rq->q_due, attempt 1. */
static enum MHD_Result submit_again(request *rq)
{
    mc_gateway *g = rq->g;
    size_t len = strlen(rq->q_body), n = 0;
    uint8_t *bytes = malloc(MC_BASE64_DECODED_MAX(len) + 1);
    mc_arena *arena = mc_arena_new();
    mc_stored_task st;
    char why[512];
    enum MHD_Result ret;
    int64_t now = mc_now_ms();
    if (!bytes || !arena) {
        ret = answer_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    } else if (mc_base64_decode(rq->q_body, len, bytes, MC_BASE64_DECODED_MAX(len) + 1, &n) != 0 ||
               mc_decode_stored_task(bytes, n, arena, &st, why, sizeof why) != MC_CODEC_OK) {
        ret = answer_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "the view's copy does not decode");
    } else {
        mc_command cmd = {.kind = MC_CMD_SUBMIT, .submit = st.task};
        cmd.submit.due_at = rq->q_due;
        cmd.submit.attempt = 1;
        mc_task_field_names names = mc_task_json_names;
        names.due_at = "dueAt";
        bool ok = mc_task_ok(&cmd.submit, now, g->cfg->max_due_ms, &names, why, sizeof why);
        /* The allow-list may have changed since the task was taken: the
         * router would now dead-letter it, so refuse it here, naming the
         * topic (not a secret, unlike the callback's URL). */
        bool target_ok =
            !ok || mc_task_target_ok(g->targets, &cmd.submit, &mc_task_json_names, why, sizeof why);
        if (strcmp(st.task.app_id, rq->q_app) != 0 || strcmp(st.task.task_id, rq->q_uuid) != 0)
            ret = answer_error(rq, MHD_HTTP_CONFLICT,
                               "the view's copy of the task is of another key: submit it again "
                               "yourself");
        else if (mc_task_chain(&st.task))
            /* Submitted again outside its chain, it would run beside the
             * chain's next task. */
            ret = answer_error(rq, MHD_HTTP_CONFLICT,
                               "the task belongs to the serial chain '%.256s': add it to its "
                               "chain again (POST /submit with orderingKey)",
                               mc_task_chain(&st.task));
        else if ((!ok && strncmp(why, "dueAt", 5) == 0) || !target_ok)
            ret = answer_error(rq, MHD_HTTP_BAD_REQUEST, "%s", why);
        else if (!ok) /* the stored task's own fields: not echoed (its URL may hold secrets) */
            ret = answer_error(rq, MHD_HTTP_CONFLICT,
                               "the task as kept no longer passes the checks of a submit: submit "
                               "it again yourself");
        else if (mc_encode_command(&cmd, &rq->out) != 0 ||
                 !(rq->data = json_text(
                       json_pack("{s:s,s:I}", "uuid", rq->q_uuid, "dueAt", (json_int_t)rq->q_due))))
            ret = answer_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        else
            ret = produce(rq, g->tasks, rq->q_app, rq->q_uuid);
    }
    if (bytes)
        explicit_bzero(bytes, MC_BASE64_DECODED_MAX(len) + 1);
    free(bytes);
    mc_arena_free(arena);
    return ret;
}

/* The view's answer, once ask_thread has it. */
static enum MHD_Result answer_asked(request *rq)
{
    const char *body = rq->q_body;
    if (rq->q_relayed) {
        /* A reschedule done by the instance holding the task: its answer is
         * this request's, for a retry with the same Idempotency-Key. */
        if (rq->idem_scope && rq->q_status == 200 && body) {
            mc_idem_finish(rq->g->idem, rq->idem_scope, rq->idem_scope_len, 200, body);
            free(rq->idem_scope);
            rq->idem_scope = NULL;
        }
        return answer_json(rq, (unsigned)rq->q_status, body ? body : "", false);
    }
    if (rq->route == R_RESCHEDULE && rq->q_status == 200)
        return submit_again(rq);
    switch (rq->q_status) {
    case 200:
        return answer_ok(rq, body);
    case 400:
    case 401:
    case 403:
    case 404:
    case 409:
        return answer_error(rq, (unsigned)rq->q_status, "%s", body ? body : "");
    case 503:
        return answer_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE, "%s", body ? body : "");
    default:
        return answer_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s",
                            body ? body : "the view failed");
    }
}

void mc_gateway_set_view(mc_gateway *g, const mc_view_asker *view)
{
    g->view = *view;
}

/* Limits bind every app's calls: with tokens, only an admin token sets or reads them. */
static enum MHD_Result refuse_limits(request *rq)
{
    return answer_error(rq, MHD_HTTP_FORBIDDEN,
                        "%s needs an admin token (MOONCAKE_ADMIN_TOKENS): a limit binds every "
                        "app's calls",
                        routes[rq->route].path);
}

/* POST /groups, /groups/delete, /limits, /limits/delete: an Endpoint record (a
 * tombstone for a delete) for the endpoints topic, keyed group/APP/NAME or
 * limit/SCOPE/NAME. */
static enum MHD_Result answer_endpoint_post(request *rq)
{
    mc_gateway *g = rq->g;
    bool limit = rq->route == R_LIMITS || rq->route == R_LIMITS_DELETE;
    if (limit && !g->cfg->gateway_no_auth && !rq->grant.admin)
        return refuse_limits(rq);
    mc_arena *arena = mc_arena_new();
    if (!arena)
        return answer_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    char why[512], key[1024];
    mc_endpoint e;
    int64_t now = mc_now_ms();
    enum MHD_Result ret;
    int rc =
        rq->route == R_GROUPS
            ? mc_endpoint_group_from_json(rq->body, rq->len, now, arena, &e, why, sizeof why)
        : rq->route == R_LIMITS
            ? mc_endpoint_limit_from_json(rq->body, rq->len, now, arena, &e, why, sizeof why)
            : mc_endpoint_delete_from_json(rq->body, rq->len, limit, arena, &e, why, sizeof why);
    if (rc != 0) {
        ret = answer_error(rq, MHD_HTTP_BAD_REQUEST, "%s", why);
        goto out;
    }
    if (!limit && !g->cfg->gateway_no_auth &&
        !mc_grant_allows(g->tokens, &rq->grant, e.group.app_id)) {
        ret = answer_error(rq, MHD_HTTP_FORBIDDEN, "the token is not one of appId '%.255s'",
                           e.group.app_id);
        goto out;
    }
    size_t klen = mc_endpoint_key(&e, key, sizeof key);
    bool put = rq->route == R_GROUPS || rq->route == R_LIMITS;
    if (klen >= sizeof key || (put && mc_encode_endpoint(&e, &rq->out) != 0) ||
        !(rq->data = json_text(json_pack("{s:s, s:b}", "key", key, "deleted", !put)))) {
        ret = answer_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        goto out;
    }
    if (check_idempotency(rq, limit ? "" : e.group.app_id, &ret))
        goto out;
    ret = produce_key(rq, g->endpoints_topic, key, klen);
out:
    mc_arena_free(arena);
    return ret;
}

/* A GET parameter's value, NULL when absent. */
static const char *get_arg(request *rq, const char *name)
{
    return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
}

/* GET /groups?appId=A[&name=N] and GET /limits, from the gateway's endpoint table:
 * what it has read from the endpoints topic, with what each DNS name resolved to. */
static enum MHD_Result answer_endpoint_list(request *rq)
{
    mc_gateway *g = rq->g;
    bool limits = rq->route == R_LIMITS_LIST;
    const char *app_id = get_arg(rq, "appId"), *name = get_arg(rq, "name");
    if (limits && !g->cfg->gateway_no_auth && !rq->grant.admin)
        return refuse_limits(rq);
    if (!limits && (!app_id || !app_id[0]))
        return answer_error(rq, MHD_HTTP_BAD_REQUEST, "appId is required: GET /groups?appId=...");
    if (!limits && !g->cfg->gateway_no_auth && !mc_grant_allows(g->tokens, &rq->grant, app_id))
        return answer_error(rq, MHD_HTTP_FORBIDDEN, "the token is not one of appId '%.255s'",
                            app_id);
    if (!mc_endpoint_table_caught_up(g->endpoints))
        return answer_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE,
                            "the gateway is still reading the endpoints topic");
    json_t *list = limits ? mc_endpoint_table_limits_json(g->endpoints)
                          : mc_endpoint_table_groups_json(g->endpoints, app_id, name);
    if (list && !limits && name && json_array_size(list) == 0) {
        json_decref(list);
        return answer_error(rq, MHD_HTTP_NOT_FOUND, "no group '%.128s' in appId '%.255s'", name,
                            app_id);
    }
    char *data = list ? json_text(json_pack("{s:o}", limits ? "limits" : "groups", list)) : NULL;
    enum MHD_Result ret = data ? answer_ok(rq, data)
                               : answer_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    free(data);
    return ret;
}

static enum MHD_Result handle_post(request *rq)
{
    mc_gateway *g = rq->g;
    if (rq->too_large)
        return answer_error(rq, MHD_HTTP_CONTENT_TOO_LARGE, "body is %zu bytes, more than %" PRId64,
                            rq->len, g->cfg->gateway_max_body_bytes);
    if (rq->len == 0)
        return answer_error(rq, MHD_HTTP_BAD_REQUEST, "body is empty: a JSON object is required");
    if (rq->route == R_JOBS_PREVIEW)
        return answer_preview(rq);
    if (rq->route == R_RESCHEDULE)
        return answer_reschedule(rq);
    if (rq->route == R_DEAD_REQUEUE)
        return answer_dead_letters(rq);
    if (is_endpoint_route(rq->route))
        return answer_endpoint_post(rq);
    mc_arena *arena = mc_arena_new();
    if (!arena)
        return answer_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    char why[512];
    enum MHD_Result ret = MHD_NO;
    prepared p = {0};
    int64_t now = mc_now_ms();
    unsigned status = is_job_route(rq->route) ? prepare_job(rq, arena, now, &p, why, sizeof why)
                                              : prepare_task(rq, arena, now, &p, why, sizeof why);
    if (status) {
        ret = answer_error(rq, status, "%s", why);
        goto out;
    }
    if (!g->cfg->gateway_no_auth && rq->route != R_INNER_SUBMIT &&
        !mc_grant_allows(g->tokens, &rq->grant, p.app_id)) {
        ret = answer_error(rq, MHD_HTTP_FORBIDDEN, "the token is not one of appId '%.255s'",
                           p.app_id);
        goto out;
    }
    if (check_idempotency(rq, p.app_id, &ret))
        goto out;
    ret = produce(rq, p.topic, p.app_id, p.id);
out:
    mc_arena_free(arena);
    return ret;
}

/* The answer after the broker's report. */
static enum MHD_Result answer_acked(request *rq)
{
    mc_gateway *g = rq->g;
    rd_kafka_resp_err_t err = rq->delivery_err;
    if (err) {
        mc_counter_add(g->produce_errors, 1);
        if (err == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT)
            return answer_error(
                rq, MHD_HTTP_SERVICE_UNAVAILABLE,
                "Kafka did not acknowledge the %s within %d ms; it may or may not have been "
                "written: %s",
                record_noun(rq->route), g->cfg->gateway_produce_timeout_ms,
                is_job_route(rq->route)
                    ? "retrying is harmless, except that a trigger may then run twice"
                    : "retry with the same uuid");
        return answer_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE, "Kafka refused the %s: %s",
                            record_noun(rq->route), rd_kafka_err2str(err));
    }
    return answer_ok(rq, rq->data);
}

/* GET /api/whoami: what the token may do, for the console to offer: admin
 * (every app, and the cluster), the apps it acts on, inner. */
static enum MHD_Result answer_whoami(request *rq)
{
    mc_gateway *g = rq->g;
    bool admin = g->cfg->gateway_no_auth || rq->grant.admin;
    json_t *apps = mc_tokens_apps(g->tokens, &rq->grant, admin);
    char *data = apps ? json_text(json_pack("{s:b,s:b,s:o}", "admin", admin, "inner",
                                            !admin && rq->grant.inner, "apps", apps))
                      : NULL;
    enum MHD_Result ret = data ? answer_ok(rq, data)
                               : answer_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    free(data);
    return ret;
}

static int api_handle(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                      const char *upload_data, size_t *upload_data_size, void **req_cls)
{
    mc_gateway *g = cls;
    request *rq = *req_cls;
    if (!rq) {
        rq = calloc(1, sizeof *rq);
        if (!rq || pthread_mutex_init(&rq->lock, NULL) != 0) {
            free(rq);
            return MHD_NO;
        }
        rq->g = g;
        rq->conn = conn;
        rq->start_ns = mc_mono_ns();
        rq->route = find_route(url, method);
        rq->url = url;
        *req_cls = rq;
        mc_gauge_add(g->in_flight, 1);
        enum MHD_Result ret;
        bool answered = check_headers(rq, method, &ret);
        rq->url = NULL; /* libmicrohttpd's, for this call only */
        if (answered)
            return ret;
        rq->phase = PH_BODY;
        return MHD_YES;
    }
    if (*upload_data_size && rq->answered) {
        *upload_data_size = 0; /* answered from the headers: the body is not wanted */
        return MHD_YES;
    }
    if (*upload_data_size) {
        int rc = take_body(rq, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return rc == 0 ? MHD_YES : MHD_NO;
    }
    if (rq->answered)
        return MHD_YES;
    if (rq->phase == PH_ACKED)
        return answer_acked(rq);
    if (rq->phase == PH_PRODUCING || rq->phase == PH_ASKING)
        return MHD_YES; /* not resumed by us: nothing to say yet */
    if (rq->phase == PH_ASKED)
        return answer_asked(rq);
    if (rq->route == R_UUID) {
        char id[MC_UUID_STR_LEN + 1];
        mc_uuid7_next(&g->uuids, mc_now_ms(), id);
        char *data = json_text(json_pack("{s:s}", "uuid", id));
        enum MHD_Result ret =
            data ? answer_ok(rq, data)
                 : answer_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        free(data);
        return ret;
    }
    if (rq->route == R_WHOAMI)
        return answer_whoami(rq);
    if (rq->route == R_CLUSTER) {
        /* Every app's figures and the instances' hosts: operators only. */
        if (!g->cfg->gateway_no_auth && !rq->grant.admin)
            return answer_error(rq, MHD_HTTP_FORBIDDEN,
                                "GET /api/cluster needs an admin token (MOONCAKE_ADMIN_TOKENS)");
        return start_asking(rq);
    }
    if (rq->route == R_JOBS_LIST)
        return answer_list(rq);
    if (rq->route == R_GROUPS_LIST || rq->route == R_LIMITS_LIST)
        return answer_endpoint_list(rq);
    if (rq->route == R_TASK)
        return answer_task(rq);
    if (rq->route == R_TASKS || rq->route == R_STATS)
        return answer_tasks(rq);
    if (rq->route == R_DEAD_LETTERS)
        return answer_dead_letters(rq);
    return handle_post(rq);
}

static void api_done(void *cls, void **req_cls)
{
    mc_gateway *g = cls;
    request *rq = *req_cls;
    *req_cls = NULL;
    if (!rq)
        return;
    mc_gauge_add(g->in_flight, -1);
    request_free(rq);
}

/* ---------------------------------------------------------------------------
 * Kafka
 * ------------------------------------------------------------------------ */

/* Delivery report, on the delivery thread: the outcome goes into the
 * request, whose connection is then resumed. The lock makes sure the
 * handler has suspended the connection before we resume it; conn is read
 * under it because the request may be freed as soon as we resume. */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)opaque;
    request *rq = m->_private;
    if (!rq)
        return;
    pthread_mutex_lock(&rq->lock);
    rq->delivery_err = m->err;
    rq->phase = PH_ACKED;
    struct MHD_Connection *conn = rq->conn;
    pthread_mutex_unlock(&rq->lock);
    MHD_resume_connection(conn);
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    mc_gateway *g = opaque;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char why[512];
        rd_kafka_fatal_error(rk, why, sizeof why);
        mc_log(&g->log, MC_LOG_ERROR, "producer failed fatally, stopping", "error", why,
               (const char *)NULL);
        atomic_store(&g->fatal, true);
        mc_gateway_stop(g);
        return;
    }
    mc_log(&g->log, MC_LOG_WARN, "kafka", "error", rd_kafka_err2str((rd_kafka_resp_err_t)err),
           "reason", reason, (const char *)NULL);
}

static void *delivery_main(void *arg)
{
    mc_gateway *g = arg;
    while (!atomic_load(&g->stop))
        rd_kafka_poll(g->producer, 100);
    return NULL;
}

static rd_kafka_t *producer_new(mc_gateway *g, char *err, size_t errlen)
{
    const mc_config *cfg = g->cfg;
    rd_kafka_conf_t *conf = mc_kafka_conf_new(cfg, g, err, errlen);
    if (!conf)
        return NULL;
    char timeout[16];
    snprintf(timeout, sizeof timeout, "%d", cfg->gateway_produce_timeout_ms);
    /* Idempotence: librdkafka's retries never duplicate or reorder a task.
     * linger.ms 5 batches concurrent submits without showing in latency;
     * Nagle would add up to 40 ms to a lone request. murmur2 puts each key
     * on the partition the router expects (mc_key_partition). */
    if (mc_kafka_conf_set(conf, "enable.idempotence", "true", err, errlen) ||
        mc_kafka_conf_set(conf, "partitioner", "murmur2_random", err, errlen) ||
        mc_kafka_conf_set(conf, "message.timeout.ms", timeout, err, errlen) ||
        mc_kafka_conf_default(cfg, conf, "linger.ms", "5", err, errlen) ||
        mc_kafka_conf_default(cfg, conf, "socket.nagle.disable", "true", err, errlen)) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_error_cb(conf, on_error);
    return mc_kafka_new(RD_KAFKA_PRODUCER, conf, "producer", err, errlen);
}

/* One metadata request for the tasks topic: the broker answers and the
 * topic exists with partitions. */
static bool probe_broker(mc_gateway *g, char *why, size_t whylen)
{
    const rd_kafka_metadata_t *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(g->producer, 0, g->tasks, &md, 2000);
    if (err) {
        snprintf(why, whylen, "broker unreachable: %s", rd_kafka_err2str(err));
        return false;
    }
    bool ok = md->topic_cnt == 1 && !md->topics[0].err && md->topics[0].partition_cnt > 0;
    if (!ok)
        snprintf(why, whylen, "topic %.100s: %s", g->tasks_name,
                 md->topic_cnt ? rd_kafka_err2str(md->topics[0].err) : "missing");
    rd_kafka_metadata_destroy(md);
    return ok;
}

/* ---------------------------------------------------------------------------
 * Life cycle
 * ------------------------------------------------------------------------ */

/* Reads a PEM file into a malloc'd string. */
static char *read_pem(const char *path, const char *flag, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open '%s': %s", flag, path, strerror(errno));
        return NULL;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    char buf[4096];
    size_t n;
    while (m && (n = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, n, m);
    bool bad = ferror(f) || !m;
    fclose(f);
    if (m && fclose(m) != 0)
        bad = true;
    if (bad || !text || !strstr(text, "-----BEGIN ")) {
        snprintf(err, errlen, "%s: '%s' is not a PEM file", flag, path);
        free(text);
        return NULL;
    }
    return text;
}

/* Every connection is a descriptor: raises the soft open-files limit to fit
 * the connection limit (plus librdkafka's and the probes'), up to the hard
 * limit; past that, fewer connections. Returns the connection limit. */
static unsigned fit_open_files(mc_gateway *g, unsigned wanted)
{
    const rlim_t spare = 256;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return wanted;
    rlim_t need = (rlim_t)wanted + spare;
    if (rl.rlim_cur < need) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? need : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur >= need)
        return wanted;
    unsigned fit = rl.rlim_cur > spare + 16 ? (unsigned)(rl.rlim_cur - spare) : 16;
    char want[16], got[16], files[24];
    snprintf(want, sizeof want, "%u", wanted);
    snprintf(got, sizeof got, "%u", fit);
    snprintf(files, sizeof files, "%llu", (unsigned long long)rl.rlim_cur);
    mc_log(&g->log, MC_LOG_WARN, "open-files limit too low for --gateway-max-connections", "wanted",
           want, "connections", got, "open_files", files, (const char *)NULL);
    return fit;
}

int mc_gateway_check_config(const mc_config *cfg, char *err, size_t errlen)
{
    mc_tokens *t =
        mc_tokens_parse(cfg->app_tokens, cfg->inner_tokens, cfg->admin_tokens, err, errlen);
    if (!t)
        return -1;
    size_t n = mc_tokens_count(t);
    mc_tokens_free(t);
    mc_kafka_targets *kt =
        mc_kafka_targets_parse(cfg->kafka_targets, cfg->topic_prefix, err, errlen);
    if (!kt)
        return -1;
    mc_kafka_targets_free(kt);
    if (n == 0 && !cfg->gateway_no_auth) {
        snprintf(err, errlen,
                 "no tokens: set MOONCAKE_APP_TOKENS (appId=token,...), MOONCAKE_INNER_TOKENS "
                 "and/or MOONCAKE_ADMIN_TOKENS, or --gateway-no-auth to serve without "
                 "authentication");
        return -1;
    }
    bool cert = cfg->gateway_tls_cert[0], key = cfg->gateway_tls_key[0];
    if (cert != key) {
        snprintf(err, errlen, "HTTPS needs both --gateway-tls-cert and --gateway-tls-key");
        return -1;
    }
    if (cert) {
        char *c = read_pem(cfg->gateway_tls_cert, "--gateway-tls-cert", err, errlen);
        char *k = c ? read_pem(cfg->gateway_tls_key, "--gateway-tls-key", err, errlen) : NULL;
        free(c);
        free(k);
        if (!k)
            return -1;
    }
    return 0;
}

static int register_metrics(mc_gateway *g)
{
    static const double bounds[] = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
                                    0.1,    0.25,  0.5,   1,     2.5,  5,    10};
    for (int r = 0; r < N_ROUTES; r++) {
        char labels[128];
        for (size_t i = 0; i < N_COMMON; i++) {
            snprintf(labels, sizeof labels, "route=\"%s\",status=\"%u\"", route_label(r),
                     common_statuses[i]);
            g->rm[r].by_status[i] =
                mc_metrics_counter(g->metrics, "mooncake_gateway_requests_total",
                                   "Gateway requests answered, by route and HTTP status", labels);
        }
        snprintf(labels, sizeof labels, "route=\"%s\"", route_label(r));
        g->rm[r].duration = mc_metrics_histogram(
            g->metrics, "mooncake_gateway_request_duration_seconds",
            "Time from a request's headers to its answer (includes Kafka's acknowledgement)",
            labels, bounds, sizeof bounds / sizeof bounds[0]);
        if (!g->rm[r].duration)
            return -1;
    }
    g->produce_errors = mc_metrics_counter(
        g->metrics, "mooncake_gateway_produce_errors_total",
        "Tasks Kafka refused or did not acknowledge in time (answered 503)", NULL);
    g->in_flight = mc_metrics_gauge(g->metrics, "mooncake_gateway_in_flight",
                                    "Requests received and not yet finished", NULL);
    return g->produce_errors && g->in_flight ? 0 : -1;
}

mc_gateway *mc_gateway_new(const mc_config *cfg, mc_metrics *metrics, const mc_logger *lg,
                           char *err, size_t errlen)
{
    if (mc_gateway_check_config(cfg, err, errlen) != 0)
        return NULL;
    mc_gateway *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    g->cfg = cfg;
    g->log = *lg;
    g->metrics = metrics;
    pthread_mutex_init(&g->wait_lock, NULL);
    pthread_mutex_init(&g->zones_lock, NULL);
    pthread_cond_init(&g->wait_cond, NULL);
    mc_uuid7_init(&g->uuids);
    snprintf(g->broker_why, sizeof g->broker_why, "not probed yet");
    if (!(g->tokens =
              mc_tokens_parse(cfg->app_tokens, cfg->inner_tokens, cfg->admin_tokens, err, errlen)))
        goto fail;
    if (!(g->targets = mc_kafka_targets_parse(cfg->kafka_targets, cfg->topic_prefix, err, errlen)))
        goto fail;
    if (cfg->gateway_tls_cert[0] &&
        (!(g->tls_cert = read_pem(cfg->gateway_tls_cert, "--gateway-tls-cert", err, errlen)) ||
         !(g->tls_key = read_pem(cfg->gateway_tls_key, "--gateway-tls-key", err, errlen))))
        goto fail;
    g->max_connections = fit_open_files(g, (unsigned)cfg->gateway_max_connections);
    g->idem =
        mc_idem_new((size_t)cfg->gateway_idempotency_max_keys, cfg->gateway_idempotency_ttl_ms);
    g->zones = mc_zone_cache_new(cfg->zoneinfo_dir);
    if (!g->idem || !g->zones || register_metrics(g) != 0 ||
        (cfg->gateway_jobs_view &&
         !(g->jobs_view = mc_jobs_view_new(metrics, cfg->zoneinfo_dir)))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (g->jobs_view && mc_jobs_view_start(g->jobs_view, cfg, lg, err, errlen) != 0)
        goto fail;
    if (!(g->producer = producer_new(g, err, errlen)))
        goto fail;
    if (!(g->forward = mc_view_forward_new(cfg, g->producer, &g->log)) ||
        !(g->cluster = mc_cluster_new(cfg, g->producer))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (!(g->dead = mc_dead_api_new(cfg, &g->log, &g->stopping))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    mc_topic_name(cfg, "tasks", g->tasks_name, sizeof g->tasks_name);
    mc_topic_name(cfg, "job-commands", g->job_commands_name, sizeof g->job_commands_name);
    mc_topic_name(cfg, "endpoints", g->endpoints_name, sizeof g->endpoints_name);
    if (!(g->tasks = rd_kafka_topic_new(g->producer, g->tasks_name, NULL)) ||
        !(g->job_commands = rd_kafka_topic_new(g->producer, g->job_commands_name, NULL)) ||
        !(g->endpoints_topic = rd_kafka_topic_new(g->producer, g->endpoints_name, NULL))) {
        snprintf(err, errlen, "topic handle for %s: %s",
                 !g->tasks          ? g->tasks_name
                 : !g->job_commands ? g->job_commands_name
                                    : g->endpoints_name,
                 rd_kafka_err2str(rd_kafka_last_error()));
        goto fail;
    }
    if (!(g->endpoints = mc_endpoint_table_open(cfg, metrics, err, errlen)))
        goto fail;
    if (pthread_create(&g->delivery_thread, NULL, delivery_main, g) != 0) {
        snprintf(err, errlen, "cannot start the delivery thread");
        goto fail;
    }
    g->delivery_started = true;
    return g;
fail:
    mc_gateway_free(g);
    return NULL;
}

void mc_gateway_http_options(mc_gateway *g, mc_http_options *ho)
{
    ho->api = api_handle;
    ho->api_done = api_done;
    ho->api_cls = g;
    ho->threads = (unsigned)g->cfg->gateway_threads;
    ho->per_ip_limit = (unsigned)g->cfg->gateway_max_connections_per_ip;
    ho->connection_limit = g->max_connections;
    /* libmicrohttpd clears this much per keep-alive request: 16 KiB holds
     * any sane request line and headers, and costs half the default's 32. */
    ho->memory_limit = 16 << 10;
    ho->tls_cert_pem = g->tls_cert;
    ho->tls_key_pem = g->tls_key;
}

static bool ready_check(void *arg, char *why, size_t whylen)
{
    mc_gateway *g = arg;
    if (atomic_load(&g->stopping)) {
        snprintf(why, whylen, "shutting down");
        return false;
    }
    if (atomic_load(&g->broker_ok))
        return true;
    pthread_mutex_lock(&g->wait_lock);
    snprintf(why, whylen, "%s", g->broker_why);
    pthread_mutex_unlock(&g->wait_lock);
    return false;
}

static bool health_check(void *arg, char *why, size_t whylen)
{
    mc_gateway *g = arg;
    if (atomic_load(&g->fatal)) {
        snprintf(why, whylen, "the producer failed fatally");
        return false;
    }
    return true;
}

void mc_gateway_attach(mc_gateway *g, mc_http_server *http)
{
    mc_cluster_set_http(g->cluster, http);
    mc_http_add_check(http, "ready", "broker", ready_check, g);
    mc_http_add_check(http, "health", "producer", health_check, g);
}

int mc_gateway_run(mc_gateway *g)
{
    char why[256];
    while (!atomic_load(&g->stop)) {
        bool ok = probe_broker(g, why, sizeof why);
        bool was = atomic_exchange(&g->broker_ok, ok);
        pthread_mutex_lock(&g->wait_lock);
        if (!ok)
            snprintf(g->broker_why, sizeof g->broker_why, "%s", why);
        if (ok != was)
            mc_log(&g->log, ok ? MC_LOG_INFO : MC_LOG_WARN,
                   ok ? "broker reachable, ready" : "broker not usable, not ready", "reason",
                   ok ? "ok" : why, (const char *)NULL);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += READY_PROBE_MS / 1000;
        if (!atomic_load(&g->stop))
            pthread_cond_timedwait(&g->wait_cond, &g->wait_lock, &until);
        pthread_mutex_unlock(&g->wait_lock);
    }
    /* New requests get 503 from now on; the ones handed to Kafka get their
     * answers, within the produce timeout. */
    atomic_store(&g->stopping, true);
    while (atomic_load(&g->producing) > 0)
        usleep(1000);
    /* Task questions end within their timeouts, and resume their connections. */
    while (atomic_load(&g->asking) > 0)
        usleep(1000);
    rd_kafka_resp_err_t err =
        rd_kafka_flush(g->producer, g->cfg->gateway_produce_timeout_ms + 1000);
    if (err) {
        /* Whatever is left is failed now, so every suspended connection is
         * resumed before the HTTP server stops. */
        rd_kafka_purge(g->producer, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_flush(g->producer, 1000);
    }
    /* Let libmicrohttpd send those answers before the server is stopped. */
    for (int i = 0; i < 100 && mc_gauge_value(g->in_flight) > 0; i++)
        usleep(10 * 1000);
    mc_log(&g->log, MC_LOG_INFO, "gateway stopped", (const char *)NULL);
    return atomic_load(&g->fatal) ? 1 : 0;
}

void mc_gateway_stop(mc_gateway *g)
{
    /* Refuse new requests at once, not after the broker probe in progress
     * (up to 2 s) returns to the run loop. */
    atomic_store(&g->stopping, true);
    /* The readers stop now too: during an outage each may sit in a metadata
     * request for up to its timeout, which then runs out while the requests
     * in flight wait for theirs, not one after another at the exit. */
    mc_endpoint_table_stop(g->endpoints);
    mc_jobs_view_stop(g->jobs_view);
    pthread_mutex_lock(&g->wait_lock);
    atomic_store(&g->stop, true);
    pthread_cond_broadcast(&g->wait_cond);
    pthread_mutex_unlock(&g->wait_lock);
}

void mc_gateway_free(mc_gateway *g)
{
    if (!g)
        return;
    mc_gateway_stop(g);
    if (g->delivery_started)
        pthread_join(g->delivery_thread, NULL);
    if (g->tasks)
        rd_kafka_topic_destroy(g->tasks);
    if (g->job_commands)
        rd_kafka_topic_destroy(g->job_commands);
    if (g->endpoints_topic)
        rd_kafka_topic_destroy(g->endpoints_topic);
    mc_endpoint_table_close(g->endpoints);
    mc_view_forward_free(g->forward);
    mc_dead_api_free(g->dead);
    mc_cluster_free(g->cluster);
    if (g->producer)
        rd_kafka_destroy(g->producer);
    mc_jobs_view_free(g->jobs_view);
    mc_idem_free(g->idem);
    mc_zone_cache_free(g->zones);
    mc_tokens_free(g->tokens);
    mc_kafka_targets_free(g->targets);
    free(g->tls_cert);
    free(g->tls_key);
    mc_uuid7_destroy(&g->uuids);
    pthread_cond_destroy(&g->wait_cond);
    pthread_mutex_destroy(&g->wait_lock);
    pthread_mutex_destroy(&g->zones_lock);
    free(g);
}
