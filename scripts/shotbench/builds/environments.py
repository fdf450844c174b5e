"""One Python environment per libhdf5 build, proven to load the libhdf5 it was built for.

h5py is compiled against one libhdf5, so each build gets `.envs/<name>` with shotbench
(editable), the project's locked dependencies and the h5py wheel from the build cache,
installed by file path: an index would hand back PyPI's ROS3-less wheel, and uv may reuse
a cached h5py built against another libhdf5. Debian's own libhdf5 also has ROS3, so the
proof is the exact version and the path of the libhdf5 the interpreter really loads.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from shotbench import which
from shotbench.builds import build as builder
from shotbench.builds import specs
from shotbench.builds.specs import BuildSpec
from shotbench.builds.wheels import WHEELS, WheelSpec
from shotbench.errors import UserError
from shotbench.paths import cache_dir, envs_dir, repo_root

STAMP = "shotbench-env.json"

_PROBE = r"""
import json, sys
out = {"python": sys.version.split()[0], "executable": sys.executable}
try:
    import h5py
    out.update(hdf5_version=h5py.version.hdf5_version, h5py_version=h5py.version.version,
               ros3=bool(h5py.get_config().ros3) and "ros3" in h5py.registered_drivers())
    from shotbench.hdf5.library import mapped_libhdf5
    out["libhdf5"] = mapped_libhdf5()
    import shotbench
    out["shotbench"] = shotbench.__file__
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


@dataclass
class EnvInfo:
    """What `shotbench envs` shows for one build; versions are read from the interpreter."""

    name: str
    hdf5_version: str | None
    h5py_version: str | None
    ros3: bool | None
    path: Path
    cached: bool
    state: str  # ready | missing | stale | broken
    expected_hdf5: str | None = None
    description: str = ""
    build_dir: Path | None = None
    libhdf5: str | None = None

    def to_dict(self) -> dict:
        data = asdict(self)
        data["path"] = str(self.path)
        data["build_dir"] = str(self.build_dir) if self.build_dir else None
        return data


def env_dir(name: str) -> Path:
    return envs_dir() / name


DEFAULT_ENVS = ("hdf5-1.14", "hdf5-2.0", "h5py-s3")
"""What `make envs` makes: the default matrix's question (1.14.6 vs 2.0) plus the no-compile
wheel. Other builds (2.2, custom releases) are made the first time a run selects them."""


def known_names() -> list[str]:
    return [*all_specs(), *WHEELS]


def env_python(name: str) -> Path:
    """The interpreter of `.envs/<name>`, for running workers against that libhdf5."""
    python = env_dir(name) / "bin" / "python"
    if not python.exists():
        if name not in known_names():
            known = ", ".join(known_names())
            raise UserError(f"unknown build {name!r} (known: {known}); run `shotbench envs` to list them.")
        raise UserError(f"the environment for {name} is not built; run `make envs` (or `shotbench envs build {name}`).")
    return python


def ensure_python(name: str) -> Path:
    """The interpreter of `.envs/<name>`, built (or installed, for a wheel) on first use.

    A run that selects a build `make envs` does not make (2.2, a custom release) pays for it
    once, here, instead of every user paying for it up front."""
    python = env_dir(name) / "bin" / "python"
    if python.exists():
        return python
    if name not in known_names():
        env_python(name)  # the unknown-name sentence
    print(
        f"{name}: not built yet; building it now (first use only; `shotbench envs build {name}` does the same)",
        flush=True,
    )
    build_envs([name])
    return env_python(name)


def _own_env(*drop: str) -> dict[str, str]:
    """This process's environment without what would make another interpreter load other
    libraries or modules than its own (and without `drop`)."""
    gone = {"LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONHOME", *drop}
    return {k: v for k, v in os.environ.items() if k not in gone}


def probe(python: Path) -> dict:
    """Ask the interpreter itself which h5py and libhdf5 it loads (never assumed)."""
    env = _own_env()
    try:
        proc = subprocess.run(
            [str(python), "-I", "-c", _PROBE], capture_output=True, text=True, timeout=120, env=env, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": f"cannot run {python}: {exc}"}
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}


