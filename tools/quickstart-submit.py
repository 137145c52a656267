#!/usr/bin/env python3
"""Submits a few tasks through the gateway (POST /submit, /api/task/done) and one malformed
record straight to mooncake.tasks the way any Kafka client would, waits for them and
tells what became of each, from the committed records of mooncake.results and mooncake.dead and from the log
of the local endpoint the tasks call (run with --serve): tasks called on time (with their
lateness as the endpoint saw it), a cancelled task never called, a task whose first call
fails and is retried, the dead-letter reason of a malformed record, a task due beyond
the horizon (MOONCAKE_HORIZON_MS, default 60000) held by the store, and a recurring job
(POST /jobs: every 2 s, each occurrence a task) deleted after three occurrences.
Usage: tools/quickstart-submit.py [BOOTSTRAP] [PREFIX] [--gateway URL] [--token TOKEN]
                                  [--endpoint URL] [--endpoint-log FILE]
                                  [--store-metrics URL] [--warm-up]
       tools/quickstart-submit.py --serve PORT     the endpoint (tools/quickstart starts it)"""
import argparse
import base64
import datetime
import hashlib
import hmac
import http.server
import io
import json
import os
import re
import sys
import threading
import time
import urllib.parse
import urllib.request
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATE = os.path.join(os.environ.get("TMPDIR") or "/tmp", "mooncake-quickstart")
ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("bootstrap", nargs="?", default="127.0.0.1:9092")
ap.add_argument("prefix", nargs="?", default="mooncake.")
ap.add_argument("--endpoint", default="http://127.0.0.1:8090",
                help="base URL of the endpoint the tasks call (default %(default)s)")
ap.add_argument("--endpoint-log", default=os.path.join(STATE, "endpoint.log"),
                help="the endpoint's log, read for the story (default %(default)s)")
ap.add_argument("--gateway", default="http://127.0.0.1:8080",
                help="the gateway's base URL (default %(default)s)")
ap.add_argument("--token", default=os.environ.get("MOONCAKE_QUICKSTART_TOKEN", ""),
                help="the app shop's bearer token for the gateway")
ap.add_argument("--store-metrics",
                help="the store's /metrics URL (default: the gateway's /metrics, as in "
                     "mooncake all)")
ap.add_argument("--follow", type=float, default=25.0,
                help="wait at most this many seconds for the outcomes (default 25)")
ap.add_argument("--warm-up", action="store_true",
                help="first send one task due now and one malformed record through a "
                     "freshly started broker and wait for their outcomes")
ap.add_argument("--serve", type=int, metavar="PORT",
                help="run the demo endpoint on 127.0.0.1:PORT instead: log every request "
                     "on stdout, verify webhook signatures with MOONCAKE_APP_SECRETS, "
                     "answer 500 to the first call of each /flaky/... path, else 200")
args = ap.parse_args()
prefix = args.prefix

# ---- the endpoint (--serve) ---------------------------------------------------------------
# One line per request, logfmt after the local time:
#   2025-01-31 12:00:03.001 POST /hook/x idempotency-key=shop/x:1 signature=valid late=+1ms status=200
# late = arrival - the task's x-due header (its due time, epoch ms; a retry carries the
# first attempt's) or, for a job's occurrence, its mooncake-scheduled-at header, signature = valid | INVALID | unsigned | no-secret (Standard Webhooks:
# v1,base64(HMAC-SHA256(key, webhook-id "." webhook-timestamp "." body))).
LINE = re.compile(r"^(\S+ \S+) (\S+) (\S+)((?: \S+=\S*)*)$")


def parse_secrets(spec):
    """MOONCAKE_APP_SECRETS, "app=whsec_<base64>,..." (as the executor reads it) -> {app: [key]}."""
    keys = {}
    for entry in (spec or "").split(","):
        if "=" not in entry:
            continue
        app, secret = (s.strip() for s in entry.split("=", 1))
        secret = secret[len("whsec_"):] if secret.startswith("whsec_") else secret
        keys.setdefault(app, []).append(base64.b64decode(secret))
    return keys


