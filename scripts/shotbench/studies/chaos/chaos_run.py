"""`shotbench chaos` (`make bench-chaos`): the quick matrix under mixed faults, killed and resumed.

A run under `--faults chaos-5pc` (5 % of connections reset, 5 % stalled, 5 % of requests answered
503 SlowDown) is SIGKILLed after a few cases and resumed; the resumed run's S3 server is killed
(-9) after a few more, which stops it (the watchdog), and a last `--resume` starts the server again
and finishes. The run must end with every planned case exactly once: measured with every byte
verified, or failed with its reason. It prints the counts; 0 lost and 0 duplicated, or exit 1.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shotbench.errors import UserError
from shotbench.paths import state_dir

PROFILE = "chaos-5pc"
STEP_TIMEOUT = 3600.0  # one bench process, at most


@dataclass(frozen=True)
class Tally:
    """What a finished chaos run holds, against its plan."""

    planned: int
    measured: int  # ok, every worker row verified
    failed: int  # failed, partial or stalled, each with its reason
    lost: int  # planned, no row
    duplicated: int  # more than one row
    unexplained: int  # not ok and no reason, or ok with unverified bytes

    def lines(self) -> list[str]:
        return [
            f"planned {self.planned}: measured with verified bytes {self.measured}, failed with a reason {self.failed}",
            f"lost {self.lost}, duplicated {self.duplicated}, unexplained {self.unexplained}",
        ]

    @property
    def good(self) -> bool:
        return self.lost == self.duplicated == self.unexplained == 0 and self.measured + self.failed == self.planned


def tally(run: Path) -> Tally:
    """Count a run folder's cases against run.json's plan."""
    meta = json.loads((run / "run.json").read_text())
    planned = [c["case_id"] for c in meta.get("plan", [])]
    with open(run / "cases.csv", newline="") as fh:
        cases = list(csv.DictReader(fh))
    with open(run / "workers.csv", newline="") as fh:
        workers = list(csv.DictReader(fh))
    seen = Counter(r["case-id"] for r in cases)
    unverified = {w["case-id"] for w in workers if w.get("status") == "ok" and w.get("verified") != "yes"}
    measured = failed = unexplained = 0
    for r in cases:
        if r["status"] == "ok":
            ok = r["case-id"] not in unverified
            measured += ok
            unexplained += not ok
        elif (r.get("first-error") or "").strip():
            failed += 1
        else:
            unexplained += 1
    return Tally(
        len(planned),
        measured,
        failed,
        sum(1 for c in planned if seen[c] == 0),
        sum(n - 1 for n in seen.values() if n > 1),
        unexplained,
    )


def _bench(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "shotbench.cli", "bench", *args], env=env, text=True)


def _rows(runs: Path) -> tuple[Path | None, int]:
    folders = sorted(p for p in runs.glob("*/cases.csv"))
    if not folders:
        return None, 0
    with open(folders[-1], newline="") as fh:
        return folders[-1].parent, sum(1 for _ in csv.DictReader(fh))


def _wait_rows(proc: subprocess.Popen[str], runs: Path, n: int) -> Path | None:
    deadline = time.monotonic() + STEP_TIMEOUT
    while time.monotonic() < deadline and proc.poll() is None:
        run, rows = _rows(runs)
        if run is not None and rows >= n:
            return run
        time.sleep(0.5)
    return _rows(runs)[0]


def _finish(proc: subprocess.Popen[str]) -> int:
    try:
        return proc.wait(timeout=STEP_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise UserError(f"a bench step took more than {STEP_TIMEOUT:.0f} s; see its output above.") from None


def chaos(runs: Path, extra: list[str], kill_after: int, server_after: int, say: Any = print) -> Tally:
    """The scenario of the module doc; returns the final tally."""
    env = dict(os.environ)
    first = _bench(["--runs-dir", str(runs), "--faults", PROFILE, "--keep-going", *extra], env)
    run = _wait_rows(first, runs, kill_after)
    if first.poll() is None:
        say(f"chaos: SIGKILL of the bench process after {kill_after} cases")
        first.send_signal(signal.SIGKILL)
        first.wait()
    if run is None:
        raise UserError("the chaos run wrote no case; see its output above.")
    second = _bench(["--runs-dir", str(runs), "--resume", str(run), "--keep-going"], env)
    _wait_rows(second, runs, kill_after + server_after)
    if second.poll() is None:
        from shotbench.store import embedded as server

        info = server.status(state_dir() / "bench-server")
        if info is not None:
            say(f"chaos: kill -9 of the S3 server (pid {info.pid}) during the resumed run")
            os.kill(info.pid, signal.SIGKILL)
            killed = time.monotonic()
            rc = _finish(second)
            say(f"chaos: the run stopped {time.monotonic() - killed:.0f} s after the kill (exit {rc})")
    _finish(second)
    say("chaos: --resume with the server started again")
    rc = _finish(_bench(["--runs-dir", str(runs), "--resume", str(run), "--keep-going"], env))
    if rc != 0:
        raise UserError(f"the last --resume of {run} ended with exit status {rc}; see its output above.", exit_code=1)
    return tally(run)
