"""Stored values as the API shows them, whichever database read them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

__all__ = ["json_array"]


def json_array(value: str | Iterable[Any]) -> list[Any]:
    """A JSON array column: the text one database hands back, or the list another has already
    decoded."""
    if isinstance(value, str):
        decoded: list[Any] = orjson.loads(value)
        return decoded
    return list(value)
