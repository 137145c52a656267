"""Router on a real broker: routing of near / far / cancel / invalid commands,
poison records not blocking a partition, and exactly-once routing when the
router is killed mid-transaction or fenced by a second instance."""
import os
import signal
import subprocess
import threading
import time


from confluent_kafka import KafkaException, Producer

from harness import (BOOTSTRAP, Env, MOONCAKE_BIN, cancel_value, decode, home_partition, ms,
                     now_ms, run, submit_value, task)

HORIZON_MS = 60000


def produce_tracked(env, items):
    """Produces (key, value) pairs; returns {key: (partition, offset)}."""
    where = {}

    def delivered(err, msg):
        assert err is None, err
        where[msg.key().decode() if msg.key() else None] = (msg.partition(), msg.offset())

    for key, value in items:
        env.producer.produce(env.topic("tasks"), key=key, value=value, on_delivery=delivered)
    env.flush()
    return where


def test_routes_near_far_cancel_and_invalid():
    env = Env()
    try:
        env.start("router")
        now = now_ms()
        garbage = b"definitely not avro"
        truncated = submit_value(task("shop", "trunc", now + 1000))[:25]
        unknown_fp = b"\xc3\x01" + b"\x11" * 8 + submit_value(task("shop", "x", now))[10:]
        items = [
            ("shop/near", submit_value(task("shop", "near", now + 5000))),
            ("shop/far", submit_value(task("shop", "far", now + 3600_000))),
            ("shop/gone", cancel_value("shop", "gone")),
            ("shop/garbage", garbage),
            ("shop/trunc", truncated),
            ("shop/unknown", unknown_fp),
            ("shop/nourl", submit_value(task("shop", "nourl", now, url=""))),
            ("shop/ftp", submit_value(task("shop", "ftp", now, url="ftp://example.com/x"))),
            ("shop/secs", submit_value(task("shop", "secs", now // 1000))),
            ("shop/method", submit_value(task("shop", "method", now, method="FETCH"))),
            ("shop/later", submit_value(task("shop", "later", now + 20 * 365 * 86400_000))),
            ("shop/other", submit_value(task("shop", "mismatch", now))),
            ("shop/empty", None),
        ]
        where = produce_tracked(env, items)

        wheel = env.read_all("wheel", expect=3)
        dead = env.read_all("dead", expect=10)

        by_key = {m.key().decode(): m for m in wheel}
        assert sorted(by_key) == ["shop/far", "shop/gone", "shop/near"], sorted(by_key)
        route = {k: dict(m.headers() or []).get("mooncake-route") for k, m in by_key.items()}
        assert route == {"shop/far": b"store", "shop/gone": None, "shop/near": None}, route
        near = decode("WheelEntry", by_key["shop/near"].value())
        assert near["version"] == where["shop/near"][1], (near["version"], where["shop/near"])
        assert by_key["shop/near"].partition() == where["shop/near"][0]
        assert near["payload"][1]["task"]["callback"]["body"] == b'{"order": 42}'
        gone = decode("WheelEntry", by_key["shop/gone"].value())
        assert gone["version"] == where["shop/gone"][1]
        assert gone["payload"][1]["task_id"] == "gone"

        far = decode("WheelEntry", by_key["shop/far"].value())
        assert far["version"] == where["shop/far"][1]
        assert ms(far["payload"][1]["task"]["due_at"]) > now + HORIZON_MS
        assert by_key["shop/far"].partition() == where["shop/far"][0]
        assert env.read_all("store", idle=0.5) == [], "only the store writes its changelog"

        reasons = {}
        for m in dead:
            d = decode("DeadLetter", m.value())
            reasons[m.key().decode()] = d
            assert d["source_topic"] == env.topic("tasks")
            k = m.key().decode()
            assert (d["source_partition"], d["source_offset"]) == where[k], (k, d)
        expect = {
            "shop/garbage": "undecodable",
            "shop/trunc": "undecodable",
            "shop/unknown": "undecodable",
            "shop/nourl": "callback.url is empty",
            "shop/ftp": "not http://, https:// or group://",
            "shop/secs": "before 2000-01-01",
            "shop/method": "callback.method",
            "shop/later": "in the future",
            "shop/other": "is not app_id/task_id",
            "shop/empty": "empty value",
        }
        assert sorted(reasons) == sorted(expect), sorted(reasons)
        for k, needle in expect.items():
            assert needle in reasons[k]["reason"], (k, reasons[k]["reason"])
        assert reasons["shop/garbage"]["raw"] == garbage, "dead letter must keep the raw bytes"
        assert reasons["shop/nourl"]["task"][1]["task_id"] == "nourl"  # (name, task)
        metrics = env.metrics(env.procs[0])
        assert 'mooncake_router_routed_total{destination="dead"} 10' in metrics, metrics
        assert "mooncake_transactions_committed_total" in metrics
    finally:
        env.stop_all()


def test_poison_records_do_not_block_a_partition():
    env = Env(partitions=1)
    try:
        env.start("router")
        now = now_ms()
        items = []
        for i in range(200):
            if i % 2:
                items.append((f"a/{i}", os.urandom(i % 50)))  # includes empty values
            else:
                items.append((f"a/{i}", submit_value(task("a", str(i), now + 1000))))
        produce_tracked(env, items)
        wheel = env.read_all("wheel", expect=100)
        dead = env.read_all("dead", expect=100)
        assert len(wheel) == 100, len(wheel)
        assert len(dead) == 100, len(dead)
        versions = [decode("WheelEntry", m.value())["version"] for m in wheel]
        assert versions == sorted(versions), "routing must keep partition order"
        assert env.procs[0].poll() is None, "router must survive poison records"
    finally:
        env.stop_all()


def test_output_kafka_refuses_is_dead_lettered_not_retried_forever():
    # wheel accepts at most 3000-byte records; tasks takes the default 1 MB.
    env = Env(partitions=1, topic_config={"wheel": {"max.message.bytes": "3000"}})
    try:
        p = env.start("router")
        now = now_ms()
        big = task("a", "big", now + 1000)
        big["callback"]["body"] = b"x" * 5000
        items = [("a/before", submit_value(task("a", "before", now + 1000))),
                 ("a/big", submit_value(big)),
                 ("a/after", submit_value(task("a", "after", now + 1000)))]
        where = produce_tracked(env, items)
        wheel = env.read_all("wheel", expect=3)
        dead = env.read_all("dead", expect=1)
        assert sorted(m.key().decode() for m in wheel) == ["a/after", "a/before", "a/big"], \
            [m.key() for m in wheel]
        # The refused Submit leaves a Cancel of its version: older versions of
        # its key stop, as the client's newer command says (README, Semantics).
        big_entry = decode("WheelEntry", [m for m in wheel if m.key() == b"a/big"][0].value())
        assert big_entry["payload"][0] == "mooncake.Cancel", big_entry
        assert big_entry["version"] == where["a/big"][1], (big_entry, where["a/big"])
        assert len(dead) == 1, len(dead)
        d = decode("DeadLetter", dead[0].value())
        assert "too large" in d["reason"].lower(), d["reason"]
        assert (d["source_partition"], d["source_offset"]) == where["a/big"], d
        assert d["raw"] == items[1][1], "the dead letter keeps the original record"
        metrics = env.metrics(p)
        aborted = [line for line in metrics.splitlines()
                   if line.startswith("mooncake_transactions_aborted_total")]
        assert aborted and float(aborted[0].split()[-1]) >= 1, aborted
        assert p.poll() is None, "the router must keep running"
    finally:
        env.stop_all()


def check_exactly_once(env, where, n):
    """Every input offset appears exactly once in wheel."""
    # Keys "<prefix>/<i>" with i % 3 != 0 are near, the rest far (routed to
    # the store through wheel); see produce_many.
    out = env.read_all("wheel", expect=n, timeout=120)
    seen = {}
    for m in out:
        far = dict(m.headers() or []).get("mooncake-route") == b"store"
        assert far == (int(m.key().decode().split("/")[1]) % 3 == 0), m.key()
        v = decode("WheelEntry", m.value())["version"]
        k = (m.partition(), v)
        seen[k] = seen.get(k, 0) + 1
    dups = {k: c for k, c in seen.items() if c > 1}
    assert not dups, f"{len(dups)} inputs routed more than once, e.g. {list(dups.items())[:5]}"
    expected = set(where.values())
    missing = expected - set(seen)
    assert not missing, f"{len(missing)} of {n} inputs never routed, e.g. {sorted(missing)[:5]}"
    assert len(seen) == n, (len(seen), n)


def produce_many(env, n, key_prefix="k"):
    now = now_ms()
    items = []
    for i in range(n):
        # two thirds near, one third far; the near ones due well after any commit
        # interval the tests set (3 s), so the router does not commit them at once
        # (it does what is due within two intervals) and a kill finds them in an
        # open transaction
        due = now + (40_000 if i % 3 else 3600_000)
        items.append((f"{key_prefix}/{i}", submit_value(task(key_prefix, str(i), due))))
    return produce_tracked(env, items)


def wait_for_metric(env, p, needle_prefix, at_least, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            for line in env.metrics(p).splitlines():
                if line.startswith(needle_prefix) and float(line.split()[-1]) >= at_least:
                    return
        except Exception:
            pass
        time.sleep(0.05)
    raise AssertionError(f"{needle_prefix} never reached {at_least}")


def test_kill_9_mid_stream_routes_each_input_exactly_once():
    env = Env()
    try:
        n = 30000
        where = produce_many(env, n)
        # Round 1: kill while it commits every 2000 records (partial progress
        # committed, one transaction open). linger.ms=0 makes records leave at
        # once, so what a kill strands is on the broker, not in our memory.
        p = env.start("router", instance="k", MOONCAKE_COMMIT_MAX_RECORDS=2000,
                      MOONCAKE_KAFKA_LINGER_MS=0)
        wait_for_metric(env, p, "mooncake_transactions_committed_total", 3)
        p.send_signal(signal.SIGKILL)
        p.wait()
        # Rounds 2 and 3: a 3 s transaction, killed 1 s after the partitions
        # arrive: everything consumed in the round is in an open transaction.
        for _ in range(2):
            p = env.start("router", instance="k", MOONCAKE_COMMIT_INTERVAL_MS=3000,
                          MOONCAKE_COMMIT_MAX_RECORDS=1000000, MOONCAKE_KAFKA_LINGER_MS=0)
            wait_for_metric(env, p, "mooncake_assigned_partitions", 1)
            time.sleep(1.0)
            p.send_signal(signal.SIGKILL)
            p.wait()
        env.start("router", instance="k")
        check_exactly_once(env, where, n)
        # The kills must have hit open transactions, or this test proves
        # nothing: their records are visible to read_uncommitted only.
        uncommitted = len(env.read_all("wheel", committed_only=False, idle=2))
        assert uncommitted > n, f"no aborted writes seen ({uncommitted} records for {n} inputs)"
        print(f"     kill -9 x3: {uncommitted - n} aborted writes hidden from read_committed")
    finally:
        env.stop_all()


def test_fenced_instance_exits_and_the_new_one_finishes():
    env = Env()
    try:
        n = 20000
        where = produce_many(env, n, key_prefix="f")
        a = env.start("router", instance="same", MOONCAKE_COMMIT_MAX_RECORDS=200)
        wait_for_metric(env, a, "mooncake_transactions_committed_total", 3)
        # Same transactional.id: b's init_transactions fences a's producer.
        b = env.start("router", instance="same", wait_ready=False)
        rc = a.wait(60)
        assert rc == 1, f"the fenced router should exit 1 (fatal), got {rc}"
        assert "fatal" in env.log(a, tail=0), env.log(a)
        env.wait_ready(b)
        check_exactly_once(env, where, n)
    finally:
        env.stop_all()


def test_a_predecessors_open_transaction_on_either_id_ends_at_start():
    """Promise (README, `transactional.id`): a restarted instance ends what its
    predecessor left open at once, on each of the runner's two transactional
    ids (<id> and <id>~1, which take turns), and fences it. A zombie holds a
    transaction open on one id over every partition of `wheel` (timeout 60 s,
    so only a fence ends it soon); the router then starts under that instance
    id: what it routes must be visible to read_committed readers within 20 s,
    the zombie's record never, and the zombie's commit must fail."""
    for suffix in ("", "~1"):
        env = Env()
        try:
            zombie = Producer({"bootstrap.servers": BOOTSTRAP,
                               "transactional.id": env.topic(f"router-z{suffix}"),
                               "transaction.timeout.ms": 60000})
            zombie.init_transactions(30)
            zombie.begin_transaction()
            for part in range(env.partitions):
                zombie.produce(env.topic("wheel"), key=b"zombie", value=b"left open",
                               partition=part)
            assert zombie.flush(30) == 0
            env.start("router", instance="z")
            n = 30
            now = now_ms()
            produce_tracked(env, [(f"shop/open{i}", submit_value(task("shop", f"open{i}",
                                                                        now + 5000)))
                                  for i in range(n)])
            t0 = time.time()
            wheel = env.read_all("wheel", expect=n, timeout=20)
            keys = [m.key() for m in wheel]
            assert b"zombie" not in keys, f"id router-z{suffix}: the zombie's record is visible"
            assert len(wheel) == n, (
                f"id router-z{suffix}: {len(wheel)} of {n} routed commands visible after "
                f"{time.time() - t0:.0f} s: the predecessor's transaction still holds readers")
            try:
                zombie.commit_transaction(10)
                raise AssertionError(f"id router-z{suffix}: the zombie committed after the start")
            except KafkaException:
                pass
            print(f"     id router-z{suffix}: {n} commands visible {time.time() - t0:.1f} s "
                  f"after they were produced; the zombie is fenced")
        finally:
            env.stop_all()


def test_sigterm_commits_and_restart_does_not_reroute():
    env = Env()
    try:
        n = 3000
        where = produce_many(env, n, key_prefix="s")
        p = env.start("router", instance="t")
        check_exactly_once(env, where, n)
        p.send_signal(signal.SIGTERM)
        assert p.wait(30) == 0, env.log(p)
        assert "stopped" in env.log(p)
        env.start("router", instance="t")
        time.sleep(3)
        check_exactly_once(env, where, n)
    finally:
        env.stop_all()


def test_second_instance_splits_partitions_and_revoke_commits():
    env = Env(partitions=4)
    try:
        where = produce_many(env, 10000, key_prefix="r0")
        a = env.start("router", instance="a", MOONCAKE_COMMIT_MAX_RECORDS=200)
        wait_for_metric(env, a, "mooncake_transactions_committed_total", 3)
        # b joins while input keeps arriving: a's partitions are revoked with
        # a transaction open (a commits it), the group splits them, and the
        # two finish the work between them.
        more = {}
        feeder = threading.Thread(target=lambda: more.update(
            (k, v) for i in range(1, 6)
            for k, v in produce_many(env, 2000, key_prefix=f"r{i}").items()))
        feeder.start()
        b = env.start("router", instance="b", MOONCAKE_COMMIT_MAX_RECORDS=200)
        feeder.join()
        where.update(more)
        check_exactly_once(env, where, len(where))
        for p in (a, b):
            assigned = [line for line in env.metrics(p).splitlines()
                        if line.startswith("mooncake_assigned_partitions")]
            assert assigned and float(assigned[0].split()[-1]) == 2, (assigned, env.log(p))
        assert "revoked" in env.log(a), env.log(a)
    finally:
        env.stop_all()


def test_confluent_framing_with_a_configured_schema_id():
    env = Env(partitions=1)
    try:
        env.start("router", MOONCAKE_CONFLUENT_SCHEMA_IDS="41,42")
        body = submit_value(task("c", "ok", now_ms() + 1000))[10:]  # the Avro body alone
        items = [("c/ok", b"\x00\x00\x00\x00\x2a" + body),     # id 42: ours
                 ("c/other", b"\x00\x00\x00\x00\x07" + body)]  # id 7: someone else's
        produce_tracked(env, items)
        wheel = env.read_all("wheel", expect=1)
        dead = env.read_all("dead", expect=1)
        assert [m.key() for m in wheel] == [b"c/ok"], [m.key() for m in wheel]
        assert [m.key() for m in dead] == [b"c/other"], [m.key() for m in dead]
        assert decode("WheelEntry", wheel[0].value())["payload"][1]["task"]["task_id"] == "ok"
        reason = decode("DeadLetter", dead[0].value())["reason"]
        assert "7" in reason, reason
    finally:
        env.stop_all()


def test_commands_written_with_another_partitioner_go_home():
    """A client on librdkafka's default partitioner (CRC32) puts many keys on
    other partitions than murmur2 (the Java client's, the gateway's) does.
    The router moves each such command to its key's home partition of
    `tasks` before routing it, so a Cancel written by one client meets the
    Submit written by the other, and every version of a key is an offset
    in the same partition."""
    env = Env(partitions=6)
    crc = Producer({"bootstrap.servers": BOOTSTRAP, "partitioner": "consistent",
                    "enable.idempotence": True})
    try:
        router = env.start("router")
        now = now_ms()
        keys = [f"shop/k{i}" for i in range(40)]
        placed = {}

        def delivered(err, msg):
            assert err is None, err
            placed[msg.key().decode()] = msg.partition()

        for k in keys:
            crc.produce(env.topic("tasks"), key=k, value=submit_value(task("shop", k[5:],
                        now + 5000)), on_delivery=delivered)
        assert crc.flush(30) == 0
        away = [k for k in keys if placed[k] != home_partition(k, 6)]
        assert len(away) >= 20, f"only {len(away)} of 40 keys differ between CRC32 and murmur2"
        # Cancels for half of the keys, from a murmur2 client (the harness's).
        cancelled = keys[::2]
        for k in cancelled:
            env.produce("tasks", k, cancel_value("shop", k[5:]))
        env.flush()

        wheel = env.read_all("wheel", expect=len(keys) + len(cancelled))
        tasks = env.read_all("tasks", expect=len(keys) + len(cancelled) + len(away))
        assert len(wheel) == len(keys) + len(cancelled), len(wheel)
        home_offsets = {}
        for m in tasks:
            k = m.key().decode()
            if m.partition() == home_partition(k, 6):
                home_offsets.setdefault(k, set()).add(m.offset())
        for m in wheel:
            k = m.key().decode()
            assert m.partition() == home_partition(k, 6), (k, m.partition())
            version = decode("WheelEntry", m.value())["version"]
            assert version in home_offsets[k], (k, version, home_offsets[k])
        # The moved copies are the commands as written, byte for byte.
        moved = [m for m in tasks if placed[m.key().decode()] != m.partition()
                 and m.value()[:2] == b"\xc3\x01"
                 and decode("Command", m.value())["payload"][0] == "mooncake.Submit"]
        assert sorted(m.key().decode() for m in moved) == sorted(away)
        rehomed = [l for l in env.metrics(router).splitlines()
                   if l.startswith('mooncake_router_routed_total{destination="rehomed"}')]
        assert rehomed and float(rehomed[0].split()[-1]) == len(away), rehomed
        assert "wrong partition of tasks" in env.log(router, tail=0)
    finally:
        env.stop_all()


def test_commands_written_with_the_previous_and_next_schema_versions():
    """Schema evolution. Clients that still write the previous Command
    (before Task gained retry, attempt and metadata) and clients already on
    a next one (new fields with defaults, the union listed the other way)
    keep working once the router is told their schemas: records are read
    through Avro schema resolution, missing fields take their defaults, and
    unknown fields are dropped. The records here are written by fastavro,
    not by our codec, and framed with fastavro's fingerprints."""
    import io
    import json
    import tempfile

    import fastavro
    from fastavro.schema import fingerprint, parse_schema, to_parsing_canonical_form

    import command_versions

    tmp = tempfile.mkdtemp(prefix="mooncake-versions-")
    files, parsed, headers = {}, {}, {}
    for name, schema in (("previous", command_versions.previous()),
                         ("next", command_versions.next_version())):
        files[name] = os.path.join(tmp, f"Command-{name}.avsc")
        with open(files[name], "w") as f:
            json.dump(schema, f)
        parsed[name] = parse_schema(schema)
        pcf = to_parsing_canonical_form(schema)
        headers[name] = b"\xc3\x01" + bytes.fromhex(fingerprint(pcf, "CRC-64-AVRO"))

    def body(name, payload):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed[name], {"payload": payload})
        return buf.getvalue()

    env = Env(partitions=1)
    try:
        env.start("router", "--command-writer-schemas",
                  f"7={files['previous']},{files['next']}")
        now = now_ms()
        old = {k: v for k, v in task("shop", "old", now + 5000).items()
               if k not in ("retry", "attempt", "metadata")}
        old_cf = dict(old, task_id="old-cf")
        new = dict(task("shop", "new", now + 5000, attempt=2, metadata={"k": "v"}),
                   priority=9)
        new["callback"] = dict(new["callback"], tags=["x"])
        items = [
            ("shop/old", headers["previous"] + body("previous", ("mooncake.Submit",
                                                                 {"task": old}))),
            ("shop/old-cf", b"\x00\x00\x00\x00\x07" + body("previous", ("mooncake.Submit",
                                                                          {"task": old_cf}))),
            ("shop/new", headers["next"] + body("next", ("mooncake.Submit", {"task": new}))),
            ("shop/gone", headers["next"] + body("next", ("mooncake.Cancel", {
                "app_id": "shop", "task_id": "gone", "requested_at": now, "reason": "paid"}))),
            # a version nobody configured
            ("shop/other", b"\xc3\x01" + b"\x42" * 8 + body("previous", ("mooncake.Submit",
                                                                           {"task": old}))),
        ]
        produce_tracked(env, items)
        wheel = {m.key().decode(): decode("WheelEntry", m.value())["payload"]
                 for m in env.read_all("wheel", expect=4)}
        assert sorted(wheel) == ["shop/gone", "shop/new", "shop/old", "shop/old-cf"], wheel
        for key in ("shop/old", "shop/old-cf"):
            kind, sub = wheel[key]
            t = sub["task"]
            assert kind == "mooncake.Submit" and t["task_id"] == key[5:], wheel[key]
            assert (t["retry"], t["attempt"], t["metadata"]) == (None, 1, {}), t
            assert t["callback"]["url"] == old["callback"]["url"] and \
                ms(t["due_at"]) == now + 5000, t
        t = wheel["shop/new"][1]["task"]
        assert (t["attempt"], t["metadata"]) == (2, {"k": "v"}) and "priority" not in t, t
        assert t["callback"]["body"] == new["callback"]["body"], t
        assert wheel["shop/gone"] == ("mooncake.Cancel", {
            "app_id": "shop", "task_id": "gone", "requested_at": wheel["shop/gone"][1][
                "requested_at"]}), wheel["shop/gone"]
        dead = env.read_all("dead", expect=1)
        assert [m.key() for m in dead] == [b"shop/other"], dead
        reason = decode("DeadLetter", dead[0].value())["reason"]
        assert "4242424242424242" in reason and "writer schema" in reason, reason

        # A writer schema that cannot be read as ours is refused at start.
        bad = command_versions.previous()
        task_fields = bad["fields"][0]["type"][0]["fields"][0]["type"]["fields"]
        task_fields[:] = [f for f in task_fields if f["name"] != "callback"]
        with open(os.path.join(tmp, "bad.avsc"), "w") as f:
            json.dump(bad, f)
        p = subprocess.run([MOONCAKE_BIN, "router", "--command-writer-schemas",
                            os.path.join(tmp, "bad.avsc")], env=env.env(),
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 2 and "callback" in p.stderr and "bad.avsc" in p.stderr, \
            (p.returncode, p.stderr)
    finally:
        env.stop_all()


def test_bad_configuration_exits_2_with_a_reason():
    cases = [
        (["--horizon-ms", "soon"], "--horizon-ms"),
        (["--no-such-flag"], "unknown flag"),
        (["-X", "no.such.property=1"], "no.such.property"),
        (["-X", "novalue"], "key=value"),
    ]
    env = Env(create_topics=False)
    for args, needle in cases:
        p = subprocess.run([MOONCAKE_BIN, "router", "--http-port", "-1", *args],
                           env=env.env(), capture_output=True, text=True, timeout=60)
        assert p.returncode == 2, (args, p.returncode, p.stderr)
        assert needle in p.stderr, (args, p.stderr)
    p = subprocess.run([MOONCAKE_BIN, "router"], env=env.env(MOONCAKE_PARTITIONS="many"),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "MOONCAKE_PARTITIONS" in p.stderr, p.stderr
    p = subprocess.run([MOONCAKE_BIN, "router", "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "MOONCAKE_BOOTSTRAP_SERVERS" in p.stdout


def test_mismatched_partition_counts_are_refused():
    env = Env(partitions=3, create_topics=False)
    from confluent_kafka.admin import AdminClient, NewTopic
    from harness import BOOTSTRAP
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    fs = admin.create_topics([NewTopic(env.topic("wheel"), num_partitions=5,
                                       replication_factor=1)])
    for f in fs.values():
        f.result()
    p = subprocess.run([MOONCAKE_BIN, "router", "--http-port", "-1"], env=env.env(),
                       capture_output=True, text=True, timeout=90)
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert "same partition count" in p.stderr, p.stderr


if __name__ == "__main__":
    run([
        test_bad_configuration_exits_2_with_a_reason,
        test_routes_near_far_cancel_and_invalid,
        test_poison_records_do_not_block_a_partition,
        test_output_kafka_refuses_is_dead_lettered_not_retried_forever,
        test_mismatched_partition_counts_are_refused,
        test_sigterm_commits_and_restart_does_not_reroute,
        test_kill_9_mid_stream_routes_each_input_exactly_once,
        test_fenced_instance_exits_and_the_new_one_finishes,
        test_a_predecessors_open_transaction_on_either_id_ends_at_start,
        test_second_instance_splits_partitions_and_revoke_commits,
        test_confluent_framing_with_a_configured_schema_id,
        test_commands_written_with_another_partitioner_go_home,
        test_commands_written_with_the_previous_and_next_schema_versions,
    ])
