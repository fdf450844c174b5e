"""Compile libhdf5 (with ROS3) and an h5py wheel against it, once per set of inputs.

Results live in `cache_dir()/builds/<name>-<key>/` (prefix/, wheel/, logs/, build.json),
outside the checkout, so a fresh clone or a second `make envs` reuses them. The key hashes
every input that changes the binaries: source sha256s, CMake options, compiler and Python.
The prefix is not relocatable: h5py records it as RUNPATH, so no library path is exported.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from shotbench import which
from shotbench.builds import specs
from shotbench.builds.specs import (
    AWS_CMAKE_OPTIONS,
    AWS_CRT,
    CMAKE_PYPI,
    BuildSpec,
    Source,
)
from shotbench.errors import UserError
from shotbench.locks import exclusive
from shotbench.paths import cache_dir
from shotbench.units import MiB

RECIPE = 2
"""Bumped when the build steps below change in a way that changes the artefacts (2: h5py compiled
without debug information; the CRT without its MQTT and event-stream libraries)."""

PYTHON = "python3.11"
INSTALL_HINT = (
    "install the compilers and dev packages with `scripts/apt-ensure.sh build-essential "
    "libcurl4-openssl-dev libssl-dev zlib1g-dev pkg-config` and run `make envs` again"
)
_aws_lock = threading.Lock()
_print_lock = threading.Lock()


@dataclass(frozen=True)
class BuildResult:
    """A finished build in the cache."""

    spec: BuildSpec
    key: str
    root: Path
    prefix: Path
    wheel: Path
    manifest: dict


def builds_dir() -> Path:
    path = cache_dir() / "builds"
    path.mkdir(parents=True, exist_ok=True)
    return path


def say(name: str, message: str) -> None:
    with _print_lock:
        print(f"[{name}] {message}", flush=True)


# ---------------------------------------------------------------- toolchain facts


def _first_line(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return "missing"
    return out.strip().splitlines()[0] if out.strip() else "unknown"


_toolchain_cache: dict[str, str] = {}
_toolchain_lock = threading.Lock()


# What the built extension's ABI depends on: interpreter, major.minor and ABI tag. Not the patch
# release: a wheel built with 3.11.2 imports and runs under 3.11.7 (same `cpython-311` ABI), so
# a new patch release on PATH must not rebuild every libhdf5 for seven minutes.
_PYTHON_ABI = (
    "import sys, sysconfig; v = sys.version_info; "
    "print(sys.implementation.name, f'{v.major}.{v.minor}', sysconfig.get_config_var('SOABI'))"
)


def toolchain() -> dict[str, str]:
    """Compiler and Python ABI: part of every cache key (an ABI change means a rebuild).

    Filled once under a lock: builds run in threads, and a half-filled answer would give
    one of them a different cache key.
    """
    with _toolchain_lock:
        if not _toolchain_cache:
            found = {
                "cc": _first_line([os.environ.get("CC", "cc"), "--version"]),
                "python": _first_line([PYTHON, "-c", _PYTHON_ABI]),
            }
            _toolchain_cache.update(found)
        return dict(_toolchain_cache)


def key_parts(spec: BuildSpec) -> dict[str, object]:
    """Everything the cache key hashes, by name (recorded in build.json to explain a miss)."""
    return {"recipe": RECIPE, "spec": spec.fingerprint(), "toolchain": toolchain()}


def build_key(spec: BuildSpec) -> str:
    blob = json.dumps(key_parts(spec), sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _flat(parts: dict[str, object], prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in parts.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _recorded_parts(manifest: dict) -> dict[str, object]:
    """The key parts a build recorded; for builds made before they were recorded, what its
    build.json says of the same inputs."""
    if isinstance(manifest.get("key_parts"), dict):
        return manifest["key_parts"]
    return {
        "spec": {
            "hdf5": (manifest.get("hdf5_source") or {}).get("sha256"),
            "h5py": (manifest.get("h5py_source") or {}).get("sha256"),
            "backend": manifest.get("ros3_backend"),
            "cmake_options": manifest.get("cmake_options"),
        },
        "toolchain": manifest.get("toolchain") or {},
    }


def explain_miss(spec: BuildSpec) -> str | None:
    """One line naming what differs from the nearest existing build of the same name (same
    source first), or None when there is none: a build that is about to run although one of
    the same source exists says why."""
    here = _flat(key_parts(spec))
    best: tuple[int, str, list[str]] | None = None
    for manifest_path in builds_dir().glob(f"{spec.name}-*/build.json"):
        if manifest_path.parent == build_root(spec):
            continue
        try:
            there = _flat(_recorded_parts(json.loads(manifest_path.read_text())))
        except (OSError, ValueError, AttributeError):
            continue
        diffs = [k for k in here if k in there and there[k] != here[k]]
        rank = (0 if "spec.hdf5" not in diffs else 1) * 1000 + len(diffs)
        if diffs and (best is None or rank < best[0]):
            lines = [f"{k} {there[k]!r} -> {here[k]!r}" for k in diffs]
            best = (rank, manifest_path.parent.name, lines)
    if best is None:
        return None
    _, name, lines = best
    more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
    return f"building although {name} exists: its cache key differs in {lines[0]}{more}"


def aws_key() -> str:
    blob = json.dumps(
        {
            "recipe": RECIPE,
            "src": AWS_CRT.sha256,
            "opts": AWS_CMAKE_OPTIONS,
            "cmake": CMAKE_PYPI,
            "toolchain": toolchain(),
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def build_root(spec: BuildSpec) -> Path:
    return builds_dir() / f"{spec.name}-{build_key(spec)}"


def cached(spec: BuildSpec) -> BuildResult | None:
    """The finished build for these exact inputs, or None (build.json is written last)."""
    root = build_root(spec)
    manifest_path = root / "build.json"
    if not manifest_path.is_file():
        return None
    try:
        manifest = json.loads(manifest_path.read_text())
    except json.JSONDecodeError:
        return None
    wheel = root / "wheel" / manifest.get("wheel", "")
    if not wheel.is_file() or not (root / "prefix" / "lib").is_dir():
        return None
    return BuildResult(spec, root.name.rsplit("-", 1)[1], root, root / "prefix", wheel, manifest)


# ---------------------------------------------------------------- sources


DOWNLOAD_TIMEOUT = 30.0  # seconds a source's server may go without sending a byte


def fetch(src: Source, name: str = "sources") -> Path:
    """The archive in the cache, downloaded once and checked against its pinned sha256.

    A pinned archive is kept under its file name (its sha256 ties the file to its bytes); one with
    no sha256 under its URL's too, so another URL's archive of the same name is never taken for it."""
    if src.local is not None:
        if src.sha256 is not None and src.local.is_file() and (got := specs.file_sha256(src.local)) != src.sha256:
            raise UserError(
                f"{src.local} has sha256 {got[:12]}…, not the {src.sha256[:12]}… given; give that tarball's "
                "--sha256, or the tarball it names."
            )
        return src.local
    sources = cache_dir() / "sources"
    sources.mkdir(parents=True, exist_ok=True)
    url_key = hashlib.sha256(src.url.encode()).hexdigest()[:12]
    dest = sources / (src.filename if src.sha256 is not None else f"{url_key}-{src.filename}")
    if dest.is_file() and (src.sha256 is None or specs.file_sha256(dest) == src.sha256):
        return dest
    say(name, f"downloading {src.url}")
    tmp = dest.with_suffix(dest.suffix + f".part{os.getpid()}")
    last: Exception | None = None
    for attempt in range(3):
        try:
            with urllib.request.urlopen(src.url, timeout=DOWNLOAD_TIMEOUT) as resp, tmp.open("wb") as out:
                shutil.copyfileobj(resp, out, MiB)
            break
        except (urllib.error.URLError, OSError) as exc:
            if isinstance(exc, TimeoutError) or isinstance(getattr(exc, "reason", None), TimeoutError):
                tmp.unlink(missing_ok=True)  # silence, not a dropped connection: asking again only waits again
                raise UserError(
                    f"{src.url} sent nothing for {DOWNLOAD_TIMEOUT:g} s; check the URL, the network or its "
                    "proxy and run the build again."
                ) from None
            last = exc
            time.sleep(attempt + 1)
    else:
        tmp.unlink(missing_ok=True)
        raise UserError(f"could not download {src.url} ({last}); check the network or proxy and run `make envs` again.")
    got = specs.file_sha256(tmp)
    if src.sha256 is not None and got != src.sha256:
        tmp.unlink(missing_ok=True)
        raise UserError(
            f"{src.filename} downloaded with sha256 {got[:12]}… instead of the pinned {src.sha256[:12]}…; "
            "the registry served different bytes, so the build stops: check the mirror or the pin."
        )
    tmp.replace(dest)
    return dest


def unpack(archive: Path, dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    try:
        with tarfile.open(archive) as tar:
            if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4 (Debian 12 ships 3.11.2)
                tar.extractall(dest, filter="data")
            else:
                root = dest.resolve()
                for member in tar.getmembers():
                    target = (dest / member.name).resolve()
                    if not target.is_relative_to(root) or member.issym() or member.islnk() or member.isdev():
                        raise tarfile.TarError(f"unsafe member {member.name!r}")
                tar.extractall(dest)
    except (tarfile.TarError, OSError) as exc:
        raise UserError(
            f"cannot unpack {archive} ({exc}); give a .tar.gz/.tar.bz2 release tarball or a source folder."
        ) from exc


def find_hdf5_tree(top: Path, named: str | None = None) -> Path:
    """The folder holding CMakeLists.txt and src/H5public.h (release tarballs nest one level).
    `named`: the source as the user gave it, for a tree unpacked where a failed build removes it."""
    for candidate in [top, *sorted(p for p in top.iterdir() if p.is_dir())] if top.is_dir() else []:
        if (candidate / "CMakeLists.txt").is_file() and (candidate / "src" / "H5public.h").is_file():
            return candidate
    raise UserError(
        f"no HDF5 source tree (CMakeLists.txt + src/H5public.h) in {named or top}; point --source at an HDF5 release."
    )


# ---------------------------------------------------------------- steps


def run_step(name: str, step: str, cmd: list[str], log: Path, cwd: Path | None = None, env: dict | None = None) -> None:
    """Run one build step at low priority into its own log; fail with where to look."""
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    say(name, f"{step} … (log: {log})")
    full_env = {**os.environ, **(env or {})}
    full_env.pop("LD_LIBRARY_PATH", None)
    with log.open("w") as out:
        out.write("$ " + " ".join(cmd) + "\n\n")
        out.flush()
        try:
            proc = subprocess.run(
                ["nice", "-n", "10", *cmd], cwd=cwd, env=full_env, stdout=out, stderr=subprocess.STDOUT, check=False
            )
        except OSError as exc:
            raise UserError(
                f"{name}: step '{step}' could not start: {cmd[0]} not found ({exc.strerror}); {INSTALL_HINT}."
            ) from exc
    if proc.returncode == 127:
        raise UserError(
            f"{name}: step '{step}' failed: {cmd[0]} not found, or a program it runs (exit 127); see {log}."
        )
    if proc.returncode != 0:
        tail = _error_hint(log)
        raise UserError(f"{name}: step '{step}' failed (exit {proc.returncode}{tail}); see {log}, then {INSTALL_HINT}.")
    say(name, f"{step} done in {time.monotonic() - started:.0f} s")


def _error_hint(log: Path) -> str:
    """The first telling line of a failed log, so the sentence alone often names the problem."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    for line in lines:
        low = line.lower()
        if "could not find" in low or "not found" in low or "fatal error" in low or "error:" in low:
            return ": " + line.strip()[:160]
    return ""


