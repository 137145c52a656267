"""Rolls and scaling under load, as the chart runs the roles: one StatefulSet
per role, its replicas separate processes named <role>-0, <role>-1, ... (the pod name is
the instance id: the transactional.id and the static group.instance.id). While ~300
tasks/s are written to `tasks` (due 0.5-20 s ahead, a quarter within the 5 s horizon, the
rest through the store), each scenario changes the running set and then checks what a
user sees at the endpoint: every task called exactly once, and on time.

1. A roll with stable ids: every StatefulSet replaces its replicas one at a time, the
   highest ordinal first: SIGTERM (the executor drains its calls in flight, every role
   commits and leaves its group), wait for the exit, start again under the same id, wait
   until it answers /readyz 200, then the next one. The StatefulSets roll at the same
   time, as a `helm upgrade` rolls them.
2. Scale-out: router-2, wheel-2 and executor-2 start beside two of each.
3. Scale-in: router-2, wheel-2 and executor-2 of three each get SIGTERM.
4. A replacement under a new id (a node lost for good): kill -9 of executor-1 and a new
   replica executor-9.

1-3 require 0 lost, 0 repeated calls, and lateness (arrival at the endpoint - due) p99
<= 500 ms over all tasks (<= 2 s over those due during the change; on a release build,
see the limits below); 4 requires 0 lost and
states its bounds on repeats and lateness (its docstring).

Roles: router, store, wheel, executor and retry (what tasks due within 20 s need; jobs,
alarms and view play no part in them), chart defaults for what the issue is about
(commit interval 100 ms, session and transaction timeouts 10 s, drain 10 s, wheel lead
300 ms). Each scenario prints one summary line, and a timeline of the changes (ms from
the scenario's start); a failure lists the lost and repeated tasks with their calls and,
where it can be told, the executor that made each call (the caller's TCP port, mapped to
its process through /proc; executor-1#2 is the second process under executor-1).

Run one scenario: python3 test_deploys.py NAME [NAME...] (a unique part of a name is
enough, e.g. roll, out, in, new_id); without names all four run, one after another."""
import os
import random
import re
import signal
import sys
import threading
import time

from harness import (SOURCE_DIR, CallbackServer, Env, home_partition, now_ms, picked, run,
                     submit_value, task)
from test_executor import ALLOW_LOOPBACK, percentile, wait_until
from test_store_wheel import (EARLY_TOLERANCE_MS, Unsettled, assert_alive, fires, metric, readyz,
                              sleep_until)

SEED = int(os.environ.get("MOONCAKE_TEST_SEED", time.time()))
PARTITIONS = 6
RATE = 300                       # tasks written per second, for the whole scenario
DUE_MS = (500, 20000)            # due this long after they are written
HORIZON_MS = 5000
COMMIT_INTERVAL_MS = 100         # the chart's config.commitIntervalMs (the harness uses 50)
# Lateness limits. The promise (p99 <= 500 ms over the run; the few hundred tasks due
# during a change, whose p99 is a handful of them, within 2 s) holds for a release build
# (python3 test_deploys.py). The suite runs this file on the Debug ASan+UBSan build beside
# another test, several times slower and measured there at p99 375-1152 ms overall and
# 644-1683 ms during a roll: there the limits only catch a stall (partitions standing
# still for seconds), not a figure, which a benchmark on a release build measures.
SANITIZED = os.environ.get("MOONCAKE_SANITIZED") == "1"
P99_LIMIT_MS = 3000 if SANITIZED else 500
DURING_LIMIT_MS = 5000 if SANITIZED else 2000
WARM_S = 4                       # load before the change ...
AFTER_S = 4                      # ... and after it
PROBE_S = 2                      # the chart's readiness probe period (processor roles)
# Every role but the executor has the chart's 30 s grace; the executor's is its drain
# timeout (10 s) + 20 s. Past it Kubernetes sends SIGKILL, and so does the test.
GRACE_S = 30
# The chart's settings, where the harness has its own.
ROLE_ENV = {"MOONCAKE_HORIZON_MS": HORIZON_MS, "MOONCAKE_COMMIT_INTERVAL_MS": COMMIT_INTERVAL_MS,
            **ALLOW_LOOPBACK}


