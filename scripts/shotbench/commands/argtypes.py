"""Argument types the commands share: a value out of range is refused when the arguments are
read, before any folder is walked, server asked or process started."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

from shotbench.errors import one_line


def whole_number(what: str, low: int, high: int) -> Callable[[str], int]:
    """An argparse `type` taking a whole number from `low` to `high`; anything else is one
    sentence naming the range (`what` says what the number counts, e.g. "concurrent uploads")."""

    def check(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"{one_line(text)[:40]!r} is not a number of {what}; give a whole number from {low} to {high}"
            )
        return value

    return check


def sha256_digest(text: str) -> str:
    """An argparse `type` taking a sha256 as 64 hex digits (any case), refused when the arguments
    are read: a typo was otherwise found only after a download, as bytes no download could match."""
    digest = text.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise argparse.ArgumentTypeError(
            f"{one_line(text)[:80]!r} is not a sha256; give its 64 hex digits, as `sha256sum FILE` prints them"
        )
    return digest
