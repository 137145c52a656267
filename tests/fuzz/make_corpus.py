#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses: corpus/command_decode/,
corpus/wheel_entry_decode/, corpus/attempt_decode/, corpus/result_decode/, corpus/job_command_decode/,
corpus/job_state_decode/, corpus/endpoint_decode/, corpus/retry_after/ and corpus/task_json/ (the gateway's JSON bodies, first byte 0 = /submit, 1 = /api/task/done) and
corpus/job_json/ (the jobs' JSON bodies, 0 = /jobs, 1 = an action, 2 = /jobs/preview) and
corpus/endpoint_json/ (0 = /groups, 1 = /limits, 2 = /groups/delete, 3 = /limits/delete). Valid records are
encoded by fastavro (an independent implementation), framed both ways; the
rest are crafted to reach each error path. Rerun after a schema change:
    python3 tests/fuzz/make_corpus.py [CORPUS...]
Files named found-* were found by libFuzzer and are kept as they are."""
import io
import json
import os
import struct
import sys

try:
    import fastavro
    from fastavro.schema import fingerprint, parse_schema, to_parsing_canonical_form
except ImportError:
    sys.exit("make_corpus.py needs fastavro: pip install fastavro")

HERE = os.path.dirname(os.path.abspath(__file__))
ONLY = set(sys.argv[1:])  # corpus names to write (default: all)
SCHEMAS = os.path.join(HERE, "..", "..", "schemas")


def load(name):
    """(parsed schema, single-object header) of schemas/<name>.avsc, or of an
    earlier version kept as schemas/previous/<name>.avsc."""
    path = os.path.join(SCHEMAS, name + ".avsc")
    if not os.path.exists(path):
        path = os.path.join(SCHEMAS, "previous", name + ".avsc")
    with open(path) as f:
        raw = json.load(f)
    pcf = to_parsing_canonical_form(raw)
    header = b"\xc3\x01" + bytes.fromhex(fingerprint(pcf, "CRC-64-AVRO"))
    return parse_schema(raw), header


def avro(schema, rec):
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, schema, rec)
    return buf.getvalue()


def zz(v):
    """Avro long: zigzag varint."""
    z = ((v << 1) ^ (v >> 63)) & ((1 << 64) - 1)
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def s(text):
    b = text.encode() if isinstance(text, str) else text
    return zz(len(b)) + b


def write(dirname, files):
    if ONLY and dirname not in ONLY:
        return
    d = os.path.join(HERE, "corpus", dirname)
    os.makedirs(d, exist_ok=True)
    for old in os.listdir(d):
        if not old.startswith("found-"):
            os.remove(os.path.join(d, old))
    for name, data in files.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    print("%s: %d seed files" % (dirname, len(files)))


command, CMD = load("Command")
wheel, WHEEL = load("WheelEntry")

TASK = {
    "app_id": "shop", "task_id": "0193a5b2-7c1e-7def-8000-1234567890ab", "due_at": 1767225600000,
    "callback": {"url": "https://orders.example.com/orders/42/expire", "method": "POST",
                 "headers": {"Content-Type": "application/json", "X-Trace": "caf\u00e9"},
                 "body": b'{"order":42}', "timeout_ms": 30000},
    "retry": {"max_attempts": 5, "initial_backoff_ms": 1000, "multiplier": 2.0,
              "max_backoff_ms": 3600000},
    "attempt": 1, "created_at": 1767223800000, "metadata": {"tenant": "t1"},
}
MINIMAL = {"app_id": "a", "task_id": "t", "due_at": 0,
           "callback": {"url": "", "method": "", "headers": {}, "body": b"", "timeout_ms": 0},
           "retry": None, "attempt": 1, "created_at": 0, "metadata": {}}
UNICODE = dict(TASK, app_id="\u5e97", task_id="\U0001f319/\u00e9",
               callback=dict(TASK["callback"], headers={"\u4e2d": "\u65e5\u672c"},
                             body="\u2615".encode() * 100),
               metadata={"\U0001f680": ""})
CANCEL = {"app_id": "shop", "task_id": "0193a5b2-7c1e-7def-8000-1234567890ab",
          "requested_at": 1767225000000}

submit_body = avro(command, {"payload": ("mooncake.Submit", {"task": TASK})})
minimal_body = avro(command, {"payload": ("mooncake.Submit", {"task": MINIMAL})})
cancel_body = avro(command, {"payload": ("mooncake.Cancel", CANCEL)})
unicode_body = avro(command, {"payload": ("mooncake.Submit", {"task": UNICODE})})
big_body = avro(command, {"payload": ("mooncake.Submit", {"task": dict(
    TASK, callback=dict(TASK["callback"], body=bytes(range(256)) * 16))})})

# The Submit prefix up to callback.headers, and the tail after it.
prefix = zz(0) + s("app") + s("task") + zz(1000) + s("https://x") + s("POST")
suffix = zz(0) + zz(5000) + zz(0) + zz(1) + zz(2000) + zz(0)

cmd = {
    "valid-submit": CMD + submit_body,
    "valid-submit-minimal": CMD + minimal_body,
    "valid-cancel": CMD + cancel_body,
    "valid-unicode": CMD + unicode_body,
    "valid-big-body": CMD + big_body,
    "valid-confluent-1-submit": b"\x00" + struct.pack(">i", 1) + submit_body,
    "valid-confluent-42-cancel": b"\x00" + struct.pack(">i", 42) + cancel_body,
    "valid-map-blocks": CMD + prefix + zz(1) + s("k1") + s("v1") + zz(-2) + zz(10) + s("k2")
    + s("v") + s("k3") + s("w") + zz(0) + suffix,
    "confluent-unknown-id": b"\x00" + struct.pack(">i", 7) + submit_body,
    "confluent-truncated": b"\x00\x00\x00",
    "empty": b"",
    "magic-c3-02": b"\xc3\x02" + CMD[2:] + cancel_body,
    "magic-other": b"\x42" + cancel_body,
    "header-only": CMD,
    "header-cut": CMD[:6],
    "truncated-mid-string": (CMD + submit_body)[:40],
    "truncated-before-metadata": (CMD + submit_body)[:-3],
    "unknown-fingerprint": WHEEL + cancel_body,
    "bad-union-payload": CMD + zz(2) + cancel_body[1:],
    "bad-union-negative": CMD + zz(-1),
    "bad-union-retry": CMD + prefix + zz(0) + zz(0) + zz(5000) + zz(5),
    "negative-length": CMD + zz(1) + zz(-1),
    "huge-length": CMD + zz(1) + zz(1 << 40) + b"abc",
    "huge-map-count": CMD + prefix + zz(1 << 40) + s("k") + s("v"),
    "map-block-size-mismatch": CMD + prefix + zz(-1) + zz(3) + s("k2") + s("v") + zz(0) + suffix,
    "map-count-int64-min": CMD + prefix + b"\xff" * 9 + b"\x01",
    "varint-11-bytes": CMD + zz(0) + s("a") + s("t") + b"\xff" * 10 + b"\x01",
    "varint-overflow": CMD + zz(0) + s("a") + s("t") + b"\xff" * 9 + b"\x02",
    "int-overflow-timeout": CMD + prefix + zz(0) + zz(0) + zz(1 << 31),
    "bad-utf8": CMD + zz(1) + s(b"\xff\xfe") + s("t") + zz(0),
    "nul-in-string": CMD + zz(1) + s(b"a\x00b") + s("t") + zz(0),
    "overlong-utf8": CMD + zz(1) + s(b"\xc0\x80") + s("t") + zz(0),
    "surrogate-utf8": CMD + zz(1) + s(b"\xed\xa0\x80") + s("t") + zz(0),
    "trailing-byte": CMD + cancel_body + b"\x00",
    "truncated-double": CMD + prefix + zz(0) + zz(0) + zz(5000) + zz(1) + zz(3) + zz(100) + b"\x00",
}

wheel_submit = avro(wheel, {"version": 12345, "payload": ("mooncake.Submit", {"task": TASK})})
wheel_cancel = avro(wheel, {"version": 12346, "payload": ("mooncake.Cancel", CANCEL)})
whl = {
    "valid-submit": WHEEL + wheel_submit,
    "valid-cancel": WHEEL + wheel_cancel,
    "valid-minimal": WHEEL + avro(wheel, {"version": 0,
                                          "payload": ("mooncake.Submit", {"task": MINIMAL})}),
    "valid-version-min": WHEEL + b"\xff" * 9 + b"\x01" + cancel_body,
    "command-fingerprint": CMD + cancel_body,
    "confluent-framing": b"\x00" + struct.pack(">i", 1) + wheel_cancel,
    "truncated-version": WHEEL + b"\x80\x80",
    "truncated-task": (WHEEL + wheel_submit)[:-10],
    "bad-union": WHEEL + zz(1) + zz(4),
    "trailing": WHEEL + wheel_cancel + b"\x01\x02",
    "bad-utf8-cancel": WHEEL + zz(1) + zz(1) + s(b"\x80") + s("t") + zz(0),
    "huge-string": WHEEL + zz(1) + zz(1) + zz((1 << 62) - 1),
    "empty": b"",
}

# Every crafted Command body also exercises the wheel decoder's shared
# Submit/Cancel paths once given the WheelEntry header and a version.
for name, data in cmd.items():
    if data.startswith(CMD) and not name.startswith("valid-"):
        whl["cmd-" + name] = WHEEL + zz(7) + data[len(CMD):]

attempt_schema, ATTEMPT = load("Attempt")
attempt_v1_schema, ATTEMPT_V1 = load("Attempt_v1")
ATT_V1 = {"task": TASK, "http_status": 503, "error": "HTTP 503",
          "response_snippet": b"<html>busy</html>", "retry_after_ms": 2000,
          "started_at": 1767225600001, "finished_at": 1767225600250, "permanent": False}
ATT = dict(ATT_V1, response_headers={"content-type": "text/html", "retry-after": "2"},
           response_size=17)
attempt_body = avro(attempt_schema, ATT)
attempt_v1_body = avro(attempt_v1_schema, ATT_V1)
att = {
    "valid-v1": ATTEMPT_V1 + attempt_v1_body,
    "truncated-v1": ATTEMPT_V1 + attempt_v1_body[:-3],
    "trailing-v1": ATTEMPT_V1 + attempt_v1_body + b"\x00",
    "bad-boolean-v1": ATTEMPT_V1 + attempt_v1_body[:-1] + b"\x02",
    "valid-503": ATTEMPT + attempt_body,
    "valid-timeout": ATTEMPT + avro(attempt_schema, dict(
        ATT, http_status=0, error="timed out after 30000 ms", response_snippet=b"",
        retry_after_ms=-1)),
    "valid-minimal": ATTEMPT + avro(attempt_schema, dict(
        ATT, task=MINIMAL, error="", response_snippet=b"", permanent=True)),
    "valid-unicode": ATTEMPT + avro(attempt_schema, dict(ATT, task=UNICODE, error="\u00e9chec")),
    "command-fingerprint": CMD + attempt_body,
    "truncated": (ATTEMPT + attempt_body)[:-5],
    "bad-boolean": ATTEMPT + attempt_v1_body[:-1] + b"\x02" + zz(0) + zz(0),
    "huge-headers": ATTEMPT + attempt_v1_body + zz(1 << 40),
    "trailing": ATTEMPT + attempt_body + b"\x00",
    "huge-snippet": ATTEMPT + avro(command, {"payload": ("mooncake.Submit", {"task": TASK})})[1:]
    + zz(503) + s("e") + zz(1 << 50),
    "empty": b"",
}

# Results: read by the jobs role (a job's occurrences) and mooncakectl, from
# a topic anyone with access can write.
result_schema, RESULT = load("Result")
result_v1_schema, RESULT_V1 = load("Result_v1")
RES_V1 = {"app_id": "shop", "task_id": "order-42", "attempt": 2, "due_at": 1767225600000,
          "started_at": 1767225600001, "finished_at": 1767225600250, "http_status": 503,
          "outcome": "FAILED_WILL_RETRY", "error": "HTTP 503; attempt 3 in 2000 ms"}
RES = dict(RES_V1, version=17, response_headers={"content-type": "application/json"},
           response_body=b'{"busy":true}', response_size=13)
result_body = avro(result_schema, RES)
result_v1_body = avro(result_v1_schema, RES_V1)
res = {
    "valid": RESULT + result_body,
    "valid-v1": RESULT_V1 + result_v1_body,
    "valid-succeeded": RESULT + avro(result_schema, dict(
        RES, outcome="SUCCEEDED", http_status=200, error="", response_body=b"ok",
        response_size=2)),
    "valid-cancelled": RESULT + avro(result_schema, dict(
        RES, outcome="CANCELLED", http_status=0, response_headers={}, response_body=b"",
        response_size=-1)),
    "valid-member": RESULT + avro(result_schema, dict(RES, member="http://billing.test:8080")),
    "truncated": (RESULT + result_body)[:-4],
    "truncated-v1": (RESULT_V1 + result_v1_body)[:-2],
    "trailing": RESULT + result_body + b"\x00",
    "v1-header-on-v2": RESULT_V1 + result_body,
    "bad-enum": RESULT_V1 + s("a") + s("t") + zz(1) + zz(1) + zz(2) + zz(3) + zz(200) + zz(9)
    + s(""),
    "huge-body": RESULT + result_v1_body + zz(1) + zz(0) + zz(1 << 50),
    "attempt-fingerprint": ATTEMPT + result_body,
    "empty": b"",
}

# Recurring jobs. The valid-* records double as fastavro fixtures:
# tests/unit/test_codec.c decodes them, compares them with the same values
# written in C, and checks that our encoder gives the very same bytes.
job_command, JOBCMD = load("JobCommand")
job_state, JOBSTATE = load("JobState")
JOB = {
    "app_id": "shop", "job_id": "nightly-report",
    "schedule": {"kind": "CRON", "cron": "0 30 2 * * MON-FRI", "time_zone": "Asia/Shanghai",
                 "interval_ms": 0},
    "start_at": 1767225600000, "end_at": 1798761600000, "max_runs": 1000,
    "misfire": "CATCH_UP", "catch_up_limit": 3, "misfire_threshold_ms": 60000,
    "overlap": "SERIAL", "paused": True,
    "callback": {"url": "https://reports.example.com/run", "method": "POST",
                 "headers": {"Content-Type": "application/json", "X-Trace": "caf\u00e9"},
                 "body": b'{"report":"daily"}', "timeout_ms": 120000},
    "retry": {"max_attempts": 3, "initial_backoff_ms": 500, "multiplier": 1.5,
              "max_backoff_ms": 60000},
    "metadata": {"team": "finance"}, "created_at": 1767223800000,
}
# Every field that has one at its default.
JOB_MINIMAL = {
    "app_id": "a", "job_id": "j",
    "schedule": {"kind": "FIXED_RATE", "cron": "", "time_zone": "UTC", "interval_ms": 1000},
    "start_at": 0, "end_at": 0, "max_runs": 0, "misfire": "FIRE_ONCE_NOW", "catch_up_limit": 10,
    "misfire_threshold_ms": 5000, "overlap": "PARALLEL", "paused": False,
    "callback": {"url": "", "method": "", "headers": {}, "body": b"", "timeout_ms": 0},
    "retry": None, "metadata": {}, "created_at": 0,
}
JOB_UNICODE = dict(JOB, app_id="\u5e97", job_id="\U0001f319/\u00e9",
                   schedule={"kind": "FIXED_DELAY", "cron": "", "time_zone": "Europe/Z\u00fcrich",
                             "interval_ms": 86400000},
                   misfire="DO_NOTHING", overlap="COVER_EARLY", paused=False,
                   metadata={"\U0001f680": "", "k": "\u65e5\u672c"})
ACTIONS = ["PAUSE", "RESUME", "DELETE", "TRIGGER"]
OUTCOMES = ["SUCCEEDED", "FAILED_WILL_RETRY", "FAILED_PERMANENTLY", "EXHAUSTED", "CANCELLED"]


def jobcmd(branch, rec):
    return avro(job_command, {"payload": ("mooncake." + branch, rec)})


put_body = jobcmd("PutJob", {"job": JOB})
action_body = jobcmd("JobAction", {"app_id": "shop", "job_id": "nightly-report",
                                   "action": "TRIGGER", "requested_at": 1767225000000})
done_body = jobcmd("OccurrenceDone", {"app_id": "shop", "job_id": "nightly-report",
                                      "scheduled_at": 1767225600000, "outcome": "EXHAUSTED",
                                      "finished_at": 1767225601234})
job_bytes = put_body[1:]  # after the union branch


def job_head(kind=0, app="app", job="job"):
    """A Job up to (not including) misfire."""
    return s(app) + s(job) + zz(kind) + s("* * * * *") + s("UTC") + zz(0) + zz(0) + zz(0) + zz(0)


def job_tail(misfire=0, overlap=0, paused=b"\x00", retry=zz(0), meta=zz(0)):
    """A Job from misfire to its end (callback without headers or body)."""
    return (zz(misfire) + zz(10) + zz(5000) + zz(overlap) + paused + s("https://x") + s("GET")
            + zz(0) + zz(0) + zz(1000) + retry + meta + zz(7))


jc = {
    "valid-put": JOBCMD + put_body,
    "valid-put-minimal": JOBCMD + jobcmd("PutJob", {"job": JOB_MINIMAL}),
    "valid-put-unicode": JOBCMD + jobcmd("PutJob", {"job": JOB_UNICODE}),
    "valid-crafted": JOBCMD + zz(0) + job_head() + job_tail(),
    "valid-put-map-blocks": JOBCMD + zz(0) + job_head() + job_tail(
        meta=zz(1) + s("k1") + s("v1") + zz(-2) + zz(10) + s("k2") + s("v") + s("k3") + s("w")
        + zz(0)),
    "empty": b"",
    "header-only": JOBCMD,
    "header-cut": JOBCMD[:6],
    "command-fingerprint": CMD + action_body,
    "job-state-fingerprint": JOBSTATE + action_body,
    "confluent-framing": b"\x00" + struct.pack(">i", 1) + action_body,
    "truncated-put": (JOBCMD + put_body)[:-4],
    "truncated-mid-job-id": (JOBCMD + put_body)[:30],
    "trailing-byte": JOBCMD + action_body + b"\x00",
    "bad-union-payload": JOBCMD + zz(8) + action_body[1:],
    "bad-union-negative": JOBCMD + zz(-1),
    "bad-union-retry": JOBCMD + zz(0) + job_head() + job_tail(retry=zz(2)),
    "bad-enum-kind": JOBCMD + zz(0) + job_head(kind=3) + job_tail(),
    "bad-enum-misfire": JOBCMD + zz(0) + job_head() + job_tail(misfire=3),
    "bad-enum-overlap": JOBCMD + zz(0) + job_head() + job_tail(overlap=4),
    "bad-enum-negative": JOBCMD + zz(0) + job_head(kind=-1) + job_tail(),
    "bad-boolean-paused": JOBCMD + zz(0) + job_head() + job_tail(paused=b"\x02"),
    "bad-enum-action": JOBCMD + zz(1) + s("a") + s("j") + zz(4) + zz(0),
    "bad-enum-outcome": JOBCMD + zz(2) + s("a") + s("j") + zz(0) + zz(5) + zz(0),
    "bad-utf8-cron": JOBCMD + zz(0) + s("a") + s("j") + zz(0) + s(b"\xc0\x80"),
    "nul-in-job-id": JOBCMD + zz(1) + s("a") + s(b"j\x00") + zz(0) + zz(0),
    "huge-length": JOBCMD + zz(1) + zz(1 << 40) + b"abc",
    "huge-map-count": JOBCMD + zz(0) + job_head() + job_tail(meta=zz(1 << 40) + s("k")),
    "map-count-int64-min": JOBCMD + zz(0) + job_head() + job_tail(meta=b"\xff" * 9 + b"\x01"),
    "varint-overflow": JOBCMD + zz(2) + s("a") + s("j") + b"\xff" * 9 + b"\x02",
    "int-overflow-catch-up": JOBCMD + zz(0) + job_head() + zz(2) + zz(1 << 31),
    "truncated-double": JOBCMD + zz(0) + job_head() + job_tail(
        retry=zz(1) + zz(3) + zz(100) + b"\x00\x00")[:-1],
}
jc["valid-add-link"] = JOBCMD + jobcmd("AddLink", {"ordering_key": "contract-42", "task": TASK})
jc["valid-cancel-link"] = JOBCMD + jobcmd("CancelLink", {
    "app_id": "shop", "ordering_key": "contract-42", "task_id": "renewal",
    "requested_at": 1767225000000})
jc["valid-link-done"] = JOBCMD + jobcmd("LinkDone", {
    "app_id": "shop", "ordering_key": "contract-42", "task_id": "renewal", "link": 77,
    "outcome": "EXHAUSTED", "finished_at": 1767225601234})
jc["valid-start-broadcast"] = JOBCMD + jobcmd("StartBroadcast", {
    "task": TASK, "version": 4242, "members": ["http://a:8080", "http://b.svc (10.0.0.7)"],
    "fired_at": 1767225600000,
    "ended": [{"shard": 1, "outcome": "SUCCEEDED", "finished_at": 1767225601234}]})
jc["valid-shard-done"] = JOBCMD + jobcmd("ShardDone", {
    "app_id": "shop", "task_id": "fan-out", "version": 4242, "shard": 2, "outcome": "EXHAUSTED",
    "finished_at": 1767225601234})
jc["bad-shard-int-overflow"] = JOBCMD + zz(7) + s("a") + s("t") + zz(1) + zz(1 << 31)
for a in ACTIONS:
    jc["valid-action-" + a.lower()] = JOBCMD + jobcmd("JobAction", {
        "app_id": "shop", "job_id": "nightly-report", "action": a, "requested_at": 1767225000000})
for o in OUTCOMES:
    jc["valid-done-" + o.lower()] = JOBCMD + jobcmd("OccurrenceDone", {
        "app_id": "shop", "job_id": "nightly-report", "scheduled_at": 1767225600000,
        "outcome": o, "finished_at": 1767225601234})

STATE = {"version": 4242, "status": "PAUSED", "next_at": 1767312000000, "runs": 17,
         "last_scheduled_at": 1767225600000,
         "running": [{"scheduled_at": 1767139200000, "due_at": 1767139200000},
                     {"scheduled_at": 1767225600000, "due_at": 1767225660000},
                     {"scheduled_at": -1, "due_at": 0}],
         "queued_at": 1767312000000, "skipped": 2, "updated_at": 1767225601000, "job": JOB}
state_body = avro(job_state, STATE)


def state_head(status=0, running=zz(0)):
    """A JobState up to its job."""
    return zz(1) + zz(status) + zz(-1) + zz(0) + zz(-1) + running + zz(-1) + zz(0) + zz(5)


js = {
    "valid-paused": JOBSTATE + state_body,
    "valid-active-minimal": JOBSTATE + avro(job_state, dict(
        STATE, status="ACTIVE", version=0, next_at=-1, runs=0, last_scheduled_at=-1, running=[],
        queued_at=-1, skipped=0, updated_at=0, job=JOB_MINIMAL)),
    "valid-ended-unicode": JOBSTATE + avro(job_state, dict(STATE, status="ENDED",
                                                           job=JOB_UNICODE)),
    "valid-crafted": JOBSTATE + state_head() + job_head() + job_tail(),
    # running: [{5, 8}] then, with a byte size, [{6, 9}, {-7, -1}].
    "valid-array-blocks": JOBSTATE + state_head(
        running=zz(1) + zz(5) + zz(8) + zz(-2) + zz(4) + zz(6) + zz(9) + zz(-7) + zz(-1) + zz(0))
    + job_head() + job_tail(),
    "empty": b"",
    "header-only": JOBSTATE,
    "job-command-fingerprint": JOBCMD + state_body,
    "confluent-framing": b"\x00" + struct.pack(">i", 1) + state_body,
    "truncated": (JOBSTATE + state_body)[:-3],
    # One item, cut after its scheduled_at (2 bytes, so the count fits).
    "truncated-running": JOBSTATE + zz(1) + zz(0) + zz(0) + zz(0) + zz(0) + zz(1) + zz(100),
    "trailing": JOBSTATE + state_body + b"\x01",
    "bad-enum-status": JOBSTATE + state_head(status=3) + job_head() + job_tail(),
    "bad-enum-job-kind": JOBSTATE + state_head() + job_head(kind=7) + job_tail(),
    "huge-array-count": JOBSTATE + state_head(running=zz(1 << 40) + zz(1)),
    # 3 items need 6 bytes; 1 + 3 remain.
    "array-count-exceeds-items": JOBSTATE + state_head(running=zz(3) + zz(1)),
    "array-block-size-mismatch": JOBSTATE + state_head(
        running=zz(-1) + zz(3) + zz(5) + zz(8) + zz(0))
    + job_head() + job_tail(),
    "array-count-int64-min": JOBSTATE + zz(1) + zz(0) + zz(0) + zz(0) + zz(0)
    + b"\xff" * 9 + b"\x01",
    "array-varint-overflow": JOBSTATE + state_head(running=zz(1) + b"\xff" * 9 + b"\x02"),
    "array-varint-overflow-due-at": JOBSTATE + state_head(
        running=zz(1) + zz(3) + b"\xff" * 9 + b"\x02"),
    "bad-utf8-time-zone": JOBSTATE + state_head() + s("a") + s("j") + zz(0) + s("") + s(b"\xff"),
}

retry_after = {
    "seconds": b"120",
    "zero": b"0",
    "spaces": b"  \t 7 \t",
    "imf-fixdate": b"Sun, 06 Nov 1994 08:49:37 GMT",
    "imf-future": b"Wed, 21 Oct 2037 07:28:00 GMT",
    "rfc850": b"Sunday, 06-Nov-94 08:49:37 GMT",
    "asctime": b"Sun Nov  6 08:49:37 1994",
    "huge-seconds": b"99999999999999999999999",
    "negative": b"-5",
    "float": b"1.5",
    "bad-month": b"Sun, 06 Foo 1994 08:49:37 GMT",
    "feb-30": b"Sun, 30 Feb 2031 08:49:37 GMT",
    "hour-25": b"Sun, 06 Nov 1994 25:49:37 GMT",
    "nul-inside": b"12\x003",
    "empty": b"",
}

def body(route, obj_or_text):
    text = obj_or_text if isinstance(obj_or_text, str) else json.dumps(obj_or_text)
    return bytes([route]) + text.encode()


CB = {"url": "https://shop.example.com/hook"}
task_json = {
    "submit-delay": body(0, {"appId": "shop", "delayMs": 30000, "callback": CB}),
    "submit-full": body(0, {"appId": "shop", "uuid": "order-42", "expireTime": 1795330060000,
                            "callback": {"url": "http://a.example/x", "method": "put",
                                         "headers": {"X-A": "1", "Content-Type": "text/plain"},
                                         "body": "caf\u00e9", "timeoutMs": 5000},
                            "retry": {"maxAttempts": 3, "initialBackoffMs": 10, "multiplier": 1.5,
                                      "maxBackoffMs": 100},
                            "metadata": {"k": "v"}, "unknown": [1, {"x": None}]}),
    "submit-partial-retry": body(0, {"appId": "a", "delayMs": 0, "callback": CB,
                                     "retry": {"maxAttempts": 2}}),
    "submit-null-uuid": body(0, {"appId": "a", "uuid": None, "delayMs": 1, "callback": CB}),
    "both-times": body(0, {"appId": "a", "delayMs": 1, "expireTime": 1795330060000, "callback": CB}),
    "seconds": body(0, {"appId": "a", "expireTime": 1795330060, "callback": CB}),
    "wrong-types": body(0, {"appId": 1, "delayMs": "1", "callback": "x"}),
    "reserved-header": body(0, {"appId": "a", "delayMs": 1,
                                "callback": {"url": "http://x", "headers": {"webhook-id": "f"}}}),
    "crlf-header": body(0, {"appId": "a", "delayMs": 1,
                            "callback": {"url": "http://x", "headers": {"X": "a\r\nB: c"}}}),
    "slash-app": body(0, {"appId": "a/b", "delayMs": 1, "callback": CB}),
    "control-uuid": body(0, {"appId": "a", "uuid": "x\u0001", "delayMs": 1, "callback": CB}),
    "nul-escape": body(0, '{"appId":"a\u0000","delayMs":1,"callback":{"url":"http://x"}}'),
    "duplicate-key": body(0, '{"appId":"a","appId":"b"}'),
    "deep": body(0, "[" * 3000 + "]" * 3000),
    "truncated": body(0, '{"appId":"a","callback":{"url":"http'),
    "huge-int": body(0, '{"appId":"a","delayMs":99999999999999999999999,"callback":{}}'),
    "array": body(0, "[]"),
    "empty": body(0, ""),
    "kafka-target-text": body(0, {"appId": "shop", "uuid": "order-42", "delayMs": 1000,
                                  "kafkaTarget": {"topic": "orders.expired", "key": "order-42",
                                                  "value": "{\"id\":42}",
                                                  "headers": {"trace": "t-1"}},
                                  "latePolicy": {"maxLateMs": 5000, "action": "DROP"}}),
    "kafka-target-base64": body(0, {"appId": "shop", "delayMs": 1,
                                    "kafkaTarget": {"topic": "t", "keyBase64": "AAEC",
                                                    "valueBase64": "/w=="}}),
    "kafka-target-tombstone": body(0, {"appId": "shop", "delayMs": 1,
                                       "kafkaTarget": {"topic": "t", "key": "k", "value": None}}),
    "kafka-target-and-callback": body(0, {"appId": "a", "delayMs": 1, "callback": CB,
                                          "kafkaTarget": {"topic": "t"}}),
    "kafka-target-bad-base64": body(0, {"appId": "a", "delayMs": 1,
                                        "kafkaTarget": {"topic": "t", "valueBase64": "a=b"}}),
    "late-policy-bad-action": body(0, {"appId": "a", "delayMs": 1, "callback": CB,
                                       "latePolicy": {"maxLateMs": -1, "action": "SKIP"}}),
    "on-success": body(0, {"appId": "shop", "uuid": "order-42", "delayMs": 1, "callback": CB,
                           "onSuccess": [
                               {"callback": {"url": "https://shop.example.com/paid",
                                             "headers": {"X-A": "1"}},
                                "retry": {"maxAttempts": 2},
                                "latePolicy": {"maxLateMs": 100, "action": "DEAD"}},
                               {"uuid": "order-42-audit", "delayMs": 60000,
                                "kafkaTarget": {"topic": "audit", "key": "order-42",
                                                "valueBase64": "AP8="}}]}),
    "on-success-bad": body(0, {"appId": "a", "delayMs": 1, "callback": CB,
                               "onSuccess": [{"uuid": "", "delayMs": -1,
                                              "callback": {"url": "ftp://x"},
                                              "onSuccess": []}, 5]}),
    "submit-ordering-key": body(0, {"appId": "shop", "uuid": "renew-42", "delayMs": 1000,
                                    "orderingKey": "contract-42", "callback": CB}),
    "submit-ordering-key-kafka": body(0, {"appId": "shop", "delayMs": 1,
                                          "orderingKey": "contract/42 \u00e9",
                                          "kafkaTarget": {"topic": "t", "key": "k"}}),
    "submit-ordering-key-bad": body(0, {"appId": "a", "delayMs": 1, "orderingKey": "a\u0001",
                                        "callback": CB}),
    "submit-ordering-key-long": body(0, {"appId": "a", "delayMs": 1, "orderingKey": "k" * 257,
                                         "callback": CB}),
    "cancel": body(1, {"appId": "shop", "uuid": "order-42"}),
    "cancel-ordering-key": body(1, {"appId": "shop", "uuid": "renew-42",
                                    "orderingKey": "contract-42"}),
    "cancel-ordering-key-empty": body(1, {"appId": "shop", "uuid": "x", "orderingKey": ""}),
    "cancel-missing-uuid": body(1, {"appId": "shop"}),
    "cancel-empty-app": body(1, {"appId": "", "uuid": "x"}),
}

# The jobs' JSON bodies (fuzz_job_json.c): first byte 0 = POST /jobs, 1 = an
# action, 2 = /jobs/preview.
JOB_CB = {"url": "https://shop.example.com/report"}
job_json = {
    "put-cron": body(0, {"appId": "shop", "jobId": "nightly-report",
                         "schedule": {"cron": "0 0 2 * * ?", "timeZone": "Asia/Shanghai"},
                         "overlap": "SERIAL", "callback": JOB_CB}),
    "put-full": body(0, {"appId": "shop", "jobId": "j1",
                         "schedule": {"cron": "0 30 2 L-2 * ?", "timeZone": "Europe/Berlin"},
                         "startTime": 1795000000000, "endTime": 1900000000000, "maxRuns": 10,
                         "misfire": "catch_up", "catchUpLimit": 3, "misfireThresholdMs": 1000,
                         "overlap": "COVER_EARLY", "paused": True,
                         "callback": {"url": "http://a.example/x", "method": "put",
                                      "headers": {"X-A": "1"}, "body": "caf\u00e9",
                                      "timeoutMs": 5000},
                         "retry": {"maxAttempts": 3}, "metadata": {"k": "v"}, "x": [1]}),
    "put-rate": body(0, {"appId": "a", "jobId": "r", "schedule": {"fixedRateMs": 60000},
                         "callback": JOB_CB}),
    "put-kafka-target": body(0, {"appId": "shop", "jobId": "tick",
                                 "schedule": {"fixedRateMs": 60000},
                                 "kafkaTarget": {"topic": "orders.tick", "key": "k",
                                                 "valueBase64": "YQBi", "headers": {"h": "v"}},
                                 "latePolicy": {"maxLateMs": 500, "action": "DROP"},
                                 "onSuccess": [{"delayMs": 10, "callback": JOB_CB},
                                               {"uuid": "own", "kafkaTarget": {"topic": "t2"},
                                                "retry": {"maxAttempts": 2}}]}),
    "put-kafka-target-and-callback": body(0, {"appId": "a", "jobId": "b",
                                              "schedule": {"fixedRateMs": 60000},
                                              "callback": JOB_CB,
                                              "kafkaTarget": {"topic": "t"},
                                              "onSuccess": [{}]}),
    "put-delay": body(0, {"appId": "a", "jobId": "d", "schedule": {"fixedDelayMs": 1000},
                          "startTime": 1800000000000, "callback": JOB_CB}),
    "put-classic-five": body(0, {"appId": "a", "jobId": "c",
                                 "schedule": {"cron": "*/15 9-17 * * MON-FRI"},
                                 "callback": JOB_CB}),
    "never-fires": body(0, {"appId": "a", "jobId": "n", "schedule": {"cron": "0 0 0 30 2 ?"},
                            "callback": JOB_CB}),
    "unknown-zone": body(0, {"appId": "a", "jobId": "z",
                             "schedule": {"cron": "@daily", "timeZone": "Mars/Base"},
                             "callback": JOB_CB}),
    "two-kinds": body(0, {"appId": "a", "jobId": "k",
                          "schedule": {"cron": "@daily", "fixedRateMs": 5000},
                          "callback": JOB_CB}),
    "rate-zero": body(0, {"appId": "a", "jobId": "k", "schedule": {"fixedRateMs": 0},
                          "callback": JOB_CB}),
    "seconds": body(0, {"appId": "a", "jobId": "s", "schedule": {"cron": "@hourly"},
                        "startTime": 1795000000, "callback": JOB_CB}),
    "bad-enum": body(0, {"appId": "a", "jobId": "e", "schedule": {"cron": "@hourly"},
                         "misfire": "LATER", "callback": JOB_CB}),
    "wrong-types": body(0, {"appId": 1, "jobId": [], "schedule": "x"}),
    "duplicate-key": body(0, '{"appId":"a","appId":"b"}'),
    "empty": body(0, ""),
    "action": body(1, {"appId": "shop", "jobId": "nightly-report"}),
    "action-trigger": body(10, {"appId": "shop", "jobId": "nightly-report"}),
    "action-slash-app": body(1, {"appId": "a/b", "jobId": "j"}),
    "preview": body(2, {"schedule": {"cron": "0 30 2 * * ?", "timeZone": "Europe/Berlin"},
                        "count": 20}),
    "preview-rate": body(2, {"schedule": {"fixedRateMs": 1000}, "startTime": 1795330000000,
                             "endTime": 1795330003000, "count": 100}),
    "preview-count": body(2, {"schedule": {"cron": "@daily"}, "count": 0}),
}

# Schema resolution: bodies written with the previous and the next version
# of Command; the first byte picks the framing (see fuzz_command_resolve.c).
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import command_versions  # noqa: E402

prev_schema = parse_schema(command_versions.previous())
next_schema = parse_schema(command_versions.next_version())
PREV_TASK = {k: v for k, v in TASK.items() if k not in ("retry", "attempt", "metadata")}
NEXT_TASK = dict(TASK, priority=3, callback=dict(TASK["callback"], tags=["a", "b"]))
prev_submit = avro(prev_schema, {"payload": ("mooncake.Submit", {"task": PREV_TASK})})
next_submit = avro(next_schema, {"payload": ("mooncake.Submit", {"task": NEXT_TASK})})
next_cancel = avro(next_schema, {"payload": ("mooncake.Cancel", dict(CANCEL, reason="paid"))})
resolve = {
    "valid-previous-submit": b"\x00" + prev_submit,
    "valid-previous-cancel": b"\x00" + avro(prev_schema, {"payload": ("mooncake.Cancel",
                                                                      CANCEL)}),
    "valid-previous-confluent": b"\x02" + prev_submit,
    "valid-next-submit": b"\x01" + next_submit,
    "valid-next-cancel": b"\x01" + next_cancel,
    "previous-truncated": b"\x00" + prev_submit[:30],
    "next-bad-union": b"\x01" + zz(5) + next_submit[1:],
    "next-trailing": b"\x01" + next_cancel + b"\x00",
    "next-huge-tags": b"\x01" + next_submit[:60] + zz(1 << 40),
    "empty-body": b"\x00",
}

# Endpoint groups and admission limits: read by every executor and gateway
# from the endpoints topic.
endpoint_schema, ENDPOINT = load("Endpoint")
GROUP = {"app_id": "shop", "name": "billing",
         "members": ["http://10.0.0.1:8080", "https://b.example.com/api"],
         "dns": ["http://billing.default.svc.cluster.local:8080"], "strategy": "ROUND_ROBIN",
         "member_concurrency": 4, "unhealthy_ms": 10000, "updated_at": 1767225600000}
LIMIT = {"scope": "HOST", "name": "api.example.com", "max_concurrent": 50,
         "max_per_second": 2000.0, "updated_at": 1767225600000}
group_body = avro(endpoint_schema, {"payload": ("mooncake.EndpointGroup", GROUP)})
limit_body = avro(endpoint_schema, {"payload": ("mooncake.AdmissionLimit", LIMIT)})
ep = {
    "valid-group": ENDPOINT + group_body,
    "valid-group-empty": ENDPOINT + avro(endpoint_schema, {"payload": (
        "mooncake.EndpointGroup", dict(GROUP, members=[], dns=[], strategy="SHARDING_BROADCAST",
                                       member_concurrency=0))}),
    "valid-limit": ENDPOINT + limit_body,
    "valid-limit-app": ENDPOINT + avro(endpoint_schema, {"payload": (
        "mooncake.AdmissionLimit", dict(LIMIT, scope="APP", name="\u5e97", max_concurrent=0,
                                        max_per_second=0.5))}),
    "truncated": (ENDPOINT + group_body)[:-3],
    "trailing": ENDPOINT + limit_body + b"\x00",
    "bad-union": ENDPOINT + zz(2),
    "bad-strategy": ENDPOINT + zz(0) + s("a") + s("g") + zz(0) + zz(0) + zz(10),
    "bad-scope": ENDPOINT + zz(1) + zz(2),
    "huge-members": ENDPOINT + zz(0) + s("a") + s("g") + zz(1 << 40),
    "negative-block": ENDPOINT + zz(0) + s("a") + s("g") + zz(-1) + zz(3) + s("ab") + zz(0)
    + zz(0) + zz(0) + zz(0) + zz(0) + zz(0),
    "bad-utf8": ENDPOINT + zz(0) + s("a") + s(b"\xff") + zz(0),
    "result-fingerprint": RESULT + group_body,
    "empty": b"",
}

# Endpoint groups' and limits' JSON bodies; the first byte picks the route (0 POST
# /groups, 1 POST /limits, 2 /groups/delete, 3 /limits/delete).
def ej(route, obj_or_text):
    text = obj_or_text if isinstance(obj_or_text, str) else json.dumps(obj_or_text)
    return bytes([route]) + text.encode()


endpoint_json = {
    "group": ej(0, {"appId": "shop", "name": "billing",
                    "members": ["https://b1.example.com/", "http://10.0.0.1:8080/api"],
                    "dns": ["http://billing.svc.cluster.local:8080", "http://[fd00::1]:81"],
                    "strategy": "BUSYOVER", "memberConcurrency": 3, "unhealthyMs": 500}),
    "group-minimal": ej(0, {"appId": "a", "name": "g", "dns": ["http://x"]}),
    "group-bad-url": ej(0, {"appId": "a", "name": "g", "members": ["http://u@x/?q#f"]}),
    "group-bad-name": ej(0, {"appId": "a", "name": "a/b", "members": ["http://x"]}),
    "group-too-many": ej(0, {"appId": "a", "name": "g",
                             "members": ["http://h%d" % i for i in range(65)]}),
    "limit-host": ej(1, {"scope": "host", "name": "API.example.com", "maxConcurrent": 50,
                         "maxPerSecond": 2000.5}),
    "limit-app": ej(1, {"scope": "app", "name": "shop", "maxPerSecond": 1}),
    "limit-port": ej(1, {"scope": "host", "name": "h:80", "maxConcurrent": 1}),
    "limit-none": ej(1, {"scope": "host", "name": "h"}),
    "delete-group": ej(2, {"appId": "shop", "name": "billing"}),
    "delete-limit": ej(3, {"scope": "app", "name": "shop"}),
    "not-json": ej(0, "{"),
    "empty": b"",
}

write("command_decode", cmd)
write("command_resolve", resolve)
write("wheel_entry_decode", whl)
write("attempt_decode", att)
write("result_decode", res)
write("job_command_decode", jc)
write("job_state_decode", js)
write("endpoint_decode", ep)
write("retry_after", retry_after)
write("task_json", task_json)
write("job_json", job_json)
write("endpoint_json", endpoint_json)
