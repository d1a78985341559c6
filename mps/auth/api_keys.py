"""API key format (decisions 2): `sk_|pk_` + `test_|live_` + 40 random base62 characters."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mps.domain.ids import random_base62

__all__ = ["KeyShape", "generate_key", "looks_like_api_key", "parse_key"]

_SHAPE = re.compile(r"(sk|pk)_(test|live)_([0-9A-Za-z]{32,128})")
_TYPE_PREFIX = {"secret": "sk", "publishable": "pk"}


@dataclass(frozen=True)
class KeyShape:
    type: str  # secret | publishable
    mode: str  # test | live
    prefix: str  # e.g. sk_test_
    last4: str


def generate_key(key_type: str, mode: str) -> str:
    return f"{_TYPE_PREFIX[key_type]}_{mode}_{random_base62(40)}"


def looks_like_api_key(token: str) -> bool:
    return token.startswith(("sk_", "pk_"))


def parse_key(token: str) -> KeyShape | None:
    match = _SHAPE.fullmatch(token)
    if match is None:
        return None
    kind, mode, secret = match.groups()
    return KeyShape(
        type="secret" if kind == "sk" else "publishable",
        mode=mode,
        prefix=f"{kind}_{mode}_",
        last4=secret[-4:],
    )
