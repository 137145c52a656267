/* GET /api/dead-letters and POST /api/dead-letters/requeue (see
 * dead_letters.h). Reading and requeueing are common/dead_record.h,
 * topic_scan.h and requeue.h, the same code mooncakectl dead and requeue
 * run; what is here is the HTTP side: parameters, the answer's JSON, and
 * how many runs at once. */
#include "dead_letters.h"

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "dead_record.h"
#include "heap.h"
#include "kafka.h"
#include "redact.h"
#include "requeue.h"
#include "task_json.h"
#include "topic_scan.h"
#include "view_task.h"

#define DEFAULT_LIMIT 100
#define MAX_LIMIT 1000
#define MAX_LETTERS 1000
#define DEFAULT_WINDOW_MS (24 * 3600 * 1000LL)
#define KAFKA_TIMEOUT_MS 30000
/* Listings reading dead at once; more get 503 (each holds a consumer). */
#define MAX_LISTINGS 4
/* Requeues waiting for the one running; more get 503, and so does one that
 * waited this long. */
#define MAX_REQUEUES_WAITING 4
#define REQUEUE_WAIT_MS 60000

struct mc_dead_api {
    mc_logger log; /* first: kafka.c's log callback reads the handle's opaque as a logger */
    const mc_config *cfg;
    const atomic_bool *stopping;
    atomic_int listings, requeues;
    /* One requeue at a time in this gateway: a second transactional
     * producer with the fixed id would fence the first. */
    pthread_mutex_t requeue_lock;
};

struct mc_dead_job {
    bool requeue;
    char *app_id;
    char *reason;      /* listing: NULL for any */
    int64_t from, to;  /* listing: record timestamps, inclusive */
    int limit;         /* listing */
    mc_letter_ref *in; /* requeue: as given */
    size_t n_in;
};

mc_dead_api *mc_dead_api_new(const mc_config *cfg, const mc_logger *lg, const atomic_bool *stopping)
{
    mc_dead_api *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->log = *lg;
    a->cfg = cfg;
    a->stopping = stopping;
    pthread_mutex_init(&a->requeue_lock, NULL);
    return a;
}

void mc_dead_api_free(mc_dead_api *a)
{
    if (!a)
        return;
    pthread_mutex_destroy(&a->requeue_lock);
    free(a);
}

void mc_dead_job_free(mc_dead_job *j)
{
    if (!j)
        return;
    free(j->app_id);
    free(j->reason);
    free(j->in);
    free(j);
}

const char *mc_dead_job_app(const mc_dead_job *j)
{
    return j->app_id;
}

/* ---- checking requests ----------------------------------------------------------- */

static bool app_ok(const char *app, char *why, size_t whylen)
{
    if (!app || !app[0])
        snprintf(why, whylen, "appId: required");
    else if (strlen(app) > MC_JSON_MAX_ID_LEN)
        snprintf(why, whylen, "appId: longer than %d bytes", MC_JSON_MAX_ID_LEN);
    else if (strchr(app, '/'))
        snprintf(why, whylen, "appId: must not contain '/'");
    else
        return true;
    return false;
}

unsigned mc_dead_job_list(const mc_kv *args, size_t n, int64_t now_ms, mc_dead_job **job, char *why,
                          size_t whylen)
{
    const char *app = NULL, *reason = NULL, *from = NULL, *to = NULL, *limit = NULL;
    for (size_t i = 0; i < n; i++) {
        const char **slot = strcmp(args[i].key, "appId") == 0    ? &app
                            : strcmp(args[i].key, "reason") == 0 ? &reason
                            : strcmp(args[i].key, "from") == 0   ? &from
                            : strcmp(args[i].key, "to") == 0     ? &to
                            : strcmp(args[i].key, "limit") == 0  ? &limit
                                                                 : NULL;
        if (!slot) {
            snprintf(why, whylen,
                     "unknown parameter '%.100s': GET /api/dead-letters takes appId, reason, "
                     "from, to, limit",
                     args[i].key);
            return 400;
        }
        if (!args[i].value || !args[i].value[0]) {
            snprintf(why, whylen, "%s: has no value", args[i].key);
            return 400;
        }
        *slot = args[i].value;
    }
    int64_t f = now_ms - DEFAULT_WINDOW_MS, t = INT64_MAX, l = DEFAULT_LIMIT;
    if (!app_ok(app, why, whylen))
        return 400;
    if (from && !mc_parse_int64(from, 0, INT64_MAX, &f)) {
        snprintf(why, whylen, "from: not epoch milliseconds: '%.40s'", from);
        return 400;
    }
    if (to && !mc_parse_int64(to, 0, INT64_MAX, &t)) {
        snprintf(why, whylen, "to: not epoch milliseconds: '%.40s'", to);
        return 400;
    }
    if (t < f) {
        snprintf(why, whylen, "to: before from");
        return 400;
    }
    if (limit && !mc_parse_int64(limit, 1, MAX_LIMIT, &l)) {
        snprintf(why, whylen, "limit: must be 1 to %d, not '%.40s'", MAX_LIMIT, limit);
        return 400;
    }
    mc_dead_job *j = calloc(1, sizeof *j);
    if (!j || !(j->app_id = strdup(app)) || (reason && !(j->reason = strdup(reason)))) {
        mc_dead_job_free(j);
        snprintf(why, whylen, "out of memory");
        return 500;
    }
    j->from = f;
    j->to = t;
    j->limit = (int)l;
    *job = j;
    return 0;
}

