"""GET /api/task on a real broker: every state a task can be in is reached and
answered, the answer never says pending for a task already called or
cancelled for one that is called later, a write the gateway acknowledged is
visible to the next question, tokens see only their app, no secret appears
in an answer or a log, and the view survives kill -9, moves to another
instance, and answers through any instance of the group.

Run against the broker of tools/kafka-local (see harness.py)."""
import json
import os
import signal
import subprocess
import threading
import time
import urllib.parse

from harness import BOOTSTRAP, CallbackServer, Env, now_ms, run, submit_value, task
from test_gateway import AUTH, BILLING, CTL, INNER, SEEN, SHOP, check_answers, req

SECRET_HEADER = "Bearer view-secret-0123"
SECRET_PARAM = "qs-secret-4567"


def callback(server, path, body="hi", **extra):
    return {"url": server.url(f"{path}?token={SECRET_PARAM}&n=1"), "body": body,
            "headers": {"Authorization": SECRET_HEADER, "X-Order": "42"}, **extra}


def submit(port, uuid, due, cb, retry=None, token=SHOP, app="shop"):
    body = {"appId": app, "uuid": uuid, "expireTime": due, "callback": cb}
    if retry:
        body["retry"] = retry
    a = req(port, "POST", "/submit", body, token=token)
    assert a.status == 200, a
    return a


def ask(port, uuid, app="shop", token=SHOP):
    return req(port, "GET", f"/api/task?appId={app}&uuid={uuid}", token=token)


def state_of(port, uuid, app="shop"):
    a = ask(port, uuid, app)
    assert a.status == 200, a
    return a.json["data"]


def wait_state(port, uuid, want, timeout=30, missing_ok=False):
    deadline = time.time() + timeout
    seen = []
    while time.time() < deadline:
        if missing_ok:
            a = ask(port, uuid)
            if a.status == 404:
                time.sleep(0.05)
                continue
        d = state_of(port, uuid)
        if not seen or seen[-1] != d["state"]:
            seen.append(d["state"])
        if d["state"] == want:
            return d
        time.sleep(0.05)
    raise AssertionError(f"{uuid}: not {want} after {timeout}s, went through {seen}")


def start_all(env, *args, **kw):
    p = env.start("all", *AUTH, "--executor-allow-cidrs", "127.0.0.1/32", *args, wait_ready=False,
                  **kw)
    env.wait_ready(p, timeout=90)
    return p


def assert_no_secret(env, procs):
    for _, _, _, _, body in SEEN:
        text = body.decode(errors="replace")
        assert SECRET_HEADER not in text and SECRET_PARAM not in text, text[:300]
    for p in procs:
        log = env.log(p, tail=None)
        assert SECRET_HEADER not in log and SECRET_PARAM not in log, "a secret in the log"


