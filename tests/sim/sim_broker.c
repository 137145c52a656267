/* The in-memory cluster (sim.h, sim_broker.h): topics of partitioned logs,
 * transactions with read_committed visibility and markers, consumer groups
 * with generations and committed offsets. */
#include "sim_broker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *simb_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "sim: out of memory\n");
        abort();
    }
    return p;
}

void *simb_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) {
        fprintf(stderr, "sim: out of memory\n");
        abort();
    }
    return p;
}

void *simb_dup_bytes(const void *p, size_t n)
{
    if (!p)
        return NULL;
    void *c = simb_xmalloc(n);
    memcpy(c, p, n);
    return c;
}

char *simb_xstrdup(const char *s)
{
    return simb_dup_bytes(s, strlen(s) + 1);
}

sim_kafka *sim_kafka_new(int32_t partitions, int64_t now_ms)
{
    sim_kafka *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->default_partitions = partitions;
    k->now = now_ms;
    k->next_txn = 1;
    return k;
}

void simb_free_entry(entry *e)
{
    free(e->key);
    free(e->value);
    for (size_t i = 0; i < e->n_headers; i++) {
        free((void *)e->headers[i].name);
        free((void *)e->headers[i].value);
    }
    free(e->headers);
}

void sim_kafka_free(sim_kafka *k)
{
    if (!k)
        return;
    for (size_t i = 0; i < k->n_topics; i++) {
        topic *t = k->topics[i];
        for (int32_t p = 0; p < t->n; p++) {
            for (size_t j = 0; j < t->parts[p].n; j++)
                simb_free_entry(&t->parts[p].e[j]);
            free(t->parts[p].e);
        }
        free(t->parts);
        free(t->name);
        free(t);
    }
    free(k->topics);
    for (size_t i = 0; i < k->n_txns; i++) {
        free(k->txns[i]->transactional_id);
        free(k->txns[i]->parts);
        free(k->txns[i]);
    }
    free(k->txns);
    for (size_t i = 0; i < k->n_offsets; i++) {
        free(k->offsets[i].group);
        free(k->offsets[i].topic);
        free(k->offsets[i].metadata);
    }
    free(k->offsets);
    for (size_t i = 0; i < k->n_groups; i++)
        free(k->groups[i].name);
    free(k->groups);
    free(k);
}

int64_t sim_now(const sim_kafka *k)
{
    return k->now;
}

void sim_set_now(sim_kafka *k, int64_t now_ms)
{
    k->now = now_ms;
}

void sim_advance(sim_kafka *k, int64_t ms)
{
    k->now += ms;
}

topic *simb_topic_get(sim_kafka *k, const char *name)
{
    for (size_t i = 0; i < k->n_topics; i++)
        if (strcmp(k->topics[i]->name, name) == 0)
            return k->topics[i];
    topic *t = calloc(1, sizeof *t);
    if (!t)
        abort();
    t->name = simb_xstrdup(name);
    t->n = k->default_partitions;
    t->parts = calloc((size_t)t->n, sizeof *t->parts);
    k->topics = simb_xrealloc(k->topics, (k->n_topics + 1) * sizeof *k->topics);
    k->topics[k->n_topics++] = t;
    return t;
}

void sim_set_partitions(sim_kafka *k, const char *name, int32_t n)
{
    topic *t = simb_topic_get(k, name);
    if (n <= t->n)
        return;
    t->parts = simb_xrealloc(t->parts, (size_t)n * sizeof *t->parts);
    memset(t->parts + t->n, 0, (size_t)(n - t->n) * sizeof *t->parts);
    t->n = n;
}

void sim_set_max_bytes(sim_kafka *k, const char *name, size_t n)
{
    simb_topic_get(k, name)->max_bytes = n;
}

int32_t sim_partitions(sim_kafka *k, const char *name)
{
    return simb_topic_get(k, name)->n;
}

plog *simb_plog_of(sim_kafka *k, const char *name, int32_t partition)
{
    topic *t = simb_topic_get(k, name);
    if (partition < 0 || partition >= t->n) {
        fprintf(stderr, "sim: %s has no partition %d\n", name, partition);
        return NULL;
    }
    return &t->parts[partition];
}

int64_t sim_end_offset(sim_kafka *k, const char *name, int32_t partition)
{
    plog *l = simb_plog_of(k, name, partition);
    return l ? (int64_t)l->n : -1;
}

int64_t simb_plog_append(plog *l, entry e)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->e = simb_xrealloc(l->e, l->cap * sizeof *l->e);
    }
    l->e[l->n] = e;
    return (int64_t)l->n++;
}

