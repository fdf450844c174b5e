"""Argument types the commands share: a value out of range is refused when the arguments are
read, before any folder is walked, server asked or process started."""

from __future__ import annotations

import argparse
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
