"""A real run's disk use: what the files say a fresh run needs, and that it moves at least that."""

from __future__ import annotations

import h5py
import pytest

from support.stored import expected_bytes as _expected


@pytest.mark.slow
def test_a_fresh_run_needs_what_the_files_say_and_moves_at_least_that(tmp_path) -> None:
    """The real server, real Dask workers: `local`'s bytes-needed for a whole shot is the file's
    stored bytes plus metadata as computed here, and no backend's amplification is below 1."""
    import json
    import subprocess

    from support.bench import TINY, bench_cmd, bench_env, read_csv
    from support.runfolder import only_run

    cfg = tmp_path / "tiny.toml"
    cfg.write_text(TINY.format(backends=json.dumps(["local", "fsspec", "obstore", "raw-get"])))
    shots = tmp_path / "shots"
    proc = subprocess.run(
        bench_cmd(cfg, shots, tmp_path / "runs"),
        env=bench_env(tmp_path / "state"),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = only_run(tmp_path / "runs")
    cases = read_csv(run / "cases.csv")
    assert cases and all(c["status"] == "ok" for c in cases)
    picked = json.loads((run / "run.json").read_text())["selection"]["shots"]
    for c in cases:
        assert int(c["bytes-needed"]) > 0 and int(c["bytes-returned"]) > 0, c
        if c["amplification"] != "":
            assert float(c["amplification"]) >= 1.0, c
        if c["backend"] == "local" and c["obj-type"] == "shots" and c["num-workers"] == "1":
            path = next(shots.rglob(picked[f"t{c['trial']}-w1"].rsplit("/", 1)[-1]))
            with h5py.File(path) as f:
                (shot_id,) = list(f["shots"])
                names = list(f[f"shots/{shot_id}/signals"])
            assert int(c["bytes-needed"]) == _expected(path, shot_id, names)
    assert {c["backend"] for c in cases if c["amplification"] != ""} == {"fsspec", "obstore", "raw-get"}
