/* The small HTTP endpoint every role serves: /metrics (Prometheus text),
 * /healthz (the process is alive and its loops are turning) and /readyz (every
 * registered readiness check passes, e.g. a processor finished restoring its
 * state). Runs on libmicrohttpd's own thread, so a busy processor loop never
 * delays a probe. */
#ifndef MOONCAKE_HTTP_SERVER_H
#define MOONCAKE_HTTP_SERVER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics.h"

typedef struct mc_http_server mc_http_server;
struct MHD_Connection;

/* An API served on the same port as the probes (the gateway's). It gets
 * every request except GET/HEAD of /metrics, /healthz and /readyz, with
 * libmicrohttpd's access-handler arguments, and returns MHD_YES or MHD_NO.
 * Connections may be suspended and resumed. done is called when
 * libmicrohttpd has finished with a request the API saw, to free *req_cls. */
typedef int (*mc_http_api_fn)(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *upload_data, size_t *upload_data_size,
                              void **req_cls);
typedef void (*mc_http_api_done_fn)(void *cls, void **req_cls);

/* A check returns true when it passes; when it fails it writes a short reason
 * into why. Called from the HTTP thread: it must only read atomics or take
 * its own locks. */
typedef bool (*mc_check_fn)(void *arg, char *why, size_t whylen);

typedef struct mc_http_options {
    const char *bind_address; /* NULL or "0.0.0.0": all interfaces */
    uint16_t port;            /* 0: pick a free port (see mc_http_port) */
    mc_metrics *metrics;      /* rendered by /metrics; not owned */
    /* /readyz answers 503 "starting" until a ready check is registered, so
     * a process is never ready before the component that decides exists. */
    bool ready_needs_check;
    mc_http_api_fn api; /* NULL: probes only */
    mc_http_api_done_fn api_done;
    void *api_cls;
    unsigned threads;      /* libmicrohttpd threads; 0 or 1: one */
    unsigned per_ip_limit; /* connections per client address; 0: no limit */
    /* Open connections at most; 0: libmicrohttpd's default (about 1000).
     * Past it new connections wait in the listen queue unanswered. */
    unsigned connection_limit;
    /* Per-connection memory for the request line and headers (larger
     * headers get 431); 0: libmicrohttpd's default, 32 KiB. It is cleared
     * for every keep-alive request, so smaller is cheaper. */
    size_t memory_limit;
    /* HTTPS when both are set: PEM text (not paths), borrowed until
     * mc_http_start() returns. */
    const char *tls_cert_pem, *tls_key_pem;
} mc_http_options;

/* Starts serving. Returns NULL and a message in err when the port cannot be
 * bound. Caller owns the server; stop it with mc_http_stop(). */
mc_http_server *mc_http_start(const mc_http_options *opts, char *err, size_t errlen);
/* The port actually bound. */
uint16_t mc_http_port(const mc_http_server *s);
/* Adds a check to /readyz (kind "ready") or /healthz (kind "health"); name
 * appears in the response body next to its reason. Thread-safe. */
void mc_http_add_check(mc_http_server *s, const char *kind, const char *name, mc_check_fn fn,
                       void *arg);
/* The ready checks run now: {"ready", "starting", "checks": [{"name",
 * "ok", "why"}]}. Caller owns it; NULL on ENOMEM. Any thread. */
json_t *mc_http_ready_json(mc_http_server *s);
/* Stops the server and frees it (waits for in-flight requests). */
void mc_http_stop(mc_http_server *s);

#endif
