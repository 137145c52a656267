/* mooncakectl partitions grow --to M: the one supported way to give every
 * mooncake topic more partitions (see layout.h and the README, "Growing the
 * partition count"). Each key's home is its murmur2 partition, so more
 * partitions move keys; done behind mooncake's back, a cancel written after
 * the growth would land where its task is not. This command moves them:
 *
 *   1. every topic but tasks grows to M (new partitions, idle so far);
 *   2. the layout says "growing to M": the routers stop routing, and each
 *      writes a layout marker to its partitions of wheel - the last thing it
 *      routes there under the old layout;
 *   3. tasks grows to M (clients that notice now write under the new
 *      layout; their commands wait in tasks until routing resumes);
 *   4. at its marker, the store and the wheel of every old partition send
 *      the tasks of moved keys to their new homes (versions shifted below
 *      anything written later), and the wheel keeps sending on whatever of
 *      a moved key passes through after it; this waits until both have
 *      committed past their markers, and until every call fired before the
 *      marker has finished (its next attempt, if any, sent on too);
 *   5. the layout says "M partitions": routing resumes, every command now
 *      meets its key's whole history at its new home.
 *
 * Nothing is lost meanwhile - commands wait in tasks - and it can be run
 * again after an interruption: it goes on from where the layout says. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "kafka.h"
#include "layout.h"
#include "mooncakectl.h"

#define POLL_MS 1000

static int on_layout_record(void *arg, const rd_kafka_message_t *m)
{
    mc_layout *l = arg, next;
    if (m->key && m->key_len == sizeof MC_LAYOUT_KEY - 1 &&
        memcmp(m->key, MC_LAYOUT_KEY, m->key_len) == 0 &&
        mc_layout_parse(m->payload, m->len, &next))
        mc_layout_move(l, &next); /* the last one wins */
    return 0;
}

/* The layout in force: the last record, or the partition count of tasks
 * when none was ever written (a cluster from before layouts). */
static int current_layout(ctl *c, rd_kafka_t *rk, int tasks, mc_layout *l, char *err, size_t errlen)
{
    char topic[300];
    mc_topic_name(&c->cfg, "layout", topic, sizeof topic);
    part_scan ps;
    *l = (mc_layout){0};
    if (ctl_plan_scan(rk, topic, 1, -1, &ps, err, errlen) != 0)
        return -1;
    int rc = ctl_scan(c, rk, topic, &ps, 1, false, on_layout_record, l, NULL);
    if (rc != 0) {
        mc_layout_free(l);
        snprintf(err, errlen, "cannot read %s", topic);
        return -1;
    }
    if (!l->partitions)
        *l = (mc_layout){.partitions = tasks};
    return 0;
}

static int write_layout(ctl *c, const mc_layout *l, char *err, size_t errlen)
{
    char topic[300];
    mc_topic_name(&c->cfg, "layout", topic, sizeof topic);
    size_t n = mc_layout_format(l, NULL, 0);
    char *value = malloc(n + 1);
    if (!value) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    mc_layout_format(l, value, n + 1);
    rd_kafka_t *rk = ctl_new_producer(c, NULL, err, errlen);
    int rc = rk ? ctl_produce_wait(c, rk, topic, 0, MC_LAYOUT_KEY, sizeof MC_LAYOUT_KEY - 1, value,
                                   n, err, errlen)
                : -1;
    if (rk)
        rd_kafka_destroy(rk);
    if (rc == 0)
        ctl_report(c, "layout: %.200s%s", value, n > 200 ? "..." : "");
    free(value);
    return rc;
}

/* Where each of the first n partitions of tasks ends, as rk is told: the
 * high watermark, or for a read_committed rk the last stable offset. 0, or
 * -1 with a line in err. */
static int tasks_ends(ctl *c, rd_kafka_t *rk, int n, int64_t *ends, char *err, size_t errlen)
{
    char topic[300];
    mc_topic_name(&c->cfg, "tasks", topic, sizeof topic);
    for (int q = 0; q < n; q++) {
        int64_t lo;
        rd_kafka_resp_err_t e =
            rd_kafka_query_watermark_offsets(rk, topic, q, &lo, &ends[q], TIMEOUT_MS);
        if (e) {
            snprintf(err, errlen, "reading where %s [%d] ends: %s", topic, q, rd_kafka_err2str(e));
            return -1;
        }
    }
    return 0;
}

