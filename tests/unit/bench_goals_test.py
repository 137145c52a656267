#!/usr/bin/env python3
"""tools/bench/bench-e2e's goals of the cost work, judged from made-up figures:
the start-up split (first 15 s of due times against the rest), each goal
met, not met, or not measured with the scenario to run named, and the floor
rule of the "due ahead" goals (judged against 1.1x the raw scheduled pipe's
p99 when that is itself above the limit), the due-now goal judged at
1,000/s and only printed at other rates, and the medians of --repeat."""
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


def floor(rate, p99, missing=0, delay=2000):
    return {"kind": "floor", "rate": rate, "delay": delay, "p50": p99 / 2, "p99": p99,
            "max": p99 * 2, "missing": missing}


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
                                           "lstar": 48.0},
              "resubmit": {"goal_met": True, "goal_probes": 38, "goal_lost": 0, "lstar": 9.0}}
    rows = be.goal_rows(results, eos, cost, cancel, 6)
    check("floor 75 µs: 1.20x" in find(rows, "mooncake CPU")[1], find(rows, "mooncake CPU"))
    bad = {g: v for g, v in verdicts(rows).items() if v != "met"}
    check(not bad, f"all met: {bad}")
    check(len(rows) == 8, f"eight goals: {rows}")
    check("38/38 won at >= 150 ms (L* 9 ms)" in find(rows, "re-submit")[1], find(rows, "re-submit"))
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
                                           "lstar": 190.0},
              "resubmit": {"goal_met": False, "goal_probes": 30, "goal_lost": 2, "lstar": 170.0}}
    rows = be.goal_rows(results, eos, cost, cancel, 12)
    for start in ("8,000/s", "5,000/s", "start-up", "mooncake CPU", "broker CPU", "cancel",
                  "re-submit", "due now at 1,000/s"):
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


def test_floor_above_limit():
    # The floor's p99 (60 ms) is above 8,000/s's 50 ms: judged against 66 ms.
    rows = be.goal_rows([steady(8000, 2000, 5, 65), floor(8000, 60)], {}, None, None, 6)
    g, text, v = find(rows, "8,000/s")
    check(v == "met (goal below the floor; <= 1.1x floor)", f"within 1.1x the floor: {v}")
    check("floor p99 60.0 ms: mooncake 1.08x the floor" in text, text)
    check(text.startswith("65.0 ms"), text)
    rows = be.goal_rows([steady(8000, 2000, 5, 67), floor(8000, 60)], {}, None, None, 6)
    g, text, v = find(rows, "8,000/s")
    check(v == "NOT met (goal below the floor; <= 1.1x floor)", f"past 1.1x the floor: {v}")
    check("mooncake 1.12x the floor" in text, text)
    # Within 1.1x the floor but a task missing: still not met.
    rows = be.goal_rows([steady(5000, 2000, 5, 25, missing=2), floor(5000, 30)], {}, None,
                        None, 6)
    g, text, v = find(rows, "5,000/s")
    check(v.startswith("NOT met (goal below the floor"), f"missing tasks: {v}")
    check("2 missing" in text and "floor p99 30.0 ms" in text, text)
    # A floor that lost tasks says so.
    rows = be.goal_rows([steady(5000, 2000, 5, 25), floor(5000, 30, missing=4)], {}, None,
                        None, 6)
    check("floor p99 30.0 ms, 4 missing: mooncake 0.83x" in find(rows, "5,000/s")[1],
          find(rows, "5,000/s"))