def ensure_cmake() -> Path:
    """CMake >= 3.26 from PyPI in a small cached venv (Debian 12's 3.25 is too old for HDF5 2.x)."""
    version = CMAKE_PYPI.split("==")[1]
    venv = cache_dir() / "tools" / f"cmake-{version}"
    cmake = venv / "bin" / "cmake"
    with exclusive(cache_dir() / "tools" / f"cmake-{version}.lock"):
        if cmake.is_file():
            return cmake
        logs = cache_dir() / "tools" / "logs"
        if venv.exists():
            shutil.rmtree(venv)
        run_step(
            "tools",
            f"install {CMAKE_PYPI}",
            [*which.uv_command(), "venv", "--quiet", "--python", PYTHON, str(venv)],
            logs / "cmake-venv.log",
        )
        run_step(
            "tools",
            f"pip install {CMAKE_PYPI}",
            [*which.uv_command(), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), CMAKE_PYPI],
            logs / "cmake-install.log",
        )
    return cmake


def jobs() -> str:
    return str(max(1, int(os.environ.get("SHOTBENCH_BUILD_JOBS", "1"))))


def cmake_project(
    name: str,
    cmake: Path,
    src: Path,
    work: Path,
    prefix: Path,
    options: tuple[str, ...],
    logs: Path,
    what: str,
    extra: tuple[str, ...] = (),
) -> None:
    build = work / f"build-{what}"
    if build.exists():
        shutil.rmtree(build)
    run_step(
        name,
        f"configure {what}",
        [str(cmake), "-S", str(src), "-B", str(build), f"-DCMAKE_INSTALL_PREFIX={prefix}", *options, *extra],
        logs / f"{what}-configure.log",
        # the CRT builds s2n while it configures (`cmake --build` with no jobs): all cores, not one
        env={"CMAKE_BUILD_PARALLEL_LEVEL": jobs()},
    )
    run_step(
        name, f"compile {what}", [str(cmake), "--build", str(build), "--parallel", jobs()], logs / f"{what}-build.log"
    )
    run_step(name, f"install {what}", [str(cmake), "--install", str(build)], logs / f"{what}-install.log")


