"""`mooncake gateway` on a real broker, held to its contract, gateway/openapi.yaml.

What a client of the HTTP API sees, and what then lands in Kafka:
- a submit is answered 200 only once its Command is in the tasks topic, and the Command
  there is the task sent (fields, defaults, partial retry filled from --retry-*); a
  cancel writes a Cancel; /uuid gives time-ordered UUIDv7s;
- every malformed request gets a 4xx envelope naming the field (or the cause) and
  writes nothing; tokens act only on their own app; 404/405 (Allow)/413 (also
  chunked)/415/431; Idempotency-Key replays the first answer without a second record,
  422 on another body, 409 while the first is unanswered, bounded by TTL and count;
- a broker outage gives 503 in bounded time (readyz 503, healthz 200); SIGTERM answers
  every request it took and exits 0; HTTPS; past the per-IP connection limit a new
  connection is closed, past the overall one it waits; start-up refuses a gateway
  without tokens or with unreadable TLS files;
- end to end: a task submitted here is called once, on time, with its body and
  headers, by router -> wheel -> executor (separate processes, and `mooncake all`);
  a task cancelled here is never called;
- serial chains: a submit with an orderingKey writes an AddLink to job-commands keyed
  appId/orderingKey (its murmur2 partition) and nothing to tasks, a cancel with it a
  CancelLink; a bad orderingKey gets 400 naming it; through `mooncake all`, a chain's
  tasks are called one at a time and one cancelled while it waits never;
- recurring jobs: POST /jobs writes one PutJob (the job sent, defaults filled) to its
  key's murmur2 partition of job-commands and answers the next fire times; a bad job
  (cron, zone, interval, a cron that never fires, two schedule kinds, ...) gets 400
  naming the field and writes nothing; /jobs/pause, resume, delete and trigger write
  JobActions (trigger answers its occurrence's task id); tokens act only on their own
  app; /jobs/preview answers fire times and writes nothing;
- the OpenAPI document is true: every route it lists answers a status it lists, its
  request examples are accepted, a route it does not list is 404 and every route the
  gateway serves is in it, and EVERY JSON answer any test here received validates
  against the schema it gives (the last test; every request goes through `req()`).

Every test has its own topic prefix, so "nothing was written" is checked by reading
the tasks topic up to its high watermarks (a 200 means the record is acknowledged)."""
import atexit
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time

import jsonschema
import yaml

from harness import (BOOTSTRAP, MOONCAKE_BIN, SOURCE_DIR, CallbackServer, Env, decode, free_port,
                     home_partition, ms, now_ms, run)
from test_executor import start_pipeline, wait_until
from test_store_wheel import read_settled

SHOP = "shop-token-0123456789"
BILLING = "billing-token-0123456789"
INNER = "inner-token-0123456789"
ADMIN = "admin-token-0123456789"
TMP = tempfile.mkdtemp(prefix="mooncake-gwt-")
atexit.register(shutil.rmtree, TMP, ignore_errors=True)
TOKEN_FILE = os.path.join(TMP, "app-tokens")
with open(TOKEN_FILE, "w") as f:
    f.write(f"shop={SHOP}\nbilling={BILLING}\n")
AUTH = ("--app-tokens", "@" + TOKEN_FILE, "--inner-tokens", INNER, "--admin-tokens", ADMIN)
# --retry-* defaults that differ from the built-in ones, so a partial retry object
# visibly takes them from the flags
RETRY_FLAGS = ("--retry-max-attempts", "7", "--retry-initial-backoff-ms", "250",
               "--retry-multiplier", "3.0", "--retry-max-backoff-ms", "9000")
MAX_DUE_MS = 86_400_000
CTL = os.environ.get("MOONCAKECTL_BIN") or os.path.join(
    os.path.dirname(os.path.abspath(MOONCAKE_BIN)), "mooncakectl")
UUID7 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")

with open(os.path.join(SOURCE_DIR, "gateway", "openapi.yaml")) as f:
    DOC = yaml.safe_load(f)

# ---- the one HTTP client: every answer is recorded for the document check ------------------

SEEN = []  # (path, method, status, content type, body) of every answer any test received


class Answer:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    @property
    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return f"<{self.status} {self.body[:300]!r}>"


def record(path, method, status, headers, body):
    a = Answer(status, {k.lower(): v for k, v in headers}, body)
    SEEN.append((path.split("?")[0], method.lower(), status, a.headers.get("content-type", ""),
                 body))
    return a


def req(port, method, path, body=None, token=SHOP, headers=None, raw=None, tls=None,
         conn=None):
    """One request (on `conn` when given, else on a fresh connection). body is
    JSON-encoded unless str/bytes; raw is sent as it is. Headers mapped to None
    are left out (also the default Content-Type)."""
    c = conn or (http.client.HTTPSConnection("127.0.0.1", port, context=tls, timeout=30)
                 if tls else http.client.HTTPConnection("127.0.0.1", port, timeout=30))
    h = {"Content-Type": "application/json"} if body is not None or raw is not None else {}
    if token:
        h["Authorization"] = "Bearer " + token
    h.update(headers or {})
    data = raw if raw is not None else (
        None if body is None else body if isinstance(body, (str, bytes)) else json.dumps(body))
    try:
        c.request(method, path, body=data, headers={k: v for k, v in h.items() if v is not None})
        r = c.getresponse()
        return record(path, method, r.status, r.getheaders(), r.read())
    finally:
        if conn is None:
            c.close()


def http_chunked(port, path, data, pieces=1000, token=SHOP):
    """A POST with Transfer-Encoding: chunked (no Content-Length)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.putrequest("POST", path)
        for k, v in (("Authorization", "Bearer " + token), ("Content-Type", "application/json"),
                     ("Transfer-Encoding", "chunked")):
            c.putheader(k, v)
        c.endheaders()
        for i in range(0, len(data), pieces):
            piece = data[i:i + pieces]
            c.send(b"%x\r\n%s\r\n" % (len(piece), piece))
        c.send(b"0\r\n\r\n")
        r = c.getresponse()
        return record(path, "POST", r.status, r.getheaders(), r.read())
    finally:
        c.close()


def http_raw(port, path, method, data):
    """Bytes on a socket; the answer read to EOF and parsed (None: closed unanswered)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        try:
            s.sendall(data)
        except OSError:
            pass  # the server may answer and close before reading everything
        got = b""
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                got += b
        except OSError:
            pass
    finally:
        s.close()
    if not got:
        return None
    head, _, body = got.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = [tuple(x.strip() for x in ln.split(":", 1)) for ln in lines[1:] if ":" in ln]
    return record(path, method, status, headers, body)


def check_error(a, status, needle):
    """The error envelope: code == the HTTP status, data null, msg naming the cause."""
    assert a.status == status, f"want {status}, got {a!r}"
    j = a.json
    assert j["code"] == status and j["data"] is None, j
    assert needle in j["msg"], f"{needle!r} not in {j['msg']!r}"


# ---- processes and records ------------------------------------------------------------------

def start_gateway(env, *args, **kw):
    return env.start("gateway", *AUTH, *args, **kw)


def task(**over):
    t = {"appId": "shop", "delayMs": 60_000,
         "callback": {"url": "https://shop.example.com/hook", "body": "hi"}}
    t.update(over)
    return t


def test_submit_lands_on_the_keys_murmur2_partition():
    """The gateway places each task where a Java client would (murmur2), the
    partition the router routes it from: a Cancel sent by any client meets it
    without a detour."""
    env = Env(partitions=6)
    try:
        port = start_gateway(env).http_port
        ids = [f"p{i}" for i in range(24)]
        for i in ids:
            a = req(port, "POST", "/submit", {"appId": "shop", "uuid": i, "delayMs": 60_000,
                                               "callback": {"url": "http://h.example"}})
            assert a.status == 200, a
        recs = read_settled(env, "tasks", timeout=20)
        where = {m.key().decode(): m.partition() for m in recs}
        assert sorted(where) == sorted("shop/" + i for i in ids), where
        wrong = {k: p for k, p in where.items() if p != home_partition(k, 6)}
        assert not wrong, f"not on their murmur2 partition: {wrong}"
        assert len(set(where.values())) > 1
    finally:
        env.stop_all()


def commands(env):
    """Every record in tasks now, as (key, payload kind, payload)."""
    out = []
    for m in read_settled(env, "tasks", timeout=20):
        kind, payload = decode("Command", m.value())["payload"]
        out.append((m.key().decode(), kind, payload))
    return out


