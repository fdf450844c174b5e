#!/usr/bin/env python3
"""CPU-seconds of one command and everything it starts, by process accounting.

    scripts/suite-cpu.py [--keep FILE] -- COMMAND [ARG...]

Needs root and `accton`/`dump-acct` (Debian package `acct`). It turns accounting on into a file of
its own, runs COMMAND as a child subreaper (so a process that is orphaned, such as a daemonised
server, is re-parented to it and still counted), turns accounting off, then adds up the user and
system time of every process in COMMAND's tree: a child is counted when its parent at exit is in
the tree and its lifetime lies within its parent's (pid reuse on a busy machine). Wall-clock time
moves with the machine's load; CPU-seconds move much less, which is why the suite is measured so.
Prints the total and the commands that took most, and exits with COMMAND's status.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime

PR_SET_CHILD_SUBREAPER = 36
TICKS = 100.0  # dump-acct prints times in clock ticks


def run_as_subreaper(command: list[str]) -> tuple[int, int]:
    """Run `command` in a child that is a subreaper; returns (that child's pid, command's status)."""
    pid = os.fork()
    if pid == 0:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        proc = subprocess.Popen(command)
        rc = proc.wait()
        while True:  # reap what was re-parented to us until nothing is left
            try:
                os.wait()
            except ChildProcessError:
                break
        os._exit(rc if rc >= 0 else 128 - rc)
    _, status = os.waitpid(pid, 0)
    return pid, os.waitstatus_to_exitcode(status)


def tree_cpu(pacct: str, root: int) -> tuple[collections.Counter[str], collections.Counter[str]]:
    """CPU ticks and process counts by command name, for the tree under `root`."""
    text = subprocess.run(["dump-acct", pacct], capture_output=True, text=True, check=True).stdout
    records = []
    for line in text.splitlines():
        f = [x.strip() for x in line.split("|")]
        if len(f) < 15:
            continue
        begin = datetime.strptime(f[14], "%a %b %d %H:%M:%S %Y").timestamp()
        records.append((f[0], float(f[2]) + float(f[3]), begin, begin + float(f[4]) / TICKS, int(f[9]), int(f[10])))
    ticks: collections.Counter[str] = collections.Counter()
    count: collections.Counter[str] = collections.Counter()
    alive: dict[int, tuple[float, float]] = {}
    for comm, cpu, begin, end, pid, ppid in reversed(records):  # a parent's record comes after its children's
        parent = alive.get(ppid)
        if pid == root or (parent and begin >= parent[0] - 1 and end <= parent[1] + 1):
            alive[pid] = (begin, end + (1 if pid == root else 0))
            ticks[comm] += cpu
            count[comm] += 1
    if root not in alive:
        sys.exit(f"pid {root} is not in {pacct}: was accounting switched to another file meanwhile?")
    return ticks, count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", help="write the accounting records here (default: a temporary file)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give a command after --")
    missing = [tool for tool in ("accton", "dump-acct") if shutil.which(tool) is None]
    if missing:
        sys.exit(
            f"suite-cpu: {' and '.join(missing)} not found; install process accounting (`apt-get install acct`) and run as root."
        )
    with tempfile.TemporaryDirectory() as tmp:
        pacct = args.keep or os.path.join(tmp, "pacct")
        open(pacct, "w").close()
        subprocess.run(["accton", pacct], check=True, stdout=subprocess.DEVNULL)
        try:
            root, rc = run_as_subreaper(command)
        finally:
            subprocess.run(["accton", "off"], check=True, stdout=subprocess.DEVNULL)
        ticks, count = tree_cpu(pacct, root)
    print(f"{sum(ticks.values()) / TICKS:.1f} CPU-s over {sum(count.values())} processes: {' '.join(command)}")
    for comm, t in ticks.most_common(15):
        print(f"  {comm:16s} {t / TICKS:8.1f} CPU-s  {count[comm]:5d} processes")
    return rc


if __name__ == "__main__":
    sys.exit(main())
