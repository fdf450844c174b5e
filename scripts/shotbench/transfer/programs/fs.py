"""s3fs and obstore, each through its blocking and its asyncio API (sync vs async).

Both run at their own defaults (timeouts, retries, caches), as their users run them.
"""

from __future__ import annotations

import asyncio
import gc

from shotbench.store.clients import obstore_store, s3fs_filesystem
from shotbench.store.s3 import S3Config
from shotbench.transfer.cases import FileSpec
from shotbench.transfer.programs.tool import _READ, Outcome, Tool, _timed_gather, _timed_pool


class S3fsSync(Tool):
    """s3fs's blocking API: `fs.put(list, list, batch_size=N)` / `fs.get(...)`."""

    name = "s3fs"
    family = "s3fs"
    describe = {"upload": "fs.put([files], [keys], batch_size=N)", "download": "fs.get([keys], [files], batch_size=N)"}

    requires = ("s3fs",)

    @staticmethod
    def _with_fs(cfg: S3Config, work) -> Outcome:
        fs = s3fs_filesystem(cfg, asynchronous=False)
        try:
            work(fs)
        finally:
            # close now, from this thread: a finalizer run later inside another event loop
            # (s3fs-async's) would close the client on the wrong loop
            del fs
            gc.collect()
        return Outcome()

    def upload(self, files, src, target, cfg, concurrency):
        return self._with_fs(
            cfg,
            lambda fs: fs.put(
                [str(f.path) for f in files],
                [f"{target.bucket}/{target.key(f.name)}" for f in files],
                batch_size=concurrency,
            ),
        )

    def download(self, files, target, dest, cfg, concurrency):
        return self._with_fs(
            cfg,
            lambda fs: fs.get(
                [f"{target.bucket}/{target.key(f.name)}" for f in files],
                [str(dest / f.name) for f in files],
                batch_size=concurrency,
            ),
        )


class S3fsAsync(Tool):
    """s3fs's coroutine API from the caller's own event loop: `await fs._put_file` per file,
    N in flight."""

    name = "s3fs-async"
    family = "s3fs"
    mode = "async"
    describe = {
        "upload": "asyncio: await fs._put_file(f, key), N in flight",
        "download": "asyncio: await fs._get_file(key, f), N in flight",
    }

    requires = ("s3fs",)

    @staticmethod
    def _go(cfg: S3Config, work) -> Outcome:
        async def main():
            fs = s3fs_filesystem(cfg, asynchronous=True, loop=asyncio.get_running_loop())
            client = await fs.set_session()
            try:
                return await work(fs)
            finally:
                await client.close()  # s3fs's documented async teardown

        return Outcome(asyncio.run(main()))

    def upload(self, files, src, target, cfg, concurrency):
        return self._go(
            cfg,
            lambda fs: _timed_gather(
                files, lambda f: fs._put_file(str(f.path), f"{target.bucket}/{target.key(f.name)}"), concurrency
            ),
        )

    def download(self, files, target, dest, cfg, concurrency):
        return self._go(
            cfg,
            lambda fs: _timed_gather(
                files, lambda f: fs._get_file(f"{target.bucket}/{target.key(f.name)}", str(dest / f.name)), concurrency
            ),
        )


# ---------------------------------------------------------------- obstore


class ObstoreSync(Tool):
    """obstore's blocking API on a thread pool: `obstore.put(store, key, Path)` and a
    streamed `obstore.get` into the file, N files at a time."""

    name = "obstore"
    family = "obstore"
    describe = {
        "upload": "N threads: obstore.put(store, key, Path(f))",
        "download": "N threads: for chunk in obstore.get(store, key): f.write(chunk)",
    }

    requires = ("obstore",)

    def upload(self, files, src, target, cfg, concurrency):
        import obstore

        store = obstore_store(cfg, target.bucket)
        return Outcome(_timed_pool(files, lambda f: obstore.put(store, target.key(f.name), f.path), concurrency))

    def download(self, files, target, dest, cfg, concurrency):
        import obstore

        store = obstore_store(cfg, target.bucket)

        def get(f: FileSpec) -> None:
            with open(dest / f.name, "wb") as out:
                for chunk in obstore.get(store, target.key(f.name)).stream(min_chunk_size=_READ):
                    out.write(chunk)

        return Outcome(_timed_pool(files, get, concurrency))


class ObstoreAsync(Tool):
    """obstore's coroutine API: `await obstore.put_async` / streamed `get_async`, N in flight."""

    name = "obstore-async"
    family = "obstore"
    mode = "async"
    describe = {
        "upload": "asyncio: await obstore.put_async(store, key, Path(f)), N in flight",
        "download": "asyncio: async for chunk in await obstore.get_async(…): f.write(chunk), N in flight",
    }

    requires = ("obstore",)

    def upload(self, files, src, target, cfg, concurrency):
        import obstore

        store = obstore_store(cfg, target.bucket)
        return Outcome(
            asyncio.run(
                _timed_gather(files, lambda f: obstore.put_async(store, target.key(f.name), f.path), concurrency)
            )
        )

    def download(self, files, target, dest, cfg, concurrency):
        import obstore

        store = obstore_store(cfg, target.bucket)

        async def get(f: FileSpec) -> None:
            resp = await obstore.get_async(store, target.key(f.name))
            with open(dest / f.name, "wb") as out:
                async for chunk in resp.stream(min_chunk_size=_READ):
                    out.write(chunk)

        return Outcome(asyncio.run(_timed_gather(files, get, concurrency)))