def _c_default(path, name):
    """A default the binary is built with (a #define of a quoted number)."""
    with open(os.path.join(SOURCE_DIR, path)) as f:
        m = re.search(r'#define %s "(\d+)"' % name, f.read())
    assert m, f"{name} not found in {path}"
    return int(m.group(1))


def _option_default(flag):
    """An option's default, from the table of docs/configuration.md (generated from
    common/config.c)."""
    with open(os.path.join(SOURCE_DIR, "docs", "configuration.md")) as f:
        m = re.search(r"\| `%s` \|[^|]*\|[^|]*\|[^|]*\| `(\d+)` \|" % flag, f.read())
    assert m, f"{flag} not found in docs/configuration.md"
    return int(m.group(1))


# Neither the chart nor the test sets these: the binary's defaults (10 s each).
SESSION_TIMEOUT_MS = _c_default("processors/kclient_rdkafka.c", "MC_SESSION_TIMEOUT_MS")
TRANSACTION_TIMEOUT_MS = _option_default("--transaction-timeout-ms")


class Callers(threading.Thread):
    """Which executor made each call: every 0.1 s the TCP connections to the callback
    server (/proc/net/tcp) are matched with the sockets the executors hold
    (/proc/<pid>/fd), so each caller port (a call's "peer") gets its process's label: the
    instance id, with #2 for the second process started under it, and so on. The
    executors keep their connections open, so almost every port is seen; one that is not
    reads "?"."""

    def __init__(self, server_port):
        super().__init__(daemon=True)
        self.server_port = server_port
        self.watched = {}  # pid -> instance id
        self.by_port = {}
        self.lock = threading.Lock()
        self.done = threading.Event()

    def watch(self, p, name):
        with self.lock:
            self.watched[p.pid] = name

    def who(self, call):
        with self.lock:
            return self.by_port.get(call["peer"], "?")

    def sample(self):
        inodes = {}
        for path in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                with open(path) as f:
                    lines = f.readlines()[1:]
            except OSError:
                continue
            for line in lines:
                f = line.split()
                if int(f[2].rsplit(":", 1)[1], 16) == self.server_port:
                    inodes[f[9]] = int(f[1].rsplit(":", 1)[1], 16)
        with self.lock:
            watched = dict(self.watched)
        for pid, name in watched.items():
            try:
                fds = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                with self.lock:
                    self.watched.pop(pid, None)
                continue
            for fd in fds:
                try:
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    with self.lock:
                        self.by_port[inodes[link[8:-1]]] = name

    def run(self):
        while not self.done.wait(0.1):
            self.sample()


class Load(threading.Thread):
    """RATE tasks a second written straight to `tasks` (keyed app/task id, as a client
    does) from a thread of their own until stop(): task i is d/i, due DUE_MS after it is
    written, and calls /t/i on the callback server."""

    def __init__(self, env, server, rng):
        super().__init__(daemon=True)
        self.env, self.server, self.rng = env, server, rng
        self.due = {}      # path -> (key, due ms)
        self.errors = []
        self.halt = threading.Event()

    def run(self):
        start = time.time()
        i = 0

        def on_delivery(err, msg):
            if err is not None:
                self.errors.append(err)

        while not self.halt.is_set():
            while i < (time.time() - start) * RATE:
                key = f"d/{i}"
                due = now_ms() + self.rng.randint(*DUE_MS)
                t = task("d", str(i), due, url=self.server.url(f"/t/{i}"))
                self.env.producer.produce(self.env.topic("tasks"), key=key,
                                          value=submit_value(t), on_delivery=on_delivery)
                self.due[f"/t/{i}"] = (key, due)
                i += 1
            self.env.producer.poll(0)
            time.sleep(0.01)
        self.env.flush()

    def stop(self):
        self.halt.set()
        self.join(60)
        assert not self.is_alive(), "the load did not stop"
        assert not self.errors, f"{len(self.errors)} tasks not written: {self.errors[:3]}"


