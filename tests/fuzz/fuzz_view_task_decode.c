/* libFuzzer harness for mc_view_task_decode: a view restores its table from
 * the `views` changelog, which anyone with access to the cluster can write.
 * Any bytes are refused or decoded into a task whose answer can be built and
 * whose bytes, encoded again, decode to the same bytes once more; never a
 * crash, an overread (the value is copied to an exact-size buffer) or a
 * leak. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view_task.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "%s\n", what);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *v = malloc(size ? size : 1);
    if (!v)
        return 0;
    if (size)
        memcpy(v, data, size);
    const char *why = NULL;
    mc_view_task *t = mc_view_task_decode("a/b", 3, v, size, &why);
    if (!t) {
        if (!why)
            fail("refused without a reason");
        free(v);
        return 0;
    }
    json_t *j = mc_view_task_json(t, 100, 1000);
    if (!j)
        fail("no answer for a task it decoded");
    json_decref(j);
    mc_buf once = {0}, twice = {0};
    if (mc_view_task_encode(t, &once) != 0)
        fail("cannot encode a task it decoded");
    mc_view_task *back = mc_view_task_decode("a/b", 3, once.data, once.len, &why);
    if (!back || mc_view_task_encode(back, &twice) != 0)
        fail("refused its own encoding");
    if (once.len != twice.len || memcmp(once.data, twice.data, once.len) != 0)
        fail("decode and encode are not inverse on their own bytes");
    mc_buf_free(&once);
    mc_buf_free(&twice);
    mc_view_task_free(back);
    mc_view_task_free(t);
    free(v);
    return 0;
}
