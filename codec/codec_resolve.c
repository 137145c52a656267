/* Avro schema resolution (spec, "Schema Resolution") for records written with
 * another version of one of our schemas: an older Command from before a field
 * was added, or a newer one with a field this build does not know. The
 * record is transcoded from the writer's binary into our (the reader's)
 * binary: fields matched by name or alias, writer-only fields skipped,
 * reader-only fields filled from their defaults, numbers promoted, enums and
 * unions mapped by name. The fast decoders then read the result as usual,
 * so they never learn about versions. avro-c's own resolver does not fill
 * reader defaults, which is the one thing a schema evolution needs most.
 * Compatibility is checked once, when the writer schema is loaded; the
 * bytes are hostile and are bounds-checked like every decode. */
#include "codec_internal.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum kind {
    K_NULL,
    K_BOOLEAN,
    K_INT,
    K_LONG,
    K_FLOAT,
    K_DOUBLE,
    K_BYTES,
    K_STRING,
    K_RECORD,
    K_ENUM,
    K_ARRAY,
    K_MAP,
    K_FIXED,
    K_UNION,
} kind;

static const char *const kind_names[] = {"null",   "boolean", "int",    "long",   "float",
                                         "double", "bytes",   "string", "record", "enum",
                                         "array",  "map",     "fixed",  "union"};

typedef struct node node;

typedef struct field {
    const char *name;
    json_t *aliases; /* array of strings, or NULL */
    node *type;
    json_t *def; /* default value, or NULL when the field has none */
} field;

struct node {
    kind k;
    const char *fullname; /* named types */
    const char *name;     /* unqualified, for matching across versions */
    json_t *aliases;
    field *fields;
    size_t n_fields;
    json_t *symbols; /* enum */
    const char *enum_default;
    node *items; /* array items, map values */
    node **branches;
    size_t n_branches;
    size_t fixed_size;
};

/* A parsed schema. Nodes are kept in one list so freeing is trivial; the
 * JSON document is kept because names and defaults point into it. */
typedef struct schema {
    json_t *doc;
    node **nodes;
    size_t n_nodes, cap_nodes;
    node *root;
} schema;

struct mc_writer_schema {
    schema writer, reader;
    mc_schema_id reader_id;
    uint64_t fingerprint;
};

/* ---- parsing ------------------------------------------------------------------ */

typedef struct parse {
    schema *s;
    char *err;
    size_t errlen;
    int depth;
} parse;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static node *
parse_fail(parse *p, const char *fmt, ...)
{
    if (p->err && p->errlen && !p->err[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err, p->errlen, fmt, ap);
        va_end(ap);
    }
    return NULL;
}

static node *new_node(parse *p, kind k)
{
    schema *s = p->s;
    if (s->n_nodes == s->cap_nodes) {
        size_t cap = s->cap_nodes ? 2 * s->cap_nodes : 16;
        node **n = realloc(s->nodes, cap * sizeof *n);
        if (!n)
            return parse_fail(p, "out of memory");
        s->nodes = n;
        s->cap_nodes = cap;
    }
    node *n = calloc(1, sizeof *n);
    if (!n)
        return parse_fail(p, "out of memory");
    n->k = k;
    s->nodes[s->n_nodes++] = n;
    return n;
}

static node *find_named(const schema *s, const char *fullname)
{
    for (size_t i = 0; i < s->n_nodes; i++)
        if (s->nodes[i]->fullname && strcmp(s->nodes[i]->fullname, fullname) == 0)
            return s->nodes[i];
    return NULL;
}

static int kind_of(const char *t)
{
    for (int k = K_NULL; k <= K_STRING; k++)
        if (strcmp(t, kind_names[k]) == 0)
            return k;
    return -1;
}

static node *parse_type(parse *p, json_t *j, const char *ns);

/* A named type's full name, and the namespace its children inherit. Names
 * in the document are referenced, not copied: the document outlives us. */
