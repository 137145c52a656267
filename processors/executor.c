/* The executor's Kafka side: calls each task's HTTP callback when it is due
 * - the old consumer service, with Kafka in place of its Redis dedup.
 *
 * Input is `ready`: the tasks the wheel fired (WheelEntry Submit), its
 * recalls (WheelEntry Cancel: drop what is held of a key below a version),
 * and its position markers. This side runs on the runner's thread: it
 * decodes each record into a call for the caller (executor_http.c, which
 * holds a task until due and calls it on a thread of its own), and when a
 * call ends writes, in the open transaction, a Result (success) to
 * `results` or an Attempt (failure) to `retry`, which decides whether to
 * call again and writes the Result of the failed attempt.
 *
 * What a restart calls again. Calls end out of offset order, so each
 * partition keeps a window (window.h): the committed offset is held back to
 * the oldest unfinished record, and the commit metadata lists exactly which
 * records above it are unfinished; the rest finished, and their outputs are
 * in the same transaction. The next owner skips what finished and calls
 * only what was unfinished: held, queued, or in flight. The list must fit
 * Kafka's metadata limit, so a record that would not fit is given back
 * (MC_PROCESS_LATER) and its partition paused until enough calls have
 * ended: a burst of thousands due at once on one partition is read in as
 * fast as it fits, never cut.
 *
 * Recalls and markers are in the window too: a recall until the caller has
 * acted on it (a recalled task must not be called after a restart either);
 * a marker until every record before it has finished, when it goes on to
 * `retry` (and from there back to the wheel: see wheel.c).
 *
 * A recall is also remembered for a while (executor_recalls.h): a task of
 * its key below its version, read after it, is voided at once. The router
 * recalls for a cancel in the transaction that routes it, and the wheel may
 * fire an older version while that transaction is open, so the fire can
 * come after the recall.
 *
 * Catching up after an assignment. A task fired early and recalled can be
 * read by a new owner after its due time, its recall a few records later:
 * posted at once, it would start before the recall is read. So after an
 * assignment the calls of a partition are kept back until it has been read
 * up to where it ended at the assignment (or CATCH_UP_MAX_MS have passed,
 * or the checkpoint cannot take more), then posted together: the caller
 * applies a batch's recalls before it starts any of its calls.
 *
 * Kafka targets. A task may name a record to deliver instead of a URL. The
 * caller holds it like a call and gives it back when it would start; here
 * the record is produced in the open transaction with the task's Result and
 * the record's `ready` offset finished: committed together, a read_committed
 * consumer of the target sees it once, through any crash (an abort drops
 * both and the next owner delivers it again). A topic that does not exist
 * is a failed attempt, retried like an endpoint that is down; one the app
 * may no longer write (--target-topics changed) fails for good.
 *
 * Follow-ups. The tasks a task names in on_success are submitted to `tasks`
 * in the transaction that writes its SUCCEEDED Result: once per success,
 * however often the call was made, due delay_ms after it ended.
 *
 * Late policies. A task whose call can only start more than its policy's
 * max_late_ms after its due time is not called when the policy says DROP
 * (a Result DROPPED) or DEAD (a Result FAILED_PERMANENTLY and a dead
 * letter); the caller judges it at the moment the call would start.
 *
 * Outputs Kafka refuses. Each output names its `ready` record as its cause,
 * so an asynchronous refusal comes back, after the rewind, as that record
 * through refused(); a synchronous one is answered here at once. Either way
 * the attempt gets a FAILED_PERMANENTLY Result and the task a dead letter,
 * instead of being lost or called again forever. */
#include "executor.h"

#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "broadcast.h"
#include "chains.h"
#include "endpoint_table.h"
#include "executor_call.h"
#include "executor_recalls.h"
#include "follow_ups.h"
#include "kafka.h"
#include "kafka_targets.h"
#include "task_rules.h"
#include "retry_policy.h"
#include "part_table.h"
#include "ring.h"
#include "ssrf.h"
#include "webhook.h"
#include "window.h"

/* A marker in the window: its record's sequence number and the wheel's
 * position it carries. */
typedef struct marker_ref {
    uint64_t seq;
    int64_t position;
} marker_ref;

typedef struct part {
    int32_t partition;
    bool assigned;
    uint64_t gen; /* bumped when its calls are abandoned */
    mc_window win;
    mc_ring markers;   /* marker_ref, in offset order */
    size_t busy;       /* calls unfinished that were due when read */
    bool full;         /* a record was given back: the checkpoint could not take it */
    bool busy_pause;   /* too many calls unfinished */
    bool paused;       /* what the consumer was told */
    bool handing_over; /* an orderly revoke is draining it: nothing of it starts */
    /* After an assignment: the calls read are posted together once the
     * partition is read up to catch_up_to (-1: not catching up), or at
     * catch_up_until (wall clock). */
    int64_t catch_up_to, catch_up_until;
    mc_call *waiting_head, *waiting_tail;
    /* Recalls read lately (executor_recalls.h). Kept across abandons: a
     * recall is a committed command's, true whoever reads the partition. */
    mc_recall_memory *recalls;
} part;

/* How long after a recall was produced a fire of an older version may be
 * and still be voided: the wheel fires into `ready` after the router's
 * recall only while the router's transaction is open, which the transaction
 * timeout bounds; at least a minute. */
static int64_t recall_memory_ms(const mc_config *cfg)
{
    int64_t ms = (int64_t)cfg->transaction_timeout_ms + 10000;
    return ms > 60000 ? ms : 60000;
}

/* How long calls wait for a partition to be read to where it ended at its
 * assignment (commit markers there, or a slow fetch, would hold them). */
#define CATCH_UP_MAX_MS 2000

/* A Kafka target topic: its output, and its partition count as last asked
 * (a record's partition is murmur2 of its key, as Java places it). A topic
 * the broker did not know is asked again after TARGET_MISSING_MS, one that
 * exists every TARGET_REFRESH_MS (it may have grown). */
typedef struct target_topic {
    mc_output *out;
    int32_t partitions; /* MC_TOPIC_MISSING: the broker knows no such topic;
                         * -1: it could not be asked (why says why) */
    int64_t asked_at;
    char name[MC_TOPIC_NAME_MAX + 1];
    char why[200];
} target_topic;
#define TARGET_MISSING_MS 1000
#define TARGET_REFRESH_MS 60000

typedef struct executor {
    mc_ctx *ctx;
    const mc_config *cfg;
    char ready_topic[256];
    mc_output *results, *retry, *tasks, *commands;
    int32_t command_partitions; /* job-commands' (a broadcast's); asked at each assignment */
    int32_t tasks_partitions;   /* for a follow-up's partition; asked at each assignment */
    mc_caller *caller;
    mc_part_table parts; /* part of each partition ever assigned */
    mc_buf buf;
    mc_kafka_targets *targets; /* --target-topics, checked again at delivery */
    target_topic *topics;      /* the Kafka targets met so far */
    size_t n_topics, cap_topics;
    mc_counter *succeeded, *failed, *skipped, *abandoned, *cut, *recalled, *full, *refused;
    mc_counter *delivered, *late_dropped, *late_dead, *follow_ups, *broadcasts, *shards;
    mc_gauge *paused_gauge;
    /* Which partitions of `ready` are ours, for the caller's shares of admission limits
     * (its thread copies them when the version moves). */
    pthread_mutex_t ownership_mu;
    mc_ownership ownership;
    atomic_uint_fast64_t ownership_version;
    int32_t ready_partitions;     /* asked at each assignment; 0: not known */
    mc_endpoint_table *endpoints; /* groups and limits, for the HTTP caller; NULL in tests */
} executor;

static const char *const executor_inputs[] = {"ready", NULL};

void mc_call_forget_response_headers(mc_call *j)
{
    for (size_t i = 0; i < j->n_response_headers; i++)
        free((char *)j->response_headers[i].key);
    j->n_response_headers = 0;
}

void mc_call_free(mc_call *j)
{
    if (!j)
        return;
    mc_arena_free(j->arena);
    free(j->snippet);
    mc_call_forget_response_headers(j);
    for (size_t i = 0; i < j->n_shard_members; i++)
        free(j->shard_members[i]);
    free(j->shard_members);
    free(j);
}

