/* Serial chains as the processors outside the jobs role see them: the names
 * that mark a task a chain released, the headers that carry its link back to
 * the chain on its Results, and the rule for an ordering key. */
#ifndef MOONCAKE_CHAINS_H
#define MOONCAKE_CHAINS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "record.h"

/* Metadata the jobs role gives a task it releases from a chain: the chain's
 * ordering key and the link (the AddLink's job-commands offset). */
#define MC_CHAIN_METADATA "mooncake.chain"
#define MC_LINK_METADATA "mooncake.link"
/* The same two on every Result of such a task, so the jobs role can relay a
 * final one to its chain without a lookup. */
#define MC_CHAIN_HEADER "mooncake-chain"
#define MC_LINK_HEADER "mooncake-link"

#define MC_MAX_ORDERING_KEY_LEN 256

/* The ordering key of a task a chain released (its metadata), or NULL.
 * The pointer is into t. Any thread. */
const char *mc_task_chain(const mc_task *t);

/* Whether a metadata key is one mooncake sets on a chain's tasks, which a
 * client's task may not carry. */
bool mc_chain_metadata_reserved(const char *key);

/* Fills out[0..1] with the chain and link headers of a task a chain
 * released (values point into t's metadata) and returns 2; returns 0 for
 * any other task. Any thread. */
size_t mc_chain_result_headers(const mc_task *t, mc_header out[2]);

/* Reads the chain and link headers of a Result record: true with *key
 * (not NUL-terminated, *key_len bytes, inside r) and *link when both are
 * there and well-formed. Any thread. */
bool mc_chain_result_link(const mc_record *r, const char **key, size_t *key_len, int64_t *link);

/* An ordering key is 1..MC_MAX_ORDERING_KEY_LEN bytes without control
 * characters; field names it in the reason written into why. */
bool mc_ordering_key_ok(const char *key, const char *field, char *why, size_t whylen);

#endif