def ensure_aws(name: str) -> Path:
    """The aws-c-s3 stack (static, PIC, system OpenSSL), shared by every 2.x build."""
    root = builds_dir() / f"aws-crt-{aws_key()}"
    prefix = root / "prefix"
    stamp = root / "build.json"
    with _aws_lock, exclusive(builds_dir() / f"{root.name}.lock"):
        if stamp.is_file():
            return prefix
        cmake = ensure_cmake()
        archive = fetch(AWS_CRT, name)
        work = root / "work"
        unpack(archive, work / "src")
        only_what_s3_needs(work / "src" / AWS_CRT.subdir / "CMakeLists.txt")
        if prefix.exists():
            shutil.rmtree(prefix)
        cmake_project(
            name, cmake, work / "src" / AWS_CRT.subdir, work, prefix, AWS_CMAKE_OPTIONS, root / "logs", "aws-c-s3"
        )
        shutil.rmtree(work, ignore_errors=True)
        stamp.write_text(json.dumps({"source": AWS_CRT.filename, "sha256": AWS_CRT.sha256, "key": aws_key()}, indent=2))
    return prefix


CRT_UNUSED = ("aws-c-event-stream", "aws-c-mqtt")
"""Libraries of the CRT project that aws-c-s3 does not link: a quarter of its C files."""