/* ---- partitions --------------------------------------------------------------- */

static part *part_get(executor *ex, int32_t partition)
{
    part *p = mc_part_table_get(&ex->parts, partition);
    if (p || partition < 0)
        return p;
    if (!(p = calloc(1, sizeof *p)))
        return NULL;
    p->partition = partition;
    p->catch_up_to = -1;
    mc_ring_init(&p->markers, sizeof(marker_ref));
    if (!(p->recalls = mc_recall_memory_new(recall_memory_ms(ex->cfg))) ||
        mc_part_table_put(&ex->parts, partition, p) != 0) {
        mc_recall_memory_free(p->recalls);
        free(p);
        return NULL;
    }
    return p;
}

static void end_catch_up(executor *ex, part *p);

/* Pauses the partition while its checkpoint is full or too many calls are
 * unfinished, and resumes it once enough have ended. Held tasks do not
 * count towards busy: they are bounded by the wheel's lead times the rate,
 * and pausing for them would make the next ones late. */
static void update_pause(executor *ex, part *p)
{
    size_t max = (size_t)ex->cfg->executor_max_unfinished;
    if (p->busy >= max)
        p->busy_pause = true;
    else if (p->busy <= max / 2)
        p->busy_pause = false; /* hysteresis: resume only after a real drain */
    if (p->full && mc_window_list_length(&p->win) <= MC_EXEC_CHECKPOINT_LIST_MAX * 3 / 4)
        p->full = false;
    bool want = p->busy_pause || p->full;
    if (want)
        end_catch_up(ex, p); /* paused, it cannot read further until calls end */
    if (want == p->paused || !p->assigned)
        return;
    if (mc_ctx_pause(ex->ctx, ex->ready_topic, p->partition, want) == 0) {
        p->paused = want;
        mc_gauge_add(ex->paused_gauge, want ? 1 : -1);
    }
}

/* ---- outputs ----------------------------------------------------------------------- */

/* Produces buf to out for call j's record, with nh headers. */
static int produce_for_n(executor *ex, mc_output *out, const mc_call *j, const mc_header *h,
                         size_t nh)
{
    mc_source cause = {ex->ready_topic, j->partition, j->offset};
    mc_produce p = {.out = out,
                    .partition = j->partition,
                    .key = j->key,
                    .key_len = strlen(j->key),
                    .value = ex->buf.data,
                    .value_len = ex->buf.len,
                    .headers = h,
                    .n_headers = nh,
                    .cause = &cause};
    return mc_ctx_produce(ex->ctx, &p);
}

/* Bytes of body the endpoint sent, -1 when it did not answer. */
static int64_t response_size(const mc_call *j)
{
    return j->transport_failed || j->status <= 0 ? -1 : j->body_bytes;
}

/* j's Result; without_answer leaves out what the endpoint answered (for a
 * Result Kafka refused as too large, so the second try is small). */
static int write_result_of(executor *ex, const mc_call *j, mc_outcome outcome, const char *error,
                           bool without_answer)
{
    mc_result res = {.app_id = j->task.app_id,
                     .task_id = j->task.task_id,
                     .attempt = j->task.attempt,
                     .due_at = j->task.due_at,
                     .started_at = j->started_at,
                     .finished_at = j->finished_at,
                     .http_status = (int32_t)j->status,
                     .outcome = outcome,
                     .error = error,
                     .version = j->version.v,
                     .response_headers = j->response_headers,
                     .n_response_headers = j->n_response_headers,
                     .response_body = j->snippet,
                     .response_body_len = j->snippet_len,
                     .response_size = response_size(j),
                     .member = j->member[0] ? j->member : NULL,
                     .write_version = ex->cfg->record_version};
    if (without_answer) {
        res.n_response_headers = 0;
        res.response_body_len = 0;
    }
    mc_buf_reset(&ex->buf);
    if (mc_encode_result(&res, &ex->buf) != 0)
        return -1;
    /* A chain's link or a broadcast's shard says so, for the jobs role to relay its final
     * Result; the chain's next call or the broadcast's Result waits on this commit, so it
     * is made at once. */
    mc_header marks[4];
    size_t n = mc_chain_result_headers(&j->task, marks);
    n += mc_broadcast_result_headers(&j->task, marks + n);
    if (n)
        mc_ctx_request_commit_now(ex->ctx);
    return produce_for_n(ex, ex->results, j, marks, n);
}

static int write_result(executor *ex, const mc_call *j, mc_outcome outcome, const char *error)
{
    return write_result_of(ex, j, outcome, error, false);
}

/* The `ready` record of call j, as the input a dead letter names. */
static mc_record call_record(const executor *ex, const mc_call *j)
{
    return (mc_record){.topic = ex->ready_topic,
                       .partition = j->partition,
                       .offset = j->offset,
                       .key = j->key,
                       .key_len = strlen(j->key)};
}

/* j's attempt ends as a permanent failure with this error, and the task goes to the dead
 * topic with this reason (without itself if even that is too large), so nothing is lost and
 * nothing loops. */
static int fail_for_good(executor *ex, const mc_call *j, const char *error, const char *reason)
{
    if (write_result_of(ex, j, MC_OUTCOME_FAILED_PERMANENTLY, error, true) != 0)
        return -1;
    mc_record rec = call_record(ex, j);
    mc_counter_add(ex->refused, 1);
    if (mc_ctx_dead_letter(ex->ctx, &rec, reason, &j->task) == 0)
        return 0;
    return mc_ctx_dead_letter(ex->ctx, &rec, reason, NULL);
}

/* Kafka refused the record that reports j's attempt (what: its kind). */
static int report_refused(executor *ex, const mc_call *j, const char *what)
{
    char error[300], reason[300];
    snprintf(error, sizeof error,
             "Kafka refused the %s record of this attempt; the task is in the dead topic", what);
    snprintf(reason, sizeof reason, "executor: Kafka refused the %s record of attempt %" PRId32,
             what, j->task.attempt);
    return fail_for_good(ex, j, error, reason);
}

static int report_attempt(executor *ex, const mc_call *j)
{
    bool permanent = j->transport_failed ? j->permanent : mc_http_status_permanent((int)j->status);
    char error[MC_CALL_ERROR_MAX];
    if (j->transport_failed)
        snprintf(error, sizeof error, "%s", j->error);
    else
        snprintf(error, sizeof error, "HTTP %ld", j->status);
    mc_attempt a = {
        .task = j->task,
        .http_status = (int32_t)j->status,
        .error = error,
        .response_snippet = j->snippet,
        .response_snippet_len = j->snippet_len,
        .retry_after_ms =
            j->retry_after[0]
                ? mc_parse_retry_after(j->retry_after, strlen(j->retry_after), j->finished_at)
                : -1,
        .started_at = j->started_at,
        .finished_at = j->finished_at,
        .permanent = permanent,
        .response_headers = j->response_headers,
        .n_response_headers = j->n_response_headers,
        .response_size = response_size(j),
        .member = j->member[0] ? j->member : NULL,
        .write_version = 0}; /* retry reads today's Attempts (the task's every field) */
    char attempt[16], status[16], ms[24], version[24];
    snprintf(attempt, sizeof attempt, "%" PRId32, j->task.attempt);
    snprintf(status, sizeof status, "%ld", j->status);
    snprintf(ms, sizeof ms, "%" PRId64, j->finished_at - j->started_at);
    mc_log(mc_ctx_logger(ex->ctx), MC_LOG_INFO, "call failed", "key", j->key, "attempt", attempt,
           "status", status, "ms", ms, "error", error, "permanent", permanent ? "true" : "false",
           (const char *)NULL);
    mc_counter_add(ex->failed, 1);
    mc_buf_reset(&ex->buf);
    if (mc_encode_attempt(&a, &ex->buf) != 0)
        return -1;
    /* The next attempt keeps this version, so the client's later commands win. */
    int n = snprintf(version, sizeof version, "%" PRId64, j->version.v);
    mc_header h[2] = {{MC_VERSION_HEADER, version, (size_t)n}};
    char fpos[24];
    size_t nh = 1;
    if (j->fired_pos >= 0) {
        int fn = snprintf(fpos, sizeof fpos, "%" PRId64, j->fired_pos);
        h[nh++] = (mc_header){MC_FIRED_POSITION_HEADER, fpos, (size_t)fn};
    }
    int rc = produce_for_n(ex, ex->retry, j, h, nh);
    return rc == MC_FORWARD_REFUSED ? report_refused(ex, j, "Attempt") : rc;
}

