"""One s3:// URL, one place: with no AWS settings and the embedded server running, `ls`, `stage`,
`bench --data`, `doctor --data`, `anatomy --data` and `transfer --data` all read that server
(`store.embedded.resolve_s3config`). `doctor` and `anatomy` went to AWS instead: doctor found no
credentials, anatomy stopped on them, and transfer refused to start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from shotbench.paths import cache_dir, envs_dir
from support.bench import bench_env


def _env(tmp_path: Path, state: Path) -> dict[str, str]:
    """No AWS setting at all (a private HOME, no metadata service), and `state`'s embedded server."""
    (tmp_path / "home").mkdir(exist_ok=True)
    return {
        **bench_env(state),
        "HOME": str(tmp_path / "home"),
        "AWS_EC2_METADATA_DISABLED": "true",  # an instance role would rightly win over the server
        "SHOTBENCH_ROOT": str(tmp_path / "root"),
        "SHOTBENCH_ENVS": str(envs_dir()),
        "SHOTBENCH_CACHE": str(cache_dir()),
    }


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shotbench.cli", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_doctor_anatomy_and_transfer_read_an_s3_url_where_ls_does(s3_server, staged_shots, tmp_path: Path) -> None:
    loc, _, objs = staged_shots
    env = _env(tmp_path, s3_server.state)
    url = f"s3://{loc.bucket}/{loc.prefix}"

    ls = _run(["ls", url], env, tmp_path)
    assert ls.returncode == 0 and objs[0].key in ls.stdout, ls.stderr

    (tmp_path / "c.toml").write_text('backends = ["fsspec"]\n')
    doctor = _run(["doctor", "--data", url, "--config", str(tmp_path / "c.toml"), "--json"], env, tmp_path)
    facts = json.loads(doctor.stdout or "{}")
    assert facts.get("endpoint") == s3_server.endpoint_url, doctor.stdout + doctor.stderr
    assert facts["problems"] == [] and doctor.returncode == 0, facts["problems"]

    out = tmp_path / "anatomy"
    anatomy = _run(
        ["anatomy", "--data", f"s3://{loc.bucket}/{objs[0].key}", "--backends", "fsspec", "--opens", "2",
         "--no-strace", "--out", str(out)],
        env, tmp_path,
    )  # fmt: skip
    assert anatomy.returncode == 0, anatomy.stderr
    doc = json.loads((out / "anatomy.json").read_text())
    assert (doc["endpoint"], doc["object"]["key"]) == (s3_server.endpoint_url, objs[0].key)

    # a bucket the server does not hold: the sentence names the server it asked
    transfer = _run(["transfer", "--data", "s3://no-such-bucket/x/", "--tools", "boto3-loop"], env, tmp_path)
    assert transfer.returncode == 2 and "Traceback" not in transfer.stderr, transfer.stderr
    assert f"no-such-bucket does not exist at {s3_server.endpoint_url}" in transfer.stderr, transfer.stderr


def test_doctor_with_no_s3_at_all_names_the_embedded_server(tmp_path: Path) -> None:
    """No AWS setting and no server running: starting the server is one of the fixes, as `ls` says."""
    env = _env(tmp_path, tmp_path / "state")
    (tmp_path / "c.toml").write_text('backends = ["fsspec"]\n')
    doctor = _run(["doctor", "--data", "s3://bucket/x/", "--config", str(tmp_path / "c.toml"), "--json"], env, tmp_path)
    problems = json.loads(doctor.stdout)["problems"]
    assert doctor.returncode == 1 and len(problems) == 1, problems
    assert problems[0].startswith("no AWS credentials were found;") and problems[0].endswith(
        "or start the embedded server with `shotbench server start`."
    ), problems[0]
