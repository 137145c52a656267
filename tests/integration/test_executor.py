"""Executor and retry on a real broker, behind the router, store and wheel:
due tasks call a local HTTP endpoint once, at their due time, with the
task's request and mooncake's Idempotency-Key and webhook headers (signed
with every secret of the app); failures are retried with backoff (the
server's Retry-After honoured) or dead-lettered (a 4xx, the last attempt,
an address the SSRF guard refuses); every attempt leaves a Result; and after
kill -9 of the executor every task has exactly one SUCCEEDED Result while
only the calls that were unfinished at the kill are made again.

What is checked is what a user sees: the requests that reach the endpoint
(tools: harness.CallbackServer), the committed records of results, retry and
dead, and the metrics on /metrics. Every executor here calls 127.0.0.1, so
it runs with MOONCAKE_EXECUTOR_ALLOW_CIDRS=127.0.0.1/32 except where the
SSRF guard itself is tested."""
import base64
import email.utils
import hashlib
import hmac
import os
import random
import re
import signal
import statistics
import time
import urllib.error
import urllib.request

from harness import CallbackServer, Env, decode, ms, now_ms, run, submit_value, task
from test_store_wheel import (EARLY_TOLERANCE_MS, FAST_FAILOVER, Unsettled, assert_alive, metric,
                              read_settled, send, sleep_until, wait_assigned, wait_metric)

HORIZON_MS = 3000
ALLOW_LOOPBACK = {"MOONCAKE_EXECUTOR_ALLOW_CIDRS": "127.0.0.1/32"}
BODY = b'{"order": 42, "note": "caf\xc3\xa9"}'
SEED = int(os.environ.get("MOONCAKE_TEST_SEED", time.time()))
SUCCEEDED = 'mooncake_executor_calls_total{outcome="succeeded"}'
FAILED = 'mooncake_executor_calls_total{outcome="failed"}'


def policy(max_attempts=5, initial_backoff_ms=200, multiplier=2.0, max_backoff_ms=2000):
    return {"max_attempts": max_attempts, "initial_backoff_ms": initial_backoff_ms,
            "multiplier": multiplier, "max_backoff_ms": max_backoff_ms}


def call(key, due, url, method="POST", body=BODY, headers=None, timeout_ms=5000, retry=None):
    """(key, value) of a Submit of a task calling url at due."""
    app, tid = key.split("/")
    t = task(app, tid, due, url=url, method=method, retry=retry)
    t["callback"].update({"body": body, "timeout_ms": timeout_ms,
                          "headers": {"x-test": "1"} if headers is None else headers})
    return key, submit_value(t)


def start_pipeline(env, store=False, wheel_env=None, executor_env=None, retry_env=None):
    """router, wheel (and store when asked), executor and retry, each owning
    every partition. Without a store the horizon is the default 60 s: every
    task here and every retry is due well within it."""
    h = {"MOONCAKE_HORIZON_MS": HORIZON_MS} if store else {}
    procs = {"router": env.start("router", **h)}
    if store:
        procs["store"] = env.start("store", instance="s1", **h)
    procs["wheel"] = env.start("wheel", instance="w1", **h, **(wheel_env or {}))
    procs["executor"] = env.start("executor", instance="e1",
                                  **{**ALLOW_LOOPBACK, **(executor_env or {})})
    procs["retry"] = env.start("retry", instance="r1", **(retry_env or {}))
    for role, p in procs.items():
        if role != "router":
            wait_assigned(env, p, env.partitions)
    return procs


def _timestamps(d, *fields):
    for f in fields:
        d[f] = ms(d[f])
    return d


def results(env, timeout=60):
    """The committed Results, decoded (timestamps as epoch ms), in offset
    order per partition, each with its record key and partition."""
    out = []
    for m in read_settled(env, "results", timeout=timeout):
        r = _timestamps(decode("Result", m.value()), "due_at", "started_at", "finished_at")
        key = m.key().decode()
        assert key == f"{r['app_id']}/{r['task_id']}", (key, r)
        r.update(key=key, partition=m.partition(), offset=m.offset())
        out.append(r)
    return sorted(out, key=lambda r: (r["partition"], r["offset"]))


def attempts(env, timeout=60):
    out = []
    for m in read_settled(env, "retry", timeout=timeout):
        if m.key() is None:
            continue  # the wheel's markers on their way back
        a = _timestamps(decode("Attempt", m.value()), "started_at", "finished_at")
        a["task"]["due_at"] = ms(a["task"]["due_at"])
        a["key"] = m.key().decode()
        out.append(a)
    return out


def dead_letters(env, timeout=60):
    out = []
    for m in read_settled(env, "dead", timeout=timeout):
        d = decode("DeadLetter", m.value())
        if d["task"] is not None:  # a union: (record name, value)
            d["task"] = d["task"][1]
        d["key"] = m.key().decode() if m.key() else None
        out.append(d)
    return out


def wait_until(what, check, timeout=30, interval=0.2):
    """Calls check() until it returns something true; returns that."""
    deadline = time.time() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.time() < deadline, f"{what}: not after {timeout}s"
        time.sleep(interval)


def wait_results(env, n, timeout=30):
    """The committed Results once there are at least n."""
    def enough():
        try:
            r = results(env, timeout=10)
        except Unsettled:
            return None
        return r if len(r) >= n else None
    return wait_until(f"{n} Results", enough, timeout=timeout, interval=0.5)


def by_key(records):
    out = {}
    for r in records:
        out.setdefault(r["key"], []).append(r)
    return out


