/* librdkafka set-up shared by every role and tool: a configuration from
 * mc_config (bootstrap servers plus every passthrough property), librdkafka's
 * log routed into ours, and the creation and checking of mooncake's topics. */
#ifndef MOONCAKE_KAFKA_H
#define MOONCAKE_KAFKA_H

#include <librdkafka/rdkafka.h>
#include <stdatomic.h>

#include "config.h"
#include "log.h"
#include "record.h"

/* The topics mooncake owns, by suffix, with their cleanup policy. */
typedef struct mc_topic_spec {
    const char *suffix;
    const char *cleanup_policy; /* "delete" or "compact" */
    const char *retention_ms;   /* NULL for compacted topics and results (a flag sets it) */
    const char *purpose;
    /* 0: the layout's count, like every task topic; MC_TOPIC_OWN_COUNT: made
     * with the set's count and never grown (the jobs topics: a job's state
     * lives in the partition its commands land in, so its key must keep its
     * home); otherwise exactly this many. */
    int partitions;
    /* More topic configs, key, value, ..., NULL; NULL for none. */
    const char *const *configs;
    /* Needed by this role only (the view's changelog, the alarms' topics):
     * the others neither create nor check it, so an engine without that role
     * does not depend on it. NULL: needed by every role. */
    const char *only_role;
} mc_topic_spec;
#define MC_TOPIC_OWN_COUNT (-1)
#define MC_N_TOPIC_SPECS 16
extern const mc_topic_spec mc_topic_specs[];
extern const size_t mc_n_topic_specs;

/* A new librdkafka configuration carrying bootstrap.servers and the
 * passthrough properties. log_opaque must point to a struct whose first member
 * is an mc_logger (it becomes the handle's opaque). Caller owns the result
 * (rd_kafka_new() takes it over). NULL with a line in err for a bad property. */
rd_kafka_conf_t *mc_kafka_conf_new(const mc_config *cfg, void *log_opaque, char *err,
                                   size_t errlen);
/* Whether the librdkafka loaded at run time is at least the one the binary
 * was built against (both use the soname librdkafka.so.1, so a missing
 * RPATH directory silently loads an older system one); err says what to fix.
 * Any thread. */
bool mc_kafka_library_ok(char *err, size_t errlen);

/* Sets one property, with a message naming it when librdkafka refuses it. */
int mc_kafka_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value, char *err,
                      size_t errlen);

/* Sets conf up to read topics to their end, committed records only, never
 * committing offsets: group.id group, read_committed, no auto commit or
 * offset store, partition EOF events, earliest reset. 0, or -1 with err. */
int mc_kafka_conf_reader(rd_kafka_conf_t *conf, const char *group, char *err, size_t errlen);

/* rd_kafka_new() that always takes conf: it destroys it when the handle
 * cannot be made (librdkafka takes it only on success). what names the
 * handle in the line left in err. Caller owns the handle; NULL on failure. */
rd_kafka_t *mc_kafka_new(rd_kafka_type_t type, rd_kafka_conf_t *conf, const char *what, char *err,
                         size_t errlen);

/* Sets key to value unless the user passed key with -X / MOONCAKE_KAFKA_*:
 * our defaults, their last word. */
int mc_kafka_conf_default(const mc_config *cfg, rd_kafka_conf_t *conf, const char *key,
                          const char *value, char *err, size_t errlen);

/* The partition of a record key among n partitions, as every mooncake
 * producer and the Java client's default partitioner choose it: murmur2 of
 * the key, sign bit cleared, modulo n. A key must always land on one
 * partition of `tasks`, whoever wrote it, so that a Cancel meets its Submit
 * and versions (offsets) of one key are comparable. */
int32_t mc_key_partition(const void *key, size_t keylen, int32_t n);

/* The client.id of a consumer that answers questions for its partitions:
 * MC_ADVERTISED_PREFIX and --advertised-url (or http://<hostname>:<port>).
 * 0, or -1 with a reason in err (no URL to give). */
#define MC_ADVERTISED_PREFIX "mooncake@"
int mc_advertised_client_id(const mc_config *cfg, char *out, size_t outlen, char *err,
                            size_t errlen);

/* The processor's view of consumed message m of topic (m's name for it,
 * since a handle's name is a lookup). Points into m, which must outlive it. */
mc_record mc_kafka_record(const rd_kafka_message_t *m, const char *topic);

/* The partition count of topic from a metadata request on rk (any handle),
 * or with a reason in err MC_TOPIC_MISSING when the broker says there is no
 * such topic, -1 when it could not be asked. The answer also updates rk's
 * own view of the topic (a producer learns of partitions added since its
 * last refresh). */
#define MC_TOPIC_MISSING (-2)
int mc_topic_partition_count(rd_kafka_t *rk, const char *topic, int timeout_ms, char *err,
                             size_t errlen);

/* Where each partition of each topic (full names) ends, in one ListOffsets
 * per leader of at most timeout_ms (rd_kafka_offsets_for_times passes the
 * timestamp "latest" through): the high watermark, or the last stable
 * offset when rk is a read_committed consumer. ends[p * n_topics + t] for
 * partitions[p] of topics[t]. 0, or -1 with the first problem in err (that
 * end -1). Any thread that owns rk's use. */
int mc_list_end_offsets(rd_kafka_t *rk, const char *const *topics, size_t n_topics,
                        const int32_t *partitions, size_t n_partitions, int64_t *ends,
                        int timeout_ms, char *err, size_t errlen);

/* Creates the missing topics (partitions, cleanup policy, retention) and
 * checks their partition counts: mooncake keeps a task in the same
 * partition number on every topic, so every topic after tasks has one
 * count, and tasks has no more than that (it has fewer only while
 * `mooncakectl partitions grow` runs). roles (NULL-terminated names) says
 * which topics only some roles need to include; NULL includes them all.
 * A stop (may be NULL) set meanwhile ends the wait for the brokers within a
 * second. Returns 0, or -1 with a line in err saying what to fix. Called
 * once at start-up, before the roles' threads. */
int mc_topics_ensure(const mc_config *cfg, const mc_logger *lg, const char *const *roles,
                     const atomic_bool *stop, char *err, size_t errlen);

/* Sets conf up for a tool's producer: idempotent (acks=all), keys placed
 * with murmur2 like every mooncake producer (mc_key_partition), and
 * transactional with txn_id when given (NULL: not). 0, or -1 with err. */
int mc_kafka_conf_producer(const mc_config *cfg, rd_kafka_conf_t *conf, const char *txn_id,
                           char *err, size_t errlen);

/* A topic's cleanup.policy and retention.ms, as the broker describes them. */
typedef struct mc_topic_cfg {
    char cleanup[64];
    char retention[32];
} mc_topic_cfg;

/* cleanup.policy and retention.ms of each topic (DescribeConfigs, within
 * timeout_ms) into out[0..n); fields of topics the broker does not describe
 * stay empty. Returns 0, or -1 with a line in err. The caller's thread. */
int mc_topic_configs(rd_kafka_t *rk, const char *const *topics, size_t n, int timeout_ms,
                     mc_topic_cfg *out, char *err, size_t errlen);

#endif
