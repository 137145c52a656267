#!/usr/bin/env python3
"""The chart's alert rules (helm/mooncake/templates/prometheusrule.yaml), offline:
rendered with prometheusRule on, they must parse (`promtool check rules`), read only
metrics mooncake exports (or kube-state-metrics' restarts), and fire exactly when
they should: `promtool test rules` replays series that must fire each alert, with
its labels and text, and series just under each threshold that must not. A
threshold set in the values reaches its rule. Negative cases prove the checks can
fail."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chart_tools import CHART, Checks, documents, exported_metrics, render  # noqa: E402

c = Checks()
PROMTOOL = shutil.which("promtool")
if not PROMTOOL:
    print("FAIL: promtool is missing: run tools/setup (Debian's prometheus package; "
          "this test does not skip)")
    sys.exit(1)
DEFAULTS = os.path.join(CHART, "ci", "default-values.yaml")
NS = 'namespace="default"'


def rules(*extra):
    """The PrometheusRule's groups, rendered from the defaults with extra flags."""
    rc, out, err = render(DEFAULTS, "--set", "prometheusRule.enabled=true", *extra)
    if rc != 0:
        c.check(False, f"helm template with prometheusRule.enabled: {err[-1500:]}")
        return []
    found = [d for d in documents(out) if d["kind"] == "PrometheusRule"]
    c.check(len(found) == 1, f"one PrometheusRule rendered, got {len(found)}")
    return found[0]["spec"]["groups"] if found else []


def promtool(*args):
    p = subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


def series(name, labels, values):
    inner = ",".join([NS] + [f'{k}="{v}"' for k, v in labels.items()])
    return {"series": f"{name}{{{inner}}}", "values": values}


def buckets(name, values_by_le, labels=None):
    """A histogram's _bucket series, one per upper bound."""
    return [series(name + "_bucket", {**(labels or {}), "le": le}, v)
            for le, v in values_by_le.items()]


# Each alert: series that must fire it at eval_time (with these labels and
# annotations), and series just under the threshold that must not.
LATE_FAST = {"0.1": "0+60x20", "1": "0+60x20", "+Inf": "0+60x20"}
LATE_SLOW = {"0.1": "0+1x20", "1": "0+1x20", "5": "0+60x20", "+Inf": "0+60x20"}
CASES = {
    "MooncakeDeadLetters": dict(
        fire=[series("mooncake_records_out_total",
                     {"processor": "retry", "topic": "mooncake.dead", "pod": "r-1"},
                     "0 0 0 0 0 0 10 10 10 10")],
        quiet=[series("mooncake_records_out_total",
                      {"processor": "retry", "topic": "mooncake.dead", "pod": "r-1"},
                      "10 10 10 10 10 10 10 10 10 10"),
               series("mooncake_records_out_total",
                      {"processor": "executor", "topic": "mooncake.results", "pod": "e-1"},
                      "0+100x10")],
        at="8m", labels={"namespace": "default"}),
    "MooncakeLateCalls": dict(
        fire=buckets("mooncake_executor_start_lateness_seconds", LATE_SLOW, {"pod": "e-1"}),
        quiet=buckets("mooncake_executor_start_lateness_seconds", LATE_FAST, {"pod": "e-1"}),
        at="16m", labels={"namespace": "default"}),
    "MooncakeConsumerLag": dict(
        fire=[series("mooncake_consumer_lag",
                     {"processor": "executor", "topic": "mooncake.ready", "pod": "e-1"},
                     "200000x20")],
        quiet=[series("mooncake_consumer_lag",
                      {"processor": "executor", "topic": "mooncake.ready", "pod": "e-1"},
                      "99999x20"),
               # over the threshold, but not for 10 minutes yet
               series("mooncake_consumer_lag",
                      {"processor": "router", "topic": "mooncake.tasks", "pod": "r-1"},
                      "0x12 200000x4")],
        at="16m", labels={"namespace": "default", "processor": "executor",
                          "topic": "mooncake.ready"}),
    "MooncakeSlowRestore": dict(
        fire=[series("mooncake_store_last_restore_seconds", {"pod": "s-1"}, "300x5")],
        quiet=[series("mooncake_store_last_restore_seconds", {"pod": "s-1"}, "119x5"),
               series("mooncake_jobs_last_restore_seconds", {"pod": "j-1"}, "2x5"),
               series("mooncake_alarms_last_restore_seconds", {"pod": "a-1"}, "119x5")],
        at="2m", labels={"namespace": "default", "pod": "s-1"}),
    "MooncakeTransactionsAborting": dict(
        fire=[series("mooncake_transactions_aborted_total", {"processor": "wheel", "pod": "w-1"},
                     "0+60x20")],
        quiet=[series("mooncake_transactions_aborted_total", {"processor": "wheel", "pod": "w-1"},
                      "0+3x20")],
        at="16m", labels={"namespace": "default", "processor": "wheel"}),
    "MooncakeRestarting": dict(
        fire=[series("kube_pod_container_status_restarts_total",
                     {"pod": "ci-mooncake-wheel-7d9f-abcde", "container": "wheel"},
                     "0 0 1 2 3 4 5 6 7 8 9")],
        quiet=[series("kube_pod_container_status_restarts_total",
                      {"pod": "ci-mooncake-wheel-7d9f-abcde", "container": "wheel"},
                      "0 0 0 0 0 0 0 0 0 1 1"),
               series("kube_pod_container_status_restarts_total",
                      {"pod": "other-app-1", "container": "app"}, "0+5x10")],
        at="10m", labels={"namespace": "default", "pod": "ci-mooncake-wheel-7d9f-abcde"}),
    "MooncakeAlarmsDropped": dict(
        fire=[series("mooncake_alarm_dropped_dead_letters_total", {"pod": "a-1"},
                     "0 0 0 0 0 0 3 3 3 3")],
        quiet=[series("mooncake_alarm_dropped_dead_letters_total", {"pod": "a-1"},
                      "3 3 3 3 3 3 3 3 3 3"),
               # dead letters relayed and counted in alarms are no drop
               series("mooncake_alarm_dead_letters_total", {"outcome": "relayed", "pod": "a-1"},
                      "0+10x10"),
               series("mooncake_alarm_counted_dead_letters_total", {"pod": "a-1"}, "0+10x10")],
        at="8m", labels={"namespace": "default"}),
}


