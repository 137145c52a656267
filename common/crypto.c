/* SHA-256 after FIPS 180-4 section 6.2, HMAC after RFC 2104, base64 after
 * RFC 4648 (see crypto.h). */
#include "crypto.h"

#include <stdbool.h>
#include <string.h>

void mc_wipe(void *p, size_t n)
{
    volatile unsigned char *v = p;
    while (n--)
        *v++ = 0;
}

/* ---- SHA-256 ---- */

/* FIPS 180-4 4.2.2: the first 32 bits of the fractional parts of the cube
 * roots of the first 64 primes. */
static const uint32_t round_constants[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u,
    0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu,
    0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu,
    0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau, 0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u,
    0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu,
    0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu,
    0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u, 0x19a4c116u,
    0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u,
    0xc67178f2u};

static uint32_t rotr(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32 - n));
}

static uint32_t load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void store_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* One 64-byte block into the state (FIPS 180-4 6.2.2 steps 1-4). */
static void compress(uint32_t state[8], const uint8_t block[MC_SHA256_BLOCK])
{
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = load_be32(block + 4 * t);
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
    for (int t = 0; t < 64; t++) {
        uint32_t big_s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
        uint32_t choose = (e & f) ^ (~e & g);
        uint32_t t1 = h + big_s1 + choose + round_constants[t] + w[t];
        uint32_t big_s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
        uint32_t majority = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = big_s0 + majority;
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
    state[4] += e;
    state[5] += f;
    state[6] += g;
    state[7] += h;
    mc_wipe(w, sizeof w); /* the schedule of an HMAC key block is key material */
}

void mc_sha256_init(mc_sha256_ctx *c)
{
    /* FIPS 180-4 5.3.3: fractional parts of the square roots of the first 8 primes. */
    static const uint32_t initial[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
                                        0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};
    memcpy(c->state, initial, sizeof initial);
    c->total_bytes = 0;
    c->block_fill = 0;
}

void mc_sha256_update(mc_sha256_ctx *c, const void *data, size_t len)
{
    const uint8_t *p = data;
    c->total_bytes += len;
    if (c->block_fill) {
        size_t take = MC_SHA256_BLOCK - c->block_fill;
        if (take > len)
            take = len;
        memcpy(c->block + c->block_fill, p, take);
        c->block_fill += take;
        p += take;
        len -= take;
        if (c->block_fill < MC_SHA256_BLOCK)
            return;
        compress(c->state, c->block);
        c->block_fill = 0;
    }
    /* Whole blocks straight from the caller's memory: a large body is not copied. */
    for (; len >= MC_SHA256_BLOCK; p += MC_SHA256_BLOCK, len -= MC_SHA256_BLOCK)
        compress(c->state, p);
    memcpy(c->block, p, len);
    c->block_fill = len;
}

void mc_sha256_final(mc_sha256_ctx *c, uint8_t out[MC_SHA256_LEN])
{
    /* FIPS 180-4 5.1.1: a 1 bit, zeros up to 56 mod 64 bytes, the length in bits. */
    uint64_t bits = c->total_bytes * 8;
    c->block[c->block_fill++] = 0x80;
    if (c->block_fill > MC_SHA256_BLOCK - 8) {
        memset(c->block + c->block_fill, 0, MC_SHA256_BLOCK - c->block_fill);
        compress(c->state, c->block);
        c->block_fill = 0;
    }
    memset(c->block + c->block_fill, 0, MC_SHA256_BLOCK - 8 - c->block_fill);
    store_be32(c->block + 56, (uint32_t)(bits >> 32));
    store_be32(c->block + 60, (uint32_t)bits);
    compress(c->state, c->block);
    for (int i = 0; i < 8; i++)
        store_be32(out + 4 * i, c->state[i]);
    mc_wipe(c, sizeof *c);
}

void mc_sha256(const void *msg, size_t len, uint8_t out[MC_SHA256_LEN])
{
    mc_sha256_ctx c;
    mc_sha256_init(&c);
    mc_sha256_update(&c, msg, len);
    mc_sha256_final(&c, out);
}

/* ---- HMAC-SHA256 ---- */

void mc_hmac_sha256_init(mc_hmac_sha256_ctx *c, const void *key, size_t keylen)
{
    /* RFC 2104: a key longer than a block is replaced by its hash; the key is
     * zero-padded to a block and XORed with 0x36 (inner) and 0x5c (outer).
     * Both pads are absorbed now, so the key itself is not kept. */
    uint8_t k0[MC_SHA256_BLOCK] = {0};
    if (keylen > MC_SHA256_BLOCK)
        mc_sha256(key, keylen, k0);
    else if (keylen)
        memcpy(k0, key, keylen);
    uint8_t pad[MC_SHA256_BLOCK];
    for (size_t i = 0; i < sizeof pad; i++)
        pad[i] = k0[i] ^ 0x36;
    mc_sha256_init(&c->inner);
    mc_sha256_update(&c->inner, pad, sizeof pad);
    for (size_t i = 0; i < sizeof pad; i++)
        pad[i] = k0[i] ^ 0x5c;
    mc_sha256_init(&c->outer);
    mc_sha256_update(&c->outer, pad, sizeof pad);
    mc_wipe(k0, sizeof k0);
    mc_wipe(pad, sizeof pad);
}

void mc_hmac_sha256_update(mc_hmac_sha256_ctx *c, const void *data, size_t len)
{
    mc_sha256_update(&c->inner, data, len);
}

void mc_hmac_sha256_final(mc_hmac_sha256_ctx *c, uint8_t out[MC_SHA256_LEN])
{
    uint8_t inner[MC_SHA256_LEN];
    mc_sha256_final(&c->inner, inner);
    mc_sha256_update(&c->outer, inner, sizeof inner);
    mc_sha256_final(&c->outer, out);
    mc_wipe(inner, sizeof inner);
}

void mc_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t msglen,
                    uint8_t out[MC_SHA256_LEN])
{
    mc_hmac_sha256_ctx c;
    mc_hmac_sha256_init(&c, key, keylen);
    mc_hmac_sha256_update(&c, msg, msglen);
    mc_hmac_sha256_final(&c, out);
}

