"""The verdict: reads the committed topics (read_committed) and the harness's logs into
SQLite (chaos.db), judges what happened (lost, fired twice, cancelled or superseded
called, missing or duplicate Results, repeated calls, sanitizer reports, recurring jobs,
alarms, the view's answers), prints the summary and writes the report."""

import bisect
import datetime
import json
import os
import re
import sqlite3
import sys
import time
import urllib.parse
import uuid

from base import APP, ROOT, SESSION_TIMEOUT_MS, VIEW_PENDING, murmur2, say, tail
from endpoint import LAG_LOG_MIN_MS, MAX_LAG_ALLOWANCE_MS, TICK_MS, path_kind_sid
from workload import COMMAND_FIELDS, JOB_FIELDS, JOB_INTERVAL_MS, SID_HEADER

sys.path.insert(0, os.path.join(ROOT, "tools", "lib"))
from sanitizer_reports import SANITIZER_NEEDLES, librdkafka_leak_at_fatal_exit  # noqa: E402

# ---- reading what happened ---------------------------------------------------------------

def read_committed(bootstrap, topic, partitions, timeout=180):
    """Yields every committed record of the topic once no transaction is open on it:
    waits until the last stable offset equals the high watermark on every partition,
    then reads up to that watermark with read_committed."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    conf = {"bootstrap.servers": bootstrap, "enable.auto.commit": False,
            "group.id": "chaos-reader-" + uuid.uuid4().hex, "log_level": 3}
    rc = Consumer({**conf, "isolation.level": "read_committed"})
    ru = Consumer({**conf, "isolation.level": "read_uncommitted"})
    deadline = time.time() + timeout
    try:
        while True:
            try:
                lso = [rc.get_watermark_offsets(tp, timeout=10, cached=False)[1] for tp in tps]
                hw = [ru.get_watermark_offsets(tp, timeout=10, cached=False)[1] for tp in tps]
            except KafkaException:
                lso, hw = None, []
            if lso == hw:
                break
            if time.time() > deadline:
                raise RuntimeError(f"{topic}: transactions still open after {timeout}s "
                                   f"(LSO {lso}, HW {hw})")
            time.sleep(0.3)
        rc.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        done = [h == 0 for h in hw]
        while not all(done):
            for m in rc.consume(10000, 0.5):
                if m.error():
                    continue
                if m.offset() + 1 >= hw[m.partition()]:
                    done[m.partition()] = True
                yield m
            if not all(done):  # past the last record (transaction markers follow it)
                for tp in rc.position(tps):
                    if tp.offset >= hw[tp.partition]:
                        done[tp.partition] = True
            if time.time() > deadline + 600:
                raise RuntimeError(f"{topic}: reading stuck")
    finally:
        rc.close()
        ru.close()


DB_SCHEMA = """
CREATE TABLE commands(seq INTEGER, key TEXT, kind TEXT, sid INTEGER, due INTEGER,
  sent INTEGER, acked INTEGER, part INTEGER, off INTEGER, scenario TEXT, err TEXT);
CREATE TABLE calls(at REAL, kind TEXT, sid INTEGER, key TEXT, ikey TEXT, attempt INTEGER,
  status INTEGER, delay INTEGER);
CREATE TABLE wheel(key TEXT, version INTEGER, what TEXT, attempt INTEGER, due INTEGER,
  sid INTEGER, far INTEGER, handoff INTEGER, part INTEGER, off INTEGER, ts INTEGER);
CREATE TABLE ready(key TEXT, version INTEGER, what TEXT, attempt INTEGER, due INTEGER,
  sid INTEGER, part INTEGER, off INTEGER, ts INTEGER);
CREATE TABLE results(key TEXT, attempt INTEGER, due INTEGER, outcome TEXT, status INTEGER,
  started INTEGER, finished INTEGER, error TEXT, part INTEGER, off INTEGER, member TEXT);
CREATE TABLE attempts(key TEXT, attempt INTEGER, due INTEGER, sid INTEGER, status INTEGER,
  error TEXT, permanent INTEGER, part INTEGER, off INTEGER);
CREATE TABLE dead(key TEXT, attempt INTEGER, sid INTEGER, reason TEXT, part INTEGER,
  off INTEGER);
CREATE TABLE unreadable(topic TEXT, part INTEGER, off INTEGER, why TEXT);
CREATE TABLE visible_raw(topic TEXT, part INTEGER, off INTEGER, at INTEGER);
CREATE TABLE positions(at INTEGER, grp TEXT, part INTEGER, pos INTEGER);
CREATE TABLE questions(sent INTEGER, key TEXT, status INTEGER, state TEXT, version INTEGER,
  answered INTEGER);
"""
# Recurring jobs (IF NOT EXISTS: --judge of a run from before them). jtasks: the jobs
# processor's Submits and Cancels in `tasks` (made: the Submit's created_at or the
# Cancel's requested_at, when the processor wrote it; sid: the PutJob it came from).
JOB_DB_SCHEMA = """
CREATE TABLE IF NOT EXISTS jwheel AS SELECT * FROM wheel WHERE 0;
CREATE TABLE IF NOT EXISTS jready AS SELECT * FROM ready WHERE 0;
CREATE TABLE IF NOT EXISTS jresults AS SELECT * FROM results WHERE 0;
CREATE TABLE IF NOT EXISTS jattempts AS SELECT * FROM attempts WHERE 0;
CREATE TABLE IF NOT EXISTS jdead AS SELECT * FROM dead WHERE 0;
CREATE TABLE IF NOT EXISTS job_commands(seq INTEGER, job TEXT, kind TEXT, sid INTEGER,
  at INTEGER, start INTEGER, sched TEXT, sent INTEGER, acked INTEGER, part INTEGER,
  off INTEGER, err TEXT);
CREATE TABLE IF NOT EXISTS jtasks(key TEXT, job TEXT, at INTEGER, what TEXT, due INTEGER,
  made INTEGER, sid INTEGER, part INTEGER, off INTEGER, ts INTEGER);
CREATE TABLE IF NOT EXISTS follow_ups(key TEXT, parent TEXT, due INTEGER, made INTEGER,
  sid INTEGER, part INTEGER, off INTEGER);
"""
# Alarms (IF NOT EXISTS: --judge of a run from before them). dead_letters: every record of
# `dead` as the alarms role reads it (has_task 0: no decodable task; job: the task's
# job_id metadata); alarm_tasks: the alarms role's Submits in `tasks` (key app/task,
# the callback's URL and body); alarm_calls: the endpoint's log of the webhook's calls.
ALARM_DB_SCHEMA = """
CREATE TABLE IF NOT EXISTS dead_letters(key TEXT, app TEXT, task TEXT, has_task INTEGER,
  failed_at INTEGER, reason TEXT, job TEXT, part INTEGER, off INTEGER);
CREATE TABLE IF NOT EXISTS alarm_tasks(key TEXT, url TEXT, body TEXT, due INTEGER,
  created INTEGER, part INTEGER, off INTEGER);
CREATE TABLE IF NOT EXISTS alarm_calls(at REAL, path TEXT, method TEXT, ikey TEXT,
  webhook_id TEXT, content_type TEXT, body TEXT);
"""
# Sharding broadcasts (IF NOT EXISTS: --judge of a run from before them). shard_calls: the
# endpoint's log of the calls of shards (Idempotency-Key <app>/<task>#shard-<i>:<attempt>,
# or a call with mooncake-shard-index) with the port's name (which member) and the
# request headers mooncake-shard-index, mooncake-shard-total and webhook-id;
# shard_submits: the executor's Submits of shards in `tasks` (broadcast, shard, member:
# the metadata mooncake.broadcast, mooncake.shard "<i>/<n>@<version>", mooncake.member;
# the request headers the shard carries; made: its created_at); bresults: the Results of
# shards (with their headers mooncake-broadcast and mooncake-shard) and of the workload's
# broadcast tasks, with response_body and the record's timestamp.
BROADCAST_DB_SCHEMA = """
CREATE TABLE IF NOT EXISTS shard_calls(at REAL, sid INTEGER, key TEXT, ikey TEXT,
  attempt INTEGER, server TEXT, shard_index TEXT, shard_total TEXT, webhook_id TEXT);
CREATE TABLE IF NOT EXISTS shard_submits(key TEXT, broadcast TEXT, shard TEXT, member TEXT,
  index_header TEXT, total_header TEXT, due INTEGER, made INTEGER, sid INTEGER,
  part INTEGER, off INTEGER);
CREATE TABLE IF NOT EXISTS bresults(key TEXT, outcome TEXT, finished INTEGER,
  broadcast TEXT, shard TEXT, body TEXT, part INTEGER, off INTEGER, ts INTEGER);
"""
SHARD_MARK = "#shard-"  # a shard's task id: <task_id>#shard-<i> (common/broadcast.h)
# The view's minute counters (IF NOT EXISTS: --judge of a run from before them): the records
# of STATS_TOPICS as the view counts them, by their record key and Kafka record time (what:
# "submit" in tasks, the outcome in results, "dead"; home: a Submit at its key's murmur2
# partition; src_part, src_off: a dead letter's source record in tasks, one the router
# refused).
STATS_TOPICS = ("tasks", "results", "dead")
STATS_DB_SCHEMA = """
CREATE TABLE IF NOT EXISTS stats_records(topic TEXT, key TEXT, what TEXT, home INTEGER,
  part INTEGER, off INTEGER, ts INTEGER, src_part INTEGER, src_off INTEGER);
"""
# The task id of an alarm call starts with this (common/alarm.h, MC_ALARM_TASK_PREFIX).
ALARM_TASK_PREFIX = "mooncake-alarm-"
ALARM_FIRST = 10  # dead letters listed by key in one alarm (MC_ALARM_FIRST)
# An occurrence of a recurring job is the task <job>@<scheduled ms>: its records in
# wheel, ready, results, retry and dead go to the j-tables, so the checks of the
# client's tasks judge exactly what they did before; check_jobs judges them.
JOB_TABLES = ("wheel", "ready", "results", "attempts", "dead")
DB_INDEXES = """
CREATE INDEX IF NOT EXISTS commands_key ON commands(key, off);
CREATE INDEX IF NOT EXISTS commands_sid ON commands(sid);
CREATE INDEX IF NOT EXISTS calls_sid ON calls(sid, attempt);
CREATE INDEX IF NOT EXISTS calls_key ON calls(key);
CREATE INDEX IF NOT EXISTS wheel_key ON wheel(key);
CREATE INDEX IF NOT EXISTS wheel_sid ON wheel(sid, attempt);
CREATE INDEX IF NOT EXISTS ready_key ON ready(key, attempt, due);
CREATE INDEX IF NOT EXISTS ready_sid ON ready(sid, attempt);
CREATE INDEX IF NOT EXISTS results_key ON results(key, attempt, due);
CREATE INDEX IF NOT EXISTS attempts_key ON attempts(key);
CREATE INDEX IF NOT EXISTS dead_key ON dead(key);
CREATE INDEX IF NOT EXISTS positions_where ON positions(grp, part, pos, at);
CREATE INDEX IF NOT EXISTS jtasks_key ON jtasks(key, part, off);
CREATE INDEX IF NOT EXISTS jresults_key ON jresults(key);
CREATE INDEX IF NOT EXISTS jready_key ON jready(key);
CREATE TABLE visible AS SELECT topic, part, off, MIN(at) AS at FROM visible_raw
  GROUP BY topic, part, off;
CREATE INDEX IF NOT EXISTS visible_where ON visible(topic, part, off);
"""


def open_db(path):
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + DB_SCHEMA
                     + JOB_DB_SCHEMA + ALARM_DB_SCHEMA + STATS_DB_SCHEMA + BROADCAST_DB_SCHEMA)
    return db


def batched_insert(db, table, rows, n_cols, size=20000):
    sql = f"INSERT INTO {table} VALUES ({','.join('?' * n_cols)})"
    batch = []
    for r in rows:
        batch.append(r)
        if len(batch) >= size:
            db.executemany(sql, batch)
            batch.clear()
    if batch:
        db.executemany(sql, batch)


def load_commands(db, path):
    def rows():
        with open(path) as f:
            for line in f:
                v = line.rstrip("\n").split("\t")
                if len(v) != len(COMMAND_FIELDS):
                    continue
                yield tuple(int(x) if x and i not in (1, 2, 9, 10) else (x or None)
                            for i, x in enumerate(v))
    batched_insert(db, "commands", rows(), len(COMMAND_FIELDS))


def load_job_commands(db, path):
    def rows():
        try:
            with open(path) as f:
                for line in f:
                    v = line.rstrip("\n").split("\t")
                    if len(v) != len(JOB_FIELDS):
                        continue
                    yield tuple(int(x) if x and i not in (1, 2, 6, 11) else (x or None)
                                for i, x in enumerate(v))
        except OSError:
            return
    batched_insert(db, "job_commands", rows(), len(JOB_FIELDS))


def load_calls(db, path):
    """The endpoint's log into calls; the calls of broadcasts' shards also into
    shard_calls, with the port called and their shard headers (a log from before them
    has 5 fields a line)."""
    shards = []

    def rows():
        with open(path) as f:
            for line in f:
                v = line.rstrip("\n").split("\t")
                if len(v) not in (5, 9):
                    continue
                at, path_, ikey, status, delay = v[:5]
                kind, sid = path_kind_sid(path_)
                key, _, attempt = ikey.rpartition(":")
                attempt = int(attempt) if attempt.isdigit() else None
                if len(v) == 9 and (SHARD_MARK in key or v[6]):
                    shards.append((float(at), sid, key or None, ikey, attempt, *v[5:]))
                yield (float(at), kind, sid, key or None, ikey, attempt, int(status),
                       int(delay))
    batched_insert(db, "calls", rows(), 8)
    batched_insert(db, "shard_calls", shards, 9)


def load_deliveries(db, bootstrap, topic, partitions):
    """The records mooncake delivered to the Kafka targets' topic, read_committed, as
    calls of kind 'kafka': at = the record's timestamp (when the executor produced it),
    the sid from the workload's header, the task key from mooncake-task."""
    def rows():
        for m in read_committed(bootstrap, topic, partitions):
            h = _headers(m)
            sid = h.get(SID_HEADER, b"").decode()
            key = h.get("mooncake-task", b"").decode()
            yield (float(m.timestamp()[1]), "kafka", int(sid) if sid.isdigit() else None,
                   key or None, f"{key}:1", 1, 200, 0)
    batched_insert(db, "calls", rows(), 8)
    n = db.execute("SELECT COUNT(*) FROM calls WHERE kind = 'kafka'").fetchone()[0]
    say(f"  read {topic}: {n} delivered records")


def task_kind_sid(task):
    """(kind, sid) of a decoded Task: from its callback's path, or for a Kafka target
    from the header the workload gives its record."""
    target = task.get("kafka_target")
    if target:
        target = target[1] if isinstance(target, tuple) else target
        sid = target["headers"].get(SID_HEADER, "")
        return "kafka", int(sid) if sid.isdigit() else None
    return path_kind_sid(task["callback"]["url"])


def load_alarm_calls(db, path):
    def rows():
        try:
            with open(path) as f:
                for line in f:
                    try:
                        c = json.loads(line)
                    except ValueError:
                        continue  # a line cut short when the endpoint was stopped
                    yield (c["at"], c["path"], c["method"], c["ikey"], c["webhook_id"],
                           c["content_type"], c["body"])
        except OSError:
            return
    batched_insert(db, "alarm_calls", rows(), 7)


def load_questions(db, path):
    def rows():
        try:
            with open(path) as f:
                for line in f:
                    v = line.rstrip("\n").split("\t")
                    if len(v) == 6:
                        yield (int(v[0]), v[1], int(v[2]) if v[2] != "None" else None, v[3],
                               int(v[4]) if v[4] else None, int(v[5]))
        except (OSError, TypeError):
            return
    batched_insert(db, "questions", rows(), 6)


def load_visible(db, path):
    def rows():
        try:
            with open(path) as f:
                for line in f:
                    v = line.split("\t")
                    if len(v) == 4:
                        yield v[0], int(v[1]), int(v[2]), int(v[3])
        except OSError:
            return
    batched_insert(db, "visible_raw", rows(), 4)


def load_positions(db, path):
    def rows():
        try:
            with open(path) as f:
                for line in f:
                    v = line.rstrip("\n").split("\t")
                    if len(v) == 4:
                        yield int(v[0]), v[1], int(v[2]), int(v[3])
        except OSError:
            return
    batched_insert(db, "positions", rows(), 4)


def _headers(m):
    return {k: v for k, v in (m.headers() or [])}


def _submit_row(task):
    kind, sid = task_kind_sid(task)
    return (f"{task['app_id']}/{task['task_id']}", task["attempt"], task["due_at"], sid)


