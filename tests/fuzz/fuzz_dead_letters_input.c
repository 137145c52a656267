/* libFuzzer harness for what the dead-letter routes take from a client:
 * GET /api/dead-letters's query (mc_dead_job_list; the input split at '&'
 * and the first '=', as libmicrohttpd hands parameters over) when the first
 * byte is even, POST /api/dead-letters/requeue's body (mc_dead_job_requeue)
 * when it is odd. Anything is refused with a 400 and a reason, or accepted
 * as a job with an appId that names an app (not empty, no '/'); never a
 * crash, an overread or a leak. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dead_letters.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Splits text in place at '&' and each part's first '='. */
static size_t split(char *text, mc_kv *args, size_t max)
{
    size_t n = 0;
    for (char *save = NULL, *part = strtok_r(text, "&", &save); part && n < max;
         part = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(part, '=');
        if (eq)
            *eq = '\0';
        args[n++] = (mc_kv){part, eq ? eq + 1 : NULL};
    }
    return n;
}

static void check(unsigned status, mc_dead_job *job, const char *why)
{
    if (status == 0) {
        const char *app = job ? mc_dead_job_app(job) : NULL;
        if (!app || !app[0] || strchr(app, '/')) {
            fprintf(stderr, "accepted a job with no app\n");
            abort();
        }
    } else if (status != 400 || !why[0] || job) {
        fprintf(stderr, "refused without a 400 and a reason (%u)\n", status);
        abort();
    }
    mc_dead_job_free(job);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    char why[256] = "";
    mc_dead_job *job = NULL;
    if (data[0] % 2 == 0) {
        mc_kv args[32];
        size_t n = split(text, args, 32);
        unsigned status = mc_dead_job_list(args, n, 1767290400000, &job, why, sizeof why);
        check(status, job, why);
    } else {
        /* The body as it came, not NUL-terminated. */
        char *body = malloc(size - 1 ? size - 1 : 1);
        if (body) {
            memcpy(body, data + 1, size - 1);
            unsigned status = mc_dead_job_requeue(body, size - 1, &job, why, sizeof why);
            check(status, job, why);
            free(body);
        }
    }
    free(text);
    return 0;
}
