/* libFuzzer harness for mc_decode_job_state: the jobs processor restores its
 * state by replaying its compacted topic, so a corrupt record there must fail
 * cleanly too. Same checks as fuzz_command_decode.c (no crash, errors
 * explained, memory proportional to input, re-encoding stable), and job_raw
 * is the job: inside the input, decoding alone to the same job, and written
 * back verbatim by the encoder gives the same state as encoding the job;
 * decoding only the head agrees with decoding the whole. */
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
    mc_job_state s;
    char detail[256];
    mc_codec_err e = mc_decode_job_state(data, size, arena, &s, detail, sizeof detail);
    fuzz_check_decode(arena, size, e, detail);
    /* The head alone (a restore's fast path) fails only where the whole does,
     * and finds the job where the whole did. */
    mc_job_state head;
    mc_codec_err he = mc_decode_job_state_head(data, size, arena, &head, detail, sizeof detail);
    if (e == MC_CODEC_OK &&
        (he != MC_CODEC_OK || head.job_raw != s.job_raw || head.job_raw_len != s.job_raw_len ||
         head.version != s.version || head.n_running != s.n_running || head.next_at != s.next_at)) {
        fprintf(stderr, "the head disagrees with the whole record\n");
        abort();
    }
    if (e == MC_CODEC_OK) {
        mc_buf job = {0}, b1 = {0}, b2 = {0}, b3 = {0};
        fuzz_check_job_raw(arena, data, size, &s.job, s.job_raw, s.job_raw_len, &job);
        /* b1: the job spliced as it came; b2: the job encoded. */
        mc_job_state s2;
        if (mc_encode_job_state(&s, &b1) != 0 ||
            mc_decode_job_state(b1.data, b1.len, arena, &s2, detail, sizeof detail) !=
                MC_CODEC_OK) {
            fprintf(stderr, "spliced re-encoding does not decode: %s\n", detail);
            abort();
        }
        s.job_raw = NULL;
        s2.job_raw = NULL;
        if (mc_encode_job_state(&s, &b2) != 0 || mc_encode_job_state(&s2, &b3) != 0 ||
            b2.len != b3.len || memcmp(b2.data, b3.data, b2.len) != 0) {
            fprintf(stderr, "re-encoding is not stable\n");
            abort();
        }
        mc_buf_free(&job);
        mc_buf_free(&b1);
        mc_buf_free(&b2);
        mc_buf_free(&b3);
    }
    mc_arena_free(arena);
    return 0;
}
