"""The libhdf5/h5py builds: pinned inputs, cache keys, failures that say what to do, and the
real environments that `make envs` leaves behind."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import http.server
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shotbench.builds import build, specs
from shotbench.builds import environments as envs
from shotbench.errors import UserError
from support.incli import run_cli

REPO = Path(__file__).resolve().parents[2]
SHOTBENCH = [sys.executable, "-m", "shotbench.cli"]


def _run(*args: str, env: dict | None = None, timeout: float = 3600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*SHOTBENCH, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        timeout=timeout,
        check=False,
    )


# ------------------------------------------------------------------ fast


def test_every_source_is_pinned_to_a_sha256() -> None:
    for spec in specs.BUILDS.values():
        for src in (spec.hdf5, spec.h5py):
            assert src.sha256 and len(src.sha256) == 64, src
    assert specs.AWS_CRT.sha256 and len(specs.AWS_CRT.sha256) == 64
    assert specs.ZLIB_NG.sha256 and len(specs.ZLIB_NG.sha256) == 64


def test_builds_are_the_three_generations() -> None:
    got = {n: (s.hdf5_version, s.h5py_version, s.ros3_backend) for n, s in specs.BUILDS.items()}
    assert got == {
        "hdf5-1.14": ("1.14.6", "3.15.1", "curl"),
        "hdf5-2.0": ("2.0.0", "3.16.0", "aws"),
        "hdf5-2.0-zlibng": ("2.0.0", "3.16.0", "aws"),
        "hdf5-2.2": ("2.2.0", "3.16.0", "aws"),
    }
    assert [n for n, s in specs.BUILDS.items() if s.zlib_ng] == ["hdf5-2.0-zlibng"]


def test_the_zlib_ng_build_has_its_own_key_and_the_others_keep_theirs() -> None:
    """zlib-ng enters the key of the build that uses it only: adding it rebuilt nothing else."""
    plain, zng = specs.BUILDS["hdf5-2.0"], specs.BUILDS["hdf5-2.0-zlibng"]
    assert "zlib_ng" not in plain.fingerprint() and zng.fingerprint()["zlib_ng"] == specs.ZLIB_NG.sha256
    assert build.build_key(dataclasses.replace(zng, name="hdf5-2.0")) != build.build_key(plain)


def test_cache_key_follows_every_input() -> None:
    spec = specs.BUILDS["hdf5-2.0"]
    key = build.build_key(spec)
    assert build.build_key(spec) == key
    flags = dataclasses.replace(spec, cmake_options=spec.cmake_options + ("-DHDF5_ENABLE_THREADSAFE=ON",))
    assert build.build_key(flags) != key
    source = dataclasses.replace(spec, hdf5=dataclasses.replace(spec.hdf5, sha256="0" * 64))
    assert build.build_key(source) != key


def test_requirements_leave_h5py_to_the_built_wheel() -> None:
    reqs = envs.requirements()
    assert "dask" in reqs and "numpy" in reqs
    assert not any(envs._is_h5py(line) for line in reqs.splitlines())
    assert envs._is_h5py("h5py==3.14.0 ; python_version >= '3.11'")
    assert not envs._is_h5py("h5pyd==0.1")


def test_custom_source_must_exist_and_not_shadow_a_builtin(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        specs.custom_spec("mine", str(tmp_path / "nope.tar.gz"))
    with pytest.raises(UserError, match="built-in"):
        specs.custom_spec("hdf5-2.0", str(tmp_path))
    with pytest.raises(UserError, match="folder name"):
        specs.custom_spec("../evil", str(tmp_path))


def test_custom_version_picks_options_and_h5py(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "H5public.h").write_text(
        "#define H5_VERS_MAJOR 1\n#define H5_VERS_MINOR 14\n#define H5_VERS_RELEASE 6\n"
    )
    version = specs.read_source_version(tmp_path)
    assert version == "1.14.6"
    spec = specs.specialise(specs.custom_spec("hdf5-1.14.6", str(tmp_path)), version)
    assert spec.ros3_backend == "curl" and "-DONLY_SHARED_LIBS=ON" in spec.cmake_options
    assert spec.h5py_version == "3.15.1"


def test_env_python_names_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOTBENCH_ENVS", str(tmp_path))
    with pytest.raises(UserError, match="make envs"):
        envs.env_python("hdf5-2.2")
    with pytest.raises(UserError, match="unknown build"):
        envs.env_python("hdf5-9.9")


@contextlib.contextmanager
def _served(folder: Path) -> Iterator[str]:
    """`folder` over http on 127.0.0.1 for the block: its base URL."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()


