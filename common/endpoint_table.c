/* The endpoint table (endpoint_table.h): a thread that follows the compacted endpoints
 * topic with a consumer of its own (no group: every partition assigned from the start,
 * read_committed), keeps the definitions (endpoint_defs.h), resolves the groups' DNS
 * names with the libc resolver (res_nsearch, so resolv.conf's search domains apply) and
 * publishes a new snapshot after each batch or answer that changed something. A DNS
 * failure keeps a name's previous addresses; NXDOMAIN or no record empties them. */
#include "endpoint_table.h"

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <resolv.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "endpoint_defs.h"
#include "kafka.h"

#define POLL_MS 100
#define RETRY_MS 1000
#define BATCH_MAX 1000
#define METADATA_TIMEOUT_MS 1000

struct mc_endpoint_table {
    mc_logger log; /* first: kafka.c's log callback reads the handle's opaque as a logger */
    const mc_config *cfg;
    char topic[300];
    bool own_dns; /* --endpoints-dns-server given */
    struct sockaddr_in dns;
    rd_kafka_t *rk;
    pthread_t thread;
    atomic_bool stop, caught_up;
    /* The thread alone writes defs, under lock; listings read them under lock. */
    pthread_mutex_t lock;
    mc_endpoint_defs *defs;
    mc_endpoints *current; /* under lock */
    mc_gauge *groups_g, *limits_g, *age_g, *caught_up_g;
    mc_counter *dns_failures, *skipped, *cut, *published;
};

/* ---- DNS --------------------------------------------------------------------------- */

/* One query of type for name: the addresses into addrs (*n of them). 0 answered (maybe
 * with none: NXDOMAIN or no record of the type), -1 failed (no answer, SERVFAIL, a
 * message that does not parse). */
static int query(res_state st, const char *name, int type, char (*addrs)[MC_ADDRESS_MAX],
                 size_t max, size_t *n)
{
    uint8_t answer[8192];
    int len = res_nsearch(st, name, ns_c_in, type, answer, sizeof answer);
    if (len < 0) {
        int h = st->res_h_errno;
        return h == HOST_NOT_FOUND || h == NO_DATA ? 0 : -1;
    }
    int got = mc_dns_answer_addresses(
        answer, (size_t)len > sizeof answer ? sizeof answer : (size_t)len, addrs, max);
    if (got < 0)
        return -1;
    *n += (size_t)got;
    return 0;
}

/* Resolves name (A and AAAA) into addrs; how many, or -1 when it failed. */
static int resolve(mc_endpoint_table *t, const char *name, char (*addrs)[MC_ADDRESS_MAX],
                   size_t max)
{
    struct __res_state st;
    memset(&st, 0, sizeof st);
    if (res_ninit(&st) != 0)
        return -1;
    if (t->own_dns) {
        st.nsaddr_list[0] = t->dns;
        st.nscount = 1;
    }
    /* One try of a second: a name that does not answer must not hold the table. */
    st.retrans = 1;
    st.retry = 1;
    size_t n = 0;
    int rc = query(&st, name, ns_t_a, addrs, max, &n);
    if (rc == 0)
        rc = query(&st, name, ns_t_aaaa, addrs + n, max - n, &n);
    res_nclose(&st);
    return rc == 0 ? (int)n : -1;
}

/* ---- snapshots --------------------------------------------------------------------- */

static void publish(mc_endpoint_table *t)
{
    size_t cut = 0;
    mc_endpoints *e = mc_endpoint_defs_snapshot(t->defs, &cut);
    if (!e) {
        mc_log(&t->log, MC_LOG_ERROR, "endpoint table out of memory: the snapshot is stale",
               (const char *)NULL);
        return;
    }
    if (cut) {
        mc_counter_add(t->cut, cut);
        mc_log(&t->log, MC_LOG_WARN,
               "an endpoint group resolved to more members than it may "
               "hold: the last ones by URL and address are left out",
               (const char *)NULL);
    }
    pthread_mutex_lock(&t->lock);
    mc_endpoints *old = t->current;
    t->current = e;
    pthread_mutex_unlock(&t->lock);
    mc_endpoints_unref(old);
    mc_counter_add(t->published, 1);
    mc_gauge_set(t->groups_g, (double)mc_endpoints_group_count(e));
    mc_gauge_set(t->limits_g, (double)mc_endpoints_limit_count(e));
}

