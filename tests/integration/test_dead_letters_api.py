"""GET /api/dead-letters and POST /api/dead-letters/requeue, through a real
`mooncake all` on a real broker, held to their contract (gateway/openapi.yaml,
docs/http-api.md "Dead letters"):
- an app's letters, newest first, by reason (ignoring case) and record time
  (24 h back by default), at most limit with `more`; a letter that is not a
  DeadLetter has task null and its app and uuid from the record key; a
  callback's secrets (a secret header, a secret query parameter) are redacted
  as GET /api/task redacts them, never shown;
- tokens: another app's token and inner tokens get 403, no or an unknown
  token 401; bad input gets 400 naming the field;
- a requeue of named letters requeues exactly those (one Submit each in tasks,
  with the mooncake-requeued-from header), refuses another app's letter and
  says why for the rest; the listing then says requeued; a second requeue
  says "already requeued"; `mooncakectl requeue --all` afterwards does not
  requeue them again (one ledger, one transactional id for both), and a
  letter the CLI requeued is "already requeued" for the gateway; a requeued
  task whose endpoint now answers 200 succeeds."""
import json
import os
import re
import urllib.error
import urllib.request

import jsonschema
import yaml

from harness import SOURCE_DIR, CallbackServer, Env, encode, now_ms, run, task
from test_executor import results, wait_until
from test_mooncakectl import ctl, tasks_records

SHOP = "shop-token-0123456789"
BILLING = "billing-token-0123456789"
INNER = "inner-token-0123456789"
SECRET_H, SECRET_Q = "hdr-s3cret-value", "qry-s3cret-value"
HOUR = 3600 * 1000
with open(os.path.join(SOURCE_DIR, "gateway", "openapi.yaml")) as f:
    DOC = yaml.safe_load(f)


class S:
    env = proc = server = None
    now = 0
    at = {}  # key -> (partition, offset)
    answered_404 = True


def check_doc(method, path, status, j):
    """The answer is one the document lists for the route, in its schema."""
    op = DOC["paths"][path.split("?")[0]][method.lower()]
    resp = op["responses"][str(status)]
    if "$ref" in resp:
        resp = DOC["components"]["responses"][resp["$ref"].rsplit("/", 1)[1]]
    schema = resp["content"]["application/json"]["schema"]
    jsonschema.Draft202012Validator({**schema, "components": DOC["components"]}).validate(j)
    return status, j


def http(method, path, body=None, token=SHOP):
    """(status, parsed JSON) of one request to the gateway, checked against
    the document."""
    data = None if body is None else (body if isinstance(body, bytes) else
                                      json.dumps(body).encode())
    r = urllib.request.Request(f"http://127.0.0.1:{S.proc.http_port}{path}", data=data,
                               method=method)
    if token:
        r.add_header("Authorization", "Bearer " + token)
    if data is not None:
        r.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(r, timeout=120) as a:
            return check_doc(method, path, a.status, json.loads(a.read()))
    except urllib.error.HTTPError as e:
        return check_doc(method, path, e.code, json.loads(e.read()))


def listing(query, token=SHOP):
    status, j = http("GET", "/api/dead-letters?" + query, token=token)
    assert status == 200, (status, j)
    assert j["code"] == 0 and j["msg"] == "ok", j
    return j["data"]


def error(status, j, want, needle):
    assert status == want and j["code"] == want and j["data"] is None, (status, j)
    assert needle in j["msg"], (needle, j["msg"])


def produce_letter(key, ts, value, part):
    S.env.producer.produce(S.env.topic("dead"), key=key, value=value, partition=part,
                           timestamp=ts)


def dead_value(app, tid, reason, url, headers=None):
    t = task(app, tid, S.now - HOUR, url=url)
    t["callback"]["headers"] = headers or {"x-test": "1"}
    return encode("DeadLetter", {
        "reason": reason, "source_topic": S.env.topic("retry"), "source_partition": 1,
        "source_offset": 7, "raw": None, "task": t, "failed_at": S.now})