def only_what_s3_needs(cmakelists: Path) -> None:
    """Drop the CRT libraries ROS3 does not use from the CRT's top-level CMake project, so they
    are neither compiled nor installed; a project that no longer lists them is an error, since
    the build would then be something other than what this recipe names."""
    text = cmakelists.read_text()
    for lib in CRT_UNUSED:
        line = f"add_subdirectory({lib})\n"
        if line not in text:
            raise UserError(f"{cmakelists} has no `{line.strip()}`; the CRT sources changed, update CRT_UNUSED.")
        text = text.replace(line, "")
    cmakelists.write_text(text)


def ensure_zlib_ng_tarball(name: str) -> Path:
    """A folder holding zlib-ng-<version>.tar.gz (the crate's zlib-ng sources, repacked under the
    name HDF5's CMake looks for), made once; HDF5 builds it from there with no network."""
    folder = builds_dir() / f"zlib-ng-{specs.ZLIB_NG_VERSION}-{(specs.ZLIB_NG.sha256 or '')[:12]}"
    tarball = folder / f"zlib-ng-{specs.ZLIB_NG_VERSION}.tar.gz"
    with exclusive(builds_dir() / f"{folder.name}.lock"):
        if tarball.is_file():
            return folder
        archive = fetch(specs.ZLIB_NG, name)
        work = folder / "work"
        shutil.rmtree(work, ignore_errors=True)
        unpack(archive, work)
        tmp = tarball.with_suffix(".part")
        with tarfile.open(tmp, "w:gz") as tar:
            tar.add(work / specs.ZLIB_NG.subdir, arcname=f"zlib-ng-{specs.ZLIB_NG_VERSION}")
        tmp.replace(tarball)
        shutil.rmtree(work, ignore_errors=True)
    return folder


