"""Recurring jobs end to end on the real broker: what a user of cron and fixed-rate jobs
sees at their endpoint and in Kafka.

1. Forty jobs firing every second while each role (jobs, executor, wheel, router, retry)
   is killed with -9 and restarted: every occurrence is written to tasks exactly once,
   has exactly one final Result, is called at least once and never early.
2. Every schedule kind and policy against a slow endpoint: cron in a zone, PARALLEL,
   DISCARD_LATER, SERIAL, COVER_EARLY, FIXED_DELAY; pause and resume under
   FIRE_ONCE_NOW and DO_NOTHING; update, trigger and delete.
3. DO_NOTHING is a late policy: occurrences written ahead of time that can only be
   called later than the misfire threshold (the executor stopped meanwhile) are
   dropped (a Result DROPPED), none is called later than the threshold.
4. Schema evolution: JobCommands written with the previous version of the schema (fields
   since added missing) and with a newer one (a field this build lacks) are read through
   --job-command-writer-schemas; a record of an unknown version is dead-lettered.

Jobs are Avro JobCommands produced straight to job-commands (the client contract);
occurrences are the tasks <job_id>@<scheduled ms>, and each call carries the
mooncake-job-id and mooncake-scheduled-at headers.

Run one test: python3 test_jobs.py NAME [NAME...]."""
import copy
import io
import json
import os
import signal
import sys
import tempfile
import time

import fastavro
import fastavro.schema

from harness import SOURCE_DIR, CallbackServer, Env, decode, encode, home_partition, now_ms, run
from test_executor import ALLOW_LOOPBACK

AHEAD_MS = 2000


def job(app, jid, url, **kw):
    j = {"app_id": app, "job_id": jid,
         "schedule": {"kind": kw.pop("kind", "FIXED_RATE"), "cron": kw.pop("cron", ""),
                      "time_zone": kw.pop("tz", "UTC"), "interval_ms": kw.pop("interval", 1000)},
         "start_at": kw.pop("start_at", 0), "end_at": 0, "max_runs": 0,
         "misfire": kw.pop("misfire", "FIRE_ONCE_NOW"), "catch_up_limit": 10,
         "misfire_threshold_ms": kw.pop("threshold", 1000),
         "overlap": kw.pop("overlap", "PARALLEL"), "paused": False,
         "callback": {"url": url, "method": "POST", "headers": {}, "body": b"tick",
                      "timeout_ms": 10000},
         "retry": None, "metadata": {}, "created_at": now_ms()}
    assert not kw, kw
    return j


def send(env, app, jid, payload):
    key = f"{app}/{jid}"
    env.produce("job-commands", key.encode(), encode("JobCommand", {"payload": payload}),
                partition=home_partition(key.encode(), env.partitions))


def put(env, j):
    send(env, j["app_id"], j["job_id"], ("mooncake.PutJob", {"job": j}))


def action(env, app, jid, what, at=None):
    send(env, app, jid, ("mooncake.JobAction", {"app_id": app, "job_id": jid, "action": what,
                                                "requested_at": at or now_ms()}))


def read_tasks(env):
    return [decode("Command", m.value())["payload"] for m in env.read_all("tasks", idle=3.0)]


def occurrences(env, jid, tasks=None):
    """(Submits, Cancels) in tasks for job jid: scheduled instant -> count, and
    the due time of each Submit."""
    subs, cancels, due = {}, {}, {}
    for name, c in tasks if tasks is not None else read_tasks(env):
        tid = c["task"]["task_id"] if name == "mooncake.Submit" else c["task_id"]
        if not tid.startswith(jid + "@"):
            continue
        at = int(tid.split("@")[1])
        if name == "mooncake.Submit":
            subs[at] = subs.get(at, 0) + 1
            due[at] = c["task"]["due_at"]
        else:
            cancels[at] = cancels.get(at, 0) + 1
    return subs, cancels, due


def final_results(env, prefix):
    out = {}
    for m in env.read_all("results", idle=3.0):
        r = decode("Result", m.value())
        if r["task_id"].startswith(prefix) and r["outcome"] != "FAILED_WILL_RETRY":
            out.setdefault(r["task_id"], []).append(r["outcome"])
    return out


