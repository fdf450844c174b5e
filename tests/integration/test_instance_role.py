"""The EC2 user's path, rehearsed here: instance-role credentials that rotate during a run, and a
public bucket read unsigned.

Real parts throughout: the embedded versitygw, the IMDSv2 emulator and its gate
(`shotbench.store.imds`, which revokes each replaced set after a grace period and checks every
signature with the set's own secret), every default backend in its own environment, real Dask.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from shotbench.backends import registry
from support.bench import TINY, bench_cmd, bench_env, read_csv
from support.runfolder import only_run

pytestmark = [pytest.mark.slow, pytest.mark.server]

PERIOD = 1.5  # seconds between sets: one trial of the default backends (about 22 s quiet) outlives many
# A replaced set still works this long: a case is given one set, so the grace must outlast the
# longest case with its prepare (about 3 s on a quiet 2-core machine, 5 s under the suite's load:
# the first case of an environment, which starts its cluster), and be short enough that a quiet
# run sees at least two sets revoked (the second at 2 x PERIOD + GRACE = 13 s; quiet runs of one
# trial lasted 22 s and saw 14 rotations, 7-8 sets revoked).
GRACE = 10.0


def _through_gate(emu, s3_server, role_set):
    """An S3 config that signs with one of the role's sets and reaches the server through the gate."""
    from shotbench.store.s3 import S3Config

    return S3Config(emu.gate_endpoint, s3_server.region, role_set.access_key, role_set.secret_key, role_set.token)


def _default_backends() -> list[str]:
    return registry.default_names()


def _config(tmp_path: Path, backends: list[str]) -> Path:
    cfg = tmp_path / "tiny.toml"
    cfg.write_text(TINY.format(backends=json.dumps(backends)) + "verify = true\n")
    return cfg


def _bench(tmp_path: Path, shot_dir: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    backends = _default_backends()
    cmd = bench_cmd(_config(tmp_path, backends), shot_dir, tmp_path / "runs", "--local-copies", str(shot_dir), *args)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1500)


def test_a_run_outlives_rotating_instance_role_credentials(
    tmp_path: Path, shot_dir: Path, s3_server, staged_shots
) -> None:
    from shotbench.store import imds

    loc, _, _ = staged_shots
    emu = imds.serve(s3_server.endpoint_url, (s3_server.access_key, s3_server.secret_key), s3_server.region,
                     PERIOD, GRACE)  # fmt: skip
    try:
        first = emu.role.current()
        env = {**bench_env(tmp_path / "state"), **emu.env(), "AWS_REGION": s3_server.region}
        t0 = time.monotonic()
        proc = _bench(tmp_path, shot_dir, env, "--data", loc.uri())
        took = time.monotonic() - t0
        status = emu.role.status()
        issued = list(emu.role.issued)
        # a revoked set is refused: the rotation is real, not a formality
        client = _through_gate(emu, s3_server, first).boto3_client(retries=1)
        with pytest.raises(Exception, match="ExpiredToken"):
            client.get_object(Bucket=loc.bucket, Key=staged_shots[2][0].key)
    finally:
        emu.close()
    assert proc.returncode == 0, (status, proc.stderr[-3000:])
    assert "S3 refused the credentials" not in proc.stdout + proc.stderr, (status, proc.stdout[-3000:])
    assert status["rotations"] >= 2 and status["revoked"] >= 2, (status, took)
    assert status["sets_used"] >= 3, status  # the run signed with the sets in force as it went
    run = only_run(tmp_path / "runs")
    cases = read_csv(run / "cases.csv")
    assert {c["backend"] for c in cases} == set(_default_backends())
    for c in cases:
        assert c["status"] == "ok", (c, status)
        assert c["credential-source"] == ("" if c["backend"] == "local" else "given:iam-role"), c
    rows = read_csv(run / "workers.csv")
    assert rows and all(r["verified"] == "yes" for r in rows), [r for r in rows if r["verified"] != "yes"][:2]
    meta = json.loads((run / "run.json").read_text())
    assert meta["config"]["anonymous"] is False
    for path in [p for p in run.rglob("*") if p.is_file()] + [p for p in (tmp_path / "state").rglob("*.log")]:
        text = path.read_text(errors="replace")
        for s in issued:  # no set's secret or token in any output
            assert s.secret_key not in text and s.token not in text, path


