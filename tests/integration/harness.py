"""Shared helpers for integration tests against the real Kafka broker that
tools/kafka-local starts for the suite.

Records are encoded and decoded with fastavro from schemas/*.avsc, an Avro
implementation independent of ours, so these tests also prove that what a
Python client writes is what mooncake reads, and the other way round.
Every test uses its own topic prefix, so tests never see each other's data.
"""
import http.server
import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid

import fastavro
import fastavro.schema
from confluent_kafka import Consumer, Producer, TopicPartition

SOURCE_DIR = os.environ.get(
    "MOONCAKE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "lib"))
from sanitizer_reports import failing_reports  # noqa: E402
BOOTSTRAP = os.environ.get("MOONCAKE_TEST_BOOTSTRAP", "127.0.0.1:9092")
MOONCAKE_BIN = os.environ.get("MOONCAKE_BIN", "mooncake")


def load_schema(name):
    """(parsed, single-object header) of schemas/<name>.avsc (name may be
    previous/<Record>_v<N>, an earlier version still read)."""
    path = os.path.join(SOURCE_DIR, "schemas", name + ".avsc")
    with open(path) as f:
        text = f.read()
    parsed = fastavro.parse_schema(json.loads(text))
    pcf = fastavro.schema.to_parsing_canonical_form(json.loads(text))
    # fastavro prints the CRC-64-AVRO fingerprint in wire (little-endian) order.
    header = b"\xc3\x01" + bytes.fromhex(fastavro.schema.fingerprint(pcf, "CRC-64-AVRO"))
    return parsed, header


SCHEMAS = {n: load_schema(n) for n in
           ("Command", "WheelEntry", "StoredTask", "DeadLetter", "Attempt", "Result",
            "JobCommand", "JobState", "Endpoint")}


def encode(schema_name, record, version=None):
    """A record framed as mooncake writes it; version=N writes the earlier
    version N kept in schemas/previous/."""
    parsed, header = PREVIOUS[(schema_name, version)] if version else SCHEMAS[schema_name]
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, parsed, record)
    return header + buf.getvalue()


# The earlier versions mooncake still reads and may write (--record-version).
PREVIOUS = {(f.split("_v")[0], int(f.split("_v")[1][:-5])):
            load_schema(os.path.join("previous", f[:-5]))
            for f in os.listdir(os.path.join(SOURCE_DIR, "schemas", "previous"))
            if f.endswith(".avsc")}


def decode(schema_name, data):
    """A record of schema_name, read into the current version; one written
    with an earlier version gets the fields added since from their defaults."""
    parsed, header = SCHEMAS[schema_name]
    writer = parsed
    older = [w for (n, _), (w, h) in PREVIOUS.items() if n == schema_name and h == data[:10]]
    if data[:10] != header and older:
        writer = older[0]
    else:
        assert data[:10] == header, f"{schema_name}: bad single-object header {data[:10].hex()}"
    # return_record_name: a union of records comes back as (name, value).
    return fastavro.schemaless_reader(io.BytesIO(data[10:]), writer, parsed,
                                      return_record_name=True)


def ms(v):
    """Epoch ms from a decoded timestamp-millis (fastavro gives a datetime)."""
    return v if isinstance(v, int) else round(v.timestamp() * 1000)


def now_ms():
    return int(time.time() * 1000)


def task(app, tid, due_at, url="http://example.com/hook", method="POST", **extra):
    t = {
        "app_id": app, "task_id": tid, "due_at": due_at,
        "callback": {"url": url, "method": method, "headers": {"x-test": "1"},
                     "body": b'{"order": 42}', "timeout_ms": 5000},
        "retry": None, "attempt": 1, "created_at": now_ms(), "metadata": {},
    }
    t.update(extra)
    return t


def submit_value(t):
    return encode("Command", {"payload": ("mooncake.Submit", {"task": t})})


def cancel_value(app, tid):
    return encode("Command", {"payload": ("mooncake.Cancel", {
        "app_id": app, "task_id": tid, "requested_at": now_ms()})})


