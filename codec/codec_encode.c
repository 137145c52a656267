/* Avro binary encoders for every mooncake record, single-object framed.
 * Output is canonical (shortest varints, each map as one block then 0) so
 * the same record always encodes to the same bytes, which keeps compacted
 * topics and byte-wise comparisons in tests meaningful. */
#include "codec_internal.h"

#include <string.h>

/* The writer remembers an allocation failure instead of making every call
 * site check: once oom is set writes are dropped, and the public function
 * rolls the buffer back to where it started. */
typedef struct wr {
    mc_buf *b;
    bool oom;
} wr;

static inline uint8_t *room(wr *w, size_t n)
{
    mc_buf *b = w->b;
    if (w->oom)
        return NULL;
    if (b->cap - b->len < n && mc_buf_reserve(b, n) != 0) {
        w->oom = true;
        return NULL;
    }
    return b->data + b->len;
}

static inline void put_long(wr *w, int64_t v)
{
    uint8_t *p = room(w, 10);
    if (!p)
        return;
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); /* zigzag */
    size_t n = 0;
    while (z >= 0x80) {
        p[n++] = (uint8_t)(z | 0x80);
        z >>= 7;
    }
    p[n++] = (uint8_t)z;
    w->b->len += n;
}

static void put_raw(wr *w, const void *data, size_t n)
{
    uint8_t *p = room(w, n);
    if (p && n) {
        memcpy(p, data, n);
        w->b->len += n;
    }
}

/* NULL pointers encode as empty: a caller's missing optional text should not
 * crash a processor, and "" is what the decoder gives back. */
static void put_bytes(wr *w, const void *data, size_t n)
{
    if (!data)
        n = 0;
    put_long(w, (int64_t)n);
    put_raw(w, data, n);
}

static void put_string(wr *w, const char *s)
{
    put_bytes(w, s, s ? strlen(s) : 0);
}

static void put_bool(wr *w, bool v)
{
    uint8_t b = v ? 1 : 0;
    put_raw(w, &b, 1);
}

static void put_double(wr *w, double d)
{
    uint64_t v;
    uint8_t le[8];
    memcpy(&v, &d, sizeof v);
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(v >> (8 * i));
    put_raw(w, le, 8);
}

static void put_string_map(wr *w, const mc_kv *kv, size_t n)
{
    if (kv && n) {
        put_long(w, (int64_t)n);
        for (size_t i = 0; i < n; i++) {
            put_string(w, kv[i].key);
            put_string(w, kv[i].value);
        }
    }
    put_long(w, 0);
}

/* The single-object header of version `version` of id (0: the current one). */
static void put_version_header(wr *w, mc_schema_id id, int version)
{
    uint8_t h[MC_SO_HEADER_LEN] = {MC_SO_MAGIC0, MC_SO_MAGIC1};
    uint64_t fp = version ? mc_schema_version_fingerprint(id, version) : mc_schema_fingerprint(id);
    for (int i = 0; i < 8; i++)
        h[2 + i] = (uint8_t)(fp >> (8 * i));
    put_raw(w, h, sizeof h);
}

static void put_header(wr *w, mc_schema_id id)
{
    put_version_header(w, id, 0);
}

/* The Callback record, shared by Task and Job. */
static void put_callback(wr *w, const mc_callback *cb)
{
    put_string(w, cb->url);
    put_string(w, cb->method);
    put_string_map(w, cb->headers, cb->n_headers);
    put_bytes(w, cb->body, cb->body_len);
    put_long(w, cb->timeout_ms);
}

/* The union [null, RetryPolicy], shared by Task and Job. */
static void put_retry(wr *w, bool has_retry, const mc_retry_policy *r)
{
    put_long(w, has_retry ? 1 : 0);
    if (has_retry) {
        put_long(w, r->max_attempts);
        put_long(w, r->initial_backoff_ms);
        put_double(w, r->multiplier);
        put_long(w, r->max_backoff_ms);
    }
}

/* An enum symbol: false (and nothing written) when v is not one of the
 * n_symbols the schema lists, a caller bug the public function reports. */
static bool put_enum(wr *w, int v, int n_symbols)
{
    if (v < 0 || v >= n_symbols)
        return false;
    put_long(w, v);
    return true;
}

