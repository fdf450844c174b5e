"""`shotbench doctor` and `make doctor` judge the settings `bench` (`make bench-ros3`) would be given,
and refuse what bench refuses, in one sentence, before any probe."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from support.incli import run_cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--config", "{tmp}/nonexistent.toml"], ["nonexistent.toml", "does not exist", "--config"]),
        (["--trials", "-1"], ["trials must be at least 1"]),
        (["--faults", "bogus"], ["unknown fault profile 'bogus'"]),
        (["--faults", "http-flaky-5pc", "--tls"], ["plain-HTTP proxy", "drop --tls"]),
        (["--config", "{tmp}/dotted.toml"], ['[options."ros3-2.0"]']),
    ],
    ids=["missing config", "trials -1", "faults", "tls+http faults", "bad config"],
)
def test_doctor_refuses_what_bench_refuses(tmp_path: Path, args: list[str], words: list[str]) -> None:
    """`make doctor CONFIG=/nonexistent` and `TRIALS=-1` said "no problems found" for the default plan."""
    (tmp_path / "dotted.toml").write_text("[options.ros3-2.0]\n")
    code, err = run_cli(["doctor", *(a.format(tmp=tmp_path) for a in args)])
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("shotbench: "), err
    assert all(w in lines[0] for w in words), lines[0]


def test_doctor_judges_the_plan_and_network_of_the_settings_given(tmp_path: Path) -> None:
    from shotbench.cli import build_parser
    from shotbench.commands import doctor

    (tmp_path / "c.toml").write_text('backends = ["local", "fsspec"]\nworkers = [1]\n')
    args = build_parser("doctor").parse_args(
        ["doctor", "--config", str(tmp_path / "c.toml"), "--trials", "3", "--faults", "flaky-5pc"]
    )
    cfg, network = doctor._settings(args)
    assert (cfg.backends, cfg.workers, cfg.trials, network) == (["local", "fsspec"], [1], 3, "flaky-5pc")


def _recipe_line(makefile: str, name: str) -> str:
    """A Makefile variable's value or a target's recipe, continuation lines joined."""
    joined = makefile.replace("\\\n", " ")
    if match := re.search(rf"^{re.escape(name)} = (.*)$", joined, re.M):
        return match.group(1)
    match = re.search(rf"^{re.escape(name)}:.*\n\t(.*)$", joined, re.M)
    assert match, name
    return match.group(1)


def test_make_doctor_passes_every_setting_make_bench_ros3_passes() -> None:
    """`make doctor` passed DATA, PROFILE, NETWORK and ANONYMOUS, not CONFIG, TRIALS, FAULTS or HTTP,
    though its screen says what `make bench-ros3` would use."""
    from shotbench.cli import build_parser

    makefile = (ROOT / "Makefile").read_text()
    bench, doctor = _recipe_line(makefile, "bench_args"), _recipe_line(makefile, "doctor")
    variables = set(re.findall(r"\$\(([A-Z]+)\)", bench))
    assert {"CONFIG", "TRIALS", "FAULTS", "HTTP"} <= variables
    assert variables <= set(re.findall(r"\$\(([A-Z]+)\)", doctor)) - {"SB"}
    sub = next(a for a in build_parser("doctor")._actions if isinstance(a, argparse._SubParsersAction))
    flags = {o for a in sub.choices["doctor"]._actions for o in a.option_strings}
    assert set(re.findall(r"(--[a-z-]+)", doctor)) <= flags  # every flag the recipe passes is one doctor takes


def test_doctor_names_an_s3_colon_slash_typo() -> None:
    """`doctor --data s3:/bucket/x` said the local folder …/s3:/bucket/x does not exist."""
    from shotbench.bench import diagnosis

    facts = {
        "data": "s3:/bucket/x", "endpoint": "AWS S3", "region": "us-east-1", "region_from": "AWS_REGION",
        "credentials": {"source": "env"}, "builds": {}, "network": "none",
        "instance": {"on_ec2": False, "region": ""}, "plan": {"seconds": 60},
    }  # fmt: skip
    assert any("did you mean s3://bucket/x?" in p for p in diagnosis.problems(facts))
