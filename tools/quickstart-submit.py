#!/usr/bin/env python3
"""Submits a few commands to mooncake.tasks the way any Kafka client would (Avro
single-object encoding, key app_id/task_id), then follows mooncake.ready and
mooncake.dead for ~10 s: tasks firing on time with their lateness, a cancelled task
that never fires, the dead-letter reason of a malformed record, and a task due beyond
the horizon (MOONCAKE_HORIZON_MS, default 60000) held by the store.
Usage: tools/quickstart-submit.py [BOOTSTRAP] [PREFIX] [--store-metrics URL]"""
import argparse
import io
import json
import os
import sys
import time
import urllib.request
import uuid

import fastavro
import fastavro.schema
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("bootstrap", nargs="?", default="127.0.0.1:9092")
ap.add_argument("prefix", nargs="?", default="mooncake.")
ap.add_argument("--store-metrics", default="http://127.0.0.1:8081/metrics",
                help="the store's /metrics URL (default %(default)s)")
ap.add_argument("--follow", type=float, default=10.0, help="seconds to follow (default 10)")
ap.add_argument("--warm-up", action="store_true",
                help="first send one task due now and one malformed record through a "
                     "freshly started broker and wait for them")
args = ap.parse_args()
prefix = args.prefix
horizon_ms = int(os.environ.get("MOONCAKE_HORIZON_MS", "60000"))
far_ms = max(90_000, horizon_ms + 30_000)  # beyond the horizon: the store keeps it


def schema(name):
    with open(os.path.join(ROOT, "schemas", name + ".avsc")) as f:
        j = json.load(f)
    fp = fastavro.schema.fingerprint(fastavro.schema.to_parsing_canonical_form(j), "CRC-64-AVRO")
    return fastavro.parse_schema(j), b"\xc3\x01" + bytes.fromhex(fp)


def encode(name, rec):
    s, header = schema(name)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, s, rec)
    return header + buf.getvalue()


def decode(name, data):
    s, header = schema(name)
    if data is None or data[:10] != header:
        return None
    return fastavro.schemaless_reader(io.BytesIO(data[10:]), s, return_record_name=True)


def submit(tid, due, created):
    return encode("Command", {"payload": ("mooncake.Submit", {"task": {
        "app_id": "shop", "task_id": tid, "due_at": due,
        "callback": {"url": "https://example.com/orders/cancel", "method": "POST",
                     "headers": {"content-type": "application/json"},
                     "body": b'{"order":"%s"}' % tid.encode(), "timeout_ms": 30000},
        "retry": None, "attempt": 1, "created_at": created, "metadata": {}}})})


def cancel(tid, now):
    return encode("Command", {"payload": ("mooncake.Cancel", {
        "app_id": "shop", "task_id": tid, "requested_at": now})})


run = uuid.uuid4().hex[:6]
ids = {n: f"order-{run}-{n}" for n in range(1, 6)}
# log_level 3: errors only; a broker that just started logs transient retries as warnings
p = Producer({"bootstrap.servers": args.bootstrap, "enable.idempotence": True, "log_level": 3})
c = Consumer({"bootstrap.servers": args.bootstrap, "group.id": "quickstart-" + run,
              "isolation.level": "read_committed", "enable.auto.commit": False, "log_level": 3})
meta = c.list_topics(timeout=10)
if prefix + "ready" not in meta.topics:
    sys.exit(f"no topic {prefix}ready at {args.bootstrap}: are the router, store and wheel running?")
# Follow ready and dead from their current ends: everything of this run comes after.


def end_offset(topic, i):
    deadline = time.time() + 30
    while True:  # a topic created a moment ago may not have its leader yet
        try:
            return c.get_watermark_offsets(TopicPartition(topic, i), timeout=10)[1]
        except KafkaException:
            if time.time() > deadline:
                raise
            time.sleep(0.2)


c.assign([TopicPartition(prefix + t, i, end_offset(prefix + t, i))
          for t in ("ready", "dead") for i in meta.topics[prefix + t].partitions])


def warm_up():
    """A fresh broker is slow for its first transactions (cold JVM, coordinators loading):
    run a task due now and a malformed record through router, wheel and dead first, so
    the figures below show mooncake rather than the broker starting."""
    t0 = int(time.time() * 1000)
    keys = {f"shop/warmup-{run}": submit(f"warmup-{run}", t0, t0),
            f"shop/warmup-{run}-bad": b"{not avro}"}
    for k, v in keys.items():
        p.produce(prefix + "tasks", key=k, value=v)
    p.flush(30)
    left = set(keys)
    while left and time.time() < t0 / 1000 + 30:
        m = c.poll(0.2)
        if m is not None and not m.error() and m.key() is not None:
            left.discard(m.key().decode())
    if left:
        sys.exit("the warm-up task did not come through within 30 s: see the roles' logs")
    print(f"warm-up: one task due now and one bad record took {int(time.time() * 1000) - t0} ms "
          "(a fresh broker's first transactions are slow)")


