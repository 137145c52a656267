#!/usr/bin/env python3
"""Submit and cancel mooncake tasks by producing Avro Commands straight to Kafka,
with confluent-kafka and fastavro: the client contract of README.md ("Submitting
tasks straight to Kafka") in one file, usable as a program or as a module.

    mooncake_client.py submit -b kafka:9092 --app shop --url https://x/hook --delay-ms 60000
    mooncake_client.py submit -b kafka:9092 --app shop --kafka-topic shop.reminders \
        --kafka-key order-42 --kafka-value '{"order":42}' --delay-ms 60000
    mooncake_client.py cancel -b kafka:9092 --app shop --task-id 0193...

A task either calls a URL (--url) or, at its due time, has mooncake produce a
record to a Kafka topic (--kafka-topic: callback.url is then "", and the topic
must be allowed for the app by mooncake's --target-topics). --late-ms N
--late-action RUN|DROP|DEAD says what happens if it can only start more than
N ms after its due time.

As a module: Client(bootstrap).submit(task(...)) / .cancel(app, id) / .close().

The three things that matter, whatever language you write this in:
  * key = "app_id/task_id", the two ids of the command;
  * partitioner = murmur2 (the Java client's default; librdkafka's is CRC32, so
    set partitioner=murmur2_random), so every command of a key lands on one
    partition, where the router versions it;
  * value = Avro single-object encoding of mooncake.Command: C3 01, the schema's
    CRC-64-AVRO fingerprint (8 bytes, little-endian), the Avro body. Or the
    Confluent framing (00, 4-byte big-endian schema id, body) for an id that
    mooncake was started with (--confluent-schema-ids)."""
import argparse
import io
import json
import os
import struct
import sys
import time
import uuid

import fastavro
from confluent_kafka import KafkaError, KafkaException, Producer
from fastavro.schema import fingerprint, parse_schema, to_parsing_canonical_form

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SCHEMA = os.path.join(HERE, "..", "..", "..", "schemas", "Command.avsc")


class Codec:
    """Command.avsc, parsed once, and its single-object header."""

    def __init__(self, schema_path=DEFAULT_SCHEMA):
        with open(schema_path) as f:
            raw = json.load(f)
        self.schema = parse_schema(raw)
        pcf = to_parsing_canonical_form(raw)
        # fastavro gives the fingerprint as hex of its bytes in little-endian
        # order, which is the order single-object encoding wants.
        self.header = b"\xc3\x01" + bytes.fromhex(fingerprint(pcf, "CRC-64-AVRO"))

    def encode(self, payload, confluent_id=None):
        """payload: ("mooncake.Submit", {"task": ...}) or ("mooncake.Cancel", {...})."""
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, self.schema, {"payload": payload})
        if confluent_id is None:
            return self.header + buf.getvalue()
        return b"\x00" + struct.pack(">i", confluent_id) + buf.getvalue()


def now_ms():
    return int(time.time() * 1000)


LATE_ACTIONS = ("RUN", "DROP", "DEAD")


def _bytes(v):
    return v if v is None or isinstance(v, bytes) else str(v).encode()


def task(app_id, url, due_at_ms, task_id=None, method="POST", headers=None, body=b"",
         timeout_ms=30000, retry=None, metadata=None, *, kafka_topic=None, kafka_key=None,
         kafka_value=..., kafka_headers=None, late_ms=None, late_action=None):
    """A mooncake.Task as fastavro wants it. retry: None (mooncake's defaults) or
    {"max_attempts", "initial_backoff_ms", "multiplier", "max_backoff_ms"}.

    kafka_topic: deliver a record to this topic at the due time instead of calling
    url (pass url None or ""): key kafka_key, value kafka_value (default: body if
    not empty, else None, a tombstone), headers kafka_headers (name to value);
    str is encoded as UTF-8. The callback is then the empty one the contract asks
    for, so method, headers and timeout_ms must be left at their defaults.
    late_ms / late_action ("RUN", "DROP" or "DEAD"): the late policy, both or
    neither. A bad combination raises ValueError naming the argument."""
    body = _bytes(body)
    if kafka_topic is not None:
        if url:
            raise ValueError("url and kafka_topic are both set: a task either calls or delivers")
        if not kafka_topic:
            raise ValueError("kafka_topic is empty")
        if method != "POST" or headers or timeout_ms != 30000:
            raise ValueError("method, headers and timeout_ms are for a URL, not a kafka_topic "
                             "(record headers: kafka_headers)")
        if kafka_value is ...:
            kafka_value = body or None
        target = {"topic": kafka_topic, "key": _bytes(kafka_key), "value": _bytes(kafka_value),
                  "headers": dict(kafka_headers or {})}
        callback = {"url": "", "method": "POST", "headers": {}, "body": b"", "timeout_ms": 0}
    else:
        if kafka_key is not None or kafka_value is not ... or kafka_headers:
            raise ValueError("kafka_key, kafka_value and kafka_headers need kafka_topic")
        if not url:
            raise ValueError("one of url and kafka_topic is needed")
        target = None
        callback = {"url": url, "method": method, "headers": dict(headers or {}),
                    "body": body, "timeout_ms": timeout_ms}
    if (late_ms is None) != (late_action is None):
        raise ValueError("late_ms and late_action go together")
    late = None
    if late_ms is not None:
        if late_action not in LATE_ACTIONS:
            raise ValueError(f"late_action {late_action!r}: expected RUN, DROP or DEAD")
        if late_ms < 0:
            raise ValueError(f"late_ms {late_ms} is negative")
        late = {"max_late_ms": late_ms, "action": late_action}
    return {
        "app_id": app_id,
        "task_id": task_id or str(uuid.uuid4()),
        "due_at": due_at_ms,
        "callback": callback,
        "retry": retry,
        "attempt": 1,
        "created_at": now_ms(),
        "metadata": dict(metadata or {}),
        "kafka_target": target,
        "late_policy": late,
        "on_success": [],
    }


