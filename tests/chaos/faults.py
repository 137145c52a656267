"""The faults: where the bursts and broker restarts go, the seeded chaos schedule (kill
-9 aimed at the bursts, the jobs role and the alarms role, random kills, SIGSTOP
zombies, broker restarts, rolling updates and scale steps done the StatefulSet way) and
the thread that carries it out."""

import heapq
import random
import threading
import time

from base import APP, SESSION_TIMEOUT_MS, home_partition, now_ms

# ---- the plan: bursts and chaos ------------------------------------------------------------

BURST_TARGETS = ("executor", "wheel", "zombie", "store")


def plan_episodes(args, rng, t0):
    """Where the bursts and the broker restarts go: the workload from 15 s to 10 s
    before its end is cut into one slot per burst and per broker restart, taken in a
    seeded order, so that a broker restart (which takes 10-25 s on a loaded machine)
    does not swallow the chaos aimed at a burst. Burst targets take turns, the first
    three in a seeded order. Returns (bursts, broker restart times)."""
    n_bursts = args.bursts if args.burst_size > 0 else 0
    kinds = ["burst"] * n_bursts + ["broker"] * args.broker_restarts
    rng.shuffle(kinds)
    targets = rng.sample(BURST_TARGETS[:3], 3) + [BURST_TARGETS[3]]
    lo = min(15000, args.duration * 250)
    hi = max(lo + 1000, args.duration * 1000 - 10000)
    step = (hi - lo) / max(1, len(kinds))
    bursts, restarts = [], []
    for i, kind in enumerate(kinds):
        start = t0 + lo + i * step
        if kind == "broker":
            restarts.append(int(start + rng.uniform(0, 0.2) * step))
        else:
            due = int(start + rng.uniform(0.6, 0.8) * step)
            target = targets[len(bursts) % len(targets)]
            bursts.append(plan_burst(args, rng, len(bursts), due, target))
    return bursts, restarts


def plan_burst(args, rng, b, due, target):
    """A burst: n tasks due in the same second on one or two partitions, sent a few
    seconds ahead through the wheel alone or beyond the horizon through the store.
    Its target is the instance the chaos aims at while the burst is in its hands (see
    plan_chaos): an executor's burst is due in one millisecond on one partition (all of
    it unfinished at once in one executor), a zombie's or store's burst goes through
    the store."""
    via = "store" if target in ("zombie", "store") else rng.choice(("wheel", "store"))
    ahead = args.horizon_ms + rng.uniform(2000, 4000) if via == "store" \
        else rng.uniform(2500, 4000)
    return {"id": b, "due": due, "send_at": int(due - ahead), "via": via, "target": target,
            "n": args.burst_size, "spread": target != "executor" and rng.random() < 0.5,
            "partitions": rng.sample(range(args.partitions), 1 if target == "executor"
                                     else min(args.partitions, rng.choice((1, 2))))}


