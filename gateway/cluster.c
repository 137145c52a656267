/* GET /api/cluster; see cluster.h. */
#include "cluster.h"

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

/* The roles whose consumer groups are described, by group name suffix. */
static const char *const roles[] = {"router", "store", "wheel",  "executor",
                                    "retry",  "jobs",  "alarms", "view"};
#define N_ROLES (sizeof roles / sizeof roles[0])
#define ADMIN_TIMEOUT_MS 3000
/* A whole description gives up after this: while the broker does not
 * answer, an ask thread (and a stopping gateway waiting for it) is held this
 * long at most. */
#define DESCRIBE_DEADLINE_MS 10000
/* How long an answer is reused. */
#define FRESH_MS 1000

struct mc_cluster {
    const mc_config *cfg;
    rd_kafka_t *rk;
    mc_http_server *http;
    pthread_mutex_t lock; /* one question to the broker at a time; the cache */
    char *cached;
    int64_t cached_at;
    /* The last failure, kept as long as an answer: while the broker is down,
     * consoles waiting their turn get it at once instead of asking again. */
    char failed[256];
    int64_t failed_at;
};

mc_cluster *mc_cluster_new(const mc_config *cfg, rd_kafka_t *rk)
{
    mc_cluster *c = calloc(1, sizeof *c);
    if (!c || pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c);
        return NULL;
    }
    c->cfg = cfg;
    c->rk = rk;
    return c;
}

void mc_cluster_free(mc_cluster *c)
{
    if (!c)
        return;
    free(c->cached);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

void mc_cluster_set_http(mc_cluster *c, mc_http_server *http)
{
    pthread_mutex_lock(&c->lock);
    c->http = http;
    pthread_mutex_unlock(&c->lock);
}

/* Waits for an Admin API result on q; NULL with why when none came or it
 * failed. The caller destroys the event. */
static rd_kafka_event_t *admin_result(rd_kafka_queue_t *q, const char *what, char *why,
                                      size_t whylen)
{
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, ADMIN_TIMEOUT_MS + 2000);
    if (!ev) {
        snprintf(why, whylen, "%s: the broker did not answer", what);
        return NULL;
    }
    if (rd_kafka_event_error(ev)) {
        snprintf(why, whylen, "%s: %s", what, rd_kafka_event_error_string(ev));
        rd_kafka_event_destroy(ev);
        return NULL;
    }
    return ev;
}

static rd_kafka_AdminOptions_t *admin_options(rd_kafka_t *rk, rd_kafka_admin_op_t op)
{
    rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(rk, op);
    char errstr[128];
    if (o)
        rd_kafka_AdminOptions_set_request_timeout(o, ADMIN_TIMEOUT_MS, errstr, sizeof errstr);
    return o;
}

/* A member as the answer shows it, and its partitions into owners (a
 * "topic/partition" -> instance object). */
static json_t *member_json(const rd_kafka_MemberDescription_t *m, json_t *owners)
{
    const char *instance = rd_kafka_MemberDescription_group_instance_id(m);
    const char *client = rd_kafka_MemberDescription_client_id(m);
    const char *name = instance && instance[0] ? instance : client;
    json_t *parts = json_array();
    const rd_kafka_MemberAssignment_t *a = rd_kafka_MemberDescription_assignment(m);
    const rd_kafka_topic_partition_list_t *l = a ? rd_kafka_MemberAssignment_partitions(a) : NULL;
    for (int i = 0; l && i < l->cnt; i++) {
        char key[320];
        snprintf(key, sizeof key, "%s/%" PRId32, l->elems[i].topic, l->elems[i].partition);
        json_object_set_new(owners, key, json_string(name));
        json_array_append_new(parts, json_pack("{s:s,s:i}", "topic", l->elems[i].topic, "partition",
                                               (int)l->elems[i].partition));
    }
    return json_pack("{s:s?,s:s?,s:s?,s:s?,s:o}", "memberId",
                     rd_kafka_MemberDescription_consumer_id(m), "instanceId",
                     instance && instance[0] ? instance : NULL, "clientId", client, "host",
                     rd_kafka_MemberDescription_host(m), "partitions", parts);
}

/* Every role group's state and members, into groups[role] (objects with
 * "owners" kept aside for the partitions). */
