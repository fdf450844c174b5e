"""The one-time work of the readers that skip libhdf5 on the read path: a per-file index.

VirtualiZarr, Icechunk and h5coro-hidefix all read a chunk table that something built once from
the HDF5 metadata; the reads then fetch chunk bytes by range and decode them in Python or Rust.
This module holds what they share, so their one-time costs are measured the same way:

- the survey: h5py, over an obstore ranged-GET file object (1 MiB blocks, counted by a `Meter`),
  walks the file once and lists every dataset's layout, its dimension scales, and the values of
  datasets stored compact in their object header (these have no byte range of their own, so every
  indexed reader keeps them in its index, as kerchunk inlines them);
- the stored index beside the run, `<index_dir>/<reader>/<key>.*`, with `<key>.meta.json` holding
  the build's seconds, the index's stored bytes, and the GETs and bytes the build fetched.

Built untimed before a case's clock (`shotbench.bench.driver`), as kerchunk's index is.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shotbench.backends.unsupported import Unsupported
from shotbench.units import MiB

SURVEY_BLOCK = MiB  # the survey's read granularity (kerchunk's index_block_size default too)


def index_name(key: str) -> str:
    """A flat file name for an object key (keys may hold slashes)."""
    return key.strip("/").replace("/", "__")


@dataclass
class DatasetInfo:
    """What an indexed reader needs to know of one dataset beyond its chunk table."""

    path: str  # absolute, "/shots/<shot>/signals/<name>"
    layout: str  # "compact" | "contiguous" | "chunked" | "virtual"
    scales: list[str] = field(default_factory=list)  # absolute paths, in h5py's dims order


@dataclass
class Survey:
    """One file's datasets, the values of its compact ones, and what the walk fetched."""

    datasets: dict[str, DatasetInfo]
    inline: dict[str, Any]  # path -> numpy array (compact datasets)
    gets: int = 0
    fetched: int = 0


LAYOUTS = {0: "compact", 1: "contiguous", 2: "chunked", 3: "virtual"}


def survey(h5file: Any, visit: Any = None) -> Survey:
    """Walk an open h5py.File: each dataset's layout and scales; compact values read here.

    `visit(path, dataset, info)` is called for every dataset, for a reader that records its
    chunk table in the same pass (one walk, one set of metadata GETs)."""
    import h5py
    import numpy as np

    datasets: dict[str, DatasetInfo] = {}
    inline: dict[str, Any] = {}

    def one(name: str, obj: Any) -> None:
        if not isinstance(obj, h5py.Dataset):
            return
        path = "/" + name.lstrip("/")
        layout = LAYOUTS.get(obj.id.get_create_plist().get_layout(), "other")
        scales = [str(s.name) for dim in obj.dims for s in dim.values()]
        info = DatasetInfo(path, layout, scales)
        datasets[path] = info
        if layout == "compact":
            inline[path] = np.asarray(obj[()])
        if visit is not None:
            visit(path, obj, info)

    h5file.visititems(one)
    return Survey(datasets, inline)


PLAIN_LAYOUTS = ("compact", "contiguous", "chunked")


def plain_layouts_only(reader: str) -> Any:
    """A `survey` visitor for the readers whose manifests hold only compact, contiguous and chunked
    datasets (VirtualiZarr's HDFParser, and Icechunk's virtual chunks built from it): any other
    layout is `unsupported`, named with the dataset."""

    def check(path: str, dset: Any, info: DatasetInfo) -> None:
        if info.layout not in PLAIN_LAYOUTS:
            raise Unsupported(f"{reader}: {info.layout} layout of {path}")

    return check


def obstore_file(store: Any, key: str, size: int, meter: Any) -> Any:
    """A file object over counted obstore ranged GETs that keeps every block it fetched, so a
    second walk of the same metadata (a library's own parser after the survey) fetches nothing."""
    from shotbench.backends.obstore import ObstoreFile

    return ObstoreFile(store, key, size, SURVEY_BLOCK, meter)


@dataclass(frozen=True)
class ParsedFile:
    """One HDF5 file read once for an index: its survey, VirtualiZarr's manifest of it, the GETs
    counted, and the build's clock (started before the first byte)."""

    survey: Survey
    manifest: Any
    meter: Any
    watch: Stopwatch


