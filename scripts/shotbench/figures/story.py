"""The report's argument, in the order a reader needs it: answer, decision, why, what was measured.

The notebook narrates; this module picks what each part shows. A reader of a published report
decides in seconds whether to trust it, so the main page carries the answer, the decision at
the answer's worker count, 3–6 findings each with the one figure that shows it, and how the run
was made; every raw table goes to the appendix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import holoviews as hv
import pandas as pd

from shotbench.analyse import analysis, decision
from shotbench.figures import dotplots, plots
from shotbench.paths import repo_root
from shotbench.records.clusterinfo import summary as cluster_summary

MODE_SHORT = {"shots": "one shot file", "signals": "all shot files, signal by signal"}
# where a reader beating the plain GETs of its bytes is measured and explained
BEYOND_LIMIT = (
    "measured: docs/results/2026-11-27-answer-that-decides.md, “Later: the limit of a group's bytes, and a reader "
    "faster than the limit”"
)
# where obstore's cost per TLS record is measured, one knob at a time
PER_RECORD = "measured: docs/results/2026-11-27-tls-records.md"


@dataclass(frozen=True)
class Finding:
    """One claim of the *Why* section: a title, the sentences that state it, the figures that show it."""

    title: str
    sentences: list[str]
    figures: list[Any] = field(default_factory=list)


def answer_workers(choice: pd.DataFrame, mode: str) -> int | None:
    """The worker count of the answer for `mode`: the fastest ranked configuration none of whose
    cases failed (the one whose row the decision table puts first at its worker count)."""
    t = choice[(choice["obj-type"] == mode) & choice["rank"].notna()]
    if "failed" in t.columns and (t["failed"].fillna(0) == 0).any():
        t = t[t["failed"].fillna(0) == 0]
    return None if t.empty else int(t.loc[t["runtime"].idxmin(), "num-workers"])


def decision_rows(choice: pd.DataFrame, mode: str) -> pd.DataFrame:
    """The decision table's rows at the answer's worker count (every count is in the appendix)."""
    w = answer_workers(choice, mode)
    t = choice[choice["obj-type"] == mode]
    return t if w is None else t[t["num-workers"] == w]


def main_table(choice: pd.DataFrame, mode: str, prices: decision.Prices) -> Any:
    """The decision table as the main page shows it: the answer's worker count (named in the
    heading, so no workers column) and one cost column (the last placement, the internet); every
    column and worker count is in the appendix."""
    frame = decision.display_table(decision_rows(choice, mode), mode, prices)
    costs = [c for c in frame.columns if c.startswith("$/")]
    frame = frame.drop(columns=["workers"] + costs[:-1], errors="ignore")
    return decision.styled(frame).set_properties(subset=["backend"], **{"min-width": "18em", "max-width": "40em"})


def _workers(n: int) -> str:
    return f"{n} worker" if n == 1 else f"{n} workers"


def mode_title(mode: str) -> str:
    return plots.MODE_TITLES.get(mode, mode)


def decision_figure(choice: pd.DataFrame, mode: str, palette: dict[str, str]) -> Any:
    """Median runtime with its 95 % CI, every configuration and worker count, fastest on top."""
    t = choice[choice["obj-type"] == mode]
    return dotplots.interval_plot(
        t,
        "runtime",
        f"{mode_title(mode)}: median runtime per read, fastest on top",
        "Median runtime over trials [s] (line: 95 % bootstrap CI)",
        palette,
        low="runtime-ci-low",
        high="runtime-ci-high",
    )


def _names(df: pd.DataFrame) -> pd.Series:
    """Configuration names as the decision table writes them (page buffer only when it varies)."""
    several = df.groupby("series")["pb-size"].nunique() > 1
    return pd.Series(
        [
            decision.candidate_name(s, int(pb), bool(several.get(s, False)))
            for s, pb in zip(df["series"], df["pb-size"])
        ],
        index=df.index,
    )


SCALING = re.compile(r" than with \d+")


def _split(found: list[str]) -> tuple[list[str], list[str]]:
    """decision.findings sentences about backends against each other, and about worker counts."""
    return [s for s in found if not SCALING.search(s)], [s for s in found if SCALING.search(s)]


def _speed(ds: analysis.Dataset, ratios: pd.DataFrame, sentences: list[str], palette: dict[str, str]) -> Finding | None:
    if ratios.empty:
        return None
    ref = str(ratios["reference"].iloc[0])
    figs = []
    for mode in analysis.modes(ds):
        r = ratios[ratios["obj-type"] == mode]
        if r.empty:
            continue
        r = r.assign(name=_names(r))
        figs.append(
            dotplots.interval_plot(
                r,
                "ratio",
                f"{mode_title(mode)}: speed relative to {ref}, fastest on top",
                f"{ref} runtime ÷ runtime [×] (> 1: faster than {ref}; line: 95 % CI)",
                palette,
                low="ci-low",
                high="ci-high",
                reference=1.0,
                descending=True,
            )
        )
    if not sentences:
        sentences = [f"No backend differs from {ref} with a 95 % CI that excludes 1: repeat the run with more trials."]
    return Finding(
        f"How the backends compare with each other (figure: speed relative to {ref})",
        sentences,
        [f for f in figs if f is not None],
    )


def _limit(ds: analysis.Dataset, choice: pd.DataFrame, palette: dict[str, str]) -> Finding | None:
    if choice["vs-limit"].isna().all():
        return None
    sentences, figs = [], []
    records = analysis.small_tls_records(ds)
    for mode in analysis.modes(ds):
        t = choice[(choice["obj-type"] == mode) & choice["rank"].notna() & choice["vs-limit"].notna()]
        if t.empty:
            continue
        best = t.loc[t["vs-limit"].idxmin()]
        who = f"{best['name']} with {_workers(int(best['num-workers']))}"
        limit = f"({best['limit']:.3g} s: the slower of local disk and plain GETs of the same bytes)"
        if best["vs-limit"] < 1:
            if records is not None:
                why = (
                    f"and this run's server sent its bytes in TLS records of {records:,} bytes, where TLS allows "
                    "16 KiB. obstore passes every record from one thread to another, so a client that decrypts "
                    "where it reads (OpenSSL) or splits a read across connections (libhdf5 2.x's aws-c-s3) moves "
                    f"the same bytes faster ({PER_RECORD})."
                )
            else:
                why = (
                    "each on one connection, and a client with a faster TLS stack, or one that splits a read "
                    "across connections, as libhdf5 2.x's aws-c-s3 does both, can move the bytes faster "
                    f"({BEYOND_LIMIT})."
                )
            sentences.append(
                f"{mode}: {who} is {best['vs-limit']:.2f}× the limit {limit}, faster than the plain GETs: those "
                f"are one obstore request per object range, {why}"
            )
        else:
            sentences.append(
                f"{mode}: the closest to the limit is {who}, {best['vs-limit']:.2f}× the limit {limit}; the gap "
                "above 1 is what HDF5 over S3 costs here."
            )
        figs.append(
            dotplots.interval_plot(
                t,
                "vs-limit",
                f"{mode_title(mode)}: runtime ÷ the limit, closest on top",
                "Runtime ÷ limit [×] (1 = as fast as plain GETs of the same bytes)",
                palette,
                reference=1.0,
            )
        )
    return Finding("How far each backend is from the limit", sentences, [f for f in figs if f is not None])


def _bytes(ds: analysis.Dataset, choice: pd.DataFrame, palette: dict[str, str]) -> Finding | None:
    ranked = choice[choice["rank"].notna()]
    if ranked["bytes"].isna().all():
        return None
    sentences, figs = [], []
    for mode in analysis.modes(ds):
        t = decision_rows(choice, mode)
        t = t[t["rank"].notna() & t["bytes"].notna()].assign(MB=lambda d: d["bytes"] / 1e6)
        if t.empty:
            continue
        w = int(t["num-workers"].iloc[0])
        lo, hi = t.loc[t["MB"].idxmin()], t.loc[t["MB"].idxmax()]
        if lo["MB"] == hi["MB"]:
            text = f"{mode}, {_workers(w)}: every backend moves {lo['MB']:,.1f} MB per read"
        else:
            text = (
                f"{mode}, {_workers(w)}: {lo['name']} moves the fewest bytes ({lo['MB']:,.1f} MB in {lo['gets']:.0f} "
                f"requests), {hi['name']} the most ({hi['MB']:,.1f} MB in {hi['gets']:.0f} requests)"
            )
        amp = t["amplification"].dropna()
        if len(amp):
            text += f"; bytes moved ÷ bytes needed ranges {amp.min():.2f}–{amp.max():.2f}×"
        sentences.append(text + ".")
        figs.append(
            dotplots.bar_plot(
                t,
                "MB",
                f"{mode_title(mode)}: megabytes fetched from S3 per read, {_workers(w)}",
                "MB fetched per read [MB, 10⁶ bytes]",
                palette,
            )
        )
    return Finding("What each backend asks of S3", sentences, [f for f in figs if f is not None])


def _scaling(
    ds: analysis.Dataset, table: pd.DataFrame, sentences: list[str], palette: dict[str, str]
) -> Finding | None:
    if table["num-workers"].nunique() < 2:
        return None
    figs = []
    for mode in analysis.modes(ds):
        fig = plots.runtime_plot(table, mode, palette, dotplots.short)
        lines = len({el.label for el in fig if el.label})
        # legend on the right: a page-wide figure, as tall as its legend (below, it doubled the height)
        figs.append(
            fig.opts(
                hv.opts.Overlay(
                    legend_position="right", width=dotplots.MAX_WIDTH, height=max(plots.HEIGHT, 90 + 21 * lines)
                )
            )
        )
    if not sentences:
        sentences = ["No backend's runtime changes with the worker count by more than its 95 % CI."]
    return Finding("How runtime changes with the number of workers", sentences, figs)


def why(
    ds: analysis.Dataset, choice: pd.DataFrame, table: pd.DataFrame, ratios: pd.DataFrame, palette: dict[str, str]
) -> list[Finding]:
    """The findings that carry the answer, each with its figure(s): speed against the reference
    build, distance from the limit, bytes asked of S3, scaling with workers (those the data has)."""
    against, scaling = _split(decision.findings(ds, choice))
    parts = [
        _speed(ds, ratios, against, palette),
        _limit(ds, choice, palette),
        _bytes(ds, choice, palette),
        _scaling(ds, table, scaling, palette),
    ]
    return [p for p in parts if p is not None]


def _span(start: object, end: object) -> str:
    """ "2026-11-23 17:32–17:35" from two ISO times (whatever is there, when they do not parse)."""
    try:
        a, b = pd.Timestamp(str(start)), pd.Timestamp(str(end))
    except ValueError:
        return " – ".join(str(x) for x in (start, end) if x) or "—"
    tail = b.strftime("%H:%M") if a.date() == b.date() else b.strftime("%Y-%m-%d %H:%M")
    return f"{a.strftime('%Y-%m-%d %H:%M')}–{tail}"


def shown_path(path: object) -> str:
    """A path as a published page shows it: relative to the checkout when inside it."""
    try:
        return Path(str(path)).resolve().relative_to(repo_root()).as_posix()
    except ValueError:
        return str(path)


def _one_label(frame: pd.DataFrame) -> pd.DataFrame:
    """Drop the label column when every row has the same one (a report of one run)."""
    return frame.drop(columns="label") if "label" in frame and frame["label"].nunique() <= 1 else frame


def inputs(ds: analysis.Dataset) -> pd.DataFrame:
    """What was loaded, paths relative to the checkout."""
    return analysis.inputs_table(ds).assign(path=lambda d: d["path"].map(shown_path))


def measured(ds: analysis.Dataset) -> pd.DataFrame:
    """One row per input run: where, on what, with which profile, network and trials."""
    rows = []
    for inp in ds.inputs:
        run = ds.runs.get(inp.label) or {}
        config = run.get("config") or {}
        bench = config.get("bench") or {}
        data = run.get("data") or {}
        machine = run.get("machine") or {}
        memory = machine.get("memory_bytes")
        rows.append(
            {
                "label": inp.label,
                "run": run.get("run_id") or inp.path.name,
                "when (UTC)": _span(run.get("started"), run.get("finished")),
                "profile": bench.get("profile") or config.get("profile") or "—",
                "network profile": config.get("network") or data.get("network") or "—",
                "TLS": "https" if config.get("tls") is True else "http" if config.get("tls") is False else "—",
                "data": data.get("location") or ("per-worker CSV" if inp.kind == "csv" else "—"),
                "server": "embedded (loopback)" if data.get("embedded") else ("S3" if data else "—"),
                "files": data.get("files") or "—",
                "signals mode reads": _signals_sample(run.get("selection") or {}),
                "trials": bench.get("trials") or config.get("trials") or "—",
                "stopped": _stopped(run.get("stop") or {}),
                "CPUs": machine.get("cpus") or "—",
                "memory": f"{memory / (1 << 30):.0f} GiB" if memory else "—",
                "instance": machine.get("instance_type") or "—",
                "platform": machine.get("platform") or "—",
                "Dask workers": cluster_summary(run.get("cluster")) if run else "—",
            }
        )
    frame = pd.DataFrame(rows)
    return frame.drop(columns="label") if len(frame) == 1 and frame["label"].iloc[0] == frame["run"].iloc[0] else frame


def made_line(described: pd.DataFrame) -> str:
    """The line under the answer: per run, its profile, trials, what `signals` mode read, server
    and network (from `measured`)."""
    parts = []
    for _, r in described.iterrows():
        if r["run"] == "—":
            continue
        sample = r.get("signals mode reads", "—")
        stopped = r.get("stopped", "—")
        parts.append(
            f"`{r['run']}`: profile {r['profile']}, {r['trials']} trials"
            + (f" ({stopped})" if stopped != "—" else "")
            + (f", signals mode on {sample}" if sample != "—" else "")
            + f", {r['server']} server, network {r['network profile']}"
        )
    return "; ".join(parts)


def _stopped(stop: dict) -> str:
    """Why the run's extra rounds stopped, from run.json's `stop` (read/rounds.py): "rounds per
    group 2–6; shots w2: budget spent" ("—" for a run with a fixed number of trials)."""
    if not stop:
        return "—"
    rounds = [int(v.get("rounds", 0)) for v in stop.values()]
    span = f"{min(rounds)}–{max(rounds)}" if min(rounds) != max(rounds) else str(min(rounds))
    left = [f"{k}: {v.get('reason')}" for k, v in sorted(stop.items()) if v.get("reason") != "decided"]
    return f"rounds per group {span}; " + ("; ".join(left) if left else "every group decided")


