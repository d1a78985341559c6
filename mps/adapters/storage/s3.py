"""Objects in an S3 bucket, or on an S3-compatible server (MinIO, Ceph, moto), via aiobotocore.

Configured by MPS_OBJECT_STORAGE_URL=s3://bucket/optional/prefix and these variables:

    MPS_S3_ENDPOINT_URL        an S3-compatible server's URL (default: AWS for the region)
    MPS_S3_REGION              default us-east-1
    MPS_S3_ACCESS_KEY_ID       with MPS_S3_SECRET_ACCESS_KEY; when both are unset, the standard
    MPS_S3_SECRET_ACCESS_KEY   AWS chain is used (AWS_* variables, ~/.aws, an instance role)

One client per store, made on first use and closed by `close()`. Credentials are never logged,
never in a message and never in `repr`.

A put of up to one part (8 MiB by default) is one PutObject. A larger one is a multipart
upload, a part at a time so at most about one part is in memory; it is aborted when the put
fails, so no incomplete upload is left to be billed. Either way S3 shows the object only once
it is whole.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from datetime import UTC
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiobotocore.config import AioConfig
from aiobotocore.session import get_session
from botocore.exceptions import BotoCoreError, ClientError

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

__all__ = ["MIN_PART_SIZE", "S3Store"]

# S3 refuses a multipart part under 5 MiB, except the last.
MIN_PART_SIZE = 5 * 1024 * 1024
DEFAULT_PART_SIZE = 8 * 1024 * 1024
_READ_SIZE = 256 * 1024
_MISSING_CODES = frozenset({"NoSuchKey", "404", "NotFound"})


class S3Store(ObjectStore):
    """Each object is `<prefix><key>` in `bucket`. The bucket must exist: the service never
    creates or configures buckets (their policy and lifecycle belong to whoever runs it)."""

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint_url: str | None = None,
        region: str = "us-east-1",
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        part_size: int = DEFAULT_PART_SIZE,
    ) -> None:
        if not bucket:
            msg = "an S3 store needs a bucket"
            raise ValueError(msg)
        if (access_key_id is None) != (secret_access_key is None):
            msg = "give both MPS_S3_ACCESS_KEY_ID and MPS_S3_SECRET_ACCESS_KEY, or neither"
            raise ValueError(msg)
        if part_size < MIN_PART_SIZE:
            msg = f"an S3 multipart part is at least {MIN_PART_SIZE} bytes"
            raise ValueError(msg)
        prefix = prefix.strip("/")
        if prefix:
            check_key(prefix)
        self.bucket = bucket
        self.prefix = f"{prefix}/" if prefix else ""
        self.endpoint_url = endpoint_url
        self.region = region
        self.part_size = part_size
        self._credentials = (access_key_id, secret_access_key)
        self._client: Any = None
        self._opening = asyncio.Lock()
        self._exits = AsyncExitStack()
        self._closed = False

    @classmethod
    def from_url(cls, url: str, *, env: Mapping[str, str]) -> S3Store:
        """The store for `s3://bucket/optional/prefix`, configured by the MPS_S3_* in `env`."""
        parts = urlsplit(url)
        if not parts.hostname or "@" in parts.netloc or parts.query or parts.fragment:
            # Not repeating the URL: a credential written into it by mistake stays out of logs.
            msg = (
                "MPS_OBJECT_STORAGE_URL: an S3 URL is s3://bucket/optional/prefix "
                "(credentials go in MPS_S3_ACCESS_KEY_ID and MPS_S3_SECRET_ACCESS_KEY)"
            )
            raise ValueError(msg)
        return cls(
            parts.netloc,
            parts.path,
            endpoint_url=env.get("MPS_S3_ENDPOINT_URL") or None,
            region=env.get("MPS_S3_REGION") or "us-east-1",
            access_key_id=env.get("MPS_S3_ACCESS_KEY_ID") or None,
            secret_access_key=env.get("MPS_S3_SECRET_ACCESS_KEY") or None,
        )

    def __repr__(self) -> str:
        return f"S3Store(bucket={self.bucket!r}, prefix={self.prefix!r})"

    @property
    def description(self) -> str:
        where = f" at {self.endpoint_url}" if self.endpoint_url else ""
        return f"s3 bucket {self.bucket}{where}"

    async def _s3(self) -> Any:
        """The client, made on first use; the lock keeps two first uses from making two."""
        async with self._opening:
            if self._closed:
                msg = f"{self.description}: the store is closed"
                raise StorageError(msg)
            if self._client is None:
                access_key_id, secret_access_key = self._credentials
                config = AioConfig(
                    connect_timeout=5,
                    read_timeout=30,
                    retries={"mode": "standard", "max_attempts": 3},
                    # S3-compatible servers want path-style URLs (no bucket.host DNS), and
                    # several still refuse the CRC checksums botocore now sends by default;
                    # sha256 is checked by us, and TLS guards the bytes in transit.
                    s3={"addressing_style": "path"} if self.endpoint_url else None,
                    request_checksum_calculation="when_required",
                    response_checksum_validation="when_required",
                )
                with _translated(self, "connect"):
                    self._client = await self._exits.enter_async_context(
                        get_session().create_client(
                            "s3",
                            region_name=self.region,
                            endpoint_url=self.endpoint_url,
                            aws_access_key_id=access_key_id,
                            aws_secret_access_key=secret_access_key,
                            config=config,
                        )
                    )
            return self._client

    async def _call(self, operation: str, key: str, **params: Any) -> Any:
        """One S3 request on the object `key`, its errors translated."""
        client = await self._s3()
        with _translated(self, operation, key):
            return await getattr(client, operation)(Bucket=self.bucket, **params)

    async def put(
        self, key: str, chunks: AsyncIterable[bytes], *, content_type: str, max_bytes: int
    ) -> StoredObject:
        name = self.prefix + check_key(key)
        meter = Meter(max_bytes)
        upload_id: str | None = None
        parts: list[dict[str, Any]] = []
        try:
            async for batch in meter.batches(chunks, self.part_size):
                if upload_id is None and sum(map(len, batch)) < self.part_size:
                    # Only the last batch is short of a part, so this is the whole object.
                    body = b"".join(batch)
                    await self._call(
                        "put_object", key, Key=name, Body=body, ContentType=content_type
                    )
                elif batch:
                    if upload_id is None:
                        started = await self._call(
                            "create_multipart_upload", key, Key=name, ContentType=content_type
                        )
                        upload_id = str(started["UploadId"])
                    parts.append(await self._part(key, name, upload_id, len(parts) + 1, batch))
            if upload_id is not None:
                await self._call(
                    "complete_multipart_upload",
                    key,
                    Key=name,
                    UploadId=upload_id,
                    MultipartUpload={"Parts": parts},
                )
        except BaseException:
            if upload_id is not None:
                await self._abort(key, name, upload_id)
            raise
        return meter.stored(key)

    async def _part(
        self, key: str, name: str, upload_id: str, number: int, chunks: list[bytes]
    ) -> dict[str, Any]:
        body = b"".join(chunks)
        chunks.clear()  # the part is now `body` alone
        uploaded = await self._call(
            "upload_part", key, Key=name, UploadId=upload_id, PartNumber=number, Body=body
        )
        return {"ETag": uploaded["ETag"], "PartNumber": number}

    async def _abort(self, key: str, name: str, upload_id: str) -> None:
        # Shielded, so a second cancellation cannot leave the parts stored (and billed). A
        # failure is not reported: the put's own error is the one the caller needs, and a
        # bucket lifecycle rule that aborts incomplete uploads is the backstop.
        with contextlib.suppress(StorageError):
            await asyncio.shield(
                self._call("abort_multipart_upload", key, Key=name, UploadId=upload_id)
            )

    def get(self, key: str) -> AbstractAsyncContextManager[ObjectBody]:
        return self._read(key, self.prefix + check_key(key))

    @asynccontextmanager
    async def _read(self, key: str, name: str) -> AsyncIterator[ObjectBody]:
        response = await self._call("get_object", key, Key=name)
        stream = response["Body"]
        chunks = self._chunks(key, stream)
        try:
            yield ObjectBody(int(response["ContentLength"]), chunks)
        finally:
            await chunks.aclose()
            await stream.aclose()

    async def _chunks(self, key: str, stream: Any) -> AsyncGenerator[bytes, None]:
        while True:
            with _translated(self, "get_object", key):
                chunk: bytes = await stream.read(_READ_SIZE)
            if not chunk:
                return
            yield chunk

    async def delete(self, key: str) -> None:
        # S3 answers a delete of a missing key with success too.
        await self._call("delete_object", key, Key=self.prefix + check_key(key))

    async def list(self, prefix: str) -> AsyncIterator[ObjectInfo]:
        check_prefix(prefix)
        client = await self._s3()
        pages = client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.prefix + prefix
        )
        with _translated(self, "list_objects_v2"):
            async for page in pages:
                for item in page.get("Contents", ()):
                    key = str(item["Key"])[len(self.prefix) :]
                    if not _valid_key(key):
                        continue  # put there by something else; no method of ours could name it
                    yield ObjectInfo(
                        key=key,
                        size_bytes=int(item["Size"]),
                        modified_at=item["LastModified"].astimezone(UTC),
                    )

    async def close(self) -> None:
        async with self._opening:
            self._closed = True
            self._client = None
            await self._exits.aclose()


def _valid_key(key: str) -> bool:
    try:
        check_key(key)
    except ValueError:
        return False
    return True


@contextlib.contextmanager
def _translated(store: S3Store, operation: str, key: str | None = None) -> Iterator[None]:
    """botocore's and aiohttp's errors as ours: a missing object as ObjectNotFound, the rest as
    StorageError naming the operation and S3's error code, nothing else."""
    try:
        yield
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", "unknown"))
        if key is not None and code in _MISSING_CODES:
            raise ObjectNotFound(key) from exc
        on = f" {key}" if key else ""
        msg = f"{store.description}: {operation}{on} failed: {code}"
        raise StorageError(msg) from exc
    except (BotoCoreError, aiohttp.ClientError, OSError, TimeoutError) as exc:
        on = f" {key}" if key else ""
        msg = f"{store.description}: {operation}{on} failed: {type(exc).__name__}"
        raise StorageError(msg) from exc
