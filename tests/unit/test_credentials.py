"""Credentials per case (`shotbench.store.credentials`), the role emulator's rotation and SigV4
check (`shotbench.store.imds`), and doctor's sentences: fast, no server."""

from __future__ import annotations

import pytest

from shotbench.bench.protocol import Spec
from shotbench.redact import scrub
from shotbench.store import credentials, imds
from shotbench.store.s3 import S3Config


def test_the_chain_is_asked_again_for_every_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFIRST0000000")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "first-secret-0000")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    src = credentials.CredentialSource(S3Config.from_env())
    assert src.current().access_key == "AKIAFIRST0000000"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIASECOND000000")  # what a renewal would do
    now = src.current()
    assert (now.source, now.access_key) == ("env", "AKIASECOND000000")
    assert "first-secret-0000" not in repr(now) and "AKIASECOND000000" not in str(now.public())


def test_given_and_anonymous_sets() -> None:
    given = credentials.CredentialSource(S3Config("http://127.0.0.1:1", access_key="SBKEY123", secret_key="s" * 20))
    assert given.current().source == "given" and given.current().secret_key == "s" * 20
    anon = credentials.CredentialSource(S3Config(anonymous=True))
    assert anon.current().source == "anonymous" and anon.current().access_key is None
    assert credentials.CredentialSource(None).current() is None


