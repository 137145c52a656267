/* Gateway tokens and the Idempotency-Key memory. */
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "check.h"
#include "idempotency.h"

static void test_tokens(void)
{
    char err[256] = "";
    mc_tokens *t =
        mc_tokens_parse("shop=shop-token-0000000001, shop=shop-token-0000000002,"
                        "billing=bill-token-000000001",
                        "inner-token-00000000001", "admin-token-00000000001", err, sizeof err);
    CHECK(t != NULL, "%s", err);
    CHECK(mc_tokens_count(t) == 5);
    const char *s1 = "shop-token-0000000001", *s2 = "shop-token-0000000002";
    mc_grant g = mc_tokens_lookup(t, s1, strlen(s1));
    CHECK(g.known && !g.inner);
    CHECK(mc_grant_allows(t, &g, "shop") && !mc_grant_allows(t, &g, "billing"));
    g = mc_tokens_lookup(t, s2, strlen(s2)); /* rotation: both work */
    CHECK(g.known && mc_grant_allows(t, &g, "shop"));
    g = mc_tokens_lookup(t, s1, strlen(s1) - 1); /* a prefix is not the token */
    CHECK(!g.known && !mc_grant_allows(t, &g, "shop"));
    g = mc_tokens_lookup(t, "inner-token-00000000001", 23);
    CHECK(g.known && g.inner && !g.admin && !mc_grant_allows(t, &g, "shop"));
    /* An admin token acts on every app, and lists every configured app once. */
    g = mc_tokens_lookup(t, "admin-token-00000000001", 23);
    CHECK(g.known && g.admin && !g.inner);
    CHECK(mc_grant_allows(t, &g, "shop") && mc_grant_allows(t, &g, "an-app-of-no-token"));
    json_t *apps = mc_tokens_apps(t, &g, true);
    char *text = json_dumps(apps, JSON_COMPACT);
    CHECK(text && strcmp(text, "[\"shop\",\"billing\"]") == 0, "%s", text);
    free(text);
    json_decref(apps);
    g = mc_tokens_lookup(t, s2, strlen(s2)); /* an app token lists its own app */
    apps = mc_tokens_apps(t, &g, false);
    text = json_dumps(apps, JSON_COMPACT);
    CHECK(text && strcmp(text, "[\"shop\"]") == 0, "%s", text);
    free(text);
    json_decref(apps);
    mc_tokens_free(t);

    static const struct {
        const char *app, *inner, *admin, *needle;
    } bad[] = {
        {"shop", "", "", "no '='"},
        {"=abcdefghijklmnopq", "", "", "empty app id"},
        {"a/b=abcdefghijklmnopq", "", "", "'/'"},
        {"shop=short", "", "", "at least 16"},
        {"", "has space in it 12345", "", "spaces"},
        {"@/nonexistent/tokens", "", "", "cannot open"},
        {"", "", "short-admin", "MOONCAKE_ADMIN_TOKENS"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECK(mc_tokens_parse(bad[i].app, bad[i].inner, bad[i].admin, err, sizeof err) == NULL,
              "%s", bad[i].app);
        CHECK(strstr(err, bad[i].needle) != NULL, "'%s' lacks '%s'", err, bad[i].needle);
    }
}

static void test_idempotency(void)
{
    mc_idem *c = mc_idem_new(3, 1000);
    uint8_t h1[32] = {1}, h2[32] = {2};
    int status = 0;
    char *body = NULL;
    CHECK(mc_idem_begin(c, "k1", 2, h1, 0, &status, &body) == MC_IDEM_NEW);
    CHECK(mc_idem_begin(c, "k1", 2, h1, 1, &status, &body) == MC_IDEM_IN_FLIGHT);
    CHECK(mc_idem_begin(c, "k1", 2, h2, 1, &status, &body) == MC_IDEM_MISMATCH);
    mc_idem_finish(c, "k1", 2, 200, "answer");
    CHECK(mc_idem_begin(c, "k1", 2, h1, 2, &status, &body) == MC_IDEM_REPLAY);
    CHECK(status == 200 && body && strcmp(body, "answer") == 0);
    free(body);
    /* A failed request is forgotten: its retry runs. */
    CHECK(mc_idem_begin(c, "k2", 2, h1, 3, &status, &body) == MC_IDEM_NEW);
    mc_idem_finish(c, "k2", 2, 0, NULL);
    CHECK(mc_idem_begin(c, "k2", 2, h1, 4, &status, &body) == MC_IDEM_NEW);
    /* Bounded: past max_keys the oldest goes. */
    CHECK(mc_idem_begin(c, "k3", 2, h1, 5, &status, &body) == MC_IDEM_NEW);
    CHECK(mc_idem_begin(c, "k4", 2, h1, 6, &status, &body) == MC_IDEM_NEW);
    CHECK(mc_idem_count(c) == 3);
    CHECK(mc_idem_begin(c, "k1", 2, h2, 7, &status, &body) == MC_IDEM_NEW); /* k1 evicted */
    /* And by age: everything expires after the TTL. */
    CHECK(mc_idem_begin(c, "k9", 2, h1, 5000, &status, &body) == MC_IDEM_NEW);
    CHECK(mc_idem_count(c) == 1);
    mc_idem_free(c);
}

int main(void)
{
    test_tokens();
    test_idempotency();
    return check_exit("gateway_auth");
}
