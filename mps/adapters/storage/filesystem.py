"""Objects as files under one private directory (by default `<data_dir>/objects`).

Directories are created 0700 and files 0600: the documents are identity papers. The root must
not be inside anything the service serves; the service serves nothing from disk but its bundled
assets, so any directory outside the package will do.

Every blocking call (open, write, fsync, rename, scandir) runs in a worker thread, one call per
chunk, so the event loop never waits on the disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import tempfile
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, TypeVar

from mps.adapters.storage.base import (
    Meter,
    ObjectBody,
    ObjectInfo,
    ObjectNotFound,
    ObjectStore,
    StorageError,
    StoredObject,
    check_key,
    check_prefix,
)

__all__ = ["FilesystemStore"]

_T = TypeVar("_T")

# Chunks are gathered up to this before a write, so a stream of small chunks (an aiohttp
# multipart body arrives in 8 KiB pieces) costs a thread hop per 256 KiB, not per piece.
_WRITE_SIZE = 256 * 1024
_READ_SIZE = 256 * 1024
# Temporary files are named so: no valid key has a segment starting with '.'.
_TEMPORARY_PREFIX = ".tmp-"


class FilesystemStore(ObjectStore):
    """Each object is the file `root/<key>`; a put writes `.tmp-*` beside it and renames it
    into place, so the file at a key is always whole.

    Unlike S3, a key cannot name both an object and the folder of others (`kyc/co_a` and
    `kyc/co_a/doc`): the second put raises StorageError. Keys of one shape per purpose, such
    as `kyc/<company>/<document>`, never ask for both."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).absolute()

    def __repr__(self) -> str:
        return f"FilesystemStore({str(self.root)!r})"

    @property
    def description(self) -> str:
        return f"filesystem {self.root}"

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*check_key(key).split("/"))

    async def _io(self, what: str, call: Callable[..., _T], *args: object) -> _T:
        """`call(*args)` in a worker thread, its OSError turned into StorageError."""
        try:
            return await _to_the_end(call, *args)
        except OSError as exc:
            msg = f"{self.description}: cannot {what}: {exc.strerror or exc}"
            raise StorageError(msg) from exc

    async def put(
        self, key: str, chunks: AsyncIterable[bytes], *, content_type: str, max_bytes: int
    ) -> StoredObject:
        path = self._path(key)
        meter = Meter(max_bytes)
        temporary = _Temporary()
        try:
            await self._io(f"create a file for {key}", temporary.create, self.root, path.parent)
            async for batch in meter.batches(chunks, _WRITE_SIZE):
                if batch:
                    await self._io(f"write {key}", temporary.write, _joined(batch))
            await self._io(f"store {key}", temporary.commit, path)
        except BaseException:
            await _to_the_end(temporary.discard, path)
            raise
        return meter.stored(key)

    def get(self, key: str) -> AbstractAsyncContextManager[ObjectBody]:
        return self._read(key, self._path(key))

    @asynccontextmanager
    async def _read(self, key: str, path: Path) -> AsyncIterator[ObjectBody]:
        try:
            handle, size = await _to_the_end(_open_for_reading, path)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
            raise ObjectNotFound(key) from exc
        except OSError as exc:
            msg = f"{self.description}: cannot read {key}: {exc.strerror or exc}"
            raise StorageError(msg) from exc
        chunks = self._chunks(key, handle)
        try:
            yield ObjectBody(size, chunks)
        finally:
            await chunks.aclose()
            await _to_the_end(handle.close)

    async def _chunks(self, key: str, handle: BinaryIO) -> AsyncGenerator[bytes, None]:
        while chunk := await self._io(f"read {key}", handle.read, _READ_SIZE):
            yield chunk

    async def delete(self, key: str) -> None:
        await self._io(f"delete {key}", _unlink, self._path(key))

    async def list(self, prefix: str) -> AsyncIterator[ObjectInfo]:
        check_prefix(prefix)
        # Only the directory the prefix names, and below it, can hold matching keys.
        pending = [prefix.rpartition("/")[0]]
        while pending:
            directory = pending.pop()
            infos, subdirectories = await self._io(
                f"list {directory or 'the root'}", _scan, self.root, directory
            )
            for info in infos:
                if info.key.startswith(prefix):
                    yield info
            pending.extend(
                sub
                for sub in subdirectories
                if (sub + "/").startswith(prefix) or prefix.startswith(sub + "/")
            )

    async def close(self) -> None:
        """Nothing to release: every file is closed by the call that opened it."""


