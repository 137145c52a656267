#!/usr/bin/env python3
"""The container image, checked without a Docker engine (CI has none):
- tools/dockerfile-check lints the Dockerfile with BuildKit's own rules (what
  `docker build --check` runs) and ours, and refuses a broken one;
- the build stage is what CI builds: `tools/setup --build-only` (whose packages are
  part of what the full setup installs), the quickstart's CMake configure line, and
  `cmake --install`, which ships exactly the binaries the COPY names;
- the runtime stage installs exactly the Debian packages that provide the shared
  libraries mooncake and mooncakectl link against, the package of the time zone files
  the binary reads by default
  (--zoneinfo-dir: tzdata's /usr/share/zoneinfo), plus curl and ca-certificates for the
  chart's test Pod: a new library dependency fails here until the Dockerfile gains its
  package. The image is Debian 13 and CI's machine Debian 12: a library's Debian 13
  package is its Debian 12 package's name, or that name with Debian 13's "t64" suffix
  (the 64-bit time_t rename: libcurl4 is libcurl4t64), and the librdkafka tools/setup
  built from Debian 13's source is librdkafka1's."""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chart_tools import BUILD, SOURCE, Checks, tool  # noqa: E402

c = Checks()
DOCKERFILE = os.path.join(SOURCE, "Dockerfile")
with open(DOCKERFILE) as f:
    text = f.read()
check_bin = tool("dockerfile-check")

# 1. The lint, and that it can fail.
p = subprocess.run([check_bin, DOCKERFILE], capture_output=True, text=True, timeout=120)
c.check(p.returncode == 0, "dockerfile-check passes" + ("" if p.returncode == 0 else ":\n" + p.stdout))
broken = (text.replace("FROM debian:trixie AS build", "FROM debian as Build")
          .replace('ENTRYPOINT ["mooncake"]', "ENTRYPOINT mooncake")
          .replace("USER 10001:10001", "USER mooncake")
          .replace(" \\\n && rm -rf /var/lib/apt/lists/*", ""))
with tempfile.NamedTemporaryFile("w", suffix=".Dockerfile", delete=False) as f:
    f.write(broken)
p = subprocess.run([check_bin, f.name], capture_output=True, text=True, timeout=120)
os.unlink(f.name)
for needle in ("FromAsCasing", "StageNameCasing", "JSONArgsRecommended", "no tag",
               "numeric non-root uid", "/var/lib/apt/lists"):
    c.check(p.returncode == 1 and needle in p.stdout,
            f"dockerfile-check refuses a broken Dockerfile: {needle}")

# The stages, joined across line continuations.
logical = re.sub(r"\\\n\s*", " ", text)
stages = re.split(r"^FROM ", logical, flags=re.M)[1:]
c.check(len(stages) == 2, "two stages: build and runtime")
build, runtime = stages[0], stages[-1]

# 2. The build stage runs the repository's own set-up and build.
c.check("tools/setup --build-only" in build, "the build stage installs with tools/setup --build-only")
with open(os.path.join(SOURCE, "tools", "quickstart")) as f:
    quick = re.search(r"cmake -S \. -B build [^>|\n]*", f.read()).group(0).strip()
c.check(quick in build, f"the build stage configures as the quickstart does ({quick})")
c.check("cmake --build build" in build and "cmake --install build --prefix /out" in build,
        "the build stage builds and installs with CMake")
setup = open(os.path.join(SOURCE, "tools", "setup")).read()
build_pkgs = re.search(r"BUILD_APT_PACKAGES=\(([^)]*)\)", setup).group(1).split()
c.check(build_pkgs and '"${BUILD_APT_PACKAGES[@]}"' in re.search(r"\nAPT_PACKAGES=\(([^)]*)\)",
                                                                 setup).group(1),
        "the build-only packages are part of the full set-up's")
with tempfile.TemporaryDirectory() as prefix:
    subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix], check=True,
                   capture_output=True)
    installed = sorted(os.listdir(os.path.join(prefix, "bin")))
copied = sorted(os.path.basename(x) for x in
                re.search(r"COPY --from=build (.*) /usr/local/bin/", runtime).group(1).split())
c.check(installed == ["mooncake", "mooncakectl"] and copied == installed,
        f"cmake --install ships {installed}; the image copies {copied}")

# 3. The runtime packages are the binaries' libraries' packages.
needed = set()
for binary in (os.path.join(BUILD, "mooncake"), os.path.join(BUILD, "mooncakectl")):
    elf = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True).stdout
    sonames = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", elf))
    # The sanitizer build's runtimes are not the image's (it is built without them).
    sonames = {so for so in sonames if not re.match(r"lib(asan|ubsan|lsan|tsan)\.", so)}
    paths = dict(re.findall(r"^\s*(\S+) => (\S+)", subprocess.run(
        ["ldd", binary], capture_output=True, text=True).stdout, flags=re.M))
    for so in sonames:
        path = paths.get(so)
        c.check(path is not None, f"{os.path.basename(binary)}: ldd resolves {so}")
        if not path:
            continue
        owner = None
        if re.search(r"/librdkafka-[0-9.]+/lib/", path):  # built by tools/setup (Debian 12)
            owner = "librdkafka1"
        for candidate in (path, os.path.realpath(path)) if not owner else ():  # /lib: /usr/lib
            q = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
            if q.returncode == 0:
                owner = q.stdout.split(":")[0].strip()
                break
        c.check(owner is not None, f"{so} belongs to a Debian package")
        if owner:
            needed.add(owner)
needed.discard("libc6")  # in every Debian image
# The data files the binary reads at run time: the IANA time zone files (the jobs role
# and the gateway), at the default of --zoneinfo-dir.
usage = subprocess.run([os.path.join(BUILD, "mooncake"), "--help"], capture_output=True,
                       text=True).stdout
zoneinfo = re.search(r"env MOONCAKE_ZONEINFO_DIR, default (\S+)", usage)
c.check(zoneinfo is not None, "mooncake --help gives the default --zoneinfo-dir")
data = set()
if zoneinfo:
    q = subprocess.run(["dpkg", "-S", zoneinfo.group(1)], capture_output=True, text=True)
    owner = q.stdout.split(":")[0].strip() if q.returncode == 0 else None
    c.check(owner == "tzdata" and os.path.exists(os.path.join(zoneinfo.group(1), "Etc", "UTC")),
            f"the default --zoneinfo-dir {zoneinfo.group(1)} holds tzdata's files (owner: {owner})")
    if owner:
        data.add(owner)
        c.check(owner in re.search(r"\nAPT_PACKAGES=\(([^)]*)\)", setup).group(1).split(),
                f"tools/setup installs {owner} too (the unit tests read the time zone files)")
install = re.search(r"apt-get install -y --no-install-recommends ([^&]*)", runtime).group(1).split()
# Each installed package, as the Debian 12 package it stands for.
as_debian12 = sorted(p[:-3] if p.endswith("t64") else p for p in install)
c.check(as_debian12 == sorted(needed | data | {"curl", "ca-certificates"}),
        f"the runtime stage installs {sorted(install)}; the binaries need {sorted(needed)} "
        f"(or their t64 renames), their data {sorted(data)}, plus curl and ca-certificates")
c.check(re.search(r"^USER 10001:10001$", runtime, flags=re.M) is not None,
        "the image runs as uid 10001, the chart's runAsUser")
c.exit()
