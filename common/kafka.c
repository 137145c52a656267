/* librdkafka configuration, log routing and topic creation for every role. */
#include "kafka.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"

/* How long the broker may take to create topics (CreateTopics' operation
 * timeout), and so how long a topic just created may take to show in
 * metadata: a slow broker answers the create before every broker's
 * metadata cache has the topic. */
#define TOPIC_CREATE_TIMEOUT_MS 30000
#define TOPIC_VISIBLE_POLL_MS 200

/* The jobs changelog takes a JobState per occurrence written, the alarms
 * changelog a batch per transaction that touched it: with the broker's 1 GiB
 * segments (compaction never touches the active one) a restore would replay
 * minutes of history. Small segments, rolled at least every 10 minutes, and
 * an eager cleaner keep each near one record per key. */
static const char *const small_changelog_configs[] = {
    "segment.bytes", "67108864", "segment.ms", "600000", "min.cleanable.dirty.ratio", "0.1", NULL};

const mc_topic_spec mc_topic_specs[] = {
    {"tasks", "delete", "604800000", "commands from clients and the gateway", 0, NULL, NULL},
    {"store", "compact", NULL, "far-future tasks: the task table", 0, NULL, NULL},
    {"wheel", "delete", "604800000", "tasks within the horizon, stamped with a version", 0, NULL,
     NULL},
    {"ready", "delete", "604800000", "tasks due now, for the executor", 0, NULL, NULL},
    {"retry", "delete", "604800000", "failed attempts", 0, NULL, NULL},
    {"results", "delete", NULL, "the result of every attempt (retention: --results-retention-ms)",
     0, NULL, NULL},
    {"views", "compact", NULL, "the view's task table (its changelog)", 0, NULL, "view"},
    {"dead", "delete", "2592000000", "dead letters: bad input and exhausted tasks", 0, NULL, NULL},
    {"job-commands", "delete", "604800000", "recurring jobs: puts, actions, finished occurrences",
     MC_TOPIC_OWN_COUNT, NULL, NULL},
    {"jobs", "compact", NULL, "recurring jobs: the job table (the jobs processor's changelog)",
     MC_TOPIC_OWN_COUNT, small_changelog_configs, NULL},
    {"chains", "compact", NULL,
     "serial chains: the links each holds (the jobs processor's changelog)", MC_TOPIC_OWN_COUNT,
     small_changelog_configs, NULL},
    {"broadcasts", "compact", NULL,
     "sharding broadcasts: the shards each waits for (the jobs processor's changelog)",
     MC_TOPIC_OWN_COUNT, small_changelog_configs, NULL},
    {"alarm-events", "delete", "604800000", "alarms: dead letters relayed by app",
     MC_TOPIC_OWN_COUNT, NULL, "alarms"},
    {"alarms", "compact", NULL, "alarms: each app's batch of dead letters (changelog)",
     MC_TOPIC_OWN_COUNT, small_changelog_configs, "alarms"},
    {"layout", "compact", NULL, "the partition layout (mooncakectl partitions grow)", 1, NULL,
     NULL},
    {"endpoints", "compact", NULL, "endpoint groups and admission limits (the gateway's /groups)",
     1, NULL, NULL},
};
const size_t mc_n_topic_specs = sizeof mc_topic_specs / sizeof mc_topic_specs[0];
_Static_assert(sizeof mc_topic_specs / sizeof mc_topic_specs[0] == MC_N_TOPIC_SPECS,
               "MC_N_TOPIC_SPECS counts mc_topic_specs");

/* librdkafka calls this from its own threads; mc_log writes one line with one
 * write(2), so that is safe. */
static void log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    const mc_logger *lg = rd_kafka_opaque(rk);
    mc_log_level l = level <= 3   ? MC_LOG_ERROR
                     : level <= 4 ? MC_LOG_WARN
                     : level <= 6 ? MC_LOG_INFO
                                  : MC_LOG_DEBUG;
    mc_log(lg, l, buf, "source", "librdkafka", "facility", fac, "client", rd_kafka_name(rk),
           (const char *)NULL);
}

