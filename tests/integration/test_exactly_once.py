"""Exactly-once and "the client's last word wins" promises, attacked black-box where
the current code breaks them. Each test here reproduces a defect a review measured on
a real broker; they are written to fail until it is fixed, and to pass after.

1. A cancel, or a re-submit, that reaches the wheel after it fired the task early
   (its lead) but before the task is due wins: the wheel recalls the task, the
   executor drops it (Result CANCELLED); a re-submit calls only the new version
   (`mooncake all`, store on).
2. kill -9 of an executor holding 3,000 tasks of one partition (the wheel fires 5 s
   early): every task is still called and has exactly one SUCCEEDED Result.
3. A wheel restarted on a backlog of overdue tasks and stopped (SIGTERM) halfway
   through firing them: after another restart every task has reached `ready`
   exactly once.
4. A re-submit sent while the task's first call is in flight (and failing): the new
   version is called; the old callback is not retried.
5. A cancel sent while the task's call is in flight (and failing): no further call.
6. Topics of 300 partitions: in test_many_partitions.py, which runs alone (it weighs
   on the broker every test shares).
7. An executor partition paused (too many unfinished calls) when a transaction
   aborts resumes after the rewind: later tasks are still called.
8. `mooncake all` stopped and started several times in a row: each start restores
   several roles at once, comes up ready with its far tasks and jobs, and calls each
   far task once.

What is checked is what a user sees: the requests reaching a local endpoint
(harness.CallbackServer), the committed records of ready and results, and /metrics.

Run one test: python3 test_exactly_once.py NAME [NAME...] (a unique part of a name
is enough); without names every test runs, partly side by side (PHASES, at the end)."""
import http.client
import json
import os
import random
import re
import signal
import sys
import time

from confluent_kafka import Consumer, TopicPartition

from harness import (BOOTSTRAP, CallbackServer, Env, cancel_value, decode, now_ms, picked, run,
                     run_side_by_side)
from test_executor import (ALLOW_LOOPBACK, by_key, call, policy, results, start_pipeline,
                           wait_until)
from test_store_wheel import (FAST_FAILOVER, Unsettled, assert_alive, fires, metric,
                              read_settled, send, sleep_until, submit, wait_assigned, wait_metric)

SEED = int(os.environ.get("MOONCAKE_TEST_SEED", 20240611))


def cancel(key):
    app, tid = key.split("/")
    return key, cancel_value(app, tid)


def gw(port, path, body):
    """POST a JSON body to the gateway (no auth); returns (status, parsed answer)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request("POST", path, body=json.dumps(body),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, json.loads(r.read() or b"null")
    finally:
        c.close()


def calls_after(server, prefix, t_ms):
    return [c for c in server.snapshot() if c["path"].startswith(prefix) and c["at"] > t_ms]


def committed(env, group, partitions):
    """The group's committed (offset, metadata) per partition of its input topic."""
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": env.prefix + group})
    try:
        tps = c.committed([TopicPartition(env.topic({"executor": "ready"}.get(group, group)), p)
                           for p in range(partitions)], timeout=10)
        out = []
        for tp in tps:
            try:
                md = tp.metadata or ""
            except UnicodeDecodeError as e:
                # confluent-kafka 2.16 was seen to read past the end of a 3,899-byte
                # metadata string (undecodable bytes from 3,907 on): keep the part
                # that looks like a checkpoint.
                md = re.match(rb"[\x20-\x7e]*", e.object).group(0).decode()
            out.append((tp.offset, md))
        return out
    finally:
        c.close()


# ---- 1 --------------------------------------------------------------------------------------

LEAD_MS = 3000     # the wheel fires this early (see the docstring)
AHEAD_MS = 2500    # cancels and re-submits start this long before the due time


