/* The executor's memory of recent recalls (see executor_recalls.h): a keymap
 * of each key's newest recall, and the same entries in the order they were
 * noted, so what has expired is forgotten from the front. */
#include "executor_recalls.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "keymap.h"

typedef struct recall_entry {
    mc_keynode node;
    struct recall_entry *next_noted; /* noted after it */
    mc_version version;
    int64_t until; /* forgotten after */
    char key[];
} recall_entry;

struct mc_recall_memory {
    mc_keymap *keys;
    recall_entry *oldest, *newest;
    int64_t keep_ms;
};

mc_recall_memory *mc_recall_memory_new(int64_t keep_ms)
{
    mc_recall_memory *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->keep_ms = keep_ms;
    m->keys = mc_keymap_new(offsetof(recall_entry, key) - offsetof(recall_entry, node));
    if (!m->keys) {
        free(m);
        return NULL;
    }
    return m;
}

void mc_recall_memory_free(mc_recall_memory *m)
{
    if (!m)
        return;
    for (recall_entry *e = m->oldest, *next; e; e = next) {
        next = e->next_noted;
        free(e);
    }
    mc_keymap_free(m->keys);
    free(m);
}

/* Forgets the entries at the front whose time is up. An entry renewed by a
 * later recall stays where it was noted first, and keeps the ones behind it
 * a little longer: the memory stays bounded by twice keep_ms of recalls. */
static void forget_expired(mc_recall_memory *m, int64_t now)
{
    while (m->oldest && m->oldest->until < now) {
        recall_entry *e = m->oldest;
        m->oldest = e->next_noted;
        if (!m->oldest)
            m->newest = NULL;
        mc_keymap_remove(m->keys, &e->node);
        free(e);
    }
}

static recall_entry *find(const mc_recall_memory *m, const char *key, size_t len)
{
    mc_keynode *n = mc_keymap_find(m->keys, key, len, mc_keymap_hash(key, len));
    return n ? (recall_entry *)(void *)((char *)n - offsetof(recall_entry, node)) : NULL;
}

int mc_recall_memory_note(mc_recall_memory *m, const char *key, size_t len, mc_version version,
                          int64_t now)
{
    forget_expired(m, now);
    recall_entry *e = find(m, key, len);
    if (e) {
        if (mc_version_cmp(version, e->version) > 0)
            e->version = version;
        e->until = now + m->keep_ms;
        return 0;
    }
    if (len > UINT32_MAX || !(e = malloc(sizeof *e + len)))
        return -1;
    memcpy(e->key, key, len);
    e->node.hash = mc_keymap_hash(key, len);
    e->node.key_len = (uint32_t)len;
    e->version = version;
    e->until = now + m->keep_ms;
    e->next_noted = NULL;
    mc_keymap_insert(m->keys, &e->node);
    if (m->newest)
        m->newest->next_noted = e;
    else
        m->oldest = e;
    m->newest = e;
    return 0;
}

bool mc_recall_memory_voids(mc_recall_memory *m, const char *key, size_t len, mc_version version,
                            int64_t now)
{
    forget_expired(m, now);
    const recall_entry *e = find(m, key, len);
    return e && e->until >= now && mc_version_cmp(version, e->version) < 0;
}

size_t mc_recall_memory_count(const mc_recall_memory *m)
{
    return mc_keymap_count(m->keys);
}
