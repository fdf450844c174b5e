"""AWS configuration mistakes as one sentence, the same in every command.

botocore reports a profile that does not exist, a config file that does not parse or a
profile with half its keys as exceptions, raised wherever the first session or client
happens to be made, so each command ended in a different traceback. An unreadable
credentials file is worse: botocore skips it silently and the user is told there are no
credentials. `check_files` finds that file; `translate` turns botocore's configuration
exceptions into one `UserError` naming the variable or file to fix. `S3Config.from_env`
uses both, and `shotbench.cli` applies `translate` to whatever escapes a command, so no
entry point can miss it. botocore waits for a profile's credential_process without a bound:
`bound_credential_processes` gives each one CREDENTIAL_PROCESS_TIMEOUT, then one sentence.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shotbench.errors import UserError, one_line
from shotbench.processes import kill_tree

CONFIG_VAR = "AWS_CONFIG_FILE"
CREDENTIALS_VAR = "AWS_SHARED_CREDENTIALS_FILE"
CREDENTIAL_PROCESS_TIMEOUT = 60.0  # seconds a profile's credential_process may take to answer


def config_file() -> Path:
    """The shared config file botocore reads (AWS_CONFIG_FILE, else ~/.aws/config)."""
    return Path(os.path.expandvars(os.environ.get(CONFIG_VAR) or "~/.aws/config")).expanduser()


def credentials_file() -> Path:
    """The shared credentials file botocore reads (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials)."""
    return Path(os.path.expandvars(os.environ.get(CREDENTIALS_VAR) or "~/.aws/credentials")).expanduser()


def _files() -> list[tuple[str, str, Path]]:
    return [("config file", CONFIG_VAR, config_file()), ("credentials file", CREDENTIALS_VAR, credentials_file())]


def check_files() -> None:
    """Refuse a config or credentials file that exists but cannot be read: botocore would skip
    it without a word and the user would hunt for credentials that are right there."""
    for what, var, path in _files():
        if not os.path.lexists(path):
            continue  # no file is a valid setup (environment variables, instance roles)
        try:
            with open(path, "rb") as fh:
                fh.read(1)
        except OSError as exc:
            raise UserError(
                f"the AWS {what} {path} cannot be read ({exc.strerror or exc}); fix its permissions "
                f"or point {var} at a readable file."
            ) from None


def _which(path: object) -> tuple[str, str]:
    """("config file", AWS_CONFIG_FILE) or the credentials pair, for a path botocore named."""
    text = str(path)
    if text and Path(text).expanduser() == credentials_file():
        return "credentials file", CREDENTIALS_VAR
    return "config file", CONFIG_VAR


def _profiles() -> list[str]:
    """The profiles the user's files define (empty when they cannot be read)."""
    try:
        import botocore.session

        return sorted(botocore.session.Session(profile="default").available_profiles)
    except Exception:  # noqa: BLE001 - only a hint for the message; the real error is reported
        return []


def _line(error: object) -> str:
    """Where a config file fails to parse, without echoing the line (it may hold a secret key)."""
    lineno = getattr(error, "lineno", None)
    if lineno is None:
        errors = getattr(error, "errors", None) or []
        lineno = errors[0][0] if errors and isinstance(errors[0], tuple) else None
    return f"at line {lineno}" if lineno else "not valid INI"


def translate(exc: BaseException) -> UserError | None:
    """One sentence for an AWS configuration mistake, or None when `exc` is not one."""
    if isinstance(exc, UserError):
        return exc
    if isinstance(exc, OSError) and exc.filename is not None:
        for what, var, path in _files():
            if Path(str(exc.filename)).expanduser() == path:
                return UserError(
                    f"the AWS {what} {path} cannot be read ({exc.strerror or exc}); fix its permissions "
                    f"or point {var} at a readable file."
                )
        return None
    try:
        from botocore import exceptions as bx
    except ImportError:  # pragma: no cover - botocore is a dependency of the package
        return None
    kwargs = getattr(exc, "kwargs", {}) or {}
    if isinstance(exc, bx.ProfileNotFound):
        name = kwargs.get("profile", "")
        var = "AWS_PROFILE" if os.environ.get("AWS_PROFILE") == name else "AWS_DEFAULT_PROFILE"
        known = _profiles()
        choice = f"set it to one of: {', '.join(known)}" if known else "define that profile with `aws configure`"
        return UserError(
            f"the AWS profile '{one_line(name)}' named by {var} is not in {config_file()} or {credentials_file()}; "
            f"unset {var} or {choice}."
        )
    if isinstance(exc, bx.ConfigParseError):
        what, var = _which(kwargs.get("path", ""))
        return UserError(
            f"the AWS {what} {kwargs.get('path', '')} cannot be parsed ({_line(kwargs.get('error'))}); "
            f"fix its syntax or point {var} at a valid file."
        )
    if isinstance(exc, bx.PartialCredentialsError):
        return UserError(
            f"the AWS credentials from the {kwargs.get('provider', 'configuration')} are incomplete "
            f"(no {kwargs.get('cred_var', 'key')}); add the missing value or remove the partial entry."
        )
    if isinstance(exc, bx.CredentialRetrievalError):
        return UserError(
            f"AWS credentials could not be fetched from the {kwargs.get('provider', 'configured source')}; "
            "fix that profile's credential_process/SSO settings or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY."
        )
    if isinstance(exc, (bx.InvalidConfigError, bx.InvalidRegionError, bx.UnknownCredentialError)):
        return UserError(
            f"the AWS configuration is invalid ({one_line(exc)}); fix {config_file()} or the AWS_* variables."
        )
    return None


class _CredentialProcess(subprocess.Popen):
    """A credential_process as botocore starts it, with a bound on its answer: botocore's own
    `communicate()` waits for ever, so one that never answers hung every command."""

    profile = "default"

    def communicate(self, input: Any = None, timeout: float | None = None) -> Any:
        bound = CREDENTIAL_PROCESS_TIMEOUT if timeout is None else timeout
        try:
            return super().communicate(input, bound)
        except BaseException as exc:  # the bound, or an interrupt: the process must not outlive the wait
            kill_tree(self.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.wait(timeout=5)  # SIGKILLed: at once, unless stuck in the kernel
            for pipe in (self.stdout, self.stderr):
                if pipe is not None:
                    pipe.close()
            if not isinstance(exc, subprocess.TimeoutExpired):
                raise
            program = Path(str(self.args[0] if isinstance(self.args, list | tuple) else self.args)).name
            raise UserError(  # the program's name alone: its arguments may carry a secret
                f"the credential_process of AWS profile '{one_line(self.profile)}' ({one_line(program)}) gave no "
                f"credentials within {bound:g} s; run it alone to see what it waits for, fix it "
                f"in {config_file()}, or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY."
            ) from None


def _bounded(profile: str) -> Callable[..., subprocess.Popen]:
    def popen(*args: Any, **kwargs: Any) -> subprocess.Popen:
        proc = _CredentialProcess(*args, **kwargs)
        proc.profile = profile
        return proc

    return popen


def bound_credential_processes(resolver: Any) -> Any:
    """botocore's credential resolver, each credential_process it runs bounded by
    CREDENTIAL_PROCESS_TIMEOUT. botocore takes the process starter as an argument of its provider
    but builds the resolver itself, so it is put in place on the providers the resolver holds."""
    from botocore.credentials import ProcessProvider

    for provider in getattr(resolver, "providers", None) or []:
        if isinstance(provider, ProcessProvider):
            provider._popen = _bounded(str(getattr(provider, "_profile_name", "") or "default"))
    return resolver
