"""Error texts lose every credential value before they are stored or printed."""

from __future__ import annotations

import pytest

from shotbench.redact import MASK, credentials_in, scrub
from shotbench.store.s3 import S3Config


def test_the_given_secrets_are_replaced_wherever_they_appear() -> None:
    cfg = S3Config(access_key="AKIAEXAMPLEKEY", secret_key="s3cr3t-value", session_token="tok-123456")
    text = "GET https://h/b?X-Amz-Credential=AKIAEXAMPLEKEY&sig=s3cr3t-value&t=tok-123456 failed (s3cr3t-value)"
    out = scrub(text, cfg.secrets())
    assert all(s not in out for s in ("AKIAEXAMPLEKEY", "s3cr3t-value", "tok-123456"))
    assert out == f"GET https://h/b?X-Amz-Credential={MASK}&sig={MASK}&t={MASK} failed ({MASK})"


def test_by_default_the_process_environment_says_what_to_hide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "worker-secret-xyz")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "SBKEY1234")
    assert scrub("denied for SBKEY1234 signing with worker-secret-xyz") == f"denied for {MASK} signing with {MASK}"
    assert credentials_in({"AWS_SESSION_TOKEN": "t0ken"}) == [None, "t0ken", None]


def test_short_or_missing_values_leave_the_text_alone() -> None:
    assert scrub("a plain message", ["a", "", None]) == "a plain message"


def test_a_child_environment_keeps_no_s3_setting_of_the_user() -> None:
    from shotbench.store.s3 import without_s3_settings

    env = {
        "PATH": "/bin",
        "AWS_PROFILE": "prod",
        "AWS_SECRET_ACCESS_KEY": "x" * 8,
        "S3_ENDPOINT_URL": "http://h",
        "HOME": "/h",
    }
    assert without_s3_settings(env) == {"PATH": "/bin", "HOME": "/h"}
