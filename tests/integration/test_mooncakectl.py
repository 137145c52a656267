"""mooncakectl, the operator CLI, against a real broker and real mooncake
roles: what it writes is decoded with fastavro (harness.decode), what it
reads is checked against a pipeline run (router, wheel, executor, retry) in
which a task's callback answers 404 (dead letter) until it is requeued.

The binary is $MOONCAKECTL_BIN, else mooncakectl beside $MOONCAKE_BIN (the build
tree's layout)."""
import json
import os
import re
import signal
import subprocess
import tempfile
import time
import uuid

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from harness import (BOOTSTRAP, MOONCAKE_BIN, CallbackServer, Env, decode, encode, home_partition,
                     ms, now_ms, run, task)
from test_executor import dead_letters, results, start_pipeline, wait_until
from test_store_wheel import read_settled

CTL = os.environ.get("MOONCAKECTL_BIN") or os.path.join(
    os.path.dirname(os.path.abspath(MOONCAKE_BIN)), "mooncakectl")
SANITIZER = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


class Out:
    def __init__(self, p):
        self.rc, self.out, self.err = p.returncode, p.stdout, p.stderr

    def json_lines(self):
        return [json.loads(line) for line in self.out.splitlines() if line.strip()]


def ctl(*args, env=None, prefix=None, stdin=None, timeout=60, expect=0):
    """Runs mooncakectl (-b the test broker, -p prefix when given); checks the
    exit status and that no sanitizer spoke."""
    cmd = [CTL, "-b", BOOTSTRAP] + (["-p", prefix] if prefix else []) + list(args)
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, **(env or {})})
    for needle in SANITIZER:
        assert needle not in p.stderr, f"sanitizer report from {cmd}:\n{p.stderr}"
    assert expect is None or p.returncode == expect, \
        f"{cmd} exited {p.returncode}, expected {expect}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    return Out(p)


def watermarks(env, suffix):
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "wm-" + uuid.uuid4().hex})
    deadline = time.time() + 30
    try:
        while True:
            try:
                return [c.get_watermark_offsets(TopicPartition(env.topic(suffix), p), timeout=10,
                                                cached=False) for p in range(env.partitions)]
            except KafkaException:  # a topic just made may not have its leader yet
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        c.close()


def tasks_records(env):
    """Every committed Command in tasks: (key, decoded payload, partition, headers)."""
    out = []
    for m in read_settled(env, "tasks", timeout=30):
        if not m.value().startswith(b"\xc3\x01"):
            continue  # a record that is not a Command
        cmd = decode("Command", m.value())
        out.append((m.key().decode(), cmd["payload"], m.partition(), dict(m.headers() or [])))
    return out


def test_help_and_usage_errors():
    """-h anywhere exits 0 with the usage (the command's own after a
    command); bad usage exits 2 with one line naming what to fix."""
    out = ctl("-h")
    assert out.out.startswith("usage: mooncakectl") and "requeue" in out.out
    for cmd, word in (("submit", "--at TIME"), ("results", "--since"), ("dead", "--reason"),
                      ("requeue", "--dry-run"), ("topics", "describe"), ("cancel", "--id"),
                      ("jobs", "preview --cron")):
        out = ctl(cmd, "-h")
        assert out.out.startswith(f"usage: mooncakectl {cmd}") and word in out.out, out.out
    assert ctl("results", "--bogus", "-h").out.startswith("usage: mooncakectl results")
    for args, needle in ((["--bogus"], "--bogus"), ([], "no command"), (["frobnicate"], "frobnicate"),
                         (["results", "--reason", "x"], "--reason"), (["-f", "x", "results"],
                                                                      "after the command"),
                         (["topics"], "create or describe"), (["results", "--since", "soon"],
                                                              "--since"),
                         (["requeue"], "--all"), (["requeue", "--all", "-k", "a/b"], "--all"),
                         (["submit", "--app", "a", "--in", "5s"], "--url"),
                         (["-X", "no.such.property=1", "results"], "no.such.property"),
                         (["-F", "/nonexistent/mooncakectl.conf", "results"], "nonexistent"),
                         (["jobs"], "jobs needs put, pause"), (["jobs", "stop"], "'stop'"),
                         (["jobs", "pause", "--app", "a"], "--job"),
                         (["jobs", "put"], "-f FILE"),
                         (["jobs", "preview"], "--cron"),
                         (["jobs", "preview", "--cron", "@daily", "-n", "0"], "-n '0'"),
                         (["jobs", "preview", "--cron", "0 0 0 30 2 ?"], "--cron never fires"),
                         (["jobs", "preview", "--cron", "@daily", "--tz", "Mars/Base"],
                          "--tz: unknown time zone 'Mars/Base'"),
                         (["results", "--job", "j"], "--app and --job"),
                         (["results", "--app", "a", "--job", "j", "-k", "a/b"], "not both")):
        out = ctl(*args, expect=2)
        lines = out.err.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0], (args, out.err)