def murmur2(data):
    """Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2), written
    out here so the tests check mooncake against the Java algorithm, not
    against librdkafka's copy of it."""
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
    """The partition of `tasks` a key belongs to: what the Java client's
    default partitioner picks, and where mooncake's router routes it from."""
    if isinstance(key, str):
        key = key.encode()
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Env:
    """A fresh topic prefix plus helpers to produce to and read from it."""

    TOPICS = ("tasks", "store", "wheel", "ready", "retry", "results", "dead", "views", "layout",
              "endpoints")
    # Topics whose partition count is fixed, whatever the set's.
    SINGLE_PARTITION = ("layout", "endpoints")

    def __init__(self, partitions=3, create_topics=True, topic_config=None):
        self.prefix = "t%s." % uuid.uuid4().hex[:10]
        self.partitions = partitions
        self.procs = []
        self.producer = Producer({"bootstrap.servers": BOOTSTRAP, "linger.ms": 5,
                                  "partitioner": "murmur2_random",  # as the router expects
                                  "enable.idempotence": True})
        if create_topics:
            self.create_topics(topic_config or {})

    def create_topics(self, topic_config):
        """Creates the topic set; topic_config maps a suffix to extra configs."""
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
        fs = admin.create_topics([
            NewTopic(self.topic(t),
                     num_partitions=1 if t in self.SINGLE_PARTITION else self.partitions,
                     replication_factor=1,
                     config={"cleanup.policy": "compact" if t in ("store", "views", "layout",
                                                                   "endpoints")
                                                       else "delete",
                             **topic_config.get(t, {})})
            for t in self.TOPICS])
        for f in fs.values():
            f.result()

    def topic(self, suffix):
        return self.prefix + suffix

    def env(self, **extra):
        e = dict(os.environ)
        e.update({
            "MOONCAKE_BOOTSTRAP_SERVERS": BOOTSTRAP,
            "MOONCAKE_TOPIC_PREFIX": self.prefix,
            "MOONCAKE_PARTITIONS": str(self.partitions),
            "MOONCAKE_COMMIT_INTERVAL_MS": "50",
        })
        e.update({k: str(v) for k, v in extra.items()})
        return e

    def start(self, role, *args, instance="i0", wait_ready=True, **env):
        port = free_port()
        log = open(os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                f"{self.prefix}{role}-{instance}-{port}.log"), "wb")
        p = subprocess.Popen(
            [MOONCAKE_BIN, role, "--http-port", str(port), "--instance-id", instance, *args],
            env=self.env(**env), stdout=log, stderr=subprocess.STDOUT)
        p.http_port = port
        p.log_path = log.name
        self.procs.append(p)
        if wait_ready:
            self.wait_ready(p)
        return p

    def wait_ready(self, p, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if p.poll() is not None:
                raise AssertionError(f"process exited with {p.returncode}:\n{self.log(p)}")
            try:
                with urllib.request.urlopen(
                        f"http://127.0.0.1:{p.http_port}/readyz", timeout=2) as r:
                    if r.status == 200:
                        return
            except Exception:
                pass
            time.sleep(0.1)
        raise AssertionError(f"not ready after {timeout}s:\n{self.log(p)}")

    def metrics(self, p):
        with urllib.request.urlopen(f"http://127.0.0.1:{p.http_port}/metrics", timeout=5) as r:
            return r.read().decode()

    def log(self, p, tail=4000):
        with open(p.log_path, "rb") as f:
            text = f.read().decode(errors="replace")
        return text[-tail:] if tail else text

    def produce(self, suffix, key, value, partition=None):
        kw = {} if partition is None else {"partition": partition}
        self.producer.produce(self.topic(suffix), key=key, value=value, **kw)

    def flush(self):
        left = self.producer.flush(30)
        assert left == 0, f"{left} messages not delivered"

    def read_all(self, suffix, expect=None, timeout=30, idle=2.0, committed_only=True):
        """Reads the topic from the beginning. Stops when `expect` records have
        arrived (and nothing more for a short while), or after `idle` seconds
        without a record once past the high watermarks, or at the timeout."""
        c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "reader-" + uuid.uuid4().hex,
                      "auto.offset.reset": "earliest", "enable.auto.commit": False,
                      "isolation.level": "read_committed" if committed_only else
                      "read_uncommitted"})
        c.assign([TopicPartition(self.topic(suffix), p, 0) for p in range(self.partitions)])
        out = []
        deadline = time.time() + timeout
        last = time.time()
        try:
            while time.time() < deadline:
                m = c.poll(0.2)
                if m is None:
                    if expect is None and time.time() - last > idle:
                        break
                    if expect is not None and len(out) >= expect and time.time() - last > 0.5:
                        break
                    continue
                if m.error():
                    continue
                out.append(m)
                last = time.time()
        finally:
            c.close()
        return out

    def stop_all(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        # Under an ASan/UBSan build a report in any process fails the test,
        # whatever that process's exit code was; librdkafka's own leak at the exit
        # of a process stopped by a fatal send_offsets_to_transaction (a fenced
        # zombie's) is said and left out, as the chaos run's judge does.
        for p in self.procs:
            text = self.log(p, tail=None) if os.path.exists(p.log_path) else ""
            failing, excused = failing_reports(text)
            if excused:
                print(f"     {os.path.basename(p.log_path)}: librdkafka's leak at a fatal "
                      "exit, left out", flush=True)
            assert not failing, f"sanitizer report in {p.log_path}:\n{text}"


class CallbackServer:
    """A local HTTP endpoint for mooncake to call (127.0.0.1, a free port).

    Records every request as a dict: method, path, headers (lower-case name
    to value), header_list (every (name, value) as received), body, at (epoch
    ms when the request line and headers had arrived), peer (the caller's TCP
    port, which tells its connection, and so its process, apart), nth (1 for the first
    request to that path), responded_at (epoch ms just before the answer
    was sent; None until then). respond(call) says what to answer: (status, headers, body) or
    (status, headers, body, delay_seconds); the default is 200 "ok"."""

    def __init__(self, respond=None):
        self.calls = []
        self.lock = threading.Lock()
        self.respond = respond or (lambda call: (200, {}, b"ok"))
        self._per_path = {}
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as mooncake's client expects
            disable_nagle_algorithm = True  # headers and body go out as two writes

            def log_message(self, *args):
                pass

            def handle_call(self):
                at = time.time() * 1000
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                call = {"method": self.command, "path": self.path, "at": at, "body": body,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "header_list": [(k.lower(), v) for k, v in self.headers.items()],
                        "responded_at": None, "peer": self.client_address[1]}
                with owner.lock:
                    call["nth"] = owner._per_path[self.path] = owner._per_path.get(self.path, 0) + 1
                    owner.calls.append(call)
                answer = owner.respond(call)
                status, headers, out = answer[:3]
                if len(answer) > 3 and answer[3]:
                    time.sleep(answer[3])
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(out)))
                    call["responded_at"] = time.time() * 1000
                    self.end_headers()
                    if self.command != "HEAD" and out:
                        self.wfile.write(out)
                except OSError:  # the caller gave up (a timeout, a killed executor)
                    self.close_connection = True

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = handle_call

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False
            request_queue_size = 512

            def handle_error(self, request, client_address):
                if not isinstance(sys.exc_info()[1], OSError):  # a caller killed, or gone
                    super().handle_error(request, client_address)

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       daemon=True)
        self.thread.start()

    def url(self, path, host="127.0.0.1"):
        return f"http://{host}:{self.port}{path}"

    def calls_to(self, path):
        with self.lock:
            return [c for c in self.calls if c["path"] == path]

    def snapshot(self):
        with self.lock:
            return list(self.calls)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def run(tests):
    """Runs test functions in order; prints one line each and a summary."""
    failed = 0
    for t in tests:
        t0 = time.time()
        try:
            t()
            print(f"ok   {t.__name__} ({time.time() - t0:.1f}s)", flush=True)
        except Exception:
            failed += 1
            import traceback
            print(f"FAIL {t.__name__} ({time.time() - t0:.1f}s)", flush=True)
            traceback.print_exc()
    print(f"{len(tests) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


def picked(tests, wanted):
    """The tests a script's command line names, in the command line's order: a full
    name picks that test, any other word every test whose name contains it (in the
    order of tests); no word picks them all."""
    if not wanted:
        return list(tests)
    names = {t.__name__ for t in tests}
    out = []
    for w in wanted:
        out += [t for t in tests if t not in out and
                (t.__name__ == w if w in names else w in t.__name__)]
    assert out, f"no test matches {wanted}: {[t.__name__ for t in tests]}"
    return out


def run_side_by_side(phases, env=None):
    """Runs tests that mostly wait (for due times, sessions, restarts) side by side, so
    that their waits overlap. phases run one after another; a phase is a list of lanes
    that run at the same time; a lane is a list of tests run in order, in a process of
    its own: this script again, with the lane's test names as arguments (its __main__
    must run just the tests its command line names, see picked()). Each test still has
    its own topic prefix, processes, ports and endpoint, and the lanes share nothing
    but the broker. Each lane's lines are printed as they come, tagged with the lane
    ("2b|" is phase 2, lane b); env adds to the lanes' environment (a seed, so that
    every lane draws from the same one). Ends like run(): a summary, exit 1 if a test
    failed (or a lane ended without saying how one of its tests went)."""
    script = os.path.abspath(sys.argv[0])
    lane_env = {**os.environ, "PYTHONUNBUFFERED": "1",
                **{k: str(v) for k, v in (env or {}).items()}}
    lock = threading.Lock()
    total = [0, 0]  # passed, failed
    t0 = time.time()

    def follow(tag, lane, p):
        said = {"ok": 0, "FAIL": 0}
        for raw in p.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            with lock:
                if line.startswith(("ok   ", "FAIL ")):
                    said[line.split()[0]] += 1
                print(f"{tag}| {line}", flush=True)
        p.wait()
        with lock:
            total[0] += said["ok"]
            total[1] += said["FAIL"]
            # A lane that stopped early, or exited with an error after its tests (as a
            # whole script would have, failing its ctest), counts as a failure.
            lost = len(lane) - said["ok"] - said["FAIL"]
            if lost > 0 or (p.returncode and not said["FAIL"]):
                total[1] += max(lost, 1)
                print(f"{tag}| lane exited {p.returncode} after {len(lane) - lost} of its "
                      f"{len(lane)} tests: counted as {max(lost, 1)} failed", flush=True)

    for n, lanes in enumerate(phases, 1):
        started = time.time()
        running = []
        try:
            for i, lane in enumerate(lanes):
                tag = f"{n}{chr(ord('a') + i)}"
                p = subprocess.Popen([sys.executable, script, *[t.__name__ for t in lane]],
                                     env=lane_env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
                th = threading.Thread(target=follow, args=(tag, lane, p), daemon=True)
                th.start()
                running.append((p, th))
                with lock:
                    print(f"{tag}| lane of {len(lane)}: "
                          f"{', '.join(t.__name__ for t in lane)}", flush=True)
            for _, th in running:
                th.join()
        finally:
            # Interrupted: each lane stops its own processes on the way out.
            for p, _ in running:
                if p.poll() is None:
                    p.send_signal(signal.SIGINT)
        print(f"phase {n} of {len(phases)} ({len(lanes)} lane{'s' * (len(lanes) > 1)}): "
              f"{time.time() - started:.1f}s", flush=True)
    print(f"{total[0]} passed, {total[1]} failed ({time.time() - t0:.1f}s)")
    sys.exit(1 if total[1] else 0)
