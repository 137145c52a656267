/* Configuration shared by every role: command-line flags, each with an
 * environment twin (the flag wins), and librdkafka properties passed through
 * with -X key=value or MOONCAKE_KAFKA_<property> so SASL/SSL work unchanged. */
#ifndef MOONCAKE_CONFIG_H
#define MOONCAKE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <netinet/in.h>

#include "log.h"

typedef struct mc_kafka_prop {
    char *key;
    char *value;
} mc_kafka_prop;

typedef struct mc_config {
    char *bootstrap_servers;
    char *topic_prefix;
    int partitions;         /* for topic creation */
    int replication_factor; /* -1: the broker's default */
    bool create_topics;
    char *http_bind;
    int http_port; /* -1: no HTTP endpoint */
    int64_t horizon_ms;
    int64_t wheel_lead_ms; /* the wheel fires up to this early (the executor holds tasks) */
    bool router_fires_due; /* the router fires what is due within the lead itself */
    int64_t max_due_ms;    /* tasks due further ahead than this are invalid */
    /* executor */
    int executor_concurrency;         /* calls in flight at once */
    int executor_host_connections;    /* connections per host */
    int64_t executor_timeout_ms;      /* for tasks that give no timeout */
    int executor_max_unfinished;      /* per partition, before it is paused */
    int executor_snippet_bytes;       /* response body bytes kept in Results and Attempts */
    char *executor_response_headers;  /* lower-case names kept, comma-separated; "" none */
    int record_version;               /* of Result and Attempt records written */
    char *advertised_url;             /* view: NULL means http://<hostname>:<http-port> */
    int64_t view_history_ms;          /* view: a finished task is forgotten after this */
    int64_t results_retention_ms;     /* of the results topic, when it is created */
    char *executor_allow_cidrs;       /* exempt from the SSRF guard; "" for none */
    char *app_secrets;                /* webhook signing secrets; "" for none */
    char *kafka_targets;              /* app=topic allow-list of Kafka targets; "" for none */
    int64_t endpoints_dns_refresh_ms; /* endpoint groups' DNS names resolved this often */
    char *endpoints_dns_server;       /* HOST:PORT; "" for the system's resolver */
    /* retry defaults, for tasks without their own policy */
    int retry_max_attempts;
    int64_t retry_initial_backoff_ms;
    double retry_multiplier;
    int64_t retry_max_backoff_ms;
    int drain_timeout_ms; /* on SIGTERM, wait this long for calls in flight */
    /* jobs */
    int64_t jobs_ahead_ms; /* occurrences are written this long before they are due */
    char *zoneinfo_dir;    /* IANA time zone files */
    /* alarms */
    char *alarm_webhooks;      /* app=url pairs or @file; "" for none */
    int64_t alarm_interval_ms; /* at most one alarm per app this often */
    /* gateway */
    char *app_tokens;                   /* appId=token pairs or @file; "" for none */
    char *inner_tokens;                 /* tokens or @file; "" for none */
    char *admin_tokens;                 /* tokens or @file; "" for none */
    bool gateway_no_auth;               /* serve without tokens (local use) */
    bool gateway_jobs_view;             /* keep a view of the jobs table for GET /jobs */
    int64_t gateway_max_body_bytes;     /* larger bodies get 413 */
    int gateway_max_connections_per_ip; /* 0: no limit */
    int gateway_max_connections;
    int gateway_threads;
    int gateway_produce_timeout_ms;           /* no acknowledgement by then: 503 */
    char *gateway_tls_cert, *gateway_tls_key; /* PEM file paths; "" for plain HTTP */
    int64_t gateway_idempotency_ttl_ms;
    int gateway_idempotency_max_keys;
    int commit_interval_ms;
    int offsets_commit_interval_ms;
    int commit_max_records;
    int transaction_timeout_ms;
    char *instance_id;                /* stable per replica: part of the transactional.id */
    char *command_writer_schemas;     /* .avsc paths (ID=path for Confluent); "" for none */
    char *job_command_writer_schemas; /* .avsc paths of other JobCommand versions */
    int32_t *confluent_ids;
    size_t n_confluent_ids;
    mc_log_level log_level;
    bool log_json;
    mc_kafka_prop *kafka; /* from MOONCAKE_KAFKA_* first, then -X in order */
    size_t n_kafka;
} mc_config;

/* Fills cfg from the environment and then argv (argv[0] is the role name and
 * is skipped). On a bad flag or value writes one line saying what to fix into
 * err and returns -1; on -h/--help returns 1 (the caller prints usage).
 * The caller owns cfg's contents: release with mc_config_free(). */
int mc_config_load(mc_config *cfg, int argc, char **argv, char **envp, char *err, size_t errlen);
void mc_config_free(mc_config *cfg);
/* Appends the librdkafka property key=value (lengths given; copied, and
 * freed by mc_config_free) to cfg. 0, or -1 out of memory (cfg unchanged).
 * The thread that owns cfg. */
int mc_config_add_kafka_prop(mc_config *cfg, const char *key, size_t keylen, const char *value,
                             size_t valuelen);

/* Prints every flag with its environment name and default. */
void mc_config_usage(FILE *out);
/* Reads a whole file ("-": standard input) into a NUL-terminated buffer
 * (length in *len when len is not NULL; the NUL not counted). Caller frees
 * it. NULL with "<what>: cannot open '<path>': <reason>" in err. */
char *mc_config_read_file(const char *path, const char *what, size_t *len, char *err,
                          size_t errlen);
/* Finds an environment variable that looks like ours (MOONCAKE_*) but names
 * no option (MOONCAKE_KAFKA_* passthrough excepted): copies its name into
 * name and returns true. The usual cause is a typo or a removed setting. */
bool mc_config_unknown_env(char **envp, char *name, size_t namelen);

/* Parses --endpoints-dns-server's HOST:PORT (an IPv4 address and a port) into out;
 * false when it is not one. Any thread. */
bool mc_config_dns_server(const char *text, struct sockaddr_in *out);

/* Full topic name for a suffix ("tasks" -> "mooncake.tasks") into buf. */
const char *mc_topic_name(const mc_config *cfg, const char *suffix, char *buf, size_t buflen);

/* Parses a positive/non-negative integer strictly (no trailing junk, range
 * checked). Returns false when s is not a decimal integer in [min, max]. */
bool mc_parse_int64(const char *s, int64_t min, int64_t max, int64_t *out);

/* Narrows [*p, *p + *len) to exclude surrounding whitespace. */
void mc_trim(const char **p, size_t *len);

/* Called by mc_config_each_entry for one entry (trimmed, not empty, not NUL
 * terminated); where names it for messages ("entry 2", "'/etc/x' line 7").
 * Returns 0, or -1 with a line in err. */
typedef int (*mc_entry_fn)(void *arg, const char *entry, size_t len, const char *where, char *err,
                           size_t errlen);
/* Walks a list option: "a,b,c" inline, or "@path", the file's lines with
 * blank lines and '#' comments skipped. what prefixes messages about the file
 * ("MOONCAKE_APP_TOKENS: cannot open ..."). The file's bytes are wiped after
 * use, since these lists hold secrets. Returns 0, or -1 with a line in err. */
int mc_config_each_entry(const char *spec, const char *what, mc_entry_fn each, void *arg, char *err,
                         size_t errlen);

#endif
