/* Intrusive chained hash map for task keys (see keymap.h). Chaining rather
 * than open addressing because entries are the caller's own allocations: a
 * bucket array of pointers costs 8 bytes per entry at load 1 and never moves
 * an entry, so the timers embedded next to the node stay valid. */
#include "keymap.h"

#include <stdlib.h>
#include <string.h>

struct mc_keymap {
    mc_keynode **buckets;
    size_t mask; /* bucket count - 1 */
    size_t count;
    size_t key_offset;
};

#define INITIAL_BUCKETS 64

mc_keymap *mc_keymap_new(size_t key_offset)
{
    mc_keymap *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->buckets = calloc(INITIAL_BUCKETS, sizeof *m->buckets);
    if (!m->buckets) {
        free(m);
        return NULL;
    }
    m->mask = INITIAL_BUCKETS - 1;
    m->key_offset = key_offset;
    return m;
}

void mc_keymap_free(mc_keymap *m)
{
    if (!m)
        return;
    free(m->buckets);
    free(m);
}

/* FNV-1a over the bytes, then a final avalanche (from murmur3's fmix32) so
 * the low bits that pick the bucket depend on every byte: task keys share
 * long prefixes ("shop/0193..."). */
uint32_t mc_keymap_hash(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

static const char *key_of(const mc_keymap *m, const mc_keynode *n)
{
    return (const char *)n + m->key_offset;
}

mc_keynode *mc_keymap_find(const mc_keymap *m, const void *key, size_t len, uint32_t hash)
{
    for (mc_keynode *n = m->buckets[hash & m->mask]; n; n = n->next)
        if (n->hash == hash && n->key_len == len && memcmp(key_of(m, n), key, len) == 0)
            return n;
    return NULL;
}

static void grow(mc_keymap *m)
{
    size_t n = (m->mask + 1) * 2;
    mc_keynode **b = calloc(n, sizeof *b);
    if (!b)
        return; /* keep the longer chains */
    for (size_t i = 0; i <= m->mask; i++) {
        mc_keynode *e = m->buckets[i];
        while (e) {
            mc_keynode *next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
            e = next;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->mask = n - 1;
}

void mc_keymap_insert(mc_keymap *m, mc_keynode *n)
{
    if (m->count >= m->mask + 1)
        grow(m);
    mc_keynode **b = &m->buckets[n->hash & m->mask];
    n->next = *b;
    *b = n;
    m->count++;
}

void mc_keymap_remove(mc_keymap *m, mc_keynode *n)
{
    for (mc_keynode **p = &m->buckets[n->hash & m->mask]; *p; p = &(*p)->next) {
        if (*p == n) {
            *p = n->next;
            n->next = NULL;
            m->count--;
            return;
        }
    }
}

size_t mc_keymap_count(const mc_keymap *m)
{
    return m->count;
}

size_t mc_keymap_bytes(const mc_keymap *m)
{
    return sizeof *m + (m->mask + 1) * sizeof *m->buckets;
}

void mc_keymap_drain(mc_keymap *m, void (*fn)(mc_keynode *n, void *arg), void *arg)
{
    for (size_t i = 0; i <= m->mask; i++) {
        mc_keynode *e = m->buckets[i];
        m->buckets[i] = NULL;
        while (e) {
            mc_keynode *next = e->next;
            e->next = NULL;
            m->count--;
            fn(e, arg);
            e = next;
        }
    }
}

void mc_keymap_each(const mc_keymap *m, void (*fn)(mc_keynode *n, void *arg), void *arg)
{
    for (size_t i = 0; i <= m->mask; i++)
        for (mc_keynode *e = m->buckets[i]; e; e = e->next)
            fn(e, arg);
}
