/* Flag/environment parsing for every role. One table lists each option once,
 * so the parser, the environment lookup and --help cannot disagree. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <arpa/inet.h>

/* OPT_LIST is a string that may be empty (a list with nothing in it). */
typedef enum opt_type {
    OPT_STR,
    OPT_LIST,
    OPT_INT,
    OPT_INT64,
    OPT_DOUBLE,
    OPT_BOOL,
    OPT_SPECIAL
} opt_type;

typedef struct opt {
    const char *flag; /* long flag without dashes */
    char short_flag;  /* 0 when none */
    const char *env;  /* environment twin */
    opt_type type;
    size_t offset;    /* into mc_config */
    int64_t min, max; /* for integers */
    const char *def;  /* default as text (also shown by --help) */
    const char *help;
} opt;

#define OFF(f) offsetof(mc_config, f)

static const opt options[] = {
    {"bootstrap-servers", 'b', "MOONCAKE_BOOTSTRAP_SERVERS", OPT_STR, OFF(bootstrap_servers), 0, 0,
     "localhost:9092", "Kafka bootstrap servers (host:port,...)"},
    {"topic-prefix", 0, "MOONCAKE_TOPIC_PREFIX", OPT_STR, OFF(topic_prefix), 0, 0, "mooncake.",
     "prefix of every topic name"},
    {"partitions", 0, "MOONCAKE_PARTITIONS", OPT_INT, OFF(partitions), 1, 10000, "12",
     "partition count of every topic when creating them"},
    {"replication-factor", 0, "MOONCAKE_REPLICATION_FACTOR", OPT_INT, OFF(replication_factor), -1,
     32, "-1", "replication factor when creating topics (-1: broker default)"},
    {"create-topics", 0, "MOONCAKE_CREATE_TOPICS", OPT_BOOL, OFF(create_topics), 0, 1, "true",
     "create missing topics at start-up"},
    {"http-bind", 0, "MOONCAKE_HTTP_BIND", OPT_STR, OFF(http_bind), 0, 0, "0.0.0.0",
     "address for the HTTP endpoint"},
    {"http-port", 0, "MOONCAKE_HTTP_PORT", OPT_INT, OFF(http_port), -1, 65535, "8080",
     "port for /metrics, /healthz, /readyz (-1: off, 0: any free port)"},
    {"horizon-ms", 0, "MOONCAKE_HORIZON_MS", OPT_INT64, OFF(horizon_ms), 1000, 86400000, "60000",
     "tasks due within this go straight to the wheel, later ones to the store"},
    {"wheel-lead-ms", 0, "MOONCAKE_WHEEL_LEAD_MS", OPT_INT64, OFF(wheel_lead_ms), 0, 10000, "300",
     "the wheel fires tasks this early, or in batches up to 100 ms less (never under 200 ms "
     "unless the lead is); the executor holds each task until it is due"},
    {"router-fires-due", 0, "MOONCAKE_ROUTER_FIRES_DUE", OPT_BOOL, OFF(router_fires_due), 0, 1,
     "true",
     "router: fire tasks due within the wheel's lead to ready itself, one transaction sooner "
     "(false while any wheel of a release before it runs: that wheel would fire them again)"},
    {"max-due-ms", 0, "MOONCAKE_MAX_DUE_MS", OPT_INT64, OFF(max_due_ms), 1000,
     INT64_C(3153600000000), "315360000000", "reject tasks due further ahead than this (10 years)"},
    {"executor-concurrency", 0, "MOONCAKE_EXECUTOR_CONCURRENCY", OPT_INT, OFF(executor_concurrency),
     1, 100000, "256", "executor: HTTP calls in flight at once"},
    {"executor-host-connections", 0, "MOONCAKE_EXECUTOR_HOST_CONNECTIONS", OPT_INT,
     OFF(executor_host_connections), 1, 100000, "64",
     "executor: open connections per callback host (kept alive and reused)"},
    {"executor-timeout-ms", 0, "MOONCAKE_EXECUTOR_TIMEOUT_MS", OPT_INT64, OFF(executor_timeout_ms),
     100, 3600000, "30000", "executor: whole-call timeout for tasks that set none"},
    {"executor-max-unfinished", 0, "MOONCAKE_EXECUTOR_MAX_UNFINISHED", OPT_INT,
     OFF(executor_max_unfinished), 1, 1000000, "1024",
     "executor: unfinished tasks per partition before it stops consuming it"},
    {"executor-snippet-bytes", 0, "MOONCAKE_EXECUTOR_SNIPPET_BYTES", OPT_INT,
     OFF(executor_snippet_bytes), 0, 65536, "4096",
     "executor: response body bytes kept in each attempt's Result (0: none)"},
    {"executor-response-headers", 0, "MOONCAKE_EXECUTOR_RESPONSE_HEADERS", OPT_SPECIAL,
     OFF(executor_response_headers), 0, 0, "content-type,location,retry-after,x-request-id",
     "executor: response headers kept in each attempt's Result (comma-separated names)"},
    {"record-version", 0, "MOONCAKE_RECORD_VERSION", OPT_INT, OFF(record_version), 1, 4, "4",
     "executor, retry: version of the Result records written, for older consumers of results"},
    {"results-retention-ms", 0, "MOONCAKE_RESULTS_RETENTION_MS", OPT_INT64,
     OFF(results_retention_ms), 60000, INT64_MAX, "259200000",
     "retention of the results topic, set when mooncake creates it"},
    {"advertised-url", 0, "MOONCAKE_ADVERTISED_URL", OPT_STR, OFF(advertised_url), 0, 0,
     "(http://<hostname>:<http-port>)",
     "view: the URL other instances reach this process's HTTP port at, to forward task "
     "questions here"},
    {"view-history-ms", 0, "MOONCAKE_VIEW_HISTORY_MS", OPT_INT64, OFF(view_history_ms), 0,
     INT64_MAX, "3600000",
     "view: how long a task in a final state stays answerable after it ended"},
    {"executor-allow-cidrs", 0, "MOONCAKE_EXECUTOR_ALLOW_CIDRS", OPT_LIST,
     OFF(executor_allow_cidrs), 0, 0, "",
     "executor: CIDRs exempt from the SSRF guard (comma-separated)"},
    {"endpoints-dns-refresh-ms", 0, "MOONCAKE_ENDPOINTS_DNS_REFRESH_MS", OPT_INT64,
     OFF(endpoints_dns_refresh_ms), 100, 3600000, "5000",
     "executor and gateway: resolve the endpoint groups' DNS names again this often"},
    {"endpoints-dns-server", 0, "MOONCAKE_ENDPOINTS_DNS_SERVER", OPT_LIST,
     OFF(endpoints_dns_server), 0, 0, "",
     "executor and gateway: the DNS server (IPv4 HOST:PORT) the endpoint groups' names are "
     "resolved with; \"\": the system's (/etc/resolv.conf)"},
    {"target-topics", 0, "MOONCAKE_TARGET_TOPICS", OPT_LIST, OFF(kafka_targets), 0, 0, "",
     "router, executor, view, jobs, gateway: topics each app may have records delivered to, "
     "app=topic "
     "pairs (topic* for a prefix, app * for every app) or @file; \"\" for none"},
    {"app-secrets", 0, "MOONCAKE_APP_SECRETS", OPT_LIST, OFF(app_secrets), 0, 0, "",
     "executor: webhook signing secrets, app=whsec_... pairs or @file (repeat an app to rotate)"},
    {"retry-max-attempts", 0, "MOONCAKE_RETRY_MAX_ATTEMPTS", OPT_INT, OFF(retry_max_attempts), 1,
     1000, "5", "retry: calls per task, the first included, for tasks without a policy"},
    {"retry-initial-backoff-ms", 0, "MOONCAKE_RETRY_INITIAL_BACKOFF_MS", OPT_INT64,
     OFF(retry_initial_backoff_ms), 1, INT64_C(31536000000), "1000",
     "retry: backoff ceiling before the second call"},
    {"retry-multiplier", 0, "MOONCAKE_RETRY_MULTIPLIER", OPT_DOUBLE, OFF(retry_multiplier), 1, 1000,
     "2.0", "retry: factor applied to the backoff ceiling after each failure"},
    {"retry-max-backoff-ms", 0, "MOONCAKE_RETRY_MAX_BACKOFF_MS", OPT_INT64,
     OFF(retry_max_backoff_ms), 1, INT64_C(31536000000), "3600000",
     "retry: upper bound of the backoff ceiling"},
    {"drain-timeout-ms", 0, "MOONCAKE_DRAIN_TIMEOUT_MS", OPT_INT, OFF(drain_timeout_ms), 0, 3600000,
     "10000",
     "executor: on SIGTERM, and when a rebalance moves its partitions, let calls in flight "
     "finish for up to this long (the next owner repeats what is left)"},
    {"jobs-ahead-ms", 0, "MOONCAKE_JOBS_AHEAD_MS", OPT_INT64, OFF(jobs_ahead_ms), 100, 3600000,
     "5000", "jobs: write each occurrence this long before it is due (at most half the horizon)"},
    {"alarm-webhooks", 0, "MOONCAKE_ALARM_WEBHOOKS", OPT_LIST, OFF(alarm_webhooks), 0, 0, "",
     "alarms: where each app's alarms go, app=https://... pairs or @file ('*' for every other "
     "app); none: no alarms"},
    {"alarm-interval-ms", 0, "MOONCAKE_ALARM_INTERVAL_MS", OPT_INT64, OFF(alarm_interval_ms), 1000,
     86400000, "60000", "alarms: at most one alarm call per app this often"},
    {"zoneinfo-dir", 0, "MOONCAKE_ZONEINFO_DIR", OPT_STR, OFF(zoneinfo_dir), 0, 0,
     "/usr/share/zoneinfo", "jobs and gateway: where the IANA time zone files are (tzdata)"},
    {"app-tokens", 0, "MOONCAKE_APP_TOKENS", OPT_LIST, OFF(app_tokens), 0, 0, "",
     "gateway: bearer tokens, appId=token pairs or @file (repeat an app to rotate)"},
    {"inner-tokens", 0, "MOONCAKE_INNER_TOKENS", OPT_LIST, OFF(inner_tokens), 0, 0, "",
     "gateway: service-to-service tokens for /inner/submit and the task questions "
     "(GET /api/task, /api/tasks, /api/stats; any appId), comma-separated or @file"},
    {"admin-tokens", 0, "MOONCAKE_ADMIN_TOKENS", OPT_LIST, OFF(admin_tokens), 0, 0, "",
     "gateway: operators' tokens for the console and the API: every route but /inner/submit, "
     "any appId, and GET /api/cluster; comma-separated or @file"},
    {"gateway-no-auth", 0, "MOONCAKE_GATEWAY_NO_AUTH", OPT_BOOL, OFF(gateway_no_auth), 0, 1,
     "false", "gateway: serve without tokens, every caller may act on every appId (local use)"},
    {"gateway-jobs-view", 0, "MOONCAKE_GATEWAY_JOBS_VIEW", OPT_BOOL, OFF(gateway_jobs_view), 0, 1,
     "true",
     "gateway: read the jobs table into memory for GET /jobs (about each job's state bytes + 40 "
     "B)"},
    {"gateway-max-body-bytes", 0, "MOONCAKE_GATEWAY_MAX_BODY_BYTES", OPT_INT64,
     OFF(gateway_max_body_bytes), 1024, 900000, "262144",
     "gateway: larger request bodies get 413 (a task must fit in one Kafka record)"},
    {"gateway-max-connections-per-ip", 0, "MOONCAKE_GATEWAY_MAX_CONNECTIONS_PER_IP", OPT_INT,
     OFF(gateway_max_connections_per_ip), 0, 1000000, "512",
     "gateway: open connections per client address (0: no limit; raise it behind a proxy)"},
    {"gateway-max-connections", 0, "MOONCAKE_GATEWAY_MAX_CONNECTIONS", OPT_INT,
     OFF(gateway_max_connections), 16, 1000000, "4096",
     "gateway: open connections at most (the open-files limit is raised to fit)"},
    {"gateway-threads", 0, "MOONCAKE_GATEWAY_THREADS", OPT_INT, OFF(gateway_threads), 1, 256, "2",
     "gateway: HTTP threads"},
    {"gateway-produce-timeout-ms", 0, "MOONCAKE_GATEWAY_PRODUCE_TIMEOUT_MS", OPT_INT,
     OFF(gateway_produce_timeout_ms), 100, 300000, "5000",
     "gateway: answer 503 when Kafka has not acknowledged a task within this"},
    {"gateway-tls-cert", 0, "MOONCAKE_GATEWAY_TLS_CERT", OPT_LIST, OFF(gateway_tls_cert), 0, 0, "",
     "gateway: PEM certificate (chain) file; with --gateway-tls-key the API is HTTPS"},
    {"gateway-tls-key", 0, "MOONCAKE_GATEWAY_TLS_KEY", OPT_LIST, OFF(gateway_tls_key), 0, 0, "",
     "gateway: PEM private key file"},
    {"gateway-idempotency-ttl-ms", 0, "MOONCAKE_GATEWAY_IDEMPOTENCY_TTL_MS", OPT_INT64,
     OFF(gateway_idempotency_ttl_ms), 1000, INT64_C(604800000), "86400000",
     "gateway: how long an Idempotency-Key's answer is remembered"},
    {"gateway-idempotency-max-keys", 0, "MOONCAKE_GATEWAY_IDEMPOTENCY_MAX_KEYS", OPT_INT,
     OFF(gateway_idempotency_max_keys), 1, 100000000, "100000",
     "gateway: Idempotency-Keys remembered at most (the oldest go first)"},
    {"commit-interval-ms", 0, "MOONCAKE_COMMIT_INTERVAL_MS", OPT_INT, OFF(commit_interval_ms), 1,
     60000, "100", "commit the open transaction at least this often"},
    {"offsets-commit-interval-ms", 0, "MOONCAKE_OFFSETS_COMMIT_INTERVAL_MS", OPT_INT,
     OFF(offsets_commit_interval_ms), 1, 60000, "1000",
     "commit a transaction that wrote nothing (input offsets only) at least this often"},
    {"commit-max-records", 0, "MOONCAKE_COMMIT_MAX_RECORDS", OPT_INT, OFF(commit_max_records), 1,
     1000000, "5000", "commit after this many input records"},
    {"transaction-timeout-ms", 0, "MOONCAKE_TRANSACTION_TIMEOUT_MS", OPT_INT,
     OFF(transaction_timeout_ms), 1000, 900000, "10000",
     "how long a crashed instance's open transaction can block readers"},
    {"instance-id", 0, "MOONCAKE_INSTANCE_ID", OPT_STR, OFF(instance_id), 0, 0, "(hostname)",
     "stable replica id: the transactional.id and group.instance.id (use the pod name)"},
    {"confluent-schema-ids", 0, "MOONCAKE_CONFLUENT_SCHEMA_IDS", OPT_SPECIAL, 0, 0, 0, "",
     "schema-registry ids that mean our Command schema (comma-separated)"},
    {"command-writer-schemas", 0, "MOONCAKE_COMMAND_WRITER_SCHEMAS", OPT_LIST,
     OFF(command_writer_schemas), 0, 0, "",
     "router: other versions of Command clients write with, read by schema resolution: .avsc "
     "files, comma-separated; ID=FILE also maps Confluent schema id ID to it"},
    {"job-command-writer-schemas", 0, "MOONCAKE_JOB_COMMAND_WRITER_SCHEMAS", OPT_LIST,
     OFF(job_command_writer_schemas), 0, 0, "",
     "jobs: other versions of JobCommand clients write with, read by schema resolution: .avsc "
     "files, comma-separated"},
    {"log-level", 0, "MOONCAKE_LOG_LEVEL", OPT_SPECIAL, 0, 0, 0, "info", "debug|info|warn|error"},
    {"log-format", 0, "MOONCAKE_LOG_FORMAT", OPT_SPECIAL, 0, 0, 0, "logfmt", "logfmt|json"},
};
#define N_OPTIONS (sizeof options / sizeof options[0])

