/* Header lookup on a record, whichever way it was made (see record.h). */
#include "record.h"

#include <librdkafka/rdkafka.h>
#include <string.h>

#include "config.h"

bool mc_record_header(const mc_record *r, const char *name, const void **value, size_t *len)
{
    if (r->kafka_message) {
        rd_kafka_headers_t *h = NULL;
        if (rd_kafka_message_headers(r->kafka_message, &h) || !h)
            return false;
        return rd_kafka_header_get_last(h, name, value, len) == RD_KAFKA_RESP_ERR_NO_ERROR;
    }
    for (size_t i = r->n_headers; i-- > 0;) {
        if (strcmp(r->headers[i].name, name) == 0) {
            *value = r->headers[i].value;
            *len = r->headers[i].len;
            return true;
        }
    }
    return false;
}

/* The header as a decimal integer in [min, INT64_MAX]. */
static bool header_number(const mc_record *r, const char *name, int64_t min, int64_t *out)
{
    const void *v;
    size_t n;
    char text[24];
    if (!mc_record_header(r, name, &v, &n) || !v || n == 0 || n >= sizeof text)
        return false;
    memcpy(text, v, n);
    text[n] = '\0';
    return mc_parse_int64(text, min, INT64_MAX, out);
}

bool mc_record_header_int(const mc_record *r, const char *name, int64_t *out)
{
    return header_number(r, name, 0, out);
}

bool mc_record_header_version(const mc_record *r, const char *name, int64_t *out)
{
    return header_number(r, name, INT64_MIN, out);
}