def serve(port):
    secrets = parse_secrets(os.environ.get("MOONCAKE_APP_SECRETS"))
    seen, lock = set(), threading.Lock()

    def verify(h, body):
        sig, mid, ts = h.get("webhook-signature"), h.get("webhook-id"), h.get("webhook-timestamp")
        if not sig:
            return "unsigned"
        keys = secrets.get((mid or "").split("/")[0])
        if not keys:
            return "no-secret"
        try:
            fresh = abs(time.time() - int(ts)) <= 300  # a replayed old call fails
        except (TypeError, ValueError):
            return "INVALID"
        for k in keys:
            mac = hmac.new(k, f"{mid}.{ts}.".encode() + body, hashlib.sha256).digest()
            want = "v1," + base64.b64encode(mac).decode()
            if fresh and any(hmac.compare_digest(want, s) for s in sig.split()):
                return "valid"
        return "INVALID"

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the executor reuses its connections
        disable_nagle_algorithm = True

        def log_message(self, *a):
            pass

        def handle_call(self):
            at = time.time()
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else b""
            path = urllib.parse.urlsplit(self.path).path
            with lock:
                first = path not in seen
                seen.add(path)
            status = 500 if first and path.startswith("/flaky/") else 200
            try:
                due = self.headers.get("x-due") or self.headers.get("mooncake-scheduled-at")
                late = "%+dms" % round(at * 1000 - int(due))
            except (TypeError, ValueError):
                late = "?"
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at)) + ".%03d" % (at % 1 * 1000)
            key = self.headers.get("Idempotency-Key", "-").replace(" ", "_")
            print(f"{stamp} {self.command} {path} idempotency-key={key} "
                  f"signature={verify(self.headers, body)} late={late} status={status}", flush=True)
            out = (b'{"ok":true}\n' if status == 200
                   else b'{"error":"the demo endpoint fails the first call of /flaky/ paths"}\n')
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(out)
            except OSError:  # the caller gave up
                self.close_connection = True

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = handle_call

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True

    srv = Server(("127.0.0.1", port), Handler)
    print(f"# demo endpoint on http://127.0.0.1:{port}: one line per request; late = arrival - "
          "x-due (the task's due time; a retry carries its first attempt's); /flaky/<x> "
          "answers 500 the first time", flush=True)
    srv.serve_forever()


if args.serve is not None:
    try:
        serve(args.serve)
    except KeyboardInterrupt:
        pass
    sys.exit(0)

# ---- the client -----------------------------------------------------------------------------
import fastavro  # noqa: E402 (not needed by the endpoint)
import fastavro.schema  # noqa: E402
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402

horizon_ms = int(os.environ.get("MOONCAKE_HORIZON_MS", "60000"))
far_ms = max(90_000, horizon_ms + 30_000)  # beyond the horizon: the store keeps it
endpoint = args.endpoint.rstrip("/")


def schema(name):
    with open(os.path.join(ROOT, "schemas", name + ".avsc")) as f:
        j = json.load(f)
    fp = fastavro.schema.fingerprint(fastavro.schema.to_parsing_canonical_form(j), "CRC-64-AVRO")
    return fastavro.parse_schema(j), b"\xc3\x01" + bytes.fromhex(fp)


def encode(name, rec):
    s, header = schema(name)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, s, rec)
    return header + buf.getvalue()


def decode(name, data):
    s, header = schema(name)
    if data is None or data[:10] != header:
        return None
    return fastavro.schemaless_reader(io.BytesIO(data[10:]), s, return_record_name=True)


def ms(v):
    """fastavro decodes timestamp-millis to a datetime: back to epoch ms."""
    return round(v.timestamp() * 1000) if hasattr(v, "timestamp") else v


