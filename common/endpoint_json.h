/* The JSON bodies of endpoint groups and admission limits (the gateway's POST /groups,
 * /groups/delete, /limits, /limits/delete; mooncakectl groups and limits) into Endpoint
 * records, checked by the rules the endpoint table keeps them by. Every refusal is a
 * sentence naming the field the way the body wrote it. */
#ifndef MOONCAKE_ENDPOINT_JSON_H
#define MOONCAKE_ENDPOINT_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "codec.h"

/* Longest wait after a failure a group may ask for: an hour. */
#define MC_UNHEALTHY_MS_MAX 3600000
/* unhealthyMs when a body gives none. */
#define MC_UNHEALTHY_MS_DEFAULT 10000

/* {"appId", "name", "members": [...], "dns": [...], "strategy", "memberConcurrency",
 * "unhealthyMs"} into a group updated at now (strategy ROUND_ROBIN, memberConcurrency 0
 * and unhealthyMs 10000 by default; members' trailing slashes dropped). Strings live in
 * arena a. 0, or -1 with a reason in why. Any thread. */
int mc_endpoint_group_from_json(const char *body, size_t len, int64_t now, mc_arena *a,
                                mc_endpoint *out, char *why, size_t whylen);
/* {"scope": "host"|"app", "name", "maxConcurrent", "maxPerSecond"} into a limit updated
 * at now: a host lower-cased, without a port; at least one bound above 0. 0, or -1 with
 * why. */
int mc_endpoint_limit_from_json(const char *body, size_t len, int64_t now, mc_arena *a,
                                mc_endpoint *out, char *why, size_t whylen);
/* The key a delete body names: {"appId", "name"} of a group (limit false) or {"scope",
 * "name"} of a limit, as a record of that kind with its identity set (for
 * mc_endpoint_key). 0, or -1 with why. */
int mc_endpoint_delete_from_json(const char *body, size_t len, bool limit, mc_arena *a,
                                 mc_endpoint *out, char *why, size_t whylen);

#endif