/* The split: where each old partition of tasks ends now, just after tasks
 * grew. A command below it on its key's old home was written before the
 * growth; one after, by a client that has not noticed it (layout.h). The
 * high watermark, not the last stable offset: a command written before the
 * growth behind a transaction still open (the jobs role's, a requeue's)
 * would count as written after it, go home through tasks with a version
 * newer than a later command written straight to the new home, and beat
 * it (a cancel lost). */
static int read_split(ctl *c, int old, mc_layout *l, char *err, size_t errlen)
{
    int64_t *split = calloc((size_t)old, sizeof *split);
    if (!split) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    rd_kafka_t *rk = ctl_new_end_asker(c, err, errlen);
    int rc = rk ? tasks_ends(c, rk, old, split, err, errlen) : -1;
    if (rk)
        rd_kafka_destroy(rk);
    if (rc != 0) {
        free(split);
        return -1;
    }
    free(l->split);
    l->split = split;
    l->n_split = old;
    return 0;
}

/* Grows the topics of suffixes to m partitions (those below it). */
static int grow_topics(ctl *c, rd_kafka_t *rk, const char *const *suffixes, size_t n, int m,
                       char *err, size_t errlen)
{
    const rd_kafka_metadata_t *md = ctl_fetch_metadata(c, rk, err, errlen);
    if (!md)
        return -1;
    rd_kafka_NewPartitions_t *np[16];
    size_t k = 0;
    char names[16][300];
    for (size_t i = 0; i < n && k < 16; i++) {
        mc_topic_name(&c->cfg, suffixes[i], names[k], sizeof names[k]);
        int have = ctl_md_partitions(md, names[k]);
        if (have < 0 && strcmp(suffixes[i], "views") == 0)
            continue; /* no view was ever run: its topic is made with the grown count */
        if (have < 0) {
            snprintf(err, errlen, "topic %s does not exist (mooncakectl topics create)", names[k]);
            rd_kafka_metadata_destroy(md);
            for (size_t j = 0; j < k; j++)
                rd_kafka_NewPartitions_destroy(np[j]);
            return -1;
        }
        if (have >= m)
            continue;
        char errstr[256];
        np[k] = rd_kafka_NewPartitions_new(names[k], (size_t)m, errstr, sizeof errstr);
        if (!np[k]) {
            snprintf(err, errlen, "%s: %s", names[k], errstr);
            rd_kafka_metadata_destroy(md);
            for (size_t j = 0; j < k; j++)
                rd_kafka_NewPartitions_destroy(np[j]);
            return -1;
        }
        ctl_report(c, "growing %s from %d to %d partitions", names[k], have, m);
        k++;
    }
    rd_kafka_metadata_destroy(md);
    if (k == 0)
        return 0;
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *opts =
        rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATEPARTITIONS);
    char errstr[256];
    rd_kafka_AdminOptions_set_operation_timeout(opts, TIMEOUT_MS, errstr, sizeof errstr);
    rd_kafka_CreatePartitions(rk, np, k, opts, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, TIMEOUT_MS + 10000);
    int rc = -1;
    if (!ev) {
        snprintf(err, errlen, "CreatePartitions: no answer");
    } else if (rd_kafka_event_error(ev)) {
        snprintf(err, errlen, "CreatePartitions: %s", rd_kafka_event_error_string(ev));
    } else {
        size_t cnt;
        const rd_kafka_topic_result_t **res = rd_kafka_CreatePartitions_result_topics(
            rd_kafka_event_CreatePartitions_result(ev), &cnt);
        rc = 0;
        for (size_t i = 0; i < cnt && rc == 0; i++) {
            if (rd_kafka_topic_result_error(res[i])) {
                snprintf(err, errlen, "growing %s: %s", rd_kafka_topic_result_name(res[i]),
                         rd_kafka_topic_result_error_string(res[i]));
                rc = -1;
            }
        }
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(opts);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewPartitions_destroy_array(np, k);
    return rc;
}

