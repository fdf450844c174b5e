"""A reader that cannot read some file shape says so in the error cell, in one recognisable form.

Alternative readers implement part of the HDF5 format (pyfive: no version-4 chunk layouts;
h5coro: superblocks 0 and 2 only, no object references). Their failures on such files are
findings, not crashes: the worker writes `unsupported: <reader>: <what>` for the file and
goes on with the next one.
"""

from __future__ import annotations

import re

PREFIX = "unsupported: "

# How the readers word "this part of the format is not implemented".
_NOT_IMPLEMENTED = re.compile(r"unsupported|not (yet )?supported|cannot yet|not implemented", re.IGNORECASE)


class Unsupported(Exception):
    """This reader cannot read this shape of file (message: which reader, which feature)."""

    def cell(self, key: str) -> str:
        return f"{PREFIX}{self} ({key})"


def translate(reader: str, exc: BaseException) -> BaseException:
    """`exc` as an Unsupported when the library's message says a format feature is missing."""
    if isinstance(exc, Unsupported):
        return exc
    text = " ".join(str(exc).split())
    if isinstance(exc, NotImplementedError) or _NOT_IMPLEMENTED.search(text):
        return Unsupported(f"{reader}: {text}")
    return exc


def error_cell(key: str, exc: BaseException) -> str:
    """The error text of a row: `unsupported: …` for a missing feature, else the exception."""
    if isinstance(exc, Unsupported):
        return exc.cell(key)
    return f"{key}: {type(exc).__name__}: {exc}"
