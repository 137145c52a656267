/* Avro binary decoders for every mooncake record. The input is hostile (any
 * client can write to the tasks topic), so every varint is bounded, every
 * length and count is checked against the bytes that remain before anything
 * is allocated, and every failure says which field broke and why. Strings and
 * byte arrays are copied into the caller's arena, never malloc'd one by one. */
#include "codec_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Deepest path a record reaches: payload.task.callback.headers[i] plus slack. */
enum { PATH_MAX_DEPTH = 8 };

typedef struct path_seg {
    const char *name;
    int64_t index; /* map entry number, or -1 */
} path_seg;

/* The cursor of one decode. The field path is kept as a stack of static
 * names so the hot path only pushes pointers; text is built on failure. */
typedef struct rd {
    const uint8_t *p;
    const uint8_t *end;
    mc_arena *arena;
    char *detail;
    size_t detail_len;
    int depth;
    path_seg path[PATH_MAX_DEPTH];
    int older; /* the writer's earlier schema version; 0: the current one */
    mc_schema_id id;
} rd;

#define TRY(expr)                                                                                  \
    do {                                                                                           \
        mc_codec_err err_ = (expr);                                                                \
        if (err_ != MC_CODEC_OK)                                                                   \
            return err_;                                                                           \
    } while (0)

static inline size_t left(const rd *r)
{
    return (size_t)(r->end - r->p);
}

static inline void push(rd *r, const char *name)
{
    /* Depth is fixed by the schemas, so overflow would be a coding error;
     * still, never write past the array. */
    if (r->depth < PATH_MAX_DEPTH)
        r->path[r->depth] = (path_seg){name, -1};
    r->depth++;
}

static inline void pop(rd *r)
{
    r->depth--;
}

/* Writes "a.b[3].field: <message>" into the caller's detail buffer (if any). */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void
describe(rd *r, const char *field, const char *fmt, ...)
{
    if (!r->detail || r->detail_len == 0)
        return;
    size_t pos = 0, cap = r->detail_len;
    r->detail[0] = '\0';
#define APPEND(...)                                                                                \
    do {                                                                                           \
        if (pos < cap) {                                                                           \
            int n_ = snprintf(r->detail + pos, cap - pos, __VA_ARGS__);                            \
            if (n_ > 0)                                                                            \
                pos += (size_t)n_;                                                                 \
        }                                                                                          \
    } while (0)
    int depth = r->depth < PATH_MAX_DEPTH ? r->depth : PATH_MAX_DEPTH;
    for (int i = 0; i < depth; i++) {
        APPEND("%s%s", i ? "." : "", r->path[i].name);
        if (r->path[i].index >= 0)
            APPEND("[%" PRId64 "]", r->path[i].index);
    }
    if (field)
        APPEND("%s%s", depth ? "." : "", field);
    if (depth || field)
        APPEND(": ");
    if (pos < cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->detail + pos, cap - pos, fmt, ap);
        va_end(ap);
    }
#undef APPEND
}

/* Evaluates to the error code itself, so the compiler sees which paths fail. */
#define FAIL(r, field, code, ...) (describe((r), (field), __VA_ARGS__), (code))

/* ---- primitives ----------------------------------------------------------------- */

static inline mc_codec_err rd_long(rd *r, const char *field, int64_t *out)
{
    const uint8_t *p = r->p;
    uint64_t v = 0;
    for (unsigned i = 0; i < 10; i++) {
        if (p == r->end)
            return FAIL(r, field, MC_CODEC_TRUNCATED, "varint runs past the end of the record");
        uint8_t b = *p++;
        if (i == 9 && b > 1)
            return FAIL(r, field, MC_CODEC_BAD_VARINT,
                        (b & 0x80) ? "varint longer than 10 bytes" : "varint overflows 64 bits");
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            r->p = p;
            *out = (int64_t)((v >> 1) ^ (0 - (v & 1))); /* zigzag */
            return MC_CODEC_OK;
        }
    }
    return FAIL(r, field, MC_CODEC_BAD_VARINT, "varint longer than 10 bytes"); /* unreachable */
}

static inline mc_codec_err rd_int(rd *r, const char *field, int32_t *out)
{
    int64_t v;
    TRY(rd_long(r, field, &v));
    if (v < INT32_MIN || v > INT32_MAX)
        return FAIL(r, field, MC_CODEC_BAD_VARINT, "value %" PRId64 " does not fit in an int", v);
    *out = (int32_t)v;
    return MC_CODEC_OK;
}

static mc_codec_err rd_bool(rd *r, const char *field, bool *out)
{
    if (r->p == r->end)
        return FAIL(r, field, MC_CODEC_TRUNCATED, "boolean runs past the end of the record");
    uint8_t b = *r->p;
    /* The spec allows only 0 and 1; anything else would not re-encode to the
     * same bytes, so it is rejected like an out-of-range enum. */
    if (b > 1)
        return FAIL(r, field, MC_CODEC_BAD_ENUM, "boolean byte %u is neither 0 nor 1", b);
    r->p++;
    *out = b == 1;
    return MC_CODEC_OK;
}

static mc_codec_err rd_double(rd *r, const char *field, double *out)
{
    if (left(r) < 8)
        return FAIL(r, field, MC_CODEC_TRUNCATED, "double needs 8 bytes, %zu left", left(r));
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | r->p[i];
    memcpy(out, &v, sizeof *out);
    r->p += 8;
    return MC_CODEC_OK;
}

/* A length prefix: non-negative and no more than what remains. */
static inline mc_codec_err rd_len(rd *r, const char *field, size_t *out)
{
    int64_t n;
    TRY(rd_long(r, field, &n));
    if (n < 0)
        return FAIL(r, field, MC_CODEC_BAD_LENGTH, "negative length %" PRId64, n);
    if ((uint64_t)n > left(r))
        return FAIL(r, field, MC_CODEC_BAD_LENGTH, "length %" PRId64 " exceeds the %zu bytes left",
                    n, left(r));
    *out = (size_t)n;
    return MC_CODEC_OK;
}

/* Offset of the first byte that makes s invalid UTF-8 (or a NUL), or n.
 * Strict per RFC 3629: no overlong forms, no surrogates, nothing above
 * U+10FFFF. ASCII runs are checked eight bytes at a time. */