/* A consumer group of a role and the topic it reads. */
typedef struct group_input {
    const char *group, *topic; /* suffixes */
} group_input;

/* Whether the members of group (full name) together have every partition
 * below m of topic: 1 yes (or the group has no members: when they start
 * they get all), 0 not yet, -1 when the broker cannot say (in err). */
static int group_covers(rd_kafka_t *rk, const char *group, const char *topic, int m, char *err,
                        size_t errlen)
{
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *opts =
        rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS);
    char errstr[256];
    rd_kafka_AdminOptions_set_request_timeout(opts, TIMEOUT_MS, errstr, sizeof errstr);
    const char *groups[] = {group};
    rd_kafka_DescribeConsumerGroups(rk, groups, 1, opts, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, TIMEOUT_MS + 10000);
    int rc = -1;
    size_t cnt = 0;
    const rd_kafka_ConsumerGroupDescription_t **gd = NULL;
    if (!ev)
        snprintf(err, errlen, "describing group %s: no answer", group);
    else if (rd_kafka_event_error(ev))
        snprintf(err, errlen, "describing group %s: %s", group, rd_kafka_event_error_string(ev));
    else if (!(gd = rd_kafka_DescribeConsumerGroups_result_groups(
                   rd_kafka_event_DescribeConsumerGroups_result(ev), &cnt)) ||
             cnt != 1)
        snprintf(err, errlen, "describing group %s: no description", group);
    else if (rd_kafka_ConsumerGroupDescription_error(gd[0]))
        snprintf(err, errlen, "describing group %s: %s", group,
                 rd_kafka_error_string(rd_kafka_ConsumerGroupDescription_error(gd[0])));
    else if (rd_kafka_ConsumerGroupDescription_state(gd[0]) != RD_KAFKA_CONSUMER_GROUP_STATE_STABLE)
        rc = rd_kafka_ConsumerGroupDescription_member_count(gd[0]) == 0;
    else {
        bool *have = calloc((size_t)m, sizeof *have);
        int covered = 0;
        size_t members = rd_kafka_ConsumerGroupDescription_member_count(gd[0]);
        for (size_t i = 0; have && i < members; i++) {
            const rd_kafka_topic_partition_list_t *ps =
                rd_kafka_MemberAssignment_partitions(rd_kafka_MemberDescription_assignment(
                    rd_kafka_ConsumerGroupDescription_member(gd[0], i)));
            for (int j = 0; ps && j < ps->cnt; j++) {
                int32_t pn = ps->elems[j].partition;
                if (strcmp(ps->elems[j].topic, topic) == 0 && pn >= 0 && pn < m && !have[pn]) {
                    have[pn] = true;
                    covered++;
                }
            }
        }
        rc = have ? members == 0 || covered == m : -1;
        if (!have)
            snprintf(err, errlen, "out of memory");
        free(have);
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(opts);
    rd_kafka_queue_destroy(q);
    return rc;
}

/* Waits until each running group reads every one of the m partitions of
 * its topic: a consumer learns of new partitions from its next metadata
 * refresh and then rebalances, and until then a task sent to a new
 * partition would wait. */
static int wait_for_groups(ctl *c, rd_kafka_t *rk, const group_input *gi, size_t n, int m,
                           int64_t timeout_ms, char *err, size_t errlen)
{
    int64_t start = mc_now_ms(), last_report = 0;
    for (size_t i = 0; i < n;) {
        char group[300], topic[300];
        mc_topic_name(&c->cfg, gi[i].group, group, sizeof group);
        mc_topic_name(&c->cfg, gi[i].topic, topic, sizeof topic);
        int rc = group_covers(rk, group, topic, m, err, errlen);
        if (rc < 0)
            return -1;
        if (rc == 1) {
            i++;
            continue;
        }
        int64_t now = mc_now_ms();
        if (now - last_report >= 5000) {
            last_report = now;
            ctl_report(c, "waiting for group %s to read all %d partitions of %s", group, m, topic);
        }
        if (now - start >= timeout_ms) {
            snprintf(err, errlen,
                     "gave up after %" PRId64 " s waiting for group %s to read all %d partitions "
                     "of %s; run this again to go on",
                     timeout_ms / 1000, group, m, topic);
            return -1;
        }
        if (ctl_stop_requested(c)) {
            snprintf(err, errlen, "interrupted: run this again to go on");
            return -1;
        }
        usleep(POLL_MS * 1000);
    }
    return 0;
}