/* Resolves every name; whether an answer changed. */
static bool refresh_dns(mc_endpoint_table *t, bool only_new, int64_t *last_ok_ms)
{
    bool changed = false, failed = false;
    char addrs[MC_DNS_ADDRESSES_MAX][MC_ADDRESS_MAX];
    char name[256];
    for (size_t i = 0; i < mc_endpoint_defs_host_count(t->defs) && !atomic_load(&t->stop); i++) {
        if (only_new && mc_endpoint_defs_host_resolved(t->defs, i))
            continue;
        snprintf(name, sizeof name, "%s", mc_endpoint_defs_host(t->defs, i));
        int n = resolve(t, name, addrs, MC_DNS_ADDRESSES_MAX);
        if (n < 0) {
            failed = true;
            mc_counter_add(t->dns_failures, 1);
            mc_log(&t->log, MC_LOG_WARN, "endpoint group name did not resolve: its members stay",
                   "name", name, (const char *)NULL);
            continue;
        }
        const char *ptrs[MC_DNS_ADDRESSES_MAX];
        for (int k = 0; k < n; k++)
            ptrs[k] = addrs[k];
        pthread_mutex_lock(&t->lock);
        int rc = mc_endpoint_defs_set_addresses(t->defs, i, ptrs, (size_t)n);
        pthread_mutex_unlock(&t->lock);
        changed |= rc == 1;
    }
    if (!failed && !only_new)
        *last_ok_ms = mc_mono_ms();
    return changed;
}

/* ---- the topic --------------------------------------------------------------------- */

static int assign_all(mc_endpoint_table *t, bool *warned)
{
    char err[256];
    int n = mc_topic_partition_count(t->rk, t->topic, METADATA_TIMEOUT_MS, err, sizeof err);
    rd_kafka_topic_partition_list_t *parts = n > 0 ? rd_kafka_topic_partition_list_new(n) : NULL;
    for (int i = 0; parts && i < n; i++)
        rd_kafka_topic_partition_list_add(parts, t->topic, i)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_resp_err_t aerr = parts ? rd_kafka_assign(t->rk, parts) : RD_KAFKA_RESP_ERR__FAIL;
    if (parts)
        rd_kafka_topic_partition_list_destroy(parts);
    if (n > 0 && !aerr)
        return n;
    if (n == MC_TOPIC_MISSING && !atomic_load(&t->caught_up)) {
        /* No topic is no group and no limit, not a reason to hold every call: the table
         * is read, empty, and read again once the topic is made. */
        atomic_store(&t->caught_up, true);
        mc_gauge_set(t->caught_up_g, 1);
    }
    if (!*warned)
        mc_log(&t->log, MC_LOG_WARN, "endpoint table cannot read its topic yet, retrying", "topic",
               t->topic, "error", n > 0 ? rd_kafka_err2str(aerr) : err, (const char *)NULL);
    *warned = true;
    return 0;
}

/* One message: a record applied (*changed when it changed the definitions), or a
 * partition's end seen. */
static void take(mc_endpoint_table *t, const rd_kafka_message_t *m, bool *at_end, int n_parts,
                 int *ends, bool *changed)
{
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        if (m->partition >= 0 && m->partition < n_parts && !at_end[m->partition]) {
            at_end[m->partition] = true;
            (*ends)++;
        }
        return;
    }
    if (m->err) {
        mc_log(&t->log, MC_LOG_WARN, "endpoint table read error", "error",
               rd_kafka_message_errstr(m), (const char *)NULL);
        return;
    }
    char why[512], offset[24];
    int rc = -1;
    if (m->key) {
        pthread_mutex_lock(&t->lock);
        rc = mc_endpoint_defs_apply(t->defs, m->key, m->key_len, m->payload,
                                    m->payload ? m->len : 0, why, sizeof why);
        pthread_mutex_unlock(&t->lock);
    } else {
        snprintf(why, sizeof why, "a record without a key");
    }
    if (rc == 1)
        *changed = true;
    if (rc >= 0)
        return;
    mc_counter_add(t->skipped, 1);
    snprintf(offset, sizeof offset, "%" PRId64, m->offset);
    mc_log(&t->log, MC_LOG_ERROR, "endpoints record skipped", "topic", t->topic, "offset", offset,
           "reason", rc == -2 ? "out of memory" : why, (const char *)NULL);
}

