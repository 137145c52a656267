/* The FIFO ring: order kept through growth while the front has wrapped
 * round, against a plain counter model, for several element sizes. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "ring.h"

typedef struct big {
    uint64_t id;
    char pad[40];
} big;

static void wrapped_growth(void)
{
    mc_ring r;
    mc_ring_init(&r, sizeof(big));
    uint64_t next_in = 0, next_out = 0;
    /* Push and pop in uneven rounds so the front wraps before each growth. */
    for (int round = 0; round < 2000; round++) {
        int pushes = 1 + round % 7 + (round % 50 == 0 ? 300 : 0), pops = round % 5;
        for (int i = 0; i < pushes; i++) {
            big b = {.id = next_in++};
            memset(b.pad, (int)(b.id & 0x7f), sizeof b.pad);
            CHECK(mc_ring_push(&r, &b) == 0);
        }
        for (int i = 0; i < pops && mc_ring_len(&r) > 0; i++) {
            big *f = mc_ring_at(&r, 0);
            CHECK(f->id == next_out && f->pad[39] == (char)(f->id & 0x7f), "front %llu want %llu",
                  (unsigned long long)f->id, (unsigned long long)next_out);
            next_out++;
            mc_ring_pop(&r);
        }
        CHECK(mc_ring_len(&r) == next_in - next_out);
        for (size_t i = 0; i < mc_ring_len(&r); i += 97) {
            big *b = mc_ring_at(&r, i);
            CHECK(b->id == next_out + i, "at %zu", i);
        }
    }
    while (mc_ring_len(&r) > 0) {
        CHECK(((big *)mc_ring_at(&r, 0))->id == next_out++);
        mc_ring_pop(&r);
    }
    mc_ring_free(&r);
    CHECK(mc_ring_len(&r) == 0 && mc_ring_push(&r, &(big){.id = 1}) == 0, "usable after free");
    mc_ring_free(&r);
}

static void small_elements(void)
{
    mc_ring r;
    mc_ring_init(&r, sizeof(int32_t));
    for (int32_t i = 0; i < 100; i++)
        mc_ring_push(&r, &i);
    for (int32_t i = 0; i < 90; i++)
        mc_ring_pop(&r);
    for (int32_t i = 100; i < 1000; i++) /* grows with the front at 90 */
        mc_ring_push(&r, &i);
    for (int32_t i = 90; i < 1000; i++) {
        CHECK(*(int32_t *)mc_ring_at(&r, 0) == i);
        mc_ring_pop(&r);
    }
    mc_ring_free(&r);
}

int main(void)
{
    wrapped_growth();
    small_elements();
    return check_exit("test_ring");
}