def test_floor_below_limit():
    # The floor (12 ms) is below 5,000/s's 20 ms: the plain limit judges.
    rows = be.goal_rows([steady(5000, 2000, 4, 19), floor(5000, 12)], {}, None, None, 6)
    g, text, v = find(rows, "5,000/s")
    check(v == "met", f"below the limit: {v}")
    check("floor p99 12.0 ms: mooncake 1.58x the floor" in text, text)
    rows = be.goal_rows([steady(5000, 2000, 4, 21), floor(5000, 19.5)], {}, None, None, 6)
    g, text, v = find(rows, "5,000/s")
    check(v == "NOT met", f"above the limit, though within 1.1x a floor below it: {v}")
    # A floor exactly at the limit is not above it.
    rows = be.goal_rows([steady(5000, 2000, 4, 21), floor(5000, 20)], {}, None, None, 6)
    check(find(rows, "5,000/s")[2] == "NOT met", find(rows, "5,000/s"))


def test_floor_not_measured():
    # No floor, or a floor at another rate only: judged and shown as before.
    for extra in ([], [floor(5000, 80)]):
        rows = be.goal_rows([steady(8000, 2000, 5, 51)] + extra, {}, None, None, 6)
        g, text, v = find(rows, "8,000/s")
        check(v == "NOT met" and text == "51.0 ms", f"without its floor: {text} {v}")
        rows = be.goal_rows([steady(8000, 2000, 5, 49)] + extra, {}, None, None, 6)
        check(verdicts(rows)[find(rows, "8,000/s")[0]] == "met", "met without a floor")
    # A floor without mooncake's run: still not measured, naming the steady scenario.
    rows = be.goal_rows([floor(8000, 60)], {}, None, None, 6)
    g, text, v = find(rows, "8,000/s")
    check(text == "-" and v.startswith("not measured (--scenarios steady"), f"{text} {v}")
    # The floor changes nothing in the other goals.
    results = [steady(8000, 2000, 5, 40), steady(5000, 2000, 4, 15), steady(1000, 0, 20, 50),
               {"kind": "startup", "startup_ratio": 1.5, "startup_p99_first": 15.0,
                "startup_p99_rest": 10.0}]
    eos = {(1000, "1"): {"p50": 20.0, "p99": 50.0}}
    a = be.goal_rows(results, eos, None, None, 6)
    b = be.goal_rows(results + [floor(8000, 30), floor(5000, 10)], eos, None, None, 6)
    check(len(a) == len(b), "as many goals with a floor as without")
    for x, y in zip(a, b):
        if x[0].startswith(("8,000/s", "5,000/s")):
            check(x[2] == y[2] and y[1].startswith(x[1] + " (floor p99 "), f"{x} / {y}")
        else:
            check(x == y, f"{x} / {y}")


def test_broker_without_jit():
    # Judged without the JIT: 1.3x without it passes though 1.7x with it.
    cost = {"mooncake": {"client_cpu_us": 90.0, "broker_cpu_us": 680.0,
                         "broker_cpu_no_jit_us": 390.0},
            "raw": {"broker_cpu_us": 400.0, "broker_cpu_no_jit_us": 300.0,
                    "client_cpu_us": 50.0}, "raw_call_cpu_us": 25.0}
    g, text, v = find(be.goal_rows([], {}, cost, None, 6), "broker CPU")
    check(v == "met" and text.startswith("1.30x (390 / 300 µs without the JIT; with it 680 / 400"),
          f"{text} {v}")
    cost["mooncake"]["broker_cpu_no_jit_us"] = 460.0
    g, text, v = find(be.goal_rows([], {}, cost, None, 6), "broker CPU")
    check(v == "NOT met", f"1.53x without the JIT: {text} {v}")