class Cluster:
    """The roles as the chart runs them: replicas <role>-<ordinal>, each a process of its
    own under that instance id, started with the chart's settings. Says what happens on
    a timeline (ms from t0)."""

    def __init__(self, env, callers, server):
        self.env, self.callers, self.server = env, callers, server
        self.procs = {}          # instance id -> running process
        self.starts = {}         # instance id -> processes started under it
        self.t0 = now_ms()
        self.events = []
        self.bad_exits = []
        self.executor_metrics = {}  # process -> its last /metrics text (executors)
        self.lock = threading.RLock()

    def say(self, text):
        with self.lock:
            self.events.append((now_ms() - self.t0, text))

    def timeline(self):
        with self.lock:
            return "; ".join(f"+{t / 1000:.1f}s {text}" for t, text in self.events)

    def start(self, role, ordinal, wait=True):
        name = f"{role}-{ordinal}"
        p = self.env.start(role, instance=name, wait_ready=False, **ROLE_ENV)
        with self.lock:
            self.procs[name] = p
            self.starts[name] = self.starts.get(name, 0) + 1
            # A process started again under its id is told apart from the one before.
            p.label = name if self.starts[name] == 1 else f"{name}#{self.starts[name]}"
        if role == "executor":
            self.callers.watch(p, p.label)
        self.say(f"{p.label} started")
        if wait:
            self.ready(p)
        return p

    def ready(self, p, timeout=60):
        """Waits until p answers /readyz 200, asked as the chart's readiness probe asks:
        every PROBE_S, so a roll moves on no sooner than a StatefulSet would."""
        deadline = time.time() + timeout
        while readyz(p) != 200:
            assert p.poll() is None, \
                f"{p.label} exited with {p.returncode}:\n{self.env.log(p)}"
            assert time.time() < deadline, \
                f"{p.label} not ready after {timeout}s:\n{self.env.log(p)}"
            time.sleep(PROBE_S)
        self.say(f"{p.label} ready")

    def start_all(self, replicas):
        """{role: n}: n replicas each, started together; returns once every one is
        ready and each role's partitions are all assigned."""
        started = [self.start(role, i, wait=False) for role, n in replicas.items()
                   for i in range(n)]
        for p in started:
            self.ready(p)
        self.settle(replicas)

    def running(self, role):
        with self.lock:
            names = [n for n in self.procs if n.rsplit("-", 1)[0] == role]
        return sorted(names, key=lambda n: int(n.rsplit("-", 1)[1]))

    def settle(self, roles, timeout=60):
        """Waits until the running replicas of each role own every partition between
        them, each some (when there are no more replicas than partitions)."""
        deadline = time.time() + timeout
        for role in roles:
            while True:
                with self.lock:
                    procs = [self.procs[n] for n in self.running(role)]
                try:
                    got = [metric(self.env, p, "mooncake_assigned_partitions") or 0
                           for p in procs]
                except Exception:  # not serving yet
                    got = None
                if got and sum(got) == PARTITIONS and \
                        (len(got) > PARTITIONS or min(got) > 0):
                    self.say(f"{role} partitions {'+'.join(f'{g:.0f}' for g in got)}")
                    break
                assert time.time() < deadline, \
                    f"{role}: partitions not assigned after {timeout}s: {got}; " \
                    f"{self.timeline()}"
                time.sleep(0.1)

    def read_executor_metrics(self, p):
        try:
            text = self.env.metrics(p)
        except Exception:
            return
        with self.lock:
            self.executor_metrics[p] = text

    def stop(self, name, sig=signal.SIGTERM):
        """SIGTERM (and SIGKILL after the grace period, as Kubernetes does) or SIGKILL;
        returns once the process has exited."""
        with self.lock:
            p = self.procs.pop(name)
        executor = name.startswith("executor-")
        if executor:
            self.read_executor_metrics(p)
        p.send_signal(sig)
        self.say(f"{p.label} {'SIGTERM' if sig == signal.SIGTERM else 'kill -9'}")
        deadline = time.time() + GRACE_S
        while p.poll() is None and time.time() < deadline:
            if executor:  # what it counts while it drains
                self.read_executor_metrics(p)
            time.sleep(0.05)
        if p.poll() is None:
            p.kill()
            self.say(f"{p.label} SIGKILL after the {GRACE_S}s grace")
            self.bad_exits.append(f"{p.label} did not exit within {GRACE_S}s of SIGTERM")
        rc = p.wait()
        self.say(f"{p.label} exited {rc}")
        if sig == signal.SIGTERM and rc != 0:
            self.bad_exits.append(f"{p.label} exited {rc} after SIGTERM:\n{self.env.log(p)}")

    def in_parallel(self, *actions):
        """Runs the actions at the same time (each StatefulSet on its own); re-raises the
        first failure."""
        failures = []

        def guarded(a):
            try:
                a()
            except BaseException as e:  # re-raised below
                failures.append(e)

        threads = [threading.Thread(target=guarded, args=(a,)) for a in actions]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if failures:
            raise failures[0]

    def roll(self, role):
        """The StatefulSet way: the highest ordinal first, each stopped, started again
        under its id and ready before the next one is stopped."""
        for name in reversed(self.running(role)):
            self.stop(name)
            self.start(role, int(name.rsplit("-", 1)[1]))

    def cut_counters(self):
        """The executors' counters of calls cut or abandoned (summed over every executor
        process of the scenario, each read last before it exited)."""
        with self.lock:
            running = [p for n, p in self.procs.items() if n.startswith("executor-")]
        for p in running:
            self.read_executor_metrics(p)
        out = {}
        with self.lock:
            texts = list(self.executor_metrics.values())
        for text in texts:
            for line in text.splitlines():
                if line.startswith("#") or not line.strip():
                    continue
                head, _, value = line.rpartition(" ")
                words = head.split("{")[0].split("_")
                if head.startswith("mooncake_executor_") and \
                        any(w.startswith("abandon") or w == "cut" for w in words):
                    out[head] = out.get(head, 0) + float(value)
        return out


