/* Requeue's engine (see requeue.h): the ledger, the group's offsets, the
 * transaction loop and its error classes. Why the ledger, the group and one
 * transaction: docs/mooncakectl.md, "requeue: how it is exactly-once". */
#include "requeue.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "kafka.h"
#include "task_json.h"
#include "task_rules.h"

#define COMMIT_MS 1000 /* a run commits at least this often */
#define MAX_PASSES 5
#define RQ_ABORTED 10 /* a transaction aborted: start again from what is committed */
#define RQ_FAILED (-1)

void mc_requeue_names_init(const mc_config *cfg, mc_requeue_names *n)
{
    mc_topic_name(cfg, "dead", n->dead, sizeof n->dead);
    mc_topic_name(cfg, "tasks", n->tasks, sizeof n->tasks);
    mc_topic_name(cfg, "mooncakectl-requeued", n->ledger, sizeof n->ledger);
    mc_topic_name(cfg, "mooncakectl-requeue", n->group, sizeof n->group);
}

/* ---- the ledger -------------------------------------------------------------------- */

int mc_requeue_ensure_ledger(const mc_config *cfg, rd_kafka_t *rk, int timeout_ms, bool *created,
                             char *err, size_t errlen)
{
    mc_requeue_names names;
    mc_requeue_names_init(cfg, &names);
    const char *ledger = names.ledger;
    *created = false;
    int have = mc_scan_partitions(rk, ledger, timeout_ms, err, errlen);
    if (have != 0)
        return have > 0 ? 0 : -1;
    const char *dead_topics[] = {names.dead};
    mc_topic_cfg dc;
    char retention[32] = "2592000000";
    if (mc_topic_configs(rk, dead_topics, 1, timeout_ms, &dc, err, errlen) == 0 && dc.retention[0])
        snprintf(retention, sizeof retention, "%s", dc.retention);
    char errstr[512];
    rd_kafka_NewTopic_t *nt =
        rd_kafka_NewTopic_new(ledger, 1, cfg->replication_factor, errstr, sizeof errstr);
    if (!nt) {
        snprintf(err, errlen, "topic %s: %s", ledger, errstr);
        return -1;
    }
    rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "delete");
    rd_kafka_NewTopic_set_config(nt, "retention.ms", retention);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_operation_timeout(opts, timeout_ms, errstr, sizeof errstr);
    rd_kafka_CreateTopics(rk, &nt, 1, opts, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, timeout_ms * 2);
    int rc = -1;
    if (!ev) {
        snprintf(err, errlen, "creating %s: no answer within %d s", ledger, timeout_ms * 2 / 1000);
    } else if (rd_kafka_event_error(ev)) {
        snprintf(err, errlen, "creating %s: %s", ledger, rd_kafka_event_error_string(ev));
    } else {
        size_t cnt;
        const rd_kafka_topic_result_t **tr =
            rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &cnt);
        rd_kafka_resp_err_t e = cnt ? rd_kafka_topic_result_error(tr[0]) : 0;
        if (e && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
            snprintf(err, errlen, "creating %s: %s", ledger,
                     rd_kafka_topic_result_error_string(tr[0]));
        else
            rc = 0;
        *created = e == 0;
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(opts);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
    /* A new topic takes a moment to show in metadata (and to have a leader). */
    for (int i = 0; rc == 0 && i < 50; i++) {
        if ((have = mc_scan_partitions(rk, ledger, timeout_ms, err, errlen)) != 0)
            return have > 0 ? 0 : -1;
        usleep(200 * 1000);
    }
    if (rc == 0)
        snprintf(err, errlen, "%s was created but does not show in metadata", ledger);
    return -1;
}

typedef struct mc_offset_set {
    int64_t *v;
    size_t n, cap;
} mc_offset_set;

static int offset_set_add(mc_offset_set *s, int64_t o)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        int64_t *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return -1;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = o;
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct ledger_reader {
    mc_requeue_ledger *l;
    const int64_t *floors;
} ledger_reader;

