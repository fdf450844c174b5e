"""Reference pages written from the code itself, so the documentation cannot drift from it.

`config_reference` reads `BenchConfig` (every key a TOML config or `--config` may set) with the
comment each field carries in the source, and the named profiles with what each one changes.
The Sphinx build calls `write_generated` before it reads the pages; a test compares the text
with the dataclass, so a new key without a line here fails.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path
from typing import Any

from shotbench.plan import profiles

GENERATED = "reference/config.md"


@dataclasses.dataclass(frozen=True)
class ConfigKey:
    """One key of a bench config: its type as written, its default, and what it means."""

    name: str
    type: str
    default: str
    meaning: str


def _comments(cls: type) -> dict[str, str]:
    """Each field's comment: the one on its line, else the comment lines right above it."""
    source, first = inspect.getsourcelines(cls)
    text = "".join(source)
    lines = text.splitlines()
    out: dict[str, str] = {}
    previous: tuple[int, str] = (-1, "")  # (last line, note) of the field before
    for node in ast.parse(text).body[0].body:  # type: ignore[attr-defined]
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        line = lines[node.lineno - 1]
        note = line.split("  # ", 1)[1].strip() if "  # " in line else ""
        if not note:
            above: list[str] = []
            i = node.lineno - 2
            while i >= 0 and lines[i].strip().startswith("#"):
                above.insert(0, lines[i].strip().lstrip("#").strip())
                i -= 1
            note = " ".join(above)
        if not note and previous[0] == node.lineno - 1:  # a field right below another: one comment covers both
            note = previous[1]
        out[node.target.id] = note
        previous = (node.end_lineno or node.lineno, note)
    return out


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def config_keys() -> list[ConfigKey]:
    """Every key of BenchConfig, in declaration order."""
    notes = _comments(profiles.BenchConfig)
    keys = []
    for f in dataclasses.fields(profiles.BenchConfig):
        kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        keys.append(ConfigKey(f.name, str(kind), repr(_default(f)), notes.get(f.name, "")))
    return keys


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def config_reference() -> str:
    """The Markdown page of config keys and named profiles."""
    rows = "\n".join(
        f"| `{k.name}` | `{_cell(k.type)}` | `{_cell(k.default)}` | {_cell(k.meaning)} |" for k in config_keys()
    )
    named = "\n".join(
        f"| `{name}` | " + ", ".join(f"`{key} = {_cell(repr(value))}`" for key, value in values.items()) + " |"
        for name, values in profiles.BENCH_PROFILES.items()
    )
    return f"""# Config keys

*Generated from `BenchConfig` (`scripts/shotbench/plan/profiles.py`) each time the site is built.*

A TOML file given with `--config` (or `make bench-ros3 CONFIG=file.toml`) may set any key below at
top level, start from a named profile with `profile = "full"`, and give a backend's options in
`[options.<backend>]`. Command-line flags override the file; the file overrides the profile.

```toml
profile = "quick"
backends = ["ros3-2.0", "fsspec", "raw-get"]
workers = [1, 2, 4]
trials = 3
[options.fsspec]
block_size = 5242880
```

| key | type | default | meaning |
|---|---|---|---|
{rows}

## Named profiles

`--profile NAME` (`make bench-ros3 PROFILE=NAME`) starts from the defaults above and changes these keys:

| profile | what it sets |
|---|---|
{named}
"""


def write_generated(docs: Path) -> list[Path]:
    """Write the generated pages under `docs`; only files whose text changed are touched, so
    Sphinx rebuilds nothing it need not."""
    written = []
    for rel, text in ((GENERATED, config_reference()),):
        path = docs / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