def calls_of(server, jid):
    return sorted((c for c in server.snapshot() if c["headers"].get("mooncake-job-id") == jid),
                  key=lambda c: c["at"])


def scheduled(c):
    return int(c["headers"]["mooncake-scheduled-at"])


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))] if v else 0


def start_roles(env, **extra):
    jobs_env = {"MOONCAKE_JOBS_AHEAD_MS": AHEAD_MS, **extra}
    return {"router": env.start("router", instance="r"),
            "wheel": env.start("wheel", instance="w"),
            "executor": env.start("executor", instance="e", **ALLOW_LOOPBACK),
            "retry": env.start("retry", instance="t"),
            "jobs": env.start("jobs", instance="j", **jobs_env)}


# ---- 1 --------------------------------------------------------------------------------------

def test_forty_every_second_jobs_survive_kill_9_of_each_role():
    """Promise (README "Recurring jobs"): exactly one task per occurrence whatever
    crashes; a killed role restarted within a second costs lateness, not occurrences."""
    env = Env(partitions=3)
    server = CallbackServer()
    try:
        procs = start_roles(env)
        start = (now_ms() // 1000 + 3) * 1000
        ids = [f"j{i}" for i in range(40)]
        for jid in ids:
            # A threshold above any outage here: what is late runs late, no misfire.
            put(env, job("a", jid, server.url(f"/job/{jid}"), start_at=start, threshold=60000))
        env.flush()
        kills = [("jobs", 5), ("executor", 10), ("wheel", 15), ("router", 20), ("retry", 23),
                 ("jobs", 26)]
        for role, at_s in kills:
            while now_ms() < start + at_s * 1000:
                time.sleep(0.05)
            p = procs[role]
            p.send_signal(signal.SIGKILL)
            p.wait()
            time.sleep(1.0)
            kw = ALLOW_LOOPBACK if role == "executor" else (
                {"MOONCAKE_JOBS_AHEAD_MS": AHEAD_MS} if role == "jobs" else {})
            procs[role] = env.start(role, instance=role[0] if role != "retry" else "t",
                                    wait_ready=False, **kw)
            print(f"     killed {role} at +{at_s}s, restarted")
        while now_ms() < start + 33000:
            time.sleep(0.1)
        stop_at = now_ms()
        for jid in ids:
            action(env, "a", jid, "DELETE", stop_at)
        env.flush()
        time.sleep(9)
        results = final_results(env, "j")
        tasks = read_tasks(env)
        lateness, early, repeats, missing, raced = [], 0, 0, [], 0
        for jid in ids:
            subs, cancels, due = occurrences(env, jid, tasks)
            twice = {at: n for at, n in subs.items() if n != 1}
            assert not twice, f"{jid}: occurrences written more than once: {twice}"
            instants = sorted(subs)
            assert instants[0] == start, (jid, instants[0] - start)
            gaps = [a for a in range(start, instants[-1] + 1, 1000) if a not in subs]
            assert not gaps, f"{jid}: occurrences never written: {[g - start for g in gaps]}"
            assert instants[-1] >= stop_at - 1000, (jid, stop_at - instants[-1])
            calls = calls_of(server, jid)
            by_at = {}
            for c in calls:
                by_at.setdefault(scheduled(c), []).append(c)
            for at in instants:
                tid = f"{jid}@{at}"
                if at <= stop_at:
                    assert results.get(tid) == ["SUCCEEDED"], (tid, results.get(tid))
                    if at not in by_at:
                        missing.append(tid)
                        continue
                if at in by_at:
                    first = by_at[at][0]["at"]
                    early += first < at - 5
                    lateness.append(first - at)
                    repeats += len(by_at[at]) - 1
                if at > stop_at:
                    # Written before the delete was applied (ahead, or by a role catching
                    # up after its restart): cancelled, the way a client's cancel is (it
                    # wins when it reaches the wheel before the due time).
                    assert cancels.get(at, 0) >= 1, f"{tid}: written for after the delete, " \
                        "never cancelled"
                    raced += at in by_at
        assert not missing, f"occurrences never called: {missing[:10]} ({len(missing)})"
        assert early == 0, f"{early} calls more than 5 ms early"
        print(f"     {len(lateness)} occurrences called; lateness p50 {pct(lateness, .5):.0f} ms, "
              f"p99 {pct(lateness, .99):.0f} ms, max {max(lateness):.0f} ms; "
              f"{repeats} repeated calls (executor killed with calls in flight); {raced} "
              "written ahead and called although the delete cancelled them (the cancel lost "
              "its race to the wheel)")
    finally:
        env.stop_all()
        server.close()


# ---- 2 --------------------------------------------------------------------------------------

def slow(seconds):
    def respond(call):
        return (200, {}, b"ok", seconds if "/slow/" in call["path"] else 0)
    return respond


def test_every_schedule_kind_and_policy():
    """Promise (README "Recurring jobs"): cron in a zone, fixed rate, fixed delay; the
    overlap policies against an endpoint slower than the schedule; pause and resume
    under two misfire policies; update, trigger and delete."""
    env = Env(partitions=3)
    server = CallbackServer(respond=slow(2.5))
    try:
        p = env.start("all", **ALLOW_LOOPBACK, MOONCAKE_JOBS_AHEAD_MS=AHEAD_MS,
                      MOONCAKE_GATEWAY_NO_AUTH="true")
        t0 = (now_ms() // 1000 + 2) * 1000
        u = server.url
        put(env, job("a", "cron", u("/fast/cron"), kind="CRON", cron="*/2 * * * * ?",
                     tz="America/New_York"))
        for pol in ("PARALLEL", "DISCARD_LATER", "SERIAL", "COVER_EARLY"):
            put(env, job("a", pol, u(f"/slow/{pol}"), overlap=pol, start_at=t0))
        put(env, job("a", "delay", u("/slow/delay"), kind="FIXED_DELAY", interval=1000,
                     start_at=t0))
        for pol in ("FIRE_ONCE_NOW", "DO_NOTHING"):
            put(env, job("a", pol, u(f"/fast/{pol}"), misfire=pol, start_at=t0))
        put(env, job("a", "upd", u("/fast/upd"), start_at=t0))
        env.flush()
        while now_ms() < t0 + 4000:
            time.sleep(0.05)
        paused_at = now_ms()
        for pol in ("FIRE_ONCE_NOW", "DO_NOTHING"):
            action(env, "a", pol, "PAUSE")
        put(env, job("a", "upd", u("/fast/upd"), interval=3000, start_at=t0 + 5000))
        env.flush()
        time.sleep(6)
        resumed_at = now_ms()
        for pol in ("FIRE_ONCE_NOW", "DO_NOTHING"):
            action(env, "a", pol, "RESUME")
        trig_at = now_ms()
        action(env, "a", "upd", "TRIGGER", trig_at)
        env.flush()
        while now_ms() < t0 + 16000:
            time.sleep(0.05)
        deleted_at = now_ms()
        for jid in ("cron", "PARALLEL", "DISCARD_LATER", "SERIAL", "COVER_EARLY", "delay",
                    "FIRE_ONCE_NOW", "DO_NOTHING", "upd"):
            action(env, "a", jid, "DELETE")
        env.flush()
        time.sleep(6)
        end = now_ms()

        cron = calls_of(server, "cron")
        assert len(cron) >= 6, len(cron)
        for c in cron:
            assert scheduled(c) % 2000 == 0, scheduled(c)
            assert c["at"] >= scheduled(c) - 5, "never early"

        def starts(jid):
            return [c for c in calls_of(server, jid) if c["at"] <= deleted_at + 1000]

        par = starts("PARALLEL")
        assert len(par) >= 13, f"PARALLEL: one call a second, overlapping ({len(par)})"
        for jid in ("DISCARD_LATER", "SERIAL", "delay"):
            calls = starts(jid)
            for a, b in zip(calls, calls[1:]):
                assert b["at"] >= a["responded_at"] - 5, f"{jid}: calls overlap"
        dl = starts("DISCARD_LATER")
        assert 3 <= len(dl) <= 6, f"DISCARD_LATER: a call every ~3 s ({len(dl)})"
        dl_at = [scheduled(c) for c in dl]
        subs, _, _ = occurrences(env, "DISCARD_LATER")
        assert sorted(subs) == sorted(dl_at) or set(dl_at) <= set(subs)
        assert len(subs) < 12, f"DISCARD_LATER wrote the skipped ones ({len(subs)})"
        se = starts("SERIAL")
        assert 4 <= len(se) <= 8, f"SERIAL: back to back ({len(se)})"
        for a, b in zip(se, se[1:]):
            assert b["at"] - a["responded_at"] < 1500, "SERIAL: the queued one runs right after"
        subs, cancels, _ = occurrences(env, "COVER_EARLY")
        assert cancels, "COVER_EARLY cancelled the ones not called yet"
        dly = starts("delay")
        for a, b in zip(dly, dly[1:]):
            assert b["at"] - a["responded_at"] >= 990, "FIXED_DELAY: 1 s after the finish"

        once = calls_of(server, "FIRE_ONCE_NOW")
        during = [c for c in once if paused_at + 1000 < scheduled(c) < resumed_at - 1000]
        assert len(during) == 1, f"FIRE_ONCE_NOW: the latest missed one, once ({len(during)})"
        assert during[0]["at"] >= resumed_at - 50
        nothing = calls_of(server, "DO_NOTHING")
        assert not [c for c in nothing if paused_at + 1000 < scheduled(c) < resumed_at - 1000], \
            "DO_NOTHING: nothing missed runs"
        assert [c for c in nothing if c["at"] > resumed_at + 1500], "and the schedule goes on"

        upd = calls_of(server, "upd")
        after = [scheduled(c) for c in upd if scheduled(c) >= t0 + 5000 and scheduled(c) != trig_at]
        assert after and all((a - (t0 + 5000)) % 3000 == 0 for a in after), after
        assert [c for c in upd if scheduled(c) == trig_at], "the trigger ran"
        print("     calls in 16 s: " + ", ".join(
            f"{jid} {len(starts(jid))}" for jid in ("cron", "PARALLEL", "DISCARD_LATER", "SERIAL",
                                                     "COVER_EARLY", "delay")) +
              f"; COVER_EARLY cancels {len(cancels)}")
        late = [c for c in server.snapshot() if "mooncake-scheduled-at" in c["headers"]
                and scheduled(c) > deleted_at + AHEAD_MS + 500]
        assert not late, f"occurrences written after the delete: {[c['path'] for c in late]}"
        assert end > deleted_at
    finally:
        env.stop_all()
        server.close()


# ---- 3 --------------------------------------------------------------------------------------

def other_version(change):
    """JobCommand.avsc changed by change(job_record_fields): (schema text, parsed, header)."""
    with open(os.path.join(SOURCE_DIR, "schemas", "JobCommand.avsc")) as f:
        schema = json.load(f)
    job = schema["fields"][0]["type"][0]["fields"][0]["type"]
    change(job["fields"])
    text = json.dumps(schema)
    pcf = fastavro.schema.to_parsing_canonical_form(json.loads(text))
    header = b"\xc3\x01" + bytes.fromhex(fastavro.schema.fingerprint(pcf, "CRC-64-AVRO"))
    return text, fastavro.parse_schema(json.loads(text)), header


def test_older_and_newer_job_commands_are_read():
    """Promise (README "Recurring jobs", schema evolution): JobCommand evolves like
    Command; a job written with another version the role was told about fires."""
    def previous(fields):  # before paused, metadata and catch_up_limit were added
        fields[:] = [f for f in fields if f["name"] not in ("paused", "metadata",
                                                            "catch_up_limit")]

    def newer(fields):  # a field this build does not know
        fields.insert(3, {"name": "owner", "type": "string", "default": ""})

    env = Env(partitions=3)
    try:
        files, versions = [], {}
        for name, change in (("previous", previous), ("newer", newer)):
            text, parsed, header = other_version(change)
            f = tempfile.NamedTemporaryFile("w", suffix=".avsc", delete=False)
            f.write(text)
            f.close()
            files.append(f.name)
            versions[name] = (parsed, header)
        env.start("jobs", instance="j", MOONCAKE_JOB_COMMAND_WRITER_SCHEMAS=",".join(files))
        start = (now_ms() // 1000 + 2) * 1000
        for name, (parsed, header) in versions.items():
            j = job("a", name, "http://127.0.0.1:9/x", start_at=start)
            if name == "previous":
                for k in ("paused", "metadata", "catch_up_limit"):
                    del j[k]
            else:
                j["owner"] = "team-x"
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, parsed, {"payload": ("mooncake.PutJob", {"job": j})})
            key = f"a/{name}".encode()
            env.produce("job-commands", key, header + buf.getvalue(),
                        partition=home_partition(key, env.partitions))
        unknown = copy.deepcopy(versions["newer"])
        key = b"a/unknown"
        env.produce("job-commands", key, b"\xc3\x01" + bytes(8) + b"\x00",
                    partition=home_partition(key, env.partitions))
        env.flush()
        deadline = time.time() + 30
        while True:
            tasks = read_tasks(env)
            fired = {name: start in occurrences(env, name, tasks)[0] for name in versions}
            if all(fired.values()) or time.time() > deadline:
                break
            time.sleep(0.5)
        assert all(fired.values()), f"jobs of these versions did not fire: {fired}"
        dead = [decode("DeadLetter", m.value()) for m in env.read_all("dead", idle=2.0)]
        assert any("fingerprint 0000000000000000" in d["reason"] for d in dead), \
            [d["reason"] for d in dead]
        assert unknown
        for f in files:
            os.unlink(f)
    finally:
        env.stop_all()


# ---- 3 --------------------------------------------------------------------------------------

def test_do_nothing_drops_occurrences_a_stop_made_late():
    """A job every second with DO_NOTHING and a 1 s threshold, occurrences written
    5 s ahead; the executor stopped (SIGSTOP) for 5 s: what was due meanwhile is
    DROPPED when the executor comes back, nothing is called more than the threshold
    late, and the job goes on."""
    env = Env(partitions=3)
    server = CallbackServer()
    threshold = 1000
    try:
        procs = start_roles(env, MOONCAKE_JOBS_AHEAD_MS=5000)
        put(env, job("shop", "tick", server.url("/tick"), interval=1000, misfire="DO_NOTHING",
                     threshold=threshold, start_at=now_ms() + 1000))
        env.flush()
        time.sleep(2.5)
        procs["executor"].send_signal(signal.SIGSTOP)
        stopped_at = now_ms()
        time.sleep(5)
        procs["executor"].send_signal(signal.SIGCONT)
        time.sleep(3.5)
        action(env, "shop", "tick", "PAUSE")
        env.flush()
        time.sleep(1.5)
        calls = calls_of(server, "tick")
        late = [c["at"] - scheduled(c) for c in calls]
        assert calls and max(late) <= threshold + 300, \
            f"called {max(late)} ms late, threshold {threshold}"
        assert any(scheduled(c) > stopped_at + 5000 for c in calls), "the job did not go on"
        results = final_results(env, "tick@")
        dropped = [t for t, o in results.items() if o == ["DROPPED"]]
        assert len(dropped) >= 3, f"{len(dropped)} dropped: {results}"
        called = {f"tick@{scheduled(c)}" for c in calls}
        assert not called & set(dropped), f"dropped and called: {called & set(dropped)}"
        for role, p in procs.items():
            assert p.poll() is None, f"{role} exited"
    finally:
        env.stop_all()
        server.close()


if __name__ == "__main__":
    tests = [test_forty_every_second_jobs_survive_kill_9_of_each_role,
             test_every_schedule_kind_and_policy,
             test_do_nothing_drops_occurrences_a_stop_made_late,
             test_older_and_newer_job_commands_are_read]
    pick = sys.argv[1:]
    run([t for t in tests if not pick or any(n in t.__name__ for n in pick)])
