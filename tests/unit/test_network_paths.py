"""A backend's own network path in a run's config: `network` in its options table names the
profile on its path, kept apart from the reader's options, and a bad one is one sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from shotbench.errors import UserError
from shotbench.plan import profiles


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "run.toml"
    path.write_text('backends = ["download", "download@slow", "local"]\n' + text)
    return path


def test_the_network_option_names_a_path_and_leaves_the_readers_options(tmp_path: Path) -> None:
    cfg = profiles.load(
        "quick",
        _config(tmp_path, '[options."download@slow"]\ntarget = "memory"\nnetwork = "latency-50ms"\n'),
    )
    assert cfg.networks == {"download@slow": "latency-50ms"}
    assert cfg.options["download@slow"] == {"target": "memory"}  # the reader never sees `network`
    assert profiles.BenchConfig(**cfg.to_dict()).networks == cfg.networks  # run.json keeps it for --resume


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ('[options."download@slow"]\nnetwork = "latency-3ms"\n', "is not a network profile"),
        ('[options.local]\nnetwork = "latency-50ms"\n', "does not send its reads to the S3 endpoint"),
        ('[options."download@slow"]\nnetwork = 40\n', "network profile's name per backend"),
    ],
)
def test_a_bad_network_path_is_one_sentence(tmp_path: Path, table: str, words: str) -> None:
    with pytest.raises(UserError, match=words):
        profiles.load("quick", _config(tmp_path, table))
