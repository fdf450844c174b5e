"""`stage` checks every upload with a whole-object CRC64NVME, against the real embedded server.

The bytes-changed-on-the-way tests put a byte-flipping proxy (tests/byteproxy.py) between
awscrt and versitygw: the client computes the checksum from the file, the proxy changes one
byte of the body, and the server must refuse it; stage must say so in one sentence and leave
nothing staged and no upload open.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from pathlib import Path

import pytest
from awscrt.checksums import crc64nvme

from shotbench.errors import UserError
from shotbench.store.s3 import parse_location
from shotbench.store.staging import crc64_text, file_crc64, stage
from shotbench.units import MiB
from support.byteproxy import ByteProxy
from support.serverdisk import flip_stored_byte


def _loc(bucket: str, name: str):
    return parse_location(f"s3://{bucket}/{name}-{uuid.uuid4().hex[:6]}/")


def _files(tmp_path: Path, sizes: dict[str, int]) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    for name, size in sizes.items():
        (src / name).write_bytes(os.urandom(size))
    return src


def test_crc64_is_awscrts_and_independent_of_how_the_file_is_read(tmp_path: Path) -> None:
    data = os.urandom(3 * MiB + 17)
    (tmp_path / "f").write_bytes(data)
    assert file_crc64(tmp_path / "f") == crc64nvme(data)
    assert crc64_text(0x0123456789ABCDEF) == "ASNFZ4mrze8="  # 8 bytes, big-endian, base64: S3's notation


def test_stage_stores_the_files_crc64nvme_small_and_multipart(s3_server, s3_bucket: str, tmp_path: Path) -> None:
    """The server holds, for each object, the CRC64NVME of the file; what the summary claims
    about the multipart object matches what the server returns for it."""
    cfg = s3_server.s3config()
    src = _files(tmp_path, {"small.h5": 300_000, "big.h5": 11 * MiB + 5})
    loc = _loc(s3_bucket, "crc")
    summary = stage(src, loc, cfg, jobs=3, progress=False, part_size=5 * MiB, multipart_threshold=5 * MiB)
    assert (summary.files, summary.skipped) == (2, 0)
    client = cfg.boto3_client()
    returned = {}
    for name in ("small.h5", "big.h5"):
        head = client.head_object(Bucket=loc.bucket, Key=loc.prefix + name, ChecksumMode="ENABLED")
        returned[name] = head.get("ChecksumCRC64NVME")
        body = client.get_object(Bucket=loc.bucket, Key=loc.prefix + name)["Body"].read()
        assert body == (src / name).read_bytes()
    assert returned["small.h5"] == crc64_text(file_crc64(src / "small.h5"))
    if returned["big.h5"] is None:  # the server keeps no whole checksum for multipart: stage must not claim one
        assert summary.parts_only == 1 and "1 multipart: every part's CRC64NVME verified" in summary.line()
    else:
        assert returned["big.h5"] == crc64_text(file_crc64(src / "big.h5"))
        assert summary.parts_only == 0 and "2 of 2 checked whole" in summary.line()
    again = stage(src, loc, cfg, jobs=3, progress=False, part_size=5 * MiB, multipart_threshold=5 * MiB)
    assert (again.files, again.skipped) == (0, 2)  # resume still recognises what is there


@pytest.mark.parametrize("multipart", [False, True], ids=["put", "multipart"])
def test_bytes_changed_on_the_way_are_refused_in_one_sentence(
    s3_server, s3_bucket: str, tmp_path: Path, multipart: bool
) -> None:
    cfg = s3_server.s3config()
    size = 11 * MiB if multipart else 400_000
    src = _files(tmp_path, {"shot.h5": size})
    loc = _loc(s3_bucket, "flip")
    upstream = int(cfg.endpoint_url.rsplit(":", 1)[1].rstrip("/")) if cfg.endpoint_url else 0
    if not cfg.endpoint_url or not cfg.endpoint_url.startswith("http:"):
        pytest.skip("the byte-flipping proxy speaks plain HTTP only")
    proxy = ByteProxy(upstream, flip_puts=True)
    try:
        via = dataclasses.replace(cfg, endpoint_url=proxy.endpoint)
        with pytest.raises(UserError) as info:
            stage(src, loc, via, jobs=2, progress=False, part_size=5 * MiB, multipart_threshold=5 * MiB)
    finally:
        proxy.close()
    message = str(info.value)
    assert proxy.flipped >= 1
    assert "\n" not in message
    assert "bytes changed between this machine and the server" in message
    assert crc64_text(file_crc64(src / "shot.h5")) in message or multipart  # a part's checksum for multipart
    client = cfg.boto3_client()
    assert client.list_objects_v2(Bucket=loc.bucket, Prefix=loc.prefix).get("KeyCount", 0) == 0
    assert client.list_multipart_uploads(Bucket=loc.bucket, Prefix=loc.prefix).get("Uploads", []) == []
    # the same file through no proxy is staged: the refusal was the bytes on the way, not the file
    assert stage(src, loc, cfg, jobs=2, progress=False, part_size=5 * MiB, multipart_threshold=5 * MiB).files == 1


def test_downloads_are_checked_against_the_stored_crc64nvme(s3_server, s3_bucket: str, tmp_path: Path) -> None:
    """What stage uploaded comes back checked: a fetch compares each file's CRC64NVME with the one the
    server stores, and refuses an object whose stored bytes were damaged after the upload (here,
    one byte changed in the server's own data folder, as bit rot would)."""
    from shotbench.store.fetch import Wanted, fetch_objects

    cfg = s3_server.s3config()
    src = _files(tmp_path, {"a.h5": 700_000, "b.h5": 20 * MiB + 3})  # one GET; two ranged GETs
    loc = _loc(s3_bucket, "down")
    stage(src, loc, cfg, jobs=2, progress=False)
    out = tmp_path / "out"
    out.mkdir()
    wanted = [Wanted(loc.prefix + n, out / n, (src / n).stat().st_size) for n in ("a.h5", "b.h5")]
    assert fetch_objects(cfg, loc.bucket, wanted, jobs=4).checked == 2
    assert (out / "b.h5").read_bytes() == (src / "b.h5").read_bytes()

    flip_stored_byte(s3_server, loc.bucket, loc.prefix + "b.h5", 17 * MiB)
    with pytest.raises(UserError, match=r"does not have the CRC64NVME the server stores for .*b\.h5") as info:
        fetch_objects(cfg, loc.bucket, wanted, jobs=4)
    assert "\n" not in str(info.value)
    # without the comparison the damage goes through: the size is right, only the CRC64NVME tells
    assert fetch_objects(cfg, loc.bucket, wanted, jobs=4, stored_crc=False).checked == 0
    assert (out / "b.h5").read_bytes() != (src / "b.h5").read_bytes()