def retry_delay(error):
    """D of a FAILED_WILL_RETRY Result's error text, "...; attempt N in D ms"."""
    m = re.search(r"; attempt (\d+) in (\d+) ms$", error)
    assert m, f"FAILED_WILL_RETRY error does not say when the next attempt is: {error!r}"
    return int(m.group(1)), int(m.group(2))


def signature(key, msg_id, ts, body):
    mac = hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def percentile(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(p / 100 * len(v)))]


def test_due_tasks_call_their_endpoint_once_at_their_time():
    """Tasks due in 2-4.5 s (one beyond the horizon, so through the store)
    reach the endpoint exactly once each, not before their due time, with the
    task's method, path, headers and body, plus Idempotency-Key, webhook-id,
    webhook-timestamp and User-Agent; each leaves one SUCCEEDED Result."""
    server = CallbackServer(lambda c: (204, {}, b"") if c["method"] == "DELETE"
                            else (200, {}, b'{"ok": true}'))
    env = Env(partitions=3)
    try:
        procs = start_pipeline(env, store=True)
        t0 = now_ms()
        plan = {  # key: (due, method, path, task headers)
            "shop/post": (t0 + 2000, "POST", "/hook/post", {"Content-Type": "application/json",
                                                           "X-Order": "42"}),
            "shop/put": (t0 + 2300, "PUT", "/hook/put?x=1&y=two", {"x-test": "1"}),
            "shop/patch": (t0 + 2600, "PATCH", "/hook/patch", {"x-test": "1"}),
            "shop/delete": (t0 + 2900, "DELETE", "/hook/delete", {"x-test": "1"}),
            "shop/get": (t0 + 3200, "GET", "/hook/get", {"x-test": "1"}),
            # mooncake's own headers cannot be forged by the task.
            "shop/forge": (t0 + 3500, "POST", "/hook/forge", {"Idempotency-Key": "forged",
                                                             "webhook-id": "forged"}),
            "shop/far": (t0 + 4500, "POST", "/hook/far", {"x-test": "1"}),  # beyond the horizon
        }
        send(env, [call(k, due, server.url(path), method=m, headers=hdr,
                        body=b"" if m == "GET" else BODY)
                   for k, (due, m, path, hdr) in plan.items()])
        got = wait_results(env, len(plan), timeout=4.5 + 30)
        time.sleep(1)  # room for a duplicate call to show up
        calls = server.snapshot()
        assert len(calls) == len(plan), \
            f"{len(calls)} calls for {len(plan)} tasks: {[c['path'] for c in calls]}"
        late = []
        for key, (due, method, path, hdr) in plan.items():
            c = server.calls_to(path)
            assert len(c) == 1, f"{key}: {len(c)} calls to {path}"
            c = c[0]
            h = c["headers"]
            assert c["method"] == method, (key, c["method"])
            assert c["body"] == (b"" if method == "GET" else BODY), (key, c["body"])
            assert c["at"] >= due - EARLY_TOLERANCE_MS, \
                f"{key} called {due - c['at']:.0f} ms before its due time"
            late.append(c["at"] - due)
            for name, value in hdr.items():
                if name.lower() not in ("idempotency-key", "webhook-id"):
                    assert h.get(name.lower()) == value, (key, name, h)
            for name in ("idempotency-key", "webhook-id", "webhook-timestamp"):
                n = sum(1 for k, _ in c["header_list"] if k == name)
                assert n == 1, f"{key}: {n} {name} headers: {c['header_list']}"
            assert h["idempotency-key"] == f"{key}:1", (key, h["idempotency-key"])
            assert h["webhook-id"] == key, (key, h["webhook-id"])
            ts = int(h["webhook-timestamp"])
            assert abs(ts - c["at"] / 1000) <= 2, (key, ts, c["at"])
            assert re.fullmatch(r"mooncake/\S+", h.get("user-agent", "")), (key, h)
            assert "webhook-signature" not in h, f"{key}: signed without a secret: {h}"
        res = by_key(got)
        assert set(res) == set(plan), (set(res) ^ set(plan))
        for key, (due, method, path, _) in plan.items():
            assert len(res[key]) == 1, f"{key}: Results {res[key]}"
            r = res[key][0]
            assert r["outcome"] == "SUCCEEDED" and r["attempt"] == 1, (key, r)
            assert r["http_status"] == (204 if method == "DELETE" else 200), (key, r)
            assert r["due_at"] == due, (key, r)
            assert due - EARLY_TOLERANCE_MS <= r["started_at"] <= r["finished_at"], (key, r)
            assert r["error"] == "", (key, r)
        assert not attempts(env), "failed attempts although every call succeeded"
        assert not dead_letters(env), "dead letters although every call succeeded"
        wait_metric(env, procs["executor"], SUCCEEDED, len(plan))
        late.sort()
        print(f"     call arrival - due ms: min {late[0]:.1f} "
              f"p50 {statistics.median(late):.1f} max {late[-1]:.1f}")
        # The request is the task's: mooncake adds only its own headers, not
        # a Content-Type the task did not give (curl's default for a POST
        # body is application/x-www-form-urlencoded).
        invented = {k: server.calls_to(path)[0]["headers"].get("content-type")
                    for k, (_, _, path, hdr) in plan.items()
                    if "content-type" not in {n.lower() for n in hdr}
                    and "content-type" in server.calls_to(path)[0]["headers"]}
        assert not invented, f"Content-Type sent that the task did not set: {invented}"
        assert_alive(env, *procs.values())
    finally:
        env.stop_all()
        server.close()