def _signals_sample(selection: dict) -> str:
    """What `signals` mode read, from run.json's selection: "2 of 24 files × 16 signals"."""
    files, names, every = selection.get("signals_files"), selection.get("signals"), selection.get("files")
    if not (files and names and every):
        return "—"
    return f"{len(files)} of {len(every)} files × {len(names)} signals"


def builds(ds: analysis.Dataset) -> pd.DataFrame:
    """Per run and backend: libhdf5, h5py, Python, the environment it ran in, and the backend's
    options as run.json recorded them ("not recorded" for runs made before it did)."""
    rows = []
    for label, run in ds.runs.items():
        recorded = (run.get("config") or {}).get("backend_options")
        for name, v in ((run.get("versions") or {}).get("backends") or {}).items():
            v = v or {}
            rows.append(
                {
                    "label": label,
                    "backend": name,
                    "libhdf5": v.get("hdf5") or "—",
                    "h5py": v.get("h5py") or "—",
                    "Python": v.get("python") or "—",
                    "environment": v.get("env") or "—",
                    "options": options_text(recorded.get(name) if isinstance(recorded, dict) else None),
                }
            )
    return _one_label(pd.DataFrame(rows))


def options_text(options: dict | None) -> str:
    """A backend's options for a table cell: "write=stream, target=disk"; "—" when it has none."""
    if options is None:
        return "not recorded"
    return ", ".join(f"{k}={v}" for k, v in sorted(options.items()) if k != "index_dir") or "—"
