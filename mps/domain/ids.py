"""Identifiers: opaque, prefixed, random (decisions 0).

An id is `prefix_` + 10 time-ordered characters + 14 random characters (83 random bits). The
time-ordered part (milliseconds, then a counter within the millisecond) makes ids created later
sort later, so lists ordered by (createdAt, id) keep creation order even within a millisecond;
the random part keeps ids unguessable. Clients should treat ids as opaque strings.
"""

from __future__ import annotations

import os
import threading
import time

_ALPHANUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
# Crockford's base32 leaves out I, L, O and U so a reference read aloud cannot be mistyped.
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_COUNTER_BITS = 16


class _TimeOrder:
    """Monotonic (millisecond, counter) values for this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0

    def next(self) -> int:
        now = (time.time_ns() // 1_000_000) << _COUNTER_BITS
        with self._lock:
            self._last = max(now, self._last + 1)
            return self._last


_ORDER = _TimeOrder()


def _base62(number: int, width: int) -> str:
    digits = []
    for _ in range(width):
        number, digit = divmod(number, 62)
        digits.append(_ALPHANUM[digit])
    return "".join(reversed(digits))


def new_id(prefix: str) -> str:
    return f"{prefix}_{_base62(_ORDER.next(), 10)}{random_base62(14)}"


# Random characters come from one read of the OS's CSPRNG, mapped a byte to a character by
# `bytes.translate` (C speed) rather than a `SystemRandom` call per character. A byte maps to
# `alphabet[b % n]` only below the largest multiple of n (248 for 62, all 256 for 32), and the
# rest are dropped, so every character is exactly equally likely.
def _tables(alphabet: str) -> tuple[bytes, bytes]:
    n = len(alphabet)
    cutoff = 256 - 256 % n
    table = bytes(ord(alphabet[b % n]) if b < cutoff else 0 for b in range(256))
    return table, bytes(range(cutoff, 256))


_BASE62 = _tables(_ALPHANUM)
_BASE32 = _tables(_CROCKFORD)


class _RandomBytes:
    """Bytes from the OS's CSPRNG, read 4 KiB at a time: one system call serves a few hundred
    ids instead of one each. Taken bytes are never handed out twice."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._buffer = b""
        self._at = 0
        self._lock = threading.Lock()

    def take(self, count: int) -> bytes:
        with self._lock:
            if self._at + count > len(self._buffer):
                self._buffer = os.urandom(max(self._size, count))
                self._at = 0
            start = self._at
            self._at += count
            return self._buffer[start : self._at]


_RANDOM = _RandomBytes()


def _random_chars(length: int, tables: tuple[bytes, bytes]) -> str:
    table, dropped = tables
    out = b""
    while len(out) < length:
        # A quarter more than needed: one draw almost always suffices (3% of bytes are dropped).
        out += _RANDOM.take(length + length // 4 + 2).translate(table, dropped)
    return out[:length].decode("ascii")


def random_base62(length: int) -> str:
    return _random_chars(length, _BASE62)


def payment_reference() -> str:
    return "PAY-" + _random_chars(10, _BASE32)


def request_id() -> str:
    return f"req_{random_base62(20)}"
