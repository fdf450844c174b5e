"""What a run reads: the files of the workload, which shot and signals each holds (the upstream
gather-info pass, untimed and cached), and local copies for the local backend.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shotbench.backends.base import Backend, Source
from shotbench.diskspace import atomic_write
from shotbench.errors import UserError
from shotbench.paths import state_dir
from shotbench.plan.matrix import ShotFile
from shotbench.units import MiB


@dataclass
class Workload:
    """The files a run reads and where: fixed for the whole run (and its resumes)."""

    source: Source
    files: list[ShotFile]  # every file (shots mode picks from these)
    signal_files: list[ShotFile]  # the seeded sample read in signals mode
    s3: Any  # S3Config or None (local data)
    access_log: Path | None
    bucket: str | None
    families: dict[str, Any] = field(default_factory=dict)  # name -> families.Family (`layouts` runs)
    family_files: dict[str, tuple[list[ShotFile], list[ShotFile]]] = field(default_factory=dict)
    network: str = "none"  # the network profile on the run's path to the server (`--network`)
    # backend -> (network profile, endpoint URL) of a backend whose path to the server is its own
    paths: dict[str, tuple[str, str]] = field(default_factory=dict)

    def path_of(self, backend: str) -> tuple[str, str | None]:
        """(network profile, endpoint) a backend's requests take; None: the run's endpoint."""
        return self.paths.get(backend, (self.network, None))

    def files_for(self, mode: str, family: str = "") -> list[ShotFile]:
        """The files a case reads; a family's own files (and signals sample) in a `layouts` run."""
        files, signal_files = self.family_files[family] if family else (self.files, self.signal_files)
        return signal_files if mode == "signals" else files

    def shape(self, family: str) -> tuple[str, str]:
        """(layout, family) as the rows record them; ("", "") for the one-workload runs."""
        fam = self.families.get(family)
        return (fam.layout, fam.name) if fam is not None else ("", "")


def _inventory_key(source: Source, objs: list[Any]) -> str:
    h = hashlib.sha256(
        json.dumps(["v4", source.to_dict()] + [[o.key, o.size, getattr(o, "etag", None)] for o in objs]).encode()
    )
    return h.hexdigest()[:16]


def inventory(source: Source, objs: list[Any], s3: Any, say: Callable[[str], None] = print) -> list[ShotFile]:
    """Open every file once to list its shot and signals; cached by (location, sizes, etags)."""
    cache = state_dir() / "inventory" / f"{_inventory_key(source, objs)}.json"
    if cache.exists():
        data = json.loads(cache.read_text())
        return [
            ShotFile(
                d["key"],
                d["size"],
                d["shot"],
                tuple(d["signals"]),
                tuple(d.get("weights", ())),
                d.get("file_meta", 0),
                d.get("shot_meta", 0),
                tuple(tuple(p) for p in d.get("datasets", ())),
                tuple((p, n) for p, n in d.get("stored", ())),
            )
            for d in data
        ]
    from shotbench.backends.base import ReadSettings
    from shotbench.hdf5.shotfile import shot_ids

    local_ok = source.local_dir or source.kind == "local"
    if local_ok:
        from shotbench.backends.local import LocalBackend

        reader: Backend = LocalBackend(source, ReadSettings())
    else:
        from shotbench.backends.obstore import ObstoreBackend

        reader = ObstoreBackend(source, ReadSettings(options={"block_size": MiB}))
    reader.setup(s3)
    out: list[ShotFile] = []
    t0 = time.time()
    for i, o in enumerate(objs, 1):
        try:
            with reader.open(o.key, o.size) as fh:
                shots = shot_ids(fh)
                if not shots:
                    raise UserError(f"{o.key} holds no /shots/<id> group; point --data at single-shot HDF5 files.")
                out += describe(fh, o.key, int(o.size), shots)
        except (OSError, KeyError, ValueError) as exc:
            raise unreadable(o.key, o.size, exc) from None
        if len(objs) > 20 and (i % 50 == 0 or i == len(objs)):
            say(f"  listing signals: {i}/{len(objs)} files ({time.time() - t0:.0f}s)")
    cache.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(  # a run stopped mid-write must not leave a cache the next run misreads
        cache,
        json.dumps(
            [
                {
                    "key": f.key,
                    "size": f.size,
                    "shot": f.shot,
                    "signals": list(f.signals),
                    "weights": list(f.weights),
                    "file_meta": f.file_meta,
                    "shot_meta": f.shot_meta,
                    "datasets": [list(p) for p in f.datasets],
                    "stored": [list(s) for s in f.stored],
                }
                for f in out
            ]
        ),
    )
    return out


def unreadable(key: str, size: int, exc: BaseException) -> UserError:
    """One sentence for a shot file the inventory cannot read, naming a cut-short file as such."""
    text = " ".join(str(exc).split())
    if size == 0:
        return UserError(f"{key} is an empty (0-byte) file; remove it or upload it again.")
    if "truncated" in text.lower():
        return UserError(
            f"{key} is truncated ({size} bytes, shorter than its HDF5 metadata says); remove it or upload it again."
        )
    return UserError(f"{key} cannot be read as an HDF5 shot file ({text[:160]}); remove it or replace it.")


def describe(fh: Any, key: str, size: int, shots: list[str]) -> list[ShotFile]:
    """What the inventory records of one open file: per shot (one for single-shot files, every
    shot of a many-shot file) its signals, their payload, and what reading each must touch."""
    from shotbench.hdf5 import storage
    from shotbench.hdf5.shotfile import signal_names

    meta = storage.file_metadata(fh)
    out = []
    for shot in shots:
        names = tuple(signal_names(fh, shot))
        touched = [storage.signal_datasets(fh, shot, n) for n in names]
        stored = {p: b for t in touched for p, b in t.items()}
        out.append(
            ShotFile(
                key,
                size,
                shot,
                names,
                tuple(payload_bytes(fh, shot, n) for n in names),
                meta,
                storage.shot_metadata(fh, shot),
                tuple(tuple(t) for t in touched),
                tuple(stored.items()),
            )
        )
    return out


def payload_bytes(fh: Any, shot: str, name: str) -> int:
    """In-memory bytes of a signal plus its scales, from metadata only (no data read)."""
    dset = fh[f"shots/{shot}/signals/{name}"]
    total = int(dset.size or 0) * dset.dtype.itemsize
    for dim in dset.dims:
        for scale in dim.values():
            total += int(scale.size or 0) * scale.dtype.itemsize
    return total


def mirror_locally(source: Source, objs: list[Any], s3: Any, dest: Path, say: Callable[[str], None] = print) -> None:
    """Local copies for the `local` backend when the data lives only in S3 (untimed)."""
    import obstore

    from shotbench import diskspace
    from shotbench.backends.obstore import make_store

    missing = [
        o
        for o in objs
        if not (Path(source.local_path(o.key)).exists() and Path(source.local_path(o.key)).stat().st_size == o.size)
    ]
    diskspace.require(
        dest,
        sum(o.size for o in missing),
        "local copies for the local backend",
        "free space, pass --local-copies on a bigger disk, or drop the local backend",
    )
    store = make_store(s3, source.bucket)
    for i, o in enumerate(objs, 1):
        path = Path(source.local_path(o.key))
        if path.exists() and path.stat().st_size == o.size:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".part")
        tmp.write_bytes(memoryview(obstore.get(store, o.key).bytes()))
        os.replace(tmp, path)
        if i % 25 == 0 or i == len(objs):
            say(f"  local copies: {i}/{len(objs)}")
