/* The codec's plumbing: the decode arena, the encoder's output buffer,
 * CRC-64-AVRO, and the table of compiled-in schemas with their fingerprints.
 * Decoding and encoding live in codec_decode.c and codec_encode.c, the
 * Parsing Canonical Form in codec_pcf.c. */
#include "codec_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- arena ------------------------------------------------------------------ */

/* A chain of blocks; allocation bumps an offset in the newest block. Blocks
 * double in size (up to a cap) so a big record costs few mallocs, and reset
 * keeps only the first block so a steady stream of ordinary records never
 * calls malloc after warm-up. */
typedef struct arena_block {
    struct arena_block *next;
    size_t cap;
    size_t used;
    /* Followed by cap bytes; max_align_t keeps the payload 8-aligned. */
    _Alignas(max_align_t) unsigned char data[];
} arena_block;

struct mc_arena {
    arena_block *head;  /* the block being filled */
    arena_block *first; /* kept across resets */
};

enum { ARENA_FIRST_BLOCK = 4096, ARENA_MAX_BLOCK = 1 << 20 };

static arena_block *block_new(size_t cap)
{
    if (cap > SIZE_MAX - sizeof(arena_block))
        return NULL;
    arena_block *b = malloc(sizeof(arena_block) + cap);
    if (!b)
        return NULL;
    b->next = NULL;
    b->cap = cap;
    b->used = 0;
    return b;
}

/* Creates an arena with one 4 KiB block; the caller owns it (mc_arena_free). */
mc_arena *mc_arena_new(void)
{
    mc_arena *a = malloc(sizeof *a);
    if (!a)
        return NULL;
    a->first = block_new(ARENA_FIRST_BLOCK);
    if (!a->first) {
        free(a);
        return NULL;
    }
    a->head = a->first;
    return a;
}