entry simb_make_entry(const void *key, size_t key_len, const void *value, size_t value_len,
                      const mc_header *headers, size_t n_headers)
{
    entry e = {.key = simb_dup_bytes(key, key_len),
               .key_len = key ? key_len : 0,
               .value = simb_dup_bytes(value, value_len),
               .value_len = value ? value_len : 0};
    if (n_headers) {
        e.headers = simb_xmalloc(n_headers * sizeof *e.headers);
        for (size_t i = 0; i < n_headers; i++)
            e.headers[i] = (mc_header){simb_xstrdup(headers[i].name),
                                       simb_dup_bytes(headers[i].value, headers[i].len),
                                       headers[i].value ? headers[i].len : 0};
        e.n_headers = n_headers;
    }
    return e;
}

int64_t sim_append(sim_kafka *k, const char *name, int32_t partition, const void *key,
                   size_t key_len, const void *value, size_t value_len, const mc_header *headers,
                   size_t n_headers)
{
    plog *l = simb_plog_of(k, name, partition);
    if (!l)
        return -1;
    entry e = simb_make_entry(key, key_len, value, value_len, headers, n_headers);
    e.state = COMMITTED;
    return simb_plog_append(l, e);
}

int64_t sim_append_commit_marker(sim_kafka *k, const char *name, int32_t partition)
{
    plog *l = simb_plog_of(k, name, partition);
    return l ? simb_plog_append(l, (entry){.control = true, .state = COMMITTED}) : -1;
}

/* ---- transactions ------------------------------------------------------------------- */

txn *simb_txn_find(sim_kafka *k, uint64_t id)
{
    for (size_t i = 0; i < k->n_txns; i++)
        if (k->txns[i]->id == id)
            return k->txns[i];
    return NULL;
}

uint64_t simb_txn_begin(sim_kafka *k, const char *transactional_id)
{
    txn *t = calloc(1, sizeof *t);
    if (!t)
        abort();
    t->id = k->next_txn++;
    t->transactional_id = simb_xstrdup(transactional_id);
    t->open = true;
    k->txns = simb_xrealloc(k->txns, (k->n_txns + 1) * sizeof *k->txns);
    k->txns[k->n_txns++] = t;
    return t->id;
}

int64_t simb_txn_produce(sim_kafka *k, uint64_t id, const char *name, int32_t partition, entry e)
{
    txn *x = simb_txn_find(k, id);
    topic *t = simb_topic_get(k, name);
    plog *l = simb_plog_of(k, name, partition);
    if (!x || !l)
        return -1;
    bool seen = false;
    for (size_t i = 0; i < x->n_parts && !seen; i++)
        seen = x->parts[i].t == t && x->parts[i].partition == partition;
    if (!seen) {
        if (x->n_parts == x->cap_parts) {
            x->cap_parts = x->cap_parts ? x->cap_parts * 2 : 8;
            x->parts = simb_xrealloc(x->parts, x->cap_parts * sizeof *x->parts);
        }
        x->parts[x->n_parts++] = (touched){t, partition};
    }
    e.state = OPEN;
    e.txn = id;
    return simb_plog_append(l, e);
}

/* Commits or aborts: every record of the transaction changes state at once,
 * and each partition it wrote gets a marker. */
void simb_txn_end(sim_kafka *k, uint64_t id, bool commit)
{
    txn *x = simb_txn_find(k, id);
    if (!x || !x->open)
        return;
    x->open = false;
    for (size_t i = 0; i < x->n_parts; i++) {
        plog *l = &x->parts[i].t->parts[x->parts[i].partition];
        for (size_t j = 0; j < l->n; j++)
            if (l->e[j].txn == id && !l->e[j].control)
                l->e[j].state = commit ? COMMITTED : ABORTED;
        simb_plog_append(l, (entry){.control = true, .state = COMMITTED, .txn = id});
    }
}

void sim_expire_transactions(sim_kafka *k)
{
    for (size_t i = 0; i < k->n_txns; i++)
        if (k->txns[i]->open)
            simb_txn_end(k, k->txns[i]->id, false);
}

/* A new producer with this transactional id fences the old one: its open
 * transaction is aborted. */
void simb_fence_transactional_id(sim_kafka *k, const char *transactional_id)
{
    for (size_t i = 0; i < k->n_txns; i++)
        if (k->txns[i]->open && strcmp(k->txns[i]->transactional_id, transactional_id) == 0)
            simb_txn_end(k, k->txns[i]->id, false);
}

/* ---- reading ------------------------------------------------------------------------ */

