/* The endpoint table's pure steps (endpoint_defs.h): records applied by key and
 * tombstones, invalid records refused without a change, the snapshot merging static
 * members with the addresses each DNS name resolved to (kept, replaced, emptied), the
 * listings, members' base URLs, and DNS answers read through ns_parserr only. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "endpoint_defs.h"
#include "endpoint_json.h"

static mc_buf encode(const mc_endpoint *e)
{
    mc_buf b = {0};
    CHECK(mc_encode_endpoint(e, &b) == 0);
    return b;
}

/* Applies e under its own key; returns what apply returned. */
static int put(mc_endpoint_defs *d, const mc_endpoint *e)
{
    char key[512], why[512] = "";
    size_t n = mc_endpoint_key(e, key, sizeof key);
    mc_buf b = encode(e);
    int rc = mc_endpoint_defs_apply(d, key, n, b.data, b.len, why, sizeof why);
    mc_buf_free(&b);
    return rc;
}

static int del(mc_endpoint_defs *d, const char *key)
{
    char why[256];
    return mc_endpoint_defs_apply(d, key, strlen(key), NULL, 0, why, sizeof why);
}

static bool has_member(const mc_group *g, const char *url, const char *address)
{
    for (size_t i = 0; i < g->n_members; i++)
        if (strcmp(g->members[i].url, url) == 0 &&
            (address ? g->members[i].address && strcmp(g->members[i].address, address) == 0
                     : !g->members[i].address))
            return true;
    return false;
}

static void test_urls(void)
{
    char out[256], host[256], why[256];
    bool ip = false;
    CHECK(mc_endpoint_url_ok("http://Billing.Example.com:8080/api//", out, sizeof out, host,
                             sizeof host, &ip, why, sizeof why));
    CHECK(strcmp(out, "http://Billing.Example.com:8080/api") == 0, "%s", out);
    CHECK(strcmp(host, "billing.example.com") == 0 && !ip);
    CHECK(mc_endpoint_url_ok("https://10.0.0.1/", out, sizeof out, host, sizeof host, &ip, why,
                             sizeof why));
    CHECK(strcmp(out, "https://10.0.0.1") == 0 && ip && strcmp(host, "10.0.0.1") == 0);
    CHECK(mc_endpoint_url_ok("http://[fd00::1]:81", out, sizeof out, host, sizeof host, &ip, why,
                             sizeof why));
    CHECK(ip && strcmp(host, "fd00::1") == 0);
    const char *bad[] = {"ftp://x",       "http://",        "http://a/b?c=1", "http://a#f",
                         "http://u:p@a/", "http://a:0",     "http://a:99999", "http://a:8x",
                         "http://[zz]/",  "http://a b/",    "group://g/x",    "http://a!/",
                         "http://:80/",   "http://[fd00::1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = '\0';
        CHECK(!mc_endpoint_url_ok(bad[i], out, sizeof out, host, sizeof host, &ip, why, sizeof why),
              "%s accepted", bad[i]);
        CHECK(why[0], "%s: no reason", bad[i]);
    }
}

