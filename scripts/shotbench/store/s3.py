"""Where the shot files are and how to reach them: S3 settings, data locations, preflight.

Every failure a user can cause (endpoint down, bucket missing, wrong secret, empty prefix,
a file that is not HDF5) is turned into one `UserError` sentence within a few seconds, so
a benchmark never starts Dask workers only to watch them all fail.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from shotbench.errors import UserError, one_line
from shotbench.hdf5.shotfile import HDF5_SIGNATURE, looks_like_hdf5
from shotbench.redact import mask

T = TypeVar("T")

DEFAULT_REGION = "us-east-1"
HDF5_SUFFIXES = (".h5", ".hdf5", ".hdf", ".he5")
CONNECT_TIMEOUT = 3.0
PREFLIGHT_READ_TIMEOUT = 10.0  # a listing page, a HEAD or a bucket's creation answers well within this
PREFLIGHT_RETRIES = 1  # botocore's own, for each call: a silent endpoint costs 2 read timeouts
PREFLIGHT_ATTEMPTS = 3  # calls when botocore's tries all ended in a dropped connection (not in silence)
SIGNATURE_PROBE_BYTES = 2048 + len(HDF5_SIGNATURE)
_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")
S3_ENV_PREFIXES = ("AWS_", "S3_")  # variables through which clients pick up S3 settings (S3_*: s5cmd)


class DroppedConnection(UserError):
    """The endpoint closed the connection before it answered: worth one more try, unlike silence."""


def without_s3_settings(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of `env` (default: this process's) without any S3 setting, so a child process
    sees only the ones it is given (`S3Config.env_vars`), never the user's own."""
    return {k: v for k, v in (os.environ if env is None else env).items() if not k.startswith(S3_ENV_PREFIXES)}