/* Submits the follow-ups of j, which just succeeded, in the open transaction.
 * One Kafka refuses (too large) is dead-lettered on its own: the success
 * stands. */
static int submit_follow_ups(executor *ex, const mc_call *j)
{
    const mc_task *t = &j->task;
    if (!t->n_on_success)
        return 0;
    if (ex->tasks_partitions <= 0) {
        char err[256];
        int n = mc_ctx_partition_count(ex->ctx, "tasks", err, sizeof err);
        if (n <= 0) {
            mc_log(mc_ctx_logger(ex->ctx), MC_LOG_WARN, "cannot ask how many partitions tasks has",
                   "error", err, (const char *)NULL);
            return -1; /* abort: the next turn asks again */
        }
        ex->tasks_partitions = n;
    }
    for (size_t i = 0; i < t->n_on_success; i++) {
        mc_follow_up_submit f;
        mc_follow_up_build(t, i, j->key, j->finished_at, &f);
        mc_command c = f.command;
        mc_buf_reset(&ex->buf);
        if (mc_encode_command(&c, &ex->buf) != 0)
            return -1;
        mc_source cause = {ex->ready_topic, j->partition, j->offset};
        mc_produce p = {.out = ex->tasks,
                        .partition = mc_key_partition(f.key, f.key_len, ex->tasks_partitions),
                        .key = f.key,
                        .key_len = f.key_len,
                        .value = ex->buf.data,
                        .value_len = ex->buf.len,
                        .cause = &cause};
        int rc = f.key_len ? mc_ctx_produce(ex->ctx, &p) : MC_FORWARD_REFUSED;
        if (rc == MC_FORWARD_REFUSED) {
            char reason[400];
            snprintf(reason, sizeof reason,
                     "executor: follow-up %zu of %.200s not submitted: Kafka refused it (too "
                     "large) or its key is too long",
                     i + 1, j->key);
            mc_record rec = call_record(ex, j);
            if (mc_ctx_dead_letter(ex->ctx, &rec, reason, &c.submit) != 0 &&
                mc_ctx_dead_letter(ex->ctx, &rec, reason, NULL) != 0)
                return -1;
            continue;
        }
        if (rc != 0)
            return rc;
        mc_counter_add(ex->follow_ups, 1);
    }
    return 0;
}

/* The SUCCEEDED Result of j and its follow-ups. */
static int report_success(executor *ex, const mc_call *j)
{
    int rc = write_result(ex, j, MC_OUTCOME_SUCCEEDED, "");
    if (rc == MC_FORWARD_REFUSED)
        return report_refused(ex, j, "Result");
    return rc != 0 ? rc : submit_follow_ups(ex, j);
}

/* The target topic named topic, asked about now when not known or stale
 * (a topic the broker does not know or could not describe: again after
 * TARGET_MISSING_MS, as each attempt on it fails meanwhile); NULL on ENOMEM. */
static target_topic *target_topic_of(executor *ex, const char *topic, char *err, size_t errlen)
{
    target_topic *t = NULL;
    for (size_t i = 0; i < ex->n_topics && !t; i++)
        if (strcmp(ex->topics[i].name, topic) == 0)
            t = &ex->topics[i];
    if (!t) {
        if (ex->n_topics == ex->cap_topics) {
            size_t cap = ex->cap_topics ? ex->cap_topics * 2 : 4;
            target_topic *v = realloc(ex->topics, cap * sizeof *v);
            if (!v) {
                snprintf(err, errlen, "out of memory");
                return NULL;
            }
            ex->topics = v;
            ex->cap_topics = cap;
        }
        t = &ex->topics[ex->n_topics];
        *t = (target_topic){.partitions = -1, .asked_at = INT64_MIN / 2};
        snprintf(t->name, sizeof t->name, "%s", topic);
        if (!(t->out = mc_ctx_output_topic(ex->ctx, topic))) {
            snprintf(err, errlen, "cannot make an output for %s", topic);
            return NULL;
        }
        ex->n_topics++;
    }
    int64_t now = mc_ctx_now_ms(ex->ctx);
    int64_t stale = t->partitions > 0 ? TARGET_REFRESH_MS : TARGET_MISSING_MS;
    if (now - t->asked_at >= stale) {
        char why[sizeof t->why] = "";
        int n = mc_ctx_topic_partition_count(ex->ctx, topic, why, sizeof why);
        if (n == 0)
            snprintf(why, sizeof why, "the broker says it has no partitions");
        /* A count, or the topic gone; a broker that could not be asked
         * leaves what we knew (if anything). */
        if (n > 0 || n == MC_TOPIC_MISSING || t->partitions <= 0) {
            t->partitions = n > 0 || n == MC_TOPIC_MISSING ? n : -1;
            memcpy(t->why, why, sizeof why);
        }
        t->asked_at = now;
    }
    return t;
}

/* A delivery that cannot be made: an attempt that failed (permanently or
 * not), for the retry processor to judge like a failed HTTP call. */
static int delivery_failed(executor *ex, mc_call *j, bool permanent, const char *why)
{
    j->transport_failed = true;
    j->permanent = permanent;
    snprintf(j->error, sizeof j->error, "%s", why);
    return report_attempt(ex, j);
}

/* A Kafka target's turn came: its record goes out in the open transaction,
 * with the task's Result (see the top). */
static int deliver(executor *ex, mc_call *j)
{
    const mc_kafka_target *k = &j->task.kafka_target;
    char why[MC_CALL_ERROR_MAX];
    if (!mc_kafka_target_allowed(ex->targets, j->task.app_id, k->topic, "kafka_target.topic", why,
                                 sizeof why))
        return delivery_failed(ex, j, true, why);
    char err[256] = "";
    target_topic *t = target_topic_of(ex, k->topic, err, sizeof err);
    if (!t)
        return -1;
    if (t->partitions <= 0) {
        /* Not there yet, or the broker would not say (a metadata timeout, no
         * right to describe it): a failed attempt, retried by its policy. */
        if (t->partitions == MC_TOPIC_MISSING)
            snprintf(why, sizeof why, "kafka_target.topic '%.200s' does not exist", k->topic);
        else
            snprintf(why, sizeof why, "kafka_target.topic '%.200s': %.199s", k->topic, t->why);
        return delivery_failed(ex, j, false, why);
    }
    size_t nh = k->n_headers + 2;
    mc_header *h = malloc(nh * sizeof *h);
    if (!h)
        return -1;
    for (size_t i = 0; i < k->n_headers; i++)
        h[i] = (mc_header){k->headers[i].key, k->headers[i].value, strlen(k->headers[i].value)};
    char due[24];
    int dn = snprintf(due, sizeof due, "%" PRId64, j->task.due_at);
    h[k->n_headers] = (mc_header){MC_TARGET_TASK_HEADER, j->key, strlen(j->key)};
    h[k->n_headers + 1] = (mc_header){MC_TARGET_DUE_HEADER, due, (size_t)dn};
    const void *pkey = k->has_key ? (const void *)k->key : j->key;
    size_t pkey_len = k->has_key ? k->key_len : strlen(j->key);
    mc_source cause = {ex->ready_topic, j->partition, j->offset};
    mc_produce p = {.out = t->out,
                    .partition = mc_key_partition(pkey, pkey_len, t->partitions),
                    .key = k->has_key ? k->key : NULL,
                    .key_len = k->has_key ? k->key_len : 0,
                    .value = k->has_value ? k->value : NULL,
                    .value_len = k->has_value ? k->value_len : 0,
                    .headers = h,
                    .n_headers = nh,
                    .cause = &cause};
    int rc = mc_ctx_produce(ex->ctx, &p);
    free(h);
    if (rc == MC_FORWARD_UNKNOWN_TOPIC) {
        /* Gone since it was asked about: ask again next time. */
        t->partitions = MC_TOPIC_MISSING;
        t->asked_at = mc_ctx_now_ms(ex->ctx);
        snprintf(why, sizeof why, "kafka_target.topic '%.200s' does not exist", k->topic);
        return delivery_failed(ex, j, false, why);
    }
    if (rc == MC_FORWARD_REFUSED) {
        snprintf(why, sizeof why,
                 "Kafka refused the record for '%.200s' (too large, invalid, or a topic this "
                 "producer may not write)",
                 k->topic);
        return delivery_failed(ex, j, true, why);
    }
    if (rc != 0)
        return rc;
    mc_counter_add(ex->delivered, 1);
    /* Its consumers see it when this transaction commits: they wait now. */
    mc_ctx_request_commit_now(ex->ctx);
    return report_success(ex, j);
}

