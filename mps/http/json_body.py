"""A request body parsed as its sender wrote it: no key given twice, no number changed.

orjson is fast and strict, but keeps the last of two equal keys and reads an integer past 64
bits as a float (`123456789012345678901234567890` became `1.2345678901234568e+29`). Both would
change what the client sent without a word, so both are refused with 400 `invalid_json`.

orjson parses every body first (its errors are the clearest, and it refuses what the standard
library would take, such as `NaN`). The standard library parses it a second time, with hooks
that watch keys and numbers, only when a cheap look at orjson's result says it may be needed:
when the text has more places that look like a key than the result has keys, or when the result
holds a float. Most bodies hold neither, and are parsed once.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

import orjson

from mps.errors import BadRequest

__all__ = ["parse_body"]

# Each key is a string followed by a colon, so the text holds at least as many of these as the
# body has keys; a string value that contains `":` only adds places, which costs a second parse.
_KEY_LIKE = re.compile(rb'"\s*:')
# What orjson (and our storage) keeps exactly as an integer.
_INT64 = 2**63


class _Changed(ValueError):
    """The body holds something a parse would change; the message says what."""


def parse_body(raw: bytes) -> Any:
    """The JSON value of `raw`; BadRequest `invalid_json` when it is not JSON, repeats a key in
    one object, or holds a number that cannot be kept exactly."""
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"The body is not valid JSON: {exc}", code="invalid_json") from exc
    keys, floats = _count(parsed)
    if not floats and len(_KEY_LIKE.findall(raw)) == keys:
        return parsed
    try:
        return json.loads(
            raw, object_pairs_hook=_unique, parse_float=_exact_float, parse_int=_exact_int
        )
    except _Changed as exc:
        raise BadRequest(str(exc), code="invalid_json") from exc


def _count(value: Any) -> tuple[int, bool]:
    """How many keys `value` holds at every depth, and whether it holds a float."""
    keys, floats = 0, False
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            keys += len(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, float):
            floats = True
    return keys, floats


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _Changed(f"The body gives the key {key!r} more than once in one object")
        found[key] = value
    return found


def _exact_float(text: str) -> float:
    value = float(text)
    # 1.50 is kept (as 1.5, the same number); 0.30000000000000000001 and 1e400 are not.
    if Decimal(repr(value)) != Decimal(text):
        raise _Changed(_inexact(text))
    return value


def _inexact(text: str) -> str:
    return f"The number {text} in the body cannot be kept exactly; send it as a string"


def _exact_int(text: str) -> int:
    value = int(text)
    if not -_INT64 <= value < _INT64:
        raise _Changed(_inexact(text))
    return value
