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

from harness import (BOOTSTRAP, CallbackServer, Env, decode, ms, murmur2, now_ms, run,
                     submit_value, task)
from test_store_wheel import (EARLY_TOLERANCE_MS, FAST_FAILOVER, assert_alive, metric,
                              read_settled, send, wait_assigned)

ALLOW_LOOPBACK = {"MOONCAKE_EXECUTOR_ALLOW_CIDRS": "127.0.0.1/32"}
TARGET_PARTITIONS = 4
# One pipeline serves every test (each with its own keys and topics): starting four
# roles per test would cost more than the tests. Its allow-list names them all.
RUN = uuid.uuid4().hex[:8]
TOPICS = {name: f"kt-{RUN}.{name}" for name in ("out", "kill", "late", "next")}
ALLOW = ",".join([f"shop={t}" for t in TOPICS.values()] + ["shop=kt-other.*"])
SHARED = {}


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


def executor_env():
    return {**ALLOW_LOOPBACK, "MOONCAKE_TARGET_TOPICS": ALLOW, **FAST_FAILOVER}


def pipeline():
    """The shared (env, procs): router, wheel, executor and retry owning every
    partition, started by the first test that asks."""
    if not SHARED:
        env = Env()
        procs = {"router": env.start("router", MOONCAKE_TARGET_TOPICS=ALLOW),
                 "wheel": env.start("wheel", instance="w1"),
                 "executor": env.start("executor", instance="e1", **executor_env()),
                 "retry": env.start("retry", instance="r1")}
        for role in ("wheel", "executor", "retry"):
            wait_assigned(env, procs[role], env.partitions)
        SHARED.update(env=env, procs=procs)
    return SHARED["env"], SHARED["procs"]


def kill_executor():
    """kill -9 of the executor, then a new one under the same id."""
    env, procs = pipeline()
    procs["executor"].send_signal(signal.SIGKILL)
    procs["executor"].wait()
    procs["executor"] = env.start("executor", instance="e1", **executor_env())


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


def count_results(env, prefix):
    """How many keys starting with prefix have a Result."""
    return sum(1 for k in results_by_key(env, 30) if k.startswith(prefix))


def test_delivered_exactly_once_at_due_time():
    """200 records due over 3 s land once each, not early, on the partition
    murmur2 of their key picks, with their headers; the Results say
    SUCCEEDED; a tombstone and a keyless record too."""
    env, _ = pipeline()
    target = TOPICS["out"]
    create_topic(target)
    base = now_ms() + 2000
    items, want = [], {}
    for i in range(200):
        due = base + (i * 15)
        key = f"order-{i}".encode()
        value = f"expired {i}".encode()
        items.append(delivery("shop", f"d{i}", due, target, key=key, value=value,
                              headers={"trace": f"tr-{i}"}))
        want[f"shop/d{i}"] = (due, key, value)
    items.append(delivery("shop", "dtomb", base + 500, target, key=b"gone", value=None))
    items.append(delivery("shop", "dnokey", base + 500, target, key=None, value=b"anon"))
    send(env, items)
    wait_for("every Result", lambda: count_results(env, "shop/d") >= 202, 60)
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
    assert set(seen) == set(want) | {"shop/dtomb", "shop/dnokey"}, \
        f"missing {sorted(set(want) - set(seen))[:5]}"
    for k, (due, key, value) in want.items():
        m = seen[k]
        assert m.key() == key and m.value() == value, k
        assert header_map(m)["trace"] == f"tr-{k.split('/d')[1]}".encode()
        assert m.partition() == murmur2(key) % TARGET_PARTITIONS, \
            f"{k}: partition {m.partition()}, murmur2 says {murmur2(key) % TARGET_PARTITIONS}"
    assert seen["shop/dtomb"].value() is None and seen["shop/dtomb"].key() == b"gone"
    assert seen["shop/dnokey"].key() is None and seen["shop/dnokey"].value() == b"anon"
    res = results_by_key(env)
    for k in seen:
        outcomes = [r["outcome"] for r in res[k]]
        assert outcomes == ["SUCCEEDED"], f"{k}: {outcomes}"