@dataclass(frozen=True)
class S3Config:
    """How to talk to one S3 service; `endpoint_url=None` means AWS itself."""

    endpoint_url: str | None = None
    region: str = DEFAULT_REGION
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    ca_bundle: str | None = None  # PEM file of a private CA to trust (embedded server over https)
    # where the keys came from: "given" (handed over, e.g. the embedded server's pair) or the AWS
    # chain's provider (`iam-role`, `env`, ...): then each case asks the chain again
    # (`shotbench.store.credentials`); `anonymous`: every request goes unsigned
    source: str = "given"
    anonymous: bool = False

    def public(self) -> dict[str, str | None]:
        """What may be printed or stored in results: never the secret, key masked."""
        return {
            "endpoint": self.endpoint_url or "aws",
            "region": self.region,
            "access_key": mask(self.access_key),
            "credentials": "anonymous" if self.anonymous else self.source,
        }

    def secrets(self) -> tuple[str | None, ...]:
        """The values no output may carry (`shotbench.redact.scrub` hides them)."""
        return (self.secret_key, self.session_token, self.access_key)

    @classmethod
    def from_env(cls, anonymous: bool = False) -> S3Config:
        """The standard AWS chain: env vars, AWS_PROFILE / shared config, instance roles; a
        configuration mistake is one sentence (`awsconfig.translate`), never botocore's traceback.

        The keys found here serve the checks before a run (preflight, listing); the cases get a
        set fetched when each starts (`shotbench.store.credentials.CredentialSource`)."""
        from shotbench.store import awsconfig

        awsconfig.check_files()
        try:
            cfg = cls._from_session(anonymous)
        except Exception as exc:  # noqa: BLE001 - translate() keeps what is not a configuration mistake
            raise (awsconfig.translate(exc) or exc) from None
        if cfg.endpoint_url:
            _check_endpoint(cfg.endpoint_url)  # botocore's ValueError would come later, as a traceback
        return cfg

    @classmethod
    def _from_session(cls, anonymous: bool = False) -> S3Config:
        import boto3

        from shotbench.store.awsconfig import bound_credential_processes

        session = boto3.session.Session()
        bound_credential_processes(session._session.get_component("credential_provider"))
        creds = None if anonymous else session.get_credentials()
        frozen = creds.get_frozen_credentials() if creds is not None else None
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        if not endpoint:
            try:
                scoped = session._session.get_scoped_config()  # profile's endpoint_url
                endpoint = (scoped.get("s3") or {}).get("endpoint_url") or scoped.get("endpoint_url")
            except Exception:  # noqa: BLE001 - a broken profile is reported by the request that needs it
                endpoint = None
        return cls(
            endpoint_url=endpoint or None,
            # AWS_REGION first, as the AWS CLI v2 and the other SDKs (and libhdf5's ROS3) read it:
            # botocore reads only AWS_DEFAULT_REGION and the profile, so AWS_REGION alone was ignored
            region=os.environ.get("AWS_REGION") or session.region_name or DEFAULT_REGION,
            access_key=frozen.access_key if frozen else None,
            secret_key=frozen.secret_key if frozen else None,
            session_token=frozen.token if frozen else None,
            ca_bundle=os.environ.get("AWS_CA_BUNDLE") or None,
            source=str(getattr(creds, "method", "") or "none"),
            anonymous=anonymous,
        )

    def is_local(self) -> bool:
        """True for a server on this machine (the embedded one), where creating buckets is harmless."""
        if not self.endpoint_url:
            return False
        host = urlsplit(self.endpoint_url).hostname or ""
        return host in ("localhost", "::1") or host.startswith("127.")

    def question_client(self) -> Any:
        """A client for requests the server answers at once (a listing page, a HEAD, a bucket's
        creation): an endpoint that accepts connections and never answers is named within
        2 x PREFLIGHT_READ_TIMEOUT, not the minutes of a client sized for large bodies."""
        return self.boto3_client(read_timeout=PREFLIGHT_READ_TIMEOUT, retries=PREFLIGHT_RETRIES)

    def boto3_client(self, max_pool_connections: int = 10, read_timeout: float = 60.0, retries: int = 2) -> Any:
        """A client with bounded waits: a dead endpoint fails in seconds, not minutes."""
        import boto3
        from botocore import UNSIGNED
        from botocore.config import Config

        config = Config(
            region_name=self.region,
            signature_version=UNSIGNED if self.anonymous else "s3v4",
            connect_timeout=CONNECT_TIMEOUT,
            read_timeout=read_timeout,
            retries={"max_attempts": retries, "mode": "standard"},
            max_pool_connections=max_pool_connections,
            s3={"addressing_style": "path"} if self.endpoint_url else {},
        )
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            aws_session_token=self.session_token,
            config=config,
            **({"verify": self.ca_bundle} if self.ca_bundle else {}),
        )

    def env_vars(self) -> dict[str, str]:
        """AWS_* variables that give a subprocess (a Dask worker, libhdf5) these settings."""
        env = {"AWS_REGION": self.region, "AWS_DEFAULT_REGION": self.region}
        if self.access_key:
            env["AWS_ACCESS_KEY_ID"] = self.access_key
        if self.secret_key:
            env["AWS_SECRET_ACCESS_KEY"] = self.secret_key
        if self.session_token:
            env["AWS_SESSION_TOKEN"] = self.session_token
        if self.endpoint_url:
            env["AWS_ENDPOINT_URL_S3"] = self.endpoint_url
            env["AWS_ENDPOINT_URL"] = self.endpoint_url
        if self.ca_bundle:
            from shotbench.store.tls import client_env

            env.update(client_env(self.ca_bundle))
        return env


@dataclass(frozen=True)
class Location:
    """A data location: `s3://bucket/prefix/` or a local folder.

    The prefix is a folder (ends with '/', or is empty for the whole bucket), except when it
    names one shot file (`s3://bucket/shots/1160703001.h5`).
    """

    kind: str  # "s3" | "local"
    bucket: str = ""
    prefix: str = ""
    path: Path | None = None

    def uri(self) -> str:
        if self.kind == "s3":
            return f"s3://{self.bucket}/{self.prefix}"
        return str(self.path)

    def __str__(self) -> str:
        return self.uri()


