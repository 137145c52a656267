/* Configuration: flags beat environment, librdkafka passthrough from both,
 * and every bad value is refused with a line naming the flag or variable. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "config.h"

static int load(mc_config *cfg, char **argv, char **envp, char *err)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    return mc_config_load(cfg, argc, argv, envp, err, 256);
}

static void defaults(void)
{
    mc_config cfg;
    char err[256] = "";
    char *argv[] = {"router", NULL};
    char *envp[] = {NULL};
    CHECK(load(&cfg, argv, envp, err) == 0, "%s", err);
    CHECK(strcmp(cfg.topic_prefix, "mooncake.") == 0, "%s", cfg.topic_prefix);
    CHECK(cfg.horizon_ms == 60000, "%lld", (long long)cfg.horizon_ms);
    CHECK(cfg.http_port == 8080, "%d", cfg.http_port);
    CHECK(cfg.create_topics, "create_topics");
    CHECK(cfg.instance_id && cfg.instance_id[0], "instance id from hostname");
    char buf[64];
    CHECK(strcmp(mc_topic_name(&cfg, "tasks", buf, sizeof buf), "mooncake.tasks") == 0, "%s", buf);
    mc_config_free(&cfg);
}

static void flags_beat_environment(void)
{
    mc_config cfg;
    char err[256] = "";
    char *argv[] = {"router",
                    "--horizon-ms=5000",
                    "-b",
                    "k1:9092",
                    "--no-create-topics",
                    "-X",
                    "security.protocol=SASL_SSL",
                    "-Xlinger.ms=7",
                    NULL};
    char *envp[] = {"MOONCAKE_HORIZON_MS=9000",
                    "MOONCAKE_TOPIC_PREFIX=x.",
                    "MOONCAKE_KAFKA_SASL_MECHANISMS=PLAIN",
                    "MOONCAKE_CONFLUENT_SCHEMA_IDS=4,17",
                    "UNRELATED=1",
                    NULL};
    CHECK(load(&cfg, argv, envp, err) == 0, "%s", err);
    CHECK(cfg.horizon_ms == 5000, "flag wins: %lld", (long long)cfg.horizon_ms);
    CHECK(strcmp(cfg.topic_prefix, "x.") == 0, "env applies: %s", cfg.topic_prefix);
    CHECK(strcmp(cfg.bootstrap_servers, "k1:9092") == 0, "%s", cfg.bootstrap_servers);
    CHECK(!cfg.create_topics, "--no-create-topics");
    CHECK(cfg.n_kafka == 3, "%zu kafka props", cfg.n_kafka);
    if (cfg.n_kafka == 3) {
        CHECK(strcmp(cfg.kafka[0].key, "sasl.mechanisms") == 0, "%s", cfg.kafka[0].key);
        CHECK(strcmp(cfg.kafka[0].value, "PLAIN") == 0, "%s", cfg.kafka[0].value);
        CHECK(strcmp(cfg.kafka[1].key, "security.protocol") == 0, "%s", cfg.kafka[1].key);
        CHECK(strcmp(cfg.kafka[2].key, "linger.ms") == 0 && strcmp(cfg.kafka[2].value, "7") == 0,
              "%s=%s", cfg.kafka[2].key, cfg.kafka[2].value);
    }
    CHECK(cfg.n_confluent_ids == 2 && cfg.confluent_ids[1] == 17, "%zu ids", cfg.n_confluent_ids);
    mc_config_free(&cfg);
}

static void refuses(char **argv, char **envp, const char *needle)
{
    mc_config cfg;
    char err[256] = "";
    int rc = load(&cfg, argv, envp, err);
    CHECK(rc == -1, "%s accepted", needle);
    CHECK(strstr(err, needle) != NULL, "error '%s' should mention '%s'", err, needle);
    mc_config_free(&cfg);
}

static void bad_values(void)
{
    char *none[] = {NULL};
    refuses((char *[]){"router", "--horizon-ms", "soon", NULL}, none, "--horizon-ms");
    refuses((char *[]){"router", "--horizon-ms", "10", NULL}, none, "[1000, 86400000]");
    refuses((char *[]){"router", "--partitions", "3x", NULL}, none, "--partitions");
    refuses((char *[]){"router", "--bogus", NULL}, none, "unknown flag '--bogus'");
    refuses((char *[]){"router", "--topic-prefix", NULL}, none, "needs a value");
    refuses((char *[]){"router", "-X", "nokey", NULL}, none, "key=value");
    refuses((char *[]){"router", "--log-level", "loud", NULL}, none, "debug, info, warn, error");
    refuses((char *[]){"router", "--create-topics=maybe", NULL}, none, "boolean");
    refuses((char *[]){"router", NULL}, (char *[]){"MOONCAKE_PARTITIONS=0", NULL},
            "environment MOONCAKE_PARTITIONS");
    refuses((char *[]){"router", NULL}, (char *[]){"MOONCAKE_CONFLUENT_SCHEMA_IDS=1,x", NULL},
            "'x' is not a schema id");
    refuses((char *[]){"router", "--topic-prefix", "", NULL}, none, "must not be empty");
    refuses((char *[]){"router", "--instance-id", "pod~1", NULL}, none, "'pod~1': use letters");
    refuses((char *[]){"router", NULL}, (char *[]){"MOONCAKE_INSTANCE_ID=a/b", NULL},
            "MOONCAKE_INSTANCE_ID 'a/b'");
    refuses((char *[]){"router", "--instance-id=", NULL}, none, "--instance-id");
    refuses((char *[]){"executor", "--executor-response-headers=Content-Type,Set-Cookie", NULL},
            none, "set-cookie carries credentials and is never kept");
    refuses((char *[]){"executor", NULL},
            (char *[]){"MOONCAKE_EXECUTOR_RESPONSE_HEADERS=x-ok,Authorization", NULL},
            "authorization carries credentials");
    refuses((char *[]){"executor", "--executor-response-headers=x-a,bad:name", NULL}, none,
            "'bad:name' is not a header name");
    refuses((char *[]){"executor", "--record-version=5", NULL}, none, "--record-version");
    refuses((char *[]){"executor", "--endpoints-dns-server=ns.local:53", NULL}, none,
            "--endpoints-dns-server");
    refuses((char *[]){"gateway", "--endpoints-dns-server=10.0.0.1", NULL}, none,
            "--endpoints-dns-server");
    refuses((char *[]){"gateway", "--endpoints-dns-server=10.0.0.1:0", NULL}, none,
            "--endpoints-dns-server");
    refuses((char *[]){"executor",
                       "--executor-response-headers=x-"
                       "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                       NULL},
            none, "longer than 64 characters");
    refuses((char *[]){"router", "--results-retention-ms=1000", NULL}, none,
            "--results-retention-ms");
}

/* Response header names are kept lower-cased, in order, spaces dropped. */
static void response_headers(void)
{
    mc_config cfg;
    char err[256] = "";
    char *none[] = {NULL};
    CHECK(load(&cfg, (char *[]){"executor", NULL}, none, err) == 0, "%s", err);
    CHECK(strcmp(cfg.executor_response_headers, "content-type,location,retry-after,x-request-id") ==
              0,
          "default %s", cfg.executor_response_headers);
    CHECK(cfg.executor_snippet_bytes == 4096 && cfg.record_version == 4 &&
          cfg.results_retention_ms == 259200000);
    CHECK(cfg.endpoints_dns_refresh_ms == 5000 && strcmp(cfg.endpoints_dns_server, "") == 0);
    mc_config_free(&cfg);
    CHECK(load(&cfg, (char *[]){"gateway", "--endpoints-dns-server=127.0.0.1:5353", NULL}, none,
               err) == 0,
          "%s", err);
    struct sockaddr_in sa;
    CHECK(mc_config_dns_server(cfg.endpoints_dns_server, &sa) && ntohs(sa.sin_port) == 5353);
    mc_config_free(&cfg);
    CHECK(load(&cfg, (char *[]){"executor", "--executor-response-headers= X-Trace ,ETag,,", NULL},
               none, err) == 0,
          "%s", err);
    CHECK(strcmp(cfg.executor_response_headers, "x-trace,etag") == 0, "%s",
          cfg.executor_response_headers);
    mc_config_free(&cfg);
}

static void help(void)
{
    mc_config cfg;
    char err[256] = "";
    CHECK(load(&cfg, (char *[]){"router", "-h", NULL}, (char *[]){NULL}, err) == 1, "-h");
    mc_config_free(&cfg);
    FILE *f = tmpfile();
    mc_config_usage(f);
    long n = ftell(f);
    rewind(f);
    char text[16384] = "";
    size_t got = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[got] = '\0';
    CHECK(n > 0 && strstr(text, "MOONCAKE_HORIZON_MS") && strstr(text, "-X key=value"),
          "usage lists env names and -X");
}

int main(void)
{
    defaults();
    flags_beat_environment();
    bad_values();
    response_headers();
    help();
    return check_exit("test_config");
}
