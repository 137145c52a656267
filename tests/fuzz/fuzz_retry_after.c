/* libFuzzer harness for mc_parse_retry_after, which reads a header sent by
 * whatever server a task calls: any bytes give -1 or a delay within the
 * clamp, never a crash or an out-of-bounds read (the value is not
 * NUL-terminated, as curl hands it over). */
#include "retry_policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One fuzz input, copied to an exact-size buffer so ASan sees any overread. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *v = malloc(size ? size : 1);
    if (!v)
        return 0;
    if (size)
        memcpy(v, data, size);
    const int64_t now = 1795330000000; /* fixed: the result must not depend on the clock */
    int64_t d = mc_parse_retry_after(v, size, now);
    if (d != -1 && (d < 0 || d > MC_RETRY_AFTER_MAX_MS)) {
        fprintf(stderr, "Retry-After of %zu bytes gave %lld ms\n", size, (long long)d);
        abort();
    }
    free(v);
    return 0;
}
