/* `mooncake <role> [flags]`: the one binary for every role.
 *
 * Exit codes: 0 after a clean stop (SIGTERM/SIGINT), 1 after a fatal Kafka
 * error (the orchestrator restarts us; Kafka holds all state), 2 for a bad
 * flag or configuration, with one line saying what to fix. Signals are taken
 * by a dedicated thread with sigwait(), so no handler touches global state. */
#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "executor.h"
#include "gateway.h"
#include "http_server.h"
#include "kafka.h"
#include "log.h"
#include "metrics.h"
#include "retry.h"
#include "retry_policy.h"
#include "ssrf.h"
#include "webhook.h"
#include "router.h"
#include "store.h"
#include "wheel.h"
#include "runner.h"

extern char **environ;

typedef struct role {
    const char *name;
    const mc_processor *processor; /* NULL for the gateway, which only produces */
    const char *summary;
} role;

static const role roles[] = {
    {"router", &mc_router_processor,
     "validate commands from tasks, stamp versions, route them to wheel (or dead)"},
    {"store", &mc_store_processor,
     "keep tasks due beyond the horizon (changelog: store) and hand them to the wheel"},
    {"wheel", &mc_wheel_processor, "fire each task to ready at its due millisecond, exactly once"},
    {"executor", &mc_executor_processor,
     "call each ready task's HTTP callback at its due time (results, or retry on failure)"},
    {"retry", &mc_retry_processor,
     "reschedule failed calls with backoff (back to tasks), or dead-letter them"},
    {"gateway", NULL,
     "the HTTP API (POST /submit, /inner/submit, /api/task/done, GET /uuid) producing to tasks"},
};
#define N_ROLES (sizeof roles / sizeof roles[0])

static void usage(FILE *out)
{
    fprintf(out,
            "mooncake %s: delayed HTTP tasks on Apache Kafka, exactly once.\n\n"
            "Usage: mooncake <role> [flags]\n"
            "       mooncake <role> --help\n"
            "       mooncake --version\n\nRoles:\n",
            MOONCAKE_VERSION);
    for (size_t i = 0; i < N_ROLES; i++)
        fprintf(out, "  %-10s %s\n", roles[i].name, roles[i].summary);
    fprintf(out, "\n");
    mc_config_usage(out);
}

/* The settings a role would refuse only once it has reached the broker,
 * checked before: a bad flag exits 2 at once, whatever Kafka is doing. */
static int check_role_config(const mc_processor *p, const mc_config *cfg, char *err, size_t errlen)
{
    if (!p)
        return mc_gateway_check_config(cfg, err, errlen);
    if (p == &mc_executor_processor) {
        mc_ssrf *g = mc_ssrf_new(cfg->executor_allow_cidrs, err, errlen);
        if (!g)
            return -1;
        mc_ssrf_free(g);
        mc_app_secrets *s = mc_app_secrets_parse(cfg->app_secrets, err, errlen);
        if (!s)
            return -1;
        mc_app_secrets_free(s);
    }
    if (p == &mc_retry_processor) {
        mc_backoff b = {cfg->retry_max_attempts, cfg->retry_initial_backoff_ms,
                        cfg->retry_multiplier, cfg->retry_max_backoff_ms};
        char why[256];
        if (mc_backoff_validate(&b, why, sizeof why) != 0) {
            snprintf(err, errlen, "retry defaults: %s (set by --retry-* / MOONCAKE_RETRY_*)", why);
            return -1;
        }
    }
    return 0;
}

typedef struct signal_waiter {
    sigset_t set;
    mc_runner *runner;   /* the processor to stop, or */
    mc_gateway *gateway; /* the gateway */
    atomic_bool done;
    const mc_logger *lg;
} signal_waiter;

