"""What every way of reading a shot file has to provide.

The runner never looks inside a backend: it asks which Python runs it, whether it reads
HDF5, and (inside a Dask worker) to open or fetch an object. Heavy libraries are imported
in `setup`, inside the worker, so the orchestrator never needs them.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from shotbench.units import MiB


@dataclass(frozen=True)
class Source:
    """Where the shot files are, as seen from a worker (credentials come from the environment)."""

    kind: str  # "s3" | "local"
    bucket: str = ""
    prefix: str = ""
    local_dir: str = ""  # local copies of the same objects (the `local` backend's input)

    def local_path(self, key: str) -> str:
        """Path of the local copy of `key`: keys are relative to the prefix inside local_dir."""
        if self.kind == "local" or os.path.isabs(key):
            return key
        rel = key[len(self.prefix) :] if self.prefix and key.startswith(self.prefix) else key
        return os.path.join(self.local_dir, rel.lstrip("/"))

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "bucket": self.bucket, "prefix": self.prefix, "local_dir": self.local_dir}


@dataclass
class ReadSettings:
    """HDF5 file-access settings a case varies."""

    page_buf_size: int = 0  # -1 (effective.PB_DEFAULT): leave the library's default
    chunk_cache: int = MiB
    options: dict[str, Any] = field(default_factory=dict)
    block_cache: int | None = None  # 2.2 ROS3 block cache (see shotbench.hdf5.blockcache); None: untouched

    def h5_kwargs(self) -> dict[str, int]:
        kw = {"rdcc_nbytes": int(self.chunk_cache)}
        if self.page_buf_size > 0:
            kw["page_buf_size"] = int(self.page_buf_size)
        return kw


class Backend:
    """A way to read shot files; subclasses set the class attributes and override open/fetch."""

    name: ClassVar[str] = ""
    env: ClassVar[str | None] = None  # builds env name (".envs/<env>"); None = the main environment
    reads_hdf5: ClassVar[bool] = True
    has_block_cache: ClassVar[bool] = False  # the case matrix varies the 2.2 ROS3 block cache
    needs_s3: ClassVar[bool] = True  # False: reads local copies, works for any data location
    reads_unsigned: ClassVar[bool] = True  # False: `--anonymous` refuses it (it can only sign)
    # its workers send their reads to the S3 endpoint, so a network path of its own (a run's
    # `[options.<backend>] network`) slows them; False for a local disk or a service reading S3 for it
    via_endpoint: ClassVar[bool] = True
    description: ClassVar[str] = ""
    defaults: ClassVar[dict[str, Any]] = {}
    choices: ClassVar[dict[str, tuple[str, ...]]] = {}  # string options that take one of a few values

    def reads_scales(self) -> bool:
        """Whether each signal's dimension scales are read with it (a reader that cannot resolve
        them may be told to skip them, and then reads less than the others)."""
        return True

    def __init__(self, source: Source, settings: ReadSettings) -> None:
        self.source = source
        self.settings = settings
        self.options = self.effective_options(settings.options)

    @classmethod
    def effective_options(cls, given: dict[str, Any]) -> dict[str, Any]:
        """The options the backend runs with: its defaults, overridden by those given (what a
        worker uses, and what run.json records)."""
        return {**cls.defaults, **given}

    # --- orchestrator side -------------------------------------------------------------
    @classmethod
    def python(cls) -> Path:
        """The interpreter whose libraries this backend measures (its build is made on first use)."""
        if cls.env is None:
            return Path(sys.executable)
        from shotbench.builds.environments import ensure_python

        return Path(ensure_python(cls.env))

    @classmethod
    def env_key(cls) -> str:
        return cls.env or "main"

    @classmethod
    def signs_with(cls, options: dict[str, Any]) -> str:
        """How a case's credentials reach the library: "given" (handed to it by this backend),
        "chain" (the library's own credential chain looks them up), "" (it never signs)."""
        return "given"

    @classmethod
    def process_env(cls, s3: Any) -> dict[str, str]:
        """Extra environment variables the worker processes need (never put on argv)."""
        return {}

    # --- worker side -------------------------------------------------------------------
    def setup(self, s3: Any) -> None:
        """Import libraries and create long-lived clients, before any clock starts."""
        self.meter = self.make_meter(s3)
        import h5py  # noqa: F401 - loads h5py before any case's clock starts

        self.s3 = s3

    def make_meter(self, s3: Any) -> Any:
        """The client-side request counter (`shotbench.backends.meters`); None when nothing goes to S3.

        Runs before h5py is imported: a meter may have to set the library's variables first."""
        if self.source.kind != "s3":
            return None
        from shotbench.backends.meters import Meter

        return Meter()

    def open(self, key: str, size: int) -> Any:
        """An open h5py.File for `key` (caller closes it)."""
        raise NotImplementedError

    def fetch(self, key: str, start: int, length: int) -> Any:
        """GET bytes [start, start+length) of `key` (length < 0: to the end): a buffer the caller
        counts, checks when verifying, and drops."""
        raise NotImplementedError

    def read_signal(self, fh: Any, shot: str, name: str) -> tuple[int, int]:
        """Read one signal and its dimension scales from an open file: (datasets, bytes)."""
        from shotbench.hdf5.shotfile import read_signal

        return read_signal(fh, shot, name)

    def read_signal_crc(self, fh: Any, shot: str, name: str) -> tuple[int, int, int]:
        """`read_signal` plus a CRC-32 of every value read, for checking against the local copy."""
        from shotbench.hdf5.shotfile import read_signal_crc

        return read_signal_crc(fh, shot, name)

    def build_index(self, key: str, size: int) -> None:
        """Readers with a per-file index build and store it here, before the clock starts."""

    def index_stats(self, key: str) -> tuple[float, int] | None:
        """(seconds to build, bytes stored) of `key`'s index; None for readers without one."""
        return None

    def end_task(self) -> None:
        """Drop anything cached for the duration of one task (e.g. downloaded copies)."""

    def read_back(self, fh: Any) -> tuple[dict[str, Any], Any]:
        """(effective settings, page-buffer counters) of an open file, after its reads.

        Readers that do not go through libhdf5 (pyfive, h5coro, kerchunk) have none: empty cells."""
        from shotbench.hdf5.effective import read_settings, read_stats

        if not hasattr(fh, "id") or not hasattr(fh.id, "get_access_plist"):
            return {}, None
        return read_settings(fh), read_stats(fh)

    def retries(self) -> int | None:
        """Requests this process's client has sent again so far (None: the client cannot tell)."""
        return None

    def h5file(self, target: Any) -> Any:
        import h5py

        return h5py.File(target, "r", **self.settings.h5_kwargs())


def s3_from_environ() -> Any:
    """The S3 settings a worker process was started with (AWS_* variables, never argv).

    Read from the variables alone, not boto3's credential chain: the worker was given exactly
    these, and `shotbench.store.s3` imports boto3 only where it is used, so this works in an
    environment without it.
    """
    from shotbench.store.s3 import DEFAULT_REGION, S3Config

    env = os.environ
    return S3Config(
        endpoint_url=env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None,
        region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or DEFAULT_REGION,
        access_key=env.get("AWS_ACCESS_KEY_ID") or None,
        secret_key=env.get("AWS_SECRET_ACCESS_KEY") or None,
        session_token=env.get("AWS_SESSION_TOKEN") or None,
        ca_bundle=env.get("AWS_CA_BUNDLE") or None,
        anonymous=env.get("SHOTBENCH_ANONYMOUS") == "1",  # set with the case's credentials
    )


def child_env(extra: dict[str, str]) -> dict[str, str]:
    """The environment of a process run in a backend's own environment: none of this process's S3
    or AWS settings (the backend gets exactly `extra`), unbuffered output, and no PYTHONPATH, so
    the environment's own shotbench install is what it imports."""
    from shotbench.store.s3 import without_s3_settings

    env = without_s3_settings()
    env.update(extra)
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("PYTHONPATH", None)
    return env
