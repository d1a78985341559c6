"""Run the Merchant Payments Service.

    python run.py                 development mode: SQLite under ./var, in-process broker
    python run.py --mode production --database-url postgresql://… --broker-url amqp://…
    python run.py --workers 4 --database-url postgresql://… --broker-url amqp://…   (mps.workers)
    python run.py kyc pending | review co_… --approve | --reject --reason …   (mps.operator)
    python run.py reseal [--check]   after rotating MPS_ENCRYPTION_KEY (mps.reseal, SECURITY.md)
    python run.py migrate [--check]  apply pending migrations and exit, or only look (mps.migrate)

Every option is also an environment variable (MPS_PORT, MPS_DATABASE_URL, …); `run.py --help`
lists them with the settings only the environment gives, and docs/operations.md is the runbook.
`MPS_ACCESS_LOG=off` turns the access log off (load tests, or a proxy that logs already), and
`sample:0.01` keeps a random hundredth of its lines. `MPS_LOG_FORMAT=json` writes every log line,
the access log's too, as one JSON object.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import Any

from mps.config import ConfigError, Settings, load_settings
from mps.logs import JsonFormatter, install_redaction
from mps.workers import (
    EXIT_BAD_SETTING,
    PortTaken,
    follow_supervisor,
    plan_workers,
    supervise,
    worker_index,
)


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


def _configure_logging(log_format: str, worker: int | None) -> None:
    """Text lines, or one JSON object per line (MPS_LOG_FORMAT=json), to stderr. A worker of
    `--workers` names itself in each text line, since the workers share the supervisor's
    stderr (a JSON line names its node where it matters)."""
    if log_format == "json":
        handler = logging.StreamHandler()
        handler.setFormatter(JsonFormatter())
        logging.basicConfig(level=logging.INFO, handlers=[handler])
    else:
        who = f" [worker {worker}]" if worker is not None else ""
        logging.basicConfig(
            level=logging.INFO, format=f"%(asctime)s %(levelname)s{who} %(name)s: %(message)s"
        )


def main(argv: list[str]) -> int:
    if argv[:1] == ["kyc"]:
        from mps.operator import main as operator_main

        return operator_main(argv[1:])
    if argv[:1] == ["reseal"]:
        from mps.reseal import main as reseal_main

        return reseal_main(argv[1:])
    if argv[:1] == ["migrate"]:
        from mps.migrate import main as migrate_main

        return migrate_main(argv[1:])
    log_format = (os.environ.get("MPS_LOG_FORMAT") or "text").lower()
    if log_format not in ("text", "json"):
        print("run.py: MPS_LOG_FORMAT must be text or json", file=sys.stderr)
        return 2
    worker = worker_index(os.environ)
    if worker is not None:
        follow_supervisor(os.environ)
    _configure_logging(log_format, worker)
    install_redaction()  # no log line holds a token, key, code, card number or email (mps.logs)
    try:
        settings = load_settings(argv, os.environ)
        if settings.workers > 1:
            workers = plan_workers(
                settings, [sys.executable, os.path.abspath(__file__)], argv, os.environ
            )
    except ConfigError as exc:
        print(f"run.py: {exc}", file=sys.stderr)
        return 2
    if settings.workers > 1:
        try:
            return supervise(settings, workers)
        except PortTaken as exc:
            print(f"run.py: {exc}", file=sys.stderr)
            return 1
    return _serve(settings, log_format, worker)


def _serve(settings: Settings, log_format: str, worker: int | None) -> int:
    """Serve in this process until a signal (mps.serve). Imported here, not at the top, so that
    a supervisor of workers, which serves nothing, does not hold the whole app in memory (about
    75 MiB less)."""
    from aiohttp import web

    from mps.bootstrap import build_app
    from mps.http.access_log import BatchedAccessLog, access_log_fraction
    from mps.serve import ListenError, serve

    app = build_app(settings)
    try:
        fraction = access_log_fraction(os.environ.get("MPS_ACCESS_LOG", "on"))
    except ValueError as exc:
        print(f"run.py: {exc}", file=sys.stderr)
        return 2
    access: dict[str, Any] = {"access_log": None}
    if fraction > 0:
        access_log = BatchedAccessLog.configured(as_json=log_format == "json", sample=fraction)
        access = {"access_log_class": access_log}

        async def flush_access_log(_app: web.Application) -> None:
            access_log.flush()

        app.on_cleanup.append(flush_access_log)
    loop = _event_loop()
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(serve(app, settings, reuse_port=worker is not None, **access))
    except ListenError as exc:
        print(f"run.py: {exc}", file=sys.stderr)
        # A worker's supervisor starts again a worker that ended, unless it is told this.
        return EXIT_BAD_SETTING if worker is not None else 1
    finally:
        loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