/* letters[i].name as a whole number in [0, max]. */
static bool take_int(json_t *letter, size_t i, const char *name, int64_t max, int64_t *out,
                     char *why, size_t whylen)
{
    json_t *v = json_object_get(letter, name);
    if (!json_is_integer(v))
        snprintf(why, whylen, "letters[%zu].%s: %s", i, name, v ? "not an integer" : "required");
    else if (json_integer_value(v) < 0 || json_integer_value(v) > max)
        snprintf(why, whylen, "letters[%zu].%s: out of range", i, name);
    else {
        *out = json_integer_value(v);
        return true;
    }
    return false;
}

unsigned mc_dead_job_requeue(const char *body, size_t len, mc_dead_job **job, char *why,
                             size_t whylen)
{
    json_error_t jerr;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    mc_dead_job *j = NULL;
    unsigned status = 400;
    if (!root || !json_is_object(root)) {
        snprintf(why, whylen, "body: not a JSON object%s%.200s", root ? "" : ": ",
                 root ? "" : jerr.text);
        goto out;
    }
    json_t *app = json_object_get(root, "appId"), *letters = json_object_get(root, "letters");
    if (app && !json_is_string(app)) {
        snprintf(why, whylen, "appId: not a string");
        goto out;
    }
    if (!app_ok(json_string_value(app), why, whylen))
        goto out;
    size_t n = json_array_size(letters);
    if (!json_is_array(letters) || n < 1 || n > MAX_LETTERS) {
        snprintf(why, whylen, "letters: %s",
                 letters ? "must be an array of 1 to 1000 letters" : "required");
        goto out;
    }
    status = 500;
    if (!(j = calloc(1, sizeof *j)) || !(j->app_id = strdup(json_string_value(app))) ||
        !(j->in = calloc(n, sizeof *j->in))) {
        snprintf(why, whylen, "out of memory");
        goto out;
    }
    status = 400;
    j->requeue = true;
    j->n_in = n;
    for (size_t i = 0; i < n; i++) {
        json_t *l = json_array_get(letters, i);
        int64_t p, o;
        if (!json_is_object(l)) {
            snprintf(why, whylen, "letters[%zu]: not an object", i);
            goto out;
        }
        if (!take_int(l, i, "partition", INT32_MAX, &p, why, whylen) ||
            !take_int(l, i, "offset", INT64_MAX, &o, why, whylen))
            goto out;
        j->in[i] = (mc_letter_ref){(int32_t)p, o};
    }
    *job = j;
    j = NULL;
    status = 0;
out:
    mc_dead_job_free(j);
    json_decref(root);
    return status;
}

/* ---- Kafka ----------------------------------------------------------------------- */

static bool stop_asked(void *arg)
{
    return atomic_load(((mc_dead_api *)arg)->stopping);
}

/* A read_committed consumer of the gateway's, assign()ed only, with group
 * (whose offsets a requeue's transaction commits). NULL with err. */
