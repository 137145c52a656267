/* `mooncake <role> [flags]`: the one binary for every role, and `mooncake all`,
 * which runs every role as threads of one process, each with its own Kafka
 * handles (the roles share no mutable state, only the metrics registry and
 * the HTTP server, both thread-safe).
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

#include "alarms.h"
#include "config.h"
#include "executor.h"
#include "gateway.h"
#include "http_server.h"
#include "kafka.h"
#include "log.h"
#include "metrics.h"
#include "retry.h"
#include "jobs.h"
#include "router.h"
#include "store.h"
#include "wheel.h"
#include "runner.h"
#include "view.h"

extern char **environ;

/* What the program needs of a role: the Kafka processors (each run by a
 * runner) and the gateway alike. A role makes a unit, which runs on a thread
 * of its own until it is stopped. */
typedef struct role role;
typedef struct unit_ops {
    /* The settings the role would refuse once started, checked before
     * anything starts (and by --check-config). 0, or -1 with a line in err. */
    int (*check_config)(const role *r, const mc_config *cfg, char *err, size_t errlen);
    /* Makes the unit before the HTTP server starts, adding to ho what it
     * serves there. NULL with a line in err. */
    /* door: where the gateway asks the view, when both run here (else NULL). */
    void *(*create)(const role *r, const mc_config *cfg, mc_metrics *metrics, const mc_logger *lg,
                    mc_http_options *ho, mc_view_door *door, char *err, size_t errlen);
    /* Once the HTTP server (NULL: none) and, for roles that use them, the
     * topics are there. 0, or -1 with a line in err. */
    int (*attach)(void *unit, const mc_config *cfg, mc_metrics *metrics, mc_http_server *http,
                  char *err, size_t errlen);
    int (*run)(void *unit);   /* until stop; the exit code: 0, 1 after a fatal error */
    void (*stop)(void *unit); /* any thread */
    void (*destroy)(void *unit);
    bool needs_topics; /* the topic set must exist before it starts */
} unit_ops;

struct role {
    const char *name;
    const unit_ops *ops;
    const mc_processor *processor; /* for the runner's ops */
    const char *summary;
};

/* ---- processors: a runner each ---------------------------------------------------- */

typedef struct runner_unit {
    const mc_processor *processor;
    mc_processor with_door; /* the view's, given the process's door */
    mc_runner *runner;
} runner_unit;

static int runner_check_config(const role *r, const mc_config *cfg, char *err, size_t errlen)
{
    return r->processor->check_config ? r->processor->check_config(cfg, err, errlen) : 0;
}

/* The runner itself is made at attach: it registers its probes on the HTTP
 * server, which starts after every unit is made. */
static void *runner_create(const role *r, const mc_config *cfg, mc_metrics *metrics,
                           const mc_logger *lg, mc_http_options *ho, mc_view_door *door, char *err,
                           size_t errlen)
{
    (void)cfg, (void)metrics, (void)lg, (void)ho;
    runner_unit *u = calloc(1, sizeof *u);
    if (!u)
        snprintf(err, errlen, "out of memory");
    else
        u->processor = r->processor;
    if (u && r->processor == &mc_view_processor && door) {
        u->with_door = *r->processor;
        u->with_door.create_arg = door;
        u->processor = &u->with_door;
    }
    return u;
}

static int runner_attach(void *unit, const mc_config *cfg, mc_metrics *metrics,
                         mc_http_server *http, char *err, size_t errlen)
{
    runner_unit *u = unit;
    u->runner = mc_runner_new(u->processor, cfg, metrics, http, err, errlen);
    return u->runner ? 0 : -1;
}

static int runner_run(void *unit)
{
    return mc_runner_run(((runner_unit *)unit)->runner);
}

static void runner_stop(void *unit)
{
    runner_unit *u = unit;
    if (u->runner)
        mc_runner_stop(u->runner);
}

static void runner_destroy(void *unit)
{
    runner_unit *u = unit;
    if (u)
        mc_runner_free(u->runner);
    free(u);
}

static const unit_ops runner_ops = {runner_check_config, runner_create,  runner_attach, runner_run,
                                    runner_stop,         runner_destroy, true};

/* ---- the gateway ------------------------------------------------------------------ */

