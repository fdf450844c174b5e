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
    page_buffers: tuple[int, ...] = ()  # this family's own page-buffer sizes; () = the run's
    libver: str = "v110"  # synth --libver: v110 (superblock 3, v4 layouts) or earliest (superblock 0, v3 layouts)

    @property
    def many_shot(self) -> bool:
        return self.layout != "single"

    def accepts_page_buffer(self, size: int) -> bool:
        """libhdf5 refuses a page buffer on unpaged files, and one smaller than a page."""
        return size == 0 or (self.paging == "paged" and size >= self.page_size)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Sizes:
    """What a profile scales: file counts, the big file size, and the many-shot files' shape.

    Many-shot files hold `many_shots` shots of `many_file_size` bytes of payload budget each,
    in `many_page_size` pages, read with `many_page_buffers` (() = the run's page buffers).
    """

    single_shots: int = 8
    big: int = 256 * MB
    many_shots: int = 32
    many_file_size: int = 16 * MB
    many_page_size: int = 8 * MB
    many_page_buffers: tuple[int, ...] = ()


def family(name: str, z: Sizes) -> Family:
    """The named families of the `layouts` profiles, sized by the profile."""
    shots_single, shots_many, big = z.single_shots, z.many_shots, z.big
    n_big = max(2, min(16, shots_single // 4))  # a quarter of the files, 2 to 16: they are large
    many = (z.many_file_size, z.many_page_size, "paged", shots_many, 61, tuple(z.many_page_buffers))
    known = {
        "single-16MB": Family("single-16MB", "single", 16 * MB, 8 * MB, "paged", shots_single),
        # single-16MB's signals and sizes in the oldest format, unpaged: the shape every reader reads
        "compat": Family("compat", "single", 16 * MB, 8 * MB, "unpaged", shots_single, libver="earliest"),
        "single-big-paged": Family("single-big-paged", "single", big, 8 * MB, "paged", n_big),
        "single-big-unpaged": Family("single-big-unpaged", "single", big, 8 * MB, "unpaged", n_big),
        "many-shot-layout": Family("many-shot-layout", "shot", *many),
        "many-signal-layout": Family("many-signal-layout", "signal", *many),
    }  # fmt: skip
    if name not in known:
        raise UserError(f"unknown file family {name!r}; families are {', '.join(known)}.")
    return known[name]


NAMES = ("single-16MB", "single-big-paged", "single-big-unpaged", "many-shot-layout", "many-signal-layout")
COMPAT = "compat"  # the family of the `readers` profile that every alternative reader reads
DEFAULT = "single-16MB"  # the default workload's shape (what `shotbench bench` makes without families)


def resolve(names: list[str], sizes: Sizes) -> dict[str, Family]:
    """The families a config names, in order."""
    return {n: family(n, sizes) for n in names}
