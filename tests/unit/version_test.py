#!/usr/bin/env python3
"""`mooncake --version` and `mooncakectl --version` say which librdkafka the binary
runs, and it is the one the build requires (MOONCAKE_RDKAFKA_MIN_VERSION, 2.8.0 unless
the build said otherwise): the version the library reports at run time, so a binary
that loaded another librdkafka than it was built with shows it."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chart_tools import BUILD, Checks  # noqa: E402

c = Checks()


def version_tuple(text):
    return tuple(int(x) for x in text.split("."))


with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
    cache = f.read()
minimum = re.search(r"^MOONCAKE_RDKAFKA_MIN_VERSION:STRING=(\S+)$", cache, flags=re.M)
c.check(minimum is not None, "the build records the oldest librdkafka it accepts")
project = re.search(r"^CMAKE_PROJECT_VERSION:STATIC=(\S+)$", cache, flags=re.M)

for name in ("mooncake", "mooncakectl"):
    p = subprocess.run([os.path.join(BUILD, name), "--version"], capture_output=True, text=True,
                       timeout=30)
    m = re.fullmatch(rf"{name} (\S+) \(librdkafka ([0-9.]+)\)\n", p.stdout)
    c.check(p.returncode == 0 and m is not None,
            f"{name} --version prints '{name} VERSION (librdkafka X.Y.Z)': {p.stdout!r}")
    if not m:
        continue
    if project:
        c.check(m.group(1) == project.group(1), f"{name} is version {project.group(1)}")
    if minimum:
        c.check(version_tuple(m.group(2)) >= version_tuple(minimum.group(1)),
                f"{name} runs librdkafka {m.group(2)}, at least {minimum.group(1)}")
c.exit()
