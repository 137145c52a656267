#!/usr/bin/env python3
"""tools/bench/bench-e2e's scenario cost, its pure parts on made-up broker
counters: parsing BenchJmx's dump, request counts summed over versions without
the Fetch aliases, the request handlers' time from two histogram readings,
bytes per topic, the broker's CPU per thread pool (Java threads from JMX, the
JVM's own from /proc), and the per-task figures and rows of the table."""
import math
import sys

import bench_e2e_module

be = bench_e2e_module.load()

RM = "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=%s,version=%d"
LT = "kafka.network:type=RequestMetrics,name=LocalTimeMs,request=%s"
BT = "kafka.server:type=BrokerTopicMetrics,name=%s"


def check(cond, what):
    if not cond:
        sys.exit("bench_cost_test: " + what)


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def dump(requests=(), local=(), topics=(), threads=()):
    """A BenchJmx answer: requests [(kind, version, count)], local [(kind,
    count, mean)], topics [(metric, topic or None, count)], threads [(id,
    name, ns)]."""
    lines = [f"{RM % (k, v)}\tCount\t{c}\n" for k, v, c in requests]
    for k, c, m in local:
        lines += [f"{LT % k}\tCount\t{c}\n", f"{LT % k}\tMean\t{m}\n"]
    for metric, topic, c in topics:
        name = BT % metric + (f",topic={topic}" if topic else "")
        lines.append(f"{name}\tCount\t{c}\n")
    lines += [f"thread\t{i}\t{n}\t{ns}\n" for i, n, ns in threads]
    return lines


def test_parse():
    d = be.parse_jmx_dump(dump(requests=[("Produce", 9, 12)], threads=[(7, "main", 5000)])
                          + ["java.lang:type=Runtime\tPid\t4242\n"])
    check(d["mbeans"][(RM % ("Produce", 9), "Count")] == 12.0, "a counter")
    check(d["mbeans"][("java.lang:type=Runtime", "Pid")] == 4242, "the pid")
    check(d["threads"] == {7: ("main", 5000)}, f"a thread: {d['threads']}")
    check(be.parse_object_name("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,"
                               "topic=a.b") ==
          ("kafka.server", {"type": "BrokerTopicMetrics", "name": "BytesInPerSec",
                            "topic": "a.b"}), "an object name")
    try:
        be.parse_jmx_dump(["BenchJmx: something else\n"])
    except ValueError:
        pass
    else:
        check(False, "a line of another shape is refused")


def test_requests():
    before = be.parse_jmx_dump(dump(requests=[("Produce", 9, 100), ("Produce", 10, 5),
                                              ("Fetch", 16, 50), ("FetchConsumer", 16, 50),
                                              ("EndTxn", 4, 7)]))["mbeans"]
    after = be.parse_jmx_dump(dump(requests=[("Produce", 9, 130), ("Produce", 10, 25),
                                             ("Fetch", 16, 80), ("FetchConsumer", 16, 80),
                                             ("EndTxn", 4, 7), ("WriteTxnMarkers", 1, 4)]))
    q = be.request_counts(before, after["mbeans"])
    # Produce: 30 + 20 over two versions; Fetch once, not again as FetchConsumer;
    # WriteTxnMarkers appeared in between (counts from 0); EndTxn did not move.
    check(q == {"Produce": 50.0, "Fetch": 30.0, "EndTxn": 0.0, "WriteTxnMarkers": 4.0},
          f"request counts: {q}")


def test_local_time():
    before = be.parse_jmx_dump(dump(local=[("Produce", 100, 2.0), ("FetchConsumer", 10, 1.0)]))
    after = be.parse_jmx_dump(dump(local=[("Produce", 300, 3.0), ("FetchConsumer", 20, 1.0),
                                          ("EndTxn", 4, 0.5)]))
    t = be.local_time_ms(before["mbeans"], after["mbeans"])
    # 300 x 3.0 - 100 x 2.0 = 700 ms of Produce; EndTxn new: 2 ms; no alias.
    check(close(t["Produce"], 700.0) and close(t["EndTxn"], 2.0) and "FetchConsumer" not in t,
          f"handler time: {t}")
    # A kind with no new requests spent no time, though its Mean came back a
    # float hair apart.
    before = be.parse_jmx_dump(dump(local=[("Heartbeat", 7, 0.1)]))
    after = be.parse_jmx_dump(dump(local=[("Heartbeat", 7, 0.09999999999999999)]))
    t = be.local_time_ms(before["mbeans"], after["mbeans"])
    check(t["Heartbeat"] == 0.0, f"an idle kind: {t}")


