#!/usr/bin/env python3
"""A bad flag or setting makes `mooncake <role>` exit 2 at once with one line
naming what to fix - before it tries to reach Kafka (the bootstrap address
here is unreachable, so a role that got that far would hang, not exit 2)."""
import os
import signal
import subprocess
import sys
import time

BIN = os.path.join(os.environ.get("MOONCAKE_BUILD_DIR", "build"), "mooncake")
UNREACHABLE = ["-b", "127.0.0.1:1"]

CASES = [
    (["executor", "--executor-allow-cidrs", "10.0.0.0/33"], {}, "MOONCAKE_EXECUTOR_ALLOW_CIDRS"),
    (["executor", "--executor-allow-cidrs", "10.1.2.3/8"], {}, "10.1.2.3/8"),
    (["executor"], {"MOONCAKE_APP_SECRETS": "shop=not base64!"}, "app 'shop'"),
    (["executor"], {"MOONCAKE_APP_SECRETS": "@/nonexistent/secrets"}, "/nonexistent/secrets"),
    (["executor", "--executor-concurrency", "0"], {}, "--executor-concurrency"),
    (["retry", "--retry-initial-backoff-ms", "5000", "--retry-max-backoff-ms", "10"], {},
     "--retry-*"),
    (["retry", "--retry-multiplier", "abc"], {}, "--retry-multiplier"),
    (["executor", "--no-such-flag"], {}, "unknown flag"),
]


# --check-config: the same checks plus what only a start would find out
# (unknown MOONCAKE_* variables, bad -X properties), and exit 0 when all is
# well - without ever contacting the (unreachable) broker. The Helm chart's
# drift test relies on it.
CHECK_CASES = [
    (["router"], {}, 0, "config ok"),
    (["all", "--gateway-no-auth"], {"MOONCAKE_KAFKA_SECURITY_PROTOCOL": "SASL_SSL"}, 0,
     "config ok"),
    (["router"], {"MOONCAKE_HORIZON": "5000"}, 2, "unknown environment variable MOONCAKE_HORIZON"),
    (["router", "-X", "no.such.property=1"], {}, 2, "no.such.property"),
    (["router"], {"MOONCAKE_KAFKA_NO_SUCH_PROPERTY": "1"}, 2, "no.such.property"),
    (["gateway"], {}, 2, "no tokens"),
    (["gateway", "--http-port", "-1"], {"MOONCAKE_APP_TOKENS": "shop=0123456789abcdef"}, 2,
     "--http-port"),
    (["executor"], {"MOONCAKE_APP_SECRETS": "shop=not base64!"}, 2, "app 'shop'"),
    (["router", "--command-writer-schemas", "/nonexistent/Command-v0.avsc"], {}, 2,
     "/nonexistent/Command-v0.avsc"),
    (["router", "--command-writer-schemas", "x=/nonexistent/Command-v0.avsc"], {}, 2,
     "not a Confluent schema id"),
]


def check_config_cases():
    failed = 0
    for args, env, code, needle in CHECK_CASES:
        e = {k: v for k, v in os.environ.items() if not k.startswith("MOONCAKE_")}
        e.update(env)
        cmd = [BIN, args[0], "--check-config", *args[1:], *UNREACHABLE]
        try:
            p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=10)
        except subprocess.TimeoutExpired:
            print(f"FAIL --check-config {args} {env}: did not exit")
            failed += 1
            continue
        out = (p.stdout + p.stderr).strip()
        if p.returncode != code or needle not in out or len(out.splitlines()) != 1:
            print(f"FAIL --check-config {args} {env}: exit {p.returncode}, output {out!r}; "
                  f"wanted exit {code} and one line with {needle!r}")
            failed += 1
        else:
            print(f"ok   --check-config {' '.join(args)} {env or ''}: {out}")
    return failed


def stop_while_waiting_for_the_broker():
    """SIGTERM while a role waits for an unreachable broker's metadata (up to
    30 s) stops it within a few seconds, exit 0: a pod deleted while Kafka is
    away does not wait out its grace period."""
    failed = 0
    for role, extra in (("router", []), ("all", ["--gateway-no-auth"])):
        e = {k: v for k, v in os.environ.items() if not k.startswith("MOONCAKE_")}
        p = subprocess.Popen([BIN, role, "--http-port", "0", *extra, *UNREACHABLE], env=e,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(1.5)
        t = time.monotonic()
        p.send_signal(signal.SIGTERM)
        try:
            out, _ = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            print(f"FAIL {role}: still waiting 10 s after SIGTERM")
            failed += 1
            continue
        took = time.monotonic() - t
        if p.returncode != 0 or took > 5 or "stopped before it started" not in out:
            print(f"FAIL {role}: exit {p.returncode} {took:.1f} s after SIGTERM; log: {out[-600:]!r}")
            failed += 1
        else:
            print(f"ok   {role} stopped {took:.1f} s after SIGTERM while waiting for the broker")
    return failed


def main():
    failed = check_config_cases()
    failed += stop_while_waiting_for_the_broker()
    for args, env, needle in CASES:
        e = {k: v for k, v in os.environ.items() if not k.startswith("MOONCAKE_")}
        e.update(env)
        try:
            p = subprocess.run([BIN, *args, *UNREACHABLE], env=e, capture_output=True,
                               text=True, timeout=10)
        except subprocess.TimeoutExpired:
            print(f"FAIL {args} {env}: did not exit (it went on to Kafka)")
            failed += 1
            continue
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        if p.returncode != 2 or len(lines) != 1 or needle not in lines[0]:
            print(f"FAIL {args} {env}: exit {p.returncode}, stderr {p.stderr!r}; "
                  f"wanted exit 2 and one line naming {needle!r}")
            failed += 1
        else:
            print(f"ok   {' '.join(args)} {env or ''}: {lines[0]}")
        if "secret" in str(env) and "base64!" in p.stderr:
            print(f"FAIL {args}: the secret was echoed")
            failed += 1
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
