/* Other versions of a schema clients write with (--command-writer-schemas,
 * --job-command-writer-schemas): each .avsc file loaded and checked once, at
 * start, against ours, so a record written with it is read by schema
 * resolution (codec_resolve.c) and a file that cannot be read as ours stops
 * the start with the field named. */
#ifndef MOONCAKE_WRITER_SCHEMAS_H
#define MOONCAKE_WRITER_SCHEMAS_H

#include <stddef.h>

#include "codec.h"

/* Loads spec ("file.avsc" or "ID=file.avsc", comma-separated; ID, a Confluent
 * schema id, only for Command) as versions of schema `reader`: 0 with *out
 * (free with mc_writer_schemas_free) and *n, which are NULL and 0 for an
 * empty spec; -1 with a line in err that starts with `flag` and names the
 * file and what makes it unreadable. Any thread. */
int mc_writer_schemas_load(const char *spec, mc_schema_id reader, const char *flag,
                           mc_codec_writer **out, size_t *n, char *err, size_t errlen);
void mc_writer_schemas_free(mc_codec_writer *w, size_t n);

#endif