class Client:
    """One idempotent producer; submit() and cancel() wait for the broker's
    acknowledgement and return (key, partition, offset)."""

    def __init__(self, bootstrap, topic_prefix="mooncake.", kafka_config=None,
                 schema_path=DEFAULT_SCHEMA, confluent_id=None):
        conf = {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,  # a retried send is never a second command
            "acks": "all",
            "partitioner": "murmur2_random",  # where the router expects each key
            "linger.ms": 5,
            "message.timeout.ms": 30000,  # then send() raises, rather than waiting 5 min
        }
        conf.update(kafka_config or {})
        self.producer = Producer(conf)
        self.topic = topic_prefix + "tasks"
        self.codec = Codec(schema_path)
        self.confluent_id = confluent_id

    def send(self, key, value):
        """Produces one record and waits for its delivery report."""
        result = {}

        def delivered(err, msg):
            result["err"], result["msg"] = err, msg

        self.producer.produce(self.topic, key=key.encode(), value=value, on_delivery=delivered)
        while "err" not in result:
            self.producer.poll(0.1)
        err = result["err"]
        if err is not None:
            if err.code() == KafkaError._MSG_TIMED_OUT and self.topic_missing():
                # librdkafka only says "Message timed out"; name the likelier cause.
                err = KafkaError(err.code(), f"topic {self.topic} does not exist (a wrong "
                                 "--topic-prefix, or mooncake's topics not created yet)")
            raise KafkaException(err)
        return key, result["msg"].partition(), result["msg"].offset()

    def topic_missing(self):
        """True if the broker answers that the tasks topic does not exist."""
        try:
            t = self.producer.list_topics(self.topic, timeout=5).topics.get(self.topic)
        except KafkaException:
            return False  # no broker answer: the timeout itself is the news
        return t is not None and t.error is not None and \
            t.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART

    def submit(self, t):
        return self.send(f"{t['app_id']}/{t['task_id']}",
                         self.codec.encode(("mooncake.Submit", {"task": t}), self.confluent_id))

    def cancel(self, app_id, task_id):
        cancel = {"app_id": app_id, "task_id": task_id, "requested_at": now_ms()}
        return self.send(f"{app_id}/{task_id}",
                         self.codec.encode(("mooncake.Cancel", cancel), self.confluent_id))

    def close(self):
        self.producer.flush(10)


def kv(text, sep, what):
    if sep not in text or text.startswith(sep):
        raise argparse.ArgumentTypeError(f"{what} '{text}': expected name{sep}value")
    k, v = text.split(sep, 1)
    return k.strip(), v.strip() if sep == ":" else v


def why(e):
    """The human part of an error: librdkafka's text without the KafkaError{...} wrapping."""
    err = e.args[0] if e.args else e
    return err.str() if hasattr(err, "str") else str(err)


def retry_policy(text):
    """--retry 5:1000:2:60000, the four fields of mooncake.RetryPolicy in order."""
    parts = text.split(":")
    try:
        if len(parts) != 4:
            raise ValueError
        return {"max_attempts": int(parts[0]), "initial_backoff_ms": int(parts[1]),
                "multiplier": float(parts[2]), "max_backoff_ms": int(parts[3])}
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--retry '{text}': expected MAX_ATTEMPTS:INITIAL_BACKOFF_MS:MULTIPLIER:MAX_BACKOFF_MS")


