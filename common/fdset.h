/* A small set of file descriptors to poll(2), each with the events wanted
 * and an opaque tag: what the runner's loop and the executor's HTTP thread
 * both keep for libcurl-style callers that add, change and drop sockets
 * while a poll result is being handled. Not thread-safe: one per loop. */
#ifndef MOONCAKE_FDSET_H
#define MOONCAKE_FDSET_H

#include <poll.h>
#include <stddef.h>

typedef struct mc_fd_entry {
    int fd;
    short events;
    void (*cb)(void); /* the owner's, cast back by it; not used by the set */
    void *arg;
} mc_fd_entry;

typedef struct mc_fdset {
    mc_fd_entry *entries;
    size_t n, cap;
    struct pollfd *pfds; /* [0] is the caller's extra descriptor */
    size_t cap_pfds;
} mc_fdset;

/* Watches fd for events with the owner's tag, replacing an earlier entry for
 * fd; events == 0 drops it. Returns 0, or -1 on ENOMEM. */
int mc_fdset_set(mc_fdset *s, int fd, short events, void (*cb)(void), void *arg);
/* The entry for fd, or NULL (it may have been dropped since the poll). */
const mc_fd_entry *mc_fdset_find(const mc_fdset *s, int fd);
/* Polls `extra` (for POLLIN) and every entry for up to timeout ms. Returns
 * poll's result; the results are in s->pfds[0 .. s->n] (pfds[0] is extra),
 * valid until the next call. -1 with errno ENOMEM when it cannot grow. */
int mc_fdset_poll(mc_fdset *s, int extra, int timeout);
/* Frees what the set holds (not the descriptors). */
void mc_fdset_free(mc_fdset *s);

#endif
