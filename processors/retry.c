/* The retry processor: decides what happens after a failed call.
 *
 * Input is `retry` (Attempts from the executor). For each failed attempt it
 * picks the policy (the task's own, or the configured defaults) and, in one
 * transaction with its offsets:
 *   - again: the next attempt goes to `wheel` as a Submit with attempt + 1
 *     and a due time after an exponential backoff with full jitter (or the
 *     server's Retry-After, when longer), with the version of the client's
 *     command it came from (the Attempt's mooncake-version header): so
 *     whatever the client wrote for the key after that command - a cancel,
 *     a re-submit, at any time before the next attempt is called - is newer
 *     and wins, in the wheel or, for a far one, in the store;
 *   - never (a permanent failure such as a 404, or the last attempt): a
 *     DeadLetter to `dead` with the reason;
 *   - either way, the Result of the failed attempt to `results`, whose
 *     outcome says which (FAILED_WILL_RETRY, FAILED_PERMANENTLY, EXHAUSTED).
 * Everything is written to the input's partition number, the key's partition
 * everywhere. The wheel's position markers, which the executor sends on
 * once every call fired before them has ended, go back to `wheel` from here,
 * behind the next attempts of those calls (see wheel.c). An Attempt without
 * the version header (written before versions were carried) takes the old
 * path: a new command to `tasks`. */
#include "retry.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "broadcast.h"
#include "chains.h"
#include "codec.h"
#include "retry_policy.h"
#include "wheel_topic.h"

typedef struct retry {
    mc_output *tasks, *results, *wheel;
    int64_t horizon_ms;
    int record_version; /* of the Results written (--record-version) */
    mc_backoff defaults;
    mc_arena *arena;
    mc_buf buf;
    uint64_t rng; /* xorshift64* state: jitter needs spread, not secrecy */
    mc_counter *scheduled, *exhausted, *permanent;
    mc_histogram *delay;
} retry;

static const char *const retry_inputs[] = {"retry", NULL};

static uint64_t next_random(retry *r)
{
    r->rng ^= r->rng >> 12;
    r->rng ^= r->rng << 25;
    r->rng ^= r->rng >> 27;
    return r->rng * UINT64_C(2685821657736338717);
}

static int forward(retry *r, mc_ctx *ctx, mc_output *out, const mc_record *m, const char *key)
{
    return mc_ctx_forward(ctx, out, m->partition, key, strlen(key), r->buf.data, r->buf.len);
}

/* The next attempt: to `wheel` with its command's version, or (an Attempt
 * from before versions were carried) to `tasks` as a new command. */
static int schedule(retry *r, mc_ctx *ctx, const mc_record *m, const char *key, const mc_task *next)
{
    int64_t version;
    mc_buf_reset(&r->buf);
    if (!mc_record_header_version(m, MC_VERSION_HEADER, &version)) {
        mc_command c = {.kind = MC_CMD_SUBMIT, .submit = *next};
        if (mc_encode_command(&c, &r->buf) != 0)
            return -1;
        return forward(r, ctx, r->tasks, m, key);
    }
    mc_wheel_entry e = {.version = version, .command = {.kind = MC_CMD_SUBMIT, .submit = *next}};
    if (mc_encode_wheel_entry(&e, &r->buf) != 0)
        return -1;
    if (next->due_at <= mc_ctx_now_ms(ctx) + r->horizon_ms) {
        /* It can be stale only against records from the position its call
         * was fired at: the wheel judges it as it judges a hand-off. */
        int64_t fired;
        if (!mc_record_header_int(m, MC_FIRED_POSITION_HEADER, &fired))
            return forward(r, ctx, r->wheel, m, key);
        char pos[24];
        int n = snprintf(pos, sizeof pos, "%" PRId64, fired);
        return mc_ctx_forward_header(ctx, r->wheel, m->partition, key, strlen(key), r->buf.data,
                                     r->buf.len, MC_STORE_POSITION_HEADER, pos, (size_t)n);
    }
    return mc_ctx_forward_header(ctx, r->wheel, m->partition, key, strlen(key), r->buf.data,
                                 r->buf.len, MC_ROUTE_HEADER, MC_ROUTE_STORE,
                                 sizeof MC_ROUTE_STORE - 1);
}

