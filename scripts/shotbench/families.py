"""File families of a `layouts` run: the file shapes where the drivers differ, side by side.

A family is one set of synthetic files made by `shotbench synth` (size, page size, paging,
single-shot or many-shot layout) and staged under its own folder, so one run measures every
family with every backend and each row says which family it read (`file-family`, `layout`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from shotbench.errors import UserError

MB = 1_000_000


@dataclass(frozen=True)
class Family:
    """One set of files: `shots` files (single) or one file of `shots` shots (shot/signal)."""

    name: str
    layout: str  # single | shot | signal (synth --layout)
    file_size: int
    page_size: int
    paging: str  # paged | unpaged
    shots: int
    signals: int = 61

    @property
    def many_shot(self) -> bool:
        return self.layout != "single"

    def accepts_page_buffer(self, size: int) -> bool:
        """libhdf5 refuses a page buffer on unpaged files, and one smaller than a page."""
        return size == 0 or (self.paging == "paged" and size >= self.page_size)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def family(name: str, shots_single: int, shots_many: int, big: int) -> Family:
    """The named families of the `layouts` profiles, sized by the profile."""
    known = {
        "single-16MB": Family("single-16MB", "single", 16 * MB, 8 * MB, "paged", shots_single),
        "single-big-paged": Family("single-big-paged", "single", big, 8 * MB, "paged", max(2, shots_single // 4)),
        "single-big-unpaged": Family("single-big-unpaged", "single", big, 8 * MB, "unpaged", max(2, shots_single // 4)),
        "many-shot-layout": Family("many-shot-layout", "shot", 16 * MB, 8 * MB, "paged", shots_many),
        "many-signal-layout": Family("many-signal-layout", "signal", 16 * MB, 8 * MB, "paged", shots_many),
    }  # fmt: skip
    if name not in known:
        raise UserError(f"unknown file family {name!r}; families are {', '.join(known)}.")
    return known[name]


NAMES = ("single-16MB", "single-big-paged", "single-big-unpaged", "many-shot-layout", "many-signal-layout")


def resolve(names: list[str], shots_single: int, shots_many: int, big: int) -> dict[str, Family]:
    """The families a config names, in order."""
    return {n: family(n, shots_single, shots_many, big) for n in names}
