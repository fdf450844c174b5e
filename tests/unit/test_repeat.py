"""`shotbench repeat` scores how far each backend ÷ baseline ratio moves between runs and how often
one run's interval covers another run's ratio."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from shotbench.errors import UserError
from shotbench.studies.repeat import repeatability as repeat
from support.incli import completed, one_line
from support.runfolder import copy_run


def _table(rows: list[tuple[str, str, float, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "run": run,
                "obj-type": "shots",
                "num-workers": 1,
                "pb-size": 0,
                "backend": b,
                "ratio": r,
                "ci-low": lo,
                "ci-high": hi,
                "half-width": max(hi - r, r - lo) / r,
                "samples": 10,
            }
            for run, b, r, lo, hi in rows
        ]
    )


def test_moves_and_coverage_are_counted_per_pair_of_runs() -> None:
    t = _table(
        [
            ("A", "x", 2.0, 1.85, 2.15),
            ("B", "x", 2.2, 2.1, 2.3),
            ("C", "x", 2.05, 1.95, 2.15),
            ("A", "y", 1.0, 0.99, 1.01),
            ("B", "y", 1.0, 0.99, 1.01),
            ("C", "y", 1.0, 0.98, 1.02),
        ]
    )
    cases, s = repeat.score(t)
    x = cases.set_index("backend").loc["x"]
    assert x["move"] == pytest.approx(0.1)  # 2.2 ÷ 2.0 − 1
    # A's [1.85, 2.15] holds C's 2.05, not B's 2.2; B's [2.1, 2.3] holds neither; C's [1.95, 2.15] holds A's 2.0
    assert (x["covered"], x["pairs"]) == (2, 6)
    assert (s.runs, s.cases) == (3, 2)
    assert s.move_median == pytest.approx(0.05)  # median of 10 % and 0 %
    assert s.coverage == pytest.approx((2 + 6) / 12)
    assert s.tight_share == pytest.approx(5 / 6)  # A's x interval is ±7.5 %; the others within ±5 %
    assert s.fastest_agree == 1.0  # y is the fastest in every run


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--runs", "{tmp}"], "is not a run folder"),
        (["--times", "3", "--first-trials", "1", "--", "--profile", "quick"], "at least 2"),  # before any run
    ],
)
def test_bad_input_is_one_sentence(args: list[str], words: str, tmp_path) -> None:
    done = completed(["repeat", *[a.format(tmp=tmp_path) for a in args]])
    assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


PUBLISHED = Path(__file__).resolve().parents[2] / "data" / "runs" / "20261126T155000Z-a62e9a"


def _case_times(run: Path) -> dict[tuple[str, int, int, str, int], float]:
    """(mode, workers, page buffer, backend, trial) -> case runtime, straight from cases.csv."""
    with open(run / "cases.csv", newline="") as fh:
        return {
            (r["obj-type"], int(r["num-workers"]), int(r["pb-size"]), r["backend"], int(r["trial"])): float(
                r["total-runtime"]
            )
            for r in csv.DictReader(fh)
            if r["status"] in ("", "ok")
        }


def test_others_divides_each_case_by_the_rest_of_its_round() -> None:
    """`--baseline others`: per trial, a case's runtime ÷ the geometric mean of every other
    configuration of the same mode, workers and trial; then the geometric mean over its trials."""
    times = _case_times(PUBLISHED)
    key = ("shots", 2, 0, "obstore")
    per_trial = []
    for trial in (1, 2):
        rest = [t for (m, w, pb, b, tr), t in times.items() if (m, w, tr) == ("shots", 2, trial) and (pb, b) != key[2:]]
        per_trial.append(times[(*key, trial)] / math.exp(sum(map(math.log, rest)) / len(rest)))
    want = math.sqrt(per_trial[0] * per_trial[1])
    got = repeat.ratios(PUBLISHED, repeat.OTHERS).set_index(repeat.KEYS)["ratio"]
    assert got[key] == pytest.approx(want, rel=1e-9)
    assert ("shots", 2, 0, "local") in got.index  # every configuration has a ratio, the references too


def test_others_takes_in_little_of_one_backends_noise(tmp_path: Path) -> None:
    """One trial of local twice as slow halves that trial's ratio to local for every case of the
    round; against the others it moves each other case by 2^(-1/(n-1)) only."""
    run = tmp_path / PUBLISHED.name
    shutil.copytree(PUBLISHED, run)
    with open(run / "cases.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        if (r["obj-type"], r["num-workers"], r["backend"], r["trial"]) == ("shots", "2", "local", "1"):
            r["total-runtime"] = str(2 * float(r["total-runtime"]))
    with open(run / "cases.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    key = ("shots", 2, 0, "obstore")
    n = sum(1 for (m, w_, _, _, tr) in _case_times(PUBLISHED) if (m, w_, tr) == ("shots", 2, 1))
    for baseline, factor in (("local", 2**-0.5), (repeat.OTHERS, 2 ** (-1 / (n - 1) / 2))):
        before = repeat.ratios(PUBLISHED, baseline).set_index(repeat.KEYS)["ratio"][key]
        after = repeat.ratios(run, baseline).set_index(repeat.KEYS)["ratio"][key]
        assert after / before == pytest.approx(factor, rel=1e-9), baseline
    assert n >= 8  # the published round: enough configurations for the mean to be steady


def test_first_trials_scores_a_long_run_as_if_it_had_stopped_early(tmp_path: Path) -> None:
    """A third round in which obstore ran 3x slower moves its ratio; scored on the first 2 trials,
    the run says exactly what the 2-trial run said."""
    run = tmp_path / PUBLISHED.name
    shutil.copytree(PUBLISHED, run)
    with open(run / "cases.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    third = [
        {
            **r,
            "trial": "3",
            "case-id": r["case-id"].replace("t1-", "t3-", 1),
            "total-runtime": str(float(r["total-runtime"]) * (3 if r["backend"] == "obstore" else 1)),
        }
        for r in rows
        if r["trial"] == "1"
    ]
    with open(run / "cases.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows + third)
    key = ("shots", 2, 0, "obstore")
    two = repeat.ratios(PUBLISHED, "local").set_index(repeat.KEYS)
    assert repeat.ratios(run, "local").set_index(repeat.KEYS)["ratio"][key] > 1.3 * two["ratio"][key]
    cut = repeat.ratios(run, "local", first_trials=2).set_index(repeat.KEYS)
    pd.testing.assert_frame_equal(cut.drop(columns="run"), two.drop(columns="run"))
    with pytest.raises(UserError, match="at least 2"):
        repeat.ratios(run, "local", first_trials=1)


def test_repeat_scores_published_runs_against_local_and_the_rest_of_each_round(tmp_path: Path) -> None:
    """`shotbench repeat --runs`: both scores printed and recorded, with the run folders scored."""
    runs = [str(PUBLISHED), str(PUBLISHED.parent / "20261126T104647Z-81fea2")]  # two default runs
    done = completed(["repeat", "--runs", *runs, "--output", str(tmp_path)])
    assert done.returncode == 0, done.stderr
    assert "÷ local's in the same trial" in done.stdout
    assert "Against the rest of each round (--baseline others): the median case's ratio moves" in done.stdout
    meta = json.loads((tmp_path / "repeat.json").read_text())
    assert meta["runs"] == runs and meta["baseline"] == "local" and meta["first_trials"] is None
    assert meta["others"]["runs"] == 2 and meta["others"]["cases"] > meta["cases"]  # local and raw-get too
    # whether the answer repeated, from each run's decision table: two 2-trial runs of short cases
    # decide few pairs, so the figures are in range, not yet the targets
    assert 0 <= meta["answer_agree"] <= 1 and 0 <= meta["decided_share"] <= 1
    assert meta["run_seconds"] == [102.0, 92.0]  # each run's wall, from its run.json
    assert "The answer (leader and its equivalents per mode) is the same in every run for" in done.stdout


def _answer(
    run: str, mode: str, names: tuple[str, ...], decided: int, pairs: int, workers: int = 2
) -> repeat.RunAnswer:
    return repeat.RunAnswer(run, mode, workers, names, decided, pairs)


def test_answer_agreement_and_decided_share() -> None:
    """A mode agrees only when every run names the same leader and equivalents at the same worker
    count; a mode one run did not answer does not agree; decided pairs are counted over all runs."""
    same = [_answer("a", "shots", ("x", "y"), 3, 4), _answer("b", "shots", ("x", "y"), 4, 4)]
    moved = [_answer("a", "signals", ("x",), 4, 4), _answer("b", "signals", ("x",), 4, 4, workers=1)]
    assert repeat.agreement(same + moved) == (0.5, 15 / 16)
    assert repeat.agreement(same) == (1.0, 7 / 8)
    missing = [*same, _answer("a", "signals", ("x",), 0, 0)]
    assert repeat.agreement(missing)[0] == 0.5
    assert math.isnan(repeat.agreement([_answer("a", "shots", ("x",), 0, 0)])[1])


def test_a_runs_answer_is_its_decision_tables() -> None:
    """The published default run: shots' leader stands alone with undecided pairs; every signals pair
    is decided (all slower)."""
    by = {a.mode: a for a in repeat.run_answers(PUBLISHED)}
    assert by["signals"].decided == by["signals"].pairs == 8
    assert by["shots"].names == ("ros3-wheel",) and by["shots"].decided < by["shots"].pairs


# --- what `shotbench repeat` refuses, in one sentence, before any run is scored or made ---------
FIXTURE_RUN = Path(__file__).parents[1] / "data" / "run-fixture"


def _repeat(argv: list[str]) -> tuple[int, str]:
    """`shotbench repeat ARGV` in-process: its exit status and its one line on stderr."""
    return one_line(["repeat", *argv])


@pytest.mark.parametrize("output", ["afile", "/proc/nope"])
def test_an_output_that_cannot_be_a_folder_is_refused_before_scoring(output: str, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("mine\n")
    other = copy_run(FIXTURE_RUN, tmp_path / "other", run_id="other")
    out = output if output.startswith("/") else str(tmp_path / output)
    code, err = _repeat(["--runs", str(FIXTURE_RUN), str(other), "--baseline", "others", "--output", out])
    assert code == 2 and "output folder" in err and "choose a" in err
    assert (tmp_path / "afile").read_text() == "mine\n"


def test_a_copied_run_is_refused_and_a_refusal_leaves_no_output(tmp_path: Path) -> None:
    """A copy keeps its run id and repeated itself perfectly (every move 0 %)."""
    copy = copy_run(FIXTURE_RUN, tmp_path / "copy")
    out = tmp_path / "new" / "out"
    code, err = _repeat(["--runs", str(FIXTURE_RUN), str(copy), "--output", str(out)])
    assert code == 2 and "--runs names run" in err and "twice" in err and str(copy) in err
    other = copy_run(FIXTURE_RUN, tmp_path / "other", run_id="other")
    code, err = _repeat(["--runs", str(FIXTURE_RUN), str(other), "--baseline", "nobody", "--output", str(out)])
    assert code == 2 and "no 'nobody' backend" in err  # refused while scoring, after the folder was made
    assert not (tmp_path / "new").exists()


def test_runs_of_another_kind_or_without_cases_are_named(tmp_path: Path) -> None:
    transfer = tmp_path / "transfer"
    transfer.mkdir()
    (transfer / "run.json").write_text(json.dumps({"run_id": "t", "kind": "transfer", "schema": 1}))
    code, err = _repeat(["--runs", str(FIXTURE_RUN), str(transfer)])
    assert code == 2 and "is a transfer run" in err and "shotbench report --transfer" in err
    empty = copy_run(FIXTURE_RUN, tmp_path / "empty", run_id="empty")
    (empty / "cases.csv").write_text("")
    code, err = _repeat(["--runs", str(FIXTURE_RUN), str(empty)])
    assert code == 2 and f"{empty} has no cases" in err


@pytest.mark.parametrize("rest", [["--runs-dir"], ["--runs-dir", "--profile", "quick"], ["--runs-dir="]])
def test_a_runs_dir_without_a_folder_is_one_sentence_before_any_run(
    rest: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`repeat -- --runs-dir` ended in an IndexError; `-- --runs-dir --profile quick` made a folder
    named --profile and ran a bench."""
    monkeypatch.chdir(tmp_path)  # where a folder named after the next flag would be made
    code, err = _repeat(["--times", "2", "--output", str(tmp_path / "out"), "--", *rest])
    assert code == 2 and "--runs-dir after -- needs a folder" in err
    assert list(tmp_path.iterdir()) == []  # no output folder, no runs folder


def test_runs_dir_is_read_as_bench_reads_it() -> None:
    """`--runs-dir=X` was not recognised: repeat looked in data/runs and failed after a whole bench."""
    from shotbench.paths import runs_dir
    from shotbench.studies.repeat.repeat_run import bench_runs_dir

    assert bench_runs_dir(["--profile", "quick", "--runs-dir=/tmp/r"]) == Path("/tmp/r")
    assert bench_runs_dir(["--runs-dir", "/tmp/a", "--runs-dir=/tmp/b"]) == Path("/tmp/b")  # the last wins
    assert bench_runs_dir(["--profile", "quick"]) == runs_dir()
