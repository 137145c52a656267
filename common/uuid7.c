/* UUIDv7 generation; see uuid7.h. */
#include "uuid7.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

int mc_uuid7_init(mc_uuid7 *g)
{
    memset(g, 0, sizeof *g);
    return pthread_mutex_init(&g->lock, NULL) == 0 ? 0 : -1;
}

void mc_uuid7_destroy(mc_uuid7 *g)
{
    pthread_mutex_destroy(&g->lock);
}

/* Random bytes from the kernel. getrandom() only fails before the pool is
 * initialised at boot or on a bad call; then the clock's nanoseconds mixed
 * with the address of out still make a collision with another id of the
 * same millisecond and counter unlikely, and never break the ordering. */
static void random_bytes(uint8_t *out, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(out + got, n - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    if (got < n) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)(uintptr_t)out;
        for (size_t i = got; i < n; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out[i] = (uint8_t)x;
        }
    }
}

void mc_uuid7_next(mc_uuid7 *g, int64_t now_ms, char out[MC_UUID_STR_LEN + 1])
{
    uint8_t rnd[10];
    random_bytes(rnd, sizeof rnd);

    pthread_mutex_lock(&g->lock);
    if (now_ms > g->last_ms) {
        g->last_ms = now_ms;
        /* A random start in the lower half leaves room for 2048+ more ids
         * in this millisecond and makes the counter hard to guess. */
        g->counter = (uint32_t)(rnd[8] | (rnd[9] << 8)) & 0x7ffu;
    } else if (++g->counter > 0xfffu) {
        g->last_ms++; /* the counter ran out: borrow the next millisecond */
        g->counter = 0;
    }
    uint64_t ms = (uint64_t)g->last_ms & 0xffffffffffffu;
    uint32_t counter = g->counter;
    pthread_mutex_unlock(&g->lock);

    uint8_t b[16];
    for (int i = 0; i < 6; i++)
        b[i] = (uint8_t)(ms >> (40 - 8 * i));
    b[6] = (uint8_t)(0x70 | (counter >> 8)); /* version 7 */
    b[7] = (uint8_t)counter;
    memcpy(b + 8, rnd, 8);
    b[8] = (uint8_t)(0x80 | (b[8] & 0x3f)); /* variant 10 */
    static const char hex[] = "0123456789abcdef";
    char *p = out;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *p++ = '-';
        *p++ = hex[b[i] >> 4];
        *p++ = hex[b[i] & 15];
    }
    *p = '\0';
}
