#!/usr/bin/env python3
"""Cross-checks the cron engine (common/cron.c, common/tz.c, through the
tests/unit/cron_next driver) against croniter, an independent implementation,
on thousands of random expressions x time zones (DST zones among them) x start
instants (many within hours of a DST change). Each fire is compared on its
own: croniter starts from the instant our previous fire gave, so one
difference does not cascade.

Where we differ from croniter on purpose (cron.h documents our rules), the
difference is excluded only after an oracle agrees with us: croniter run on
naive wall-clock time (no zone, so no DST code), its answer mapped onto an
instant by our documented rule (a reading fires at the first instant the
clock shows it or later, never twice). The exclusions, each counted (the
last is checked with croniter.match instead of the oracle, whose calendar is
croniter's):

  gap       a scheduled time inside a spring-forward gap: croniter shifts it by
            the gap's length (02:30 -> 03:30 when 02:00 jumps to 03:00), or
            drops it (hour 2 of "* 2,4 * * *" fires next at 04:00); we fire at
            the gap's end (03:00).
  croniter_dst_adjust
            croniter (with zoneinfo) returns an instant whose local time the
            expression does not match by croniter's own croniter.match - its
            DST "lag" adjustment shifting a fire by the offset change, e.g.
            "30 2 * * *" at 03:30 on the day after a fall-back.
  croniter_not_after_start
            around a fall-back (a start inside the repeated hour, or just
            before it) croniter answers with an instant at or before the
            start itself; we wait for the first reading not yet shown.
  overlap_repeat
            croniter fires inside the second pass through a repeated hour
            (from a start inside it, a sub-hour schedule carries on there);
            we never fire at a reading the clock has already shown.
  croniter_skips_match
            croniter answers later than we do, and croniter.match confirms our
            fire (a first occurrence, after the start) is scheduled: croniter
            missed it (day 31 in a shorter month overshoots into the next),
            or raised "no match" (Sep 31 ORed with a full day of week).
  croniter_raises_on_or
            5 fields with both day fields restricted: croniter works out the
            day-of-month half alone first and raises when it never comes
            (Sep 31 ORed with Fridays); checked against the oracle on the
            day-of-week half alone.
  horizon   croniter finds a fire more than MC_CRON_HORIZON_YEARS (8) years
            ahead, or none within its 50; we answer -1 (cron.h).

Expressions avoid syntax where the two disagree by design rather than by DST
(cron.h vs croniter): steps through a wrapping range, a-a ranges, 'W',
'L-n', 'LW', and in 5-field form a restricted day of month together with '#'
or 'L' in day of week (croniter then ignores the day of month).

Seed: MOONCAKE_CRON_SEED, or a new one each run (printed first, to rerun).
Cases: MOONCAKE_CRON_CASES (default 3000). Needs croniter (tools/setup pins
it); like the other cross-checks this test does not skip."""
import importlib.metadata
import os
import random
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone

try:
    from croniter import croniter, CroniterBadDateError
except ImportError:
    print("FAIL: croniter is not installed; run `pip install croniter==6.0.0` or tools/setup "
          "(this test does not skip)")
    sys.exit(1)
from zoneinfo import ZoneInfo

PINNED = "6.0.0"
SOURCE = os.environ.get("MOONCAKE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("MOONCAKE_BUILD_DIR", os.path.join(SOURCE, "build"))
ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Shanghai",
         "Asia/Kolkata", "Australia/Sydney", "America/Santiago", "America/Sao_Paulo",
         "Pacific/Chatham", "Europe/London", "America/Havana"]
HORIZON_YEARS = 8
STEPS = 4  # fires per case

UTC = timezone.utc


def driver():
    for p in (os.path.join(BUILD, "tests", "cron_next"), os.path.join(BUILD, "cron_next")):
        if os.access(p, os.X_OK):
            return p
    print(f"FAIL: cron_next is not built under {BUILD}")
    sys.exit(1)


# ---------- random expressions, in our syntax and croniter's ----------

