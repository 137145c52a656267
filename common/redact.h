/* What of a callback must never be shown: credentials in a URL and the
 * values of headers and query parameters whose names say they are secret.
 * Every answer that shows a task's callback (the task query, the console)
 * goes through here. Pure functions, any thread. */
#ifndef MOONCAKE_REDACT_H
#define MOONCAKE_REDACT_H

#include <stdbool.h>

#define MC_REDACTED "[redacted]"

/* Whether a header or query parameter called name (any case) carries a
 * secret: Authorization, Cookie, X-Api-Key, anything naming a token, key,
 * secret, password, signature, session, hmac, otp or code, percent-encoded
 * or not. */
bool mc_secret_name(const char *name);
/* url with the user info and the values of secret query parameters replaced
 * by MC_REDACTED. Caller frees it; NULL on ENOMEM. */
char *mc_url_redacted(const char *url);
/* text with every URL in it (anything around a "://") redacted as above:
 * for messages that quote a URL. Caller frees it; NULL on ENOMEM. */
char *mc_text_redacted(const char *text);

#endif
