"""Credentials per case, current when the case starts: the seam between the AWS chain and a task.

On EC2 the credentials are the instance role's: temporary, with a session token, and replaced by
the metadata service well before they expire. A run that froze one set at its start would sign
its later cases with a set that has been replaced or has expired. So the orchestrator asks the
chain again for every case (`CredentialSource.current`), the set travels with the case's tasks
(`read.protocol.Spec.credentials`, so workers of a cluster the run did not start get it too),
and each worker process puts it in place before it builds the case's backend (`apply`).
Nothing here is printed: `CaseCredentials.public` is the form that may be.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shotbench.redact import CREDENTIAL_VARS, hide, mask

if TYPE_CHECKING:
    from shotbench.store.s3 import S3Config

ANONYMOUS = "anonymous"
GIVEN = "given"  # keys handed to shotbench directly (the embedded server's own pair)
ANONYMOUS_ENV = "SHOTBENCH_ANONYMOUS"  # set in a worker for a case that reads unsigned
# With these a library's own credential chain finds nothing, so it cannot sign behind our back.
_NO_CHAIN = {"AWS_EC2_METADATA_DISABLED": "true", "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
             "AWS_CONFIG_FILE": os.devnull}  # fmt: skip
# Error texts by which S3 (AWS, versitygw) refuses a set that expired or was revoked.
REFUSED = ("ExpiredToken", "InvalidAccessKeyId", "InvalidToken", "TokenRefreshRequired", "XAdminUserNotFound",
           "SignatureDoesNotMatch", "403", "Forbidden", "AccessDenied")  # fmt: skip


@dataclass(frozen=True)
class CaseCredentials:
    """One set, as fetched for one case; `source` is where the chain found it (botocore's name for
    the provider: `iam-role`, `env`, `shared-credentials-file`, ...), `given` or `anonymous`."""

    source: str
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    expires: str = ""  # ISO 8601 UTC, "" when the set does not expire
    fetched: str = ""

    def public(self) -> dict[str, str | None]:
        """What may be printed or stored: where from, until when, and the key's first characters."""
        return {"source": self.source, "access_key": mask(self.access_key), "expires": self.expires,
                "fetched": self.fetched}  # fmt: skip

    def secrets(self) -> tuple[str | None, ...]:
        return (self.access_key, self.secret_key, self.session_token)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "access_key": self.access_key, "secret_key": self.secret_key,
                "session_token": self.session_token, "expires": self.expires, "fetched": self.fetched}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CaseCredentials:
        return cls(str(data.get("source") or ""), data.get("access_key"), data.get("secret_key"),
                   data.get("session_token"), str(data.get("expires") or ""), str(data.get("fetched") or ""))  # fmt: skip


def _iso(when: dt.datetime | None) -> str:
    if when is None:
        return ""
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _now() -> str:
    return _iso(dt.datetime.now(dt.UTC))


class CredentialSource:
    """Where a run's credentials come from; `current()` is asked once per case.

    For settings that came from the AWS chain (`S3Config.from_env`), botocore's resolver is run
    again each time: for an instance role that is one request to the metadata service, which
    answers with the set it hands out now (botocore's own refresh would keep an older set until 15
    minutes before its expiry, and the service may have replaced it long before). Keys given
    directly (the embedded server) are used as given; `anonymous` reads unsigned."""

    def __init__(self, s3: S3Config | None, anonymous: bool = False) -> None:
        self.s3 = s3
        self.anonymous = anonymous or bool(s3 is not None and getattr(s3, "anonymous", False))
        self._resolver: Any = None

    def from_chain(self) -> bool:
        return self.s3 is not None and getattr(self.s3, "source", GIVEN) != GIVEN

    def current(self) -> CaseCredentials | None:
        """The set for the case about to start (None without S3)."""
        if self.s3 is None:
            return None
        if self.anonymous:
            return CaseCredentials(ANONYMOUS, fetched=_now())
        if not self.from_chain():
            return CaseCredentials(GIVEN, self.s3.access_key, self.s3.secret_key, self.s3.session_token,
                                   fetched=_now())  # fmt: skip
        creds = self._resolve()
        if creds is None:
            return CaseCredentials("none", fetched=_now())
        frozen = creds.get_frozen_credentials()
        found = CaseCredentials(
            str(getattr(creds, "method", "") or "chain"),
            frozen.access_key,
            frozen.secret_key,
            frozen.token,
            expires=_iso(getattr(creds, "_expiry_time", None)),  # botocore keeps no public accessor
            fetched=_now(),
        )
        hide(found.secrets())
        return found

    def _resolve(self) -> Any:
        """A fresh set from botocore's chain (its config is loaded once, the providers run each time)."""
        if self._resolver is None:
            import botocore.session

            from shotbench.store.awsconfig import bound_credential_processes

            self._resolver = bound_credential_processes(botocore.session.Session().get_component("credential_provider"))
        return self._resolver.load_credentials()


def spec_credentials(data: dict[str, Any] | None) -> CaseCredentials | None:
    """The set a task message carries (`Spec.credentials`), or None for an older orchestrator's."""
    return CaseCredentials.from_json(data) if data else None


def apply(creds: CaseCredentials | None, env: Any = None) -> None:
    """Put a case's set in place in this (worker) process before its backend is built.

    The AWS_* variables are what every reader here takes its keys from (`s3_from_environ`) and what
    a library's own chain (libhdf5 2.x's aws-c-auth) finds first, so one assignment serves both.
    For `anonymous` they are removed and the chains are shut (`_NO_CHAIN`)."""
    env = os.environ if env is None else env
    if creds is None:
        return
    for name in CREDENTIAL_VARS:
        env.pop(name, None)
    env.pop(ANONYMOUS_ENV, None)
    if creds.source == ANONYMOUS:
        env[ANONYMOUS_ENV] = "1"
        env.update(_NO_CHAIN)
        return
    hide(creds.secrets())
    if creds.access_key and creds.secret_key:
        env["AWS_ACCESS_KEY_ID"] = creds.access_key
        env["AWS_SECRET_ACCESS_KEY"] = creds.secret_key
        if creds.session_token:
            env["AWS_SESSION_TOKEN"] = creds.session_token


def refused(error: str) -> bool:
    """Whether a row's error is S3 refusing the signature's credentials (expired, revoked)."""
    return any(code in error for code in REFUSED)


def refused_sentence(case_id: str, creds: CaseCredentials | None) -> str:
    """The one sentence for a case whose credentials were refused part-way."""
    where = f"{creds.source} set fetched {creds.fetched}" if creds else "its credentials"
    return (
        f"  {case_id}: S3 refused the credentials ({where}): they expired or were replaced during the case; "
        "the run goes on and the next case fetches a fresh set."
    )