static rd_kafka_t *consumer_new(mc_dead_api *a, const char *group, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = mc_kafka_conf_new(a->cfg, a, err, errlen);
    if (conf && mc_kafka_conf_default(a->cfg, conf, "client.id", "mooncake-gateway", err, errlen)) {
        rd_kafka_conf_destroy(conf);
        conf = NULL;
    }
    return conf ? mc_scan_consumer_new(conf, group, err, errlen) : NULL;
}

/* ---- GET /api/dead-letters ------------------------------------------------------- */

/* A letter kept for the answer: the newest `limit` are, in a min-heap. */
typedef struct kept {
    int64_t ts;
    int32_t partition;
    int64_t offset;
    json_t *json;
} kept;

static bool kept_older(const void *x, const void *y)
{
    const kept *a = x, *b = y;
    if (a->ts != b->ts)
        return a->ts < b->ts;
    if (a->partition != b->partition)
        return a->partition > b->partition;
    return a->offset < b->offset;
}

typedef struct lister {
    mc_dead_api *a;
    const mc_dead_job *job;
    const char *dead;
    mc_requeue_ledger ledger;
    mc_arena *arena;
    mc_heap heap;
    bool more, nomem;
} lister;

/* The n bytes at s as a JSON string; null when there are none or they are
 * not UTF-8 (a record key is whatever its producer wrote). */
static json_t *string_or_null(const char *s, size_t n)
{
    json_t *j = s ? json_stringn(s, n) : NULL;
    return j ? j : json_null();
}

/* The answer's object for letter m (decoded into r). */
static json_t *letter_json(lister *ls, const rd_kafka_message_t *m, const mc_dead_record *r,
                           const char *reason)
{
    const char *key = m->key, *slash = key ? memchr(key, '/', m->key_len) : NULL;
    json_t *j = json_pack("{s:i, s:I, s:I}", "partition", (int)m->partition, "offset",
                          (json_int_t)m->offset, "timestamp",
                          (json_int_t)rd_kafka_message_timestamp(m, NULL));
    if (!j)
        return NULL;
    char task_key[2 * MC_JSON_MAX_ID_LEN + 2];
    json_t *k = string_or_null(key, m->key_len);
    if (json_is_null(k) && r->task &&
        mc_task_key(r->d.task.app_id, r->d.task.task_id, task_key, sizeof task_key) <
            sizeof task_key) {
        json_decref(k);
        k = json_string(task_key);
    }
    json_object_set_new(j, "key", k);
    if (r->task) {
        json_object_set_new(j, "appId", json_string(r->d.task.app_id));
        json_object_set_new(j, "uuid", json_string(r->d.task.task_id));
        json_object_set_new(j, "attempt", json_integer(r->d.task.attempt));
    } else {
        json_object_set_new(j, "appId",
                            string_or_null(slash ? key : NULL, slash ? (size_t)(slash - key) : 0));
        json_object_set_new(j, "uuid",
                            string_or_null(slash ? slash + 1 : NULL,
                                           slash ? m->key_len - (size_t)(slash - key) - 1 : 0));
        json_object_set_new(j, "attempt", json_null());
    }
    char *said = mc_text_redacted(reason);
    json_object_set_new(j, "reason", said ? json_string(said) : json_null());
    free(said);
    if (r->err) {
        json_object_set_new(j, "source", json_null());
    } else {
        char source[400];
        snprintf(source, sizeof source, "%s %d@%" PRId64, r->d.source_topic,
                 (int)r->d.source_partition, r->d.source_offset);
        json_object_set_new(j, "source", json_string(source));
    }
    json_object_set_new(j, "requeued",
                        json_boolean(mc_requeue_ledger_has(&ls->ledger, m->partition, m->offset)));
    json_t *task = json_null();
    if (r->task)
        task = json_pack("{s:I, s:I, s:o}", "dueAt", (json_int_t)r->d.task.due_at, "createdAt",
                         (json_int_t)r->d.task.created_at, "callback",
                         mc_view_callback_json(&r->d.task.callback));
    json_object_set_new(j, "task", task);
    return j;
}