def load_topics(db, codec, bootstrap, prefix, partitions):
    """Decodes wheel, ready, results, retry and dead into their tables. Records that
    are not ours to judge (markers with no key or value, records of another schema)
    are counted in `unreadable` and otherwise skipped. The Submits of tasks and every
    Result and dead letter also go to stats_records, as the view counts them."""
    stats_rows = []

    def stat(topic, m, what, home=None, src=(None, None)):
        """A record the view's minute counters count, by its record key and time."""
        stats_rows.append((topic, (m.key() or b"").decode(errors="replace"), what, home,
                           m.partition(), m.offset(), m.timestamp()[1], *src))
        if len(stats_rows) >= 20000:
            batched_insert(db, "stats_records", stats_rows, 9)
            stats_rows.clear()

    def entries(topic, table):
        for m in read_committed(bootstrap, prefix + topic, partitions):
            v, where = m.value(), (m.partition(), m.offset())
            if v is None or m.key() is None:
                continue  # the store's position markers, and any other marker
            e = codec.decode("WheelEntry", v)
            if e is None:
                db.execute("INSERT INTO unreadable VALUES (?,?,?,?)",
                           (topic, *where, "not a WheelEntry"))
                continue
            name, body = e["payload"]
            ts = m.timestamp()[1]
            if name.endswith("Submit"):
                key, attempt, due, sid = _submit_row(body["task"])
                if table == "wheel":
                    h = _headers(m)
                    yield (key, e["version"], "submit", attempt, due, sid,
                           int("mooncake-route" in h), int("mooncake-store-position" in h),
                           *where, ts)
                else:
                    yield (key, e["version"], "submit", attempt, due, sid, *where, ts)
            else:
                key = f"{body['app_id']}/{body['task_id']}"
                row = (key, e["version"], "cancel", None, None, None)
                yield row + ((0, 0) if table == "wheel" else ()) + (*where, ts)

    broadcasts = {r[0] for r in db.execute(
        "SELECT key FROM commands WHERE scenario = 'broadcast'")}
    bresults = []

    def results():
        for m in read_committed(bootstrap, prefix + "results", partitions):
            r = codec.decode("Result", m.value())
            if r is None:
                db.execute("INSERT INTO unreadable VALUES (?,?,?,?)",
                           ("results", m.partition(), m.offset(), "not a Result"))
                continue
            stat("results", m, r["outcome"])
            key, h = f"{r['app_id']}/{r['task_id']}", _headers(m)
            if "mooncake-broadcast" in h or key in broadcasts:
                body = r.get("response_body")
                bresults.append((key, r["outcome"], r["finished_at"],
                                 h.get("mooncake-broadcast", b"").decode(errors="replace")
                                 if "mooncake-broadcast" in h else None,
                                 h.get("mooncake-shard", b"").decode(errors="replace")
                                 if "mooncake-shard" in h else None,
                                 bytes(body).decode("utf-8", "replace") if body is not None
                                 else None, m.partition(), m.offset(), m.timestamp()[1]))
            yield (f"{r['app_id']}/{r['task_id']}", r["attempt"], r["due_at"], r["outcome"],
                   r["http_status"], r["started_at"], r["finished_at"], r["error"],
                   m.partition(), m.offset(), r.get("member"))

    def attempts():
        for m in read_committed(bootstrap, prefix + "retry", partitions):
            a = codec.decode("Attempt", m.value())
            if a is None:
                continue
            key, attempt, due, sid = _submit_row(a["task"])
            yield (key, attempt, due, sid, a["http_status"], a["error"], int(a["permanent"]),
                   m.partition(), m.offset())

    dead_letters, alarm_tasks, follow_ups, shard_submits = [], [], [], []

    def dead():
        for m in read_committed(bootstrap, prefix + "dead", partitions):
            d = codec.decode("DeadLetter", m.value())
            if d is None:
                continue
            stat("dead", m, "dead", src=(d["source_partition"], d["source_offset"])
                 if d["source_topic"] == prefix + "tasks" else (None, None))
            key, attempt, sid = (m.key() or b"").decode(errors="replace"), None, None
            task = d["task"]
            if isinstance(task, tuple):  # a union branch: (name, record)
                task = task[1]
            if task:
                key, attempt, _, sid = _submit_row(task)
                dead_letters.append((key, task["app_id"], task["task_id"], 1, d["failed_at"],
                                     d["reason"], (task.get("metadata") or {}).get("job_id"),
                                     m.partition(), m.offset()))
            else:
                dead_letters.append((key, None, None, 0, d["failed_at"], d["reason"], None,
                                     m.partition(), m.offset()))
            yield (key, attempt, sid, d["reason"], m.partition(), m.offset())

    def tasks():
        """The jobs processor's Submits and Cancels of occurrences in `tasks` (the
        client's own commands are in commands.tsv)."""
        for m in read_committed(bootstrap, prefix + "tasks", partitions):
            c = codec.decode("Command", m.value())
            if c is None:
                continue
            name, body = c["payload"]
            if name.endswith("Submit") and m.key():
                stat("tasks", m, "submit", int(
                    (murmur2(m.key()) & 0x7FFFFFFF) % partitions == m.partition()))
            task = body.get("task") if name.endswith("Submit") else body
            parent = (task.get("metadata") or {}).get("mooncake.parent") \
                if task and name.endswith("Submit") else None
            meta = (task.get("metadata") or {}) if task and name.endswith("Submit") else {}
            if "mooncake.broadcast" in meta:  # a shard the executor submitted
                hdrs = {k.lower(): v for k, v in (task["callback"].get("headers") or {}).items()}
                shard_submits.append((
                    f"{task['app_id']}/{task['task_id']}", meta["mooncake.broadcast"],
                    meta.get("mooncake.shard"), meta.get("mooncake.member"),
                    hdrs.get("mooncake-shard-index"), hdrs.get("mooncake-shard-total"),
                    task["due_at"], task["created_at"], task_kind_sid(task)[1],
                    m.partition(), m.offset()))
                continue
            if parent:  # a follow-up the executor submitted on the parent's success
                follow_ups.append((f"{task['app_id']}/{task['task_id']}", parent,
                                   task["due_at"], task["created_at"], task_kind_sid(task)[1],
                                   m.partition(), m.offset()))
                continue
            if task and name.endswith("Submit") and \
                    task.get("task_id", "").startswith(ALARM_TASK_PREFIX):
                cb = task["callback"]
                alarm_tasks.append((f"{task['app_id']}/{task['task_id']}", cb["url"],
                                    bytes(cb["body"]).decode("utf-8", "replace"),
                                    task["due_at"], task["created_at"], m.partition(),
                                    m.offset()))
                continue
            if not task or "@" not in task.get("task_id", ""):
                continue
            job, _, at = task["task_id"].rpartition("@")
            key = f"{task['app_id']}/{task['task_id']}"
            where = (m.partition(), m.offset(), m.timestamp()[1])
            if name.endswith("Submit"):
                sid = task_kind_sid(task)[1]
                yield (key, job, int(at), "submit", task["due_at"], task["created_at"], sid,
                       *where)
            elif name.endswith("Cancel"):
                yield (key, job, int(at), "cancel", None, task["requested_at"], None, *where)

    def split(table, gen):
        """Rows of occurrences (a key with '@') into j<table>, the rest returned."""
        side = []
        for row in gen:
            if row[0] and "@" in row[0]:
                side.append(row)
            else:
                yield row
        batched_insert(db, "j" + table, side, len(side[0]) if side else 0)

    counts = {}
    for table, gen, n in (("wheel", entries("wheel", "wheel"), 11),
                          ("ready", entries("ready", "ready"), 9),
                          ("results", results(), 11), ("attempts", attempts(), 9),
                          ("dead", dead(), 6), ("jtasks", tasks(), 10)):
        t = time.time()
        batched_insert(db, table, split(table, gen) if table in JOB_TABLES else gen, n)
        counts[table] = db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        extra = ""
        if table in JOB_TABLES:
            counts["j" + table] = db.execute(f"SELECT COUNT(*) FROM j{table}").fetchone()[0]
            extra = f" + {counts['j' + table]} of occurrences"
        say(f"  read {table}: {counts[table]} records{extra} ({time.time() - t:.1f}s)")
    batched_insert(db, "dead_letters", dead_letters, 9)
    batched_insert(db, "alarm_tasks", alarm_tasks, 7)
    batched_insert(db, "follow_ups", follow_ups, 7)
    batched_insert(db, "shard_submits", shard_submits, 11)
    batched_insert(db, "bresults", bresults, 9)
    say(f"  read broadcasts' shards (the executor's Submits): {len(shard_submits)}; their "
        f"and the broadcasts' Results: {len(bresults)}")
    say(f"  read follow-ups (the executor's Submits on a success): {len(follow_ups)}")
    batched_insert(db, "stats_records", stats_rows, 9)
    counts["alarm_tasks"] = len(alarm_tasks)
    say(f"  read alarm tasks (the alarms role's Submits in tasks): {len(alarm_tasks)}")
    return counts


# ---- the verdict ---------------------------------------------------------------------------

class Disruptions:
    """Intervals in which chaos disturbed a role: from a kill, SIGSTOP, crash or broker
    stop until the instance (or broker) was back plus `settle` ms, time for the
    rebalance and for a predecessor's open transaction to time out. A burst counts as
    a disruption of kind "load" from its sending until 5 s after its due time.

    Rolls and scale steps (roll-*, scale-* events) are none: an orderly rebalance
    promises what a quiet pipeline does. So a call repeated across one is unexpected,
    and no check gets a tolerance for one: no lateness is judged (first-call lateness
    is only reported, and the product promises p99 within 500 ms through rolls), a
    Kafka target is never early, and a cancel must win as ever (the executor that
    takes a partition over holds its calls until it has read to where the takeover
    began, meeting a recall written before it first). Only the admission limit, not
    promised across a handover, is excused around every executor revoke
    (Verdict.limit_excuses)."""

    def __init__(self, events, t_end, settle, bursts=()):
        self.iv = [(b["send_at"], b["due"] + 5000, "load", f"burst {b['id']}") for b in bursts]
        pending, broker = {}, None
        for e in sorted(events, key=lambda e: e["t"]):
            k = e["kind"]
            if k in ("kill", "stop", "exit"):
                pending[e["slot"]] = e
            elif k in ("restart", "cont", "respawn"):
                s = pending.pop(e["slot"], None)
                if s:
                    self.iv.append((s["t"], e["t"] + settle, s["role"],
                                    f"{s['kind']} {s['instance']}"))
            elif k == "broker-stop":
                broker = e
            elif k == "broker-up" and broker:
                self.iv.append((broker["t"], e["t"] + settle, "broker", "broker restart"))
                broker = None
        for s in pending.values():
            self.iv.append((s["t"], t_end, s["role"], f"{s['kind']} {s['instance']}"))
        if broker:
            self.iv.append((broker["t"], t_end, "broker", "broker restart"))

    def hits(self, roles, a, b):
        """The disruptions of these roles (or of the broker) overlapping [a, b]."""
        return [iv for iv in self.iv
                if (iv[2] in roles or iv[2] == "broker") and iv[0] <= b and iv[1] >= a]

    def healthy_ms(self, roles, a, b):
        """How much of [a, b] no disruption of these roles (or the broker) covers."""
        covered, end = 0, a
        for s, e, _, _ in sorted(iv for iv in self.hits(roles, a, b)):
            s, e = max(s, end), min(e, b)
            if e > s:
                covered += e - s
                end = e
        return max(0, b - a - covered)


# When an executor gives up calls it had in flight, so that the partition's next owner
# makes them again: these lines of its log, and chaos on it (a kill, a SIGSTOP, a
# crash: Disruptions). An orderly revoke (a member joining or leaving, a graceful
# SIGTERM: a roll, a scale step) is no such turn: the executor lets its calls in flight
# end and commits their Results before the partitions move, so its "revoked N
# partitions" line excuses no repeat. What does:
#   "partitions lost" (WARN, before its "revoked N partitions"): the session expired and
#     the assignment was lost; the runner aborts, and the next owner redoes the rest;
#   "aborting transaction": the processor's work is dropped and made again;
#   "work still in flight at --drain-timeout-ms is given up with its partitions": an
#     orderly revoke or stop whose calls did not end within the bound (counted in
#     mooncake_executor_calls_cut_total);
#   librdkafka's "Consumer group session timed out" line, when it gives up the executor's
#     session (missed while the broker was away): the assignment is lost from then on
#     (the line is logged only where the flag follows), the partitions go to another
#     member, and the runner hears of it only when it polls again, perhaps seconds later
#     in a commit that waits on the broker (its "partitions lost" comes only then). Not
#     its "maximum poll interval exceeded" line: while a rebalance is under way that one
#     leaves the flag unset, and the executor goes on calling.
# How long before it reached the endpoint a call may have been started, as measured on
# the calls that arrived within TRANSIT_WINDOW_MS of it (Verdict.started_early), and at
# most: under ASan, with the two cores saturated, seconds-long transits are not such a
# wait but a call's Result that belongs to another of its tries.
TRANSIT_WINDOW_MS = 1000
MAX_TRANSIT_MS = 250
EXECUTOR_TURN = re.compile(
    r'^ts=(\S+)Z level=\w+ role=executor msg=(?:"(partitions lost)"|"(aborting transaction)"'
    r'|"(work still in flight at --drain-timeout-ms is given up with its partitions)"'
    r'|"\[thrd:[^\]]*\]: (Consumer group session timed out))')
# Every revoke, orderly or not: the admission limit is not promised across a handover
# (Verdict.limit_excuses), though no repeat is excused by an orderly one.
EXECUTOR_REVOKE = re.compile(r'^ts=(\S+)Z level=\w+ role=executor msg="(revoked \d+ partitions)"')


def endpoint_lags(path):
    """The endpoint's loop lags (endpoint_lag.tsv): [(when the ticker ran, how late),
    ...] in time order."""
    lags = []
    try:
        with open(path) as f:
            for line in f:
                v = line.rstrip("\n").split("\t")
                if len(v) == 2:
                    lags.append((float(v[0]), float(v[1])))
    except OSError:
        pass
    lags.sort()
    return lags


def executor_log_times(logs, pattern):
    """[(ms, what (log file))] of the executors' log lines matching pattern (group 1
    the time stamp, the first other group that matched what it says)."""
    found = []
    for path in logs:
        if "executor" not in os.path.basename(path) or not os.path.exists(path):
            continue
        with open(path, errors="replace") as f:
            for line in f:
                m = pattern.match(line)
                if m:
                    t = datetime.datetime.fromisoformat(m[1]).replace(
                        tzinfo=datetime.timezone.utc).timestamp() * 1000
                    what = next(g for g in m.groups()[1:] if g)
                    found.append((t, f"{what} ({os.path.basename(path)})"))
    return found


def executor_turns(logs):
    """When an executor gave up its calls in flight without chaos naming it
    (EXECUTOR_TURN): its assignment lost (librdkafka giving up its session, or the
    runner's "partitions lost"; the executor starts no call from then on, and the next
    owner makes the ones in flight), an aborted transaction, or calls still running
    when an orderly revoke or stop reached --drain-timeout-ms. Each repeats the calls
    then unfinished ([Semantics]); an orderly revoke repeats none. [(ms, what)]"""
    return executor_log_times(logs, EXECUTOR_TURN)


def executor_revokes(logs):
    """Every "revoked N partitions" of an executor, orderly or not: the handovers the
    admission limit is not promised across. [(ms, what)]"""
    return executor_log_times(logs, EXECUTOR_REVOKE)


def iso_ms(ms):
    """Epoch ms as UTC ISO 8601 to the second (a minute's start in the report)."""
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def pct(sorted_vals, f):
    if not sorted_vals:
        return None
    return sorted_vals[min(len(sorted_vals) - 1, int(f * len(sorted_vals)))]