/* The union [null, bytes]. */
static void put_optional_bytes(wr *w, bool has, const uint8_t *b, size_t n)
{
    put_long(w, has ? 1 : 0);
    if (has)
        put_bytes(w, b, n);
}

/* [null, KafkaTarget], shared by Task and FollowUp. */
/* The union [null, string]: NULL is null. */
static void put_optional_string(wr *w, const char *s)
{
    put_long(w, s ? 1 : 0);
    if (s)
        put_string(w, s);
}

static void put_string_array(wr *w, const char *const *items, size_t n)
{
    if (items && n) {
        put_long(w, (int64_t)n);
        for (size_t i = 0; i < n; i++)
            put_string(w, items[i]);
    }
    put_long(w, 0);
}

static void put_kafka_target(wr *w, bool has, const mc_kafka_target *k)
{
    put_long(w, has ? 1 : 0);
    if (!has)
        return;
    put_string(w, k->topic);
    put_optional_bytes(w, k->has_key, k->key, k->key_len);
    put_optional_bytes(w, k->has_value, k->value, k->value_len);
    put_string_map(w, k->headers, k->n_headers);
}

/* [null, LatePolicy]; false for an action LateAction cannot hold. */
static bool put_late_policy(wr *w, bool has, const mc_late_policy *p)
{
    put_long(w, has ? 1 : 0);
    if (!has)
        return true;
    put_long(w, p->max_late_ms);
    return put_enum(w, (int)p->action, MC_LATE_DEAD + 1);
}

/* array<FollowUp>, shared by Task and Job; false for a late action
 * LateAction cannot hold. */
static bool put_follow_ups(wr *w, const mc_follow_up *fs, size_t n)
{
    bool ok = true;
    if (n) {
        put_long(w, (int64_t)n);
        for (size_t i = 0; i < n; i++) {
            const mc_follow_up *f = &fs[i];
            put_string(w, f->task_id);
            put_long(w, f->delay_ms);
            put_callback(w, &f->callback);
            put_kafka_target(w, f->has_kafka_target, &f->kafka_target);
            put_retry(w, f->has_retry, &f->retry);
            ok &= put_late_policy(w, f->has_late_policy, &f->late_policy);
        }
    }
    put_long(w, 0);
    return ok;
}

/* Task version 2's fields; false for a value the schema cannot hold. */
static bool put_task_v2(wr *w, const mc_task *t)
{
    put_kafka_target(w, t->has_kafka_target, &t->kafka_target);
    bool ok = put_late_policy(w, t->has_late_policy, &t->late_policy);
    return put_follow_ups(w, t->on_success, t->n_on_success) && ok;
}

/* A Task: version 2 (the current one), or version 1 (without kafka_target
 * and late_policy) for a record written in an earlier schema. False for a
 * value the schema cannot hold. */
static bool put_task_version(wr *w, const mc_task *t, bool v2)
{
    put_string(w, t->app_id);
    put_string(w, t->task_id);
    put_long(w, t->due_at);
    put_callback(w, &t->callback);
    put_retry(w, t->has_retry, &t->retry);
    put_long(w, t->attempt);
    put_long(w, t->created_at);
    put_string_map(w, t->metadata, t->n_metadata);
    return v2 ? put_task_v2(w, t) : true;
}

static bool put_task(wr *w, const mc_task *t)
{
    return put_task_version(w, t, true);
}

/* A Job; false for an enum value its schema cannot represent. */
static bool put_job(wr *w, const mc_job *j)
{
    put_string(w, j->app_id);
    put_string(w, j->job_id);
    bool ok = put_enum(w, (int)j->kind, MC_SCHEDULE_FIXED_DELAY + 1);
    put_string(w, j->cron);
    put_string(w, j->time_zone);
    put_long(w, j->interval_ms);
    put_long(w, j->start_at);
    put_long(w, j->end_at);
    put_long(w, j->max_runs);
    ok &= put_enum(w, (int)j->misfire, MC_MISFIRE_CATCH_UP + 1);
    put_long(w, j->catch_up_limit);
    put_long(w, j->misfire_threshold_ms);
    ok &= put_enum(w, (int)j->overlap, MC_OVERLAP_SERIAL + 1);
    put_bool(w, j->paused);
    put_callback(w, &j->callback);
    put_retry(w, j->has_retry, &j->retry);
    put_string_map(w, j->metadata, j->n_metadata);
    put_long(w, j->created_at);
    put_kafka_target(w, j->has_kafka_target, &j->kafka_target);
    ok &= put_late_policy(w, j->has_late_policy, &j->late_policy);
    return put_follow_ups(w, j->on_success, j->n_on_success) && ok;
}

