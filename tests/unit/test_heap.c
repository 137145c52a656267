/* The binary min-heap: random pushes and pops, with ties and growth, always
 * give the least element first, checked against a sorted model. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "heap.h"

typedef struct item {
    int64_t key, seq; /* ordered by key, then seq: a total order to compare */
    char pad[16];
} item;

static bool item_less(const void *a, const void *b)
{
    const item *x = a, *y = b;
    return x->key < y->key || (x->key == y->key && x->seq < y->seq);
}

static int cmp_item(const void *a, const void *b)
{
    return item_less(a, b) ? -1 : item_less(b, a) ? 1 : 0;
}

/* Sorted model: the least first. */
static void model_insert(item *m, size_t *n, item e)
{
    size_t i = *n;
    while (i > 0 && item_less(&e, &m[i - 1])) {
        m[i] = m[i - 1];
        i--;
    }
    m[i] = e;
    (*n)++;
}

static void against_a_model(void)
{
    enum { MAX = 5000 };
    item *m = malloc(MAX * sizeof *m);
    size_t n = 0;
    mc_heap h;
    mc_heap_init(&h, sizeof(item), item_less);
    CHECK(mc_heap_top(&h) == NULL, "empty heap has no top");
    srand(14);
    int64_t seq = 0;
    for (int round = 0; round < 20000; round++) {
        bool push = n == 0 || (n < MAX && rand() % 100 < (round < 10000 ? 60 : 40));
        if (push) {
            item e = {.key = rand() % 50, .seq = seq++}; /* many ties on key */
            memset(e.pad, (int)(e.seq & 0x7f), sizeof e.pad);
            CHECK(mc_heap_push(&h, &e) == 0);
            model_insert(m, &n, e);
        } else {
            item *t = mc_heap_top(&h);
            CHECK(t && cmp_item(t, &m[0]) == 0 && t->pad[15] == (char)(t->seq & 0x7f),
                  "round %d: top key %lld seq %lld, want %lld %lld", round,
                  t ? (long long)t->key : -1, t ? (long long)t->seq : -1, (long long)m[0].key,
                  (long long)m[0].seq);
            mc_heap_pop(&h);
            memmove(m, m + 1, (--n) * sizeof *m);
        }
        CHECK(mc_heap_len(&h) == n);
    }
    while (n > 0) {
        CHECK(cmp_item(mc_heap_top(&h), &m[0]) == 0);
        mc_heap_pop(&h);
        memmove(m, m + 1, (--n) * sizeof *m);
    }
    CHECK(mc_heap_len(&h) == 0 && mc_heap_top(&h) == NULL);
    mc_heap_free(&h);
    CHECK(mc_heap_push(&h, &(item){.key = 3}) == 0 && ((item *)mc_heap_top(&h))->key == 3,
          "usable after free");
    mc_heap_free(&h);
    free(m);
}

/* Pushed in descending order, popped ascending: every push sifts to the top. */
static void descending(void)
{
    mc_heap h;
    mc_heap_init(&h, sizeof(item), item_less);
    for (int64_t k = 1000; k > 0; k--)
        CHECK(mc_heap_push(&h, &(item){.key = k}) == 0);
    for (int64_t k = 1; k <= 1000; k++) {
        CHECK(((item *)mc_heap_top(&h))->key == k, "want %lld", (long long)k);
        mc_heap_pop(&h);
    }
    mc_heap_free(&h);
}

int main(void)
{
    against_a_model();
    descending();
    return check_exit("test_heap");
}
