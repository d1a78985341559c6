"""API versions (decisions 17): `X-Api-Version` selects; v1 is v2 with two transforms applied.

v1 differs from v2 only as a set of version-change transforms over the v2 body, so handlers are
written once, for the current version:

* a JSON array under `data` is renamed `items`, and `hasMore` is dropped;
* an error body keeps only the five envelope fields.
"""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

from mps.errors import BadRequest

__all__ = ["CURRENT", "VERSIONS", "apply_transforms", "parse_version", "version_headers"]

CURRENT = "v2"
DEPRECATED_AT = datetime(2026, 7, 1, tzinfo=UTC)
SUNSET_AT = datetime(2027, 7, 1, tzinfo=UTC)
VERSIONS: list[dict[str, Any]] = [
    {"version": "v2", "status": "current"},
    {"version": "v1", "status": "deprecated", "sunsetAt": "2027-07-01T00:00:00.000Z"},
]
_ALIASES = {"v1": "v1", "1": "v1", "v2": "v2", "2": "v2"}
ENVELOPE_FIELDS = ("ok", "statusCode", "message", "requestId", "timestamp")


def parse_version(header: str | None) -> str | None:
    """The canonical version named by the header, None when absent; 400 for anything else."""
    if header is None:
        return None
    version = _ALIASES.get(header.strip().lower())
    if version is None:
        msg = "X-Api-Version must be one of v1, v2 (or 1, 2)"
        raise BadRequest(msg, code="unsupported_version")
    return version


def apply_transforms(body: dict[str, Any], version: str) -> dict[str, Any]:
    if version != "v1":
        return body
    if body.get("ok") is False:
        return {k: body[k] for k in ENVELOPE_FIELDS if k in body}
    if isinstance(body.get("data"), list):
        body = {("items" if k == "data" else k): v for k, v in body.items() if k != "hasMore"}
    return body


def version_headers(version: str) -> dict[str, str]:
    headers = {"X-Api-Version": version}
    if version == "v1":
        headers["Deprecation"] = f"@{int(DEPRECATED_AT.timestamp())}"
        headers["Sunset"] = format_datetime(SUNSET_AT, usegmt=True)
    return headers