static size_t utf8_invalid_at(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        while (n - i >= 8) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            const uint64_t hi = 0x8080808080808080ULL, lo = 0x0101010101010101ULL;
            if ((w & hi) || ((w - lo) & ~w & hi))
                break; /* a non-ASCII or a zero byte: look closer */
            i += 8;
        }
        if (i >= n)
            break;
        uint8_t c = s[i];
        if (c == 0)
            return i;
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        uint8_t lo2 = 0x80, hi2 = 0xBF; /* range of the second byte */
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0)
                lo2 = 0xA0; /* overlong */
            else if (c == 0xED)
                hi2 = 0x9F; /* surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0)
                lo2 = 0x90; /* overlong */
            else if (c == 0xF4)
                hi2 = 0x8F; /* above U+10FFFF */
        } else {
            return i;
        }
        if (n - i <= need)
            return i;
        if (s[i + 1] < lo2 || s[i + 1] > hi2)
            return i;
        for (size_t k = 2; k <= need; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
        i += need + 1;
    }
    return n;
}

static mc_codec_err rd_string(rd *r, const char *field, const char **out)
{
    size_t n;
    TRY(rd_len(r, field, &n));
    if (n == 0) {
        *out = ""; /* static: empty strings cost no arena space */
        return MC_CODEC_OK;
    }
    size_t bad = utf8_invalid_at(r->p, n);
    if (bad != n)
        return FAIL(r, field, MC_CODEC_BAD_UTF8,
                    r->p[bad] ? "invalid UTF-8 at byte %zu of %zu" : "NUL at byte %zu of %zu", bad,
                    n);
    char *s = mc_arena_alloc_unaligned(r->arena, n + 1);
    if (!s)
        return FAIL(r, field, MC_CODEC_NOMEM, "out of memory for a %zu-byte string", n);
    memcpy(s, r->p, n);
    s[n] = '\0';
    r->p += n;
    *out = s;
    return MC_CODEC_OK;
}

static mc_codec_err rd_bytes(rd *r, const char *field, const uint8_t **out, size_t *out_len)
{
    size_t n;
    TRY(rd_len(r, field, &n));
    *out_len = n;
    if (n == 0) {
        *out = NULL;
        return MC_CODEC_OK;
    }
    /* Copied, because the input (a Kafka message) dies before the arena. */
    uint8_t *d = mc_arena_alloc_unaligned(r->arena, n);
    if (!d)
        return FAIL(r, field, MC_CODEC_NOMEM, "out of memory for %zu bytes", n);
    memcpy(d, r->p, n);
    r->p += n;
    *out = d;
    return MC_CODEC_OK;
}

static mc_codec_err rd_branch(rd *r, const char *field, int64_t n_branches, int64_t *out)
{
    int64_t i;
    TRY(rd_long(r, field, &i));
    if (i < 0 || i >= n_branches)
        return FAIL(r, field, MC_CODEC_BAD_UNION,
                    "union branch %" PRId64 " out of range (0..%" PRId64 ")", i, n_branches - 1);
    *out = i;
    return MC_CODEC_OK;
}

/* Reads one block header of an array or map: its item count (0 ends the
 * list) and, for a negative count, the block's byte size, which the spec
 * lets writers add so readers can skip; we check it instead. */
static mc_codec_err rd_block(rd *r, const char *field, size_t min_item_bytes, size_t *count,
                             const uint8_t **block_end)
{
    int64_t n;
    TRY(rd_long(r, field, &n));
    *block_end = NULL;
    if (n < 0) {
        if (n == INT64_MIN)
            return FAIL(r, field, MC_CODEC_BAD_LENGTH, "block count %" PRId64 " cannot be negated",
                        n);
        n = -n;
        size_t size;
        TRY(rd_len(r, field, &size));
        *block_end = r->p + size;
    }
    /* Every entry takes at least min_item_bytes, so a count the remaining
     * input cannot hold is rejected before anything is allocated for it. */
    if ((uint64_t)n > left(r) / min_item_bytes)
        return FAIL(r, field, MC_CODEC_BAD_LENGTH,
                    "block of %" PRId64 " entries cannot fit in the %zu bytes left", n, left(r));
    *count = (size_t)n;
    return MC_CODEC_OK;
}

static mc_codec_err skip_string(rd *r, const char *field)
{
    size_t n;
    TRY(rd_len(r, field, &n));
    r->p += n;
    return MC_CODEC_OK;
}

/* Reads one item of an array or map into slot; slot NULL: checks it and passes it
 * (the first pass of rd_items). */
typedef mc_codec_err (*rd_item_fn)(rd *r, void *slot);

/* An array or map (field) whose items land in one contiguous arena array, item_size
 * bytes each. A writer may split it into any number of blocks, so a first pass validates
 * the blocks and counts the items (each takes at least min_item_bytes, so a count the
 * input cannot hold is refused before anything is allocated), then the array is
 * allocated exactly sized, zeroed, and filled by a second pass. Canonical writers use
 * one block. *out is NULL when there are no items. */
static mc_codec_err rd_items(rd *r, const char *field, size_t min_item_bytes, size_t item_size,
                             rd_item_fn fn, void **out, size_t *out_n)
{
    const uint8_t *start = r->p;
    size_t total = 0;
    uint8_t *items = NULL;
    push(r, field);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            if (total == 0)
                break;
            /* At most item_size bytes per min_item_bytes of input: bounded. */
            if (!(items = mc_arena_alloc(r->arena, total * item_size)))
                return FAIL(r, NULL, MC_CODEC_NOMEM, "out of memory for %zu items", total);
            memset(items, 0, total * item_size);
            r->p = start;
        }
        size_t i = 0;
        for (;;) {
            size_t count;
            const uint8_t *block_end;
            TRY(rd_block(r, NULL, min_item_bytes, &count, &block_end));
            if (count == 0)
                break;
            for (size_t k = 0; k < count; k++, i++) {
                r->path[r->depth - 1].index = (int64_t)i;
                TRY(fn(r, items ? items + i * item_size : NULL));
            }
            r->path[r->depth - 1].index = -1;
            if (block_end && r->p != block_end)
                return FAIL(r, NULL, MC_CODEC_BAD_LENGTH,
                            "block byte size disagrees with its items by %td bytes",
                            r->p - block_end);
        }
        total = i; /* cannot overflow: bounded by the input length */
    }
    pop(r);
    *out = items;
    *out_n = total;
    return MC_CODEC_OK;
}

