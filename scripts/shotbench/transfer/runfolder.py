"""A folder given where a transfer run belongs (`transfer --check`, `transfer --resume`, `report
--transfer`), checked before anything expensive reads it.

A bench run folder has a cases.csv and a run.json too, so it got as far as a pandas KeyError; a
damaged cases.csv or run.json ended in a notebook traceback after the kernel had started. Each is
one sentence here instead, naming the folder's kind and the command that reads it, or the file that
is damaged.
"""

from __future__ import annotations

from pathlib import Path

from shotbench.errors import UserError
from shotbench.runs import CASES_CSV, DIRECTION, RUN_JSON, kind_of, read_meta, resume_hint
from shotbench.transfer.results import load_cases

WHERE = "data/transfer/<run-id>"
OTHER_KINDS = {
    "read": ("a bench run folder", "read it with `shotbench report --run {run}` or `shotbench compare`"),
    DIRECTION: ("an ablation run folder", "render it with `shotbench report --direction {run}`"),
}
"""The other kinds of run folder (shotbench.runs): what each is called and the command that reads it."""


def refuse_other_kind(run: Path, flag: str) -> None:
    """A bench or ablation run folder is named as such, with what reads it (or resumes it, for
    --resume), rather than read as a damaged transfer run."""
    kind = kind_of(run)
    if kind not in OTHER_KINDS:
        return
    what, read = OTHER_KINDS[kind]
    use = f"{resume_hint(run, kind)} if it was interrupted" if flag == "--resume" else read.format(run=run)
    raise UserError(f"{run} is {what}, not a transfer run; {use}, or pass a {WHERE} folder to {flag}.")


def check_run_folder(run: Path, flag: str) -> None:
    """Refuse, in one sentence, a folder that is not a readable transfer run: another kind of run,
    no cases.csv, or a cases.csv or run.json that cannot be read."""
    if not run.is_dir():
        raise UserError(
            f"{run} {'is not a folder' if run.exists() else 'does not exist'}; pass a {WHERE} folder to {flag}."
        )
    refuse_other_kind(run, flag)
    if not (run / CASES_CSV).is_file():
        raise UserError(f"{run} holds no {CASES_CSV}; pass a {WHERE} folder to {flag}.")
    load_cases(run)  # a damaged cases.csv is its own sentence
    meta = run / RUN_JSON
    if meta.exists():
        try:
            read_meta(run)
        except (OSError, ValueError):
            raise UserError(
                f"{meta} is damaged (not a JSON object); restore it from a copy, or delete it to read the "
                "run without its metadata."
            ) from None