/* A ledger entry: key "partition/offset" of a requeued letter. */
static int ledger_record(void *arg, const rd_kafka_message_t *m)
{
    ledger_reader *r = arg;
    char k[64];
    if (!m->key || m->key_len >= sizeof k)
        return 0;
    memcpy(k, m->key, m->key_len);
    k[m->key_len] = '\0';
    int p, n = 0;
    int64_t off;
    if (sscanf(k, "%d/%" SCNd64 "%n", &p, &off, &n) != 2 || k[n] || p < 0 || p >= r->l->n_parts)
        return 0;
    if ((!r->floors || off >= r->floors[p]) && offset_set_add(&r->l->by_part[p], off) != 0)
        return 1; /* out of memory */
    return 0;
}

int mc_requeue_ledger_read(rd_kafka_t *rk, const char *ledger, int dead_parts,
                           const int64_t *floors, const mc_scan_hooks *hooks, const mc_logger *lg,
                           mc_requeue_ledger *l, char *err, size_t errlen)
{
    if (!l->by_part) {
        if (!(l->by_part = calloc((size_t)dead_parts, sizeof *l->by_part))) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        l->n_parts = dead_parts;
    }
    for (int p = 0; p < l->n_parts; p++)
        l->by_part[p].n = 0;
    int nl = mc_topic_partition_count(rk, ledger, 30000, err, errlen);
    if (nl <= 0)
        return -1;
    mc_part_scan *lp = calloc((size_t)nl, sizeof *lp);
    if (!lp) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    ledger_reader r = {l, floors};
    int rc = mc_scan_plan(rk, ledger, nl, -1, 30000, lp, err, errlen);
    if (rc == 0)
        rc = mc_scan(rk, ledger, lp, (size_t)nl, false, ledger_record, &r, hooks, lg, err, errlen);
    free(lp);
    if (rc > 0)
        snprintf(err, errlen, "out of memory");
    if (rc)
        return -1;
    for (int p = 0; p < l->n_parts; p++)
        if (l->by_part[p].n)
            qsort(l->by_part[p].v, l->by_part[p].n, sizeof *l->by_part[p].v, cmp_i64);
    return 0;
}

bool mc_requeue_ledger_has(const mc_requeue_ledger *l, int32_t partition, int64_t offset)
{
    if (!l->by_part || partition < 0 || partition >= l->n_parts)
        return false;
    const mc_offset_set *s = &l->by_part[partition];
    return s->n && bsearch(&offset, s->v, s->n, sizeof offset, cmp_i64) != NULL;
}

void mc_requeue_ledger_free(mc_requeue_ledger *l)
{
    for (int p = 0; l->by_part && p < l->n_parts; p++)
        free(l->by_part[p].v);
    free(l->by_part);
    l->by_part = NULL;
    l->n_parts = 0;
}

/* ---- transactions ------------------------------------------------------------------ */

typedef enum tx_verdict { TX_RETRY, TX_ABORT, TX_FATAL } tx_verdict;

/* A letter requeued in the open transaction, reported once it commits. */
typedef struct pending {
    int32_t partition;
    int64_t offset;
    char *key;
} pending;

/* One run. Arrays are per partition of dead; everything is released by
 * run_free. */
typedef struct requeue {
    const mc_requeue_opts *o;
    const mc_requeue_hooks *h;
    mc_requeue_counts *counts;
    char *err;
    size_t errlen;
    mc_part_scan *parts;
    int64_t *frontier; /* every letter below: requeued or never requeueable */
    bool *blocked;     /* a letter still requeueable was seen: the frontier stays */
    bool *advanced;    /* the frontier moved in the open transaction */
    mc_requeue_ledger done;
    mc_arena *arena;
    mc_buf buf;
    bool txn_open;
    int64_t pending_since; /* when the open transaction (or a frontier move) began; 0: none */
    pending *pend;         /* letters of the open transaction */
    size_t n_pend, cap_pend;
} requeue;

