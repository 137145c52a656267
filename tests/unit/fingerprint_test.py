#!/usr/bin/env python3
"""Cross-checks mooncake's Avro codec against fastavro, an independent Avro
implementation: the Parsing Canonical Form and CRC-64-AVRO fingerprint of every
schemas/*.avsc and of the Avro project's own canonical-form test cases, and
records encoded by one side and decoded by the other. Run by ctest with
MOONCAKE_BUILD_DIR and MOONCAKE_SOURCE_DIR set."""
import glob
import io
import json
import os
import struct
import subprocess
import sys
import tempfile

try:
    import fastavro
    from fastavro.schema import fingerprint, parse_schema, to_parsing_canonical_form
except ImportError:
    print("FAIL: fastavro is not installed; run `pip install fastavro` (this test does not skip)")
    sys.exit(1)

SOURCE = os.environ.get("MOONCAKE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("MOONCAKE_BUILD_DIR", os.path.join(SOURCE, "build"))
TOOL = os.path.join(BUILD, "tools", "mooncake-schema")

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def tool(*args, stdin=None):
    p = subprocess.run([TOOL, *args], input=stdin, capture_output=True)
    if p.returncode != 0:
        raise RuntimeError("mooncake-schema %s failed (%d): %s"
                           % (" ".join(args), p.returncode, p.stderr.decode(errors="replace")))
    return p.stdout


def ours(path):
    """(canonical form, fingerprint as int) according to mooncake-schema."""
    lines = tool("canonical", path).decode().splitlines()
    assert lines[1].startswith("fingerprint: "), lines
    return lines[0], int(lines[1].split()[1], 16)


def theirs(schema_text):
    """(canonical form, fingerprint as int) according to fastavro. fastavro
    prints the fingerprint as the little-endian bytes of the wire format."""
    pcf = to_parsing_canonical_form(json.loads(schema_text))
    return pcf, int.from_bytes(bytes.fromhex(fingerprint(pcf, "CRC-64-AVRO")), "little")


def grown_from(old, new, where):
    """None when schema `new` is `old` with fields appended (with defaults) to
    the end of records, symbols appended to enums and branches appended to
    unions; else what differs."""
    if isinstance(old, dict) and isinstance(new, dict) and old.get("type") == new.get("type"):
        kind = old.get("type")
        if kind == "record":
            of, nf = old["fields"], new["fields"]
            if [f["name"] for f in of] != [f["name"] for f in nf[:len(of)]]:
                return "%s: fields %s are not a prefix of %s" % (
                    where, [f["name"] for f in of], [f["name"] for f in nf])
            for o, n in zip(of, nf):
                why = grown_from(o["type"], n["type"], where + "." + o["name"])
                if why:
                    return why
            for f in nf[len(of):]:
                if "default" not in f:
                    return "%s.%s: appended without a default" % (where, f["name"])
            return None
        if kind == "enum":
            ok = new["symbols"][:len(old["symbols"])] == old["symbols"]
            return None if ok else "%s: symbols are not a prefix" % where
        if kind == "array":
            return grown_from(old["items"], new["items"], where + "[]")
        if kind == "map":
            return grown_from(old["values"], new["values"], where + "{}")
    if isinstance(old, list) and isinstance(new, list) and len(old) <= len(new):
        for i, (o, n) in enumerate(zip(old, new)):
            why = grown_from(o, n, "%s|%d" % (where, i))
            if why:
                return why
        return None
    if old == new:
        return None
    return "%s: %s became %s" % (where, json.dumps(old)[:80], json.dumps(new)[:80])


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


# The Avro project's canonical-form test vectors (share/test/data/schema-tests.txt):
# (input, canonical form, fingerprint as Java's signed long or None).
SPEC_CASES = [
    ('"null"', '"null"', 7195948357588979594),
    ('{"type":"null"}', '"null"', None),
    ('"boolean"', '"boolean"', -6970731678124411036),
    ('"int"', '"int"', 8247732601305521295),
    ('{"type":"int"}', '"int"', None),
    ('"long"', '"long"', -3434872931120570953),
    ('"float"', '"float"', 5583340709985441680),
    ('"double"', '"double"', -8181574048448539266),
    ('"bytes"', '"bytes"', 5746618253357095269),
    ('"string"', '"string"', -8142146995180207161),
    ("[  ]", "[]", -1241056759729112623),
    ('[ "int"  ]', '["int"]', -5232228896498058493),
    ('[ "int" , {"type":"boolean"} ]', '["int","boolean"]', 5392556393470105090),
    ('{"fields":[], "type":"record", "name":"foo"}',
     '{"name":"foo","type":"record","fields":[]}', -4824392279771201922),
    ('{"fields":[], "type":"record", "name":"foo", "namespace":"x.y"}',
     '{"name":"x.y.foo","type":"record","fields":[]}', 5916914534497305771),
    ('{"fields":[], "type":"record", "name":"a.b.foo", "namespace":"x.y"}',
     '{"name":"a.b.foo","type":"record","fields":[]}', -4616218487480524110),
    ('{"fields":[], "type":"record", "name":"foo", "doc":"foo", "aliases":["foo","bar"]}',
     '{"name":"foo","type":"record","fields":[]}', -4824392279771201922),
    ('{"fields":[{"type":{"type":"boolean"}, "name":"f1"}], "type":"record", "name":"foo"}',
     '{"name":"foo","type":"record","fields":[{"name":"f1","type":"boolean"}]}',
     7843277075252814651),
    ('{ "fields":[{"type":"boolean", "aliases":[], "name":"f1", "default":"true"},\n'
     '            {"order":"descending","name":"f2","doc":"Hello","type":"int"}],\n'
     '  "type":"record", "name":"foo"\n}',
     '{"name":"foo","type":"record","fields":[{"name":"f1","type":"boolean"},'
     '{"name":"f2","type":"int"}]}', -4860222112080293046),
    ('{"type":"enum", "name":"foo", "symbols":["A1"]}',
     '{"name":"foo","type":"enum","symbols":["A1"]}', -6342190197741309591),
    ('{"namespace":"x.y.z", "type":"enum", "name":"foo", "doc":"foo bar", "symbols":["A1", "A2"]}',
     '{"name":"x.y.z.foo","type":"enum","symbols":["A1","A2"]}', -4448647247586288245),
    ('{"name":"foo","type":"fixed","size":15}',
     '{"name":"foo","type":"fixed","size":15}', 1756455273707447556),
    ('{"namespace":"x.y.z", "type":"fixed", "name":"foo", "doc":"foo bar", "size":32}',
     '{"name":"x.y.z.foo","type":"fixed","size":32}', -3064184465700546786),
    ('{ "items":{"type":"null"}, "type":"array"}',
     '{"type":"array","items":"null"}', -589620603366471059),
    ('{ "values":"string", "type":"map"}',
     '{"type":"map","values":"string"}', -8732877298790414990),
    ('{"name":"PigValue","type":"record",\n'
     ' "fields":[{"name":"value", "type":["null", "int", "long", "PigValue"]}]}',
     '{"name":"PigValue","type":"record","fields":[{"name":"value",'
     '"type":["null","int","long","PigValue"]}]}', -1759257747318642341),
]

# More shapes, checked against fastavro only: nested named types with
# namespace inheritance, references after first use, logical types, escapes.
EXTRA_CASES = [
    {"type": "record", "name": "Outer", "namespace": "a.b", "doc": "x", "fields": [
        {"name": "inner", "type": {"type": "record", "name": "Inner", "fields": [
            {"name": "e", "type": {"type": "enum", "name": "E", "namespace": "c",
                                   "symbols": ["X", "Y"], "default": "X"}},
            {"name": "f", "type": {"type": "fixed", "name": "d.F", "size": 4}}]}},
        {"name": "again", "type": "Inner"},
        {"name": "e2", "type": "c.E"},
        {"name": "f2", "type": ["null", "d.F"], "default": None},
        {"name": "arr", "type": {"type": "array", "items": {"type": "map", "values": "Inner"}}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4}},
        {"name": "u", "type": ["null", "string", {"type": "array", "items": "int"}]},
    ]},
    {"type": "enum", "name": "n\u0061me", "symbols": ["\u0041"], "doc": "caf\u00e9 \u2615"},
    {"type": "array", "items": {"type": "record", "name": "R", "fields": [
        {"name": "self", "type": ["null", "R"]}]}},
]

