"""What each libhdf5 + h5py build is made of: pinned sources and CMake options.

Every source is fetched from a package registry and checked against a sha256 pinned here,
so a build is reproducible and its cache key changes exactly when its inputs do.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from shotbench.errors import UserError
from shotbench.units import MiB

CMAKE_PYPI = "cmake==3.31.6"
"""HDF5 2.x needs CMake >= 3.26; Debian 12 ships 3.25, PyPI's `cmake` has a newer one."""


@dataclass(frozen=True)
class Source:
    """One archive: where it comes from, its sha256, and the folder inside it to build."""

    url: str
    sha256: str | None
    filename: str
    subdir: str = ""

    @property
    def local(self) -> Path | None:
        """A source given as a local tarball or folder instead of a URL."""
        if self.url.startswith(("http://", "https://")):
            return None
        return Path(self.url)


@dataclass(frozen=True)
class BuildSpec:
    """A libhdf5 build with ROS3 and the h5py compiled against it."""

    name: str
    hdf5_version: str | None  # what h5py.version.hdf5_version must report; None = read from source
    hdf5: Source
    h5py: Source
    ros3_backend: str  # "curl" (1.14) or "aws" (aws-c-s3, 2.x)
    cmake_options: tuple[str, ...]
    description: str = ""
    custom: bool = False
    extra: dict[str, str] = field(default_factory=dict)
    zlib_ng: bool = False  # deflate by zlib-ng (built by HDF5's CMake from ZLIB_NG), not the system zlib

    @property
    def h5py_version(self) -> str:
        return _version_from_filename(self.h5py.filename)

    def fingerprint(self) -> dict[str, object]:
        """Everything about the spec that changes the built artefacts."""
        return {
            "name": self.name,
            "hdf5": self.hdf5.sha256 or self.hdf5.url,
            "hdf5_subdir": self.hdf5.subdir,
            "h5py": self.h5py.sha256,
            "backend": self.ros3_backend,
            "aws": AWS_CRT.sha256 if self.ros3_backend == "aws" else None,
            "cmake_options": list(self.cmake_options),
            "cmake": CMAKE_PYPI,
            **({"zlib_ng": ZLIB_NG.sha256} if self.zlib_ng else {}),  # absent otherwise: old keys hold
        }


def _version_from_filename(filename: str) -> str:
    match = re.search(r"-(\d+(?:\.\d+)+)\.tar\.gz$", filename)
    return match.group(1) if match else "unknown"


def _crate(version: str, sha256: str) -> Source:
    # crates.io's download API redirects to this static address; the file is a .tar.gz.
    return Source(
        url=f"https://static.crates.io/crates/hdf5-metno-src/hdf5-metno-src-{version}.crate",
        sha256=sha256,
        filename=f"hdf5-metno-src-{version}.tar.gz",
        subdir=f"hdf5-metno-src-{version}/ext/hdf5",
    )


def _pypi_sdist(path: str, sha256: str, subdir: str = "") -> Source:
    filename = path.rsplit("/", 1)[1]
    return Source(
        url=f"https://files.pythonhosted.org/packages/{path}",
        sha256=sha256,
        filename=filename,
        subdir=subdir,
    )


H5PY_3_15_1 = _pypi_sdist(
    "4d/6a/0d79de0b025aa85dc8864de8e97659c94cf3d23148394a954dc5ca52f8c8/h5py-3.15.1.tar.gz",
    "c86e3ed45c4473564de55aa83b6fc9e5ead86578773dfbd93047380042e26b69",
)
H5PY_3_16_0 = _pypi_sdist(
    "db/33/acd0ce6863b6c0d7735007df01815403f5589a21ff8c2e1ee2587a38f548/h5py-3.16.0.tar.gz",
    "a0dbaad796840ccaa67a4c144a0d0c8080073c34c76d5a6941d6818678ef2738",
)
AWS_CRT = _pypi_sdist(
    "0c/c4/1f7c4161aa665b06ddb9c34acbe6b5ea8fc8bf72b78de474d65e6f494ca4/awscrt-0.38.0.tar.gz",
    "4a8423c4a76390c6e5c4f386e3e367dccdcf67d6d1a0bc1c59776bb14cdc2ad9",
    subdir="awscrt-0.38.0/crt",
)
"""aws-c-s3 and its siblings; the sdist's crt/ folder builds them all as one CMake project."""

