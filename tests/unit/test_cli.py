"""The command table and the modules that register subcommands must agree."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from shotbench import cli
from support.runfolder import as_in_a_terminal


def registered(command: str | None) -> set[str]:
    parser = cli.build_parser(command)
    sub = next(a for a in parser._actions if a.dest == "command")
    return set(sub.choices)


def test_full_parser_registers_exactly_the_table() -> None:
    assert registered(None) == set(cli.COMMANDS)


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_each_command_is_registered_by_its_module(command: str) -> None:
    assert command in registered(command)


def test_light_commands_do_not_import_pandas() -> None:
    code = (
        "import sys; from shotbench import cli; cli.build_parser('server');"
        "sys.exit(1 if 'pandas' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_unknown_command_is_one_usage_error() -> None:
    from support.incli import completed

    proc = completed(["no-such-command"])
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr and "Traceback" not in proc.stderr


def test_the_command_line_starts_without_pandas_or_scipy() -> None:
    """Every refusal and every `--help` costs a process start: with scipy.stats imported up front
    it took 4.7 s instead of 0.3 s, and a user's typo waited for it."""
    code = (
        "import sys\n"
        "from shotbench.cli import build_parser\n"
        "for command in ('bench', 'compare', 'repeat', 'server', 'envs'):\n"
        "    build_parser(command)\n"
        "heavy = sorted(m for m in ('pandas', 'scipy', 'scipy.stats') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "", f"the parser imported {out.stdout.strip()}"


def test_server_install_builds_the_server_alone_unless_all_is_asked(
    monkeypatch: pytest.MonkeyPatch, tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default run needs versitygw only; toxiproxy (network and fault profiles) is built on
    first use, or up front with --all (what `make test` asks for)."""
    from shotbench import gobuild

    built: list[str] = []

    def fake(name: str):
        def build():
            built.append(name)
            return tmp_path / name

        return build

    for name in ("versitygw", "toxiproxy_server", "toxiproxy_cli"):
        monkeypatch.setattr(gobuild, name, fake(name))
    assert cli.main(["server", "install"]) == 0
    assert built == ["versitygw"]
    built.clear()
    assert cli.main(["server", "install", "--all"]) == 0
    assert built == ["versitygw", "toxiproxy_server", "toxiproxy_cli"]


@pytest.mark.parametrize(
    "argv",
    [
        ["site", "--output", ""],
        ["bench", "--dry-run", "--runs-dir", ""],
        ["compare", "a", "b", "--output", " "],
        ["synth", "--shots", "1", "--out", ""],
    ],
    ids=["site", "bench", "compare", "synth"],
)
def test_an_empty_path_option_is_refused_not_read_as_the_current_folder(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`site --output ""` rebuilt the checkout's site/, `synth --out ""` wrote into the current folder."""
    from support.incli import one_line

    monkeypatch.chdir(tmp_path)  # where a regression would write

    code, line = one_line(argv)
    flag = argv[argv.index(next(a for a in argv if a.startswith("--") and a != "--dry-run" and a != "--shots"))]
    assert code == 2 and f"{flag} is empty text" in line


SIGNAL_ON_IMPORT = """
import importlib, os, sys

load = importlib.import_module


def import_module(name, *args):
    if name.startswith("shotbench.commands."):  # the command's own modules: up to 0.4 s of pandas, Dask, botocore
        os.kill(os.getpid(), int(sys.argv[1]))
    return load(name, *args)


importlib.import_module = import_module
from shotbench.cli import main

sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize(
    ("sig", "argv", "line"),
    [
        (signal.SIGTERM, ["compare", "a", "b"], "shotbench: interrupted."),
        (
            signal.SIGTERM,
            ["stage", "data/shots", "s3://b/x"],
            "shotbench: interrupted; results written so far are kept.",
        ),
        (signal.SIGINT, ["compare", "a", "b"], "shotbench: interrupted."),
    ],
)
def test_a_signal_while_the_command_loads_ends_with_the_line_of_a_later_one(
    sig: signal.Signals, argv: list[str], line: str
) -> None:
    """`timeout` or a CI cancellation in a command's first fraction of a second (before its
    modules are loaded and its arguments read) ended it with 143 and not a word; Ctrl-C then
    was a traceback."""
    done = subprocess.run(
        [sys.executable, "-c", SIGNAL_ON_IMPORT, str(int(sig)), *argv],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=as_in_a_terminal,  # a suite started in the background inherits SIGINT ignored
    )
    assert (done.returncode, done.stderr) == (128 + sig, line + "\n")