/* The partition count of the topic (by suffix) into *n, asked when not known yet (each
 * assignment forgets it: the layout may have grown). 0, or -1 (the transaction aborts and
 * the next turn asks again). */
static int known_partitions(executor *ex, const char *topic, int32_t *n)
{
    if (*n > 0)
        return 0;
    char err[256];
    int got = mc_ctx_partition_count(ex->ctx, topic, err, sizeof err);
    if (got <= 0) {
        mc_log(mc_ctx_logger(ex->ctx), MC_LOG_WARN, "cannot ask how many partitions a topic has",
               "topic", topic, "error", err, (const char *)NULL);
        return -1;
    }
    *n = got;
    return 0;
}

/* A shard as it is built: its command, its key, and the strings they point at. */
typedef struct shard_build {
    char id[MC_CALL_KEY_MAX], key[MC_CALL_KEY_MAX], ref[64], index[16], total[16];
    size_t key_len;
    mc_kv *metadata; /* room for the task's metadata and three more */
    mc_kv *headers;  /* room for the task's headers and two more */
    mc_command command;
} shard_build;

/* Builds shard i of broadcast j in *b: the task again, as <task_id>#shard-<i>, due now,
 * pinned to member i, told its index and the total in headers, without the chain's marks
 * (the broadcast is the link, not its shards), follow-ups (they go when the broadcast has
 * succeeded) or late policy (the broadcast's was judged when it fanned out). False, with
 * why, when the router would refuse it. */
static bool build_shard(executor *ex, const mc_call *j, int32_t i, shard_build *b, char *why,
                        size_t whylen)
{
    const mc_task *t = &j->task;
    int32_t n = (int32_t)j->n_shard_members;
    mc_shard_ref ref = {i, n, j->version.v};
    mc_shard_ref_format(&ref, b->ref, sizeof b->ref);
    snprintf(b->index, sizeof b->index, "%" PRId32, i);
    snprintf(b->total, sizeof b->total, "%" PRId32, n);
    size_t idlen = mc_shard_task_id(t->task_id, i, b->id, sizeof b->id);
    b->key_len =
        idlen < sizeof b->id ? mc_task_key(t->app_id, b->id, b->key, sizeof b->key) : sizeof b->key;
    if (b->key_len >= sizeof b->key || b->key_len >= MC_MAX_TASK_KEY_LEN) {
        snprintf(why, whylen, "the key of shard %" PRId32 " would be longer than %d bytes", i,
                 MC_MAX_TASK_KEY_LEN - 1);
        return false;
    }
    size_t nm = 0;
    for (size_t k = 0; k < t->n_metadata; k++)
        if (!mc_chain_metadata_reserved(t->metadata[k].key) &&
            !mc_broadcast_metadata_reserved(t->metadata[k].key))
            b->metadata[nm++] = t->metadata[k];
    b->metadata[nm++] = (mc_kv){MC_BROADCAST_METADATA, t->task_id};
    b->metadata[nm++] = (mc_kv){MC_SHARD_METADATA, b->ref};
    b->metadata[nm++] = (mc_kv){MC_MEMBER_METADATA, j->shard_members[i]};
    size_t nh = 0;
    for (size_t k = 0; k < t->callback.n_headers; k++)
        if (strcasecmp(t->callback.headers[k].key, MC_SHARD_INDEX_HEADER) != 0 &&
            strcasecmp(t->callback.headers[k].key, MC_SHARD_TOTAL_HEADER) != 0)
            b->headers[nh++] = t->callback.headers[k];
    b->headers[nh++] = (mc_kv){MC_SHARD_INDEX_HEADER, b->index};
    b->headers[nh++] = (mc_kv){MC_SHARD_TOTAL_HEADER, b->total};
    mc_task *sh = &b->command.submit;
    b->command.kind = MC_CMD_SUBMIT;
    *sh = *t;
    sh->task_id = b->id;
    sh->due_at = j->finished_at;
    sh->attempt = 1;
    sh->created_at = j->finished_at;
    sh->metadata = b->metadata;
    sh->n_metadata = nm;
    sh->callback.headers = b->headers;
    sh->callback.n_headers = nh;
    sh->on_success = NULL;
    sh->n_on_success = 0;
    sh->has_late_policy = false;
    /* The router checks it again: one it would refuse would never report. */
    return mc_task_ok(sh, j->finished_at, ex->cfg->max_due_ms, &mc_task_avro_names, why, whylen);
}

/* Produces the shard in b (encoded in ex->buf) to its home partition of `tasks`. What
 * mc_ctx_produce returns. */
static int produce_shard(executor *ex, const mc_call *j, const shard_build *b)
{
    mc_source cause = {ex->ready_topic, j->partition, j->offset};
    mc_produce p = {.out = ex->tasks,
                    .partition = mc_key_partition(b->key, b->key_len, ex->tasks_partitions),
                    .key = b->key,
                    .key_len = b->key_len,
                    .value = ex->buf.data,
                    .value_len = ex->buf.len,
                    .cause = &cause};
    return mc_ctx_produce(ex->ctx, &p);
}

/* Encodes the StartBroadcast of j in ex->buf: the jobs role waits for every shard's final
 * Result and writes j's own. 0, or -1. */
static int encode_start(executor *ex, const mc_call *j)
{
    mc_job_command c = {.kind = MC_JOBCMD_START_BROADCAST};
    c.start_broadcast = (mc_start_broadcast){.task = j->task,
                                             .version = j->version.v,
                                             .members = (const char *const *)j->shard_members,
                                             .n_members = j->n_shard_members,
                                             .fired_at = j->finished_at};
    mc_buf_reset(&ex->buf);
    return mc_encode_job_command(&c, &ex->buf);
}

/* Produces j's StartBroadcast (encoded in ex->buf) to the task key's home partition of
 * `job-commands`. What mc_ctx_produce returns. */
static int produce_start(executor *ex, const mc_call *j)
{
    mc_source cause = {ex->ready_topic, j->partition, j->offset};
    size_t klen = strlen(j->key);
    mc_produce p = {.out = ex->commands,
                    .partition = mc_key_partition(j->key, klen, ex->command_partitions),
                    .key = j->key,
                    .key_len = klen,
                    .value = ex->buf.data,
                    .value_len = ex->buf.len,
                    .cause = &cause};
    return mc_ctx_produce(ex->ctx, &p);
}

/* Builds, encodes and produces shard i. What mc_ctx_produce returns, or -1. */
static int submit_shard(executor *ex, const mc_call *j, int32_t i, shard_build *b)
{
    char why[512];
    if (!build_shard(ex, j, i, b, why, sizeof why))
        return -1; /* it passed the first pass */
    mc_buf_reset(&ex->buf);
    if (mc_encode_command(&b->command, &ex->buf) != 0)
        return -1;
    return produce_shard(ex, j, b);
}

/* Checks that every shard of j would pass the router (else *why says which does not and
 * why, and *bad is set) and finds the largest record of the fan-out: -1 for the
 * StartBroadcast, else a shard's index. 0, or -1 on failure. */
