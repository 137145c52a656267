#!/usr/bin/env python3
"""Submits a few commands to mooncake.tasks the way any Kafka client would
(Avro single-object encoding, key app_id/task_id) and shows where the router
sent each: wheel (due within the horizon), store (due later) or dead (with
the reason). Usage: tools/quickstart-submit.py [BOOTSTRAP] [PREFIX]"""
import io
import json
import os
import sys
import time
import uuid

import fastavro
import fastavro.schema
from confluent_kafka import Consumer, Producer, TopicPartition

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
bootstrap = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9092"
prefix = sys.argv[2] if len(sys.argv) > 2 else "mooncake."


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
    if data[:10] != header:
        return None
    return fastavro.schemaless_reader(io.BytesIO(data[10:]), s, return_record_name=True)


now = int(time.time() * 1000)
run = uuid.uuid4().hex[:6]


def submit(tid, due, url="https://example.com/orders/cancel"):
    return encode("Command", {"payload": ("mooncake.Submit", {"task": {
        "app_id": "shop", "task_id": tid, "due_at": due,
        "callback": {"url": url, "method": "POST",
                     "headers": {"content-type": "application/json"},
                     "body": b'{"order":"%s"}' % tid.encode(), "timeout_ms": 30000},
        "retry": None, "attempt": 1, "created_at": now, "metadata": {}}})})


cmds = [
    (f"shop/order-{run}-1", submit(f"order-{run}-1", now + 5000), "task due in 5 s"),
    (f"shop/order-{run}-2", submit(f"order-{run}-2", now + 86400_000), "task due tomorrow"),
    (f"shop/order-{run}-3", encode("Command", {"payload": ("mooncake.Cancel", {
        "app_id": "shop", "task_id": f"order-{run}-3", "requested_at": now})}), "cancel"),
    (f"shop/order-{run}-4", submit(f"order-{run}-4", now, url="ftp://nope"), "bad callback url"),
    (f"shop/order-{run}-5", b"{not avro at all}", "not Avro"),
]
p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
for key, value, what in cmds:
    p.produce(prefix + "tasks", key=key, value=value)
    print(f"submitted {key:28} ({what})")
p.flush(30)

keys = {k for k, _, _ in cmds}
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "quickstart-" + run,
              "isolation.level": "read_committed", "enable.auto.commit": False})
meta = c.list_topics(prefix + "tasks", timeout=10)
nparts = len(meta.topics[prefix + "tasks"].partitions)
c.assign([TopicPartition(prefix + t, i, 0) for t in ("wheel", "store", "dead")
          for i in range(nparts)])
seen = 0
deadline = time.time() + 20
while seen < 6 and time.time() < deadline:  # the cancel goes to two topics
    m = c.poll(0.5)
    if m is None or m.error() or m.key().decode() not in keys:
        continue
    seen += 1
    topic = m.topic()[len(prefix):]
    key = m.key().decode()
    if topic == "dead":
        print(f"  {key:28} -> dead   reason: {decode('DeadLetter', m.value())['reason']}")
    elif topic == "store" and m.value() is None:
        print(f"  {key:28} -> store  tombstone (cancel removes any stored version)")
    elif topic == "store":
        v = decode("StoredTask", m.value())
        print(f"  {key:28} -> store  version {v['version']}, waits there until it nears its due time")
    else:
        v = decode("WheelEntry", m.value())
        kind = v["payload"][0].split(".")[-1]
        print(f"  {key:28} -> wheel  {kind} version {v['version']}")
c.close()
if seen < 6:
    sys.exit(f"only {seen} of 6 routed records arrived within 20 s: is the router running?")
