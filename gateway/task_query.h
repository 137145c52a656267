/* The query strings of the task questions (GET /api/task, /api/tasks, /api/stats), checked: which
 * parameters there are, that each is given once, and that the ids could name
 * a task. Separate from the HTTP code so a fuzzer can throw any parameters at
 * it. Pure; any thread. */
#ifndef MOONCAKE_TASK_QUERY_H
#define MOONCAKE_TASK_QUERY_H

#include <stdbool.h>
#include <stddef.h>

#include "codec.h"
#include "view_list.h"

typedef struct mc_task_query {
    const char *app_id; /* borrowed from the arguments */
    const char *uuid;
} mc_task_query;

/* Checks GET /api/task's parameters (name, value pairs as the client sent
 * them, value NULL for a name without '='). true with *q filled; false
 * with a sentence naming the parameter in why. */
bool mc_task_query_check(const mc_kv *args, size_t n, mc_task_query *q, char *why, size_t whylen);

/* GET /api/tasks and /api/stats, checked. */
#define MC_TASKS_QUERY_MAX_PARTITIONS 1024
typedef struct mc_tasks_query {
    mc_view_filter filter; /* its strings borrowed from the arguments */
    /* Which partitions a forwarded question asks about (only an instance's
     * own gateway, passing a question on, names them). */
    bool has_partitions;
    int32_t partitions[MC_TASKS_QUERY_MAX_PARTITIONS];
    size_t n_partitions;
} mc_tasks_query;

/* Checks GET /api/tasks's parameters (stats false: appId, state as a
 * comma-separated list of states, dueFrom and dueTo in epoch milliseconds,
 * limit 1..1000, after a cursor) or GET /api/stats's (stats true: appId),
 * both also taking partitions. true with *q filled; false with a sentence
 * naming the parameter in why. */
bool mc_tasks_query_check(const mc_kv *args, size_t n, bool stats, mc_tasks_query *q, char *why,
                          size_t whylen);
/* The query string asking what q asks, partitions left out, percent-encoded.
 * Caller frees it; NULL on ENOMEM. */
char *mc_tasks_query_string(const mc_tasks_query *q, bool stats);

#endif
