"""The object store contract (mps.adapters.storage), run against both backends: files on disk,
and a real S3-compatible server (moto's, on loopback, started once for the session) through
aiobotocore.

Each S3 test gets a bucket of its own; the S3 store uses the smallest part size S3 allows, so
the multi-MiB bodies here go through a real multipart upload.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mps.adapters.storage import (
    FilesystemStore,
    ObjectInfo,
    ObjectNotFound,
    ObjectStore,
    S3Store,
    StorageError,
    TooLarge,
    open_store,
)
from mps.adapters.storage.s3 import MIN_PART_SIZE
from tests.s3 import ACCESS_KEY, SECRET_KEY, new_bucket, s3_admin

MIB = 1024 * 1024
CHUNK = 64 * 1024

Leftovers = Callable[[], Awaitable[list[str]]]


def _body(size: int, seed: int = 7) -> bytes:
    return random.Random(seed).randbytes(size)


async def _chunks(body: bytes, size: int = CHUNK) -> AsyncIterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start : start + size]


async def _read(store: ObjectStore, key: str) -> tuple[bytes, int, int]:
    """The object's bytes, the size the store announced, and how many chunks they came in."""
    async with store.get(key) as body:
        chunks = [chunk async for chunk in body]
        return b"".join(chunks), body.size_bytes, len(chunks)


async def _keys(store: ObjectStore, prefix: str = "") -> dict[str, ObjectInfo]:
    return {info.key: info async for info in store.list(prefix)}


