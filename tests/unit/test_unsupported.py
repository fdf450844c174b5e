"""A reader's missing format feature becomes one recognisable `unsupported: …` error cell."""

from __future__ import annotations

from shotbench.backends.unsupported import Unsupported, error_cell, translate


def test_missing_features_become_unsupported_cells() -> None:
    exc = translate("pyfive", RuntimeError("Pyfive cannot yet read HDF5 files with layout class 4"))
    assert isinstance(exc, Unsupported)
    assert (
        error_cell("shots/1.h5", exc)
        == "unsupported: pyfive: Pyfive cannot yet read HDF5 files with layout class 4 (shots/1.h5)"
    )
    assert isinstance(translate("h5coro", NotImplementedError("x")), Unsupported)


def test_other_failures_stay_errors() -> None:
    exc = translate("h5coro", ConnectionError("connection refused"))
    assert isinstance(exc, ConnectionError)
    assert error_cell("k", exc) == "k: ConnectionError: connection refused"
