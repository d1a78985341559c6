"""Objects sealed as they stream (mps.adapters.storage.sealed): they open to exactly what was
sealed, and any change, cut, reordering or other key makes opening fail."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest

from mps.adapters.storage.sealed import (
    SEGMENT,
    TamperedObject,
    new_data_key,
    open_stream,
    seal_stream,
    sealed_size,
)

HEADER = 12
SEALED_SEGMENT = SEGMENT + 16


async def _chunks(data: bytes, size: int) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


async def _collect(stream: AsyncIterator[bytes]) -> bytes:
    return b"".join([chunk async for chunk in stream])


async def _seal(data: bytes, key: bytes, chunk: int = 5000) -> bytes:
    return await _collect(seal_stream(_chunks(data, chunk), key))


async def _open(sealed: bytes, key: bytes, chunk: int = 4096) -> bytes:
    return await _collect(open_stream(_chunks(sealed, chunk), key))


@pytest.mark.parametrize(
    "size", [0, 1, SEGMENT - 1, SEGMENT, SEGMENT + 1, 3 * SEGMENT, 3 * SEGMENT + 17]
)
@pytest.mark.parametrize("chunk", [1000, 3 * SEGMENT])
async def test_a_sealed_object_opens_to_what_was_sealed_however_it_is_chunked(
    size: int, chunk: int
) -> None:
    key, data = new_data_key(), os.urandom(size)

    sealed = await _seal(data, key, chunk)

    assert len(sealed) == sealed_size(size)
    assert await _open(sealed, key, chunk) == data
    # (a byte or two may turn up in random ciphertext by chance; 16 never do)
    assert len(data) < 16 or data[:64] not in sealed


async def test_the_same_bytes_seal_differently_each_time() -> None:
    key, data = new_data_key(), b"passport" * 100

    assert await _seal(data, key) != await _seal(data, key)


async def test_another_key_does_not_open_it() -> None:
    sealed = await _seal(b"passport scan", new_data_key())

    with pytest.raises(TamperedObject):
        await _open(sealed, new_data_key())


async def test_a_flipped_bit_anywhere_is_detected() -> None:
    key = new_data_key()
    sealed = bytearray(await _seal(os.urandom(2 * SEGMENT + 10), key))

    for position in (HEADER - 1, HEADER + 5, HEADER + SEALED_SEGMENT + 3, len(sealed) - 1):
        changed = bytearray(sealed)
        changed[position] ^= 0x01
        with pytest.raises(TamperedObject):
            await _open(bytes(changed), key)


async def test_cutting_it_short_at_a_segment_boundary_is_detected() -> None:
    key = new_data_key()
    sealed = await _seal(os.urandom(2 * SEGMENT + 10), key)

    for end in (HEADER, HEADER + SEALED_SEGMENT, HEADER + 2 * SEALED_SEGMENT):
        with pytest.raises(TamperedObject):
            await _open(sealed[:end], key)


async def test_swapping_segments_is_detected() -> None:
    key = new_data_key()
    sealed = await _seal(os.urandom(3 * SEGMENT), key)
    first = sealed[HEADER : HEADER + SEALED_SEGMENT]
    second = sealed[HEADER + SEALED_SEGMENT : HEADER + 2 * SEALED_SEGMENT]
    swapped = sealed[:HEADER] + second + first + sealed[HEADER + 2 * SEALED_SEGMENT :]

    with pytest.raises(TamperedObject):
        await _open(swapped, key)


async def test_bytes_that_were_never_sealed_are_refused() -> None:
    with pytest.raises(TamperedObject):
        await _open(b"%PDF-1.4 plain text", new_data_key())
