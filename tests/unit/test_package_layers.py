"""The package's shape: imports point down the layers declared in pyproject.toml, and nothing cycles.

import-linter keeps the contracts; its graph (grimp) sees every import statement, including one
inside a function body, so an upward import hidden there to dodge a start-up error is caught too.
These tests show the contracts hold on the real tree and break on a copy given one bad import.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """Run the contracts of root/pyproject.toml against the package under root/scripts."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root / "scripts"), "HOME": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(root / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def copy_with(tmp_path: Path, module: str, code: str) -> Path:
    """A copy of the package with `code` appended to `module` (a path under scripts/shotbench)."""
    shutil.copytree(
        ROOT / "scripts" / "shotbench", tmp_path / "scripts" / "shotbench", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "scripts" / "shotbench" / module
    target.write_text(target.read_text() + "\n\n" + code)
    return tmp_path


def test_the_graph_sees_the_package() -> None:
    graph = grimp.build_graph("shotbench", cache_dir=None)
    assert graph.direct_import_exists(importer="shotbench.bench.driver", imported="shotbench.bench.worker")
    assert "shotbench.hdf5.shotfile" in graph.modules


def test_the_tree_keeps_every_contract() -> None:
    proc = lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Contracts: 2 kept, 0 broken." in proc.stdout


def test_an_upward_import_inside_a_function_breaks_the_layers(tmp_path: Path) -> None:
    root = copy_with(
        tmp_path,
        "hdf5/shotfile.py",
        "def _sneaky() -> object:\n    from shotbench.bench import runner\n\n    return runner\n",
    )
    proc = lint_imports(root)
    assert proc.returncode != 0
    assert "layers: top imports bottom, never the reverse BROKEN" in proc.stdout
    assert "shotbench.hdf5 is not allowed to import shotbench.bench" in proc.stdout
    assert "shotbench.hdf5.shotfile -> shotbench.bench.runner" in proc.stdout


def test_a_cycle_within_one_layer_breaks_the_acyclic_contract(tmp_path: Path) -> None:
    # runner imports checksums; checksums importing runner back stays inside read/, which the
    # layers contract allows, so only the cycle contract can catch it
    root = copy_with(
        tmp_path,
        "bench/checksums.py",
        "def _back() -> object:\n    from shotbench.bench import runner\n\n    return runner\n",
    )
    proc = lint_imports(root)
    assert proc.returncode != 0
    assert "layers: top imports bottom, never the reverse KEPT" in proc.stdout
    assert "no cycles among the siblings of any package BROKEN" in proc.stdout
    assert "No cycles are allowed in shotbench.bench." in proc.stdout


def test_no_two_modules_share_a_base_name() -> None:
    """A name in a traceback, a search or a review names one file (`__init__.py` aside)."""
    seen: dict[str, list[str]] = {}
    for path in sorted((ROOT / "scripts" / "shotbench").rglob("*.py")):
        if path.name != "__init__.py":
            seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}


def test_only_commands_parse_arguments() -> None:
    """Below `commands/` the library takes typed values; only the entry point and commands use argparse."""
    package = ROOT / "scripts" / "shotbench"
    users = {
        str(p.relative_to(package))
        for p in package.rglob("*.py")
        if "argparse" in p.read_text() and p.parent.name != "commands"
    }
    assert users == {"cli.py"}