bool mc_kafka_library_ok(char *err, size_t errlen)
{
    /* The last byte is the pre-release designation (0xff: a release). */
    if ((rd_kafka_version() & ~0xff) >= (RD_KAFKA_VERSION & ~0xff))
        return true;
    snprintf(err, errlen,
             "librdkafka %s is loaded, but this binary was built against %d.%d.%d: make the "
             "one it was built with findable (LD_LIBRARY_PATH, or run tools/setup again)",
             rd_kafka_version_str(), RD_KAFKA_VERSION >> 24, (RD_KAFKA_VERSION >> 16) & 0xff,
             (RD_KAFKA_VERSION >> 8) & 0xff);
    return false;
}

int mc_kafka_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value, char *err,
                      size_t errlen)
{
    char errstr[512];
    if (rd_kafka_conf_set(conf, key, value, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
        snprintf(err, errlen, "Kafka property %s=%s: %s", key, value, errstr);
        return -1;
    }
    return 0;
}

int mc_kafka_conf_reader(rd_kafka_conf_t *conf, const char *group, char *err, size_t errlen)
{
    return mc_kafka_conf_set(conf, "group.id", group, err, errlen) ||
                   mc_kafka_conf_set(conf, "isolation.level", "read_committed", err, errlen) ||
                   mc_kafka_conf_set(conf, "enable.auto.commit", "false", err, errlen) ||
                   mc_kafka_conf_set(conf, "enable.auto.offset.store", "false", err, errlen) ||
                   mc_kafka_conf_set(conf, "enable.partition.eof", "true", err, errlen) ||
                   mc_kafka_conf_set(conf, "auto.offset.reset", "earliest", err, errlen)
               ? -1
               : 0;
}

rd_kafka_t *mc_kafka_new(rd_kafka_type_t type, rd_kafka_conf_t *conf, const char *what, char *err,
                         size_t errlen)
{
    char errstr[512];
    rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
    if (!rk) {
        rd_kafka_conf_destroy(conf);
        snprintf(err, errlen, "creating the %s: %s", what, errstr);
    }
    return rk;
}

int mc_kafka_conf_default(const mc_config *cfg, rd_kafka_conf_t *conf, const char *key,
                          const char *value, char *err, size_t errlen)
{
    for (size_t i = 0; i < cfg->n_kafka; i++)
        if (strcmp(cfg->kafka[i].key, key) == 0)
            return 0;
    return mc_kafka_conf_set(conf, key, value, err, errlen);
}

rd_kafka_conf_t *mc_kafka_conf_new(const mc_config *cfg, void *log_opaque, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (mc_kafka_conf_set(conf, "bootstrap.servers", cfg->bootstrap_servers, err, errlen))
        goto fail;
    if (mc_kafka_conf_set(conf, "client.id", "mooncake", err, errlen))
        goto fail;
    /* No client metrics pushed to the broker (KIP-714, librdkafka 2.5 and later): nothing of
     * ours reads them, and each client's destroy waits up to 1 s for a last push, which a
     * broker outage turns into a second per client at every stop. -X may turn it back on. */
    if (rd_kafka_version() >= 0x020500ff &&
        mc_kafka_conf_set(conf, "enable.metrics.push", "false", err, errlen))
        goto fail;
    for (size_t i = 0; i < cfg->n_kafka; i++)
        if (mc_kafka_conf_set(conf, cfg->kafka[i].key, cfg->kafka[i].value, err, errlen))
            goto fail;
    rd_kafka_conf_set_opaque(conf, log_opaque);
    rd_kafka_conf_set_log_cb(conf, log_cb);
    return conf;
fail:
    rd_kafka_conf_destroy(conf);
    return NULL;
}

int mc_advertised_client_id(const mc_config *cfg, char *out, size_t outlen, char *err,
                            size_t errlen)
{
    if (cfg->advertised_url && cfg->advertised_url[0]) {
        snprintf(out, outlen, MC_ADVERTISED_PREFIX "%s", cfg->advertised_url);
        return 0;
    }
    char host[256];
    if (cfg->http_port <= 0 || gethostname(host, sizeof host) != 0) {
        snprintf(err, errlen,
                 "set --advertised-url: other instances forward task questions to it (no fixed "
                 "--http-port to make one from)");
        return -1;
    }
    host[sizeof host - 1] = '\0';
    snprintf(out, outlen, MC_ADVERTISED_PREFIX "http://%s:%d", host, cfg->http_port);
    return 0;
}

int32_t mc_key_partition(const void *key, size_t keylen, int32_t n)
{
    /* librdkafka's murmur2 partitioner does not look at its topic handle;
     * it is the same function as partitioner=murmur2_random for a keyed
     * record, so this can never disagree with our producers. */
    return rd_kafka_msg_partitioner_murmur2(NULL, key, keylen, n, NULL, NULL);
}

mc_record mc_kafka_record(const rd_kafka_message_t *m, const char *topic)
{
    rd_kafka_timestamp_type_t tstype;
    return (mc_record){.topic = topic,
                       .partition = m->partition,
                       .offset = m->offset,
                       .key = m->key,
                       .key_len = m->key_len,
                       .value = m->payload,
                       .value_len = m->len,
                       .timestamp_ms = rd_kafka_message_timestamp(m, &tstype),
                       .kafka_message = m};
}

int mc_topic_partition_count(rd_kafka_t *rk, const char *topic, int timeout_ms, char *err,
                             size_t errlen)
{
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    if (!rkt) {
        snprintf(err, errlen, "topic handle for %s: %s", topic,
                 rd_kafka_err2str(rd_kafka_last_error()));
        return -1;
    }
    const rd_kafka_metadata_t *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms);
    rd_kafka_topic_destroy(rkt);
    if (e) {
        snprintf(err, errlen, "metadata of %s: %s", topic, rd_kafka_err2str(e));
        return -1;
    }
    int n = md->topic_cnt == 1 && !md->topics[0].err ? md->topics[0].partition_cnt : -1;
    if (md->topic_cnt == 1 && (md->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
                               md->topics[0].err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC))
        n = MC_TOPIC_MISSING;
    if (n < 0)
        snprintf(err, errlen, "metadata of %s: %s", topic,
                 md->topic_cnt == 1 ? rd_kafka_err2str(md->topics[0].err) : "topic missing");
    rd_kafka_metadata_destroy(md);
    return n;
}