def test_topics_create_and_describe():
    """On a fresh prefix, `topics create` makes the topic set (and requeue's
    ledger) with the right partitions, cleanup policies and retention;
    `topics describe` shows them, the offsets in use and the lag of a
    processor group, before and after the router catches up. A config file
    gives the broker and prefix."""
    env = Env(partitions=2, create_topics=False)
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
            f.write(f"# mooncakectl\nbootstrap.servers = {BOOTSTRAP}\n"
                    f"mooncake.topic.prefix={env.prefix}\nsocket.keepalive.enable=true\n")
        out = ctl("-F", f.name, "topics", "create", "--partitions", "2", "-J")
        made = {j["topic"]: j for j in out.json_lines()}
        assert set(made) == {env.topic(t) for t in Env.TOPICS + (
            "job-commands", "jobs", "chains", "broadcasts", "alarm-events", "alarms", "endpoints",
            "mooncakectl-requeued")}, made
        assert all(j["created"] for j in made.values()), made
        assert made[env.topic("tasks")]["partitions"] == 2
        assert made[env.topic("mooncakectl-requeued")]["partitions"] == 1
        assert made[env.topic("layout")]["partitions"] == 1
        assert made[env.topic("endpoints")]["partitions"] == 1
        again = ctl("-p", env.prefix, "topics", "create", "--partitions", "2").out
        assert again.count("exists") == 17, again

        admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
        res = [ConfigResource("topic", env.topic(t))
               for t in ("store", "dead", "results", "views", "alarms", "alarm-events",
                         "chains", "broadcasts", "endpoints")]
        cfg = {r.name: c for r, f in admin.describe_configs(res).items() for c in [f.result()]}
        assert cfg[env.topic("store")]["cleanup.policy"].value == "compact"
        assert cfg[env.topic("chains")]["cleanup.policy"].value == "compact"
        assert cfg[env.topic("broadcasts")]["cleanup.policy"].value == "compact"
        assert cfg[env.topic("endpoints")]["cleanup.policy"].value == "compact"
        assert cfg[env.topic("views")]["cleanup.policy"].value == "compact"
        assert cfg[env.topic("alarms")]["cleanup.policy"].value == "compact"
        assert cfg[env.topic("alarm-events")]["retention.ms"].value == "604800000"
        assert cfg[env.topic("dead")]["retention.ms"].value == "2592000000"
        assert cfg[env.topic("results")]["retention.ms"].value == "259200000"

        for i in range(5):
            env.produce("tasks", f"shop/t{i}", b"not avro")  # the router dead-letters them
        env.flush()
        d = json.loads(ctl("-F", f.name, "-J", "topics", "describe").out)
        topics = {t["topic"]: t for t in d["topics"]}
        assert topics[env.topic("store")]["cleanup_policy"] == "compact"
        assert topics[env.topic("tasks")] == {
            "topic": env.topic("tasks"), "exists": True, "partitions": 2,
            "cleanup_policy": "delete", "retention_ms": 604800000, "offsets": 5}, topics
        groups = {g["group"]: g for g in d["groups"]}
        router = groups[env.topic("router")]
        assert router["lag"] == 5 and router["committed_partitions"] == 0, router
        assert d["pending"]["not_routed"] == 5 and d["pending"]["store_records"] == 0, d

        env.start("router")
        def routed():
            # One describe reads the watermarks before the groups' offsets, so
            # it can see the router's commit in its offsets and not yet in
            # dead's end (a faster librdkafka made that race visible).
            d = json.loads(ctl("-p", env.prefix, "-J", "topics", "describe").out)
            g = {g["group"]: g for g in d["groups"]}
            letters = {t["topic"]: t for t in d["topics"]}[env.topic("dead")]["offsets"]
            return d if g[env.topic("router")]["lag"] == 0 and letters >= 5 else None
        d = wait_until("router lag 0 and its 5 letters in dead", routed, timeout=30, interval=0.5)
        groups = {g["group"]: g for g in d["groups"]}
        assert groups[env.topic("router")]["committed_partitions"] == 2
        assert groups[env.topic("router")]["members"] == 1
        dead = {t["topic"]: t for t in d["topics"]}[env.topic("dead")]
        assert dead["offsets"] >= 5, dead  # 5 letters, plus transaction markers
        # requeue never ran: all of dead is its lag.
        assert groups[env.topic("mooncakectl-requeue")]["lag"] == dead["offsets"]
        table = ctl("-p", env.prefix, "topics", "describe").out
        assert re.search(rf"{re.escape(env.topic('router'))}\s+{re.escape(env.topic('tasks'))}"
                         r"\s+Stable\s+1\s+2/2\s+0\n", table), table
        os.unlink(f.name)
    finally:
        env.stop_all()


