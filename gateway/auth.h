/* Bearer tokens of the gateway: app tokens (MOONCAKE_APP_TOKENS, appId=token
 * pairs; repeat an app to rotate) act on their own appId only; inner tokens
 * (MOONCAKE_INNER_TOKENS) are for service-to-service callers of
 * /inner/submit and act on any appId; admin tokens (MOONCAKE_ADMIN_TOKENS)
 * are operators', for the console: every route but /inner/submit, any appId. Only SHA-256 digests
 * of the tokens are kept, and a lookup compares the presented token's digest with every one in
 * constant time, so neither the timing nor the length of a guess tells how
 * close it came. */
#ifndef MOONCAKE_AUTH_H
#define MOONCAKE_AUTH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct mc_tokens mc_tokens;

/* Parses the three lists ("a=t1,b=t2" / "t1,t2" / "t1,t2", or "@file" with
 * one entry per line and # comments). Caller owns the result
 * (mc_tokens_free). NULL with a line naming the variable and entry in err on
 * a malformed entry or an unreadable file. */
mc_tokens *mc_tokens_parse(const char *app_tokens, const char *inner_tokens,
                           const char *admin_tokens, char *err, size_t errlen);
void mc_tokens_free(mc_tokens *t);
/* How many tokens were configured, app and inner together. */
size_t mc_tokens_count(const mc_tokens *t);

/* What a presented token may do. */
typedef struct mc_grant {
    bool known; /* it is some configured token */
    bool inner; /* it is an inner token */
    bool admin; /* it is an admin token */
    /* opaque: the digest, to check apps with mc_grant_allows() */
    unsigned char digest[32];
} mc_grant;

/* Looks up the token (len bytes, not NUL-terminated). */
mc_grant mc_tokens_lookup(const mc_tokens *t, const char *token, size_t len);
/* True when the grant is an admin token, or an app token configured for
 * app_id. */
bool mc_grant_allows(const mc_tokens *t, const mc_grant *g, const char *app_id);

/* The app ids of the app tokens, once each: every one configured (every),
 * or those the grant's token is configured for. Caller owns the array; NULL
 * on ENOMEM. Any thread. */
json_t *mc_tokens_apps(const mc_tokens *t, const mc_grant *g, bool every);

#endif