int mc_list_end_offsets(rd_kafka_t *rk, const char *const *topics, size_t n_topics,
                        const int32_t *partitions, size_t n_partitions, int64_t *ends,
                        int timeout_ms, char *err, size_t errlen)
{
    size_t n = n_topics * n_partitions;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)(n ? n : 1));
    for (size_t p = 0; p < n_partitions; p++)
        for (size_t t = 0; t < n_topics; t++)
            rd_kafka_topic_partition_list_add(l, topics[t], partitions[p])->offset =
                RD_KAFKA_OFFSET_END;
    rd_kafka_resp_err_t e = n ? rd_kafka_offsets_for_times(rk, l, timeout_ms) : 0;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        const rd_kafka_topic_partition_t *p = &l->elems[i];
        ends[i] = !e && !p->err && p->offset >= 0 ? p->offset : -1;
        if (ends[i] < 0 && rc == 0) {
            snprintf(err, errlen, "%s [%d]: %s", p->topic, (int)p->partition,
                     rd_kafka_err2str(e ? e : p->err));
            rc = -1;
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    return rc;
}

/* Partition count of topic from metadata; -1 if the topic does not exist. */
static int topic_partitions(const rd_kafka_metadata_t *md, const char *topic)
{
    for (int i = 0; i < md->topic_cnt; i++)
        if (strcmp(md->topics[i].topic, topic) == 0)
            return md->topics[i].err ? -1 : md->topics[i].partition_cnt;
    return -1;
}

/* Whether one of roles (NULL: all of them) needs the topic. */
static bool wanted(const mc_topic_spec *spec, const char *const *roles)
{
    if (!spec->only_role || !roles)
        return true;
    for (; *roles; roles++)
        if (strcmp(*roles, spec->only_role) == 0)
            return true;
    return false;
}

/* Creates the topics that md lacks. The number of topics it asked for
 * (created now, or by another instance at the same moment), or -1 with a
 * reason in err. */