def gateway(path, body):
    """POSTs JSON to the gateway; returns (HTTP status, answer as a dict)."""
    req = urllib.request.Request(args.gateway.rstrip("/") + path, data=json.dumps(body).encode(),
                                 method="POST",
                                 headers={"Content-Type": "application/json",
                                          "Authorization": "Bearer " + args.token})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def submit(tid, due, path, retry=None):
    """The gateway's JSON task (the Java system's format): expireTime is the due time."""
    return {"appId": "shop", "uuid": tid, "expireTime": due,
            "callback": {"url": endpoint + path, "method": "POST",
                         "headers": {"content-type": "application/json", "x-due": str(due)},
                         "body": '{"order":"%s"}' % tid, "timeoutMs": 10000},
            **({"retry": retry} if retry else {})}


def send(path, body):
    status, answer = gateway(path, body)
    if status != 200:
        sys.exit(f"the gateway answered {status} to POST {path}: {answer.get('msg')}")
    return answer


run = uuid.uuid4().hex[:4]
# log_level 3: errors only; a broker that just started logs transient retries as warnings
p = Producer({"bootstrap.servers": args.bootstrap, "enable.idempotence": True, "log_level": 3,
              "partitioner": "murmur2_random"})  # the router's, and the Java client's, default
c = Consumer({"bootstrap.servers": args.bootstrap, "group.id": "quickstart-" + run,
              "isolation.level": "read_committed", "enable.auto.commit": False, "log_level": 3})
meta = c.list_topics(timeout=10)
if prefix + "results" not in meta.topics:
    sys.exit(f"no topic {prefix}results at {args.bootstrap}: are the mooncake roles running?")


def end_offset(topic, i):
    deadline = time.time() + 30
    while True:  # a topic created a moment ago may not have its leader yet
        try:
            return c.get_watermark_offsets(TopicPartition(topic, i), timeout=10)[1]
        except KafkaException:
            if time.time() > deadline:
                raise
            time.sleep(0.2)


# Follow results and dead (read_committed) from their current ends: all of this run comes after.
c.assign([TopicPartition(prefix + t, i, end_offset(prefix + t, i))
          for t in ("results", "dead") for i in meta.topics[prefix + t].partitions])
results, dead = {}, {}  # key -> [Result], key -> DeadLetter


def poll(timeout):
    m = c.poll(timeout)
    if m is None or m.error() or m.key() is None:
        return
    key = m.key().decode()
    if m.topic() == prefix + "results":
        r = decode("Result", m.value())
        if r:
            for f in ("due_at", "started_at", "finished_at"):
                r[f] = ms(r[f])
            results.setdefault(key, []).append(r)
    else:
        dead[key] = decode("DeadLetter", m.value()) or {"reason": "(undecodable)", "failed_at": 0}


def warm_up():
    """A fresh broker is slow for its first transactions (cold JVM, coordinators loading):
    run a task due now and a malformed record through every role first, so the figures
    below show mooncake rather than the broker starting."""
    t0 = int(time.time() * 1000)
    ok, bad = f"shop/{run}-warm-up", f"shop/{run}-warm-up-bad"
    send("/submit", submit(ok[5:], t0, "/hook/" + ok[5:]))
    p.produce(prefix + "tasks", key=bad, value=b"{not avro}")
    p.flush(30)
    while time.time() < t0 / 1000 + 60 and not (
            any(r["outcome"] == "SUCCEEDED" for r in results.get(ok, [])) and bad in dead):
        poll(0.2)
    if not (ok in results and bad in dead):
        sys.exit("the warm-up task did not come through within 60 s: see the roles' logs")
    print(f"warm-up: a task due now was called and a bad record dead-lettered in "
          f"{int(time.time() * 1000) - t0} ms (a fresh broker's first transactions are slow)")


if args.warm_up:
    warm_up()