static int describe(mc_cluster *c, json_t **groups, json_t **owners, char *why, size_t whylen)
{
    char names[N_ROLES][300];
    const char *name_ptrs[N_ROLES];
    for (size_t i = 0; i < N_ROLES; i++) {
        snprintf(names[i], sizeof names[i], "%s%s", c->cfg->topic_prefix, roles[i]);
        name_ptrs[i] = names[i];
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(c->rk);
    rd_kafka_AdminOptions_t *o = admin_options(c->rk, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS);
    rd_kafka_DescribeConsumerGroups(c->rk, name_ptrs, N_ROLES, o, q);
    rd_kafka_event_t *ev = admin_result(q, "DescribeConsumerGroups", why, whylen);
    int rc = ev ? 0 : -1;
    size_t n = 0;
    const rd_kafka_ConsumerGroupDescription_t **gd =
        ev ? rd_kafka_DescribeConsumerGroups_result_groups(
                 rd_kafka_event_DescribeConsumerGroups_result(ev), &n)
           : NULL;
    for (size_t i = 0; i < n; i++) {
        const char *id = rd_kafka_ConsumerGroupDescription_group_id(gd[i]);
        for (size_t r = 0; r < N_ROLES; r++) {
            if (strcmp(id, names[r]) != 0)
                continue;
            const rd_kafka_error_t *e = rd_kafka_ConsumerGroupDescription_error(gd[i]);
            json_t *members = json_array();
            owners[r] = json_object();
            for (size_t m = 0; !e && m < rd_kafka_ConsumerGroupDescription_member_count(gd[i]); m++)
                json_array_append_new(
                    members,
                    member_json(rd_kafka_ConsumerGroupDescription_member(gd[i], m), owners[r]));
            groups[r] = json_pack("{s:s,s:s,s:s,s:o,s:[]}", "role", roles[r], "group", id, "state",
                                  e ? rd_kafka_error_string(e)
                                    : rd_kafka_consumer_group_state_name(
                                          rd_kafka_ConsumerGroupDescription_state(gd[i])),
                                  "members", members, "partitions");
        }
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_queue_destroy(q);
    return rc;
}

/* The group's committed offsets (every partition it committed). NULL with
 * why on failure; caller destroys the list. */
static rd_kafka_topic_partition_list_t *committed(mc_cluster *c, const char *group, char *why,
                                                  size_t whylen)
{
    rd_kafka_ListConsumerGroupOffsets_t *req = rd_kafka_ListConsumerGroupOffsets_new(group, NULL);
    rd_kafka_queue_t *q = rd_kafka_queue_new(c->rk);
    rd_kafka_AdminOptions_t *o = admin_options(c->rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS);
    rd_kafka_ListConsumerGroupOffsets(c->rk, &req, 1, o, q);
    rd_kafka_event_t *ev = admin_result(q, "ListConsumerGroupOffsets", why, whylen);
    rd_kafka_topic_partition_list_t *out = NULL;
    if (ev) {
        size_t n = 0;
        const rd_kafka_group_result_t **gr = rd_kafka_ListConsumerGroupOffsets_result_groups(
            rd_kafka_event_ListConsumerGroupOffsets_result(ev), &n);
        const rd_kafka_error_t *e = n ? rd_kafka_group_result_error(gr[0]) : NULL;
        if (n && !e)
            out = rd_kafka_topic_partition_list_copy(rd_kafka_group_result_partitions(gr[0]));
        else
            snprintf(why, whylen, "ListConsumerGroupOffsets %s: %s", group,
                     e ? rd_kafka_error_string(e) : "no answer");
        rd_kafka_event_destroy(ev);
    }
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_queue_destroy(q);
    rd_kafka_ListConsumerGroupOffsets_destroy(req);
    return out;
}

/* Each committed partition of role r with its end, lag and owner. The ends
 * are asked all at once (a ListOffsets for the latest, per leader). */
static int partitions_of(mc_cluster *c, json_t *group, json_t *owners, char *why, size_t whylen)
{
    rd_kafka_topic_partition_list_t *l =
        committed(c, json_string_value(json_object_get(group, "group")), why, whylen);
    if (!l)
        return -1;
    /* Partitions owned but never committed are listed too. */
    const char *key;
    json_t *owner;
    json_object_foreach(owners, key, owner)
    {
        const char *slash = strrchr(key, '/');
        char topic[300];
        snprintf(topic, sizeof topic, "%.*s", (int)(slash - key), key);
        int32_t p = (int32_t)strtol(slash + 1, NULL, 10);
        if (!rd_kafka_topic_partition_list_find(l, topic, p))
            rd_kafka_topic_partition_list_add(l, topic, p)->offset = RD_KAFKA_OFFSET_INVALID;
    }
    rd_kafka_topic_partition_list_sort(l, NULL, NULL);
    rd_kafka_topic_partition_list_t *ends = rd_kafka_topic_partition_list_copy(l);
    for (int i = 0; i < ends->cnt; i++)
        ends->elems[i].offset = RD_KAFKA_OFFSET_END; /* as a time: the latest offset */
    rd_kafka_resp_err_t err = rd_kafka_offsets_for_times(c->rk, ends, ADMIN_TIMEOUT_MS);
    json_t *parts = json_object_get(group, "partitions");
    for (int i = 0; i < l->cnt; i++) {
        const rd_kafka_topic_partition_t *tp = &l->elems[i];
        int64_t end = !err && !ends->elems[i].err ? ends->elems[i].offset : -1;
        int64_t at = tp->offset;
        char name[320];
        snprintf(name, sizeof name, "%s/%" PRId32, tp->topic, tp->partition);
        /* Lag counts offsets, and a caught-up transactional partition
         * keeps one of a commit marker no one reads. */
        json_t *lag = end >= 0 && at >= 0 ? json_integer(end > at ? end - at : 0) : json_null();
        json_array_append_new(
            parts,
            json_pack("{s:s,s:i,s:o,s:o,s:o,s:O}", "topic", tp->topic, "partition",
                      (int)tp->partition, "committed", at >= 0 ? json_integer(at) : json_null(),
                      "end", end >= 0 ? json_integer(end) : json_null(), "lag", lag, "owner",
                      json_object_get(owners, name) ? json_object_get(owners, name) : json_null()));
    }
    rd_kafka_topic_partition_list_destroy(ends);
    rd_kafka_topic_partition_list_destroy(l);
    return 0;
}

/* Asks the broker; the answer's data, or NULL with why. */
static json_t *ask(mc_cluster *c, char *why, size_t whylen)
{
    json_t *groups[N_ROLES] = {0}, *owners[N_ROLES] = {0};
    json_t *out = NULL;
    if (describe(c, groups, owners, why, whylen) == 0) {
        json_t *list = json_array();
        bool ok = true;
        int64_t deadline = mc_mono_ns() / 1000000 + DESCRIBE_DEADLINE_MS;
        for (size_t r = 0; ok && r < N_ROLES; r++) {
            if (!groups[r])
                continue;
            if (mc_mono_ns() / 1000000 > deadline) {
                snprintf(why, whylen, "the broker took longer than %d ms to describe the groups",
                         DESCRIBE_DEADLINE_MS);
                ok = false;
                break;
            }
            ok = partitions_of(c, groups[r], owners[r], why, whylen) == 0;
            json_array_append(list, groups[r]);
        }
        json_t *process = c->http ? mc_http_ready_json(c->http) : json_null();
        out = ok ? json_pack("{s:o,s:o,s:I}", "groups", list, "process", process, "at",
                             (json_int_t)mc_now_ms())
                 : NULL;
        if (!ok) {
            json_decref(list);
            json_decref(process);
        }
    }
    for (size_t r = 0; r < N_ROLES; r++) {
        json_decref(groups[r]);
        json_decref(owners[r]);
    }
    return out;
}

char *mc_cluster_describe(mc_cluster *c, char *why, size_t whylen)
{
    pthread_mutex_lock(&c->lock);
    int64_t now = mc_mono_ns() / 1000000;
    if (c->failed_at && mc_mono_ns() / 1000000 - c->failed_at < FRESH_MS) {
        snprintf(why, whylen, "%s", c->failed);
        pthread_mutex_unlock(&c->lock);
        return NULL;
    }
    if (!c->cached || now - c->cached_at >= FRESH_MS) {
        json_t *j = ask(c, why, whylen);
        char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        if (text) {
            free(c->cached);
            c->cached = text;
            c->cached_at = now;
            c->failed_at = 0;
        } else {
            snprintf(c->failed, sizeof c->failed, "%s", why);
            c->failed_at = mc_mono_ns() / 1000000;
        }
    }
    char *out = c->cached && mc_mono_ns() / 1000000 - c->cached_at < FRESH_MS + ADMIN_TIMEOUT_MS
                    ? strdup(c->cached)
                    : NULL;
    pthread_mutex_unlock(&c->lock);
    return out;
}