ZLIB_NG_VERSION = "2.2.4"
ZLIB_NG = Source(
    url="https://static.crates.io/crates/libz-ng-sys/libz-ng-sys-1.1.22.crate",
    sha256="a7118c2c2a3c7b6edc279a8b19507672b9c4d716f95e671172dfa4e23f9fd824",
    filename="libz-ng-sys-1.1.22.tar.gz",
    subdir="libz-ng-sys-1.1.22/src/zlib-ng",
)
"""zlib-ng 2.2.4, the release HDF5 2.0's CMake names, as the libz-ng-sys crate ships its sources."""
# HDF5 builds zlib-ng itself from a local tarball (its own CMakeLists for it, linked in statically):
# its search for an installed zlib-ng expects targets that zlib-ng's own CMake package does not make.
ZLIB_NG_OPTIONS: tuple[str, ...] = (
    "-DHDF5_USE_ZLIB_NG=ON",
    "-DHDF5_ALLOW_EXTERNAL_SUPPORT=TGZ",
    "-DZLIB_USE_LOCALCONTENT=ON",
    f"-DZLIBNG_TGZ_NAME=zlib-ng-{ZLIB_NG_VERSION}.tar.gz",
)

AWS_CMAKE_OPTIONS: tuple[str, ...] = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DUSE_OPENSSL=ON",  # system libcrypto: skips building aws-lc
    "-DBUILD_TESTING=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DCMAKE_POSITION_INDEPENDENT_CODE=ON",
)

_COMMON = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=ON",
    "-DBUILD_STATIC_LIBS=OFF",
    "-DBUILD_TESTING=OFF",
    "-DHDF5_BUILD_HL_LIB=ON",  # h5py links hdf5_hl
    "-DHDF5_ENABLE_ROS3_VFD=ON",
    "-DHDF5_BUILD_TOOLS=OFF",
    "-DHDF5_BUILD_EXAMPLES=OFF",
    "-DHDF5_BUILD_FORTRAN=OFF",
    "-DHDF5_BUILD_CPP_LIB=OFF",
    "-DHDF5_BUILD_JAVA=OFF",
    "-DHDF5_BUILD_DOC=OFF",
    "-DHDF5_ENABLE_SZIP_SUPPORT=OFF",
)
HDF5_1_OPTIONS = _COMMON + ("-DONLY_SHARED_LIBS=ON", "-DHDF5_ENABLE_Z_LIB_SUPPORT=ON")
# 2.x renamed the options, and turned zlib off by default.
HDF5_2_OPTIONS = _COMMON + ("-DHDF5_ONLY_SHARED_LIBS=ON", "-DHDF5_ENABLE_ZLIB_SUPPORT=ON")

_HDF5_2_0 = BuildSpec(
    name="hdf5-2.0",
    hdf5_version="2.0.0",
    hdf5=_crate("0.10.1", "5284a978be0edc848d21e7e3e903dbb0cab29267f63784f27997ed0628cd8289"),
    h5py=H5PY_3_16_0,
    ros3_backend="aws",
    cmake_options=HDF5_2_OPTIONS,
    description="HDF5 2.0.0, ROS3 over aws-c-s3",
)