static int check_shards(executor *ex, const mc_call *j, shard_build *b, int32_t *largest, bool *bad,
                        char *why, size_t whylen)
{
    if (encode_start(ex, j) != 0)
        return -1;
    size_t most = strlen(j->key) + ex->buf.len;
    *largest = -1;
    *bad = false;
    for (int32_t i = 0; i < (int32_t)j->n_shard_members; i++) {
        if (!build_shard(ex, j, i, b, why, whylen)) {
            *bad = true;
            return 0;
        }
        mc_buf_reset(&ex->buf);
        if (mc_encode_command(&b->command, &ex->buf) != 0)
            return -1;
        if (b->key_len + ex->buf.len > most) {
            most = b->key_len + ex->buf.len;
            *largest = i;
        }
    }
    return 0;
}

/* A SHARDING_BROADCAST task's turn came: one shard per member to `tasks`, and the
 * StartBroadcast the jobs role waits on, all in the open transaction that ends the task's
 * `ready` record - so a kill at any moment submits all of them once, or none. The task's
 * own Result is the jobs role's to write, once every shard has its final one.
 *
 * All or none holds for refusals too: every shard is checked against the router's rules
 * first, and the largest record goes out first, so a record Kafka refuses for its size
 * is refused before anything else of the fan-out is in the transaction; the broadcast
 * then ends failed for good, in `dead`. */
static int broadcast(executor *ex, mc_call *j)
{
    if (known_partitions(ex, "tasks", &ex->tasks_partitions) != 0 ||
        known_partitions(ex, "job-commands", &ex->command_partitions) != 0)
        return -1;
    const mc_task *t = &j->task;
    shard_build b;
    b.metadata = malloc((t->n_metadata + 3) * sizeof *b.metadata);
    b.headers = malloc((t->callback.n_headers + 2) * sizeof *b.headers);
    char why[512];
    int32_t largest = -1;
    bool bad = false;
    int rc =
        b.metadata && b.headers ? check_shards(ex, j, &b, &largest, &bad, why, sizeof why) : -1;
    if (rc == 0 && bad) {
        char error[600], reason[700];
        snprintf(error, sizeof error, "the broadcast cannot be submitted: %s", why);
        snprintf(reason, sizeof reason, "executor: %s", error);
        rc = fail_for_good(ex, j, error, reason);
        goto done;
    }
    if (rc == 0)
        rc = largest < 0 ? (encode_start(ex, j) != 0 ? -1 : produce_start(ex, j))
                         : submit_shard(ex, j, largest, &b);
    if (rc == MC_FORWARD_REFUSED) {
        rc = report_refused(ex, j, largest < 0 ? "StartBroadcast" : "shard");
        goto done;
    }
    if (rc == 0 && largest >= 0)
        rc = encode_start(ex, j) != 0 ? -1 : produce_start(ex, j);
    for (int32_t i = 0; rc == 0 && i < (int32_t)j->n_shard_members; i++)
        if (i != largest)
            rc = submit_shard(ex, j, i, &b);
    if (rc == MC_FORWARD_REFUSED) {
        /* Not for its size (a larger record went): nothing else is refused for good. */
        mc_log(mc_ctx_logger(ex->ctx), MC_LOG_ERROR, "Kafka refused part of a broadcast", "key",
               j->key, (const char *)NULL);
        rc = -1;
    }
    if (rc == 0) {
        mc_counter_add(ex->broadcasts, 1);
        mc_counter_add(ex->shards, j->n_shard_members);
        mc_ctx_request_commit_now(ex->ctx); /* the shards are due: the router waits for this */
    }
done:
    free(b.metadata);
    free(b.headers);
    return rc;
}

/* A call not started because it was later than its late policy allows. */
static int report_late(executor *ex, const mc_call *j)
{
    char error[300];
    snprintf(error, sizeof error,
             "not called: %" PRId64 " ms late, more than its late policy's %" PRId64 " ms",
             j->started_at - j->task.due_at, j->task.late_policy.max_late_ms);
    if (j->late == MC_LATE_DROP) {
        mc_counter_add(ex->late_dropped, 1);
        int rc = write_result(ex, j, MC_OUTCOME_DROPPED, error);
        return rc == MC_FORWARD_REFUSED ? report_refused(ex, j, "Result") : rc;
    }
    mc_counter_add(ex->late_dead, 1);
    int rc = write_result(ex, j, MC_OUTCOME_FAILED_PERMANENTLY, error);
    if (rc == MC_FORWARD_REFUSED)
        return report_refused(ex, j, "Result");
    if (rc != 0)
        return rc;
    char reason[400];
    snprintf(reason, sizeof reason, "executor: %s (late policy DEAD)", error);
    mc_record rec = call_record(ex, j);
    if (mc_ctx_dead_letter(ex->ctx, &rec, reason, &j->task) == 0)
        return 0;
    return mc_ctx_dead_letter(ex->ctx, &rec, reason, NULL); /* the task too large to carry */
}

/* A call came back from the caller: its Result (success, or recalled) or
 * Attempt (failure) goes out in the open transaction. */
static int report(executor *ex, mc_call *j)
{
    if (j->recalled) {
        mc_counter_add(ex->recalled, 1);
        int rc = write_result(ex, j, MC_OUTCOME_CANCELLED,
                              "cancelled or rescheduled before its due time");
        return rc == MC_FORWARD_REFUSED ? report_refused(ex, j, "Result") : rc;
    }
    if (j->late != MC_LATE_RUN)
        return report_late(ex, j);
    if (j->deliver)
        return deliver(ex, j);
    if (j->n_shard_members)
        return broadcast(ex, j);
    if (!j->transport_failed && j->status >= 200 && j->status < 300) {
        const mc_logger *lg = mc_ctx_logger(ex->ctx);
        if (lg->level <= MC_LOG_DEBUG) {
            char attempt[16], status[16];
            snprintf(attempt, sizeof attempt, "%" PRId32, j->task.attempt);
            snprintf(status, sizeof status, "%ld", j->status);
            mc_log(lg, MC_LOG_DEBUG, "called", "key", j->key, "attempt", attempt, "status", status,
                   (const char *)NULL);
        }
        mc_counter_add(ex->succeeded, 1);
        return report_success(ex, j);
    }
    return report_attempt(ex, j);
}

/* Sends the markers whose turn has come - every record before them has
 * finished - on to `retry`, and counts them finished. */
static int forward_markers(executor *ex, part *p)
{
    while (mc_ring_len(&p->markers) > 0) {
        marker_ref *mk = mc_ring_at(&p->markers, 0);
        if (mk->seq != mc_window_oldest(&p->win))
            break;
        if (mc_forward_position_marker(ex->ctx, ex->retry, p->partition, MC_WHEEL_POSITION_HEADER,
                                       mk->position) != 0)
            return -1;
        mc_window_finish(&p->win, mk->seq);
        mc_ring_pop(&p->markers);
    }
    return 0;
}

/* Takes back the calls that ended; those of a partition abandoned meanwhile
 * are only freed (its next owner calls them). */
static int take_done(executor *ex)
{
    int rc = 0;
    mc_call *done = ex->caller->ops->take_done(ex->caller);
    for (mc_call *j = done, *next; j; j = next) {
        next = j->next;
        part *p = mc_part_table_get(&ex->parts, j->partition);
        if (rc == 0 && p && p->assigned && j->gen == p->gen) {
            if (j->kind == MC_CALL_START && report(ex, j) != 0)
                rc = -1;
            mc_window_finish(&p->win, j->seq);
            if (j->kind == MC_CALL_START && !j->held_at_read)
                p->busy--;
        }
        mc_call_free(j);
    }
    part *p;
    for (int32_t i = 0; rc == 0 && (p = mc_part_table_next(&ex->parts, &i)); i++) {
        if (!p->assigned)
            continue;
        if (forward_markers(ex, p) != 0)
            rc = -1;
        update_pause(ex, p);
    }
    return rc;
}

static int on_done(void *arg, int fd, int revents, mc_ctx *ctx)
{
    (void)fd;
    (void)revents;
    (void)ctx;
    return take_done(arg);
}

/* ---- input ------------------------------------------------------------------------- */

/* Posts the calls kept back while the partition caught up, in one batch. */
static void end_catch_up(executor *ex, part *p)
{
    p->catch_up_to = -1;
    mc_call *first = p->waiting_head;
    p->waiting_head = p->waiting_tail = NULL;
    if (first)
        ex->caller->ops->post(ex->caller, first);
}

