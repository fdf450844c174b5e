"""Text columns read back as text: an all-empty CSV column is float NaN to pandas."""

from __future__ import annotations

import io

import pandas as pd

from shotbench.analyse.text import as_text


def test_an_all_empty_column_reads_as_empty_text_and_a_filled_one_keeps_its_cells() -> None:
    df = pd.read_csv(io.StringIO("status,backend\n,ros3-1.14\n,\n"))
    assert df["status"].dtype == float  # the premise: pandas guessed float for the empty column
    assert as_text(df["status"]).tolist() == ["", ""]
    assert as_text(df["backend"]).tolist() == ["ros3-1.14", ""]
    assert as_text(df).to_dict("list") == {"status": ["", ""], "backend": ["ros3-1.14", ""]}
