#!/usr/bin/env python3
"""bench-e2e's cancel window (tools/bench/bench-e2e --scenarios cancel), on made-up
probes: the ack lead buckets count each probe once, in the bucket its lead falls in
(edges belong to the bucket above); L* is the smallest observed lead above every lost
one (None when the largest lead lost); the goal holds only when every probe acked at
least the raw hop's p99 before its due time won, and at least one did; and the analysis
of probes against the sink's calls tells won from lost by the first version's due time
(a call of the re-submitted version is no loss) and gives each loss its times."""
import math
import sys

import bench_e2e_module


failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def buckets_checks(b):
    rows = b.lead_buckets([(-3.0, False), (0.0, True), (24.9, True), (25.0, False),
                           (199.99, True), (200.0, True), (299.0, True), (300.0, True),
                           (1000.0, True)])
    labels = [r[0] for r in rows]
    check(labels == ["<0", "0-25", "25-50", "50-75", "75-100", "100-150", "150-200",
                     "200-300", "300-500", "500-1000", "1000-2000", ">=2000"],
          f"buckets: the labels: {labels}")
    got = {r[0]: r[1:] for r in rows}
    check(got["<0"] == (1, 0, 1), f"buckets: a negative lead, lost: {got['<0']}")
    check(got["0-25"] == (2, 2, 0), f"buckets: 0 and 24.9 in 0-25: {got['0-25']}")
    check(got["25-50"] == (1, 0, 1), f"buckets: 25 goes above its edge: {got['25-50']}")
    check(got["150-200"] == (1, 1, 0) and got["200-300"] == (2, 2, 0),
          f"buckets: 199.99 below 200, 200 above: {got['150-200']} {got['200-300']}")
    check(got["300-500"] == (1, 1, 0) and got["500-1000"] == (0, 0, 0)
          and got["1000-2000"] == (1, 1, 0) and got[">=2000"] == (0, 0, 0),
          f"buckets: 300 and more: {rows[8:]}")
    check(sum(r[1] for r in rows) == 9 and all(r[1] == r[2] + r[3] for r in rows),
          "buckets: every probe counted once, won + lost = probes")
    check(b.lead_buckets([]) == [(lab, 0, 0, 0) for lab in labels], "buckets: no probes")
    rows = b.lead_buckets([(5.0, True), (15.0, False)], edges=(10,))
    check(rows == [("<10", 1, 1, 0), (">=10", 1, 0, 1)], f"buckets: other edges: {rows}")


def threshold_checks(b):
    check(b.cancel_threshold([(10.0, True), (50.0, True), (5.0, True)]) == (5.0, 3),
          "L*: none lost: the smallest lead, every probe at or above it")
    probes = [(-5.0, False), (10.0, True), (20.0, False), (30.0, True), (45.0, True)]
    check(b.cancel_threshold(probes) == (30.0, 2),
          f"L*: above the largest lost lead: {b.cancel_threshold(probes)}")
    check(b.cancel_threshold([(20.0, True), (20.0, False), (25.0, True)]) == (25.0, 1),
          "L*: a win at the lead of a loss is not above it")
    check(b.cancel_threshold([(10.0, True), (90.0, False)]) == (None, 0),
          "L*: none when the largest lead lost")
    check(b.cancel_threshold([]) == (None, 0), "L*: no probes")


def goal_checks(b):
    probes = [(5.0, False), (40.0, True), (60.0, True)]
    check(b.cancel_goal(probes, 40.0) == (True, 2, 0), "goal: met at the raw p99 itself")
    check(b.cancel_goal(probes, 4.0) == (False, 3, 1), "goal: a loss above the raw p99")
    check(b.cancel_goal(probes, 61.0) == (False, 0, 0), "goal: no probe to show it")
    check(b.cancel_goal(probes, float("nan"))[0] is False, "goal: no raw figure")


def analysis_checks(b):
    due = 1_000_000

    def probe(i, kind, ack_lead, **kw):
        pr = {"id": i, "kind": kind, "lead_plan": ack_lead + 5, "ahead": 2000, "due": due + i,
              "submit_at": due + i - 2000.0, "submit_ack": due + i - 1990.0}
        if kind != "control":
            pr.update(follow_at=due + i - ack_lead - 5, follow_ack=due + i - ack_lead)
        pr.update(kw)
        return pr

    probes = [probe(0, "cancel", 100.0), probe(1, "resubmit", 120.0),
              probe(2, "cancel", 3.0), probe(3, "resubmit", 10.0),
              probe(4, "control", 0), probe(5, "cancel", 50.0, follow_err="timed out"),
              probe(6, "cancel", 40.0), probe(7, "control", 0)]
    calls = [(2, due + 2, due + 2 + 1.5),            # probe 2 lost
             (3, due + 3 + 60000, due + 3 + 0.5),    # the re-submitted version: no loss
             (4, due + 4, due + 4 + 0.8),            # a control called
             (4, due + 4, due + 4 + 9.0)]            # ... twice: its first call counts
    cw = b.cancel_analysis(probes, calls, 20.0)
    c, r, k = cw["cancel"], cw["resubmit"], cw["control"]
    check((c["probes"], c["won"], c["lost"], c["excluded"]) == (4, 2, 1, 1),
          f"analysis: cancels won / lost / not acknowledged: {c['won']} {c['lost']} "
          f"{c['excluded']}")
    check((r["won"], r["lost"]) == (2, 0), f"analysis: re-submits: {r['won']} {r['lost']}")
    check(cw["other_calls"] == 1, f"analysis: a call of a re-submit: {cw['other_calls']}")
    check(c["lstar"] == 40.0 and c["lstar_probes"] == 2, f"analysis: cancels' L* {c['lstar']}")
    check(c["goal_met"] and c["goal_probes"] == 2, "analysis: cancels' goal met at 20 ms")
    lost = c["lost_probes"]
    check(len(lost) == 1 and lost[0]["id"] == 2 and math.isclose(lost[0]["ack_lead"], 3.0)
          and math.isclose(lost[0]["called"], 1.5) and math.isclose(lost[0]["acked"], -3.0)
          and math.isclose(lost[0]["sent"], -8.0), f"analysis: the lost probe's times {lost}")
    check(k["probes"] == 2 and k["called"] == 1 and math.isclose(k["late_max"], 0.8),
          f"analysis: controls called {k['called']} of {k['probes']}, max {k['late_max']}")
    cw = b.cancel_analysis(probes, calls, 2.0)
    check(not cw["cancel"]["goal_met"] and cw["cancel"]["goal_lost"] == 1,
          "analysis: the loss at 3 ms fails a 2 ms goal")


def main():
    b = bench_e2e_module.load()
    buckets_checks(b)
    threshold_checks(b)
    goal_checks(b)
    analysis_checks(b)
    print("bench_cancel_window_test:", "all checks passed" if not failures
          else f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
