/* Sharding broadcasts as the processors see them (broadcast.h). */
#include "broadcast.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoints.h"
#include "task_rules.h"

static const char *metadata_value(const mc_task *t, const char *name)
{
    for (size_t i = 0; i < t->n_metadata; i++)
        if (strcmp(t->metadata[i].key, name) == 0)
            return t->metadata[i].value;
    return NULL;
}

size_t mc_shard_task_id(const char *task_id, int32_t index, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s#shard-%" PRId32, task_id, index);
    return n < 0 ? cap : (size_t)n;
}

size_t mc_shard_ref_format(const mc_shard_ref *s, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%" PRId32 "/%" PRId32 "@%" PRId64, s->index, s->total, s->version);
    return n < 0 ? 0 : (size_t)n;
}

/* Reads decimal digits from *p (at most max_digits) into *v; false without any. */
static bool digits(const char **p, const char *end, int max_digits, int64_t *v)
{
    int n = 0;
    *v = 0;
    while (*p < end && **p >= '0' && **p <= '9' && n < max_digits) {
        *v = *v * 10 + (**p - '0');
        (*p)++, n++;
    }
    return n > 0;
}

bool mc_shard_ref_parse(const char *text, size_t len, mc_shard_ref *out)
{
    const char *p = text, *end = text + len;
    int64_t index, total;
    if (!digits(&p, end, 3, &index) || p == end || *p++ != '/' || !digits(&p, end, 3, &total) ||
        p == end || *p++ != '@')
        return false;
    /* The version: a tasks offset, or below zero once a growth of the partition count
     * shifted it (layout.h); any int64. */
    char version_text[24];
    size_t vl = (size_t)(end - p);
    if (vl == 0 || vl >= sizeof version_text || (*p != '-' && (*p < '0' || *p > '9')) ||
        memchr(p, '\0', vl))
        return false;
    memcpy(version_text, p, vl);
    version_text[vl] = '\0';
    char *stop;
    errno = 0;
    long long version = strtoll(version_text, &stop, 10);
    if (errno || *stop || stop == version_text)
        return false;
    if (total < 1 || total > MC_GROUP_MEMBERS_MAX || index >= total)
        return false;
    /* Only the one spelling the executor writes ("007", "-0" and "00/2" are not): a
     * forged header matches no shard's. */
    mc_shard_ref ref = {(int32_t)index, (int32_t)total, version};
    char again[64];
    if (mc_shard_ref_format(&ref, again, sizeof again) != len || memcmp(again, text, len) != 0)
        return false;
    *out = ref;
    return true;
}

const char *mc_task_shard_member(const mc_task *t)
{
    return metadata_value(t, MC_MEMBER_METADATA);
}

bool mc_broadcast_metadata_reserved(const char *key)
{
    return strcmp(key, MC_BROADCAST_METADATA) == 0 || strcmp(key, MC_SHARD_METADATA) == 0 ||
           strcmp(key, MC_MEMBER_METADATA) == 0;
}

size_t mc_broadcast_result_headers(const mc_task *t, mc_header out[2])
{
    const char *task = metadata_value(t, MC_BROADCAST_METADATA);
    const char *shard = metadata_value(t, MC_SHARD_METADATA);
    if (!task || !shard)
        return 0;
    out[0] = (mc_header){MC_BROADCAST_HEADER, task, strlen(task)};
    out[1] = (mc_header){MC_SHARD_HEADER, shard, strlen(shard)};
    return 2;
}

bool mc_broadcast_result_shard(const mc_record *r, const char **task_id, size_t *len,
                               mc_shard_ref *shard)
{
    const void *t, *s;
    size_t tl, sl;
    if (!mc_record_header(r, MC_BROADCAST_HEADER, &t, &tl) || !t || tl == 0 ||
        tl >= MC_MAX_TASK_KEY_LEN || !mc_record_header(r, MC_SHARD_HEADER, &s, &sl) || !s ||
        !mc_shard_ref_parse(s, sl, shard))
        return false;
    *task_id = t;
    *len = tl;
    return true;
}
