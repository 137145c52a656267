/* Loading the other versions of a schema clients write with (writer_schemas.h). */
#include "writer_schemas.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

void mc_writer_schemas_free(mc_codec_writer *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mc_writer_schema_free((mc_writer_schema *)w[i].schema);
    free(w);
}

int mc_writer_schemas_load(const char *spec, mc_schema_id reader, const char *flag,
                           mc_codec_writer **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    if (!spec || !*spec)
        return 0;
    size_t cap = 1;
    for (const char *p = spec; *p; p++)
        cap += *p == ',';
    mc_codec_writer *w = calloc(cap, sizeof *w);
    char *copy = strdup(spec);
    if (!w || !copy) {
        free(w);
        free(copy);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t count = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        int32_t id = -1;
        char *eq = strchr(tok, '=');
        if (eq) {
            *eq = '\0';
            int64_t v;
            if (!mc_parse_int64(tok, 0, INT32_MAX, &v)) {
                snprintf(err, errlen, "%s: '%s' is not a Confluent schema id (ID=FILE)", flag, tok);
                goto fail;
            }
            id = (int32_t)v;
            tok = eq + 1;
        }
        char why[600];
        char *text = mc_config_read_file(tok, flag, NULL, err, errlen);
        if (!text)
            goto fail;
        mc_writer_schema *ws = mc_writer_schema_new(text, reader, why, sizeof why);
        free(text);
        if (!ws) {
            snprintf(err, errlen, "%s: %s: %s", flag, tok, why);
            goto fail;
        }
        w[count++] = (mc_codec_writer){ws, id};
    }
    free(copy);
    *out = w;
    *n = count;
    return 0;
fail:
    free(copy);
    mc_writer_schemas_free(w, count);
    return -1;
}