@pytest.fixture(params=["filesystem", "s3"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ObjectStore]:
    subject: ObjectStore
    if request.param == "filesystem":
        subject = FilesystemStore(tmp_path / "objects")
    else:
        endpoint = request.getfixturevalue("s3_endpoint")
        bucket = await new_bucket(endpoint)
        subject = S3Store(
            bucket,
            "tenant",
            endpoint_url=endpoint,
            access_key_id=ACCESS_KEY,
            secret_access_key=SECRET_KEY,
            part_size=MIN_PART_SIZE,
        )
    try:
        yield subject
    finally:
        await subject.close()


@pytest.fixture
def leftovers(store: ObjectStore) -> Leftovers:
    """Whatever the store holds, seen from below it: every file under the root, temporary
    ones too; or every object in the bucket and every multipart upload not completed."""

    async def files() -> list[str]:
        assert isinstance(store, FilesystemStore)
        return [
            str(Path(directory, name).relative_to(store.root))
            for directory, _, names in os.walk(store.root)
            for name in names
        ]

    async def bucket() -> list[str]:
        assert isinstance(store, S3Store) and store.endpoint_url is not None
        async with s3_admin(store.endpoint_url) as admin:
            objects = await admin.list_objects_v2(Bucket=store.bucket)
            uploads = await admin.list_multipart_uploads(Bucket=store.bucket)
        return [item["Key"] for item in objects.get("Contents", [])] + [
            f"upload of {item['Key']}" for item in uploads.get("Uploads", [])
        ]

    return files if isinstance(store, FilesystemStore) else bucket


async def test_put_then_get_returns_the_same_bytes_when_streamed_in_chunks(
    store: ObjectStore,
) -> None:
    # given a body of several parts' worth, arriving in small chunks
    body = _body(12 * MIB + 123)

    # when
    stored = await store.put(
        "kyc/co_abc/doc_1", _chunks(body), content_type="application/pdf", max_bytes=16 * MIB
    )
    read, announced, pieces = await _read(store, "kyc/co_abc/doc_1")

    # then
    assert stored.key == "kyc/co_abc/doc_1"
    assert stored.size_bytes == len(body) == announced
    assert stored.sha256_hex == hashlib.sha256(body).hexdigest()
    assert hashlib.sha256(read).hexdigest() == stored.sha256_hex
    assert pieces > 1  # streamed, not handed over whole


async def test_put_stores_an_empty_object(store: ObjectStore) -> None:
    stored = await store.put("kyc/empty", _chunks(b""), content_type="image/png", max_bytes=10)

    assert stored.size_bytes == 0
    assert stored.sha256_hex == hashlib.sha256(b"").hexdigest()
    assert await _read(store, "kyc/empty") == (b"", 0, 0)


async def test_put_accepts_exactly_max_bytes(store: ObjectStore) -> None:
    body = _body(1000)

    stored = await store.put("kyc/edge", _chunks(body, 100), content_type="x/y", max_bytes=1000)

    assert stored.size_bytes == 1000


async def test_put_replaces_the_object_when_the_key_is_taken(store: ObjectStore) -> None:
    await store.put("kyc/doc", _chunks(b"first"), content_type="x/y", max_bytes=100)

    await store.put("kyc/doc", _chunks(b"second"), content_type="x/y", max_bytes=100)

    assert (await _read(store, "kyc/doc"))[0] == b"second"
    assert set(await _keys(store)) == {"kyc/doc"}


@pytest.mark.parametrize("size", [2 * 1024, 7 * MIB], ids=["small", "several_parts"])
async def test_put_raises_too_large_and_leaves_nothing_behind_when_more_than_max_bytes_arrive(
    store: ObjectStore, leftovers: Leftovers, size: int
) -> None:
    # given a body one byte over the limit (for S3's "several_parts", a part is uploaded first)
    body = _body(size + 1)

    # when
    with pytest.raises(TooLarge) as raised:
        await store.put("kyc/co_abc/big", _chunks(body), content_type="x/y", max_bytes=size)

    # then
    assert raised.value.max_bytes == size
    assert await _keys(store) == {}
    assert await leftovers() == []
    with pytest.raises(ObjectNotFound):
        await _read(store, "kyc/co_abc/big")


@pytest.mark.parametrize("before_failing", [100, 6 * MIB], ids=["small", "after_a_part"])
async def test_put_leaves_nothing_behind_and_raises_the_same_error_when_the_chunks_fail_half_way(
    store: ObjectStore, leftovers: Leftovers, before_failing: int
) -> None:
    # given an upload whose client goes away after some bytes
    failure = ConnectionResetError("the client went away")

    async def failing() -> AsyncIterator[bytes]:
        async for chunk in _chunks(_body(before_failing)):
            yield chunk
        raise failure

    # when
    with pytest.raises(ConnectionResetError) as raised:
        await store.put("kyc/co_abc/doc", failing(), content_type="x/y", max_bytes=16 * MIB)

    # then the caller's own error, untranslated, and no trace of the put
    assert raised.value is failure
    assert await leftovers() == []


async def test_put_leaves_nothing_behind_when_cancelled_half_way(
    store: ObjectStore, leftovers: Leftovers
) -> None:
    # given an upload that stalls after a part's worth of bytes
    stalled = asyncio.Event()

    async def stalling() -> AsyncIterator[bytes]:
        async for chunk in _chunks(_body(6 * MIB)):
            yield chunk
        stalled.set()
        await asyncio.Event().wait()
        yield b"never"

    put = asyncio.create_task(
        store.put("kyc/co_abc/doc", stalling(), content_type="x/y", max_bytes=16 * MIB)
    )
    await stalled.wait()

    # when
    put.cancel()
    with pytest.raises(asyncio.CancelledError):
        await put

    # then
    assert await leftovers() == []


async def test_get_raises_object_not_found_when_no_object_has_the_key(store: ObjectStore) -> None:
    with pytest.raises(ObjectNotFound) as raised:
        async with store.get("kyc/co_abc/missing"):
            pass

    assert isinstance(raised.value, KeyError)
    assert raised.value.key == "kyc/co_abc/missing"


async def test_get_raises_object_not_found_when_the_key_names_a_folder_of_objects(
    store: ObjectStore,
) -> None:
    await store.put("kyc/co_abc/doc", _chunks(b"x"), content_type="x/y", max_bytes=10)

    with pytest.raises(ObjectNotFound):
        await _read(store, "kyc/co_abc")


async def test_delete_removes_the_object_and_is_idempotent(
    store: ObjectStore, leftovers: Leftovers
) -> None:
    await store.put("kyc/co_abc/doc", _chunks(b"bytes"), content_type="x/y", max_bytes=10)

    await store.delete("kyc/co_abc/doc")
    await store.delete("kyc/co_abc/doc")
    await store.delete("kyc/never/was")

    with pytest.raises(ObjectNotFound):
        await _read(store, "kyc/co_abc/doc")
    assert await _keys(store) == {}
    assert await leftovers() == []


async def test_list_returns_the_objects_under_a_prefix_with_their_sizes(
    store: ObjectStore,
) -> None:
    # given objects of two companies, and one outside kyc/
    before = datetime.now(UTC) - timedelta(seconds=5)
    for key, size in [
        ("kyc/co_a/doc_1", 10),
        ("kyc/co_a/doc_2", 20),
        ("kyc/co_ab/doc_3", 30),
        ("kyc/co_b/doc_4", 40),
        ("other/doc_5", 50),
    ]:
        await store.put(key, _chunks(_body(size)), content_type="x/y", max_bytes=100)

    # when
    company = await _keys(store, "kyc/co_a/")
    started = await _keys(store, "kyc/co_a")
    everything = await _keys(store, "")

    # then
    assert {key: info.size_bytes for key, info in company.items()} == {
        "kyc/co_a/doc_1": 10,
        "kyc/co_a/doc_2": 20,
    }
    assert set(started) == {"kyc/co_a/doc_1", "kyc/co_a/doc_2", "kyc/co_ab/doc_3"}
    assert len(everything) == 5
    after = datetime.now(UTC) + timedelta(seconds=5)
    for info in everything.values():
        assert info.modified_at.tzinfo is not None
        assert info.modified_at.utcoffset() == timedelta(0)
        assert before <= info.modified_at <= after
    assert await _keys(store, "kyc/nobody/") == {}


async def test_probe_round_trips_and_leaves_nothing_behind(
    store: ObjectStore, leftovers: Leftovers
) -> None:
    detail = await store.probe()

    assert detail == store.description
    assert detail.startswith(("filesystem /", "s3 bucket test-"))
    assert await leftovers() == []


@pytest.mark.parametrize(
    "key",
    [
        "../outside",
        "kyc/../../etc/passwd",
        "kyc/..",
        "/etc/passwd",
        "kyc//doc",
        "kyc/doc/",
        "kyc/.hidden",
        "kyc/doc name",
        "kyc/doc\x00",
        "kyc\\doc",
        "",
        "k" * 513,
    ],
)
async def test_keys_that_could_escape_or_are_malformed_are_refused(
    store: ObjectStore, leftovers: Leftovers, key: str
) -> None:
    with pytest.raises(ValueError, match="invalid object key"):
        await store.put(key, _chunks(b"x"), content_type="x/y", max_bytes=10)
    with pytest.raises(ValueError, match="invalid object key"):
        store.get(key)
    with pytest.raises(ValueError, match="invalid object key"):
        await store.delete(key)
    assert await leftovers() == []


@pytest.mark.parametrize("prefix", ["../", "/kyc", "kyc/../", "kyc//"])
async def test_list_refuses_a_prefix_no_valid_key_could_start_with(
    store: ObjectStore, prefix: str
) -> None:
    with pytest.raises(ValueError, match="invalid object key"):
        await _keys(store, prefix)


async def test_filesystem_store_keeps_folders_and_files_to_their_owner(tmp_path: Path) -> None:
    store = FilesystemStore(tmp_path / "objects")

    await store.put("kyc/co_abc/doc", _chunks(b"id card"), content_type="x/y", max_bytes=10)

    for folder in (store.root, store.root / "kyc", store.root / "kyc" / "co_abc"):
        assert folder.stat().st_mode & 0o777 == 0o700
    assert (store.root / "kyc" / "co_abc" / "doc").stat().st_mode & 0o777 == 0o600


async def test_filesystem_store_reports_a_failing_disk_as_storage_error(tmp_path: Path) -> None:
    # given a root that is a file, so no folder can be made in it
    root = tmp_path / "objects"
    root.write_bytes(b"")
    store = FilesystemStore(root)

    with pytest.raises(StorageError, match="filesystem"):
        await store.put("kyc/doc", _chunks(b"x"), content_type="x/y", max_bytes=10)
    with pytest.raises(StorageError):
        await store.probe()


async def test_s3_store_uploads_in_parts_when_the_body_is_larger_than_one_part(
    s3_endpoint: str,
) -> None:
    # given
    bucket = f"test-{secrets.token_hex(6)}"
    async with s3_admin(s3_endpoint) as admin:
        await admin.create_bucket(Bucket=bucket)
    store = S3Store(
        bucket,
        endpoint_url=s3_endpoint,
        access_key_id=ACCESS_KEY,
        secret_access_key=SECRET_KEY,
        part_size=MIN_PART_SIZE,
    )
    body = _body(2 * MIN_PART_SIZE + 1)

    # when
    try:
        await store.put("kyc/doc", _chunks(body), content_type="image/png", max_bytes=len(body))
    finally:
        await store.close()

    # then S3's ETag of a multipart object ends in its number of parts
    async with s3_admin(s3_endpoint) as admin:
        head = await admin.head_object(Bucket=bucket, Key="kyc/doc")
    assert head["ETag"].strip('"').endswith("-3")
    assert head["ContentType"] == "image/png"
    assert head["ContentLength"] == len(body)


async def test_s3_store_reports_an_unreachable_server_as_storage_error() -> None:
    # given a port nothing listens on
    store = S3Store(
        "bucket",
        endpoint_url="http://127.0.0.1:9",
        access_key_id=ACCESS_KEY,
        secret_access_key=SECRET_KEY,
    )

    try:
        with pytest.raises(StorageError, match="s3 bucket bucket") as raised:
            await store.probe()
    finally:
        await store.close()

    assert SECRET_KEY not in str(raised.value)


async def test_open_store_picks_the_backend_by_url(tmp_path: Path) -> None:
    env = {
        "MPS_S3_ENDPOINT_URL": "http://127.0.0.1:9000",
        "MPS_S3_REGION": "eu-west-1",
        "MPS_S3_ACCESS_KEY_ID": ACCESS_KEY,
        "MPS_S3_SECRET_ACCESS_KEY": SECRET_KEY,
    }

    on_disk = open_store((tmp_path / "a b").as_uri(), env=env)
    bare = open_store(str(tmp_path / "objects"), env=env)
    s3 = open_store("s3://kyc-bucket/mps/prod", env=env)

    assert isinstance(on_disk, FilesystemStore) and on_disk.root == tmp_path / "a b"
    assert isinstance(bare, FilesystemStore) and bare.root == tmp_path / "objects"
    assert isinstance(s3, S3Store)
    assert (s3.bucket, s3.prefix, s3.region) == ("kyc-bucket", "mps/prod/", "eu-west-1")
    assert s3.endpoint_url == "http://127.0.0.1:9000"
    assert SECRET_KEY not in repr(s3)
    await s3.close()


@pytest.mark.parametrize(
    "url",
    ["", "ftp://host/path", "s3://", "s3://key:secret@bucket/prefix", "file://elsewhere/path"],
)
def test_open_store_refuses_a_url_it_cannot_serve_naming_the_setting(url: str) -> None:
    with pytest.raises(ValueError, match="MPS_OBJECT_STORAGE_URL") as raised:
        open_store(url, env={})

    assert "secret" not in str(raised.value)


def test_open_store_refuses_half_of_a_credential_pair() -> None:
    with pytest.raises(ValueError, match="MPS_S3_SECRET_ACCESS_KEY"):
        open_store("s3://bucket", env={"MPS_S3_ACCESS_KEY_ID": ACCESS_KEY})