static void test_groups(void)
{
    mc_endpoint_defs *d = mc_endpoint_defs_new();
    static const char *const members[] = {"http://10.0.0.9:80", "http://static.example.com"};
    static const char *const dns[] = {"http://billing.svc:8080", "http://10.1.1.1:9"};
    mc_endpoint g = {.kind = MC_ENDPOINT_GROUP,
                     .group = {.app_id = "shop",
                               .name = "billing",
                               .members = members,
                               .n_members = 2,
                               .dns = dns,
                               .n_dns = 2,
                               .strategy = MC_ROUTE_CONSISTENT_HASH,
                               .member_concurrency = 3,
                               .unhealthy_ms = 5000,
                               .updated_at = 1}};
    CHECK(put(d, &g) == 1);
    CHECK(mc_endpoint_defs_group_count(d) == 1 && mc_endpoint_defs_limit_count(d) == 0);
    /* Only the DNS name is resolved; the IP literal is a static member. */
    CHECK(mc_endpoint_defs_host_count(d) == 1);
    CHECK(strcmp(mc_endpoint_defs_host(d, 0), "billing.svc") == 0);
    CHECK(!mc_endpoint_defs_host_resolved(d, 0));

    mc_endpoints *e = mc_endpoint_defs_snapshot(d, NULL);
    const mc_group *sg = mc_endpoints_group(e, "shop", "billing");
    CHECK(sg && sg->n_members == 3 && sg->strategy == MC_ROUTE_CONSISTENT_HASH &&
          sg->member_concurrency == 3 && sg->unhealthy_ms == 5000);
    CHECK(sg && has_member(sg, "http://10.1.1.1:9", NULL) &&
          has_member(sg, "http://static.example.com", NULL));
    mc_endpoints_unref(e);

    const char *addrs[] = {"10.2.0.2", "10.2.0.1", "fd00::1", "10.2.0.1"};
    CHECK(mc_endpoint_defs_set_addresses(d, 0, addrs, 4) == 1);
    CHECK(mc_endpoint_defs_host_resolved(d, 0));
    CHECK(mc_endpoint_defs_set_addresses(d, 0, addrs, 3) == 0); /* the same set */
    e = mc_endpoint_defs_snapshot(d, NULL);
    sg = mc_endpoints_group(e, "shop", "billing");
    CHECK(sg && sg->n_members == 6, "%zu", sg ? sg->n_members : 0);
    CHECK(sg && has_member(sg, "http://billing.svc:8080", "10.2.0.1") &&
          has_member(sg, "http://billing.svc:8080", "fd00::1") &&
          !has_member(sg, "http://billing.svc:8080", NULL));

    /* The listing shows definitions and what each name resolved to. */
    json_t *list = mc_endpoint_defs_groups_json(d, "shop", NULL);
    CHECK(json_array_size(list) == 1);
    json_t *j = json_array_get(list, 0);
    CHECK(strcmp(json_string_value(json_object_get(j, "strategy")), "CONSISTENT_HASH") == 0);
    CHECK(json_array_size(json_object_get(j, "members")) == 2 &&
          json_array_size(json_object_get(j, "dns")) == 2 &&
          json_array_size(json_object_get(j, "resolved")) == 3);
    json_decref(list);
    list = mc_endpoint_defs_groups_json(d, "other", NULL);
    CHECK(list && json_array_size(list) == 0);
    json_decref(list);
    list = mc_endpoint_defs_groups_json(d, "shop", "nope");
    CHECK(list && json_array_size(list) == 0);
    json_decref(list);

    /* A snapshot already taken does not change with the definitions. */
    CHECK(mc_endpoint_defs_set_addresses(d, 0, NULL, 0) == 1);
    CHECK(sg && sg->n_members == 6);
    mc_endpoints_unref(e);
    e = mc_endpoint_defs_snapshot(d, NULL);
    sg = mc_endpoints_group(e, "shop", "billing");
    CHECK(sg && sg->n_members == 3); /* emptied: only the static ones */
    mc_endpoints_unref(e);

    /* Rewriting the group keeps the answers of names it still names. */
    CHECK(mc_endpoint_defs_set_addresses(d, 0, addrs, 1) == 1);
    g.group.strategy = MC_ROUTE_FIRST;
    g.group.n_members = 0;
    CHECK(put(d, &g) == 1);
    CHECK(mc_endpoint_defs_host_count(d) == 1 && mc_endpoint_defs_host_resolved(d, 0));
    e = mc_endpoint_defs_snapshot(d, NULL);
    sg = mc_endpoints_group(e, "shop", "billing");
    CHECK(sg && sg->n_members == 2 && sg->strategy == MC_ROUTE_FIRST &&
          has_member(sg, "http://billing.svc:8080", "10.2.0.2"));
    mc_endpoints_unref(e);

    /* A name with more addresses than a group may hold: cut, counted. */
    char many[70][MC_ADDRESS_MAX];
    const char *ptrs[70];
    for (int i = 0; i < 70; i++) {
        snprintf(many[i], sizeof many[i], "10.3.0.%d", i + 1);
        ptrs[i] = many[i];
    }
    CHECK(mc_endpoint_defs_set_addresses(d, 0, ptrs, 70) == 1);
    size_t cut = 0;
    e = mc_endpoint_defs_snapshot(d, &cut);
    sg = mc_endpoints_group(e, "shop", "billing");
    CHECK(sg && sg->n_members == MC_GROUP_MEMBERS_MAX && cut == 1);
    mc_endpoints_unref(e);

    /* Invalid records change nothing. */
    char why[512];
    mc_buf b = encode(&g);
    CHECK(mc_endpoint_defs_apply(d, "group/shop/other", 16, b.data, b.len, why, sizeof why) == -1);
    CHECK(strstr(why, "does not name"), "%s", why);
    CHECK(mc_endpoint_defs_apply(d, "group/shop/billing", 18, b.data, b.len - 1, why, sizeof why) ==
          -1);
    CHECK(strstr(why, "not an Endpoint"), "%s", why);
    mc_buf_free(&b);
    static const char *const bad_members[] = {"http://a/?q=1"};
    mc_endpoint bad = g;
    bad.group.members = bad_members;
    bad.group.n_members = 1;
    CHECK(put(d, &bad) == -1);
    bad = g;
    bad.group.name = "no/slash";
    CHECK(put(d, &bad) == -1);
    bad = g;
    bad.group.unhealthy_ms = -1;
    CHECK(put(d, &bad) == -1);
    e = mc_endpoint_defs_snapshot(d, NULL);
    CHECK(mc_endpoints_group_count(e) == 1 && mc_endpoints_group(e, "shop", "billing"));
    mc_endpoints_unref(e);

    /* Tombstones. */
    CHECK(del(d, "group/shop/nope") == 0);
    CHECK(del(d, "group/shop/billing") == 1);
    CHECK(mc_endpoint_defs_group_count(d) == 0 && mc_endpoint_defs_host_count(d) == 0);
    e = mc_endpoint_defs_snapshot(d, NULL);
    CHECK(e && mc_endpoints_group_count(e) == 0);
    mc_endpoints_unref(e);
    mc_endpoint_defs_free(d);
}

