/* One Kafka record as a processor sees it: where it came from (topic,
 * partition, offset), its key, value and headers. The runner makes one from
 * each consumed librdkafka message without copying anything; a test makes
 * one from plain arrays (tests/sim), so a processor can be driven record by
 * record without a broker - the role Kafka Streams' Record plays for its
 * Processor API. */
#ifndef MOONCAKE_RECORD_H
#define MOONCAKE_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mc_header {
    const char *name;  /* NUL-terminated */
    const void *value; /* len bytes; NULL for a header without a value */
    size_t len;
} mc_header;

typedef struct mc_record {
    const char *topic; /* full topic name */
    int32_t partition;
    int64_t offset;
    int64_t timestamp_ms;
    const void *key; /* NULL: no key */
    size_t key_len;
    const void *value; /* NULL: a null value (tombstone, marker) */
    size_t value_len;
    /* Headers given as an array (a test's record), when kafka_message is NULL. */
    const mc_header *headers;
    size_t n_headers;
    /* The librdkafka message this record was made from (the runner's), whose
     * headers are parsed only when a processor asks for one. */
    const void *kafka_message;
} mc_record;

/* The last header called name: true with its value (not copied; valid as
 * long as the record) in *value and *len, false when there is none. */
bool mc_record_header(const mc_record *r, const char *name, const void **value, size_t *len);
/* The last header called name as a non-negative decimal integer: false when
 * it is absent or is not one. */
bool mc_record_header_int(const mc_record *r, const char *name, int64_t *out);
/* The same for a version, which may be negative: one written before a
 * growth of the partition count is shifted below zero (layout.h). */
bool mc_record_header_version(const mc_record *r, const char *name, int64_t *out);

/* Identifies one input record: what an output answers, when a processor
 * produces it outside process() (a finished HTTP call, a fired task). */
typedef struct mc_source {
    const char *topic;
    int32_t partition;
    int64_t offset;
} mc_source;

#endif