def test_topics_and_threads():
    b = be.parse_jmx_dump(dump(topics=[("BytesInPerSec", None, 1000),
                                       ("BytesInPerSec", "p.tasks", 600),
                                       ("BytesOutPerSec", None, 10)]))["mbeans"]
    a = be.parse_jmx_dump(dump(topics=[("BytesInPerSec", None, 5000),
                                       ("BytesInPerSec", "p.tasks", 2600),
                                       ("BytesInPerSec", "p.wheel", 1400),
                                       ("BytesOutPerSec", None, 99)]))["mbeans"]
    total, per = be.topic_counter(b, a, "BytesInPerSec")
    check(total == 4000 and per == {"p.tasks": 2000, "p.wheel": 1400},
          f"bytes in: {total} {per}")
    check(be.topic_counter(b, a, "BytesOutPerSec") == (89, {}), "bytes out")
    check(be.thread_group("data-plane-kafka-request-handler-3")
          == "data-plane-kafka-request-handler-N", "a pool's name")
    t = be.thread_cpu_s({1: ("data-plane-kafka-request-handler-0", 1_000_000_000),
                         2: ("data-plane-kafka-request-handler-1", 0),
                         3: ("gone", 5_000_000_000)},
                        {1: ("data-plane-kafka-request-handler-0", 1_500_000_000),
                         2: ("data-plane-kafka-request-handler-1", 250_000_000),
                         4: ("TxnMarkerSenderThread-1", 100_000_000)})
    check(close(t["data-plane-kafka-request-handler-N"], 0.75)
          and close(t["TxnMarkerSenderThread-N"], 0.1) and len(t) == 2,
          f"thread pools: {t}")
    check(be.jvm_thread_group("C2 CompilerThre") == be.JIT
          and be.jvm_thread_group("GC Thread#1") == "JVM: G1 garbage collector"
          and be.jvm_thread_group("data-plane-kafk") is None, "the JVM's threads")
    j = be.proc_thread_cpu_s({10: ("C2 CompilerThre", 4.0), 11: ("G1 Conc#0", 1.0)},
                             {10: ("C2 CompilerThre", 4.5), 11: ("G1 Conc#0", 1.25),
                              12: ("C1 CompilerThre", 0.25), 13: ("data-plane-kafk", 9.0)})
    check(close(j[be.JIT], 0.75) and close(j["JVM: G1 garbage collector"], 0.25)
          and len(j) == 2, f"JVM pools: {j}")


def test_committed_by_role():
    text = ("# TYPE mooncake_transactions_committed_total counter\n"
            'mooncake_transactions_committed_total{processor="router"} 116\n'
            'mooncake_transactions_aborted_total{processor="router"} 3\n'
            'mooncake_transactions_committed_total{processor="wheel"} 2.66e+02\n')
    c = be.committed_by_role(text)
    check(c == {"router": 116.0, "wheel": 266.0}, f"transactions by role: {c}")


def snapshot(t, broker_cpu, client_cpu, lines, proc):
    return {"t": t, "broker_cpu": broker_cpu, "client_cpu": client_cpu,
            "jmx": be.parse_jmx_dump(lines), "threads": proc}


