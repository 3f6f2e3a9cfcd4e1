"""The Python side of the served-path benchmark (`make bench`, section "Served
from Python"): /bin/true in the default profile, called from this process four
ways, timed here.

  served  tooljail.run through a `tooljail serve` server (socket=)
  cli     tooljail.run through the CLI (TOOLJAIL_BIN, no server)
  bwrap   subprocess.run of bwrap --unshare-all with the default profile's mounts
  bare    subprocess.run(["/bin/true"])
  session tooljail.Session(...).run(["/bin/true"]): a call in a live session
          (latency only: a session runs one call at a time)

Latency at concurrency 1, the four alternated call by call; then throughput at
concurrency 4 in alternating blocks, with the CPU each side spent: this
process's own (getrusage RUSAGE_SELF), its reaped children's (RUSAGE_CHILDREN:
the CLI or bwrap and everything under it) and, for the served calls, the
server's own and its reaped children's (the jails), from /proc/PID/stat; and
the kernel's work outside every process (its own threads: namespace and cgroup
teardown, RCU callbacks; interrupts), machine-wide, less the rate measured
with nothing of this script running.

bench/tjbench starts the server, runs this script and writes the report; run
alone, it needs the same arguments (see --help). Standard library only; the
client is python/tooljail from this source tree, never an installed one.
"""

import argparse
import hashlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import tooljail  # noqa: E402  (from the source tree, on the path just above)
from tooljail import _call  # noqa: E402

VARIANTS = ("served", "cli", "bwrap", "bare")
# The large-output pass adds subprocess.run under patch_subprocess() (the CLI
# route with the caller's pipes): every way a caller gets a command's output.
BIG_VARIANTS = ("served", "cli", "patched", "bwrap", "bare")


def make_calls(socket_path, bwrap_argv, workdir):
    """The four calls, each one complete run that raises unless /bin/true
    exited 0. Output is captured on every side, as an agent reads it."""

    def served():
        r = tooljail.run(["/bin/true"], cwd=workdir, capture_output=True, socket=socket_path)
        if r.returncode != 0 or r.report.status != "exited":
            raise RuntimeError("served /bin/true: exit %d, status %s" % (r.returncode, r.report.status))

    def cli():
        r = tooljail.run(["/bin/true"], cwd=workdir, capture_output=True)
        if r.returncode != 0 or r.report.status != "exited":
            raise RuntimeError("CLI /bin/true: exit %d, status %s" % (r.returncode, r.report.status))

    def bwrap():
        r = subprocess.run(bwrap_argv, cwd=workdir, capture_output=True)
        if r.returncode != 0:
            raise RuntimeError("bwrap: exit %d: %s" % (r.returncode, r.stderr.decode(errors="replace").strip()))

    def bare():
        r = subprocess.run(["/bin/true"], cwd=workdir, capture_output=True)
        if r.returncode != 0:
            raise RuntimeError("/bin/true: exit %d" % r.returncode)

    return {"served": served, "cli": cli, "bwrap": bwrap, "bare": bare}


def make_big_calls(socket_path, bwrap_argv, workdir, path):
    """The large-output calls: /bin/cat of the file at path (in workdir), its
    output captured as bytes; each raises unless the bytes are the file's."""
    with open(path, "rb") as f:
        want = hashlib.sha256(f.read()).hexdigest()
    argv = ["/bin/cat", path]
    # bwrap's command line ends with "--" and the command.
    bw = bwrap_argv[:bwrap_argv.index("--") + 1] + argv

    def check(name, out):
        if hashlib.sha256(out).hexdigest() != want:
            raise RuntimeError("%s: %d bytes of output, not the file's %s" % (name, len(out), want))

    def served():
        check("served", tooljail.run(argv, cwd=workdir, capture_output=True, socket=socket_path).stdout)

    def cli():
        check("cli", tooljail.run(argv, cwd=workdir, capture_output=True).stdout)

    def patched():
        with tooljail.patch_subprocess():
            check("patched", subprocess.run(argv, cwd=workdir, capture_output=True).stdout)

    def bwrap():
        check("bwrap", subprocess.run(bw, cwd=workdir, capture_output=True).stdout)

    def bare():
        check("bare", subprocess.run(argv, cwd=workdir, capture_output=True).stdout)

    return {"served": served, "cli": cli, "patched": patched, "bwrap": bwrap, "bare": bare}


