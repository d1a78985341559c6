"""The object store interface every backend implements, and the factory that picks one by URL.

Objects are opaque bytes named by keys such as `kyc/co_abc/doc_xyz` (`check_key` says which
keys are valid). The store is an adapter: the database records what each object is (its
company, its detected content type, its sha256); the store only keeps the bytes.

Errors, one tree; a backend's own errors (OSError, botocore's) are translated into it at the
backend's boundary, so callers catch these and nothing else:

    StorageError            the store could not do it (disk full, S3 unreachable or refusing)
     ├── ObjectNotFound     no object has that key (also a KeyError)
     └── TooLarge           a put brought more than its max_bytes; nothing was kept

A key or prefix that breaks the key rules is the caller's bug and raises ValueError. An
exception raised by the chunks a caller hands to `put` is not translated: it propagates as it
was raised, after the partial object is removed.
"""

from __future__ import annotations

import abc
import hashlib
import re
import secrets
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from urllib.parse import unquote, urlsplit

__all__ = [
    "ObjectBody",
    "ObjectInfo",
    "ObjectNotFound",
    "ObjectStore",
    "StorageError",
    "StoredObject",
    "TooLarge",
    "check_key",
    "check_prefix",
    "open_store",
]


class StorageError(Exception):
    """The object store could not do what was asked; the message says what, never a secret."""


class ObjectNotFound(StorageError, KeyError):
    """No object has this key."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key

    def __str__(self) -> str:
        # KeyError's own str() is the repr of its argument, quotes and all.
        return f"no stored object has the key {self.key}"


class TooLarge(StorageError):
    """More than `max_bytes` arrived for one put. Nothing of it was kept."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(f"the object is larger than {max_bytes} bytes")
        self.max_bytes = max_bytes


@dataclass(frozen=True, slots=True)
class StoredObject:
    """What a completed put wrote: the caller records it beside the key."""

    key: str
    size_bytes: int
    sha256_hex: str


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    """One object as `list` finds it; `modified_at` is timezone-aware, in UTC."""

    key: str
    size_bytes: int
    modified_at: datetime


class ObjectBody:
    """The bytes of one stored object, read from the store as they are iterated.

    Only valid inside the `async with store.get(key)` block that produced it: leaving the block
    closes the file or the HTTP response underneath.
    """

    def __init__(self, size_bytes: int, chunks: AsyncIterator[bytes]) -> None:
        self.size_bytes = size_bytes
        self._chunks = chunks

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks


# Each /-separated segment: letters, digits, '_', '.', '-', not starting with '.', which rules
# out '.' and '..' (so a filesystem store cannot be led out of its root) and keeps the names
# starting with '.' free for the filesystem store's temporary files.
_SEGMENT = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,254}")
# S3's limit on a key is 1024 bytes; the store's own prefix needs some of it.
MAX_KEY_LENGTH = 512


def check_key(key: str) -> str:
    """`key` if it is a valid object key, else ValueError: 1 to 512 characters of
    `[A-Za-z0-9_./-]`, /-separated segments, none empty, none starting with '.'."""
    if (
        not isinstance(key, str)
        or not 0 < len(key) <= MAX_KEY_LENGTH
        or not all(_SEGMENT.fullmatch(segment) for segment in key.split("/"))
    ):
        msg = f"invalid object key {key!r}: use /-separated [A-Za-z0-9_.-] segments, no '..'"
        raise ValueError(msg)
    return key


def check_prefix(prefix: str) -> str:
    """`prefix` if some valid key could start with it ('' is every key), else ValueError."""
    # A prefix ends anywhere: in the middle of a segment, or just after a '/'.
    if prefix:
        check_key(prefix.removesuffix("/"))
    return prefix


class Meter:
    """Counts and hashes the bytes of one put as they stream through, and raises TooLarge as
    soon as they pass `max_bytes`, before the chunk that passed it is written anywhere."""

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 0:
            msg = "max_bytes must be 0 or more"
            raise ValueError(msg)
        self.max_bytes = max_bytes
        self.size_bytes = 0
        self._sha256 = hashlib.sha256()

    def add(self, chunk: bytes) -> None:
        self.size_bytes += len(chunk)
        if self.size_bytes > self.max_bytes:
            raise TooLarge(self.max_bytes)
        self._sha256.update(chunk)

    async def batches(self, chunks: AsyncIterable[bytes], size: int) -> AsyncIterator[list[bytes]]:
        """The chunks, each metered as it arrives, gathered into lists of at least `size` bytes
        (one write or one upload each, however small the chunks). The last list holds the rest:
        it alone is shorter, and it is empty when nothing is left over."""
        batch: list[bytes] = []
        batch_size = 0
        async for chunk in chunks:
            self.add(chunk)
            batch.append(chunk)
            batch_size += len(chunk)
            if batch_size >= size:
                yield batch
                batch, batch_size = [], 0
        yield batch

    def stored(self, key: str) -> StoredObject:
        return StoredObject(
            key=key, size_bytes=self.size_bytes, sha256_hex=self._sha256.hexdigest()
        )


