"""The processes of a run: the broker, every mooncake role instance (started,
killed, stopped, restarted, supervised; stopped gracefully and started again under its
own id in a roll; added and removed in a scale step), the log of what was done to them
(events.jsonl) and of every process started (pids.tsv, for --cleanup)."""

import json
import os
import signal
import subprocess
import threading
import time

from base import FAILOVER_ENV, ROLE_ARGS, ROOT, free_port, http_get, now_ms, say, tail

# ---- chaos events ----------------------------------------------------------------------

class Events:
    """Every chaos event and every process start/exit, with its wall time, kept in
    memory for the verdict and appended to events.jsonl as it happens."""

    def __init__(self, path):
        self.items = []
        self.lock = threading.Lock()
        self.f = open(path, "w", buffering=1)
        self.t0 = None

    def log(self, kind, quiet=False, **kw):
        e = {"t": now_ms(), "kind": kind, **kw}
        with self.lock:
            self.items.append(e)
            self.f.write(json.dumps(e) + "\n")
        if not quiet:
            rel = f"+{(e['t'] - self.t0) / 1000:6.1f}s" if self.t0 else "       "
            detail = " ".join(f"{k}={v}" for k, v in kw.items())
            say(f"  {rel} {kind:13s} {detail}")
        return e

    def snapshot(self):
        with self.lock:
            return list(self.items)


# ---- the broker ----------------------------------------------------------------------

class Broker:
    """tools/kafka-local on a private port; restartable with its data kept."""

    def __init__(self, port, directory):
        self.port = port
        self.dir = directory
        self.tool = os.path.join(ROOT, "tools", "kafka-local")

    def start(self, keep=False):
        cmd = [self.tool, "start", "--port", str(self.port), "--dir", self.dir]
        out = subprocess.run(cmd + (["--keep"] if keep else []), capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"kafka-local start failed:\n{out.stderr[-3000:]}")
        return out.stdout.strip().splitlines()[-1]

    def stop(self):
        subprocess.run([self.tool, "stop", "--dir", self.dir], capture_output=True)


# ---- the mooncake processes ----------------------------------------------------------------

class Slot:
    """One role instance: restarted in place (same slot) after a kill, with the same
    or a new instance id; like a StatefulSet's replica <role>-<index>."""

    def __init__(self, role, index):
        self.role, self.index = role, index
        self.name = f"{role}-{index}"
        self.instance = self.name
        self.proc = None
        self.port = None
        self.log_path = None
        self.gen = 0
        # up; stopped (SIGSTOP); down; leaving (SIGTERMed by a roll or a scale-in: its
        # exit is no crash, the supervisor leaves it be, chaos does not pick it); gone
        # (removed by a scale-in)
        self.state = "down"
        self.respawn_at = None  # set when it exited on its own

    def describe(self):
        return {"role": self.role, "slot": self.name, "instance": self.instance,
                "pid": self.proc.pid if self.proc else None}


