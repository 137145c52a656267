/* libFuzzer harness for mc_decode_job_command: the jobs processor's input
 * topic, which clients, the gateway and mooncakectl write, so its bytes are
 * as hostile as a Command's. Beyond "no crash, no sanitizer report" it checks
 * that every error explains itself, that memory stays proportional to the
 * input, that a decoded command re-encodes stably, and that a PUT's put_raw
 * is the job: it decodes alone to the same job, and spliced into a JobState
 * (what the processor does, without re-encoding) gives a valid JobState. */
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
    mc_job_command c;
    char detail[256];
    mc_codec_err e = mc_decode_job_command(NULL, data, size, arena, &c, detail, sizeof detail);
    fuzz_check_decode(arena, size, e, detail);
    if (e == MC_CODEC_OK) {
        mc_buf b1 = {0}, b2 = {0};
        mc_job_command c2;
        if (mc_encode_job_command(&c, &b1) != 0 ||
            mc_decode_job_command(NULL, b1.data, b1.len, arena, &c2, detail, sizeof detail) !=
                MC_CODEC_OK ||
            mc_encode_job_command(&c2, &b2) != 0 || b1.len != b2.len ||
            memcmp(b1.data, b2.data, b1.len) != 0) {
            fprintf(stderr, "re-encoding is not stable: %s\n", detail);
            abort();
        }
        mc_buf_free(&b1);
        mc_buf_free(&b2);
    }
    if (e == MC_CODEC_OK && c.kind == MC_JOBCMD_PUT) {
        mc_buf job = {0}, st1 = {0}, st2 = {0};
        fuzz_check_job_raw(arena, data, size, &c.put, c.put_raw, c.put_raw_len, &job);
        /* The splice decodes to the job, and re-encodes like a full encode. */
        mc_job_state s = {.version = 1, .next_at = -1, .job = c.put}, got;
        mc_job_state spliced = s;
        spliced.job_raw = c.put_raw;
        spliced.job_raw_len = c.put_raw_len;
        if (mc_encode_job_state(&spliced, &st1) != 0 ||
            mc_decode_job_state(st1.data, st1.len, arena, &got, detail, sizeof detail) !=
                MC_CODEC_OK ||
            got.job_raw_len != c.put_raw_len ||
            memcmp(got.job_raw, c.put_raw, c.put_raw_len) != 0) {
            fprintf(stderr, "spliced JobState does not decode: %s\n", detail);
            abort();
        }
        got.job_raw = NULL;
        mc_buf_reset(&st1);
        if (mc_encode_job_state(&got, &st1) != 0 || mc_encode_job_state(&s, &st2) != 0 ||
            st1.len != st2.len || memcmp(st1.data, st2.data, st1.len) != 0) {
            fprintf(stderr, "spliced JobState re-encodes differently\n");
            abort();
        }
        mc_buf_free(&job);
        mc_buf_free(&st1);
        mc_buf_free(&st2);
    }
    mc_arena_free(arena);
    return 0;
}