static void test_limits(void)
{
    mc_endpoint_defs *d = mc_endpoint_defs_new();
    mc_endpoint host = {.kind = MC_ENDPOINT_LIMIT,
                        .limit = {MC_LIMIT_HOST, "api.example.com", 50, 2000, 1}};
    mc_endpoint app = {.kind = MC_ENDPOINT_LIMIT, .limit = {MC_LIMIT_APP, "shop", 0, 10.5, 2}};
    CHECK(put(d, &host) == 1 && put(d, &app) == 1);
    mc_endpoints *e = mc_endpoint_defs_snapshot(d, NULL);
    mc_admission_limit l;
    CHECK(mc_endpoints_limit(e, MC_LIMIT_HOST, "api.example.com", &l) && l.max_concurrent == 50 &&
          l.max_per_second == 2000);
    CHECK(mc_endpoints_limit(e, MC_LIMIT_APP, "shop", &l) && l.max_per_second == 10.5);
    CHECK(!mc_endpoints_limit(e, MC_LIMIT_APP, "api.example.com", &l));
    mc_endpoints_unref(e);
    json_t *list = mc_endpoint_defs_limits_json(d);
    CHECK(json_array_size(list) == 2);
    CHECK(strcmp(json_string_value(json_object_get(json_array_get(list, 0), "scope")), "app") == 0);
    json_decref(list);
    mc_endpoint neg = host;
    neg.limit.max_concurrent = -1;
    CHECK(put(d, &neg) == -1);
    CHECK(del(d, "limit/host/api.example.com") == 1);
    CHECK(mc_endpoint_defs_limit_count(d) == 1);
    mc_endpoint_defs_free(d);
}