class Cluster:
    """Starts, kills, freezes and restarts the role processes; a supervisor thread
    restarts any that exits on its own (a fatal Kafka error during a broker restart,
    a crash) one second later, with the same instance id. A roll or a scale-in stops a
    slot gracefully (terminate); a scale-out adds one (add_slot), a scale-in removes it
    (remove_slot). `slots` is replaced, never changed in place, so a reader may iterate
    it without the lock; the logs of removed slots stay in `logs`."""

    def __init__(self, args, bootstrap, prefix, run_dir, events, env=None):
        self.mooncake = os.path.join(args.build, "mooncake")
        self.logdir = os.path.join(run_dir, "logs")
        os.makedirs(self.logdir, exist_ok=True)
        self.events = events
        self.lock = threading.RLock()
        self.logs = []
        self.slots = [Slot(role, i) for role, n in args.instance_counts.items()
                      for i in range(n)]
        self.gens = {}  # slot name -> last generation: a name used again logs anew
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("MOONCAKE_")}
        self.env.update(FAILOVER_ENV)
        self.env.update({
            "MOONCAKE_BOOTSTRAP_SERVERS": bootstrap, "MOONCAKE_TOPIC_PREFIX": prefix,
            "MOONCAKE_PARTITIONS": str(args.partitions), "MOONCAKE_CREATE_TOPICS": "false",
            "MOONCAKE_HORIZON_MS": str(args.horizon_ms),
            "MOONCAKE_WHEEL_LEAD_MS": str(args.lead_ms),
            "MOONCAKE_EXECUTOR_ALLOW_CIDRS": "127.0.0.1/32,::1/128", "MOONCAKE_LOG_LEVEL": "info"})
        self.env.update(env or {})
        self.stopping = False
        self.supervisor = threading.Thread(target=self._supervise, daemon=True)

    def of_role(self, role):
        return [s for s in self.slots if s.role == role]

    def spawn(self, slot, new_id=False):
        with self.lock:
            slot.gen = max(slot.gen, self.gens.get(slot.name, 0)) + 1
            self.gens[slot.name] = slot.gen
            if new_id:
                slot.instance = f"{slot.name}g{slot.gen}"
            slot.port = free_port()
            slot.log_path = os.path.join(self.logdir, f"{slot.name}.{slot.gen}.{slot.instance}.log")
            self.logs.append(slot.log_path)
            with open(slot.log_path, "wb") as log:
                role_args = ROLE_ARGS.get(slot.role, (slot.role,))
                slot.proc = Pids.popen(
                    [self.mooncake, *role_args, "--http-port", str(slot.port),
                     "--instance-id", slot.instance,
                     "-X", f"client.id={slot.role}/{slot.instance}"],
                    env=self.env, stdout=log, stderr=subprocess.STDOUT)
            slot.state = "up"
            slot.respawn_at = None

    def start_all(self, timeout=90):
        for s in self.slots:
            self.spawn(s)
        deadline = time.time() + timeout
        for s in self.slots:
            while http_get(s.port, "/readyz")[0] != 200:
                if s.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"{s.name} did not become ready (log {s.log_path}):\n"
                                       + tail(s.log_path))
                time.sleep(0.1)
        self.supervisor.start()

    def kill(self, slot, why):
        """kill -9 of a running instance; False (nothing done) when it is not up any
        more (a roll or a scale-in took it since it was picked)."""
        with self.lock:
            if slot.state != "up":
                return False
            slot.proc.kill()
            slot.proc.wait()
            slot.state = "down"
            slot.respawn_at = None
            self.events.log("kill", why=why, **slot.describe())
            return True

    def restart(self, slot, new_id):
        with self.lock:
            if slot.state != "down" or self.stopping:
                return
            self.spawn(slot, new_id)
            self.events.log("restart", new_id=new_id, **slot.describe())

    def freeze(self, slot, why):
        """SIGSTOP of a running instance; False when it is not up any more."""
        with self.lock:
            if slot.state != "up":
                return False
            slot.proc.send_signal(signal.SIGSTOP)
            slot.state = "stopped"
            self.events.log("stop", why=why, **slot.describe())
            return True

    # -- graceful stops: rolls and scale steps (a StatefulSet's way) --
    def terminate(self, slot, timeout=40):
        """SIGTERM of a running instance, as Kubernetes stops a pod, and the wait for
        it to exit (the executor drains its calls in flight first, at most
        --drain-timeout-ms, 10 s). Marked leaving first, so the supervisor does not
        take the exit for a crash and chaos picks it no more. Past timeout it is
        killed (rc "timeout"). Returns (rc, seconds to exit, the slot as it was), or
        None when the slot was not up."""
        with self.lock:
            if slot.state != "up" or slot.proc.poll() is not None:
                return None
            was = slot.describe()
            slot.state = "leaving"
            slot.respawn_at = None
            proc = slot.proc
            started = time.time()
            proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rc = "timeout"
        took = round(time.time() - started, 3)
        with self.lock:
            slot.state = "down"
        return rc, took, was

    def start_again(self, slot):
        """A slot a roll stopped, started again under the same instance id."""
        with self.lock:
            if slot.state != "down" or self.stopping:
                return False
            self.spawn(slot)
            return True

    def wait_ready(self, slot, timeout=60):
        """Until the slot's process answers /readyz 200: (seconds, None), or (None,
        why not): "timeout"; "exited" (before it was ready); "replaced" (chaos killed
        it meanwhile); "frozen" (chaos SIGSTOPped it meanwhile, and the time ran out)."""
        with self.lock:
            proc = slot.proc
        started, frozen = time.time(), False
        while True:
            if slot.proc is not proc or slot.state not in ("up", "stopped"):
                return None, "replaced"
            frozen = frozen or slot.state == "stopped"
            if proc.poll() is not None:
                return None, "exited"
            if http_get(slot.port, "/readyz", timeout=1)[0] == 200:
                return round(time.time() - started, 3), None
            if time.time() - started > timeout:
                return None, "frozen" if frozen else "timeout"
            time.sleep(0.1)

    def add_slot(self, role):
        """A scale-out: a new slot <role>-<next index> (a new instance id), started."""
        with self.lock:
            if self.stopping:
                return None
            index = 1 + max((s.index for s in self.slots if s.role == role), default=-1)
            slot = Slot(role, index)
            self.slots = self.slots + [slot]
            self.spawn(slot)
            return slot

    def remove_slot(self, slot):
        """A scale-in, once the slot's process has exited: out of the cluster."""
        with self.lock:
            slot.state = "gone"
            self.slots = [s for s in self.slots if s is not slot]

    def thaw(self, slot):
        with self.lock:
            if slot.state != "stopped":
                return
            slot.proc.send_signal(signal.SIGCONT)
            slot.state = "up"
            self.events.log("cont", **slot.describe())

    def _supervise(self):
        while not self.stopping:
            with self.lock:
                for s in self.slots:
                    if s.state == "up" and s.proc.poll() is not None:
                        s.state = "down"
                        s.respawn_at = time.time() + 1.0
                        self.events.log("exit", rc=s.proc.returncode, **s.describe())
                    elif s.state == "down" and s.respawn_at and time.time() >= s.respawn_at \
                            and not self.stopping:
                        self.spawn(s)
                        self.events.log("respawn", **s.describe())
            time.sleep(0.2)

    def ensure_all_up(self):
        """After the chaos: every frozen instance thawed, every killed one running
        (a roll or scale step left none leaving: the chaos thread waits for them)."""
        with self.lock:
            for s in self.slots:
                if s.state == "stopped":
                    self.thaw(s)
                elif s.state == "down":
                    self.spawn(s)
                    self.events.log("respawn", **s.describe())

    def up_count(self):
        with self.lock:
            return sum(1 for s in self.slots if s.state == "up" and s.proc.poll() is None)

    def stop_all(self, timeout=40):
        """SIGTERM (the executor drains its calls in flight), then SIGKILL after
        timeout. Returns the slots that did not exit 0."""
        with self.lock:
            self.stopping = True
            for s in self.slots:
                if s.proc and s.proc.poll() is None:
                    if s.state == "stopped":
                        s.proc.send_signal(signal.SIGCONT)
                    s.proc.send_signal(signal.SIGTERM)
        bad = []
        deadline = time.time() + timeout
        for s in self.slots:
            if not s.proc:
                continue
            try:
                rc = s.proc.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                s.proc.kill()
                rc = s.proc.wait()
            if rc != 0 and s.state == "up":
                bad.append((s.name, rc))
            s.state = "down"
        return bad

    def owner(self, owners, role, partition):
        """The live slot of `role` that owns `partition` of its input now, or None."""
        cid = owners.owner(role, partition)
        inst = cid.split("/", 1)[-1] if cid else None
        with self.lock:
            for s in self.of_role(role):
                if s.instance == inst and s.state == "up":
                    return s
        return None


class Pids:
    """Every process this run starts, appended to <run dir>/pids.tsv with its command
    line, so `tests/chaos/chaos --cleanup RUN_DIR` can stop what a killed harness left."""
    path = None
    lock = threading.Lock()

    @classmethod
    def popen(cls, cmd, **kw):
        p = subprocess.Popen(cmd, start_new_session=True, **kw)
        if cls.path:
            with cls.lock, open(cls.path, "a") as f:
                f.write(f"{p.pid}\t{' '.join(cmd)}\n")
        return p


def cleanup_run_dir(run_dir):
    """Kills the processes of pids.tsv that still run the command recorded for them and
    stops the run's broker."""
    try:
        with open(os.path.join(run_dir, "pids.tsv")) as f:
            rows = [line.rstrip("\n").split("\t", 1) for line in f if "\t" in line]
    except OSError:
        rows = []
    for pid, cmd in rows:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                running = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if running == cmd.strip():
            os.kill(int(pid), signal.SIGKILL)
            say(f"killed {pid}: {cmd[:100]}")
    if os.path.isdir(os.path.join(run_dir, "kafka")):
        Broker(0, os.path.join(run_dir, "kafka")).stop()
