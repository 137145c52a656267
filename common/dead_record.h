/* Dead letters as they are read back from <prefix>dead: one record decoded
 * (its letter, or why it is not one), whose it is (a task key, an app), and
 * the selection requeue and the gateway make of them (all, a key, a reason,
 * named letters). Shared by mooncakectl (dead, requeue) and the gateway's
 * dead-letter routes. Pure functions, any thread. */
#ifndef MOONCAKE_DEAD_RECORD_H
#define MOONCAKE_DEAD_RECORD_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"

/* One record of dead, decoded. */
typedef struct mc_dead_record {
    mc_codec_err err; /* not a DeadLetter (MC_CODEC_EMPTY: no value) */
    char detail[256]; /* the decoder's detail when err */
    bool task;        /* it carries a task: d.task */
    mc_dead_letter d; /* when !err; points into the arena and the message */
} mc_dead_record;

/* Decodes record m of dead into r, with arena (reset by the caller between
 * records). r points into m and arena, which must outlive it. */
void mc_dead_decode(const rd_kafka_message_t *m, mc_arena *arena, mc_dead_record *r);

/* Does record m belong to the task key want ("app/id"): its record key, or
 * app/id (the task it names; NULL when none). */
bool mc_dead_key_matches(const char *want, const rd_kafka_message_t *m, const char *app,
                         const char *id);

/* Is the letter app_id's: its record key "app_id/..." or its task's app. */
bool mc_dead_app_matches(const char *app_id, const rd_kafka_message_t *m, const mc_dead_record *r);

/* A letter named by where it is in dead. */
typedef struct mc_letter_ref {
    int32_t partition;
    int64_t offset;
} mc_letter_ref;

/* Sorts refs by partition then offset and drops repeats; returns how many
 * are left. */
size_t mc_letter_refs_sort(mc_letter_ref *refs, size_t n);
/* Is (partition, offset) among sorted refs[0..n)? */
bool mc_letter_refs_has(const mc_letter_ref *refs, size_t n, int32_t partition, int64_t offset);

/* Which letters a requeue deals with. Strings and refs are borrowed. */
typedef struct mc_dead_filter {
    bool all;
    const char *key;              /* the letter's record key or its task's app/id */
    const char *reason;           /* in a decoded letter's reason, ignoring case */
    const mc_letter_ref *letters; /* sorted (mc_letter_refs_sort); NULL: not by place */
    size_t n_letters;
    const char *app_id; /* with letters: a named letter of another app is refused */
} mc_dead_filter;

typedef enum mc_dead_match {
    MC_DEAD_NOT_MATCHED,
    MC_DEAD_MATCHED,
    MC_DEAD_FOREIGN, /* named, but another app's: refused, nothing of it written */
} mc_dead_match;

/* What filter f makes of record m (decoded into r). */
mc_dead_match mc_dead_filter_match(const mc_dead_filter *f, const rd_kafka_message_t *m,
                                   const mc_dead_record *r);

#endif
