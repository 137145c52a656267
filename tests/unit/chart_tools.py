"""What the chart tests share: where helm and the validator are (tools/setup builds
them into $MOONCAKE_CACHE/bin), rendering the chart with a value set, the value
sets CI checks (the defaults and helm/mooncake/ci/*.yaml) with the Secrets each
expects to exist outside the chart, and the roles and role-scoped settings the built
binary has (from `mooncake --help`)."""
import glob
import os
import re
import subprocess
import sys

import yaml

SOURCE = os.environ.get("MOONCAKE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("MOONCAKE_BUILD_DIR", os.path.join(SOURCE, "build"))
CHART = os.path.join(SOURCE, "helm", "mooncake")
CACHE_BIN = os.path.join(os.environ.get("MOONCAKE_CACHE") or
                         os.path.join(os.path.expanduser("~"), ".cache", "mooncake"), "bin")
KUBE_VERSION = "1.31.0"  # a helm built by go install would assume 1.20
# The kinds the roles run as: a StatefulSet per processor role, the gateway's Deployment.
WORKLOADS = ("Deployment", "StatefulSet")
STATELESS = ("gateway",)  # the roles that are a Deployment; every other is a StatefulSet


def tool(name):
    path = os.path.join(CACHE_BIN, name)
    if not os.access(path, os.X_OK):
        print(f"FAIL: {path} is missing: run tools/setup (it builds helm and the checks; "
              "these tests do not skip)")
        sys.exit(1)
    return path


def value_sets():
    """(name, values file) for every set CI renders. The chart's own defaults lack
    the one value a real install must give (a gateway token), so
    ci/default-values.yaml is they plus a token."""
    return [(os.path.basename(f), f)
            for f in sorted(glob.glob(os.path.join(CHART, "ci", "*.yaml")))]


def external_secrets(values_file):
    """Secrets a value set names but does not create (they must exist in the cluster)."""
    if not values_file:
        return []
    with open(values_file) as f:
        v = yaml.safe_load(f) or {}
    kafka = v.get("kafka", {})
    names = [kafka.get("sasl", {}).get("existingSecret"), kafka.get("tls", {}).get("caSecret"),
             v.get("auth", {}).get("existingSecret"),
             v.get("gateway", {}).get("ingress", {}).get("tlsSecretName")]
    return [n for n in names if n]


def render(values_file, *extra):
    """helm template of the chart with a values file (None: the chart's own
    defaults); returns (returncode, stdout, stderr)."""
    cmd = [tool("helm"), "template", "ci", CHART, "--kube-version", KUBE_VERSION, *extra]
    if values_file:
        cmd += ["-f", values_file]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def binary_help():
    p = subprocess.run([os.path.join(BUILD, "mooncake"), "--help"], capture_output=True,
                       text=True, timeout=30)
    return p.stdout + p.stderr


def roles():
    """The roles `mooncake --help` lists, in its order ("all" is not a workload of its own)."""
    section = binary_help().split("Roles:", 1)[1].split("\n\n", 1)[0]
    return [r for r in re.findall(r"^  ([a-z]+)\s", section, flags=re.M) if r != "all"]


def role_scoped_env():
    """MOONCAKE_* variable -> the roles it is for, for the settings whose help names
    them ("executor: ...", "jobs and gateway: ..."); the rest are every role's."""
    scoped = {}
    known = set(roles())
    for m in re.finditer(r"^\s+(?:-\w, )?--[a-z-]+\s+(.*)\n\s+env (MOONCAKE_[A-Z0-9_]+)",
                         binary_help(), flags=re.M):
        prefix = re.match(r"([a-z]+(?:(?:, | and )[a-z]+)*): ", m.group(1))
        if prefix:
            named = set(re.split(r", | and ", prefix.group(1)))
            if named <= known:
                scoped[m.group(2)] = named
    return scoped


def documents(text):
    return [d for d in yaml.safe_load_all(text) if d]


class Checks:
    """Collects failures so one run reports every broken thing."""

    def __init__(self):
        self.failures = []

    def check(self, cond, what):
        print(("ok   " if cond else "FAIL ") + what, flush=True)
        if not cond:
            self.failures.append(what)

    def exit(self):
        print(f"{len(self.failures)} failed" if self.failures else "all checks passed")
        sys.exit(1 if self.failures else 0)


def exported_metrics():
    """The metric names mooncake's C code registers (every "mooncake_..." literal)."""
    names = set()
    for root in ("common", "processors", "gateway"):
        for f in os.listdir(os.path.join(SOURCE, root)):
            if f.endswith(".c"):
                with open(os.path.join(SOURCE, root, f)) as fh:
                    names |= set(re.findall(r'"(mooncake_[a-z_]+)"', fh.read()))
    return names
