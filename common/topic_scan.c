/* Reading a topic's partitions once to the ends seen at the start (see
 * topic_scan.h). */
#include "topic_scan.h"

#include <stdio.h>
#include <string.h>

#include "kafka.h"

int mc_scan_plan(rd_kafka_t *rk, const char *topic, int n, int64_t since_ms, int timeout_ms,
                 mc_part_scan *parts, char *err, size_t errlen)
{
    for (int p = 0; p < n; p++) {
        int64_t lo, hi;
        rd_kafka_resp_err_t e =
            rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi, timeout_ms);
        if (e) {
            snprintf(err, errlen, "watermarks of %s [%d]: %s", topic, p, rd_kafka_err2str(e));
            return -1;
        }
        parts[p] = (mc_part_scan){p, lo, hi, lo >= hi};
    }
    if (since_ms < 0)
        return 0;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n);
    for (int p = 0; p < n; p++)
        rd_kafka_topic_partition_list_add(l, topic, p)->offset = since_ms;
    rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(rk, l, timeout_ms);
    int rc = 0;
    for (int i = 0; !e && i < l->cnt; i++) {
        rd_kafka_topic_partition_t *tp = &l->elems[i];
        if (tp->err) {
            e = tp->err;
            break;
        }
        mc_part_scan *ps = &parts[tp->partition];
        /* -1: no record at or after that time */
        if (tp->offset < 0 || tp->offset >= ps->end)
            ps->next = ps->end;
        else if (tp->offset > ps->next)
            ps->next = tp->offset;
        ps->done = ps->next >= ps->end;
    }
    if (e) {
        snprintf(err, errlen, "offsets for --since in %s: %s", topic, rd_kafka_err2str(e));
        rc = -1;
    }
    rd_kafka_topic_partition_list_destroy(l);
    return rc;
}

int mc_scan(rd_kafka_t *rk, const char *topic, mc_part_scan *parts, size_t n, bool follow,
            mc_record_fn fn, void *arg, const mc_scan_hooks *hooks, const mc_logger *lg, char *err,
            size_t errlen)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)n);
    size_t active = 0;
    for (size_t i = 0; i < n; i++) {
        if (!follow && parts[i].done)
            continue;
        rd_kafka_topic_partition_list_add(l, topic, parts[i].partition)->offset = parts[i].next;
        active++;
    }
    rd_kafka_resp_err_t e = active ? rd_kafka_assign(rk, l) : RD_KAFKA_RESP_ERR_NO_ERROR;
    rd_kafka_topic_partition_list_destroy(l);
    if (e) {
        snprintf(err, errlen, "reading %s: %s", topic, rd_kafka_err2str(e));
        return MC_SCAN_FAILED;
    }
    int rc = 0;
    while (rc == 0 && (follow || active > 0) &&
           !(hooks && hooks->stop && hooks->stop(hooks->arg))) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (hooks && hooks->tick)
            hooks->tick(hooks->arg);
        if (!m)
            continue;
        mc_part_scan *ps = NULL;
        if (m->rkt && strcmp(rd_kafka_topic_name(m->rkt), topic) == 0)
            for (size_t i = 0; i < n && !ps; i++)
                if (parts[i].partition == m->partition)
                    ps = &parts[i];
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            /* The position may be past what was read: commit markers and
             * aborted records take offsets but are not delivered. */
            if (ps && m->offset > ps->next)
                ps->next = m->offset;
            if (ps && !follow && !ps->done) {
                ps->done = true;
                active--;
            }
        } else if (m->err) {
            char fatal[512];
            if (rd_kafka_fatal_error(rk, fatal, sizeof fatal)) {
                snprintf(err, errlen, "reading %s: %s", topic, fatal);
                rc = MC_SCAN_FAILED;
            } else if (m->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
                       m->err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
                       m->err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION ||
                       m->err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) {
                snprintf(err, errlen, "reading %s: %s", topic, rd_kafka_message_errstr(m));
                rc = MC_SCAN_FAILED;
            } else {
                mc_log(lg, MC_LOG_WARN, "consumer error", "topic", topic, "error",
                       rd_kafka_message_errstr(m), (const char *)NULL);
            }
        } else if (ps && (follow || !ps->done)) {
            if (!follow && m->offset >= ps->end) {
                ps->done = true; /* past the end seen at start */
                active--;
            } else {
                ps->next = m->offset + 1;
                rc = fn(arg, m);
                if (!follow && ps->next >= ps->end) {
                    ps->done = true;
                    active--;
                }
            }
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_assign(rk, NULL);
    return rc;
}

rd_kafka_t *mc_scan_consumer_new(rd_kafka_conf_t *conf, const char *group, char *err, size_t errlen)
{
    if (mc_kafka_conf_reader(conf, group, err, errlen)) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_t *rk = mc_kafka_new(RD_KAFKA_CONSUMER, conf, "Kafka consumer", err, errlen);
    if (rk)
        rd_kafka_poll_set_consumer(rk);
    return rk;
}

int mc_scan_partitions(rd_kafka_t *rk, const char *topic, int timeout_ms, char *err, size_t errlen)
{
    const rd_kafka_metadata_t *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 1, NULL, &md, timeout_ms);
    if (e) {
        snprintf(err, errlen, "no metadata within %d s: %s", timeout_ms / 1000,
                 rd_kafka_err2str(e));
        return -1;
    }
    int n = 0;
    for (int i = 0; i < md->topic_cnt; i++)
        if (strcmp(md->topics[i].topic, topic) == 0 && !md->topics[i].err)
            n = md->topics[i].partition_cnt;
    rd_kafka_metadata_destroy(md);
    return n;
}
