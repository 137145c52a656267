"""Growing the partition count on a real broker, with every role running:
`mooncakectl partitions grow` moves the tasks of every key whose home changes
(near ones held by the wheel, far ones held by the store) and routing resumes
on the new layout, so a cancel written after the growth - by a client that has
noticed it or by one that has not - still meets its task, and every other
task is called once at its time. Growing `tasks` behind mooncake's back stops
the router, which says why, until the same command completes the growth.
A recurring job keeps firing through the growth, each occurrence once: its
topics (job-commands, jobs) keep their partition count.

What is checked is what a user sees: the calls reaching a local endpoint, the
command's exit status and output, and the router's log and /readyz."""
import json
import os
import subprocess
import threading
import time
import urllib.parse
import urllib.request

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewPartitions

from harness import (BOOTSTRAP, CallbackServer, Env, cancel_value, home_partition, now_ms, run,
                     submit_value, task)
from test_executor import ALLOW_LOOPBACK, wait_until
from test_store_wheel import FAST_FAILOVER, readyz, sleep_until

from test_jobs import job, occurrences, put
from test_mooncakectl import CTL as MOONCAKECTL
OLD, NEW = 3, 6
# Tasks due within 15 s go to the wheel; later ones wait in the store.
ROLE_ENV = {"MOONCAKE_HORIZON_MS": 15000, **ALLOW_LOOPBACK, **FAST_FAILOVER}


def mooncakectl(env, *args, timeout=180):
    return subprocess.run([MOONCAKECTL, "-b", BOOTSTRAP, "-p", env.prefix, *args],
                          capture_output=True, text=True, timeout=timeout)


def producer(partitions_seen):
    """A client producer whose metadata says the tasks topic has partitions_seen
    partitions: it places keys with murmur2 over that count (a client that
    has, or has not yet, noticed a growth)."""
    return Producer({"bootstrap.servers": BOOTSTRAP, "enable.idempotence": True,
                     "linger.ms": 5}), partitions_seen


def send(env, prod, items):
    p, n = prod
    for key, value in items:
        p.produce(env.topic("tasks"), key=key, value=value, partition=home_partition(key, n))
    assert p.flush(30) == 0


def called(server, path):
    return len(server.calls_to(path))


