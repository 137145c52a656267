/* A task's follow-ups (on_success) as Submits: what the executor writes to `tasks` when
 * a task succeeds, and the jobs role when every shard of a broadcast succeeded. One
 * builder, so a follow-up is the same task whoever submits it. */
#ifndef MOONCAKE_FOLLOW_UPS_H
#define MOONCAKE_FOLLOW_UPS_H

#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "task_rules.h"

/* Metadata a follow-up carries: the key (app_id/task_id) of the task it follows. */
#define MC_PARENT_METADATA "mooncake.parent"

/* The Submit of one follow-up. command points into this struct (and at the parent key
 * given to mc_follow_up_build): use it in place, do not copy it. */
typedef struct mc_follow_up_submit {
    mc_command command;
    char id[MC_MAX_FOLLOW_UP_ID_LEN + 1];
    char key[MC_MAX_TASK_KEY_LEN]; /* app_id/id, the record's key */
    size_t key_len; /* 0: its id or key is too long (a task of an older rule): refuse it */
    mc_kv parent;
} mc_follow_up_submit;

/* Builds the Submit of t's follow-up i (on_success[i]) for t, whose key is parent_key,
 * having succeeded at succeeded_at: due delay_ms later, attempt 1, the follow-up's
 * callback or Kafka target, retry and late policies, metadata mooncake.parent.
 * parent_key must outlive out. Any thread. */
void mc_follow_up_build(const mc_task *t, size_t i, const char *parent_key, int64_t succeeded_at,
                        mc_follow_up_submit *out);

#endif
