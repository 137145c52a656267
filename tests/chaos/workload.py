"""What is submitted: the seeded workload of tasks (near, far, cancels and re-submits,
failing and 404 calls, bursts, gone bursts) and recurring jobs (puts, updates, pauses,
deletes), written by a producer child (`chaos _produce`) as a client would; and the
questions asked of the view while it runs."""

import heapq
import json
import os
import random
import threading
import time
import urllib.parse

from base import APP, VIEW_PENDING, home_partition, http_get, now_ms
from codec import Codec
from endpoint import callback_path

# ---- the workload (producer child) -------------------------------------------------------

# Retry policies the tasks carry. FLAKY: a few quick retries that must end in success.
# LONG: one retry after up to 8 s, time for a cancel or re-submit to land while the
# failed call is in flight or in its backoff.
FLAKY_POLICY = {"max_attempts": 4, "initial_backoff_ms": 300, "multiplier": 2.0,
                "max_backoff_ms": 2000}
LONG_POLICY = {"max_attempts": 3, "initial_backoff_ms": 8000, "multiplier": 1.0,
               "max_backoff_ms": 8000}
SLOW_TIMEOUT_MS = 3000

# name: weight. Each new task picks one; see Workload.start_<name>.
SCENARIOS = {
    "near": 28, "far": 12, "slow": 6,
    "cancel-early": 6, "cancel-prelead": 6, "cancel-lead": 4,
    "resubmit-early": 6, "resubmit-lead": 6, "resubmit-after-run": 3,
    "flaky": 6, "gone": 2,
    "fail-inflight-cancel": 3, "fail-inflight-resubmit": 3,
    "fail-backoff-cancel": 3, "fail-backoff-resubmit": 3,
    "now": 6, "resubmit-now": 4, "fail-now-cancel": 3,
    "chain": 6,
    "group": 4, "limited": 2, "broadcast": 4,
}
CHAIN_P = 0.25   # a re-submit is itself cancelled or re-submitted again
# A task whose call would go to the fast endpoint delivers a record to the target
# topic instead with this probability: a Kafka target, judged like a call (lost,
# cancelled delivered, early) and never repeated. Its record carries the sid in
# SID_HEADER, so the verdict knows which Submit it delivers.
KAFKA_P = 0.25
SID_HEADER = "chaos-sid"
# A near task names a follow-up (on_success) with this probability (its scenario is
# then near-then): a call to the fast endpoint or a record to the target topic, due
# 0-3 s after the task succeeds, under its own sid; the verdict checks one is
# submitted per success and that it runs.
FOLLOW_P = 0.2
CHAIN_DEPTH = 3
# Serial chains: a "chain" task is a link (an AddLink to job-commands) of one of CHAINS
# chains, calling the slow endpoint for 100-600 ms so that two links called at once
# would overlap at the endpoint; a fifth of them are due 8-14 s ahead and cancelled
# (CancelLink) 0.5-2 s after they are added, while they wait their turn. Logged as
# kind link / unlink under the link's task key, with the scenario chain:<name>.
CHAINS = 4
CHAIN_CANCEL_P = 0.2
# Endpoint groups: a "group" task calls group://GROUP_NAME/fast/<task>/<sid>, the app's
# group of two members (FAILOVER, members in URL byte order): DEAD_MEMBER, where nothing
# listens (it sorts first, so every call tries it unless it is marked unhealthy), and the
# fast endpoint (the live member); a member that failed is skipped for
# GROUP_UNHEALTHY_MS, so the dead one is tried and passed over again all through the run.
# Written to <prefix>endpoints before the roles start (Run.write_endpoints).
GROUP_NAME = "chaos"
DEAD_MEMBER = "http://127.0.0.1:1"
GROUP_UNHEALTHY_MS = 2000
# Sharding broadcasts: a "broadcast" task calls group://BROADCAST_NAME/fast/<task>/<sid>, the
# app's second group (SHARDING_BROADCAST), whose two members are the endpoint's fast and
# fail ports (both answer /fast/... at once; the endpoint logs which port a call came to
# and the shard's headers): at its due time the executor submits <task>#shard-0 and
# #shard-1, each calling its member (in URL byte order) with the same path and sid, and
# the jobs role writes the task's own Result once both have their final one. Without the
# jobs role a near task instead.
BROADCAST_NAME = "chaos-bcast"
BROADCAST_PORTS = ("fast", "fail")
# Admission limits: a "limited" task (and each task of a limited burst) calls the fast
# endpoint through the host name LIMIT_HOST (/lim/<delay>/<task>/<sid>, answered after
# the delay), which the limit limit/host/LIMIT_HOST bounds to LIMIT_MAX_CONCURRENT calls
# open at once and LIMIT_PER_SECOND started a second, across the executors. A limited
# task's delay is drawn from LIMITED_DELAY_MS; a limited burst's from LIMITED_BURST_DELAY_MS
# by its id: even bursts answer slowly (8 open at 40-90 ms hold the calls to about 120 a
# second: the concurrency bound binds), odd ones fast (at 5-25 ms 8 open could make 500 a
# second: the rate binds).
LIMIT_HOST = "localhost"
LIMIT_MAX_CONCURRENT = 8
LIMIT_PER_SECOND = 150
LIMITED_DELAY_MS = (5, 90)
LIMITED_BURST_DELAY_MS = ((40, 90), (5, 25))
LIMITED_BURST_SIZE = (150, 300)
COMMAND_FIELDS = ("seq", "key", "kind", "sid", "due", "sent", "acked", "part", "off",
                  "scenario", "err")