class Verdict:
    """The checks, in SQL over chaos.db (so a million tasks need little memory), and
    the details of every violation."""

    def __init__(self, db, events, args, t0, t_end, bursts):
        self.db, self.events, self.args = db, events, args
        self.db.row_factory = sqlite3.Row
        self.t0, self.t_end = t0, t_end
        self.cut = t_end - args.lost_margin_ms  # due before this: must be done by the end
        self.dis = Disruptions(events, t_end, args.settle_ms, bursts)
        self.counts, self.violations, self.info = {}, {}, {}
        self.trails = {}

    def q(self, sql, *params):
        return self.db.execute(sql, params).fetchall()

    def prepare(self):
        """Derived tables: each client command with the next one for its key (by
        offset, i.e. version), every scheduled call (sid, attempt, due), and the calls
        made per (sid, attempt)."""
        self.db.executescript("""
            DROP TABLE IF EXISTS bad_keys; DROP TABLE IF EXISTS nxt;
            DROP TABLE IF EXISTS sched; DROP TABLE IF EXISTS called;
            DROP TABLE IF EXISTS visible;
            CREATE TABLE IF NOT EXISTS positions(at INTEGER, grp TEXT, part INTEGER,
              pos INTEGER);""" + JOB_DB_SCHEMA + ALARM_DB_SCHEMA + BROADCAST_DB_SCHEMA
                               + DB_INDEXES + """
            CREATE TABLE bad_keys AS SELECT DISTINCT key FROM commands WHERE err IS NOT NULL;
            CREATE TABLE nxt AS SELECT seq, key, kind, sid, due, sent, acked, part, off,
                scenario, LEAD(seq) OVER w AS n_seq, LEAD(sent) OVER w AS n_sent,
                LEAD(acked) OVER w AS n_acked, LEAD(kind) OVER w AS n_kind,
                LEAD(sid) OVER w AS n_sid, LEAD(off) OVER w AS n_off
              FROM commands WHERE err IS NULL AND key NOT IN (SELECT key FROM bad_keys)
              WINDOW w AS (PARTITION BY key ORDER BY off);
            CREATE INDEX IF NOT EXISTS nxt_sid ON nxt(sid);
            CREATE TABLE sched(sid INTEGER, attempt INTEGER, due INTEGER, src TEXT);
            INSERT INTO sched SELECT sid, 1, due, 'client' FROM nxt WHERE kind = 'submit';
            INSERT INTO sched SELECT sid, attempt, MIN(due), 'retry' FROM wheel
              WHERE what = 'submit' AND attempt >= 2 AND sid IS NOT NULL
                AND key NOT LIKE '%#shard-%' GROUP BY sid, attempt;
            CREATE INDEX IF NOT EXISTS sched_sid ON sched(sid, attempt);
            CREATE TABLE called AS SELECT sid, attempt, MIN(at) AS first, COUNT(*) AS n
              FROM calls WHERE sid IS NOT NULL GROUP BY sid, attempt;
            CREATE INDEX IF NOT EXISTS called_sid ON called(sid, attempt);
        """)
        # A next attempt that a FAILED_WILL_RETRY Result announces but that never reached
        # `wheel` was scheduled all the same: due at the failure + the backoff it names.
        extra = []
        for r in self.q("""SELECT r.finished, r.error, r.attempt, f.sid FROM results r
                JOIN ready f ON f.key = r.key AND f.attempt = r.attempt AND f.due = r.due
                  AND f.what = 'submit'
                WHERE r.outcome = 'FAILED_WILL_RETRY' AND f.sid IS NOT NULL
                  AND r.key NOT LIKE '%#shard-%'
                  AND NOT EXISTS (SELECT 1 FROM sched s WHERE s.sid = f.sid
                                  AND s.attempt = r.attempt + 1)
                GROUP BY f.sid, r.attempt"""):
            m = re.search(r"attempt (\d+) in (\d+) ms", r["error"])
            extra.append((r["sid"], r["attempt"] + 1,
                          r["finished"] + (int(m.group(2)) if m else 0), "result"))
        self.db.executemany("INSERT INTO sched VALUES (?,?,?,?)", extra)
        self.info["unknown_commands"] = self.q(
            "SELECT COUNT(*) FROM commands WHERE key IN (SELECT key FROM bad_keys)")[0][0]
        self.info["calls_unknown_sid"] = self.q(
            "SELECT COUNT(*) FROM calls WHERE kind IS NOT 'job' AND kind IS NOT 'alarm' AND "
            "(sid IS NULL OR sid NOT IN (SELECT sid FROM commands WHERE sid IS NOT NULL))")[0][0]
        self.prepare_positions()

    def prepare_positions(self):
        """positions_sure: the position samples read_by() trusts (see there), and how many
        were left out as misreads."""
        self.db.executescript("""
            CREATE TABLE IF NOT EXISTS positions(at INTEGER, grp TEXT, part INTEGER,
              pos INTEGER);
            DROP TABLE IF EXISTS positions_sure;
            CREATE TABLE positions_sure AS SELECT at, grp, part, pos FROM (
                SELECT at, grp, part, pos,
                  MIN(pos) OVER (PARTITION BY grp, part ORDER BY at DESC
                                 ROWS UNBOUNDED PRECEDING) AS later_min
                FROM positions) WHERE pos <= later_min;
            CREATE INDEX positions_sure_where ON positions_sure(grp, part, pos, at);""")
        self.info["positions_misread"] = self.q(
            "SELECT (SELECT COUNT(*) FROM positions) - (SELECT COUNT(*) FROM positions_sure)")[0][0]

    def read_by(self, group, part, off):
        """When the wheel or the store had certainly read record `off` of `wheel`: the
        first position sample past it (positions are committed ones, so this is an
        upper bound); None when no sample passed it.
        A committed position never goes back (a new owner starts from it), so
        a sample above a later one is a misread and is left out. Misreads are only
        ever too high: confluent-kafka reads the wheel's commit metadata past its end
        (observers.child_positions), so "v1 o=148" once came back as 14885, between
        samples of 61 and 157, and made every command on that partition look read by
        the wheel from then on."""
        if off is None:
            return None
        return self.q("""SELECT MIN(at) FROM positions_sure WHERE grp = ? AND part = ?
                         AND pos > ?""", group, part, off)[0][0]

    # -- the checks --
    def check_lost(self):
        """A scheduled call had to be made when the system had lost-margin ms of
        undisturbed time (no chaos on the router, store, wheel or broker) after it was
        due and had reached `wheel` (visible to its readers; a lagging router delays
        that) before the next client command for its key was sent, or before the end.
        With less, it may legitimately have been superseded while the system caught
        up: unjudged. A call counts as made when the endpoint saw it, or when the
        executor wrote a Result for it (a call that timed out before it reached the
        endpoint was made and failed)."""
        roles = ("router", "store", "wheel")
        margin = self.args.lost_margin_ms
        must, lost, unjudged, made_elsewhere = 0, [], 0, 0
        for r in self.db.execute("""
                SELECT s.sid, s.attempt, s.due, s.src, n.key, n.part, n.off, n.scenario, n.n_seq,
                       n.n_sent, n.n_kind, c.n AS calls,
                       (SELECT MIN(w.off) FROM wheel w WHERE w.sid = s.sid
                          AND w.attempt = s.attempt AND w.handoff = 0) AS w_off,
                       (SELECT MAX(w.far) FROM wheel w WHERE w.sid = s.sid
                          AND w.attempt = s.attempt AND w.handoff = 0) AS far,
                       (SELECT MIN(v.at) FROM wheel w JOIN visible v ON v.topic = 'wheel'
                          AND v.part = w.part AND v.off = w.off
                        WHERE w.sid = s.sid AND w.attempt = s.attempt AND w.handoff = 0)
                         AS seen,
                       (SELECT COUNT(*) FROM results x WHERE x.key = n.key
                          AND x.attempt = s.attempt AND x.due = s.due
                          AND x.outcome != 'CANCELLED') AS results
                FROM sched s JOIN nxt n ON n.sid = s.sid
                LEFT JOIN called c ON c.sid = s.sid AND c.attempt = s.attempt
                WHERE s.due < ? AND (n.n_sent IS NULL OR n.n_sent > s.due + ?)""",
                                 (self.cut, margin)):
            # The wheel (a far task: the store) read it by then; no sample past it (it
            # never read it, or sampling failed): when it became visible to readers.
            reader = "store" if r["far"] else "wheel"
            read = self.read_by(reader, r["part"], r["w_off"]) or r["seen"] or 0
            ready_by = max(r["due"], read)
            until = r["n_sent"] if r["n_sent"] is not None else self.t_end
            if self.dis.healthy_ms(roles, ready_by, until) < margin:
                unjudged += 1
                continue
            must += 1
            if r["calls"] is None:
                if r["results"]:
                    made_elsewhere += 1
                else:
                    lost.append(r)
        self.counts.update(must_call=must, lost=len(lost), lost_unjudged=unjudged)
        self.info["made_without_reaching_the_endpoint"] = made_elsewhere
        self.violations["lost"] = [
            self.detail("lost", r["key"], r["due"], r["due"], sid=r["sid"],
                        attempt=r["attempt"], due=r["due"], scheduled_by=r["src"],
                        scenario=r["scenario"], next_command=r["n_kind"],
                        next_sent=r["n_sent"],
                        **self.with_pattern(self.lost_pattern(r["key"], r["sid"], r["attempt"],
                                                              r["off"])))
            for r in lost]

    def check_fired_twice(self):
        rows = self.q("""SELECT key, version, attempt, COUNT(*) AS n, MIN(due) AS due,
                            GROUP_CONCAT(part || '@' || off, ' ') AS where_
                         FROM ready WHERE what = 'submit'
                         GROUP BY key, version, attempt HAVING COUNT(*) > 1""")
        self.counts["fired"] = self.q(
            "SELECT COUNT(*) FROM ready WHERE what = 'submit'")[0][0]
        self.counts["fired_twice"] = len(rows)
        self.violations["fired_twice"] = [
            self.detail("fired_twice", r["key"], r["due"], r["due"], version=r["version"],
                        attempt=r["attempt"], times=r["n"], in_ready=r["where_"])
            for r in rows]

    def check_cancelled_called(self):
        """A later cancel or re-submit of the key must win (the call is not made) when
        the wheel had read it in time. When it had certainly read it (the first sample
        of the wheel's committed position past the command's router copy in `wheel`)
        is
          - at least the lead before the due time ("early": the wheel must not fire
            the task at all), with no chaos on the router, the wheel or the broker
            from the command's send to the due time; or
          - at least recall-margin before it ("lead window": the wheel must recall
            what it fired early, and the recall reach the executor in time; the
            margin is the recall's hop, calibrated with no store running), with no
            chaos on the executor either and no burst loading the pipeline.
        A cancel (not a re-submit) must also win when the router's transaction that
        routed it (its copy in `wheel`, and in the same transaction its recall in
        `ready`) became visible at least recall-margin before the due time, whenever
        the wheel read it ("one hop": the executor drops what it holds on the router's
        recall), with no chaos on the router or the executor and no burst.
        A command acknowledged lead + cancel-margin before the due time that never
        reached `wheel` is judged too ("never routed"). The rest is counted, not
        judged: too close to the due time, or the pipeline lagging (acknowledged early
        but read by the wheel late; the wheel has been seen seconds behind its input
        with no chaos at all)."""
        rows = self.db.execute("""
            SELECT s.sid, s.attempt, s.due, n.key, n.part, n.scenario, n.n_seq, n.n_sent,
                   n.n_acked, n.n_kind, n.n_sid, n.n_off, c.first, c.n AS calls,
                   (SELECT MIN(v.at) FROM wheel w JOIN visible v ON v.topic = 'wheel'
                      AND v.part = w.part AND v.off = w.off
                    WHERE w.key = n.key AND w.version = n.n_off AND w.handoff = 0) AS seen,
                   (SELECT MIN(w.off) FROM wheel w WHERE w.key = n.key
                      AND w.version = n.n_off AND w.handoff = 0) AS w_off,
                   (SELECT MAX(w.handoff) FROM wheel w WHERE w.sid = s.sid
                      AND w.attempt = s.attempt) AS via_store,
                   (SELECT MIN(v.at) FROM ready r JOIN visible v ON v.topic = 'ready'
                      AND v.part = r.part AND v.off = r.off
                    WHERE r.key = n.key AND r.what = 'cancel' AND r.version >= n.n_off)
                     AS recalled
            FROM sched s JOIN nxt n ON n.sid = s.sid
            LEFT JOIN called c ON c.sid = s.sid AND c.attempt = s.attempt
            WHERE n.n_acked IS NOT NULL AND s.due < ? AND n.n_acked <= s.due""", (self.cut,))
        judged = {"early": 0, "one hop": 0, "lead window": 0, "never routed": 0}
        unjudged, close, close_called, lagging = 0, 0, 0, 0
        bad = []
        self.info["lead_window_estimate"] = estimate = {
            via: {"commands": 0, "recalled": 0, "called_anyway": 0}
            for via in ("through the store", "wheel only")}
        for r in rows:
            path, roles, read = self.cancel_judgement(r)
            if self.in_lead_window_estimate(r, read):
                e = estimate["through the store" if r["via_store"] else "wheel only"]
                e["commands"] += 1
                e["recalled"] += r["recalled"] is not None
                e["called_anyway"] += r["calls"] is not None
            if path == "too close":
                close += 1
                close_called += r["calls"] is not None
                continue
            if path == "lagging":
                lagging += 1
                continue
            if self.dis.hits(roles, r["n_sent"], r["due"]):
                unjudged += 1
                continue
            judged[path] += 1
            if r["calls"] is not None:
                bad.append(self.detail(
                    "cancelled_called", r["key"], r["n_sent"], r["due"], sid=r["sid"],
                    attempt=r["attempt"],
                    due=r["due"], scenario=r["scenario"], judged=path,
                    **self.with_pattern(self.called_pattern(r)),
                    what="cancelled" if r["n_kind"] == "cancel" else "superseded",
                    by_command=r["n_seq"], by_sid=r["n_sid"],
                    by_acked=r["n_acked"], by_visible_in_wheel=r["seen"],
                    read_by_wheel=read,
                    recall_visible_in_ready=r["recalled"], called_at=r["first"],
                    calls=r["calls"]))
        self.info["lagging"] = lagging
        self.info["recalls"] = self.q("SELECT COUNT(*) FROM ready WHERE what = 'cancel'")[0][0]
        self.counts.update(cancelled_called=len(bad), cancel_judged_early=judged["early"],
                           cancel_judged_lead=judged["lead window"],
                           cancel_judged_one_hop=judged["one hop"],
                           cancel_judged_unrouted=judged["never routed"],
                           cancel_unjudged=unjudged)
        self.violations["cancelled_called"] = bad
        self.info["too_close_to_judge"] = {"commands": close, "called_anyway": close_called}

    def in_lead_window_estimate(self, r, read):
        """Informational: a command that became visible in `wheel` inside the lead
        window (after the wheel fires early, recall-margin or more before the due
        time) while the wheel kept up with its input (read it within 500 ms of visible):
        the case the recall exists for. A working recall path recalls most of them
        (calibrated with no store running); commit-granular positions cannot prove the
        wheel read each in time, so they are not judged."""
        if r["seen"] is None or read is None or read - r["seen"] > 500:
            return False
        return self.args.recall_margin_ms <= r["due"] - r["seen"] < self.args.lead_ms

    def cancel_judgement(self, r):
        """How the later command r must have won: (path, roles whose chaos would excuse
        the call, when the wheel had read it), or ("too close" | "lagging", None, ...).
        """
        lead, margin = self.args.lead_ms, self.args.cancel_margin_ms
        acked_early = r["due"] - r["n_acked"] >= lead + margin
        if r["w_off"] is None:  # the router never wrote it to wheel
            if acked_early:
                return "never routed", ("router", "wheel"), None
            return "too close", None, None
        read = self.read_by("wheel", r["part"], r["w_off"])
        if read is not None and r["due"] - read >= lead:
            return "early", ("router", "wheel"), read
        if (r["n_kind"] == "cancel" and r["seen"] is not None
                and r["due"] - r["seen"] >= self.args.recall_margin_ms):
            return "one hop", ("router", "executor", "load"), read
        if read is not None and r["due"] - read >= self.args.recall_margin_ms:
            return "lead window", ("router", "wheel", "executor", "load"), read
        late = acked_early or (r["seen"] is not None
                               and r["due"] - r["seen"] >= self.args.recall_margin_ms)
        return ("lagging" if late else "too close"), None, read

    def check_results(self):
        """Exactly one Result per fired (key, version, attempt), matched on key,
        attempt and due time (a Result carries no version)."""
        cte = """WITH f AS (SELECT key, attempt, due, COUNT(DISTINCT version) AS n,
                              GROUP_CONCAT(DISTINCT version) AS versions
                            FROM ready WHERE what = 'submit' AND due < :cut
                            GROUP BY key, attempt, due),
                      r AS (SELECT key, attempt, due, COUNT(*) AS n,
                              GROUP_CONCAT(outcome, ' ') AS outcomes
                            FROM results WHERE due < :cut GROUP BY key, attempt, due)"""
        missing = self.db.execute(cte + """
            SELECT f.key, f.attempt, f.due, f.n AS fired, f.versions, COALESCE(r.n, 0) AS got,
                   r.outcomes FROM f LEFT JOIN r USING (key, attempt, due)
            WHERE f.n > COALESCE(r.n, 0)""", {"cut": self.cut}).fetchall()
        dup = self.db.execute(cte + """
            SELECT r.key, r.attempt, r.due, COALESCE(f.n, 0) AS fired, f.versions,
                   r.n AS got, r.outcomes FROM r LEFT JOIN f USING (key, attempt, due)
            WHERE r.n > COALESCE(f.n, 0)""", {"cut": self.cut}).fetchall()
        for name, rows in (("missing_results", missing), ("duplicate_results", dup)):
            self.counts[name] = sum(abs(r["fired"] - r["got"]) for r in rows)
            self.violations[name] = [
                self.detail(name, r["key"], r["due"], r["due"], attempt=r["attempt"], due=r["due"],
                            fired_versions=r["versions"], fired=r["fired"], results=r["got"],
                            outcomes=r["outcomes"]) for r in rows]

    def check_deliveries(self):
        """Kafka targets are exactly once: every record in the target topic
        (read_committed) delivers a scheduled call once, never before its due time,
        whatever crashed; lost and cancelled-but-delivered ones are judged with the
        calls (check_lost, check_cancelled_called)."""
        twice = self.q("""SELECT key, sid, attempt, COUNT(*) AS n, MIN(at) AS first
                          FROM calls WHERE kind = 'kafka'
                          GROUP BY sid, attempt HAVING COUNT(*) > 1""")
        # Scheduled by a client, a retry, or a success (a follow-up's one attempt).
        due = """(SELECT sid, attempt, due FROM sched
                  UNION ALL SELECT sid, 1, MIN(due) FROM follow_ups GROUP BY sid)"""
        early = self.q(f"""SELECT c.key, c.sid, c.attempt, c.at, s.due FROM calls c
                           JOIN {due} s ON s.sid = c.sid AND s.attempt = c.attempt
                           WHERE c.kind = 'kafka' AND c.at < s.due""")
        strays = self.q(f"""SELECT COUNT(*) FROM calls WHERE kind = 'kafka' AND (sid IS NULL
                            OR sid NOT IN (SELECT sid FROM {due}))""")[0][0]
        self.counts.update(
            delivered=self.q("SELECT COUNT(*) FROM calls WHERE kind = 'kafka'")[0][0],
            delivered_twice=len(twice), delivered_early=len(early), delivered_unknown=strays)
        self.violations["delivered_twice"] = [
            self.detail("delivered_twice", r["key"], r["first"], r["first"], sid=r["sid"],
                        attempt=r["attempt"], times=r["n"]) for r in twice]
        self.violations["delivered_early"] = [
            self.detail("delivered_early", r["key"], r["at"], r["due"], sid=r["sid"],
                        attempt=r["attempt"], due=r["due"], early_ms=r["due"] - r["at"])
            for r in early]

    def check_follow_ups(self):
        """Follow-ups (on_success) are submitted once per success of their parent, in
        its transaction: for every parent that named one (scenario near-then) and
        finished before the cut, its follow-up's Submits in `tasks` number exactly its
        SUCCEEDED Results; and each follow-up due before the cut ran (a SUCCEEDED
        Result for its key and due time)."""
        wrong = [r for r in self.q("""
            WITH ok AS (SELECT key, COUNT(*) AS n, MAX(finished) AS last FROM results
                        WHERE outcome = 'SUCCEEDED' GROUP BY key),
                 made AS (SELECT key, COUNT(*) AS n FROM follow_ups GROUP BY key)
            SELECT n.key AS parent, n.key || '.then1' AS child, n.due,
                   COALESCE(ok.n, 0) AS successes, ok.last, COALESCE(made.n, 0) AS submitted
            FROM nxt n LEFT JOIN ok ON ok.key = n.key
            LEFT JOIN made ON made.key = n.key || '.then1'
            WHERE n.scenario = 'near-then' AND n.kind = 'submit' AND n.due < ?
              AND COALESCE(ok.last, 0) < ?""", self.cut, self.cut)
                 if r["submitted"] != r["successes"]]
        not_run = self.q("""SELECT f.key, f.due, f.parent FROM follow_ups f
                            WHERE f.due < ? AND NOT EXISTS (SELECT 1 FROM results r
                              WHERE r.key = f.key AND r.due = f.due
                              AND r.outcome = 'SUCCEEDED')""", self.cut)
        self.counts.update(follow_ups=self.q("SELECT COUNT(*) FROM follow_ups")[0][0],
                           follow_ups_wrong=len(wrong), follow_ups_not_run=len(not_run))
        self.violations["follow_ups_wrong"] = [
            self.detail("follow_ups_wrong", r["parent"], r["due"], r["last"] or r["due"],
                        follow_up=r["child"], successes=r["successes"],
                        submitted=r["submitted"]) for r in wrong]
        self.violations["follow_ups_not_run"] = [
            self.detail("follow_ups_not_run", r["key"], r["due"], r["due"], due=r["due"],
                        parent=r["parent"]) for r in not_run]

    def check_repeats(self):
        """Each repeat of a call (same sid and Idempotency-Key) is expected when an
        executor or broker disruption (Disruptions: not a roll or a scale step) or an
        executor turn (EXECUTOR_TURN: not an orderly revoke) lies between it and the
        call before it. (A Kafka target is never repeated: check_deliveries.)"""
        expected, unexpected = self.repeats(
            "kind IS NOT 'job' AND kind IS NOT 'alarm' AND kind IS NOT 'kafka'")
        self.counts["repeats_expected"] = len(expected)
        self.counts["repeats_expected_by_endpoint_lag"] = sum(e["by_lag"] for e in expected)
        self.counts["repeats_unexpected"] = len(unexpected)
        self.violations["unexpected_repeats"] = [
            dict(self.detail("unexpected_repeats", u["key"], u["previous_call"], u["repeat"]),
                 **u)
            for u in unexpected]
        self.info["expected_repeats"] = expected

    def logged_late(self, at):
        """How much earlier than logged at `at` a call may have reached the endpoint.
        A tick that ran at T lag L late means the loop was busy from about T - L -
        TICK_MS to T (a tick cannot run while the loop works through a backlog); a
        call logged at `at` inside that spell may have waited since its start, at -
        (T - L - TICK_MS), and one logged before it began did not wait for it. So may
        a call logged right after the late tick (within LAG_LOG_MIN_MS): once the
        spell ends the loop serves the tick and the calls that waited in either order
        (seed 720701: a call logged 1.3 ms after a tick 4.2 ms late). The most of that
        over those ticks and the ones of the 100 ms after `at`, at most
        MAX_LAG_ALLOWANCE_MS; LAG_LOG_MIN_MS when the loop kept up (lags that small
        are not logged)."""
        lags = getattr(self, "endpoint_lag", [])
        i = bisect.bisect_left(lags, (at - LAG_LOG_MIN_MS, 0.0))
        worst = 0.0
        while i < len(lags) and lags[i][0] <= at + 100:
            t, lag = lags[i]
            worst = max(worst, lag + TICK_MS - (t - at))
            i += 1
        return min(max(worst, LAG_LOG_MIN_MS), MAX_LAG_ALLOWANCE_MS)

    def call_transits(self):
        """[(arrival, transit)] in arrival order: for each first attempt of a Submit
        called once whose Result says when its call started, how long before it reached
        the endpoint the executor had started it (curl may hold a started call for a
        connection: the executor's per-host cap, a slow endpoint keeping them). Read
        once; [] without the tables."""
        if getattr(self, "_transits", None) is None:
            try:
                rows = self.q("""
                    SELECT c.at AS at, c.at - r.started AS transit FROM calls c
                    JOIN commands m ON m.sid = c.sid
                    JOIN results r ON r.key = c.key AND r.attempt = c.attempt AND r.due = m.due
                    WHERE c.attempt = 1 AND r.started > 0 AND c.sid IN (
                      SELECT sid FROM calls WHERE attempt = 1 AND sid IS NOT NULL
                      GROUP BY sid HAVING COUNT(*) = 1)
                    ORDER BY c.at""")
            except sqlite3.OperationalError:
                rows = []
            self._transits = [(r["at"], max(0.0, r["transit"])) for r in rows]
        return self._transits

    def started_early(self, at):
        """How long before it reached the endpoint (at) a call may have been started:
        the longest transit (call_transits) of the calls that arrived within
        TRANSIT_WINDOW_MS of it, at most MAX_TRANSIT_MS; 0 without such calls. A call
        started before an executor turn is given up with it and made again, even when
        it reached the endpoint after the turn's log line."""
        transits = self.call_transits()
        i = bisect.bisect_left(transits, (at - TRANSIT_WINDOW_MS, float("-inf")))
        worst = 0.0
        while i < len(transits) and transits[i][0] <= at + TRANSIT_WINDOW_MS:
            worst = max(worst, transits[i][1])
            i += 1
        return min(worst, MAX_TRANSIT_MS)

    def repeats(self, where):
        """(expected, unexpected) repeats among the calls matching `where` (a repeat:
        the same sid and Idempotency-Key; an alarm call has no sid, its key names the
        alarm task). The previous call counts from when it may have reached the
        endpoint (see logged_late), not from when the endpoint's loop logged it, and
        an executor turn from when the executor may have started it (started_early)."""
        expected, unexpected = [], []
        for r in self.q(f"""SELECT sid, ikey, key, GROUP_CONCAT(at, ' ') AS ats FROM calls
                            WHERE (sid IS NOT NULL OR kind = 'alarm') AND {where}
                            GROUP BY sid, ikey HAVING COUNT(*) > 1"""):
            ats = sorted(float(x) for x in r["ats"].split())
            for prev, at in zip(ats, ats[1:]):
                late = self.logged_late(prev)
                early = self.started_early(prev - late)
                # A log line's time is cut to the millisecond: the turn happened
                # within the millisecond after it.
                why = self.dis.hits(("executor",), prev - late, at) + [
                    (t, t, "executor", w) for t, w in self.executor_turns
                    if prev - late - early <= t + 1 and t <= at]
                # counted apart: judged expected only thanks to the endpoint's lag
                item = {"key": r["key"], "sid": r["sid"], "idempotency_key": r["ikey"],
                        "previous_call": prev, "repeat": at, "endpoint_lag_ms": late,
                        "started_early_ms": early,
                        "by_lag": bool(why) and all(e < prev for _, e, _, _ in why),
                        "disruptions": [{"from": a, "to": b, "what": w} for a, b, _, w in why]}
                (expected if why else unexpected).append(item)
        return expected, unexpected

    # -- serial chains --
    CHAIN_CHECKS = ("chain_overlaps", "chain_out_of_order", "chain_links_lost",
                    "chain_cancelled_called")

    def check_chains(self):
        """Serial chains: the links of one chain (AddLinks, kind link) are called one at
        a time, in due order (ties in the order added), a cancelled waiting one never.
        - chain_overlaps: a link's call arrives at the endpoint before the call of
          another link of its chain was answered (its logged arrival plus the delay the
          endpoint applied), unless one of the two is a repeat that an executor
          disruption explains (a call in flight at a kill, made again);
        - chain_out_of_order: link B was first called before link A although A is due
          before B (or at the same time and added first), A was added (acknowledged)
          before B could be released (B's due time minus the jobs role's lead, less a
          second) and no disruption of the jobs role or the broker lies between;
        - chain_links_lost: a link due before the cut, not cancelled, never called and
          without a final Result, although its chain had been idle (no call) for
          lost-margin ms before the end with its jobs role undisturbed;
        - chain_cancelled_called: a link cancelled (CancelLink acknowledged) more than a
          second before it could be released, with the jobs role undisturbed from the
          cancel to its due time, was called."""
        ahead = min(5000, self.args.horizon_ms // 2)
        links = {r["sid"]: dict(r) for r in self.q("""
            SELECT sid, key, due, acked, off, scenario FROM commands
            WHERE kind = 'link' AND err IS NULL""")}
        unlinks = {r["key"]: r["acked"] for r in self.q("""
            SELECT key, MIN(acked) AS acked FROM commands WHERE kind = 'unlink' AND err IS NULL
            GROUP BY key""")}
        calls = {}
        for r in self.q("SELECT at, sid, attempt, delay FROM calls WHERE sid IN "
                        "(SELECT sid FROM commands WHERE kind = 'link') ORDER BY at"):
            calls.setdefault(links[r["sid"]]["scenario"], []).append(dict(r))
        finals = {r["key"] for r in self.q(
            "SELECT DISTINCT key FROM results WHERE outcome != 'FAILED_WILL_RETRY'")}
        jobs = ("jobs",)
        overlaps, excused, disorder, lost, cancelled_called = [], 0, [], [], []
        for chain, cs in calls.items():
            seen = set()
            for p, n in zip(cs, cs[1:]):
                seen.add(p["sid"])
                if p["sid"] == n["sid"] or n["at"] >= p["at"] + p["delay"] - 2:
                    continue
                repeat = n["sid"] in seen or any(c["sid"] == p["sid"] and c["at"] < p["at"]
                                                  for c in cs)
                if repeat and self.dis.hits(("executor",), p["at"] - 5000, n["at"]):
                    excused += 1
                    continue
                overlaps.append(self.detail(
                    "chain_overlaps", links[n["sid"]]["key"], p["at"], n["at"], chain=chain,
                    previous=links[p["sid"]]["key"], previous_at=p["at"],
                    previous_answered=p["at"] + p["delay"], at=n["at"]))
            first = {}
            for c in cs:
                first.setdefault(c["sid"], c["at"])
            order = sorted(first, key=first.get)
            for i, b in enumerate(order):
                lb = links[b]
                for a in order[i + 1:]:
                    la = links[a]
                    if (la["due"], la["off"]) >= (lb["due"], lb["off"]):
                        continue
                    if la["acked"] > lb["due"] - ahead - 1000:
                        continue  # B may have been released before the chain held A
                    if self.dis.hits(jobs, la["acked"], first[b]):
                        continue
                    disorder.append(self.detail(
                        "chain_out_of_order", lb["key"], first[b], first[a], chain=chain,
                        called_first=lb["key"], its_due=lb["due"], called_after=la["key"],
                        whose_due=la["due"], added=la["acked"]))
        last_call = {chain: cs[-1]["at"] + cs[-1]["delay"] for chain, cs in calls.items()}
        called = {sid for cs in calls.values() for c in cs for sid in [c["sid"]]}
        for sid, link in links.items():
            cancel = unlinks.get(link["key"])
            if cancel is not None:
                judged = cancel < link["due"] - ahead - 1000 and \
                    not self.dis.hits(jobs, cancel, link["due"])
                if judged and sid in called:
                    cancelled_called.append(self.detail(
                        "chain_cancelled_called", link["key"], cancel, link["due"],
                        chain=link["scenario"], cancelled=cancel, due=link["due"]))
                continue
            if sid in called or link["key"] in finals or link["due"] >= self.cut:
                continue
            idle_from = max(last_call.get(link["scenario"], 0), link["due"])
            if self.dis.healthy_ms(jobs + ("router", "wheel"), idle_from, self.t_end) < \
                    self.args.lost_margin_ms:
                continue
            lost.append(self.detail("chain_links_lost", link["key"], link["due"], self.t_end,
                                    chain=link["scenario"], due=link["due"]))
        self.counts.update(chain_links=len(links), chain_links_called=len(called),
                           chain_links_cancelled=len(unlinks),
                           chain_overlaps=len(overlaps), chain_overlaps_excused=excused,
                           chain_out_of_order=len(disorder), chain_links_lost=len(lost),
                           chain_cancelled_called=len(cancelled_called))
        self.violations.update(chain_overlaps=overlaps, chain_out_of_order=disorder,
                               chain_links_lost=lost, chain_cancelled_called=cancelled_called)

    # -- endpoint groups and admission limits --
    GROUP_CHECKS = ("group_member_wrong",)
    LIMIT_CHECKS = ("limit_exceeded_open", "limit_exceeded_rate")
    # Half-open intervals from the endpoint's log, whose times are cut to 0.1 ms: an
    # answer and the next call on the freed slot may look this much closer than they were.
    LOG_ROUNDING_MS = 0.2

    def ensure_member_column(self):
        """A chaos.db from before Result v4's member: the column, NULL."""
        cols = [r[1] for r in self.q("PRAGMA table_info(results)")]
        if "member" not in cols:
            self.db.execute("ALTER TABLE results ADD COLUMN member TEXT")

    def check_groups(self):
        """group_member_wrong: every SUCCEEDED Result of a task of the "group" scenario
        (callback group://<GROUP_NAME>/fast/...: FAILOVER over a dead member that sorts
        first and the fast endpoint) names the live member (the fast endpoint's URL) in
        `member`; and no Result of a task that named no group names a member (Result's
        doc: null then); a broadcast's shards name theirs (check_broadcasts)."""
        self.ensure_member_column()
        self.db.executescript(BROADCAST_DB_SCHEMA)
        g = (getattr(self, "endpoints", None) or {}).get("group")
        c = {"group_tasks": 0, "group_results": 0, "group_succeeded": 0, "group_calls": 0,
             "group_member_wrong": 0}
        wrong = []
        by_member = {}
        if g:
            live = g["live"]
            c["group_tasks"] = self.q("SELECT COUNT(*) FROM commands WHERE scenario = 'group' "
                                      "AND kind = 'submit' AND err IS NULL")[0][0]
            c["group_calls"] = self.q("""SELECT COUNT(*) FROM calls WHERE sid IN (SELECT sid
                FROM commands WHERE scenario = 'group' AND sid IS NOT NULL)""")[0][0]
            for r in self.q("""SELECT key, attempt, due, outcome, status, started, member
                               FROM results WHERE key IN (SELECT key FROM commands
                               WHERE scenario = 'group') ORDER BY part, off"""):
                c["group_results"] += 1
                m = r["member"] or "(none)"
                by_member[m] = by_member.get(m, 0) + 1
                if r["outcome"] != "SUCCEEDED":
                    continue
                c["group_succeeded"] += 1
                if r["member"] != live:
                    wrong.append(self.detail(
                        "group_member_wrong", r["key"], r["started"], r["started"],
                        called_at=r["started"], attempt=r["attempt"], member=r["member"],
                        expected=live, why="a group task's success names another member"))
        for r in self.q("""SELECT key, attempt, outcome, started, member FROM results
                           WHERE member IS NOT NULL AND member != '' AND key NOT IN
                           (SELECT key FROM commands WHERE scenario IN ('group', 'broadcast'))
                           AND key NOT IN (SELECT key FROM shard_submits)
                           AND key NOT IN (SELECT key FROM bresults
                                           WHERE broadcast IS NOT NULL)"""):
            wrong.append(self.detail(
                "group_member_wrong", r["key"], r["started"], r["started"],
                called_at=r["started"], attempt=r["attempt"], member=r["member"], expected=None,
                why="a member on the Result of a task that named no group"))
        c["group_member_wrong"] = len(wrong)
        self.counts.update(c)
        self.violations["group_member_wrong"] = wrong
        self.info["group"] = dict(g or {}, results_by_member=by_member)

    # -- sharding broadcasts --
    BROADCAST_CHECKS = ("broadcast_shard_missing", "broadcast_shard_twice",
                        "broadcast_result_wrong")
    FINAL = ("SUCCEEDED", "FAILED_PERMANENTLY", "EXHAUSTED", "CANCELLED")

    def check_broadcasts(self):
        """Sharding broadcasts: each task of the "broadcast" scenario (callback
        group://<BROADCAST_NAME>/fast/<task>/<sid>, a group of N members: the endpoint's
        fast and fail ports), once its turn came, is N shards <task>#shard-<i>, shard i
        calling member i (the group's order) with the task's path and sid; each ends in one
        final Result, and the task in exactly one, written by the jobs role after them.
        Judged from the executor's shard Submits in `tasks`, the endpoint's log (which
        port, the shard's request headers), `results` and the Results' headers:
        - broadcast_shard_missing: a broadcast due before the cut whose shards were
          submitted (its turn came: whether it came at all is judged by lost, the
          shards' calls being the task's) lacks the Submit of shard i (fanned out only
          partly), or shard i was never called at member i, or has no final Result,
          although router, store, wheel, executor and broker had lost-margin ms
          undisturbed after it was submitted;
        - broadcast_shard_twice: shard i submitted more than once, or with another key,
          version, sid, member or request headers than the task's turn gives it, or due
          before the task or after it was submitted (it is due at the task's turn); a
          shard called at another member than its own, or with other
          mooncake-shard-index, mooncake-shard-total or webhook-id headers; the
          broadcast task called itself; a shard with more than one final Result, or
          whose final Result names another member or lacks the headers mooncake-broadcast
          (the task's id) and mooncake-shard ("<i>/<N>@<version>");
        - broadcast_result_wrong: a broadcast with shards has not exactly one Result
          (none is judged once its shards all have their final one and the jobs role
          and broker had lost-margin ms undisturbed after the last), or its outcome is
          not SUCCEEDED when every shard SUCCEEDED and FAILED_PERMANENTLY otherwise, or
          it has an HTTP status or a member, or its response_body is not
          {"shards":[{"shard":i,"member":URL,"outcome":...,"finishedAt":ms},...]} as
          the shards' final Results say, or it was written (record time) before the last
          of them."""
        self.db.executescript(BROADCAST_DB_SCHEMA)
        self.ensure_member_column()
        c, v = self.counts, self.violations
        names = ("broadcast_tasks", "broadcast_judged", "broadcast_fanned_out",
                 "broadcast_shards", "broadcast_shard_calls", "broadcast_unjudged")
        for k in self.BROADCAST_CHECKS + names:
            c[k] = 0
        for k in self.BROADCAST_CHECKS:
            v[k] = []
        b = (getattr(self, "endpoints", None) or {}).get("broadcast")
        info = self.info["broadcast"] = dict(b or {}, configured=bool(b))
        if not b:
            return
        members, ports = b["members"], b["ports"]
        n = len(members)
        margin = self.args.lost_margin_ms
        pipeline = ("router", "store", "wheel", "executor")

        def flag(check, key, due, hi, why, **kw):
            v[check].append(self.detail(check, key, due, hi, why=why, due=due, **kw))

        subs, calls, finals, parents, marks = {}, {}, {}, {}, {}
        for r in self.q("SELECT * FROM shard_submits ORDER BY part, off"):
            subs.setdefault(r["key"].rpartition(SHARD_MARK)[0], []).append(dict(r))
        for r in self.q("SELECT * FROM shard_calls ORDER BY at"):
            calls.setdefault(r["key"], []).append(dict(r))
        for r in self.q("SELECT * FROM bresults"):
            marks[(r["part"], r["off"])] = dict(r)
        for r in self.q("""SELECT key, attempt, due, outcome, status, finished, member, part, off
                           FROM results WHERE key LIKE '%#shard-%' ORDER BY part, off"""):
            if r["outcome"] in self.FINAL:
                finals.setdefault(r["key"], []).append(dict(r))
        for r in self.q("""SELECT key, attempt, due, outcome, status, finished, member, part, off
                           FROM results WHERE key IN (SELECT key FROM commands
                           WHERE scenario = 'broadcast') ORDER BY part, off"""):
            parents.setdefault(r["key"], []).append(dict(r))
        c["broadcast_shard_calls"] = sum(len(x) for x in calls.values())
        c["broadcast_shards"] = sum(len(x) for x in subs.values())
        outcomes = {}
        tasks = self.q("""SELECT key, sid, due, off FROM nxt WHERE scenario = 'broadcast'
                          AND kind = 'submit' AND n_seq IS NULL""")
        c["broadcast_tasks"] = len(tasks)
        for t in tasks:
            key, sid, due, version = t["key"], t["sid"], t["due"], t["off"]
            tid = key.split("/", 1)[1]
            mine = subs.get(key, [])
            # a direct call of the broadcast task (no shard): never right
            direct = self.q("SELECT at FROM calls WHERE sid = ? AND key = ? LIMIT 1", sid, key)
            if direct:
                flag("broadcast_shard_twice", key, due, direct[0]["at"],
                     "the broadcast task itself was called, not its shards",
                     called_at=direct[0]["at"])
            if not mine:
                if due < self.cut:
                    c["broadcast_unjudged"] += 1  # never turned: judged by lost
                continue
            c["broadcast_fanned_out"] += 1
            made = min(s["made"] for s in mine)
            by_index = {}
            for s in mine:
                ref = re.fullmatch(r"(\d+)/(\d+)@(\d+)", s["shard"] or "")
                i = int(ref[1]) if ref else None
                by_index.setdefault(i, []).append(s)
                want = None if i is None or i >= n else {
                    "key": f"{key}{SHARD_MARK}{i}", "broadcast": tid,
                    "shard": f"{i}/{n}@{version}", "member": members[i],
                    "index_header": str(i), "total_header": str(n), "sid": sid}
                bad = {k: s[k] for k in (want or s) if want is None or s[k] != want[k]}
                if not due <= s["due"] <= s["made"]:  # due at the broadcast's turn
                    bad["due"] = s["due"]
                if bad:
                    flag("broadcast_shard_twice", key, due, s["made"],
                         "a shard submitted with another key, place, member, headers, sid or "
                         "due time than its broadcast's turn gives it", shard=s["key"],
                         submitted=bad, expected=want, in_tasks=f"{s['part']}@{s['off']}")
            for i, ss in by_index.items():
                if i is not None and len(ss) > 1:
                    flag("broadcast_shard_twice", key, due, ss[-1]["made"],
                         f"shard {i} submitted {len(ss)} times", shard=ss[0]["key"],
                         in_tasks=[f"{s['part']}@{s['off']}" for s in ss])
            judged = due < self.cut and \
                self.dis.healthy_ms(pipeline, max(due, made), self.t_end) >= margin
            c["broadcast_judged"] += judged
            last, shard_out = None, []
            for i in range(n):
                sk = f"{key}{SHARD_MARK}{i}"
                if i not in by_index and judged:
                    flag("broadcast_shard_missing", key, due, made,
                         f"shard {i} never submitted (the broadcast fanned out partly)",
                         shard=sk, submitted=sorted(x for x in by_index if x is not None))
                cs = calls.get(sk, [])
                for call in cs:
                    got = {"port": call["server"], "mooncake-shard-index": call["shard_index"],
                           "mooncake-shard-total": call["shard_total"],
                           "webhook-id": call["webhook_id"], "sid": call["sid"]}
                    want = {"port": ports[i], "mooncake-shard-index": str(i),
                            "mooncake-shard-total": str(n), "webhook-id": sk, "sid": sid}
                    if got != want:
                        flag("broadcast_shard_twice", key, due, call["at"],
                             f"shard {i} called at another member or with other headers",
                             shard=sk, called_at=call["at"], attempt=call["attempt"],
                             got=got, expected=want)
                fs = finals.get(sk, [])
                if judged and not any(call["server"] == ports[i] for call in cs):
                    flag("broadcast_shard_missing", key, due, self.t_end,
                         f"shard {i} never called at its member {members[i]}", shard=sk,
                         calls=len(cs), final_results=[f["outcome"] for f in fs])
                if not fs:
                    if judged:
                        flag("broadcast_shard_missing", key, due, self.t_end,
                             f"shard {i} has no final Result", shard=sk, calls=len(cs))
                    shard_out.append(None)
                    continue
                if len(fs) > 1:
                    flag("broadcast_shard_twice", key, due, fs[-1]["finished"],
                         f"shard {i} has {len(fs)} final Results", shard=sk,
                         outcomes=[f["outcome"] for f in fs],
                         in_results=[f"{f['part']}@{f['off']}" for f in fs])
                f = fs[0]
                m = marks.get((f["part"], f["off"]), {})
                got = {"member": f["member"], "mooncake-broadcast": m.get("broadcast"),
                       "mooncake-shard": m.get("shard")}
                want = {"member": members[i], "mooncake-broadcast": tid,
                        "mooncake-shard": f"{i}/{n}@{version}"}
                if got != want:
                    flag("broadcast_shard_twice", key, due, f["finished"],
                         f"shard {i}'s final Result names another member or lacks its "
                         "broadcast's headers", shard=sk, got=got, expected=want)
                shard_out.append(dict(f, ts=m.get("ts")))
                last = max(last or 0, m.get("ts") or f["finished"])
            ps = parents.get(key, [])
            for p in ps:
                outcomes[p["outcome"]] = outcomes.get(p["outcome"], 0) + 1
            if not ps:
                if None not in shard_out and due < self.cut and \
                        self.dis.healthy_ms(("jobs",), last, self.t_end) >= margin:
                    flag("broadcast_result_wrong", key, due, self.t_end,
                         "no Result of the broadcast although every shard has its final one",
                         shards=[s["outcome"] for s in shard_out])
                continue
            if len(ps) > 1:
                flag("broadcast_result_wrong", key, due, ps[-1]["finished"],
                     f"{len(ps)} Results of the broadcast", outcomes=[p["outcome"] for p in ps],
                     in_results=[f"{p['part']}@{p['off']}" for p in ps])
            p = ps[0]
            m = marks.get((p["part"], p["off"]), {})
            problems = []
            if None in shard_out:
                problems.append("written although shard(s) "
                                f"{[i for i, s in enumerate(shard_out) if s is None]} have "
                                "no final Result")
            else:
                want = "SUCCEEDED" if all(s["outcome"] == "SUCCEEDED" for s in shard_out) \
                    else "FAILED_PERMANENTLY"
                if p["outcome"] != want:
                    problems.append(f"outcome {p['outcome']}, the shards' say {want}")
                if m.get("ts") is not None and m["ts"] < max(s["ts"] or 0 for s in shard_out):
                    problems.append(f"written at {m['ts']}, before its last shard's final "
                                    f"Result ({max(s['ts'] or 0 for s in shard_out)})")
            if p["status"] or p["member"]:
                problems.append(f"http_status {p['status']}, member {p['member']!r}")
            try:
                body = json.loads(m.get("body") or "")
                listed = [(e["shard"], e["member"], e["outcome"], e["finishedAt"])
                          for e in body["shards"]]
            except (ValueError, KeyError, TypeError):
                listed = None
            expected = [(i, members[i], s and s["outcome"], s and s["finished"])
                        for i, s in enumerate(shard_out)]
            if listed != expected:
                problems.append("response_body does not list the shards' final Results")
            if problems:
                flag("broadcast_result_wrong", key, due, p["finished"], "; ".join(problems),
                     outcome=p["outcome"], body=(m.get("body") or "")[:2000],
                     expected_shards=expected, written_at=m.get("ts"))
        for k in self.BROADCAST_CHECKS:
            c[k] = len(v[k])
        info.update(results_by_outcome=outcomes, shard_calls_by_port={
            r[0]: r[1] for r in self.q("SELECT server, COUNT(*) FROM shard_calls GROUP BY 1")})

    def limit_excuses(self, longest_ms):
        """[(from, to, what)]: when the admission limit is not promised. Across a
        rebalance or an executor kill or stop, calls still in flight at the old owner
        and the new owner's may overlap (and a one-second window may hold both owners'
        starts): from each disruption of the executors or the broker (Disruptions:
        until the instance is back + --settle-ms) to its end + the longest call, and
        around each executor turn (an abort, a lost assignment, calls cut at the drain
        timeout, which the repeats check excuses too) and each revoke, orderly ones too
        (a roll, a scale step: a one-second window spanning the handover may hold both
        owners' starts, [Semantics] "What is not promised"), from a session timeout
        before it (the partitions may have moved before the executor noticed) to a
        session timeout + the longest call after it."""
        out = [(a, b + longest_ms, w) for a, b, role, w in self.dis.iv
               if role in ("executor", "broker")]
        out += [(t - SESSION_TIMEOUT_MS, t + 1 + SESSION_TIMEOUT_MS + longest_ms, w)
                for t, w in getattr(self, "executor_turns", [])
                + getattr(self, "executor_revokes", [])]
        return sorted(out)

    @staticmethod
    def excused(excuses, a, b):
        """The excuses overlapping [a, b]."""
        return [e for e in excuses if e[0] <= b and e[1] >= a]

    def check_limits(self):
        """The admission limit limit/host/<LIMIT_HOST> against the endpoint's log of the
        calls made through that host (kind lim: /lim/<delay>/<task>/<sid>, answered
        after delay ms). A call is open at the endpoint from its logged arrival to that
        plus its delay: inside the time the executor held it open (the endpoint logs a
        call when its loop gets to it, late if anything, and answers no earlier than
        the delay after that), so the most open at once is never overstated.
        - limit_exceeded_open: more than max_concurrent calls open at once, at a moment
          no excuse (limit_excuses) covers;
        - limit_exceeded_rate: more than max_per_second calls arriving in a window of
          one second [t, t + 1000) that no excuse overlaps, beyond an allowance for the
          endpoint's lag: a call logged late may have arrived up to logged_late ms
          earlier, so the window's calls may have started within 1000 + L ms (L the
          largest such lag of its calls, at most MAX_LAG_ALLOWANCE_MS), which the limit
          allows max_per_second * (1000 + L) / 1000 of.
        Limited tasks lost, fired twice, without a Result or called twice are judged
        with every other task (their sids are client Submits, kind lim is an HTTP call)."""
        lim = (getattr(self, "endpoints", None) or {}).get("limit")
        c = {k: 0 for k in ("limit_calls", "limit_tasks", "limit_most_open",
                            "limit_most_open_judged", "limit_most_per_second",
                            "limit_most_per_second_judged", "limit_excused_open",
                            "limit_excused_windows", "limit_exceeded_open",
                            "limit_exceeded_rate")}
        self.counts.update(c)
        self.violations.update(limit_exceeded_open=[], limit_exceeded_rate=[])
        self.info["limit"] = dict(lim or {})
        if not lim:
            return
        calls = [dict(r) for r in self.q("""SELECT at, delay, sid, key, attempt FROM calls
                                            WHERE kind = 'lim' ORDER BY at""")]
        c["limit_calls"] = len(calls)
        c["limit_tasks"] = self.q("""SELECT COUNT(*) FROM commands WHERE kind = 'submit' AND
            err IS NULL AND scenario IN ('limited', 'limited-burst')""")[0][0]
        longest = max([r["delay"] for r in calls] + [0]) + MAX_LAG_ALLOWANCE_MS
        excuses = self.limit_excuses(longest)
        max_open, per_second = lim["max_concurrent"], lim["max_per_second"]
        # -- open at once: a sweep over arrivals and answers (answers first on a tie) --
        ev = sorted([(r["at"], 1, i) for i, r in enumerate(calls)]
                    + [(r["at"] + r["delay"] - self.LOG_ROUNDING_MS, -1, i)
                       for i, r in enumerate(calls)], key=lambda e: (e[0], e[1]))
        open_now, run = set(), None
        over_open = []
        for t, d, i in ev:
            if d < 0:
                open_now.discard(i)
                continue
            open_now.add(i)
            n = len(open_now)
            c["limit_most_open"] = max(c["limit_most_open"], n)
            if self.excused(excuses, t, t):
                c["limit_excused_open"] += n > max_open
                continue
            c["limit_most_open_judged"] = max(c["limit_most_open_judged"], n)
            if n <= max_open:
                continue
            # one violation for the arrivals over the limit less than a second apart
            if run is None or t - run["last"] > 1000:
                run = {"called_at": t, "first": t, "times": 0, "most": 0}
                over_open.append(run)
            run["last"], run["times"] = t, run["times"] + 1
            if n > run["most"]:
                peak = sorted(open_now, key=lambda k: calls[k]["at"])
                run.update(called_at=t, most=n, limit=max_open, open=[
                    {"key": calls[k]["key"], "at": calls[k]["at"], "delay": calls[k]["delay"],
                     "attempt": calls[k]["attempt"]} for k in peak])
        self.violations["limit_exceeded_open"] = [
            self.detail("limit_exceeded_open", r["open"][-1]["key"], r["called_at"],
                        r["called_at"], **r) for r in over_open]
        # -- started per second --
        ats = [r["at"] for r in calls]
        late = [self.logged_late(a) for a in ats]
        over_rate, run, j = [], None, 0
        for i, a in enumerate(ats):
            j = max(j, i)
            while j < len(ats) and ats[j] < a + 1000:
                j += 1
            n = j - i
            c["limit_most_per_second"] = max(c["limit_most_per_second"], n)
            if self.excused(excuses, a, a + 1000):
                c["limit_excused_windows"] += n > per_second
                continue
            c["limit_most_per_second_judged"] = max(c["limit_most_per_second_judged"], n)
            lag = max(late[i:j]) if n > per_second else 0
            allowed = per_second * (1000 + lag) / 1000
            if n <= allowed:
                continue
            # one violation for the windows over the limit that overlap
            if run is None or a > run["window_to"]:
                run = {"times": 0, "most": 0}
                over_rate.append(run)
            run["times"] += 1
            run["window_to"] = a + 1000
            if n > run["most"]:
                run.update(called_at=a, most=n, allowed=round(allowed, 1),
                           endpoint_lag_ms=lag, limit=per_second, first=calls[i]["key"])
        self.violations["limit_exceeded_rate"] = [
            self.detail("limit_exceeded_rate", r["first"], r["called_at"], r["window_to"], **r)
            for r in over_rate]
        c["limit_exceeded_open"] = len(over_open)
        c["limit_exceeded_rate"] = len(over_rate)
        # The executors' own clock: the Results' started_at of the limited tasks.
        started = sorted(r[0] for r in self.q("""SELECT started FROM results WHERE key IN
            (SELECT key FROM commands WHERE scenario IN ('limited', 'limited-burst'))
            AND started > 0"""))
        worst, k = 0, 0
        for i2, t in enumerate(started):
            while started[k] <= t - 1000:
                k += 1
            worst = max(worst, i2 - k + 1)
        self.info["limit"].update(
            most_started_in_a_second_by_results=worst,
            excuses=[{"from": a, "to": b, "what": w} for a, b, w in excuses])
        self.counts.update(c)

    # -- recurring jobs --
    JOB_CHECKS = ("jobs_not_applied", "jobs_skipped", "jobs_written_twice", "jobs_off_schedule",
                  "jobs_after_delete", "jobs_fired_twice", "jobs_missing_finals",
                  "jobs_duplicate_finals", "jobs_repeats_unexpected", "jobs_dead_letters")

    def check_jobs(self):
        """Recurring jobs: every job fires every second, PARALLEL, with a misfire
        threshold beyond any outage, so every scheduled instant must be written to
        `tasks` once and run once. From `tasks` (read_committed: the jobs processor's
        Submits and Cancels of <job>@<instant>; a PutJob was applied when the first
        Submit naming its sid was created), `results`, `ready` and the endpoint's log;
        per job and instant:
          written twice   two Submits of an instant with no Cancel between (an update
                          or pause cancels what was written ahead and writes it again:
                          Submit, Cancel, Submit is fine);
          skipped         an instant from start_at to the DELETE's requested_at whose
                          last record is not a Submit (never written, or cancelled and
                          not written again). Not due, by design: instants never written
                          from before the PutJob was applied, or after an update's
                          created_at until it was applied (the new definition starts
                          then); and an instant whose last Cancel came once it was due
                          (an update or pause applied late: it has most likely run, so
                          it is not given back). A pause's others are written on the
                          resume (no misfire): due;
          off schedule    a Submit of an instant that is not one of the job's;
          after DELETE    a Submit of an instant after the DELETE's requested_at with no
                          Cancel after it;
          not applied     a PutJob none of whose occurrences was written;
          fired twice     one (key, version, attempt) more than once in `ready`;
          final Results   an instant whose last record is a Submit and due before the
                          end (t_end - lost margin) has exactly one final Result
                          (SUCCEEDED, FAILED_PERMANENTLY, EXHAUSTED). Two for an instant
                          written again are judged only when its Cancel was written the
                          lead + cancel margin before the instant with no chaos on the
                          router, wheel, executor or broker, and no burst, until then
                          (otherwise the cancelled version may have been called too:
                          README "What is not promised");
          calls repeated  as for tasks: the same definition (sid) and Idempotency-Key
                          twice, expected with an executor or broker disruption between,
                          or (up to its final Results - 1) when the occurrence was
                          written again and more than one version ran (its two finals
                          unjudged above: a Cancel that may have lost the race);
          dead letters    a job command dead-lettered (an invalid job or action)."""
        c = self.counts
        for k in self.JOB_CHECKS + ("jobs_repeats_expected", "jobs_dup_unjudged"):
            c[k] = 0
        info = self.info["jobs"] = {"jobs": 0}
        cmds = self.q("SELECT * FROM job_commands ORDER BY seq")
        for k in self.JOB_CHECKS:
            self.violations[k] = []
        if not cmds:
            return
        bad = {r["job"] for r in cmds if r["err"]}
        jobs = {}
        for r in cmds:
            jobs.setdefault(r["job"], []).append(r)
        # When the processor applied a PutJob: its first Submits (those within the ahead
        # time, always some for an every-second job) carry its sid, created at that now.
        applied = {r["sid"]: r["p"] for r in self.q(
            "SELECT sid, MIN(made) AS p FROM jtasks WHERE what = 'submit' GROUP BY sid")}
        recs = {}
        for r in self.db.execute("SELECT job, at, what, made, sid, part, off FROM jtasks "
                                 "ORDER BY part, off"):
            recs.setdefault(r["job"], {}).setdefault(r["at"], []).append(r)
        finals, outcomes = {}, {}
        for r in self.q("SELECT key, outcome FROM jresults WHERE outcome != 'FAILED_WILL_RETRY'"):
            outcomes.setdefault(r["key"], []).append(r["outcome"])
            if r["outcome"] != "CANCELLED":
                finals[r["key"]] = finals.get(r["key"], 0) + 1
        calls = {}
        for r in self.q("SELECT key, sid, at FROM calls WHERE kind = 'job' ORDER BY at"):
            calls.setdefault(r["key"], []).append(r)
        lead_margin = self.args.lead_ms + self.args.cancel_margin_ms
        v = self.violations
        n = dict(instants=0, submits=0, cancels=0, by_design=0, rewritten=0, cancelled_once_due=0,
                 cancelled=0, cancelled_called=0, finals=0, called=0,
                 final_without_call=0, calls=0, called_both_definitions=0, unjudged_jobs=0,
                 kinds={})
        late, early = [], 0
        raced = {}  # occurrences whose cancelled version may have run too: extra finals

        def violation(check, jid, at, **kw):
            okey = f"{APP}/{jid}@{at}"
            v[check].append(dict(
                kw, key=okey, job=jid, scheduled_at=at,
                commands=[dict(x) for x in jobs[jid]],
                records=[dict(x) for x in recs.get(jid, {}).get(at, [])],
                results=outcomes.get(okey, []),
                calls=[dict(x) for x in calls.get(okey, [])],
                chaos_around=[e for e in self.events if at - 15000 <= e["t"] <= at + 15000]))

        for jid, cs in jobs.items():
            if jid in bad:
                n["unjudged_jobs"] += 1
                continue
            key = f"{APP}/{jid}"
            puts = [x for x in cs if x["kind"] in ("put", "update")]
            if not puts:
                continue
            info["jobs"] += 1
            n["kinds"][puts[0]["sched"]] = n["kinds"].get(puts[0]["sched"], 0) + 1
            start = puts[0]["start"]
            windows = []  # (lo, hi): instants lo < at <= hi are not due, by design
            for i, x in enumerate(puts):
                p = applied.get(x["sid"])
                if p is None:
                    violation("jobs_not_applied", jid, x["at"], command=dict(x))
                    later = [y["at"] for y in cs if y["seq"] > x["seq"]]
                    p = later[0] if later else self.t_end
                windows.append((float("-inf") if i == 0 else x["at"], p))
            dels = [x["at"] for x in cs if x["kind"] == "delete"]
            end = dels[-1] if dels else self.t_end
            pauses, paused = [], None
            for x in cs:
                if x["kind"] == "pause":
                    paused = x["at"]
                elif x["kind"] == "resume" and paused is not None:
                    pauses.append((paused, x["at"] + 500))
                    paused = None
            mine = recs.get(jid, {})
            for at in range(start, end + 1, JOB_INTERVAL_MS):
                rs = mine.get(at)
                if any(lo < at <= hi for lo, hi in windows) and not rs:
                    n["by_design"] += 1
                    continue
                if rs and rs[-1]["what"] == "cancel" and rs[-1]["made"] >= at:
                    n["cancelled_once_due"] += 1  # most likely ran: not given back
                    continue
                if not rs or rs[-1]["what"] != "submit":
                    violation("jobs_skipped", jid, at,
                              how="never written" if not rs else "cancelled, not written again")
            for at, rs in mine.items():
                okey = f"{key}@{at}"
                subs = [r for r in rs if r["what"] == "submit"]
                n["submits"] += len(subs)
                n["cancels"] += len(rs) - len(subs)
                if subs:
                    n["instants"] += 1
                if at < start or (at - start) % JOB_INTERVAL_MS:
                    violation("jobs_off_schedule", jid, at)
                twice = sum(1 for a, b in zip(rs, rs[1:])
                            if a["what"] == "submit" and b["what"] == "submit")
                if twice:
                    violation("jobs_written_twice", jid, at, extra_submits=twice)
                live = rs[-1]["what"] == "submit"
                if at > end and live:
                    violation("jobs_after_delete", jid, at, delete_requested_at=end)
                cl = calls.get(okey, [])
                n["calls"] += len(cl)
                if not live:
                    n["cancelled"] += 1
                    n["cancelled_called"] += bool(cl)
                    # Left cancelled, but two of its versions fired (the wheel read a
                    # Submit, a Cancel and a Submit again too late to stop either: in a
                    # backlog after chaos): both may be called, under one Idempotency-Key,
                    # as a live occurrence's raced versions (below).
                    if len(cl) > 1:
                        fired_versions = self.q("""SELECT COUNT(DISTINCT version) FROM jready
                            WHERE key = ? AND what = 'submit'""", okey)[0][0]
                        cancels = [r for r in rs if r["what"] == "cancel"]
                        t = cancels[-1]["made"] if cancels else at
                        if fired_versions > 1 and (
                                at - t < lead_margin or self.dis.hits(
                                    ("router", "wheel", "executor", "load"), t, at) or
                                self.wheel_read_late(okey, at)):
                            raced[okey] = fired_versions - 1
                    continue
                if len(subs) > 1:
                    n["rewritten"] += 1
                if len({x["sid"] for x in cl}) > 1:
                    n["called_both_definitions"] += 1
                if cl:
                    n["called"] += 1
                    if not any(lo < at <= hi for lo, hi in pauses):
                        late.append(cl[0]["at"] - at)
                    early += cl[0]["at"] < at - 5
                if at >= self.cut:
                    continue
                got = finals.get(okey, 0)
                n["finals"] += got
                n["final_without_call"] += bool(got and not cl)
                if got == 0:
                    violation("jobs_missing_finals", jid, at)
                elif got > 1:
                    cancels = [r for r in rs if r["what"] == "cancel"]
                    if cancels:
                        t = cancels[-1]["made"]
                        if at - t < lead_margin or self.dis.hits(
                                ("router", "wheel", "executor", "load"), t, at) or \
                                self.wheel_read_late(okey, at):
                            c["jobs_dup_unjudged"] += 1
                            raced[okey] = got - 1
                            continue
                    violation("jobs_duplicate_finals", jid, at, finals=got)
        fired = self.q("""SELECT key, version, attempt, COUNT(*) AS n FROM jready
                          WHERE what = 'submit' GROUP BY key, version, attempt
                          HAVING COUNT(*) > 1""")
        for r in fired:
            jid, _, at = r["key"].split("/", 1)[1].rpartition("@")
            if jid in jobs:
                violation("jobs_fired_twice", jid, int(at), version=r["version"],
                          attempt=r["attempt"], times=r["n"])
        for r in self.q(f"SELECT key, reason FROM dead WHERE key LIKE '{APP}/job%'"):
            v["jobs_dead_letters"].append(dict(r))
        expected, unexpected = self.repeats("kind = 'job'")
        spare = dict(raced)
        v["jobs_repeats_unexpected"], other_version = [], 0
        for u in unexpected:
            if spare.get(u["key"], 0) > 0:
                spare[u["key"]] -= 1
                other_version += 1
            else:
                v["jobs_repeats_unexpected"].append(u)
        c["jobs_repeats_expected"] = len(expected)
        c["jobs_repeats_expected_by_endpoint_lag"] = sum(e["by_lag"] for e in expected)
        n["repeats_other_version"] = other_version
        for k in self.JOB_CHECKS:
            c[k] = len(v[k])
        late.sort()
        info.update(n, commands={k: sum(1 for x in cmds if x["kind"] == k)
                                 for k in ("put", "update", "pause", "resume", "delete")},
                    lateness_ms={"occurrences": len(late), "p50": pct(late, 0.5),
                                 "p99": pct(late, 0.99), "max": late[-1] if late else None,
                                 "early_over_5ms": early},
                    calls_unknown_sid=self.q(
                        "SELECT COUNT(*) FROM calls WHERE kind = 'job' AND (sid IS NULL OR "
                        "sid NOT IN (SELECT sid FROM job_commands WHERE sid IS NOT NULL))")[0][0],
                    occurrence_dead_letters=self.q("SELECT COUNT(*) FROM jdead")[0][0],
                    expected_repeats=expected)
        c["jobs_occurrences"] = n["instants"]

    def wheel_read_late(self, key, due):
        """Whether the wheel read the key's last Cancel (its router copy in `wheel`)
        only once the task it cancels could fire (the lead before due, or later), or
        was never seen reading it: a cancel that reaches the wheel after the due time
        does not stop the call ([Semantics]), however early it was written (a pipeline
        held back by chaos elsewhere delays it)."""
        row = self.q("""SELECT part, off FROM jwheel WHERE key = ? AND what = 'cancel'
                        ORDER BY version DESC LIMIT 1""", key)
        if not row:
            return True
        read = self.read_by("wheel", row[0]["part"], row[0]["off"])
        return read is None or read > due - self.args.lead_ms

    def check_view(self):
        """GET /api/task never contradicts the endpoint: a task said to be pending had
        no call that arrived before the question was sent; a version said to be
        cancelled gets no call that arrives after the answer; and a command the
        producer saw acknowledged before a question is in its answer (no 404, and
        no older version than an acknowledged Submit)."""
        self.db.executescript("""
            CREATE TABLE IF NOT EXISTS questions(sent INTEGER, key TEXT, status INTEGER,
              state TEXT, version INTEGER, answered INTEGER);
            CREATE INDEX IF NOT EXISTS calls_sid ON calls(sid, at);""")
        c = self.counts
        c["view_questions"] = self.q("SELECT COUNT(*) FROM questions WHERE key != '(list)'")[0][0]
        c["view_lists"] = self.q("SELECT COUNT(*) FROM questions WHERE key = '(list)'")[0][0]
        self.info["view_list_answers"] = {str(r[0]): r[1] for r in self.q(
            "SELECT status, COUNT(*) FROM questions WHERE key = '(list)' GROUP BY status")}
        self.info["view_answers"] = {str(r[0]): r[1] for r in self.q(
            "SELECT status, COUNT(*) FROM questions WHERE key != '(list)' GROUP BY status")}
        self.info["view_states"] = {r[0]: r[1] for r in self.q(
            "SELECT state, COUNT(*) FROM questions WHERE status = 200 AND key != '(list)' "
            "GROUP BY state")}
        pending = ",".join(f"'{s}'" for s in VIEW_PENDING)
        bad = [dict(r, why="said pending after a call had arrived") for r in self.q(f"""
            SELECT q.sent, q.key, q.state, q.version, MIN(k.at) AS call_at
              FROM questions q JOIN commands m ON m.key = q.key AND m.off = q.version
              JOIN calls k ON k.sid = m.sid
             WHERE q.status = 200 AND q.state IN ({pending}) AND k.at < q.sent
             GROUP BY q.rowid""")]
        bad += [dict(r, why="said cancelled, then called") for r in self.q("""
            SELECT q.sent, q.key, q.state, q.version, MIN(k.at) AS call_at
              FROM questions q JOIN commands m ON m.key = q.key AND m.off = q.version
              JOIN calls k ON k.sid = m.sid
             WHERE q.status = 200 AND q.state = 'cancelled' AND k.at > q.answered
             GROUP BY q.rowid""")]
        bad += [dict(r, why="acknowledged before the question, answered 404") for r in self.q("""
            SELECT q.sent, q.key, q.status, MIN(m.acked) AS acked FROM questions q
              JOIN commands m ON m.key = q.key AND m.err IS NULL
             WHERE q.status = 404 AND m.acked < q.sent GROUP BY q.rowid""")]
        bad += [dict(r, why="a Submit acknowledged before the question is not its version")
                for r in self.q("""
            SELECT q.sent, q.key, q.version, MAX(m.off) AS newer FROM questions q
              JOIN commands m ON m.key = q.key AND m.kind = 'submit' AND m.err IS NULL
             WHERE q.status = 200 AND q.version IS NOT NULL AND m.acked < q.sent
               AND m.off > q.version
             GROUP BY q.rowid""")]
        c["view_contradicted"] = len(bad)
        self.violations["view_contradicted"] = bad[:50]

    STATS_COUNTERS = ("submitted", "calls", "failures", "dead")
    STATS_LAST_HOUR = {"calls": "calls", "failures": "failures", "dead": "deadLetters"}

    def check_view_counters(self):
        """GET /api/stats of the app, asked once the work is done, counts each record of
        the app exactly once through every kill -9, SIGSTOP and restart of the view and
        the rebalances they cause, in the minute of its record time: `submitted` the
        Submits in tasks keyed by the app at the key's home partition the router did not
        refuse (no dead letter has it as its source), `calls` its Results but a recall's
        CANCELLED one, `failures` those not SUCCEEDED, `dead` the records of dead keyed
        by the app; minute by minute, and lastHour says the same of those 60 minutes.
        What it must count lies between the topics' committed ends just before the
        question and just after its answer (the same when nothing was written
        meanwhile: then exact). A run without a view is not judged on them (info says
        so); one whose view never answered fails."""
        c = self.counts
        c["view_counters_wrong"] = 0
        self.violations["view_counters_wrong"] = []
        stats = getattr(self, "view_stats", None)
        if not self.args.instance_counts.get("view"):
            self.info["view_counters"] = "not judged: no view in this run"
            return
        if stats is None or not self.q(
                "SELECT 1 FROM sqlite_master WHERE name = 'stats_records'"):
            self.info["view_counters"] = "not judged: a run from before the question"
            return
        if not stats.get("data"):
            why = (f"not judged: no view instance answered GET /api/stats "
                   f"({stats.get('statuses')})")
            self.info["view_counters"] = why
            c["view_counters_wrong"] = 1
            self.violations["view_counters_wrong"] = [{"why": why}]
            return
        data = stats["data"]
        window = [m["minute"] for m in data["minutes"]]
        got = {k: {m["minute"]: m[k] for m in data["minutes"]} for k in self.STATS_COUNTERS}
        # want[k][minute] = [records it must count, records it may count]
        want = {k: {m: [0, 0] for m in window} for k in self.STATS_COUNTERS}
        before, after = stats.get("ends_before"), stats.get("ends_after")
        refused = set(self.q("SELECT src_part, src_off FROM stats_records "
                             "WHERE topic = 'dead' AND src_off IS NOT NULL"))
        outside = dict.fromkeys(self.STATS_COUNTERS, 0)
        late = dict.fromkeys(self.STATS_COUNTERS, 0)
        for topic, what, home, part, off, ts in self.q(
                "SELECT topic, what, home, part, off, ts FROM stats_records "
                "WHERE substr(key, 1, ?) = ?", len(APP) + 1, APP + "/"):
            if topic == "tasks":
                counters = ("submitted",) if home and (part, off) not in refused else ()
            elif topic == "results":
                counters = () if what == "CANCELLED" else \
                    ("calls",) if what == "SUCCEEDED" else ("calls", "failures")
            else:
                counters = ("dead",)
            # 0: committed before the question (must count); 1: during it (may count);
            # 2: after the answer (cannot count).
            when = 0 if not before else 0 if off < before[topic][part] else \
                1 if off < after[topic][part] else 2
            minute = ts // 60000 * 60000
            for k in counters:
                if when == 2:
                    late[k] += 1
                elif minute not in want[k]:
                    outside[k] += 1
                else:
                    want[k][minute][1] += 1
                    want[k][minute][0] += when == 0

        def span(lo, hi):
            return lo if lo == hi else [lo, hi]
        wrong, view, topics = [], {}, {}
        for k in self.STATS_COUNTERS:
            lo = sum(w[0] for w in want[k].values())
            hi = sum(w[1] for w in want[k].values())
            view[k], topics[k] = sum(got[k].values()), span(lo, hi)
            hour = data["lastHour"].get(self.STATS_LAST_HOUR.get(k))
            bad_minutes = [{"minute": m, "at": iso_ms(m), "counted": got[k][m],
                            "expected": span(*want[k][m])}
                           for m in window if not want[k][m][0] <= got[k][m] <= want[k][m][1]]
            bad_hour = hour is not None and not lo <= hour <= hi
            if bad_minutes or bad_hour or not lo <= view[k] <= hi:
                wrong.append({"why": f"{k}: the view's minutes count {view[k]}"
                                     + (f", lastHour {hour}" if hour is not None else "")
                                     + f"; the topics {topics[k]}" + "".join(
                                         f"; {b['at']} {b['counted']} for {b['expected']}"
                                         for b in bad_minutes[:3]),
                              "counter": k, "counted": view[k], "last_hour": hour,
                              "expected": topics[k], "minutes_wrong": bad_minutes[:20]})
        c["view_counters_wrong"] = len(wrong)
        self.violations["view_counters_wrong"] = wrong
        self.info["view_counters"] = {
            "judged": "exact" if before == after else "between the ends before and after",
            "instance": stats.get("instance"), "view": view, "topics": topics,
            "last_hour": data["lastHour"], "refused_submits": len(refused),
            "outside_window": outside, "after_answer": late,
            "minutes": [[iso_ms(m), {k: got[k][m] for k in self.STATS_COUNTERS}]
                        for m in window if any(got[k][m] for k in self.STATS_COUNTERS)]}

    # -- alarms --
    ALARM_CHECKS = ("alarms_missed", "alarms_counted_twice", "alarms_keys_twice",
                    "alarms_keys_unknown", "alarms_too_close", "alarms_not_called",
                    "alarms_not_written", "alarms_malformed", "alarms_repeats_unexpected",
                    "alarms_no_dead_letters")

    def check_alarms(self):
        """Alarms (self.alarms: the run's webhooks and interval; None: no alarms role).
        The dead letters to count are the records of `dead` with a task whose app has a
        webhook, less those of alarm calls (task id mooncake-alarm-...); an alarm is a
        distinct alarm task called at the endpoint (its key from the Idempotency-Key: a
        repeated call counts once). Per app:
          missed / counted twice  the deadLetters of its alarms add up to fewer / more
                                  than its dead letters;
          key in two alarms       a key in `first` of more distinct alarms than the key
                                  has dead letters (or one dead letter, key and
                                  failedAt, listed more often than it died);
          listed key unknown      a `first` entry that is no dead letter of the app (key,
                                  failedAt; jobId the task's job);
          too close               two alarms' sentAt less than the interval apart.
        And: an alarm task in `tasks` (read_committed) never called, written before the
        end (t_end - lost margin); an alarm called that is not in `tasks`; a call that is
        not a POST of application/json {"type":"mooncake.alarm",...} of its app to the
        app's webhook with min(deadLetters, 10) entries in `first`, or one task called
        with two bodies or written twice; a repeated call with no executor or broker
        disruption between (as for tasks); no dead letter of the workload's app at all
        although some of its 404 tasks were due (nothing judged: a failure)."""
        c, v = self.counts, self.violations
        for k in self.ALARM_CHECKS + ("alarms_repeats_expected", "alarms_dead_letters",
                                      "alarms_counted", "alarms_distinct", "alarms_calls",
                                      "alarms_written", "alarms_not_called_unjudged"):
            c[k] = 0
        for k in self.ALARM_CHECKS:
            v[k] = []
        conf = getattr(self, "alarms", None)
        info = self.info["alarms"] = {"configured": bool(conf)}
        if not conf:
            return
        hooks, interval = conf["webhooks"], conf["interval_ms"]
        info.update(webhooks=hooks, interval_ms=interval)

        def hook(app):
            return None if app is None else hooks.get(app, hooks.get("*"))

        def around(lo, hi=None):
            hi = lo if hi is None else hi
            return [e for e in self.events if lo - 15000 <= e["t"] <= hi + 15000]

        dead, left_out = {}, {"alarm_calls": 0, "no_task": 0, "no_webhook": 0}
        for r in self.q("SELECT key, app, task, has_task, failed_at, reason, job FROM "
                        "dead_letters ORDER BY part, off"):
            if not r["has_task"]:
                left_out["no_task"] += 1
            elif r["task"].startswith(ALARM_TASK_PREFIX):
                left_out["alarm_calls"] += 1
            elif hook(r["app"]) is None:
                left_out["no_webhook"] += 1
            else:
                dead.setdefault(r["app"], []).append(dict(r))
        written = {}
        for r in self.q("SELECT key, url, body, created, part, off FROM alarm_tasks "
                        "ORDER BY part, off"):
            written.setdefault(r["key"], []).append(dict(r))
        calls = {}
        for r in self.q("SELECT at, path, method, ikey, webhook_id, content_type, body "
                        "FROM alarm_calls ORDER BY at"):
            calls.setdefault(r["ikey"].rpartition(":")[0] or r["webhook_id"], []).append(dict(r))
        c["alarms_calls"] = sum(len(x) for x in calls.values())
        c["alarms_written"] = len(written)

        def malformed(key, why, at, **kw):
            v["alarms_malformed"].append(dict(kw, key=key, why=why, called_at=at,
                                              chaos_around=around(at)))

        alarms = {}  # app: its distinct alarms called
        for key, cs in calls.items():
            app, _, tid = key.partition("/")
            call = cs[0]
            try:
                body = json.loads(call["body"])
            except ValueError:
                body = None
            problems = []
            if len({x["body"] for x in cs}) > 1:
                problems.append("one alarm task called with different bodies")
            if not tid.startswith(ALARM_TASK_PREFIX):
                problems.append("task id not mooncake-alarm-<ms>")
            if call["method"] != "POST":
                problems.append(f"method {call['method']}")
            if not call["content_type"].lower().startswith("application/json"):
                problems.append(f"Content-Type {call['content_type']!r}")
            url = hook(app)
            if url is None or urllib.parse.urlsplit(url).path != call["path"]:
                problems.append(f"called at {call['path']}, not at the app's webhook")
            usable = isinstance(body, dict) and isinstance(body.get("deadLetters"), int) \
                and isinstance(body.get("sentAt"), int) and isinstance(body.get("first"), list) \
                and all(isinstance(e, dict) and isinstance(e.get("key"), str)
                        for e in body["first"])
            if not usable:
                problems.append("body is no alarm (deadLetters, sentAt, first)")
            else:
                if body.get("type") != "mooncake.alarm":
                    problems.append(f"type {body.get('type')!r}")
                if body.get("appId") != app:
                    problems.append(f"appId {body.get('appId')!r} in an alarm task of {app}")
                if body["deadLetters"] < 1:
                    problems.append("deadLetters < 1")
                if len(body["first"]) != min(body["deadLetters"], ALARM_FIRST):
                    problems.append(f"{len(body['first'])} entries in first for "
                                    f"{body['deadLetters']} dead letters")
            if problems:
                malformed(key, "; ".join(problems), call["at"], path=call["path"],
                          body=call["body"][:2000], calls=len(cs))
            if usable:
                alarms.setdefault(app, []).append({
                    "key": key, "sent_at": body["sentAt"], "n": body["deadLetters"],
                    "first": body["first"], "seq": body.get("alarm"),
                    "called_at": call["at"], "calls": len(cs)})
        for key, ws in written.items():
            if len(ws) > 1:
                malformed(key, "written to tasks twice", ws[0]["created"],
                          records=[{k: w[k] for k in ("created", "part", "off")} for w in ws])
            if key not in calls:
                if ws[0]["created"] < self.cut:
                    v["alarms_not_called"].append(dict(
                        key=key, sent_at=ws[0]["created"], body=ws[0]["body"][:2000],
                        in_tasks=f"{ws[0]['part']}@{ws[0]['off']}",
                        chaos_around=around(ws[0]["created"])))
                else:
                    c["alarms_not_called_unjudged"] += 1
            elif ws[0]["body"] != calls[key][0]["body"]:
                malformed(key, "called with another body than written to tasks",
                          calls[key][0]["at"], written=ws[0]["body"][:2000])
        for key, cs in calls.items():
            if key not in written:
                v["alarms_not_written"].append(dict(key=key, called_at=cs[0]["at"],
                                                    body=cs[0]["body"][:2000],
                                                    chaos_around=around(cs[0]["at"])))
        apps = info["apps"] = {}
        for app in sorted(set(dead) | set(alarms)):
            dls = dead.get(app, [])
            als = sorted(alarms.get(app, []), key=lambda a: (a["sent_at"], a["key"]))
            counted = sum(a["n"] for a in als)
            c["alarms_dead_letters"] += len(dls)
            c["alarms_counted"] += counted
            c["alarms_distinct"] += len(als)
            pairs, keys, jobs = {}, {}, {}
            for d in dls:
                pairs[(d["key"], d["failed_at"])] = pairs.get((d["key"], d["failed_at"]), 0) + 1
                keys[d["key"]] = keys.get(d["key"], 0) + 1
                jobs[(d["key"], d["failed_at"])] = d["job"]
            listings, alarms_of_key = {}, {}
            for a in als:
                for e in a["first"]:
                    pair = (e["key"], e.get("failedAt"))
                    listings[pair] = listings.get(pair, 0) + 1
                    alarms_of_key.setdefault(e["key"], set()).add(a["key"])
                    why = None
                    if e["key"] not in keys:
                        why = "no dead letter of the app has this key"
                    elif pair not in pairs:
                        why = "no dead letter of this key failed at failedAt"
                    elif e.get("jobId") != jobs[pair]:
                        why = f"jobId {e.get('jobId')!r}, the task's job {jobs[pair]!r}"
                    if why:
                        v["alarms_keys_unknown"].append(dict(
                            key=e["key"], app=app, alarm=a["key"], sent_at=a["sent_at"],
                            entry=e, why=why, chaos_around=around(a["sent_at"])))
            twice = {k for (k, f), n in listings.items() if n > max(1, pairs.get((k, f), 0))}
            twice |= {k for k, ins in alarms_of_key.items() if len(ins) > max(1, keys.get(k, 0))}
            for k in sorted(twice):
                ins = sorted(alarms_of_key[k])
                v["alarms_keys_twice"].append(dict(
                    key=k, app=app, alarms=ins, dead_letters=keys.get(k, 0),
                    sent_at=min(a["sent_at"] for a in als if a["key"] in ins),
                    failed_at=[d["failed_at"] for d in dls if d["key"] == k]))
            listed = set(listings)
            detail = dict(key=app, app=app, dead_letters=len(dls), counted=counted,
                          alarms_called=[{k: a[k] for k in ("key", "sent_at", "n", "calls")}
                                         for a in als],
                          lists_complete=all(a["n"] <= ALARM_FIRST for a in als),
                          not_listed=[{k: d[k] for k in ("key", "failed_at", "reason")}
                                      for d in dls
                                      if (d["key"], d["failed_at"]) not in listed][:50])
            if counted < len(dls):
                c["alarms_missed"] += len(dls) - counted
                v["alarms_missed"].append(dict(detail, missed=len(dls) - counted))
            elif counted > len(dls):
                c["alarms_counted_twice"] += counted - len(dls)
                v["alarms_counted_twice"].append(dict(detail, twice=counted - len(dls)))
            gaps = [b["sent_at"] - a["sent_at"] for a, b in zip(als, als[1:])]
            for g, a, b in zip(gaps, als, als[1:]):
                if g < interval:
                    v["alarms_too_close"].append(dict(
                        key=b["key"], app=app, previous=a["key"], gap_ms=g, sent_at=b["sent_at"],
                        chaos_around=around(a["sent_at"], b["sent_at"])))
            apps[app] = {"dead_letters": len(dls), "counted": counted, "alarms": len(als),
                         "calls": sum(a["calls"] for a in als),
                         "largest": max((a["n"] for a in als), default=0),
                         "listed": sum(len(a["first"]) for a in als),
                         "min_gap_ms": min(gaps) if gaps else None}
        # Dead letters that had to come: acknowledged 404 tasks due before the end.
        expected = 0
        if hook(APP) is not None:
            expected = self.q("""SELECT COUNT(*) FROM commands WHERE kind = 'submit'
                                 AND err IS NULL AND scenario IN ('gone', 'gone-burst')
                                 AND due < ?""", self.cut)[0][0]
            if expected and not dead.get(APP):
                v["alarms_no_dead_letters"].append(dict(
                    key=APP, app=APP, expected=expected,
                    why="no dead letter of the app in dead although 404 tasks were due: "
                        "the alarms were not tested"))
        expected_repeats, unexpected = self.repeats("kind = 'alarm'")
        c["alarms_repeats_expected"] = len(expected_repeats)
        v["alarms_repeats_unexpected"] = [
            dict(u, chaos_around=around(u["previous_call"], u["repeat"])) for u in unexpected]
        for k in self.ALARM_CHECKS:
            if k not in ("alarms_missed", "alarms_counted_twice"):
                c[k] = len(v[k])
        info.update(left_out=left_out, expected_dead_letters=expected,
                    expected_repeats=expected_repeats,
                    chaos={k: sum(1 for e in self.events
                                  if e["kind"] == k and e.get("role") == "alarms")
                           for k in ("kill", "stop", "exit")})

    # -- rolls and scale steps --
    ROLL_CHECKS = ("roll_stops_failed", "roll_not_ready")

    def check_rolls(self):
        """The rolls and scale steps the harness did (events roll-*, scale-*): each is
        a StatefulSet's graceful stop and start, so
        - roll_stops_failed: a replica SIGTERMed by a roll (roll-stop) or a scale-in
          did not exit 0 within 40 s (the executor drains for at most 10 s first);
        - roll_not_ready: a replica started by a roll (under its own id) or a scale-out
          (under a new id) did not answer /readyz 200 within 60 s, or exited first,
          with no chaos killing or freezing it meanwhile.
        Counted: rolls, the replicas they restarted, scale steps (scale-outs) and
        scale-ins, with the seconds each replica took to exit and to be ready."""
        ev = [e for e in self.events if e["kind"] in (
            "roll", "roll-stop", "roll-start", "roll-ready", "roll-end", "scale-out",
            "scale-ready", "scale-in")]
        stops = [e for e in ev if e["kind"] in ("roll-stop", "scale-in")]
        ready = [e for e in ev if e["kind"] in ("roll-ready", "scale-ready")]
        failed = [dict(e, why=f"exited {e['rc']} on SIGTERM") for e in stops
                  if e.get("rc") != 0]
        not_ready = [dict(e, why=e.get("why") or "not ready") for e in ready
                     if not e.get("ready") and e.get("why") not in ("replaced", "frozen")]
        n = {k: sum(1 for e in ev if e["kind"] == k) for k in
             ("roll", "roll-stop", "scale-out", "scale-in")}
        self.counts.update(rolls=n["roll"], roll_restarts=n["roll-stop"],
                           scale_steps=n["scale-out"], scale_ins=n["scale-in"],
                           roll_stops_failed=len(failed), roll_not_ready=len(not_ready))
        self.violations.update(roll_stops_failed=failed, roll_not_ready=not_ready)

        def secs(kinds, field):
            xs = sorted(e[field] for e in ev if e["kind"] in kinds
                        and isinstance(e.get(field), (int, float)))
            return {"n": len(xs), "p50": pct(xs, 0.5), "max": xs[-1] if xs else None}

        def by_role(kind):
            out = {}
            for e in ev:
                if e["kind"] == kind:
                    out[e["role"]] = out.get(e["role"], 0) + 1
            return out
        self.info["rolls"] = {
            "rolls_by_role": by_role("roll"), "scale_steps_by_role": by_role("scale-out"),
            "seconds_to_exit": secs(("roll-stop", "scale-in"), "seconds"),
            "seconds_to_ready": secs(("roll-ready", "scale-ready"), "seconds"),
            "repeats_in_rolls": self.repeats_in_rolls()}

    def roll_windows(self):
        """[(from, to, what)]: each roll of the executor, from its start to its end, and
        each scale step of the executor, from the scale-out to the scale-in's exit; each
        until --settle-ms later (the rebalance the last start or stop causes)."""
        settle = self.args.settle_ms
        out, roll, outs = [], {}, {}
        for e in sorted(self.events, key=lambda e: e["t"]):
            if e.get("role") != "executor":
                continue
            if e["kind"] == "roll":
                roll = e
            elif e["kind"] == "roll-end" and roll:
                out.append((roll["t"], e["t"] + settle, "roll of the executor"))
                roll = {}
            elif e["kind"] == "scale-out":
                outs[e["slot"]] = e
            elif e["kind"] == "scale-in" and e["slot"] in outs:
                out.append((outs.pop(e["slot"])["t"], e["t"] + settle,
                            f"scale step {e['slot']}"))
        if roll:
            out.append((roll["t"], self.t_end, "roll of the executor"))
        out += [(e["t"], self.t_end, f"scale step {e['slot']}") for e in outs.values()]
        return out

    def repeats_in_rolls(self):
        """Informational: repeats of calls (expected ones too) whose window overlaps a
        roll or a scale step of the executor; of the expected ones, those only an
        executor's own log line excuses (no kill, SIGSTOP, crash or broker restart
        near), by what the line says: an orderly rebalance that makes an executor
        abort, lose its partitions or cut its calls still repeats them."""
        windows = self.roll_windows()
        n = {"expected": 0, "unexpected": 0, "expected_by_log_only": {}}
        for what, reps in (("expected", self.info.get("expected_repeats", [])),
                           ("unexpected", self.violations.get("unexpected_repeats", []))):
            for r in reps:
                if not any(a <= r["repeat"] and r["previous_call"] <= b
                           for a, b, _ in windows):
                    continue
                n[what] += 1
                lines = [d["what"] for d in r.get("disruptions", [])]
                if what == "expected" and lines and all(w.endswith(".log)") for w in lines):
                    for w in {w.split(" (")[0] for w in lines}:
                        n["expected_by_log_only"][w] = n["expected_by_log_only"].get(w, 0) + 1
        n["windows"] = [{"from": a, "to": b, "what": w} for a, b, w in windows]
        return n

    def check_sanitizers(self, logs):
        found, library = [], []
        for path in logs:
            text = tail(path, n=None) if os.path.exists(path) else ""
            for needle in SANITIZER_NEEDLES:
                i = text.find(needle)
                if i >= 0:
                    report = {"log": path, "report": text[max(0, i - 200):i + 3000]}
                    (library if librdkafka_leak_at_fatal_exit(text, i) else found).append(report)
                    break
        self.counts["sanitizer"] = len(found)
        self.violations["sanitizer"] = found
        self.info["librdkafka_leaks_at_fatal_exit"] = library

    def handoffs(self):
        """Informational: the same (version, attempt) of a key handed to the wheel more
        than once (harmless if the wheel voids the copy, which fired twice would show it
        did not). Each attempt of a far retry is a hand-off of its own."""
        rows = self.q("""SELECT key, version, attempt, COUNT(*) AS n FROM wheel
                         WHERE handoff = 1 AND what = 'submit'
                         GROUP BY key, version, attempt HAVING COUNT(*) > 1""")
        self.info["handed_over_twice"] = {"versions": len(rows),
                                          "examples": [dict(r) for r in rows[:20]]}

    def lateness(self):
        """Informational: first call of each scheduled call against its due time."""
        late = sorted(r[0] for r in self.q("""
            SELECT c.first - s.due FROM called c JOIN sched s USING (sid, attempt)"""))
        self.info["first_call_lateness_ms"] = {
            "calls": len(late), "p50": pct(late, 0.5), "p99": pct(late, 0.99),
            "max": late[-1] if late else None,
            "early_over_5ms": sum(1 for x in late if x < -5)}

    def missing_evidence(self):
        """What the verdict needs but the run did not record (a helper process that
        never worked): a verdict without it would pass by judging nothing."""
        needs = {"commands": "the producer's log", "calls": "the endpoint's log",
                 "ready": "the ready topic", "visible": "the live tail of wheel and ready",
                 "positions": "the wheel's and store's position samples"}
        if self.q("SELECT 1 FROM job_commands LIMIT 1"):
            needs.update(jtasks="the jobs processor's occurrences in tasks")
        if self.args.instance_counts.get("view"):
            self.db.execute("""CREATE TABLE IF NOT EXISTS questions(sent INTEGER, key TEXT,
                status INTEGER, state TEXT, version INTEGER, answered INTEGER)""")
            needs.update(questions="the view's answers (GET /api/task)")
        if getattr(self, "alarms", None) and self.q(
                "SELECT 1 FROM calls WHERE kind = 'alarm' LIMIT 1"):
            needs.update(alarm_calls="the endpoint's log of alarm calls")
        return [what for table, what in needs.items()
                if not self.q(f"SELECT 1 FROM {table} LIMIT 1")]

    def run(self, logs):
        self.executor_turns = executor_turns(logs)
        self.executor_revokes = executor_revokes(logs)
        self.prepare()
        for check in (self.check_lost, self.check_fired_twice, self.check_cancelled_called,
                      self.check_results, self.check_repeats, self.check_deliveries,
                      self.check_follow_ups, self.check_chains, self.check_groups,
                      self.check_broadcasts, self.check_limits,
                      self.handoffs, self.lateness,
                      self.check_jobs, self.check_view, self.check_view_counters,
                      self.check_alarms, self.check_rolls):
            check()
        self.check_sanitizers(logs)
        keys = ("lost", "fired_twice", "cancelled_called", "missing_results",
                "duplicate_results", "repeats_unexpected", "delivered_twice",
                "delivered_early", "delivered_unknown", "follow_ups_wrong",
                "follow_ups_not_run", "sanitizer",
                "view_contradicted", "view_counters_wrong") + self.CHAIN_CHECKS + \
            self.GROUP_CHECKS + self.BROADCAST_CHECKS + self.LIMIT_CHECKS + \
            self.JOB_CHECKS + \
            self.ALARM_CHECKS + self.ROLL_CHECKS
        self.failed = [k for k in keys if self.counts[k]]
        return not self.failed

    # -- what the topics say happened --
    def lost_pattern(self, key, sid, attempt, version):
        """A short factual account of where a lost call stopped: (pattern, facts)."""
        newer = self.q("""SELECT sid, attempt, version FROM wheel WHERE key = ? AND handoff = 0
                          AND what = 'submit' AND version > ? AND sid != ? AND attempt > 1
                          ORDER BY version LIMIT 1""", key, version, sid)
        if newer:
            return ("an earlier Submit's retry took a newer version than this Submit",
                    {"overridden_by": dict(newer[0])})
        mine = self.q("SELECT far, handoff FROM wheel WHERE sid = ? AND attempt = ?",
                      sid, attempt)
        if not mine:
            return "never reached wheel", {}
        if self.q("SELECT 1 FROM ready WHERE sid = ? AND attempt = ?", sid, attempt):
            return "fired to ready, never called", {}
        if any(m["far"] for m in mine) and not any(m["handoff"] for m in mine):
            return "held by the store, never handed over", {}
        return "in wheel, never fired", {}

    def called_pattern(self, r):
        """Why a call that a later command should have stopped was made anyway:
        (pattern, facts)."""
        if r["attempt"] > 1:
            v = self.q("SELECT MAX(version) FROM wheel WHERE sid = ? AND attempt = ?",
                       r["sid"], r["attempt"])[0][0]
            if v is not None and v > r["n_off"]:
                return ("retry attempt took a newer version than the client's command",
                        {"attempt_version": v, "command_version": r["n_off"]})
        fired = self.q("""SELECT MIN(v.at) FROM ready f JOIN visible v ON v.topic = 'ready'
                          AND v.part = f.part AND v.off = f.off
                          WHERE f.sid = ? AND f.attempt = ?""", r["sid"], r["attempt"])[0][0]
        facts = {"fired_visible_at": fired}
        if r["recalled"] is not None:
            early = r["due"] - r["recalled"]
            facts["recall_visible_before_due_ms"] = early
            return ("recalled before the due time, called anyway" if early > 0 else
                    "recalled only after the due time"), facts
        if fired is not None and r["seen"] is not None and fired > r["seen"]:
            return "fired after the command was visible in wheel, no recall", facts
        return "fired early, no recall written", facts

    @staticmethod
    def with_pattern(pattern_facts):
        pattern, facts = pattern_facts
        return {"pattern": pattern, **facts}

    # -- details --
    FULL_TRAILS = 1000  # per check; past that, a violation keeps its key's commands only

    def detail(self, check, key, lo, hi, **fields):
        """A violation with the chaos around it and its key's commands (versions,
        times); for the first FULL_TRAILS of each check also everything the topics and
        the endpoint hold about the key."""
        def rows(sql):
            return [dict(r) for r in self.q(sql, key)]
        lo = lo if lo is not None else hi
        self.trails[check] = self.trails.get(check, 0) + 1
        commands = rows("SELECT seq, kind, sid, due, sent, acked, part, off AS version, "
                        "scenario FROM commands WHERE key = ? ORDER BY off")
        around = [e for e in self.events if lo - 15000 <= e["t"] <= hi + 15000]
        if self.trails[check] > self.FULL_TRAILS:
            return dict(fields, key=key, trail={"commands": commands}, chaos_around=around)
        return dict(fields, key=key, trail={
            "commands": commands,
            "wheel": rows("SELECT version, what, attempt, due, sid, far, handoff, part, off, ts "
                          "FROM wheel WHERE key = ? ORDER BY part, off"),
            "ready": rows("SELECT version, what, attempt, due, sid, part, off, ts FROM ready "
                          "WHERE key = ? ORDER BY part, off"),
            "calls": rows("SELECT at, sid, attempt, status, delay FROM calls WHERE key = ? "
                          "ORDER BY at"),
            "results": rows("SELECT attempt, due, outcome, status, started, finished, error "
                            "FROM results WHERE key = ? ORDER BY off"),
            "attempts": rows("SELECT attempt, due, sid, status, error, permanent FROM attempts "
                             "WHERE key = ? ORDER BY off"),
            "dead": rows("SELECT attempt, sid, reason FROM dead WHERE key = ? ORDER BY off")},
            chaos_around=around)

    def count_by(self, name, field):
        out = {}
        for v in self.violations.get(name, []):
            s = v.get(field) or "?"
            out[s] = out.get(s, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def print_summary(v, workload, events, args, passed, missing=()):
    c = v.counts
    kinds = {}
    for e in events:
        kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
    say("")
    say(f"workload: {workload.get('tasks', 0)} tasks, {workload.get('commands', 0)} commands "
        f"({workload.get('submits', 0)} submits), {args.duration:g} s at {args.rate:g}/s + "
        f"{args.bursts} bursts of {args.burst_size}, {args.partitions} partitions, seed "
        f"{args.seed}")
    say(f"chaos: {kinds.get('kill', 0)} kill -9, {kinds.get('stop', 0)} SIGSTOP, "
        f"{kinds.get('broker-stop', 0)} broker restarts, {kinds.get('exit', 0)} exits "
        f"(restarted), {kinds.get('roll', 0)} rolls ({kinds.get('roll-stop', 0)} replicas "
        f"restarted), {kinds.get('scale-out', 0)} scale steps ({kinds.get('scale-in', 0)} "
        f"scaled in), {kinds.get('skip', 0)} skipped")
    rows = [
        ("lost", c["lost"], f"of {c['must_call']} calls that had to be made; "
                            f"{c['lost_unjudged']} unjudged (chaos nearby)"),
        ("fired twice", c["fired_twice"], f"of {c['fired']} Submits fired to ready"),
        ("cancelled/superseded called", c["cancelled_called"],
         f"judged {c['cancel_judged_early']} early + {c['cancel_judged_one_hop']} cancels in "
         f"one hop + {c['cancel_judged_lead']} in the lead window + "
         f"{c['cancel_judged_unrouted']} never routed; {c['cancel_unjudged']} "
         "unjudged (chaos nearby)"),
        ("missing Results", c["missing_results"], f"of {c['fired']} fired"),
        ("duplicate Results", c["duplicate_results"], ""),
        ("calls repeated, unexpected", c["repeats_unexpected"],
         f"{v.info.get('rolls', {}).get('repeats_in_rolls', {}).get('unexpected', 0)} across "
         "a roll or scale step of the executor" if c.get("rolls") or c.get("scale_steps")
         else ""),
        ("Kafka targets delivered twice", c["delivered_twice"],
         f"of {c['delivered']} records in the target topic (read_committed); "
         f"{c['delivered_early']} delivered early, {c['delivered_unknown']} of no Submit "
         "(lost and cancelled ones are counted with the calls)"),
        ("follow-ups wrong", c["follow_ups_wrong"],
         f"parents whose follow-up Submits differ from their successes; {c['follow_ups']} "
         f"follow-ups submitted, {c['follow_ups_not_run']} due that never ran"),
        ("chain links called at once", c["chain_overlaps"],
         f"of {c['chain_links_called']} links called in {c['chain_links']} added to serial "
         f"chains; {c['chain_overlaps_excused']} excused (a repeat across an executor "
         f"disruption); {c['chain_out_of_order']} out of order, {c['chain_links_lost']} lost, "
         f"{c['chain_cancelled_called']} of {c['chain_links_cancelled']} cancelled called"),
        ("group member wrong", c.get("group_member_wrong", 0),
         f"of {c.get('group_succeeded', 0)} successes of {c.get('group_tasks', 0)} group tasks "
         f"({c.get('group_calls', 0)} calls; Results by member "
         f"{v.info.get('group', {}).get('results_by_member', {})}); or a member on a task "
         "that named no group"),
        ("broadcast shard missing", c.get("broadcast_shard_missing", 0),
         f"of {c.get('broadcast_fanned_out', 0)} broadcasts fanned out "
         f"({c.get('broadcast_judged', 0)} judged) of {c.get('broadcast_tasks', 0)} "
         f"broadcast tasks; {c.get('broadcast_shards', 0)} shards submitted, "
         f"{c.get('broadcast_shard_calls', 0)} shard calls (by port "
         f"{v.info.get('broadcast', {}).get('shard_calls_by_port', {})})"),
        ("broadcast shard twice", c.get("broadcast_shard_twice", 0),
         "submitted or ended twice, or called at another member or with wrong headers"),
        ("broadcast Result wrong", c.get("broadcast_result_wrong", 0),
         f"Results of the broadcasts by outcome "
         f"{v.info.get('broadcast', {}).get('results_by_outcome', {})}"),
        ("limit exceeded, open", c.get("limit_exceeded_open", 0),
         f"most {c.get('limit_most_open', 0)} open at once of {c.get('limit_calls', 0)} calls "
         f"through {v.info.get('limit', {}).get('name', '-')} ({c.get('limit_tasks', 0)} tasks; "
         f"limit {v.info.get('limit', {}).get('max_concurrent', '-')}), "
         f"{c.get('limit_excused_open', 0)} arrivals over it excused (executor disruption); "
         f"most where judged {c.get('limit_most_open_judged', 0)}"),
        ("limit exceeded, rate", c.get("limit_exceeded_rate", 0),
         f"most {c.get('limit_most_per_second', 0)} arrived in one second (limit "
         f"{v.info.get('limit', {}).get('max_per_second', '-')}/s + the endpoint's lag), "
         f"{c.get('limit_excused_windows', 0)} windows over it excused, most where judged "
         f"{c.get('limit_most_per_second_judged', 0)}; by the Results' "
         f"started_at {v.info.get('limit', {}).get('most_started_in_a_second_by_results', '-')}"),
        ("calls repeated, expected", c["repeats_expected"],
         "executor disrupted in between: not a failure "
         f"({c.get('repeats_expected_by_endpoint_lag', 0)} of them only within the endpoint's "
         "lag, a started call's way to it or a log line's millisecond" + roll_repeats_note(v)
         + ")"),
        ("view answers contradicted", c.get("view_contradicted", 0),
         f"of {c.get('view_questions', 0)} answers about a task (GET /api/task, and each "
         f"task of {c.get('view_lists', 0)} lists of pending tasks due within 10 s: "
         f"{v.info.get('view_list_answers', {})}): answers "
         f"{v.info.get('view_answers', {})}, states {v.info.get('view_states', {})}"),
        ("view counters wrong", c.get("view_counters_wrong", 0), view_counters_note(v)),
        ("roll stops failed", c.get("roll_stops_failed", 0),
         f"of {c.get('roll_restarts', 0)} replicas SIGTERMed by {c.get('rolls', 0)} rolls "
         f"and {c.get('scale_ins', 0)} by scale-ins ({c.get('scale_steps', 0)} scale steps): "
         "not exited 0 within 40 s; seconds to exit "
         f"{v.info.get('rolls', {}).get('seconds_to_exit', {})}"),
        ("roll not ready", c.get("roll_not_ready", 0),
         "replicas a roll or scale-out started that were not ready within 60 s; seconds "
         f"to ready {v.info.get('rolls', {}).get('seconds_to_ready', {})}"),
        ("sanitizer reports", c["sanitizer"],
         f"+ {len(v.info.get('librdkafka_leaks_at_fatal_exit', []))} of librdkafka's leak "
         "at a fatal exit (not counted)"),
    ]
    say(f"  {'check':30s} {'count':>8s}  notes")
    for name, n, note in rows:
        say(f"  {name:30s} {n:8d}  {note}")
    for name in ("lost", "cancelled_called"):
        for field in ("pattern", "scenario"):
            bs = v.count_by(name, field)
            if bs:
                say(f"  {name.replace('_', ' ')} by {field}: "
                    + "; ".join(f"{k} {n}" for k, n in bs.items()))
    close = v.info["too_close_to_judge"]
    say(f"  cancels/re-submits too close to the due time to judge: {close['commands']}, "
        f"called anyway {close['called_anyway']}; not judged because the wheel read it too "
        f"late (pipeline lag): {v.info['lagging']}; position samples left out as misreads "
        f"(above a later one): {v.info.get('positions_misread', 0)}")
    say(f"  lead window (counted, not judged): cancels/re-submits visible in wheel "
        f"{v.args.recall_margin_ms}-{v.args.lead_ms} ms before the due time, wheel keeping up: "
        + "; ".join(f"{via}: {e['commands']}, recall written {e['recalled']}, called anyway "
                    f"{e['called_anyway']}" for via, e in v.info["lead_window_estimate"].items())
        + f" (recalls in ready: {v.info['recalls']})")
    judged = {}
    for b in v.violations["cancelled_called"]:
        judged[b["judged"]] = judged.get(b["judged"], 0) + 1
    if judged:
        say("  cancelled/superseded called, by judgement: "
            + ", ".join(f"{k} {n}" for k, n in judged.items()))
    if v.info["made_without_reaching_the_endpoint"]:
        say(f"  note: {v.info['made_without_reaching_the_endpoint']} calls never reached the "
            "endpoint but have a Result (timed out in the executor); counted as made")
    if v.info["handed_over_twice"]["versions"]:
        say(f"  note: {v.info['handed_over_twice']['versions']} versions were handed from the "
            "store to the wheel more than once (see the report)")
    lt = v.info["first_call_lateness_ms"]
    if lt["calls"]:
        say(f"  first-call lateness: p50 {lt['p50']:.0f} ms, p99 {lt['p99']:.0f} ms, max "
            f"{lt['max']:.0f} ms; {lt['early_over_5ms']} calls more than 5 ms early")
    if v.info["unknown_commands"]:
        say(f"  note: {v.info['unknown_commands']} commands of keys with an unacknowledged "
            "command were not judged")
    if v.info["calls_unknown_sid"]:
        say(f"  note: {v.info['calls_unknown_sid']} calls named no known Submit")
    print_jobs_summary(v)
    print_alarms_summary(v)
    judged = c["must_call"] / max(1, c["must_call"] + c["lost_unjudged"])
    if judged < 0.5:
        say(f"  WARNING: only {judged:.0%} of the calls that might have had to be made were "
            "judged (chaos or lag nearby); the verdict is weak")
    if not passed:
        print_violations(v)
    verdict = "PASS" if passed else "FAIL (" + ", ".join(
        f"{k.replace('_', ' ')} {c[k]}" for k in v.failed) + ")"
    if missing:
        verdict = "NOT JUDGEABLE (the run recorded nothing of " + "; ".join(missing) + ")"
    say(f"VERDICT: {verdict}  [seed {args.seed}]")


VIOLATION_TIME_FIELDS = ("repeat", "due", "scheduled_at", "sent_at", "called_at", "t")


def roll_repeats_note(v):
    """The expected repeats across a roll or scale step of the executor, and those only
    an executor's log line excused (its abort, lost partitions or calls cut)."""
    r = v.info.get("rolls", {}).get("repeats_in_rolls")
    if not r or not (v.counts.get("rolls") or v.counts.get("scale_steps")):
        return ""
    by_log = r.get("expected_by_log_only", {})
    return (f"; {r['expected']} across a roll or scale step of the executor"
            + (", with no chaos near, excused by the executor's log: "
               + ", ".join(f"{w} {k}" for w, k in by_log.items()) if by_log else ""))


def view_counters_note(v):
    """The view's minute counters against the topics' (check_view_counters)."""
    i = v.info.get("view_counters")
    if not isinstance(i, dict):
        return str(i)
    return ("GET /api/stats after the run (" + str(i["instance"]) + "), minutes' sums / "
            "topics: " + ", ".join(f"{k} {i['view'][k]}/{i['topics'][k]}" for k in i["view"])
            + f"; lastHour {i['last_hour']}; judged {i['judged']}")


def print_violations(v, examples=3):
    """When the run failed, enough to start on without the report (CI keeps only the
    output): per check, when its violations happened (seconds into the run) and the
    first few with the executor turns and chaos within 3 s of them."""
    def rel(ms):
        return f"{(ms - v.t0) / 1000:.1f}s"
    for name, items in v.violations.items():
        if not items:
            continue
        times = [next((i[f] for f in VIOLATION_TIME_FIELDS if i.get(f) is not None), None)
                 for i in items]
        by_second = {}
        for t in times:
            if t is not None:
                sec = int((t - v.t0) // 1000)
                by_second[sec] = by_second.get(sec, 0) + 1
        say(f"  {name}: {len(items)}; by second into the run: "
            + ", ".join(f"{sec}s {n}" for sec, n in sorted(by_second.items())))
        for item, t in list(zip(items, times))[:examples]:
            fields = {k: (rel(x) if k in ("previous_call", "repeat") else x)
                      for k, x in item.items()
                      if k in ("key", "previous_call", "repeat", "endpoint_lag_ms", "attempt",
                               "version", "due", "scheduled_at", "times", "judged", "why",
                               "dead_letters", "counted", "missed", "twice", "gap_ms", "alarms",
                               "expected", "most", "limit", "allowed", "member", "slot",
                               "instance", "rc", "seconds")}
            say(f"    {fields}")
            if t is None:
                continue
            near = [f"{rel(tt)} {w}" for tt, w in getattr(v, "executor_turns", [])
                    if abs(tt - t) <= 3000]
            near += [f"{rel(e['t'])} {e.get('what', e.get('kind', ''))} "
                     f"{e.get('instance', e.get('role', ''))}".rstrip()
                     for e in v.events if abs(e["t"] - t) <= 3000]
            if near:
                say("      within 3 s: " + "; ".join(sorted(near)[:12]))


def print_jobs_summary(v):
    c, j = v.counts, v.info.get("jobs", {})
    if not j.get("jobs"):
        return
    cmd = j["commands"]
    say(f"recurring jobs: {j['jobs']} jobs every second ("
        + ", ".join(f"{k} {n}" for k, n in sorted(j["kinds"].items()))
        + f"); {cmd['update']} updates, {cmd['pause']} pauses + {cmd['resume']} resumes, "
        f"{cmd['delete']} deletes")
    rows = [
        ("occurrences written", c["jobs_occurrences"],
         f"instants with a Submit ({j['submits']} Submits, {j['cancels']} Cancels; "
         f"{j['rewritten']} written again after a Cancel, {j['cancelled']} left cancelled, "
         f"{j['cancelled_once_due']} of them cancelled once due; {j['by_design']} never "
         "written by design: before a PutJob was applied)"),
        ("occurrence skipped", c["jobs_skipped"], "due, and never written (or left cancelled)"),
        ("occurrence written twice", c["jobs_written_twice"], "two Submits with no Cancel between"),
        ("occurrence off schedule", c["jobs_off_schedule"], ""),
        ("written after DELETE", c["jobs_after_delete"], "and not cancelled"),
        ("PutJob not applied", c["jobs_not_applied"], "no occurrence of it written"),
        ("occurrence fired twice", c["jobs_fired_twice"], "same version twice in ready"),
        ("final Results missing", c["jobs_missing_finals"], f"{j['finals']} finals"),
        ("final Results duplicate", c["jobs_duplicate_finals"],
         f"{c['jobs_dup_unjudged']} unjudged (written again, its Cancel too close, read by the "
         "wheel too late, or chaos)"),
        ("job calls repeated, unexpected", c["jobs_repeats_unexpected"], ""),
        ("job calls repeated, expected", c["jobs_repeats_expected"],
         f"executor disrupted in between ({c.get('jobs_repeats_expected_by_endpoint_lag', 0)} "
         f"only within the endpoint's lag, a started call's way to it or a log line's "
         f"millisecond); "
         f"+ {j['repeats_other_version']} of an occurrence written again whose first version "
         "ran too"),
        ("job commands dead-lettered", c["jobs_dead_letters"], ""),
    ]
    for name, n, note in rows:
        say(f"  {name:30s} {n:8d}  {note}")
    lt = j["lateness_ms"]
    if lt["occurrences"]:
        say(f"  job calls: {j['calls']} for {j['called']} occurrences; first-call lateness "
            f"p50 {lt['p50']:.0f} ms, p99 {lt['p99']:.0f} ms, max {lt['max']:.0f} ms "
            f"(pause windows left out); {lt['early_over_5ms']} more than 5 ms early; "
            f"{j['cancelled_called']} cancelled ones called anyway, "
            f"{j['called_both_definitions']} called under both definitions")
    if j["final_without_call"] or j["calls_unknown_sid"] or j["unjudged_jobs"]:
        say(f"  note: {j['final_without_call']} occurrences have a final Result but no call "
            f"reached the endpoint; {j['calls_unknown_sid']} job calls named no known PutJob; "
            f"{j['unjudged_jobs']} jobs with an unacknowledged command not judged")


def print_alarms_summary(v):
    c, a = v.counts, v.info.get("alarms", {})
    if not a.get("configured"):
        say("alarms: not judged (no alarms role in this run)")
        return
    apps = a["apps"]
    chaos = a["chaos"]
    say(f"alarms: webhooks {', '.join(f'{k}={u}' for k, u in a['webhooks'].items())}, interval "
        f"{a['interval_ms']} ms; {c['alarms_written']} alarms written to tasks, "
        f"{c['alarms_distinct']} distinct called ({c['alarms_calls']} calls); the alarms role "
        f"killed {chaos['kill']}, frozen {chaos['stop']}, exited {chaos['exit']} times")
    if not c["alarms_dead_letters"]:
        say(f"  no dead letter of an app with a webhook in dead: nothing to judge "
            f"({a['expected_dead_letters']} 404 tasks were due)")
    out = a["left_out"]
    gaps = [x["min_gap_ms"] for x in apps.values() if x["min_gap_ms"] is not None]
    rows = [
        ("dead letters counted", c["alarms_counted"],
         f"of {c['alarms_dead_letters']} dead letters of apps with a webhook in dead ("
         + ", ".join(f"{app} {x['dead_letters']} in {x['alarms']} alarms, largest "
                     f"{x['largest']}, {x['listed']} listed" for app, x in apps.items())
         + f"); left out: {out['alarm_calls']} of alarm calls, {out['no_task']} without a "
         f"task, {out['no_webhook']} of apps without a webhook"),
        ("dead letters not alarmed", c["alarms_missed"],
         "dead letters less the deadLetters of the app's distinct alarms"),
        ("dead letters alarmed twice", c["alarms_counted_twice"],
         "the deadLetters of the app's distinct alarms less its dead letters"),
        ("key listed in two alarms", c["alarms_keys_twice"], "in first of two distinct alarms"),
        ("listed key no dead letter", c["alarms_keys_unknown"],
         "a first entry (key, failedAt, jobId) that is no dead letter of the app"),
        ("alarms too close", c["alarms_too_close"],
         f"sentAt less than {a['interval_ms']} ms after the app's previous alarm"
         + (f" (closest {min(gaps)} ms)" if gaps else "")),
        ("alarm written, never called", c["alarms_not_called"],
         f"{c['alarms_not_called_unjudged']} written too close to the end (unjudged)"),
        ("alarm called, never written", c["alarms_not_written"], "not in tasks (read_committed)"),
        ("alarm calls malformed", c["alarms_malformed"],
         "not a POST of the app's application/json mooncake.alarm to its webhook, or one "
         "alarm task with two bodies"),
        ("alarm repeats, unexpected", c["alarms_repeats_unexpected"], "as for tasks"),
        ("alarm repeats, expected", c["alarms_repeats_expected"],
         "executor disrupted in between: counted once"),
        ("no dead letters to alarm", c["alarms_no_dead_letters"],
         f"{a['expected_dead_letters']} 404 tasks were due before the end"),
    ]
    for name, n, note in rows:
        say(f"  {name:30s} {n:8d}  {note}")


def judge_run_dir(run_dir, args):
    """The verdict from what a run left in its directory (chaos.db, events.jsonl,
    run.json): prints the summary, writes the report, returns whether it passed."""
    with open(os.path.join(run_dir, "run.json")) as f:
        run = json.load(f)
    with open(os.path.join(run_dir, "events.jsonl")) as f:
        events = [json.loads(line) for line in f if line.strip()]
    db = sqlite3.connect(os.path.join(run_dir, "chaos.db"))
    v = Verdict(db, events, args, run["t0"], run["t_end"], run["bursts"])
    v.endpoint_lag = endpoint_lags(os.path.join(run_dir, "endpoint_lag.tsv"))
    v.alarms = run.get("alarms")
    v.endpoints = run.get("endpoints")
    stats_path = os.path.join(run_dir, "view_stats.json")
    if os.path.exists(stats_path):  # the question Run.ask_stats asked the view
        with open(stats_path) as f:
            v.view_stats = json.load(f)
    passed = v.run(run["logs"])
    db.commit()
    missing = v.missing_evidence()
    print_summary(v, run["workload"], events, args, passed, missing)
    if missing:
        passed = None
    report = {
        "verdict": {True: "PASS", False: "FAIL", None: "NOT JUDGEABLE"}[passed],
        "failed": v.failed, "missing_evidence": missing, "seed": args.seed,
        "command": sys.argv, "run_dir": run_dir,
        "options": {k: v for k, v in vars(args).items() if k not in ("judge", "cleanup")},
        "prefix": run["prefix"], "t0": run["t0"], "t_end": run["t_end"],
        "workload": run["workload"], "bursts": run["bursts"], "counts": v.counts,
        "info": v.info, "chaos": events,
        "disruptions": [{"from": a, "to": b, "role": r, "what": w}
                        for a, b, r, w in v.dis.iv],
        "violations": v.violations}
    path = args.report or os.path.join(run_dir, "report.json")
    with open(path, "w") as f:
        json.dump(report, f, indent=1, default=str)
    say(f"report: {path}")
    db.close()
    return passed


def exit_code(passed):
    """0 PASS, 1 FAIL, 2 when the run could not be judged."""
    return {True: 0, False: 1, None: 2}[passed]
