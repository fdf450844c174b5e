"""The flags of the child processes shotbench starts itself (`python -m shotbench.<module> --flag value`).

They are an internal protocol between two parts of shotbench, not a user interface: a dataclass
names the flags, its field types convert the values (a `bool` field is a flag without a value),
and a flag that is unknown, repeated without a value or missing is a bug in the caller, so the
child stops at once with one line naming it (exit 2). User-facing arguments live in `commands/`.
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


class ChildArgsError(ValueError):
    """The parent started this child with flags it does not take."""


def _convert(kind: Any, raw: str) -> Any:
    """`raw` as the field's type; `X | None` converts as X."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        kind = next(k for k in typing.get_args(kind) if k is not type(None))
    if kind in (int, float, str, Path):
        return kind(raw)
    raise ChildArgsError(f"a flag of type {kind!r} is not supported")


def parse(spec: type[T], argv: Sequence[str]) -> T:
    """`--some-name value` pairs (and bare `--flag` for bool fields) as an instance of dataclass `spec`."""
    hints = typing.get_type_hints(spec)
    names = {f.name for f in dataclasses.fields(spec)}  # type: ignore[arg-type]
    values: dict[str, Any] = {}
    tokens = iter(argv)
    for token in tokens:
        name = token[2:].replace("-", "_") if token.startswith("--") else ""
        if name not in names:
            raise ChildArgsError(f"unexpected argument {token!r}")
        if hints[name] is bool:
            values[name] = True
            continue
        raw = next(tokens, None)
        if raw is None:
            raise ChildArgsError(f"{token} needs a value")
        try:
            values[name] = _convert(hints[name], raw)
        except ValueError as exc:
            raise ChildArgsError(f"{token} {raw!r}: {exc}") from exc
    try:
        return spec(**values)
    except TypeError as exc:  # a required field without its flag
        raise ChildArgsError(str(exc)) from exc


def parse_or_exit(spec: type[T], argv: Sequence[str] | None, prog: str) -> T:
    """`parse` for a child's `main`: a wrong flag ends the child with one line and exit 2."""
    try:
        return parse(spec, sys.argv[1:] if argv is None else argv)
    except ChildArgsError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc
