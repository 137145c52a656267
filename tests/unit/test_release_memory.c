/* Giving memory back (release_memory.h): memory freed by another thread leaves the
 * resident size, and several threads giving back at once at a process's
 * start (several roles restoring in one `mooncake all`) never crash it -
 * under ASan, glibc's malloc_trim did, about one start in three. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "release_memory.h"

#define RACERS 8
#define STARTS 40

static pthread_barrier_t start_line;

static void *give_back_at_once(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start_line);
    mc_release_free_memory();
    return NULL;
}

/* The child's part: the first thing the process does is RACERS threads
 * giving back at the same moment. */
static int race(void)
{
    pthread_t t[RACERS];
    pthread_barrier_init(&start_line, NULL, RACERS);
    for (int i = 0; i < RACERS; i++)
        pthread_create(&t[i], NULL, give_back_at_once, NULL);
    for (int i = 0; i < RACERS; i++)
        pthread_join(t[i], NULL);
    return 0;
}

static void many_starts_racing(const char *self)
{
    int crashed = 0;
    for (int i = 0; i < STARTS; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            execl(self, self, "--race", (char *)NULL);
            _exit(127);
        }
        int status = 0;
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            crashed++;
    }
    CHECK(crashed == 0, "%d of %d starts with %d threads giving back at once crashed", crashed,
          STARTS, RACERS);
}

#ifndef MC_SANITIZER_ALLOCATOR
static long resident_kib(void)
{
    long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld %ld", &size, &resident) != 2)
        resident = -1;
    if (f)
        fclose(f);
    return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

#define CHUNKS 200000
#define CHUNK_BYTES 512

/* A fetch thread's read-ahead: many small records, all freed but the last,
 * which pins its arena's top so the arena cannot shrink by itself. */
static void *allocate_and_free(void *arg)
{
    void **pin = arg;
    char **chunks = malloc(CHUNKS * sizeof *chunks);
    for (int i = 0; i < CHUNKS; i++) {
        chunks[i] = malloc(CHUNK_BYTES);
        memset(chunks[i], 1, CHUNK_BYTES);
    }
    *pin = malloc(64);
    for (int i = 0; i < CHUNKS; i++)
        free(chunks[i]);
    free(chunks);
    return NULL;
}

static void freed_memory_leaves_the_resident_size(void)
{
    void *pin = NULL;
    pthread_t t;
    pthread_create(&t, NULL, allocate_and_free, &pin);
    pthread_join(t, NULL);
    long before = resident_kib();
    mc_release_free_memory();
    long after = resident_kib();
    long freed_kib = (long)CHUNKS * CHUNK_BYTES / 1024;
    printf("resident %ld KiB before giving back, %ld KiB after (%ld KiB were freed)\n", before,
           after, freed_kib);
    CHECK(before > 0 && after > 0);
    CHECK(before - after > freed_kib / 2, "gave back %ld KiB of the %ld KiB freed", before - after,
          freed_kib);
    free(pin);
}
#else
static void freed_memory_leaves_the_resident_size(void)
{
    printf("the resident size check is skipped under a sanitizer: its allocator is not glibc's\n");
}
#endif

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--race") == 0)
        return race();
    many_starts_racing("/proc/self/exe");
    freed_memory_leaves_the_resident_size();
    return check_exit("test_release_memory");
}
