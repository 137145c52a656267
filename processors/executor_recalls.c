/* The executor's memory of recent recalls (see executor_recalls.h): a keymap
 * of each key's newest recall, and the same entries in a queue by when they
 * expire, so what has expired is forgotten from the front. Expiry follows
 * the newest timestamp read: records of several producers are not in
 * timestamp order, and a partition read again from an earlier offset must
 * not bring forgotten recalls back to life with older timestamps. */
#include "executor_recalls.h"

#include <stdlib.h>
#include <string.h>

#include "keymap.h"

typedef struct recall_entry {
    mc_keynode node;
    struct recall_entry *queue_next;
    mc_version version;   /* the newest recall's */
    int64_t offset;       /* of the recall that set version */
    int64_t until;        /* the latest timestamp a fire may have to be voided */
    int64_t queued_until; /* until, when it was queued where it is */
    char key[];
} recall_entry;

struct mc_recall_memory {
    mc_keymap *keys;
    recall_entry *front, *back;
    int64_t keep_ms;
    int64_t latest_ts; /* the newest timestamp read */
};

mc_recall_memory *mc_recall_memory_new(int64_t keep_ms)
{
    mc_recall_memory *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->keep_ms = keep_ms;
    m->latest_ts = INT64_MIN;
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
    for (recall_entry *e = m->front, *next; e; e = next) {
        next = e->queue_next;
        free(e);
    }
    mc_keymap_free(m->keys);
    free(m);
}

static void enqueue(mc_recall_memory *m, recall_entry *e)
{
    e->queue_next = NULL;
    e->queued_until = e->until;
    if (m->back)
        m->back->queue_next = e;
    else
        m->front = e;
    m->back = e;
}

/* Forgets what expired before the newest timestamp read. An entry renewed
 * since it was queued goes to the back instead (once per renewal at most),
 * so a key recalled again and again never holds the others in memory. */
static void forget_expired(mc_recall_memory *m, int64_t ts)
{
    if (ts > m->latest_ts)
        m->latest_ts = ts;
    while (m->front && m->front->queued_until < m->latest_ts) {
        recall_entry *e = m->front;
        m->front = e->queue_next;
        if (!m->front)
            m->back = NULL;
        if (e->until >= m->latest_ts) {
            enqueue(m, e);
            continue;
        }
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
                          int64_t offset, int64_t ts)
{
    forget_expired(m, ts);
    int64_t until = ts + m->keep_ms;
    recall_entry *e = find(m, key, len);
    if (e) {
        if (mc_version_cmp(version, e->version) > 0) {
            e->version = version;
            e->offset = offset;
        }
        if (until > e->until)
            e->until = until;
        return 0;
    }
    if (len > UINT32_MAX || !(e = malloc(sizeof *e + len)))
        return -1;
    memcpy(e->key, key, len);
    e->node.hash = mc_keymap_hash(key, len);
    e->node.key_len = (uint32_t)len;
    e->version = version;
    e->offset = offset;
    e->until = until;
    mc_keymap_insert(m->keys, &e->node);
    enqueue(m, e);
    return 0;
}

bool mc_recall_memory_voids(mc_recall_memory *m, const char *key, size_t len, mc_version version,
                            int64_t offset, int64_t ts)
{
    forget_expired(m, ts);
    const recall_entry *e = find(m, key, len);
    return e && offset > e->offset && ts <= e->until && mc_version_cmp(version, e->version) < 0;
}

size_t mc_recall_memory_count(const mc_recall_memory *m)
{
    return mc_keymap_count(m->keys);
}
