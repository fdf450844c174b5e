"""The direction ablation: its settings groups (studies/direction/ablation_run) and its reduction (studies/direction/ablation):
ratios with intervals, one knob at a time, and the verdict."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from shotbench.studies.direction import ablation as a
from shotbench.studies.direction import ablation_run as d


def _trials(*times: float) -> pd.Series:
    return pd.Series(times, index=range(1, len(times) + 1))


def test_interval_is_other_over_reference_with_bootstrap_bounds() -> None:
    ratio, lo, hi = a.interval(_trials(2.0, 2.1, 1.9), _trials(1.0, 1.1, 0.9))
    assert ratio == pytest.approx(0.5, abs=0.01) and lo <= ratio <= hi and hi < 1
    assert np.isnan(a.interval(_trials(2.0), _trials(1.0))[1])  # one trial: no interval


def test_a_round_that_ran_slower_for_both_divides_out() -> None:
    """Trial 1 of a fresh server ran twice as long for both libraries: paired by round, the ratio
    is 0.5 with a tight interval; unpaired, the same times would give an interval across 1."""
    ref, other = _trials(4.0, 2.0, 2.1), _trials(2.0, 1.0, 1.05)
    ratio, lo, hi = a.interval(ref, other)
    assert ratio == pytest.approx(0.5) and 0.49 <= lo <= hi <= 0.51
    unpaired = a.interval(ref, _trials(2.0, 1.0, 1.05).set_axis([4, 5, 6]))
    assert unpaired[2] > 0.9  # different rounds: nothing divides out


def _cell(**kw: object) -> dict:
    base = {
        "group": "base",
        "tls": True,
        "latency-ms": 0,
        "backend": "ros3-2.0",
        "obj-type": "signals",
        "pb-size": a.BASE_PB,
        "num-workers": a.BASE_WORKERS,
        "trials": 3,
        "runtime-s": 1.0,
        "ratio-vs-1.14": 1.0,
        "ci-low": 0.9,
        "ci-high": 1.1,
        "hdf5": "2.0.0",
        "gets-per-open": 2.0,
        "heads-per-open": 1.0,
        "MB-per-open": 16.0,
        "open-ms": 50.0,
        "read-ms": 5.0,
    }
    return {**base, **kw}


def test_a_knob_that_puts_the_ratio_on_both_sides_of_one_is_named() -> None:
    cells = pd.DataFrame(
        [
            _cell(**{"ratio-vs-1.14": 0.8, "ci-low": 0.75, "ci-high": 0.85}),  # https: 2.x faster
            _cell(group="http", tls=False, **{"ratio-vs-1.14": 1.3, "ci-low": 1.2, "ci-high": 1.4}),
            _cell(group="base", **{"pb-size": 0, "ratio-vs-1.14": 0.9, "ci-low": 0.8, "ci-high": 0.95}),
            _cell(group="http", tls=False, **{"pb-size": 0, "ratio-vs-1.14": 0.95, "ci-low": 0.9, "ci-high": 1.0}),
            _cell(backend="ros3-1.14", **{"ratio-vs-1.14": float("nan")}),  # the reference is no knob value
        ]
    )
    k = a.knob_table(cells)
    tls = k[k["knob"] == "https vs http"]
    assert set(tls["value"]) == {"https", "http"} and set(tls["page buffer"]) == {"pb 0", "pb 256 MiB"}
    found = {(v.knob, v.page_buffer): v for v in a.verdicts(k)}
    moved = found[("https vs http", "pb 256 MiB")]
    assert moved.crosses and moved.clear and moved.low == ("https", 0.8) and moved.high == ("http", 1.3)
    assert not found[("https vs http", "pb 0")].crosses  # both below 1 at pb 0
    assert found[("page buffer", "")].low[0] == "pb 256 MiB"


def test_the_new_knobs_read_their_own_columns_and_older_cells_sit_at_the_baseline() -> None:
    """Bandwidth, credentials and 2.2's block size each have a row per value; cells made before
    those columns existed count as their baseline (no cap, explicit keys)."""
    cells = pd.DataFrame(
        [
            _cell(**{"ratio-vs-1.14": 0.8}),
            _cell(group="bandwidth-40", **{"bandwidth-MBps": 40, "ratio-vs-1.14": 1.2}),
            _cell(group="credentials-chain", credentials="chain", **{"ratio-vs-1.14": 0.7}),
            _cell(group="block-size-2.2", backend="ros3-2.2", **{"block-size": 64 * 1024, "ratio-vs-1.14": 0.5}),
            _cell(group="block-size-2.2", backend="ros3-2.2", **{"block-size": 16 * 2**20, "ratio-vs-1.14": 0.9}),
        ]
    )
    k = a.knob_table(cells)
    assert list(k[k["knob"] == "bandwidth per connection"]["value"]) == ["no cap", "40 MB/s"]
    assert list(k[k["knob"] == "2.x credentials: explicit vs the chain"]["value"]) == ["explicit", "chain"]
    block = k[k["knob"] == "2.2 block size (its open-time read)"]
    assert list(block["value"]) == ["64 KiB", "16 MiB"] and set(block["backend"]) == {"ros3-2.2"}
    found = {v.knob: v for v in a.verdicts(k)}
    assert found["bandwidth per connection"].crosses  # 0.8 with no cap, 1.2 at 40 MB/s


def test_direction_md_is_made_from_the_cells_it_is_given(tmp_path) -> None:
    """markdown() renders the cells its caller already reduced: a folder with no finished
    settings (where `cells` would refuse) still renders them, and names every group as not run."""
    cells = pd.DataFrame(
        [
            _cell(**{"ratio-vs-1.14": 0.8, "ci-low": 0.75, "ci-high": 0.85}),
            _cell(group="http", tls=False, **{"ratio-vs-1.14": 1.3, "ci-low": 1.2, "ci-high": 1.4}),
        ]
    )
    text = d.markdown(tmp_path, cells)
    assert f"# Direction ablation {tmp_path.name}" in text
    assert "| ros3-2.0 (2.0.0) | — | signals | pb 256 MiB | 2.00 | 1.00 | 16.0 | 50.0 | 5.0 |" in text
    assert "- **https vs http** (signals, pb 256 MiB): 0.80 at https vs 1.30 at http" in text
    assert "the base settings (not run)" in text


def test_a_group_config_is_valid_toml_that_the_bench_accepts(tmp_path) -> None:
    from shotbench.plan import profiles

    group = next(g for g in d.GROUPS if g.name == "credentials-chain")
    cfg_file = tmp_path / "config.toml"
    cfg_file.write_text(group.config_toml(3, 2, 4))
    cfg = profiles.load(config=cfg_file)
    assert cfg.options == {"ros3-2.0": {"credentials": "chain"}} and cfg.trials == 3
    blocks = next(g for g in d.GROUPS if g.name == "block-size-2.2")
    cfg_file.write_text(blocks.config_toml(3, 2, 4))
    assert len(profiles.load(config=cfg_file).block_caches) == 3
    pages = next(g for g in d.GROUPS if g.name == "pages-32MB")
    cfg_file.write_text(pages.config_toml(3, 2, 4))
    big = profiles.load(config=cfg_file)
    assert (big.file_size, big.page_size, big.shots) == (64_000_000, 32_000_000, 8) and pages.own_files


def test_the_page_size_knob_compares_the_two_big_file_groups_only() -> None:
    cells = pd.DataFrame(
        [
            _cell(**{"ratio-vs-1.14": 0.8}),  # the default 16 MB files: not a page-size row
            _cell(group="pages-8MB", **{"file-MB": 64, "page-MB": 8, "ratio-vs-1.14": 1.0}),
            _cell(group="pages-32MB", **{"file-MB": 64, "page-MB": 32, "ratio-vs-1.14": 0.7}),
        ]
    )
    k = a.knob_table(cells)
    assert list(k[k["knob"] == "page size (64 MB files)"]["value"]) == ["8 MB pages", "32 MB pages"]
    assert list(k[k["knob"] == "page buffer"]["ratio-vs-1.14"]) == [0.8]


def test_an_unknown_credentials_choice_is_one_sentence(tmp_path) -> None:
    import pytest

    from shotbench.errors import UserError
    from shotbench.plan import profiles

    cfg_file = tmp_path / "config.toml"
    cfg_file.write_text('backends = ["ros3-2.0"]\n[options."ros3-2.0"]\ncredentials = "env"\n')
    with pytest.raises(UserError, match="not one of 'explicit', 'chain'"):
        profiles.load(config=cfg_file)


def test_the_answer_names_a_knob_that_moves_the_ratio_and_says_so_when_none_does() -> None:
    moved = a.Verdict("latency", "signals", "pb 0", ("0 ms", 0.8), ("70 ms", 1.2), True, True, True)
    still = a.Verdict("workers", "shots", "", ("1 workers", 0.9), ("8 workers", 0.95), False, False, False)
    assert a.answer_lines([moved, still])[0].startswith("**latency** moves the ratio across 1 (signals, pb 0)")
    assert a.answer_lines([still]) == ["No knob measured moves the ratio across 1 with an interval clear of 1."]


def test_the_headline_quotes_the_rows_it_names_and_leaves_out_what_is_missing() -> None:
    which = a.WHICH_2X_KNOB.name
    rows = [
        (which, "signals", "pb 256 MiB", "ros3-2.0", 0.85),
        (which, "shots", "pb 256 MiB", "ros3-2.0", 0.80),
        ("https vs http", "signals", "pb 0", "http", 3.19),
        (a.BLOCK_SIZE_KNOB.name, "signals", "pb 0", "64 KiB", 0.49),
        (a.BLOCK_SIZE_KNOB.name, "signals", "pb 0", "16 MiB", 0.90),
    ]
    k = pd.DataFrame(
        [
            {"knob": n, "obj-type": m, "page buffer": p, "value": v, "ratio-vs-1.14": r, "ci-low": r - 0.1}
            | {"ci-high": r + 0.1}
            for n, m, p, v, r in rows
        ]
    )
    text = "\n".join(a.headline(k))
    assert (
        "2.0.0 ÷ 1.14.6 is 0.85 (0.75–0.95) reading signals" in text and "0.80 (0.70–0.90) reading whole shots" in text
    )
    assert "over plain http, where 1.14.6 sets up no TLS, 3.19" in text and "70 ms" not in text  # no latency rows
    assert "is 0.49 (0.39–0.59) instead of 0.90 (0.80–1.00)" in text
    assert a.headline(k.iloc[:0]) == []