/* A DNS response: header, one question, then answers (name pointer to the question). */
static size_t dns_message(uint8_t *buf, const uint8_t *answers, size_t answers_len, int n_answers)
{
    static const uint8_t head[] = {0x12, 0x34, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0};
    static const uint8_t question[] = {7,   'b', 'i', 'l', 'l', 'i', 'n', 'g', 4,
                                       't', 'e', 's', 't', 0,   0,   1,   0,   1};
    size_t n = 0;
    memcpy(buf, head, sizeof head);
    buf[7] = (uint8_t)n_answers;
    n += sizeof head;
    memcpy(buf + n, question, sizeof question);
    n += sizeof question;
    memcpy(buf + n, answers, answers_len);
    return n + answers_len;
}

static void test_dns_answers(void)
{
    static const uint8_t answers[] = {/* A 127.0.0.2 */
                                      0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 5, 0, 4, 127, 0, 0, 2,
                                      /* CNAME (skipped) */
                                      0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 5, 0, 2, 0xc0, 12,
                                      /* AAAA fd00::1 */
                                      0xc0, 12, 0, 28, 0, 1, 0, 0, 0, 5, 0, 16, 0xfd, 0, 0, 0, 0, 0,
                                      0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
                                      /* A with a bad length (skipped) */
                                      0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 5, 0, 3, 1, 2, 3};
    uint8_t msg[512];
    char addrs[8][MC_ADDRESS_MAX];
    size_t len = dns_message(msg, answers, sizeof answers, 4);
    CHECK(mc_dns_answer_addresses(msg, len, addrs, 8) == 2);
    CHECK(strcmp(addrs[0], "127.0.0.2") == 0 && strcmp(addrs[1], "fd00::1") == 0);
    CHECK(mc_dns_answer_addresses(msg, len, addrs, 1) == 1);
    /* Every cut, and every byte changed, is read without crashing. */
    for (size_t n = 0; n < len; n++)
        CHECK(mc_dns_answer_addresses(msg, n, addrs, 8) <= 2);
    CHECK(mc_dns_answer_addresses(msg, len - 1, addrs, 8) == -1);
    srand(7);
    for (int round = 0; round < 20000; round++) {
        uint8_t copy[512];
        memcpy(copy, msg, len);
        for (int k = 0; k < 3; k++)
            copy[(size_t)rand() % len] = (uint8_t)rand();
        int got = mc_dns_answer_addresses(copy, len, addrs, 8);
        CHECK(got >= -1 && got <= 8);
    }
    /* An answer count far past the records is an error, not a read past the end. */
    len = dns_message(msg, answers, 16, 200);
    CHECK(mc_dns_answer_addresses(msg, len, addrs, 8) == -1);
}

/* The gateway's bodies (endpoint_json.h): what they accept the table keeps under the
 * record's key; what they refuse names the field. */
