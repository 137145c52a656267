/* libFuzzer harness for the endpoint groups' and limits' JSON bodies
 * (endpoint_json.c): any bytes give a record or an error with a sentence saying why,
 * never a crash. The first byte picks the route: 0 (mod 4) POST /groups, 1 POST
 * /limits, 2 /groups/delete, 3 /limits/delete. An accepted put must be kept by the
 * endpoint table (endpoint_defs.c) under its key after an Avro round trip, and a
 * delete must remove it: what the gateway accepts, every executor applies. */
#include "endpoint_defs.h"
#include "endpoint_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *why)
{
    fprintf(stderr, "%s: %s\n", what, why);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    int route = data[0] % 4;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    mc_arena *a = mc_arena_new();
    mc_endpoint e;
    char why[512] = "", key[1024];
    int rc = route == 0 ? mc_endpoint_group_from_json(body, len, 1, a, &e, why, sizeof why)
             : route == 1
                 ? mc_endpoint_limit_from_json(body, len, 1, a, &e, why, sizeof why)
                 : mc_endpoint_delete_from_json(body, len, route == 3, a, &e, why, sizeof why);
    if (rc != 0) {
        if (!why[0])
            fail("refused without a reason", body);
        mc_arena_free(a);
        return 0;
    }
    size_t klen = mc_endpoint_key(&e, key, sizeof key);
    if (klen >= sizeof key)
        fail("key", "longer than 1023 bytes");
    mc_endpoint_defs *d = mc_endpoint_defs_new();
    if (route <= 1) {
        mc_buf b = {0};
        if (mc_encode_endpoint(&e, &b) != 0)
            fail("encode", "an accepted record does not encode");
        if (mc_endpoint_defs_apply(d, key, klen, b.data, b.len, why, sizeof why) != 1)
            fail("the endpoint table would skip an accepted record", why);
        mc_endpoints *snap = mc_endpoint_defs_snapshot(d, NULL);
        if (!snap || mc_endpoints_group_count(snap) + mc_endpoints_limit_count(snap) != 1)
            fail("snapshot", "the record is not in it");
        mc_endpoints_unref(snap);
        mc_buf_free(&b);
    }
    if (mc_endpoint_defs_apply(d, key, klen, NULL, 0, why, sizeof why) != (route <= 1 ? 1 : 0) ||
        mc_endpoint_defs_group_count(d) + mc_endpoint_defs_limit_count(d) != 0)
        fail("a tombstone of the key", "does not delete");
    mc_endpoint_defs_free(d);
    mc_arena_free(a);
    return 0;
}
