/* mooncakectl topics create | describe. See mooncakectl.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kafka.h"
#include "mooncakectl.h"
#include "requeue.h"

/* ---- topics ---------------------------------------------------------------------------- */

/* The processor groups and their input topics (see each processor's file). */
static const struct {
    const char *group, *input;
} groups[] = {
    {"router", "tasks"},
    {"store", "wheel"},
    {"wheel", "wheel"},
    {"executor", "ready"},
    {"retry", "retry"},
    {"view", "results"},
    {"mooncakectl-requeue", "dead"},
};
#define N_GROUPS (sizeof groups / sizeof groups[0])
#define N_TOPICS (MC_N_TOPIC_SPECS + 1) /* mc_topic_specs and requeue's ledger */

typedef struct topic_info {
    char name[300];
    const char *suffix;
    int partitions; /* -1: missing */
    mc_topic_cfg cfg;
    int64_t *lo, *hi; /* per partition */
    int64_t offsets;  /* sum of hi - lo */
} topic_info;

typedef struct group_info {
    char name[300];
    const topic_info *input;
    char state[32];
    int members; /* -1: unknown */
    int committed_parts;
    int64_t lag; /* -1: the input topic is missing */
} group_info;

static void human_ms(const char *ms, char *out, size_t outlen)
{
    int64_t v;
    if (!ms[0]) {
        snprintf(out, outlen, "?");
        return;
    }
    if (!mc_parse_int64(ms, 0, INT64_MAX, &v)) {
        snprintf(out, outlen, "%s", ms); /* -1: forever */
        return;
    }
    if (v % 86400000 == 0)
        snprintf(out, outlen, "%s (%" PRId64 "d)", ms, v / 86400000);
    else if (v % 3600000 == 0)
        snprintf(out, outlen, "%s (%" PRId64 "h)", ms, v / 3600000);
    else
        snprintf(out, outlen, "%s", ms);
}

/* State and member count of every group (DescribeConsumerGroups). */
static int describe_groups(rd_kafka_t *rk, group_info *gi, size_t n, char *err, size_t errlen)
{
    const char *names[N_GROUPS];
    for (size_t i = 0; i < n; i++)
        names[i] = gi[i].name;
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *opts =
        rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS);
    char errstr[256];
    rd_kafka_AdminOptions_set_request_timeout(opts, TIMEOUT_MS, errstr, sizeof errstr);
    rd_kafka_DescribeConsumerGroups(rk, names, n, opts, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, TIMEOUT_MS + 5000);
    int rc = -1;
    if (!ev) {
        snprintf(err, errlen, "DescribeConsumerGroups: no answer");
    } else if (rd_kafka_event_error(ev)) {
        snprintf(err, errlen, "DescribeConsumerGroups: %s", rd_kafka_event_error_string(ev));
    } else {
        size_t cnt;
        const rd_kafka_ConsumerGroupDescription_t **gd =
            rd_kafka_DescribeConsumerGroups_result_groups(
                rd_kafka_event_DescribeConsumerGroups_result(ev), &cnt);
        for (size_t i = 0; i < cnt; i++) {
            const char *id = rd_kafka_ConsumerGroupDescription_group_id(gd[i]);
            for (size_t k = 0; k < n; k++) {
                if (strcmp(gi[k].name, id) != 0)
                    continue;
                if (rd_kafka_ConsumerGroupDescription_error(gd[i]))
                    break;
                snprintf(gi[k].state, sizeof gi[k].state, "%s",
                         rd_kafka_consumer_group_state_name(
                             rd_kafka_ConsumerGroupDescription_state(gd[i])));
                gi[k].members = (int)rd_kafka_ConsumerGroupDescription_member_count(gd[i]);
            }
        }
        rc = 0;
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(opts);
    rd_kafka_queue_destroy(q);
    return rc;
}

/* Committed offsets of one group on its input (ListConsumerGroupOffsets)
 * -> lag = sum over partitions of high watermark - committed offset (a
 * partition without a commit counts from its low watermark); from[p] gets
 * where each partition's lag starts. */
