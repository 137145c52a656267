/* mooncake-schema: operator and test tool for the compiled-in Avro schemas.
 * Lists their fingerprints, computes the Parsing Canonical Form of any .avsc
 * file, and decodes or produces a tasks-topic Command, so the codec can be
 * checked against other Avro implementations (tests/unit/fingerprint_test.py). */
#include "codec.h"
#include "config.h"
#include "task_json.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fputs("usage: mooncake-schema COMMAND [ARGS]\n"
          "\n"
          "  list                      name, CRC-64-AVRO fingerprint and source file of\n"
          "                            every compiled-in schema (NAME@N: an earlier version)\n"
          "  show NAME                 print a compiled-in schema (e.g. Command)\n"
          "  canonical FILE            print the Parsing Canonical Form of an .avsc file,\n"
          "                            then \"fingerprint: <16 hex digits>\"\n"
          "  decode-command [--confluent-id N]... FILE\n"
          "                            decode a tasks-topic value (FILE or - for stdin)\n"
          "                            and print it as JSON; bodies that are not UTF-8\n"
          "                            are printed as body_base64\n"
          "  sample-command [--cancel] write an encoded sample Command to stdout\n"
          "  -h, --help                this text\n"
          "\n"
          "Fingerprints are printed as 64-bit numbers; on the wire (after C3 01)\n"
          "they are stored little-endian.\n",
          f);
}

/* Reads a whole file (or stdin for "-"); NULL after a line on stderr. */
static char *slurp(const char *path, size_t *len)
{
    char err[600];
    char *text = mc_config_read_file(path, "mooncake-schema", len, err, sizeof err);
    if (!text)
        fprintf(stderr, "%s\n", err);
    return text;
}

static int cmd_list(void)
{
    for (int i = 0; i < MC_SCHEMA_COUNT; i++) {
        const char *name = mc_schema_name((mc_schema_id)i);
        printf("%-22s %016" PRIx64 "  schemas/%s.avsc\n", name,
               mc_schema_fingerprint((mc_schema_id)i), strrchr(name, '.') + 1);
    }
    for (int i = 0; i < MC_SCHEMA_COUNT; i++) {
        const char *name = mc_schema_name((mc_schema_id)i);
        for (int v = 1; v < mc_schema_current_version((mc_schema_id)i); v++) {
            char versioned[64];
            snprintf(versioned, sizeof versioned, "%s@%d", name, v);
            printf("%-22s %016" PRIx64 "  schemas/previous/%s_v%d.avsc\n", versioned,
                   mc_schema_version_fingerprint((mc_schema_id)i, v), strrchr(name, '.') + 1, v);
        }
    }
    return 0;
}

static int cmd_show(const char *name)
{
    for (int i = 0; i < MC_SCHEMA_COUNT; i++) {
        const char *full = mc_schema_name((mc_schema_id)i);
        if (strcmp(name, full) == 0 || strcmp(name, strrchr(full, '.') + 1) == 0) {
            fputs(mc_schema_json((mc_schema_id)i), stdout);
            return 0;
        }
    }
    fprintf(stderr, "mooncake-schema: no schema named %s (see: mooncake-schema list)\n", name);
    return 1;
}

static int cmd_canonical(const char *path)
{
    size_t len;
    char *text = slurp(path, &len);
    if (!text)
        return 1;
    char err[512];
    char *pcf = mc_schema_canonical_form(text, err, sizeof err);
    free(text);
    if (!pcf) {
        fprintf(stderr, "mooncake-schema: %s: %s\n", path, err);
        return 1;
    }
    printf("%s\nfingerprint: %016" PRIx64 "\n", pcf, mc_crc64_avro(pcf, strlen(pcf)));
    free(pcf);
    return 0;
}