def test_cpu_floor():
    # The floor (copiers 100 + libcurl 50 = 150 µs) is above the 100 µs goal:
    # mooncake is judged against 1.1x the floor; a floor below it changes nothing.
    def cost(m_us, copiers, call):
        return {"mooncake": {"client_cpu_us": m_us, "broker_cpu_us": 100.0},
                "raw": {"broker_cpu_us": 100.0, "client_cpu_us": copiers},
                "raw_call_cpu_us": call}
    g, text, v = find(be.goal_rows([], {}, cost(160.0, 100.0, 50.0), None, 6), "mooncake CPU")
    check(v == "met (goal below the floor; <= 1.1x floor)", f"1.07x the floor: {v}")
    check(text == "160.0 µs (floor 150 µs: 1.07x)", text)
    g, text, v = find(be.goal_rows([], {}, cost(170.0, 100.0, 50.0), None, 6), "mooncake CPU")
    check(v == "NOT met (goal below the floor; <= 1.1x floor)", f"1.13x the floor: {v}")
    g, text, v = find(be.goal_rows([], {}, cost(101.0, 60.0, 30.0), None, 6), "mooncake CPU")
    check(v == "NOT met", f"floor 90 µs below the goal, 101 µs: {v}")
    g, text, v = find(be.goal_rows([], {}, cost(99.0, 60.0, 30.0), None, 6), "mooncake CPU")
    check(v == "met", f"99 µs: {v}")


def test_cpu_floor_pipe():
    # The raw pipe doing a task's work (240 µs) is the floor when it ran; the
    # cheapest parts (copiers 90 + a full-speed call 50) are shown beside it.
    cost = {"mooncake": {"client_cpu_us": 170.0, "broker_cpu_us": 100.0},
            "raw": {"broker_cpu_us": 100.0, "client_cpu_us": 90.0}, "raw_call_cpu_us": 50.0,
            "floor_pipe": {"client_cpu_us": 240.0}}
    g, text, v = find(be.goal_rows([], {}, cost, None, 6), "mooncake CPU")
    check(v == "met (goal below the floor; <= 1.1x floor)", f"0.71x the pipe: {v}")
    check(text == "170.0 µs (floor 240 µs: 0.71x; the copiers + a full-speed call 140 µs: "
          "1.21x)", text)
    cost["floor_pipe"]["client_cpu_us"] = 150.0
    g, text, v = find(be.goal_rows([], {}, cost, None, 6), "mooncake CPU")
    check(v == "NOT met (goal below the floor; <= 1.1x floor)", f"1.13x the pipe: {v}")
    # A pipe that measured nothing (no tasks in its window) falls back to the parts.
    cost["floor_pipe"]["client_cpu_us"] = float("nan")
    g, text, v = find(be.goal_rows([], {}, cost, None, 6), "mooncake CPU")
    check(text == "170.0 µs (floor 140 µs: 1.21x)" and v.startswith("NOT met"), f"{text} {v}")