def late_tasks(env, late, due, calls, callers, t0, limit_ms):
    """Where the tasks later than limit_ms were: when due, on which partitions, called
    by whom, and whether they were late already in `ready` (the router, store or wheel)
    or only at the call (the executor)."""
    paths = sorted((p for p, v in late.items() if v > limit_ms), key=lambda p: due[p][1])
    if not paths:
        return "none later than that"
    count = {}
    for p in paths:
        part = home_partition(due[p][0], PARTITIONS)
        who = callers.who(calls[p][0])
        count[(part, who)] = count.get((part, who), 0) + 1
    first, last = due[paths[0]][1] - t0, due[paths[-1]][1] - t0
    said = f"{len(paths)} tasks later than {limit_ms} ms, due +{first / 1000:.2f}s.." \
           f"+{last / 1000:.2f}s, by (partition, caller): " + \
           ", ".join(f"({part}, {who}) {n}" for (part, who), n in sorted(count.items()))
    try:
        fired = {}
        for f in fires(env, timeout=20):
            fired.setdefault(f["key"], f["ts"] - f["due"])
    except Unsettled as e:
        return f"{said}; ready not read: {e}"
    keys = [due[p][0] for p in paths]
    in_ready = sorted(fired[k] for k in keys if k in fired)
    late_in_ready = sum(1 for v in in_ready if v > limit_ms)
    return f"{said}; of them {late_in_ready} were written to ready more than {limit_ms} ms " \
           f"after due (router, store or wheel late), {len(in_ready) - late_in_ready} " \
           f"sooner (executor late); written to ready (ms after due) p50 " \
           f"{percentile(in_ready, 50) if in_ready else '-'} max " \
           f"{in_ready[-1] if in_ready else '-'}"