def test_each_state_is_answered():
    env = Env()

    def respond(call):
        if call["path"].startswith("/slow"):
            return 200, {}, b"done", 2.5
        if call["path"].startswith("/fail"):
            return 503, {"Content-Type": "text/plain", "Retry-After": "3"}, b"busy"
        if call["path"].startswith("/bad"):
            return 400, {}, b"no such order"
        return 200, {"Content-Type": "text/plain"}, b"ok"

    server = CallbackServer(respond)
    try:
        p = start_all(env, "--wheel-lead-ms", "1500")
        port = p.http_port
        t0 = now_ms()
        submit(port, "far", t0 + 3_600_000, callback(server, "/far"))
        d = state_of(port, "far")
        assert d["state"] in ("accepted", "pendingStore"), d
        assert d["dueAt"] == t0 + 3_600_000 and d["appId"] == "shop" and d["uuid"] == "far", d
        assert d["callback"]["headers"] == {"Authorization": "[redacted]", "X-Order": "42"}, d
        assert "token=[redacted]&n=1" in d["callback"]["url"], d
        wait_state(port, "far", "pendingStore")

        submit(port, "near", t0 + 40_000, callback(server, "/near"))
        wait_state(port, "near", "pendingWheel")

        # fired early (the lead), held by the executor until its due time, then called
        submit(port, "held", now_ms() + 2500, callback(server, "/held"))
        wait_state(port, "held", "held")
        assert not server.calls_to(f"/held?token={SECRET_PARAM}&n=1")
        d = wait_state(port, "held", "succeeded")
        assert d["final"] and d["attempts"][0]["outcome"] == "SUCCEEDED", d
        assert d["attempts"][0]["httpStatus"] == 200 and d["attempts"][0]["responseBody"] == "ok"

        submit(port, "slow", now_ms() + 200, callback(server, "/slow"))
        wait_state(port, "slow", "calling")
        wait_state(port, "slow", "succeeded")

        # Retry-After: 3 makes each backoff 3 s, longer than the lead
        retry = {"maxAttempts": 3, "initialBackoffMs": 100, "multiplier": 1.0,
                 "maxBackoffMs": 4000}
        submit(port, "flaky", now_ms() + 200, callback(server, "/fail"), retry=retry)
        d = wait_state(port, "flaky", "retrying")
        assert d["attempts"][0]["outcome"] == "FAILED_WILL_RETRY", d
        assert d["attempts"][0]["httpStatus"] == 503 and d["attempts"][0]["responseBody"] == "busy"
        d = wait_state(port, "flaky", "dead", timeout=40)
        assert [a["attempt"] for a in d["attempts"]] == [1, 2, 3], d
        assert d["attempts"][-1]["outcome"] == "EXHAUSTED", d

        submit(port, "refused", now_ms() + 200, callback(server, "/bad"))
        d = wait_state(port, "refused", "failed")
        assert d["attempts"][0]["outcome"] == "FAILED_PERMANENTLY", d

        # cancelled: said only once the wheel is past the cancel; never called after
        a = req(port, "POST", "/api/task/done", {"appId": "shop", "uuid": "near"})
        assert a.status == 200, a
        d = state_of(port, "near")
        assert d["state"] in ("cancelRequested", "cancelled") and d["cancelVersion"] > d["version"]
        wait_state(port, "near", "cancelled")

        # a newer version supersedes: the old one is in the story
        submit(port, "moved", now_ms() + 40_000, callback(server, "/moved"))
        first = wait_state(port, "moved", "pendingWheel")["version"]
        submit(port, "moved", now_ms() + 1500, callback(server, "/moved2"))
        d = wait_state(port, "moved", "succeeded")
        assert d["version"] > first and d["olderVersions"][0]["version"] == first, d
        # "superseded" once the wheel's position marker is past the newer version
        deadline = time.time() + 10
        while d["olderVersions"][0]["state"] != "superseded":
            assert d["olderVersions"][0]["state"] == "supersedeRequested", d
            assert time.time() < deadline, d
            time.sleep(0.1)
            d = state_of(port, "moved")
        assert not server.calls_to(f"/moved?token={SECRET_PARAM}&n=1")

        # a command the router refuses, produced straight to Kafka
        env.produce("tasks", b"shop/bad-url",
                    submit_value(task("shop", "bad-url", now_ms() + 1000, url="ftp://x.example/")))
        env.flush()
        # the view folds no command the router refuses: 404 until its dead letter
        d = wait_state(port, "bad-url", "rejected", missing_ok=True)
        assert "url" in d["reason"], d
        # a refused re-submit of a task replaces nothing
        env.produce("tasks", b"shop/held",
                    submit_value(task("shop", "held", now_ms() + 1000, url="ftp://x.example/")))
        env.flush()
        time.sleep(1)
        assert state_of(port, "held")["state"] == "succeeded"

        # a recurring job's occurrence is a task
        a = req(port, "POST", "/jobs", {"appId": "shop", "jobId": "nightly",
                                        "schedule": {"cron": "0 3 * * *"},
                                        "callback": callback(server, "/job")})
        assert a.status == 200, a
        time.sleep(1)
        a = req(port, "POST", "/jobs/trigger", {"appId": "shop", "jobId": "nightly"})
        assert a.status == 200, a
        occurrence = a.json["data"]["taskId"]
        # the jobs role writes the occurrence after the trigger's acknowledgement
        d = wait_state(port, occurrence, "succeeded", missing_ok=True)
        assert d["uuid"] == occurrence, d

        a = ask(port, "never-submitted")
        assert a.status == 404 and "never-submitted" in a.json["msg"], a

        # mooncakectl reads the same answer from the view's changelog (what it committed)
        def ctl_task(*args):
            return subprocess.run([CTL, "-b", BOOTSTRAP, "-p", env.prefix, "task", "get", *args],
                                  capture_output=True, text=True, timeout=60)
        time.sleep(2.5)  # the view commits once a second
        for uuid in ("held", "flaky", "near", "moved", "far"):
            got = ctl_task("-J", f"shop/{uuid}")
            assert got.returncode == 0, got
            mine, api = json.loads(got.stdout), state_of(port, uuid)
            assert mine == api, (mine, api)
            assert SECRET_HEADER not in got.stdout and SECRET_PARAM not in got.stdout
        table = ctl_task("--app", "shop", "--id", "flaky")
        assert table.returncode == 0 and "dead" in table.stdout and "EXHAUSTED" in table.stdout, \
            table
        missing = ctl_task("shop/never-submitted")
        assert missing.returncode == 1 and "no task shop/never-submitted" in missing.stderr, missing
        assert ctl_task("shop").returncode == 2
        assert_no_secret(env, [p])
    finally:
        env.stop_all()
        server.close()