/* The table has read every partition to where it ended at the start: calls may start. */
static void mark_caught_up(mc_endpoint_table *t)
{
    atomic_store(&t->caught_up, true);
    mc_gauge_set(t->caught_up_g, 1);
    char groups[24], limits[24];
    snprintf(groups, sizeof groups, "%zu", mc_endpoint_defs_group_count(t->defs));
    snprintf(limits, sizeof limits, "%zu", mc_endpoint_defs_limit_count(t->defs));
    mc_log(&t->log, MC_LOG_INFO, "endpoint table loaded", "groups", groups, "limits", limits,
           (const char *)NULL);
}

static void nap(mc_endpoint_table *t, int ms)
{
    for (int i = 0; i < ms / 50 && !atomic_load(&t->stop); i++)
        usleep(50 * 1000);
}

static void *table_main(void *arg)
{
    mc_endpoint_table *t = arg;
    bool warned = false;
    int n = 0;
    while (!atomic_load(&t->stop) && (n = assign_all(t, &warned)) == 0)
        nap(t, RETRY_MS);
    bool *at_end = n > 0 ? calloc((size_t)n, sizeof *at_end) : NULL;
    int ends = 0;
    int64_t refresh_ms = t->cfg->endpoints_dns_refresh_ms;
    int64_t next_dns = mc_mono_ms() + refresh_ms, last_ok = mc_mono_ms();
    while (at_end && !atomic_load(&t->stop)) {
        bool changed = false;
        rd_kafka_message_t *m = rd_kafka_consumer_poll(t->rk, POLL_MS);
        for (int k = 0; m && k < BATCH_MAX; k++) {
            take(t, m, at_end, n, &ends, &changed);
            rd_kafka_message_destroy(m);
            m = k + 1 < BATCH_MAX ? rd_kafka_consumer_poll(t->rk, 0) : NULL;
        }
        if (m)
            rd_kafka_message_destroy(m); /* unreachable: the loop takes every one */
        /* Names new in this batch are resolved at once, before the snapshot (a group of
         * DNS members only would otherwise be empty for a moment); the snapshot, and the
         * table's first reading, do not wait for the periodic resolution too. */
        if (changed) {
            refresh_dns(t, true, &last_ok);
            publish(t);
        }
        if (ends == n && !atomic_load(&t->caught_up))
            mark_caught_up(t);
        if (mc_mono_ms() >= next_dns) {
            if (refresh_dns(t, false, &last_ok))
                publish(t);
            next_dns = mc_mono_ms() + refresh_ms;
        }
        mc_gauge_set(t->age_g, (double)(mc_mono_ms() - last_ok) / 1000.0);
    }
    free(at_end);
    return NULL;
}

/* ---- the interface ----------------------------------------------------------------- */