def parse_plain(reader: str, store: Any, registry: Any, url: str, key: str, size: int) -> ParsedFile:
    """Survey `key` (plain layouts only) and parse it with VirtualiZarr's HDFParser over the same
    counted file object, so the parser fetches no block the survey already did. Raises what the
    libraries raise; the caller turns it into its reader's sentence."""
    import h5py
    from virtualizarr.parsers import HDFParser

    from shotbench.backends.meters import Meter

    meter = Meter()
    watch = Stopwatch()
    fobj = obstore_file(store, key, size, meter)
    with h5py.File(fobj, "r") as fh:
        sv = survey(fh, plain_layouts_only(reader))
    manifest = HDFParser(reader_factory=lambda store, path: fobj)(url, registry)
    return ParsedFile(sv, manifest, meter, watch)


class IndexFolder:
    """Where one reader keeps its per-file indexes, and their build costs."""

    def __init__(self, folder: str, reader: str) -> None:
        self.dir = Path(folder) if folder else Path(os.environ.get("TMPDIR", "/tmp")) / "shotbench-index" / reader
        self.dir.mkdir(parents=True, exist_ok=True)

    def path(self, key: str, suffix: str) -> Path:
        return self.dir / (index_name(key) + suffix)

    def meta_path(self, key: str) -> Path:
        return self.path(key, ".meta.json")

    def built(self, key: str) -> bool:
        return self.meta_path(key).exists()

    def write_atomic(self, key: str, suffix: str, data: bytes) -> int:
        """Store one part of the index (a concurrent builder of the same file cannot tear it)."""
        final = self.path(key, suffix)
        tmp = final.with_name(final.name + f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, final)
        return len(data)

    def write_survey(self, key: str, sv: Survey) -> int:
        """The scales map and the compact values, as JSON + npz; the bytes stored."""
        import io

        import numpy as np

        scales = {p: {"layout": d.layout, "scales": d.scales} for p, d in sv.datasets.items()}
        n = self.write_atomic(key, ".datasets.json", json.dumps(scales, separators=(",", ":")).encode())
        buf = io.BytesIO()
        np.savez(buf, **{f"a{i}": sv.inline[p] for i, p in enumerate(sorted(sv.inline))})
        names = json.dumps(sorted(sv.inline)).encode()
        n += self.write_atomic(key, ".inline.json", names)
        n += self.write_atomic(key, ".inline.npz", buf.getvalue())
        return n

    def read_survey(self, key: str) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
        """(datasets map, compact values) as `write_survey` stored them."""
        import numpy as np

        datasets = json.loads(self.path(key, ".datasets.json").read_text())
        names = json.loads(self.path(key, ".inline.json").read_text())
        with np.load(self.path(key, ".inline.npz")) as z:
            inline = {p: z[f"a{i}"] for i, p in enumerate(names)}
        return datasets, inline

    def write_meta(self, key: str, seconds: float, stored: int, gets: int, fetched: int) -> None:
        meta = {"index-time": seconds, "index-bytes": stored, "index-gets": gets, "index-get-bytes": fetched}
        self.write_atomic(key, ".meta.json", json.dumps(meta).encode())

    def stats(self, key: str) -> tuple[float, int] | None:
        try:
            meta = json.loads(self.meta_path(key).read_text())
        except (OSError, json.JSONDecodeError):
            return None
        return float(meta["index-time"]), int(meta["index-bytes"])


class Stopwatch:
    """Seconds since construction (the build's clock, apart from any case's)."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def seconds(self) -> float:
        return time.perf_counter() - self.t0


def with_scales(
    read: Any, datasets: dict[str, dict[str, Any]], inline: dict[str, Any], path: str, scales: bool
) -> list[Any]:
    """The dataset at `path`, then each of its dimension scales, as h5py_arrays orders them;
    `read(path)` fetches one dataset that is not stored compact."""
    info = datasets.get(path)
    if info is None:
        raise KeyError(f"no dataset {path} in the index")

    def value(p: str) -> Any:
        return inline[p] if p in inline else read(p)

    return [value(path)] + ([value(s) for s in info["scales"]] if scales else [])
