"""One definition of the binary units, and the sizes built on it keep their byte values."""

from __future__ import annotations

from shotbench.backends.base import ReadSettings
from shotbench.hdf5.blockcache import DEFAULT_BLOCK_SIZE, DEFAULT_CACHE_SIZE
from shotbench.plan.profiles import BenchConfig
from shotbench.transfer.cases import parse_size
from shotbench.units import GiB, KiB, MiB


def test_units_are_binary_and_every_default_is_the_same_byte_count_as_before() -> None:
    assert (KiB, MiB, GiB) == (1024, 1_048_576, 1_073_741_824)
    assert ReadSettings().chunk_cache == BenchConfig().chunk_caches[0] == 1_048_576
    assert BenchConfig().page_buffers == [0, 268_435_456]
    assert (DEFAULT_BLOCK_SIZE, DEFAULT_CACHE_SIZE) == (16_777_216, 134_217_728)
    assert parse_size("1MiB") == parse_size("1M") == MiB