def test_refused_targets_and_missing_topic():
    """A topic the app may not write, and one of mooncake's own, are
    dead-lettered by the router naming kafka_target.topic; a topic that does
    not exist yet fails the attempt, which is retried, and once the topic is
    created the record is delivered once."""
    env, _ = pipeline()
    target = TOPICS["late"]
    due = now_ms() + 300
    retry = {"max_attempts": 20, "initial_backoff_ms": 300, "multiplier": 1.5,
             "max_backoff_ms": 1000}
    send(env, [
        delivery("shop", "r-not-allowed", due, "kt-secret"),
        delivery("evil", "r-wrong-app", due, target),
        delivery("shop", "r-own", due, env.topic("tasks")),
        delivery("shop", "r-internal", due, "__consumer_offsets"),
        delivery("shop", "r-missing", due, target, retry=retry),
    ])
    wait_for("three failed attempts", lambda: sum(
        r["outcome"] == "FAILED_WILL_RETRY"
        for r in results_by_key(env, 30).get("shop/r-missing", [])) >= 3, 60)
    create_topic(target)
    wait_for("the delivery", lambda: any(
        r["outcome"] == "SUCCEEDED"
        for r in results_by_key(env, 30).get("shop/r-missing", [])), 60)
    got = read_settled(env, topic=target, partitions=TARGET_PARTITIONS)
    assert [header_map(m)["mooncake-task"] for m in got] == [b"shop/r-missing"]
    res = results_by_key(env)
    errors = {r["error"] for r in res["shop/r-missing"] if r["outcome"] == "FAILED_WILL_RETRY"}
    assert any("does not exist" in e for e in errors), errors
    dead = dead_by_key(env)
    for key, needle in (("shop/r-not-allowed", "not allowed for app 'shop'"),
                        ("evil/r-wrong-app", "not allowed for app 'evil'"),
                        ("shop/r-own", "mooncake's own"),
                        ("shop/r-internal", "mooncake's own")):
        reasons = [d["reason"] for d in dead.get(key, [])]
        assert reasons and "kafka_target.topic" in reasons[0] and needle in reasons[0], \
            f"{key}: {reasons}"
        assert key not in res, f"{key} got a Result: {res[key]}"


def test_late_policies():
    """Tasks that can only start 10 s late: DROP is a Result DROPPED and no
    call, DEAD a FAILED_PERMANENTLY Result and a dead letter, RUN (and no
    policy) a call; one within its bound is called. Counted on /metrics."""
    env, procs = pipeline()
    server = CallbackServer()
    try:
        ex = procs["executor"]
        before = {a: metric(env, ex, f'mooncake_executor_late_total{{action="{a}"}}') or 0
                  for a in ("drop", "dead")}
        late = now_ms() - 10000
        url = server.url("/hook")
        t = lambda tid, pol: task("shop", tid, late, url=url, late_policy=pol)  # noqa: E731
        send(env, [
            ("shop/l-drop", submit_value(t("l-drop", {"max_late_ms": 5000, "action": "DROP"}))),
            ("shop/l-dead", submit_value(t("l-dead", {"max_late_ms": 5000, "action": "DEAD"}))),
            ("shop/l-run", submit_value(t("l-run", {"max_late_ms": 5000, "action": "RUN"}))),
            ("shop/l-none", submit_value(t("l-none", None))),
            ("shop/l-within", submit_value(t("l-within",
                                               {"max_late_ms": 60000, "action": "DROP"}))),
        ])
        wait_for("five Results", lambda: count_results(env, "shop/l-") >= 5, 60)
        res = results_by_key(env)
        assert [r["outcome"] for r in res["shop/l-drop"]] == ["DROPPED"], res["shop/l-drop"]
        assert "ms late" in res["shop/l-drop"][0]["error"]
        assert [r["outcome"] for r in res["shop/l-dead"]] == ["FAILED_PERMANENTLY"]
        for k in ("shop/l-run", "shop/l-none", "shop/l-within"):
            assert [r["outcome"] for r in res[k]] == ["SUCCEEDED"], (k, res[k])
        dead = {k: v for k, v in dead_by_key(env).items() if k.startswith("shop/l-")}
        assert list(dead) == ["shop/l-dead"], list(dead)
        assert "late policy DEAD" in dead["shop/l-dead"][0]["reason"]
        policy = dead["shop/l-dead"][0]["task"][1]["late_policy"]  # (record name, value) unions
        assert policy[1]["action"] == "DEAD", policy
        assert len(server.calls_to("/hook")) == 3, f"{len(server.calls_to('/hook'))} calls"
        for a in ("drop", "dead"):
            assert metric(env, ex, f'mooncake_executor_late_total{{action="{a}"}}') == \
                before[a] + 1
    finally:
        server.close()


