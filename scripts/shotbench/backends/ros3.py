"""h5py with the HDF5 ROS3 driver, one class per libhdf5 build (each in its own environment).

Opening goes through `shotbench.ros3.open_ros3`, which knows the URL and endpoint rules of
each libhdf5 generation (1.14 libcurl vs 2.x aws-c-s3).
"""

from __future__ import annotations

from typing import Any

from shotbench.backends.base import Backend


class Ros3Backend(Backend):
    description = "h5py + libhdf5 ROS3 driver"

    @classmethod
    def process_env(cls, s3: Any) -> dict[str, str]:
        try:
            from shotbench.ros3 import ros3_env
        except ImportError:
            return {}
        return dict(ros3_env(s3))

    def make_meter(self, s3: Any) -> Any:
        from shotbench import accounting

        if self.env == "hdf5-1.14":
            return accounting.SocketMeter(s3.endpoint_url)
        return accounting.ros3_debug_meter()

    def setup(self, s3: Any) -> None:
        super().setup(s3)
        from shotbench.ros3 import open_ros3

        self._open = open_ros3

    def open(self, key: str, size: int) -> Any:
        return self._open(
            self.s3,
            self.source.bucket,
            key,
            page_buf_size=int(self.settings.page_buf_size),
            rdcc_nbytes=int(self.settings.chunk_cache),
        )


class Ros3_114(Ros3Backend):
    name = "ros3-1.14"
    env = "hdf5-1.14"


class Ros3_20(Ros3Backend):
    name = "ros3-2.0"
    env = "hdf5-2.0"


class Ros3_22(Ros3Backend):
    name = "ros3-2.2"
    env = "hdf5-2.2"
