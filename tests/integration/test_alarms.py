"""Alarms end to end on the real broker: what the owner of an app's alarm webhook sees.

1. Tasks that fail for good (404, and 500 until their attempts run out) while `mooncake all`
   is killed with -9 and restarted: the webhook is called with signed JSON alarms, at most
   one per interval, the first within seconds of the first dead letter, and the counts of
   the distinct alarms add up to exactly the app's dead letters (none counted twice, none
   left out); a key listed in one alarm is listed in no other. An app without a webhook gets
   none. (A failing recurring job named in the alarm with its count of failed occurrences is
   tested in tests/unit/test_alarms_sim.c.)
2. A webhook that never answers 2xx: its alarm call is retried and dead-lettered like any
   task, and that dead letter raises no alarm of its own.

Run one test: python3 test_alarms.py NAME [NAME...]."""
import base64
import hashlib
import hmac
import json
import signal
import time

from harness import CallbackServer, Env, decode, home_partition, now_ms, run, submit_value, task
from test_executor import ALLOW_LOOPBACK

INTERVAL_MS = 3000
SECRET = base64.b64encode(b"alarm-test-secret-0123456789abcdef").decode()


def submit(env, app, tid, url, due=None, **extra):
    t = task(app, tid, due or now_ms(), url=url, **extra)
    key = f"{app}/{tid}".encode()
    env.produce("tasks", key, submit_value(t), partition=home_partition(key, env.partitions))


def alarms_of(server, path="/alarm"):
    """The distinct alarms the webhook received (a repeated call of one alarm task, after a
    kill, counts once), by sentAt, and how many calls there were."""
    calls = server.calls_to(path)
    by_task = {}
    for c in calls:
        by_task.setdefault(c["headers"]["webhook-id"], c)
    return sorted((json.loads(c["body"]) for c in by_task.values()),
                  key=lambda a: a["sentAt"]), calls


def task_of(dead_letter_value):
    """The task a dead letter carries (a union of records decodes as (name, record)), or {}."""
    t = decode("DeadLetter", dead_letter_value).get("task")
    return t[1] if isinstance(t, tuple) else (t or {})


def dead_letters(env, app):
    out = []
    for m in env.read_all("dead", idle=2.0):
        t = task_of(m.value())
        if t and t["app_id"] == app and not t["task_id"].startswith("mooncake-alarm-"):
            out.append(f"{t['app_id']}/{t['task_id']}")
    return out


