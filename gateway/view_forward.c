/* Forwarding task questions to the view instance that holds the key's
 * partition (see view_forward.h).
 *
 * The owner table comes from one DescribeConsumerGroups of the view group
 * and is kept for OWNERS_TTL_MS: a rebalance moves partitions seldom, and a
 * question sent to an instance that no longer holds the partition comes
 * back 503, which makes the next question look again. */
#include "view_forward.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "codec.h"
#include "kafka.h"

#define OWNERS_TTL_MS 2000
#define COUNT_TTL_MS 30000
#define DESCRIBE_TIMEOUT_MS 3000
#define FORWARD_TIMEOUT_MS 6000
/* A page of 1000 lines with long URLs fits. */
#define MAX_ANSWER_BYTES (16 << 20)

struct mc_view_forward {
    const mc_config *cfg;
    const mc_logger *lg;
    rd_kafka_t *rk;
    char group[256], topic[256];
    char self[512]; /* this process's advertised client.id; "" when it has none */
    pthread_mutex_t lock;
    int32_t partitions; /* under lock; 0: not known */
    int64_t partitions_at;
    char **owners; /* [partitions] URL or NULL; under lock */
    int32_t n_owners;
    int64_t owners_at;
};

mc_view_forward *mc_view_forward_new(const mc_config *cfg, rd_kafka_t *rk, const mc_logger *lg)
{
    mc_view_forward *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->cfg = cfg;
    f->lg = lg;
    f->rk = rk;
    mc_topic_name(cfg, "view", f->group, sizeof f->group);
    mc_topic_name(cfg, "results", f->topic, sizeof f->topic);
    char err[256];
    if (mc_advertised_client_id(cfg, f->self, sizeof f->self, err, sizeof err) != 0)
        f->self[0] = '\0';
    pthread_mutex_init(&f->lock, NULL);
    return f;
}

static void drop_owners(mc_view_forward *f)
{
    for (int32_t i = 0; i < f->n_owners; i++)
        free(f->owners[i]);
    free(f->owners);
    f->owners = NULL;
    f->n_owners = 0;
    f->owners_at = 0;
}

