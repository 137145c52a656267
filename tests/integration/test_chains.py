"""Serial chains on a real broker, behind the jobs role, router, wheel,
executor and retry.

Tasks added to a chain (an AddLink on job-commands, keyed app_id/ordering_key)
are called one at a time, in due order (ties in the order added), each only
after the previous one's final outcome: success, failure for good, or retries
run out. A CancelLink removes a waiting link; a bad link is dead-lettered.
Through kill -9 of the jobs role and of the executor in the middle of the
chains, every link still runs, no two links of a chain are ever called at
once, and the order holds.

What is checked is what a user sees: the calls that reach a local endpoint
(when each arrived, when it was answered), the Results and the dead letters.

Run one test: python3 test_chains.py NAME [NAME...]."""
import random
import signal
import time
import uuid

from harness import CallbackServer, Env, decode, encode, home_partition, now_ms, run, task
from test_executor import ALLOW_LOOPBACK
from test_jobs import final_results
from test_kafka_targets import wait_for

SHARED = {}
JOBS_ENV = {"MOONCAKE_JOBS_AHEAD_MS": "1000"}


def pipeline():
    """The shared (env, procs, server): every role needed, one instance each,
    started by the first test that asks; the endpoint answers after a short
    while, and a path ending in /fail answers 500."""
    if not SHARED:
        env = Env()

        def respond(call):
            delay = random.uniform(0.02, 0.15)
            if call["path"].endswith("/fail"):
                return 500, {}, b"no", delay
            return 200, {}, b"ok", delay

        server = CallbackServer(respond)
        procs = {"jobs": env.start("jobs", instance="j1", **JOBS_ENV),
                 "router": env.start("router"),
                 "wheel": env.start("wheel", instance="w1"),
                 "executor": env.start("executor", instance="e1", **ALLOW_LOOPBACK),
                 "retry": env.start("retry", instance="r1")}
        SHARED.update(env=env, procs=procs, server=server)
    return SHARED["env"], SHARED["procs"], SHARED["server"]


def restart(role, **extra):
    """kill -9 of a role, then a new one under the same instance id."""
    env, procs, _ = pipeline()
    procs[role].send_signal(signal.SIGKILL)
    procs[role].wait()
    procs[role] = env.start(role, instance=role[0] + "1", **extra)


def send(env, app, key, payload):
    k = f"{app}/{key}"
    env.produce("job-commands", k.encode(), encode("JobCommand", {"payload": payload}),
                partition=home_partition(k.encode(), env.partitions))


def add_link(env, app, chain, t):
    send(env, app, chain, ("mooncake.AddLink", {"ordering_key": chain, "task": t}))


def cancel_link(env, app, chain, tid):
    send(env, app, chain, ("mooncake.CancelLink", {"app_id": app, "ordering_key": chain,
                                                   "task_id": tid, "requested_at": now_ms()}))


def link_task(server, app, tid, due, fail=False):
    t = task(app, tid, due, url=server.url(f"/{tid}" + ("/fail" if fail else "")))
    t["retry"] = {"max_attempts": 2, "initial_backoff_ms": 100, "multiplier": 2.0,
                  "max_backoff_ms": 200}
    return t


def calls_by_task(server, prefix):
    """task id -> its calls, in arrival order (a failed one is called twice)."""
    out = {}
    for c in sorted(server.snapshot(), key=lambda c: c["at"]):
        tid = c["path"].lstrip("/").split("/")[0]
        if tid.startswith(prefix):
            out.setdefault(tid, []).append(c)
    return out


def check_chain(calls, links):
    """links: [(task id, due)] in the order added. Every link was called; no
    two links' calls overlap (a link's own retries and repeats may follow one
    another); the first calls come in due order, ties in the order added; none
    before its due time."""
    for tid, _ in links:
        assert tid in calls, f"{tid} was never called"
    order = {tid: (due, i) for i, (tid, due) in enumerate(links)}
    spans = []
    for tid, cs in calls.items():
        for c in cs:
            assert c["responded_at"] is not None, f"{tid}: a call was never answered"
            spans.append((c["at"], c["responded_at"], tid))
    spans.sort()
    for (a0, a1, at), (b0, b1, bt) in zip(spans, spans[1:]):
        assert at == bt or a1 <= b0, (
            f"{at} [{a0:.0f}, {a1:.0f}] and {bt} [{b0:.0f}, {b1:.0f}] were called at once")
    first = sorted(calls, key=lambda tid: calls[tid][0]["at"])
    assert first == sorted(first, key=lambda tid: order[tid]), (
        f"called in the order {first}, not by due time {sorted(first, key=lambda t: order[t])}")
    for tid, due in links:
        assert calls[tid][0]["at"] >= due - 5, f"{tid} called {due - calls[tid][0]['at']:.0f} ms early"


