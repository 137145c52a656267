/* libFuzzer harness for the gateway's JSON bodies (task_json.c): any bytes
 * give either a task and cancel that the router would also accept and that
 * survive an Avro round trip (with an orderingKey: as the chain's AddLink or
 * CancelLink, which the jobs role would take), or an error with a sentence
 * saying why - never a crash. The first byte picks the route: even for
 * /submit, odd for /api/task/done. */
#include "task_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chains.h"
#include "task_rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fixed_id(void *arg, char out[MC_JSON_MAX_ID_LEN + 1])
{
    (void)arg;
    strcpy(out, "01a202a0-a1a4-7246-8049-ae96ebb34f2b");
}

static void fail(const char *what, const char *why)
{
    fprintf(stderr, "%s: %s\n", what, why);
    abort();
}

/* Reads back what mc_encode_task_command wrote: the Command, or with an
 * ordering key the chain's JobCommand, which must name that chain, made
 * the Command it carries. MC_CODEC_OK, or the codec's error with detail. */
static mc_codec_err decode_back(const mc_buf *in, const char *ordering_key, mc_arena *a,
                                mc_command *back, char *detail, size_t detail_len)
{
    mc_codec_options o = {0};
    if (!ordering_key)
        return mc_decode_command(&o, in->data, in->len, a, back, detail, detail_len);
    mc_job_command jc;
    mc_codec_err err = mc_decode_job_command(&o, in->data, in->len, a, &jc, detail, detail_len);
    if (err != MC_CODEC_OK)
        return err;
    if (jc.kind == MC_JOBCMD_ADD_LINK && strcmp(jc.add_link.ordering_key, ordering_key) == 0)
        *back = (mc_command){.kind = MC_CMD_SUBMIT, .submit = jc.add_link.task};
    else if (jc.kind == MC_JOBCMD_CANCEL_LINK &&
             strcmp(jc.cancel_link.ordering_key, ordering_key) == 0)
        *back = (mc_command){.kind = MC_CMD_CANCEL,
                             .cancel = {.app_id = jc.cancel_link.app_id,
                                        .task_id = jc.cancel_link.task_id,
                                        .requested_at = jc.cancel_link.requested_at}};
    else
        fail("chain round trip", "not the AddLink or CancelLink of its chain");
    return MC_CODEC_OK;
}

/* An accepted command must encode, decode back to the same key, and pass the
 * router's own rules (in a chain, the jobs role's: those and a good
 * ordering key). */
static void check_round_trip(const mc_command *cmd, const char *ordering_key, int64_t now,
                             int64_t max_due)
{
    char why[512] = "";
    if (ordering_key && !mc_ordering_key_ok(ordering_key, "orderingKey", why, sizeof why))
        fail("the jobs role would dead-letter an accepted ordering key", why);
    mc_buf out = {0};
    if (mc_encode_task_command(cmd, ordering_key, &out) != 0)
        fail("encode", "out of memory");
    mc_arena *a = mc_arena_new();
    mc_command back;
    char detail[256] = "";
    if (!a || decode_back(&out, ordering_key, a, &back, detail, sizeof detail) != MC_CODEC_OK)
        fail("accepted command does not decode", detail);
    if (back.kind != cmd->kind)
        fail("round trip", "kind changed");
    if (back.kind == MC_CMD_SUBMIT) {
        if (strcmp(back.submit.app_id, cmd->submit.app_id) ||
            strcmp(back.submit.task_id, cmd->submit.task_id) ||
            back.submit.callback.body_len != cmd->submit.callback.body_len ||
            back.submit.has_kafka_target != cmd->submit.has_kafka_target ||
            back.submit.has_late_policy != cmd->submit.has_late_policy)
            fail("round trip", "task changed");
        const mc_kafka_target *bk = &back.submit.kafka_target, *ck = &cmd->submit.kafka_target;
        if (back.submit.has_kafka_target &&
            (strcmp(bk->topic, ck->topic) || bk->has_key != ck->has_key ||
             bk->key_len != ck->key_len || bk->has_value != ck->has_value ||
             bk->value_len != ck->value_len || bk->n_headers != ck->n_headers))
            fail("round trip", "kafka target changed");
        if (!mc_task_ok(&back.submit, now, max_due, &mc_task_avro_names, why, sizeof why))
            fail("the router would dead-letter an accepted task", why);
        for (size_t i = 0; i < back.submit.callback.n_headers; i++)
            if (!mc_header_name_ok(back.submit.callback.headers[i].key) ||
                !mc_header_value_ok(back.submit.callback.headers[i].value) ||
                mc_header_reserved(back.submit.callback.headers[i].key))
                fail("accepted header", back.submit.callback.headers[i].key);
    } else if (!mc_task_ids_ok(back.cancel.app_id, back.cancel.task_id, &mc_task_avro_names, why,
                               sizeof why)) {
        fail("the router would dead-letter an accepted cancel", why);
    }
    mc_arena_free(a);
    mc_buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    bool cancel = data[0] & 1;
    size_t len = size - 1;
    char *body = malloc(len ? len : 1); /* exact size, not terminated: ASan sees overreads */
    if (!body)
        return 0;
    memcpy(body, data + 1, len);
    const int64_t now = 1795330000000, max_due = INT64_C(315360000000);
    mc_arena *arena = mc_arena_new();
    char why[512] = "";
    mc_command cmd = {0};
    const char *ordering_key = NULL;
    int rc;
    if (cancel) {
        cmd.kind = MC_CMD_CANCEL;
        rc =
            mc_cancel_from_json(body, len, now, arena, &cmd.cancel, &ordering_key, why, sizeof why);
    } else {
        mc_task_json_options o = {.now_ms = now,
                                  .max_due_ms = max_due,
                                  .retry_defaults = {5, 1000, 2.0, 3600000},
                                  .make_id = fixed_id};
        cmd.kind = MC_CMD_SUBMIT;
        rc = mc_task_from_json(body, len, &o, arena, &cmd.submit, &ordering_key, why, sizeof why);
    }
    if (rc != 0 && why[0] == '\0')
        fail("error", "without a reason");
    if (rc == 0)
        check_round_trip(&cmd, ordering_key, now, max_due);
    mc_arena_free(arena);
    free(body);
    return 0;
}