def test_questions_are_checked_and_tokens_see_their_app_only():
    env = Env()
    try:
        p = start_all(env)
        port = p.http_port
        submit(port, "mine", now_ms() + 600_000, {"url": "http://127.0.0.1:9/x"})
        assert ask(port, "mine").status == 200
        a = ask(port, "mine", token=BILLING)
        assert a.status == 403 and "appId 'shop'" in a.json["msg"], a
        a = ask(port, "mine", token=INNER)
        assert a.status == 200 and a.json["data"]["uuid"] == "mine", "inner tokens ask for any app"
        assert ask(port, "mine", token=None).status == 401
        for path, word in (("/api/task?appId=shop", "uuid"), ("/api/task?uuid=x", "appId"),
                           ("/api/task?appId=shop&uuid=x&limit=3", "limit"),
                           ("/api/task?appId=a%2Fb&uuid=x", "appId"),
                           ("/api/task?appId=shop&uuid=x&uuid=y", "uuid"),
                           ("/api/task?appId=shop&uuid=", "uuid")):
            a = req(port, "GET", path)
            assert a.status == 400 and word in a.json["msg"], (path, a)
        a = req(port, "POST", "/api/task", {})
        assert a.status == 405, a
        # 404 for another app's unknown task is still 403 first: nothing leaks
        assert ask(port, "nothing", app="billing").status == 403
    finally:
        env.stop_all()


def test_an_acknowledged_write_is_in_the_next_answer_and_pending_means_not_called():
    """The view answers after reading what was committed before the question:
    every task is found right after its acknowledgement, and a task said to be
    pending had not been called when the question was sent."""
    env = Env()
    server = CallbackServer()
    try:
        p = start_all(env, "--wheel-lead-ms", "0")
        port = p.http_port
        pending = {"accepted", "pendingStore", "pendingWheel"}
        checked = 0
        for i in range(40):
            uuid = f"race-{i}"
            submit(port, uuid, now_ms() + 300 + (i % 5) * 100, callback(server, f"/race/{i}"))
            sent = now_ms()
            a = ask(port, uuid)
            assert a.status == 200, f"an acknowledged task is not in the next answer: {a}"
            assert a.json["data"]["state"] in pending, a.json
            # then ask around its due time: pending must mean not called yet
            until = now_ms() + 1500
            while now_ms() < until:
                sent = now_ms()
                d = state_of(port, uuid)
                if d["state"] in pending:
                    calls = server.calls_to(f"/race/{i}?token={SECRET_PARAM}&n=1")
                    assert all(c["at"] >= sent for c in calls), (d, calls, sent)
                    checked += 1
                if d["final"]:
                    break
        assert checked > 40, checked
    finally:
        env.stop_all()
        server.close()


def test_a_write_acknowledged_behind_an_open_transaction_is_in_the_answer():
    """The gateway's writes are not transactional: one acknowledged while another
    writer's transaction is open on the partition lies past its last stable offset.
    The answer waits for that transaction to end, and then has the write."""
    from confluent_kafka import Producer
    env = Env(partitions=1)
    try:
        p = start_all(env)
        port = p.http_port
        tx = Producer({"bootstrap.servers": BOOTSTRAP, "transactional.id": env.prefix + "tx",
                       "log_level": 3})
        tx.init_transactions(30)
        tx.begin_transaction()
        tx.produce(env.topic("tasks"), key=b"shop/in-txn",
                   value=submit_value(task("shop", "in-txn", now_ms() + 60_000)))
        tx.flush(10)
        submit(port, "behind", now_ms() + 40_000, {"url": "http://127.0.0.1:9/x"})
        threading.Timer(1.0, lambda: tx.commit_transaction(30)).start()
        t0 = time.time()
        a = ask(port, "behind")
        assert a.status == 200 and a.json["data"]["uuid"] == "behind", a
        assert time.time() - t0 > 0.8, "answered before the transaction ended"
    finally:
        env.stop_all()


