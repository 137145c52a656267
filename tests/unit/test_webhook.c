/* Unit tests of webhook signing: SHA-256 against the NIST example vectors,
 * HMAC-SHA256 against RFC 4231, base64 against RFC 4648 and its rejections,
 * the parser of MOONCAKE_APP_SECRETS (lists, files, rotation, errors that
 * never show a secret), and webhook-signature values computed independently
 * with Python. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "crypto.h"
#include "webhook.h"

static void to_hex(const uint8_t *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static void check_sha256(const void *msg, size_t len, const char *want, const char *name)
{
    uint8_t d[MC_SHA256_LEN];
    char hex[2 * MC_SHA256_LEN + 1];
    mc_sha256(msg, len, d);
    to_hex(d, sizeof d, hex);
    CHECK(strcmp(hex, want) == 0, "SHA-256 of %s: got %s, want %s", name, hex, want);
}

static void test_sha256(void)
{
    /* FIPS 180-4 examples (NIST CSRC "SHA256.pdf") and the million 'a'. */
    check_sha256("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                 "the empty message");
    check_sha256("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
                 "\"abc\"");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    check_sha256(m448, strlen(m448),
                 "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
                 "the 448-bit message");
    char *million = malloc(1000000);
    memset(million, 'a', 1000000);
    const char *want_million = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
    check_sha256(million, 1000000, want_million, "one million 'a'");

    /* Incremental in odd pieces, crossing block boundaries at every offset,
     * gives the same digest. */
    mc_sha256_ctx c;
    mc_sha256_init(&c);
    size_t off = 0, piece = 1;
    while (off < 1000000) {
        size_t n = piece < 1000000 - off ? piece : 1000000 - off;
        mc_sha256_update(&c, million + off, n);
        off += n;
        piece = piece % 131 + 1;
    }
    uint8_t d[MC_SHA256_LEN];
    char hex[2 * MC_SHA256_LEN + 1];
    mc_sha256_final(&c, d);
    to_hex(d, sizeof d, hex);
    CHECK(strcmp(hex, want_million) == 0, "incremental million 'a': %s", hex);
    free(million);

    /* Padding edges: 55 bytes leave room for the length in the final block,
     * 56 do not. For every length 0-130 the digest of bytes (i * 31 + len) %
     * 256, fed whole and fed one byte at a time, must agree, and the digest
     * of all the digests must equal Python's: python3 -c 'import hashlib;
     * print(hashlib.sha256(b"".join(hashlib.sha256(bytes((i*31+n)%256 for i
     * in range(n))).digest() for n in range(131))).hexdigest())' */
    mc_sha256_ctx all;
    mc_sha256_init(&all);
    for (size_t len = 0; len <= 130; len++) {
        uint8_t msg[130], one_shot[MC_SHA256_LEN], bytewise[MC_SHA256_LEN];
        for (size_t i = 0; i < len; i++)
            msg[i] = (uint8_t)(i * 31 + len);
        mc_sha256(msg, len, one_shot);
        mc_sha256_init(&c);
        for (size_t i = 0; i < len; i++)
            mc_sha256_update(&c, msg + i, 1);
        mc_sha256_final(&c, bytewise);
        CHECK(memcmp(one_shot, bytewise, sizeof one_shot) == 0, "length %zu", len);
        mc_sha256_update(&all, one_shot, sizeof one_shot);
    }
    mc_sha256_final(&all, d);
    to_hex(d, sizeof d, hex);
    CHECK(strcmp(hex, "843b74bb6b8c3bad6ab503092c58d4dfb0b793a4fd17e73232ccf81436833a33") == 0,
          "digests of lengths 0-130: %s", hex);
}

