"""Kafka targets, late policies and follow-ups on a real broker, behind the
router, wheel, executor and retry.

A Kafka target is a record mooncake delivers to a topic at the task's due
time, produced in the executor's transaction with the task's Result: a
read_committed consumer of the target topic sees each exactly once, never
before its due time, with its key, value and headers as the task named them
(plus mooncake-task and mooncake-due-at), also through kill -9 of the
executor in the middle of a stream. A topic the app is not allowed, or one of
mooncake's own, is dead-lettered by the router; a topic that does not exist
yet is a failed attempt, retried until it does. A late policy decides, at the
moment a call would start, whether a task that late is called (RUN), dropped
(a Result DROPPED, no call) or dead-lettered (DEAD). The follow-ups a task names
(on_success) are submitted once when it succeeds, in the transaction of its
success, due their delay after it; a task that fails submits none.

What is checked is what a user sees: the committed records of the target
topic, results and dead, and the calls that reach a local endpoint."""
import signal
import time
import uuid

from confluent_kafka.admin import AdminClient, NewTopic

from harness import (BOOTSTRAP, CallbackServer, Env, decode, murmur2, now_ms, run, submit_value,
                     task)
from test_store_wheel import (EARLY_TOLERANCE_MS, FAST_FAILOVER, assert_alive, metric,
                              read_settled, send, wait_assigned)

ALLOW_LOOPBACK = {"MOONCAKE_EXECUTOR_ALLOW_CIDRS": "127.0.0.1/32"}
TARGET_PARTITIONS = 4


def create_topic(name, partitions=TARGET_PARTITIONS):
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    for f in admin.create_topics([NewTopic(name, num_partitions=partitions,
                                           replication_factor=1)]).values():
        f.result()


def delivery(app, tid, due, topic, key=b"k", value=b"v", headers=None, **extra):
    """(key, value) of a Submit of a task delivering a record to topic."""
    t = task(app, tid, due, url="", **extra)
    t["kafka_target"] = {"topic": topic, "key": key, "value": value,
                         "headers": headers or {}}
    return f"{app}/{tid}", submit_value(t)


def start(env, targets, **executor_env):
    """router, wheel, executor and retry owning every partition."""
    allow = {"MOONCAKE_TARGET_TOPICS": targets}
    procs = {"router": env.start("router", **allow),
             "wheel": env.start("wheel", instance="w1"),
             "executor": env.start("executor", instance="e1",
                                   **{**ALLOW_LOOPBACK, **allow, **executor_env}),
             "retry": env.start("retry", instance="r1")}
    for role in ("wheel", "executor", "retry"):
        wait_assigned(env, procs[role], env.partitions)
    return procs


def results_by_key(env, timeout=60):
    out = {}
    for m in read_settled(env, "results", timeout=timeout):
        r = decode("Result", m.value())
        out.setdefault(m.key().decode(), []).append(r)
    return out


def dead_by_key(env, timeout=60):
    out = {}
    for m in read_settled(env, "dead", timeout=timeout):
        d = decode("DeadLetter", m.value())
        out.setdefault(m.key().decode() if m.key() else "", []).append(d)
    return out


def wait_for(what, cond, timeout):
    deadline = time.time() + timeout
    while not cond():
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def header_map(m):
    return {k: v for k, v in (m.headers() or [])}


