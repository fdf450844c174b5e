"""Named benchmark matrices (`quick`, `full`) and TOML configs that override them.

A TOML config may set any key of `BenchConfig` at top level, start from a profile with
`profile = "full"`, and give backend options in `[options.<backend>]`, e.g.

    profile = "quick"
    backends = ["ros3-2.0", "fsspec", "raw-get"]
    workers = [1, 2, 4]
    page_buffers = [0, 268435456]
    trials = 3
    [options.fsspec]
    block_size = 5242880
    cache_type = "readahead"
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from shotbench.backends import registry
from shotbench.errors import UserError
from shotbench.plan import MODES, Matrix

MIB = 1024 * 1024


@dataclass
class BenchConfig:
    """Everything that defines what a run measures (recorded in run.json, reused on resume)."""

    profile: str = "quick"
    backends: list[str] = field(default_factory=registry.names)
    modes: list[str] = field(default_factory=lambda: list(MODES))
    workers: list[int] = field(default_factory=lambda: [1, 2])
    page_buffers: list[int] = field(default_factory=lambda: [0, 256 * MIB])
    chunk_caches: list[int] = field(default_factory=lambda: [1 * MIB])
    trials: int = 1
    signals_files: int = 4  # files read in `signals` mode (seeded sample; 0 = every file)
    signals_names: int = 0  # signal names read in `signals` mode (seeded sample; 0 = every signal)
    seed: int = 0
    shots: int = 24  # synthetic shot files made when no --data is given
    file_size: int = 16_000_000
    page_size: int = 8_000_000
    signals: int = 61
    max_live_workers: int = 16  # idle warm worker processes kept across cases before evicting
    task_timeout: float = 0.0  # seconds a case's tasks may run before they are recorded `timeout`; 0 = derived
    verify: bool = False  # check every signal read against a checksum of the local copy (on with --faults)
    options: dict[str, dict[str, Any]] = field(default_factory=dict)

    def matrix(self) -> Matrix:
        return Matrix(
            backends=list(self.backends), modes=list(self.modes), workers=list(self.workers),
            page_buffers=list(self.page_buffers), chunk_caches=list(self.chunk_caches),
            trials=self.trials, files=self.signals_files, signals=self.signals_names,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


PROFILES: dict[str, dict[str, Any]] = {
    # Fits a 2-core machine in about ten minutes with every backend present.
    # `signals` mode reads a seeded sample of 4 files x 16 signals: with a page buffer every
    # open of a file reads whole 8 MB pages, which makes the full pattern minutes per case.
    "quick": {"workers": [1, 2], "trials": 2, "signals_files": 4, "signals_names": 16, "shots": 24},
    # The upstream matrix: 1..64 workers, both page buffers, every file, three trials.
    "full": {
        "workers": [1, 2, 4, 8, 16, 24, 32, 48, 64], "trials": 3, "signals_files": 0, "signals_names": 0,
        "shots": 500, "max_live_workers": 64,
    },
}


def _apply(cfg: BenchConfig, values: dict[str, Any], origin: str) -> BenchConfig:
    known = {f.name for f in fields(BenchConfig)}
    for key, value in values.items():
        name = key.replace("-", "_")
        if name not in known:
            raise UserError(f"{origin}: unknown setting {key!r}; known settings are {', '.join(sorted(known))}.")
        setattr(cfg, name, value)
    return cfg


def load(profile: str = "quick", config: Path | None = None, overrides: dict[str, Any] | None = None) -> BenchConfig:
    """Profile, then TOML file, then command-line overrides; validated."""
    data: dict[str, Any] = {}
    if config is not None:
        try:
            data = tomllib.loads(Path(config).read_text())
        except FileNotFoundError:
            raise UserError(f"config file {config} does not exist; pass an existing TOML file to --config.") from None
        except tomllib.TOMLDecodeError as exc:
            raise UserError(f"config file {config} is not valid TOML ({exc}); fix the file and rerun.") from None
        profile = str(data.pop("profile", profile))
    if profile not in PROFILES:
        raise UserError(f"unknown profile {profile!r}; use one of {', '.join(PROFILES)} or a --config file.")
    cfg = _apply(BenchConfig(profile=profile), PROFILES[profile], "profile")
    if data:
        cfg = _apply(cfg, data, str(config))
    if overrides:
        cfg = _apply(cfg, {k: v for k, v in overrides.items() if v is not None}, "command line")
    validate(cfg)
    return cfg


WORKER_PROCESS_BYTES = 256 * MIB  # a warm Dask worker with h5py and a backend client, with headroom


def _check_types(cfg: BenchConfig) -> None:
    """Every key has the type its default has (TOML `workers = "two"` is one sentence, not a traceback)."""
    for f in fields(BenchConfig):
        value = getattr(cfg, f.name)
        default = getattr(BenchConfig(), f.name)
        if isinstance(default, list):
            kind = type(default[0]) if default else str
            ok = isinstance(value, list) and all(isinstance(v, kind) and not isinstance(v, bool) for v in value)
            want = f"a list of {'integers' if kind is int else 'names'}"
        elif isinstance(default, dict):
            ok = isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())
            want = "a table of [options.<backend>] tables"
        elif isinstance(default, bool):
            ok = isinstance(value, bool)
            want = "true or false"
        elif isinstance(default, float):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            want = "a number"
        elif isinstance(default, int):
            ok = isinstance(value, int) and not isinstance(value, bool)
            want = "an integer"
        else:
            ok = isinstance(value, str)
            want = "a string"
        if not ok:
            raise UserError(f"setting {f.name.replace('_', '-')} = {value!r} must be {want}; fix it in the config or command line.")


def check_local_workers(cfg: BenchConfig) -> None:
    """LocalCluster worker counts this machine can hold in memory (each worker is a process)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return
    limit = max(1, total // WORKER_PROCESS_BYTES)
    if max(cfg.workers) > limit:
        raise UserError(
            f"{max(cfg.workers)} workers need more memory than this machine has ({total / 2**30:.0f} GiB holds "
            f"at most {limit} worker processes); use fewer --workers or an existing cluster with --scheduler."
        )


def validate(cfg: BenchConfig) -> None:
    _check_types(cfg)
    for name in cfg.backends:
        registry.get(name)
    bad = [m for m in cfg.modes if m not in MODES]
    if bad:
        raise UserError(f"unknown mode {bad[0]!r}; modes are {', '.join(MODES)}.")
    if not cfg.backends or not cfg.modes or not cfg.workers:
        raise UserError("the matrix is empty; give at least one backend, mode and worker count.")
    if any(int(w) < 1 for w in cfg.workers):
        raise UserError("worker counts must be positive integers, e.g. --workers 1 2 4.")
    if any(0 < int(pb) < cfg.page_size for pb in cfg.page_buffers):
        raise UserError(
            f"page buffer sizes must be 0 or at least the file-space page size ({cfg.page_size} bytes), e.g. 268435456."
        )
    if any(int(pb) < 0 for pb in cfg.page_buffers):
        raise UserError("page buffer sizes cannot be negative; use 0 (off) or a size like 268435456.")
    if any(int(cc) < 0 for cc in cfg.chunk_caches):
        raise UserError("chunk cache sizes cannot be negative; use 0 or a size like 1048576.")
    for name in ("signals_files", "signals_names", "seed", "task_timeout"):
        if getattr(cfg, name) < 0:
            raise UserError(f"{name.replace('_', '-')} cannot be negative; use 0 or more.")
    for name in ("shots", "file_size", "page_size", "signals", "max_live_workers"):
        if getattr(cfg, name) < 1:
            raise UserError(f"{name.replace('_', '-')} must be at least 1.")
    if int(cfg.trials) < 1:
        raise UserError("trials must be at least 1.")
    for name, opts in cfg.options.items():
        known = registry.get(name).defaults
        unknown = sorted(set(opts) - set(known))
        if unknown:
            listed = ", ".join(sorted(known)) or "none"
            raise UserError(f"[options.{name}] has unknown key {unknown[0]!r}; the known keys are: {listed}.")
