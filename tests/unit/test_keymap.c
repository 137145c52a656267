/* Unit tests of the intrusive key map the store and the wheel keep their
 * per-task state in: every key found after growth, removal exact, equal
 * hashes kept apart, drain visits each node once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "keymap.h"

typedef struct item {
    mc_keynode node;
    int value;
    char key[];
} item;

#define KEY_OFF (offsetof(item, key) - offsetof(item, node))

static item *make(const char *key, int value)
{
    size_t n = strlen(key);
    item *it = calloc(1, sizeof *it + n);
    memcpy(it->key, key, n);
    it->node.key_len = (uint32_t)n;
    it->node.hash = mc_keymap_hash(key, n);
    it->value = value;
    return it;
}

static item *lookup(mc_keymap *m, const char *key)
{
    size_t n = strlen(key);
    return (item *)mc_keymap_find(m, key, n, mc_keymap_hash(key, n));
}

static void count_and_free(mc_keynode *n, void *arg)
{
    (*(int *)arg)++;
    free(n);
}

int main(void)
{
    mc_keymap *m = mc_keymap_new(KEY_OFF);
    CHECK(m != NULL);
    enum { N = 100000 };
    char key[64];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "shop/0193a1b2-%08d", i);
        mc_keymap_insert(m, &make(key, i)->node);
    }
    CHECK(mc_keymap_count(m) == N);
    /* Grown to load factor <= 1: the bucket array holds at least N pointers. */
    CHECK(mc_keymap_bytes(m) >= N * sizeof(void *));
    int wrong = 0;
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "shop/0193a1b2-%08d", i);
        item *it = lookup(m, key);
        wrong += !it || it->value != i;
    }
    CHECK(wrong == 0, "%d keys not found after growth", wrong);
    CHECK(lookup(m, "shop/absent") == NULL);
    CHECK(lookup(m, "shop/0193a1b2-0000000") == NULL, "a prefix of a key is not the key");

    for (int i = 0; i < N; i += 2) {
        snprintf(key, sizeof key, "shop/0193a1b2-%08d", i);
        item *it = lookup(m, key);
        mc_keymap_remove(m, &it->node);
        free(it);
    }
    CHECK(mc_keymap_count(m) == N / 2);
    wrong = 0;
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "shop/0193a1b2-%08d", i);
        wrong += (lookup(m, key) != NULL) != (i % 2 == 1);
    }
    CHECK(wrong == 0, "%d keys wrong after removing the even ones", wrong);

    /* Two different keys with the same hash stay distinct. */
    item *a = make("app/a", 1), *b = make("app/b", 2);
    a->node.hash = b->node.hash = 42;
    mc_keymap_insert(m, &a->node);
    mc_keymap_insert(m, &b->node);
    CHECK(mc_keymap_find(m, "app/a", 5, 42) == &a->node);
    CHECK(mc_keymap_find(m, "app/b", 5, 42) == &b->node);
    mc_keymap_remove(m, &a->node);
    free(a);
    CHECK(mc_keymap_find(m, "app/a", 5, 42) == NULL);
    CHECK(mc_keymap_find(m, "app/b", 5, 42) == &b->node);

    int drained = 0;
    mc_keymap_drain(m, count_and_free, &drained);
    CHECK(drained == N / 2 + 1, "drain visited %d nodes", drained);
    CHECK(mc_keymap_count(m) == 0);
    mc_keymap_free(m);
    return check_exit("test_keymap");
}