size_t simb_read_log(sim_kafka *k, const char *name, int32_t partition, bool committed_only,
                     sim_rec **out)
{
    plog *l = simb_plog_of(k, name, partition);
    *out = NULL;
    if (!l)
        return 0;
    sim_rec *v = simb_xmalloc((l->n ? l->n : 1) * sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < l->n; i++) {
        entry *e = &l->e[i];
        if (committed_only && e->state == OPEN)
            break; /* the last stable offset */
        if (e->control || e->state == ABORTED)
            continue;
        v[n++] = (sim_rec){(int64_t)i,   e->key,     e->key_len,  e->value,
                           e->value_len, e->headers, e->n_headers};
    }
    *out = v;
    return n;
}

size_t sim_read(sim_kafka *k, const char *name, int32_t partition, sim_rec **out)
{
    return simb_read_log(k, name, partition, true, out);
}

size_t sim_read_uncommitted(sim_kafka *k, const char *name, int32_t partition, sim_rec **out)
{
    return simb_read_log(k, name, partition, false, out);
}

const mc_header *sim_rec_header(const sim_rec *r, const char *name)
{
    for (size_t i = r->n_headers; i-- > 0;)
        if (strcmp(r->headers[i].name, name) == 0)
            return &r->headers[i];
    return NULL;
}

/* ---- groups ------------------------------------------------------------------------- */

group *simb_group_get(sim_kafka *k, const char *name)
{
    for (size_t i = 0; i < k->n_groups; i++)
        if (strcmp(k->groups[i].name, name) == 0)
            return &k->groups[i];
    k->groups = simb_xrealloc(k->groups, (k->n_groups + 1) * sizeof *k->groups);
    k->groups[k->n_groups] = (group){simb_xstrdup(name), 1};
    return &k->groups[k->n_groups++];
}

void sim_new_generation(sim_kafka *k, const char *name)
{
    simb_group_get(k, name)->generation++;
}

group_offset *simb_offset_find(sim_kafka *k, const char *grp, const char *name, int32_t partition)
{
    for (size_t i = 0; i < k->n_offsets; i++) {
        group_offset *o = &k->offsets[i];
        if (o->partition == partition && strcmp(o->group, grp) == 0 && strcmp(o->topic, name) == 0)
            return o;
    }
    return NULL;
}

int64_t sim_committed(sim_kafka *k, const char *grp, const char *name, int32_t partition,
                      const char **metadata)
{
    group_offset *o = simb_offset_find(k, grp, name, partition);
    if (metadata)
        *metadata = o && o->metadata ? o->metadata : "";
    return o ? o->offset : -1;
}

void simb_offset_store(sim_kafka *k, const char *grp, const char *name, int32_t partition,
                       int64_t offset, const char *metadata)
{
    group_offset *o = simb_offset_find(k, grp, name, partition);
    if (!o) {
        k->offsets = simb_xrealloc(k->offsets, (k->n_offsets + 1) * sizeof *k->offsets);
        o = &k->offsets[k->n_offsets++];
        *o = (group_offset){
            .group = simb_xstrdup(grp), .topic = simb_xstrdup(name), .partition = partition};
    }
    o->offset = offset;
    /* metadata may be o->metadata itself (the committed metadata kept):
     * copy before freeing. */
    char *copy = metadata ? simb_xstrdup(metadata) : NULL;
    free(o->metadata);
    o->metadata = copy;
}

mc_record simb_entry_record(const entry *e, const char *topic, int32_t partition, int64_t offset,
                            int64_t timestamp_ms)
{
    return (mc_record){.topic = topic,
                       .partition = partition,
                       .offset = offset,
                       .timestamp_ms = timestamp_ms,
                       .key = e->key,
                       .key_len = e->key_len,
                       .value = e->value,
                       .value_len = e->value_len,
                       .headers = e->headers,
                       .n_headers = e->n_headers};
}

int simb_restore(sim_kafka *k, const char *name, const int32_t *partitions, size_t n,
                 mc_restore_fn fn, void *arg, mc_restore_stats *stats)
{
    uint64_t records = 0;
    for (size_t i = 0; i < n; i++) {
        plog *l = simb_plog_of(k, name, partitions[i]);
        if (!l)
            return -1;
        for (size_t j = 0; j < l->n; j++) {
            entry *e = &l->e[j];
            if (e->state == OPEN) {
                /* A real restore would wait here until the transaction ends. */
                fprintf(stderr, "sim: restore of %s[%d] blocked by an open transaction at %zu\n",
                        name, partitions[i], j);
                return -1;
            }
            if (e->control || e->state == ABORTED)
                continue;
            mc_record r = simb_entry_record(e, name, partitions[i], (int64_t)j, 0);
            fn(arg, &r);
            records++;
        }
    }
    if (stats)
        *stats = (mc_restore_stats){records, 0};
    return 0;
}
