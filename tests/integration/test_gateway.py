"""The gateway on a real broker, held to its contract, gateway/openapi.yaml.

A client of the Java system mooncake replaces sees: a submit answered only once its
Command is in the tasks topic (and the Command it sees there is the task it sent); a
cancel; time-ordered uuids; every malformed request answered with a 4xx whose message
names the field, with nothing written to Kafka; tokens that act only on their own app;
Idempotency-Key replays; 503, never a hang, when the broker is gone; HTTPS; a per-IP
connection limit; a graceful stop that answers what it took. Every JSON answer any test
receives is checked against the schema the OpenAPI document gives for that route and
status, the document's request examples are sent as they are, and every route it lists
is served (and no other). The last test runs `mooncake all`: a task submitted through
the gateway is called on time, a cancelled one is not, a failing one is retried."""
import http.client
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.request

import jsonschema
import yaml

from harness import (BOOTSTRAP, MOONCAKE_BIN, SOURCE_DIR, CallbackServer, Env, decode, free_port,
                     ms, now_ms, run)

SHOP = "shop-token-0123456789"
BILLING = "billing-token-0123456789"
INNER = "inner-token-0123456789"
TOKENS = {"MOONCAKE_APP_TOKENS": f"shop={SHOP},billing={BILLING}",
          "MOONCAKE_INNER_TOKENS": INNER}
MAX_DUE_MS = 86_400_000
CTL = os.environ.get("MOONCAKECTL_BIN") or os.path.join(
    os.path.dirname(os.path.abspath(MOONCAKE_BIN)), "tools", "mooncakectl")

with open(os.path.join(SOURCE_DIR, "gateway", "openapi.yaml")) as f:
    DOC = yaml.safe_load(f)
SEEN = []  # (path, method, status, content type, body) of every answer, for the schema check


class Answer:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    @property
    def json(self):
        return json.loads(self.body)