def test_follow_ups():
    """A task naming two follow-ups (an HTTP call 500 ms after, a record to a
    topic under its own id) submits each once when it succeeds, through kill -9
    of the executor while 300 such tasks run; a task that fails for good
    submits none."""
    env, procs = pipeline()
    server = CallbackServer()
    target = TOPICS["next"]
    create_topic(target)
    try:
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
        items.append(parent("pfails", base, path="/missing"))
        server.respond = lambda call: (404 if call["path"].startswith("/missing") else 200, {},
                                       b"ok")
        send(env, items)
        time.sleep((base - now_ms()) / 1000.0 + 1.2)
        kill_executor()
        wait_for("every follow-up's Result", lambda: sum(
            1 for k in results_by_key(env, 30)
            if k.startswith("shop/p") and (k.endswith(".then1") or k.endswith("-audit")))
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
            assert ms(nxt["due_at"]) == ms(parent_done["finished_at"]) + 500
            assert nxt["metadata"]["mooncake.parent"] == f"shop/p{i}"
        assert not any(k.startswith("shop/pfails.") or k == "shop/pfails-audit" for k in subs)
        parents = {c["headers"].get("x-parent") for c in server.calls_to("/child")}
        assert len(parents) == n, f"{n - len(parents)} follow-ups never called"
        got = read_settled(env, topic=target, partitions=TARGET_PARTITIONS)
        keys = sorted(header_map(m)["mooncake-task"].decode() for m in got)
        assert keys == sorted(f"shop/p{i}-audit" for i in range(n)), \
            f"{len(keys)} audit records for {n}"
        assert metric(env, procs["executor"], "mooncake_executor_follow_ups_total") > 0
    finally:
        server.close()


def test_kill_executor_mid_stream():
    """kill -9 of the executor while records are being delivered, then a new
    one: every record is in the target topic exactly once (read_committed)."""
    env, procs = pipeline()
    target = TOPICS["kill"]
    create_topic(target)
    base = now_ms() + 1500
    n = 1500
    send(env, [delivery("shop", f"k{i}", base + i * 4, target, key=f"{i}".encode(),
                        value=b"x" * 50) for i in range(n)])
    time.sleep((base - now_ms()) / 1000.0 + 2.0)  # a third of them delivered
    kill_executor()
    wait_for("every Result", lambda: count_results(env, "shop/k") >= n, 90)
    got = read_settled(env, topic=target, partitions=TARGET_PARTITIONS)
    keys = [header_map(m)["mooncake-task"].decode() for m in got]
    dup = {k for k in keys if keys.count(k) > 1}
    assert not dup, f"{len(dup)} delivered twice, e.g. {sorted(dup)[:3]}"
    assert len(keys) == n, f"{n - len(keys)} records missing"
    assert_alive(env, procs["router"], procs["wheel"], procs["retry"])


def stop_pipeline():
    if SHARED:
        SHARED["env"].stop_all()


if __name__ == "__main__":
    try:
        run([test_delivered_exactly_once_at_due_time, test_refused_targets_and_missing_topic,
             test_late_policies, test_follow_ups, test_kill_executor_mid_stream])
    finally:
        stop_pipeline()
