"""obstore, s3fs and libcurl clients, built one way for both benchmarks from an `S3Config`.

Where to connect and how to sign (endpoint, region, path-style addressing, plain HTTP for a
local server, a private CA, credentials or unsigned requests) come from the config and are
decided here only. How long to wait and how often to retry are the caller's: the reading
benchmark bounds them with `shotbench.backends.limits`, the transfer benchmark leaves each
library's own defaults, as its users do.

Imports stay inside the functions: a ROS3 environment has neither library.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from shotbench.store.s3 import DEFAULT_REGION

if TYPE_CHECKING:
    from shotbench.store.s3 import S3Config


def obstore_store(
    cfg: S3Config,
    bucket: str,
    client_options: dict[str, Any] | None = None,
    retry_config: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
) -> Any:
    """An obstore `S3Store` for `bucket`; `client_options`, `retry_config` and further S3Store
    `config` keys (e.g. `unsigned_payload`) as obstore takes them."""
    from obstore.store import S3Store

    kw: dict[str, Any] = {"region": cfg.region or DEFAULT_REGION, **(config or {})}
    client = dict(client_options or {})
    if cfg.endpoint_url:
        kw["endpoint"] = cfg.endpoint_url
        kw["virtual_hosted_style_request"] = False
        if urlsplit(cfg.endpoint_url).scheme == "http":
            client["allow_http"] = True
    if cfg.access_key:
        kw["access_key_id"] = cfg.access_key
        kw["secret_access_key"] = cfg.secret_key
        if cfg.session_token:
            kw["session_token"] = cfg.session_token
    else:  # unsigned; empty keys so that obstore, which reads AWS_* from the environment itself,
        # cannot take half a key pair from there and refuse to build the store ("Missing AccessKeyId")
        kw.update(skip_signature=True, access_key_id="", secret_access_key="")
    if cfg.ca_bundle:  # a private CA (the embedded server over https)
        with open(cfg.ca_bundle) as fh:
            client["root_certificate"] = fh.read()
    if client:
        kw["client_options"] = client
    if retry_config is not None:
        kw["retry_config"] = retry_config
    return S3Store(bucket, **kw)


def s3fs_filesystem(cfg: S3Config, **options: Any) -> Any:
    """A new `s3fs.S3FileSystem` (never s3fs's shared instance); `options` are further
    S3FileSystem arguments (`config_kwargs`, `asynchronous`, `loop`, ...)."""
    import s3fs

    client_kwargs: dict[str, Any] = {"region_name": cfg.region or DEFAULT_REGION}
    if cfg.endpoint_url:
        client_kwargs["endpoint_url"] = cfg.endpoint_url
    if cfg.ca_bundle:
        client_kwargs["verify"] = cfg.ca_bundle
    return s3fs.S3FileSystem(
        key=cfg.access_key,
        secret=cfg.secret_key,
        token=cfg.session_token,
        anon=not cfg.access_key,
        client_kwargs=client_kwargs,
        skip_instance_cache=True,
        **options,
    )


UNRESERVED = "-_.~"  # RFC 3986 unreserved: SigV4 wants every other byte of a key or a query value percent-encoded


def object_address(cfg: S3Config, bucket: str, key: str = "", query: str = "") -> tuple[str, str, str]:
    """(scheme, Host, path) of `key` in `bucket` (the bucket itself for no key): path-style on an
    endpoint, virtual-hosted on AWS, each byte of the key that is not unreserved percent-encoded
    once, as SigV4 signs it. The one place both request engines (awscrt's, libcurl's) take it from."""
    q = f"?{query}" if query else ""
    encoded = quote(key, safe="/" + UNRESERVED)
    if cfg.endpoint_url:
        u = urlsplit(cfg.endpoint_url)
        path = f"{u.path.rstrip('/')}/{bucket}" + (f"/{encoded}" if key else "")
        return u.scheme, u.netloc, (path or "/") + q
    return "https", f"{bucket}.s3.{cfg.region or DEFAULT_REGION}.amazonaws.com", f"/{encoded}{q}"


def curl_signing(cfg: S3Config, bucket: str) -> tuple[Callable[[str], str], list[str], Callable[[Any], None]]:
    """How a libcurl (pycurl) handle reaches `bucket`: the URL of a key (`object_address`), the
    headers every request carries, and a function that sets a handle's signing (libcurl's own
    SigV4, or none for unsigned requests) and trust (the private CA, else the system store: the
    wheel's libcurl looks for a Red Hat path that Debian does not have)."""
    import ssl

    import pycurl

    region = cfg.region or DEFAULT_REGION
    headers = [f"x-amz-security-token: {cfg.session_token}"] if cfg.access_key and cfg.session_token else []
    ca = cfg.ca_bundle or os.environ.get("SSL_CERT_FILE") or ssl.get_default_verify_paths().cafile

    def url(key: str) -> str:
        scheme, host, path = object_address(cfg, bucket, key)
        return f"{scheme}://{host}{path}"

    def setup(c: Any) -> None:
        if cfg.access_key and not cfg.anonymous:
            c.setopt(pycurl.AWS_SIGV4, f"aws:amz:{region}:s3")
            c.setopt(pycurl.USERNAME, cfg.access_key)
            c.setopt(pycurl.PASSWORD, cfg.secret_key or "")
        if ca:
            c.setopt(pycurl.CAINFO, ca)

    return url, headers, setup
