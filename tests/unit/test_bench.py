"""`shotbench bench` refuses before it starts, and `--dry-run` refuses what a run would: in this
process, with `--dry-run` (no server, build, Dask or network), each refusal one sentence, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shotbench.plan.profiles import BenchConfig, load
from support.bench import assert_one_sentence, refuse
from support.incli import run_cli

SMALL = ["--backends", "local", "fsspec", "--workers", "1"]


def dry(args: list[str], tmp_path: Path) -> tuple[int, str]:
    """`shotbench bench --dry-run ARGS` in this process: exit code and what it printed (stdout, then stderr)."""
    proc = refuse([*args, "--dry-run"], tmp_path)
    return proc.returncode, proc.stdout + proc.stderr


def config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--network", "bogus"], ["unknown network profile 'bogus'"]),
        (["--faults", "bogus"], ["unknown fault profile 'bogus'"]),
        (["--tls", "--faults", "http-flaky-5pc"], ["plain-HTTP proxy", "drop --tls"]),
        (["--anonymous"], ["--anonymous", "--data s3://bucket/prefix"]),
        (["--data", "s3://"], ["does not name a valid bucket"]),
        (["--data", "s3:/bucket"], ["did you mean s3://bucket?"]),
        (["--data", "{tmp}/nonexist"], ["does not exist"]),
        (["--data", "s3://bucket/p", "--network", "latency-20ms"], ["embedded server only", "drop --network"]),
        (["--scheduler", "garbage"], ["--scheduler 'garbage' is not a scheduler address", "tcp://HOST:PORT"]),
        (["--shots-dir", "{tmp}/afile"], ["is a file", "--shots-dir"]),
    ],
    ids=[
        "network",
        "faults",
        "tls+http faults",
        "anonymous alone",
        "s3:// empty",
        "s3:/ typo",
        "missing folder",
        "network+data",
        "scheduler",
        "shots-dir a file",
    ],  # fmt: skip
)
def test_dry_run_refuses_what_a_run_refuses(tmp_path: Path, args: list[str], words: list[str]) -> None:
    """Each of these planned "N cases … nothing was run" and exited 0; the run refused them."""
    (tmp_path / "afile").write_text("x")
    proc = refuse([*(a.format(tmp=tmp_path) for a in args), *SMALL, "--dry-run"], tmp_path)
    assert_one_sentence(proc, tmp_path, *words)
    assert "nothing was run" not in proc.stdout


def test_dry_run_still_plans_what_a_run_would_run(tmp_path: Path) -> None:
    code, out = dry([*SMALL, "--shots-dir", str(tmp_path / "shots")], tmp_path)
    assert code == 0 and "nothing was run" in out, out
    assert not (tmp_path / "shots").exists()  # checked, not made


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("file_size = 1\n", ["file_size = 1", "multiple of page_size", "in the config"]),
        ("page_size = 100\n", ["page_size = 100", "4096", "in the config"]),
        ("file_size = 65536\npage_size = 4096\n", ["file_size = 65536", "too few for 61 signals"]),
        ("signals = 100\n", ["signals = 100", "61"]),
    ],
    ids=["file_size 1", "page_size 100", "file too small for its signals", "signals 100"],
)
def test_file_shape_is_checked_with_the_config_by_its_toml_key(tmp_path: Path, text: str, words: list[str]) -> None:
    """A file_size synth cannot make was refused only once shot files were being made, naming
    synth's --file-size, a flag bench does not have."""
    proc = refuse(["--config", config(tmp_path, text), *SMALL, "--dry-run"], tmp_path)
    assert_one_sentence(proc, tmp_path, *words)
    assert "--file-size" not in proc.stderr and "--page-size" not in proc.stderr


def test_shots_beyond_the_free_disk_are_refused_before_any_file_is_made(tmp_path: Path) -> None:
    shots = tmp_path / "shots"
    args = ["--config", config(tmp_path, "shots = 100000000\n"), "--shots-dir", str(shots), *SMALL, "--dry-run"]
    proc = refuse(args, tmp_path)
    assert_one_sentence(proc, tmp_path, "100000000 synthetic shot files", "is free", "fewer shots")
    assert not shots.exists()


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ("[options.ros3-2.0]\n", ['[options."ros3-2.0"]', "quoted"]),
        ("[options.ros3-2.0-zlibng]\nx = 1\n", ['[options."ros3-2.0-zlibng"]', "quoted"]),
        ("[options.ros3-2.9]\n", ["'ros3-2'", "quote", '[options."ros3-2.0"]']),
    ],
    ids=["ros3-2.0", "ros3-2.0-zlibng", "no such version"],
)
def test_an_unquoted_dotted_backend_table_says_to_quote_it(tmp_path: Path, table: str, words: list[str]) -> None:
    """TOML splits [options.ros3-2.0] at its dots: the message was "unknown backend 'ros3-2'"."""
    proc = refuse(["--config", config(tmp_path, table), *SMALL, "--dry-run"], tmp_path)
    assert_one_sentence(proc, tmp_path, *words)


