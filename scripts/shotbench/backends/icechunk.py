"""Icechunk 2.x with virtual chunks: a repository on the same S3 server whose manifests point into
the original HDF5 files, read through an authorised virtual chunk container, without libhdf5.

One repository per file, `<prefix>_icechunk/<run tag>/<key>/` in the files' bucket, built untimed
before the cases (`shotbench.backends.chunkindex`): VirtualiZarr's `HDFParser` reads the metadata
over a counted obstore file object, each array is created in the repository with the parsed zarr
metadata and its chunks are set as virtual references (`s3://<bucket>/<key>` + offset + length);
compact datasets, which have no byte range, are written as native chunks (Icechunk keeps such small
chunks inline in its manifests). One commit per file. The one-time cost counts the parse's GETs and
the bytes the repository holds on S3. A read opens the repository's `main` branch read-only, with
the virtual chunk container `s3://<bucket>/` authorised with the worker's own credentials.

Icechunk 2.x needs Python >= 3.12: it runs in `.envs/icechunk`, made with such an interpreter.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from shotbench.backends import chunkindex
from shotbench.backends.readers import Handle, ReadersBackend, signal_path
from shotbench.backends.unsupported import translate

ENV = "icechunk"
MIN_PYTHON = "3.12"


class IcechunkVirtualBackend(ReadersBackend):
    name = "icechunk-virtual"
    reader = "icechunk"
    env: ClassVar[str | None] = ENV
    builds_index: ClassVar[bool] = True
    description = "Icechunk repository of virtual chunks into the HDF5 files (built untimed), read by zarr"
    defaults = {"index_dir": ""}

    @classmethod
    def python(cls) -> Path:
        from shotbench.backends import readers_env

        return readers_env.ensure(ENV, ENV, MIN_PYTHON)

    @classmethod
    def process_env(cls, s3: Any) -> dict[str, str]:
        """Icechunk's Rust clients trust the system roots: a private CA is given as SSL_CERT_FILE."""
        ca = getattr(s3, "ca_bundle", None)
        return {"SSL_CERT_FILE": str(ca)} if ca else {}

    def setup(self, s3: Any) -> None:
        import icechunk  # noqa: F401 - imported in setup, before any clock starts, so a missing library fails here
        import virtualizarr  # noqa: F401 - imported in setup, before any clock starts, so a missing library fails here
        import zarr  # noqa: F401 - imported in setup, before any clock starts, so a missing library fails here
        from obspec_utils.registry import ObjectStoreRegistry

        from shotbench.backends.obstore import make_store

        self.s3 = s3
        self.store = make_store(s3, self.source.bucket)
        self.registry = ObjectStoreRegistry({f"s3://{self.source.bucket}": self.store})
        self.meter = None  # Icechunk's own Rust client fetches the chunks: not countable here
        self.folder = chunkindex.IndexFolder(str(self.options["index_dir"]), self.name)
        tag = hashlib.sha256(str(self.folder.dir.resolve()).encode()).hexdigest()[:12]
        self.repo_root = f"{self.source.prefix.strip('/')}_icechunk/{tag}".lstrip("/")

    # --- the repository ----------------------------------------------------------------
    def container(self) -> str:
        return f"s3://{self.source.bucket}/"

    def repo_prefix(self, key: str) -> str:
        return f"{self.repo_root}/{chunkindex.index_name(key)}"

    def _storage(self, key: str) -> Any:
        import icechunk

        s3 = self.s3
        endpoint = s3.endpoint_url or None
        return icechunk.s3_storage(
            bucket=self.source.bucket,
            prefix=self.repo_prefix(key),
            region=s3.region,
            endpoint_url=endpoint,
            allow_http=bool(endpoint and urlsplit(endpoint).scheme == "http"),
            access_key_id=s3.access_key,
            secret_access_key=s3.secret_key,
            session_token=s3.session_token,
            anonymous=None if s3.access_key else True,
            force_path_style=bool(endpoint),
        )

    def _config(self) -> Any:
        import icechunk

        s3 = self.s3
        endpoint = s3.endpoint_url or None
        store = icechunk.s3_store(
            region=s3.region,
            endpoint_url=endpoint,
            allow_http=bool(endpoint and urlsplit(endpoint).scheme == "http"),
            s3_compatible=bool(endpoint),
            force_path_style=bool(endpoint),
        )
        config = icechunk.RepositoryConfig.default()
        config.set_virtual_chunk_container(icechunk.VirtualChunkContainer(self.container(), store))
        return config

    def _credentials(self) -> Any:
        import icechunk

        s3 = self.s3
        creds = (
            icechunk.s3_credentials(
                access_key_id=s3.access_key, secret_access_key=s3.secret_key, session_token=s3.session_token
            )
            if s3.access_key
            else icechunk.s3_credentials(anonymous=True)
        )
        return icechunk.containers_credentials({self.container(): creds})

    def build_index(self, key: str, size: int) -> None:
        """Parse `key`, write its virtual repository and commit, unless already built."""
        if self.folder.built(key):
            return
        import icechunk
        import obstore
        import zarr
        from virtualizarr.writers.icechunk import extract_codecs, write_manifest_to_icechunk

        try:
            parsed = chunkindex.parse_plain(
                "icechunk", self.store, self.registry, f"s3://{self.source.bucket}/{key}", key, size
            )
            sv = parsed.survey
            repo = icechunk.Repository.create(
                self._storage(key), self._config(), authorize_virtual_chunk_access=self._credentials()
            )
            session = repo.writable_session("main")
            root = zarr.open_group(session.store, mode="w", zarr_format=3)

            def write(mgroup: Any, zgroup: Any, prefix: str) -> None:
                for name, arr in mgroup.arrays.items():
                    md = arr.metadata
                    filters, serializer, compressors = extract_codecs(md.inner_codecs)
                    zarr_arr = zgroup.create_array(
                        name=name,
                        shape=md.shape,
                        chunks=md.chunks,
                        dtype=md.data_type.to_native_dtype(),
                        filters=filters,
                        compressors=compressors,
                        serializer=serializer,
                        fill_value=md.fill_value,
                    )
                    path = f"{prefix}/{name}"
                    if path in sv.inline:
                        zarr_arr[...] = sv.inline[path]  # native chunks: a compact dataset has no byte range
                    else:
                        write_manifest_to_icechunk(
                            session.store, zgroup, name, arr.manifest, tuple(0 for _ in md.shape)
                        )
                for name, sub in mgroup.groups.items():
                    write(sub, zgroup.create_group(name), f"{prefix}/{name}")

            write(parsed.manifest._group, root, "")
            session.commit(f"virtual references into s3://{self.source.bucket}/{key}")
            stored = sum(
                int(m["size"]) for batch in obstore.list(self.store, self.repo_prefix(key) + "/") for m in batch
            )
        except Exception as exc:
            raise translate(self.reader, exc) from exc
        stored += self.folder.write_survey(key, parsed.survey)
        counts = parsed.meter.drain()
        self.folder.write_meta(key, parsed.watch.seconds(), stored, counts.gets, counts.bytes)

    def index_stats(self, key: str) -> tuple[float, int] | None:
        return self.folder.stats(key)

    # --- reading -----------------------------------------------------------------------
    def open(self, key: str, size: int) -> Any:
        import icechunk
        import zarr

        if not self.folder.built(key):
            self.build_index(key, size)  # only when the untimed pass could not (its error is here)
        datasets, _ = self.folder.read_survey(key)
        repo = icechunk.Repository.open(
            self._storage(key), self._config(), authorize_virtual_chunk_access=self._credentials()
        )
        session = repo.readonly_session(branch="main")
        return Handle((zarr.open_group(session.store, mode="r", zarr_format=3), datasets))

    def arrays(self, fh: Any, shot: str, name: str, scales: bool = True) -> list[Any]:
        root, datasets = fh.obj

        def read(path: str) -> Any:
            return root[path.lstrip("/")][...]

        return chunkindex.with_scales(read, datasets, {}, "/" + signal_path(shot, name), scales)
