"""Helper processes that watch the cluster while it runs (children of the harness):
who owns which partition (`chaos _owners`), how far the wheel and the store have
committed (`chaos _positions`), when each record of wheel and ready became visible to a
read_committed reader (`chaos _tail`)."""

import json
import re
import signal
import subprocess
import sys
import threading
import time
import uuid

from base import CHAOS, now_ms
from processes import Pids

# ---- who owns which partition ---------------------------------------------------------------

ROLE_INPUT = {"router": "tasks", "store": "wheel", "wheel": "wheel", "executor": "ready",
              "retry": "retry", "jobs": "job-commands", "view": "results",
              "alarms": "alarm-events"}


def child_owners(argv):
    """Prints, twice a second, one JSON line: for each role, which client (client.id =
    role/instance) owns each partition of the role's input topic. A child process of
    its own because librdkafka's admin client has aborted the whole process (an
    assertion) while the broker restarted; main restarts this one instead."""
    bootstrap, prefix = argv[0], argv[1]
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    groups = {prefix + r: r for r in ROLE_INPUT}
    while True:
        snap = {}
        try:
            for group, fut in admin.describe_consumer_groups(
                    list(groups), request_timeout=2).items():
                role = groups[group]
                owners = snap[role] = {}
                for m in fut.result().members:
                    for tp in (m.assignment.topic_partitions if m.assignment else []):
                        if tp.topic == prefix + ROLE_INPUT[role]:
                            owners[str(tp.partition)] = m.client_id
            print(json.dumps(snap), flush=True)
        except Exception:
            pass
        time.sleep(0.5)


def child_positions(argv):
    """Appends to argv[2], five times a second, how far the wheel and the store had
    processed `wheel`: "ms group partition position", the wheel's from its commit
    metadata (v1 o=O: every record below O processed), the store's its committed
    offset. Both are committed every 100 ms or so, so a position is a lower bound of
    what was processed then; the verdict takes the first sample past a record as
    when it had certainly been read."""
    bootstrap, prefix, path = argv[0], argv[1], argv[2]
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    with open(path, "a", buffering=1 << 14) as out:
        while True:
            for role in ("wheel", "store"):
                at = now_ms()
                try:
                    res = admin.list_consumer_group_offsets(
                        [ConsumerGroupTopicPartitions(prefix + role)], request_timeout=2)
                    tps = res[prefix + role].result().topic_partitions
                except Exception:
                    continue
                for tp in tps:
                    # confluent-kafka reads commit metadata as a C string, past its end
                    # (mooncake's is not NUL-terminated: Kafka keeps its length): bytes
                    # that do not decode make the sample worthless; digits that do make
                    # it too high, which the verdict's read_by() leaves out.
                    try:
                        md = tp.metadata or ""
                    except UnicodeDecodeError:
                        continue
                    m = re.match(r"v1 o=(\d+)", md) if role == "wheel" else None
                    pos = int(m.group(1)) if m else tp.offset
                    if pos >= 0:
                        out.write(f"{at}\t{role}\t{tp.partition}\t{pos}\n")
            out.flush()
            time.sleep(0.2)


class Follower:
    """Runs a helper child process and restarts it whenever it exits, until stopped;
    each stdout line goes to on_line."""

    def __init__(self, cmd, on_line=None):
        self.cmd, self.on_line = cmd, on_line
        self.proc = None
        self.stopped = False
        threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self):
        while not self.stopped:
            self.proc = Pids.popen(self.cmd, stdout=subprocess.PIPE, text=True,
                                   stderr=subprocess.DEVNULL)
            for line in self.proc.stdout:
                if self.on_line:
                    self.on_line(line)
            self.proc.wait()
            time.sleep(0.5)

    def stop(self):
        self.stopped = True
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait()


class Owners(Follower):
    """The latest assignment snapshot from child_owners."""

    def __init__(self, bootstrap, prefix):
        self.snap, self.at = {}, 0
        super().__init__([sys.executable, CHAOS, "_owners", bootstrap,
                          prefix], self._take)

    def _take(self, line):
        try:
            self.snap, self.at = json.loads(line), time.time()
        except ValueError:
            pass

    def owner(self, role, partition, max_age=3.0):
        """client.id of the owner of the role's input partition, or None when unknown
        or stale."""
        if time.time() - self.at > max_age:
            return None
        return self.snap.get(role, {}).get(str(partition))

    def assigned(self, role):
        return len(self.snap.get(role, {}))


def child_tail(argv):
    """Follows `wheel` and `ready` with a read_committed consumer and appends, for every
    record, when it became visible: "topic partition offset ms". This is when the wheel
    (or the executor) could first have read it: a cancel that became visible in `wheel`
    before the due time reached the wheel in time. Restarted from the beginning if it
    dies; the verdict takes the first time a record was seen."""
    bootstrap, prefix, partitions, out_path = argv[0], argv[1], int(argv[2]), argv[3]
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "chaos-tail-" + uuid.uuid4().hex,
                  "enable.auto.commit": False, "isolation.level": "read_committed",
                  "fetch.wait.max.ms": 10, "log_level": 0})
    c.assign([TopicPartition(prefix + t, p, 0) for t in ("wheel", "ready")
              for p in range(partitions)])
    cut = len(prefix)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    with open(out_path, "a", buffering=1 << 16) as out:
        last_flush = time.time()
        while not stop:
            first = c.poll(0.05)  # returns at the first record; consume(n, 0) takes the rest
            ms = [first] + c.consume(10000, 0) if first is not None else []
            at = now_ms()
            for m in ms:
                if not m.error():
                    out.write(f"{m.topic()[cut:]}\t{m.partition()}\t{m.offset()}\t{at}\n")
            if time.time() - last_flush > 0.5:
                out.flush()
                last_flush = time.time()
    c.close()
