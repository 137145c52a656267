/* Reading the headers of `wheel` records (see wheel_topic.h). */
#include "wheel_topic.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void mc_wheel_record_classify(const mc_record *r, mc_wheel_class *out)
{
    *out = (mc_wheel_class){.kind = MC_WHEEL_ENTRY};
    bool entry = r->key && r->value;
    if (!r->key && !r->value && mc_record_header_int(r, MC_LAYOUT_HEADER, &out->position)) {
        out->kind = MC_WHEEL_LAYOUT;
        return;
    }
    if (!r->value && mc_record_header_int(r, MC_STORE_POSITION_HEADER, &out->position)) {
        out->kind = MC_WHEEL_STORE_POSITION;
        return;
    }
    if (!r->value && mc_record_header_int(r, MC_RESOLVED_POSITION_HEADER, &out->position)) {
        out->kind = MC_WHEEL_RESOLVED_POSITION;
        return;
    }
    const void *v;
    size_t n;
    out->far = mc_record_header(r, MC_ROUTE_HEADER, &v, &n) && n == sizeof MC_ROUTE_STORE - 1 &&
               memcmp(v, MC_ROUTE_STORE, n) == 0;
    out->fired_by_router = entry && mc_record_header(r, MC_FIRED_BY_ROUTER_HEADER, &v, &n);
    out->handoff =
        entry && mc_record_header_int(r, MC_STORE_POSITION_HEADER, &out->handoff_position);
    out->has_attempt = mc_record_header(r, MC_ATTEMPT_HEADER, &v, &n);
    if (out->has_attempt && !mc_record_header_int(r, MC_ATTEMPT_HEADER, &out->attempt))
        out->attempt = 0;
}

mc_codec_err mc_wheel_record_peek(const mc_record *r, mc_wheel_peeked *out)
{
    size_t body;
    mc_codec_err err = mc_peek_versioned(MC_SCHEMA_WHEEL_ENTRY, r->value, r->value_len,
                                         &out->version.v, &out->kind, &body, &out->task_suffix);
    if (err != MC_CODEC_OK)
        return err;
    out->task_offset = body;
    out->due_at = 0;
    if (out->kind == MC_CMD_SUBMIT)
        return mc_peek_task((const uint8_t *)r->value + body, r->value_len - body, &out->due_at,
                            &out->version.attempt);
    int64_t a = 0;
    out->version.attempt =
        mc_record_header_int(r, MC_ATTEMPT_HEADER, &a) && a <= INT32_MAX ? (int32_t)a : 0;
    return MC_CODEC_OK;
}

int mc_forward_position_marker(mc_ctx *ctx, mc_output *out, int32_t partition, const char *header,
                               int64_t position)
{
    char pos[24];
    int n = snprintf(pos, sizeof pos, "%" PRId64, position);
    return mc_ctx_forward_header(ctx, out, partition, NULL, 0, NULL, 0, header, pos, (size_t)n);
}
