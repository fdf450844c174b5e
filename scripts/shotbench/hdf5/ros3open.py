"""Open an S3 object with libhdf5's ROS3 driver, whichever libhdf5 generation is loaded.

The two generations want different things: 1.14 (libcurl) takes an http(s)://host/bucket/key
URL and has no endpoint setting; 2.x (aws-c-s3) takes s3://bucket/key and reads the endpoint
from AWS_ENDPOINT_URL_S3 at every open. h5py wants the ROS3 settings as bytes and signs
requests only when region, key id and secret are all given. When an open fails, libhdf5's
message rarely says why (1.14 reports 403, 404 and a refused connection alike), so a cheap
signed HEAD request with short timeouts tells the user which of those it was.
"""

from __future__ import annotations

import os
import urllib.parse
from typing import TYPE_CHECKING, Any, Protocol

from shotbench.errors import UserError
from shotbench.hdf5.shotfile import HDF5_SIGNATURE
from shotbench.redact import CREDENTIAL_VARS, mask

if TYPE_CHECKING:
    import h5py


class S3Settings(Protocol):
    """What this module uses of `shotbench.store.s3.S3Config` (a protocol: hdf5/ does not import store/)."""

    @property
    def endpoint_url(self) -> str | None: ...
    @property
    def region(self) -> str: ...
    @property
    def access_key(self) -> str | None: ...
    @property
    def secret_key(self) -> str | None: ...
    @property
    def session_token(self) -> str | None: ...

    def boto3_client(self, max_pool_connections: int = 10, read_timeout: float = 60.0, retries: int = 2) -> Any:
        """A signed client with bounded waits (only used to explain a failed open)."""


CONNECT_TIMEOUT = 3.0
READ_TIMEOUT = 10.0


def hdf5_major() -> int:
    """Major version of the libhdf5 h5py actually loaded in this process."""
    import h5py

    return int(h5py.version.hdf5_version_tuple[0])


def ros3_url(cfg: S3Settings, bucket: str, key: str, major: int | None = None) -> str:
    """The name libhdf5 opens: s3://bucket/key on 2.x, a full http(s) URL on 1.14."""
    major = hdf5_major() if major is None else major
    key = key.lstrip("/")
    if major >= 2:
        return f"s3://{bucket}/{key}"
    path = urllib.parse.quote(key, safe="/-_.~")
    if cfg.endpoint_url:
        return f"{cfg.endpoint_url.rstrip('/')}/{bucket}/{path}"
    if "." in bucket:  # virtual-host names with dots break TLS: use path style
        return f"https://s3.{cfg.region}.amazonaws.com/{bucket}/{path}"
    return f"https://{bucket}.s3.{cfg.region}.amazonaws.com/{path}"


def ros3_env(cfg: S3Settings) -> dict[str, str]:
    """Environment a worker process needs so every libhdf5 generation finds the same object.

    Includes the credentials (a worker must sign); callers must never print or log it.
    """
    env_vars = getattr(cfg, "env_vars", None)
    env: dict[str, str] = dict(env_vars()) if callable(env_vars) else {}
    env.update({"AWS_REGION": cfg.region, "AWS_DEFAULT_REGION": cfg.region})
    if cfg.endpoint_url:
        env["AWS_ENDPOINT_URL_S3"] = cfg.endpoint_url
        # Off EC2, aws-c-auth's credential chain would otherwise wait on the metadata service.
        env["AWS_EC2_METADATA_DISABLED"] = "true"
    if cfg.access_key and cfg.secret_key:
        env["AWS_ACCESS_KEY_ID"] = cfg.access_key
        env["AWS_SECRET_ACCESS_KEY"] = cfg.secret_key
        if cfg.session_token:
            env["AWS_SESSION_TOKEN"] = cfg.session_token
    return env


