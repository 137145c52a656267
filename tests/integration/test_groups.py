"""Endpoint groups and admission limits on the real broker, around the executor: what
the gateway and mooncakectl write to <prefix>endpoints and what the gateway's endpoint
table reads back.

1. Groups and limits through the API: put, list, replace, delete; 400s naming the
   field; a token of another app is refused; limits need the admin token.
2. The same through mooncakectl (groups/limits put, list, delete), read back by the
   gateway and by mooncakectl itself.
3. A task and a job naming a group: the gateway accepts callback.group/path/strategy
   and GET /api/task shows them back; a bad group or strategy is a 400 naming the field.
4. Members from DNS: a tiny DNS server on 127.0.0.1 (a random port) answers for
   billing.mooncake.test; the gateway resolves through it (--endpoints-dns-server)
   every 300 ms; GET /groups follows the answers as they change, keeps the last ones
   while the server fails (SERVFAIL), and empties them on NXDOMAIN. No traffic leaves
   the machine.

Run one test: python3 test_groups.py NAME [NAME...]."""
import http.client
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

from harness import BOOTSTRAP, MOONCAKE_BIN, Env, picked, run

SHOP = "shop-token-0123456789"
OTHER = "other-token-0123456789"
ADMIN = "admin-token-0123456789"
TMP = tempfile.mkdtemp(prefix="mooncake-groups-")
TOKEN_FILE = os.path.join(TMP, "app-tokens")
with open(TOKEN_FILE, "w") as f:
    f.write(f"shop={SHOP}\nother={OTHER}\n")
AUTH = ("--app-tokens", "@" + TOKEN_FILE, "--admin-tokens", ADMIN)
CTL = os.environ.get("MOONCAKECTL_BIN") or os.path.join(
    os.path.dirname(os.path.abspath(MOONCAKE_BIN)), "mooncakectl")


def req(port, method, path, body=None, token=SHOP):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    h = {"Authorization": "Bearer " + token} if token else {}
    if body is not None:
        h["Content-Type"] = "application/json"
    try:
        c.request(method, path, body=None if body is None else json.dumps(body), headers=h)
        r = c.getresponse()
        data = json.loads(r.read() or b"null")
        # The gateway's envelope {code, msg, data}: data when it succeeded, else msg.
        if isinstance(data, dict) and "code" in data:
            data = data.get("data") if r.status == 200 else {"error": data.get("msg")}
        return r.status, data
    finally:
        c.close()


def start(env, *args, roles="gateway", **kw):
    env.endpoints_topic()
    return env.start(roles, *AUTH, *args, **kw).http_port


def eventually(what, fn, timeout=15):
    """Polls fn until it returns a true value; fails with the last value."""
    deadline, last = time.time() + timeout, None
    while time.time() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"{what}: still {last!r} after {timeout}s")


def groups(port, app="shop", name=None, token=SHOP):
    q = f"/groups?appId={app}" + (f"&name={name}" if name else "")
    status, body = req(port, "GET", q, token=token)
    return body["groups"] if status == 200 else (status, body)


def group_of(port, name):
    got = groups(port)
    return next((g for g in got if g["name"] == name), None) if isinstance(got, list) else None