static void test_hmac(void)
{
    /* RFC 4231 section 4, test cases 1-7 (case 5 truncated to 128 bits). */
    uint8_t key20_0b[20], key20_aa[20], key25[25], key20_0c[20], key131[131], data50_dd[50],
        data50_cd[50];
    memset(key20_0b, 0x0b, sizeof key20_0b);
    memset(key20_aa, 0xaa, sizeof key20_aa);
    for (int i = 0; i < 25; i++)
        key25[i] = (uint8_t)(i + 1);
    memset(key20_0c, 0x0c, sizeof key20_0c);
    memset(key131, 0xaa, sizeof key131);
    memset(data50_dd, 0xdd, sizeof data50_dd);
    memset(data50_cd, 0xcd, sizeof data50_cd);
    const char *m6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    const char *m7 = "This is a test using a larger than block-size key and a larger than "
                     "block-size data. The key needs to be hashed before being used by the HMAC "
                     "algorithm.";
    struct {
        const void *key;
        size_t key_len;
        const void *data;
        size_t data_len;
        const char *want;
    } cases[] = {
        {key20_0b, 20, "Hi There", 8,
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
        {"Jefe", 4, "what do ya want for nothing?", 28,
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
        {key20_aa, 20, data50_dd, 50,
         "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
        {key25, 25, data50_cd, 50,
         "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
        {key20_0c, 20, "Test With Truncation", 20, "a3b6167473100ee06e0c796c2955552b"},
        {key131, 131, m6, strlen(m6),
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
        {key131, 131, m7, strlen(m7),
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint8_t mac[MC_SHA256_LEN];
        char hex[2 * MC_SHA256_LEN + 1];
        mc_hmac_sha256(cases[i].key, cases[i].key_len, cases[i].data, cases[i].data_len, mac);
        to_hex(mac, sizeof mac, hex);
        size_t n = strlen(cases[i].want);
        CHECK(strncmp(hex, cases[i].want, n) == 0, "RFC 4231 case %zu: got %s", i + 1, hex);

        /* The incremental form, split in the middle, agrees. */
        mc_hmac_sha256_ctx c;
        uint8_t mac2[MC_SHA256_LEN];
        mc_hmac_sha256_init(&c, cases[i].key, cases[i].key_len);
        mc_hmac_sha256_update(&c, cases[i].data, cases[i].data_len / 2);
        mc_hmac_sha256_update(&c, (const char *)cases[i].data + cases[i].data_len / 2,
                              cases[i].data_len - cases[i].data_len / 2);
        mc_hmac_sha256_final(&c, mac2);
        CHECK(memcmp(mac, mac2, sizeof mac) == 0, "RFC 4231 case %zu incrementally", i + 1);
    }
}

static void test_base64(void)
{
    /* RFC 4648 section 10. */
    const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    const char *coded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (int i = 0; i < 7; i++) {
        size_t n = strlen(plain[i]);
        char out[16];
        memset(out, 'x', sizeof out);
        size_t w = mc_base64_encode(plain[i], n, out, sizeof out);
        CHECK(w == strlen(coded[i]) && strcmp(out, coded[i]) == 0, "encode '%s': '%s' (%zu)",
              plain[i], out, w);
        CHECK(MC_BASE64_LEN(n) == strlen(coded[i]));

        uint8_t dec[16];
        size_t dlen = 99;
        CHECK(mc_base64_decode(coded[i], strlen(coded[i]), dec, sizeof dec, &dlen) == 0 &&
                  dlen == n && memcmp(dec, plain[i], n) == 0,
              "decode '%s'", coded[i]);
        /* Without the padding too. */
        size_t unpadded = strlen(coded[i]);
        while (unpadded && coded[i][unpadded - 1] == '=')
            unpadded--;
        dlen = 99;
        CHECK(mc_base64_decode(coded[i], unpadded, dec, sizeof dec, &dlen) == 0 && dlen == n &&
                  memcmp(dec, plain[i], n) == 0,
              "decode '%.*s' unpadded", (int)unpadded, coded[i]);
        CHECK(MC_BASE64_DECODED_MAX(strlen(coded[i])) >= n);
    }

    /* Too small an output: 0 and nothing written. "Zm9v" needs 5 bytes. */
    char small[5] = "keep";
    CHECK(mc_base64_encode("foo", 3, small, 4) == 0 && strcmp(small, "keep") == 0);
    CHECK(mc_base64_encode("foo", 3, small, 5) == 4 && strcmp(small, "Zm9v") == 0);
    uint8_t two[2];
    size_t dlen;
    CHECK(mc_base64_decode("Zm9v", 4, two, sizeof two, &dlen) == -1, "3 bytes into 2");

    /* Every byte value survives a round trip. */
    uint8_t all[256], back[256];
    for (int i = 0; i < 256; i++)
        all[i] = (uint8_t)i;
    char enc[MC_BASE64_LEN(256) + 1];
    CHECK(mc_base64_encode(all, 256, enc, sizeof enc) == MC_BASE64_LEN(256));
    CHECK(mc_base64_decode(enc, strlen(enc), back, sizeof back, &dlen) == 0 && dlen == 256 &&
          memcmp(all, back, 256) == 0);

    const char *bad[] = {
        "Zg=",      /* padding that does not complete the group */
        "Z",        /* a lone character is not a byte */
        "Zm9vY",    /* likewise after a full group */
        "Zg==Zg==", /* padding in the middle */
        "Z=g=",     /* likewise */
        "Zm 9v",    /* whitespace */
        "Zm9v\n",   /* a trailing newline */
        "Zm-_",     /* the URL-safe alphabet */
        "Zm9v!",    /* punctuation */
        "Zg===",    /* three pad characters */
        "====",     /* nothing but padding */
        "Zm\0v",    /* a NUL inside */
    };
    size_t bad_len[] = {3, 1, 5, 8, 4, 5, 5, 4, 5, 5, 4, 4};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint8_t out[16];
        CHECK(mc_base64_decode(bad[i], bad_len[i], out, sizeof out, &dlen) == -1, "'%s' accepted",
              bad[i]);
    }
}

/* A Standard Webhooks example secret (from the specification's examples). */
#define SPEC_SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

static void test_secrets_parse(void)
{
    char err[256];
    mc_app_secrets *s = mc_app_secrets_parse(NULL, err, sizeof err);
    CHECK(s != NULL && mc_app_secrets_count(s, "shop") == 0, "NULL spec: an empty set");
    mc_app_secrets_free(s);
    s = mc_app_secrets_parse("", err, sizeof err);
    CHECK(s != NULL && mc_app_secrets_count(s, "shop") == 0, "\"\": an empty set");
    mc_app_secrets_free(s);
    s = mc_app_secrets_parse(" , ,", err, sizeof err);
    CHECK(s != NULL && mc_app_secrets_count(s, "shop") == 0, "blank entries: an empty set");
    mc_app_secrets_free(s);

    /* Several apps, one rotating (a prefixed and a bare secret), whitespace. */
    s = mc_app_secrets_parse(" shop = " SPEC_SECRET ", billing=whsec_Zm9vYmFy,"
                             "shop=c2Vjb25kLWtleS1mb3Itcm90YXRpb24=,",
                             err, sizeof err);
    CHECK(s != NULL, "%s", err);
    CHECK(mc_app_secrets_count(s, "shop") == 2);
    CHECK(mc_app_secrets_count(s, "billing") == 1);
    CHECK(mc_app_secrets_count(s, "sho") == 0 && mc_app_secrets_count(s, "shopx") == 0);
    CHECK(mc_app_secrets_count(s, "other") == 0 && mc_app_secrets_count(s, NULL) == 0);
    CHECK(mc_app_secrets_count(NULL, "shop") == 0);
    mc_app_secrets_free(s);

    /* Errors name the entry and the app, and never show the secret. */
    struct {
        const char *spec;
        const char *want;
    } bad[] = {
        {"shop=" SPEC_SECRET ",billing=whsec_not*base64",
         "MOONCAKE_APP_SECRETS: entry 2 (app 'billing'): secret is not base64"},
        {"shop=" SPEC_SECRET ",shop=secretwithoutbase64padding!",
         "MOONCAKE_APP_SECRETS: entry 2 (app 'shop'): secret is not base64"},
        {"shop=whsec_", "MOONCAKE_APP_SECRETS: entry 1 (app 'shop'): secret is empty"},
        {"shop=", "MOONCAKE_APP_SECRETS: entry 1 (app 'shop'): secret is empty"},
        {"shop=whsec_===", "MOONCAKE_APP_SECRETS: entry 1 (app 'shop'): secret is not base64"},
        {"a=Zm9v,,whsec_c2VjcmV0",
         "MOONCAKE_APP_SECRETS: entry 3 has no '=' (expected appId=secret)"},
        {" =Zm9v", "MOONCAKE_APP_SECRETS: entry 1 has an empty app id (expected appId=secret)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = '\0';
        s = mc_app_secrets_parse(bad[i].spec, err, sizeof err);
        CHECK(s == NULL, "'%s' accepted", bad[i].spec);
        mc_app_secrets_free(s);
        CHECK(strcmp(err, bad[i].want) == 0, "'%s': got \"%s\"", bad[i].spec, err);
        CHECK(!strstr(err, "MfKQ9r8") && !strstr(err, "c2VjcmV0") && !strstr(err, "not*base64") &&
                  !strstr(err, "padding!"),
              "the error shows a secret: %s", err);
    }

    /* A file: comments, blank lines, CRLF, indentation. */
    char path[] = "/tmp/mooncake-test-secrets-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    const char *file = "# secrets for the test\n"
                       "\n"
                       "shop=" SPEC_SECRET "\r\n"
                       "   # rotated in:\n"
                       "  shop = whsec_c2Vjb25kLWtleS1mb3Itcm90YXRpb24=  \n"
                       "billing=Zm9vYmFy"; /* no final newline */
    CHECK(write(fd, file, strlen(file)) == (ssize_t)strlen(file));
    close(fd);
    char spec[64];
    snprintf(spec, sizeof spec, "@%s", path);
    s = mc_app_secrets_parse(spec, err, sizeof err);
    CHECK(s != NULL, "%s", err);
    CHECK(mc_app_secrets_count(s, "shop") == 2 && mc_app_secrets_count(s, "billing") == 1);
    mc_app_secrets_free(s);

    /* A bad line in a file is named by its line number. */
    fd = open(path, O_WRONLY | O_TRUNC);
    const char *bad_file = "shop=" SPEC_SECRET "\n# comment\nshop=whsec_@@@@\n";
    CHECK(write(fd, bad_file, strlen(bad_file)) == (ssize_t)strlen(bad_file));
    close(fd);
    s = mc_app_secrets_parse(spec, err, sizeof err);
    CHECK(s == NULL);
    char want[160];
    snprintf(want, sizeof want,
             "MOONCAKE_APP_SECRETS: '%s' line 3 (app 'shop'): secret is not base64", path);
    CHECK(strcmp(err, want) == 0, "got \"%s\"", err);
    unlink(path);

    s = mc_app_secrets_parse("@/nonexistent/mooncake-secrets", err, sizeof err);
    CHECK(s == NULL && strstr(err, "MOONCAKE_APP_SECRETS: cannot open '/nonexistent/"), "%s", err);
}

static void test_signature(void)
{
    char err[256], out[4 * MC_WEBHOOK_SIGNATURE_LEN];
    mc_app_secrets *s = mc_app_secrets_parse("shop=" SPEC_SECRET, err, sizeof err);
    CHECK(s != NULL, "%s", err);

    /* The example of the Standard Webhooks specification; the same value from
     * python3 -c 'import hmac,hashlib,base64;
     *   k=base64.b64decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
     *   m=b"msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330." + b"{\"test\": 2432232314}";
     *   print("v1,"+base64.b64encode(hmac.new(k,m,hashlib.sha256).digest()).decode())' */
    const char *body = "{\"test\": 2432232314}";
    const char *want = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    size_t n = mc_webhook_signature(s, "shop", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body,
                                    strlen(body), out, sizeof out);
    CHECK(n == strlen(want) && strcmp(out, want) == 0, "got '%s'", out);
    CHECK(n + 1 == MC_WEBHOOK_SIGNATURE_LEN, "one secret fills its budget exactly");

    /* Exactly big enough, and one byte short. */
    char exact[MC_WEBHOOK_SIGNATURE_LEN];
    CHECK(mc_webhook_signature(s, "shop", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body,
                               strlen(body), exact, sizeof exact) == n);
    CHECK(mc_webhook_signature(s, "shop", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body,
                               strlen(body), exact, sizeof exact - 1) == 0 &&
          exact[0] == '\0');

    /* An app without secrets: 0 and no header. */
    strcpy(out, "junk");
    CHECK(mc_webhook_signature(s, "billing", "x", 1, "", 0, out, sizeof out) == 0 &&
          out[0] == '\0');

    /* A large body, signed without being copied; python as above with
     * m = b"shop/big.1700000123." + bytes((i*7+3)%256 for i in range(100000)). */
    uint8_t *big = malloc(100000);
    for (int i = 0; i < 100000; i++)
        big[i] = (uint8_t)((i * 7 + 3) % 256);
    n = mc_webhook_signature(s, "shop", "shop/big", 1700000123, big, 100000, out, sizeof out);
    CHECK(strcmp(out, "v1,XMPnhrBCN0aVsTSsVZ/bd0ZjPjE639pC+p5X3zJ9EEA=") == 0, "got '%s'", out);
    free(big);
    mc_app_secrets_free(s);

    /* Rotation: every secret, in the order given, space-separated; an empty
     * body (NULL). Expected values from the python above with
     * m = b"shop/order-42.1700000000." and k the decoded secret. */
    s = mc_app_secrets_parse(
        "billing=Zm9v,shop=" SPEC_SECRET ",shop=c2Vjb25kLWtleS1mb3Itcm90YXRpb24=", err, sizeof err);
    CHECK(s != NULL, "%s", err);
    const char *want2 = "v1,9ukpinggMNyx0Vwb1pBhuRJNi7UDJ1cLY0xIKTd58sc= "
                        "v1,CSaMBgaPxs7IKVXZip43HBx9fQitVuwakCLl4l177sI=";
    n = mc_webhook_signature(s, "shop", "shop/order-42", 1700000000, NULL, 0, out, sizeof out);
    CHECK(n == strlen(want2) && strcmp(out, want2) == 0, "got '%s'", out);
    CHECK(mc_app_secrets_count(s, "shop") * MC_WEBHOOK_SIGNATURE_LEN == n + 1,
          "two secrets fill their budget exactly");
    char two[2 * MC_WEBHOOK_SIGNATURE_LEN];
    CHECK(mc_webhook_signature(s, "shop", "shop/order-42", 1700000000, NULL, 0, two, sizeof two) ==
          n);
    CHECK(mc_webhook_signature(s, "shop", "shop/order-42", 1700000000, NULL, 0, two,
                               sizeof two - 1) == 0);
    mc_app_secrets_free(s);
}

int main(void)
{
    test_sha256();
    test_hmac();
    test_base64();
    test_secrets_parse();
    test_signature();
    return check_exit("test_webhook");
}