static mc_codec_err kv_item(rd *r, void *slot)
{
    mc_kv *kv = slot;
    if (!kv) {
        TRY(skip_string(r, "key"));
        return skip_string(r, "value");
    }
    TRY(rd_string(r, "key", &kv->key));
    return rd_string(r, "value", &kv->value);
}

/* map<string> into an mc_kv array (at most 16 bytes per 2 input bytes). */
static mc_codec_err rd_string_map(rd *r, const char *field, const mc_kv **out, size_t *out_n)
{
    void *items;
    TRY(rd_items(r, field, 2, sizeof(mc_kv), kv_item, &items, out_n));
    *out = items;
    return MC_CODEC_OK;
}

static mc_codec_err string_item(rd *r, void *slot)
{
    return slot ? rd_string(r, NULL, slot) : skip_string(r, NULL);
}

/* The union [null, string]: NULL for null. */
static mc_codec_err rd_optional_string(rd *r, const char *field, const char **out)
{
    int64_t branch;
    *out = NULL;
    TRY(rd_branch(r, field, 2, &branch));
    return branch == 1 ? rd_string(r, field, out) : MC_CODEC_OK;
}

/* array<string> (at most 8 bytes per input byte, and the strings). */
static mc_codec_err rd_string_array(rd *r, const char *field, const char *const **out,
                                    size_t *out_n)
{
    void *items;
    TRY(rd_items(r, field, 1, sizeof(const char *), string_item, &items, out_n));
    *out = items;
    return MC_CODEC_OK;
}

/* ---- records -------------------------------------------------------------------- */

static mc_codec_err rd_callback(rd *r, mc_callback *cb)
{
    push(r, "callback");
    TRY(rd_string(r, "url", &cb->url));
    TRY(rd_string(r, "method", &cb->method));
    TRY(rd_string_map(r, "headers", &cb->headers, &cb->n_headers));
    TRY(rd_bytes(r, "body", &cb->body, &cb->body_len));
    TRY(rd_int(r, "timeout_ms", &cb->timeout_ms));
    pop(r);
    return MC_CODEC_OK;
}

/* The union [null, RetryPolicy], shared by Task and Job. */
static mc_codec_err rd_retry(rd *r, bool *has_retry, mc_retry_policy *p)
{
    int64_t branch;
    TRY(rd_branch(r, "retry", 2, &branch));
    *has_retry = branch == 1;
    if (!*has_retry) {
        *p = (mc_retry_policy){0};
        return MC_CODEC_OK;
    }
    push(r, "retry");
    TRY(rd_int(r, "max_attempts", &p->max_attempts));
    TRY(rd_long(r, "initial_backoff_ms", &p->initial_backoff_ms));
    TRY(rd_double(r, "multiplier", &p->multiplier));
    TRY(rd_long(r, "max_backoff_ms", &p->max_backoff_ms));
    pop(r);
    return MC_CODEC_OK;
}

/* The free-form metadata map<string>, shared by Task and Job. */
static mc_codec_err rd_metadata(rd *r, const mc_kv **kv, size_t *n)
{
    return rd_string_map(r, "metadata", kv, n);
}

/* An enum symbol: 0 .. n_symbols - 1. */
static mc_codec_err rd_enum(rd *r, const char *field, int n_symbols, int *out)
{
    int64_t sym;
    TRY(rd_long(r, field, &sym));
    if (sym < 0 || sym >= n_symbols)
        return FAIL(r, field, MC_CODEC_BAD_ENUM, "symbol %" PRId64 " out of range (0..%d)", sym,
                    n_symbols - 1);
    *out = (int)sym;
    return MC_CODEC_OK;
}

/* Whether the writer's version of the schema has the fields added in
 * version v. */
static bool has_since(const rd *r, int v)
{
    return r->older == 0 || r->older >= v;
}

/* The version of each schema that holds Task version 2 (kafka_target,
 * late_policy): Attempt had changed once before. */
static int task_v2_in(mc_schema_id id)
{
    return id == MC_SCHEMA_ATTEMPT ? 3 : 2;
}

/* The union [null, bytes] into *has and *out, *len. */
static mc_codec_err rd_optional_bytes(rd *r, const char *field, bool *has, const uint8_t **out,
                                      size_t *len)
{
    int64_t branch;
    TRY(rd_branch(r, field, 2, &branch));
    *has = branch == 1;
    return *has ? rd_bytes(r, field, out, len) : MC_CODEC_OK;
}

/* [null, KafkaTarget], shared by Task and FollowUp. */
static mc_codec_err rd_kafka_target(rd *r, bool *has, mc_kafka_target *k)
{
    int64_t branch;
    TRY(rd_branch(r, "kafka_target", 2, &branch));
    *has = branch == 1;
    if (!*has)
        return MC_CODEC_OK;
    push(r, "kafka_target");
    TRY(rd_string(r, "topic", &k->topic));
    TRY(rd_optional_bytes(r, "key", &k->has_key, &k->key, &k->key_len));
    TRY(rd_optional_bytes(r, "value", &k->has_value, &k->value, &k->value_len));
    TRY(rd_string_map(r, "headers", &k->headers, &k->n_headers));
    pop(r);
    return MC_CODEC_OK;
}

/* [null, LatePolicy], shared by Task and FollowUp. */
static mc_codec_err rd_late_policy(rd *r, bool *has, mc_late_policy *p)
{
    int64_t branch;
    TRY(rd_branch(r, "late_policy", 2, &branch));
    *has = branch == 1;
    if (!*has)
        return MC_CODEC_OK;
    int sym;
    push(r, "late_policy");
    TRY(rd_long(r, "max_late_ms", &p->max_late_ms));
    TRY(rd_enum(r, "action", MC_LATE_DEAD + 1, &sym));
    p->action = (mc_late_action)sym;
    pop(r);
    return MC_CODEC_OK;
}

/* One FollowUp; the caller has pushed "on_success" and set its index. */
static mc_codec_err rd_follow_up(rd *r, mc_follow_up *f)
{
    TRY(rd_string(r, "task_id", &f->task_id));
    TRY(rd_long(r, "delay_ms", &f->delay_ms));
    TRY(rd_callback(r, &f->callback));
    TRY(rd_kafka_target(r, &f->has_kafka_target, &f->kafka_target));
    TRY(rd_retry(r, &f->has_retry, &f->retry));
    return rd_late_policy(r, &f->has_late_policy, &f->late_policy);
}