static bool put_shard_end(wr *w, const mc_shard_end *e)
{
    put_long(w, e->shard);
    bool ok = put_enum(w, (int)e->outcome, MC_OUTCOME_CANCELLED + 1);
    put_long(w, e->finished_at);
    return ok;
}

static bool put_start_broadcast(wr *w, const mc_start_broadcast *b)
{
    bool ok = put_task(w, &b->task);
    put_long(w, b->version);
    put_string_array(w, b->members, b->n_members);
    put_long(w, b->fired_at);
    if (b->ended && b->n_ended) {
        put_long(w, (int64_t)b->n_ended);
        for (size_t i = 0; i < b->n_ended; i++)
            ok &= put_shard_end(w, &b->ended[i]);
    }
    put_long(w, 0);
    return ok;
}

/* The union {PutJob, JobAction, OccurrenceDone, AddLink, CancelLink,
 * LinkDone, StartBroadcast, ShardDone}; false for a kind or enum value the
 * schema cannot represent. */
static bool put_job_payload(wr *w, const mc_job_command *c)
{
    switch (c->kind) {
    case MC_JOBCMD_PUT:
        put_long(w, 0);
        return put_job(w, &c->put);
    case MC_JOBCMD_ACTION: {
        put_long(w, 1);
        put_string(w, c->action.app_id);
        put_string(w, c->action.job_id);
        bool ok = put_enum(w, (int)c->action.action, MC_JOB_TRIGGER + 1);
        put_long(w, c->action.requested_at);
        return ok;
    }
    case MC_JOBCMD_DONE: {
        put_long(w, 2);
        put_string(w, c->done.app_id);
        put_string(w, c->done.job_id);
        put_long(w, c->done.scheduled_at);
        bool ok = put_enum(w, (int)c->done.outcome, MC_OUTCOME_CANCELLED + 1);
        put_long(w, c->done.finished_at);
        return ok;
    }
    case MC_JOBCMD_ADD_LINK:
        put_long(w, 3);
        put_string(w, c->add_link.ordering_key);
        return put_task(w, &c->add_link.task);
    case MC_JOBCMD_CANCEL_LINK:
        put_long(w, 4);
        put_string(w, c->cancel_link.app_id);
        put_string(w, c->cancel_link.ordering_key);
        put_string(w, c->cancel_link.task_id);
        put_long(w, c->cancel_link.requested_at);
        return true;
    case MC_JOBCMD_LINK_DONE: {
        put_long(w, 5);
        put_string(w, c->link_done.app_id);
        put_string(w, c->link_done.ordering_key);
        put_string(w, c->link_done.task_id);
        put_long(w, c->link_done.link);
        bool ok = put_enum(w, (int)c->link_done.outcome, MC_OUTCOME_CANCELLED + 1);
        put_long(w, c->link_done.finished_at);
        return ok;
    }
    case MC_JOBCMD_START_BROADCAST:
        put_long(w, 6);
        return put_start_broadcast(w, &c->start_broadcast);
    case MC_JOBCMD_SHARD_DONE:
        put_long(w, 7);
        put_string(w, c->shard_done.app_id);
        put_string(w, c->shard_done.task_id);
        put_long(w, c->shard_done.version);
        return put_shard_end(w, &c->shard_done.end);
    }
    return false;
}

/* Returns false for a kind the union cannot represent (a caller bug). */
static bool put_payload(wr *w, const mc_command *c)
{
    switch (c->kind) {
    case MC_CMD_SUBMIT:
        put_long(w, 0);
        return put_task(w, &c->submit);
    case MC_CMD_CANCEL:
        put_long(w, 1);
        put_string(w, c->cancel.app_id);
        put_string(w, c->cancel.task_id);
        put_long(w, c->cancel.requested_at);
        return true;
    }
    return false;
}

static int done(wr *w, size_t start, bool ok)
{
    if (w->oom || !ok) {
        w->b->len = start; /* never leave half a record behind */
        return -1;
    }
    return 0;
}

/* Encoders: each appends one single-object framed record to out (which the
 * caller owns) and returns 0; -1 on ENOMEM or on a value the schema cannot
 * hold (command kind, outcome), leaving out as it was. */