def parse_location(text: str) -> Location:
    """`s3://bucket/prefix` (the prefix is a folder) or a local folder path."""
    text = text.strip()
    if not text:
        raise UserError("the data location is empty; give s3://bucket/prefix or a local folder.")
    if text.startswith("s3://"):
        rest = text[len("s3://") :]
        bucket, _, prefix = rest.partition("/")
        if not _BUCKET_RE.match(bucket) or ".." in bucket:
            raise UserError(
                f"'{text}' does not name a valid bucket; write s3://bucket/prefix with a bucket "
                "name of 3-63 lowercase letters, digits, dots or hyphens."
            )
        prefix = prefix.lstrip("/")
        if prefix and not prefix.endswith("/") and not is_shot_name(prefix):  # a folder, unless one file
            prefix += "/"
        return Location(kind="s3", bucket=bucket, prefix=prefix)
    if "://" in text:
        scheme = text.split("://", 1)[0]
        raise UserError(f"'{scheme}://' locations are not supported; give s3://bucket/prefix or a local folder.")
    if text.lower().startswith("s3:") and not os.path.exists(text):  # `s3:/b/p`, `s3:b/p`: a typo, not a folder
        raise UserError(f"'{text}' is not an S3 location; did you mean s3://{text[3:].lstrip('/')}?")
    from shotbench.diskspace import check_path

    check_path(text, "data folder")
    return Location(kind="local", path=_local_path(text))


def _local_path(text: str) -> Path:
    """The absolute folder `text` names (`~` and `~user` expanded, links resolved), or one sentence."""
    try:
        path = Path(text).expanduser()
    except RuntimeError:  # `~nosuchuser/x`: pathlib has no home to put there
        user = text.split("/", 1)[0]
        raise UserError(
            f"the data folder '{text}' starts with {user}, but there is no such user here whose home it could "
            "be; write the folder's full path."
        ) from None
    try:
        return path.resolve()
    except (RuntimeError, OSError):  # a symbolic link that loops (Python < 3.13 raises)
        raise UserError(
            f"{text} is a symbolic link that loops (it leads back to itself); point it at the folder of "
            "shot files, or give that folder."
        ) from None


@dataclass(frozen=True)
class ShotObject:
    """One shot file: an S3 key (or, for local data, an absolute path), its size and ETag."""

    key: str
    size: int
    etag: str | None = None


def is_shot_name(name: str) -> bool:
    return name.lower().endswith(HDF5_SUFFIXES)


def check_local_folder(path: Path) -> None:
    """A local data location must be an existing folder: one sentence otherwise (a missing one, a
    file, a link that loops or leads nowhere, a folder that cannot be read)."""
    from shotbench.store.localdir import check_folder

    check_folder(path)


def _local_files(loc: Location) -> list[ShotObject]:
    """The folder's files as `stage` uploads them (`shotbench.store.localdir`): hidden files and
    folders left out, every file readable or one sentence naming it."""
    from shotbench.store.localdir import files_below

    assert loc.path is not None
    check_local_folder(loc.path)
    return [ShotObject(key=str(p), size=size, etag=None) for p, size in files_below(loc.path)]


def _s3_objects(loc: Location, cfg: S3Config, client: Any = None) -> list[ShotObject]:
    if cfg.endpoint_url:
        _check_endpoint(cfg.endpoint_url)
    client = client or cfg.question_client()
    out: list[ShotObject] = []
    try:
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=loc.bucket, Prefix=loc.prefix):
            for obj in page.get("Contents", []):
                if obj["Key"].endswith("/"):
                    continue
                out.append(ShotObject(obj["Key"], int(obj["Size"]), (obj.get("ETag") or "").strip('"') or None))
    except Exception as exc:  # noqa: BLE001 - explain() turns any client error into one sentence
        raise explain(exc, loc, cfg) from None
    return sorted(out, key=lambda o: o.key)