def judge(name, cluster, load, server, callers, change, window, p99_limit_ms=None,
          max_late_ms=None, repeat_limit=None, late_on=None):
    """Waits for every task's calls and checks them: lost (never called), repeated
    (called more than once), called early; lateness p99 over all tasks within
    p99_limit_ms, and over those due within window (the change: a few hundred tasks, so
    a handful late is its p99) within DURING_LIMIT_MS, which a partition standing still
    for seconds would pass; the worst within max_late_ms; repeated calls at most
    repeat_limit (0 when not given). Prints the summary line."""
    due = dict(load.due)
    last_due = max(d for _, d in due.values())
    # Every task due by then is called at once; the lost are waited for a while longer.
    sleep_until(last_due + 3000)
    deadline = last_due + 3000 + max(10000, max_late_ms or 0)
    while now_ms() < deadline and \
            len({c["path"] for c in server.snapshot()} & due.keys()) < len(due):
        time.sleep(0.5)
    time.sleep(1.5)  # room for repeats
    calls = {}
    for c in server.snapshot():
        calls.setdefault(c["path"], []).append(c)
    lost = sorted((p for p in due if p not in calls), key=lambda p: due[p][1])
    repeated = sorted((p for p in due if len(calls.get(p, ())) > 1), key=lambda p: due[p][1])
    extra = sum(len(calls[p]) - 1 for p in repeated)
    unknown = sorted(p for p in set(calls) - set(due) if not p.startswith("/warm/"))
    early = sorted((due[p][0], round(due[p][1] - c["at"])) for p in due
                   for c in calls.get(p, ()) if c["at"] < due[p][1] - EARLY_TOLERANCE_MS)
    late = {p: calls[p][0]["at"] - due[p][1] for p in due if p in calls}
    during = [v for p, v in late.items() if window[0] <= due[p][1] <= window[1]]
    values = sorted(late.values())
    p50, p99, worst = (percentile(values, 50), percentile(values, 99), values[-1]) \
        if values else (0, 0, 0)
    w99, wmax = (percentile(during, 99), max(during)) if during else (0, 0)
    cut = cluster.cut_counters()
    t0 = cluster.t0
    print(f"     {name}: {len(due)} tasks, lost {len(lost)}, repeated {len(repeated)} "
          f"({extra} extra calls), lateness ms p50 {p50:.0f} p99 {p99:.0f} max {worst:.0f}; "
          f"due during the {change} ({len(during)} tasks, +{(window[0] - t0) / 1000:.1f}s.."
          f"+{(window[1] - t0) / 1000:.1f}s): p99 {w99:.0f} max {wmax:.0f}; executors' "
          f"cut/abandoned counters: "
          f"{', '.join(f'{k} {v:.0f}' for k, v in sorted(cut.items())) or 'none'}", flush=True)
    if late_on:
        for what, parts in late_on.items():
            v = sorted(late[p] for p in late if home_partition(due[p][0], PARTITIONS) in parts
                       and window[0] <= due[p][1] <= window[1])
            if v:
                print(f"     lateness of the tasks due during the {change} on {what} "
                      f"(partitions {sorted(parts)}): p50 {percentile(v, 50):.0f} "
                      f"p99 {percentile(v, 99):.0f} max {v[-1]:.0f} ms ({len(v)} tasks)",
                      flush=True)
    print(f"     timeline: {cluster.timeline()}", flush=True)

    def describe(p):
        key, d = due[p]
        said = ", ".join(
            f"+{c['at'] - d:.0f} ms by {callers.who(c)}"
            f"{'' if c['responded_at'] is not None else ' (unanswered)'}"
            for c in sorted(calls.get(p, ()), key=lambda c: c["at"]))
        return f"{key} (partition {home_partition(key, PARTITIONS)}, due " \
               f"+{(d - t0) / 1000:.2f}s){': called ' + said if said else ''}"

    problems = []
    if lost:
        problems.append(f"{len(lost)} lost (never called): " +
                        "; ".join(describe(p) for p in lost[:15]))
    if len(repeated) > (repeat_limit or 0):
        problems.append(f"{len(repeated)} repeated (called more than once"
                        f"{f', allowed {repeat_limit}' if repeat_limit else ''}): " +
                        "; ".join(describe(p) for p in repeated[:15]))
    elif repeated:
        print("     repeated, within the bound: " +
              "; ".join(describe(p) for p in repeated[:5]), flush=True)
    if early:
        problems.append(f"{len(early)} calls before the due time (key, ms early): {early[:10]}")
    if unknown:
        problems.append(f"calls to paths no task has: {unknown[:10]}")
    if p99_limit_ms is not None and (p99 > p99_limit_ms or w99 > DURING_LIMIT_MS):
        problems.append(f"lateness p99 {p99:.0f} ms (of the {len(during)} tasks due during "
                        f"the {change}: {w99:.0f} ms) > {p99_limit_ms} ms (during: "
                        f"{DURING_LIMIT_MS} ms); " +
                        late_tasks(cluster.env, late, due, calls, callers, t0, p99_limit_ms))
    if max_late_ms is not None and worst > max_late_ms:
        slowest = sorted(late, key=late.get)[-5:]
        problems.append(f"lateness max {worst:.0f} ms > {max_late_ms} ms: " +
                        "; ".join(describe(p) for p in slowest))
    problems += cluster.bad_exits
    assert not problems, f"{name}: " + "\n  ".join(problems)