# ---------------------------------------------------------------- custom builds


def _custom_dir() -> Path:
    return cache_dir() / "builds" / "custom"


def remember_custom(spec: BuildSpec) -> None:
    data = {"name": spec.name, "source": spec.hdf5.url, "sha256": spec.hdf5.sha256}
    _custom_dir().mkdir(parents=True, exist_ok=True)
    (_custom_dir() / f"{spec.name}.json").write_text(json.dumps(data, indent=2))


def custom_specs() -> dict[str, BuildSpec]:
    """The builds `envs build --source` made; listing them makes no folder."""
    found: dict[str, BuildSpec] = {}
    for path in sorted(_custom_dir().glob("*.json")):  # none when the folder is not there
        try:
            data = json.loads(path.read_text())
            found[data["name"]] = specs.custom_spec(data["name"], data["source"], data.get("sha256"))
        except (json.JSONDecodeError, KeyError, UserError):
            continue
    return found


def all_specs() -> dict[str, BuildSpec]:
    return {**specs.BUILDS, **custom_specs()}


# ---------------------------------------------------------------- install


def requirements() -> str:
    """The project's locked runtime dependencies, without h5py (the env gets the built wheel).

    Using the lock keeps Dask and friends at the versions of `.venv`, so a client and its
    workers in different environments agree.
    """
    root = repo_root()
    try:
        proc = subprocess.run(
            [
                *which.uv_command(),
                "export",
                "--frozen",
                "--no-default-groups",
                "--no-emit-project",
                "--no-hashes",
                "--no-header",
                "--no-annotate",
                "--format",
                "requirements-txt",
            ],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        text = proc.stdout if proc.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired, which.ToolMissing):
        text = ""
    if not text.strip():
        import tomllib

        deps = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
        text = "\n".join(deps) + "\n"
    keep = [line for line in text.splitlines() if line.strip() and not _is_h5py(line)]
    return "\n".join(keep) + "\n"


def _is_h5py(line: str) -> bool:
    name = line.strip().split(";")[0]
    for sep in ("==", ">=", "<=", "~=", "!=", ">", "<", "[", " "):
        name = name.split(sep)[0]
    return name.strip().lower() == "h5py"


def _stamp_for(result: builder.BuildResult, reqs: str) -> dict:
    return {
        "build": result.root.name,
        "wheel_sha256": result.manifest.get("wheel_sha256"),
        "requirements_sha256": hashlib.sha256(reqs.encode()).hexdigest(),
        "repo": str(repo_root()),
        "bytecode": BYTECODE,
    }


def _verify(result: builder.BuildResult, found: dict) -> str | None:
    """Why this interpreter is not the build it should be, or None if it is."""
    m = result.manifest
    if "error" in found:
        return f"importing h5py failed: {found['error']}"
    if found.get("hdf5_version") != m["hdf5_version"]:
        return f"h5py loads libhdf5 {found.get('hdf5_version')}, expected {m['hdf5_version']}"
    if found.get("h5py_version") != m["h5py_version"]:
        return f"h5py is {found.get('h5py_version')}, expected {m['h5py_version']}"
    if not found.get("ros3"):
        return "h5py reports no ROS3 driver"
    libs = found.get("libhdf5") or []
    if not libs or not all(str(p).startswith(str(result.prefix)) for p in libs):
        return f"h5py loads {libs or 'no libhdf5'} instead of the one in {result.prefix}"
    return None


# Bytecode is written when an environment is made, for what a Dask worker imports: a worker that
# starts under PYTHONDONTWRITEBYTECODE (or on a read-only env) would otherwise compile numpy, h5py
# and dask from source every time it starts. Not every module of the lock: compiling all 7,600
# files took 24 s per environment, the ~670 a LocalCluster and h5py import about 3 s. The method
# is part of the stamp, so an env made another way is made again once.
UV_ENV = {"UV_PYTHON_DOWNLOADS": "never"}
BYTECODE = "worker-imports"
WARM_TIMEOUT = 180.0  # seconds; a warm-up that hangs must not hold up the run

