/* The console's files, compiled into the binary (gateway/console/embed.cmake
 * writes the table from gateway/console/), and the answers that serve them
 * under /console/ with the headers that keep the page to itself: a strict
 * Content-Security-Policy (scripts and styles of this origin only, nothing
 * inline, no frames, no other site), nosniff and no Referer. */
#ifndef MOONCAKE_CONSOLE_H
#define MOONCAKE_CONSOLE_H

#include <stddef.h>

struct MHD_Response;

typedef struct mc_console_asset {
    const char *name; /* the file name: served as /console/<name> */
    const char *type; /* its media type */
    const unsigned char *data;
    size_t len;
} mc_console_asset;

/* Every file, ended by one whose name is NULL. */
extern const mc_console_asset mc_console_assets[];

/* The Content-Security-Policy every console answer carries. */
#define MC_CONSOLE_CSP                                                                             \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "              \
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/* The file a /console URL names ("/console/" and "/console/index.html" the
 * page, "/console/x.js" that file), or NULL. Any thread. */
const mc_console_asset *mc_console_find(const char *url);

/* The answer for asset a (static memory, not copied) with its caching and
 * security headers: 304 and no body when if_none_match (the request's
 * If-None-Match, or NULL) is its ETag. *status is set to the status to
 * queue it with. Caller owns the response (MHD_destroy_response); NULL on
 * ENOMEM. Any thread. */
struct MHD_Response *mc_console_response(const mc_console_asset *a, const char *if_none_match,
                                         unsigned *status);

/* Adds the headers that keep a browser from sniffing or framing an answer,
 * or sending its URL elsewhere: for every answer of the gateway. */
void mc_console_add_security_headers(struct MHD_Response *r);

#endif