def test_cancel_and_resubmit_after_an_early_fire_win():
    """Promise (README, Semantics and "Lead"): a cancel or a re-submit that reaches the
    wheel after it fired a task early (the lead) but before the task is due still wins;
    the wheel recalls the fired version (mooncake_wheel_recalled_total), the executor
    drops the task it holds (Result CANCELLED); a re-submit calls only the new version.

    `mooncake all` (store on, as by default), tasks submitted and cancelled through the
    gateway. The lead is 3 s instead of the default 300 ms and the cancels/re-submits
    start 2.5 s before due, so that they reach the wheel before the due time even on a
    broker that has just started on a loaded machine (the README allows a cancel that
    arrives within the Kafka hops of the due time to lose): the defect does not depend
    on the lead (the reviewer saw it with 200 ms and cancels 150 ms before due). The test checks from `ready` that the tasks really were fired before
    their cancel or re-submit was sent, i.e. that it exercised the recall. (Cause, as
    read in wheel.c: with a store running, its position markers let the wheel forget a
    key as soon as it has fired it, so nothing is left to recall.)"""
    server = CallbackServer()
    env = Env(partitions=3)
    try:
        p = env.start("all", "--gateway-no-auth", "--wheel-lead-ms", str(LEAD_MS),
                      wait_ready=False, **ALLOW_LOOPBACK)
        env.wait_ready(p, timeout=90)
        port = p.http_port
        # Warm-up: the first transactions of a fresh broker take a second or two.
        st, a = gw(port, "/submit", {"appId": "shop", "uuid": "warm", "delayMs": 1500,
                                     "callback": {"url": server.url("/warm")}})
        assert st == 200, a
        wait_until("the warm-up call", lambda: server.calls_to("/warm"), timeout=30)

        n = 10
        due = now_ms() + 6000
        cancelled = [f"c{i}" for i in range(n)]
        resubmitted = [f"r{i}" for i in range(n)]
        for u in cancelled + resubmitted:
            st, a = gw(port, "/submit", {"appId": "shop", "uuid": u, "expireTime": due,
                                         "callback": {"url": server.url("/old/" + u)}})
            assert st == 200, a
        sleep_until(due - AHEAD_MS)
        sent_at = {}
        new_due = due + 2000
        for u in cancelled:
            sent_at[u] = now_ms()
            st, a = gw(port, "/api/task/done", {"appId": "shop", "uuid": u})
            assert st == 200, a
        for u in resubmitted:
            sent_at[u] = now_ms()
            st, a = gw(port, "/submit", {"appId": "shop", "uuid": u, "expireTime": new_due,
                                         "callback": {"url": server.url("/new/" + u)}})
            assert st == 200, a
        last_sent = max(sent_at.values())
        print(f"     cancels and re-submits sent {due - min(sent_at.values())} to "
              f"{due - last_sent} ms before due", flush=True)
        sleep_until(new_due + 2500)

        called_old = {c["path"][len("/old/"):] for c in server.snapshot()
                      if c["path"].startswith("/old/")}
        called_new = [c["path"][len("/new/"):] for c in server.snapshot()
                      if c["path"].startswith("/new/")]
        # Fired before the cancel / re-submit was sent: the recall case.
        early = set()
        for m in read_settled(env, "ready"):
            if m.key() is None:
                continue  # the wheel's position markers
            kind, body = decode("WheelEntry", m.value())["payload"]
            u = m.key().decode().split("/", 1)[1]
            if kind == "mooncake.Submit" and u in sent_at and \
                    body["task"]["callback"]["url"].endswith("/old/" + u) and \
                    m.timestamp()[1] < sent_at[u]:
                early.add(u)
        got = by_key(results(env))
        outcomes = {u: [r["outcome"] for r in got.get("shop/" + u, [])]
                    for u in cancelled + resubmitted}
        recalled = (metric(env, p, "mooncake_wheel_recalled_total"),
                    metric(env, p, "mooncake_executor_recalled_total"))
        print(f"     fired early, before their cancel/re-submit was sent: "
              f"{len(early & set(cancelled))}/{n} cancelled, "
              f"{len(early & set(resubmitted))}/{n} re-submitted", flush=True)
        print(f"     cancelled tasks called: {len(called_old & set(cancelled))}/{n}; "
              f"re-submitted: old version called {len(called_old & set(resubmitted))}/{n}, "
              f"new version called {len(set(called_new))}/{n} ({len(called_new)} calls); "
              f"recalled_total wheel {recalled[0]}, executor {recalled[1]}", flush=True)
        print(f"     Results of c0: {outcomes['c0']}, of r0: {outcomes['r0']}", flush=True)
        problems = {
            "cancelled but called": sorted(called_old & set(cancelled)),
            "old version of a re-submitted task called": sorted(called_old & set(resubmitted)),
            "new version not called exactly once": sorted(
                u for u in resubmitted if called_new.count(u) != 1),
            "cancelled without a CANCELLED Result (or with a SUCCEEDED one)": sorted(
                u for u in cancelled if "CANCELLED" not in outcomes[u]
                or "SUCCEEDED" in outcomes[u]),
        }
        bad = {k: v for k, v in problems.items() if v}
        assert not bad, "; ".join(f"{k}: {len(v)}/{n} {v}" for k, v in bad.items())
        assert early, "no task was fired before its cancel/re-submit: the recall was not tested"
        assert_alive(env, p)
    finally:
        env.stop_all()
        server.close()


