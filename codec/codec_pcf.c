/* Parsing Canonical Form of Avro schemas (Avro spec, "Parsing Canonical Form
 * for Schemas"), computed with jansson. The fingerprint that frames every
 * record is the CRC-64-AVRO of this text, so it must match what other Avro
 * implementations (Java SchemaNormalization, fastavro) produce byte for byte. */
#include "codec_internal.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* State of one canonicalisation: the output text and the full names defined
 * so far (a schema has few of them, so a linear list is fine). */
typedef struct pcf {
    mc_buf out;
    char **names;
    size_t n_names, cap_names;
    char *err;
    size_t errlen;
    bool failed;
} pcf;

static const char *const primitives[] = {"null",  "boolean", "int",   "long",
                                         "float", "double",  "bytes", "string"};

static bool is_primitive(const char *s)
{
    for (size_t i = 0; i < sizeof primitives / sizeof primitives[0]; i++)
        if (strcmp(s, primitives[i]) == 0)
            return true;
    return false;
}

static int fail(pcf *c, const char *fmt, ...)
{
    if (!c->failed && c->err && c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, c->errlen, fmt, ap);
        va_end(ap);
    }
    c->failed = true;
    return -1;
}

static int emit(pcf *c, const char *s, size_t n)
{
    if (mc_buf_reserve(&c->out, n) != 0)
        return fail(c, "out of memory");
    memcpy(c->out.data + c->out.len, s, n);
    c->out.len += n;
    return 0;
}

static int emits(pcf *c, const char *s)
{
    return emit(c, s, strlen(s));
}

/* Names, symbols and namespaces are restricted by the spec to
 * [A-Za-z_][A-Za-z0-9_]* (dot-separated for full names), so once validated
 * they need no JSON escaping: this is what [STRINGS] boils down to. */
static bool valid_name(const char *s, bool dotted)
{
    bool start = true;
    if (!*s)
        return false;
    for (; *s; s++) {
        char ch = *s;
        bool alpha = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_';
        bool digit = ch >= '0' && ch <= '9';
        if (dotted && ch == '.') {
            if (start)
                return false;
            start = true;
            continue;
        }
        if (!(alpha || (digit && !start)))
            return false;
        start = false;
    }
    return !start;
}

static int emit_quoted(pcf *c, const char *s)
{
    if (emit(c, "\"", 1) || emits(c, s) || emit(c, "\"", 1))
        return -1;
    return 0;
}

static bool is_defined(const pcf *c, const char *full)
{
    for (size_t i = 0; i < c->n_names; i++)
        if (strcmp(c->names[i], full) == 0)
            return true;
    return false;
}

static int define(pcf *c, const char *full)
{
    if (is_defined(c, full))
        return fail(c, "named type %s is defined twice", full);
    if (c->n_names == c->cap_names) {
        size_t cap = c->cap_names ? c->cap_names * 2 : 8;
        char **n = realloc(c->names, cap * sizeof *n);
        if (!n)
            return fail(c, "out of memory");
        c->names = n;
        c->cap_names = cap;
    }
    char *d = strdup(full);
    if (!d)
        return fail(c, "out of memory");
    c->names[c->n_names++] = d;
    return 0;
}

/* Builds "ns.name" (or just name) into buf, per the spec's naming rules:
 * a dotted name is already full; otherwise the namespace is the explicit
 * "namespace" attribute if present, else the enclosing one. */
static int full_name(pcf *c, const char *name, const char *ns, char *buf, size_t buflen)
{
    int n;
    if (strchr(name, '.') || !ns || !*ns)
        n = snprintf(buf, buflen, "%s", name);
    else
        n = snprintf(buf, buflen, "%s.%s", ns, name);
    if (n < 0 || (size_t)n >= buflen)
        return fail(c, "name %s is too long", name);
    return 0;
}

static int canon(pcf *c, json_t *s, const char *ns);

/* A type given by name: a primitive, or a reference to a named type that
 * must already be defined (Avro allows no forward references). */
