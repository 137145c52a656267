#!/usr/bin/env python3
"""The Helm chart (helm/mooncake), offline: `helm lint --strict` with the defaults and
every CI value set (helm/mooncake/ci/*.yaml); every manifest each renders decoded
strictly into its Kubernetes API type and cross-checked by tools/k8s-validate (unknown
fields, selectors, probes, references, the restricted pod profile); the values schema
refusing bad values; the dashboard using only metrics mooncake exports; and every value
documented in the chart's README. Negative cases prove each check can fail."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chart_tools import (CHART, SOURCE, Checks, documents, exported_metrics,  # noqa: E402
                         external_secrets, render, roles, tool, value_sets)


c = Checks()
helm, validate = tool("helm"), tool("k8s-validate")


def validate_stream(text, secrets):
    args = [validate] + [a for s in secrets for a in ("--external-secret", s)]
    return subprocess.run(args, input=text, capture_output=True, text=True, timeout=60)


for name, values in value_sets():
    lint = [helm, "lint", "--strict", CHART, "-f", values]
    p = subprocess.run(lint, capture_output=True, text=True, timeout=120)
    c.check(p.returncode == 0, f"helm lint --strict ({name})" +
            ("" if p.returncode == 0 else f": {p.stdout[-2000:]}{p.stderr[-1000:]}"))
    rc, out, err = render(values)
    c.check(rc == 0, f"helm template ({name})" + ("" if rc == 0 else f": {err[-2000:]}"))
    if rc != 0:
        continue
    v = validate_stream(out, external_secrets(values))
    c.check(v.returncode == 0, f"k8s-validate ({name}): {v.stderr.strip()}" +
            ("" if v.returncode == 0 else "\n" + v.stdout))
    kinds = {d["kind"] for d in documents(out)}
    c.check({"Deployment", "Service", "PodDisruptionBudget", "Job", "Pod"} <= kinds,
            f"{name} renders Deployments, Services, PDBs, the topics Job and the test Pod")

# What each optional part renders, where it is switched on.
rendered = {name: documents(render(values)[1]) for name, values in value_sets()}
DEFAULTS = os.path.join(CHART, "ci", "default-values.yaml")
want = {"keda-external-secrets-values.yaml": {"ScaledObject", "TriggerAuthentication"},
        "ingress-monitoring-values.yaml": {"Ingress", "HorizontalPodAutoscaler", "ServiceMonitor"}}
for name, kinds in want.items():
    got = {d["kind"] for d in rendered.get(name, [])}
    c.check(kinds <= got, f"{name} renders {sorted(kinds)}")
for d in rendered.get("keda-external-secrets-values.yaml", []):
    if d["kind"] == "ScaledObject":
        c.check(d["spec"]["maxReplicaCount"] == 24,
                "KEDA's ceiling is the partition count (24), not the asked-for 64")
# Hooks run before the release's resources exist: whatever the topics Job reads must be
# a hook created before it.
docs = rendered["ingress-monitoring-values.yaml"]
job = next(d for d in docs if d["kind"] == "Job")
secrets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Secret"}
read = {e["valueFrom"]["secretKeyRef"]["name"]
        for e in job["spec"]["template"]["spec"]["containers"][0]["env"]
        if "secretKeyRef" in e.get("valueFrom", {})}


def hook(d):
    a = d["metadata"].get("annotations", {})
    return a.get("helm.sh/hook", ""), int(a.get("helm.sh/hook-weight", "0"))


c.check(read and all(n in secrets and "pre-install" in hook(secrets[n])[0] and
                     hook(secrets[n])[1] < hook(job)[1] for n in read) and
        "pre-install" in hook(job)[0],
        f"the Secrets the topics Job reads ({sorted(read)}) are hooks created before it")
# Every role `mooncake --help` lists gets its Deployment and (maxUnavailable set) its PDB.
ROLES = roles()
c.check("jobs" in ROLES, f"the binary's roles {ROLES} include jobs")
for name, docs in rendered.items():
    deploys = [d for d in docs if d["kind"] == "Deployment"]
    names = sorted(d["spec"]["template"]["spec"]["containers"][0]["name"] for d in deploys)
    c.check(names == sorted(ROLES), f"{name}: one Deployment per role ({names})")
deploys = [d for d in rendered["default-values.yaml"] if d["kind"] == "Deployment"]
c.check(all(d["spec"]["template"]["spec"]["enableServiceLinks"] is False for d in deploys),
        "no service links (their <SERVICE>_PORT variables could read as MOONCAKE_* settings)")
pdbs = sorted(d["metadata"]["labels"]["app.kubernetes.io/component"]
              for d in rendered["default-values.yaml"] if d["kind"] == "PodDisruptionBudget")
c.check(pdbs == sorted(ROLES), f"the defaults give every role a PodDisruptionBudget ({pdbs})")


def role_container(name, role):
    return next(d["spec"]["template"]["spec"]["containers"][0] for d in rendered[name]
                if d["kind"] == "Deployment" and
                d["metadata"]["labels"]["app.kubernetes.io/component"] == role)


def env_of(ct):
    return {e["name"]: e.get("value") for e in ct["env"]}


# The jobs role, like the store, holds state in memory: its own resources and settings.
jobs = role_container("default-values.yaml", "jobs")
c.check(jobs["args"] == ["jobs"] and env_of(jobs).get("MOONCAKE_JOBS_AHEAD_MS") == "5000",
        "the jobs Deployment runs `mooncake jobs` with MOONCAKE_JOBS_AHEAD_MS=5000 (jobs.aheadMs)")
c.check(jobs["resources"] == {"requests": {"cpu": "100m", "memory": "256Mi"},
                              "limits": {"memory": "2Gi"}},
        f"the jobs Deployment has jobs.resources ({jobs['resources']})")
c.check(env_of(role_container("keda-external-secrets-values.yaml", "jobs"))
        .get("MOONCAKE_JOBS_AHEAD_MS") == "2000", "jobs.aheadMs reaches the jobs role")
c.check(all("MOONCAKE_JOBS_AHEAD_MS" not in env_of(role_container("default-values.yaml", r))
            for r in ROLES if r != "jobs"), "only the jobs role gets MOONCAKE_JOBS_AHEAD_MS")

# The alarms role: its interval, and the webhook URLs (credentials) as a file of the auth
# Secret that only it mounts, and only when there are webhooks.
c.check("alarms" in ROLES, f"the binary's roles {ROLES} include alarms")
WEBHOOKS = "@/etc/mooncake/auth/alarm-webhooks"


def auth_items(name, role):
    """key -> path of the auth Secret files the role's pods mount ({}: none)."""
    d = next(d for d in rendered[name] if d["kind"] == "Deployment" and
             d["metadata"]["labels"]["app.kubernetes.io/component"] == role)
    vols = [v for v in d["spec"]["template"]["spec"]["volumes"] if v["name"] == "auth"]
    return {i["key"]: i["path"] for v in vols for i in v["secret"]["items"]}