def request(port, method, path, body=None, token=SHOP, headers=None, tls=None, raw=None):
    """One request on a fresh connection; records the answer in SEEN."""
    conn = (http.client.HTTPSConnection("127.0.0.1", port, context=tls, timeout=30) if tls
            else http.client.HTTPConnection("127.0.0.1", port, timeout=30))
    h = {"Content-Type": "application/json"} if body is not None else {}
    if token:
        h["Authorization"] = "Bearer " + token
    h.update(headers or {})
    data = raw if raw is not None else (None if body is None else
                                        body if isinstance(body, (bytes, str))
                                        else json.dumps(body))
    conn.request(method, path, body=data, headers={k: v for k, v in h.items() if v is not None})
    r = conn.getresponse()
    a = Answer(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
    conn.close()
    SEEN.append((path, method.lower(), a.status, a.headers.get("content-type", ""), a.body))
    return a


def task(**over):
    t = {"appId": "shop", "delayMs": 60_000,
         "callback": {"url": "https://shop.example.com/hook", "body": "hi"}}
    t.update(over)
    return t


def start_gateway(env, *args, wait_ready=True, **extra):
    return env.start("gateway", *args, wait_ready=wait_ready, **{**TOKENS, **extra})


def tasks_records(env, expect=None, timeout=10):
    return env.read_all("tasks", expect=expect, timeout=timeout, idle=1.5)


def check_error(a, status, needle):
    assert a.status == status, f"want {status}, got {a.status}: {a.body[:300]!r}"
    j = a.json
    assert j["code"] == status and j["data"] is None, j
    assert needle in j["msg"], f"'{needle}' not in '{j['msg']}'"


# ---- the happy paths ----------------------------------------------------------------------

def test_submit_cancel_and_uuid():
    env = Env()
    try:
        gw = start_gateway(env)
        port = gw.http_port
        t0 = now_ms()
        a = request(port, "POST", "/submit", {
            "appId": "shop", "uuid": "order-42", "expireTime": t0 + 30_000,
            "callback": {"url": "https://shop.example.com/expire", "method": "put",
                         "headers": {"X-Trace": "abc"}, "body": "caf\u00e9", "timeoutMs": 1500},
            "retry": {"maxAttempts": 3}, "metadata": {"k": "v"}, "ignored": [1]})
        assert a.status == 200 and a.json == {"code": 0, "msg": "ok",
                                              "data": {"uuid": "order-42"}}, a.body
        b = request(port, "POST", "/submit", task(delayMs=1000))
        assert b.status == 200, b.body
        generated = b.json["data"]["uuid"]
        c = request(port, "POST", "/api/task/done", {"appId": "shop", "uuid": "order-42"})
        assert c.status == 200 and c.json == {"code": 0, "msg": "ok", "data": None}, c.body
        d = request(port, "POST", "/inner/submit", task(appId="anyapp"), token=INNER)
        assert d.status == 200, d.body

        recs = tasks_records(env, expect=4)
        by_key = {}
        for m in recs:
            by_key.setdefault(m.key().decode(), []).append(decode("Command", m.value()))
        assert sorted(by_key) == sorted(["shop/order-42", "shop/" + generated,
                                         "anyapp/" + d.json["data"]["uuid"]]), by_key
        (kind, sub), (ckind, cancel) = by_key["shop/order-42"][0]["payload"], \
            by_key["shop/order-42"][1]["payload"]
        assert kind == "mooncake.Submit" and ckind == "mooncake.Cancel"
        t = sub["task"]
        assert (t["app_id"], t["task_id"], ms(t["due_at"])) == ("shop", "order-42", t0 + 30_000)
        cb = t["callback"]
        assert (cb["url"], cb["method"], cb["headers"], cb["body"], cb["timeout_ms"]) == (
            "https://shop.example.com/expire", "PUT", {"X-Trace": "abc"},
            "caf\u00e9".encode(), 1500), cb
        # a partial retry policy takes the defaults for what it leaves out
        assert t["retry"][1] == {"max_attempts": 3, "initial_backoff_ms": 1000, "multiplier": 2.0,
                              "max_backoff_ms": 3_600_000}, t["retry"]
        assert t["attempt"] == 1 and t["metadata"] == {"k": "v"}
        assert abs(ms(t["created_at"]) - t0) < 5000
        assert (cancel["app_id"], cancel["task_id"]) == ("shop", "order-42")
        g = by_key["shop/" + generated][0]["payload"][1]["task"]
        assert g["callback"]["method"] == "POST" and g["retry"] is None
        assert abs(ms(g["due_at"]) - ms(g["created_at"]) - 1000) <= 5, g  # delayMs from receipt

        uuids = [request(port, "GET", "/uuid", token=None).json["data"]["uuid"] for _ in range(50)]
        assert uuids == sorted(uuids) and len(set(uuids)) == 50
        for u in uuids + [generated]:
            assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
                                r"[0-9a-f]{12}", u), u
        # the UUIDv7 carries the time it was made
        assert abs(int(uuids[0].replace("-", "")[:12], 16) - now_ms()) < 10_000

        text = env.metrics(gw)
        assert re.search(r'mooncake_gateway_requests_total\{route="/submit",status="200"\} 2\b',
                         text), text[:2000]
        assert "mooncake_gateway_request_duration_seconds_bucket" in text
        ready = urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5)
        assert ready.status == 200 and "broker: ok" in ready.read().decode()
    finally:
        env.stop_all()


# ---- everything a client can get wrong -------------------------------------------------------

