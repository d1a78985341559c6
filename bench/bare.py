"""The floor for bench/load.py: a bare aiohttp endpoint on the same event loop as the service.

Answers every GET with a small orjson body, on uvloop where it is installed (as run.py does),
with no access log, no middleware and no database: what aiohttp and the loop cost per request
on this machine, against which the service's figures are read.

    .venv/bin/python bench/bare.py --port 8099
"""

from __future__ import annotations

import argparse
import asyncio

import orjson
from aiohttp import web

_BODY = orjson.dumps({"ok": True, "requestId": "req_bare", "status": "PENDING"})


async def _answer(_request: web.Request) -> web.Response:
    return web.Response(body=_BODY, content_type="application/json")


def _event_loop(name: str) -> asyncio.AbstractEventLoop:
    if name == "asyncio":
        return asyncio.new_event_loop()
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8099)
    parser.add_argument(
        "--loop",
        choices=["uvloop", "asyncio"],
        default="uvloop",
        help="uvloop (what run.py uses) or asyncio's own loop (plain aiohttp)",
    )
    args = parser.parse_args()
    app = web.Application()
    app.router.add_get("/{tail:.*}", _answer)
    loop = _event_loop(args.loop)
    asyncio.set_event_loop(loop)
    web.run_app(app, host=args.host, port=args.port, print=None, access_log=None, loop=loop)


if __name__ == "__main__":
    main()