static void *signal_thread(void *arg)
{
    signal_waiter *w = arg;
    for (;;) {
        int sig = 0;
        if (sigwait(&w->set, &sig) != 0)
            continue;
        if (atomic_load(&w->done))
            return NULL;
        mc_log(w->lg, MC_LOG_INFO, "signal received, stopping", "signal", strsignal(sig),
               (const char *)NULL);
        if (w->runner)
            mc_runner_stop(w->runner);
        if (w->gateway)
            mc_gateway_stop(w->gateway);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("mooncake %s (librdkafka %s)\n", MOONCAKE_VERSION, rd_kafka_version_str());
        return 0;
    }
    const role *ro = NULL;
    for (size_t i = 0; i < N_ROLES; i++)
        if (strcmp(argv[1], roles[i].name) == 0)
            ro = &roles[i];
    if (!ro) {
        fprintf(stderr, "mooncake: unknown role '%s' (roles:", argv[1]);
        for (size_t i = 0; i < N_ROLES; i++)
            fprintf(stderr, " %s", roles[i].name);
        fprintf(stderr, ")\n");
        return 2;
    }

    mc_config cfg;
    char err[1024] = "";
    int rc = mc_config_load(&cfg, argc - 1, argv + 1, environ, err, sizeof err);
    if (rc == 1) {
        printf("Usage: mooncake %s [flags]\n  %s\n\n", ro->name, ro->summary);
        mc_config_usage(stdout);
        mc_config_free(&cfg);
        return 0;
    }
    if (rc != 0) {
        fprintf(stderr, "mooncake %s: %s\n", ro->name, err);
        mc_config_free(&cfg);
        return 2;
    }
    if (check_role_config(ro->processor, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "mooncake %s: %s\n", ro->name, err);
        mc_config_free(&cfg);
        return 2;
    }
    mc_logger lg = {.level = cfg.log_level, .json = cfg.log_json, .role = ro->name};

    /* Block the stop signals before any thread exists, so every thread
     * (librdkafka's and libmicrohttpd's included) inherits the mask and only
     * the signal thread ever sees them. */
    signal_waiter waiter = {.lg = &lg};
    sigemptyset(&waiter.set);
    sigaddset(&waiter.set, SIGINT);
    sigaddset(&waiter.set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &waiter.set, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* Not thread-safe, so before any thread: libcurl's global state (TLS). */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "mooncake: cannot initialise libcurl\n");
        mc_config_free(&cfg);
        return 1;
    }
    int exit_code = 1;
    mc_metrics *metrics = mc_metrics_new();
    mc_http_server *http = NULL;
    mc_runner *runner = NULL;
    mc_gateway *gateway = NULL;
    if (!metrics) {
        fprintf(stderr, "mooncake: out of memory\n");
        goto out;
    }
    if (!ro->processor) {
        if (cfg.http_port < 0) {
            fprintf(stderr, "mooncake gateway: the API needs --http-port / MOONCAKE_HTTP_PORT\n");
            exit_code = 2;
            goto out;
        }
        gateway = mc_gateway_new(&cfg, metrics, &lg, err, sizeof err);
        if (!gateway) {
            fprintf(stderr, "mooncake gateway: %s\n", err);
            exit_code = 2;
            goto out;
        }
    }
    if (cfg.http_port >= 0) {
        mc_http_options ho = {.bind_address = cfg.http_bind,
                              .port = (uint16_t)cfg.http_port,
                              .metrics = metrics,
                              .ready_needs_check = true};
        if (gateway)
            mc_gateway_http_options(gateway, &ho);
        http = mc_http_start(&ho, err, sizeof err);
        if (!http) {
            fprintf(stderr, "mooncake %s: %s (set --http-port / MOONCAKE_HTTP_PORT)\n", ro->name,
                    err);
            exit_code = 2;
            goto out;
        }
        char port[16];
        snprintf(port, sizeof port, "%u", mc_http_port(http));
        mc_log(&lg, MC_LOG_INFO, "http endpoint up", "port", port, (const char *)NULL);
    }
    /* The gateway without --create-topics starts without the broker: its
     * /readyz tells when the broker and the tasks topic are there. */
    if ((ro->processor || cfg.create_topics) && mc_topics_ensure(&cfg, &lg, err, sizeof err) != 0) {
        mc_log(&lg, MC_LOG_ERROR, "topics not usable", "error", err, (const char *)NULL);
        /* A wrong -X property is a configuration error; a broker problem is not. */
        exit_code = strstr(err, "Kafka property") ? 2 : 1;
        goto out;
    }
    if (gateway) {
        mc_gateway_attach(gateway, http);
        waiter.gateway = gateway;
    } else {
        runner = mc_runner_new(ro->processor, &cfg, metrics, http, err, sizeof err);
        if (!runner) {
            fprintf(stderr, "mooncake %s: %s\n", ro->name, err);
            exit_code = 2;
            goto out;
        }
        waiter.runner = runner;
    }
    atomic_init(&waiter.done, false);
    pthread_t sig_tid;
    if (pthread_create(&sig_tid, NULL, signal_thread, &waiter) != 0) {
        fprintf(stderr, "mooncake: cannot start the signal thread\n");
        goto out;
    }
    exit_code = runner ? mc_runner_run(runner) : mc_gateway_run(gateway);
    atomic_store(&waiter.done, true);
    pthread_kill(sig_tid, SIGTERM); /* wakes sigwait; done makes it return */
    pthread_join(sig_tid, NULL);
out:
    mc_runner_free(runner);
    if (http)
        mc_http_stop(http);
    mc_gateway_free(gateway); /* after the server: no request can reach it */
    mc_metrics_free(metrics);
    mc_config_free(&cfg);
    curl_global_cleanup();
    return exit_code;
}