int mc_encode_command(const mc_command *c, mc_buf *out)
{
    wr w = {out, false};
    size_t start = out->len;
    put_header(&w, MC_SCHEMA_COMMAND);
    bool ok = put_payload(&w, c);
    return done(&w, start, ok);
}

int mc_encode_wheel_entry(const mc_wheel_entry *e, mc_buf *out)
{
    wr w = {out, false};
    size_t start = out->len;
    put_header(&w, MC_SCHEMA_WHEEL_ENTRY);
    put_long(&w, e->version);
    bool ok = put_payload(&w, &e->command);
    return done(&w, start, ok);
}

int mc_encode_stored_task(const mc_stored_task *s, mc_buf *out)
{
    wr w = {out, false};
    size_t start = out->len;
    put_header(&w, MC_SCHEMA_STORED_TASK);
    put_long(&w, s->version);
    bool ok = put_task(&w, &s->task);
    return done(&w, start, ok);
}

/* The schema version a record asked to be written as `version` gets (0:
 * the current one); -1 for one that is not kept. */
static int written_version(mc_schema_id id, int32_t version)
{
    int current = mc_schema_current_version(id);
    if (version == 0 || version == current)
        return current;
    return version >= 1 && version < current ? (int)version : -1;
}

int mc_encode_attempt(const mc_attempt *a, mc_buf *out)
{
    wr w = {out, false};
    size_t start = out->len;
    int v = written_version(MC_SCHEMA_ATTEMPT, a->write_version);
    put_version_header(&w, MC_SCHEMA_ATTEMPT, v);
    bool ok = v > 0 && put_task_version(&w, &a->task, v >= 3);
    put_long(&w, a->http_status);
    put_string(&w, a->error);
    put_bytes(&w, a->response_snippet, a->response_snippet_len);
    put_long(&w, a->retry_after_ms);
    put_long(&w, a->started_at);
    put_long(&w, a->finished_at);
    put_bool(&w, a->permanent);
    if (v >= 2) {
        put_string_map(&w, a->response_headers, a->n_response_headers);
        put_long(&w, a->response_size);
    }
    if (v >= 4)
        put_optional_string(&w, a->member);
    return done(&w, start, ok);
}

int mc_encode_result(const mc_result *r, mc_buf *out)
{
    wr w = {out, false};
    size_t start = out->len;
    int v = written_version(MC_SCHEMA_RESULT, r->write_version);
    put_version_header(&w, MC_SCHEMA_RESULT, v);
    put_string(&w, r->app_id);
    put_string(&w, r->task_id);
    put_long(&w, r->attempt);
    put_long(&w, r->due_at);
    put_long(&w, r->started_at);
    put_long(&w, r->finished_at);
    put_long(&w, r->http_status);
    /* Before version 3 a dropped task was one that did not run: CANCELLED. */
    int outcome = v < 3 && r->outcome == MC_OUTCOME_DROPPED ? MC_OUTCOME_CANCELLED : r->outcome;
    bool ok =
        v > 0 && put_enum(&w, outcome, v >= 3 ? MC_OUTCOME_DROPPED + 1 : MC_OUTCOME_CANCELLED + 1);
    put_string(&w, r->error);
    if (v >= 2) {
        put_long(&w, r->version);
        put_string_map(&w, r->response_headers, r->n_response_headers);
        put_bytes(&w, r->response_body, r->response_body_len);
        put_long(&w, r->response_size);
    }
    if (v >= 4)
        put_optional_string(&w, r->member);
    return done(&w, start, ok);
}

int mc_encode_dead_letter(const mc_dead_letter *d, mc_buf *out)
{
    wr w = {out, false};
    size_t start = out->len;
    put_header(&w, MC_SCHEMA_DEAD_LETTER);
    put_string(&w, d->reason);
    put_string(&w, d->source_topic);
    put_long(&w, d->source_partition);
    put_long(&w, d->source_offset);
    put_long(&w, d->has_raw ? 1 : 0);
    if (d->has_raw)
        put_bytes(&w, d->raw, d->raw_len);
    put_long(&w, d->has_task ? 1 : 0);
    bool ok = !d->has_task || put_task(&w, &d->task);
    put_long(&w, d->failed_at);
    return done(&w, start, ok);
}

