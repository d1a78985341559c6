"""The service's API as the command line calls it: JSON in, JSON out, errors as `CliError`s.

Every aiohttp and OS error is translated here (one place, as httpx does at its transports),
so a command sees either a decoded body or an `ApiError` / `Unreachable` with a one-line
message.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

import aiohttp
import orjson

from mps.cli.errors import ApiError, Unreachable, UsageError

__all__ = ["API_PREFIX", "Api"]

API_PREFIX = "/api/v1"
# Long enough for a payment's group commit under load (the service answers 503 after 15 s),
# short enough that a hung service does not hang a shell script.
DEFAULT_TIMEOUT = 30.0


class Api:
    """One service at `base_url`, over one aiohttp session (use as `async with`).

    `credential` (a session token or an API key) is sent as the bearer of every call unless a
    call names its own.
    """

    def __init__(
        self, base_url: str, credential: str | None = None, *, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.base_url = base_url
        self._credential = credential
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Self:
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=self._timeout),
            headers={"User-Agent": "mps-cli/1", "Accept": "application/json"},
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def call(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        credential: str | None = None,
    ) -> dict[str, Any]:
        """`method` on `/api/v1{path}`; the decoded JSON object of a 2xx answer.

        Raises `ApiError` for any other status (with the envelope's message and code),
        `Unreachable` when no answer came, `UsageError` for a URL aiohttp cannot use.
        """
        if self._session is None:
            msg = "Api is used outside `async with`"
            raise RuntimeError(msg)
        sent = {"Content-Type": "application/json"} if body is not None else {}
        bearer = credential or self._credential
        if bearer:
            sent["Authorization"] = f"Bearer {bearer}"
        sent.update(headers or {})
        data = orjson.dumps(body) if body is not None else None
        url = f"{self.base_url}{API_PREFIX}{path}"
        try:
            async with self._session.request(
                method, url, data=data, params=query, headers=sent
            ) as response:
                raw = await response.read()
                status, reason = response.status, response.reason or ""
        except aiohttp.InvalidURL:
            raise UsageError(f"not a usable URL: {self.base_url}") from None
        except aiohttp.ClientConnectorError as exc:
            cause = (
                "connection refused"
                if isinstance(exc.os_error, ConnectionRefusedError)
                else exc.os_error.strerror or str(exc.os_error) or type(exc.os_error).__name__
            )
            raise Unreachable(f"cannot reach {self.base_url}: {cause}") from None
        except TimeoutError:
            raise Unreachable(
                f"no answer from {self.base_url} within {self._timeout:g} s"
            ) from None
        except aiohttp.ClientError as exc:
            detail = str(exc) or type(exc).__name__
            raise Unreachable(f"lost the connection to {self.base_url}: {detail}") from None
        return _decoded(status, reason, raw)


def _decoded(status: int, reason: str, raw: bytes) -> dict[str, Any]:
    try:
        decoded = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        decoded = None
    if 200 <= status < 300:
        if not isinstance(decoded, dict):
            raise ApiError(status, "the service answered something that is not JSON", None)
        return decoded
    if isinstance(decoded, dict) and isinstance(decoded.get("message"), str):
        code = decoded.get("code")
        request_id = decoded.get("requestId")
        raise ApiError(
            status,
            decoded["message"],
            code if isinstance(code, str) else None,
            request_id if isinstance(request_id, str) else None,
        )
    # Not our envelope: a proxy, or another program listening on that port.
    raise ApiError(status, f"HTTP {status} {reason}".strip(), None)