def test_malformed_requests_get_4xx_naming_the_field_and_write_nothing():
    env = Env()
    try:
        port = start_gateway(env, MOONCAKE_MAX_DUE_MS=MAX_DUE_MS).http_port
        cb = {"url": "https://x.example/h"}
        bad = [  # (body or raw text, status, what the message names)
            ('{"appId":"shop",', 400, "not valid JSON"),
            ("[]", 400, "JSON object"),
            ('{"appId":"shop","appId":"x"}', 400, "duplicate"),
            (task(appId=None), 400, "appId is required"),
            (task(appId=7), 400, "appId must be a string"),
            (task(delayMs="soon"), 400, "delayMs must be an integer"),
            (task(delayMs=-1), 400, "delayMs"),
            (task(expireTime=now_ms() + 5000), 400, "not both"),
            ({"appId": "shop", "callback": cb}, 400, "expireTime"),
            ({"appId": "shop", "expireTime": 1_700_000_000, "callback": cb}, 400,
             "before 2000-01-01"),
            ({"appId": "shop", "expireTime": now_ms() + 2 * MAX_DUE_MS, "callback": cb}, 400,
             "expireTime"),
            ({"appId": "shop", "delayMs": 1}, 400, "callback is required"),
            (task(callback={}), 400, "callback.url is required"),
            (task(callback={"url": "ftp://x.example/h"}), 400, "callback.url"),
            (task(callback={"url": "http:///nohost"}), 400, "callback.url"),
            (task(callback={**cb, "method": "brew"}), 400, "callback.method 'BREW'"),
            (task(callback={**cb, "timeoutMs": 99_999_999}), 400, "callback.timeoutMs"),
            (task(callback={**cb, "headers": {"Bad Name": "x"}}), 400, "callback.headers"),
            (task(callback={**cb, "headers": {"X-A": "a\r\nInjected: 1"}}), 400,
             "callback.headers.X-A"),
            (task(callback={**cb, "headers": {"Idempotency-Key": "mine"}}), 400,
             "set by mooncake"),
            (task(callback={**cb, "headers": {"webhook-signature": "v1,forged"}}), 400,
             "set by mooncake"),
            (task(callback={**cb, "headers": {f"X-{i}": "v" for i in range(65)}}), 400,
             "callback.headers"),
            (task(callback={**cb, "body": {"json": "object"}}), 400, "callback.body"),
            (task(retry={"maxAttempts": 0}), 400, "retry.maxAttempts"),
            (task(retry={"multiplier": 0.5}), 400, "retry.multiplier"),
            (task(retry={"initialBackoffMs": 10, "maxBackoffMs": 5}), 400, "retry"),
            (task(uuid="a\u0001b"), 400, "uuid"),
            (task(appId="a/b"), 400, "appId"),
            (task(metadata={"k": 1}), 400, "metadata.k"),
        ]
        for body, status, needle in bad:
            a = request(port, "POST", "/submit", body)
            check_error(a, status, needle)
        for body, needle in [({"appId": "shop"}, "uuid is required"),
                             ({"uuid": "x"}, "appId is required"), ("nope", "not valid JSON")]:
            check_error(request(port, "POST", "/api/task/done", body), 400, needle)
        # one good submit, so "nothing written" is not true of a dead gateway
        assert request(port, "POST", "/submit", task()).status == 200
        recs = tasks_records(env, timeout=8)
        assert len(recs) == 1, f"refused requests reached Kafka: {len(recs)} records"
    finally:
        env.stop_all()