static int list_record(void *arg, const rd_kafka_message_t *m)
{
    lister *ls = arg;
    const mc_dead_job *job = ls->job;
    int64_t ts = rd_kafka_message_timestamp(m, NULL);
    if (ts < job->from || ts > job->to)
        return 0;
    mc_arena_reset(ls->arena);
    mc_dead_record r;
    mc_dead_decode(m, ls->arena, &r);
    if (!mc_dead_app_matches(job->app_id, m, &r))
        return 0;
    char why[400];
    if (r.err)
        snprintf(why, sizeof why, "not a DeadLetter: %s%s%s", mc_codec_strerror(r.err),
                 r.detail[0] ? ": " : "", r.detail);
    const char *reason = r.err ? why : r.d.reason;
    if (job->reason && !strcasestr(reason, job->reason))
        return 0;
    kept k = {ts, m->partition, m->offset, NULL};
    if (mc_heap_len(&ls->heap) == (size_t)job->limit) {
        ls->more = true;
        kept *oldest = mc_heap_top(&ls->heap);
        if (!kept_older(oldest, &k))
            return 0;
        json_decref(oldest->json);
        mc_heap_pop(&ls->heap);
    }
    if (!(k.json = letter_json(ls, m, &r, reason)) || mc_heap_push(&ls->heap, &k) != 0) {
        json_decref(k.json);
        ls->nomem = true;
        return 1;
    }
    return 0;
}

/* The listing: the ledger (from the letters' starts), then dead from
 * offsetsForTimes(from) to the ends seen at the start. */
static int run_list(mc_dead_api *a, const mc_dead_job *job, char **body)
{
    char err[1024] = "";
    mc_requeue_names names;
    mc_requeue_names_init(a->cfg, &names);
    lister ls = {.a = a, .job = job, .dead = names.dead, .arena = mc_arena_new()};
    mc_heap_init(&ls.heap, sizeof(kept), kept_older);
    mc_scan_hooks hooks = {stop_asked, NULL, a};
    mc_part_scan *parts = NULL;
    int status = 503;
    char reader[300];
    snprintf(reader, sizeof reader, "%sgateway-dead-reader", a->cfg->topic_prefix);
    rd_kafka_t *rk = ls.arena ? consumer_new(a, reader, err, sizeof err) : NULL;
    int n = rk ? mc_scan_partitions(rk, names.dead, KAFKA_TIMEOUT_MS, err, sizeof err) : -1;
    int nl = n > 0 ? mc_scan_partitions(rk, names.ledger, KAFKA_TIMEOUT_MS, err, sizeof err) : -1;
    if (n == 0)
        snprintf(err, sizeof err, "topic %s does not exist", names.dead);
    if (n <= 0 || nl < 0)
        goto out;
    if (!(parts = calloc((size_t)n, sizeof *parts))) {
        snprintf(err, sizeof err, "out of memory");
        goto out;
    }
    if (mc_scan_plan(rk, names.dead, n, job->from, KAFKA_TIMEOUT_MS, parts, err, sizeof err))
        goto out;
    int64_t *floors = malloc((size_t)n * sizeof *floors);
    if (!floors) {
        snprintf(err, sizeof err, "out of memory");
        goto out;
    }
    for (int p = 0; p < n; p++)
        floors[p] = parts[p].next;
    int rc = nl > 0 ? mc_requeue_ledger_read(rk, names.ledger, n, floors, &hooks, &a->log,
                                             &ls.ledger, err, sizeof err)
                    : 0;
    free(floors);
    if (rc == 0)
        rc = mc_scan(rk, names.dead, parts, (size_t)n, false, list_record, &ls, &hooks, &a->log,
                     err, sizeof err);
    if (ls.nomem)
        snprintf(err, sizeof err, "out of memory");
    if (rc == 0 && stop_asked(a))
        snprintf(err, sizeof err, "the gateway is shutting down");
    else if (rc == 0)
        status = 200;
out:;
    /* Out of the heap oldest first, into the answer newest first. */
    size_t len = mc_heap_len(&ls.heap);
    json_t **newest = calloc(len + 1, sizeof *newest);
    for (size_t i = len; i > 0; i--) {
        json_t *lj = ((kept *)mc_heap_top(&ls.heap))->json;
        if (newest)
            newest[i - 1] = lj;
        else
            json_decref(lj);
        mc_heap_pop(&ls.heap);
    }
    json_t *letters = json_array();
    for (size_t i = 0; newest && i < len; i++)
        json_array_append_new(letters, newest[i]);
    if (status == 200) {
        json_t *data =
            letters && newest ? json_pack("{s:O, s:b}", "letters", letters, "more", ls.more) : NULL;
        *body = data ? json_dumps(data, JSON_COMPACT) : NULL;
        json_decref(data);
        if (!*body)
            status = 500;
    }
    free(newest);
    json_decref(letters);
    if (status != 200)
        *body = strdup(status == 500 ? "out of memory" : err);
    mc_heap_free(&ls.heap);
    mc_requeue_ledger_free(&ls.ledger);
    mc_arena_free(ls.arena);
    free(parts);
    if (rk)
        rd_kafka_destroy(rk);
    return status;
}