async def _once(body: bytes) -> AsyncIterator[bytes]:
    yield body


class ObjectStore(abc.ABC):
    """Where uploaded documents' bytes live. Safe to share between tasks of one event loop;
    every method streams, so no object is ever held whole in memory by the store."""

    @property
    @abc.abstractmethod
    def description(self) -> str:
        """Where the objects are, for /health and logs ("filesystem /path", "s3 bucket x");
        never a credential."""

    @abc.abstractmethod
    async def put(
        self, key: str, chunks: AsyncIterable[bytes], *, content_type: str, max_bytes: int
    ) -> StoredObject:
        """Store the bytes `chunks` yields under `key`, replacing any object of that key.

        Atomic: readers see the previous object or the whole new one, never part of it. Streams:
        at most about one chunk (filesystem) or one multipart part (S3) is in memory. If more
        than `max_bytes` arrive, raises TooLarge; if `chunks` raises, that exception propagates;
        on either, on a backend failure (StorageError) and on cancellation, nothing of this put
        is left behind. `content_type` is stored with the object where the backend can keep it
        (S3); the caller records it as well.
        """

    @abc.abstractmethod
    def get(self, key: str) -> AbstractAsyncContextManager[ObjectBody]:
        """The object's bytes, streamed:

            async with store.get(key) as body:  # ObjectNotFound here if there is none
                async for chunk in body: ...

        A ValueError for an invalid key is raised by the call itself.
        """

    @abc.abstractmethod
    async def delete(self, key: str) -> None:
        """Remove the object; a key with no object is not an error."""

    @abc.abstractmethod
    def list(self, prefix: str) -> AsyncIterator[ObjectInfo]:
        """Every object whose key starts with `prefix` ('' for all), in no particular order.

        An async generator: objects put or deleted while it runs may or may not be seen.
        """

    @abc.abstractmethod
    async def close(self) -> None:
        """Release connections; the store is not used again after this."""

    async def probe(self) -> str:
        """A real round trip for /health: write a small object, read it back, delete it.
        Returns `description`; raises StorageError when any step fails."""
        key = f"health/probe-{secrets.token_hex(8)}"
        written = secrets.token_bytes(32)
        await self.put(
            key, _once(written), content_type="application/octet-stream", max_bytes=len(written)
        )
        try:
            async with self.get(key) as body:
                read = b"".join([chunk async for chunk in body])
        finally:
            await self.delete(key)
        if read != written:
            msg = f"{self.description}: the probe object read back differs from what was written"
            raise StorageError(msg)
        return self.description


def open_store(url: str, *, env: Mapping[str, str]) -> ObjectStore:
    """A store for MPS_OBJECT_STORAGE_URL, not yet connected: `file:///absolute/path` or a
    bare path for files on disk, `s3://bucket/optional/prefix` for S3 or an S3-compatible
    server (configured by `env`: mps.adapters.storage.s3). Raises ValueError naming the setting.

    Messages never repeat the URL, which could hold a credential by mistake."""
    if not url:
        msg = "MPS_OBJECT_STORAGE_URL is empty: give file:///absolute/path or s3://bucket/prefix"
        raise ValueError(msg)
    if "://" not in url:
        return _filesystem(url)
    parts = urlsplit(url)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
            msg = "MPS_OBJECT_STORAGE_URL: a file URL is file:///absolute/path"
            raise ValueError(msg)
        return _filesystem(unquote(parts.path))
    if parts.scheme == "s3":
        from mps.adapters.storage.s3 import S3Store

        return S3Store.from_url(url, env=env)
    msg = f"MPS_OBJECT_STORAGE_URL: unsupported scheme {parts.scheme!r} (use file:// or s3://)"
    raise ValueError(msg)


def _filesystem(path: str) -> ObjectStore:
    from mps.adapters.storage.filesystem import FilesystemStore

    if not path:
        msg = "MPS_OBJECT_STORAGE_URL: a file URL needs a path"
        raise ValueError(msg)
    return FilesystemStore(Path(path))
