/* Serving the console's compiled-in files; see console.h. */
#include "console.h"

#include <inttypes.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

const mc_console_asset *mc_console_find(const char *url)
{
    static const char prefix[] = "/console/";
    if (strcmp(url, "/console") == 0 || strcmp(url, prefix) == 0)
        url = "/console/index.html";
    if (strncmp(url, prefix, sizeof prefix - 1) != 0)
        return NULL;
    const char *name = url + sizeof prefix - 1;
    for (const mc_console_asset *a = mc_console_assets; a->name; a++)
        if (strcmp(a->name, name) == 0)
            return a;
    return NULL;
}

/* FNV-1a of the bytes: the ETag only has to change when a file does, and
 * it is computed per request because the files are a few tens of KiB. */
static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

void mc_console_add_security_headers(struct MHD_Response *r)
{
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
}

struct MHD_Response *mc_console_response(const mc_console_asset *a, const char *if_none_match,
                                         unsigned *status)
{
    char etag[24];
    snprintf(etag, sizeof etag, "\"%016" PRIx64 "\"", fnv1a(a->data, a->len));
    bool fresh = if_none_match && strcmp(if_none_match, etag) == 0;
    struct MHD_Response *r =
        fresh ? MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT)
              : MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return NULL;
    *status = fresh ? MHD_HTTP_NOT_MODIFIED : MHD_HTTP_OK;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, a->type);
    /* Revalidated on every load, so an upgrade is seen at once. */
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, etag);
    MHD_add_response_header(r, "Content-Security-Policy", MC_CONSOLE_CSP);
    mc_console_add_security_headers(r);
    return r;
}
