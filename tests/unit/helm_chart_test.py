#!/usr/bin/env python3
"""The Helm chart (helm/mooncake), offline: `helm lint --strict` with the defaults and
every CI value set (helm/mooncake/ci/*.yaml); every manifest each renders decoded
strictly into its Kubernetes API type and cross-checked by tools/k8s-validate (unknown
fields, selectors, governing Services, probes, references, scale targets, the restricted
pod profile); every processor role a StatefulSet that rolls and scales safely (stable
pod names as instance ids, a headless governing Service, Parallel pod management, rolling
updates, a quick readiness probe, a PodDisruptionBudget, KEDA scaling the StatefulSet)
and the gateway a Deployment; the values schema refusing bad values; the dashboard using
only metrics mooncake exports; and every value documented in the chart's README.
Negative cases prove each check can fail."""
import copy
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chart_tools import (CHART, SOURCE, STATELESS, WORKLOADS, Checks, documents,  # noqa: E402
                         exported_metrics, external_secrets, render, roles, tool, value_sets)


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
    c.check({"StatefulSet", "Deployment", "Service", "PodDisruptionBudget", "Job", "Pod"} <= kinds,
            f"{name} renders StatefulSets, the gateway's Deployment, Services, PDBs, the topics "
            "Job and the test Pod")

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
# Every role `mooncake --help` lists gets its workload (a StatefulSet, the gateway a
# Deployment) and (maxUnavailable set) its PDB.
ROLES = roles()
PROCESSORS = [r for r in ROLES if r not in STATELESS]
c.check("jobs" in ROLES and set(STATELESS) < set(ROLES),
        f"the binary's roles {ROLES} include jobs and {list(STATELESS)}")
for name, docs in rendered.items():
    for kind, want in (("StatefulSet", PROCESSORS), ("Deployment", STATELESS)):
        names = sorted(d["spec"]["template"]["spec"]["containers"][0]["name"] for d in docs
                       if d["kind"] == kind)
        c.check(names == sorted(want), f"{name}: one {kind} per role of {sorted(want)} ({names})")
workloads = [d for d in rendered["default-values.yaml"] if d["kind"] in WORKLOADS]
c.check(all(d["spec"]["template"]["spec"]["enableServiceLinks"] is False for d in workloads),
        "no service links (their <SERVICE>_PORT variables could read as MOONCAKE_* settings)")
pdbs = sorted(d["metadata"]["labels"]["app.kubernetes.io/component"]
              for d in rendered["default-values.yaml"] if d["kind"] == "PodDisruptionBudget")
c.check(pdbs == sorted(ROLES), f"the defaults give every role a PodDisruptionBudget ({pdbs})")


def role_workload(docs, role):
    """The role's StatefulSet or Deployment (None: neither)."""
    return next((d for d in docs if d["kind"] in WORKLOADS and
                 d["metadata"]["labels"]["app.kubernetes.io/component"] == role), None)


def role_container(name, role):
    return role_workload(rendered[name], role)["spec"]["template"]["spec"]["containers"][0]


def env_of(ct):
    return {e["name"]: e.get("value") for e in ct["env"]}


# The jobs role, like the store, holds state in memory: its own resources and settings.
jobs = role_container("default-values.yaml", "jobs")
c.check(jobs["args"] == ["jobs"] and env_of(jobs).get("MOONCAKE_JOBS_AHEAD_MS") == "5000",
        "the jobs StatefulSet runs `mooncake jobs` with MOONCAKE_JOBS_AHEAD_MS=5000 (jobs.aheadMs)")
c.check(jobs["resources"] == {"requests": {"cpu": "100m", "memory": "256Mi"},
                              "limits": {"memory": "2Gi"}},
        f"the jobs StatefulSet has jobs.resources ({jobs['resources']})")
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
    d = role_workload(rendered[name], role)
    vols = [v for v in d["spec"]["template"]["spec"]["volumes"] if v["name"] == "auth"]
    return {i["key"]: i["path"] for v in vols for i in v["secret"]["items"]}


alarms = role_container("default-values.yaml", "alarms")
c.check(alarms["args"] == ["alarms"] and
        env_of(alarms).get("MOONCAKE_ALARM_INTERVAL_MS") == "60000",
        "the alarms StatefulSet runs `mooncake alarms` with MOONCAKE_ALARM_INTERVAL_MS=60000 "
        "(alarms.intervalMs)")
c.check(alarms["resources"] == {"requests": {"cpu": "50m", "memory": "128Mi"},
                                "limits": {"memory": "512Mi"}},
        f"the alarms StatefulSet has alarms.resources ({alarms['resources']})")
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