# A one-worker LocalCluster with its dashboard, as the driver starts them, running h5py: every
# module a worker and its scheduler import is compiled once, by the env's own interpreter.
_WARM = r"""
import logging
from distributed import Client, LocalCluster

def work():
    import h5py, numpy
    return h5py.version.hdf5_version

if __name__ == "__main__":
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.ERROR, memory_limit=0) as cluster:
        with Client(cluster, set_as_default=False) as client:
            print(client.submit(work, pure=False).result(timeout=120))
"""


def _uv(name: str, step: str, args: list[str], log: Path) -> None:
    builder.run_step(name, step, [*which.uv_command(), *args], log, cwd=repo_root(), env=UV_ENV)


def warm_bytecode(name: str, python: Path, log: Path) -> None:
    """Write the bytecode of what a worker imports (see BYTECODE). A failed warm-up costs speed,
    not correctness (the env then compiles on import), so it is said, not raised."""
    started = time.monotonic()
    env = _own_env("PYTHONDONTWRITEBYTECODE")
    script = log.with_name("env-warm.py")
    script.write_text(_WARM)
    try:
        with log.open("w") as out:
            proc = subprocess.run(
                [str(python), str(script)],
                cwd=script.parent,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=WARM_TIMEOUT,
                check=False,
            )
        ok = proc.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    if ok:
        builder.say(name, f"bytecode of the worker imports written in {time.monotonic() - started:.0f} s")
    else:
        builder.say(name, f"bytecode warm-up failed (see {log}); workers compile on import instead")


def _current(
    path: Path, stamp: dict[str, Any], verify: Callable[[dict[str, Any]], str | None]
) -> dict[str, Any] | None:
    """The probe of `path`'s interpreter when the env already holds what `stamp` describes and
    `verify` finds nothing wrong with it (None: build it again). Built envs and wheel envs alike."""
    python = path / "bin" / "python"
    stamp_path = path / STAMP
    if not (python.exists() and stamp_path.is_file()):
        return None
    try:
        old = json.loads(stamp_path.read_text())
    except json.JSONDecodeError:
        return None
    if {k: old.get(k) for k in stamp} != stamp:
        return None
    found = probe(python)
    return found if verify(found) is None else None


def ensure_env(result: builder.BuildResult, reqs: str | None = None, force: bool = False) -> EnvInfo:
    """Make `.envs/<name>` hold exactly this build; a quick probe when it already does."""
    name = result.manifest["name"]
    path = env_dir(name)
    python = path / "bin" / "python"
    reqs = requirements() if reqs is None else reqs
    stamp = _stamp_for(result, reqs)
    found = None if force else _current(path, stamp, lambda f: _verify(result, f))
    if found is not None:
        return _info(name, result, found, "ready")
    logs = result.root / "logs"
    started = time.monotonic()
    if path.exists():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    req_file = logs / "env-requirements.txt"
    req_file.parent.mkdir(parents=True, exist_ok=True)
    req_file.write_text(reqs)
    _uv(name, "create venv", ["venv", "--quiet", "--python", builder.PYTHON, str(path)], logs / "env-venv.log")
    _uv(
        name,
        "install dependencies + built h5py wheel",
        [
            "pip",
            "install",
            "--python",
            str(python),
            "-r",
            str(req_file),
            str(result.wheel),
            "--reinstall-package",
            "h5py",
        ],
        logs / "env-install.log",
    )
    _uv(
        name,
        "install shotbench (editable)",
        ["pip", "install", "--python", str(python), "--no-deps", "-e", str(repo_root())],
        logs / "env-shotbench.log",
    )
    warm_bytecode(name, python, logs / "env-warm.log")
    found = probe(python)
    problem = _verify(result, found)
    if problem:
        raise UserError(
            f"{name}: the new environment is wrong ({problem}); remove {path} and {result.root}, "
            "then run `make envs` again."
        )
    (path / STAMP).write_text(json.dumps({**stamp, "probe": found, "manifest": result.manifest}, indent=2))
    builder.say(name, f"environment ready in {time.monotonic() - started:.0f} s → {path}")
    return _info(name, result, found, "ready")


