"""TLS and endpoint mistakes against the real embedded server are one sentence naming the fix
(`store/s3.py` `explain`). Each was a botocore traceback of 58-71 lines."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from shotbench.errors import UserError
from shotbench.store.s3 import S3Config, list_shot_files, parse_location

LOC = parse_location("s3://bucket/p")
pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def https(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Config]:
    from shotbench.store.embedded import embedded_server

    with embedded_server(tmp_path_factory.mktemp("tls-mistakes"), tls=True) as info:
        yield info.s3config()


def _refusal(cfg: S3Config) -> str:
    with pytest.raises(UserError) as refused:
        list_shot_files(LOC, cfg)
    return str(refused.value)


@pytest.mark.parametrize("bundle", ["missing", "a folder", "not PEM"])
def test_a_ca_bundle_that_is_no_pem_file_is_named(bundle: str, https: S3Config, tmp_path: Path) -> None:
    (tmp_path / "garbage.pem").write_text("garbage\n")
    path = {"missing": tmp_path / "none.pem", "a folder": tmp_path, "not PEM": tmp_path / "garbage.pem"}[bundle]
    said = _refusal(dataclasses.replace(https, ca_bundle=str(path)))
    assert f"AWS_CA_BUNDLE names {path}, which is not a readable file of PEM certificates" in said


def test_the_wrong_ca_is_named_with_the_fix(https: S3Config) -> None:
    """The system store, which this machine exports as AWS_CA_BUNDLE, does not know the server's own CA."""
    said = _refusal(dataclasses.replace(https, ca_bundle="/etc/ssl/certs/ca-certificates.crt"))
    assert "presented a certificate that the CA bundle /etc/ssl/certs/ca-certificates.crt does not vouch for" in said
    assert "set AWS_CA_BUNDLE to the PEM file of its CA" in said


def test_https_to_a_plain_http_port_says_to_write_http(s3_server) -> None:
    plain = s3_server.s3config()
    said = _refusal(dataclasses.replace(plain, endpoint_url=plain.endpoint_url.replace("http://", "https://")))
    assert "does not speak TLS on that port; write http://" in said


def test_http_to_a_tls_port_suggests_https(https: S3Config) -> None:
    said = _refusal(dataclasses.replace(https, endpoint_url=https.endpoint_url.replace("https://", "http://")))
    assert "closed the connection before answering" in said and "if it serves https, write https://" in said


def test_an_endpoint_with_a_query_or_a_path_is_named(https: S3Config) -> None:
    said = _refusal(dataclasses.replace(https, endpoint_url=f"{https.endpoint_url}?x=1"))
    assert "carries a query or a fragment" in said
    said = _refusal(dataclasses.replace(https, endpoint_url=f"{https.endpoint_url}/some/path"))
    assert "drop the path /some/path" in said
