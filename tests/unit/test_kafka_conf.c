/* The librdkafka configuration every mooncake client starts from
 * (mc_kafka_conf_new): mooncake's defaults, and -X winning over them. */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "kafka.h"

/* The value of key in conf, "" when unset. */
static const char *get(rd_kafka_conf_t *conf, const char *key, char *buf, size_t len)
{
    size_t n = len;
    if (rd_kafka_conf_get(conf, key, buf, &n) != RD_KAFKA_CONF_OK)
        buf[0] = '\0';
    return buf;
}

static rd_kafka_conf_t *conf_from(char **argv, mc_config *cfg, mc_logger *lg)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    char *envp[] = {NULL};
    char err[256] = "";
    CHECK(mc_config_load(cfg, argc, argv, envp, err, sizeof err) == 0, "%s", err);
    *lg = (mc_logger){cfg->log_level, cfg->log_json, "test"};
    rd_kafka_conf_t *conf = mc_kafka_conf_new(cfg, lg, err, sizeof err);
    CHECK(conf != NULL, "%s", err);
    return conf;
}

/* No client pushes metrics to the broker (each stop would wait up to 1 s for a
 * last push a broker outage never takes), unless -X asks for it. */
static void metrics_push(void)
{
    if (rd_kafka_version() < 0x020500ff)
        return; /* no such property before librdkafka 2.5 */
    char buf[64];
    mc_config cfg;
    mc_logger lg;
    char *plain[] = {"router", "-b", "127.0.0.1:9", NULL};
    rd_kafka_conf_t *conf = conf_from(plain, &cfg, &lg);
    CHECK(strcmp(get(conf, "enable.metrics.push", buf, sizeof buf), "false") == 0,
          "enable.metrics.push by default: %s", buf);
    CHECK(strcmp(get(conf, "bootstrap.servers", buf, sizeof buf), "127.0.0.1:9") == 0, "%s", buf);
    rd_kafka_conf_destroy(conf);
    mc_config_free(&cfg);

    char *on[] = {"router", "-b", "127.0.0.1:9", "-X", "enable.metrics.push=true", NULL};
    conf = conf_from(on, &cfg, &lg);
    CHECK(strcmp(get(conf, "enable.metrics.push", buf, sizeof buf), "true") == 0,
          "-X enable.metrics.push=true wins: %s", buf);
    rd_kafka_conf_destroy(conf);
    mc_config_free(&cfg);
}

int main(void)
{
    metrics_push();
    return check_exit("test_kafka_conf");
}