/* ---- POST /api/dead-letters/requeue ---------------------------------------------- */

/* What became of one named letter (by its place in the sorted set). */
typedef struct outcome {
    bool seen;
    mc_requeue_action action;
    char *key, *why;
} outcome;

typedef struct requeuer {
    const mc_letter_ref *refs; /* sorted */
    size_t n;
    outcome *out;
} requeuer;

static outcome *outcome_of(requeuer *q, int32_t partition, int64_t offset)
{
    size_t lo = 0, hi = q->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const mc_letter_ref *r = &q->refs[mid];
        if (r->partition == partition && r->offset == offset)
            return &q->out[mid];
        if (r->partition < partition || (r->partition == partition && r->offset < offset))
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static void on_letter(void *arg, const mc_requeue_letter *l)
{
    outcome *o = outcome_of(arg, l->partition, l->offset);
    if (!o)
        return;
    free(o->key);
    free(o->why);
    *o = (outcome){true, l->action, l->key ? strdup(l->key) : NULL, l->why ? strdup(l->why) : NULL};
}

/* The answer: one result per letter as given, only once every transaction
 * that requeued one committed. */
static char *requeue_answer(const mc_dead_job *job, requeuer *q)
{
    json_t *results = json_array();
    for (size_t i = 0; results && i < job->n_in; i++) {
        const mc_letter_ref *in = &job->in[i];
        const outcome *o = outcome_of(q, in->partition, in->offset);
        bool done = o && o->seen && o->action == MC_REQUEUE_REQUEUED;
        const char *why = !o || !o->seen                    ? "not found"
                          : o->action == MC_REQUEUE_ALREADY ? "already requeued"
                          : o->action == MC_REQUEUE_FOREIGN ? "another app's"
                          : o->action == MC_REQUEUE_SKIPPED ? o->why
                                                            : NULL;
        json_t *r = json_pack("{s:i, s:I, s:s}", "partition", (int)in->partition, "offset",
                              (json_int_t)in->offset, "action", done ? "requeued" : "skipped");
        if (!r)
            break;
        json_object_set_new(r, "key",
                            o && o->seen && o->key && o->action != MC_REQUEUE_FOREIGN
                                ? json_string(o->key)
                                : json_null());
        if (!done)
            json_object_set_new(r, "why", json_string(why ? why : "skipped"));
        json_array_append_new(results, r);
    }
    json_t *data = results ? json_pack("{s:o}", "results", results) : NULL;
    char *text = data ? json_dumps(data, JSON_COMPACT) : NULL;
    json_decref(data);
    return text;
}

static int run_requeue(mc_dead_api *a, const mc_dead_job *job, char **body)
{
    char err[1300] = "";
    int status = 503;
    mc_letter_ref *refs = malloc(job->n_in * sizeof *refs);
    outcome *out = calloc(job->n_in, sizeof *out);
    rd_kafka_t *consumer = NULL, *producer = NULL;
    requeuer q = {refs, 0, out};
    if (!refs || !out) {
        snprintf(err, sizeof err, "out of memory");
        goto done;
    }
    memcpy(refs, job->in, job->n_in * sizeof *refs);
    q.n = mc_letter_refs_sort(refs, job->n_in);
    mc_requeue_names names;
    mc_requeue_names_init(a->cfg, &names);
    mc_dead_filter filter = {.all = true, .letters = refs, .n_letters = q.n, .app_id = job->app_id};
    mc_requeue_opts ro = {.names = &names,
                          .max_due_ms = a->cfg->max_due_ms,
                          .batch = MC_REQUEUE_DEFAULT_BATCH,
                          .timeout_ms = KAFKA_TIMEOUT_MS,
                          .filter = &filter,
                          .lg = &a->log,
                          .have_ledger = true};
    bool created;
    rd_kafka_conf_t *conf = NULL;
    if (!(consumer = consumer_new(a, names.group, err, sizeof err)) ||
        (ro.dead_parts =
             mc_scan_partitions(consumer, names.dead, KAFKA_TIMEOUT_MS, err, sizeof err)) <= 0 ||
        (ro.tasks_parts =
             mc_scan_partitions(consumer, names.tasks, KAFKA_TIMEOUT_MS, err, sizeof err)) <= 0) {
        if (consumer && ro.dead_parts >= 0 && ro.tasks_parts >= 0)
            snprintf(err, sizeof err, "topic %s or %s does not exist", names.dead, names.tasks);
        goto done;
    }
    if (mc_requeue_ensure_ledger(a->cfg, consumer, KAFKA_TIMEOUT_MS, &created, err, sizeof err))
        goto done;
    if (created)
        mc_log(&a->log, MC_LOG_INFO, "created the ledger of requeued letters", "topic",
               names.ledger, (const char *)NULL);
    if (!(conf = mc_kafka_conf_new(a->cfg, a, err, sizeof err)) ||
        mc_kafka_conf_default(a->cfg, conf, "client.id", "mooncake-gateway", err, sizeof err) ||
        mc_kafka_conf_producer(a->cfg, conf, names.group, err, sizeof err)) {
        if (conf)
            rd_kafka_conf_destroy(conf);
        goto done;
    }
    if (!(producer = mc_kafka_new(RD_KAFKA_PRODUCER, conf, "Kafka producer", err, sizeof err)))
        goto done;
    ro.consumer = consumer;
    ro.producer = producer;
    mc_requeue_counts counts;
    mc_requeue_hooks hooks = {.letter = on_letter, .scan = {stop_asked, NULL, a}, .arg = &q};
    if (mc_requeue_run(&ro, &hooks, &counts, err, sizeof err) != 0) {
        mc_log(&a->log, MC_LOG_WARN, "requeue did not complete", "error", err, (const char *)NULL);
        char why[1200];
        snprintf(why, sizeof why,
                 "the requeue did not complete (%.900s): letters whose transaction committed "
                 "stay requeued; ask again, none is requeued twice",
                 err);
        snprintf(err, sizeof err, "%s", why);
        goto done;
    }
    if (stop_asked(a)) {
        snprintf(err, sizeof err,
                 "the gateway is shutting down: letters whose transaction committed stay "
                 "requeued; ask again, none is requeued twice");
        goto done;
    }
    status = (*body = requeue_answer(job, &q)) ? 200 : 500;
    if (status == 500)
        snprintf(err, sizeof err, "out of memory");
done:
    if (status != 200)
        *body = strdup(err);
    if (producer)
        rd_kafka_destroy(producer);
    if (consumer)
        rd_kafka_destroy(consumer);
    for (size_t i = 0; out && i < job->n_in; i++) {
        free(out[i].key);
        free(out[i].why);
    }
    free(out);
    free(refs);
    return status;
}

/* Waits for the requeue lock, at most REQUEUE_WAIT_MS, a second at a time
 * so that a shutdown is not held up by a requeue that waits. */
static bool lock_requeue(mc_dead_api *a)
{
    for (int waited = 0; waited < REQUEUE_WAIT_MS && !stop_asked(a); waited += 1000) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        if (pthread_mutex_timedlock(&a->requeue_lock, &until) == 0)
            return true;
    }
    return false;
}

int mc_dead_api_run(mc_dead_api *a, const mc_dead_job *job, char **body)
{
    int status;
    if (!job->requeue) {
        if (atomic_fetch_add(&a->listings, 1) >= MAX_LISTINGS) {
            *body = strdup("too many dead-letter listings at once; ask again shortly");
            status = 503;
        } else {
            status = run_list(a, job, body);
        }
        atomic_fetch_sub(&a->listings, 1);
        return status;
    }
    if (atomic_fetch_add(&a->requeues, 1) >= MAX_REQUEUES_WAITING) {
        *body = strdup("too many requeues waiting for the one running; ask again shortly");
        status = 503;
    } else if (!lock_requeue(a)) {
        *body = strdup(stop_asked(a) ? "the gateway is shutting down"
                                     : "another requeue kept this gateway busy; ask again shortly");
        status = 503;
    } else {
        status = run_requeue(a, job, body);
        pthread_mutex_unlock(&a->requeue_lock);
    }
    atomic_fetch_sub(&a->requeues, 1);
    return status;
}