void mc_view_forward_free(mc_view_forward *f)
{
    if (!f)
        return;
    drop_owners(f);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

int32_t mc_view_forward_count(mc_view_forward *f, char *why, size_t whylen)
{
    int64_t now = mc_mono_ms();
    pthread_mutex_lock(&f->lock);
    int32_t n = f->partitions;
    bool stale = n <= 0 || now - f->partitions_at > COUNT_TTL_MS;
    pthread_mutex_unlock(&f->lock);
    if (stale) {
        int fresh = mc_topic_partition_count(f->rk, f->topic, DESCRIBE_TIMEOUT_MS, why, whylen);
        if (fresh > 0) {
            n = fresh;
            pthread_mutex_lock(&f->lock);
            f->partitions = fresh;
            f->partitions_at = now;
            pthread_mutex_unlock(&f->lock);
        } else if (n <= 0) {
            return -1;
        }
    }
    return n;
}

void mc_view_forward_forget_count(mc_view_forward *f)
{
    pthread_mutex_lock(&f->lock);
    f->partitions_at = 0;
    pthread_mutex_unlock(&f->lock);
}

int32_t mc_view_forward_partition(mc_view_forward *f, const char *app_id, const char *task_id,
                                  char *why, size_t whylen)
{
    int32_t n = mc_view_forward_count(f, why, whylen);
    if (n <= 0)
        return -1;
    size_t need = mc_task_key(app_id, task_id, NULL, 0) + 1;
    char *key = malloc(need);
    if (!key) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    size_t len = mc_task_key(app_id, task_id, key, need);
    int32_t p = mc_key_partition(key, len, n);
    free(key);
    return p;
}

/* The owner of every partition, from the view group's description, into
 * f->owners (under lock, taken here). 0, or -1 with a reason in why. */
static int describe(mc_view_forward *f, char *why, size_t whylen)
{
    rd_kafka_queue_t *q = rd_kafka_queue_new(f->rk);
    rd_kafka_AdminOptions_t *o =
        rd_kafka_AdminOptions_new(f->rk, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS);
    char errstr[256];
    rd_kafka_AdminOptions_set_request_timeout(o, DESCRIBE_TIMEOUT_MS, errstr, sizeof errstr);
    const char *groups[] = {f->group};
    rd_kafka_DescribeConsumerGroups(f->rk, groups, 1, o, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, DESCRIBE_TIMEOUT_MS + 1000);
    int rc = -1;
    const rd_kafka_DescribeConsumerGroups_result_t *res =
        ev ? rd_kafka_event_DescribeConsumerGroups_result(ev) : NULL;
    size_t n_groups = 0;
    const rd_kafka_ConsumerGroupDescription_t **gs =
        res ? rd_kafka_DescribeConsumerGroups_result_groups(res, &n_groups) : NULL;
    if (!ev || !res || rd_kafka_event_error(ev)) {
        snprintf(why, whylen, "the broker did not describe the view group: %s",
                 ev ? rd_kafka_event_error_string(ev) : "no answer");
    } else if (n_groups != 1 || rd_kafka_ConsumerGroupDescription_error(gs[0])) {
        snprintf(why, whylen, "the broker did not describe the view group: %s",
                 n_groups == 1
                     ? rd_kafka_error_string(rd_kafka_ConsumerGroupDescription_error(gs[0]))
                     : "no group");
    } else {
        pthread_mutex_lock(&f->lock);
        drop_owners(f);
        int32_t n = f->partitions > 0 ? f->partitions : 1;
        f->owners = calloc((size_t)n, sizeof *f->owners);
        if (f->owners) {
            f->n_owners = n;
            f->owners_at = mc_mono_ms();
            size_t members = rd_kafka_ConsumerGroupDescription_member_count(gs[0]);
            for (size_t m = 0; m < members; m++) {
                const rd_kafka_MemberDescription_t *md =
                    rd_kafka_ConsumerGroupDescription_member(gs[0], m);
                const char *id = rd_kafka_MemberDescription_client_id(md);
                const rd_kafka_topic_partition_list_t *l =
                    rd_kafka_MemberAssignment_partitions(rd_kafka_MemberDescription_assignment(md));
                if (!id || strncmp(id, MC_ADVERTISED_PREFIX, strlen(MC_ADVERTISED_PREFIX)) != 0 ||
                    !l)
                    continue;
                for (int i = 0; i < l->cnt; i++) {
                    int32_t p = l->elems[i].partition;
                    if (strcmp(l->elems[i].topic, f->topic) != 0 || p < 0 || p >= n)
                        continue;
                    free(f->owners[p]);
                    f->owners[p] = strdup(id);
                }
            }
            rc = 0;
        } else {
            snprintf(why, whylen, "out of memory");
        }
        pthread_mutex_unlock(&f->lock);
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_queue_destroy(q);
    return rc;
}

/* The advertised client.id of p's owner (the caller frees it), or NULL. */
static char *owner_of(mc_view_forward *f, int32_t p, char *why, size_t whylen)
{
    pthread_mutex_lock(&f->lock);
    bool fresh = f->owners && mc_mono_ms() - f->owners_at < OWNERS_TTL_MS;
    pthread_mutex_unlock(&f->lock);
    if (!fresh && describe(f, why, whylen) != 0)
        return NULL;
    pthread_mutex_lock(&f->lock);
    char *id = p >= 0 && p < f->n_owners && f->owners[p] ? strdup(f->owners[p]) : NULL;
    /* Ask again next time: the answer may be a rebalance away. */
    if (!id)
        f->owners_at = 0;
    pthread_mutex_unlock(&f->lock);
    if (!id)
        snprintf(why, whylen, "no view instance holds partition %d now (starting or moving)",
                 (int)p);
    return id;
}

typedef struct answer_buf {
    char *data;
    size_t len;
    bool too_large;
} answer_buf;

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    answer_buf *a = arg;
    size_t add = size * n;
    if (a->len + add > MAX_ANSWER_BYTES) {
        a->too_large = true;
        return 0;
    }
    char *d = realloc(a->data, a->len + add + 1);
    if (!d)
        return 0;
    memcpy(d + a->len, p, add);
    a->data = d;
    a->len += add;
    a->data[a->len] = '\0';
    return add;
}

static int sentence(char **body, const char *why)
{
    *body = strdup(why);
    return 503;
}

/* An easy handle for GET url with the forwarded mark and the client's
 * Authorization, writing into a. *h is the header list to free after. */
static CURL *forward_handle(const char *url, const char *authorization, answer_buf *a,
                            struct curl_slist **h)
{
    CURL *c = curl_easy_init();
    if (!c)
        return NULL;
    *h = curl_slist_append(NULL, MC_FORWARDED_HEADER ": 1");
    if (authorization) {
        size_t n = strlen(authorization) + 32;
        char *line = malloc(n);
        if (line) {
            snprintf(line, n, "Authorization: %s", authorization);
            *h = curl_slist_append(*h, line);
            free(line);
        }
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, *h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)FORWARD_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
    return c;
}

static void look_again(mc_view_forward *f)
{
    pthread_mutex_lock(&f->lock);
    f->owners_at = 0;
    pthread_mutex_unlock(&f->lock);
}

/* Sends one request to the instance holding partition p: GET base + path
 * (with its query), or POST of post_body (JSON) when it is not NULL. */
static int forward_one(mc_view_forward *f, int32_t p, const char *path, const char *post_body,
                       const char *authorization, char **body, bool *relayed)
{
    *body = NULL;
    *relayed = false;
    char why[300];
    char *owner = owner_of(f, p, why, sizeof why);
    if (!owner)
        return sentence(body, why);
    if (f->self[0] && strcmp(owner, f->self) == 0) {
        free(owner);
        look_again(f);
        return sentence(body, "the view's partitions are moving; ask again");
    }
    const char *base = owner + strlen(MC_ADVERTISED_PREFIX);
    answer_buf a = {0};
    struct curl_slist *h = NULL;
    size_t url_len = strlen(base) + strlen(path) + 1;
    char *url = malloc(url_len);
    if (url)
        snprintf(url, url_len, "%s%s", base, path);
    CURL *c = url ? forward_handle(url, authorization, &a, &h) : NULL;
    int status = 503;
    struct curl_slist *with_type =
        c && post_body ? curl_slist_append(h, "Content-Type: application/json") : NULL;
    if (c && post_body && !with_type) {
        curl_easy_cleanup(c); /* the request would go without its headers */
        c = NULL;
    } else if (c && post_body) {
        h = with_type;
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, post_body);
        /* The owner answers once its view has caught up and Kafka has
         * acknowledged: give it that long, so a slow owner is not taken for
         * one that did nothing (the caller would then do it twice). */
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
                         (long)(FORWARD_TIMEOUT_MS + f->cfg->gateway_produce_timeout_ms));
    }
    if (c) {
        CURLcode rc = curl_easy_perform(c);
        long code = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        if (rc == CURLE_OK && code >= 200 && code < 600 && a.data) {
            status = (int)code;
            *body = a.data;
            *relayed = true;
            a.data = NULL;
        } else {
            snprintf(why, sizeof why, "the view instance holding partition %d did not answer: %s%s",
                     (int)p, a.too_large ? "answer too large" : curl_easy_strerror(rc),
                     post_body ? " (it may or may not have done it)" : "");
            status = sentence(body, why);
        }
        if (status == 503)
            look_again(f); /* it may no longer hold the partition */
    } else {
        status = sentence(body, "out of memory");
    }
    free(a.data);
    free(url);
    curl_slist_free_all(h);
    if (c)
        curl_easy_cleanup(c);
    free(owner);
    return status;
}

