"""What libhdf5 actually did with a file: settings read back after open, page-buffer statistics.

Runs inside a worker (h5py imported lazily). A row of workers.csv covers every file one task
opened for one object id, so `PartReadback` folds the files together: a setting that differs
between files is written as every distinct value joined by "|" (shown, never hidden), and the
page-buffer counters are summed before the hit rates are computed, as upstream did per task.
"""

from __future__ import annotations

from typing import Any

# Requested-value sentinels of the case matrix (pb-size / block-cache columns).
PB_DEFAULT = -1  # page buffer not set: whatever the library does (2.x ROS3: 64 MiB)
BC_DEFAULT = -1  # 2.2 block cache at the driver's defaults (16 MiB blocks, 128 MiB cache)
SIZE_MAX = 2**64 - 1  # 2.x's H5F_PAGE_BUFFER_SIZE_DEFAULT: left in a file's FAPL when it has no page buffer

SETTING_COLUMNS = [
    "pb-effective",
    "file-space-strategy",
    "file-page-size",
    "chunk-cache-effective",
    "block-cache-size",
    "block-size",
]
STATS_COLUMNS = [
    "pb-meta-accesses",
    "pb-meta-hitrate",
    "pb-meta-evicts",
    "pb-raw-accesses",
    "pb-raw-hitrate",
    "pb-raw-evicts",
]
COLUMNS = SETTING_COLUMNS + STATS_COLUMNS

STRATEGY_NAMES = {0: "fsm-aggr", 1: "page", 2: "aggr", 3: "none"}  # H5F_fspace_strategy_t


def read_settings(fh: Any, fapl: Any = None) -> dict[str, Any]:
    """Effective settings of an open h5py.File.

    Page buffer and chunk cache come from the file's own access property list, strategy and
    page size from its creation property list. The 2.2 block cache comes from `fapl` (the
    list the file was opened with): libhdf5 does not copy it into the file's access list.
    """
    fapl_file = fh.id.get_access_plist()
    pb = int(fapl_file.get_page_buffer_size()[0])
    fcpl = fh.id.get_create_plist()
    out: dict[str, Any] = {
        "pb-effective": 0 if pb == SIZE_MAX else pb,
        "file-space-strategy": STRATEGY_NAMES.get(int(fcpl.get_file_space_strategy()[0]), "unknown"),
        "file-page-size": int(fcpl.get_file_space_page_size()),
        "chunk-cache-effective": int(fapl_file.get_cache()[2]),
        "block-cache-size": "",
        "block-size": "",
    }
    if fapl is not None:
        from shotbench.hdf5 import blockcache

        if blockcache.available():
            block, cache, _lock = blockcache.get_block_caching(fapl.id)
            out["block-cache-size"], out["block-size"] = cache, block
    return out


def read_stats(fh: Any) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(meta, raw) counters (accesses, hits, misses, evictions, bypasses), None without a page buffer."""
    if int(fh.id.get_access_plist().get_page_buffer_size()[0]) in (0, SIZE_MAX):
        return None
    try:
        stats = fh.id.get_page_buffering_stats()
    except (OSError, RuntimeError, ValueError):  # libhdf5: "page buffering not enabled on file"
        return None
    return tuple(int(v) for v in stats.meta), tuple(int(v) for v in stats.raw)


def hit_rate(accesses: int, hits: int, bypasses: int) -> float | str:
    """Upstream's hit rate: hits ÷ (accesses − bypasses) × 100; empty when nothing went through it."""
    through = accesses - bypasses
    return hits / through * 100 if through > 0 else ""


class PartReadback:
    """Settings and page-buffer statistics of every file one CSV row read."""

    def __init__(self) -> None:
        self.settings: dict[str, list[Any]] = {c: [] for c in SETTING_COLUMNS}
        self.stats: list[list[int]] | None = None

    def add(self, settings: dict[str, Any], stats: tuple[tuple[int, ...], tuple[int, ...]] | None) -> None:
        for col, values in self.settings.items():
            value = settings.get(col, "")
            if value not in values:
                values.append(value)
        if stats is not None:
            if self.stats is None:
                self.stats = [[0] * 5, [0] * 5]
            for acc, part in zip(self.stats, stats):
                for i, v in enumerate(part):
                    acc[i] += v

    def columns(self) -> dict[str, Any]:
        """One value per column (distinct values joined by "|"); statistics empty without a page buffer."""
        out: dict[str, Any] = {
            c: "|".join(str(v) for v in vals) if len(vals) > 1 else (vals[0] if vals else "")
            for c, vals in self.settings.items()
        }
        pairs: list[Any] = list(self.stats) if self.stats else [None, None]
        for prefix, counters in zip(("pb-meta", "pb-raw"), pairs):
            if counters is None:
                out.update({f"{prefix}-accesses": "", f"{prefix}-hitrate": "", f"{prefix}-evicts": ""})
                continue
            accesses, hits, _misses, evictions, bypasses = counters
            out.update(
                {
                    f"{prefix}-accesses": accesses,
                    f"{prefix}-hitrate": hit_rate(accesses, hits, bypasses),
                    f"{prefix}-evicts": evictions,
                }
            )
        return out
