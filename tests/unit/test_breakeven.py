"""The index break-even: reads after which building a per-file index has repaid itself."""

from __future__ import annotations

from shotbench.analyse.breakeven import break_even_reads, per_file_index_time, summary_lines


def test_break_even_rounds_up_and_never_when_no_saving() -> None:
    assert break_even_reads(1.0, 0.2, 0.45) == 4.0  # 1.0 / 0.25
    assert break_even_reads(1.0, 0.5, 0.5) is None
    assert break_even_reads(1.0, 0.6, 0.5) is None
    assert break_even_reads(0.0, 0.1, 0.2) == 0.0


def rows(backend: str, mode: str, obj_time: float, index: str = "", n: int = 2) -> dict:
    return {
        "backend": backend,
        "obj-type": mode,
        "mean-obj-time": str(obj_time),
        "wrkr-num-objs": str(n),
        "index-time": index,
        "error": "",
    }


def test_summary_from_worker_rows() -> None:
    workers = [
        rows("kerchunk", "shots", 0.1, "0.6"),
        rows("kerchunk", "shots", 0.1, "0.6"),
        rows("fsspec", "shots", 0.2),
        rows("ros3-1.14", "shots", 0.05),
        {**rows("local", "shots", 0.01), "error": "x"},
    ]
    assert per_file_index_time(workers, "kerchunk") == 0.3
    assert summary_lines(workers) == [
        "kerchunk index 0.300 s/file (shots): pays for itself vs fsspec: 3 reads, vs ros3-1.14: never"
    ]
    assert summary_lines([rows("fsspec", "shots", 0.2)]) == []  # older runs: no index columns
