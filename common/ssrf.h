/* The executor's guard against server-side request forgery: a task's URL is
 * chosen by whoever submits it, so without this guard any client could make
 * mooncake call the cloud metadata service, the Kafka brokers or anything
 * else on the private network. The check runs on the address curl resolved,
 * right before it connects (its open-socket callback), so no spelling of the
 * URL and no DNS trick gets round it. Loopback, private, link-local,
 * multicast and reserved ranges are refused unless an allow-list of CIDRs
 * exempts them. A guard is read-only after mc_ssrf_new, so threads may share
 * it. */
#ifndef MOONCAKE_SSRF_H
#define MOONCAKE_SSRF_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

typedef struct mc_ssrf mc_ssrf;

/* Makes a guard exempting allow_cidrs: NULL or "" for none, else
 * comma-separated IPv4 or IPv6 CIDRs ("10.0.0.0/8,::1/128"; a bare address is
 * a /32 or /128; whitespace around entries is trimmed, empty entries are
 * skipped). Returns a guard the caller owns (mc_ssrf_free), or NULL with a
 * line in err naming the bad entry: not an address, a prefix length out of
 * range, or host bits set beyond the prefix ("10.1.2.3/8" - refused rather
 * than widened, since in an allow-list a typo would open a whole network).
 * Also NULL on ENOMEM. */
mc_ssrf *mc_ssrf_new(const char *allow_cidrs, char *err, size_t errlen);
/* NULL is fine. */
void mc_ssrf_free(mc_ssrf *g);

/* Whether a connection to addr may be made. Allowed: addresses in the
 * allow-list, and public unicast addresses. Refused, with a one-line reason in
 * why (if why is not NULL): IPv4 0.0.0.0/8, 10/8, 100.64/10, 127/8,
 * 169.254/16, 172.16/12, 192.0.0.0/24, 192.168/16, 198.18/15, 224/4, 240/4;
 * IPv6 ::, ::1, fe80::/10, fec0::/10, fc00::/7, ff00::/8; IPv6 forms carrying
 * an IPv4 address (::ffff:a.b.c.d mapped, ::ffff:0:a.b.c.d translated,
 * ::a.b.c.d compatible, 64:ff9b::/96 NAT64, 2002::/16 6to4), judged by that
 * IPv4 address and exempt if the allow-list holds either address; any
 * family other than AF_INET and AF_INET6, and an addrlen too short for its
 * family. g may be NULL (no allow-list). */
bool mc_ssrf_check(const mc_ssrf *g, const struct sockaddr *addr, socklen_t addrlen, char *why,
                   size_t whylen);

#endif