def list_shot_files(loc: Location, cfg: S3Config | None = None) -> list[ShotObject]:
    """The shot files (names ending .h5/.hdf5/.hdf/.he5) under a location, sorted by key."""
    if loc.kind == "local":
        objs = _local_files(loc)
    else:
        cfg = cfg or S3Config.from_env()
        objs = _again_if_dropped(lambda: _s3_objects(loc, cfg))
    return [o for o in objs if is_shot_name(o.key)]


def check_reachable(cfg: S3Config) -> None:
    """A TCP connect to the endpoint within CONNECT_TIMEOUT, or one sentence (UserError)."""
    _check_reachable(cfg)


def endpoint_setting() -> str:
    """The setting a user fixes to change the endpoint: the variable they set, else the usual one."""
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
        if os.environ.get(name):
            return name
    return "AWS_ENDPOINT_URL_S3"


def _check_endpoint(url: str) -> None:
    """An endpoint URL botocore can use (http or https with a host and a valid port), or one sentence."""
    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
    except ValueError:
        ok = False
    if not ok:
        raise UserError(
            f"the S3 endpoint '{one_line(url)}' is not an http(s) URL; set {endpoint_setting()} like http://host:port."
        )
    if parts.query or parts.fragment:  # botocore refuses it with a traceback of its own
        raise UserError(
            f"the S3 endpoint '{one_line(url)}' carries a query or a fragment; set {endpoint_setting()} to "
            "scheme://host:port alone."
        )


def _tls_failure(exc: BaseException, cfg: S3Config) -> UserError:
    """One sentence for a TLS handshake that failed: the CA bundle cannot be read, the endpoint's
    certificate is not one it vouches for, or the port does not speak TLS at all."""
    reason = str(exc)
    bundle = cfg.ca_bundle or os.environ.get("AWS_CA_BUNDLE")
    where, setting = cfg.endpoint_url or "AWS", endpoint_setting()
    hint = "for the embedded server: `source .shotbench/env.sh`"
    if "WRONG_VERSION_NUMBER" in reason:
        return UserError(f"the S3 endpoint {where} does not speak TLS on that port; write http:// in {setting}.")
    if bundle and any(t in reason for t in ("No such file", "Is a directory", "NO_CERTIFICATE", "PEM", "Errno")):
        return UserError(
            f"AWS_CA_BUNDLE names {one_line(bundle)}, which is not a readable file of PEM certificates; point it "
            f"at the CA's PEM file ({hint}) or unset it."
        )
    if "CERTIFICATE_VERIFY_FAILED" in reason:
        trusted = f"the CA bundle {one_line(bundle)}" if bundle else "this machine's CA store"
        return UserError(
            f"the S3 endpoint {where} presented a certificate that {trusted} does not vouch for; set "
            f"AWS_CA_BUNDLE to the PEM file of its CA ({hint})."
        )
    return UserError(
        f"TLS with the S3 endpoint {where} failed ({one_line(reason)[-160:]}); check {setting} and AWS_CA_BUNDLE."
    )


def _check_reachable(cfg: S3Config) -> None:
    if not cfg.endpoint_url:
        return
    _check_endpoint(cfg.endpoint_url)
    parts = urlsplit(cfg.endpoint_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=CONNECT_TIMEOUT):
            pass
    except OSError as exc:
        raise UserError(
            f"cannot reach the S3 endpoint {cfg.endpoint_url} ({exc.strerror or exc}); start the embedded "
            f"server with `shotbench server start` or fix {endpoint_setting()}."
        ) from None


def silent(cfg: S3Config) -> UserError:
    """The sentence for an endpoint that took a request and sent no answer in time."""
    return UserError(
        f"the S3 endpoint {cfg.endpoint_url or 'AWS'} accepted the connection but did not answer within "
        f"{PREFLIGHT_READ_TIMEOUT:.0f} s; check that the server is healthy (or fix {endpoint_setting()}) and retry."
    )