def warm_up(cluster, server, n=4 * PARTITIONS):
    """n tasks due in 1 s, called before the load starts: the first transactions and
    group commits on a fresh broker (the suite's, just started) take seconds, and the
    scenario judges the roles, not the broker's start."""
    due = now_ms() + 1000
    for i in range(n):
        cluster.env.produce("tasks", f"w/{i}", submit_value(
            task("w", str(i), due, url=server.url(f"/warm/{i}"))))
    cluster.env.flush()
    wait_until("the warm-up calls", lambda: len({c["path"] for c in server.snapshot()
                                                 if c["path"].startswith("/warm/")}) == n,
               timeout=60, interval=0.1)
    cluster.say("warmed up")


def scenario(name, change, replicas, act, seed, **limits):
    """Starts replicas ({role: n}), writes the load, does act(cluster) WARM_S into it
    (act returns extra arguments for judge, or None), keeps the load AFTER_S longer, and
    judges the calls. The tasks due from the change's start to 1 s after its end are
    "due during" it."""
    server = CallbackServer()
    callers = Callers(server.port)
    callers.start()
    env = Env(partitions=PARTITIONS)
    load = None
    try:
        cluster = Cluster(env, callers, server)
        cluster.start_all(replicas)
        warm_up(cluster, server)
        load = Load(env, server, random.Random(seed))
        load.start()
        cluster.say(f"load started ({RATE} tasks/s, seed {seed})")
        time.sleep(WARM_S)
        begun = now_ms()
        more = act(cluster) or {}
        ended = now_ms()
        time.sleep(AFTER_S)
        load.stop()
        cluster.say("load stopped")
        judge(name, cluster, load, server, callers, change, (begun, ended + 1000),
              **{**limits, **more})
        with cluster.lock:
            running = list(cluster.procs.values())
        assert_alive(env, *running)
    finally:
        if load is not None and load.is_alive():
            load.halt.set()
        callers.done.set()
        env.stop_all()
        server.close()


TWO = {"router": 2, "store": 1, "wheel": 2, "executor": 2, "retry": 1}
THREE = {"router": 3, "store": 1, "wheel": 3, "executor": 3, "retry": 1}


def test_a_roll_with_stable_ids_repeats_and_loses_nothing():
    """Scenario 1: under load every StatefulSet (router, wheel and executor of two
    replicas, store and retry of one) rolls at the same time, each the StatefulSet way:
    the highest ordinal first, SIGTERM, wait for the exit, start again under the same
    id, wait for /readyz 200, then the next. Requires 0 lost, 0 repeated calls, lateness
    p99 <= 500 ms (over all tasks, and over those due during the roll)."""
    def act(cluster):
        cluster.in_parallel(*(lambda r=r: cluster.roll(r) for r in TWO))
        cluster.settle(TWO)

    scenario("roll with stable ids", "roll", TWO, act, SEED, p99_limit_ms=P99_LIMIT_MS)


def test_scale_out_repeats_and_loses_nothing():
    """Scenario 2: under load router-2, wheel-2 and executor-2 start beside two of each
    (at the same time, as one `helm upgrade` scales the three StatefulSets). Requires 0
    lost, 0 repeated calls, lateness p99 <= 500 ms (over all tasks, and over those due
    while the new replicas join)."""
    def act(cluster):
        new = [cluster.start(role, 2, wait=False) for role in ("router", "wheel", "executor")]
        for p in new:
            cluster.ready(p)
        cluster.settle(THREE)

    scenario("scale out", "scale-out", TWO, act, SEED + 1, p99_limit_ms=P99_LIMIT_MS)