def metric_values(text):
    """Prometheus text -> {series: value}."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, _, value = line.rpartition(" ")
            out[series] = float(value)
    return out


def get_text(port, path, tls=None):
    """(status, body) of a GET of a probe route, recorded like every other answer."""
    a = req(port, "GET", path, token=None, tls=tls)
    return a.status, a.body.decode()


def gateway_cmd(port, *args):
    return [MOONCAKE_BIN, "gateway", "--http-port", str(port), *args]


# ---- the happy paths: what is written --------------------------------------------------------

def test_submit_writes_the_task_it_was_sent():
    env = Env()
    try:
        port = start_gateway(env, *RETRY_FLAGS).http_port
        t0 = now_ms()
        a = req(port, "POST", "/submit", {
            "appId": "shop", "uuid": "order-42", "expireTime": t0 + 30_000,
            "callback": {"url": "https://shop.example.com/expire", "method": "put",
                         "headers": {"X-Trace": "abc", "Content-Type": "application/json"},
                         "body": "{\"order\":42,\"note\":\"caf\u00e9 \u2713\"}",
                         "timeoutMs": 1500},
            "retry": {"maxAttempts": 3}, "metadata": {"k": "v", "team": "orders"},
            "somethingUnknown": [1]})
        assert a.status == 200 and a.json == {"code": 0, "msg": "ok",
                                              "data": {"uuid": "order-42"}}, a
        assert a.headers["content-type"].startswith("application/json")
        # the answer came after the broker's ack: the record is there now
        recs = commands(env)
        assert [(k, kind) for k, kind, _ in recs] == [("shop/order-42", "mooncake.Submit")], recs
        t = recs[0][2]["task"]
        assert (t["app_id"], t["task_id"], ms(t["due_at"])) == ("shop", "order-42", t0 + 30_000)
        cb = t["callback"]
        assert (cb["url"], cb["method"], cb["headers"], cb["timeout_ms"]) == (
            "https://shop.example.com/expire", "PUT",
            {"X-Trace": "abc", "Content-Type": "application/json"}, 1500), cb
        assert cb["body"] == "{\"order\":42,\"note\":\"caf\u00e9 \u2713\"}".encode(), cb["body"]
        # a partial retry takes the rest from --retry-*
        assert t["retry"] == ("mooncake.RetryPolicy", {
            "max_attempts": 3, "initial_backoff_ms": 250, "multiplier": 3.0,
            "max_backoff_ms": 9000}), t["retry"]
        assert t["attempt"] == 1 and t["metadata"] == {"k": "v", "team": "orders"}
        assert abs(ms(t["created_at"]) - t0) < 5000, (ms(t["created_at"]), t0)

        # the least a task can say: delayMs from receipt, POST, no body, no retry, a UUIDv7
        before = now_ms()
        b = req(port, "POST", "/submit", {"appId": "shop", "delayMs": 1234, "uuid": None,
                                           "callback": {"url": "http://h.example"}})
        after = now_ms()
        assert b.status == 200, b
        gen = b.json["data"]["uuid"]
        assert UUID7.fullmatch(gen), gen
        c = req(port, "POST", "/submit", {"appId": "shop", "delayMs": 0,
                                           "retry": {"maxBackoffMs": 9000, "multiplier": 1.5},
                                           "callback": {"url": "http://h.example"}})
        assert c.status == 200, c
        recs = {k: p["task"] for k, kind, p in commands(env)}
        assert sorted(recs) == sorted(["shop/order-42", "shop/" + gen,
                                       "shop/" + c.json["data"]["uuid"]]), recs
        g = recs["shop/" + gen]
        assert g["task_id"] == gen
        assert before <= ms(g["created_at"]) <= after, (before, g["created_at"], after)
        assert ms(g["due_at"]) - ms(g["created_at"]) == 1234, g
        assert (g["callback"]["method"], g["callback"]["body"], g["callback"]["headers"],
                g["callback"]["timeout_ms"]) == ("POST", b"", {}, 0), g["callback"]
        assert g["retry"] is None and g["metadata"] == {} and g["attempt"] == 1
        assert recs["shop/" + c.json["data"]["uuid"]]["retry"][1] == {
            "max_attempts": 7, "initial_backoff_ms": 250, "multiplier": 1.5,
            "max_backoff_ms": 9000}
    finally:
        env.stop_all()


def test_kafka_targets_and_late_policies_at_submit():
    """A task that delivers to Kafka is taken only for a topic its app is allowed
    (--target-topics), never one of mooncake's own or Kafka's, and lands as it was
    sent (text and base64 bytes, a tombstone, headers, the late policy); a bad
    kafkaTarget or latePolicy gets 400 naming the field and writes nothing."""
    env = Env()
    try:
        # the last entry lists this run's own topics: they are refused all the same; with
        # a view, to see what GET /api/task shows of such a task
        port = env.start("gateway,view", *AUTH, "--target-topics",
                         f"shop=shop.orders.*,billing=billing.events,shop={env.prefix}*"
                         ).http_port
        a = req(port, "POST", "/submit", {
            "appId": "shop", "uuid": "kt-1", "delayMs": 60_000,
            "kafkaTarget": {"topic": "shop.orders.expired", "key": "order-42",
                            "value": "{\"order\":42}", "headers": {"trace": "t-1"}},
            "latePolicy": {"maxLateMs": 5000, "action": "DROP"}})
        assert a.status == 200 and a.json["data"] == {"uuid": "kt-1"}, a
        b = req(port, "POST", "/inner/submit", {
            "appId": "billing", "uuid": "kt-2", "delayMs": 60_000, "callback": None,
            "kafkaTarget": {"topic": "billing.events", "keyBase64": "AAEC/w=="}},
            token=INNER)
        assert b.status == 200, b
        kt = {"topic": "shop.orders.expired"}
        bad = [  # (body, token, what msg must contain)
            (task(callback=None, kafkaTarget={"topic": "billing.events"}), SHOP,
             "kafkaTarget.topic 'billing.events' is not allowed for app 'shop'"),
            (task(callback=None, kafkaTarget={"topic": "orders.expired"}), SHOP,
             "kafkaTarget.topic 'orders.expired' is not allowed"),
            (task(appId="billing", callback=None, kafkaTarget=kt), INNER,
             "kafkaTarget.topic 'shop.orders.expired' is not allowed for app 'billing'"),
            (task(callback=None, kafkaTarget={"topic": "mooncake.tasks"}), SHOP,
             "kafkaTarget.topic 'mooncake.tasks'"),
            (task(callback=None, kafkaTarget={"topic": env.topic("tasks")}), SHOP,
             "kafkaTarget.topic '%s' is one of Kafka's or mooncake's own topics"
             % env.topic("tasks")),
            (task(callback=None, kafkaTarget={"topic": "__consumer_offsets"}), SHOP,
             "is one of Kafka's or mooncake's own topics"),
            (task(callback=None, kafkaTarget={"topic": "no such topic"}), SHOP,
             "kafkaTarget.topic 'no such topic' is not a Kafka topic name"),
            (task(kafkaTarget=kt), SHOP, "give callback or kafkaTarget, not both"),
            (task(callback=None), SHOP, "callback is required"),
            (task(callback=None, kafkaTarget={**kt, "valueBase64": "!!"}), SHOP,
             "kafkaTarget.valueBase64 is not standard base64"),
            (task(callback=None, kafkaTarget={**kt, "key": "k", "keyBase64": "aw=="}), SHOP,
             "give kafkaTarget.key or kafkaTarget.keyBase64, not both"),
            (task(callback=None, kafkaTarget={**kt, "headers": {"x": 1}}), SHOP,
             "kafkaTarget.headers.x must be a string"),
            (task(callback=None, kafkaTarget={**kt, "headers": {"mooncake-task": "x"}}), SHOP,
             "kafkaTarget.headers: 'mooncake-task' is set by mooncake"),
            (task(latePolicy={"maxLateMs": 5000, "action": "SKIP"}), SHOP,
             "latePolicy.action 'SKIP' is not RUN, DROP or DEAD"),
            (task(latePolicy={"maxLateMs": 5000}), SHOP, "latePolicy.action is required"),
            (task(latePolicy={"action": "DROP"}), SHOP, "latePolicy.maxLateMs is required"),
            (task(latePolicy={"maxLateMs": -1, "action": "DROP"}), SHOP,
             "latePolicy.maxLateMs -1 is outside"),
            (task(latePolicy="DROP"), SHOP, "latePolicy must be an object"),
        ]
        for body, token, needle in bad:
            route = "/inner/submit" if token == INNER else "/submit"
            check_error(req(port, "POST", route, body, token=token), 400, needle)
        recs = {k: p["task"] for k, kind, p in commands(env)}
        assert sorted(recs) == ["billing/kt-2", "shop/kt-1"], f"refused requests were written: {recs}"
        t = recs["shop/kt-1"]
        assert t["callback"]["url"] == "", t["callback"]
        assert t["kafka_target"] == ("mooncake.KafkaTarget", {
            "topic": "shop.orders.expired", "key": b"order-42", "value": b'{"order":42}',
            "headers": {"trace": "t-1"}}), t["kafka_target"]
        assert t["late_policy"] == ("mooncake.LatePolicy", {"max_late_ms": 5000,
                                                            "action": "DROP"}), t["late_policy"]
        t = recs["billing/kt-2"]
        assert t["kafka_target"][1] == {"topic": "billing.events", "key": b"\x00\x01\x02\xff",
                                        "value": None, "headers": {}}, t["kafka_target"]
        assert t["late_policy"] is None
        # the answer shows the target, not its value, and the late policy
        d = req(port, "GET", "/api/task?appId=shop&uuid=kt-1")
        assert d.status == 200, d
        d = d.json["data"]
        assert "callback" not in d and "42}" not in json.dumps(d), d
        assert d["kafkaTarget"] == {"topic": "shop.orders.expired", "key": "order-42",
                                    "valueBytes": 12, "headers": {"trace": "t-1"}}, d
        assert d["latePolicy"] == {"maxLateMs": 5000, "action": "DROP"}, d
        d = req(port, "GET", "/api/task?appId=billing&uuid=kt-2", token=INNER)
        assert d.status == 200, d
        assert d.json["data"]["kafkaTarget"] == {"topic": "billing.events", "keyBase64": "AAEC/w==",
                                                 "tombstone": True, "headers": {}}, d
        page = req(port, "GET", "/api/tasks?appId=shop")
        assert page.status == 200, page
        assert page.json["data"]["tasks"][0]["kafkaTarget"] == {
            "topic": "shop.orders.expired", "valueBytes": 12}, page
    finally:
        env.stop_all()


def test_follow_ups_at_submit():
    """onSuccess: follow-ups (an HTTP call and a record to an allowed topic) land in the
    task's Avro record as sent; one naming a topic the app is not allowed, or a bad
    field, gets 400 naming onSuccess[i]. and writes nothing; GET /api/task shows each
    follow-up with the id it will have, its callback redacted, its target's value by
    size."""
    env = Env()
    try:
        port = env.start("gateway,view", *AUTH, *RETRY_FLAGS, "--target-topics",
                         "shop=shop.audit").http_port
        a = req(port, "POST", "/submit", task(uuid="fu-1", onSuccess=[
            {"callback": {"url": "https://shop.example.com/paid?token=s3cret-tok",
                          "headers": {"Authorization": "Bearer s3cret"}},
             "retry": {"maxAttempts": 2},
             "latePolicy": {"maxLateMs": 1000, "action": "DEAD"}},
            {"uuid": "fu-1-audit", "delayMs": 30_000,
             "kafkaTarget": {"topic": "shop.audit", "key": "fu-1", "value": "paid"}}]))
        assert a.status == 200 and a.json["data"] == {"uuid": "fu-1"}, a
        bad = [
            (task(onSuccess=[{"kafkaTarget": {"topic": "billing.events"}}]),
             "onSuccess[0].kafkaTarget.topic 'billing.events' is not allowed for app 'shop'"),
            (task(onSuccess=[{"callback": {"url": "http://x"}},
                             {"kafkaTarget": {"topic": env.topic("tasks")}}]),
             "onSuccess[1].kafkaTarget.topic"),
            (task(onSuccess=[{"callback": {"url": "ftp://x"}}]),
             "onSuccess[0].callback.url 'ftp://x' is not http://, https:// or group://"),
            (task(onSuccess=[{"callback": {"url": "http://x"}, "delayMs": -1}]),
             "onSuccess[0].delayMs -1 is outside [0, "),
            (task(onSuccess={"callback": {"url": "http://x"}}),
             "onSuccess must be an array of tasks"),
            (task(onSuccess=[{}] * 17), "onSuccess has 17 tasks, more than 16"),
        ]
        for body, needle in bad:
            check_error(req(port, "POST", "/submit", body), 400, needle)
        recs = {k: p["task"] for k, kind, p in commands(env)}
        assert sorted(recs) == ["shop/fu-1"], f"refused requests were written: {recs}"
        fus = recs["shop/fu-1"]["on_success"]
        assert len(fus) == 2, fus
        f0, f1 = fus
        assert f0["task_id"] == "" and f0["delay_ms"] == 0, f0
        assert f0["callback"]["url"] == "https://shop.example.com/paid?token=s3cret-tok", f0
        assert f0["kafka_target"] is None, f0
        # a partial retry takes the rest from --retry-*, as the task's does
        assert f0["retry"] == ("mooncake.RetryPolicy", {
            "max_attempts": 2, "initial_backoff_ms": 250, "multiplier": 3.0,
            "max_backoff_ms": 9000}), f0["retry"]
        assert f0["late_policy"] == ("mooncake.LatePolicy", {"max_late_ms": 1000,
                                                             "action": "DEAD"}), f0
        assert (f1["task_id"], f1["delay_ms"], f1["callback"]["url"]) == (
            "fu-1-audit", 30000, ""), f1
        assert f1["kafka_target"] == ("mooncake.KafkaTarget", {
            "topic": "shop.audit", "key": b"fu-1", "value": b"paid", "headers": {}}), f1
        d = req(port, "GET", "/api/task?appId=shop&uuid=fu-1")
        assert d.status == 200, d
        shown = d.json["data"]["onSuccess"]
        assert "s3cret" not in json.dumps(shown), shown
        assert [f["uuid"] for f in shown] == ["fu-1.then1", "fu-1-audit"], shown
        assert shown[0]["callback"]["headers"] == {"Authorization": "[redacted]"}, shown
        assert shown[1]["kafkaTarget"] == {"topic": "shop.audit", "key": "fu-1",
                                           "valueBytes": 4, "headers": {}}, shown
    finally:
        env.stop_all()


def test_inner_submit_and_cancel():
    env = Env()
    try:
        port = start_gateway(env).http_port
        a = req(port, "POST", "/inner/submit", task(appId="anyapp", uuid="x1"), token=INNER)
        assert a.status == 200 and a.json["data"] == {"uuid": "x1"}, a
        t0 = now_ms()
        c = req(port, "POST", "/api/task/done", {"appId": "shop", "uuid": "order-7"})
        assert c.status == 200 and c.json == {"code": 0, "msg": "ok", "data": None}, c
        recs = commands(env)
        assert [(k, kind) for k, kind, _ in recs] in (
            [("anyapp/x1", "mooncake.Submit"), ("shop/order-7", "mooncake.Cancel")],
            [("shop/order-7", "mooncake.Cancel"), ("anyapp/x1", "mooncake.Submit")]), recs
        cancel = next(p for _, kind, p in recs if kind == "mooncake.Cancel")
        assert (cancel["app_id"], cancel["task_id"]) == ("shop", "order-7")
        assert abs(ms(cancel["requested_at"]) - t0) < 5000
    finally:
        env.stop_all()


def test_chained_submits_and_cancels_land_as_chain_links():
    """A submit with an orderingKey is an AddLink of the task in job-commands, keyed
    appId/orderingKey on that key's murmur2 partition, and nothing in tasks; the answer
    says the orderingKey too; a cancel with it is a CancelLink there. A Kafka-target task
    may be chained; /inner/submit and Idempotency-Key work as for any task. A bad
    orderingKey (empty, 257 bytes, a control character, not a string) gets 400 naming it,
    a chained task is checked as any other, and a refused request writes nothing."""
    env = Env(partitions=6)
    try:
        port = start_gateway(env, *RETRY_FLAGS, "--target-topics", "shop=shop.contracts"
                             ).http_port
        t0 = now_ms()
        a = req(port, "POST", "/submit", task(
            uuid="renew-2027", orderingKey="contract-42", expireTime=t0 + 60_000, delayMs=None,
            callback={"url": "https://shop.example.com/contracts/42/renew", "body": "2027"},
            retry={"maxAttempts": 2}, metadata={"team": "sales"}))
        assert a.status == 200 and a.json["data"] == {
            "uuid": "renew-2027", "orderingKey": "contract-42"}, a
        b = req(port, "POST", "/submit", task(
            orderingKey="contract-42", callback=None,
            kafkaTarget={"topic": "shop.contracts", "key": "42", "value": "renewed"}))
        assert b.status == 200 and b.json["data"]["orderingKey"] == "contract-42", b
        assert UUID7.fullmatch(b.json["data"]["uuid"]), b
        c = req(port, "POST", "/inner/submit", task(appId="billing", uuid="inv-1",
                                                     orderingKey="invoice/7 \u00e9"), token=INNER)
        assert c.status == 200 and c.json["data"] == {"uuid": "inv-1",
                                                      "orderingKey": "invoice/7 \u00e9"}, c
        longest = "k" * 256
        d = req(port, "POST", "/submit", task(uuid="long", orderingKey=longest))
        assert d.status == 200, d
        # an ordinary task: no orderingKey in the answer, a Submit in tasks
        plain = req(port, "POST", "/submit", task(uuid="plain", orderingKey=None))
        assert plain.status == 200 and plain.json["data"] == {"uuid": "plain"}, plain
        key = {"Idempotency-Key": "renew-2028"}
        first = req(port, "POST", "/submit", task(uuid="renew-2028", orderingKey="contract-42"),
                    headers=key)
        again = req(port, "POST", "/submit", task(uuid="renew-2028", orderingKey="contract-42"),
                    headers=key)
        assert first.status == again.status == 200 and again.body == first.body, (first, again)
        assert again.headers.get("idempotent-replayed") == "true", again.headers
        t1 = now_ms()
        done = req(port, "POST", "/api/task/done",
                   {"appId": "shop", "uuid": "renew-2027", "orderingKey": "contract-42"})
        assert done.status == 200 and done.json["data"] is None, done
        t2 = now_ms()
        bad = [  # (route, body, token, what msg must contain)
            ("/submit", task(orderingKey=""), SHOP, "orderingKey must be 1 to 256 bytes"),
            ("/submit", task(orderingKey="k" * 257), SHOP,
             "orderingKey is 257 bytes, more than 256"),
            ("/submit", task(orderingKey="contract\u000142"), SHOP,
             "orderingKey contains a control character"),
            ("/submit", task(orderingKey="a\nb"), SHOP, "orderingKey contains a control character"),
            ("/submit", task(orderingKey=42), SHOP, "orderingKey must be a string, not an integer"),
            ("/submit", task(orderingKey="c", callback=None,
                             kafkaTarget={"topic": "billing.events"}), SHOP,
             "kafkaTarget.topic 'billing.events' is not allowed for app 'shop'"),
            ("/submit", task(orderingKey="c", callback={"url": "ftp://x"}), SHOP,
             "callback.url 'ftp://x' is not http://, https:// or group://"),
            ("/submit", task(orderingKey="c", appId="sh/op"), SHOP, "appId 'sh/op' contains '/'"),
            ("/inner/submit", task(appId="billing", orderingKey=""), INNER,
             "orderingKey must be 1 to 256 bytes"),
            ("/api/task/done", {"appId": "shop", "uuid": "x", "orderingKey": ""}, SHOP,
             "orderingKey must be 1 to 256 bytes"),
            ("/api/task/done", {"appId": "shop", "uuid": "x", "orderingKey": "k" * 257}, SHOP,
             "orderingKey is 257 bytes, more than 256"),
            ("/api/task/done", {"appId": "shop", "uuid": "x", "orderingKey": "a\tb"}, SHOP,
             "orderingKey contains a control character"),
            ("/api/task/done", {"appId": "shop", "orderingKey": "c"}, SHOP, "uuid is required"),
        ]
        for route, body, token, needle in bad:
            check_error(req(port, "POST", route, body, token=token), 400, needle)
        # a chain is the app's: another app's token may neither add to it nor cancel in it
        check_error(req(port, "POST", "/submit", task(orderingKey="contract-42"), token=BILLING),
                    403, "the token is not one of appId 'shop'")
        check_error(req(port, "POST", "/api/task/done", {
            "appId": "shop", "uuid": "renew-2027", "orderingKey": "contract-42"}, token=BILLING),
            403, "the token is not one of appId 'shop'")
        assert [(k, kind) for k, kind, _ in commands(env)] == [("shop/plain", "mooncake.Submit")]
        recs = job_commands(env)
        got = sorted((k, kind) for k, _, kind, _ in recs)
        assert got == sorted([("shop/contract-42", "mooncake.AddLink")] * 3 + [
            ("shop/contract-42", "mooncake.CancelLink"),
            ("billing/invoice/7 \u00e9", "mooncake.AddLink"),
            ("shop/" + longest, "mooncake.AddLink")]), got
        wrong = {k: p for k, p, _, _ in recs if p != home_partition(k, 6)}
        assert not wrong, f"not on their murmur2 partition: {wrong}"
        # one chain is one partition, so its records are in the order sent
        chain = [(kind, p) for k, _, kind, p in recs if k == "shop/contract-42"]
        assert [kind for kind, _ in chain] == ["mooncake.AddLink"] * 3 + ["mooncake.CancelLink"]
        link = chain[0][1]
        assert link["ordering_key"] == "contract-42", link
        t = link["task"]
        assert (t["app_id"], t["task_id"], ms(t["due_at"]), t["attempt"]) == (
            "shop", "renew-2027", t0 + 60_000, 1), t
        assert (t["callback"]["url"], t["callback"]["body"]) == (
            "https://shop.example.com/contracts/42/renew", b"2027"), t["callback"]
        # a partial retry takes the rest from --retry-*, as an ordinary task's does
        assert t["retry"] == ("mooncake.RetryPolicy", {
            "max_attempts": 2, "initial_backoff_ms": 250, "multiplier": 3.0,
            "max_backoff_ms": 9000}), t["retry"]
        assert t["metadata"] == {"team": "sales"}, t["metadata"]
        k = chain[1][1]["task"]
        assert k["task_id"] == b.json["data"]["uuid"] and k["callback"]["url"] == "", k
        assert k["kafka_target"] == ("mooncake.KafkaTarget", {
            "topic": "shop.contracts", "key": b"42", "value": b"renewed", "headers": {}}), k
        assert chain[2][1]["task"]["task_id"] == "renew-2028"
        cancel = chain[3][1]
        assert (cancel["app_id"], cancel["ordering_key"], cancel["task_id"]) == (
            "shop", "contract-42", "renew-2027"), cancel
        assert t1 <= ms(cancel["requested_at"]) <= t2, (t1, cancel, t2)
        inv = next(p for k, _, _, p in recs if k.startswith("billing/"))
        assert inv["ordering_key"] == "invoice/7 \u00e9" and inv["task"]["task_id"] == "inv-1"
    finally:
        env.stop_all()


def test_a_chain_submitted_here_runs_one_at_a_time():
    """mooncake all, end to end: three tasks of one chain, due 100 ms apart, the first
    answering after 1.5 s: the second is called only after the first has answered, and
    the third, cancelled with its orderingKey while it waits, never; a task of another
    chain due at the same time is not held back."""
    env = Env()

    def respond(call):
        return (200, {}, b"ok", 1.5) if call["path"] == "/first" else (200, {}, b"ok")

    server = CallbackServer(respond)
    try:
        p = env.start("all", *AUTH, "--executor-allow-cidrs", "127.0.0.1/32", wait_ready=False)
        env.wait_ready(p, timeout=90)
        port = p.http_port
        due = now_ms() + 2000

        def link(uid, path, at, key="contract-42"):
            a = req(port, "POST", "/submit", {
                "appId": "shop", "uuid": uid, "orderingKey": key, "expireTime": at,
                "callback": {"url": server.url(path)}})
            assert a.status == 200, a
        link("first", "/first", due)
        link("second", "/second", due + 100)
        link("third", "/third", due + 200)
        link("other", "/other", due + 100, key="contract-43")
        c = req(port, "POST", "/api/task/done",
                {"appId": "shop", "uuid": "third", "orderingKey": "contract-42"})
        assert c.status == 200, c
        wait_until("the second call", lambda: server.calls_to("/second"), timeout=40,
                   interval=0.05)
        time.sleep(1.0)  # a third call, or a repeat, would come now
        first, second, other = (server.calls_to(x) for x in ("/first", "/second", "/other"))
        assert len(first) == len(second) == len(other) == 1, (first, second, other)
        assert first[0]["at"] >= due - 5, f"called {first[0]['at'] - due:.0f} ms before due"
        assert second[0]["at"] >= first[0]["responded_at"], (
            f"the second call started {first[0]['responded_at'] - second[0]['at']:.0f} ms "
            "before the first had answered")
        assert other[0]["at"] < first[0]["responded_at"], "another chain was held back"
        assert server.calls_to("/third") == [], "a cancelled link was called"
        # "Run now" would run it beside the chain's next task: refused, naming the chain.
        def run_first_again():
            return req(port, "POST", "/api/task/reschedule", {"appId": "shop", "uuid": "first"})
        wait_until("the view to hold the first", lambda: run_first_again().status != 404,
                   timeout=30)
        again = run_first_again()
        assert again.status == 409 and b"serial chain 'contract-42'" in again.body, again
    finally:
        server.close()
        env.stop_all()


def test_uuid_is_a_time_ordered_uuidv7():
    env = Env(create_topics=False)
    try:
        gw = env.start("gateway", *AUTH, "--no-create-topics", wait_ready=False)
        conn = None
        deadline = time.time() + 20
        while conn is None:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", gw.http_port, timeout=10)
                conn.connect()
            except OSError:
                conn = None
                assert time.time() < deadline and gw.poll() is None, env.log(gw)
                time.sleep(0.1)
        t0 = now_ms()
        # no token needed (a keep-alive connection, as a client would use)
        uuids = [req(0, "GET", "/uuid", token=None, conn=conn).json["data"]["uuid"]
                 for _ in range(200)]
        conn.close()
        for u in uuids:
            assert UUID7.fullmatch(u), u
        assert all(a < b for a, b in zip(uuids, uuids[1:])), "not strictly increasing"
        # the first 48 bits are the time it was made
        assert abs(int(uuids[0].replace("-", "")[:12], 16) - t0) < 5000
        h = req(gw.http_port, "HEAD", "/uuid", token=None)
        assert h.status == 200 and h.body == b"", h
    finally:
        env.stop_all()


# ---- everything a client can get wrong ------------------------------------------------------

def test_malformed_requests_get_400_naming_the_field_and_write_nothing():
    env = Env()
    try:
        port = start_gateway(env, "--max-due-ms", str(MAX_DUE_MS)).http_port
        cb = {"url": "https://x.example/h"}
        bad = [  # (body, what msg must contain)
            ('{"appId":"shop",', "body is not valid JSON"),
            ('{"appId":"shop"} trailing', "body is not valid JSON"),
            ("[]", "body must be a JSON object, not an array"),
            ('"shop"', "body"),
            ('{"appId":"shop","appId":"x","delayMs":1,"callback":{"url":"http://a.b"}}',
             "duplicate"),
            ("", "body is empty"),
            (task(appId=None), "appId is required"),
            ({k: v for k, v in task().items() if k != "appId"}, "appId is required"),
            (task(appId=7), "appId must be a string"),
            (task(appId="a/b"), "appId 'a/b' contains '/'"),
            (task(appId=""), "appId is empty"),
            (task(appId="x" * 256), "appId is 256 bytes"),
            (task(uuid="a\u0001b"), "uuid contains a control character"),
            (task(uuid=""), "uuid is empty"),
            (task(delayMs="x"), "delayMs must be an integer"),
            (task(delayMs=1.5), "delayMs must be an integer"),
            (task(delayMs=-1), "delayMs -1 is outside"),
            (task(delayMs=MAX_DUE_MS + 1), "delayMs"),
            (task(expireTime=now_ms() + 5000), "not both"),
            ({"appId": "shop", "expireTime": "soon", "callback": cb},
             "expireTime must be an integer"),
            ({"appId": "shop", "expireTime": now_ms() + 5000.5, "callback": cb},
             "expireTime must be an integer"),
            ({"appId": "shop", "callback": cb}, "expireTime (epoch ms) or delayMs is required"),
            ({"appId": "shop", "expireTime": 1_700_000_000, "callback": cb},
             "expireTime 1700000000 is before 2000-01-01"),
            ({"appId": "shop", "expireTime": now_ms() + 2 * MAX_DUE_MS, "callback": cb},
             "in the future"),
            ({"appId": "shop", "delayMs": 1}, "callback is required"),
            (task(callback="http://x.example"), "callback must be an object"),
            (task(callback={}), "callback.url is required"),
            (task(callback={"url": "ftp://x"}),
             "callback.url 'ftp://x' is not http://, https:// or group://"),
            (task(callback={"url": "http:///nohost"}), "has no host"),
            (task(callback={"url": "https://x.example/" + "p" * 8200}), "callback.url is"),
            (task(callback={**cb, "method": "brew"}), "callback.method 'BREW'"),
            (task(callback={**cb, "timeoutMs": 3_600_001}), "callback.timeoutMs"),
            (task(callback={**cb, "body": {"json": "object"}}), "callback.body must be a string"),
            (task(callback={**cb, "headers": ["X-A: 1"]}), "callback.headers must be an object"),
            (task(callback={**cb, "headers": {"X-A": 1}}), "callback.headers.X-A must be a string"),
            (task(callback={**cb, "headers": {"Bad Name": "x"}}),
             "callback.headers: 'Bad Name' is not a valid header name"),
            (task(callback={**cb, "headers": {"X-A": "a\r\nInjected: 1"}}),
             "callback.headers.X-A contains CR, LF"),
            (task(callback={**cb, "headers": {"X-A": "a\nb"}}), "callback.headers.X-A contains"),
            (task(callback={**cb, "headers": {"Host": "evil.example"}}),
             "callback.headers: 'Host' is set by mooncake"),
            (task(callback={**cb, "headers": {"idempotency-key": "mine"}}),
             "callback.headers: 'idempotency-key' is set by mooncake"),
            (task(callback={**cb, "headers": {"Idempotency-Key": "mine"}}), "is set by mooncake"),
            (task(callback={**cb, "headers": {"webhook-signature": "v1,forged"}}),
             "callback.headers: 'webhook-signature' is set by mooncake"),
            (task(callback={**cb, "headers": {"Content-Length": "5"}}), "is set by mooncake"),
            (task(callback={**cb, "headers": {f"X-{i}": "v" for i in range(65)}}),
             "callback.headers has 65 entries"),
            (task(callback={**cb, "headers": {"X-Big": "v" * 17000}}),
             "callback.headers is more than"),
            (task(retry=5), "retry must be an object"),
            (task(retry={"maxAttempts": 0}), "retry.maxAttempts"),
            (task(retry={"maxAttempts": 1001}), "retry.maxAttempts"),
            (task(retry={"multiplier": 0.5}), "retry.multiplier"),
            (task(retry={"multiplier": "2"}), "retry.multiplier must be a number"),
            (task(retry={"initialBackoffMs": 10, "maxBackoffMs": 5}), "retry.initialBackoffMs"),
            # no backoff at all: the retry processor would ignore the policy
            (task(retry={"initialBackoffMs": 0}), "1 <= retry.initialBackoffMs (0)"),
            (task(metadata={"k": 1}), "metadata.k must be a string"),
            (task(metadata=["k"]), "metadata must be an object"),
        ]
        for body, needle in bad:
            for route, token in (("/submit", SHOP), ("/inner/submit", INNER)):
                check_error(req(port, "POST", route, body, token=token), 400, needle)
        for body, needle in [({"appId": "shop"}, "uuid is required"),
                             ({"uuid": "x"}, "appId is required"),
                             ({"appId": "shop", "uuid": 42}, "uuid must be a string"),
                             ({"appId": "shop", "uuid": ""}, "uuid is empty"),
                             ("nope", "body is not valid JSON"), ("[1]", "JSON object")]:
            check_error(req(port, "POST", "/api/task/done", body), 400, needle)
        check_error(req(port, "POST", "/submit", task(),
                         headers={"Idempotency-Key": "with space"}), 400, "Idempotency-Key")
        # one good submit, so an empty topic is not the sign of a dead gateway
        ok = req(port, "POST", "/submit", task())
        assert ok.status == 200, ok
        keys = [k for k, _, _ in commands(env)]
        assert keys == ["shop/" + ok.json["data"]["uuid"]], f"refused requests were written: {keys}"
    finally:
        env.stop_all()


def test_tokens_act_only_on_their_own_app():
    env = Env()
    try:  # the tokens as one flag this time (elsewhere from a file)
        port = env.start("gateway", "--app-tokens", f"shop={SHOP},billing={BILLING}",
                         "--inner-tokens", f"{INNER},another-inner-token-000").http_port
        for tok, needle in ((None, "Authorization: Bearer <token> is required"),
                            ("not-a-configured-token", "the bearer token is not valid")):
            for route in ("/submit", "/inner/submit", "/api/task/done"):
                a = req(port, "POST", route, task(), token=tok)
                check_error(a, 401, needle)
                assert a.headers.get("www-authenticate", "").startswith("Bearer"), a.headers
        a = req(port, "POST", "/submit", task(), headers={"Authorization": "Basic c2hvcDp4"},
                 token=None)
        check_error(a, 401, "Bearer")
        check_error(req(port, "POST", "/submit", task(appId="billing")), 403,
                    "the token is not one of appId 'billing'")
        check_error(req(port, "POST", "/api/task/done", {"appId": "billing", "uuid": "x"}),
                    403, "'billing'")
        check_error(req(port, "POST", "/submit", task(), token=INNER), 403, "/inner/submit")
        check_error(req(port, "POST", "/api/task/done", {"appId": "shop", "uuid": "x"},
                         token=INNER), 403, "inner tokens")
        check_error(req(port, "POST", "/inner/submit", task(), token=SHOP), 403, "inner token")
        assert req(port, "POST", "/inner/submit", task(appId="billing"),
                   token="another-inner-token-000").status == 200
        # each app's own token works, with any case of "Bearer"
        ok = [req(port, "POST", "/submit", task(appId="billing"), token=BILLING),
              req(port, "POST", "/submit", task(), token=None,
                  headers={"Authorization": "bearer " + SHOP})]
        assert [a.status for a in ok] == [200, 200], ok
        keys = sorted(k for k, _, _ in commands(env))
        assert len(keys) == 3 and {"billing/" + ok[0].json["data"]["uuid"],
                                   "shop/" + ok[1].json["data"]["uuid"]} < set(keys), keys
    finally:
        env.stop_all()


def test_token_files_with_comments_and_rotated_tokens():
    """Tokens from @files named by the environment twins: '#' lines and blank lines are
    skipped, an app with two tokens (a rotation) is served with either, several inner
    tokens each work, and a commented-out token is not a token."""
    app_file, inner_file = os.path.join(TMP, "rotating-app"), os.path.join(TMP, "inner")
    old, new = "old-shop-token-0123456789", "new-shop-token-0123456789"
    with open(app_file, "w") as f:
        f.write(f"# shop is rotating its token\nshop={old}\n\n  shop={new}  \n"
                f"#billing=commented-billing-0123456789\nbilling={BILLING}\n")
    with open(inner_file, "w") as f:
        f.write("# service tokens\ninner-a-0123456789abcdef\n#inner-off-0123456789abcdef\n"
                "inner-b-0123456789abcdef\n")
    env = Env()
    try:
        port = env.start("gateway", MOONCAKE_APP_TOKENS="@" + app_file,
                         MOONCAKE_INNER_TOKENS="@" + inner_file).http_port
        ok = [req(port, "POST", "/submit", task(uuid="by-old"), token=old),
              req(port, "POST", "/submit", task(uuid="by-new"), token=new),
              req(port, "POST", "/submit", task(appId="billing", uuid="b"), token=BILLING),
              req(port, "POST", "/inner/submit", task(uuid="in-a"),
                  token="inner-a-0123456789abcdef"),
              req(port, "POST", "/inner/submit", task(appId="billing", uuid="in-b"),
                  token="inner-b-0123456789abcdef")]
        assert [a.status for a in ok] == [200] * 5, ok
        for tok in (old, new):  # either shop token acts on shop only
            check_error(req(port, "POST", "/submit", task(appId="billing"), token=tok), 403,
                        "'billing'")
        for tok, route in (("commented-billing-0123456789", "/submit"),
                           ("#billing=commented-billing-0123456789", "/submit"),
                           ("inner-off-0123456789abcdef", "/inner/submit"),
                           ("#inner-off-0123456789abcdef", "/inner/submit"),
                           (SHOP, "/submit")):  # not in these files
            check_error(req(port, "POST", route, task(appId="billing"), token=tok), 401,
                        "the bearer token is not valid")
        assert sorted(k for k, _, _ in commands(env)) == [
            "billing/b", "billing/in-b", "shop/by-new", "shop/by-old", "shop/in-a"]
    finally:
        env.stop_all()


def test_routes_methods_and_content_types():
    env = Env()
    try:
        port = start_gateway(env).http_port
        for path in ("/no/such/route", "/submit/", "/SUBMIT", "/api/task/", "/"):
            check_error(req(port, "GET", path), 404, "no such route")
        check_error(req(port, "POST", "/api/task/list", task()), 404, "no such route")
        for route in ("/submit", "/inner/submit", "/api/task/done"):
            for method in ("GET", "PUT", "DELETE"):
                a = req(port, method, route)
                check_error(a, 405, f"{route} takes POST, not {method}")
                assert a.headers.get("allow") == "POST", a.headers
        for method in ("POST", "PUT"):
            a = req(port, method, "/uuid", {})
            check_error(a, 405, "/uuid takes GET")
            assert a.headers.get("allow") == "GET, HEAD", a.headers
        for ct in ("application/x-www-form-urlencoded", "text/plain", "application/jsonx"):
            check_error(req(port, "POST", "/submit", raw="appId=shop",
                             headers={"Content-Type": ct}), 415,
                        "Content-Type must be application/json")
        accepted = [
            req(port, "POST", "/submit", raw=json.dumps(task()), headers={"Content-Type": None}),
            req(port, "POST", "/submit", task(),
                 headers={"Content-Type": "application/json; charset=utf-8"}),
            req(port, "POST", "/submit", task(), headers={"Content-Type": "Application/JSON"})]
        assert [a.status for a in accepted] == [200] * 3, accepted
        assert len(commands(env)) == 3
    finally:
        env.stop_all()


def test_bodies_over_the_limit_get_413():
    env = Env()
    try:
        port = start_gateway(env, "--gateway-max-body-bytes", "4096").http_port

        def body_of(n):  # a valid task whose JSON is exactly n bytes
            t = task(callback={"url": "https://x.example/h", "body": ""})
            pad = n - len(json.dumps(t).encode())
            t["callback"]["body"] = "x" * pad
            data = json.dumps(t).encode()
            assert len(data) == n
            return data

        assert req(port, "POST", "/submit", raw=body_of(4096)).status == 200
        check_error(req(port, "POST", "/submit", raw=body_of(4097)), 413,
                    "body is 4097 bytes, more than 4096")
        check_error(req(port, "POST", "/api/task/done", raw=body_of(5000)), 413, "more than 4096")
        # chunked: no Content-Length to refuse it by, counted as it comes
        check_error(http_chunked(port, "/submit", body_of(4097)), 413, "more than 4096")
        check_error(http_chunked(port, "/submit", body_of(20_000)), 413, "more than 4096")
        # far over the limit the gateway stops reading: a 413, or the connection closed
        # without an answer, never anything else
        try:
            a = http_chunked(port, "/submit", body_of(100_000), pieces=4096)
            check_error(a, 413, "more than 4096")
        except (OSError, http.client.HTTPException):
            pass
        a = http_chunked(port, "/submit", body_of(4000))
        assert a.status == 200, a
        assert len(commands(env)) == 2
    finally:
        env.stop_all()


def test_oversized_headers_get_431_and_write_nothing():
    env = Env()
    try:
        port = start_gateway(env).http_port
        body = json.dumps(task()).encode()
        head = (f"POST /submit HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {SHOP}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                f"X-Huge: {'h' * 70_000}\r\n\r\n").encode()
        a = http_raw(port, "/submit", "POST", head + body)
        # libmicrohttpd may close before the client has sent everything (the document
        # says so): then the reset is the answer
        if a is not None:
            assert a.status == 431, a
            assert b"<html>" in a.body.lower(), a  # libmicrohttpd's own page
        assert commands(env) == []
        # the gateway still serves
        assert req(port, "POST", "/submit", task()).status == 200
    finally:
        env.stop_all()


# ---- Idempotency-Key ------------------------------------------------------------------------

def test_idempotency_key_replays_the_first_answer():
    env = Env()
    try:
        port = start_gateway(env).http_port
        key = {"Idempotency-Key": "order-42-create"}
        first = req(port, "POST", "/submit", task(), headers=key)
        again = req(port, "POST", "/submit", task(), headers=key)
        assert first.status == again.status == 200, (first, again)
        assert again.body == first.body, (first.body, again.body)
        assert again.headers.get("idempotent-replayed") == "true", again.headers
        assert "idempotent-replayed" not in first.headers
        check_error(req(port, "POST", "/submit", task(delayMs=5), headers=key), 422,
                    "this Idempotency-Key was used with another body")
        # the same body byte for byte: whitespace is another body
        check_error(req(port, "POST", "/submit", json.dumps(task(), indent=1), headers=key), 422,
                    "another body")
        # the key is per route and per app
        done = req(port, "POST", "/api/task/done", {"appId": "shop", "uuid": "x"}, headers=key)
        assert done.status == 200 and "idempotent-replayed" not in done.headers, done
        other_app = req(port, "POST", "/submit", task(appId="billing"), token=BILLING,
                         headers=key)
        assert other_app.status == 200 and "idempotent-replayed" not in other_app.headers
        # a refused request is not remembered: its retry with the same key runs
        check_error(req(port, "POST", "/submit", task(delayMs="x"),
                         headers={"Idempotency-Key": "k2"}), 400, "delayMs")
        k2 = req(port, "POST", "/submit", task(), headers={"Idempotency-Key": "k2"})
        assert k2.status == 200 and "idempotent-replayed" not in k2.headers
        keys = sorted(k for k, _, _ in commands(env))
        assert keys == sorted(["shop/" + first.json["data"]["uuid"], "shop/x",
                               "billing/" + other_app.json["data"]["uuid"],
                               "shop/" + k2.json["data"]["uuid"]]), keys
    finally:
        env.stop_all()


def test_idempotency_memory_is_bounded_by_ttl_and_count():
    env = Env()
    try:
        port = start_gateway(env, "--gateway-idempotency-ttl-ms", "2000",
                             "--gateway-idempotency-max-keys", "2").http_port

        def submit(k):
            a = req(port, "POST", "/submit", task(), headers={"Idempotency-Key": k})
            assert a.status == 200, a
            return a.headers.get("idempotent-replayed") == "true"

        assert [submit(k) for k in ("a", "a", "b", "a", "c", "b", "a")] == [
            False, True, False, True, False, True, False], "the 2 keys first used last are kept"
        time.sleep(2.2)
        assert submit("a") is False, "a key outlived its TTL"
        assert len(commands(env)) == 5
    finally:
        env.stop_all()


# ---- operations -----------------------------------------------------------------------------

def test_readiness_and_metrics():
    env = Env()
    try:
        port = start_gateway(env).http_port
        status, text = get_text(port, "/readyz")
        assert status == 200 and "broker: ok" in text, text
        status, text = get_text(port, "/healthz")
        assert status == 200 and text.startswith("ok"), text
        for _ in range(3):
            assert req(port, "POST", "/submit", task()).status == 200
        assert req(port, "POST", "/submit", task(delayMs="x")).status == 400
        assert req(port, "POST", "/submit", task(), token=None).status == 401
        assert req(port, "POST", "/api/task/done", {"appId": "shop", "uuid": "u"}).status == 200
        assert req(port, "GET", "/uuid", token=None).status == 200
        status, text = get_text(port, "/metrics")
        assert status == 200
        m = metric_values(text)
        want = {'mooncake_gateway_requests_total{route="/submit",status="200"}': 3,
                'mooncake_gateway_requests_total{route="/submit",status="400"}': 1,
                'mooncake_gateway_requests_total{route="/submit",status="401"}': 1,
                'mooncake_gateway_requests_total{route="/api/task/done",status="200"}': 1,
                'mooncake_gateway_requests_total{route="/uuid",status="200"}': 1,
                'mooncake_gateway_request_duration_seconds_count{route="/submit"}': 5,
                "mooncake_gateway_produce_errors_total": 0}
        got = {k: m.get(k) for k in want}
        assert got == want, got
        assert m['mooncake_gateway_request_duration_seconds_bucket{route="/submit",le="+Inf"}'] == 5
        assert 0 < m['mooncake_gateway_request_duration_seconds_sum{route="/submit"}'] < 10
    finally:
        env.stop_all()


def test_a_broker_outage_answers_503_in_bounded_time():
    env = Env(create_topics=False)
    dead = free_port()
    try:
        gw = env.start("gateway", *AUTH, "-b", f"127.0.0.1:{dead}",
                       "--gateway-produce-timeout-ms", "1500", wait_ready=False,
                       MOONCAKE_CREATE_TOPICS="false")
        port = gw.http_port
        wait_until("healthz", lambda: gw.poll() is None and
                   _quiet(lambda: get_text(port, "/healthz")[0] == 200), timeout=20)
        status, text = get_text(port, "/readyz")
        assert status == 503 and "broker" in text, text
        t0 = time.time()
        a = req(port, "POST", "/submit", task())
        took = time.time() - t0
        check_error(a, 503, "did not acknowledge")
        assert took < 5, f"a broker outage held the request {took:.1f} s"
        assert get_text(port, "/healthz")[0] == 200
        assert metric_values(get_text(port, "/metrics")[1])[
            "mooncake_gateway_produce_errors_total"] == 1

        # while the first request with a key is unanswered, a second gets 409; after its
        # 503 the key is free again (a failure is not remembered)
        key = {"Idempotency-Key": "during-outage"}
        first = []
        th = threading.Thread(target=lambda: first.append(
            req(port, "POST", "/submit", task(uuid="o1"), headers=key)))
        th.start()
        time.sleep(0.4)
        check_error(req(port, "POST", "/submit", task(uuid="o1"), headers=key), 409,
                    "still being answered")
        th.join(10)
        assert not th.is_alive()
        check_error(first[0], 503, "did not acknowledge")
        retry = req(port, "POST", "/submit", task(uuid="o1"), headers=key)
        check_error(retry, 503, "did not acknowledge")
        assert "idempotent-replayed" not in retry.headers
    finally:
        env.stop_all()


def test_sigterm_during_an_outage_answers_everything_and_exits_0():
    """A request waits on a dead broker at SIGTERM: new requests get 503 "shutting
    down" (after the broker probe in progress, at most its 2 s timeout), the waiting
    one gets its 503 at its produce timeout, and the gateway exits 0 right after it."""
    env = Env(create_topics=False)
    dead = free_port()
    try:
        gw = env.start("gateway", *AUTH, "-b", f"127.0.0.1:{dead}", "--no-create-topics",
                       "--gateway-produce-timeout-ms", "5000", wait_ready=False)
        port = gw.http_port
        wait_until("healthz", lambda: gw.poll() is None and
                   _quiet(lambda: get_text(port, "/healthz")[0] == 200), timeout=20)
        waiting = []
        th = threading.Thread(target=lambda: waiting.append(req(port, "POST", "/submit", task())))
        th.start()
        time.sleep(0.3)
        t_sig = time.time()
        gw.send_signal(signal.SIGTERM)
        wait_until("readyz says shutting down", lambda: "shutting down" in (
            _quiet(lambda: get_text(port, "/readyz")[1]) or ""), timeout=5, interval=0.05)
        took = time.time() - t_sig
        assert took < 0.5, f"new requests were still taken {took:.1f} s after SIGTERM"
        check_error(req(port, "POST", "/submit", task()), 503, "the gateway is shutting down")
        check_error(req(port, "POST", "/api/task/done", {"appId": "shop", "uuid": "x"}), 503,
                    "the gateway is shutting down")
        th.join(10)
        t_answer = time.time()
        assert not th.is_alive(), "a request hung during the stop"
        check_error(waiting[0], 503, "did not acknowledge")
        assert gw.wait(15) == 0, env.log(gw)
        assert time.time() - t_sig < 9, f"exit {time.time() - t_sig:.1f} s after SIGTERM"
        # Nothing else is left to wait for once the last answer is out: the readers of the
        # dead broker stopped at the SIGTERM, and no client waits on a last metrics push.
        assert time.time() - t_answer < 1, \
            f"exit {time.time() - t_answer:.1f} s after the last answer"
        assert "gateway stopped" in env.log(gw)
    finally:
        env.stop_all()


def _quiet(f):
    try:
        return f()
    except OSError:
        return False


def test_sigterm_answers_every_request_in_flight():
    env = Env()
    try:
        # Kafka holds every batch 1.5 s: the requests below are all in flight at SIGTERM
        gw = start_gateway(env, "-X", "linger.ms=1500")
        port = gw.http_port
        answers, errors = [], []

        def client(i):
            try:
                answers.append(req(port, "POST", "/submit", task(uuid=f"inflight-{i}")))
            except (OSError, http.client.HTTPException) as e:
                errors.append(e)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(12)]
        for t in threads:
            t.start()
        wait_until("12 requests in flight", lambda: metric_values(env.metrics(gw)).get(
            "mooncake_gateway_in_flight") == 12, timeout=5, interval=0.02)
        time.sleep(0.3)  # in flight counts from the headers: let every body be handed over
        gw.send_signal(signal.SIGTERM)
        late = []
        for _ in range(3):  # after the signal: an answer, or no connection at all
            try:
                late.append(req(port, "POST", "/submit", task()))
            except (OSError, http.client.HTTPException):
                pass
        for t in threads:
            t.join(15)
            assert not t.is_alive(), "a request hung during the stop"
        assert gw.wait(15) == 0, env.log(gw)
        assert errors == [], errors
        assert sorted(a.json["data"]["uuid"] for a in answers if a.status == 200) == sorted(
            f"inflight-{i}" for i in range(12)), answers
        # one sent in the instant before the gateway saw the signal may still be taken
        taken = [a for a in late if a.status == 200]
        for a in late:
            if a.status != 200:
                check_error(a, 503, "the gateway is shutting down")
        keys = sorted(k for k, _, _ in commands(env))
        assert keys == sorted([f"shop/inflight-{i}" for i in range(12)] +
                              ["shop/" + a.json["data"]["uuid"] for a in taken]), keys
    finally:
        env.stop_all()


def test_https():
    env = Env()
    key, cert = os.path.join(TMP, "k.pem"), os.path.join(TMP, "c.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", cert, "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True)
    try:
        gw = start_gateway(env, "--gateway-tls-cert", cert, "--gateway-tls-key", key,
                           wait_ready=False)
        ctx = ssl.create_default_context(cafile=cert)
        wait_until("ready over HTTPS", lambda: gw.poll() is None and _quiet(
            lambda: get_text(gw.http_port, "/readyz", tls=ctx)[0] == 200), timeout=30)
        a = req(gw.http_port, "POST", "/submit", task(uuid="tls-1"), tls=ctx)
        assert a.status == 200 and a.json["data"]["uuid"] == "tls-1", a
        assert [k for k, _, _ in commands(env)] == ["shop/tls-1"]
        # plain HTTP on the HTTPS port is not served
        got = http_raw(gw.http_port, "/uuid", "GET", b"GET /uuid HTTP/1.1\r\nHost: x\r\n\r\n")
        assert got is None or got.status != 200, got
        if got is not None:
            SEEN.pop()  # whatever TLS answers to plain text is not an API answer
    finally:
        env.stop_all()
    # unreadable or missing TLS files are configuration errors naming the flag
    junk = os.path.join(TMP, "junk.pem")
    with open(junk, "w") as f:
        f.write("not a certificate\n")
    for args, needle in (
            (("--gateway-tls-cert", os.path.join(TMP, "missing.pem"), "--gateway-tls-key", key),
             "--gateway-tls-cert"),
            (("--gateway-tls-cert", cert, "--gateway-tls-key", os.path.join(TMP, "missing.pem")),
             "--gateway-tls-key"),
            (("--gateway-tls-cert", junk, "--gateway-tls-key", key), "--gateway-tls-cert"),
            (("--gateway-tls-cert", cert), "--gateway-tls-key")):
        r = subprocess.run(gateway_cmd(free_port(), *AUTH, "--no-create-topics", *args),
                           env=env.env(), capture_output=True, text=True, timeout=30)
        assert r.returncode == 2 and needle in r.stderr, (args, r.returncode, r.stderr)


def test_start_up_refuses_a_gateway_without_usable_tokens():
    env = Env(create_topics=False)

    def start(*args):
        return subprocess.run(gateway_cmd(free_port(), "--no-create-topics", *args),
                              env=env.env(MOONCAKE_APP_TOKENS="", MOONCAKE_INNER_TOKENS=""),
                              capture_output=True, text=True, timeout=30)

    r = start()
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "no tokens: set MOONCAKE_APP_TOKENS" in r.stderr and "--gateway-no-auth" in r.stderr, \
        r.stderr
    for args, needle in ((("--app-tokens", "shop=short"), "at least 16 characters"),
                         (("--app-tokens", "shop=has space 0123456789"), "spaces"),
                         (("--app-tokens", "shop"), "has no '='"),
                         (("--inner-tokens", "short"), "at least 16"),
                         (("--app-tokens", "@" + os.path.join(TMP, "no-such-file")),
                          "no-such-file"),
                         ((*AUTH, "--target-topics", "shop"), "MOONCAKE_TARGET_TOPICS"),
                         ((*AUTH, "--target-topics", "shop=bad topic"), "not a Kafka topic name")):
        r = start(*args)
        assert r.returncode == 2 and needle in r.stderr, (args, r.returncode, r.stderr)


def test_no_auth_serves_every_app_without_a_token():
    env = Env()
    try:
        port = env.start("gateway", "--gateway-no-auth").http_port
        a = req(port, "POST", "/submit", task(appId="anyone"), token=None)
        b = req(port, "POST", "/inner/submit", task(appId="other", uuid="u"), token=None)
        assert (a.status, b.status) == (200, 200), (a, b)
        assert sorted(k for k, _, _ in commands(env)) == sorted(
            ["anyone/" + a.json["data"]["uuid"], "other/u"])
    finally:
        env.stop_all()


def test_per_ip_connection_limit():
    env = Env()
    try:
        port = start_gateway(env, "--gateway-max-connections-per-ip", "2").http_port

        def served_connection():
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            try:
                if req(port, "GET", "/uuid", token=None, conn=c).status == 200:
                    return c
            except OSError:
                pass
            c.close()
            return None

        # Two keep-alive connections, used and kept open. The server counts a closed
        # connection until its thread has read the close (the readiness probe's, just
        # before): so a slot may take a moment to come free, as it does further down.
        held = [wait_until("a free slot", served_connection, timeout=5) for _ in range(2)]
        # a third from the same address is closed without an answer
        assert http_raw(port, "/uuid", "GET", b"GET /uuid HTTP/1.1\r\nHost: x\r\n\r\n") is None
        for c in held:  # the two held ones still work
            assert req(port, "POST", "/submit", task(), conn=c).status == 200
        held[0].close()
        # once one is closed a new connection is served
        wait_until("a free slot", lambda: _quiet(
            lambda: req(port, "GET", "/uuid", token=None).status == 200), timeout=5)
        held[1].close()
    finally:
        env.stop_all()


def test_many_connections_waiting_on_one_thread_are_all_answered():
    """About 128 keep-alive connections on one HTTP thread, each with a submit waiting
    for Kafka's acknowledgement at the same moment, 30 rounds: every one is answered at
    once. (With
    libmicrohttpd 0.9.75's epoll loop, a thread whose epoll_wait returned a full buffer
    of 128 events waited again for up to a minute before handling them: every client
    stalled.)"""
    env = Env()
    try:
        port = start_gateway(env, "--gateway-threads", "1").http_port
        body = json.dumps(task()).encode()
        request = (f"POST /submit HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {SHOP}\r\n"
                   f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                   f"\r\n").encode() + body
        # 127 to 129 connections: the poll loop's buffer, give or take its wake-up fd
        socks = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(129)]
        try:
            for rnd in range(30):
                active = socks[:127 + rnd % 3]
                t0 = time.time()
                for sk in active:
                    sk.sendall(request)
                for i, sk in enumerate(active):
                    got = b""
                    while b"\r\n\r\n" not in got or not got.rstrip().endswith(b"}"):
                        try:
                            chunk = sk.recv(4096)
                        except socket.timeout:
                            raise AssertionError(
                                f"round {rnd}: connection {i} unanswered after "
                                f"{time.time() - t0:.1f} s") from None
                        assert chunk, f"round {rnd}: connection {i} closed"
                        got += chunk
                    assert got.startswith(b"HTTP/1.1 200"), got[:200]
        finally:
            for sk in socks:
                sk.close()
        assert len(commands(env)) == sum(127 + r % 3 for r in range(30))
    finally:
        env.stop_all()


def test_past_the_connection_limit_new_connections_wait():
    env = Env()
    try:
        port = start_gateway(env, "--gateway-max-connections", "16").http_port
        held = [http.client.HTTPConnection("127.0.0.1", port, timeout=5) for _ in range(16)]
        for c in held:
            assert req(port, "GET", "/uuid", token=None, conn=c).status == 200
        s = socket.create_connection(("127.0.0.1", port), timeout=1.0)
        try:
            s.sendall(b"GET /uuid HTTP/1.1\r\nHost: x\r\n\r\n")
            try:
                got = s.recv(100)
                raise AssertionError(f"a 17th connection was served at once: {got!r}")
            except socket.timeout:
                pass  # waits in the listen queue, not refused and not closed
            held[3].close()
            s.settimeout(5)
            got = b""
            while b"\r\n\r\n" not in got or not got.endswith(b"}"):
                b = s.recv(4096)
                assert b, f"closed: {got!r}"
                got += b
        finally:
            s.close()
        head, _, body = got.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        a = record("/uuid", "GET", int(lines[0].split()[1]),
                   [tuple(x.strip() for x in ln.split(":", 1)) for ln in lines[1:]], body)
        assert a.status == 200 and UUID7.fullmatch(a.json["data"]["uuid"]), a
        for c in held:
            c.close()
    finally:
        env.stop_all()


# ---- end to end -----------------------------------------------------------------------------

def test_a_gateway_task_is_called_once_on_time_and_a_cancelled_one_never():
    env = Env()
    server = CallbackServer()
    try:
        port = start_gateway(env).http_port
        start_pipeline(env, executor_env={"MOONCAKE_EXECUTOR_ALLOW_CIDRS": "127.0.0.0/8"})
        body = "{\"order\":42,\"note\":\"caf\u00e9\"}"
        run_it = req(port, "POST", "/submit", {
            "appId": "shop", "delayMs": 1500,
            "callback": {"url": server.url("/run?x=1"), "method": "put", "body": body,
                         "headers": {"X-Order": "42", "Content-Type": "application/json"}}})
        skip = req(port, "POST", "/submit", {"appId": "shop", "delayMs": 1500,
                                              "callback": {"url": server.url("/cancelled")}})
        assert run_it.status == skip.status == 200, (run_it, skip)
        done = req(port, "POST", "/api/task/done",
                    {"appId": "shop", "uuid": skip.json["data"]["uuid"]})
        assert done.status == 200, done
        uid = run_it.json["data"]["uuid"]
        due = next(ms(p["task"]["due_at"]) for k, kind, p in commands(env)
                   if k == "shop/" + uid and kind == "mooncake.Submit")
        wait_until("the callback", lambda: server.calls_to("/run?x=1"), timeout=20, interval=0.05)
        time.sleep(max(0, (due + 1500 - now_ms()) / 1000))  # a repeat or the cancelled one
        calls = server.calls_to("/run?x=1")
        assert len(calls) == 1, f"{len(calls)} calls"
        c = calls[0]
        assert -5 <= c["at"] - due <= 1000, f"called {c['at'] - due:.0f} ms from due"
        assert c["method"] == "PUT" and c["body"] == body.encode(), c
        assert c["headers"]["x-order"] == "42" and \
            c["headers"]["content-type"] == "application/json", c["headers"]
        assert c["headers"]["idempotency-key"] == f"shop/{uid}:1", c["headers"]
        assert server.calls_to("/cancelled") == [], "a cancelled task was called"
    finally:
        server.close()
        env.stop_all()


def test_mooncake_all_calls_what_its_gateway_took():
    """mooncake all: a task submitted through the gateway is called on time, a cancelled
    one is not, a failing one is retried; a task submitted with mooncakectl is called; a
    task whose endpoint answers 404 is dead-lettered, requeued with mooncakectl once the
    endpoint is fixed, and called."""
    env = Env()
    fixed = threading.Event()

    def respond(call):
        if call["path"] == "/flaky" and call["nth"] == 1:
            return 500, {}, b"not yet"
        if call["path"] == "/broken" and not fixed.is_set():
            return 404, {}, b"no such order"
        return 200, {}, b"ok"

    server = CallbackServer(respond)
    try:
        p = env.start("all", *AUTH, "--executor-allow-cidrs", "127.0.0.1/32", wait_ready=False)
        env.wait_ready(p, timeout=90)
        status, text = get_text(p.http_port, "/readyz")
        for role in ("router", "store", "wheel", "executor", "retry", "broker"):
            assert f"{role}: ok" in text, text
        port = p.http_port
        due = now_ms() + 2000

        def cb(path, body):
            return {"url": server.url(path), "body": body, "headers": {"X-Order": "42"}}

        on_time = req(port, "POST", "/submit", {"appId": "shop", "expireTime": due,
                                                 "callback": cb("/on-time", "hello")})
        cancelled = req(port, "POST", "/submit", {"appId": "shop", "expireTime": due,
                                                   "callback": cb("/cancelled", "x")})
        flaky = req(port, "POST", "/submit", {
            "appId": "shop", "expireTime": due, "callback": cb("/flaky", "y"),
            "retry": {"maxAttempts": 3, "initialBackoffMs": 200, "maxBackoffMs": 500}})
        assert on_time.status == cancelled.status == flaky.status == 200
        assert req(port, "POST", "/api/task/done",
                    {"appId": "shop", "uuid": cancelled.json["data"]["uuid"]}).status == 200
        wait_until("the calls", lambda: server.calls_to("/on-time") and
                   len(server.calls_to("/flaky")) >= 2, timeout=30, interval=0.05)
        time.sleep(1.0)  # anything that would come twice, or late, comes now
        calls = server.calls_to("/on-time")
        assert len(calls) == 1, f"{len(calls)} calls"
        c = calls[0]
        assert c["body"] == b"hello" and c["headers"].get("x-order") == "42"
        assert -5 <= c["at"] - due <= 1000, f"called {c['at'] - due:.0f} ms from due"
        assert server.calls_to("/cancelled") == [], "a cancelled task was called"
        fl = server.calls_to("/flaky")
        assert [x["headers"]["idempotency-key"].rsplit(":", 1)[1] for x in fl] == ["1", "2"], fl

        # the operator's side: mooncakectl submits straight to Kafka, and requeues a dead letter
        def ctl(*args):
            r = subprocess.run([CTL, "-b", BOOTSTRAP, "-p", env.prefix, *args],
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, (args, r.stdout, r.stderr)
            return r.stdout
        ctl("submit", "--app", "shop", "--id", "from-ctl", "--in", "500ms",
            "--url", server.url("/from-ctl"), "--body", "via kafka")
        ctl("submit", "--app", "shop", "--id", "broken", "--in", "200ms",
            "--url", server.url("/broken"))
        deadline = time.time() + 30
        dead = []
        while time.time() < deadline and not (server.calls_to("/from-ctl") and dead):
            dead = [json.loads(x) for x in ctl("-J", "-q", "dead", "-k", "shop/broken")
                    .splitlines() if x.strip()]
            time.sleep(0.3)
        assert [c["body"] for c in server.calls_to("/from-ctl")] == [b"via kafka"]
        assert dead, "the 404 task was not dead-lettered"
        fixed.set()
        ctl("requeue", "-k", "shop/broken")
        wait_until("the requeued call", lambda: len(server.calls_to("/broken")) >= 2,
                   timeout=30, interval=0.1)
        time.sleep(0.5)
        assert len(server.calls_to("/broken")) == 2, "the requeued task was not called once"
    finally:
        server.close()
        env.stop_all()


# ---- recurring jobs --------------------------------------------------------------------------

def job_commands(env):
    """Every record in job-commands now, as (key, partition, payload kind, payload)."""
    out = []
    for m in read_settled(env, "job-commands", timeout=20):
        kind, payload = decode("JobCommand", m.value())["payload"]
        out.append((m.key().decode(), m.partition(), kind, payload))
    return out


def job(**over):
    j = {"appId": "shop", "jobId": "nightly-report",
         "schedule": {"cron": "0 0 2 * * ?", "timeZone": "Asia/Shanghai"},
         "callback": {"url": "https://shop.example.com/report"}}
    j.update(over)
    return j


def test_a_job_put_lands_on_its_keys_partition_with_its_next_fire_times():
    env = Env(partitions=6)
    try:
        port = start_gateway(env, *RETRY_FLAGS).http_port
        t0 = now_ms()
        a = req(port, "POST", "/jobs", job(
            startTime=t0 - 1000, maxRuns=100, misfire="catch_up", catchUpLimit=3,
            misfireThresholdMs=60000, overlap="SERIAL", paused=True,
            callback={"url": "https://shop.example.com/report", "method": "put",
                      "headers": {"X-Trace": "abc"}, "body": "{\"report\":\"daily\"}",
                      "timeoutMs": 9000},
            retry={"maxAttempts": 3}, metadata={"team": "bi"}, unknownField=[1]))
        t1 = now_ms()
        assert a.status == 200, a
        data = a.json["data"]
        assert (data["appId"], data["jobId"]) == ("shop", "nightly-report"), data
        fires = data["nextFireTimes"]
        # 02:00 in Shanghai (UTC+8, no DST) is 18:00 UTC, every day from now on
        assert len(fires) == 5 and all(f % 86_400_000 == 64_800_000 for f in fires), fires
        assert t0 < fires[0] <= t1 + 86_400_000 and all(
            b - a_ == 86_400_000 for a_, b in zip(fires, fires[1:])), fires
        # a fixed rate from a start time: exactly start + k * rate
        start = (t0 // 1000 + 3600) * 1000
        b = req(port, "POST", "/jobs", {"appId": "shop", "jobId": "sync", "startTime": start,
                                         "schedule": {"fixedRateMs": 60_000},
                                         "callback": {"url": "http://h.example"}})
        assert b.status == 200 and b.json["data"]["nextFireTimes"] == [
            start + k * 60_000 for k in range(5)], b
        # fixed delay: only the first (the others follow finished occurrences)
        c = req(port, "POST", "/jobs", {"appId": "shop", "jobId": "poll", "startTime": start,
                                         "schedule": {"fixedDelayMs": 5000},
                                         "callback": {"url": "http://h.example"}})
        assert c.status == 200 and c.json["data"]["nextFireTimes"] == [start], c
        ids = [f"j{i}" for i in range(12)]
        for i in ids:
            assert req(port, "POST", "/jobs", job(jobId=i)).status == 200
        recs = job_commands(env)
        assert sorted(k for k, _, _, _ in recs) == sorted(
            ["shop/nightly-report", "shop/sync", "shop/poll"] + ["shop/" + i for i in ids]), recs
        wrong = {k: p for k, p, _, _ in recs if p != home_partition(k, 6)}
        assert not wrong, f"not on their murmur2 partition: {wrong}"
        assert len({p for _, p, _, _ in recs}) > 1
        assert all(kind == "mooncake.PutJob" for _, _, kind, _ in recs)
        by_key = {k: p["job"] for k, _, _, p in recs}
        j = by_key["shop/nightly-report"]
        assert (j["app_id"], j["job_id"]) == ("shop", "nightly-report")
        assert j["schedule"] == {"kind": "CRON", "cron": "0 0 2 * * ?",
                                 "time_zone": "Asia/Shanghai", "interval_ms": 0}, j["schedule"]
        assert (ms(j["start_at"]), ms(j["end_at"]), j["max_runs"]) == (t0 - 1000, 0, 100)
        assert (j["misfire"], j["catch_up_limit"], j["misfire_threshold_ms"], j["overlap"],
                j["paused"]) == ("CATCH_UP", 3, 60000, "SERIAL", True), j
        cb = j["callback"]
        assert (cb["url"], cb["method"], cb["headers"], cb["body"], cb["timeout_ms"]) == (
            "https://shop.example.com/report", "PUT", {"X-Trace": "abc"},
            b'{"report":"daily"}', 9000), cb
        # a partial retry takes the rest from --retry-*
        assert j["retry"] == ("mooncake.RetryPolicy", {
            "max_attempts": 3, "initial_backoff_ms": 250, "multiplier": 3.0,
            "max_backoff_ms": 9000}), j["retry"]
        assert j["metadata"] == {"team": "bi"} and t0 <= ms(j["created_at"]) <= t1
        # the defaults of the schema
        d = by_key["shop/j0"]
        assert (d["misfire"], d["catch_up_limit"], d["misfire_threshold_ms"], d["overlap"],
                d["paused"], d["max_runs"], ms(d["start_at"]), ms(d["end_at"]), d["retry"],
                d["metadata"], d["callback"]["method"]) == (
            "FIRE_ONCE_NOW", 10, 5000, "PARALLEL", False, 0, 0, 0, None, {}, "POST"), d
        s = by_key["shop/sync"]["schedule"]
        assert s == {"kind": "FIXED_RATE", "cron": "", "time_zone": "UTC",
                     "interval_ms": 60000}, s
        assert by_key["shop/poll"]["schedule"]["kind"] == "FIXED_DELAY"
    finally:
        env.stop_all()


def test_bad_jobs_get_400_naming_the_field_and_write_nothing():
    env = Env()
    try:
        port = start_gateway(env).http_port
        cron = lambda expr, **kw: job(schedule={"cron": expr, **kw})  # noqa: E731
        cases = [
            (cron("0 0 25 * * ?"), "schedule.cron: "),
            (cron("0 0 2 * * ?", timeZone="Mars/Base"),
             "schedule.timeZone: unknown time zone 'Mars/Base'"),
            (job(schedule={"fixedRateMs": 0}),
             "schedule.fixedRateMs is 0: it must be at least 1000 ms"),
            (job(schedule={"fixedDelayMs": 10}),
             "schedule.fixedDelayMs is 10: it must be at least 1000 ms"),
            (cron("0 0 0 30 2 ?"), "schedule.cron never fires"),
            (job(schedule={"cron": "@daily", "fixedRateMs": 60000}),
             "schedule: give exactly one of cron, fixedRateMs, fixedDelayMs"),
            (job(schedule={}), "schedule: give exactly one of cron, fixedRateMs, fixedDelayMs"),
            (job(schedule=None), "schedule is required"),
            (job(schedule={"fixedRateMs": 60000, "timeZone": "UTC"}),
             "schedule.timeZone is only for cron"),
            (job(endTime=now_ms() - 1000), "endTime is in the past: the job would never fire"),
            (job(startTime=1767225600), "startTime 1767225600 is before 2000-01-01"),
            (job(misfire="SOMETIMES"), "misfire 'SOMETIMES' is not one of FIRE_ONCE_NOW"),
            (job(overlap="QUEUE"), "overlap 'QUEUE' is not one of PARALLEL"),
            (job(catchUpLimit=0), "catchUpLimit 0 is outside [1, 1000]"),
            (job(maxRuns=-1), "maxRuns -1 is outside"),
            (job(paused="no"), "paused must be true or false"),
            (job(jobId=""), "jobId is empty"),
            (job(jobId="x" * 201), "jobId is longer than 200 bytes"),
            (job(appId="sh/op"), "appId 'sh/op' contains '/'"),
            (job(callback={"url": "ftp://x"}), "callback.url 'ftp://x' is not http://, https:// or group://"),
            (job(callback=None), "callback is required"),
            (job(retry={"maxAttempts": 0}), "retry.maxAttempts 0 is outside [1, 1000]"),
            ({k: v for k, v in job().items() if k != "jobId"}, "jobId is required"),
            ("[1]", "body must be a JSON object"),
        ]
        for body, needle in cases:
            check_error(req(port, "POST", "/jobs", body), 400, needle)
        for path in ("/jobs/pause", "/jobs/resume", "/jobs/delete", "/jobs/trigger"):
            check_error(req(port, "POST", path, {"appId": "shop"}), 400, "jobId is required")
            check_error(req(port, "POST", path, {"appId": "shop", "jobId": 5}), 400,
                        "jobId must be a string, not an integer")
            check_error(req(port, "POST", path, "{"), 400, "body is not valid JSON")
        assert job_commands(env) == []
    finally:
        env.stop_all()


def test_a_job_that_delivers_to_kafka():
    """A job's kafkaTarget, latePolicy and onSuccess land in its PutJob as sent; a
    target (its own or a follow-up's) the app is not allowed gets 400 naming the
    field and writes nothing."""
    env = Env()
    try:
        port = start_gateway(env, "--target-topics", "shop=shop.ticks,shop=shop.audit"
                             ).http_port
        a = req(port, "POST", "/jobs", job(
            jobId="tick", callback=None, schedule={"fixedRateMs": 60_000},
            kafkaTarget={"topic": "shop.ticks", "key": "tick", "value": "{}"},
            latePolicy={"maxLateMs": 5000, "action": "DROP"},
            onSuccess=[{"delayMs": 10, "kafkaTarget": {"topic": "shop.audit"}}]))
        assert a.status == 200 and a.json["data"]["jobId"] == "tick", a
        bad = [
            (job(jobId="x", callback=None, kafkaTarget={"topic": "billing.events"}),
             "kafkaTarget.topic 'billing.events' is not allowed for app 'shop'"),
            (job(jobId="x", onSuccess=[{"kafkaTarget": {"topic": "shop.other"}}]),
             "onSuccess[0].kafkaTarget.topic 'shop.other' is not allowed"),
            (job(jobId="x", kafkaTarget={"topic": "shop.ticks"}),
             "give callback or kafkaTarget, not both"),
            (job(jobId="x", callback=None, kafkaTarget={"topic": "bad topic"}),
             "kafkaTarget.topic 'bad topic' is not a Kafka topic name"),
            (job(jobId="x", latePolicy={"maxLateMs": 1}), "latePolicy.action is required"),
        ]
        for body, needle in bad:
            check_error(req(port, "POST", "/jobs", body), 400, needle)
        recs = job_commands(env)
        assert [k for k, _, _, _ in recs] == ["shop/tick"], recs
        j = recs[0][3]["job"]
        assert j["callback"]["url"] == "", j["callback"]
        assert j["kafka_target"] == ("mooncake.KafkaTarget", {
            "topic": "shop.ticks", "key": b"tick", "value": b"{}", "headers": {}}), j
        assert j["late_policy"] == ("mooncake.LatePolicy", {"max_late_ms": 5000,
                                                            "action": "DROP"}), j
        assert len(j["on_success"]) == 1 and j["on_success"][0]["delay_ms"] == 10 and \
            j["on_success"][0]["kafka_target"][1]["topic"] == "shop.audit", j["on_success"]
    finally:
        env.stop_all()


def test_job_actions_land_as_job_actions():
    env = Env(partitions=4)
    try:
        port = start_gateway(env).http_port
        t0 = now_ms()
        answers = {}
        for action in ("pause", "resume", "delete", "trigger"):
            a = req(port, "POST", "/jobs/" + action, {"appId": "shop", "jobId": "nightly"})
            assert a.status == 200, a
            answers[action] = a.json["data"]
        t1 = now_ms()
        assert answers["pause"] is None and answers["resume"] is None and \
            answers["delete"] is None, answers
        task_id = answers["trigger"]["taskId"]
        assert re.fullmatch(r"nightly@\d{13}", task_id), task_id
        recs = job_commands(env)
        assert [(k, p, kind) for k, p, kind, _ in recs] == [
            ("shop/nightly", home_partition("shop/nightly", 4), "mooncake.JobAction")] * 4, recs
        # one partition, so in the order sent
        assert [p["action"] for _, _, _, p in recs] == ["PAUSE", "RESUME", "DELETE", "TRIGGER"]
        for _, _, _, p in recs:
            assert (p["app_id"], p["job_id"]) == ("shop", "nightly")
            assert t0 <= ms(p["requested_at"]) <= t1, (t0, p, t1)
        # the trigger's occurrence is <job_id>@<requested_at>
        assert task_id == "nightly@%d" % ms(recs[3][3]["requested_at"]), (task_id, recs[3])
    finally:
        env.stop_all()


def test_job_routes_take_only_their_apps_token():
    env = Env()
    try:
        port = start_gateway(env).http_port
        for path, body in (("/jobs", job()), ("/jobs/pause", {"appId": "shop", "jobId": "j"}),
                           ("/jobs/trigger", {"appId": "shop", "jobId": "j"})):
            check_error(req(port, "POST", path, body, token=None), 401, "Bearer")
            check_error(req(port, "POST", path, body, token="not-a-token"), 401, "not valid")
            check_error(req(port, "POST", path, body, token=BILLING), 403,
                        "the token is not one of appId 'shop'")
            check_error(req(port, "POST", path, body, token=INNER), 403, "inner tokens")
        check_error(req(port, "POST", "/jobs/preview", {"schedule": {"cron": "@daily"}},
                        token=None), 401, "Bearer")
        check_error(req(port, "PUT", "/jobs", job()), 405, "/jobs takes GET, POST, not PUT")
        check_error(req(port, "GET", "/jobs?appId=shop", token=None), 401, "Bearer")
        check_error(req(port, "GET", "/jobs?appId=shop", token=BILLING), 403,
                    "the token is not one of appId 'shop'")
        assert job_commands(env) == []
        # billing's token acts on billing's jobs
        a = req(port, "POST", "/jobs", job(appId="billing"), token=BILLING)
        assert a.status == 200, a
        assert [(k, kind) for k, _, kind, _ in job_commands(env)] == [
            ("billing/nightly-report", "mooncake.PutJob")]
    finally:
        env.stop_all()


def test_job_preview_answers_fire_times_and_writes_nothing():
    env = Env()
    try:
        port = start_gateway(env).http_port
        t0 = now_ms()
        a = req(port, "POST", "/jobs/preview",
                {"schedule": {"cron": "0 30 2 * * ?", "timeZone": "Europe/Berlin"}})
        assert a.status == 200, a
        fires = a.json["data"]["nextFireTimes"]
        assert len(fires) == 5 and t0 < fires[0] and fires == sorted(fires), fires
        # 02:30 Berlin is 00:30 or 01:30 UTC (or 01:00 on the spring-forward night)
        assert all(f % 3_600_000 in (1_800_000, 0) for f in fires), fires
        start = (t0 // 1000 + 60) * 1000
        b = req(port, "POST", "/jobs/preview", {"schedule": {"fixedRateMs": 1000},
                                                 "startTime": start, "endTime": start + 2500,
                                                 "count": 100})
        assert b.status == 200 and b.json["data"]["nextFireTimes"] == [
            start, start + 1000, start + 2000], b
        c = req(port, "POST", "/jobs/preview", {"schedule": {"cron": "*/10 * * * * ?"},
                                                 "count": 100})
        assert c.status == 200 and len(c.json["data"]["nextFireTimes"]) == 100, c
        check_error(req(port, "POST", "/jobs/preview", {"schedule": {"cron": "0 0 0 30 2 ?"}}),
                    400, "schedule.cron never fires")
        check_error(req(port, "POST", "/jobs/preview", {"schedule": {"cron": "@daily"},
                                                         "count": 101}),
                    400, "count 101 is outside [1, 100]")
        check_error(req(port, "POST", "/jobs/preview", {"schedule": {"cron": "@daily",
                                                                      "timeZone": "Nowhere"}}),
                    400, "schedule.timeZone: unknown time zone 'Nowhere'")
        assert job_commands(env) == []
    finally:
        env.stop_all()


# ---- the contract document ------------------------------------------------------------------

def served_routes():
    """(path, method) the gateway's sources serve: its route table and the probes."""
    with open(os.path.join(SOURCE_DIR, "gateway", "gateway.c")) as f:
        api = re.findall(r'\[R_\w+\]\s*=\s*\{"(/[^"]*)",\s*"(\w+)"', f.read())
    with open(os.path.join(SOURCE_DIR, "common", "http_server.c")) as f:
        probes = set(re.findall(r'strcmp\(url, "(/\w+)"\)', f.read()))
    assert len(api) >= 18 and probes == {"/metrics", "/healthz", "/readyz"}, (api, probes)
    return {(p, m.lower()) for p, m in api} | {(p, "get") for p in probes}


def test_get_jobs_lists_what_the_jobs_role_committed():
    """GET /jobs answers from the gateway's view of the jobs table: a put shows once
    the jobs role has taken it, with its next fire time; a pause and a delete show
    too; pages follow each other; a restarted gateway reads the table again and
    lists the same; other apps' jobs are not listed and their tokens cannot list."""
    env = Env(partitions=3)
    try:
        env.start("jobs", instance="j", MOONCAKE_JOBS_AHEAD_MS=2000)
        port = start_gateway(env).http_port
        t0 = now_ms()
        start = (t0 // 1000 + 3600) * 1000  # an hour from now: nothing fires in the test
        ids = ["e", "a", "d", "b", "c"]
        for i in ids:
            a = req(port, "POST", "/jobs", job(jobId=i, schedule={"fixedRateMs": 60_000},
                                               startTime=start))
            assert a.status == 200, a
        assert req(port, "POST", "/jobs", job(appId="billing", jobId="a"),
                   token=BILLING).status == 200
        # every second, PARALLEL (the default): its occurrences are written 1-2 s ahead
        assert req(port, "POST", "/jobs", job(appId="billing", jobId="tick",
                                              schedule={"fixedRateMs": 1000}),
                   token=BILLING).status == 200

        def page(q, token=SHOP):
            a = req(port, "GET", "/jobs?" + q, token=token)
            assert a.status == 200, a
            return a.json["data"]

        def five():
            # 503 while the gateway reads the table after its start, then a page
            a = req(port, "GET", "/jobs?appId=shop")
            assert a.status in (200, 503), a
            return a.json["data"] if a.status == 200 and len(a.json["data"]["jobs"]) == 5 \
                else None

        listed = wait_until("the five jobs listed", five)
        assert [j["jobId"] for j in listed["jobs"]] == ["a", "b", "c", "d", "e"], listed
        assert listed["next"] is None
        for j in listed["jobs"]:
            assert j["appId"] == "shop" and j["status"] == "ACTIVE", j
            assert j["nextFireAt"] == start and j["job"]["schedule"]["fixedRateMs"] == 60_000, j
        # pages of two
        p1 = page("appId=shop&limit=2")
        p2 = page("appId=shop&limit=2&after=" + p1["next"])
        p3 = page("appId=shop&limit=2&after=" + p2["next"])
        assert [[j["jobId"] for j in p["jobs"]] for p in (p1, p2, p3)] == [
            ["a", "b"], ["c", "d"], ["e"]], (p1, p2, p3)
        assert p3["next"] is None
        # billing's jobs are billing's
        assert [j["jobId"] for j in page("appId=billing", token=BILLING)["jobs"]] == ["a", "tick"]
        # the every-second job's next call is within a second, though the role has
        # written the next ones ahead and moved nextAt past them
        for _ in range(5):
            t = now_ms()
            tick = page("appId=billing&jobId=tick", token=BILLING)
            assert t < tick["nextFireAt"] <= t + 1000 + 100, (t, tick)
            time.sleep(0.3)
        # a pause and a delete
        assert req(port, "POST", "/jobs/pause", {"appId": "shop", "jobId": "b"}).status == 200
        assert req(port, "POST", "/jobs/delete", {"appId": "shop", "jobId": "c"}).status == 200
        wait_until("the pause listed", lambda: page("appId=shop&jobId=b")["status"] == "PAUSED")
        wait_until("the delete listed",
                   lambda: req(port, "GET", "/jobs?appId=shop&jobId=c").status == 404)
        one = page("appId=shop&jobId=b")
        assert one["nextFireAt"] is None, one
        assert [j["jobId"] for j in page("appId=shop&status=PAUSED")["jobs"]] == ["b"]
        assert [j["jobId"] for j in page("appId=shop&status=ACTIVE")["jobs"]] == ["a", "d", "e"]
        check_error(req(port, "GET", "/jobs?appId=shop&jobId=c"), 404, "no job 'c'")
        # bad queries name what is wrong
        for q, needle in (("", "appId is required"), ("appId=shop&limit=0", "limit must be"),
                          ("appId=shop&limit=x", "limit must be"),
                          ("appId=shop&status=RUNNING", "status must be"),
                          ("appId=shop&sort=jobId", "unknown parameter 'sort'"),
                          ("appId=shop&after=", "has no value"),
                          ("appId=shop/c&jobId=x", "must not contain '/'")):
            check_error(req(port, "GET", "/jobs?" + q), 400, needle)
        # a new gateway reads the table from the start and lists the same
        port2 = start_gateway(env, instance="g2").http_port
        again = wait_until("the second gateway loaded", lambda: (
            lambda a: a.json["data"] if a.status == 200 else None)(
                req(port2, "GET", "/jobs?appId=shop")))
        assert [(j["jobId"], j["status"]) for j in again["jobs"]] == [
            ("a", "ACTIVE"), ("b", "PAUSED"), ("d", "ACTIVE"), ("e", "ACTIVE")], again
        # a gateway told to keep no view says so
        port3 = start_gateway(env, "--gateway-jobs-view=false", instance="g3").http_port
        check_error(req(port3, "GET", "/jobs?appId=shop"), 501, "--gateway-jobs-view=false")
    finally:
        env.stop_all()


def test_the_openapi_document_is_true():
    env = Env()
    try:
        # the kafka_target example's topic is allowed
        port = start_gateway(env, "--target-topics", "shop=shop.orders.*").http_port
        ops = {(path, m) for path, item in DOC["paths"].items() for m in item
               if m in ("get", "post", "put", "patch", "delete", "head")}
        # every route the gateway serves is in the document, and the other way round
        assert served_routes() == ops, (served_routes() ^ ops)
        tokens = {"appToken": SHOP, "innerToken": INNER, "adminToken": ADMIN}
        accepted = []
        for path, method in sorted(ops):
            op = DOC["paths"][path][method]
            sec = op.get("security", [])
            token = tokens[next(iter(sec[0]))] if sec else None
            examples = (op.get("requestBody", {}).get("content", {})
                        .get("application/json", {}).get("examples", {}))
            a = req(port, method.upper(), path, {} if method == "post" else None, token=token)
            assert str(a.status) in op["responses"], (path, method, a)
            # the document's request examples, as they are, are accepted
            for name, ex in examples.items():
                a = req(port, method.upper(), path, ex["value"], token=token)
                assert a.status == 200, f"example {name} of {method} {path}: {a!r}"
                accepted.append((ex["value"].get("appId"), a.json["data"]))
        assert len(accepted) == 18, accepted
        # ... and written as they say
        recs = commands(env)
        assert len(recs) == 5, recs
        subs = {k: p["task"] for k, kind, p in recs if kind == "mooncake.Submit"}
        ex = DOC["paths"]["/submit"]["post"]["requestBody"]["content"]["application/json"][
            "examples"]["at_time_with_retry"]["value"]
        t = subs["shop/order-42-reminder"]
        assert ms(t["due_at"]) == ex["expireTime"] and t["callback"]["url"] == ex["callback"]["url"]
        assert t["retry"][1]["max_attempts"] == ex["retry"]["maxAttempts"]
        ex = DOC["paths"]["/submit"]["post"]["requestBody"]["content"]["application/json"][
            "examples"]["kafka_target"]["value"]
        t = subs["shop/" + ex["uuid"]]
        assert t["kafka_target"][1]["topic"] == ex["kafkaTarget"]["topic"], t
        assert t["late_policy"][1] == {"max_late_ms": 5000, "action": "DROP"}, t
        assert any(k.startswith("billing/") for k in subs), subs
        assert ("shop/order-42-reminder", "mooncake.Cancel") in [(k, kind) for k, kind, _ in recs]
        # the jobs' examples: two puts and the four actions; the chained submit and cancel
        jobs = job_commands(env)
        assert sorted((k, kind) for k, _, kind, _ in jobs) == sorted(
            [("shop/nightly-report", "mooncake.PutJob"), ("shop/sync-stock", "mooncake.PutJob")]
            + [("shop/nightly-report", "mooncake.JobAction")] * 4
            + [("shop/contract-42", "mooncake.AddLink"),
               ("shop/contract-42", "mooncake.CancelLink")]), jobs
        # a route the document does not list is not served
        check_error(req(port, "GET", "/api/task/list"), 404, "no such route")
        check_error(req(port, "POST", "/api/task/submit", task()), 404, "no such route")
    finally:
        env.stop_all()


def check_answers(seen, at_least, statuses=()):
    """Every answer in seen against the document: a documented route answers
    only statuses it lists for it, and every JSON answer validates against the
    schema given for that route and status (undocumented routes and methods
    against the Error envelope). At least at_least JSON answers, covering
    the statuses given."""
    checked = 0
    for path, method, status, ctype, body in seen:
        op = DOC["paths"].get(path, {}).get(method)
        if op is None:
            # HEAD of a GET route is served as the GET (without a body)
            if method == "head" and "get" in DOC["paths"].get(path, {}):
                assert status == 200 and body == b"", (path, status, body)
                continue
            want = 405 if path in DOC["paths"] else 404
            assert status == want, (path, method, status)
            schema = {"$ref": "#/components/schemas/Error"}
        else:
            resp = op["responses"].get(str(status))
            assert resp is not None, f"{method} {path} answered {status}, not in the document"
            if "$ref" in resp:
                resp = DOC["components"]["responses"][resp["$ref"].rsplit("/", 1)[1]]
            content = resp.get("content", {})
            if "application/json" not in content:
                assert not ctype.startswith("application/json"), (path, status, ctype)
                assert not content or any(ctype.startswith(c) for c in content), \
                    (path, status, ctype)
                continue
            schema = content["application/json"]["schema"]
        assert ctype.startswith("application/json"), (path, method, status, ctype, body[:200])
        try:
            jsonschema.Draft202012Validator({**schema, "components": DOC["components"]}).validate(
                json.loads(body))
        except jsonschema.ValidationError as e:
            raise AssertionError(f"{method.upper()} {path} answered {status} {body[:300]!r}, "
                                 f"not what the document says: {e.message}") from None
        checked += 1
    got = {s for _, _, s, c, _ in seen if c.startswith("application/json")}
    assert checked >= at_least and got >= set(statuses), (checked, sorted(got))


def test_every_answer_matches_the_document():
    """Every answer any test above received, against the document."""
    ok_uuid = {"$ref": "#/components/schemas/OkUuid", "components": DOC["components"]}
    for wrong in ({"code": 0, "msg": "ok", "data": {"uuid": "u", "more": 1}},
                  {"code": 0, "msg": "ok", "data": None}, {"code": 200, "msg": "ok"}):
        try:
            jsonschema.Draft202012Validator(ok_uuid).validate(wrong)
            raise AssertionError(f"the OkUuid schema let {wrong} through")
        except jsonschema.ValidationError:
            pass
    check_answers(SEEN, 301, {200, 400, 401, 403, 404, 405, 409, 413, 415, 422, 503})


if __name__ == "__main__":
    run([test_submit_writes_the_task_it_was_sent,
         test_submit_lands_on_the_keys_murmur2_partition,
         test_inner_submit_and_cancel,
         test_chained_submits_and_cancels_land_as_chain_links,
         test_a_chain_submitted_here_runs_one_at_a_time,
         test_kafka_targets_and_late_policies_at_submit,
         test_follow_ups_at_submit,
         test_uuid_is_a_time_ordered_uuidv7,
         test_malformed_requests_get_400_naming_the_field_and_write_nothing,
         test_tokens_act_only_on_their_own_app,
         test_token_files_with_comments_and_rotated_tokens,
         test_routes_methods_and_content_types,
         test_bodies_over_the_limit_get_413,
         test_oversized_headers_get_431_and_write_nothing,
         test_idempotency_key_replays_the_first_answer,
         test_idempotency_memory_is_bounded_by_ttl_and_count,
         test_readiness_and_metrics,
         test_a_broker_outage_answers_503_in_bounded_time,
         test_sigterm_answers_every_request_in_flight,
         test_sigterm_during_an_outage_answers_everything_and_exits_0,
         test_https,
         test_start_up_refuses_a_gateway_without_usable_tokens,
         test_no_auth_serves_every_app_without_a_token,
         test_per_ip_connection_limit,
         test_many_connections_waiting_on_one_thread_are_all_answered,
         test_past_the_connection_limit_new_connections_wait,
         test_a_gateway_task_is_called_once_on_time_and_a_cancelled_one_never,
         test_mooncake_all_calls_what_its_gateway_took,
         test_a_job_put_lands_on_its_keys_partition_with_its_next_fire_times,
         test_bad_jobs_get_400_naming_the_field_and_write_nothing,
         test_a_job_that_delivers_to_kafka,
         test_job_actions_land_as_job_actions,
         test_job_routes_take_only_their_apps_token,
         test_job_preview_answers_fire_times_and_writes_nothing,
         test_get_jobs_lists_what_the_jobs_role_committed,
         test_the_openapi_document_is_true,
         test_every_answer_matches_the_document])
