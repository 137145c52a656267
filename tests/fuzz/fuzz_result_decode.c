/* libFuzzer harness for mc_decode_result, read by the jobs role (the
 * outcome of a job's occurrences) and by mooncakectl from a topic anyone with
 * access can write, in either version of the schema. Beyond "no crash" it
 * checks that every error explains itself, that memory stays proportional to
 * the input, and that a decoded result re-encodes stably. */
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
    mc_result a;
    char detail[256];
    mc_codec_err e = mc_decode_result(data, size, arena, &a, detail, sizeof detail);
    fuzz_check_decode(arena, size, e, detail);
    if (e == MC_CODEC_OK) {
        mc_buf b1 = {0}, b2 = {0};
        mc_result a2;
        if (mc_encode_result(&a, &b1) != 0 ||
            mc_decode_result(b1.data, b1.len, arena, &a2, detail, sizeof detail) != MC_CODEC_OK ||
            mc_encode_result(&a2, &b2) != 0 || b1.len != b2.len ||
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