def test_submit_with_flags_and_json():
    """submit from flags and from the gateway's JSON body (a file, and
    stdin) lands a Command in tasks, keyed app/id, with every field as
    given; -J says where it went."""
    env = Env(partitions=3)
    t0 = now_ms()
    with tempfile.NamedTemporaryFile("wb", delete=False) as body:
        body.write(b'{"order": 42, "note": "caf\xc3\xa9"}')
    out = ctl("-J", "submit", "--app", "shop", "--id", "flags-1", "--in", "90s",
              "--url", "https://shop.example.com/expire?x=1", "--method", "put",
              "-H", "X-Order: 42", "-H", "Content-Type:application/json",
              "--body-file", body.name, "--timeout-ms", "2500", "--max-attempts", "3",
              "--initial-backoff-ms", "100", "--multiplier", "1.5", "--max-backoff-ms", "900",
              "--metadata", "tenant=eu", prefix=env.prefix)
    sent = out.json_lines()[0]
    assert sent["key"] == "shop/flags-1" and sent["topic"] == env.topic("tasks"), sent
    assert t0 + 90000 <= sent["due_at"] <= now_ms() + 90000, sent
    at = ctl("submit", "--app", "shop", "--id", "at-1", "--at", "2031-02-03T04:05:06.789+01:00",
             "--url", "http://x.example/hook", "-q", prefix=env.prefix)
    assert at.out == "shop/at-1\n" and at.err == "", (at.out, at.err)
    doc = {"appId": "shop", "uuid": "json-1", "expireTime": t0 + 60000,
           "callback": {"url": "http://x.example/json", "method": "patch", "body": "hi",
                        "headers": {"X-A": "b"}, "timeoutMs": 700},
           "retry": {"maxAttempts": 2}, "metadata": {"k": "v"}}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(doc, f)
    assert ctl("submit", "-f", f.name, prefix=env.prefix).out == "shop/json-1\n"
    gen = ctl("-J", "submit", "-f", "-", prefix=env.prefix, stdin=json.dumps(
        {"appId": "gen", "delayMs": 1000, "callback": {"url": "http://x.example/gen"}}))
    gen = gen.json_lines()[0]
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
                        gen["task_id"]), gen
    os.unlink(body.name)
    os.unlink(f.name)

    recs = {k: (cmd, part) for k, cmd, part, _ in tasks_records(env)}
    assert set(recs) == {"shop/flags-1", "shop/at-1", "shop/json-1", gen["key"]}, recs
    kind, s = recs["shop/flags-1"][0]
    assert kind == "mooncake.Submit" and recs["shop/flags-1"][1] == sent["partition"]
    t = s["task"]
    assert (t["app_id"], t["task_id"], t["attempt"]) == ("shop", "flags-1", 1)
    assert abs(round(t["due_at"].timestamp() * 1000) - sent["due_at"]) <= 1
    cb = t["callback"]
    assert cb == {"url": "https://shop.example.com/expire?x=1", "method": "PUT",
                  "headers": {"X-Order": "42", "Content-Type": "application/json"},
                  "body": b'{"order": 42, "note": "caf\xc3\xa9"}', "timeout_ms": 2500}, cb
    assert t["retry"][1] == {"max_attempts": 3, "initial_backoff_ms": 100, "multiplier": 1.5,
                          "max_backoff_ms": 900}, t["retry"]
    assert t["metadata"] == {"tenant": "eu"}
    assert t0 <= round(t["created_at"].timestamp() * 1000) <= now_ms()
    t = recs["shop/at-1"][0][1]["task"]
    assert round(t["due_at"].timestamp() * 1000) == 1927854306789  # 03:05:06.789Z
    assert t["retry"] is None and t["callback"]["method"] == "POST"
    t = recs["shop/json-1"][0][1]["task"]
    assert round(t["due_at"].timestamp() * 1000) == t0 + 60000
    assert t["callback"] == {"url": "http://x.example/json", "method": "PATCH", "body": b"hi",
                             "headers": {"X-A": "b"}, "timeout_ms": 700}, t["callback"]
    assert t["retry"][1]["max_attempts"] == 2 and t["retry"][1]["max_backoff_ms"] == 3600000
    assert t["metadata"] == {"k": "v"}


def test_invalid_tasks_are_refused_locally_and_cancel():
    """A task the router would dead-letter is refused before anything is
    sent: exit 2 and one line naming the field. cancel sends a Cancel."""
    env = Env(partitions=2)
    before = watermarks(env, "tasks")
    base = ["submit", "--app", "shop", "--id", "x", "--url", "http://x.example/"]
    for args, needle in (
            (["submit", "--app", "shop", "--in", "5s", "--url", "ftp://x.example/"], "--url"),
            (base + ["--at", "1700000000"], "before 2000"),
            (base + ["--in", "5s", "--method", "BREW"], "--method"),
            (base + ["--in", "5s", "-H", "webhook-id: forged"], "webhook-id"),
            (base + ["--in", "5s", "--timeout-ms", "99999999"], "--timeout-ms"),
            (base + ["--in", "5s", "--multiplier", "0.5"], "--multiplier"),
            (base + ["--in", "5 minutes"], "--in"),
            (["submit", "--app", "a/b", "--in", "5s", "--url", "http://x.example/"], "'/'"),
            (["submit", "-f", "-"], "callback.url")):
        stdin = json.dumps({"appId": "shop", "delayMs": 5, "callback": {"url": "file:///etc"}})
        out = ctl(*args, prefix=env.prefix, stdin=stdin, expect=2)
        lines = out.err.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0] and "nothing sent" in lines[0], (args, out.err)
        assert out.out == ""
    assert watermarks(env, "tasks") == before, "a refused task was produced"
    assert ctl("cancel", "--app", "shop", "--id", "c-1", prefix=env.prefix).out == "shop/c-1\n"
    recs = tasks_records(env)
    assert len(recs) == 1, recs
    key, (kind, c), _, _ = recs[0]
    assert key == "shop/c-1" and kind == "mooncake.Cancel", recs
    assert (c["app_id"], c["task_id"]) == ("shop", "c-1")
    ctl("cancel", "--app", "shop", prefix=env.prefix, expect=2)