def check_cli_transport(binary):
    """The cli variant must reach the CLI, not a server some other process
    runs on the default socket: the driver's environment sees to that, and
    this says so before anything is timed."""
    got = _call.choose_transport(None, os.environ, os.getuid(), os.path.exists, shutil.which)
    if got != ("cli", binary):
        sys.exit("serve_bench: without socket= the client would use %s %s, not the CLI %s: unset "
                 "TOOLJAIL_SERVER and point XDG_RUNTIME_DIR at a directory without tooljail.sock"
                 % (got[0], got[1], binary))


def alternate(calls, names, rounds):
    """Wall times in ms per name, round by round, each round starting one
    call further along, so that drift hits every call alike."""
    out = {n: [] for n in names}
    clock = time.perf_counter_ns
    for r in range(rounds):
        for k in range(len(names)):
            name = names[(r + k) % len(names)]
            fn = calls[name]
            t0 = clock()
            fn()
            out[name].append((clock() - t0) / 1e6)
    return out


def server_cpu(pid):
    """(own, reaped children) CPU seconds of pid from /proc/PID/stat."""
    with open("/proc/%d/stat" % pid, "rb") as f:
        stat = f.read()
    # The command name may hold spaces: the fields start after the last ')'.
    fields = stat[stat.rindex(b")") + 2:].split()
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    tick = os.sysconf("SC_CLK_TCK")
    return (utime + stime) / tick, (cutime + cstime) / tick


PF_KTHREAD = 0x00200000  # include/linux/sched.h


def kernel_cpu():
    """CPU seconds of the kernel's own threads (PF_KTHREAD: kworkers,
    ksoftirqd, RCU's) and of interrupts (/proc/stat's irq and softirq),
    machine-wide, from boot. A kernel thread that exits between two readings
    takes its time with it: nobody reaps it into a total."""
    tick = os.sysconf("SC_CLK_TCK")
    ticks = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read()
        except OSError:
            continue  # gone
        fields = stat[stat.rindex(b")") + 2:].split()
        if int(fields[6]) & PF_KTHREAD:
            ticks += int(fields[11]) + int(fields[12])
    with open("/proc/stat", "rb") as f:
        cpu = f.readline().split()  # cpu user nice system idle iowait irq softirq ...
    ticks += int(cpu[6]) + int(cpu[7])
    return ticks / tick


def kernel_idle_rate(seconds):
    """kernel_cpu's growth per second while this script runs nothing: what
    the machine's kernel does anyway, taken off each block's figure."""
    k0, t0 = kernel_cpu(), time.perf_counter()
    time.sleep(seconds)
    return (kernel_cpu() - k0) / (time.perf_counter() - t0)


def rusage_cpu(who):
    ru = resource.getrusage(who)
    return ru.ru_utime + ru.ru_stime