bool mc_parse_int64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end != '\0' || end == s || isspace((unsigned char)s[0]))
        return false;
    if (v < min || v > max)
        return false;
    *out = v;
    return true;
}

static bool parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0)
            return (*out = true), true;
        if (strcasecmp(s, no[i]) == 0)
            return (*out = false), true;
    }
    return false;
}

static int set_confluent_ids(mc_config *cfg, const char *v, char *err, size_t errlen)
{
    free(cfg->confluent_ids);
    cfg->confluent_ids = NULL;
    cfg->n_confluent_ids = 0;
    if (!*v)
        return 0;
    size_t cap = 1;
    for (const char *p = v; *p; p++)
        cap += *p == ',';
    cfg->confluent_ids = calloc(cap, sizeof *cfg->confluent_ids);
    char *copy = strdup(v);
    if (!cfg->confluent_ids || !copy) {
        free(copy);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int64_t id;
        if (!mc_parse_int64(tok, 0, INT32_MAX, &id)) {
            snprintf(err, errlen,
                     "--confluent-schema-ids: '%s' is not a schema id (non-negative integer)", tok);
            free(copy);
            return -1;
        }
        cfg->confluent_ids[cfg->n_confluent_ids++] = (int32_t)id;
    }
    free(copy);
    return 0;
}

