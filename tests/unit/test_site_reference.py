"""The generated reference pages say what the code says: every config key with its meaning."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from shotbench.plan import profiles
from shotbench.reports import sitedocs


def test_every_config_key_is_documented_with_its_default_and_meaning() -> None:
    keys = sitedocs.config_keys()
    assert [k.name for k in keys] == [f.name for f in dataclasses.fields(profiles.BenchConfig)]
    assert [k.name for k in keys if not k.meaning] == []
    page = sitedocs.config_reference()
    for key in keys:
        assert f"| `{key.name}` |" in page
    for name in profiles.BENCH_PROFILES:
        assert f"| `{name}` |" in page


def test_the_page_is_rewritten_only_when_its_text_changes(tmp_path: Path) -> None:
    (path,) = sitedocs.write_generated(tmp_path)
    assert path.read_text(encoding="utf-8") == sitedocs.config_reference()
    stamp = path.stat().st_mtime_ns
    sitedocs.write_generated(tmp_path)
    assert path.stat().st_mtime_ns == stamp
    path.write_text("stale", encoding="utf-8")
    sitedocs.write_generated(tmp_path)
    assert path.read_text(encoding="utf-8") == sitedocs.config_reference()