int mc_view_forward_ask(mc_view_forward *f, int32_t p, const char *app_id, const char *task_id,
                        const char *authorization, char **body, bool *relayed)
{
    char *app = curl_easy_escape(NULL, app_id, 0);
    char *uuid = curl_easy_escape(NULL, task_id, 0);
    char *path = NULL;
    int status;
    if (app && uuid && asprintf(&path, "/api/task?appId=%s&uuid=%s", app, uuid) >= 0) {
        status = forward_one(f, p, path, NULL, authorization, body, relayed);
    } else {
        path = NULL;
        *relayed = false;
        status = sentence(body, "out of memory");
    }
    free(path);
    curl_free(app);
    curl_free(uuid);
    return status;
}

int mc_view_forward_post(mc_view_forward *f, int32_t p, const char *path, const char *post_body,
                         const char *authorization, char **body, bool *relayed)
{
    return forward_one(f, p, path, post_body, authorization, body, relayed);
}

/* One instance's share of a gathered question. */
typedef struct share {
    char *owner; /* advertised client.id */
    char *url;
    CURL *easy;
    struct curl_slist *headers;
    answer_buf answer;
} share;

/* The shares of the n partitions: one per owner, with the URL asking it
 * about its partitions. 0, or -1 with a sentence in why (a partition
 * without an owner, or owned by this process: it is moving). */