def _credentials(cfg: S3Settings) -> tuple[str | None, str | None, str | None]:
    """Explicit keys, else the standard AWS chain (1.14 cannot look them up itself); none at all
    for a run that reads unsigned (the chain would find the instance role's on EC2)."""
    if getattr(cfg, "anonymous", False):
        return None, None, None
    if cfg.access_key and cfg.secret_key:
        return cfg.access_key, cfg.secret_key, cfg.session_token
    try:
        import boto3

        creds = boto3.Session().get_credentials()
    except Exception:  # noqa: BLE001 - a broken AWS config means anonymous access here
        creds = None
    if creds is None:
        return None, None, None
    frozen = creds.get_frozen_credentials()
    return frozen.access_key, frozen.secret_key, frozen.token


def fapl_kwargs(cfg: S3Settings, major: int, chain: bool = False) -> dict[str, Any]:
    """h5py.File keyword arguments for the ROS3 driver (bytes, as h5py requires).

    `chain` (2.x only) leaves explicit keys out, so aws-c-auth follows its own chain."""
    kw: dict[str, Any] = {"driver": "ros3", "aws_region": cfg.region.encode()}
    if major >= 2 and (chain or not (cfg.access_key and cfg.secret_key)):
        return kw  # aws-c-auth follows the credential chain (env, profile, instance role)
    key_id, secret, token = _credentials(cfg)
    if key_id and secret:
        kw["secret_id"] = key_id.encode()
        kw["secret_key"] = secret.encode()
        if token:
            kw["session_token"] = token.encode()
    return kw


def _apply_endpoint(cfg: S3Settings) -> None:
    """2.x reads the endpoint from the environment at each open, so set it per call."""
    for name, value in ros3_env(cfg).items():
        if name in CREDENTIAL_VARS:
            continue
        os.environ[name] = value
    if not cfg.endpoint_url:
        os.environ.pop("AWS_ENDPOINT_URL_S3", None)
        os.environ.pop("AWS_ENDPOINT_URL", None)


def build_fapl(
    cfg: S3Settings,
    major: int,
    page_buf_size: int = 0,
    chunk_cache: int | None = None,
    block_cache: int | None = None,
    block_size: int | None = None,
    chain: bool = False,
) -> Any:
    """The file access property list for a ROS3 open, built with h5py's low-level API.

    The page buffer is set after `set_fapl_ros3` because 2.x's `H5Pset_fapl_ros3` turns an unset
    page buffer into 64 MiB and h5py's high-level `File` never sets 0: so 0 is really off here,
    and `effective.PB_DEFAULT` leaves the library's choice. `block_cache` (2.2 only, see
    `shotbench.hdf5.blockcache`) is None to leave the driver alone.
    """
    from h5py import h5p

    from shotbench.hdf5.effective import PB_DEFAULT

    fapl = h5p.create(h5p.FILE_ACCESS)
    if chunk_cache is not None:
        cache = list(fapl.get_cache())
        cache[2] = int(chunk_cache)
        fapl.set_cache(*cache)
    kw = fapl_kwargs(cfg, major, chain)
    fapl.set_fapl_ros3(kw["aws_region"], kw.get("secret_id", b""), kw.get("secret_key", b""))
    if kw.get("session_token"):
        fapl.set_fapl_ros3_token(kw["session_token"])
    if int(page_buf_size) != PB_DEFAULT:
        fapl.set_page_buffer_size(int(page_buf_size), 0, 0)
    if block_cache is not None:
        from shotbench.hdf5 import blockcache

        if not blockcache.available():
            raise UserError(
                "this libhdf5 has no ROS3 block cache (it is new in 2.2); set block caches only for ros3-2.2."
            )
        blockcache.apply(fapl.id, int(block_cache), int(block_size or blockcache.DEFAULT_BLOCK_SIZE))
    return fapl


