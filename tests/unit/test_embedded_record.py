"""The embedded server's record (`store/embedded.py`'s server.json): one it did not write is stale."""

from __future__ import annotations

from pathlib import Path

import pytest

from shotbench.store import embedded


@pytest.mark.parametrize("text", ['{"x": 1}', "[1, 2]", '{"pid": 1}', "not json"])
def test_a_record_start_did_not_write_is_no_server(text: str, tmp_path: Path) -> None:
    """A hand-edited server.json gave `server status` and `server stop` a KeyError traceback."""
    (tmp_path / "server.json").write_text(text)
    assert embedded.status(tmp_path) is None
    assert embedded.stop(tmp_path) is False and not (tmp_path / "server.json").exists()