/* Invalidates every pointer the arena handed out; keeps the first block. */
void mc_arena_reset(mc_arena *a)
{
    if (!a)
        return;
    /* Blocks are chained newest-first; everything but the first one goes. */
    arena_block *b = a->head;
    while (b != a->first) {
        arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->first->used = 0;
    a->head = a->first;
}

/* Frees the arena and everything allocated from it; NULL is a no-op. */
void mc_arena_free(mc_arena *a)
{
    if (!a)
        return;
    mc_arena_reset(a);
    free(a->first);
    free(a);
}

static void *arena_take(mc_arena *a, size_t n, size_t align)
{
    arena_block *b = a->head;
    size_t off = (b->used + (align - 1)) & ~(align - 1);
    if (off <= b->cap && n <= b->cap - off) {
        b->used = off + n;
        return b->data + off;
    }
    size_t cap = b->cap < ARENA_MAX_BLOCK ? b->cap * 2 : b->cap;
    if (cap < n)
        cap = n;
    arena_block *nb = block_new(cap);
    if (!nb)
        return NULL;
    nb->next = b;
    nb->used = n;
    a->head = nb;
    return nb->data;
}

/* n bytes, 8-aligned, owned by the arena; NULL on ENOMEM. */
void *mc_arena_alloc(mc_arena *a, size_t n)
{
    return arena_take(a, n ? n : 1, 8);
}

/* n bytes, unaligned, owned by the arena; NULL on ENOMEM. */
void *mc_arena_alloc_unaligned(mc_arena *a, size_t n)
{
    return arena_take(a, n ? n : 1, 1);
}

/* A copy of s owned by the arena; NULL on ENOMEM. */
char *mc_arena_strdup(mc_arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = arena_take(a, n, 1);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* Sum of the block capacities: what the arena holds from malloc right now. */
size_t mc_arena_footprint(const mc_arena *a)
{
    size_t n = 0;
    for (const arena_block *b = a->head; b; b = b->next)
        n += b->cap;
    return n;
}

/* ---- output buffer -------------------------------------------------------------- */

/* Grows b (doubling) so n more bytes fit; the caller keeps owning b. */
int mc_buf_reserve(mc_buf *b, size_t n)
{
    if (n <= b->cap - b->len)
        return 0;
    if (n > SIZE_MAX / 2 - b->len)
        return -1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < n)
        cap *= 2;
    uint8_t *d = realloc(b->data, cap);
    if (!d)
        return -1;
    b->data = d;
    b->cap = cap;
    return 0;
}

/* Empties b but keeps its memory for the next record. */
void mc_buf_reset(mc_buf *b)
{
    b->len = 0;
}

/* Releases b's memory and leaves it empty and reusable. */
void mc_buf_free(mc_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* ---- CRC-64-AVRO -------------------------------------------------------------------- */

/* The Rabin fingerprint table from the Avro spec ("Schema Fingerprints"),
 * precomputed so the table is const rather than lazily-initialised state:
 * FP_TABLE[i] = i shifted right 8 times, XOR-ing EMPTY on every set low bit. */
static const uint64_t crc64_avro_table[256] = {
    0x0000000000000000ULL, 0x2cf1cba6b75351faULL, 0x59e3974d6ea6a3f4ULL, 0x75125cebd9f5f20eULL,
    0xb3c72e9add4d47e8ULL, 0x9f36e53c6a1e1612ULL, 0xea24b9d7b3ebe41cULL, 0xc6d5727104b8b5e6ULL,
    0xe5341f40f335c0fbULL, 0xc9c5d4e644669101ULL, 0xbcd7880d9d93630fULL, 0x902643ab2ac032f5ULL,
    0x56f331da2e788713ULL, 0x7a02fa7c992bd6e9ULL, 0x0f10a69740de24e7ULL, 0x23e16d31f78d751dULL,
    0x48d27cf4afc4ceddULL, 0x6423b75218979f27ULL, 0x1131ebb9c1626d29ULL, 0x3dc0201f76313cd3ULL,
    0xfb15526e72898935ULL, 0xd7e499c8c5dad8cfULL, 0xa2f6c5231c2f2ac1ULL, 0x8e070e85ab7c7b3bULL,
    0xade663b45cf10e26ULL, 0x8117a812eba25fdcULL, 0xf405f4f93257add2ULL, 0xd8f43f5f8504fc28ULL,
    0x1e214d2e81bc49ceULL, 0x32d0868836ef1834ULL, 0x47c2da63ef1aea3aULL, 0x6b3311c55849bbc0ULL,
    0x91a4f9e95f899dbaULL, 0xbd55324fe8dacc40ULL, 0xc8476ea4312f3e4eULL, 0xe4b6a502867c6fb4ULL,
    0x2263d77382c4da52ULL, 0x0e921cd535978ba8ULL, 0x7b80403eec6279a6ULL, 0x57718b985b31285cULL,
    0x7490e6a9acbc5d41ULL, 0x58612d0f1bef0cbbULL, 0x2d7371e4c21afeb5ULL, 0x0182ba427549af4fULL,
    0xc757c83371f11aa9ULL, 0xeba60395c6a24b53ULL, 0x9eb45f7e1f57b95dULL, 0xb24594d8a804e8a7ULL,
    0xd976851df04d5367ULL, 0xf5874ebb471e029dULL, 0x809512509eebf093ULL, 0xac64d9f629b8a169ULL,
    0x6ab1ab872d00148fULL, 0x464060219a534575ULL, 0x33523cca43a6b77bULL, 0x1fa3f76cf4f5e681ULL,
    0x3c429a5d0378939cULL, 0x10b351fbb42bc266ULL, 0x65a10d106dde3068ULL, 0x4950c6b6da8d6192ULL,
    0x8f85b4c7de35d474ULL, 0xa3747f616966858eULL, 0xd666238ab0937780ULL, 0xfa97e82c07c0267aULL,
    0xa1f3b1a7f6bc745fULL, 0x8d027a0141ef25a5ULL, 0xf81026ea981ad7abULL, 0xd4e1ed4c2f498651ULL,
    0x12349f3d2bf133b7ULL, 0x3ec5549b9ca2624dULL, 0x4bd7087045579043ULL, 0x6726c3d6f204c1b9ULL,
    0x44c7aee70589b4a4ULL, 0x68366541b2dae55eULL, 0x1d2439aa6b2f1750ULL, 0x31d5f20cdc7c46aaULL,
    0xf700807dd8c4f34cULL, 0xdbf14bdb6f97a2b6ULL, 0xaee31730b66250b8ULL, 0x8212dc9601310142ULL,
    0xe921cd535978ba82ULL, 0xc5d006f5ee2beb78ULL, 0xb0c25a1e37de1976ULL, 0x9c3391b8808d488cULL,
    0x5ae6e3c98435fd6aULL, 0x7617286f3366ac90ULL, 0x03057484ea935e9eULL, 0x2ff4bf225dc00f64ULL,
    0x0c15d213aa4d7a79ULL, 0x20e419b51d1e2b83ULL, 0x55f6455ec4ebd98dULL, 0x79078ef873b88877ULL,
    0xbfd2fc8977003d91ULL, 0x9323372fc0536c6bULL, 0xe6316bc419a69e65ULL, 0xcac0a062aef5cf9fULL,
    0x3057484ea935e9e5ULL, 0x1ca683e81e66b81fULL, 0x69b4df03c7934a11ULL, 0x454514a570c01bebULL,
    0x839066d47478ae0dULL, 0xaf61ad72c32bfff7ULL, 0xda73f1991ade0df9ULL, 0xf6823a3fad8d5c03ULL,
    0xd563570e5a00291eULL, 0xf9929ca8ed5378e4ULL, 0x8c80c04334a68aeaULL, 0xa0710be583f5db10ULL,
    0x66a47994874d6ef6ULL, 0x4a55b232301e3f0cULL, 0x3f47eed9e9ebcd02ULL, 0x13b6257f5eb89cf8ULL,
    0x788534ba06f12738ULL, 0x5474ff1cb1a276c2ULL, 0x2166a3f7685784ccULL, 0x0d976851df04d536ULL,
    0xcb421a20dbbc60d0ULL, 0xe7b3d1866cef312aULL, 0x92a18d6db51ac324ULL, 0xbe5046cb024992deULL,
    0x9db12bfaf5c4e7c3ULL, 0xb140e05c4297b639ULL, 0xc452bcb79b624437ULL, 0xe8a377112c3115cdULL,
    0x2e7605602889a02bULL, 0x0287cec69fdaf1d1ULL, 0x7795922d462f03dfULL, 0x5b64598bf17c5225ULL,
    0xc15d213aa4d7a795ULL, 0xedacea9c1384f66fULL, 0x98beb677ca710461ULL, 0xb44f7dd17d22559bULL,
    0x729a0fa0799ae07dULL, 0x5e6bc406cec9b187ULL, 0x2b7998ed173c4389ULL, 0x0788534ba06f1273ULL,
    0x24693e7a57e2676eULL, 0x0898f5dce0b13694ULL, 0x7d8aa9373944c49aULL, 0x517b62918e179560ULL,
    0x97ae10e08aaf2086ULL, 0xbb5fdb463dfc717cULL, 0xce4d87ade4098372ULL, 0xe2bc4c0b535ad288ULL,
    0x898f5dce0b136948ULL, 0xa57e9668bc4038b2ULL, 0xd06cca8365b5cabcULL, 0xfc9d0125d2e69b46ULL,
    0x3a487354d65e2ea0ULL, 0x16b9b8f2610d7f5aULL, 0x63abe419b8f88d54ULL, 0x4f5a2fbf0fabdcaeULL,
    0x6cbb428ef826a9b3ULL, 0x404a89284f75f849ULL, 0x3558d5c396800a47ULL, 0x19a91e6521d35bbdULL,
    0xdf7c6c14256bee5bULL, 0xf38da7b29238bfa1ULL, 0x869ffb594bcd4dafULL, 0xaa6e30fffc9e1c55ULL,
    0x50f9d8d3fb5e3a2fULL, 0x7c0813754c0d6bd5ULL, 0x091a4f9e95f899dbULL, 0x25eb843822abc821ULL,
    0xe33ef64926137dc7ULL, 0xcfcf3def91402c3dULL, 0xbadd610448b5de33ULL, 0x962caaa2ffe68fc9ULL,
    0xb5cdc793086bfad4ULL, 0x993c0c35bf38ab2eULL, 0xec2e50de66cd5920ULL, 0xc0df9b78d19e08daULL,
    0x060ae909d526bd3cULL, 0x2afb22af6275ecc6ULL, 0x5fe97e44bb801ec8ULL, 0x7318b5e20cd34f32ULL,
    0x182ba427549af4f2ULL, 0x34da6f81e3c9a508ULL, 0x41c8336a3a3c5706ULL, 0x6d39f8cc8d6f06fcULL,
    0xabec8abd89d7b31aULL, 0x871d411b3e84e2e0ULL, 0xf20f1df0e77110eeULL, 0xdefed65650224114ULL,
    0xfd1fbb67a7af3409ULL, 0xd1ee70c110fc65f3ULL, 0xa4fc2c2ac90997fdULL, 0x880de78c7e5ac607ULL,
    0x4ed895fd7ae273e1ULL, 0x62295e5bcdb1221bULL, 0x173b02b01444d015ULL, 0x3bcac916a31781efULL,
    0x60ae909d526bd3caULL, 0x4c5f5b3be5388230ULL, 0x394d07d03ccd703eULL, 0x15bccc768b9e21c4ULL,
    0xd369be078f269422ULL, 0xff9875a13875c5d8ULL, 0x8a8a294ae18037d6ULL, 0xa67be2ec56d3662cULL,
    0x859a8fdda15e1331ULL, 0xa96b447b160d42cbULL, 0xdc791890cff8b0c5ULL, 0xf088d33678abe13fULL,
    0x365da1477c1354d9ULL, 0x1aac6ae1cb400523ULL, 0x6fbe360a12b5f72dULL, 0x434ffdaca5e6a6d7ULL,
    0x287cec69fdaf1d17ULL, 0x048d27cf4afc4cedULL, 0x719f7b249309bee3ULL, 0x5d6eb082245aef19ULL,
    0x9bbbc2f320e25affULL, 0xb74a095597b10b05ULL, 0xc25855be4e44f90bULL, 0xeea99e18f917a8f1ULL,
    0xcd48f3290e9addecULL, 0xe1b9388fb9c98c16ULL, 0x94ab6464603c7e18ULL, 0xb85aafc2d76f2fe2ULL,
    0x7e8fddb3d3d79a04ULL, 0x527e16156484cbfeULL, 0x276c4afebd7139f0ULL, 0x0b9d81580a22680aULL,
    0xf10a69740de24e70ULL, 0xddfba2d2bab11f8aULL, 0xa8e9fe396344ed84ULL, 0x8418359fd417bc7eULL,
    0x42cd47eed0af0998ULL, 0x6e3c8c4867fc5862ULL, 0x1b2ed0a3be09aa6cULL, 0x37df1b05095afb96ULL,
    0x143e7634fed78e8bULL, 0x38cfbd924984df71ULL, 0x4ddde17990712d7fULL, 0x612c2adf27227c85ULL,
    0xa7f958ae239ac963ULL, 0x8b08930894c99899ULL, 0xfe1acfe34d3c6a97ULL, 0xd2eb0445fa6f3b6dULL,
    0xb9d81580a22680adULL, 0x9529de261575d157ULL, 0xe03b82cdcc802359ULL, 0xccca496b7bd372a3ULL,
    0x0a1f3b1a7f6bc745ULL, 0x26eef0bcc83896bfULL, 0x53fcac5711cd64b1ULL, 0x7f0d67f1a69e354bULL,
    0x5cec0ac051134056ULL, 0x701dc166e64011acULL, 0x050f9d8d3fb5e3a2ULL, 0x29fe562b88e6b258ULL,
    0xef2b245a8c5e07beULL, 0xc3daeffc3b0d5644ULL, 0xb6c8b317e2f8a44aULL, 0x9a3978b155abf5b0ULL,
};

#define CRC64_AVRO_EMPTY 0xc15d213aa4d7a795ULL

/* CRC-64-AVRO of len bytes (no state: the table is const). */
uint64_t mc_crc64_avro(const void *data, size_t len)
{
    const uint8_t *p = data;
    uint64_t fp = CRC64_AVRO_EMPTY;
    for (size_t i = 0; i < len; i++)
        fp = (fp >> 8) ^ crc64_avro_table[(fp ^ p[i]) & 0xff];
    return fp;
}

/* ---- compiled-in schemas -------------------------------------------------------- */

/* Generated by schemas/embed.cmake, one entry per schemas/<name>.avsc file. */
extern const struct mc_embedded_schema {
    const char *file;
    const char *json;
} mc_embedded_schemas[];

static const struct {
    const char *file;
    const char *name;
} schema_names[MC_SCHEMA_COUNT] = {
    [MC_SCHEMA_COMMAND] = {"Command", "mooncake.Command"},
    [MC_SCHEMA_WHEEL_ENTRY] = {"WheelEntry", "mooncake.WheelEntry"},
    [MC_SCHEMA_STORED_TASK] = {"StoredTask", "mooncake.StoredTask"},
    [MC_SCHEMA_ATTEMPT] = {"Attempt", "mooncake.Attempt"},
    [MC_SCHEMA_RESULT] = {"Result", "mooncake.Result"},
    [MC_SCHEMA_DEAD_LETTER] = {"DeadLetter", "mooncake.DeadLetter"},
    [MC_SCHEMA_JOB_COMMAND] = {"JobCommand", "mooncake.JobCommand"},
    [MC_SCHEMA_JOB_STATE] = {"JobState", "mooncake.JobState"},
    [MC_SCHEMA_CHAIN_LINK] = {"ChainLink", "mooncake.ChainLink"},
    [MC_SCHEMA_ENDPOINT] = {"Endpoint", "mooncake.Endpoint"},
};

/* The schemas that changed: their current version number, and where each
 * earlier version is kept. A record of an earlier version is still read (it
 * may sit in a topic, or come from an instance not upgraded yet). */
static const int current_versions[MC_SCHEMA_COUNT] = {
    [MC_SCHEMA_COMMAND] = 2,     [MC_SCHEMA_WHEEL_ENTRY] = 2, [MC_SCHEMA_STORED_TASK] = 2,
    [MC_SCHEMA_ATTEMPT] = 4,     [MC_SCHEMA_RESULT] = 4,      [MC_SCHEMA_DEAD_LETTER] = 2,
    [MC_SCHEMA_JOB_COMMAND] = 4, [MC_SCHEMA_JOB_STATE] = 2,
};
static const struct {
    mc_schema_id id;
    int version;
    const char *file;
} earlier_versions[] = {
    {MC_SCHEMA_ATTEMPT, 1, "Attempt_v1"},        {MC_SCHEMA_ATTEMPT, 2, "Attempt_v2"},
    {MC_SCHEMA_RESULT, 1, "Result_v1"},          {MC_SCHEMA_RESULT, 2, "Result_v2"},
    {MC_SCHEMA_COMMAND, 1, "Command_v1"},        {MC_SCHEMA_WHEEL_ENTRY, 1, "WheelEntry_v1"},
    {MC_SCHEMA_STORED_TASK, 1, "StoredTask_v1"}, {MC_SCHEMA_DEAD_LETTER, 1, "DeadLetter_v1"},
    {MC_SCHEMA_JOB_COMMAND, 1, "JobCommand_v1"}, {MC_SCHEMA_JOB_STATE, 1, "JobState_v1"},
    {MC_SCHEMA_JOB_COMMAND, 2, "JobCommand_v2"}, {MC_SCHEMA_ATTEMPT, 3, "Attempt_v3"},
    {MC_SCHEMA_RESULT, 3, "Result_v3"},          {MC_SCHEMA_JOB_COMMAND, 3, "JobCommand_v3"},
};

const uint8_t mc_task_v1_suffix[3] = {0, 0, 0};
#define N_EARLIER (sizeof earlier_versions / sizeof earlier_versions[0])

static const char *embedded(const char *file)
{
    for (const struct mc_embedded_schema *e = mc_embedded_schemas; e->file; e++)
        if (strcmp(e->file, file) == 0)
            return e->json;
    return NULL;
}

/* The embedded .avsc text of a schema (static storage), NULL for a bad id. */
const char *mc_schema_json(mc_schema_id id)
{
    return (unsigned)id < MC_SCHEMA_COUNT ? embedded(schema_names[id].file) : NULL;
}

int mc_schema_current_version(mc_schema_id id)
{
    return (unsigned)id < MC_SCHEMA_COUNT && current_versions[id] ? current_versions[id] : 1;
}

const char *mc_schema_version_json(mc_schema_id id, int version)
{
    if (version == mc_schema_current_version(id))
        return mc_schema_json(id);
    for (size_t i = 0; i < N_EARLIER; i++)
        if (earlier_versions[i].id == id && earlier_versions[i].version == version)
            return embedded(earlier_versions[i].file);
    return NULL;
}

/* "mooncake.<Record>" (static storage), NULL for a bad id. */
const char *mc_schema_name(mc_schema_id id)
{
    return (unsigned)id < MC_SCHEMA_COUNT ? schema_names[id].name : NULL;
}

/* The fingerprints need the canonical form, i.e. jansson and a few mallocs,
 * which is too slow to redo per record and cannot run at compile time. They
 * are computed once, under pthread_once, into this table; after that it is
 * only read, so it behaves as a const table and any number of threads can
 * decode concurrently without locks. A schema that fails to canonicalise (a
 * broken .avsc, caught by the unit tests) gets fingerprint 0, which then
 * simply matches no record. */
static pthread_once_t fingerprints_once = PTHREAD_ONCE_INIT;
static uint64_t fingerprints[MC_SCHEMA_COUNT];
static uint64_t earlier_fingerprints[N_EARLIER];

static uint64_t fingerprint_of(const char *json)
{
    char err[256];
    char *pcf = json ? mc_schema_canonical_form(json, err, sizeof err) : NULL;
    uint64_t fp = pcf ? mc_crc64_avro(pcf, strlen(pcf)) : 0;
    free(pcf);
    return fp;
}

static void fingerprints_init(void)
{
    for (int i = 0; i < MC_SCHEMA_COUNT; i++)
        fingerprints[i] = fingerprint_of(mc_schema_json((mc_schema_id)i));
    for (size_t i = 0; i < N_EARLIER; i++)
        earlier_fingerprints[i] = fingerprint_of(embedded(earlier_versions[i].file));
}

/* The schema's fingerprint, computed on first use by any thread; 0 for a bad id. */
uint64_t mc_schema_fingerprint(mc_schema_id id)
{
    if ((unsigned)id >= MC_SCHEMA_COUNT)
        return 0;
    pthread_once(&fingerprints_once, fingerprints_init);
    return fingerprints[id];
}

uint64_t mc_schema_version_fingerprint(mc_schema_id id, int version)
{
    if (version == mc_schema_current_version(id))
        return mc_schema_fingerprint(id);
    pthread_once(&fingerprints_once, fingerprints_init);
    for (size_t i = 0; i < N_EARLIER; i++)
        if (earlier_versions[i].id == id && earlier_versions[i].version == version)
            return earlier_fingerprints[i];
    return 0;
}

/* ---- misc ----------------------------------------------------------------------- */

/* A static, human-readable name for a codec error. */
const char *mc_outcome_name(int32_t outcome)
{
    switch (outcome) {
    case MC_OUTCOME_SUCCEEDED:
        return "SUCCEEDED";
    case MC_OUTCOME_FAILED_WILL_RETRY:
        return "FAILED_WILL_RETRY";
    case MC_OUTCOME_FAILED_PERMANENTLY:
        return "FAILED_PERMANENTLY";
    case MC_OUTCOME_EXHAUSTED:
        return "EXHAUSTED";
    case MC_OUTCOME_CANCELLED:
        return "CANCELLED";
    case MC_OUTCOME_DROPPED:
        return "DROPPED";
    default:
        return "UNKNOWN";
    }
}

const char *mc_codec_strerror(mc_codec_err e)
{
    switch (e) {
    case MC_CODEC_OK:
        return "ok";
    case MC_CODEC_EMPTY:
        return "empty value";
    case MC_CODEC_BAD_MAGIC:
        return "unknown framing (neither Avro single-object C3 01 nor Confluent 00)";
    case MC_CODEC_TRUNCATED:
        return "record truncated";
    case MC_CODEC_UNKNOWN_SCHEMA:
        return "unknown schema fingerprint or id";
    case MC_CODEC_BAD_LENGTH:
        return "bad length or count";
    case MC_CODEC_BAD_UNION:
        return "union branch out of range";
    case MC_CODEC_BAD_ENUM:
        return "enum symbol or boolean out of range";
    case MC_CODEC_BAD_VARINT:
        return "malformed or overflowing varint";
    case MC_CODEC_TRAILING:
        return "trailing bytes after the record";
    case MC_CODEC_BAD_UTF8:
        return "string is not valid UTF-8 or contains NUL";
    case MC_CODEC_NOMEM:
        return "out of memory";
    }
    return "unknown codec error";
}

/* "app_id/task_id" into buf (truncated and NUL-terminated like snprintf);
 * returns the full length. NULL ids count as empty. */
size_t mc_task_key(const char *app_id, const char *task_id, char *buf, size_t buflen)
{
    size_t la = app_id ? strlen(app_id) : 0, lt = task_id ? strlen(task_id) : 0;
    size_t need = la + 1 + lt;
    if (buflen > 0) {
        /* Truncate like snprintf: copy what fits, always NUL-terminate. */
        size_t room = buflen - 1, n;
        n = la < room ? la : room;
        if (n)
            memcpy(buf, app_id, n);
        size_t pos = n;
        if (pos < room)
            buf[pos++] = '/';
        n = lt < room - pos ? lt : room - pos;
        if (n)
            memcpy(buf + pos, task_id, n);
        buf[pos + n] = '\0';
    }
    return need;
}