static int split(mc_view_forward *f, const char *path, const char *query, const int32_t *parts,
                 size_t n, share *shares, size_t *n_shares, char *why, size_t whylen)
{
    *n_shares = 0;
    for (size_t i = 0; i < n; i++) {
        char *owner = owner_of(f, parts[i], why, whylen);
        if (!owner)
            return -1;
        if (f->self[0] && strcmp(owner, f->self) == 0) {
            free(owner);
            look_again(f);
            snprintf(why, whylen, "the view's partitions are moving; ask again");
            return -1;
        }
        size_t k = 0;
        while (k < *n_shares && strcmp(shares[k].owner, owner) != 0)
            k++;
        char num[16];
        snprintf(num, sizeof num, "%d", (int)parts[i]);
        if (k == *n_shares) {
            const char *base = owner + strlen(MC_ADVERTISED_PREFIX);
            size_t len = strlen(base) + strlen(path) + strlen(query) + 32 + n * 12;
            shares[k] = (share){.owner = owner, .url = malloc(len)};
            (*n_shares)++;
            if (!shares[k].url) {
                snprintf(why, whylen, "out of memory");
                return -1;
            }
            snprintf(shares[k].url, len, "%s%s?%s&partitions=%s", base, path, query, num);
        } else {
            free(owner);
            strcat(shares[k].url, "%2C");
            strcat(shares[k].url, num);
        }
    }
    return 0;
}

/* Runs the shares' requests at once; 0 when all are done. */
static int run_all(CURLM *m, share *shares, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (curl_multi_add_handle(m, shares[i].easy) != CURLM_OK)
            return -1;
    int running = 1;
    while (running) {
        if (curl_multi_perform(m, &running) != CURLM_OK)
            return -1;
        if (running && curl_multi_poll(m, NULL, 0, 1000, NULL) != CURLM_OK)
            return -1;
    }
    return 0;
}

int mc_view_forward_gather(mc_view_forward *f, const char *path, const char *query,
                           const int32_t *parts, size_t n, const char *authorization,
                           json_t **answers, size_t *n_answers, char **body)
{
    *body = NULL;
    if (!n)
        return 200;
    share *shares = calloc(n, sizeof *shares);
    size_t n_shares = 0;
    char why[300] = "out of memory";
    int status = 503;
    CURLM *m = curl_multi_init();
    if (!shares || !m || split(f, path, query, parts, n, shares, &n_shares, why, sizeof why) != 0)
        goto out;
    for (size_t i = 0; i < n_shares; i++)
        if (!(shares[i].easy = forward_handle(shares[i].url, authorization, &shares[i].answer,
                                              &shares[i].headers)))
            goto out;
    if (run_all(m, shares, n_shares) != 0)
        goto out;
    status = 200;
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(m, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        share *sh = NULL;
        for (size_t i = 0; i < n_shares; i++)
            if (shares[i].easy == msg->easy_handle)
                sh = &shares[i];
        long code = 0;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
        json_t *envelope = sh && msg->data.result == CURLE_OK && sh->answer.data
                               ? json_loads(sh->answer.data, 0, NULL)
                               : NULL;
        json_t *data = json_object_get(envelope, "data");
        if (code == 200 && json_is_object(data)) {
            answers[(*n_answers)++] = json_incref(data);
        } else if (status == 200) {
            /* A 4xx is the client's (its token): pass it on as it came. */
            const char *said = json_string_value(json_object_get(envelope, "msg"));
            status = code >= 400 && code < 500 && code != 421 ? (int)code : 503;
            snprintf(why, sizeof why, "the view instance %s did not answer: %s",
                     sh ? sh->owner + strlen(MC_ADVERTISED_PREFIX) : "?",
                     said                           ? said
                     : msg->data.result != CURLE_OK ? curl_easy_strerror(msg->data.result)
                     : sh && sh->answer.too_large   ? "answer too large"
                                                    : "no JSON answer");
            look_again(f);
        }
        json_decref(envelope);
    }
out:
    if (status != 200)
        *body = strdup(why);
    for (size_t i = 0; i < n_shares; i++) {
        if (shares[i].easy) {
            curl_multi_remove_handle(m, shares[i].easy);
            curl_easy_cleanup(shares[i].easy);
        }
        curl_slist_free_all(shares[i].headers);
        free(shares[i].answer.data);
        free(shares[i].url);
        free(shares[i].owner);
    }
    free(shares);
    if (m)
        curl_multi_cleanup(m);
    return status;
}