static int cmd_decode_command(int argc, char **argv)
{
    int32_t ids[64];
    size_t n_ids = 0;
    const char *path = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--confluent-id") == 0 && i + 1 < argc && n_ids < 64) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < INT32_MIN || v > INT32_MAX) {
                fprintf(stderr, "mooncake-schema: bad schema id %s\n", argv[i]);
                return 2;
            }
            ids[n_ids++] = (int32_t)v;
        } else if (!path) {
            path = argv[i];
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!path) {
        usage(stderr);
        return 2;
    }
    size_t len;
    char *data = slurp(path, &len);
    if (!data)
        return 1;
    mc_arena *arena = mc_arena_new();
    mc_codec_options opts = {.confluent_command_ids = ids, .n_confluent_command_ids = n_ids};
    mc_command c;
    char detail[256];
    mc_codec_err e = arena ? mc_decode_command(&opts, data, len, arena, &c, detail, sizeof detail)
                           : MC_CODEC_NOMEM;
    int rc = 0;
    if (e != MC_CODEC_OK) {
        fprintf(stderr, "mooncake-schema: %s: %s: %s\n", path, mc_codec_strerror(e), detail);
        rc = 1;
    } else {
        json_t *j =
            c.kind == MC_CMD_SUBMIT
                ? json_pack("{s:s, s:o}", "kind", "submit", "task", mc_task_to_json(&c.submit))
                : json_pack("{s:s, s:s, s:s, s:I}", "kind", "cancel", "app_id", c.cancel.app_id,
                            "task_id", c.cancel.task_id, "requested_at",
                            (json_int_t)c.cancel.requested_at);
        if (!j || json_dumpf(j, stdout, JSON_SORT_KEYS | JSON_ENSURE_ASCII) != 0) {
            fprintf(stderr, "mooncake-schema: cannot print the command\n");
            rc = 1;
        }
        putchar('\n');
        json_decref(j);
    }
    mc_arena_free(arena);
    free(data);
    return rc;
}

static int cmd_sample_command(int argc, char **argv)
{
    bool cancel = argc > 0 && strcmp(argv[0], "--cancel") == 0;
    static const mc_kv headers[] = {{"Content-Type", "application/json"},
                                    {"X-Trace", "caf\xc3\xa9"}};
    static const mc_kv metadata[] = {{"source", "sample"}};
    static const char body[] = "{\"order\":42,\"note\":\"\xe2\x98\x95\"}";
    mc_command c = {.kind = cancel ? MC_CMD_CANCEL : MC_CMD_SUBMIT};
    if (cancel) {
        c.cancel = (mc_cancel){"shop", "0193a5b2-0000-7000-8000-000000000001", 1767225000000};
    } else {
        c.submit = (mc_task){
            .app_id = "shop",
            .task_id = "0193a5b2-0000-7000-8000-000000000001",
            .due_at = 1767225600000,
            .callback = {.url = "https://example.com/orders/42/expire",
                         .method = "POST",
                         .headers = headers,
                         .n_headers = 2,
                         .body = (const uint8_t *)body,
                         .body_len = sizeof body - 1,
                         .timeout_ms = 30000},
            .has_retry = true,
            .retry = {5, 1000, 2.0, 3600000},
            .attempt = 1,
            .created_at = 1767225000000,
            .metadata = metadata,
            .n_metadata = 1,
        };
    }
    mc_buf out = {0};
    if (mc_encode_command(&c, &out) != 0 || fwrite(out.data, 1, out.len, stdout) != out.len) {
        fprintf(stderr, "mooncake-schema: cannot write the sample\n");
        mc_buf_free(&out);
        return 1;
    }
    mc_buf_free(&out);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* Dispatches the subcommand; exit status 0 ok, 1 failure, 2 usage. */
int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "list") == 0 && argc == 2)
        return cmd_list();
    if (strcmp(cmd, "show") == 0 && argc == 3)
        return cmd_show(argv[2]);
    if (strcmp(cmd, "canonical") == 0 && argc == 3)
        return cmd_canonical(argv[2]);
    if (strcmp(cmd, "decode-command") == 0)
        return cmd_decode_command(argc - 2, argv + 2);
    if (strcmp(cmd, "sample-command") == 0 && argc <= 3)
        return cmd_sample_command(argc - 2, argv + 2);
    usage(stderr);
    return 2;
}