def test_the_view_survives_kill_9_and_moves_between_instances():
    env = Env()
    server = CallbackServer()
    fast = {"MOONCAKE_KAFKA_SESSION_TIMEOUT_MS": "6000",
            "MOONCAKE_KAFKA_HEARTBEAT_INTERVAL_MS": "500"}
    try:
        engine = start_all(env)
        engine_port = engine.http_port
        # Two more gateways, each with a view instance of the same group.
        a = env.start("gateway,view", *AUTH, instance="v1", **fast)
        b = env.start("gateway,view", *AUTH, instance="v2", **fast)
        uuids = [f"k{i}" for i in range(12)]
        for u in uuids:
            submit(engine_port, u, now_ms() + 40_000, callback(server, "/k"))
        for g in (engine, a, b):
            for u in uuids:
                d = state_of(g.http_port, u)
                assert d["state"] == "pendingWheel" or d["state"] == "accepted", d
        before = {u: state_of(a.http_port, u)["version"] for u in uuids}
        # a list gathered from the three instances is the same through each
        for g in (engine, a, b):
            got, _ = list_all(g.http_port, "appId=shop", limit=5)
            assert sorted(got) == sorted(uuids) and len(got) == len(uuids), got
            assert stats(g.http_port)["tasks"]["total"] == len(uuids)
        a.send_signal(signal.SIGKILL)
        a.wait()
        # every key is answered by the survivor, the same as before
        deadline = time.time() + 60
        while True:
            got = {}
            for u in uuids:
                r = ask(b.http_port, u)
                if r.status == 200:
                    got[u] = r.json["data"]["version"]
            if got == before:
                break
            assert time.time() < deadline, (got, before)
            time.sleep(0.5)
        # and lists them all, gathered from the two left
        deadline = time.time() + 60
        while True:
            r = req(b.http_port, "GET", "/api/tasks?appId=shop&limit=100")
            if r.status == 200 and sorted(t["uuid"] for t in r.json["data"]["tasks"]) == \
                    sorted(uuids):
                break
            assert time.time() < deadline and r.status in (200, 503), r
            time.sleep(0.5)
        # restarted under the same id, it answers again from its changelog
        a = env.start("gateway,view", *AUTH, instance="v1", **fast)
        r = req(port=a.http_port, method="POST", path="/api/task/done",
                body={"appId": "shop", "uuid": "k0"})
        assert r.status == 200, r
        d = wait_state(b.http_port, "k0", "cancelled")
        assert d["version"] == before["k0"], d
        for u in uuids[1:]:
            assert state_of(a.http_port, u)["version"] == before[u]
        assert_no_secret(env, [engine, a, b])
    finally:
        env.stop_all()
        server.close()


def test_an_engine_without_a_view_needs_no_views_topic():
    """Only the view reads and writes <prefix>views: the engine's roles start
    without it, and the view role makes it."""
    class WithoutViews(Env):
        TOPICS = tuple(t for t in Env.TOPICS if t != "views")

    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    env = WithoutViews()
    try:
        for role in ("router", "wheel", "executor"):
            env.start(role)
        assert env.topic("views") not in admin.list_topics(timeout=10).topics
        env.start("view", instance="v0")
        assert env.topic("views") in admin.list_topics(timeout=10).topics
    finally:
        env.stop_all()


