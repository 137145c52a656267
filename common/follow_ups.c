/* A task's follow-ups as Submits (follow_ups.h). */
#include "follow_ups.h"

void mc_follow_up_build(const mc_task *t, size_t i, const char *parent_key, int64_t succeeded_at,
                        mc_follow_up_submit *out)
{
    const mc_follow_up *f = &t->on_success[i];
    size_t idlen = mc_follow_up_id(t, i, out->id, sizeof out->id);
    size_t klen = mc_task_key(t->app_id, out->id, out->key, sizeof out->key);
    /* The router checked both: a task of an older rule. */
    out->key_len = idlen < sizeof out->id && klen < sizeof out->key ? klen : 0;
    out->parent = (mc_kv){MC_PARENT_METADATA, parent_key};
    out->command = (mc_command){.kind = MC_CMD_SUBMIT};
    out->command.submit = (mc_task){.app_id = t->app_id,
                                    .task_id = out->id,
                                    .due_at = succeeded_at + f->delay_ms,
                                    .callback = f->callback,
                                    .has_retry = f->has_retry,
                                    .retry = f->retry,
                                    .attempt = 1,
                                    .created_at = succeeded_at,
                                    .metadata = &out->parent,
                                    .n_metadata = 1,
                                    .has_kafka_target = f->has_kafka_target,
                                    .kafka_target = f->kafka_target,
                                    .has_late_policy = f->has_late_policy,
                                    .late_policy = f->late_policy};
}
