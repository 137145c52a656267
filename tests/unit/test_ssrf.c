/* Unit tests of the executor's SSRF guard: every refused range at and just
 * outside its edges, the IPv6 forms that carry an IPv4 address, the reasons
 * given, the allow-list exemption and its errors, and public addresses
 * passing. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "check.h"
#include "ssrf.h"

/* Checks text (an IPv4 or IPv6 address) against g; why gets the reason. */
static bool check_addr(const mc_ssrf *g, const char *text, char *why, size_t whylen)
{
    if (strchr(text, ':')) {
        struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(443)};
        if (inet_pton(AF_INET6, text, &a.sin6_addr) != 1) {
            CHECK(!"bad test address", "%s", text);
            return false;
        }
        return mc_ssrf_check(g, (const struct sockaddr *)&a, sizeof a, why, whylen);
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(80)};
    if (inet_pton(AF_INET, text, &a.sin_addr) != 1) {
        CHECK(!"bad test address", "%s", text);
        return false;
    }
    return mc_ssrf_check(g, (const struct sockaddr *)&a, sizeof a, why, whylen);
}

/* Expects text refused with a reason containing want. */
static void refused(const mc_ssrf *g, const char *text, const char *want)
{
    char why[256] = "";
    bool ok = check_addr(g, text, why, sizeof why);
    CHECK(!ok, "%s allowed", text);
    CHECK(!ok && strstr(why, want) != NULL, "%s: reason \"%s\" lacks \"%s\"", text, why, want);
    CHECK(!ok && strstr(why, "allow it with MOONCAKE_EXECUTOR_ALLOW_CIDRS"), "%s: \"%s\"", text,
          why);
}

static void allowed(const mc_ssrf *g, const char *text)
{
    char why[256] = "";
    CHECK(check_addr(g, text, why, sizeof why), "%s refused: %s", text, why);
}

static void test_ipv4(const mc_ssrf *g)
{
    refused(g, "0.0.0.0", "'this network' (0.0.0.0/8)");
    refused(g, "0.255.255.255", "0.0.0.0/8");
    allowed(g, "1.0.0.0");
    allowed(g, "9.255.255.255");
    refused(g, "10.0.0.0", "10.0.0.0/8");
    refused(g, "10.1.2.3", "10.1.2.3 is private (10.0.0.0/8)");
    refused(g, "10.255.255.255", "private (10.0.0.0/8)");
    allowed(g, "11.0.0.0");
    allowed(g, "100.63.255.255");
    refused(g, "100.64.0.0", "100.64.0.0/10");
    refused(g, "100.127.255.255", "100.64.0.0/10");
    allowed(g, "100.128.0.0");
    allowed(g, "126.255.255.255");
    refused(g, "127.0.0.1", "127.0.0.1 is loopback (127.0.0.0/8)");
    refused(g, "127.255.255.255", "loopback");
    allowed(g, "128.0.0.0");
    allowed(g, "169.253.255.255");
    refused(g, "169.254.0.0", "link-local (169.254.0.0/16)");
    refused(g, "169.254.169.254", "169.254.169.254 is link-local (cloud metadata)");
    refused(g, "169.254.255.255", "link-local");
    allowed(g, "169.255.0.0");
    allowed(g, "172.15.255.255");
    refused(g, "172.16.0.0", "private (172.16.0.0/12)");
    refused(g, "172.31.255.255", "172.16.0.0/12");
    allowed(g, "172.32.0.0");
    allowed(g, "191.255.255.255");
    refused(g, "192.0.0.0", "192.0.0.0/24");
    refused(g, "192.0.0.255", "192.0.0.0/24");
    allowed(g, "192.0.1.0");
    allowed(g, "192.167.255.255");
    refused(g, "192.168.0.0", "private (192.168.0.0/16)");
    refused(g, "192.168.255.255", "192.168.0.0/16");
    allowed(g, "192.169.0.0");
    allowed(g, "198.17.255.255");
    refused(g, "198.18.0.0", "198.18.0.0/15");
    refused(g, "198.19.255.255", "198.18.0.0/15");
    allowed(g, "198.20.0.0");
    allowed(g, "223.255.255.255");
    refused(g, "224.0.0.0", "multicast (224.0.0.0/4)");
    refused(g, "239.255.255.255", "multicast");
    refused(g, "240.0.0.0", "reserved (240.0.0.0/4)");
    refused(g, "255.255.255.254", "240.0.0.0/4");
    refused(g, "255.255.255.255", "broadcast");
    allowed(g, "8.8.8.8");
    allowed(g, "1.1.1.1");
    allowed(g, "93.184.216.34");
}