static node *parse_named(parse *p, json_t *j, kind k, const char *ns, char *nsbuf, size_t nslen)
{
    const char *name = json_string_value(json_object_get(j, "name"));
    if (!name || !name[0])
        return parse_fail(p, "a %s has no name", kind_names[k]);
    const char *own_ns = json_string_value(json_object_get(j, "namespace"));
    const char *dot = strrchr(name, '.');
    char full[512];
    if (dot) {
        snprintf(full, sizeof full, "%s", name);
        snprintf(nsbuf, nslen, "%.*s", (int)(dot - name), name);
    } else {
        const char *use = own_ns ? own_ns : ns;
        snprintf(full, sizeof full, "%s%s%s", use && use[0] ? use : "", use && use[0] ? "." : "",
                 name);
        snprintf(nsbuf, nslen, "%s", use ? use : "");
    }
    if (find_named(p->s, full))
        return parse_fail(p, "type %s is defined twice", full);
    node *n = new_node(p, k);
    if (!n)
        return NULL;
    /* Keep the full name in the document so it lives as long as the schema. */
    json_t *fj = json_string(full);
    if (!fj || json_object_set_new(j, "mooncake:fullname", fj) != 0)
        return parse_fail(p, "out of memory");
    n->fullname = json_string_value(json_object_get(j, "mooncake:fullname"));
    n->name = dot ? dot + 1 : name;
    n->aliases = json_object_get(j, "aliases");
    return n;
}

static node *parse_record(parse *p, json_t *j, const char *ns)
{
    char inner[256];
    node *n = parse_named(p, j, K_RECORD, ns, inner, sizeof inner);
    if (!n)
        return NULL;
    json_t *fields = json_object_get(j, "fields");
    if (!json_is_array(fields))
        return parse_fail(p, "record %s has no fields array", n->fullname);
    n->n_fields = json_array_size(fields);
    n->fields = calloc(n->n_fields ? n->n_fields : 1, sizeof *n->fields);
    if (!n->fields)
        return parse_fail(p, "out of memory");
    for (size_t i = 0; i < n->n_fields; i++) {
        json_t *f = json_array_get(fields, i);
        field *fd = &n->fields[i];
        fd->name = json_string_value(json_object_get(f, "name"));
        if (!fd->name)
            return parse_fail(p, "record %s: field %zu has no name", n->fullname, i + 1);
        fd->aliases = json_object_get(f, "aliases");
        fd->def = json_object_get(f, "default");
        if (!(fd->type = parse_type(p, json_object_get(f, "type"), inner)))
            return NULL;
    }
    return n;
}

