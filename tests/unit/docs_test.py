#!/usr/bin/env python3
"""The user docs (README.md and docs/**/*.md) stay short, current and connected:
the README is at most 300 lines and keeps the two set-up commands; no page carries
history (a commit hash, a chaos seed, an issue number, a link to ../shared or to
anything outside the repository); and every relative link points at a file or
directory that exists, and every #anchor into a page at one of its headings.
Targets in ALLOWED_MISSING may not exist yet (paths other people are moving things
to). Negative cases prove each check can fail."""
import glob
import os
import re
import sys

SOURCE = os.path.abspath(os.environ.get("MOONCAKE_SOURCE_DIR",
                                        os.path.join(os.path.dirname(__file__), "..", "..")))
README_MAX_LINES = 300
# Link targets (repository paths) that may be missing while they are being moved into
# place; a link to them, or into them, passes either way.
ALLOWED_MISSING = ("program/mooncake/", "program/mooncakectl/", "tests/chaos/")
# 7-40 hex digit strings that are no commit: the Command schema's fingerprint.
ALLOWED_HEX = {"2b21762d23185566"}

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def pages():
    found = [os.path.join(SOURCE, "README.md")]
    found += sorted(glob.glob(os.path.join(SOURCE, "docs", "**", "*.md"), recursive=True))
    return [p for p in found if os.path.exists(p)]


def rel(path):
    return os.path.relpath(path, SOURCE)


# --- history ---------------------------------------------------------------------------

HISTORY = [
    ("a commit hash", re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")),
    ("a seed", re.compile(r"\bseeds?\b\W{0,3}\d", re.I)),
    ("an issue number", re.compile(r"\bissues?\s*(?:#\s*)?\d+", re.I)),
    ("a link to ../shared", re.compile(r"\.\./shared\b|\bshared/DESIGN\.md")),
]


def history(text):
    """(what, match, line number) for every trace of history in text."""
    found = []
    for what, rx in HISTORY:
        for m in rx.finditer(text):
            if what == "a commit hash" and m.group(0) in ALLOWED_HEX:
                continue
            found.append((what, m.group(0), text.count("\n", 0, m.start()) + 1))
    return found


# --- links -----------------------------------------------------------------------------

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def prose(text):
    """text without fenced code blocks and inline code spans."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return re.sub(r"`+[^`\n]*`+", "", text)


def links(text):
    return [m.group(1) for m in LINK.finditer(prose(text))]


def slug(heading):
    """GitHub's anchor for a heading."""
    h = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    h = h.replace("`", "").strip().lower()
    h = "".join(c for c in h if c.isalnum() or c in " -_")
    return h.replace(" ", "-")


def anchors(text):
    seen, out = {}, set()
    for line in FENCE.sub("", text).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        s = slug(m.group(1))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def allowed_missing(target_rel):
    t = target_rel.replace(os.sep, "/")
    return any(t == a.rstrip("/") or t.startswith(a) for a in ALLOWED_MISSING)


def broken_links(page_path, text):
    """(target, why) for every link of the page that does not resolve."""
    bad = []
    here = os.path.dirname(page_path)
    for target in links(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
            bad.append((target, "points outside the repository"))
            continue
        path, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(here, path)) if path else page_path
        inside = os.path.relpath(dest, SOURCE)
        if inside.startswith(".."):
            bad.append((target, "points outside the repository"))
            continue
        if not os.path.exists(dest):
            if not allowed_missing(inside + ("/" if path.endswith("/") else "")):
                bad.append((target, f"{inside} does not exist"))
            continue
        if anchor and dest.endswith(".md"):
            with open(dest) as f:
                if anchor not in anchors(f.read()):
                    bad.append((target, f"no heading #{anchor} in {inside}"))
    return bad


# --- the checks on the real docs ---------------------------------------------------------

all_pages = pages()
check(len(all_pages) > 10, f"the docs exist ({len(all_pages)} pages)")
with open(os.path.join(SOURCE, "README.md")) as f:
    readme = f.read()
n = readme.count("\n")
check(n <= README_MAX_LINES, f"README.md has {n} lines (at most {README_MAX_LINES})")
check("tools/quickstart" in readme and "tools/run-tests" in readme,
      "README.md keeps the two set-up commands, tools/quickstart and tools/run-tests")

for page in all_pages:
    with open(page) as f:
        text = f.read()
    found = history(text)
    check(not found, f"{rel(page)} carries no history" +
          "".join(f"\n       line {ln}: {what} '{m}'" for what, m, ln in found))
    bad = broken_links(page, text)
    check(not bad, f"{rel(page)}: {len(links(text))} links resolve" +
          "".join(f"\n       {t}: {why}" for t, why in bad))

# Every page is reachable from the README, directly or through other pages.
reached, todo = set(), [os.path.join(SOURCE, "README.md")]
while todo:
    page = todo.pop()
    if page in reached or not os.path.isfile(page):
        continue
    reached.add(page)
    with open(page) as f:
        text = f.read()
    for target in links(text):
        path = target.partition("#")[0]
        if path.endswith(".md") and not re.match(r"^[a-z]+:", path):
            todo.append(os.path.normpath(os.path.join(os.path.dirname(page), path)))
orphans = [rel(p) for p in all_pages if p not in reached]
check(not orphans, "every page is reachable from README.md" +
      (f": not {orphans}" if orphans else ""))

# --- negative cases: each check can fail -------------------------------------------------

for sample, what in [("fixed in 3f9c2ab", "a commit hash"),
                     ("fixed in 3f9c2ab1e4d5f6a7b8c9d0e1f2a3b4c5d6e7f8a9", "a commit hash"),
                     ("tools/chaos --ci --seed 42", "a seed"),
                     ("seed: 1234", "a seed"),
                     ("see issue 17", "an issue number"),
                     ("closes issue #28", "an issue number"),
                     ("[the contract](../shared/DESIGN.md)", "a link to ../shared")]:
    check(any(w == what for w, _, _ in history(sample)), f"'{sample}' is found as {what}")
for sample in ["1767290400000", "decade", "the seed corpora", "2b21762d23185566",
               "librdkafka #5456", "ssue 3"]:
    check(not history(sample), f"'{sample}' is no history")

probe = os.path.join(SOURCE, "docs", "probe.md")
for text, why in [("[x](no-such-page.md)", "does not exist"),
                  ("[x](getting-started.md#no-such-heading)", "no heading"),
                  ("[x](https://example.com/)", "outside the repository"),
                  ("[x](../../outside.md)", "outside the repository"),
                  ("[x](#nowhere)", "no heading")]:
    bad = broken_links(probe, text + "\n# Probe\n") if "#nowhere" not in text else \
        broken_links(os.path.join(SOURCE, "README.md"), text)
    check(any(why in w for _, w in bad), f"the link {text} is refused ({why})")
check(not broken_links(probe, "[x](getting-started.md#the-quickstart) [y](../tests/chaos/)"
                       " `[z](nowhere.md)`\n```\n[w](nowhere.md)\n```\n"),
      "links that resolve, allow-listed targets and links in code pass")
check(slug("Listing and counting an app's tasks") == "listing-and-counting-an-apps-tasks"
      and slug("`mooncake all` (every role)") == "mooncake-all-every-role",
      "anchors are GitHub's")

print(f"{len(failures)} failed" if failures else "all checks passed")
sys.exit(1 if failures else 0)