try:
    with tempfile.TemporaryDirectory() as tmp:
        # 1. Our schemas: canonical form and fingerprint equal to fastavro's.
        avscs = sorted(glob.glob(os.path.join(SOURCE, "schemas", "*.avsc")))
        check(len(avscs) == 10, "expected 10 schemas, found %d" % len(avscs))
        listed = {}
        for line in tool("list").decode().splitlines():
            name, fp, path = line.split()
            listed[os.path.basename(path)] = int(fp, 16)
        fps = {}
        for path in avscs:
            with open(path) as f:
                text = f.read()
            parse_schema(json.loads(text))  # fastavro must accept it as a valid schema
            for field in json.loads(text)["fields"]:
                check("doc" in field, "%s: field %s has no doc" % (path, field["name"]))
            (pcf, fp), (fpcf, ffp) = ours(path), theirs(text)
            check(pcf == fpcf, "%s: canonical form differs\n ours:     %s\n fastavro: %s"
                  % (path, pcf, fpcf))
            check(fp == ffp, "%s: fingerprint %016x, fastavro %016x" % (path, fp, ffp))
            check(listed.get(os.path.basename(path)) == ffp,
                  "%s: compiled-in fingerprint %s differs from fastavro %016x"
                  % (path, listed.get(os.path.basename(path)), ffp))
            fps[os.path.basename(path)[:-5]] = ffp
        check(len(set(fps.values())) == len(fps), "two schemas share a fingerprint")

        # 1b. Earlier versions still read (schemas/previous/<Record>_v<N>.avsc):
        # fingerprints equal fastavro's and compiled in, and each is the current
        # schema minus fields appended since to the end of a record (its own or
        # a nested one), every one of them with a default, and minus enum
        # symbols and union branches appended since - what lets the codec read an old record by
        # knowing which version added which fields.
        previous = sorted(glob.glob(os.path.join(SOURCE, "schemas", "previous", "*.avsc")))
        check(len(previous) >= 2, "expected earlier versions of Result and Attempt")
        for path in previous:
            base = os.path.basename(path)
            record, _, version = base[:-5].rpartition("_v")
            with open(path) as f:
                old = json.load(f)
            with open(os.path.join(SOURCE, "schemas", record + ".avsc")) as f:
                new = json.load(f)
            parse_schema(old)
            _, ffp = theirs(json.dumps(old))
            check(listed.get(base) == ffp, "%s: compiled-in fingerprint %s differs from fastavro "
                  "%016x" % (base, listed.get(base), ffp))
            check(ffp not in fps.values(), "%s: fingerprint equals a current schema's" % base)
            fps[base[:-5]] = ffp
            why = grown_from(old, new, record)
            check(why is None, "%s: not an earlier version of schemas/%s.avsc: %s"
                  % (base, record, why))

        # 2. The spec's canonical-form cases, plus extra shapes.
        for i, (text, canonical, javafp) in enumerate(SPEC_CASES):
            path = os.path.join(tmp, "spec%02d.avsc" % i)
            with open(path, "w") as f:
                f.write(text)
            pcf, fp = ours(path)
            check(pcf == canonical, "spec case %d: canonical %s, want %s" % (i, pcf, canonical))
            try:
                fpcf, ffp = theirs(text)
            except fastavro.schema.SchemaParseException:
                # Case 026 has a string default for a boolean, which fastavro
                # rejects; the expected values from the spec still apply.
                fpcf, ffp = canonical, fp
            check(fpcf == canonical, "spec case %d: fastavro canonical %s" % (i, fpcf))
            check(fp == ffp, "spec case %d: fingerprint %016x, fastavro %016x" % (i, fp, ffp))
            if javafp is not None:
                check(signed(fp) == javafp, "spec case %d: fingerprint %d, want %d"
                      % (i, signed(fp), javafp))
        for i, schema in enumerate(EXTRA_CASES):
            path = os.path.join(tmp, "extra%02d.avsc" % i)
            with open(path, "w") as f:
                json.dump(schema, f)  # ensure_ascii: exercises \\u escapes
            (pcf, fp), (fpcf, ffp) = ours(path), theirs(json.dumps(schema))
            check(pcf == fpcf, "extra case %d: canonical differs\n ours:     %s\n fastavro: %s"
                  % (i, pcf, fpcf))
            check(fp == ffp, "extra case %d: fingerprint %016x, fastavro %016x" % (i, fp, ffp))

        # 3. CRC-64-AVRO known values (also asserted in test_codec.c).
        for text, want in [("", 0xc15d213aa4d7a795), ('"int"', 0x7275d51a3f395c8f),
                           ('"null"', 0x63dd24e7cc258f8a)]:
            got = int.from_bytes(bytes.fromhex(fingerprint(text, "CRC-64-AVRO")), "little")
            check(got == want, "fastavro CRC-64-AVRO(%r) = %016x, expected %016x" % (text, got, want))

        command_schema = parse_schema(json.load(open(os.path.join(SOURCE, "schemas", "Command.avsc"))))
        header = b"\xc3\x01" + struct.pack("<Q", fps["Command"])

        # 4. fastavro encodes, we decode.
        task = {
            "app_id": "shop", "task_id": "t-\u00e9\u4e2d", "due_at": 1767225600123,
            "callback": {"url": "https://example.com/x", "method": "PUT",
                         "headers": {"A": "1", "B": "\u2615"}, "body": b"\x00\xff binary",
                         "timeout_ms": 1500},
            "retry": {"max_attempts": 3, "initial_backoff_ms": 250, "multiplier": 1.5,
                      "max_backoff_ms": 60000},
            "attempt": 2, "created_at": 1767225000000, "metadata": {"k": "v"},
        }
        for payload, expect in [
            (("mooncake.Submit", {"task": task}), None),
            (("mooncake.Cancel", {"app_id": "shop", "task_id": "t1", "requested_at": -5}),
             {"kind": "cancel", "app_id": "shop", "task_id": "t1", "requested_at": -5}),
        ]:
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, command_schema, {"payload": payload})
            path = os.path.join(tmp, "cmd.bin")
            with open(path, "wb") as f:
                f.write(header + buf.getvalue())
            got = json.loads(tool("decode-command", path))
            if expect is None:
                t = got["task"]
                check(got["kind"] == "submit", "decoded kind %s" % got["kind"])
                import base64
                check(base64.b64decode(t["callback"].pop("body_base64")) == task["callback"]["body"],
                      "binary body differs")
                want = json.loads(json.dumps(task, default=lambda b: None))
                del want["callback"]["body"]
                check(t == want, "decoded task differs:\n ours: %s\n want: %s" % (t, want))
            else:
                check(got == expect, "decoded cancel %s, want %s" % (got, expect))
            # Confluent framing: accepted only for a configured id.
            with open(path, "wb") as f:
                f.write(b"\x00" + struct.pack(">i", 7) + buf.getvalue())
            check(json.loads(tool("decode-command", "--confluent-id", "7", path))["kind"]
                  == got["kind"], "Confluent-framed command not decoded")
            p = subprocess.run([TOOL, "decode-command", path], capture_output=True)
            check(p.returncode == 1 and b"not a configured" in p.stderr,
                  "unconfigured Confluent id accepted: %r" % p.stderr)

        # 5. We encode, fastavro decodes.
        for args in [(), ("--cancel",)]:
            data = tool("sample-command", *args)
            check(data[:10] == header, "sample header %s, want %s" % (data[:10].hex(), header.hex()))
            rec = fastavro.schemaless_reader(io.BytesIO(data[10:]), command_schema, None)
            if args:
                check(rec["payload"]["task_id"] == "0193a5b2-0000-7000-8000-000000000001",
                      "fastavro read our cancel as %s" % rec)
            else:
                t = rec["payload"]["task"]
                check(t["callback"]["headers"] == {"Content-Type": "application/json",
                                                   "X-Trace": "caf\u00e9"},
                      "fastavro read headers %s" % t["callback"]["headers"])
                check(t["callback"]["body"] == '{"order":42,"note":"\u2615"}'.encode(),
                      "fastavro read body %r" % t["callback"]["body"])
                check(t["retry"]["multiplier"] == 2.0 and t["attempt"] == 1 and
                      t["metadata"] == {"source": "sample"}, "fastavro read task %s" % t)
                # fastavro's re-encoding is byte-identical to ours (both canonical).
                buf = io.BytesIO()
                fastavro.schemaless_writer(buf, command_schema, rec)
                check(buf.getvalue() == data[10:], "fastavro re-encodes our sample differently")
except Exception as e:  # a crash of the tool is a failure, not an error of the harness
    failures.append(repr(e))
    print("FAIL:", e)

if failures:
    print("%d check(s) failed" % len(failures))
    sys.exit(1)
print("fingerprint_test: all checks passed")
