/* What an implementation of the Processor API provides (processor.h): the
 * exactly-once Kafka runtime (runner.c) and the broker-free test driver
 * (tests/sim) each fill an mc_ctx_ops table and embed an mc_ctx, and
 * processor.h's functions dispatch to it. Processors never include this. */
#ifndef MOONCAKE_CTX_IMPL_H
#define MOONCAKE_CTX_IMPL_H

#include "codec.h"
#include "processor.h"

typedef struct mc_ctx_ops {
    mc_output *(*output)(mc_ctx *ctx, const char *topic); /* the full name */
    int (*produce)(mc_ctx *ctx, const mc_produce *p);
    void (*wakeup_at)(mc_ctx *ctx, int64_t at_ms);
    int64_t (*now_ms)(const mc_ctx *ctx);
    /* set_offset false: metadata only, the processed position as offset. */
    int (*set_commit)(mc_ctx *ctx, const char *topic, int32_t partition, bool set_offset,
                      int64_t offset, const char *metadata);
    void (*request_commit)(mc_ctx *ctx, bool now);
    void (*set_ready)(mc_ctx *ctx, bool ready);
    void (*alive)(mc_ctx *ctx);
    bool (*assignment_lost)(const mc_ctx *ctx); /* any thread */
    int (*pause)(mc_ctx *ctx, const char *topic, int32_t partition, bool pause);
    int (*watch_fd)(mc_ctx *ctx, int fd, short events, mc_fd_callback cb, void *arg);
    int (*restore)(mc_ctx *ctx, const char *topic_suffix, const int32_t *partitions, size_t n,
                   mc_restore_fn fn, void *arg, mc_restore_stats *stats);
    int (*partition_count)(mc_ctx *ctx, const char *topic, char *err, size_t errlen); /* full */
    int64_t (*end_offset)(mc_ctx *ctx, const char *topic_suffix, int32_t partition, char *err,
                          size_t errlen);
    int64_t (*position)(mc_ctx *ctx, const char *topic, int32_t partition);
    int (*high_watermarks)(mc_ctx *ctx, const char *topic_suffix, const int32_t *partitions,
                           size_t n, int64_t *ends, int timeout_ms, char *err, size_t errlen);
    int (*stable_ends)(mc_ctx *ctx, const char *const *topic_suffixes, size_t n,
                       const int32_t *partitions, size_t n_partitions, int64_t *ends,
                       int timeout_ms, char *err, size_t errlen);
    int (*end_offsets)(mc_ctx *ctx, const char *topic_suffix, const int32_t *partitions, size_t n,
                       int64_t *ends, int timeout_ms, char *err, size_t errlen);
} mc_ctx_ops;

struct mc_ctx {
    const mc_ctx_ops *ops;
    const mc_config *cfg;
    const mc_logger *logger;
    mc_metrics *metrics;
    const char *processor_name;
    /* For mc_ctx_dead_letter, which is the same for every implementation. */
    mc_output *dead;
    mc_buf dead_buf;
};

/* Releases what the ctx itself holds (not the implementation's state). */
void mc_ctx_release(mc_ctx *ctx);

#endif