def test_grow_with_tasks_near_far_and_cancels_after():
    server = CallbackServer()
    env = Env(partitions=OLD)
    try:
        env.start("all", "--gateway-no-auth", wait_ready=False, **ROLE_ENV)
        env.wait_ready(env.procs[0], timeout=90)
        old = producer(OLD)
        t0 = now_ms()
        job_start = (t0 // 1000 + 2) * 1000
        put(env, job("g", "every-second", server.url("/job"), start_at=job_start,
                     threshold=600000))
        env.flush()
        due = {}
        keys = [f"g/k{i}" for i in range(60)]
        for i, key in enumerate(keys):
            # Near (held by the wheel at the growth) and far (held by the
            # store then, handed to the wheel after it).
            due[key] = t0 + (17000 if i % 2 else 40000) + i * 10
        send(env, old, [(k, submit_value(task("g", k[2:], d, url=server.url("/" + k))))
                        for k, d in due.items()])
        moved = [k for k in keys if home_partition(k, OLD) != home_partition(k, NEW)]
        assert len(moved) >= 10, moved
        time.sleep(2)
        # A transaction left open on an old partition of tasks (a jobs
        # instance killed inside one), two tasks submitted behind it before the
        # growth, and one of them cancelled, during the growth, by a client that
        # has noticed it: both were written before the growth, so the cancel is
        # the later command and wins. The growth waits for the transaction to
        # end before routing resumes (the new home would forget the cancel's
        # floor seconds after it), and ends once the transaction is aborted.
        q = home_partition(moved[0], OLD)
        behind = [k for k in (f"g/b{i}" for i in range(100))
                  if home_partition(k, OLD) == q and home_partition(k, NEW) != q][:2]
        zombie = Producer({"bootstrap.servers": BOOTSTRAP, "transactional.id": env.prefix + "z",
                           "transaction.timeout.ms": 60000})
        zombie.init_transactions(30)
        zombie.begin_transaction()
        zombie.produce(env.topic("tasks"), key=b"g/zombie", partition=q, value=submit_value(
            task("g", "zombie", t0 + 25000, url=server.url("/g/zombie"))))
        assert zombie.flush(30) == 0
        for k in behind:
            due[k] = t0 + 25000
        send(env, old, [(k, submit_value(task("g", k[2:], due[k], url=server.url("/" + k))))
                        for k in behind])
        grow = subprocess.Popen([MOONCAKECTL, "-b", BOOTSTRAP, "-p", env.prefix, "partitions",
                                 "grow", "--to", str(NEW), "--timeout", "120"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        said, printed = [], []
        readers = [threading.Thread(target=lambda: said.extend(grow.stderr), daemon=True),
                   threading.Thread(target=lambda: printed.extend(grow.stdout), daemon=True)]
        for t in readers:
            t.start()
        admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
        wait_until("tasks grown", lambda: len(admin.list_topics(env.topic("tasks"), timeout=10)
                                              .topics[env.topic("tasks")].partitions) == NEW, 60)
        send(env, producer(NEW), [(behind[0], cancel_value("g", behind[0][2:]))])
        wait_until("mooncakectl waiting for the open transaction",
                   lambda: grow.poll() is not None or
                   any("waiting for a transaction open" in line for line in said), 90)
        assert grow.poll() is None, \
            f"grew with a transaction open below the split:\n{''.join(said)}"
        zombie.abort_transaction(30)  # what it wrote is never called
        due["g/zombie"] = t0 + 25000
        grow.wait(150)
        for t in readers:
            t.join(10)
        r = subprocess.CompletedProcess(grow.args, grow.returncode, "".join(printed),
                                        "".join(said))
        assert r.returncode == 0, f"exit {r.returncode}:\n{r.stdout}\n{r.stderr}"
        assert f"grown from {OLD} to {NEW}" in r.stdout, r.stdout
        grown_at = now_ms()
        print(f"     grew {OLD} -> {NEW} in {(grown_at - t0) / 1000 - 2:.1f}s; "
              f"{len(moved)} of {len(keys)} keys moved home", flush=True)
        assert grown_at < min(due.values()) - 2000, "the growth took too long for this test"
        # Cancels after the growth: half from a client that has noticed it,
        # half from one that has not (still placing keys over 3 partitions).
        cancelled = moved[::2]
        new = producer(NEW)
        send(env, new, [(k, cancel_value("g", k[2:])) for k in cancelled[::2]])
        send(env, old, [(k, cancel_value("g", k[2:])) for k in cancelled[1::2]])
        # And a task submitted after it.
        after = "g/after"
        due[after] = now_ms() + 3000
        send(env, new, [(after, submit_value(task("g", "after", due[after],
                                                  url=server.url("/" + after))))])
        # Keys submitted after the growth by the client that noticed it, then
        # cancelled by the one that has not: the cancel is the later command.
        racing = [k for k in (f"g/r{i}" for i in range(40))
                  if home_partition(k, OLD) != home_partition(k, NEW)][:5]
        for k in racing:
            due[k] = now_ms() + 6000
        send(env, new, [(k, submit_value(task("g", k[2:], due[k], url=server.url("/" + k))))
                        for k in racing])
        time.sleep(1)
        send(env, old, [(k, cancel_value("g", k[2:])) for k in racing])
        cancelled = cancelled + racing + [behind[0], "g/zombie"]
        sleep_until(max(due.values()) + 3000)
        wrong = {k: called(server, "/" + k) for k in due
                 if called(server, "/" + k) != (0 if k in cancelled else 1)}
        assert not wrong, f"calls per task not as expected: {sorted(wrong.items())[:10]}"
        late = [(k, round(c["at"] - due[k])) for k in due for c in server.calls_to("/" + k)
                if c["at"] > due[k] + 2000]
        assert not late, f"called late: {late[:10]}"
        print(f"     {len(due) - len(cancelled)} tasks called once on time, "
              f"{len(cancelled)} cancelled after the growth never called ({len(racing)} of them "
              "submitted by a client that had noticed it, cancelled by one that had not)",
              flush=True)
        subs, _, _ = occurrences(env, "every-second")
        twice = [a for a, n in subs.items() if n != 1]
        gaps = [a for a in range(job_start, max(subs) + 1, 1000) if a not in subs]
        assert not twice and not gaps, (twice, gaps)
        assert max(subs) > grown_at + 10000, "the job goes on after the growth"
        called_at = {int(c["headers"]["mooncake-scheduled-at"]) for c in server.calls_to("/job")}
        uncalled = [a for a in subs if a < now_ms() - 3000 and a not in called_at]
        assert not uncalled, f"occurrences due and not called: {uncalled}"
        print(f"     a job every second fired {len(subs)} occurrences through the growth, "
              "each once", flush=True)
        # The view (in `mooncake all`) answers for every key after the growth, at
        # its new home: what was called succeeded, what was cancelled is cancelled
        # (the zombie's Submit was aborted: never a task), and a list and the
        # counts of the app agree.
        port = env.procs[0].http_port

        def get(path):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as r:
                return json.loads(r.read())["data"]

        want = {k: "cancelled" if k in cancelled else "succeeded" for k in due if k != "g/zombie"}
        deadline = time.time() + 30
        while True:
            said = {k: get(f"/api/task?appId=g&uuid={urllib.parse.quote(k[2:])}")["state"]
                    for k in want}
            if said == want or time.time() > deadline:
                break
            time.sleep(1)
        assert said == want, {k: (said[k], w) for k, w in want.items() if said[k] != w}
        # The job's occurrences keep succeeding meanwhile: a count taken before the list
        # and one taken after it bound the list's length (succeeded only grows).
        before = get("/api/stats?appId=g")
        listed = get("/api/tasks?appId=g&state=succeeded&limit=1000")["tasks"]
        succeeded = {t["key"] for t in listed}
        assert {k for k, w in want.items() if w == "succeeded"} <= succeeded
        counts = get("/api/stats?appId=g")
        assert before["tasks"]["succeeded"] <= len(succeeded) <= counts["tasks"]["succeeded"], \
            (before, counts, len(succeeded))
        assert counts["tasks"]["cancelled"] == sum(w == "cancelled" for w in want.values())
        print(f"     the view answers all {len(want)} keys after the growth", flush=True)
        r = mooncakectl(env, "partitions", "grow", "--to", str(NEW))
        assert r.returncode == 0 and "already" in r.stderr, (r.returncode, r.stderr)
        r = mooncakectl(env, "partitions", "grow", "--to", str(OLD))
        assert r.returncode == 2 and "can only grow" in r.stderr, (r.returncode, r.stderr)
    finally:
        env.stop_all()
        server.close()


def test_growing_tasks_behind_mooncakes_back_stops_routing_until_grown():
    server = CallbackServer()
    env = Env(partitions=OLD)
    try:
        p = env.start("all", "--gateway-no-auth", wait_ready=False, **ROLE_ENV)
        env.wait_ready(p, timeout=90)
        send(env, producer(OLD), [("g/before", submit_value(
            task("g", "before", now_ms() + 1000, url=server.url("/before"))))])
        wait_until("the first call", lambda: server.calls_to("/before"), timeout=30)
        admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
        for f in admin.create_partitions([NewPartitions(env.topic(t), NEW)
                                          for t in env.TOPICS
                                          if t not in env.SINGLE_PARTITION]).values():
            f.result()
        # The router reads the partition count every two seconds; what it
        # routes before it notices still follows the layout (3 partitions).
        wait_until("the router to say it stopped",
                   lambda: "routing stopped: tasks does not have the layout" in env.log(p, None),
                   timeout=60)
        send(env, producer(NEW), [("g/after", submit_value(
            task("g", "after", now_ms() + 1000, url=server.url("/after"))))])
        time.sleep(3)
        assert not server.calls_to("/after"), "routed although the layout does not match"
        status, body = readyz(p, body=True)
        assert status == 503 and "router" in body, (status, body)
        r = mooncakectl(env, "partitions", "grow", "--to", str(NEW), "--timeout", "120")
        assert r.returncode == 0, f"exit {r.returncode}:\n{r.stdout}\n{r.stderr}"
        wait_until("the task submitted after the growth", lambda: server.calls_to("/after"),
                   timeout=30)
        print("     routing stopped with a growth behind its back; mooncakectl completed it, "
              "and the waiting task was called", flush=True)
    finally:
        env.stop_all()
        server.close()


if __name__ == "__main__":
    run([
        test_grow_with_tasks_near_far_and_cancels_after,
        test_growing_tasks_behind_mooncakes_back_stops_routing_until_grown,
    ])
