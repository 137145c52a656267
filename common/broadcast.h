/* Sharding broadcasts as the processors see them: a task whose group strategy is
 * SHARDING_BROADCAST is called once per member of its group. At its due time the
 * executor submits one task per member, its shards, keyed <task_id>#shard-<i>, each
 * pinned to its member and told its index and the total in request headers; the jobs
 * role collects their final Results and writes the broadcast task's own. These are the
 * names that mark a shard and carry it back to its broadcast on its Results. */
#ifndef MOONCAKE_BROADCAST_H
#define MOONCAKE_BROADCAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "record.h"

/* Metadata of a shard: the broadcast task's id, "<index>/<total>@<version>" (the
 * broadcast's version), and the member it calls (its URL, and its address in brackets
 * for a member from DNS: as a Result's member names it). */
#define MC_BROADCAST_METADATA "mooncake.broadcast"
#define MC_SHARD_METADATA "mooncake.shard"
#define MC_MEMBER_METADATA "mooncake.member"
/* On every Result of a shard: the broadcast task's id and the shard's
 * "<index>/<total>@<version>", so the jobs role relays a final one without a lookup. */
#define MC_BROADCAST_HEADER "mooncake-broadcast"
#define MC_SHARD_HEADER "mooncake-shard"
/* Request headers of a shard's call, as XXL-JOB gives its shard index and total. */
#define MC_SHARD_INDEX_HEADER "mooncake-shard-index"
#define MC_SHARD_TOTAL_HEADER "mooncake-shard-total"

/* A shard's place: its index, the number of shards, the broadcast's version. */
typedef struct mc_shard_ref {
    int32_t index, total;
    int64_t version;
} mc_shard_ref;

/* Writes "<task_id>#shard-<index>" into out (cap bytes); returns its length, cap or
 * more when it did not fit. Any thread. */
size_t mc_shard_task_id(const char *task_id, int32_t index, char *out, size_t cap);

/* Writes "<index>/<total>@<version>" into out; its length. Any thread. */
size_t mc_shard_ref_format(const mc_shard_ref *s, char *out, size_t cap);
/* Reads one (len bytes, not NUL-terminated): false unless well-formed with
 * 0 <= index < total <= MC_GROUP_MEMBERS_MAX and version >= 0. Any thread. */
bool mc_shard_ref_parse(const char *text, size_t len, mc_shard_ref *out);

/* The member a shard is pinned to (its metadata), or NULL for any other task. The
 * pointer is into t. Any thread. */
const char *mc_task_shard_member(const mc_task *t);

/* Whether a metadata key is one mooncake sets on shards, which a client's task may not
 * carry. */
bool mc_broadcast_metadata_reserved(const char *key);

/* Fills out[0..1] with the broadcast headers of a shard's Result (values point into t's
 * metadata) and returns 2; 0 for any other task. Any thread. */
size_t mc_broadcast_result_headers(const mc_task *t, mc_header out[2]);

/* Reads the broadcast headers of a Result record: true with *task_id (not
 * NUL-terminated, *len bytes, inside r) and *shard when both are there and well-formed.
 * Any thread. */
bool mc_broadcast_result_shard(const mc_record *r, const char **task_id, size_t *len,
                               mc_shard_ref *shard);

#endif