/* Headers that carry credentials: never kept, so no answer shows them. */
static const char *const secret_headers[] = {
    "set-cookie",         "cookie", "authorization", "proxy-authorization", "www-authenticate",
    "proxy-authenticate", NULL};

/* --executor-response-headers: names made of token characters, stored
 * lower-cased and comma-separated. */
static int set_response_headers(mc_config *cfg, const char *v, const char *source, char *err,
                                size_t errlen)
{
    char *list = malloc(strlen(v) + 1), *out = list;
    if (!list) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (const char *p = v; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *name = p;
        while (*p && *p != ',' && *p != ' ')
            p++;
        size_t len = (size_t)(p - name);
        if (!len)
            continue;
        if (len > 64) {
            snprintf(err, errlen, "%s: '%.20s...' is longer than 64 characters", source, name);
            free(list);
            return -1;
        }
        for (size_t i = 0; i < len; i++)
            if (!strchr("!#$%&'*+-.^_`|~", name[i]) && !isalnum((unsigned char)name[i])) {
                snprintf(err, errlen, "%s: '%.*s' is not a header name", source, (int)len, name);
                free(list);
                return -1;
            }
        for (const char *const *s = secret_headers; *s; s++)
            if (strlen(*s) == len && strncasecmp(*s, name, len) == 0) {
                snprintf(err, errlen, "%s: %s carries credentials and is never kept", source, *s);
                free(list);
                return -1;
            }
        if (out != list)
            *out++ = ',';
        for (size_t i = 0; i < len; i++)
            *out++ = (char)tolower((unsigned char)name[i]);
    }
    *out = '\0';
    free(cfg->executor_response_headers);
    cfg->executor_response_headers = list;
    return 0;
}

