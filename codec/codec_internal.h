/* Private to the codec_*.c files: the pieces of the codec that the decoder,
 * the encoder and the schema table share but that no caller should see. */
#ifndef MOONCAKE_CODEC_INTERNAL_H
#define MOONCAKE_CODEC_INTERNAL_H

#include "codec.h"

/* Single-object encoding: C3 01, then the fingerprint little-endian. */
#define MC_SO_MAGIC0 0xC3u
#define MC_SO_MAGIC1 0x01u
#define MC_SO_HEADER_LEN 10u
/* Confluent framing: 00, then a 4-byte big-endian schema-registry id. */
#define MC_CONFLUENT_MAGIC 0x00u
#define MC_CONFLUENT_HEADER_LEN 5u

/* Allocates n bytes with no alignment guarantee (strings and byte arrays),
 * so short strings do not each waste up to 7 bytes of the arena. */
void *mc_arena_alloc_unaligned(mc_arena *a, size_t n);

/* Bytes the arena currently holds from malloc (all its blocks), so the
 * fuzz harnesses can check that a decode's memory stays proportional to its
 * input. */
size_t mc_arena_footprint(const mc_arena *a);

/* Makes room for n more bytes in b; 0, or -1 on ENOMEM (b unchanged). */
int mc_buf_reserve(mc_buf *b, size_t n);

#endif
