"""Real runs that the verdicts must get right: the same backend measured twice (an A/A pair) comes
out equivalent, not undecided and never slower.

A twin (`download@b`, backends/registry.py) is the same reader measured again as its own
configuration in every interleaved round, so the true ratio of the pair is 1. These runs measure
timing, so they need the machine to themselves (`alone`) and the embedded server (`server`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shotbench.analyse import analysis, decision
from shotbench.store.s3 import without_s3_settings

pytestmark = [pytest.mark.slow, pytest.mark.server, pytest.mark.alone]

AA = {
    "backends": ["download", "download@b"],
    "modes": ["shots"],
    "workers": [1],
    "page_buffers": [0],
    "trials": 4,
    "shots": 6,
    "shots_files": 3,
    "budget_minutes": 2.0,
    "readcheck": False,
}


def _run(tmp_path: Path, config: dict) -> Path:
    cfg = tmp_path / "run.toml"
    cfg.write_text("\n".join(f"{k} = {json.dumps(v)}" for k, v in config.items()) + "\n")
    env = without_s3_settings()
    env["SHOTBENCH_STATE"] = str(tmp_path / "state")
    runs = tmp_path / "runs"
    done = subprocess.run(
        [sys.executable, "-m", "shotbench.cli", "bench", "--config", str(cfg), "--shots-dir", str(tmp_path / "shots"),
         "--runs-dir", str(runs)],
        env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (folder,) = [p for p in runs.iterdir() if p.is_dir()]
    return folder


def test_the_same_backend_twice_is_equivalent(tmp_path: Path) -> None:
    folder = _run(tmp_path, AA)
    ds = analysis.load([f"{folder.name}={folder}"])
    table = decision.decision_table(ds)
    verdicts = dict(zip(table["name"], table["verdict"]))
    assert set(verdicts) == {"download", "download@b"}
    assert sorted(verdicts.values()) == [decision.EQUIVALENT, decision.FASTEST], table.to_string()
    meta = json.loads((folder / "run.json").read_text())
    (stop,) = meta["stop"].values()
    assert stop["reason"] == "decided" and stop["rounds"] >= AA["trials"] and 0 < stop["spread"] < 0.1
    (answer,) = decision.answer_records(table)
    assert answer.decided == answer.pairs == 1
