"""Identifiers: opaque, prefixed, random (decisions 0).

An id is `prefix_` + 10 time-ordered characters + 14 random characters (83 random bits). The
time-ordered part (milliseconds, then a counter within the millisecond) makes ids created later
sort later, so lists ordered by (createdAt, id) keep creation order even within a millisecond;
the random part keeps ids unguessable. Clients should treat ids as opaque strings.
"""

from __future__ import annotations

import secrets
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


def random_base62(length: int) -> str:
    return "".join(secrets.choice(_ALPHANUM) for _ in range(length))


def payment_reference() -> str:
    return "PAY-" + "".join(secrets.choice(_CROCKFORD) for _ in range(10))


def request_id() -> str:
    return f"req_{random_base62(20)}"
