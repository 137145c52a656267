/* mooncakectl requeue: dead letters back to <prefix>tasks, exactly once per
 * letter whatever the filter, across crashes and repeated runs. How: see
 * README.md, "requeue: how it is exactly-once". In short, one
 * Kafka transaction holds, for a batch of letters, their Submits to tasks,
 * their entries in the ledger <prefix>mooncakectl-requeued (key
 * "partition/offset" of the letter), and the offsets of the consumer group
 * <prefix>mooncakectl-requeue on dead, committed only over letters that are
 * dealt with for good; a run reads the committed offsets and the ledger
 * first and skips what they say is done. The fixed transactional.id fences
 * any other run still going. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mooncakectl.h"
#include "task_rules.h"

/* requeue commits at least this often, or after this many letters. */
#define REQUEUE_COMMIT_MS 1000
#define REQUEUE_BATCH 1000
#define REQUEUE_MAX_PASSES 5
#define REQUEUED_HEADER "mooncake-requeued-from"

/* ---- transactions ------------------------------------------------------------------ */

typedef enum tx_verdict { TX_RETRY, TX_ABORT, TX_FATAL } tx_verdict;

/* Classifies a transactional error as the runner does (processors/runner.c
 * txn_error): retriable -> call again, abortable -> abort the transaction,
 * anything else -> give up. Consumes error. */
static tx_verdict tx_class(ctl *c, const char *what, rd_kafka_error_t *error)
{
    tx_verdict v = rd_kafka_error_is_fatal(error)             ? TX_FATAL
                   : rd_kafka_error_txn_requires_abort(error) ? TX_ABORT
                   : rd_kafka_error_is_retriable(error)       ? TX_RETRY
                                                              : TX_FATAL;
    if (v == TX_FATAL)
        ctl_fail(EXIT_KAFKA, "%s: %s", what, rd_kafka_error_string(error));
    else
        mc_log(&c->lg, MC_LOG_WARN, "transaction error", "op", what, "class",
               v == TX_ABORT ? "abortable" : "retriable", "error", rd_kafka_error_string(error),
               (const char *)NULL);
    rd_kafka_error_destroy(error);
    return v;
}

/* ---- requeue ------------------------------------------------------------------------ */

#define RQ_ABORTED 10 /* a transaction aborted: start again from what is committed */

/* Offsets (sorted once loaded) of letters the ledger says were requeued. */
typedef struct offset_set {
    int64_t *v;
    size_t n, cap;
} offset_set;

static int offset_set_add(offset_set *s, int64_t o)
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

static bool offset_set_has(const offset_set *s, int64_t o)
{
    return s->n && bsearch(&o, s->v, s->n, sizeof o, cmp_i64) != NULL;
}

/* One requeue run. Arrays are per partition of dead; everything is owned
 * and released by requeue_free. */
typedef struct requeue {
    ctl *c;
    rd_kafka_t *consumer; /* group <prefix>mooncakectl-requeue, assign() only */
    rd_kafka_t *producer; /* transactional; NULL on --dry-run */
    char dead[300], tasks[300], ledger[300], group[300];
    int n_parts, tasks_parts;
    bool have_ledger;
    part_scan *parts;
    int64_t *frontier; /* every letter below: requeued or never requeueable */
    bool *blocked;     /* a letter still requeueable was seen: the frontier stays */
    bool *advanced;    /* the frontier moved in the open transaction */
    offset_set *done;  /* letters the ledger has, at or above the committed offset */
    mc_arena *arena;
    mc_buf buf;
    bool txn_open;
    int64_t pending_since; /* when the open transaction (or a frontier move) began; 0: none */
    size_t txn_letters, batch;
    char *out; /* lines to print once the transaction commits */
    size_t out_len, out_cap;
    uint64_t scanned, matched, already, skipped, requeued_txn, requeued;
    int64_t total;
} requeue;

static void requeue_free(requeue *q)
{
    for (int p = 0; q->done && p < q->n_parts; p++)
        free(q->done[p].v);
    free(q->done);
    free(q->parts);
    free(q->frontier);
    free(q->blocked);
    free(q->advanced);
    free(q->out);
    mc_buf_free(&q->buf);
    mc_arena_free(q->arena);
    if (q->producer)
        rd_kafka_destroy(q->producer);
    if (q->consumer)
        rd_kafka_destroy(q->consumer);
}