static void test_ipv6(const mc_ssrf *g)
{
    refused(g, "::", "unspecified");
    refused(g, "::1", "::1 is loopback");
    refused(g, "fe80::", "link-local (fe80::/10)");
    refused(g, "fe80::1", "fe80::/10");
    refused(g, "febf:ffff::1", "fe80::/10");
    refused(g, "fec0::1", "site-local (fec0::/10)");
    refused(g, "feff:ffff::1", "fec0::/10");
    allowed(g, "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
    refused(g, "fc00::", "unique-local (fc00::/7)");
    refused(g, "fdff:ffff::1", "fc00::/7");
    refused(g, "fd00:ec2::254", "fd00:ec2::254 is unique-local (cloud metadata)");
    refused(g, "fd00:ec2::253", "unique-local (fc00::/7)");
    refused(g, "ff00::", "multicast (ff00::/8)");
    refused(g, "ff02::1", "multicast");
    allowed(g, "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
    allowed(g, "2606:4700::1111");
    allowed(g, "2001:4860:4860::8888");
    allowed(g, "::2:0:0:1"); /* not in ::/96 */

    /* Forms carrying an IPv4 address are judged by it. */
    refused(g, "::ffff:127.0.0.1",
            "::ffff:127.0.0.1 is IPv4-mapped for 127.0.0.1, which is "
            "loopback (127.0.0.0/8)");
    refused(g, "::ffff:169.254.169.254", "which is link-local (cloud metadata)");
    refused(g, "::ffff:10.0.0.1", "private (10.0.0.0/8)");
    refused(g, "::ffff:0.0.0.0", "0.0.0.0/8");
    allowed(g, "::ffff:8.8.8.8");
    refused(g, "::ffff:0:192.168.1.1", "IPv4-translated for 192.168.1.1");
    allowed(g, "::ffff:0:8.8.4.4");
    refused(g, "::127.0.0.1", "IPv4-compatible for 127.0.0.1");
    refused(g, "::10.0.0.1", "private (10.0.0.0/8)");
    refused(g, "::0.0.0.2", "0.0.0.0/8");
    allowed(g, "::8.8.8.8");
    refused(g, "64:ff9b::7f00:1", "NAT64 for 127.0.0.1");
    refused(g, "64:ff9b::a9fe:a9fe", "link-local (cloud metadata)");
    allowed(g, "64:ff9b::808:808");
    refused(g, "2002:7f00:1::", "6to4 for 127.0.0.1");
    refused(g, "2002:c0a8:0101:1::5", "6to4 for 192.168.1.1");
    allowed(g, "2002:808:808::1");
}

static void test_allow_list(void)
{
    char err[256] = "";
    mc_ssrf *g = mc_ssrf_new(" 127.0.0.1/32, 10.0.0.0/8,::1/128,fd00:ec2::254 , 192.168.1.7,"
                             "::ffff:172.16.0.0/108,",
                             err, sizeof err);
    CHECK(g != NULL, "%s", err);
    allowed(g, "127.0.0.1");
    refused(g, "127.0.0.2", "loopback");
    allowed(g, "10.0.0.0");
    allowed(g, "10.200.3.4");
    refused(g, "172.16.0.1", "private");
    allowed(g, "::1");
    allowed(g, "fd00:ec2::254");
    refused(g, "fd00:ec2::255", "unique-local");
    allowed(g, "192.168.1.7");
    refused(g, "192.168.1.8", "192.168.0.0/16");
    /* A mapped address is exempt through its IPv4 address... */
    allowed(g, "::ffff:10.1.1.1");
    allowed(g, "64:ff9b::a00:1");
    allowed(g, "2002:a00:1::");
    allowed(g, "::ffff:127.0.0.1");
    refused(g, "::ffff:127.0.0.2", "loopback");
    /* ...or through the IPv6 address itself. */
    allowed(g, "::ffff:172.16.0.1");
    allowed(g, "::ffff:172.31.255.255");
    allowed(g, "::ffff:172.32.0.1");                                     /* public anyway */
    refused(g, "::ffff:0:172.16.0.1", "IPv4-translated for 172.16.0.1"); /* not the v6 entry */
    refused(g, "172.16.0.1", "172.16.0.0/12"); /* the v6 entry does not exempt plain IPv4 */
    /* Public addresses stay allowed. */
    allowed(g, "8.8.8.8");
    allowed(g, "2606:4700::1111");
    mc_ssrf_free(g);

    g = mc_ssrf_new(NULL, err, sizeof err);
    CHECK(g != NULL);
    refused(g, "127.0.0.1", "loopback");
    mc_ssrf_free(g);
    g = mc_ssrf_new(" , ", err, sizeof err);
    CHECK(g != NULL, "blank entries are skipped: %s", err);
    mc_ssrf_free(g);

    g = mc_ssrf_new("0.0.0.0/0,::/0", err, sizeof err);
    CHECK(g != NULL, "%s", err);
    allowed(g, "127.0.0.1");
    allowed(g, "fe80::1");
    mc_ssrf_free(g);

    struct {
        const char *spec, *want;
    } bad[] = {
        {"10.0.0.0/33", "MOONCAKE_EXECUTOR_ALLOW_CIDRS: '10.0.0.0/33' is not a CIDR (prefix length "
                        "0-32 for IPv4)"},
        {"127.0.0.1/32, ::1/129",
         "MOONCAKE_EXECUTOR_ALLOW_CIDRS: '::1/129' is not a CIDR (prefix length 0-128 for IPv6)"},
        {"10.0.0.0/", "'10.0.0.0/' is not a CIDR (prefix length 0-32 for IPv4)"},
        {"10.0.0.0/-1", "'10.0.0.0/-1' is not a CIDR (prefix length 0-32 for IPv4)"},
        {"10.0.0.0/8x", "'10.0.0.0/8x' is not a CIDR"},
        {"10.0.0/8", "'10.0.0/8' is not a CIDR (10.0.0 is not an IPv4 address)"},
        {"localhost", "'localhost' is not a CIDR (localhost is not an IPv4 address)"},
        {"fe80::1%eth0", "'fe80::1%eth0' is not a CIDR"},
        {"10.1.2.3/8", "'10.1.2.3/8' is not a CIDR (address bits set beyond the /8 prefix)"},
        {"fe80::1/10", "address bits set beyond the /10 prefix"},
        {"1.2.3.4/32/1", "'1.2.3.4/32/1' is not a CIDR"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = '\0';
        g = mc_ssrf_new(bad[i].spec, err, sizeof err);
        CHECK(g == NULL, "'%s' accepted", bad[i].spec);
        mc_ssrf_free(g);
        CHECK(strstr(err, bad[i].want) != NULL, "'%s': got \"%s\"", bad[i].spec, err);
        CHECK(strncmp(err, "MOONCAKE_EXECUTOR_ALLOW_CIDRS: ", 31) == 0, "%s", err);
    }
}

static void test_odd_inputs(void)
{
    char why[128];
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, "8.8.8.8", &a.sin_addr);
    CHECK(!mc_ssrf_check(NULL, (const struct sockaddr *)&a, sizeof a - 1, why, sizeof why),
          "a truncated sockaddr_in is refused");
    CHECK(mc_ssrf_check(NULL, (const struct sockaddr *)&a, sizeof a, NULL, 0),
          "NULL guard and NULL why are fine");
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6};
    CHECK(!mc_ssrf_check(NULL, (const struct sockaddr *)&a6, sizeof(struct sockaddr_in), why,
                         sizeof why));
    struct sockaddr_storage unix_addr = {.ss_family = AF_UNIX};
    CHECK(!mc_ssrf_check(NULL, (const struct sockaddr *)&unix_addr, sizeof unix_addr, why,
                         sizeof why));
    CHECK(strstr(why, "neither IPv4 nor IPv6") != NULL, "%s", why);
    CHECK(!mc_ssrf_check(NULL, NULL, 0, why, sizeof why));
    /* A tiny why buffer is truncated, not overrun. */
    inet_pton(AF_INET, "10.0.0.1", &a.sin_addr);
    char tiny[8];
    CHECK(!mc_ssrf_check(NULL, (const struct sockaddr *)&a, sizeof a, tiny, sizeof tiny) &&
          strlen(tiny) == 7);
}

int main(void)
{
    char err[128];
    mc_ssrf *g = mc_ssrf_new("", err, sizeof err);
    CHECK(g != NULL, "%s", err);
    test_ipv4(g);
    test_ipv6(g);
    mc_ssrf_free(g);
    test_allow_list();
    test_odd_inputs();
    return check_exit("test_ssrf");
}
