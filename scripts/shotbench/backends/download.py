"""Sync then read: GET each whole object with obstore, then h5py reads the local copy.

The object is written to disk as it arrives (`write = "stream"`, chunks of at least
STREAM_CHUNK), the way `aws s3 cp` and s5cmd write, rather than held whole in memory and written
at the end (`write = "whole"`, the form this backend had until 2026-11-26).

A worker keeps its downloaded copies until its task ends, so a file is fetched once per
task even when the task reads many of its signals (what a user who syncs first gets). The
folder of copies is removed with the backend, or when the worker process exits.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from typing import Any

from shotbench.backends.base import Backend
from shotbench.backends.obstore import get_object, make_store, stream_object_to


class DownloadBackend(Backend):
    name = "download"
    description = "whole-object GET to local disk (or memory), then h5py reads it"
    defaults = {"target": "disk", "write": "stream"}
    choices = {"target": ("disk", "memory"), "write": ("stream", "whole")}

    def setup(self, s3: Any) -> None:
        super().setup(s3)
        import obstore  # noqa: F401 - imported in setup, before any clock starts, so a missing library fails here

        self.store = make_store(s3, self.source.bucket)
        self._copies: dict[str, Any] = {}
        self._tmp = tempfile.mkdtemp(prefix="shotbench-dl-")
        # the copies' folder goes with the backend, or with the worker process at its exit
        self._remove_tmp = weakref.finalize(self, shutil.rmtree, self._tmp, ignore_errors=True)

    def _download(self, key: str, size: int) -> Any:
        if self.options["target"] == "memory":
            import io

            return io.BytesIO(memoryview(get_object(self.store, key, self.meter)))
        free = shutil.disk_usage(self._tmp).free
        if size > free:
            raise OSError(f"no room for a {size}-byte copy in {self._tmp} ({free} bytes free)")
        path = os.path.join(self._tmp, key.replace("/", "_"))
        if self.options["write"] == "whole":
            with open(path, "wb") as fh:
                got = fh.write(memoryview(get_object(self.store, key, self.meter)))
        else:
            got = stream_object_to(self.store, key, path, self.meter)
        if got != size:
            raise OSError(f"{key}: {got} bytes arrived where the object has {size}")
        return path

    def open(self, key: str, size: int) -> Any:
        target = self._copies.get(key)
        if target is None:
            target = self._copies[key] = self._download(key, size)
        if hasattr(target, "seek"):
            target.seek(0)
        return self.h5file(target)

    def end_task(self) -> None:
        self._copies.clear()
        shutil.rmtree(self._tmp, ignore_errors=True)
        os.makedirs(self._tmp, exist_ok=True)
