"""Objects encrypted as they stream: identity documents are stored sealed, so a copy of the
bucket (or of the data directory) alone reveals nothing.

Each object has its own random 256-bit data key, which the caller keeps sealed under the
service's encryption key (`Keyring.seal`, so key rotation applies) beside the object's row. The
bytes are cut into 64 KiB segments, each sealed with AES-256-GCM under a nonce of a random
per-object prefix, the segment's number and a flag marking the last segment (the STREAM
construction of Hoang, Reyhanitabar, Rogaway and Vizár): a segment cannot be moved, dropped,
repeated or cut off at the end without opening failing.

    object  = MAGIC (5 bytes) | prefix (7 bytes) | sealed segment ...
    segment = AES-GCM(SEGMENT bytes of plaintext, the last one up to SEGMENT) + 16-byte tag
"""

from __future__ import annotations

import os
import struct
from collections.abc import AsyncIterable, AsyncIterator

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from mps.adapters.storage.base import StorageError

__all__ = ["SEGMENT", "TamperedObject", "new_data_key", "open_stream", "seal_stream", "sealed_size"]

MAGIC = b"MPSE1"
SEGMENT = 64 * 1024
TAG = 16
_PREFIX = 7
_HEADER = len(MAGIC) + _PREFIX


class TamperedObject(StorageError):
    """The stored bytes do not open under their key: changed, cut short or not ours."""


def new_data_key() -> bytes:
    return AESGCM.generate_key(bit_length=256)


def sealed_size(plain_size: int) -> int:
    """How many bytes `plain_size` bytes take sealed: the header, and a tag per segment (an
    empty object is one empty segment)."""
    segments = max(1, -(-plain_size // SEGMENT))
    return _HEADER + plain_size + segments * TAG


def _nonce(prefix: bytes, number: int, last: bool) -> bytes:
    return prefix + struct.pack(">IB", number, 1 if last else 0)


async def _segments(chunks: AsyncIterable[bytes], size: int) -> AsyncIterator[tuple[bytes, bool]]:
    """`chunks` re-cut into pieces of `size` bytes, each with whether it is the last (which may
    be shorter, or empty when there was nothing at all)."""
    buffer = bytearray()
    async for chunk in chunks:
        buffer += chunk
        # A piece is known not to be the last only once a byte after it has arrived.
        while len(buffer) > size:
            yield bytes(buffer[:size]), False
            del buffer[:size]
    yield bytes(buffer), True


async def seal_stream(chunks: AsyncIterable[bytes], key: bytes) -> AsyncIterator[bytes]:
    cipher = AESGCM(key)
    prefix = os.urandom(_PREFIX)
    yield MAGIC + prefix
    number = 0
    async for piece, last in _segments(chunks, SEGMENT):
        yield cipher.encrypt(_nonce(prefix, number, last), piece, None)
        number += 1


async def open_stream(chunks: AsyncIterable[bytes], key: bytes) -> AsyncIterator[bytes]:
    """The plaintext of a sealed object; TamperedObject as soon as a segment does not open (the
    bytes before it were genuine)."""
    cipher = AESGCM(key)
    iterator = aiter(chunks)
    header = b""
    async for chunk in iterator:
        header += chunk
        if len(header) >= _HEADER:
            break
    if len(header) < _HEADER or not header.startswith(MAGIC):
        raise TamperedObject("the object is not a sealed document")
    prefix, rest = header[len(MAGIC) : _HEADER], header[_HEADER:]

    async def remaining() -> AsyncIterator[bytes]:
        if rest:
            yield rest
        async for chunk in iterator:
            yield chunk

    number = 0
    async for piece, last in _segments(remaining(), SEGMENT + TAG):
        try:
            yield cipher.decrypt(_nonce(prefix, number, last), piece, None)
        except InvalidTag as exc:
            msg = f"segment {number} of the sealed object does not open"
            raise TamperedObject(msg) from exc
        number += 1