/* Posts j, or keeps it back while the partition catches up. */
static void post_call(executor *ex, part *p, mc_call *j)
{
    j->next = NULL;
    if (p->catch_up_to < 0) {
        ex->caller->ops->post(ex->caller, j);
        return;
    }
    *(p->waiting_tail ? &p->waiting_tail->next : &p->waiting_head) = j;
    p->waiting_tail = j;
}

/* Gives the record back until the checkpoint can take it (see the top):
 * the partition stays paused until enough calls have ended. */
static int give_back(executor *ex, part *p)
{
    end_catch_up(ex, p); /* it cannot read further until calls end */
    p->full = true;
    mc_counter_add(ex->full, 1);
    if (!p->paused) {
        if (mc_ctx_pause(ex->ctx, ex->ready_topic, p->partition, true) != 0)
            return -1;
        p->paused = true;
        mc_gauge_add(ex->paused_gauge, 1);
    }
    return MC_PROCESS_LATER;
}

static mc_call *call_new(part *p, mc_call_kind kind, const mc_record *m)
{
    mc_call *j = calloc(1, sizeof *j);
    if (!j || !(j->arena = mc_arena_new())) {
        free(j);
        return NULL;
    }
    j->kind = kind;
    j->partition = p->partition;
    j->offset = m->offset;
    j->gen = p->gen;
    return j;
}

/* The wheel's position marker: finished once every record before it is. */
static int take_marker(executor *ex, part *p, const mc_record *m, mc_window_past past,
                       int64_t position)
{
    uint64_t seq = mc_window_add(&p->win, m->offset, past, true);
    if (seq == UINT64_MAX || mc_ring_push(&p->markers, &(marker_ref){seq, position}) != 0)
        return -1;
    return forward_markers(ex, p);
}

static int process_record(executor *ex, part *p, const mc_record *m, mc_ctx *ctx);

/* A recall finished before a restart or a handover is remembered all the
 * same: a fire of an older version after it may not be. */
static int remember_finished_recall(part *p, const mc_record *m)
{
    mc_wheel_peeked w;
    if (!m->key || !m->value || mc_wheel_record_peek(m, &w) != MC_CODEC_OK ||
        w.kind != MC_CMD_CANCEL)
        return 0;
    return mc_recall_memory_note(p->recalls, m->key, m->key_len, w.version, m->offset,
                                 m->timestamp_ms);
}

/* A task read after a recall of a newer version of its key: never posted,
 * it ends as a recalled call does (a CANCELLED Result), in this transaction. */
static int void_at_read(executor *ex, part *p, mc_call *j, int64_t now)
{
    j->recalled = true;
    j->started_at = j->finished_at = now;
    int rc = report(ex, j);
    mc_window_finish(&p->win, j->seq);
    mc_call_free(j);
    return rc == 0 ? forward_markers(ex, p) : rc;
}

static int executor_process(void *self, const mc_record *m, mc_ctx *ctx)
{
    executor *ex = self;
    part *p = part_get(ex, m->partition);
    if (!p)
        return -1;
    int rc = process_record(ex, p, m, ctx);
    if (rc == 0 && p->catch_up_to >= 0 && m->offset >= p->catch_up_to)
        end_catch_up(ex, p);
    return rc;
}

static int process_record(executor *ex, part *p, const mc_record *m, mc_ctx *ctx)
{
    mc_window_past past = mc_window_classify(&p->win, m->offset);
    if (past == MC_WINDOW_FINISHED) {
        mc_window_add(&p->win, m->offset, past, false);
        mc_counter_add(ex->skipped, 1); /* finished before the restart */
        return remember_finished_recall(p, m);
    }
    if (!mc_window_fits(&p->win, m->offset, past))
        return give_back(ex, p);
    int64_t position;
    if (!m->key && !m->value) {
        if (mc_record_header_int(m, MC_WHEEL_POSITION_HEADER, &position))
            return take_marker(ex, p, m, past, position);
        mc_window_add(&p->win, m->offset, past, false);
        return 0;
    }
    mc_call *j = call_new(p, MC_CALL_START, m);
    if (!j)
        return -1;
    mc_wheel_entry we;
    char detail[256] = "";
    mc_codec_err err = m->value ? mc_decode_wheel_entry(m->value, m->value_len, j->arena, &we,
                                                        detail, sizeof detail)
                                : MC_CODEC_TRUNCATED;
    if (err) {
        char reason[400];
        snprintf(reason, sizeof reason, "ready record is not a WheelEntry: %s%s%s",
                 mc_codec_strerror(err), detail[0] ? ": " : "", detail);
        mc_call_free(j);
        mc_window_add(&p->win, m->offset, past, false);
        return mc_ctx_dead_letter(ctx, m, reason, NULL) == 0 ? 0 : -1;
    }
    j->version.v = we.version;
    if (we.command.kind == MC_CMD_CANCEL) {
        /* A recall: unfinished until the caller has dropped what it voids. */
        int64_t a = 0;
        j->kind = MC_CALL_RECALL;
        j->version.attempt =
            mc_record_header_int(m, MC_ATTEMPT_HEADER, &a) && a <= INT32_MAX ? (int32_t)a : 0;
        mc_task_key(we.command.cancel.app_id, we.command.cancel.task_id, j->key, sizeof j->key);
    } else {
        j->task = we.command.submit;
        j->version.attempt = j->task.attempt;
        mc_task_key(j->task.app_id, j->task.task_id, j->key, sizeof j->key);
        j->held_at_read = j->task.due_at > mc_ctx_now_ms(ctx);
        if (!mc_record_header_int(m, MC_FIRED_POSITION_HEADER, &j->fired_pos))
            j->fired_pos = -1;
    }
    j->seq = mc_window_add(&p->win, m->offset, past, true);
    if (j->seq == UINT64_MAX) {
        mc_call_free(j);
        return -1;
    }
    if (j->kind == MC_CALL_RECALL) {
        if (mc_recall_memory_note(p->recalls, m->key, m->key_len, j->version, m->offset,
                                  m->timestamp_ms) != 0) {
            mc_call_free(j);
            return -1;
        }
    } else if (mc_recall_memory_voids(p->recalls, m->key, m->key_len, j->version, m->offset,
                                      m->timestamp_ms)) {
        return void_at_read(ex, p, j, mc_ctx_now_ms(ctx));
    }
    if (j->kind == MC_CALL_START && !j->held_at_read)
        p->busy++;
    update_pause(ex, p);
    post_call(ex, p, j);
    return 0;
}

/* A `ready` record whose output Kafka refused for good in an aborted
 * transaction: no call again; the attempt fails for good and the task goes
 * to the dead topic. */
static int executor_refused(void *self, const mc_record *m, const char *reason, mc_ctx *ctx)
{
    executor *ex = self;
    part *p = part_get(ex, m->partition);
    if (!p)
        return -1;
    mc_window_past past = mc_window_classify(&p->win, m->offset);
    mc_window_add(&p->win, m->offset, past, false);
    if (past == MC_WINDOW_FINISHED)
        return 0;
    mc_counter_add(ex->refused, 1);
    mc_call *j = call_new(p, MC_CALL_START, m);
    if (!j)
        return -1;
    mc_wheel_entry we;
    int rc = 0;
    if (m->value && mc_decode_wheel_entry(m->value, m->value_len, j->arena, &we, NULL, 0) == 0 &&
        we.command.kind == MC_CMD_SUBMIT) {
        j->task = we.command.submit;
        mc_task_key(j->task.app_id, j->task.task_id, j->key, sizeof j->key);
        j->started_at = j->finished_at = mc_ctx_now_ms(ctx);
        rc = write_result(ex, j, MC_OUTCOME_FAILED_PERMANENTLY, reason);
        if (rc == 0)
            rc = mc_ctx_dead_letter(ctx, m, reason, &j->task);
    } else {
        rc = mc_ctx_dead_letter(ctx, m, reason, NULL);
    }
    mc_call_free(j);
    return rc == 0 ? 0 : -1;
}

/* ---- assignment and commits ------------------------------------------------------- */

/* Drops every call of p (its next owner, or this one after a rewind, reads
 * the records again and calls them) and forgets the partition. */