static mc_codec_err follow_up_item(rd *r, void *slot)
{
    mc_follow_up scratch = {0};
    return rd_follow_up(r, slot ? slot : &scratch);
}

/* array<FollowUp> (each at least 10 bytes: two strings, a long, the callback's five
 * fields, three unions). */
static mc_codec_err rd_on_success(rd *r, const mc_follow_up **out, size_t *out_n)
{
    void *items;
    TRY(rd_items(r, "on_success", 10, sizeof(mc_follow_up), follow_up_item, &items, out_n));
    *out = items;
    return MC_CODEC_OK;
}

/* Task version 2's fields: kafka_target, late_policy, on_success. */
static mc_codec_err rd_task_v2(rd *r, mc_task *t)
{
    TRY(rd_kafka_target(r, &t->has_kafka_target, &t->kafka_target));
    TRY(rd_late_policy(r, &t->has_late_policy, &t->late_policy));
    return rd_on_success(r, &t->on_success, &t->n_on_success);
}

static mc_codec_err rd_task(rd *r, mc_task *t)
{
    TRY(rd_string(r, "app_id", &t->app_id));
    TRY(rd_string(r, "task_id", &t->task_id));
    TRY(rd_long(r, "due_at", &t->due_at));
    TRY(rd_callback(r, &t->callback));
    TRY(rd_retry(r, &t->has_retry, &t->retry));
    TRY(rd_int(r, "attempt", &t->attempt));
    TRY(rd_long(r, "created_at", &t->created_at));
    TRY(rd_metadata(r, &t->metadata, &t->n_metadata));
    return has_since(r, task_v2_in(r->id)) ? rd_task_v2(r, t) : MC_CODEC_OK;
}

/* A Job; the caller has pushed the path segment that names it. */
static mc_codec_err rd_job(rd *r, mc_job *j)
{
    int sym;
    TRY(rd_string(r, "app_id", &j->app_id));
    TRY(rd_string(r, "job_id", &j->job_id));
    push(r, "schedule");
    TRY(rd_enum(r, "kind", MC_SCHEDULE_FIXED_DELAY + 1, &sym));
    j->kind = (mc_schedule_kind)sym;
    TRY(rd_string(r, "cron", &j->cron));
    TRY(rd_string(r, "time_zone", &j->time_zone));
    TRY(rd_long(r, "interval_ms", &j->interval_ms));
    pop(r);
    TRY(rd_long(r, "start_at", &j->start_at));
    TRY(rd_long(r, "end_at", &j->end_at));
    TRY(rd_long(r, "max_runs", &j->max_runs));
    TRY(rd_enum(r, "misfire", MC_MISFIRE_CATCH_UP + 1, &sym));
    j->misfire = (mc_misfire_policy)sym;
    TRY(rd_int(r, "catch_up_limit", &j->catch_up_limit));
    TRY(rd_long(r, "misfire_threshold_ms", &j->misfire_threshold_ms));
    TRY(rd_enum(r, "overlap", MC_OVERLAP_SERIAL + 1, &sym));
    j->overlap = (mc_overlap_policy)sym;
    TRY(rd_bool(r, "paused", &j->paused));
    TRY(rd_callback(r, &j->callback));
    TRY(rd_retry(r, &j->has_retry, &j->retry));
    TRY(rd_metadata(r, &j->metadata, &j->n_metadata));
    TRY(rd_long(r, "created_at", &j->created_at));
    if (!has_since(r, 2))
        return MC_CODEC_OK;
    TRY(rd_kafka_target(r, &j->has_kafka_target, &j->kafka_target));
    TRY(rd_late_policy(r, &j->has_late_policy, &j->late_policy));
    return rd_on_success(r, &j->on_success, &j->n_on_success);
}

/* A version 1 Job's bytes made current in the arena: the defaults of the
 * fields Job gained in version 2 (the same three as Task's) appended. */
static mc_codec_err current_job_bytes(rd *r, const uint8_t **raw, size_t *raw_len)
{
    uint8_t *copy = mc_arena_alloc_unaligned(r->arena, *raw_len + sizeof mc_task_v1_suffix);
    if (!copy)
        return FAIL(r, NULL, MC_CODEC_NOMEM, "out of memory");
    memcpy(copy, *raw, *raw_len);
    memcpy(copy + *raw_len, mc_task_v1_suffix, sizeof mc_task_v1_suffix);
    *raw = copy;
    *raw_len += sizeof mc_task_v1_suffix;
    return MC_CODEC_OK;
}

/* A Job under path segment "job", and its bytes (current ones: see
 * mc_job_command.put_raw). */
static mc_codec_err rd_job_raw(rd *r, mc_job *j, const uint8_t **raw, size_t *raw_len)
{
    const uint8_t *start = r->p;
    push(r, "job");
    TRY(rd_job(r, j));
    pop(r);
    *raw = start;
    *raw_len = (size_t)(r->p - start);
    return has_since(r, 2) ? MC_CODEC_OK : current_job_bytes(r, raw, raw_len);
}

/* One RunningOccurrence; the caller has pushed "running" and set its index. */
static mc_codec_err rd_running_occurrence(rd *r, mc_running_occurrence *o)
{
    TRY(rd_long(r, "scheduled_at", &o->scheduled_at));
    TRY(rd_long(r, "due_at", &o->due_at));
    return MC_CODEC_OK;
}

static mc_codec_err running_item(rd *r, void *slot)
{
    mc_running_occurrence scratch;
    return rd_running_occurrence(r, slot ? slot : &scratch);
}

/* array<RunningOccurrence> (each at least two bytes, one per long). */
static mc_codec_err rd_running(rd *r, const char *field, const mc_running_occurrence **out,
                               size_t *out_n)
{
    void *items;
    TRY(rd_items(r, field, 2, sizeof(mc_running_occurrence), running_item, &items, out_n));
    *out = items;
    return MC_CODEC_OK;
}

/* The union {Submit, Cancel} shared by Command and WheelEntry. */
static mc_codec_err rd_payload(rd *r, mc_command *c)
{
    int64_t branch;
    TRY(rd_branch(r, "payload", 2, &branch));
    push(r, "payload");
    if (branch == 0) {
        c->kind = MC_CMD_SUBMIT;
        push(r, "task");
        TRY(rd_task(r, &c->submit));
        pop(r);
    } else {
        c->kind = MC_CMD_CANCEL;
        TRY(rd_string(r, "app_id", &c->cancel.app_id));
        TRY(rd_string(r, "task_id", &c->cancel.task_id));
        TRY(rd_long(r, "requested_at", &c->cancel.requested_at));
    }
    pop(r);
    return MC_CODEC_OK;
}

