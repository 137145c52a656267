/* The gateway's view of the jobs table (see jobs_view.h): a key map of the
 * latest JobState bytes per job, a reader thread that follows the jobs topic
 * into it, and the query that answers GET /jobs from it.
 *
 * The view keeps the bytes as the jobs role wrote them and decodes only what
 * a query shows: records arrive far more often than anyone lists (an every-
 * second job is rewritten every few seconds). A read-write lock lets queries
 * run side by side; the reader takes it to write for one record at a time,
 * so a long query delays the view, never the gateway's submits. */
#include "jobs_view.h"

#include <inttypes.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "codec.h"
#include "job_json.h"
#include "job_schedule.h"
#include "kafka.h"
#include "keymap.h"

#define RETRY_MS 1000
#define POLL_MS 200
/* Short, so a stop during a broker outage is not held up by it. */
#define METADATA_TIMEOUT_MS 1000

/* One job: its key, then its latest state's bytes, in one allocation. */
typedef struct view_entry {
    mc_keynode node;
    uint32_t value_len;
    char key[]; /* key_len bytes, then value_len bytes */
} view_entry;

#define ENTRY_KEY_OFFSET (offsetof(view_entry, key) - offsetof(view_entry, node))

struct mc_jobs_view {
    mc_logger log; /* first: kafka.c's log callback reads the handle's opaque as a logger */
    pthread_rwlock_t lock;
    mc_keymap *jobs; /* under lock */
    atomic_bool loaded, failed;
    atomic_size_t count;
    int64_t warned_ns; /* reader: when a read error was last logged */
    mc_gauge *jobs_gauge, *loaded_gauge;
    /* The schedules' time zones: the cache is one thread's at a time (the
     * zones it hands out are immutable). */
    mc_zone_cache *zones;
    pthread_mutex_t zones_lock;

    const mc_config *cfg;
    pthread_t reader;
    bool reader_started;
    atomic_bool stop;
};

mc_jobs_view *mc_jobs_view_new(mc_metrics *metrics, const char *zoneinfo_dir)
{
    mc_jobs_view *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    /* Writers first: a stream of overlapping GETs must not keep the reader
     * thread, and so the view, waiting. */
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    int rc = pthread_rwlock_init(&v->lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    if (rc != 0) {
        free(v);
        return NULL;
    }
    pthread_mutex_init(&v->zones_lock, NULL);
    v->zones = mc_zone_cache_new(zoneinfo_dir);
    v->jobs = mc_keymap_new(ENTRY_KEY_OFFSET);
    if (metrics) {
        v->jobs_gauge = mc_metrics_gauge(metrics, "mooncake_gateway_jobs_view_jobs",
                                         "Jobs in the gateway's view of the jobs table", NULL);
        v->loaded_gauge = mc_metrics_gauge(
            metrics, "mooncake_gateway_jobs_view_loaded",
            "1 once the gateway has read the jobs table to its end (GET /jobs answers)", NULL);
    }
    if (!v->jobs || !v->zones || (metrics && (!v->jobs_gauge || !v->loaded_gauge))) {
        mc_jobs_view_free(v);
        return NULL;
    }
    return v;
}

static void entry_free(mc_keynode *n, void *arg)
{
    (void)arg;
    free(n);
}

void mc_jobs_view_stop(mc_jobs_view *v)
{
    if (v)
        atomic_store(&v->stop, true);
}

void mc_jobs_view_free(mc_jobs_view *v)
{
    if (!v)
        return;
    mc_jobs_view_stop(v);
    if (v->reader_started)
        pthread_join(v->reader, NULL);
    if (v->jobs) {
        mc_keymap_drain(v->jobs, entry_free, NULL);
        mc_keymap_free(v->jobs);
    }
    mc_zone_cache_free(v->zones);
    pthread_mutex_destroy(&v->zones_lock);
    pthread_rwlock_destroy(&v->lock);
    free(v);
}

static view_entry *find(const mc_jobs_view *v, const void *key, size_t key_len)
{
    return (view_entry *)mc_keymap_find(v->jobs, key, key_len, mc_keymap_hash(key, key_len));
}

int mc_jobs_view_apply(mc_jobs_view *v, const void *key, size_t key_len, const void *value,
                       size_t value_len)
{
    view_entry *e = NULL;
    if (value) {
        if (key_len > UINT32_MAX || value_len > UINT32_MAX ||
            !(e = malloc(sizeof *e + key_len + value_len)))
            return -1;
        e->node.hash = mc_keymap_hash(key, key_len);
        e->node.key_len = (uint32_t)key_len;
        e->value_len = (uint32_t)value_len;
        memcpy(e->key, key, key_len);
        memcpy(e->key + key_len, value, value_len);
    }
    pthread_rwlock_wrlock(&v->lock);
    view_entry *old = find(v, key, key_len);
    if (old)
        mc_keymap_remove(v->jobs, &old->node);
    if (e)
        mc_keymap_insert(v->jobs, &e->node);
    size_t n = mc_keymap_count(v->jobs);
    pthread_rwlock_unlock(&v->lock);
    free(old);
    atomic_store(&v->count, n);
    if (v->jobs_gauge)
        mc_gauge_set(v->jobs_gauge, (double)n);
    return 0;
}

void mc_jobs_view_set_loaded(mc_jobs_view *v)
{
    atomic_store(&v->loaded, true);
    if (v->loaded_gauge)
        mc_gauge_set(v->loaded_gauge, 1);
}

size_t mc_jobs_view_count(mc_jobs_view *v)
{
    return atomic_load(&v->count);
}

/* ---- the query -------------------------------------------------------------------------- */

typedef struct app_scan {
    const char *prefix; /* "app/" */
    size_t prefix_len;
    const char *after; /* NULL, or "app/after" */
    size_t after_len;
    const view_entry **v;
    size_t n, cap;
    bool nomem;
} app_scan;

static int key_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    return c ? c : (alen > blen) - (alen < blen);
}