def test_download_is_checked_against_the_pin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A registry that serves other bytes than the pinned ones stops the build."""
    monkeypatch.setenv("SHOTBENCH_CACHE", str(tmp_path / "cache"))
    served = tmp_path / "www"
    served.mkdir()
    (served / "x.tar.gz").write_bytes(b"not what was pinned")
    with _served(served) as base:
        url = f"{base}/x.tar.gz"
        with pytest.raises(UserError, match="instead of the pinned"):
            build.fetch(specs.Source(url=url, sha256="0" * 64, filename="x.tar.gz"))
        good = specs.file_sha256(served / "x.tar.gz")
        path = build.fetch(specs.Source(url=url, sha256=good, filename="x.tar.gz"))
        assert path.read_bytes() == b"not what was pinned"


def _tarball(path: Path, files: dict[str, str]) -> None:
    """A .tar.gz holding `files` (name -> text) under one top folder, as release tarballs do."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"hdf5-9.9.9/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _custom_build(name: str, url: str) -> tuple[int, str]:
    code, err = run_cli(["envs", "build", "--name", name, "--source", url])
    assert "Traceback" not in err, err
    return code, err.strip().splitlines()[-1]


def test_a_failed_custom_build_takes_back_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A source that is not HDF5 left builds/<name>-<key>/work/src (the unpacked archive) in the
    cache, and the sentence named that folder rather than the source given."""
    monkeypatch.setenv("SHOTBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SHOTBENCH_ENVS", str(tmp_path / "envs"))
    _tarball(tmp_path / "www" / "hdf5-9.9.9.tar.gz", {"README": "not HDF5"})
    with _served(tmp_path / "www") as base:
        url = f"{base}/hdf5-9.9.9.tar.gz"
        for _ in range(2):  # the second try starts as clean as the first
            code, said = _custom_build("mine", url)
            assert code == 2 and said == (
                f"shotbench: no HDF5 source tree (CMakeLists.txt + src/H5public.h) in {url}; point --source at "
                "an HDF5 release."
            ), said
            assert [p.name for p in (tmp_path / "cache" / "builds").glob("mine-*") if p.is_dir()] == []


def test_a_source_without_a_sha256_is_never_another_urls_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two URLs ending in the same file name: the second build reused the first's archive (cached
    by file name alone), so it built, or here refused, what the other URL served."""
    monkeypatch.setenv("SHOTBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SHOTBENCH_ENVS", str(tmp_path / "envs"))
    _tarball(tmp_path / "www" / "a" / "hdf5-9.9.9.tar.gz", {"README": "not HDF5"})
    _tarball(tmp_path / "www" / "b" / "hdf5-9.9.9.tar.gz", {"CMakeLists.txt": "", "src/H5public.h": "no version"})
    with _served(tmp_path / "www") as base:
        assert _custom_build("from-a", f"{base}/a/hdf5-9.9.9.tar.gz")[1].startswith("shotbench: no HDF5 source tree")
        code, said = _custom_build("from-b", f"{base}/b/hdf5-9.9.9.tar.gz")
    assert code == 2 and said == (
        f"shotbench: cannot read the HDF5 version from {base}/b/hdf5-9.9.9.tar.gz's src/H5public.h; is this an "
        "HDF5 source tree?"
    ), said