# ---- 2 --------------------------------------------------------------------------------------

def test_executor_kill_9_with_3000_held_tasks_calls_every_one():
    """Promise (README, "What a restart calls again" and Semantics): after kill -9 of the
    executor every task is called (at least once) and has exactly one SUCCEEDED Result.

    One partition, 3,000 tasks due within the same second, fired 5 s early by the wheel
    (lead 5000 ms) so the executor holds all of them; kill -9 while they are held, then a
    restart. The executor's commit metadata lists every unfinished (held) offset, and
    must list all 3,000 within Kafka's 4 KiB (it used to be cut, and the tail lost)."""
    n = 3000
    rng = random.Random(SEED)
    server = CallbackServer()
    env = Env(partitions=1)
    ex_env = {**ALLOW_LOOPBACK, **FAST_FAILOVER}
    try:
        procs = start_pipeline(env, wheel_env={"MOONCAKE_WHEEL_LEAD_MS": 5000},
                               executor_env=ex_env)
        second = now_ms() + 9000
        due = {f"h/{i}": second + rng.randint(0, 999) for i in range(n)}
        send(env, [call(k, d, server.url("/" + k), timeout_ms=10000) for k, d in due.items()])
        ex = procs["executor"]
        wait_metric(env, ex, "mooncake_executor_held", n, deadline_ms=second - 1500)
        time.sleep(1.5)  # a commit with all of them held (reads alone commit once a second)
        full = metric(env, ex, "mooncake_executor_checkpoint_full_total") or 0
        (offset, md), = committed(env, "executor", 1)
        ex.send_signal(signal.SIGKILL)
        ex.wait()
        killed = now_ms()
        print(f"     killed the executor {second - killed} ms before the first due time, "
              f"holding {n}; records given back (checkpoint full) {full:.0f}; committed offset {offset}, "
              f"metadata {len(md)} bytes ({md[:24]}...{md[-12:]})", flush=True)
        ex = env.start("executor", instance="e1", **ex_env)
        wait_assigned(env, ex, 1)

        def settled():
            try:
                got = results(env, timeout=10)
            except Unsettled:
                return None
            ok = {r["key"] for r in got if r["outcome"] == "SUCCEEDED"}
            return got if len(ok) == n or now_ms() > second + 12000 else None

        sleep_until(second + 1000)
        got = wait_until("every Result (or 12 s past due)", settled, timeout=60, interval=1)
        time.sleep(2)  # room for duplicates
        got = results(env)
        succeeded = {}
        for r in got:
            if r["outcome"] == "SUCCEEDED":
                succeeded[r["key"]] = succeeded.get(r["key"], 0) + 1
        called = {c["path"][1:] for c in server.snapshot()}
        never = sorted(set(due) - called)
        no_result = sorted(k for k in due if k not in {r["key"] for r in got})
        twice = sorted(k for k, c in succeeded.items() if c > 1)
        skipped = metric(env, ex, "mooncake_executor_skipped_total")
        print(f"     after the restart: {len(server.snapshot())} calls; never called "
              f"{len(never)}, without any Result {len(no_result)}, several SUCCEEDED "
              f"{len(twice)}; the new executor skipped {skipped:.0f} records as finished",
              flush=True)
        assert not never and not no_result and not twice, \
            f"{len(never)} of {n} tasks never called (e.g. {never[:8]}), {len(no_result)} " \
            f"without any Result, {len(twice)} with several SUCCEEDED Results"
        assert set(succeeded) == set(due), \
            f"without a SUCCEEDED Result: {sorted(set(due) - set(succeeded))[:10]}"
        assert_alive(env, *(p for r, p in procs.items() if r != "executor"), ex)
    finally:
        env.stop_all()
        server.close()


