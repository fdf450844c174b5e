"""Property tests of the input surface: `shotbench bench` arguments and TOML configs, valid and
invalid alike. Every generated input either reaches the planning step (`--dry-run`, in process,
no data, server or environment touched) or is refused with one sentence and exit 2. Never a
traceback, never a hang.

Bounded so that it fits in `make test` (SHOTBENCH_FUZZ_EXAMPLES per test, 300 by default: 600
inputs in all); `make fuzz` runs many more.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shotbench.plan.profiles import BenchConfig

EXAMPLES = int(os.environ.get("SHOTBENCH_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=EXAMPLES <= 300,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

SETTINGS = [f.replace("_", "-") for f in BenchConfig.__dataclass_fields__]
NAMES = ["ros3-1.14", "ros3-2.0", "ros3-2.2", "fsspec", "obstore", "download", "local", "raw-get", "h5coro", "nosuch"]

numbers = st.one_of(
    st.integers(-3, 70),
    st.sampled_from([0, -1, 2**31, 2**53 + 1, 10**30, -(10**30)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, 1e308]),
)
words = st.one_of(
    st.sampled_from(NAMES + ["default", "off", "shots", "signals", "partial-once", "quick", "full", ""]),
    st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=12),
)
scalars = st.one_of(numbers, words, st.booleans())
values = st.one_of(scalars, st.lists(scalars, max_size=5), st.dictionaries(words, scalars, max_size=3))


def _token(value: Any) -> str:
    """A scalar as a user would type it on the command line."""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _safe(token: str) -> bool:
    """argparse's own help (and its abbreviations) prints pages on purpose: not a bad input."""
    return not (token == "-h" or (token.startswith("--") and len(token) > 2 and "--help".startswith(token)))


OPTIONS = {
    "--backends": st.lists(st.sampled_from(NAMES), min_size=0, max_size=4),
    "--modes": st.lists(st.sampled_from(["shots", "signals", "partial-once", "partial-each", "bogus"]), max_size=3),
    "--workers": st.lists(
        st.one_of(st.integers(-2, 5), st.sampled_from(["x", "1.5", "nan", "inf", str(10**30), ""])), max_size=4
    ),
    "--page-buffers": st.lists(
        st.one_of(
            st.sampled_from(["0", "off", "default", "-5", "4096", "268435456", "1e9", "nan", str(2**60), str(10**40)]),
            words,
        ),
        max_size=3,
    ),
    "--block-caches": st.lists(
        st.sampled_from(["off", "default", "0", "-1", "16777216", "x", str(10**40)]), max_size=3
    ),
    "--chunk-cache": st.lists(st.one_of(st.integers(-5, 2**21), st.sampled_from(["x", str(10**40)])), max_size=3),
    "--trials": st.one_of(st.integers(-2, 4), st.sampled_from(["0", "x", str(10**12), "inf"])),
    "--seed": st.one_of(st.integers(-5, 10), st.sampled_from([str(2**70), "nan"])),
    "--signals-files": st.one_of(st.integers(-3, 10), st.just(str(10**20))),
    "--signals-names": st.one_of(st.integers(-3, 10), st.just("many")),
    "--shots": st.one_of(st.integers(-3, 30), st.just(str(10**25))),
    "--profile": st.sampled_from(["quick", "full", "layouts", "layouts-full", "nope"]),
    "--scheduler": st.sampled_from(["tcp://127.0.0.1:1", "nonsense", ""]),
}


@st.composite
def argvs(draw: st.DrawFn) -> list[str]:
    argv: list[str] = []
    for opt in draw(st.lists(st.sampled_from(sorted(OPTIONS)), max_size=6)):
        value = draw(OPTIONS[opt])
        argv += [opt, *map(_token, value)] if isinstance(value, list) else [opt, _token(value)]
    if draw(st.booleans()):
        argv += [t for t in draw(st.lists(words, max_size=2)) if _safe(t)]  # stray words, unknown flags
    return argv


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{json.dumps(str(k))} = {_toml_value(x)}" for k, x in v.items()) + "}"


@st.composite
def tomls(draw: st.DrawFn) -> str:
    keys = draw(st.lists(st.one_of(st.sampled_from(SETTINGS + ["profile", "wrokers", "options"]), words), max_size=5))
    lines = [f"{json.dumps(k)} = {_toml_value(draw(values))}" for k in keys]
    if keys and draw(st.booleans()):
        lines.append(lines[0])  # a key given twice
    if draw(st.booleans()):
        backend = draw(st.sampled_from(NAMES))
        lines.append(f"[options.{json.dumps(backend)}]")
        lines += [
            f"{json.dumps(k)} = {_toml_value(draw(scalars))}"
            for k in draw(
                st.lists(st.sampled_from(["block_size", "cache_type", "blok", "target"]), max_size=2, unique=True)
            )
        ]
    if draw(st.integers(0, 9)) == 0:
        lines.append(draw(st.text(max_size=20)))  # not TOML at all
    return "\n".join(lines) + "\n"


def run(argv: list[str], tmp: Path) -> tuple[int, str, str]:
    """`shotbench bench --dry-run …` in this process: exit status, stdout, stderr."""
    from shotbench.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(["bench", "--runs-dir", str(tmp / "runs"), *argv, "--dry-run"])
        except SystemExit as exc:  # argparse's refusals
            rc = exc.code if isinstance(exc.code, int) else 2
    return rc, out.getvalue(), err.getvalue()


def check(rc: int, out: str, err: str) -> None:
    assert "Traceback" not in err + out
    if rc == 0:
        assert "cases:" in out and "nothing was run" in out, out
        return
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("shotbench"), (rc, err)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz dir ü")


@FUZZ
@given(argv=argvs())
def test_every_command_line_plans_or_is_one_sentence(argv: list[str], tmp: Path) -> None:
    check(*run(argv, tmp))


@FUZZ
@given(
    text=tomls(),
    where=st.sampled_from(["file", "file", "file", "folder", "missing", "binary", "empty"]),
    name=st.sampled_from(["c.toml", "a b.toml", "ü é.toml", "dir with space/x.toml"]),
    argv=argvs(),
)
def test_every_config_file_plans_or_is_one_sentence(
    text: str, where: str, name: str, argv: list[str], tmp: Path
) -> None:
    path = tmp / "configs" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if where == "folder":
        path = path.parent
    elif where == "missing":
        path = path.with_name("missing " + path.name)
    elif where == "binary":
        path.write_bytes(b"\xff\xfe\x00" + text.encode()[:50])
    else:
        path.write_text("" if where == "empty" else text, encoding="utf-8")
    check(*run(["--config", str(path), *argv[:4]], tmp))


def test_resume_paths_plan_or_are_one_sentence(tmp: Path) -> None:
    """`--resume` of folders that are not runs, runs with damaged settings, and odd paths."""
    run_dir = tmp / "runs" / "20260101T000000Z-odd ü"
    run_dir.mkdir(parents=True, exist_ok=True)
    for meta in (
        '{"config": {"bench": {"workers": "x"}}}',
        '{"config": {"bench": [1]}}',
        "[]",
        "{",
        json.dumps({"run_id": "x", "config": {"bench": BenchConfig().to_dict(), "data": None, "network": "none"}}),
    ):
        (run_dir / "run.json").write_text(meta)
        check(*run(["--resume", str(run_dir)], tmp))
    for path in [tmp / "nope", tmp, tmp / ("x" * 5000), Path("/proc/self/status")]:
        check(*run(["--resume", str(path)], tmp))
