/* The descriptor set behind the runner's loop and the executor's HTTP thread
 * (see fdset.h). Linear lookups: a set holds at most a few hundred sockets,
 * and a poll(2) of them costs more than the scan. */
#include "fdset.h"

#include <errno.h>
#include <stdlib.h>

int mc_fdset_set(mc_fdset *s, int fd, short events, void (*cb)(void), void *arg)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->entries[i].fd != fd)
            continue;
        if (events)
            s->entries[i] = (mc_fd_entry){fd, events, cb, arg};
        else
            s->entries[i] = s->entries[--s->n];
        return 0;
    }
    if (!events)
        return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        mc_fd_entry *e = realloc(s->entries, cap * sizeof *e);
        if (!e)
            return -1;
        s->entries = e;
        s->cap = cap;
    }
    s->entries[s->n++] = (mc_fd_entry){fd, events, cb, arg};
    return 0;
}

const mc_fd_entry *mc_fdset_find(const mc_fdset *s, int fd)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->entries[i].fd == fd)
            return &s->entries[i];
    return NULL;
}

int mc_fdset_poll(mc_fdset *s, int extra, int timeout)
{
    size_t n = s->n + 1;
    if (n > s->cap_pfds) {
        struct pollfd *p = realloc(s->pfds, n * 2 * sizeof *p);
        if (!p) {
            errno = ENOMEM;
            return -1;
        }
        s->pfds = p;
        s->cap_pfds = n * 2;
    }
    s->pfds[0] = (struct pollfd){.fd = extra, .events = POLLIN};
    for (size_t i = 0; i < s->n; i++)
        s->pfds[i + 1] = (struct pollfd){.fd = s->entries[i].fd, .events = s->entries[i].events};
    return poll(s->pfds, (nfds_t)n, timeout);
}

void mc_fdset_free(mc_fdset *s)
{
    free(s->entries);
    free(s->pfds);
    *s = (mc_fdset){0};
}
