#!/usr/bin/env python3
"""docs/configuration.md documents exactly the options the roles take: its table is
what tools/config-doc writes from the option table options[] in common/config.c, and
`tools/config-doc --check` passes. Negative cases prove the check can fail: in a copy
of the tree, a help string changed in config.c makes --check fail with the line that
says what to run, and running the tool then makes it pass again; a table the parser
cannot read, or a page without its markers, is an error rather than a silent skip."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SOURCE = os.path.abspath(os.environ.get("MOONCAKE_SOURCE_DIR",
                                        os.path.join(os.path.dirname(__file__), "..", "..")))
TOOL = os.path.join(SOURCE, "tools", "config-doc")
STALE = "docs/configuration.md is stale: run tools/config-doc"
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True,
                          timeout=60)


def table_block(src):
    """The text of options[] in config.c, found without the tool's parser."""
    start = src.index("options[] = {")
    return src[start:src.index("\n};", start)]


def copy_tree(tmp):
    os.makedirs(os.path.join(tmp, "common"))
    os.makedirs(os.path.join(tmp, "docs"))
    shutil.copy(os.path.join(SOURCE, "common", "config.c"), os.path.join(tmp, "common"))
    shutil.copy(os.path.join(SOURCE, "docs", "configuration.md"), os.path.join(tmp, "docs"))


# The page in the tree is up to date.
p = run("--check")
check(p.returncode == 0, "docs/configuration.md is what tools/config-doc writes" +
      ("" if p.returncode == 0 else ": " + (p.stderr.strip() or p.stdout.strip())))

# Every option of the table is on the page, once, counted independently of the tool.
with open(os.path.join(SOURCE, "common", "config.c")) as f:
    config_c = f.read()
with open(os.path.join(SOURCE, "docs", "configuration.md")) as f:
    page = f.read()
envs = re.findall(r'"(MOONCAKE_[A-Z0-9_]+)"', table_block(config_c))
generated = page.split("<!-- options:start -->", 1)[-1].split("<!-- options:end -->", 1)[0]
rows = [line for line in generated.splitlines() if line.startswith("| `")]
check(len(envs) > 40 and len(rows) == len(envs),
      f"the page has one row per option of options[] ({len(rows)} rows, {len(envs)} options)")
missing = [e for e in envs if f"`{e}`" not in generated]
check(not missing, "every environment variable of options[] is on the page" +
      (f": missing {missing}" if missing else ""))
flags = re.findall(r'\{"([a-z0-9-]+)",', table_block(config_c))
missing = [fl for fl in flags if f"`--{fl}`" not in generated]
check(flags and not missing, "every flag of options[] is on the page" +
      (f": missing {missing}" if missing else ""))

with tempfile.TemporaryDirectory() as tmp:
    copy_tree(tmp)
    p = run("--check", "--source-dir", tmp)
    check(p.returncode == 0, "--check passes on an unchanged copy of the tree")

    # Change one help string (one that is a single literal) in the copy.
    path = os.path.join(tmp, "common", "config.c")
    helps = re.findall(r'"([^"\\]{12,})"\},', table_block(config_c))
    check(bool(helps), "found a help string to change")
    if helps:
        old = helps[0]
        new = old + " (changed by config_doc_test)"
        with open(path, "w") as f:
            f.write(config_c.replace(f'"{old}"}},', f'"{new}"}},', 1))
        p = run("--check", "--source-dir", tmp)
        check(p.returncode == 1 and STALE in p.stderr,
              f"--check fails when a help string changed, saying '{STALE}'"
              f" (exit {p.returncode}: {p.stderr.strip()})")
        with open(os.path.join(tmp, "docs", "configuration.md")) as f:
            before = f.read()
        p = run("--source-dir", tmp)
        with open(os.path.join(tmp, "docs", "configuration.md")) as f:
            after = f.read()
        check(p.returncode == 0 and new in after and before != after,
              "tools/config-doc writes the changed help string")
        prose = before.split("<!-- options:start -->")[0]
        check(prose.strip() and after.startswith(prose),
              "the hand-written prose above the markers is kept")
        p = run("--check", "--source-dir", tmp)
        check(p.returncode == 0, "--check passes again once the page is rewritten")

    # A table entry the parser cannot read is an error, not a row left out.
    with open(path, "w") as f:
        f.write(config_c.replace("OPT_STR, OFF(", 'OPT_STR, "extra field", OFF(', 1))
    p = run("--check", "--source-dir", tmp)
    check(p.returncode == 2 and "fields" in p.stderr,
          f"an entry with a field too many is refused (exit {p.returncode}: "
          f"{p.stderr.strip()})")

    # A page without its markers is an error.
    with open(path, "w") as f:
        f.write(config_c)
    with open(os.path.join(tmp, "docs", "configuration.md"), "w") as f:
        f.write("# Configuration\n\nno markers here\n")
    p = run("--source-dir", tmp)
    check(p.returncode == 2 and "markers" in p.stderr,
          f"a page without the markers is refused (exit {p.returncode})")

print(f"{len(failures)} failed" if failures else "all checks passed")
sys.exit(1 if failures else 0)
