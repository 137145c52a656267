/* common/dead_record.c: a record of dead decoded (a letter with a task,
 * without one, not a DeadLetter), whose it is, and the selection requeue
 * makes (all, a key, a reason ignoring case, named letters refusing another
 * app's). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dead_record.h"

/* A record of dead at p@off keyed key, holding value (NULL: none). */
static rd_kafka_message_t record(const char *key, int32_t p, int64_t off, const mc_buf *value)
{
    rd_kafka_message_t m;
    memset(&m, 0, sizeof m);
    m.key = (void *)key;
    m.key_len = key ? strlen(key) : 0;
    m.partition = p;
    m.offset = off;
    m.payload = value ? value->data : NULL;
    m.len = value ? value->len : 0;
    return m;
}

static void letter(mc_buf *b, const char *app, const char *id, const char *reason, bool task)
{
    mc_kv headers[] = {{"x-test", "1"}};
    mc_dead_letter d = {
        .reason = reason,
        .source_topic = "t.retry",
        .failed_at = 1800000000000LL,
        .has_task = task,
        .task = {
            .app_id = app,
            .task_id = id,
            .due_at = 1800000000000LL,
            .callback = {.url = "http://e/x", .method = "POST", .headers = headers, .n_headers = 1},
            .attempt = 3,
            .created_at = 1800000000000LL}};
    mc_buf_reset(b);
    CHECK(mc_encode_dead_letter(&d, b) == 0);
}

static void refs_sort_and_find(void)
{
    mc_letter_ref r[] = {{2, 5}, {0, 9}, {2, 1}, {0, 9}, {1, 0}};
    size_t n = mc_letter_refs_sort(r, 5);
    CHECK(n == 4, "%zu", n);
    CHECK(r[0].partition == 0 && r[0].offset == 9 && r[1].partition == 1 && r[2].offset == 1 &&
          r[3].offset == 5);
    CHECK(mc_letter_refs_has(r, n, 2, 5) && mc_letter_refs_has(r, n, 1, 0));
    CHECK(!mc_letter_refs_has(r, n, 2, 9) && !mc_letter_refs_has(r, n, 0, 5));
    CHECK(!mc_letter_refs_has(r, 0, 2, 5));
}

static void decode_and_select(void)
{
    mc_arena *a = mc_arena_new();
    mc_buf b = {0};
    mc_dead_record r;

    /* A letter with a task, under another record key: its task says whose. */
    letter(&b, "shop", "o-1", "permanent failure: HTTP 404", true);
    rd_kafka_message_t m = record("moved/elsewhere", 1, 7, &b);
    mc_dead_decode(&m, a, &r);
    CHECK(!r.err && r.task && strcmp(r.d.task.task_id, "o-1") == 0);
    CHECK(mc_dead_app_matches("shop", &m, &r) && !mc_dead_app_matches("sho", &m, &r));
    CHECK(mc_dead_app_matches("moved", &m, &r) && !mc_dead_app_matches("billing", &m, &r));
    CHECK(mc_dead_key_matches("shop/o-1", &m, r.d.task.app_id, r.d.task.task_id));
    CHECK(mc_dead_key_matches("moved/elsewhere", &m, NULL, NULL));
    CHECK(!mc_dead_key_matches("shop/o-2", &m, r.d.task.app_id, r.d.task.task_id));

    mc_dead_filter all = {.all = true};
    mc_dead_filter reason = {.reason = "http 404"}, other = {.reason = "HTTP 503"};
    mc_dead_filter key = {.key = "shop/o-1", .reason = "PERMANENT"};
    CHECK(mc_dead_filter_match(&all, &m, &r) == MC_DEAD_MATCHED);
    CHECK(mc_dead_filter_match(&reason, &m, &r) == MC_DEAD_MATCHED);
    CHECK(mc_dead_filter_match(&other, &m, &r) == MC_DEAD_NOT_MATCHED);
    CHECK(mc_dead_filter_match(&key, &m, &r) == MC_DEAD_MATCHED);
    key.key = "shop/o-2";
    CHECK(mc_dead_filter_match(&key, &m, &r) == MC_DEAD_NOT_MATCHED);

    /* Named letters: only those, and another app's is refused, not skipped. */
    mc_letter_ref named[] = {{1, 7}, {2, 3}};
    mc_dead_filter mine = {.all = true, .letters = named, .n_letters = 2, .app_id = "shop"};
    mc_dead_filter theirs = mine;
    theirs.app_id = "billing";
    CHECK(mc_dead_filter_match(&mine, &m, &r) == MC_DEAD_MATCHED);
    CHECK(mc_dead_filter_match(&theirs, &m, &r) == MC_DEAD_FOREIGN);
    rd_kafka_message_t unnamed = record("moved/elsewhere", 1, 8, &b);
    CHECK(mc_dead_filter_match(&mine, &unnamed, &r) == MC_DEAD_NOT_MATCHED);
    CHECK(mc_dead_filter_match(&theirs, &unnamed, &r) == MC_DEAD_NOT_MATCHED);

    /* Without a task: whose it is comes from the record key alone. */
    mc_arena_reset(a);
    letter(&b, "shop", "o-2", "unknown schema", false);
    m = record("shop/o-2", 2, 3, &b);
    mc_dead_decode(&m, a, &r);
    CHECK(!r.err && !r.task);
    CHECK(mc_dead_app_matches("shop", &m, &r) && !mc_dead_app_matches("shop/o", &m, &r));
    CHECK(mc_dead_filter_match(&mine, &m, &r) == MC_DEAD_MATCHED);

    /* Not a DeadLetter at all; no value; no key. Never matched by reason. */
    mc_buf junk = {.data = (uint8_t *)"\x00garbage", .len = 8};
    m = record(NULL, 0, 1, &junk);
    mc_dead_decode(&m, a, &r);
    CHECK(r.err && !r.task);
    CHECK(!mc_dead_app_matches("shop", &m, &r));
    mc_dead_filter any_reason = {.reason = "a"};
    CHECK(mc_dead_filter_match(&any_reason, &m, &r) == MC_DEAD_NOT_MATCHED);
    CHECK(mc_dead_filter_match(&all, &m, &r) == MC_DEAD_MATCHED);
    m = record("shop/x", 0, 2, NULL);
    mc_dead_decode(&m, a, &r);
    CHECK(r.err == MC_CODEC_EMPTY && mc_dead_app_matches("shop", &m, &r));

    mc_buf_free(&b);
    mc_arena_free(a);
}

int main(void)
{
    refs_sort_and_find();
    decode_and_select();
    return check_exit("test_dead_record");
}
