/* Standard Webhooks signing (see webhook.h) and the parser of
 * MOONCAKE_APP_SECRETS. Secret key bytes are wiped before their memory is
 * freed, and error messages name entries by position and app, never by
 * content, so a typo in the setting cannot leak a key into the logs. */
#include "webhook.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "crypto.h"

#define ERR_PREFIX "MOONCAKE_APP_SECRETS"

/* ---- the secrets ---- */

typedef struct app_secret {
    char *app_id;
    uint8_t *key;
    size_t key_len;
    size_t order; /* position in the spec, to keep an app's secrets in order */
} app_secret;

struct mc_app_secrets {
    app_secret *v; /* sorted by app id, then order */
    size_t n, cap;
};

void mc_app_secrets_free(mc_app_secrets *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].app_id);
        mc_wipe(s->v[i].key, s->v[i].key_len);
        free(s->v[i].key);
    }
    free(s->v);
    free(s);
}

/* Adds one "app=secret" entry (already trimmed, not empty). where names it
 * for errors ("entry 2", "'/etc/secrets' line 7"). */
static int add_entry(void *arg, const char *entry, size_t len, const char *where, char *err,
                     size_t errlen)
{
    mc_app_secrets *s = arg;
    const char *eq = memchr(entry, '=', len);
    if (!eq) {
        snprintf(err, errlen, ERR_PREFIX ": %s has no '=' (expected appId=secret)", where);
        return -1;
    }
    const char *app = entry, *secret = eq + 1;
    size_t app_len = (size_t)(eq - entry), secret_len = len - app_len - 1;
    mc_trim(&app, &app_len);
    mc_trim(&secret, &secret_len);
    if (app_len == 0) {
        snprintf(err, errlen, ERR_PREFIX ": %s has an empty app id (expected appId=secret)", where);
        return -1;
    }
    int shown = app_len > 64 ? 64 : (int)app_len;
    static const char prefix[] = "whsec_";
    if (secret_len >= sizeof prefix - 1 && memcmp(secret, prefix, sizeof prefix - 1) == 0) {
        secret += sizeof prefix - 1;
        secret_len -= sizeof prefix - 1;
    }
    if (secret_len == 0) {
        snprintf(err, errlen, ERR_PREFIX ": %s (app '%.*s'): secret is empty", where, shown, app);
        return -1;
    }
    size_t cap = MC_BASE64_DECODED_MAX(secret_len), key_len = 0;
    uint8_t *key = malloc(cap);
    if (!key) {
        snprintf(err, errlen, ERR_PREFIX ": out of memory");
        return -1;
    }
    if (mc_base64_decode(secret, secret_len, key, cap, &key_len) != 0 || key_len == 0) {
        mc_wipe(key, cap);
        free(key);
        snprintf(err, errlen, ERR_PREFIX ": %s (app '%.*s'): secret is not base64", where, shown,
                 app);
        return -1;
    }
    char *app_id = malloc(app_len + 1);
    if (app_id && s->n == s->cap) {
        size_t bigger = s->cap ? s->cap * 2 : 8;
        app_secret *v = realloc(s->v, bigger * sizeof *v);
        if (v) {
            s->v = v;
            s->cap = bigger;
        }
    }
    if (!app_id || s->n == s->cap) {
        mc_wipe(key, cap);
        free(key);
        free(app_id);
        snprintf(err, errlen, ERR_PREFIX ": out of memory");
        return -1;
    }
    memcpy(app_id, app, app_len);
    app_id[app_len] = '\0';
    s->v[s->n] = (app_secret){app_id, key, key_len, s->n};
    s->n++;
    return 0;
}

static int by_app_then_order(const void *a, const void *b)
{
    const app_secret *x = a, *y = b;
    int c = strcmp(x->app_id, y->app_id);
    if (c)
        return c;
    return (x->order > y->order) - (x->order < y->order);
}

mc_app_secrets *mc_app_secrets_parse(const char *spec, char *err, size_t errlen)
{
    mc_app_secrets *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, ERR_PREFIX ": out of memory");
        return NULL;
    }
    if (mc_config_each_entry(spec, ERR_PREFIX, add_entry, s, err, errlen) != 0) {
        mc_app_secrets_free(s);
        return NULL;
    }
    if (s->n > 1)
        qsort(s->v, s->n, sizeof *s->v, by_app_then_order);
    return s;
}

/* The first secret of app_id (the rest follow it), or NULL; *count set. */
static const app_secret *find_app(const mc_app_secrets *s, const char *app_id, size_t *count)
{
    *count = 0;
    if (!s || !app_id || s->n == 0)
        return NULL;
    size_t lo = 0, hi = s->n; /* the first entry >= app_id is in [lo, hi] */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(s->v[mid].app_id, app_id) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo;
    while (end < s->n && strcmp(s->v[end].app_id, app_id) == 0)
        end++;
    *count = end - lo;
    return *count ? &s->v[lo] : NULL;
}

size_t mc_app_secrets_count(const mc_app_secrets *s, const char *app_id)
{
    size_t count;
    find_app(s, app_id, &count);
    return count;
}

size_t mc_webhook_signature(const mc_app_secrets *s, const char *app_id, const char *msg_id,
                            int64_t timestamp_s, const void *body, size_t bodylen, char *out,
                            size_t outlen)
{
    if (out && outlen)
        out[0] = '\0';
    size_t count;
    const app_secret *first = find_app(s, app_id, &count);
    if (!count || !out || outlen / MC_WEBHOOK_SIGNATURE_LEN < count)
        return 0;
    char ts[24];
    int ts_len = snprintf(ts, sizeof ts, "%" PRId64, timestamp_s);
    if (!msg_id)
        msg_id = "";
    size_t id_len = strlen(msg_id), pos = 0;
    for (size_t i = 0; i < count; i++) {
        mc_hmac_sha256_ctx c;
        mc_hmac_sha256_init(&c, first[i].key, first[i].key_len);
        mc_hmac_sha256_update(&c, msg_id, id_len);
        mc_hmac_sha256_update(&c, ".", 1);
        mc_hmac_sha256_update(&c, ts, (size_t)ts_len);
        mc_hmac_sha256_update(&c, ".", 1);
        if (bodylen)
            mc_hmac_sha256_update(&c, body, bodylen);
        uint8_t mac[MC_SHA256_LEN];
        mc_hmac_sha256_final(&c, mac);
        if (i)
            out[pos++] = ' ';
        memcpy(out + pos, "v1,", 3);
        pos += 3;
        pos += mc_base64_encode(mac, sizeof mac, out + pos, outlen - pos);
    }
    return pos;
}
