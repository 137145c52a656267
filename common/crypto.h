/* SHA-256 (FIPS 180-4), HMAC-SHA256 (RFC 2104) and base64 (RFC 4648), written
 * out rather than taken from OpenSSL to keep the dependencies to the ones the
 * build already has: webhook signing, the gateway's token checks and the
 * tools use them. Nothing here keeps state between calls; any thread. */
#ifndef MOONCAKE_CRYPTO_H
#define MOONCAKE_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

/* memset to zero that the compiler may not drop as a dead store: for key
 * material about to be freed or to go out of scope. */
void mc_wipe(void *p, size_t n);

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

#endif
