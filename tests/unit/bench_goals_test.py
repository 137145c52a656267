#!/usr/bin/env python3
"""tools/bench/bench-e2e's goals of the cost work, judged from made-up figures:
the start-up split (first 15 s of due times against the rest), and each goal
met, not met, or not measured with the scenario to run named."""
import math
import sys

import bench_e2e_module

be = bench_e2e_module.load()


def check(cond, what):
    if not cond:
        sys.exit("bench_goals_test: " + what)


def steady(rate, delay, p50, p99, missing=0, note=None):
    return {"kind": "steady", "rate": rate, "delay": delay, "p50": p50, "p99": p99,
            "missing": missing, "note": note}


def verdicts(rows):
    return {g: v for g, _, v in rows}


def find(rows, start):
    hits = [r for r in rows if r[0].startswith(start)]
    check(len(hits) == 1, f"one goal starting {start!r}, got {hits}")
    return hits[0]


def test_startup_split():
    # 15 s of tasks 200 ms late then 15 s of 10 ms late, one every 10 ms.
    per_due = [(1000 + i * 10, 200.0 if i < 1500 else 10.0) for i in range(3000)]
    first, first_max, rest, r = be.startup_split(per_due)
    check(first == 200.0 and first_max == 200.0 and rest == 10.0, (first, first_max, rest))
    check(math.isclose(r, 20.0), f"ratio {r}")
    # No hiccup: the same lateness throughout is a ratio of 1.
    _, _, _, r = be.startup_split([(i * 10, 5.0) for i in range(3000)])
    check(math.isclose(r, 1.0), f"flat ratio {r}")
    # The boundary is 15 s after the first due time, not after zero.
    per_due = [(50_000 + i * 100, 100.0 if i < 150 else 1.0) for i in range(300)]
    first, _, rest, _ = be.startup_split(per_due)
    check(first == 100.0 and rest == 1.0, f"split from the first due time: {first}, {rest}")
    check(all(math.isnan(x) for x in be.startup_split([])), "nothing measured is nan")


def test_nothing_ran():
    rows = be.goal_rows([], {}, None, None, 6)
    for g, measured, v in rows:
        check(v.startswith("not measured (") and measured == "-", f"{g}: {measured} {v}")
    check("--scenarios cost" in find(rows, "mooncake CPU")[2], "names the cost scenario")
    check("--rates 8000" in find(rows, "8,000/s")[2], "names the rate to run")
    check("startup" in find(rows, "start-up")[2], "names the startup scenario")


def test_all_met():
    results = [steady(8000, 2000, 5, 40), steady(5000, 2000, 4, 15), steady(1000, 0, 20, 50),
               {"kind": "startup", "startup_ratio": 1.5, "startup_p99_first": 15.0,
                "startup_p99_rest": 10.0}]
    eos = {(1000, "1"): {"p50": 20.0, "p99": 50.0}}
    cost = {"mooncake": {"client_cpu_us": 90.0, "broker_cpu_us": 140.0},
            "raw": {"broker_cpu_us": 100.0, "client_cpu_us": 50.0}, "raw_call_cpu_us": 25.0}
    cancel = {"raw_p99": 150.0, "cancel": {"goal_met": True, "goal_probes": 40, "goal_lost": 0,
                                           "lstar": 48.0}}
    rows = be.goal_rows(results, eos, cost, cancel, 6)
    check("floor 75 µs: 1.20x" in find(rows, "mooncake CPU")[1], find(rows, "mooncake CPU"))
    bad = {g: v for g, v in verdicts(rows).items() if v != "met"}
    check(not bad, f"all met: {bad}")
    check(len(rows) == 7, f"seven goals: {rows}")
    check("1.40x" in find(rows, "broker CPU")[1], find(rows, "broker CPU"))
    check("6 partitions" in find(rows, "due now at 1,000/s")[0], "says the partitions")


def test_each_miss():
    # p99 above the limit; all within but a task missing; due now 1.2x at p99
    # only; CPU 101 µs; broker 1.51x; a cancel lost; a hiccup of 2.1x.
    results = [steady(8000, 2000, 5, 51), steady(5000, 2000, 4, 15, missing=1),
               steady(1000, 0, 20, 60),
               {"kind": "startup", "startup_ratio": 2.1, "startup_p99_first": 21.0,
                "startup_p99_rest": 10.0}]
    eos = {(1000, "1"): {"p50": 20.0, "p99": 50.0}}
    cost = {"mooncake": {"client_cpu_us": 101.0, "broker_cpu_us": 151.0},
            "raw": {"broker_cpu_us": 100.0}}
    cancel = {"raw_p99": 150.0, "cancel": {"goal_met": False, "goal_probes": 40, "goal_lost": 1,
                                           "lstar": 190.0}}
    rows = be.goal_rows(results, eos, cost, cancel, 12)
    for start in ("8,000/s", "5,000/s", "start-up", "mooncake CPU", "broker CPU", "cancel",
                  "due now at 1,000/s"):
        check(find(rows, start)[2] == "NOT met", f"{start}: {find(rows, start)}")
    check("1 missing" in find(rows, "5,000/s")[1], find(rows, "5,000/s"))
    check("1.00x / 1.20x" in find(rows, "due now")[1], find(rows, "due now"))
    # A producer that fell behind does not make a rate.
    rows = be.goal_rows([steady(8000, 2000, 5, 40, note="producer fell behind")], {}, None,
                        None, 6)
    check(find(rows, "8,000/s")[2] == "NOT met", "a rate the producer did not hold")


def test_due_now_without_raw():
    rows = be.goal_rows([steady(5000, 0, 20, 60)], {(1000, "1"): {"p50": 1, "p99": 1}}, None,
                        None, 6)
    check(find(rows, "due now at 5,000/s")[2].startswith("not measured"),
          "the raw hop at the same rate is needed")


if __name__ == "__main__":
    test_startup_split()
    test_nothing_ran()
    test_all_met()
    test_each_miss()
    test_due_now_without_raw()
    print("bench_goals_test: ok")