static int group_lag(rd_kafka_t *rk, group_info *g, int64_t *from, char *err, size_t errlen)
{
    const topic_info *t = g->input;
    g->lag = -1;
    if (t->partitions < 0)
        return 0;
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(t->partitions);
    for (int p = 0; p < t->partitions; p++)
        rd_kafka_topic_partition_list_add(parts, t->name, p);
    rd_kafka_ListConsumerGroupOffsets_t *req =
        rd_kafka_ListConsumerGroupOffsets_new(g->name, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *opts =
        rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS);
    char errstr[256];
    rd_kafka_AdminOptions_set_request_timeout(opts, TIMEOUT_MS, errstr, sizeof errstr);
    rd_kafka_ListConsumerGroupOffsets(rk, &req, 1, opts, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, TIMEOUT_MS + 5000);
    int rc = -1;
    if (!ev) {
        snprintf(err, errlen, "ListConsumerGroupOffsets %.300s: no answer", g->name);
    } else if (rd_kafka_event_error(ev)) {
        snprintf(err, errlen, "ListConsumerGroupOffsets %.300s: %.500s", g->name,
                 rd_kafka_event_error_string(ev));
    } else {
        size_t cnt;
        const rd_kafka_group_result_t **gr = rd_kafka_ListConsumerGroupOffsets_result_groups(
            rd_kafka_event_ListConsumerGroupOffsets_result(ev), &cnt);
        const rd_kafka_error_t *ge = cnt ? rd_kafka_group_result_error(gr[0]) : NULL;
        const rd_kafka_topic_partition_list_t *got =
            cnt && !ge ? rd_kafka_group_result_partitions(gr[0]) : NULL;
        if (ge) {
            snprintf(err, errlen, "ListConsumerGroupOffsets %.300s: %.500s", g->name,
                     rd_kafka_error_string(ge));
        } else {
            int64_t lag = 0;
            for (int p = 0; p < t->partitions; p++) {
                from[p] = t->lo[p];
                const rd_kafka_topic_partition_t *tp =
                    got ? rd_kafka_topic_partition_list_find(got, t->name, p) : NULL;
                if (tp && !tp->err && tp->offset >= 0) {
                    g->committed_parts++;
                    if (tp->offset > from[p])
                        from[p] = tp->offset;
                }
                if (t->hi[p] > from[p])
                    lag += t->hi[p] - from[p];
            }
            g->lag = lag;
            rc = 0;
        }
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(opts);
    rd_kafka_queue_destroy(q);
    rd_kafka_ListConsumerGroupOffsets_destroy(req);
    return rc;
}

/* Lag counts offsets, and a transactional topic's commit markers (and
 * aborted records) take offsets that no read_committed consumer will ever
 * read: a group that is caught up shows a lag of 1 per partition written
 * transactionally. Where the lag of a partition is small, read from the
 * committed offset to see whether anything is there: if the partition
 * reaches its end first, its lag is 0. Larger lags stay as counted (an
 * upper bound). from[p]: where the group's lag counts from. */
static void refine_lag(ctl *c, rd_kafka_t *rk, group_info *g, const int64_t *from)
{
    const topic_info *t = g->input;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(t->partitions);
    for (int p = 0; p < t->partitions; p++)
        if (t->hi[p] > from[p] && t->hi[p] - from[p] <= 64)
            rd_kafka_topic_partition_list_add(l, t->name, p)->offset = from[p];
    int pending = l->cnt;
    bool *seen = calloc((size_t)t->partitions, sizeof *seen);
    if (pending == 0 || !seen || rd_kafka_assign(rk, l) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        free(seen);
        rd_kafka_topic_partition_list_destroy(l);
        return;
    }
    int64_t deadline = mc_now_ms() + 5000;
    while (pending > 0 && mc_now_ms() < deadline && !ctl_stop_requested(c)) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (!m)
            continue;
        int32_t p = m->partition;
        bool ours = m->rkt && strcmp(rd_kafka_topic_name(m->rkt), t->name) == 0 && p >= 0 &&
                    p < t->partitions && rd_kafka_topic_partition_list_find(l, t->name, p);
        if (ours && !seen[p] && (!m->err || m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)) {
            seen[p] = true;
            pending--;
            if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
                g->lag -= t->hi[p] - from[p]; /* nothing but markers */
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_assign(rk, NULL);
    free(seen);
    rd_kafka_topic_partition_list_destroy(l);
}

static const group_info *find_group(const group_info *gi, const char *suffix, const ctl *c)
{
    char name[300];
    mc_topic_name(&c->cfg, suffix, name, sizeof name);
    for (size_t i = 0; i < N_GROUPS; i++)
        if (strcmp(gi[i].name, name) == 0)
            return &gi[i];
    return NULL;
}

static void print_describe(ctl *c, const topic_info *ti, const group_info *gi)
{
    int64_t store_records = -1;
    for (size_t i = 0; i < N_TOPICS; i++)
        if (strcmp(ti[i].suffix, "store") == 0 && ti[i].partitions >= 0)
            store_records = ti[i].offsets;
    static const struct {
        const char *name, *group, *what;
    } pending[] = {
        {"not_routed", "router", "commands not yet routed (router lag on tasks)"},
        {"near_in_wheel", "wheel",
         "near tasks pending, at most (wheel lag on wheel: its commit is held back to the oldest "
         "pending task, so this counts what followed it too)"},
        {"due_not_finished", "executor",
         "tasks fired and not finished, at most (executor lag on ready)"},
        {"failed_awaiting_retry", "retry", "failed attempts not yet handled (retry lag on retry)"},
        {"dead_not_requeued", "mooncakectl-requeue",
         "dead letters requeue has not dealt with (all of dead when it never ran)"},
    };
    if (c->o.json) {
        json_t *topics = json_array(), *jg = json_array(), *jp = json_object();
        for (size_t i = 0; i < N_TOPICS; i++) {
            const topic_info *t = &ti[i];
            json_t *j = json_pack("{s:s, s:b}", "topic", t->name, "exists", t->partitions >= 0);
            if (t->partitions >= 0) {
                json_object_set_new(j, "partitions", json_integer(t->partitions));
                json_object_set_new(j, "cleanup_policy",
                                    t->cfg.cleanup[0] ? json_string(t->cfg.cleanup) : json_null());
                int64_t r;
                json_object_set_new(
                    j, "retention_ms",
                    mc_parse_int64(t->cfg.retention, -1, INT64_MAX, &r)
                        ? json_integer(r)
                        : (t->cfg.retention[0] && strcmp(t->cfg.retention, "-1") == 0
                               ? json_integer(-1)
                               : json_null()));
                json_object_set_new(j, "offsets", json_integer(t->offsets));
            }
            json_array_append_new(topics, j);
        }
        for (size_t i = 0; i < N_GROUPS; i++) {
            const group_info *g = &gi[i];
            json_t *j = json_pack("{s:s, s:s, s:s, s:i, s:i}", "group", g->name, "input",
                                  g->input->name, "state", g->state, "members", g->members,
                                  "committed_partitions", g->committed_parts);
            json_object_set_new(j, "lag", g->lag >= 0 ? json_integer(g->lag) : json_null());
            json_array_append_new(jg, j);
        }
        json_object_set_new(jp, "store_records",
                            store_records >= 0 ? json_integer(store_records) : json_null());
        for (size_t i = 0; i < sizeof pending / sizeof pending[0]; i++) {
            const group_info *g = find_group(gi, pending[i].group, c);
            json_object_set_new(jp, pending[i].name,
                                g && g->lag >= 0 ? json_integer(g->lag) : json_null());
        }
        ctl_print_json(json_pack("{s:o, s:o, s:o}", "topics", topics, "groups", jg, "pending", jp));
        return;
    }
    printf("%-36s %5s %-14s %-20s %12s\n", "TOPIC", "PARTS", "CLEANUP", "RETENTION.MS", "OFFSETS");
    for (size_t i = 0; i < N_TOPICS; i++) {
        const topic_info *t = &ti[i];
        if (t->partitions < 0) {
            printf("%-36s %5s %s\n", t->name, "-",
                   strcmp(t->suffix, "mooncakectl-requeued") == 0
                       ? "(not created yet: requeue's ledger, made by the first requeue)"
                       : "(missing: mooncakectl topics create)");
            continue;
        }
        char ret[64];
        human_ms(t->cfg.retention, ret, sizeof ret);
        printf("%-36s %5d %-14s %-20s %12" PRId64 "\n", t->name, t->partitions,
               t->cfg.cleanup[0] ? t->cfg.cleanup : "?",
               strcmp(t->cfg.cleanup, "compact") == 0 ? "-" : ret, t->offsets);
    }
    puts("(offsets: high - low watermark summed over partitions; a transactional topic's commit\n"
         " markers take offsets too, so this is an upper bound of the records)\n");
    printf("%-36s %-22s %-12s %7s %9s %10s\n", "GROUP", "INPUT", "STATE", "MEMBERS", "COMMITTED",
           "LAG");
    for (size_t i = 0; i < N_GROUPS; i++) {
        const group_info *g = &gi[i];
        char committed[32], lag[24];
        snprintf(committed, sizeof committed, "%d/%d", g->committed_parts,
                 g->input->partitions > 0 ? g->input->partitions : 0);
        if (g->lag >= 0)
            snprintf(lag, sizeof lag, "%" PRId64, g->lag);
        else
            snprintf(lag, sizeof lag, "-");
        char members[16];
        snprintf(members, sizeof members, "%d", g->members);
        printf("%-36s %-22s %-12s %7s %9s %10s\n", g->name, g->input->name,
               g->state[0] ? g->state : "?", g->members >= 0 ? members : "?", committed, lag);
    }
    puts("(lag: high watermark - committed offset, summed; a partition without a commit counts\n"
         " from its low watermark; a small lag made only of transaction markers counts 0)\n");
    puts("Pending work, cheap upper bounds (exact counts: mooncake_store_tasks and\n"
         "mooncake_wheel_tasks on the store's and the wheel's /metrics):");
    if (store_records >= 0)
        printf("  %12" PRId64 "  far tasks in the store, at most (offsets of the compacted store "
               "topic: live tasks plus tombstones and old versions not compacted yet)\n",
               store_records);
    for (size_t i = 0; i < sizeof pending / sizeof pending[0]; i++) {
        const group_info *g = find_group(gi, pending[i].group, c);
        if (g && g->lag >= 0)
            printf("  %12" PRId64 "  %s\n", g->lag, pending[i].what);
    }
}

int ctl_cmd_topics_describe(ctl *c)
{
    char err[1024];
    rd_kafka_t *rk = ctl_new_consumer(c, NULL, err, sizeof err);
    if (!rk)
        return ctl_fail(EXIT_KAFKA, "%s", err);
    topic_info ti[N_TOPICS];
    group_info gi[N_GROUPS];
    memset(ti, 0, sizeof ti);
    memset(gi, 0, sizeof gi);
    int rc = 0;
    const rd_kafka_metadata_t *md = ctl_fetch_metadata(c, rk, err, sizeof err);
    if (!md) {
        rc = ctl_fail(EXIT_KAFKA, "%s", err);
        goto out;
    }
    const char *names[N_TOPICS];
    size_t n_existing = 0;
    for (size_t i = 0; i < N_TOPICS; i++) {
        topic_info *t = &ti[i];
        t->suffix = i < mc_n_topic_specs ? mc_topic_specs[i].suffix : "mooncakectl-requeued";
        mc_topic_name(&c->cfg, t->suffix, t->name, sizeof t->name);
        t->partitions = ctl_md_partitions(md, t->name);
        if (t->partitions >= 0)
            names[n_existing++] = t->name;
    }
    rd_kafka_metadata_destroy(md);
    mc_topic_cfg cfgs[N_TOPICS];
    if (mc_topic_configs(rk, names, n_existing, TIMEOUT_MS, cfgs, err, sizeof err) != 0) {
        rc = ctl_fail(EXIT_KAFKA, "%s", err);
        goto out;
    }
    for (size_t i = 0, k = 0; i < N_TOPICS; i++) {
        topic_info *t = &ti[i];
        if (t->partitions < 0)
            continue;
        t->cfg = cfgs[k++];
        t->lo = calloc((size_t)t->partitions, sizeof *t->lo);
        t->hi = calloc((size_t)t->partitions, sizeof *t->hi);
        if (!t->lo || !t->hi) {
            rc = ctl_fail(EXIT_KAFKA, "out of memory");
            goto out;
        }
        for (int p = 0; p < t->partitions; p++) {
            rd_kafka_resp_err_t e =
                rd_kafka_query_watermark_offsets(rk, t->name, p, &t->lo[p], &t->hi[p], TIMEOUT_MS);
            if (e) {
                rc = ctl_fail(EXIT_KAFKA, "watermarks of %s [%d]: %s", t->name, p,
                              rd_kafka_err2str(e));
                goto out;
            }
            t->offsets += t->hi[p] - t->lo[p];
        }
    }
    for (size_t i = 0; i < N_GROUPS; i++) {
        group_info *g = &gi[i];
        mc_topic_name(&c->cfg, groups[i].group, g->name, sizeof g->name);
        g->members = -1;
        for (size_t k = 0; k < N_TOPICS; k++)
            if (strcmp(ti[k].suffix, groups[i].input) == 0)
                g->input = &ti[k];
    }
    if (describe_groups(rk, gi, N_GROUPS, err, sizeof err) != 0) {
        rc = ctl_fail(EXIT_KAFKA, "%s", err);
        goto out;
    }
    for (size_t i = 0; i < N_GROUPS; i++) {
        int64_t *from = gi[i].input->partitions > 0
                            ? calloc((size_t)gi[i].input->partitions, sizeof *from)
                            : NULL;
        if (gi[i].input->partitions > 0 && !from) {
            rc = ctl_fail(EXIT_KAFKA, "out of memory");
            goto out;
        }
        if (group_lag(rk, &gi[i], from, err, sizeof err) != 0) {
            free(from);
            rc = ctl_fail(EXIT_KAFKA, "%s", err);
            goto out;
        }
        if (gi[i].lag > 0)
            refine_lag(c, rk, &gi[i], from);
        free(from);
    }
    print_describe(c, ti, gi);
out:
    for (size_t i = 0; i < N_TOPICS; i++) {
        free(ti[i].lo);
        free(ti[i].hi);
    }
    rd_kafka_destroy(rk);
    return rc;
}

int ctl_cmd_topics_create(ctl *c)
{
    const ctl_opts *o = &c->o;
    int64_t v;
    if (o->partitions) {
        if (!mc_parse_int64(o->partitions, 1, 10000, &v))
            return ctl_fail(EXIT_USAGE, "--partitions '%s' is not an integer in [1, 10000]",
                            o->partitions);
        c->cfg.partitions = (int)v;
    }
    if (o->replication_factor) {
        if (!mc_parse_int64(o->replication_factor, -1, 32, &v) || v == 0)
            return ctl_fail(EXIT_USAGE,
                            "--replication-factor '%s' is not -1 (the broker's default) or 1..32",
                            o->replication_factor);
        c->cfg.replication_factor = (int)v;
    }
    c->cfg.create_topics = true;
    char err[1024];
    rd_kafka_t *rk = ctl_new_consumer(c, NULL, err, sizeof err);
    if (!rk)
        return ctl_fail(EXIT_KAFKA, "%s", err);
    int rc = 0, before[N_TOPICS], after[N_TOPICS];
    char names[N_TOPICS][300];
    const rd_kafka_metadata_t *md = ctl_fetch_metadata(c, rk, err, sizeof err);
    if (!md) {
        rc = ctl_fail(EXIT_KAFKA, "%s", err);
        goto out;
    }
    for (size_t i = 0; i < N_TOPICS; i++) {
        mc_topic_name(&c->cfg,
                      i < mc_n_topic_specs ? mc_topic_specs[i].suffix : "mooncakectl-requeued",
                      names[i], sizeof names[i]);
        before[i] = ctl_md_partitions(md, names[i]);
    }
    rd_kafka_metadata_destroy(md);
    bool created;
    if (mc_topics_ensure(&c->cfg, &c->lg, NULL, NULL, err, sizeof err) != 0 ||
        mc_requeue_ensure_ledger(&c->cfg, rk, TIMEOUT_MS, &created, err, sizeof err) != 0) {
        rc = ctl_fail(EXIT_KAFKA, "%s", err);
        goto out;
    }
    if (!(md = ctl_fetch_metadata(c, rk, err, sizeof err))) {
        rc = ctl_fail(EXIT_KAFKA, "%s", err);
        goto out;
    }
    for (size_t i = 0; i < N_TOPICS; i++)
        after[i] = ctl_md_partitions(md, names[i]);
    rd_kafka_metadata_destroy(md);
    for (size_t i = 0; i < N_TOPICS; i++) {
        if (c->o.json)
            ctl_print_json(json_pack("{s:s, s:i, s:b}", "topic", names[i], "partitions", after[i],
                                     "created", before[i] < 0));
        else
            printf("%-8s %-36s %d partition%s\n", before[i] >= 0 ? "exists" : "created", names[i],
                   after[i], after[i] == 1 ? "" : "s");
        if (before[i] >= 0 && c->o.partitions && i < mc_n_topic_specs &&
            mc_topic_specs[i].partitions <= 0 && after[i] != c->cfg.partitions)
            ctl_report(c,
                       "%s has %d partitions, not the %d asked for: existing topics are left "
                       "as they are",
                       names[i], after[i], c->cfg.partitions);
    }
out:
    rd_kafka_destroy(rk);
    return rc;
}