def test_submit_and_cancel_in_a_serial_chain():
    """submit --ordering-key (flags, a Kafka target, -f with orderingKey in the body or
    replaced by the flag) writes the chain's AddLink to job-commands keyed
    app/ordering-key, on that key's murmur2 partition, and nothing to tasks; cancel
    --ordering-key a CancelLink; a bad key is refused locally (exit 2, named, nothing
    sent)."""
    env = Env(partitions=3)
    try:
        ctl("topics", "create", "--partitions", "3", prefix=env.prefix)
        for cmd in ("submit", "cancel"):
            assert "--ordering-key KEY" in ctl(cmd, "-h").out
        t0 = now_ms()
        sent = ctl("-J", "submit", "--app", "shop", "--id", "renew-2027", "--in", "90s",
                   "--url", "https://shop.example.com/contracts/42/renew", "--body", "2027",
                   "--ordering-key", "contract-42", prefix=env.prefix).json_lines()
        assert len(sent) == 1, sent
        s = sent[0]
        assert (s["command"], s["key"], s["app_id"], s["task_id"], s["ordering_key"],
                s["topic"]) == ("submit", "shop/renew-2027", "shop", "renew-2027", "contract-42",
                                env.topic("job-commands")), s
        assert s["partition"] == home_partition("shop/contract-42", 3), s
        assert t0 + 90_000 <= s["due_at"] <= now_ms() + 90_000, s
        kt = ctl("submit", "--app", "shop", "--id", "notify-2027", "--in", "5m",
                 "--kafka-topic", "shop.contracts", "--kafka-key", "42",
                 "--ordering-key", "contract-42", prefix=env.prefix)
        assert kt.out == "shop/notify-2027\n", kt.out
        assert "in chain contract-42" in kt.err and env.topic("job-commands") in kt.err, kt.err
        body = {"appId": "shop", "uuid": "renew-2028", "delayMs": 1000,
                "callback": {"url": "http://x.example/renew"}, "orderingKey": "contract-42"}
        assert ctl("submit", "-f", "-", prefix=env.prefix,
                   stdin=json.dumps(body)).out == "shop/renew-2028\n"
        # the flag replaces the body's orderingKey
        assert ctl("submit", "-f", "-", "--ordering-key", "contract-43", prefix=env.prefix,
                   stdin=json.dumps(dict(body, uuid="moved"))).out == "shop/moved\n"
        c = ctl("-J", "cancel", "--app", "shop", "--id", "renew-2027", "--ordering-key",
                "contract-42", prefix=env.prefix).json_lines()[0]
        assert (c["command"], c["key"], c["ordering_key"], c["topic"]) == (
            "cancel", "shop/renew-2027", "contract-42", env.topic("job-commands")), c
        t1 = now_ms()
        # refused locally: exit 2, one line naming the flag or field, nothing sent
        base = ["submit", "--app", "shop", "--id", "x", "--in", "5s", "--url", "http://x/"]
        for args, stdin, needle in (
                (base + ["--ordering-key", ""], None, "--ordering-key must be 1 to 256 bytes"),
                (base + ["--ordering-key", "k" * 257], None,
                 "--ordering-key must be 1 to 256 bytes"),
                (base + ["--ordering-key", "a\x01b"], None,
                 "--ordering-key contains a control character"),
                (["submit", "-f", "-"], json.dumps(dict(body, orderingKey="")),
                 "orderingKey must be 1 to 256 bytes"),
                (["submit", "-f", "-"], json.dumps(dict(body, orderingKey="k" * 257)),
                 "orderingKey is 257 bytes, more than 256"),
                (["cancel", "--app", "shop", "--id", "x", "--ordering-key", ""], None,
                 "--ordering-key must be 1 to 256 bytes"),
                (["cancel", "--app", "shop", "--id", "x", "--ordering-key", "a\tb"], None,
                 "--ordering-key contains a control character")):
            out = ctl(*args, prefix=env.prefix, stdin=stdin, expect=2)
            lines = out.err.strip().splitlines()
            assert len(lines) == 1 and needle in lines[0] and "nothing sent" in lines[0], (
                args, out.err)
            assert out.out == ""
        assert tasks_records(env) == [], "a chained task went to tasks"
        recs = job_commands(env)
        assert sorted((k, kind) for k, _, kind, _ in recs) == sorted(
            [("shop/contract-42", "mooncake.AddLink")] * 3 +
            [("shop/contract-43", "mooncake.AddLink"),
             ("shop/contract-42", "mooncake.CancelLink")]), recs
        assert all(p == home_partition(k, 3) for k, p, _, _ in recs), recs
        chain = [(kind, p) for k, _, kind, p in recs if k == "shop/contract-42"]
        t = chain[0][1]["task"]
        assert chain[0][1]["ordering_key"] == "contract-42"
        assert (t["app_id"], t["task_id"], ms(t["due_at"]), t["callback"]["url"],
                t["callback"]["body"]) == ("shop", "renew-2027", s["due_at"],
                                           "https://shop.example.com/contracts/42/renew",
                                           b"2027"), t
        t = chain[1][1]["task"]
        assert t["task_id"] == "notify-2027" and t["callback"]["url"] == "" and \
            t["kafka_target"][1]["topic"] == "shop.contracts", t
        assert chain[2][1]["task"]["task_id"] == "renew-2028"
        cancel = chain[3][1]
        assert (cancel["app_id"], cancel["ordering_key"], cancel["task_id"]) == (
            "shop", "contract-42", "renew-2027"), cancel
        assert t0 <= ms(cancel["requested_at"]) <= t1
    finally:
        env.stop_all()


