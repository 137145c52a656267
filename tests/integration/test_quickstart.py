"""The README's quickstart runs to the end: tools/quickstart, as a new user would run it
(its own fresh broker, `mooncake all`, the demo endpoint, tasks submitted through the
gateway), here on free ports and with the suite's mooncake binary instead of a build.
Its checklist must come out all "ok"; then `tools/quickstart stop` stops everything."""
import json
import os
import re
import subprocess
import tempfile
import urllib.request

import harness


def free_pair():
    """A free port whose next port is free too: tools/kafka-local listens on both
    (client, controller)."""
    import socket
    while True:
        a = socket.socket()
        a.bind(("127.0.0.1", 0))
        port = a.getsockname()[1]
        b = socket.socket()
        try:
            b.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
        finally:
            a.close()
            b.close()


def test_quickstart_runs_to_the_end():
    state = tempfile.mkdtemp(prefix="mooncake-qs-")
    kafka = free_pair()
    http, endpoint = harness.free_port(), harness.free_port()
    while {http, endpoint} & {kafka, kafka + 1} or http == endpoint:
        http, endpoint = harness.free_port(), harness.free_port()
    env = dict(os.environ, TMPDIR=state, MOONCAKE_QUICKSTART_BIN=harness.MOONCAKE_BIN,
               MOONCAKE_QUICKSTART_KAFKA_PORT=str(kafka),
               MOONCAKE_QUICKSTART_HTTP_PORT=str(http),
               MOONCAKE_QUICKSTART_ENDPOINT_PORT=str(endpoint))
    script = os.path.join(harness.SOURCE_DIR, "tools", "quickstart")
    try:
        run = subprocess.run([script], env=env, cwd=harness.SOURCE_DIR, capture_output=True,
                             text=True, timeout=300)
        out = run.stdout + run.stderr
        print(out)
        assert run.returncode == 0, f"tools/quickstart exited {run.returncode}"
        checks = re.findall(r"^  (ok  |FAIL)  (\S+)", out, re.M)
        # on time x2, cancelled, retried, refused by the gateway, a recurring job, dead letter,
        # held by the store
        assert len(checks) == 8, f"expected 8 checks, got {checks}"
        assert any(c[1].endswith("-every-2s:") for c in checks), checks
        assert all(c[0] == "ok  " for c in checks), checks
        assert "Submit your own task" in out and "tools/quickstart stop" in out
        # the console it points at is there, and both tokens it names log in
        assert f"http://127.0.0.1:{http}/console/" in out, out
        with urllib.request.urlopen(f"http://127.0.0.1:{http}/console/", timeout=10) as r:
            assert r.status == 200 and b"<script" in r.read()
        for token, admin in (("quickstart-shop-token", False), ("quickstart-admin-token", True)):
            assert token in out
            rq = urllib.request.Request(f"http://127.0.0.1:{http}/api/whoami",
                                        headers={"Authorization": "Bearer " + token})
            with urllib.request.urlopen(rq, timeout=10) as r:
                assert json.load(r)["data"]["admin"] is admin
    finally:
        stop = subprocess.run([script, "stop"], env=env, cwd=harness.SOURCE_DIR,
                              capture_output=True, text=True, timeout=120)
        print(stop.stdout, stop.stderr)
    assert "mooncake stopped" in stop.stdout and "broker stopped" in stop.stdout, stop.stdout
    # After the stop: an ASan build reports leaks at exit.
    log = os.path.join(state, "mooncake-quickstart", "mooncake.log")
    with open(log, errors="replace") as f:
        text = f.read()
    for needle in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
        assert needle not in text, f"sanitizer report in {log}"


if __name__ == "__main__":
    harness.run([test_quickstart_runs_to_the_end])
