/* Gateway bearer tokens; see auth.h. */
#include "auth.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "crypto.h"

typedef enum token_kind { TOKEN_APP, TOKEN_INNER, TOKEN_ADMIN } token_kind;

typedef struct token {
    token_kind kind;
    char *app_id; /* an app token's app; NULL for the others */
    uint8_t digest[MC_SHA256_LEN];
} token;

struct mc_tokens {
    token *v;
    size_t n, cap;
};

typedef struct parse_state {
    mc_tokens *t;
    token_kind kind;
    const char *what;
} parse_state;

void mc_tokens_free(mc_tokens *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i].app_id);
    free(t->v);
    free(t);
}

size_t mc_tokens_count(const mc_tokens *t)
{
    return t ? t->n : 0;
}

static int add_token(void *arg, const char *entry, size_t len, const char *where, char *err,
                     size_t errlen)
{
    parse_state *ps = arg;
    const char *secret = entry, *app = NULL;
    size_t secret_len = len, app_len = 0;
    if (ps->kind == TOKEN_APP) {
        const char *eq = memchr(entry, '=', len);
        if (!eq) {
            snprintf(err, errlen, "%s: %s has no '=' (expected appId=token)", ps->what, where);
            return -1;
        }
        app = entry;
        app_len = (size_t)(eq - entry);
        secret = eq + 1;
        secret_len = len - app_len - 1;
        mc_trim(&app, &app_len);
        mc_trim(&secret, &secret_len);
        if (app_len == 0 || memchr(app, '/', app_len)) {
            snprintf(err, errlen,
                     "%s: %s has an empty app id or one with '/' (expected appId=token)", ps->what,
                     where);
            return -1;
        }
    }
    if (secret_len < 16) {
        snprintf(err, errlen, "%s: %s: a token must be at least 16 characters", ps->what, where);
        return -1;
    }
    for (size_t i = 0; i < secret_len; i++)
        if ((unsigned char)secret[i] <= ' ' || secret[i] == 0x7f) {
            snprintf(err, errlen, "%s: %s: a token cannot contain spaces or control characters",
                     ps->what, where);
            return -1;
        }
    mc_tokens *t = ps->t;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 8;
        token *v = realloc(t->v, cap * sizeof *v);
        if (!v) {
            snprintf(err, errlen, "%s: out of memory", ps->what);
            return -1;
        }
        t->v = v;
        t->cap = cap;
    }
    token *tk = &t->v[t->n];
    tk->kind = ps->kind;
    tk->app_id = NULL;
    if (app && !(tk->app_id = strndup(app, app_len))) {
        snprintf(err, errlen, "%s: out of memory", ps->what);
        return -1;
    }
    mc_sha256(secret, secret_len, tk->digest);
    t->n++;
    return 0;
}

mc_tokens *mc_tokens_parse(const char *app_tokens, const char *inner_tokens,
                           const char *admin_tokens, char *err, size_t errlen)
{
    mc_tokens *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "tokens: out of memory");
        return NULL;
    }
    parse_state app = {t, TOKEN_APP, "MOONCAKE_APP_TOKENS"},
                inner = {t, TOKEN_INNER, "MOONCAKE_INNER_TOKENS"},
                admin = {t, TOKEN_ADMIN, "MOONCAKE_ADMIN_TOKENS"};
    if (mc_config_each_entry(app_tokens, app.what, add_token, &app, err, errlen) != 0 ||
        mc_config_each_entry(inner_tokens, inner.what, add_token, &inner, err, errlen) != 0 ||
        mc_config_each_entry(admin_tokens, admin.what, add_token, &admin, err, errlen) != 0) {
        mc_tokens_free(t);
        return NULL;
    }
    return t;
}

/* Equal in time that depends on the length only (always 32 here). */
static bool digest_equal(const uint8_t *a, const uint8_t *b)
{
    uint8_t diff = 0;
    for (size_t i = 0; i < MC_SHA256_LEN; i++)
        diff |= (uint8_t)(a[i] ^ b[i]);
    return diff == 0;
}

mc_grant mc_tokens_lookup(const mc_tokens *t, const char *token_text, size_t len)
{
    mc_grant g = {0};
    mc_sha256(token_text, len, g.digest);
    /* Every entry is compared, match or not. */
    for (size_t i = 0; t && i < t->n; i++) {
        bool eq = digest_equal(g.digest, t->v[i].digest);
        g.known |= eq;
        g.inner |= eq && t->v[i].kind == TOKEN_INNER;
        g.admin |= eq && t->v[i].kind == TOKEN_ADMIN;
    }
    return g;
}

bool mc_grant_allows(const mc_tokens *t, const mc_grant *g, const char *app_id)
{
    if (g->known && g->admin)
        return true;
    bool ok = false;
    for (size_t i = 0; t && g->known && i < t->n; i++)
        if (t->v[i].app_id && digest_equal(g->digest, t->v[i].digest) &&
            strcmp(t->v[i].app_id, app_id) == 0)
            ok = true;
    return ok;
}

json_t *mc_tokens_apps(const mc_tokens *t, const mc_grant *g, bool every)
{
    json_t *apps = json_array();
    for (size_t i = 0; apps && t && i < t->n; i++) {
        const token *tk = &t->v[i];
        if (!tk->app_id || (!every && !digest_equal(g->digest, tk->digest)))
            continue;
        bool seen = false; /* an app with a rotated token is listed once */
        for (size_t j = 0; j < i && !seen; j++)
            seen = t->v[j].app_id && strcmp(t->v[j].app_id, tk->app_id) == 0 &&
                   (every || digest_equal(g->digest, t->v[j].digest));
        if (!seen && json_array_append_new(apps, json_string(tk->app_id)) != 0) {
            json_decref(apps);
            return NULL;
        }
    }
    return apps;
}
