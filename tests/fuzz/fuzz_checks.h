/* Checks every decoder harness makes after a decode, besides "no crash":
 * memory proportional to the input, and no error without a detail an
 * operator could act on. Aborting makes libFuzzer keep the input. */
#ifndef MOONCAKE_FUZZ_CHECKS_H
#define MOONCAKE_FUZZ_CHECKS_H

#include <stdio.h>
#include <stdlib.h>

#include "codec.h"
#include "codec_internal.h"

static void fuzz_check_decode(mc_arena *arena, size_t size, mc_codec_err e, const char *detail)
{
    /* Strings cost at most their length + 1, map entries 16 bytes per two
     * input bytes; blocks double, so twice that plus the first block. */
    if (mc_arena_footprint(arena) > 4096 + 40 * size) {
        fprintf(stderr, "decode of %zu bytes holds %zu bytes\n", size, mc_arena_footprint(arena));
        abort();
    }
    if (e != MC_CODEC_OK && detail[0] == '\0') {
        fprintf(stderr, "error %s without detail\n", mc_codec_strerror(e));
        abort();
    }
}

#endif
