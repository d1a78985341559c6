"""The least a durable create (or a list) costs in this stack: the ceiling for the service's.

    .venv/bin/python bench/floor.py --duration 10
    .venv/bin/python bench/floor.py --duration 10 --tables 1
    .venv/bin/python bench/floor.py --duration 10 --mix list
    .venv/bin/python bench/floor.py --duration 10 --backend sqlite
    .venv/bin/python bench/load.py --backend postgres --floor --workers 2   # beside the service

A server of about a hundred lines (this file, with --serve) answers `POST /api/v1/merchant/payments`
doing only what any durable create must: verify the session JWT (PyJWT, HS256, the service's
issuer, audience and required claims), read and parse the JSON body (orjson) and check its
fields, make an id and a timestamp, and write the payment, its outbox event and its
Idempotency-Key's stored response in a group commit on one asyncpg connection: every create
that arrived while the previous transaction ran goes in the next one, one transaction per batch
and one `INSERT ... SELECT * FROM unnest(...)` per table, so the next batch forms while one
commits. It answers 201 with the payment once its transaction has committed. `--tables 1`
writes only the payment. There is no actor, no idempotency claim, no event relay, no metrics
and no middleware. `--backend sqlite` commits to a SQLite file instead (WAL,
`synchronous=FULL`, each group commit run whole on the connection's thread in one call, as the
service's writer does; SQLite has no unnest, so one executemany per table). With `--mix list`
(Postgres only) it answers `GET /api/v1/merchant/payments?limit=20` instead: 20 of the 1,000
payments it seeds at start, newest first, read on a pool of ten connections and encoded as they
come from the table.

bench/load.py drives it as it drives the service, with the same wrk script: a session token per
company (minted here with a secret of the run's, `floor_tokens`, as the service's sign-in issues
them) and a unique Idempotency-Key per create. Run alone, it measures the bare endpoint
(bench/bare.py) in the same run and prints the figures as multiples of the bare endpoint's;
`bench/load.py --floor` runs it beside the service. A create or a list in the service cannot do
better than this server does; the gap between the two is what the service's own work costs.
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

import jwt
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import load
from mps.auth.tokens import ALGORITHM, AUDIENCE, ISSUER
from mps.domain.ids import new_id

# The variable the floor server reads its session secret from (never an MPS_ setting).
SECRET_VARIABLE = "FLOOR_SESSION_SECRET"
# The claims the service requires of a session token (mps.auth.tokens).
REQUIRED_CLAIMS = ["sub", "cid", "sid", "mode", "iat", "exp", "iss", "aud"]
CURRENCY = re.compile(r"[A-Z]{3}")
MAX_AMOUNT_DIGITS = 18

# Per table: its definition, and its columns' Postgres types (for unnest's arrays).
TABLES = {
    "payments": (
        "CREATE TABLE payments (id TEXT PRIMARY KEY, company_id TEXT NOT NULL, mode TEXT NOT NULL,"
        " status TEXT NOT NULL, amount_minor BIGINT NOT NULL, currency TEXT NOT NULL,"
        " description TEXT, reference TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL,"
        " updated_at TEXT NOT NULL, expires_at TEXT NOT NULL)",
        ("text", "text", "text", "text", "bigint", "text", "text", "text", "text", "text", "text"),
    ),
    "events": (
        "CREATE TABLE events (id TEXT PRIMARY KEY, company_id TEXT NOT NULL, mode TEXT NOT NULL,"
        " type TEXT NOT NULL, created_at TEXT NOT NULL, data TEXT NOT NULL)",
        ("text", "text", "text", "text", "text", "text"),
    ),
    "idempotency_keys": (
        "CREATE TABLE idempotency_keys (company_id TEXT NOT NULL, idem_key TEXT NOT NULL,"
        " status_code INT NOT NULL, body TEXT NOT NULL, created_at TEXT NOT NULL,"
        " PRIMARY KEY (company_id, idem_key))",
        ("text", "text", "int", "text", "text"),
    ),
}


def _unnest(table: str) -> str:
    """One statement for a whole batch of the table's rows: one array per column."""
    arrays = ", ".join(f"${i}::{kind}[]" for i, kind in enumerate(TABLES[table][1], 1))
    return f"INSERT INTO {table} SELECT * FROM unnest({arrays})"


def _values(table: str) -> str:
    """The table's INSERT of one row (SQLite's executemany)."""
    marks = ", ".join(f"?{i}" for i in range(1, len(TABLES[table][1]) + 1))
    return f"INSERT INTO {table} VALUES ({marks})"


def floor_tokens(secret: bytes, companies: int) -> list[str]:
    """A session token per company, as the service's sign-in issues them (mps.auth.tokens)."""
    now = int(time.time())
    return [
        jwt.encode(
            {
                "sub": new_id("usr"),
                "cid": f"co_floor{index}",
                "sid": new_id("ses"),
                "mode": "test",
                "iat": now,
                "exp": now + 12 * 3600,
                "iss": ISSUER,
                "aud": AUDIENCE,
            },
            secret,
            algorithm=ALGORITHM,
        )
        for index in range(companies)
    ]