alarms = role_container("default-values.yaml", "alarms")
c.check(alarms["args"] == ["alarms"] and
        env_of(alarms).get("MOONCAKE_ALARM_INTERVAL_MS") == "60000",
        "the alarms Deployment runs `mooncake alarms` with MOONCAKE_ALARM_INTERVAL_MS=60000 "
        "(alarms.intervalMs)")
c.check(alarms["resources"] == {"requests": {"cpu": "50m", "memory": "128Mi"},
                                "limits": {"memory": "512Mi"}},
        f"the alarms Deployment has alarms.resources ({alarms['resources']})")
c.check(env_of(role_container("keda-external-secrets-values.yaml", "alarms"))
        .get("MOONCAKE_ALARM_INTERVAL_MS") == "300000", "alarms.intervalMs reaches the alarms role")
c.check("MOONCAKE_ALARM_WEBHOOKS" not in env_of(alarms) and auth_items("default-values.yaml",
                                                                       "alarms") == {},
        "no auth.alarmWebhooks: the alarms role gets no MOONCAKE_ALARM_WEBHOOKS and mounts nothing")
for name, key in (("ingress-monitoring-values.yaml", "alarm-webhooks"),
                  ("keda-external-secrets-values.yaml", "alarm-hooks")):
    c.check(env_of(role_container(name, "alarms")).get("MOONCAKE_ALARM_WEBHOOKS") == WEBHOOKS and
            auth_items(name, "alarms") == {key: "alarm-webhooks"},
            f"{name}: the alarms role gets MOONCAKE_ALARM_WEBHOOKS={WEBHOOKS}, mounting only "
            f"the Secret's {key} ({auth_items(name, 'alarms')})")
for name in rendered:
    wrong = [r for r in ROLES if r != "alarms" and
             ({"MOONCAKE_ALARM_WEBHOOKS", "MOONCAKE_ALARM_INTERVAL_MS"} &
              set(env_of(role_container(name, r))) or
              "alarm-webhooks" in auth_items(name, r).values())]
    c.check(not wrong, f"{name}: only the alarms role gets the alarm settings and mounts the "
            f"webhooks" + (f" (also {wrong})" if wrong else ""))