def test_a_500_is_retried_and_then_succeeds():
    """An endpoint that answers 500 and then 200 is called twice, with
    Idempotency-Key attempt 1 and then 2, the second call after the backoff
    the retry Result announced; Results FAILED_WILL_RETRY then SUCCEEDED,
    the Attempt carries the status and the response's first bytes, and
    nothing is dead-lettered."""
    server = CallbackServer(lambda c: (500, {}, b"boom: database down") if c["nth"] == 1
                            else (200, {}, b"ok"))
    env = Env(partitions=3)
    try:
        procs = start_pipeline(env)
        due = now_ms() + 1500
        send(env, [call("shop/o1", due, server.url("/pay"), retry=policy(initial_backoff_ms=200))])
        got = wait_results(env, 2)
        time.sleep(1)
        calls = server.calls_to("/pay")
        assert [c["headers"]["idempotency-key"] for c in calls] == ["shop/o1:1", "shop/o1:2"], \
            [c["headers"]["idempotency-key"] for c in calls]
        assert {c["headers"]["webhook-id"] for c in calls} == {"shop/o1"}
        got = results(env)
        assert [(r["attempt"], r["outcome"]) for r in got] == \
            [(1, "FAILED_WILL_RETRY"), (2, "SUCCEEDED")], got
        first, second = got
        assert first["http_status"] == 500 and "500" in first["error"], first
        nxt, delay = retry_delay(first["error"])
        assert nxt == 2 and 0 <= delay <= 200, \
            f"full jitter under a 200 ms ceiling, yet: {first['error']!r}"
        assert first["due_at"] == due, first
        # The second attempt is a new task version due after the backoff.
        assert second["due_at"] >= first["finished_at"] + delay, (first, second)
        assert calls[1]["at"] >= second["due_at"] - EARLY_TOLERANCE_MS, (calls[1], second)
        assert second["http_status"] == 200, second
        (a,) = attempts(env)
        assert a["http_status"] == 500 and not a["permanent"], a
        assert a["response_snippet"] == b"boom: database down", a["response_snippet"]
        assert a["retry_after_ms"] == -1, a
        assert a["task"]["attempt"] == 1 and a["task"]["task_id"] == "o1", a["task"]
        assert not dead_letters(env)
        wait_metric(env, procs["retry"], "mooncake_retry_scheduled_total", 1)
        print(f"     backoff {delay} ms; second call "
              f"{calls[1]['at'] - calls[0]['responded_at']:.0f} ms after the 500")
        assert_alive(env, *procs.values())
    finally:
        env.stop_all()
        server.close()


def test_results_keep_what_the_endpoint_answered():
    """Each attempt's Result keeps what the endpoint answered: the headers
    named by --executor-response-headers (never Set-Cookie), the first
    --executor-snippet-bytes of the body and the body's full size, and the
    task's version; a failed attempt's Result too (the retry role writes it
    from the Attempt). Then, with --record-version 1 for consumers of results
    that predate these fields, the executor and the retry role write version 1
    Results, which lack them (Attempts, read by mooncake only, keep them)."""
    big = bytes(range(256)) * 40  # 10,240 bytes, not UTF-8
    answers = {1: (500, {"Content-Type": "application/octet-stream", "X-Request-Id": "first",
                         "Set-Cookie": "session=secret"}, big),
               2: (200, {"Content-Type": "application/json", "X-Request-Id": "second"},
                   b'{"charged":true}')}
    server = CallbackServer(lambda c: answers[min(c["nth"], 2)])
    for record_version in (4, 1):
        env = Env(partitions=2)
        try:
            flags = {"MOONCAKE_RECORD_VERSION": str(record_version),
                     "MOONCAKE_EXECUTOR_SNIPPET_BYTES": "300"}
            procs = start_pipeline(env, executor_env=flags, retry_env=flags)
            path = f"/charge-v{record_version}"
            send(env, [call("shop/c1", now_ms() + 1000, server.url(path),
                            retry=policy(initial_backoff_ms=100))])
            first, second = wait_results(env, 2)
            assert (first["outcome"], second["outcome"]) == ("FAILED_WILL_RETRY", "SUCCEEDED")
            if record_version == 1:
                for r in (first, second):
                    assert r["version"] == -1 and r["response_headers"] == {} and \
                        r["response_size"] == -1 and not r["response_body"], r
                (a,) = attempts(env)
                assert a["response_snippet"] == big[:300] and a["response_headers"] == {
                    "content-type": "application/octet-stream", "x-request-id": "first"}, a
                assert_alive(env, *procs.values())
                continue
            assert first["response_headers"] == {"content-type": "application/octet-stream",
                                                 "x-request-id": "first"}, first
            assert first["response_body"] == big[:300], first["response_body"][:20]
            assert first["response_size"] == len(big), first
            assert second["response_headers"] == {"content-type": "application/json",
                                                  "x-request-id": "second"}, second
            assert second["response_body"] == b'{"charged":true}', second
            assert second["response_size"] == 16, second
            # A call to a URL, not to a group: no member in either.
            assert first["member"] is None and second["member"] is None, (first, second)
            # Both attempts called the same version of the task: its submit's offset.
            assert first["version"] == second["version"] >= 0, (first, second)
            # Never a credential: not in a Result, not in an Attempt.
            for m in read_settled(env, "results") + read_settled(env, "retry"):
                assert b"secret" not in (m.value() or b""), m.value()
            print(f"     kept {len(first['response_body'])} of {first['response_size']} bytes; "
                  f"headers {sorted(first['response_headers'])}")
            assert_alive(env, *procs.values())
        finally:
            env.stop_all()
    server.close()


