"""Run the Merchant Payments Service.

    python run.py                 development mode: SQLite under ./var, in-process broker
    python run.py --mode production --database-url postgresql://… --broker-url amqp://…

Every option is also an environment variable (MPS_PORT, MPS_DATABASE_URL, …); see README.
`MPS_ACCESS_LOG=off` turns the access log off (load tests, or a proxy that logs already).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import Any

from aiohttp import web

from mps.bootstrap import build_app
from mps.config import ConfigError, load_settings
from mps.http.access_log import BatchedAccessLog
from mps.logs import install_redaction


def _event_loop() -> asyncio.AbstractEventLoop:
    """uvloop where it is installed (a dependency on Linux): the same asyncio API, a faster
    loop and transport. `MPS_EVENT_LOOP=asyncio` keeps the standard one."""
    if os.environ.get("MPS_EVENT_LOOP") != "asyncio":
        try:
            import uvloop
        except ImportError:
            pass
        else:
            return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def main(argv: list[str]) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    install_redaction()  # no log line holds a token, key, code, card number or email (mps.logs)
    try:
        settings = load_settings(argv, os.environ)
    except ConfigError as exc:
        print(f"run.py: {exc}", file=sys.stderr)
        return 2
    app = build_app(settings)
    access: dict[str, Any] = {"access_log": None}
    if os.environ.get("MPS_ACCESS_LOG", "on").lower() not in ("off", "0", "false", "no"):
        access = {"access_log_class": BatchedAccessLog}

        async def flush_access_log(_app: web.Application) -> None:
            BatchedAccessLog.flush()

        app.on_cleanup.append(flush_access_log)
    loop = _event_loop()
    asyncio.set_event_loop(loop)
    web.run_app(app, host=settings.host, port=settings.port, print=None, loop=loop, **access)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