/* Applies one option value; source names the flag or env var in errors. */
static int apply(mc_config *cfg, const opt *o, const char *v, const char *source, char *err,
                 size_t errlen)
{
    char *base = (char *)cfg;
    int64_t n;
    switch (o->type) {
    case OPT_STR: {
        char **dst = (char **)(base + o->offset);
        if (!*v) {
            snprintf(err, errlen, "%s: must not be empty", source);
            return -1;
        }
        free(*dst);
        *dst = strdup(v);
        return *dst ? 0 : -1;
    }
    case OPT_LIST: {
        char **dst = (char **)(base + o->offset);
        struct sockaddr_in sa;
        if (o->offset == OFF(endpoints_dns_server) && *v && !mc_config_dns_server(v, &sa)) {
            snprintf(err, errlen, "%s: '%.100s' is not an IPv4 HOST:PORT (e.g. 10.96.0.10:53)",
                     source, v);
            return -1;
        }
        free(*dst);
        *dst = strdup(v);
        return *dst ? 0 : -1;
    }
    case OPT_DOUBLE: {
        char *end;
        errno = 0;
        double d = strtod(v, &end);
        if (errno || end == v || *end || !(d >= (double)o->min && d <= (double)o->max)) {
            snprintf(err, errlen, "%s: '%s' is not a number in [%lld, %lld]", source, v,
                     (long long)o->min, (long long)o->max);
            return -1;
        }
        *(double *)(base + o->offset) = d;
        return 0;
    }
    case OPT_INT:
    case OPT_INT64:
        if (!mc_parse_int64(v, o->min, o->max, &n)) {
            snprintf(err, errlen, "%s: '%s' is not an integer in [%lld, %lld]", source, v,
                     (long long)o->min, (long long)o->max);
            return -1;
        }
        if (o->type == OPT_INT)
            *(int *)(base + o->offset) = (int)n;
        else
            *(int64_t *)(base + o->offset) = n;
        return 0;
    case OPT_BOOL:
        if (!parse_bool(v, (bool *)(base + o->offset))) {
            snprintf(err, errlen, "%s: '%s' is not a boolean (true/false)", source, v);
            return -1;
        }
        return 0;
    case OPT_SPECIAL:
        if (strcmp(o->flag, "confluent-schema-ids") == 0)
            return set_confluent_ids(cfg, v, err, errlen);
        if (strcmp(o->flag, "executor-response-headers") == 0)
            return set_response_headers(cfg, v, source, err, errlen);
        if (strcmp(o->flag, "log-level") == 0) {
            if (!mc_log_level_parse(v, &cfg->log_level)) {
                snprintf(err, errlen, "%s: '%s' is not one of debug, info, warn, error", source, v);
                return -1;
            }
            return 0;
        }
        if (strcmp(o->flag, "log-format") == 0) {
            if (strcmp(v, "json") && strcmp(v, "logfmt")) {
                snprintf(err, errlen, "%s: '%s' is not logfmt or json", source, v);
                return -1;
            }
            cfg->log_json = strcmp(v, "json") == 0;
            return 0;
        }
        break;
    }
    snprintf(err, errlen, "%s: unhandled option", source);
    return -1;
}

