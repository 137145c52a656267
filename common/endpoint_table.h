/* The endpoint table: every app's endpoint groups and the admission limits, read in
 * full from the compacted `<prefix>endpoints` topic (a global table: every executor and
 * gateway reads every partition, with no consumer group) and kept current by a thread of
 * its own, which also resolves the groups' DNS names again every
 * --endpoints-dns-refresh-ms. Each change is published as a new mc_endpoints snapshot
 * (endpoints.h). */
#ifndef MOONCAKE_ENDPOINT_TABLE_H
#define MOONCAKE_ENDPOINT_TABLE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "endpoints.h"
#include "metrics.h"

typedef struct mc_endpoint_table mc_endpoint_table;

/* Starts reading the table (its thread, its consumer). The caller owns it
 * (mc_endpoint_table_close). NULL with a reason in err. Any thread. */
mc_endpoint_table *mc_endpoint_table_open(const mc_config *cfg, mc_metrics *m, char *err,
                                          size_t errlen);
/* The current snapshot, with a reference for the caller (mc_endpoints_unref). Never NULL
 * once open returned: an empty snapshot until the first read. Any thread. */
mc_endpoints *mc_endpoint_table_snapshot(mc_endpoint_table *t);
/* Whether the table has read every partition to the end it had when it started. */
bool mc_endpoint_table_caught_up(mc_endpoint_table *t);
/* The gateway's listings (endpoint_defs.h, mc_endpoint_defs_groups_json and
 * mc_endpoint_defs_limits_json) of what the table holds now: a new JSON array the
 * caller owns, NULL on ENOMEM. Any thread. */
json_t *mc_endpoint_table_groups_json(mc_endpoint_table *t, const char *app_id, const char *name);
json_t *mc_endpoint_table_limits_json(mc_endpoint_table *t);
/* Asks the reader thread to stop without waiting for it: a metadata request it
 * has in flight during a broker outage then runs out beside the caller's own
 * shutdown instead of after it. The table stays readable. Any thread. */
void mc_endpoint_table_stop(mc_endpoint_table *t);
/* Stops the thread and frees the table; snapshots still referenced live on. */
void mc_endpoint_table_close(mc_endpoint_table *t);

#endif
