"""Inputs named twice or too long, and messages that must name the real cause. Each
test is the exact input a user gave, the one sentence it must end in, and its exit status.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shotbench.store.s3 import without_s3_settings
from support.filerights import without_file_rights, without_low_ports
from support.incli import completed

FIXTURE_RUN = Path(__file__).parents[1] / "data" / "run-fixture"
LONG_NAME = "/tmp/" + "a" * 5000  # one name far over NAME_MAX
LONG_PATH = "/tmp/" + "/".join(["b" * 100] * 50)  # short names, the whole over PATH_MAX


def cli(
    args: list[str], tmp_path: Path, timeout: float = 120, prefix: tuple[str, ...] | list[str] = ()
) -> subprocess.CompletedProcess[str]:
    """`shotbench ARGS` as a user's shell runs it (`prefix`: a command it runs under, like setpriv)."""
    env = {**without_s3_settings(), "SHOTBENCH_STATE": str(tmp_path / "state")}
    return subprocess.run(
        [*prefix, sys.executable, "-m", "shotbench.cli", *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def one_sentence(done: subprocess.CompletedProcess[str], *words: str, code: int = 2) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == code, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("shotbench: ") and lines[0].endswith("."), done.stderr
    assert len(lines[0]) < 400, lines[0]  # a path of 5,000 characters is shortened, not echoed
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


@pytest.mark.parametrize(
    "runs",
    [[str(FIXTURE_RUN), str(FIXTURE_RUN)], [str(FIXTURE_RUN), str(FIXTURE_RUN) + "/"]],
    ids=["same spelling", "trailing slash"],
)
def test_repeat_with_the_same_run_twice(runs: list[str], tmp_path: Path) -> None:
    done = completed(["repeat", "--runs", *runs, "--baseline", "others", "--output", str(tmp_path / "out")])
    one_sentence(done, "--runs", "twice")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # bench makes any missing backend environment before it reads --data
@pytest.mark.parametrize("path", [LONG_NAME, LONG_PATH], ids=["5000-character name", "5000-character path"])
def test_a_local_data_path_too_long(path: str, tmp_path: Path) -> None:
    done = cli(["bench", "--data", path, "--backends", "local", "--runs-dir", str(tmp_path / "runs")], tmp_path)
    one_sentence(done, "data folder", "shorter path")


def test_an_unknown_network_is_refused_before_any_shot_file_is_made(tmp_path: Path) -> None:
    """A typo in --network once made the 24 default shot files first, then was named."""
    shots = tmp_path / "shots"
    done = cli(["bench", "--network", "s3-same-regoin", "--shots-dir", str(shots)], tmp_path)
    one_sentence(done, "unknown network profile 's3-same-regoin'", "s3-same-region")
    assert not shots.exists() and not (tmp_path / "state").exists()


@pytest.mark.parametrize("flag", ["--runs-dir", "--resume"])
def test_other_paths_too_long(flag: str, tmp_path: Path) -> None:
    args = ["bench", flag, LONG_NAME] + (["--data", str(tmp_path)] if flag == "--runs-dir" else [])
    done = cli(args, tmp_path)
    one_sentence(done)


def test_report_output_too_long(tmp_path: Path) -> None:
    done = completed(["report", "--run", str(FIXTURE_RUN), "--output", LONG_NAME])
    one_sentence(done, "shorter path")


def test_check_path_names_the_input() -> None:
    from shotbench.diskspace import check_path
    from shotbench.errors import UserError

    with pytest.raises(UserError, match="data folder .* name of 5000 bytes"):
        check_path(LONG_NAME, "data folder")
    with pytest.raises(UserError, match="longer than the 4096 bytes"):
        check_path(LONG_PATH, "data folder")
    check_path("/tmp/" + "c" * 200, "data folder")  # long but legal: no refusal


def test_a_percent_in_a_key_is_named_as_such() -> None:
    """`%` was refused for "spaces or non-ASCII"."""
    from shotbench.bench.keycheck import describe_encoded

    assert describe_encoded("shots/100%.h5") == "the character '%'"
    assert describe_encoded("shots/a b é.h5") == "the characters a space, non-ASCII 'é'"


@pytest.mark.parametrize(
    ("code", "words", "not_words"),
    [
        ("InvalidToken", ["not accept the AWS session token", "AWS_SESSION_TOKEN"], ["expired"]),
        ("ExpiredToken", ["expired"], []),
    ],
)
def test_session_token_messages_name_the_real_cause(code: str, words: list[str], not_words: list[str]) -> None:
    from botocore.exceptions import ClientError

    from shotbench.store.s3 import S3Config, explain, parse_location

    exc = ClientError(
        {
            "Error": {"Code": code, "Message": "x"},
            "ResponseMetadata": {"HTTPStatusCode": 400, "HTTPHeaders": {"x-amz-request-id": "1"}},
        },
        "ListObjectsV2",
    )
    text = str(explain(exc, parse_location("s3://bkt/shots/"), S3Config(endpoint_url="http://127.0.0.1:1")))
    assert all(w in text for w in words) and not any(w in text for w in not_words), text


def test_a_toml_only_setting_is_named_by_its_toml_key(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("task_timeout = -1\n")
    done = cli(["bench", "--config", str(cfg), "--dry-run"], tmp_path)
    line = one_sentence(done, "task_timeout")
    assert "task-timeout" not in line


def test_settings_named_for_the_command_line_are_its_flags() -> None:
    """profiles.COMMAND_LINE must match the flags `shotbench bench` takes."""
    from shotbench.cli import build_parser
    from shotbench.plan.profiles import COMMAND_LINE, BenchConfig

    parser = build_parser("bench")
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    flags = {o for a in sub.choices["bench"]._actions for o in a.option_strings}
    fields = {f for f in BenchConfig.__dataclass_fields__}
    has_flag = {f for f in fields if f"--{f.replace('_', '-')}" in flags} | ({"chunk_caches"} & fields)
    assert has_flag == set(COMMAND_LINE)


@pytest.mark.slow
def test_bench_data_finds_a_running_servers_credentials(shot_dir: Path, tmp_path: Path) -> None:
    """`stage` found a running `shotbench server start` server's credentials by itself; `bench
    --data` said "no AWS credentials". Now both do."""
    try:
        assert cli(["server", "start"], tmp_path, timeout=180).returncode == 0
        staged = cli(["stage", str(shot_dir), "s3://found/shots/"], tmp_path, timeout=180)
        assert staged.returncode == 0, staged.stderr
        args = ["--backends", "obstore", "--modes", "shots", "--workers", "1", "--trials", "1"]
        done = cli(["bench", "--data", "s3://found/shots/", "--runs-dir", str(tmp_path / "runs"), *args], tmp_path, 600)
        assert done.returncode == 0, done.stderr
        assert "credentials" not in done.stderr
    finally:
        cli(["server", "stop"], tmp_path, timeout=60)


def test_compare_with_a_run_pooled_twice(tmp_path: Path) -> None:
    """`compare A,A B` pooled A's tasks twice, halving its interval for nothing."""
    pooled = f"{FIXTURE_RUN},{FIXTURE_RUN}/"
    done = completed(["compare", pooled, str(FIXTURE_RUN), "--output", str(tmp_path / "out")])
    one_sentence(done, "side A", "twice")
    assert not (tmp_path / "out").exists()


def test_compare_with_the_same_run_on_both_sides(tmp_path: Path) -> None:
    """`compare A A` wrote a report of a run against itself, every case "no change"."""
    done = completed(["compare", str(FIXTURE_RUN), f"{FIXTURE_RUN}/", "--output", str(tmp_path / "out")])
    one_sentence(done, "on both sides")
    assert not (tmp_path / "out").exists()
    done = completed(
        ["compare", "ros3-1.14", "ros3-1.14", "--run", str(FIXTURE_RUN), "--output", str(tmp_path / "out")]
    )
    one_sentence(done, "both A and B")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("port", ["99999", "-1", "nine"])
def test_server_start_with_a_port_that_is_not_one(port: str, tmp_path: Path) -> None:
    """A port above 65535 reached versitygw, and its bind error was the message."""
    done = cli(["server", "start", "--port", port], tmp_path)
    assert done.returncode == 2 and "is not a TCP port; give 1-65535" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "state").exists()


@pytest.mark.slow
@pytest.mark.server
def test_server_start_on_a_port_in_use_says_so(tmp_path: Path) -> None:
    """versitygw's bind error, with its log lines, was the message."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = cli(["server", "start", "--port", str(port)], tmp_path, timeout=300)
    one_sentence(done, f"port {port} is already in use", "another --port")
    assert "is not running" in cli(["server", "status"], tmp_path).stdout


@pytest.mark.slow
@pytest.mark.server
def test_server_start_on_a_port_this_user_may_not_bind_says_so(tmp_path: Path) -> None:
    """`--port 81` as a user said the port was in use: versitygw's log is appended to, and an
    earlier start's "address already in use" was taken for this start's "bind: permission denied"."""
    import socket

    prefix, low = without_low_ports()
    with socket.socket() as taken:  # an earlier start in the same state folder, refused a taken port
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        cli(["server", "start", "--port", str(taken.getsockname()[1])], tmp_path, timeout=300)
    done = cli(["server", "start", "--port", str(low)], tmp_path, timeout=300, prefix=prefix)
    said = one_sentence(done, f"may not listen on port {low}", "permission denied", "--port")
    assert "in use" not in said, said
    assert "is not running" in cli(["server", "status"], tmp_path).stdout


def test_synth_into_a_folder_it_cannot_write_says_so_before_the_space(tmp_path: Path) -> None:
    """A folder this user cannot write, asked for more than its disk holds, was a lack of space."""
    out = tmp_path / "locked"
    out.mkdir(mode=0o555)
    done = cli(["synth", "--out", str(out), "--shots", "1000000"], tmp_path, prefix=without_file_rights([]))
    one_sentence(done, f"cannot write to {out}", "may not make files there", "writable --out folder")


def _make(*args: str) -> subprocess.CompletedProcess[str]:
    """`make -n ARGS` in the checkout as a user's shell runs it: not as the sub-make of `make test`."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    root = Path(__file__).parents[2]
    return subprocess.run(["make", "-n", *args], cwd=root, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("setting", "flag", "given"),
    [("HTTP=1", "--no-tls", True), ("HTTP=0", "--no-tls", False), ("ANONYMOUS=no", "--anonymous", False)],
)
def test_a_make_switch_set_to_0_is_off(setting: str, flag: str, given: bool) -> None:
    """`make bench-ros3 HTTP=0` ran over plain http: any value turned a switch on."""
    done = _make("bench-ros3", setting)
    (line,) = [ln for ln in done.stdout.splitlines() if " bench --profile" in ln]
    assert (flag in line.split()) == given, line


def test_a_make_switch_with_another_value_stops_make_before_any_build() -> None:
    done = _make("bench-ros3", "HTTP=maybe")
    assert done.returncode == 2 and done.stdout == ""
    assert "HTTP=maybe is not a switch; write HTTP=1 to turn it on, or leave it out." in done.stderr


ODD = "my run's --output /tmp/x"  # a space, a quote and a flag of its own: one argument all the same
BENCH = ["--profile", ODD, "--network", ODD, "--data", ODD, "--config", ODD]


@pytest.mark.parametrize(
    ("target", "settings", "argv"),
    [
        ("report", ["RUN"], ["report", "--run", ODD]),
        ("compare", ["A", "B", "THRESHOLD"], ["compare", ODD, ODD, "--threshold", ODD]),
        (
            "bench-ros3",
            ["PROFILE", "NETWORK", "DATA", "CONFIG", "FAULTS", "TRIALS"],
            ["bench", *BENCH, "--faults", ODD, "--keep-going", "--trials", ODD],
        ),
        (
            "doctor",
            ["PROFILE", "NETWORK", "DATA", "CONFIG", "FAULTS", "TRIALS"],
            [
                "doctor",
                "--profile",
                ODD,
                "--data",
                ODD,
                "--network",
                ODD,
                "--config",
                ODD,
                "--faults",
                ODD,
                "--trials",
                ODD,
            ],
        ),
        ("bench-repeat", ["N", "PROFILE", "NETWORK", "DATA", "CONFIG"], ["repeat", "--times", ODD, "--", *BENCH]),
        ("bench-direction", ["TRIALS"], ["direction", "--trials", ODD]),
        ("bench-readers", ["NETWORK"], ["bench", "--profile", "readers", "--network", ODD]),
        ("bench-harness", ["DATA"], ["bench-harness", "--data", ODD]),
        ("anatomy", ["DATA"], ["anatomy", "--data", ODD]),
        ("bench-transfer", ["PROFILE", "DATA"], ["transfer", "--profile", ODD, "--data", ODD]),
        ("bench-chaos", ["PROFILE", "CONFIG"], ["chaos", "--profile", ODD, "--config", ODD]),
        ("synth", ["SHOTS"], ["synth", "--out", "data/shots", "--shots", ODD]),
    ],
)
def test_a_make_variable_reaches_shotbench_as_one_argument(
    target: str, settings: list[str], argv: list[str], tmp_path: Path
) -> None:
    """`make report RUN="data/runs/my run"` split the path, and THRESHOLD="1.1 --output x" passed
    `--output` to compare. The recipe lines `make -n` prints are run by bash as make runs them, with
    shotbench replaced by a program that prints the arguments it was given."""
    printer = tmp_path / "printargs"
    printer.write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    printer.chmod(0o755)
    done = _make(target, f"SB={printer}", *(f"{name}={ODD}" for name in settings))
    assert done.returncode == 0, done.stderr
    lines = [ln for ln in done.stdout.replace("\\\n", "").splitlines() if ln.startswith(f"{printer} {argv[0]} ")]
    runs = [subprocess.run(["bash", "-c", ln], capture_output=True, text=True, timeout=60, check=True) for ln in lines]
    given = [json.loads(run.stdout) for run in runs]
    assert argv in given, given


def test_compare_against_an_unfinished_run_does_not_pass(tmp_path: Path) -> None:
    """B stopped by Ctrl-C after 3 cases: the cases it never measured passed the gate unseen (exit 0).
    An unfinished A only narrows what is compared, and says so."""
    from support.runfolder import interrupted_copy

    stopped = interrupted_copy(FIXTURE_RUN, tmp_path / "b", keep=3)
    done = completed(["compare", str(FIXTURE_RUN), str(stopped), "--output", str(tmp_path / "out")])
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"FAIL unfinished: `{stopped.name}` was interrupted with 3 of its" in done.stdout
    assert f"`shotbench bench --resume {stopped}`" in done.stdout
    done = completed(["compare", str(stopped), str(FIXTURE_RUN), "--output", str(tmp_path / "out2")])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "note: A's run" in done.stdout and "FAIL" not in done.stdout


def test_a_reader_that_stops_early_ends_the_output_without_a_traceback(s3_server) -> None:
    """`shotbench server status | head -1`: head leaves after one line, and the next line's write
    fails. The command stops there, as a Unix tool does (128 + SIGPIPE), with nothing on stderr."""
    env = {**without_s3_settings(), "SHOTBENCH_STATE": str(s3_server.state)}
    env.pop("PYTHONUNBUFFERED", None)  # stdout block-buffered, as in a user's shell: the write fails at the flush
    proc = subprocess.Popen(
        [sys.executable, "-m", "shotbench.cli", "server", "status"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first line is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141, err
    assert err == "", err