def open_ros3(
    cfg: S3Settings,
    bucket: str,
    key: str,
    page_buf_size: int = 0,
    precheck: bool = False,
    fapl: Any = None,
    rdcc_nbytes: int | None = None,
) -> h5py.File:
    """Open s3://bucket/key read-only through ROS3; failures become one clear sentence.

    `page_buf_size` turns on libhdf5's page buffer (files written with paged aggregation);
    0 is off on every generation, `effective.PB_DEFAULT` the library's default. `fapl` (from
    `build_fapl`) replaces the settings here when given. `precheck` does a signed HEAD first:
    it bounds the wait when the endpoint is wrong (2.x retries a TLS failure for minutes) at
    the price of one request.
    """
    import h5py
    from h5py import h5f

    major = hdf5_major()
    if major >= 2:
        _apply_endpoint(cfg)
    if precheck:
        problem = check_object(cfg, bucket, key)
        if problem:
            raise UserError(problem)
    if fapl is None:
        fapl = build_fapl(cfg, major, page_buf_size, rdcc_nbytes)
    try:
        fid = h5f.open(ros3_url(cfg, bucket, key, major).encode(), h5f.ACC_RDONLY, fapl=fapl)
        return h5py.File(fid)
    except (OSError, ValueError, RuntimeError) as exc:
        raise UserError(explain_failure(cfg, bucket, key, exc, page_buf_size)) from None


def _client(cfg: S3Settings) -> Any:
    """A signed client that fails fast: one attempt, short timeouts (used only to explain)."""
    return cfg.boto3_client(read_timeout=READ_TIMEOUT, retries=1)


def check_object(cfg: S3Settings, bucket: str, key: str) -> str | None:
    """One sentence saying why s3://bucket/key cannot be read, or None if S3 serves it.

    A signed HEAD with a 3 s connect timeout and no retries: bounded, and it tells
    unreachable endpoint, refused credentials and missing object apart.
    """
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
    )

    where = cfg.endpoint_url or f"AWS S3 ({cfg.region})"
    url = f"s3://{bucket}/{key}"
    try:
        client = _client(cfg)
        client.head_object(Bucket=bucket, Key=key)
        return None
    except NoCredentialsError:
        return f"no AWS credentials found for {url}; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or an AWS profile."
    except EndpointConnectionError as exc:
        return f"cannot reach the S3 endpoint {where} ({_short(exc)}); start the server with `make server-start` or fix the endpoint URL."
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if status in (401, 403) or code in ("403", "AccessDenied", "SignatureDoesNotMatch", "InvalidAccessKeyId"):
            return (
                f"S3 at {where} refused the credentials (access key {mask(cfg.access_key) or 'none'}) for {url}; "
                "fix AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or the AWS profile."
            )
        if status == 404 or code in ("404", "NoSuchKey", "NoSuchBucket"):
            return f"{url} does not exist at {where}; check the bucket and key (stage the files with `make synth` and the bench command)."
        return f"S3 at {where} answered {status} {code} for {url}; check the endpoint, bucket and credentials."
    except BotoCoreError as exc:
        return f"cannot reach the S3 endpoint {where} ({_short(exc)}); check the endpoint URL, TLS and network."


def _first_bytes(cfg: S3Settings, bucket: str, key: str) -> bytes | None:
    try:
        resp = _client(cfg).get_object(Bucket=bucket, Key=key, Range="bytes=0-7")
        return resp["Body"].read()
    except Exception:  # noqa: BLE001 - only refines a message that is already an error
        return None


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:160]


def explain_failure(cfg: S3Settings, bucket: str, key: str, exc: BaseException, page_buf_size: int = 0) -> str:
    """Turn a libhdf5 open failure into the one sentence a user can act on."""
    problem = check_object(cfg, bucket, key)
    if problem:
        return problem
    url = f"s3://{bucket}/{key}"
    head = _first_bytes(cfg, bucket, key)
    if head is not None and head[:8] != HDF5_SIGNATURE and len(head) == 8:
        return f"{url} is not an HDF5 file (it does not start with the HDF5 signature); point the benchmark at HDF5 shot files."
    text = _short(exc)
    if page_buf_size > 0 and "page" in str(exc).lower():
        return (
            f"{url} was not written with paged aggregation, so libhdf5 cannot use a page buffer on it "
            f"({text}); run with pb-size 0 or make the files with `shotbench synth`."
        )
    if any(w in str(exc).lower() for w in ("curl", "connection", "timed out", "timeout", "reset")):
        return (
            f"the network failed while libhdf5 opened {url} ({text}) although S3 serves it; the ROS3 driver "
            "of this build does not retry, so check the network or the server's health."
        )
    return f"libhdf5 could not open {url} although S3 serves it ({text}); check that it is a readable HDF5 file."