# Rolling and scaling. Each processor replica keeps its pod name, which is its instance
# id (its transactional ids and static group membership), across rolls and restarts: a
# StatefulSet named <fullname>-<role> whose selector is the one the Deployments had, a
# headless governing Service selecting exactly its pods, Parallel pod management (scale
# steps at once, updates still one pod at a time), rolling updates of every pod, no
# volumes of its own (state is in Kafka), a readiness probe quick enough for a roll to
# follow, and the grace period the stop needs. The gateway stays a Deployment.
SELECTOR = {"app.kubernetes.io/name": "mooncake", "app.kubernetes.io/instance": "ci"}


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def rolling_problems(docs):
    """What keeps the rendered roles from rolling and scaling safely ([]: nothing)."""
    problems = []
    services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
    templates = [(d["kind"], d["metadata"]["name"], d["spec"]["template"]["metadata"]["labels"])
                 for d in docs if d["kind"] in WORKLOADS]
    for role in ROLES:
        want = "Deployment" if role in STATELESS else "StatefulSet"
        found = [d for d in docs if d["kind"] in WORKLOADS and
                 d["metadata"]["labels"]["app.kubernetes.io/component"] == role]
        if [d["kind"] for d in found] != [want]:
            problems.append(f"{role}: {[d['kind'] for d in found]}, not one {want}")
            continue
        d = found[0]
        spec, pod = d["spec"], d["spec"]["template"]["spec"]
        labels = d["spec"]["template"]["metadata"]["labels"]
        if spec["selector"] != {"matchLabels": {**SELECTOR, "app.kubernetes.io/component": role}}:
            problems.append(f"{role}: selector {spec['selector']} is not the Deployments' one")
        if want == "Deployment":
            continue
        name = d["metadata"]["name"]
        if not name.endswith(f"-{role}"):
            problems.append(f"{role}: StatefulSet {name} does not end in -{role}")
        svc = services.get(spec.get("serviceName"))
        if svc is None:
            problems.append(f"{role}: serviceName {spec.get('serviceName')} is no Service")
        elif svc["spec"].get("clusterIP") != "None":
            problems.append(f"{role}: Service {svc['metadata']['name']} is not headless")
        elif [t[:2] for t in templates if selects(svc["spec"].get("selector"), t[2])] != \
                [("StatefulSet", name)]:
            problems.append(f"{role}: Service {svc['metadata']['name']} does not select exactly "
                            "the StatefulSet's pods")
        if spec.get("podManagementPolicy") != "Parallel":
            problems.append(f"{role}: podManagementPolicy {spec.get('podManagementPolicy')}")
        strategy = spec.get("updateStrategy", {})
        if strategy.get("type") != "RollingUpdate" or \
                strategy.get("rollingUpdate", {}).get("partition", 0) != 0:
            problems.append(f"{role}: updateStrategy {strategy}, not RollingUpdate of every pod")
        if "volumeClaimTemplates" in spec:
            problems.append(f"{role}: volumeClaimTemplates (its state is in Kafka)")
        ct = pod["containers"][0]
        ids = [e for e in ct["env"] if e["name"] == "MOONCAKE_INSTANCE_ID"]
        if ids != [{"name": "MOONCAKE_INSTANCE_ID",
                    "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]:
            problems.append(f"{role}: MOONCAKE_INSTANCE_ID is {ids}, not the pod name")
        probe = ct.get("readinessProbe", {})
        if probe.get("httpGet", {}).get("path") != "/readyz" or \
                probe.get("periodSeconds") != 2 or probe.get("failureThreshold") != 1:
            problems.append(f"{role}: readinessProbe {probe}, not /readyz every 2 s, "
                            "believed at once")
        drain = env_of(ct).get("MOONCAKE_DRAIN_TIMEOUT_MS")
        grace = int(drain) // 1000 + 20 if role == "executor" and drain else 30
        if pod.get("terminationGracePeriodSeconds") != grace:
            problems.append(f"{role}: terminationGracePeriodSeconds "
                            f"{pod.get('terminationGracePeriodSeconds')}, not {grace}")
    return problems


for name, docs in rendered.items():
    problems = rolling_problems(docs)
    c.check(not problems, f"{name}: every processor role is a StatefulSet that rolls and "
            "scales safely, the gateway a Deployment" + (f": {problems}" if problems else ""))
default_docs = rendered["default-values.yaml"]
executor = role_workload(default_docs, "executor")
c.check(executor["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 30,
        "the executor's grace period is executor.drainTimeoutMs (10 s) plus 20 s")
rc, out, _ = render(DEFAULTS, "--set", "executor.drainTimeoutMs=25000")
executor = role_workload(documents(out), "executor") if rc == 0 else None
c.check(executor and not rolling_problems(documents(out)) and
        executor["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 45,
        "executor.drainTimeoutMs=25000 gives the executor a grace period of 45 s")
gateway = role_container("default-values.yaml", "gateway")
c.check(gateway["readinessProbe"]["periodSeconds"] == 5 and gateway["lifecycle"]["preStop"],
        "the gateway keeps its own readiness probe and its preStop sleep")


# And the checks can fail: each breakage below is one rolling_problems must name.
def broken_rolling(edit):
    docs = copy.deepcopy(default_docs)
    edit(docs)
    return rolling_problems(docs)


sts = role_workload  # the role's StatefulSet, in the breakages below


def as_deployment(docs):
    d = sts(docs, "executor")
    d["kind"] = "Deployment"
    for k in ("serviceName", "podManagementPolicy", "updateStrategy"):
        d["spec"].pop(k)


def instance_from_uid(docs):
    for e in sts(docs, "wheel")["spec"]["template"]["spec"]["containers"][0]["env"]:
        if e["name"] == "MOONCAKE_INSTANCE_ID":
            e["valueFrom"]["fieldRef"]["fieldPath"] = "metadata.uid"


def not_headless(docs):
    name = sts(docs, "view")["spec"]["serviceName"]
    next(d for d in docs if d["kind"] == "Service" and
         d["metadata"]["name"] == name)["spec"].pop("clusterIP")


for what, edit, needle in (
        ("the executor as a Deployment", as_deployment, "executor: ['Deployment']"),
        ("OrderedReady pod management",
         lambda docs: sts(docs, "store")["spec"].update(podManagementPolicy="OrderedReady"),
         "store: podManagementPolicy OrderedReady"),
        ("a canary partition",
         lambda docs: sts(docs, "router")["spec"]["updateStrategy"].update(
             rollingUpdate={"partition": 1}), "router: updateStrategy"),
        ("OnDelete updates",
         lambda docs: sts(docs, "router")["spec"].update(updateStrategy={"type": "OnDelete"}),
         "router: updateStrategy"),
        ("serviceName naming the gateway's Service",
         lambda docs: sts(docs, "jobs")["spec"].update(serviceName=role_workload(
             docs, "gateway")["metadata"]["name"]), "jobs: Service"),
        ("serviceName naming no Service",
         lambda docs: sts(docs, "retry")["spec"].update(serviceName="nowhere"),
         "retry: serviceName"),
        ("a governing Service with a cluster IP", not_headless, "view: Service"),
        ("the instance id from the pod's uid", instance_from_uid, "wheel: MOONCAKE_INSTANCE_ID"),
        ("a selector without the role",
         lambda docs: sts(docs, "alarms")["spec"]["selector"]["matchLabels"].pop(
             "app.kubernetes.io/component"), "alarms: selector"),
        ("a volume claim per replica",
         lambda docs: sts(docs, "store")["spec"].update(volumeClaimTemplates=[]),
         "store: volumeClaimTemplates"),
        ("the old readiness probe (every 5 s, two failures)",
         lambda docs: sts(docs, "view")["spec"]["template"]["spec"]["containers"][0][
             "readinessProbe"].update(periodSeconds=5, failureThreshold=2), "view: readinessProbe"),
        ("an executor grace period without its drain",
         lambda docs: sts(docs, "executor")["spec"]["template"]["spec"].update(
             terminationGracePeriodSeconds=20), "executor: terminationGracePeriodSeconds")):
    problems = broken_rolling(edit)
    c.check(any(p.startswith(needle) for p in problems),
            f"rolling_problems refuses {what} ({problems})")

# A PodDisruptionBudget per processor role, maxUnavailable 1 by default, over exactly the
# StatefulSet's pods; null removes a role's.
for name, docs in rendered.items():
    pdbs = {d["metadata"]["labels"]["app.kubernetes.io/component"]: d for d in docs
            if d["kind"] == "PodDisruptionBudget"}
    wrong = [r for r in PROCESSORS if r in pdbs and
             pdbs[r]["spec"]["selector"] != role_workload(docs, r)["spec"]["selector"]]
    c.check(not wrong, f"{name}: each processor role's PodDisruptionBudget selects its "
            f"StatefulSet's pods" + (f" (not {wrong})" if wrong else ""))
pdbs = {d["metadata"]["labels"]["app.kubernetes.io/component"]: d["spec"] for d in default_docs
        if d["kind"] == "PodDisruptionBudget"}
c.check(all(pdbs.get(r, {}).get("maxUnavailable") == 1 for r in PROCESSORS),
        "the defaults give every processor role a PodDisruptionBudget of maxUnavailable 1 "
        f"({ {r: pdbs.get(r, {}).get('maxUnavailable') for r in PROCESSORS} })")
store = [d for d in rendered["ingress-monitoring-values.yaml"]
         if d["kind"] == "PodDisruptionBudget" and
         d["metadata"]["labels"]["app.kubernetes.io/component"] == "store"]
c.check(store == [],
        "store.maxUnavailable: null in a values file: no PodDisruptionBudget for the store")
rc, out, _ = render(DEFAULTS, "--set", "executor.maxUnavailable=null")
left = sorted(d["metadata"]["labels"]["app.kubernetes.io/component"] for d in documents(out)
              if d["kind"] == "PodDisruptionBudget") if rc == 0 else None
c.check(left == sorted(r for r in ROLES if r != "executor"),
        f"--set executor.maxUnavailable=null: every role but the executor keeps its PDB ({left})")

# KEDA scales the executor's StatefulSet (which then leaves replicas to it); the HPA the
# gateway's Deployment.
docs = rendered["keda-external-secrets-values.yaml"]
so = next(d for d in docs if d["kind"] == "ScaledObject")
executor = role_workload(docs, "executor")
c.check(so["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "StatefulSet",
                                         "name": executor["metadata"]["name"]} and
        executor["kind"] == "StatefulSet" and "replicas" not in executor["spec"],
        "KEDA scales the executor StatefulSet, which leaves replicas to it "
        f"({so['spec']['scaleTargetRef']})")
docs = rendered["ingress-monitoring-values.yaml"]
hpa = next(d for d in docs if d["kind"] == "HorizontalPodAutoscaler")
gateway = role_workload(docs, "gateway")
c.check(hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                          "name": gateway["metadata"]["name"]} and
        "replicas" not in gateway["spec"], "the HPA scales the gateway Deployment")

# A StatefulSet's name, plus the 11 characters of its revision label, must fit in a label.
long_name = "x" * 43
rc, out, _ = render(DEFAULTS, "--set", f"fullnameOverride={long_name}")
c.check(rc == 0 and role_workload(documents(out), "executor")["metadata"]["name"] ==
        long_name + "-executor", "a 43-character fullname still fits the executor's StatefulSet")
rc, _, err = render(DEFAULTS, "--set", f"fullnameOverride={long_name}x")
c.check(rc != 0 and "more than the 52 Kubernetes allows" in err,
        "a 44-character fullname: helm refuses to render (the executor's StatefulSet name)")

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
executor_sts = role_workload(documents(out), "executor")["metadata"]["name"]
GOVERNING = ("  publishNotReadyAddresses: true\n  selector:\n    app.kubernetes.io/name: mooncake\n"
             "    app.kubernetes.io/instance: ci\n    app.kubernetes.io/component: ")
for what, text, needle in (
        ("a StatefulSet whose serviceName is no Service",
         out.replace(f"serviceName: {executor_sts}", f"serviceName: {executor_sts}-x", 1),
         f"spec.serviceName {executor_sts}-x is not a Service in the stream"),
        ("a governing Service with a cluster IP",
         out.replace("  clusterIP: None\n  publishNotReadyAddresses: true",
                     "  publishNotReadyAddresses: true", 1), "is not a headless Service"),
        ("a StatefulSet pod management policy that does not exist",
         out.replace("podManagementPolicy: Parallel", "podManagementPolicy: Sequential", 1),
         'spec.podManagementPolicy "Sequential"'),
        ("a StatefulSet selector that also takes the gateway's pods",
         out.replace("      app.kubernetes.io/component: router\n  template:", "  template:", 1),
         "spec.selector also matches the pods of"),
        ("a StatefulSet whose pods its governing Service does not select",
         out.replace(GOVERNING + "router\n", GOVERNING + "routerz\n", 1),
         "its selector map[app.kubernetes.io/component:routerz")):
    v = validate_stream(text, [])
    c.check(text != out and v.returncode == 1 and needle in v.stdout,
            f"k8s-validate refuses {what}" + ("" if needle in v.stdout else f": {v.stdout}"))
keda = render(os.path.join(CHART, "ci", "keda-external-secrets-values.yaml"))[1]
keda_secrets = external_secrets(os.path.join(CHART, "ci", "keda-external-secrets-values.yaml"))
for what, text in (("kind Deployment",
                    keda.replace("    kind: StatefulSet\n", "    kind: Deployment\n", 1)),
                   ("no kind (KEDA's default: a Deployment)",
                    keda.replace("    apiVersion: apps/v1\n    kind: StatefulSet\n", "", 1))):
    v = validate_stream(text, keda_secrets)
    c.check(text != keda and v.returncode == 1 and "ScaledObject" in v.stdout and
            "scaleTargetRef" in v.stdout,
            f"k8s-validate refuses a ScaledObject whose target is the executor with {what}")
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
