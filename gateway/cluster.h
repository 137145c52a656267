/* What GET /api/cluster answers an operator: every role's consumer group as
 * the broker describes it (state, members with their instance ids, hosts
 * and partitions), each partition's committed offset, end and lag with its
 * owner, and how this process's own checks stand (ready, and the reason a
 * role is not: restoring its state, say). Asked of the broker with the
 * Admin API on the gateway's producer, and kept for a second, so consoles
 * polling together cost the broker one question. */
#ifndef MOONCAKE_CLUSTER_H
#define MOONCAKE_CLUSTER_H

#include <librdkafka/rdkafka.h>

#include "config.h"
#include "http_server.h"

typedef struct mc_cluster mc_cluster;

/* rk (any handle of the cluster) and http (this process's probes; NULL:
 * none) are borrowed. Caller owns the result (mc_cluster_free); NULL on
 * ENOMEM. */
mc_cluster *mc_cluster_new(const mc_config *cfg, rd_kafka_t *rk);
void mc_cluster_free(mc_cluster *c);
/* Sets the probes whose checks the answer reports (the gateway's attach). */
void mc_cluster_set_http(mc_cluster *c, mc_http_server *http);

/* The answer's data as JSON text (caller frees it), or NULL with a
 * sentence in why when the broker did not answer. HTTP threads; one asks
 * the broker at a time, the others wait for its answer. */
char *mc_cluster_describe(mc_cluster *c, char *why, size_t whylen);

#endif
