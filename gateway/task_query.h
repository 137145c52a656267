/* The query strings of the task questions (GET /api/task), checked: which
 * parameters there are, that each is given once, and that the ids could name
 * a task. Separate from the HTTP code so a fuzzer can throw any parameters at
 * it. Pure; any thread. */
#ifndef MOONCAKE_TASK_QUERY_H
#define MOONCAKE_TASK_QUERY_H

#include <stdbool.h>
#include <stddef.h>

#include "codec.h"

typedef struct mc_task_query {
    const char *app_id; /* borrowed from the arguments */
    const char *uuid;
} mc_task_query;

/* Checks GET /api/task's parameters (name, value pairs as the client sent
 * them, value NULL for a name without '='). true with *q filled; false
 * with a sentence naming the parameter in why. */
bool mc_task_query_check(const mc_kv *args, size_t n, mc_task_query *q, char *why, size_t whylen);

#endif