def test_the_protocol_level_refusals():
    env = Env()
    try:
        gw = start_gateway(env, "--gateway-max-body-bytes", "4096")
        port = gw.http_port
        check_error(request(port, "POST", "/submit", task(), token=None), 401, "Bearer")
        a = request(port, "POST", "/submit", task(), token="not-a-configured-token")
        check_error(a, 401, "not valid")
        assert a.headers.get("www-authenticate", "").startswith("Bearer"), a.headers
        check_error(request(port, "POST", "/submit", task(appId="billing")), 403, "billing")
        check_error(request(port, "POST", "/api/task/done", {"appId": "billing", "uuid": "x"}),
                    403, "billing")
        assert request(port, "POST", "/submit", task(appId="billing"), token=BILLING).status == 200
        check_error(request(port, "POST", "/submit", task(), token=INNER), 403, "/inner/submit")
        check_error(request(port, "POST", "/inner/submit", task(), token=SHOP), 403, "inner")
        a = request(port, "GET", "/submit")
        check_error(a, 405, "POST")
        assert a.headers.get("allow") == "POST"
        a = request(port, "POST", "/uuid", {})
        check_error(a, 405, "GET")
        assert "GET" in a.headers.get("allow", "")
        check_error(request(port, "GET", "/no/such/route"), 404, "no such route")
        check_error(request(port, "POST", "/submit", raw="appId=shop",
                            headers={"Content-Type": "application/x-www-form-urlencoded"}),
                    415, "application/json")
        # no Content-Type at all is taken as JSON, as the Java system did
        assert request(port, "POST", "/submit", raw=json.dumps(task()),
                       headers={"Content-Type": None}).status == 200
        big = task(callback={"url": "https://x.example/h", "body": "x" * 5000})
        check_error(request(port, "POST", "/submit", big), 413, "more than 4096")
        # the same body chunked: no Content-Length to refuse it by
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.putrequest("POST", "/submit")
        for k, v in (("Authorization", "Bearer " + SHOP), ("Content-Type", "application/json"),
                     ("Transfer-Encoding", "chunked")):
            conn.putheader(k, v)
        conn.endheaders()
        data = json.dumps(big).encode()
        for i in range(0, len(data), 1000):
            piece = data[i:i + 1000]
            conn.send(b"%x\r\n%s\r\n" % (len(piece), piece))
        conn.send(b"0\r\n\r\n")
        r = conn.getresponse()
        a = Answer(r.status, dict(r.getheaders()), r.read())
        SEEN.append(("/submit", "post", a.status, r.getheader("Content-Type"), a.body))
        check_error(a, 413, "more than 4096")
        conn.close()
        # headers beyond libmicrohttpd's memory limit: 431 from the server itself
        # (it may close before the client has sent everything: then a reset is the answer)
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        body = json.dumps(task()).encode()
        head = (f"POST /submit HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {SHOP}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                f"X-Huge: {'h' * 70_000}\r\n\r\n").encode()
        try:
            s.sendall(head + body)
        except OSError:
            pass
        try:
            got = s.recv(200)
        except OSError:
            got = b""
        s.close()
        assert got == b"" or got.startswith(b"HTTP/1.1 431"), got
        # a bad Idempotency-Key
        check_error(request(port, "POST", "/submit", task(), headers={"Idempotency-Key": "a b"}),
                    400, "Idempotency-Key")
        recs = tasks_records(env, timeout=8)
        assert len(recs) == 2, f"expected only the 2 accepted submits, got {len(recs)}"
    finally:
        env.stop_all()


def test_idempotency_key_replays_the_first_answer():
    env = Env()
    try:
        port = start_gateway(env).http_port
        key = {"Idempotency-Key": "order-42-create"}
        first = request(port, "POST", "/submit", task(), headers=key)
        again = request(port, "POST", "/submit", task(), headers=key)
        assert first.status == again.status == 200
        assert again.body == first.body, (first.body, again.body)
        assert again.headers.get("idempotent-replayed") == "true"
        assert "idempotent-replayed" not in first.headers
        check_error(request(port, "POST", "/submit", task(delayMs=5), headers=key), 422,
                    "another body")
        # the key is per app and route: another route may use it
        assert request(port, "POST", "/api/task/done", {"appId": "shop", "uuid": "x"},
                       headers=key).status == 200
        # a failed request is not remembered: its retry runs
        check_error(request(port, "POST", "/submit", task(delayMs="x"),
                            headers={"Idempotency-Key": "k2"}), 400, "delayMs")
        assert request(port, "POST", "/submit", task(),
                       headers={"Idempotency-Key": "k2"}).status == 200
        recs = tasks_records(env, expect=3)
        assert len(recs) == 3, f"want 3 records (submit, cancel, k2), got {len(recs)}"
    finally:
        env.stop_all()


# ---- the contract document ------------------------------------------------------------------

def test_the_openapi_document_is_true():
    env = Env()
    try:
        port = start_gateway(env).http_port
        ops = {(path, m) for path, item in DOC["paths"].items() for m in item
               if m in ("get", "post", "put", "patch", "delete")}
        tokens = {"appToken": SHOP, "innerToken": INNER}
        for path, method in sorted(ops):
            op = DOC["paths"][path][method]
            sec = op.get("security", [])
            token = tokens[next(iter(sec[0]))] if sec else None
            examples = (op.get("requestBody", {}).get("content", {})
                        .get("application/json", {}).get("examples", {}))
            if examples:
                for name, ex in examples.items():
                    a = request(port, method.upper(), path, ex["value"], token=token)
                    assert a.status == 200, f"example {name} of {method} {path}: {a.body!r}"
            else:
                a = request(port, method.upper(), path, token=token)
                assert str(a.status) in op["responses"], (path, method, a.status)
        # a route the document does not list is not served
        check_error(request(port, "GET", "/api/task/list"), 404, "no such route")
        for probe in ("/healthz", "/readyz", "/metrics"):
            assert (probe, "get") in ops
    finally:
        env.stop_all()


def validate_every_answer_seen():
    """Every JSON answer of this file against the document's schema for it."""
    checked = 0
    for path, method, status, ctype, body in SEEN:
        op = DOC["paths"].get(path, {}).get(method)
        if op is None:  # an undocumented route (404) or method (405): the Error envelope
            assert status == (405 if path in DOC["paths"] else 404), (path, method, status)
            schema_ref = "#/components/schemas/Error"
        else:
            resp = op["responses"].get(str(status))
            assert resp is not None, f"{method} {path} answered {status}, not in the document"
            if "$ref" in resp:
                resp = DOC["components"]["responses"][resp["$ref"].rsplit("/", 1)[1]]
            content = resp.get("content", {})
            if "application/json" not in content:
                assert not ctype.startswith("application/json"), (path, status, ctype)
                continue
            schema_ref = None
            schema = content["application/json"]["schema"]
            if "$ref" in schema:
                schema_ref = schema["$ref"]
        assert ctype.startswith("application/json"), (path, method, status, ctype)
        root = {"$ref": schema_ref, "components": DOC["components"]} if schema_ref else \
            {**schema, "components": DOC["components"]}
        jsonschema.Draft202012Validator(root).validate(json.loads(body))
        checked += 1
    return checked


# ---- failure and operations -----------------------------------------------------------------

def test_a_broker_outage_answers_503_in_bounded_time():
    env = Env(create_topics=False)
    dead = free_port()
    try:
        gw = env.start("gateway", "--gateway-produce-timeout-ms", "1500", wait_ready=False,
                       MOONCAKE_BOOTSTRAP_SERVERS=f"127.0.0.1:{dead}",
                       MOONCAKE_CREATE_TOPICS="false", **TOKENS)
        port = gw.http_port
        deadline = time.time() + 20
        while True:
            try:
                health = urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
                break
            except OSError:
                assert time.time() < deadline, env.log(gw)
                time.sleep(0.1)
        assert health.status == 200
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5)
            raise AssertionError("ready without a broker")
        except urllib.error.HTTPError as e:
            assert e.code == 503
        t0 = time.time()
        a = request(port, "POST", "/submit", task())
        took = time.time() - t0
        check_error(a, 503, "did not acknowledge")
        assert took < 5, f"a broker outage held the request {took:.1f} s"
    finally:
        env.stop_all()


