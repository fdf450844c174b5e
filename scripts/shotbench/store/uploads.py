"""The multipart uploads `stage` started and has not finished: a journal, and their cleanup.

An abandoned multipart upload is invisible in a bucket listing, yet S3 keeps (and bills) its
parts until someone aborts it. `stage` aborts its own on failure and on SIGINT/SIGTERM, but a
SIGKILL (or a power cut) leaves them. So every upload id stage is given is written here first,
one small file each, and removed once the upload is completed or aborted; the next `stage` to
the same bucket lists the prefix's open uploads (ListMultipartUploads) and aborts
those its journal names whose process is gone. Uploads other clients started are never in the
journal, so they are never touched, and neither are those of a `stage` still running.

The journal lives in the user's shotbench cache, so it outlives checkouts and sessions.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from shotbench.paths import cache_dir
from shotbench.store.clients import UNRESERVED

if TYPE_CHECKING:
    from shotbench.store.crt import Engine


@dataclass(frozen=True)
class Entry:
    """One upload stage started: where, which key, which id, and the process that owns it."""

    endpoint: str
    bucket: str
    key: str
    upload_id: str  # "" for an upload awscrt opened itself (its id is not exposed): matched by key and time
    pid: int
    started: float  # time.time() when the entry was written, before the upload was opened
    path: Path


def _folder(bucket: str) -> Path:
    """One folder per bucket name, whatever the endpoint URL: one server is often reached by more
    than one URL (a proxy, localhost or 127.0.0.1). An entry is only ever aborted when the server
    lists that very upload id under that key, so an entry of another server never matches."""
    tag = hashlib.sha256(bucket.encode()).hexdigest()[:16]
    return cache_dir() / "stage-uploads" / tag


def record(endpoint: str, bucket: str, key: str, upload_id: str, started: float | None = None) -> Path:
    """Write the entry before the first part is sent (atomically: a half-written entry would be
    an upload nobody could clean)."""
    folder = _folder(bucket)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (hashlib.sha256(f"{key}\0{upload_id}".encode()).hexdigest()[:24] + ".json")
    tmp = path.with_suffix(".tmp")
    tmp.write_text(
        json.dumps(
            {
                "endpoint": endpoint,
                "bucket": bucket,
                "key": key,
                "upload_id": upload_id,
                "pid": os.getpid(),
                "started": time.time() if started is None else started,
            }
        )
    )
    os.replace(tmp, path)
    return path


def forget(path: Path) -> None:
    """The upload was completed or aborted: nothing is left to clean."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # an entry of this very process is from an earlier, finished call
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def entries(bucket: str) -> list[Entry]:
    """The journal's uploads in this bucket whose stage process has ended."""
    out = []
    folder = _folder(bucket)
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            d = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if d.get("bucket") == bucket and not _alive(int(d.get("pid", 0))):
            entry = Entry(
                str(d.get("endpoint", "")),
                bucket,
                str(d["key"]),
                str(d["upload_id"]),
                int(d["pid"]),
                float(d.get("started", 0)),
                path,
            )
            out.append(entry)
    return out


def list_open(engine: Engine, bucket: str, prefix: str, timeout: float = 60) -> list[tuple[str, str, float]]:
    """(key, upload id, initiated as a Unix time) of every multipart upload open under `prefix`
    (ListMultipartUploads, paged)."""
    from shotbench.store.crt import _xml_items, xml_text

    out: list[tuple[str, str, float]] = []
    key_marker = id_marker = ""
    while True:
        query = "uploads=&prefix=" + quote(prefix, safe=UNRESERVED)
        if key_marker:
            query += "&key-marker=" + quote(key_marker, safe=UNRESERVED)
            query += "&upload-id-marker=" + quote(id_marker, safe=UNRESERVED)
        reply = engine.call("GET", bucket, operation="ListMultipartUploads", query=query, timeout=timeout)
        out += [
            (u.get("Key", ""), u.get("UploadId", ""), _unix(u.get("Initiated", "")))
            for u in _xml_items(reply.body, "Upload")
        ]
        if xml_text(reply.body, "IsTruncated") != "true":
            return out
        key_marker = xml_text(reply.body, "NextKeyMarker") or ""
        id_marker = xml_text(reply.body, "NextUploadIdMarker") or ""
        if not key_marker:
            return out


def _unix(text: str) -> float:
    """An S3 timestamp (ISO 8601, UTC) as a Unix time; 0 when the server gave none."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def part_bytes(engine: Engine, bucket: str, key: str, upload_id: str, timeout: float = 60) -> int:
    """The bytes an open upload holds (ListParts): what its abandonment was costing."""
    from shotbench.store.crt import _xml_items

    reply = engine.call(
        "GET",
        bucket,
        key,
        operation="ListParts",
        query="uploadId=" + quote(upload_id, safe=UNRESERVED),
        timeout=timeout,
    )
    return sum(int(p.get("Size") or 0) for p in _xml_items(reply.body, "Part"))


def abort(engine: Engine, bucket: str, key: str, upload_id: str, timeout: float = 60) -> None:
    engine.call(
        "DELETE",
        bucket,
        key,
        operation="AbortMultipartUpload",
        query="uploadId=" + quote(upload_id, safe=UNRESERVED),
        timeout=timeout,
    )


@dataclass(frozen=True)
class Cleaned:
    """What a cleanup aborted: uploads and the bytes of their parts."""

    uploads: int
    bytes: int

    def line(self, where: str) -> str:
        n = self.uploads
        return (
            f"aborted {n} multipart upload{'s' if n != 1 else ''} an interrupted `shotbench stage` left "
            f"under {where} ({self.bytes / 1e6:.1f} MB of parts)"
        )


def clean_abandoned(engine: Engine, bucket: str, prefix: str) -> Cleaned:
    """Abort this journal's abandoned uploads under `prefix`; forget those the server no longer has.

    An entry with an upload id matches that upload only. An entry awscrt opened (no id) matches
    the open uploads of its key initiated since the entry was written (S3 gives whole seconds):
    uploads of that key another client opened before are left alone. An entry outside `prefix`
    waits for a stage to its own prefix."""
    from shotbench.store.crt import S3Failure

    mine = [e for e in entries(bucket) if e.key.startswith(prefix)]
    if not mine:
        return Cleaned(0, 0)
    open_now = list_open(engine, bucket, prefix)
    uploads = nbytes = 0
    for e in mine:
        for key, upload_id, initiated in open_now:
            ours = upload_id == e.upload_id if e.upload_id else initiated >= int(e.started)
            if key != e.key or not ours:
                continue
            with contextlib.suppress(S3Failure):
                nbytes += part_bytes(engine, bucket, key, upload_id)
            abort(engine, bucket, key, upload_id)
            uploads += 1
        forget(e.path)  # aborted, or completed, aborted or expired since: nothing is left to do
    return Cleaned(uploads, nbytes)
