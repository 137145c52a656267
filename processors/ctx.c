/* The Processor API's entry points (processor.h): each dispatches to the
 * implementation behind the ctx (the Kafka runtime, or the test driver),
 * except what is the same for both, such as building a dead letter. */
#include "ctx_impl.h"

#include <stdio.h>

/* Raw values above this are not copied into a dead letter, so the dead
 * letter itself always fits in a Kafka message. */
#define MAX_DEAD_RAW (512 * 1024)

const char *const mc_unhurried_consumer[] = {"fetch.wait.max.ms", "250", NULL};

mc_output *mc_ctx_output(mc_ctx *ctx, const char *topic_suffix)
{
    char name[256];
    mc_topic_name(mc_ctx_config(ctx), topic_suffix, name, sizeof name);
    return ctx->ops->output(ctx, name);
}

mc_output *mc_ctx_output_topic(mc_ctx *ctx, const char *topic)
{
    return ctx->ops->output(ctx, topic);
}

int mc_ctx_produce(mc_ctx *ctx, const mc_produce *p)
{
    return ctx->ops->produce(ctx, p);
}

int mc_ctx_forward(mc_ctx *ctx, mc_output *out, int32_t partition, const void *key, size_t keylen,
                   const void *value, size_t valuelen)
{
    mc_produce p = {.out = out,
                    .partition = partition,
                    .key = key,
                    .key_len = keylen,
                    .value = value,
                    .value_len = valuelen};
    return ctx->ops->produce(ctx, &p);
}

int mc_ctx_forward_header(mc_ctx *ctx, mc_output *out, int32_t partition, const void *key,
                          size_t keylen, const void *value, size_t valuelen, const char *hname,
                          const void *hvalue, size_t hlen)
{
    mc_header h = {hname, hvalue, hlen};
    mc_produce p = {.out = out,
                    .partition = partition,
                    .key = key,
                    .key_len = keylen,
                    .value = value,
                    .value_len = valuelen,
                    .headers = &h,
                    .n_headers = 1};
    return ctx->ops->produce(ctx, &p);
}

int mc_ctx_dead_letter(mc_ctx *ctx, const mc_record *r, const char *reason, const mc_task *task)
{
    if (!ctx->dead)
        ctx->dead = mc_ctx_output(ctx, "dead");
    if (!ctx->dead)
        return -1;
    bool keep_raw = r->value != NULL && r->value_len <= MAX_DEAD_RAW;
    char longer[640];
    if (r->value && !keep_raw) {
        /* Neither the raw value nor a task that large would fit. */
        snprintf(longer, sizeof longer, "%s (raw value of %zu bytes not kept)", reason,
                 r->value_len);
        reason = longer;
        task = NULL;
    }
    mc_dead_letter d = {
        .reason = reason,
        .source_topic = r->topic,
        .source_partition = r->partition,
        .source_offset = r->offset,
        .raw = r->value,
        .raw_len = r->value_len,
        .has_raw = keep_raw,
        .has_task = task != NULL,
        .failed_at = ctx->ops->now_ms(ctx),
    };
    if (task)
        d.task = *task;
    mc_buf_reset(&ctx->dead_buf);
    if (mc_encode_dead_letter(&d, &ctx->dead_buf) != 0)
        return -1;
    char key[64];
    snprintf(key, sizeof key, "%.*s", r->key ? (int)(r->key_len < 63 ? r->key_len : 63) : 0,
             r->key ? (const char *)r->key : "");
    mc_log(ctx->logger, MC_LOG_WARN, "dead letter", "key", key, "reason", reason,
           (const char *)NULL);
    return mc_ctx_forward(ctx, ctx->dead, r->partition, r->key, r->key_len, ctx->dead_buf.data,
                          ctx->dead_buf.len);
}

void mc_ctx_wakeup_at(mc_ctx *ctx, int64_t at_ms)
{
    ctx->ops->wakeup_at(ctx, at_ms);
}

int64_t mc_ctx_now_ms(const mc_ctx *ctx)
{
    return ctx->ops->now_ms(ctx);
}

int mc_ctx_set_commit_metadata(mc_ctx *ctx, const char *topic, int32_t partition,
                               const char *metadata)
{
    return ctx->ops->set_commit(ctx, topic, partition, false, -1, metadata);
}