def test_https():
    env = Env()
    d = tempfile.mkdtemp()
    key, cert = os.path.join(d, "k.pem"), os.path.join(d, "c.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", cert, "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    try:
        port = free_port()
        gw = env.start("gateway", "--gateway-tls-cert", cert, "--gateway-tls-key", key,
                       wait_ready=False, **TOKENS)
        ctx = ssl.create_default_context(cafile=cert)
        deadline = time.time() + 30
        while True:
            try:
                a = request(gw.http_port, "POST", "/submit", task(), tls=ctx)
                break
            except (OSError, http.client.HTTPException):
                assert time.time() < deadline and gw.poll() is None, env.log(gw)
                time.sleep(0.2)
        assert a.status in (200, 503), a.body  # 503 only while the producer starts
        for _ in range(50):
            if a.status == 200:
                break
            time.sleep(0.2)
            a = request(gw.http_port, "POST", "/submit", task(), tls=ctx)
        assert a.status == 200, a.body
        # plain HTTP on the HTTPS port gets no answer
        s = socket.create_connection(("127.0.0.1", gw.http_port), timeout=5)
        s.sendall(b"GET /uuid HTTP/1.1\r\nHost: x\r\n\r\n")
        assert not s.recv(100).startswith(b"HTTP/1.1 200"), "plain HTTP answered"
        s.close()
        # a missing key file is a configuration error, named
        bad = subprocess.run([MOONCAKE_BIN, "gateway", "--http-port", str(port),
                              "--gateway-tls-cert", cert,
                              "--gateway-tls-key", os.path.join(d, "missing.pem")],
                             env=env.env(**TOKENS), capture_output=True, text=True, timeout=30)
        assert bad.returncode == 2 and "--gateway-tls-key" in bad.stderr, bad.stderr
    finally:
        env.stop_all()


def test_start_up_refuses_a_gateway_without_tokens():
    env = Env(create_topics=False)
    r = subprocess.run([MOONCAKE_BIN, "gateway", "--http-port", str(free_port())],
                       env=env.env(MOONCAKE_APP_TOKENS="", MOONCAKE_INNER_TOKENS=""),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "MOONCAKE_APP_TOKENS" in r.stderr, r.stderr
    r = subprocess.run([MOONCAKE_BIN, "gateway", "--http-port", str(free_port())],
                       env=env.env(MOONCAKE_APP_TOKENS="shop=short"),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "at least 16" in r.stderr, r.stderr


def test_per_ip_connection_limit():
    env = Env()
    try:
        port = start_gateway(env, "--gateway-max-connections-per-ip", "2").http_port
        held = [http.client.HTTPConnection("127.0.0.1", port, timeout=5) for _ in range(2)]
        for c in held:  # keep-alive connections, each used once and kept open
            c.request("GET", "/uuid")
            r = c.getresponse()
            r.read()
            assert r.status == 200
        third = socket.create_connection(("127.0.0.1", port), timeout=5)
        try:
            third.sendall(b"GET /uuid HTTP/1.1\r\nHost: x\r\n\r\n")
            got = third.recv(100)
        except OSError:
            got = b""
        assert not got, f"a third connection from the same address was served: {got!r}"
        third.close()
        held[0].close()
        time.sleep(0.3)
        a = request(port, "GET", "/uuid", token=None)  # a slot is free again
        assert a.status == 200
        held[1].close()
    finally:
        env.stop_all()


def test_sigterm_answers_what_it_took():
    env = Env()
    try:
        gw = start_gateway(env)
        answers, errors = [], []

        def client():
            try:
                for _ in range(20):
                    answers.append(request(gw.http_port, "POST", "/submit", task()).status)
            except OSError as e:  # refused after the stop: never a hang
                errors.append(e)

        threads = [threading.Thread(target=client) for _ in range(8)]
        for t in threads:
            t.start()
        time.sleep(0.3)
        gw.send_signal(signal.SIGTERM)
        for t in threads:
            t.join(30)
            assert not t.is_alive(), "a request hung during the stop"
        assert gw.wait(30) == 0
        assert set(answers) <= {200, 503}, answers
        ok = answers.count(200)
        assert ok > 0
        recs = tasks_records(env, timeout=8)
        assert len(recs) >= ok, f"{ok} answered 200 but only {len(recs)} records in tasks"
    finally:
        env.stop_all()


# ---- mooncake all, end to end ---------------------------------------------------------------

def test_all_in_one_process_calls_what_the_gateway_took():
    """mooncake all: a task submitted through the gateway is called on time, a cancelled
    one is not, a failing one is retried; a task submitted with mooncakectl is called; a
    task whose endpoint answers 404 is dead-lettered, requeued with mooncakectl once the
    endpoint is fixed, and called."""
    env = Env()
    fixed = threading.Event()

    def respond(call):
        if call["path"].startswith("/flaky") and call["nth"] == 1:
            return 500, {}, b"not yet"
        if call["path"] == "/broken" and not fixed.is_set():
            return 404, {}, b"no such order"
        return 200, {}, b"ok"

    server = CallbackServer(respond)
    try:
        p = env.start("all", wait_ready=False,
                      MOONCAKE_EXECUTOR_ALLOW_CIDRS="127.0.0.1/32", **TOKENS)
        env.wait_ready(p, timeout=90)
        readyz = urllib.request.urlopen(f"http://127.0.0.1:{p.http_port}/readyz").read().decode()
        for role in ("router", "store", "wheel", "executor", "retry", "broker"):
            assert f"{role}: ok" in readyz, readyz
        port = p.http_port
        due = now_ms() + 2500

        def cb(path, body):
            return {"url": server.url(path), "body": body, "headers": {"X-Order": "42"}}

        on_time = request(port, "POST", "/submit", {"appId": "shop", "expireTime": due,
                                                    "callback": cb("/on-time", "hello")})
        cancelled = request(port, "POST", "/submit", {"appId": "shop", "expireTime": due,
                                                      "callback": cb("/cancelled", "x")})
        flaky = request(port, "POST", "/submit", {
            "appId": "shop", "expireTime": due, "callback": cb("/flaky", "y"),
            "retry": {"maxAttempts": 3, "initialBackoffMs": 200, "maxBackoffMs": 500}})
        assert on_time.status == cancelled.status == flaky.status == 200
        done = request(port, "POST", "/api/task/done",
                       {"appId": "shop", "uuid": cancelled.json["data"]["uuid"]})
        assert done.status == 200
        deadline = time.time() + 30
        while time.time() < deadline and not (server.calls_to("/on-time")
                                               and len(server.calls_to("/flaky")) >= 2):
            time.sleep(0.1)
        time.sleep(1.0)  # anything that would come twice, or late, comes now
        calls = server.calls_to("/on-time")
        assert len(calls) == 1, f"{len(calls)} calls"
        c = calls[0]
        assert c["body"] == b"hello" and c["headers"].get("x-order") == "42"
        assert c["headers"]["idempotency-key"] == f"shop/{on_time.json['data']['uuid']}:1"
        assert -5 <= c["at"] - due <= 500, f"called {c['at'] - due:.0f} ms after due"
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
        deadline = time.time() + 30
        while time.time() < deadline and len(server.calls_to("/broken")) < 2:
            time.sleep(0.1)
        time.sleep(0.5)
        assert len(server.calls_to("/broken")) == 2, "the requeued task was not called once"
    finally:
        server.close()
        env.stop_all()


def test_every_answer_matches_the_document():
    n = validate_every_answer_seen()
    assert n > 60, f"only {n} answers checked"


if __name__ == "__main__":
    run([test_submit_cancel_and_uuid,
         test_malformed_requests_get_4xx_naming_the_field_and_write_nothing,
         test_the_protocol_level_refusals,
         test_idempotency_key_replays_the_first_answer,
         test_the_openapi_document_is_true,
         test_a_broker_outage_answers_503_in_bounded_time,
         test_https,
         test_start_up_refuses_a_gateway_without_tokens,
         test_per_ip_connection_limit,
         test_sigterm_answers_what_it_took,
         test_all_in_one_process_calls_what_the_gateway_took,
         test_every_answer_matches_the_document])
