"""A webhook receiver for bench/webhooks.py, in a process of its own so that it is not the
bottleneck of what it measures: answers 200 at once and keeps, per delivery, how long after its
event's createdAt it arrived.

    .venv/bin/python bench/webhook_receiver.py PORT

GET /stats answers {count, distinct, p50, p99, max} (lags in ms); POST /reset forgets.
"""

from __future__ import annotations

import sys
import time
from datetime import datetime

import orjson
from aiohttp import web

lags: list[float] = []
seen: set[str] = set()


async def receive(request: web.Request) -> web.Response:
    body = orjson.loads(await request.read())
    created = datetime.fromisoformat(body["createdAt"].replace("Z", "+00:00")).timestamp()
    lags.append((time.time() - created) * 1000)
    seen.add(body["id"])
    return web.Response(text="ok")


async def stats(_request: web.Request) -> web.Response:
    ordered = sorted(lags)

    def pick(q: float) -> float | None:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1) if ordered else None

    return web.json_response(
        {
            "count": len(lags),
            "distinct": len(seen),
            "p50": pick(0.5),
            "p99": pick(0.99),
            "max": round(ordered[-1], 1) if ordered else None,
        }
    )


async def reset(_request: web.Request) -> web.Response:
    lags.clear()
    seen.clear()
    return web.Response(text="ok")


def main() -> None:
    app = web.Application()
    app.router.add_post("/hooks", receive)
    app.router.add_get("/stats", stats)
    app.router.add_post("/reset", reset)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None)


if __name__ == "__main__":
    main()
