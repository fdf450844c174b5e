"""The one exception type for mistakes a user can make.

The CLI prints a `UserError` as one sentence and exits non-zero, without a traceback;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from collections.abc import Callable


class UserError(Exception):
    """A mistake the user can fix: the message is one sentence that names the fix."""

    exit_code = 2

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be, so cleanup runs the same way; the exit status
    tells the two apart (128 + signal number: 130 for SIGINT, 143 for SIGTERM)."""


INTERRUPT_EXIT = 130  # 128 + SIGINT
TERMINATE_EXIT = 143  # 128 + SIGTERM


def interrupt_exit(exc: BaseException) -> int:
    """The conventional exit status of a run stopped by a signal."""
    return TERMINATE_EXIT if isinstance(exc, Terminated) else INTERRUPT_EXIT


def one_line(text: object) -> str:
    """`text` on one line: control characters a user typed (a stray carriage return in an
    argument, a tab in a config value) are shown escaped, so a refusal stays one sentence."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in str(text))


def refuse_repeats(values: list[str], flag: str, same: Callable[[str], object] = lambda v: v) -> None:
    """One sentence for a value given twice where each must differ (`repeat --runs R R` compared a
    run with itself and ended in a pandas traceback); `same` says when two spellings are one value
    (a path with and without its trailing slash)."""
    seen: dict[object, str] = {}
    for value in values:
        key = same(value)
        if key in seen:
            shown = value if value == seen[key] else f"{seen[key]} and {value}"
            raise UserError(f"{flag} names {one_line(shown)} twice; give each only once.")
        seen[key] = value
