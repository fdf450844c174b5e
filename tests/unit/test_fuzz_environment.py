"""Property tests of the inputs that are not arguments: AWS_* environment variables and
the files they point at, path lengths, and arguments named more than once. Each generated input
either works or is refused with one `UserError` sentence; never another exception, never a
secret in the message.

Bounded like tests/test_fuzz_inputs.py (SHOTBENCH_FUZZ_EXAMPLES per test, 300 by default).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shotbench.errors import UserError

EXAMPLES = int(os.environ.get("SHOTBENCH_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=EXAMPLES <= 300,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
SECRET = "wJalrXUtnFEMIK7MDENGbPxRfiCYSECRETKEY"
FIXTURE_RUN = Path(__file__).parents[1] / "data" / "run-fixture"

text = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=30)
ini_lines = st.sampled_from(
    [
        "[default]",
        "[profile work]",
        "[profile broken",
        "region = us-east-1",
        "region = not a region",
        "aws_access_key_id = AKIAEXAMPLE",
        f"aws_secret_access_key = {SECRET}",
        "endpoint_url = http://127.0.0.1:9",
        "endpoint_url = not a url",
        "source_profile = nosuch",
        "role_arn = arn:aws:iam::123456789012:role/x",
        "credential_process = /nonexistent/helper",
        "s3 =",
        "  addressing_style = path",
        "= value without a key",
        "\ufeff[default]",
    ]
)
files = st.one_of(
    st.just(None),  # no such variable
    st.sampled_from(["missing", "folder", "empty", "binary", "unreadable"]),
    st.lists(st.one_of(ini_lines, text), max_size=6),
)
env_values = st.one_of(
    st.sampled_from(["", "nosuch", "default", "work", "us-east-1", "http://127.0.0.1:9", "https://[::1]:0", "0"]),
    st.sampled_from(["http://x:99999", "ftp://h", "not a url", "s3://bucket", " ", "%", "a" * 300]),
    text,
)
AWS_VARS = [
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_CA_BUNDLE",
    "AWS_MAX_ATTEMPTS",
    "AWS_RETRY_MODE",
    "AWS_EC2_METADATA_DISABLED",
]


def _write(path: Path, kind: object) -> str:
    """A config or credentials file of the drawn kind; returns the value for the variable."""
    if kind == "missing":
        return str(path)
    if kind == "folder":
        path.mkdir(parents=True, exist_ok=True)
        return str(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "binary":
        path.write_bytes(b"\xff\xfe\x00[default]\x80")
    elif kind == "empty" or kind == "unreadable":
        path.write_text("[default]\naws_access_key_id = A\n")
        if kind == "unreadable":
            path.chmod(0o000)
    else:
        assert isinstance(kind, list)
        path.write_text("\n".join(kind) + "\n", encoding="utf-8")
    return str(path)


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """os.environ with every AWS_* variable replaced by `values`, restored afterwards."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
    for k in saved:
        del os.environ[k]
    os.environ.update(values)
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"  # never wait on an instance-metadata endpoint
    try:
        yield
    finally:
        for k in [k for k in os.environ if k.startswith("AWS_")]:
            del os.environ[k]
        os.environ.update(saved)


@FUZZ
@given(
    variables=st.dictionaries(st.sampled_from(AWS_VARS), env_values, max_size=6),
    config=files,
    credentials=files,
    secret=st.booleans(),
)
def test_every_aws_environment_gives_settings_or_one_sentence(
    variables: dict[str, str], config: object, credentials: object, secret: bool, tmp_path_factory
) -> None:
    from shotbench.store.s3 import S3Config

    folder = tmp_path_factory.mktemp("aws")
    values = {k: v.replace("\x00", "") for k, v in variables.items()}
    if config is not None:
        values["AWS_CONFIG_FILE"] = _write(folder / "config", config)
    if credentials is not None:
        values["AWS_SHARED_CREDENTIALS_FILE"] = _write(folder / "credentials", credentials)
    if secret:
        values["AWS_SECRET_ACCESS_KEY"] = SECRET
    values.pop("AWS_EC2_METADATA_DISABLED", None)
    with environment(values):
        try:
            cfg = S3Config.from_env()  # the settings: a UserError or nothing, never botocore's exception
        except UserError as exc:
            message = str(exc)
            assert "\n" not in message and message.endswith("."), message
            assert SECRET not in message, message
            return
        try:
            cfg.boto3_client()  # no request is sent: the client is only made
        except Exception as exc:  # noqa: BLE001 - the property: what escapes, the CLI words as one sentence
            from shotbench.store.awsconfig import translate

            assert translate(exc) is not None, f"{type(exc).__name__}: {exc}"


segments = st.lists(st.integers(1, 400), min_size=1, max_size=40)


@FUZZ
@given(lengths=segments, char=st.sampled_from(["a", "é", "-", "_"]))
def test_a_path_of_any_length_is_usable_or_one_sentence(lengths: list[int], char: str, tmp_path_factory) -> None:
    """What check_path lets through, the filesystem accepts; what it refuses is one short sentence."""
    from shotbench.diskspace import check_path
    from shotbench.store.s3 import parse_location

    base = tmp_path_factory.getbasetemp()
    path = str(base / "/".join(char * n for n in lengths))
    try:
        check_path(path, "data folder")
    except UserError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 400, str(exc)
        with pytest.raises(UserError):
            parse_location(path)
        return
    try:
        os.stat(path)
    except OSError as exc:
        assert exc.errno in (errno.ENOENT, errno.ENOTDIR), exc
    assert parse_location(path).kind == "local"


def _main(argv: list[str]) -> tuple[int, str]:
    from shotbench.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 2
    return rc, err.getvalue()


@FUZZ
@given(picks=st.lists(st.sampled_from(["plain", "slash", "dot", "relative"]), min_size=1, max_size=5))
def test_repeat_runs_named_twice_are_one_sentence(picks: list[str], tmp_path_factory) -> None:
    """However a run is spelled, naming it twice in `repeat --runs` is refused before any work."""
    spell = {
        "plain": str(FIXTURE_RUN),
        "slash": f"{FIXTURE_RUN}/",
        "dot": f"{FIXTURE_RUN}/.",
        "relative": os.path.relpath(FIXTURE_RUN),
    }
    out = tmp_path_factory.mktemp("repeat")
    rc, err = _main(["repeat", "--runs", *[spell[p] for p in picks], "--output", str(out / "o")])
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert ("twice" in lines[0]) == (len(picks) > 1), lines[0]
    assert not (out / "o").exists()