/* What the store and the wheel of each old partition say in their
 * committed metadata about the growth to m. */
typedef struct progress_state {
    int moved_store, moved_wheel, calls_done, old;
    int32_t first_waiting; /* a partition still waited for, or -1 */
    const char *waiting_for;
} progress_state;

static int read_progress(ctl *c, rd_kafka_t *store_g, rd_kafka_t *wheel_g, int old, int m,
                         progress_state *ps, char *err, size_t errlen)
{
    char topic[300];
    mc_topic_name(&c->cfg, "wheel", topic, sizeof topic);
    *ps = (progress_state){.old = old, .first_waiting = -1};
    rd_kafka_topic_partition_list_t *ls = rd_kafka_topic_partition_list_new(old),
                                    *lw = rd_kafka_topic_partition_list_new(old);
    for (int q = 0; q < old; q++) {
        rd_kafka_topic_partition_list_add(ls, topic, q);
        rd_kafka_topic_partition_list_add(lw, topic, q);
    }
    rd_kafka_resp_err_t e = rd_kafka_committed(store_g, ls, TIMEOUT_MS);
    if (!e)
        e = rd_kafka_committed(wheel_g, lw, TIMEOUT_MS);
    if (e) {
        snprintf(err, errlen, "committed offsets of the store and wheel groups: %s",
                 rd_kafka_err2str(e));
        rd_kafka_topic_partition_list_destroy(ls);
        rd_kafka_topic_partition_list_destroy(lw);
        return -1;
    }
    for (int q = 0; q < old; q++) {
        mc_store_checkpoint sc = {0};
        mc_wheel_checkpoint wc = {0};
        bool s_ok =
            mc_store_checkpoint_parse(ls->elems[q].metadata, ls->elems[q].metadata_size, &sc) &&
            sc.layout == m;
        bool w_ok =
            mc_wheel_checkpoint_parse(lw->elems[q].metadata, lw->elems[q].metadata_size, &wc) &&
            wc.layout == m;
        ps->moved_store += s_ok;
        ps->moved_wheel += w_ok;
        ps->calls_done += w_ok && wc.layout_done;
        if (ps->first_waiting < 0 && !(s_ok && w_ok && wc.layout_done)) {
            ps->first_waiting = q;
            ps->waiting_for = !s_ok   ? "the store to move its tasks"
                              : !w_ok ? "the wheel to move its tasks"
                                      : "the calls fired before the marker to finish";
        }
    }
    rd_kafka_topic_partition_list_destroy(ls);
    rd_kafka_topic_partition_list_destroy(lw);
    return 0;
}

/* Waits until every old partition has moved its keys (and, unless
 * calls_optional, until the calls fired there before the marker have
 * finished), or the timeout. */
