"""Does every backend of a run return h5py's bytes? Checked once per (backend, file family).

Timed cases only say how fast a backend was. Before the cases, each backend that reads HDF5
(except `local`, which reads the reference copies themselves) reads one file of every single-shot
family through `shotbench.backends.readcheck` in its own environment, and each signal's digest
(data and dimension scales) is compared with the one h5py computes from the local copy. The
verdict per (backend, family) goes into run.json: `ok`, `unsupported` (the reader declared the
shape unsupported: a finding), `wrong` (bytes differ from h5py's) or `failed` (it crashed).
`wrong` and `failed` sink the run's exit code, whatever the timed cases did (the verdicts
themselves are `shotbench.analyse.byteverdict`).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shotbench.analyse.byteverdict import Verdict, verdict
from shotbench.backends import registry
from shotbench.backends.base import ReadSettings, Source
from shotbench.backends.launch import readcheck_command
from shotbench.plan.matrix import ShotFile

SKIP = ("local",)  # reads the local copies the digests are computed from
TIMEOUT_S = 600.0


def h5py_digests(path: Path, f: ShotFile, scales: bool) -> dict[str, str]:
    """The reference: each signal's digest computed by h5py from the local copy."""
    import h5py

    from shotbench.backends.readcheck import digest
    from shotbench.backends.readers import h5py_arrays

    with h5py.File(path, "r") as fh:
        return {f"{f.key}/{name}": digest(h5py_arrays(fh, f.shot, name, scales)) for name in f.signals}


def samples(
    files: list[ShotFile], family_files: dict[str, tuple[list[ShotFile], list[ShotFile]]]
) -> dict[str, ShotFile]:
    """One file per family (the first), single-shot families only; {"": first file} without families."""
    if not family_files:
        return {"": files[0]} if files else {}
    return {
        fam: fs[0] for fam, (fs, _) in family_files.items() if fs and fs[0].shot and len({f.key for f in fs}) == len(fs)
    }


def check(
    backends: list[str],
    options: dict[str, dict[str, Any]],
    source: Source,
    s3: Any,
    picked: dict[str, ShotFile],
    say: Callable[[str], None] = print,
) -> list[Verdict]:
    """Verdicts for every (backend, family): one readcheck process per environment."""
    names = [b for b in backends if b not in SKIP and registry.get(b).reads_hdf5]
    if not names or not picked or not source.local_dir and source.kind != "local":
        return []
    by_env: dict[str, list[str]] = {}
    for b in names:
        by_env.setdefault(registry.get(b).env_key(), []).append(b)
    files = list(picked.values())
    family_of = {f.key: fam for fam, f in picked.items()}
    scales = {b: registry.get(b)(source, ReadSettings(options=options.get(b) or {})).reads_scales() for b in names}
    want = {
        s: {k: v for f in files for k, v in h5py_digests(Path(source.local_path(f.key)), f, s).items()}
        for s in set(scales.values())
    }
    out: list[Verdict] = []
    for env, members in by_env.items():
        say(f"checking the bytes of {', '.join(members)} against h5py on {len(files)} file(s) ...")
        answer = _run(env, members, options, source, s3, files)
        for b in members:
            got = answer.get(b) or {"": answer.get("", "no answer from readcheck")}
            for f in files:
                mine = {k: v for k, v in want[scales[b]].items() if k.startswith(f"{f.key}/")}
                out.append(
                    verdict(
                        b, family_of[f.key], f, got if "" in got else {k: got.get(k, "") for k in mine}, mine, scales[b]
                    )
                )
    return out


def _run(
    env: str, members: list[str], options: dict[str, dict[str, Any]], source: Source, s3: Any, files: list[ShotFile]
) -> dict[str, Any]:
    """One readcheck process in `env`; a process that dies answers {"": its last error line}."""
    req = {
        "source": source.to_dict(),
        "scales": True,
        "backends": [{"backend": b, "options": options.get(b) or {}} for b in members],
        "files": [{"key": f.key, "size": f.size, "shot": f.shot, "signals": list(f.signals)} for f in files],
    }
    try:
        with tempfile.TemporaryDirectory(prefix="shotbench-bytecheck-") as scratch:
            cmd, child = readcheck_command(members, s3, Path(scratch))
            proc = subprocess.run(
                cmd, input=json.dumps(req), text=True, capture_output=True, env=child, timeout=TIMEOUT_S, check=False
            )
    except subprocess.TimeoutExpired:
        return {"": f"readcheck in {env} did not answer within {TIMEOUT_S:.0f} s"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"": f"readcheck in {env} exited {proc.returncode}: {last}"}
    return json.loads(lines[-1])
