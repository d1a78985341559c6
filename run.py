"""Run the Merchant Payments Service.

    python run.py                 development mode: SQLite under ./var, in-process broker
    python run.py --mode production --database-url postgresql://… --broker-url amqp://…

Every option is also an environment variable (MPS_PORT, MPS_DATABASE_URL, …); see README.
"""

from __future__ import annotations

import logging
import os
import sys

from aiohttp import web

from mps.bootstrap import build_app
from mps.config import ConfigError, load_settings


def main(argv: list[str]) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        settings = load_settings(argv, os.environ)
    except ConfigError as exc:
        print(f"run.py: {exc}", file=sys.stderr)
        return 2
    web.run_app(build_app(settings), host=settings.host, port=settings.port, print=None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
