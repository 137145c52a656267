/* The SSRF guard (see ssrf.h). Addresses are compared as bytes in network
 * order against fixed tables, so the verdict does not depend on how the
 * resolver or the URL wrote the address. IPv6 forms that carry an IPv4
 * address are unwrapped first: otherwise ::ffff:127.0.0.1, a NAT64 prefix or
 * a 6to4 address would reach an internal IPv4 host through a gate meant only
 * for IPv6. */
#include "ssrf.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALLOW_SETTING "MOONCAKE_EXECUTOR_ALLOW_CIDRS"

typedef struct cidr {
    int family; /* AF_INET or AF_INET6 */
    uint8_t net[16];
    unsigned prefix;
} cidr;

struct mc_ssrf {
    cidr *allow;
    size_t n_allow;
};

/* Whether the first prefix bits of a and b agree. */
static bool prefix_matches(const uint8_t *a, const uint8_t *b, unsigned prefix)
{
    unsigned whole = prefix / 8, rest = prefix % 8;
    if (memcmp(a, b, whole) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (a[whole] & mask) == (b[whole] & mask);
}

/* Whether any bit after the first prefix bits of the len-byte a is set. */
static bool host_bits_set(const uint8_t *a, size_t len, unsigned prefix)
{
    for (size_t bit = prefix; bit < len * 8; bit++)
        if (a[bit / 8] & (0x80 >> (bit % 8)))
            return true;
    return false;
}

/* Parses one trimmed, non-empty entry into *c; -1 with err naming it. */
static int parse_cidr(const char *entry, size_t len, cidr *c, char *err, size_t errlen)
{
    char text[INET6_ADDRSTRLEN + 8];
    int shown = len > 80 ? 80 : (int)len;
    if (len >= sizeof text) {
        snprintf(err, errlen, ALLOW_SETTING ": '%.*s' is not a CIDR (too long)", shown, entry);
        return -1;
    }
    memcpy(text, entry, len);
    text[len] = '\0';
    char *slash = strchr(text, '/');
    if (slash)
        *slash = '\0';
    bool v6 = strchr(text, ':') != NULL;
    c->family = v6 ? AF_INET6 : AF_INET;
    memset(c->net, 0, sizeof c->net);
    if (inet_pton(c->family, text, c->net) != 1) {
        snprintf(err, errlen, ALLOW_SETTING ": '%.*s' is not a CIDR (%s is not an %s address)",
                 shown, entry, text, v6 ? "IPv6" : "IPv4");
        return -1;
    }
    unsigned max = v6 ? 128 : 32;
    c->prefix = max;
    if (slash) {
        const char *digits = slash + 1;
        size_t n = strlen(digits);
        unsigned value = 0;
        bool ok = n >= 1 && n <= 3;
        for (size_t i = 0; ok && i < n; i++) {
            ok = digits[i] >= '0' && digits[i] <= '9';
            value = value * 10 + (unsigned)(digits[i] - '0');
        }
        if (!ok || value > max) {
            snprintf(err, errlen,
                     ALLOW_SETTING ": '%.*s' is not a CIDR (prefix length 0-%u for %s)", shown,
                     entry, max, v6 ? "IPv6" : "IPv4");
            return -1;
        }
        c->prefix = value;
    }
    if (host_bits_set(c->net, v6 ? 16 : 4, c->prefix)) {
        snprintf(err, errlen,
                 ALLOW_SETTING ": '%.*s' is not a CIDR (address bits set beyond the /%u prefix)",
                 shown, entry, c->prefix);
        return -1;
    }
    return 0;
}

static bool is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

mc_ssrf *mc_ssrf_new(const char *allow_cidrs, char *err, size_t errlen)
{
    mc_ssrf *g = calloc(1, sizeof *g);
    const char *spec = allow_cidrs ? allow_cidrs : "";
    size_t max_entries = 1;
    for (const char *p = spec; *p; p++)
        max_entries += *p == ',';
    if (g)
        g->allow = calloc(max_entries, sizeof *g->allow);
    if (!g || !g->allow) {
        mc_ssrf_free(g);
        snprintf(err, errlen, ALLOW_SETTING ": out of memory");
        return NULL;
    }
    for (const char *p = spec; *p;) {
        size_t len = strcspn(p, ",");
        const char *entry = p, *next = p[len] ? p + len + 1 : p + len;
        while (len && is_space(*entry)) {
            entry++;
            len--;
        }
        while (len && is_space(entry[len - 1]))
            len--;
        if (len && parse_cidr(entry, len, &g->allow[g->n_allow++], err, errlen) != 0) {
            mc_ssrf_free(g);
            return NULL;
        }
        p = next;
    }
    return g;
}

void mc_ssrf_free(mc_ssrf *g)
{
    if (!g)
        return;
    free(g->allow);
    free(g);
}

static bool allowed(const mc_ssrf *g, int family, const uint8_t *a)
{
    for (size_t i = 0; g && i < g->n_allow; i++)
        if (g->allow[i].family == family && prefix_matches(a, g->allow[i].net, g->allow[i].prefix))
            return true;
    return false;
}

typedef struct range {
    uint8_t net[16];
    unsigned prefix;
    const char *what; /* "<address> is <what>" */
} range;

/* Most specific first: the first match names the reason. */
static const range refused_v4[] = {
    {{169, 254, 169, 254}, 32, "link-local (cloud metadata)"},
    {{0, 0, 0, 0}, 8, "'this network' (0.0.0.0/8)"},
    {{10, 0, 0, 0}, 8, "private (10.0.0.0/8)"},
    {{100, 64, 0, 0}, 10, "carrier-grade NAT shared space (100.64.0.0/10)"},
    {{127, 0, 0, 0}, 8, "loopback (127.0.0.0/8)"},
    {{169, 254, 0, 0}, 16, "link-local (169.254.0.0/16)"},
    {{172, 16, 0, 0}, 12, "private (172.16.0.0/12)"},
    {{192, 0, 0, 0}, 24, "reserved for IETF protocols (192.0.0.0/24)"},
    {{192, 168, 0, 0}, 16, "private (192.168.0.0/16)"},
    {{198, 18, 0, 0}, 15, "reserved for benchmarking (198.18.0.0/15)"},
    {{224, 0, 0, 0}, 4, "multicast (224.0.0.0/4)"},
    {{255, 255, 255, 255}, 32, "broadcast (255.255.255.255)"},
    {{240, 0, 0, 0}, 4, "reserved (240.0.0.0/4)"},
};

static const range refused_v6[] = {
    {{0}, 128, "unspecified (::)"},
    {{[15] = 1}, 128, "loopback (::1)"},
    {{0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54}, 128, "unique-local (cloud metadata)"},
    {{0xfe, 0x80}, 10, "link-local (fe80::/10)"},
    {{0xfe, 0xc0}, 10, "site-local (fec0::/10)"},
    {{0xfc}, 7, "unique-local (fc00::/7)"},
    {{0xff}, 8, "multicast (ff00::/8)"},
};

/* IPv6 forms carrying an IPv4 address at byte offset v4_at. */
typedef struct v4_carrier {
    uint8_t net[16];
    unsigned prefix;
    size_t v4_at;
    const char *what;
} v4_carrier;

static const v4_carrier carriers[] = {
    {{[10] = 0xff, [11] = 0xff}, 96, 12, "IPv4-mapped"},
    {{[8] = 0xff, [9] = 0xff}, 96, 12, "IPv4-translated"},
    {{0}, 96, 12, "IPv4-compatible"},
    {{0x00, 0x64, 0xff, 0x9b}, 96, 12, "NAT64"},
    {{0x20, 0x02}, 16, 2, "6to4"},
};

static const char *refusal(const range *table, size_t n, const uint8_t *a)
{
    for (size_t i = 0; i < n; i++)
        if (prefix_matches(a, table[i].net, table[i].prefix))
            return table[i].what;
    return NULL;
}

bool mc_ssrf_check(const mc_ssrf *g, const struct sockaddr *addr, socklen_t addrlen, char *why,
                   size_t whylen)
{
    char unused[1];
    if (!why || !whylen) {
        why = unused;
        whylen = sizeof unused;
    }
    why[0] = '\0';
    char shown[INET6_ADDRSTRLEN];
    if (addr && addr->sa_family == AF_INET && addrlen >= (socklen_t)sizeof(struct sockaddr_in)) {
        struct sockaddr_in in;
        memcpy(&in, addr, sizeof in); /* addr may be a differently aligned buffer */
        const uint8_t *a = (const uint8_t *)&in.sin_addr;
        if (allowed(g, AF_INET, a))
            return true;
        const char *what = refusal(refused_v4, sizeof refused_v4 / sizeof *refused_v4, a);
        if (!what)
            return true;
        inet_ntop(AF_INET, a, shown, sizeof shown);
        snprintf(why, whylen, "%s is %s; allow it with " ALLOW_SETTING, shown, what);
        return false;
    }
    if (addr && addr->sa_family == AF_INET6 && addrlen >= (socklen_t)sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 in6;
        memcpy(&in6, addr, sizeof in6);
        const uint8_t *a = (const uint8_t *)&in6.sin6_addr;
        if (allowed(g, AF_INET6, a))
            return true;
        inet_ntop(AF_INET6, a, shown, sizeof shown);
        /* :: and ::1 first: they also look IPv4-compatible. */
        const char *what = refusal(refused_v6, sizeof refused_v6 / sizeof *refused_v6, a);
        if (what) {
            snprintf(why, whylen, "%s is %s; allow it with " ALLOW_SETTING, shown, what);
            return false;
        }
        for (size_t i = 0; i < sizeof carriers / sizeof *carriers; i++) {
            if (!prefix_matches(a, carriers[i].net, carriers[i].prefix))
                continue;
            const uint8_t *v4 = a + carriers[i].v4_at;
            if (allowed(g, AF_INET, v4))
                return true;
            what = refusal(refused_v4, sizeof refused_v4 / sizeof *refused_v4, v4);
            if (!what)
                return true;
            char shown_v4[INET_ADDRSTRLEN];
            inet_ntop(AF_INET, v4, shown_v4, sizeof shown_v4);
            snprintf(why, whylen, "%s is %s for %s, which is %s; allow it with " ALLOW_SETTING,
                     shown, carriers[i].what, shown_v4, what);
            return false;
        }
        return true;
    }
    if (addr && (addr->sa_family == AF_INET || addr->sa_family == AF_INET6))
        snprintf(why, whylen, "address too short (%u bytes) for its family", (unsigned)addrlen);
    else
        snprintf(why, whylen, "address family %d is neither IPv4 nor IPv6",
                 addr ? (int)addr->sa_family : -1);
    return false;
}
