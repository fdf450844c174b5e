"""Both benchmarks build obstore and s3fs clients in one place: reachability and signing from
the S3Config, waits and retries from the caller (read back from the clients themselves)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shotbench.backends import limits
from shotbench.backends.fsspec import make_filesystem
from shotbench.backends.obstore import make_store
from shotbench.store.clients import obstore_store, s3fs_filesystem
from shotbench.store.s3 import S3Config

LOCAL = S3Config(endpoint_url="http://127.0.0.1:9", access_key="SBKEY", secret_key="s3cr3t", session_token="tok")


def test_obstore_signs_path_style_over_plain_http_for_a_local_server() -> None:
    store = obstore_store(LOCAL, "shots")
    assert store.config["endpoint"] == "http://127.0.0.1:9" and store.config["virtual_hosted_style_request"] == "false"
    assert (store.config["access_key_id"], store.config["session_token"]) == ("SBKEY", "tok")
    assert store.client_options == {"allow_http": "true"} and store.retry_config is None  # library defaults


def test_obstore_without_credentials_sends_unsigned_requests_and_trusts_a_private_ca(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shotbench.store import tls

    # obstore reads AWS_* itself: half a key pair in the environment must not break an unsigned store
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "from-the-environment")
    ca = tls.ensure(tmp_path).ca  # a real private CA, as the embedded server over https has
    store = obstore_store(S3Config(endpoint_url="https://127.0.0.1:9", ca_bundle=str(ca)), "shots")
    assert store.config["skip_signature"] == "true" and not store.config.get("access_key_id")
    assert not store.config.get("secret_access_key")
    assert "allow_http" not in store.client_options and "root_certificate" in store.client_options


def test_the_reading_benchmark_bounds_waits_and_retries_the_transfer_one_does_not() -> None:
    bounded = make_store(LOCAL, "shots")
    assert bounded.retry_config["max_retries"] == limits.MAX_RETRIES
    assert bounded.client_options["timeout"] == f"{limits.READ_TIMEOUT_S}s"
    fs = make_filesystem(LOCAL)
    assert fs.config_kwargs == limits.botocore_config_kwargs() and fs.retries == limits.MAX_RETRIES
    plain = s3fs_filesystem(LOCAL, asynchronous=True)
    assert plain.config_kwargs == {} and plain is not fs and plain.asynchronous
    assert plain.client_kwargs == {"region_name": "us-east-1", "endpoint_url": "http://127.0.0.1:9"}
    assert (plain.key, plain.secret, plain.anon) == ("SBKEY", "s3cr3t", False)
    assert s3fs_filesystem(S3Config()).anon  # no credentials: unsigned