def test_a_404_is_permanent():
    """A 404 is not retried: one call, a FAILED_PERMANENTLY Result and a
    DeadLetter naming the 404, with the task."""
    server = CallbackServer(lambda c: (404, {}, b"no such order"))
    env = Env(partitions=3)
    try:
        procs = start_pipeline(env)
        send(env, [call("shop/gone", now_ms() + 1500, server.url("/gone"),
                        retry=policy(initial_backoff_ms=50))])
        (d,) = wait_until("a dead letter", lambda: dead_letters(env, timeout=10), timeout=30)
        time.sleep(1.5)  # a retry would come within ~50 ms + the pipeline
        assert len(server.calls_to("/gone")) == 1, server.calls_to("/gone")
        (r,) = results(env)
        assert r["outcome"] == "FAILED_PERMANENTLY" and r["http_status"] == 404, r
        assert r["attempt"] == 1, r
        assert "404" in d["reason"], d["reason"]
        assert d["task"] and d["task"]["task_id"] == "gone" and d["task"]["app_id"] == "shop", d
        assert d["source_topic"] == env.topic("retry"), d["source_topic"]
        (a,) = attempts(env)
        assert a["permanent"] and a["response_snippet"] == b"no such order", a
        wait_metric(env, procs["retry"], 'mooncake_retry_dead_total{reason="permanent"}', 1)
        print(f"     dead letter: {d['reason']!r}")
        assert_alive(env, *procs.values())
    finally:
        env.stop_all()
        server.close()


def test_attempts_run_out():
    """An endpoint that always answers 503, with max_attempts 3: exactly 3
    calls (attempts 1, 2, 3), Results FAILED_WILL_RETRY twice then
    EXHAUSTED, and a dead letter."""
    server = CallbackServer(lambda c: (503, {}, b"busy"))
    env = Env(partitions=3)
    try:
        procs = start_pipeline(env)
        send(env, [call("shop/busy", now_ms() + 1500, server.url("/busy"),
                        retry=policy(max_attempts=3, initial_backoff_ms=100))])
        (d,) = wait_until("a dead letter", lambda: dead_letters(env, timeout=10), timeout=30)
        time.sleep(1.5)
        calls = server.calls_to("/busy")
        assert [c["headers"]["idempotency-key"] for c in calls] == \
            [f"shop/busy:{i}" for i in (1, 2, 3)], [c["headers"]["idempotency-key"] for c in calls]
        got = results(env)
        assert [(r["attempt"], r["outcome"]) for r in got] == \
            [(1, "FAILED_WILL_RETRY"), (2, "FAILED_WILL_RETRY"), (3, "EXHAUSTED")], got
        assert all(r["http_status"] == 503 for r in got), got
        for r in got[:2]:
            nxt, delay = retry_delay(r["error"])
            assert nxt == r["attempt"] + 1, r
        assert "503" in d["reason"] and d["task"]["task_id"] == "busy", d
        assert d["task"]["attempt"] == 3, d["task"]
        assert len(attempts(env)) == 3
        wait_metric(env, procs["retry"], "mooncake_retry_scheduled_total", 2)
        wait_metric(env, procs["retry"], 'mooncake_retry_dead_total{reason="exhausted"}', 1)
        print(f"     dead letter: {d['reason']!r}")
        assert_alive(env, *procs.values())
    finally:
        env.stop_all()
        server.close()


def test_a_slow_endpoint_times_out():
    """An endpoint slower than the call's timeout: the call is cut at the
    timeout (the task's 300 ms, or the executor's default for a task that
    gives none), the Attempt has no HTTP status and an error naming the
    timeout, and a timeout is retried (here until the 2 attempts run out)."""
    server = CallbackServer(lambda c: (200, {}, b"too late", 5.0))
    env = Env(partitions=3)
    try:
        procs = start_pipeline(env, executor_env={"MOONCAKE_EXECUTOR_TIMEOUT_MS": 700})
        due = now_ms() + 1500
        p = policy(max_attempts=2, initial_backoff_ms=100)
        send(env, [call("shop/slow", due, server.url("/slow"), timeout_ms=300, retry=p),
                   call("shop/default", due, server.url("/default"), timeout_ms=0, retry=p)])
        got = wait_results(env, 4)
        by = by_key(got)
        for key, path, limit in (("shop/slow", "/slow", 300), ("shop/default", "/default", 700)):
            assert [(r["attempt"], r["outcome"]) for r in by[key]] == \
                [(1, "FAILED_WILL_RETRY"), (2, "EXHAUSTED")], by[key]
            for r in by[key]:
                assert r["http_status"] == 0, r
                assert re.search(r"time[sd]? ?out", r["error"], re.I), r["error"]
            assert len(server.calls_to(path)) == 2, server.calls_to(path)
            mine = [a for a in attempts(env) if a["key"] == key]
            assert len(mine) == 2, mine
            for a in mine:
                took = a["finished_at"] - a["started_at"]
                assert a["http_status"] == 0 and not a["permanent"], a
                assert re.search(r"time[sd]? ?out", a["error"], re.I), a["error"]
                assert a["retry_after_ms"] == -1, a
                # Cut at the timeout: not before it, and not after the 5 s answer.
                assert limit - EARLY_TOLERANCE_MS <= took < 4000, (key, took, a["error"])
            print(f"     {key}: timeout {limit} ms, calls took "
                  f"{[a['finished_at'] - a['started_at'] for a in mine]} ms: {mine[0]['error']!r}")
        assert len(dead_letters(env)) == 2
        assert_alive(env, *procs.values())
    finally:
        env.stop_all()
        server.close()


