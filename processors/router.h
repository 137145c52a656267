/* The router processor: tasks -> wheel | dead (see router.c). */
#ifndef MOONCAKE_ROUTER_H
#define MOONCAKE_ROUTER_H

#include "processor.h"

extern const mc_processor mc_router_processor;

/* The other versions of Command the router accepts (--command-writer-schemas:
 * "file.avsc" or "ID=file.avsc", comma-separated), each loaded and checked
 * against ours. Returns 0 and sets *out (caller frees it with
 * mc_command_writers_free) and *n; -1 with a line in err naming the file and
 * what makes it unreadable as our Command. */
struct mc_codec_writer;
int mc_command_writers_load(const char *spec, struct mc_codec_writer **out, size_t *n, char *err,
                            size_t errlen);
void mc_command_writers_free(struct mc_codec_writer *w, size_t n);

#endif
