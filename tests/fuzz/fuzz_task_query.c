/* libFuzzer harness for mc_task_query_check, GET /api/task's parameters:
 * the input is a query string split at '&' and the first '=' as
 * libmicrohttpd hands it over. Any parameters are refused with a reason or
 * accepted as ids that name a task (an appId without '/', a uuid, both
 * given once), never a crash or an overread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "task_query.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    mc_kv args[16];
    size_t n = 0;
    for (char *save = NULL, *part = strtok_r(text, "&", &save); part && n < 16;
         part = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(part, '=');
        if (eq)
            *eq = '\0';
        args[n++] = (mc_kv){part, eq ? eq + 1 : NULL};
    }
    mc_task_query q;
    char why[256] = "";
    if (mc_task_query_check(args, n, &q, why, sizeof why)) {
        if (!q.app_id || !q.uuid || !q.app_id[0] || !q.uuid[0] || strchr(q.app_id, '/')) {
            fprintf(stderr, "accepted ids that name no task\n");
            abort();
        }
    } else if (!why[0]) {
        fprintf(stderr, "refused without a reason\n");
        abort();
    }
    free(text);
    return 0;
}
