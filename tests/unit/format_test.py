#!/usr/bin/env python3
"""Every C source in the repository is formatted as .clang-format says: the
formatting check CI runs (tools/setup installs clang-format). Fails with the
files and the command that fixes them."""
import os
import shutil
import subprocess
import sys

SOURCE_DIR = os.environ.get("MOONCAKE_SOURCE_DIR",
                            os.path.join(os.path.dirname(__file__), "..", ".."))


def main():
    exe = shutil.which("clang-format")
    if not exe:
        sys.exit("format_test: clang-format is not installed (tools/setup installs it)")
    files = subprocess.run(["git", "ls-files", "*.c", "*.h"], cwd=SOURCE_DIR, check=True,
                           capture_output=True, text=True).stdout.split()
    files += subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "*.c", "*.h"],
                            cwd=SOURCE_DIR, check=True, capture_output=True,
                            text=True).stdout.split()
    if not files:
        sys.exit("format_test: no C sources found under " + SOURCE_DIR)
    bad = []
    for i in range(0, len(files), 50):
        r = subprocess.run([exe, "--dry-run", "--Werror", *files[i:i + 50]], cwd=SOURCE_DIR,
                           capture_output=True, text=True)
        if r.returncode != 0:
            bad += sorted({line.split(":")[0] for line in r.stderr.splitlines()
                           if ": error:" in line})
    if bad:
        sys.exit("format_test: not formatted as .clang-format says: %s\n"
                 "fix with: clang-format -i %s" % (", ".join(bad), " ".join(bad)))
    print(f"format_test: {len(files)} files formatted")


if __name__ == "__main__":
    main()