/* The wheel's position marker, sent on by the executor: back to the wheel,
 * behind the next attempts written before it. */
static int forward_marker(mc_ctx *ctx, retry *r, const mc_record *m, int64_t position)
{
    return mc_forward_position_marker(ctx, r->wheel, m->partition, MC_RESOLVED_POSITION_HEADER,
                                      position);
}

static int retry_process(void *self, const mc_record *m, mc_ctx *ctx)
{
    retry *r = self;
    int64_t position;
    if (!m->key && !m->value && mc_record_header_int(m, MC_WHEEL_POSITION_HEADER, &position))
        return forward_marker(ctx, r, m, position);
    mc_arena_reset(r->arena);
    mc_attempt a;
    char detail[256] = "";
    mc_codec_err err =
        m->value ? mc_decode_attempt(m->value, m->value_len, r->arena, &a, detail, sizeof detail)
                 : MC_CODEC_TRUNCATED;
    if (err) {
        char reason[400];
        snprintf(reason, sizeof reason, "retry record is not an Attempt: %s%s%s",
                 mc_codec_strerror(err), detail[0] ? ": " : "", detail);
        return mc_ctx_dead_letter(ctx, m, reason, NULL) == 0 ? 0 : -1;
    }
    const mc_task *t = &a.task;
    char key[1024];
    mc_task_key(t->app_id, t->task_id, key, sizeof key);

    mc_backoff policy = r->defaults;
    char why_default[300] = "";
    if (t->has_retry) {
        mc_backoff own = {t->retry.max_attempts, t->retry.initial_backoff_ms, t->retry.multiplier,
                          t->retry.max_backoff_ms};
        char perr[160];
        if (mc_backoff_validate(&own, perr, sizeof perr) == 0)
            policy = own;
        else
            snprintf(why_default, sizeof why_default,
                     " (the task's retry policy is unusable: %s;"
                     " the defaults apply)",
                     perr);
    }
    int failed = t->attempt > 0 ? t->attempt : 1;
    int64_t now = mc_ctx_now_ms(ctx);
    int64_t version;
    if (!mc_record_header_version(m, MC_VERSION_HEADER, &version))
        version = -1;
    mc_result res = {.app_id = t->app_id,
                     .task_id = t->task_id,
                     .attempt = failed,
                     .due_at = t->due_at,
                     .started_at = a.started_at,
                     .finished_at = a.finished_at,
                     .http_status = a.http_status,
                     .version = version,
                     .response_headers = a.response_headers,
                     .n_response_headers = a.n_response_headers,
                     .response_body = a.response_snippet,
                     .response_body_len = a.response_snippet_len,
                     .response_size = a.response_size,
                     .write_version = r->record_version,
                     .member = a.member};
    char error[1024], reason[1024];
    bool dead = true;
    if (a.permanent) {
        res.outcome = MC_OUTCOME_FAILED_PERMANENTLY;
        snprintf(reason, sizeof reason, "permanent failure on attempt %d: %s", failed, a.error);
        mc_counter_add(r->permanent, 1);
    } else if (mc_backoff_exhausted(&policy, failed)) {
        res.outcome = MC_OUTCOME_EXHAUSTED;
        snprintf(reason, sizeof reason, "gave up after %d attempts%s; the last failed: %s", failed,
                 why_default, a.error);
        mc_counter_add(r->exhausted, 1);
    } else {
        dead = false;
        int64_t delay = mc_backoff_delay_ms(&policy, failed, a.retry_after_ms, next_random(r));
        int64_t from = a.finished_at > now ? a.finished_at : now;
        mc_task next = *t;
        next.attempt = failed + 1;
        next.due_at = from + delay;
        if (schedule(r, ctx, m, key, &next) != 0)
            return -1;
        res.outcome = MC_OUTCOME_FAILED_WILL_RETRY;
        snprintf(error, sizeof error, "%s; attempt %d in %" PRId64 " ms%s", a.error, failed + 1,
                 delay, why_default);
        mc_counter_add(r->scheduled, 1);
        char attempt[16], in_ms[24];
        snprintf(attempt, sizeof attempt, "%d", failed + 1);
        snprintf(in_ms, sizeof in_ms, "%" PRId64, delay);
        mc_log(mc_ctx_logger(ctx), MC_LOG_INFO, "next attempt scheduled", "key", key, "attempt",
               attempt, "in_ms", in_ms, (const char *)NULL);
        mc_histogram_observe(r->delay, (double)delay / 1000.0);
    }
    res.error = dead ? reason : error;
    mc_buf_reset(&r->buf);
    /* A chain's link or a broadcast's shard says so, for the jobs role to relay its final
     * Result. */
    mc_header marks[4];
    size_t n_marks = mc_chain_result_headers(t, marks);
    n_marks += mc_broadcast_result_headers(t, marks + n_marks);
    mc_produce out = {.out = r->results,
                      .partition = m->partition,
                      .key = key,
                      .key_len = strlen(key),
                      .headers = marks,
                      .n_headers = n_marks};
    if (mc_encode_result(&res, &r->buf) != 0)
        return -1;
    out.value = r->buf.data;
    out.value_len = r->buf.len;
    if (mc_ctx_produce(ctx, &out) != 0)
        return -1;
    if (dead && mc_ctx_dead_letter(ctx, m, reason, t) != 0)
        return -1;
    return 0;
}

