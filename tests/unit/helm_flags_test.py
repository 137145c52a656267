#!/usr/bin/env python3
"""The chart cannot drift from the binary: for every container the chart renders, in
the defaults and every CI value set, the real `mooncake <role> --check-config` runs
with exactly that container's arguments and environment (references to Secrets and
the downward API filled with samples, mounted files written to a temp dir: what the
chart's own Secrets hold, else a sample) and must answer "config ok": an environment
variable the binary does not know, a librdkafka property librdkafka does not know, a
bad token, schema or alarm webhooks file all fail here. A
role-scoped setting (its help begins "executor: ", "jobs and gateway: ", ...) must be
set only on the roles it names: the binary would accept the executor's settings on the
store, and ignore them. The topics Job's mooncakectl flags must be ones
`mooncakectl topics create -h` lists."""
import base64
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chart_tools import (BUILD, Checks, documents, render, role_scoped_env, roles,  # noqa: E402
                         value_sets)

c = Checks()
MOONCAKE = os.path.join(BUILD, "mooncake")
CTL = os.path.join(BUILD, "mooncakectl")
SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()
# What each mounted file holds in a real install, by the variable that points at it.
SAMPLES = {"MOONCAKE_APP_TOKENS": "shop=sample-token-0123456789\n",
           "MOONCAKE_INNER_TOKENS": "sample-inner-token-0123456789\n",
           "MOONCAKE_ADMIN_TOKENS": "sample-admin-token-0123456789\n",
           "MOONCAKE_APP_SECRETS": f"shop={SECRET}\n",
           "MOONCAKE_ALARM_WEBHOOKS": "shop=https://hooks.example.com/alarm\n"}


def containers(docs):
    for d in docs:
        spec = None
        if d["kind"] in ("Deployment", "StatefulSet", "Job"):
            spec = d["spec"]["template"]["spec"]
        elif d["kind"] == "Pod":
            spec = d["spec"]
        for ct in (spec or {}).get("containers", []):
            yield d, ct


def secret_files(d, secrets):
    """Mounted path -> content of the files the pod spec of d mounts from the Secrets
    the chart renders (secrets: name -> stringData); the others are not known here."""
    spec = d["spec"]["template"]["spec"] if "template" in d["spec"] else d["spec"]
    files = {}
    for ct in spec.get("containers", []):
        for m in ct.get("volumeMounts", []):
            vol = next((v for v in spec.get("volumes", []) if v["name"] == m["name"]), {})
            data = secrets.get(vol.get("secret", {}).get("secretName"), {})
            for item in vol.get("secret", {}).get("items", []):
                if item["key"] in data:
                    files[os.path.join(m["mountPath"], item["path"])] = data[item["key"]]
    return files


