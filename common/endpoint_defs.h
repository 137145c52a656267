/* The endpoint table's state without its thread: the groups and limits read from the
 * `endpoints` topic (keyed as the topic is), the addresses last resolved for the DNS
 * names their groups name, and the pure steps between them: applying a record,
 * building the mc_endpoints snapshot the executor reads, listing definitions as the
 * gateway's JSON, checking a member's base URL, and reading a DNS answer's addresses.
 * Not thread-safe: one owner at a time (the table serialises with its mutex). */
#ifndef MOONCAKE_ENDPOINT_DEFS_H
#define MOONCAKE_ENDPOINT_DEFS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "endpoints.h"

/* The route strategies' API names, for messages ("... is not one of " this). */
#define MC_ROUTE_STRATEGY_LIST                                                                     \
    "FIRST, LAST, ROUND_ROBIN, RANDOM, CONSISTENT_HASH, LEAST_FREQUENTLY_USED, "                   \
    "LEAST_RECENTLY_USED, FAILOVER, BUSYOVER or SHARDING_BROADCAST"

/* Longest address text (an IPv6 address), its NUL included. */
#define MC_ADDRESS_MAX 46
/* Addresses kept per DNS name: a group holds at most MC_GROUP_MEMBERS_MAX members. */
#define MC_DNS_ADDRESSES_MAX MC_GROUP_MEMBERS_MAX

typedef struct mc_endpoint_defs mc_endpoint_defs;

/* An empty set of definitions; the caller owns it (mc_endpoint_defs_free). NULL on
 * ENOMEM. */
mc_endpoint_defs *mc_endpoint_defs_new(void);
void mc_endpoint_defs_free(mc_endpoint_defs *d);

/* Applies one endpoints-topic record, key (key_len bytes) and value (NULL: a tombstone,
 * which deletes the key's definition). 1 when the definitions changed, 0 when they did
 * not, -1 with a reason in why for a record that is not valid (undecodable, a key that
 * does not name its value), -2 on ENOMEM; on -1 and -2 nothing changed. */
int mc_endpoint_defs_apply(mc_endpoint_defs *d, const void *key, size_t key_len, const void *value,
                           size_t len, char *why, size_t whylen);

/* How many groups and limits are defined. */
size_t mc_endpoint_defs_group_count(const mc_endpoint_defs *d);
size_t mc_endpoint_defs_limit_count(const mc_endpoint_defs *d);

/* The DNS names the groups' dns URLs name (IP literals excluded), each once: how many,
 * the i-th (valid until the next apply) and whether it was resolved yet. */
size_t mc_endpoint_defs_host_count(const mc_endpoint_defs *d);
const char *mc_endpoint_defs_host(const mc_endpoint_defs *d, size_t i);
bool mc_endpoint_defs_host_resolved(const mc_endpoint_defs *d, size_t i);
/* Sets the addresses the i-th name resolves to (copied, sorted, duplicates dropped, the
 * first MC_DNS_ADDRESSES_MAX kept; n may be 0: the name has none). 1 when they changed, 0 when not,
 * -1 on ENOMEM. */
int mc_endpoint_defs_set_addresses(mc_endpoint_defs *d, size_t i, const char *const *addrs,
                                   size_t n);

/* A new snapshot of every group and limit: each static member {url, NULL}, each dns URL
 * once per address its name resolved to {url, address} (an IP literal's URL once, as a
 * static member). A group with more than MC_GROUP_MEMBERS_MAX members keeps the first
 * ones in url, address order; *cut (when not NULL) counts the members left out. The
 * caller owns the reference. NULL on ENOMEM. */
mc_endpoints *mc_endpoint_defs_snapshot(const mc_endpoint_defs *d, size_t *cut);

/* The gateway's GET /groups: a new JSON array of the app's groups (only the one named
 * name, when not NULL), sorted by name, each {appId, name, members, dns, strategy,
 * memberConcurrency, unhealthyMs, updatedAt, resolved: [{url, address}]}. The caller
 * owns it. NULL on ENOMEM. */
json_t *mc_endpoint_defs_groups_json(const mc_endpoint_defs *d, const char *app_id,
                                     const char *name);
/* GET /limits: a new JSON array of every limit {scope: "host"|"app", name,
 * maxConcurrent, maxPerSecond, updatedAt}, sorted by scope and name. NULL on ENOMEM. */
json_t *mc_endpoint_defs_limits_json(const mc_endpoint_defs *d);

/* The key of a group (group/APP/NAME) or a limit (limit/host/HOST, limit/app/APP)
 * written into buf; returns the length it needs (like snprintf). */
size_t mc_endpoint_key(const mc_endpoint *e, char *buf, size_t buflen);

/* Checks a member's base URL: http:// or https://, a host, no user info, query or
 * fragment, at most 2048 bytes. On success writes it into out without its trailing
 * slashes and the host into host (brackets of an IPv6 literal removed; *is_ip when it
 * is an IP literal); either may be NULL. False with a reason (naming the URL) in why. */
bool mc_endpoint_url_ok(const char *url, char *out, size_t outlen, char *host, size_t hostlen,
                        bool *is_ip, char *why, size_t whylen);

/* The A and AAAA records of a DNS answer (len bytes, untrusted: read only through
 * ns_initparse/ns_parserr) written as text into addrs (at most max); returns how many,
 * or -1 when the message does not parse. */
int mc_dns_answer_addresses(const uint8_t *msg, size_t len, char (*addrs)[MC_ADDRESS_MAX],
                            size_t max);

#endif