static void drop_pending(requeue *q)
{
    for (size_t i = 0; i < q->n_pend; i++)
        free(q->pend[i].key);
    q->n_pend = 0;
    q->counts->pending = 0;
}

static void run_free(requeue *q)
{
    drop_pending(q);
    free(q->pend);
    mc_requeue_ledger_free(&q->done);
    free(q->parts);
    free(q->frontier);
    free(q->blocked);
    free(q->advanced);
    mc_buf_free(&q->buf);
    mc_arena_free(q->arena);
}

/* Leaves a line in the run's err; returns RQ_FAILED. */
__attribute__((format(printf, 2, 3))) static int fail(requeue *q, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(q->err, q->errlen, fmt, ap);
    va_end(ap);
    return RQ_FAILED;
}

static void tell(requeue *q, const mc_requeue_letter *l)
{
    if (q->h->letter)
        q->h->letter(q->h->arg, l);
}

/* Classifies a transactional error as the runner does (processors/runner.c
 * txn_error): retriable -> call again, abortable -> abort the transaction,
 * anything else -> give up, with a line in err. Consumes error. */
static tx_verdict tx_class(requeue *q, const char *what, rd_kafka_error_t *error)
{
    tx_verdict v = rd_kafka_error_is_fatal(error)             ? TX_FATAL
                   : rd_kafka_error_txn_requires_abort(error) ? TX_ABORT
                   : rd_kafka_error_is_retriable(error)       ? TX_RETRY
                                                              : TX_FATAL;
    if (v == TX_FATAL)
        fail(q, "%s: %s", what, rd_kafka_error_string(error));
    else
        mc_log(q->o->lg, MC_LOG_WARN, "transaction error", "op", what, "class",
               v == TX_ABORT ? "abortable" : "retriable", "error", rd_kafka_error_string(error),
               (const char *)NULL);
    rd_kafka_error_destroy(error);
    return v;
}

static int rq_begin(requeue *q)
{
    if (q->txn_open)
        return 0;
    rd_kafka_error_t *error = rd_kafka_begin_transaction(q->o->producer);
    if (error) {
        if (tx_class(q, "begin_transaction", error) != TX_FATAL)
            fail(q, "begin_transaction failed");
        return RQ_FAILED;
    }
    q->txn_open = true;
    if (!q->pending_since)
        q->pending_since = mc_now_ms();
    return 0;
}

/* Aborts the open transaction: nothing of it happened. Returns RQ_ABORTED,
 * or RQ_FAILED when even that failed. */
static int rq_abort(requeue *q)
{
    for (;;) {
        rd_kafka_error_t *error = rd_kafka_abort_transaction(q->o->producer, q->o->timeout_ms);
        if (!error)
            break;
        if (tx_class(q, "abort_transaction", error) != TX_RETRY) {
            if (!q->err[0])
                fail(q, "abort_transaction failed");
            return RQ_FAILED;
        }
    }
    q->txn_open = false;
    drop_pending(q);
    q->pending_since = 0;
    return RQ_ABORTED;
}

/* Commits the open transaction: the Submits, their ledger entries and the
 * group's offsets (how far every letter is dealt with) together, then
 * reports its letters. Returns 0, RQ_ABORTED or RQ_FAILED. */
