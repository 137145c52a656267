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


def test_every_answer_matches_the_document():
    check_answers(SEEN, at_least=50)


if __name__ == "__main__":
    run([test_each_state_is_answered,
         test_questions_are_checked_and_tokens_see_their_app_only,
         test_an_acknowledged_write_is_in_the_next_answer_and_pending_means_not_called,
         test_a_write_acknowledged_behind_an_open_transaction_is_in_the_answer,
         test_the_view_survives_kill_9_and_moves_between_instances,
         test_an_engine_without_a_view_needs_no_views_topic,
         test_a_slow_question_does_not_hold_up_submits,
         test_every_answer_matches_the_document])
