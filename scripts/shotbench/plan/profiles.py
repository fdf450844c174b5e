"""Named benchmark matrices (`quick`, `full`) and TOML configs that override them.

A TOML config may set any key of `BenchConfig` at top level, start from a profile with
`profile = "full"`, and give backend options in `[options.<backend>]`, e.g.

    profile = "quick"
    backends = ["ros3-2.0", "fsspec", "raw-get"]
    workers = [1, 2, 4]
    page_buffers = [0, "default", 268435456]   # "default": the library's own (2.x ROS3: 64 MiB)
    block_caches = ["off", "default"]          # ros3-2.2 only; caches many blocks only on unpaged files
    trials = 3
    [options.fsspec]
    block_size = 5242880
    cache_type = "readahead"

Any backend's table also takes `network`, the network profile on that backend's own path to the
embedded server (`[options."download@slow"] network = "latency-50ms"`); it is kept apart from the
reader's options, in `networks`.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from shotbench.backends import registry
from shotbench.errors import UserError
from shotbench.plan import families as fammod
from shotbench.plan.matrix import ALL_MODES, MODES, UPSTREAM_PAGE_BUFFER, Matrix
from shotbench.store.network import NETWORK_PROFILES
from shotbench.units import MiB


@dataclass
class BenchConfig:
    """Everything that defines what a run measures (recorded in run.json, reused on resume)."""

    profile: str = "quick"  # the named profile the other keys start from (see the table below)
    # the ways of reading compared (`shotbench bench --help` lists them)
    backends: list[str] = field(default_factory=registry.default_names)
    # access patterns: `shots` (every signal of a file), `signals` (one signal across files)
    modes: list[str] = field(default_factory=lambda: list(MODES))
    workers: list[int] = field(default_factory=lambda: [1, 2])  # Dask worker counts, one case each
    # libhdf5 page-buffer sizes in bytes ("default": the library's own, 0: none)
    page_buffers: list[int] = field(default_factory=lambda: [0, UPSTREAM_PAGE_BUFFER])
    # the backends whose cases vary the page buffer (fnmatch patterns); the others run without one.
    # Page buffers given in a config or on the command line apply to every backend unless this is given too.
    page_buffer_backends: list[str] = field(default_factory=lambda: ["*"])
    chunk_caches: list[int] = field(default_factory=lambda: [1 * MiB])  # h5py raw-data chunk cache sizes in bytes
    # 2.2 ROS3 block cache (ros3-2.2 only): "default" (16 MiB blocks, 128 MiB), "off"/0, or bytes
    block_caches: list[Any] = field(default_factory=lambda: ["default"])
    trials: int = 1  # interleaved rounds of every case
    signals_files: int = 4  # files read in `signals` mode (seeded sample; 0 = every file)
    signals_names: int = 0  # signal names read in `signals` mode (seeded sample; 0 = every signal)
    shots_files: int = 1  # files each `shots` case reads (seeded; every signal of each), for a long enough case
    seed: int = 0  # seeds the synthetic files, the samples of `signals` mode and the case order
    shots: int = 24  # synthetic shot files made when no --data is given
    file_size: int = 16_000_000  # bytes of each synthetic single-shot file (exact)
    page_size: int = 8_000_000  # file-space page size of the synthetic files (paged aggregation)
    signals: int = 61  # signals per synthetic shot (upstream files hold up to 61)
    max_live_workers: int = 16  # idle warm worker processes kept across cases before evicting
    task_timeout: float = 0.0  # seconds a case's tasks may run before they are recorded `timeout`; 0 = derived
    verify: bool = False  # check every signal read against a checksum of the local copy (on with --faults)
    readcheck: bool = True  # before the cases: each backend's bytes against h5py's, one file per family (bytecheck.py)
    # per-backend options, `[options.<backend>]` in TOML
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    # backend -> the network profile on its own path (`network` in its `[options.<backend>]`): the
    # same reader through another network, measured in the same rounds as the rest of the run
    networks: dict[str, str] = field(default_factory=dict)
    # file families measured side by side (families.py); [] = the one synthetic workload
    families: list[str] = field(default_factory=list)
    family_shots: int = 8  # files of each single-shot family (the big ones a quarter of that, 2 to 16)
    family_big_size: int = 256_000_000  # bytes of the big single-shot files
    family_many_shots: int = 32  # shots in each many-shot file
    family_many_file_size: int = 16_000_000  # payload budget per shot, as a single-shot file of this size
    family_many_page_size: int = 8_000_000  # file-space page size of the many-shot files
    family_many_page_buffers: list[int] = field(default_factory=list)  # [] = the run's page buffers
    # trials until the interval is tight (stopping.py): after `trials` rounds, a case group runs
    # more interleaved rounds until the 95 % interval of its median task time is within ±precision
    # (0.05: ±5 %) or it has run max_trials; max_minutes caps the extra rounds' wall time.
    # precision 0 (the default): exactly `trials`
    precision: float = 0.0
    max_trials: int = 0
    max_minutes: float = 0.0
    # the equivalence margin of the verdicts (stats.verdict_of): a configuration whose ratio to the
    # fastest is shown to lie within [1/(1+margin), 1+margin] is equivalent to it
    margin: float = 0.10
    # stop when answered (bench/rounds.py): after `trials` rounds, more interleaved rounds only for the
    # (mode, workers) groups with a pair still undecided, while the run's cases fit this many minutes
    # (0: exactly `trials`); max_trials caps the rounds (0: rounds.DEFAULT_CAP); precision, when set, is
    # the stopping rule instead
    budget_minutes: float = 0.0

    def family_shapes(self) -> dict[str, Any]:
        sizes = fammod.Sizes(
            self.family_shots, self.family_big_size, self.family_many_shots, self.family_many_file_size,
            self.family_many_page_size, tuple(self.family_many_page_buffers),
        )  # fmt: skip
        return fammod.resolve(list(self.families), sizes)

    def matrix(self) -> Matrix:
        return Matrix(
            backends=list(self.backends),
            modes=list(self.modes),
            workers=list(self.workers),
            page_buffers=[size_setting(v, "page_buffers") for v in self.page_buffers],
            page_buffer_backends=list(self.page_buffer_backends),
            chunk_caches=list(self.chunk_caches),
            block_caches=[size_setting(v, "block_caches") for v in self.block_caches],
            trials=self.trials,
            families=self.family_shapes(),
            shots_files=self.shots_files,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def size_setting(value: Any, what: str) -> int:
    """A page-buffer or block-cache entry as the matrix holds it: "default" -> -1, "off" -> 0."""
    text = str(value).strip().lower()
    if text == "default":
        return -1
    if text == "off":
        return 0
    try:
        size = int(text)
    except ValueError:
        raise UserError(
            f'{what} entry {value!r} is not a size; give bytes, "off" or "default", e.g. 0 default 268435456.'
        ) from None
    if size < 0:
        raise UserError(f'{what} entry {value!r} is negative; give bytes, "off" or "default".')
    return size


BENCH_PROFILES: dict[str, dict[str, Any]] = {
    # Fits a 2-core machine in a few minutes with every backend present.
    # `signals` mode reads a seeded sample of 2 files x 16 signals: with a page buffer every
    # open of a file reads whole 8 MB pages, which makes the full pattern minutes per case.
    # Two files, not four (until 2026-11-26): every signal is still read from every sampled file,
    # one file per worker at 2 workers, 16 rows per task, so what a file costs each backend is
    # what it was; the ROS3 signals trials (98 of 128 s of reading) take half as long.
    # The page buffer is the study's knob of the ROS3 driver, so only the ROS3 backends vary it;
    # h5py's page buffer over fsspec, obstore, a downloaded or a local file (2-14x slower in
    # signals mode, never a leader in the quick runs of 2026-11-25/26, about 40 % of a run's case
    # time) is measured by `full`.
    # A `shots` case reads 6 seeded files, about a second (until 2026-11-27 one: 0.13-0.19 s). In the
    # quiet default runs of 2026-11-26 a pair's ratio moved 8-18 % between rounds when its cases
    # took under 0.3 s, 10 % at 0.6-1.2 s and 5-7 % above 1.2 s; two rounds of everything,
    # then rounds only for the (mode, workers) groups with a pair still undecided, while the cases
    # fit 2.75 minutes (warm, about 3 minutes with the setup): docs/guides/decisions.md.
    "quick": {
        "workers": [1, 2],
        "trials": 2,
        "signals_files": 2,
        "signals_names": 16,
        "shots": 24,
        "shots_files": 6,
        "budget_minutes": 2.75,
        "page_buffer_backends": ["ros3-*"],
    },
    # The upstream matrix: 1..64 workers, both page buffers, every file, three trials.
    "full": {
        "workers": [1, 2, 4, 8, 16, 24, 32, 48, 64],
        "trials": 3,
        "signals_files": 0,
        "signals_names": 0,
        "shots": 500,
        "max_live_workers": 64,
    },
    # File shapes side by side: 16 MB files, 256 MB files paged and unpaged, and a
    # many-shot file in shot and in signal layout, every backend, both upstream orders plus the
    # partial read (8 signals of a shot, file opened once / once per signal). Sized for a 2-core
    # machine in about 20 minutes: 2 workers, one trial, a 64 MB page buffer (8 pages, upstream's
    # smaller one). The many-shot files are upstream's shape scaled down by 8: 1 MB pages and an
    # 8 MB page buffer (8 pages, as upstream's 64 MB held 8 of its 8 MB pages), 48 shots of
    # 4 MB-file payload, so a file is about 10x its buffer, as upstream's 3.7 GB were 14x theirs.
    "layouts": {
        "families": list(fammod.NAMES),
        "modes": list(ALL_MODES),
        "workers": [2],
        "trials": 1,
        "page_buffers": [64_000_000],
        "signals_files": 4,
        "signals_names": 16,
        "family_shots": 8,
        "family_big_size": 256_000_000,
        "family_many_shots": 48,
        "family_many_file_size": 4_000_000,
        "family_many_page_size": 1_000_000,
        "family_many_page_buffers": [8_000_000],
    },
    # Every reader on common ground (`make bench-readers`): the compat files, which every reader
    # reads, and the default files (single-16MB, v110 paged), where some cannot. Both upstream
    # orders, 1 and 2 workers, no page buffer (compat is unpaged: libhdf5 refuses one), two trials
    # so ties have a CI; h5coro skips the dimension scales it cannot resolve. The readers that skip
    # libhdf5 or move it to a server build their index, repository or HSDS load untimed, and are
    # set against ROS3 2.0 for the reads that repay it. The limit is each
    # case's raw-GET time of the same bytes (no `local` cases).
    "readers": {
        "families": [fammod.COMPAT, fammod.DEFAULT],
        "modes": list(MODES),
        "workers": [1, 2],
        "trials": 2,
        "backends": [
            "ros3-1.14",
            "ros3-2.0",  # the baseline the one-time costs are repaid against
            "fsspec",
            "fsspec-tuned",
            "remfile",
            "kerchunk",
            "pyfive",
            "h5coro",
            "virtualizarr",
            "icechunk-virtual",
            "hsds",
            "h5coro-hidefix",
        ],
        "page_buffers": [0],
        "signals_files": 2,
        "signals_names": 8,
        "family_shots": 4,
        "options": {"h5coro": {"scales": "skip"}},
    },
    # The same at upstream sizes: 500-shot files (about 2 GB each here), 1-16 workers, 64 MB and
    # 264 MB page buffers, three trials.
    "layouts-full": {
        "families": list(fammod.NAMES),
        "modes": list(ALL_MODES),
        "workers": [1, 2, 4, 8, 16],
        "trials": 3,
        "page_buffers": [64_000_000, 264_000_000],
        "signals_files": 0,
        "signals_names": 0,
        "family_shots": 500,
        "family_many_shots": 500,
        "family_big_size": 256_000_000,
    },
}


def upstream_workers(cores: int | None = None) -> list[int]:
    """Upstream's worker range scaled to this machine: it ran 1 to 64 workers on 16 vCPUs (up
    to 4 per vCPU); here 1, one per core and four per core."""
    cores = max(1, cores or os.cpu_count() or 1)
    return sorted({1, cores, 4 * cores})


BENCH_PROFILES["upstream-ec2"] = {
    # The study's question under its conditions (`--network upstream-ec2` is implied): its 16 MB
    # files, its page buffer (its notebooks say "264MB"; its CSVs record 268,435,456 B, 256 MiB),
    # its worker range per core, three trials, https by default.
    "backends": ["ros3-1.14", "ros3-2.0", "ros3-wheel"],
    "workers": upstream_workers(),
    "page_buffers": [0, UPSTREAM_PAGE_BUFFER],
    "trials": 3,
    "signals_files": 4,
    "signals_names": 16,
    "shots": 24,
}
PROFILE_NETWORK = {"upstream-ec2": "upstream-ec2"}
"""Bench profiles that choose a network profile when --network is not given."""


def _apply(cfg: BenchConfig, values: dict[str, Any], origin: str) -> BenchConfig:
    known = {f.name for f in fields(BenchConfig)}
    for key, value in values.items():
        name = key.replace("-", "_")
        if name not in known:
            raise UserError(f"{origin}: unknown setting {key!r}; known settings are {', '.join(sorted(known))}.")
        setattr(cfg, name, value)
    return cfg


def read_config(config: Path) -> dict[str, Any]:
    """A TOML config's table, or one sentence naming what is wrong with the file."""
    path = Path(config)
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"config file {config} does not exist; pass an existing TOML file to --config.") from None
    except IsADirectoryError:
        raise UserError(
            f"--config {config} is a folder; pass a TOML file, e.g. --config {Path(config) / 'bench.toml'}."
        ) from None
    except UnicodeDecodeError:
        raise UserError(f"config file {config} is not UTF-8 text; save it as a UTF-8 TOML file.") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"config file {config} is not valid TOML ({exc}); fix the file and rerun.") from None
    except OSError as exc:
        raise UserError(
            f"config file {config} cannot be read ({exc.strerror or exc}); fix its path or permissions."
        ) from None