if args.warm_up:
    warm_up()
now = int(time.time() * 1000)
due = {1: now + 3000, 2: now + 6000, 3: now + 5000, 4: now + far_ms}
cmds = [
    (1, submit(ids[1], due[1], now), "task due in 3 s"),
    (2, submit(ids[2], due[2], now), "task due in 6 s"),
    (3, submit(ids[3], due[3], now), "task due in 5 s ..."),
    (3, cancel(ids[3], now), "... cancelled right away"),
    (4, submit(ids[4], due[4], now),
     f"task due in {far_ms // 1000} s (beyond the {horizon_ms // 1000} s horizon: the store keeps it)"),
    (5, b"{not avro at all}", "malformed record (not Avro)"),
]
print(f"submitting to {prefix}tasks (key shop/<id>):")
for n, value, what in cmds:
    p.produce(prefix + "tasks", key=f"shop/{ids[n]}", value=value)
    print(f"  {ids[n]}  {what}")
if p.flush(30):
    sys.exit(f"could not deliver to {prefix}tasks at {args.bootstrap}")

print(f"following {prefix}ready (fired tasks) and {prefix}dead for {args.follow:.0f} s;")
print("lateness = arrival here - due_at (and the record's timestamp - due_at):")
fired, dead = {}, None
by_key = {f"shop/{tid}": n for n, tid in ids.items()}
end = now / 1000 + args.follow
while time.time() < end:
    m = c.poll(min(0.2, max(0.0, end - time.time())))
    if m is None or m.error() or m.key() is None:
        continue
    n = by_key.get(m.key().decode())
    if n is None:
        continue
    arrived = int(time.time() * 1000)
    at = f"{'+%.1f s' % ((arrived - now) / 1000):>7}"
    if m.topic() == prefix + "dead":
        dead = decode("DeadLetter", m.value())
        print(f"  {at}  {ids[n]}  dead: {dead['reason'] if dead else '(undecodable)'}")
        continue
    v = decode("WheelEntry", m.value())
    task = v["payload"][1]["task"] if v else None
    if task is None:
        continue
    fired[n] = True
    due_at = task["due_at"]  # fastavro decodes timestamp-millis to a datetime
    due_at = round(due_at.timestamp() * 1000) if hasattr(due_at, "timestamp") else due_at
    print(f"  {at}  {ids[n]}  fired, {arrived - due_at} ms late "
          f"(record timestamp {m.timestamp()[1] - due_at} ms)")
c.close()

ok = True
for n in (1, 2):
    if n not in fired:
        print(f"  {ids[n]}  did NOT fire within {args.follow:.0f} s: see the wheel's log")
        ok = False
if 3 in fired:
    print(f"  {ids[3]}  fired although it was cancelled")
    ok = False
else:
    print(f"  {ids[3]}  never fired: it was cancelled")
if dead is None:
    print(f"  {ids[5]}  did NOT reach {prefix}dead: see the router's log")
    ok = False



def in_changelog(key):
    """True when the latest committed record of key in the store's changelog is a task."""
    sc = Consumer({"bootstrap.servers": args.bootstrap, "group.id": "quickstart-" + run,
                   "isolation.level": "read_committed", "enable.auto.commit": False,
                   "enable.partition.eof": True, "log_level": 3})
    left = set(meta.topics[prefix + "store"].partitions)
    sc.assign([TopicPartition(prefix + "store", i, 0) for i in left])
    found, deadline = False, time.time() + 10
    while left and time.time() < deadline:
        m = sc.poll(0.2)
        if m is None:
            continue
        if m.error():
            left.discard(m.partition())  # end of the partition (or an error)
        elif m.key() is not None and m.key().decode() == key:
            found = m.value() is not None
    sc.close()
    return found


held = None
try:
    with urllib.request.urlopen(args.store_metrics, timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(("mooncake_store_tasks ", "mooncake_store_tasks{")):
                held = int(float(line.split()[-1]))
except OSError as e:
    print(f"could not read the store's metrics at {args.store_metrics}: {e}")
if held is not None:
    kept = in_changelog(f"shop/{ids[4]}")
    hand = time.strftime("%H:%M:%S", time.localtime((due[4] - horizon_ms) / 1000))
    fire = time.strftime("%H:%M:%S", time.localtime(due[4] / 1000))
    print(f"the store holds {held} task(s) (mooncake_store_tasks on {args.store_metrics})")
    if kept:
        print(f"  {ids[4]}  is one (it is in {prefix}store, the store's changelog): handed to "
              f"the wheel at {hand} (due - horizon), fires at {fire}")
    else:
        print(f"  {ids[4]}  is NOT in {prefix}store, the store's changelog: see the store's log")
    ok = ok and held >= 1 and kept
else:
    ok = False
sys.exit(0 if ok else 1)