def plan_chaos(args, rng, t0, bursts, restarts, slots, gone_bursts=()):
    """The chaos schedule: a list of actions {t, kind, ...}, sorted by time.

    Up to half of the kills and all the SIGSTOPs go to the bursts' targets first,
    aimed at the instance that owns the burst's partition:
      executor  kill -9 around the due time, once the executor has committed with
                thousands of the burst's calls held, queued or in flight (it makes
                3000 calls in about half a second here);
      wheel     kill -9 before the due time, restarted into the overdue backlog, and
                killed again while it works through it;
      store     kill -9 as it hands the burst to the wheel;
      zombie    SIGSTOP of the store around its hand-off time (just before, or just
                after with the hand-off in an open transaction), longer than the
                session timeout (the other store takes the partitions and hands the
                burst over), shorter or longer than the transaction timeout, then
                SIGCONT.
    The remaining kills hit a random instance at a random time, the remaining
    SIGSTOPs a random role (mostly stores); broker restarts are spread evenly. The kills
    aimed at the jobs role (plan_job_chaos) and at the alarms role (plan_alarm_chaos,
    from a generator of their own) come on top, and so do the rolls and scale steps
    (plan_rolls, from another)."""
    dur = args.duration * 1000
    actions = []
    kills_left, stops_left = args.kills // 2, args.stops
    for b in bursts:
        handoff = b["due"] - args.horizon_ms
        aim = {"partition": b["partitions"][0], "why": f"burst {b['id']} ({b['target']})"}
        if b["target"] == "executor" and kills_left >= 1:
            actions.append({"t": b["due"] + rng.uniform(-50, 300), "kind": "kill",
                            "role": "executor", **aim})
            kills_left -= 1
        elif b["target"] == "wheel" and kills_left >= 2:
            first = b["due"] - rng.uniform(300, 1500)
            back = rng.uniform(1000, 2000)
            actions.append({"t": first, "kind": "kill", "role": "wheel", **aim,
                            "restart_after": back})
            actions.append({"t": first + back + rng.uniform(300, 1000), "kind": "kill",
                            "role": "wheel", **aim})
            kills_left -= 2
        elif b["target"] == "store" and kills_left >= 1:
            actions.append({"t": handoff + rng.uniform(-300, 300), "kind": "kill",
                            "role": "store", **aim})
            kills_left -= 1
        elif b["target"] == "zombie" and stops_left >= 1:
            actions.append({"t": handoff + rng.uniform(-800, 100), "kind": "stop",
                            "role": "store", **aim,
                            "stop_for": SESSION_TIMEOUT_MS + rng.uniform(500, 4500)})
            stops_left -= 1
    names = [s.name for s in slots]
    lo, hi = min(10000, dur / 4), max(dur - 5000, dur / 2)
    for _ in range(args.kills - (args.kills // 2 - kills_left)):
        actions.append({"t": t0 + rng.uniform(lo, hi), "kind": "kill",
                        "slot": rng.choice(names), "why": "random"})
    weights = {"store": 4, "executor": 2, "wheel": 2, "router": 1, "retry": 1, "jobs": 1,
               "alarms": 1}
    roles = [r for r in weights if any(s.role == r for s in slots)]
    for _ in range(stops_left):
        actions.append({"t": t0 + rng.uniform(lo, max(dur - 10000, dur / 2)), "kind": "stop",
                        "role": rng.choices(roles, [weights[r] for r in roles])[0],
                        "why": "random",
                        "stop_for": SESSION_TIMEOUT_MS + rng.uniform(1000, 4000)})
    actions += plan_job_chaos(args, rng, t0, slots)
    for a in actions:
        if a["kind"] == "kill":
            a.setdefault("restart_after", rng.uniform(200, 2000))
            a.setdefault("new_id", rng.random() < 0.5)
    for t in restarts:
        actions.append({"t": t, "kind": "broker", "down_for": rng.uniform(1000, 4000)})
    actions += plan_alarm_chaos(args, random.Random(f"{args.seed}-alarm-chaos"), t0,
                                gone_bursts, slots)
    actions += plan_rolls(args, random.Random(f"{args.seed}-rolls"), t0, restarts, slots)
    for a in actions:
        for k in ("t", "restart_after", "stop_for", "down_for"):
            if k in a:
                a[k] = int(a[k])
    return sorted(actions, key=lambda a: a["t"])


def plan_job_chaos(args, rng, t0, slots):
    """Kills aimed at the jobs role (--job-kills, two per episode), at the moment it
    writes a second's occurrences (every job fires each whole second; the jobs
    processor writes them the ahead time, 2.5 s here, before they are due):
      all      kill -9 of every jobs instance, back after 3-5 s: no jobs processor for
               longer than the ahead time, so the occurrences of those seconds fall due
               unwritten and are written late, from the changelog, after the restart;
      backlog  kill -9 of one instance, back after 3-5 s (its partitions move to the
               other after the session timeout, and back), then killed again 0.2-1.5 s
               after its restart, while it restores and works through the backlog.
    Episodes are spread evenly over the jobs' life; the random kills may hit the jobs
    role too."""
    n_jobs_slots = sum(1 for s in slots if s.role == "jobs")
    if not args.jobs or not n_jobs_slots:
        return []
    episodes = args.job_kills // 2
    lo, hi = 8000, max(9000, args.duration * 1000 - 8000)
    step = (hi - lo) / max(1, episodes)
    actions = []
    for i in range(episodes):
        # Just after the processor's timer for a whole second (due - ahead) went off.
        sec = (t0 + lo + int((i + rng.uniform(0.2, 0.8)) * step)) // 1000 * 1000
        t = sec - args.horizon_ms // 2 + rng.uniform(0, 40)
        back = rng.uniform(3000, 5000)
        why = f"jobs episode {i}"
        if i % 2 == 0:
            for _ in range(n_jobs_slots):
                actions.append({"t": t, "kind": "kill", "role": "jobs", "why": why + " (all)",
                                "restart_after": back})
        else:
            actions.append({"t": t, "kind": "kill", "role": "jobs", "why": why + " (backlog)",
                            "restart_after": back})
            actions.append({"t": t + back + rng.uniform(200, 1500), "kind": "kill",
                            "role": "jobs", "why": why + " (in the backlog)",
                            "restart_after": rng.uniform(500, 2000)})
    return actions


def plan_alarm_chaos(args, rng, t0, gone_bursts, slots):
    """Kills aimed at the alarms role (--alarm-kills): kill -9 of the instance that owns
    the workload app's partition of alarm-events (where its batch waits), the first ones
    0.3-2.5 s after a gone burst falls due (its dead letters gathering, or waiting for
    the interval), the rest at random times. Every other one is back after 0.2-2 s, the
    others after longer than the alarm interval (the other instance takes the batch
    over from the changelog and may send it)."""
    if not args.alarm_kills or not any(s.role == "alarms" for s in slots):
        return []
    dur = args.duration * 1000
    lo, hi = min(10000, dur / 4), max(dur - 5000, dur / 2)
    part = home_partition(APP, args.partitions)
    actions = []
    for i in range(args.alarm_kills):
        if i < len(gone_bursts):
            g = gone_bursts[i]
            t, why = g["due"] + rng.uniform(300, 2500), f"gone burst {g['id']} (alarms)"
        else:
            t, why = t0 + rng.uniform(lo, hi), "alarms"
        back = rng.uniform(200, 2000) if i % 2 == 0 else \
            args.alarm_interval_ms + rng.uniform(1000, 3000)
        actions.append({"t": t, "kind": "kill", "role": "alarms", "partition": part,
                        "why": why, "restart_after": back, "new_id": rng.random() < 0.5})
    return actions


# Rolls and scale steps: which role (weights), how long each is expected to take (to keep
# them clear of the broker restarts), and how long a broker restart keeps them away
# (stop to up takes 10-25 s on a loaded machine, then the roles settle).
ROLL_WEIGHTS = {"executor": 4, "wheel": 2, "router": 1, "store": 1, "retry": 1}
SCALE_WEIGHTS = {"executor": 3, "wheel": 2, "router": 1, "store": 1, "retry": 1}
ROLL_SLOT_MS = 8000       # one replica: SIGTERM, exit (the executor's drain), start, ready
SCALE_EXTRA_MS = 15000    # a scale step: the new replica ready, then its graceful stop
SCALE_WAIT_MS = (5000, 20000)  # from the scale-out to the scale-in
BROKER_BUSY_MS = (-2000, 32000)  # around a planned broker restart


def free_starts(lo, hi, length, busy):
    """[(a, b)]: the start times in [lo, hi - length] of a span of `length` that
    overlaps none of the busy intervals."""
    free = [(lo, hi - length)] if hi - length >= lo else []
    for a, b in busy:
        out = []
        for x, y in free:  # minus the starts (a - length, b)
            if a - length > x:
                out.append((x, min(y, a - length)))
            if b < y:
                out.append((max(x, b), y))
        free = [(x, y) for x, y in out if y >= x]
    return free


def pick_start(rng, free):
    total = sum(y - x for x, y in free)
    if not free:
        return None
    u = rng.uniform(0, total)
    for x, y in free:
        if u <= y - x:
            return x + u
        u -= y - x
    return free[-1][1]


def plan_rolls(args, rng, t0, restarts, slots):
    """Rolling updates (--rolls) and scale steps (--scale-steps), done as a StatefulSet
    does them (Chaos.roll, Chaos.scale_step):
      roll   every live replica of one role (executor, wheel, router, store, retry; the
             executor most often), highest index first: SIGTERM, its exit awaited, the
             same instance id started again, /readyz 200 awaited, then the next;
      scale  a replica <role>-<next index> started under a new id (scale-out), 5-20 s
             later SIGTERMed and, once it has exited, removed (scale-in).
    Each is placed clear of the broker restarts (from 2 s before one to 32 s after),
    and of each other where there is room; kills and bursts may fall on them. Neither
    is a disruption to the verdict: an orderly rebalance repeats no call."""
    n_rolls, n_scales = getattr(args, "rolls", 0) or 0, getattr(args, "scale_steps", 0) or 0
    if not n_rolls and not n_scales:
        return []
    dur = args.duration * 1000
    lo, hi = t0 + min(10000, dur * 0.15), t0 + dur
    broker = [(t + BROKER_BUSY_MS[0], t + BROKER_BUSY_MS[1]) for t in restarts]
    count = {r: sum(1 for s in slots if s.role == r) for r in ROLL_WEIGHTS}
    kinds = ["roll"] * n_rolls + ["scale"] * n_scales
    rng.shuffle(kinds)
    placed, actions = [], []
    for kind in kinds:
        weights = ROLL_WEIGHTS if kind == "roll" else SCALE_WEIGHTS
        roles = [r for r in weights if count.get(r)]
        if not roles:
            continue
        role = rng.choices(roles, [weights[r] for r in roles])[0]
        a = {"kind": kind, "role": role}
        if kind == "roll":
            length = ROLL_SLOT_MS * count[role]
        else:
            a["wait_ms"] = int(rng.uniform(*SCALE_WAIT_MS))
            length = a["wait_ms"] + SCALE_EXTRA_MS
        # Clear of the broker and the others; of the broker only; a scale step with
        # the shortest wait; else after the last broker restart (the thread also waits
        # for a broker restart under way).
        t = pick_start(rng, free_starts(lo, hi, length, broker + placed))
        if t is None:
            t = pick_start(rng, free_starts(lo, hi, length, broker))
        if t is None and kind == "scale":
            a["wait_ms"] = SCALE_WAIT_MS[0]
            length = a["wait_ms"] + SCALE_EXTRA_MS
            t = pick_start(rng, free_starts(lo, hi, length, broker))
        if t is None:
            t = max([lo] + [b for _, b in broker])
        placed.append((t, t + length))
        a["t"] = int(t)
        actions.append(a)
    return actions


class Chaos(threading.Thread):
    """Carries out the plan: each kill is followed by its restart, each SIGSTOP by
    its SIGCONT; a broker restart, a roll and a scale step each run in a thread of
    their own so the rest goes on. Rolls and scale steps of one role take turns; none
    of their steps (a graceful stop, a start until ready) runs while the broker is
    restarting (until settle_ms after it is up), and a broker restart waits for the
    steps under way to end."""

    def __init__(self, plan, cluster, broker, owners, rng, settle_ms=6000):
        super().__init__(daemon=True)
        self.cluster, self.broker, self.owners = cluster, broker, owners
        self.rng = rng
        self.heap = [(a["t"], i, a) for i, a in enumerate(plan)]
        heapq.heapify(self.heap)
        self.order = len(plan)
        self.halt = threading.Event()
        self.threads = []
        self.settle_ms = settle_ms
        self.quiet = threading.Condition()  # guards broker_busy and steps
        self.broker_busy, self.steps = False, 0
        self.role_locks = {}

    def later(self, t, action):
        heapq.heappush(self.heap, (int(t), self.order, action))
        self.order += 1

    def run(self):
        while self.heap and not self.halt.is_set():
            t, _, a = self.heap[0]
            wait = (t - now_ms()) / 1000
            if wait > 0:
                self.halt.wait(min(wait, 0.05))
                continue
            heapq.heappop(self.heap)
            getattr(self, "do_" + a["kind"])(a)
        for th in self.threads:
            th.join()

    def pick(self, a):
        """The live instance an action hits: the named slot, the owner of the aimed-at
        partition, or a random instance of the role; None if all are down or frozen."""
        c = self.cluster
        if "slot" in a:
            cands = [s for s in c.slots if s.name == a["slot"]]
        else:
            if "partition" in a:
                s = c.owner(self.owners, a["role"], a["partition"])
                if s:
                    return s
            cands = c.of_role(a["role"])
        with c.lock:
            live = [s for s in cands if s.state == "up"]
            if not live and "slot" in a:  # that one is down: another of its role
                live = [s for s in c.of_role(cands[0].role) if s.state == "up"]
        return self.rng.choice(live) if live else None

    def do_kill(self, a):
        s = self.pick(a)
        if s is None or not self.cluster.kill(s, a["why"]):
            self.cluster.events.log("skip", what="kill", why="no live instance", **{
                k: v for k, v in a.items() if k in ("role", "slot")})
            return
        self.later(now_ms() + a["restart_after"], {"kind": "restart", "slot_obj": s,
                                                  "new_id": a["new_id"]})

    def do_restart(self, a):
        self.cluster.restart(a["slot_obj"], a["new_id"])

    def do_stop(self, a):
        s = self.pick(a)
        if s is None or not self.cluster.freeze(s, a["why"]):
            self.cluster.events.log("skip", what="stop", why="no live instance",
                                    role=a["role"])
            return
        self.later(now_ms() + a["stop_for"], {"kind": "cont", "slot_obj": s})

    def do_cont(self, a):
        self.cluster.thaw(a["slot_obj"])

    def do_broker(self, a):
        def restart():
            ev = self.cluster.events
            with self.quiet:  # a roll's or scale step's step under way ends first
                end = time.time() + 60
                while self.steps and time.time() < end and not self.halt.is_set():
                    self.quiet.wait(0.2)
                self.broker_busy = True
            try:
                self.restart_broker(a, ev)
            finally:
                self.halt.wait(self.settle_ms / 1000)
                with self.quiet:
                    self.broker_busy = False
                    self.quiet.notify_all()
        th = threading.Thread(target=restart, daemon=True)
        th.start()
        self.threads.append(th)

    def restart_broker(self, a, ev):
        ev.log("broker-stop")
        self.broker.stop()
        ev.log("broker-down")
        time.sleep(a["down_for"] / 1000)
        ev.log("broker-start")
        for attempt in range(3):
            try:
                self.broker.start(keep=True)
                break
            except RuntimeError as e:
                ev.log("broker-error", error=str(e)[-300:])
        ev.log("broker-up")

    # -- rolls and scale steps --
    def step_begin(self):
        """Waits while the broker restarts (and settles), then counts a step under way."""
        with self.quiet:
            while self.broker_busy and not self.halt.is_set():
                self.quiet.wait(0.2)
            self.steps += 1

    def step_end(self):
        with self.quiet:
            self.steps -= 1
            self.quiet.notify_all()

    def in_thread(self, fn, a):
        lock = self.role_locks.setdefault(a["role"], threading.Lock())

        def run():
            with lock:
                if not self.halt.is_set():
                    fn(a)
        th = threading.Thread(target=run, daemon=True)
        th.start()
        self.threads.append(th)

    def do_roll(self, a):
        self.in_thread(self.roll, a)

    def do_scale(self, a):
        self.in_thread(self.scale_step, a)

    def roll(self, a):
        """A rolling update of a role as a StatefulSet does it: each live replica,
        highest index first, SIGTERMed (marked leaving, so its exit is no crash), its
        exit awaited, started again under the same instance id, /readyz 200 awaited
        (at most 60 s), then the next. Events: roll; per replica roll-stop (rc, seconds
        to exit), roll-start, roll-ready (seconds, or why not); roll-end."""
        c, ev = self.cluster, self.cluster.events
        with c.lock:
            slots = sorted((s for s in c.of_role(a["role"]) if s.state == "up"),
                           key=lambda s: -s.index)
        if not slots:
            ev.log("skip", what="roll", why="no live instance", role=a["role"])
            return
        started = time.time()
        ev.log("roll", role=a["role"], slots=[s.name for s in slots])
        done = 0
        for s in slots:
            if self.halt.is_set():
                break
            self.step_begin()
            try:
                stopped = c.terminate(s)
                if stopped is None:
                    ev.log("skip", what="roll", why="not up", slot=s.name, role=s.role)
                    continue
                rc, took, was = stopped
                ev.log("roll-stop", rc=rc, seconds=took, **was)
                if not c.start_again(s):
                    break
                ev.log("roll-start", **s.describe())
                ready, why = c.wait_ready(s)
                ev.log("roll-ready", seconds=ready, ready=why is None, why=why,
                       **s.describe())
                done += 1
            finally:
                self.step_end()
        ev.log("roll-end", role=a["role"], restarted=done,
               seconds=round(time.time() - started, 3))

    def scale_step(self, a):
        """A scale-out and, wait_ms later, the scale-in, as a StatefulSet does them: a
        replica <role>-<next index> started under a new id (scale-out; /readyz awaited,
        scale-ready), then SIGTERMed (the highest index), its exit awaited and the
        slot removed (scale-in: rc, seconds to exit). A replica chaos killed
        meanwhile is waited for (at most 30 s) before the scale-in."""
        c, ev = self.cluster, self.cluster.events
        self.step_begin()
        try:
            s = c.add_slot(a["role"])
            if s is None:
                return
            out_at = time.time()
            ev.log("scale-out", wait_ms=a["wait_ms"], **s.describe())
            ready, why = c.wait_ready(s)
            ev.log("scale-ready", seconds=ready, ready=why is None, why=why, **s.describe())
        finally:
            self.step_end()
        self.halt.wait(max(0.0, out_at + a["wait_ms"] / 1000 - time.time()))
        self.step_begin()
        try:
            end = time.time() + 30
            while s.state != "up" and time.time() < end and not self.halt.is_set():
                time.sleep(0.2)
            stopped = c.terminate(s)
            if stopped is None:
                ev.log("skip", what="scale-in", why=f"not up ({s.state})", slot=s.name,
                       role=s.role)
                return
            rc, took, was = stopped
            c.remove_slot(s)
            ev.log("scale-in", rc=rc, seconds=took, **was)
        finally:
            self.step_end()