static int rq_commit(requeue *q)
{
    const mc_requeue_opts *o = q->o;
    if (!o->producer)
        return 0;
    int n = o->dead_parts;
    rd_kafka_topic_partition_list_t *offsets = rd_kafka_topic_partition_list_new(n);
    for (int p = 0; p < n; p++)
        if (q->advanced[p])
            rd_kafka_topic_partition_list_add(offsets, o->names->dead, p)->offset = q->frontier[p];
    int rc = 0;
    if (!q->txn_open && offsets->cnt == 0)
        goto out;
    if ((rc = rq_begin(q)) != 0)
        goto out;
    while (offsets->cnt > 0) {
        rd_kafka_consumer_group_metadata_t *cgmd = rd_kafka_consumer_group_metadata(o->consumer);
        rd_kafka_error_t *error =
            rd_kafka_send_offsets_to_transaction(o->producer, offsets, cgmd, o->timeout_ms);
        rd_kafka_consumer_group_metadata_destroy(cgmd);
        if (!error)
            break;
        tx_verdict v = tx_class(q, "send_offsets_to_transaction", error);
        if (v != TX_RETRY) {
            rc = v == TX_ABORT ? rq_abort(q) : RQ_FAILED;
            goto out;
        }
    }
    for (;;) {
        rd_kafka_error_t *error = rd_kafka_commit_transaction(o->producer, o->timeout_ms);
        if (!error)
            break;
        tx_verdict v = tx_class(q, "commit_transaction", error);
        if (v != TX_RETRY) {
            rc = v == TX_ABORT ? rq_abort(q) : RQ_FAILED;
            goto out;
        }
    }
    q->counts->requeued += q->n_pend;
    for (size_t i = 0; i < q->n_pend; i++) {
        mc_requeue_letter l = {q->pend[i].partition, q->pend[i].offset, q->pend[i].key,
                               MC_REQUEUE_REQUEUED, NULL};
        tell(q, &l);
    }
    drop_pending(q);
    q->txn_open = false;
    q->pending_since = 0;
    memset(q->advanced, 0, (size_t)n * sizeof *q->advanced);
out:
    rd_kafka_topic_partition_list_destroy(offsets);
    return rc;
}

/* Produces one record in the open transaction, waiting out a full queue. */
static rd_kafka_resp_err_t rq_produce(requeue *q, const char *topic, int32_t partition,
                                      const char *key, const void *value, size_t len,
                                      const char *header)
{
    rd_kafka_t *rk = q->o->producer;
    for (;;) {
        rd_kafka_resp_err_t e;
        if (header)
            e = rd_kafka_producev(
                rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key, strlen(key)),
                RD_KAFKA_V_VALUE((void *)value, len),
                RD_KAFKA_V_HEADER(MC_REQUEUED_HEADER, header, (ssize_t)strlen(header)),
                RD_KAFKA_V_END);
        else
            e = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
                                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                  RD_KAFKA_V_KEY(key, strlen(key)),
                                  RD_KAFKA_V_VALUE((void *)value, len), RD_KAFKA_V_END);
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
            return e;
        rd_kafka_poll(rk, 100);
    }
}

static int add_pending(requeue *q, const rd_kafka_message_t *m, const char *key)
{
    if (q->n_pend == q->cap_pend) {
        size_t cap = q->cap_pend ? q->cap_pend * 2 : 64;
        pending *v = realloc(q->pend, cap * sizeof *v);
        if (!v)
            return -1;
        q->pend = v;
        q->cap_pend = cap;
    }
    char *k = strdup(key);
    if (!k)
        return -1;
    q->pend[q->n_pend++] = (pending){m->partition, m->offset, k};
    q->counts->pending = q->n_pend;
    return 0;
}

/* Requeues one letter's task in the open transaction: a Submit with
 * attempt 1, due now, to tasks (the letter's partition when its key is the
 * task's key: where the client's partitioner put it), and its ledger entry. */