/* ---- framing -------------------------------------------------------------------- */

/* A record written with another version of the schema: its body is
 * transcoded into ours (schema resolution) in the arena, and decoding goes
 * on from there as if it had been written with ours. */
static mc_codec_err resolve_body(rd *r, const mc_writer_schema *ws, const uint8_t *d, size_t len,
                                 size_t header)
{
    mc_buf out = {0};
    char why[200];
    mc_codec_err e =
        mc_writer_schema_transcode(ws, d + header, len - header, &out, why, sizeof why);
    if (e != MC_CODEC_OK) {
        mc_buf_free(&out);
        return FAIL(r, NULL, e, "written with writer schema %016" PRIx64 ": %s",
                    mc_writer_schema_fingerprint(ws), why);
    }
    uint8_t *copy = mc_arena_alloc_unaligned(r->arena, out.len ? out.len : 1);
    if (!copy) {
        mc_buf_free(&out);
        return FAIL(r, NULL, MC_CODEC_NOMEM, "out of memory");
    }
    if (out.len)
        memcpy(copy, out.data, out.len);
    r->p = copy;
    r->end = copy + out.len;
    mc_buf_free(&out);
    return MC_CODEC_OK;
}

static mc_codec_err begin(rd *r, const void *data, size_t len, mc_arena *arena, char *detail,
                          size_t detail_len, mc_schema_id id, const mc_codec_options *confluent)
{
    *r = (rd){.p = data,
              .end = (const uint8_t *)data + len,
              .arena = arena,
              .detail = detail,
              .detail_len = detail_len,
              .id = id};
    if (detail && detail_len)
        detail[0] = '\0';
    if (len == 0 || !data)
        return FAIL(r, NULL, MC_CODEC_EMPTY, "the value has no bytes");
    const uint8_t *d = data;
    if (d[0] == MC_SO_MAGIC0) {
        if (len < 2 || d[1] != MC_SO_MAGIC1) {
            if (len < 2)
                return FAIL(r, NULL, MC_CODEC_TRUNCATED, "single-object header cut after 1 byte");
            return FAIL(r, NULL, MC_CODEC_BAD_MAGIC, "bytes c3 %02x are not the C3 01 marker",
                        d[1]);
        }
        if (len < MC_SO_HEADER_LEN)
            return FAIL(r, NULL, MC_CODEC_TRUNCATED, "single-object header needs 10 bytes, got %zu",
                        len);
        uint64_t fp = 0;
        for (int i = 9; i >= 2; i--)
            fp = (fp << 8) | d[i];
        uint64_t want = mc_schema_fingerprint(id);
        for (int v = 1; fp != want && v < mc_schema_current_version(id); v++)
            if (mc_schema_version_fingerprint(id, v) == fp)
                r->older = v;
        if (fp != want && !r->older) {
            for (size_t i = 0; confluent && i < confluent->n_writers; i++)
                if (mc_writer_schema_fingerprint(confluent->writers[i].schema) == fp)
                    return resolve_body(r, confluent->writers[i].schema, d, len, MC_SO_HEADER_LEN);
            return FAIL(r, NULL, MC_CODEC_UNKNOWN_SCHEMA,
                        "fingerprint %016" PRIx64 " is not %s (%016" PRIx64
                        ") nor a configured writer schema",
                        fp, mc_schema_name(id), want);
        }
        r->p += MC_SO_HEADER_LEN;
        return MC_CODEC_OK;
    }
    if (d[0] == MC_CONFLUENT_MAGIC && id == MC_SCHEMA_COMMAND) {
        if (len < MC_CONFLUENT_HEADER_LEN)
            return FAIL(r, NULL, MC_CODEC_TRUNCATED, "Confluent header needs 5 bytes, got %zu",
                        len);
        int32_t sid =
            (int32_t)((uint32_t)d[1] << 24 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 8 | d[4]);
        bool known = false;
        for (size_t i = 0; confluent && i < confluent->n_confluent_command_ids; i++)
            known |= confluent->confluent_command_ids[i] == sid;
        for (size_t i = 0; !known && confluent && i < confluent->n_writers; i++)
            if (confluent->writers[i].confluent_id == sid)
                return resolve_body(r, confluent->writers[i].schema, d, len,
                                    MC_CONFLUENT_HEADER_LEN);
        if (!known)
            return FAIL(r, NULL, MC_CODEC_UNKNOWN_SCHEMA,
                        "Confluent schema id %" PRId32 " is not a configured Command id", sid);
        r->p += MC_CONFLUENT_HEADER_LEN;
        return MC_CODEC_OK;
    }
    return FAIL(r, NULL, MC_CODEC_BAD_MAGIC,
                "first byte 0x%02x is not an Avro single-object%s marker", d[0],
                id == MC_SCHEMA_COMMAND ? " or Confluent" : "");
}

static mc_codec_err finish(rd *r, const char *what)
{
    if (r->p != r->end)
        return FAIL(r, NULL, MC_CODEC_TRAILING, "%zu byte%s left after the %s", left(r),
                    left(r) == 1 ? "" : "s", what);
    return MC_CODEC_OK;
}

/* Decoders: each zeroes *out, checks the framing, decodes the body, and
 * rejects trailing bytes. Strings and byte arrays in *out live in arena. */
mc_codec_err mc_decode_command(const mc_codec_options *opts, const void *data, size_t len,
                               mc_arena *arena, mc_command *out, char *detail, size_t detail_len)
{
    rd r;
    *out = (mc_command){0};
    TRY(begin(&r, data, len, arena, detail, detail_len, MC_SCHEMA_COMMAND, opts));
    TRY(rd_payload(&r, out));
    return finish(&r, "Command");
}

mc_codec_err mc_decode_wheel_entry(const void *data, size_t len, mc_arena *arena,
                                   mc_wheel_entry *out, char *detail, size_t detail_len)
{
    rd r;
    *out = (mc_wheel_entry){0};
    TRY(begin(&r, data, len, arena, detail, detail_len, MC_SCHEMA_WHEEL_ENTRY, NULL));
    TRY(rd_long(&r, "version", &out->version));
    TRY(rd_payload(&r, &out->command));
    return finish(&r, "WheelEntry");
}