# ---- 3 --------------------------------------------------------------------------------------

def test_wheel_stopped_while_firing_an_overdue_backlog_fires_every_task():
    """Promise (README, "Exactly-once firing"): each task version reaches `ready` exactly
    once, across stops and restarts.

    30,000 tasks on one partition, due at random times within 4 s; the wheel takes them
    all in, is stopped (SIGTERM) until every one of them is overdue, restarted (it
    replays them and fires the backlog, 20,000 per turn), stopped again with SIGTERM as
    soon as it has started firing, and restarted. Due order is not offset order here, so
    a checkpoint frontier written while part of the backlog is unfired covers tasks
    that never fired."""
    n = 30000
    rng = random.Random(SEED + 3)
    lead0 = {"MOONCAKE_WHEEL_LEAD_MS": 0}
    env = Env(partitions=1)
    try:
        router = env.start("router", **lead0)
        wheel = env.start("wheel", instance="w1", **lead0)
        wait_assigned(env, wheel, 1)
        base = now_ms() + 10000
        due = {f"o/{i}": base + rng.randint(0, 4000) for i in range(n)}
        items = [submit(k, d) for k, d in due.items()]
        where = {}
        for i in range(0, n, 10000):
            where.update(zip(list(due)[i:i + 10000], send(env, items[i:i + 10000])))
        wait_metric(env, wheel, "mooncake_wheel_tasks", n, deadline_ms=base - 1000)
        wheel.send_signal(signal.SIGTERM)
        assert wheel.wait(30) == 0, env.log(wheel)
        print(f"     {n} tasks pending in the wheel, stopped {(base - now_ms()) / 1000:.1f}s "
              f"before the first due time", flush=True)
        sleep_until(base + 4000 + 500)  # all overdue

        wheel = env.start("wheel", instance="w1", wait_ready=False, **lead0)
        deadline = time.time() + 60
        fired = 0
        while not fired:
            assert time.time() < deadline and wheel.poll() is None, env.log(wheel)
            try:
                fired = metric(env, wheel, "mooncake_wheel_fired_total") or 0
            except Exception:
                fired = 0
            if not fired:
                time.sleep(0.005)
        wheel.send_signal(signal.SIGTERM)
        assert wheel.wait(30) == 0, env.log(wheel)
        before = len(fires(env))
        print(f"     restarted; SIGTERM once it had fired {fired:.0f}: {before} in ready "
              f"when it stopped", flush=True)
        if before == n:
            print("     (the stop came after the whole backlog had fired: this run did not "
                  "test a stop in the middle of it)", flush=True)

        wheel = env.start("wheel", instance="w1", **lead0)
        wait_metric(env, wheel, "mooncake_wheel_tasks", 0, timeout=60)
        time.sleep(1.5)
        got = fires(env)
        count = {}
        for f in got:
            count[f["key"]] = count.get(f["key"], 0) + 1
        missing = sorted(set(due) - set(count))
        twice = sorted(k for k, c in count.items() if c > 1)
        print(f"     after the last restart: {len(got)} records in ready for {n} tasks; "
              f"{len(missing)} never fired, {len(twice)} fired more than once", flush=True)
        if missing:
            late = sorted(due[k] - base for k in missing)
            print(f"     the missing ones were due +{late[0]}..+{late[-1]} ms (of 0..4000)")
        assert not missing and not twice, \
            f"{len(missing)} of {n} tasks never reached ready (e.g. {missing[:5]}), " \
            f"{len(twice)} reached it more than once"
        assert_alive(env, router, wheel)
    finally:
        env.stop_all()


# ---- 4 and 5 -----------------------------------------------------------------------------------

def _failing_in_flight(path_prefix, delay_s):
    """An endpoint that answers 500 after delay_s on paths under path_prefix, 200 at once
    elsewhere."""
    return CallbackServer(lambda c: (500, {}, b"down", delay_s)
                          if c["path"].startswith(path_prefix) else (200, {}, b"ok"))


RETRY3 = policy(max_attempts=3, initial_backoff_ms=200, max_backoff_ms=500)