static int rq_send(requeue *q, const rd_kafka_message_t *m, const mc_task *orig, const char *key)
{
    const mc_requeue_opts *o = q->o;
    if (!o->producer) {
        mc_requeue_letter l = {m->partition, m->offset, key, MC_REQUEUE_WOULD, NULL};
        q->counts->requeued++;
        tell(q, &l);
        return 0;
    }
    int rc = rq_begin(q);
    if (rc)
        return rc;
    int64_t now = mc_now_ms();
    mc_command cmd = {.kind = MC_CMD_SUBMIT, .submit = *orig};
    cmd.submit.attempt = 1;
    cmd.submit.due_at = now;
    mc_buf_reset(&q->buf);
    if (mc_encode_command(&cmd, &q->buf) != 0)
        return fail(q, "out of memory");
    bool same_key = m->key && m->key_len == strlen(key) && memcmp(m->key, key, m->key_len) == 0;
    int32_t partition =
        same_key && m->partition < o->tasks_parts ? m->partition : RD_KAFKA_PARTITION_UA;
    char from[400], ledger_key[64];
    snprintf(from, sizeof from, "%s/%d/%" PRId64, o->names->dead, (int)m->partition, m->offset);
    snprintf(ledger_key, sizeof ledger_key, "%d/%" PRId64, (int)m->partition, m->offset);
    json_t *entry = json_pack("{s:s, s:i, s:I, s:s, s:s, s:i, s:I}", "dead_topic", o->names->dead,
                              "dead_partition", (int)m->partition, "dead_offset",
                              (json_int_t)m->offset, "key", key, "tasks_topic", o->names->tasks,
                              "tasks_partition", (int)partition, "requeued_at", (json_int_t)now);
    char *value = entry ? json_dumps(entry, JSON_COMPACT) : NULL;
    json_decref(entry);
    if (!value || add_pending(q, m, key) != 0) {
        free(value);
        return fail(q, "out of memory");
    }
    rd_kafka_resp_err_t e =
        rq_produce(q, o->names->tasks, partition, key, q->buf.data, q->buf.len, from);
    if (!e)
        e = rq_produce(q, o->names->ledger, RD_KAFKA_PARTITION_UA, ledger_key, value, strlen(value),
                       NULL);
    free(value);
    if (e) {
        mc_log(o->lg, MC_LOG_WARN, "produce refused", "error", rd_kafka_err2str(e),
               (const char *)NULL);
        return rd_kafka_fatal_error(o->producer, NULL, 0)
                   ? fail(q, "producing: %s", rd_kafka_err2str(e))
                   : rq_abort(q);
    }
    return 0;
}

/* One letter of dead. */
static int rq_record(void *arg, const rd_kafka_message_t *m)
{
    requeue *q = arg;
    const mc_requeue_opts *o = q->o;
    mc_requeue_counts *n = q->counts;
    n->scanned++;
    mc_arena_reset(q->arena);
    mc_dead_record r;
    mc_dead_decode(m, q->arena, &r);
    char why[700] = "", key[1024] = "";
    bool task = r.task;
    if (task && mc_task_key(r.d.task.app_id, r.d.task.task_id, key, sizeof key) >= sizeof key)
        task = false;
    if (!task && m->key)
        snprintf(key, sizeof key, "%.*s", (int)(m->key_len < 1000 ? m->key_len : 1000),
                 (const char *)m->key);
    mc_dead_match match = mc_dead_filter_match(o->filter, m, &r);
    bool already = mc_requeue_ledger_has(&q->done, m->partition, m->offset);
    bool requeueable = task && !already;
    if (requeueable) {
        mc_task t = r.d.task;
        t.attempt = 1;
        t.due_at = mc_now_ms();
        if (!mc_task_ok(&t, t.due_at, o->max_due_ms, &mc_task_avro_names, why, sizeof why))
            requeueable = false;
    }
    mc_requeue_letter l = {m->partition, m->offset, key[0] ? key : NULL, MC_REQUEUE_SKIPPED, NULL};
    /* For good: requeued (before, or now), or matched and never requeueable
     * (so a later run with another filter still reports it). */
    bool dealt_with = already || (match == MC_DEAD_MATCHED && !requeueable);
    if (match == MC_DEAD_FOREIGN) {
        l.action = MC_REQUEUE_FOREIGN;
        tell(q, &l);
    } else if (match == MC_DEAD_MATCHED) {
        n->matched++;
        if (already) {
            n->already++;
            l.action = MC_REQUEUE_ALREADY;
            tell(q, &l);
        } else if (!requeueable) {
            n->skipped++;
            char reason[600];
            if (r.err)
                snprintf(reason, sizeof reason, "not a DeadLetter: %s", mc_codec_strerror(r.err));
            else if (!r.task)
                snprintf(reason, sizeof reason, "no task (%.500s)", r.d.reason);
            else
                snprintf(reason, sizeof reason, "the router would refuse it: %.500s", why);
            l.why = reason;
            tell(q, &l);
        } else {
            int rc = rq_send(q, m, &r.d.task, key);
            if (rc)
                return rc;
            dealt_with = true;
        }
    }
    int32_t p = m->partition;
    /* A letter below the frontier (named letters are read from where they
     * are) moves nothing. */
    if (!q->blocked[p] && m->offset >= q->frontier[p]) {
        if (dealt_with) {
            q->frontier[p] = m->offset + 1;
            q->advanced[p] = true;
            if (!q->pending_since)
                q->pending_since = mc_now_ms();
        } else {
            q->blocked[p] = true;
        }
    }
    if (o->producer && q->pending_since &&
        (q->n_pend >= o->batch || mc_now_ms() - q->pending_since >= COMMIT_MS))
        return rq_commit(q);
    return 0;
}