/* ---- base64 ---- */

static const char base64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t mc_base64_encode(const void *in, size_t len, char *out, size_t outlen)
{
    if (len / 3 >= SIZE_MAX / 4 - 1)
        return 0; /* MC_BASE64_LEN would overflow */
    size_t need = MC_BASE64_LEN(len);
    if (!out || outlen < need + 1)
        return 0;
    const uint8_t *p = in;
    char *o = out;
    size_t i = 0;
    for (; i + 3 <= len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *o++ = base64_alphabet[v >> 18];
        *o++ = base64_alphabet[(v >> 12) & 63];
        *o++ = base64_alphabet[(v >> 6) & 63];
        *o++ = base64_alphabet[v & 63];
    }
    if (len - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        *o++ = base64_alphabet[v >> 18];
        *o++ = base64_alphabet[(v >> 12) & 63];
        *o++ = '=';
        *o++ = '=';
    } else if (len - i == 2) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
        *o++ = base64_alphabet[v >> 18];
        *o++ = base64_alphabet[(v >> 12) & 63];
        *o++ = base64_alphabet[(v >> 6) & 63];
        *o++ = '=';
    }
    *o = '\0';
    return need;
}

/* The 6-bit value of a base64 character, -1 for anything else ('=' included). */
static int base64_value(char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    if (ch == '+')
        return 62;
    if (ch == '/')
        return 63;
    return -1;
}

int mc_base64_decode(const char *in, size_t len, uint8_t *out, size_t outcap, size_t *outlen)
{
    size_t data = len;
    while (data > 0 && in[data - 1] == '=' && len - data < 2)
        data--;
    if (data < len && len % 4 != 0)
        return -1; /* padding that does not complete a group */
    if (data % 4 == 1)
        return -1; /* one character carries only 6 bits: no whole byte */
    size_t n = data / 4 * 3 + (data % 4 ? data % 4 - 1 : 0);
    if (n > outcap)
        return -1;
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < data; i++) {
        int v = base64_value(in[i]);
        if (v < 0)
            return -1; /* a stray character, or '=' before the end */
        acc = (acc << 6 | (uint32_t)v) & 0xffffff;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (uint8_t)(acc >> bits);
        }
    }
    *outlen = o;
    return 0;
}
