/* libFuzzer harness for schema resolution: Commands written with another
 * version of our schema (tests/fuzz/command_versions.h: the previous one,
 * without Task's optional fields, and a next one with added fields and the
 * payload union reversed). The first input byte picks the framing - 0: the
 * previous version's single-object header, 1: the next version's, 2: the
 * Confluent id configured for the previous one - and the rest is the Avro
 * body, so the fuzzer works on bodies, not on guessing fingerprints. Checks:
 * no crash, errors that explain themselves, memory proportional to the
 * input, and a decoded command re-encodes (as our version) stably. */
#include "codec.h"
#include "codec_internal.h"
#include "command_versions.h"
#include "fuzz_checks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct versions {
    mc_writer_schema *previous, *next;
} versions;

/* Loaded once per process: parsing two schemas per input would drown the
 * fuzzer, and they never change. Never freed (the process ends). */
static const versions *load_versions(void)
{
    static versions v;
    if (!v.previous) {
        char err[512];
        char *p = command_schema_previous(), *n = command_schema_next();
        v.previous = mc_writer_schema_new(p, MC_SCHEMA_COMMAND, err, sizeof err);
        if (!v.previous ||
            !(v.next = mc_writer_schema_new(n, MC_SCHEMA_COMMAND, err, sizeof err))) {
            fprintf(stderr, "cannot load the Command versions: %s\n", err);
            abort();
        }
        free(p);
        free(n);
    }
    return &v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const versions *v = load_versions();
    const mc_codec_writer writers[] = {{v->previous, 7}, {v->next, -1}};
    const mc_codec_options opts = {.writers = writers, .n_writers = 2};
    uint8_t *rec = malloc(size + 10);
    if (!rec)
        return 0;
    size_t len;
    if (data[0] == 2) {
        memcpy(rec, "\x00\x00\x00\x00\x07", 5);
        len = 5;
    } else {
        uint64_t fp = mc_writer_schema_fingerprint(data[0] == 0 ? v->previous : v->next);
        rec[0] = 0xC3;
        rec[1] = 0x01;
        for (int i = 0; i < 8; i++)
            rec[2 + i] = (uint8_t)(fp >> (8 * i));
        len = 10;
    }
    memcpy(rec + len, data + 1, size - 1);
    len += size - 1;

    mc_arena *arena = mc_arena_new();
    if (!arena) {
        free(rec);
        return 0;
    }
    mc_command c;
    char detail[256];
    mc_codec_err e = mc_decode_command(&opts, rec, len, arena, &c, detail, sizeof detail);
    fuzz_check_decode(arena, len, e, detail);
    if (e == MC_CODEC_OK)
        fuzz_check_command_reencodes(arena, &c);
    mc_arena_free(arena);
    free(rec);
    return 0;
}