# settings that list what to measure: a value given twice is measured once
SELECTIONS = (
    "backends",
    "modes",
    "workers",
    "page_buffers",
    "chunk_caches",
    "block_caches",
    "families",
    "family_many_page_buffers",
)


def collapse_duplicates(cfg: BenchConfig) -> list[str]:
    """Drop repeated entries of the selection lists (`--workers 1 1` is one worker count, not two
    cases with one id); returns one note per list that had any. Page buffers and block caches
    compare by the size they mean, so `0` and `"off"` are one entry."""
    notes: list[str] = []
    for name in SELECTIONS:
        values = getattr(cfg, name)
        if not isinstance(values, list):
            continue
        seen: dict[Any, Any] = {}
        for v in values:
            try:
                key = size_setting(v, name) if name in SIZE_SETTINGS else v
                hash(key)
            except (UserError, TypeError):
                return notes  # a bad entry: validate() words it
            seen.setdefault(key, v)
        if len(seen) < len(values):
            repeated = sorted({str(v) for v in values if values.count(v) > 1} or {str(v) for v in values})
            notes.append(f"{shown(name)}: {', '.join(repeated)} given more than once; measured once each.")
            setattr(cfg, name, list(seen.values()))
    return notes


def load(
    profile: str = "quick",
    config: Path | None = None,
    overrides: dict[str, Any] | None = None,
    notes: list[str] | None = None,
) -> BenchConfig:
    """Profile, then TOML file, then command-line overrides; duplicates collapsed (a note for
    each into `notes`); validated."""
    data: dict[str, Any] = {}
    if config is not None:
        data = read_config(config)
        profile = str(data.pop("profile", profile))
    if profile not in BENCH_PROFILES:
        raise UserError(f"unknown profile {profile!r}; use one of {', '.join(BENCH_PROFILES)} or a --config file.")
    cfg = _apply(BenchConfig(profile=profile), BENCH_PROFILES[profile], "profile")
    if data:
        cfg = _apply(cfg, data, str(config))
    if overrides:
        cfg = _apply(cfg, {k: v for k, v in overrides.items() if v is not None}, "command line")
    split_networks(cfg)
    given = {k.replace("-", "_") for k in data} | {k for k, v in (overrides or {}).items() if v is not None}
    if "page_buffers" in given and "page_buffer_backends" not in given:
        cfg.page_buffer_backends = ["*"]  # page buffers asked for by name are measured on every backend
    if "trials" in given and "budget_minutes" not in given:
        cfg.budget_minutes = 0.0  # trials asked for by number are run exactly, with no rounds added
    _check_types(cfg)
    said = collapse_duplicates(cfg)
    if notes is not None:
        notes.extend(said)
    validate(cfg)
    return cfg


