"""The HTTP endpoint the tasks call (a child process of the harness: `chaos _endpoint`):
its paths say what it answers, and it logs every call, the alarm webhook's bodies and
how far its loop fell behind, for the verdict."""

import argparse
import asyncio
import json
import signal
import time

# ---- callback URLs: what the endpoint answers, and which Submit scheduled the call -------
#
#   /fast/<task>/<sid>                 200 at once
#   /slow/<delay_ms>/<task>/<sid>      200 after delay_ms (the first attempt only)
#   /fail/<n>/<delay_ms>/<task>/<sid>  500 after delay_ms for attempts 1..n, then 200
#   /gone/<task>/<sid>                 404 (a permanent failure)
#   /lim/<delay_ms>/<task>/<sid>       200 after delay_ms, every attempt: a fast call made
#                                      through the host name localhost, which an admission
#                                      limit bounds (open long enough for its concurrency
#                                      bound to matter)
#   /job/<job>/<sid>                   200 at once: a recurring job's occurrences (sid names
#                                      the job's definition: its PutJob)
#   /alarm/<app>                       200 at once: the app's alarm webhook (--alarm-webhooks);
#                                      the endpoint also logs each alarm call's body
# The endpoint decides from the path and the attempt in the Idempotency-Key, never from
# what it saw before, so a repeated call gets the same answer.

def callback_path(kind, task_id, sid, *params):
    return "/" + "/".join([kind, *(str(p) for p in params), task_id, str(sid)])


def path_kind_sid(path):
    """(kind, sid) of a callback path or URL; (None, None) if not ours; ("alarm", None)
    for an alarm webhook."""
    if "://" in path:
        path = "/" + path.split("://", 1)[1].split("/", 1)[-1]
    parts = path.split("?", 1)[0].split("/")
    if len(parts) > 2 and parts[1] == "alarm":
        return "alarm", None
    try:
        return parts[1], int(parts[-1])
    except (IndexError, ValueError):
        return None, None


def endpoint_answer(path, attempt):
    """(status, delay in ms) for a request."""
    parts = path.split("/")
    kind = parts[1] if len(parts) > 1 else ""
    try:
        if kind in ("fast", "job", "alarm"):
            return 200, 0
        if kind == "lim":
            return 200, int(parts[2])
        if kind == "slow":
            return 200, int(parts[2]) if attempt <= 1 else 0
        if kind == "fail":
            n, delay = int(parts[2]), int(parts[3])
            return (500, delay) if attempt <= n else (200, 0)
    except (IndexError, ValueError):
        pass
    return 404, 0


RESPONSES = {
    200: b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok",
    404: b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\ngone",
    500: b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\n"
         b"Content-Length: 4\r\n\r\nfail",
}


TICK_MS = 5  # the endpoint's loop-lag ticker
# The most the verdict allows for the endpoint's lag: the longest burst seen logging
# (640 calls in 107 ms) with room; a repeat that needs more stays unexpected.
MAX_LAG_ALLOWANCE_MS = 150
# Lags up to this are not logged: the verdict cannot tell them from 0, so it allows
# this much whatever the log says (a call started during a long abort is still late by
# far more).
LAG_LOG_MIN_MS = 2