static void retry_destroy(void *self)
{
    retry *r = self;
    if (!r)
        return;
    mc_arena_free(r->arena);
    mc_buf_free(&r->buf);
    free(r);
}

/* The retry policy of tasks that have none, from the --retry-* flags. */
static int retry_defaults(const mc_config *cfg, mc_backoff *out, char *err, size_t errlen)
{
    *out = (mc_backoff){cfg->retry_max_attempts, cfg->retry_initial_backoff_ms,
                        cfg->retry_multiplier, cfg->retry_max_backoff_ms};
    char why[200];
    if (mc_backoff_validate(out, why, sizeof why) == 0)
        return 0;
    snprintf(err, errlen, "retry defaults: %s (set by --retry-* / MOONCAKE_RETRY_*)", why);
    return -1;
}

static int retry_check_config(const mc_config *cfg, char *err, size_t errlen)
{
    mc_backoff b;
    return retry_defaults(cfg, &b, err, errlen);
}

static void *retry_create(mc_ctx *ctx, const void *arg, char *err, size_t errlen)
{
    (void)arg;
    const mc_config *cfg = mc_ctx_config(ctx);
    retry *r = calloc(1, sizeof *r);
    if (!r || !(r->arena = mc_arena_new())) {
        free(r);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (retry_defaults(cfg, &r->defaults, err, errlen) != 0) {
        retry_destroy(r);
        return NULL;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    r->rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40) ^
             (uint64_t)(uintptr_t)r;
    if (!r->rng)
        r->rng = 1;
    r->horizon_ms = cfg->horizon_ms;
    r->record_version = cfg->record_version;
    r->tasks = mc_ctx_output(ctx, "tasks");
    r->results = mc_ctx_output(ctx, "results");
    r->wheel = mc_ctx_output(ctx, "wheel");
    if (!r->tasks || !r->results || !r->wheel) {
        snprintf(err, errlen, "cannot create output topic handles");
        retry_destroy(r);
        return NULL;
    }
    mc_metrics *m = mc_ctx_metrics(ctx);
    r->scheduled = mc_metrics_counter(m, "mooncake_retry_scheduled_total",
                                      "Failed calls scheduled again", NULL);
    r->exhausted = mc_metrics_counter(m, "mooncake_retry_dead_total", "Tasks dead-lettered, by why",
                                      "reason=\"exhausted\"");
    r->permanent = mc_metrics_counter(m, "mooncake_retry_dead_total", "Tasks dead-lettered, by why",
                                      "reason=\"permanent\"");
    static const double bounds[] = {0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600};
    r->delay = mc_metrics_histogram(m, "mooncake_retry_delay_seconds",
                                    "Backoff before the next attempt", NULL, bounds, 11);
    return r;
}

const mc_processor mc_retry_processor = {
    .name = "retry",
    .consumer_defaults = mc_unhurried_consumer,
    .input_topics = retry_inputs,
    .check_config = retry_check_config,
    .create = retry_create,
    .process = retry_process,
    .destroy = retry_destroy,
};
