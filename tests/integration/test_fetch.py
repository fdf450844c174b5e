"""Fetching: objects of every size arrive byte for byte, split into ranges where they are large,
and a file that does not end as the object must end is one sentence, not a file left looking whole."""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path

import pytest

from shotbench.errors import UserError
from shotbench.store.fetch import PIECE, Piece, Wanted, fetch_objects, pieces
from shotbench.units import MiB


def test_small_objects_are_one_get_and_large_ones_are_split_into_whole_pieces() -> None:
    plan = pieces([0, 1, PIECE, PIECE + 1, 3 * PIECE], piece=PIECE)
    by_object: dict[int, list[Piece]] = {}
    for p in plan:
        by_object.setdefault(p.index, []).append(p)
    assert [len(by_object[i]) for i in range(5)] == [1, 1, 1, 2, 3]
    assert by_object[0] == [Piece(0, 0, 0)]
    assert by_object[3] == [Piece(3, 0, PIECE), Piece(3, PIECE, 1)]
    for i, size in enumerate([0, 1, PIECE, PIECE + 1, 3 * PIECE]):
        # the ranges of one object tile it exactly: no gap, no overlap
        assert sum(p.length for p in by_object[i]) == size
        assert [p.start for p in by_object[i]] == [
            sum(q.length for q in by_object[i][:k]) for k in range(len(by_object[i]))
        ]