mc_codec_err mc_decode_stored_task(const void *data, size_t len, mc_arena *arena,
                                   mc_stored_task *out, char *detail, size_t detail_len)
{
    rd r;
    *out = (mc_stored_task){0};
    TRY(begin(&r, data, len, arena, detail, detail_len, MC_SCHEMA_STORED_TASK, NULL));
    TRY(rd_long(&r, "version", &out->version));
    push(&r, "task");
    TRY(rd_task(&r, &out->task));
    pop(&r);
    return finish(&r, "StoredTask");
}

mc_codec_err mc_decode_attempt(const void *data, size_t len, mc_arena *arena, mc_attempt *out,
                               char *detail, size_t detail_len)
{
    rd r;
    *out = (mc_attempt){0};
    TRY(begin(&r, data, len, arena, detail, detail_len, MC_SCHEMA_ATTEMPT, NULL));
    push(&r, "task");
    TRY(rd_task(&r, &out->task));
    pop(&r);
    TRY(rd_int(&r, "http_status", &out->http_status));
    TRY(rd_string(&r, "error", &out->error));
    TRY(rd_bytes(&r, "response_snippet", &out->response_snippet, &out->response_snippet_len));
    TRY(rd_long(&r, "retry_after_ms", &out->retry_after_ms));
    TRY(rd_long(&r, "started_at", &out->started_at));
    TRY(rd_long(&r, "finished_at", &out->finished_at));
    TRY(rd_bool(&r, "permanent", &out->permanent));
    out->response_size = -1;
    if (has_since(&r, 2)) {
        TRY(rd_string_map(&r, "response_headers", &out->response_headers,
                          &out->n_response_headers));
        TRY(rd_long(&r, "response_size", &out->response_size));
    }
    if (has_since(&r, 4))
        TRY(rd_optional_string(&r, "member", &out->member));
    return finish(&r, "Attempt");
}

mc_codec_err mc_decode_result(const void *data, size_t len, mc_arena *arena, mc_result *out,
                              char *detail, size_t detail_len)
{
    rd r;
    *out = (mc_result){0};
    TRY(begin(&r, data, len, arena, detail, detail_len, MC_SCHEMA_RESULT, NULL));
    TRY(rd_string(&r, "app_id", &out->app_id));
    TRY(rd_string(&r, "task_id", &out->task_id));
    TRY(rd_int(&r, "attempt", &out->attempt));
    TRY(rd_long(&r, "due_at", &out->due_at));
    TRY(rd_long(&r, "started_at", &out->started_at));
    TRY(rd_long(&r, "finished_at", &out->finished_at));
    TRY(rd_int(&r, "http_status", &out->http_status));
    int sym;
    TRY(rd_enum(&r, "outcome", has_since(&r, 3) ? MC_OUTCOME_DROPPED + 1 : MC_OUTCOME_CANCELLED + 1,
                &sym));
    out->outcome = (mc_outcome)sym;
    TRY(rd_string(&r, "error", &out->error));
    out->version = -1;
    out->response_size = -1;
    if (has_since(&r, 2)) {
        TRY(rd_long(&r, "version", &out->version));
        TRY(rd_string_map(&r, "response_headers", &out->response_headers,
                          &out->n_response_headers));
        TRY(rd_bytes(&r, "response_body", &out->response_body, &out->response_body_len));
        TRY(rd_long(&r, "response_size", &out->response_size));
    }
    if (has_since(&r, 4))
        TRY(rd_optional_string(&r, "member", &out->member));
    return finish(&r, "Result");
}

mc_codec_err mc_decode_dead_letter(const void *data, size_t len, mc_arena *arena,
                                   mc_dead_letter *out, char *detail, size_t detail_len)
{
    rd r;
    *out = (mc_dead_letter){0};
    TRY(begin(&r, data, len, arena, detail, detail_len, MC_SCHEMA_DEAD_LETTER, NULL));
    TRY(rd_string(&r, "reason", &out->reason));
    TRY(rd_string(&r, "source_topic", &out->source_topic));
    TRY(rd_int(&r, "source_partition", &out->source_partition));
    TRY(rd_long(&r, "source_offset", &out->source_offset));
    int64_t branch;
    TRY(rd_branch(&r, "raw", 2, &branch));
    out->has_raw = branch == 1;
    if (out->has_raw)
        TRY(rd_bytes(&r, "raw", &out->raw, &out->raw_len));
    TRY(rd_branch(&r, "task", 2, &branch));
    out->has_task = branch == 1;
    if (out->has_task) {
        push(&r, "task");
        TRY(rd_task(&r, &out->task));
        pop(&r);
    }
    TRY(rd_long(&r, "failed_at", &out->failed_at));
    return finish(&r, "DeadLetter");
}

static mc_codec_err rd_shard_end(rd *r, mc_shard_end *e)
{
    int sym;
    TRY(rd_int(r, "shard", &e->shard));
    TRY(rd_enum(r, "outcome", MC_OUTCOME_CANCELLED + 1, &sym));
    e->outcome = (mc_outcome)sym;
    return rd_long(r, "finished_at", &e->finished_at);
}

static mc_codec_err shard_end_item(rd *r, void *slot)
{
    mc_shard_end scratch;
    return rd_shard_end(r, slot ? slot : &scratch);
}

static mc_codec_err rd_start_broadcast(rd *r, mc_start_broadcast *b)
{
    push(r, "task");
    TRY(rd_task(r, &b->task));
    pop(r);
    TRY(rd_long(r, "version", &b->version));
    TRY(rd_string_array(r, "members", &b->members, &b->n_members));
    TRY(rd_long(r, "fired_at", &b->fired_at));
    void *items;
    /* each at least three bytes: shard, outcome, finished_at */
    TRY(rd_items(r, "ended", 3, sizeof(mc_shard_end), shard_end_item, &items, &b->n_ended));
    b->ended = items;
    return MC_CODEC_OK;
}

/* The union {PutJob, JobAction, OccurrenceDone, AddLink, CancelLink,
 * LinkDone, StartBroadcast, ShardDone} of a JobCommand (AddLink .. LinkDone
 * since version 3, the broadcasts since version 4). */