def setup():
    S.env = Env(partitions=3)
    S.server = CallbackServer(lambda c: (404, {}, b"no") if S.answered_404 else (200, {}, b"ok"))
    S.now = now_ms()
    S.proc = S.env.start("all", "--app-tokens", f"shop={SHOP},billing={BILLING}",
                         "--inner-tokens", INNER, "--executor-allow-cidrs", "127.0.0.1/32",
                         wait_ready=False)
    S.env.wait_ready(S.proc, timeout=90)
    url = S.server.url("/a1") + "?order=1&token=" + SECRET_Q
    # Placed by hand: the first requeue names letters of partitions 0 and 1
    # only, and must leave the group's offset on partition 2 where it is.
    letters = [
        ("shop/old", 2, S.now - 30 * HOUR,
         dead_value("shop", "old", "HTTP 404", S.server.url("/old"))),
        ("shop/a1", 0, S.now - 3 * HOUR,
         dead_value("shop", "a1", "permanent failure on attempt 1: HTTP 404", url,
                    {"Authorization": "Bearer " + SECRET_H, "x-test": "1"})),
        ("shop/a2", 0, S.now - 2 * HOUR,
         dead_value("shop", "a2", "gave up after 4 attempts: HTTP 503", S.server.url("/a2"))),
        ("shop/a3", 2, S.now - HOUR,
         dead_value("shop", "a3", "permanent failure on attempt 1: HTTP 410",
                    S.server.url("/a3"))),
        ("billing/b1", 1, S.now - HOUR,
         dead_value("billing", "b1", "permanent failure: HTTP 404", S.server.url("/b1"))),
        ("shop/junk", 1, S.now - HOUR // 2, b"\x00garbage"),
    ]
    for key, part, ts, value in letters:
        produce_letter(key, ts, value, part)
    S.env.flush()
    # Where each landed, as the listing of every app over 31 h tells it.
    for app, token in (("shop", SHOP), ("billing", BILLING)):
        for l in listing(f"appId={app}&from={S.now - 31 * HOUR}", token=token)["letters"]:
            S.at[l["key"]] = (l["partition"], l["offset"])
    assert {k: p for k, (p, _) in S.at.items()} == {k: p for k, p, _, _ in letters}, S.at


def test_listing_newest_first_by_reason_and_time():
    d = listing("appId=shop")
    keys = [l["key"] for l in d["letters"]]
    assert keys == ["shop/junk", "shop/a3", "shop/a2", "shop/a1"], keys  # not old: > 24 h
    assert d["more"] is False
    a2 = d["letters"][2]
    assert a2["appId"] == "shop" and a2["uuid"] == "a2" and a2["attempt"] == 1, a2
    assert a2["reason"] == "gave up after 4 attempts: HTTP 503" and a2["requeued"] is False
    assert a2["source"] == f"{S.env.topic('retry')} 1@7", a2
    assert (a2["partition"], a2["offset"]) == S.at["shop/a2"]
    assert a2["timestamp"] == S.now - 2 * HOUR
    assert a2["task"]["dueAt"] == S.now - HOUR and a2["task"]["callback"]["method"] == "POST"
    assert a2["task"]["callback"]["url"] == S.server.url("/a2"), a2
    junk = d["letters"][0]
    assert junk["task"] is None and junk["appId"] == "shop" and junk["uuid"] == "junk", junk
    assert junk["attempt"] is None and junk["source"] is None
    assert "not a DeadLetter" in junk["reason"], junk
    # The reason, ignoring case; another app's 404 is not listed.
    assert [l["key"] for l in listing("appId=shop&reason=http%20404")["letters"]] == ["shop/a1"]
    assert [l["key"] for l in listing("appId=shop&reason=Not%20A%20deadletter")["letters"]] == \
        ["shop/junk"]
    # Time bounds on the record's timestamp; limit and more.
    got = listing(f"appId=shop&from={S.now - 2 * HOUR - 1000}&to={S.now - 2 * HOUR + 1000}")
    assert [l["key"] for l in got["letters"]] == ["shop/a2"], got
    got = listing("appId=shop&limit=2")
    assert [l["key"] for l in got["letters"]] == ["shop/junk", "shop/a3"] and got["more"], got
    got = listing(f"appId=shop&from={S.now - 31 * HOUR}")
    assert [l["key"] for l in got["letters"]][-1] == "shop/old", got


def test_secrets_are_redacted():
    status, raw = http("GET", "/api/dead-letters?appId=shop&reason=HTTP%20404")
    text = json.dumps(raw)
    assert SECRET_H not in text and SECRET_Q not in text, text
    cb = raw["data"]["letters"][0]["task"]["callback"]
    assert cb["headers"] == {"Authorization": "[redacted]", "x-test": "1"}, cb
    assert cb["url"] == S.server.url("/a1") + "?order=1&token=[redacted]", cb


def test_tokens_and_bad_input():
    error(*http("GET", "/api/dead-letters?appId=shop", token=BILLING), 403, "appId 'shop'")
    error(*http("GET", "/api/dead-letters?appId=shop", token=INNER), 403, "inner tokens")
    error(*http("GET", "/api/dead-letters?appId=shop", token=None), 401, "Bearer")
    error(*http("GET", "/api/dead-letters?appId=shop", token="nope-0123456789"), 401, "not valid")
    body = {"appId": "shop", "letters": [{"partition": 0, "offset": 0}]}
    error(*http("POST", "/api/dead-letters/requeue", body, token=BILLING), 403, "appId 'shop'")
    error(*http("POST", "/api/dead-letters/requeue", body, token=INNER), 403, "inner tokens")
    error(*http("POST", "/api/dead-letters/requeue", body, token=None), 401, "Bearer")
    error(*http("GET", "/api/dead-letters"), 400, "appId: required")
    error(*http("GET", "/api/dead-letters?appId=shop&limit=0"), 400, "limit")
    error(*http("GET", "/api/dead-letters?appId=shop&limit=1001"), 400, "limit")
    error(*http("GET", "/api/dead-letters?appId=shop&from=yesterday"), 400, "from")
    error(*http("GET", "/api/dead-letters?appId=shop&colour=red"), 400, "colour")
    bad = {"appId": "shop", "letters": [{"partition": 0, "offset": 1},
                                        {"partition": 0, "offset": "x"}]}
    error(*http("POST", "/api/dead-letters/requeue", bad), 400, "letters[1].offset: not an integer")
    error(*http("POST", "/api/dead-letters/requeue", {"appId": "shop", "letters": []}), 400,
          "letters")
    error(*http("POST", "/api/dead-letters/requeue",
                {"appId": "shop", "letters": [{"offset": 1}]}), 400, "letters[0].partition")
    error(*http("POST", "/api/dead-letters/requeue", {"letters": [{"partition": 0, "offset": 1}]}),
          400, "appId")
    error(*http("POST", "/api/dead-letters/requeue", b"{nope"), 400, "body")


def requeued_submits():
    """key -> the mooncake-requeued-from headers of its Submits in tasks."""
    out = {}
    for k, _, _, h in tasks_records(S.env):
        if "mooncake-requeued-from" in h:
            out.setdefault(k, []).append(h["mooncake-requeued-from"].decode())
    return out


def ref(key):
    p, o = S.at[key]
    return {"partition": p, "offset": o}


def test_requeue_exactly_the_named_letters_once():
    S.answered_404 = False  # the endpoints are fixed
    body = {"appId": "shop", "letters": [ref("shop/a1"), ref("shop/a2"), ref("billing/b1"),
                                         ref("shop/junk"), {"partition": 0, "offset": 999999}]}
    status, j = http("POST", "/api/dead-letters/requeue", body)
    assert status == 200 and j["code"] == 0, (status, j)
    res = j["data"]["results"]
    assert [(r["key"], r["action"]) for r in res] == [
        ("shop/a1", "requeued"), ("shop/a2", "requeued"), (None, "skipped"),
        ("shop/junk", "skipped"), (None, "skipped")], res
    assert res[2]["why"] == "another app's" and res[4]["why"] == "not found", res
    assert "DeadLetter" in res[3]["why"], res
    assert [(r["partition"], r["offset"]) for r in res] == \
        [(b["partition"], b["offset"]) for b in body["letters"]]
    froms = requeued_submits()
    prefix = S.env.prefix
    assert froms == {"shop/a1": ["%sdead/%d/%d" % (prefix, *S.at["shop/a1"])],
                     "shop/a2": ["%sdead/%d/%d" % (prefix, *S.at["shop/a2"])]}, froms
    # The requeued task runs again, and its endpoint answers 200 now.
    ok = wait_until("a SUCCEEDED result for shop/a1",
                    lambda: [r for r in results(S.env) if r["key"] == "shop/a1"
                             and r["outcome"] == "SUCCEEDED"], timeout=60)
    calls = [c for c in S.server.snapshot() if c["path"].startswith("/a1?")]
    assert len(ok) == 1 and len(calls) == 1, (ok, calls)
    assert calls[0]["headers"]["authorization"] == "Bearer " + SECRET_H  # sent, never shown
    flags = {l["key"]: l["requeued"] for l in listing("appId=shop")["letters"]}
    assert flags == {"shop/a1": True, "shop/a2": True, "shop/a3": False, "shop/junk": False}, flags
    # Again: nothing more.
    status, j = http("POST", "/api/dead-letters/requeue",
                     {"appId": "shop", "letters": [ref("shop/a2"), ref("shop/a1")]})
    assert status == 200, j
    assert [(r["key"], r["action"], r["why"]) for r in j["data"]["results"]] == [
        ("shop/a2", "skipped", "already requeued"), ("shop/a1", "skipped", "already requeued")], j
    assert requeued_submits() == froms


def test_the_cli_and_the_gateway_share_the_ledger():
    out = ctl("-J", "requeue", "--all", prefix=S.env.prefix)
    done = sorted(j["key"] for j in out.json_lines() if j["action"] == "requeued")
    assert done == ["billing/b1", "shop/a3", "shop/old"], out.out  # not a1, a2 again
    froms = requeued_submits()
    assert {k: len(v) for k, v in froms.items()} == {
        "shop/a1": 1, "shop/a2": 1, "shop/a3": 1, "shop/old": 1, "billing/b1": 1}, froms
    status, j = http("POST", "/api/dead-letters/requeue",
                     {"appId": "shop", "letters": [ref("shop/a3")]})
    assert status == 200 and j["data"]["results"][0]["why"] == "already requeued", j
    assert re.search(r"0 requeued", ctl("requeue", "--all", prefix=S.env.prefix).err)


def main():
    try:
        setup()
    except Exception:
        if S.env:
            S.env.stop_all()
        if S.server:
            S.server.close()
        raise
    try:
        run([test_listing_newest_first_by_reason_and_time, test_secrets_are_redacted,
             test_tokens_and_bad_input, test_requeue_exactly_the_named_letters_once,
             test_the_cli_and_the_gateway_share_the_ledger])
    finally:
        S.env.stop_all()
        S.server.close()


if __name__ == "__main__":
    main()
