/* Idempotency-Key memory; see idempotency.h. Entries sit in a hash map by
 * scope and in a list by age; the TTL is the same for all, so the oldest
 * entry is always the next to expire and a sweep from the list's head on
 * each lookup keeps the map bounded without a timer. */
#include "idempotency.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "keymap.h"

typedef struct entry {
    struct entry *older, *newer; /* age list */
    int64_t expires_at;
    uint8_t sha[32];
    bool answered;
    int status;
    char *body;      /* the answer, once answered */
    mc_keynode node; /* key bytes follow it */
    char key[];
} entry;

struct mc_idem {
    pthread_mutex_t lock;
    mc_keymap *map;
    entry *oldest, *newest;
    size_t n, max_keys;
    int64_t ttl_ms;
};

#define NODE_TO_ENTRY(n) ((entry *)((char *)(n)-offsetof(entry, node)))

mc_idem *mc_idem_new(size_t max_keys, int64_t ttl_ms)
{
    mc_idem *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->map = mc_keymap_new(offsetof(entry, key) - offsetof(entry, node));
    if (!c->map || pthread_mutex_init(&c->lock, NULL) != 0) {
        mc_keymap_free(c->map);
        free(c);
        return NULL;
    }
    c->max_keys = max_keys ? max_keys : 1;
    c->ttl_ms = ttl_ms;
    return c;
}

static void unlink_entry(mc_idem *c, entry *e)
{
    mc_keymap_remove(c->map, &e->node);
    if (e->older)
        e->older->newer = e->newer;
    else
        c->oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else
        c->newest = e->older;
    c->n--;
    free(e->body);
    free(e);
}

void mc_idem_free(mc_idem *c)
{
    if (!c)
        return;
    while (c->oldest)
        unlink_entry(c, c->oldest);
    mc_keymap_free(c->map);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static entry *find(mc_idem *c, const char *scope, size_t len)
{
    mc_keynode *n = mc_keymap_find(c->map, scope, len, mc_keymap_hash(scope, len));
    return n ? NODE_TO_ENTRY(n) : NULL;
}

mc_idem_state mc_idem_begin(mc_idem *c, const char *scope, size_t len,
                            const uint8_t body_sha256[32], int64_t now_ms, int *status, char **body)
{
    mc_idem_state st;
    pthread_mutex_lock(&c->lock);
    while (c->oldest && c->oldest->expires_at <= now_ms)
        unlink_entry(c, c->oldest);
    entry *e = find(c, scope, len);
    if (e) {
        if (memcmp(e->sha, body_sha256, 32) != 0) {
            st = MC_IDEM_MISMATCH;
        } else if (!e->answered) {
            st = MC_IDEM_IN_FLIGHT;
        } else {
            *status = e->status;
            *body = strdup(e->body);
            st = *body ? MC_IDEM_REPLAY : MC_IDEM_NOMEM;
        }
        pthread_mutex_unlock(&c->lock);
        return st;
    }
    while (c->n >= c->max_keys && c->oldest)
        unlink_entry(c, c->oldest);
    e = calloc(1, sizeof *e + len);
    if (!e) {
        pthread_mutex_unlock(&c->lock);
        return MC_IDEM_NOMEM;
    }
    memcpy(e->key, scope, len);
    memcpy(e->sha, body_sha256, 32);
    e->expires_at = now_ms + c->ttl_ms;
    e->node.hash = mc_keymap_hash(scope, len);
    e->node.key_len = (uint32_t)len;
    mc_keymap_insert(c->map, &e->node);
    e->older = c->newest;
    if (c->newest)
        c->newest->newer = e;
    else
        c->oldest = e;
    c->newest = e;
    c->n++;
    pthread_mutex_unlock(&c->lock);
    return MC_IDEM_NEW;
}

void mc_idem_finish(mc_idem *c, const char *scope, size_t len, int status, const char *body)
{
    pthread_mutex_lock(&c->lock);
    entry *e = find(c, scope, len);
    /* Gone already when evicted or expired meanwhile: nothing to keep. */
    if (e && !e->answered) {
        char *copy = body ? strdup(body) : NULL;
        if (copy) {
            e->answered = true;
            e->status = status;
            e->body = copy;
        } else {
            unlink_entry(c, e);
        }
    }
    pthread_mutex_unlock(&c->lock);
}

size_t mc_idem_count(mc_idem *c)
{
    pthread_mutex_lock(&c->lock);
    size_t n = c->n;
    pthread_mutex_unlock(&c->lock);
    return n;
}