def test_delivered_exactly_once_at_due_time():
    """200 records due over 3 s land once each, not early, on the partition
    murmur2 of their key picks, with their headers; the Results say
    SUCCEEDED; a tombstone and a keyless record too."""
    env = Env()
    target = "kt-" + uuid.uuid4().hex[:8] + ".out"
    create_topic(target)
    try:
        start(env, f"shop={target}")
        base = now_ms() + 2000
        items, want = [], {}
        for i in range(200):
            due = base + (i * 15)
            key = f"order-{i}".encode()
            value = f"expired {i}".encode()
            items.append(delivery("shop", f"t{i}", due, target, key=key, value=value,
                                  headers={"trace": f"tr-{i}"}))
            want[f"shop/t{i}"] = (due, key, value)
        tomb_due = base + 500
        items.append(delivery("shop", "tomb", tomb_due, target, key=b"gone", value=None))
        items.append(delivery("shop", "nokey", tomb_due, target, key=None, value=b"anon"))
        send(env, items)
        wait_for("every Result", lambda: len(results_by_key(env, 30)) >= 202, 60)
        got = read_settled(env, topic=target, partitions=TARGET_PARTITIONS)
        seen = {}
        for m in got:
            h = header_map(m)
            task_key = h["mooncake-task"].decode()
            assert task_key not in seen, f"{task_key} delivered twice"
            seen[task_key] = m
            due = int(h["mooncake-due-at"])
            _, ts = m.timestamp()
            assert ts >= due - EARLY_TOLERANCE_MS, f"{task_key} delivered {due - ts} ms early"
        assert set(seen) == set(want) | {"shop/tomb", "shop/nokey"}, \
            f"missing {sorted(set(want) - set(seen))[:5]}"
        for k, (due, key, value) in want.items():
            m = seen[k]
            assert m.key() == key and m.value() == value, k
            assert header_map(m)["trace"] == f"tr-{k.split('/t')[1]}".encode()
            assert m.partition() == murmur2(key) % TARGET_PARTITIONS, \
                f"{k}: partition {m.partition()}, murmur2 says {murmur2(key) % TARGET_PARTITIONS}"
        assert seen["shop/tomb"].value() is None and seen["shop/tomb"].key() == b"gone"
        assert seen["shop/nokey"].key() is None and seen["shop/nokey"].value() == b"anon"
        res = results_by_key(env)
        for k in seen:
            outcomes = [r["outcome"] for r in res[k]]
            assert outcomes == ["SUCCEEDED"], f"{k}: {outcomes}"
    finally:
        env.stop_all()


def test_kill_executor_mid_stream():
    """kill -9 of the executor while records are being delivered, then a new
    one: every record is in the target topic exactly once (read_committed)."""
    env = Env()
    target = "kt-" + uuid.uuid4().hex[:8] + ".kill"
    create_topic(target)
    try:
        procs = start(env, f"shop={target}", **FAST_FAILOVER)
        base = now_ms() + 1500
        n = 1500
        items = [delivery("shop", f"k{i}", base + i * 4, target, key=f"{i}".encode(),
                          value=b"x" * 50) for i in range(n)]
        send(env, items)
        time.sleep((base - now_ms()) / 1000.0 + 2.0)  # a third of them delivered
        procs["executor"].send_signal(signal.SIGKILL)
        procs["executor"].wait()
        env.start("executor", instance="e1",
                  **{**ALLOW_LOOPBACK, "MOONCAKE_TARGET_TOPICS": f"shop={target}", **FAST_FAILOVER})
        wait_for("every Result", lambda: len(results_by_key(env, 30)) >= n, 90)
        got = read_settled(env, topic=target, partitions=TARGET_PARTITIONS)
        keys = [header_map(m)["mooncake-task"].decode() for m in got]
        dup = {k for k in keys if keys.count(k) > 1}
        assert not dup, f"{len(dup)} delivered twice, e.g. {sorted(dup)[:3]}"
        assert len(keys) == n, f"{n - len(keys)} records missing"
        assert_alive(env, procs["router"], procs["wheel"], procs["retry"])
    finally:
        env.stop_all()