def rule_test(rules_file, alert, inputs, at, expect):
    return {"rule_files": [rules_file], "evaluation_interval": "1m",
            "tests": [{"interval": "1m", "input_series": inputs,
                       "alert_rule_test": [{"eval_time": at, "alertname": alert,
                                            "exp_alerts": expect}]}]}


def fired(tmp, groups, alert, inputs, at):
    """The alerts promtool sees firing (labels), or None when the run failed
    for another reason than a mismatch."""
    rules_file = os.path.join(tmp, "rules.yaml")
    with open(rules_file, "w") as f:
        yaml.safe_dump({"groups": groups}, f)
    test_file = os.path.join(tmp, "test.yaml")
    with open(test_file, "w") as f:
        yaml.safe_dump(rule_test(rules_file, alert, inputs, at, []), f)
    rc, out = promtool("test", "rules", test_file)
    if rc == 0:
        return []
    got = re.search(r"got:\s*\[(.*)\]\s*$", out, re.S)
    if not got:
        print(out)
        return None
    return [dict(re.findall(r'(\w+)="([^"]*)"', m)) for m in re.findall(r"Labels:\{([^}]*)\}",
                                                                             got.group(1))]


groups = rules()
alerts = [r["alert"] for g in groups for r in g["rules"]]
c.check(sorted(alerts) == sorted(CASES), f"the rules are {sorted(CASES)}, got {sorted(alerts)}")

# Every metric a rule reads exists (mooncake's own, or kube-state-metrics' restarts).
exported = exported_metrics()
exprs = " ".join(r["expr"] for g in groups for r in g["rules"])
used = {re.sub(r"_bucket$", "", m) for m in re.findall(r"mooncake_[a-z_]+", exprs)}
c.check(used and used <= exported, f"the rules' {len(used)} metrics all exist" +
        ("" if used <= exported else f": unknown {sorted(used - exported)}"))

with tempfile.TemporaryDirectory() as tmp:
    rules_file = os.path.join(tmp, "rules.yaml")
    with open(rules_file, "w") as f:
        yaml.safe_dump({"groups": groups}, f)
    rc, out = promtool("check", "rules", rules_file)
    c.check(rc == 0 and f"{len(CASES)} rules found" in out, f"promtool check rules: {out.strip()}")
    broken = [{"name": "x", "rules": [{"alert": "X", "expr": "sum(rate(mooncake_x[5m])"}]}]
    with open(rules_file, "w") as f:
        yaml.safe_dump({"groups": broken}, f)
    rc, out = promtool("check", "rules", rules_file)
    c.check(rc != 0, "promtool check rules refuses an expression that does not parse")

    for alert, case in CASES.items():
        got = fired(tmp, groups, alert, case["fire"], case["at"])
        want = {**case["labels"], "alertname": alert, "severity": "warning"}
        c.check(got is not None and want in got,
                f"{alert} fires on its series with {case['labels']} (got {got})")
        got = fired(tmp, groups, alert, case["quiet"], case["at"])
        c.check(got == [], f"{alert} stays quiet under its threshold (got {got})")

    # The values' thresholds reach the rules: a higher dead-letter threshold
    # silences the case that fired above, and a longer topic prefix is the one matched.
    higher = rules("--set", "prometheusRule.deadLettersPer5m=100")
    got = fired(tmp, higher, "MooncakeDeadLetters", CASES["MooncakeDeadLetters"]["fire"], "8m")
    c.check(got == [], f"prometheusRule.deadLettersPer5m=100 silences 10 dead letters (got {got})")
    # A slow alarms restore fires MooncakeSlowRestore as the store's does.
    got = fired(tmp, groups, "MooncakeSlowRestore",
                [series("mooncake_alarms_last_restore_seconds", {"pod": "a-1"}, "300x5")], "2m")
    c.check(got is not None and {"namespace": "default", "pod": "a-1", "alertname":
                                 "MooncakeSlowRestore", "severity": "warning"} in got,
            f"MooncakeSlowRestore fires on a slow alarms restore (got {got})")
    # MooncakeAlarmsDropped looks back 15 minutes: a drop 20 minutes ago no longer fires.
    got = fired(tmp, groups, "MooncakeAlarmsDropped",
                [series("mooncake_alarm_dropped_dead_letters_total", {"pod": "a-1"}, "0 3x40")],
                "21m")
    c.check(got == [], f"MooncakeAlarmsDropped is quiet 15 minutes after the last drop (got {got})")
    other = rules("--set", "kafka.topicPrefix=shop.")
    got = fired(tmp, other, "MooncakeDeadLetters", CASES["MooncakeDeadLetters"]["fire"], "8m")
    c.check(got == [], f"with topicPrefix shop. mooncake.dead is not the dead topic (got {got})")

c.exit()
