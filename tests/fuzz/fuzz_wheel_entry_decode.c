/* libFuzzer harness for mc_decode_wheel_entry: the wheel restores its state
 * by replaying its topic, so a corrupt record there must fail cleanly too.
 * Same checks as fuzz_command_decode.c: no crash, errors explained, memory
 * proportional to input, re-encoding stable. The store and the wheel read a
 * record's version (and a task's due time and attempt) with mc_peek_* before
 * (or instead of) decoding it, and the store re-frames a Submit's task bytes without decoding them
 * again, so both shortcuts are checked against the full decoder here. */
#include "codec.h"
#include "codec_internal.h"
#include "fuzz_checks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One fuzz input: decoded, checked, and freed; the harness keeps no state. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mc_arena *arena = mc_arena_new();
    if (!arena)
        return 0;
    mc_wheel_entry w;
    char detail[256];
    mc_codec_err e = mc_decode_wheel_entry(data, size, arena, &w, detail, sizeof detail);
    fuzz_check_decode(arena, size, e, detail);
    int64_t version;
    size_t body, suffix = 0;
    mc_command_kind kind;
    mc_codec_err pe =
        mc_peek_versioned(MC_SCHEMA_WHEEL_ENTRY, data, size, &version, &kind, &body, &suffix);
    if (e == MC_CODEC_OK &&
        (pe != MC_CODEC_OK || version != w.version || kind != w.command.kind || body >= size)) {
        fprintf(stderr, "peek disagrees with the decoder (%d)\n", (int)pe);
        abort();
    }
    if (pe == MC_CODEC_OK && kind == MC_CMD_SUBMIT) {
        /* The task peek never reads past the record, and agrees with the
         * decoder whenever the decoder accepts it. */
        int64_t due;
        int32_t attempt;
        mc_codec_err te = mc_peek_task(data + body, size - body, &due, &attempt);
        if (e == MC_CODEC_OK && (te != MC_CODEC_OK || due != w.command.submit.due_at ||
                                 attempt != w.command.submit.attempt)) {
            fprintf(stderr, "task peek disagrees with the decoder (%d)\n", (int)te);
            abort();
        }
    }
    if (e == MC_CODEC_OK && w.command.kind == MC_CMD_SUBMIT) {
        /* StoredTask framed from the task bytes (made current: an earlier
         * WheelEntry holds an earlier Task) decodes to the same task. */
        mc_buf st = {0};
        mc_stored_task s;
        if (mc_encode_versioned_raw(MC_SCHEMA_STORED_TASK, version, data + body, size - body,
                                    mc_task_v1_suffix, suffix, &st) != 0 ||
            mc_decode_stored_task(st.data, st.len, arena, &s, detail, sizeof detail) !=
                MC_CODEC_OK ||
            s.version != w.version || s.task.due_at != w.command.submit.due_at ||
            strcmp(s.task.task_id, w.command.submit.task_id) != 0) {
            fprintf(stderr, "re-framed StoredTask differs: %s\n", detail);
            abort();
        }
        mc_buf_free(&st);
    }
    if (e == MC_CODEC_OK) {
        mc_buf b1 = {0}, b2 = {0};
        mc_wheel_entry w2;
        if (mc_encode_wheel_entry(&w, &b1) != 0 ||
            mc_decode_wheel_entry(b1.data, b1.len, arena, &w2, detail, sizeof detail) !=
                MC_CODEC_OK ||
            mc_encode_wheel_entry(&w2, &b2) != 0 || b1.len != b2.len ||
            memcmp(b1.data, b2.data, b1.len) != 0) {
            fprintf(stderr, "re-encoding is not stable: %s\n", detail);
            abort();
        }
        mc_buf_free(&b1);
        mc_buf_free(&b2);
    }
    mc_arena_free(arena);
    return 0;
}