static void part_abandon(executor *ex, part *p)
{
    for (mc_call *j = p->waiting_head, *next; j; j = next) {
        next = j->next;
        mc_call_free(j);
    }
    p->waiting_head = p->waiting_tail = NULL;
    p->catch_up_to = -1;
    size_t cut = ex->caller->ops->abandon(ex->caller, p->partition);
    if (p->assigned && p->win.unfinished) /* once: an aborted revoke abandons twice */
        mc_counter_add(ex->abandoned, p->win.unfinished - mc_ring_len(&p->markers));
    mc_counter_add(ex->cut, cut);
    if (p->paused)
        mc_gauge_add(ex->paused_gauge, -1);
    mc_window_free(&p->win);
    mc_ring_free(&p->markers);
    p->gen++; /* finished calls still on their way are stale */
    p->assigned = p->full = p->busy_pause = p->paused = p->handing_over = false;
    p->busy = 0;
}

/* Calls wait (see the top) until the partition is read to where it ends
 * now: its last record can be two before the end, a commit marker after
 * it. Without an answer from the broker they wait CATCH_UP_MAX_MS. */
static void start_catch_up(executor *ex, part *p, int64_t committed, mc_ctx *ctx)
{
    char err[256];
    int64_t end = mc_ctx_end_offset(ctx, "ready", p->partition, err, sizeof err);
    if (end >= 0 && end <= (committed > 0 ? committed : 0))
        return; /* nothing to read */
    p->catch_up_to = end >= 0 ? end - 2 : INT64_MAX;
    p->catch_up_until = mc_ctx_now_ms(ctx) + CATCH_UP_MAX_MS;
    mc_ctx_wakeup_at(ctx, p->catch_up_until);
    (void)ex;
}

/* Publishes which partitions are ours now, for the caller's shares of the admission
 * limits (see executor_admission.h). */
static void publish_ownership(executor *ex)
{
    pthread_mutex_lock(&ex->ownership_mu);
    ex->ownership.total = ex->ready_partitions;
    ex->ownership.n_owned = 0;
    part *p;
    for (int32_t i = 0; (p = mc_part_table_next(&ex->parts, &i)); i++) {
        if (!p->assigned || ex->ownership.n_owned >= MC_OWNERSHIP_MAX)
            continue;
        ex->ownership.owned[ex->ownership.n_owned++] = p->partition;
        /* A count not asked since ready grew would make the shares add up to more (an
         * unknown one, 0, stays unknown: the least share). */
        if (ex->ownership.total > 0 && p->partition >= ex->ownership.total)
            ex->ownership.total = p->partition + 1;
    }
    pthread_mutex_unlock(&ex->ownership_mu);
    atomic_fetch_add(&ex->ownership_version, 1);
}

/* The caller's thread: copies the ownership when it moved since *version. */
static bool ownership_of(void *arg, uint64_t *version, mc_ownership *out)
{
    executor *ex = arg;
    uint64_t now = atomic_load(&ex->ownership_version);
    if (now == *version)
        return false;
    pthread_mutex_lock(&ex->ownership_mu);
    out->total = ex->ownership.total;
    out->n_owned = ex->ownership.n_owned;
    memcpy(out->owned, ex->ownership.owned, (size_t)out->n_owned * sizeof *out->owned);
    pthread_mutex_unlock(&ex->ownership_mu);
    *version = now;
    return true;
}

/* The caller's thread: the endpoint groups and limits, once the table has read its topic
 * to the end (until then no call starts: a limit not read yet would not hold). */
static mc_endpoints *endpoints_of(void *arg)
{
    executor *ex = arg;
    return mc_endpoint_table_caught_up(ex->endpoints) ? mc_endpoint_table_snapshot(ex->endpoints)
                                                      : NULL;
}

/* Ends the catch-ups that have waited long enough. */
static int executor_punctuate(void *self, int64_t now_ms, mc_ctx *ctx)
{
    executor *ex = self;
    part *p;
    for (int32_t i = 0; (p = mc_part_table_next(&ex->parts, &i)); i++) {
        if (p->catch_up_to < 0)
            continue;
        if (now_ms >= p->catch_up_until)
            end_catch_up(ex, p);
        else
            mc_ctx_wakeup_at(ctx, p->catch_up_until);
    }
    return 0;
}

static int executor_on_assign(void *self, const rd_kafka_topic_partition_list_t *parts, mc_ctx *ctx)
{
    executor *ex = self;
    ex->tasks_partitions = 0; /* the layout may have grown: asked again when needed */
    ex->command_partitions = 0;
    for (int i = 0; i < parts->cnt; i++) {
        const rd_kafka_topic_partition_t *tp = &parts->elems[i];
        part *p = part_get(ex, tp->partition);
        if (!p)
            return -1;
        part_abandon(ex, p);
        p->assigned = true;
        start_catch_up(ex, p, tp->offset, ctx);
        const char *md = tp->metadata_size ? (const char *)tp->metadata : NULL;
        if (!mc_window_start(&p->win, tp->offset >= 0 ? tp->offset : -1, md, tp->metadata_size)) {
            char copy[200];
            snprintf(copy, sizeof copy, "%.*s",
                     (int)(tp->metadata_size < 150 ? tp->metadata_size : 150), md);
            mc_log(mc_ctx_logger(ctx), MC_LOG_WARN,
                   "unreadable checkpoint: every record from the committed offset is called again",
                   "metadata", copy, (const char *)NULL);
        }
    }
    char err[256];
    int n = mc_ctx_partition_count(ctx, "ready", err, sizeof err);
    if (n > 0)
        ex->ready_partitions = n; /* else the last known: a share is never lost for it */
    publish_ownership(ex);
    return 0;
}

static void executor_on_revoke(void *self, const rd_kafka_topic_partition_list_t *parts,
                               mc_ctx *ctx)
{
    (void)ctx;
    executor *ex = self;
    for (int i = 0; i < parts->cnt; i++) {
        part *p = mc_part_table_get(&ex->parts, parts->elems[i].partition);
        if (p)
            part_abandon(ex, p);
    }
    publish_ownership(ex);
}

/* Hands p over: the calls kept back while it caught up, and those the
 * caller holds or queues, are dropped unstarted (they stay unfinished in
 * the checkpoint, so the next owner reads and calls them); the running ones
 * go on. */
static void start_handing_over(executor *ex, part *p)
{
    p->handing_over = true;
    for (mc_call *j = p->waiting_head, *next; j; j = next) {
        next = j->next;
        mc_call_free(j);
    }
    p->waiting_head = p->waiting_tail = NULL;
    p->catch_up_to = -1;
    ex->caller->ops->drain_partition(ex->caller, p->partition);
}

/* Drained once no call of these partitions is running and every one that
 * ended is reported in the open transaction: the revoke's commit then
 * carries their Results and a checkpoint past them, so the next owner
 * repeats none. */
static int executor_revoke_drained(void *self, const rd_kafka_topic_partition_list_t *parts,
                                   mc_ctx *ctx)
{
    (void)ctx;
    executor *ex = self;
    bool running = false;
    for (int i = 0; i < parts->cnt; i++) {
        part *p = mc_part_table_get(&ex->parts, parts->elems[i].partition);
        if (!p || !p->assigned)
            continue;
        if (!p->handing_over)
            start_handing_over(ex, p);
        running = running || ex->caller->ops->calls_of(ex->caller, p->partition) > 0;
    }
    /* After the count: a call it no longer has is in the done list by now. */
    if (take_done(ex) != 0)
        return -1;
    return running ? 0 : 1;
}

static int executor_prepare_commit(void *self, mc_ctx *ctx)
{
    executor *ex = self;
    char md[MC_CHECKPOINT_MAX + 1];
    part *p;
    for (int32_t i = 0; (p = mc_part_table_next(&ex->parts, &i)); i++) {
        if (!p->assigned || !mc_window_read_any(&p->win))
            continue;
        if (mc_window_checkpoint(&p->win, md, sizeof md) < 0) {
            mc_log(mc_ctx_logger(ctx), MC_LOG_ERROR,
                   "the executor's checkpoint does not fit (a bug: the window checks every record)",
                   (const char *)NULL);
            return -1;
        }
        if (mc_ctx_set_commit_offset(ctx, ex->ready_topic, p->partition,
                                     mc_window_commit_offset(&p->win), md) != 0)
            return -1;
    }
    return 0;
}

