"""Reliability per backend: what faults did to a run, next to a fault-free run of the same plan.

Read from run folders only (workers.csv, cases.csv, run.json): tasks, failed tasks, retries the
client reported, rows whose bytes did not match the local copy, the faults the HTTP fault proxy
injected into the backend's requests (run.json `faults_injected`), and the slowdown of the median
ok-case runtime against the fault-free run (same backend, mode, workers, page buffer).

`injected` is counted where the fault is made, not by the client; it is shown next to `retries`
because a task that ended ok after an injected 503, 500 or cut body must have asked again, so for
the clients that cannot count their retries (obstore) it is the one number that says they did.
`server-extra` is the other side of the same question for faults below HTTP (toxiproxy's resets
and cut connections, which the server does not see): GETs on the wire beyond the client's own
count, where the wire is the server's access log plus the GETs the HTTP fault proxy answered
itself (they never reach the server; without adding them back, a client that counts every
attempt would show fewer GETs than it sent). Both are measured at the embedded server's side,
never by the client, and are labelled so; on a real bucket they are empty.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shotbench.records.schema import RUN_KIND, configuration_key
from shotbench.records.status import OK, STALL, row_status
from shotbench.runs import RunFolder, read_meta
from shotbench.store.faultproxy import KINDS

COLUMNS = [
    "backend",
    "rows",
    "failed",
    "timeouts",
    "stalls",
    "retries",
    "injected",
    "server-extra",
    "wrong-bytes",
    "verified",
    "slowdown",
]


def _median_runtimes(rows: list[dict[str, str]]) -> dict[tuple[str, ...], float]:
    groups: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for r in rows:
        if row_status(r) == OK:
            groups[configuration_key(r)].append(float(r["total-runtime"]))
    return {k: statistics.median(v) for k, v in groups.items()}


def table(run: Path, baseline: Path | None = None) -> list[dict[str, Any]]:
    """One row per backend of `run`; `slowdown` (median over matching cases of faulted ÷
    fault-free runtime) needs `baseline`, else it is None."""
    folder = RunFolder(run, RUN_KIND)
    out: dict[str, dict[str, Any]] = {}
    for w in folder.details():
        b = out.setdefault(
            w["backend"],
            {c: 0 for c in COLUMNS}
            | {"backend": w["backend"], "retries": None, "injected": None, "server-extra": None},
        )
        b["rows"] += 1
        status = w.get("status") or ("failed" if w.get("error") else OK)
        b["failed"] += status not in (OK, STALL)  # a stall finished, late: counted on its own
        b["timeouts"] += status == "timeout"
        b["stalls"] += status == STALL
        if w.get("retries", "") != "":
            b["retries"] = (b["retries"] or 0) + int(w["retries"])
        b["wrong-bytes"] += w.get("verified") == "no"
        b["verified"] += w.get("verified") == "yes"
    meta = _meta(run)
    for name, count in injected_by_backend(meta).items():
        if name in out:
            out[name]["injected"] = count
    for name, extra in server_extra_gets(folder.cases(), answered_gets_by_case(meta)).items():
        if name in out:
            out[name]["server-extra"] = extra
    faulted = _median_runtimes(folder.cases())
    clean = _median_runtimes(RunFolder(baseline, RUN_KIND).cases()) if baseline else {}
    for name, b in out.items():
        ratios = [faulted[k] / clean[k] for k in faulted if k[0] == name and k in clean and clean[k] > 0]
        b["slowdown"] = statistics.median(ratios) if ratios else None
    return [out[k] for k in sorted(out)]


def server_extra_gets(cases: list[dict[str, str]], answered: dict[str, int] | None = None) -> dict[str, int]:
    """Per backend: GETs on the wire beyond those the client counted, over the cases where both
    were measured (a client that counts calls, not attempts, shows its retries here). The wire
    is the server's access log plus, behind the HTTP fault proxy, the GETs the proxy answered
    itself (`answered`, per case); a case behind the proxy without that count is left out, as
    its server count alone would be short."""
    out: dict[str, int] = {}
    for c in cases:
        if c.get("gets", "") == "" or c.get("client-gets", "") == "":
            continue
        if answered is not None and c["case-id"] not in answered:
            continue
        wire = int(float(c["gets"])) + (answered or {}).get(c["case-id"], 0)
        out[c["backend"]] = out.get(c["backend"], 0) + wire - int(float(c["client-gets"]))
    return out


def answered_gets_by_case(meta: dict[str, Any]) -> dict[str, int] | None:
    """GETs the HTTP fault proxy answered itself in each case (None: the run had no HTTP proxy;
    a case recorded without the count is missing)."""
    from shotbench.store.faultproxy import ANSWERED_GETS

    record = meta.get("faults_injected")
    if not record:
        return None
    return {
        case_id: int(counts[ANSWERED_GETS])
        for case_id, counts in (record.get("by_case") or {}).items()
        if ANSWERED_GETS in counts
    }


def injected_by_backend(meta: dict[str, Any]) -> dict[str, int]:
    """Faults the HTTP proxy injected into each backend's own requests (its cases, not the raw-get
    ceilings or health checks); empty when the run had no HTTP faults."""
    record = meta.get("faults_injected") or {}
    backend_of = {c.get("case_id"): c.get("backend") for c in meta.get("plan") or [] if isinstance(c, dict)}
    out: dict[str, int] = {}
    for case_id, counts in (record.get("by_case") or {}).items():
        name = backend_of.get(case_id)
        if name:
            out[name] = out.get(name, 0) + sum(int(counts.get(k, 0)) for k in KINDS)
    return out


def render(rows: list[dict[str, Any]]) -> str:
    """A fixed-width text table (`-` where the client cannot tell its retries, or nothing was injected
    at the HTTP level)."""

    def cell(value: Any) -> str:
        return "-" if value is None else str(value)

    lines = [
        f"{'backend':<10} {'rows':>5} {'failed':>6} {'timeouts':>8} {'stalls':>6} {'retries':>7} {'injected':>8} "
        f"{'srv-extra':>9} {'wrong':>5} {'verified':>8} {'slowdown':>8}"
    ]
    for r in rows:
        slow = "-" if r["slowdown"] is None else f"{r['slowdown']:.2f}x"
        lines.append(
            f"{r['backend']:<10} {r['rows']:>5} {r['failed']:>6} {r['timeouts']:>8} {r.get('stalls', 0):>6} {cell(r['retries']):>7} "
            f"{cell(r.get('injected')):>8} {cell(r.get('server-extra')):>9} {r['wrong-bytes']:>5} "
            f"{r['verified']:>8} {slow:>8}"
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# The report's section: when to show it, which fault-free run to compare with, the table


REPORT_COLUMNS = {
    "backend": "backend",
    "rows": "tasks",
    "failed": "failures",
    "timeouts": "timeouts",
    "retries": "retries",
    "injected": "injected (HTTP)",
    "server-extra": "extra GETs (server)",
    "slowdown": "slowdown",
    "wrong-bytes": "wrong bytes",
    "verified": "verified",
}


@dataclass(frozen=True)
class Section:
    """What the report shows for one run folder: its fault profile, the fault-free run it was
    compared with (None: not found) and one row per backend."""

    run: Path
    network: str
    baseline: Path | None
    rows: list[dict[str, Any]]

    def frame(self) -> Any:
        """The table as a DataFrame, under the report's column names; retries and slowdown
        stay empty (NaN) where they are unknown, never 0."""
        import pandas as pd

        frame = pd.DataFrame(
            [{REPORT_COLUMNS[k]: r[k] for k in REPORT_COLUMNS} for r in self.rows],
            columns=list(REPORT_COLUMNS.values()),
        )
        for name in ("retries", "injected (HTTP)", "extra GETs (server)"):
            frame[name] = pd.to_numeric(frame[name]).astype("Int64")  # counts, with <NA> where unknown
        frame["slowdown"] = pd.to_numeric(frame["slowdown"]).round(2)
        return frame

    def shown_frame(self) -> Any:
        """`frame()` for the report: one row per backend, `–` where retries or slowdown are unknown."""
        frame = self.frame().set_index("backend").astype(object)
        frame["slowdown"] = [f"{v:.2f}×" if v == v else None for v in self.frame()["slowdown"]]
        return frame.where(frame.notna(), "–")


def _meta(run: Path) -> dict[str, Any]:
    try:
        return read_meta(run)
    except (OSError, ValueError):
        return {}


def _network(meta: dict[str, Any]) -> str:
    return str((meta.get("config") or {}).get("network") or (meta.get("data") or {}).get("network") or "none")


def faulted(run: Path) -> bool:
    """The run was made with `--faults`."""
    from shotbench.store.network import FAULTS

    return _network(_meta(run)) in FAULTS


def caveat(runs: list[Path]) -> str:
    """The sentence that goes above a report's answer when its runs were measured under faults made
    on purpose, so the ranking is not read as a fault-free one ("" when none was)."""
    networks = [(run, _network(_meta(run))) for run in runs]  # one read of each run.json
    under = [(run, network) for run, network in networks if not _fault_free(network)]
    if not under:
        return ""
    which = ", ".join(f"`{run.name}` (fault profile `{network}`)" for run, network in under)
    return (
        f"**Measured under injected faults:** {which}. The runtimes include the clients' retries and "
        "failed tasks are left out, so this ranks the backends under those faults; *Reliability* below "
        "sets each one against a fault-free run of the same plan."
    )


def _fault_free(network: str) -> bool:
    """No fault on purpose: no proxy profile from FAULTS, or one that injects nothing (`http-0pc`)."""
    from shotbench.store.network import FAULTS

    profile = FAULTS.get(network)
    return profile is None or (not profile.faults and profile.http is not None and not profile.http.rates)


def _same_hop(network: str) -> str | None:
    """The fault-free profile with the same proxy hop as `network` (the HTTP fault proxy costs
    time of its own), or None when a plain fault-free run is the like-for-like one."""
    from shotbench.store.network import FAULTS

    profile = FAULTS.get(network)
    if profile is None or profile.http is None:
        return None
    return next((name for name, p in FAULTS.items() if p.http is not None and _fault_free(name)), None)


def shown(run: Path, rows: list[dict[str, Any]]) -> bool:
    """The section is worth showing: faults on purpose, or any task that failed or was retried."""
    return faulted(run) or any(r["failed"] or r["retries"] for r in rows)


def _plan(meta: dict[str, Any]) -> tuple[str, str]:
    """What makes two runs the same plan: the cases (ids from run.json's plan, else the bench
    settings) and the data read. `verify`, which `--faults` turns on, is not part of it."""
    cfg = meta.get("config") or {}
    data = meta.get("data") or {}
    cases = sorted(c.get("case_id", "") for c in meta.get("plan") or [] if isinstance(c, dict))
    bench = {k: v for k, v in (cfg.get("bench") or {}).items() if k != "verify"}
    return json.dumps(cases or bench, sort_keys=True), json.dumps(
        [data.get("location"), data.get("files"), data.get("bytes")]
    )


def find_baseline(run: Path) -> Path | None:
    """The latest fault-free run of the same plan beside `run` (same runs folder), or None.
    Preferred: the same path to the server without the faults (for the HTTP profiles the proxy
    injecting nothing, `http-0pc`, so the slowdown is the faults' and not the extra hop's; for
    toxiproxy's, a direct run), then a finished run over one still running."""
    meta = _meta(run)
    if not meta.get("config"):
        return None
    plan, hop = _plan(meta), _same_hop(_network(meta)) or "none"
    found = []
    for other in run.parent.iterdir():
        m = _meta(other) if other != run and other.is_dir() else {}
        if m.get("config") and _fault_free(_network(m)) and _plan(m) == plan and (other / "cases.csv").is_file():
            found.append((_network(m) == hop, m.get("status") != "running", str(m.get("started") or ""), other))
    return max(found)[3] if found else None


def section(run: Path) -> Section | None:
    """The reliability section of one run folder; None when it has nothing to say."""
    run = Path(run)
    if not (run / "workers.csv").is_file():
        return None
    baseline = find_baseline(run)
    rows = table(run, baseline)
    return Section(run, _network(_meta(run)), baseline, rows) if shown(run, rows) else None


def baseline_network(part: Section) -> str:
    """The proxy profile of the run a section was compared with (`none` for a direct one)."""
    return _network(_meta(part.baseline)) if part.baseline else ""
