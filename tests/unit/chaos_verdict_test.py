#!/usr/bin/env python3
"""The chaos harness's judge (tests/chaos/verdict.py) of repeated calls, on made-up
evidence: a repeat is expected only when an executor turn (an abort, a revoke) lies
between the two calls, where the first call counts from when it may have reached the
endpoint - earlier than the endpoint logged it by as much as the endpoint's loop was
measured behind, and not a millisecond more - and the turn from when the executor may
have started that call (as long before its arrival as the calls around it took). And which sanitizer reports fail a run.
And the judge of alarms: per app the distinct alarm calls count each dead letter of
`dead` exactly once, list no key twice nor one that is no dead letter, and come at least
the interval apart. And the judges of endpoint groups (a group task's success names the
live member) and admission limits (the most calls through the limited host open at once
and started in a second, outside the windows an executor disruption excuses). And the
judge of sharding broadcasts: each shard submitted once, called at its member with its
headers, ended once; the broadcast's one Result agrees with them and comes after them."""
import argparse
import contextlib
import io
import json
import os
import sqlite3
import sys
import tempfile
import types

SOURCE = os.environ.get("MOONCAKE_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SOURCE, "tests", "chaos"))
sys.path.insert(0, os.path.join(SOURCE, "tools", "lib"))
import endpoint  # noqa: E402
import sanitizer_reports  # noqa: E402
import verdict  # noqa: E402


class NoDisruptions:
    def hits(self, roles, a, b):
        return []


def judge(calls, turns, lags, others=None):
    """(expected, unexpected) for calls [(at, ikey)] of one sid; others: other tasks'
    calls [(arrival, started)], each called once with a Result saying when it started
    (None: no such tables, as in a run without them)."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE calls (at REAL, kind TEXT, sid INTEGER, key TEXT, ikey TEXT, "
               "attempt INTEGER, status INTEGER, delay INTEGER)")
    db.executemany("INSERT INTO calls VALUES (?, 'task', 7, 'chaos/t7', ?, 1, 200, 0)", calls)
    if others is not None:
        db.execute("CREATE TABLE commands(seq INTEGER, key TEXT, kind TEXT, sid INTEGER, "
                   "due INTEGER, sent INTEGER, acked INTEGER, part INTEGER, off INTEGER, "
                   "scenario TEXT, err TEXT)")
        db.execute("CREATE TABLE results(key TEXT, attempt INTEGER, due INTEGER, outcome TEXT, "
                   "status INTEGER, started INTEGER, finished INTEGER, error TEXT, "
                   "part INTEGER, off INTEGER, member TEXT)")
        for i, (arrival, started) in enumerate(others):
            sid, key, due = 100 + i, f"chaos/o{i}", int(started) - 5
            db.execute("INSERT INTO calls VALUES (?, 'fast', ?, ?, ?, 1, 200, 0)",
                       (arrival, sid, key, f"{key}:1"))
            db.execute("INSERT INTO commands VALUES (?, ?, 'submit', ?, ?, 0, 0, 0, ?, 'fast', "
                       "NULL)", (sid, key, sid, due, sid))
            db.execute("INSERT INTO results VALUES (?, 1, ?, 'SUCCEEDED', 200, ?, ?, '', 0, ?, "
                       "NULL)", (key, due, int(started), int(arrival) + 1, sid))
    v = verdict.Verdict.__new__(verdict.Verdict)
    v.db = db
    v.db.row_factory = sqlite3.Row
    v.dis = NoDisruptions()
    v.executor_turns = [(t, "aborting transaction (executor-1)") for t in turns]
    v.endpoint_lag = lags
    return v.repeats("1")


WEBHOOK = "http://127.0.0.1:9/alarm/chaos"
INTERVAL = 4000


def alarm(sent_at, entries, dead_letters=None, **extra):
    """An alarm body of app chaos listing entries [(key, failedAt[, jobId])], counting
    dead_letters (default: as many as entries)."""
    first = []
    for e in entries[:10]:
        first.append(dict({"key": e[0], "reason": "permanent failure on attempt 1: HTTP 404",
                           "failedAt": e[1]}, **({"jobId": e[2]} if len(e) > 2 else {})))
    n = len(entries) if dead_letters is None else dead_letters
    return dict({"type": "mooncake.alarm", "appId": "chaos", "deadLetters": n,
                 "firstAt": entries[0][1] if entries else 0,
                 "lastAt": entries[-1][1] if entries else 0, "sentAt": sent_at, "alarm": 1,
                 "first": first, "jobs": []}, **extra)


def judge_alarms(dead, alarms, repeated=(), turns=(), not_called=(), gone_due=0):
    """The alarm judge on made-up evidence: dead letters [(key, failed_at[, job])] of app
    chaos (plus one of an alarm call and one without a task, both left out), the alarms
    called (bodies; each written to tasks and called once, those of `repeated` (indexes)
    twice, 1 s apart; those of `not_called` written only), executor turns, and gone_due
    acknowledged 404 tasks due. Returns the Verdict after check_alarms."""
    db = sqlite3.connect(":memory:")
    db.executescript(verdict.DB_SCHEMA + verdict.JOB_DB_SCHEMA + verdict.ALARM_DB_SCHEMA)
    rows = [(d[0], "chaos", d[0].split("/", 1)[1], 1, d[1], "HTTP 404",
             d[2] if len(d) > 2 else None, 0, i) for i, d in enumerate(dead)]
    rows += [("chaos/mooncake-alarm-5", "chaos", "mooncake-alarm-5", 1, 6, "HTTP 500", None, 1, 0),
             ("junk", None, None, 0, 7, "not a Command", None, 1, 1)]
    db.executemany("INSERT INTO dead_letters VALUES (?,?,?,?,?,?,?,?,?)", rows)
    for i, body in enumerate(alarms):
        key = f"chaos/mooncake-alarm-{body['sentAt']}"
        text = json.dumps(body)
        db.execute("INSERT INTO alarm_tasks VALUES (?,?,?,?,?,?,?)",
                   (key, WEBHOOK, text, body["sentAt"], body["sentAt"], 0, i))
        if i in not_called:
            continue
        for k in range(2 if i in repeated else 1):
            at = body["sentAt"] + 50.0 + 1000 * k
            db.execute("INSERT INTO alarm_calls VALUES (?,?,?,?,?,?,?)",
                       (at, "/alarm/chaos", "POST", key + ":1", key, "application/json", text))
            db.execute("INSERT INTO calls VALUES (?, 'alarm', NULL, ?, ?, 1, 200, 0)",
                       (at, key, key + ":1"))
    for i in range(gone_due):
        db.execute("INSERT INTO commands (seq, key, kind, sid, due, scenario) VALUES "
                   "(?, ?, 'submit', ?, 1000, 'gone')", (i, f"chaos/g{i}", i))
    v = verdict.Verdict.__new__(verdict.Verdict)
    v.db = db
    v.db.row_factory = sqlite3.Row
    v.dis = NoDisruptions()
    v.executor_turns = [(t, "aborting transaction (executor-1)") for t in turns]
    v.endpoint_lag = []
    v.events, v.counts, v.violations, v.info = [], {}, {}, {}
    v.cut = 10 ** 9
    v.alarms = {"webhooks": {"chaos": WEBHOOK}, "interval_ms": INTERVAL}
    v.check_alarms()
    return v


def alarm_failures(v):
    return sorted(k for k in verdict.Verdict.ALARM_CHECKS if v.counts[k])


LIVE = "http://127.0.0.1:4242"
ENDPOINTS = {"group": {"name": "chaos", "live": LIVE, "dead": "http://127.0.0.1:1",
                       "members": ["http://127.0.0.1:1", LIVE]},
             "limit": {"name": "localhost", "max_concurrent": 8, "max_per_second": 150}}


class Disrupted:
    """Disruptions of these (from, to, role, what) intervals."""

    def __init__(self, iv):
        self.iv = iv

    def hits(self, roles, a, b):
        return [i for i in self.iv if (i[2] in roles or i[2] == "broker")
                and i[0] <= b and i[1] >= a]

    def healthy_ms(self, roles, a, b):
        return 0 if self.hits(roles, a, b) else b - a


def bare_verdict(dis=(), turns=(), lags=()):
    db = sqlite3.connect(":memory:")
    db.executescript(verdict.DB_SCHEMA + verdict.JOB_DB_SCHEMA + verdict.ALARM_DB_SCHEMA)
    v = verdict.Verdict.__new__(verdict.Verdict)
    v.db = db
    v.db.row_factory = sqlite3.Row
    v.dis = Disrupted(list(dis))
    v.executor_turns = list(turns)
    v.endpoint_lag = list(lags)
    v.events, v.counts, v.violations, v.info, v.trails = [], {}, {}, {}, {}
    v.endpoints = ENDPOINTS
    return v


def judge_limits(calls, dis=(), turns=(), lags=()):
    """check_limits on calls [(at, delay)] through localhost (each its own task)."""
    v = bare_verdict(dis, turns, lags)
    for i, (at, delay) in enumerate(calls):
        v.db.execute("INSERT INTO commands (seq, key, kind, sid, due, scenario) VALUES "
                     "(?, ?, 'submit', ?, 0, 'limited-burst')", (i, f"chaos/l0-{i}", i))
        v.db.execute("INSERT INTO calls VALUES (?, 'lim', ?, ?, ?, 1, 200, ?)",
                     (at, i, f"chaos/l0-{i}", f"chaos/l0-{i}:1", delay))
    v.check_limits()
    return v


def lanes(n, every, delay, until=3000, start=10_000.0):
    """n lanes of calls, each lane one call `every` ms (answered after delay)."""
    return [(start + lane * 3.0 + k * every, delay) for lane in range(n)
            for k in range(int(until // every))]


def limit_failures(v):
    return sorted(k for k in verdict.Verdict.LIMIT_CHECKS if v.counts[k])


def judge_groups(results):
    """check_groups on Results [(task, scenario, outcome, member)]."""
    v = bare_verdict()
    for i, (tid, scenario, outcome, member) in enumerate(results):
        v.db.execute("INSERT INTO commands (seq, key, kind, sid, due, scenario) VALUES "
                     "(?, ?, 'submit', ?, 0, ?)", (i, f"chaos/{tid}", i, scenario))
        v.db.execute("INSERT INTO results VALUES (?, 1, 0, ?, 200, 5, 6, '', 0, ?, ?)",
                     (f"chaos/{tid}", outcome, i, member))
    v.check_groups()
    return v


def limit_and_group_checks(check):
    # eight lanes, a call every 60 ms answered after 55: 8 open at most, 134 a second
    ok = lanes(8, 60, 55)
    v = judge_limits(ok)
    check(limit_failures(v) == [] and v.counts["limit_most_open"] == 8
          and v.counts["limit_most_per_second"] <= 150,
          f"limits: eight lanes pass: {limit_failures(v)} {v.counts}")
    # the next call on a freed slot logged in the same 0.1 ms as the answer: not open at once
    v = judge_limits([(at - 0.05 * (k % 2), d) for k, (at, d) in enumerate(lanes(8, 55, 55))])
    check(limit_failures(v) == [], f"limits: a call as an answer goes: {limit_failures(v)}")
    # a ninth lane: nine open at once (and still under the rate)
    nine = lanes(9, 75, 55)
    v = judge_limits(nine)
    check(limit_failures(v) == ["limit_exceeded_open"] and v.counts["limit_most_open"] == 9
          and len(v.violations["limit_exceeded_open"]) == 1
          and len(v.violations["limit_exceeded_open"][0]["open"]) == 9
          and v.violations["limit_exceeded_open"][0]["times"] == 40,
          f"limits: nine open: {limit_failures(v)} {v.counts}")
    # ... excused while an executor is disrupted (killed, back, settled) ...
    v = judge_limits(nine, dis=[(9_000.0, 14_000.0, "executor", "kill executor-1")])
    check(limit_failures(v) == [] and v.counts["limit_excused_open"] > 0,
          f"limits: nine open during a kill: {limit_failures(v)}")
    # ... or the broker, or around an executor's revoke; not a disruption of another role
    v = judge_limits(nine, dis=[(9_000.0, 14_000.0, "broker", "broker restart")])
    check(limit_failures(v) == [], f"limits: nine open, broker restart: {limit_failures(v)}")
    v = judge_limits(nine, turns=[(11_000.0, "revoked 3 partitions (executor-0)")])
    check(limit_failures(v) == [], f"limits: nine open around a revoke: {limit_failures(v)}")
    v = judge_limits(nine, dis=[(9_000.0, 14_000.0, "wheel", "kill wheel-1")])
    check(limit_failures(v) == ["limit_exceeded_open"],
          f"limits: a wheel kill excuses nothing: {limit_failures(v)}")
    # a revoke long before: the excuse has ended
    v = judge_limits(nine, turns=[(1_000.0, "revoked 3 partitions (executor-0)")])
    check(limit_failures(v) == ["limit_exceeded_open"],
          f"limits: a revoke long before: {limit_failures(v)}")
    # 160 calls in one second, one open at a time: the rate
    fast = [(20_000.0 + 6.0 * k, 1) for k in range(160)]
    v = judge_limits(fast)
    check(limit_failures(v) == ["limit_exceeded_rate"] and v.counts["limit_most_per_second"] == 160
          and v.violations["limit_exceeded_rate"][0]["most"] == 160,
          f"limits: 160 in a second: {limit_failures(v)} {v.counts}")
    # 155 in 0.95 s: over 150 with the endpoint keeping up ...
    dense = [(20_000.0 + 6.1 * k, 1) for k in range(155)]
    v = judge_limits(dense)
    check(limit_failures(v) == ["limit_exceeded_rate"],
          f"limits: 155 in a second: {limit_failures(v)}")
    # ... within the allowance when the endpoint's loop was busy from 19990 to 20040 (a
    # tick 45 ms late at 20040): the calls logged up to then may have come that much
    # earlier (the window from the sixth, 150 calls, may have begun 40.5 ms earlier)
    v = judge_limits(dense, lags=[(20_040.0, 45.0)])
    check(limit_failures(v) == [] and v.counts["limit_most_per_second"] == 155,
          f"limits: 155 within the endpoint's lag: {limit_failures(v)}")
    # ... and the allowance ends at MAX_LAG_ALLOWANCE_MS: 200 in a second stays over
    v = judge_limits([(20_000.0 + 4.5 * k, 1) for k in range(200)], lags=[(20_010.0, 900.0)])
    check(limit_failures(v) == ["limit_exceeded_rate"], f"limits: 200 with a long stall: "
          f"{limit_failures(v)}")
    # excused across a broker restart
    v = judge_limits(fast, dis=[(20_500.0, 21_000.0, "broker", "broker restart")])
    check(limit_failures(v) == [] and v.counts["limit_excused_windows"] > 0,
          f"limits: 160 across a broker restart: {limit_failures(v)}")
    # a run without the limit (before the feature): nothing judged
    v = judge_limits(fast)
    v.endpoints = None
    v.check_limits()
    check(limit_failures(v) == [], "limits: a run without endpoints")
    # groups: successes at the live member pass; a failure names none
    good = [("g1", "group", "SUCCEEDED", LIVE), ("g2", "group", "SUCCEEDED", LIVE),
            ("g3", "group", "FAILED_WILL_RETRY", None), ("t1", "near", "SUCCEEDED", None)]
    v = judge_groups(good)
    check(v.counts["group_member_wrong"] == 0 and v.counts["group_succeeded"] == 2,
          f"groups: correct Results pass: {v.counts}")
    # a success named at the dead member, or at no member
    v = judge_groups(good + [("g4", "group", "SUCCEEDED", "http://127.0.0.1:1")])
    check(v.counts["group_member_wrong"] == 1
          and v.violations["group_member_wrong"][0]["member"] == "http://127.0.0.1:1",
          f"groups: the dead member: {v.counts}")
    v = judge_groups(good + [("g4", "group", "SUCCEEDED", None)])
    check(v.counts["group_member_wrong"] == 1, f"groups: no member: {v.counts}")
    # a task that named no group with a member
    v = judge_groups(good + [("t2", "near", "SUCCEEDED", LIVE)])
    check(v.counts["group_member_wrong"] == 1
          and v.violations["group_member_wrong"][0]["key"] == "chaos/t2",
          f"groups: a member on a plain task: {v.counts}")
    # a chaos.db from before Result v4: the column is added, NULL
    v = bare_verdict()
    v.db.executescript("DROP TABLE results; CREATE TABLE results(key TEXT, attempt INTEGER, "
                       "due INTEGER, outcome TEXT, status INTEGER, started INTEGER, "
                       "finished INTEGER, error TEXT, part INTEGER, off INTEGER);")
    v.check_groups()
    check(v.counts["group_member_wrong"] == 0, "groups: an old chaos.db")


MEMBERS = ["http://127.0.0.1:4001", "http://127.0.0.1:4002"]
BCAST = {"name": "chaos-bcast", "members": MEMBERS, "ports": ["fast", "fail"],
         "strategy": "SHARDING_BROADCAST"}


def broadcast_evidence(tids=("b1", "b2"), outcome=("SUCCEEDED", "SUCCEEDED")):
    """What a correct run leaves of broadcasts tids (two shards each; shard 1 ends in
    outcome[1]): {table: [row dict]}."""
    ev = {k: [] for k in ("commands", "shard_submits", "shard_calls", "calls", "results",
                          "bresults")}
    off = 100
    for n, tid in enumerate(tids):
        sid, due, key, version = n + 1, 10_000 + 1000 * n, f"chaos/{tid}", 10 + n
        ev["commands"].append(dict(seq=n, key=key, kind="submit", sid=sid, due=due, off=version,
                                   scenario="broadcast"))
        shards = []
        for i in range(2):
            sk = f"{key}#shard-{i}"
            off += 1
            ev["shard_submits"].append(dict(
                key=sk, broadcast=tid, shard=f"{i}/2@{version}", member=MEMBERS[i],
                index_header=str(i), total_header="2", due=due, made=due + 5, sid=sid,
                part=0, off=off))
            ev["shard_calls"].append(dict(at=due + 10.0, sid=sid, key=sk, ikey=f"{sk}:1",
                                          attempt=1, server=BCAST["ports"][i],
                                          shard_index=str(i), shard_total="2", webhook_id=sk))
            ev["calls"].append(dict(at=due + 10.0, kind="fast", sid=sid, key=sk, ikey=f"{sk}:1",
                                    attempt=1, status=200, delay=0))
            out = outcome[i]
            ev["results"].append(dict(key=sk, attempt=1, due=due, outcome=out,
                                      status=200 if out == "SUCCEEDED" else 500,
                                      started=due + 10, finished=due + 12 + i, error="",
                                      part=1, off=off, member=MEMBERS[i]))
            ev["bresults"].append(dict(key=sk, outcome=out, finished=due + 12 + i,
                                       broadcast=tid, shard=f"{i}/2@{version}", body="ok",
                                       part=1, off=off, ts=due + 13 + i))
            shards.append({"shard": i, "member": MEMBERS[i], "outcome": out,
                           "finishedAt": due + 12 + i})
        off += 1
        whole = "SUCCEEDED" if all(x == "SUCCEEDED" for x in outcome) else "FAILED_PERMANENTLY"
        ev["results"].append(dict(key=key, attempt=1, due=due, outcome=whole, status=0,
                                  started=due + 30, finished=due + 30, error="", part=2, off=off,
                                  member=None))
        ev["bresults"].append(dict(key=key, outcome=whole, finished=due + 30, broadcast=None,
                                   shard=None, body=json.dumps({"shards": shards}), part=2,
                                   off=off, ts=due + 31))
    return ev


def judge_broadcasts(ev, dis=()):
    """check_broadcasts (and check_groups) on the evidence ev."""
    v = bare_verdict(dis)
    v.db.executescript(verdict.BROADCAST_DB_SCHEMA)
    for table, rows in ev.items():
        for r in rows:
            v.db.execute(f"INSERT INTO {table} ({','.join(r)}) VALUES "
                         f"({','.join('?' * len(r))})", tuple(r.values()))
    v.db.executescript("""CREATE TABLE nxt AS SELECT *, LEAD(seq) OVER w AS n_seq FROM commands
                          WINDOW w AS (PARTITION BY key ORDER BY off)""")
    v.endpoints = dict(ENDPOINTS, broadcast=BCAST)
    v.args = types.SimpleNamespace(lost_margin_ms=10_000)
    v.cut, v.t_end = 50_000, 60_000
    v.check_broadcasts()
    v.check_groups()
    return v


def broadcast_failures(v):
    return sorted(k for k in verdict.Verdict.BROADCAST_CHECKS + ("group_member_wrong",)
                  if v.counts[k])


def broadcast_checks(check):
    def doctored(change, **kw):
        ev = broadcast_evidence(**kw)
        change(ev)
        return judge_broadcasts(ev)

    v = judge_broadcasts(broadcast_evidence())
    check(broadcast_failures(v) == [] and v.counts["broadcast_fanned_out"] == 2
          and v.counts["broadcast_judged"] == 2 and v.counts["broadcast_shard_calls"] == 4,
          f"broadcasts: a correct run passes: {broadcast_failures(v)} {v.counts}")
    # a failed shard: the broadcast FAILED_PERMANENTLY
    v = judge_broadcasts(broadcast_evidence(outcome=("SUCCEEDED", "FAILED_PERMANENTLY")))
    check(broadcast_failures(v) == [], f"broadcasts: a failed shard: {broadcast_failures(v)}")
    # a shard call repeated (a kill) at its member: fine
    v = doctored(lambda ev: ev["shard_calls"].append(dict(ev["shard_calls"][0], at=10_500.0)))
    check(broadcast_failures(v) == [], f"broadcasts: a repeat: {broadcast_failures(v)}")

    def without(table, key):
        return lambda ev: ev[table].remove(next(r for r in ev[table] if r["key"] == key))
    # missing: a shard never submitted (partly fanned out), never called, never ended
    for table, why in (("shard_submits", "never submitted"), ("shard_calls", "never called"),
                       ("results", "no final Result")):
        v = doctored(without(table, "chaos/b2#shard-1"))
        want = (["broadcast_result_wrong"] if table == "results" else []) + \
            ["broadcast_shard_missing"]
        check(broadcast_failures(v) == want
              and why in v.violations["broadcast_shard_missing"][0]["why"]
          and v.violations["broadcast_shard_missing"][0]["shard"] == "chaos/b2#shard-1",
              f"broadcasts: a shard {why}: {broadcast_failures(v)} {v.violations}")
    # ... called at the other member only
    v = doctored(lambda ev: ev["shard_calls"][1].update(server="fast"))
    check(broadcast_failures(v) == ["broadcast_shard_missing", "broadcast_shard_twice"],
          f"broadcasts: shard 1 at member 0: {broadcast_failures(v)}")
    # ... not judged while the pipeline was disrupted until the end
    ev = broadcast_evidence()
    without("shard_calls", "chaos/b2#shard-1")(ev)
    v = judge_broadcasts(ev, dis=[(11_000, 60_000, "executor", "kill executor-1")])
    check(broadcast_failures(v) == [] and v.counts["broadcast_judged"] == 0,
          f"broadcasts: disrupted: {broadcast_failures(v)}")
    # twice: submitted twice, ended twice, called at another member, wrong headers
    cases = {
        "submitted twice": lambda ev: ev["shard_submits"].append(
            dict(ev["shard_submits"][0], off=999)),
        "another version": lambda ev: ev["shard_submits"][0].update(shard="0/2@99"),
        "another member": lambda ev: ev["shard_submits"][0].update(member=MEMBERS[1]),
        "due before its broadcast": lambda ev: ev["shard_submits"][0].update(due=9_000),
        "two finals": lambda ev: (ev["results"].append(dict(ev["results"][0], off=998)),
                                  ev["bresults"].append(dict(ev["bresults"][0], off=998))),
        "called at member 1 too": lambda ev: ev["shard_calls"].append(
            dict(ev["shard_calls"][0], server="fail", at=10_020.0)),
        "index header": lambda ev: ev["shard_calls"][0].update(shard_index="1"),
        "total header": lambda ev: ev["shard_calls"][0].update(shard_total="3"),
        "webhook-id": lambda ev: ev["shard_calls"][0].update(webhook_id="chaos/b1"),
        "Result's member": lambda ev: ev["results"][0].update(member=MEMBERS[1]),
        "Result's headers": lambda ev: ev["bresults"][0].update(shard=None),
        "the task itself called": lambda ev: ev["calls"].append(
            dict(ev["calls"][0], key="chaos/b1", ikey="chaos/b1:1")),
    }
    for name, change in cases.items():
        v = doctored(change)
        check(broadcast_failures(v) == ["broadcast_shard_twice"],
              f"broadcasts: {name}: {broadcast_failures(v)} {v.violations}")

    # the broadcast's Result
    def parent(ev, tid="b1"):
        return [r for t in ("results", "bresults") for r in ev[t] if r["key"] == f"chaos/{tid}"]

    def body(ev, change):
        b = json.loads(parent(ev)[1]["body"])
        change(b)
        parent(ev)[1]["body"] = json.dumps(b)
    cases = {
        "none": lambda ev: [ev[t].remove(r) for t in ("results", "bresults")
                            for r in list(ev[t]) if r["key"] == "chaos/b1"],
        "two": lambda ev: [ev[t].append(dict(r, off=997))
                           for t, r in zip(("results", "bresults"), parent(ev))],
        "outcome": lambda ev: parent(ev)[0].update(outcome="FAILED_PERMANENTLY"),
        "before its last shard": lambda ev: parent(ev)[1].update(ts=10_013),
        "a member": lambda ev: parent(ev)[0].update(member=MEMBERS[0]),
        "a status": lambda ev: parent(ev)[0].update(status=200),
        "no body": lambda ev: parent(ev)[1].update(body=None),
        "a shard left out": lambda ev: body(ev, lambda b: b["shards"].pop()),
        "a shard's outcome": lambda ev: body(
            ev, lambda b: b["shards"][1].update(outcome="FAILED_PERMANENTLY")),
        "a shard's member": lambda ev: body(ev, lambda b: b["shards"][1].update(
            member=MEMBERS[0])),
        "a shard's finishedAt": lambda ev: body(ev, lambda b: b["shards"][0].update(
            finishedAt=1)),
    }
    for name, change in cases.items():
        v = doctored(change)
        check(broadcast_failures(v) == ["broadcast_result_wrong"],
              f"broadcasts: the Result, {name}: {broadcast_failures(v)} {v.violations}")
    # SUCCEEDED although a shard failed
    v = doctored(lambda ev: [r.update(outcome="SUCCEEDED") for r in parent(ev, "b2")],
                 outcome=("SUCCEEDED", "EXHAUSTED"))
    check(broadcast_failures(v) == ["broadcast_result_wrong"],
          f"broadcasts: SUCCEEDED with a failed shard: {broadcast_failures(v)}")
    # a run without broadcasts: nothing judged
    v = judge_broadcasts(broadcast_evidence())
    v.endpoints = ENDPOINTS
    v.check_broadcasts()
    check(broadcast_failures(v) == [] and not v.info["broadcast"]["configured"],
          "broadcasts: a run without them")


def cancel_judgement_checks(check):
    """How a later command must have won: a cancel whose router transaction (its copy
    in wheel, its recall in ready) was visible recall-margin before the due time is
    judged "one hop" even when the wheel read it late; a re-submit is not."""
    v = bare_verdict()
    v.args = argparse.Namespace(lead_ms=200, cancel_margin_ms=2000, recall_margin_ms=150)
    reads = {}
    v.read_by = lambda role, part, off: reads.get(off)
    base = dict(due=10_000, n_acked=9_500, w_off=7, part=0, seen=9_600)
    reads[7] = 9_950  # the wheel read it 50 ms before the due time: too late to recall
    path, roles, _ = v.cancel_judgement(dict(base, n_kind="cancel"))
    check(path == "one hop" and "executor" in roles and "wheel" not in roles,
          f"a cancel visible 400 ms before its due time is judged in one hop: {path} {roles}")
    path, _, _ = v.cancel_judgement(dict(base, n_kind="submit"))
    check(path == "lagging", f"a re-submit the wheel read late is only counted: {path}")
    path, _, _ = v.cancel_judgement(dict(base, n_kind="cancel", seen=9_900))
    check(path == "too close", f"a cancel visible 100 ms before is too close: {path}")
    reads[7] = 9_850
    path, _, _ = v.cancel_judgement(dict(base, n_kind="cancel"))
    check(path == "one hop", f"read 150 ms before, a cancel is judged in one hop: {path}")
    path, _, _ = v.cancel_judgement(dict(base, n_kind="submit"))
    check(path == "lead window", f"read 150 ms before, a re-submit in the lead window: {path}")


def read_by_checks(check):
    """When the wheel had certainly read a record: the first committed position past it,
    a position counting for no more than any later one (committed positions never go
    back, so a sample above a later one is a misread)."""
    v = bare_verdict()
    v.db.execute("CREATE TABLE IF NOT EXISTS positions(at INTEGER, grp TEXT, part INTEGER, "
                 "pos INTEGER)")
    samples = [(100, 61), (200, 14885), (300, 157), (400, 163), (500, 20000)]
    v.db.executemany("INSERT INTO positions VALUES (?, 'wheel', 5, ?)", samples)
    v.db.execute("INSERT INTO positions VALUES (200, 'wheel', 4, 14885)")
    v.prepare_positions()
    check(v.read_by("wheel", 5, 100) == 300,
          f"a record at 100 is read by the sample of 157, not the misread 14885: "
          f"{v.read_by('wheel', 5, 100)}")
    check(v.read_by("wheel", 5, 60) == 100, f"read at the first sample: {v.read_by('wheel', 5, 60)}")
    check(v.read_by("wheel", 5, 5000) == 500,
          f"the last sample stands on its own: {v.read_by('wheel', 5, 5000)}")
    check(v.read_by("wheel", 5, 30000) is None, "no sample past it")
    check(v.read_by("wheel", 4, 100) == 200, "another partition's samples are its own")
    check(v.read_by("wheel", 5, None) is None, "no offset, no time")
    check(v.info.get("positions_misread") == 1,
          f"the misread is counted: {v.info.get('positions_misread')}")


def main():
    failures = 0

    def check(cond, what):
        nonlocal failures
        if not cond:
            failures += 1
            print("FAIL:", what)

    ik = "chaos/t7:1"
    # an abort between the two logged calls: expected
    e, u = judge([(1000.0, ik), (2000.0, ik)], [1500.0], [])
    check(len(e) == 1 and not u and not e[0]["by_lag"], "abort between the calls")
    # the abort logged 10 ms before the endpoint logged the first call, the loop keeping
    # up: unexpected (the call was started after the abort began)
    e, u = judge([(1000.0, ik), (2000.0, ik)], [990.0], [])
    check(len(u) == 1 and not e and u[0]["endpoint_lag_ms"] == endpoint.LAG_LOG_MIN_MS,
          "abort before the call, no endpoint lag")
    # ... but 2.8 ms after an abort stamped 1000 (that is, before 1001), with no lag
    # logged: the loop may have been up to 2 ms behind unlogged, so expected (seed
    # 658812's three)
    e, u = judge([(1002.8, ik), (2000.0, ik)], [1000.0], [])
    check(len(e) == 1 and not u, "within the lag that is not logged")
    e, u = judge([(1003.5, ik), (2000.0, ik)], [1000.0], [])
    check(len(u) == 1, "past the lag that is not logged")
    # the same with the endpoint's loop busy from 980 to 1030 (a tick 45 ms late at
    # 1030): the call logged at 1000 may have waited since 980, so before the abort:
    # expected, by lag
    e, u = judge([(1000.0, ik), (2000.0, ik)], [990.0], [(1030.0, 45.0)])
    check(len(e) == 1 and not u and e[0]["by_lag"] and e[0]["endpoint_lag_ms"] == 20.0,
          "abort within the endpoint's lag")
    # a tick at the very instant of the call counts
    e, u = judge([(1000.0, ik), (2000.0, ik)], [990.0], [(1000.0, 30.0)])
    check(len(e) == 1 and e[0]["endpoint_lag_ms"] == 35.0, "a tick at the call's instant")
    # a stall that began after the call was logged does not count: busy from 1005 to
    # 1095 (a tick 85 ms late at 1095), the call logged at 1000 did not wait for it
    e, u = judge([(1000.0, ik), (2000.0, ik)], [940.0], [(1095.0, 85.0)])
    check(len(u) == 1 and u[0]["endpoint_lag_ms"] == endpoint.LAG_LOG_MIN_MS,
          "a stall after the call")
    # A call the executor started before its abort may reach the endpoint after the
    # abort's log line (curl holding it for a connection: measured up to 175 ms around
    # seed 29814's repeat, started 33 ms before it arrived): the calls that arrived
    # within a second of it say how long that way took then.
    e, u = judge([(1029.0, ik), (1215.0, ik)], [1000.0], [], others=[(1182.0, 1149.0)])
    check(len(e) == 1 and not u and e[0]["started_early_ms"] == 33.0 and e[0]["by_lag"],
          "abort 29 ms before the call's arrival, calls then 33 ms on their way")
    e, u = judge([(1029.0, ik), (1215.0, ik)], [1000.0], [], others=[(1182.0, 1180.0)])
    check(len(u) == 1 and u[0]["started_early_ms"] == 2.0, "calls then 2 ms on their way")
    e, u = judge([(1029.0, ik), (1215.0, ik)], [1000.0], [], others=[(2200.0, 2100.0)])
    check(len(u) == 1 and u[0]["started_early_ms"] == 0.0, "a slow call 1.2 s later")
    e, u = judge([(1029.0, ik), (1215.0, ik)], [1000.0], [], others=[])
    check(len(u) == 1, "no other call to measure the way by")
    # a Result far from its call (another try's) gives at most MAX_TRANSIT_MS
    e, u = judge([(1400.0, ik), (2000.0, ik)], [1000.0], [], others=[(1500.0, 100.0)])
    check(len(u) == 1 and u[0]["started_early_ms"] == verdict.MAX_TRANSIT_MS,
          "a transit above the bound")
    e, u = judge([(1200.0, ik), (2000.0, ik)], [1000.0], [], others=[(1500.0, 100.0)])
    check(len(e) == 1, "within the bound")
    # a call logged 1.3 ms after a tick 4.2 ms late may have waited through that stall
    # too (the loop serves the tick and the waiting calls in either order): the revoke
    # logged 2.5 ms before that tick came before it (seed 720701's 15)
    e, u = judge([(1003.8, ik), (2000.0, ik)], [1000.0], [(1002.5, 4.2)])
    check(len(e) == 1 and not u and e[0]["by_lag"], "a call just after a late tick")
    # a late tick more than LAG_LOG_MIN_MS before the call does not count
    e, u = judge([(1003.8, ik), (2000.0, ik)], [1000.0], [(1001.5, 4.2)])
    check(len(u) == 1, "a late tick long before the call")
    # a lag measured long after the call does not count
    e, u = judge([(1000.0, ik), (2000.0, ik)], [990.0], [(1200.0, 40.0)])
    check(len(u) == 1, "a lag 200 ms later")
    # nor does a lag smaller than the gap: the abort 100 ms before the call
    e, u = judge([(1000.0, ik), (2000.0, ik)], [900.0], [(1030.0, 40.0)])
    check(len(u) == 1, "abort 100 ms before a call logged 15 ms late at most")
    # however long the loop stalled, at most MAX_LAG_ALLOWANCE_MS is allowed
    e, u = judge([(1000.0, ik), (2000.0, ik)], [700.0], [(1050.0, 600.0)])
    check(len(u) == 1 and u[0]["endpoint_lag_ms"] == endpoint.MAX_LAG_ALLOWANCE_MS,
          "a 600 ms stall")
    # the executor logs in whole milliseconds: an abort logged at 990 happened before
    # 991, so a call the endpoint logged at 990.3 may have come before it
    e, u = judge([(990.3, ik), (2000.0, ik)], [990.0], [])
    check(len(e) == 1 and not u, "abort in the same millisecond as the call")
    e, u = judge([(993.5, ik), (2000.0, ik)], [990.0], [])
    check(len(u) == 1, "abort its millisecond and the unlogged lag before the call")
    # the endpoint's lag log is read in time order
    with tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False) as f:
        f.write("1030.5\t40.5\n900.0\t3.0\n")
    try:
        check(verdict.endpoint_lags(f.name) == [(900.0, 3.0), (1030.5, 40.5)], "endpoint_lags")
    finally:
        os.unlink(f.name)
    # an executor's turns, from its log: a revoke, an abort, and librdkafka giving up
    # the session (the assignment lost before the runner hears of it); not a session
    # warning of another role, nor an executor's other lines, nor librdkafka's poll
    # interval line (during a rebalance the flag does not follow it)
    d = tempfile.mkdtemp()
    lines = {
        "executor-0.1.executor-0.log": [
            'ts=2026-11-26T08:36:02.512Z level=warn role=executor msg="[thrd:main]: Consumer '
            'group session timed out (in join-state steady) after 2321 ms without a successful '
            'response from the group coordinator (broker 1, last error was Success): revoking '
            'assignment and rejoining group" source=librdkafka facility=SESSTMOUT',
            'ts=2026-11-26T08:36:03.000Z level=warn role=executor msg="[thrd:main]: Application '
            'maximum poll interval (300000ms) exceeded by 12ms" source=librdkafka facility=MAXPOLL',
            'ts=2026-11-26T08:36:04.000Z level=warn role=executor msg="aborting transaction" '
            'reason="x"',
            'ts=2026-11-26T08:36:05.000Z level=info role=executor msg="revoked 3 partitions"',
            'ts=2026-11-26T08:36:06.000Z level=info role=executor msg="assigned 3 partitions"',
            'ts=2026-11-26T08:36:07.000Z level=warn role=executor msg="partitions lost"',
            'ts=2026-11-26T08:36:08.000Z level=warn role=executor msg="work still in flight at '
            '--drain-timeout-ms is given up with its partitions"',
        ],
        "wheel-0.1.wheel-0.log": [
            'ts=2026-11-26T08:36:02.512Z level=warn role=wheel msg="[thrd:main]: Consumer '
            'group session timed out (in join-state steady) after 2321 ms"',
        ],
    }
    for name, ls in lines.items():
        with open(os.path.join(d, name), "w") as f:
            f.write("\n".join(ls) + "\n")
    turns = verdict.executor_turns([os.path.join(d, n) for n in lines])
    whats = [w.split(" (")[0] for _, w in turns]
    # An orderly revoke repeats nothing (its calls in flight end first): not a turn.
    check(whats == ["Consumer group session timed out", "aborting transaction",
                    "partitions lost",
                    "work still in flight at --drain-timeout-ms is given up with its "
                    "partitions"], f"executor_turns: {whats}")
    revokes = [w.split(" (")[0] for _, w in verdict.executor_revokes(
        [os.path.join(d, n) for n in lines])]
    check(revokes == ["revoked 3 partitions"], f"executor_revokes: {revokes}")
    check(abs(turns[0][0] - 1795682162512.0) < 1, f"the turn's time: {turns[0][0]}")
    for name in lines:
        os.unlink(os.path.join(d, name))
    os.rmdir(d)
    # a failed run prints when its violations happened and what was near them (CI keeps
    # only the output)
    v = types.SimpleNamespace(
        t0=1_000_000, events=[{"t": 1_047_000, "kind": "exit", "instance": "wheel-0"}],
        executor_turns=[(1_048_500.0, "aborting transaction (executor-1)")],
        violations={"lost": [], "unexpected_repeats": [
            {"key": "chaos/t1", "previous_call": 1_048_100.0, "repeat": 1_048_300.0},
            {"key": "chaos/t2", "previous_call": 1_049_100.0, "repeat": 1_049_300.0},
            {"key": "chaos/t3", "previous_call": 1_059_100.0, "repeat": 1_059_300.0}]})
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        verdict.print_violations(v, examples=1)
    text = out.getvalue()
    check("unexpected_repeats: 3; by second into the run: 48s 1, 49s 1, 59s 1" in text
          and "'repeat': '48.3s'" in text and "chaos/t2" not in text
          and "47.0s exit wheel-0; 48.5s aborting transaction (executor-1)" in text
          and "lost" not in text, f"print_violations:\n{text}")
    # LeakSanitizer at a fatal exit, every allocation inside librdkafka (its 2.0.2 keeps
    # a send_offsets request after the transaction turns fatal): reported apart, not
    # failed; any other report, or a leak with a frame of ours, still fails
    lib = ("==475==ERROR: LeakSanitizer: detected memory leaks\n\n"
           "Direct leak of 152 byte(s) in 1 object(s) allocated from:\n"
           "    #0 0x7f2f8c6b83b7 in __interceptor_calloc ../asan_malloc_linux.cpp:77\n"
           "    #1 0x7f2f8c2edd37  (/lib/x86_64-linux-gnu/librdkafka.so.1+0x58d37)\n\n"
           "Indirect leak of 16 byte(s) in 1 object(s) allocated from:\n"
           "    #0 0x7f2f8c6b83b7 in __interceptor_calloc ../asan_malloc_linux.cpp:77\n"
           "    #1 0x7f2f8c328e55 in rd_kafka_topic_partition_list_new "
           "(/lib/x86_64-linux-gnu/librdkafka.so.1+0x93e55)\n\n"
           "SUMMARY: AddressSanitizer: 168 byte(s) leaked in 2 allocation(s).\n")
    fatal = ('ts=x level=error role=jobs msg=fatal what=send_offsets_to_transaction detail="x"\n'
             'ts=x level=error role=jobs msg="stopped on a fatal error"\n')
    other = fatal.replace("send_offsets_to_transaction", "on_assign")
    ours = lib.replace("#1 0x7f2f8c2edd37  (/lib/x86_64-linux-gnu/librdkafka.so.1+0x58d37)",
                       "#1 0x55d0 in hold /work/main/processors/store.c:230")

    def classify(text):
        return verdict.librdkafka_leak_at_fatal_exit(text, text.find("ERROR: "))

    check(classify(fatal + lib), "librdkafka's leak at a fatal exit")
    # the same from the librdkafka tools/setup builds, whose frames name its sources
    # (a fenced wheel's exit in CI)
    built = ("==4267==ERROR: LeakSanitizer: detected memory leaks\n\n"
             "Direct leak of 152 byte(s) in 1 object(s) allocated from:\n"
             "    #0 0x7f0d8a0b83b7 in __interceptor_calloc ../asan_malloc_linux.cpp:77\n"
             "    #1 0x7f0d89c62f37 in rd_calloc /root/.cache/mooncake/librdkafka-build/"
             "librdkafka-2.8.0/src/rd.h:134\n"
             "    #2 0x7f0d89c62f37 in rd_kafka_op_new0 /root/.cache/mooncake/librdkafka-build/"
             "librdkafka-2.8.0/src/rdkafka_op.c:297\n\n"
             "SUMMARY: AddressSanitizer: 152 byte(s) leaked in 1 allocation(s).\n")
    check(classify(fatal + built), "librdkafka's leak at a fatal exit, built from source")
    check(not classify(fatal + built.replace("librdkafka-2.8.0/src/rd.h:134",
                                             "x/processors/store.c:230")),
          "a frame of ours beside librdkafka's sources")
    check(not classify(lib), "a leak at a clean exit")
    check(not classify(fatal + ours), "a leak with a frame of ours")
    check(not classify(other + lib), "a leak after another fatal error")
    check(not classify(fatal + lib.replace("LeakSanitizer", "AddressSanitizer")),
          "another sanitizer report")
    # the integration tests' harness judges each process's log the same way
    check(sanitizer_reports.failing_reports(fatal + lib) == ([], 1),
          "the harness leaves the leak out")
    check(len(sanitizer_reports.failing_reports(lib)[0]) == 1,
          "the harness fails a leak at a clean exit")
    check(len(sanitizer_reports.failing_reports(fatal + ours)[0]) == 1,
          "the harness fails a leak with a frame of ours")
    failing, excused = sanitizer_reports.failing_reports(
        fatal + lib + "x.c:3:5: runtime error: signed integer overflow\n")
    check(len(failing) == 1 and failing[0].startswith("runtime error") and excused == 1,
          "the harness fails a UBSan report beside the excused leak")
    # alarms: fifteen dead letters of app chaos (one a job's occurrence), in two alarms 4 s
    # apart, the second counting twelve and listing the first ten of them; it is called
    # twice (an abort between: a repeat expected, and counted once)
    dead = [(f"chaos/t{i}", 1000 + i) for i in range(1, 15)] + [("chaos/job1@900", 1015, "job1")]
    good = [alarm(10_000, dead[:3]),
            alarm(14_000, dead[3:13], dead_letters=12)]
    v = judge_alarms(dead, good, repeated=[1], turns=[14_500])
    check(alarm_failures(v) == [] and v.counts["alarms_counted"] == 15
          and v.counts["alarms_dead_letters"] == 15 and v.counts["alarms_distinct"] == 2
          and v.counts["alarms_calls"] == 3 and v.counts["alarms_repeats_expected"] == 1
          and v.info["alarms"]["left_out"] == {"alarm_calls": 1, "no_task": 1, "no_webhook": 0},
          f"alarms: a correct set passes: {alarm_failures(v)} {v.counts}")
    # the job's occurrence listed with another jobId is no dead letter of the app
    v = judge_alarms(dead, [good[0], alarm(14_000, dead[3:12] + [dead[14][:2] + ("job2",)],
                                             dead_letters=12)])
    check(alarm_failures(v) == ["alarms_keys_unknown"], f"alarms: wrong jobId: {alarm_failures(v)}")
    # the same repeat with no executor turn between the calls: unexpected
    v = judge_alarms(dead, good, repeated=[1])
    check(alarm_failures(v) == ["alarms_repeats_unexpected"],
          f"alarms: an unexplained repeat: {alarm_failures(v)}")
    # a dead letter counted twice: a third alarm counts (and lists) t3 again
    v = judge_alarms(dead, good + [alarm(18_000, dead[2:3])])
    check(alarm_failures(v) == ["alarms_counted_twice", "alarms_keys_twice"]
          and v.counts["alarms_counted_twice"] == 1
          and v.violations["alarms_keys_twice"][0]["key"] == "chaos/t3",
          f"alarms: a dead letter counted twice: {alarm_failures(v)}")
    # ... or only counted twice (the second alarm says 13)
    v = judge_alarms(dead, [good[0], alarm(14_000, dead[3:13], dead_letters=13)])
    check(alarm_failures(v) == ["alarms_counted_twice"], f"alarms: 13 of 12: {alarm_failures(v)}")
    # a dead letter missing: the first alarm counts two of its three
    v = judge_alarms(dead, [alarm(10_000, dead[:2]), good[1]])
    check(alarm_failures(v) == ["alarms_missed"] and v.counts["alarms_missed"] == 1
          and [d["key"] for d in v.violations["alarms_missed"][0]["not_listed"]][0] == "chaos/t3",
          f"alarms: a dead letter missing: {alarm_failures(v)}")
    # an alarm written to tasks but never called: its dead letters are missing too
    v = judge_alarms(dead, good, not_called=[0])
    check(alarm_failures(v) == ["alarms_missed", "alarms_not_called"]
          and v.counts["alarms_missed"] == 3, f"alarms: an alarm never called: {alarm_failures(v)}")
    # a key listed in two alarms (the sum still right: t14 counted, not listed)
    v = judge_alarms(dead, [good[0], alarm(14_000, dead[2:12] + dead[12:13], dead_letters=12)])
    check(alarm_failures(v) == ["alarms_keys_twice"]
          and v.violations["alarms_keys_twice"][0]["alarms"] == [
              "chaos/mooncake-alarm-10000", "chaos/mooncake-alarm-14000"],
          f"alarms: a key in two alarms: {alarm_failures(v)}")
    # a listed key that is no dead letter
    v = judge_alarms(dead, [alarm(10_000, dead[:2] + [("chaos/nope", 1003)], dead_letters=3),
                            good[1]])
    check(alarm_failures(v) == ["alarms_keys_unknown"],
          f"alarms: an unknown key: {alarm_failures(v)}")
    # two alarms too close: 3.5 s apart with a 4 s interval
    v = judge_alarms(dead, [good[0], dict(good[1], sentAt=13_500)])
    check(alarm_failures(v) == ["alarms_too_close"]
          and v.violations["alarms_too_close"][0]["gap_ms"] == 3500,
          f"alarms: two alarms too close: {alarm_failures(v)}")
    # exactly the interval apart is fine
    v = judge_alarms(dead, [good[0], dict(good[1], sentAt=10_000 + INTERVAL)])
    check(alarm_failures(v) == [], f"alarms: exactly the interval apart: {alarm_failures(v)}")
    # an alarm body of another app, or listing fewer than min(deadLetters, 10)
    v = judge_alarms(dead, [dict(good[0], appId="shop"), good[1]])
    check(alarm_failures(v) == ["alarms_malformed"], f"alarms: another appId: {alarm_failures(v)}")
    v = judge_alarms(dead, [good[0], alarm(14_000, dead[3:12], dead_letters=12)])
    check(alarm_failures(v) == ["alarms_malformed"], f"alarms: 9 listed of 12: {alarm_failures(v)}")
    # no dead letter at all: nothing judged, which fails when 404 tasks were due ...
    v = judge_alarms([], [], gone_due=3)
    check(alarm_failures(v) == ["alarms_no_dead_letters"], f"alarms: none: {alarm_failures(v)}")
    # ... and passes, saying so, when none were
    v = judge_alarms([], [])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        verdict.print_alarms_summary(v)
    check(alarm_failures(v) == [] and "nothing to judge" in out.getvalue(),
          f"alarms: none due: {alarm_failures(v)}\n{out.getvalue()}")
    # dead letters and no alarm at all: every one missed
    v = judge_alarms(dead, [])
    check(alarm_failures(v) == ["alarms_missed"] and v.counts["alarms_missed"] == 15,
          f"alarms: no alarm: {alarm_failures(v)}")
    # the summary rows, and an alarm-less run judged as before
    v = judge_alarms(dead, [alarm(10_000, dead[:2]), good[1]])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        verdict.print_alarms_summary(v)
    check("dead letters not alarmed" in out.getvalue() and "dead letters counted" in out.getvalue(),
          f"print_alarms_summary:\n{out.getvalue()}")
    v = verdict.Verdict.__new__(verdict.Verdict)
    v.counts, v.violations, v.info = {}, {}, {}
    v.check_alarms()
    check(alarm_failures(v) == [] and not v.info["alarms"]["configured"],
          "alarms: a run without the alarms role")
    limit_and_group_checks(check)
    broadcast_checks(check)
    cancel_judgement_checks(check)
    read_by_checks(check)
    print("chaos_verdict_test:", "all checks passed" if not failures else f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
