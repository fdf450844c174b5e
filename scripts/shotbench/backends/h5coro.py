"""h5coro: SlideRule's pure-Python HDF5 reader made for S3 (cached, coalesced range reads).

Its S3 driver makes a boto3 client from a session; boto3 takes the endpoint from
AWS_ENDPOINT_URL_S3, which the worker processes are started with. h5coro reads superblock
versions 0 and 2 only and cannot decode object references, so the DIMENSION_LIST of a
signal (its dimension scales) is out of its reach: both come back as `unsupported` cells.
With `scales = "skip"` it reads each signal's own data and leaves its scales unread (the
`readers` profile does so, so h5coro is timed on the `compat` files; it then moves fewer
bytes than the readers that also read the scales, which `reads_scales` tells the report).
"""

from __future__ import annotations

from typing import Any

from shotbench.backends.readers import Handle, ReadersBackend, signal_path
from shotbench.backends.unsupported import Unsupported, translate


class H5coroBackend(ReadersBackend):
    name = "h5coro"
    reader = "h5coro"
    description = "h5coro (pure Python, S3 driver) with its cache-line size (cache_line)"
    defaults = {"cache_line": 0, "scales": "read"}  # 0 = h5coro's default cache line; scales: read | skip

    def reads_scales(self) -> bool:
        return str(self.options.get("scales", "read")) != "skip"

    def setup(self, s3: Any) -> None:
        import functools

        import boto3
        from h5coro import h5coro, s3driver  # noqa: F401 - imported in setup, before any clock starts, so a missing library fails here

        self.s3 = s3
        self.credentials = (
            {
                "aws_access_key_id": s3.access_key,
                "aws_secret_access_key": s3.secret_key,
                "aws_session_token": s3.session_token,
            }
            if s3.access_key
            else {"annon": True}
        )
        # One boto3 session per process, as a long-lived application keeps: h5coro would
        # otherwise build a session (and load botocore's models) on every file it opens.
        session = boto3.Session(
            aws_access_key_id=s3.access_key,
            aws_secret_access_key=s3.secret_key,
            aws_session_token=s3.session_token,
            region_name=s3.region,
        )
        if not s3.access_key:
            from botocore.handlers import disable_signing

            session.events.register("choose-signer.s3.*", disable_signing)
        self.driver = functools.partial(s3driver.S3Driver, session=session)

    def open(self, key: str, size: int) -> Any:
        from h5coro import h5coro

        kw: dict[str, Any] = {"errorChecking": True}
        if int(self.options["cache_line"]):
            kw["cacheLineSize"] = int(self.options["cache_line"])
        try:
            h5 = h5coro.H5Coro(f"{self.source.bucket}/{key}", self.driver, self.credentials, **kw)
            return Handle(h5, h5.close)
        except Exception as exc:
            raise translate(self.reader, exc) from exc

    def arrays(self, fh: Any, shot: str, name: str, scales: bool = True) -> list[Any]:
        import numpy as np

        path = "/" + signal_path(shot, name)
        promise = fh.obj.readDatasets([path], block=True, enableAttributes=False)
        out = [np.asarray(promise[path])]
        if not scales or not self.reads_scales():
            return out
        # attributes of the signal: a dimension scale is attached when DIMENSION_LIST exists
        _, attrs, _ = fh.obj.inspectPath(path, w_attr=True)
        if "DIMENSION_LIST" in attrs:
            raise Unsupported(
                "h5coro: dimension scales (DIMENSION_LIST holds object references, a datatype h5coro does not decode)"
            )
        return out