static mc_codec_err rd_job_payload(rd *r, mc_job_command *c)
{
    int64_t branch;
    int sym;
    TRY(rd_branch(r, "payload", has_since(r, 4) ? 8 : has_since(r, 3) ? 6 : 3, &branch));
    push(r, "payload");
    switch (branch) {
    case 0:
        c->kind = MC_JOBCMD_PUT;
        TRY(rd_job_raw(r, &c->put, &c->put_raw, &c->put_raw_len));
        break;
    case 1:
        c->kind = MC_JOBCMD_ACTION;
        TRY(rd_string(r, "app_id", &c->action.app_id));
        TRY(rd_string(r, "job_id", &c->action.job_id));
        TRY(rd_enum(r, "action", MC_JOB_TRIGGER + 1, &sym));
        c->action.action = (mc_job_action_kind)sym;
        TRY(rd_long(r, "requested_at", &c->action.requested_at));
        break;
    case 2:
        c->kind = MC_JOBCMD_DONE;
        TRY(rd_string(r, "app_id", &c->done.app_id));
        TRY(rd_string(r, "job_id", &c->done.job_id));
        TRY(rd_long(r, "scheduled_at", &c->done.scheduled_at));
        TRY(rd_enum(r, "outcome", MC_OUTCOME_CANCELLED + 1, &sym));
        c->done.outcome = (mc_outcome)sym;
        TRY(rd_long(r, "finished_at", &c->done.finished_at));
        break;
    case 3:
        c->kind = MC_JOBCMD_ADD_LINK;
        TRY(rd_string(r, "ordering_key", &c->add_link.ordering_key));
        push(r, "task");
        TRY(rd_task(r, &c->add_link.task));
        pop(r);
        break;
    case 4:
        c->kind = MC_JOBCMD_CANCEL_LINK;
        TRY(rd_string(r, "app_id", &c->cancel_link.app_id));
        TRY(rd_string(r, "ordering_key", &c->cancel_link.ordering_key));
        TRY(rd_string(r, "task_id", &c->cancel_link.task_id));
        TRY(rd_long(r, "requested_at", &c->cancel_link.requested_at));
        break;
    case 6:
        c->kind = MC_JOBCMD_START_BROADCAST;
        TRY(rd_start_broadcast(r, &c->start_broadcast));
        break;
    case 7:
        c->kind = MC_JOBCMD_SHARD_DONE;
        TRY(rd_string(r, "app_id", &c->shard_done.app_id));
        TRY(rd_string(r, "task_id", &c->shard_done.task_id));
        TRY(rd_long(r, "version", &c->shard_done.version));
        TRY(rd_shard_end(r, &c->shard_done.end));
        break;
    default:
        c->kind = MC_JOBCMD_LINK_DONE;
        TRY(rd_string(r, "app_id", &c->link_done.app_id));
        TRY(rd_string(r, "ordering_key", &c->link_done.ordering_key));
        TRY(rd_string(r, "task_id", &c->link_done.task_id));
        TRY(rd_long(r, "link", &c->link_done.link));
        TRY(rd_enum(r, "outcome", MC_OUTCOME_CANCELLED + 1, &sym));
        c->link_done.outcome = (mc_outcome)sym;
        TRY(rd_long(r, "finished_at", &c->link_done.finished_at));
        break;
    }
    pop(r);
    return MC_CODEC_OK;
}

/* A job-commands value: single-object framing only, hostile input. On a PUT,
 * put_raw points at the job's bytes inside data (not the arena). */
mc_codec_err mc_decode_job_command(const mc_codec_options *opts, const void *data, size_t len,
                                   mc_arena *arena, mc_job_command *out, char *detail,
                                   size_t detail_len)
{
    rd r;
    *out = (mc_job_command){0};
    TRY(begin(&r, data, len, arena, detail, detail_len, MC_SCHEMA_JOB_COMMAND, opts));
    TRY(rd_job_payload(&r, out));
    return finish(&r, "JobCommand");
}

/* A JobState's fields before its job. */
static mc_codec_err rd_job_state_head(rd *r, mc_job_state *out)
{
    int sym;
    TRY(rd_long(r, "version", &out->version));
    TRY(rd_enum(r, "status", MC_JOB_ENDED + 1, &sym));
    out->status = (mc_job_status)sym;
    TRY(rd_long(r, "next_at", &out->next_at));
    TRY(rd_long(r, "runs", &out->runs));
    TRY(rd_long(r, "last_scheduled_at", &out->last_scheduled_at));
    TRY(rd_running(r, "running", &out->running, &out->n_running));
    TRY(rd_long(r, "queued_at", &out->queued_at));
    TRY(rd_long(r, "skipped", &out->skipped));
    TRY(rd_long(r, "updated_at", &out->updated_at));
    return MC_CODEC_OK;
}

/* A jobs-topic value: single-object framing only. job_raw points at the
 * job's bytes inside data (not the arena). */
mc_codec_err mc_decode_job_state(const void *data, size_t len, mc_arena *arena, mc_job_state *out,
                                 char *detail, size_t detail_len)
{
    rd r;
    *out = (mc_job_state){0};
    TRY(begin(&r, data, len, arena, detail, detail_len, MC_SCHEMA_JOB_STATE, NULL));
    TRY(rd_job_state_head(&r, out));
    TRY(rd_job_raw(&r, &out->job, &out->job_raw, &out->job_raw_len));
    return finish(&r, "JobState");
}

/* The same up to its job: job_raw is the rest of data, not checked. */
mc_codec_err mc_decode_job_state_head(const void *data, size_t len, mc_arena *arena,
                                      mc_job_state *out, char *detail, size_t detail_len)
{
    rd r;
    *out = (mc_job_state){0};
    TRY(begin(&r, data, len, arena, detail, detail_len, MC_SCHEMA_JOB_STATE, NULL));
    TRY(rd_job_state_head(&r, out));
    out->job_raw = r.p;
    out->job_raw_len = left(&r);
    return has_since(&r, 2) ? MC_CODEC_OK : current_job_bytes(&r, &out->job_raw, &out->job_raw_len);
}