int mc_config_add_kafka_prop(mc_config *cfg, const char *key, size_t keylen, const char *value,
                             size_t valuelen)
{
    mc_kafka_prop *p = realloc(cfg->kafka, (cfg->n_kafka + 1) * sizeof *p);
    if (!p)
        return -1;
    cfg->kafka = p;
    char *k = strndup(key, keylen), *v = strndup(value, valuelen);
    if (!k || !v) {
        free(k);
        free(v);
        return -1;
    }
    p[cfg->n_kafka++] = (mc_kafka_prop){k, v};
    return 0;
}

/* -X key=value */
static int add_kafka_kv(mc_config *cfg, const char *kv, char *err, size_t errlen)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) {
        snprintf(err, errlen, "-X '%s': expected key=value, e.g. -X security.protocol=SASL_SSL",
                 kv);
        return -1;
    }
    return mc_config_add_kafka_prop(cfg, kv, (size_t)(eq - kv), eq + 1, strlen(eq + 1));
}

static int set_defaults(mc_config *cfg, char *err, size_t errlen)
{
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const opt *o = &options[i];
        if (o->type == OPT_STR && o->def[0] == '(')
            continue; /* computed default */
        if (apply(cfg, o, o->def, o->flag, err, errlen) != 0)
            return -1;
    }
    return 0;
}

