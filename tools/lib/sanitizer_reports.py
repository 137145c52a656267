"""Sanitizer reports in a mooncake process's log, for the judges that read them (the
chaos run and the integration tests' harness): which report fails a run, and which is
librdkafka's own leak at a fatal exit, listed apart."""
import re

SANITIZER_NEEDLES = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")

LEAK_FRAME = re.compile(r"^\s+#(\d+) 0x[0-9a-f]+ (.*)$")
# A frame inside librdkafka: its shared object (a distribution's build, no debug
# information), or one of its source files (tools/setup's build from source names them).
LIBRDKAFKA_FRAME = re.compile(r"librdkafka\.so|/librdkafka-[^/\s]+/src/")


def librdkafka_leak_at_fatal_exit(text, at):
    """Whether the sanitizer report at `at` is LeakSanitizer's at the exit of a process
    that stopped because send_offsets_to_transaction failed fatally, with every
    allocation made inside librdkafka: after a transaction turns fatal in the middle
    of that call (a broker restart: sequence numbers out of order; a zombie fenced by
    its successor), librdkafka (2.0.2 and 2.8.0 alike) does not free the request it
    had in flight (its copy of the offsets and the group metadata, about 2.6 kB). Not
    a leak of a running process. Any other
    report, a leak with a frame of ours, or one after another fatal error still fails
    (a leak of ours of something librdkafka allocated would look the same: the
    unwinder stops in librdkafka, built without frame pointers)."""
    if not text.startswith("ERROR: LeakSanitizer", at) or \
            'msg=fatal what=send_offsets_to_transaction' not in text[:at]:
        return False
    end = text.find("SUMMARY:", at)
    frames = [m[2] for line in text[at:end if end >= 0 else None].splitlines()
              if (m := LEAK_FRAME.match(line)) and m[1] != "0"]
    return bool(frames) and all(LIBRDKAFKA_FRAME.search(f) for f in frames)


def failing_reports(text):
    """The sanitizer reports in a process's log that fail a run, each from its first
    line, and the number of librdkafka leaks at a fatal exit left out of them."""
    failing, excused = [], 0
    for needle in SANITIZER_NEEDLES:
        i = text.find(needle)
        if i < 0:
            continue
        if librdkafka_leak_at_fatal_exit(text, i):
            excused += 1
        else:
            failing.append(text[i:i + 3000])
    return failing, excused
