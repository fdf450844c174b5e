"""Text columns of a CSV read back as text, whatever pandas guessed."""

from __future__ import annotations

from typing import TypeVar

import pandas as pd

Frame = TypeVar("Frame", pd.Series, pd.DataFrame)


def as_text(values: Frame) -> Frame:
    """`values` as str, "" where a cell was empty. A column whose every cell is empty reads back
    as float NaN, and pandas 4 refuses to fill a float column with "" (Pandas4Warning today), so
    the column is made object before the fill."""
    return values.astype(object).fillna("").astype(str)