/* Where the named letters of partition p are: [*lo, *hi]; false when none. */
static bool named_span(const mc_dead_filter *f, int32_t p, int64_t *lo, int64_t *hi)
{
    bool any = false;
    for (size_t i = 0; i < f->n_letters; i++)
        if (f->letters[i].partition == p) {
            if (!any)
                *lo = f->letters[i].offset;
            *hi = f->letters[i].offset;
            any = true;
        }
    return any;
}

static bool stopped(const requeue *q)
{
    const mc_scan_hooks *s = &q->h->scan;
    return s->stop && s->stop(s->arg);
}

/* One pass: from the group's committed offsets and the ledger, over dead to
 * the end seen at start. Returns 0, RQ_ABORTED or RQ_FAILED. */
static int rq_pass(requeue *q)
{
    const mc_requeue_opts *o = q->o;
    const mc_dead_filter *f = o->filter;
    int n = o->dead_parts;
    mc_requeue_counts *c = q->counts;
    c->scanned = c->matched = c->already = c->skipped = 0;
    memset(q->blocked, 0, (size_t)n * sizeof *q->blocked);
    memset(q->advanced, 0, (size_t)n * sizeof *q->advanced);
    rd_kafka_topic_partition_list_t *committed = rd_kafka_topic_partition_list_new(n);
    for (int p = 0; p < n; p++)
        rd_kafka_topic_partition_list_add(committed, o->names->dead, p);
    rd_kafka_resp_err_t e = rd_kafka_committed(o->consumer, committed, o->timeout_ms);
    if (e) {
        rd_kafka_topic_partition_list_destroy(committed);
        return fail(q, "committed offsets of %s: %s", o->names->group, rd_kafka_err2str(e));
    }
    if (mc_scan_plan(o->consumer, o->names->dead, n, -1, o->timeout_ms, q->parts, q->err,
                     q->errlen) != 0) {
        rd_kafka_topic_partition_list_destroy(committed);
        return RQ_FAILED;
    }
    c->total = 0;
    for (int i = 0; i < committed->cnt; i++) {
        mc_part_scan *ps = &q->parts[committed->elems[i].partition];
        int64_t low = ps->next, lo, hi;
        if (committed->elems[i].offset > ps->next)
            ps->next = committed->elems[i].offset;
        q->frontier[ps->partition] = ps->next;
        if (f->letters && !named_span(f, ps->partition, &lo, &hi)) {
            /* Nothing named here: not read, so the frontier stays. */
            ps->next = ps->end;
            q->blocked[ps->partition] = true;
        } else if (f->letters) {
            /* Only the named stretch, also below the frontier (the ledger
             * says what was requeued there); starting past the frontier
             * leaves a gap it cannot cross. */
            ps->next = lo > low ? lo : low;
            q->blocked[ps->partition] = ps->next > q->frontier[ps->partition];
            if (hi + 1 < ps->end)
                ps->end = hi + 1;
        }
        ps->done = ps->next >= ps->end;
        c->total += ps->end > ps->next ? ps->end - ps->next : 0;
    }
    rd_kafka_topic_partition_list_destroy(committed);

    if (o->have_ledger) {
        int64_t *floors = malloc((size_t)n * sizeof *floors);
        if (!floors)
            return fail(q, "out of memory");
        for (int p = 0; p < n; p++)
            floors[p] = q->parts[p].next < q->frontier[p] ? q->parts[p].next : q->frontier[p];
        int rc = mc_requeue_ledger_read(o->consumer, o->names->ledger, n, floors, &q->h->scan,
                                        o->lg, &q->done, q->err, q->errlen);
        free(floors);
        if (rc)
            return RQ_FAILED;
        if (stopped(q))
            return 0;
    }
    int rc = mc_scan(o->consumer, o->names->dead, q->parts, (size_t)n, false, rq_record, q,
                     &q->h->scan, o->lg, q->err, q->errlen);
    /* A partition read to its end with every letter dealt with: commit the
     * end, past the transaction markers that follow the last letter, so
     * the group shows no lag. */
    for (int p = 0; rc == 0 && p < n; p++)
        if (!q->blocked[p] && q->parts[p].next > q->frontier[p]) {
            q->frontier[p] = q->parts[p].next;
            q->advanced[p] = true;
        }
    if (rc == 0)
        rc = rq_commit(q); /* the rest, also when stopped */
    return rc;
}