def num_items(rng, lo, hi, names=None):
    """One list item over [lo, hi] as (ours, croniter's) text; names maps a
    value to its name when it has one."""
    def val(v):
        return names[v] if names and rng.random() < 0.3 else str(v)
    r = rng.random()
    if r < 0.30:
        v = rng.randint(lo, hi)
        return val(v)
    if r < 0.45:
        return "*/%d" % rng.randint(1, max(1, (hi - lo) // 2 + 1))
    if r < 0.65:
        a = rng.randint(lo, hi - 1)
        b = rng.randint(a + 1, hi)
        if rng.random() < 0.3:
            return "%d-%d/%d" % (a, b, rng.randint(2, max(2, b - a)))
        return val(a) + "-" + val(b)
    if r < 0.75:
        a = rng.randint(lo + 1, hi)
        b = rng.randint(lo, a - 1)
        return val(a) + "-" + val(b)  # wraps round (no step: see the docstring)
    if r < 0.85:
        # a < hi: croniter reads "hi/n" as hi-hi/n, and a-a as the whole cycle
        return "%d/%d" % (rng.randint(lo, hi - 1), rng.randint(1, max(1, (hi - lo) // 2)))
    return "*"


def simple_field(rng, lo, hi, names=None, star_bias=0.3):
    if rng.random() < star_bias:
        return "*"
    items = [num_items(rng, lo, hi, names) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
    if "*" in items and len(items) > 1:
        items = [i for i in items if i != "*"] or ["*"]
    return ",".join(items)


MONTHS = {i + 1: m for i, m in enumerate("JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC".split())}
DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]


def dom_field(rng):
    r = rng.random()
    if r < 0.1:
        return "L"
    if r < 0.15:
        return "%d,L" % rng.randint(1, 28)
    return simple_field(rng, 1, 31, star_bias=0.5)


def classic_dow(rng, dom_restricted):
    """5-field day of week (0-7, 0 and 7 Sunday): (ours, croniter's)."""
    r = rng.random()
    if r < 0.15 and not dom_restricted:
        d = rng.randint(0, 6)
        k = rng.randint(1, 5)
        name = DAYS[d] if rng.random() < 0.5 else str(d)
        return "%s#%d" % (name, k), "%s#%d" % (name, k)
    if r < 0.25 and not dom_restricted:
        d = rng.randint(0, 6)
        return "%dL" % d, "L%d" % d
    f = simple_field(rng, 0, 7, {i: DAYS[i % 7] for i in range(8)}, star_bias=0.5)
    for item in f.split(","):  # "7-0", "SUN-0": croniter reads a-a as the whole week
        ends = item.split("/")[0].split("-")
        if len(ends) == 2 and ends != ["0", "7"]:
            a, b = ((DAYS.index(e) if e in DAYS else int(e)) % 7 for e in ends)
            if a == b:
                f = "*"
    if "/" in f and any(part.split("/")[0] in ("6", "7") for part in f.split(",")):
        f = "*"  # "6/n", "7/n": croniter reads them as 6-6/n (every day), 0-6/n; skip
    return f, f


def quartz_dow_to_croniter(text):
    """6-field day of week: ours is 1-7 = SUN-SAT, croniter's 0-6."""
    out = []
    for item in text.split(","):
        if item == "*":
            out.append(item)
            continue
        if item.endswith("L"):
            v = item[:-1]
            out.append("L" + (str(int(v) - 1) if v.isdigit() else v))
            continue
        if "#" in item:
            v, k = item.split("#")
            out.append((str(int(v) - 1) if v.isdigit() else v) + "#" + k)
            continue
        step = ""
        if "/" in item:
            item, step = item.split("/")
            step = "/" + step
        if item == "*":
            out.append("0-6" + step)  # "*/n" from Sunday, as both count it
            continue
        parts = [str(int(p) - 1) if p.isdigit() else p for p in item.split("-")]
        if step and len(parts) == 1:
            parts.append("6")  # "a/n": a to Saturday
        out.append("-".join(parts) + step)
    return ",".join(out)


def quartz_dow(rng):
    """6-field day of week; "7/n" would be "6-6/n" to croniter: every day."""
    f = quartz_dow_raw(rng)
    return "*" if any(part.startswith("7/") for part in f.split(",")) else f


def quartz_dow_raw(rng):
    r = rng.random()
    if r < 0.15:
        d = rng.randint(1, 7)
        return "%s#%d" % (DAYS[d - 1] if rng.random() < 0.5 else str(d), rng.randint(1, 5))
    if r < 0.25:
        return "%dL" % rng.randint(1, 7)
    return simple_field(rng, 1, 7, {i: DAYS[i - 1] for i in range(1, 8)}, star_bias=0.2)


def sub_minute(rng):
    return "0" if rng.random() < 0.5 else simple_field(rng, 0, 59, star_bias=0.1)


def expression(rng):
    """(ours, croniter's, croniter keyword arguments)."""
    form = rng.random()
    if form < 0.05:
        m = rng.choice(["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight",
                        "@hourly"])
        return m, m, {}
    minute = simple_field(rng, 0, 59, star_bias=0.1) if rng.random() < 0.5 else str(rng.choice([0, 15, 30, 45]))
    hour = simple_field(rng, 0, 23, star_bias=0.3)
    if rng.random() < 0.3:
        hour = rng.choice(["1", "2", "3", "1-3", "2,3", "0-4/2", "22-3"])  # where DST happens
    month = simple_field(rng, 1, 12, MONTHS, star_bias=0.6)
    if form < 0.6:
        dom = dom_field(rng)
        ours_dow, cr_dow = classic_dow(rng, dom not in ("*", "?"))
        ours = " ".join([minute, hour, dom, month, ours_dow])
        return ours, " ".join([minute, hour, dom, month, cr_dow]), {}
    sec = sub_minute(rng)
    if rng.random() < 0.5:
        dom, dow = "?", quartz_dow(rng)
    else:
        dom, dow = dom_field(rng), "?"
    fields = [sec, minute, hour, dom, month, dow]
    cr = [sec, minute, hour, dom, month, quartz_dow_to_croniter(dow)]
    if form > 0.9:
        year = rng.choice(["*", "2020-2030", "2026", "2024,2028", "2030-2040/3"])
        fields.append(year)
        cr.append(year)
    return " ".join(fields), " ".join(cr), {"second_at_beginning": True}


# ---------- instants ----------

def transitions(zone, start_year=2015, end_year=2036):
    """DST changes of a zone between those years, by bisecting months whose
    first and last instants have different offsets."""
    z = ZoneInfo(zone)
    out = []
    def off(t):
        return datetime.fromtimestamp(t, z).utcoffset()
    t = int(datetime(start_year, 1, 1, tzinfo=UTC).timestamp())
    end = int(datetime(end_year, 1, 1, tzinfo=UTC).timestamp())
    step = 7 * 86400
    while t < end:
        if off(t) != off(t + step):
            lo, hi = t, t + step
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if off(mid) == off(lo):
                    lo = mid
                else:
                    hi = mid
            out.append(hi)
        t += step
    return out


def start_instant(rng, trans):
    r = rng.random()
    if trans and r < 0.6:
        t = rng.choice(trans) + rng.randint(-4 * 3600, 4 * 3600)
        if rng.random() < 0.5:
            t -= t % 60  # on a minute
    else:
        t = rng.randint(int(datetime(2016, 1, 1, tzinfo=UTC).timestamp()),
                        int(datetime(2035, 1, 1, tzinfo=UTC).timestamp()))
    ms = t * 1000 + (rng.randint(0, 999) if rng.random() < 0.3 else 0)
    return ms


# ---------- the oracle: naive croniter + our documented DST rule ----------

def wall(t, z):
    return datetime.fromtimestamp(t, z).replace(tzinfo=None)


def max_reading(t, z):
    """The highest wall-clock reading the zone showed up to instant t."""
    dt = datetime.fromtimestamp(t, z)
    if dt.fold == 0:
        return dt.replace(tzinfo=None)
    d = int((dt.replace(fold=0).utcoffset() - dt.utcoffset()).total_seconds())
    lo, hi = t - d - 1, t  # fold is 0 at lo, 1 at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if datetime.fromtimestamp(mid, z).fold:
            hi = mid
        else:
            lo = mid
    return wall(hi - 1, z)


def first_reaching(w, z):
    """The first instant the zone's clock reads w or later."""
    a = int(w.replace(tzinfo=z, fold=0).timestamp())
    if wall(a, z) == w:
        return a
    b = int(w.replace(tzinfo=z, fold=1).timestamp())
    lo, hi = min(a, b) - 1, max(a, b)  # in a gap: wall(lo) < w <= wall(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if wall(mid, z) >= w:
            hi = mid
        else:
            lo = mid
    return hi


def oracle(cr_expr, kw, z, after_s):
    m = max_reading(after_s, z)
    try:
        w = croniter(cr_expr, m, **kw).get_next(datetime)
    except CroniterBadDateError:
        return -1
    try:
        limit = m.replace(year=m.year + HORIZON_YEARS)
    except ValueError:  # Feb 29: cron.c's calendar arithmetic rolls on to Mar 1
        limit = m.replace(year=m.year + HORIZON_YEARS, day=28) + timedelta(days=1)
    return -1 if w > limit else first_reaching(w, z)


def croniter_next(cr_expr, kw, z, after_s_float):
    start = datetime.fromtimestamp(after_s_float, z)
    try:
        dt = croniter(cr_expr, start, **kw).get_next(datetime)
    except CroniterBadDateError:
        return None, None
    return int(dt.timestamp()), dt


def main():
    seed = int(os.environ.get("MOONCAKE_CRON_SEED") or time.time_ns() % 1_000_000_007)
    cases = int(os.environ.get("MOONCAKE_CRON_CASES", "3000"))
    try:
        version = importlib.metadata.version("croniter")
    except importlib.metadata.PackageNotFoundError:
        version = None
    print(f"seed {seed} (MOONCAKE_CRON_SEED={seed} to rerun), {cases} cases, croniter {version}",
          flush=True)
    if version and version != PINNED:
        print(f"note: croniter {version} is not the pinned {PINNED}; exclusions were measured on "
              f"{PINNED}")
    rng = random.Random(seed)
    trans = {zn: transitions(zn) for zn in ZONES}
    items = []
    for _ in range(cases):
        ours, cr, kw = expression(rng)
        zone = rng.choice(ZONES)
        items.append((ours, cr, kw, zone, start_instant(rng, trans[zone])))
    text = "".join(f"{o}\t{zn}\t{ms}\t{STEPS}\n" for o, _, _, zn, ms in items)
    p = subprocess.run([driver()], input=text, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        print("FAIL: cron_next exited", p.returncode, p.stderr)
        sys.exit(1)
    lines = p.stdout.splitlines()
    if len(lines) != len(items):
        print(f"FAIL: cron_next answered {len(lines)} lines for {len(items)}")
        sys.exit(1)

    compared = agreed = 0
    excluded = {"gap": 0, "croniter_dst_adjust": 0, "croniter_not_after_start": 0, "overlap_repeat": 0, "horizon": 0,
                "croniter_skips_match": 0, "croniter_raises_on_or": 0}
    mismatches = []
    refused = []
    zones_seen = set()
    for (ours_expr, cr, kw, zone, ms), line in zip(items, lines):
        if line.startswith("ERR"):
            refused.append((ours_expr, line))
            continue
        z = ZoneInfo(zone)
        fires = [int(x) for x in line.split()]
        prev_ms = ms
        for fire in fires:
            compared += 1
            zones_seen.add(zone)
            after_s = prev_ms // 1000
            c, cdt = croniter_next(cr, kw, z, prev_ms / 1000.0)
            mine = fire // 1000 if fire >= 0 else -1
            if c is not None and c == mine:
                agreed += 1
            else:
                why = classify(cr, kw, z, after_s, mine, c, cdt)
                if not why and croniter_skipped(cr, kw, z, after_s, mine, c):
                    why = "croniter_skips_match"
                if not why and croniter_raises_on_or(cr, kw, z, after_s, mine, c):
                    why = "croniter_raises_on_or"
                if why:
                    excluded[why] += 1
                else:
                    mismatches.append((ours_expr, cr, zone, prev_ms, fire, c, cdt))
            if fire < 0:
                break
            prev_ms = fire

    print(f"compared {compared} fires of {len(items) - len(refused)} expressions in "
          f"{len(zones_seen)} zones: {agreed} agreed with croniter")
    print("excluded (documented differences, each confirmed by the naive-time oracle): " +
          ", ".join(f"{k} {v}" for k, v in excluded.items()))
    for o, line in refused:
        print(f"FAIL: refused {o!r}: {line}")
    for o, cr, zone, after, fire, c, cdt in mismatches:
        print(f"MISMATCH {o!r} (croniter {cr!r}) in {zone} after {after} ms "
              f"({datetime.fromtimestamp(after / 1000, ZoneInfo(zone)).isoformat()}): "
              f"ours {fire} ({fmt(fire // 1000 if fire >= 0 else -1, zone)}), "
              f"croniter {c} ({cdt.isoformat() if cdt else 'none'})")
    bad = len(mismatches) + len(refused)
    print(f"{len(mismatches)} mismatches, {len(refused)} refused" if bad else "all checks passed")
    sys.exit(1 if bad else 0)


def fmt(t, zone):
    return "none" if t < 0 else datetime.fromtimestamp(t, ZoneInfo(zone)).isoformat()


def classify(cr, kw, z, after_s, mine, c, cdt):
    """Which documented difference explains a disagreement, or None. Every
    exclusion first requires our answer to be the oracle's."""
    if oracle(cr, kw, z, after_s) != mine:
        return None
    if mine < 0:
        return "horizon"  # the oracle too finds nothing within 8 years
    if c is None:
        return None
    return classify_dst(cr, kw, z, after_s, mine, c)


def croniter_raises_on_or(cr, kw, z, after_s, mine, c):
    """5 fields, both day fields restricted (ORed): croniter computes the day-
    of-month half alone first and raises when it never comes (Sep 31), though
    the day-of-week half fires. Our answer must be the day-of-week half's."""
    f = cr.split()
    if c is not None or len(f) != 5 or f[2] in ("*", "?") or f[4] in ("*", "?"):
        return False
    try:
        croniter(" ".join(f[:4] + ["*"]), wall(after_s, z)).get_next()
        return False
    except CroniterBadDateError:
        pass
    return oracle(" ".join(f[:2] + ["*"] + f[3:]), kw, z, after_s) == mine


def classify_dst(cr, kw, z, after_s, mine, c):
    off = lambda t: int(datetime.fromtimestamp(t, z).utcoffset().total_seconds())
    jump = off(mine) - off(mine - 1)
    if jump > 0 and c > mine:
        return "gap"  # we fire at the gap's end; croniter later, or not for this time
    lag = off(mine) - off(after_s)
    if lag != 0 and c == mine - lag:
        return "croniter_dst_adjust"
    if c <= after_s:
        return "croniter_not_after_start"
    if datetime.fromtimestamp(c, z).fold == 1:
        return "overlap_repeat"  # croniter fires in the second pass of a repeated hour
    return None


def croniter_skipped(cr, kw, z, after_s, mine, c):
    """croniter answered later than we did, and croniter.match itself says our
    fire (a first occurrence, after the start) is scheduled: croniter missed a
    match - e.g. day 31 in a shorter month sends it past the next month's 1st -
    or raised for lack of one (Sep 31 ORed with a day of week covering the
    week: croniter gives up on the day-of-month half). An answer at or before
    the start (croniter_not_after_start, around a fall-back) is no answer:
    from after the repeated hour the oracle can then meet the same miss
    (seed 707256021: day 31 of February, after a fall-back on the 16th)."""
    return (mine > after_s and (c is None or c <= after_s or mine < c) and
            datetime.fromtimestamp(mine, z).fold == 0 and
            croniter.match(cr, wall(mine, z), second_at_beginning=kw.get("second_at_beginning", False)))


if __name__ == "__main__":
    main()
