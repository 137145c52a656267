/* Which Kafka topics each app may have records delivered to (--target-topics):
 * the rule the gateway answers 400 by, the router and the view dead-letter
 * by, and the executor checks again at delivery time (the list may have
 * changed since). mooncake's own topics (the topic prefix) and Kafka's
 * internal ones (`__`) are never targets, whatever the list says. */
#ifndef MOONCAKE_TARGET_TOPICS_H
#define MOONCAKE_TARGET_TOPICS_H

#include <stdbool.h>
#include <stddef.h>

#include "codec.h"
#include "task_rules.h"

/* Headers mooncake adds to every record it delivers: the task's key
 * (app_id/task_id) and its due time (epoch ms, decimal). */
#define MC_TARGET_TASK_HEADER "mooncake-task"
#define MC_TARGET_DUE_HEADER "mooncake-due-at"

/* Kafka's limit on a topic name's length. */
#define MC_TOPIC_NAME_MAX 249

typedef struct mc_kafka_targets mc_kafka_targets;

/* Parses "app=topic" entries, inline and comma-separated or "@file" with one
 * per line; a topic ending in '*' allows every topic starting with what
 * precedes it, and app "*" stands for every app. own_prefix is mooncake's
 * topic prefix. Caller owns the result (mc_kafka_targets_free). NULL with a
 * line in err naming the entry to fix. Any thread. */
mc_kafka_targets *mc_kafka_targets_parse(const char *spec, const char *own_prefix, char *err,
                                         size_t errlen);
void mc_kafka_targets_free(mc_kafka_targets *t);

/* Whether topic is one of mooncake's own (under the topic prefix, or, with
 * none, one of the names it uses). Any thread. */
bool mc_topic_is_own(const char *own_prefix, const char *topic);

/* Whether topic is a legal Kafka topic name (1 to 249 of [a-zA-Z0-9._-],
 * not "." or ".."). */
bool mc_topic_name_ok(const char *topic);

/* Whether app may have records delivered to topic; on refusal writes a
 * sentence naming field (e.g. "kafkaTarget.topic") into why. Any thread. */
bool mc_kafka_target_allowed(const mc_kafka_targets *t, const char *app_id, const char *topic,
                             const char *field, char *why, size_t whylen);

/* The Kafka targets of the task and of its follow-ups checked against the
 * list, messages naming fields as n does; true when it names none. */
bool mc_task_target_ok(const mc_kafka_targets *t, const mc_task *task, const mc_task_field_names *n,
                       char *why, size_t whylen);

#endif
