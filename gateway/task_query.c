/* GET /api/task's parameters (see task_query.h). */
#include "task_query.h"

#include <stdio.h>
#include <string.h>

#include "task_rules.h"

bool mc_task_query_check(const mc_kv *args, size_t n, mc_task_query *q, char *why, size_t whylen)
{
    *q = (mc_task_query){0};
    for (size_t i = 0; i < n; i++) {
        const char **slot = strcmp(args[i].key, "appId") == 0  ? &q->app_id
                            : strcmp(args[i].key, "uuid") == 0 ? &q->uuid
                                                               : NULL;
        if (!slot) {
            snprintf(why, whylen, "unknown parameter '%.100s': GET /api/task takes appId and uuid",
                     args[i].key);
            return false;
        }
        if (*slot) {
            snprintf(why, whylen, "%s is given twice", args[i].key);
            return false;
        }
        *slot = args[i].value ? args[i].value : "";
    }
    if (!q->app_id || !q->app_id[0]) {
        snprintf(why, whylen, "appId is required: GET /api/task?appId=...&uuid=...");
        return false;
    }
    if (!q->uuid || !q->uuid[0]) {
        snprintf(why, whylen, "uuid is required: GET /api/task?appId=...&uuid=...");
        return false;
    }
    return mc_task_ids_ok(q->app_id, q->uuid,
                          &(mc_task_field_names){.app_id = "appId", .task_id = "uuid"}, why,
                          whylen);
}
