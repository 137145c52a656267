/* Serial chains as the processors outside the jobs role see them (chains.h). */
#include "chains.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *metadata_value(const mc_task *t, const char *name)
{
    for (size_t i = 0; i < t->n_metadata; i++)
        if (strcmp(t->metadata[i].key, name) == 0)
            return t->metadata[i].value;
    return NULL;
}

const char *mc_task_chain(const mc_task *t)
{
    return metadata_value(t, MC_CHAIN_METADATA);
}

bool mc_chain_metadata_reserved(const char *key)
{
    return strcmp(key, MC_CHAIN_METADATA) == 0 || strcmp(key, MC_LINK_METADATA) == 0;
}

size_t mc_chain_result_headers(const mc_task *t, mc_header out[2])
{
    const char *chain = metadata_value(t, MC_CHAIN_METADATA);
    const char *link = metadata_value(t, MC_LINK_METADATA);
    if (!chain || !link)
        return 0;
    out[0] = (mc_header){MC_CHAIN_HEADER, chain, strlen(chain)};
    out[1] = (mc_header){MC_LINK_HEADER, link, strlen(link)};
    return 2;
}

bool mc_chain_result_link(const mc_record *r, const char **key, size_t *key_len, int64_t *link)
{
    const void *k, *l;
    size_t kl, ll;
    if (!mc_record_header(r, MC_CHAIN_HEADER, &k, &kl) || !k || kl == 0 ||
        kl > MC_MAX_ORDERING_KEY_LEN || !mc_record_header(r, MC_LINK_HEADER, &l, &ll) || !l ||
        ll == 0 || ll > 19)
        return false;
    /* Header values are not NUL-terminated. */
    char digits[20];
    memcpy(digits, l, ll);
    digits[ll] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(digits, &end, 10);
    if (errno || *end || v < 0)
        return false;
    *key = k;
    *key_len = kl;
    *link = v;
    return true;
}

bool mc_ordering_key_ok(const char *key, const char *field, char *why, size_t whylen)
{
    size_t n = strlen(key);
    if (n == 0 || n > MC_MAX_ORDERING_KEY_LEN) {
        snprintf(why, whylen, "%s must be 1 to %d bytes", field, MC_MAX_ORDERING_KEY_LEN);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)key[i] < 0x20 || key[i] == 0x7f) {
            snprintf(why, whylen, "%s contains a control character", field);
            return false;
        }
    return true;
}