int mc_requeue_run(const mc_requeue_opts *o, const mc_requeue_hooks *h, mc_requeue_counts *counts,
                   char *err, size_t errlen)
{
    size_t n = (size_t)o->dead_parts;
    requeue q = {.o = o, .h = h, .counts = counts, .err = err, .errlen = errlen};
    err[0] = '\0';
    memset(counts, 0, sizeof *counts);
    q.parts = calloc(n, sizeof *q.parts);
    q.frontier = calloc(n, sizeof *q.frontier);
    q.blocked = calloc(n, sizeof *q.blocked);
    q.advanced = calloc(n, sizeof *q.advanced);
    q.arena = mc_arena_new();
    int rc = 0;
    if (!q.parts || !q.frontier || !q.blocked || !q.advanced || !q.arena) {
        rc = fail(&q, "out of memory");
        goto out;
    }
    /* The fixed transactional.id fences any other requeue still running (and
     * settles its open transaction) before we read what it did. */
    while (o->producer) {
        rd_kafka_error_t *error = rd_kafka_init_transactions(o->producer, o->timeout_ms);
        if (!error)
            break;
        if (tx_class(&q, "init_transactions", error) != TX_RETRY || stopped(&q)) {
            if (!err[0])
                fail(&q, "init_transactions gave up");
            rc = RQ_FAILED;
            goto out;
        }
    }
    for (int pass = 0; pass < MAX_PASSES; pass++) {
        rc = rq_pass(&q);
        if (rc != RQ_ABORTED)
            break;
        if (h->note)
            h->note(h->arg, "a transaction aborted; starting again from what is committed");
    }
    if (rc == RQ_ABORTED)
        rc = fail(&q, "transactions kept aborting; run requeue again");
out:
    if (rc && o->producer && q.txn_open) {
        /* Whatever the failure, nothing of the open transaction stands; a
         * fatal producer cannot abort, and the next run's init fences it. */
        rd_kafka_error_t *error = rd_kafka_abort_transaction(o->producer, o->timeout_ms);
        if (error)
            rd_kafka_error_destroy(error);
    }
    run_free(&q);
    return rc ? -1 : 0;
}
