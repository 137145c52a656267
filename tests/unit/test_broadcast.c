/* A shard's place as its Results carry it ("<index>/<total>@<version>"), read back
 * exactly, whatever version a growth of the partition count left (below zero too), and
 * refused when malformed: the jobs role relays a shard's end by these headers alone. */
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "broadcast.h"
#include "check.h"

static bool parse(const char *text, mc_shard_ref *out)
{
    return mc_shard_ref_parse(text, strlen(text), out);
}

static void refs_round_trip(void)
{
    const mc_shard_ref refs[] = {{0, 1, 0},  {2, 3, 1184},      {63, 64, INT64_MAX},
                                 {0, 2, -1}, {1, 2, INT64_MIN}, {5, 9, -72057594037926702}};
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) {
        char text[64];
        size_t n = mc_shard_ref_format(&refs[i], text, sizeof text);
        mc_shard_ref got = {-1, -1, -1};
        CHECK(n == strlen(text) && mc_shard_ref_parse(text, n, &got), "%s not read back", text);
        CHECK(got.index == refs[i].index && got.total == refs[i].total &&
                  got.version == refs[i].version,
              "%s read as %d/%d@%" PRId64, text, got.index, got.total, got.version);
    }
}

static void malformed_refs_are_refused(void)
{
    static const char *const bad[] = {
        "",        "0/3",    "0/3@",    "0/3@-",    "0/3@1x",
        "3/3@1",   "0/0@1",  "0/65@1",  "-1/3@1",   "0/3@ 1",
        "0-3@1",   "0/3@+1", "0/3@--1", "1000/3@1", "0/3@99999999999999999999",
        "0/3@007", "0/3@-0", "00/3@1",  "0/03@1"};
    mc_shard_ref got;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(!parse(bad[i], &got), "'%s' was read", bad[i]);
    /* A header value is bytes, not a C string: a NUL inside is malformed. */
    CHECK(!mc_shard_ref_parse("0/3@12\0x", 8, &got));
}

static void result_headers_name_the_broadcast(void)
{
    mc_kv meta[3] = {{MC_BROADCAST_METADATA, "order-42"},
                     {MC_SHARD_METADATA, "1/3@-5"},
                     {MC_MEMBER_METADATA, "http://b:8080"}};
    mc_task t = {
        .app_id = "shop", .task_id = "order-42#shard-1", .metadata = meta, .n_metadata = 3};
    mc_header h[2];
    CHECK(mc_broadcast_result_headers(&t, h) == 2);
    CHECK(strcmp(mc_task_shard_member(&t), "http://b:8080") == 0);
    mc_record r = {.headers = h, .n_headers = 2};
    const char *task;
    size_t len;
    mc_shard_ref s;
    CHECK(mc_broadcast_result_shard(&r, &task, &len, &s) && len == 8 &&
              memcmp(task, "order-42", 8) == 0 && s.index == 1 && s.total == 3 && s.version == -5,
          "the Result's headers did not name shard 1/3@-5 of order-42");
    t.n_metadata = 1; /* not a shard */
    CHECK(mc_broadcast_result_headers(&t, h) == 0 && !mc_task_shard_member(&t));
    char id[32];
    CHECK(mc_shard_task_id("order-42", 12, id, sizeof id) == 17 &&
          strcmp(id, "order-42#shard-12") == 0);
    CHECK(mc_shard_task_id("order-42", 12, id, 10) >= 10, "a cut id is reported as cut");
    CHECK(mc_broadcast_metadata_reserved(MC_MEMBER_METADATA) &&
          !mc_broadcast_metadata_reserved("mooncake.route"));
}

int main(void)
{
    refs_round_trip();
    malformed_refs_are_refused();
    result_headers_name_the_broadcast();
    return check_exit("test_broadcast");
}
