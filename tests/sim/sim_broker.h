/* The in-memory cluster's insides (sim.h is its face): partitioned logs,
 * transactions, groups and committed offsets, shared by the two drivers built
 * on it - sim.c's processor instances and sim_kclient.c's Kafka client under
 * the real runner. Single-threaded, the test's thread. */
#ifndef MOONCAKE_SIM_BROKER_H
#define MOONCAKE_SIM_BROKER_H

#include "sim.h"

typedef enum entry_state { OPEN, COMMITTED, ABORTED } entry_state;

typedef struct entry {
    bool control; /* a commit or abort marker: takes an offset, never delivered */
    entry_state state;
    uint64_t txn; /* 0: written outside a transaction */
    void *key;
    size_t key_len;
    void *value;
    size_t value_len;
    mc_header *headers;
    size_t n_headers;
} entry;

typedef struct plog {
    entry *e; /* e[i] has offset i */
    size_t n, cap;
} plog;

typedef struct topic {
    char *name;
    int32_t n;
    plog *parts;
    size_t max_bytes; /* 0: no limit */
} topic;

/* Where a transaction wrote: the partitions that get its marker. */
typedef struct touched {
    topic *t;
    int32_t partition;
} touched;

typedef struct txn {
    uint64_t id;
    char *transactional_id;
    touched *parts;
    size_t n_parts, cap_parts;
    bool open;
} txn;

typedef struct group_offset {
    char *group, *topic;
    int32_t partition;
    int64_t offset;
    char *metadata;
} group_offset;

typedef struct group {
    char *name;
    uint64_t generation;
} group;

struct sim_kafka {
    int32_t default_partitions;
    int64_t now;
    topic **topics;
    size_t n_topics;
    txn **txns;
    size_t n_txns;
    uint64_t next_txn;
    group_offset *offsets;
    size_t n_offsets;
    group *groups;
    size_t n_groups;
};

/* Allocation that aborts the test on ENOMEM. */
void *simb_xmalloc(size_t n);
void *simb_xrealloc(void *p, size_t n);
void *simb_dup_bytes(const void *p, size_t n);
char *simb_xstrdup(const char *s);

/* A topic by full name, made with the cluster's default count on first use. */
topic *simb_topic_get(sim_kafka *k, const char *name);
/* A partition's log; NULL (with a line on stderr) when it has no such partition. */
plog *simb_plog_of(sim_kafka *k, const char *name, int32_t partition);
int64_t simb_plog_append(plog *l, entry e);
/* A record's entry (copies of everything). */
entry simb_make_entry(const void *key, size_t key_len, const void *value, size_t value_len,
                      const mc_header *headers, size_t n_headers);
void simb_free_entry(entry *e);
/* The record a reader gets for entry e at offset (pointing into e). */
mc_record simb_entry_record(const entry *e, const char *topic, int32_t partition, int64_t offset,
                            int64_t timestamp_ms);

txn *simb_txn_find(sim_kafka *k, uint64_t id);
/* Opens a transaction under transactional_id; returns its id. */
uint64_t simb_txn_begin(sim_kafka *k, const char *transactional_id);
/* Appends e as part of transaction id; returns its offset, -1 on a bad
 * partition. */
int64_t simb_txn_produce(sim_kafka *k, uint64_t id, const char *name, int32_t partition, entry e);
/* Commits or aborts: every record of the transaction changes state at once,
 * and each partition it wrote gets a marker. */
void simb_txn_end(sim_kafka *k, uint64_t id, bool commit);
/* A new producer with this transactional id fences the old one: its open
 * transaction is aborted. */
void simb_fence_transactional_id(sim_kafka *k, const char *transactional_id);

size_t simb_read_log(sim_kafka *k, const char *name, int32_t partition, bool committed_only,
                     sim_rec **out);

group *simb_group_get(sim_kafka *k, const char *name);
group_offset *simb_offset_find(sim_kafka *k, const char *grp, const char *name, int32_t partition);
void simb_offset_store(sim_kafka *k, const char *grp, const char *name, int32_t partition,
                       int64_t offset, const char *metadata);

/* Replays partitions of topic name from the beginning into fn, committed
 * records only, as the runner's restorer does; -1 (with a line on stderr)
 * when an open transaction would make a real restore wait. */
int simb_restore(sim_kafka *k, const char *name, const int32_t *partitions, size_t n,
                 mc_restore_fn fn, void *arg, mc_restore_stats *stats);

#endif
