"""remfile: an HTTP file object with adaptive read-ahead, under h5py, over presigned URLs.

remfile speaks plain HTTP range requests, so each open gets a presigned GET URL from boto3
(valid for an hour, made in the worker before the file is opened). The URL carries a
signature, never the secret; error cells drop its query string all the same.
"""

from __future__ import annotations

import re
from typing import Any

from shotbench.backends.readers import ReadersBackend

_QUERY = re.compile(r"\?[^\s'\"]*")


class RemfileBackend(ReadersBackend):
    name = "remfile"
    reader = "remfile"
    description = "h5py over a remfile HTTP file object on a presigned URL"
    defaults = {"expires": 3600}

    def setup(self, s3: Any) -> None:
        super().setup(s3)
        self.meter = None  # remfile's own HTTP requests offer no hook: client columns stay empty
        import remfile  # noqa: F401 - imported in setup, before any clock starts, so a missing library fails here

        from shotbench.store.s3 import S3Config

        cfg = (
            s3
            if isinstance(s3, S3Config)
            else S3Config(
                endpoint_url=s3.endpoint_url,
                region=s3.region,
                access_key=s3.access_key,
                secret_key=s3.secret_key,
                session_token=s3.session_token,
            )
        )
        self.client = cfg.boto3_client()

    def url(self, key: str) -> str:
        return self.client.generate_presigned_url(
            "get_object", Params={"Bucket": self.source.bucket, "Key": key}, ExpiresIn=int(self.options["expires"])
        )

    def open(self, key: str, size: int) -> Any:
        import remfile

        try:
            return self.h5file(remfile.File(self.url(key)))
        except Exception as exc:  # noqa: BLE001 - no signed URL in an error cell
            raise type(exc)(_QUERY.sub("?…", str(exc))) from None

    def read_signal(self, fh: Any, shot: str, name: str) -> tuple[int, int]:
        from shotbench.hdf5.shotfile import read_signal

        try:
            return read_signal(fh, shot, name)
        except Exception as exc:  # noqa: BLE001 - re-raised without the URL's query (a presigned signature)
            raise RuntimeError(_QUERY.sub("?…", f"{type(exc).__name__}: {exc}")) from None

    def read_signal_crc(self, fh: Any, shot: str, name: str) -> tuple[int, int, int]:
        from shotbench.hdf5.shotfile import read_signal_crc

        try:
            return read_signal_crc(fh, shot, name)
        except Exception as exc:  # noqa: BLE001 - re-raised without the URL's query (a presigned signature)
            raise RuntimeError(_QUERY.sub("?…", f"{type(exc).__name__}: {exc}")) from None