static const opt *find_long(const char *name, size_t len)
{
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (strlen(options[i].flag) == len && strncmp(options[i].flag, name, len) == 0)
            return &options[i];
    return NULL;
}

int mc_config_load(mc_config *cfg, int argc, char **argv, char **envp, char *err, size_t errlen)
{
    memset(cfg, 0, sizeof *cfg);
    if (set_defaults(cfg, err, errlen) != 0)
        return -1;

    /* Environment first, so flags override it. */
    for (char **e = envp; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq)
            continue;
        size_t klen = (size_t)(eq - *e);
        static const char kprefix[] = "MOONCAKE_KAFKA_";
        if (klen > sizeof kprefix - 1 && strncmp(*e, kprefix, sizeof kprefix - 1) == 0) {
            /* MOONCAKE_KAFKA_SASL_MECHANISMS -> sasl.mechanisms */
            char key[256];
            size_t n = 0;
            for (const char *p = *e + sizeof kprefix - 1; p < eq && n < sizeof key - 1; p++)
                key[n++] = *p == '_' ? '.' : (char)tolower((unsigned char)*p);
            if (mc_config_add_kafka_prop(cfg, key, n, eq + 1, strlen(eq + 1)) != 0)
                goto nomem;
            continue;
        }
        for (size_t i = 0; i < N_OPTIONS; i++) {
            if (strlen(options[i].env) == klen && strncmp(options[i].env, *e, klen) == 0) {
                char source[96];
                snprintf(source, sizeof source, "environment %s", options[i].env);
                if (apply(cfg, &options[i], eq + 1, source, err, errlen) != 0)
                    return -1;
            }
        }
    }

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return 1;
        const opt *o = NULL;
        const char *value = NULL;
        if (strcmp(a, "-X") == 0 || strncmp(a, "-X", 2) == 0) {
            const char *kv = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
            if (!kv) {
                snprintf(err, errlen, "-X needs key=value");
                return -1;
            }
            if (add_kafka_kv(cfg, kv, err, errlen) != 0)
                return -1;
            continue;
        }
        if (strncmp(a, "--", 2) == 0) {
            const char *name = a + 2;
            const char *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            o = find_long(name, len);
            if (o && eq)
                value = eq + 1;
            if (o && !eq && o->type == OPT_BOOL)
                value = "true";
            if (!o && len > 3 && strncmp(name, "no-", 3) == 0) {
                o = find_long(name + 3, len - 3);
                if (o && o->type == OPT_BOOL && !eq)
                    value = "false";
                else
                    o = NULL;
            }
        } else if (a[0] == '-' && a[1] && !a[2]) {
            for (size_t k = 0; k < N_OPTIONS; k++)
                if (options[k].short_flag == a[1])
                    o = &options[k];
        }
        if (!o) {
            snprintf(err, errlen, "unknown flag '%s' (see --help)", a);
            return -1;
        }
        if (!value) {
            if (i + 1 >= argc) {
                snprintf(err, errlen, "--%s needs a value", o->flag);
                return -1;
            }
            value = argv[++i];
        }
        char source[96];
        snprintf(source, sizeof source, "--%s", o->flag);
        if (apply(cfg, o, value, source, err, errlen) != 0)
            return -1;
    }

    if (cfg->instance_id) {
        /* It names the transactional ids, <role>-<id> and <role>-<id>~1
         * (processors/runner.c): with '~' allowed, instances "a" and "a~1"
         * would share one and fence each other in turn. */
        size_t ok = strspn(cfg->instance_id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                             "0123456789._-");
        if (!cfg->instance_id[0] || cfg->instance_id[ok]) {
            snprintf(err, errlen,
                     "--instance-id / MOONCAKE_INSTANCE_ID '%s': use letters, digits, '.', '_' "
                     "and '-' only (a pod name)",
                     cfg->instance_id);
            return -1;
        }
    } else {
        char host[256];
        if (gethostname(host, sizeof host) != 0 || !host[0])
            snprintf(host, sizeof host, "local");
        host[sizeof host - 1] = '\0';
        cfg->instance_id = strdup(host);
        if (!cfg->instance_id)
            goto nomem;
    }
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
    return -1;
}

