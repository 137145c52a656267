/* Redaction of a callback's secrets (see redact.h). A name is judged by the
 * words in it, because users invent header names (X-Shop-Token,
 * api_key, sig): a false positive hides a harmless value, a false negative
 * leaks a credential, so the list errs towards hiding. */
#include "redact.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *const secret_words[] = {
    "auth",    "cookie",     "token", "secret", "pass",    "pwd",  "key", "signature", "sig",
    "session", "credential", "jwt",   "bearer", "private", "hmac", "otp", "code",
};

static int hex_digit(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

bool mc_secret_name(const char *name)
{
    /* Lower-cased and percent-decoded: "%74oken" is "token" to the server. */
    char lower[128];
    size_t n = 0;
    const char *p = name;
    for (; *p && n < sizeof lower - 1; p++) {
        char c = *p;
        if (c == '%' && hex_digit(p[1]) >= 0 && hex_digit(p[2]) >= 0) {
            c = (char)(hex_digit(p[1]) * 16 + hex_digit(p[2]));
            p += 2;
        }
        lower[n++] = (char)tolower((unsigned char)c);
    }
    lower[n] = '\0';
    if (*p)
        return true; /* a name this long is not worth the risk */
    for (size_t i = 0; i < sizeof secret_words / sizeof secret_words[0]; i++)
        if (strstr(lower, secret_words[i]))
            return true;
    return false;
}

/* Appends s[0..n) to out at *len. out is large enough by construction. */
static void put(char *out, size_t *len, const char *s, size_t n)
{
    memcpy(out + *len, s, n);
    *len += n;
}

/* Copies the name=value pairs of a query or fragment from p to out, each
 * value of a secret name replaced. */
static void put_params(char *out, size_t *len, const char *p)
{
    while (*p) {
        size_t field = strcspn(p, "&;#?");
        const char *eq = memchr(p, '=', field);
        if (eq) {
            char name[128];
            size_t name_len = (size_t)(eq - p);
            bool long_name = name_len >= sizeof name;
            if (!long_name) {
                memcpy(name, p, name_len);
                name[name_len] = '\0';
            }
            put(out, len, p, name_len + 1);
            if (long_name || mc_secret_name(name))
                put(out, len, MC_REDACTED, sizeof MC_REDACTED - 1);
            else
                put(out, len, eq + 1, field - name_len - 1);
        } else {
            put(out, len, p, field);
        }
        p += field;
        if (*p)
            put(out, len, p++, 1);
    }
}

char *mc_url_redacted(const char *url)
{
    size_t url_len = strlen(url);
    /* Each value may grow to MC_REDACTED: at most one per separator, plus
     * the user info. */
    size_t params = 2;
    for (const char *p = url; *p; p++)
        params += *p == '&' || *p == '?' || *p == ';' || *p == '#';
    char *out = malloc(url_len + params * sizeof MC_REDACTED + 1);
    if (!out)
        return NULL;
    size_t len = 0;
    const char *p = url;
    const char *scheme_end = strstr(url, "://");
    if (scheme_end) {
        const char *authority = scheme_end + 3;
        size_t auth_len = strcspn(authority, "/?#");
        const char *at = memchr(authority, '@', auth_len);
        put(out, &len, url, (size_t)(authority - url));
        if (at) {
            /* Credentials in the authority are only ever secrets. */
            put(out, &len, MC_REDACTED, sizeof MC_REDACTED - 1);
            put(out, &len, "@", 1);
            authority = at + 1;
        }
        p = authority;
    }
    /* The query and the fragment (#access_token=... in OAuth's implicit
     * flow) are read alike: name=value pairs. */
    size_t path = strcspn(p, "?#");
    put(out, &len, p, path);
    if (p[path]) {
        put(out, &len, p + path, 1);
        put_params(out, &len, p + path + 1);
    }
    out[len] = '\0';
    return out;
}

/* Where the URL around the "://" at sep starts and ends. */
static void url_bounds(const char *text, const char *sep, const char **start, const char **end)
{
    const char *s = sep;
    while (s > text &&
           (isalnum((unsigned char)s[-1]) || s[-1] == '+' || s[-1] == '.' || s[-1] == '-'))
        s--;
    const char *e = sep + 3;
    while (*e && !isspace((unsigned char)*e) && *e != '\'' && *e != '"' && *e != '<' && *e != '>')
        e++;
    *start = s;
    *end = e;
}

char *mc_text_redacted(const char *text)
{
    size_t cap = strlen(text) + 1, len = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    const char *p = text;
    for (const char *sep; (sep = strstr(p, "://"));) {
        const char *start, *end;
        url_bounds(p, sep, &start, &end);
        char *url = strndup(start, (size_t)(end - start));
        char *red = url ? mc_url_redacted(url) : NULL;
        size_t need = red ? len + (size_t)(start - p) + strlen(red) + strlen(end) + 1 : 0;
        if (red && need > cap) {
            char *grown = realloc(out, need);
            if (grown) {
                out = grown;
                cap = need;
            } else {
                need = 0;
            }
        }
        if (!red || !need) {
            free(url);
            free(red);
            free(out);
            return NULL;
        }
        memcpy(out + len, p, (size_t)(start - p));
        len += (size_t)(start - p);
        memcpy(out + len, red, strlen(red));
        len += strlen(red);
        free(url);
        free(red);
        p = end;
    }
    memcpy(out + len, p, strlen(p) + 1);
    return out;
}
