"""The client contract, run: the example clients in tools/clients/ (Python with
confluent-kafka + fastavro, Java with kafka-clients + Avro classes generated from
schemas/Command.avsc) submit and cancel tasks straight to Kafka against a
running `mooncake all`; their callbacks arrive on time, cancelled ones never,
and a cancel from one client stops a task submitted by another (the gateway
included), which holds only if every client puts a key on the same partition.
The Confluent framing and bad records are checked too. The Java client is
built with Maven once per build directory (keyed on its sources)."""
import hashlib
import os
import subprocess
import sys
import time

from harness import (BOOTSTRAP, SOURCE_DIR, CallbackServer, Env, decode, home_partition,
                     now_ms, run)
from test_executor import wait_until

sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "clients", "python"))
import mooncake_client  # noqa: E402

TOKEN = "clients-test-token-0123456789"
JAVA_DIR = os.path.join(SOURCE_DIR, "tools", "clients", "java")
# Built once per machine and source state, like the Kafka jars tools/setup caches.
CACHE = os.path.join(os.environ.get("MOONCAKE_CACHE") or
                     os.path.join(os.path.expanduser("~"), ".cache", "mooncake"), "java-client")


def java_jar():
    """Builds the Java client (once per source state) and returns its jar. The
    jar is written elsewhere first and renamed, so a build killed midway never
    leaves a jar behind that looks finished."""
    h = hashlib.sha256()
    for root, _, files in sorted(os.walk(JAVA_DIR)):
        if "target" in root:
            continue
        for f in sorted(files):
            if f.endswith((".java", ".xml")):
                with open(os.path.join(root, f), "rb") as fh:
                    h.update(f.encode() + fh.read())
    with open(os.path.join(SOURCE_DIR, "schemas", "Command.avsc"), "rb") as fh:
        h.update(fh.read())
    out = os.path.join(CACHE, h.hexdigest()[:16])
    jar = os.path.join(out, "mooncake-client.jar")
    if os.path.exists(jar):
        return jar
    t0 = time.time()
    tmp = f"{out}.tmp{os.getpid()}"
    cmd = ["mvn", "-q", "-B", "-f", os.path.join(JAVA_DIR, "pom.xml"), "package",
           f"-Dmooncake.build.dir={tmp}"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"maven build failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    os.makedirs(out, exist_ok=True)
    os.replace(os.path.join(tmp, "mooncake-client.jar"), jar)
    subprocess.run(["rm", "-rf", tmp])
    print(f"     (built the Java client in {time.time() - t0:.0f}s)", flush=True)
    return jar


def java(env, *args):
    p = subprocess.run(["java", "-jar", java_jar(), *args, "-b", BOOTSTRAP,
                        "--topic-prefix", env.prefix], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, (args, p.stdout, p.stderr)
    return p.stdout


def start_all(env, *extra):
    p = env.start("all", "--app-tokens", f"shop={TOKEN}", "--executor-allow-cidrs",
                  "127.0.0.1/32", *extra, wait_ready=False)
    env.wait_ready(p, timeout=90)
    return p


def settle_and_check(server, due, expected, cancelled, window_ms=2000):
    """Every expected path called exactly once, not before due and within
    window_ms after; no cancelled path ever called."""
    wait_until("the callbacks", lambda: all(server.calls_to(p) for p in expected),
               timeout=30, interval=0.05)
    time.sleep(1.5)  # a duplicate, or a cancelled task, would show by now
    for path in expected:
        calls = server.calls_to(path)
        assert len(calls) == 1, f"{path}: {len(calls)} calls"
        late = calls[0]["at"] - due[path]
        assert -5 <= late <= window_ms, f"{path}: called {late:.0f} ms from due"
    for path in cancelled:
        assert server.calls_to(path) == [], f"{path}: a cancelled task was called"


def test_python_client_submits_and_cancels():
    env = Env(partitions=6)
    server = CallbackServer()
    client = mooncake_client.Client(BOOTSTRAP, env.prefix)
    try:
        start_all(env)
        due, expected, cancelled = {}, [], []
        t0 = now_ms() + 1500
        for i in range(6):
            path = f"/py/{i}"
            t = mooncake_client.task("shop", server.url(path), t0 + 100 * i, task_id=f"py-{i}",
                                     method="PUT", headers={"X-Order": str(i)},
                                     body=f"order {i}")
            key, part, _ = client.submit(t)
            assert part == home_partition(key, 6), (key, part)
            due[path] = t["due_at"]
            (cancelled if i % 3 == 2 else expected).append(path)
        for path in cancelled:
            client.cancel("shop", "py-" + path.rsplit("/", 1)[1])
        settle_and_check(server, due, expected, cancelled)
        c = server.calls_to("/py/1")[0]
        assert c["method"] == "PUT" and c["body"] == b"order 1" and \
            c["headers"].get("x-order") == "1", c
    finally:
        client.close()
        server.close()
        env.stop_all()


def test_java_client_submits_and_cancels():
    jar = java_jar()  # built before the clock starts
    assert os.path.exists(jar)
    env = Env(partitions=6)
    server = CallbackServer()
    try:
        start_all(env)
        due = now_ms() + 4000  # each java run starts a JVM
        out = java(env, "submit", "--app", "shop", "--task-id", "java-1", "--url",
                   server.url("/java/1"), "--method", "patch", "--due-at-ms", str(due),
                   "--body", "from java", "--header", "X-Lang: java")
        assert "partition=%d" % home_partition("shop/java-1", 6) in out, out
        java(env, "submit", "--app", "shop", "--task-id", "java-2", "--url",
             server.url("/java/2"), "--due-at-ms", str(due))
        java(env, "cancel", "--app", "shop", "--task-id", "java-2")
        settle_and_check(server, {"/java/1": due}, ["/java/1"], ["/java/2"])
        c = server.calls_to("/java/1")[0]
        assert c["method"] == "PATCH" and c["body"] == b"from java" and \
            c["headers"].get("x-lang") == "java", c
        # a bad flag: exit 2 and a line saying what to fix
        p = subprocess.run(["java", "-jar", jar, "submit", "--app", "shop"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 2 and "--url" in p.stderr, (p.returncode, p.stderr)
    finally:
        server.close()
        env.stop_all()


def test_a_cancel_from_one_client_stops_a_task_from_another():
    """Tasks submitted through the gateway and by the Python client, cancelled
    by the Java client, on 12 partitions: none is called, and the Java
    client's cancels land on the same partitions as the submits. With two
    partitioners in play (CRC32 and murmur2) most of these keys would part."""
    import json
    import urllib.request

    java_jar()  # built before the clock starts
    env = Env(partitions=12)
    server = CallbackServer()
    client = mooncake_client.Client(BOOTSTRAP, env.prefix)
    try:
        p = start_all(env)
        due = now_ms() + 6000  # room for a JVM start
        ids = []
        for i in range(6):
            body = json.dumps({"appId": "shop", "uuid": f"gw-{i}", "expireTime": due,
                               "callback": {"url": server.url(f"/x/gw-{i}")}}).encode()
            r = urllib.request.urlopen(urllib.request.Request(
                f"http://127.0.0.1:{p.http_port}/submit", body, method="POST",
                headers={"Authorization": "Bearer " + TOKEN,
                         "Content-Type": "application/json"}), timeout=10)
            assert r.status == 200
            ids.append(f"gw-{i}")
        for i in range(6):
            client.submit(mooncake_client.task("shop", server.url(f"/x/py-{i}"), due,
                                               task_id=f"py-{i}"))
            ids.append(f"py-{i}")
        # and one task nobody cancels, to prove the pipeline was running
        client.submit(mooncake_client.task("shop", server.url("/x/kept"), due,
                                           task_id="kept"))
        out = java(env, "cancel", "--app", "shop", *[a for i in ids for a in ("--task-id", i)])
        assert len(out.splitlines()) == len(ids), out
        assert now_ms() < due - 500, "the cancels took too long to send; raise the due time"
        where = {}
        for m in env.read_all("tasks", expect=2 * len(ids) + 1):
            payload = decode("Command", m.value())["payload"]
            where.setdefault(m.key().decode(), set()).add((payload[0], m.partition()))
        for i in ids:
            parts = {part for _, part in where[f"shop/{i}"]}
            kinds = {kind for kind, _ in where[f"shop/{i}"]}
            assert kinds == {"mooncake.Submit", "mooncake.Cancel"}, where[f"shop/{i}"]
            assert parts == {home_partition(f"shop/{i}", 12)}, (i, where[f"shop/{i}"])
        wait_until("the kept task", lambda: server.calls_to("/x/kept"),
                   timeout=due / 1000 - time.time() + 15, interval=0.05)
        time.sleep(1.0)
        called = sorted(c["path"] for c in server.snapshot() if c["path"] != "/x/kept")
        assert called == [], f"cancelled tasks were called: {called}"
    finally:
        client.close()
        server.close()
        env.stop_all()


def test_confluent_framing_and_bad_records_from_a_client():
    env = Env(partitions=3)
    server = CallbackServer()
    framed = mooncake_client.Client(BOOTSTRAP, env.prefix, confluent_id=7)
    plain = mooncake_client.Client(BOOTSTRAP, env.prefix)
    try:
        start_all(env, "--confluent-schema-ids", "7")
        due = now_ms() + 1000
        framed.submit(mooncake_client.task("shop", server.url("/cf"), due, task_id="cf"))
        # id 8 is not configured: dead-lettered, with the id in the reason
        other = mooncake_client.Client(BOOTSTRAP, env.prefix, confluent_id=8)
        other.submit(mooncake_client.task("shop", server.url("/cf8"), due, task_id="cf8"))
        other.close()
        # a key that is not app_id/task_id: dead-lettered, naming the key
        t = mooncake_client.task("shop", server.url("/badkey"), due, task_id="real")
        plain.send("shop/other", plain.codec.encode(("mooncake.Submit", {"task": t})))
        settle_and_check(server, {"/cf": due}, ["/cf"], ["/cf8", "/badkey"])
        dead = {m.key().decode(): decode("DeadLetter", m.value())["reason"]
                for m in env.read_all("dead", expect=2)}
        assert sorted(dead) == ["shop/cf8", "shop/other"], dead
        assert "8" in dead["shop/cf8"] and "schema id" in dead["shop/cf8"], dead
        assert "shop/other" in dead["shop/other"] and "app_id/task_id" in dead["shop/other"], \
            dead
    finally:
        framed.close()
        plain.close()
        server.close()
        env.stop_all()


def test_python_client_cli():
    """The example as a program: prints where the record went, exits 2 with
    a line for a bad flag."""
    env = Env(partitions=3)
    script = os.path.join(SOURCE_DIR, "tools", "clients", "python", "mooncake_client.py")
    try:
        p = subprocess.run([sys.executable, script, "submit", "-b", BOOTSTRAP, "--topic-prefix",
                            env.prefix, "--app", "shop", "--task-id", "cli", "--url",
                            "http://example.com/x", "--delay-ms", "60000"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        assert p.stdout.startswith("submit shop/cli partition=%d offset=" %
                                   home_partition("shop/cli", 3)), p.stdout
        p = subprocess.run([sys.executable, script, "submit", "--app", "shop/x", "--url", "u",
                            "--delay-ms", "1"], capture_output=True, text=True, timeout=60)
        assert p.returncode == 2 and "--app" in p.stderr, (p.returncode, p.stderr)
    finally:
        env.stop_all()


if __name__ == "__main__":
    run([
        test_python_client_cli,
        test_python_client_submits_and_cancels,
        test_java_client_submits_and_cancels,
        test_a_cancel_from_one_client_stops_a_task_from_another,
        test_confluent_framing_and_bad_records_from_a_client,
    ])