/* A JobCommand; -1 (out unchanged) on ENOMEM or an out-of-range kind or enum.
 * put_raw is ignored: the PUT's job is always encoded from c->put. */
int mc_encode_job_command(const mc_job_command *c, mc_buf *out)
{
    wr w = {out, false};
    size_t start = out->len;
    put_header(&w, MC_SCHEMA_JOB_COMMAND);
    bool ok = put_job_payload(&w, c);
    return done(&w, start, ok);
}

/* A JobState; the job is s->job_raw as it is when not NULL (bytes the caller
 * got from a decode or mc_encode_job), else s->job encoded. -1 (out
 * unchanged) on ENOMEM or an out-of-range enum. */
int mc_encode_job_state(const mc_job_state *s, mc_buf *out)
{
    wr w = {out, false};
    size_t start = out->len;
    put_header(&w, MC_SCHEMA_JOB_STATE);
    put_long(&w, s->version);
    bool ok = put_enum(&w, (int)s->status, MC_JOB_ENDED + 1);
    put_long(&w, s->next_at);
    put_long(&w, s->runs);
    put_long(&w, s->last_scheduled_at);
    /* array<RunningOccurrence>, canonical like the maps: one block, then 0. */
    if (s->running && s->n_running) {
        put_long(&w, (int64_t)s->n_running);
        for (size_t i = 0; i < s->n_running; i++) {
            put_long(&w, s->running[i].scheduled_at);
            put_long(&w, s->running[i].due_at);
        }
    }
    put_long(&w, 0);
    put_long(&w, s->queued_at);
    put_long(&w, s->skipped);
    put_long(&w, s->updated_at);
    if (s->job_raw)
        put_raw(&w, s->job_raw, s->job_raw_len);
    else
        ok &= put_job(&w, &s->job);
    return done(&w, start, ok);
}

/* A Job's bare Avro binary, no header; -1 (out unchanged) on ENOMEM or an
 * out-of-range enum. */
int mc_encode_job(const mc_job *j, mc_buf *out)
{
    wr w = {out, false};
    size_t start = out->len;
    bool ok = put_job(&w, j);
    return done(&w, start, ok);
}

int mc_encode_versioned_raw(mc_schema_id id, int64_t version, const void *a, size_t alen,
                            const void *b, size_t blen, mc_buf *out)
{
    wr w = {out, false};
    size_t start = out->len;
    put_header(&w, id);
    put_long(&w, version);
    put_raw(&w, a, alen);
    put_raw(&w, b, blen);
    return done(&w, start, true);
}

/* A ChainLink; -1 (out unchanged) on ENOMEM or a bad enum in its task. */
int mc_encode_chain_link(const mc_chain_link *l, mc_buf *out)
{
    wr w = {out, false};
    size_t start = out->len;
    put_header(&w, MC_SCHEMA_CHAIN_LINK);
    put_string(&w, l->ordering_key);
    put_long(&w, l->link);
    put_long(&w, l->released_at);
    put_long(&w, l->cancelled_at);
    bool ok = put_task(&w, &l->task);
    return done(&w, start, ok);
}

/* An Endpoint: the union branch, then the group or the limit. */
int mc_encode_endpoint(const mc_endpoint *e, mc_buf *out)
{
    wr w = {out, false};
    size_t start = out->len;
    bool ok;
    put_header(&w, MC_SCHEMA_ENDPOINT);
    if (e->kind == MC_ENDPOINT_GROUP) {
        const mc_endpoint_group *g = &e->group;
        put_long(&w, 0);
        put_string(&w, g->app_id);
        put_string(&w, g->name);
        put_string_array(&w, g->members, g->n_members);
        put_string_array(&w, g->dns, g->n_dns);
        ok = put_enum(&w, g->strategy, MC_ENDPOINT_STRATEGIES);
        put_long(&w, g->member_concurrency);
        put_long(&w, g->unhealthy_ms);
        put_long(&w, g->updated_at);
    } else if (e->kind == MC_ENDPOINT_LIMIT) {
        const mc_endpoint_limit *l = &e->limit;
        put_long(&w, 1);
        ok = put_enum(&w, l->scope, 2);
        put_string(&w, l->name);
        put_long(&w, l->max_concurrent);
        put_double(&w, l->max_per_second);
        put_long(&w, l->updated_at);
    } else {
        ok = false;
    }
    return done(&w, start, ok);
}
