/* libFuzzer harness for mc_decode_command, the decoder that sees raw client
 * bytes. Beyond "no crash, no sanitizer report" it checks that every error
 * explains itself, that memory stays proportional to the input, and that a
 * decoded command re-encodes to bytes that decode to the same encoding. */
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
    static const int32_t ids[] = {1, 42};
    const mc_codec_options opts = {.confluent_command_ids = ids, .n_confluent_command_ids = 2};
    mc_arena *arena = mc_arena_new();
    if (!arena)
        return 0;
    mc_command c;
    char detail[256];
    mc_codec_err e = mc_decode_command(&opts, data, size, arena, &c, detail, sizeof detail);
    fuzz_check_decode(arena, size, e, detail);
    if (e == MC_CODEC_OK)
        fuzz_check_command_reencodes(arena, &c);
    mc_arena_free(arena);
    return 0;
}