def _joined(chunks: list[bytes]) -> bytes:
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _make_directories(root: Path, directory: Path) -> None:
    # One level at a time: mkdir(parents=True) gives the parents it makes the default mode,
    # not 0700.
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    current = root
    for part in directory.relative_to(root).parts:
        current = current / part
        current.mkdir(mode=0o700, exist_ok=True)


class _Temporary:
    """The file one put writes, beside the key's path, until it is renamed into place. Its
    methods block: each is called in a worker thread, one at a time."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self._handle: BinaryIO | None = None
        # (device, inode): tells our own file from another put's at the key's path.
        self._identity: tuple[int, int] | None = None

    def create(self, root: Path, directory: Path) -> None:
        _make_directories(root, directory)
        # mkstemp creates the file 0600, with O_EXCL.
        descriptor, name = tempfile.mkstemp(dir=directory, prefix=_TEMPORARY_PREFIX)
        self.path = Path(name)
        self._handle = os.fdopen(descriptor, "wb")
        status = os.fstat(descriptor)
        self._identity = (status.st_dev, status.st_ino)

    def write(self, data: bytes) -> None:
        assert self._handle is not None
        self._handle.write(data)

    def commit(self, target: Path) -> None:
        assert self._handle is not None
        assert self.path is not None
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._handle.close()
        os.replace(self.path, target)
        # The rename is durable only once the directory that holds it is synced.
        directory = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    def discard(self, target: Path) -> None:
        """Remove whatever this put wrote: the temporary file, or the object itself when the
        put failed or was cancelled after the rename (the caller was told it failed)."""
        # Errors here would hide the one that made the put fail, which is the one to report.
        with contextlib.suppress(OSError):
            if self._handle is not None:
                self._handle.close()
        with contextlib.suppress(OSError):
            if self.path is not None:
                self.path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            status = target.stat()
            if (status.st_dev, status.st_ino) == self._identity:
                target.unlink()


async def _to_the_end(call: Callable[..., _T], *args: object) -> _T:
    """`call(*args)` in a worker thread, awaited to its end even when this task is cancelled
    meanwhile; the cancellation is raised once the call has ended.

    A cancelled `asyncio.to_thread` leaves its thread running: the cleanup that follows could
    then race a write still in flight, or remove the temporary file just before a rename that
    puts it back in place.
    """
    future = asyncio.ensure_future(asyncio.to_thread(call, *args))
    cancelled = False
    while not future.done():
        try:
            await asyncio.wait([future])
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return future.result()


def _open_for_reading(path: Path) -> tuple[BinaryIO, int]:
    handle = path.open("rb")
    try:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise IsADirectoryError(path)
    except BaseException:
        handle.close()
        raise
    return handle, status.st_size


def _unlink(path: Path) -> None:
    # A directory or a path through a file is not an object, so "nothing to delete" too.
    with contextlib.suppress(FileNotFoundError, IsADirectoryError, NotADirectoryError):
        path.unlink()


def _scan(root: Path, directory: str) -> tuple[list[ObjectInfo], list[str]]:
    """The objects directly in `root/directory`, and the keys of its subdirectories."""
    infos: list[ObjectInfo] = []
    subdirectories: list[str] = []
    base = f"{directory}/" if directory else ""
    try:
        entries = list(os.scandir(root / directory if directory else root))
    except (FileNotFoundError, NotADirectoryError):
        return infos, subdirectories
    for entry in entries:
        if entry.name.startswith("."):
            continue  # a put in progress, or a file no valid key names
        if entry.is_dir(follow_symlinks=False):
            subdirectories.append(base + entry.name)
        elif entry.is_file(follow_symlinks=False):
            try:
                status = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue  # deleted since the scan listed it
            infos.append(
                ObjectInfo(
                    key=base + entry.name,
                    size_bytes=status.st_size,
                    modified_at=datetime.fromtimestamp(status.st_mtime, UTC),
                )
            )
    return infos, subdirectories
