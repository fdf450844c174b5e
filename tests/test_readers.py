"""The alternative readers return h5py's exact bytes, or say `unsupported: …` for a file shape.

Each reader runs in its own environment (`.envs/readers`, made from uv.lock on first use)
against the real embedded S3 server; `shotbench.readcheck` prints one digest per signal
(data and dimension scales) and h5py computes the same digests from the local files.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from shotbench.backends import registry
from shotbench.backends.base import Source
from shotbench.readcheck import digest

READERS = ["fsspec-tuned", "remfile", "kerchunk", "pyfive", "h5coro"]


def h5py_digests(folder: Path, files: list[dict]) -> dict[str, str]:
    import h5py

    from shotbench.backends.readers import h5py_arrays

    out = {}
    for f in files:
        with h5py.File(folder / Path(f["key"]).name, "r") as fh:
            for name in f["signals"]:
                out[f"{f['key']}/{name}"] = digest(h5py_arrays(fh, f["shot"], name))
    return out


def inventory(folder: Path, objs) -> list[dict]:
    import h5py

    from shotbench.shotfile import shot_ids, signal_names

    files = []
    for o in objs:
        with h5py.File(folder / Path(o.key).name, "r") as fh:
            shot = shot_ids(fh)[0]
            files.append({"key": o.key, "size": o.size, "shot": shot, "signals": signal_names(fh, shot)})
    return files


def readcheck(name: str, cfg, source: Source, files: list[dict], tmp_path: Path) -> dict[str, str]:
    from shotbench.runner import _child_env

    python = registry.get(name).python()
    req = {"backend": name, "source": source.to_dict(), "files": files,
           "options": {"index_dir": str(tmp_path / "index")} if name == "kerchunk" else {}}
    proc = subprocess.run([str(python), "-m", "shotbench.readcheck"], input=json.dumps(req), text=True,
                          capture_output=True, env=_child_env(cfg.env_vars()), timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_readers_are_registered_in_their_environment() -> None:
    assert set(READERS) <= set(registry.names())
    assert registry.get("pyfive").env_key() == "readers"
    assert registry.get("fsspec-tuned").env_key() == "main"  # only s3fs and h5py: no extra packages


@pytest.mark.slow
@pytest.mark.parametrize("name", READERS)
def test_reader_matches_h5py_or_says_unsupported(name, staged_shots, shot_dir, tmp_path) -> None:
    """Paged files written with libver v110 (superblock 3, version-4 chunk layouts)."""
    loc, cfg, objs = staged_shots
    files = inventory(shot_dir, objs)
    want = h5py_digests(shot_dir, files)
    got = readcheck(name, cfg, Source("s3", loc.bucket, loc.prefix, str(shot_dir)), files, tmp_path)
    assert set(got) == set(want)
    same = [k for k in want if got[k] == want[k]]
    other = {k: got[k] for k in want if got[k] != want[k]}
    assert all(v.startswith("unsupported: ") for v in other.values()), other
    if name in ("fsspec-tuned", "remfile", "kerchunk"):
        assert not other and len(same) == len(want)
    elif name == "pyfive":  # reads compact/contiguous signals, not v4 chunk indexes
        assert same and other and all("layout class 4" in v for v in other.values())
    else:  # h5coro
        assert not same and all("superblock version: 3" in v for v in other.values())
    if name == "kerchunk":
        metas = list((tmp_path / "index").glob("*.meta.json"))
        assert len(metas) == len(objs)
        meta = json.loads(metas[0].read_text())
        assert meta["index-time"] > 0 and meta["index-bytes"] > 1000