def test_the_gate_answers_a_small_get_without_waiting_for_a_delayed_ack(s3_server, staged_shots) -> None:
    """A reply sent as headers then body, with Nagle's algorithm on, waits for the client's delayed
    ACK: 44 ms a GET on Linux, which made an obstore signals case through the gate 38 s instead of
    1 s, and would add the same to every number measured behind `shotbench imds`."""
    import statistics

    from shotbench.store import imds

    loc, _, objs = staged_shots
    emu = imds.serve(s3_server.endpoint_url, (s3_server.access_key, s3_server.secret_key), s3_server.region,
                     600.0, 600.0)  # fmt: skip
    try:
        client = _through_gate(emu, s3_server, emu.role.current()).boto3_client()
        took = []
        for i in range(21):  # one kept-alive connection, as a reader's
            t0 = time.perf_counter()
            body = client.get_object(Bucket=loc.bucket, Key=objs[0].key, Range=f"bytes={i * 4096}-{i * 4096 + 4095}")
            assert len(body["Body"].read()) == 4096
            took.append(time.perf_counter() - t0)
    finally:
        emu.close()
    assert statistics.median(took[1:]) < 0.020, [round(t * 1e3, 1) for t in took]


def _public_bucket(s3_server, shot_dir: Path) -> str:
    from shotbench.store.s3 import parse_location
    from shotbench.store.staging import stage

    cfg = s3_server.s3config()
    client = cfg.boto3_client()
    bucket = "sb-public-read"
    client.create_bucket(Bucket=bucket)
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": "*",
              "Action": ["s3:GetObject", "s3:ListBucket"],
              "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"]}]}  # fmt: skip
    client.put_bucket_policy(Bucket=bucket, Policy=json.dumps(policy))
    stage(shot_dir, parse_location(f"s3://{bucket}/shots/"), cfg, jobs=4, progress=False)
    return bucket