def ctl(*args, prefix, expect=0):
    p = subprocess.run([CTL, "-b", BOOTSTRAP, "-p", prefix, *args], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == expect, f"{args}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    for needle in ("runtime error:", "Sanitizer"):  # under an ASan/UBSan build
        assert needle not in p.stderr, f"sanitizer report from {args}:\n{p.stderr}"
    return p


def _endpoints_topic(self):
    """The endpoints topic (Env creates the task topics only)."""
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    fs = admin.create_topics([NewTopic(self.topic("endpoints"), num_partitions=1,
                                       replication_factor=1,
                                       config={"cleanup.policy": "compact"})])
    for f in fs.values():
        try:
            f.result()
        except Exception as e:  # made already by an earlier start
            assert "TOPIC_ALREADY_EXISTS" in str(e), e


Env.endpoints_topic = _endpoints_topic


# ---- a tiny DNS server ---------------------------------------------------------------------

class DnsServer:
    """Answers A queries for the names in self.names (name -> list of IPv4), NOERROR
    without records for their other types, NXDOMAIN for any other name; SERVFAIL for
    everything while self.failing. Counts the queries per name."""

    def __init__(self):
        self.names, self.failing, self.queries = {}, False, {}
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stop = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stop:
            try:
                data, peer = self.sock.recvfrom(4096)
            except socket.timeout:
                continue
            try:
                self.sock.sendto(self.answer(data), peer)
            except Exception:
                pass

    def answer(self, q):
        qid, flags = struct.unpack(">HH", q[:4])
        labels, i = [], 12
        while q[i]:
            labels.append(q[i + 1:i + 1 + q[i]].decode().lower())
            i += 1 + q[i]
        qtype = struct.unpack(">H", q[i + 1:i + 3])[0]
        question = q[12:i + 5]
        name = ".".join(labels)
        self.queries[name] = self.queries.get(name, 0) + 1
        rd = flags & 0x0100
        if self.failing:
            return struct.pack(">HHHHHH", qid, 0x8080 | rd | 2, 1, 0, 0, 0) + question
        if name not in self.names:
            return struct.pack(">HHHHHH", qid, 0x8480 | rd | 3, 1, 0, 0, 0) + question
        addrs = self.names[name] if qtype == 1 else []
        out = struct.pack(">HHHHHH", qid, 0x8480 | rd, 1, len(addrs), 0, 0) + question
        for a in addrs:
            out += struct.pack(">HHHIH", 0xC00C, 1, 1, 5, 4) + socket.inet_aton(a)
        return out

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


# ---- the tests -------------------------------------------------------------------------------

def test_groups_and_limits_through_the_api():
    env = Env(partitions=2)
    try:
        port = start(env)
        body = {"appId": "shop", "name": "billing",
                "members": ["http://10.0.0.2:8080/api/", "https://b.example.com"],
                "strategy": "FAILOVER", "memberConcurrency": 4}
        status, got = req(port, "POST", "/groups", body)
        assert status == 200 and got == {"key": "group/shop/billing", "deleted": False}, got
        g = eventually("the group listed", lambda: group_of(port, "billing"))
        assert g["members"] == ["http://10.0.0.2:8080/api", "https://b.example.com"], g
        assert g["dns"] == [] and g["resolved"] == [] and g["strategy"] == "FAILOVER", g
        assert g["memberConcurrency"] == 4 and g["unhealthyMs"] == 10000, g
        # Replaced; the defaults apply to what the new body leaves out.
        status, _ = req(port, "POST", "/groups", {"appId": "shop", "name": "billing",
                                                  "members": ["http://10.0.0.3"]})
        assert status == 200
        g = eventually("the group replaced",
                       lambda: (lambda g: g if g and g["members"] == ["http://10.0.0.3"]
                                else None)(group_of(port, "billing")))
        assert g["strategy"] == "ROUND_ROBIN" and g["memberConcurrency"] == 0, g
        # One group by name; another app's group is not shown, nor reachable.
        status, _ = req(port, "POST", "/groups", {"appId": "other", "name": "x",
                                                  "members": ["http://10.0.0.9"]}, token=OTHER)
        assert status == 200
        eventually("other's group", lambda: groups(port, "other", token=OTHER))
        assert [g["name"] for g in groups(port, name="billing")] == ["billing"]
        assert groups(port, name="nope")[0] == 404
        assert all(g["appId"] == "shop" for g in groups(port))
        assert groups(port, "other")[0] == 403
        status, got = req(port, "POST", "/groups", {"appId": "other", "name": "y",
                                                    "members": ["http://10.0.0.9"]})
        assert status == 403 and "appId 'other'" in got["error"], got
        # 400s name the field.
        bad = [({"appId": "shop", "name": "a/b", "members": ["http://x"]}, "name 'a/b'"),
               ({"appId": "shop", "name": "g"}, "members and dns are both empty"),
               ({"appId": "shop", "name": "g", "members": ["ftp://x"]},
                "members[0] 'ftp://x' is not http:// or https://"),
               ({"appId": "shop", "name": "g", "members": ["http://x/?q=1"]},
                "members[0] 'http://x/?q=1' has a query"),
               ({"appId": "shop", "name": "g", "dns": ["http://u:p@x"]}, "dns[0] "),
               ({"appId": "shop", "name": "g", "members": ["http://x"], "strategy": "ROUND"},
                "strategy 'ROUND' is not one of"),
               ({"appId": "shop", "name": "g", "members": ["http://x"], "unhealthyMs": -1},
                "unhealthyMs"),
               ({"appId": "shop", "name": "g", "members": ["http://x%d" % i for i in range(65)]},
                "members has 65 URLs"),
               ({"appId": "shop", "name": "g", "members": ["http://x%d" % i for i in range(40)],
                 "dns": ["http://y%d" % i for i in range(30)]}, "more than 64")]
        for b, needle in bad:
            status, got = req(port, "POST", "/groups", b)
            assert status == 400 and needle in got["error"], (b, status, got)
        # Delete: a tombstone; gone from the list.
        status, got = req(port, "POST", "/groups/delete", {"appId": "shop", "name": "billing"})
        assert status == 200 and got == {"key": "group/shop/billing", "deleted": True}, got
        eventually("the group gone", lambda: groups(port) == [])

        # Limits: admin only; host lower-cased, no port; one bound at least.
        lim = {"scope": "host", "name": "API.Example.com", "maxConcurrent": 50,
               "maxPerSecond": 2000.5}
        status, got = req(port, "POST", "/limits", lim)
        assert status == 403 and "admin token" in got["error"], got
        assert req(port, "GET", "/limits")[0] == 403
        status, got = req(port, "POST", "/limits", lim, token=ADMIN)
        assert status == 200 and got["key"] == "limit/host/api.example.com", got
        status, _ = req(port, "POST", "/limits", {"scope": "app", "name": "shop",
                                                  "maxPerSecond": 10}, token=ADMIN)
        assert status == 200
        lims = eventually("two limits", lambda: (lambda s, b: b["limits"] if s == 200 and
                                                 len(b["limits"]) == 2 else None)(
            *req(port, "GET", "/limits", token=ADMIN)))
        assert lims[0]["scope"] == "app" and lims[0]["maxConcurrent"] == 0, lims
        assert lims[1] == {"scope": "host", "name": "api.example.com", "maxConcurrent": 50,
                           "maxPerSecond": 2000.5, "updatedAt": lims[1]["updatedAt"]}, lims
        for b, needle in [({"scope": "host", "name": "h:8080", "maxConcurrent": 1}, "has a port"),
                          ({"scope": "zone", "name": "h", "maxConcurrent": 1}, "scope 'zone'"),
                          ({"scope": "host", "name": "h"}, "both 0"),
                          ({"scope": "host", "name": "h", "maxPerSecond": "x"}, "maxPerSecond"),
                          ({"scope": "host", "name": "h", "maxConcurrent": -1}, "maxConcurrent"),
                          ({"scope": "host", "name": "h", "maxPerSecond": 0.5}, "below 1")]:
            status, got = req(port, "POST", "/limits", b, token=ADMIN)
            assert status == 400 and needle in got["error"], (b, status, got)
        status, _ = req(port, "POST", "/limits/delete", {"scope": "app", "name": "shop"},
                        token=ADMIN)
        assert status == 200
        eventually("one limit left", lambda: len(req(port, "GET", "/limits",
                                                     token=ADMIN)[1]["limits"]) == 1)
        # An IPv6 host is kept in brackets, as the URLs called spell it.
        status, got = req(port, "POST", "/limits", {"scope": "host", "name": "FD00::1",
                                                    "maxConcurrent": 1}, token=ADMIN)
        assert status == 200 and got["key"] == "limit/host/[fd00::1]", got
        # What was written: keyed records in the compacted topic, tombstones for deletes.
        recs = env.read_all("endpoints", idle=1.0)
        keys = [(m.key().decode(), m.value() is None) for m in recs]
        assert ("group/shop/billing", True) in keys and ("limit/app/shop", True) in keys, keys
        assert all(m.partition() == 0 for m in recs)
    finally:
        env.stop_all()


def test_mooncakectl_groups_and_limits():
    env = Env(partitions=2)
    try:
        port = start(env)
        p = env.prefix
        out = ctl("groups", "put", "--app", "shop", "--name", "pay", "--member",
                  "http://10.0.0.5:81/", "--dns", "http://pay.svc.cluster.local:8080",
                  "--strategy", "CONSISTENT_HASH", "--unhealthy-ms", "2500", prefix=p)
        assert "put group/shop/pay" in out.stdout, out.stdout
        g = eventually("the gateway reads mooncakectl's group", lambda: group_of(port, "pay"))
        assert g["members"] == ["http://10.0.0.5:81"] and g["unhealthyMs"] == 2500, g
        assert g["dns"] == ["http://pay.svc.cluster.local:8080"], g
        with open(os.path.join(TMP, "g.json"), "w") as f:
            json.dump({"appId": "shop", "name": "audit", "members": ["https://a.example.com"]}, f)
        ctl("groups", "put", "-f", os.path.join(TMP, "g.json"), prefix=p)
        rows = [json.loads(x) for x in ctl("-J", "groups", "list", "--app", "shop",
                                           prefix=p).stdout.splitlines()]
        assert [r["name"] for r in rows] == ["audit", "pay"], rows
        assert rows[1]["strategy"] == "CONSISTENT_HASH", rows
        table = ctl("groups", "list", prefix=p).stdout
        assert "pay" in table and "CONSISTENT_HASH" in table, table
        bad = ctl("groups", "put", "--app", "shop", "--name", "x", "--member", "ftp://x",
                  prefix=p, expect=2)
        assert "members[0] 'ftp://x' is not http:// or https://" in bad.stderr, bad.stderr
        ctl("groups", "delete", "--app", "shop", "--name", "pay", prefix=p)
        rows = ctl("-J", "groups", "list", prefix=p).stdout.splitlines()
        assert [json.loads(x)["name"] for x in rows] == ["audit"], rows
        eventually("the gateway sees the delete", lambda: group_of(port, "pay") is None)

        ctl("limits", "put", "--scope", "host", "--name", "Api.Example.com",
            "--max-concurrent", "50", "--max-per-second", "2000", prefix=p)
        rows = [json.loads(x) for x in ctl("-J", "limits", "list", prefix=p).stdout.splitlines()]
        assert len(rows) == 1 and rows[0]["name"] == "api.example.com", rows
        assert rows[0]["maxConcurrent"] == 50 and rows[0]["maxPerSecond"] == 2000, rows
        bad = ctl("limits", "put", "--scope", "host", "--name", "h", prefix=p, expect=2)
        assert "both 0" in bad.stderr, bad.stderr
        ctl("limits", "delete", "--scope", "host", "--name", "api.example.com", prefix=p)
        assert ctl("-J", "limits", "list", prefix=p).stdout == ""
        # submit --group: the url and metadata the task carries.
        out = ctl("-J", "submit", "--app", "shop", "--id", "g1", "--in", "1h", "--group", "audit",
                  "--path", "/run?x=1", "--strategy", "RANDOM", prefix=p)
        assert "shop/g1" in out.stdout, out.stdout
        bad = ctl("submit", "--app", "shop", "--in", "1h", "--group", "audit", "--strategy",
                  "SOMETIMES", prefix=p, expect=2)
        assert "--strategy 'SOMETIMES' is not one of" in bad.stderr, bad.stderr
        bad = ctl("submit", "--app", "shop", "--in", "1h", "--url", "http://x", "--strategy",
                  "FIRST", prefix=p, expect=2)
        assert "--strategy is for a group" in bad.stderr, bad.stderr
        # mooncakectl results shows the member a Result names (version 4), none before.
        from harness import decode, encode
        res = {"app_id": "shop", "task_id": "r1", "attempt": 1, "due_at": 1, "started_at": 2,
               "finished_at": 3, "http_status": 200, "outcome": "SUCCEEDED", "error": "",
               "version": 7, "response_headers": {}, "response_body": b"", "response_size": 0}
        env.produce("results", b"shop/r1", encode("Result", {**res, "member": "http://m1:80"}))
        env.produce("results", b"shop/r1", encode("Result", {**res, "attempt": 2}, version=3))
        env.flush()
        rows = [json.loads(x) for x in ctl("-J", "results", "-k", "shop/r1",
                                           prefix=p).stdout.splitlines()]
        assert [(r["attempt"], r["member"]) for r in rows] == [(1, "http://m1:80"), (2, None)], rows
        assert "| member http://m1:80" in ctl("results", "-k", "shop/r1", prefix=p).stdout
        cmds = [decode("Command", m.value())["payload"] for m in env.read_all("tasks", expect=1)]
        t = cmds[0][1]["task"]
        assert t["callback"]["url"] == "group://audit/run?x=1", t
        assert t["metadata"] == {"mooncake.route": "RANDOM"}, t
    finally:
        env.stop_all()


def test_tasks_and_jobs_name_groups():
    env = Env(partitions=2)
    try:
        env.start("jobs", instance="j")
        port = start(env, roles="gateway,view")
        body = {"appId": "shop", "uuid": "t1", "delayMs": 3_600_000,
                "callback": {"group": "billing", "path": "/charge?x=1", "strategy": "ROUND_ROBIN",
                             "body": "{}"},
                "metadata": {"k": "v"}}
        status, got = req(port, "POST", "/submit", body)
        assert status == 200, got

        status, t = req(port, "GET", "/api/task?appId=shop&uuid=t1")
        assert status == 200, t
        assert t["callback"]["group"] == "billing" and t["callback"]["path"] == "/charge?x=1", t
        assert t["callback"]["strategy"] == "ROUND_ROBIN" and "url" not in t["callback"], t
        assert t["metadata"] == {"k": "v"}, t
        for b, needle in [
                ({"callback": {"group": "billing", "url": "http://x"}},
                 "callback.url or callback.group, not both"),
                ({"callback": {"group": "bad name"}}, "callback.group 'bad name'"),
                ({"callback": {"group": "g", "strategy": "SOMETIMES"}},
                 "callback.strategy 'SOMETIMES' is not one of"),
                ({"callback": {"url": "http://x"}, "metadata": {"mooncake.member": "http://y"}},
                 "metadata.mooncake.member is reserved"),
                ({"callback": {"url": "http://x"}, "metadata": {"mooncake.route": "FIRST"}},
                 "metadata.mooncake.route is reserved"),
                ({"callback": {"url": "group://bad name/x"}}, "does not name a group")]:
            status, got = req(port, "POST", "/submit", {"appId": "shop", "delayMs": 1000, **b})
            assert status == 400 and needle in got["error"], (b, status, got)
        job = {"appId": "shop", "jobId": "nightly", "schedule": {"cron": "0 0 2 * * ?"},
               "callback": {"group": "billing", "path": "/nightly", "strategy": "FIRST"}}
        status, got = req(port, "POST", "/jobs", job)
        assert status == 200, got
        # What the router sees: a group URL and the route in the metadata.
        from harness import decode
        recs = env.read_all("tasks", expect=1)
        t = decode("Command", recs[0].value())["payload"][1]["task"]
        assert t["callback"]["url"] == "group://billing/charge?x=1", t
        assert t["metadata"] == {"k": "v", "mooncake.route": "ROUND_ROBIN"}, t
        jc = decode("JobCommand", env.read_all("job-commands", expect=1)[0].value())
        j = jc["payload"][1]["job"]
        assert j["callback"]["url"] == "group://billing/nightly", j
        assert j["metadata"] == {"mooncake.route": "FIRST"}, j
        # GET /jobs shows the job as a body gives it, once the jobs role has it.

        def listed():
            s, b = req(port, "GET", "/jobs?appId=shop&jobId=nightly")
            return b if s == 200 else None
        j = eventually("the job in GET /jobs", listed, timeout=30)["job"]
        assert j["callback"]["group"] == "billing" and j["callback"]["path"] == "/nightly", j
        assert j["callback"]["strategy"] == "FIRST" and "url" not in j["callback"], j
        assert j["metadata"] == {}, j
    finally:
        env.stop_all()


def test_members_from_dns():
    dns = DnsServer()
    env = Env(partitions=2)
    try:
        dns.names["billing.mooncake.test"] = ["127.0.0.2"]
        port = start(env, MOONCAKE_ENDPOINTS_DNS_SERVER=f"127.0.0.1:{dns.port}",
                     MOONCAKE_ENDPOINTS_DNS_REFRESH_MS="300")
        url = "http://billing.mooncake.test:8080"
        status, _ = req(port, "POST", "/groups", {"appId": "shop", "name": "billing",
                                                  "members": ["http://127.0.0.9:1"],
                                                  "dns": [url + "/", "http://127.0.0.7:9"]})
        assert status == 200

        def resolved(want):
            def f():
                g = group_of(port, "billing")
                got = sorted(r["address"] for r in g["resolved"]) if g else None
                return (got,) if got == want else None
            return f
        eventually("the first answer", resolved(["127.0.0.2"]))
        g = group_of(port, "billing")
        assert g["dns"] == [url, "http://127.0.0.7:9"], g  # an IP literal is not resolved
        assert g["resolved"] == [{"url": url, "address": "127.0.0.2"}], g
        dns.names["billing.mooncake.test"] = ["127.0.0.3", "127.0.0.2"]
        eventually("an address added", resolved(["127.0.0.2", "127.0.0.3"]), timeout=5)
        dns.names["billing.mooncake.test"] = ["127.0.0.3"]
        eventually("an address removed", resolved(["127.0.0.3"]), timeout=5)
        # A failing server: the last addresses stay, the failures are counted.
        dns.failing = True
        before = dns.queries.get("billing.mooncake.test", 0)
        eventually("queries while failing",
                   lambda: dns.queries.get("billing.mooncake.test", 0) >= before + 4, timeout=10)
        assert resolved(["127.0.0.3"])(), group_of(port, "billing")
        def failures():
            text = env.metrics(env.procs[-1])
            n = [float(line.split()[1]) for line in text.splitlines()
                 if line.startswith("mooncake_endpoints_dns_failures_total ")]
            return text if n and n[0] > 0 else None
        metrics = eventually("the failures counted", failures)
        assert "mooncake_endpoints_groups 1" in metrics, metrics
        dns.failing = False
        # NXDOMAIN: the name has no members any more.
        del dns.names["billing.mooncake.test"]
        eventually("the name gone", resolved([]), timeout=5)
        dns.names["billing.mooncake.test"] = ["127.0.0.4"]
        eventually("back", resolved(["127.0.0.4"]), timeout=5)
    finally:
        env.stop_all()
        dns.close()


TESTS = [test_groups_and_limits_through_the_api, test_mooncakectl_groups_and_limits,
         test_tasks_and_jobs_name_groups, test_members_from_dns]

if __name__ == "__main__":
    run(picked(TESTS, sys.argv[1:]))