def test_a_quoted_backend_table_still_loads(tmp_path: Path) -> None:
    cfg = load(config=Path(config(tmp_path, '[options."ros3-2.0"]\n')))
    assert cfg.options == {"ros3-2.0": {}}


def test_ls_reads_s3_colon_slash_as_a_typo(tmp_path: Path) -> None:
    """`s3:/bucket/prefix` was a local folder that does not exist, "make shot files with synth"."""
    code, err = run_cli(["ls", "s3:/bucket/prefix"])
    assert code == 2 and "did you mean s3://bucket/prefix?" in err and "synth" not in err, err
    from shotbench.store.s3 import parse_location

    (tmp_path / "s3:").mkdir()  # a folder really named so is still a folder
    assert parse_location(str(tmp_path / "s3:")).kind == "local"


def resumable(tmp_path: Path, cfg: BenchConfig, **settings: object) -> Path:
    """A run folder `--resume` accepts: run.json with the settings the run was started with."""
    run = tmp_path / "20260101T000000Z-abcdef"
    run.mkdir()
    bench = {"data": None, "network": "none", "shots_dir": str(tmp_path / "shots"), **settings}
    meta = {"run_id": run.name, "config": {"bench": cfg.to_dict(), "profile": cfg.profile, **bench}}
    (run / "run.json").write_text(json.dumps(meta))
    return run


def test_resume_refuses_flags_that_would_change_the_plan(tmp_path: Path) -> None:
    """`--resume RUN --workers 4 --trials 9 --backends local` resumed RUN as planned, the flags ignored."""
    run = resumable(tmp_path, load("quick", overrides={"backends": ["local", "fsspec"], "workers": [1]}))
    proc = refuse(
        ["--resume", str(run), "--workers", "4", "--trials", "9", "--backends", "local", "--dry-run"], tmp_path
    )
    assert_one_sentence(proc, tmp_path, "as it was planned", "--backends", "--trials", "--workers", "new run")
    proc = refuse(["--resume", str(run), "--profile", "full", "--dry-run"], tmp_path)
    assert_one_sentence(proc, tmp_path, "--profile")


def test_resume_accepts_the_command_that_started_the_run_again(tmp_path: Path) -> None:
    """A command repeated with --resume (up-arrow) names the plan it has: not a change."""
    toml = config(tmp_path, 'trials = 1\npage_buffers = [0, "default"]\n[options.fsspec]\nblock_size = 5242880\n')
    args = ["--profile", "quick", "--config", toml, "--backends", "local", "fsspec", "--workers", "1"]
    overrides = {"backends": ["local", "fsspec"], "workers": [1]}
    run = resumable(tmp_path, load("quick", Path(toml), overrides))
    code, out = dry([*args, "--resume", str(run)], tmp_path)
    assert code == 0 and "nothing was run" in out, out
    changed = config(tmp_path, "trials = 3\n")
    proc = refuse([*args[:2], "--config", changed, "--resume", str(run), "--dry-run"], tmp_path)
    assert_one_sentence(proc, tmp_path, "trials", "as it was planned")


def test_resume_of_a_transfer_run_names_the_transfer_command(tmp_path: Path) -> None:
    """A transfer run folder was "run.json is damaged or incomplete"."""
    run = tmp_path / "20261126T200633Z-a21b0c"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"run_id": run.name, "kind": "transfer", "plan": {"rows": []}}))
    proc = refuse(["--resume", str(run), "--dry-run"], tmp_path)
    assert_one_sentence(proc, tmp_path, "transfer run", f"shotbench transfer --resume {run}")
    assert "damaged" not in proc.stderr


def test_dry_run_of_a_resume_checks_the_run_it_resumes(tmp_path: Path) -> None:
    """The resumed run's own settings go through the same checks: a local data folder gone since."""
    cfg = load("quick", overrides={"backends": ["local"], "workers": [1]})
    run = resumable(tmp_path, cfg, data=str(tmp_path / "gone"))
    proc = refuse(["--resume", str(run), "--dry-run"], tmp_path)
    assert_one_sentence(proc, tmp_path, "gone", "does not exist")


def test_dry_run_refuses_a_runs_folder_a_run_could_not_make(tmp_path: Path) -> None:
    """`--dry-run --runs-dir FILE` said "nothing was run", where the run refuses at once."""
    (tmp_path / "afile").write_text("")
    for runs in (tmp_path / "afile", tmp_path / "afile" / "x"):
        proc = run_cli(["bench", "--dry-run", "--runs-dir", str(runs), *SMALL])
        assert proc[0] == 2 and f"({tmp_path / 'afile'} is a file)" in proc[1], proc
    assert not (tmp_path / "runs").exists()