def test_retry_after_is_honoured():
    """A 429 with Retry-After: 2 (seconds) and a 503 with Retry-After as an
    HTTP date: the next call comes no earlier than the server asked, although
    the task's own backoff ceiling is 50 ms."""
    retry_at = {}

    def respond(c):
        if c["nth"] > 1:
            return 200, {}, b"ok"
        if c["path"] == "/seconds":
            return 429, {"Retry-After": "2"}, b"slow down"
        retry_at["date"] = int(time.time()) + 4
        return 503, {"Retry-After": email.utils.formatdate(retry_at["date"], usegmt=True)}, b""

    server = CallbackServer(respond)
    env = Env(partitions=3)
    try:
        procs = start_pipeline(env)
        due = now_ms() + 1500
        # Jitter under a 50 ms ceiling; Retry-After is capped at max_backoff_ms
        # (retry_policy.h), so that is well above what the servers ask for.
        p = policy(max_attempts=3, initial_backoff_ms=50, max_backoff_ms=10000)
        send(env, [call("shop/seconds", due, server.url("/seconds"), retry=p),
                   call("shop/date", due, server.url("/date"), retry=p)])
        got = by_key(wait_results(env, 4, timeout=40))
        for key in ("shop/seconds", "shop/date"):
            assert [(r["attempt"], r["outcome"]) for r in got[key]] == \
                [(1, "FAILED_WILL_RETRY"), (2, "SUCCEEDED")], got[key]
        first, second = server.calls_to("/seconds")
        assert got["shop/seconds"][0]["http_status"] == 429
        gap = second["at"] - first["responded_at"]
        assert gap >= 2000 - EARLY_TOLERANCE_MS, f"called again {gap:.0f} ms after Retry-After: 2"
        _, delay = retry_delay(got["shop/seconds"][0]["error"])
        assert delay >= 2000, got["shop/seconds"][0]["error"]
        d1, d2 = server.calls_to("/date")
        assert d2["at"] >= retry_at["date"] * 1000 - EARLY_TOLERANCE_MS, \
            f"called again {retry_at['date'] * 1000 - d2['at']:.0f} ms before the Retry-After date"
        att = {a["key"]: a for a in attempts(env)}
        assert att["shop/seconds"]["retry_after_ms"] == 2000, att["shop/seconds"]
        assert 0 < att["shop/date"]["retry_after_ms"] <= 5000, att["shop/date"]
        assert not att["shop/seconds"]["permanent"] and not att["shop/date"]["permanent"]
        assert not dead_letters(env)
        print(f"     429 Retry-After: 2 -> called again after {gap:.0f} ms; 503 Retry-After "
              f"date -> {d2['at'] - retry_at['date'] * 1000:.0f} ms after the date "
              f"({d2['at'] - d1['responded_at']:.0f} ms after the 503)")
        assert_alive(env, *procs.values())
    finally:
        env.stop_all()
        server.close()


def test_calls_are_signed_with_every_secret_of_the_app():
    """With two secrets for an app (a rotation), webhook-signature holds one
    valid v1 signature per secret over "<webhook-id>.<webhook-timestamp>.<body>",
    checked here with Python's hmac; an app without a secret gets no
    signature header."""
    k1, k2, other = os.urandom(32), os.urandom(24), os.urandom(32)
    secrets = ",".join([f"signed=whsec_{base64.b64encode(k1).decode()}",
                        f"signed=whsec_{base64.b64encode(k2).decode()}",
                        f"someone=whsec_{base64.b64encode(other).decode()}"])
    server = CallbackServer()
    env = Env(partitions=3)
    try:
        procs = start_pipeline(env, executor_env={"MOONCAKE_APP_SECRETS": secrets})
        due = now_ms() + 1500
        send(env, [call("signed/a", due, server.url("/signed-post")),
                   call("signed/b", due + 100, server.url("/signed-empty"), body=b""),
                   call("plain/c", due, server.url("/plain"))])
        wait_results(env, 3)
        for path, key in (("/signed-post", "signed/a"), ("/signed-empty", "signed/b")):
            (c,) = server.calls_to(path)
            h = c["headers"]
            assert h["webhook-id"] == key, h
            entries = h["webhook-signature"].split(" ")
            want = {signature(k, h["webhook-id"], h["webhook-timestamp"], c["body"])
                    for k in (k1, k2)}
            assert len(entries) == 2 and set(entries) == want, \
                f"{key}: webhook-signature {h['webhook-signature']!r}, want both of {want}"
            assert signature(other, h["webhook-id"], h["webhook-timestamp"], c["body"]) \
                not in entries, "signed with another app's secret"
        (c,) = server.calls_to("/plain")
        assert "webhook-signature" not in c["headers"], c["headers"]
        assert {r["outcome"] for r in results(env)} == {"SUCCEEDED"}
        sig = server.calls_to("/signed-post")[0]["headers"]["webhook-signature"]
        print(f"     webhook-signature: {sig[:60]}...")
        assert_alive(env, *procs.values())
    finally:
        env.stop_all()
        server.close()


