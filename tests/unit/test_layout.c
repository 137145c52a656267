/* The layout record (layout.h): what mooncakectl writes the router reads
 * back exactly, anything else is refused whole, and the split decides which
 * commands on an old home were written before the growth. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "layout.h"

static bool parses(const char *text, mc_layout *l)
{
    return mc_layout_parse(text, strlen(text), l);
}

static void round_trips(void)
{
    int64_t split[3] = {0, 17, INT64_C(9007199254740993)};
    mc_layout in[] = {
        {.partitions = 3},
        {.partitions = 3, .growing_to = 6},
        {.partitions = 3, .growing_to = 6, .n_split = 3, .split = split},
        {.partitions = 6, .previous = 3, .n_split = 3, .split = split},
        {.partitions = 6, .previous = 3},
    };
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        size_t n = mc_layout_format(&in[i], NULL, 0);
        char *buf = malloc(n + 1);
        CHECK(buf && mc_layout_format(&in[i], buf, n + 1) == n && strlen(buf) == n);
        mc_layout out;
        CHECK(parses(buf, &out), "'%s' does not parse back", buf);
        CHECK(out.partitions == in[i].partitions && out.growing_to == in[i].growing_to &&
                  out.previous == in[i].previous && out.n_split == in[i].n_split,
              "'%s'", buf);
        for (int32_t q = 0; q < out.n_split; q++)
            CHECK(out.split[q] == in[i].split[q], "'%s': split %d", buf, (int)q);
        mc_layout_free(&out);
        free(buf);
    }
    /* A short buffer gets a terminated prefix and the whole length. */
    char small[8];
    CHECK(mc_layout_format(&in[3], small, sizeof small) > sizeof small &&
          strlen(small) == sizeof small - 1);
}

static void refuses(void)
{
    static const char *bad[] = {
        "",
        "partitions=0",
        "partitions=-1",
        "partitions=03",
        "partitions=3 ",
        "partitions=3  growing-to=6",
        "partitions=3 growing-to=3",
        "partitions=3 growing-to=2",
        "partitions=6 previous=6",
        "partitions=6 previous=3 previous=3",
        "partitions=3 growing-to=6 previous=2",
        "partitions=6 previous=3 split=1,2",
        "partitions=6 previous=3 split=1,2,3,4",
        "partitions=6 previous=3 split=1,,3",
        "partitions=6 previous=3 split=1,2,",
        "partitions=6 previous=3 split=1,2,-3",
        "partitions=6 previous=3 split=1,2,99999999999999999999",
        "partitions=6 split=1,2,3",
        "partitions=6 previous=3 split=1,2,3 growing-to=12",
        "partitions=2147483648",
        "partitions=3 growing-to=6x",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mc_layout l = {.partitions = 42};
        CHECK(!parses(bad[i], &l) && l.partitions == 42, "'%s' parsed", bad[i]);
    }
    mc_layout l;
    CHECK(!mc_layout_parse(NULL, 0, &l));
}

static void split_decides(void)
{
    mc_layout l;
    CHECK(parses("partitions=6 previous=3 split=10,0,5", &l));
    CHECK(mc_layout_before_split(&l, 0, 9) && !mc_layout_before_split(&l, 0, 10));
    CHECK(!mc_layout_before_split(&l, 1, 0));
    CHECK(mc_layout_before_split(&l, 2, 4) && !mc_layout_before_split(&l, 2, 5));
    mc_layout_free(&l);
    CHECK(parses("partitions=6 previous=3", &l));
    CHECK(mc_layout_before_split(&l, 0, INT64_MAX), "no split: everything is from before");
    mc_layout_free(&l);
}

int main(void)
{
    round_trips();
    refuses();
    split_decides();
    return check_exit("test_layout");
}