def test_repeat_medians():
    # Three rounds at 5,000/s due ahead: the goal takes the medians, so one
    # round's 300 ms tail against a floor of 80 does not decide it.
    results = []
    for rnd, (m99, f99) in enumerate(((85.0, 88.0), (300.0, 80.0), (70.0, 90.0))):
        results += [dict(floor(5000, f99), round=rnd, p999=f99, max=f99),
                    dict(steady(5000, 2000, 5, m99), round=rnd, p999=m99, max=m99)]
    merged = be.median_results(results)
    check(len(merged) == 2, f"one entry per kind: {merged}")
    st = next(x for x in merged if x["kind"] == "steady")
    check(st["p99"] == 85.0 and st["rounds"] == 3, st)
    g, text, v = find(be.goal_rows(merged, {}, None, None, 6), "5,000/s due ahead")
    check(v == "met (goal below the floor; <= 1.1x floor)", f"median 85 / median 88: {v} {text}")
    # A producer that fell behind in one round of three leaves the median
    # judged; in two of three it stands, as it would for the median round.
    results[3] = dict(results[3], note="producer fell behind")
    st = next(x for x in be.median_results(results) if x["kind"] == "steady")
    check(st["note"] is None, f"one round's note of three: {st['note']}")
    results[5] = dict(results[5], note="producer fell behind")
    st = next(x for x in be.median_results(results) if x["kind"] == "steady")
    check(st["note"] == "in 2 of 3 rounds, producer fell behind", st["note"])
    g, text, v = find(be.goal_rows(be.median_results(results), {}, None, None, 6),
                      "5,000/s due ahead")
    check(v.startswith("NOT met"), f"{text} {v}")
    # A task lost in any round is lost: the worst round's missing count.
    results[3] = dict(results[3], missing=4, note=None)
    results[5] = dict(results[5], note=None)
    st = next(x for x in be.median_results(results) if x["kind"] == "steady")
    check(st["missing"] == 4, st)
    g, text, v = find(be.goal_rows(be.median_results(results), {}, None, None, 6),
                      "5,000/s due ahead")
    check(v.startswith("NOT met") and "4 missing" in text, f"{text} {v}")
    # Each pair with its floor, then the medians; a steady run without a
    # floor in its round has no pair.
    rows = be.paired_rows(results + [dict(steady(8000, 2000, 5, 60), round=0)])
    check([r[2] for r in rows] == [1, 2, 3, "median"], rows)
    check(rows[1][4] == 300.0 and rows[1][6] == 80.0, rows[1])
    check(rows[-1][3:] == (5, 85.0, 44.0, 88.0), rows[-1])
    check(be.paired_rows([steady(5000, 2000, 5, 60)]) == [], "no floor, no pairs")
    # A single run passes through unchanged.
    one = [steady(5000, 2000, 5, 60)]
    check(be.median_results(one) == one, "a single run is its own median")
    check(be.median([3.0, 1.0, 2.0, 10.0]) == 2.5 and be.median([]) != be.median([]),
          "median of an even count, and of nothing")


def hop(p50, p99, missing=0):
    return {"name": "raw exactly-once hop 1000/s, 1 producer", "kind": "raw", "rate": 1000,
            "p50": p50, "p99": p99, "p999": p99, "max": p99, "ack_p50": p50 / 2, "late": [p50],
            "ack_p99": None, "missing": missing, "duplicates": 0}


def test_median_hops():
    # A cold first round (80 ms) does not decide the hop due now is judged against.
    m = be.median_hops([hop(80.0, 180.0), hop(20.0, 60.0, missing=2), hop(22.0, 70.0)])
    check(m["p50"] == 22.0 and m["p99"] == 70.0, f"medians {m['p50']}, {m['p99']}")
    check(m["ack_p50"] == 11.0 and m["ack_p99"] is None, f"ack {m['ack_p50']}, {m['ack_p99']}")
    check(m["missing"] == 2 and m["rounds"] == 3, f"worst missing, rounds: {m}")
    check(m["name"] == "raw exactly-once hop 1000/s, 1 producer (median of 3 rounds)", m["name"])
    named = [dict(hop(20.0, 60.0), name=f"raw exactly-once hop 1000/s, 1 producer ({i}/2)",
                  base_name="raw exactly-once hop 1000/s, 1 producer") for i in (1, 2)]
    check(be.median_hops(named)["name"] ==
          "raw exactly-once hop 1000/s, 1 producer (median of 2 rounds)",
          f"a round's number is not the median's: {be.median_hops(named)['name']}")
    check(m["late"] == [22.0], f"the curve is the median round's: {m['late']}")
    one = hop(30.0, 90.0)
    check(be.median_hops([one]) is one, "one run passes through")
    # The goal takes it: 24 / 22 ms is 1.09x, met; against the cold round it would be 0.3x.
    rows = be.goal_rows([steady(1000, 0, 24.0, 75.0)], {(1000, "1"): m}, None, None, 6)
    check(find(rows, "due now at 1,000/s")[1].startswith("1.09x / 1.07x"),
          f"judged on the median: {find(rows, 'due now at 1,000/s')}")


