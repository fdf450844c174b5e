"""A run that did not measure all it planned says so above its answer (analyse/unfinished.py)."""

from __future__ import annotations

import json
from pathlib import Path

from shotbench.analyse import unfinished
from support.runfolder import interrupted_copy

FIXTURE = Path(__file__).parents[1] / "data" / "run-fixture"


def test_a_complete_run_has_no_caveat() -> None:
    assert unfinished.caveat([FIXTURE]) == ""


def test_an_interrupted_run_names_what_it_did_not_measure_and_how_to_finish(tmp_path: Path) -> None:
    run = interrupted_copy(FIXTURE, tmp_path, keep=3)
    planned = len(json.loads((run / "run.json").read_text())["plan"])
    text = unfinished.caveat([FIXTURE, run])
    assert text.startswith(f"**Unfinished run:** `{run.name}` was interrupted with 3 of its {planned} planned cases")
    assert "Not measured: ros3-" in text and "the answer ranks only what was measured" in text
    assert f"`shotbench bench --resume {run}`" in text and text.count("**Unfinished run:**") == 1
    found = unfinished.unfinished(run)
    assert found is not None and len(found.missing) == planned - 3


def test_an_interrupted_run_without_a_plan_is_still_named(tmp_path: Path) -> None:
    run = interrupted_copy(FIXTURE, tmp_path, keep=3)
    meta = json.loads((run / "run.json").read_text())
    del meta["plan"]
    (run / "run.json").write_text(json.dumps(meta))
    assert "was interrupted before it measured every case it planned" in unfinished.caveat([run])


def test_an_interrupted_transfer_run_is_named_with_its_own_resume(tmp_path: Path) -> None:
    run = tmp_path / "20261128T000000Z-abcdef"
    run.mkdir()
    plan = {"profile": "quick", "trials": 5}  # a transfer run's plan: its matrix
    (run / "run.json").write_text(json.dumps({"kind": "transfer", "status": "interrupted", "plan": plan}))
    text = unfinished.caveat([run])
    assert "was interrupted before it measured every case" in text and f"`shotbench transfer --resume {run}`" in text
    (run / "run.json").write_text(json.dumps({"kind": "transfer", "status": "finished", "plan": plan}))
    assert unfinished.caveat([run]) == ""