def test_links_run_one_at_a_time_in_due_order():
    """Three chains of 15 links due within 4 s (every fifth at the same ms as
    the one before, a few failing for good after two attempts), plus a task of
    the same app outside any chain: each chain's links are called one at a
    time in due order, each ends with one final Result, and the unchained task
    runs on its own, on time."""
    env, _, server = pipeline()
    run_id = uuid.uuid4().hex[:6]
    base = now_ms() + 3000
    chains = {}
    for c in range(3):
        chain = f"contract-{run_id}-{c}"
        links = []
        for i in range(15):
            tid = f"{run_id}c{c}-{i:02d}"
            due = links[-1][1] if i % 5 == 4 else base + random.randint(0, 4000)
            links.append((tid, due))
            add_link(env, "shop", chain, link_task(server, "shop", tid, due, fail=i % 7 == 3))
        chains[chain] = links
    alone = task("shop", f"{run_id}-alone", base + 500, url=server.url(f"/{run_id}-alone"))
    env.produce("tasks", f"shop/{run_id}-alone".encode(),
                encode("Command", {"payload": ("mooncake.Submit", {"task": alone})}))
    wait_for("every link's final Result",
             lambda: len(final_results(env, run_id + "c")) == 45, 120)
    results = final_results(env, run_id + "c")
    assert all(len(v) == 1 for v in results.values()), "one final Result per link"
    assert sum(v == ["EXHAUSTED"] for v in results.values()) == 6, results
    for c, (chain, links) in enumerate(chains.items()):
        check_chain(calls_by_task(server, f"{run_id}c{c}-"), links)
    alone_calls = calls_by_task(server, f"{run_id}-alone")[f"{run_id}-alone"]
    assert len(alone_calls) == 1 and alone_calls[0]["at"] < base + 1500, "the unchained task ran alone"


def test_chains_hold_through_kill_9():
    """Two chains of 30 links due over 8 s; the jobs role and then the
    executor are killed (-9) and restarted mid-way. Every link is still
    called, the links never overlap, and the order holds."""
    env, _, server = pipeline()
    run_id = uuid.uuid4().hex[:6]
    base = now_ms() + 3000
    chains = {}
    for c in range(2):
        chain = f"k9-{run_id}-{c}"
        links = [(f"{run_id}k{c}-{i:02d}", base + random.randint(0, 8000)) for i in range(30)]
        for tid, due in links:
            add_link(env, "shop", chain, link_task(server, "shop", tid, due))
        chains[chain] = links
    time.sleep(5)
    restart("jobs", **JOBS_ENV)
    time.sleep(3)
    restart("executor", **ALLOW_LOOPBACK)
    wait_for("every link's final Result",
             lambda: len(final_results(env, run_id + "k")) == 60, 180)
    for c, (chain, links) in enumerate(chains.items()):
        check_chain(calls_by_task(server, f"{run_id}k{c}-"), links)


def test_cancel_and_bad_links():
    """A CancelLink removes a waiting link: it is never called, and the chain
    goes on without it. A link without a callback, and one whose key is not
    app_id/ordering_key, are dead-lettered with the reason."""
    env, _, server = pipeline()
    run_id = uuid.uuid4().hex[:6]
    base = now_ms() + 4000
    chain = f"cancel-{run_id}"
    links = [(f"{run_id}x-{i}", base + 300 * i) for i in range(4)]
    for tid, due in links:
        add_link(env, "shop", chain, link_task(server, "shop", tid, due))
    cancel_link(env, "shop", chain, links[2][0])
    bad = link_task(server, "shop", f"{run_id}x-bad", base)
    bad["callback"]["url"] = ""
    add_link(env, "shop", chain, bad)
    k = f"shop/other-{run_id}"
    env.produce("job-commands", k.encode(),
                encode("JobCommand", {"payload": ("mooncake.AddLink", {
                    "ordering_key": chain, "task": link_task(server, "shop", f"{run_id}x-key",
                                                             base)})}),
                partition=home_partition(k.encode(), env.partitions))
    kept = [links[0], links[1], links[3]]
    wait_for("the kept links' Results", lambda: len(final_results(env, run_id + "x-")) == 3, 60)
    time.sleep(2)
    calls = calls_by_task(server, run_id + "x-")
    assert links[2][0] not in calls, "the cancelled link was called"
    check_chain(calls, kept)
    reasons = [decode("DeadLetter", m.value())["reason"] for m in env.read_all("dead", idle=3.0)
               if chain.encode() in (m.key() or b"") or f"other-{run_id}".encode() in (m.key() or b"")]
    assert any("invalid chain link" in r and "callback" in r for r in reasons), reasons
    assert any("app_id/ordering_key" in r for r in reasons), reasons


def test_cancel_a_released_link():
    """A CancelLink of a link already released to tasks (within the jobs role's
    lead of its due time) stops its call; the link ends with a CANCELLED
    Result, and the next link runs at its own due time, not after a bound."""
    env, _, server = pipeline()
    run_id = uuid.uuid4().hex[:6]
    due = now_ms() + 4000
    chain = f"released-{run_id}"
    first, second = f"{run_id}r-0", f"{run_id}r-1"
    add_link(env, "shop", chain, link_task(server, "shop", first, due))
    add_link(env, "shop", chain, link_task(server, "shop", second, due + 500))
    # Released 1 s before it is due (MOONCAKE_JOBS_AHEAD_MS): cancel it after that.
    time.sleep(max(0, (due - 600 - now_ms()) / 1000))
    cancel_link(env, "shop", chain, first)
    wait_for("both Results", lambda: len(final_results(env, run_id + "r-")) == 2, 60)
    results = final_results(env, run_id + "r-")
    assert results[first] == ["CANCELLED"], results
    calls = calls_by_task(server, run_id + "r-")
    assert first not in calls, "the cancelled link was called"
    assert second in calls and calls[second][0]["at"] < due + 500 + 3000, (
        "the next link waited for a bound instead of the cancelled link's Result")


if __name__ == "__main__":
    try:
        run([test_links_run_one_at_a_time_in_due_order, test_chains_hold_through_kill_9,
             test_cancel_and_bad_links, test_cancel_a_released_link])
    finally:
        if SHARED:
            SHARED["server"].close()
            SHARED["env"].stop_all()