def parallel(fn, total, conc):
    """Runs fn total times on conc threads; returns the wall time in s. The
    first failure stops the others and is raised."""
    lock = threading.Lock()
    left = [total]
    failed = []

    def worker():
        while True:
            with lock:
                if left[0] == 0 or failed:
                    return
                left[0] -= 1
            try:
                fn()
            except Exception as e:
                with lock:
                    failed.append(e)
                return

    threads = [threading.Thread(target=worker) for _ in range(conc)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    if failed:
        raise failed[0]
    return wall


def throughput(calls, names, runs, conc, blocks, server_pid):
    """Alternating blocks of runs/blocks calls per name at conc; each block
    with its wall time and the CPU spent during it."""
    per = -(-runs // blocks)
    out = []
    for b in range(blocks):
        for k in range(len(names)):
            name = names[(b + k) % len(names)]
            self0, child0 = rusage_cpu(resource.RUSAGE_SELF), rusage_cpu(resource.RUSAGE_CHILDREN)
            srv0, k0 = server_cpu(server_pid), kernel_cpu()
            wall = parallel(calls[name], per, conc)
            srv1, k1 = server_cpu(server_pid), kernel_cpu()
            self1, child1 = rusage_cpu(resource.RUSAGE_SELF), rusage_cpu(resource.RUSAGE_CHILDREN)
            out.append({
                "variant": name,
                "runs": per,
                "wall_s": wall,
                "python_cpu_s": self1 - self0,
                "python_children_cpu_s": child1 - child0,
                "server_cpu_s": srv1[0] - srv0[0],
                "server_children_cpu_s": srv1[1] - srv0[1],
                "kernel_cpu_s": k1 - k0,
            })
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--socket", required=True, help="the server's socket")
    ap.add_argument("--server-pid", type=int, required=True, help="the server's pid, for its CPU time")
    ap.add_argument("--tooljail", required=True, help="the tooljail binary of the cli variant (as TOOLJAIL_BIN)")
    ap.add_argument("--bwrap-argv", required=True, help="bwrap's command line, a JSON list")
    ap.add_argument("--workdir", required=True, help="the workdir of every call")
    ap.add_argument("--runs", type=int, default=2000, help="calls per variant, for latency and again for throughput")
    ap.add_argument("--conc", type=int, default=4, help="threads of the throughput pass")
    ap.add_argument("--blocks", type=int, default=6, help="blocks per variant of the throughput pass")
    ap.add_argument("--warm", type=int, default=5, help="untimed calls per variant first")
    ap.add_argument("--big-runs", type=int, default=10, help="calls per variant of the large-output pass, 0 skips it")
    ap.add_argument("--big-file", help="the large-output pass's file, in the workdir (its output is compared by hash)")
    ap.add_argument("--out", required=True, help="where to write the results (JSON)")
    a = ap.parse_args()
    if a.runs < 1 or a.conc < 1 or a.blocks < 1:
        sys.exit("serve_bench: --runs, --conc and --blocks must be at least 1")

    if os.environ.get("TOOLJAIL_BIN") != a.tooljail:
        sys.exit("serve_bench: set TOOLJAIL_BIN=%s: the cli variant runs that binary" % a.tooljail)
    check_cli_transport(a.tooljail)
    calls = make_calls(a.socket, json.loads(a.bwrap_argv), a.workdir)
    names = list(VARIANTS)
    session = tooljail.Session(socket=a.socket, cwd=a.workdir)

    def in_session():
        r = session.run(["/bin/true"], capture_output=True)
        if r.returncode != 0 or r.report.status != "exited":
            raise RuntimeError("session /bin/true: exit %d, status %s" % (r.returncode, r.report.status))

    calls["session"] = in_session

    def say(msg):
        print("bench: serve: " + msg, file=sys.stderr, flush=True)

    alternate(calls, names + ["session"], a.warm)
    say("latency: %d calls each of %s, alternated" % (a.runs, ", ".join(names + ["session"])))
    latency = alternate(calls, names + ["session"], a.runs)
    session.stop()
    say("throughput at concurrency %d: %d calls each, %d alternating blocks" % (a.conc, a.runs, a.blocks))
    # The kernel's own rate with nothing running, before and after the
    # blocks (the pool's builds done, the server idle).
    time.sleep(1)
    idle = [kernel_idle_rate(2)]
    blocks = throughput(calls, names, a.runs, a.conc, a.blocks, a.server_pid)
    time.sleep(1)
    idle.append(kernel_idle_rate(2))
    big, big_bytes = {}, 0
    if a.big_runs > 0:
        if not a.big_file:
            sys.exit("serve_bench: --big-runs needs --big-file")
        big_bytes = os.path.getsize(a.big_file)
        big_calls = make_big_calls(a.socket, json.loads(a.bwrap_argv), a.workdir, a.big_file)
        say("large output: %d calls each of %s, %d bytes each, alternated" % (a.big_runs, ", ".join(BIG_VARIANTS), big_bytes))
        alternate(big_calls, list(BIG_VARIANTS), 1)
        big = alternate(big_calls, list(BIG_VARIANTS), a.big_runs)
    with open(a.out, "w") as f:
        json.dump({
            "python": platform.python_version(),
            "runs": a.runs,
            "warm": a.warm,
            "conc": a.conc,
            "latency_ms": latency,
            "blocks": blocks,
            "kernel_idle_cpu_s_per_s": sum(idle) / len(idle),
            "big_bytes": big_bytes,
            "big_ms": big,
        }, f)
        f.write("\n")


if __name__ == "__main__":
    main()