def test_refused_targets_and_missing_topic():
    """A topic the app may not write, and one of mooncake's own, are
    dead-lettered by the router naming kafka_target.topic; a topic that does
    not exist yet fails the attempt, which is retried, and once the topic is
    created the record is delivered once."""
    env = Env()
    target = "kt-" + uuid.uuid4().hex[:8] + ".late"
    try:
        start(env, f"shop={target},shop=kt-other.*")
        due = now_ms() + 300
        retry = {"max_attempts": 20, "initial_backoff_ms": 300, "multiplier": 1.5,
                 "max_backoff_ms": 1000}
        send(env, [
            delivery("shop", "not-allowed", due, "kt-secret"),
            delivery("evil", "wrong-app", due, target),
            delivery("shop", "own", due, env.topic("tasks")),
            delivery("shop", "internal", due, "__consumer_offsets"),
            delivery("shop", "missing", due, target, retry=retry),
        ])
        wait_for("three failed attempts", lambda: sum(
            r["outcome"] == "FAILED_WILL_RETRY"
            for r in results_by_key(env, 30).get("shop/missing", [])) >= 3, 60)
        create_topic(target)
        wait_for("the delivery", lambda: any(
            r["outcome"] == "SUCCEEDED"
            for r in results_by_key(env, 30).get("shop/missing", [])), 60)
        got = read_settled(env, topic=target, partitions=TARGET_PARTITIONS)
        assert [header_map(m)["mooncake-task"] for m in got] == [b"shop/missing"]
        res = results_by_key(env)
        errors = {r["error"] for r in res["shop/missing"] if r["outcome"] == "FAILED_WILL_RETRY"}
        assert any("does not exist" in e for e in errors), errors
        dead = dead_by_key(env)
        for key, needle in (("shop/not-allowed", "not allowed for app 'shop'"),
                            ("evil/wrong-app", "not allowed for app 'evil'"),
                            ("shop/own", "mooncake's own"),
                            ("shop/internal", "mooncake's own")):
            reasons = [d["reason"] for d in dead.get(key, [])]
            assert reasons and "kafka_target.topic" in reasons[0] and needle in reasons[0], \
                f"{key}: {reasons}"
            assert key not in res, f"{key} got a Result: {res[key]}"
    finally:
        env.stop_all()


def test_late_policies():
    """Tasks that can only start 10 s late: DROP is a Result DROPPED and no
    call, DEAD a FAILED_PERMANENTLY Result and a dead letter, RUN (and no
    policy) a call; one within its bound is called. Counted on /metrics."""
    env = Env()
    server = CallbackServer()
    try:
        procs = start(env, "")
        late = now_ms() - 10000
        url = server.url("/hook")
        t = lambda tid, pol: task("shop", tid, late, url=url, late_policy=pol)  # noqa: E731
        items = [
            ("shop/drop", submit_value(t("drop", {"max_late_ms": 5000, "action": "DROP"}))),
            ("shop/dead", submit_value(t("dead", {"max_late_ms": 5000, "action": "DEAD"}))),
            ("shop/run", submit_value(t("run", {"max_late_ms": 5000, "action": "RUN"}))),
            ("shop/none", submit_value(t("none", None))),
            ("shop/within", submit_value(t("within", {"max_late_ms": 60000, "action": "DROP"}))),
        ]
        send(env, items)
        wait_for("five Results", lambda: len(results_by_key(env, 30)) >= 5, 60)
        res = results_by_key(env)
        assert [r["outcome"] for r in res["shop/drop"]] == ["DROPPED"], res["shop/drop"]
        assert "ms late" in res["shop/drop"][0]["error"]
        assert [r["outcome"] for r in res["shop/dead"]] == ["FAILED_PERMANENTLY"]
        for k in ("shop/run", "shop/none", "shop/within"):
            assert [r["outcome"] for r in res[k]] == ["SUCCEEDED"], (k, res[k])
        dead = dead_by_key(env)
        assert list(dead) == ["shop/dead"], list(dead)
        assert "late policy DEAD" in dead["shop/dead"][0]["reason"]
        policy = dead["shop/dead"][0]["task"][1]["late_policy"]  # (record name, value) unions
        assert policy[1]["action"] == "DEAD", policy
        calls = [c for c in server.calls_to("/hook")]
        assert len(calls) == 3, f"{len(calls)} calls"
        ex = procs["executor"]
        assert metric(env, ex, 'mooncake_executor_late_total{action="drop"}') == 1
        assert metric(env, ex, 'mooncake_executor_late_total{action="dead"}') == 1
    finally:
        env.stop_all()
        server.close()