def explain(exc: BaseException, loc: Location, cfg: S3Config) -> BaseException:
    """Map a botocore failure to one sentence naming the fix (other exceptions pass through)."""
    from botocore.exceptions import (
        ClientError,
        ConnectionClosedError,
        ConnectTimeoutError,
        EndpointConnectionError,
        EndpointResolutionError,
        NoCredentialsError,
        ReadTimeoutError,
        SSLError,
    )

    where = cfg.endpoint_url or "AWS"
    key = mask(cfg.access_key)
    if isinstance(exc, UserError):
        return exc
    if isinstance(exc, SSLError):
        return _tls_failure(exc, cfg)
    if isinstance(exc, EndpointResolutionError):
        return UserError(
            f"botocore cannot use the S3 endpoint {where} ({one_line(exc)}); set {endpoint_setting()} to scheme://host:port."
        )
    if isinstance(exc, NoCredentialsError):
        return UserError(
            "no AWS credentials were found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), "
            "or use the embedded server (`shotbench server start`)."
        )
    if isinstance(exc, (EndpointConnectionError, ConnectTimeoutError)):
        if not cfg.endpoint_url:
            return UserError(
                f"cannot reach AWS S3 in {cfg.region}; check this machine's internet access, or set "
                "AWS_ENDPOINT_URL_S3 for another S3 service (`shotbench server start` runs one here)."
            )
        return UserError(
            f"cannot reach the S3 endpoint {where}; start the embedded server with `shotbench server start` "
            f"or fix {endpoint_setting()}."
        )
    if isinstance(exc, ReadTimeoutError):
        return silent(cfg)
    if isinstance(exc, ConnectionClosedError):
        tls = f"; if it serves https, write https:// in {endpoint_setting()}" if where.startswith("http://") else ""
        return DroppedConnection(
            f"the S3 endpoint {where} closed the connection before answering, each time it was "
            f"asked; check the network path to it (a proxy, a load balancer{tls}) and retry."
        )
    if not isinstance(exc, ClientError):
        return exc
    err = exc.response.get("Error", {})
    code = str(err.get("Code", ""))
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    headers = exc.response.get("ResponseMetadata", {}).get("HTTPHeaders", {}) or {}
    if code.isdigit() and not any(str(h).lower().startswith("x-amz-") for h in headers):
        return UserError(
            f"{where} answered HTTP {status} without any S3 headers, so it is not an S3 server; "
            f"point {endpoint_setting()} at an S3 endpoint."
        )
    if code in ("NoSuchBucket",) or (code == "404" and not loc.prefix):
        path = urlsplit(cfg.endpoint_url).path.strip("/") if cfg.endpoint_url else ""
        also = (
            f" (or drop the path /{path} from {endpoint_setting()}: an endpoint is scheme://host:port)" if path else ""
        )
        return UserError(
            f"bucket '{loc.bucket}' does not exist at {where}; create it or upload shot files with "
            f"`shotbench stage DIR s3://{loc.bucket}/{loc.prefix}`{also}."
        )
    if code in ("NoSuchKey", "404"):
        return UserError(f"an object under {loc.uri()} vanished while being read; re-run `shotbench stage` and retry.")
    if code in ("InvalidAccessKeyId", "XAdminUserNotFound"):  # the latter: versitygw
        return UserError(
            f"the access key {key} is not known at {where}; check AWS_ACCESS_KEY_ID "
            "(for the embedded server: `source .shotbench/env.sh`)."
        )
    if code == "SignatureDoesNotMatch":
        return UserError(
            f"{where} refused the secret key for access key {key}; check AWS_SECRET_ACCESS_KEY "
            "(for the embedded server: `source .shotbench/env.sh`)."
        )
    if code in ("InvalidToken", "InvalidSecurity"):  # malformed or unknown, not expired: refreshing may not help
        return UserError(
            f"{where} does not accept the AWS session token as valid; check AWS_SESSION_TOKEN (unset it for "
            "long-term keys) or get new temporary credentials."
        )
    if code in ("ExpiredToken", "TokenRefreshRequired"):
        return UserError(
            "the AWS session token has expired; refresh your credentials (e.g. `aws sso login`) and retry."
        )
    if code in ("PermanentRedirect", "AuthorizationHeaderMalformed", "IllegalLocationConstraintException"):
        region = err.get("Region") or exc.response.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get(
            "x-amz-bucket-region", "its own region"
        )
        return UserError(
            f"bucket '{loc.bucket}' lives in {region}, not {cfg.region}; set AWS_REGION={region} and retry."
        )
    if code in ("AccessDenied", "403", "AllAccessDisabled") or status == 403:
        return UserError(
            f"access to {loc.uri()} is denied for access key {key}; grant it s3:ListBucket and s3:GetObject "
            "or use credentials that have them."
        )
    return UserError(
        f"S3 request to {where} failed with {code or status}: {err.get('Message', '')}; check the location and credentials."
    )