def test_apply_puts_the_case_set_in_place_and_anonymous_shuts_the_chains() -> None:
    env = {"AWS_ACCESS_KEY_ID": "OLDKEY00", "AWS_SESSION_TOKEN": "old-token-0000"}
    credentials.apply(credentials.CaseCredentials("iam-role", "NEWKEY00", "new-secret-00", "new-token-00"), env)
    assert env["AWS_ACCESS_KEY_ID"] == "NEWKEY00" and env["AWS_SESSION_TOKEN"] == "new-token-00"
    assert scrub("signed with new-secret-00 and new-token-00") == "signed with *** and ***"
    credentials.apply(credentials.CaseCredentials("anonymous"), env)
    assert not any(k in env for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"))
    assert env[credentials.ANONYMOUS_ENV] == "1" and env["AWS_EC2_METADATA_DISABLED"] == "true"


def test_the_set_travels_in_the_spec_and_never_in_its_repr() -> None:
    from shotbench.backends.base import Source

    creds = credentials.CaseCredentials("iam-role", "ASIAKEY0", "spec-secret-0", "spec-token-0", "2030-01-01T00:00:00Z")
    spec = Spec("obstore", Source("s3", "b", "p/"), 0, 1, credentials=creds.to_json())
    back = Spec.from_json(spec.to_json())
    assert credentials.spec_credentials(back.credentials) == creds
    assert "spec-secret-0" not in repr(back) and "spec-token-0" not in repr(back)


def test_refused_sentences() -> None:
    assert credentials.refused("k.h5: ClientError: An error occurred (ExpiredToken) when calling GetObject")
    assert not credentials.refused("k.h5: OSError: unable to open file")
    text = credentials.refused_sentence("c1", credentials.CaseCredentials("iam-role", fetched="2030-01-01T00:00:00Z"))
    assert text.count(";") == 1 and "iam-role" in text and "next case" in text


def test_the_role_rotates_and_revokes_after_the_grace() -> None:
    role = imds.Role(period=60, grace=15)
    first = role.current()
    t = first.issued
    role.rotate(t + 60)
    assert role.find(first.access_key) is first  # replaced, still within its grace
    assert first.expires == first.issued + 75
    role.rotate(t + 120)  # the first set's grace ended long ago
    assert role.find(first.access_key) is None and first.access_key in role.revoked
    assert role.status()["rotations"] == 2 and role.status()["revoked"] == 1
    assert first.secret_key not in str(role.status())


def test_the_gate_checks_signatures_with_the_sets_own_secret() -> None:
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    req = AWSRequest("GET", "http://127.0.0.1:9000/bucket/shots/a%20b.h5?partNumber=1", headers={"Range": "bytes=0-9"})
    S3SigV4Auth(Credentials("ASIAKEY", "right-secret", "tok"), "s3", "us-east-1").add_auth(req)
    headers = {k.lower(): v for k, v in req.headers.items()}
    headers["host"] = "127.0.0.1:9000"
    path = "/bucket/shots/a%20b.h5?partNumber=1"
    assert imds.signature_ok("GET", path, headers, "right-secret")
    assert not imds.signature_ok("GET", path, headers, "wrong-secret")
    assert not imds.signature_ok("GET", path, {**headers, "range": "bytes=0-99"}, "right-secret")


def test_doctor_names_missing_builds_and_expiring_static_credentials() -> None:
    from shotbench.bench import diagnosis as doctor

    facts = {
        "data": "s3://bucket/p/", "endpoint": "AWS S3", "endpoint_from": "none set", "region": "us-east-1",
        "region_from": "AWS_REGION",
        "credentials": {"source": "env", "access_key": "AKIA…", "expires": "2000-01-01T00:00:00Z", "refreshes": False},
        "instance": {"on_ec2": False, "region": "", "instance_type": "", "cores": 2, "metadata_endpoint": "x"},
        "builds": {"ros3-2.0": "missing", "obstore": "main environment"}, "network": "none",
        "plan": {"profile": "quick", "backends": ["ros3-2.0"], "modes": ["shots"], "workers": [1], "trials": 1,
                 "cases": 2, "seconds": 60, "basis": "a guess"},
    }  # fmt: skip
    found = doctor.problems(facts)
    assert len(found) == 2 and all(s.count(".") >= 1 and ";" in s for s in found)
    assert any("make envs" in s for s in found) and any("expire" in s for s in found)
    screen = doctor.render(facts, found)
    assert "credentials env, key AKIA…" in screen and screen.count("problem:") == 2


@pytest.mark.parametrize(
    ("data", "network", "words"),
    [
        ("s3://x_y/z", "none", "does not name a valid bucket"),
        ("{tmp}/missing", "none", "does not exist; make shot files"),
        ("{tmp}/one.h5", "none", "is a file, not a folder"),
        ("{tmp}", "s3-same-regoin", "unknown network profile 's3-same-regoin'"),
    ],
    ids=["bucket name", "missing folder", "a file", "network typo"],
)
def test_doctor_names_what_bench_would_refuse(tmp_path, data: str, network: str, words: str) -> None:
    """The screen before a run said "no problems found" for a DATA or NETWORK that bench then refused."""
    from shotbench.bench import diagnosis as doctor

    (tmp_path / "one.h5").write_bytes(b"x")
    facts = {
        "data": data.format(tmp=tmp_path), "endpoint": "AWS S3", "region": "us-east-1", "region_from": "AWS_REGION",
        "credentials": {"source": "env"}, "builds": {}, "network": network,
        "instance": {"on_ec2": False, "region": ""}, "plan": {"seconds": 60},
    }  # fmt: skip
    (found,) = doctor.problems(facts)
    assert words in found and found.endswith(".")


def test_anonymous_refuses_a_backend_that_cannot_read_unsigned(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every registered backend reads unsigned today; one that declared otherwise is refused in one
    sentence before the run starts."""
    from shotbench.backends import registry
    from shotbench.bench.prepare import refuse_signed_only
    from shotbench.errors import UserError

    refuse_signed_only(registry.names())  # all of them can
    monkeypatch.setattr(registry.get("remfile"), "reads_unsigned", False)
    with pytest.raises(UserError) as err:
        refuse_signed_only(["obstore", "remfile"])
    assert str(err.value).startswith("remfile cannot read unsigned") and str(err.value).count(";") == 1


@pytest.mark.parametrize(
    ("variables", "region"),
    [
        ({"AWS_REGION": "eu-west-1"}, "eu-west-1"),
        ({"AWS_DEFAULT_REGION": "ap-south-1"}, "ap-south-1"),
        ({"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "ap-south-1"}, "eu-west-1"),
    ],
    ids=["AWS_REGION alone", "AWS_DEFAULT_REGION alone", "both"],
)
def test_the_run_uses_the_region_doctor_shows(monkeypatch: pytest.MonkeyPatch, tmp_path, variables, region) -> None:
    """botocore ignores AWS_REGION: with it alone, doctor said eu-west-1 and every client and every
    ROS3 worker was given us-east-1 (and a wrong-region answer said to set AWS_REGION)."""
    from shotbench.bench import diagnosis as doctor
    from shotbench.store.s3 import S3Config

    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    cfg = S3Config.from_env(anonymous=True)
    assert cfg.region == region == doctor._region("")[0]
    assert cfg.env_vars()["AWS_REGION"] == region


@pytest.mark.parametrize("name", ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"])
def test_a_bad_endpoint_names_the_variable_that_was_set(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    from shotbench.errors import UserError
    from shotbench.store.s3 import S3Config

    for other in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv(name, "notaurl")
    with pytest.raises(UserError, match=f"is not an http\\(s\\) URL; set {name} like"):
        S3Config.from_env(anonymous=True)