static void test_json_bodies(void)
{
    mc_arena *a = mc_arena_new();
    mc_endpoint e;
    char why[512] = "";
    const char *body = "{\"appId\":\"shop\",\"name\":\"billing\",\"members\":[\"http://a/x/\"],"
                       "\"dns\":[\"http://b.svc:80\"],\"strategy\":\"LAST\",\"unhealthyMs\":0}";
    CHECK(mc_endpoint_group_from_json(body, strlen(body), 42, a, &e, why, sizeof why) == 0, "%s",
          why);
    CHECK(e.kind == MC_ENDPOINT_GROUP && e.group.strategy == MC_ROUTE_LAST &&
          e.group.unhealthy_ms == 0 && e.group.updated_at == 42 && e.group.n_members == 1 &&
          strcmp(e.group.members[0], "http://a/x") == 0 && e.group.n_dns == 1);
    mc_endpoint_defs *d = mc_endpoint_defs_new();
    CHECK(put(d, &e) == 1 && mc_endpoint_defs_host_count(d) == 1);
    body = "{\"appId\":\"shop\",\"name\":\"g\",\"members\":[\"http://a\"]}";
    CHECK(mc_endpoint_group_from_json(body, strlen(body), 1, a, &e, why, sizeof why) == 0);
    CHECK(e.group.strategy == MC_ROUTE_ROUND_ROBIN && e.group.unhealthy_ms == 10000 &&
          e.group.member_concurrency == 0);
    body = "{\"scope\":\"host\",\"name\":\"API.Example.COM\",\"maxPerSecond\":2.5}";
    CHECK(mc_endpoint_limit_from_json(body, strlen(body), 1, a, &e, why, sizeof why) == 0, "%s",
          why);
    CHECK(e.limit.scope == MC_LIMIT_HOST && strcmp(e.limit.name, "api.example.com") == 0 &&
          e.limit.max_per_second == 2.5 && e.limit.max_concurrent == 0);
    CHECK(put(d, &e) == 1);
    body = "{\"appId\":\"shop\",\"name\":\"billing\"}";
    CHECK(mc_endpoint_delete_from_json(body, strlen(body), false, a, &e, why, sizeof why) == 0);
    char key[256];
    mc_endpoint_key(&e, key, sizeof key);
    CHECK(strcmp(key, "group/shop/billing") == 0 && del(d, key) == 1);
    CHECK(mc_endpoint_defs_group_count(d) == 0 && mc_endpoint_defs_limit_count(d) == 1);
    mc_endpoint_defs_free(d);
    static const struct {
        int kind; /* 0 group, 1 limit, 2 delete a limit */
        const char *body, *needle;
    } bad[] = {
        {0, "{\"appId\":\"shop\",\"name\":\"g\"}", "members and dns are both empty"},
        {0, "{\"appId\":\"a/b\",\"name\":\"g\",\"members\":[\"http://a\"]}", "appId 'a/b'"},
        {0, "{\"appId\":\"shop\",\"name\":\"g\",\"members\":\"http://a\"}",
         "members must be an array"},
        {0, "{\"appId\":\"shop\",\"name\":\"g\",\"members\":[1]}", "members[0] must be a string"},
        {0, "{\"appId\":\"shop\",\"name\":\"g\",\"dns\":[\"http://a#x\"]}", "dns[0] 'http://a#x'"},
        {0,
         "{\"appId\":\"shop\",\"name\":\"g\",\"members\":[\"http://a\"],\"unhealthyMs\":3600001}",
         "unhealthyMs"},
        {0, "{\"appId\":\"shop\",\"name\":\"g\",\"members\":[\"http://a\"],\"strategy\":\"x\"}",
         "strategy 'x' is not one of FIRST"},
        {1, "{\"scope\":\"host\",\"name\":\"h:1\",\"maxConcurrent\":1}", "has a port"},
        {1, "{\"scope\":\"host\",\"name\":\"h h\",\"maxConcurrent\":1}", "not a host name"},
        {1, "{\"scope\":\"app\",\"name\":\"a\",\"maxPerSecond\":-1}", "maxPerSecond -1"},
        {1, "{\"scope\":\"app\",\"name\":\"a\"}", "both 0"},
        {2, "{\"scope\":\"pod\",\"name\":\"a\"}", "scope 'pod' is not host or app"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = '\0';
        const char *b = bad[i].body;
        int rc = bad[i].kind == 0
                     ? mc_endpoint_group_from_json(b, strlen(b), 1, a, &e, why, sizeof why)
                 : bad[i].kind == 1
                     ? mc_endpoint_limit_from_json(b, strlen(b), 1, a, &e, why, sizeof why)
                     : mc_endpoint_delete_from_json(b, strlen(b), true, a, &e, why, sizeof why);
        CHECK(rc != 0 && strstr(why, bad[i].needle), "%s: %s", b, why);
    }
    mc_arena_free(a);
}

int main(void)
{
    test_urls();
    test_groups();
    test_limits();
    test_dns_answers();
    test_json_bodies();
    return check_exit("test_endpoint_defs");
}