auth = next(d for d in rendered["ingress-monitoring-values.yaml"]
            if d["kind"] == "Secret" and d["metadata"]["name"].endswith("-auth"))
c.check(sorted(auth["stringData"].get("alarm-webhooks", "").splitlines()) ==
        ["*=https://events.pagerduty.example.com/v2/enqueue?routing_key=ci-routing-key",
         "shop=https://hooks.slack.example.com/services/T0000/B0000/ci-alarm-0123456789"],
        "the chart's auth Secret holds auth.alarmWebhooks as app=url lines (alarm-webhooks)")
rc, out, _ = render(None, "--set", "auth.alarmWebhooks.shop=https://hooks.example.com/x",
                    "--set", "gateway.noAuth=true")
only = [d for d in documents(out) if d["kind"] == "Secret"] if rc == 0 else []
c.check(rc == 0 and len(only) == 1 and list(only[0]["stringData"]) == ["alarm-webhooks"],
        "webhooks without tokens: the chart still creates the auth Secret, with the webhooks only")

# Without a token the gateway could not start: the chart says so instead.
rc, _, err = render(None)
c.check(rc != 0 and "the gateway needs tokens" in err, "no tokens: helm refuses to render")
c.check(render(None, "--set", "gateway.noAuth=true")[0] == 0, "gateway.noAuth renders")

# The validator and the schema can fail.
rc, out, _ = render(DEFAULTS)
broken = out.replace("enableServiceLinks: false", "enableServiceLinks: false\n      replicaz: 2", 1)
v = validate_stream(broken, [])
c.check(v.returncode == 1 and 'unknown field "spec.template.spec.replicaz"' in v.stdout,
        "k8s-validate refuses an unknown field")
unsafe = out.replace("readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", 1)
v = validate_stream(unsafe, [])
c.check(v.returncode == 1 and "readOnlyRootFilesystem" in v.stdout,
        "k8s-validate refuses a writable root filesystem")
dangling = out.replace("targetPort: http", "targetPort: http\n  selector2: {}", 1)
v = validate_stream(dangling, [])
c.check(v.returncode == 1, "k8s-validate refuses a Service field that does not exist")
v = validate_stream(render(os.path.join(CHART, "ci", "keda-external-secrets-values.yaml"))[1], [])
c.check(v.returncode == 1 and "Secret kafka-credentials is neither in the stream" in v.stdout,
        "k8s-validate refuses a reference to a Secret that does not exist")
for bad, needle in ((["--set", "gateway.replicas=abc"], "want integer"),
                    (["--set", "router.replicaCount=2"], "additional properties"),
                    (["--set", "auth.appTokens.shop=short"], "minLength"),
                    (["--set", "config.logLevel=verbose"], "logLevel"),
                    (["--set", "jobs.aheadMs=50"], "minimum"),
                    (["--set", "jobs.replicaCount=2"], "additional properties"),
                    (["--set", "alarms.intervalMs=500"], "minimum"),
                    (["--set", "alarms.replicaCount=2"], "additional properties"),
                    (["--set", "auth.alarmWebhooks.shop=ftp://hooks.example.com/x"], "pattern"),
                    (["--set", "auth.existingSecretKeys.alarmWebhookz=x"],
                     "additional properties")):
    rc, _, err = render(DEFAULTS, *bad)
    c.check(rc != 0 and needle in err, f"values.schema.json refuses {' '.join(bad[1:])}")

# The dashboard shows only metrics mooncake exports.
exported = exported_metrics()
with open(os.path.join(CHART, "dashboards", "mooncake.json")) as f:
    used = {re.sub(r"_bucket$", "", m) for m in re.findall(r"mooncake_[a-z_]+", f.read())}
c.check(used and used <= exported, f"the dashboard's {len(used)} metrics all exist" +
        ("" if used <= exported else f": unknown {sorted(used - exported)}"))

# Every value is documented: a "# -- " comment in values.yaml, and the README's table
# (written from those comments by tools/chart-values-doc) up to date.
p = subprocess.run([sys.executable, os.path.join(SOURCE, "tools", "chart-values-doc"), "--check"],
                   capture_output=True, text=True, timeout=60)
c.check(p.returncode == 0, "every value is documented in values.yaml and the chart README" +
        ("" if p.returncode == 0 else ": " + p.stderr.strip()))
c.exit()