static void collect_app(mc_keynode *n, void *arg)
{
    app_scan *s = arg;
    const view_entry *e = (const view_entry *)n;
    if (s->nomem || e->node.key_len <= s->prefix_len ||
        memcmp(e->key, s->prefix, s->prefix_len) != 0)
        return;
    if (s->after && key_cmp(e->key, e->node.key_len, s->after, s->after_len) <= 0)
        return;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        const view_entry **grown = realloc(s->v, cap * sizeof *grown);
        if (!grown) {
            s->nomem = true;
            return;
        }
        s->v = grown;
        s->cap = cap;
    }
    s->v[s->n++] = e;
}

static int entry_cmp(const void *a, const void *b)
{
    const view_entry *x = *(const view_entry *const *)a, *y = *(const view_entry *const *)b;
    return key_cmp(x->key, x->node.key_len, y->key, y->node.key_len);
}

/* When the job's next call is due (see mc_job_state_next_fire); -1: none. */
static int64_t next_fire(mc_jobs_view *v, const mc_job_state *st, int64_t now)
{
    pthread_mutex_lock(&v->zones_lock);
    int64_t next = mc_job_state_next_fire(st, v->zones, now);
    pthread_mutex_unlock(&v->zones_lock);
    return next;
}

/* One job as the query shows it; NULL on ENOMEM. A record the codec refuses
 * (only the jobs role writes the topic: a bug or tampering) is shown with
 * its key and why, not hidden. */
static json_t *entry_json(mc_jobs_view *v, const view_entry *e, int64_t now, mc_arena *arena)
{
    mc_job_state st;
    char detail[256] = "";
    mc_codec_err err = mc_decode_job_state(e->key + e->node.key_len, e->value_len, arena, &st,
                                           detail, sizeof detail);
    if (err != MC_CODEC_OK) {
        json_t *bad =
            json_pack("{s:s%, s:s++}", "key", e->key, (size_t)e->node.key_len, "undecodable",
                      mc_codec_strerror(err), detail[0] ? ": " : "", detail);
        /* Tampered bytes: a key that is not UTF-8 cannot be shown as it is. */
        return bad ? bad
                   : json_pack("{s:s, s:s++}", "key", "(not UTF-8)", "undecodable",
                               mc_codec_strerror(err), detail[0] ? ": " : "", "");
    }
    json_t *j = mc_job_state_to_json(&st);
    int64_t next = next_fire(v, &st, now);
    if (j && json_object_set_new(j, "nextFireAt",
                                 next >= 0 ? json_integer((json_int_t)next) : json_null()) != 0) {
        json_decref(j);
        return NULL;
    }
    return j;
}

static bool status_matches(const view_entry *e, const char *status, mc_arena *arena)
{
    if (!status)
        return true;
    mc_job_state st;
    if (mc_decode_job_state_head(e->key + e->node.key_len, e->value_len, arena, &st, NULL, 0) !=
        MC_CODEC_OK)
        return false;
    return strcmp(mc_job_status_name(st.status), status) == 0;
}