static node *parse_type(parse *p, json_t *j, const char *ns)
{
    if (++p->depth > 64)
        return parse_fail(p, "schema nested deeper than 64 levels");
    node *n = NULL;
    if (json_is_string(j)) {
        const char *t = json_string_value(j);
        int k = kind_of(t);
        if (k >= 0) {
            n = new_node(p, (kind)k);
        } else {
            char full[512];
            snprintf(full, sizeof full, "%s%s%s", ns && ns[0] && !strchr(t, '.') ? ns : "",
                     ns && ns[0] && !strchr(t, '.') ? "." : "", t);
            if (!(n = find_named(p->s, full)) && !(n = find_named(p->s, t)))
                n = parse_fail(p, "unknown type '%s'", t);
        }
    } else if (json_is_array(j)) {
        if (!(n = new_node(p, K_UNION)))
            goto out;
        n->n_branches = json_array_size(j);
        n->branches = calloc(n->n_branches ? n->n_branches : 1, sizeof *n->branches);
        if (!n->branches) {
            n = parse_fail(p, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < n->n_branches; i++)
            if (!(n->branches[i] = parse_type(p, json_array_get(j, i), ns))) {
                n = NULL;
                goto out;
            }
    } else if (json_is_object(j)) {
        const char *t = json_string_value(json_object_get(j, "type"));
        if (!t) {
            n = parse_fail(p, "a type object has no \"type\"");
        } else if (strcmp(t, "record") == 0 || strcmp(t, "error") == 0) {
            n = parse_record(p, j, ns);
        } else if (strcmp(t, "enum") == 0) {
            char inner[256];
            if ((n = parse_named(p, j, K_ENUM, ns, inner, sizeof inner))) {
                n->symbols = json_object_get(j, "symbols");
                n->enum_default = json_string_value(json_object_get(j, "default"));
                if (!json_is_array(n->symbols))
                    n = parse_fail(p, "enum %s has no symbols", n->fullname);
            }
        } else if (strcmp(t, "fixed") == 0) {
            char inner[256];
            json_t *size = json_object_get(j, "size");
            if ((n = parse_named(p, j, K_FIXED, ns, inner, sizeof inner))) {
                if (!json_is_integer(size) || json_integer_value(size) < 0)
                    n = parse_fail(p, "fixed %s has no size", n->fullname);
                else
                    n->fixed_size = (size_t)json_integer_value(size);
            }
        } else if (strcmp(t, "array") == 0 || strcmp(t, "map") == 0) {
            bool arr = t[0] == 'a';
            if ((n = new_node(p, arr ? K_ARRAY : K_MAP)) &&
                !(n->items = parse_type(p, json_object_get(j, arr ? "items" : "values"), ns)))
                n = NULL;
        } else {
            n = parse_type(p, json_object_get(j, "type"), ns); /* {"type": "long", ...} */
        }
    } else {
        n = parse_fail(p, "a type is neither a name, an object nor a union");
    }
out:
    p->depth--;
    return n;
}

static void schema_free(schema *s)
{
    for (size_t i = 0; i < s->n_nodes; i++) {
        free(s->nodes[i]->fields);
        free(s->nodes[i]->branches);
        free(s->nodes[i]);
    }
    free(s->nodes);
    json_decref(s->doc);
    memset(s, 0, sizeof *s);
}

static int schema_parse(schema *s, const char *text, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    json_error_t je;
    s->doc = json_loads(text, 0, &je);
    if (!s->doc) {
        snprintf(err, errlen, "not JSON: %s (line %d)", je.text, je.line);
        return -1;
    }
    parse p = {.s = s, .err = err, .errlen = errlen};
    if (err && errlen)
        err[0] = '\0';
    s->root = parse_type(&p, s->doc, "");
    if (!s->root) {
        schema_free(s);
        return -1;
    }
    return 0;
}

/* ---- compatibility (checked once, at load) ------------------------------------- */

static bool has_alias(json_t *aliases, const char *name)
{
    for (size_t i = 0; i < json_array_size(aliases); i++) {
        const char *a = json_string_value(json_array_get(aliases, i));
        const char *dot = a ? strrchr(a, '.') : NULL;
        if (a && (strcmp(a, name) == 0 || (dot && strcmp(dot + 1, name) == 0)))
            return true;
    }
    return false;
}

static bool names_match(const node *w, const node *r)
{
    return strcmp(w->name, r->name) == 0 || has_alias(r->aliases, w->name) ||
           has_alias(r->aliases, w->fullname);
}

/* Whether a writer value of type w can be read as r without looking inside
 * (the first test of the spec's rules; records, arrays and maps are then
 * resolved field by field). exact: no promotion allowed. */
static bool shallow_match(const node *w, const node *r, bool exact)
{
    if (w->k == r->k) {
        if (w->k == K_RECORD || w->k == K_ENUM)
            return names_match(w, r);
        if (w->k == K_FIXED)
            return names_match(w, r) && w->fixed_size == r->fixed_size;
        return true;
    }
    if (exact)
        return false;
    switch (w->k) {
    case K_INT:
        return r->k == K_LONG || r->k == K_FLOAT || r->k == K_DOUBLE;
    case K_LONG:
        return r->k == K_FLOAT || r->k == K_DOUBLE;
    case K_FLOAT:
        return r->k == K_DOUBLE;
    case K_STRING:
        return r->k == K_BYTES;
    case K_BYTES:
        return r->k == K_STRING;
    default:
        return false;
    }
}

/* The reader union branch a writer type goes to: an exact match first, as
 * the Java implementation does, then one reachable by promotion. */
static int union_branch(const node *w, const node *ru)
{
    for (size_t i = 0; i < ru->n_branches; i++)
        if (shallow_match(w, ru->branches[i], true))
            return (int)i;
    for (size_t i = 0; i < ru->n_branches; i++)
        if (shallow_match(w, ru->branches[i], false))
            return (int)i;
    return -1;
}

static int reader_field(const node *r, const field *wf)
{
    for (size_t i = 0; i < r->n_fields; i++)
        if (strcmp(r->fields[i].name, wf->name) == 0 || has_alias(r->fields[i].aliases, wf->name))
            return (int)i;
    return -1;
}

static int encode_default(const node *r, json_t *v, mc_buf *out, char *err, size_t errlen);

/* Checks that every writer value of type w can be read as r; err names the
 * first place where it cannot. Pairs already being checked count as
 * compatible, which is what makes recursive types terminate. */
typedef struct pair {
    const node *w, *r;
} pair;

static int check(const node *w, const node *r, pair *seen, size_t n_seen, const char *where,
                 char *err, size_t errlen)
{
    for (size_t i = 0; i < n_seen; i++)
        if (seen[i].w == w && seen[i].r == r)
            return 0;
    if (n_seen >= 64) {
        snprintf(err, errlen, "%s: types nested deeper than 64 levels", where);
        return -1;
    }
    seen[n_seen++] = (pair){w, r};
    if (w->k == K_UNION) {
        /* Every writer branch must be readable (a branch the writer never
         * uses would still fail later, on the record that uses it). */
        for (size_t i = 0; i < w->n_branches; i++)
            if (check(w->branches[i], r, seen, n_seen, where, err, errlen) != 0)
                return -1;
        return 0;
    }
    if (r->k == K_UNION) {
        int b = union_branch(w, r);
        if (b < 0) {
            snprintf(err, errlen, "%s: the writer's %s is in no branch of the reader's union",
                     where, kind_names[w->k]);
            return -1;
        }
        return check(w, r->branches[b], seen, n_seen, where, err, errlen);
    }
    if (!shallow_match(w, r, false)) {
        snprintf(err, errlen, "%s: the writer's %s%s%s cannot be read as %s%s%s", where,
                 kind_names[w->k], w->name ? " " : "", w->name ? w->name : "", kind_names[r->k],
                 r->name ? " " : "", r->name ? r->name : "");
        return -1;
    }
    char sub[300];
    switch (r->k) {
    case K_ARRAY:
    case K_MAP:
        snprintf(sub, sizeof sub, "%s[]", where);
        return check(w->items, r->items, seen, n_seen, sub, err, errlen);
    case K_ENUM:
        for (size_t i = 0; i < json_array_size(w->symbols); i++) {
            const char *sym = json_string_value(json_array_get(w->symbols, i));
            bool found = false;
            for (size_t j = 0; j < json_array_size(r->symbols) && sym && !found; j++)
                found = strcmp(sym, json_string_value(json_array_get(r->symbols, j))) == 0;
            if (!found && !r->enum_default) {
                snprintf(err, errlen, "%s: symbol %s of enum %s is unknown to the reader", where,
                         sym ? sym : "?", r->name);
                return -1;
            }
        }
        return 0;
    case K_RECORD:
        for (size_t i = 0; i < w->n_fields; i++) {
            int ri = reader_field(r, &w->fields[i]);
            if (ri < 0)
                continue; /* skipped when read */
            snprintf(sub, sizeof sub, "%s%s%s", where, where[0] ? "." : "", r->fields[ri].name);
            if (check(w->fields[i].type, r->fields[ri].type, seen, n_seen, sub, err, errlen) != 0)
                return -1;
        }
        for (size_t i = 0; i < r->n_fields; i++) {
            bool written = false;
            for (size_t k = 0; k < w->n_fields && !written; k++)
                written = reader_field(r, &w->fields[k]) == (int)i;
            if (written)
                continue;
            snprintf(sub, sizeof sub, "%s%s%s", where, where[0] ? "." : "", r->fields[i].name);
            if (!r->fields[i].def) {
                snprintf(err, errlen,
                         "%s: the reader's field has no default and the writer does not write it",
                         sub);
                return -1;
            }
            mc_buf tmp = {0};
            char why[200];
            int rc = encode_default(r->fields[i].type, r->fields[i].def, &tmp, why, sizeof why);
            mc_buf_free(&tmp);
            if (rc != 0) {
                snprintf(err, errlen, "%.250s: bad default: %.200s", sub, why);
                return -1;
            }
        }
        return 0;
    default:
        return 0;
    }
}

/* ---- writing ------------------------------------------------------------------- */

static int put(mc_buf *b, const void *p, size_t n)
{
    if (n == 0)
        return 0;
    if (mc_buf_reserve(b, n) != 0)
        return -1;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

static int put_long(mc_buf *b, int64_t v)
{
    uint8_t tmp[10];
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    size_t n = 0;
    while (z >= 0x80) {
        tmp[n++] = (uint8_t)(z | 0x80);
        z >>= 7;
    }
    tmp[n++] = (uint8_t)z;
    return put(b, tmp, n);
}

static int put_double(mc_buf *b, double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(u >> (8 * i));
    return put(b, le, 8);
}

static int put_float(mc_buf *b, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint8_t le[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
    return put(b, le, 4);
}

/* Default values are JSON (spec table "field default values"); bytes and
 * fixed are strings whose code points 0-255 are the bytes. */
static int put_latin1(mc_buf *b, const char *s, size_t len, bool with_length, size_t want,
                      char *err, size_t errlen)
{
    mc_buf tmp = {0};
    for (size_t i = 0; i < len;) {
        unsigned c = (unsigned char)s[i];
        unsigned cp = c;
        size_t n = 1;
        if (c >= 0xC0 && c < 0xE0 && i + 1 < len) {
            cp = (c & 0x1F) << 6 | ((unsigned char)s[i + 1] & 0x3F);
            n = 2;
        }
        if (cp > 0xFF || c >= 0xE0) {
            mc_buf_free(&tmp);
            snprintf(err, errlen, "a bytes default has a character above U+00FF");
            return -1;
        }
        uint8_t byte = (uint8_t)cp;
        if (put(&tmp, &byte, 1) != 0)
            goto oom;
        i += n;
    }
    if (!with_length && tmp.len != want) {
        snprintf(err, errlen, "a fixed default has %zu bytes, not %zu", tmp.len, want);
        mc_buf_free(&tmp);
        return -1;
    }
    if ((with_length && put_long(b, (int64_t)tmp.len) != 0) || put(b, tmp.data, tmp.len) != 0)
        goto oom;
    mc_buf_free(&tmp);
    return 0;
oom:
    mc_buf_free(&tmp);
    snprintf(err, errlen, "out of memory");
    return -1;
}

static int encode_default(const node *r, json_t *v, mc_buf *out, char *err, size_t errlen)
{
    switch (r->k) {
    case K_NULL:
        if (!json_is_null(v))
            goto type;
        return 0;
    case K_BOOLEAN: {
        if (!json_is_boolean(v))
            goto type;
        uint8_t b = json_is_true(v);
        return put(out, &b, 1);
    }
    case K_INT:
    case K_LONG:
        if (!json_is_integer(v))
            goto type;
        if (r->k == K_INT &&
            (json_integer_value(v) < INT32_MIN || json_integer_value(v) > INT32_MAX))
            goto type;
        return put_long(out, json_integer_value(v));
    case K_FLOAT:
        if (!json_is_number(v))
            goto type;
        return put_float(out, (float)json_number_value(v));
    case K_DOUBLE:
        if (!json_is_number(v))
            goto type;
        return put_double(out, json_number_value(v));
    case K_STRING:
        if (!json_is_string(v))
            goto type;
        return put_long(out, (int64_t)json_string_length(v)) ||
               put(out, json_string_value(v), json_string_length(v));
    case K_BYTES:
    case K_FIXED:
        if (!json_is_string(v))
            goto type;
        return put_latin1(out, json_string_value(v), json_string_length(v), r->k == K_BYTES,
                          r->fixed_size, err, errlen);
    case K_ENUM: {
        const char *sym = json_string_value(v);
        for (size_t i = 0; sym && i < json_array_size(r->symbols); i++)
            if (strcmp(sym, json_string_value(json_array_get(r->symbols, i))) == 0)
                return put_long(out, (int64_t)i);
        goto type;
    }
    case K_ARRAY: {
        if (!json_is_array(v))
            goto type;
        size_t n = json_array_size(v);
        if (n && put_long(out, (int64_t)n) != 0)
            return -1;
        for (size_t i = 0; i < n; i++)
            if (encode_default(r->items, json_array_get(v, i), out, err, errlen) != 0)
                return -1;
        return put_long(out, 0);
    }
    case K_MAP: {
        if (!json_is_object(v))
            goto type;
        size_t n = json_object_size(v);
        if (n && put_long(out, (int64_t)n) != 0)
            return -1;
        const char *k;
        json_t *val;
        json_object_foreach(v, k, val)
        {
            if (put_long(out, (int64_t)strlen(k)) || put(out, k, strlen(k)) ||
                encode_default(r->items, val, out, err, errlen) != 0)
                return -1;
        }
        return put_long(out, 0);
    }
    case K_RECORD:
        if (!json_is_object(v))
            goto type;
        for (size_t i = 0; i < r->n_fields; i++) {
            json_t *fv = json_object_get(v, r->fields[i].name);
            if (!fv)
                fv = r->fields[i].def;
            if (!fv) {
                snprintf(err, errlen, "a record default lacks field %s", r->fields[i].name);
                return -1;
            }
            if (encode_default(r->fields[i].type, fv, out, err, errlen) != 0)
                return -1;
        }
        return 0;
    case K_UNION: /* the default is of the first branch */
        if (r->n_branches == 0)
            goto type;
        return put_long(out, 0) || encode_default(r->branches[0], v, out, err, errlen);
    }
type:
    snprintf(err, errlen, "default does not fit type %s", kind_names[r->k]);
    return -1;
}

/* ---- transcoding (per record, hostile bytes) ------------------------------------ */

typedef struct xc {
    const uint8_t *p, *end;
    int depth;
    size_t items_left; /* bounds work on zero-byte items (arrays of nulls) */
    char *detail;
    size_t detail_len;
} xc;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static mc_codec_err
xfail(xc *x, mc_codec_err e, const char *fmt, ...)
{
    if (x->detail && x->detail_len && !x->detail[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(x->detail, x->detail_len, fmt, ap);
        va_end(ap);
    }
    return e;
}

static mc_codec_err get_long(xc *x, int64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (x->p >= x->end)
            return xfail(x, MC_CODEC_TRUNCATED, "a number is cut short");
        uint8_t b = *x->p++;
        if (shift == 63 && b > 1)
            return xfail(x, MC_CODEC_BAD_VARINT, "a varint overflows 64 bits");
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *out = (int64_t)((v >> 1) ^ (0 - (v & 1)));
            return MC_CODEC_OK;
        }
    }
    return xfail(x, MC_CODEC_BAD_VARINT, "a varint is longer than 10 bytes");
}

static mc_codec_err get_raw(xc *x, size_t n, const uint8_t **out)
{
    if ((size_t)(x->end - x->p) < n)
        return xfail(x, MC_CODEC_TRUNCATED, "%zu bytes needed, %zu left", n,
                     (size_t)(x->end - x->p));
    *out = x->p;
    x->p += n;
    return MC_CODEC_OK;
}

static mc_codec_err get_len(xc *x, size_t *n)
{
    int64_t v;
    mc_codec_err e = get_long(x, &v);
    if (e)
        return e;
    if (v < 0 || (uint64_t)v > (uint64_t)(x->end - x->p))
        return xfail(x, MC_CODEC_BAD_LENGTH, "length %" PRId64 " with %zu bytes left", v,
                     (size_t)(x->end - x->p));
    *n = (size_t)v;
    return MC_CODEC_OK;
}

#define XTRY(expr)                                                                                 \
    do {                                                                                           \
        mc_codec_err e_ = (expr);                                                                  \
        if (e_ != MC_CODEC_OK)                                                                     \
            return e_;                                                                             \
    } while (0)
#define XPUT(expr)                                                                                 \
    do {                                                                                           \
        if ((expr) != 0)                                                                           \
            return MC_CODEC_NOMEM;                                                                 \
    } while (0)

/* One Avro block count of an array or map: negative counts carry a byte size. */
static mc_codec_err get_block(xc *x, size_t *count)
{
    int64_t n;
    XTRY(get_long(x, &n));
    if (n < 0) {
        int64_t size;
        if (n == INT64_MIN)
            return xfail(x, MC_CODEC_BAD_LENGTH, "block count out of range");
        n = -n;
        XTRY(get_long(x, &size));
    }
    if ((uint64_t)n > x->items_left)
        return xfail(x, MC_CODEC_BAD_LENGTH, "block of %" PRId64 " items is more than allowed", n);
    x->items_left -= (size_t)n;
    *count = (size_t)n;
    return MC_CODEC_OK;
}

/* Reads one value of writer type w and appends it as reader type r (out ==
 * NULL: skip it). */
static mc_codec_err transcode(xc *x, const node *w, const node *r, mc_buf *out)
{
    if (++x->depth > 64)
        return xfail(x, MC_CODEC_BAD_LENGTH, "values nested deeper than 64 levels");
    mc_codec_err e = MC_CODEC_OK;
    const uint8_t *raw = NULL;
    size_t n = 0; /* set by get_len before any use; gcc -O3 cannot tell */
    if (w->k == K_UNION) {
        int64_t b;
        XTRY(get_long(x, &b));
        if (b < 0 || (uint64_t)b >= w->n_branches)
            return xfail(x, MC_CODEC_BAD_UNION, "union branch %" PRId64 " of %zu", b,
                         w->n_branches);
        e = transcode(x, w->branches[b], r, out);
        x->depth--;
        return e;
    }
    if (r && r->k == K_UNION) {
        int b = union_branch(w, r); /* found at load time, so >= 0 */
        if (b < 0)
            return xfail(x, MC_CODEC_BAD_UNION, "no reader branch for a %s", kind_names[w->k]);
        XPUT(put_long(out, b));
        e = transcode(x, w, r->branches[b], out);
        x->depth--;
        return e;
    }
    switch (w->k) {
    case K_NULL:
        break;
    case K_BOOLEAN:
        XTRY(get_raw(x, 1, &raw));
        if (*raw > 1)
            return xfail(x, MC_CODEC_BAD_UNION, "boolean byte %u", *raw);
        if (out)
            XPUT(put(out, raw, 1));
        break;
    case K_INT:
    case K_LONG: {
        int64_t v;
        XTRY(get_long(x, &v));
        if (w->k == K_INT && (v < INT32_MIN || v > INT32_MAX))
            return xfail(x, MC_CODEC_BAD_VARINT, "int %" PRId64 " out of range", v);
        if (!out)
            break;
        if (r->k == K_FLOAT)
            XPUT(put_float(out, (float)v));
        else if (r->k == K_DOUBLE)
            XPUT(put_double(out, (double)v));
        else
            XPUT(put_long(out, v));
        break;
    }
    case K_FLOAT: {
        XTRY(get_raw(x, 4, &raw));
        if (!out)
            break;
        if (r->k == K_DOUBLE) {
            uint32_t u = (uint32_t)raw[0] | (uint32_t)raw[1] << 8 | (uint32_t)raw[2] << 16 |
                         (uint32_t)raw[3] << 24;
            float f;
            memcpy(&f, &u, 4);
            XPUT(put_double(out, f));
        } else {
            XPUT(put(out, raw, 4));
        }
        break;
    }
    case K_DOUBLE:
        XTRY(get_raw(x, 8, &raw));
        if (out)
            XPUT(put(out, raw, 8));
        break;
    case K_BYTES:
    case K_STRING: /* the fast decoder checks UTF-8 where the reader wants a string */
        XTRY(get_len(x, &n));
        XTRY(get_raw(x, n, &raw));
        if (out)
            XPUT(put_long(out, (int64_t)n) || put(out, raw, n));
        break;
    case K_FIXED:
        XTRY(get_raw(x, w->fixed_size, &raw));
        if (out)
            XPUT(put(out, raw, w->fixed_size));
        break;
    case K_ENUM: {
        int64_t i;
        XTRY(get_long(x, &i));
        if (i < 0 || (uint64_t)i >= json_array_size(w->symbols))
            return xfail(x, MC_CODEC_BAD_ENUM, "enum %s index %" PRId64, w->name, i);
        if (!out)
            break;
        const char *sym = json_string_value(json_array_get(w->symbols, (size_t)i));
        int64_t ri = -1, def = -1;
        for (size_t k = 0; k < json_array_size(r->symbols); k++) {
            const char *rs = json_string_value(json_array_get(r->symbols, k));
            if (strcmp(rs, sym) == 0)
                ri = (int64_t)k;
            if (r->enum_default && strcmp(rs, r->enum_default) == 0)
                def = (int64_t)k;
        }
        if (ri < 0 && def < 0)
            return xfail(x, MC_CODEC_BAD_ENUM, "symbol %s unknown to the reader", sym);
        XPUT(put_long(out, ri >= 0 ? ri : def));
        break;
    }
    case K_ARRAY:
    case K_MAP: {
        bool map = w->k == K_MAP;
        for (;;) {
            size_t count = 0;
            XTRY(get_block(x, &count));
            if (count == 0)
                break;
            if (out)
                XPUT(put_long(out, (int64_t)count));
            for (size_t i = 0; i < count; i++) {
                if (map) {
                    XTRY(get_len(x, &n));
                    XTRY(get_raw(x, n, &raw));
                    if (out)
                        XPUT(put_long(out, (int64_t)n) || put(out, raw, n));
                }
                XTRY(transcode(x, w->items, out ? r->items : NULL, out));
            }
        }
        if (out)
            XPUT(put_long(out, 0));
        break;
    }
    case K_RECORD: {
        if (!out) {
            for (size_t i = 0; i < w->n_fields; i++)
                XTRY(transcode(x, w->fields[i].type, NULL, NULL));
            break;
        }
        /* Writer order in, reader order out: each reader field is built in
         * its own buffer, then they are concatenated. */
        mc_buf *parts = calloc(r->n_fields ? r->n_fields : 1, sizeof *parts);
        bool *have = calloc(r->n_fields ? r->n_fields : 1, sizeof *have);
        if (!parts || !have) {
            free(parts);
            free(have);
            return MC_CODEC_NOMEM;
        }
        for (size_t i = 0; i < w->n_fields && e == MC_CODEC_OK; i++) {
            int ri = reader_field(r, &w->fields[i]);
            e = transcode(x, w->fields[i].type, ri >= 0 ? r->fields[ri].type : NULL,
                          ri >= 0 ? &parts[ri] : NULL);
            if (ri >= 0)
                have[ri] = true;
        }
        char why[200];
        for (size_t i = 0; i < r->n_fields && e == MC_CODEC_OK; i++) {
            if (have[i]) {
                if (put(out, parts[i].data, parts[i].len) != 0)
                    e = MC_CODEC_NOMEM;
            } else if (encode_default(r->fields[i].type, r->fields[i].def, out, why, sizeof why) !=
                       0) {
                e = MC_CODEC_NOMEM; /* defaults were checked at load time */
            }
        }
        for (size_t i = 0; i < r->n_fields; i++)
            mc_buf_free(&parts[i]);
        free(parts);
        free(have);
        break;
    }
    case K_UNION:
        break; /* handled above */
    }
    x->depth--;
    return e;
}

/* ---- public -------------------------------------------------------------------- */

mc_writer_schema *mc_writer_schema_new(const char *json_text, mc_schema_id reader, char *err,
                                       size_t errlen)
{
    mc_writer_schema *ws = calloc(1, sizeof *ws);
    if (!ws) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ws->reader_id = reader;
    char why[512];
    if (schema_parse(&ws->writer, json_text, why, sizeof why) != 0) {
        snprintf(err, errlen, "writer schema: %s", why);
        free(ws);
        return NULL;
    }
    if (schema_parse(&ws->reader, mc_schema_json(reader), why, sizeof why) != 0) {
        snprintf(err, errlen, "reader schema %s: %s", mc_schema_name(reader), why);
        goto fail;
    }
    char *pcf = mc_schema_canonical_form(json_text, why, sizeof why);
    if (!pcf) {
        snprintf(err, errlen, "writer schema: %s", why);
        goto fail;
    }
    ws->fingerprint = mc_crc64_avro(pcf, strlen(pcf));
    free(pcf);
    pair seen[64];
    if (check(ws->writer.root, ws->reader.root, seen, 0, "", why, sizeof why) != 0) {
        snprintf(err, errlen, "records written with this schema cannot be read as %s: %s",
                 mc_schema_name(reader), why);
        goto fail;
    }
    return ws;
fail:
    mc_writer_schema_free(ws);
    return NULL;
}

uint64_t mc_writer_schema_fingerprint(const mc_writer_schema *ws)
{
    return ws->fingerprint;
}

void mc_writer_schema_free(mc_writer_schema *ws)
{
    if (!ws)
        return;
    schema_free(&ws->writer);
    schema_free(&ws->reader);
    free(ws);
}

mc_codec_err mc_writer_schema_transcode(const mc_writer_schema *ws, const void *body, size_t len,
                                        mc_buf *out, char *detail, size_t detail_len)
{
    xc x = {.p = body,
            .end = (const uint8_t *)body + len,
            .items_left = len + 4096,
            .detail = detail,
            .detail_len = detail_len};
    if (detail && detail_len)
        detail[0] = '\0';
    size_t start = out->len;
    mc_codec_err e = transcode(&x, ws->writer.root, ws->reader.root, out);
    if (e == MC_CODEC_OK && x.p != x.end)
        e = xfail(&x, MC_CODEC_TRAILING, "%zu bytes left after the record", (size_t)(x.end - x.p));
    if (e != MC_CODEC_OK)
        out->len = start;
    return e;
}