/* Keeps a line to print when the open transaction commits. */
static void rq_line(requeue *q, const char *line)
{
    size_t n = strlen(line);
    if (q->out_len + n + 2 > q->out_cap) {
        size_t cap = (q->out_cap + n + 2) * 2;
        char *o = realloc(q->out, cap);
        if (!o)
            return; /* only output is lost */
        q->out = o;
        q->out_cap = cap;
    }
    memcpy(q->out + q->out_len, line, n);
    q->out_len += n;
    q->out[q->out_len++] = '\n';
}

static int rq_begin(requeue *q)
{
    if (q->txn_open)
        return 0;
    rd_kafka_error_t *error = rd_kafka_begin_transaction(q->producer);
    if (error) {
        tx_class(q->c, "begin_transaction", error);
        return EXIT_KAFKA;
    }
    q->txn_open = true;
    if (!q->pending_since)
        q->pending_since = mc_now_ms();
    return 0;
}

/* Aborts the open transaction: nothing of it happened. Returns RQ_ABORTED,
 * or EXIT_KAFKA when even that failed. */
static int rq_abort(requeue *q)
{
    for (;;) {
        rd_kafka_error_t *error = rd_kafka_abort_transaction(q->producer, TIMEOUT_MS);
        if (!error)
            break;
        if (tx_class(q->c, "abort_transaction", error) != TX_RETRY)
            return EXIT_KAFKA;
    }
    q->txn_open = false;
    q->out_len = 0;
    q->requeued_txn = 0;
    q->txn_letters = 0;
    q->pending_since = 0;
    return RQ_ABORTED;
}

/* Commits the open transaction: the Submits, their ledger entries and the
 * group's offsets (how far every letter is dealt with) together. Returns 0,
 * RQ_ABORTED or EXIT_KAFKA. */
static int rq_commit(requeue *q)
{
    if (!q->producer)
        return 0;
    rd_kafka_topic_partition_list_t *offsets = rd_kafka_topic_partition_list_new(q->n_parts);
    for (int p = 0; p < q->n_parts; p++)
        if (q->advanced[p])
            rd_kafka_topic_partition_list_add(offsets, q->dead, p)->offset = q->frontier[p];
    int rc = 0;
    if (!q->txn_open && offsets->cnt == 0)
        goto out;
    if ((rc = rq_begin(q)) != 0)
        goto out;
    while (offsets->cnt > 0) {
        rd_kafka_consumer_group_metadata_t *cgmd = rd_kafka_consumer_group_metadata(q->consumer);
        rd_kafka_error_t *error =
            rd_kafka_send_offsets_to_transaction(q->producer, offsets, cgmd, TIMEOUT_MS);
        rd_kafka_consumer_group_metadata_destroy(cgmd);
        if (!error)
            break;
        tx_verdict v = tx_class(q->c, "send_offsets_to_transaction", error);
        if (v != TX_RETRY) {
            rc = v == TX_ABORT ? rq_abort(q) : EXIT_KAFKA;
            goto out;
        }
    }
    for (;;) {
        rd_kafka_error_t *error = rd_kafka_commit_transaction(q->producer, TIMEOUT_MS);
        if (!error)
            break;
        tx_verdict v = tx_class(q->c, "commit_transaction", error);
        if (v != TX_RETRY) {
            rc = v == TX_ABORT ? rq_abort(q) : EXIT_KAFKA;
            goto out;
        }
    }
    if (q->out_len) {
        fwrite(q->out, 1, q->out_len, stdout);
        fflush(stdout);
    }
    q->out_len = 0;
    q->requeued += q->requeued_txn;
    q->requeued_txn = 0;
    q->txn_letters = 0;
    q->txn_open = false;
    q->pending_since = 0;
    memset(q->advanced, 0, (size_t)q->n_parts * sizeof *q->advanced);
out:
    rd_kafka_topic_partition_list_destroy(offsets);
    return rc;
}