def preflight(loc: Location, cfg: S3Config | None = None) -> list[ShotObject]:
    """Check a location before a benchmark: reachable, bucket, credentials, non-empty, HDF5."""
    if loc.kind == "local":
        objs = _local_files(loc)
        shots = [o for o in objs if is_shot_name(o.key)]
        _check_not_empty(loc, objs, shots)
        with open(shots[0].key, "rb") as fh:
            head = fh.read(SIGNATURE_PROBE_BYTES)
        _check_signature(shots[0].key, head)
        return shots
    cfg = cfg or S3Config.from_env()
    _check_reachable(cfg)
    if (not cfg.access_key or not cfg.secret_key) and not cfg.anonymous:
        raise UserError(
            "no AWS credentials were found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), "
            "or for the embedded server run `source .shotbench/env.sh`."
        )
    client = cfg.question_client()
    objs = _again_if_dropped(lambda: _s3_objects(loc, cfg, client))
    shots = [o for o in objs if is_shot_name(o.key)]
    _check_not_empty(loc, objs, shots)

    def probe() -> bytes:
        rng = f"bytes=0-{SIGNATURE_PROBE_BYTES - 1}"
        try:
            return bytes(client.get_object(Bucket=loc.bucket, Key=shots[0].key, Range=rng)["Body"].read())
        except Exception as exc:  # noqa: BLE001 - explain() turns any client error into one sentence
            raise explain(exc, loc, cfg) from None

    head = _again_if_dropped(probe)
    _check_signature(f"s3://{loc.bucket}/{shots[0].key}", head)
    return shots


def _again_if_dropped(call: Callable[[], T]) -> T:
    """`call()`, tried again when the connection was dropped before an answer (a flaky network, a
    proxy that resets): the preflight's client makes one attempt so that a silent endpoint is
    reported in seconds, and a reset is not silence."""
    for _ in range(PREFLIGHT_ATTEMPTS - 1):
        try:
            return call()
        except DroppedConnection:
            pass
    return call()


def _check_not_empty(loc: Location, objs: list[ShotObject], shots: list[ShotObject]) -> None:
    empty = [o for o in shots if o.size == 0]
    if empty:
        raise UserError(f"{empty[0].key} under {loc.uri()} is an empty (0-byte) file; remove it or upload it again.")
    if shots:
        return
    if objs:
        raise UserError(
            f"{loc.uri()} holds {len(objs)} file{'s' if len(objs) != 1 else ''} but none named *.h5 or *.hdf5; point the data location at "
            "the folder of shot files."
        )
    hint = f"`shotbench stage DIR {loc.uri()}`" if loc.kind == "s3" else f"`shotbench synth --out {loc.uri()}`"
    raise UserError(f"{loc.uri()} holds no shot files; put some there with {hint}.")


def _check_signature(name: str, head: bytes) -> None:
    if not looks_like_hdf5(head):
        raise UserError(
            f"{name} is not an HDF5 file (no HDF5 signature in its first 2 KiB); point the data location "
            "at a folder of HDF5 shot files."
        )