def test_ssrf_guard_refuses_private_addresses():
    """Without an allow-list, a callback to 127.0.0.1, to the cloud metadata
    address and to a name resolving to loopback ("localhost") is never made:
    each is a FAILED_PERMANENTLY Result and a dead letter naming the SSRF
    guard. An executor allowed 127.0.0.1/32 calls the loopback ones, and
    still refuses the metadata address."""
    server = CallbackServer()
    env = Env(partitions=3)
    try:
        procs = start_pipeline(env, executor_env={"MOONCAKE_EXECUTOR_ALLOW_CIDRS": ""})
        targets = {"ip": server.url("/ip"), "name": server.url("/name", host="localhost"),
                   "metadata": "http://169.254.169.254/latest/meta-data/"}
        due = now_ms() + 1500
        p = policy(initial_backoff_ms=50)
        send(env, [call(f"guard/{k}", due, u, retry=p) for k, u in targets.items()])
        dead = wait_until("3 dead letters",
                          lambda: (lambda d: d if len(d) >= 3 else None)(dead_letters(env, 10)))
        time.sleep(1)
        assert not server.snapshot(), f"the guard let calls through: {server.snapshot()}"
        assert sorted(d["task"]["task_id"] for d in dead) == sorted(targets), dead
        for d in dead:
            assert "ssrf" in d["reason"].lower(), d["reason"]
        got = results(env)
        assert sorted(r["task_id"] for r in got) == sorted(targets), got
        for r in got:
            assert r["outcome"] == "FAILED_PERMANENTLY" and r["http_status"] == 0, r
            assert "ssrf" in r["error"].lower(), r
        wait_metric(env, procs["executor"], "mooncake_executor_ssrf_refused_total", 3)
        print(f"     refused: {dead[0]['reason']!r}")

        # The same with 127.0.0.1/32 allowed, on a fresh executor.
        procs["executor"].send_signal(signal.SIGTERM)
        assert procs["executor"].wait(30) == 0, env.log(procs["executor"])
        procs["executor"] = env.start("executor", instance="e2", **ALLOW_LOOPBACK)
        wait_assigned(env, procs["executor"], env.partitions)
        due = now_ms() + 1500
        send(env, [call(f"allowed/{k}", due, u, retry=p) for k, u in targets.items()])
        got = wait_until("3 more Results", lambda: (lambda r: r if len(r) >= 6 else None)(
            results(env, 10)))
        time.sleep(1)
        allowed = {r["task_id"]: r for r in got if r["app_id"] == "allowed"}
        assert allowed["ip"]["outcome"] == "SUCCEEDED", allowed["ip"]
        assert allowed["name"]["outcome"] == "SUCCEEDED", allowed["name"]
        assert allowed["metadata"]["outcome"] == "FAILED_PERMANENTLY", allowed["metadata"]
        assert "ssrf" in allowed["metadata"]["error"].lower(), allowed["metadata"]
        assert sorted(c["path"] for c in server.snapshot()) == ["/ip", "/name"], server.snapshot()
        assert_alive(env, *procs.values())
    finally:
        env.stop_all()
        server.close()


def test_early_arrivals_are_held_until_due():
    """With the wheel firing 200-300 ms early (a 300 ms lead), the executor
    holds each task and calls it at its due time, not early."""
    server = CallbackServer()
    env = Env(partitions=3)
    try:
        procs = start_pipeline(env, wheel_env={"MOONCAKE_WHEEL_LEAD_MS": 300})
        t0 = now_ms() + 1500
        due = {f"held/{i}": t0 + 75 * i for i in range(20)}
        send(env, [call(k, d, server.url("/" + k)) for k, d in due.items()])
        held = []
        deadline = time.time() + 30
        while len(server.snapshot()) < len(due) and time.time() < deadline:
            held.append(metric(env, procs["executor"], "mooncake_executor_held") or 0)
            time.sleep(0.05)
        got = by_key(wait_results(env, len(due)))
        time.sleep(0.5)
        early = []
        late = []
        for k, d in due.items():
            (c,) = server.calls_to("/" + k)
            if c["at"] < d - EARLY_TOLERANCE_MS:
                early.append((k, round(d - c["at"])))
            late.append(c["at"] - d)
            (r,) = got[k]
            assert r["outcome"] == "SUCCEEDED" and r["started_at"] >= d, r
        assert not early, f"called before due (ms early): {early}"
        # The wheel did fire early: the test proved something.
        fired = [(ms(decode("WheelEntry", m.value())["payload"][1]["task"]["due_at"]),
                  m.timestamp()[1]) for m in read_settled(env, "ready") if m.key()]
        ahead = sorted(d - ts for d, ts in fired)
        assert ahead[-1] > EARLY_TOLERANCE_MS, f"the wheel never fired early: {ahead}"
        print(f"     fired to ready ahead of due ms: p50 {statistics.median(ahead):.0f} "
              f"max {ahead[-1]}; executor held up to {max(held):.0f} tasks; call arrival - due "
              f"ms: p50 {statistics.median(late):.1f} max {max(late):.1f}")
        assert_alive(env, *procs.values())
    finally:
        env.stop_all()
        server.close()