/* A chains-topic value: single-object framing only (only we write it). */
mc_codec_err mc_decode_chain_link(const void *data, size_t len, mc_arena *arena, mc_chain_link *out,
                                  char *detail, size_t detail_len)
{
    rd r;
    *out = (mc_chain_link){0};
    TRY(begin(&r, data, len, arena, detail, detail_len, MC_SCHEMA_CHAIN_LINK, NULL));
    TRY(rd_string(&r, "ordering_key", &out->ordering_key));
    TRY(rd_long(&r, "link", &out->link));
    TRY(rd_long(&r, "released_at", &out->released_at));
    TRY(rd_long(&r, "cancelled_at", &out->cancelled_at));
    push(&r, "task");
    TRY(rd_task(&r, &out->task));
    pop(&r);
    return finish(&r, "ChainLink");
}

/* A job's bare Avro binary (a put_raw or job_raw), no framing; errors name
 * fields as "job.<field>". */
mc_codec_err mc_decode_job(const void *data, size_t len, mc_arena *arena, mc_job *out, char *detail,
                           size_t detail_len)
{
    rd r = {.p = data,
            .end = data ? (const uint8_t *)data + len : NULL,
            .arena = arena,
            .detail = detail,
            .detail_len = detail_len};
    *out = (mc_job){0};
    if (detail && detail_len)
        detail[0] = '\0';
    if (len == 0 || !data)
        return FAIL(&r, NULL, MC_CODEC_EMPTY, "the job has no bytes");
    push(&r, "job");
    TRY(rd_job(&r, out));
    pop(&r);
    return finish(&r, "Job");
}

mc_codec_err mc_peek_versioned(mc_schema_id id, const void *data, size_t len, int64_t *version,
                               mc_command_kind *kind, size_t *body_off, size_t *task_suffix_len)
{
    rd r;
    if (id != MC_SCHEMA_WHEEL_ENTRY && id != MC_SCHEMA_STORED_TASK)
        return MC_CODEC_UNKNOWN_SCHEMA;
    TRY(begin(&r, data, len, NULL, NULL, 0, id, NULL));
    TRY(rd_long(&r, "version", version));
    int64_t branch = 0;
    if (id == MC_SCHEMA_WHEEL_ENTRY) {
        /* The branch is a varint too, and a foreign writer may spend more
         * than one byte on it. */
        TRY(rd_branch(&r, "payload", 2, &branch));
    }
    if (kind)
        *kind = branch == 0 ? MC_CMD_SUBMIT : MC_CMD_CANCEL;
    *body_off = (size_t)(r.p - (const uint8_t *)data);
    if (task_suffix_len)
        *task_suffix_len = has_since(&r, task_v2_in(id)) ? 0 : sizeof mc_task_v1_suffix;
    return MC_CODEC_OK;
}

/* Skips a map<string> without allocating (see rd_string_map for blocks). */
static mc_codec_err skip_string_map(rd *r, const char *field)
{
    for (;;) {
        size_t count;
        const uint8_t *block_end;
        TRY(rd_block(r, field, 2, &count, &block_end));
        if (count == 0)
            return MC_CODEC_OK;
        for (size_t i = 0; i < count; i++) {
            TRY(skip_string(r, field));
            TRY(skip_string(r, field));
        }
        if (block_end && r->p != block_end)
            return FAIL(r, field, MC_CODEC_BAD_LENGTH, "block byte size disagrees");
    }
}

static mc_codec_err skip_bytes(rd *r, const char *field, size_t n)
{
    if (left(r) < n)
        return FAIL(r, field, MC_CODEC_TRUNCATED, "needs %zu bytes, %zu left", n, left(r));
    r->p += n;
    return MC_CODEC_OK;
}

mc_codec_err mc_peek_task(const void *task, size_t len, int64_t *due_at, int32_t *attempt)
{
    rd r = {.p = task, .end = (const uint8_t *)task + len};
    int64_t v;
    int32_t i32;
    TRY(skip_string(&r, "app_id"));
    TRY(skip_string(&r, "task_id"));
    TRY(rd_long(&r, "due_at", due_at));
    TRY(skip_string(&r, "url"));
    TRY(skip_string(&r, "method"));
    TRY(skip_string_map(&r, "headers"));
    TRY(skip_string(&r, "body"));
    TRY(rd_int(&r, "timeout_ms", &i32));
    int64_t branch;
    TRY(rd_branch(&r, "retry", 2, &branch));
    if (branch == 1) {
        TRY(rd_int(&r, "max_attempts", &i32));
        TRY(rd_long(&r, "initial_backoff_ms", &v));
        TRY(skip_bytes(&r, "multiplier", 8));
        TRY(rd_long(&r, "max_backoff_ms", &v));
    }
    return rd_int(&r, "attempt", attempt);
}

/* An endpoints-topic value: single-object framing only (only we write it). */
mc_codec_err mc_decode_endpoint(const void *data, size_t len, mc_arena *arena, mc_endpoint *out,
                                char *detail, size_t detail_len)
{
    rd r;
    int64_t branch;
    int sym;
    *out = (mc_endpoint){0};
    TRY(begin(&r, data, len, arena, detail, detail_len, MC_SCHEMA_ENDPOINT, NULL));
    TRY(rd_branch(&r, "payload", 2, &branch));
    if (branch == 0) {
        mc_endpoint_group *g = &out->group;
        out->kind = MC_ENDPOINT_GROUP;
        push(&r, "group");
        TRY(rd_string(&r, "app_id", &g->app_id));
        TRY(rd_string(&r, "name", &g->name));
        TRY(rd_string_array(&r, "members", &g->members, &g->n_members));
        TRY(rd_string_array(&r, "dns", &g->dns, &g->n_dns));
        TRY(rd_enum(&r, "strategy", MC_ENDPOINT_STRATEGIES, &sym));
        g->strategy = sym;
        TRY(rd_int(&r, "member_concurrency", &g->member_concurrency));
        TRY(rd_long(&r, "unhealthy_ms", &g->unhealthy_ms));
        TRY(rd_long(&r, "updated_at", &g->updated_at));
    } else {
        mc_endpoint_limit *l = &out->limit;
        out->kind = MC_ENDPOINT_LIMIT;
        push(&r, "limit");
        TRY(rd_enum(&r, "scope", 2, &sym));
        l->scope = sym;
        TRY(rd_string(&r, "name", &l->name));
        TRY(rd_int(&r, "max_concurrent", &l->max_concurrent));
        TRY(rd_double(&r, "max_per_second", &l->max_per_second));
        TRY(rd_long(&r, "updated_at", &l->updated_at));
    }
    pop(&r);
    return finish(&r, "Endpoint");
}
