#!/usr/bin/env python3
"""Submit and cancel mooncake tasks by producing Avro Commands straight to Kafka,
with confluent-kafka and fastavro: the client contract of README.md ("Submitting
tasks straight to Kafka") in one file, usable as a program or as a module.

    mooncake_client.py submit -b kafka:9092 --app shop --url https://x/hook --delay-ms 60000
    mooncake_client.py cancel -b kafka:9092 --app shop --task-id 0193...

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


def task(app_id, url, due_at_ms, task_id=None, method="POST", headers=None, body=b"",
         timeout_ms=30000, retry=None, metadata=None):
    """A mooncake.Task as fastavro wants it. retry: None (mooncake's defaults) or
    {"max_attempts", "initial_backoff_ms", "multiplier", "max_backoff_ms"}."""
    return {
        "app_id": app_id,
        "task_id": task_id or str(uuid.uuid4()),
        "due_at": due_at_ms,
        "callback": {"url": url, "method": method, "headers": dict(headers or {}),
                     "body": body if isinstance(body, bytes) else body.encode(),
                     "timeout_ms": timeout_ms},
        "retry": retry,
        "attempt": 1,
        "created_at": now_ms(),
        "metadata": dict(metadata or {}),
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
    ap.add_argument("--url", help="submit: the callback URL (http or https)")
    ap.add_argument("--method", default="POST")
    when = ap.add_mutually_exclusive_group()
    when.add_argument("--delay-ms", type=int, help="submit: due this many ms from now")
    when.add_argument("--due-at-ms", type=int, help="submit: due at this epoch ms")
    ap.add_argument("--body", default="", help="submit: the request body")
    ap.add_argument("--header", action="append", default=[], metavar="NAME:VALUE",
                    type=lambda s: kv(s, ":", "--header"))
    ap.add_argument("--timeout-ms", type=int, default=30000)
    ap.add_argument("--retry", type=retry_policy, metavar="N:INITIAL_MS:MULTIPLIER:MAX_MS",
                    help="submit: retry policy (default: mooncake's configured one)")
    ap.add_argument("--confluent-schema-id", type=int,
                    help="frame as Confluent (00 + id) instead of single-object encoding")
    ap.add_argument("--schema", default=DEFAULT_SCHEMA, help="path of Command.avsc")
    ap.add_argument("-X", action="append", default=[], metavar="KEY=VALUE", dest="kafka",
                    type=lambda s: kv(s, "=", "-X"), help="librdkafka property")
    a = ap.parse_args(argv)
    if "/" in a.app:
        ap.error("--app must not contain '/': the key is app_id/task_id")
    if a.command == "submit":
        if not a.url:
            ap.error("submit needs --url")
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
            key, part, off = client.submit(task(a.app, a.url, due, a.task_id, a.method.upper(),
                                                dict(a.header), a.body, a.timeout_ms, a.retry))
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