def readyz(p):
    """(status, body) of a process's GET /readyz."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{p.http_port}/readyz", timeout=2) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except OSError as e:
        return 0, str(e)


def test_held_and_running_calls_survive_a_handover():
    """A second executor joins (the partitions are rebalanced) and then the
    first is stopped with SIGTERM, while tasks are held (the wheel fires
    1.5 s early) and slow calls are in flight: every task is called once,
    none before its due time, and has exactly one SUCCEEDED Result - each
    revoke lets the calls in flight end and commits them before the
    partitions move. The stopping executor says it is not ready from the
    SIGTERM on, while it drains."""
    server = CallbackServer(lambda c: (200, {}, b"ok", 1.5 if c["path"].startswith("/slow/")
                                       else 0))
    env = Env(partitions=3)
    try:
        procs = start_pipeline(env, wheel_env={"MOONCAKE_WHEEL_LEAD_MS": 1500})
        t0 = now_ms() + 2500
        due = {f"h/{i}": t0 + 50 * i for i in range(60)}  # over 3 s
        send(env, [call(k, d, server.url(("/slow/" if i % 3 == 0 else "/fast/") + k),
                        timeout_ms=10000)
                   for i, (k, d) in enumerate(due.items())])
        sleep_until(t0 + 500)
        e1 = procs["executor"]
        before = {k: metric(env, e1, "mooncake_executor_" + k) for k in ("in_flight", "held")}
        e2 = env.start("executor", instance="e2", **ALLOW_LOOPBACK)
        wait_until("the partitions split between two executors", lambda: sorted(
            metric(env, p, "mooncake_assigned_partitions") or 0 for p in (e1, e2)) == [1, 2])
        sleep_until(max(now_ms(), t0 + 1800))
        during = {k: metric(env, e1, "mooncake_executor_" + k) for k in ("in_flight", "held")}
        e1.send_signal(signal.SIGTERM)
        readiness = readyz(e1)
        while readiness[0] == 200 and e1.poll() is None:  # the signal thread's turn
            time.sleep(0.01)
            readiness = readyz(e1)
        assert e1.wait(30) == 0, f"SIGTERM should stop the executor cleanly:\n{env.log(e1)}"
        assert readiness[0] == 503 and "stopping" in readiness[1], \
            f"a stopping executor is not ready while it drains: {readiness}"
        wait_assigned(env, e2, env.partitions)
        got = wait_results(env, len(due), timeout=40)
        time.sleep(1.5)
        got = results(env)
        ok = {}
        for r in got:
            assert r["outcome"] == "SUCCEEDED", r
            ok[r["key"]] = ok.get(r["key"], 0) + 1
        assert ok == {k: 1 for k in due}, \
            f"SUCCEEDED Results per task: missing {sorted(set(due) - set(ok))[:10]}, " \
            f"several {sorted(k for k, n in ok.items() if n > 1)[:10]}"
        calls = server.snapshot()
        called = {}
        for c in calls:
            k = c["headers"]["webhook-id"]
            called[k] = called.get(k, 0) + 1
            assert c["at"] >= due[k] - EARLY_TOLERANCE_MS, \
                f"{k} called {due[k] - c['at']:.0f} ms before due (held across the handover?)"
        assert set(called) == set(due), sorted(set(due) - set(called))
        repeated = sorted(k for k, n in called.items() if n > 1)
        print(f"     e1 before the join: {before}; before SIGTERM: {during}; "
              f"{len(calls)} calls for {len(due)} tasks; e1 /readyz while draining: "
              f"{readiness[0]} {readiness[1]!r}")
        assert not repeated, f"called more than once across the hand-overs: {repeated}"
        assert_alive(env, *(p for r, p in procs.items() if r != "executor"), e2)
    finally:
        env.stop_all()
        server.close()


def test_executor_kill_9_repeats_only_unfinished_calls():
    """kill -9 of the executor 3 times while 10,000 callbacks are due over
    15 s (one in a hundred takes 4 s to answer, so the oldest unfinished
    record lags far behind): every task is called and has exactly one
    SUCCEEDED Result, and only calls unfinished at a kill are made again -
    not everything since the committed offset."""
    n, spread_ms, slow_s, concurrency = 10000, 15000, 4.0, 64
    rng = random.Random(SEED)
    server = CallbackServer(lambda c: (200, {}, b"ok", slow_s if c["path"].startswith("/slow/")
                                       else 0))
    env = Env(partitions=3)
    ex_env = {**ALLOW_LOOPBACK, **FAST_FAILOVER, "MOONCAKE_EXECUTOR_CONCURRENCY": concurrency}
    try:
        procs = start_pipeline(env, store=True, wheel_env={"MOONCAKE_WHEEL_LEAD_MS": 200},
                               executor_env=ex_env)
        t0 = now_ms() + 2000
        due = {f"k/{i}": t0 + rng.randint(0, spread_ms) for i in range(n)}
        send(env, [call(k, d, server.url(("/slow/" if i % 100 == 0 else "/fast/") + str(i)),
                        timeout_ms=10000, retry=policy(initial_backoff_ms=100))
                   for i, (k, d) in enumerate(due.items())])
        print(f"     seed {SEED}: {n} tasks sent by +{(now_ms() - t0) / 1000:.1f}s", flush=True)
        ex = procs["executor"]
        kills = []
        skipped = 0.0
        for instance in ("e1", "e2", "e2"):  # same id (fences at once), new, same
            wait_assigned(env, ex, env.partitions)
            sleep_until(max(now_ms(), t0) + rng.randint(300, 2500))
            state = {k: metric(env, ex, "mooncake_executor_" + k) or 0
                     for k in ("in_flight", "held", "skipped_total", "checkpoint_full_total")}
            skipped += state["skipped_total"]
            ex.send_signal(signal.SIGKILL)
            ex.wait()
            kills.append(now_ms())
            print(f"     killed the executor at +{(kills[-1] - t0) / 1000:.1f}s "
                  f"(in flight {state['in_flight']:.0f}, held {state['held']:.0f}, "
                  f"checkpoints full {state['checkpoint_full_total']:.0f}), "
                  f"restarting as {instance}", flush=True)
            ex = env.start("executor", instance=instance, **ex_env)
        wait_assigned(env, ex, env.partitions)

        def all_succeeded():
            try:
                got = results(env, timeout=10)
            except Unsettled:
                return None
            ok = {r["key"] for r in got if r["outcome"] == "SUCCEEDED"}
            missing = len(set(due) - ok)
            if missing:
                print(f"     +{(now_ms() - t0) / 1000:.1f}s: {missing} tasks without a "
                      f"SUCCEEDED Result yet", flush=True)
            return got if not missing else None

        sleep_until(t0 + spread_ms + slow_s * 1000)
        wait_until("a SUCCEEDED Result for every task", all_succeeded, timeout=90, interval=2)
        time.sleep(2)  # room for duplicates
        got = results(env)
        skipped += metric(env, ex, "mooncake_executor_skipped_total") or 0

        succeeded = {}
        for r in got:
            if r["outcome"] == "SUCCEEDED":
                succeeded[r["key"]] = succeeded.get(r["key"], 0) + 1
        twice = sorted((k, c) for k, c in succeeded.items() if c > 1)
        assert not twice, f"{len(twice)} tasks with several SUCCEEDED Results: {twice[:10]}"
        assert set(succeeded) == set(due), \
            f"without SUCCEEDED: {sorted(set(due) - set(succeeded))[:10]}"
        others = [r for r in got if r["outcome"] not in ("SUCCEEDED", "FAILED_WILL_RETRY")]
        assert not others, \
            f"{len(others)} Results neither SUCCEEDED nor FAILED_WILL_RETRY: {others[:5]}"
        assert not dead_letters(env), "dead letters although the endpoint always answers 200"

        calls = server.snapshot()
        per_key = {}
        for c in calls:
            per_key.setdefault(c["headers"]["idempotency-key"], []).append(c)
        called = {c["headers"]["webhook-id"] for c in calls}
        assert called >= set(due), f"never called: {sorted(set(due) - called)[:10]}"
        repeated = sum(len(v) - 1 for v in per_key.values())
        # What a restart from the committed offset alone (the oldest
        # unfinished record) would have called again: every call since the
        # oldest one still unanswered at the kill.
        naive = []
        for k in kills:
            open_at = [c["at"] for c in calls
                       if c["at"] < k and (c["responded_at"] is None or c["responded_at"] > k)]
            naive.append(sum(1 for c in calls if open_at and min(open_at) <= c["at"] < k))
        per_kill = [0] * len(kills)
        answered = []  # of repeated calls answered before the kill: how long before
        for v in per_key.values():
            v = sorted(v, key=lambda c: c["at"])
            for prev, c in zip(v, v[1:]):
                # Repeated because of the first kill after the previous call.
                i = min((i for i, k in enumerate(kills) if k > prev["at"]), default=None)
                if i is not None:
                    per_kill[i] += 1
                    if prev["responded_at"] is not None and prev["responded_at"] < kills[i]:
                        answered.append(kills[i] - prev["responded_at"])
        failed = sum(1 for r in got if r["outcome"] == "FAILED_WILL_RETRY")
        print(f"     {len(calls)} calls for {n} tasks: {repeated} repeated with the same "
              f"Idempotency-Key (after each kill: {per_kill}; a restart from the committed "
              f"offset alone would repeat ~{naive}); {failed} failed attempts retried; "
              f"{skipped:.0f} records skipped as finished after restarts", flush=True)
        if answered:
            print(f"     {len(answered)} repeated calls had been answered before the kill "
                  f"(finished, not yet committed): by p50 {statistics.median(answered):.0f} "
                  f"max {max(answered):.0f} ms", flush=True)
        # Only unfinished calls may repeat: in flight at the kill, or answered so
        # shortly before it that their Result was not committed yet. Normally
        # that is one commit interval; but an executor that has just replaced a
        # killed one cannot commit until the group has dropped the dead member
        # (session timeout) and its fenced transaction is over (transaction
        # timeout), so the window is those two plus a second of slack. How
        # many calls fall in it depends on the machine's speed, so the count
        # is only compared with what a restart from the committed offset repeats.
        window = (FAST_FAILOVER["MOONCAKE_KAFKA_SESSION_TIMEOUT_MS"] +
                  FAST_FAILOVER["MOONCAKE_TRANSACTION_TIMEOUT_MS"] + 1000)
        assert not answered or max(answered) <= window, \
            f"a call answered {max(answered):.0f} ms before a kill was repeated: its " \
            f"Result should have been committed within {window} ms"
        assert repeated < sum(naive), \
            f"{repeated} calls repeated after {len(kills)} kills, not fewer than the " \
            f"{sum(naive)} a restart from the committed offset alone would repeat"
        assert_alive(env, *(p for r, p in procs.items() if r != "executor"), ex)
    finally:
        env.stop_all()
        server.close()


if __name__ == "__main__":
    run([
        test_due_tasks_call_their_endpoint_once_at_their_time,
        test_a_500_is_retried_and_then_succeeds,
        test_results_keep_what_the_endpoint_answered,
        test_a_404_is_permanent,
        test_attempts_run_out,
        test_a_slow_endpoint_times_out,
        test_retry_after_is_honoured,
        test_calls_are_signed_with_every_secret_of_the_app,
        test_ssrf_guard_refuses_private_addresses,
        test_early_arrivals_are_held_until_due,
        test_held_and_running_calls_survive_a_handover,
        test_executor_kill_9_repeats_only_unfinished_calls,
    ])
