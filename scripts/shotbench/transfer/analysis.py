"""Reading transfer runs back: the seed-style tables and the two ratios the benchmark exists for.

Shared by the terminal summary and notebooks/transfer.ipynb so both show the same numbers.
A cell is the median over trials that verified; a case with no good trial shows its error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from shotbench.runs import RUN_JSON, read_meta
from shotbench.transfer.matrix import size_label

BASELINE = "raw-get"


def load_cases(run_dir: Path) -> pd.DataFrame:
    df = pd.read_csv(run_dir / "cases.csv", keep_default_na=False, na_values={"seconds": [""], "mb-per-s": [""]})
    df["error"] = df["error"].astype(str)
    return df


def load_meta(run_dir: Path) -> dict:
    """run.json (checked by shotbench.runs), or {} for a folder without one."""
    return read_meta(run_dir) if (run_dir / RUN_JSON).exists() else {}


def summarize(cases: pd.DataFrame) -> pd.DataFrame:
    """One row per (direction, tool, concurrency, test): median seconds/MB/s of good trials,
    trials counted, and the first error when no trial was good."""
    keys = ["direction", "tool", "concurrency", "test", "file-count", "file-size", "total-bytes"]
    if cases.empty:
        return pd.DataFrame(columns=[*keys, "seconds", "mb-per-s", "trials", "good", "error"])
    out = []
    for key, g in cases.groupby(keys, sort=False):
        good = g[(g["error"] == "") & g["seconds"].notna()]
        errors = g.loc[g["error"] != "", "error"]
        out.append({
            **dict(zip(keys, key)),
            "seconds": good["seconds"].median() if len(good) else float("nan"),
            "mb-per-s": good["mb-per-s"].median() if len(good) else float("nan"),
            "trials": len(g), "good": len(good),
            "error": "" if len(good) else (errors.iloc[0] if len(errors) else "no result"),
        })
    return pd.DataFrame(out)


def tools_table(meta: dict) -> pd.DataFrame:
    """One row per tool from run.json: mode, version, installed or why not, and the exact calls."""
    rows = []
    for name, t in (meta.get("tools") or {}).items():
        how = t.get("how") or {}
        rows.append({"tool": name, "mode": t.get("mode"), "version": t.get("version") or "",
                     "status": t.get("status"), "upload": how.get("upload", "—"), "download": how.get("download", "—")})
    return pd.DataFrame(rows).set_index("tool") if rows else pd.DataFrame()


def _cell(r: pd.Series, metric: str) -> str:
    if r["good"] == 0:
        err = r["error"]
        return "not installed" if err.startswith("not installed") else f"error: {err[:60]}"
    v = r[metric]
    return f"{v:.2f}s" if metric == "seconds" else f"{v:.1f}"


def main_concurrency(cases: pd.DataFrame) -> int | None:
    """The concurrency the seed table shows: the one that covers the most tests (a tie goes to
    the middle value, so a 4/16/64 sweep shows 16)."""
    if cases.empty:
        return None
    cover = cases.groupby("concurrency")["test"].nunique()
    tied = sorted(cover[cover == cover.max()].index)
    return int(tied[len(tied) // 2])


def seed_table(cases: pd.DataFrame, direction: str, metric: str = "seconds",
               concurrency: int | None = None) -> pd.DataFrame:
    """Rows = test ('1000 File/1 MiB ea'), then Total Transfer Size, columns = tools, at one
    concurrency (default `main_concurrency`); cells '12.34s' / MB/s, or the error."""
    conc = concurrency if concurrency is not None else main_concurrency(cases)
    s = summarize(cases)
    s = s[(s["direction"] == direction) & (s["concurrency"] == conc)]
    if s.empty:
        return pd.DataFrame()
    s = s.assign(cell=[_cell(r, metric) for _, r in s.iterrows()])
    tests = (s[["test", "file-count", "file-size", "total-bytes"]].drop_duplicates("test")
             .sort_values(["total-bytes", "file-size"], ascending=[False, True]))
    table = s.pivot(index="test", columns="tool", values="cell")
    table = table.reindex(index=tests["test"], columns=sorted(s["tool"].unique())).fillna("")
    table.insert(0, "Total Transfer Size", [size_label(int(b)) for b in tests["total-bytes"]])
    table.index.name = "Test"
    table.columns.name = None
    return table


def sweep_table(cases: pd.DataFrame, direction: str, metric: str = "mb-per-s") -> pd.DataFrame:
    """For tests run at several concurrencies: rows = (test, tool), columns = concurrency."""
    s = summarize(cases)
    s = s[s["direction"] == direction]
    swept = s.groupby("test")["concurrency"].nunique()
    s = s[s["test"].isin(swept[swept > 1].index)]
    if s.empty:
        return pd.DataFrame()
    s = s.assign(cell=[_cell(r, metric) for _, r in s.iterrows()], row=s["test"] + " · " + s["tool"])
    table = s.pivot(index="row", columns="concurrency", values="cell").fillna("")
    table = table.reindex(sorted(table.index), columns=sorted(table.columns))
    table.columns = [f"{c} threads" for c in table.columns]
    table.index.name = "Test · tool"
    return table


def markdown(table: pd.DataFrame) -> str:
    """A pipe table like the seed's, without extra dependencies."""
    if table.empty:
        return "(no rows)"
    head = [table.index.name or ""] + [str(c) for c in table.columns]
    rows = [[str(i)] + [str(v) for v in r] for i, r in zip(table.index, table.values)]
    widths = [max(len(x[k]) for x in [head] + rows) for k in range(len(head))]

    def fmt(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

    return "\n".join([fmt(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [fmt(r) for r in rows])


@dataclass
class Ratio:
    """A measured comparison: value = numerator / denominator, with what was compared."""

    name: str
    value: float | None
    numerator: str
    denominator: str
    note: str = ""

    def text(self) -> str:
        if self.value is None:
            return f"{self.name}: not measured ({self.note})"
        return f"{self.name}: {self.value:.2f}  [{self.numerator} / {self.denominator}]" + (f"  {self.note}" if self.note else "")


def _best(s: pd.DataFrame, tool: str, direction: str, test: str) -> pd.Series | None:
    g = s[(s["tool"] == tool) & (s["direction"] == direction) & (s["test"] == test) & (s["good"] > 0)]
    return None if g.empty else g.sort_values("seconds").iloc[0]


def stage_vs_sync(cases: pd.DataFrame, test: str = "1000 File/1 MiB ea") -> Ratio:
    """Upload time of `aws s3 sync` over `shotbench stage` on the many-small-files row
    (> 1 means stage is faster); each at its fastest concurrency in this run."""
    s = summarize(cases)
    if test not in set(s["test"]):
        many = s.sort_values("file-count", ascending=False)
        if many.empty:
            return Ratio("aws s3 sync / shotbench stage", None, "", "", "no cases")
        test = many["test"].iloc[0]
    stage, sync = _best(s, "shotbench", "upload", test), _best(s, "aws-s3-sync", "upload", test)
    if stage is None or sync is None:
        missing = "shotbench stage" if stage is None else "aws s3 sync"
        return Ratio("aws s3 sync / shotbench stage", None, "", "", f"{missing} has no verified upload of {test}")
    return Ratio(
        f"upload {test}: aws s3 sync time / shotbench stage time",
        sync["seconds"] / stage["seconds"],
        f"aws s3 sync {sync['seconds']:.2f}s (c={sync['concurrency']})",
        f"stage {stage['seconds']:.2f}s (jobs={stage['concurrency']})",
        "(>1: stage faster)",
    )


def best_vs_raw(cases: pd.DataFrame) -> list[Ratio]:
    """Per test: the fastest verified download tool's MB/s over raw-get's MB/s at the same
    concurrency (raw-get reads whole objects into memory, no disk writes)."""
    s = summarize(cases)
    d = s[(s["direction"] == "download") & (s["good"] > 0)]
    out = []
    for test in d.sort_values("total-bytes", ascending=False)["test"].drop_duplicates():
        g = d[d["test"] == test]
        tools = g[g["tool"] != BASELINE]
        if tools.empty:
            continue
        best = tools.sort_values("mb-per-s", ascending=False).iloc[0]
        raw = g[(g["tool"] == BASELINE) & (g["concurrency"] == best["concurrency"])]
        if raw.empty:
            out.append(Ratio(f"download {test}: best tool MB/s / raw-get MB/s", None, "", "",
                             f"no verified raw-get at concurrency {best['concurrency']}"))
            continue
        r = raw.iloc[0]
        out.append(Ratio(
            f"download {test}: best tool MB/s / raw-get MB/s",
            best["mb-per-s"] / r["mb-per-s"],
            f"{best['tool']} {best['mb-per-s']:.1f} MB/s (c={best['concurrency']})",
            f"raw-get {r['mb-per-s']:.1f} MB/s (c={r['concurrency']})",
        ))
    return out


def terminal_summary(run_dir: Path) -> str:
    """What `shotbench transfer` prints at the end."""
    cases = load_cases(run_dir)
    parts = []
    conc = main_concurrency(cases)
    for direction in ("upload", "download"):
        for metric, unit in (("seconds", "seconds"), ("mb-per-s", "MB/s")):
            t = seed_table(cases, direction, metric)
            if not t.empty:
                parts.append(f"\n{direction.capitalize()} ({unit}, concurrency {conc}, median of verified trials)\n{markdown(t)}")
        t = sweep_table(cases, direction)
        if not t.empty:
            parts.append(f"\n{direction.capitalize()} concurrency sweep (MB/s)\n{markdown(t)}")
    parts.append("\n" + stage_vs_sync(cases).text())
    parts += [r.text() for r in best_vs_raw(cases)]
    return "\n".join(parts)