def test_a_slow_question_does_not_hold_up_submits():
    """A question waits on its own thread: while one hangs on a view instance
    that does not answer, the gateway's one HTTP thread takes submits."""
    import socket
    from confluent_kafka import Consumer
    env = Env(partitions=1)
    # A member of the view group advertising a port that takes connections
    # and never answers.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    member = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": env.topic("view"),
                       "client.id": f"mooncake@http://127.0.0.1:{silent.getsockname()[1]}",
                       "log_level": 3})
    member.subscribe([env.topic("results")])
    try:
        deadline = time.time() + 30
        while not member.assignment():
            member.poll(0.2)
            assert time.time() < deadline, "the fake view member got no partition"
        g = env.start("gateway", *AUTH, "--gateway-threads", "1")
        answers = []
        asker = threading.Thread(target=lambda: answers.append(ask(g.http_port, "x")))
        t0 = time.time()
        asker.start()
        time.sleep(0.3)
        for i in range(5):
            t = time.time()
            submit(g.http_port, f"during-{i}", now_ms() + 60_000, {"url": "http://127.0.0.1:9/x"})
            assert time.time() - t < 1.0, "a submit waited behind the question"
        asker.join()
        assert answers[0].status == 503 and "did not answer" in answers[0].json["msg"], answers
        assert 3 < time.time() - t0 < 10, "the question did not wait, or was not bounded"
    finally:
        silent.close()
        member.close()
        env.stop_all()


def list_all(port, query, token=SHOP, limit=7):
    """Every page of GET /api/tasks?<query>, following next: the uuids in order."""
    uuids, after, pages = [], None, 0
    while True:
        q = f"/api/tasks?{query}&limit={limit}" + (f"&after={urllib.parse.quote(after)}" if after else "")
        a = req(port, "GET", q, token=token)
        assert a.status == 200, a
        pages += 1
        d = a.json["data"]
        assert len(d["tasks"]) <= limit
        uuids += [t["uuid"] for t in d["tasks"]]
        after = d["next"]
        if not after:
            return uuids, pages
        assert pages < 100


def stats(port, app="shop", token=SHOP):
    a = req(port, "GET", f"/api/stats?appId={app}", token=token)
    assert a.status == 200, a
    return a.json["data"]