def test_figures_and_rows():
    s0 = snapshot(100.0, 50.0, 20.0,
                  dump(requests=[("Produce", 9, 1000), ("Heartbeat", 4, 10)],
                       topics=[("MessagesInPerSec", "p.tasks", 500),
                               ("MessagesInPerSec", None, 800),
                               ("BytesInPerSec", None, 0), ("BytesOutPerSec", None, 0),
                               ("BytesOutPerSec", "p.wheel", 1000)],
                       threads=[(1, "data-plane-kafka-request-handler-0", 0)]),
                  {9: ("C2 CompilerThre", 1.0)})
    s1 = snapshot(110.0, 52.0, 20.5,
                  dump(requests=[("Produce", 9, 3000), ("Heartbeat", 4, 30),
                                 ("Metadata", 12, 5)],
                       topics=[("MessagesInPerSec", "p.tasks", 1500),
                               ("MessagesInPerSec", None, 4800),
                               ("BytesInPerSec", None, 200_000),
                               ("BytesOutPerSec", None, 100_000),
                               ("BytesOutPerSec", "p.wheel", 51_000)],
                       threads=[(1, "data-plane-kafka-request-handler-0", 1_000_000_000)]),
                  {9: ("C2 CompilerThre", 1.5)})
    f = be.cost_figures(s0, s1, "p.tasks", ["p."])
    # 1000 tasks into p.tasks; 2 s of broker CPU of which 0.5 s JIT, 1 s in a
    # handler, 0.5 s elsewhere; 0.5 s of client CPU.
    check(f["tasks"] == 1000 and close(f["window_s"], 10.0), f"tasks: {f['tasks']}")
    check(close(f["broker_cpu_us"], 2000) and close(f["broker_cpu_no_jit_us"], 1500)
          and close(f["client_cpu_us"], 500), f"CPU: {f}")
    check(close(f["bytes_in"], 200) and close(f["bytes_out"], 100)
          and close(f["messages_in"], 4.0), f"bytes: {f}")
    check(f["requests"] == {"Produce": 2.0, "Heartbeat": 0.02, "Metadata": 0.005},
          f"requests: {f['requests']}")
    check(f["messages_in_topics"] == {"tasks": 1.0} and f["bytes_out_topics"] == {"wheel": 50.0},
          f"per topic: {f['messages_in_topics']} {f['bytes_out_topics']}")
    th = f["broker_threads_us"]
    check(close(th["data-plane-kafka-request-handler-N"], 1000) and close(th[be.JIT], 500)
          and close(th["(other threads, and Java threads that ended)"], 500),
          f"threads: {th}")
    # The raw side: half of everything, so every ratio is 2.00 (and "-"
    # where the raw figure is 0).
    r = {k: (v / 2 if isinstance(v, float) else v) for k, v in f.items()}
    r["requests"] = {k: v / 2 for k, v in f["requests"].items() if k != "Metadata"}
    rows = {row[0]: row[1:] for row in be.cost_rows(f, r)}
    check(rows["broker CPU µs"] == ("2,000", "1,000", "2.00"), f"CPU row: {rows}")
    check(rows["Produce requests"] == ("2", "1", "2.00"), f"Produce row: {rows}")
    check(rows["EndTxn requests"] == ("0", "0", "-"), f"EndTxn row: {rows}")
    # other: Heartbeat + Metadata, against Heartbeat alone on the raw side.
    check(rows["other requests"] == ("0.025", "0.01", "2.50"), f"other row: {rows}")
    check(rows["all requests"] == ("2.02", "1.01", "2.00"), f"all row: {rows}")
    b = be.breakdown_rows(f, r, "requests", top=1)
    check(b == [("Produce", "2", "1", "2.00"), ("2 more", "0.025", "0.01", "2.50")],
          f"breakdown: {b}")
    lines = be.format_rows("title", [("x", "1", "22", "0.05")], "raw 3-hop")
    check(lines[0].split() == ["title", "mooncake", "raw", "3-hop", "ratio"]
          and lines[1].endswith(" 0.05") and len({len(x) for x in lines}) == 1,
          f"table: {lines}")


def test_no_tasks():
    s = snapshot(1.0, 1.0, 1.0, dump(), {})
    f = be.cost_figures(s, dict(s, t=2.0), "p.tasks")
    check(f["tasks"] == 0 and f["broker_cpu_us"] != f["broker_cpu_us"],
          "no task: the figures are NaN, not a division by zero")
    check(be.cost_rows(f, f)[0] == ("broker CPU µs", "-", "-", "-"), "NaN rows")


def main():
    test_parse()
    test_requests()
    test_local_time()
    test_topics_and_threads()
    test_figures_and_rows()
    test_committed_by_role()
    test_no_tasks()
    print("bench_cost_test: ok")


if __name__ == "__main__":
    main()
