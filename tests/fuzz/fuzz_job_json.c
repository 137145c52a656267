/* libFuzzer harness for the jobs' JSON bodies (job_json.c): any bytes give
 * either a job, action or preview that the jobs processor would also accept
 * after an Avro round trip, or an error with a sentence saying why - never a
 * crash. The first byte picks the route: 0 (mod 3) POST /jobs, 1 an action
 * (/jobs/pause ...), 2 /jobs/preview. Accepted jobs and previews also list
 * their next fire times, which must rise, and a job written back as JSON
 * must read as the same job. */
#include "job_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const int64_t NOW = 1795330000000;

static void fail(const char *what, const char *why)
{
    fprintf(stderr, "%s: %s\n", what, why);
    abort();
}

/* The command encodes, decodes back the same, and a put passes the
 * processor's own check (mc_job_ok with the schema's names). */
static void check_round_trip(const mc_job_command *cmd, mc_zone_cache *zones)
{
    mc_buf out = {0}, again = {0};
    if (mc_encode_job_command(cmd, &out) != 0)
        fail("encode", "out of memory");
    mc_arena *a = mc_arena_new();
    mc_job_command back;
    char detail[256] = "";
    if (!a || mc_decode_job_command(NULL, out.data, out.len, a, &back, detail, sizeof detail) != 0)
        fail("accepted command does not decode", detail);
    if (mc_encode_job_command(&back, &again) != 0 || again.len != out.len ||
        memcmp(again.data, out.data, out.len) != 0)
        fail("round trip", "the command changed");
    char why[512] = "";
    if (back.kind == MC_JOBCMD_PUT &&
        !mc_job_ok(&back.put, NOW, zones, &mc_job_avro_names, why, sizeof why))
        fail("the jobs processor would dead-letter an accepted job", why);
    mc_arena_free(a);
    mc_buf_free(&out);
    mc_buf_free(&again);
}

/* At least one fire time, strictly rising, none before now. */
static void check_fires(const mc_job *j, mc_zone_cache *zones, int n)
{
    int64_t at[MC_JOB_PREVIEW_MAX];
    char why[512] = "";
    int k = mc_job_next_fires(j, NOW, zones, at, n, why, sizeof why);
    if (k < 1)
        fail("an accepted schedule has no fire time", why[0] ? why : "none");
    for (int i = 0; i < k; i++)
        if (at[i] < NOW - 1 || (i && at[i] <= at[i - 1]))
            fail("fire times", "not rising from now");
}

/* The job as JSON parses back to the same Avro bytes. */
static void check_json_round_trip(const mc_job *j, const mc_job_json_options *o)
{
    json_t *js = mc_job_to_json(j);
    char *text = js ? json_dumps(js, JSON_COMPACT) : NULL;
    if (!text)
        fail("to JSON", "out of memory");
    mc_arena *a = mc_arena_new();
    mc_job back;
    char why[512] = "";
    if (!a || mc_job_from_json(text, strlen(text), o, a, &back, why, sizeof why) != 0)
        fail("a job written as JSON does not read back", why);
    mc_buf x = {0}, y = {0};
    if (mc_encode_job(j, &x) != 0 || mc_encode_job(&back, &y) != 0 || x.len != y.len ||
        memcmp(x.data, y.data, x.len) != 0)
        fail("JSON round trip", "the job changed");
    mc_buf_free(&x);
    mc_buf_free(&y);
    mc_arena_free(a);
    free(text);
    json_decref(js);
}

/* One fuzz input: parsed, checked, and freed; the harness keeps no state. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    int route = data[0] % 3;
    size_t len = size - 1;
    char *body = malloc(len ? len : 1); /* exact size, not terminated: ASan sees overreads */
    mc_arena *arena = mc_arena_new();
    mc_zone_cache *zones = mc_zone_cache_new(NULL);
    if (!body || !arena || !zones)
        fail("setup", "out of memory");
    memcpy(body, data + 1, len);
    mc_job_json_options o = {
        .now_ms = NOW, .retry_defaults = {5, 1000, 2.0, 3600000}, .zones = zones};
    char why[512] = "";
    mc_job_command cmd = {0};
    int rc, count = 0;
    if (route == 0) {
        cmd.kind = MC_JOBCMD_PUT;
        rc = mc_job_from_json(body, len, &o, arena, &cmd.put, why, sizeof why);
    } else if (route == 1) {
        cmd.kind = MC_JOBCMD_ACTION;
        rc = mc_job_action_from_json(body, len, (mc_job_action_kind)(data[0] / 3 % 4), NOW, arena,
                                     &cmd.action, why, sizeof why);
    } else {
        rc = mc_job_preview_from_json(body, len, &o, arena, &cmd.put, &count, why, sizeof why);
    }
    if (rc != 0 && why[0] == '\0')
        fail("error", "without a reason");
    if (rc == 0 && route < 2)
        check_round_trip(&cmd, zones);
    if (rc == 0 && route == 0) {
        check_fires(&cmd.put, zones, MC_JOB_NEXT_FIRES);
        check_json_round_trip(&cmd.put, &o);
    }
    if (rc == 0 && route == 2)
        check_fires(&cmd.put, zones, count);
    mc_zone_cache_free(zones);
    mc_arena_free(arena);
    free(body);
    return 0;
}