now = int(time.time() * 1000)
policy = {"maxAttempts": 3, "initialBackoffMs": 1000, "multiplier": 2.0, "maxBackoffMs": 10000}
T = {  # name: (task id, due, path)
    "3s": (f"{run}-in3s", now + 3000, f"/hook/{run}-in3s"),
    "6s": (f"{run}-in6s", now + 6000, f"/hook/{run}-in6s"),
    "cancelled": (f"{run}-cancelled", now + 5000, f"/hook/{run}-cancelled"),
    "flaky": (f"{run}-fails-once", now + 4000, f"/flaky/{run}-fails-once"),
    "far": (f"{run}-in{far_ms // 1000}s", now + far_ms, f"/hook/{run}-in{far_ms // 1000}s"),
    "bad": (f"{run}-malformed", None, None),
}
key = {n: f"shop/{t[0]}" for n, t in T.items()}
cmds = [  # (name, gateway route, body, what)
    ("3s", "/submit", submit(T["3s"][0], T["3s"][1], T["3s"][2]), "due in 3 s"),
    ("6s", "/submit", submit(T["6s"][0], T["6s"][1], T["6s"][2]), "due in 6 s"),
    ("cancelled", "/submit", submit(T["cancelled"][0], T["cancelled"][1], T["cancelled"][2]),
     "due in 5 s ..."),
    ("cancelled", "/api/task/done", {"appId": "shop", "uuid": T["cancelled"][0]},
     "... and cancelled right away (POST /api/task/done)"),
    ("flaky", "/submit", submit(T["flaky"][0], T["flaky"][1], T["flaky"][2], retry=policy),
     "due in 4 s; its endpoint fails the first call (retry policy: 3 attempts, first backoff <= 1 s)"),
    ("far", "/submit", submit(T["far"][0], T["far"][1], T["far"][2]),
     f"due in {far_ms // 1000} s (beyond the {horizon_ms // 1000} s horizon: the store keeps it)"),
]
print(f"submitting through the gateway {args.gateway} (the tasks POST to {endpoint}/...):")
for n, route, body, what in cmds:
    send(route, body)
    print(f"  {T[n][0]:<16} {what}")
# What the gateway refuses never reaches Kafka: a 400 naming the field.
bad_http = submit(f"{run}-bad-url", now + 3000, "/hook/x")
bad_http["callback"]["url"] = "ftp://127.0.0.1/x"
bad_status, bad_answer = gateway("/submit", bad_http)
print(f"  {run + '-bad-url':<16} a task with an ftp:// callback: the gateway answers "
      f"{bad_status} {json.dumps(bad_answer)}")
