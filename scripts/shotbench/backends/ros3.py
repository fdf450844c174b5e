"""h5py with the HDF5 ROS3 driver, one class per libhdf5 build (each in its own environment).

Opening goes through `shotbench.hdf5.ros3open.open_ros3`, which knows the URL and endpoint rules of
each libhdf5 generation (1.14 libcurl vs 2.x aws-c-s3).
"""

from __future__ import annotations

from typing import Any

from shotbench.backends.base import Backend


class Ros3Backend(Backend):
    """`credentials`: "explicit" puts the keys in the FAPL (what 1.14 needs); "chain" leaves them
    out, so 2.x's aws-c-auth finds them itself in the environment (1.14 has no chain of its own:
    there, the keys are looked up here and passed explicitly either way)."""

    description = "h5py + libhdf5 ROS3 driver"
    defaults = {"credentials": "explicit"}
    choices = {"credentials": ("explicit", "chain")}

    @classmethod
    def signs_with(cls, options: dict[str, Any]) -> str:
        """1.14 has no chain: it is given the keys either way."""
        return "chain" if options.get("credentials") == "chain" and cls.env != "hdf5-1.14" else "given"

    @classmethod
    def process_env(cls, s3: Any) -> dict[str, str]:
        from shotbench.hdf5.ros3open import ros3_env

        return dict(ros3_env(s3))

    def make_meter(self, s3: Any) -> Any:
        from shotbench.backends import meters as accounting

        if self.env == "hdf5-1.14":
            return accounting.SocketMeter(s3.endpoint_url)
        return accounting.ros3_debug_meter()

    def setup(self, s3: Any) -> None:
        super().setup(s3)
        from shotbench.hdf5 import ros3open as ros3

        self._ros3 = ros3
        self._fapls: dict[int, Any] = {}

    def open(self, key: str, size: int) -> Any:
        """Open through a FAPL built here, kept so the block cache can be read back from it."""
        from shotbench.hdf5.effective import BC_DEFAULT

        ros3, s = self._ros3, self.settings
        block_cache = (BC_DEFAULT if s.block_cache is None else s.block_cache) if self.has_block_cache else None
        fapl = ros3.build_fapl(
            self.s3,
            ros3.hdf5_major(),
            int(s.page_buf_size),
            int(s.chunk_cache),
            block_cache,
            self.options.get("block_size"),
            chain=self.options.get("credentials") == "chain",
        )
        fh = ros3.open_ros3(self.s3, self.source.bucket, key, page_buf_size=int(s.page_buf_size), fapl=fapl)
        self._fapls = {id(fh): fapl}  # one open file per task part at a time
        return fh

    def retries(self) -> int | None:
        """2.x: requests aws-c-s3 sent again, from its ERROR-level log (see
        `shotbench.backends.meters.aws_retry_delta`).

        1.14: unknown, hence empty rather than 0. Its driver has no retry loop (one
        `curl_easy_perform` per request, a failure fails the read), but libcurl itself sends a
        request again on a fresh connection when a reused one died before any byte came back
        ("Connection died, retrying a fresh connect", up to 5 times), and 1.14 has no runtime
        log that would say so."""
        retries = getattr(self.meter, "retries", None)
        return retries() if callable(retries) else None

    def read_back(self, fh: Any) -> tuple[dict[str, Any], Any]:
        from shotbench.hdf5.effective import read_settings, read_stats

        return read_settings(fh, self._fapls.get(id(fh)) if self.has_block_cache else None), read_stats(fh)


class Ros3_114(Ros3Backend):
    name = "ros3-1.14"
    env = "hdf5-1.14"


class Ros3_20(Ros3Backend):
    name = "ros3-2.0"
    env = "hdf5-2.0"


class Ros3_20ZlibNg(Ros3Backend):
    """2.0.0 as `ros3-2.0`, with deflate by zlib-ng: the upstream study's 2.0 arm was built so."""

    name = "ros3-2.0-zlibng"
    env = "hdf5-2.0-zlibng"


class Ros3_22(Ros3Backend):
    name = "ros3-2.2"
    env = "hdf5-2.2"
    has_block_cache = True


class Ros3Wheel(Ros3Backend):
    """The `h5py-s3` wheel from the package index: HDF5 2.1.1, ROS3 on aws-c-s3 + s2n, no compile."""

    name = "ros3-wheel"
    env = "h5py-s3"
    description = "h5py-s3 wheel (HDF5 2.1.1) + ROS3 driver, installed from the index"