NETWORK_OPTION = "network"  # the key of `[options.<backend>]` that names the backend's network path


def split_networks(cfg: BenchConfig) -> None:
    """Move each backend's `network` out of its options into `cfg.networks`: it says which path
    the backend's requests take to the server, not how the reader reads, so the reader never sees
    it (copies: a profile's option tables are shared)."""
    if not isinstance(cfg.options, dict) or not all(isinstance(o, dict) for o in cfg.options.values()):
        return  # _check_types words it
    nets = {n: o[NETWORK_OPTION] for n, o in cfg.options.items() if NETWORK_OPTION in o}
    if nets:
        cfg.options = {n: {k: v for k, v in o.items() if k != NETWORK_OPTION} for n, o in cfg.options.items()}
        cfg.networks = {**cfg.networks, **nets}


SIZE_SETTINGS = ("page_buffers", "block_caches")
WORKER_PROCESS_BYTES = 256 * MiB  # a warm Dask worker with h5py and a backend client, with headroom


def _check_types(cfg: BenchConfig) -> None:
    """Every key has the type its default has (TOML `workers = "two"` is one sentence, not a traceback)."""
    for f in fields(BenchConfig):
        if f.name in SIZE_SETTINGS:
            continue  # bytes, "off" or "default": checked by size_setting in validate()
        value = getattr(cfg, f.name)
        default = getattr(BenchConfig(), f.name)
        if isinstance(default, list):
            kind = type(default[0]) if default else (int if "int" in str(f.type) else str)
            ok = isinstance(value, list) and all(isinstance(v, kind) and not isinstance(v, bool) for v in value)
            want = f"a list of {'integers' if kind is int else 'names'}"
        elif f.name == "networks":
            ok = isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
            want = 'a network profile\'s name per backend ([options."<backend>"] network = "latency-50ms")'
        elif isinstance(default, dict):
            ok = isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())
            want = "a table of [options.<backend>] tables"
        elif isinstance(default, bool):
            ok = isinstance(value, bool)
            want = "true or false"
        elif isinstance(default, float):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            want = "a finite number of seconds (0 = derived)" if f.name == "task_timeout" else "a finite number"
        elif isinstance(default, int):
            ok = isinstance(value, int) and not isinstance(value, bool)
            want = "an integer"
        else:
            ok = isinstance(value, str)
            want = "a string"
        if not ok:
            raise UserError(
                f"setting {shown(f.name)} = {value!r} must be {want}; fix it in the config or command line."
            )


