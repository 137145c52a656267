/* `mooncake gateway`: the thin HTTP API of the Java system mooncake replaces
 * (POST /submit, POST /inner/submit, GET /uuid, POST /api/task/done), which
 * turns JSON into Avro Commands on the tasks topic, and the recurring jobs'
 * (POST /jobs, /jobs/pause, /jobs/resume, /jobs/delete, /jobs/trigger: Avro
 * JobCommands on the job-commands topic; /jobs/preview). It is not a stream
 * processor: it only produces, with an idempotent producer, and answers a
 * request once the broker has acknowledged its record (or with 503 when the
 * broker does not within --gateway-produce-timeout-ms). The contract is
 * gateway/openapi.yaml. */
#ifndef MOONCAKE_GATEWAY_H
#define MOONCAKE_GATEWAY_H

#include <stddef.h>

#include "config.h"
#include "http_server.h"
#include "log.h"
#include "metrics.h"
#include "view_forward.h"

typedef struct mc_gateway mc_gateway;

/* Checks the gateway's settings that need no broker: tokens (and that some
 * exist unless --gateway-no-auth), the TLS files. 0, or -1 with one line in
 * err saying what to fix. */
int mc_gateway_check_config(const mc_config *cfg, char *err, size_t errlen);

/* Creates the gateway: tokens, TLS material, the producer, its metrics.
 * cfg, metrics and lg are borrowed and must outlive it. Caller owns the
 * result (mc_gateway_free). NULL with a line in err. */
mc_gateway *mc_gateway_new(const mc_config *cfg, mc_metrics *metrics, const mc_logger *lg,
                           char *err, size_t errlen);
/* Fills the API part of the HTTP server's options (handler, threads, limits,
 * TLS); the caller sets port and metrics and starts the server. */
void mc_gateway_http_options(mc_gateway *g, mc_http_options *ho);
/* Gives the gateway the view of its process (copied), for GET /api/task,
 * /api/tasks and /api/stats. Before the HTTP server starts. */
void mc_gateway_set_view(mc_gateway *g, const mc_view_asker *view);
/* Registers the gateway's /readyz and /healthz checks on the started server. */
void mc_gateway_attach(mc_gateway *g, mc_http_server *http);
/* Serves until mc_gateway_stop(): delivers acknowledgements and probes the
 * broker for /readyz. Then refuses new requests, waits for the answers in
 * flight and returns 0, or 1 when the producer failed fatally. */
int mc_gateway_run(mc_gateway *g);
/* Asks mc_gateway_run() to return. Async-signal-unsafe, thread-safe. */
void mc_gateway_stop(mc_gateway *g);
/* Frees the gateway; call after the HTTP server has been stopped. */
void mc_gateway_free(mc_gateway *g);

#endif