static int create_topics(rd_kafka_t *rk, const mc_config *cfg, const rd_kafka_metadata_t *md,
                         const mc_logger *lg, const char *const *roles, char *err, size_t errlen)
{
    rd_kafka_NewTopic_t *nt[16];
    size_t n = 0;
    char name[512], errstr[512];
    int rc = -1;
    /* Topics with their own count share it: a new one (the alarms' beside
     * jobs topics made long ago with another --partitions) takes the count
     * of those that exist. */
    int own = cfg->partitions;
    for (size_t i = 0; i < mc_n_topic_specs; i++) {
        mc_topic_name(cfg, mc_topic_specs[i].suffix, name, sizeof name);
        if (mc_topic_specs[i].partitions == MC_TOPIC_OWN_COUNT && topic_partitions(md, name) > 0)
            own = topic_partitions(md, name);
    }
    for (size_t i = 0; i < mc_n_topic_specs; i++) {
        const mc_topic_spec *s = &mc_topic_specs[i];
        mc_topic_name(cfg, s->suffix, name, sizeof name);
        if (topic_partitions(md, name) >= 0 || !wanted(s, roles))
            continue;
        int partitions = s->partitions > 0                     ? s->partitions
                         : s->partitions == MC_TOPIC_OWN_COUNT ? own
                                                               : cfg->partitions;
        nt[n] =
            rd_kafka_NewTopic_new(name, partitions, cfg->replication_factor, errstr, sizeof errstr);
        if (!nt[n]) {
            snprintf(err, errlen, "topic %s: %s", name, errstr);
            goto out;
        }
        rd_kafka_NewTopic_set_config(nt[n], "cleanup.policy", s->cleanup_policy);
        char retention[24];
        if (strcmp(s->suffix, "results") == 0) /* the operator's choice (--results-retention-ms) */
            snprintf(retention, sizeof retention, "%" PRId64, cfg->results_retention_ms);
        else if (s->retention_ms)
            snprintf(retention, sizeof retention, "%s", s->retention_ms);
        else
            retention[0] = '\0';
        if (retention[0])
            rd_kafka_NewTopic_set_config(nt[n], "retention.ms", retention);
        for (const char *const *c = s->configs; c && c[0] && c[1]; c += 2)
            rd_kafka_NewTopic_set_config(nt[n], c[0], c[1]);
        n++;
    }
    if (n == 0)
        return 0;
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_operation_timeout(opts, TOPIC_CREATE_TIMEOUT_MS, errstr,
                                                sizeof errstr);
    rd_kafka_CreateTopics(rk, nt, n, opts, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 2 * TOPIC_CREATE_TIMEOUT_MS);
    if (!ev) {
        snprintf(err, errlen, "creating topics timed out after %d s (is the broker reachable?)",
                 2 * TOPIC_CREATE_TIMEOUT_MS / 1000);
    } else if (rd_kafka_event_error(ev)) {
        snprintf(err, errlen, "creating topics: %s", rd_kafka_event_error_string(ev));
    } else {
        size_t cnt;
        const rd_kafka_topic_result_t **res =
            rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &cnt);
        rc = (int)n;
        for (size_t i = 0; i < cnt; i++) {
            rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
            if (e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS || e == RD_KAFKA_RESP_ERR_NO_ERROR) {
                if (!e)
                    mc_log(lg, MC_LOG_INFO, "created topic", "topic",
                           rd_kafka_topic_result_name(res[i]), (const char *)NULL);
                continue;
            }
            snprintf(err, errlen, "creating topic %s: %s", rd_kafka_topic_result_name(res[i]),
                     rd_kafka_topic_result_error_string(res[i]));
            rc = -1;
            break;
        }
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(opts);
    rd_kafka_queue_destroy(q);
out:
    rd_kafka_NewTopic_destroy_array(nt, n);
    return rc;
}

/* Reads metadata for all topics, for up to 30 s in steps of a second so
 * that a stop asked for meanwhile (stop, may be NULL) ends the wait; NULL
 * with err on failure. */
static const rd_kafka_metadata_t *read_metadata(rd_kafka_t *rk, const mc_config *cfg,
                                                const atomic_bool *stop, char *err, size_t errlen)
{
    const rd_kafka_metadata_t *md = NULL;
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR__TIMED_OUT;
    for (int waited = 0; waited < 30 && e; waited++) {
        if (stop && atomic_load(stop)) {
            snprintf(err, errlen, "stopped while waiting for metadata from %s",
                     cfg->bootstrap_servers);
            return NULL;
        }
        e = rd_kafka_metadata(rk, 1, NULL, &md, 1000);
    }
    if (e) {
        snprintf(err, errlen,
                 "no metadata from %s within 30 s: %s (check --bootstrap-servers and that the "
                 "brokers are up)",
                 cfg->bootstrap_servers, rd_kafka_err2str(e));
        return NULL;
    }
    return md;
}