void mc_config_free(mc_config *cfg)
{
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (options[i].type == OPT_STR || options[i].type == OPT_LIST)
            free(*(char **)((char *)cfg + options[i].offset));
    for (size_t i = 0; i < cfg->n_kafka; i++) {
        free(cfg->kafka[i].key);
        free(cfg->kafka[i].value);
    }
    free(cfg->kafka);
    free(cfg->confluent_ids);
    free(cfg->executor_response_headers);
    memset(cfg, 0, sizeof *cfg);
}

void mc_config_usage(FILE *out)
{
    fprintf(out, "Options (each flag has an environment twin; the flag wins):\n");
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const opt *o = &options[i];
        char flag[64];
        if (o->short_flag)
            snprintf(flag, sizeof flag, "-%c, --%s", o->short_flag, o->flag);
        else
            snprintf(flag, sizeof flag, "    --%s", o->flag);
        fprintf(out, "  %-30s %s\n  %-30s env %s, default %s\n", flag, o->help, "", o->env,
                o->def[0] ? o->def : "(none)");
    }
    fprintf(out, "  %-30s %s\n  %-30s env MOONCAKE_KAFKA_<PROPERTY> (dots as underscores)\n",
            "-X key=value", "any librdkafka property, e.g. -X security.protocol=SASL_SSL", "");
}

bool mc_config_unknown_env(char **envp, char *name, size_t namelen)
{
    static const char prefix[] = "MOONCAKE_", kafka[] = "MOONCAKE_KAFKA_";
    for (char **e = envp; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        size_t klen = eq ? (size_t)(eq - *e) : strlen(*e);
        if (strncmp(*e, prefix, sizeof prefix - 1) != 0 ||
            strncmp(*e, kafka, sizeof kafka - 1) == 0)
            continue;
        bool known = false;
        for (size_t i = 0; i < N_OPTIONS && !known; i++)
            known = strlen(options[i].env) == klen && strncmp(options[i].env, *e, klen) == 0;
        if (!known) {
            snprintf(name, namelen, "%.*s", (int)klen, *e);
            return true;
        }
    }
    return false;
}

const char *mc_topic_name(const mc_config *cfg, const char *suffix, char *buf, size_t buflen)
{
    snprintf(buf, buflen, "%s%s", cfg->topic_prefix, suffix);
    return buf;
}