def wait_for_count(server, want, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = sum(a["deadLetters"] for a in alarms_of(server)[0])
        if got >= want:
            return got
        time.sleep(0.5)
    return sum(a["deadLetters"] for a in alarms_of(server)[0])


def check_signature(call):
    """Standard Webhooks: v1,<base64 HMAC-SHA256 of id.timestamp.body> with the app's key."""
    h = call["headers"]
    msg = f"{h['webhook-id']}.{h['webhook-timestamp']}.".encode() + call["body"]
    want = base64.b64encode(hmac.new(base64.b64decode(SECRET), msg, hashlib.sha256).digest())
    return f"v1,{want.decode()}" in h["webhook-signature"].split(" ")


def test_each_dead_letter_is_counted_in_exactly_one_alarm_across_kill_9():
    def respond(call):
        if call["path"].startswith("/gone"):
            return (404, {}, b"no such order")
        if call["path"].startswith("/broken"):
            return (500, {}, b"boom")
        return (200, {}, b"ok")
    server = CallbackServer(respond)
    env = Env(partitions=3)
    flags = {**ALLOW_LOOPBACK,
             "MOONCAKE_ALARM_WEBHOOKS": f"shop={server.url('/alarm')}",
             "MOONCAKE_ALARM_INTERVAL_MS": str(INTERVAL_MS),
             "MOONCAKE_APP_SECRETS": f"shop=whsec_{SECRET}",
             "MOONCAKE_RETRY_MAX_ATTEMPTS": "2",
             "MOONCAKE_RETRY_INITIAL_BACKOFF_MS": "200"}
    try:
        p = env.start("all", "--gateway-no-auth", **flags)
        t0 = time.time()
        for i in range(30):
            submit(env, "shop", f"gone-{i}", server.url(f"/gone/{i}"))
        for i in range(10):
            submit(env, "shop", f"broken-{i}", server.url(f"/broken/{i}"))
        for i in range(5):  # no webhook for this app: no alarm
            submit(env, "other", f"gone-{i}", server.url(f"/gone/o{i}"))
        env.flush()
        deadline = time.time() + 30
        while time.time() < deadline and not server.calls_to("/alarm"):
            time.sleep(0.1)
        first_s = time.time() - t0
        print(f"     first alarm {first_s:.1f}s after 40 failing tasks were sent", flush=True)
        assert server.calls_to("/alarm"), "no alarm within 30 s"
        # More dead letters, and a kill -9 while they are being gathered.
        for i in range(30, 60):
            submit(env, "shop", f"gone-{i}", server.url(f"/gone/{i}"))
        env.flush()
        time.sleep(1.5)
        p.send_signal(signal.SIGKILL)
        p.wait()
        p = env.start("all", "--gateway-no-auth", **flags)
        for i in range(60, 80):
            submit(env, "shop", f"gone-{i}", server.url(f"/gone/{i}"))
        env.flush()
        dead = dead_letters(env, "shop")
        deadline = time.time() + 60
        while time.time() < deadline and len(dead) < 90:
            time.sleep(1)
            dead = dead_letters(env, "shop")
        got = wait_for_count(server, len(dead), 40)
        time.sleep(INTERVAL_MS / 1000 + 2)  # nothing more may come
        alarms, calls = alarms_of(server)
        counted = sum(a["deadLetters"] for a in alarms)
        listed = [line["key"] for a in alarms for line in a["first"]]
        gaps = [b["sentAt"] - a["sentAt"] for a, b in zip(alarms, alarms[1:])]
        jobs = {j["jobId"] for a in alarms for j in a["jobs"]}
        print(f"     {len(dead)} dead letters of shop; {len(alarms)} alarms ({len(calls)} calls) "
              f"counting {counted} ({got} when first seen complete); counts "
              f"{[a['deadLetters'] for a in alarms]}; gaps {gaps} ms", flush=True)
        assert len(dead) == 90, f"{len(dead)} dead letters, 90 expected"
        assert counted == len(dead), f"alarms count {counted} dead letters of {len(dead)}"
        assert len(listed) == len(set(listed)), "a key listed in two alarms"
        assert set(listed) <= set(dead), "an alarm lists a key that is no dead letter"
        assert all(g >= INTERVAL_MS for g in gaps), f"alarms closer than the interval: {gaps}"
        assert all(a["appId"] == "shop" and a["type"] == "mooncake.alarm" for a in alarms)
        assert all(len(a["first"]) == min(10, a["deadLetters"]) for a in alarms)
        assert not jobs, jobs
        assert all(check_signature(c) for c in calls), "an alarm call is not signed"
        assert all(c["headers"]["content-type"] == "application/json" for c in calls)
        reasons = {line["reason"].split(":")[0] for a in alarms for line in a["first"]}
        print(f"     reasons listed: {sorted(reasons)}", flush=True)
    finally:
        env.stop_all()
        server.close()


def test_a_dead_webhook_is_retried_and_raises_no_alarm_about_itself():
    server = CallbackServer(lambda call: (503, {}, b"down"))
    env = Env(partitions=2)
    flags = {**ALLOW_LOOPBACK,
             "MOONCAKE_ALARM_WEBHOOKS": f"*={server.url('/alarm')}",
             "MOONCAKE_ALARM_INTERVAL_MS": str(INTERVAL_MS),
             "MOONCAKE_RETRY_MAX_ATTEMPTS": "3",
             "MOONCAKE_RETRY_INITIAL_BACKOFF_MS": "200"}
    try:
        env.start("all", "--gateway-no-auth", **flags)
        for i in range(3):
            submit(env, "shop", f"t{i}", server.url(f"/task/{i}"),
                   retry={"max_attempts": 1, "initial_backoff_ms": 100, "multiplier": 1.0,
                          "max_backoff_ms": 100})
        env.flush()
        deadline = time.time() + 40
        alarm_dead = []
        while time.time() < deadline and not alarm_dead:
            time.sleep(1)
            alarm_dead = [m for m in env.read_all("dead", idle=1.0)
                          if task_of(m.value()).get("task_id", "")
                          .startswith("mooncake-alarm-")]
        time.sleep(INTERVAL_MS / 1000 + 3)
        alarms, calls = alarms_of(server)
        attempts = sorted(int(c["headers"]["idempotency-key"].rsplit(":", 1)[1]) for c in calls)
        print(f"     alarm calls {len(calls)} (attempts {attempts}) of {len(alarms)} alarms; "
              f"dead letters of alarm calls {len(alarm_dead)}", flush=True)
        assert len(alarms) == 1 and alarms[0]["deadLetters"] == 3, alarms
        assert attempts == [1, 2, 3], "the alarm call is retried as any task"
        assert len(alarm_dead) == 1, "the alarm call is dead-lettered once"
    finally:
        env.stop_all()
        server.close()


if __name__ == "__main__":
    run([test_each_dead_letter_is_counted_in_exactly_one_alarm_across_kill_9,
         test_a_dead_webhook_is_retried_and_raises_no_alarm_about_itself])