static void table_free(mc_endpoint_table *t)
{
    if (t->rk)
        rd_kafka_destroy_flags(t->rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    mc_endpoint_defs_free(t->defs);
    mc_endpoints_unref(t->current);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

mc_endpoint_table *mc_endpoint_table_open(const mc_config *cfg, mc_metrics *m, char *err,
                                          size_t errlen)
{
    mc_endpoint_table *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "endpoint table: out of memory");
        return NULL;
    }
    t->log = (mc_logger){cfg->log_level, cfg->log_json, "endpoints"};
    t->cfg = cfg;
    pthread_mutex_init(&t->lock, NULL);
    mc_topic_name(cfg, "endpoints", t->topic, sizeof t->topic);
    t->defs = mc_endpoint_defs_new();
    t->current = mc_endpoints_new();
    if (!t->defs || !t->current) {
        snprintf(err, errlen, "endpoint table: out of memory");
        table_free(t);
        return NULL;
    }
    const char *server = cfg->endpoints_dns_server ? cfg->endpoints_dns_server : "";
    if (server[0]) {
        if (!mc_config_dns_server(server, &t->dns)) {
            snprintf(err, errlen, "--endpoints-dns-server '%.100s' is not an IPv4 HOST:PORT",
                     server);
            table_free(t);
            return NULL;
        }
        t->own_dns = true;
    }
    t->groups_g = mc_metrics_gauge(m, "mooncake_endpoints_groups",
                                   "Endpoint groups in the endpoint table", NULL);
    t->limits_g = mc_metrics_gauge(m, "mooncake_endpoints_limits",
                                   "Admission limits in the endpoint table", NULL);
    t->age_g = mc_metrics_gauge(m, "mooncake_endpoints_dns_refresh_age_seconds",
                                "Seconds since every DNS name of the endpoint groups last "
                                "resolved",
                                NULL);
    t->caught_up_g =
        mc_metrics_gauge(m, "mooncake_endpoints_loaded",
                         "1 once the endpoint table has read its topic to the end", NULL);
    t->dns_failures = mc_metrics_counter(m, "mooncake_endpoints_dns_failures_total",
                                         "DNS names of endpoint groups that failed to resolve "
                                         "(their previous members kept)",
                                         NULL);
    t->skipped = mc_metrics_counter(m, "mooncake_endpoints_records_skipped_total",
                                    "endpoints records that were not valid, skipped", NULL);
    t->published = mc_metrics_counter(
        m, "mooncake_endpoints_published_total",
        "Snapshots of the endpoint table taken into use (a record or a DNS answer changed it)",
        NULL);
    t->cut = mc_metrics_counter(m, "mooncake_endpoints_members_cut_total",
                                "Members left out of groups that resolved to more than 64", NULL);
    rd_kafka_conf_t *conf = mc_kafka_conf_new(cfg, t, err, errlen);
    if (!conf || mc_kafka_conf_reader(conf, "mooncake-endpoints", err, errlen)) {
        if (conf)
            rd_kafka_conf_destroy(conf);
        table_free(t);
        return NULL;
    }
    t->rk = mc_kafka_new(RD_KAFKA_CONSUMER, conf, "endpoint table's consumer", err, errlen);
    if (!t->rk) {
        table_free(t);
        return NULL;
    }
    rd_kafka_poll_set_consumer(t->rk);
    if (pthread_create(&t->thread, NULL, table_main, t) != 0) {
        snprintf(err, errlen, "cannot start the endpoint table's thread");
        table_free(t);
        return NULL;
    }
    return t;
}

mc_endpoints *mc_endpoint_table_snapshot(mc_endpoint_table *t)
{
    pthread_mutex_lock(&t->lock);
    mc_endpoints *e = mc_endpoints_ref(t->current);
    pthread_mutex_unlock(&t->lock);
    return e;
}

bool mc_endpoint_table_caught_up(mc_endpoint_table *t)
{
    return atomic_load(&t->caught_up);
}

json_t *mc_endpoint_table_groups_json(mc_endpoint_table *t, const char *app_id, const char *name)
{
    pthread_mutex_lock(&t->lock);
    json_t *j = mc_endpoint_defs_groups_json(t->defs, app_id, name);
    pthread_mutex_unlock(&t->lock);
    return j;
}

json_t *mc_endpoint_table_limits_json(mc_endpoint_table *t)
{
    pthread_mutex_lock(&t->lock);
    json_t *j = mc_endpoint_defs_limits_json(t->defs);
    pthread_mutex_unlock(&t->lock);
    return j;
}

void mc_endpoint_table_stop(mc_endpoint_table *t)
{
    if (t)
        atomic_store(&t->stop, true);
}

void mc_endpoint_table_close(mc_endpoint_table *t)
{
    if (!t)
        return;
    mc_endpoint_table_stop(t);
    pthread_join(t->thread, NULL);
    table_free(t);
}