# Settings `shotbench bench` also takes on its command line (as --page-buffers, ...; chunk_caches is
# --chunk-cache); tests/test_bad_inputs.py checks this against the parser.
COMMAND_LINE = frozenset(
    {
        "profile",
        "backends",
        "modes",
        "workers",
        "page_buffers",
        "block_caches",
        "chunk_caches",
        "trials",
        "signals_files",
        "signals_names",
        "shots_files",
        "margin",
        "budget_minutes",
        "seed",
        "shots",
        "precision",
        "max_trials",
        "max_minutes",
    }
)


def shown(name: str) -> str:
    """A setting as the user wrote it: `page-buffers` for one the command line takes (the TOML key
    is the same words), `task_timeout` for one only a TOML file sets, so the message names a key
    the user can find."""
    if name == "chunk_caches":
        return "chunk-cache (chunk_caches in TOML)"
    return name.replace("_", "-") if name in COMMAND_LINE else name


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
    _check_dotted_tables(cfg)
    for name in cfg.backends:
        registry.get(name)
    bad = [m for m in cfg.modes if m not in ALL_MODES]
    if bad:
        raise UserError(f"unknown mode {bad[0]!r}; modes are {', '.join(ALL_MODES)}.")
    cfg.family_shapes()  # unknown family names are one sentence
    if not cfg.backends or not cfg.modes or not cfg.workers:
        raise UserError("the matrix is empty; give at least one backend, mode and worker count.")
    if any(int(w) < 1 for w in cfg.workers):
        raise UserError("worker counts must be positive integers, e.g. --workers 1 2 4.")
    for name in SIZE_SETTINGS:
        if not isinstance(getattr(cfg, name), list):
            raise UserError(f'setting {shown(name)} must be a list of sizes, "off" or "default".')
    pbs = [size_setting(pb, "page_buffers") for pb in cfg.page_buffers]
    for bc in cfg.block_caches:
        size_setting(bc, "block_caches")
    if not cfg.block_caches:
        raise UserError('block_caches is empty; give at least one setting, e.g. "default".')
    if any(0 < pb < cfg.page_size for pb in pbs):
        raise UserError(
            f"page buffer sizes must be 0 or at least the file-space page size ({cfg.page_size} bytes), e.g. 268435456."
        )
    if any(int(cc) < 0 for cc in cfg.chunk_caches):
        raise UserError("chunk cache sizes cannot be negative; use 0 or a size like 1048576.")
    for name in ("signals_files", "signals_names", "seed", "task_timeout"):
        if getattr(cfg, name) < 0:
            raise UserError(f"{shown(name)} cannot be negative; use 0 or more.")
    for name in ("shots", "file_size", "page_size", "signals", "max_live_workers"):
        if getattr(cfg, name) < 1:
            raise UserError(f"{shown(name)} must be at least 1.")
    if int(cfg.trials) < 1:
        raise UserError("trials must be at least 1.")
    for name in (
        "family_shots",
        "family_big_size",
        "family_many_shots",
        "family_many_file_size",
        "family_many_page_size",
    ):
        if getattr(cfg, name) < 1:
            raise UserError(f"{shown(name)} must be at least 1.")
    if any(v < 0 for v in cfg.family_many_page_buffers):
        raise UserError("family_many_page_buffers cannot be negative; use 0 or a size like 8000000.")
    _check_bounds(cfg, pbs)
    _check_file_shape(cfg)
    if cfg.shots_files < 1:
        raise UserError(f"shots_files is the number of files a shots case reads, at least 1, not {cfg.shots_files}.")
    if cfg.budget_minutes < 0:
        raise UserError(f"budget-minutes is 0 (exactly the trials) or more, not {cfg.budget_minutes}; fix it.")
    if not 0 < cfg.margin < 1:
        raise UserError(f"margin is a fraction between 0 and 1 (0.10: ±10 %), not {cfg.margin}; fix it.")
    if not 0 <= cfg.precision < 1 or cfg.max_minutes < 0:
        raise UserError("precision is a fraction between 0 and 1 (0.05: ±5 %) and max-minutes 0 or more; fix them.")
    if cfg.precision > 0 and cfg.max_trials < cfg.trials:
        raise UserError(
            f"with precision set, max-trials ({cfg.max_trials}) is the cap on trials and must be at least "
            f"trials ({cfg.trials}); e.g. --max-trials 8."
        )
    _check_networks(cfg)
    for name, opts in cfg.options.items():
        known = registry.get(name).defaults
        unknown = sorted(set(opts) - set(known))
        if unknown:
            listed = ", ".join(sorted(known)) or "none"
            raise UserError(f"[options.{name}] has unknown key {unknown[0]!r}; the known keys are: {listed}.")
        choices = registry.get(name).choices
        for key, value in opts.items():
            _check_option(name, key, value, known[key])
            if key in choices and value not in choices[key]:
                raise UserError(
                    f"[options.{name}] {key} = {value!r} is not one of {', '.join(map(repr, choices[key]))}; "
                    "fix it in the config."
                )