static int gateway_check_config(const role *r, const mc_config *cfg, char *err, size_t errlen)
{
    (void)r;
    if (cfg->http_port < 0) {
        snprintf(err, errlen, "the HTTP API needs --http-port / MOONCAKE_HTTP_PORT");
        return -1;
    }
    return mc_gateway_check_config(cfg, err, errlen);
}

static int ask_view(void *door, const char *app_id, const char *task_id, int timeout_ms,
                    char **body)
{
    return mc_view_ask_task(door, app_id, task_id, timeout_ms, body);
}

static int ask_view_stored(void *door, const char *app_id, const char *task_id, int timeout_ms,
                           char **body)
{
    return mc_view_ask_stored_task(door, app_id, task_id, timeout_ms, body);
}

static int ask_view_tasks(void *door, const mc_view_filter *f, bool stats,
                          const int32_t *partitions, size_t n, int timeout_ms, char **body)
{
    return mc_view_ask_tasks(door, f, stats, partitions, n, timeout_ms, body);
}

static void *gateway_create(const role *r, const mc_config *cfg, mc_metrics *metrics,
                            const mc_logger *lg, mc_http_options *ho, mc_view_door *door, char *err,
                            size_t errlen)
{
    (void)r;
    mc_gateway *g = mc_gateway_new(cfg, metrics, lg, err, errlen);
    if (g) {
        mc_gateway_http_options(g, ho);
        if (door)
            mc_gateway_set_view(g,
                                &(mc_view_asker){ask_view, ask_view_tasks, ask_view_stored, door});
    }
    return g;
}

static int gateway_attach(void *unit, const mc_config *cfg, mc_metrics *metrics,
                          mc_http_server *http, char *err, size_t errlen)
{
    (void)cfg, (void)metrics, (void)err, (void)errlen;
    mc_gateway_attach(unit, http);
    return 0;
}

static int gateway_run(void *unit)
{
    return mc_gateway_run(unit);
}

static void gateway_stop(void *unit)
{
    mc_gateway_stop(unit);
}

static void gateway_destroy(void *unit)
{
    mc_gateway_free(unit);
}

/* The gateway alone starts without the broker (its /readyz tells when the
 * broker and the tasks topic are there): it needs no topics to start. */
static const unit_ops gateway_ops = {
    gateway_check_config, gateway_create,  gateway_attach, gateway_run,
    gateway_stop,         gateway_destroy, false};

static const role roles[] = {
    {"router", &runner_ops, &mc_router_processor,
     "validate commands from tasks, stamp versions, route them to wheel (or dead)"},
    {"store", &runner_ops, &mc_store_processor,
     "keep tasks due beyond the horizon (changelog: store) and hand them to the wheel"},
    {"wheel", &runner_ops, &mc_wheel_processor,
     "fire each task to ready at its due millisecond, exactly once"},
    {"executor", &runner_ops, &mc_executor_processor,
     "call each ready task's HTTP callback at its due time (results, or retry on failure)"},
    {"retry", &runner_ops, &mc_retry_processor,
     "reschedule failed calls with backoff (back to tasks), or dead-letter them"},
    {"jobs", &runner_ops, &mc_jobs_processor,
     "recurring jobs (cron, fixed rate, fixed delay): each occurrence a task, exactly once"},
    {"alarms", &runner_ops, &mc_alarms_processor,
     "call each app's alarm webhook when its tasks go dead: batched, each dead letter once"},
    {"view", &runner_ops, &mc_view_processor,
     "every task's state by key (changelog: views), for the gateway's GET /api/task"},
    {"gateway", &gateway_ops, NULL,
     "the HTTP API (POST /submit, /inner/submit, /api/task/done, GET /uuid) producing to tasks"},
};
#define N_ROLES (sizeof roles / sizeof roles[0])
#define ALL_SUMMARY                                                                                \
    "every role above as threads of one process; the gateway's port serves every role's "          \
    "/metrics and probes"