def test_due_now_floor():
    # Raw hop p50 20, p99 50 ms at 1,000/s. A due-now floor above both: mooncake
    # is judged against 1.1x the floor's; a floor below the raw hop changes nothing.
    eos = {(1000, "1"): {"p50": 20.0, "p99": 50.0}}
    now = steady(1000, 0, 30, 100)
    fl = {"kind": "floor", "rate": 1000, "delay": 0, "p50": 28.0, "p99": 95.0, "missing": 0}
    g, text, v = find(be.goal_rows([now, fl], eos, None, None, 6), "due now at 1,000/s")
    check(v == "met (raw hop below the floor; <= 1.1x floor)", f"within 1.1x the floor: {v}")
    check(text.startswith("1.50x / 2.00x (floor p50 28.0, p99 95.0 ms: 1.07x / 1.05x)"), text)
    g, text, v = find(be.goal_rows([steady(1000, 0, 30, 110), fl], eos, None, None, 6),
                      "due now at 1,000/s")
    check(v == "NOT met (raw hop below the floor; <= 1.1x floor)", f"past 1.1x the floor: {v}")
    # Only the p99 floor is above the raw hop: the p50 is still judged against the hop.
    fl99 = dict(fl, p50=15.0)
    g, text, v = find(be.goal_rows([now, fl99], eos, None, None, 6), "due now at 1,000/s")
    check(v.startswith("NOT met"), f"p50 1.5x the raw hop: {v}")
    below = dict(fl, p50=10.0, p99=40.0)
    g, text, v = find(be.goal_rows([steady(1000, 0, 21, 54), below], eos, None, None, 6),
                      "due now at 1,000/s")
    check(v == "met", f"floor below the raw hop: {v}")
    # A due-ahead floor is not a due-now floor, and the other way round.
    g, text, v = find(be.goal_rows([now, dict(fl, delay=2000)], eos, None, None, 6),
                      "due now at 1,000/s")
    check(v == "NOT met" and "floor" not in text, f"{text} {v}")
    rows = be.goal_rows([steady(8000, 2000, 5, 65), dict(fl, rate=8000)], eos, None, None, 6)
    check("floor" not in find(rows, "8,000/s due ahead")[1], find(rows, "8,000/s due ahead"))


def test_due_now_other_rates():
    # The goal is at 1,000/s; at 5,000/s the same ratios are printed, not judged.
    eos = {(1000, "1"): {"p50": 20.0, "p99": 50.0}, (5000, "1"): {"p50": 10.0, "p99": 40.0}}
    rows = be.goal_rows([steady(5000, 0, 15, 36), steady(1000, 0, 18, 40)], eos, None, None, 6)
    g, text, v = find(rows, "due now at 1,000/s")
    check(v == "met" and text.startswith("0.90x / 0.80x"), f"the goal: {text} {v}")
    check(rows.index((g, text, v)) < rows.index(find(rows, "due now at 5,000/s")),
          "the goal comes first")
    g, text, v = find(rows, "due now at 5,000/s")
    check(text.startswith("1.50x / 0.90x") and v == "not a goal (the goal is at 1,000/s)",
          f"5,000/s printed as a figure: {g} {text} {v}")
    check("<=" not in g, f"no limit named where none is judged: {g}")
    # Without a run at 1,000/s the goal is not measured, whatever else ran.
    rows = be.goal_rows([steady(5000, 0, 15, 36)], eos, None, None, 6)
    g, text, v = find(rows, "due now at 1,000/s")
    check(v.startswith("not measured") and "--rates 1000" in v, f"{g} {v}")


if __name__ == "__main__":
    test_startup_split()
    test_nothing_ran()
    test_all_met()
    test_each_miss()
    test_due_now_without_raw()
    test_floor_above_limit()
    test_floor_below_limit()
    test_floor_not_measured()
    test_broker_without_jit()
    test_cpu_floor()
    test_cpu_floor_pipe()
    test_repeat_medians()
    test_median_hops()
    test_due_now_floor()
    test_due_now_other_rates()
    print("bench_goals_test: ok")
