"""Shared fixtures: one real versitygw process per test session, and small shot files in it.

Every fixture here talks to real processes and real files: a private embedded S3 server
(its own state directory, port and credentials), synthetic HDF5 shot files from
`shotbench.hdf5.synthesis`, and those files uploaded through the S3 API with `shotbench.store.staging`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from shotbench.store.s3 import Location, S3Config, ShotObject

SERVER_FIXTURES = {"s3_server", "s3_bucket", "staged_shots", "resetting_server"}
NOTEBOOK_FIXTURES = {"reference_report"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tier by what a test really starts: any test using a server fixture is a `server` test and
    any using a rendered report a `notebook` test, so `make test-fast` (which deselects them)
    builds and starts nothing. `make test-fast` runs against an empty, offline build cache, so a
    test that starts a server without saying so fails there instead of building one."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if SERVER_FIXTURES & names:
            item.add_marker(pytest.mark.server)
        if NOTEBOOK_FIXTURES & names:
            item.add_marker(pytest.mark.notebook)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerInfo]:  # noqa: F821 - ServerInfo is imported inside the fixture so collecting tests never loads the server code
    """A private versitygw for the whole test session; stopped when the session ends."""
    from shotbench.store.embedded import embedded_server

    state = tmp_path_factory.mktemp("s3-state")
    with embedded_server(state) as info:
        yield info


@pytest.fixture(scope="session")
def s3_bucket(s3_server) -> str:
    """A bucket that exists and is empty when the session starts (name unique per session)."""
    name = f"sb-test-{uuid.uuid4().hex[:10]}"
    s3_server.s3config().boto3_client().create_bucket(Bucket=name)
    return name


@pytest.fixture(scope="session")
def shot_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four small synthetic shot files (2 MB, 1 MB pages) so that tests stay fast."""
    from shotbench.hdf5.synthesis import make_dataset

    out = tmp_path_factory.mktemp("shots")
    make_dataset(out, shots=4, signals=12, file_size=2_000_000, page_size=1_000_000, seed=0)
    return out


@pytest.fixture(scope="session")
def staged_shots(s3_server, s3_bucket: str, shot_dir: Path) -> tuple[Location, S3Config, list[ShotObject]]:
    """`shot_dir` uploaded through the S3 API to s3://<s3_bucket>/shots/."""
    from shotbench.store.s3 import list_shot_files, parse_location
    from shotbench.store.staging import stage

    cfg = s3_server.s3config()
    loc = parse_location(f"s3://{s3_bucket}/shots/")
    stage(shot_dir, loc, cfg, jobs=4, progress=False)
    return loc, cfg, list_shot_files(loc, cfg)


@pytest.fixture
def h5_dir(tmp_path: Path) -> Path:
    """Three tiny real HDF5 files (h5py), for tests that need valid files but not shot layout."""
    import h5py
    import numpy as np

    folder = tmp_path / "h5"
    folder.mkdir()
    for i in range(3):
        with h5py.File(folder / f"shot-{i}.h5", "w") as f:
            f["signal"] = np.arange(1000 * (i + 1), dtype="f8")
    return folder