def _hdf5_source(spec: BuildSpec, work: Path) -> tuple[Path, str]:
    """The HDF5 tree to build and the version its header says."""
    archive = fetch(spec.hdf5, spec.name)
    if archive.is_dir():
        src = find_hdf5_tree(archive)
        return src, specs.read_source_version(src)
    unpack(archive, work / "src")
    src = work / "src" / spec.hdf5.subdir if spec.hdf5.subdir else find_hdf5_tree(work / "src", spec.hdf5.url)
    return src, specs.read_source_version(src, spec.hdf5.url)


def _check_prefix(spec: BuildSpec, prefix: Path) -> None:
    """Fail early if ROS3 did not make it in (CMake drops optional features quietly)."""
    conf = prefix / "include" / "H5pubconf.h"
    text = conf.read_text(errors="replace") if conf.is_file() else ""
    if "#define H5_HAVE_ROS3_VFD 1" not in text:
        raise UserError(f"{spec.name}: libhdf5 was built without the ROS3 driver (see {conf}); {INSTALL_HINT}.")
    if spec.zlib_ng and "#define H5_HAVE_ZLIBNG_H 1" not in text:
        raise UserError(f"{spec.name}: libhdf5 was built without zlib-ng (see {conf}); see its configure log.")


def build(spec: BuildSpec, force: bool = False) -> BuildResult:
    """Build (or reuse) libhdf5 + the h5py wheel for one spec."""
    if not force:
        hit = cached(spec)
        if hit is not None:
            return hit
    root = build_root(spec)
    with exclusive(builds_dir() / f"{root.name}.lock"):
        if not force and (hit := cached(spec)) is not None:
            return hit
        note = explain_miss(spec)
        if note:
            say(spec.name, note)
        try:
            return _build_into(spec, root)
        except Exception as exc:
            take_back(root, str(exc))
            raise


def take_back(root: Path, said: str) -> None:
    """Remove a failed build's folder, so that the next try starts clean and no half-built tree
    stays in the cache; its logs stay when the sentence that stopped it names one of them (the
    user's next step is to read it)."""
    logs = root / "logs"
    keep = str(logs) in said
    for child in sorted(root.iterdir()) if root.is_dir() else []:
        if keep and child == logs:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
    if not keep:
        with contextlib.suppress(OSError):
            root.rmdir()


