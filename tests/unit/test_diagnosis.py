"""`shotbench doctor` asks DATA what the run's first step asks it (`bench/diagnosis.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shotbench.bench import diagnosis as doctor


def _facts(data: str, network: str = "none") -> dict[str, Any]:
    return {
        "data": data, "endpoint": "AWS S3", "region": "us-east-1", "region_from": "AWS_REGION",
        "credentials": {"source": "env"}, "builds": {}, "network": network,
        "instance": {"on_ec2": False, "region": ""}, "plan": {"seconds": 60},
    }  # fmt: skip


def test_a_folder_without_shot_files_is_a_problem_before_the_run(tmp_path: Path) -> None:
    """The screen said "no problems found" for a folder the run then refused at its first step."""
    (tmp_path / "notes.txt").write_text("not a shot file")
    facts = _facts(str(tmp_path))
    assert doctor.problems(facts) == []
    found = doctor.listing_problem(facts)
    assert found is not None and "holds 1 file but none named *.h5" in found


def test_an_empty_folder_is_named(tmp_path: Path) -> None:
    found = doctor.listing_problem(_facts(str(tmp_path)))
    assert found is not None and "holds no shot files" in found and "shotbench synth" in found


def test_a_folder_of_shot_files_passes(tmp_path: Path) -> None:
    (tmp_path / "s1.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(64))
    assert doctor.listing_problem(_facts(str(tmp_path))) is None


def test_one_cause_is_one_sentence(tmp_path: Path) -> None:
    """A problem `problems` already names (here the network) is not asked of DATA again."""
    assert doctor.listing_problem(_facts(str(tmp_path), network="s3-same-regoin")) is None
    assert doctor.listing_problem(_facts(doctor.EMBEDDED_DATA)) is None