def child_endpoint(argv):
    """The HTTP endpoint the tasks call: an asyncio HTTP/1.1 server (keep-alive, as
    mooncake's client uses it) on three ports, fast, slow and fail, so slow and failing
    calls never hold the fast path's connections (the executor limits connections per
    host and port). Logs every request as a line: arrival ms, path, Idempotency-Key,
    status answered, delay ms, the port's name (fast, slow, fail), a broadcast shard's
    request headers mooncake-shard-index and mooncake-shard-total (empty for other
    calls) and webhook-id; and each call of an alarm webhook (/alarm/...) as a JSON
    line to --alarm-log, with its method, headers the verdict reads and body. Prints
    "ready fast=P slow=P fail=P" when listening."""
    ap = argparse.ArgumentParser(prog="chaos _endpoint")
    ap.add_argument("--log", required=True)
    ap.add_argument("--lag-log", required=True)
    ap.add_argument("--alarm-log", required=True)
    a = ap.parse_args(argv)
    log = open(a.log, "w", buffering=1 << 20)
    lag_log = open(a.lag_log, "w", buffering=1 << 16)
    alarm_log = open(a.alarm_log, "w", buffering=1 << 16)

    class Conn(asyncio.Protocol):
        def __init__(self, server):
            self.server = server  # the port's name: which member of a group was called

        def connection_made(self, transport):
            self.tr = transport
            self.buf = bytearray()
            self.busy = False  # an answer is pending (no pipelining: answers in order)
            self.close_after = False

        def data_received(self, data):
            self.buf += data
            self.serve()

        def serve(self):
            while not self.busy:
                end = self.buf.find(b"\r\n\r\n")
                if end < 0:
                    return
                head = self.buf[:end].decode("latin-1").split("\r\n")
                length, ikey, close, headers = 0, "", False, {}
                for line in head[1:]:
                    name, _, value = line.partition(":")
                    name = name.strip().lower()
                    headers[name] = value.strip()
                    if name == "content-length":
                        length = int(value)
                    elif name == "idempotency-key":
                        ikey = value.strip()
                    elif name == "connection" and value.strip().lower() == "close":
                        close = True
                if len(self.buf) < end + 4 + length:
                    return
                body = bytes(self.buf[end + 4:end + 4 + length])
                del self.buf[:end + 4 + length]
                at = time.time() * 1000
                req = head[0].split(" ")
                path = req[1] if len(req) > 1 else "/"
                if path.startswith("/alarm/"):
                    alarm_log.write(json.dumps({
                        "at": round(at, 1), "path": path, "method": req[0], "ikey": ikey,
                        "webhook_id": headers.get("webhook-id", ""),
                        "content_type": headers.get("content-type", ""),
                        "body": body.decode("utf-8", "replace")}) + "\n")
                try:
                    attempt = int(ikey.rsplit(":", 1)[1])
                except (IndexError, ValueError):
                    attempt = 0
                status, delay = endpoint_answer(path, attempt)
                log.write(f"{at:.1f}\t{path}\t{ikey}\t{status}\t{delay}\t{self.server}\t"
                          f"{headers.get('mooncake-shard-index', '')}\t"
                          f"{headers.get('mooncake-shard-total', '')}\t"
                          f"{headers.get('webhook-id', '')}\n")
                self.close_after = close
                if delay:
                    self.busy = True
                    loop.call_later(delay / 1000, self.answer, status)
                else:
                    self.answer(status)

        def answer(self, status):
            self.busy = False
            if self.tr.is_closing():
                return
            self.tr.write(RESPONSES[status])
            if self.close_after:
                self.tr.close()
                return
            self.serve()

    def flush():
        log.flush()
        lag_log.flush()
        alarm_log.flush()
        loop.call_later(0.2, flush)

    def tick(expected):
        # How far behind the loop is: a request is logged when the loop gets to it,
        # which in a burst on a loaded machine is tens of ms after it was sent. The
        # verdict allows a repeat's previous call that much earlier (endpoint_lags).
        # Lateness on the monotonic clock (a wall clock step is not a stall), the
        # stamp on the wall clock (as the calls').
        mono = time.monotonic() * 1000
        if mono - expected > LAG_LOG_MIN_MS:
            lag_log.write(f"{time.time() * 1000:.1f}\t{mono - expected:.1f}\n")
        loop.call_later(TICK_MS / 1000, tick, mono + TICK_MS)

    loop = asyncio.new_event_loop()
    servers = {name: loop.run_until_complete(loop.create_server(
        lambda name=name: Conn(name), "127.0.0.1", 0, backlog=1024, reuse_address=True))
        for name in ("fast", "slow", "fail")}
    stop = loop.create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
    loop.call_later(0.2, flush)
    loop.call_later(TICK_MS / 1000, tick, time.monotonic() * 1000 + TICK_MS)
    print("ready " + " ".join(f"{n}={s.sockets[0].getsockname()[1]}"
                              for n, s in servers.items()), flush=True)
    loop.run_until_complete(stop)
    log.flush()
    log.close()
    lag_log.close()
    alarm_log.close()