/* Produces one record in the open transaction, waiting out a full queue. */
static rd_kafka_resp_err_t rq_produce(requeue *q, const char *topic, int32_t partition,
                                      const char *key, const void *value, size_t len,
                                      const char *header)
{
    for (;;) {
        rd_kafka_resp_err_t e;
        if (header)
            e = rd_kafka_producev(
                q->producer, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key, strlen(key)),
                RD_KAFKA_V_VALUE((void *)value, len),
                RD_KAFKA_V_HEADER(REQUEUED_HEADER, header, (ssize_t)strlen(header)),
                RD_KAFKA_V_END);
        else
            e = rd_kafka_producev(
                q->producer, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key, strlen(key)),
                RD_KAFKA_V_VALUE((void *)value, len), RD_KAFKA_V_END);
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
            return e;
        rd_kafka_poll(q->producer, 100);
    }
}

/* A line about one letter: text, or a JSON object with -J. */
static void rq_describe(requeue *q, const char *action, const rd_kafka_message_t *m,
                        const char *key, const char *why, char *line, size_t linelen)
{
    if (q->c->o.json) {
        json_t *j =
            json_pack("{s:s, s:s, s:i, s:I}", "action", action, "dead_topic", q->dead,
                      "dead_partition", (int)m->partition, "dead_offset", (json_int_t)m->offset);
        if (j) {
            json_object_set_new(j, "key", key ? json_string(key) : json_null());
            if (why)
                json_object_set_new(j, "why", json_string(why));
        }
        char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
        snprintf(line, linelen, "%s", s ? s : "{}");
        free(s);
        json_decref(j);
        return;
    }
    snprintf(line, linelen, "%s %s (dead %d@%" PRId64 ")%s%s", action, key ? key : "-",
             (int)m->partition, m->offset, why ? ": " : "", why ? why : "");
}

/* Requeues one letter's task in the open transaction: a Submit with
 * attempt 1, due now, to tasks (the letter's partition when its key is the
 * task's key: where the client's partitioner put it), and its ledger entry. */