def test_scale_in_repeats_and_loses_nothing():
    """Scenario 3: under load router-2, wheel-2 and executor-2 (the highest ordinals of
    three each) get SIGTERM at the same time. Requires 0 lost, 0 repeated calls, lateness
    p99 <= 500 ms (over all tasks, and over those due while their partitions move)."""
    def act(cluster):
        cluster.in_parallel(*(lambda r=r: cluster.stop(f"{r}-2")
                              for r in ("router", "wheel", "executor")))
        cluster.settle(TWO)

    scenario("scale in", "scale-in", THREE, act, SEED + 2, p99_limit_ms=P99_LIMIT_MS)


def test_a_replacement_under_a_new_id_loses_nothing_and_repeats_little():
    """Scenario 4: a node lost for good: under load kill -9 of executor-1 (of two) and at
    once a new replica, executor-9 (a new id, as a Deployment or a rescheduled pod would
    have). Requires 0 lost, and bounds what cannot be 0:

    - Repeats: only the killed executor's calls in flight at the kill, or answered but
      not yet committed (the commit interval, 100 ms, plus the commit itself), are made
      again: about RATE x its share of partitions x (commit interval + call time). The
      bound asserted is 1 s of the killed executor's load: RATE x its partitions / 6 x 1 s
      (150 with 3 of 6 partitions), about ten times that window.
    - Lateness: the killed member's partitions are not given to anyone before its session
      times out (SESSION_TIMEOUT_MS, 10 s, the binary's default: the chart sets none),
      whether or not a new member joins (a rebalance waits for the old members to
      rejoin), and the new owner reads them from the committed offsets only once the
      killed one's open transaction is aborted (its transaction timeout, 10 s). So the
      worst lateness asserted is max(session timeout, transaction timeout) + 5 s (the
      rebalance, and the backlog of those seconds called at once). p99 is not required
      to be 500 ms here; what the tasks on the survivor's partitions and on the killed
      one's saw is printed."""
    def act(cluster):
        ex = cluster.procs["executor-1"]
        owned = metric(cluster.env, ex, "mooncake_assigned_partitions") or 0
        cluster.stop("executor-1", signal.SIGKILL)
        killed = now_ms()
        cluster.start("executor", 9)
        cluster.settle({"executor": 2})
        bound = int(RATE * owned / PARTITIONS * 1.0)
        # Its partitions, for the lateness print (/metrics does not say which): those of
        # the tasks it called in the last 3 s before the kill.
        parts = {home_partition(c["headers"].get("webhook-id", ""), PARTITIONS)
                 for c in cluster.server.snapshot()
                 if killed - 3000 < c["at"] < killed and cluster.callers.who(c) == "executor-1"}
        print(f"     executor-1 owned {owned:.0f} of {PARTITIONS} partitions at the kill "
              f"({sorted(parts)} by its calls): repeats allowed {bound}", flush=True)
        return {"repeat_limit": bound,
                "late_on": {"executor-1's partitions": parts,
                            "the survivor's partitions": set(range(PARTITIONS)) - parts}}

    scenario("replacement under a new id", "replacement", TWO, act, SEED + 3,
             max_late_ms=max(SESSION_TIMEOUT_MS, TRANSACTION_TIMEOUT_MS) + 5000)


ALL = [
    test_a_roll_with_stable_ids_repeats_and_loses_nothing,
    test_scale_out_repeats_and_loses_nothing,
    test_scale_in_repeats_and_loses_nothing,
    test_a_replacement_under_a_new_id_loses_nothing_and_repeats_little,
]

if __name__ == "__main__":
    # One after another: each loads the 2-core machine with ~300 tasks/s and 8-9
    # processes, and judges lateness; side by side they would judge each other's load.
    run(picked(ALL, sys.argv[1:]))