# Recurring jobs: every one fires every second (FIXED_RATE 1000 ms anchored on a whole
# second, or the cron "* * * * * ?" in one of these zones), PARALLEL, with a misfire
# threshold no outage here reaches, so every scheduled instant must run: late, never
# skipped. Each PutJob's callback path ends in a new sid, so a call names the definition
# that scheduled it. Commands go to <prefix>job-commands, logged as JOB_FIELDS (at: the
# created_at or requested_at the command carries; off: its offset, a PutJob's version).
JOB_ZONES = ("Asia/Kolkata", "America/New_York", "Australia/Adelaide")
JOB_CRON = "* * * * * ?"
JOB_INTERVAL_MS = 1000
JOB_MISFIRE_THRESHOLD_MS = 600000
JOB_FIELDS = ("seq", "job", "kind", "sid", "at", "start", "sched", "sent", "acked", "part",
              "off", "err")


class Workload:
    """Generates the seeded workload on the fly and produces it: steady new tasks at
    --rate, bursts at the times main planned, and every follow-up (cancel, re-submit)
    at its time relative to the due time of the Submit it targets. Logs each command
    as acknowledged (COMMAND_FIELDS, tab-separated); the offset is its version."""

    def __init__(self, spec, codec, producer, out):
        self.s = spec
        self.codec = codec
        self.p = producer
        self.out = out
        self.rng = random.Random(spec["seed"])
        self.heap = []  # (time ms, order, function, args)
        self.order = 0
        self.seq = 0
        self.sid = 0
        self.tasks = 0
        self.errors = 0
        self.max_due = 0
        self.lead = spec["lead_ms"]
        self.horizon = spec["horizon_ms"]
        self.last_due = spec["t0"] + int(spec["duration"] * 1000) + spec["tail_ms"]
        ports = spec["ports"]
        self.base = {k: f"http://127.0.0.1:{v}" for k, v in ports.items()}
        self.base["lim"] = f"http://{LIMIT_HOST}:{ports['fast']}"
        names = list(SCENARIOS)
        self.scenarios = (names, [SCENARIOS[n] for n in names])
        self.jobs_out = spec.get("jobs_out")
        self.job_sched = {}
        self.job_commands = 0

    # -- producing --
    def send(self, key, kind, sid, due, scenario, value, topic=None, msg_key=None):
        """Produces value keyed msg_key (default: key) to topic (default: tasks, at the
        producer's murmur2 partition; other topics: the key's home partition, as the
        jobs topics want) and logs it under key."""
        self.seq += 1
        info = [self.seq, key, kind, sid, due, now_ms(), scenario]

        def delivered(err, msg, info=info):
            seq, key, kind, sid, due, sent, scenario = info
            acked = now_ms()
            if err is not None:
                self.errors += 1
                row = (seq, key, kind, sid, due, sent, acked, "", "", scenario, str(err))
            else:
                row = (seq, key, kind, sid, due, sent, acked, msg.partition(), msg.offset(),
                       scenario, "")
            self.out.write("\t".join("" if v is None else str(v) for v in row) + "\n")

        extra = {} if topic is None else {
            "partition": home_partition(msg_key or key, self.s["partitions"])}
        while True:
            try:
                self.p.produce(topic or self.s["topic"], key=(msg_key or key).encode(),
                               value=value, on_delivery=delivered, **extra)
                break
            except BufferError:
                self.p.poll(0.01)

    def task(self, task_id, sid, due, kind, params, policy, timeout_ms, group=None):
        url = self.base[kind if kind != "gone" else "fail"] + callback_path(
            kind, task_id, sid, *params)
        if group:  # the same path, at a member (every member) of the app's group
            url = f"group://{group}" + callback_path(kind, task_id, sid, *params)
        return {"app_id": APP, "task_id": task_id, "due_at": due,
                "callback": {"url": url, "method": "POST",
                             "headers": {"content-type": "application/json"},
                             "body": b'{"sid":%d}' % sid, "timeout_ms": timeout_ms},
                "retry": policy, "attempt": 1, "created_at": now_ms(), "metadata": {}}

    def submit(self, task_id, due, scenario, kind="fast", params=(), policy=None,
               timeout_ms=5000, follow=False, group=None):
        self.sid += 1
        sid = self.sid
        due = int(due)
        task = self.task(task_id, sid, due, kind, params, policy, timeout_ms, group)
        if kind == "fast" and not group and self.s.get("target_topic") and \
                self.rng.random() < KAFKA_P:
            task["callback"] = {"url": "", "method": "POST", "headers": {}, "body": b"",
                                "timeout_ms": 0}
            task["kafka_target"] = {"topic": self.s["target_topic"], "key": task_id.encode(),
                                    "value": b'{"sid":%d}' % sid,
                                    "headers": {SID_HEADER: str(sid)}}
        if follow:
            task["on_success"] = [self.then_template(task_id)]
        self.max_due = max(self.max_due, due)
        self.send(f"{APP}/{task_id}", "submit", sid, due, scenario, self.codec.submit(task))
        return sid

    def add_link(self, chain, task_id, due, scenario):
        """An AddLink of a task calling the slow endpoint to the chain."""
        self.sid += 1
        due = int(due)
        task = self.task(task_id, self.sid, due, "slow", (int(self.rng.uniform(100, 600)),),
                         None, 5000)
        self.max_due = max(self.max_due, due)
        self.send(f"{APP}/{task_id}", "link", self.sid, due, scenario,
                  self.codec.add_link(chain, task), self.s["jobs_topic"], f"{APP}/{chain}")

    def cancel_link(self, now, chain, task_id, scenario):
        self.send(f"{APP}/{task_id}", "unlink", None, None, scenario,
                  self.codec.cancel_link(chain, task_id, now), self.s["jobs_topic"],
                  f"{APP}/{chain}")

    def then_template(self, parent_id):
        """A follow-up template under a new sid (its id: <parent_id>.then1)."""
        self.sid += 1
        child = f"{parent_id}.then1"
        f = {"task_id": "", "delay_ms": int(self.rng.uniform(0, 3000)),
             "callback": {"url": self.base["fast"] + callback_path("fast", child, self.sid),
                          "method": "POST", "headers": {}, "body": b"", "timeout_ms": 5000},
             "kafka_target": None, "retry": None, "late_policy": None}
        if self.s.get("target_topic") and self.rng.random() < KAFKA_P:
            f["callback"] = {"url": "", "method": "POST", "headers": {}, "body": b"",
                             "timeout_ms": 0}
            f["kafka_target"] = {"topic": self.s["target_topic"], "key": child.encode(),
                                 "value": None, "headers": {SID_HEADER: str(self.sid)}}
        return f

    def cancel(self, task_id, scenario):
        self.send(f"{APP}/{task_id}", "cancel", None, None, scenario,
                  self.codec.cancel(task_id, now_ms()))

    # -- recurring jobs --
    def send_job(self, jid, kind, sid, at, value, start=None, sched=None):
        """Produces one JobCommand to its job's home partition (the murmur2 partition
        of app/job, as tasks)."""
        self.seq += 1
        self.job_commands += 1
        key = f"{APP}/{jid}"
        info = [self.seq, jid, kind, sid, at, start, sched, now_ms()]

        def delivered(err, msg, info=info):
            row = info + [now_ms()] + ([msg.partition(), msg.offset(), ""] if err is None
                                       else ["", "", str(err)])
            if err is not None:
                self.errors += 1
            self.jobs_out.write("\t".join("" if v is None else str(v) for v in row) + "\n")

        while True:
            try:
                self.p.produce(self.s["jobs_topic"], key=key.encode(), value=value,
                               partition=home_partition(key, self.s["partitions"]),
                               on_delivery=delivered)
                break
            except BufferError:
                self.p.poll(0.01)

    def put_job(self, now, jid, kind):
        """A PutJob: the job's schedule (kept across updates), a new sid in its callback."""
        self.sid += 1
        sched = self.job_sched[jid]
        start = self.s["jobs"]["start_at"]
        job = {"app_id": APP, "job_id": jid,
               "schedule": {"kind": "CRON" if sched != "FIXED_RATE" else "FIXED_RATE",
                            "cron": JOB_CRON if sched != "FIXED_RATE" else "",
                            "time_zone": sched.split(" ", 1)[1] if sched != "FIXED_RATE"
                            else "UTC",
                            "interval_ms": JOB_INTERVAL_MS if sched == "FIXED_RATE" else 0},
               "start_at": start, "end_at": 0, "max_runs": 0, "misfire": "FIRE_ONCE_NOW",
               "catch_up_limit": 10, "misfire_threshold_ms": JOB_MISFIRE_THRESHOLD_MS,
               "overlap": "PARALLEL", "paused": False,
               "callback": {"url": self.base["fast"] + callback_path("job", jid, self.sid),
                            "method": "POST", "headers": {"content-type": "application/json"},
                            "body": b'{"job":"%s","sid":%d}' % (jid.encode(), self.sid),
                            "timeout_ms": 5000},
               "retry": None, "metadata": {}, "created_at": now}
        self.send_job(jid, kind, self.sid, now, self.codec.put_job(job), start, sched)

    def job_action(self, now, jid, action):
        self.send_job(jid, action.lower(), None, now, self.codec.job_action(jid, action, now))

    def plan_jobs(self):
        """Creates every job at t0 (first instant start_at), and schedules the seeded
        updates (same schedule, new callback), pause/resume pairs (on jobs no update
        touches) and the DELETE of every job at delete_at."""
        js = self.s["jobs"]
        rng = random.Random(f"{self.s['seed']}-jobs")
        ids = [f"job{i}" for i in range(js["n"])]
        for jid in ids:
            self.job_sched[jid] = "FIXED_RATE" if rng.random() < 0.8 else \
                "CRON " + rng.choice(JOB_ZONES)
        start, end = js["start_at"], js["delete_at"]
        pausing = set(rng.sample(ids, min(len(ids), js["pauses"])))
        for jid in sorted(pausing, key=ids.index):
            t = rng.uniform(start + 5000, max(start + 6000, end - 20000))
            self.later(t, self.job_action, jid, "PAUSE")
            self.later(t + rng.uniform(2000, 8000), self.job_action, jid, "RESUME")
        others = [j for j in ids if j not in pausing] or ids
        for _ in range(js["updates"]):
            self.later(rng.uniform(start + 3000, max(start + 4000, end - 5000)), self.put_job,
                       rng.choice(others), "update")
        for jid in ids:
            self.later(js["put_at"], self.put_job, jid, "put")
            self.later(end, self.job_action, jid, "DELETE")

    def later(self, t, fn, *args):
        heapq.heappush(self.heap, (int(t), self.order, fn, args))
        self.order += 1

    # -- due times --
    def near(self, now, lo=1000, hi=10000):
        return now + self.rng.uniform(lo, hi)

    def far(self, now):
        """Beyond the horizon (through the store), but due before the last due time;
        near when there is no room left."""
        lo, hi = now + self.horizon + 1000, min(now + self.horizon + 25000, self.last_due)
        return self.rng.uniform(lo, hi) if hi > lo else self.near(now)

    def near_or_far(self, now):
        return self.far(now) if self.rng.random() < 0.4 else self.near(now)

    def fits(self, t, now):
        """A follow-up at t can still be sent (not in the past, not after the end)."""
        return now + 50 <= t <= self.last_due + 10000

    # -- new tasks: one start_<scenario> per entry of SCENARIOS --
    def new_task(self, now):
        self.tasks += 1
        name = self.rng.choices(*self.scenarios)[0]
        getattr(self, "start_" + name.replace("-", "_"))(now, f"t{self.tasks}", name)

    def start_near(self, now, tid, name):
        follow = self.rng.random() < FOLLOW_P
        self.submit(tid, self.near(now), name + "-then" if follow else name, follow=follow)

    def start_chain(self, now, tid, name):
        """A link of a serial chain (without the jobs role: a near task instead)."""
        if not self.s.get("jobs", {}).get("n"):
            self.start_near(now, tid, "near")
            return
        chain = f"chain{self.rng.randrange(CHAINS)}"
        if self.rng.random() < CHAIN_CANCEL_P:
            self.add_link(chain, tid, now + self.rng.uniform(8000, 14000), f"chain:{chain}")
            self.later(now + self.rng.uniform(500, 2000), self.cancel_link, chain, tid,
                       f"chain:{chain}")
        else:
            self.add_link(chain, tid, self.near(now), f"chain:{chain}")

    def start_group(self, now, tid, name):
        """A fast call through the app's group: FAILOVER past the dead member."""
        self.submit(tid, self.near_or_far(now), name, group=GROUP_NAME)

    def start_broadcast(self, now, tid, name):
        """A fast call to every member of the app's SHARDING_BROADCAST group (without
        the jobs role, which writes the broadcast's Result, a near task instead)."""
        if not self.s.get("jobs", {}).get("n"):
            self.start_near(now, tid, "near")
            return
        self.submit(tid, self.near_or_far(now), name, group=BROADCAST_NAME)

    def start_limited(self, now, tid, name):
        """A call through localhost, bounded by its admission limit."""
        self.submit(tid, self.near(now), name, "lim",
                    (int(self.rng.uniform(*LIMITED_DELAY_MS)),))

    def start_far(self, now, tid, name):
        self.submit(tid, self.far(now), name)

    def start_slow(self, now, tid, name):
        near_timeout = self.rng.random() < 0.2
        delay = int(self.rng.uniform(SLOW_TIMEOUT_MS - 300, SLOW_TIMEOUT_MS + 300)
                    if near_timeout else self.rng.uniform(200, 2500))
        self.submit(tid, self.near_or_far(now), name, "slow", (delay,),
                    timeout_ms=SLOW_TIMEOUT_MS)

    def start_cancel_early(self, now, tid, name):
        due = self.near_or_far(now + 5000)
        self.submit(tid, due, name)
        self.follow(now, tid, due, "cancel", due - self.lead - self.rng.uniform(2500, 5000),
                    name)

    def start_cancel_prelead(self, now, tid, name):
        """A cancel around the moment the wheel fires early (the lead): it reaches the
        wheel just before or just after the fire, when only a recall can stop the call."""
        due = self.near_or_far(now)
        self.submit(tid, due, name)
        self.follow(now, tid, due, "cancel", due - self.rng.uniform(150, 450), name)

    def start_cancel_lead(self, now, tid, name):
        due = self.near_or_far(now)
        self.submit(tid, due, name)
        self.follow(now, tid, due, "cancel", due - self.rng.uniform(0, self.lead), name)

    def start_resubmit_early(self, now, tid, name):
        due = self.near_or_far(now + 5000)
        self.submit(tid, due, name)
        self.follow(now, tid, due, "resubmit",
                    due - self.lead - self.rng.uniform(2500, 5000), name)

    def start_resubmit_lead(self, now, tid, name):
        due = self.near_or_far(now)
        self.submit(tid, due, name)
        self.follow(now, tid, due, "resubmit", due - self.rng.uniform(0, self.lead), name)

    def start_resubmit_after_run(self, now, tid, name):
        """The key ran; much later the client schedules it again (a new version of a
        key whose version floor the wheel may still hold)."""
        due = self.near(now)
        self.submit(tid, due, name)
        self.follow(now, tid, due, "resubmit", due + self.rng.uniform(12000, 20000), name)

    def start_flaky(self, now, tid, name):
        self.submit(tid, self.near_or_far(now), name, "fail", (self.rng.choice((1, 2)), 0),
                    FLAKY_POLICY)

    def start_now(self, now, tid, name):
        """Due now: the router fires it to ready itself."""
        self.submit(tid, now, name)

    def start_resubmit_now(self, now, tid, name):
        """A task due later, re-submitted due now before the wheel fires it: the
        router fires the new version, and the wheel must drop the old one."""
        due = self.near(now, 3000, 10000)
        self.submit(tid, due, name)
        self.follow(now, tid, due, "resubmit-now",
                    due - self.lead - self.rng.uniform(500, 2500), name)

    def start_fail_now_cancel(self, now, tid, name):
        """Due now, fired by the router; its call fails after 1.5 s and a cancel is sent
        while it is in flight: the next attempt must not be called."""
        self.submit(tid, now, name, "fail", (1, 1500), LONG_POLICY)
        self.follow(now, tid, now, "cancel", now + self.rng.uniform(300, 1000), name)

    def start_gone(self, now, tid, name):
        self.submit(tid, self.near(now), name, "gone")

    def start_fail_inflight_cancel(self, now, tid, name):
        self._failing(now, tid, name, 1500, "cancel", (300, 1000))

    def start_fail_inflight_resubmit(self, now, tid, name):
        self._failing(now, tid, name, 1500, "resubmit", (300, 1000))

    def start_fail_backoff_cancel(self, now, tid, name):
        self._failing(now, tid, name, 0, "cancel", (1500, 3000))

    def start_fail_backoff_resubmit(self, now, tid, name):
        self._failing(now, tid, name, 0, "resubmit", (1500, 3000))

    def _failing(self, now, tid, name, delay, what, after):
        """The first call fails (after `delay` ms); a cancel or re-submit follows
        `after` ms after the due time: while the call is in flight, or in its backoff."""
        due = self.near(now)
        self.submit(tid, due, name, "fail", (1, delay), LONG_POLICY)
        self.follow(now, tid, due, what, due + self.rng.uniform(*after), name)

    def follow(self, now, tid, due, what, t, scenario, depth=1):
        if self.fits(t, now):
            self.later(t, self.follow_up, tid, what, scenario, depth)

    def follow_up(self, now, tid, what, scenario, depth):
        if what == "cancel":
            self.cancel(tid, scenario + ":cancel")
            return
        if what == "resubmit-now":
            self.submit(tid, now, f"{scenario}:resubmit")
            return
        due = self.rng.uniform(now + 1000, now + 8000) if scenario.endswith("lead") \
            else self.near_or_far(now)
        due = min(due, max(self.last_due, now + 1000))
        self.submit(tid, due, f"{scenario}:resubmit")
        if depth < CHAIN_DEPTH and self.rng.random() < CHAIN_P:
            nxt = self.rng.choice(("cancel-lead", "resubmit-lead", "cancel-early",
                                   "resubmit-early"))
            gap = self.rng.uniform(0, self.lead) if nxt.endswith("lead") else \
                self.lead + self.rng.uniform(2500, 5000)
            self.follow(now, tid, due, nxt.split("-")[0], due - gap, f"chain-{nxt}",
                        depth + 1)

    # -- bursts --
    def burst(self, now, b, keys):
        """Thousands of tasks due in the same second (or the same millisecond), all on
        the burst's partitions."""
        for i, tid in enumerate(keys):
            due = b["due"] + (i * 997 % 1000 if b["spread"] else 0)
            self.tasks += 1
            self.submit(tid, due, f"burst-{b['via']}")
            if i % 500 == 0:
                self.p.poll(0)

    def gone_burst(self, now, g):
        """Tasks that all fail permanently (404) within one second: dozens of dead letters
        of the app at once, more than one alarm lists (MC_ALARM_FIRST), while the alarms
        role may be killed (plan_alarm_chaos)."""
        for i in range(g["n"]):
            self.tasks += 1
            self.submit(f"g{g['id']}-{i}", g["due"] + i * 397 % 1000, "gone-burst", "gone")

    def limited_burst(self, now, lb):
        """Hundreds of calls through localhost due within one second: they wait in the
        executors for the admission limit, none lost."""
        rng = random.Random(f"{self.s['seed']}-limited-{lb['id']}")
        for i in range(lb["n"]):
            self.tasks += 1
            self.submit(f"l{lb['id']}-{i}", lb["due"] + i * 997 % 1000, "limited-burst", "lim",
                        (int(rng.uniform(*LIMITED_BURST_DELAY_MS[lb["id"] % 2])),))
            if i % 500 == 0:
                self.p.poll(0)

    def burst_keys(self, b):
        """Task ids whose key's murmur2 partition is one of the burst's."""
        keys, j = [], 0
        parts = set(b["partitions"])
        while len(keys) < b["n"]:
            tid = f"b{b['id']}-{j}"
            if home_partition(f"{APP}/{tid}", self.s["partitions"]) in parts:
                keys.append(tid)
            j += 1
        return keys

    # -- the loop --
    def run(self):
        s = self.s
        for b in s["bursts"]:
            self.later(b["send_at"], self.burst, b, self.burst_keys(b))
        for g in s.get("gone_bursts", []):
            self.later(g["send_at"], self.gone_burst, g)
        for lb in s.get("limited_bursts", []):
            self.later(lb["send_at"], self.limited_burst, lb)
        if s.get("jobs", {}).get("n"):
            self.plan_jobs()
        n_steady = int(s["rate"] * s["duration"])
        interval = 1000.0 / s["rate"] if s["rate"] > 0 else 0
        i = 0
        last_flush = time.time()
        while True:
            t_steady = s["t0"] + i * interval if i < n_steady else None
            t_heap = self.heap[0][0] if self.heap else None
            if t_steady is None and t_heap is None:
                break
            t_next = min(t for t in (t_steady, t_heap) if t is not None)
            now = now_ms()
            if t_next > now:
                self.p.poll(min((t_next - now) / 1000, 0.05))
                continue
            if t_heap is None or (t_steady is not None and t_steady <= t_heap):
                self.new_task(now)
                i += 1
            else:
                _, _, fn, args = heapq.heappop(self.heap)
                fn(now, *args)
            self.p.poll(0)
            if time.time() - last_flush > 1:  # the status line counts acknowledged commands
                last_flush = time.time()
                self.out.flush()
        left = self.p.flush(300)
        self.out.flush()
        if self.jobs_out:
            self.jobs_out.flush()
        return {"commands": self.seq - self.job_commands, "tasks": self.tasks,
                "submits": self.sid, "errors": self.errors + left, "max_due": self.max_due,
                "job_commands": self.job_commands, "last_sent": now_ms()}


