"""Credentials never leave in a message: one scrubber for every error text that may reach a
CSV, run.json, a log or the terminal.

Library and tool errors sometimes echo a request's signing material (a presigned URL, a
command line, a botocore debug line). Both benchmarks pass every such text through `scrub`
before storing or printing it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

MASK = "***"
# The variables that carry credentials into a worker process or a command-line tool.
CREDENTIAL_VARS = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID")
MIN_SECRET_CHARS = 4  # a shorter value would blank out ordinary words, and hides nothing
# Values this process was handed besides its environment (a case's credentials travel with its
# task, `shotbench.store.credentials`): hidden by `scrub` too, including sets already replaced.
_HANDED: set[str] = set()


def hide(values: Iterable[str | None]) -> None:
    """Have `scrub` hide these values from now on (a case's credentials, given in its message)."""
    _HANDED.update(v for v in values if v and len(v) >= MIN_SECRET_CHARS)


def credentials_in(env: Mapping[str, str]) -> list[str | None]:
    """The credential values an environment holds (None where unset)."""
    return [env.get(name) for name in CREDENTIAL_VARS]


def scrub(text: str, secrets: Iterable[str | None] | None = None) -> str:
    """`text` with every credential value replaced by `MASK`.

    `secrets` are the values to hide (e.g. `S3Config.secrets()`); by default, those this
    process was given in its environment.
    """
    for value in [*credentials_in(os.environ), *_HANDED] if secrets is None else secrets:
        if value and len(value) >= MIN_SECRET_CHARS:
            text = text.replace(value, MASK)
    return text


def mask(key: str | None) -> str | None:
    """The only form of an access key that may appear in output: first 4 characters."""
    if not key:
        return None
    return key[:4] + "…"
