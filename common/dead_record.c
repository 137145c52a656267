/* Dead letters read back from <prefix>dead: decoding, ownership and the
 * requeue selection (see dead_record.h). */
#include "dead_record.h"

#include <stdlib.h>
#include <string.h>

#include "task_json.h"

void mc_dead_decode(const rd_kafka_message_t *m, mc_arena *arena, mc_dead_record *r)
{
    r->detail[0] = '\0';
    r->err = m->payload ? mc_decode_dead_letter(m->payload, m->len, arena, &r->d, r->detail,
                                                sizeof r->detail)
                        : MC_CODEC_EMPTY;
    r->task = !r->err && r->d.has_task;
}

bool mc_dead_key_matches(const char *want, const rd_kafka_message_t *m, const char *app,
                         const char *id)
{
    size_t n = strlen(want);
    if (m->key && m->key_len == n && memcmp(m->key, want, n) == 0)
        return true;
    if (!app || !id)
        return false;
    char key[1024];
    size_t kn = mc_task_key(app, id, key, sizeof key);
    return kn < sizeof key && strcmp(key, want) == 0;
}

bool mc_dead_app_matches(const char *app_id, const rd_kafka_message_t *m, const mc_dead_record *r)
{
    size_t n = strlen(app_id);
    if (m->key && m->key_len > n && memcmp(m->key, app_id, n) == 0 &&
        ((const char *)m->key)[n] == '/')
        return true;
    return r->task && strcmp(r->d.task.app_id, app_id) == 0;
}

static int cmp_ref(const void *a, const void *b)
{
    const mc_letter_ref *x = a, *y = b;
    if (x->partition != y->partition)
        return x->partition < y->partition ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

size_t mc_letter_refs_sort(mc_letter_ref *refs, size_t n)
{
    if (n == 0)
        return 0;
    qsort(refs, n, sizeof *refs, cmp_ref);
    size_t kept = 1;
    for (size_t i = 1; i < n; i++)
        if (cmp_ref(&refs[i], &refs[kept - 1]) != 0)
            refs[kept++] = refs[i];
    return kept;
}

bool mc_letter_refs_has(const mc_letter_ref *refs, size_t n, int32_t partition, int64_t offset)
{
    mc_letter_ref want = {partition, offset};
    return n && bsearch(&want, refs, n, sizeof want, cmp_ref) != NULL;
}

mc_dead_match mc_dead_filter_match(const mc_dead_filter *f, const rd_kafka_message_t *m,
                                   const mc_dead_record *r)
{
    if (f->letters && !mc_letter_refs_has(f->letters, f->n_letters, m->partition, m->offset))
        return MC_DEAD_NOT_MATCHED;
    /* Before anything else is said of it: whose it is. */
    if (f->letters && f->app_id && !mc_dead_app_matches(f->app_id, m, r))
        return MC_DEAD_FOREIGN;
    if (f->all)
        return MC_DEAD_MATCHED;
    const char *app = r->task ? r->d.task.app_id : NULL, *id = r->task ? r->d.task.task_id : NULL;
    if (f->key && !mc_dead_key_matches(f->key, m, app, id))
        return MC_DEAD_NOT_MATCHED;
    if (f->reason && (r->err || !strcasestr(r->d.reason, f->reason)))
        return MC_DEAD_NOT_MATCHED;
    return MC_DEAD_MATCHED;
}