static int wait_for_moves(ctl *c, int old, int m, int64_t timeout_ms, bool calls_optional,
                          char *err, size_t errlen)
{
    char g_store[300], g_wheel[300];
    mc_topic_name(&c->cfg, "store", g_store, sizeof g_store);
    mc_topic_name(&c->cfg, "wheel", g_wheel, sizeof g_wheel);
    rd_kafka_t *sg = ctl_new_consumer(c, g_store, err, errlen);
    rd_kafka_t *wg = sg ? ctl_new_consumer(c, g_wheel, err, errlen) : NULL;
    if (!sg || !wg) {
        if (sg)
            rd_kafka_destroy(sg);
        return -1;
    }
    int64_t start = mc_now_ms(), last_report = 0;
    int rc = -1;
    for (;;) {
        progress_state ps;
        if (read_progress(c, sg, wg, old, m, &ps, err, errlen) != 0)
            break;
        bool moved = ps.moved_store == old && ps.moved_wheel == old;
        if (moved && (ps.calls_done == old || calls_optional)) {
            ctl_report(c, "every partition has moved its keys%s",
                       ps.calls_done == old ? " and finished its calls from before"
                                            : " (calls from before still running)");
            rc = 0;
            break;
        }
        int64_t now = mc_now_ms();
        if (now - last_report >= 5000) {
            last_report = now;
            ctl_report(c,
                       "waiting: %d/%d stores and %d/%d wheels moved their keys, %d/%d "
                       "partitions' calls from before finished (partition %d: %s)",
                       ps.moved_store, old, ps.moved_wheel, old, ps.calls_done, old,
                       ps.first_waiting, ps.waiting_for);
        }
        if (now - start >= timeout_ms) {
            snprintf(err, errlen,
                     "gave up after %" PRId64 " s waiting for partition %d: %s (are the store, "
                     "wheel, executor and retry running?). Routing stays stopped; run this again "
                     "to go on%s",
                     timeout_ms / 1000, ps.first_waiting, ps.waiting_for,
                     moved ? ", or with --no-wait-for-calls to resume routing now" : "");
            break;
        }
        if (ctl_stop_requested(c)) {
            snprintf(err, errlen, "interrupted; routing stays stopped: run this again to go on");
            break;
        }
        usleep(POLL_MS * 1000);
    }
    rd_kafka_destroy(sg);
    rd_kafka_destroy(wg);
    return rc;
}

/* Waits until a read_committed reader (rk) reads each old partition of tasks
 * up to the split: every transaction open below it has ended (committed or
 * aborted; a dead instance's at its transaction timeout). A command written
 * before the growth behind one is read only then, and routing resumes only
 * after that, so the command reaches its new home with what was written
 * there after the growth, not seconds later, when the new home may have
 * forgotten what those told it (a cancel's floor). */
static int wait_for_split_readable(ctl *c, rd_kafka_t *rk, const mc_layout *l, int64_t timeout_ms,
                                   char *err, size_t errlen)
{
    char topic[300];
    mc_topic_name(&c->cfg, "tasks", topic, sizeof topic);
    int64_t *ends = calloc((size_t)l->n_split, sizeof *ends);
    if (!ends) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int64_t start = mc_now_ms(), last_report = 0;
    int rc = -1;
    for (;;) {
        if (tasks_ends(c, rk, l->n_split, ends, err, errlen) != 0)
            break;
        int waiting = -1;
        for (int q = 0; q < l->n_split && waiting < 0; q++)
            if (ends[q] < l->split[q])
                waiting = q;
        if (waiting < 0) {
            rc = 0;
            break;
        }
        int64_t now = mc_now_ms();
        if (now - last_report >= 5000) {
            last_report = now;
            ctl_report(c,
                       "waiting for a transaction open on %s [%d] below the split to end (at "
                       "most its producer's transaction timeout)",
                       topic, waiting);
        }
        if (now - start >= timeout_ms) {
            snprintf(err, errlen,
                     "gave up after %" PRId64 " s waiting for a transaction open on %s [%d] "
                     "below the split to end. Routing stays stopped; run this again to go on",
                     timeout_ms / 1000, topic, waiting);
            break;
        }
        if (ctl_stop_requested(c)) {
            snprintf(err, errlen, "interrupted; routing stays stopped: run this again to go on");
            break;
        }
        usleep(POLL_MS * 1000);
    }
    free(ends);
    return rc;
}