int mc_topics_ensure(const mc_config *cfg, const mc_logger *lg, const char *const *roles,
                     const atomic_bool *stop, char *err, size_t errlen)
{
    struct {
        mc_logger lg; /* first: the log callback reads the opaque as a logger */
    } opaque = {*lg};
    rd_kafka_conf_t *conf = mc_kafka_conf_new(cfg, &opaque, err, errlen);
    if (!conf)
        return -1;
    rd_kafka_t *rk = mc_kafka_new(RD_KAFKA_PRODUCER, conf, "Kafka admin client", err, errlen);
    if (!rk)
        return -1;
    int rc = -1;
    const rd_kafka_metadata_t *md = read_metadata(rk, cfg, stop, err, errlen);
    if (!md)
        goto out;
    int created = cfg->create_topics ? create_topics(rk, cfg, md, lg, roles, err, errlen) : 0;
    if (created < 0)
        goto out;
    rd_kafka_metadata_destroy(md);
    md = NULL;
    /* Created topics can take as long to show in metadata as the broker
     * may take to create them; wait that long (and as long for a topic that
     * a broker with a lagging cache hides from a second look). */
    int64_t visible_by = mc_mono_ms() + TOPIC_CREATE_TIMEOUT_MS;
    for (;;) {
        md = read_metadata(rk, cfg, stop, err, errlen);
        if (!md)
            goto out;
        char name[512];
        bool missing = false, mismatch = false;
        int tasks = -1, shared = -1, own = -1;
        const char *shared_name = NULL, *own_name = NULL;
        for (size_t i = 0; i < mc_n_topic_specs && !mismatch; i++) {
            const mc_topic_spec *spec = &mc_topic_specs[i];
            if (!wanted(spec, roles))
                continue;
            mc_topic_name(cfg, spec->suffix, name, sizeof name);
            int p = topic_partitions(md, name);
            if (p < 0) {
                missing = true;
                if (cfg->create_topics)
                    snprintf(err, errlen,
                             "topic %s %s not visible in the broker's metadata after %d s (the "
                             "broker is slow or unwell, or the topic is being deleted: check "
                             "it, then start again)",
                             name, created ? "was created but is" : "is",
                             TOPIC_CREATE_TIMEOUT_MS / 1000);
                else
                    snprintf(err, errlen,
                             "topic %s does not exist (create it, or run without "
                             "--no-create-topics)",
                             name);
            } else if (spec->partitions == MC_TOPIC_OWN_COUNT) {
                if (own < 0) {
                    own = p;
                    own_name = spec->suffix;
                } else if (p != own) {
                    mismatch = true;
                    snprintf(err, errlen,
                             "topic %s has %d partitions but %s%s has %d: the jobs and alarms "
                             "topics need the same partition count",
                             name, p, cfg->topic_prefix, own_name, own);
                }
            } else if (spec->partitions && p != spec->partitions) {
                mismatch = true;
                snprintf(err, errlen, "topic %s has %d partitions; it must have %d", name, p,
                         spec->partitions);
            } else if (strcmp(spec->suffix, "tasks") == 0) {
                tasks = p;
            } else if (!spec->partitions && shared < 0) {
                shared = p;
                shared_name = spec->suffix;
            } else if (!spec->partitions && p != shared) {
                mismatch = true;
                snprintf(err, errlen,
                         "topic %s has %d partitions but %s%s has %d: every mooncake topic needs "
                         "the same partition count",
                         name, p, cfg->topic_prefix, shared_name, shared);
            }
        }
        if (!mismatch && !missing && tasks > shared && shared > 0) {
            /* Grown behind mooncake's back: the router stops (and says so)
             * until the growth is completed; the other roles go on firing
             * and calling what they have. */
            char t[16], s[16], cmd[64];
            snprintf(t, sizeof t, "%d", tasks);
            snprintf(s, sizeof s, "%d", shared);
            snprintf(cmd, sizeof cmd, "mooncakectl partitions grow --to %d", tasks);
            mc_log(lg, MC_LOG_WARN,
                   "tasks has more partitions than the other topics: routing stops until the "
                   "growth is completed (README, Growing the partition count)",
                   "tasks_partitions", t, "partitions", s, "run", cmd, (const char *)NULL);
        }
        rd_kafka_metadata_destroy(md);
        md = NULL;
        if (mismatch)
            goto out;
        if (!missing) {
            rc = 0;
            goto out;
        }
        if (!cfg->create_topics || mc_mono_ms() >= visible_by)
            goto out;
        rd_kafka_poll(rk, TOPIC_VISIBLE_POLL_MS);
    }
out:
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_destroy(rk);
    return rc;
}

