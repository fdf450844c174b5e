"""The transfer table's check column, and the tool variants configured to make stage's check.

The variants are run against the real embedded server: what each stores is read back with
HeadObject (checksum mode), so a variant that says CRC64NVME and sends none fails here.
"""

from __future__ import annotations

import base64
import dataclasses
import uuid
from pathlib import Path

from awscrt.checksums import crc64nvme

from shotbench.transfer import checks
from shotbench.transfer import results as analysis
from shotbench.transfer.cases import Row, ensure_files
from shotbench.transfer.programs import DEFAULT_TOOLS, TOOL_CLASSES, Target, make_tools
from shotbench.units import KiB, MiB
from support.byteproxy import ByteProxy
from support.serverdisk import flip_stored_byte

PUBLISHED = Path(__file__).resolve().parents[2] / "data" / "transfer" / "20261126T200633Z-a21b0c"


def _crc64(path: Path) -> str:
    return base64.b64encode(crc64nvme(path.read_bytes()).to_bytes(8, "big")).decode()


def test_every_tool_names_its_check_and_where_that_comes_from() -> None:
    uploaders = [n for n, cls in TOOL_CLASSES.items() if "upload" in cls.directions and n != "raw-get"]
    assert sorted(n for n in uploaders if n not in checks.UPLOAD_CHECK) == []
    assert sorted(n for n in uploaders if not checks.SOURCE.get(n)) == []
    assert checks.upload_check("shotbench") == checks.STAGE_CHECK == "CRC64NVME whole-object"
    assert set(analysis.SAME_CHECK) == {"awscrt-crc64nvme", "boto3-crc64nvme"}
    assert {"awscrt-crc64nvme", "boto3-crc64nvme", "obstore-unsigned"} <= set(DEFAULT_TOOLS)


def test_the_check_column_is_what_the_run_recorded(tmp_path: Path) -> None:
    """A run from before the column says 'not recorded' rather than borrow today's checks (its
    shotbench made SHA-256); a run that recorded them shows them beside the times."""
    cases, meta = analysis.load_cases(PUBLISHED), analysis.load_meta(PUBLISHED)
    old = analysis.check_table(cases, meta)
    assert "shotbench" in old.index and set(old["check"]) == {"not recorded"}
    assert list(old.columns[1:]) == list(analysis.seed_table(cases, "upload").index)
    for name in meta["tools"]:
        meta["tools"][name]["check"] = checks.upload_check(name)
    new = analysis.check_table(cases, meta)
    assert new.loc["shotbench", "check"] == "CRC64NVME whole-object"
    assert new.loc["awscrt", "check"] == "none" and new.loc["s5cmd", "check"] == "MD5 + SHA-256 body signing"
    assert (new.drop(columns="check") == old.drop(columns="check")).all().all()
    assert analysis.tools_table(meta).loc["obstore", "upload check"] == "SHA-256 body signing"


def test_configured_variants_store_the_files_crc64nvme(tmp_path: Path, s3_server, s3_bucket: str) -> None:
    cfg = s3_server.s3config()
    client = cfg.boto3_client()
    files = ensure_files(Row(2, 64 * KiB), tmp_path / "files", seed=7)
    (big,) = ensure_files(Row(1, 9 * MiB), tmp_path / "files", seed=7)  # above awscrt's 8 MiB part size
    for name in ("awscrt-crc64nvme", "boto3-crc64nvme", "obstore-unsigned", "awscrt"):
        (tool,) = make_tools([name])
        assert tool.check() is None
        target, apart = Target(s3_bucket, f"k-{uuid.uuid4().hex[:8]}/"), Target(s3_bucket, f"l-{uuid.uuid4().hex[:8]}/")
        tool.upload(files, tmp_path, target, cfg, 2)
        tool.upload([big], tmp_path, apart, cfg, 2)
        for f, t in [(f, target) for f in files] + [(big, apart)]:
            head = client.head_object(Bucket=s3_bucket, Key=t.key(f.name), ChecksumMode="ENABLED")
            assert head["ContentLength"] == f.size
            if name.endswith("crc64nvme"):
                assert head.get("ChecksumCRC64NVME") == _crc64(f.path), (name, head)


