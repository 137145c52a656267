/* The per-partition table against a model (a plain array of 1000 slots):
 * random puts, takes and gets over partition numbers that make it grow many
 * times, with iteration visiting exactly the partitions held, in order. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "part_table.h"

#define MODEL 1000

static uint64_t rng = 0x2545F4914F6CDD1Du;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

static void against_a_model(void)
{
    mc_part_table t = {0};
    int *model[MODEL] = {0};
    int values[MODEL];
    size_t held = 0;
    for (int step = 0; step < 200000; step++) {
        /* Mostly small numbers, now and then a large one: growth mid-run. */
        int32_t p = (int32_t)(rnd(10) == 0 ? rnd(MODEL) : rnd(40));
        switch (rnd(3)) {
        case 0:
            if (!model[p]) {
                values[p] = step;
                CHECK(mc_part_table_put(&t, p, &values[p]) == 0);
                model[p] = &values[p];
                held++;
            }
            break;
        case 1: {
            int *got = mc_part_table_take(&t, p);
            CHECK(got == model[p], "take %d", p);
            if (model[p])
                held--;
            model[p] = NULL;
            break;
        }
        default:
            CHECK(mc_part_table_get(&t, p) == model[p], "get %d", p);
        }
        CHECK(mc_part_table_count(&t) == held);
        if (step % 1000 == 0) {
            int32_t want = 0;
            int *s;
            for (int32_t i = 0; (s = mc_part_table_next(&t, &i)); i++) {
                while (want < MODEL && !model[want])
                    want++;
                CHECK(i == want && s == model[want], "iteration at %d, want %d", i, want);
                want++;
            }
            while (want < MODEL && !model[want])
                want++;
            CHECK(want == MODEL, "iteration stopped before partition %d", want);
        }
    }
    mc_part_table_free(&t);
    CHECK(mc_part_table_count(&t) == 0 && mc_part_table_get(&t, 3) == NULL);
}

static void edges(void)
{
    mc_part_table t = {0};
    int a = 1, b = 2;
    CHECK(mc_part_table_get(&t, 0) == NULL && mc_part_table_get(&t, -1) == NULL);
    CHECK(mc_part_table_put(&t, -1, &a) == -1, "a negative partition is refused");
    CHECK(mc_part_table_put(&t, 4, NULL) == -1 && mc_part_table_count(&t) == 0, "NULL is refused");
    CHECK(mc_part_table_put(&t, 299, &a) == 0, "300 partitions (issue 14's case) fit");
    CHECK(mc_part_table_get(&t, 299) == &a && mc_part_table_get(&t, 298) == NULL);
    CHECK(mc_part_table_put(&t, 0, &b) == 0 && mc_part_table_count(&t) == 2);
    CHECK(mc_part_table_take(&t, 5) == NULL && mc_part_table_count(&t) == 2);
    int32_t i = 1;
    CHECK(mc_part_table_next(&t, &i) == &a && i == 299, "next skips the holes");
    i = 300;
    CHECK(mc_part_table_next(&t, &i) == NULL);
    mc_part_table_free(&t);
}

int main(void)
{
    against_a_model();
    edges();
    return check_exit("test_part_table");
}
