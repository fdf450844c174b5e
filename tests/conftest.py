"""Shared fixtures: one real versitygw process per test session, and small shot files in it.

Every fixture here talks to real processes and real files: a private embedded S3 server
(its own state directory, port and credentials), synthetic HDF5 shot files from
`shotbench.hdf5.synthesis`, and those files uploaded through the S3 API with `shotbench.store.staging`.
"""

from __future__ import annotations

import importlib.util
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shotbench.store.s3 import Location, S3Config, ShotObject

# No test asks the real EC2 metadata address (169.254.169.254 is not on this machine): botocore's
# credential chain and the instance-type probe skip it. The instance-role emulator's variables
# turn it back on, pointed at the emulator.
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")

SERVER_FIXTURES = {"s3_server", "s3_bucket", "staged_shots", "resetting_server"}
NOTEBOOK_FIXTURES = {"reference_report"}
TIERS = ("unit", "integration", "e2e")
HEAVY = ("slow", "server", "notebook", "browser")
OPTIONAL_ENVS = ("hdf5-2.2", "hdf5-2.0-zlibng")
OPTIONAL_BUILDS = ", ".join(OPTIONAL_ENVS)
# a test parametrised over one of these (a build, or its ROS3 backend) needs an optional build, whatever the test is
OPTIONAL_NAMES = {*OPTIONAL_ENVS, *(n.replace("hdf5-", "ros3-", 1) for n in OPTIONAL_ENVS)}
_NOT_RUN = pytest.StashKey[list[str]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--without-optional-builds",
        action="store_true",
        help=f"do not run tests marked optional_build ({OPTIONAL_BUILDS}); list them in the summary instead",
    )


def pytest_configure(config: pytest.Config) -> None:
    """SHOTBENCH_TEST_CPU=FILE: each test's CPU-seconds go to FILE (support/testcpu.py)."""
    if os.environ.get("SHOTBENCH_TEST_CPU"):
        from support import testcpu

        config.pluginmanager.register(testcpu, "shotbench-test-cpu")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tier by folder and by what a test really starts.

    - The folder a test lives in (tests/unit, tests/integration, tests/e2e) is its marker, so a new
      file falls into its tier by where it is put. A test in tests/unit that is `slow`, `server`,
      `notebook` or `browser` is an error: it belongs in integration or e2e.
    - Any test using a server fixture is a `server` test and any using a rendered report a
      `notebook` test, so `make test-fast` (which deselects them) builds and starts nothing. It runs
      against an empty, offline build cache, so a test that starts a server without saying so fails.
    - A test parametrised over an optional build's name is `optional_build`, as is one marked so.
      With --without-optional-builds (`make test`) those are not run and are listed at the end,
      never passed silently.
    """
    root = Path(__file__).parent
    misplaced = []
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if SERVER_FIXTURES & names:
            item.add_marker(pytest.mark.server)
        if NOTEBOOK_FIXTURES & names:
            item.add_marker(pytest.mark.notebook)
        params = getattr(getattr(item, "callspec", None), "params", {})
        if any(isinstance(v, str) and v in OPTIONAL_NAMES for v in params.values()):
            item.add_marker(pytest.mark.optional_build)
        parts = item.path.relative_to(root).parts if item.path.is_relative_to(root) else ()
        tier = parts[0] if parts and parts[0] in TIERS else None
        if tier:
            item.add_marker(getattr(pytest.mark, tier))
        if tier == "unit" and any(item.get_closest_marker(m) for m in HEAVY):
            misplaced.append(item.nodeid)
    if misplaced:
        raise pytest.UsageError(
            "tests in tests/unit that start a server, a build, a notebook or a browser (move them to "
            "tests/integration or tests/e2e):\n  " + "\n  ".join(misplaced)
        )
    if config.getoption("--without-optional-builds"):
        skipped = [item for item in items if item.get_closest_marker("optional_build")]
        if skipped:
            config.hook.pytest_deselected(items=skipped)
            items[:] = [item for item in items if not item.get_closest_marker("optional_build")]
        config.stash[_NOT_RUN] = [item.nodeid for item in skipped]
        if hasattr(config, "workeroutput"):  # an xdist worker: the controller prints the summary
            config.workeroutput["optional_build_not_run"] = config.stash[_NOT_RUN]


if importlib.util.find_spec("xdist") is not None:

    def pytest_testnodedown(node: Any, error: object) -> None:
        """xdist's controller collects nothing itself: it gathers what its workers left out."""
        config = node.config
        seen = config.stash.get(_NOT_RUN, [])
        more = getattr(node, "workeroutput", {}).get("optional_build_not_run", [])
        config.stash[_NOT_RUN] = sorted(set(seen) | set(more))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    not_run = config.stash.get(_NOT_RUN, [])
    if not_run:
        terminalreporter.section("not run: optional builds")
        for nodeid in not_run:
            terminalreporter.write_line(nodeid)
        terminalreporter.write_line(
            f"{len(not_run)} tests need optional builds ({OPTIONAL_BUILDS}), not run: run `make test-all`", yellow=True
        )


_OPTIONAL_ENVS = pytest.StashKey[list[Path]]()


@pytest.fixture(autouse=True)
def _builds_no_optional_build(request: pytest.FixtureRequest) -> Iterator[None]:
    """Under --without-optional-builds, a test that makes an optional build's environment (a run
    that selects 2.2 builds it on first use) fails: it needs the optional_build mark, so that
    `make test` lists it instead of paying minutes for a build that only `make test-all` makes."""
    config = request.config
    if not config.getoption("--without-optional-builds"):
        yield
        return
    if _OPTIONAL_ENVS not in config.stash:  # fixed at the first test: a test may point SHOTBENCH_ROOT elsewhere
        from shotbench.builds.environments import env_dir

        config.stash[_OPTIONAL_ENVS] = [env_dir(n) / "bin" / "python" for n in OPTIONAL_ENVS]
    absent = [p for p in config.stash[_OPTIONAL_ENVS] if not p.exists()]
    yield
    made = [p.parent.parent.name for p in absent if p.exists()]
    if made:
        pytest.fail(
            f"this test built {', '.join(made)}, which `make test` does not build: mark it "
            "@pytest.mark.optional_build (or parametrise it over the build's name)",
            pytrace=False,
        )


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
