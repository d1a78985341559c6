"""Identifiers: opaque, prefixed, random (decisions 0)."""

from __future__ import annotations

import secrets

_ALPHANUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
# Crockford's base32 leaves out I, L, O and U so a reference read aloud cannot be mistyped.
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_id(prefix: str, length: int = 24) -> str:
    """`prefix_` followed by `length` random base62 characters (about 143 bits for 24)."""
    return f"{prefix}_{random_base62(length)}"


def random_base62(length: int) -> str:
    return "".join(secrets.choice(_ALPHANUM) for _ in range(length))


def payment_reference() -> str:
    return "PAY-" + "".join(secrets.choice(_CROCKFORD) for _ in range(10))


def request_id() -> str:
    return new_id("req", 20)