def _info(
    name: str, result: builder.BuildResult | None, found: dict | None, state: str, spec: BuildSpec | None = None
) -> EnvInfo:
    found = found or {}
    manifest = result.manifest if result else {}
    spec = spec or (result.spec if result else None)
    libs = found.get("libhdf5") or []
    return EnvInfo(
        name=name,
        hdf5_version=found.get("hdf5_version"),
        h5py_version=found.get("h5py_version"),
        ros3=found.get("ros3"),
        path=env_dir(name),
        cached=result is not None,
        state=state,
        expected_hdf5=manifest.get("hdf5_version") or (spec.hdf5_version if spec else None),
        description=manifest.get("description") or (spec.description if spec else ""),
        build_dir=result.root if result else None,
        libhdf5=libs[0] if libs else None,
    )


def build_envs(names: list[str] | None = None, force: bool = False, extra: Sequence[BuildSpec] = ()) -> list[EnvInfo]:
    """Build what is missing (in parallel: each build is mostly single-threaded), then envs."""
    known = all_specs()
    for spec in extra:
        known[spec.name] = spec
    wanted = list(names) if names else list(DEFAULT_ENVS)
    unknown = [n for n in wanted if n not in known and n not in WHEELS]
    if unknown:
        raise UserError(
            f"unknown build {unknown[0]!r} (known: {', '.join([*known, *WHEELS])}); pick one of those or add one with --name and --source."
        )
    chosen = [known[n] for n in wanted if n in known]
    todo = [s for s in chosen if force or builder.cached(s) is None]
    if todo:
        # Every build compiles with all cores: side by side they overcommit a little, which
        # keeps the cores busy through each build's serial steps (configure, cythonize, link).
        os.environ.setdefault("SHOTBENCH_BUILD_JOBS", str(os.cpu_count() or 1))
        print(
            f"building {', '.join(s.name for s in todo)} (side by side; see the README for what each costs cold)",
            flush=True,
        )
    reqs = requirements()
    results: dict[str, EnvInfo] = {}
    errors: list[UserError] = []

    def one(spec: BuildSpec) -> EnvInfo:
        result = builder.build(spec, force=force)
        return ensure_env(result, reqs, force=force)

    with cf.ThreadPoolExecutor(max_workers=max(1, len(wanted))) as pool:
        futures = {pool.submit(one, spec): spec.name for spec in chosen}
        futures.update({pool.submit(ensure_wheel_env, WHEELS[n], reqs, force): n for n in wanted if n not in known})
        for fut in cf.as_completed(futures):
            try:
                results[futures[fut]] = fut.result()
            except UserError as exc:
                errors.append(exc)
    if errors:
        for other in errors[1:]:
            print(f"shotbench: {other}", flush=True)
        raise errors[0]
    return [results[n] for n in wanted]


def list_envs() -> list[EnvInfo]:
    """Every known build and wheel with the versions its environment really loads."""
    known = all_specs()

    def one(spec: BuildSpec) -> EnvInfo:
        result = builder.cached(spec)
        python = env_dir(spec.name) / "bin" / "python"
        if not python.exists():
            return _info(spec.name, result, None, "missing", spec)
        found = probe(python)
        if "error" in found:
            return _info(spec.name, result, found, "broken", spec)
        if result is None or _verify(result, found) is not None:
            return _info(spec.name, result, found, "stale", spec)
        return _info(spec.name, result, found, "ready", spec)

    with cf.ThreadPoolExecutor(max_workers=max(1, len(known) + len(WHEELS))) as pool:
        builds = list(pool.map(one, known.values()))
        wheels = list(pool.map(wheel_info, WHEELS.values()))
    return builds + wheels


# ---------------------------------------------------------------- wheels (no compile)