def floor_command(
    port: int, pg_url: str, schema: str, tables: int = 3, backend: str = "postgres"
) -> list[str]:
    """The floor server's command line (its secret goes in SECRET_VARIABLE)."""
    return [
        sys.executable, __file__, "--serve", "--port", str(port), "--pg-url", pg_url,
        "--schema", schema, "--tables", str(tables), "--backend", backend,
    ]  # fmt: skip


class GroupCommit:
    """One writer connection; whatever queued while a transaction ran goes in the next one."""

    def __init__(self, conn: Any, tables: list[str]) -> None:
        self.conn = conn
        self.tables = tables
        self.queue: list[tuple[tuple[tuple[Any, ...], ...], asyncio.Future[None]]] = []
        self.wake = asyncio.Event()
        self.statements = [_unnest(table) for table in tables]

    def submit(self, rows: tuple[tuple[Any, ...], ...]) -> asyncio.Future[None]:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.queue.append((rows, done))
        self.wake.set()
        return done

    async def run(self) -> None:
        while True:
            await self.wake.wait()
            self.wake.clear()
            # Taken whole: creates that arrive during the commit below form the next batch.
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
            for position, statement in enumerate(self.statements):
                columns = zip(*(rows[position] for rows in batch), strict=True)
                await self.conn.execute(statement, *(list(column) for column in columns))


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
                self.conn.executemany(_values(table), [rows[position] for rows in batch])
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")


def _session(header: str, key: bytes) -> dict[str, Any] | None:
    """The session token's claims, verified as the service verifies them; None if refused."""
    scheme, _, token = header.partition(" ")
    if scheme != "Bearer" or not token:
        return None
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=[ALGORITHM],
            audience=AUDIENCE,
            issuer=ISSUER,
            options={"require": REQUIRED_CLAIMS},
        )
    except jwt.PyJWTError:
        return None
    return claims if claims["mode"] in ("test", "live") else None


def _problem(body: Any) -> str | None:
    """What is wrong with a create's body, as the service's schema would say; None if nothing."""
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    amount, currency = body.get("amountMinor"), body.get("currency")
    description = body.get("description")
    if not (
        isinstance(amount, str)
        and amount.isascii()
        and amount.isdigit()
        and len(amount) <= MAX_AMOUNT_DIGITS
        and int(amount) > 0
    ):
        return "amountMinor must be a positive whole number of minor units, as a string"
    if not (isinstance(currency, str) and CURRENCY.fullmatch(currency)):
        return "currency must be three capital letters"
    if description is not None and not (isinstance(description, str) and len(description) <= 500):
        return "description must be text of at most 500 characters"
    return None


def _error(status: int, message: str) -> Any:
    from aiohttp import web

    return web.Response(
        status=status,
        body=orjson.dumps({"error": {"message": message}}),
        content_type="application/json",
    )


def _serve(args: argparse.Namespace) -> None:
    import asyncpg
    from aiohttp import web

    tables = list(TABLES)[: args.tables]
    key = os.environ.get(SECRET_VARIABLE, "").encode()

    async def create(request: web.Request) -> web.Response:
        claims = _session(request.headers.get("Authorization", ""), key)
        if claims is None:
            return _error(401, "The session token is not valid")
        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError:
            return _error(400, "The body is not JSON")
        problem = _problem(body)
        if problem is not None:
            return _error(400, problem)
        company, mode = claims["cid"], claims["mode"]
        now = datetime.now(UTC).isoformat()
        payment_id = new_id("pay")
        payment = {
            "id": payment_id,
            "status": "PENDING",
            "amountMinor": body["amountMinor"],
            "currency": body["currency"],
            "description": body.get("description"),
            "reference": secrets.token_urlsafe(9),
            "createdAt": now,
        }
        raw = orjson.dumps(payment)
        text = raw.decode()
        key_header = request.headers.get("Idempotency-Key") or payment_id
        rows = (
            (payment_id, company, mode, "PENDING", int(body["amountMinor"]), body["currency"],
             payment["description"], payment["reference"], now, now, now),
            (new_id("evt"), company, mode, "payment.created", now, text),
            (company, key_header, 201, text, now),
        )  # fmt: skip
        await app["commits"].submit(rows[: len(tables)])
        return web.Response(status=201, body=raw, content_type="application/json")

    async def listed(request: web.Request) -> web.Response:
        if _session(request.headers.get("Authorization", ""), key) is None:
            return _error(401, "The session token is not valid")
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
            _values("payments").replace("?", "$"),
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
    command = floor_command(port, args.pg_url, schema, args.tables, args.backend)
    secret = secrets.token_urlsafe(32)
    env = {**os.environ, SECRET_VARIABLE: secret}
    async with load._process(command, args.out / "floor.log", env) as process:
        target = load.Target(f"http://127.0.0.1:{port}", process.pid)
        await load._wait_up(target.base, "/", process)
        datafile = args.out / "run.data"
        tokens = floor_tokens(secret.encode(), args.companies)
        datafile.write_text("".join(f"T {token}\n" for token in tokens))
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
    parser.add_argument("--companies", type=int, default=1, help="session tokens, one each (1)")
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
    args.weights = load.DEFAULT_WEIGHTS
    args.no_bare, args.bare_loop, args.bare_duration, args.nonblocking = (
        False,
        "uvloop",
        None,
        False,
    )
    asyncio.run(_measure(args))


if __name__ == "__main__":
    main()