def _check_dotted_tables(cfg: BenchConfig) -> None:
    """`[options.ros3-2.0]` unquoted is split by TOML at its dots (backend `ros3-2`, table `0`): one
    sentence that says to quote the name, not "unknown backend 'ros3-2'"."""
    known = registry.names()
    for name, opts in cfg.options.items():
        if registry.TWIN in name or name in known:
            continue
        joined = [f"{name}.{key}" for key, value in opts.items() if isinstance(value, dict)]
        meant = next((j for j in joined if registry.TWIN not in j and j in known), None)
        if meant is not None:
            raise UserError(
                f'write the table as [options."{meant}"] (quoted): TOML splits an unquoted [options.{meant}] at '
                f"its dots, so it read a backend {name!r}; fix it in the config."
            )
        meant = next((k for k in known if k.startswith(f"{name}.")), None)
        if meant is not None:
            raise UserError(
                f"unknown backend {name!r} in [options]: TOML splits an unquoted table name at its dots; "
                f'quote the backend\'s whole name in the config, e.g. [options."{meant}"].'
            )


def _check_file_shape(cfg: BenchConfig) -> None:
    """The synthetic files' shape, by the rules `shotbench synth` makes them with, named by the
    TOML keys: a bad file_size was refused only once the files were being made, naming synth's
    flags, which bench does not have."""
    from shotbench.hdf5 import synthesis

    example = "e.g. file_size = 16000000 with page_size = 8000000"
    if cfg.signals > synthesis.MAX_SIGNALS:
        raise UserError(
            f"signals = {cfg.signals} is more than the {synthesis.MAX_SIGNALS} a shot holds; fix it in the config."
        )
    if cfg.page_size < synthesis.MIN_PAGE_SIZE:
        raise UserError(
            f"page_size = {cfg.page_size} is under {synthesis.MIN_PAGE_SIZE} bytes; fix it in the config, {example}."
        )
    if cfg.file_size % cfg.page_size or cfg.file_size < 2 * cfg.page_size:
        raise UserError(
            f"file_size = {cfg.file_size} must be a multiple of page_size ({cfg.page_size}) and at least two pages "
            f"(one for metadata, one for raw data); fix it in the config, {example}."
        )
    try:
        synthesis.plan_shot(synthesis.make_shot_ids(1, 0)[0], 0, cfg.signals, cfg.file_size - cfg.page_size, 0)
    except UserError:
        raise UserError(
            f"file_size = {cfg.file_size} leaves {cfg.file_size - cfg.page_size:,} bytes of raw data, too few for "
            f"{cfg.signals} signals; give a larger file_size or fewer signals in the config, {example}."
        ) from None