def test_a_resubmit_during_a_failing_call_wins_over_its_retry():
    """Promise (README, "Versions and ordering"): for one key the last command the client
    wrote wins; a re-submit reschedules the task (new due time, new callback). Here the
    re-submit is written while the first call is in flight (the endpoint answers 500
    after 3 s): the new version must be called, and the old callback not retried (the
    automatic retry is older than what the client wrote last)."""
    n = 5
    server = _failing_in_flight("/old/", 3.0)
    env = Env(partitions=3)
    try:
        procs = start_pipeline(env)
        due = now_ms() + 2000
        keys = [f"rs/{i}" for i in range(n)]
        send(env, [call(k, due, server.url("/old/" + k), timeout_ms=10000, retry=RETRY3)
                   for k in keys])
        wait_until("the first calls", lambda: len(calls_after(server, "/old/", 0)) >= n,
                   timeout=30, interval=0.05)
        time.sleep(1.0)  # in flight: answered 500 at +3 s
        resent = now_ms()
        new_due = resent + 4000
        send(env, [call(k, new_due, server.url("/new/" + k), timeout_ms=10000, retry=RETRY3)
                   for k in keys])
        # The old attempts would come at ~+3.5 s and ~+7 s after the first calls.
        sleep_until(max(new_due + 3000, resent + 10000))
        old_again = calls_after(server, "/old/", resent)
        new = calls_after(server, "/new/", 0)
        new_keys = {c["path"][len("/new/"):] for c in new}
        print(f"     re-submitted 1 s into the failing first calls: new version called "
              f"{len(new_keys)}/{n} ({len(new)} calls), old callback called again "
              f"{len(old_again)} times after the re-submit (attempts "
              f"{sorted({c['headers']['idempotency-key'].rsplit(':', 1)[1] for c in old_again})})",
              flush=True)
        assert len(new_keys) == n and not old_again, \
            f"new version called for {len(new_keys)}/{n} tasks; the old callback was " \
            f"retried {len(old_again)} times after the re-submit"
        assert_alive(env, *procs.values())
    finally:
        env.stop_all()
        server.close()


def test_a_cancel_during_a_failing_call_stops_its_retry():
    """Promise (README, Semantics, Cancel): a cancel stops the task. A cancel written
    while the task's call is in flight cannot stop that call, but nothing may be called
    after it: the failing call (the endpoint answers 500 after 2 s) must not be retried.
    (The README lists this as a known gap; it is a promise a user expects.)"""
    n = 5
    server = _failing_in_flight("/fail/", 2.0)
    env = Env(partitions=3)
    try:
        procs = start_pipeline(env)
        due = now_ms() + 2000
        keys = [f"cx/{i}" for i in range(n)]
        send(env, [call(k, due, server.url("/fail/" + k), timeout_ms=10000, retry=RETRY3)
                   for k in keys])
        wait_until("the first calls", lambda: len(calls_after(server, "/fail/", 0)) >= n,
                   timeout=30, interval=0.05)
        time.sleep(0.5)  # in flight: answered 500 at +2 s
        cancelled_at = now_ms()
        send(env, [cancel(k) for k in keys])
        # Attempts 2 and 3 would come at ~+2.5 s and ~+5 s after the first calls.
        sleep_until(cancelled_at + 8000)
        after = calls_after(server, "/fail/", cancelled_at)
        print(f"     cancelled 0.5 s into the failing first calls: {len(after)} calls after "
              f"the cancel, to {len({c['path'] for c in after})}/{n} tasks (attempts "
              f"{sorted({c['headers']['idempotency-key'].rsplit(':', 1)[1] for c in after})})",
              flush=True)
        assert not after, f"{len(after)} calls after the cancel, to " \
            f"{len({c['path'] for c in after})} of {n} cancelled tasks"
        assert_alive(env, *procs.values())
    finally:
        env.stop_all()
        server.close()


# ---- 7 --------------------------------------------------------------------------------------

