#!/usr/bin/env python3
"""The floors hold (README, Layout): each floor's sources, compiled with the exact
flags the build gives them (compile_commands.json), find every header of their own
floor and of the floors below, and none of a floor above or beside them. So a
wrong-way include is a build error, and this test fails if a CMake change ever makes
it compile again (an include folder made public to everyone, say). Every header is
also checked to compile on its own. The programs (program/mooncake, program/mooncakectl)
may use every floor but not each other. And tools/ holds developer tools only: no
install() rule there, and nothing the install ships compiles a source from tools/."""
import glob
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

SOURCE = os.path.abspath(os.environ.get("MOONCAKE_SOURCE_DIR",
                                        os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("MOONCAKE_BUILD_DIR", os.path.join(SOURCE, "build"))

# Each floor and the floors it may use; the programs on top may use all of them (but
# not each other).
MAY_USE = {
    "codec": [],
    "common": ["codec"],
    "processors": ["common", "codec"],
    "gateway": ["common", "codec"],
}
FLOORS = list(MAY_USE)
MAY_USE["program/mooncake"] = FLOORS
MAY_USE["program/mooncakectl"] = FLOORS

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def flags_of(floor, commands):
    """The compiler and its flags for a source of this floor, without -c/-o/-M*."""
    for entry in commands:
        if os.path.dirname(os.path.abspath(entry["file"])) == os.path.join(SOURCE, floor):
            args = entry.get("arguments") or shlex.split(entry["command"])
            kept, skip = [], False
            for a in args:
                if skip:
                    skip = False
                    continue
                if a in ("-o", "-MF", "-MT", "-MQ"):
                    skip = True
                    continue
                if a in ("-c", "-MD", "-MMD") or a == entry["file"] or a.endswith(".c"):
                    continue
                kept.append(a)
            return kept, entry.get("directory", BUILD)
    return None, None


def output_of(entry):
    """The object file a compile command writes (relative to its directory)."""
    args = entry.get("arguments") or shlex.split(entry["command"])
    return entry.get("output") or (args[args.index("-o") + 1] if "-o" in args else "")


def tools_ship_nothing(commands):
    """tools/ holds developer tools (mooncake-schema, the benchmarks): no install() rule
    in its CMake files, none generated for it in the build, and no installed binary
    compiles a source from it. What the image ships lives in program/."""
    tools = os.path.join(SOURCE, "tools")
    cmake_files = [f for f in glob.glob(os.path.join(tools, "**", "*"), recursive=True)
                   if os.path.basename(f) == "CMakeLists.txt" or f.endswith(".cmake")]
    check(cmake_files, "tools/ has CMake files to check")
    for f in cmake_files:
        with open(f) as fh:
            text = re.sub(r"#.*", "", fh.read())
        check(re.search(r"\binstall\s*\(", text) is None,
              f"{os.path.relpath(f, SOURCE)} has no install() rule")
    # The rules CMake generated: <build>/<dir>/cmake_install.cmake installs <dir>'s targets.
    installed = []
    for f in glob.glob(os.path.join(BUILD, "**", "cmake_install.cmake"), recursive=True):
        where = os.path.relpath(os.path.dirname(f), BUILD)
        with open(f) as fh:
            files = [x for m in re.findall(r"file\(INSTALL [^\n]*FILES ([^)\n]*)\)", fh.read())
                     for x in re.findall(r'"([^"]+)"', m)]
        if where == "tools" or where.startswith("tools" + os.sep):
            check(not files, f"the build installs nothing from {where}/"
                  + (f": {files}" if files else ""))
        installed += files
    names = sorted({os.path.basename(x) for x in installed})
    check(names, f"the build installs binaries ({', '.join(names)})")
    for name in names:
        sources = [os.path.abspath(os.path.join(e.get("directory", BUILD), e["file"]))
                   for e in commands
                   if f"/{name}.dir/" in "/" + output_of(e).replace(os.sep, "/")]
        check(sources, f"installed {name}: its sources are in compile_commands.json")
        from_tools = [os.path.relpath(x, SOURCE) for x in sources
                      if x.startswith(tools + os.sep)]
        check(not from_tools, f"installed {name} compiles nothing from tools/"
              + (f": {from_tools}" if from_tools else ""))


def compiles(flags, directory, header, scratch):
    """Whether `#include "header"` compiles with these flags (from an empty folder,
    so only the include path can find it)."""
    p = subprocess.run(flags + ["-fsyntax-only", "-x", "c", "-"], input=f'#include "{header}"\n',
                       capture_output=True, text=True, cwd=scratch)
    return p.returncode == 0, p.stderr


def main():
    path = os.path.join(BUILD, "compile_commands.json")
    if not os.path.exists(path):
        sys.exit(f"floors_test: {path} is missing (CMAKE_EXPORT_COMPILE_COMMANDS is on in "
                 "CMakeLists.txt; build first)")
    with open(path) as f:
        commands = json.load(f)
    headers = {floor: sorted(os.path.basename(h)
                             for h in glob.glob(os.path.join(SOURCE, floor, "*.h")))
               for floor in MAY_USE}
    with tempfile.TemporaryDirectory() as scratch:
        for floor, below in MAY_USE.items():
            flags, directory = flags_of(floor, commands)
            check(flags is not None, f"{floor}: its sources are in the build")
            if flags is None:
                continue
            for other in MAY_USE:
                allowed = other == floor or other in below
                for h in headers[other]:
                    ok, err = compiles(flags, directory, h, scratch)
                    if allowed:
                        check(ok, f"{floor} may include {other}/{h}" +
                              ("" if ok else ": " + err.strip().splitlines()[0]))
                    else:
                        check(not ok and ("No such file" in err or "not found" in err),
                              f"{floor} cannot include {other}/{h}")
    tools_ship_nothing(commands)
    if failures:
        sys.exit(f"floors_test: {len(failures)} failed")
    print("floors_test: every floor sees only itself and the floors below; tools/ ships "
          "nothing")


main()
