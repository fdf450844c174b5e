"""Synthetic HDF5 shot files shaped like the Alcator C-Mod files of the upstream studies.

The upstream files are not public, so local runs read look-alikes that exercise the same
HDF5 code paths: `/shots/<SHOT_ID>/signals/<SIGNAL>` with a `shot` attribute, dimension
scales in `/shots/<SHOT_ID>` shared by checksum, deflate level 4 above 8 kB, paged
aggregation with 8,000,000-byte pages and files of exactly 16,000,000 bytes.

Exact size: sample counts are chosen from raw byte counts so that the deflated payload
takes about half of the raw-data pages (file_size - one metadata page). With
paged aggregation libhdf5 ends the file on a page boundary, so a 16,000,000-byte file is
simply its metadata page plus one raw-data page, as upstream. Whenever the file ends short
of `file_size` (unpaged files, or paged files of more than two pages), the
end-of-allocation address in the superblock is raised to `file_size` (checksum recomputed)
and the file extended with zeros: allocated but unused space, which is what the tail of
the last page of a paged file is anyway. A payload that would not fit is a UserError.

Reproducibility: all objects are written with `track_times=False` in a fixed order with
fixed format bounds; the one object libhdf5 always timestamps (the superblock extension
that records the page strategy) gets its times set to the shot's date and its checksum
recomputed, so the same seed gives byte-identical files.

Many-shot files (upstream's `hdf5/multi-shot` study) pack the shots of a single-shot dataset
into one file, in one of two storage orders: `shot` layout writes (hence stores) every signal
of a shot before the next shot; `signal` layout writes one signal across every shot before
the next signal. Hierarchy, scales and data are those of the single-shot files.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import hashlib
import os
import shutil
import signal
import struct
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO

import h5py
import numpy as np

from shotbench.diskspace import check_holds_files, nearest_existing
from shotbench.errors import UserError
from shotbench.hdf5.shotfile import HDF5_SIGNATURE, looks_like_hdf5, signal_names

PAGINGS = ("paged", "unpaged")  # file-space strategy: paged aggregation or libhdf5's default
LAYOUTS = ("single", "shot", "signal")  # one file per shot; one file stored shot by shot / signal by signal
LIBVER = ("v110", "v110")  # readable by libhdf5 1.10+, i.e. every build we benchmark
# The format generations a file can be written in (--libver): "v110", the upstream files' shape
# (superblock 3, version-4 chunk layouts), and "earliest" (superblock 0, version-3 chunk layouts,
# B-tree v1 chunk indexes), the shape every reader implements. Under "earliest" the groups still
# track link creation order (1.8 link messages in version-1 object headers): pyfive 1.3 resolves a
# dimension-scale reference only through such groups, not through symbol-table groups.
LIBVERS = {"v110": LIBVER, "earliest": ("earliest", "v108")}
COMPRESS_ABOVE = 8_192  # bytes; "larger than 8 kB" as upstream
COMPACT_UP_TO = 2_048  # bytes; tiny datasets live in their object header
DEFLATE_LEVEL = 4
RAW_FILL = 1.2  # raw payload per byte of raw-data pages; deflate brings it to ~0.75
MAX_DURATION = 2.0  # seconds of plasma in the longest synthetic shot
MIN_SCALED_SAMPLES = 32
GENERATOR = "shotbench-synth/2"  # bump when the bytes for a given seed change
_USER_ERRNOS = {errno.EACCES, errno.EPERM, errno.ENOENT, errno.ENOTDIR, errno.EROFS,
                errno.ENOSPC, errno.EDQUOT}  # fmt: skip


@dataclass(frozen=True)
class TimeBase:
    """A digitizer clock: MDSplus `dim_of(signal)` for every signal sampled by it."""

    rate: float  # samples per second before payload scaling
    start: float  # seconds relative to the plasma breakdown
    dtype: str
    scaled: bool  # sample count follows the payload budget (fast digitizers)


@dataclass(frozen=True)
class Axis:
    """A non-time dimension (chord number, radius) for profiles and per-channel data."""

    values: tuple[float, ...]
    dtype: str = "f4"


@dataclass(frozen=True)
class Signal:
    """One entry of the signal catalog: how the dataset is shaped and what it looks like."""

    name: str
    family: str  # waveform family, see _waveform
    timebase: str | None  # None: not a time trace
    axis: str | None = None  # second (or only) non-time dimension
    dtype: str = "f4"
    amp: float = 1.0
    units: str = ""
    has_scales: bool = True  # False: stored without dimension scales


TIMEBASES: dict[str, TimeBase] = {
    "efit": TimeBase(50.0, 0.02, "f4", scaled=False),
    "ts": TimeBase(60.0, 0.01, "f4", scaled=False),
    "pcs1": TimeBase(500.0, -1.5, "f4", scaled=False),
    "pcs2": TimeBase(500.0, -0.5, "f4", scaled=False),
    "mag": TimeBase(5_000.0, -1.0, "f8", scaled=True),
    "mirnov": TimeBase(100_000.0, -0.05, "f8", scaled=True),
    "xtomo": TimeBase(50_000.0, -0.05, "f8", scaled=True),
    "tci": TimeBase(10_000.0, -0.1, "f8", scaled=True),
    "ece": TimeBase(1_000.0, 0.0, "f4", scaled=True),
    "bolo": TimeBase(1_000.0, -0.1, "f4", scaled=True),
    "hybrid": TimeBase(2_000.0, -2.0, "f4", scaled=True),
    "slow": TimeBase(1_000.0, -0.1, "f8", scaled=True),
    "rf": TimeBase(4_000.0, -0.2, "f4", scaled=True),
    "spect": TimeBase(200.0, 0.0, "f4", scaled=True),
}

AXES: dict[str, Axis] = {
    "chord": Axis(tuple(float(i) for i in range(1, 25))),
    "ts_chan": Axis(tuple(float(i) for i in range(30))),
    "ts_z": Axis(tuple(round(-0.1 + 0.4 * i / 29, 4) for i in range(30))),
    "ece_r": Axis(tuple(round(0.60 + 0.30 * i / 31, 4) for i in range(32))),
    "hyb_ch": Axis(tuple(float(i) for i in range(16))),
    "pid": Axis((0.0, 1.0, 2.0, 3.0)),
}

_EFIT = ("aminor", "area", "betan", "betap", "chisq", "doutl", "doutu", "eout", "kappa",
         "li", "obott", "otop", "q0", "q95", "qstar", "rmagx", "ssep", "ssibry", "time",
         "time2", "vloopt", "wplasm", "xnnc", "zmagx")  # fmt: skip

# The 61 signal names of the upstream C-Mod files (from the published benchmark CSVs).
CATALOG: tuple[Signal, ...] = (
    *(Signal(f"aeqdsk_{n}", "time" if n.startswith("time") else "smooth", "efit",
             amp=1.0 + (zlib.crc32(n.encode()) % 300) / 100.0) for n in _EFIT),
    Signal("bolo_axa_bright", "profile", "bolo", "chord", amp=2.0e5, units="W/m^2"),
    Signal("bolo_axa_good", "flags", None, "chord", dtype="i4"),
    Signal("bolo_axa_zo", "static", None, "chord", amp=0.1, units="V", has_scales=False),
    Signal("bolo_axj_good", "flags", None, "chord", dtype="i4"),
    Signal("bolo_axj_zo", "static", None, "chord", amp=0.1, units="V", has_scales=False),
    Signal("cmod_ts_te", "profile", "ts", "ts_z", amp=2.5, units="keV"),
    Signal("electrons_fiberz", "static", None, "ts_chan", amp=0.3, units="m"),
    Signal("electrons_nl04", "smooth", "tci", amp=8.0e19, units="m^-2"),
    Signal("electrons_te_rz", "profile", "ece", "ece_r", amp=3.0, units="keV"),
    Signal("electrons_zsrt", "static", None, "ts_chan", amp=0.3, units="m"),
    Signal("eng_r_cur", "smooth", "slow", amp=1.2e3, units="A"),
    Signal("hybrid_aout", "profile", "hybrid", "hyb_ch", amp=10.0, units="V"),
    Signal("hybrid_in056", "smooth", "hybrid", amp=5.0, units="V"),
    Signal("hybrid_in056_p2v", "scalar", None, amp=2.5e-3, units="V/count"),
    Signal("lh_netpow", "smooth", "rf", amp=8.0e2, units="kW"),
    Signal("mag_bp13bc", "mhd", "mirnov", amp=50.0, units="T/s"),
    Signal("mag_bp13de", "mhd", "mirnov", amp=50.0, units="T/s"),
    Signal("mag_bp13gh", "mhd", "mirnov", amp=50.0, units="T/s"),
    Signal("mag_bp13jk", "mhd", "mirnov", amp=50.0, units="T/s"),
    Signal("mag_btor", "flat", "mag", dtype="f8", amp=-5.4, units="T"),
    Signal("mag_ip", "smooth", "mag", dtype="f8", amp=-1.0e6, units="A"),
    Signal("mag_nodename", "smooth", "mag", amp=1.0, units="V"),
    Signal("mag_phi", "smooth", "mag", amp=0.8, units="Wb"),
    Signal("mag_pickup", "mhd", "mag", amp=0.05, units="V"),
    Signal("mflux_v0", "smooth", "slow", amp=1.5, units="V"),
    Signal("pcs_s1p02", "program", "pcs1", amp=1.0e6, units="A"),
    Signal("pcs_s1p02_pid", "pid", "pcs1", "pid"),
    Signal("pcs_s1p16_pid", "pid", "pcs1", "pid"),
    Signal("pcs_s1start", "scalar", None, amp=-1.5, units="s"),
    Signal("pcs_s2p02", "program", "pcs2", amp=1.0e6, units="A"),
    Signal("pcs_s2p02_pid", "pid", "pcs2", "pid"),
    Signal("pcs_s2p16", "program", "pcs2", amp=2.0e5, units="A"),
    Signal("pcs_s2p16_pid", "pid", "pcs2", "pid"),
    Signal("pcs_s2start", "scalar", None, amp=-0.5, units="s"),
    Signal("rf_power", "smooth", "rf", amp=2.5e3, units="kW"),
    Signal("spect_twopi", "smooth", "spect", amp=4.0e17, units="ph/s/sr"),
    Signal("xtomo_chord16", "mhd", "xtomo", amp=3.0e4, units="W/m^2"),
)  # fmt: skip

MAX_SIGNALS = len(CATALOG)
assert MAX_SIGNALS == 61 and len({s.name for s in CATALOG}) == 61

# The order in which signals are kept when fewer than 61 are asked for: varied shapes first,
# so a 12-signal test file still has shared scales, 2-D profiles and compressed traces.
PRIORITY: tuple[str, ...] = (
    "mag_ip", "aeqdsk_aminor", "electrons_nl04", "cmod_ts_te", "mag_bp13bc", "aeqdsk_kappa",
    "bolo_axa_bright", "bolo_axa_good", "mag_btor", "pcs_s1start", "mag_bp13de", "aeqdsk_q95",
)  # fmt: skip


@dataclass(frozen=True)
class ShotPlan:
    """Everything that decides one file's content, so it can be re-derived to check a file."""

    shot_id: int
    signals: tuple[Signal, ...]
    duration: float  # seconds of plasma
    lengths: dict[str, int]  # samples per time base