int ctl_cmd_partitions_grow(ctl *c)
{
    const ctl_opts *o = &c->o;
    int64_t m, timeout_s = 600;
    if (!o->to || !mc_parse_int64(o->to, 2, 10000, &m))
        return ctl_fail(EXIT_USAGE, "--to needs the new partition count, an integer in [2, 10000]");
    if (o->timeout && !mc_parse_int64(o->timeout, 1, 86400, &timeout_s))
        return ctl_fail(EXIT_USAGE, "--timeout '%s' is not a number of seconds in [1, 86400]",
                        o->timeout);
    char err[1024], tasks_topic[300];
    mc_topic_name(&c->cfg, "tasks", tasks_topic, sizeof tasks_topic);
    rd_kafka_t *rk = ctl_new_consumer(c, NULL, err, sizeof err);
    if (!rk)
        return ctl_fail(EXIT_KAFKA, "%s", err);
    int rc = 0;
    int tasks = ctl_topic_partitions(c, rk, tasks_topic, err, sizeof err);
    mc_layout l = {0}, growing = {0};
    if (tasks <= 0 || current_layout(c, rk, tasks, &l, err, sizeof err) != 0) {
        rc = ctl_fail(EXIT_KAFKA, "%s", err);
        goto out;
    }
    if (l.growing_to && l.growing_to != m) {
        rc = ctl_fail(EXIT_USAGE,
                      "a growth to %" PRId32 " partitions is under way: finish it "
                      "first (mooncakectl partitions grow --to %" PRId32 ")",
                      l.growing_to, l.growing_to);
        goto out;
    }
    if (!l.growing_to && l.partitions >= m) {
        if (l.partitions == m && tasks == m) {
            ctl_report(c, "every topic already has %" PRId64 " partitions", m);
            goto out;
        }
        rc = ctl_fail(EXIT_USAGE,
                      "the layout has %" PRId32 " partitions: the count can only grow (--to "
                      "more than %" PRId32 ")",
                      l.partitions, l.partitions);
        goto out;
    }
    int old = l.partitions;
    if (l.growing_to && l.split)
        mc_layout_move(&growing, &l); /* a second run: keep the first run's split */
    else
        growing = (mc_layout){.partitions = old, .growing_to = (int32_t)m};
    static const char *const internal[] = {"store",   "wheel", "ready", "retry",
                                           "results", "dead",  "views"};
    static const char *const task_topic[] = {"tasks"};
    /* The tasks that move go to new partitions: their readers first. */
    static const group_input readers[] = {
        {"wheel", "wheel"}, {"store", "wheel"}, {"executor", "ready"}, {"retry", "retry"}};
    static const group_input router[] = {{"router", "tasks"}};
    int64_t timeout_ms = timeout_s * 1000;
    if (grow_topics(c, rk, internal, sizeof internal / sizeof internal[0], (int)m, err,
                    sizeof err) != 0 ||
        wait_for_groups(c, rk, readers, sizeof readers / sizeof readers[0], (int)m, timeout_ms, err,
                        sizeof err) != 0 ||
        (!l.growing_to && write_layout(c, &growing, err, sizeof err) != 0) ||
        grow_topics(c, rk, task_topic, 1, (int)m, err, sizeof err) != 0 ||
        (!growing.split && (read_split(c, old, &growing, err, sizeof err) != 0 ||
                            write_layout(c, &growing, err, sizeof err) != 0))) {
        rc = ctl_fail(EXIT_KAFKA, "%s", err);
        goto out;
    }
    ctl_report(c, "routing stopped; waiting for the store and the wheel to move the keys whose "
                  "home changes");
    if (wait_for_moves(c, old, (int)m, timeout_ms, o->no_wait_calls, err, sizeof err) != 0 ||
        wait_for_groups(c, rk, router, 1, (int)m, timeout_ms, err, sizeof err) != 0 ||
        wait_for_split_readable(c, rk, &growing, timeout_ms, err, sizeof err) != 0) {
        rc = ctl_fail(EXIT_KAFKA, "%s", err);
        goto out;
    }
    mc_layout grown = {.partitions = (int32_t)m,
                       .previous = old,
                       .n_split = growing.n_split,
                       .split = growing.split};
    if (write_layout(c, &grown, err, sizeof err) != 0) {
        rc = ctl_fail(EXIT_KAFKA, "%s", err);
        goto out;
    }
    if (o->json)
        ctl_print_json(json_pack("{s:i, s:i}", "from", old, "to", (int)m));
    else
        printf("grown from %d to %" PRId64 " partitions; routing resumes\n", old, m);
out:
    mc_layout_free(&growing);
    mc_layout_free(&l);
    rd_kafka_destroy(rk);
    return rc;
}