def _build_into(spec: BuildSpec, root: Path) -> BuildResult:
    """`build`'s work, under its lock: the source checked first (a wrong one is named before any
    tool is installed), then libhdf5, then h5py; build.json last."""
    parts = key_parts(spec)  # of the spec the root was named for (a custom one is specialised below)
    started = time.monotonic()
    for sub in ("prefix", "wheel", "work", "logs"):
        shutil.rmtree(root / sub, ignore_errors=True)
    (root / "build.json").unlink(missing_ok=True)
    logs = root / "logs"
    work = root / "work"
    src, version = _hdf5_source(spec, work)
    if spec.custom:
        spec = specs.specialise(spec, version)
    elif version != spec.hdf5_version:
        raise UserError(
            f"{spec.name}: the source says HDF5 {version}, not {spec.hdf5_version}; the pinned source is wrong."
        )
    cmake = ensure_cmake()
    extra: tuple[str, ...] = ()
    if spec.ros3_backend == "aws":
        extra = (f"-DCMAKE_PREFIX_PATH={ensure_aws(spec.name)}",)
    if spec.zlib_ng:
        extra += (f"-DTGZPATH={ensure_zlib_ng_tarball(spec.name)}",)
    prefix = root / "prefix"
    cmake_project(spec.name, cmake, src, work, prefix, spec.cmake_options, logs, "libhdf5", extra)
    _check_prefix(spec, prefix)
    wheel = build_h5py(spec, prefix, root / "wheel", logs, work)
    shutil.rmtree(work, ignore_errors=True)
    manifest = {
        "name": spec.name,
        "key": root.name.rsplit("-", 1)[1],
        "hdf5_version": spec.hdf5_version,
        "h5py_version": spec.h5py_version,
        "ros3_backend": spec.ros3_backend,
        "description": spec.description,
        "hdf5_source": {"url": spec.hdf5.url, "sha256": spec.hdf5.sha256},
        "h5py_source": {"url": spec.h5py.url, "sha256": spec.h5py.sha256},
        "cmake_options": list(spec.cmake_options),
        "toolchain": toolchain(),
        "key_parts": parts,
        "python_release": _first_line([PYTHON, "-c", "import sys; print(sys.version)"]),
        "wheel": wheel.name,
        "wheel_sha256": specs.file_sha256(wheel),
        "build_seconds": round(time.monotonic() - started, 1),
        "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (root / "build.json").write_text(json.dumps(manifest, indent=2))
    say(spec.name, f"built in {manifest['build_seconds']:.0f} s → {root}")
    return BuildResult(spec, str(manifest["key"]), root, prefix, wheel, manifest)


def cythonize_in_parallel(setup_build: Path, n: str) -> bool:
    """Let h5py's build run Cython over its 25 modules on `n` processes instead of one at a time
    (about 19 s on one core while the other waits, at the end of a cold build). Cython writes
    the same C either way, so the wheel and the cache key are unchanged. False, and the file
    untouched, when the call is not the one this expects (another h5py): it then builds as it is."""
    text = setup_build.read_text()
    old = "force=config.changed() or self.force,"
    if text.count(old) != 1:
        return False
    setup_build.write_text(text.replace(old, f"{old} nthreads={int(n)},"))
    return True


def build_h5py(spec: BuildSpec, prefix: Path, out: Path, logs: Path, work: Path) -> Path:
    """An h5py wheel compiled against `prefix` (HDF5_DIR), never one from an index or cache."""
    sdist = fetch(spec.h5py, spec.name)
    unpack(sdist, work / "h5py")
    tree = next((p for p in (work / "h5py").iterdir() if (p / "setup_build.py").is_file()), None)
    if tree is None or not cythonize_in_parallel(tree / "setup_build.py", jobs()):
        say(spec.name, "h5py's setup_build.py is not the expected one: Cython runs on one core")
    source = tree or sdist
    out.mkdir(parents=True, exist_ok=True)
    # setuptools compiles h5py's extensions one by one unless build_ext is told to use jobs.
    extra_cfg = logs / "h5py-build.cfg"
    extra_cfg.parent.mkdir(parents=True, exist_ok=True)
    extra_cfg.write_text(f"[build_ext]\nparallel = {jobs()}\n")
    env = {
        "HDF5_DIR": str(prefix),
        "HDF5_VERSION": spec.hdf5_version or "",
        "UV_PYTHON_DOWNLOADS": "never",
        "DIST_EXTRA_CONFIG": str(extra_cfg),
        # Python's own CFLAGS carry -g: debug information took half of the compile (50 s of 70 s
        # for h5py 3.16) and changes no instruction (every module's .text is byte-identical
        # without it). setuptools appends CPPFLAGS after those CFLAGS, so -g0 there wins while
        # -O2 and the rest stay; a CFLAGS variable would replace them.
        "CPPFLAGS": f"{os.environ.get('CPPFLAGS', '')} -g0".strip(),
    }
    if not env["HDF5_VERSION"]:
        env.pop("HDF5_VERSION")
    run_step(
        spec.name,
        f"build h5py {spec.h5py_version} wheel",
        [
            *which.uv_command(),
            "build",
            "--wheel",
            "--no-config",
            "--python",
            PYTHON,
            "--out-dir",
            str(out),
            str(source),
        ],
        logs / "h5py-wheel.log",
        env=env,
    )
    wheels = sorted(out.glob("h5py-*.whl"))
    if not wheels:
        raise UserError(f"{spec.name}: the h5py build produced no wheel; see {logs / 'h5py-wheel.log'}.")
    return wheels[-1]