int mc_topic_configs(rd_kafka_t *rk, const char *const *topics, size_t n, int timeout_ms,
                     mc_topic_cfg *out, char *err, size_t errlen)
{
    memset(out, 0, n * sizeof *out);
    if (n == 0)
        return 0;
    rd_kafka_ConfigResource_t **res = calloc(n, sizeof *res);
    if (!res) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        res[i] = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topics[i]);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *opts =
        rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
    char errstr[256];
    rd_kafka_AdminOptions_set_request_timeout(opts, timeout_ms, errstr, sizeof errstr);
    rd_kafka_DescribeConfigs(rk, res, n, opts, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, timeout_ms + 5000);
    int rc = -1;
    if (!ev) {
        snprintf(err, errlen, "DescribeConfigs: no answer within %d s", timeout_ms / 1000 + 5);
    } else if (rd_kafka_event_error(ev)) {
        snprintf(err, errlen, "DescribeConfigs: %s", rd_kafka_event_error_string(ev));
    } else {
        size_t cnt;
        const rd_kafka_ConfigResource_t **rs = rd_kafka_DescribeConfigs_result_resources(
            rd_kafka_event_DescribeConfigs_result(ev), &cnt);
        for (size_t i = 0; i < cnt; i++) {
            if (rd_kafka_ConfigResource_error(rs[i]))
                continue;
            const char *name = rd_kafka_ConfigResource_name(rs[i]);
            mc_topic_cfg *tc = NULL;
            for (size_t k = 0; k < n && !tc; k++)
                if (strcmp(topics[k], name) == 0)
                    tc = &out[k];
            if (!tc)
                continue;
            size_t cc;
            const rd_kafka_ConfigEntry_t **ce = rd_kafka_ConfigResource_configs(rs[i], &cc);
            for (size_t k = 0; k < cc; k++) {
                const char *cn = rd_kafka_ConfigEntry_name(ce[k]);
                const char *cv = rd_kafka_ConfigEntry_value(ce[k]);
                if (!cv)
                    continue;
                if (strcmp(cn, "cleanup.policy") == 0)
                    snprintf(tc->cleanup, sizeof tc->cleanup, "%s", cv);
                else if (strcmp(cn, "retention.ms") == 0)
                    snprintf(tc->retention, sizeof tc->retention, "%s", cv);
            }
        }
        rc = 0;
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(opts);
    rd_kafka_queue_destroy(q);
    rd_kafka_ConfigResource_destroy_array(res, n);
    free(res);
    return rc;
}

int mc_kafka_conf_producer(const mc_config *cfg, rd_kafka_conf_t *conf, const char *txn_id,
                           char *err, size_t errlen)
{
    if (mc_kafka_conf_set(conf, "enable.idempotence", "true", err, errlen) ||
        mc_kafka_conf_set(conf, "partitioner", "murmur2_random", err, errlen) ||
        mc_kafka_conf_default(cfg, conf, "linger.ms", "5", err, errlen) ||
        mc_kafka_conf_default(cfg, conf, "message.timeout.ms", "30000", err, errlen) ||
        (txn_id &&
         (mc_kafka_conf_set(conf, "transactional.id", txn_id, err, errlen) ||
          mc_kafka_conf_default(cfg, conf, "transaction.timeout.ms", "60000", err, errlen) ||
          mc_kafka_conf_default(cfg, conf, "retry.backoff.ms", "20", err, errlen))))
        return -1;
    return 0;
}