def main(argv=None):
    ap = argparse.ArgumentParser(description="Submit or cancel a mooncake task through Kafka.")
    ap.add_argument("command", choices=["submit", "cancel"])
    ap.add_argument("-b", "--bootstrap-servers", default="localhost:9092")
    ap.add_argument("--topic-prefix", default="mooncake.")
    ap.add_argument("--app", required=True, help="application id (no '/')")
    ap.add_argument("--task-id", help="task id (submit: default a new UUID; cancel: required)")
    does = ap.add_mutually_exclusive_group()
    does.add_argument("--url", help="submit: the callback URL (http or https)")
    does.add_argument("--kafka-topic", metavar="TOPIC",
                      help="submit: deliver a record to TOPIC at the due time instead of "
                           "calling a URL (mooncake's --target-topics must allow it)")
    ap.add_argument("--kafka-key", metavar="KEY", help="submit: the record's key (default none)")
    ap.add_argument("--kafka-value", metavar="VALUE",
                    help="submit: the record's value (default: --body if given, else null)")
    ap.add_argument("--kafka-header", action="append", default=[], metavar="NAME=VALUE",
                    type=lambda s: kv(s, "=", "--kafka-header"),
                    help="submit: a header of the record (repeatable)")
    ap.add_argument("--method", help="submit: the HTTP method (default POST)")
    when = ap.add_mutually_exclusive_group()
    when.add_argument("--delay-ms", type=int, help="submit: due this many ms from now")
    when.add_argument("--due-at-ms", type=int, help="submit: due at this epoch ms")
    ap.add_argument("--body", help="submit: the request body (with --kafka-topic: the "
                    "default --kafka-value)")
    ap.add_argument("--header", action="append", default=[], metavar="NAME:VALUE",
                    type=lambda s: kv(s, ":", "--header"))
    ap.add_argument("--timeout-ms", type=int, help="submit: HTTP timeout (default 30000)")
    ap.add_argument("--retry", type=retry_policy, metavar="N:INITIAL_MS:MULTIPLIER:MAX_MS",
                    help="submit: retry policy (default: mooncake's configured one)")
    ap.add_argument("--late-ms", type=int, metavar="N",
                    help="submit: lateness allowed after the due time (with --late-action)")
    ap.add_argument("--late-action", type=str.upper, choices=LATE_ACTIONS,
                    help="submit: past --late-ms, RUN anyway, DROP (a Result DROPPED) or "
                         "DEAD (dead-letter)")
    ap.add_argument("--confluent-schema-id", type=int,
                    help="frame as Confluent (00 + id) instead of single-object encoding")
    ap.add_argument("--schema", default=DEFAULT_SCHEMA, help="path of Command.avsc")
    ap.add_argument("-X", action="append", default=[], metavar="KEY=VALUE", dest="kafka",
                    type=lambda s: kv(s, "=", "-X"), help="librdkafka property")
    a = ap.parse_args(argv)
    if "/" in a.app:
        ap.error("--app must not contain '/': the key is app_id/task_id")
    if a.command == "submit":
        if not a.url and not a.kafka_topic:
            ap.error("submit needs --url or --kafka-topic")
        if a.kafka_topic:
            for flag, v in (("--method", a.method), ("--header", a.header),
                            ("--timeout-ms", a.timeout_ms)):
                if v is not None and v != []:
                    ap.error(f"{flag} is for --url; with --kafka-topic, see --kafka-header")
        else:
            for flag, v in (("--kafka-key", a.kafka_key), ("--kafka-value", a.kafka_value),
                            ("--kafka-header", a.kafka_header)):
                if v is not None and v != []:
                    ap.error(f"{flag} needs --kafka-topic")
        if (a.late_ms is None) != (a.late_action is None):
            ap.error("--late-ms and --late-action go together" +
                     (": --late-action missing" if a.late_action is None
                      else ": --late-ms missing"))
        if a.late_ms is not None and a.late_ms < 0:
            ap.error(f"--late-ms {a.late_ms}: must not be negative")
        if a.delay_ms is None and a.due_at_ms is None:
            ap.error("submit needs --delay-ms or --due-at-ms")
    elif not a.task_id:
        ap.error("cancel needs --task-id")

    try:
        # A bad -X property or an unreadable schema fails here, before any send.
        client = Client(a.bootstrap_servers, a.topic_prefix, dict(a.kafka), a.schema,
                        a.confluent_schema_id)
    except (KafkaException, OSError, ValueError) as e:
        print(f"mooncake_client: {why(e)}", file=sys.stderr)
        return 2
    try:
        if a.command == "submit":
            due = a.due_at_ms if a.due_at_ms is not None else now_ms() + a.delay_ms
            if a.kafka_topic:
                value = a.kafka_value if a.kafka_value is not None else a.body
                t = task(a.app, None, due, a.task_id, retry=a.retry, kafka_topic=a.kafka_topic,
                         kafka_key=a.kafka_key, kafka_value=value,
                         kafka_headers=dict(a.kafka_header), late_ms=a.late_ms,
                         late_action=a.late_action)
            else:
                t = task(a.app, a.url, due, a.task_id, (a.method or "POST").upper(),
                         dict(a.header), a.body or "",
                         30000 if a.timeout_ms is None else a.timeout_ms, a.retry,
                         late_ms=a.late_ms, late_action=a.late_action)
            key, part, off = client.submit(t)
        else:
            key, part, off = client.cancel(a.app, a.task_id)
    except (KafkaException, BufferError, ValueError) as e:
        # KafkaException: the delivery report's error (broker unreachable within
        # message.timeout.ms, topic missing, not authorized); ValueError: a value
        # the schema refuses (fastavro names the field).
        print(f"mooncake_client: {a.command} failed: {why(e)}", file=sys.stderr)
        return 1
    finally:
        client.close()
    when = f" due_at={due}" if a.command == "submit" else ""
    print(f"{a.command} {key} partition={part} offset={off}{when}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