/* The query over the collected entries, sorted; the lock is held. */
static json_t *page_json(mc_jobs_view *v, app_scan *s, const mc_jobs_query *q, int64_t now,
                         mc_arena *arena)
{
    if (s->n)
        qsort(s->v, s->n, sizeof *s->v, entry_cmp);
    json_t *jobs = json_array(), *page = json_object();
    if (!jobs || !page)
        goto nomem;
    size_t shown = 0, i = 0;
    const view_entry *last = NULL;
    for (; i < s->n && shown < (size_t)q->limit; i++) {
        mc_arena_reset(arena);
        if (!status_matches(s->v[i], q->status, arena))
            continue;
        json_t *j = entry_json(v, s->v[i], now, arena);
        if (!j || json_array_append_new(jobs, j) != 0)
            goto nomem;
        shown++;
        last = s->v[i];
    }
    /* A next cursor only when something may follow; the client's next page
     * may then be empty (a status filter), which is harmless. */
    json_t *next = i < s->n && last
                       ? json_stringn(last->key + s->prefix_len, last->node.key_len - s->prefix_len)
                       : json_null();
    if (json_object_set_new(page, "jobs", jobs) != 0) {
        jobs = NULL;
        json_decref(next);
        goto nomem;
    }
    jobs = NULL;
    if (json_object_set_new(page, "next", next) != 0)
        goto nomem;
    return page;
nomem:
    json_decref(jobs);
    json_decref(page);
    return NULL;
}

mc_jobs_view_result mc_jobs_view_list(mc_jobs_view *v, const mc_jobs_query *q, int64_t now,
                                      char **data)
{
    *data = NULL;
    if (atomic_load(&v->failed))
        return MC_JOBS_VIEW_FAILED;
    if (!atomic_load(&v->loaded))
        return MC_JOBS_VIEW_LOADING;
    char *prefix = NULL, *after = NULL;
    int plen = asprintf(&prefix, "%s/%s", q->app_id, q->job_id ? q->job_id : "");
    int alen = q->after && plen >= 0 ? asprintf(&after, "%s/%s", q->app_id, q->after) : 0;
    mc_arena *arena = mc_arena_new();
    if (plen < 0 || alen < 0 || !arena) {
        free(prefix);
        free(after);
        mc_arena_free(arena);
        return MC_JOBS_VIEW_NOMEM;
    }
    json_t *out = NULL;
    mc_jobs_view_result res = MC_JOBS_VIEW_OK;
    pthread_rwlock_rdlock(&v->lock);
    if (q->job_id) {
        const view_entry *e = find(v, prefix, (size_t)plen);
        if (!e || !status_matches(e, q->status, arena))
            res = MC_JOBS_VIEW_NOT_FOUND;
        else
            out = entry_json(v, e, now, arena);
    } else {
        app_scan s = {.prefix = prefix,
                      .prefix_len = (size_t)plen,
                      .after = after,
                      .after_len = (size_t)(alen > 0 ? alen : 0)};
        mc_keymap_each(v->jobs, collect_app, &s);
        if (!s.nomem)
            out = page_json(v, &s, q, now, arena);
        free(s.v);
    }
    pthread_rwlock_unlock(&v->lock);
    if (res == MC_JOBS_VIEW_OK) {
        *data = out ? json_dumps(out, JSON_COMPACT) : NULL;
        if (!*data)
            res = MC_JOBS_VIEW_NOMEM;
    }
    json_decref(out);
    mc_arena_free(arena);
    free(prefix);
    free(after);
    return res;
}

/* ---- the reader ------------------------------------------------------------------------- */

static rd_kafka_t *reader_new(mc_jobs_view *v, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = mc_kafka_conf_new(v->cfg, v, err, errlen);
    if (!conf)
        return NULL;
    /* No group: the reader assigns itself every partition, commits nothing,
     * and starts from the beginning each time, like a restore. */
    if (mc_kafka_conf_reader(conf, "mooncake-gateway-jobs-view", err, errlen)) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_t *rk = mc_kafka_new(RD_KAFKA_CONSUMER, conf, "jobs view's consumer", err, errlen);
    if (rk)
        rd_kafka_poll_set_consumer(rk);
    return rk;
}

/* Sleeps up to ms, waking early on stop. */
static void nap(mc_jobs_view *v, int ms)
{
    for (int i = 0; i < ms / 50 && !atomic_load(&v->stop); i++)
        usleep(50 * 1000);
}

/* Assigns every partition of topic from its start; returns the partition
 * count, or 0 while the topic cannot be used yet (logged once). */
