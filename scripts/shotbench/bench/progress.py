"""What the terminal shows while a run goes: one progress line per case, and the summary table at
the end (over ok cases only).
"""

from __future__ import annotations

import statistics
from typing import Any

from shotbench.plan.matrix import Case
from shotbench.records.schema import (
    CaseRow,
)
from shotbench.records.status import OK, row_status
from shotbench.units import MiB


def _mib(n: int) -> str:
    return "default" if n < 0 else f"{n // MiB}MiB" if n else "0"


def _bc(n: int | None) -> str:
    return "" if n is None else f" bc={_mib(n)}"


def _dur(s: float) -> str:
    s = int(round(s))
    return f"{s // 60}m{s % 60:02d}s"


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def summary_table(rows: list[dict[str, Any]]) -> str:
    """Per backend and mode, over ok cases only: median total runtime, ratio to raw-get, GETs, MB.

    A case's raw-get is its group's raw-GET ceiling (analysis.raw_ceiling), as the report's limit
    is: one case's own measurement is too short to stand alone."""
    import pandas as pd  # at the end of a run only: the progress lines need neither

    from shotbench.analyse import analysis

    ok = [r for r in rows if row_status(r) == OK]
    ceilings = analysis.raw_ceiling(pd.DataFrame(ok)).tolist() if ok else []
    groups: dict[tuple[str, str, str], list[tuple[dict[str, Any], float]]] = {}
    for r, ceiling in zip(ok, ceilings):
        groups.setdefault((r.get("file-family") or "", r["backend"], r["obj-type"]), []).append((r, ceiling))
    width = max([len(k[0]) for k in groups] + [0])
    fam = f"{'family':<{width}} " if width else ""
    lines = [
        f"{fam}{'backend':<10} {'mode':<12} {'cases':>5} {'median s':>9} {'x raw-get':>9} {'GETs':>7} {'MB':>8} {'eff':>5}"
    ]

    def med(vals: list[float]) -> float | None:
        vals = [v for v in vals if v == v]
        return statistics.median(vals) if vals else None

    for (family, backend, mode), cases in sorted(groups.items()):
        rs = [r for r, _ in cases]
        tot = med([_num(r["total-runtime"]) for r in rs])
        ratio = med([_num(r["total-runtime"]) / c for r, c in cases if c > 0])
        gets = med([_num(r.get("gets")) for r in rs])
        mb = med([_num(r.get("get-bytes")) / 1e6 for r in rs])
        eff = med([_num(r.get("harness-efficiency")) for r in rs])

        def f(v: float | None, fmt: str) -> str:
            return "-" if v is None else format(v, fmt)

        lines.append(
            f"{f'{family:<{width}} ' if width else ''}{backend:<10} {mode:<12} {len(rs):>5} {f(tot, '.3f'):>9} {f(ratio, '.2f'):>9} "
            f"{f(gets, '.0f'):>7} {f(mb, '.1f'):>8} {f(eff, '.2f'):>5}"
        )
    return "\n".join(lines)


def case_line(case: Case, r: CaseRow, n: int, total_cases: int, elapsed: float, eta: float) -> str:
    """The progress line of one finished case: its result, or why it is not a measurement."""
    if r.status == OK:
        what = f"{float(r.total_runtime):.3f}s eff {float(r.harness_efficiency):.2f}"
        if r.gets != "":
            what += f" GETs {r.gets}"
        if r.client_gets != "":
            amp = r.amplification
            what += f" client GETs {r.client_gets}" + (f" amp {float(amp):.1f}x" if amp != "" else "")
    else:
        what = f"{r.status.upper()} ({r.errors} errors)  [{r.first_error[:120]}]"
    return (
        f"[{n}/{total_cases}] {case.family + ' ' if case.family else ''}{case.backend:<9} {case.mode:<7} w={case.workers:<2} "
        f"pb={_mib(case.pb_size):<7}{_bc(case.block_cache)} t{case.trial}  {what}  "
        f"elapsed {_dur(elapsed)} ETA {_dur(eta)}"
    )
