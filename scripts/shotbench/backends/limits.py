"""Bounded network waits, one set of numbers for every S3 client a backend uses.

Without them a dead or stalled server kept each client in its own retry loop for minutes
(obstore's default retry window is three minutes, s3fs retries five times on top of
botocore's own retries). Each client gets these through its own knob; the ROS3 drivers,
which expose none through h5py, are bounded by the case deadline around their process.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

CONNECT_TIMEOUT_S = 5
READ_TIMEOUT_S = 60  # one ranged GET of a few MB on a slow link fits easily
MAX_RETRIES = 3
RETRY_WINDOW_S = 30


def obstore_client_options() -> dict[str, Any]:
    """`client_options` for an obstore store (Rust reqwest timeouts)."""
    return {"allow_http": True, "connect_timeout": f"{CONNECT_TIMEOUT_S}s", "timeout": f"{READ_TIMEOUT_S}s"}


def obstore_retry_config() -> dict[str, Any]:
    """`retry_config` for an obstore store: few retries, inside a short window."""
    return {
        "max_retries": MAX_RETRIES,
        "retry_timeout": timedelta(seconds=RETRY_WINDOW_S),
        "backoff": {"init_backoff": timedelta(milliseconds=100), "max_backoff": timedelta(seconds=5), "base": 2},
    }


def botocore_config_kwargs() -> dict[str, Any]:
    """`config_kwargs` for s3fs's aiobotocore client (botocore.config.Config fields)."""
    return {
        "connect_timeout": CONNECT_TIMEOUT_S,
        "read_timeout": READ_TIMEOUT_S,
        "retries": {"max_attempts": MAX_RETRIES, "mode": "standard"},
    }