static void usage(FILE *out)
{
    fprintf(out,
            "mooncake %s: delayed HTTP tasks on Apache Kafka, exactly once.\n\n"
            "Usage: mooncake <role> [flags]\n"
            "       mooncake <role> --check-config [flags]\n"
            "       mooncake <role> --help\n"
            "       mooncake --version\n\nRoles:\n",
            MOONCAKE_VERSION);
    for (size_t i = 0; i < N_ROLES; i++)
        fprintf(out, "  %-10s %s\n", roles[i].name, roles[i].summary);
    fprintf(out, "  %-10s %s\n\n", "all", ALL_SUMMARY);
    fprintf(out, "--check-config: read the flags and environment exactly as a start would, run\n"
                 "every start-up check that needs no broker (tokens, secrets, TLS files, -X\n"
                 "properties, unknown MOONCAKE_* variables), print 'config ok' and exit 0, or\n"
                 "exit 2 with the error.\n\n");
    mc_config_usage(out);
}

/* The roles named by spec ("all", a role, or roles joined by commas) into
 * chosen, in the table's order. Their number, or 0 after saying what is
 * wrong. */
static size_t choose_roles(const char *spec, const role *chosen[N_ROLES])
{
    bool all = strcmp(spec, "all") == 0;
    bool want[N_ROLES] = {false};
    for (const char *p = spec; !all && *p;) {
        size_t len = strcspn(p, ",");
        size_t i = 0;
        while (i < N_ROLES &&
               !(strlen(roles[i].name) == len && strncmp(p, roles[i].name, len) == 0))
            i++;
        if (i == N_ROLES || want[i]) {
            fprintf(stderr,
                    "mooncake: %s role '%.*s' (roles:", i == N_ROLES ? "unknown" : "repeated",
                    (int)len, p);
            for (size_t j = 0; j < N_ROLES; j++)
                fprintf(stderr, " %s", roles[j].name);
            fprintf(stderr, " all; several joined by commas)\n");
            return 0;
        }
        want[i] = true;
        p += len;
        if (*p == ',' && *++p == '\0') {
            fprintf(stderr, "mooncake: a role list must not end with ','\n");
            return 0;
        }
    }
    size_t n = 0;
    for (size_t i = 0; i < N_ROLES; i++)
        if (all || want[i])
            chosen[n++] = &roles[i];
    if (n == 0)
        fprintf(stderr, "mooncake: no role given\n");
    return n;
}

/* --check-config: what a start would refuse later than the flag parser, short
 * of reaching the broker. An unknown MOONCAKE_* variable is an error here
 * (though a start ignores it) because it is almost always a typo or a
 * setting the binary no longer has: a deployment that sets it is wrong. */
static int check_config_only(const char *name, const mc_config *cfg)
{
    char err[1024], unknown[256];
    if (mc_config_unknown_env(environ, unknown, sizeof unknown)) {
        fprintf(stderr, "mooncake %s: unknown environment variable %s (see --help)\n", name,
                unknown);
        return 2;
    }
    rd_kafka_conf_t *conf = mc_kafka_conf_new(cfg, NULL, err, sizeof err);
    if (!conf) {
        fprintf(stderr, "mooncake %s: %s\n", name, err);
        return 2;
    }
    rd_kafka_conf_destroy(conf);
    printf("mooncake %s: config ok\n", name);
    return 0;
}

/* One role of this process, run on its own thread. */
typedef struct unit {
    const role *role;
    void *obj; /* what role->ops made */
    pthread_t tid;
    bool started;
    int exit_code;
    struct process *proc;
} unit;

/* Everything this process runs. When one unit stops (a signal, or a fatal
 * error in any of them) all stop: the orchestrator then restarts the whole
 * process, and Kafka holds the state. */
typedef struct process {
    unit units[N_ROLES];
    size_t n_units;
    const mc_logger *lg;
    atomic_bool stopping; /* a stop was asked for: also ends the start-up's waits */
} process;

static void process_stop(process *p)
{
    atomic_store(&p->stopping, true);
    for (size_t i = 0; i < p->n_units; i++)
        p->units[i].role->ops->stop(p->units[i].obj);
}