def test_follow_ups():
    """A task naming two follow-ups (an HTTP call 500 ms after, a record to a
    topic under its own id) submits each once when it succeeds, through kill -9
    of the executor while 300 such tasks run; a task that fails for good
    submits none."""
    env = Env()
    server = CallbackServer()
    target = "kt-" + uuid.uuid4().hex[:8] + ".next"
    create_topic(target)
    try:
        procs = start(env, f"shop={target}", **FAST_FAILOVER)
        url = server.url("/parent")

        def parent(tid, due, path="/parent"):
            follow = [
                {"task_id": "", "delay_ms": 500,
                 "callback": {"url": server.url("/child"), "method": "POST",
                              "headers": {"x-parent": tid}, "body": b"", "timeout_ms": 5000}},
                {"task_id": f"{tid}-audit", "delay_ms": 0,
                 "callback": {"url": "", "method": "POST", "headers": {}, "body": b"",
                              "timeout_ms": 0},
                 "kafka_target": {"topic": target, "key": tid.encode(), "value": b"done",
                                  "headers": {}}},
            ]
            t = task("shop", tid, due, url=server.url(path), on_success=follow)
            return f"shop/{tid}", submit_value(t)
        base = now_ms() + 1500
        n = 300
        items = [parent(f"p{i}", base + i * 10) for i in range(n)]
        items.append(parent("fails", base, path="/missing"))
        server.respond = lambda call: (404 if call["path"].startswith("/missing") else 200, {},
                                       b"ok")
        send(env, items)
        time.sleep((base - now_ms()) / 1000.0 + 1.2)
        procs["executor"].send_signal(signal.SIGKILL)
        procs["executor"].wait()
        env.start("executor", instance="e1",
                  **{**ALLOW_LOOPBACK, "MOONCAKE_TARGET_TOPICS": f"shop={target}", **FAST_FAILOVER})
        wait_for("every follow-up's Result", lambda: sum(
            1 for k in results_by_key(env, 30) if k.endswith(".then1") or k.endswith("-audit"))
            >= 2 * n, 90)
        subs = {}
        for m in read_settled(env, "tasks"):
            c = decode("Command", m.value())
            name, body = c["payload"]
            if name.endswith("Submit"):
                subs.setdefault(m.key().decode(), []).append(body["task"])
        res = results_by_key(env)
        for i in range(n):
            for child in (f"shop/p{i}.then1", f"shop/p{i}-audit"):
                assert len(subs.get(child, [])) == 1, f"{child}: {len(subs.get(child, []))} Submits"
            nxt = subs[f"shop/p{i}.then1"][0]
            parent_done = [r for r in res[f"shop/p{i}"] if r["outcome"] == "SUCCEEDED"][0]
            assert ms_of(nxt["due_at"]) == ms_of(parent_done["finished_at"]) + 500
            assert nxt["metadata"]["mooncake.parent"] == f"shop/p{i}"
        assert not any(k.startswith("shop/fails.") or k == "shop/fails-audit" for k in subs)
        children = server.calls_to("/child")
        parents = {c["headers"].get("x-parent") for c in children}
        assert len(parents) == n, f"{n - len(parents)} follow-ups never called"
        got = read_settled(env, topic=target, partitions=TARGET_PARTITIONS)
        keys = sorted(header_map(m)["mooncake-task"].decode() for m in got)
        assert keys == sorted(f"shop/p{i}-audit" for i in range(n)), \
            f"{len(keys)} audit records for {n}"
        assert metric(env, env.procs[-1], "mooncake_executor_follow_ups_total") > 0
    finally:
        env.stop_all()
        server.close()


def ms_of(v):
    return v if isinstance(v, int) else round(v.timestamp() * 1000)


if __name__ == "__main__":
    run([test_delivered_exactly_once_at_due_time, test_kill_executor_mid_stream,
         test_refused_targets_and_missing_topic, test_late_policies, test_follow_ups])