def test_a_partition_paused_at_an_abort_resumes():
    """Promise (README, Executor: "paused until half of them are done"; runtime: an
    abortable error rewinds and carries on): a partition paused for too many unfinished
    calls when a transaction aborts is consumed again after the rewind, and the tasks
    after it are called.

    Made black-box: one partition, --executor-max-unfinished 4, lead 0 (so tasks arrive
    due and count as unfinished). Four tasks due at once: three whose endpoint answers
    after 6 s and one whose first answer is a 500 with a 40 KB body; the executor keeps
    up to 64 KiB of it (--executor-snippet-bytes) in the Attempt, which the retry topic
    (max.message.bytes 16384) refuses, so the transaction aborts while the partition is
    paused. The endpoint answers that task 200 afterwards, so the abort happens once.
    Five more tasks are due 1-3 s later: they must be called."""
    slow_s = 6.0

    def respond(c):
        if c["path"].startswith("/slow/"):
            return 200, {}, b"ok", slow_s
        if c["path"] == "/big" and c["nth"] == 1:
            return 500, {}, b"x" * 40000, 1.0
        return 200, {}, b"ok"

    server = CallbackServer(respond)
    env = Env(partitions=1, topic_config={"retry": {"max.message.bytes": "16384"}})
    try:
        procs = start_pipeline(
            env, wheel_env={"MOONCAKE_WHEEL_LEAD_MS": 0},
            executor_env={"MOONCAKE_EXECUTOR_MAX_UNFINISHED": 4,
                          "MOONCAKE_EXECUTOR_SNIPPET_BYTES": 65536})
        ex = procs["executor"]
        due = now_ms() + 2500
        first = [call("pz/big", due, server.url("/big"), timeout_ms=20000,
                      retry=policy(max_attempts=2, initial_backoff_ms=100))]
        first += [call(f"pz/slow{i}", due, server.url(f"/slow/{i}"), timeout_ms=20000)
                  for i in range(3)]
        later = {f"pz/later{i}": due + 1000 + 500 * i for i in range(5)}
        send(env, first + [call(k, d, server.url("/later/" + k), timeout_ms=20000)
                           for k, d in later.items()])
        paused_seen = aborted = 0
        end = due + 4000
        while now_ms() < end and not aborted:
            paused_seen = max(paused_seen,
                              metric(env, ex, "mooncake_executor_paused_partitions") or 0)
            aborted = metric(env, ex, "mooncake_transactions_aborted_total") or 0
            time.sleep(0.02)
        print(f"     executor paused {paused_seen:.0f} partition(s); transactions aborted "
              f"{aborted:.0f} at +{(now_ms() - due) / 1000:.1f}s after due", flush=True)
        assert aborted, f"no transaction aborted: the test proved nothing\n{env.log(ex)}"
        # Everything would be done by about due + 1 + 6 (abandoned slow calls made
        # again) + 6 s; give it more.
        wait_until_t = due + 22000
        while now_ms() < wait_until_t and \
                len({c["path"] for c in server.snapshot() if c["path"].startswith("/later/")}) \
                < len(later):
            time.sleep(0.5)
        called_later = {c["path"][len("/later/"):] for c in server.snapshot()
                        if c["path"].startswith("/later/")}
        state = {k: metric(env, ex, "mooncake_executor_" + k)
                 for k in ("paused_partitions", "in_flight", "held", "abandoned_total")}
        lag = metric(env, ex, "mooncake_consumer_lag")
        paths = [c["path"] for c in server.snapshot()]
        print(f"     {(wait_until_t - due) / 1000:.0f}s after due: later tasks called "
              f"{len(called_later)}/{len(later)}; /big called {paths.count('/big')}x, slow "
              f"{sum(x.startswith('/slow/') for x in paths)}x; executor {state}, lag {lag}",
              flush=True)
        assert len(called_later) == len(later), \
            f"{len(later) - len(called_later)} of {len(later)} tasks after the abort never " \
            f"called (executor says paused_partitions={state['paused_partitions']}, lag {lag})"
        assert_alive(env, *procs.values())
    finally:
        env.stop_all()
        server.close()


# ---- 8 --------------------------------------------------------------------------------------