static void *unit_main(void *arg)
{
    unit *u = arg;
    /* Named after its role, so that top -H, perf and gdb tell the roles of
     * one process apart (at most 15 bytes: "mc-executor"). */
    char thread_name[16];
    snprintf(thread_name, sizeof thread_name, "mc-%s", u->role->name);
    pthread_setname_np(pthread_self(), thread_name);
    u->exit_code = u->role->ops->run(u->obj);
    if (u->proc->n_units > 1)
        mc_log(u->proc->lg, u->exit_code ? MC_LOG_ERROR : MC_LOG_INFO,
               "role stopped, stopping the others", "stopped", u->role->name, (const char *)NULL);
    process_stop(u->proc);
    return NULL;
}

typedef struct signal_waiter {
    sigset_t set;
    process *proc;
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
        process_stop(w->proc);
    }
}

/* Waits for every started unit; the exit code is the worst of theirs. */
static int process_join(process *p, int code)
{
    for (size_t i = 0; i < p->n_units; i++) {
        if (!p->units[i].started)
            continue;
        pthread_join(p->units[i].tid, NULL);
        if (p->units[i].exit_code > code)
            code = p->units[i].exit_code;
    }
    return code;
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
    char libwhy[256];
    if (!mc_kafka_library_ok(libwhy, sizeof libwhy)) {
        fprintf(stderr, "mooncake: %s\n", libwhy);
        return 2;
    }
    /* The roles this process runs: one, several (gateway,view), or every
     * one for "all". */
    const role *chosen[N_ROLES];
    size_t n_chosen = choose_roles(argv[1], chosen);
    if (n_chosen == 0)
        return 2;
    bool all = strcmp(argv[1], "all") == 0;
    /* Errors name the role when several run here. */
    bool several = n_chosen > 1;
    const char *name = argv[1];

    /* --check-config may sit anywhere after the role; the parser never sees it. */
    bool check_only = false;
    int kept = 2;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--check-config") == 0)
            check_only = true;
        else
            argv[kept++] = argv[i];
    }
    argc = kept;

    mc_config cfg;
    char err[1024] = "";
    int rc = mc_config_load(&cfg, argc - 1, argv + 1, environ, err, sizeof err);
    if (rc == 1) {
        printf("Usage: mooncake %s [flags]\n  %s\n\n", name,
               all       ? ALL_SUMMARY
               : several ? "these roles as threads of one process"
                         : chosen[0]->summary);
        mc_config_usage(stdout);
        mc_config_free(&cfg);
        return 0;
    }
    if (rc != 0) {
        fprintf(stderr, "mooncake %s: %s\n", name, err);
        mc_config_free(&cfg);
        return 2;
    }
    for (size_t i = 0; i < n_chosen; i++) {
        if (chosen[i]->ops->check_config(chosen[i], &cfg, err, sizeof err) != 0) {
            fprintf(stderr, "mooncake %s: %s%s%s\n", name, several ? chosen[i]->name : "",
                    several ? ": " : "", err);
            mc_config_free(&cfg);
            return 2;
        }
    }
    if (check_only) {
        rc = check_config_only(name, &cfg);
        mc_config_free(&cfg);
        return rc;
    }
    mc_logger lg = {.level = cfg.log_level, .json = cfg.log_json, .role = name};

    /* Block the stop signals before any thread exists, so every thread
     * (librdkafka's and libmicrohttpd's included) inherits the mask and only
     * the signal thread ever sees them. */
    process proc = {.lg = &lg};
    atomic_init(&proc.stopping, false);
    signal_waiter waiter = {.lg = &lg, .proc = &proc};
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
    int exit_code = 2;
    bool needs_topics = false;
    mc_metrics *metrics = mc_metrics_new();
    mc_http_server *http = NULL;
    mc_view_door *door = NULL;
    bool sig_started = false;
    pthread_t sig_tid;
    if (!metrics) {
        fprintf(stderr, "mooncake: out of memory\n");
        exit_code = 1;
        goto out;
    }
    /* Every unit is made first, since what the HTTP server serves (the
     * gateway's API) is fixed when it starts; then the server; then the
     * topics; then each unit is attached to what now exists. */
    /* The gateway asks the view through a door when both run here. */
    bool has_view = false, has_gateway = false;
    const char *role_names[N_ROLES + 1] = {NULL};
    for (size_t i = 0; i < n_chosen; i++) {
        role_names[i] = chosen[i]->name;
        has_view |= chosen[i]->processor == &mc_view_processor;
        has_gateway |= chosen[i]->processor == NULL;
    }
    if (has_view && has_gateway && !(door = mc_view_door_new())) {
        fprintf(stderr, "mooncake: out of memory\n");
        exit_code = 1;
        goto out;
    }
    mc_http_options ho = {.bind_address = cfg.http_bind,
                          .port = (uint16_t)cfg.http_port,
                          .metrics = metrics,
                          .ready_needs_check = true};
    for (size_t i = 0; i < n_chosen; i++) {
        unit *u = &proc.units[proc.n_units];
        *u = (unit){.role = chosen[i], .proc = &proc};
        u->obj = chosen[i]->ops->create(chosen[i], &cfg, metrics, &lg, &ho, door, err, sizeof err);
        if (!u->obj) {
            fprintf(stderr, "mooncake %s: %s%s%s\n", name, several ? chosen[i]->name : "",
                    several ? ": " : "", err);
            goto out;
        }
        proc.n_units++;
        needs_topics |= chosen[i]->ops->needs_topics;
    }
    if (cfg.http_port >= 0) {
        http = mc_http_start(&ho, err, sizeof err);
        if (!http) {
            fprintf(stderr, "mooncake %s: %s (set --http-port / MOONCAKE_HTTP_PORT)\n", name, err);
            goto out;
        }
        char port[16];
        snprintf(port, sizeof port, "%u", mc_http_port(http));
        mc_log(&lg, MC_LOG_INFO, "http endpoint up", "port", port, (const char *)NULL);
    }
    /* From here a stop signal is served: the wait for the brokers below
     * ends within a second of one, so a pod deleted while Kafka is away
     * does not wait out its grace period. */
    atomic_init(&waiter.done, false);
    if (pthread_create(&sig_tid, NULL, signal_thread, &waiter) != 0) {
        fprintf(stderr, "mooncake: cannot start the signal thread\n");
        exit_code = 1;
        goto out;
    }
    sig_started = true;
    if ((needs_topics || cfg.create_topics) &&
        mc_topics_ensure(&cfg, &lg, role_names, &proc.stopping, err, sizeof err) != 0) {
        if (atomic_load(&proc.stopping)) {
            mc_log(&lg, MC_LOG_INFO, "stopped before it started", (const char *)NULL);
            exit_code = 0;
            goto out;
        }
        mc_log(&lg, MC_LOG_ERROR, "topics not usable", "error", err, (const char *)NULL);
        /* A wrong -X property is a configuration error; a broker problem is not. */
        exit_code = strstr(err, "Kafka property") ? 2 : 1;
        goto out;
    }
    for (size_t i = 0; i < proc.n_units; i++) {
        unit *u = &proc.units[i];
        if (u->role->ops->attach(u->obj, &cfg, metrics, http, err, sizeof err) != 0) {
            fprintf(stderr, "mooncake %s: %s%s%s\n", name, several ? u->role->name : "",
                    several ? ": " : "", err);
            goto out;
        }
    }
    if (atomic_load(&proc.stopping)) {
        /* Asked while the units attached: some had nothing to stop yet. */
        mc_log(&lg, MC_LOG_INFO, "stopped before it started", (const char *)NULL);
        exit_code = 0;
        goto out;
    }
    exit_code = 0;
    for (size_t i = 0; i < proc.n_units; i++) {
        unit *u = &proc.units[i];
        if (pthread_create(&u->tid, NULL, unit_main, u) != 0) {
            fprintf(stderr, "mooncake: cannot start the %s thread\n", u->role->name);
            exit_code = 1;
            process_stop(&proc);
            break;
        }
        u->started = true;
    }
    exit_code = process_join(&proc, exit_code);
out:
    if (sig_started) {
        atomic_store(&waiter.done, true);
        pthread_kill(sig_tid, SIGTERM); /* wakes sigwait; done makes it return */
        pthread_join(sig_tid, NULL);
    }
    /* The server first: no probe or request can then reach a unit being freed. */
    if (http)
        mc_http_stop(http);
    for (size_t i = 0; i < proc.n_units; i++)
        proc.units[i].role->ops->destroy(proc.units[i].obj);
    mc_view_door_free(door);
    mc_metrics_free(metrics);
    mc_config_free(&cfg);
    curl_global_cleanup();
    return exit_code;
}