def test_results_dead_and_requeue_after_a_real_run():
    """A pipeline run in which shop/ok succeeds and shop/flaky's endpoint
    answers 404 (a permanent failure: dead letter) until it is fixed; plus a
    record that is not a Command at all. results and dead show them (table
    and -J, by key, by reason); requeue by key moves the letter back exactly
    once: the task runs again and succeeds, a second run and a run over all
    letters requeue nothing more, and the undecodable letter is skipped."""
    fixed = {"flaky": False}
    answer = {"X-Request-Id": "req-7", "Set-Cookie": "session=secret", "X-Other": "dropped"}
    server = CallbackServer(lambda c: (404, answer, b"no such order")
                            if c["path"] == "/flaky" and not fixed["flaky"] else (200, {}, b"ok"))
    env = Env(partitions=3)
    try:
        start_pipeline(env)
        p = env.prefix
        for tid, path in (("ok", "/ok"), ("flaky", "/flaky")):
            ctl("submit", "--app", "shop", "--id", tid, "--in", "300ms", "--url", server.url(path),
                "--body", "{}", prefix=p)
        env.produce("tasks", "shop/junk", b"\x00garbage")
        env.flush()
        wait_until("two results and two dead letters",
                   lambda: len(results(env)) >= 2 and len(dead_letters(env)) >= 2, timeout=30)

        table = ctl("results", prefix=p)
        rows = table.out.splitlines()
        assert rows[0].split() == ["TIME", "KEY", "ATTEMPT", "OUTCOME", "HTTP", "MS", "ERROR",
                                   "|", "ANSWER"], rows
        assert any(re.search(r"shop/ok\s+1\s+SUCCEEDED\s+200\s+\d+\s+\| ok$", r) for r in rows), rows
        # What the endpoint answered: the kept headers and the body, never Set-Cookie.
        assert any(re.search(r"shop/flaky\s+1\s+FAILED_PERMANENTLY\s+404\s+\d+\s+permanent.*"
                             r"\| x-request-id: req-7 \| no such order$", r)
                   for r in rows), rows
        assert "secret" not in table.out and "dropped" not in table.out
        assert "2 results" in table.err
        got = ctl("-J", "results", "-k", "shop/flaky", prefix=p)
        res = got.json_lines()
        assert len(res) == 1 and res[0]["outcome"] == "FAILED_PERMANENTLY", res
        assert res[0]["http_status"] == 404 and res[0]["attempt"] == 1 and res[0]["key"] == "shop/flaky"
        assert res[0]["response_body"] == "no such order" and res[0]["response_size"] == 13, res
        assert res[0]["response_headers"] == {"x-request-id": "req-7"}, res
        assert isinstance(res[0]["version"], int) and res[0]["version"] >= 0, res
        assert "other partitions" not in got.err, got.err  # found in the key's own partition

        table = ctl("dead", prefix=p).out.splitlines()
        assert table[0].split() == ["TIME", "KEY", "ATTEMPT", "SOURCE", "REASON"], table
        assert any(re.search(rf"shop/flaky\s+1\s+{re.escape(p)}retry \d+@\d+\s+permanent", r)
                   for r in table), table
        assert any("shop/junk" in r and "undecodable" in r and "[no task]" in r for r in table)
        dead = ctl("-J", "dead", "-k", "shop/flaky", prefix=p).json_lines()
        assert len(dead) == 1 and dead[0]["task"]["callback"]["url"] == server.url("/flaky"), dead
        assert dead[0]["task"]["callback"]["body"] == "{}" and dead[0]["source_topic"] == p + "retry"
        junk = ctl("-J", "dead", "--reason", "UNDECODABLE", prefix=p).json_lines()
        assert len(junk) == 1 and junk[0]["task"] is None and junk[0]["key"] == "shop/junk", junk
        assert junk[0]["raw_base64"] == "AGdhcmJhZ2U="  # the bytes as produced
        assert ctl("-J", "dead", "--reason", "no such reason", prefix=p).out == ""
        assert ctl("-J", "dead", "--since", "1h", prefix=p).out.count("\n") == 2
        assert ctl("-J", "dead", "--since", str(now_ms() + 60000), prefix=p).out == ""

        # A dry run says what it would do and writes nothing.
        before = watermarks(env, "tasks")
        dry = ctl("-J", "requeue", "-k", "shop/flaky", "--dry-run", prefix=p)
        assert [j["action"] for j in dry.json_lines()] == ["would requeue"], dry.out
        assert watermarks(env, "tasks") == before

        # Follow the task's results while it is requeued: the success shows up.
        follow = subprocess.Popen([CTL, "-b", BOOTSTRAP, "-p", p, "-J", "results", "-f", "-k",
                                   "shop/flaky"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        fixed["flaky"] = True
        out = ctl("-J", "requeue", "-k", "shop/flaky", prefix=p)
        done = out.json_lines()
        assert [(j["action"], j["key"]) for j in done] == [("requeued", "shop/flaky")], out.out
        assert "1 requeued" in out.err, out.err
        res = wait_until("a SUCCEEDED result for the requeued task",
                         lambda: [r for r in results(env) if r["key"] == "shop/flaky"
                                  and r["outcome"] == "SUCCEEDED"], timeout=30)
        assert len(res) == 1 and res[0]["attempt"] == 1, res
        assert len(server.calls_to("/flaky")) == 2
        again = [(k, c, h) for k, c, _, h in tasks_records(env) if k == "shop/flaky"]
        assert len(again) == 2, again  # the submit, and the requeued submit
        kind, s = again[1][1]
        assert kind == "mooncake.Submit" and s["task"]["attempt"] == 1
        assert again[1][2]["mooncake-requeued-from"].decode() == \
            f"{p}dead/{done[0]['dead_partition']}/{done[0]['dead_offset']}"
        follow.send_signal(signal.SIGINT)
        fout, ferr = follow.communicate(timeout=10)
        assert follow.returncode == 0, ferr
        outcomes = [json.loads(line)["outcome"] for line in fout.splitlines()]
        assert outcomes == ["FAILED_PERMANENTLY", "SUCCEEDED"], fout

        # Exactly once: neither the same filter nor another one requeues it again.
        # (The group's offsets may already be past the letter: then it is not
        # even read again; else the ledger says it was requeued.)
        out = ctl("-J", "requeue", "-k", "shop/flaky", prefix=p)
        assert out.out == "" and re.search(r"matched: 0 requeued, [01] requeued before", out.err)
        out = ctl("-J", "requeue", "--all", prefix=p)
        actions = [(j["action"], j["key"]) for j in out.json_lines()]
        assert actions == [("skipped", "shop/junk")], actions  # the undecodable letter
        assert re.search(r"matched: 0 requeued, [01] requeued before, 1 skipped", out.err), out.err
        time.sleep(0.5)
        assert len(server.calls_to("/flaky")) == 2
        # Every letter is dealt with: the requeue group has no lag left; and
        # the caught-up processors show none either (their inputs' commit
        # markers do not count).
        def settled():
            d = json.loads(ctl("-p", p, "-J", "topics", "describe").out)
            return d if all(d["pending"][k] == 0 for k in (
                "dead_not_requeued", "not_routed", "due_not_finished",
                "failed_awaiting_retry")) else None
        wait_until("no lag", settled, timeout=20, interval=0.5)
    finally:
        env.stop_all()
        server.close()


def test_requeue_is_exactly_once_across_a_kill_9():
    """requeue --all over 3000 dead letters, killed with SIGKILL after its
    first transaction committed, then run again: every letter is requeued
    exactly once (one Submit in tasks naming each letter), and the requeue
    group ends with no lag."""
    env = Env(partitions=3)
    n = 3000
    for i in range(n):
        t = task("bulk", f"t{i}", now_ms() + 3600000, attempt=4)
        env.produce("dead", f"bulk/t{i}", encode("DeadLetter", {
            "reason": "gave up after 4 attempts", "source_topic": env.topic("retry"),
            "source_partition": 0, "source_offset": i, "raw": None, "task": t,
            "failed_at": now_ms()}))
    env.flush()
    first = subprocess.Popen([CTL, "-b", BOOTSTRAP, "-p", env.prefix, "-J", "-q", "requeue",
                              "--all", "--batch", "40"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    line = first.stdout.readline()  # printed once the first transaction committed
    first.kill()
    first.wait()
    rest, err = first.stdout.read(), first.stderr.read()
    assert json.loads(line)["action"] == "requeued", (line, err)
    printed = 1 + rest.count("\n")
    assert printed < n, "the first run finished before the kill"
    out = ctl("-J", "requeue", "--all", prefix=env.prefix)
    second = len(out.json_lines())
    froms = [h["mooncake-requeued-from"] for k, _, _, h in tasks_records(env)]
    assert len(set(froms)) == len(froms) == n, (len(froms), len(set(froms)), n)
    assert printed + second <= n
    recs = [c for k, c, _, _ in tasks_records(env)]
    assert all(kind == "mooncake.Submit" and s["task"]["attempt"] == 1 for kind, s in recs)
    print(f"     killed after {printed} letters printed as requeued (committed); the second "
          f"run requeued {second}; {n - printed - second} were committed but not printed",
          flush=True)
    d = json.loads(ctl("-p", env.prefix, "-J", "topics", "describe").out)
    assert d["pending"]["dead_not_requeued"] == 0, d
    assert ctl("-J", "requeue", "--all", prefix=env.prefix).out == ""


# ---- recurring jobs ---------------------------------------------------------------------------

def job_commands(env):
    """Every committed JobCommand: (key, partition, payload kind, payload)."""
    out = []
    for m in read_settled(env, "job-commands", timeout=30):
        kind, payload = decode("JobCommand", m.value())["payload"]
        out.append((m.key().decode(), m.partition(), kind, payload))
    return out


def job_body(**over):
    j = {"appId": "shop", "jobId": "nightly-report",
         "schedule": {"cron": "0 0 2 * * ?", "timeZone": "Asia/Shanghai"},
         "overlap": "SERIAL", "callback": {"url": "https://shop.example.com/report"}}
    j.update(over)
    return j


def test_jobs_put_actions_and_preview():
    """jobs put -f (a file, stdin) writes the PutJob the gateway would, to its
    key's murmur2 partition, and prints the next fire times; an invalid job
    is refused (exit 2, the field named, nothing sent); pause and trigger
    write JobActions; preview needs no broker."""
    env = Env(partitions=3)
    try:
        ctl("topics", "create", "--partitions", "3", prefix=env.prefix)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(job_body(retry={"maxAttempts": 2}), f)
        t0 = now_ms()
        out = ctl("jobs", "put", "-f", f.name, prefix=env.prefix, env={
            "MOONCAKE_RETRY_INITIAL_BACKOFF_MS": "333"})
        lines = out.out.splitlines()
        assert lines[0] == "shop/nightly-report" and len(lines) == 6, out.out
        fires = [int(line.split()[1]) for line in lines[1:]]
        assert all(x % 86_400_000 == 64_800_000 for x in fires) and fires[0] > t0, fires
        assert lines[1].split()[0].endswith("T18:00:00.000Z"), lines[1]
        j = ctl("-J", "jobs", "put", "-f", "-", prefix=env.prefix,
                stdin=json.dumps(job_body(jobId="every-minute", schedule={"fixedRateMs": 60000},
                                          startTime=t0 + 3_600_000))).json_lines()
        assert len(j) == 1 and j[0]["key"] == "shop/every-minute", j
        assert j[0]["next_fire_times"] == [t0 + 3_600_000 + k * 60_000 for k in range(5)], j
        assert j[0]["partition"] == home_partition("shop/every-minute", 3), j
        # refused locally: exit 2, one line naming the field, nothing sent
        for body, needle in ((job_body(schedule={"cron": "0 0 0 30 2 ?"}),
                              "schedule.cron never fires"),
                             (job_body(schedule={"cron": "@daily", "timeZone": "Mars/Base"}),
                              "schedule.timeZone: unknown time zone 'Mars/Base'"),
                             (job_body(schedule={"fixedRateMs": 0}),
                              "schedule.fixedRateMs is 0"),
                             (job_body(schedule={"cron": "@daily", "fixedDelayMs": 5000}),
                              "schedule: give exactly one of cron, fixedRateMs, fixedDelayMs")):
            bad = ctl("jobs", "put", "-f", "-", prefix=env.prefix, stdin=json.dumps(body),
                      expect=2)
            lines = bad.err.strip().splitlines()
            assert len(lines) == 1 and needle in lines[0] and "nothing sent" in lines[0], bad.err
        assert ctl("jobs", "pause", "--app", "shop", "--job", "nightly-report",
                   prefix=env.prefix).out == "shop/nightly-report\n"
        trig = ctl("jobs", "trigger", "--app", "shop", "--job", "nightly-report",
                   prefix=env.prefix).out.strip()
        assert re.fullmatch(r"shop/nightly-report@\d{13}", trig), trig
        bad = ctl("jobs", "delete", "--app", "sh/op", "--job", "x", prefix=env.prefix, expect=2)
        assert "--app 'sh/op' contains '/'" in bad.err, bad.err
        recs = job_commands(env)
        assert [(k, kind) for k, _, kind, _ in recs if k == "shop/nightly-report"] == [
            ("shop/nightly-report", "mooncake.PutJob"), ("shop/nightly-report", "mooncake.JobAction"),
            ("shop/nightly-report", "mooncake.JobAction")], recs
        assert all(p == home_partition(k, 3) for k, p, _, _ in recs), recs
        put = next(p["job"] for k, _, kind, p in recs if kind == "mooncake.PutJob"
                   and k == "shop/nightly-report")
        assert (put["schedule"]["cron"], put["schedule"]["time_zone"], put["overlap"]) == (
            "0 0 2 * * ?", "Asia/Shanghai", "SERIAL"), put
        # a partial retry takes the rest from MOONCAKE_RETRY_*
        assert put["retry"][1]["max_attempts"] == 2 and \
            put["retry"][1]["initial_backoff_ms"] == 333, put["retry"]
        actions = [p for k, _, kind, p in recs if kind == "mooncake.JobAction"]
        assert [a["action"] for a in actions] == ["PAUSE", "TRIGGER"], actions
        assert trig.endswith("@%d" % ms(actions[1]["requested_at"])), (trig, actions[1])
        # preview: no broker needed at all
        out = ctl("-b", "127.0.0.1:1", "jobs", "preview", "--cron", "0 30 2 * * ?", "--tz",
                  "Europe/Berlin", "-n", "3")
        assert len(out.out.splitlines()) == 3, out.out
        pj = ctl("-J", "jobs", "preview", "--cron", "*/15 * * * *", "-n", "4").json_lines()
        fires = pj[0]["next_fire_times"]
        assert len(fires) == 4 and all(b - a == 900_000 for a, b in zip(fires, fires[1:])), pj
    finally:
        env.stop_all()


def job_state(app, jid, runs, status="ACTIVE", next_at=-1):
    """A JobState record as the jobs role writes it (fastavro)."""
    job = {"app_id": app, "job_id": jid,
           "schedule": {"kind": "FIXED_RATE", "cron": "", "time_zone": "UTC",
                        "interval_ms": 60000},
           "start_at": 0, "end_at": 0, "max_runs": 0, "misfire": "DO_NOTHING",
           "catch_up_limit": 10, "misfire_threshold_ms": 5000, "overlap": "DISCARD_LATER",
           "paused": False,
           "callback": {"url": "http://h.example/x", "method": "POST", "headers": {},
                        "body": b"", "timeout_ms": 0},
           "retry": None, "metadata": {}, "created_at": now_ms()}
    return encode("JobState", {
        "version": 1, "status": status, "next_at": next_at, "runs": runs,
        "last_scheduled_at": -1, "running": [], "queued_at": -1, "skipped": 0,
        "updated_at": now_ms(), "job": job})


def test_jobs_list_and_a_jobs_results():
    """jobs list shows what the jobs role wrote to <prefix>jobs (its table),
    the latest value of each key, without deleted ones (tombstones), by
    app; results --app --job lists every occurrence of one job."""
    env = Env(partitions=3)
    try:
        ctl("topics", "create", "--partitions", "3", prefix=env.prefix)
        ctl("jobs", "put", "-f", "-", prefix=env.prefix, stdin=json.dumps(job_body()))
        ctl("jobs", "put", "-f", "-", prefix=env.prefix, stdin=json.dumps(
            {"appId": "billing", "jobId": "invoices", "schedule": {"fixedRateMs": 3_600_000},
             "startTime": now_ms() + 7_200_000, "paused": True, "misfire": "CATCH_UP",
             "callback": {"url": "https://billing.example.com/run"}}))
        env.start("jobs", instance="j")

        def listed():
            got = {j["key"]: j for j in ctl("-J", "jobs", "list", prefix=env.prefix).json_lines()}
            return got if len(got) == 2 else None
        got = wait_until("both jobs in the jobs topic", listed, 60)
        shop, billing = got["shop/nightly-report"], got["billing/invoices"]
        assert (shop["status"], shop["job"]["overlap"], shop["job"]["schedule"]) == (
            "ACTIVE", "SERIAL", {"cron": "0 0 2 * * ?", "timeZone": "Asia/Shanghai"}), shop
        assert shop["nextAt"] % 86_400_000 == 64_800_000, shop
        assert (billing["status"], billing["job"]["misfire"]) == ("PAUSED", "CATCH_UP"), billing
        # the listed job is what jobs put -f takes back
        again = ctl("-J", "jobs", "put", "-f", "-", prefix=env.prefix,
                    stdin=json.dumps(shop["job"])).json_lines()
        assert again[0]["key"] == "shop/nightly-report", again
        table = ctl("jobs", "list", prefix=env.prefix).out.splitlines()
        assert table[0].split()[:4] == ["APP", "JOB", "STATUS", "SCHEDULE"], table
        row = next(r for r in table if r.startswith("shop "))
        assert "nightly-report" in row and "ACTIVE" in row and "cron '0 0 2 * * ?'" in row \
            and "Asia/Shanghai" in row and "T18:00:00.000Z" in row and "SERIAL" in row, row
        only = ctl("-J", "jobs", "list", "--app", "billing", prefix=env.prefix).json_lines()
        assert [j["key"] for j in only] == ["billing/invoices"], only
        env.stop_all()

        # latest value per key wins, and a tombstone deletes
        for key, value in (("shop/gone", job_state("shop", "gone", 1)),
                           ("shop/gone", None),
                           ("shop/twice", job_state("shop", "twice", 1)),
                           ("shop/twice", job_state("shop", "twice", 7, "ENDED"))):
            env.produce("jobs", key.encode(), value)
        env.flush()
        got = {j["key"]: j for j in ctl("-J", "jobs", "list", "--app", "shop",
                                         prefix=env.prefix).json_lines()}
        assert set(got) == {"shop/nightly-report", "shop/twice"}, got
        assert (got["shop/twice"]["runs"], got["shop/twice"]["status"]) == (7, "ENDED")

        # a job's occurrences' results: tasks <job>@<ms>, in any partition
        # (version 2 records, and one of version 1 as an older mooncake wrote them)
        def result(tid, app="shop"):
            r = {"app_id": app, "task_id": tid, "attempt": 1, "due_at": now_ms(),
                 "started_at": now_ms(), "finished_at": now_ms(), "http_status": 200,
                 "outcome": "SUCCEEDED", "error": ""}
            if tid == "nightly-report@1795456800000":
                return encode("Result", r, version=1)
            return encode("Result", {**r, "version": 7, "response_headers": {},
                                     "response_body": b"ok", "response_size": 2})
        for tid in ("nightly-report@1795370400000", "nightly-report@1795456800000",
                    "nightly-report-2@1795370400000", "nightly-report", "other@1"):
            env.produce("results", f"shop/{tid}".encode(), result(tid))
        env.produce("results", b"billing/nightly-report@1", result("nightly-report@1", "billing"))
        env.flush()
        occ = ctl("-J", "results", "--app", "shop", "--job", "nightly-report",
                  prefix=env.prefix).json_lines()
        assert sorted(r["task_id"] for r in occ) == [
            "nightly-report@1795370400000", "nightly-report@1795456800000"], occ
        by_id = {r["task_id"]: r for r in occ}
        assert by_id["nightly-report@1795370400000"]["response_body"] == "ok", occ
        old = by_id["nightly-report@1795456800000"]  # version 1: no answer, no version
        assert old["response_body"] == "" and old["response_size"] is None and \
            old["version"] is None and old["outcome"] == "SUCCEEDED", old
    finally:
        env.stop_all()


if __name__ == "__main__":
    t0 = time.time()
    run([
        test_help_and_usage_errors,
        test_topics_create_and_describe,
        test_submit_with_flags_and_json,
        test_invalid_tasks_are_refused_locally_and_cancel,
        test_submit_and_cancel_in_a_serial_chain,
        test_results_dead_and_requeue_after_a_real_run,
        test_requeue_is_exactly_once_across_a_kill_9,
        test_jobs_put_actions_and_preview,
        test_jobs_list_and_a_jobs_results,
    ])
