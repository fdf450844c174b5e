"""Backend name -> implementing class. Adding a backend: one module, one line in BACKENDS."""

from __future__ import annotations

import importlib

from shotbench.backends.base import Backend
from shotbench.errors import UserError

BACKENDS: dict[str, str] = {
    "ros3-1.14": "shotbench.backends.ros3:Ros3_114",
    "ros3-2.0": "shotbench.backends.ros3:Ros3_20",
    "ros3-2.2": "shotbench.backends.ros3:Ros3_22",
    "ros3-2.0-zlibng": "shotbench.backends.ros3:Ros3_20ZlibNg",
    "ros3-wheel": "shotbench.backends.ros3:Ros3Wheel",
    "fsspec": "shotbench.backends.fsspec:FsspecBackend",
    "obstore": "shotbench.backends.obstore:ObstoreBackend",
    "download": "shotbench.backends.download:DownloadBackend",
    "local": "shotbench.backends.local:LocalBackend",
    "raw-get": "shotbench.backends.rawget:RawGetBackend",
    # the readers people pick instead of h5py + ROS3 (env: .envs/readers, made on first use)
    "fsspec-tuned": "shotbench.backends.fsspec_tuned:FsspecTunedBackend",
    "pyfive": "shotbench.backends.pyfive:PyfiveBackend",
    "h5coro": "shotbench.backends.h5coro:H5coroBackend",
    "remfile": "shotbench.backends.remfile:RemfileBackend",
    "kerchunk": "shotbench.backends.kerchunk:KerchunkBackend",
    # the readers that skip libhdf5 on the read path or move it to a server (env: their own, made on first use)
    "virtualizarr": "shotbench.backends.virtualizarr:VirtualizarrBackend",
    "h5coro-hidefix": "shotbench.backends.hidefix:HidefixBackend",
    "icechunk-virtual": "shotbench.backends.icechunk:IcechunkVirtualBackend",
    "hsds": "shotbench.backends.hsds:HsdsBackend",
}


# Selected only by name (--backends, CONFIG): the profiles' default matrix leaves them out, so
# `make bench-ros3` neither installs the readers' environment nor grows longer.
OPT_IN = (
    "fsspec-tuned",
    "pyfive",
    "h5coro",
    "remfile",
    "kerchunk",
    "virtualizarr",
    "h5coro-hidefix",
    "icechunk-virtual",
    "hsds",
)
# Backends whose build the default matrix does not need: made the first time a run selects them.
NOT_DEFAULT = ("ros3-2.2", "ros3-2.0-zlibng")


def names() -> list[str]:
    return list(BACKENDS)


def default_names() -> list[str]:
    """The backends a profile runs when none are named."""
    return [n for n in BACKENDS if n not in OPT_IN and n not in NOT_DEFAULT]


TWIN = "@"  # `download@b`: the same backend again under another name (an A/A control)


def twin_of(name: str) -> str:
    """The registered backend a name measures: `download@b` is `download` measured again as its
    own configuration in every round, so the decision table has a pair whose true ratio is 1 (an
    A/A control: it must come out equivalent, never slower)."""
    base, sep, label = name.partition(TWIN)
    if sep and not label:
        raise UserError(f"backend {name!r} names no twin; write it as {base}{TWIN}b.")
    return base


def get(name: str) -> type[Backend]:
    """The class registered under `name` (imports only its module, not its libraries); a twin
    (`download@b`) is its backend's class."""
    try:
        target = BACKENDS[twin_of(name)]
    except KeyError:
        raise UserError(f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}.") from None
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)