# A recurring job: every 2 s from the next whole second + 2 s, each occurrence the task
# <jobId>@<scheduled ms>; deleted after its third occurrence (below).
job_id = f"{run}-every-2s"
job_start = (now // 1000 + 2) * 1000
job_answer = send("/jobs", {"appId": "shop", "jobId": job_id, "startTime": job_start,
                            "schedule": {"fixedRateMs": 2000},
                            "callback": {"url": f"{endpoint}/hook/{job_id}", "method": "POST",
                                         "body": '{"report":"tick"}', "timeoutMs": 10000}})
next_fires = job_answer.get("data", {}).get("nextFireTimes", [])
print(f"  {job_id:<16} a recurring job every 2 s (POST /jobs; next fire times "
      f"{', '.join(f't+{(t - now) / 1000:.0f}s' for t in next_fires[:3])}), deleted after "
      "its third occurrence")
# A client producing straight to Kafka has no one to answer it: the router dead-letters.
p.produce(prefix + "tasks", key=key["bad"], value=b"{not avro at all}")
print(f"  {T['bad'][0]:<16} a malformed record produced straight to {prefix}tasks (not Avro)")
if p.flush(30):
    sys.exit(f"could not deliver to {prefix}tasks at {args.bootstrap}")


def outcomes(n):
    return [r["outcome"] for r in results.get(key[n], [])]


def job_results():
    return {k: v for k, v in results.items() if k.startswith(f"shop/{job_id}@")}


def settled():
    return ("SUCCEEDED" in outcomes("3s") and "SUCCEEDED" in outcomes("6s")
            and "SUCCEEDED" in outcomes("flaky") and key["bad"] in dead
            and time.time() * 1000 >= T["6s"][1] + 500 and len(job_results()) >= 3)


print("waiting for the calls (about 7 s) ...")
end = now / 1000 + args.follow
deleted_at = None
while time.time() < end and not (settled() and deleted_at):
    if deleted_at is None and len(job_results()) >= 3:
        send("/jobs/delete", {"appId": "shop", "jobId": job_id})
        deleted_at = int(time.time() * 1000)
    poll(min(0.2, max(0.0, end - time.time())))
# What the job would have fired after the delete: nothing must come.
while time.time() * 1000 < (deleted_at or 0) + 4500:
    poll(0.2)
c.close()

# The endpoint's log: its lines for this run's tasks.
calls = {}  # key -> [call]
try:
    with open(args.endpoint_log) as f:
        for line in f:
            m = LINE.match(line.rstrip("\n"))
            if not m or f"/{run}-" not in m.group(3):
                continue
            kv = dict(x.split("=", 1) for x in m.group(4).split())
            at = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp()
            ik = kv.get("idempotency-key", "-")
            calls.setdefault(ik.rsplit(":", 1)[0], []).append({
                "late_ms": int(kv["late"][:-2]) if kv.get("late", "?") != "?" else None,
                "at": round(at * 1000), "method": m.group(2), "path": m.group(3),
                "attempt": int(ik.rsplit(":", 1)[1]) if ":" in ik else 0, "key": ik,
                "signature": kv.get("signature"), "status": kv.get("status")})
except OSError as e:
    print(f"could not read the endpoint's log {args.endpoint_log}: {e}")

events = []  # (epoch ms, task id, text)
for k, lst in calls.items():
    if k == f"shop/{run}-warm-up":
        continue
    for cl in lst:
        due = next((r["due_at"] for r in results.get(k, []) if r["attempt"] == cl["attempt"]), None)
        if due is None and k in T and cl["attempt"] == 1:
            due = dict((key[n], T[n][1]) for n in T).get(k)
        cl["late"] = cl["at"] - due if due is not None else None
        late = f"{cl['late']} ms late" if due is not None else "lateness unknown"
        events.append((cl["at"], k[5:], f"called {cl['method']} {cl['path']}, Idempotency-Key "
                       f"{cl['key']}, signature {cl['signature']}, {late} -> {cl['status']}"))
for k, lst in results.items():
    for r in lst:
        if not k.startswith(f"shop/{run}-") or k == f"shop/{run}-warm-up":
            continue
        why = f": {r['error']}" if r["error"] else ""
        events.append((r["finished_at"], k[5:], f"Result {r['outcome']} (attempt {r['attempt']}, "
                       f"HTTP {r['http_status']}, started {r['started_at'] - r['due_at']} ms "
                       f"after due){why}"))
for k, d in dead.items():
    if k.startswith(f"shop/{run}-") and k != f"shop/{run}-warm-up-bad":
        events.append((ms(d["failed_at"]), k[5:], f"dead-lettered: {d['reason']}"))
events.sort(key=lambda e: e[0])
print(f"\nwhat happened (t: seconds after submitting; the calls as the endpoint logged them,\n"
      f"the Results and dead letters as committed to {prefix}results and {prefix}dead):")
for at, tid, text in events:
    print(f"  t+{(at - now) / 1000:5.2f}  {tid:<16} {text}")

print("\nin short:")
ok = True


def check(good, text):
    global ok
    ok = ok and good
    print(f"  {'ok  ' if good else 'FAIL'}  {text}")


for n in ("3s", "6s"):
    cl, oc = calls.get(key[n], []), outcomes(n)
    check(len(cl) == 1 and cl[0]["status"] == "200" and oc == ["SUCCEEDED"],
          f"{T[n][0]}: called {'once' if len(cl) == 1 else f'{len(cl)} times'}"
          + (f", {cl[0]['late']} ms after its due time, signature {cl[0]['signature']}"
             if len(cl) == 1 else "") + f"; Results: {', '.join(oc) or 'none'}")
cl, oc = calls.get(key["cancelled"], []), outcomes("cancelled")
check(not cl, f"{T['cancelled'][0]}: " + (
    f"called {len(cl)} time(s) although cancelled" if cl else "cancelled, never called"
    + (" (the wheel had fired it early and recalled it: Result CANCELLED)"
       if "CANCELLED" in oc else "")))
cl, oc = calls.get(key["flaky"], []), outcomes("flaky")
check([x["status"] for x in cl] == ["500", "200"] and oc == ["FAILED_WILL_RETRY", "SUCCEEDED"],
      f"{T['flaky'][0]}: {len(cl)} call{'' if len(cl) == 1 else 's'}, answered {', '.join(x['status'] for x in cl) or '-'}"
      + (f", the retry {(cl[1]['at'] - cl[0]['at']) / 1000:.2f} s after the first"
         if len(cl) == 2 else "") + f"; Results: {', '.join(oc) or 'none'}")
check(bad_status == 400 and "callback.url" in bad_answer.get("msg", ""),
      f"{run}-bad-url: refused by the gateway with {bad_status} ({bad_answer.get('msg')})")
job_calls = sorted((cl for k, lst in calls.items() if k.startswith(f"shop/{job_id}@")
                    for cl in lst), key=lambda cl: cl["at"])
occurrences = sorted(int(k.rsplit("@", 1)[1]) for k in job_results())
after_delete = [cl for cl in job_calls if deleted_at and cl["at"] > deleted_at + 1000]
check(len(occurrences) >= 3 and all(b - a == 2000 for a, b in zip(occurrences, occurrences[1:]))
      and len(job_calls) == len(occurrences) and not after_delete,
      f"{job_id}: {len(occurrences)} occurrences 2 s apart ("
      + ", ".join(f"t+{(o - now) / 1000:.0f}s" for o in occurrences) + "), each called once"
      + (f", {max(cl['late_ms'] or 0 for cl in job_calls)} ms late at most" if job_calls else "")
      + ("; nothing after the delete" if not after_delete
         else f"; {len(after_delete)} call(s) AFTER the delete"))
d = dead.get(key["bad"])
check(d is not None, f"{T['bad'][0]}: " + (f"in {prefix}dead, with the reason above" if d
                                             else f"did NOT reach {prefix}dead: see the router's log"))


def in_changelog(k):
    """True when the latest committed record of key k in the store's changelog is a task."""
    sc = Consumer({"bootstrap.servers": args.bootstrap, "group.id": "quickstart-" + run,
                   "isolation.level": "read_committed", "enable.auto.commit": False,
                   "enable.partition.eof": True, "log_level": 3})
    left = set(meta.topics[prefix + "store"].partitions)
    sc.assign([TopicPartition(prefix + "store", i, 0) for i in left])
    found, deadline = False, time.time() + 10
    while left and time.time() < deadline:
        m = sc.poll(0.2)
        if m is None:
            continue
        if m.error():
            left.discard(m.partition())  # end of the partition (or an error)
        elif m.key() is not None and m.key().decode() == k:
            found = m.value() is not None
    sc.close()
    return found


held = None
try:
    with urllib.request.urlopen(args.store_metrics or args.gateway.rstrip("/") + "/metrics",
                                timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(("mooncake_store_tasks ", "mooncake_store_tasks{")):
                held = int(float(line.split()[-1]))
except OSError as e:
    print(f"could not read the store's metrics: {e}")
kept = held is not None and in_changelog(key["far"])
fire = time.strftime("%H:%M:%S", time.localtime(T["far"][1] / 1000))
check(bool(held) and kept, f"{T['far'][0]}: " + (
    f"held by the store (mooncake_store_tasks {held}; in {prefix}store, its changelog); "
    f"handed to the wheel at {time.strftime('%H:%M:%S', time.localtime((T['far'][1] - horizon_ms) / 1000))}, "
    f"called at {fire}" if kept else f"NOT held by the store (mooncake_store_tasks {held}): see the store's log"))
sys.exit(0 if ok else 1)
