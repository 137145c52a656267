/* Signing outgoing calls the Standard Webhooks way (www.standardwebhooks.com):
 * the executor adds webhook-id, webhook-timestamp and webhook-signature, the
 * last being "v1,<base64 HMAC-SHA256>" once per secret of the task's app, so a
 * receiver can check that a call came from mooncake and was not replayed.
 * The hashing and base64 are in crypto.h. A secret set is read-only after
 * parsing, so threads may share it. */
#ifndef MOONCAKE_WEBHOOK_H
#define MOONCAKE_WEBHOOK_H

#include <stddef.h>
#include <stdint.h>

#include "crypto.h"

/* The signing secrets of every app. */
typedef struct mc_app_secrets mc_app_secrets;

/* Parses MOONCAKE_APP_SECRETS. spec is NULL or "" (no app has a secret),
 * "app=secret,app=secret,..." or "@/path/to/file" with one app=secret a line
 * (blank lines and lines starting with '#' skipped). Whitespace around
 * entries, app ids and secrets is trimmed, and empty comma-separated entries
 * are skipped. A secret is "whsec_<base64 key>" or the bare base64 key. An app
 * given several times signs with each of its secrets, in the order given (key
 * rotation). Returns a set the caller owns (mc_app_secrets_free), possibly
 * empty; NULL with a line in err naming the offending entry (never the secret)
 * when an entry has no '=', an empty app id, or a secret that is empty or not
 * base64, when the file cannot be read, or on ENOMEM. */
mc_app_secrets *mc_app_secrets_parse(const char *spec, char *err, size_t errlen);
/* Frees the set and wipes the keys. NULL is fine. */
void mc_app_secrets_free(mc_app_secrets *s);
/* How many secrets app_id has (0 for an unknown app or a NULL set). */
size_t mc_app_secrets_count(const mc_app_secrets *s, const char *app_id);

/* Bytes one secret adds to the webhook-signature value: "v1," + 44 base64
 * characters + the separating space (or, for the last, the NUL). A buffer of
 * mc_app_secrets_count() * MC_WEBHOOK_SIGNATURE_LEN bytes always suffices. */
#define MC_WEBHOOK_SIGNATURE_LEN (3 + MC_BASE64_LEN(MC_SHA256_LEN) + 1)

/* Writes the webhook-signature header value for a call to app_id: for each of
 * its secrets, "v1," + base64(HMAC-SHA256(key, msg_id "." timestamp_s "."
 * body)), space-separated and NUL-terminated. Returns the length written
 * (NUL excluded). Returns 0 when the app has no secret (send no header) or
 * when outlen is too small; out then holds "" if outlen > 0. body may be NULL
 * when bodylen is 0. */
size_t mc_webhook_signature(const mc_app_secrets *s, const char *app_id, const char *msg_id,
                            int64_t timestamp_s, const void *body, size_t bodylen, char *out,
                            size_t outlen);

#endif
