"""What every part of the chaos harness shares: the topics and roles, the failover
settings every role runs with, the clock, printing, small HTTP and file helpers, and the
key's home partition (Kafka's murmur2, as the client contract partitions)."""

import os
import socket
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# The entry point: the helper children run it again (`chaos _owners ...`).
CHAOS = os.path.join(HERE, "chaos")


TOPICS = ("tasks", "store", "wheel", "ready", "retry", "results", "dead", "job-commands", "jobs",
          "alarm-events", "alarms", "endpoints")
# Topics of one partition whatever --partitions says (the compacted endpoint table).
SINGLE_PARTITION_TOPICS = ("endpoints",)
ROLES = ("router", "store", "wheel", "executor", "retry", "jobs", "view", "alarms")
# What each role's processes run: the view answers questions through a gateway of its own.
ROLE_ARGS = {"view": ("gateway,view", "--gateway-no-auth")}
# The view's states that say a task has not been called.
VIEW_PENDING = ("accepted", "pendingStore", "pendingWheel", "cancelRequested")
APP = "chaos"
DEFAULT_PORT = 29392
FORBIDDEN_PORTS = (19092, 29092, 29192)  # other engineers' brokers

# Fast failover, as the kill tests use: a killed instance's partitions move after
# 2 s, and a replacement with a new instance id waits at most 4 s for its
# predecessor's open transaction.
FAILOVER_ENV = {"MOONCAKE_KAFKA_SESSION_TIMEOUT_MS": "2000",
                "MOONCAKE_KAFKA_HEARTBEAT_INTERVAL_MS": "500",
                "MOONCAKE_TRANSACTION_TIMEOUT_MS": "4000"}
SESSION_TIMEOUT_MS = 2000


def now_ms():
    return int(time.time() * 1000)


def say(*a):
    print(*a, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_get(port, path, timeout=2):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""
    except OSError:
        return None, ""


def murmur2(data):
    """Kafka's murmur2 (the Java client's partitioner, librdkafka's murmur2_random)."""
    m, h = 0x5BD1E995, 0x9747B28C ^ len(data)
    n4 = len(data) // 4
    for i in range(n4):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    rest = data[4 * n4:]
    if len(rest) == 3:
        h ^= rest[2] << 16
    if len(rest) >= 2:
        h ^= rest[1] << 8
    if rest:
        h = ((h ^ rest[0]) * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    return h ^ (h >> 15)


def home_partition(key, partitions):
    return (murmur2(key.encode()) & 0x7FFFFFFF) % partitions


def tail(path, n=3000):
    """The last n characters of a file (all of it for n=None)."""
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return ""
    return text if n is None else text[-n:]
