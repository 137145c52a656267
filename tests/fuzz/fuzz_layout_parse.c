/* libFuzzer harness for mc_layout_parse: the layout record comes from a
 * topic anyone with access to the cluster can write, and the router routes
 * by it. Any bytes are refused or parsed into a layout that formats back to
 * the same bytes (so nothing is read that the text does not say), never a
 * crash, an overread (the value is not NUL-terminated) or a leak. */
#include "layout.h"

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
    mc_layout l;
    if (mc_layout_parse(v, size, &l)) {
        size_t n = mc_layout_format(&l, NULL, 0);
        char *back = malloc(n + 1);
        if (!back)
            abort();
        mc_layout_format(&l, back, n + 1);
        if (n != size || memcmp(back, v, n) != 0) {
            fprintf(stderr, "layout of %zu bytes formats back as %zu different bytes\n", size, n);
            abort();
        }
        if (l.partitions <= 0 || (l.split && l.n_split <= 0)) {
            fprintf(stderr, "accepted a layout without partitions\n");
            abort();
        }
        free(back);
        mc_layout_free(&l);
    }
    free(v);
    return 0;
}
