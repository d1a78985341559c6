"""The access log: one line per request, written in batches, never through `logging`.

`logging` costs a record, a formatter and a handler lock per call; at thousands of requests a
second that was a seventh of the process's time. Here a line is one f-string appended to a list,
and the list is written to the stream when it holds `batch` lines or `interval` seconds after its
first line, whichever comes first. A crash loses at most that interval of access lines, never a
request.

What a line holds, and why: time, peer, method, the path without its query string (a query may
carry a token or an email; the log must not), status, body size, duration and the request id,
which ties the line to the client's error envelope. `MPS_ACCESS_LOG=off` writes nothing.

With `MPS_LOG_FORMAT=json` each line is a JSON object instead (`access_log_object`), which also
names the route as declared (`/api/v1/merchant/payments/{id}`), so lines group by endpoint.
`MPS_ACCESS_LOG=sample:0.01` writes a random hundredth of the lines (`access_log_fraction`): a
busy node's log stays readable and cheap, while errors still show in the metrics, which count
every request.
"""

from __future__ import annotations

import asyncio
import random
import re
import sys
import time
from typing import TextIO, cast

import orjson
from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from mps.http.client_address import client_address
from mps.http.keys import REQUEST_ID

__all__ = [
    "BatchedAccessLog",
    "access_log_fraction",
    "access_log_line",
    "access_log_object",
    "logged_path",
]

_OFF = frozenset({"off", "0", "false", "no"})


def access_log_fraction(setting: str) -> float:
    """The fraction of requests `MPS_ACCESS_LOG` asks to log: 0 for `off` (or 0, false, no),
    the number for `sample:<fraction>` (more than 0, at most 1), 1 for anything else (`on`)."""
    value = setting.strip().lower()
    if value in _OFF:
        return 0.0
    if not value.startswith("sample:"):
        return 1.0
    try:
        fraction = float(value.removeprefix("sample:"))
    except ValueError:
        fraction = -1.0
    if not 0 < fraction <= 1:
        msg = "MPS_ACCESS_LOG=sample:<fraction> takes a number above 0 and at most 1"
        raise ValueError(msg)
    return fraction


def access_log_line(
    now: float, peer: str | None, method: str, path: str, status: int, size: int, took: float
) -> str:
    """`2026-11-22T04:38:00Z 127.0.0.1 GET /api/v1/x 200 312B 1.4ms`, without a query string."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
    return f"{stamp} {peer or '-'} {method} {path} {status} {size}B {took * 1000:.1f}ms"


def access_log_object(
    now: float,
    peer: str | None,
    method: str,
    path: str,
    route: str,
    status: int,
    size: int,
    took: float,
    request_id: str,
) -> str:
    """The same facts as one JSON object, plus the route as declared (`unmatched` for a path
    no route serves), with the time to the millisecond and the duration in milliseconds."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"
    return orjson.dumps(
        {
            "time": stamp,
            "logger": "access",
            "requestId": request_id,
            "peer": peer,
            "method": method,
            "route": route,
            "path": path,
            "status": status,
            "size": size,
            "ms": round(took * 1000, 2),
        }
    ).decode()


class BatchedAccessLog(AbstractAccessLogger):
    """aiohttp's access-logger hook. aiohttp builds one per connection, so the buffer is shared
    by the class: one stream, one pending flush, whatever the number of connections."""

    stream: TextIO = sys.stderr
    batch = 256
    interval = 0.5
    # JSON objects rather than text lines (MPS_LOG_FORMAT=json).
    as_json = False
    # The fraction of requests written, each drawn at random; 1 writes every one.
    sample = 1.0
    _lines: list[str] = []  # noqa: RUF012 - shared on purpose, see the class docstring
    _flush_handle: asyncio.TimerHandle | None = None

    @classmethod
    def configured(cls, *, as_json: bool = False, sample: float = 1.0) -> type[BatchedAccessLog]:
        """A subclass writing JSON or text lines for every request or a `sample` of them, with
        a buffer of its own (flush that class, not this one)."""
        attributes = {"as_json": as_json, "sample": sample, "_lines": [], "_flush_handle": None}
        return cast(type[BatchedAccessLog], type(cls.__name__, (cls,), attributes))

    @property
    def enabled(self) -> bool:
        return True

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        if self.sample < 1.0 and random.random() >= self.sample:  # noqa: S311 - not a secret
            return
        request_id = request.get(REQUEST_ID, "-")
        # A passed request (mps.http.forwarded) and one through a trusted balancer
        # (mps.http.client_address) were served as a clone with the client's address; this,
        # the request aiohttp made, has the peer's socket.
        peer = client_address(request)
        if self.as_json:
            text = access_log_object(
                _now(),
                peer,
                request.method,
                _logged_path(request),
                _route(request),
                response.status,
                response.body_length,
                time,
                request_id,
            )
        else:
            line = access_log_line(
                _now(),
                peer,
                request.method,
                _logged_path(request),
                response.status,
                response.body_length,
                time,
            )
            text = f"{line} {request_id}"
        cls = type(self)
        cls._lines.append(f"{text}\n")
        if len(cls._lines) >= cls.batch:
            cls.flush()
        elif cls._flush_handle is None:
            cls._flush_handle = asyncio.get_running_loop().call_later(cls.interval, cls.flush)

    @classmethod
    def flush(cls) -> None:
        if cls._flush_handle is not None:
            cls._flush_handle.cancel()
            cls._flush_handle = None
        if not cls._lines:
            return
        lines, cls._lines = cls._lines, []
        try:
            cls.stream.write("".join(lines))
            cls.stream.flush()
        except (OSError, ValueError):
            # A closed or broken stream (the terminal went away) must not fail requests.
            pass


# Paths that carry a secret of their own: an invitation's token is the whole credential of its
# link (the query string, where other tokens travel, is never logged at all).
_SECRET_SEGMENT = re.compile(r"^(/invite/|/api/v1/team/invitations/token/)[^/]+")


def _logged_path(request: web.BaseRequest) -> str:
    return logged_path(request.rel_url.raw_path)


def logged_path(path: str) -> str:
    """`path` as a log may show it: a token in the path masked."""
    return _SECRET_SEGMENT.sub(r"\1[redacted]", path)


def _now() -> float:
    return time.time()


def _route(request: web.BaseRequest) -> str:
    resource = request.match_info.route.resource if isinstance(request, web.Request) else None
    return "unmatched" if resource is None else resource.canonical
