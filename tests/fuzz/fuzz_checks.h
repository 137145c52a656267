/* Checks every decoder harness makes after a decode, besides "no crash":
 * memory proportional to the input, and no error without a detail an
 * operator could act on. Aborting makes libFuzzer keep the input. */
#ifndef MOONCAKE_FUZZ_CHECKS_H
#define MOONCAKE_FUZZ_CHECKS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "codec_internal.h"

static void fuzz_check_decode(mc_arena *arena, size_t size, mc_codec_err e, const char *detail)
{
    /* Strings cost at most their length + 1, map entries and JobState
     * running items 16 bytes per two input bytes; blocks double, so twice
     * that plus the first block. */
    if (mc_arena_footprint(arena) > 4096 + 40 * size) {
        fprintf(stderr, "decode of %zu bytes holds %zu bytes\n", size, mc_arena_footprint(arena));
        abort();
    }
    if (e != MC_CODEC_OK && detail[0] == '\0') {
        fprintf(stderr, "error %s without detail\n", mc_codec_strerror(e));
        abort();
    }
}

/* A decoded command must re-encode (as our version) to bytes that decode to
 * the same encoding: whatever the decoder accepts, the encoder can write. */
static inline void fuzz_check_command_reencodes(mc_arena *arena, const mc_command *c)
{
    mc_buf b1 = {0}, b2 = {0};
    mc_command c2;
    char detail[256] = "";
    if (mc_encode_command(c, &b1) != 0 ||
        mc_decode_command(NULL, b1.data, b1.len, arena, &c2, detail, sizeof detail) !=
            MC_CODEC_OK ||
        mc_encode_command(&c2, &b2) != 0 || b1.len != b2.len ||
        memcmp(b1.data, b2.data, b1.len) != 0) {
        fprintf(stderr, "re-encoding is not stable: %s\n", detail);
        abort();
    }
    mc_buf_free(&b1);
    mc_buf_free(&b2);
}

/* A job's bytes (a decoded put_raw or job_raw, which may be non-canonical)
 * must decode on their own to the job the full decode gave, and both must
 * re-encode (mc_encode_job) to the same bytes; *raw_job gets those bytes
 * for the caller's splice checks (caller frees). */
static inline void fuzz_check_job_raw(mc_arena *arena, const uint8_t *data, size_t size,
                                      const mc_job *job, const uint8_t *raw, size_t raw_len,
                                      mc_buf *canonical)
{
    mc_buf b2 = {0};
    mc_job j2;
    char detail[256] = "";
    if (!raw || raw < data || raw_len > size || (size_t)(raw - data) > size - raw_len) {
        fprintf(stderr, "job bytes are not inside the input\n");
        abort();
    }
    if (mc_decode_job(raw, raw_len, arena, &j2, detail, sizeof detail) != MC_CODEC_OK ||
        mc_encode_job(job, canonical) != 0 || mc_encode_job(&j2, &b2) != 0 ||
        canonical->len != b2.len || memcmp(canonical->data, b2.data, b2.len) != 0) {
        fprintf(stderr, "job bytes do not decode to the same job: %s\n", detail);
        abort();
    }
    mc_buf_free(&b2);
}

/* The whole harness of a decoder whose records re-encode on their own
 * (Attempt, Result): decode, the checks above, and a stable re-encoding
 * (decode, encode, decode, encode: the same bytes). */
#define FUZZ_DECODE_REENCODE_HARNESS(type, decode, encode)                                         \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);                                  \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)                                   \
    {                                                                                              \
        mc_arena *arena = mc_arena_new();                                                          \
        if (!arena)                                                                                \
            return 0;                                                                              \
        type a, a2;                                                                                \
        char detail[256];                                                                          \
        mc_codec_err e = decode(data, size, arena, &a, detail, sizeof detail);                     \
        fuzz_check_decode(arena, size, e, detail);                                                 \
        if (e == MC_CODEC_OK) {                                                                    \
            mc_buf b1 = {0}, b2 = {0};                                                             \
            if (encode(&a, &b1) != 0 ||                                                            \
                decode(b1.data, b1.len, arena, &a2, detail, sizeof detail) != MC_CODEC_OK ||       \
                encode(&a2, &b2) != 0 || b1.len != b2.len ||                                       \
                memcmp(b1.data, b2.data, b1.len) != 0) {                                           \
                fprintf(stderr, "re-encoding is not stable: %s\n", detail);                        \
                abort();                                                                           \
            }                                                                                      \
            mc_buf_free(&b1);                                                                      \
            mc_buf_free(&b2);                                                                      \
        }                                                                                          \
        mc_arena_free(arena);                                                                      \
        return 0;                                                                                  \
    }

#endif