def test_tasks_are_listed_by_due_time_and_counted():
    """GET /api/tasks pages an app's tasks by due time with nothing repeated or
    skipped, filters by state and due time, and GET /api/stats counts them per
    state with the last hour's calls, failures and dead letters; another app's
    token sees nothing of it; mooncakectl task list / stats say the same."""
    env = Env()
    server = CallbackServer(lambda call: (500, {}, b"no") if call["path"].startswith("/bad")
                            else (200, {}, b"ok"))
    try:
        p = start_all(env)
        port = p.http_port
        t0 = now_ms()
        far = {}
        # 23 shop tasks far ahead, due times with ties (ordered by uuid then)
        for i in range(23):
            u = f"far-{i:02d}"
            far[u] = t0 + 3_600_000 + (i // 2) * 1000
            submit(port, u, far[u], {"url": "http://127.0.0.1:9/x"})
        # 3 called now that succeed, 2 that fail for good (one attempt), a billing task
        for i in range(3):
            submit(port, f"ok-{i}", t0 + 500, callback(server, "/ok"))
        for i in range(2):
            submit(port, f"bad-{i}", t0 + 500, callback(server, "/bad"),
                   retry={"maxAttempts": 1})
        submit(port, "other", t0 + 3_600_000, {"url": "http://127.0.0.1:9/x"}, token=BILLING,
               app="billing")
        want = sorted(far, key=lambda u: (far[u], u))
        # Right after the acknowledgements: every far task, in order, on whole pages
        got, pages = list_all(port, "appId=shop&state=accepted,pendingStore,pendingWheel"
                                    f"&dueFrom={t0 + 60_000}")
        assert got == want and pages == 4, (got, pages)
        # the due-time window is [dueFrom, dueTo)
        got, _ = list_all(port, f"appId=shop&dueFrom={far['far-02']}&dueTo={far['far-06']}")
        assert got == ["far-02", "far-03", "far-04", "far-05"], got
        deadline = time.time() + 30
        while True:
            st = stats(port)
            if st["tasks"].get("succeeded") == 3 and st["tasks"].get("dead") == 2:
                break
            assert time.time() < deadline, st
            time.sleep(0.2)
        assert st["tasks"]["total"] == 28 and st["tasks"].get("pendingStore", 0) + \
            st["tasks"].get("pendingWheel", 0) == 23, st
        assert st["lastHour"] == {"calls": 5, "failures": 2, "deadLetters": 2}, st
        got, _ = list_all(port, "appId=shop&state=dead", limit=1)
        assert got == ["bad-0", "bad-1"], got
        a = req(port, "GET", "/api/tasks?appId=shop&state=succeeded", token=SHOP)
        item = a.json["data"]["tasks"][0]
        assert item["lastAttempt"]["httpStatus"] == 200 and "attempts" not in item, item
        # a line stays small: no callback headers or body, no endpoint answer
        assert set(item["callback"]) == {"url", "method"}, item
        assert "responseBody" not in item["lastAttempt"], item
        assert SECRET_PARAM not in a.body.decode() and SECRET_HEADER not in a.body.decode()
        # tokens: another app's is refused, an inner one reads any app
        for path in ("/api/tasks?appId=shop", "/api/stats?appId=shop"):
            a = req(port, "GET", path, token=BILLING)
            assert a.status == 403 and "appId 'shop'" in a.json["msg"], a
            assert req(port, "GET", path, token=None).status == 401
        assert stats(port, "billing", token=INNER)["tasks"]["total"] == 1
        got, _ = list_all(port, "appId=billing", token=INNER)
        assert got == ["other"], got
        # checked parameters, each naming what is wrong
        for path, word in (("/api/tasks?state=dead", "appId"),
                           ("/api/tasks?appId=shop&state=pending", "state"),
                           ("/api/tasks?appId=shop&limit=0", "limit"),
                           ("/api/tasks?appId=shop&limit=1001", "limit"),
                           ("/api/tasks?appId=shop&dueFrom=soon", "dueFrom"),
                           ("/api/tasks?appId=shop&after=x", "after"),
                           ("/api/tasks?appId=shop&uuid=x", "uuid"),
                           ("/api/tasks?appId=shop&partitions=0", "partitions"),
                           ("/api/stats?appId=shop&state=dead", "state"),
                           ("/api/stats?appId=shop&appId=x", "appId")):
            a = req(port, "GET", path)
            assert a.status == 400 and word in a.json["msg"], (path, a)
        assert req(port, "POST", "/api/tasks", {}).status == 405
        a = req(port, "GET", "/api/tasks?appId=shop&partitions=0,0",
                headers={"Mooncake-Forwarded": "1"})
        assert a.status == 400 and "twice" in a.json["msg"], a
        # mooncakectl reads the same from the changelog (committed once a second)
        time.sleep(2)
        out = subprocess.run([CTL, "-b", BOOTSTRAP, "--prefix", env.prefix, "task", "list",
                              "--app", "shop", "--state", "dead,succeeded", "-J"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        listed = [t["uuid"] for t in json.loads(out.stdout)["tasks"]]
        assert sorted(listed) == ["bad-0", "bad-1", "ok-0", "ok-1", "ok-2"], listed
        out = subprocess.run([CTL, "-b", BOOTSTRAP, "--prefix", env.prefix, "task", "stats",
                              "--app", "shop", "-J"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        ctl_stats = json.loads(out.stdout)
        assert ctl_stats["tasks"]["total"] == 28 and ctl_stats["lastHour"] == st["lastHour"], \
            ctl_stats
        out = subprocess.run([CTL, "-b", BOOTSTRAP, "--prefix", env.prefix, "task", "list",
                              "--app", "shop", "-n", "5"], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0 and "more: --after" in out.stdout, out
        bad = subprocess.run([CTL, "-b", BOOTSTRAP, "--prefix", env.prefix, "task", "list",
                              "--app", "shop", "--state", "nope"], capture_output=True, text=True,
                             timeout=60)
        assert bad.returncode == 2 and "--state 'nope'" in bad.stderr, bad
        assert_no_secret(env, [p])
    finally:
        env.stop_all()
        server.close()


def test_every_answer_matches_the_document():
    check_answers(SEEN, at_least=50)


if __name__ == "__main__":
    run([test_each_state_is_answered,
         test_questions_are_checked_and_tokens_see_their_app_only,
         test_an_acknowledged_write_is_in_the_next_answer_and_pending_means_not_called,
         test_a_write_acknowledged_behind_an_open_transaction_is_in_the_answer,
         test_the_view_survives_kill_9_and_moves_between_instances,
         test_tasks_are_listed_by_due_time_and_counted,
         test_an_engine_without_a_view_needs_no_views_topic,
         test_a_slow_question_does_not_hold_up_submits,
         test_every_answer_matches_the_document])
