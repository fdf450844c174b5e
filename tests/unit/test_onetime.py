"""One-time costs of the indexed readers and the reads that repay them against ROS3 2.x."""

from __future__ import annotations

import json
import math
from pathlib import Path

from shotbench.analyse import onetime


def write_meta(run: Path, reader: str, key: str, seconds: float, gets: int) -> None:
    folder = run / "index" / reader
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"index-time": seconds, "index-bytes": 5000, "index-gets": gets, "index-get-bytes": gets * 1_048_576}
    (folder / f"{key}.meta.json").write_text(json.dumps(meta))


def rows(backend: str, mode: str, per_file: float, n: int = 3) -> list[dict]:
    return [{"backend": backend, "obj-type": mode, "mean-obj-time": per_file, "error": ""} for _ in range(n)]


def test_costs_are_medians_per_file(tmp_path: Path) -> None:
    write_meta(tmp_path, "virtualizarr", "a", 1.0, 2)
    write_meta(tmp_path, "virtualizarr", "b", 3.0, 4)
    write_meta(tmp_path, "hsds", "a", 10.0, 6)
    costs = onetime.index_costs(tmp_path).set_index("reader")
    assert costs.loc["virtualizarr", "build [s/file]"] == 2.0
    assert costs.loc["virtualizarr", "build GETs [/file]"] == 3.0
    assert costs.loc["hsds", "files"] == 1


def test_reads_to_repay_against_ros3_2(tmp_path: Path) -> None:
    write_meta(tmp_path, "virtualizarr", "a", 1.0, 2)
    write_meta(tmp_path, "hsds", "a", 10.0, 6)
    workers = (
        rows("ros3-2.0", "shots", 0.5)
        + rows("virtualizarr", "shots", 0.3)  # saves 0.2 s a read: 1 s repaid after 5 reads
        + rows("hsds", "shots", 0.9)  # slower: never repaid
        + rows("ros3-2.0", "signals", 0.2)
        + rows("virtualizarr", "signals", 0.4)
    )
    costs = onetime.index_costs(tmp_path)
    table = onetime.repay_table(workers, costs, "compat")
    got = {(r["reader"], r["mode"]): r["reads to repay"] for r in table.to_dict("records")}
    assert got[("virtualizarr", "shots")] == 5
    assert math.isinf(got[("virtualizarr", "signals")]) and math.isinf(got[("hsds", "shots")])
    lines = onetime.section_lines(table, costs)
    assert len(lines) == 2
    vz = next(line for line in lines if line.startswith("virtualizarr"))
    assert "wins in compat shots" in vz and "after 5 reads" in vz and "loses in compat signals" in vz
    hs = next(line for line in lines if line.startswith("hsds"))
    assert "loses in every mode" in hs and "never repaid" in hs