static int assign_all(mc_jobs_view *v, rd_kafka_t *rk, const char *topic, bool *warned)
{
    char err[256];
    int n = mc_topic_partition_count(rk, topic, METADATA_TIMEOUT_MS, err, sizeof err);
    rd_kafka_topic_partition_list_t *parts = n > 0 ? rd_kafka_topic_partition_list_new(n) : NULL;
    for (int i = 0; parts && i < n; i++)
        rd_kafka_topic_partition_list_add(parts, topic, i)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_resp_err_t aerr = parts ? rd_kafka_assign(rk, parts) : RD_KAFKA_RESP_ERR__FAIL;
    if (parts)
        rd_kafka_topic_partition_list_destroy(parts);
    if (n > 0 && !aerr)
        return n;
    if (!*warned)
        mc_log(&v->log, MC_LOG_WARN, "jobs view cannot read its topic yet, retrying", "topic",
               topic, "error", n > 0 ? rd_kafka_err2str(aerr) : err, (const char *)NULL);
    *warned = true;
    return 0;
}

/* One message: a record applied, or a partition's end seen (*at_end counts
 * the partitions that reached it). Returns -1 on ENOMEM. */
static int take(mc_jobs_view *v, const rd_kafka_message_t *m, bool *at_end, int *ends)
{
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        if (m->partition >= 0 && !at_end[m->partition]) {
            at_end[m->partition] = true;
            (*ends)++;
        }
        return 0;
    }
    if (m->err) {
        /* librdkafka retries on its own; an outage would repeat this often. */
        int64_t now = mc_mono_ns();
        if (now - v->warned_ns > INT64_C(10000000000)) {
            v->warned_ns = now;
            mc_log(&v->log, MC_LOG_WARN, "jobs view read error", "error",
                   rd_kafka_message_errstr(m), (const char *)NULL);
        }
        return 0;
    }
    if (!m->key)
        return 0;
    return mc_jobs_view_apply(v, m->key, m->key_len, m->payload, m->payload ? m->len : 0);
}

static void *reader_main(void *arg)
{
    mc_jobs_view *v = arg;
    char topic[300], err[600];
    mc_topic_name(v->cfg, "jobs", topic, sizeof topic);
    rd_kafka_t *rk = reader_new(v, err, sizeof err);
    if (!rk) {
        mc_log(&v->log, MC_LOG_ERROR, "jobs view not started: GET /jobs will answer 503", "error",
               err, (const char *)NULL);
        atomic_store(&v->failed, true);
        return NULL;
    }
    bool warned = false;
    int n = 0;
    while (!atomic_load(&v->stop) && (n = assign_all(v, rk, topic, &warned)) == 0)
        nap(v, RETRY_MS);
    bool *at_end = n > 0 ? calloc((size_t)n, sizeof *at_end) : NULL;
    if (n > 0 && !at_end)
        atomic_store(&v->failed, true);
    int ends = 0;
    uint64_t records = 0;
    int64_t started = mc_mono_ns();
    while (at_end && !atomic_load(&v->stop)) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, POLL_MS);
        if (!m)
            continue;
        records += m->err ? 0 : 1;
        int rc = m->partition < n ? take(v, m, at_end, &ends) : 0;
        rd_kafka_message_destroy(m);
        if (rc != 0) {
            /* Out of memory: a view missing a change would list wrongly,
             * so it stops answering instead. */
            mc_log(&v->log, MC_LOG_ERROR, "jobs view out of memory: GET /jobs will answer 503",
                   (const char *)NULL);
            atomic_store(&v->failed, true);
            break;
        }
        if (ends == n && !atomic_load(&v->loaded)) {
            char recs[24], secs[24], jobs[24];
            snprintf(recs, sizeof recs, "%" PRIu64, records);
            snprintf(secs, sizeof secs, "%.3f", (double)(mc_mono_ns() - started) / 1e9);
            snprintf(jobs, sizeof jobs, "%zu", mc_jobs_view_count(v));
            mc_log(&v->log, MC_LOG_INFO, "jobs view loaded", "records", recs, "seconds", secs,
                   "jobs", jobs, (const char *)NULL);
            mc_jobs_view_set_loaded(v);
        }
    }
    free(at_end);
    /* In no group and committing nothing, there is nothing to close
     * gracefully; a close would wait on the broker during an outage. */
    rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    return NULL;
}

int mc_jobs_view_start(mc_jobs_view *v, const mc_config *cfg, const mc_logger *lg, char *err,
                       size_t errlen)
{
    v->cfg = cfg;
    v->log = *lg;
    if (pthread_create(&v->reader, NULL, reader_main, v) != 0) {
        snprintf(err, errlen, "cannot start the jobs view's thread");
        return -1;
    }
    v->reader_started = true;
    return 0;
}
