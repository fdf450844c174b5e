"""The column reference in docs/ is what the schema says: generated, and checked here."""

from __future__ import annotations

from shotbench.commands.columns import cmd_columns
from shotbench.records.schema import CASE_COLUMNS, WORKER_COLUMNS
from shotbench.reports import columnref
from shotbench.transfer.rows import CASE_COLUMNS as TRANSFER_CASE_COLUMNS
from shotbench.transfer.rows import TRANSFER_COLUMNS


def test_the_committed_reference_is_the_generated_one() -> None:
    assert columnref.path().read_text() == columnref.markdown(), "run `make columns` and commit docs/reference/"


def test_every_column_of_every_table_is_documented_in_csv_order() -> None:
    text = columnref.markdown()
    for columns in (WORKER_COLUMNS, CASE_COLUMNS, TRANSFER_CASE_COLUMNS, TRANSFER_COLUMNS):
        at = [text.index(f"| `{name}` |") for name in dict.fromkeys(columns)]
        assert len(at) == len(set(columns))
    for t in columnref.TABLES:
        assert all(c.doc for c in t.row.declared()), t.file


def test_check_fails_when_the_file_differs(tmp_path, monkeypatch, capsys) -> None:
    import argparse

    stale = tmp_path / "columns.md"
    stale.write_text("# out of date\n")
    monkeypatch.setattr(columnref, "path", lambda: stale)
    assert cmd_columns(argparse.Namespace(check=True)) == 1
    assert "differs from the schema" in capsys.readouterr().out
    assert cmd_columns(argparse.Namespace(check=False)) == 0
    assert cmd_columns(argparse.Namespace(check=True)) == 0
    assert stale.read_text() == columnref.markdown()