def test_a_local_tarball_is_checked_against_the_sha256_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A --sha256 given with a local tarball was taken as its cache key and never compared."""
    monkeypatch.setenv("SHOTBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SHOTBENCH_ENVS", str(tmp_path / "envs"))
    tarball = tmp_path / "hdf5-9.9.9.tar.gz"
    _tarball(tarball, {"README": "not HDF5"})
    code, err = run_cli(["envs", "build", "--name", "mine", "--source", str(tarball), "--sha256", "0" * 64])
    said = err.strip().splitlines()[-1]
    assert code == 2 and said.startswith(f"shotbench: {tarball} has sha256 ") and "not the 000000000000… given" in said


# ------------------------------------------------------------------ slow: real compiler


@pytest.mark.slow
def test_failed_build_names_step_log_and_fix(tmp_path: Path) -> None:
    tree = tmp_path / "hdf5-broken"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "H5public.h").write_text(
        "#define H5_VERS_MAJOR 1\n#define H5_VERS_MINOR 14\n#define H5_VERS_RELEASE 9\n"
    )
    (tree / "CMakeLists.txt").write_text(
        'cmake_minimum_required(VERSION 3.20)\nproject(broken C)\nmessage(FATAL_ERROR "Could NOT find CURL")\n'
    )
    env = {"SHOTBENCH_CACHE": str(tmp_path / "cache"), "SHOTBENCH_ENVS": str(tmp_path / "envs")}
    proc = _run("envs", "build", "--name", "hdf5-broken", "--source", str(tree), env=env, timeout=600)
    assert proc.returncode == 2, proc.stderr
    message = proc.stderr.strip().splitlines()[-1]
    assert "step 'configure libhdf5' failed" in message
    assert "Could NOT find CURL" in message
    assert "apt-ensure.sh" in message
    log = Path(message.split("see ", 1)[1].split(",", 1)[0])
    assert log.is_file() and "FATAL_ERROR" not in message
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
@pytest.mark.optional_build
def test_envs_list_shows_each_build_with_ros3_and_its_h5py() -> None:
    proc = _run("envs", "--json", timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = {row["name"]: row for row in json.loads(proc.stdout)}
    want = {
        "hdf5-1.14": ("1.14.6", "3.15.1"),
        "hdf5-2.0": ("2.0.0", "3.16.0"),
        "hdf5-2.2": ("2.2.0", "3.16.0"),
        "h5py-s3": ("2.1.1", "3.16.0"),
    }
    for name, (hdf5, h5py) in want.items():
        row = rows[name]
        assert row["state"] == "ready", row
        assert (row["hdf5_version"], row["h5py_version"], row["ros3"]) == (hdf5, h5py, True)
        assert row["cached"] is True
        home = row["build_dir"] or row["path"]  # a wheel vendors its libhdf5 inside the environment
        assert row["libhdf5"].startswith(home), "h5py loads a libhdf5 from outside its build"


def test_wheel_is_pinned_and_installed_binary_only() -> None:
    """The no-compile backend: one exact version, every index file's sha256, and a line uv
    checks (a requirement with hashes is verified; `--only-binary` refuses a source build)."""
    from shotbench.builds.wheels import WHEELS

    spec = WHEELS["h5py-s3"]
    assert (spec.version, spec.hdf5_version) == ("3.16.0", "2.1.1")
    assert spec.sha256 and all(len(h) == 64 for h in spec.sha256)
    line = spec.requirement()
    assert line.startswith("h5py-s3==3.16.0 ") and line.count("--hash=sha256:") == len(spec.sha256)


def test_default_envs_are_what_the_default_matrix_needs() -> None:
    """`make envs` makes 1.14 and 2.0 (the question) and the wheel; 2.2 is made on first use."""
    from shotbench.backends import registry

    needed = {registry.get(n).env for n in registry.default_names()} - {None}
    assert needed == set(envs.DEFAULT_ENVS) == {"hdf5-1.14", "hdf5-2.0", "h5py-s3"}
    assert "ros3-2.2" in registry.names() and "ros3-2.2" not in registry.default_names()


def test_wheel_env_verification_refuses_the_wrong_library(tmp_path: Path) -> None:
    from shotbench.builds.wheels import WHEELS

    spec = WHEELS["h5py-s3"]
    good = {
        "hdf5_version": "2.1.1",
        "h5py_version": "3.16.0",
        "ros3": True,
        "libhdf5": [str(tmp_path / "lib/python3.11/site-packages/h5py_s3.libs/libhdf5-x.so.320")],
    }
    assert envs.verify_wheel(spec, tmp_path, good) is None
    assert "1.14.6" in (envs.verify_wheel(spec, tmp_path, {**good, "hdf5_version": "1.14.6"}) or "")
    assert "no ROS3" in (envs.verify_wheel(spec, tmp_path, {**good, "ros3": False}) or "")
    assert "instead of" in (envs.verify_wheel(spec, tmp_path, {**good, "libhdf5": ["/usr/lib/libhdf5.so.310"]}) or "")


@pytest.mark.slow
def test_wheel_env_from_the_index_needs_no_compiler(tmp_path: Path) -> None:
    """A fresh environment for the wheel, with no compiler on PATH: h5py loads libhdf5 2.1.1
    from inside the environment and registers ROS3."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    real = subprocess.run(
        ["python3.11", "-c", "import sys; print(sys.executable)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.strip()  # not a pyenv shim
    (bindir / "python3.11").symlink_to(real)
    (bindir / "nice").symlink_to(shutil.which("nice") or "/usr/bin/nice")
    env = {"SHOTBENCH_ENVS": str(tmp_path / "envs"), "PATH": str(bindir), "CC": "/nonexistent/cc"}
    proc = _run("envs", "build", "h5py-s3", "--json", env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    row = json.loads(proc.stdout[proc.stdout.index("\n[\n") + 1 :])[0]  # after the progress lines
    assert (row["hdf5_version"], row["ros3"], row["state"]) == ("2.1.1", True, "ready")
    assert row["libhdf5"].startswith(str(tmp_path / "envs" / "h5py-s3"))
    assert "] compile" not in proc.stdout and "build h5py" not in proc.stdout
    # what a Dask worker imports is compiled once, here, so no worker compiles it at start
    assert "bytecode of the worker imports written" in proc.stdout, proc.stdout
    site = next((tmp_path / "envs" / "h5py-s3" / "lib").glob("python3*/site-packages"))
    for module in ("distributed/worker", "distributed/nanny", "h5py/_hl/files", "numpy/__init__"):
        folder, _, stem = module.rpartition("/")
        assert list((site / folder / "__pycache__").glob(f"{stem}.cpython-*.pyc")), f"no bytecode of {module}"


@pytest.mark.slow
def test_second_envs_build_takes_seconds() -> None:
    first = _run("envs", "build", timeout=3600)
    assert first.returncode == 0, first.stderr
    started = time.monotonic()
    second = _run("envs", "build", timeout=600)
    elapsed = time.monotonic() - started
    assert second.returncode == 0, second.stderr
    assert "compile" not in second.stdout
    assert elapsed < 10, f"a warm `shotbench envs build` took {elapsed:.1f} s"


@pytest.mark.slow
@pytest.mark.optional_build
def test_env_runs_shotbench_and_dask() -> None:
    python = envs.env_python("hdf5-2.2")
    proc = subprocess.run(
        [str(python), "-c", "import dask, distributed, numpy, boto3, shotbench.cli; print('ok')"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
    proc = subprocess.run(
        [str(python), "-m", "shotbench.cli", "envs", "--help"], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr


def test_the_crt_project_keeps_only_what_aws_c_s3_links(tmp_path: Path) -> None:
    lists = tmp_path / "CMakeLists.txt"
    subdirs = ["aws-c-common", "aws-c-io", "aws-c-event-stream", "aws-c-http", "aws-c-auth", "aws-c-mqtt", "aws-c-s3"]
    lists.write_text("project(x)\n" + "".join(f"add_subdirectory({d})\n" for d in subdirs))
    build.only_what_s3_needs(lists)
    text = lists.read_text()
    assert "mqtt" not in text and "event-stream" not in text
    assert all(f"add_subdirectory({d})" in text for d in ("aws-c-common", "aws-c-io", "aws-c-http", "aws-c-s3"))
    with pytest.raises(UserError, match="CRT_UNUSED"):  # a CRT that changed shape is not built blindly
        build.only_what_s3_needs(lists)


def test_h5py_cythonizes_on_every_core_or_builds_as_shipped(tmp_path: Path) -> None:
    setup = tmp_path / "setup_build.py"
    shipped = (  # the call as h5py 3.15.1 and 3.16.0 ship it
        "        self.extensions = self.distribution.ext_modules = cythonize(\n"
        "            self._make_extensions(config, templ_config),\n"
        "            force=config.changed() or self.force,\n"
        "            language_level=3\n"
        "        )\n"
    )
    setup.write_text(shipped)
    assert build.cythonize_in_parallel(setup, "2")
    patched = setup.read_text()
    assert "nthreads=2," in patched and compile(patched.strip().replace("self.", "x."), "s", "exec")
    other = "cythonize(exts, language_level=3)\n"  # a setup this does not know: left as it is
    setup.write_text(other)
    assert not build.cythonize_in_parallel(setup, "2") and setup.read_text() == other


@pytest.mark.slow
def test_built_h5py_has_no_debug_information_and_the_crt_no_unused_libraries() -> None:
    """What keeps a cold build short: no DWARF in the compiled h5py (half its compile time), no
    MQTT or event-stream in the CRT (a quarter of its C files)."""
    env = envs.env_python("hdf5-2.0").parent.parent
    modules = sorted(next((env / "lib").glob("python3*/site-packages/h5py")).glob("*.so"))
    assert len(modules) > 20
    for module in modules:
        sections = subprocess.run(["readelf", "-S", "-W", str(module)], capture_output=True, text=True, check=True)
        assert ".text" in sections.stdout and ".debug_info" not in sections.stdout, module.name
    crt = build.builds_dir() / f"aws-crt-{build.aws_key()}" / "prefix"
    libs = {p.name for p in crt.rglob("libaws-*.a")}
    assert "libaws-c-s3.a" in libs and "libaws-c-auth.a" in libs, libs
    assert not {n for n in libs if "mqtt" in n or "event-stream" in n}, libs


def test_cache_key_is_the_same_from_parallel_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Builds run side by side in threads; each must see the full toolchain in its key."""
    import concurrent.futures as cf

    monkeypatch.setattr(build, "_toolchain_cache", {})
    names = list(specs.BUILDS) * 4
    with cf.ThreadPoolExecutor(len(names)) as pool:
        keys = list(pool.map(lambda n: (n, build.build_key(specs.BUILDS[n])), names))
    for name in specs.BUILDS:
        assert len({key for n, key in keys if n == name}) == 1


def test_cache_key_follows_the_python_abi_not_its_patch_release(monkeypatch: pytest.MonkeyPatch) -> None:
    """Builds made with Python 3.11.2, then `make envs` with 3.11.7 first on PATH: all three
    builds reran for 7 minutes with no word of why. Both are the cpython-311 ABI: one key."""
    pythons = {}
    for folder in ("/usr/bin", "/root/.pyenv/versions/3.11.7/bin"):
        if Path(folder, "python3.11").exists():
            monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
            monkeypatch.setattr(build, "_toolchain_cache", {})
            release = subprocess.run(
                ["python3.11", "-c", "import sys; print(sys.version.split()[0])"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            pythons[release] = (build.build_key(specs.BUILDS["hdf5-2.0"]), build.toolchain()["python"])
    if len(pythons) < 2:
        pytest.skip("needs two patch releases of python3.11 on this machine")
    assert len({key for key, _ in pythons.values()}) == 1, pythons
    assert all(p.split()[1] == "3.11" and "311" in p for _, p in pythons.values())


def test_a_cache_miss_names_what_differs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build about to run although one of the same source exists says, in one line, which part
    of the key differs (here: a build.json written before the key followed the ABI only)."""
    monkeypatch.setenv("SHOTBENCH_CACHE", str(tmp_path / "cache"))
    spec = specs.BUILDS["hdf5-2.0"]
    assert build.explain_miss(spec) is None  # nothing to compare with: nothing to say
    old = build.builds_dir() / f"{spec.name}-0123456789ab"
    old.mkdir(parents=True)
    parts = build.key_parts(spec)
    parts["toolchain"] = {**parts["toolchain"], "python": "3.11.2 (main, Apr 28 2025, 14:11:48) [GCC 12.2.0]"}
    (old / "build.json").write_text(json.dumps({"key_parts": parts}))
    line = build.explain_miss(spec)
    assert line is not None and "\n" not in line
    assert line.startswith(f"building although {old.name} exists") and "toolchain.python" in line
    assert "3.11.2" in line and build.toolchain()["python"] in line