int mc_ctx_set_commit_offset(mc_ctx *ctx, const char *topic, int32_t partition, int64_t offset,
                             const char *metadata)
{
    if (offset < 0)
        return -1;
    return ctx->ops->set_commit(ctx, topic, partition, true, offset, metadata);
}

void mc_ctx_request_commit(mc_ctx *ctx)
{
    ctx->ops->request_commit(ctx, false);
}

void mc_ctx_request_commit_now(mc_ctx *ctx)
{
    ctx->ops->request_commit(ctx, true);
}

void mc_ctx_set_ready(mc_ctx *ctx, bool ready)
{
    ctx->ops->set_ready(ctx, ready);
}

void mc_ctx_alive(mc_ctx *ctx)
{
    ctx->ops->alive(ctx);
}

bool mc_ctx_assignment_lost(const mc_ctx *ctx)
{
    return ctx->ops->assignment_lost(ctx);
}

int mc_ctx_pause(mc_ctx *ctx, const char *topic, int32_t partition, bool pause)
{
    return ctx->ops->pause(ctx, topic, partition, pause);
}

int mc_ctx_watch_fd(mc_ctx *ctx, int fd, short events, mc_fd_callback cb, void *arg)
{
    return ctx->ops->watch_fd(ctx, fd, events, cb, arg);
}

int mc_ctx_restore(mc_ctx *ctx, const char *topic_suffix, const int32_t *partitions, size_t n,
                   mc_restore_fn fn, void *arg, mc_restore_stats *stats)
{
    return ctx->ops->restore(ctx, topic_suffix, partitions, n, fn, arg, stats);
}

int mc_ctx_partition_count(mc_ctx *ctx, const char *topic_suffix, char *err, size_t errlen)
{
    char name[256];
    mc_topic_name(mc_ctx_config(ctx), topic_suffix, name, sizeof name);
    return ctx->ops->partition_count(ctx, name, err, errlen);
}

int mc_ctx_topic_partition_count(mc_ctx *ctx, const char *topic, char *err, size_t errlen)
{
    return ctx->ops->partition_count(ctx, topic, err, errlen);
}

int mc_ctx_stable_ends(mc_ctx *ctx, const char *const *topic_suffixes, size_t n,
                       const int32_t *partitions, size_t n_partitions, int64_t *ends,
                       int timeout_ms, char *err, size_t errlen)
{
    return ctx->ops->stable_ends(ctx, topic_suffixes, n, partitions, n_partitions, ends, timeout_ms,
                                 err, errlen);
}

int mc_ctx_high_watermarks(mc_ctx *ctx, const char *topic_suffix, const int32_t *partitions,
                           size_t n, int64_t *ends, int timeout_ms, char *err, size_t errlen)
{
    return ctx->ops->high_watermarks(ctx, topic_suffix, partitions, n, ends, timeout_ms, err,
                                     errlen);
}

int64_t mc_ctx_position(mc_ctx *ctx, const char *topic, int32_t partition)
{
    return ctx->ops->position(ctx, topic, partition);
}

int64_t mc_ctx_end_offset(mc_ctx *ctx, const char *topic_suffix, int32_t partition, char *err,
                          size_t errlen)
{
    return ctx->ops->end_offset(ctx, topic_suffix, partition, err, errlen);
}

int mc_ctx_end_offsets(mc_ctx *ctx, const char *topic_suffix, const int32_t *partitions, size_t n,
                       int64_t *ends, int timeout_ms, char *err, size_t errlen)
{
    return ctx->ops->end_offsets(ctx, topic_suffix, partitions, n, ends, timeout_ms, err, errlen);
}

const mc_config *mc_ctx_config(const mc_ctx *ctx)
{
    return ctx->cfg;
}

const mc_logger *mc_ctx_logger(const mc_ctx *ctx)
{
    return ctx->logger;
}

mc_metrics *mc_ctx_metrics(const mc_ctx *ctx)
{
    return ctx->metrics;
}

const char *mc_ctx_processor_name(const mc_ctx *ctx)
{
    return ctx->processor_name;
}

void mc_ctx_release(mc_ctx *ctx)
{
    mc_buf_free(&ctx->dead_buf);
}