def catalog_subset(count: int) -> tuple[Signal, ...]:
    """The `count` signals a dataset of that width carries, in catalog order."""
    by_name = {s.name: s for s in CATALOG}
    order = list(PRIORITY) + [s.name for s in CATALOG if s.name not in PRIORITY]
    keep = set(order[:count])
    return tuple(by_name[n] for n in sorted(keep))


def make_shot_ids(shots: int, seed: int) -> list[int]:
    """C-Mod style shot numbers 1YYMMDDNNN: run days of the 2016 campaign, 20-40 shots a day.

    The sequence only grows with `shots`, so a larger dataset extends a smaller one.
    """
    rng = np.random.default_rng([seed, 0x5407])
    day = dt.date(2016, 1, 4) + dt.timedelta(days=int(rng.integers(0, 200)))
    ids: list[int] = []
    number = 0
    last = int(rng.integers(20, 41))
    while len(ids) < shots:
        number += 1 + int(rng.random() < 0.15)  # occasional test shot not kept
        if number > last:
            day += dt.timedelta(days=int(rng.integers(1, 4)))
            number, last = 1, int(rng.integers(20, 41))
        ids.append(int(f"1{day:%y%m%d}{number:03d}"))
    return ids


def plan_shot(shot_id: int, index: int, signals: int, capacity: int, seed: int) -> ShotPlan:
    """Choose the shot's signals, duration and sample counts from the seed alone."""
    rng = np.random.default_rng([seed, shot_id])
    chosen = list(catalog_subset(signals))
    if len(chosen) > 1 and (index % 4 == 1 or rng.random() < 0.15):
        dropped = rng.choice(len(chosen), size=int(rng.integers(1, max(2, len(chosen) // 8) + 1)),
                             replace=False)  # fmt: skip
        chosen = [s for i, s in enumerate(chosen) if i not in set(dropped.tolist())]
    duration = round(float(rng.uniform(1.0, MAX_DURATION)), 3)
    # Sample counts come from the full signal list and the longest shot, so files with
    # fewer signals or shorter shots are smaller, as real ones are.
    mult = _rate_multiplier(catalog_subset(signals), capacity)
    lengths = {key: _samples(tb, duration, mult) for key, tb in TIMEBASES.items()}
    return ShotPlan(shot_id, tuple(chosen), duration, lengths)


def _samples(tb: TimeBase, duration: float, mult: float) -> int:
    span = duration + 0.3 - tb.start  # digitizers keep recording after the plasma ends
    if not tb.scaled:
        return max(2, round((duration - tb.start) * tb.rate))
    return max(MIN_SCALED_SAMPLES, round(span * tb.rate * mult))


def _raw_bytes(signals: tuple[Signal, ...], lengths: dict[str, int]) -> int:
    """Uncompressed payload of signals plus their (deduplicated) scales."""
    total = 0
    bases = set()
    axes = set()
    for s in signals:
        width = len(AXES[s.axis].values) if s.axis else 1
        item = np.dtype(s.dtype).itemsize
        if s.timebase:
            total += lengths[s.timebase] * width * item
            bases.add(s.timebase)
        elif s.family != "scalar":
            total += width * item
        if s.axis and s.has_scales:
            axes.add(s.axis)
    total += sum(lengths[b] * np.dtype(TIMEBASES[b].dtype).itemsize for b in bases)
    total += sum(len(AXES[a].values) * 4 for a in axes)
    return total


@lru_cache(maxsize=64)
def _rate_multiplier(signals: tuple[Signal, ...], capacity: int) -> float:
    """Largest sample-rate multiplier whose raw payload fits RAW_FILL of the capacity."""
    budget = RAW_FILL * capacity

    def size(mult: float) -> int:
        return _raw_bytes(signals, {k: _samples(tb, MAX_DURATION, mult) for k, tb in TIMEBASES.items()})

    lo, hi = 0.0, 1.0
    while size(hi) < budget and hi < 1e6:
        lo, hi = hi, hi * 2
    if size(lo) > budget:
        raise UserError(
            f"{capacity:,} bytes of raw-data pages cannot hold {len(signals)} signals; "
            "use a larger --file-size or fewer --signals."
        )
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if size(mid) <= budget else (lo, mid)
    return lo


# ---------------------------------------------------------------------------------------
# Waveforms: smooth plasma evolution + digitizer noise, quantized like an ADC, so the data
# compresses like measured signals (not like white noise, not like zeros).


def _envelope(t: np.ndarray, duration: float) -> np.ndarray:
    """Current ramp-up, flat top, ramp-down: the shape most C-Mod signals follow."""
    return np.interp(t, [0.0, 0.25, duration - 0.25, duration], [0.0, 1.0, 1.0, 0.0])


def _quantize(x: np.ndarray, amp: float, bits: int = 14) -> np.ndarray:
    step = abs(amp) * 2.0 / 2**bits if amp else 1.0
    return np.round(x / step) * step


def _waveform(sig: Signal, t: np.ndarray | None, plan: ShotPlan, seed: int) -> np.ndarray:
    """Data of one signal, seeded by (seed, shot, name) so it does not depend on the others."""
    rng = np.random.default_rng([seed, plan.shot_id, zlib.crc32(sig.name.encode())])
    amp, d = sig.amp, plan.duration
    width = len(AXES[sig.axis].values) if sig.axis else 0
    if sig.family == "scalar":
        return np.asarray(amp * (1 + 0.01 * rng.standard_normal()), dtype=sig.dtype)
    if sig.family == "flags":
        return (rng.random(width) > 0.08).astype(sig.dtype)
    if sig.family == "static":
        base = np.linspace(-amp, amp, width) + amp * 0.01 * rng.standard_normal(width)
        return _quantize(base, amp).astype(sig.dtype)
    assert t is not None
    if sig.family == "time":
        return t.astype(sig.dtype)
    if sig.family == "program":  # plasma control requests: piecewise linear, no noise
        knots = np.sort(rng.uniform(t[0], t[-1], 6))
        return _quantize(np.interp(t, knots, amp * rng.uniform(0.2, 1.0, 6)), amp).astype(sig.dtype)
    if sig.family == "pid":  # controller gains: constant over 250 ms segments
        gains = rng.uniform(0.1, 2.0, width)
        steps = np.floor(np.clip(t, 0, None) / 0.25)[:, None]
        return _quantize(gains * (1 + 0.1 * np.sin(steps + np.arange(width))), 2.0).astype(sig.dtype)
    env = _envelope(t, d)
    noise = rng.standard_normal((t.size, width) if width else t.size, dtype=np.float32)
    if sig.family == "flat":
        ramp = np.interp(t, [-0.8, -0.4, d + 0.1, d + 0.3], [0.0, 1.0, 1.0, 0.0])
        return _quantize(amp * ramp + 0.002 * abs(amp) * noise, amp).astype(sig.dtype)
    phase = rng.uniform(0, 2 * np.pi)
    if sig.family == "mhd":  # fluctuating coil signals: modes riding on the envelope
        freq = rng.uniform(0.05, 0.2) * (t.size / max(t[-1] - t[0], 1e-3))
        mode = np.sin(2 * np.pi * freq * t + phase) * (1 + 0.5 * np.sin(2 * np.pi * 13 * t))
        return _quantize(amp * (env * 0.6 * mode + 0.08 * noise), amp, 12).astype(sig.dtype)
    wobble = 1 + 0.05 * np.sin(2 * np.pi * rng.uniform(2, 8) * t + phase)
    if sig.family == "profile":
        axis = np.asarray(list(AXES[sig.axis].values))  # type: ignore[index]
        rho = (axis - axis.min()) / max(float(np.ptp(axis)), 1e-9)
        shape = np.clip(1 - (2 * rho - 1) ** 2, 0, None) ** rng.uniform(0.7, 1.5)
        saw = 1 + 0.04 * ((t * rng.uniform(80, 150)) % 1.0)  # sawteeth
        value = amp * (env * wobble * saw)[:, None] * (0.05 + shape)[None, :]
        return _quantize(value + 0.02 * amp * noise, amp, 12).astype(sig.dtype)
    return _quantize(amp * env * wobble + 0.01 * amp * noise, amp).astype(sig.dtype)


def _time_vector(key: str, plan: ShotPlan) -> np.ndarray:
    tb = TIMEBASES[key]
    n = plan.lengths[key]
    stop = plan.duration + (0.3 if tb.scaled else 0.0)
    return (tb.start + np.arange(n) * ((stop - tb.start) / n)).astype(tb.dtype)


# ---------------------------------------------------------------------------------------
# Writing


def _dataset(group: h5py.Group, name: str, data: np.ndarray, chunk_bytes: int) -> h5py.Dataset:
    """Store as the upstream files did: deflate 4 above 8 kB, tiny data compact, else contiguous."""
    if data.nbytes > COMPRESS_ABOVE:
        return group.create_dataset(
            name, data=data, chunks=_chunks(data, chunk_bytes), compression="gzip",
            compression_opts=DEFLATE_LEVEL, track_times=False,
        )  # fmt: skip
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT if data.nbytes <= COMPACT_UP_TO else h5py.h5d.CONTIGUOUS)
    return group.create_dataset(name, data=data, dcpl=dcpl, track_times=False)


def _chunks(data: np.ndarray, chunk_bytes: int) -> tuple[int, ...]:
    row = data.itemsize * (data.shape[1] if data.ndim == 2 else 1)
    rows = max(1, min(data.shape[0], chunk_bytes // row))
    return (rows, *data.shape[1:])


def _scale(parent: h5py.Group, scales: dict[str, h5py.Dataset], label: str,
           values: np.ndarray, chunk_bytes: int) -> h5py.Dataset:  # fmt: skip
    """One dimension scale per distinct content: MDSplus dim_of deduplicated by checksum."""
    digest = hashlib.sha1(values.dtype.str.encode() + str(values.shape).encode() + values.tobytes())
    key = digest.hexdigest()
    if key not in scales:
        ds = _dataset(parent, f"{label}_{key[:12]}", values, chunk_bytes)
        ds.make_scale(label)
        scales[key] = ds
    return scales[key]


def _write_signal(shot: h5py.Group, scales: dict[str, h5py.Dataset], sig: Signal, plan: ShotPlan,
                  seed: int, chunk_bytes: int) -> None:  # fmt: skip
    """One signal of one shot with its dimension scales (shared within the shot)."""
    t = _time_vector(sig.timebase, plan) if sig.timebase else None
    data = _waveform(sig, t, plan, seed)
    ds = _dataset(shot["signals"], sig.name, data, chunk_bytes)
    ds.attrs["shot"] = np.int64(plan.shot_id)
    if sig.units:
        ds.attrs["units"] = np.bytes_(sig.units)
    if not sig.has_scales:
        return
    dims: list[tuple[str, np.ndarray]] = []
    if t is not None:
        dims.append(("time", t))
    if sig.axis:
        dims.append((sig.axis, np.asarray(AXES[sig.axis].values, dtype=AXES[sig.axis].dtype)))
    for i, (label, values) in enumerate(dims):
        ds.dims[i].attach_scale(_scale(shot, scales, label, values, chunk_bytes))


def storage_order(plans: list[ShotPlan], layout: str) -> list[tuple[ShotPlan, Signal]]:
    """The order datasets are written, hence stored: shot by shot, or signal by signal."""
    if layout == "signal":
        names = sorted({s.name for p in plans for s in p.signals})
        return [(p, s) for n in names for p in plans for s in p.signals if s.name == n]
    return [(p, s) for p in plans for s in p.signals]


def _write(path: Path, plans: list[ShotPlan], paging: str, page_size: int, seed: int, params: str,
           layout: str = "shot", libver: str = "v110") -> None:  # fmt: skip
    fs = {"fs_strategy": "page", "fs_page_size": page_size} if paging == "paged" else {}
    chunk_bytes = max(4_096, min(256_000, page_size // 32))
    ordered = libver != "v110"  # see LIBVERS
    with h5py.File(path, "w", libver=LIBVERS[libver], **fs) as f:
        f.attrs["source"] = np.bytes_("shotbench synth: synthetic C-Mod-like shot, not measured data")
        f.attrs["synth"] = np.bytes_(params)
        groups: dict[int, tuple[h5py.Group, dict[str, h5py.Dataset]]] = {}
        top = f.create_group("shots", track_order=ordered or None)
        for plan in plans:
            shot = top.create_group(str(plan.shot_id), track_order=ordered or None)
            shot.create_group("signals", track_order=ordered or None)
            groups[plan.shot_id] = (shot, {})
        for plan, sig in storage_order(plans, layout):
            shot, scales = groups[plan.shot_id]
            _write_signal(shot, scales, sig, plan, seed, chunk_bytes)


# ---------------------------------------------------------------------------------------
# Fixing the two things libhdf5 does not let us choose: a timestamp and the file's length.


def _rot(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & 0xFFFFFFFF


def _mix(a: int, b: int, c: int, shifts: tuple[int, ...]) -> tuple[int, int, int]:
    """lookup3's `mix` round: subtract, xor with a rotation, add; over (a, b, c) in turn."""
    m = 0xFFFFFFFF
    for k, shift in enumerate(shifts):
        if k % 3 == 0:
            a = ((a - c) & m) ^ _rot(c, shift)
            c = (c + b) & m
        elif k % 3 == 1:
            b = ((b - a) & m) ^ _rot(a, shift)
            a = (a + c) & m
        else:
            c = ((c - b) & m) ^ _rot(b, shift)
            b = (b + a) & m
    return a, b, c


def _final(a: int, b: int, c: int) -> int:
    """lookup3's `final` round: xor, then subtract a rotation; over (c, a, b) in turn."""
    m = 0xFFFFFFFF
    for k, shift in enumerate((14, 11, 25, 16, 4, 14, 24)):
        if k % 3 == 0:
            c = ((c ^ b) - _rot(b, shift)) & m
        elif k % 3 == 1:
            a = ((a ^ c) - _rot(c, shift)) & m
        else:
            b = ((b ^ a) - _rot(a, shift)) & m
    return c


def lookup3(data: bytes, initval: int = 0) -> int:
    """Bob Jenkins' lookup3 `hashlittle`, the checksum of HDF5 metadata since format 2."""
    m = 0xFFFFFFFF
    a = b = c = (0xDEADBEEF + len(data) + initval) & m
    full = (len(data) - 1) // 12 if data else 0  # the last 1..12 bytes get `final`
    for i in range(full):
        x, y, z = struct.unpack_from("<III", data, 12 * i)
        a, b, c = _mix((a + x) & m, (b + y) & m, (c + z) & m, (4, 6, 8, 16, 19, 4))
    if not data:
        return c
    x, y, z = struct.unpack("<III", data[12 * full :].ljust(12, b"\0"))
    return _final((a + x) & m, (b + y) & m, (c + z) & m)


def _finish(path: Path, file_size: int, stamp: int) -> None:
    """Pin timestamps and extend the allocation to `file_size`, for superblock 0, 2 or 3."""
    with open(path, "rb") as fh:
        version = fh.read(9)[8:9]
    if version == b"\0":
        _finish_v0(path, file_size)
    else:
        _finish_v2(path, file_size, stamp)


def _finish_v0(path: Path, file_size: int) -> None:
    """Superblock version 0 has no checksum and no extension (nothing timestamped): raise its
    end-of-file address (byte 40, after the base and free-space addresses) and extend the file."""
    with open(path, "r+b") as fh:
        head = bytearray(fh.read(48))
        if head[:8] != HDF5_SIGNATURE or head[8] != 0 or head[13] != 8:
            raise RuntimeError(f"{path}: unexpected superblock (version {head[8]})")
        (eoa,) = struct.unpack_from("<Q", head, 40)
        if eoa < file_size:
            struct.pack_into("<Q", head, 40, file_size)
            fh.seek(0)
            fh.write(head)
            fh.truncate(file_size)


def _finish_v2(path: Path, file_size: int, stamp: int) -> None:
    """Pin the superblock extension's timestamps and extend the allocation to `file_size`.

    Format: superblock version 2/3 = signature, version, offset size, length size, flags,
    base address, extension address, end-of-file address, root address, checksum.
    """
    with open(path, "r+b") as fh:
        head = bytearray(fh.read(48))
        if head[:8] != HDF5_SIGNATURE or head[8] not in (2, 3) or head[9] != 8:
            raise RuntimeError(f"{path}: unexpected superblock (version {head[8]})")
        ext_addr, eoa = struct.unpack_from("<QQ", head, 20)
        if ext_addr != 0xFFFFFFFFFFFFFFFF:
            _pin_times(fh, ext_addr, stamp)
        if eoa < file_size:
            struct.pack_into("<Q", head, 28, file_size)
            struct.pack_into("<I", head, 44, lookup3(bytes(head[:44])))
            fh.seek(0)
            fh.write(head)
            fh.truncate(file_size)


def _pin_times(fh: BinaryIO, addr: int, stamp: int) -> None:
    """Set the times of a version-2 object header to `stamp` and recompute its checksum."""
    fh.seek(addr)
    head = fh.read(32)
    if head[:4] != b"OHDR" or head[4] != 2:
        raise RuntimeError("unexpected superblock extension header")
    flags = head[5]
    if not flags & 0x20:  # times not stored
        return
    pos = 6 + 16 + (4 if flags & 0x10 else 0)
    width = 1 << (flags & 0x03)
    end = pos + width + int.from_bytes(head[pos : pos + width], "little")  # chunk 0 ends here
    fh.seek(addr)
    block = bytearray(fh.read(end + 4))
    if lookup3(bytes(block[:end])) != struct.unpack_from("<I", block, end)[0]:
        raise RuntimeError("superblock extension checksum does not verify")
    struct.pack_into("<IIII", block, 6, stamp, stamp, stamp, stamp)
    struct.pack_into("<I", block, end, lookup3(bytes(block[:end])))
    fh.seek(addr)
    fh.write(block)


# ---------------------------------------------------------------------------------------
# Public API


SECONDS_PER_MB = 0.04  # measured write rate on a busy 2-core machine (about 25 MB/s), for the estimate
METADATA_PER_DATASET = 4_096  # bytes of object header, index and link per dataset, generously
MIN_PAGE_SIZE = 4_096  # the smallest file-space page made (bench's config is checked against it too)


def _check(shots: int, signals: int, file_size: int, page_size: int, paging: str, seed: int,
           layout: str = "single", libver: str = "v110") -> int:  # fmt: skip
    """Validate parameters; return the raw-data capacity each shot's payload is sized against."""
    if shots < 1:
        raise UserError("--shots must be at least 1.")
    if not 1 <= signals <= MAX_SIGNALS:
        raise UserError(f"--signals must be between 1 and {MAX_SIGNALS} (the C-Mod catalog).")
    if paging not in PAGINGS:
        raise UserError(f"--paging must be one of {', '.join(PAGINGS)}.")
    if layout not in LAYOUTS:
        raise UserError(f"--layout must be one of {', '.join(LAYOUTS)}.")
    if libver not in LIBVERS:
        raise UserError(f"--libver must be one of {', '.join(LIBVERS)}.")
    if libver == "earliest" and paging == "paged":  # page aggregation is a 1.10 file-format feature
        raise UserError("--libver earliest cannot write paged files; add --paging unpaged, or use --libver v110.")
    if seed < 0:
        raise UserError("--seed must be zero or a positive whole number.")
    if page_size < MIN_PAGE_SIZE:
        raise UserError(f"--page-size must be at least {MIN_PAGE_SIZE} bytes.")
    if file_size % page_size or file_size < 2 * page_size:
        raise UserError(
            "--file-size must be a multiple of --page-size and at least two pages "
            "(one for metadata, one for raw data), e.g. 16000000 with 8000000."
        )
    return file_size - page_size


def estimate_bytes(shots: int, signals: int, file_size: int, page_size: int, layout: str) -> int:
    """Disk space the files will take: exact for single-shot files, an upper bound otherwise.

    A many-shot file holds the payload of `shots` single-shot files of `file_size` bytes
    (at most their raw-data pages) plus one metadata record per dataset, in whole pages.
    """
    if layout == "single":
        return shots * file_size
    raw = shots * (file_size - page_size) + shots * signals * 2 * METADATA_PER_DATASET
    return (raw // page_size + 2) * page_size


def check_space(out: Path, need: int) -> None:
    """Refuse up front, in one sentence, when the disk under `out` cannot hold `need` bytes, or
    `out` cannot be written at all (that is the cause then, not the space)."""
    check_holds_files(out)
    probe = nearest_existing(out)
    if probe == Path(out).absolute() and not os.access(probe, os.W_OK | os.X_OK):
        why = (
            "a read-only filesystem"
            if os.statvfs(probe).f_flag & os.ST_RDONLY
            else "this user may not make files there"
        )
        raise UserError(f"cannot write to {out} ({why}); choose a writable --out folder.")
    free = shutil.disk_usage(probe).free
    if need > free:
        raise UserError(
            f"the files need about {need / 1e9:,.2f} GB but only {free / 1e9:,.2f} GB are free under "
            f"{probe}; free some space, choose another --out, or ask for fewer --shots or a smaller --file-size."
        )


def estimate_seconds(need: int) -> float:
    """Rough generation time for `need` bytes of files (shown before a long write starts)."""
    return need / 1e6 * SECONDS_PER_MB


def _make_shot_file_of(args: tuple) -> Path:
    """`make_shot_file` of one argument tuple: what a process pool's map hands over."""
    return make_shot_file(*args)


def make_shot_file(
    path: Path,
    shot_id: int,
    index: int = 0,
    signals: int = MAX_SIGNALS,
    file_size: int = 16_000_000,
    page_size: int = 8_000_000,
    paging: str = "paged",
    seed: int = 0,
    libver: str = "v110",
) -> Path:
    """Write one shot file of exactly `file_size` bytes (atomically: a reader never sees half).

    `index` is the file's position in the dataset; it only decides whether the file is one
    of those that carry fewer signals.
    """
    capacity = _check(1, signals, file_size, page_size, paging, seed, libver=libver)
    plan = plan_shot(shot_id, index, signals, capacity, seed)
    params = _params(signals, file_size, page_size, paging, seed, libver=libver)
    with _atomic(Path(path)) as tmp:
        _write(tmp, [plan], paging, page_size, seed, params, libver=libver)
        size = tmp.stat().st_size
        if size > file_size:
            raise UserError(
                f"shot {shot_id} needs {size:,} bytes, more than --file-size {file_size:,}; "
                "use a larger --file-size or --page-size, or fewer --signals."
            )
        _finish(tmp, file_size, _stamp(shot_id))
    return Path(path)


def _stamp(shot_id: int) -> int:
    """The shot's date (from its number) as the one timestamp libhdf5 insists on writing."""
    day = dt.datetime.strptime(str(shot_id)[1:7], "%y%m%d").replace(tzinfo=dt.UTC)
    return int(day.timestamp())


@contextlib.contextmanager
def _atomic(path: Path) -> Iterator[Path]:
    """A hidden temporary name that becomes `path` only when the body succeeds."""
    tmp = path.with_name(f".{path.name}.partial")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def many_shot_name(shots: int, signals: int, layout: str) -> str:
    """File name of a many-shot file, after upstream's shot500_sig70[_reorder].hdf5."""
    return f"shot{shots}_sig{signals}_{layout}.h5"


def make_many_shot_file(
    path: Path,
    shots: int,
    signals: int = MAX_SIGNALS,
    file_size: int = 16_000_000,
    page_size: int = 8_000_000,
    paging: str = "paged",
    layout: str = "shot",
    seed: int = 0,
    libver: str = "v110",
) -> Path:
    """Write the shots of `make_dataset(shots, ...)` into one file, stored in `layout` order.

    Same shot ids, signals and data as the single-shot files of the same seed; only the
    packing differs. The file is as long as libhdf5 makes it (whole pages when paged).
    """
    capacity = _check(shots, signals, file_size, page_size, paging, seed, layout, libver)
    if layout == "single":
        raise UserError("a many-shot file is stored in 'shot' or 'signal' layout; use --layout shot or signal.")
    ids = make_shot_ids(shots, seed)
    plans = [plan_shot(shot_id, i, signals, capacity, seed) for i, shot_id in enumerate(ids)]
    params = _params(signals, file_size, page_size, paging, seed, shots, layout, libver)
    with _atomic(Path(path)) as tmp:
        _write(tmp, plans, paging, page_size, seed, params, layout, libver)
        _finish(tmp, 0, _stamp(ids[0]))
    return Path(path)


def _params(signals: int, file_size: int, page_size: int, paging: str, seed: int,
            shots: int = 1, layout: str = "single", libver: str = "v110") -> str:  # fmt: skip
    """Generator version and parameters, stored in the file so a rerun knows what to keep."""
    text = f"{GENERATOR} seed={seed} signals={signals} file_size={file_size} page_size={page_size} paging={paging}"
    text += "" if libver == "v110" else f" libver={libver}"  # v110 files made before --libver stay good
    return text if layout == "single" else f"{text} shots={shots} layout={layout}"


def is_good_file(path: Path, shot_id: int, expected_signals: list[str], file_size: int, params: str) -> bool:
    """A file from an earlier run that can be kept: same size, parameters, shot and signals."""
    try:
        if path.stat().st_size != file_size:
            return False
        with open(path, "rb") as fh:
            if not looks_like_hdf5(fh.read(8)):
                return False
        with h5py.File(path, "r") as f:
            if f.attrs.get("synth") != params.encode():
                return False
            return signal_names(f, str(shot_id)) == expected_signals
    except (OSError, ValueError, KeyError):
        return False


def _is_good_many(path: Path, params: str, shots: int) -> bool:
    """A many-shot file from an earlier run with the same parameters and every shot present."""
    try:
        with h5py.File(path, "r") as f:
            return f.attrs.get("synth") == params.encode() and len(f["shots"]) == shots
    except (OSError, ValueError, KeyError):
        return False


def make_dataset(
    out: Path,
    shots: int,
    signals: int = MAX_SIGNALS,
    file_size: int = 16_000_000,
    page_size: int = 8_000_000,
    paging: str = "paged",
    seed: int = 0,
    progress: bool = False,
    layout: str = "single",
    libver: str = "v110",
) -> list[Path]:
    """Write `shots` files `<shot_id>.h5` into `out` (layout "single"), or one many-shot file
    holding them all (layout "shot" or "signal"); keep good files already there.

    Free disk space is checked before anything is written.
    """
    capacity = _check(shots, signals, file_size, page_size, paging, seed, layout, libver)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} is a file; give --out a folder.")
    try:
        check_holds_files(out)  # /sys, /proc: before a mkdir there says "Operation not permitted"
        if out.is_dir():
            _sweep_partials(out)  # left by a run that was killed outright
        if layout != "single":
            path = out / many_shot_name(shots, signals, layout)
            if _is_good_many(path, _params(signals, file_size, page_size, paging, seed, shots, layout, libver), shots):
                return [path]
            need = estimate_bytes(shots, signals, file_size, page_size, layout)
            check_space(out, need)
            _say_estimate(need, progress)
            out.mkdir(parents=True, exist_ok=True)
            return [make_many_shot_file(path, shots, signals, file_size, page_size, paging, layout, seed, libver)]
        out.mkdir(parents=True, exist_ok=True)
        return _fill(out, shots, signals, file_size, page_size, paging, seed, capacity, progress, libver)
    except OSError as exc:
        if exc.errno not in _USER_ERRNOS:
            raise
        reason = exc.strerror or os.strerror(exc.errno)
        raise UserError(f"cannot write to {out} ({reason}); choose a writable --out folder.") from None


def _say_estimate(need: int, progress: bool) -> None:
    if progress:
        print(f"  writing about {need / 1e6:,.0f} MB, about {estimate_seconds(need):,.0f} s", file=sys.stderr)


def _fill(
    out: Path,
    shots: int,
    signals: int,
    file_size: int,
    page_size: int,
    paging: str,
    seed: int,
    capacity: int,
    progress: bool,
    libver: str = "v110",
) -> list[Path]:
    # an upper bound first: a million shots is refused at once, before any of them is planned
    have = sum(f.stat().st_size for f in out.glob("*.h5") if f.is_file())
    check_space(out, max(0, shots * file_size - have))
    ids = make_shot_ids(shots, seed)
    params = _params(signals, file_size, page_size, paging, seed, libver=libver)
    todo: list[tuple[int, int, Path]] = []
    paths: list[Path] = []
    for index, shot_id in enumerate(ids):
        path = out / f"{shot_id}.h5"
        names = [s.name for s in plan_shot(shot_id, index, signals, capacity, seed).signals]
        if not is_good_file(path, shot_id, names, file_size, params):
            todo.append((index, shot_id, path))
        paths.append(path)
    need = len(todo) * file_size
    check_space(out, need)
    _say_estimate(need, progress and need > 0)
    started = time.perf_counter()
    calls = [
        (path, shot_id, index, signals, file_size, page_size, paging, seed, libver) for index, shot_id, path in todo
    ]
    jobs = min(len(calls), os.cpu_count() or 1)
    try:
        with contextlib.ExitStack() as stack:
            run: Any = map  # each file is its own seed's bytes, so with more cores they are written side by side
            if jobs > 1:
                run = stack.enter_context(_pool(jobs))
            for done, _ in enumerate(run(_make_shot_file_of, calls), 1):
                if progress:
                    eta = (time.perf_counter() - started) / done * (len(todo) - done)
                    print(f"\r  {done}/{len(todo)} files, ETA {eta:.0f} s ", end="", file=sys.stderr)
    finally:
        _sweep_partials(out)  # a worker stopped mid-file leaves its hidden temporary name behind
        if progress and todo:
            print(file=sys.stderr)
    return paths


def _sweep_partials(out: Path) -> None:
    """Remove the hidden `.NAME.h5.partial` files of writes that never finished."""
    for tmp in out.glob(".*.h5.partial"):
        tmp.unlink(missing_ok=True)


def _ignore_interrupts() -> None:
    """Pool workers leave Ctrl-C to the parent, which stops them: a terminal sends SIGINT to the
    whole process group, and a worker dying of it mid-task wedges the pool's shutdown."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def _pool(jobs: int) -> Iterator[Callable[[Callable[[Any], Path], list[Any]], Iterator[Path]]]:
    """A process pool's `map` whose workers are ended, within seconds, when the parent is
    interrupted or fails. A plain `with ProcessPoolExecutor` waits for the pool to wind down, which
    can deadlock (multiprocessing's exit hook then waits forever), and a second Ctrl-C orphans the
    workers: they hold their own task queue open, so never see it close."""
    import concurrent.futures as cf
    import multiprocessing

    pool = cf.ProcessPoolExecutor(
        jobs, mp_context=multiprocessing.get_context("forkserver"), initializer=_ignore_interrupts
    )

    def run(fn: Callable[[Any], Path], calls: list[Any]) -> Iterator[Path]:
        # not pool.map: an interrupted map cancels its futures, and the pool, broken by the
        # workers ended below, then fails on them (InvalidStateError in its manager thread)
        futures = [pool.submit(fn, call) for call in calls]
        return (future.result() for future in futures)

    try:
        yield run
    except BaseException:
        workers = list((pool._processes or {}).values())
        manager: Any = pool._executor_manager_thread  # sees the workers gone, fails what is left, ends
        for worker in workers:
            worker.terminate()
        pool.shutdown(wait=False)
        for worker in workers:
            worker.join(timeout=5)
            if worker.is_alive():
                worker.kill()
        if manager is not None:
            manager.join(timeout=5)
        raise
    pool.shutdown()


# ---------------------------------------------------------------------------------------
# CLI