/* Drained once no call is running and every finished one is reported;
 * held and queued tasks are not due or not started, and the next owner
 * takes them from the committed checkpoint. */
static bool executor_drained(void *self, mc_ctx *ctx)
{
    (void)ctx;
    executor *ex = self;
    ex->caller->ops->drain(ex->caller); /* start nothing new */
    return ex->caller->ops->idle(ex->caller);
}

static void executor_destroy(void *self)
{
    executor *ex = self;
    if (!ex)
        return;
    if (ex->caller)
        ex->caller->ops->destroy(ex->caller);
    if (ex->endpoints)
        mc_endpoint_table_close(ex->endpoints);
    part *p;
    for (int32_t i = 0; (p = mc_part_table_next(&ex->parts, &i)); i++) {
        for (mc_call *j = p->waiting_head, *next; j; j = next) {
            next = j->next;
            mc_call_free(j);
        }
        mc_window_free(&p->win);
        mc_ring_free(&p->markers);
        mc_recall_memory_free(p->recalls);
        free(p);
    }
    mc_part_table_free(&ex->parts);
    mc_buf_free(&ex->buf);
    mc_kafka_targets_free(ex->targets);
    free(ex->topics);
    pthread_mutex_destroy(&ex->ownership_mu);
    free(ex);
}

static void register_metrics(executor *ex, mc_metrics *m)
{
    ex->succeeded = mc_metrics_counter(m, "mooncake_executor_calls_total",
                                       "Callbacks called, by outcome", "outcome=\"succeeded\"");
    ex->failed = mc_metrics_counter(m, "mooncake_executor_calls_total",
                                    "Callbacks called, by outcome", "outcome=\"failed\"");
    ex->skipped = mc_metrics_counter(
        m, "mooncake_executor_skipped_total",
        "Records read again after a restart and skipped: their call had finished", NULL);
    ex->abandoned = mc_metrics_counter(
        m, "mooncake_executor_abandoned_total",
        "Unfinished calls dropped on a rebalance or abort (called again by the next owner)", NULL);
    ex->cut = mc_metrics_counter(
        m, "mooncake_executor_calls_cut_total",
        "Calls running when their partition was given up - a lost assignment, an abort, a "
        "revoke or stop past --drain-timeout-ms: the next owner may make them again",
        NULL);
    ex->full = mc_metrics_counter(
        m, "mooncake_executor_checkpoint_full_total",
        "Records given back because the partition's checkpoint was full (read once calls end)",
        NULL);
    ex->recalled = mc_metrics_counter(
        m, "mooncake_executor_recalled_total",
        "Tasks not called: recalled (by a cancel or a newer version) before their due time", NULL);
    ex->refused = mc_metrics_counter(
        m, "mooncake_executor_refused_outputs_total",
        "Attempts whose Result or Attempt Kafka refused (failed permanently, dead-lettered)", NULL);
    ex->delivered = mc_metrics_counter(
        m, "mooncake_executor_delivered_total",
        "Kafka targets delivered (counted when produced; exactly once when committed)", NULL);
    ex->late_dropped = mc_metrics_counter(
        m, "mooncake_executor_late_total",
        "Calls not started: later than their late policy allows, by action", "action=\"drop\"");
    ex->late_dead = mc_metrics_counter(
        m, "mooncake_executor_late_total",
        "Calls not started: later than their late policy allows, by action", "action=\"dead\"");
    ex->broadcasts = mc_metrics_counter(
        m, "mooncake_executor_broadcasts_total",
        "SHARDING_BROADCAST tasks whose shards were submitted (one task per member)", NULL);
    ex->shards = mc_metrics_counter(m, "mooncake_executor_shards_total",
                                    "Shards submitted by SHARDING_BROADCAST tasks", NULL);
    ex->follow_ups = mc_metrics_counter(
        m, "mooncake_executor_follow_ups_total",
        "Follow-up tasks submitted on a success (on_success; exactly once when committed)", NULL);
    ex->paused_gauge = mc_metrics_gauge(m, "mooncake_executor_paused_partitions",
                                        "Partitions paused: too many unfinished tasks", NULL);
}

/* The caller's gate (its thread): a call starts only while the group has not
 * taken our partitions away. When it has, and the runner is blocked in a
 * commit (a broker restart), their next owner makes the calls; starting them
 * here too would make them twice with no turn of ours between. */
static bool owns_assignment(void *arg)
{
    const executor *ex = arg;
    return !mc_ctx_assignment_lost(ex->ctx);
}

static void *executor_create(mc_ctx *ctx, const void *arg, char *err, size_t errlen)
{
    const mc_config *cfg = mc_ctx_config(ctx);
    executor *ex = calloc(1, sizeof *ex);
    if (!ex) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ex->ctx = ctx;
    ex->cfg = cfg;
    pthread_mutex_init(&ex->ownership_mu, NULL);
    atomic_init(&ex->ownership_version, 1); /* the caller starts from 0: it copies once */
    mc_topic_name(cfg, "ready", ex->ready_topic, sizeof ex->ready_topic);
    ex->results = mc_ctx_output(ctx, "results");
    ex->retry = mc_ctx_output(ctx, "retry");
    ex->tasks = mc_ctx_output(ctx, "tasks");
    ex->commands = mc_ctx_output(ctx, "job-commands");
    if (!ex->results || !ex->retry || !ex->tasks || !ex->commands) {
        snprintf(err, errlen, "cannot create output topic handles");
        executor_destroy(ex);
        return NULL;
    }
    if (!(ex->targets =
              mc_kafka_targets_parse(cfg->kafka_targets, cfg->topic_prefix, err, errlen))) {
        executor_destroy(ex);
        return NULL;
    }
    register_metrics(ex, mc_ctx_metrics(ctx));
    const mc_executor_caller *with = arg;
    mc_caller_factory make = with ? with->make : mc_http_caller_new;
    mc_call_gate gate = {.may_start = owns_assignment, .ownership = ownership_of, .arg = ex};
    if (!with) { /* the HTTP caller calls groups, within the limits */
        if (!(ex->endpoints = mc_endpoint_table_open(cfg, mc_ctx_metrics(ctx), err, errlen))) {
            executor_destroy(ex);
            return NULL;
        }
        gate.endpoints = endpoints_of;
    }
    ex->caller = make(cfg, mc_ctx_metrics(ctx), &gate, with ? with->arg : NULL, err, errlen);
    if (!ex->caller ||
        mc_ctx_watch_fd(ctx, ex->caller->ops->wake_fd(ex->caller), POLLIN, on_done, ex) != 0) {
        if (ex->caller)
            snprintf(err, errlen, "cannot watch the executor's caller");
        executor_destroy(ex);
        return NULL;
    }
    return ex;
}

/* What the executor parses at its start: the SSRF allow-list, the signing
 * secrets and the Kafka targets' allow-list. */
static int executor_check_config(const mc_config *cfg, char *err, size_t errlen)
{
    mc_kafka_targets *t =
        mc_kafka_targets_parse(cfg->kafka_targets, cfg->topic_prefix, err, errlen);
    if (!t)
        return -1;
    mc_kafka_targets_free(t);
    mc_ssrf *g = mc_ssrf_new(cfg->executor_allow_cidrs, err, errlen);
    if (!g)
        return -1;
    mc_ssrf_free(g);
    mc_app_secrets *s = mc_app_secrets_parse(cfg->app_secrets, err, errlen);
    if (!s)
        return -1;
    mc_app_secrets_free(s);
    return 0;
}

const mc_processor mc_executor_processor = {
    .name = "executor",
    .input_topics = executor_inputs,
    .check_config = executor_check_config,
    .create = executor_create,
    .process = executor_process,
    .punctuate = executor_punctuate,
    .refused = executor_refused,
    .on_assign = executor_on_assign,
    .revoke_drained = executor_revoke_drained,
    .on_revoke = executor_on_revoke,
    .prepare_commit = executor_prepare_commit,
    .drained = executor_drained,
    .destroy = executor_destroy,
};
