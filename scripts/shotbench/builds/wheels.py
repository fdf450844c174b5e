"""libhdf5 builds that come as a wheel from the package index: no compiler involved.

PyPI's `h5py` wheel bundles libhdf5 without ROS3, but `h5py-s3` bundles HDF5 2.1.1 with ROS3 on
aws-c-s3 (import name `h5py`). It is what users who do not compile install, so it gets an
environment of its own like a build: the project's locked dependencies, the wheel pinned by
version and sha256 (binary only: the index has no sdist, and a source build is refused), and
the same proof as a build (exact libhdf5 version, loaded from inside that environment, ROS3
registered).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WheelSpec:
    """A ROS3-capable h5py wheel from the index, pinned like a build's sources."""

    name: str  # environment name, `.envs/<name>`
    package: str
    version: str
    sha256: tuple[str, ...]  # one per CPython tag on the index; uv checks the one it picks
    hdf5_version: str  # what h5py.version.hdf5_version must report
    description: str = ""

    @property
    def h5py_version(self) -> str:
        return self.version

    def requirement(self) -> str:
        """One requirements-file line: name==version with every pinned hash."""
        hashes = " ".join(f"--hash=sha256:{h}" for h in self.sha256)
        return f"{self.package}=={self.version} {hashes}"

    def fingerprint(self) -> dict[str, object]:
        return {"name": self.name, "package": self.package, "version": self.version, "sha256": list(self.sha256)}


WHEELS: dict[str, WheelSpec] = {
    "h5py-s3": WheelSpec(
        name="h5py-s3",
        package="h5py-s3",
        version="3.16.0",
        sha256=(
            "9373a8ee90672d441428114fbc48a77be5cab35d517b5213bd234d527835a3cf",  # cp311 manylinux_2_34 x86_64
            "157f99cee0429e0342276dbe43d98cfc66c4faf670c23c398e5ebc385e24778e",  # cp312
            "676bb162569f370bbb3884aba7ec11ad88ce711325bc9f4f3055405852093e78",  # cp313
            "5bd6e2dd087c36c2f88ff0ba43da30c834ca3a312fdd8d70366decb2557aa9b6",  # cp314
        ),
        hdf5_version="2.1.1",
        description="HDF5 2.1.1 from the h5py-s3 wheel, ROS3 over aws-c-s3 + s2n (no compile)",
    ),
}