def test_fetch_writes_every_object_byte_for_byte_and_checks_the_sha256(
    s3_server, s3_bucket: str, tmp_path: Path
) -> None:
    cfg = s3_server.s3config()
    client = cfg.boto3_client()
    prefix = f"fetch-{uuid.uuid4().hex[:6]}/"
    piece = 3 * MiB  # small ranges, so a few MiB exercise the split; each streamed in 1 MiB chunks
    bodies = {"empty": b"", "small": os.urandom(MiB // 2 + 3), "large": os.urandom(2 * piece + 12_345)}
    for name, body in bodies.items():
        client.put_object(Bucket=s3_bucket, Key=prefix + name, Body=body)
    wanted = [Wanted(prefix + n, tmp_path / n, len(b), hashlib.sha256(b).hexdigest()) for n, b in bodies.items()]

    done = fetch_objects(cfg, s3_bucket, wanted, jobs=4, piece=piece)

    assert (done.files, done.bytes) == (3, sum(len(b) for b in bodies.values()))
    for n, b in bodies.items():
        assert (tmp_path / n).read_bytes() == b
    assert set(done.finished) == {w.key for w in wanted} and all(s >= 0 for s in done.finished.values())

    wrong = Wanted(prefix + "large", tmp_path / "again", len(bodies["large"]), "0" * 64)
    with pytest.raises(UserError, match="does not have the SHA-256 it must have"):
        fetch_objects(cfg, s3_bucket, [wrong], jobs=4, piece=piece)
    longer = Wanted(prefix + "small", tmp_path / "longer", len(bodies["small"]) + 1)
    with pytest.raises(UserError, match="fetch again"):
        fetch_objects(cfg, s3_bucket, [longer], jobs=2)
    # a streamed range (more than one chunk) that ends early is refused the same way
    streamed = Wanted(prefix + "large", tmp_path / "streamed", len(bodies["large"]) + 2 * MiB)
    with pytest.raises(UserError, match="where .* were asked.*fetch again"):
        fetch_objects(cfg, s3_bucket, [streamed], jobs=2, piece=piece)
    missing = Wanted(prefix + "absent", tmp_path / "absent", 10)
    with pytest.raises(UserError, match=r"fetching from s3://.* failed"):
        fetch_objects(cfg, s3_bucket, [missing], jobs=2)


@pytest.mark.server
def test_checked_downloads_keep_pace_with_unchecked_gets_when_every_response_waits(tmp_path: Path) -> None:
    """With a fixed 50 ms added to every response, 128 checked downloads at 32 in flight are four
    rounds (a 0.2 s floor): the stored CRC64NVME comes in each GET's own response. When it was
    asked for with a HEAD per object on 8 connections, the HEADs alone were sixteen rounds, 0.8 s
    at least, and the download waited for them (0.84 s against 0.25 s unchecked, on a quiet machine)."""
    from shotbench.store.embedded import embedded_server
    from shotbench.store.s3 import parse_location
    from shotbench.store.staging import stage

    src = tmp_path / "src"
    src.mkdir()
    for i in range(128):
        (src / f"o{i:03d}").write_bytes(os.urandom(1024))
    with embedded_server(tmp_path / "state", network="latency-50ms") as info:
        cfg = info.s3config()
        stage(src, parse_location("s3://lat/o/"), cfg, jobs=32, progress=False, create_bucket=True)
        times = []
        for trial in range(3):
            dest = tmp_path / f"dl{trial}"
            dest.mkdir()
            wanted = [Wanted(f"o/{p.name}", dest / p.name, 1024) for p in src.iterdir()]
            done = fetch_objects(cfg, "lat", wanted, jobs=32)
            assert done.checked == 128  # every file compared with the CRC64NVME stage stored
            times.append(done.seconds)
    print(f"128 checked downloads at 32 in flight, 50 ms a response: {', '.join(f'{t:.3f}' for t in times)} s")
    assert min(times) < 0.6  # 0.33 s on a quiet machine with HEADs on as many connections; eight cannot beat 0.8 s


def test_the_check_of_a_small_object_rides_in_its_get_and_a_large_one_asks_once(
    s3_server, s3_bucket: str, tmp_path: Path
) -> None:
    """Objects staged with their CRC64NVME, keys with spaces, non-ASCII and reserved characters
    (which libcurl must sign as S3 expects): every file is checked against the stored value, the
    small ones with one GET each and no other request, the large one (three ranges) with its
    GETs and a single HEAD, as the server's access log counts them."""
    from shotbench.store import accesslog
    from shotbench.store.s3 import parse_location
    from shotbench.store.staging import stage

    src = tmp_path / "src"
    (src / "dir with space").mkdir(parents=True)
    names = ["plain.h5", "dir with space/a b.h5", "ünï cödé.h5", "plus+equals=amp&.h5", "tilde~(1).h5", "empty.h5"]
    bodies = {n: os.urandom(0 if n == "empty.h5" else 200_000 + i) for i, n in enumerate(names)}
    piece = 3 * MiB
    bodies["large.h5"] = os.urandom(2 * piece + 777)
    for n, b in bodies.items():
        (src / n).write_bytes(b)
    prefix = f"carried-{uuid.uuid4().hex[:6]}/"
    cfg = s3_server.s3config()
    stage(src, parse_location(f"s3://{s3_bucket}/{prefix}"), cfg, jobs=4, progress=False)
    wanted = [Wanted(prefix + n, tmp_path / "out" / n, len(b)) for n, b in bodies.items()]
    for w in wanted:
        w.path.parent.mkdir(parents=True, exist_ok=True)
    log = Path(s3_server.access_log)
    accesslog.settle(log)
    since = accesslog.offset_marker(log)

    done = fetch_objects(cfg, s3_bucket, wanted, jobs=4, piece=piece)

    accesslog.settle(log)
    records, _ = accesslog._read(log, since)
    ops = [
        (r.operation.removeprefix("s3_"), r.key)
        for r in records
        if isinstance(r, accesslog.LogRecord) and r.bucket == s3_bucket
    ]
    assert done.checked == len(bodies)  # every file, the empty one and the large one among them
    for n, b in bodies.items():
        assert (tmp_path / "out" / n).read_bytes() == b, n
    small = [prefix + n for n in names]
    assert sorted(k for op, k in ops if op == "GetObject" and k in small) == sorted(small)
    assert sum(1 for op, k in ops if op == "GetObject" and k == prefix + "large.h5") == 3
    assert [k for op, k in ops if op == "HeadObject"] == [prefix + "large.h5"]
    assert len(ops) == len(small) + 3 + 1  # nothing else was asked


def test_small_objects_arrive_whole_through_503s_and_cut_bodies(s3_server, s3_bucket: str, tmp_path: Path) -> None:
    """Behind the HTTP fault proxy, which answers a seeded share of requests `503 SlowDown` and
    cuts others' bodies short, every small object is tried again until it arrives whole and
    checked: the proxy counts the faults it made, and none of them leaves a wrong file or an error."""
    from shotbench.processes import terminate
    from shotbench.store import faultproxy
    from shotbench.store.s3 import S3Config, parse_location
    from shotbench.store.staging import stage

    src = tmp_path / "src"
    src.mkdir()
    bodies = {f"s{i:02d}.h5": os.urandom(100_000 + i) for i in range(30)}
    for n, b in bodies.items():
        (src / n).write_bytes(b)
    prefix = f"faults-{uuid.uuid4().hex[:6]}/"
    cfg = s3_server.s3config()
    stage(src, parse_location(f"s3://{s3_bucket}/{prefix}"), cfg, jobs=4, progress=False)
    faults = faultproxy.HttpFaults((("slowdown", 0.15), ("truncated", 0.15)), methods=("GET",), seed=3)
    proxy = faultproxy.start(tmp_path, s3_server.port, faults)
    try:
        via = S3Config(f"http://127.0.0.1:{proxy.port}", cfg.region, cfg.access_key, cfg.secret_key)
        wanted = [Wanted(prefix + n, tmp_path / "out" / n, len(b)) for n, b in bodies.items()]
        (tmp_path / "out").mkdir()
        done = fetch_objects(via, s3_bucket, wanted, jobs=4)
        made = faultproxy.read_counts(proxy.stats)
    finally:
        terminate(proxy.pid, faultproxy.MODULE)
    assert done.checked == len(bodies)
    for n, b in bodies.items():
        assert (tmp_path / "out" / n).read_bytes() == b, n
    assert made.get("slowdown", 0) >= 1 and made.get("truncated", 0) >= 1, made


def test_a_small_object_longer_than_listed_or_a_full_disk_is_one_sentence(
    s3_server, s3_bucket: str, tmp_path: Path
) -> None:
    """A small object's GET writes at most the bytes listed: a body a little longer (within what
    libcurl lets through) and one far longer (which libcurl ends at once) are both refused, and a
    disk that is full when the bytes are written (`/dev/full`) is one sentence naming the file."""
    cfg = s3_server.s3config()
    prefix = f"longer-{uuid.uuid4().hex[:6]}/"
    body = os.urandom(MiB - 5)  # more than one flush of the pieces libcurl hands over
    cfg.boto3_client().put_object(Bucket=s3_bucket, Key=prefix + "obj", Body=body, ChecksumAlgorithm="CRC64NVME")

    for listed in (len(body) - 1, 1000):
        with pytest.raises(UserError, match=f"received more than {listed} bytes .* fetch again"):
            fetch_objects(cfg, s3_bucket, [Wanted(prefix + "obj", tmp_path / f"l{listed}", listed)], jobs=2)
        assert not (tmp_path / f"l{listed}").exists() or (tmp_path / f"l{listed}").stat().st_size <= listed
    with pytest.raises(UserError, match=r"^cannot write /dev/full \(No space left on device\); check the folder"):
        fetch_objects(cfg, s3_bucket, [Wanted(prefix + "obj", Path("/dev/full"), len(body))], jobs=2)
    done = fetch_objects(cfg, s3_bucket, [Wanted(prefix + "obj", tmp_path / "whole", len(body))], jobs=2)
    assert (tmp_path / "whole").read_bytes() == body and done.checked == 1