static int canon_name_ref(pcf *c, const char *name, const char *ns)
{
    if (is_primitive(name))
        return emit_quoted(c, name);
    if (!valid_name(name, true))
        return fail(c, "invalid type name \"%s\"", name);
    char full[1024];
    if (full_name(c, name, ns, full, sizeof full))
        return -1;
    if (is_defined(c, full))
        return emit_quoted(c, full);
    /* Java and fastavro also resolve an unqualified name in the null namespace. */
    if (is_defined(c, name))
        return emit_quoted(c, name);
    return fail(c, "unknown type %s", full);
}

/* Record, enum and fixed: work out the full name and the namespace their
 * own nested definitions inherit, then register the name before descending
 * (a record may refer to itself). */
static int named(pcf *c, json_t *s, const char *ns, char *full, size_t fulllen, char *inner_ns,
                 size_t inner_len)
{
    const char *name = json_string_value(json_object_get(s, "name"));
    if (!name)
        return fail(c, "named type without a string \"name\"");
    if (!valid_name(name, true))
        return fail(c, "invalid name \"%s\"", name);
    json_t *nsj = json_object_get(s, "namespace");
    const char *own_ns = ns;
    if (nsj && !json_is_null(nsj)) {
        if (!json_is_string(nsj))
            return fail(c, "namespace of %s is not a string", name);
        own_ns = json_string_value(nsj);
        if (*own_ns && !valid_name(own_ns, true))
            return fail(c, "invalid namespace \"%s\"", own_ns);
    }
    if (full_name(c, name, own_ns, full, fulllen))
        return -1;
    const char *dot = strrchr(full, '.');
    size_t nl = dot ? (size_t)(dot - full) : 0;
    if (nl >= inner_len)
        return fail(c, "name %s is too long", full);
    memcpy(inner_ns, full, nl);
    inner_ns[nl] = '\0';
    return define(c, full);
}

static int canon_record(pcf *c, json_t *s, const char *ns, const char *type)
{
    char full[1024], inner[1024];
    if (named(c, s, ns, full, sizeof full, inner, sizeof inner))
        return -1;
    json_t *fields = json_object_get(s, "fields");
    if (!json_is_array(fields))
        return fail(c, "record %s has no \"fields\" array", full);
    if (emits(c, "{\"name\":") || emit_quoted(c, full) || emits(c, ",\"type\":") ||
        emit_quoted(c, type) || emits(c, ",\"fields\":["))
        return -1;
    size_t i;
    json_t *f;
    json_array_foreach(fields, i, f)
    {
        const char *fname = json_string_value(json_object_get(f, "name"));
        json_t *ftype = json_object_get(f, "type");
        if (!json_is_object(f) || !fname || !ftype)
            return fail(c, "field %zu of %s needs a string \"name\" and a \"type\"", i, full);
        if (!valid_name(fname, false))
            return fail(c, "invalid field name \"%s\" in %s", fname, full);
        if ((i && emit(c, ",", 1)) || emits(c, "{\"name\":") || emit_quoted(c, fname) ||
            emits(c, ",\"type\":") || canon(c, ftype, inner) || emit(c, "}", 1))
            return -1;
    }
    return emits(c, "]}");
}

static int canon_enum(pcf *c, json_t *s, const char *ns)
{
    char full[1024], inner[1024];
    if (named(c, s, ns, full, sizeof full, inner, sizeof inner))
        return -1;
    json_t *syms = json_object_get(s, "symbols");
    if (!json_is_array(syms))
        return fail(c, "enum %s has no \"symbols\" array", full);
    if (emits(c, "{\"name\":") || emit_quoted(c, full) ||
        emits(c, ",\"type\":\"enum\",\"symbols\":["))
        return -1;
    size_t i;
    json_t *sym;
    json_array_foreach(syms, i, sym)
    {
        const char *v = json_string_value(sym);
        if (!v || !valid_name(v, false))
            return fail(c, "invalid symbol %zu in enum %s", i, full);
        if ((i && emit(c, ",", 1)) || emit_quoted(c, v))
            return -1;
    }
    return emits(c, "]}");
}