static int rq_send(requeue *q, const rd_kafka_message_t *m, const mc_task *orig, const char *key)
{
    char line[2048];
    if (!q->producer) {
        rq_describe(q, "would requeue", m, key, NULL, line, sizeof line);
        puts(line);
        q->requeued_txn++;
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
        return ctl_fail(EXIT_KAFKA, "out of memory");
    bool same_key = m->key && m->key_len == strlen(key) && memcmp(m->key, key, m->key_len) == 0;
    int32_t partition =
        same_key && m->partition < q->tasks_parts ? m->partition : RD_KAFKA_PARTITION_UA;
    char from[400], ledger_key[64];
    snprintf(from, sizeof from, "%s/%d/%" PRId64, q->dead, (int)m->partition, m->offset);
    snprintf(ledger_key, sizeof ledger_key, "%d/%" PRId64, (int)m->partition, m->offset);
    json_t *entry = json_pack("{s:s, s:i, s:I, s:s, s:s, s:i, s:I}", "dead_topic", q->dead,
                              "dead_partition", (int)m->partition, "dead_offset",
                              (json_int_t)m->offset, "key", key, "tasks_topic", q->tasks,
                              "tasks_partition", (int)partition, "requeued_at", (json_int_t)now);
    char *value = entry ? json_dumps(entry, JSON_COMPACT) : NULL;
    json_decref(entry);
    if (!value)
        return ctl_fail(EXIT_KAFKA, "out of memory");
    rd_kafka_resp_err_t e = rq_produce(q, q->tasks, partition, key, q->buf.data, q->buf.len, from);
    if (!e)
        e = rq_produce(q, q->ledger, RD_KAFKA_PARTITION_UA, ledger_key, value, strlen(value), NULL);
    free(value);
    if (e) {
        mc_log(&q->c->lg, MC_LOG_WARN, "produce refused", "error", rd_kafka_err2str(e),
               (const char *)NULL);
        return rd_kafka_fatal_error(q->producer, NULL, 0)
                   ? ctl_fail(EXIT_KAFKA, "producing: %s", rd_kafka_err2str(e))
                   : rq_abort(q);
    }
    q->txn_letters++;
    q->requeued_txn++;
    rq_describe(q, "requeued", m, key, NULL, line, sizeof line);
    rq_line(q, line);
    return 0;
}

/* One letter of dead. */
static int rq_record(void *arg, const rd_kafka_message_t *m)
{
    requeue *q = arg;
    ctl *c = q->c;
    const ctl_opts *o = &c->o;
    q->scanned++;
    mc_arena_reset(q->arena);
    mc_dead_letter d;
    char detail[256] = "", why[700] = "", key[1024] = "", line[2048];
    mc_codec_err e =
        m->payload ? mc_decode_dead_letter(m->payload, m->len, q->arena, &d, detail, sizeof detail)
                   : MC_CODEC_EMPTY;
    bool task = !e && d.has_task;
    if (task && mc_task_key(d.task.app_id, d.task.task_id, key, sizeof key) >= sizeof key)
        task = false;
    bool match = o->all || ((!o->key || ctl_key_matches(o->key, m, task ? d.task.app_id : NULL,
                                                        task ? d.task.task_id : NULL)) &&
                            (!o->reason || (!e && strcasestr(d.reason, o->reason))));
    bool already = offset_set_has(&q->done[m->partition], m->offset);
    bool requeueable = task && !already;
    if (requeueable) {
        mc_task t = d.task;
        t.attempt = 1;
        t.due_at = mc_now_ms();
        if (!mc_task_ok(&t, t.due_at, c->cfg.max_due_ms, &mc_task_avro_names, why, sizeof why))
            requeueable = false;
    }
    if (!task && m->key)
        snprintf(key, sizeof key, "%.*s", (int)(m->key_len < 1000 ? m->key_len : 1000),
                 (const char *)m->key);
    /* For good: requeued (before, or now), or matched and never requeueable
     * (so a later run with another filter still reports it). */
    bool dealt_with = already || (match && !requeueable);
    if (match) {
        q->matched++;
        if (already) {
            q->already++;
        } else if (!requeueable) {
            q->skipped++;
            char reason[600];
            if (e)
                snprintf(reason, sizeof reason, "not a DeadLetter: %s", mc_codec_strerror(e));
            else if (!task)
                snprintf(reason, sizeof reason, "no task (%.500s)", d.reason);
            else
                snprintf(reason, sizeof reason, "the router would refuse it: %.500s", why);
            rq_describe(q, "skipped", m, key[0] ? key : NULL, reason, line, sizeof line);
            if (o->json)
                puts(line);
            else if (!o->quiet)
                fprintf(stderr, "mooncakectl: %s\n", line);
        } else {
            int rc = rq_send(q, m, &d.task, key);
            if (rc)
                return rc;
            dealt_with = true;
        }
    }
    int32_t p = m->partition;
    if (!q->blocked[p]) {
        if (dealt_with) {
            q->frontier[p] = m->offset + 1;
            q->advanced[p] = true;
            if (!q->pending_since)
                q->pending_since = mc_now_ms();
        } else {
            q->blocked[p] = true;
        }
    }
    if (q->producer && q->pending_since &&
        (q->txn_letters >= q->batch || mc_now_ms() - q->pending_since >= REQUEUE_COMMIT_MS))
        return rq_commit(q);
    return 0;
}

/* A ledger entry: key "partition/offset" of a requeued letter. */
static int rq_ledger_record(void *arg, const rd_kafka_message_t *m)
{
    requeue *q = arg;
    char k[64];
    if (!m->key || m->key_len >= sizeof k)
        return 0;
    memcpy(k, m->key, m->key_len);
    k[m->key_len] = '\0';
    int p, n = 0;
    int64_t off;
    if (sscanf(k, "%d/%" SCNd64 "%n", &p, &off, &n) != 2 || k[n] || p < 0 || p >= q->n_parts)
        return 0;
    if (off >= q->frontier[p] && offset_set_add(&q->done[p], off) != 0)
        return ctl_fail(EXIT_KAFKA, "out of memory");
    return 0;
}

static void rq_progress(void *arg, bool final)
{
    requeue *q = arg;
    if (q->c->o.quiet)
        return;
    const char *verb = q->producer ? "requeued" : "would be requeued";
    if (!final) {
        fprintf(stderr,
                "mooncakectl: %" PRIu64 " of %" PRId64 " dead letters scanned, %" PRIu64
                " matched, %" PRIu64 " %s\n",
                q->scanned, q->total, q->matched, q->requeued + q->requeued_txn, verb);
        return;
    }
    fprintf(stderr,
            "mooncakectl: %" PRIu64 " dead letters scanned, %" PRIu64 " matched: %" PRIu64
            " %s, %" PRIu64 " requeued before, %" PRIu64
            " skipped (no task, or the router would refuse it)%s\n",
            q->scanned, q->matched, q->requeued + q->requeued_txn, verb, q->already, q->skipped,
            q->c->stopping ? "; interrupted: run it again to go on" : "");
}

/* One pass: from the group's committed offsets and the ledger, over dead to
 * the end seen at start. Returns 0, RQ_ABORTED or an exit code. */
static int rq_pass(requeue *q)
{
    ctl *c = q->c;
    char err[1024];
    int n = q->n_parts;
    q->scanned = q->matched = q->already = q->skipped = 0;
    memset(q->blocked, 0, (size_t)n * sizeof *q->blocked);
    memset(q->advanced, 0, (size_t)n * sizeof *q->advanced);
    for (int p = 0; p < n; p++)
        q->done[p].n = 0;
    rd_kafka_topic_partition_list_t *committed = rd_kafka_topic_partition_list_new(n);
    for (int p = 0; p < n; p++)
        rd_kafka_topic_partition_list_add(committed, q->dead, p);
    rd_kafka_resp_err_t e = rd_kafka_committed(q->consumer, committed, TIMEOUT_MS);
    if (e) {
        rd_kafka_topic_partition_list_destroy(committed);
        return ctl_fail(EXIT_KAFKA, "committed offsets of %s: %s", q->group, rd_kafka_err2str(e));
    }
    if (ctl_plan_scan(q->consumer, q->dead, n, -1, q->parts, err, sizeof err) != 0) {
        rd_kafka_topic_partition_list_destroy(committed);
        return ctl_fail(EXIT_KAFKA, "%s", err);
    }
    q->total = 0;
    for (int i = 0; i < committed->cnt; i++) {
        part_scan *ps = &q->parts[committed->elems[i].partition];
        if (committed->elems[i].offset > ps->next)
            ps->next = committed->elems[i].offset;
        ps->done = ps->next >= ps->end;
        q->frontier[ps->partition] = ps->next;
        q->total += ps->end > ps->next ? ps->end - ps->next : 0;
    }
    rd_kafka_topic_partition_list_destroy(committed);

    if (q->have_ledger) {
        int nl = ctl_topic_partitions(c, q->consumer, q->ledger, err, sizeof err);
        if (nl <= 0)
            return ctl_fail(EXIT_KAFKA, "%s", err);
        part_scan *lp = calloc((size_t)nl, sizeof *lp);
        if (!lp)
            return ctl_fail(EXIT_KAFKA, "out of memory");
        int rc = ctl_plan_scan(q->consumer, q->ledger, nl, -1, lp, err, sizeof err) != 0
                     ? ctl_fail(EXIT_KAFKA, "%s", err)
                     : ctl_scan(c, q->consumer, q->ledger, lp, (size_t)nl, false, rq_ledger_record,
                                q, NULL);
        free(lp);
        if (rc)
            return rc;
        if (c->stopping)
            return 0;
        for (int p = 0; p < n; p++)
            if (q->done[p].n)
                qsort(q->done[p].v, q->done[p].n, sizeof *q->done[p].v, cmp_i64);
    }
    progress pg = {.started_ms = mc_now_ms(), .print = rq_progress, .arg = q};
    int rc = ctl_scan(c, q->consumer, q->dead, q->parts, (size_t)n, false, rq_record, q, &pg);
    /* A partition read to its end with every letter dealt with: commit the
     * end, past the transaction markers that follow the last letter, so
     * the group shows no lag. */
    for (int p = 0; rc == 0 && p < n; p++)
        if (!q->blocked[p] && q->parts[p].next > q->frontier[p]) {
            q->frontier[p] = q->parts[p].next;
            q->advanced[p] = true;
        }
    if (rc == 0)
        rc = rq_commit(q); /* the rest, also when interrupted */
    return rc;
}

int ctl_cmd_requeue(ctl *c)
{
    const ctl_opts *o = &c->o;
    if (!o->all && !o->key && !o->reason)
        return ctl_fail(EXIT_USAGE, "requeue needs --all, -k APP/ID or --reason TEXT");
    if (o->all && (o->key || o->reason))
        return ctl_fail(EXIT_USAGE, "requeue --all takes no -k or --reason");
    requeue q = {.c = c, .batch = REQUEUE_BATCH};
    int64_t batch;
    if (o->batch) {
        if (!mc_parse_int64(o->batch, 1, 1000000, &batch))
            return ctl_fail(EXIT_USAGE, "--batch '%s' is not an integer in [1, 1000000]", o->batch);
        q.batch = (size_t)batch;
    }
    char err[1024];
    mc_topic_name(&c->cfg, "dead", q.dead, sizeof q.dead);
    mc_topic_name(&c->cfg, "tasks", q.tasks, sizeof q.tasks);
    mc_topic_name(&c->cfg, "mooncakectl-requeued", q.ledger, sizeof q.ledger);
    mc_topic_name(&c->cfg, "mooncakectl-requeue", q.group, sizeof q.group);
    int rc = 0;
    q.consumer = ctl_new_consumer(c, q.group, err, sizeof err);
    if (!q.consumer) {
        rc = ctl_fail(EXIT_KAFKA, "%s", err);
        goto out;
    }
    if ((q.n_parts = ctl_topic_partitions(c, q.consumer, q.dead, err, sizeof err)) == 0 ||
        (q.tasks_parts = ctl_topic_partitions(c, q.consumer, q.tasks, err, sizeof err)) == 0) {
        rc = ctl_fail(EXIT_KAFKA, "%s", err);
        goto out;
    }
    size_t n = (size_t)q.n_parts;
    q.parts = calloc(n, sizeof *q.parts);
    q.frontier = calloc(n, sizeof *q.frontier);
    q.blocked = calloc(n, sizeof *q.blocked);
    q.advanced = calloc(n, sizeof *q.advanced);
    q.done = calloc(n, sizeof *q.done);
    q.arena = mc_arena_new();
    if (!q.parts || !q.frontier || !q.blocked || !q.advanced || !q.done || !q.arena) {
        rc = ctl_fail(EXIT_KAFKA, "out of memory");
        goto out;
    }
    if (o->dry_run) {
        const rd_kafka_metadata_t *md = ctl_fetch_metadata(c, q.consumer, err, sizeof err);
        if (!md) {
            rc = ctl_fail(EXIT_KAFKA, "%s", err);
            goto out;
        }
        q.have_ledger = ctl_md_partitions(md, q.ledger) > 0;
        rd_kafka_metadata_destroy(md);
    } else {
        bool created;
        if (ctl_ensure_ledger(c, q.consumer, &created, err, sizeof err) != 0) {
            rc = ctl_fail(EXIT_KAFKA, "%s", err);
            goto out;
        }
        if (created)
            ctl_report(c, "created %s, the ledger of requeued letters", q.ledger);
        q.have_ledger = true;
        /* The fixed transactional.id fences any other requeue still running
         * (and settles its open transaction) before we read what it did. */
        q.producer = ctl_new_producer(c, q.group, err, sizeof err);
        if (!q.producer) {
            rc = ctl_fail(EXIT_KAFKA, "%s", err);
            goto out;
        }
        for (;;) {
            rd_kafka_error_t *error = rd_kafka_init_transactions(q.producer, TIMEOUT_MS);
            if (!error)
                break;
            if (tx_class(c, "init_transactions", error) != TX_RETRY || ctl_stop_requested(c)) {
                rc = EXIT_KAFKA;
                goto out;
            }
        }
    }
    for (int pass = 0; pass < REQUEUE_MAX_PASSES; pass++) {
        rc = rq_pass(&q);
        if (rc != RQ_ABORTED)
            break;
        ctl_report(c, "a transaction aborted; starting again from what is committed");
    }
    if (rc == RQ_ABORTED)
        rc = ctl_fail(EXIT_KAFKA, "transactions kept aborting; run requeue again");
    if (rc == 0) {
        rq_progress(&q, true);
        if (c->stopping)
            rc = EXIT_INTERRUPTED;
    }
out:
    requeue_free(&q);
    return rc;
}