def _wheel_stamp(spec: WheelSpec, reqs: str) -> dict:
    return {
        "wheel": spec.fingerprint(),
        "requirements_sha256": hashlib.sha256(reqs.encode()).hexdigest(),
        "repo": str(repo_root()),
        "bytecode": BYTECODE,
    }


def verify_wheel(spec: WheelSpec, path: Path, found: dict) -> str | None:
    """Why this interpreter is not the wheel it should be, or None if it is."""
    if "error" in found:
        return f"importing h5py failed: {found['error']}"
    if found.get("hdf5_version") != spec.hdf5_version:
        return f"h5py loads libhdf5 {found.get('hdf5_version')}, expected {spec.hdf5_version}"
    if found.get("h5py_version") != spec.h5py_version:
        return f"h5py is {found.get('h5py_version')}, expected {spec.h5py_version}"
    if not found.get("ros3"):
        return "h5py reports no ROS3 driver"
    libs = found.get("libhdf5") or []
    if not libs or not all(str(p).startswith(str(path.resolve())) or str(p).startswith(str(path)) for p in libs):
        return f"h5py loads {libs or 'no libhdf5'} instead of the one vendored in {path}"
    return None


def _wheel_info(spec: WheelSpec, found: dict | None, state: str) -> EnvInfo:
    found = found or {}
    libs = found.get("libhdf5") or []
    return EnvInfo(
        name=spec.name,
        hdf5_version=found.get("hdf5_version"),
        h5py_version=found.get("h5py_version"),
        ros3=found.get("ros3"),
        path=env_dir(spec.name),
        cached=True,
        state=state,
        expected_hdf5=spec.hdf5_version,
        description=spec.description,
        build_dir=None,
        libhdf5=libs[0] if libs else None,
    )


def wheel_info(spec: WheelSpec) -> EnvInfo:
    python = env_dir(spec.name) / "bin" / "python"
    if not python.exists():
        return _wheel_info(spec, None, "missing")
    found = probe(python)
    if "error" in found:
        return _wheel_info(spec, found, "broken")
    return _wheel_info(spec, found, "ready" if verify_wheel(spec, env_dir(spec.name), found) is None else "stale")


def ensure_wheel_env(spec: WheelSpec, reqs: str | None = None, force: bool = False) -> EnvInfo:
    """Make `.envs/<name>` hold the locked dependencies and this wheel, installed binary-only."""
    path = env_dir(spec.name)
    python = path / "bin" / "python"
    reqs = requirements() if reqs is None else reqs
    stamp = _wheel_stamp(spec, reqs)
    found = None if force else _current(path, stamp, lambda f: verify_wheel(spec, path, f))
    if found is not None:
        return _wheel_info(spec, found, "ready")
    logs = cache_dir() / "wheels" / spec.name / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    if path.exists():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    req_file = logs / "env-requirements.txt"
    req_file.write_text(reqs + spec.requirement() + "\n")
    _uv(spec.name, "create venv", ["venv", "--quiet", "--python", builder.PYTHON, str(path)], logs / "env-venv.log")
    _uv(
        spec.name,
        f"install dependencies + {spec.package} {spec.version} wheel (binary only)",
        ["pip", "install", "--python", str(python), "-r", str(req_file), "--only-binary", spec.package],
        logs / "env-install.log",
    )
    _uv(
        spec.name,
        "install shotbench (editable)",
        ["pip", "install", "--python", str(python), "--no-deps", "-e", str(repo_root())],
        logs / "env-shotbench.log",
    )
    warm_bytecode(spec.name, python, logs / "env-warm.log")
    found = probe(python)
    problem = verify_wheel(spec, path, found)
    if problem:
        raise UserError(
            f"{spec.name}: the new environment is wrong ({problem}); remove {path} and run `make envs` again."
        )
    (path / STAMP).write_text(json.dumps({**stamp, "probe": found}, indent=2))
    builder.say(spec.name, f"environment ready in {time.monotonic() - started:.0f} s → {path}")
    return _wheel_info(spec, found, "ready")
