/* Redaction of a callback's secrets (see redact.h). A name is judged by the
 * words in it, because users invent header names (X-Shop-Token,
 * api_key, sig): a false positive hides a harmless value, a false negative
 * leaks a credential, so the list errs towards hiding. */
#include "redact.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *const secret_words[] = {
    "auth",      "cookie", "token",   "secret",     "password", "passwd", "pwd",     "key",
    "signature", "sig",    "session", "credential", "jwt",      "bearer", "private",
};

bool mc_secret_name(const char *name)
{
    char lower[128];
    size_t n = 0;
    for (; name[n] && n < sizeof lower - 1; n++)
        lower[n] = (char)tolower((unsigned char)name[n]);
    lower[n] = '\0';
    if (name[n])
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

char *mc_url_redacted(const char *url)
{
    size_t url_len = strlen(url);
    /* Each parameter's value may grow to MC_REDACTED: at most one per '&' or
     * '?', plus the user info. */
    size_t params = 2;
    for (const char *p = url; *p; p++)
        params += *p == '&' || *p == '?' || *p == ';';
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
            auth_len -= (size_t)(authority - (scheme_end + 3));
        }
        p = authority;
    }
    const char *query = strchr(p, '?');
    if (!query) {
        put(out, &len, p, strlen(p));
        out[len] = '\0';
        return out;
    }
    put(out, &len, p, (size_t)(query - p) + 1);
    p = query + 1;
    while (*p && *p != '#') {
        size_t field = strcspn(p, "&;#");
        const char *eq = memchr(p, '=', field);
        if (eq) {
            char name[128];
            size_t name_len = (size_t)(eq - p);
            bool long_name = name_len >= sizeof name;
            if (!long_name) {
                memcpy(name, p, name_len);
                name[name_len] = '\0';
            }
            put(out, &len, p, name_len + 1);
            if (long_name || mc_secret_name(name))
                put(out, &len, MC_REDACTED, sizeof MC_REDACTED - 1);
            else
                put(out, &len, eq + 1, field - name_len - 1);
        } else {
            put(out, &len, p, field);
        }
        p += field;
        if (*p == '&' || *p == ';')
            put(out, &len, p++, 1);
    }
    put(out, &len, p, strlen(p));
    out[len] = '\0';
    return out;
}