BUILDS: dict[str, BuildSpec] = {
    "hdf5-1.14": BuildSpec(
        name="hdf5-1.14",
        hdf5_version="1.14.6",
        # 0.9.5 bundles 1.14.6 (the upstream study's old arm); 0.9.2 bundled 1.14.4.
        hdf5=_crate("0.9.5", "36b0303729f84fb0f2dc510d28b64cb716fb13e6a139a17e88db329123ecff82"),
        h5py=H5PY_3_15_1,
        ros3_backend="curl",
        cmake_options=HDF5_1_OPTIONS,
        description="HDF5 1.14.6, ROS3 over libcurl + OpenSSL",
    ),
    "hdf5-2.0": _HDF5_2_0,
    "hdf5-2.0-zlibng": replace(
        _HDF5_2_0,
        name="hdf5-2.0-zlibng",
        cmake_options=HDF5_2_OPTIONS + ZLIB_NG_OPTIONS,
        description="HDF5 2.0.0, ROS3 over aws-c-s3, deflate by zlib-ng 2.2.4 (like the upstream study's 2.0 arm)",
        zlib_ng=True,
    ),
    "hdf5-2.2": BuildSpec(
        name="hdf5-2.2",
        hdf5_version="2.2.0",
        hdf5=_crate("0.10.4", "69c883c565498492954e344c482f8622525e58c7a71100dd9498c4940da82885"),
        h5py=H5PY_3_16_0,
        ros3_backend="aws",
        cmake_options=HDF5_2_OPTIONS,
        description="HDF5 2.2.0, ROS3 over aws-c-s3 with the block cache",
    ),
}

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")


def custom_spec(name: str, source: str, sha256: str | None = None) -> BuildSpec:
    """A build of an official release from a tarball URL, a local tarball or a source folder.

    The HDF5 major version (and so the CMake options, the ROS3 backend and the h5py
    release) is read from the unpacked source at build time; see `specialise`.
    """
    if not _NAME_RE.match(name):
        raise UserError(f"build name {name!r} is not usable as a folder name; use letters, digits, '.', '-' or '_'.")
    if name in BUILDS:
        raise UserError(f"{name!r} is a built-in build; pick another --name for a custom source.")
    is_url = source.startswith(("http://", "https://"))
    if not is_url:
        path = Path(source).expanduser().resolve()
        if not path.exists():
            raise UserError(
                f"source {source} does not exist; give a release tarball URL, a tarball or an HDF5 source folder."
            )
        source = str(path)
        if path.is_dir() and sha256 is not None:
            raise UserError(
                f"--sha256 checks a tarball, and {source} is a source folder; drop --sha256 or give the tarball."
            )
        if path.is_file() and sha256 is None:
            sha256 = file_sha256(path)  # given, it is checked when the build reads the file (`build.fetch`)
    filename = source.rstrip("/").rsplit("/", 1)[-1]
    return BuildSpec(
        name=name,
        hdf5_version=None,
        hdf5=Source(url=source, sha256=sha256, filename=filename),
        h5py=H5PY_3_16_0,
        ros3_backend="unknown",
        cmake_options=(),
        description=f"HDF5 from {filename}",
        custom=True,
    )


def specialise(spec: BuildSpec, version: str) -> BuildSpec:
    """Fill in what a custom build learns from its source: options, backend, h5py release."""
    major = int(version.split(".")[0])
    if major >= 2:
        return replace(spec, hdf5_version=version, ros3_backend="aws", cmake_options=HDF5_2_OPTIONS, h5py=H5PY_3_16_0)
    return replace(spec, hdf5_version=version, ros3_backend="curl", cmake_options=HDF5_1_OPTIONS, h5py=H5PY_3_15_1)


def read_source_version(src: Path, named: str | None = None) -> str:
    """`major.minor.release` from src/H5public.h: what H5get_libversion (and h5py) report.
    `named`: the source as the user gave it, for a tree unpacked where a failed build removes it."""
    header = src / "src" / "H5public.h"
    where = f"{named}'s src/H5public.h" if named else str(header)
    if not header.is_file():
        raise UserError(
            f"{named or src} has no src/H5public.h; point --source at an HDF5 release tarball or its top folder."
        )
    text = header.read_text(errors="replace")
    parts = []
    for part in ("MAJOR", "MINOR", "RELEASE"):
        match = re.search(rf"#define H5_VERS_{part}\s+(\d+)", text)
        if not match:
            raise UserError(f"cannot read the HDF5 version from {where}; is this an HDF5 source tree?")
        parts.append(match.group(1))
    return ".".join(parts)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(MiB), b""):
            digest.update(block)
    return digest.hexdigest()