def child_produce(argv):
    """Produces the workload described by the JSON spec file argv[0]; prints a JSON
    summary as its last line."""
    with open(argv[0]) as f:
        spec = json.load(f)
    from confluent_kafka import Producer
    # The client contract: murmur2 like the Java client, idempotent, acks=all.
    p = Producer({"bootstrap.servers": spec["bootstrap"], "partitioner": "murmur2_random",
                  "enable.idempotence": True, "acks": "all", "linger.ms": 5,
                  "queue.buffering.max.messages": 1_000_000, "message.timeout.ms": 600000,
                  "log_level": 3})
    p.list_topics(spec["topic"], timeout=30)
    with open(spec["out"], "w", buffering=1 << 16) as out, \
            open(spec["jobs_out"], "w", buffering=1 << 16) as jobs_out:
        summary = Workload(dict(spec, jobs_out=jobs_out), Codec(), p, out).run()
    print(json.dumps(summary), flush=True)


GONE_BURST_SIZE = 30  # tasks of a gone burst: more dead letters at once than an alarm lists


def plan_gone_bursts(args, rng, t0):
    """When the workload sends its gone bursts (Workload.gone_burst): one per 30 s of
    workload (at least one, at most 20), spread evenly, each GONE_BURST_SIZE tasks due
    within one second that all fail permanently, sent 2-4 s ahead."""
    dur = args.duration * 1000
    n = min(20, max(1, int(args.duration // 30)))
    lo = min(8000, dur / 4)
    hi = max(lo + 1000, dur - 8000)
    step = (hi - lo) / n
    out = []
    for i in range(n):
        due = int(t0 + lo + (i + rng.uniform(0.2, 0.8)) * step)
        out.append({"id": i, "due": due, "send_at": int(due - rng.uniform(2000, 4000)),
                    "n": GONE_BURST_SIZE})
    return out


def plan_limited_bursts(args, rng, t0):
    """When the workload sends its limited bursts (Workload.limited_burst): one per 20 s
    of workload (at least two, at most 20), spread evenly, each 150-300 tasks through
    LIMIT_HOST due within one second, sent 2-4 s ahead."""
    dur = args.duration * 1000
    n = min(20, max(2, int(args.duration // 20)))
    lo = min(6000, dur / 4)
    hi = max(lo + 1000, dur - 6000)
    step = (hi - lo) / n
    out = []
    for i in range(n):
        due = int(t0 + lo + (i + rng.uniform(0.2, 0.8)) * step)
        out.append({"id": i, "due": due, "send_at": int(due - rng.uniform(2000, 4000)),
                    "n": rng.randint(*LIMITED_BURST_SIZE)})
    return out


# ---- questions to the view while the workload runs -------------------------------------

class Questioner(threading.Thread):
    """Asks the view instances, all through the run, what state acknowledged tasks are
    in (GET /api/task on a random running view process, so half the questions are
    forwarded), and logs each question and answer (QUESTION_FIELDS) for the verdict:
    an answer must never contradict what the endpoint saw. Every 20th question is a
    list instead (GET /api/tasks of the pending tasks due within 10 s, gathered from
    every view instance): a "(list)" line with its status, and a line per task listed,
    judged like an answer about that task."""

    def __init__(self, cluster, commands_path, out_path, every_s=0.03):
        super().__init__(daemon=True)
        self.cluster, self.commands_path, self.out_path = cluster, commands_path, out_path
        self.every_s = every_s
        self.halt = threading.Event()
        self.keys = []
        self.asked = 0

    def _read_keys(self, f):
        for line in f:
            v = line.rstrip("\n").split("\t")
            # A chain's link is not in tasks until its turn: not asked about.
            if len(v) == len(COMMAND_FIELDS) and not v[-1] and v[2] not in ("link", "unlink"):
                self.keys.append(v[1])
        if len(self.keys) > 20000:
            del self.keys[:10000]

    def run(self):
        rng = random.Random(7)
        while not os.path.exists(self.commands_path) and not self.halt.is_set():
            time.sleep(0.1)
        with open(self.commands_path) as cmds, open(self.out_path, "w") as out:
            while not self.halt.wait(self.every_s):
                self._read_keys(cmds)
                ports = [s.port for s in self.cluster.of_role("view") if s.state == "up"]
                if not self.keys or not ports:
                    continue
                if self.asked % 20 == 19:
                    self._list(rng.choice(ports), out)
                    continue
                key = rng.choice(self.keys[-3000:])
                app, _, tid = key.partition("/")
                sent = now_ms()
                status, body = http_get(rng.choice(ports),
                                        f"/api/task?appId={app}&uuid={urllib.parse.quote(tid)}",
                                        timeout=10)
                answered = now_ms()
                state, version = "", ""
                if status == 200:
                    try:
                        d = json.loads(body)["data"]
                        state, version = d["state"], d.get("version", "")
                    except (ValueError, KeyError, TypeError):
                        state = "unreadable"
                out.write(f"{sent}\t{key}\t{status}\t{state}\t{version}\t{answered}\n")
                out.flush()
                self.asked += 1


    def _list(self, port, out):
        sent = now_ms()
        status, body = http_get(port, f"/api/tasks?appId={APP}&state={','.join(VIEW_PENDING)}"
                                f"&dueTo={sent + 10_000}&limit=1000", timeout=10)
        answered = now_ms()
        tasks = []
        if status == 200:
            try:
                tasks = json.loads(body)["data"]["tasks"]
            except (ValueError, KeyError, TypeError):
                status = -1  # an answer that is no list
        out.write(f"{sent}\t(list)\t{status}\t\t\t{answered}\n")
        for t in tasks:
            out.write(f"{sent}\t{t.get('key', '')}\t200\t{t.get('state', '')}\t"
                      f"{t.get('version', '')}\t{answered}\n")
        out.flush()
        self.asked += 1
