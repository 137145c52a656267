"""What the console asks of the gateway, on a real broker: admin tokens and
/api/whoami, the CSRF refusal of another site's POST, the console's files with
their security headers, /api/cluster, /api/stats' minutes, and
/api/task/reschedule (here and forwarded to the instance whose view holds the
task). The browser test (test_console.py) drives the page itself.

Run against the broker of tools/kafka-local (see harness.py)."""
import http.client
import time

from harness import CallbackServer, Env, now_ms, run
from test_gateway import ADMIN, BILLING, INNER, SEEN, SHOP, check_answers, req
from test_view import SECRET_HEADER, SECRET_PARAM, ask, callback, start_all, state_of, submit, \
    wait_state


def get_file(port, path, headers=None):
    """A console file, outside the API's answer log (its paths are not routes)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def test_tokens_console_files_and_csrf():
    env = Env()
    try:
        port = start_all(env).http_port
        # whoami: what each token may do
        me = req(port, "GET", "/api/whoami", token=ADMIN).json["data"]
        assert me == {"admin": True, "inner": False, "apps": ["shop", "billing"]}, me
        me = req(port, "GET", "/api/whoami", token=SHOP).json["data"]
        assert me == {"admin": False, "inner": False, "apps": ["shop"]}, me
        me = req(port, "GET", "/api/whoami", token=INNER).json["data"]
        assert me == {"admin": False, "inner": True, "apps": []}, me
        assert req(port, "GET", "/api/whoami", token="not-a-token-0123456789").status == 401
        # an admin token acts on any app, but is not an inner token
        body = {"appId": "billing", "uuid": "b1", "delayMs": 600_000,
                "callback": {"url": "https://billing.example.com/x"}}
        assert req(port, "POST", "/submit", body, token=ADMIN).status == 200
        assert ask(port, "b1", app="billing", token=ADMIN).status == 200
        assert ask(port, "b1", app="billing", token=SHOP).status == 403
        a = req(port, "POST", "/inner/submit", body, token=ADMIN)
        assert a.status == 403 and "inner token" in a.json["msg"], a
        # a POST from another site's page is refused, and writes nothing
        for evil in ({"Origin": "https://evil.example"},
                     {"Origin": f"http://127.0.0.1:{port + 1}"},
                     {"Sec-Fetch-Site": "cross-site"}):
            a = req(port, "POST", "/api/task/done", {"appId": "billing", "uuid": "b1"},
                    token=ADMIN, headers=evil)
            assert a.status == 403 and "another site" in a.json["msg"], (evil, a)
        b1 = ask(port, "b1", app="billing", token=ADMIN).json["data"]
        assert b1["state"] != "cancelRequested", b1
        # the page's own origin passes (behind a proxy that ends TLS, too)
        for same in (f"http://127.0.0.1:{port}", f"https://127.0.0.1:{port}"):
            a = req(port, "POST", "/api/task/done",
                    {"appId": "billing", "uuid": "b-none"}, token=ADMIN,
                    headers={"Origin": same, "Sec-Fetch-Site": "same-origin"})
            assert a.status == 200, (same, a)
        # the console's files: compiled in, with a strict policy, revalidated by ETag
        status, h, page = get_file(port, "/console/")
        assert status == 200 and h["content-type"].startswith("text/html"), (status, h)
        csp = h["content-security-policy"]
        for rule in ("default-src 'none'", "script-src 'self'", "style-src 'self'",
                     "frame-ancestors 'none'", "connect-src 'self'"):
            assert rule in csp, csp
        assert "unsafe" not in csp
        assert h["x-content-type-options"] == "nosniff" and h["referrer-policy"] == "no-referrer"
        assert b"<script" in page and b"onclick" not in page.lower(), page[:300]
        status, h2, _ = get_file(port, "/console/", {"If-None-Match": h["etag"]})
        assert status == 304, status
        assert get_file(port, "/console/index.html")[2] == page
        assert get_file(port, "/console/nope.js")[0] == 404
        # every answer of the API carries nosniff too
        assert req(port, "GET", "/api/whoami").headers["x-content-type-options"] == "nosniff"
    finally:
        env.stop_all()


def test_cluster_and_minutes():
    env = Env()
    server = CallbackServer()
    try:
        port = start_all(env).http_port
        for i in range(5):
            submit(port, f"m{i}", now_ms() + 500, callback(server, "/m"))
        for i in range(5):
            wait_state(port, f"m{i}", "succeeded")
        # the last hour by minute: 5 submitted and called, when and how late
        deadline = time.time() + 20
        while True:
            d = req(port, "GET", "/api/stats?appId=shop").json["data"]
            ms = d["minutes"]
            if sum(m["calls"] for m in ms) == 5:
                break
            assert time.time() < deadline, d
            time.sleep(0.2)
        assert len(ms) == 60 and ms[-1]["minute"] == now_ms() // 60000 * 60000 or \
            ms[-1]["minute"] == (now_ms() // 60000 - 1) * 60000, ms[-1]
        assert [m["minute"] for m in ms] == sorted(m["minute"] for m in ms)
        assert sum(m["submitted"] for m in ms) == 5 and sum(m["failures"] for m in ms) == 0
        busy = [m for m in ms if m["calls"]]
        assert all(m["lateP50Ms"] is not None and 0 <= m["lateP50Ms"] <= m["lateP99Ms"] < 5000
                   for m in busy), busy
        assert all(m["lateP50Ms"] is None for m in ms if not m["calls"])
        # the cluster: admins only; every role's group, each partition with an owner
        a = req(port, "GET", "/api/cluster", token=SHOP)
        assert a.status == 403 and "admin token" in a.json["msg"], a
        c = req(port, "GET", "/api/cluster", token=ADMIN)
        assert c.status == 200, c
        c = c.json["data"]
        groups = {g["role"]: g for g in c["groups"]}
        assert set(groups) >= {"router", "store", "wheel", "executor", "retry", "view"}, groups
        for role in ("router", "executor", "view"):
            g = groups[role]
            assert g["state"] == "Stable" and len(g["members"]) == 1, g
            owned = {(p["topic"], p["partition"]) for p in g["members"][0]["partitions"]}
            listed = {(p["topic"], p["partition"]) for p in g["partitions"]}
            assert owned and owned <= listed, (owned, listed)
            assert all(p["owner"] == g["members"][0]["instanceId"] for p in g["partitions"]
                       if (p["topic"], p["partition"]) in owned)
        router = groups["router"]["partitions"]
        assert sum(p["committed"] or 0 for p in router) >= 5, router
        assert all(p["lag"] is None or 0 <= p["lag"] <= 1 for p in router), router
        assert c["process"]["ready"] and {x["name"] for x in c["process"]["checks"]} >= \
            {"router", "view", "broker"}, c["process"]
    finally:
        env.stop_all()
        server.close()


def test_reschedule_here_and_forwarded():
    env = Env()
    server = CallbackServer()
    fast = {"MOONCAKE_KAFKA_SESSION_TIMEOUT_MS": "6000",
            "MOONCAKE_KAFKA_HEARTBEAT_INTERVAL_MS": "500"}
    try:
        engine = start_all(env, **fast)
        port = engine.http_port
        far = now_ms() + 3_600_000
        # run now: the task due in an hour is called now, once, with its secrets intact
        submit(port, "r1", far, callback(server, "/r1", body="again"))
        wait_state(port, "r1", "pendingStore")
        a = req(port, "POST", "/api/task/reschedule", {"appId": "shop", "uuid": "r1"})
        assert a.status == 200 and a.json["data"]["uuid"] == "r1", a
        assert abs(a.json["data"]["dueAt"] - now_ms()) < 5000, a
        d = wait_state(port, "r1", "succeeded")
        assert len(d["olderVersions"]) == 1, d
        calls = server.calls_to(f"/r1?token={SECRET_PARAM}&n=1")
        assert len(calls) == 1, server.snapshot()
        assert calls[0]["headers"]["authorization"] == SECRET_HEADER, calls[0]
        # another time: the new due time is the task's
        submit(port, "r2", far, callback(server, "/r2"))
        when = now_ms() + 1_800_000
        # sent twice with one Idempotency-Key (a lost answer retried): done once
        for replayed in ("", "true"):
            a = req(port, "POST", "/api/task/reschedule",
                    {"appId": "shop", "uuid": "r2", "dueAt": when},
                    headers={"Idempotency-Key": "resched-r2"})
            assert a.status == 200 and a.headers.get("idempotent-replayed", "") == replayed, a
        deadline = time.time() + 20
        while state_of(port, "r2")["dueAt"] != when:
            assert time.time() < deadline, state_of(port, "r2")
            time.sleep(0.1)
        time.sleep(1)
        assert len(state_of(port, "r2")["olderVersions"]) == 1, state_of(port, "r2")
        # refused: another app's token, no such task, a bad field, beyond --max-due-ms
        assert req(port, "POST", "/api/task/reschedule", {"appId": "shop", "uuid": "r2"},
                   token=BILLING).status == 403
        assert req(port, "POST", "/api/task/reschedule",
                   {"appId": "shop", "uuid": "none"}).status == 404
        for bad, field in (({"appId": "shop"}, "uuid"),
                           ({"appId": "shop", "uuid": "r2", "dueAt": "soon"}, "dueAt"),
                           ({"appId": "shop", "uuid": "r2", "dueAt": now_ms() + 10 ** 12},
                            "due")):
            a = req(port, "POST", "/api/task/reschedule", bad)
            assert a.status == 400 and field in a.json["msg"], (bad, a)
        # forwarded: asked of a gateway whose view holds none of the partitions
        lone = env.start("gateway", "--app-tokens", "shop=" + SHOP, "--admin-tokens", ADMIN,
                         instance="g2")
        submit(port, "r3", far, callback(server, "/r3"))
        wait_state(port, "r3", "pendingStore")
        a = req(lone.http_port, "POST", "/api/task/reschedule", {"appId": "shop", "uuid": "r3"},
                token=ADMIN)
        assert a.status == 200 and a.json["data"]["uuid"] == "r3", a
        wait_state(port, "r3", "succeeded")
        assert len(server.calls_to(f"/r3?token={SECRET_PARAM}&n=1")) == 1
        check_answers(SEEN, 10, {200, 400, 403, 404})
    finally:
        env.stop_all()
        server.close()


if __name__ == "__main__":
    run([test_tokens_console_files_and_csrf, test_cluster_and_minutes,
         test_reschedule_here_and_forwarded])