def test_restarts_restore_several_roles_at_once():
    """Promise (README, Running a role: a stopped process restores its state from its
    topics): `mooncake all` stopped and started again, several times in a row, comes up
    ready each time with its far tasks and its jobs restored, and calls each far task
    once at its time. Each start restores three roles at the same moment (store, jobs,
    router's layout); under ASan, giving the restore's memory back crashed such a start
    about one time in three."""
    server = CallbackServer()
    env = Env(partitions=3)
    restarts = 3
    try:
        p = env.start("all", "--gateway-no-auth", "--horizon-ms", "5000", wait_ready=False,
                      **ALLOW_LOOPBACK)
        env.wait_ready(p, timeout=90)
        from test_jobs import job, put
        put(env, job("shop", "hourly", server.url("/job"), interval=3600000,
                     start_at=now_ms() + 3600000))
        n = 20
        # The store holds the tasks until due - horizon: the restarts (about a second
        # each, up to a session timeout when a leave is missed) must fit before that.
        due = now_ms() + 45000
        for i in range(n):
            st, a = gw(p.http_port, "/submit", {"appId": "shop", "uuid": f"far{i}",
                                                "expireTime": due,
                                                "callback": {"url": server.url(f"/far{i}")}})
            assert st == 200, a
        env.flush()
        wait_metric(env, p, "mooncake_store_tasks", n, timeout=30)
        wait_metric(env, p, "mooncake_jobs", 1, timeout=30)
        for r in range(restarts):
            t = time.time()
            p.send_signal(signal.SIGTERM)
            assert p.wait(30) == 0, f"exit {p.returncode}:\n{env.log(p)}"
            p = env.start("all", "--gateway-no-auth", "--horizon-ms", "5000",
                          instance=f"i{r + 1}", wait_ready=False, **ALLOW_LOOPBACK)
            env.wait_ready(p, timeout=90)
            restored = [ln for ln in env.log(p, tail=None).splitlines() if " restored " in ln
                        or "msg=restored" in ln]
            print(f"     restart {r + 1}: ready after {time.time() - t:.1f}s, "
                  f"{len(restored)} restores logged", flush=True)
            wait_metric(env, p, "mooncake_store_tasks", n, timeout=30)
            wait_metric(env, p, "mooncake_jobs", 1, timeout=30)
        assert now_ms() < due, "the restarts took longer than the tasks' lead"
        wait_until("every far task called", lambda: len(server.snapshot()) >= n,
                   timeout=(due - now_ms()) / 1000 + 30)
        time.sleep(2)
        paths = sorted(c["path"] for c in server.snapshot())
        assert paths == sorted(f"/far{i}" for i in range(n)), paths
        assert_alive(env, p)
    finally:
        env.stop_all()
        server.close()


ALL = [
    test_cancel_and_resubmit_after_an_early_fire_win,
    test_executor_kill_9_with_3000_held_tasks_calls_every_one,
    test_wheel_stopped_while_firing_an_overdue_backlog_fires_every_task,
    test_a_resubmit_during_a_failing_call_wins_over_its_retry,
    test_a_cancel_during_a_failing_call_stops_its_retry,
    test_a_partition_paused_at_an_abort_resumes,
    test_restarts_restore_several_roles_at_once,
]

# Test 8 spends 35 of its 48 s waiting for its far tasks' due time (45 s ahead, room
# for three restarts that each miss a leave); tests 7, 4, 5 and 1 (about 50 s) run
# beside it, in that order: the ones with the least slack on their Kafka hops (1: a
# cancel 2.5 s before due, 0.5 s after the early fire) come last, when test 8 is past
# its restarts and only waits. Then 2 and 3 one at a time: each loads the machine
# (3,000 and 30,000 tasks) and has a deadline on it.
PHASES = [
    [[test_restarts_restore_several_roles_at_once],
     [test_a_partition_paused_at_an_abort_resumes,
      test_a_resubmit_during_a_failing_call_wins_over_its_retry,
      test_a_cancel_during_a_failing_call_stops_its_retry,
      test_cancel_and_resubmit_after_an_early_fire_win]],
    [[test_executor_kill_9_with_3000_held_tasks_calls_every_one,
      test_wheel_stopped_while_firing_an_overdue_backlog_fires_every_task]],
]
assert sorted(t.__name__ for p in PHASES for lane in p for t in lane) == \
    sorted(t.__name__ for t in ALL), "every test in exactly one lane"

if __name__ == "__main__":
    # Named tests run in order, in this process, as each lane does.
    if sys.argv[1:]:
        run(picked(ALL, sys.argv[1:]))
    run_side_by_side(PHASES, env={"MOONCAKE_TEST_SEED": SEED})