def environment(ct, configmaps, tmp, files=None):
    """The container's environment as the binary would see it, files made real (the
    rendered content from files, mounted path -> content, else a sample)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    for e in ct.get("env", []):
        if "value" in e:
            value = str(e["value"])
        elif "fieldRef" in e.get("valueFrom", {}):
            value = "ci-pod-0"
        else:
            value = "sample-secret-value"
        if value.startswith("@/"):
            path = os.path.join(tmp, os.path.basename(value[1:]) + "-" + e["name"])
            with open(path, "w") as f:
                f.write((files or {}).get(value[1:]) or SAMPLES.get(e["name"], "x\n"))
            value = "@" + path
        if e["name"] == "MOONCAKE_COMMAND_WRITER_SCHEMAS":
            parts = []
            for item in value.split(","):
                prefix, _, path = item.rpartition("=")
                local = os.path.join(tmp, os.path.basename(path))
                with open(local, "w") as f:
                    f.write(configmaps[os.path.basename(path)])
                parts.append(f"{prefix}={local}" if prefix else local)
            value = ",".join(parts)
        env[e["name"]] = value
    return env


SCOPED = role_scoped_env()
ROLES = roles()


def misplaced(roles, env):
    """The role-scoped variables in env that are for none of roles."""
    return sorted(n for n in env if n in SCOPED and not SCOPED[n] & set(roles))


c.check(len(ROLES) >= 7 and "jobs" in ROLES and SCOPED.get("MOONCAKE_JOBS_AHEAD_MS") == {"jobs"},
        f"mooncake --help lists the roles {ROLES} and which settings belong to which")
c.check("alarms" in ROLES and SCOPED.get("MOONCAKE_ALARM_WEBHOOKS") == {"alarms"} and
        SCOPED.get("MOONCAKE_ALARM_INTERVAL_MS") == {"alarms"},
        "mooncake --help lists the alarms role and its two settings as the alarms role's")
webhooks_read = 0
ctl_help = subprocess.run([CTL, "topics", "create", "-h"], capture_output=True,
                          text=True).stdout + subprocess.run([CTL, "-h"], capture_output=True,
                                                             text=True).stdout
checked = 0
for name, values in value_sets():
    rc, out, err = render(values)
    c.check(rc == 0, f"helm template ({name})" + ("" if rc == 0 else ": " + err[-1000:]))
    docs = documents(out)
    configmaps = {}
    for d in docs:
        if d["kind"] == "ConfigMap":
            configmaps.update(d.get("data", {}))
    secrets = {d["metadata"]["name"]: d.get("stringData", {}) for d in docs
               if d["kind"] == "Secret"}
    for d, ct in containers(docs):
        with tempfile.TemporaryDirectory() as tmp:
            files = secret_files(d, secrets)
            env = environment(ct, configmaps, tmp, files)
            webhooks_read += "/etc/mooncake/auth/alarm-webhooks" in files
            what = f"{name}: {d['kind']} {d['metadata']['name']} container {ct['name']}"
            cmd = ct.get("command", [])
            if cmd == ["mooncakectl"]:
                flags = [a for a in ct["args"] if a.startswith("-")]
                c.check(ct["args"][:2] == ["topics", "create"] and
                        all(f in ctl_help for f in flags),
                        f"{what}: mooncakectl {' '.join(ct['args'][:2])} {flags} are real flags")
                argv = [MOONCAKE, "router", "--check-config"]  # the same settings table
            elif cmd:
                argv = [MOONCAKE, "router", "--check-config"]  # the test Pod's shell: its env
            else:
                role = ct["args"][0]
                # the view's pods run a gateway beside it, which answers its questions
                runs = role.split(",")
                c.check(ct["name"] in runs and (len(runs) == 1 or runs == ["gateway", "view"]),
                        f"{what}: runs the role it is named after")
                wrong = misplaced(runs, env)
                c.check(not wrong, f"{what}: sets only its own role-scoped settings" +
                        (f": {wrong} are not {role}'s" if wrong else ""))
                argv = [MOONCAKE, *ct["args"], "--check-config"]
            p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)
            c.check(p.returncode == 0 and "config ok" in p.stdout,
                    f"{what}: mooncake {argv[1]} --check-config" +
                    ("" if p.returncode == 0 else f": exit {p.returncode}: {p.stderr.strip()}"))
            checked += 1
c.check(checked == (len(ROLES) + 2) * len(value_sets()),
        f"{checked} containers checked ({len(ROLES)} roles, the topics Job, the test Pod "
        "per value set)")
c.check(webhooks_read == 1, "the alarms role read the webhooks file the chart's Secret holds "
        f"(auth.alarmWebhooks, in {webhooks_read} value set)")

# And the check can fail: the same gateway with a variable the binary does not know.
rc, out, _ = render(value_sets()[0][1])
docs = documents(out)
for d, ct in containers(docs):
    if ct["name"] == "gateway":
        with tempfile.TemporaryDirectory() as tmp:
            env = environment(ct, {}, tmp)
            env["MOONCAKE_GATEWAY_THREAD"] = "4"
            p = subprocess.run([MOONCAKE, "gateway", "--check-config"], env=env,
                               capture_output=True, text=True, timeout=30)
            c.check(p.returncode == 2 and "MOONCAKE_GATEWAY_THREAD" in p.stderr,
                    "a misspelt variable in the chart would fail this test")
            c.check(misplaced(["gateway"], dict(env, MOONCAKE_JOBS_AHEAD_MS="5000")) ==
                    ["MOONCAKE_JOBS_AHEAD_MS"],
                    "the jobs role's setting on the gateway would fail this test")
            c.check(misplaced(["gateway", "view"],
                              dict(env, MOONCAKE_ALARM_WEBHOOKS="@/etc/mooncake/auth/x")) ==
                    ["MOONCAKE_ALARM_WEBHOOKS"],
                    "the alarms role's webhooks on another role would fail this test")
        break
# A webhooks file in the wrong shape (what a broken auth Secret template would write)
# fails the alarms role's check.
rc, out, _ = render(value_sets()[0][1])
for d, ct in containers(documents(out)):
    if ct["name"] == "alarms":
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "alarm-webhooks")
            with open(path, "w") as f:
                f.write("shop: https://hooks.example.com/alarm\n")
            env = dict(environment(ct, {}, tmp), MOONCAKE_ALARM_WEBHOOKS="@" + path)
            p = subprocess.run([MOONCAKE, "alarms", "--check-config"], env=env,
                               capture_output=True, text=True, timeout=30)
            c.check(p.returncode == 2 and "MOONCAKE_ALARM_WEBHOOKS" in p.stderr,
                    "a malformed alarm webhooks file would fail this test")
c.exit()