static int canon_fixed(pcf *c, json_t *s, const char *ns)
{
    char full[1024], inner[1024];
    if (named(c, s, ns, full, sizeof full, inner, sizeof inner))
        return -1;
    json_t *size = json_object_get(s, "size");
    if (!json_is_integer(size) || json_integer_value(size) < 0)
        return fail(c, "fixed %s needs a non-negative integer \"size\"", full);
    char num[32];
    /* [INTEGERS]: jansson already dropped any leading zeros. */
    snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(size));
    if (emits(c, "{\"name\":") || emit_quoted(c, full) ||
        emits(c, ",\"type\":\"fixed\",\"size\":") || emits(c, num) || emit(c, "}", 1))
        return -1;
    return 0;
}

static int canon(pcf *c, json_t *s, const char *ns)
{
    if (json_is_string(s))
        return canon_name_ref(c, json_string_value(s), ns);
    if (json_is_array(s)) { /* a union */
        size_t i;
        json_t *b;
        if (emit(c, "[", 1))
            return -1;
        json_array_foreach(s, i, b)
        {
            if ((i && emit(c, ",", 1)) || canon(c, b, ns))
                return -1;
        }
        return emit(c, "]", 1);
    }
    if (!json_is_object(s))
        return fail(c, "a schema must be a string, an array or an object");
    json_t *t = json_object_get(s, "type");
    if (json_is_object(t) || json_is_array(t))
        return canon(c, t, ns); /* {"type": {...}}: the wrapper adds nothing */
    const char *type = json_string_value(t);
    if (!type)
        return fail(c, "schema object without a \"type\"");
    if (strcmp(type, "record") == 0 || strcmp(type, "error") == 0)
        return canon_record(c, s, ns, type);
    if (strcmp(type, "enum") == 0)
        return canon_enum(c, s, ns);
    if (strcmp(type, "fixed") == 0)
        return canon_fixed(c, s, ns);
    if (strcmp(type, "array") == 0) {
        json_t *items = json_object_get(s, "items");
        if (!items)
            return fail(c, "array without \"items\"");
        if (emits(c, "{\"type\":\"array\",\"items\":") || canon(c, items, ns) || emit(c, "}", 1))
            return -1;
        return 0;
    }
    if (strcmp(type, "map") == 0) {
        json_t *values = json_object_get(s, "values");
        if (!values)
            return fail(c, "map without \"values\"");
        if (emits(c, "{\"type\":\"map\",\"values\":") || canon(c, values, ns) || emit(c, "}", 1))
            return -1;
        return 0;
    }
    /* [PRIMITIVES] {"type":"long","logicalType":...} becomes "long"; a
     * named reference written as {"type":"Foo"} becomes "ns.Foo". */
    return canon_name_ref(c, type, ns);
}

/* Parses schema_json and prints its canonical form into a malloc'd string
 * the caller frees; NULL with a reason in err when the JSON or schema is bad. */
char *mc_schema_canonical_form(const char *schema_json, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!schema_json) {
        if (err && errlen)
            snprintf(err, errlen, "no schema text");
        return NULL;
    }
    json_error_t jerr;
    json_t *root = json_loads(schema_json, JSON_DECODE_ANY, &jerr);
    if (!root) {
        if (err && errlen)
            snprintf(err, errlen, "invalid JSON at line %d column %d: %s", jerr.line, jerr.column,
                     jerr.text);
        return NULL;
    }
    pcf c = {.err = err, .errlen = errlen};
    int rc = canon(&c, root, "");
    if (rc == 0)
        rc = emit(&c, "", 1); /* the terminating NUL */
    json_decref(root);
    for (size_t i = 0; i < c.n_names; i++)
        free(c.names[i]);
    free(c.names);
    if (rc != 0) {
        mc_buf_free(&c.out);
        return NULL;
    }
    return (char *)c.out.data;
}
