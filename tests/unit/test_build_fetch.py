"""A source archive's server that takes the connection and sends nothing (`builds/build.py` `fetch`):
one sentence after one wait, not three waits of a minute each."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from shotbench.builds import build
from shotbench.builds.specs import Source
from shotbench.errors import UserError
from support.proxies import silent_port


def test_a_silent_source_server_is_named_after_one_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOTBENCH_CACHE", str(tmp_path))
    monkeypatch.setattr(build, "DOWNLOAD_TIMEOUT", 0.5)
    with silent_port() as port:
        url = f"http://127.0.0.1:{port}/hdf5-1.14.6.tar.gz"
        t0 = time.monotonic()
        with pytest.raises(UserError, match=r"sent nothing for 0.5 s; check the URL"):
            build.fetch(Source(url, None, "hdf5-1.14.6.tar.gz"))
    assert time.monotonic() - t0 < 2  # was 3 tries, each waiting the whole timeout
    assert list((tmp_path / "sources").iterdir()) == []  # no partial archive left to be taken for the source
