/* Signing outgoing calls the Standard Webhooks way (www.standardwebhooks.com):
 * the executor adds webhook-id, webhook-timestamp and webhook-signature, the
 * last being "v1,<base64 HMAC-SHA256>" once per secret of the task's app, so a
 * receiver can check that a call came from mooncake and was not replayed.
 * SHA-256 (FIPS 180-4), HMAC (RFC 2104) and base64 (RFC 4648) are here too,
 * written out rather than taken from OpenSSL to keep the dependencies to the
 * ones the build already has. Nothing here keeps state between calls; a
 * secret set is read-only after parsing, so threads may share it. */
#ifndef MOONCAKE_WEBHOOK_H
#define MOONCAKE_WEBHOOK_H

#include <stddef.h>
#include <stdint.h>

#define MC_SHA256_LEN 32
#define MC_SHA256_BLOCK 64

/* Incremental SHA-256: init, update any number of times, final. The fields
 * are private; the struct is public only so it can live on the stack. */
typedef struct mc_sha256_ctx {
    uint32_t state[8];
    uint64_t total_bytes;
    uint8_t block[MC_SHA256_BLOCK];
    size_t block_fill;
} mc_sha256_ctx;

void mc_sha256_init(mc_sha256_ctx *c);
void mc_sha256_update(mc_sha256_ctx *c, const void *data, size_t len);
/* Writes the digest and wipes the context (init it again to reuse it). */
void mc_sha256_final(mc_sha256_ctx *c, uint8_t out[MC_SHA256_LEN]);
/* The SHA-256 digest of msg[0..len). */
void mc_sha256(const void *msg, size_t len, uint8_t out[MC_SHA256_LEN]);

/* Incremental HMAC-SHA256, so the signed content "<id>.<timestamp>.<body>"
 * need not be copied into one buffer. The key is absorbed by init and not
 * kept. Fields private, as above. */
typedef struct mc_hmac_sha256_ctx {
    mc_sha256_ctx inner;
    mc_sha256_ctx outer;
} mc_hmac_sha256_ctx;

void mc_hmac_sha256_init(mc_hmac_sha256_ctx *c, const void *key, size_t keylen);
void mc_hmac_sha256_update(mc_hmac_sha256_ctx *c, const void *data, size_t len);
/* Writes the MAC and wipes the context. */
void mc_hmac_sha256_final(mc_hmac_sha256_ctx *c, uint8_t out[MC_SHA256_LEN]);
/* HMAC-SHA256(key, msg) in one call. */
void mc_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t msglen,
                    uint8_t out[MC_SHA256_LEN]);

/* Characters base64 needs for n bytes, padding included, NUL excluded. */
#define MC_BASE64_LEN(n) ((((size_t)(n) + 2) / 3) * 4)
/* Bytes at most that len base64 characters decode to. */
#define MC_BASE64_DECODED_MAX(len) (((size_t)(len) + 3) / 4 * 3)

/* Standard base64 (RFC 4648 section 4, '+' and '/', '=' padding) of in[0..len)
 * into out, NUL-terminated. Returns the characters written (NUL excluded);
 * 0 when outlen < MC_BASE64_LEN(len) + 1 (out is then untouched) - and also,
 * correctly, for len 0, which writes "". */
size_t mc_base64_encode(const void *in, size_t len, char *out, size_t outlen);
/* Decodes in[0..len) into out (outcap bytes; MC_BASE64_DECODED_MAX(len) is
 * always enough) and sets *outlen. Padding may be present or absent, but if
 * present it must complete the last group of four. Returns -1 on any other
 * character (whitespace and the URL-safe '-' '_' included), misplaced '=', an
 * impossible length, or too small an out. Non-zero bits left over in the last
 * character are ignored. */
int mc_base64_decode(const char *in, size_t len, uint8_t *out, size_t outcap, size_t *outlen);

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
