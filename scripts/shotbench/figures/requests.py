"""What each backend asked of S3, next to its runtime: client-counted requests, bytes and
byte amplification per case, and the anatomy of an open (from `shotbench anatomy`).

Kept apart from `analysis`/`plots` so the report gains one section without touching theirs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

COLUMNS = [
    "client-gets",
    "client-heads",
    "client-bytes",
    "bytes-needed",
    "bytes-returned",
    "amplification",
    "request-p50-ms",
    "request-p99-ms",
    "total-runtime",
]


def request_table(cases: pd.DataFrame) -> pd.DataFrame:
    """Per series, mode and workers (medians over trials): runtime, requests, MB moved vs needed
    (stored bytes the reads must touch) and returned (decompressed payload)."""
    c = cases.copy()
    for col in COLUMNS:
        c[col] = pd.to_numeric(c[col], errors="coerce") if col in c.columns else float("nan")
    c = c[c["client-bytes"].notna()]
    if c.empty:
        return pd.DataFrame()
    keys = [k for k in ("series", "obj-type", "num-workers") if k in c.columns]
    out = c.groupby(keys, sort=False)[COLUMNS].median().reset_index()
    out["client-MB"] = out.pop("client-bytes") / 1e6
    out["needed-MB"] = out.pop("bytes-needed") / 1e6
    out["returned-MB"] = out.pop("bytes-returned") / 1e6
    return out[
        keys
        + [
            "total-runtime",
            "client-gets",
            "client-heads",
            "client-MB",
            "needed-MB",
            "returned-MB",
            "amplification",
            "request-p50-ms",
            "request-p99-ms",
        ]
    ]


def amplification_plot(metrics: pd.DataFrame, mode: str, palette: dict[str, str]) -> Any:
    """Bytes the client fetched ÷ stored bytes the reads must touch, per case, vs workers (None if not counted)."""
    from shotbench.figures import plots

    if "amplification" not in metrics.columns:
        return None
    return plots.metric_plot(
        metrics,
        mode,
        "amplification",
        "Bytes fetched ÷ stored bytes needed",
        "byte amplification (client-counted)",
        palette,
        one_line=True,
    )


def anatomy_table(path: Path) -> pd.DataFrame:
    """One row per backend from an anatomy.json: cold/warm open, requests per open, CA cost, remedies."""
    doc = json.loads(Path(path).read_text())
    rows = []
    for name, r in doc["backends"].items():
        s = r["summary"]
        st = s.get("strace_warm_median") or {}
        rows.append(
            {
                "backend": name,
                "cold open ms": s["cold_open_ms"],
                "warm open ms": s["warm_open_ms"],
                "first read ms": s["warm_first_read_ms"],
                "GETs/open": s["gets_per_open"],
                "HEADs/open": s["heads_per_open"],
                "MB/open": (s["bytes_per_open"] or 0) / 1e6,
                "CA loads/open": st.get("ca_bundle_loads"),
                "CA ms/open (strace)": st.get("ca_bundle_ms"),
                "warm open ms, 1-cert CA": s.get("warm_open_ms_one_cert_bundle"),
                "ms/signal, open per signal": s["one_open_per_signal_ms"],
                "ms/signal, one open": s["one_open_all_signals_ms_per_signal"],
            }
        )
    return pd.DataFrame(rows)


def latest_anatomy(folder: Path) -> Path | None:
    """The newest anatomy.json under `folder` (data/anatomy), if any."""
    found = sorted(Path(folder).glob("*/anatomy.json"))
    return found[-1] if found else None