/* ---------------------------------------------------------------------------
 * Lists given inline or in a file (app tokens, app secrets)
 * ------------------------------------------------------------------------ */

/* memset that the compiler may not drop as a dead store. */
static void wipe(void *p, size_t n)
{
    volatile unsigned char *v = p;
    while (n--)
        *v++ = 0;
}

void mc_trim(const char **p, size_t *len)
{
    while (*len && isspace((unsigned char)**p)) {
        (*p)++;
        (*len)--;
    }
    while (*len && isspace((unsigned char)(*p)[*len - 1]))
        (*len)--;
}

/* Reads a whole stream into a NUL-terminated buffer the caller wipes and frees.
 * Growing copies by hand, not realloc, so no copy of a secret is left behind
 * in freed memory. */
static char *read_stream(FILE *f, const char *path, const char *what, size_t *len, char *err,
                         size_t errlen)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        char *bigger = malloc(cap * 2);
        if (bigger)
            memcpy(bigger, buf, n);
        wipe(buf, n);
        free(buf);
        buf = bigger;
        cap *= 2;
    }
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory reading '%s'", what, path);
        return NULL;
    }
    if (ferror(f)) {
        wipe(buf, n);
        free(buf);
        snprintf(err, errlen, "%s: cannot read '%s'", what, path);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static char *read_secret_file(const char *path, const char *what, size_t *len, char *err,
                              size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open '%s': %s", what, path, strerror(errno));
        return NULL;
    }
    char *buf = read_stream(f, path, what, len, err, errlen);
    fclose(f);
    return buf;
}

char *mc_config_read_file(const char *path, const char *what, size_t *len, char *err, size_t errlen)
{
    size_t n = 0;
    char *text = strcmp(path, "-") == 0
                     ? read_stream(stdin, "standard input", what, &n, err, errlen)
                     : read_secret_file(path, what, &n, err, errlen);
    if (text && len)
        *len = n;
    return text;
}

/* Calls each() on every non-blank piece of text[0..len) split at sep,
 * skipping pieces that start with '#' when comments is set. */
static int each_piece(const char *text, size_t len, char sep, bool comments, const char *file,
                      mc_entry_fn each, void *arg, char *err, size_t errlen)
{
    size_t number = 0;
    const char *end = text + len;
    for (const char *p = text, *stop = NULL; stop != end; p = stop + 1) {
        stop = memchr(p, sep, (size_t)(end - p));
        if (!stop)
            stop = end;
        number++;
        const char *entry = p;
        size_t entry_len = (size_t)(stop - p);
        mc_trim(&entry, &entry_len);
        if (entry_len == 0 || (comments && entry[0] == '#'))
            continue;
        char where[300];
        if (file)
            snprintf(where, sizeof where, "'%s' line %zu", file, number);
        else
            snprintf(where, sizeof where, "entry %zu", number);
        if (each(arg, entry, entry_len, where, err, errlen) != 0)
            return -1;
    }
    return 0;
}

int mc_config_each_entry(const char *spec, const char *what, mc_entry_fn each, void *arg, char *err,
                         size_t errlen)
{
    const char *text = spec ? spec : "";
    size_t len = strlen(text);
    mc_trim(&text, &len);
    if (!(len && text[0] == '@'))
        return each_piece(text, len, ',', false, NULL, each, arg, err, errlen);
    char path[4096];
    if (len - 1 >= sizeof path) {
        snprintf(err, errlen, "%s: file name too long", what);
        return -1;
    }
    memcpy(path, text + 1, len - 1);
    path[len - 1] = '\0';
    size_t file_len = 0;
    char *file = read_secret_file(path, what, &file_len, err, errlen);
    if (!file)
        return -1;
    int rc = each_piece(file, file_len, '\n', true, path, each, arg, err, errlen);
    wipe(file, file_len);
    free(file);
    return rc;
}

bool mc_config_dns_server(const char *text, struct sockaddr_in *out)
{
    char host[64];
    const char *colon = strrchr(text, ':');
    size_t n = colon ? (size_t)(colon - text) : 0;
    char *end;
    long port = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || n == 0 || n >= sizeof host || !isdigit((unsigned char)colon[1]) || *end ||
        port < 1 || port > 65535)
        return false;
    memcpy(host, text, n);
    host[n] = '\0';
    memset(out, 0, sizeof *out);
    out->sin_family = AF_INET;
    out->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, host, &out->sin_addr) == 1;
}