def _check_networks(cfg: BenchConfig) -> None:
    """A backend's network path names a known profile, on a backend whose requests go to the S3
    endpoint (a path in front of a local disk, or of a service that reads S3 for it, would change
    nothing and still be labelled)."""
    for name, net in cfg.networks.items():
        cls = registry.get(name)
        if net not in NETWORK_PROFILES:
            raise UserError(
                f"[options.{name}] network = {net!r} is not a network profile; choose one of: {', '.join(NETWORK_PROFILES)}."
            )
        if not cls.via_endpoint:
            raise UserError(
                f"[options.{name}] network: {cls.name} does not send its reads to the S3 endpoint, so a network "
                "path cannot slow it; put the network on another backend."
            )


LARGEST = 2**53  # any count or size above this is a typo (and no longer exact in JSON readers)
MAX_WORKERS = 1_000_000  # above what any machine or cluster holds; the memory check words smaller excesses
MAX_CASES = 100_000


def _check_bounds(cfg: BenchConfig, pbs: list[int]) -> None:
    """Huge values are refused here, in one sentence, before a plan of billions of cases is built."""
    for f in fields(BenchConfig):
        value = getattr(cfg, f.name)
        items = value if isinstance(value, list) else [value]
        for v in items:
            size = size_setting(v, f.name) if f.name in SIZE_SETTINGS else v
            if isinstance(size, (int, float)) and not isinstance(size, bool) and abs(size) > LARGEST:
                raise UserError(
                    f"setting {shown(f.name)} = {v!r} is too large (at most {LARGEST}); fix it in the config or command line."
                )
    if max(cfg.workers) > MAX_WORKERS:
        raise UserError(f"{max(cfg.workers)} workers is more than {MAX_WORKERS}; give fewer --workers.")
    cases = (
        len(cfg.backends)
        * len(cfg.modes)
        * len(cfg.workers)
        * len(pbs)
        * len(cfg.chunk_caches)
        * len(cfg.block_caches)
        * max(1, len(cfg.families))
        * cfg.trials
    )
    if cases > MAX_CASES:
        raise UserError(f"this matrix has up to {cases} cases, more than {MAX_CASES}; give fewer trials or settings.")


def _check_option(backend: str, key: str, value: Any, default: Any) -> None:
    """A backend option has its default's type (`block_size = "big"` is one sentence, not a
    failure inside every task of the run)."""
    if isinstance(default, bool):
        ok, want = isinstance(value, bool), "true or false"
    elif isinstance(default, int):
        ok, want = (
            isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= LARGEST,
            "a whole number of 0 or more",
        )
    elif isinstance(default, float):
        ok, want = (
            isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value),
            "a finite number",
        )
    elif isinstance(default, str):
        ok, want = isinstance(value, str), "a string"
    else:
        return
    if not ok:
        raise UserError(
            f"[options.{backend}] {key} = {value!r} must be {want}, like its default {default!r}; fix it in the config."
        )