def test_anonymous_reads_a_public_bucket_unsigned_with_every_default_backend(
    tmp_path: Path, shot_dir: Path, s3_server
) -> None:
    bucket = _public_bucket(s3_server, shot_dir)
    # keys no server knows: a backend that signed anyway would be refused (InvalidAccessKeyId)
    env = {**bench_env(tmp_path / "state"), "AWS_ENDPOINT_URL_S3": s3_server.endpoint_url,
           "AWS_REGION": s3_server.region, "AWS_ACCESS_KEY_ID": "SBNOTAKEY0000000000", "AWS_SECRET_ACCESS_KEY": "x" * 40}  # fmt: skip
    # one mode, one worker: what signs a request is the backend in its worker, whatever the case
    proc = _bench(
        tmp_path, shot_dir, env, "--data", f"s3://{bucket}/shots/", "--anonymous", "--modes", "shots", "--workers", "1"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = only_run(tmp_path / "runs")
    cases = read_csv(run / "cases.csv")
    assert {c["backend"] for c in cases} == set(_default_backends())
    for c in cases:
        assert c["status"] == "ok", c
        assert c["credential-source"] == ("" if c["backend"] == "local" else "anonymous"), c
    assert all(r["verified"] == "yes" for r in read_csv(run / "workers.csv"))
    assert json.loads((run / "run.json").read_text())["config"]["anonymous"] is True


def test_libhdf5_2x_own_chain_finds_the_instance_role_at_the_endpoint_variable(s3_server, staged_shots) -> None:
    """aws-c-auth's IMDS client honours AWS_EC2_METADATA_SERVICE_ENDPOINT: with it, 2.x's chain
    (no keys in the FAPL, none in the environment) signs with the role's set; with the metadata
    service disabled, it finds none (never probing the link-local address from here)."""
    import os

    from shotbench.builds.environments import env_dir
    from shotbench.store import imds
    from shotbench.store.s3 import without_s3_settings

    python = env_dir("hdf5-2.0") / "bin" / "python"
    if not python.exists():
        pytest.skip("the hdf5-2.0 environment is not built (`make envs`)")
    loc, _, objs = staged_shots
    code = (
        "import h5py; from h5py import h5p, h5f; fapl = h5p.create(h5p.FILE_ACCESS); "
        f"fapl.set_fapl_ros3(b'{s3_server.region}', b'', b''); "
        f"h5py.File(h5f.open(b's3://{loc.bucket}/{objs[0].key}', h5f.ACC_RDONLY, fapl=fapl)); print('opened')"
    )
    emu = imds.serve(s3_server.endpoint_url, (s3_server.access_key, s3_server.secret_key), s3_server.region, 600, 60)
    try:
        base = {**without_s3_settings(), "AWS_REGION": s3_server.region, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                "AWS_CONFIG_FILE": os.devnull}  # fmt: skip
        found = subprocess.run([str(python), "-c", code], env={**base, **emu.env()}, capture_output=True, text=True,
                               timeout=120)  # fmt: skip
        blind = subprocess.run([str(python), "-c", code], env={**base, **emu.env(), "AWS_EC2_METADATA_DISABLED": "true"},
                               capture_output=True, text=True, timeout=120)  # fmt: skip
        used = emu.role.status()["sets_used"]
    finally:
        emu.close()
    assert found.returncode == 0 and "opened" in found.stdout, found.stderr[-1500:]
    assert blind.returncode != 0 and "unauthorized" in blind.stderr, blind.stderr[-1500:]
    assert used == 1


def test_a_case_whose_set_is_revoked_mid_case_says_so_and_the_run_goes_on(
    tmp_path: Path, shot_dir: Path, s3_server, staged_shots
) -> None:
    """Sets that live one second: cases outlive theirs, each such case says so in one sentence,
    and every later case still runs (with a fresh set)."""
    from shotbench.store import imds

    loc, _, _ = staged_shots
    emu = imds.serve(s3_server.endpoint_url, (s3_server.access_key, s3_server.secret_key), s3_server.region,
                     600.0, 600.0)  # fmt: skip
    try:
        cfg = tmp_path / "tiny.toml"
        cfg.write_text(TINY.format(backends=json.dumps(["obstore"])).replace("workers = [1, 2]", "workers = [1]"))
        env = {**bench_env(tmp_path / "state"), **emu.env(), "AWS_REGION": s3_server.region}
        cmd = bench_cmd(cfg, shot_dir, tmp_path / "runs", "--data", loc.uri(), "--modes", "signals", "--trials", "2",
                        "--keep-going")  # fmt: skip
        with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as run:
            deadline = time.monotonic() + 300
            while not list((tmp_path / "runs").glob("*/run.json")) and run.poll() is None:
                assert time.monotonic() < deadline, "the run did not start its cases within 300 s"
                time.sleep(0.2)
            # the cases have begun (the checks before them signed with a long-lived set): from now
            # on a set lives one second and is revoked the moment it is replaced
            emu.role.period, emu.role.grace = 1.0, 0.0
            out, err = run.communicate(timeout=600)
        proc = subprocess.CompletedProcess(cmd, run.returncode, out, err)
        status = emu.role.status()
    finally:
        emu.close()
    assert proc.returncode == 0, proc.stderr[-2000:]
    cases = read_csv(only_run(tmp_path / "runs") / "cases.csv")
    assert len(cases) == 2, cases  # the run went on past the refused case
    refused = [c for c in cases if "ExpiredToken" in c["first-error"] or "403" in c["first-error"]]
    assert refused and status["refused"], status
    lines = [ln for ln in proc.stdout.splitlines() if "S3 refused the credentials" in ln]
    assert len(lines) == len(refused) and all(ln.count(";") == 1 for ln in lines), proc.stdout[-2000:]
