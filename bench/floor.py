"""The least a durable create (or a list) costs in this stack: the ceiling for the service's.

    .venv/bin/python bench/floor.py --duration 10
    .venv/bin/python bench/floor.py --duration 10 --tables 1
    .venv/bin/python bench/floor.py --duration 10 --mix list
    .venv/bin/python bench/floor.py --duration 10 --backend sqlite

A server of a few dozen lines (this file, with --serve) answers `POST /api/v1/merchant/payments`
doing only what any durable create must: read and parse the JSON body, check its two fields,
make an id and a timestamp, write rows in a group commit on one asyncpg connection (every
request that arrived while the previous transaction ran, in one transaction, one executemany
per table) and answer 201 with the payment once its transaction has committed. `--tables 3`
(the default) writes what the service writes for a create: the payment, its outbox event and
its Idempotency-Key's stored response; `--tables 1` only the payment. There is no
authentication, no actor, no idempotency claim, no event relay, no metrics and no middleware.
`--backend sqlite` commits to a SQLite file instead (WAL, `synchronous=FULL`, each group
commit run whole on the connection's thread in one call, as the service's writer does). With
`--mix list` (Postgres only) it answers `GET /api/v1/merchant/payments?limit=20` instead: 20
of the 1,000 payments it seeds at start, newest first, read on a pool of ten connections and
encoded as they come from the table.

The same wrk script and settings as bench/load.py drive it and the bare endpoint (bench/bare.py)
in the same run, and the figures are printed as multiples of the bare endpoint's. A create or a
list in the service cannot do better than this server does; the gap between the two is what
the service's own work costs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import secrets
import sqlite3
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import load
from mps.domain.ids import new_id

TABLES = {
    "payments": (
        "CREATE TABLE payments (id TEXT PRIMARY KEY, company_id TEXT NOT NULL, mode TEXT NOT NULL,"
        " status TEXT NOT NULL, amount_minor BIGINT NOT NULL, currency TEXT NOT NULL,"
        " description TEXT, reference TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL,"
        " updated_at TEXT NOT NULL, expires_at TEXT NOT NULL)",
        "INSERT INTO payments VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    ),
    "events": (
        "CREATE TABLE events (id TEXT PRIMARY KEY, company_id TEXT NOT NULL, mode TEXT NOT NULL,"
        " type TEXT NOT NULL, created_at TEXT NOT NULL, data TEXT NOT NULL)",
        "INSERT INTO events VALUES ($1, $2, $3, $4, $5, $6)",
    ),
    "idempotency_keys": (
        "CREATE TABLE idempotency_keys (company_id TEXT NOT NULL, idem_key TEXT NOT NULL,"
        " status_code INT NOT NULL, body TEXT NOT NULL, created_at TEXT NOT NULL,"
        " PRIMARY KEY (company_id, idem_key))",
        "INSERT INTO idempotency_keys VALUES ($1, $2, $3, $4, $5)",
    ),
}


class GroupCommit:
    """One writer connection; whatever queued while a transaction ran goes in the next one."""

    def __init__(self, conn: Any, tables: list[str]) -> None:
        self.conn = conn
        self.tables = tables
        self.queue: list[tuple[tuple[tuple[Any, ...], ...], asyncio.Future[None]]] = []
        self.wake = asyncio.Event()

    def submit(self, rows: tuple[tuple[Any, ...], ...]) -> asyncio.Future[None]:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.queue.append((rows, done))
        self.wake.set()
        return done

    async def run(self) -> None:
        while True:
            await self.wake.wait()
            self.wake.clear()
            batch, self.queue = self.queue, []
            try:
                await self.commit([rows for rows, _ in batch])
            except Exception as exc:
                for _, done in batch:
                    done.set_exception(exc)
            else:
                for _, done in batch:
                    done.set_result(None)

    async def commit(self, batch: list[tuple[tuple[Any, ...], ...]]) -> None:
        async with self.conn.transaction():
            for position, table in enumerate(self.tables):
                await self.conn.executemany(TABLES[table][1], [rows[position] for rows in batch])


class SqliteGroupCommit(GroupCommit):
    """The same on SQLite (WAL, synchronous=FULL, as the service), the transaction run whole on
    the connection's own thread in one call, as the service's writer does."""

    def __init__(self, conn: Any, tables: list[str]) -> None:
        super().__init__(conn, tables)
        self.thread = ThreadPoolExecutor(max_workers=1)

    async def commit(self, batch: list[tuple[tuple[Any, ...], ...]]) -> None:
        await asyncio.get_running_loop().run_in_executor(self.thread, self._commit, batch)

    def _commit(self, batch: list[tuple[tuple[Any, ...], ...]]) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            for position, table in enumerate(self.tables):
                self.conn.executemany(_qmarks(TABLES[table][1]), [rows[position] for rows in batch])
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")


def _qmarks(sql: str) -> str:
    return re.sub(r"\$(\d+)", r"?\1", sql)


def _serve(args: argparse.Namespace) -> None:
    import asyncpg
    from aiohttp import web

    tables = list(TABLES)[: args.tables]

    async def create(request: web.Request) -> web.Response:
        if not request.headers.get("Authorization", "").startswith("Bearer "):
            return web.Response(status=401)
        body = orjson.loads(await request.read())
        amount, currency = body.get("amountMinor"), body.get("currency")
        if not (isinstance(amount, str) and amount.isdigit()) or not (
            isinstance(currency, str) and len(currency) == 3
        ):
            return web.Response(status=400)
        now = datetime.now(UTC).isoformat()
        payment_id = new_id("pay")
        payment = {
            "id": payment_id,
            "status": "PENDING",
            "amountMinor": amount,
            "currency": currency,
            "description": body.get("description"),
            "reference": secrets.token_urlsafe(9),
            "createdAt": now,
        }
        raw = orjson.dumps(payment)
        rows = (
            (payment_id, "co_floor", "test", "PENDING", int(amount), currency,
             payment["description"], payment["reference"], now, now, now),
            (new_id("evt"), "co_floor", "test", "payment.created", now,
             raw.decode()),
            ("co_floor", request.headers.get("Idempotency-Key", payment_id), 201, raw.decode(),
             now),
        )  # fmt: skip
        await app["commits"].submit(rows[: len(tables)])
        return web.Response(status=201, body=raw, content_type="application/json")

    async def listed(request: web.Request) -> web.Response:
        if not request.headers.get("Authorization", "").startswith("Bearer "):
            return web.Response(status=401)
        limit = request.query.get("limit", "10")
        if not limit.isdigit() or not 1 <= int(limit) <= 100:
            return web.Response(status=400)
        async with app["readers"].acquire() as conn:
            rows = await conn.fetch(
                "SELECT * FROM payments WHERE company_id = $1 AND mode = $2 "
                "ORDER BY created_at DESC, id DESC LIMIT $3",
                "co_floor",
                "test",
                int(limit) + 1,
            )
        page = [dict(row) for row in rows[: int(limit)]]
        more = len(rows) > int(limit)
        body = {"data": page, "nextCursor": page[-1]["id"] if more else None}
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    async def up(_request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def start(app: web.Application) -> None:
        if args.backend == "sqlite":
            await start_sqlite(app)
            return
        conn = await asyncpg.connect(args.pg_url)
        await conn.execute(f'CREATE SCHEMA "{args.schema}"')
        await conn.execute(f'SET search_path TO "{args.schema}"')
        for table in tables:
            await conn.execute(TABLES[table][0])
        await conn.execute(
            "CREATE INDEX payments_by_company ON payments (company_id, mode, created_at, id)"
        )
        # What a list reads: as many payments as the service's list mix seeds (1,000).
        now = datetime.now(UTC)
        await conn.executemany(
            TABLES["payments"][1],
            [
                (new_id("pay"), "co_floor", "test", "PENDING", 1500, "USD", "load",
                 secrets.token_urlsafe(9), (now + timedelta(microseconds=i)).isoformat(),
                 now.isoformat(), now.isoformat())
                for i in range(1000)
            ],
        )  # fmt: skip
        app["conn"] = conn
        app["readers"] = await asyncpg.create_pool(
            args.pg_url,
            min_size=10,
            max_size=10,
            server_settings={"search_path": args.schema},
        )
        app["commits"] = GroupCommit(conn, tables)
        app["writer"] = asyncio.get_running_loop().create_task(app["commits"].run())

    async def start_sqlite(app: web.Application) -> None:
        conn = sqlite3.connect(args.schema, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        for table in tables:
            conn.execute(TABLES[table][0])
        app["sqlite"] = conn
        app["commits"] = SqliteGroupCommit(conn, tables)
        app["writer"] = asyncio.get_running_loop().create_task(app["commits"].run())

    async def stop(app: web.Application) -> None:
        if args.backend == "sqlite":
            app["writer"].cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await app["writer"]
            app["sqlite"].close()
            return
        await app["readers"].close()
        app["writer"].cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await app["writer"]
        await app["conn"].execute(f'DROP SCHEMA "{args.schema}" CASCADE')
        await app["conn"].close()

    app = web.Application()
    app.router.add_post("/api/v1/merchant/payments", create)
    app.router.add_get("/api/v1/merchant/payments", listed)
    app.router.add_get("/{tail:.*}", up)
    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    loop = _event_loop()
    asyncio.set_event_loop(loop)
    web.run_app(app, host="127.0.0.1", port=args.port, print=None, access_log=None, loop=loop)


def _event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


async def _measure(args: argparse.Namespace) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    bare_data = args.out / "bare.data"
    bare_data.write_text("")
    bare = await load._bare(args, bare_data)
    port = load._free_port()
    schema = f"floor_{args.nonce}"
    if args.backend == "sqlite":
        # A file of its own, in the run's directory: what --schema names for SQLite.
        schema = str(args.out / "floor.db")
    command = [
        sys.executable, __file__, "--serve", "--port", str(port), "--pg-url", args.pg_url,
        "--schema", schema, "--tables", str(args.tables), "--backend", args.backend,
    ]  # fmt: skip
    async with load._process(command, args.out / "floor.log", dict(os.environ)) as process:
        target = load.Target(f"http://127.0.0.1:{port}", process.pid)
        await load._wait_up(target.base, "/", process)
        datafile = args.out / "run.data"
        datafile.write_text("T floor\n")
        run = await load._drive(target, args.mix, args.duration, args, datafile, "run")
    args.url = None
    args.backend = f"the floor server ({args.backend}, {args.tables} tables)"
    load._report(args, run, bare)
    print(f"files: {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--schema", default="", help=argparse.SUPPRESS)
    parser.add_argument(
        "--mix",
        choices=["create", "list"],
        default="create",
        help="creates, or lists of 20 of the 1,000 payments the server seeds",
    )
    parser.add_argument("--backend", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--tables", type=int, choices=[1, 2, 3], default=3)
    parser.add_argument("--duration", type=float, default=10, help="seconds (10)")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--wrk", default="wrk")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.backend == "sqlite" and args.mix == "list":
        parser.error("--mix list is measured on postgres only")
    if args.serve:
        _serve(args)
        return
    args.nonce = secrets.token_hex(4)
    args.out = args.out or load.ROOT / "var" / "bench" / f"{time.strftime('%Y%m%d-%H%M%S')}-floor"
    # What bench/load.py's helpers read from its own arguments.
    args.companies, args.weights = 1, load.DEFAULT_WEIGHTS
    args.no_bare, args.bare_loop, args.bare_duration, args.nonblocking = (
        False,
        "uvloop",
        None,
        False,
    )
    asyncio.run(_measure(args))


if __name__ == "__main__":
    main()
