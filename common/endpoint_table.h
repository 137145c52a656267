/* The endpoint table: every app's endpoint groups and the admission limits, read in
 * full from the compacted `<prefix>endpoints` topic (a global table: every executor and
 * gateway reads every partition, with no consumer group) and kept current by a thread of
 * its own, which also resolves the groups' DNS names again every --dns-refresh-ms. Each
 * change is published as a new mc_endpoints snapshot (endpoints.h). */
#ifndef MOONCAKE_ENDPOINT_TABLE_H
#define MOONCAKE_ENDPOINT_TABLE_H

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
/* Stops the thread and frees the table; snapshots still referenced live on. */
void mc_endpoint_table_close(mc_endpoint_table *t);

#endif
