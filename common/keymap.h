/* An intrusive hash map from task keys ("app/task") to the caller's structs,
 * for the store's and the wheel's per-task state. Intrusive, like the timing
 * wheel: the caller embeds an mc_keynode and keeps the key bytes at a fixed
 * distance after it, so the map adds one bucket pointer per entry and no
 * allocation per entry - that is what keeps the store's overhead per pending
 * task under 100 bytes. Separate chaining, power-of-two bucket array grown at
 * load factor 1. Not thread-safe. */
#ifndef MOONCAKE_KEYMAP_H
#define MOONCAKE_KEYMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct mc_keynode {
    struct mc_keynode *next; /* private to the map */
    uint32_t hash;           /* set by the caller with mc_keymap_hash() before insert */
    uint32_t key_len;        /* set by the caller */
} mc_keynode;

typedef struct mc_keymap mc_keymap;

/* Makes an empty map whose nodes keep their key bytes key_offset bytes after
 * the start of the mc_keynode. Caller owns it (mc_keymap_free). NULL on ENOMEM. */
mc_keymap *mc_keymap_new(size_t key_offset);
/* Frees the map only; the nodes are the caller's (see mc_keymap_drain). */
void mc_keymap_free(mc_keymap *m);

uint32_t mc_keymap_hash(const void *key, size_t len);
/* The node with this key, or NULL. hash is mc_keymap_hash(key, len). */
mc_keynode *mc_keymap_find(const mc_keymap *m, const void *key, size_t len, uint32_t hash);
/* Links n (whose key must not be in the map yet). Growing the bucket array
 * may fail on ENOMEM; the node is linked anyway and lookups stay correct,
 * only slower. */
void mc_keymap_insert(mc_keymap *m, mc_keynode *n);
/* Unlinks n, which must be in the map. */
void mc_keymap_remove(mc_keymap *m, mc_keynode *n);
size_t mc_keymap_count(const mc_keymap *m);
/* Bytes the map itself uses (the bucket array and its header). */
size_t mc_keymap_bytes(const mc_keymap *m);
/* Calls fn(node, arg) on every node; fn must not change the map. */
void mc_keymap_each(const mc_keymap *m, void (*fn)(mc_keynode *n, void *arg), void *arg);
/* Unlinks every node, calling fn(node, arg) on each after unlinking it (fn
 * may free it). */
void mc_keymap_drain(mc_keymap *m, void (*fn)(mc_keynode *n, void *arg), void *arg);

#endif