def test_a_byte_changed_on_the_way_is_refused_only_by_tools_that_check(
    tmp_path: Path, s3_server, s3_bucket: str
) -> None:
    """The check column, proved on the wire: through a proxy that changes one byte of every PUT
    body, the tools whose check the column names refuse the upload, and the tools marked `none`
    store the damaged bytes without a word (the server computes its own checksum of what arrived)."""
    cfg = s3_server.s3config()
    client = cfg.boto3_client()
    (f,) = ensure_files(Row(1, 256 * KiB), tmp_path / "files", seed=9)
    proxy = ByteProxy(int(str(cfg.endpoint_url).rsplit(":", 1)[1]), flip_puts=True)
    via = dataclasses.replace(cfg, endpoint_url=proxy.endpoint)
    outcome = {}
    names = ["awscrt-crc64nvme", "boto3-crc64nvme", "boto3-transfer-manager", "awscrt", "obstore-unsigned"]
    clis = [n for n in ("aws-s3-cp", "s5cmd") if make_tools([n])[0].check() is None]  # when installed
    try:
        for name in names + clis:
            (tool,) = make_tools([name])
            target = Target(s3_bucket, f"w-{uuid.uuid4().hex[:8]}/")
            try:
                tool.upload([f], tmp_path, target, via, 1)
            except Exception:  # noqa: BLE001 - each tool fails in its own type; refused is what counts
                outcome[name] = "refused"
                continue
            body = client.get_object(Bucket=s3_bucket, Key=target.key(f.name))["Body"].read()
            outcome[name] = "stored intact" if body == f.path.read_bytes() else "stored damaged"
    finally:
        proxy.close()
    assert proxy.flipped >= 5
    assert outcome == {
        "awscrt-crc64nvme": "refused",
        "boto3-crc64nvme": "refused",
        "boto3-transfer-manager": "refused",
        "awscrt": "stored damaged",
        "obstore-unsigned": "stored damaged",
        **{n: "refused" for n in clis},  # CRC32 + SHA-256 signing (aws, http); MD5 + SHA-256 (s5cmd)
    }
    assert [checks.upload_check(n) for n in ("awscrt", "obstore-unsigned")] == ["none", "none"]


def test_downloads_that_check_say_so_and_a_damaged_object_is_caught_only_by_them(
    tmp_path: Path, s3_server, s3_bucket: str
) -> None:
    """The download sources carry the whole-object CRC64NVME (they are staged), the tools that check
    downloads against it count the files they checked (`checksum-checked`), and a stored object whose
    bytes changed on the server's disk under its checksum fails exactly those tools."""
    from shotbench.transfer.execute import seed_source

    cfg = s3_server.s3config()
    client = cfg.boto3_client()
    files = ensure_files(Row(2, 64 * KiB), tmp_path / "files", seed=11)
    (big,) = ensure_files(Row(1, 9 * MiB), tmp_path / "files", seed=11)  # awscrt GETs it in parts
    source, apart = Target(s3_bucket, f"d-{uuid.uuid4().hex[:8]}/"), Target(s3_bucket, f"e-{uuid.uuid4().hex[:8]}/")
    seed_source(cfg, source, files)
    seed_source(cfg, apart, [big])
    for f, t in [(f, source) for f in files] + [(big, apart)]:
        head = client.head_object(Bucket=s3_bucket, Key=t.key(f.name), ChecksumMode="ENABLED")
        assert head.get("ChecksumCRC64NVME") == _crc64(f.path) and head.get("ChecksumType") == "FULL_OBJECT", head
    counted = {}
    for name in ("awscrt-crc64nvme", "shotbench", "awscrt", "obstore"):
        (tool,) = make_tools([name])
        dest = tmp_path / name
        dest.mkdir()
        counted[name] = [
            tool.download(files, source, dest, cfg, 2).checked,
            tool.download([big], apart, dest, cfg, 2).checked,
        ]
    assert counted == {"awscrt-crc64nvme": [2, 1], "shotbench": [2, 1], "awscrt": [None, None], "obstore": [None, None]}
    # one byte of the stored object changed where the server keeps it, its stored checksum left as it was
    flip_stored_byte(s3_server, s3_bucket, source.key(files[0].name), 1000)
    caught = {}
    for name in ("awscrt-crc64nvme", "shotbench", "awscrt", "obstore"):
        (tool,) = make_tools([name])
        dest = tmp_path / f"{name}-damaged"
        dest.mkdir()
        try:
            tool.download(files[:1], source, dest, cfg, 1)
        except Exception:  # noqa: BLE001 - each tool fails in its own type; refused is what counts
            caught[name] = "refused"
            continue
        got = (dest / files[0].name).read_bytes()
        caught[name] = "delivered damaged" if got != files[0].path.read_bytes() else "delivered intact"
    assert caught == {
        "awscrt-crc64nvme": "refused",
        "shotbench": "refused",
        "awscrt": "delivered damaged",
        "obstore": "delivered damaged",
    }
